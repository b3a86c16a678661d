/*
 * dropout.h — inverted dropout with counter-based masks (model/dropout.c).
 *
 * An entry is kept with probability 1 − rate and then scaled by 1/(1 − rate)
 * (torch.nn.Dropout's convention), so the expected activation is unchanged and
 * evaluation runs without masks.  The mask of an entry is a pure function of
 * the run's key (from train.seed and the step: dropout_train_key), the site
 * (which activation of which block) and the entry's global index (its row in
 * the whole data-parallel batch, m->route_row0 + t): nothing is stored, the
 * backward pass rebuilds the forward's masks, and a resumed run draws exactly
 * the masks of an uninterrupted one.  rng_mix64 (rng.h) is the hash, one per pair of entries
 * (dropout.c states the definition).
 *
 * The four sites are the TSA paper's code's: the embedding sum, the attention
 * probabilities, the FFN hidden activation and the FFN output
 * (docs/model.md "Dropout").
 */
#ifndef GATELAB_MODEL_DROPOUT_H
#define GATELAB_MODEL_DROPOUT_H

#include <stddef.h>
#include <stdint.h>

typedef enum { DROP_EMBED = 0, DROP_ATT, DROP_FFN_HIDDEN, DROP_FFN_OUT } gl_drop_site;

typedef struct {
    uint64_t key; /* 0: dropout off */
    float rate;   /* in [0, 1) */
    long row0;    /* global row of row 0 (data-parallel shards) */
} gl_dropout;

/* The key of training step (0-based) of a run seeded seed; never 0. */
uint64_t dropout_train_key(uint64_t seed, long step);

/* One site's masks under one key: the site's stream key, the keep threshold on the 24-bit uniform
 * (keep iff u ≥ thr, i.e. u/2²⁴ ≥ rate) and the kept entries' scale 1/(1 − rate) (dropout.c). */
typedef struct {
    uint64_t ks;
    uint32_t thr;
    float inv;
} gl_drop_mask;

/* The masks of site (site, block n) under dr's key; dr->key not 0. */
gl_drop_mask dropout_mask(const gl_dropout *dr, gl_drop_site site, int n);

/* The definition, one entry at a time: the factor (0 or 1/(1 − rate)) of global entry index (the
 * tests' reference of dropout_span). */
float dropout_scale_at(const gl_drop_mask *mk, uint64_t index);

/* dst[j] = src[j] · dropout_scale_at(mk, index0 + j) for j < len (dst may be src), bit for bit. */
void dropout_span(float *dst, const float *src, long len, const gl_drop_mask *mk, uint64_t index0);

/* x (N, C) *= mask of (site, block n): entries dropped to 0, the rest scaled by 1/(1 − rate).  The
 * same call on a gradient is the backward (dx = dy ⊙ mask). */
void dropout_rows(float *x, int N, int C, const gl_dropout *dr, gl_drop_site site, int n);

#endif
