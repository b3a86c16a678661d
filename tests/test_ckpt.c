/*
 * test_ckpt.c — checkpoints (harness/store/ckpt.c): round trip bit for bit, atomic
 * replace, and every refusal (not a checkpoint, truncated, corrupted,
 * different model config, full disk) leaving the model and the old file
 * untouched.  Models are real (model_init + model_init_weights) and tiny.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "tmpdir.h"

#include "store/ckpt.h"
#include "store/manifest.h"
#include "store/rundir.h"
#include "model/model.h"


static void tiny_config(gl_model_config *c, gl_value_residual vr, gl_depth_routing dr) {
    config_defaults(c);
    c->vocab_size = 16;
    c->d_model = 16;
    c->n_layer = 3;
    c->n_head = 2;
    c->n_kv_head = 1;
    c->d_ff = 32;
    c->seq_len = 8;
    c->value_residual = vr;
    c->depth_routing = dr;
}

static void make_model(gl_model *m, gl_model_config *c, uint64_t seed) {
    char err[512] = "";
    int rc = model_init(m, c, 1, err, sizeof err);
    if (rc) print_message("model_init: %s\n", err);
    assert_int_equal(rc, 0);
    model_init_weights(m, seed);
    /* distinct optimiser moments so a mix-up of m and v would show */
    for (size_t i = 0; i < m->n_params; i++) {
        m->adam_m[i] = 0.001f * (float)i;
        m->adam_v[i] = 1e-6f * (float)(i % 97) + 1e-9f;
    }
}

static void make_state(gl_train_state *st, long step) {
    memset(st, 0, sizeof *st);
    st->step = step;
    rng_seed(&st->data_rng, 1234);
    rng_seed(&st->aux_rng, 99);
    rng_next(&st->aux_rng);
    st->elapsed_s = 12.5;
    st->tokens_seen = step * 64;
    st->vocab_size = 16;
    for (int i = 0; i < 16; i++) st->vocab[i] = (uint8_t)('a' + i);
}

static void path_in(char *out, size_t n, const char *name) { snprintf(out, n, "%s/%s", g_dir, name); }

static int setup(void **state) {
    (void)state;
    return tmpdir_make("ckpt");
}


static size_t count_diff(const float *a, const float *b, size_t n) {
    size_t d = 0;
    for (size_t i = 0; i < n; i++) d += memcmp(&a[i], &b[i], sizeof(float)) != 0;
    return d;
}

static int file_exists(const char *p) {
    struct stat sb;
    return stat(p, &sb) == 0;
}

static void test_round_trip(void **state) {
    (void)state;
    char path[512], tmp[600], err[512] = "";
    path_in(path, sizeof path, "ckpt");
    gl_model_config c;
    tiny_config(&c, VR_SATFORMER, DR_TSA);
    gl_model a, b;
    make_model(&a, &c, 7);
    gl_train_state st, st2;
    make_state(&st, 40);
    const char *ini = "[model]\nd_model = 16\n# ünïcode kept as bytes\n";
    int rc = ckpt_save(path, &a, &st, ini, 0xabcdef0123456789ULL, err, sizeof err);
    if (rc) print_message("save: %s\n", err);
    assert_int_equal(rc, 0);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    assert_false(file_exists(tmp));

    assert_int_equal(model_init(&b, &c, 1, err, sizeof err), 0);
    memset(&st2, 0, sizeof st2);
    rc = ckpt_load(path, &b, &st2, 0xabcdef0123456789ULL, err, sizeof err);
    if (rc) print_message("load: %s\n", err);
    assert_int_equal(rc, 0);
    size_t dp = count_diff(a.params, b.params, a.n_params);
    size_t dm = count_diff(a.adam_m, b.adam_m, a.n_params);
    size_t dv = count_diff(a.adam_v, b.adam_v, a.n_params);
    print_message("round trip of %zu params (%d tensors): %zu/%zu/%zu values differ (params/m/v)\n",
                  a.n_params, a.n_tensors, dp, dm, dv);
    assert_int_equal(dp + dm + dv, 0);
    assert_int_equal(st2.step, 40);
    assert_memory_equal(&st2.data_rng, &st.data_rng, sizeof st.data_rng);
    assert_memory_equal(&st2.aux_rng, &st.aux_rng, sizeof st.aux_rng);
    assert_true(st2.elapsed_s == st.elapsed_s);
    assert_int_equal(st2.tokens_seen, st.tokens_seen);
    assert_int_equal(st2.vocab_size, 16);
    assert_memory_equal(st2.vocab, st.vocab, 256);

    char *text = NULL;
    ckpt_info info;
    assert_int_equal(ckpt_read_info(path, &text, &info, err, sizeof err), 0);
    assert_string_equal(text, ini);
    assert_true(info.model_hash == 0xabcdef0123456789ULL);
    assert_int_equal(info.step, 40);
    assert_int_equal(info.vocab_size, 16);
    assert_int_equal(info.n_params, a.n_params);
    assert_int_equal(info.n_tensors, a.n_tensors);
    free(text);

    /* NULL config is stored as empty text */
    assert_int_equal(ckpt_save(path, &a, &st, NULL, 1, err, sizeof err), 0);
    assert_int_equal(ckpt_read_config(path, &text, err, sizeof err), 0);
    assert_string_equal(text, "");
    free(text);
    /* a hash of 0 skips the hash check */
    assert_int_equal(ckpt_load(path, &b, &st2, 0, err, sizeof err), 0);
    print_message("state, config text, hash and step round-trip; no .tmp left behind\n");
    model_free(&a);
    model_free(&b);
}


/* Save a reference checkpoint; return the model (caller frees) */
static void save_reference(const char *path, gl_model *a, gl_model_config *c) {
    char err[512] = "";
    tiny_config(c, VR_SATFORMER, DR_NONE);
    make_model(a, c, 3);
    gl_train_state st;
    make_state(&st, 10);
    int rc = ckpt_save(path, a, &st, "[model]\n", 42, err, sizeof err);
    if (rc) print_message("save: %s\n", err);
    assert_int_equal(rc, 0);
}

/* Try to load path into a fresh model of config c; expect failure with want in
 * the message and the model and state untouched. */
static void expect_refused(const char *path, const gl_model_config *c, uint64_t hash, const char *want) {
    char err[512] = "";
    gl_model m;
    assert_int_equal(model_init(&m, c, 1, err, sizeof err), 0);
    for (size_t i = 0; i < m.n_params; i++) m.params[i] = m.adam_m[i] = m.adam_v[i] = -7.0f;
    gl_train_state st;
    memset(&st, 0x5a, sizeof st);
    gl_train_state st0 = st;
    int rc = ckpt_load(path, &m, &st, hash, err, sizeof err);
    size_t touched = 0;
    for (size_t i = 0; i < m.n_params; i++)
        touched += m.params[i] != -7.0f || m.adam_m[i] != -7.0f || m.adam_v[i] != -7.0f;
    print_message("refused (%s): rc %d, %zu values touched, \"%s\"\n", want, rc, touched, err);
    assert_int_equal(rc, -1);
    assert_non_null(strstr(err, path));
    assert_non_null(strstr(err, want));
    assert_int_equal(touched, 0);
    assert_memory_equal(&st, &st0, sizeof st);
    model_free(&m);
}

static void write_bytes(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(p, 1, n, f), n);
    fclose(f);
}

static void *read_bytes(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    void *p = malloc(*n);
    assert_non_null(p);
    assert_int_equal(fread(p, 1, *n, f), *n);
    fclose(f);
    return p;
}

/* data.tokenizer = utf8: a version-4 checkpoint carries the code points; a
 * section that is not a valid vocabulary is refused even under a good checksum. */
static void test_utf8_vocab(void **state) {
    (void)state;
    char path[512], err[512] = "";
    path_in(path, sizeof path, "ckpt_utf8");
    gl_model_config c;
    tiny_config(&c, VR_NONE, DR_NONE); /* V = 16 */
    gl_model a, b;
    make_model(&a, &c, 5);
    static gl_train_state st, st2;
    make_state(&st, 8);
    st.tokenizer = TOK_UTF8;
    const uint32_t cps[16] = {0x0A, 0x20, 0x41, 0x61, 0xE9, 0xEF, 0x3A9, 0x65E5, 0x672C,
                              0x8A9E, 0xFFFD, 0x1F600, 0x1F601, 0x1F602, 0x10FFFD, 0x10FFFF};
    st.utf8.V = 16;
    memcpy(st.utf8.cp, cps, sizeof cps);
    assert_int_equal(ckpt_save(path, &a, &st, "[model]\n", 9, err, sizeof err), 0);
    size_t n;
    uint8_t *bytes = read_bytes(path, &n);
    uint32_t version;
    memcpy(&version, bytes + 8, 4);
    assert_int_equal(version, CKPT_VERSION_UTF8);
    assert_int_equal(model_init(&b, &c, 1, err, sizeof err), 0);
    memset(&st2, 0, sizeof st2);
    int rc = ckpt_load(path, &b, &st2, 9, err, sizeof err);
    if (rc) print_message("load: %s\n", err);
    assert_int_equal(rc, 0);
    assert_int_equal(st2.tokenizer, TOK_UTF8);
    assert_int_equal(st2.utf8.V, 16);
    assert_memory_equal(st2.utf8.cp, cps, sizeof cps);
    assert_int_equal(ckpt_vocab_bytes(&st2), 0);
    /* the code points follow the state record; swap two and put the checksum right */
    uint32_t first;
    size_t at = 0;
    for (size_t i = 56; i + 4 <= n; i++)
        if (memcpy(&first, bytes + i, 4), first == 0x0A && !memcmp(bytes + i + 4, &cps[1], 4)) {
            at = i;
            break;
        }
    assert_true(at > 0);
    memcpy(bytes + at, &cps[1], 4);
    memcpy(bytes + at + 4, &cps[0], 4);
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i + 8 < n; i++) h = (h ^ bytes[i]) * 0x100000001b3ULL;
    memcpy(bytes + n - 8, &h, 8);
    write_bytes(path, bytes, n);
    expect_refused(path, &c, 9, "not strictly ascending");
    free(bytes);
    print_message("a utf8 run's 16 code points (up to U+10FFFF) round-trip in a version-4 checkpoint; a "
                  "reordered section is refused under a good checksum\n");
    model_free(&a);
    model_free(&b);
}


static void test_refusals(void **state) {
    (void)state;
    char path[512], bad[512];
    path_in(path, sizeof path, "ref_ckpt");
    path_in(bad, sizeof bad, "bad_ckpt");
    gl_model a;
    gl_model_config c;
    save_reference(path, &a, &c);
    size_t n;
    uint8_t *bytes = read_bytes(path, &n);

    write_bytes(bad, "[model]\nd_model = 16\n", 21);
    expect_refused(bad, &c, 42, "not a gatelab checkpoint");
    write_bytes(bad, "", 0);
    expect_refused(bad, &c, 42, "not a gatelab checkpoint");

    write_bytes(bad, bytes, n - 100);
    char want[128];
    snprintf(want, sizeof want, "truncated: %zu of %zu bytes", n - 100, n);
    expect_refused(bad, &c, 42, want);
    write_bytes(bad, bytes, 20);
    expect_refused(bad, &c, 42, "truncated");

    /* one flipped bit in the parameters, then one in the checksum itself */
    bytes[n / 2] ^= 0x10;
    write_bytes(bad, bytes, n);
    expect_refused(bad, &c, 42, "corrupted");
    bytes[n / 2] ^= 0x10;
    bytes[n - 1] ^= 0x01;
    write_bytes(bad, bytes, n);
    expect_refused(bad, &c, 42, "corrupted");
    bytes[n - 1] ^= 0x01;
    /* a byte appended */
    uint8_t *longer = malloc(n + 1);
    memcpy(longer, bytes, n);
    longer[n] = 0;
    write_bytes(bad, longer, n + 1);
    expect_refused(bad, &c, 42, "corrupted");
    free(longer);
    /* another format version (the checksum is not reached): 2 + 3, past the BPE version 3 and the UTF-8 version 4 */
    bytes[8] += 3;
    write_bytes(bad, bytes, n);
    expect_refused(bad, &c, 42, "format version");
    bytes[8] -= 1;

    /* different model configs */
    gl_model_config c2 = c;
    c2.value_residual = VR_NONE;
    expect_refused(path, &c2, 42, "checkpoint has layers.1.attn.alpha, this model does not");
    c2 = c;
    c2.depth_routing = DR_TSA;
    expect_refused(path, &c2, 42, "this model has routers.0.fc1_w, the checkpoint does not");
    c2 = c;
    c2.d_ff = 48;
    expect_refused(path, &c2, 42, "is (32, 16) in the checkpoint, (48, 16) in this model");
    expect_refused(path, &c, 43, "different model config: model hash");
    /* the intact file still loads */
    char err[512];
    gl_model b;
    gl_train_state st;
    assert_int_equal(model_init(&b, &c, 1, err, sizeof err), 0);
    assert_int_equal(ckpt_load(path, &b, &st, 42, err, sizeof err), 0);
    assert_int_equal(count_diff(a.params, b.params, a.n_params), 0);
    model_free(&b);
    model_free(&a);
    free(bytes);
}

/* A write that fails part-way (here: the file-size limit, as a full disk
 * would) must leave the previous checkpoint intact and no temporary file. */
static void test_failed_write_keeps_old(void **state) {
    (void)state;
    char path[512], tmp[600], err[512] = "";
    path_in(path, sizeof path, "full_ckpt");
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    gl_model a;
    gl_model_config c;
    save_reference(path, &a, &c); /* step 10 */

    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit rl = {4096, 4096};
        if (setrlimit(RLIMIT_FSIZE, &rl) != 0) _exit(3);
        gl_train_state st;
        make_state(&st, 99);
        char e[512] = "";
        int rc = ckpt_save(path, &a, &st, "[model]\n", 42, e, sizeof e);
        fprintf(stdout, "child: ckpt_save under a 4 KiB file limit: rc %d, \"%s\"\n", rc, e);
        fflush(stdout);
        _exit(rc == -1 && strstr(e, "unchanged") ? 0 : 1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_false(file_exists(tmp));
    gl_model b;
    gl_train_state st;
    assert_int_equal(model_init(&b, &c, 1, err, sizeof err), 0);
    int rc = ckpt_load(path, &b, &st, 42, err, sizeof err);
    if (rc) print_message("load: %s\n", err);
    assert_int_equal(rc, 0);
    assert_int_equal(st.step, 10);
    print_message("failed write: old checkpoint (step %ld) loads, %s absent\n", st.step, tmp);

    /* an unwritable folder: error names the path, nothing left behind */
    rc = ckpt_save("/nonexistent_dir/ckpt", &a, &st, NULL, 42, err, sizeof err);
    print_message("missing folder: rc %d, \"%s\"\n", rc, err);
    assert_int_equal(rc, -1);
    assert_non_null(strstr(err, "/nonexistent_dir/ckpt"));
    model_free(&a);
    model_free(&b);
}


/* Run folders: create, resolve by id, prefix and path, open (config from the
 * checkpoint, weights loaded), and the refusals. */
static void test_run_folders(void **state) {
    (void)state;
    char results[512], dir[GL_PATH_MAX], dir2[GL_PATH_MAX], got[GL_PATH_MAX], path[GL_PATH_MAX + 16], err[1024] = "";
    snprintf(results, sizeof results, "%s/results", g_dir);
    assert_int_equal(run_create_dir(results, "tiny-20261130-0001", dir, sizeof dir, err, sizeof err), 0);
    assert_int_equal(run_create_dir(results, "tiny-20261130-0002", dir2, sizeof dir2, err, sizeof err), 0);
    assert_int_equal(run_create_dir(results, "tiny-20261130-0001", got, sizeof got, err, sizeof err), 0);
    assert_int_equal(run_create_dir(results, "../escape", got, sizeof got, err, sizeof err), -1);

    gl_manifest mf;
    manifest_defaults(&mf);
    tiny_config(&mf.model, VR_RESFORMER, DR_NONE);
    char *ini = manifest_to_ini(&mf);
    assert_non_null(ini);
    gl_model a;
    make_model(&a, &mf.model, 5);
    gl_train_state st;
    make_state(&st, 77);
    assert_int_equal(run_path(path, sizeof path, dir, RUN_CKPT), 0);
    assert_int_equal(ckpt_save(path, &a, &st, ini, manifest_model_hash(&mf), err, sizeof err), 0);

    const char *args[] = {"tiny-20261130-0001", "tiny-20261130-0001", NULL};
    args[1] = dir; /* a folder path */
    for (int i = 0; i < 2; i++) {
        gl_run r;
        int rc = run_open(&r, args[i], results, 2, err, sizeof err);
        if (rc) print_message("run_open(%s): %s\n", args[i], err);
        assert_int_equal(rc, 0);
        assert_string_equal(r.dir, dir);
        assert_int_equal(r.model.max_B, 2);
        assert_int_equal(r.mf.model.value_residual, VR_RESFORMER);
        assert_int_equal(r.st.step, 77);
        assert_int_equal(count_diff(r.model.params, a.params, a.n_params), 0);
        assert_string_equal(r.config_ini, ini);
        run_close(&r);
        run_close(&r);
    }
    /* a unique prefix, and $GATELAB_RESULTS when no folder is passed */
    assert_int_equal(run_resolve("tiny-20261130-0002", results, got, sizeof got, err, sizeof err), 0);
    assert_string_equal(got, dir2);
    char dir3[GL_PATH_MAX];
    assert_int_equal(run_create_dir(results, "other-run", dir3, sizeof dir3, err, sizeof err), 0);
    assert_int_equal(run_resolve("oth", results, got, sizeof got, err, sizeof err), 0);
    assert_string_equal(got, dir3);
    setenv("GATELAB_RESULTS", results, 1);
    assert_int_equal(run_resolve("tiny-20261130-000", NULL, got, sizeof got, err, sizeof err), -1);
    print_message("ambiguous prefix: \"%s\"\n", err);
    assert_non_null(strstr(err, "ambiguous"));
    unsetenv("GATELAB_RESULTS");
    assert_string_equal(run_results_dir(NULL), "results");
    assert_string_equal(run_results_dir("x"), "x");

    assert_int_equal(run_resolve("nosuchrun", results, got, sizeof got, err, sizeof err), -1);
    print_message("unknown run: \"%s\"\n", err);
    assert_non_null(strstr(err, "nosuchrun"));
    assert_non_null(strstr(err, "--results"));
    gl_run r;
    assert_int_equal(run_open(&r, "tiny-20261130-0002", results, 1, err, sizeof err), -1);
    print_message("run without a checkpoint: \"%s\"\n", err);
    assert_non_null(strstr(err, "not a run folder"));
    snprintf(path, sizeof path, "%s/%s", dir2, RUN_CONFIG);
    FILE *cf = fopen(path, "w");
    assert_non_null(cf);
    fputs(ini, cf);
    fclose(cf);
    assert_int_equal(run_open(&r, "tiny-20261130-0002", results, 1, err, sizeof err), -1);
    print_message("run stopped before its first checkpoint: \"%s\"\n", err);
    assert_non_null(strstr(err, "no checkpoint yet"));
    run_close(&r);
    assert_int_equal(run_path(path, sizeof path, dir, RUN_CKPT), 0);
    run_close(&r);
    assert_int_equal(run_open(&r, "/nonexistent/run", results, 1, err, sizeof err), -1);
    assert_non_null(strstr(err, "/nonexistent/run"));
    run_close(&r);

    /* a checkpoint whose stored config does not match its weights */
    gl_manifest mf2 = mf;
    mf2.model.d_ff = 48;
    char *ini2 = manifest_to_ini(&mf2);
    assert_int_equal(ckpt_save(path, &a, &st, ini2, manifest_model_hash(&mf), err, sizeof err), 0);
    assert_int_equal(run_open(&r, "tiny-20261130-0001", results, 1, err, sizeof err), -1);
    print_message("stored config does not match the weights: \"%s\"\n", err);
    assert_non_null(strstr(err, "different model config"));
    run_close(&r);
    free(ini);
    free(ini2);
    model_free(&a);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_utf8_vocab),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_failed_write_keeps_old),
        cmocka_unit_test(test_run_folders),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
