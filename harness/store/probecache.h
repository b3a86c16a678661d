/*
 * probecache.h — an activation cache: what one forward of a run's checkpoint
 * did on a text of the user's (`gatelab probe`), kept in HDF5 in the trace's
 * layout (docs/files.md "probe cache"): the gates at the trace's /group/dataset
 * paths without the step axis, the residual norms, the V1 share, the logit
 * lens and optionally the attention probabilities, with the tokens and the
 * vocabulary so the file decodes alone.
 *
 * The file is a list of named float arrays, each with an "axes" attribute
 * (e.g. "layer,token,kv_head") and a "title"; the reader returns them all,
 * so a renderer (report --probe) colours text by any array with a token axis
 * without knowing its name.  Only probecache.c, trace.c / trace_read.c,
 * export.c and import.c include hdf5.h.
 * Where things live: the file format here (probecache.c); filling it from a
 * forward pass in analysis/measure/probe.c; `gatelab probe` in cli/cmd_probe.c; the
 * coloured text of `report --probe` in analysis/render/probe_html.c.
 */
#ifndef GATELAB_HARNESS_PROBECACHE_H
#define GATELAB_HARNESS_PROBECACHE_H

#include <stddef.h>
#include <stdint.h>

#define PC_MAX_ARRAYS 32
#define PC_SCHEMA_VERSION 1

typedef struct {
    char path[64];   /* "lens/kl", "sat/alpha" (no leading '/') */
    char axes[64];   /* comma-separated axis names, e.g. "layer,token,kv_head" */
    char title[128]; /* what it is, with units */
    int rank;        /* 1..4 */
    long dims[4];
    int token_axis;  /* the axis named "token" (the first one), -1 when none */
    float *data;     /* (dims...) row-major, malloc'd; NaN where undefined */
} pc_array;

typedef struct {
    long n_tok;             /* P tokens of the text */
    int *tokens;            /* (P) */
    int *targets;           /* (P) the next token, -1 for the last */
    int n_vocab;            /* V */
    int32_t *vocab_offset;  /* (V + 1) */
    uint8_t *vocab_bytes;   /* (vocab_offset[V]) */
    int n_layer, n_head, n_kv_head, seq_len;
    double loss;            /* the model's own mean cross-entropy over the scored tokens (nats/token) */
    long scored;            /* tokens with a target */
    char run_id[160];
    char source[256];       /* the text file, "--prompt", or "sample" */
    char *config_ini;       /* malloc'd, NUL-terminated ("" when none) */
    int n_arr;
    pc_array arr[PC_MAX_ARRAYS];
} gl_probecache;

/* Add an array of rank dims (its data zeroed, NaN-free) to pc; returns it, or
 * NULL when out of memory or full (PC_MAX_ARRAYS). */
pc_array *probecache_add(gl_probecache *pc, const char *path, const char *axes, const char *title, int rank,
                         const long *dims);
/* The array at path, or NULL. */
const pc_array *probecache_find(const gl_probecache *pc, const char *path);

/* Write pc to path (replacing a file there).  Returns 0, or -1 with a
 * message naming the path and the HDF5 operation that failed. */
int probecache_write(const char *path, const gl_probecache *pc, char *err, size_t errlen);
/* Read a cache written by probecache_write.  Returns 0, or -1 with a message
 * (not a probe cache, an unreadable dataset); pc is then empty. */
int probecache_read(const char *path, gl_probecache *pc, char *err, size_t errlen);
void probecache_free(gl_probecache *pc); /* accepts a zeroed or half-filled cache */

#endif
