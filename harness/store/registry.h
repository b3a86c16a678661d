/*
 * registry.h — the experiment registry: one SQLite database (results/gatelab.db
 * by default) holding experiments, runs, their flattened parameters, metrics
 * and artifacts, in the vocabulary MLflow users know.
 *
 * Every connection is opened in WAL mode with a busy timeout; every write is
 * one short BEGIN IMMEDIATE transaction (never held across a training step).
 * Timestamps come from the C clock (unix seconds as REAL).  A NaN or infinite
 * metric value is stored as NULL, never as a number.
 *
 * Run lifecycle: SCHEDULED -> RUNNING -> FINISHED | FAILED | KILLED.
 *
 * All functions returning int return 0 on success and -1 on failure with a
 * message in err (naming the database file and what to do), unless stated.
 * The registry's own files (registry.c, registry_runs.c, registry_schema.c and registry_sql.c,
 * through registry_sql.h) are the only ones that include sqlite3.h: training, sweeps,
 * `runs`, the analyses, tables and figures all read and write through here.
 * Metric names beyond the bare training ones are built and parsed by
 * metric.h.
 */
#ifndef GATELAB_HARNESS_REGISTRY_H
#define GATELAB_HARNESS_REGISTRY_H

#include <stddef.h>

#include "manifest.h"
#include "metric.h"

#define DB_SCHEMA_VERSION 3
#define DB_DEFAULT_PATH "results/gatelab.db"
/* Tags (docs/registry.md): a key of 1-63 bytes, a value of at most
 * DB_TAG_VALUE_MAX bytes, at most DB_TAGS_PER_RUN per run; so every run's
 * tags fit DB_TAGS_TEXT_MAX and every listing shows them whole. */
#define DB_TAG_VALUE_MAX 1024
/* Run ids (docs/registry.md, "Run ids"): 1 to DB_RUN_ID_MAX bytes, no
 * control byte (below 0x20, or 0x7f: no newline, tab or escape), no '/', not
 * "." or "..", not starting with '-'.  An id names a folder and a registry
 * row, and is printed in every listing whole. */
#define DB_RUN_ID_MAX 127
#define DB_TAGS_PER_RUN 16
#define DB_TAGS_TEXT_MAX (DB_TAGS_PER_RUN * (63 + 1 + DB_TAG_VALUE_MAX + 1) + 1)

typedef struct gl_db gl_db;

/* Open (creating the parent folder, the file and the schema) the registry
 * at path; a file of another schema version is refused (registry_schema.c).  *out owns the connection; close it
 * with db_close. */
int db_open(gl_db **out, const char *path, char *err, size_t errlen);

/* 0 when id follows the run-id grammar (DB_RUN_ID_MAX), else -1 with why
 * ("run id 'a\nb': byte 2 is a control character (0x0a)"). */
int db_run_id_check(const char *id, char *why, size_t whylen);
/* db_open for commands that change a registry but create no run (tag,
 * delete, restore): path must already be a registry; nothing is created. */
int db_open_existing(gl_db **out, const char *path, char *err, size_t errlen);
void db_close(gl_db *db); /* accepts NULL */

/* Open an existing registry read-only (tables, figures): the file must exist,
 * hold a runs table and be at DB_SCHEMA_VERSION; nothing is created or
 * written.  Close with db_close. */
int db_open_readonly(gl_db **out, const char *path, char *err, size_t errlen);

/* The path the database was opened with. */
const char *db_path(const gl_db *db);

/* Find or create the experiment called name; on creation stores the manifest
 * text and its hash (an existing experiment keeps its first manifest). */
int db_experiment_ensure(gl_db *db, const char *name, const char *manifest_text, long long *exp_id,
                         char *err, size_t errlen);

/* Create a run (fails if run_id exists).  status is normally "SCHEDULED" or "RUNNING". */
int db_run_create(gl_db *db, long long exp_id, const char *run_id, const char *name,
                  const char *config_ini, const char *config_hash, unsigned long long seed,
                  const char *status, char *err, size_t errlen);

/* 1 if run_id exists (its status copied to status_out[16] if non-NULL), 0 if not, -1 on error. */
int db_run_exists(gl_db *db, const char *run_id, char *status_out, char *err, size_t errlen);

/* run_id's first start and end times (unix seconds; NaN when not set):
 * 1 found, 0 no such run, -1 error.  Sweeps estimate what is left from them. */
int db_run_times(gl_db *db, const char *run_id, double *start, double *end, char *err, size_t errlen);
/* The git commit the run was trained from ("" unknown) and whether the tree was
 * dirty (1, 0; -1 unknown): 1 found, 0 no such run, -1 error. */
int db_run_commit(gl_db *db, const char *run_id, char commit[48], int *dirty, char *err, size_t errlen);

/* The commit the running binary was built from (40 hex digits; "" unknown)
 * and whether tracked files differed from it then (1, 0; -1 unknown): set
 * once by the binary's main (from the Makefile), recorded by db_run_start.
 * Never read from the working directory: a sweep started in one checkout
 * may run a binary built from another. */
void db_set_build(const char *commit, int dirty);

/* Mark run_id RUNNING: start time (kept if already set), host, pid, the build's
 * git commit and dirty flag (db_set_build; NULL when unknown), heartbeat. */
int db_run_start(gl_db *db, const char *run_id, char *err, size_t errlen);

/* Mark run_id ended: status FINISHED | FAILED | KILLED, end time, exit code, error text (or NULL). */
int db_run_finish(gl_db *db, const char *run_id, const char *status, int exit_code,
                  const char *error, char *err, size_t errlen);

/* Refresh run_id's heartbeat (and pid): the training loop calls it at every
 * metric flush, so a RUNNING run whose heartbeat is old has lost its process.
 * Nothing else refreshes it (logging metrics does not: an analysis logging
 * into a run must not make a dead training look alive). */
int db_run_heartbeat(gl_db *db, const char *run_id, char *err, size_t errlen);

/* Record an event in run_id's history (table run_events): kind is a short
 * word ("config_change"), detail the text that says what happened. */
int db_run_event(gl_db *db, const char *run_id, const char *kind, const char *detail, char *err, size_t errlen);

/* The number of run_id's events of kind (NULL: any); the detail of the
 * latest copied to last (lastlen bytes) when last is not NULL.  -1 on error. */
/* Record what made this attempt's numbers besides the code and the config
 * as an `environment` event of run_id: OpenBLAS's config and kernel,
 * OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE (or "unset"), the OpenMP threads and
 * the CPU.  Called at every attempt's start, since a run resumed on another
 * machine can change every one of them. */
int db_run_environment(gl_db *db, const char *run_id, char *err, size_t errlen);
/* This process's environment as db_run_environment records it (at most DB_ENV_MAX bytes with the NUL). */
#define DB_ENV_MAX 1024
void db_environment_text(char *out, size_t n);
/* A data-parallel attempt's environments, one `environment` event per rank ("rank R of N: …"):
 * all holds ranks strings of each bytes, rank 0's first (dist_gather_text).  Ranks on other
 * machines can differ in every item, and each rank's kernel sums its own part of the batch. */
int db_run_environment_ranks(gl_db *db, const char *run_id, const char *all, int ranks, size_t each, char *err,
                             size_t errlen);
/* The OpenBLAS kernels run_id's attempts recorded in their environment
 * events, distinct, in the order first seen, ", "-separated into out ("" when
 * none was recorded: runs trained before gatelab recorded them).  Returns the
 * number of environment events read (one per attempt; one per rank of a
 * data-parallel attempt), or -1 with a message. */
int db_run_kernels(gl_db *db, const char *run_id, char *out, size_t n, char *err, size_t errlen);
/* Add name to such a list (of size n) unless it is listed already. */
void db_kernel_list_add(char *list, size_t n, const char *name);
/* The kernel an environment event's detail names ("| kernel Haswell |"), added to list as above. */
void db_kernel_from_event(char *list, size_t n, const char *detail);
int db_run_events(gl_db *db, const char *run_id, const char *kind, char *last, size_t lastlen, char *err,
                  size_t errlen);

/* run_id's stored config text and hash (either out may be NULL): 1 found, 0
 * no such run, -1 error.  *config is malloc'd (the caller frees it). */
int db_run_config(gl_db *db, const char *run_id, char **config, char hash[65], char *err, size_t errlen);

/* Replace run_id's config text and hash (a resume that changed the
 * configuration with --allow-config-change). */
int db_run_config_set(gl_db *db, const char *run_id, const char *config_ini, const char *config_hash, char *err,
                      size_t errlen);

/* Replace run_id's params with one "section.key" = value row per key of the typed walk
 * (manifest_each_key), value the key's canonical text as manifest_to_ini writes it.  The column
 * stays TEXT (schema 3: docs/registry.md, "Typed parameters"); db_param_typed reads a value back
 * typed. */
int db_params_put(gl_db *db, const char *run_id, const gl_manifest *mf, char *err, size_t errlen);
/* The same from config INI text, read by manifest_load_text (so a text missing keys stores their
 * defaults, and an unknown key or bad value is an error naming run_id). */
int db_params_put_ini(gl_db *db, const char *run_id, const char *ini, char *err, size_t errlen);

/* What a value was measured on (its provenance): the data split, the
 * evaluation windows [first, first + count) of that split, and the scored
 * tokens.  split "" (and count 0): not an evaluation over fixed windows
 * (training-batch metrics) or unknown (rows written before schema 2).  The
 * checkpoint step is the metric row's step.  Rows of one name at one step
 * with different provenance are different measurements: both are kept. */
typedef struct {
    char split[16];    /* "val", "test", "train"; "" none / unknown */
    long first, count; /* windows of T tokens; count 0: unknown */
    double tokens;     /* scored tokens; <= 0 or NaN: unknown */
} gl_prov;

/* Provenance of count windows from first of split with tokens scored. */
gl_prov db_prov(const char *split, long first, long count, double tokens);

/* 1 when a and b name the same token set (split, first, count). */
int db_prov_same(const gl_prov *a, const gl_prov *b);

/* A short readable form: "val[0,32) 2048 tok", "val[0,1741) 111424 tok",
 * "?" when unknown.  Returns out. */
const char *db_prov_str(const gl_prov *p, char *out, size_t n);

typedef struct {
    long step;
    const char *split;  /* "train", "val", "test", "ablation", "analysis", ... (the row's namespace) */
    const char *name;   /* "loss", "active_frac", "tlops_saved", "zero.delta_loss", ... (store/metric.h) */
    const char *params; /* its parameters, canonical JSON (store/metric.h metric_key); NULL: "{}" */
    double value;       /* NaN / inf are stored as NULL */
    double wall_time;   /* unix seconds; <= 0 means "now" */
    gl_prov prov;       /* what value was measured on (zero: none) */
    double se;          /* standard error of value (same units); <= 0 or NaN: none */
} gl_metric;

/* Append n metric rows in one BEGIN IMMEDIATE transaction (run_id must exist).
 * A row with the same (run, step, split, name, provenance) replaces the
 * earlier one (a resumed run re-logging a step does not duplicate it); a row
 * measured on other windows is kept beside it. */
int db_metrics_log(gl_db *db, const char *run_id, const gl_metric *rows, int n, char *err,
                   size_t errlen);

/* Record the file at path (in run_id's folder) as its artifact of the given kind ("ckpt",
 * "trace", ...), with its sha256 and size; replaces the same (run, kind).  The path stored is
 * the file's name in the run folder: readers find it at <results>/runs/<run_id>/<path>. */
int db_artifact_put(gl_db *db, const char *run_id, const char *kind, const char *path, char *err,
                    size_t errlen);

/* Look up run_id's artifact of this kind: 1 found (path, sha256 hex and bytes
 * copied to those that are non-NULL), 0 none, -1 error. */
int db_artifact_get(gl_db *db, const char *run_id, const char *kind, char *path_out, size_t pathlen,
                    char sha256_out[65], long long *bytes, char *err, size_t errlen);

/* Every lookup names a metric as it is stored (store/metric.h): name and
 * params, NULL params meaning "{}" (a name without parameters: "loss").
 *
 * One metric value: 1 found (*value NaN when stored as NULL), 0 none, -1 error.
 * Of several measurements at that step, the one on the most windows. */
int db_metric_get(gl_db *db, const char *run_id, long step, const char *split, const char *name,
                  const char *params, double *value, char *err, size_t errlen);

/* Rows of table ("experiments", "runs", "params", "metrics", "artifacts"), only
 * those of run_id when it is non-NULL (not for "experiments").  -1 on error. */
long long db_count_rows(gl_db *db, const char *table, const char *run_id, char *err, size_t errlen);

/* Stored schema version, or -1 on error. */
int db_schema_version_get(gl_db *db, char *err, size_t errlen);

/* ---- used by sweeps, `runs`, `collect` and tables ---- */

/* Current unix time in seconds (C clock). */
double db_now(void);

/* Atomically claim one run among the n ids: the first (in the given order)
 * whose status is SCHEDULED, or RUNNING with a dead pid on this host or a
 * heartbeat older than stale_s seconds.  The claimed run becomes RUNNING with
 * this process's pid and host.  Returns the index claimed, -2 if none is
 * claimable, -1 on error.  *was_interrupted is set to 1 when the claimed run
 * had been RUNNING before (an interrupted run to resume). */
int db_run_claim(gl_db *db, const char *const *run_ids, int n, double stale_s,
                 int *was_interrupted, char *err, size_t errlen);

/* Put a claimed run back to SCHEDULED (used when a worker is stopped before it starts the run). */
int db_run_release(gl_db *db, const char *run_id, char *err, size_t errlen);

/* Rows for `gatelab runs`.  Strings are "" and doubles NaN when absent. */
typedef struct {
    char run_id[128];
    char experiment[128];
    char name[128];
    char status[16];
    long step;               /* largest step with any metric (-1: none) */
    double train_loss;       /* last train/loss */
    double val_loss;         /* the headline loss (db_run_headline: hard.loss for a routed model, else
                              * final.loss; the whole split), else the last periodic val/loss; NaN for a
                              * routed model whose hard loss is not recorded */
    int val_headline;        /* 1: val_loss is the headline; 0: a periodic evaluation (or none) */
    int val_kind;            /* gl_headline_kind of the headline (HEADLINE_NONE with a periodic val_loss) */
    double val_soft;         /* a routed model's soft headline, final.loss (NaN otherwise) */
    long val_step;           /* the checkpoint step val_loss was measured at (-1: none) */
    double val_se;           /* its standard error (NaN: unknown) */
    gl_prov val_prov;        /* what val_loss was measured on */
    double active_frac;      /* the headline's α, else the last active_frac (any split) */
    double tlops_saved;      /* the headline's, else the last tlops_saved (any split) */
    double tokens_per_s;     /* last tokens_per_s (any split) */
    double start_time, end_time, heartbeat;
    int exit_code;           /* -1 when not set */
    char error[256];
    char variant[64];        /* baseline | resformer | satformer, "+tsa" / "+early_exit" / "+<cross_layer>"
                              * appended: the label tables use, from the run's params */
    char tags[DB_TAGS_TEXT_MAX]; /* "key=value" lines by key, joined by '\n' ("" none; a value holds no newline) */
    double deleted_time;     /* unix seconds of `gatelab delete`; NaN while visible */
    char host[64];           /* the machine that ran it last ("" not recorded) */
    int attempts;            /* how many times it was started (a resume or a retrain after a lost machine: > 1) */
} gl_run_row;

/* Which runs db_runs_find lists. */
typedef struct {
    const char *experiment;  /* NULL: any */
    const char *status;      /* NULL: any */
    const char *run_id;      /* NULL: any */
    const char *const *tags; /* ntags "key=value" texts a run must all carry */
    int ntags;
    int deleted;             /* 0 hide deleted runs, 1 list them too */
} gl_run_filter;

/* List the runs f selects, ordered by experiment then run id.  *rows is
 * malloc'd (the caller frees it).  A tag filter without '=' is an error. */
int db_runs_find(gl_db *db, const gl_run_filter *f, gl_run_row **rows, int *n, char *err, size_t errlen);

/* List runs filtered by experiment and status (either may be NULL), ordered
 * by experiment then run id, without deleted runs (db_runs_find with those
 * two filters).  *rows is malloc'd (the caller frees it). */
int db_runs_list(gl_db *db, const char *experiment, const char *status, gl_run_row **rows,
                 int *n, char *err, size_t errlen);

/* ---- reading, for tables and figures ---- */

/* A run's parameter "section.key": 1 found (copied to value), 0 none, -1 error. */
int db_param_get(gl_db *db, const char *run_id, const char *key, char *value, size_t valuelen, char *err,
                 size_t errlen);
/* The same as its typed value (manifest_parse_key: the manifest's parser and key table, never atof):
 * 1 found, 0 none, -1 error (a stored text the manifest does not accept names the run and key). */
int db_param_typed(gl_db *db, const char *run_id, const char *key, gl_key_value *value, char *err, size_t errlen);

/* The value at the largest step of (split, name): 1 found (*value NaN when
 * stored as NULL; *step the step, if step is not NULL), 0 none, -1 error.
 * Of several measurements at that step, the one on the most windows. */
int db_metric_last(gl_db *db, const char *run_id, const char *split, const char *name, const char *params,
                   double *value, long *step, char *err, size_t errlen);

/* A value with what it was measured on. */
typedef struct {
    double value;  /* NaN when stored as NULL */
    double se;     /* NaN when none */
    long step;
    gl_prov prov;
} gl_metric_val;

/* Like db_metric_last with the provenance and standard error: when match is
 * not NULL only rows on the same token set count.  1 found, 0 none, -1 error. */
int db_metric_at(gl_db *db, const char *run_id, const char *split, const char *name, const char *params,
                 const gl_prov *match, gl_metric_val *out, char *err, size_t errlen);

/* A run's headline on a split, by the one rule every view follows (runs, compare, tables, figures,
 * reports, the dashboard, the Python package), stated once as the registry's view run_headline
 * (scripts/python/gatelab/views.sql) and read from it here: a model that routes depth
 * (model.depth_routing = tsa or early_exit) is judged with the skipping done, its hard.* rows (the
 * whole split, tokens with p > 0.5 or past their exit really skip); every other model by its
 * final.* rows.  The soft loss of a routed model (final.loss: every block runs, each update scaled
 * by 1 − p) is kept beside it, named, never as the headline. */
typedef enum {
    HEADLINE_NONE = 0,     /* no final.* row on the split */
    HEADLINE_FINAL,        /* final.*: the model has nothing to skip */
    HEADLINE_HARD,         /* hard.*: a routed model, the skipping done */
    HEADLINE_HARD_MISSING, /* a routed model with only its soft final.* recorded (`gatelab eval RUN --record`) */
} gl_headline_kind;

typedef struct {
    gl_headline_kind kind;
    const char *prefix; /* "final" or "hard": the metric names the headline reads (prefix.loss, ...) */
    gl_metric_val loss; /* the headline loss (kind FINAL or HARD; the soft one for HARD_MISSING, se NaN) */
    double soft_loss;   /* a routed model's final.loss on the same tokens (NaN otherwise) */
} gl_headline;

/* The headline of run_id on split (as above; split val or test, the splits the view covers).  0, or
 * -1 with err. */
int db_run_headline(gl_db *db, const char *run_id, const char *split, gl_headline *h, char *err, size_t errlen);


typedef struct {
    long step;
    double value;     /* NaN when stored as NULL */
    double wall_time; /* unix seconds */
    gl_prov prov;
} gl_metric_point;

/* Every row of (split, name) by step (at one step, the most windows first).
 * *pts is malloc'd (the caller frees it). */
int db_metric_series(gl_db *db, const char *run_id, const char *split, const char *name, const char *params,
                     gl_metric_point **pts, int *n, char *err, size_t errlen);

typedef struct {
    metric_key key;   /* name and params as stored */
    double value;     /* at the largest step logged for that name and provenance; NaN when NULL */
    long step;
    gl_prov prov;
    double se;        /* NaN when none */
} gl_metric_latest;

/* ---- run sets (registry_set.c): every run a filter selects, read in one statement per kind of row ----
 *
 * Each reader calls fn on each row in run-id order (db_set_runs: experiment, then run id); a row's
 * strings live until fn returns.  fn returns 0 to go on, non-zero to stop (the reader then returns
 * -1; fn fills its own message).  Soft-deleted runs only with f->deleted.  0, or -1 with err. */
typedef struct {
    const char *status;     /* "FINISHED", ...; NULL: any */
    const char *experiment; /* exactly this experiment; NULL: any */
    const char *prefix;     /* experiments starting with it; NULL or "": any */
    int deleted;            /* 1: soft-deleted runs too (0: left out, as every listing does) */
} gl_set_filter;

typedef struct {
    const char *run_id, *experiment;
    const char *config;  /* the stored config text ("" none) */
    const char *commit;  /* git commit that trained it ("" unknown) */
    int dirty;           /* 1 dirty tree, 0 clean, -1 unknown */
    const char *variant; /* run_variant: the label, and the three axes it names ("none" when absent) */
    const char *value_residual, *depth_routing, *cross_layer;
} gl_set_run;
int db_set_runs(gl_db *db, const gl_set_filter *f, int (*fn)(const gl_set_run *r, void *ctx), void *ctx, char *err,
                size_t errlen);

/* Every stored param (key "section.key", value as stored), by run then key. */
int db_set_params(gl_db *db, const gl_set_filter *f,
                  int (*fn)(const char *run_id, const char *key, const char *value, void *ctx), void *ctx, char *err,
                  size_t errlen);

/* A row of the view run_headline (scripts/python/gatelab/views.sql: the headline, else the last periodic
 * evaluation; NaN where the view has NULL). */
typedef struct {
    const char *run_id;
    const char *source; /* "final", "hard", "hard_missing", "periodic" */
    long step;
    gl_prov prov;
    double loss, loss_se, soft_loss, bpc, token_acc, seq_acc, active_frac, tlops_saved, hard_loss, hard_active_frac;
} gl_set_headline;
int db_set_headlines(gl_db *db, const gl_set_filter *f, const char *split,
                     int (*fn)(const gl_set_headline *h, void *ctx), void *ctx, char *err, size_t errlen);

/* db_metrics_latest's rows of each split in splits ("val,test,ablation": comma-separated), every run at
 * once, by run, split, name, params, then the most windows first. */
int db_set_latest(gl_db *db, const gl_set_filter *f, const char *splits,
                  int (*fn)(const char *run_id, const char *split, const gl_metric_latest *row, void *ctx), void *ctx,
                  char *err, size_t errlen);

/* db_metric_series of (split, name) (params "{}") of every run, by run, step, the most windows first. */
int db_set_series(gl_db *db, const gl_set_filter *f, const char *split, const char *name,
                  int (*fn)(const char *run_id, const gl_metric_point *p, void *ctx), void *ctx, char *err,
                  size_t errlen);

/* Every event of kind ("environment", …) of every run, by run, then in the order they were recorded
 * (the last of a run is its latest: db_run_events' "last"). */
int db_set_events(gl_db *db, const gl_set_filter *f, const char *kind,
                  int (*fn)(const char *run_id, const char *detail, void *ctx), void *ctx, char *err, size_t errlen);

/* Every metric name of split for run_id with its latest value, one row per
 * (name, provenance), ordered by name, then the most windows first.  *rows is
 * malloc'd (the caller frees it). */
int db_metrics_latest(gl_db *db, const char *run_id, const char *split, gl_metric_latest **rows, int *n,
                      char *err, size_t errlen);

/* The row of name among rows[0..n) measured like `like` (same step and token
 * set; like NULL: the first row of that name, i.e. the most windows), or NULL. */
const gl_metric_latest *db_metrics_latest_get(const gl_metric_latest *rows, int n, const metric_key *key,
                                              const gl_metric_latest *like);

/* The value of name among rows[0..n) (NaN when absent); of several
 * measurements, the one on the most windows. */
double db_metrics_latest_find(const gl_metric_latest *rows, int n, const metric_key *key);

/* The same, measured like `like` (NaN when there is no such row). */
double db_metrics_latest_find_like(const gl_metric_latest *rows, int n, const metric_key *key,
                                   const gl_metric_latest *like);

/* Earliest wall time of any train or val metric of run_id (the run's time
 * origin for loss-vs-time curves): 1 found, 0 none, -1 error. */
int db_run_t0(gl_db *db, const char *run_id, double *t0, char *err, size_t errlen);

/* Merge the registry file at src_path into dst: experiments by name, runs by
 * id (a run already in dst is replaced only when src's status is more advanced:
 * SCHEDULED < RUNNING < KILLED < FAILED < FINISHED), with their params,
 * metrics and artifacts.  *merged / *skipped count runs (either may be NULL). */
int db_merge(gl_db *dst, const char *src_path, int *merged, int *skipped, char *err,
             size_t errlen);

/* Rank of a status string in the order above (0 for unknown). */
int db_status_rank(const char *status);

/* 1 when run_id is RUNNING in the registry but nothing runs it: its process
 * is gone (same host, pid not alive) or its heartbeat is older than stale_s
 * seconds (any host); why says which.  0 when not stale (or not RUNNING, or
 * not registered); -1 with err on a registry error.  A process killed with
 * -9, or one whose registry disk was full when it ended, leaves such a row;
 * db_run_finish(..., "KILLED", ...) is the repair (`gatelab runs --fix-stale`). */
int db_run_stale(gl_db *db, const char *run_id, double stale_s, char *why, size_t whylen, char *err,
                 size_t errlen);

/* ---- tags and soft delete ---- */

/* Set run_id's tag key to value (replacing an earlier value).  key: letters,
 * digits, '_', '-', '.'; value: any text without a newline. */
int db_tag_set(gl_db *db, const char *run_id, const char *key, const char *value, char *err, size_t errlen);

/* Remove run_id's tag key: 1 removed, 0 the run had no such tag, -1 error
 * (also when the run is not in the registry). */
int db_tag_remove(gl_db *db, const char *run_id, const char *key, char *err, size_t errlen);

/* Mark run_id deleted (deleted 1: hidden from runs, tables, figures and
 * reports; its files and rows stay) or visible again (deleted 0).  A run
 * that is not in the registry is an error; deleting twice keeps the first time. */
int db_run_set_deleted(gl_db *db, const char *run_id, int deleted, char *err, size_t errlen);

/* ---- reading a run's params and metrics whole (compare, metrics export) ---- */

typedef struct {
    char key[160];
    char value[256];
} gl_param;

/* Every param of run_id by key.  *out is malloc'd (the caller frees it). */
int db_params_all(gl_db *db, const char *run_id, gl_param **out, int *n, char *err, size_t errlen);

/* One stored metric row in long form: the name without its parameters and
 * the parameters as canonical JSON (store/metric.h metric_key). */
typedef struct {
    const char *run_id, *experiment, *variant, *split, *name, *params;
    long step;
    double value, se, wall_time; /* NaN when NULL */
    gl_prov prov;
} gl_metric_long;

/* Which rows db_metrics_each visits (NULL: any; name a GLOB on the base name). */
typedef struct {
    const char *experiment, *run_id, *split, *name_glob;
} gl_metric_filter;

/* Call fn on every metric row f selects, ordered by experiment, run, split,
 * name, params, step; deleted runs are left out.  fn returns 0 to go on, or
 * non-zero to stop (db_metrics_each then returns that value).  -1 on a
 * registry error. */
int db_metrics_each(gl_db *db, const gl_metric_filter *f, int (*fn)(const gl_metric_long *row, void *ctx),
                    void *ctx, char *err, size_t errlen);

/* ---- the names a command line may use (harness/cli/resolve.c) ---- */

typedef enum { DB_NAMES_RUNS, DB_NAMES_EXPERIMENTS } gl_name_kind;

typedef struct {
    char name[160]; /* a run id, or an experiment's name */
    int deleted;    /* runs: 1 when soft-deleted (still resolvable: `restore` needs it) */
} gl_name;

/* Every run id (deleted ones too), or every experiment that has a run, by
 * name.  *out is malloc'd (the caller frees it). */
int db_names(gl_db *db, gl_name_kind kind, gl_name **out, int *n, char *err, size_t errlen);

#endif
