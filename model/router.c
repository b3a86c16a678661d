/*
 * router.c — the TSA halting router: p = σ(w2·φ(W1 x + b1) + b2), with φ
 * GELU in its exact erf form, GELU(z) = z·Φ(z) (tsa_form gatelab: x is the
 * attention-norm output of the block the router gates), or ReLU (tsa_form
 * paper: x is the raw residual stream entering it); docs/model.md, "Depth
 * routing" and "The TSA paper's own configuration".
 * The matmul with W1 goes through matmul.c; the width-1 output layer is a dot
 * product per token.  GELU uses the vectorisable erf of vexp.h (libm's erff
 * is a call per element; at d 256 the routers spent ~6 % of a step in it).
 */
#include <assert.h>
#include <math.h>
#include <omp.h>
#include <stddef.h>

#include "ops.h"
#include "vexp.h"
#include "vred.h"

/* out-of-line forms of vexp.h's gl_gelu, gl_gelu_grad (d/dx xΦ(x) = Φ(x) + x·φ(x)) */
float gelu_erf(float x) { return gl_gelu(x); }

float gelu_erf_grad(float x) { return gl_gelu_grad(x); }

/* pre += b1 row by row, hid = ReLU(pre) */
static void bias_relu_rows(float *hid, float *pre, const float *b1, int N, int R) {
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        float *restrict z = pre + (size_t)n * R, *restrict y = hid + (size_t)n * R;
        for (int r = 0; r < R; r++) {
            const float v = z[r] + b1[r];
            z[r] = v;
            y[r] = v > 0.0f ? v : 0.0f;
        }
    }
}

void router_forward(float *p, float *pre, float *hid, const float *x, const float *w1,
                    const float *b1, const float *w2, const float *b2, int N, int d, int R, int relu) {
    assert(N > 0 && d > 0 && R > 0);
    assert(p && pre && hid && x && w1 && b1 && w2 && b2);
    const size_t nr = (size_t)N * R;
    assert(ops_disjoint(pre, nr, hid, nr) && ops_disjoint(p, N, pre, nr) && ops_disjoint(p, N, hid, nr));
    assert(ops_disjoint(hid, nr, x, (size_t)N * d) && ops_disjoint(p, N, x, (size_t)N * d));
    (void)nr;
    mm_forward(pre, x, w1, N, d, R);
    /* the activation is chosen outside the loops: a select inside kept the GELU loop scalar (2.6 % of
     * a gpt2+tsa step against 0.3 % vectorised) */
    if (relu)
        bias_relu_rows(hid, pre, b1, N, R);
    else
        bias_gelu_forward(hid, pre, b1, N, R);
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        const float z = b2[0] + gl_dot(w2, hid + (size_t)n * R, R); /* vectorised (vred.h) */
        p[n] = 1.0f / (1.0f + expf(-z));
    }
}

void router_backward(float *dx, float *dw1, float *db1, float *dw2, float *db2, const float *dp,
                     const float *p, const float *pre, const float *hid, const float *x,
                     const float *w1, const float *w2, float *scratch, int N, int d, int R, int relu) {
    assert(N > 0 && d > 0 && R > 0);
    assert(dx && dw1 && db1 && dw2 && db2 && dp && p && pre && hid && x && w1 && w2 && scratch);
    {   /* scratch (dpre) is written while the cached activations are read */
        const size_t nr = (size_t)N * R;
        assert(ops_disjoint(scratch, nr, pre, nr) && ops_disjoint(scratch, nr, hid, nr) &&
               ops_disjoint(scratch, nr, dp, N) && ops_disjoint(scratch, nr, p, N) &&
               ops_disjoint(scratch, nr, dx, (size_t)N * d) && ops_disjoint(scratch, nr, x, (size_t)N * d));
        assert(ops_disjoint(dw2, R, hid, nr) && ops_disjoint(db1, R, scratch, nr) && ops_disjoint(dw2, R, db1, R));
        (void)nr;
    }
    float *dpre = scratch; /* (N, R) */
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        const float dz = dp[n] * p[n] * (1.0f - p[n]);
        const float *restrict pr = pre + (size_t)n * R;
        float *restrict dr = dpre + (size_t)n * R;
        if (relu)
            for (int r = 0; r < R; r++) dr[r] = dz * w2[r] * (pr[r] > 0.0f ? 1.0f : 0.0f);
        else
            for (int r = 0; r < R; r++) dr[r] = dz * w2[r] * gl_gelu_grad(pr[r]); /* vectorised */
    }
    /* reductions over tokens: each column summed in token order by the thread
     * that owns its slice (rows read as contiguous slices) */
    float sdz = 0.0f;
    for (int n = 0; n < N; n++) sdz += dp[n] * p[n] * (1.0f - p[n]);
    db2[0] += sdz;
#pragma omp parallel
    {
        const int nt = omp_get_num_threads(), th = omp_get_thread_num();
        const int r0 = (int)((long)R * th / nt), r1 = (int)((long)R * (th + 1) / nt);
        for (int n = 0; n < N; n++) {
            const float dz = dp[n] * p[n] * (1.0f - p[n]);
            const float *h = hid + (size_t)n * R, *dr = dpre + (size_t)n * R;
            for (int r = r0; r < r1; r++) {
                dw2[r] += dz * h[r];
                db1[r] += dr[r];
            }
        }
    }
    mm_backward(dx, dw1, dpre, x, w1, N, d, R);
}
