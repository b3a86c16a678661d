/*
 * ffn.c — the SwiGLU gate of the feed-forward block (Shazeer, "GLU variants
 * improve transformer", 2020): g = silu(a) ⊙ b with a = x W1ᵀ, b = x W3ᵀ;
 * the block output is g W2ᵀ (the matmuls live in model.c via matmul.c).
 * silu(a) = a·σ(a);  silu'(a) = σ(a)·(1 + a·(1 − σ(a))).
 */
#include <assert.h>
#include <math.h>

#include "ops.h"
#include "vexp.h"

void swiglu_forward(float *g, const float *a, const float *b, long n) {
    assert(n > 0 && g && a && b); /* elementwise: g may be a or b */
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++) {
        float s = 1.0f / (1.0f + gl_expf(-a[i]));
        g[i] = a[i] * s * b[i];
    }
}

void swiglu_backward(float *da, float *db, const float *dg, const float *a, const float *b, long n) {
    /* da[i] is written before db[i] reads dg[i] and a[i]: the outputs overlap nothing */
    assert(n > 0 && da && db && dg && a && b);
    const size_t un = (size_t)n;
    assert(ops_disjoint(da, un, db, un) && ops_disjoint(da, un, dg, un) && ops_disjoint(da, un, a, un) &&
           ops_disjoint(da, un, b, un));
    assert(ops_disjoint(db, un, dg, un) && ops_disjoint(db, un, a, un) && ops_disjoint(db, un, b, un));
    (void)un;
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++) {
        float s = 1.0f / (1.0f + gl_expf(-a[i]));
        da[i] = dg[i] * b[i] * s * (1.0f + a[i] * (1.0f - s));
        db[i] = dg[i] * a[i] * s;
    }
}
