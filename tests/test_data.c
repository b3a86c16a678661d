/*
 * test_data.c — data sets and batches (harness/store/data.c) and the synthetic
 * tasks (harness/store/tasks.c): vocabulary and encoding of a small file with UTF-8
 * bytes, the Tiny Shakespeare and enwik8 split boundaries (the real files,
 * found by data_find; skipped with the reason when absent), the lookup order
 * of data_find and its message, window/target alignment,
 * determinism, the error messages, the structure of copy / sort / MQAR
 * sequences, and the accuracy function on constructed logits.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "store/data.h"
#include "store/tasks.h"
#include "model/rng.h"

static char tmpdir[256];

static const char *write_file(const char *name, const void *bytes, size_t n) {
    static char paths[8][512];
    static int next;
    char *p = paths[next++ % 8];
    snprintf(p, 512, "%s/%s", tmpdir, name);
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(bytes, 1, n, f), n);
    fclose(f);
    return p;
}

static int setup_dir(void **state) {
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/gl_test_data_XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown_dir(void **state) {
    (void)state;
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

static void text_config(gl_data_config *dc, const char *file, float train, float val) {
    gl_manifest mf;
    manifest_defaults(&mf);
    *dc = mf.data;
    snprintf(dc->file, sizeof dc->file, "%s", file);
    dc->train_frac = train;
    dc->val_frac = val;
}

static void expect_open_error(const gl_data_config *dc, int T, ...) {
    gl_dataset ds;
    char err[2048] = "";
    int rc = data_open(&ds, dc, T, 1, err, sizeof err);
    printf("  error: %s\n", err);
    assert_int_equal(rc, -1);
    va_list ap;
    va_start(ap, T);
    for (const char *needle; (needle = va_arg(ap, const char *));) {
        if (!strstr(err, needle)) {
            printf("  missing \"%s\" in the message\n", needle);
            fail();
        }
    }
    va_end(ap);
    data_close(&ds); /* closing a failed open is allowed */
}

/* ---------------------------------------------------------------- text --- */

static const char sample[] = "To be, or not to be: that is the question.\n"
                             "Caf\xc3\xa9 na\xc3\xafve \xe2\x80\x94 r\xc3\xa9sum\xc3\xa9!\n"
                             "Whether 'tis nobler in the mind to suffer\n"
                             "The slings and arrows of outrageous fortune,\n";

static void test_vocab_and_encode(void **state) {
    (void)state;
    size_t n = sizeof sample - 1;
    const char *path = write_file("sample.txt", sample, n);
    gl_data_config dc;
    text_config(&dc, path, 0.5f, 0.5f);
    gl_dataset ds;
    char err[1024];
    int rc = data_open(&ds, &dc, 16, 1, err, sizeof err);
    if (rc) printf("  %s\n", err);
    assert_int_equal(rc, 0);

    int present[256] = {0}, V = 0;
    for (size_t i = 0; i < n; i++) present[(uint8_t)sample[i]] = 1;
    for (int b = 0; b < 256; b++) V += present[b];
    assert_int_equal(data_vocab_size(&ds), V);
    const uint8_t *vocab = data_vocab(&ds);
    for (int i = 1; i < V; i++) assert_true(vocab[i - 1] < vocab[i]);
    assert_true(vocab[V - 1] >= 0x80); /* UTF-8 bytes are ids like any other byte */
    int *ids = malloc(n * sizeof *ids);
    assert_int_equal(data_encode(&ds, (const uint8_t *)sample, n, ids, err, sizeof err), 0);
    for (size_t i = 0; i < n; i++) assert_int_equal(vocab[ids[i]], (uint8_t)sample[i]);
    for (size_t i = 0; i < n; i++) assert_int_equal(ds.ids[i], ids[i]);
    printf("  %d distinct bytes (largest 0x%02x, from UTF-8), sorted; encode/decode exact over %zu "
           "bytes\n",
           V, vocab[V - 1], n);

    rc = data_encode(&ds, (const uint8_t *)"to beZ", 6, ids, err, sizeof err);
    printf("  %s\n", err);
    assert_int_equal(rc, -1);
    assert_non_null(strstr(err, "'Z' (0x5a) at offset 5"));
    rc = data_encode(&ds, (const uint8_t *)"a\x01", 2, ids, err, sizeof err);
    printf("  %s\n", err);
    assert_non_null(strstr(err, "(0x01) at offset 1"));
    free(ids);
    data_close(&ds);
    data_close(&ds); /* twice is fine */
}

static void test_windows_alignment_and_determinism(void **state) {
    (void)state;
    /* 1000 bytes of a pattern with every byte position identifiable */
    enum { N = 1000, T = 8, B = 5 };
    uint8_t buf[N];
    for (int i = 0; i < N; i++) buf[i] = (uint8_t)('a' + (i * 7 + i / 26) % 26);
    const char *path = write_file("pattern.txt", buf, N);
    gl_data_config dc;
    text_config(&dc, path, 0.8f, 0.1f);
    gl_dataset ds;
    char err[1024];
    assert_int_equal(data_open(&ds, &dc, T, 1, err, sizeof err), 0);
    assert_true(ds.split_start[SPLIT_TRAIN] == 0 && ds.split_len[SPLIT_TRAIN] == 800);
    assert_true(ds.split_start[SPLIT_VAL] == 800 && ds.split_len[SPLIT_VAL] == 100);
    assert_true(ds.split_start[SPLIT_TEST] == 900 && ds.split_len[SPLIT_TEST] == 100);
    assert_int_equal(data_eval_windows(&ds, SPLIT_VAL), (100 - 1) / T);
    assert_int_equal(data_eval_windows(&ds, SPLIT_TEST), (100 - 1) / T);
    printf("  splits 800/100/100; %ld eval windows of %d per 100-byte split\n",
           data_eval_windows(&ds, SPLIT_VAL), T);

    int tok[B * T], tgt[B * T], tok2[B * T], tgt2[B * T];
    float mask[B * T], mask2[B * T];
    /* eval window i of val covers bytes [800 + iT, 800 + iT + T] */
    int filled = data_eval_batch(&ds, SPLIT_VAL, 3, B, tok, tgt, mask);
    assert_int_equal(filled, B);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            size_t at = 800 + (size_t)(3 + b) * T + t;
            assert_int_equal(ds.vocab[tok[b * T + t]], buf[at]);
            assert_int_equal(ds.vocab[tgt[b * T + t]], buf[at + 1]);
            assert_true(mask[b * T + t] == 1.0f);
        }
    /* the last val window's last target is still inside val */
    long last = data_eval_windows(&ds, SPLIT_VAL) - 1;
    filled = data_eval_batch(&ds, SPLIT_VAL, last, B, tok, tgt, mask);
    assert_int_equal(filled, 1);
    assert_true(800 + (size_t)last * T + T < 900);
    for (int t = 0; t < T; t++) assert_true(mask[T + t] == 0.0f && tok[T + t] == 0);
    printf("  eval windows: tokens = bytes[start+iT ..], targets shifted by one; partial batch "
           "filled 1 of %d, rest masked\n",
           B);

    /* training windows: targets are tokens shifted by one and lie in train */
    gl_rng r1, r2;
    rng_seed(&r1, 42);
    rng_seed(&r2, 42);
    int max_start = 0;
    for (int rep = 0; rep < 200; rep++) {
        data_train_batch(&ds, &r1, B, tok, tgt, mask);
        data_train_batch(&ds, &r2, B, tok2, tgt2, mask2);
        assert_memory_equal(tok, tok2, sizeof tok);
        assert_memory_equal(tgt, tgt2, sizeof tgt);
        for (int b = 0; b < B; b++) {
            for (int t = 0; t + 1 < T; t++) assert_int_equal(tgt[b * T + t], tok[b * T + t + 1]);
            /* find the window in the train bytes */
            int found = -1;
            for (int s = 0; s + T < 800 && found < 0; s++) {
                int ok = 1;
                for (int t = 0; t < T && ok; t++)
                    ok = ds.vocab[tok[b * T + t]] == buf[s + t] &&
                         ds.vocab[tgt[b * T + t]] == buf[s + t + 1];
                if (ok) found = s;
            }
            assert_true(found >= 0);
            if (found > max_start) max_start = found;
        }
    }
    rng_seed(&r2, 43);
    data_train_batch(&ds, &r2, B, tok2, tgt2, mask2);
    data_train_batch(&ds, &r1, B, tok, tgt, mask);
    assert_true(memcmp(tok, tok2, sizeof tok) != 0);
    printf("  1000 training windows: same seed -> same batches, all inside train (latest start "
           "%d of max %d); another seed differs\n",
           max_start, 800 - T - 1);
    data_close(&ds);
}

static void test_text_errors(void **state) {
    (void)state;
    gl_data_config dc;
    char missing[600];
    snprintf(missing, sizeof missing, "%s/absent.txt", tmpdir);
    text_config(&dc, missing, 0.9f, 0.1f);
    expect_open_error(&dc, 8, "cannot open", "absent.txt", "GATELAB_DATA", NULL);

    char saved[1024] = "";
    const char *old = getenv("GATELAB_DATA");
    if (old) snprintf(saved, sizeof saved, "%s", old);
    setenv("GATELAB_DATA", tmpdir, 1);
    text_config(&dc, "absent.txt", 0.9f, 0.1f);
    /* every place searched, in order, and the command that fetches the data sets */
    expect_open_error(&dc, 8, "absent.txt not found; searched", missing, "($GATELAB_DATA)", "(data/ in the clone)",
                      "(../shared/data)", "make data", NULL);
    write_file("rel.txt", sample, sizeof sample - 1);
    text_config(&dc, "rel.txt", 0.5f, 0.5f);
    gl_dataset ds;
    char err[1024];
    assert_int_equal(data_open(&ds, &dc, 8, 1, err, sizeof err), 0);
    printf("  relative data.file resolved in $GATELAB_DATA: %s\n", ds.path);
    data_close(&ds);
    if (old)
        setenv("GATELAB_DATA", saved, 1);
    else
        unsetenv("GATELAB_DATA");

    text_config(&dc, write_file("empty.txt", "", 0), 0.9f, 0.1f);
    expect_open_error(&dc, 8, "empty.txt has 0 bytes", NULL);
    text_config(&dc, write_file("one.txt", "x", 1), 0.9f, 0.1f);
    expect_open_error(&dc, 8, "one.txt has 1 byte;", NULL);
    text_config(&dc, write_file("short.txt", sample, 100), 0.9f, 0.1f);
    expect_open_error(&dc, 16, "the val split", "has 10 bytes", "model.seq_len + 1 = 17", NULL);
    text_config(&dc, write_file("short2.txt", sample, 100), 0.1f, 0.9f);
    expect_open_error(&dc, 16, "the train split", "has 10 bytes", NULL);
    text_config(&dc, tmpdir, 0.9f, 0.1f);
    expect_open_error(&dc, 8, "not a regular file", NULL);

    gl_dataset zero;
    memset(&zero, 0, sizeof zero);
    data_close(&zero);
    data_close(NULL);
}

/* The real data set name, found by data_find; skips the test, saying why, when it is absent. */
static void find_or_skip(const char *test, const char *name, char *path, size_t n) {
    char why[4096];
    if (data_find(name, path, n, why, sizeof why) == 0) return;
    printf("SKIP %s: %s\n", test, why);
    fflush(stdout);
    skip();
}

/* The lookup order: $GATELAB_DATA (a relative value taken against the working
 * folder), data/ in the clone, the clone's ../shared/data. */
static void test_data_lookup(void **state) {
    (void)state;
    char saved[1024] = "", cwd[1024];
    const char *old = getenv("GATELAB_DATA");
    if (old) snprintf(saved, sizeof saved, "%s", old);
    assert_non_null(getcwd(cwd, sizeof cwd));

    setenv("GATELAB_DATA", tmpdir, 1);
    gl_data_dirs d;
    data_search_dirs(&d);
    assert_int_equal(d.n, 3);
    assert_string_equal(d.dir[0], tmpdir);
    assert_string_equal(d.origin[0], "$GATELAB_DATA");
    assert_string_equal(d.origin[1], "data/ in the clone");
    assert_string_equal(d.origin[2], "../shared/data");
    /* the clone is the tree this test binary was built in: it holds experiments/scales.ini */
    char clone[GL_PATH_MAX + 32], probe[GL_PATH_MAX + 64];
    snprintf(clone, sizeof clone, "%s", d.dir[1]);
    size_t k = strlen(clone);
    assert_true(k > 5 && !strcmp(clone + k - 5, "/data"));
    clone[k - 5] = 0;
    snprintf(probe, sizeof probe, "%s/experiments/scales.ini", clone);
    assert_int_equal(access(probe, R_OK), 0);
    char *slash = strrchr(clone, '/');
    assert_non_null(slash);
    *slash = 0;
    snprintf(probe, sizeof probe, "%s/shared/data", clone);
    assert_string_equal(d.dir[2], probe);

    /* a relative GATELAB_DATA is relative to the working folder */
    char sub[600];
    snprintf(sub, sizeof sub, "%s/sub", tmpdir);
    assert_int_equal(mkdir(sub, 0755), 0);
    write_file("sub/rel2.txt", sample, sizeof sample - 1);
    assert_int_equal(chdir(tmpdir), 0);
    setenv("GATELAB_DATA", "sub", 1);
    char path[GL_PATH_MAX], err[4096];
    int rc = data_find("rel2.txt", path, sizeof path, err, sizeof err);
    assert_int_equal(chdir(cwd), 0);
    if (rc) printf("  %s\n", err);
    assert_int_equal(rc, 0);
    char want[700];
    snprintf(want, sizeof want, "%s/sub/rel2.txt", tmpdir);
    assert_string_equal(path, want);
    /* a path is used as given, never looked up */
    assert_int_equal(data_find("./nowhere.txt", path, sizeof path, err, sizeof err), 0);
    assert_string_equal(path, "./nowhere.txt");
    printf("  lookup: %s, then %s, then %s; GATELAB_DATA=sub from %s -> %s\n", d.dir[0], d.dir[1], d.dir[2], tmpdir,
           want);
    if (old) setenv("GATELAB_DATA", saved, 1);
    else unsetenv("GATELAB_DATA");
}

static void test_tinyshakespeare_split(void **state) {
    (void)state;
    char path[1024];
    find_or_skip("test_tinyshakespeare_split", "tinyshakespeare.txt", path, sizeof path);
    gl_data_config dc;
    text_config(&dc, path, 0.9f, 0.1f);
    gl_dataset ds;
    char err[1024];
    assert_int_equal(data_open(&ds, &dc, 128, 1, err, sizeof err), 0);
    assert_int_equal(ds.n, 1115394);
    assert_int_equal(data_vocab_size(&ds), 65);
    assert_int_equal(ds.split_len[SPLIT_TRAIN], 1003854);
    assert_int_equal(ds.split_start[SPLIT_VAL], 1003854);
    assert_int_equal(ds.split_len[SPLIT_VAL], 111540);
    assert_int_equal(ds.split_len[SPLIT_TEST], 0);
    assert_int_equal(data_eval_windows(&ds, SPLIT_TEST), 0);
    assert_int_equal(data_eval_windows(&ds, SPLIT_VAL), (111540 - 1) / 128);
    const uint8_t *v = data_vocab(&ds);
    assert_true(v[0] == '\n' && v[1] == ' ' && v[64] == 'z');
    printf("  tinyshakespeare: 65 symbols, train 1,003,854, val 111,540 (nanoGPT), test 0, "
           "%ld val windows of 128\n",
           data_eval_windows(&ds, SPLIT_VAL));
    data_close(&ds);
    /* the TSA paper's 80/10/10 (benchmarks/shakespeare.py: int(n*0.8), int(n*0.1), the rest) */
    text_config(&dc, path, 0.8f, 0.1f);
    assert_int_equal(data_open(&ds, &dc, 128, 1, err, sizeof err), 0);
    assert_int_equal(ds.split_len[SPLIT_TRAIN], 892315);
    assert_int_equal(ds.split_start[SPLIT_VAL], 892315);
    assert_int_equal(ds.split_len[SPLIT_VAL], 111539);
    assert_int_equal(ds.split_start[SPLIT_TEST], 1003854);
    assert_int_equal(ds.split_len[SPLIT_TEST], 111540);
    assert_int_equal(data_eval_windows(&ds, SPLIT_TEST), (111540 - 1) / 128);
    printf("  tinyshakespeare 0.8 / 0.1: train 892,315, val 111,539, test 111,540 (the TSA paper's split)\n");
    data_close(&ds);
}

static void test_enwik8_split(void **state) {
    (void)state;
    char path[1024];
    find_or_skip("test_enwik8_split", "enwik8_first4000000.txt", path, sizeof path);
    gl_data_config dc;
    text_config(&dc, path, 0.9f, 0.05f);
    gl_dataset ds;
    char err[1024];
    assert_int_equal(data_open(&ds, &dc, 256, 1, err, sizeof err), 0);
    assert_int_equal(ds.split_start[SPLIT_VAL], 3600000);
    assert_int_equal(ds.split_start[SPLIT_TEST], 3800000);
    assert_int_equal(ds.split_len[SPLIT_VAL], 200000);
    assert_int_equal(ds.split_len[SPLIT_TEST], 200000);
    printf("  enwik8 prefix 90/5/5: [0, 3.6M) [3.6M, 3.8M) [3.8M, 4M) exactly (float 0.9f "
           "read as the decimal 0.9); %d symbols\n",
           data_vocab_size(&ds));
    assert_int_equal(data_vocab_size(&ds), 200);
    data_close(&ds);
}

/* ----------------------------------------------------------- synthetic --- */

static void task_config(gl_data_config *dc, gl_task task) {
    gl_manifest mf;
    manifest_defaults(&mf);
    *dc = mf.data;
    dc->task = task;
}

static void test_copy_sort(void **state) {
    (void)state;
    for (int which = 0; which < 2; which++) {
        gl_data_config dc;
        task_config(&dc, which ? TASK_SORT : TASK_COPY);
        dc.seq_items = 7;
        dc.n_symbols = 5;
        const int T = 20, B = 64, n = 7, S = 5;
        gl_dataset ds;
        char err[1024];
        assert_int_equal(data_open(&ds, &dc, T, 9, err, sizeof err), 0);
        assert_int_equal(data_vocab_size(&ds), S + 2);
        int sep = task_sep_id(&dc), pad = task_pad_id(&dc);
        assert_true(sep == S && pad == S + 1);
        int tok[64 * 20], tgt[64 * 20];
        float mask[64 * 20];
        gl_rng r;
        rng_seed(&r, 5);
        long unsorted_inputs = 0;
        for (int rep = 0; rep < 20; rep++) {
            data_train_batch(&ds, &r, B, tok, tgt, mask);
            for (int b = 0; b < B; b++) {
                int *x = tok + b * T, *y = tgt + b * T;
                float *m = mask + b * T;
                for (int t = 0; t + 1 < T; t++) assert_int_equal(y[t], x[t + 1]);
                for (int j = 0; j < n; j++) assert_true(x[j] >= 0 && x[j] < S);
                assert_int_equal(x[n], sep);
                int in_count[5] = {0}, out_count[5] = {0};
                for (int j = 0; j < n; j++) in_count[x[j]]++;
                for (int k = 0; k < n; k++) {
                    int yk = y[n + k]; /* target at position n+k is y_{k+1} */
                    assert_true(yk >= 0 && yk < S);
                    out_count[yk]++;
                    if (which == 0) assert_int_equal(yk, x[k]);
                    if (which == 1 && k > 0) assert_true(y[n + k - 1] <= yk);
                }
                assert_memory_equal(in_count, out_count, sizeof in_count);
                for (int j = 1; j < n; j++) unsorted_inputs += x[j - 1] > x[j];
                for (int t = 0; t < T; t++) assert_true(m[t] == ((t >= n && t < 2 * n) ? 1.0f : 0.0f));
                for (int t = 2 * n + 1; t < T; t++) assert_int_equal(x[t], pad);
                for (int t = 2 * n; t < T; t++) assert_int_equal(y[t], pad);
            }
        }
        assert_true(unsorted_inputs > 0);
        printf("  %s: x SEP y layout, mask on positions [%d, %d), outputs %s, PAD after; "
               "1280 sequences\n",
               which ? "sort" : "copy", n, 2 * n, which ? "sorted permutations of x" : "= x");
        data_close(&ds);
    }
    /* T = 2n is enough (the last output is only a target), T = 2n-1 is not */
    gl_data_config dc;
    task_config(&dc, TASK_COPY);
    gl_dataset ds;
    char err[1024];
    assert_int_equal(data_open(&ds, &dc, 20, 1, err, sizeof err), 0);
    int tok[20], tgt[20];
    float mask[20];
    gl_rng r;
    rng_seed(&r, 3);
    data_train_batch(&ds, &r, 1, tok, tgt, mask);
    for (int k = 0; k < 10; k++) assert_int_equal(tgt[10 + k], tok[k]);
    data_close(&ds);
    expect_open_error(&dc, 19, "model.seq_len (19) is too short", "data.seq_items = 10", NULL);
}

static void test_mqar(void **state) {
    (void)state;
    gl_data_config dc;
    task_config(&dc, TASK_MQAR);
    dc.mqar_pairs = 6;
    dc.mqar_queries = 4;
    dc.mqar_keys = 8;
    dc.mqar_values = 5;
    const int P = 6, Q = 4, K = 8, Vv = 5, T = 24, B = 32;
    gl_dataset ds;
    char err[1024];
    assert_int_equal(data_open(&ds, &dc, T, 1, err, sizeof err), 0);
    assert_int_equal(data_vocab_size(&ds), K + Vv + 1);
    assert_int_equal(task_pad_id(&dc), K + Vv);
    assert_int_equal(task_sep_id(&dc), -1);
    int tok[32 * 24], tgt[32 * 24];
    float mask[32 * 24];
    gl_rng r;
    rng_seed(&r, 11);
    int key_hist[8] = {0};
    for (int rep = 0; rep < 50; rep++) {
        data_train_batch(&ds, &r, B, tok, tgt, mask);
        for (int b = 0; b < B; b++) {
            int *x = tok + b * T, *y = tgt + b * T;
            float *m = mask + b * T;
            for (int t = 0; t + 1 < T; t++) assert_int_equal(y[t], x[t + 1]);
            for (int i = 0; i < P; i++) {
                assert_true(x[2 * i] >= 0 && x[2 * i] < K);
                assert_true(x[2 * i + 1] >= K && x[2 * i + 1] < K + Vv);
                for (int j = 0; j < i; j++) assert_true(x[2 * j] != x[2 * i]);
                key_hist[x[2 * i]]++;
            }
            int scored = 0;
            for (int q = 0; q < Q; q++) {
                int pos = 2 * P + 2 * q, key = x[pos], value = -1;
                for (int i = 0; i < P; i++)
                    if (x[2 * i] == key) value = x[2 * i + 1];
                assert_true(value >= 0);               /* asks a key of this sequence */
                assert_int_equal(y[pos], value);        /* target = its value */
                assert_int_equal(x[pos + 1], value);    /* and the value follows in the input */
                for (int p = 0; p < q; p++) assert_true(x[2 * P + 2 * p] != key);
            }
            for (int t = 0; t < T; t++) {
                int expect = t >= 2 * P && t < 2 * P + 2 * Q && (t - 2 * P) % 2 == 0;
                assert_true(m[t] == (expect ? 1.0f : 0.0f));
                scored += m[t] > 0;
            }
            assert_int_equal(scored, Q);
            for (int t = 2 * P + 2 * Q; t < T; t++) assert_int_equal(x[t], K + Vv);
        }
    }
    for (int k = 0; k < K; k++) assert_true(key_hist[k] > 0);
    printf("  mqar: %d distinct keys with values in [%d, %d), %d distinct queries scored at the "
           "key, answer follows; every key id used\n",
           P, K, K + Vv, Q);
    data_close(&ds);

    dc.mqar_keys = 5;
    expect_open_error(&dc, T, "data.mqar_keys (5) must be at least data.mqar_pairs (6)", NULL);
    dc.mqar_keys = 8;
    expect_open_error(&dc, 19, "model.seq_len (19) is too short for data.task = mqar", NULL);
}

static void test_synthetic_eval_sets(void **state) {
    (void)state;
    gl_data_config dc;
    task_config(&dc, TASK_SORT);
    const int T = 24, B = 8;
    gl_dataset ds, ds2;
    char err[1024];
    assert_int_equal(data_open(&ds, &dc, T, 77, err, sizeof err), 0);
    assert_int_equal(data_open(&ds2, &dc, T, 77, err, sizeof err), 0);
    assert_int_equal(data_eval_windows(&ds, SPLIT_VAL), TASK_EVAL_WINDOWS);
    assert_int_equal(data_eval_windows(&ds, SPLIT_TEST), TASK_EVAL_WINDOWS);
    assert_int_equal(data_eval_windows(&ds, SPLIT_TRAIN), 0);
    int a[8 * 24], at[8 * 24], b[8 * 24], bt[8 * 24];
    float am[8 * 24], bm[8 * 24];
    /* the same windows whatever the batch they come in */
    assert_int_equal(data_eval_batch(&ds, SPLIT_VAL, 4, B, a, at, am), B);
    assert_int_equal(data_eval_batch(&ds2, SPLIT_VAL, 6, B, b, bt, bm), B);
    assert_memory_equal(a + 2 * T, b, (size_t)(B - 2) * T * sizeof(int));
    assert_memory_equal(at + 2 * T, bt, (size_t)(B - 2) * T * sizeof(int));
    /* val differs from test, and from another seed */
    assert_int_equal(data_eval_batch(&ds, SPLIT_TEST, 4, B, b, bt, bm), B);
    assert_true(memcmp(a, b, sizeof a) != 0);
    data_close(&ds2);
    assert_int_equal(data_open(&ds2, &dc, T, 78, err, sizeof err), 0);
    assert_int_equal(data_eval_batch(&ds2, SPLIT_VAL, 4, B, b, bt, bm), B);
    assert_true(memcmp(a, b, sizeof a) != 0);
    /* the end of the set */
    assert_int_equal(data_eval_batch(&ds, SPLIT_VAL, TASK_EVAL_WINDOWS - 3, B, a, at, am), 3);
    for (int i = 3 * T; i < B * T; i++) assert_true(am[i] == 0.0f);
    const uint8_t *v = data_vocab(&ds);
    assert_true(v[task_sep_id(&dc)] == '|' && v[task_pad_id(&dc)] == '.');
    int ids[3];
    assert_int_equal(data_encode(&ds, (const uint8_t *)"0f|", 3, ids, err, sizeof err), 0);
    assert_true(ids[0] == 0 && ids[1] == 15 && ids[2] == task_sep_id(&dc));
    printf("  sort eval sets: %d val + %d test windows, fixed by (seed, split, i), independent of "
           "batching; display symbols encode back\n",
           TASK_EVAL_WINDOWS, TASK_EVAL_WINDOWS);
    data_close(&ds);
    data_close(&ds2);
}


/* data.task_format = paper: the TSA paper's official toy layout (toy_tasks.py):
 * BOS x1..xn SEP y1..yn EOS, PAD 0 BOS 1 EOS 2 SEP 3, items at 4..S+3, the
 * targets of positions n+1..2n+1 (the n outputs and EOS) scored. */
static void test_paper_format(void **state) {
    (void)state;
    for (int which = 0; which < 2; which++) {
        gl_data_config dc;
        task_config(&dc, which ? TASK_SORT : TASK_COPY);
        dc.task_format = TASKF_PAPER;
        dc.seq_items = 20;
        dc.n_symbols = 28;
        const int n = 20, S = 28, T = 45, B = 32; /* T > 2n+2: three PAD positions after EOS */
        gl_dataset ds;
        char err[1024];
        assert_int_equal(data_open(&ds, &dc, T, 42, err, sizeof err), 0);
        assert_int_equal(data_vocab_size(&ds), 32);
        assert_true(task_pad_id(&dc) == 0 && task_bos_id(&dc) == 1 && task_eos_id(&dc) == 2 && task_sep_id(&dc) == 3);
        const uint8_t *v = data_vocab(&ds);
        assert_true(v[0] == '.' && v[1] == '^' && v[2] == '$' && v[3] == '|' && v[4] == '0');
        static int tok[32 * 45], tgt[32 * 45];
        static float mask[32 * 45];
        gl_rng r;
        rng_seed(&r, 5);
        long repeats = 0, unsorted = 0;
        for (int rep = 0; rep < 10; rep++) {
            data_train_batch(&ds, &r, B, tok, tgt, mask);
            for (int b = 0; b < B; b++) {
                int *x = tok + b * T, *y = tgt + b * T;
                float *m = mask + b * T;
                for (int t = 0; t + 1 < T; t++) assert_int_equal(y[t], x[t + 1]);
                assert_int_equal(x[0], 1);
                int cnt_in[32] = {0}, cnt_out[32] = {0};
                for (int j = 1; j <= n; j++) {
                    assert_true(x[j] >= 4 && x[j] < S + 4);
                    cnt_in[x[j]]++;
                }
                for (int j = 2; j <= n; j++) unsorted += x[j - 1] > x[j];
                for (int i = 4; i < 32; i++) repeats += cnt_in[i] > 1;
                assert_int_equal(x[n + 1], 3);
                for (int k = 0; k < n; k++) {
                    int yk = y[n + 1 + k];
                    cnt_out[yk]++;
                    if (which == 0) assert_int_equal(yk, x[1 + k]);
                    if (which == 1 && k > 0) assert_true(y[n + k] <= yk);
                }
                assert_memory_equal(cnt_in, cnt_out, sizeof cnt_in);
                assert_int_equal(y[2 * n + 1], 2); /* EOS is the last scored target */
                for (int t = 0; t < T; t++)
                    assert_true(m[t] == ((t >= n + 1 && t <= 2 * n + 1) ? 1.0f : 0.0f));
                for (int t = 2 * n + 2; t < T; t++) assert_int_equal(y[t], 0);
                for (int t = 2 * n + 3; t < T; t++) assert_int_equal(x[t], 0);
            }
        }
        assert_true(unsorted > 0 && repeats > 0); /* sort inputs repeat, as torch.randint's do */
        printf("  paper %s: BOS x SEP y EOS, V = 32, mask on targets [%d, %d] (outputs and EOS), items with "
               "repeats\n", which ? "sort" : "copy", n + 1, 2 * n + 1);
        data_close(&ds);
        /* T = 2n+2 is the official length (x = full[:-1]); 2n+1 is refused */
        assert_int_equal(data_open(&ds, &dc, 2 * n + 2, 1, err, sizeof err), 0);
        data_close(&ds);
        expect_open_error(&dc, 2 * n + 1, "model.seq_len (41) is too short", "data.task_format = paper", "42", NULL);
    }
    gl_data_config dc;
    task_config(&dc, TASK_MQAR);
    dc.task_format = TASKF_PAPER;
    expect_open_error(&dc, 64, "data.task_format = paper applies to data.task = copy or sort, not mqar", NULL);
    task_config(&dc, TASK_TEXT);
    dc.train_size = 100;
    expect_open_error(&dc, 64, "data.train_size applies to the synthetic tasks", NULL);
}

/* data.train_size: a fixed training set read in shuffled epochs with the
 * last partial batch dropped; each batch a function of (seed, step). */
static void test_fixed_train_set(void **state) {
    (void)state;
    gl_data_config dc;
    task_config(&dc, TASK_COPY);
    dc.task_format = TASKF_PAPER;
    dc.seq_items = 4;
    dc.n_symbols = 28;
    dc.train_size = 10;
    dc.eval_size = 7;
    enum { T = 10, B = 4, E = 2 }; /* 10 sequences, batches of 4: 2 batches an epoch, 2 left out */
    gl_dataset ds, ds2;
    char err[1024];
    assert_int_equal(data_open(&ds, &dc, T, 42, err, sizeof err), 0);
    assert_int_equal(data_open(&ds2, &dc, T, 42, err, sizeof err), 0);
    assert_int_equal(data_train_steps_per_epoch(&ds, B), E);
    assert_int_equal(data_eval_windows(&ds, SPLIT_VAL), 7);
    assert_int_equal(data_eval_windows(&ds, SPLIT_TEST), 7);
    /* the set itself */
    int set[10][T], st[T];
    float sm[T];
    for (int i = 0; i < 10; i++) {
        gl_rng r;
        task_eval_rng(&r, 42, 0, i);
        task_sequence(&dc, &r, T, set[i], st, sm);
    }
    int tok[B * T], tg[B * T], tok2[B * T], tg2[B * T];
    float mk[B * T], mk2[B * T];
    gl_rng unused;
    rng_seed(&unused, 1);
    int order[3][E * B];
    for (int e = 0; e < 3; e++) {
        int seen[10] = {0};
        for (int j = 0; j < E; j++) {
            data_train_batch_step(&ds, &unused, (long)e * E + j, B, tok, tg, mk);
            for (int b = 0; b < B; b++) {
                int hit = -1;
                for (int i = 0; i < 10 && hit < 0; i++)
                    if (!memcmp(set[i], tok + b * T, sizeof set[i])) hit = i;
                assert_true(hit >= 0);
                seen[hit]++;
                order[e][j * B + b] = hit;
            }
        }
        int distinct = 0;
        for (int i = 0; i < 10; i++) {
            assert_true(seen[i] <= 1); /* no sequence twice in an epoch */
            distinct += seen[i];
        }
        assert_int_equal(distinct, E * B);
    }
    assert_true(memcmp(order[0], order[1], sizeof order[0]) != 0); /* each epoch its own shuffle */
    /* a batch depends on (seed, step) alone: step 5 read first on a fresh data set, and after others */
    data_train_batch_step(&ds2, &unused, 5, B, tok2, tg2, mk2);
    data_train_batch_step(&ds, &unused, 5, B, tok, tg, mk);
    assert_memory_equal(tok, tok2, sizeof tok);
    assert_memory_equal(tg, tg2, sizeof tg);
    assert_memory_equal(mk, mk2, sizeof mk);
    /* the training set is not the validation set */
    int vt[B * T], vg[B * T];
    float vm[B * T];
    data_eval_batch(&ds, SPLIT_VAL, 0, B, vt, vg, vm);
    for (int i = 0; i < 10; i++) assert_true(memcmp(set[i], vt, sizeof set[i]) != 0);
    printf("  fixed set of 10, batches of 4: %d batches an epoch, each sequence at most once per epoch, "
           "epochs shuffled apart (epoch 0 starts %d %d %d %d), batch 5 the same read cold; 7 val, 7 test\n",
           E, order[0][0], order[0][1], order[0][2], order[0][3]);
    data_close(&ds);
    data_close(&ds2);
}


/* data_random_batch: the TSA paper's random evaluation windows — starts uniform in
 * [0, len - T - 1) of the split (torch.randint's exclusive upper end), deterministic given the
 * rng; a synthetic task draws from its fixed set. */
static void test_random_windows(void **state) {
    (void)state;
    char buf[400];
    uint32_t x = 2463534242u; /* xorshift32 letters: every window of 8 distinct in practice */
    for (int i = 0; i < 400; i++) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        buf[i] = (char)('a' + x % 26);
    }
    const char *path = write_file("random.txt", buf, sizeof buf);
    gl_data_config dc;
    text_config(&dc, path, 0.5f, 0.25f); /* train [0, 200), val [200, 300), test [300, 400) */
    enum { T = 8, B = 64 };
    gl_dataset ds;
    char err[1024];
    assert_int_equal(data_open(&ds, &dc, T, 1, err, sizeof err), 0);
    assert_int_equal(data_random_starts(&ds, SPLIT_VAL), 100 - T - 1);
    int tok[B * T], tg[B * T], tok2[B * T], tg2[B * T];
    float mk[B * T], mk2[B * T];
    int hit[100] = {0};
    gl_rng r, r2;
    rng_seed(&r, 11);
    for (int rep = 0; rep < 40; rep++) {
        data_random_batch(&ds, SPLIT_VAL, &r, B, tok, tg, mk);
        for (int b = 0; b < B; b++) {
            int start = -1; /* find the window in the val split by its bytes */
            for (int s = 0; s + T < 100 && start < 0; s++) {
                int same = 1;
                for (int t = 0; t < T && same; t++) same = tok[b * T + t] == ds.ids[200 + s + t] && tg[b * T + t] == ds.ids[200 + s + t + 1];
                if (same) start = s;
            }
            assert_true(start >= 0 && start < 100 - T - 1);
            hit[start]++;
            for (int t = 0; t < T; t++) assert_true(mk[b * T + t] == 1.0f);
        }
    }
    int covered = 0;
    for (int s = 0; s < 100 - T - 1; s++) covered += hit[s] > 0;
    assert_int_equal(covered, 100 - T - 1);           /* every start is drawn ... */
    assert_int_equal(hit[100 - T - 1], 0);             /* ... but the last, as in the paper's code */
    rng_seed(&r, 5);
    rng_seed(&r2, 5);
    data_random_batch(&ds, SPLIT_VAL, &r, B, tok, tg, mk);
    data_random_batch(&ds, SPLIT_VAL, &r2, B / 2, tok2, tg2, mk2); /* window i is the i-th draw, in halves */
    data_random_batch(&ds, SPLIT_VAL, &r2, B / 2, tok2 + B / 2 * T, tg2 + B / 2 * T, mk2 + B / 2 * T);
    assert_memory_equal(tok, tok2, sizeof tok);
    assert_memory_equal(tg, tg2, sizeof tg);
    printf("  random val windows: all %d starts of [0, len - T - 1) drawn in 2560 windows, never the last; the "
           "same draws whatever the batch size\n", 100 - T - 1);
    data_close(&ds);
    gl_data_config tc;
    task_config(&tc, TASK_SORT);
    tc.eval_size = 5;
    assert_int_equal(data_open(&ds, &tc, 24, 3, err, sizeof err), 0);
    assert_int_equal(data_random_starts(&ds, SPLIT_VAL), 5);
    assert_int_equal(data_random_starts(&ds, SPLIT_TRAIN), 0);
    int vt[5][24], vg[5 * 24];
    float vm[5 * 24];
    data_eval_batch(&ds, SPLIT_VAL, 0, 5, &vt[0][0], vg, vm);
    rng_seed(&r, 9);
    data_random_batch(&ds, SPLIT_VAL, &r, 8, tok, tg, mk);
    for (int b = 0; b < 8; b++) {
        int found = 0;
        for (int i = 0; i < 5; i++) found |= !memcmp(vt[i], tok + b * 24, sizeof vt[i]);
        assert_true(found);
    }
    printf("  a synthetic task's random windows are members of its fixed val set\n");
    data_close(&ds);
}

/* ------------------------------------------------------------ accuracy --- */

static void test_accuracy(void **state) {
    (void)state;
    enum { B = 3, T = 3, V = 4 };
    float logits[B * T * V];
    int argmax[B * T] = {2, 0, 3, /**/ 1, 1, 1, /**/ 0, 3, 2};
    for (int i = 0; i < B * T; i++)
        for (int v = 0; v < V; v++) logits[i * V + v] = v == argmax[i] ? 2.0f : -1.0f + 0.1f * v;
    logits[5 * V + 2] = 2.0f; /* tie at position 5: ids 1 and 2 -> the lower id, 1 */
    int targets[B * T] = {2, 1, 3, /**/ 1, 1, 1, /**/ 0, 0, 0};
    float mask[B * T] = {1, 1, 0, /**/ 0, 1, 1, /**/ 0, 0, 0};
    double tok, seq;
    data_accuracy(logits, targets, mask, B, T, V, &tok, &seq);
    /* scored: (0,0) ok, (0,1) wrong, (1,1) ok, (1,2) ok by tie -> 3/4; rows: 0 wrong, 1 right, 2
     * unscored -> 1/2 */
    printf("  token accuracy %.4f (expect 0.75), sequence accuracy %.4f (expect 0.5)\n", tok, seq);
    assert_true(tok == 0.75 && seq == 0.5);
    float none[B * T] = {0};
    data_accuracy(logits, targets, none, B, T, V, &tok, &seq);
    assert_true(tok == 0.0 && seq == 0.0);
    for (int i = 0; i < B * T; i++) targets[i] = argmax[i]; /* position 5's tie resolves to 1 */
    for (int i = 0; i < B * T; i++) mask[i] = 1.0f;
    data_accuracy(logits, targets, mask, B, T, V, &tok, &seq);
    assert_true(tok == 1.0 && seq == 1.0);
    printf("  nothing scored -> 0, 0; all argmax targets -> 1, 1\n");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vocab_and_encode),
        cmocka_unit_test(test_windows_alignment_and_determinism),
        cmocka_unit_test(test_text_errors),
        cmocka_unit_test(test_data_lookup),
        cmocka_unit_test(test_tinyshakespeare_split),
        cmocka_unit_test(test_enwik8_split),
        cmocka_unit_test(test_copy_sort),
        cmocka_unit_test(test_mqar),
        cmocka_unit_test(test_synthetic_eval_sets),
        cmocka_unit_test(test_paper_format),
        cmocka_unit_test(test_fixed_train_set),
        cmocka_unit_test(test_random_windows),
        cmocka_unit_test(test_accuracy),
    };
    return cmocka_run_group_tests(tests, setup_dir, teardown_dir);
}
