/*
 * test_trace.c — trace.h5 (harness/trace.c): write/read round trip, only the
 * datasets a model has, a writer killed with SIGKILL mid-run, a reader while
 * the writer is live, resuming (trace_reopen), refusals, and the layout as
 * h5dump sees it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "../harness/trace.h"

static char g_dir[256];

enum { L = 3, HKV = 2, P = 10 };

static const char *CONFIG = "[model]\nd_model = 16\n# UTF-8: λ α ü\n";

static void path_in(char *out, size_t n, const char *name) { snprintf(out, n, "%s/%s", g_dir, name); }

static int setup(void **state) {
    (void)state;
    snprintf(g_dir, sizeof g_dir, "/tmp/gatelab_test_trace_XXXXXX");
    return mkdtemp(g_dir) ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

static gl_trace_desc full_desc(void) {
    gl_trace_desc d = {.n_layer = L, .n_kv_head = HKV, .n_router = L - 1, .n_probe = P,
                       .has_alpha = 1, .has_lambda = 1, .has_p = 1, .has_exit = 1, .config_ini = CONFIG};
    return d;
}

static void probe(int *tok, uint8_t *cat) {
    for (int i = 0; i < P; i++) {
        tok[i] = 3 * i + 1;
        cat[i] = (uint8_t)(i % 3);
    }
}

/* The value every array holds at (step row s, flat index i); `salt` tells
 * rewritten rows apart. */
static float val(int s, int which, size_t i, float salt) { return salt + 1000.0f * s + 100.0f * which + 0.25f * (float)i; }

typedef struct {
    float alpha[L * P * HKV], lambda[L * 2], p[(L - 1) * P], conf[L * P];
} row_bufs;

static void fill_row(row_bufs *r, int s, float salt) {
    for (size_t i = 0; i < L * P * HKV; i++) r->alpha[i] = val(s, 0, i, salt);
    for (size_t i = 0; i < L * 2; i++) r->lambda[i] = val(s, 1, i, salt);
    for (size_t i = 0; i < (L - 1) * P; i++) r->p[i] = val(s, 2, i, salt);
    for (size_t i = 0; i < L * P; i++) r->conf[i] = val(s, 3, i, salt);
}

static int append_step(gl_trace *t, int s, long step, float salt, char *err, size_t errlen) {
    row_bufs r;
    fill_row(&r, s, salt);
    return trace_append(t, step, 4.0f - 0.1f * s + salt, s == 0 ? NAN : 3.5f - 0.1f * s + salt, r.alpha, r.lambda,
                        r.p, r.conf, err, errlen);
}

/* Compare a read-back trace with rows written by append_step; returns the
 * largest absolute difference (0 expected: the values are exact in float). */
static double check_rows(const gl_trace_data *d, int n, const long *steps, const float *salts) {
    double worst = 0;
    assert_int_equal(d->n_steps, n);
    for (int s = 0; s < n; s++) {
        assert_int_equal(d->step[s], steps[s]);
        row_bufs r;
        fill_row(&r, s, salts[s]);
        float tl = 4.0f - 0.1f * s + salts[s];
        worst = fmax(worst, fabs(d->train_loss[s] - tl));
        if (s == 0) assert_true(isnan(d->val_loss[s]));
        else worst = fmax(worst, fabs(d->val_loss[s] - (3.5f - 0.1f * s + salts[s])));
        for (size_t i = 0; i < L * P * HKV; i++) worst = fmax(worst, fabs(d->alpha[(size_t)s * L * P * HKV + i] - r.alpha[i]));
        for (size_t i = 0; i < L * 2; i++) worst = fmax(worst, fabs(d->lambda[(size_t)s * L * 2 + i] - r.lambda[i]));
        for (size_t i = 0; i < (L - 1) * P; i++) worst = fmax(worst, fabs(d->p[(size_t)s * (L - 1) * P + i] - r.p[i]));
        for (size_t i = 0; i < L * P; i++) worst = fmax(worst, fabs(d->conf[(size_t)s * L * P + i] - r.conf[i]));
    }
    return worst;
}

static void check_header(const gl_trace_data *d) {
    assert_int_equal(d->n_layer, L);
    assert_int_equal(d->n_kv_head, HKV);
    assert_int_equal(d->n_router, L - 1);
    assert_int_equal(d->n_probe, P);
    assert_string_equal(d->config_ini, CONFIG);
    int tok[P];
    uint8_t cat[P];
    probe(tok, cat);
    assert_memory_equal(d->probe_tokens, tok, sizeof tok);
    assert_memory_equal(d->probe_category, cat, sizeof cat);
}

static void test_round_trip(void **state) {
    (void)state;
    char path[512], err[512] = "";
    path_in(path, sizeof path, "rt.h5");
    gl_trace_desc d = full_desc();
    int tok[P];
    uint8_t cat[P];
    probe(tok, cat);
    gl_trace *t = NULL;
    int rc = trace_create(&t, path, &d, tok, cat, err, sizeof err);
    if (rc) print_message("create: %s\n", err);
    assert_int_equal(rc, 0);
    long steps[3] = {0, 50, 100};
    float salts[3] = {0, 0, 0};
    for (int s = 0; s < 3; s++) assert_int_equal(append_step(t, s, steps[s], 0, err, sizeof err), 0);
    assert_int_equal(trace_n_steps(t), 3);
    assert_int_equal(trace_last_step(t), 100);
    trace_close(t);
    trace_close(NULL);

    gl_trace_data r;
    rc = trace_read(path, &r, err, sizeof err);
    if (rc) print_message("read: %s\n", err);
    assert_int_equal(rc, 0);
    check_header(&r);
    double worst = check_rows(&r, 3, steps, salts);
    print_message("round trip: 3 steps, L %d, P %d, Hkv %d; worst difference %g\n", L, P, HKV, worst);
    assert_true(worst == 0.0);
    trace_data_free(&r);
    trace_data_free(&r);
}

static void test_subset(void **state) {
    (void)state;
    char path[512], err[512] = "";
    path_in(path, sizeof path, "lambda.h5");
    gl_trace_desc d = {.n_layer = L, .n_kv_head = HKV, .n_probe = P, .has_lambda = 1};
    int tok[P];
    uint8_t cat[P];
    probe(tok, cat);
    gl_trace *t = NULL;
    assert_int_equal(trace_create(&t, path, &d, tok, cat, err, sizeof err), 0);
    float lambda[L * 2] = {0.5f, 0.5f, 1.f, 2.f, 3.f, 4.f};
    /* arrays the trace does not have are ignored */
    float junk[1] = {9};
    assert_int_equal(trace_append(t, 7, 1.f, 2.f, junk, lambda, NULL, NULL, err, sizeof err), 0);
    trace_close(t);
    gl_trace_data r;
    assert_int_equal(trace_read(path, &r, err, sizeof err), 0);
    assert_int_equal(r.n_steps, 1);
    assert_null(r.alpha);
    assert_null(r.p);
    assert_null(r.conf);
    assert_non_null(r.lambda);
    assert_memory_equal(r.lambda, lambda, sizeof lambda);
    assert_string_equal(r.config_ini, "");
    print_message("lambda-only trace: alpha, p, confidence absent; lambda row exact\n");
    trace_data_free(&r);
}

/* Run h5dump -H (after h5clear -s on a copy when the writer was killed);
 * return its output or NULL when h5dump is not installed. */
static char *h5dump_header(const char *path, int clear) {
    if (system("command -v h5dump >/dev/null 2>&1") != 0) return NULL;
    char cmd[2048];
    if (clear)
        snprintf(cmd, sizeof cmd, "cp '%s' '%s.copy' && h5clear -s '%s.copy' && h5dump -H '%s.copy' 2>&1", path,
                 path, path, path);
    else
        snprintf(cmd, sizeof cmd, "h5dump -H '%s' 2>&1", path);
    FILE *f = popen(cmd, "r");
    if (!f) return NULL;
    size_t cap = 1 << 16, len = 0;
    char *out = malloc(cap);
    size_t got;
    while (out && (got = fread(out + len, 1, cap - len - 1, f)) > 0) {
        len += got;
        if (len + 1 == cap) {
            cap *= 2;
            out = realloc(out, cap);
        }
    }
    int st = pclose(f);
    if (out) out[len] = '\0';
    if (st != 0) print_message("h5dump failed (status %d):\n%s\n", st, out ? out : "");
    return out;
}

static void test_killed_writer(void **state) {
    (void)state;
    char path[512], err[512] = "";
    path_in(path, sizeof path, "killed.h5");
    const int K = 4;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        gl_trace_desc d = full_desc();
        int tok[P];
        uint8_t cat[P];
        probe(tok, cat);
        gl_trace *t = NULL;
        char e[512];
        if (trace_create(&t, path, &d, tok, cat, e, sizeof e) != 0) _exit(2);
        for (int s = 0; s < K; s++)
            if (append_step(t, s, 10L * (s + 1), 0, e, sizeof e) != 0) _exit(3);
        raise(SIGKILL); /* die with the file open, in SWMR-write state */
        _exit(4);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGKILL);

    gl_trace_data r;
    int rc = trace_read(path, &r, err, sizeof err);
    if (rc) print_message("read after kill: %s\n", err);
    assert_int_equal(rc, 0);
    check_header(&r);
    long steps[4] = {10, 20, 30, 40};
    float salts[4] = {0};
    double worst = check_rows(&r, K, steps, salts);
    print_message("writer killed after %d appends: %d steps read back, worst difference %g\n", K, r.n_steps, worst);
    assert_true(worst == 0.0);
    trace_data_free(&r);

    char *h = h5dump_header(path, 1);
    if (h) {
        int ok = strstr(h, "DATASET \"alpha\"") && strstr(h, "( 4, 3, 10, 2 ) / ( H5S_UNLIMITED, 3, 10, 2 )");
        print_message("h5dump -H after h5clear -s on a copy: %s\n", ok ? "alpha (4, 3, 10, 2) found" : "NOT found");
        if (!ok) print_message("%s\n", h);
        assert_true(ok);
        free(h);
    } else {
        print_message("h5dump not installed: layout check skipped (tests/integration/trace_h5dump.sh does it)\n");
    }

    /* resuming the killed run: keep steps <= 25, then continue */
    gl_trace *t = NULL;
    rc = trace_reopen(&t, path, 25, err, sizeof err);
    if (rc) print_message("reopen: %s\n", err);
    assert_int_equal(rc, 0);
    assert_int_equal(trace_n_steps(t), 2);
    assert_int_equal(trace_last_step(t), 20);
    assert_int_equal(append_step(t, 2, 30, 0.5f, err, sizeof err), 0);
    trace_close(t);
    assert_int_equal(trace_read(path, &r, err, sizeof err), 0);
    long steps2[3] = {10, 20, 30};
    float salts2[3] = {0, 0, 0.5f};
    worst = check_rows(&r, 3, steps2, salts2);
    print_message("reopened at step 25: steps 10, 20 kept, 30 rewritten; worst difference %g\n", worst);
    assert_true(worst == 0.0);
    check_header(&r);
    trace_data_free(&r);
    char tmp[600];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    struct stat sb;
    assert_int_not_equal(stat(tmp, &sb), 0);
}

static void test_live_reader(void **state) {
    (void)state;
    char path[512], err[512] = "";
    path_in(path, sizeof path, "live.h5");
    long steps[3] = {5, 6, 7};
    float salts[3] = {0};
    /* The reader is forked before the writer opens the file, so it is a
     * separate HDF5 instance, as h5py in another terminal would be.  After
     * each append the writer sends a byte; the reader answers with the number
     * of steps it read (or 255 on error). */
    int go[2], ans[2];
    assert_int_equal(pipe(go), 0);
    assert_int_equal(pipe(ans), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(go[1]);
        close(ans[0]);
        char b;
        while (read(go[0], &b, 1) == 1) {
            gl_trace_data r;
            char e[512];
            uint8_t n = 255;
            if (trace_read(path, &r, e, sizeof e) == 0) {
                n = (uint8_t)r.n_steps;
                if (r.n_steps > 0 && r.step[r.n_steps - 1] != steps[r.n_steps - 1]) n = 254;
                trace_data_free(&r);
            } else {
                fprintf(stdout, "live read failed: %s\n", e);
            }
            if (write(ans[1], &n, 1) != 1) _exit(3);
        }
        _exit(0);
    }
    close(go[0]);
    close(ans[1]);
    gl_trace_desc d = full_desc();
    int tok[P];
    uint8_t cat[P];
    probe(tok, cat);
    gl_trace *t = NULL;
    assert_int_equal(trace_create(&t, path, &d, tok, cat, err, sizeof err), 0);
    for (int round = 0; round <= 3; round++) {
        if (round > 0) assert_int_equal(append_step(t, round - 1, steps[round - 1], 0, err, sizeof err), 0);
        uint8_t n = 0;
        assert_int_equal(write(go[1], "x", 1), 1);
        assert_int_equal(read(ans[0], &n, 1), 1);
        print_message("live reader after %d appends: read %d steps\n", round, n);
        assert_int_equal(n, round);
    }
    close(go[1]);
    int status = 0;
    waitpid(pid, &status, 0);
    close(ans[0]);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    trace_close(t);
    gl_trace_data r;
    assert_int_equal(trace_read(path, &r, err, sizeof err), 0);
    assert_true(check_rows(&r, 3, steps, salts) == 0.0);
    trace_data_free(&r);

    /* after a normal close every HDF5 tool opens the file */
    char *h = h5dump_header(path, 0);
    if (h) {
        const char *want[] = {"GROUP \"probe\"", "DATASET \"tokens\"", "DATASET \"category\"", "DATASET \"step\"",
                              "GROUP \"loss\"", "DATASET \"train\"", "DATASET \"val\"", "GROUP \"sat\"",
                              "GROUP \"resformer\"", "DATASET \"lambda\"", "GROUP \"tsa\"", "DATASET \"p\"",
                              "GROUP \"exit\"", "DATASET \"confidence\"", "ATTRIBUTE \"schema_version\"",
                              "ATTRIBUTE \"config\"", "ATTRIBUTE \"axes\"", "H5T_STD_I64LE", "H5T_STD_U8LE",
                              "( 3, 2, 10 ) / ( H5S_UNLIMITED, 2, 10 )", "( 3, 3, 2 ) / ( H5S_UNLIMITED, 3, 2 )",
                              "( 3 ) / ( H5S_UNLIMITED )", "CSET H5T_CSET_UTF8"};
        int missing = 0;
        for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
            if (!strstr(h, want[i])) {
                print_message("h5dump -H lacks: %s\n", want[i]);
                missing++;
            }
        print_message("h5dump -H of a closed trace: %d of %zu expected items missing\n", missing,
                      sizeof want / sizeof want[0]);
        if (missing) print_message("%s\n", h);
        assert_int_equal(missing, 0);
        free(h);
    }
}

static void test_refusals(void **state) {
    (void)state;
    char path[512], err[512] = "";
    gl_trace_data r;
    int rc = trace_read("/nonexistent/trace.h5", &r, err, sizeof err);
    print_message("missing file: \"%s\"\n", err);
    assert_int_equal(rc, -1);
    assert_non_null(strstr(err, "/nonexistent/trace.h5"));

    path_in(path, sizeof path, "not.h5");
    FILE *f = fopen(path, "w");
    fputs("not hdf5\n", f);
    fclose(f);
    rc = trace_read(path, &r, err, sizeof err);
    print_message("not HDF5: \"%s\"\n", err);
    assert_int_equal(rc, -1);
    assert_non_null(strstr(err, path));
    assert_non_null(strstr(err, "H5Fopen"));

    gl_trace_desc d = full_desc();
    int tok[P];
    uint8_t cat[P];
    probe(tok, cat);
    gl_trace *t = NULL;
    rc = trace_create(&t, "/nonexistent/dir/trace.h5", &d, tok, cat, err, sizeof err);
    print_message("create in a missing folder: \"%s\"\n", err);
    assert_int_equal(rc, -1);
    assert_null(t);
    assert_non_null(strstr(err, "H5Fcreate"));

    gl_trace_desc bad = d;
    bad.n_probe = 0;
    path_in(path, sizeof path, "bad.h5");
    assert_int_equal(trace_create(&t, path, &bad, tok, cat, err, sizeof err), -1);
    assert_non_null(strstr(err, "probe"));

    assert_int_equal(trace_create(&t, path, &d, tok, cat, err, sizeof err), 0);
    assert_int_equal(append_step(t, 0, 10, 0, err, sizeof err), 0);
    rc = append_step(t, 1, 10, 0, err, sizeof err);
    print_message("repeated step: \"%s\"\n", err);
    assert_int_equal(rc, -1);
    assert_non_null(strstr(err, "step 10"));
    float lambda[L * 2] = {0};
    rc = trace_append(t, 20, 1, 1, NULL, lambda, NULL, NULL, err, sizeof err);
    print_message("missing alpha: \"%s\"\n", err);
    assert_int_equal(rc, -1);
    assert_non_null(strstr(err, "/sat/alpha"));
    assert_int_equal(trace_n_steps(t), 1);
    trace_close(t);
    assert_int_equal(trace_read(path, &r, err, sizeof err), 0);
    assert_int_equal(r.n_steps, 1);
    trace_data_free(&r);

    /* reopening a missing trace fails cleanly */
    rc = trace_reopen(&t, "/nonexistent/trace.h5", 5, err, sizeof err);
    assert_int_equal(rc, -1);
    assert_null(t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_subset),
        cmocka_unit_test(test_killed_writer),
        cmocka_unit_test(test_live_reader),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
