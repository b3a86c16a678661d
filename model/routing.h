/*
 * routing.h — hard depth routing (model/routing.c): Mixture-of-Depths'
 * expert-choice router and the random-routing control.  Internal to model/:
 * model.c calls these for the blocks config_block_routed selects.
 */
#ifndef GATELAB_MODEL_ROUTING_H
#define GATELAB_MODEL_ROUTING_H

#include "model.h"

/* Block n's selection from A[n].h_in (MoD) or the draw (random), B windows of
 * T tokens: fills A[n].keep (1 runs, 0 skips), A[n].rs (the update's scale)
 * and, for MoD, A[n].mod_r and A[n].mod_g.  Unrouted blocks get keep = rs = 1.
 * Applies the routing override (ablations). */
void routing_forward(gl_model *m, int n, int B, int T);

/* MoD: drs (N) = dL/d rs of block n → router gradient (G.router[n-1].mod_w +=)
 * and dh (N, d) += the router's share of dL/dh_in.  Nothing for random. */
void routing_backward(gl_model *m, int n, const float *drs, float *dh, int N);

/* Causal attention among the tokens with keep = 1 of each window, as
 * attn_forward (same layout) but a key with keep = 0 gets probability 0; a
 * query with keep = 0 attends to itself only (its output is dropped).  The
 * probabilities att hold zeros where masked, so attn_backward is its backward. */
void routing_attn_forward(float *y, float *att, const float *q, const float *k, const float *v, const float *keep,
                          int B, int T, int H, int Hkv, int hd);

#endif
