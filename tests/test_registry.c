/*
 * test_registry.c — the SQLite registry (harness/store/registry.c), metric
 * names as the registry stores them, and SHA-256 (harness/store/sha256.c).
 * Metric-name builders and labels: test_metric.c; sweep expansion and the
 * refusal of bad sweeps: test_sweep.c.
 *
 * The registry is read back with SQLite itself (this file includes sqlite3.h
 * for that), not only through registry.c's own readers.  Concurrency checks
 * use fork()ed processes, each with its own connection (no OpenMP here).
 * Every test works in its own temporary folder under $TMPDIR (or /tmp).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sqlite3.h>
#include "store/registry_sql.h"

#include "cli/cli.h"
#include "store/categories.h"
#include "store/manifest.h"
#include "store/metric.h"
#include "store/registry.h"
#include "store/sha256.h"
#include "files.h"

/* ---- helpers ---- */

static char tmp_root[512];

/* A key by hand (as a registry row holds it). */
static metric_key key_of(const char *name, const char *params) {
    metric_key k;
    snprintf(k.name, sizeof k.name, "%s", name);
    snprintf(k.params, sizeof k.params, "%s", params);
    return k;
}

/* A fresh folder for one test: <tmp_root>/<name>. */
static void tmp_dir(char *out, size_t len, const char *name) {
    snprintf(out, len, "%s/%s", tmp_root, name);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", out, out);
    assert_int_equal(system(cmd), 0);
}

/* One integer from SQL run on the file at path with SQLite directly. */
static long long sql_int(const char *path, const char *sql) {
    sqlite3 *h = NULL;
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_open_v2(path, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_busy_timeout(h, 10000);
    if (sqlite3_prepare_v2(h, sql, -1, &st, NULL) != SQLITE_OK) {
        print_error("SQL failed: %s: %s\n", sql, sqlite3_errmsg(h));
        fail();
    }
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    long long v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(h);
    return v;
}

/* One text value (copied into out) from SQL on the file at path. */
static void sql_text(const char *path, const char *sql, char *out, size_t len) {
    sqlite3 *h = NULL;
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_open_v2(path, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(h, sql, -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    const unsigned char *s = sqlite3_column_text(st, 0);
    snprintf(out, len, "%s", s ? (const char *)s : "");
    sqlite3_finalize(st);
    sqlite3_close(h);
}

static void sql_exec(const char *path, const char *sql) {
    sqlite3 *h = NULL;
    assert_int_equal(sqlite3_open(path, &h), SQLITE_OK);
    char *msg = NULL;
    if (sqlite3_exec(h, sql, NULL, NULL, &msg) != SQLITE_OK) {
        print_error("SQL failed: %s: %s\n", sql, msg);
        fail();
    }
    sqlite3_close(h);
}

static gl_db *open_ok(const char *path) {
    char err[512];
    gl_db *db = NULL;
    if (db_open(&db, path, err, sizeof err)) {
        print_error("db_open: %s\n", err);
        fail();
    }
    return db;
}

/* An experiment and one run in status. */
static void make_run(gl_db *db, const char *exp, const char *run_id, const char *status) {
    char err[512];
    long long exp_id;
    OK(db_experiment_ensure(db, exp, "[train]\nsteps = 1\n", &exp_id, err, sizeof err));
    OK(db_run_create(db, exp_id, run_id, run_id, "[train]\nsteps = 1\n", "h", 7, status, err, sizeof err));
}

/* ---- SHA-256 ---- */

static void test_sha256_vectors(void **state) {
    (void)state;
    static const struct {
        const char *msg, *hex;
    } v[] = {
        /* FIPS 180-4 / NIST CSRC examples */
        {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
        {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
        {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
        {"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrst"
         "nopqrstu",
         "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"},
    };
    char hex[65];
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        sha256_hex(v[i].msg, strlen(v[i].msg), hex);
        assert_string_equal(hex, v[i].hex);
    }
    /* One million 'a', fed in uneven pieces. */
    char *a = malloc(1000000);
    assert_non_null(a);
    memset(a, 'a', 1000000);
    sha256_ctx c;
    unsigned char d[32];
    sha256_init(&c);
    size_t done = 0, piece = 1;
    while (done < 1000000) {
        size_t take = piece < 1000000 - done ? piece : 1000000 - done;
        sha256_update(&c, a + done, take);
        done += take;
        piece = piece * 3 % 1000 + 1;
    }
    sha256_final(&c, d);
    sha256_digest_hex(d, hex);
    assert_string_equal(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    free(a);
    printf("sha256: 5 FIPS 180-4 vectors match (incl. 10^6 'a' in uneven pieces)\n");
}

/* ---- schema ---- */

static void test_schema_created_and_versioned(void **state) {
    (void)state;
    char dir[600], path[700], err[512];
    tmp_dir(dir, sizeof dir, "schema");
    snprintf(path, sizeof path, "%s/nested/folder/gatelab.db", dir);
    gl_db *db = open_ok(path);
    assert_int_equal(db_schema_version_get(db, err, sizeof err), DB_SCHEMA_VERSION);
    db_close(db);
    assert_int_equal(sql_int(path, "SELECT version FROM schema_version"), DB_SCHEMA_VERSION);
    assert_int_equal(sql_int(path, "SELECT count(*) FROM sqlite_master WHERE type='table' AND name IN "
                                   "('experiments','runs','params','metrics','artifacts','schema_version')"),
                     6);
    char mode[32];
    sql_text(path, "PRAGMA journal_mode", mode, sizeof mode);
    assert_string_equal(mode, "wal");
    /* Reopening does not re-create or change anything. */
    db = open_ok(path);
    db_close(db);
    assert_int_equal(sql_int(path, "SELECT count(*) FROM schema_version"), 1);

    /* A registry from a newer gatelab is refused, untouched. */
    sql_exec(path, "UPDATE schema_version SET version = 99");
    db = NULL;
    assert_int_equal(db_open(&db, path, err, sizeof err), -1);
    assert_null(db);
    assert_non_null(strstr(err, "newer"));
    assert_non_null(strstr(err, path));
    assert_int_equal(sql_int(path, "SELECT version FROM schema_version"), 99);

    /* Not a database at all. */
    char junk[700];
    snprintf(junk, sizeof junk, "%s/junk.db", dir);
    write_file(junk, "this is not an SQLite file, just some text that is long enough to have a header........\n");
    assert_int_equal(db_open(&db, junk, err, sizeof err), -1);
    assert_non_null(strstr(err, "junk.db"));
    printf("schema: 6 tables, version %d, WAL; newer schema refused (%s)\n", DB_SCHEMA_VERSION, err);
}

/* ---- run lifecycle ---- */

static void test_run_lifecycle(void **state) {
    (void)state;
    char dir[600], path[700], err[512], status[16], q[256];
    tmp_dir(dir, sizeof dir, "lifecycle");
    snprintf(path, sizeof path, "%s/gatelab.db", dir);
    gl_db *db = open_ok(path);
    long long e1, e2;
    OK(db_experiment_ensure(db, "exp", "[train]\nsteps = 3\n", &e1, err, sizeof err));
    OK(db_experiment_ensure(db, "exp", "other text", &e2, err, sizeof err));
    assert_true(e1 == e2);
    assert_int_equal(db_run_exists(db, "r1", status, err, sizeof err), 0);
    OK(db_run_create(db, e1, "r1", "first", "[train]\nsteps = 3\n", "abc", 18446744073709551615ULL, "SCHEDULED",
                     err, sizeof err));
    assert_int_equal(db_run_exists(db, "r1", status, err, sizeof err), 1);
    assert_string_equal(status, "SCHEDULED");
    assert_int_equal(db_run_create(db, e1, "r1", "again", "", "", 1, "SCHEDULED", err, sizeof err), -1);
    assert_non_null(strstr(err, "already exists"));
    assert_int_equal(db_run_create(db, e1, "r9", "bad", "", "", 1, "DONE", err, sizeof err), -1);
    /* the run-id grammar (issue 28.6): 1..127 bytes, no control byte, no '/', not '.', '..', '-x' */
    char id128[129];
    memset(id128, 'x', 128);
    id128[128] = 0;
    const char *bad_ids[] = {"", id128, "a\nb", "a\tb", "a/b", "..", "-r", "a\x7f"};
    for (size_t i = 0; i < sizeof bad_ids / sizeof bad_ids[0]; i++) {
        assert_int_equal(db_run_create(db, e1, bad_ids[i], "bad", "", "", 1, "SCHEDULED", err, sizeof err), -1);
        assert_non_null(strstr(err, "run id"));
    }
    id128[127] = 0;
    assert_int_equal(db_run_id_check(id128, err, sizeof err), 0);
    assert_int_equal(db_run_id_check("odd\"q\\b\xffid", err, sizeof err), 0);
    print_message("run ids: %zu outside the grammar refused, 127 bytes accepted\n", sizeof bad_ids / sizeof bad_ids[0]);
    assert_int_equal(db_run_start(db, "no-such-run", err, sizeof err), -1);
    assert_non_null(strstr(err, "no-such-run"));

    OK(db_run_start(db, "r1", err, sizeof err));
    assert_int_equal(db_run_exists(db, "r1", status, err, sizeof err), 1);
    assert_string_equal(status, "RUNNING");
    snprintf(q, sizeof q, "SELECT pid = %d AND start_time > 0 AND heartbeat >= start_time AND attempts = 1 "
                          "AND host <> '' FROM runs WHERE run_id='r1'", (int)getpid());
    assert_int_equal(sql_int(path, q), 1);
    gl_metric m[2] = {{.step = 10, .split = "train", .name = "loss", .value = 2.5, .wall_time = 0}, {.step = 10, .split = "val", .name = "loss", .value = 2.75, .wall_time = 0}};
    OK(db_metrics_log(db, "r1", m, 2, err, sizeof err));
    assert_int_equal(db_metrics_log(db, "nope", m, 2, err, sizeof err), -1);
    assert_int_equal(db_run_finish(db, "r1", "RUNNING", 0, NULL, err, sizeof err), -1);
    OK(db_run_finish(db, "r1", "FINISHED", 0, NULL, err, sizeof err));
    assert_int_equal(sql_int(path, "SELECT status='FINISHED' AND exit_code=0 AND end_time >= start_time AND "
                                   "error IS NULL FROM runs WHERE run_id='r1'"),
                     1);
    /* The seed survives as its 64-bit pattern. */
    assert_int_equal(sql_int(path, "SELECT seed FROM runs WHERE run_id='r1'"), -1);

    /* A failed run keeps its error. */
    OK(db_run_create(db, e1, "r2", "second", "", "", 1, "RUNNING", err, sizeof err));
    OK(db_run_finish(db, "r2", "FAILED", 1, "loss is NaN at step 7", err, sizeof err));
    gl_run_row *rows = NULL;
    int n = 0;
    OK(db_runs_list(db, "exp", NULL, &rows, &n, err, sizeof err));
    assert_int_equal(n, 2);
    assert_string_equal(rows[0].run_id, "r1");
    assert_int_equal(rows[0].step, 10);
    assert_true(rows[0].train_loss == 2.5 && rows[0].val_loss == 2.75);
    assert_true(isnan(rows[0].active_frac));
    assert_string_equal(rows[1].status, "FAILED");
    assert_string_equal(rows[1].error, "loss is NaN at step 7");
    free(rows);
    OK(db_runs_list(db, NULL, "FAILED", &rows, &n, err, sizeof err));
    assert_int_equal(n, 1);
    free(rows);
    db_close(db);
    printf("lifecycle: SCHEDULED -> RUNNING -> FINISHED / FAILED recorded; duplicates and bad statuses refused\n");
}

static void test_nan_stored_as_null(void **state) {
    (void)state;
    char dir[600], path[700], err[512];
    tmp_dir(dir, sizeof dir, "nan");
    snprintf(path, sizeof path, "%s/gatelab.db", dir);
    gl_db *db = open_ok(path);
    make_run(db, "exp", "r", "RUNNING");
    gl_metric m[4] = {{.step = 1, .split = "train", .name = "loss", .value = NAN, .wall_time = 0}, {.step = 2, .split = "train", .name = "loss", .value = INFINITY, .wall_time = 0},
                      {.step = 3, .split = "train", .name = "loss", .value = -INFINITY, .wall_time = 0}, {.step = 4, .split = "train", .name = "loss", .value = 1.25, .wall_time = 0}};
    OK(db_metrics_log(db, "r", m, 4, err, sizeof err));
    assert_int_equal(sql_int(path, "SELECT count(*) FROM metrics WHERE value IS NULL"), 3);
    assert_int_equal(sql_int(path, "SELECT count(*) FROM metrics WHERE typeof(value)='real'"), 1);
    double v = 0;
    assert_int_equal(db_metric_get(db, "r", 1, "train", "loss", NULL, &v, err, sizeof err), 1);
    assert_true(isnan(v));
    assert_int_equal(db_metric_get(db, "r", 4, "train", "loss", NULL, &v, err, sizeof err), 1);
    assert_true(v == 1.25);
    assert_int_equal(db_metric_get(db, "r", 5, "train", "loss", NULL, &v, err, sizeof err), 0);
    /* Re-logging a step (a resumed run) replaces it. */
    gl_metric again = {.step = 4, .split = "train", .name = "loss", .value = 1.5, .wall_time = 0};
    OK(db_metrics_log(db, "r", &again, 1, err, sizeof err));
    assert_int_equal(db_count_rows(db, "metrics", "r", err, sizeof err), 4);
    db_close(db);
    printf("nan: NaN, +inf, -inf stored as NULL (3 of 4 rows); a re-logged step replaces its row\n");
}

static void test_heartbeat(void **state) {
    (void)state;
    char dir[600], path[700], err[512], q[256];
    tmp_dir(dir, sizeof dir, "heartbeat");
    snprintf(path, sizeof path, "%s/gatelab.db", dir);
    gl_db *db = open_ok(path);
    make_run(db, "exp", "r", "RUNNING");
    sql_exec(path, "UPDATE runs SET heartbeat = 1000, pid = 1 WHERE run_id = 'r'");
    /* logging metrics (as an analysis of a live run does) must not refresh it */
    gl_metric m = {.step = 5, .split = "analysis", .name = "alpha_mean", .value = 0.5, .wall_time = 0};
    OK(db_metrics_log(db, "r", &m, 1, err, sizeof err));
    assert_int_equal(sql_int(path, "SELECT heartbeat = 1000 FROM runs WHERE run_id='r'"), 1);
    /* the training loop's call does, and records its pid */
    double before = db_now();
    OK(db_run_heartbeat(db, "r", err, sizeof err));
    snprintf(q, sizeof q, "SELECT heartbeat >= %.3f AND pid = %d FROM runs WHERE run_id='r'", before - 1,
             (int)getpid());
    assert_int_equal(sql_int(path, q), 1);
    assert_int_equal(db_run_heartbeat(db, "nope", err, sizeof err), -1);
    assert_non_null(strstr(err, "nope"));
    db_close(db);
    printf("heartbeat: db_run_heartbeat refreshes heartbeat and pid; db_metrics_log leaves them alone\n");
}

static void test_readers(void **state) {
    (void)state;
    char dir[600], path[700], other[700], err[512], val[64];
    tmp_dir(dir, sizeof dir, "readers");
    snprintf(path, sizeof path, "%s/gatelab.db", dir);
    snprintf(other, sizeof other, "%s/other.db", dir);
    gl_db *ro = NULL;
    assert_int_equal(db_open_readonly(&ro, path, err, sizeof err), -1);
    assert_non_null(strstr(err, "no registry there"));
    assert_false(file_exists(path)); /* nothing created */
    sql_exec(other, "CREATE TABLE t (x)");
    assert_int_equal(db_open_readonly(&ro, other, err, sizeof err), -1);
    assert_non_null(strstr(err, "not a gatelab registry"));

    gl_db *db = open_ok(path);
    make_run(db, "exp", "r", "RUNNING");
    OK(db_params_put_ini(db, "r", "[model]\nn_layer = 4\n", err, sizeof err));
    gl_metric m[6] = {{.step = 20, .split = "val", .name = "loss", .value = 2.0, .wall_time = 110}, {.step = 10, .split = "val", .name = "loss", .value = 3.0, .wall_time = 105}, {.step = 30, .split = "val", .name = "loss", .value = NAN, .wall_time = 120},
                      {.step = 10, .split = "train", .name = "loss", .value = 3.5, .wall_time = 100}, {.step = 7, .split = "ablation", .name = "zero.delta_loss", .params = "{\"gates\":\"all\"}", .value = 0.25, .wall_time = 130},
                      {.step = 9, .split = "ablation", .name = "zero.delta_loss", .params = "{\"gates\":\"all\"}", .value = 0.5, .wall_time = 140}};
    OK(db_metrics_log(db, "r", m, 6, err, sizeof err));
    db_close(db);

    if (db_open_readonly(&ro, path, err, sizeof err)) {
        print_error("db_open_readonly: %s\n", err);
        fail();
    }
    assert_int_equal(db_param_get(ro, "r", "model.n_layer", val, sizeof val, err, sizeof err), 1);
    assert_string_equal(val, "4");
    assert_int_equal(db_param_get(ro, "r", "model.nope", val, sizeof val, err, sizeof err), 0);
    double v = 0;
    long step = 0;
    assert_int_equal(db_metric_last(ro, "r", "val", "loss", NULL, &v, &step, err, sizeof err), 1);
    assert_true(isnan(v) && step == 30); /* the largest step, NULL read as NaN */
    assert_int_equal(db_metric_last(ro, "r", "val", "bpc", NULL, &v, NULL, err, sizeof err), 0);
    gl_metric_point *pts = NULL;
    int n = 0;
    OK(db_metric_series(ro, "r", "val", "loss", NULL, &pts, &n, err, sizeof err));
    assert_int_equal(n, 3);
    assert_true(pts[0].step == 10 && pts[0].value == 3.0 && pts[0].wall_time == 105 && pts[1].step == 20 &&
                isnan(pts[2].value));
    free(pts);
    gl_metric_latest *rows = NULL;
    OK(db_metrics_latest(ro, "r", "ablation", &rows, &n, err, sizeof err));
    assert_int_equal(n, 1);
    assert_true(rows[0].step == 9 && rows[0].value == 0.5);
    metric_key zk = key_of("zero.delta_loss", "{\"gates\":\"all\"}"), zl = key_of("zero.loss", zk.params),
               zp = key_of("zero.delta_loss", "{}");
    assert_true(db_metrics_latest_find(rows, n, &zk) == 0.5);
    assert_true(isnan(db_metrics_latest_find(rows, n, &zl)));
    assert_true(isnan(db_metrics_latest_find(rows, n, &zp))); /* the name alone is another metric */
    free(rows);
    double t0 = 0;
    assert_int_equal(db_run_t0(ro, "r", &t0, err, sizeof err), 1);
    assert_true(t0 == 100); /* train and val only: the ablation rows are later anyway */
    assert_int_equal(db_run_t0(ro, "nope", &t0, err, sizeof err), 0);
    /* a read-only connection cannot write */
    assert_int_equal(db_metrics_log(ro, "r", m, 1, err, sizeof err), -1);
    db_close(ro);
    printf("readers: read-only open refuses a missing file and a non-registry; params, last, series, latest, t0\n");
}

static int count_one(const gl_key *key, void *ctx) {
    (void)key;
    ++*(long long *)ctx;
    return 0;
}

/* The number of keys the typed walk visits (one params row each). */
static long long count_keys(void) {
    gl_manifest mf;
    long long n = 0;
    manifest_defaults(&mf);
    manifest_each_key(&mf, count_one, &n);
    return n;
}

static void test_params_flattened(void **state) {
    (void)state;
    char dir[600], path[700], err[512], val[64];
    tmp_dir(dir, sizeof dir, "params");
    snprintf(path, sizeof path, "%s/gatelab.db", dir);
    gl_db *db = open_ok(path);
    make_run(db, "exp", "r", "SCHEDULED");
    gl_manifest mf;
    manifest_defaults(&mf);
    mf.train.steps = 1234;
    OK(db_params_put(db, "r", &mf, err, sizeof err));
    sql_text(path, "SELECT value FROM params WHERE run_id='r' AND key='train.steps'", val, sizeof val);
    assert_string_equal(val, "1234");
    long long n1 = sql_int(path, "SELECT count(*) FROM params WHERE run_id='r'");
    assert_true(n1 > 20);
    assert_int_equal(sql_int(path, "SELECT count(*) FROM params WHERE key NOT LIKE '%.%'"), 0);
    OK(db_params_put(db, "r", &mf, err, sizeof err)); /* replaces, no duplicates */
    assert_int_equal(sql_int(path, "SELECT count(*) FROM params WHERE run_id='r'"), n1);
    assert_int_equal(n1, count_keys());
    /* typed read-back: the manifest's parser and types, a float as the decimal of its canonical text */
    gl_key_value v;
    assert_int_equal(db_param_typed(db, "r", "train.steps", &v, err, sizeof err), 1);
    assert_int_equal(v.type, MF_INT);
    assert_true(v.num == 1234.0);
    mf.model.tsa_lambda = 0.1f;
    OK(db_params_put(db, "r", &mf, err, sizeof err));
    assert_int_equal(db_param_typed(db, "r", "model.tsa_lambda", &v, err, sizeof err), 1);
    assert_int_equal(v.type, MF_FLOAT);
    assert_true(v.num == 0.1); /* not (double)0.1f, which a claim's 0.1 would miss by 1.5e-9 */
    assert_string_equal(v.text, "0.1");
    assert_int_equal(db_param_typed(db, "r", "model.no_such_key", &v, err, sizeof err), 0);
    /* a stored text the manifest does not accept: an error naming the run and the key */
    sql_exec(path, "UPDATE params SET value='many' WHERE run_id='r' AND key='model.n_layer'");
    assert_int_equal(db_param_typed(db, "r", "model.n_layer", &v, err, sizeof err), -1);
    assert_non_null(strstr(err, "run r"));
    assert_non_null(strstr(err, "n_layer"));
    /* from INI text: through manifest_load_text, so missing keys store their defaults and a bad key is refused */
    OK(db_params_put_ini(db, "r", "[model]\nn_layer = 4\n", err, sizeof err));
    assert_int_equal(sql_int(path, "SELECT count(*) FROM params WHERE run_id='r'"), n1);
    sql_text(path, "SELECT value FROM params WHERE run_id='r' AND key='model.n_layer'", val, sizeof val);
    assert_string_equal(val, "4");
    sql_text(path, "SELECT value FROM params WHERE run_id='r' AND key='train.steps'", val, sizeof val);
    manifest_defaults(&mf);
    char want[32];
    snprintf(want, sizeof want, "%d", mf.train.steps);
    assert_string_equal(val, want);
    assert_int_equal(db_params_put_ini(db, "r", "[model]\nn_layers = 4\n", err, sizeof err), -1);
    assert_non_null(strstr(err, "run r"));
    assert_non_null(strstr(err, "n_layers"));
    assert_int_equal(sql_int(path, "SELECT count(*) FROM params WHERE run_id='r'"), n1); /* left as it was */
    db_close(db);
    printf("params: %lld section.key rows (one per key of the walk), replaced on rewrite, read back typed\n", n1);
}

static void test_artifact_sha256(void **state) {
    (void)state;
    char dir[600], path[700], file[700], err[512], hex[65];
    tmp_dir(dir, sizeof dir, "artifact");
    snprintf(path, sizeof path, "%s/gatelab.db", dir);
    snprintf(file, sizeof file, "%s/ckpt", dir);
    gl_db *db = open_ok(path);
    make_run(db, "exp", "r", "RUNNING");
    write_file(file, "abc");
    OK(db_artifact_put(db, "r", "ckpt", file, err, sizeof err));
    long long bytes = 0;
    char stored[64];
    assert_int_equal(db_artifact_get(db, "r", "ckpt", stored, sizeof stored, hex, &bytes, err, sizeof err), 1);
    assert_string_equal(stored, "ckpt"); /* relative to the run folder, not to where it ran */
    assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    assert_int_equal(bytes, 3);
    write_file(file, "");
    OK(db_artifact_put(db, "r", "ckpt", file, err, sizeof err));
    assert_int_equal(db_count_rows(db, "artifacts", "r", err, sizeof err), 1);
    assert_int_equal(db_artifact_get(db, "r", "ckpt", NULL, 0, hex, &bytes, err, sizeof err), 1);
    assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    assert_int_equal(bytes, 0);
    char missing[720];
    snprintf(missing, sizeof missing, "%s/no-such-file", dir);
    assert_int_equal(db_artifact_put(db, "r", "trace", missing, err, sizeof err), -1);
    assert_non_null(strstr(err, "no-such-file"));
    db_close(db);
    printf("artifact: sha256 and size of the file recorded, its path relative to the run folder, replaced per (run, kind); a missing file is an error\n");
}

/* ---- concurrency ---- */

#define WRITERS 8
#define ROWS_PER_WRITER 4000
#define ROWS_PER_TX 40

/* A writer process: open the (maybe not yet existing) registry, register its
 * run, log its rows in batches.  Exit status 0 on success. */
static int writer_main(const char *path, int w, int go_fd) {
    char err[512], run[32], buf[1];
    if (read(go_fd, buf, 1) < 0) return 3; /* wait for the start signal (EOF) */
    gl_db *db = NULL;
    if (db_open(&db, path, err, sizeof err)) { fprintf(stderr, "writer %d: %s\n", w, err); return 1; }
    long long exp_id;
    snprintf(run, sizeof run, "writer-%d", w);
    if (db_experiment_ensure(db, "concurrency", NULL, &exp_id, err, sizeof err) ||
        db_run_create(db, exp_id, run, run, "", "", (unsigned long long)w, "RUNNING", err, sizeof err)) {
        fprintf(stderr, "writer %d: %s\n", w, err);
        db_close(db);
        return 1;
    }
    gl_metric rows[ROWS_PER_TX];
    for (int i = 0; i < ROWS_PER_WRITER; i += ROWS_PER_TX) {
        for (int k = 0; k < ROWS_PER_TX; k++) {
            rows[k] = (gl_metric){.step = i + k, .split = "train", .name = "loss", .value = w * 1e6 + i + k};
        }
        if (db_metrics_log(db, run, rows, ROWS_PER_TX, err, sizeof err)) {
            fprintf(stderr, "writer %d: %s\n", w, err);
            db_close(db);
            return 1;
        }
    }
    int rc = db_run_finish(db, run, "FINISHED", 0, NULL, err, sizeof err) ? 1 : 0;
    db_close(db);
    return rc;
}

static void test_concurrent_writers(void **state) {
    (void)state;
    char dir[600], path[700], q[256];
    tmp_dir(dir, sizeof dir, "concurrent");
    snprintf(path, sizeof path, "%s/gatelab.db", dir); /* does not exist yet: the schema is raced too */
    int go[2];
    assert_int_equal(pipe(go), 0);
    pid_t pids[WRITERS];
    fflush(NULL);
    for (int w = 0; w < WRITERS; w++) {
        pids[w] = fork();
        assert_true(pids[w] >= 0);
        if (pids[w] == 0) {
            close(go[1]);
            _exit(writer_main(path, w, go[0]));
        }
    }
    close(go[0]);
    close(go[1]); /* all writers start now */
    int failures = 0;
    for (int w = 0; w < WRITERS; w++) {
        int ws = 0;
        assert_int_equal(waitpid(pids[w], &ws, 0), pids[w]);
        if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0) failures++;
    }
    assert_int_equal(failures, 0);
    long long total = sql_int(path, "SELECT count(*) FROM metrics");
    assert_int_equal(total, (long long)WRITERS * ROWS_PER_WRITER);
    assert_int_equal(sql_int(path, "SELECT count(*) FROM experiments"), 1);
    assert_int_equal(sql_int(path, "SELECT count(*) FROM runs WHERE status='FINISHED'"), WRITERS);
    long long worst = 0;
    for (int w = 0; w < WRITERS; w++) {
        snprintf(q, sizeof q,
                 "SELECT count(*) FROM metrics WHERE run_id='writer-%d' AND value = %d * 1e6 + step", w, w);
        long long n = sql_int(path, q);
        if (ROWS_PER_WRITER - n > worst) worst = ROWS_PER_WRITER - n;
    }
    assert_int_equal(worst, 0);
    printf("concurrency: %d processes x %d rows in batches of %d: %lld rows present, 0 missing, no lock errors\n",
           WRITERS, ROWS_PER_WRITER, ROWS_PER_TX, total);
}

/* ---- claiming ---- */

#define CLAIM_RUNS 24
#define CLAIMERS 4

static int claimer_main(const char *path, const char *const *ids, int go_fd) {
    char err[512], buf[1];
    if (read(go_fd, buf, 1) < 0) return 3;
    gl_db *db = NULL;
    if (db_open(&db, path, err, sizeof err)) return 1;
    for (;;) {
        int interrupted;
        int got = db_run_claim(db, ids, CLAIM_RUNS, 3600, &interrupted, err, sizeof err);
        if (got == -2) break;
        if (got < 0 || db_run_start(db, ids[got], err, sizeof err) ||
            db_run_finish(db, ids[got], "FINISHED", 0, NULL, err, sizeof err)) {
            fprintf(stderr, "claimer: %s\n", err);
            db_close(db);
            return 1;
        }
    }
    db_close(db);
    return 0;
}

static void test_claim_exactly_once(void **state) {
    (void)state;
    char dir[600], path[700], err[512], names[CLAIM_RUNS][16];
    const char *ids[CLAIM_RUNS];
    tmp_dir(dir, sizeof dir, "claim");
    snprintf(path, sizeof path, "%s/gatelab.db", dir);
    gl_db *db = open_ok(path);
    for (int i = 0; i < CLAIM_RUNS; i++) {
        snprintf(names[i], sizeof names[i], "run-%02d", i);
        ids[i] = names[i];
        make_run(db, "claim", names[i], "SCHEDULED");
    }
    int go[2];
    assert_int_equal(pipe(go), 0);
    pid_t pids[CLAIMERS];
    fflush(NULL);
    for (int c = 0; c < CLAIMERS; c++) {
        pids[c] = fork();
        assert_true(pids[c] >= 0);
        if (pids[c] == 0) {
            close(go[1]);
            _exit(claimer_main(path, ids, go[0]));
        }
    }
    close(go[0]);
    close(go[1]);
    for (int c = 0; c < CLAIMERS; c++) {
        int ws = 0;
        assert_int_equal(waitpid(pids[c], &ws, 0), pids[c]);
        assert_true(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
    }
    assert_int_equal(sql_int(path, "SELECT count(*) FROM runs WHERE status='FINISHED' AND attempts=1"), CLAIM_RUNS);

    /* Which interrupted runs are claimable. */
    int interrupted = 0;
    make_run(db, "claim", "dead", "SCHEDULED");
    pid_t child = fork();
    if (child == 0) { /* start the run in a process that then dies */
        gl_db *cdb = NULL;
        char cerr[512];
        _exit(db_open(&cdb, path, cerr, sizeof cerr) || db_run_start(cdb, "dead", cerr, sizeof cerr));
    }
    int ws = 0;
    assert_int_equal(waitpid(child, &ws, 0), child);
    assert_true(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
    make_run(db, "claim", "alive", "SCHEDULED");
    OK(db_run_start(db, "alive", err, sizeof err)); /* RUNNING with our own (live) pid */
    make_run(db, "claim", "killed", "RUNNING");
    OK(db_run_finish(db, "killed", "KILLED", 130, "SIGINT", err, sizeof err));
    make_run(db, "claim", "failed", "RUNNING");
    OK(db_run_finish(db, "failed", "FAILED", 1, "NaN", err, sizeof err));
    const char *probe[] = {"run-00", "failed", "alive", "dead"};
    assert_int_equal(db_run_claim(db, probe, 4, 3600, &interrupted, err, sizeof err), 3);
    assert_int_equal(interrupted, 1);
    const char *probe2[] = {"failed", "alive", "killed"};
    assert_int_equal(db_run_claim(db, probe2, 3, 3600, &interrupted, err, sizeof err), 2);
    assert_int_equal(interrupted, 1);
    const char *probe3[] = {"failed", "alive", "dead", "killed", "not-registered"};
    assert_int_equal(db_run_claim(db, probe3, 5, 3600, &interrupted, err, sizeof err), -2);
    /* A live run whose heartbeat is older than the stale limit is claimable. */
    sleep(1);
    assert_int_equal(db_run_claim(db, probe2, 3, 0.5, &interrupted, err, sizeof err), 1);
    OK(db_run_release(db, "alive", err, sizeof err));
    assert_int_equal(sql_int(path, "SELECT status='SCHEDULED' AND pid IS NULL FROM runs WHERE run_id='alive'"), 1);
    db_close(db);
    printf("claim: %d runs by %d processes, each claimed exactly once; dead-pid, KILLED and stale runs "
           "reclaimed, live and ended ones not\n",
           CLAIM_RUNS, CLAIMERS);
}

/* ---- collect ---- */

static void log_loss(gl_db *db, const char *run, int n, double base) {
    char err[512];
    gl_metric m[64];
    assert_true(n <= 64);
    for (int i = 0; i < n; i++) m[i] = (gl_metric){.step = i, .split = "train", .name = "loss", .value = base + i, .wall_time = 0};
    OK(db_metrics_log(db, run, m, n, err, sizeof err));
}

static void test_collect_merge(void **state) {
    (void)state;
    char dir[600], main_db[700], a_db[700], b_db[700], err[512], status[16];
    tmp_dir(dir, sizeof dir, "collect");
    snprintf(main_db, sizeof main_db, "%s/main.db", dir);
    snprintf(a_db, sizeof a_db, "%s/task-0.db", dir);
    snprintf(b_db, sizeof b_db, "%s/task-1.db", dir);
    gl_db *a = open_ok(a_db), *b = open_ok(b_db), *m = open_ok(main_db);
    /* Task 0: r1 finished, r2 only scheduled.  Task 1: r2 finished, r3 killed.  Main: r3 finished. */
    make_run(a, "exp", "r1", "RUNNING");
    log_loss(a, "r1", 10, 100);
    OK(db_params_put_ini(a, "r1", "[train]\nsteps = 10\n", err, sizeof err));
    OK(db_run_finish(a, "r1", "FINISHED", 0, NULL, err, sizeof err));
    make_run(a, "exp", "r2", "SCHEDULED");
    make_run(b, "other", "pad", "SCHEDULED"); /* experiment ids differ between the files */
    make_run(b, "exp", "r2", "RUNNING");
    log_loss(b, "r2", 20, 200);
    OK(db_run_finish(b, "r2", "FINISHED", 0, NULL, err, sizeof err));
    make_run(b, "exp", "r3", "RUNNING");
    log_loss(b, "r3", 5, 300);
    OK(db_run_finish(b, "r3", "KILLED", 130, NULL, err, sizeof err));
    make_run(m, "exp", "r3", "RUNNING");
    log_loss(m, "r3", 30, 400);
    OK(db_run_finish(m, "r3", "FINISHED", 0, NULL, err, sizeof err));
    db_close(a);
    db_close(b);

    int merged = 0, skipped = 0;
    OK(db_merge(m, a_db, &merged, &skipped, err, sizeof err));
    assert_int_equal(merged, 2);
    assert_int_equal(skipped, 0);
    OK(db_merge(m, b_db, &merged, &skipped, err, sizeof err));
    assert_int_equal(merged, 2); /* pad (new) and r2 (FINISHED beats SCHEDULED); r3 KILLED loses */
    assert_int_equal(skipped, 1);
    OK(db_merge(m, a_db, &merged, &skipped, err, sizeof err)); /* again: nothing new */
    assert_int_equal(merged, 0);
    assert_int_equal(skipped, 2);
    OK(db_merge(m, b_db, &merged, &skipped, err, sizeof err));
    assert_int_equal(merged, 0);
    db_close(m);

    assert_int_equal(sql_int(main_db, "SELECT count(*) FROM runs"), 4);
    assert_int_equal(sql_int(main_db, "SELECT count(*) FROM experiments"), 2);
    assert_int_equal(sql_int(main_db, "SELECT count(*) FROM runs WHERE status='FINISHED'"), 3);
    assert_int_equal(sql_int(main_db, "SELECT count(*) FROM metrics WHERE run_id='r1'"), 10);
    assert_int_equal(sql_int(main_db, "SELECT count(*) FROM metrics WHERE run_id='r2' AND value >= 200"), 20);
    assert_int_equal(sql_int(main_db, "SELECT count(*) FROM metrics WHERE run_id='r2'"), 20);
    assert_int_equal(sql_int(main_db, "SELECT count(*) FROM metrics WHERE run_id='r3' AND value >= 400"), 30);
    assert_int_equal(sql_int(main_db, "SELECT count(*) FROM metrics WHERE run_id='r3'"), 30);
    assert_int_equal(sql_int(main_db, "SELECT count(*) FROM params WHERE run_id='r1'"), count_keys()); /* every key */
    assert_int_equal(sql_int(main_db, "SELECT count(*) FROM params WHERE run_id='r1' AND key='train.steps' AND value='10'"), 1);
    assert_int_equal(sql_int(main_db, "SELECT count(*) FROM runs r JOIN experiments e ON e.id=r.experiment_id "
                                      "WHERE e.name='exp'"),
                     3);
    m = open_ok(main_db);
    assert_int_equal(db_run_exists(m, "r2", status, err, sizeof err), 1);
    assert_string_equal(status, "FINISHED");
    /* A file that is not there is an error naming it. */
    char missing[720];
    snprintf(missing, sizeof missing, "%s/task-9.db", dir);
    assert_int_equal(db_merge(m, missing, &merged, &skipped, err, sizeof err), -1);
    assert_non_null(strstr(err, "task-9.db"));
    db_close(m);

    /* The command: collect into a fresh main registry. */
    char fresh[720];
    snprintf(fresh, sizeof fresh, "%s/fresh.db", dir);
    char *argv[] = {"collect", fresh, a_db, b_db, a_db, NULL};
    assert_int_equal(cmd_collect(5, argv), 0);
    assert_int_equal(sql_int(fresh, "SELECT count(*) FROM runs"), 4);
    assert_int_equal(sql_int(fresh, "SELECT count(*) FROM metrics"), 10 + 20 + 5);
    printf("collect: two task registries with an overlapping run merged once (4 runs, 3 FINISHED); "
           "merging again adds nothing\n");
}

static int setup_all(void **state) {
    (void)state;
    const char *t = getenv("TMPDIR");
    snprintf(tmp_root, sizeof tmp_root, "%s/gatelab-test-registry-%d", t && *t ? t : "/tmp", (int)getpid());
    return mkdir(tmp_root, 0777) == 0 || errno == EEXIST ? 0 : -1;
}

static int teardown_all(void **state) {
    (void)state;
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_root);
    return system(cmd) == 0 ? 0 : -1;
}

/* ---- provenance (schema 2) ---- */

/* The schema of version 1, as gatelab wrote it before metric provenance. */
static const char v1_schema[] =
    "CREATE TABLE schema_version (version INTEGER NOT NULL); INSERT INTO schema_version VALUES (1);"
    "CREATE TABLE experiments (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, manifest_text TEXT,"
    "  manifest_hash TEXT, created_time REAL NOT NULL);"
    "CREATE TABLE runs (run_id TEXT PRIMARY KEY, experiment_id INTEGER NOT NULL REFERENCES experiments(id), name TEXT,"
    "  config_text TEXT, config_hash TEXT, seed INTEGER, git_commit TEXT, git_dirty INTEGER, host TEXT, pid INTEGER,"
    "  status TEXT NOT NULL CHECK (status IN ('SCHEDULED','RUNNING','FINISHED','FAILED','KILLED')),"
    "  created_time REAL NOT NULL, start_time REAL, end_time REAL, heartbeat REAL,"
    "  attempts INTEGER NOT NULL DEFAULT 0, exit_code INTEGER, error TEXT);"
    "CREATE INDEX runs_by_experiment ON runs (experiment_id, status);"
    "CREATE TABLE params (run_id TEXT NOT NULL REFERENCES runs(run_id), key TEXT NOT NULL, value TEXT,"
    "  PRIMARY KEY (run_id, key));"
    "CREATE TABLE metrics (run_id TEXT NOT NULL REFERENCES runs(run_id), step INTEGER NOT NULL, split TEXT NOT NULL,"
    "  name TEXT NOT NULL, value REAL, wall_time REAL NOT NULL, PRIMARY KEY (run_id, step, split, name));"
    "CREATE INDEX metrics_by_name ON metrics (run_id, split, name, step);"
    "CREATE TABLE artifacts (run_id TEXT NOT NULL REFERENCES runs(run_id), kind TEXT NOT NULL, path TEXT NOT NULL,"
    "  sha256 TEXT NOT NULL, bytes INTEGER NOT NULL, created_time REAL NOT NULL, PRIMARY KEY (run_id, kind));"
    "INSERT INTO experiments VALUES (1, 'old', NULL, NULL, 1.0);"
    "INSERT INTO runs (run_id, experiment_id, name, status, created_time, start_time, end_time) "
    "  VALUES ('r1', 1, 'r1', 'FINISHED', 1.0, 2.0, 3.0);"
    "INSERT INTO params VALUES ('r1', 'train.steps', '40');"
    "INSERT INTO metrics VALUES ('r1', 10, 'train', 'loss', 2.9, 10.0), ('r1', 40, 'val', 'loss', 2.5, 11.0),"
    "  ('r1', 40, 'val', 'final.loss', 2.25, 12.0), ('r1', 40, 'val', 'final.loss_se', 0.0125, 12.0),"
    "  ('r1', 40, 'val', 'final.bpc', 3.2, 12.0), ('r1', 40, 'val', 'final.tokens', 6400, 12.0),"
    "  ('r1', 40, 'val', 'final.windows', 100, 12.0), ('r1', 40, 'val', 'matched.loss', 2.375, 13.0),"
    "  ('r1', 40, 'val', 'matched.loss_se', 0.02, 13.0), ('r1', 40, 'val', 'matched.tokens', 6400, 13.0),"
    "  ('r1', 40, 'ablation', 'zero.L1H0.delta_loss', 0.5, 14.0);";

/* A version-1 or -2 file is refused by every opener, named, and left as it was
 * (registry_schema.c: only version 3 is read). */
static void check_old_refused(const char *path, int version) {
    char err[1024], want[64];
    gl_db *db = NULL;
    snprintf(want, sizeof want, "schema version %d is older than this gatelab reads", version);
    assert_int_equal(db_open_readonly(&db, path, err, sizeof err), -1);
    assert_non_null(strstr(err, want));
    assert_non_null(strstr(err, "f576d3d"));
    assert_int_equal(db_open(&db, path, err, sizeof err), -1);
    assert_non_null(strstr(err, want));
    assert_int_equal(db_open_existing(&db, path, err, sizeof err), -1);
    assert_non_null(strstr(err, want));
    assert_null(db);
    assert_int_equal(sql_int(path, "SELECT version FROM schema_version"), version);
    printf("schema %d refused by db_open, db_open_existing, db_open_readonly, file untouched: %s\n", version, err);
}

static void test_old_schema_refused(void **state) {
    (void)state;
    char dir[600], path[700];
    tmp_dir(dir, sizeof dir, "old_v1");
    snprintf(path, sizeof path, "%s/gatelab.db", dir);
    sql_exec(path, v1_schema);
    check_old_refused(path, 1);
    assert_int_equal(sql_int(path, "SELECT count(*) FROM metrics"), 11);
}

/* ---- parameters out of names (schema 3) ---- */

/* A version-2 registry as gatelab wrote it before schema 3: names with their parameters inside. */
static const char v2_schema[] =
    "CREATE TABLE schema_version (version INTEGER NOT NULL); INSERT INTO schema_version VALUES (2);"
    "CREATE TABLE experiments (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, manifest_text TEXT,"
    "  manifest_hash TEXT, created_time REAL NOT NULL);"
    "CREATE TABLE runs (run_id TEXT PRIMARY KEY, experiment_id INTEGER NOT NULL, name TEXT, config_text TEXT,"
    "  config_hash TEXT, seed INTEGER, git_commit TEXT, git_dirty INTEGER, host TEXT, pid INTEGER,"
    "  status TEXT NOT NULL, created_time REAL NOT NULL, start_time REAL, end_time REAL, heartbeat REAL,"
    "  attempts INTEGER NOT NULL DEFAULT 0, exit_code INTEGER, error TEXT);"
    "CREATE TABLE params (run_id TEXT NOT NULL, key TEXT NOT NULL, value TEXT, PRIMARY KEY (run_id, key));"
    "CREATE TABLE metrics (run_id TEXT NOT NULL, step INTEGER NOT NULL, split TEXT NOT NULL, name TEXT NOT NULL,"
    "  value REAL, wall_time REAL NOT NULL, data_split TEXT NOT NULL DEFAULT '', win_first INTEGER NOT NULL DEFAULT 0,"
    "  win_count INTEGER NOT NULL DEFAULT 0, tokens REAL, se REAL,"
    "  PRIMARY KEY (run_id, step, split, name, data_split, win_first, win_count));"
    "CREATE INDEX metrics_by_name ON metrics (run_id, split, name, step);"
    "CREATE TABLE artifacts (run_id TEXT NOT NULL, kind TEXT NOT NULL, path TEXT NOT NULL, sha256 TEXT NOT NULL,"
    "  bytes INTEGER NOT NULL, created_time REAL NOT NULL, PRIMARY KEY (run_id, kind));"
    "CREATE TABLE run_events (run_id TEXT NOT NULL, time REAL NOT NULL, kind TEXT NOT NULL, detail TEXT);"
    "INSERT INTO experiments VALUES (1, 'old', NULL, NULL, 1.0);"
    "INSERT INTO runs (run_id, experiment_id, name, status, created_time) VALUES ('r2', 1, 'r2', 'FINISHED', 1.0);"
    "INSERT INTO metrics (run_id, step, split, name, value, wall_time) VALUES"
    "  ('r2', 40, 'train', 'loss', 2.5, 1), ('r2', 40, 'val', 'final.loss', 2.25, 1),"
    "  ('r2', 40, 'ablation', 'exit.tau0.500.loss', 3.5, 1), ('r2', 40, 'ablation', 'exit.tau0.900.loss', 3.0, 1),"
    "  ('r2', 40, 'ablation', 'exit.full.loss', 2.75, 1),"
    "  ('r2', 40, 'ablation', 'zero.L1H0+L2.delta_loss.semantic', 0.5, 1),"
    "  ('r2', 40, 'analysis', 'alpha_mean.L1.H0', 0.125, 1), ('r2', 40, 'analysis', 'tokens.functional', 90, 1),"
    "  ('r2', 40, 'analysis', 'expected_depth', 4.5, 1), ('r2', 40, 'analysis', 'odd.L01', 7, 1);";

/* Rows as stored (split, name, params) with the label each reads as. */
static const char *const v2_names[][4] = {
    {"train", "loss", "loss", "{}"},
    {"val", "final.loss", "final.loss", "{}"},
    {"ablation", "exit.tau0.500.loss", "exit.loss", "{\"tau\":0.500}"},
    {"ablation", "exit.tau0.900.loss", "exit.loss", "{\"tau\":0.900}"},
    {"ablation", "exit.full.loss", "exit.loss", "{\"tau\":null}"},
    {"ablation", "zero.L1H0+L2.delta_loss.semantic", "zero.delta_loss", "{\"gates\":\"L1H0+L2\",\"category\":\"semantic\"}"},
    {"analysis", "alpha_mean.L1.H0", "alpha_mean", "{\"layer\":1,\"head\":0}"},
    {"analysis", "tokens.functional", "tokens", "{\"category\":\"functional\"}"},
    {"analysis", "expected_depth", "expected_depth", "{}"},
    {"analysis", "odd.L01", "odd.L01", "{}"}, /* a name another tool wrote: its own label */
};

/* Every row reads back by its (name, params), through any reader, and is
 * labelled as written. */
static void check_v2_names(gl_db *db) {
    char err[512], label[256];
    for (size_t i = 0; i < sizeof v2_names / sizeof v2_names[0]; i++) {
        double v = NAN;
        assert_int_equal(
            db_metric_last(db, "r2", v2_names[i][0], v2_names[i][2], v2_names[i][3], &v, NULL, err, sizeof err), 1);
        assert_false(isnan(v));
        assert_int_equal(metric_label(v2_names[i][2], v2_names[i][3], label, sizeof label), 0);
        assert_string_equal(label, v2_names[i][1]);
    }
    gl_metric_latest *rows = NULL;
    int n = 0;
    OK(db_metrics_latest(db, "r2", "ablation", &rows, &n, err, sizeof err));
    assert_int_equal(n, 4);
    metric_key k;
    metric_exit(&k, 0.5, "loss", METRIC_NONE);
    assert_true(db_metrics_latest_find(rows, n, &k) == 3.5);
    metric_exit(&k, NAN, "loss", METRIC_NONE);
    assert_true(db_metrics_latest_find(rows, n, &k) == 2.75);
    metric_ablation(&k, "zero", "L1H0+L2", "delta_loss", CAT_SEMANTIC);
    assert_true(db_metrics_latest_find(rows, n, &k) == 0.5);
    free(rows);
}

static void test_stored_names(void **state) {
    (void)state;
    char dir[600], path[700], err[512], sql[512], text[256];
    tmp_dir(dir, sizeof dir, "old_v2");
    snprintf(path, sizeof path, "%s/gatelab.db", dir);
    sql_exec(path, v2_schema);
    check_old_refused(path, 2);
    /* the rows logged as (name, params) are stored as they are, and read back */
    tmp_dir(dir, sizeof dir, "stored_names");
    snprintf(path, sizeof path, "%s/gatelab.db", dir);
    gl_db *db = open_ok(path);
    make_run(db, "old", "r2", "FINISHED");
    const size_t n = sizeof v2_names / sizeof v2_names[0];
    for (size_t i = 0; i < n; i++) {
        gl_metric m = {.step = 40, .split = v2_names[i][0], .name = v2_names[i][2], .params = v2_names[i][3],
                       .value = 1.0 + (double)i};
        OK(db_metrics_log(db, "r2", &m, 1, err, sizeof err));
    }
    metric_key fk[3];
    metric_exit(&fk[0], 0.5, "loss", METRIC_NONE);
    metric_exit(&fk[1], NAN, "loss", METRIC_NONE);
    metric_ablation(&fk[2], "zero", "L1H0+L2", "delta_loss", CAT_SEMANTIC);
    const gl_metric fix[] = {{.step = 40, .split = "ablation", .name = fk[0].name, .params = fk[0].params, .value = 3.5},
                             {.step = 40, .split = "ablation", .name = fk[1].name, .params = fk[1].params, .value = 2.75},
                             {.step = 40, .split = "ablation", .name = fk[2].name, .params = fk[2].params, .value = 0.5}};
    OK(db_metrics_log(db, "r2", fix, 3, err, sizeof err));
    check_v2_names(db);
    db_close(db);
    for (size_t i = 0; i < n; i++) {
        snprintf(sql, sizeof sql, "SELECT name || ' ' || params FROM metrics WHERE split = '%s' AND name = '%s' AND "
                 "params = '%s'", v2_names[i][0], v2_names[i][2], v2_names[i][3]);
        sql_text(path, sql, text, sizeof text);
        char want[256];
        snprintf(want, sizeof want, "%s %s", v2_names[i][2], v2_names[i][3]);
        assert_string_equal(text, want);
    }
    assert_int_equal(sql_int(path, "SELECT count(*) FROM metrics WHERE json_valid(params)"), (long long)n);
    printf("stored names: %zu rows as (name, params JSON), every one read back by its key and labelled as "
           "written\n", n);
}

/* ---- the statement helpers (registry_sql.h) ---- */

typedef struct {
    int rows;
    char seen[8][64]; /* "type:value" of each column of the last row */
} q_rows;

static int q_row(sqlite3_stmt *st, void *ctx, char *err, size_t errlen) {
    q_rows *q = ctx;
    (void)err, (void)errlen;
    for (int i = 0; i < sqlite3_column_count(st) && i < 8; i++)
        snprintf(q->seen[i], sizeof q->seen[i], "%d:%s", sqlite3_column_type(st, i),
                 sqlite3_column_type(st, i) == SQLITE_NULL ? "" : (const char *)sqlite3_column_text(st, i));
    return ++q->rows == 3 ? 1 : 0; /* stop after the third */
}

static int q_fail(sqlite3_stmt *st, void *ctx, char *err, size_t errlen) {
    (void)st, (void)ctx;
    snprintf(err, errlen, "row refused");
    return -1;
}

static void test_query_helpers(void **state) {
    (void)state;
    char dir[600], path[700], err[512];
    tmp_dir(dir, sizeof dir, "query");
    snprintf(path, sizeof path, "%s/gatelab.db", dir);
    gl_db *db = open_ok(path);
    /* every bind letter: text, NULL text, int, int64, real, NaN real (NULL), plain double, skipped */
    q_rows q = {0};
    assert_int_equal(db_query_one(db, "probe", "SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8", q_row, &q, err, sizeof err,
                                  "ttiIrrd_", "a", (const char *)NULL, 7, 1LL << 40, 0.5, NAN, 0.25),
                     1);
    const char *want[8] = {"3:a", "5:", "1:7", "1:1099511627776", "2:0.5", "5:", "2:0.25", "5:"};
    for (int i = 0; i < 8; i++) assert_string_equal(q.seen[i], want[i]);
    /* each: every row, or until the callback stops */
    memset(&q, 0, sizeof q);
    assert_int_equal(db_query_each(db, "series", "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c "
                                   "WHERE x < ?1) SELECT x FROM c", q_row, &q, err, sizeof err, "i", 2),
                     2);
    assert_int_equal(db_query_each(db, "series", "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c "
                                   "WHERE x < ?1) SELECT x FROM c", q_row, &q, err, sizeof err, "i", 9),
                     1); /* q.rows reaches 3 on its first row: stopped */
    assert_int_equal(db_query_one(db, "none", "SELECT 1 WHERE 0", q_row, &q, err, sizeof err, ""), 0);
    /* a write: no rows, db->changes; a duplicate key: -1 with db->step_rc and the statement named */
    make_run(db, "exp", "r", "RUNNING");
    assert_int_equal(db_query_one(db, "retag", "UPDATE runs SET name = ?2 WHERE run_id = ?1", NULL, NULL, err,
                                  sizeof err, "tt", "r", "renamed"),
                     0);
    assert_int_equal(db->changes, 1);
    assert_int_equal(db_query_one(db, "cannot insert twice", "INSERT INTO tags (run_id, key, value) VALUES "
                                  "(?1, 'k', 'v'), (?1, 'k', 'w')", NULL, NULL, err, sizeof err, "t", "r"),
                     -1);
    assert_int_equal(db->step_rc, SQLITE_CONSTRAINT_PRIMARYKEY);
    assert_non_null(strstr(err, "cannot insert twice: UNIQUE constraint failed"));
    assert_non_null(strstr(err, path));
    /* a statement that does not prepare names itself and SQLite's reason */
    assert_int_equal(db_query_each(db, "cannot read the frobs", "SELECT * FROM frobs", q_row, &q, err, sizeof err, ""),
                     -1);
    assert_non_null(strstr(err, "cannot read the frobs: no such table: frobs"));
    /* a callback's failure is the query's, with its message */
    assert_int_equal(db_query_each(db, "x", "SELECT 1", q_fail, NULL, err, sizeof err, ""), -1);
    assert_string_equal(err, "row refused");
    db_close(db);
    printf("db_query: 8 bind letters, each/one/stop, changes, SQLITE_CONSTRAINT_PRIMARYKEY, messages name the "
           "statement: %s\n", "ok");
}

static void test_provenance_keyed(void **state) {
    (void)state;
    char dir[600], path[700], err[512];
    tmp_dir(dir, sizeof dir, "prov_keyed");
    snprintf(path, sizeof path, "%s/gatelab.db", dir);
    gl_db *db = open_ok(path);
    long long exp_id;
    OK(db_experiment_ensure(db, "e", NULL, &exp_id, err, sizeof err));
    OK(db_run_create(db, exp_id, "r", "r", NULL, NULL, 1, "FINISHED", err, sizeof err));
    /* `heads` at 64 windows, then `ablate --heads 2:0 --windows 128`: same name, same step */
    gl_metric heads = {.step = 40, .split = "ablation", .name = "zero.delta_loss", .params = "{\"gates\":\"L2H0\"}",
                       .value = 0.125,
                       .prov = db_prov("val", 0, 64, 4096)};
    gl_metric ablate = heads;
    ablate.value = 0.25;
    ablate.prov = db_prov("val", 0, 128, 8192);
    OK(db_metrics_log(db, "r", &heads, 1, err, sizeof err));
    OK(db_metrics_log(db, "r", &ablate, 1, err, sizeof err));
    assert_int_equal(db_count_rows(db, "metrics", "r", err, sizeof err), 2);
    gl_metric_val v;
    assert_int_equal(db_metric_at(db, "r", "ablation", heads.name, heads.params, &heads.prov, &v, err, sizeof err), 1);
    assert_true(v.value == 0.125);
    assert_int_equal(db_metric_at(db, "r", "ablation", heads.name, heads.params, NULL, &v, err, sizeof err), 1);
    assert_true(v.value == 0.25); /* no provenance asked: the most windows */
    gl_metric_latest *rows = NULL;
    int n = 0;
    OK(db_metrics_latest(db, "r", "ablation", &rows, &n, err, sizeof err));
    assert_int_equal(n, 2);
    assert_true(rows[0].prov.count == 128 && rows[1].prov.count == 64);
    metric_key hk = key_of(heads.name, heads.params);
    assert_true(db_metrics_latest_find_like(rows, n, &hk, &rows[1]) == 0.125);
    free(rows);
    /* the same measurement again replaces only itself */
    heads.value = 0.0625;
    OK(db_metrics_log(db, "r", &heads, 1, err, sizeof err));
    assert_int_equal(db_count_rows(db, "metrics", "r", err, sizeof err), 2);
    assert_int_equal(db_metric_at(db, "r", "ablation", heads.name, heads.params, &heads.prov, &v, err, sizeof err), 1);
    assert_true(v.value == 0.0625);
    /* run events and the config a resume changed */
    OK(db_run_event(db, "r", "config_change", "train.steps: 250 -> 300", err, sizeof err));
    char last[128];
    assert_int_equal(db_run_events(db, "r", "config_change", last, sizeof last, err, sizeof err), 1);
    assert_string_equal(last, "train.steps: 250 -> 300");
    OK(db_run_config_set(db, "r", "[train]\nsteps = 300\n", "abc", err, sizeof err));
    char *cfg = NULL, hash[65];
    assert_int_equal(db_run_config(db, "r", &cfg, hash, err, sizeof err), 1);
    assert_string_equal(cfg, "[train]\nsteps = 300\n");
    assert_string_equal(hash, "abc");
    free(cfg);
    db_close(db);
    printf("provenance keyed: 64 and 128 windows both kept, re-logging 64 replaces only it; run event and config kept\n");
}

/* The kernels of a run's environment events: none recorded, then each
 * attempt's, distinct and in the order first seen ("Haswell" once although
 * recorded twice; "Zen" not mistaken for a part of another name). */
static void test_run_kernels(void **state) {
    (void)state;
    char dir[600], path[700], err[512], k[64];
    tmp_dir(dir, sizeof dir, "kernels");
    snprintf(path, sizeof path, "%s/gatelab.db", dir);
    gl_db *db = open_ok(path);
    long long exp_id;
    OK(db_experiment_ensure(db, "e", NULL, &exp_id, err, sizeof err));
    OK(db_run_create(db, exp_id, "r", "r", NULL, NULL, 1, "RUNNING", err, sizeof err));
    assert_int_equal(db_run_kernels(db, "r", k, sizeof k, err, sizeof err), 0);
    assert_string_equal(k, "");
    OK(db_run_event(db, "r", "environment", "OpenBLAS 0.3 | kernel Haswell | OPENBLAS_CORETYPE Haswell", err, sizeof err));
    OK(db_run_event(db, "r", "config_change", "| kernel Bogus |", err, sizeof err)); /* not an environment */
    OK(db_run_event(db, "r", "environment", "OpenBLAS 0.3 | kernel Zen2 | OPENBLAS_CORETYPE unset", err, sizeof err));
    OK(db_run_event(db, "r", "environment", "OpenBLAS 0.3 | kernel Haswell | OPENBLAS_CORETYPE Haswell", err, sizeof err));
    OK(db_run_event(db, "r", "environment", "OpenBLAS 0.3 | kernel Zen | OPENBLAS_CORETYPE unset", err, sizeof err));
    assert_int_equal(db_run_kernels(db, "r", k, sizeof k, err, sizeof err), 4);
    assert_string_equal(k, "Haswell, Zen2, Zen");
    /* this process's own: a kernel name and the variable as it is set or not */
    OK(db_run_environment(db, "r", err, sizeof err));
    char last[1024];
    assert_int_equal(db_run_events(db, "r", "environment", last, sizeof last, err, sizeof err), 5);
    assert_non_null(strstr(last, "| kernel "));
    char want[128];
    snprintf(want, sizeof want, "| OPENBLAS_CORETYPE %s, ", getenv("OPENBLAS_CORETYPE") ? getenv("OPENBLAS_CORETYPE") : "unset");
    assert_non_null(strstr(last, want));
    /* a data-parallel attempt: one event per rank, each named, in rank order; their kernels listed too */
    char all[3 * 64] = {0};
    snprintf(all, 64, "OpenBLAS 0.3 | kernel Haswell | r0");
    snprintf(all + 64, 64, "OpenBLAS 0.3 | kernel SkylakeX | r1");
    snprintf(all + 128, 64, "OpenBLAS 0.3 | kernel Haswell | r2");
    OK(db_run_environment_ranks(db, "r", all, 3, 64, err, sizeof err));
    assert_int_equal(db_run_events(db, "r", "environment", last, sizeof last, err, sizeof err), 8);
    assert_string_equal(last, "rank 2 of 3: OpenBLAS 0.3 | kernel Haswell | r2");
    assert_int_equal(db_run_kernels(db, "r", k, sizeof k, err, sizeof err), 8);
    assert_non_null(strstr(k, "SkylakeX"));
    db_close(db);
    printf("run kernels: none, then %s (distinct, in order); this process's environment: %s\n", k, last);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_run_kernels),
        cmocka_unit_test(test_sha256_vectors),
        cmocka_unit_test(test_schema_created_and_versioned),
        cmocka_unit_test(test_old_schema_refused),
        cmocka_unit_test(test_stored_names),
        cmocka_unit_test(test_query_helpers),
        cmocka_unit_test(test_provenance_keyed),
        cmocka_unit_test(test_run_lifecycle),
        cmocka_unit_test(test_nan_stored_as_null),
        cmocka_unit_test(test_heartbeat),
        cmocka_unit_test(test_readers),
        cmocka_unit_test(test_params_flattened),
        cmocka_unit_test(test_artifact_sha256),
        cmocka_unit_test(test_concurrent_writers),
        cmocka_unit_test(test_claim_exactly_once),
        cmocka_unit_test(test_collect_merge),
    };
    return cmocka_run_group_tests(tests, setup_all, teardown_all);
}
