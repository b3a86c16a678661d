/*
 * results_db.c — read-only SQL on the registry for tables and figures
 * (results_db.h).  Besides harness/store/registry.c this is the only file that
 * includes sqlite3.h; it never writes (analysis results are logged through
 * db_metrics_log).
 *
 * What it does not do: create or upgrade the schema, or cache.  Every
 * statement is prepared, stepped and finalised inside one call.
 */
#include "results_db.h"

#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct rdb {
    sqlite3 *h;
    char path[1024];
};

static int rdb_fail(rdb *db, const char *what, char *err, size_t errlen) {
    snprintf(err, errlen, "%s: %s: %s", db->path, what, sqlite3_errmsg(db->h));
    return -1;
}

int rdb_open(rdb **out, const char *path, char *err, size_t errlen) {
    *out = NULL;
    struct stat sb;
    if (stat(path, &sb) != 0) {
        snprintf(err, errlen, "%s: no registry there: train a run first, or pass --db PATH", path);
        return -1;
    }
    rdb *db = calloc(1, sizeof *db);
    if (!db) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    snprintf(db->path, sizeof db->path, "%s", path);
    if (sqlite3_open_v2(path, &db->h, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        rdb_fail(db, "cannot open the registry", err, errlen);
        rdb_close(db);
        return -1;
    }
    sqlite3_busy_timeout(db->h, 10000);
    /* a file that is not a registry fails here with a clear message */
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db->h, "SELECT count(*) FROM runs", -1, &st, NULL) != SQLITE_OK) {
        rdb_fail(db, "not a gatelab registry (no runs table)", err, errlen);
        sqlite3_finalize(st);
        rdb_close(db);
        return -1;
    }
    sqlite3_finalize(st);
    *out = db;
    return 0;
}

void rdb_close(rdb *db) {
    if (!db) return;
    sqlite3_close(db->h);
    free(db);
}

static sqlite3_stmt *rdb_prepare(rdb *db, const char *sql, char *err, size_t errlen) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db->h, sql, -1, &st, NULL) != SQLITE_OK) {
        rdb_fail(db, "cannot prepare a query", err, errlen);
        sqlite3_finalize(st);
        return NULL;
    }
    return st;
}

static void rdb_text(char *dst, size_t n, sqlite3_stmt *st, int col) {
    const unsigned char *t = sqlite3_column_text(st, col);
    snprintf(dst, n, "%s", t ? (const char *)t : "");
}

static double rdb_real(sqlite3_stmt *st, int col) {
    return sqlite3_column_type(st, col) == SQLITE_NULL ? NAN : sqlite3_column_double(st, col);
}

int rdb_runs(rdb *db, const char *experiment, const char *status, rdb_run **runs, int *n, char *err, size_t errlen) {
    *runs = NULL;
    *n = 0;
    sqlite3_stmt *st = rdb_prepare(db,
                                   "SELECT r.run_id, e.name, r.status FROM runs r JOIN experiments e ON e.id = r.experiment_id "
                                   "WHERE (?1 IS NULL OR e.name = ?1) AND (?2 IS NULL OR r.status = ?2) "
                                   "ORDER BY e.name, r.run_id",
                                   err, errlen);
    if (!st) return -1;
    if (experiment) sqlite3_bind_text(st, 1, experiment, -1, SQLITE_TRANSIENT);
    if (status) sqlite3_bind_text(st, 2, status, -1, SQLITE_TRANSIENT);
    int cap = 0, k = 0, rc;
    rdb_run *v = NULL;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (k == cap) {
            cap = cap ? 2 * cap : 16;
            rdb_run *nv = realloc(v, (size_t)cap * sizeof *nv);
            if (!nv) {
                free(v);
                sqlite3_finalize(st);
                snprintf(err, errlen, "out of memory listing runs");
                return -1;
            }
            v = nv;
        }
        rdb_text(v[k].run_id, sizeof v[k].run_id, st, 0);
        rdb_text(v[k].experiment, sizeof v[k].experiment, st, 1);
        rdb_text(v[k].status, sizeof v[k].status, st, 2);
        k++;
    }
    if (rc != SQLITE_DONE) {
        rdb_fail(db, "cannot list runs", err, errlen);
        free(v);
        sqlite3_finalize(st);
        return -1;
    }
    sqlite3_finalize(st);
    *runs = v;
    *n = k;
    return 0;
}

int rdb_param(rdb *db, const char *run_id, const char *key, char *value, size_t valuelen, char *err, size_t errlen) {
    sqlite3_stmt *st = rdb_prepare(db, "SELECT value FROM params WHERE run_id = ?1 AND key = ?2", err, errlen);
    if (!st) return -1;
    sqlite3_bind_text(st, 1, run_id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, key, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(st), found = 0;
    if (rc == SQLITE_ROW) {
        rdb_text(value, valuelen, st, 0);
        found = 1;
    } else if (rc != SQLITE_DONE) {
        found = rdb_fail(db, "cannot read a parameter", err, errlen);
    }
    sqlite3_finalize(st);
    return found;
}

int rdb_metric_last(rdb *db, const char *run_id, const char *split, const char *name, double *value, long *step,
                    char *err, size_t errlen) {
    sqlite3_stmt *st = rdb_prepare(db,
                                   "SELECT value, step FROM metrics WHERE run_id = ?1 AND split = ?2 AND name = ?3 "
                                   "ORDER BY step DESC LIMIT 1",
                                   err, errlen);
    if (!st) return -1;
    sqlite3_bind_text(st, 1, run_id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, split, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 3, name, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(st), found = 0;
    if (rc == SQLITE_ROW) {
        *value = rdb_real(st, 0);
        if (step) *step = (long)sqlite3_column_int64(st, 1);
        found = 1;
    } else if (rc != SQLITE_DONE) {
        found = rdb_fail(db, "cannot read a metric", err, errlen);
    }
    sqlite3_finalize(st);
    return found;
}

int rdb_metric_mean(rdb *db, const char *run_id, const char *split, const char *name, long after_step, double *value,
                    char *err, size_t errlen) {
    sqlite3_stmt *st = rdb_prepare(db,
                                   "SELECT avg(value), count(value) FROM metrics WHERE run_id = ?1 AND split = ?2 "
                                   "AND name = ?3 AND step > ?4",
                                   err, errlen);
    if (!st) return -1;
    sqlite3_bind_text(st, 1, run_id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, split, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 3, name, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 4, after_step);
    int rc = sqlite3_step(st), found = 0;
    if (rc == SQLITE_ROW) {
        found = sqlite3_column_int64(st, 1) > 0;
        if (found) *value = sqlite3_column_double(st, 0);
    } else {
        found = rdb_fail(db, "cannot average a metric", err, errlen);
    }
    sqlite3_finalize(st);
    return found;
}

int rdb_metric_series(rdb *db, const char *run_id, const char *split, const char *name, rdb_point **pts, int *n,
                      char *err, size_t errlen) {
    *pts = NULL;
    *n = 0;
    sqlite3_stmt *st = rdb_prepare(db,
                                   "SELECT step, value, wall_time FROM metrics WHERE run_id = ?1 AND split = ?2 "
                                   "AND name = ?3 ORDER BY step",
                                   err, errlen);
    if (!st) return -1;
    sqlite3_bind_text(st, 1, run_id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, split, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 3, name, -1, SQLITE_TRANSIENT);
    int cap = 0, k = 0, rc;
    rdb_point *v = NULL;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (k == cap) {
            cap = cap ? 2 * cap : 64;
            rdb_point *nv = realloc(v, (size_t)cap * sizeof *nv);
            if (!nv) {
                free(v);
                sqlite3_finalize(st);
                snprintf(err, errlen, "out of memory reading %s/%s", split, name);
                return -1;
            }
            v = nv;
        }
        v[k].step = (long)sqlite3_column_int64(st, 0);
        v[k].value = rdb_real(st, 1);
        v[k].wall_time = sqlite3_column_double(st, 2);
        k++;
    }
    if (rc != SQLITE_DONE) {
        rdb_fail(db, "cannot read a metric series", err, errlen);
        free(v);
        sqlite3_finalize(st);
        return -1;
    }
    sqlite3_finalize(st);
    *pts = v;
    *n = k;
    return 0;
}

int rdb_split_metrics(rdb *db, const char *run_id, const char *split, rdb_named **rows, int *n, char *err,
                      size_t errlen) {
    *rows = NULL;
    *n = 0;
    sqlite3_stmt *st = rdb_prepare(db,
                                   "SELECT m.name, m.value, m.step FROM metrics m WHERE m.run_id = ?1 AND m.split = ?2 "
                                   "AND m.step = (SELECT max(step) FROM metrics x WHERE x.run_id = m.run_id "
                                   "AND x.split = m.split AND x.name = m.name) ORDER BY m.name",
                                   err, errlen);
    if (!st) return -1;
    sqlite3_bind_text(st, 1, run_id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, split, -1, SQLITE_TRANSIENT);
    int cap = 0, k = 0, rc;
    rdb_named *v = NULL;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (k == cap) {
            cap = cap ? 2 * cap : 64;
            rdb_named *nv = realloc(v, (size_t)cap * sizeof *nv);
            if (!nv) {
                free(v);
                sqlite3_finalize(st);
                snprintf(err, errlen, "out of memory reading split %s", split);
                return -1;
            }
            v = nv;
        }
        rdb_text(v[k].name, sizeof v[k].name, st, 0);
        v[k].value = rdb_real(st, 1);
        v[k].step = (long)sqlite3_column_int64(st, 2);
        k++;
    }
    if (rc != SQLITE_DONE) {
        rdb_fail(db, "cannot read a split's metrics", err, errlen);
        free(v);
        sqlite3_finalize(st);
        return -1;
    }
    sqlite3_finalize(st);
    *rows = v;
    *n = k;
    return 0;
}

int rdb_run_t0(rdb *db, const char *run_id, double *t0, char *err, size_t errlen) {
    sqlite3_stmt *st = rdb_prepare(db, "SELECT min(wall_time) FROM metrics WHERE run_id = ?1 AND split IN ('train','val')",
                                   err, errlen);
    if (!st) return -1;
    sqlite3_bind_text(st, 1, run_id, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(st), found = 0;
    if (rc == SQLITE_ROW) {
        found = sqlite3_column_type(st, 0) != SQLITE_NULL;
        if (found) *t0 = sqlite3_column_double(st, 0);
    } else {
        found = rdb_fail(db, "cannot read wall times", err, errlen);
    }
    sqlite3_finalize(st);
    return found;
}
