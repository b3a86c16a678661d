/*
 * routing.c — hard depth routing: Mixture-of-Depths (Raposo et al. 2024,
 * "Mixture-of-Depths: Dynamically allocating compute in transformer-based
 * language models") and the random-routing control.
 *
 * MoD, routed block n (config_block_routed): a linear router reads the
 * block's input, r_t = h_t·w (one scalar per token, no bias); per window of T
 * tokens the k = round(mod_capacity·T) tokens with the largest r (expert
 * choice, ties to the earlier position) run the block, the others keep their
 * state.  A selected token's update is scaled by σ(r_t), so the router gets
 * a gradient: h ← h + keep_t·σ(r_t)·(a + f).  Inside the block the attention
 * runs among the selected tokens only (an unselected token does not enter
 * the block, not even as a key): routing_attn_forward.
 *
 * Random: each (token, block ≥ 1) pair is computed with probability
 * random_alpha, else skipped (h unchanged); no parameters.  Like TSA, a
 * skipped token's keys and values are still there for the others (it is the
 * control of TSA's learned routing).  The draw is a counter hash: in training
 * of (train.seed, step, global row, block), so a resumed run draws what the
 * uninterrupted one drew; in evaluation of (the window's tokens, position,
 * block), so the same tokens get the same routing in every evaluation.
 *
 * routing_attn_forward calls sgemm itself (the scores of a row block, then
 * P·v); its plain-loop reference is attn_forward_ref with the keep mask
 * (attn.c; tests/test_grad.c "masked attention").
 *
 * Deliberately not here: the block maths (model.c), the packed inference
 * kernels (infer.c), TSA's router (router.c).
 */
#include <assert.h>
#include <math.h>
#include <omp.h>
#include <stddef.h>
#include <string.h>

#include <cblas.h>

#include "model.h"
#include "ops.h"
#include "routing.h"
#include "rng.h"
#include "vexp.h"
#include "vred.h"

/* a uniform in [0, 1) with 24 bits from key and (block n, row) */
static float rt_uniform(uint64_t key, int n, uint64_t row) {
    uint64_t h = rng_mix64(key ^ rng_mix64(((uint64_t)n << 40) + row + 1));
    return (float)(h >> 40) * (1.0f / 16777216.0f);
}

uint64_t routing_train_key(uint64_t seed, long step) {
    uint64_t k = rng_mix64(rng_mix64(seed ^ 0x52414e44524f5554ULL) + (uint64_t)step + 1);
    return k ? k : 1;
}

/* FNV-1a 64 of a window's token ids: the evaluation draw's key */
static uint64_t rt_window_key(const int *tok, int T) {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (int i = 0; i < T; i++) {
        h ^= (uint64_t)(uint32_t)tok[i];
        h *= 0x100000001b3ULL;
    }
    return h ^ (uint64_t)T;
}

/* The routing override of an ablation (model.h gl_overrides) on block n's
 * selection: ROUTE_CONST v runs every token when v <= 0.5 (full depth) and
 * none otherwise; ROUTE_RANDOM q skips each token with probability q. */
static void rt_override(gl_model *m, int n, int N) {
    float *keep = m->A[n].keep;
    for (int t = 0; t < N; t++) {
        if (m->ov.route_mode == ROUTE_CONST) keep[t] = m->ov.route_value <= 0.5f ? 1.0f : 0.0f;
        else keep[t] = rt_uniform(m->ov.route_seed, n, (uint64_t)t) < m->ov.route_skip_prob ? 0.0f : 1.0f;
    }
}

void routing_forward(gl_model *m, int n, int B, int T) {
    const gl_model_config *c = &m->cfg;
    assert(n >= 0 && n < c->n_layer && B > 0 && B <= m->max_B && T > 0 && T <= m->T);
    const int N = B * T, d = c->d_model;
    gl_block_acts *a = &m->A[n];
    assert(config_routing_hard(c) && a->keep && a->rs);
    if (!config_block_routed(c, n)) {
        for (int t = 0; t < N; t++) a->keep[t] = a->rs[t] = 1.0f;
        return;
    }
    if (c->depth_routing == DR_MOD) {
        const float *w = m->P.router[n - 1].mod_w;
        const int k = config_mod_k(c, T);
#pragma omp parallel for schedule(static)
        for (int t = 0; t < N; t++) {
            const float r = gl_dot(a->h_in + (size_t)t * d, w, d); /* vectorised (vred.h) */
            a->mod_r[t] = r;
            a->mod_g[t] = 1.0f / (1.0f + expf(-r));
        }
        /* expert choice: token t of window b is selected when fewer than k tokens of
         * its window rank above it (larger r, or equal r at an earlier position);
         * at most T comparisons per token (T² per window), no sort buffer, the same in any thread order */
#pragma omp parallel for schedule(static)
        for (int t = 0; t < N; t++) {
            const int b0 = t / T * T;
            const float rt = a->mod_r[t];
            int above = 0;
            for (int j = b0; j < b0 + T && above < k; j++)
                above += a->mod_r[j] > rt || (a->mod_r[j] == rt && j < t);
            a->keep[t] = above < k ? 1.0f : 0.0f;
        }
    } else {
        const float alpha = c->random_alpha;
        if (m->route_draw) {
            for (int t = 0; t < N; t++)
                a->keep[t] = rt_uniform(m->route_draw, n, (uint64_t)(m->route_row0 + t)) < alpha ? 1.0f : 0.0f;
        } else {
            for (int b = 0; b < B; b++) {
                const uint64_t key = rt_window_key(m->tokens + (size_t)b * T, T);
                for (int i = 0; i < T; i++)
                    a->keep[(size_t)b * T + i] = rt_uniform(key, n, (uint64_t)i) < alpha ? 1.0f : 0.0f;
            }
        }
    }
    if (m->have_overrides && m->ov.route_mode != ROUTE_FREE) rt_override(m, n, N);
    for (int t = 0; t < N; t++) a->rs[t] = c->depth_routing == DR_MOD ? a->keep[t] * a->mod_g[t] : a->keep[t];
}

void routing_backward(gl_model *m, int n, const float *drs, float *dh, int N) {
    const gl_model_config *c = &m->cfg;
    assert(n >= 0 && n < c->n_layer && N > 0 && N <= m->max_B * m->T && drs && dh);
    assert(ops_disjoint(dh, (size_t)N * c->d_model, drs, (size_t)N));
    if (c->depth_routing != DR_MOD || !config_block_routed(c, n)) return; /* random: nothing learns the draw */
    const int d = c->d_model;
    const gl_block_acts *a = &m->A[n];
    const float *w = m->P.router[n - 1].mod_w;
    float *dw = m->G.router[n - 1].mod_w;
    /* rs = keep·σ(r): dr = keep·σ(1 − σ)·drs; r = h·w: dh += dr·w, dw += Σ_t dr_t·h_t */
#pragma omp parallel for schedule(static)
    for (int t = 0; t < N; t++) {
        const float g = a->mod_g[t], dr = a->keep[t] * g * (1.0f - g) * drs[t];
        float *dht = dh + (size_t)t * d;
        for (int i = 0; i < d; i++) dht[i] += dr * w[i];
    }
    /* the reduction over tokens in token order, each column owned by one thread */
#pragma omp parallel
    {
        const int nt = omp_get_num_threads(), th = omp_get_thread_num();
        const int i0 = (int)((long)d * th / nt), i1 = (int)((long)d * (th + 1) / nt);
        for (int t = 0; t < N; t++) {
            const float g = a->mod_g[t], dr = a->keep[t] * g * (1.0f - g) * drs[t];
            if (dr == 0.0f) continue;
            const float *h = a->h_in + (size_t)t * d;
            for (int i = i0; i < i1; i++) dw[i] += dr * h[i];
        }
    }
}

#define RT_ATT_BLOCK 64

void routing_attn_forward(float *y, float *att, const float *q, const float *k, const float *v, const float *keep,
                          int B, int T, int H, int Hkv, int hd) {
    assert(B > 0 && T > 0 && H > 0 && Hkv > 0 && hd > 0 && H % Hkv == 0);
    assert(y && att && q && k && v && keep);
    {   /* y and att are written while q, k, v and keep are read */
        const size_t nq = (size_t)B * T * H * hd, nk = (size_t)B * T * Hkv * hd, na = (size_t)B * H * T * T;
        const float *in[] = {q, k, v, keep};
        const size_t nin[] = {nq, nk, nk, (size_t)B * T};
        for (int i = 0; i < 4; i++) assert(ops_disjoint(y, nq, in[i], nin[i]) && ops_disjoint(att, na, in[i], nin[i]));
        assert(ops_disjoint(y, nq, att, na));
        (void)in, (void)nin, (void)na;
    }
    const int qs = H * hd, ks = Hkv * hd, rep = H / Hkv;
    const float scale = 1.0f / sqrtf((float)hd);
#pragma omp parallel for schedule(static)
    for (int bh = 0; bh < B * H; bh++) {
        const int b = bh / H, h = bh % H, g = h / rep;
        const float *qb = q + (size_t)b * T * qs + (size_t)h * hd;
        const float *kb = k + (size_t)b * T * ks + (size_t)g * hd;
        const float *vb = v + (size_t)b * T * ks + (size_t)g * hd;
        const float *kp = keep + (size_t)b * T;
        float *yb = y + (size_t)b * T * qs + (size_t)h * hd;
        float *P = att + (size_t)bh * T * T;
        for (int i0 = 0; i0 < T; i0 += RT_ATT_BLOCK) {
            const int i1 = i0 + RT_ATT_BLOCK < T ? i0 + RT_ATT_BLOCK : T, mrows = i1 - i0;
            float *Pb = P + (size_t)i0 * T;
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, mrows, i1, hd, scale, qb + (size_t)i0 * qs, qs, kb,
                        ks, 0.0f, Pb, T);
            for (int i = i0; i < i1; i++) {
                float *row = P + (size_t)i * T;
                if (kp[i] == 0.0f) { /* not in the block: its row is never used (its update is dropped) */
                    for (int j = 0; j < i1; j++) row[j] = j == i ? 1.0f : 0.0f;
                    continue;
                }
                float mx = -INFINITY, sum = 0.0f;
                for (int j = 0; j <= i; j++)
                    if (kp[j] != 0.0f && row[j] > mx) mx = row[j];
                for (int j = 0; j <= i; j++) {
                    row[j] = kp[j] != 0.0f ? gl_expf(row[j] - mx) : 0.0f;
                    sum += row[j];
                }
                const float inv = 1.0f / sum;
                for (int j = 0; j <= i; j++) row[j] *= inv;
                for (int j = i + 1; j < i1; j++) row[j] = 0.0f;
            }
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, mrows, hd, i1, 1.0f, Pb, T, vb, ks, 0.0f,
                        yb + (size_t)i0 * qs, qs);
        }
    }
}
