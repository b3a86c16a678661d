/*
 * resolve.h — what a name on the command line refers to: the one resolver
 * behind every RUN argument and every flag that names a run (sample, eval
 * and its --match-run, analyze, ablate, heads, export, report, tag, delete,
 * restore, compare, metrics --run, train --resume), and the check of an
 * experiment name (runs, metrics, tables, figures, report).
 *
 * A RUN is, in this order:
 *   1. a path (it has a '/'): a run folder, wherever it is.  Its registry is
 *      the gatelab.db of the results folder that holds it
 *      (<folder>/../../gatelab.db), not ./results/gatelab.db; --db overrides.
 *   2. an exact run id: a row of the registry (--db, else
 *      <results>/gatelab.db) or a folder <results>/runs/<id>.
 *   3. a folder of that name in the working directory that holds a run
 *      (config.ini or ckpt): as 1.
 *   4. a unique prefix of the run ids of 2 (registry rows and folders
 *      together; soft-deleted runs count, so `restore` finds them).
 * Several runs starting with it: an error listing them.  None: an error
 * saying where it looked, with "did you mean" when one id is a typo away
 * (args_suggest).  The registry is only read (and only when it exists).
 */
#ifndef GATELAB_HARNESS_CLI_RESOLVE_H
#define GATELAB_HARNESS_CLI_RESOLVE_H

#include <stddef.h>

#include "store/registry.h"
#include "store/tasks.h" /* GL_PATH_MAX */

enum {
    RESOLVE_DIR = 1, /* the run must have a folder (a checkpoint or trace is read) */
    RESOLVE_DB = 2,  /* the run must be in its registry (tags, metrics, headlines) */
};

typedef struct {
    char id[160];              /* the run id: registry row and folder name */
    char dir[GL_PATH_MAX];     /* its folder; "" when it has none (a registry row only) */
    char results[GL_PATH_MAX]; /* the results folder that holds it */
    char db[GL_PATH_MAX + 16]; /* its registry: --db, else <results>/gatelab.db */
    int in_db;                 /* 1: the registry has a row for it */
    int deleted;               /* 1: that row is soft-deleted */
} resolve_run;

/* Resolve arg (rules above) with the command's --db and --results (either
 * NULL); need is RESOLVE_DIR and/or RESOLVE_DB.  Returns 0 with *r filled,
 * or -1 with a message (unknown, ambiguous with the candidates, lacking what
 * need asks for, or an unreadable registry). */
int resolve_run_arg(const char *arg, const char *db, const char *results, int need, resolve_run *r, char *err,
                    size_t errlen);

/* 1 when name is an experiment of db (one that has runs), 0 when not (err:
 * "no experiment 'X' in DB; its experiments: a, b (did you mean b?)"), -1
 * on a registry error (err). */
int resolve_experiment(gl_db *db, const char *name, char *err, size_t errlen);

#endif
