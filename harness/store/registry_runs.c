/*
 * registry_runs.c — the registry read by run: the listing behind `gatelab
 * runs`, tables, figures and reports (db_runs_find, db_runs_list: the
 * headline validation numbers, the variant label, tags, soft-deleted runs
 * left out), tags and soft delete (db_tag_set, db_tag_remove,
 * db_run_set_deleted), the whole-run readers of `compare` and
 * `metrics` (db_params_all, db_metrics_each, in the stored long form), and
 * the names a command line may use (db_names: run ids and experiments, for
 * harness/cli/resolve.c's prefixes and did-you-mean).
 *
 * What it does not do: open, create or upgrade the file, or write metrics
 * (registry.c), or format anything (the commands print).  The variant label
 * is the view run_variant's (scripts/python/gatelab/views.sql), the label every
 * view prints, so `runs`, `tables` and the Python package name a run alike.  Contracts in registry.h.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "registry_sql.h"

/* ---- listing ---- */

static int db_row_headline(sqlite3_stmt *st, void *ctx, char *err, size_t errlen) {
    gl_headline *h = ctx;
    char source[16] = "";
    (void)err, (void)errlen;
    db_col_text(st, 0, source, sizeof source);
    h->kind = !strcmp(source, "hard") ? HEADLINE_HARD : !strcmp(source, "hard_missing") ? HEADLINE_HARD_MISSING
                                                                                        : HEADLINE_FINAL;
    h->prefix = h->kind == HEADLINE_HARD ? "hard" : "final";
    h->loss.step = (long)sqlite3_column_int64(st, 1);
    h->loss.prov = db_col_prov(st, 2);
    h->soft_loss = db_col_real(st, 8);
    /* HARD_MISSING: the soft loss stands in the loss, without its standard error */
    h->loss.value = h->kind == HEADLINE_HARD_MISSING ? h->soft_loss : db_col_real(st, 6);
    h->loss.se = db_col_real(st, 7);
    return 0;
}

int db_run_headline(gl_db *db, const char *run_id, const char *split, gl_headline *h, char *err, size_t errlen) {
    memset(h, 0, sizeof *h);
    h->prefix = "final";
    h->soft_loss = h->loss.value = h->loss.se = NAN;
    h->loss.step = -1;
    /* the view run_headline (registry_views.c), the rule's one statement; its periodic rows are no headline */
    return db_query_one(db, "cannot read a run's headline",
                        "SELECT source, step, data_split, win_first, win_count, tokens, loss, loss_se, soft_loss "
                        "FROM run_headline WHERE run_id = ?1 AND split = ?2 AND source <> 'periodic'",
                        db_row_headline, h, err, errlen, "tt", run_id, split) < 0 ? -1 : 0;
}

/* The variant label: the registry's view run_variant (registry_views.c), the one rule every view prints. */
#define DB_VARIANT "(SELECT label FROM run_variant v WHERE v.run_id = r.run_id)"

/* The columns of a gl_run_row, in the order db_runs_row reads them. */
#define DB_RUN_COLUMNS                                                                                             \
    "SELECT r.run_id, e.name, r.name, r.status, "                                                                  \
    "(SELECT max(step) FROM metrics m WHERE m.run_id = r.run_id), " DB_LAST("split='train' AND name='loss'")        \
    ", " DB_LAST("split='val' AND name='loss'") ", " DB_LAST("name='active_frac'") ", " DB_LAST("name='tlops_saved'") \
    ", " DB_LAST("name='tokens_per_s'") ", r.start_time, r.end_time, r.heartbeat, r.exit_code, r.error, "          \
    DB_VARIANT ", (SELECT group_concat(kv, char(10)) FROM (SELECT t.key || '=' || t.value AS kv FROM tags t "           \
    "WHERE t.run_id = r.run_id ORDER BY t.key)), r.deleted_time, r.host, r.attempts, "                             \
    "h.source, h.step, h.data_split, h.win_first, h.win_count, h.tokens, h.loss, h.loss_se, h.soft_loss, "         \
    "h.active_frac, h.tlops_saved "                                                                                \
    "FROM runs r JOIN experiments e ON e.id = r.experiment_id LEFT JOIN hv h ON h.run_id = r.run_id "
/* "last" metric: the largest step; at equal steps a val row before a train row.  Bare names only. */
#define DB_LAST(where)                                                                                             \
    "(SELECT value FROM metrics m WHERE m.run_id = r.run_id AND m.params = '{}' AND " where                        \
    " ORDER BY step DESC, (split='val') DESC LIMIT 1)"

/* One gl_run_row from a DB_RUN_COLUMNS statement. */
static void db_runs_row(sqlite3_stmt *st, gl_run_row *r) {
    memset(r, 0, sizeof *r);
    db_col_text(st, 0, r->run_id, sizeof r->run_id);
    db_col_text(st, 1, r->experiment, sizeof r->experiment);
    db_col_text(st, 2, r->name, sizeof r->name);
    db_col_text(st, 3, r->status, sizeof r->status);
    r->step = sqlite3_column_type(st, 4) == SQLITE_NULL ? -1 : (long)sqlite3_column_int64(st, 4);
    r->train_loss = db_col_real(st, 5);
    r->val_loss = db_col_real(st, 6);
    r->active_frac = db_col_real(st, 7);
    r->tlops_saved = db_col_real(st, 8);
    r->tokens_per_s = db_col_real(st, 9);
    r->start_time = db_col_real(st, 10);
    r->end_time = db_col_real(st, 11);
    r->heartbeat = db_col_real(st, 12);
    r->exit_code = sqlite3_column_type(st, 13) == SQLITE_NULL ? -1 : sqlite3_column_int(st, 13);
    db_col_text(st, 14, r->error, sizeof r->error);
    db_col_text(st, 15, r->variant, sizeof r->variant);
    db_col_text(st, 16, r->tags, sizeof r->tags);
    r->deleted_time = db_col_real(st, 17);
    db_col_text(st, 18, r->host, sizeof r->host);
    r->attempts = sqlite3_column_int(st, 19);
    /* the validation numbers: run_headline's (the headline, else the last periodic evaluation) */
    char source[16] = "";
    db_col_text(st, 20, source, sizeof source);
    static const char *const kinds[] = {"", "final", "hard", "hard_missing"};
    r->val_kind = HEADLINE_NONE;
    for (int k = 1; k < 4; k++)
        if (!strcmp(source, kinds[k])) r->val_kind = k;
    r->val_headline = r->val_kind != HEADLINE_NONE;
    r->val_step = source[0] ? (long)sqlite3_column_int64(st, 21) : -1;
    if (source[0]) r->val_prov = db_col_prov(st, 22);
    r->val_loss = db_col_real(st, 26);
    r->val_se = db_col_real(st, 27);
    r->val_soft = db_col_real(st, 28);
    if (r->val_headline) { /* the headline's α and TLOps; else the last of any split (DB_LAST above) */
        double a = db_col_real(st, 29), t = db_col_real(st, 30);
        if (!isnan(a)) r->active_frac = a;
        if (!isnan(t)) r->tlops_saved = t;
    }
}

#define DB_MAX_TAG_FILTERS 16

int db_runs_find(gl_db *db, const gl_run_filter *f, gl_run_row **rows, int *n, char *err, size_t errlen) {
    int rc = -1, cap = 0, count = 0, s;
    gl_run_row *out = NULL;
    sqlite3_stmt *st = NULL;
    char sql[8192];
    *rows = NULL;
    *n = 0;
    if (f->ntags > DB_MAX_TAG_FILTERS) {
        snprintf(err, errlen, "%s: at most %d tag filters", db->path, DB_MAX_TAG_FILTERS);
        return -1;
    }
    /* hv: run_headline's val rows of the runs the filters on experiment, status and id leave, joined
     * inside (a view on the right of a LEFT JOIN is computed whole; inside a join it reads those runs) */
    const int id = 3 + 2 * f->ntags;
    int len = snprintf(sql, sizeof sql, "WITH hv AS MATERIALIZED (SELECT h.* FROM runs r JOIN experiments e ON "
                       "e.id = r.experiment_id JOIN run_headline h ON h.run_id = r.run_id AND h.split = 'val' "
                       "WHERE (?1 IS NULL OR e.name = ?1) AND (?2 IS NULL OR r.status = ?2) "
                       "AND (?%d IS NULL OR r.run_id = ?%d)) "
                       "%s WHERE (?1 IS NULL OR e.name = ?1) AND (?2 IS NULL OR r.status = ?2) "
                       "AND (?%d IS NULL OR r.run_id = ?%d)%s",
                       id, id, DB_RUN_COLUMNS, id, id, f->deleted ? "" : " AND r.deleted_time IS NULL");
    for (int i = 0; i < f->ntags; i++)
        len += snprintf(sql + len, sizeof sql - (size_t)len,
                        " AND EXISTS (SELECT 1 FROM tags t WHERE t.run_id = r.run_id AND t.key = ?%d AND t.value = ?%d)",
                        3 + 2 * i, 4 + 2 * i);
    snprintf(sql + len, sizeof sql - (size_t)len, " ORDER BY e.name, r.run_id");
    if (!(st = db_prepare(db, sql, err, errlen))) return -1;
    db_bind_text_or_null(st, 1, f->experiment);
    db_bind_text_or_null(st, 2, f->status);
    db_bind_text_or_null(st, 3 + 2 * f->ntags, f->run_id);
    for (int i = 0; i < f->ntags; i++) {
        const char *eq = strchr(f->tags[i], '=');
        if (!eq || eq == f->tags[i]) {
            snprintf(err, errlen, "tag filter '%s': write it as key=value", f->tags[i]);
            goto cleanup;
        }
        sqlite3_bind_text(st, 3 + 2 * i, f->tags[i], (int)(eq - f->tags[i]), SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 4 + 2 * i, eq + 1, -1, SQLITE_TRANSIENT);
    }
    while ((s = sqlite3_step(st)) == SQLITE_ROW) {
        if (db_grow((void **)&out, count, &cap, sizeof *out)) {
            snprintf(err, errlen, "%s: out of memory listing runs", db->path);
            goto cleanup;
        }
        db_runs_row(st, &out[count++]);
    }
    if (s != SQLITE_DONE) { db_fail(db, "cannot list runs", err, errlen); goto cleanup; }
    *rows = out;
    *n = count;
    out = NULL;
    rc = 0;
cleanup:
    sqlite3_finalize(st);
    free(out);
    return rc;
}

int db_runs_list(gl_db *db, const char *experiment, const char *status, gl_run_row **rows, int *n,
                 char *err, size_t errlen) {
    gl_run_filter f = {.experiment = experiment, .status = status};
    return db_runs_find(db, &f, rows, n, err, errlen);
}

/* ---- tags and soft delete ---- */

/* 1 when key is letters, digits, '_', '-', '.' (1..63 bytes). */
static int db_tag_key_ok(const char *key) {
    size_t n = strlen(key);
    if (!n || n > 63) return 0;
    for (; *key; key++)
        if (!((*key >= 'a' && *key <= 'z') || (*key >= 'A' && *key <= 'Z') || (*key >= '0' && *key <= '9') ||
              *key == '_' || *key == '-' || *key == '.'))
            return 0;
    return 1;
}

/* Run one write statement on run_id (?1) in its own transaction, after
 * checking the run exists.  *changes gets the rows changed. */
static int db_run_write(gl_db *db, const char *run_id, const char *what, int *changes, const char *sql, char *err,
                        size_t errlen, const char *types, ...) {
    char status[16];
    int e = db_run_exists(db, run_id, status, err, errlen);
    if (e < 0) return -1;
    if (!e) {
        snprintf(err, errlen, "%s: %s: run %s is not in the registry (see gatelab runs --db %s)", db->path, what,
                 run_id, db->path);
        return -1;
    }
    if (db_begin(db, err, errlen)) return -1;
    va_list ap;
    va_start(ap, types);
    int rc = db_query_v(db, 1, what, sql, NULL, NULL, err, errlen, types, ap);
    va_end(ap);
    if (rc < 0 || db_commit(db, err, errlen)) {
        db_rollback(db);
        return -1;
    }
    if (changes) *changes = db->changes;
    return 0;
}

/* The tags of a run: how many, and whether key is one of them. */
static int db_row_tag_count(sqlite3_stmt *st, void *ctx, char *err, size_t errlen) {
    (void)err, (void)errlen;
    ((int *)ctx)[0] = sqlite3_column_int(st, 0);
    ((int *)ctx)[1] = sqlite3_column_int(st, 1);
    return 0;
}

int db_tag_set(gl_db *db, const char *run_id, const char *key, const char *value, char *err, size_t errlen) {
    if (!db_tag_key_ok(key)) {
        snprintf(err, errlen, "tag key '%s': use 1-63 letters, digits, '_', '-' or '.'", key);
        return -1;
    }
    if (!value || strpbrk(value, "\n\r")) {
        snprintf(err, errlen, "tag %s: the value must be one line of text", key);
        return -1;
    }
    if (strlen(value) > DB_TAG_VALUE_MAX) {
        snprintf(err, errlen, "tag %s: the value is %zu bytes, more than the %d a tag may hold", key, strlen(value),
                 DB_TAG_VALUE_MAX);
        return -1;
    }
    int count[2] = {0, 0}; /* tags, of which key */
    if (db_query_one(db, "cannot count a run's tags", "SELECT count(*), sum(key = ?2) FROM tags WHERE run_id = ?1",
                     db_row_tag_count, count, err, errlen, "tt", run_id, key) < 0)
        return -1;
    const int have = count[0], same = count[1];
    if (have >= DB_TAGS_PER_RUN && !same) {
        snprintf(err, errlen, "tag %s: run %s already has %d tags, the most a run may carry; remove one first "
                 "(gatelab tag %s --remove KEY)", key, run_id, have, run_id);
        return -1;
    }
    return db_run_write(db, run_id, "cannot set a tag", NULL,
                        "INSERT OR REPLACE INTO tags (run_id, key, value) VALUES (?1, ?2, ?3)", err, errlen, "ttt",
                        run_id, key, value);
}

int db_tag_remove(gl_db *db, const char *run_id, const char *key, char *err, size_t errlen) {
    int changes = 0;
    int rc = db_run_write(db, run_id, "cannot remove a tag", &changes, "DELETE FROM tags WHERE run_id = ?1 AND key = ?2",
                          err, errlen, "tt", run_id, key);
    return rc ? -1 : changes > 0;
}

int db_run_set_deleted(gl_db *db, const char *run_id, int deleted, char *err, size_t errlen) {
    return db_run_write(db, run_id, deleted ? "cannot delete the run" : "cannot restore the run", NULL,
                        deleted ? "UPDATE runs SET deleted_time = coalesce(deleted_time, ?2) WHERE run_id = ?1"
                                : "UPDATE runs SET deleted_time = NULL WHERE run_id = ?1",
                        err, errlen, deleted ? "td" : "t", run_id, db_now());
}

/* ---- reading a run's params and metrics whole ---- */

int db_params_all(gl_db *db, const char *run_id, gl_param **out, int *n, char *err, size_t errlen) {
    int rc = -1, k = 0, cap = 0, s;
    gl_param *v = NULL;
    *out = NULL;
    *n = 0;
    sqlite3_stmt *st = db_prepare(db, "SELECT key, value FROM params WHERE run_id = ?1 ORDER BY key", err, errlen);
    if (!st) return -1;
    sqlite3_bind_text(st, 1, run_id, -1, SQLITE_TRANSIENT);
    while ((s = sqlite3_step(st)) == SQLITE_ROW) {
        if (db_grow((void **)&v, k, &cap, sizeof *v)) {
            snprintf(err, errlen, "%s: out of memory reading the params of run %s", db->path, run_id);
            goto cleanup;
        }
        db_col_text(st, 0, v[k].key, sizeof v[k].key);
        db_col_text(st, 1, v[k].value, sizeof v[k].value);
        k++;
    }
    if (s != SQLITE_DONE) { db_fail(db, "cannot read params", err, errlen); goto cleanup; }
    *out = v;
    *n = k;
    v = NULL;
    rc = 0;
cleanup:
    sqlite3_finalize(st);
    free(v);
    return rc;
}

typedef struct {
    int (*fn)(const gl_metric_long *row, void *ctx);
    void *ctx;
    int stop; /* what fn returned to stop the walk */
} db_metrics_walk;

static int db_row_metric_long(sqlite3_stmt *st, void *ctx, char *err, size_t errlen) {
    db_metrics_walk *w = ctx;
    gl_metric_long row;
    const char *t[6];
    (void)err, (void)errlen;
    for (int i = 0; i < 6; i++) {
        t[i] = (const char *)sqlite3_column_text(st, i);
        if (!t[i]) t[i] = "";
    }
    row.run_id = t[0], row.experiment = t[1], row.variant = t[2], row.split = t[3], row.name = t[4];
    row.params = t[5];
    row.step = (long)sqlite3_column_int64(st, 6);
    row.value = db_col_real(st, 7);
    row.se = db_col_real(st, 8);
    row.wall_time = db_col_real(st, 9);
    row.prov = db_col_prov(st, 10);
    w->stop = w->fn(&row, w->ctx);
    return w->stop ? 1 : 0;
}

int db_metrics_each(gl_db *db, const gl_metric_filter *f, int (*fn)(const gl_metric_long *row, void *ctx),
                    void *ctx, char *err, size_t errlen) {
    db_metrics_walk w = {fn, ctx, 0};
    int rc = db_query_each(
        db, "cannot read metrics",
        "SELECT r.run_id, e.name, " DB_VARIANT ", m.split, m.name, m.params, m.step, m.value, m.se, m.wall_time, "
        "m.data_split, m.win_first, m.win_count, m.tokens FROM metrics m JOIN runs r ON r.run_id = m.run_id "
        "JOIN experiments e ON e.id = r.experiment_id WHERE r.deleted_time IS NULL AND (?1 IS NULL OR e.name = ?1) "
        "AND (?2 IS NULL OR r.run_id = ?2) AND (?3 IS NULL OR m.split = ?3) AND (?4 IS NULL OR m.name GLOB ?4) "
        "ORDER BY e.name, r.run_id, m.split, m.name, m.params, m.step, m.win_count DESC",
        db_row_metric_long, &w, err, errlen, "tttt", f->experiment, f->run_id, f->split, f->name_glob);
    return rc < 0 ? -1 : w.stop;
}

/* ---- the names a command line may use ---- */

static int db_fill_name(const db_rows *r, sqlite3_stmt *st, void *elem, char *err, size_t errlen) {
    gl_name *v = elem;
    (void)r, (void)err, (void)errlen;
    db_col_text(st, 0, v->name, sizeof v->name);
    v->deleted = sqlite3_column_int(st, 1);
    return 0;
}

int db_names(gl_db *db, gl_name_kind kind, gl_name **out, int *n, char *err, size_t errlen) {
    db_rows r = {.db = db, .size = sizeof **out, .fill = db_fill_name};
    int rc = db_query_each(db, kind == DB_NAMES_RUNS ? "cannot list run ids" : "cannot list experiments",
                           kind == DB_NAMES_RUNS
                               ? "SELECT run_id, deleted_time IS NOT NULL FROM runs ORDER BY run_id"
                               : "SELECT name, 0 FROM experiments e WHERE EXISTS (SELECT 1 FROM runs r WHERE "
                                 "r.experiment_id = e.id) ORDER BY name",
                           db_rows_add, &r, err, errlen, "");
    return db_rows_take(&r, rc, (void **)out, n);
}
