/*
 * ffn.c — the SwiGLU gate of the feed-forward block (Shazeer, "GLU variants
 * improve transformer", 2020): g = silu(a) ⊙ b with a = x W1ᵀ, b = x W3ᵀ;
 * the block output is g W2ᵀ (the matmuls live in model.c via matmul.c).
 * silu(a) = a·σ(a);  silu'(a) = σ(a)·(1 + a·(1 − σ(a))).
 */
#include <math.h>

#include "ops.h"
#include "vexp.h"

void swiglu_forward(float *g, const float *a, const float *b, long n) {
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++) {
        float s = 1.0f / (1.0f + gl_expf(-a[i]));
        g[i] = a[i] * s * b[i];
    }
}

void swiglu_backward(float *da, float *db, const float *dg, const float *a, const float *b, long n) {
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++) {
        float s = 1.0f / (1.0f + gl_expf(-a[i]));
        da[i] = dg[i] * b[i] * s * (1.0f + a[i] * (1.0f - s));
        db[i] = dg[i] * a[i] * s;
    }
}
