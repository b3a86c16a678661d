/*
 * decode.c — KV-cache decoding: the model's forward pass for one new token
 * per sequence, reading the keys and values of earlier positions from a
 * cache (decode.h; docs/model.md "Decoding with a KV cache").
 *
 * A step is model.c's block_forward restricted to the new rows, with two
 * changes that do not change the maths:
 *   - rotary embedding at the step's position, and attention of the new query
 *     over the cached keys 0..pos (the new key included), through two sgemv
 *     per (row, head) (step_attention);
 *   - rows whose block output is discarded are not computed: a TSA token
 *     halted in sparse inference (p > 0.5) and an early-exited token keep
 *     their state, so only their keys and values (which later tokens read)
 *     are made; their query, attention output, Wo and FFN are skipped.
 * Everything else — RMSNorm, projections, the value residual (vr_forward),
 * the TSA router, the cross-layer hooks (crosslayer.h) — runs the same
 * functions on B rows as model_forward runs on B·T rows.  The value residual
 * needs no cache of its own: v' = f(v, V1) mixes a token's own V1, so the
 * cached v' already holds it, and the new token's V1 is block 0's v of the
 * step.  SATFormer's α, ResFormer's λ and TSA's p are per token, computed for
 * the new token only.
 *
 * A one-row projection goes through sgemv (dec_linear): OpenBLAS's sgemm
 * takes a slow small-matrix kernel for one row.
 *
 * No plain-loop version: a step is the whole model for one row, so its
 * reference is model_forward at the window's last position
 * (tests/test_decode.c: logits to rounding, tokens at temperature 0
 * exactly), whose ops test_grad.c checks against their plain loops
 * (mm_forward_ref, attn_forward_ref).  A loop copy of the step would be a
 * second model to keep in step with the first.
 *
 * The step works in the model's activation buffers (rows 0..B-1), so it
 * overwrites what the last model_forward left there; the cache owns only the
 * keys, values and a few scratch rows.
 *
 * Deliberately not here: choosing tokens and the sliding window
 * (harness/run/sample.c), I/O.
 */
#include "decode.h"

#include <assert.h>
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crosslayer.h"
#include "ops.h"
#include "valueres.h"
#include "vexp.h"

/* Floats of one (block, sequence) slice of the cache start at this offset. */
static size_t cache_at(const gl_decode *dc, int n, int b, int t) {
    const size_t kd = (size_t)dc->m->cfg.n_kv_head * dc->m->hd;
    return (((size_t)n * dc->B + b) * dc->T + t) * kd;
}

/* out (K, Dout) = inp (K, Din) · wᵀ: mm_forward, except for one row, where
 * sgemv reads each weight row once as a dot product (OpenBLAS's sgemm takes
 * its small-matrix kernel for one row, about 3x slower at d 256). */
static void dec_linear(float *out, const float *inp, const float *w, int K, int Din, int Dout) {
    assert(K > 0 && Din > 0 && Dout > 0 && out && inp && w);
    assert(ops_disjoint(out, (size_t)K * Dout, inp, (size_t)K * Din)); /* mm_forward checks the rest */
    if (K == 1)
        cblas_sgemv(CblasRowMajor, CblasNoTrans, Dout, Din, 1.0f, w, Din, inp, 1, 0.0f, out, 1);
    else
        mm_forward(out, inp, w, K, Din, Dout);
}

/* The backbone's norm over B rows of d (RMSNorm, or gpt2's LayerNorm with bias b), as model.c's. */
static void dec_norm(const gl_model *m, float *out, float *rstd, const float *inp, const float *g, const float *b,
                     int rows) {
    const gl_model_config *c = &m->cfg;
    if (bb_gpt2(c)) layernorm_forward(out, rstd, inp, g, b, rows, c->d_model, c->norm_eps);
    else rmsnorm_forward(out, rstd, inp, g, rows, c->d_model, c->norm_eps);
}

int decode_check(const gl_model *m, char *why, size_t whylen) {
    if (m->sparse && m->sparse_form == SPARSE_PAPER && m->cfg.depth_routing == DR_TSA) {
        snprintf(why, whylen, "the KV-cache path runs gatelab's sparse form, not the paper's (m->sparse_form); use "
                              "the uncached path (gatelab sample --no-cache)");
        return -1;
    }
    if (config_routing_hard(&m->cfg)) {
        snprintf(why, whylen,
                 "the KV-cache path does not support depth_routing = %s (its selection is made over a whole "
                 "window in a full forward pass); use the uncached path (gatelab sample --no-cache)",
                 config_depth_routing_name(m->cfg.depth_routing));
        return -1;
    }
    if (m->have_overrides && m->ov.route_mode == ROUTE_RANDOM) {
        snprintf(why, whylen,
                 "the KV-cache path does not support the random routing override (its draw depends on a "
                 "token's row in a full forward pass); use the uncached path (gatelab sample --no-cache)");
        return -1;
    }
    if (ee_paper(&m->cfg) && m->exit_tau > 0.0f) {
        snprintf(why, whylen,
                 "the KV-cache path freezes an exited token's state (exit_form gatelab); model.exit_form = paper "
                 "keeps updating it, so it runs on the uncached path (gatelab sample --no-cache)");
        return -1;
    }
    return 0;
}

int decode_init(gl_decode *dc, gl_model *m, int B, char *err, size_t errlen) {
    memset(dc, 0, sizeof *dc);
    if (decode_check(m, err, errlen)) return -1;
    if (B < 1 || B > m->max_B) {
        snprintf(err, errlen, "decode: batch %d is outside 1..%d (the model was built for batches of up to %d)", B,
                 m->max_B, m->max_B);
        return -1;
    }
    const gl_model_config *c = &m->cfg;
    const size_t kv = (size_t)c->n_layer * B * m->T * c->n_kv_head * m->hd;
    dc->m = m;
    dc->B = B;
    dc->T = m->T;
    dc->kc = malloc(kv * sizeof(float));
    dc->vc = malloc(kv * sizeof(float));
    dc->logits = malloc((size_t)B * c->vocab_size * sizeof(float));
    dc->xq = malloc((size_t)B * c->d_model * sizeof(float));
    dc->probs = malloc((size_t)B * c->vocab_size * sizeof(float));
    dc->conf = malloc((size_t)B * sizeof(float));
    dc->att = malloc((size_t)B * c->n_head * m->T * sizeof(float));
    dc->idx = malloc((size_t)B * sizeof(int));
    dc->frozen = calloc((size_t)B, 1);
    if (!dc->kc || !dc->vc || !dc->logits || !dc->xq || !dc->probs || !dc->conf || !dc->att || !dc->idx ||
        !dc->frozen) {
        snprintf(err, errlen,
                 "decode: out of memory for a KV cache of %d sequences x %d positions x %d layers "
                 "(%.1f MiB)",
                 B, m->T, c->n_layer, 2.0 * kv * sizeof(float) / 1048576.0);
        decode_free(dc);
        return -1;
    }
    return 0;
}

void decode_free(gl_decode *dc) {
    if (!dc) return;
    free(dc->kc);
    free(dc->vc);
    free(dc->logits);
    free(dc->xq);
    free(dc->probs);
    free(dc->conf);
    free(dc->att);
    free(dc->idx);
    free(dc->frozen);
    memset(dc, 0, sizeof *dc);
}

void decode_prefill(gl_decode *dc, const int *tokens, int T0) {
    assert(dc && dc->m && dc->kc && dc->vc && tokens); /* decode_init succeeded */
    gl_model *m = dc->m;
    const int B = dc->B, V = m->cfg.vocab_size;
    const size_t kd = (size_t)m->cfg.n_kv_head * m->hd;
    assert(T0 >= 1 && T0 <= dc->T);
    model_forward(m, tokens, NULL, NULL, B, T0);
    for (int n = 0; n < m->cfg.n_layer; n++)
        for (int b = 0; b < B; b++) {
            memcpy(dc->kc + cache_at(dc, n, b, 0), m->A[n].kr + (size_t)b * T0 * kd, (size_t)T0 * kd * sizeof(float));
            memcpy(dc->vc + cache_at(dc, n, b, 0), m->A[n].vmix + (size_t)b * T0 * kd, (size_t)T0 * kd * sizeof(float));
        }
    for (int b = 0; b < B; b++)
        memcpy(dc->logits + (size_t)b * V, m->logits + ((size_t)b * T0 + T0 - 1) * V, (size_t)V * sizeof(float));
    dc->len = T0;
}

/* ------------------------------------------------------------------------ */
/* one block of a step                                                      */

/* TSA: halting probability of the router feeding block n, for the new rows
 * (model.c route_forward; the constant override applies, random is refused). */
static void step_route(gl_model *m, int n, int B) {
    gl_block_acts *a = &m->A[n];
    const gl_router_params *r = &m->P.router[n - 1];
    /* tsa_form paper: the raw stream entering the block, ReLU */
    router_forward(a->p, a->r_pre, a->r_hid, tsa_paper(&m->cfg) ? a->h_in : a->xn1, r->fc1_w, r->fc1_b, r->fc2_w,
                   r->fc2_b, B, m->cfg.d_model, m->R, tsa_paper(&m->cfg));
    if (m->have_overrides && m->ov.route_mode == ROUTE_CONST)
        for (int t = 0; t < B; t++) a->p[t] = m->ov.route_value;
}

/* Keys of the new rows through qk-norm and rotary at position pos, and their
 * values v', into the cache. */
static void cache_kv(gl_decode *dc, int n, int pos) {
    gl_model *m = dc->m;
    const gl_model_config *c = &m->cfg;
    const int B = dc->B, hd = m->hd, Hkv = c->n_kv_head, kd = Hkv * hd, h2 = hd / 2;
    gl_block_acts *a = &m->A[n];
    if (c->qk_norm)
        rmsnorm_forward(a->kr, a->krstd, a->k, m->P.layer[n].k_norm, B * Hkv, hd, c->norm_eps);
    else
        memcpy(a->kr, a->k, (size_t)B * kd * sizeof(float));
    /* one row per "window" of length 1 whose tables start at row pos (gpt2: no rotary) */
    if (!bb_gpt2(c)) rope_forward(a->kr, m->rope_cos + (size_t)pos * h2, m->rope_sin + (size_t)pos * h2, B, 1, Hkv, hd);
    for (int b = 0; b < B; b++) {
        memcpy(dc->kc + cache_at(dc, n, b, pos), a->kr + (size_t)b * kd, (size_t)kd * sizeof(float));
        memcpy(dc->vc + cache_at(dc, n, b, pos), a->vmix + (size_t)b * kd, (size_t)kd * sizeof(float));
    }
}

/* Rows that run the rest of block n into dc->idx; returns their count.  A
 * row is skipped when its output would be replaced by its input anyway. */
static int active_rows(gl_decode *dc, int n, const unsigned char *frozen, int tsa) {
    const gl_model *m = dc->m;
    const float *p = m->A[n].p;
    int K = 0;
    for (int t = 0; t < dc->B; t++) {
        int skip = (frozen && frozen[t]) || (tsa && m->sparse && p[t] > 0.5f);
        if (!skip) dc->idx[K++] = t;
    }
    return K;
}

/* Attention of the K packed query rows (A[n].qr) over positions 0..pos of
 * their sequences (row k is sequence idx[k]) → A[n].atty rows 0..K-1.
 * The same maths as attn_forward (s = q·k/√hd, softmax over j ≤ pos, y = P v)
 * but not the same float sums: the scores come from sgemv, not sgemm; Σ exp is
 * a serial float sum, not vred.h's lane-wise gl_sum; and y = Vᵀ·exp(s) is scaled
 * by 1/Σ inside the sgemv (alpha) instead of normalising P first.  So a cached
 * step matches the dense pass to rounding, not bit for bit (tests/test_decode.c
 * states the tolerance). */
static void step_attention(gl_decode *dc, int n, int K, int pos) {
    gl_model *m = dc->m;
    const int H = m->cfg.n_head, Hkv = m->cfg.n_kv_head, hd = m->hd, qd = H * hd, kd = Hkv * hd;
    const int rep = H / Hkv, P = pos + 1;
    const float scale = 1.0f / sqrtf((float)hd);
    gl_block_acts *a = &m->A[n];
    /* the cache rows are strided views: stride kd covers the hd floats read per row */
    assert(K > 0 && K <= dc->B && pos >= 0 && pos < dc->T && kd >= hd && H % Hkv == 0);
#pragma omp parallel for schedule(static)
    for (int kh = 0; kh < K * H; kh++) {
        const int k = kh / H, h = kh % H, g = h / rep;
        const float *q = a->qr + (size_t)k * qd + (size_t)h * hd;
        const float *kb = dc->kc + cache_at(dc, n, dc->idx[k], 0) + (size_t)g * hd;
        const float *vb = dc->vc + cache_at(dc, n, dc->idx[k], 0) + (size_t)g * hd;
        float *s = dc->att + (size_t)kh * dc->T, *y = a->atty + (size_t)k * qd + (size_t)h * hd;
        /* s = K q · scale (P rows of the cache, stride kd); sgemv runs serially inside the region */
        cblas_sgemv(CblasRowMajor, CblasNoTrans, P, hd, scale, kb, kd, q, 1, 0.0f, s, 1);
        float mx = -INFINITY;
        for (int j = 0; j < P; j++) mx = s[j] > mx ? s[j] : mx;
        float sum = 0.0f;
        for (int j = 0; j < P; j++) {
            s[j] = gl_expf(s[j] - mx);
            sum += s[j];
        }
        /* y = Vᵀ s / Σ */
        cblas_sgemv(CblasRowMajor, CblasTrans, P, hd, 1.0f / sum, vb, kd, s, 1, 0.0f, y, 1);
    }
}

/* FFN of block n on K packed rows hm (K, d) → A[n].fo rows 0..K-1: SwiGLU, or gpt2's GELU MLP with biases. */
static void step_ffn(gl_model *m, int n, const float *hm, int K) {
    const gl_model_config *c = &m->cfg;
    gl_block_acts *a = &m->A[n];
    const gl_block_params *b = &m->P.layer[n];
    dec_norm(m, a->xn2, a->rstd2, hm, b->ffn_norm, b->ffn_norm_bias, K);
    dec_linear(a->f1, a->xn2, b->w1, K, c->d_model, c->d_ff);
    if (bb_gpt2(c)) {
        bias_gelu_forward(a->fg, a->f1, b->b1, K, c->d_ff);
    } else {
        dec_linear(a->f3, a->xn2, b->w3, K, c->d_model, c->d_ff);
        swiglu_forward(a->fg, a->f1, a->f3, (long)K * c->d_ff);
    }
    dec_linear(a->fo, a->fg, b->w2, K, c->d_ff, c->d_model);
    if (bb_gpt2(c)) bias_forward(a->fo, b->b2, K, c->d_model);
}

/* Query, attention, Wo and FFN of the K active rows, and block n's output
 * h_next (B, d): h + (1 − p)(a + f) for TSA, h + a + f otherwise, h for a
 * skipped row; hyper-connections update their streams instead. */
static void step_update(gl_decode *dc, int n, int K, int pos, float *h_next) {
    gl_model *m = dc->m;
    const gl_model_config *c = &m->cfg;
    const int B = dc->B, d = c->d_model, hd = m->hd, H = c->n_head, qd = H * hd, h2 = hd / 2;
    const int tsa = c->depth_routing == DR_TSA && n >= 1, hyper = c->cross_layer == CL_HYPER;
    gl_block_acts *a = &m->A[n];
    const gl_block_params *b = &m->P.layer[n];
    const int *idx = dc->idx;
    const float *xq = a->xn1;
    if (K < B) { /* pack the query inputs of the active rows */
        for (int k = 0; k < K; k++)
            memcpy(dc->xq + (size_t)k * d, a->xn1 + (size_t)idx[k] * d, (size_t)d * sizeof(float));
        xq = dc->xq;
    }
    dec_linear(a->q, xq, b->wq, K, d, qd);
    if (c->qk_norm)
        rmsnorm_forward(a->qr, a->qrstd, a->q, b->q_norm, K * H, hd, c->norm_eps);
    else
        memcpy(a->qr, a->q, (size_t)K * qd * sizeof(float));
    if (!bb_gpt2(c)) rope_forward(a->qr, m->rope_cos + (size_t)pos * h2, m->rope_sin + (size_t)pos * h2, K, 1, H, hd);
    step_attention(dc, n, K, pos);
    dec_linear(a->ao, a->atty, b->wo, K, qd, d);
    if (hyper) {
        assert(K == B); /* hyper combines with neither TSA nor early exit (config_validate) */
        xl_hc_mid_forward(m, n, B);
        step_ffn(m, n, a->h_mid, B);
        xl_hc_out_forward(m, n, B);
        return;
    }
    const int seq = tsa && tsa_paper(c); /* the paper's sequential gates: the FFN reads h + (1 − p)·a */
    for (int k = 0; k < K; k++) {
        const float sc = seq ? 1.0f - a->p[idx[k]] : 1.0f;
        for (int i = 0; i < d; i++)
            a->h_mid[(size_t)k * d + i] = a->h_in[(size_t)idx[k] * d + i] + sc * a->ao[(size_t)k * d + i];
    }
    step_ffn(m, n, a->h_mid, K);
    if (K < B) memcpy(h_next, a->h_in, (size_t)B * d * sizeof(float));
    for (int k = 0; k < K; k++) {
        const size_t t = (size_t)idx[k] * d, r = (size_t)k * d;
        if (seq) {
            const float s = 1.0f - a->p[idx[k]];
            for (int i = 0; i < d; i++) h_next[t + i] = a->h_mid[r + i] + s * a->fo[r + i];
        } else if (tsa) {
            const float s = 1.0f - a->p[idx[k]];
            for (int i = 0; i < d; i++) h_next[t + i] = a->h_in[t + i] + s * (a->ao[r + i] + a->fo[r + i]);
        } else {
            for (int i = 0; i < d; i++) h_next[t + i] = a->h_mid[r + i] + a->fo[r + i];
        }
    }
}

/* Block n for the new rows at position pos, output into h_next (B, d). */
static void step_block(gl_decode *dc, int n, int pos, float *h_next, const unsigned char *frozen) {
    gl_model *m = dc->m;
    const gl_model_config *c = &m->cfg;
    const int B = dc->B, d = c->d_model, kd = c->n_kv_head * m->hd;
    const int tsa = c->depth_routing == DR_TSA && n >= 1;
    gl_block_acts *a = &m->A[n];
    const gl_block_params *b = &m->P.layer[n];
    /* MUDD: q, k, v read separate streams; otherwise all read xn1 = RMSNorm(h_in) */
    dec_norm(m, a->xn1, a->rstd1, xl_query_input(m, n), b->attn_norm, b->attn_norm_bias, B);
    xl_kv_norm_forward(m, n, B);
    dec_linear(a->k, xl_attn_input(m, n, 1), b->wk, B, d, kd);
    dec_linear(a->v, xl_attn_input(m, n, 2), b->wv, B, d, kd);
    if (tsa) step_route(m, n, B);
    vr_forward(m, n, B); /* V1 = A[0].v: block 0's values of this step's rows */
    cache_kv(dc, n, pos);
    const int K = active_rows(dc, n, frozen, tsa);
    if (n >= 1) {
        dc->pairs_total += B;
        dc->pairs_run += K;
    }
    if (K == 0) {
        memcpy(h_next, a->h_in, (size_t)B * d * sizeof(float));
        return;
    }
    step_update(dc, n, K, pos, h_next);
}

/* Early exit after block n (< L-1): the exit head of the rows still running,
 * and freeze those whose maximum softmax probability is >= tau. */
static void step_exit(gl_decode *dc, int n, const float *h) {
    gl_model *m = dc->m;
    const gl_model_config *c = &m->cfg;
    const int d = c->d_model, V = c->vocab_size;
    gl_block_acts *a = &m->A[n];
    int K = 0;
    for (int t = 0; t < dc->B; t++)
        if (!dc->frozen[t]) {
            memcpy(dc->xq + (size_t)K * d, h + (size_t)t * d, (size_t)d * sizeof(float));
            dc->idx[K++] = t;
        }
    if (!K) return;
    dec_norm(m, a->xnf, a->rstdf, dc->xq, m->P.final_norm, m->P.final_norm_bias, K);
    dec_linear(a->logits, a->xnf, m->P.head, K, d, V);
    xent_forward(dc->probs, NULL, a->logits, NULL, NULL, K, V);
    xent_confidence(dc->conf, dc->probs, K, V);
    for (int k = 0; k < K; k++)
        if (dc->conf[k] >= m->exit_tau) dc->frozen[dc->idx[k]] = 1;
}

void decode_step(gl_decode *dc, const int *tokens) {
    assert(dc && dc->m && dc->kc && dc->vc && tokens && dc->len >= 1); /* after decode_prefill */
    gl_model *m = dc->m;
    const gl_model_config *c = &m->cfg;
    const int B = dc->B, d = c->d_model, V = c->vocab_size, L = c->n_layer, pos = dc->len;
    assert(pos < dc->T);
    float *h0 = m->A[0].h_in;
    for (int b = 0; b < B; b++) {
        assert(tokens[b] >= 0 && tokens[b] < V);
        memcpy(h0 + (size_t)b * d, m->P.embed + (size_t)tokens[b] * d, (size_t)d * sizeof(float));
        if (bb_gpt2(c)) /* the learned position of this step */
            for (int i = 0; i < d; i++) h0[(size_t)b * d + i] += m->P.pos_embed[(size_t)pos * d + i];
    }
    xl_forward_begin(m, B);
    const int ee_infer = c->depth_routing == DR_EARLY_EXIT && m->exit_tau > 0.0f;
    memset(dc->frozen, 0, (size_t)B);
    for (int n = 0; n < L; n++) {
        float *h_next = xl_block_output(m, n, n + 1 < L ? m->A[n + 1].h_in : m->h_out);
        step_block(dc, n, pos, h_next, ee_infer ? dc->frozen : NULL);
        xl_forward_after_block(m, n, B);
        if (ee_infer && n + 1 < L) step_exit(dc, n, h_next);
    }
    dec_norm(m, m->xnf, m->rstdf, m->h_out, m->P.final_norm, m->P.final_norm_bias, B);
    dec_linear(dc->logits, m->xnf, m->P.head, B, d, V);
    dc->len = pos + 1;
}
