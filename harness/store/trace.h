/*
 * trace.h — a run's trace.h5: what the gates did at every evaluation, on a
 * fixed probe batch of validation tokens.  Written by the training loop,
 * read by every analysis.  Layout in docs/files.md ("trace.h5").
 *
 * The file is HDF5, SWMR-capable, and closed between appends: each append
 * opens it in SWMR-write mode, writes, flushes and closes it (milliseconds).
 * So plain h5dump opens it during training and after a kill -9; SWMR readers
 * (h5py swmr=True, trace_read) may also hold it open while training appends;
 * and a run killed at any moment leaves a file holding every completed append.
 * What a kill inside an append leaves, and file locking: docs/files.md.  Only
 * trace.c, trace_read.c, probecache.c, export.c and import.c include hdf5.h.
 * Where things live: creating, appending and resuming in trace.c; reading
 * back (trace_read*, trace_data_free, trace_probe_sha256) in trace_read.c;
 * what the two share (the dataset table, HDF5 error capture) in trace_h5.h.
 */
#ifndef GATELAB_HARNESS_TRACE_H
#define GATELAB_HARNESS_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "model/gatekind.h"

/* Version 3 adds the identity of what the trace records (vocab_size, split,
 * probe_sha256: trace_resume compares it); version 2 stores every string
 * attribute fixed-length; version 1 (read for compatibility) stored them
 * variable-length. */
#define TRACE_SCHEMA_VERSION 3
#define TRACE_SCHEMA_OLDEST 1

typedef struct gl_trace gl_trace;

typedef struct {
    int n_layer, n_kv_head, n_router; /* n_router = L-1 for TSA, else 0 */
    int n_probe;                      /* P probe tokens = probe windows × T */
    int has[GATE_COUNT];              /* 1: the trace records gate g (model/gatekind.h) */
    const char *config_ini;           /* stored as a UTF-8 root attribute (may be NULL) */
    /* The vocabulary, so probe tokens decode from the trace alone (/vocab;
     * absent when n_vocab is 0): token id's bytes are
     * vocab_bytes[vocab_offset[id] .. vocab_offset[id + 1]). */
    int n_vocab;                      /* V */
    const int32_t *vocab_offset;      /* (V + 1), vocab_offset[0] = 0 */
    const uint8_t *vocab_bytes;       /* (vocab_offset[V]) */
    const uint8_t *vocab_category;    /* (V) each token's class on its own (cat_token_class) */
    const char *tokenizer;            /* "char", "bpe", or a task's name */
    int vocab_size;                   /* V of the data the probe is drawn from (0: not recorded) */
    const char *split;                /* which windows the probe is, e.g. "val bytes 235929+26215 of 262144
                                       * of corpus.txt" (NULL: not recorded) */
} gl_trace_desc;

/* Create path (replacing any file there) with every dataset the description
 * asks for at 0 steps, store the probe batch (probe_tokens and
 * probe_category, P each), and close the file again (*out remembers the path
 * and shape; the file is opened only inside trace_append).  Returns 0 and
 * *out, or -1 with a message naming path and the failed HDF5 operation.  The
 * caller frees *out with trace_close. */
int trace_create(gl_trace **out, const char *path, const gl_trace_desc *d, const int *probe_tokens,
                 const uint8_t *probe_category, char *err, size_t errlen);

/* Reopen the trace of a resumed run: keep only the rows with step <=
 * last_step (later rows were written after the checkpoint being resumed and
 * will be written again) and continue appending.  The file is rewritten
 * through "path.tmp" and renamed over path, so a crash leaves the old file.
 * Works on a trace whose writer was killed.  Returns 0 and *out, or -1 with a
 * message. */
int trace_reopen(gl_trace **out, const char *path, long last_step, char *err, size_t errlen);

/* trace_reopen for a run whose probe is want (shape, vocabulary, split) with
 * probe_tokens (want->n_probe of them): the trace on disk must record exactly
 * that, else nothing is written and -2 is returned with a message naming the
 * first difference ("n_probe: 64 in the trace, 32 in this run").  A trace of
 * an older schema, which lacks vocab_size and split, is compared on what it
 * has (shape and the probe tokens themselves).  When path is missing or
 * unreadable and path.prev is a trace, it is rebuilt from that copy and a line
 * on stderr says so.  Returns 0, -1 (I/O: message), or -2 (mismatch). */
int trace_resume(gl_trace **out, const char *path, long last_step, const gl_trace_desc *want,
                 const int *probe_tokens, char *err, size_t errlen);

/* Append one evaluation: step (strictly greater than the last one), losses in
 * nats/token (NaN where not measured) and gates[g] for every gate the trace
 * has, laid out as gatekind_dims(g, L, Hkv, P) says (e.g. α (L, P, Hkv),
 * λ (L, 2), p (L−1, P), confidence (L, P)); entries of gates the trace does
 * not have are ignored (may be NULL), one it has must not be NULL.  Opens the
 * file (SWMR write, without file locking, so readers holding it open do not
 * block the append), extends every dataset by one row, writes it (/step
 * last), flushes and closes the file.  Fails if the file has rows this handle
 * did not write (another writer).  Returns 0, or -1 with a message naming
 * path, step and operation. */
int trace_append(gl_trace *t, long step, float train_loss, float val_loss, const float *const gates[GATE_COUNT],
                 char *err, size_t errlen);

/* Rows written so far, and the step of the last one (-1 if none). */
long trace_n_steps(const gl_trace *t);
long trace_last_step(const gl_trace *t);

/* Free the handle (the file itself is already closed: it is open only
 * inside trace_append).  Accepts NULL. */
void trace_close(gl_trace *t);

/* A whole trace in memory.  Arrays a trace does not have are NULL. */
typedef struct {
    int n_steps, n_layer, n_kv_head, n_router, n_probe;
    long *step;                /* (S) completed optimiser steps at each evaluation */
    float *train_loss;         /* (S) nats/token */
    float *val_loss;           /* (S) nats/token */
    float *gate[GATE_COUNT];   /* (S, gatekind_dims(g, L, Hkv, P)) or NULL: e.g. α (S, L, P, Hkv) */
    int *probe_tokens;         /* (P) */
    uint8_t *probe_category;   /* (P) 0 structural, 1 functional, 2 semantic */
    char *config_ini;          /* NUL-terminated ("" if none) */
    int n_vocab;               /* V, 0 when the trace has no /vocab (written before it existed) */
    int32_t *vocab_offset;     /* (V + 1) or NULL */
    uint8_t *vocab_bytes;      /* (vocab_offset[V]) or NULL */
    uint8_t *vocab_category;   /* (V) or NULL */
    char tokenizer[16];        /* /vocab's tokenizer attribute ("" without /vocab) */
    int schema_version;
    int vocab_size;            /* 0 when not recorded (schema < 3) */
    char *split;               /* "" when not recorded (schema < 3) */
    char probe_sha256[65];     /* "" when not recorded (schema < 3) */
} gl_trace_data;

/* SHA-256 (hex) of P probe token ids as little-endian int32: the trace's
 * probe_sha256 attribute. */
void trace_probe_sha256(const int *probe_tokens, int P, char hex[65]);

/* Read every dataset of path into malloc'd arrays (SWMR read, so a live run's
 * trace works, and so does one whose writer was killed inside an append; a
 * row whose append did not complete is dropped).  Returns 0, or -1 with a
 * message (out is then empty).  Free with trace_data_free. */
int trace_read(const char *path, gl_trace_data *out, char *err, size_t errlen);

/* trace_read with flags: TRACE_READ_CURRENT_ONLY refuses traces of an older
 * schema (the fuzz target reads only the format gatelab writes now; schema 1's
 * variable-length strings are read by HDF5's global heap, outside our checks). */
enum { TRACE_READ_CURRENT_ONLY = 1 };
int trace_read_flags(const char *path, gl_trace_data *out, int flags, char *err, size_t errlen);
void trace_data_free(gl_trace_data *d); /* accepts an empty or partly filled struct */

#endif
