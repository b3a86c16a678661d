/*
 * crosslayer.c — cross-layer connectivity, the dense alternatives of the
 * SATFormer cost comparison (docs/model.md, docs/crosslayer.md):
 *
 *   denseformer  after block n the next input is a depth-weighted average of
 *                the embedding and every block output so far (Pagliardini et
 *                al. 2024, DWA without dilation or period);
 *   hyper        dynamic hyper-connections with S = hc_expansion streams
 *                around every attention and every FFN (Zhu et al. 2024,
 *                Algorithm 2 and their transformer pseudo-code);
 *   mudd         multiway dynamic dense connections: after block n a per-token
 *                MLP gives separate weights over all states for the next
 *                block's query, key, value and residual inputs (Xiao et al.
 *                2025, dense_type "qkvr", separate attention norms).
 *
 * It does: the structured initial values of its tensors (their rows are in
 * variants.h, GL_XL_TENSORS),
 * their activation and gradient layout, and the forward/backward of every
 * hook model.c calls (crosslayer.h says where).  The equations, parameter
 * counts and memory are written out in docs/crosslayer.md with the same
 * symbols as the comments here.
 *
 * It does not: run blocks (model.c), optimise, or do I/O.  Backward adds into
 * parameter gradients and fills its own activation-gradient buffers; reductions
 * over tokens are serial in double, so results repeat bit for bit.
 */
#include "crosslayer.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ops.h"
#include "carve.h"
#include "vexp.h"

/* ------------------------------------------------------------------------ */
/* sizes                                                                    */

/* MUDD after block n mixes C ways: q, k, v, r before the last block, only r after it. */
static int mudd_C(const gl_model_config *c, int n) { return n + 1 < c->n_layer ? 4 : 1; }
static int mudd_K(const gl_model_config *c, int n) { return mudd_C(c, n) * (n + 2); }

/* Widest per-token weight vector of any module (the width of `dots`). */
static int kmax(const gl_model_config *c) {
    int k = c->n_layer + 1;
    if (c->cross_layer == CL_MUDD)
        for (int n = 0; n < c->n_layer; n++) k = mudd_K(c, n) > k ? mudd_K(c, n) : k;
    return k;
}

/* s_j, j = 0..L: the embedding (A[0].h_in, never overwritten for these variants) and block outputs. */
static const float *state_of(const gl_model *m, int j) {
    return j == 0 ? m->A[0].h_in : m->xl.state[j - 1];
}

/* Dot product accumulated in double: the weight gradients it feeds are sums
 * whose terms nearly cancel (a gradient through a scale-free norm is almost
 * orthogonal to that norm's input), so float accumulation error would show. */
static float dotf(const float *a, const float *b, int n) {
    double s = 0.0;
    for (int i = 0; i < n; i++) s += (double)a[i] * b[i];
    return (float)s;
}

/* ------------------------------------------------------------------------ */
/* initial values                                                           */

int xl_mudd_c(const gl_model_config *c, int n) { return mudd_C(c, n); }
int xl_mudd_k(const gl_model_config *c, int n) { return mudd_K(c, n); }
int xl_separate_kv_norms(const gl_model_config *c, int n) { return c->cross_layer == CL_MUDD && n >= 1; }

void xl_init_weights(gl_model *m) {
    /* Only the structured starts (INIT_XL rows of variants.h); the constant
     * ones (static_beta = 1, dynamic weights 0, scales 0.01, MUDD w2 = 0, the
     * key/value norms 1) are filled by the tensor table itself. */
    const gl_model_config *c = &m->cfg;
    const int L = c->n_layer, S = c->hc_expansion;
    for (int n = 0; n < L; n++) {
        gl_xl_params *x = &m->P.xl[n];
        switch (c->cross_layer) {
        case CL_DENSEFORMER:
            /* (D0) α_{n,j} = [j = n+1]: x_{n+1} = s_{n+1}, the plain residual network */
            memset(x->dwa, 0, (size_t)(n + 2) * sizeof(float));
            x->dwa[n + 1] = 1.0f;
            break;
        case CL_HYPER:
            for (int part = 0; part < 2; part++) {
                gl_hc_params *h = &x->hc[part];
                int k = 2 * n + part;
                /* (H0) A_m = e_{k mod S}, A_r = I (B = 1, W = 0, scales 0.01 come from the table) */
                memset(h->static_alpha, 0, (size_t)S * (S + 1) * sizeof(float));
                h->static_alpha[(k % S) * (S + 1)] = 1.0f;
                for (int i = 0; i < S; i++) h->static_alpha[i * (S + 1) + 1 + i] = 1.0f;
            }
            break;
        case CL_MUDD: {
            /* (M0) w1 keeps its N(0, 0.02) draw; w2 = 0 (table); bias = 1 on s_{n+1} for every way */
            int C = mudd_C(c, n);
            memset(x->mudd_bias, 0, (size_t)C * (n + 2) * sizeof(float));
            for (int w = 0; w < C; w++) x->mudd_bias[w * (n + 2) + n + 1] = 1.0f;
            break;
        }
        case CL_NONE: break;
        }
    }
}

/* ------------------------------------------------------------------------ */
/* memory                                                                   */

size_t xl_layout_acts(gl_model *m, float *base) {
    const gl_model_config *c = &m->cfg;
    const size_t N = (size_t)m->max_B * m->T, d = c->d_model, S = c->hc_expansion;
    const int L = c->n_layer;
    gl_xl_acts *X = &m->xl;
    gl_carver cv = {base, 0};
    switch (c->cross_layer) {
    case CL_DENSEFORMER:
        for (int n = 0; n < L; n++) X->state[n] = carve_take(&cv, N * d);
        break;
    case CL_MUDD:
        for (int n = 0; n < L; n++) {
            size_t K = (size_t)mudd_K(c, n);
            X->state[n] = carve_take(&cv, N * d);
            X->mrstd[n] = carve_take(&cv, N);
            X->mz[n] = carve_take(&cv, N * K);
            X->mg[n] = carve_take(&cv, N * K);
            X->mdw[n] = carve_take(&cv, N * K);
            if (n >= 1) {
                X->in_q[n] = carve_take(&cv, N * d);
                X->in_k[n] = carve_take(&cv, N * d);
                X->in_v[n] = carve_take(&cv, N * d);
                X->xnk[n] = carve_take(&cv, N * d);
                X->xnv[n] = carve_take(&cv, N * d);
                X->rstdk[n] = carve_take(&cv, N);
                X->rstdv[n] = carve_take(&cv, N);
            }
        }
        X->mu = carve_take(&cv, N * d);
        break;
    case CL_HYPER:
        for (int k = 0; k <= 2 * L; k++) X->hs[k] = carve_take(&cv, N * S * d);
        for (int k = 0; k < 2 * L; k++) {
            X->hrstd[k] = carve_take(&cv, N * S);
            X->hta[k] = carve_take(&cv, N * S * (S + 1));
            X->htb[k] = carve_take(&cv, N * S);
        }
        X->hbar = carve_take(&cv, N * S * d);
        break;
    case CL_NONE: break;
    }
    return cv.used;
}

size_t xl_layout_grads(gl_model *m, float *base) {
    const gl_model_config *c = &m->cfg;
    const size_t N = (size_t)m->max_B * m->T, d = c->d_model, S = c->hc_expansion;
    const size_t K = (size_t)kmax(c);
    gl_xl_acts *X = &m->xl;
    gl_carver cv = {base, 0};
    if (c->cross_layer == CL_MUDD) {
        X->dq = carve_take(&cv, N * d);
        X->dk = carve_take(&cv, N * d);
        X->dv = carve_take(&cv, N * d);
        X->dxnk = carve_take(&cv, N * d);
        X->dxnv = carve_take(&cv, N * d);
        X->du = carve_take(&cv, N * d);
        X->dg = carve_take(&cv, N * K);
        X->dz = carve_take(&cv, N * K);
    }
    switch (c->cross_layer) {
    case CL_MUDD: /* and the state-gradient accumulators, as DenseFormer */
    case CL_DENSEFORMER:
        for (int j = 0; j <= c->n_layer; j++) X->ds[j] = carve_take(&cv, N * d);
        X->dots = carve_take(&cv, N * K);
        break;
    case CL_HYPER:
        X->dH[0] = carve_take(&cv, N * S * d);
        X->dH[1] = carve_take(&cv, N * S * d);
        X->dhbar = carve_take(&cv, N * S * d);
        X->dalpha = carve_take(&cv, N * S * (S + 1));
        X->dbeta = carve_take(&cv, N * S);
        break;
    case CL_NONE: break;
    }
    return cv.used;
}

/* ------------------------------------------------------------------------ */
/* DenseFormer                                                              */

/* (D1) x_{n+1} = Σ_{j=0..n+1} α_{n,j} s_j  → A[n+1].h_in, or h_out after the last block. */
static void dwa_forward(gl_model *m, int n, int N) {
    const int d = m->cfg.d_model, L = m->cfg.n_layer;
    const float *a = m->P.xl[n].dwa;
    float *out = n + 1 < L ? m->A[n + 1].h_in : m->h_out;
#pragma omp parallel for schedule(static)
    for (int t = 0; t < N; t++) {
        float *o = out + (size_t)t * d;
        const float *s0 = state_of(m, 0) + (size_t)t * d;
        for (int i = 0; i < d; i++) o[i] = a[0] * s0[i];
        for (int j = 1; j <= n + 1; j++) {
            const float *s = state_of(m, j) + (size_t)t * d;
            for (int i = 0; i < d; i++) o[i] += a[j] * s[i];
        }
    }
}

/* dx = dL/dx_{n+1}:  dα_{n,j} = Σ_t <dx, s_j>,  ds_j += α_{n,j}·dx. */
static void dwa_backward(gl_model *m, int n, int N, const float *dx) {
    const int d = m->cfg.d_model, J = n + 2;
    const float *a = m->P.xl[n].dwa;
    gl_xl_acts *X = &m->xl;
#pragma omp parallel for schedule(static)
    for (int t = 0; t < N; t++) {
        const float *g = dx + (size_t)t * d;
        for (int j = 0; j < J; j++) {
            X->dots[(size_t)t * J + j] = dotf(g, state_of(m, j) + (size_t)t * d, d);
            float *ds = X->ds[j] + (size_t)t * d;
            for (int i = 0; i < d; i++) ds[i] += a[j] * g[i];
        }
    }
    float *ga = m->G.xl[n].dwa;
    for (int j = 0; j < J; j++) {
        double s = 0.0;
        for (int t = 0; t < N; t++) s += X->dots[(size_t)t * J + j];
        ga[j] += (float)s;
    }
}

/* ------------------------------------------------------------------------ */
/* MUDD                                                                     */

/* (M1) u = s_{n+1}/rms(s_{n+1});  w = w2·GELU(w1·u) + bias  (K = C·(n+2) per token);
 * (M2) X^c = Σ_j w[c·(n+2)+j]·s_j for c = q, k, v, r (only r after the last block). */
static void mudd_forward(gl_model *m, int n, int N) {
    const gl_model_config *c = &m->cfg;
    const int d = c->d_model, L = c->n_layer, C = mudd_C(c, n), J = n + 2, K = C * J;
    const float eps = c->norm_eps;
    gl_xl_acts *X = &m->xl;
    const gl_xl_params *p = &m->P.xl[n];
    const float *s = X->state[n];
    float *rs = X->mrstd[n], *u = X->mu;
#pragma omp parallel for schedule(static)
    for (int t = 0; t < N; t++) {
        const float *x = s + (size_t)t * d;
        float r = 1.0f / sqrtf(dotf(x, x, d) / d + eps);
        rs[t] = r;
        for (int i = 0; i < d; i++) u[(size_t)t * d + i] = x[i] * r;
    }
    mm_forward(X->mz[n], u, p->mudd_w1, N, d, K);
    const float *z = X->mz[n];
    float *g = X->mg[n];
#pragma omp parallel for schedule(static)
    for (long i = 0; i < (long)N * K; i++) g[i] = gl_gelu(z[i]);
    mm_forward(X->mdw[n], g, p->mudd_w2, N, K, K);
    float *w = X->mdw[n];
    float *dst[4] = {NULL, NULL, NULL, NULL};
    if (n + 1 < L) {
        dst[0] = X->in_q[n + 1];
        dst[1] = X->in_k[n + 1];
        dst[2] = X->in_v[n + 1];
        dst[3] = m->A[n + 1].h_in;
    } else {
        dst[0] = m->h_out;
    }
#pragma omp parallel for schedule(static)
    for (int t = 0; t < N; t++) {
        float *wt = w + (size_t)t * K;
        for (int q = 0; q < K; q++) wt[q] += p->mudd_bias[q];
        for (int cc = 0; cc < C; cc++) {
            float *o = dst[cc] + (size_t)t * d;
            const float *s0 = state_of(m, 0) + (size_t)t * d;
            for (int i = 0; i < d; i++) o[i] = wt[cc * J] * s0[i];
            for (int j = 1; j < J; j++) {
                const float *sj = state_of(m, j) + (size_t)t * d;
                for (int i = 0; i < d; i++) o[i] += wt[cc * J + j] * sj[i];
            }
        }
    }
}

/* dX[c] = dL/dX^c.  dw = <dX^c, s_j>;  ds_j += Σ_c w·dX^c;  then back through
 * the MLP and the scale-free norm into ds_{n+1}. */
static void mudd_backward(gl_model *m, int n, int N, float *const *dX) {
    const gl_model_config *c = &m->cfg;
    const int d = c->d_model, C = mudd_C(c, n), J = n + 2, K = C * J;
    gl_xl_acts *X = &m->xl;
    const gl_xl_params *p = &m->P.xl[n];
    gl_xl_params *gp = &m->G.xl[n];
    const float *w = X->mdw[n], *rs = X->mrstd[n];
    float *ddw = X->dots; /* (N, K) */
#pragma omp parallel for schedule(static)
    for (int t = 0; t < N; t++) {
        for (int j = 0; j < J; j++) {
            const float *sj = state_of(m, j) + (size_t)t * d;
            float *ds = X->ds[j] + (size_t)t * d;
            for (int cc = 0; cc < C; cc++) {
                const float *g = dX[cc] + (size_t)t * d;
                float wv = w[(size_t)t * K + cc * J + j];
                ddw[(size_t)t * K + cc * J + j] = dotf(g, sj, d);
                for (int i = 0; i < d; i++) ds[i] += wv * g[i];
            }
        }
    }
    for (int q = 0; q < K; q++) {
        double acc = 0.0;
        for (int t = 0; t < N; t++) acc += ddw[(size_t)t * K + q];
        gp->mudd_bias[q] += (float)acc;
    }
    memset(X->dg, 0, (size_t)N * K * sizeof(float));
    mm_backward(X->dg, gp->mudd_w2, ddw, X->mg[n], p->mudd_w2, N, K, K);
    const float *z = X->mz[n];
#pragma omp parallel for schedule(static)
    for (long i = 0; i < (long)N * K; i++) X->dz[i] = X->dg[i] * gl_gelu_grad(z[i]);
    /* recompute u = s_{n+1}·r (the forward's scratch was reused by later blocks) */
    const float *s = X->state[n];
    float *u = X->mu;
#pragma omp parallel for schedule(static)
    for (int t = 0; t < N; t++)
        for (int i = 0; i < d; i++) u[(size_t)t * d + i] = s[(size_t)t * d + i] * rs[t];
    memset(X->du, 0, (size_t)N * d * sizeof(float));
    mm_backward(X->du, gp->mudd_w1, X->dz, u, p->mudd_w1, N, d, K);
    /* scale-free RMSNorm: dx = r·(du − u·mean(du ⊙ u)) */
    float *dsn = X->ds[n + 1];
#pragma omp parallel for schedule(static)
    for (int t = 0; t < N; t++) {
        const float *ut = u + (size_t)t * d, *dut = X->du + (size_t)t * d;
        float mean = dotf(dut, ut, d) / d, r = rs[t];
        for (int i = 0; i < d; i++) dsn[(size_t)t * d + i] += r * (dut[i] - ut[i] * mean);
    }
}

/* ------------------------------------------------------------------------ */
/* hyper-connections                                                        */

/* Module k: 2n wraps block n's attention, 2n+1 its FFN. */
static const gl_hc_params *hc_p(const gl_param_ptrs *P, int k) { return &P->xl[k / 2].hc[k % 2]; }

/* α_{i,c} = Sα[i,c] + sα·tanh(H̄_i·Wα[c]) of token t. */
static inline float hc_alpha(const gl_hc_params *p, const float *ta, int S, size_t t, int i, int c) {
    return p->static_alpha[i * (S + 1) + c] + p->dynamic_alpha_scale[0] * ta[(t * S + i) * (S + 1) + c];
}

static inline float hc_beta(const gl_hc_params *p, const float *tb, int S, size_t t, int j) {
    return p->static_beta[j] + p->dynamic_beta_scale[0] * tb[t * S + j];
}

/* H̄ = H/rms(H) per stream row into X->hbar (rs given). */
static void hc_hbar(gl_model *m, int k, long R) {
    const int d = m->cfg.d_model;
    const float *H = m->xl.hs[k], *rs = m->xl.hrstd[k];
    float *hb = m->xl.hbar;
#pragma omp parallel for schedule(static)
    for (long r = 0; r < R; r++)
        for (int i = 0; i < d; i++) hb[r * d + i] = H[r * d + i] * rs[r];
}

/* (H1) width connection of module k: dynamic weights from H^(k), x = Σ_i α_{i,0} H_i. */
static void hc_width(gl_model *m, int k, int N, float *x) {
    const gl_model_config *c = &m->cfg;
    const int d = c->d_model, S = c->hc_expansion;
    const long R = (long)N * S;
    gl_xl_acts *X = &m->xl;
    const gl_hc_params *p = hc_p(&m->P, k);
    const float *H = X->hs[k];
    float *rs = X->hrstd[k], *ta = X->hta[k], *tb = X->htb[k];
#pragma omp parallel for schedule(static)
    for (long r = 0; r < R; r++) rs[r] = 1.0f / sqrtf(dotf(H + r * d, H + r * d, d) / d + c->norm_eps);
    hc_hbar(m, k, R);
    mm_forward(ta, X->hbar, p->dynamic_alpha_fn, (int)R, d, S + 1);
    mm_forward(tb, X->hbar, p->dynamic_beta_fn, (int)R, d, 1);
#pragma omp parallel for schedule(static)
    for (long i = 0; i < R * (S + 1); i++) ta[i] = tanhf(ta[i]);
#pragma omp parallel for schedule(static)
    for (long i = 0; i < R; i++) tb[i] = tanhf(tb[i]);
#pragma omp parallel for schedule(static)
    for (int t = 0; t < N; t++) {
        float *o = x + (size_t)t * d;
        for (int i = 0; i < S; i++) {
            float a = hc_alpha(p, ta, S, (size_t)t, i, 0);
            const float *h = H + ((size_t)t * S + i) * d;
            if (i == 0)
                for (int e = 0; e < d; e++) o[e] = a * h[e];
            else
                for (int e = 0; e < d; e++) o[e] += a * h[e];
        }
    }
}

/* (H2) depth connection of module k: H^(k+1)_j = β_j·y + Σ_i α_{i,1+j} H^(k)_i. */
static void hc_depth(gl_model *m, int k, int N, const float *y) {
    const int d = m->cfg.d_model, S = m->cfg.hc_expansion;
    gl_xl_acts *X = &m->xl;
    const gl_hc_params *p = hc_p(&m->P, k);
    const float *H = X->hs[k], *ta = X->hta[k], *tb = X->htb[k];
    float *Hn = X->hs[k + 1];
#pragma omp parallel for schedule(static)
    for (int t = 0; t < N; t++)
        for (int j = 0; j < S; j++) {
            float *o = Hn + ((size_t)t * S + j) * d;
            const float *yt = y + (size_t)t * d;
            float b = hc_beta(p, tb, S, (size_t)t, j);
            for (int e = 0; e < d; e++) o[e] = b * yt[e];
            for (int i = 0; i < S; i++) {
                float a = hc_alpha(p, ta, S, (size_t)t, i, 1 + j);
                const float *h = H + ((size_t)t * S + i) * d;
                for (int e = 0; e < d; e++) o[e] += a * h[e];
            }
        }
}

/* Backward of the depth connection's layer-output term: dβ_j = <y, dH'_j> (kept
 * in X->dbeta for hc_in_backward), dy = Σ_j β_j dH'_j (overwritten). */
static void hc_out_backward(gl_model *m, int k, int N, const float *dHn, const float *y, float *dy) {
    const int d = m->cfg.d_model, S = m->cfg.hc_expansion;
    gl_xl_acts *X = &m->xl;
    const gl_hc_params *p = hc_p(&m->P, k);
    const float *tb = X->htb[k];
#pragma omp parallel for schedule(static)
    for (int t = 0; t < N; t++) {
        const float *yt = y + (size_t)t * d;
        float *o = dy + (size_t)t * d;
        for (int j = 0; j < S; j++) {
            const float *g = dHn + ((size_t)t * S + j) * d;
            float b = hc_beta(p, tb, S, (size_t)t, j);
            X->dbeta[(size_t)t * S + j] = dotf(yt, g, d);
            if (j == 0)
                for (int e = 0; e < d; e++) o[e] = b * g[e];
            else
                for (int e = 0; e < d; e++) o[e] += b * g[e];
        }
    }
}

/* The rest of module k's backward, given dH' = dL/dH^(k+1) and dx = dL/dx
 * (the layer input): dH = dL/dH^(k) (overwritten), and every parameter gradient. */
static void hc_in_backward(gl_model *m, int k, int N, const float *dHn, const float *dx, float *dH) {
    const int d = m->cfg.d_model, S = m->cfg.hc_expansion, S1 = S + 1;
    const long R = (long)N * S;
    gl_xl_acts *X = &m->xl;
    const gl_hc_params *p = hc_p(&m->P, k);
    gl_hc_params *gp = (gl_hc_params *)hc_p(&m->G, k);
    const float *H = X->hs[k], *ta = X->hta[k], *tb = X->htb[k], *rs = X->hrstd[k];
    float *da = X->dalpha, *db = X->dbeta;
    /* dα_{i,0} = <H_i, dx>, dα_{i,1+j} = <H_i, dH'_j>;  dH_i = α_{i,0}dx + Σ_j α_{i,1+j} dH'_j */
#pragma omp parallel for schedule(static)
    for (int t = 0; t < N; t++)
        for (int i = 0; i < S; i++) {
            const float *h = H + ((size_t)t * S + i) * d;
            float *o = dH + ((size_t)t * S + i) * d;
            for (int cc = 0; cc < S1; cc++) {
                const float *g = cc == 0 ? dx + (size_t)t * d : dHn + ((size_t)t * S + cc - 1) * d;
                float a = hc_alpha(p, ta, S, (size_t)t, i, cc);
                da[((size_t)t * S + i) * S1 + cc] = dotf(h, g, d);
                if (cc == 0)
                    for (int e = 0; e < d; e++) o[e] = a * g[e];
                else
                    for (int e = 0; e < d; e++) o[e] += a * g[e];
            }
        }
    /* static weights and scales: sums over tokens in a fixed order */
    double sa[(16 + 1) * 16] = {0}, sb[16] = {0}, ssa = 0.0, ssb = 0.0;
    assert(S <= 16);
    for (long r = 0; r < R; r++) {
        for (int cc = 0; cc < S1; cc++) {
            double g = da[r * S1 + cc];
            sa[(r % S) * S1 + cc] += g;
            ssa += g * ta[r * S1 + cc];
        }
        sb[r % S] += db[r];
        ssb += (double)db[r] * tb[r];
    }
    for (int q = 0; q < S * S1; q++) gp->static_alpha[q] += (float)sa[q];
    for (int i = 0; i < S; i++) gp->static_beta[i] += (float)sb[i];
    gp->dynamic_alpha_scale[0] += (float)ssa;
    gp->dynamic_beta_scale[0] += (float)ssb;
    /* through tanh: dpre = s·dα·(1 − tanh²) */
    const float sca = p->dynamic_alpha_scale[0], scb = p->dynamic_beta_scale[0];
#pragma omp parallel for schedule(static)
    for (long i = 0; i < R * S1; i++) da[i] = sca * da[i] * (1.0f - ta[i] * ta[i]);
#pragma omp parallel for schedule(static)
    for (long i = 0; i < R; i++) db[i] = scb * db[i] * (1.0f - tb[i] * tb[i]);
    /* through the projections and the scale-free norm of each stream */
    hc_hbar(m, k, R);
    const float *hb = X->hbar;
    memset(X->dhbar, 0, (size_t)R * d * sizeof(float));
    mm_backward(X->dhbar, gp->dynamic_alpha_fn, da, hb, p->dynamic_alpha_fn, (int)R, d, S1);
    mm_backward(X->dhbar, gp->dynamic_beta_fn, db, hb, p->dynamic_beta_fn, (int)R, d, 1);
#pragma omp parallel for schedule(static)
    for (long r = 0; r < R; r++) {
        const float *g = X->dhbar + r * d, *y = hb + r * d;
        float mean = dotf(g, y, d) / d;
        for (int e = 0; e < d; e++) dH[r * d + e] += rs[r] * (g[e] - y[e] * mean);
    }
}

/* ------------------------------------------------------------------------ */
/* forward hooks                                                            */

/* The entries' invariant: block n of the model, N rows within the buffers. */
static void xl_check(const gl_model *m, int n, int N) {
    assert(m && n >= 0 && n < m->cfg.n_layer && N > 0 && N <= m->max_B * m->T);
    (void)m, (void)n, (void)N;
}

void xl_forward_begin(gl_model *m, int N) {
    xl_check(m, 0, N);
    if (m->cfg.cross_layer != CL_HYPER) return;
    const int d = m->cfg.d_model, S = m->cfg.hc_expansion;
    float *h0 = m->A[0].h_in, *H = m->xl.hs[0];
    /* (H0) H^(0)_i = h0 for every stream; block 0's input is module 0's width connection */
#pragma omp parallel for schedule(static)
    for (int t = 0; t < N; t++)
        for (int i = 0; i < S; i++) memcpy(H + ((size_t)t * S + i) * d, h0 + (size_t)t * d, (size_t)d * sizeof(float));
    hc_width(m, 0, N, m->A[0].h_in);
}

float *xl_block_output(gl_model *m, int n, float *h_next) {
    assert(m && n >= 0 && n < m->cfg.n_layer && h_next);
    const gl_cross_layer cl = m->cfg.cross_layer;
    return cl == CL_DENSEFORMER || cl == CL_MUDD ? m->xl.state[n] : h_next;
}

void xl_forward_after_block(gl_model *m, int n, int N) {
    xl_check(m, n, N);
    const gl_model_config *c = &m->cfg;
    switch (c->cross_layer) {
    case CL_DENSEFORMER: dwa_forward(m, n, N); break;
    case CL_MUDD: mudd_forward(m, n, N); break;
    case CL_HYPER:
        if (n + 1 < c->n_layer) {
            hc_width(m, 2 * n + 2, N, m->A[n + 1].h_in);
        } else {
            /* (H3) h_L = Σ_i H^(2L)_i */
            const int d = c->d_model, S = c->hc_expansion;
            const float *H = m->xl.hs[2 * c->n_layer];
#pragma omp parallel for schedule(static)
            for (int t = 0; t < N; t++) {
                float *o = m->h_out + (size_t)t * d;
                memcpy(o, H + (size_t)t * S * d, (size_t)d * sizeof(float));
                for (int i = 1; i < S; i++)
                    for (int e = 0; e < d; e++) o[e] += H[((size_t)t * S + i) * d + e];
            }
        }
        break;
    case CL_NONE: break;
    }
}

const float *xl_query_input(const gl_model *m, int n) {
    return xl_separate_kv_norms(&m->cfg, n) ? m->xl.in_q[n] : m->A[n].h_in;
}

void xl_kv_norm_forward(gl_model *m, int n, int N) {
    xl_check(m, n, N);
    if (!xl_separate_kv_norms(&m->cfg, n)) return;
    const gl_block_params *b = &m->P.layer[n];
    gl_xl_acts *X = &m->xl;
    const int d = m->cfg.d_model;
    rmsnorm_forward(X->xnk[n], X->rstdk[n], X->in_k[n], b->attn_norm_k, N, d, m->cfg.norm_eps);
    rmsnorm_forward(X->xnv[n], X->rstdv[n], X->in_v[n], b->attn_norm_v, N, d, m->cfg.norm_eps);
}

const float *xl_attn_input(const gl_model *m, int n, int which) {
    if (xl_separate_kv_norms(&m->cfg, n) && which == 1) return m->xl.xnk[n];
    if (xl_separate_kv_norms(&m->cfg, n) && which == 2) return m->xl.xnv[n];
    return m->A[n].xn1;
}

void xl_hc_mid_forward(gl_model *m, int n, int N) {
    xl_check(m, n, N);
    hc_depth(m, 2 * n, N, m->A[n].ao);
    hc_width(m, 2 * n + 1, N, m->A[n].h_mid);
}

void xl_hc_out_forward(gl_model *m, int n, int N) {
    xl_check(m, n, N);
    hc_depth(m, 2 * n + 1, N, m->A[n].fo);
}

/* ------------------------------------------------------------------------ */
/* backward hooks                                                           */

void xl_backward_block_out(gl_model *m, float *dres, int n, int N) {
    xl_check(m, n, N);
    const gl_model_config *c = &m->cfg;
    const int d = c->d_model, L = c->n_layer;
    gl_xl_acts *X = &m->xl;
    /* dres is overwritten from ds[n+1] (memcpy) and read while the streams' gradients are written */
    assert(dres);
    assert(c->cross_layer == CL_NONE || c->cross_layer == CL_HYPER ||
           ops_disjoint(dres, (size_t)N * d, X->ds[n + 1], (size_t)N * d));
    assert(c->cross_layer != CL_HYPER || ops_disjoint(dres, (size_t)N * d, X->dH[0], (size_t)N * c->hc_expansion * d));
    switch (c->cross_layer) {
    case CL_DENSEFORMER:
    case CL_MUDD:
        if (n == L - 1)
            for (int j = 0; j <= L; j++) memset(X->ds[j], 0, (size_t)N * d * sizeof(float));
        if (c->cross_layer == CL_DENSEFORMER) {
            dwa_backward(m, n, N, dres);
        } else {
            float *dX[4] = {dres};
            if (n + 1 < L) {
                dX[0] = X->dq;
                dX[1] = X->dk;
                dX[2] = X->dv;
                dX[3] = dres;
            }
            mudd_backward(m, n, N, dX);
        }
        memcpy(dres, X->ds[n + 1], (size_t)N * d * sizeof(float));
        break;
    case CL_HYPER:
        if (n == L - 1) {
            /* h_L = Σ_i H_i: every stream receives dL/dh_L */
            const int S = c->hc_expansion;
            X->cur = 0;
#pragma omp parallel for schedule(static)
            for (int t = 0; t < N; t++)
                for (int i = 0; i < S; i++)
                    memcpy(X->dH[0] + ((size_t)t * S + i) * d, dres + (size_t)t * d, (size_t)d * sizeof(float));
        }
        break;
    case CL_NONE: break;
    }
}

void xl_backward_block_in(gl_model *m, float *dh, int n, int N) {
    xl_check(m, n, N);
    const gl_model_config *c = &m->cfg;
    const int d = c->d_model;
    gl_xl_acts *X = &m->xl;
    assert(dh);
    assert(c->cross_layer != CL_HYPER || (ops_disjoint(dh, (size_t)N * d, X->dH[0], (size_t)N * c->hc_expansion * d) &&
                                          ops_disjoint(dh, (size_t)N * d, X->dH[1], (size_t)N * c->hc_expansion * d)));
    switch (c->cross_layer) {
    case CL_DENSEFORMER:
    case CL_MUDD:
        if (n == 0) {
            /* h0 = s_0 also feeds every average directly */
#pragma omp parallel for schedule(static)
            for (long i = 0; i < (long)N * d; i++) dh[i] += X->ds[0][i];
        }
        break;
    case CL_HYPER:
        hc_in_backward(m, 2 * n, N, X->dH[X->cur], dh, X->dH[1 - X->cur]);
        X->cur = 1 - X->cur;
        if (n == 0) {
            /* H^(0)_i = h0 for every i */
            const int S = c->hc_expansion;
            const float *g = X->dH[X->cur];
#pragma omp parallel for schedule(static)
            for (int t = 0; t < N; t++) {
                float *o = dh + (size_t)t * d;
                memcpy(o, g + (size_t)t * S * d, (size_t)d * sizeof(float));
                for (int i = 1; i < S; i++)
                    for (int e = 0; e < d; e++) o[e] += g[((size_t)t * S + i) * d + e];
            }
        }
        break;
    case CL_NONE: break;
    }
}

void xl_hc_ffn_out_backward(gl_model *m, int n, int N, float *dfo) {
    xl_check(m, n, N);
    assert(dfo);
    hc_out_backward(m, 2 * n + 1, N, m->xl.dH[m->xl.cur], m->A[n].fo, dfo);
}

void xl_hc_mid_backward(gl_model *m, int n, int N, const float *dhm, float *dao) {
    xl_check(m, n, N);
    assert(dhm && dao && ops_disjoint(dao, (size_t)N * m->cfg.d_model, dhm, (size_t)N * m->cfg.d_model));
    gl_xl_acts *X = &m->xl;
    hc_in_backward(m, 2 * n + 1, N, X->dH[X->cur], dhm, X->dH[1 - X->cur]);
    X->cur = 1 - X->cur;
    hc_out_backward(m, 2 * n, N, X->dH[X->cur], m->A[n].ao, dao);
}

void xl_kv_grads(gl_model *m, int n, int N, float *dxn, float **dxk, float **dxv) {
    xl_check(m, n, N);
    assert(dxn && dxk && dxv);
    *dxk = *dxv = dxn;
    if (!xl_separate_kv_norms(&m->cfg, n)) return;
    const size_t sz = (size_t)N * m->cfg.d_model * sizeof(float);
    memset(m->xl.dxnk, 0, sz);
    memset(m->xl.dxnv, 0, sz);
    *dxk = m->xl.dxnk;
    *dxv = m->xl.dxnv;
}

int xl_attn_norm_backward(gl_model *m, int n, int N, const float *dxn) {
    xl_check(m, n, N);
    assert(dxn);
    if (!xl_separate_kv_norms(&m->cfg, n)) return 0;
    const int d = m->cfg.d_model;
    const gl_block_params *b = &m->P.layer[n];
    gl_block_params *gb = &m->G.layer[n];
    gl_xl_acts *X = &m->xl;
    const size_t sz = (size_t)N * d * sizeof(float);
    memset(X->dq, 0, sz);
    memset(X->dk, 0, sz);
    memset(X->dv, 0, sz);
    rmsnorm_backward(X->dq, gb->attn_norm, dxn, X->in_q[n], b->attn_norm, m->A[n].rstd1, N, d);
    rmsnorm_backward(X->dk, gb->attn_norm_k, X->dxnk, X->in_k[n], b->attn_norm_k, X->rstdk[n], N, d);
    rmsnorm_backward(X->dv, gb->attn_norm_v, X->dxnv, X->in_v[n], b->attn_norm_v, X->rstdv[n], N, d);
    return 1;
}
