/*
 * ckpt.h — a run's checkpoint: parameters, AdamW moments, training state and
 * the resolved config, in one plain binary file (no HDF5), replaced
 * atomically and checked on load.  The byte layout is in docs/files.md.
 * Where things live: writing, checking and reading in ckpt.c; when a run saves
 * one and resumes from it in harness/run/train.c; its folder in rundir.h.
 */
#ifndef GATELAB_HARNESS_CKPT_H
#define GATELAB_HARNESS_CKPT_H

#include <stddef.h>
#include <stdint.h>

#include "model/model.h"
#include "model/rng.h"
#include "bpe.h"
#include "tasks.h"
#include "utf8.h"

/* Version 2: a char (byte-vocabulary) run.  Version 3: the same plus a
 * tokenizer section (the BPE merges), written only for data.tokenizer = bpe,
 * so char runs write the same bytes as before and both versions load.
 * Version 4: the version-3 layout with a UTF-8 tokenizer section (the
 * vocabulary's code points), written only for data.tokenizer = utf8. */
#define CKPT_VERSION 2
#define CKPT_VERSION_BPE 3
#define CKPT_VERSION_UTF8 4

typedef struct {
    long step;          /* completed optimiser steps */
    gl_rng data_rng;    /* training-batch stream (model/rng.h) */
    gl_rng aux_rng;     /* any other stochastic stream */
    double elapsed_s;   /* wall-clock training seconds so far */
    long tokens_seen;
    double log_loss_sum;  /* train loss summed since the last log row (so a resumed run logs the same means) */
    long log_n;           /* steps in that sum */
    double eval_loss_sum; /* train loss summed since the last evaluation (the trace's train loss) */
    long eval_n;
    int vocab_size;
    uint8_t vocab[256]; /* id -> byte (BPE: the 256 byte ids, identity) */
    int tokenizer;      /* gl_tokenizer: TOK_CHAR (version 2 files), TOK_BPE (3) or TOK_UTF8 (4) */
    bpe_merges bpe;     /* TOK_BPE: the merges, vocab_size = 256 + bpe.n; TOK_CHAR: bpe.n = 0 */
    utf8_vocab utf8;    /* TOK_UTF8: the code points, vocab_size = utf8.V (vocab holds no byte of them) */
} gl_train_state;

/* How many entries of st->vocab are bytes a display may show: vocab_size
 * for char runs, the 256 byte ids of a BPE run (its merged ids have no
 * single byte: decode them with the merges), none of a utf8 run (decode its
 * ids with st->utf8). */
int ckpt_vocab_bytes(const gl_train_state *st);

/* Write m's parameters and AdamW moments, st and config_ini (may be NULL) to
 * path, atomically: the bytes go to "path.tmp", which is flushed, fsync'd and
 * renamed over path, then the folder is fsync'd.  A crash at any moment leaves
 * the old or the new checkpoint; on any error (full disk, I/O) the temporary
 * file is removed, the old checkpoint is untouched, and -1 is returned with a
 * message in err.  model_hash is manifest_model_hash() of the run's config.
 * Returns 0 on success. */
int ckpt_save(const char *path, const gl_model *m, const gl_train_state *st, const char *config_ini,
              uint64_t model_hash, char *err, size_t errlen);

/* Load path into m (parameters, adam_m, adam_v) and st.  Everything is checked
 * before m or st is written: magic, version, byte order, length (truncation),
 * checksum, the model hash (skipped when expect_model_hash is 0) and the
 * tensor table against m's (names, shapes, offsets).  On failure returns -1
 * with a message that names path and says what to do, and m and st are
 * unchanged (unless the file changes between the check and the read, which is
 * reported as an I/O error). */
int ckpt_load(const char *path, gl_model *m, gl_train_state *st, uint64_t expect_model_hash,
              char *err, size_t errlen);

/* Read the config text stored in path (after the same magic, version, length
 * and checksum checks).  On success *config_ini is a malloc'd NUL-terminated
 * string the caller frees (empty if none was stored); returns 0, or -1 with a
 * message in err (*config_ini is then NULL). */
int ckpt_read_config(const char *path, char **config_ini, char *err, size_t errlen);

/* What a checkpoint holds besides the arrays. */
typedef struct {
    uint64_t model_hash; /* as passed to ckpt_save */
    long step;           /* gl_train_state.step */
    int vocab_size;      /* gl_train_state.vocab_size */
    uint8_t vocab[256];  /* gl_train_state.vocab: id -> byte (decodes a trace's probe tokens) */
    size_t n_params;
    int n_tensors;
} ckpt_info;

/* The training state stored in path (after the same checks as
 * ckpt_read_config), e.g. a run's tokenizer before its model is built.
 * Returns 0, or -1 with a message in err (st is then unchanged). */
int ckpt_read_state(const char *path, gl_train_state *st, char *err, size_t errlen);

/* Same as ckpt_read_config, also filling info (either output may be NULL). */
int ckpt_read_info(const char *path, char **config_ini, ckpt_info *info, char *err, size_t errlen);

#endif
