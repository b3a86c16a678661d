/*
 * import.h — build a run from an HDF5 file in gatelab's export layout
 * (`gatelab import FILE.h5 --out RUN_DIR`; the command is cmd_import in cli.h).
 * The layout is docs/files.md "Export": one dataset per parameter named by
 * the tensor table, the vocabulary (and a BPE run's merges), the config text
 * as the root attribute `config`.  An export of any run imports back to an
 * equal model; scripts/python/gatelab/official.py writes such a file from the
 * TSA paper's PyTorch state_dict and calls the command.
 * Where things live: reading, folder and registry in import.c; the tensor
 * names in model/variants.h; the checkpoint writer in ckpt.c.
 */
#ifndef GATELAB_HARNESS_IMPORT_H
#define GATELAB_HARNESS_IMPORT_H

#include <stddef.h>

#include "model/model.h"
#include "ckpt.h"
#include "manifest.h"
#include "tasks.h" /* GL_PATH_MAX */

/* A model read from an export file, ready to be written as a run. */
typedef struct {
    char source[GL_PATH_MAX]; /* the file it came from */
    gl_manifest mf;           /* its config (model.vocab_size resolved) */
    gl_model model;           /* every parameter loaded; AdamW moments zero */
    gl_train_state st;        /* step from the file, vocabulary, tokenizer; the rng streams of a fresh run */
    char *config_ini;         /* canonical text of mf (manifest_to_ini; malloc'd) */
} gl_import;

/* Read path: the root attributes `schema_version` (EXPORT_SCHEMA_VERSION)
 * and `config`, optional `step`; build the model from the config; load every
 * dataset by its tensor name.  A tensor the config's model lacks, one it has
 * that the file lacks, a shape that differs, a dataset that is not
 * floating point, or a value that is not finite is refused naming the tensor;
 * so are a vocabulary of the wrong length and BPE merges that are not a
 * valid tokenizer.  Returns 0, or -1 with a message naming path (im is then
 * freed).  The caller calls import_free. */
int import_read(gl_import *im, const char *path, char *err, size_t errlen);
void import_free(gl_import *im); /* accepts a zeroed or freed gl_import */

/* Make dir, a new run folder: its parent must be a folder named `runs`
 * (<results>/runs/<id>; created with the folders above it when missing),
 * dir itself must not exist (mkdir, never into an existing folder), and its
 * name must be a valid run id.  Returns 0, or -1 with a message (nothing
 * created, unless a missing <results>/runs). */
int import_claim_dir(const char *dir, char *err, size_t errlen);

/* Where and as what the imported run is written. */
typedef struct {
    const char *dir;         /* the run folder import_claim_dir made (empty) */
    const char *run_id;      /* its name */
    const char *db;          /* the registry of the results folder holding it */
    const char *experiment;  /* the registry's experiment ("import") */
    const char *config_hash; /* sweep_config_hash of im->config_ini (the run's identity) */
} import_dest;

/* Write im into d->dir (ckpt through ckpt_save, config.ini through
 * fileio_write_all: each a temporary beside it, O_EXCL|O_NOFOLLOW, fsync,
 * rename) and register it FINISHED in d->db (created if missing) under
 * d->experiment, with its parameters, an `import` event naming the source and
 * its ckpt artifact.  A run id the registry already holds is refused before
 * anything is written.  On failure the files written are removed (the
 * folder is left, empty, for the caller to remove) and a registry row already
 * made is marked FAILED with the message.  Returns 0, or -1 with a message. */
int import_write(const gl_import *im, const import_dest *d, char *err, size_t errlen);

#endif
