/*
 * norm.c — RMSNorm (Zhang & Sennrich, 2019): y = x · rstd · g with
 * rstd = 1/sqrt(mean(x²) + eps).  Used for the block norms, the final norm and
 * (with C = head size, g shared across heads) the per-head qk-norm.
 *
 * Backward, per row with r = rstd:
 *   dx_i = r·g_i·dy_i − r³/C · x_i · Σ_j dy_j·g_j·x_j
 *   dg_j = Σ_rows dy_j · x_j · r
 * dg is reduced column by column (each thread owns a slice of columns and sums
 * it in row order), so the result is bit-for-bit repeatable for any thread count.
 */
#include <math.h>
#include <omp.h>
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
    /* each thread owns a slice of columns and walks the rows in order: every
     * column is summed in row order whatever the thread count, and the rows are
     * read as contiguous slices (a column-at-a-time walk missed the cache) */
#pragma omp parallel
    {
        const int nt = omp_get_num_threads(), th = omp_get_thread_num();
        const int c0 = (int)((long)C * th / nt), c1 = (int)((long)C * (th + 1) / nt);
        for (int n = 0; n < N; n++) {
            const float *dy = dout + (size_t)n * C, *x = inp + (size_t)n * C;
            const float r = rstd[n];
            for (int i = c0; i < c1; i++) dg[i] += dy[i] * x[i] * r;
        }
    }
}
