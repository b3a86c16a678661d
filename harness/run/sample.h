/*
 * sample.h — generate tokens from a model, one at a time over a sliding
 * window of its context length (harness/run/sample.c), through the KV cache
 * of model/decode.h by default or by recomputing the whole window for every
 * token.  `gatelab sample` prints what it generates.
 */
#ifndef GATELAB_RUN_SAMPLE_H
#define GATELAB_RUN_SAMPLE_H

#include <stddef.h>
#include <stdint.h>

#include "model/model.h"
#include "model/rng.h"

typedef struct {
    long n_tokens;      /* tokens to generate */
    double temperature; /* 0: the most likely token; else softmax(logits / temperature) */
    uint64_t seed;      /* of the sampling draws */
    int use_cache;      /* 1: KV cache (model/decode.h); 0: recompute the window per token */
} gl_sample_opts;

/* Called with every generated token as soon as it is chosen. */
typedef void (*gl_sample_emit)(int token, void *ctx);

/* Generate o->n_tokens tokens after prompt (plen >= 1 ids), calling emit for
 * each.  With o->use_cache the KV cache is used when decode_check allows it;
 * otherwise (or when it refuses, with its reason in note) the whole window is
 * recomputed.  *cached says which path ran.  At temperature 0 both paths give
 * the same tokens.  Returns 0, or -1 with a message in err (out of memory). */
int sample_run(gl_model *m, const int *prompt, size_t plen, const gl_sample_opts *o, gl_sample_emit emit, void *ctx,
               int *cached, char *note, size_t notelen, char *err, size_t errlen);

/* Choose a token from logits (V): the arg max at temperature 0 (the first on
 * a tie), else a draw from softmax(logits / temperature) using p (V doubles
 * of scratch) and r. */
int sample_pick(const float *logits, int V, double temperature, double *p, gl_rng *r);

#endif
