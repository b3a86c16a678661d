/*
 * registry_sql.c — the SQLite furniture every registry file shares: the
 * error message, the write transaction (BEGIN IMMEDIATE, retried while
 * busy), and one statement from prepare to finalize (db_query_one,
 * db_query_each: a bind description string and a row callback), so no
 * caller writes prepare -> bind -> step -> finalize by hand.
 *
 * The bind description follows SQLite's own habit of a small format
 * language (sqlite3_mprintf's %q and %Q): one letter per parameter, checked
 * in debug builds.  What it does not do: know any table (registry.c,
 * registry_runs.c, registry_schema.c do), or cache statements (every call
 * prepares afresh: a registry statement costs microseconds next to the
 * training step or file write around it).  Contracts in registry_sql.h.
 */
#include <assert.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "registry_sql.h"

/* err <- "<db path>: <what>: <sqlite message>". */
void db_fail(gl_db *db, const char *what, char *err, size_t errlen) {
    snprintf(err, errlen, "%s: %s: %s", db->path, what, db->h ? sqlite3_errmsg(db->h) : "not open");
}

/* Run SQL without results.  Returns 0 or -1 with a message. */
int db_exec(gl_db *db, const char *sql, const char *what, char *err, size_t errlen) {
    char *msg = NULL;
    if (sqlite3_exec(db->h, sql, NULL, NULL, &msg) != SQLITE_OK) {
        snprintf(err, errlen, "%s: %s: %s", db->path, what, msg ? msg : sqlite3_errmsg(db->h));
        sqlite3_free(msg);
        return -1;
    }
    return 0;
}

/* BEGIN IMMEDIATE, retried when the busy timeout expires (a long writer or a checkpoint). */
int db_begin(gl_db *db, char *err, size_t errlen) {
    for (int attempt = 0;; attempt++) {
        int rc = sqlite3_exec(db->h, "BEGIN IMMEDIATE", NULL, NULL, NULL);
        if (rc == SQLITE_OK) return 0;
        if ((rc & 0xff) != SQLITE_BUSY && (rc & 0xff) != SQLITE_LOCKED) break;
        if (attempt >= DB_BEGIN_RETRIES) break;
        usleep(10000u * (unsigned)(attempt + 1));
    }
    snprintf(err, errlen,
             "%s: cannot start a write transaction: %s (another process holds the write lock; "
             "is the registry on a network filesystem?)",
             db->path, sqlite3_errmsg(db->h));
    return -1;
}

int db_commit(gl_db *db, char *err, size_t errlen) {
    for (int attempt = 0;; attempt++) {
        int rc = sqlite3_exec(db->h, "COMMIT", NULL, NULL, NULL);
        if (rc == SQLITE_OK) return 0;
        if ((rc & 0xff) != SQLITE_BUSY || attempt >= DB_BEGIN_RETRIES) break;
        usleep(10000u * (unsigned)(attempt + 1));
    }
    db_fail(db, "commit failed", err, errlen);
    return -1;
}

void db_rollback(gl_db *db) {
    if (db && db->h && !sqlite3_get_autocommit(db->h)) sqlite3_exec(db->h, "ROLLBACK", NULL, NULL, NULL);
}

/* Prepare sql; on failure fill err.  Returns the statement or NULL. */
sqlite3_stmt *db_prepare(gl_db *db, const char *sql, char *err, size_t errlen) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db->h, sql, -1, &st, NULL) != SQLITE_OK) {
        db_fail(db, "cannot prepare a statement", err, errlen);
        sqlite3_finalize(st);
        return NULL;
    }
    return st;
}

void db_bind_text_or_null(sqlite3_stmt *st, int i, const char *s) {
    if (s) sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT);
    else sqlite3_bind_null(st, i);
}

/* Bind a double, or NULL when it is NaN or infinite (never stored as a number). */
void db_bind_real_or_null(sqlite3_stmt *st, int i, double v) {
    if (isfinite(v)) sqlite3_bind_double(st, i, v);
    else sqlite3_bind_null(st, i);
}

/* Bind the arguments types describes (registry_sql.h) to st: 0, or -1 for a
 * letter it does not know (a bug in the caller). */
static int db_bind_v(sqlite3_stmt *st, const char *types, va_list ap) {
    for (int i = 1; types && types[i - 1]; i++) {
        switch (types[i - 1]) {
        case 't': db_bind_text_or_null(st, i, va_arg(ap, const char *)); break;
        case 'i': sqlite3_bind_int(st, i, va_arg(ap, int)); break;
        case 'I': sqlite3_bind_int64(st, i, (sqlite3_int64)va_arg(ap, long long)); break;
        case 'r': db_bind_real_or_null(st, i, va_arg(ap, double)); break;
        case 'd': sqlite3_bind_double(st, i, va_arg(ap, double)); break;
        case '_': break;
        default: assert(!"db_query: unknown bind type"); return -1;
        }
    }
    return 0;
}

/* The body of db_query_one (one = 1) and db_query_each. */
int db_query_v(gl_db *db, int one, const char *what, const char *sql, db_row_fn row, void *ctx, char *err,
               size_t errlen, const char *types, va_list ap) {
    int rc = -1, count = 0, s = SQLITE_OK;
    sqlite3_stmt *st = NULL;
    db->step_rc = SQLITE_OK;
    db->changes = 0;
    if (sqlite3_prepare_v2(db->h, sql, -1, &st, NULL) != SQLITE_OK) {
        db_fail(db, what, err, errlen);
        goto cleanup;
    }
    if (db_bind_v(st, types, ap)) {
        snprintf(err, errlen, "%s: %s: bad bind description '%s'", db->path, what, types);
        goto cleanup;
    }
    while ((s = sqlite3_step(st)) == SQLITE_ROW) {
        int r = row ? row(st, ctx, err, errlen) : 0;
        if (r < 0) goto cleanup;
        count++;
        if (r > 0 || one) break;
    }
    db->step_rc = s;
    if (s != SQLITE_ROW && s != SQLITE_DONE) {
        db_fail(db, what, err, errlen);
        goto cleanup;
    }
    db->changes = sqlite3_changes(db->h);
    rc = count;
cleanup:
    sqlite3_finalize(st);
    return rc;
}

int db_query_each(gl_db *db, const char *what, const char *sql, db_row_fn row, void *ctx, char *err, size_t errlen,
                  const char *types, ...) {
    va_list ap;
    va_start(ap, types);
    int rc = db_query_v(db, 0, what, sql, row, ctx, err, errlen, types, ap);
    va_end(ap);
    return rc;
}

int db_query_one(gl_db *db, const char *what, const char *sql, db_row_fn row, void *ctx, char *err, size_t errlen,
                 const char *types, ...) {
    va_list ap;
    va_start(ap, types);
    int rc = db_query_v(db, 1, what, sql, row, ctx, err, errlen, types, ap);
    va_end(ap);
    return rc;
}

int db_rows_take(db_rows *r, int rc, void **out, int *n) {
    if (rc < 0) {
        free(r->v);
        r->v = NULL, r->n = 0;
    }
    *out = r->v;
    *n = r->n;
    return rc < 0 ? -1 : 0;
}

int db_rows_add(sqlite3_stmt *st, void *ctx, char *err, size_t errlen) {
    db_rows *r = ctx;
    if (db_grow(&r->v, r->n, &r->cap, r->size)) {
        snprintf(err, errlen, "%s: out of memory reading rows", r->db->path);
        return -1;
    }
    if (r->fill(r, st, (char *)r->v + (size_t)r->n * r->size, err, errlen)) return -1;
    r->n++;
    return 0;
}

double db_col_real(sqlite3_stmt *st, int i) {
    return sqlite3_column_type(st, i) == SQLITE_NULL ? NAN : sqlite3_column_double(st, i);
}

void db_col_text(sqlite3_stmt *st, int i, char *out, size_t len) {
    const unsigned char *s = sqlite3_column_text(st, i);
    snprintf(out, len, "%s", s ? (const char *)s : "");
}

/* The provenance in columns i .. i+3 (data_split, win_first, win_count, tokens). */
gl_prov db_col_prov(sqlite3_stmt *st, int i) {
    gl_prov p;
    memset(&p, 0, sizeof p);
    db_col_text(st, i, p.split, sizeof p.split);
    p.first = (long)sqlite3_column_int64(st, i + 1);
    p.count = (long)sqlite3_column_int64(st, i + 2);
    p.tokens = db_col_real(st, i + 3);
    return p;
}

/* Make room for one more element of size sz in *v (count k, capacity *cap). */
int db_grow(void **v, int k, int *cap, size_t sz) {
    if (k < *cap) return 0;
    int c = *cap ? 2 * *cap : 64;
    void *nv = realloc(*v, (size_t)c * sz);
    if (!nv) return -1;
    *v = nv;
    *cap = c;
    return 0;
}

