/*
 * registry_sql.h — what the two files of the registry share, and nothing
 * else includes: the connection (struct gl_db) and the small SQLite helpers.
 * registry.c holds the connection, the statement helpers, the writes, the
 * lifecycle, claiming and merging; registry_schema.c the schema and which
 * versions are opened; registry_runs.c the listings of runs
 * (runs, tables, figures, reports), tags, soft delete and the long-form
 * metric reader.  Only these files include sqlite3.h.
 *
 * Contracts as in registry.c: functions returning int give 0 (or a count)
 * and -1 with a message in err naming the database file.
 */
#ifndef GATELAB_STORE_REGISTRY_SQL_H
#define GATELAB_STORE_REGISTRY_SQL_H

#include <sqlite3.h>
#include <stdarg.h>

#include "registry.h"

/* How often a BEGIN IMMEDIATE or COMMIT that finds the database busy after
 * the busy timeout is tried again (10 ms, 20 ms, … apart). */
#define DB_BEGIN_RETRIES 20

struct gl_db {
    sqlite3 *h;
    char path[GL_PATH_MAX];
    char host[256];
    int step_rc;  /* result code of the last step db_query_one/db_query_each took */
    int changes;  /* rows the last statement of db_query_one/db_query_each changed */
    long statements; /* statements started since the open, counted when GATELAB_QUERY_COUNT is set (db_count_on) */
};

/* With GATELAB_QUERY_COUNT set (to anything but "" or "0"), count every statement the connection
 * starts (sqlite3_trace_v2, SQLITE_TRACE_STMT) and say how many at db_close on stderr:
 * "gatelab: registry PATH: N statements".  How the loaders' query counts in docs/registry.md were
 * measured. */
void db_count_on(gl_db *db);

/* ---- one statement: prepare -> bind -> step -> finalize, in one place ----
 *
 * types describes the arguments that follow, one letter per parameter ?1,
 * ?2, … in order (the idea of sqlite3_mprintf's format, for binding):
 *   t  const char *   text (NULL binds NULL)
 *   i  int
 *   I  long long      (sqlite3_int64)
 *   r  double         (NaN or ±inf binds NULL: never stored as a number)
 *   d  double         (bound as it is)
 *   _  no argument    the parameter stays NULL
 * A parameter types does not reach stays NULL too.
 *
 * row, when not NULL, is called on each result row (read it with the
 * sqlite3_column_* functions or db_col_*): it returns 0 to go on, 1 to stop
 * there without error, -1 after filling err.
 *
 * db_query_each returns the number of rows row was called on, db_query_one
 * steps once and returns 1 (a row, row called on it) or 0 (none; a
 * statement without results: INSERT, UPDATE, DELETE).  Both return -1 on
 * failure with err = "<db path>: <what>: <sqlite3_errmsg>", what naming the
 * statement ("cannot record the artifact").  After either, db->step_rc holds
 * the last step's result code (SQLITE_CONSTRAINT_PRIMARYKEY for a duplicate
 * key) and db->changes the rows the statement changed.  The statement is
 * finalised on every path. */
typedef int (*db_row_fn)(sqlite3_stmt *st, void *ctx, char *err, size_t errlen);
int db_query_each(gl_db *db, const char *what, const char *sql, db_row_fn row, void *ctx, char *err, size_t errlen,
                  const char *types, ...);
int db_query_one(gl_db *db, const char *what, const char *sql, db_row_fn row, void *ctx, char *err, size_t errlen,
                 const char *types, ...);

/* The same with the arguments in ap (one = 1: db_query_one). */
int db_query_v(gl_db *db, int one, const char *what, const char *sql, db_row_fn row, void *ctx, char *err,
               size_t errlen, const char *types, va_list ap);

/* A growing array of rows, filled by db_rows_add (a db_row_fn: ctx is the
 * db_rows) through fill, one element per row.  Free v when done (also after
 * a failure). */
typedef struct db_rows db_rows;
struct db_rows {
    gl_db *db;
    void *v; /* the elements, each size bytes */
    int n, cap;
    size_t size;
    /* one element from the row st: 0, or -1 with err filled */
    int (*fill)(const db_rows *r, sqlite3_stmt *st, void *elem, char *err, size_t errlen);
    const char *run_id, *split; /* what is read, for fill's messages (may be NULL) */
};
int db_rows_add(sqlite3_stmt *st, void *ctx, char *err, size_t errlen);
/* The end of a query (rc its result) that filled r: *out, *n <- the rows
 * (NULL, 0 after a failure, r's memory freed); returns 0, or -1 when rc is. */
int db_rows_take(db_rows *r, int rc, void **out, int *n);

/* err <- "<db path>: <what>: <sqlite message>". */
void db_fail(gl_db *db, const char *what, char *err, size_t errlen);
/* Run SQL without results (a script of several statements): 0, or -1 with
 * err = "<db path>: <what>: <sqlite message>". */
int db_exec(gl_db *db, const char *sql, const char *what, char *err, size_t errlen);
/* BEGIN IMMEDIATE (retried while busy), COMMIT, and ROLLBACK of an open transaction. */
int db_begin(gl_db *db, char *err, size_t errlen);
int db_commit(gl_db *db, char *err, size_t errlen);
void db_rollback(gl_db *db);
/* Prepare sql: the statement (finalise it), or NULL with err filled. */
sqlite3_stmt *db_prepare(gl_db *db, const char *sql, char *err, size_t errlen);
void db_bind_text_or_null(sqlite3_stmt *st, int i, const char *s);
/* A double, or NULL when it is NaN or infinite (never stored as a number). */
void db_bind_real_or_null(sqlite3_stmt *st, int i, double v);
/* Column i as a double (NaN for NULL), as text into out ("" for NULL). */
double db_col_real(sqlite3_stmt *st, int i);
void db_col_text(sqlite3_stmt *st, int i, char *out, size_t len);
/* The provenance in columns i .. i+3 (data_split, win_first, win_count, tokens). */
gl_prov db_col_prov(sqlite3_stmt *st, int i);
/* Make room for one more element of size sz in *v (count k, capacity *cap): 0, or -1 out of memory. */
int db_grow(void **v, int k, int *cap, size_t sz);

/* ---- the schema (registry_schema.c) ---- */

/* The stored schema version into *version (0 for a file without a schema):
 * 0, or -1 with err (a damaged schema_version is one). */
int db_schema_version(gl_db *db, int *version, char *err, size_t errlen);
/* 0 when this gatelab reads version (0: none yet, or DB_SCHEMA_VERSION);
 * -1 with err saying what to do for an older one, and newer_hint for a newer. */
int db_schema_check(gl_db *db, int version, const char *newer_hint, char *err, size_t errlen);
/* In one write transaction: create the schema in a file without one, or
 * check an existing file's version (db_schema_check).  0, or -1 with err. */
int db_schema_ensure(gl_db *db, char *err, size_t errlen);

/* The registry's views (run_variant, run_headline; registry_views.c, scripts/python/gatelab/views.sql):
 * writable, kept in the file's schema (replaced when the stored text differs); read-only, created as
 * TEMP views of the connection when the file lacks them or holds another version.  0 or -1 with err. */
int db_views_ensure(gl_db *db, int writable, char *err, size_t errlen);
/* The tables of schema (NULL: "main"; "src": an attached task registry) are
 * what db_schema_sql makes: every one of its tables present, a table (not a
 * view: a recursive view would make the first query never return), with
 * each of its columns by name (order free; db_merge copies by name).  path
 * names the file in the message.  0, or -1 with err ("… is a view, not a
 * table: not a gatelab registry (damaged or hand-made); pass another --db"). */
int db_schema_tables_check(gl_db *db, const char *schema, const char *path, char *err, size_t errlen);

#endif
