/*
 * test_hostile.c — untrusted input (issue 13): the one number syntax of
 * store/parse.c, checkpoints whose header and checksum are consistent but
 * whose fields are hostile (vocabulary over 256, NaN parameters, a negative
 * step, a tensor larger than the arrays), trace files with category codes
 * outside 0..2, and a FIFO or folder where a regular file belongs (refused at
 * once, never a hang).  Each refusal must name what is wrong and leave the
 * model untouched.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <cmocka.h>

#include "tmpdir.h"

#include "model/model.h"
#include "store/ckpt.h"
#include "store/fileio.h"
#include "store/parse.h"
#include "store/trace.h"

static int setup(void **state) {
    (void)state;
    return tmpdir_make("hostile");
}

/* ------------------------------------------------------------ numbers */

static void test_parse_numbers(void **state) {
    (void)state;
    struct { const char *s; int rc; long v; } ints[] = {
        {"12", 0, 12}, {"-5", -2, 0}, {"+7", 0, 7}, {"abc", -1, 0}, {"", -1, 0}, {"1e14", -1, 0},
        {"12abc", -1, 0}, {" 12", -1, 0}, {"12 ", -1, 0}, {"0x10", -1, 0}, {"3.0", -1, 0},
        {"99999999999999999999999", -2, 0}, {"100", 0, 100}, {"101", -2, 0}, {"nan", -1, 0},
    };
    char why[160];
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        long v = -999;
        int rc = parse_long(ints[i].s, 0, 100, &v, why, sizeof why);
        print_message("  parse_long(\"%s\", 0..100) = %d%s%s\n", ints[i].s, rc, rc ? ": " : "", rc ? why : "");
        assert_int_equal(rc, ints[i].rc);
        assert_int_equal(v, rc ? -999 : ints[i].v);
    }
    struct { const char *s; int rc; } reals[] = {
        {"0.5", 0}, {"-.5", -2}, {"1e-3", 0}, {"1E+0", 0}, {"nan", -1}, {"NaN", -1}, {"inf", -1}, {"-inf", -1},
        {"infinity", -1}, {"0x1p-3", -1}, {"1e999", -1}, {"1e-999", -1}, {"1.", 0}, {".", -1}, {"1e", -1},
        {"", -1}, {"0.5x", -1}, {"2", -2},
    };
    for (size_t i = 0; i < sizeof reals / sizeof reals[0]; i++) {
        double v = -999;
        int rc = parse_double(reals[i].s, 0, 1, &v, why, sizeof why);
        print_message("  parse_double(\"%s\", 0..1) = %d%s%s\n", reals[i].s, rc, rc ? ": " : "", rc ? why : "");
        assert_int_equal(rc, reals[i].rc);
        if (rc) assert_true(v == -999);
    }
    assert_int_equal(parse_double("nan", -1e300, 1e300, &(double){0}, why, sizeof why), -1);
    assert_non_null(strstr(why, "NaN"));
    float f = 0;
    assert_int_equal(parse_float("3e-3", &f, why, sizeof why), 0);
    assert_true(f == strtof("3e-3", NULL)); /* one rounding, as the manifest always read it */
    assert_int_equal(parse_float("1e39", &f, why, sizeof why), -1);
    uint64_t u = 0;
    assert_int_equal(parse_u64("18446744073709551615", &u, why, sizeof why), 0);
    assert_true(u == UINT64_MAX);
    assert_int_equal(parse_u64("18446744073709551616", &u, why, sizeof why), -2);
    assert_int_equal(parse_u64("-1", &u, why, sizeof why), -1);
}

/* ------------------------------------------------------- checkpoints */

static void tiny_model(gl_model *m) {
    gl_model_config c;
    config_defaults(&c);
    c.vocab_size = 16;
    c.d_model = 16;
    c.n_layer = 2;
    c.n_head = 2;
    c.n_kv_head = 1;
    c.d_ff = 32;
    c.seq_len = 8;
    char err[256];
    assert_int_equal(model_init(m, &c, 1, err, sizeof err), 0);
    model_init_weights(m, 5);
    for (size_t i = 0; i < m->n_params; i++) m->adam_v[i] = 1e-6f;
}

static uint8_t *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *p = malloc(*n);
    assert_non_null(p);
    assert_int_equal(fread(p, 1, *n, f), *n);
    fclose(f);
    return p;
}

/* Write bytes with the trailing FNV-1a 64 checksum recomputed, as a forger would. */
static void write_resummed(const char *path, uint8_t *b, size_t n) {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n - 8; i++) {
        h ^= b[i];
        h *= 0x100000001b3ULL;
    }
    memcpy(b + n - 8, &h, 8);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(b, 1, n, f), n);
    fclose(f);
}

/* Byte offsets in a version-1 checkpoint (docs/files.md): the state block
 * follows the 48-byte header and n_tensors table rows of GL_NAME_MAX + 32. */
static size_t state_at(const uint8_t *b) {
    uint32_t nt;
    memcpy(&nt, b + 40, 4);
    return 48 + (size_t)nt * (GL_NAME_MAX + 32);
}

static void expect_load_refused(const char *path, const char *want) {
    gl_model m;
    tiny_model(&m);
    for (size_t i = 0; i < m.n_params; i++) m.params[i] = -7.0f;
    gl_train_state st;
    char err[1024] = "";
    int rc = ckpt_load(path, &m, &st, 0, err, sizeof err);
    size_t touched = 0;
    for (size_t i = 0; i < m.n_params; i++) touched += m.params[i] != -7.0f;
    print_message("  refused (%s): rc %d, %zu parameters touched: %s\n", want, rc, touched, err);
    assert_int_equal(rc, -1);
    assert_non_null(strstr(err, want));
    assert_int_equal(touched, 0);
    model_free(&m);
}

static void test_hostile_checkpoints(void **state) {
    (void)state;
    char good[512], bad[512], err[512];
    snprintf(good, sizeof good, "%s/good.ckpt", g_dir);
    snprintf(bad, sizeof bad, "%s/bad.ckpt", g_dir);
    gl_model m;
    tiny_model(&m);
    gl_train_state st;
    memset(&st, 0, sizeof st);
    st.step = 10;
    st.vocab_size = 16;
    for (int i = 0; i < 16; i++) st.vocab[i] = (uint8_t)('a' + i);
    assert_int_equal(ckpt_save(good, &m, &st, "[model]\n", 0, err, sizeof err), 0);
    size_t n;
    uint8_t *orig = slurp(good, &n), *b = malloc(n);
    assert_non_null(b);
    size_t s0 = state_at(orig);

    /* a re-summed copy of the good file loads (the forging itself is right) */
    memcpy(b, orig, n);
    write_resummed(bad, b, n);
    gl_train_state got;
    assert_int_equal(ckpt_load(bad, &m, &got, 0, err, sizeof err), 0);

    int32_t v300 = 300;
    memcpy(b, orig, n);
    memcpy(b + s0 + 88, &v300, 4); /* vocab_size */
    write_resummed(bad, b, n);
    expect_load_refused(bad, "vocabulary size is 300");
    ckpt_info info;
    assert_int_equal(ckpt_read_info(bad, NULL, &info, err, sizeof err), -1);

    int64_t neg = -5;
    memcpy(b, orig, n);
    memcpy(b + s0, &neg, 8); /* step */
    write_resummed(bad, b, n);
    expect_load_refused(bad, "step is negative");

    uint32_t cl;
    memcpy(&cl, orig + 44, 4);
    size_t params_at = s0 + 380 + cl;
    float nanv = NAN;
    memcpy(b, orig, n);
    memcpy(b + params_at + 4 * 3, &nanv, 4); /* parameter 3 */
    write_resummed(bad, b, n);
    expect_load_refused(bad, "parameter embed[3] is nan");

    float negv = -1.0f;
    memcpy(b, orig, n);
    memcpy(b + params_at + 4 * 2 * m.n_params, &negv, 4); /* first AdamW second moment */
    write_resummed(bad, b, n);
    expect_load_refused(bad, "second moment");

    uint64_t huge = m.n_params + 1000;
    memcpy(b, orig, n);
    memcpy(b + 48 + GL_NAME_MAX + 8, &huge, 8); /* table row 0: size */
    write_resummed(bad, b, n);
    expect_load_refused(bad, "outside the");

    int32_t zero_v = 0;
    memcpy(b, orig, n);
    memcpy(b + s0 + 88, &zero_v, 4);
    write_resummed(bad, b, n);
    expect_load_refused(bad, "vocabulary size is 0");

    free(orig);
    free(b);
    model_free(&m);
}

/* ------------------------------------------------------------- traces */

static void test_trace_bad_category(void **state) {
    (void)state;
    char path[512], err[1024] = "";
    snprintf(path, sizeof path, "%s/cat.h5", g_dir);
    enum { P = 6 };
    int tok[P] = {1, 2, 3, 4, 5, 6};
    uint8_t cat[P] = {0, 1, 2, 7, 0, 1};
    gl_trace_desc d = {.n_layer = 2, .n_kv_head = 1, .n_probe = P, .config_ini = "[model]\n"};
    gl_trace *t = NULL;
    assert_int_equal(trace_create(&t, path, &d, tok, cat, err, sizeof err), 0);
    trace_close(t);
    gl_trace_data td;
    int rc = trace_read(path, &td, err, sizeof err);
    print_message("  category code 7: rc %d: %s\n", rc, err);
    assert_int_equal(rc, -1);
    assert_non_null(strstr(err, "/probe/category[3] is 7"));
    cat[3] = 2;
    assert_int_equal(trace_create(&t, path, &d, tok, cat, err, sizeof err), 0);
    trace_close(t);
    assert_int_equal(trace_read(path, &td, err, sizeof err), 0);
    trace_data_free(&td);
}

/* ------------------------------------------------- FIFOs and folders */

static void test_not_regular_files(void **state) {
    (void)state;
    char fifo[512], err[1024];
    snprintf(fifo, sizeof fifo, "%s/fifo", g_dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    FILE *f = (FILE *)1;
    /* no writer ever opens the FIFO: a plain fopen would block here forever */
    assert_int_equal(fileio_open_regular(fifo, "data file", &f, err, sizeof err), -1);
    print_message("  %s\n", err);
    assert_null(f);
    assert_non_null(strstr(err, "FIFO"));
    assert_int_equal(fileio_open_regular(g_dir, "data file", &f, err, sizeof err), -1);
    print_message("  %s\n", err);
    assert_non_null(strstr(err, "directory"));
    gl_model m;
    tiny_model(&m);
    gl_train_state st;
    assert_int_equal(ckpt_load(fifo, &m, &st, 0, err, sizeof err), -1);
    print_message("  ckpt_load(FIFO): %s\n", err);
    assert_non_null(strstr(err, "FIFO"));
    model_free(&m);
}

/* ------------------------------------------------- fileio_mkdir_p, fileio_slurp */

static void test_fileio_utilities(void **state) {
    (void)state;
    char path[1024], err[1024];
    snprintf(path, sizeof path, "%s/a/b/c", g_dir);
    assert_int_equal(fileio_mkdir_p(path, err, sizeof err), 0);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(fileio_mkdir_p(path, err, sizeof err), 0); /* again: already there */
    /* a regular file in the way: refused, naming it */
    char file[1100];
    snprintf(file, sizeof file, "%s/a/plain", g_dir);
    const char text[] = "two\nlines\0with a NUL";
    assert_int_equal(fileio_write_all(file, "test file", text, sizeof text - 1, err, sizeof err), 0);
    assert_int_equal(fileio_mkdir_p(file, err, sizeof err), -1);
    print_message("  mkdir_p(file): %s\n", err);
    assert_non_null(strstr(err, file));
    char below[1200];
    snprintf(below, sizeof below, "%s/x", file);
    assert_int_equal(fileio_mkdir_p(below, err, sizeof err), -1);
    print_message("  mkdir_p(file/x): %s\n", err);
    assert_non_null(strstr(err, "Not a directory"));
    /* slurp: every byte (a NUL inside too), a terminating NUL after them */
    size_t n = 99;
    char *b = fileio_slurp(file, "test file", 0, &n, err, sizeof err);
    assert_non_null(b);
    assert_int_equal(n, sizeof text - 1);
    assert_memory_equal(b, text, n);
    assert_int_equal(b[n], 0);
    free(b);
    b = fileio_slurp(file, "test file", sizeof text - 1, &n, err, sizeof err); /* exactly at the limit */
    assert_non_null(b);
    free(b);
    assert_null(fileio_slurp(file, "test file", 4, &n, err, sizeof err));
    print_message("  slurp over the limit: %s\n", err);
    assert_non_null(strstr(err, "larger than 4 bytes"));
    /* an empty file: a valid empty string */
    snprintf(file, sizeof file, "%s/a/empty", g_dir);
    assert_int_equal(fileio_write_all(file, "test file", "", 0, err, sizeof err), 0);
    b = fileio_slurp(file, "test file", 0, &n, err, sizeof err);
    assert_non_null(b);
    assert_int_equal(n, 0);
    assert_int_equal(b[0], 0);
    free(b);
    /* a folder and a FIFO: refused as fileio_open_regular refuses them */
    assert_null(fileio_slurp(path, "test file", 0, &n, err, sizeof err));
    assert_non_null(strstr(err, "directory"));
    char fifo[1100];
    snprintf(fifo, sizeof fifo, "%s/a/fifo", g_dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    assert_null(fileio_slurp(fifo, "test file", 0, &n, err, sizeof err));
    assert_non_null(strstr(err, "FIFO"));
    snprintf(file, sizeof file, "%s/a/missing", g_dir);
    assert_null(fileio_slurp(file, "test file", 0, &n, err, sizeof err));
    assert_non_null(strstr(err, file));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fileio_utilities),
        cmocka_unit_test(test_parse_numbers),
        cmocka_unit_test(test_hostile_checkpoints),
        cmocka_unit_test(test_trace_bad_category),
        cmocka_unit_test(test_not_regular_files),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
