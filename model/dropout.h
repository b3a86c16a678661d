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
 * the masks of an uninterrupted one.  rng_mix64 (rng.h) is the hash.
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

/* x (N, C) *= mask of (site, block n): entries dropped to 0, the rest scaled by 1/(1 − rate).  The
 * same call on a gradient is the backward (dx = dy ⊙ mask). */
void dropout_rows(float *x, int N, int C, const gl_dropout *dr, gl_drop_site site, int n);

/* attd (B, H, T, T) = att ⊙ mask of block n's attention probabilities, 0 above the diagonal (where
 * att is not defined); row i of sequence b is global row row0 + b·T + i. */
void dropout_att(float *attd, const float *att, int B, int H, int T, const gl_dropout *dr, int n);

#endif
