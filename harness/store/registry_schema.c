/*
 * registry_schema.c — the registry's schema: the one CREATE script, the
 * stored version, and which versions a gatelab opens.
 *
 * The schema is version DB_SCHEMA_VERSION (3) and that is the only version
 * this gatelab reads or writes.  A fresh file gets the whole schema in one
 * transaction (db_schema_ensure); an existing file must already say 3.
 *
 * Why no upgrades.  The store is days old.  Versions 1 (no provenance) and
 * 2 (parameters inside metric names) lived a few hours each on 2026-12-01,
 * and every registry that exists now is at version 3: the committed
 * snapshots docs/report/registries/{pilot,decisive}.db and the sweep
 * registries under /work/runs (checked when this file was written;
 * tests/integration/registry_snapshots.sh reads copies of the snapshots).  The
 * upgrade steps were data-migrating SQL (provenance guessed from headline
 * rows, names taken apart by SQL functions) kept only for files that no
 * longer exist, and read-only opens presented them through temporary views:
 * two code paths per old version, tested against schemas rebuilt by hand.
 * A version-1 or -2 file is refused with the way to upgrade it: the gatelab
 * of commit f576d3d (the last with the upgrade steps) upgrades it in place
 * when it opens it for writing (`gatelab runs --fix-stale --db FILE`).
 * When a version 4 is needed, its step goes here, as one function of the
 * file at version 3, with a test on a copy of a real version-3 registry.
 * The file also holds the views of registry_views.c (run_variant,
 * run_headline): a step that rebuilds a table (create, copy, drop, rename)
 * drops them first — SQLite refuses to rename while a view names a dropped
 * table — and db_views_ensure makes them again on the next writable open.
 *
 * What it does not do: open or close connections (registry.c), or read
 * rows.  Contracts as in registry_sql.h.
 */
#include <assert.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "registry_sql.h"

/* Version 3, whole.  Files made before this script (by the old upgrade
 * chain) have the columns in this order too (runs.deleted_time last);
 * db_merge copies rows by column name, after db_schema_tables_check, so a
 * file with another order merges right. */
static const char db_schema_sql[] =
    "CREATE TABLE schema_version (version INTEGER NOT NULL);"
    "CREATE TABLE experiments ("
    "  id INTEGER PRIMARY KEY,"
    "  name TEXT NOT NULL UNIQUE,"
    "  manifest_text TEXT,"
    "  manifest_hash TEXT,"          /* sha256 hex of manifest_text */
    "  created_time REAL NOT NULL);" /* unix seconds */
    "CREATE TABLE runs ("
    "  run_id TEXT PRIMARY KEY,"
    "  experiment_id INTEGER NOT NULL REFERENCES experiments(id),"
    "  name TEXT,"
    "  config_text TEXT,"            /* canonical INI (manifest_to_ini) */
    "  config_hash TEXT,"            /* sha256 hex of config_text */
    "  seed INTEGER,"                /* uint64 stored as its int64 bit pattern */
    "  git_commit TEXT,"
    "  git_dirty INTEGER,"           /* 1 dirty, 0 clean, NULL unknown */
    "  host TEXT,"
    "  pid INTEGER,"
    "  status TEXT NOT NULL CHECK (status IN ('SCHEDULED','RUNNING','FINISHED','FAILED','KILLED')),"
    "  created_time REAL NOT NULL,"
    "  start_time REAL,"
    "  end_time REAL,"
    "  heartbeat REAL,"
    "  attempts INTEGER NOT NULL DEFAULT 0," /* times db_run_start was called */
    "  exit_code INTEGER,"
    "  error TEXT,"
    "  deleted_time REAL);"          /* NULL while visible (gatelab delete) */
    "CREATE INDEX runs_by_experiment ON runs (experiment_id, status);"
    "CREATE TABLE params ("
    "  run_id TEXT NOT NULL REFERENCES runs(run_id),"
    "  key TEXT NOT NULL,"           /* section.key */
    "  value TEXT,"
    "  PRIMARY KEY (run_id, key));"
    "CREATE TABLE artifacts ("
    "  run_id TEXT NOT NULL REFERENCES runs(run_id),"
    "  kind TEXT NOT NULL,"
    "  path TEXT NOT NULL,"
    "  sha256 TEXT NOT NULL,"
    "  bytes INTEGER NOT NULL,"
    "  created_time REAL NOT NULL,"
    "  PRIMARY KEY (run_id, kind));"
    "CREATE TABLE run_events ("
    "  run_id TEXT NOT NULL REFERENCES runs(run_id),"
    "  time REAL NOT NULL,"
    "  kind TEXT NOT NULL,"          /* config_change */
    "  detail TEXT);"
    "CREATE INDEX run_events_by_run ON run_events (run_id, time);"
    "CREATE TABLE metrics ("
    "  run_id TEXT NOT NULL REFERENCES runs(run_id),"
    "  step INTEGER NOT NULL,"       /* the checkpoint step the value was measured at */
    "  split TEXT NOT NULL,"         /* namespace: train, val, test, ablation, analysis, bench */
    "  name TEXT NOT NULL,"          /* base name: exit.loss, zero.delta_loss, alpha_mean, loss */
    "  params TEXT NOT NULL DEFAULT '{}'," /* its parameters, canonical JSON (store/metric.h) */
    "  value REAL,"                  /* NULL: the value was NaN or infinite */
    "  wall_time REAL NOT NULL,"
    "  data_split TEXT NOT NULL DEFAULT '',"  /* provenance: the data split measured ('' unknown) */
    "  win_first INTEGER NOT NULL DEFAULT 0," /* its windows [win_first, win_first + win_count) */
    "  win_count INTEGER NOT NULL DEFAULT 0," /* 0: unknown */
    "  tokens REAL,"                 /* scored tokens (NULL unknown) */
    "  se REAL,"                     /* standard error of value (NULL none) */
    "  PRIMARY KEY (run_id, step, split, name, params, data_split, win_first, win_count));"
    "CREATE INDEX metrics_by_name ON metrics (run_id, split, name, params, step);"
    "CREATE TABLE tags ("
    "  run_id TEXT NOT NULL REFERENCES runs(run_id),"
    "  key TEXT NOT NULL,"
    "  value TEXT NOT NULL,"
    "  PRIMARY KEY (run_id, key));";

/* The last commit whose gatelab upgrades a version-1 or -2 registry. */
#define DB_LAST_UPGRADER "f576d3d"

static int db_row_version(sqlite3_stmt *st, void *ctx, char *err, size_t errlen) {
    (void)err, (void)errlen;
    int *v = ctx;
    sqlite3_int64 x = sqlite3_column_int64(st, 0);
    /* a schema_version table says 1 or more; 0, a negative number, text or
     * none is a damaged file (-1 here; db_schema_version says so) */
    *v = sqlite3_column_type(st, 0) == SQLITE_INTEGER && x >= 1 && x <= 1000000 ? (int)x : -1;
    return 0;
}

static int db_row_text(sqlite3_stmt *st, void *ctx, char *err, size_t errlen) {
    (void)err, (void)errlen;
    db_col_text(st, 0, ctx, 64);
    return 0;
}

static int db_row_flag(sqlite3_stmt *st, void *ctx, char *err, size_t errlen) {
    (void)err, (void)errlen;
    *(int *)ctx = sqlite3_column_int(st, 0);
    return 0;
}

int db_schema_version(gl_db *db, int *version, char *err, size_t errlen) {
    int have = 0;
    *version = 0;
    if (db_query_one(db, "cannot read the schema",
                     "SELECT count(*) FROM sqlite_master WHERE type='table' AND name='schema_version'", db_row_flag,
                     &have, err, errlen, "") < 0)
        return -1;
    if (!have) return 0;
    *version = -1;
    if (db_query_one(db, "cannot read schema_version", "SELECT max(version) FROM schema_version", db_row_version,
                     version, err, errlen, "") < 0)
        return -1;
    if (*version < 0) {
        char shown[64] = "empty";
        db_query_one(db, "cannot read schema_version", "SELECT CAST(max(version) AS TEXT) FROM schema_version",
                     db_row_text, shown, err, errlen, "");
        if (!shown[0]) snprintf(shown, sizeof shown, "empty");
        snprintf(err, errlen, "%s: registry schema_version is %s, not a version gatelab writes (1 to %d): "
                 "the file is damaged or not a gatelab registry; pass another --db", db->path, shown,
                 DB_SCHEMA_VERSION);
        return -1;
    }
    return 0;
}

int db_schema_check(gl_db *db, int version, const char *newer_hint, char *err, size_t errlen) {
    if (version > DB_SCHEMA_VERSION) {
        snprintf(err, errlen, "%s: registry schema version %d is newer than this gatelab understands (%d); %s",
                 db->path, version, DB_SCHEMA_VERSION, newer_hint);
        return -1;
    }
    if (version >= 1 && version < DB_SCHEMA_VERSION) {
        snprintf(err, errlen, "%s: registry schema version %d is older than this gatelab reads (%d only; see "
                 "docs/registry.md, \"Schema versions\"): upgrade it once with the gatelab of commit %s, which "
                 "opens it for writing and upgrades it in place (`gatelab runs --fix-stale --db %s`)",
                 db->path, version, DB_SCHEMA_VERSION, DB_LAST_UPGRADER, db->path);
        return -1;
    }
    return 0;
}

/* The names of db_schema_sql's tables and columns, read once from the
 * script itself run in a private in-memory database (so the list cannot drift
 * from the schema): "table\0col\0col\0\0table\0…\0\0".  Built under
 * pthread_once (serve opens registries from several threads). */
static char db_sch_names[2048];
static int db_sch_names_ok;
static pthread_once_t db_sch_names_once = PTHREAD_ONCE_INIT;

static void db_sch_names_build(void) {
    sqlite3 *m = NULL;
    sqlite3_stmt *st = NULL, *col = NULL;
    size_t k = 0;
    if (sqlite3_open_v2(":memory:", &m, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK ||
        sqlite3_exec(m, db_schema_sql, NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(m, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY rowid", -1, &st, NULL) ||
        sqlite3_prepare_v2(m, "SELECT name FROM pragma_table_info(?1) ORDER BY cid", -1, &col, NULL))
        goto done;
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *t = (const char *)sqlite3_column_text(st, 0);
        size_t n = strlen(t) + 1;
        assert(k + n + 1 < sizeof db_sch_names);
        memcpy(db_sch_names + k, t, n), k += n;
        sqlite3_reset(col);
        sqlite3_bind_text(col, 1, t, -1, SQLITE_TRANSIENT);
        while (sqlite3_step(col) == SQLITE_ROW) {
            const char *c = (const char *)sqlite3_column_text(col, 0);
            n = strlen(c) + 1;
            assert(k + n + 2 < sizeof db_sch_names);
            memcpy(db_sch_names + k, c, n), k += n;
        }
        db_sch_names[k++] = 0;
    }
    db_sch_names[k] = 0;
    db_sch_names_ok = k > 0;
done:
    sqlite3_finalize(st);
    sqlite3_finalize(col);
    sqlite3_close(m);
}

/* NULL when SQLite could not make the list (out of memory). */
static const char *db_schema_names(void) {
    pthread_once(&db_sch_names_once, db_sch_names_build);
    return db_sch_names_ok ? db_sch_names : NULL;
}

static int db_row_type(sqlite3_stmt *st, void *ctx, char *err, size_t errlen) {
    (void)err, (void)errlen;
    db_col_text(st, 0, ctx, 16);
    return 0;
}

int db_schema_tables_check(gl_db *db, const char *schema, const char *path, char *err, size_t errlen) {
    const char *names = db_schema_names();
    char sql[256];
    if (!schema) schema = "main";
    if (!names) {
        snprintf(err, errlen, "%s: out of memory checking the registry's tables", path);
        return -1;
    }
    for (const char *t = names; *t; ) {
        char type[16] = "";
        snprintf(sql, sizeof sql, "SELECT type FROM \"%s\".sqlite_master WHERE name = ?1 COLLATE NOCASE", schema);
        if (db_query_one(db, "cannot read the registry's schema", sql, db_row_type, type, err, errlen, "t", t) < 0)
            return -1;
        if (strcmp(type, "table")) {
            if (type[0])
                snprintf(err, errlen, "%s: %s is a %s, not a table: not a gatelab registry (damaged or hand-made; "
                         "gatelab reads only its own tables); pass another --db", path, t, type);
            else
                snprintf(err, errlen, "%s: no table %s: not a gatelab registry; pass another --db", path, t);
            return -1;
        }
        const char *c = t + strlen(t) + 1;
        for (; *c; c += strlen(c) + 1) {
            int has = 0;
            snprintf(sql, sizeof sql, "SELECT count(*) FROM pragma_table_info(?1, ?2) WHERE name = ?3");
            if (db_query_one(db, "cannot read the registry's schema", sql, db_row_flag, &has, err, errlen, "ttt", t,
                             schema, c) < 0)
                return -1;
            if (!has) {
                snprintf(err, errlen, "%s: table %s has no column %s: not a registry of schema version %d (damaged "
                         "or hand-made); pass another --db", path, t, c, DB_SCHEMA_VERSION);
                return -1;
            }
        }
        t = c + 1;
    }
    return 0;
}

int db_schema_ensure(gl_db *db, char *err, size_t errlen) {
    int version = 0;
    char sql[sizeof db_schema_sql + 96];
    if (db_begin(db, err, errlen)) return -1;
    if (db_schema_version(db, &version, err, errlen)) goto fail;
    if (db_schema_check(db, version, "use a newer gatelab or another --db", err, errlen)) goto fail;
    if (version == 0) {
        snprintf(sql, sizeof sql, "%sINSERT INTO schema_version (version) VALUES (%d);", db_schema_sql,
                 DB_SCHEMA_VERSION);
        if (db_exec(db, sql, "cannot create the registry schema", err, errlen)) goto fail;
    } else if (db_schema_tables_check(db, NULL, db->path, err, errlen)) {
        goto fail;
    }
    return db_commit(db, err, errlen);
fail:
    db_rollback(db);
    return -1;
}
