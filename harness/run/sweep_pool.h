/*
 * sweep_pool.h — running a sweep's grid: registering its runs, claiming
 * them in the registry and keeping up to -j training processes going, or
 * exec'ing one run in place (a Slurm array task).  The grid itself is
 * sweep.h's; the Slurm script for it slurm.h's; the flags that fill
 * gl_sweep_opts are harness/cli/cmd_sweep.c's.
 *
 * Each run is claimed atomically (db_run_claim, one BEGIN IMMEDIATE
 * transaction) before its process starts, so two sweeps on one registry
 * never run the same run, and a restarted sweep picks up SCHEDULED runs,
 * runs left RUNNING by a dead process, and KILLED runs.  A run is executed by
 * fork+exec of `<this binary> train MANIFEST <overrides> --run-id ID
 * [--resume ID] --db PATH --results DIR` (never in-process: OpenMP state does
 * not survive fork); --resume when results/runs/<id>/ckpt exists.  The
 * child's console output goes to results/runs/<id>/sweep.log.
 *
 * Signals (sweep_pool_catch_signals): SIGINT/SIGTERM stop claiming, are
 * forwarded once to the running trainings (which checkpoint and mark
 * themselves KILLED), and the pool waits for them; SIGUSR1 is forwarded
 * (checkpoint and go on).  Children get SIGTERM if the sweep dies
 * (PR_SET_PDEATHSIG).
 *
 * A pool is a long-lived manager: it reports progress (one line per start,
 * end and wait, "[sweep EXP: 3/9 done, ...]") and its failures ("gatelab
 * sweep: ...") on stderr as they happen, rather than returning them.
 */
#ifndef GATELAB_HARNESS_SWEEP_POOL_H
#define GATELAB_HARNESS_SWEEP_POOL_H

#include <stddef.h>

#include "run/sweep.h"
#include "store/registry.h"

/* What a sweep was asked to do (the command line of `gatelab sweep`). */
typedef struct {
    const char *manifest;
    int n_cli;
    char **cli;
    int jobs;           /* -j; 0 = not given */
    int dry_run;
    int index;          /* -1 = all */
    const char *slurm;  /* --emit-slurm FILE */
    const char *db;     /* --db */
    const char *results;/* --results */
    double stale_s;     /* --stale */
    int retry_failed;   /* --retry-failed */
    const char *launcher; /* --launcher: command words before `<binary>-mpi train …`, or NULL */
    int nodes;          /* --nodes (Slurm script): 0 = not given */
    int ntasks_per_node;/* --ntasks-per-node (Slurm script): 0 = not given */
    int n_axis;
    char **axis;        /* --axis key=a,b (explicit axes), in order */
    const char *time, *mem, *partition; /* --time, --mem, --partition (Slurm script) or NULL */
} gl_sweep_opts;

/* snprintf into out; a path or message longer than len is cut.  Returns 0, or -1 when it was cut. */
__attribute__((format(printf, 3, 4))) int sweep_fmt(char *out, size_t len, const char *fmt, ...);

/* Register runs [lo, hi) of sw as SCHEDULED where missing (the experiment
 * too, with the manifest's text).  Returns 0 or -1 (printed). */
int sweep_register(gl_db *db, const gl_sweep *sw, int lo, int hi);

/* Catch SIGINT, SIGTERM and SIGUSR1 for sweep_run_all (forwarded to its trainings). */
void sweep_pool_catch_signals(void);

/* --index: claim run a->index and exec its training in place (this process
 * becomes `train`).  Returns an exit code only when it did not exec (0 when
 * the run is already FINISHED, 1 on failure; printed); the claim is released
 * then. */
int sweep_run_index(gl_db *db, const gl_sweep *sw, const gl_sweep_opts *a, const char *dbp, const char *results);

/* Keep up to a->jobs trainings going until no run of sw is left to claim, or
 * a stop signal arrived and the running ones ended.  Returns the exit code: 0
 * all FINISHED, 1 some not (or an error, printed), 128+signal when stopped.
 * On an error exit our trainings are stopped (SIGTERM) and reaped. */
int sweep_run_all(gl_db *db, const gl_sweep *sw, const gl_sweep_opts *a, const char *dbp, const char *results);

#endif
