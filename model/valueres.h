/*
 * valueres.h — the value path of a block (valueres.c), internal to model/:
 * v' = value residual(v, V1) in forward, and its backward.  model.c calls
 * these at the same places for every value_residual variant.
 */
#ifndef GATELAB_MODEL_VALUERES_H
#define GATELAB_MODEL_VALUERES_H

#include "model.h"

/* Forward of block n over N rows: A[n].vmix from A[n].v and V1 = A[0].v;
 * fills A[n].gate (gated variants) and m->vr_lambda[2n..2n+1]. */
void vr_forward(gl_model *m, int n, int N);

/* Backward of block n's value path, from dvmix (N, kd): adds into dV1 (N, kd)
 * and the gate parameters' gradients, writes dgate (N, Hkv) where the variant
 * has a per-token gate.  Returns the gradient of v: dvmix itself, or dv
 * (N, kd, overwritten) when v is scaled. */
const float *vr_backward(gl_model *m, int n, int N, const float *dvmix, float *dV1, float *dv, float *dgate);

/* The part of the backward that reaches the block's value input x (N, d)
 * through a gate computed from it (SATFormer: dx += dgate·Wα, dWα += dgateᵀ·x).
 * Called after the value projection's own backward into dx. */
void vr_input_backward(gl_model *m, int n, int N, const float *dgate, float *dx);

#endif
