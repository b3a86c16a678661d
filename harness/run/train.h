/*
 * train.h — one training run, from a resolved manifest to a finished run
 * folder and registry entry.  Used by `gatelab train` and by sweep workers
 * (which exec `gatelab train … --run-id ID`).
 */
#ifndef GATELAB_HARNESS_TRAIN_H
#define GATELAB_HARNESS_TRAIN_H

#include <stddef.h>

#include "store/manifest.h"

typedef struct {
    const char *run_id;  /* NULL: <name>-<UTC time>-<pid>; an existing SCHEDULED run id is taken over */
    const char *resume;  /* run id or folder to continue from its checkpoint, or NULL */
    const char *db_path; /* NULL: <results>/gatelab.db */
    const char *results; /* NULL: $GATELAB_RESULTS, else the manifest's log.results */
    int quiet;           /* 1: no progress line */
    int allow_config_change; /* resume: 1 continues with a changed configuration (recorded), 0 refuses it */
} gl_train_opts;

/* Outcome of a run, for the exit code. */
typedef enum { TRAIN_FINISHED = 0, TRAIN_FAILED = 1, TRAIN_KILLED = 3 } gl_train_outcome;

/* Train mf's model.  Returns the outcome; on failure err says what happened
 * (bad data, a NaN loss at step N, a write error) and what was kept.
 * A resume whose configuration (every key of the canonical INI, not only the
 * model's) differs from the run's config.ini is refused with the keys that
 * differ, unless o->allow_config_change: then the run continues with the new
 * values, config.ini is rewritten with a comment line saying what changed,
 * and the registry keeps the change (run_events kind "config_change", the
 * run's config text, hash and params).  A run that finishes is evaluated on
 * the whole validation split (and the test split when the data has one):
 * its headline (run/headline.h). */
gl_train_outcome train_run(const gl_manifest *mf, const gl_train_opts *o, char *err, size_t errlen);

#endif
