/*
 * depth.h — depth profiles of token-selective adaptive depth (TSA) from the
 * halting probabilities p (R routers × P tokens, router l feeding block l+1,
 * R = L − 1), as the trace stores them.
 *
 * Two effective depths per token, both in [1, L] blocks (block 0 always runs):
 *   soft  Dₜ = 1 + Σₗ (1 − pₗₜ)        the blocks' updates the soft model applies
 *   hard  Dₜ = 1 + #{l : pₗₜ ≤ 0.5}    the blocks sparse inference runs
 * The mean hard depth is 1 + (L − 1)·α with α the active fraction.
 * Nothing here allocates, prints or does I/O.
 */
#ifndef GATELAB_ANALYSIS_MEASURE_DEPTH_H
#define GATELAB_ANALYSIS_MEASURE_DEPTH_H

#include <stddef.h>

/* The halting threshold of sparse inference: p > DEPTH_HALT skips the block. */
#define DEPTH_HALT 0.5f

/* Effective depths of token t of p (R, P). */
double depth_token_soft(const float *p, int R, long P, long t);
int depth_token_hard(const float *p, int R, long P, long t);

/* Every token's depths: soft (P) and hard (P); either may be NULL. */
void depth_tokens(const float *p, int R, long P, float *soft, int *hard);

/* Mean over tokens of the soft and hard depths (either output may be NULL). */
void depth_expected(const float *p, int R, long P, double *soft, double *hard);

/* Per router l: mean p (mean_p[l]) and the share of tokens that run block
 * l+1, p ≤ 0.5 (active[l]); either output may be NULL. */
void depth_router_profile(const float *p, int R, long P, double *mean_p, double *active);

/* Active fraction α: share of (token, router) pairs with p ≤ 0.5. */
double depth_active_frac(const float *p, int R, long P);

/* Histogram of hard depths: counts[k − 1] = tokens with depth k, k = 1..R+1
 * (counts holds R + 1 entries, overwritten). */
void depth_hist_hard(const float *p, int R, long P, long *counts);

#endif
