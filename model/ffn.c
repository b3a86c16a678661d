/*
 * ffn.c — the SwiGLU gate of the feed-forward block (Shazeer, "GLU variants
 * improve transformer", 2020): g = silu(a) ⊙ b with a = x W1ᵀ, b = x W3ᵀ;
 * the block output is g W2ᵀ (the matmuls live in model.c via matmul.c).
 * silu(a) = a·σ(a);  silu'(a) = σ(a)·(1 + a·(1 − σ(a))).
 * Also the gpt2 backbone's MLP pieces (GELU, bias add and its column-sum
 * backward); the matmuls of both live in model.c via matmul.c.
 */
#include <assert.h>
#include <math.h>
#include <omp.h>

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

/* ---- the gpt2 backbone's MLP: fc1 (+ bias) → GELU (exact, erf) → fc2 (+ bias), as the TSA paper's
 * code (torch.nn.GELU's default); GELU and its derivative are vexp.h's gl_gelu, gl_gelu_grad ---- */
void gelu_forward(float *out, const float *inp, long n) {
    assert(n > 0 && out && inp); /* elementwise: out may be inp */
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++) out[i] = gl_gelu(inp[i]);
}

void gelu_backward(float *dinp, const float *dout, const float *inp, long n) {
    assert(n > 0 && dinp && dout && inp);
    assert(ops_disjoint(dinp, (size_t)n, inp, (size_t)n)); /* dinp may be dout */
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++) dinp[i] = dout[i] * gl_gelu_grad(inp[i]);
}

/* The two in one pass over the (N, C) activation: pre += b, out = GELU(pre) (as bias_forward then
 * gelu_forward, element for element the same arithmetic, so the same bits). */
void bias_gelu_forward(float *out, float *pre, const float *b, int N, int C) {
    assert(N > 0 && C > 0 && out && pre && b);
    assert(ops_disjoint(out, (size_t)N * C, pre, (size_t)N * C) && ops_disjoint(b, (size_t)C, pre, (size_t)N * C) &&
           ops_disjoint(b, (size_t)C, out, (size_t)N * C));
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        float *restrict z = pre + (size_t)n * C, *restrict y = out + (size_t)n * C;
        const float *restrict bb = b;
        for (int i = 0; i < C; i++) {
            const float v = z[i] + bb[i];
            z[i] = v;
            y[i] = gl_gelu(v);
        }
    }
}

/* Backward of bias_gelu_forward in one pass: dpre = dout·GELU'(pre) (overwritten), db += Σ_rows dpre.
 * Each thread owns a slice of columns and walks the rows in order, so every column of db is summed in
 * row order (as bias_backward: the same bits, for any thread count); dpre may be dout (an element is
 * read and written by the one thread that owns its column). */
void gelu_bias_backward(float *dpre, float *db, const float *dout, const float *pre, int N, int C) {
    assert(N > 0 && C > 0 && dpre && db && dout && pre);
    const size_t nx = (size_t)N * C;
    assert(ops_disjoint(dpre, nx, pre, nx) && ops_disjoint(db, (size_t)C, dpre, nx) &&
           ops_disjoint(db, (size_t)C, dout, nx) && ops_disjoint(db, (size_t)C, pre, nx));
    (void)nx;
#pragma omp parallel
    {
        const int nt = omp_get_num_threads(), th = omp_get_thread_num();
        const int c0 = (int)((long)C * th / nt), c1 = (int)((long)C * (th + 1) / nt);
        float *restrict acc = db;
        for (int n = 0; n < N; n++) {
            const float *dy = dout + (size_t)n * C, *restrict z = pre + (size_t)n * C;
            float *dz = dpre + (size_t)n * C;
            for (int i = c0; i < c1; i++) {
                const float v = dy[i] * gl_gelu_grad(z[i]);
                dz[i] = v;
                acc[i] += v;
            }
        }
    }
}

void bias_forward(float *out, const float *b, int N, int C) {
    assert(N > 0 && C > 0 && out && b);
    assert(ops_disjoint(out, (size_t)N * C, b, (size_t)C));
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++)
        for (int i = 0; i < C; i++) out[(size_t)n * C + i] += b[i];
}

void bias_backward(float *db, const float *dout, int N, int C) {
    assert(N > 0 && C > 0 && db && dout);
    assert(ops_disjoint(db, (size_t)C, dout, (size_t)N * C));
#pragma omp parallel
    {   /* each thread owns a slice of columns and sums it in row order: repeatable for any thread count */
        const int nt = omp_get_num_threads(), th = omp_get_thread_num();
        const int c0 = (int)((long)C * th / nt), c1 = (int)((long)C * (th + 1) / nt);
        for (int n = 0; n < N; n++)
            for (int i = c0; i < c1; i++) db[i] += dout[(size_t)n * C + i];
    }
}
