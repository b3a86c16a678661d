/*
 * rundir.h — run folders: <results>/runs/<run_id>/ holding config.ini (the
 * resolved manifest text), ckpt, trace.h5 and train.log.
 *
 * The results folder is the one the caller passes (--results DIR), else
 * $GATELAB_RESULTS, else "results".  A RUN argument on the command line is an
 * existing folder path or a run id under <results>/runs/ (a unique prefix of
 * one is accepted too).
 * Where things live: paths and lookup in rundir.c; what goes into the folder
 * in ckpt.c, trace.c and harness/run/train.c; the runs' rows in registry.c.
 */
#ifndef GATELAB_HARNESS_RUNDIR_H
#define GATELAB_HARNESS_RUNDIR_H

#include <stddef.h>

#include "model/model.h"
#include "ckpt.h"
#include "manifest.h"

#define RUN_CONFIG "config.ini"
#define RUN_CKPT "ckpt"
#define RUN_TRACE "trace.h5"
#define RUN_LOG "train.log"

/* The results folder: results if not NULL or empty, else $GATELAB_RESULTS if
 * set and not empty, else "results". */
const char *run_results_dir(const char *results);

/* Resolve a RUN argument to its folder in dir.  arg is an existing folder, or
 * a run id (or a unique prefix of one) under <results>/runs/.  Returns 0, or
 * -1 with a message that says where it looked. */
int run_resolve(const char *arg, const char *results, char *dir, size_t dirlen, char *err, size_t errlen);

/* Create <results>/runs/<run_id>/ (and the folders above it) and put its path
 * in dir.  An existing folder is fine.  Returns 0, or -1 with a message. */
int run_create_dir(const char *results, const char *run_id, char *dir, size_t dirlen, char *err, size_t errlen);

/* dir/name into out; returns 0, or -1 if it does not fit. */
int run_path(char *out, size_t outlen, const char *dir, const char *name);

typedef struct {
    char dir[GL_PATH_MAX];
    gl_manifest mf;
    gl_model model;
    gl_train_state st;
    char *config_ini; /* the config text stored in the checkpoint (malloc'd) */
    bpe_tok bpe;      /* a BPE run's tokenizer, built from st.bpe (V = 0 for a char run) */
    uint8_t *u8b;     /* a utf8 run's (4 V) UTF-8 bytes of each id, 4 apart, from st.utf8 (NULL otherwise) */
} gl_run;

/* Open a finished or interrupted run: resolve arg, read the config stored in
 * its checkpoint, build the model for batches of up to max_B sequences, load
 * the weights, optimiser moments and training state.  Returns 0, or -1 with a
 * message (r is then closed).  The caller calls run_close. */
int run_open(gl_run *r, const char *arg, const char *results, int max_B, char *err, size_t errlen);
void run_close(gl_run *r); /* accepts a zeroed or closed gl_run */

/* Text through the run's stored tokenizer (char: its byte table; bpe: its
 * merges; utf8: its characters, the text decoded as UTF-8 the way the data
 * was).  run_encode writes at most n ids (never more ids than bytes) and
 * returns how many, or -1 with a message naming the first byte (char) or
 * character (utf8) the run's vocabulary lacks (a BPE run encodes any byte).
 * run_token gives the bytes of id (0 <= id < vocab_size). */
long run_encode(const gl_run *r, const uint8_t *bytes, size_t n, int *ids, char *err, size_t errlen);
const uint8_t *run_token(const gl_run *r, int id, size_t *len);

/* A file of the gatelab source tree (e.g. "experiments/function_words.txt",
 * "scripts/plots/style.gp"): under $GATELAB_ROOT if set, else found by walking
 * up from the running binary (build/gatelab, build/tests/x, build/asan/...),
 * else rel as given (relative to the working folder). */
void run_repo_path(char *out, size_t n, const char *rel);

#endif
