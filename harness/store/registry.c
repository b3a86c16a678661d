/*
 * registry.c — the experiment registry in SQLite (see registry.h and
 * docs/registry.md for the schema).
 *
 * Every connection: WAL journal, synchronous=NORMAL, a busy timeout, and
 * every write inside one BEGIN IMMEDIATE transaction, so a writer takes the
 * write lock up front (never upgrading a read lock, which is what makes WAL
 * writers fail with "database is locked" instead of waiting).  A BEGIN that
 * still finds the database busy after the timeout is retried a few times.
 *
 * The schema and which versions open are registry_schema.c's; the
 * statement helpers (db_query_one, db_query_each) registry_sql.c's.
 *
 * What it deliberately does not do: any statistics or formatting (cmd_runs.c
 * prints), any knowledge of training (the training loop calls it), any
 * network-filesystem locking (on a cluster each task writes its own file and
 * `gatelab collect` merges them with db_merge).  Follows the SQLite C API
 * documentation (https://sqlite.org/c3ref/intro.html) and the WAL notes
 * (https://sqlite.org/wal.html).  With registry_runs.c (the listings, tags,
 * soft delete), registry_schema.c and registry_sql.c (all share
 * registry_sql.h) the only files including sqlite3.h.
 */
#include "registry.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <cblas.h>
#include <omp.h>

#include "fileio.h"
#include "metric.h"
#include "registry_sql.h"
#include "sha256.h"

#define DB_BUSY_TIMEOUT_MS 30000

/* How long a statement waits for another process's lock: DB_BUSY_TIMEOUT_MS,
 * or $GATELAB_DB_BUSY_MS (0 to 600000) when set (tests of a locked registry). */
static int db_busy_ms(void) {
    const char *e = getenv("GATELAB_DB_BUSY_MS");
    char *end = NULL;
    long v = e && *e ? strtol(e, &end, 10) : -1;
    return e && *e && end && !*end && v >= 0 && v <= 600000 ? (int)v : DB_BUSY_TIMEOUT_MS;
}

/* ---- small helpers ---- */

double db_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

const char *db_path(const gl_db *db) { return db ? db->path : ""; }

int db_status_rank(const char *status) {
    static const char *const order[] = {"SCHEDULED", "RUNNING", "KILLED", "FAILED", "FINISHED"};
    if (!status) return 0;
    for (int i = 0; i < 5; i++)
        if (!strcmp(status, order[i])) return i + 1;
    return 0;
}

gl_prov db_prov(const char *split, long first, long count, double tokens) {
    gl_prov p;
    memset(&p, 0, sizeof p);
    snprintf(p.split, sizeof p.split, "%s", split ? split : "");
    p.first = first;
    p.count = count;
    p.tokens = tokens;
    return p;
}

int db_prov_same(const gl_prov *a, const gl_prov *b) {
    return !strcmp(a->split, b->split) && a->first == b->first && a->count == b->count;
}

const char *db_prov_str(const gl_prov *p, char *out, size_t n) {
    if (!p->split[0] || p->count <= 0) snprintf(out, n, "?");
    else if (isfinite(p->tokens) && p->tokens > 0)
        snprintf(out, n, "%s[%ld,%ld) %.0f tok", p->split, p->first, p->first + p->count, p->tokens);
    else snprintf(out, n, "%s[%ld,%ld)", p->split, p->first, p->first + p->count);
    return out;
}

/* The params of a lookup: NULL means a name without parameters. */
static const char *db_params_or_none(const char *params) { return params ? params : "{}"; }

/* mkdir -p of the folder that will hold path.  Returns 0 or -1 with a message. */
static int db_make_parent(const char *path, char *err, size_t errlen) {
    char dir[GL_PATH_MAX];
    if (strlen(path) >= sizeof dir) {
        snprintf(err, errlen, "%s: registry path too long (max %d bytes)", path, GL_PATH_MAX - 1);
        return -1;
    }
    strcpy(dir, path);
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir) return 0;
    *slash = '\0';
    char e[GL_PATH_MAX + 128];
    if (!fileio_mkdir_p(dir, e, sizeof e)) return 0;
    snprintf(err, errlen, "%s: the registry's folder: %s", path, e);
    return -1;
}

/* Why a first statement on a registry failed (rc its result code), in words:
 * locked by another process, unreadable, not SQLite, or SQLite without the
 * runs table (not a gatelab registry). */
static void db_why(gl_db *db, int rc, char *err, size_t errlen) {
    switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        snprintf(err, errlen, "%s: the registry is locked by another process (%s; waited %d ms): try again when "
                 "it is done, or read a copy", db->path, sqlite3_errmsg(db->h), db_busy_ms());
        break;
    case SQLITE_READONLY:
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
    case SQLITE_IOERR:
    case SQLITE_AUTH:
        snprintf(err, errlen, "%s: the registry cannot be read or written here (%s): check the permissions of "
                 "the file and its folder", db->path, sqlite3_errmsg(db->h));
        break;
    case SQLITE_NOTADB:
        snprintf(err, errlen, "%s: not a SQLite database, so not a gatelab registry; pass another --db", db->path);
        break;
    default:
        db_fail(db, "not a gatelab registry (no runs table)", err, errlen);
    }
}

/* path as a SQLite URI file name, "file:PATH?mode=ro[&immutable=1]", with
 * the characters a URI gives a meaning (%, ?, #) percent-encoded.  Returns
 * 0, or -1 when it does not fit. */
static int db_uri(const char *path, int immutable, char *out, size_t n) {
    size_t k = (size_t)snprintf(out, n, "file:");
    for (const char *p = path; *p && k + 4 < n; p++) {
        if (*p == '%' || *p == '?' || *p == '#') k += (size_t)snprintf(out + k, n - k, "%%%02X", (unsigned char)*p);
        else out[k++] = *p;
    }
    if (k + 4 >= n) return -1;
    out[k] = 0;
    return (size_t)snprintf(out + k, n - k, "?mode=ro%s", immutable ? "&immutable=1" : "") >= n - k ? -1 : 0;
}

/* The read-only URI of the registry at path (db_uri), read as immutable when
 * its folder is not writable: a WAL registry there cannot get its -shm index
 * (no locks; a writer elsewhere is not seen).  Sets *immutable. */
static int db_ro_uri(const char *path, char *uri, size_t n, int *immutable) {
    char dir[GL_PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash) snprintf(dir, sizeof dir, ".");
    else if (slash == dir) dir[1] = 0;
    else *slash = 0;
    *immutable = access(dir, W_OK) != 0;
    return db_uri(path, *immutable, uri, n);
}

static int db_open_rw(gl_db **out, const char *path, int create, char *err, size_t errlen) {
    gl_db *db = NULL;
    *out = NULL;
    if (!path || !*path) {
        snprintf(err, errlen, "registry: empty database path (pass --db PATH)");
        return -1;
    }
    if (strlen(path) >= GL_PATH_MAX) {
        snprintf(err, errlen, "%s: registry path too long (max %d bytes)", path, GL_PATH_MAX - 1);
        return -1;
    }
    struct stat sb;
    if (!create && stat(path, &sb) != 0) {
        snprintf(err, errlen, "%s: no registry there (%s); this command changes an existing registry and creates "
                 "none: check --db, --results and GATELAB_RESULTS", path, strerror(errno));
        return -1;
    }
    if (!create && !S_ISREG(sb.st_mode)) {
        snprintf(err, errlen, "%s: not a registry file (a folder or a special file); pass --db PATH", path);
        return -1;
    }
    if (create && db_make_parent(path, err, errlen)) return -1;
    db = calloc(1, sizeof *db);
    if (!db) { snprintf(err, errlen, "%s: out of memory opening the registry", path); return -1; }
    strcpy(db->path, path);
    if (gethostname(db->host, sizeof db->host - 1) != 0) strcpy(db->host, "unknown");
    /* SQLITE_OPEN_URI lets db_merge ATTACH a task registry read-only; a
     * plain path that happens to start with "file:" stays a path. */
    char local[GL_PATH_MAX + 2];
    snprintf(local, sizeof local, "%s%s", strncmp(path, "file:", 5) ? "" : "./", path);
    if (sqlite3_open_v2(local, &db->h,
                        SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0) | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX,
                        NULL) != SQLITE_OK) {
        db_fail(db, "cannot open the registry", err, errlen);
        goto fail;
    }
    sqlite3_busy_timeout(db->h, db_busy_ms());
    sqlite3_extended_result_codes(db->h, 1);
    db_count_on(db);
    /* journal_mode=WAL needs a moment of exclusive access on a fresh file; retry while busy. */
    for (int attempt = 0;; attempt++) {
        sqlite3_stmt *st = NULL;
        int rc = sqlite3_prepare_v2(db->h, "PRAGMA journal_mode=WAL", -1, &st, NULL);
        if (rc == SQLITE_OK) rc = sqlite3_step(st);
        int ok = rc == SQLITE_ROW && !strcmp((const char *)sqlite3_column_text(st, 0), "wal");
        sqlite3_finalize(st);
        if (ok) break;
        if (((rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED) && attempt < DB_BEGIN_RETRIES) {
            usleep(10000u * (unsigned)(attempt + 1));
            continue;
        }
        if (rc == SQLITE_ROW) {
            snprintf(err, errlen, "%s: the registry cannot use WAL mode (a network filesystem?); "
                                  "put it on a local disk with --db", path);
        } else if ((rc & 0xff) == SQLITE_NOTADB) {
            snprintf(err, errlen, "%s: not a SQLite database, so not a gatelab registry; pass another --db",
                     path);
        } else {
            db_fail(db, "cannot switch the registry to WAL mode", err, errlen);
        }
        goto fail;
    }
    if (db_exec(db, "PRAGMA synchronous=NORMAL", "cannot set synchronous mode", err, errlen)) goto fail;
    if (!create) { /* an existing file: it must already be a registry */
        sqlite3_stmt *st = NULL;
        int prc = sqlite3_prepare_v2(db->h, "SELECT count(*) FROM runs", -1, &st, NULL);
        sqlite3_finalize(st);
        if (prc != SQLITE_OK) {
            db_why(db, prc, err, errlen);
            goto fail;
        }
    }
    if (db_schema_ensure(db, err, errlen) || db_views_ensure(db, 1, err, errlen)) goto fail;
    *out = db;
    return 0;
fail:
    db_close(db);
    return -1;
}

int db_open(gl_db **out, const char *path, char *err, size_t errlen) { return db_open_rw(out, path, 1, err, errlen); }

int db_open_existing(gl_db **out, const char *path, char *err, size_t errlen) {
    return db_open_rw(out, path, 0, err, errlen);
}

static int db_count_stmt(unsigned kind, void *ctx, void *p, void *x) {
    (void)kind, (void)p;
    /* a trigger's sub-statements arrive as "-- TRIGGER name" texts: only top-level statements count */
    if (!x || strncmp((const char *)x, "--", 2)) ((gl_db *)ctx)->statements++;
    return 0;
}

void db_count_on(gl_db *db) {
    const char *e = getenv("GATELAB_QUERY_COUNT");
    if (!e || !*e || !strcmp(e, "0")) return;
    db->statements = 0;
    sqlite3_trace_v2(db->h, SQLITE_TRACE_STMT, db_count_stmt, db);
}

void db_close(gl_db *db) {
    if (!db) return;
    const char *e = getenv("GATELAB_QUERY_COUNT");
    if (db->h && e && *e && strcmp(e, "0"))
        fprintf(stderr, "gatelab: registry %s: %ld statements\n", db->path, db->statements);
    if (db->h) {
        db_rollback(db);
        sqlite3_close_v2(db->h);
    }
    free(db);
}

int db_open_readonly(gl_db **out, const char *path, char *err, size_t errlen) {
    gl_db *db = NULL;
    sqlite3_stmt *st = NULL;
    struct stat sb;
    *out = NULL;
    if (!path || !*path || stat(path, &sb) != 0) {
        snprintf(err, errlen, "%s: no registry there: train a run first, or pass --db PATH", path ? path : "");
        return -1;
    }
    if (strlen(path) >= GL_PATH_MAX) {
        snprintf(err, errlen, "%s: registry path too long (max %d bytes)", path, GL_PATH_MAX - 1);
        return -1;
    }
    db = calloc(1, sizeof *db);
    if (!db) { snprintf(err, errlen, "%s: out of memory opening the registry", path); return -1; }
    strcpy(db->path, path);
    if (gethostname(db->host, sizeof db->host - 1) != 0) strcpy(db->host, "unknown"); /* db_run_stale compares it */
    /* mode=ro: nothing is created or written (db_ro_uri; an immutable read
     * is said once). */
    char uri[3 * GL_PATH_MAX + 32];
    int immutable = 0;
    if (db_ro_uri(path, uri, sizeof uri, &immutable)) {
        snprintf(err, errlen, "%s: registry path too long", path);
        goto fail;
    }
    if (immutable) {
        char wal[GL_PATH_MAX + 8];
        struct stat wsb;
        snprintf(wal, sizeof wal, "%s-wal", path);
        int pending = stat(wal, &wsb) == 0 && wsb.st_size > 0;
        fprintf(stderr, "gatelab: note: %s is in a folder this user cannot write; reading it as immutable (a run "
                "writing it meanwhile is not seen)%s%s%s\n", path, pending ? "; " : "", pending ? wal : "",
                pending ? " holds commits this read does not see (copy both files to a writable folder to read them)"
                        : "");
    }
    if (sqlite3_open_v2(uri, &db->h, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
        db_fail(db, "cannot open the registry", err, errlen);
        goto fail;
    }
    sqlite3_busy_timeout(db->h, db_busy_ms());
    sqlite3_extended_result_codes(db->h, 1);
    db_count_on(db);
    /* a file that is not a registry, or one locked, fails here with a clear message */
    int prc = sqlite3_prepare_v2(db->h, "SELECT count(*) FROM runs", -1, &st, NULL);
    if (prc != SQLITE_OK) {
        db_why(db, prc, err, errlen);
        goto fail;
    }
    /* another schema version: refuse, as db_open does, rather than read
     * columns whose meaning may differ (registry_schema.c) */
    int version = 0;
    if (db_schema_version(db, &version, err, errlen) ||
        db_schema_check(db, version, "use the gatelab that wrote it", err, errlen)) {
        if ((db->step_rc & 0xff) == SQLITE_BUSY || (db->step_rc & 0xff) == SQLITE_LOCKED) db_why(db, db->step_rc, err, errlen);
        goto fail;
    }
    if (version == 0) {
        snprintf(err, errlen, "%s: a runs table but no schema_version: not a gatelab registry; pass another --db",
                 path);
        goto fail;
    }
    /* its tables are tables (a recursive view named runs would never return) with their columns */
    if (db_schema_tables_check(db, NULL, path, err, errlen)) goto fail;
    prc = sqlite3_step(st) == SQLITE_ROW ? SQLITE_OK : sqlite3_errcode(db->h);
    if (prc != SQLITE_OK) {
        db_why(db, prc, err, errlen);
        goto fail;
    }
    sqlite3_finalize(st);
    st = NULL;
    if (db_views_ensure(db, 0, err, errlen)) goto fail;
    *out = db;
    return 0;
fail:
    sqlite3_finalize(st);
    db_close(db);
    return -1;
}

/* ---- experiments and runs ---- */

/* Row readers shared by the queries below (db_row_fn, registry_sql.h). */
static int db_row_int64(sqlite3_stmt *st, void *ctx, char *err, size_t errlen) {
    (void)err, (void)errlen;
    *(long long *)ctx = sqlite3_column_int64(st, 0);
    return 0;
}

/* Every column as a double (NaN for NULL) into the double array ctx. */
static int db_row_reals(sqlite3_stmt *st, void *ctx, char *err, size_t errlen) {
    (void)err, (void)errlen;
    for (int i = 0; i < sqlite3_column_count(st); i++) ((double *)ctx)[i] = db_col_real(st, i);
    return 0;
}

/* One statement in its own write transaction: 0, or -1 with err. */
static int db_write(gl_db *db, const char *what, const char *sql, char *err, size_t errlen, const char *types, ...) {
    va_list ap;
    if (db_begin(db, err, errlen)) return -1;
    va_start(ap, types);
    int rc = db_query_v(db, 1, what, sql, NULL, NULL, err, errlen, types, ap);
    va_end(ap);
    if (rc < 0 || db_commit(db, err, errlen)) { db_rollback(db); return -1; }
    return 0;
}

int db_experiment_ensure(gl_db *db, const char *name, const char *manifest_text, long long *exp_id,
                         char *err, size_t errlen) {
    char hash[65] = "";
    if (!name || !*name) { snprintf(err, errlen, "%s: empty experiment name", db->path); return -1; }
    if (manifest_text) sha256_hex(manifest_text, strlen(manifest_text), hash);
    if (db_begin(db, err, errlen)) return -1;
    int found = db_query_one(db, "cannot record the experiment",
                             "INSERT INTO experiments (name, manifest_text, manifest_hash, created_time) "
                             "VALUES (?1, ?2, ?3, ?4) ON CONFLICT(name) DO NOTHING",
                             NULL, NULL, err, errlen, "tttd", name, manifest_text, manifest_text ? hash : NULL,
                             db_now());
    if (found == 0)
        found = db_query_one(db, "cannot find the experiment just recorded", "SELECT id FROM experiments WHERE name = ?1",
                             db_row_int64, exp_id, err, errlen, "t", name);
    if (found == 0) snprintf(err, errlen, "%s: cannot find the experiment %s just recorded", db->path, name);
    if (found != 1 || db_commit(db, err, errlen)) { db_rollback(db); return -1; }
    return 0;
}

int db_run_id_check(const char *id, char *why, size_t whylen) {
    size_t n = id ? strlen(id) : 0;
    if (!n || n > DB_RUN_ID_MAX) {
        snprintf(why, whylen, "run id '%.40s%s' has %zu bytes; a run id is 1 to %d bytes", id ? id : "",
                 n > 40 ? "…" : "", n, DB_RUN_ID_MAX);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char b = (unsigned char)id[i];
        if (b < 0x20 || b == 0x7f || b == '/') {
            snprintf(why, whylen, "run id '%.*s…': byte %zu is %s (0x%02x); a run id holds no control character "
                     "and no '/'", (int)i, id, i + 1, b == '/' ? "a '/'" : "a control character", b);
            return -1;
        }
    }
    if (!strcmp(id, ".") || !strcmp(id, "..") || id[0] == '-') {
        snprintf(why, whylen, "run id '%s': not '.', '..' or a word starting with '-'", id);
        return -1;
    }
    return 0;
}

int db_run_create(gl_db *db, long long exp_id, const char *run_id, const char *name,
                  const char *config_ini, const char *config_hash, unsigned long long seed,
                  const char *status, char *err, size_t errlen) {
    char why[256];
    if (db_run_id_check(run_id, why, sizeof why)) {
        snprintf(err, errlen, "%s: %s", db->path, why);
        return -1;
    }
    if (!db_status_rank(status)) {
        snprintf(err, errlen, "%s: run %s: unknown status '%s' (SCHEDULED, RUNNING, FINISHED, FAILED, KILLED)",
                 db->path, run_id, status ? status : "(null)");
        return -1;
    }
    if (db_begin(db, err, errlen)) return -1;
    int s = db_query_one(db, "cannot create the run",
                         "INSERT INTO runs (run_id, experiment_id, name, config_text, config_hash, seed, status, "
                         "created_time, heartbeat) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8)",
                         NULL, NULL, err, errlen, "tItttItd", run_id, exp_id, name, config_ini, config_hash,
                         (long long)seed, status, db_now());
    if (s < 0 && db->step_rc == SQLITE_CONSTRAINT_PRIMARYKEY)
        snprintf(err, errlen, "%s: run %s already exists; choose another run id or resume it", db->path, run_id);
    if (s < 0 || db_commit(db, err, errlen)) { db_rollback(db); return -1; }
    return 0;
}

static int db_row_status(sqlite3_stmt *st, void *ctx, char *err, size_t errlen) {
    (void)err, (void)errlen;
    if (ctx) db_col_text(st, 0, ctx, 16);
    return 0;
}

int db_run_exists(gl_db *db, const char *run_id, char *status_out, char *err, size_t errlen) {
    if (status_out) status_out[0] = '\0';
    return db_query_one(db, "cannot look up the run", "SELECT status FROM runs WHERE run_id = ?1", db_row_status,
                        status_out, err, errlen, "t", run_id);
}

int db_run_times(gl_db *db, const char *run_id, double *start, double *end, char *err, size_t errlen) {
    double v[2] = {NAN, NAN};
    int rc = db_query_one(db, "cannot read a run's times", "SELECT start_time, end_time FROM runs WHERE run_id = ?1",
                          db_row_reals, v, err, errlen, "t", run_id);
    *start = v[0];
    *end = v[1];
    return rc;
}

typedef struct {
    char *commit; /* 48 bytes */
    int *dirty;
} db_commit_out;

static int db_row_commit(sqlite3_stmt *st, void *ctx, char *err, size_t errlen) {
    db_commit_out *c = ctx;
    (void)err, (void)errlen;
    db_col_text(st, 0, c->commit, 48);
    if (sqlite3_column_type(st, 1) != SQLITE_NULL) *c->dirty = sqlite3_column_int(st, 1);
    return 0;
}

int db_run_commit(gl_db *db, const char *run_id, char commit[48], int *dirty, char *err, size_t errlen) {
    db_commit_out c = {commit, dirty};
    commit[0] = 0;
    *dirty = -1;
    return db_query_one(db, "cannot read a run's commit", "SELECT git_commit, git_dirty FROM runs WHERE run_id = ?1",
                        db_row_commit, &c, err, errlen, "t", run_id);
}

/* The build's commit (db_set_build): process-wide, written once by main before any registry call. */
static char db_build_commit[48];
static int db_build_dirty = -1;

void db_set_build(const char *commit, int dirty) {
    snprintf(db_build_commit, sizeof db_build_commit, "%s", commit ? commit : "");
    db_build_dirty = db_build_commit[0] ? dirty : -1;
}

/* Run a single-row UPDATE on run_id (bound as ?1) inside its own transaction;
 * a run that does not exist is an error. */
static int db_update_run(gl_db *db, const char *run_id, const char *what, const char *sql, char *err, size_t errlen,
                         const char *types, ...) {
    va_list ap;
    if (db_begin(db, err, errlen)) return -1;
    va_start(ap, types);
    int rc = db_query_v(db, 1, what, sql, NULL, NULL, err, errlen, types, ap);
    va_end(ap);
    if (rc == 0 && db->changes != 1) {
        snprintf(err, errlen, "%s: %s: run %s is not in the registry", db->path, what, run_id);
        rc = -1;
    }
    if (rc < 0 || db_commit(db, err, errlen)) { db_rollback(db); return -1; }
    return 0;
}

int db_run_start(gl_db *db, const char *run_id, char *err, size_t errlen) {
    /* an unknown build leaves git_commit and git_dirty NULL */
    const int known = db_build_commit[0] != '\0', dirty_known = known && db_build_dirty >= 0;
    return db_update_run(db, run_id, "cannot mark the run RUNNING",
                         "UPDATE runs SET status='RUNNING', start_time=coalesce(start_time, ?2), "
                         "end_time=NULL, exit_code=NULL, error=NULL, host=?3, pid=?4, git_commit=?5, "
                         "git_dirty=?6, heartbeat=?2, attempts=attempts+1 WHERE run_id=?1",
                         err, errlen, dirty_known ? "tdtIti" : known ? "tdtIt" : "tdtI", run_id, db_now(), db->host,
                         (long long)getpid(), db_build_commit, db_build_dirty);
}

int db_run_finish(gl_db *db, const char *run_id, const char *status, int exit_code, const char *error,
                  char *err, size_t errlen) {
    if (!status || (strcmp(status, "FINISHED") && strcmp(status, "FAILED") && strcmp(status, "KILLED"))) {
        snprintf(err, errlen, "%s: run %s: a run ends FINISHED, FAILED or KILLED, not '%s'", db->path, run_id,
                 status ? status : "(null)");
        return -1;
    }
    return db_update_run(db, run_id, "cannot mark the run ended",
                         "UPDATE runs SET status=?2, end_time=?3, heartbeat=?3, exit_code=?4, error=?5 "
                         "WHERE run_id=?1",
                         err, errlen, "ttdit", run_id, status, db_now(), exit_code, error);
}

int db_run_heartbeat(gl_db *db, const char *run_id, char *err, size_t errlen) {
    return db_update_run(db, run_id, "cannot update the heartbeat",
                         "UPDATE runs SET heartbeat=?2, pid=?3 WHERE run_id=?1", err, errlen, "tdI", run_id,
                         db_now(), (long long)getpid());
}

int db_run_event(gl_db *db, const char *run_id, const char *kind, const char *detail, char *err, size_t errlen) {
    return db_write(db, "cannot record a run event",
                    "INSERT INTO run_events (run_id, time, kind, detail) VALUES (?1, ?2, ?3, ?4)", err, errlen,
                    "tdtt", run_id, db_now(), kind, detail);
}

typedef struct {
    int count;
    char *last;
    size_t lastlen;
} db_events_out;

static int db_row_events(sqlite3_stmt *st, void *ctx, char *err, size_t errlen) {
    db_events_out *e = ctx;
    (void)err, (void)errlen;
    e->count = sqlite3_column_int(st, 0);
    if (e->last) db_col_text(st, 1, e->last, e->lastlen);
    return 0;
}

/* This process's BLAS kernels, the variables that choose them, its threads and the CPU. */
void db_environment_text(char *out, size_t n) {
    const char *core = getenv("OPENBLAS_CORETYPE"), *l2 = getenv("OPENBLAS_L2_SIZE");
    char cpu[256] = "unknown", line[512];
    FILE *f = fopen("/proc/cpuinfo", "r");
    while (f && fgets(line, sizeof line, f)) {
        const char *colon = strchr(line, ':');
        if (!strncmp(line, "model name", 10) && colon) {
            snprintf(cpu, sizeof cpu, "%s", colon + 1 + (colon[1] == ' '));
            cpu[strcspn(cpu, "\n")] = '\0';
            break;
        }
    }
    if (f) fclose(f);
    snprintf(out, n, "%s | kernel %s | OPENBLAS_CORETYPE %s, OPENBLAS_L2_SIZE %s | %d OpenMP threads | cpu %s",
             openblas_get_config(), openblas_get_corename(), core ? core : "unset", l2 ? l2 : "unset",
             omp_get_max_threads(), cpu);
}

int db_run_environment(gl_db *db, const char *run_id, char *err, size_t errlen) {
    char env[DB_ENV_MAX];
    db_environment_text(env, sizeof env);
    return db_run_event(db, run_id, "environment", env, err, errlen);
}

int db_run_environment_ranks(gl_db *db, const char *run_id, const char *all, int ranks, size_t each, char *err,
                             size_t errlen) {
    for (int r = 0; r < ranks; r++) {
        char env[DB_ENV_MAX + 32];
        snprintf(env, sizeof env, "rank %d of %d: %.*s", r, ranks, (int)each, all + (size_t)r * each);
        if (db_run_event(db, run_id, "environment", env, err, errlen)) return -1;
    }
    return 0;
}

typedef struct {
    char *out;
    size_t n;
} db_kernels_out;

void db_kernel_from_event(char *list, size_t n, const char *detail) {
    const char *at = detail ? strstr(detail, "| kernel ") : NULL;
    if (!at) return;
    char name[48];
    at += strlen("| kernel ");
    size_t len = strcspn(at, " |");
    snprintf(name, sizeof name, "%.*s", (int)(len < sizeof name ? len : sizeof name - 1), at);
    db_kernel_list_add(list, n, name);
}

static int db_row_kernel(sqlite3_stmt *st, void *ctx, char *err, size_t errlen) {
    db_kernels_out *k = ctx;
    (void)err, (void)errlen;
    db_kernel_from_event(k->out, k->n, (const char *)sqlite3_column_text(st, 0));
    return 0;
}

void db_kernel_list_add(char *list, size_t n, const char *name) {
    if (!name[0]) return;
    /* distinct: a name already listed, whole between separators, is not added again */
    char padded[72], framed[512];
    snprintf(padded, sizeof padded, ", %s, ", name);
    snprintf(framed, sizeof framed, ", %s, ", list);
    if (strstr(framed, padded)) return;
    size_t used = strlen(list);
    if (used < n) snprintf(list + used, n - used, "%s%s", used ? ", " : "", name);
}

int db_run_kernels(gl_db *db, const char *run_id, char *out, size_t n, char *err, size_t errlen) {
    db_kernels_out k = {out, n};
    out[0] = 0;
    return db_query_each(db, "cannot read a run's environment events",
                         "SELECT detail FROM run_events WHERE run_id = ?1 AND kind = 'environment' "
                         "ORDER BY time, rowid",
                         db_row_kernel, &k, err, errlen, "t", run_id);
}

int db_run_events(gl_db *db, const char *run_id, const char *kind, char *last, size_t lastlen, char *err,
                  size_t errlen) {
    db_events_out e = {0, last, lastlen};
    int s = db_query_one(db, "cannot read run events",
                         "SELECT count(*), (SELECT detail FROM run_events WHERE run_id = ?1 AND "
                         "(?2 IS NULL OR kind = ?2) ORDER BY time DESC, rowid DESC LIMIT 1) FROM run_events "
                         "WHERE run_id = ?1 AND (?2 IS NULL OR kind = ?2)",
                         db_row_events, &e, err, errlen, "tt", run_id, kind);
    return s < 0 ? -1 : e.count;
}

typedef struct {
    gl_db *db;
    const char *run_id;
    char **config, *hash; /* hash: 65 bytes */
} db_config_out;

static int db_row_config(sqlite3_stmt *st, void *ctx, char *err, size_t errlen) {
    db_config_out *c = ctx;
    const unsigned char *t = sqlite3_column_text(st, 0);
    if (c->config && !(*c->config = strdup(t ? (const char *)t : ""))) {
        snprintf(err, errlen, "%s: out of memory reading the config of run %s", c->db->path, c->run_id);
        return -1;
    }
    if (c->hash) db_col_text(st, 1, c->hash, 65);
    return 0;
}

int db_run_config(gl_db *db, const char *run_id, char **config, char hash[65], char *err, size_t errlen) {
    db_config_out c = {db, run_id, config, hash};
    if (config) *config = NULL;
    return db_query_one(db, "cannot read a run's config", "SELECT config_text, config_hash FROM runs WHERE run_id = ?1",
                        db_row_config, &c, err, errlen, "t", run_id);
}

int db_run_config_set(gl_db *db, const char *run_id, const char *config_ini, const char *config_hash, char *err,
                      size_t errlen) {
    return db_update_run(db, run_id, "cannot replace the run's config",
                         "UPDATE runs SET config_text = ?2, config_hash = ?3 WHERE run_id = ?1", err, errlen, "ttt",
                         run_id, config_ini, config_hash);
}

/* ---- params, metrics, artifacts ---- */

/* One param row per key of the walk, its canonical text in params.value. */
typedef struct {
    gl_db *db;
    sqlite3_stmt *ins;
    const char *run_id;
    char *err;
    size_t errlen;
} db_param_ctx;

static int db_param_row(const gl_key *key, void *ctx) {
    db_param_ctx *c = ctx;
    char name[160];
    snprintf(name, sizeof name, "%s.%s", key->section, key->name);
    sqlite3_reset(c->ins);
    sqlite3_bind_text(c->ins, 1, c->run_id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(c->ins, 2, name, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(c->ins, 3, key->text, -1, SQLITE_TRANSIENT);
    if (sqlite3_step(c->ins) == SQLITE_DONE) return 0;
    db_fail(c->db, "cannot store a param", c->err, c->errlen);
    return -1;
}

int db_params_put(gl_db *db, const char *run_id, const gl_manifest *mf, char *err, size_t errlen) {
    int rc = -1;
    if (db_begin(db, err, errlen)) return -1;
    sqlite3_stmt *del = db_prepare(db, "DELETE FROM params WHERE run_id=?1", err, errlen);
    sqlite3_stmt *ins = db_prepare(db, "INSERT OR REPLACE INTO params (run_id, key, value) VALUES (?1, ?2, ?3)", err,
                                   errlen);
    if (!del || !ins) goto cleanup;
    sqlite3_bind_text(del, 1, run_id, -1, SQLITE_TRANSIENT);
    if (sqlite3_step(del) != SQLITE_DONE) { db_fail(db, "cannot replace params", err, errlen); goto cleanup; }
    db_param_ctx c = {db, ins, run_id, err, errlen};
    if (manifest_each_key(mf, db_param_row, &c)) goto cleanup;
    sqlite3_finalize(del);
    sqlite3_finalize(ins);
    del = ins = NULL;
    rc = db_commit(db, err, errlen);
cleanup:
    sqlite3_finalize(del);
    sqlite3_finalize(ins);
    if (rc) db_rollback(db);
    return rc;
}

int db_params_put_ini(gl_db *db, const char *run_id, const char *ini, char *err, size_t errlen) {
    gl_manifest *mf = malloc(sizeof *mf);
    char origin[192];
    if (!mf) { snprintf(err, errlen, "%s: out of memory storing params", db->path); return -1; }
    snprintf(origin, sizeof origin, "the config of run %s", run_id);
    int rc = manifest_load_text(mf, ini ? ini : "", origin, err, errlen) ? -1 : db_params_put(db, run_id, mf, err, errlen);
    free(mf);
    return rc;
}

/* One metric row of run_id (m->wall_time, else now), inside the caller's transaction. */
static int db_metric_put(gl_db *db, const char *run_id, const gl_metric *m, double now, char *err, size_t errlen) {
    const char *split = m->split ? m->split : "train", *name = m->name ? m->name : "";
    const char *params = db_params_or_none(m->params);
    char what[192];
    if (strlen(name) >= METRIC_NAME_MAX || strlen(params) >= METRIC_PARAMS_MAX) {
        snprintf(err, errlen, "%s: cannot log metric %s/%s %s of run %s: the name is too long (at most %d bytes, "
                 "params %d)", db->path, split, name, params, run_id, METRIC_NAME_MAX - 1, METRIC_PARAMS_MAX - 1);
        return -1;
    }
    const gl_prov *p = &m->prov;
    const int known = p->split[0] && p->count > 0;
    snprintf(what, sizeof what, "cannot log metric %s/%s at step %ld of run %s", split, name,
             m->step, run_id);
    return db_query_one(db, what,
                        "INSERT OR REPLACE INTO metrics (run_id, step, split, name, params, value, wall_time, "
                        "data_split, win_first, win_count, tokens, se) "
                        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
                        NULL, NULL, err, errlen, "tItttrdtIIrr", run_id, (long long)m->step, split, name, params,
                        m->value, m->wall_time > 0 ? m->wall_time : now, known ? p->split : "",
                        (long long)(known ? p->first : 0), (long long)(known ? p->count : 0),
                        known && p->tokens > 0 ? p->tokens : NAN, m->se > 0 ? m->se : NAN) < 0 ? -1 : 0;
}

int db_metrics_log(gl_db *db, const char *run_id, const gl_metric *rows, int n, char *err, size_t errlen) {
    double now = db_now();
    if (db_begin(db, err, errlen)) return -1;
    /* the run must exist (no foreign-key enforcement); its heartbeat is left alone */
    int found = db_run_exists(db, run_id, NULL, err, errlen);
    if (found == 0) snprintf(err, errlen, "%s: cannot log metrics: run %s is not in the registry", db->path, run_id);
    for (int i = 0; found == 1 && i < n; i++)
        if (db_metric_put(db, run_id, &rows[i], now, err, errlen)) found = -1;
    if (found != 1 || db_commit(db, err, errlen)) { db_rollback(db); return -1; }
    return 0;
}

int db_artifact_put(gl_db *db, const char *run_id, const char *kind, const char *path, char *err,
                    size_t errlen) {
    char hex[65];
    long long bytes = 0;
    /* Hash before the transaction: never hold the write lock while reading a large file. */
    if (sha256_file(path, hex, &bytes, err, errlen)) return -1;
    /* Stored relative to the run folder (its name there): the one rule every reader follows is
     * <results>/runs/<run_id>/<path>, wherever the training ran and wherever the results folder
     * is copied to; the path as given would be relative to the trainer's working folder. */
    const char *name = strrchr(path, '/');
    name = name ? name + 1 : path;
    return db_write(db, "cannot record the artifact",
                    "INSERT OR REPLACE INTO artifacts (run_id, kind, path, sha256, bytes, created_time) "
                    "VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                    err, errlen, "ttttId", run_id, kind, name, hex, bytes, db_now());
}

typedef struct {
    char *path;
    size_t pathlen;
    char *sha256; /* 65 bytes */
    long long *bytes;
} db_artifact_out;

static int db_row_artifact(sqlite3_stmt *st, void *ctx, char *err, size_t errlen) {
    db_artifact_out *a = ctx;
    (void)err, (void)errlen;
    if (a->path) db_col_text(st, 0, a->path, a->pathlen);
    if (a->sha256) db_col_text(st, 1, a->sha256, 65);
    if (a->bytes) *a->bytes = sqlite3_column_int64(st, 2);
    return 0;
}

int db_artifact_get(gl_db *db, const char *run_id, const char *kind, char *path_out, size_t pathlen,
                    char sha256_out[65], long long *bytes, char *err, size_t errlen) {
    db_artifact_out a = {path_out, pathlen, sha256_out, bytes};
    return db_query_one(db, "cannot look up the artifact",
                        "SELECT path, sha256, bytes FROM artifacts WHERE run_id=?1 AND kind=?2", db_row_artifact, &a,
                        err, errlen, "tt", run_id, kind);
}

/* ---- sweeps: claiming and releasing runs ---- */

/* 1 when the process pid is alive on this machine.  A zombie (killed, not yet
 * reaped by its parent) counts as dead. */
static int db_pid_alive(long long pid) {
    if (pid <= 0) return 0;
    if (kill((pid_t)pid, 0) != 0 && errno != EPERM) return 0;
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%lld/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f) return 1; /* no /proc: trust kill() */
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *close = strrchr(buf, ')'); /* "pid (comm) S ..." — comm may hold spaces */
    return !(close && close[1] == ' ' && (close[2] == 'Z' || close[2] == 'X'));
}

/* What a claim or a staleness check reads of a run. */
typedef struct {
    char status[16];
    long long pid;
    int has_host;
    char host[256];
    double beat; /* 0 when never */
} db_run_state;

#define DB_RUN_STATE_SQL "SELECT status, pid, host, heartbeat FROM runs WHERE run_id=?1"

static int db_row_state(sqlite3_stmt *st, void *ctx, char *err, size_t errlen) {
    db_run_state *r = ctx;
    (void)err, (void)errlen;
    db_col_text(st, 0, r->status, sizeof r->status);
    r->pid = sqlite3_column_int64(st, 1);
    r->has_host = sqlite3_column_type(st, 2) != SQLITE_NULL;
    db_col_text(st, 2, r->host, sizeof r->host);
    r->beat = sqlite3_column_type(st, 3) == SQLITE_NULL ? 0 : sqlite3_column_double(st, 3);
    return 0;
}

int db_run_claim(gl_db *db, const char *const *run_ids, int n, double stale_s, int *was_interrupted,
                 char *err, size_t errlen) {
    int claimed = -2;
    double now = db_now();
    *was_interrupted = 0;
    if (db_begin(db, err, errlen)) return -1;
    for (int i = 0; i < n && claimed == -2; i++) {
        db_run_state r;
        int s = db_query_one(db, "cannot read a run's status", DB_RUN_STATE_SQL, db_row_state, &r, err, errlen, "t",
                             run_ids[i]);
        if (s < 0) goto fail;
        if (!s) continue; /* not registered: not ours to run */
        int take = 0, interrupted = 0;
        if (!strcmp(r.status, "SCHEDULED")) {
            take = 1;
        } else if (!strcmp(r.status, "KILLED")) {
            take = interrupted = 1; /* stopped by a signal: resume */
        } else if (!strcmp(r.status, "RUNNING")) {
            int same_host = r.has_host && !strcmp(r.host, db->host);
            if ((same_host && !db_pid_alive(r.pid)) || now - r.beat > stale_s) take = interrupted = 1;
        }
        if (!take) continue;
        if (db_query_one(db, "cannot claim a run",
                         "UPDATE runs SET status='RUNNING', pid=?2, host=?3, heartbeat=?4, end_time=NULL, "
                         "exit_code=NULL, error=NULL WHERE run_id=?1",
                         NULL, NULL, err, errlen, "tItd", run_ids[i], (long long)getpid(), db->host, now) < 0)
            goto fail;
        claimed = i;
        *was_interrupted = interrupted;
    }
    if (db_commit(db, err, errlen)) goto fail;
    return claimed;
fail:
    db_rollback(db);
    return -1;
}

int db_run_release(gl_db *db, const char *run_id, char *err, size_t errlen) {
    return db_update_run(db, run_id, "cannot release the run",
                         "UPDATE runs SET status='SCHEDULED', pid=NULL WHERE run_id=?1", err, errlen, "t", run_id);
}

/* ---- merging per-task databases ---- */

/* SQL rank of a status column, matching db_status_rank. */
#define DB_RANK(col)                                                                                 \
    "(CASE " col " WHEN 'SCHEDULED' THEN 1 WHEN 'RUNNING' THEN 2 WHEN 'KILLED' THEN 3 WHEN 'FAILED' " \
    "THEN 4 WHEN 'FINISHED' THEN 5 ELSE 0 END)"

/* One run of a task registry, checked before a merge changes anything: the
 * run-id grammar `train` enforces (db_run_id_check; a text value without a NUL
 * byte), an experiment the task registry holds, a status gatelab writes.
 * ctx: the task registry's path, for the message. */
static int db_merge_row_check(sqlite3_stmt *st, void *ctx, char *err, size_t errlen) {
    const char *src = ctx, *id = (const char *)sqlite3_column_text(st, 0);
    char why[256], shown[96];
    snprintf(shown, sizeof shown, "%.80s", id ? id : "(NULL)");
    for (char *p = shown; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f) *p = '?';
    if (sqlite3_column_type(st, 0) != SQLITE_TEXT || sqlite3_column_int64(st, 1) != (long long)strlen(id)) {
        snprintf(err, errlen, "%s: run id '%s' is not text of its own length (a NUL byte or another type): not a "
                 "run gatelab writes; nothing was merged", src, shown);
        return -1;
    }
    if (db_run_id_check(id, why, sizeof why)) {
        snprintf(err, errlen, "%s: %s (a run `train` refuses; tag, delete and restore could not address it): nothing "
                 "was merged", src, why);
        return -1;
    }
    if (sqlite3_column_type(st, 2) == SQLITE_NULL) {
        snprintf(err, errlen, "%s: run '%s' names experiment id %lld, which this task registry does not hold "
                 "(damaged or hand-edited): nothing was merged", src, shown, (long long)sqlite3_column_int64(st, 3));
        return -1;
    }
    const char *status = (const char *)sqlite3_column_text(st, 4);
    if (!status || !db_status_rank(status)) {
        snprintf(err, errlen, "%s: run '%s' has status '%.40s', not one gatelab writes: nothing was merged", src,
                 shown, status ? status : "(NULL)");
        return -1;
    }
    return 0;
}

int db_merge(gl_db *dst, const char *src_path, int *merged, int *skipped, char *err, size_t errlen) {
    int rc = -1, attached = 0;
    double counts[2] = {0, 0}; /* runs in the task file, runs taken from it */
    gl_db *src = NULL;
    if (access(src_path, R_OK) != 0) {
        snprintf(err, errlen, "%s: cannot read the task registry to merge: %s", src_path, strerror(errno));
        return -1;
    }
    /* Opening it read-only checks it is a registry of this schema; it is
     * then attached read-only: a merged file (a rank's registry, a committed
     * snapshot) is never written, not even its journal mode. */
    char uri[3 * GL_PATH_MAX + 32], wal[GL_PATH_MAX + 8];
    int immutable = 0;
    struct stat wsb;
    if (db_ro_uri(src_path, uri, sizeof uri, &immutable) ||
        (size_t)snprintf(wal, sizeof wal, "%s-wal", src_path) >= sizeof wal) {
        snprintf(err, errlen, "%s: registry path too long", src_path);
        return -1;
    }
    /* a folder this user cannot write: SQLite can read the file only as immutable, which does not see the
     * commits still in its -wal — merging it would drop them without a word */
    if (immutable && stat(wal, &wsb) == 0 && wsb.st_size > 0) {
        snprintf(err, errlen, "%s: the task registry is in a folder this user cannot write and %s holds %lld bytes "
                 "of commits not yet in the file, which a read-only open cannot see: nothing was merged; copy both "
                 "files to a writable folder (cp %s %s DIR/) and collect the copy, or let its owner fold the -wal in "
                 "(sqlite3 %s 'PRAGMA wal_checkpoint(TRUNCATE)')", src_path, wal, (long long)wsb.st_size, src_path,
                 wal, src_path);
        return -1;
    }
    if (db_open_readonly(&src, src_path, err, errlen)) return -1;
    db_close(src);
    src = NULL;
    if (db_query_one(dst, "cannot attach the task registry", "ATTACH DATABASE ?1 AS src", NULL, NULL, err, errlen, "t",
                     uri) < 0)
        goto cleanup;
    attached = 1;
    /* before anything is deleted: the task registry's tables are its own (by name: a file whose columns stand
     * in another order merges right), and every run in it is one `train` could have made */
    if (db_schema_tables_check(dst, "src", src_path, err, errlen)) goto cleanup;
    if (db_begin(dst, err, errlen)) goto cleanup;
    if (db_query_each(dst, "cannot read the task registry's runs",
                      "SELECT s.run_id, length(CAST(s.run_id AS BLOB)), se.name, s.experiment_id, s.status "
                      "FROM src.runs s LEFT JOIN src.experiments se ON se.id = s.experiment_id",
                      db_merge_row_check, (void *)src_path, err, errlen, "") < 0)
        goto cleanup;
    /* columns named, never SELECT *: rows are copied by name */
    static const char sql[] =
        "CREATE TEMP TABLE merge_take AS SELECT s.run_id AS run_id FROM src.runs s "
        "LEFT JOIN main.runs d ON d.run_id = s.run_id "
        "WHERE d.run_id IS NULL OR " DB_RANK("s.status") " > " DB_RANK("d.status") ";"
        "INSERT INTO main.experiments (name, manifest_text, manifest_hash, created_time) "
        "  SELECT name, manifest_text, manifest_hash, created_time FROM src.experiments WHERE true "
        "  ON CONFLICT(name) DO NOTHING;"
        "DELETE FROM main.params WHERE run_id IN (SELECT run_id FROM merge_take);"
        "DELETE FROM main.metrics WHERE run_id IN (SELECT run_id FROM merge_take);"
        "DELETE FROM main.artifacts WHERE run_id IN (SELECT run_id FROM merge_take);"
        "DELETE FROM main.run_events WHERE run_id IN (SELECT run_id FROM merge_take);"
        "DELETE FROM main.tags WHERE run_id IN (SELECT run_id FROM merge_take);"
        "DELETE FROM main.runs WHERE run_id IN (SELECT run_id FROM merge_take);"
        "INSERT INTO main.runs (run_id, experiment_id, name, config_text, config_hash, seed, git_commit, "
        "  git_dirty, host, pid, status, created_time, start_time, end_time, heartbeat, attempts, exit_code, error, "
        "  deleted_time) "
        "  SELECT s.run_id, de.id, s.name, s.config_text, s.config_hash, s.seed, s.git_commit, s.git_dirty, "
        "  s.host, s.pid, s.status, s.created_time, s.start_time, s.end_time, s.heartbeat, s.attempts, "
        "  s.exit_code, s.error, s.deleted_time FROM src.runs s JOIN src.experiments se ON se.id = s.experiment_id "
        "  JOIN main.experiments de ON de.name = se.name WHERE s.run_id IN (SELECT run_id FROM merge_take);"
        "INSERT INTO main.params (run_id, key, value) SELECT run_id, key, value FROM src.params "
        "  WHERE run_id IN (SELECT run_id FROM merge_take);"
        "INSERT INTO main.metrics (run_id, step, split, name, params, value, wall_time, data_split, win_first, "
        "  win_count, tokens, se) SELECT run_id, step, split, name, params, value, wall_time, data_split, win_first, "
        "  win_count, tokens, se FROM src.metrics WHERE run_id IN (SELECT run_id FROM merge_take);"
        "INSERT INTO main.artifacts (run_id, kind, path, sha256, bytes, created_time) "
        "  SELECT run_id, kind, path, sha256, bytes, created_time FROM src.artifacts "
        "  WHERE run_id IN (SELECT run_id FROM merge_take);"
        "INSERT INTO main.run_events (run_id, time, kind, detail) SELECT run_id, time, kind, detail "
        "  FROM src.run_events WHERE run_id IN (SELECT run_id FROM merge_take);"
        "INSERT INTO main.tags (run_id, key, value) SELECT run_id, key, value FROM src.tags "
        "  WHERE run_id IN (SELECT run_id FROM merge_take);";
    if (db_exec(dst, sql, "cannot merge the task registry", err, errlen)) goto cleanup;
    if (db_query_one(dst, "cannot count merged runs",
                     "SELECT (SELECT count(*) FROM src.runs), (SELECT count(*) FROM merge_take)", db_row_reals, counts,
                     err, errlen, "") != 1)
        goto cleanup;
    if (db_exec(dst, "DROP TABLE temp.merge_take", "cannot drop the merge list", err, errlen)) goto cleanup;
    if (db_commit(dst, err, errlen)) goto cleanup;
    if (merged) *merged = (int)counts[1];
    if (skipped) *skipped = (int)(counts[0] - counts[1]);
    rc = 0;
cleanup:
    if (rc) {
        db_rollback(dst);
        sqlite3_exec(dst->h, "DROP TABLE IF EXISTS temp.merge_take", NULL, NULL, NULL);
        if (err[0] && !strstr(err, src_path)) {
            size_t len = strlen(err);
            snprintf(err + len, errlen > len ? errlen - len : 0, " (merging %s)", src_path);
        }
    }
    if (attached) sqlite3_exec(dst->h, "DETACH DATABASE src", NULL, NULL, NULL);
    return rc;
}

/* ---- small queries (tests, collect, sweeps) ---- */

int db_metric_get(gl_db *db, const char *run_id, long step, const char *split, const char *name,
                  const char *params, double *value, char *err, size_t errlen) {
    double v[1] = {NAN};
    int rc = db_query_one(db, "cannot read a metric",
                          "SELECT value FROM metrics WHERE run_id=?1 AND step=?2 AND split=?3 AND name=?4 AND "
                          "params=?5 ORDER BY win_count DESC",
                          db_row_reals, v, err, errlen, "tIttt", run_id, (long long)step, split, name,
                          db_params_or_none(params));
    if (rc == 1) *value = v[0];
    return rc;
}

long long db_count_rows(gl_db *db, const char *table, const char *run_id, char *err, size_t errlen) {
    static const char *const tables[] = {"experiments", "runs", "params", "metrics", "artifacts", "run_events"};
    int known = 0;
    for (int i = 0; i < 6; i++) known |= !strcmp(table, tables[i]);
    if (!known || (run_id && !strcmp(table, "experiments"))) {
        snprintf(err, errlen, "%s: cannot count rows of '%s'%s", db->path, table, run_id ? " by run" : "");
        return -1;
    }
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM %s%s", table, run_id ? " WHERE run_id=?1" : "");
    long long n = -1;
    if (db_query_one(db, "cannot count rows", sql, db_row_int64, &n, err, errlen, run_id ? "t" : "", run_id) != 1)
        return -1;
    return n;
}

int db_schema_version_get(gl_db *db, char *err, size_t errlen) {
    int v = -1;
    if (db_schema_version(db, &v, err, errlen)) return -1;
    return v;
}

/* ---- reading, for tables and figures ---- */

int db_param_get(gl_db *db, const char *run_id, const char *key, char *value, size_t valuelen, char *err,
                 size_t errlen) {
    sqlite3_stmt *st = db_prepare(db, "SELECT value FROM params WHERE run_id = ?1 AND key = ?2", err, errlen);
    if (!st) return -1;
    sqlite3_bind_text(st, 1, run_id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, key, -1, SQLITE_TRANSIENT);
    int s = sqlite3_step(st), rc = -1;
    if (s == SQLITE_ROW) {
        db_col_text(st, 0, value, valuelen);
        rc = 1;
    } else if (s == SQLITE_DONE) {
        rc = 0;
    } else {
        db_fail(db, "cannot read a parameter", err, errlen);
    }
    sqlite3_finalize(st);
    return rc;
}

int db_param_typed(gl_db *db, const char *run_id, const char *key, gl_key_value *value, char *err, size_t errlen) {
    char text[sizeof value->text], origin[256];
    int rc = db_param_get(db, run_id, key, text, sizeof text, err, errlen);
    if (rc != 1) return rc;
    snprintf(origin, sizeof origin, "%s: run %s's param", db->path, run_id);
    return manifest_parse_key(key, text, origin, value, err, errlen) ? -1 : 1;
}

static int db_row_metric_val(sqlite3_stmt *st, void *ctx, char *err, size_t errlen) {
    gl_metric_val *out = ctx;
    (void)err, (void)errlen;
    out->value = db_col_real(st, 0);
    out->step = (long)sqlite3_column_int64(st, 1);
    out->prov = db_col_prov(st, 2);
    out->se = db_col_real(st, 6);
    return 0;
}

int db_metric_at(gl_db *db, const char *run_id, const char *split, const char *name, const char *params,
                 const gl_prov *match, gl_metric_val *out, char *err, size_t errlen) {
    return db_query_one(db, "cannot read a metric",
                        "SELECT value, step, data_split, win_first, win_count, tokens, se FROM metrics "
                        "WHERE run_id = ?1 AND split = ?2 AND name = ?3 AND params = ?7 AND (?4 IS NULL OR "
                        "(data_split = ?4 AND win_first = ?5 AND win_count = ?6)) "
                        "ORDER BY step DESC, win_count DESC LIMIT 1",
                        db_row_metric_val, out, err, errlen, "ttttIIt", run_id, split, name,
                        match ? match->split : NULL, match ? (long long)match->first : 0LL,
                        match ? (long long)match->count : 0LL, db_params_or_none(params));
}

int db_metric_last(gl_db *db, const char *run_id, const char *split, const char *name, const char *params,
                   double *value, long *step, char *err, size_t errlen) {
    gl_metric_val v;
    int rc = db_metric_at(db, run_id, split, name, params, NULL, &v, err, errlen);
    if (rc == 1) {
        *value = v.value;
        if (step) *step = v.step;
    }
    return rc;
}

static int db_fill_point(const db_rows *r, sqlite3_stmt *st, void *elem, char *err, size_t errlen) {
    gl_metric_point *p = elem;
    (void)r, (void)err, (void)errlen;
    p->step = (long)sqlite3_column_int64(st, 0);
    p->value = db_col_real(st, 1);
    p->wall_time = sqlite3_column_double(st, 2);
    p->prov = db_col_prov(st, 3);
    return 0;
}

int db_metric_series(gl_db *db, const char *run_id, const char *split, const char *name, const char *params,
                     gl_metric_point **pts, int *n, char *err, size_t errlen) {
    db_rows r = {.db = db, .size = sizeof **pts, .fill = db_fill_point, .run_id = run_id, .split = split};
    int rc = db_query_each(db, "cannot read a metric series",
                           "SELECT step, value, wall_time, data_split, win_first, win_count, tokens FROM metrics "
                           "WHERE run_id = ?1 AND split = ?2 AND name = ?3 AND params = ?4 "
                           "ORDER BY step, win_count DESC",
                           db_rows_add, &r, err, errlen, "tttt", run_id, split, name,
                           db_params_or_none(params));
    return db_rows_take(&r, rc, (void **)pts, n);
}

/* The key (name, params) in columns 0 and 8, as stored. */
static int db_fill_latest(const db_rows *r, sqlite3_stmt *st, void *elem, char *err, size_t errlen) {
    gl_metric_latest *v = elem;
    const char *name = (const char *)sqlite3_column_text(st, 0);
    const char *params = (const char *)sqlite3_column_text(st, 8);
    if (!name || !params || strlen(name) >= sizeof v->key.name || strlen(params) >= sizeof v->key.params) {
        snprintf(err, errlen, "%s: run %s: metric %s/%s %s is longer than this gatelab reads (%d bytes, params %d)",
                 r->db->path, r->run_id, r->split, name ? name : "NULL", params ? params : "NULL",
                 (int)sizeof v->key.name - 1, (int)sizeof v->key.params - 1);
        return -1;
    }
    strcpy(v->key.name, name);
    strcpy(v->key.params, params);
    v->value = db_col_real(st, 1);
    v->step = (long)sqlite3_column_int64(st, 2);
    v->prov = db_col_prov(st, 3);
    v->se = db_col_real(st, 7);
    return 0;
}

int db_metrics_latest(gl_db *db, const char *run_id, const char *split, gl_metric_latest **rows, int *n,
                      char *err, size_t errlen) {
    db_rows r = {.db = db, .size = sizeof **rows, .fill = db_fill_latest, .run_id = run_id, .split = split};
    int rc = db_query_each(db, "cannot read a split's metrics",
                           "SELECT m.name, m.value, m.step, m.data_split, m.win_first, m.win_count, m.tokens, "
                           "m.se, m.params FROM metrics m WHERE m.run_id = ?1 AND m.split = ?2 "
                           "AND m.step = (SELECT max(step) FROM metrics x WHERE x.run_id = m.run_id "
                           "AND x.split = m.split AND x.name = m.name AND x.params = m.params "
                           "AND x.data_split = m.data_split "
                           "AND x.win_first = m.win_first AND x.win_count = m.win_count) "
                           "ORDER BY m.name, m.win_count DESC, m.step DESC",
                           db_rows_add, &r, err, errlen, "tt", run_id, split);
    return db_rows_take(&r, rc, (void **)rows, n);
}

const gl_metric_latest *db_metrics_latest_get(const gl_metric_latest *rows, int n, const metric_key *key,
                                              const gl_metric_latest *like) {
    for (int i = 0; i < n; i++)
        if (!strcmp(rows[i].key.name, key->name) && !strcmp(rows[i].key.params, key->params) &&
            (!like || (rows[i].step == like->step && db_prov_same(&rows[i].prov, &like->prov))))
            return &rows[i];
    return NULL;
}

double db_metrics_latest_find(const gl_metric_latest *rows, int n, const metric_key *key) {
    const gl_metric_latest *r = db_metrics_latest_get(rows, n, key, NULL);
    return r ? r->value : NAN;
}

double db_metrics_latest_find_like(const gl_metric_latest *rows, int n, const metric_key *key,
                                   const gl_metric_latest *like) {
    const gl_metric_latest *r = db_metrics_latest_get(rows, n, key, like);
    return r ? r->value : NAN;
}

int db_run_t0(gl_db *db, const char *run_id, double *t0, char *err, size_t errlen) {
    double v[1] = {NAN};
    int rc = db_query_one(db, "cannot read wall times",
                          "SELECT min(wall_time) FROM metrics WHERE run_id = ?1 AND split IN ('train','val')",
                          db_row_reals, v, err, errlen, "t", run_id);
    if (rc < 0) return -1;
    if (!isnan(v[0])) *t0 = v[0];
    return !isnan(v[0]);
}

/* ---- stale runs: RUNNING in the registry, nobody running them ---- */

int db_run_stale(gl_db *db, const char *run_id, double stale_s, char *why, size_t whylen, char *err,
                 size_t errlen) {
    db_run_state r;
    why[0] = '\0';
    int s = db_query_one(db, "cannot read a run's status", DB_RUN_STATE_SQL, db_row_state, &r, err, errlen, "t",
                         run_id);
    if (s <= 0 || strcmp(r.status, "RUNNING")) return s < 0 ? -1 : 0;
    double age = db_now() - r.beat;
    const char *host = r.has_host ? r.host : "an unknown host";
    if (r.has_host && !strcmp(r.host, db->host) && !db_pid_alive(r.pid)) {
        snprintf(why, whylen, "process %lld on %s is gone (last heartbeat %.0f s ago)", r.pid, r.host, age);
        return 1;
    }
    if (age > stale_s) {
        snprintf(why, whylen, "no heartbeat for %.0f s (more than %.0f s; process %lld on %s)", age, stale_s, r.pid,
                 host);
        return 1;
    }
    return 0;
}
