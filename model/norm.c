/*
 * norm.c — RMSNorm (Zhang & Sennrich, 2019): y = x · rstd · g with
 * rstd = 1/sqrt(mean(x²) + eps).  Used for the block norms, the final norm and
 * (with C = head size, g shared across heads) the per-head qk-norm.
 *
 * Backward, per row with r = rstd:
 *   dx_i = r·g_i·dy_i − r³/C · x_i · Σ_j dy_j·g_j·x_j
 *   dg_j = Σ_rows dy_j · x_j · r
 * dg is reduced column by column (each thread owns columns), so the sum order
 * is fixed and the result bit-for-bit repeatable for any thread count.
 */
#include <math.h>
#include <stddef.h>

#include "ops.h"

void rmsnorm_forward(float *out, float *rstd, const float *inp, const float *g, int N, int C, float eps) {
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        const float *x = inp + (size_t)n * C;
        float *y = out + (size_t)n * C;
        float ss = 0.0f;
        for (int i = 0; i < C; i++) ss += x[i] * x[i];
        float r = 1.0f / sqrtf(ss / C + eps);
        rstd[n] = r;
        for (int i = 0; i < C; i++) y[i] = x[i] * r * g[i];
    }
}

void rmsnorm_backward(float *dinp, float *dg, const float *dout, const float *inp, const float *g,
                      const float *rstd, int N, int C) {
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        const float *x = inp + (size_t)n * C, *dy = dout + (size_t)n * C;
        float *dx = dinp + (size_t)n * C;
        float r = rstd[n];
        float dot = 0.0f;
        for (int i = 0; i < C; i++) dot += dy[i] * g[i] * x[i];
        float c = r * r * r * dot / C;
        for (int i = 0; i < C; i++) dx[i] += r * g[i] * dy[i] - c * x[i];
    }
    if (!dg) return;
#pragma omp parallel for schedule(static)
    for (int i = 0; i < C; i++) {
        float s = 0.0f;
        for (int n = 0; n < N; n++) s += dout[(size_t)n * C + i] * inp[(size_t)n * C + i] * rstd[n];
        dg[i] += s;
    }
}
