/*
 * registry_sql.h — what the two files of the registry share, and nothing
 * else includes: the connection (struct gl_db) and the small SQLite helpers.
 * registry.c holds the connection, the schema and its upgrades, the writes,
 * the lifecycle, claiming and merging; registry_runs.c the listings of runs
 * (runs, tables, figures, reports), tags, soft delete and the long-form
 * metric reader.  Only these two files include sqlite3.h.
 *
 * Contracts as in registry.c: functions returning int give 0 (or a count)
 * and -1 with a message in err naming the database file.
 */
#ifndef GATELAB_STORE_REGISTRY_SQL_H
#define GATELAB_STORE_REGISTRY_SQL_H

#include <sqlite3.h>

#include "registry.h"

struct gl_db {
    sqlite3 *h;
    char path[GL_PATH_MAX];
    char host[256];
};

/* err <- "<db path>: <what>: <sqlite message>". */
void db_fail(gl_db *db, const char *what, char *err, size_t errlen);
/* BEGIN IMMEDIATE (retried while busy), COMMIT, and ROLLBACK of an open transaction. */
int db_begin(gl_db *db, char *err, size_t errlen);
int db_commit(gl_db *db, char *err, size_t errlen);
void db_rollback(gl_db *db);
/* Prepare sql: the statement (finalise it), or NULL with err filled. */
sqlite3_stmt *db_prepare(gl_db *db, const char *sql, char *err, size_t errlen);
void db_bind_text_or_null(sqlite3_stmt *st, int i, const char *s);
/* Column i as a double (NaN for NULL), as text into out ("" for NULL). */
double db_col_real(sqlite3_stmt *st, int i);
void db_col_text(sqlite3_stmt *st, int i, char *out, size_t len);
/* The provenance in columns i .. i+3 (data_split, win_first, win_count, tokens). */
gl_prov db_col_prov(sqlite3_stmt *st, int i);
/* Make room for one more element of size sz in *v (count k, capacity *cap): 0, or -1 out of memory. */
int db_grow(void **v, int k, int *cap, size_t sz);

#endif
