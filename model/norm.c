/*
 * norm.c — RMSNorm (Zhang & Sennrich, 2019): y = x · rstd · g with
 * rstd = 1/sqrt(mean(x²) + eps).  Used for the block norms, the final norm and
 * (with C = head size, g shared across heads) the per-head qk-norm of the llama
 * backbone; LayerNorm with bias (at the end of the file) for the gpt2 backbone's.
 *
 * Backward, per row with r = rstd:
 *   dx_i = r·g_i·dy_i − r³/C · x_i · Σ_j dy_j·g_j·x_j
 *   dg_j = Σ_rows dy_j · x_j · r
 * dg is reduced column by column (each thread owns a slice of columns and sums
 * it in row order), so the result is bit-for-bit repeatable for any thread count.
 * The row sums (Σx², Σ dy·g·x; LayerNorm's Σ(x − μ)², Σ dy·g and Σ dy·g·(x − μ)) use the lane-wise sums of
 * vred.h so they vectorise.
 */
#include <assert.h>
#include <math.h>
#include <omp.h>
#include <stddef.h>

#include "ops.h"
#include "vred.h"

void rmsnorm_forward(float *out, float *rstd, const float *inp, const float *g, int N, int C, float eps) {
    /* out may be inp (each row is reduced before it is written); rstd is apart from both */
    assert(N > 0 && C > 0 && eps >= 0.0f);
    assert(out && rstd && inp && g);
    assert(ops_disjoint(rstd, (size_t)N, inp, (size_t)N * C) && ops_disjoint(rstd, (size_t)N, out, (size_t)N * C));
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        const float *x = inp + (size_t)n * C;
        float *y = out + (size_t)n * C;
        float ss = gl_dot(x, x, C);
        float r = 1.0f / sqrtf(ss / C + eps);
        rstd[n] = r;
        for (int i = 0; i < C; i++) y[i] = x[i] * r * g[i];
    }
}

void rmsnorm_backward(float *dinp, float *dg, const float *dout, const float *inp, const float *g,
                      const float *rstd, int N, int C) {
    /* dinp and dg are written while dout, inp (and each other's inputs) are read in the same region */
    assert(N > 0 && C > 0);
    assert(dinp && dout && inp && g && rstd);
    const size_t nx = (size_t)N * C;
    assert(ops_disjoint(dinp, nx, dout, nx) && ops_disjoint(dinp, nx, inp, nx) && ops_disjoint(dinp, nx, rstd, N));
    assert(ops_disjoint(dg, C, dout, nx) && ops_disjoint(dg, C, inp, nx) && ops_disjoint(dg, C, dinp, nx));
    (void)nx;
#pragma omp parallel
    {
#pragma omp for schedule(static) nowait
        for (int n = 0; n < N; n++) {
            const float *x = inp + (size_t)n * C, *dy = dout + (size_t)n * C;
            float *dx = dinp + (size_t)n * C;
            const float r = rstd[n];
            const float c = r * r * r * gl_dot3(dy, g, x, C) / C;
            for (int i = 0; i < C; i++) dx[i] += r * g[i] * dy[i] - c * x[i];
        }
        /* dg: each thread owns a slice of columns and walks the rows in order:
         * every column is summed in row order whatever the thread count, and
         * the rows are read as contiguous slices (a column-at-a-time walk
         * missed the cache).  It reads only what the loop above reads, so the
         * two share one parallel region without a barrier between them. */
        if (dg) {
            const int nt = omp_get_num_threads(), th = omp_get_thread_num();
            const int c0 = (int)((long)C * th / nt), c1 = (int)((long)C * (th + 1) / nt);
            for (int n = 0; n < N; n++) {
                const float *dy = dout + (size_t)n * C, *x = inp + (size_t)n * C;
                const float r = rstd[n];
                for (int i = c0; i < c1; i++) dg[i] += dy[i] * x[i] * r;
            }
        }
    }
}

/* ---- LayerNorm (Ba et al., 2016), the gpt2 backbone's norm ----
 * y = (x − μ)·rstd·g + b with μ = mean(x), rstd = 1/sqrt(mean((x − μ)²) + eps) (the biased variance,
 * as torch.nn.LayerNorm).  Backward, per row with x̂ = (x − μ)·rstd and e = dy ⊙ g:
 *   dx = rstd·(e − mean(e) − x̂·mean(e ⊙ x̂)),  dg += Σ_rows dy ⊙ x̂,  db += Σ_rows dy.
 * μ is not kept: backward recomputes it with the same sum as forward (ln_mean), bit for bit. */
static inline float ln_mean(const float *x, int C) { return gl_sum(x, C) / (float)C; }

void layernorm_forward(float *out, float *rstd, const float *inp, const float *g, const float *b, int N, int C,
                       float eps) {
    /* out may be inp (each row is reduced before it is written); rstd is apart from both */
    assert(N > 0 && C > 0 && eps >= 0.0f);
    assert(out && rstd && inp && g && b);
    assert(ops_disjoint(rstd, (size_t)N, inp, (size_t)N * C) && ops_disjoint(rstd, (size_t)N, out, (size_t)N * C));
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        const float *x = inp + (size_t)n * C;
        float *y = out + (size_t)n * C;
        const float mu = ln_mean(x, C);
        const float r = 1.0f / sqrtf(gl_sumsq_dev(x, mu, C) / C + eps);
        rstd[n] = r;
        for (int i = 0; i < C; i++) y[i] = (x[i] - mu) * r * g[i] + b[i];
    }
}

void layernorm_backward(float *dinp, float *dg, float *db, const float *dout, const float *inp, const float *g,
                        const float *rstd, int N, int C) {
    assert(N > 0 && C > 0);
    assert(dinp && dout && inp && g && rstd);
    const size_t nx = (size_t)N * C;
    assert(ops_disjoint(dinp, nx, dout, nx) && ops_disjoint(dinp, nx, inp, nx) && ops_disjoint(dinp, nx, rstd, N));
    assert(ops_disjoint(dg, C, dout, nx) && ops_disjoint(dg, C, inp, nx) && ops_disjoint(dg, C, dinp, nx));
    assert(ops_disjoint(db, C, dout, nx) && ops_disjoint(db, C, dinp, nx) && ops_disjoint(db, C, dg, C));
    (void)nx;
#pragma omp parallel
    {
#pragma omp for schedule(static) nowait
        for (int n = 0; n < N; n++) {
            const float *x = inp + (size_t)n * C, *dy = dout + (size_t)n * C;
            float *dx = dinp + (size_t)n * C;
            const float r = rstd[n], mu = ln_mean(x, C);
            const float se = gl_dot(dy, g, C) / (float)C, sex = gl_dot3_dev(dy, g, x, mu, C) * r / (float)C;
            for (int i = 0; i < C; i++) dx[i] += r * (dy[i] * g[i] - se - (x[i] - mu) * r * sex);
        }
        /* dg, db: column slices per thread, rows in order (as rmsnorm_backward) */
        const int nt = omp_get_num_threads(), th = omp_get_thread_num();
        const int c0 = (int)((long)C * th / nt), c1 = (int)((long)C * (th + 1) / nt);
        for (int n = 0; n < N; n++) {
            const float *dy = dout + (size_t)n * C, *x = inp + (size_t)n * C;
            const float r = rstd[n], mu = (dg && c1 > c0) ? ln_mean(x, C) : 0.0f;
            for (int i = c0; i < c1; i++) {
                if (dg) dg[i] += dy[i] * (x[i] - mu) * r;
                if (db) db[i] += dy[i];
            }
        }
    }
}
