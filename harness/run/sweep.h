/*
 * sweep.h — a manifest's [sweep] grid as a list of runs.
 *
 * The [sweep] axes (manifest.h: gl_sweep_axis, canonical "section.key" and the
 * comma list as written) are expanded as a Cartesian product, first axis
 * slowest.  Each run is the base manifest plus one "key=value" override per
 * axis.  A run's id is
 *     <experiment>-<index, 3 digits>-<first 8 hex of the config hash>
 * where the config hash is the sha256 of the run's canonical INI
 * (manifest_to_ini), so the same manifest and command line always give the
 * same ids and an interrupted sweep finds its runs again.  A run's manifest
 * is built as `gatelab train MANIFEST <fixed overrides> <axis overrides>`
 * builds it (manifest_load with those overrides), so both agree on the config.
 *
 * Command-line arguments "key=a,b,c" replace the list of the axis with that
 * key; a list on a key that is not an axis of the manifest's [sweep] section
 * is an error (a typo must not silently multiply the grid), unless it is
 * given as an explicit axis (`--axis key=a,b`, the axis list below), which
 * adds the axis (after the manifest's, in the order given).  A list may be
 * written range(start, stop[, step]) or choice(a, b) (store/sweepval.h).  Any
 * other "section.key=value" is a fixed override applied to every run; one
 * value on an axis key makes that axis a list of one.
 */
#ifndef GATELAB_HARNESS_SWEEP_H
#define GATELAB_HARNESS_SWEEP_H

#include <stddef.h>

#include "store/manifest.h"

#define SWEEP_MAX_RUNS 10000
#define SWEEP_ASSIGN_MAX 1100

typedef struct {
    int index;                        /* position in the expansion order, 0-based */
    char run_id[192];
    char label[512];                  /* the axis overrides joined by spaces (the run's name) */
    int n_over;                       /* one per axis */
    char over[GL_SWEEP_MAX_KEYS][SWEEP_ASSIGN_MAX]; /* "section.key=value" */
    char config_hash[65];             /* sha256 hex of config_ini */
    char *config_ini;                 /* manifest_to_ini of the run's manifest (owned) */
    unsigned long long seed;          /* train.seed of the run */
} gl_sweep_run;

typedef struct {
    char experiment[128];             /* log.experiment, or the manifest's base name */
    char manifest_path[GL_PATH_MAX];
    gl_manifest base;                 /* the file plus the fixed overrides */
    int n_fixed;                      /* fixed command-line overrides, in order */
    char **fixed;                     /* "section.key=value" (owned) */
    int n_axes;
    gl_sweep_axis axes[GL_SWEEP_MAX_KEYS]; /* final lists (command line applied) */
    int n_runs;
    gl_sweep_run *runs;               /* (n_runs) owned */
} gl_sweep;

/* Expand the grid of the manifest file at path with the explicit axes
 * axis[0..n_axis-1] ("key=a,b,c", `--axis`) and the command-line arguments
 * cli[0..n_cli-1] ("key=value" / "key=a,b,c" on an axis).  On success sw owns
 * its memory (sweep_free).  On failure returns -1 with a message naming the
 * file, line and key (or "command line"); sw is then empty.  Nothing is
 * written anywhere. */
int sweep_expand(gl_sweep *sw, const char *path, int n_cli, char *const *cli, int n_axis, char *const *axis, char *err,
                 size_t errlen);

void sweep_free(gl_sweep *sw); /* accepts a zeroed or half-built sweep */

/* Experiment name of a manifest: log.experiment, else the base name of its
 * path without ".ini", else "default"; characters outside [A-Za-z0-9._-]
 * become '_'. */
void sweep_experiment_name(const gl_manifest *mf, char *out, size_t outlen);

/* The sha256 hex of a run's identity text (manifest_identity_text: the canonical config less late
 * keys at their default) — what a run's config_hash is and what a sweep's run id ends with. */
void sweep_config_hash(const char *config_ini, char hex[65]);

/* Split a comma list into trimmed items.  Returns the count (>= 1), or -1
 * when the list or an item is empty or there are more than max items; items
 * are written to out[i] (each at most itemlen bytes, longer is an error). */
int sweep_split_list(const char *list, char (*out)[SWEEP_ASSIGN_MAX], int max);

#endif
