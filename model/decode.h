/*
 * decode.h — incremental (KV-cache) inference of a gatelab model: prefill a
 * prompt once, then one token per sequence per step, each step reading the
 * keys and values of every earlier position from a cache instead of
 * recomputing them (model/decode.c; docs/model.md "Decoding with a KV cache").
 *
 * A step computes exactly what model_forward computes for the last position
 * of the window, so at temperature 0 both paths give the same tokens
 * (tests/test_decode.c).  It runs every variant of the model: value
 * residuals, TSA (sparse inference with m->sparse: a halted token skips its
 * query, attention output and FFN), early exit (m->exit_tau > 0: an exited
 * token skips everything but the keys and values later tokens read) and the
 * cross-layer variants, on either backbone (gpt2: the step's learned position)
 * and either TSA form.  Only the random-routing override (ablations) and the
 * paper's sparse form (m->sparse_form) are not supported: decode_check says
 * so and the caller uses model_forward.
 *
 * The cache holds positions 0..len-1 of a window that starts at position 0.
 * Once a window holds seq_len positions, the next token needs a shifted
 * window whose positions all change (rotary angles restart at 0): the caller
 * prefills the shifted window again, which is what the uncached path does
 * for every token (harness/run/sample.c).
 */
#ifndef GATELAB_MODEL_DECODE_H
#define GATELAB_MODEL_DECODE_H

#include <stddef.h>

#include "model.h"

typedef struct {
    gl_model *m;           /* not owned; its activations are the step's work space */
    int B;                 /* sequences decoded together (<= m->max_B) */
    int T;                 /* cache capacity in positions (m->T) */
    int len;               /* positions held (the same for every sequence) */
    float *kc;             /* (L, B, T, Hkv*hd) keys after qk-norm and rotary */
    float *vc;             /* (L, B, T, Hkv*hd) values v' after the value residual */
    float *logits;         /* (B, V) next-token logits of the last prefill or step */
    float *xq;             /* (B, d) scratch: packed query inputs */
    float *probs;          /* (B, V) scratch: early-exit softmax */
    float *conf;           /* (B) scratch: early-exit confidence */
    float *att;            /* (B*H, T) scratch: attention probabilities of one step */
    int *idx;              /* (B) rows that run the rest of the current block */
    unsigned char *frozen; /* (B) early exit: 1 once the current token has exited */
    long pairs_run;        /* steps: (token, block >= 1) pairs whose block ran (not halted, not exited) */
    long pairs_total;      /* steps: (token, block >= 1) pairs */
} gl_decode;

/* 0 when the cached path supports m in its current inference mode; else -1
 * with the reason (and what the caller does instead) in why. */
int decode_check(const gl_model *m, char *why, size_t whylen);

/* Make a cache for B sequences of up to m->T positions over model m.
 * Returns 0, or -1 with a message in err (unsupported mode, B out of range,
 * out of memory).  decode_free accepts a half-built or zeroed cache. */
int decode_init(gl_decode *dc, gl_model *m, int B, char *err, size_t errlen);
void decode_free(gl_decode *dc);

/* Run model_forward over tokens (B, T0), 1 <= T0 <= T, fill the cache with
 * positions 0..T0-1 and dc->logits with each sequence's last position. */
void decode_prefill(gl_decode *dc, const int *tokens, int T0);

/* Append one token per sequence (tokens (B)) at position len (< T) and fill
 * dc->logits with the next-token logits. */
void decode_step(gl_decode *dc, const int *tokens);

#endif
