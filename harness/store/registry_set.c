/*
 * registry_set.c — a run set read whole: every run a filter selects (status, experiment, experiment
 * prefix; soft-deleted runs only when asked), one statement per kind of row — the runs with their variant
 * (run_variant) and stored config, their params, their headlines (run_headline), the latest rows of
 * named splits, one metric's series, their events of one kind — each row handed to the
 * caller's function in run-id order.  What analysis/runs/runset.c builds its rows from: a handful of
 * statements for a registry, not a few dozen per run.
 *
 * What it does not do: decide anything about a run (the headline and label rules are the views',
 * registry_views.c; groups and partners are runset.c's), or keep rows (the caller copies what it
 * needs; a row's strings live until fn returns).  Contracts in registry.h.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "registry_sql.h"

/* The runs a gl_set_filter selects: statements join runs r and experiments e (DB_SET_JOIN) and end with
 * DB_SET_WHERE, which binds ?1 status, ?2 experiment, ?3 prefix (NULL: any), ?4 deleted (1: soft-deleted
 * runs too); a reader's own parameters are ?5 on. */
#define DB_SET_JOIN " FROM runs r JOIN experiments e ON e.id = r.experiment_id "
#define DB_SET_WHERE                                                                                               \
    " WHERE (?4 OR r.deleted_time IS NULL) AND (?1 IS NULL OR r.status = ?1) AND (?2 IS NULL OR e.name = ?2) "     \
    "AND (?3 IS NULL OR substr(e.name, 1, length(?3)) = ?3) "

static const char *db_set_prefix(const gl_set_filter *f) { return f->prefix && *f->prefix ? f->prefix : NULL; }

static const char *db_txt(sqlite3_stmt *st, int i) {
    const char *t = (const char *)sqlite3_column_text(st, i);
    return t ? t : "";
}

/* ---- the runs ---- */

typedef struct {
    int (*fn)(const gl_set_run *r, void *ctx);
    void *ctx;
} db_set_runs_walk;

static int db_row_set_run(sqlite3_stmt *st, void *ctx, char *err, size_t errlen) {
    const db_set_runs_walk *w = ctx;
    gl_set_run r = {.run_id = db_txt(st, 0), .experiment = db_txt(st, 1), .config = db_txt(st, 2),
                    .commit = db_txt(st, 3),
                    .dirty = sqlite3_column_type(st, 4) == SQLITE_NULL ? -1 : sqlite3_column_int(st, 4),
                    .variant = db_txt(st, 5), .value_residual = db_txt(st, 6), .depth_routing = db_txt(st, 7),
                    .cross_layer = db_txt(st, 8)};
    (void)err, (void)errlen;
    return w->fn(&r, w->ctx) ? -1 : 0;
}

int db_set_runs(gl_db *db, const gl_set_filter *f, int (*fn)(const gl_set_run *r, void *ctx), void *ctx, char *err,
                size_t errlen) {
    db_set_runs_walk w = {fn, ctx};
    return db_query_each(db, "cannot list a run set",
                         "SELECT r.run_id, e.name, r.config_text, r.git_commit, r.git_dirty, v.label, v.value_residual, "
                         "v.depth_routing, v.cross_layer" DB_SET_JOIN "JOIN run_variant v ON v.run_id = r.run_id"
                         DB_SET_WHERE "ORDER BY e.name, r.run_id",
                         db_row_set_run, &w, err, errlen, "ttti", f->status, f->experiment, db_set_prefix(f), f->deleted) < 0
               ? -1 : 0;
}

/* ---- params ---- */

typedef struct {
    int (*fn)(const char *run_id, const char *key, const char *value, void *ctx);
    void *ctx;
} db_set_params_walk;

static int db_row_set_param(sqlite3_stmt *st, void *ctx, char *err, size_t errlen) {
    const db_set_params_walk *w = ctx;
    (void)err, (void)errlen;
    return w->fn(db_txt(st, 0), db_txt(st, 1), db_txt(st, 2), w->ctx) ? -1 : 0;
}

int db_set_params(gl_db *db, const gl_set_filter *f,
                  int (*fn)(const char *run_id, const char *key, const char *value, void *ctx), void *ctx, char *err,
                  size_t errlen) {
    db_set_params_walk w = {fn, ctx};
    return db_query_each(db, "cannot read a run set's params",
                         "SELECT p.run_id, p.key, p.value" DB_SET_JOIN "JOIN params p ON p.run_id = r.run_id"
                         DB_SET_WHERE "ORDER BY p.run_id, p.key",
                         db_row_set_param, &w, err, errlen, "ttti", f->status, f->experiment, db_set_prefix(f), f->deleted) < 0
               ? -1 : 0;
}

/* ---- headlines ---- */

typedef struct {
    int (*fn)(const gl_set_headline *h, void *ctx);
    void *ctx;
} db_set_head_walk;

static int db_row_set_head(sqlite3_stmt *st, void *ctx, char *err, size_t errlen) {
    const db_set_head_walk *w = ctx;
    gl_set_headline h = {.run_id = db_txt(st, 0), .source = db_txt(st, 1), .step = (long)sqlite3_column_int64(st, 2),
                         .prov = db_col_prov(st, 3)};
    double *v[] = {&h.loss, &h.loss_se, &h.soft_loss, &h.bpc, &h.token_acc, &h.seq_acc,
                   &h.active_frac, &h.tlops_saved, &h.hard_loss, &h.hard_active_frac};
    for (int k = 0; k < (int)(sizeof v / sizeof v[0]); k++) *v[k] = db_col_real(st, 7 + k);
    (void)err, (void)errlen;
    return w->fn(&h, w->ctx) ? -1 : 0;
}

int db_set_headlines(gl_db *db, const gl_set_filter *f, const char *split,
                     int (*fn)(const gl_set_headline *h, void *ctx), void *ctx, char *err, size_t errlen) {
    db_set_head_walk w = {fn, ctx};
    return db_query_each(db, "cannot read a run set's headlines",
                         "SELECT h.run_id, h.source, h.step, h.data_split, h.win_first, h.win_count, h.tokens, h.loss, "
                         "h.loss_se, h.soft_loss, h.bpc, h.token_acc, h.seq_acc, h.active_frac, h.tlops_saved, "
                         "h.hard_loss, h.hard_active_frac" DB_SET_JOIN
                         "JOIN run_headline h ON h.run_id = r.run_id AND h.split = ?5" DB_SET_WHERE "ORDER BY h.run_id",
                         db_row_set_head, &w, err, errlen, "tttit", f->status, f->experiment, db_set_prefix(f), f->deleted,
                         split) < 0
               ? -1 : 0;
}

/* ---- the latest rows of splits ---- */

typedef struct {
    gl_db *db;
    int (*fn)(const char *run_id, const char *split, const gl_metric_latest *row, void *ctx);
    void *ctx;
} db_set_latest_walk;

static int db_row_set_latest(sqlite3_stmt *st, void *ctx, char *err, size_t errlen) {
    const db_set_latest_walk *w = ctx;
    gl_metric_latest v;
    const char *name = db_txt(st, 2), *params = db_txt(st, 10);
    if (strlen(name) >= sizeof v.key.name || strlen(params) >= sizeof v.key.params) {
        snprintf(err, errlen, "%s: run %s: metric %s/%s %s is longer than this gatelab reads (%d bytes, params %d)",
                 w->db->path, db_txt(st, 0), db_txt(st, 1), name, params, (int)sizeof v.key.name - 1,
                 (int)sizeof v.key.params - 1);
        return -1;
    }
    strcpy(v.key.name, name);
    strcpy(v.key.params, params);
    v.value = db_col_real(st, 3);
    v.step = (long)sqlite3_column_int64(st, 4);
    v.prov = db_col_prov(st, 5);
    v.se = db_col_real(st, 9);
    return w->fn(db_txt(st, 0), db_txt(st, 1), &v, w->ctx) ? -1 : 0;
}

int db_set_latest(gl_db *db, const gl_set_filter *f, const char *splits,
                  int (*fn)(const char *run_id, const char *split, const gl_metric_latest *row, void *ctx), void *ctx,
                  char *err, size_t errlen) {
    db_set_latest_walk w = {db, fn, ctx};
    /* db_metrics_latest's rows for every run and split at once: per (name, params, windows) the row at
     * its largest step; listed by run, split, name, params, then the most windows first.  The index is
     * named: without statistics SQLite reads the primary key, whose (run_id, step, …) order makes the
     * max(step) a scan of the run's rows (1.2 s instead of 0.2 s on the decisive registry) */
    return db_query_each(db, "cannot read a run set's metrics",
                         "SELECT m.run_id, m.split, m.name, m.value, m.step, m.data_split, m.win_first, m.win_count, "
                         "m.tokens, m.se, m.params" DB_SET_JOIN "JOIN metrics m ON m.run_id = r.run_id "
                         "AND instr(',' || ?5 || ',', ',' || m.split || ',') > 0 "
                         "AND m.step = (SELECT max(step) FROM metrics x INDEXED BY metrics_by_name WHERE x.run_id = m.run_id "
                         "AND x.split = m.split AND x.name = m.name AND x.params = m.params "
                         "AND x.data_split = m.data_split AND x.win_first = m.win_first AND x.win_count = m.win_count)"
                         DB_SET_WHERE "ORDER BY m.run_id, m.split, m.name, m.params, m.win_count DESC, m.step DESC",
                         db_row_set_latest, &w, err, errlen, "tttit", f->status, f->experiment, db_set_prefix(f), f->deleted,
                         splits) < 0
               ? -1 : 0;
}

/* ---- one metric's series ---- */

typedef struct {
    int (*fn)(const char *run_id, const gl_metric_point *p, void *ctx);
    void *ctx;
} db_set_series_walk;

static int db_row_set_point(sqlite3_stmt *st, void *ctx, char *err, size_t errlen) {
    const db_set_series_walk *w = ctx;
    gl_metric_point p = {.step = (long)sqlite3_column_int64(st, 1), .value = db_col_real(st, 2),
                         .wall_time = sqlite3_column_double(st, 3), .prov = db_col_prov(st, 4)};
    (void)err, (void)errlen;
    return w->fn(db_txt(st, 0), &p, w->ctx) ? -1 : 0;
}

int db_set_series(gl_db *db, const gl_set_filter *f, const char *split, const char *name,
                  int (*fn)(const char *run_id, const gl_metric_point *p, void *ctx), void *ctx, char *err,
                  size_t errlen) {
    db_set_series_walk w = {fn, ctx};
    return db_query_each(db, "cannot read a run set's series",
                         "SELECT m.run_id, m.step, m.value, m.wall_time, m.data_split, m.win_first, m.win_count, "
                         "m.tokens" DB_SET_JOIN "JOIN metrics m ON m.run_id = r.run_id AND m.split = ?5 "
                         "AND m.name = ?6 AND m.params = '{}'" DB_SET_WHERE "ORDER BY m.run_id, m.step, m.win_count DESC",
                         db_row_set_point, &w, err, errlen, "tttitt", f->status, f->experiment, db_set_prefix(f), f->deleted, split,
                         name) < 0
               ? -1 : 0;
}

/* ---- events ---- */

typedef struct {
    int (*fn)(const char *run_id, const char *detail, void *ctx);
    void *ctx;
} db_set_events_walk;

static int db_row_set_event(sqlite3_stmt *st, void *ctx, char *err, size_t errlen) {
    const db_set_events_walk *w = ctx;
    (void)err, (void)errlen;
    return w->fn(db_txt(st, 0), db_txt(st, 1), w->ctx) ? -1 : 0;
}

int db_set_events(gl_db *db, const gl_set_filter *f, const char *kind,
                  int (*fn)(const char *run_id, const char *detail, void *ctx), void *ctx, char *err, size_t errlen) {
    db_set_events_walk w = {fn, ctx};
    return db_query_each(db, "cannot read a run set's events",
                         "SELECT v.run_id, v.detail" DB_SET_JOIN "JOIN run_events v ON v.run_id = r.run_id "
                         "AND v.kind = ?5" DB_SET_WHERE "ORDER BY v.run_id, v.time, v.rowid",
                         db_row_set_event, &w, err, errlen, "tttit", f->status, f->experiment, db_set_prefix(f),
                         f->deleted, kind) < 0
               ? -1 : 0;
}
