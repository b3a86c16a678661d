/*
 * valueres.c — the value residual of blocks n >= 1 (docs/model.md,
 * "Value residual"; docs/model.md): v' = f(v, V1) with V1 = block 0's v.
 *
 *   none        v' = v
 *   resformer   v' = λ1ₙ·V1 + λ2ₙ·v   (plus: λ1ₙ = s·softmax(ℓ)ₙ; learnable; identity)
 *   satformer   v'ₜ,ⱼ = vₜ,ⱼ + αₜ,ⱼ·V1ₜ,ⱼ,  αₜ = φ(x Wα + b) per token, one α per KV head;
 *               φ = model.sat_gate (ReLU by default), b only with model.sat_gate_bias
 *   headgate    v'ₜ,ⱼ = vₜ,ⱼ + gₙ,ⱼ·V1ₜ,ⱼ,  gₙ,ⱼ a learned scalar per block and KV head,
 *               the same for every token: SATFormer's head-specificity without
 *               its token-dependence (docs/model.md)
 *
 * Gated variants write their gate per (token, KV head) into A[n].gate and
 * share the mixing v' = v + gate·V1 (gate_mix_*); the gate is what the trace
 * records and what model_set_gate_override fixes.  A variant is one case in
 * vr_forward and vr_backward (the compiler lists a missing one) plus its rows
 * in variants.h.
 *
 * Deliberately not here: the projections that make v and V1 (model.c), I/O.
 * Scalar gradients (λ's) are sums over every token in double, serially, so
 * they repeat bit for bit.
 */
#include "valueres.h"

#include <assert.h>
#include <math.h>
#include <string.h>

#include "crosslayer.h"
#include "ops.h"
#include "vred.h"

/* ------------------------------------------------------------------------ */
/* helpers                                                                  */

static int n_mixing(const gl_model_config *c) {
    int k = 0;
    for (int n = 0; n < c->n_layer; n++) k += config_layer_mixes_v1(c, n);
    return k;
}

static int mixing_index(const gl_model_config *c, int n) {
    int k = 0;
    for (int i = 0; i < n; i++) k += config_layer_mixes_v1(c, i);
    return k;
}

/* Override of the gate of (block n, KV head j). */
static gl_gate_mode gate_mode(const gl_model *m, int n, int j) {
    return m->have_overrides ? m->ov.gate_mode[n * m->cfg.n_kv_head + j] : GATE_FREE;
}

/* The overridden gate of (block n, token t of the batch, KV head j): the
 * constant, or the caller's per-token value (GATE_TOKEN). */
static float gate_value(const gl_model *m, int n, int t, int j) {
    const int Hkv = m->cfg.n_kv_head;
    if (m->ov.gate_mode[n * Hkv + j] == GATE_TOKEN) {
        assert(m->ov.gate_token && t < m->max_B * m->T);
        return m->ov.gate_token[((size_t)n * m->max_B * m->T + t) * Hkv + j];
    }
    return m->ov.gate_value[n * Hkv + j];
}

void model_resformer_lambda(const gl_model *m, int n, float *lambda1, float *lambda2) {
    const gl_model_config *c = &m->cfg;
    *lambda1 = 0.0f;
    *lambda2 = 1.0f;
    if (c->value_residual != VR_RESFORMER || !config_layer_mixes_v1(c, n)) return;
    const gl_block_params *b = &m->P.layer[n];
    switch (c->resformer_variant) {
    case RF_PLUS: {
        int M = n_mixing(c), i = mixing_index(c, n);
        const float *l = m->P.rf_logits;
        float mx = l[0];
        for (int k = 1; k < M; k++) mx = l[k] > mx ? l[k] : mx;
        double s = 0.0;
        for (int k = 0; k < M; k++) s += exp((double)l[k] - mx);
        *lambda1 = (float)(m->P.rf_scale[0] * exp((double)l[i] - mx) / s);
        *lambda2 = b->lambda2[0];
        break;
    }
    case RF_LEARNABLE:
        *lambda1 = b->lambda1[0];
        *lambda2 = b->lambda2[0];
        break;
    case RF_IDENTITY:
        *lambda1 = 0.5f;
        *lambda2 = 0.5f;
        break;
    }
    if (m->have_overrides && m->ov.lambda1_mode[n] == GATE_CONST) *lambda1 = m->ov.lambda1_value[n];
}

/* ------------------------------------------------------------------------ */
/* gated mixing: v' = v + gate·V1 per (token, KV head)                      */

static void gate_mix_forward(gl_model *m, int n, int N) {
    gl_block_acts *a = &m->A[n];
    const int Hkv = m->cfg.n_kv_head, hd = m->hd, kd = Hkv * hd;
    const float *V1 = m->A[0].v;
#pragma omp parallel for schedule(static)
    for (int t = 0; t < N; t++)
        for (int j = 0; j < Hkv; j++) {
            const float g = a->gate[(size_t)t * Hkv + j];
            const float *v = a->v + (size_t)t * kd + (size_t)j * hd;
            const float *v1 = V1 + (size_t)t * kd + (size_t)j * hd;
            float *o = a->vmix + (size_t)t * kd + (size_t)j * hd;
            for (int i = 0; i < hd; i++) o[i] = v[i] + g * v1[i];
        }
}

/* dgate = Σ_i dv'·V1 (before any mask),  dV1 += gate·dv';  dv = dv' (not written). */
static void gate_mix_backward(gl_model *m, int n, int N, const float *dvmix, float *dV1, float *dgate) {
    const gl_block_acts *a = &m->A[n];
    const int Hkv = m->cfg.n_kv_head, hd = m->hd, kd = Hkv * hd;
    const float *V1 = m->A[0].v;
#pragma omp parallel for schedule(static)
    for (int t = 0; t < N; t++)
        for (int j = 0; j < Hkv; j++) {
            const float *dvm = dvmix + (size_t)t * kd + (size_t)j * hd;
            const float *v1 = V1 + (size_t)t * kd + (size_t)j * hd;
            float *dv1 = dV1 + (size_t)t * kd + (size_t)j * hd;
            const float ga = a->gate[(size_t)t * Hkv + j];
            for (int i = 0; i < hd; i++) dv1[i] += ga * dvm[i];
            dgate[(size_t)t * Hkv + j] = gl_dot(dvm, v1, hd); /* vectorised (vred.h) */
        }
}

/* ------------------------------------------------------------------------ */
/* SATFormer: α = φ(x Wα + b)                                               */
/*
 * z = x Wα (+ b, model.sat_gate_bias) per token, one value per KV head; the
 * gate function φ (model.sat_gate, GL_SAT_GATES) maps a token's row z of Hkv
 * values to its gates f (docs/model.md "SATFormer gate functions"):
 *   relu             fⱼ = max(zⱼ, 0)                   (the paper's, the default)
 *   sigmoid          fⱼ = σ(zⱼ)
 *   softmax          fⱼ = Hkv·softmax(z)ⱼ              (over the KV heads of the token; mean 1)
 *   softmax_sigmoid  fⱼ = Hkv·softmax(z)ⱼ·σ(zⱼ)
 *   tanh             fⱼ = tanh(zⱼ)
 *   identity         fⱼ = zⱼ
 * as the official code's ValueResidualMixing defines them.  An overridden
 * gate replaces fⱼ after φ (the other heads keep theirs, softmax included)
 * and passes no gradient.
 */

#define VR_MAX_HKV 256 /* model.n_kv_head's bound (config.c): one token's row fits on the stack */

static float sg_sigmoid(float z) { return 1.0f / (1.0f + expf(-z)); }

/* f (Hkv) = φ(z) for one token's row. */
static void sat_gate_row(gl_sat_gate g, const float *z, float *f, int H) {
    switch (g) {
    case SG_RELU:
        for (int j = 0; j < H; j++) f[j] = z[j] > 0.0f ? z[j] : 0.0f;
        return;
    case SG_SIGMOID:
        for (int j = 0; j < H; j++) f[j] = sg_sigmoid(z[j]);
        return;
    case SG_TANH:
        for (int j = 0; j < H; j++) f[j] = tanhf(z[j]);
        return;
    case SG_IDENTITY:
        for (int j = 0; j < H; j++) f[j] = z[j];
        return;
    case SG_SOFTMAX:
    case SG_SOFTMAX_SIGMOID: {
        float mx = z[0];
        for (int j = 1; j < H; j++) mx = z[j] > mx ? z[j] : mx;
        float sum = 0.0f;
        for (int j = 0; j < H; j++) sum += (f[j] = expf(z[j] - mx));
        const float scale = (float)H / sum;
        for (int j = 0; j < H; j++) f[j] *= scale * (g == SG_SOFTMAX_SIGMOID ? sg_sigmoid(z[j]) : 1.0f);
        return;
    }
    }
    assert(0);
}

/* dz (Hkv) = (∂f/∂z)ᵀ·df for one token's row, f = φ(z) (dz may alias df). */
static void sat_gate_row_backward(gl_sat_gate g, const float *z, const float *f, const float *df, float *dz, int H) {
    switch (g) {
    case SG_RELU:
        for (int j = 0; j < H; j++) dz[j] = z[j] > 0.0f ? df[j] : 0.0f;
        return;
    case SG_SIGMOID:
        for (int j = 0; j < H; j++) dz[j] = df[j] * f[j] * (1.0f - f[j]);
        return;
    case SG_TANH:
        for (int j = 0; j < H; j++) dz[j] = df[j] * (1.0f - f[j] * f[j]);
        return;
    case SG_IDENTITY:
        for (int j = 0; j < H; j++) dz[j] = df[j];
        return;
    case SG_SOFTMAX: {
        /* f = H·s:  dzⱼ = fⱼ·(dfⱼ − Σₖ dfₖ·fₖ / H) */
        double sdf = 0.0;
        for (int k = 0; k < H; k++) sdf += (double)df[k] * f[k];
        const float m = (float)(sdf / H);
        for (int j = 0; j < H; j++) dz[j] = f[j] * (df[j] - m);
        return;
    }
    case SG_SOFTMAX_SIGMOID: {
        /* f = H·s⊙σ:  dzⱼ = dfⱼ·fⱼ·(2 − σⱼ) − sⱼ·Σₖ dfₖ·fₖ,  s = f / (H·σ) */
        double sdf = 0.0;
        for (int k = 0; k < H; k++) sdf += (double)df[k] * f[k];
        for (int j = 0; j < H; j++) {
            const float q = sg_sigmoid(z[j]);
            const float sj = f[j] / ((float)H * q);
            dz[j] = df[j] * f[j] * (2.0f - q) - sj * (float)sdf;
        }
        return;
    }
    }
    assert(0);
}

static void sat_forward(gl_model *m, int n, int N) {
    gl_block_acts *a = &m->A[n];
    const int Hkv = m->cfg.n_kv_head;
    const gl_sat_gate sg = m->cfg.sat_gate;
    const float *bias = m->P.layer[n].alpha_bias; /* (Hkv) or NULL */
    mm_forward(a->gate_pre, xl_attn_input(m, n, 2), m->P.layer[n].alpha, N, m->cfg.d_model, Hkv);
    if (sg == SG_RELU && !bias) { /* the paper's gate, kept as it always ran (runs repeat bit for bit) */
#pragma omp parallel for schedule(static)
        for (int t = 0; t < N; t++)
            for (int j = 0; j < Hkv; j++) {
                float pre = a->gate_pre[(size_t)t * Hkv + j];
                a->gate[(size_t)t * Hkv + j] = gate_mode(m, n, j) != GATE_FREE ? gate_value(m, n, t, j) : (pre > 0.0f ? pre : 0.0f);
            }
    } else {
#pragma omp parallel for schedule(static)
        for (int t = 0; t < N; t++) {
            float *z = a->gate_pre + (size_t)t * Hkv, *g = a->gate + (size_t)t * Hkv;
            if (bias)
                for (int j = 0; j < Hkv; j++) z[j] += bias[j];
            sat_gate_row(sg, z, g, Hkv);
            for (int j = 0; j < Hkv; j++)
                if (gate_mode(m, n, j) != GATE_FREE) g[j] = gate_value(m, n, t, j);
        }
    }
    gate_mix_forward(m, n, N);
}

/* dgate = dα (N, Hkv) in, dz = ∂loss/∂(x Wα + b) out (in place), for
 * vr_input_backward; the bias gradient is Σ_t dz in double, token order. */
static void sat_backward(gl_model *m, int n, int N, const float *dvmix, float *dV1, float *dgate) {
    const gl_block_acts *a = &m->A[n];
    const int Hkv = m->cfg.n_kv_head;
    const gl_sat_gate sg = m->cfg.sat_gate;
    gate_mix_backward(m, n, N, dvmix, dV1, dgate);
    if (sg == SG_RELU && !m->P.layer[n].alpha_bias) {
        /* through the ReLU; an overridden gate is a constant */
        for (int t = 0; t < N; t++)
            for (int j = 0; j < Hkv; j++) {
                int live = gate_mode(m, n, j) == GATE_FREE && a->gate_pre[(size_t)t * Hkv + j] > 0.0f;
                if (!live) dgate[(size_t)t * Hkv + j] = 0.0f;
            }
        return;
    }
    assert(Hkv <= VR_MAX_HKV);
#pragma omp parallel for schedule(static)
    for (int t = 0; t < N; t++) {
        const float *z = a->gate_pre + (size_t)t * Hkv;
        float *d = dgate + (size_t)t * Hkv, f[VR_MAX_HKV];
        sat_gate_row(sg, z, f, Hkv); /* φ(z) before overrides: the Jacobian's point */
        for (int j = 0; j < Hkv; j++)
            if (gate_mode(m, n, j) != GATE_FREE) d[j] = 0.0f; /* an overridden gate is a constant */
        sat_gate_row_backward(sg, z, f, d, d, Hkv);
    }
    float *db = m->G.layer[n].alpha_bias;
    if (db)
        for (int j = 0; j < Hkv; j++) {
            double s = 0.0;
            for (int t = 0; t < N; t++) s += dgate[(size_t)t * Hkv + j];
            db[j] += (float)s;
        }
}

/* ------------------------------------------------------------------------ */
/* static head gate: gate = g[n, j] for every token                        */

static void hg_forward(gl_model *m, int n, int N) {
    gl_block_acts *a = &m->A[n];
    const int Hkv = m->cfg.n_kv_head;
    const float *g = m->P.layer[n].headgate; /* (Hkv) */
    for (int t = 0; t < N; t++)
        for (int j = 0; j < Hkv; j++)
            a->gate[(size_t)t * Hkv + j] = gate_mode(m, n, j) != GATE_FREE ? gate_value(m, n, t, j) : g[j];
    gate_mix_forward(m, n, N);
}

/* dg[j] = Σ_t dgate[t, j], in double and token order (an overridden gate is a constant). */
static void hg_backward(gl_model *m, int n, int N, const float *dvmix, float *dV1, float *dgate) {
    const int Hkv = m->cfg.n_kv_head;
    gate_mix_backward(m, n, N, dvmix, dV1, dgate);
    for (int j = 0; j < Hkv; j++) {
        if (gate_mode(m, n, j) != GATE_FREE) continue;
        double s = 0.0;
        for (int t = 0; t < N; t++) s += dgate[(size_t)t * Hkv + j];
        m->G.layer[n].headgate[j] += (float)s;
    }
}

/* ------------------------------------------------------------------------ */
/* ResFormer: v' = λ1·V1 + λ2·v                                             */

static void rf_forward(gl_model *m, int n, int N) {
    gl_block_acts *a = &m->A[n];
    const float l1 = m->vr_lambda[2 * n], l2 = m->vr_lambda[2 * n + 1];
    const float *V1 = m->A[0].v;
    const size_t total = (size_t)N * m->cfg.n_kv_head * m->hd;
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < total; i++) a->vmix[i] = l1 * V1[i] + l2 * a->v[i];
}

/* s1 = Σ d·x, s2 = Σ d·y in double, in parallel but deterministic: fixed
 * chunks (set by n alone) summed each in index order, then the chunk sums in
 * chunk order, so the result does not depend on the thread count. */
#define VR_MAX_CHUNKS 256
static void chunked_dots(const float *d, const float *x, const float *y, size_t n, double *s1, double *s2) {
    size_t chunk = (n + VR_MAX_CHUNKS - 1) / VR_MAX_CHUNKS;
    if (chunk < 4096) chunk = 4096;
    const long nc = (long)((n + chunk - 1) / chunk);
    double p1[VR_MAX_CHUNKS], p2[VR_MAX_CHUNKS];
#pragma omp parallel for schedule(static)
    for (long c = 0; c < nc; c++) {
        size_t lo = (size_t)c * chunk, hi = lo + chunk < n ? lo + chunk : n;
        double a1 = 0.0, a2 = 0.0;
        for (size_t i = lo; i < hi; i++) {
            a1 += (double)d[i] * x[i];
            a2 += (double)d[i] * y[i];
        }
        p1[c] = a1;
        p2[c] = a2;
    }
    *s1 = *s2 = 0.0;
    for (long c = 0; c < nc; c++) {
        *s1 += p1[c];
        *s2 += p2[c];
    }
}

static const float *rf_backward(gl_model *m, int n, int N, const float *dvmix, float *dV1, float *dv) {
    const gl_model_config *c = &m->cfg;
    const gl_block_acts *a = &m->A[n];
    const size_t total = (size_t)N * c->n_kv_head * m->hd;
    const float *V1 = m->A[0].v;
    float l1, l2;
    model_resformer_lambda(m, n, &l1, &l2);
    double s1, s2;
    chunked_dots(dvmix, V1, a->v, total, &s1, &s2);
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < total; i++) {
        dV1[i] += l1 * dvmix[i];
        dv[i] = l2 * dvmix[i];
    }
    int l1_free = !(m->have_overrides && m->ov.lambda1_mode[n] == GATE_CONST);
    gl_block_params *gb = &m->G.layer[n];
    switch (c->resformer_variant) {
    case RF_PLUS: {
        gb->lambda2[0] += (float)s2;
        if (!l1_free) break;
        /* λ1 = s·softmax(ℓ)_i:  ds += dλ1·softmax_i;  dℓ_k += dλ1·s·sm_i·(δ_ik − sm_k) */
        int M = n_mixing(c), i = mixing_index(c, n);
        const float *l = m->P.rf_logits;
        double mx = l[0], z = 0.0, sm[GL_MAX_LAYERS] = {0};
        for (int k = 1; k < M; k++) mx = l[k] > mx ? l[k] : mx;
        for (int k = 0; k < M; k++) z += (sm[k] = exp((double)l[k] - mx));
        for (int k = 0; k < M; k++) sm[k] /= z;
        double sc = m->P.rf_scale[0];
        m->G.rf_scale[0] += (float)(s1 * sm[i]);
        for (int k = 0; k < M; k++) m->G.rf_logits[k] += (float)(s1 * sc * sm[i] * ((k == i) - sm[k]));
        break;
    }
    case RF_LEARNABLE:
        if (l1_free) gb->lambda1[0] += (float)s1;
        gb->lambda2[0] += (float)s2;
        break;
    case RF_IDENTITY:
        break;
    }
    return dv;
}

/* ------------------------------------------------------------------------ */
/* dispatch                                                                 */

void vr_forward(gl_model *m, int n, int N) {
    const gl_model_config *c = &m->cfg;
    model_resformer_lambda(m, n, &m->vr_lambda[2 * n], &m->vr_lambda[2 * n + 1]);
    if (!config_layer_mixes_v1(c, n)) {
        memcpy(m->A[n].vmix, m->A[n].v, (size_t)N * c->n_kv_head * m->hd * sizeof(float));
        return;
    }
    switch (c->value_residual) {
    case VR_SATFORMER: sat_forward(m, n, N); break;
    case VR_RESFORMER: rf_forward(m, n, N); break;
    case VR_HEADGATE: hg_forward(m, n, N); break;
    case VR_NONE: assert(0); break;
    }
}

const float *vr_backward(gl_model *m, int n, int N, const float *dvmix, float *dV1, float *dv, float *dgate) {
    const gl_model_config *c = &m->cfg;
    if (!config_layer_mixes_v1(c, n)) return dvmix;
    switch (c->value_residual) {
    case VR_SATFORMER: sat_backward(m, n, N, dvmix, dV1, dgate); return dvmix;
    case VR_RESFORMER: return rf_backward(m, n, N, dvmix, dV1, dv);
    case VR_HEADGATE: hg_backward(m, n, N, dvmix, dV1, dgate); return dvmix;
    case VR_NONE: break;
    }
    assert(0);
    return dvmix;
}

void vr_input_backward(gl_model *m, int n, int N, const float *dgate, float *dx) {
    const gl_model_config *c = &m->cfg;
    if (!vr_mixes(c, n, VR_SATFORMER)) return;
    mm_backward(dx, m->G.layer[n].alpha, dgate, xl_attn_input(m, n, 2), m->P.layer[n].alpha, N, c->d_model,
                c->n_kv_head);
}
