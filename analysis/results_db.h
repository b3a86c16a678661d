/*
 * results_db.h — read-only queries on the registry (results/gatelab.db) that
 * the tables and figures need beyond harness/store/registry.h: runs with their
 * experiment, a run's parameters, a metric's last value, mean or series, and
 * every metric name of a split.  Schema: harness/store/registry.c.
 *
 * All functions returning int return 0 on success and -1 with a message in
 * err (naming the database file), unless stated.
 */
#ifndef GATELAB_ANALYSIS_RESULTS_DB_H
#define GATELAB_ANALYSIS_RESULTS_DB_H

#include <stddef.h>

typedef struct rdb rdb;

/* Open path read-only (the file must exist) with a busy timeout.  The caller
 * closes *out with rdb_close. */
int rdb_open(rdb **out, const char *path, char *err, size_t errlen);
void rdb_close(rdb *db); /* accepts NULL */

typedef struct {
    char run_id[128];
    char experiment[128];
    char status[16];
} rdb_run;

/* Runs of experiment (NULL: all) whose status is status (NULL: any), ordered
 * by experiment then run id.  *runs is malloc'd (the caller frees it). */
int rdb_runs(rdb *db, const char *experiment, const char *status, rdb_run **runs, int *n, char *err, size_t errlen);

/* A run's parameter "section.key": 1 found (copied to value), 0 none, -1 error. */
int rdb_param(rdb *db, const char *run_id, const char *key, char *value, size_t valuelen, char *err, size_t errlen);

/* The value at the largest step of (split, name): 1 found (*value NaN when
 * stored as NULL; *step the step, if not NULL), 0 none, -1 error. */
int rdb_metric_last(rdb *db, const char *run_id, const char *split, const char *name, double *value, long *step,
                    char *err, size_t errlen);

/* Mean of the non-NULL values of (split, name) over steps > after_step:
 * 1 found, 0 none, -1 error. */
int rdb_metric_mean(rdb *db, const char *run_id, const char *split, const char *name, long after_step, double *value,
                    char *err, size_t errlen);

typedef struct {
    long step;
    double value;     /* NaN when stored as NULL */
    double wall_time; /* unix seconds */
} rdb_point;

/* Every row of (split, name) by step.  *pts is malloc'd (the caller frees it). */
int rdb_metric_series(rdb *db, const char *run_id, const char *split, const char *name, rdb_point **pts, int *n,
                      char *err, size_t errlen);

typedef struct {
    char name[128];
    double value;     /* at the largest step logged for that name */
    long step;
} rdb_named;

/* Every metric name of split for run_id, each with its latest value, ordered
 * by name.  *rows is malloc'd (the caller frees it). */
int rdb_split_metrics(rdb *db, const char *run_id, const char *split, rdb_named **rows, int *n, char *err,
                      size_t errlen);

/* Earliest wall time of any metric of run_id (the run's time origin for
 * loss-vs-time curves): 1 found, 0 none, -1 error. */
int rdb_run_t0(rdb *db, const char *run_id, double *t0, char *err, size_t errlen);

#endif
