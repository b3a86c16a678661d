/*
 * model.c — one gatelab model: the tensor table, the allocation of every
 * family, forward, backward, gate overrides.  The maths follows docs/model.md
 * "Model"; each layer op lives in its own file (ops.h) and this file wires
 * them into blocks:
 *
 *   block n:  xn = RMSNorm(h);  q, k, v = xn Wq,k,vᵀ;  v' = value residual(v, V1)
 *             a = Attn(RoPE(qknorm(q)), RoPE(qknorm(k)), v') Woᵀ;  h_mid = h + a
 *             f = SwiGLU(RMSNorm(h_mid));  h_out = h + s·(a + f)
 *   with s = 1, or s = 1 − p (TSA, block n ≥ 1, p from router n−1 reading xn;
 *   tsa_form paper: the router reads h and the gates are sequential, h_mid = h + s·a,
 *   h_out = h_mid + s·f),
 *   or s = keep·σ(r) (Mixture-of-Depths, routed blocks; the skipped tokens are
 *   masked out of the block's attention) or keep (random routing): the
 *   selection is routing.c's.
 *   Backbone gpt2 (the TSA paper's): LayerNorm with bias for every norm, h0 = E[tok] + pos,
 *   no rotary, FFN = GELU(x W1ᵀ + b1) W2ᵀ + b2.  Dropout (training, m->drop_key): the
 *   embedding sum, attention probabilities, FFN hidden activation and FFN output (dropout.h).
 *   Cross-layer variants (DenseFormer, hyper-connections, MUDD) replace the
 *   block's inputs and residual sums through the xl_ hooks of crosslayer.h.
 *
 * Inference modes: sparse TSA (a token with p > 0.5 keeps its state through
 * the block) and early exit at confidence ≥ τ (the token's state is frozen
 * from then on, so the final head reproduces its exit-layer prediction).  In
 * both, a token that skips a block still gets its keys and values there
 * (others attend to it) but nothing else: the running tokens are packed and
 * only they get a query, an attention row, Wo and the FFN (gather → sgemm on
 * packed rows → scatter; infer.c).  m->exit_reference keeps the old
 * bookkeeping version of early exit (every block for every token, exited rows
 * restored) as the reference.  Early exit in the TSA paper's form
 * (model.exit_form = paper; an exit norm per block) skips nothing: every block
 * runs for every token, and a token exiting at confidence > τ after a block
 * n >= 1 only has its prediction frozen there (exit_paper_*).  Post-hoc early exit (m->posthoc_exit, a dense
 * model after model_posthoc_init) is the same exiting with the model's own
 * final norm and head as every block's exit head, at any τ >= 0.  Sparse MoD
 * packs the selected tokens of every window and runs the whole block,
 * attention included, on them alone (mod_block_forward_rows).  Backward
 * supports the training modes only.
 *
 * Deliberately not here: I/O, configs from files, the optimiser (adamw.c).
 */
#include "model.h"

#include <assert.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crosslayer.h"
#include "dropout.h"
#include "infer.h"
#include "ops.h"
#include "rng.h"
#include "routing.h"
#include "carve.h"
#include "tensors.h"
#include "valueres.h"
#include "vred.h"

/* ------------------------------------------------------------------------ */
/* allocation                                                               */

static void *alloc_floats(size_t n) {
    void *p = NULL;
    if (posix_memalign(&p, 64, (n ? n : 1) * sizeof(float))) return NULL;
    memset(p, 0, n * sizeof(float));
    return p;
}

/* Lay out the activations; with cv->base NULL this only counts. */
static void layout_acts(gl_model *m, gl_carver *cv) {
    const gl_model_config *c = &m->cfg;
    const size_t N = (size_t)m->max_B * m->T, d = c->d_model, hd = m->hd;
    const size_t qd = c->n_head * hd, kd = c->n_kv_head * hd, F = c->d_ff, V = c->vocab_size;
    const size_t R = m->R, H = c->n_head, Hkv = c->n_kv_head;
    const int tsa = c->depth_routing == DR_TSA, ee = c->depth_routing == DR_EARLY_EXIT;
    const int hard = config_routing_hard(c), mod = c->depth_routing == DR_MOD;
    for (int n = 0; n < c->n_layer; n++) {
        gl_block_acts *a = &m->A[n];
        a->h_in = carve_take(cv, N * d);
        a->xn1 = carve_take(cv, N * d);
        a->rstd1 = carve_take(cv, N);
        a->q = carve_take(cv, N * qd);
        a->k = carve_take(cv, N * kd);
        a->v = carve_take(cv, N * kd);
        a->qr = carve_take(cv, N * qd);
        a->kr = carve_take(cv, N * kd);
        a->qrstd = carve_take(cv, N * H);
        a->krstd = carve_take(cv, N * Hkv);
        a->vmix = carve_take(cv, N * kd);
        a->gate = carve_take(cv, N * Hkv);
        a->gate_pre = carve_take(cv, N * Hkv);
        a->att = carve_take(cv, (size_t)m->max_B * H * m->T * m->T);
        a->atty = carve_take(cv, N * qd);
        a->ao = carve_take(cv, N * d);
        a->h_mid = carve_take(cv, N * d);
        a->xn2 = carve_take(cv, N * d);
        a->rstd2 = carve_take(cv, N);
        a->f1 = carve_take(cv, N * F);
        a->f3 = carve_take(cv, N * F);
        a->fg = carve_take(cv, N * F);
        a->fo = carve_take(cv, N * d);
        a->r_pre = tsa ? carve_take(cv, N * R) : NULL;
        a->r_hid = tsa ? carve_take(cv, N * R) : NULL;
        a->p = tsa ? carve_take(cv, N) : NULL;
        a->keep = hard ? carve_take(cv, N) : NULL;
        a->rs = hard ? carve_take(cv, N) : NULL;
        a->mod_r = mod ? carve_take(cv, N) : NULL;
        a->mod_g = mod ? carve_take(cv, N) : NULL;
        a->xnf = ee ? carve_take(cv, N * d) : NULL;
        a->rstdf = ee ? carve_take(cv, N) : NULL;
        a->logits = ee ? carve_take(cv, N * V) : NULL;
    }
    m->h_out = carve_take(cv, N * d);
    m->xnf = carve_take(cv, N * d);
    m->rstdf = carve_take(cv, N);
    m->logits = carve_take(cv, N * V);
    m->probs = carve_take(cv, N * V);
    m->exit_probs = ee ? carve_take(cv, (size_t)(c->n_layer - 1) * N * V) : NULL;
    m->exit_conf = ee ? carve_take(cv, (size_t)c->n_layer * N) : NULL;
    m->vr_lambda = carve_take(cv, (size_t)c->n_layer * 2);
    m->tok_loss = carve_take(cv, N);
    m->rope_cos = carve_take(cv, (size_t)m->T * hd / 2);
    m->rope_sin = carve_take(cv, (size_t)m->T * hd / 2);
    m->mask = carve_take(cv, N);
    xl_layout_acts(m, carve_take(cv, xl_layout_acts(m, NULL)));
}

/* Gradient buffers for one block at a time (reused across blocks). */
typedef struct {
    float *dres, *dh, *dxn, *dq, *dk, *dv, *dvmix, *dqr, *dkr, *datty, *dao, *dhm, *dxn2;
    float *df1, *df3, *dfg, *dfo, *dgate, *dp, *dV1, *dlogits, *dxnf, *rscratch, *attscratch;
} grad_bufs;

static void layout_grads(gl_model *m, gl_carver *cv, grad_bufs *g) {
    const gl_model_config *c = &m->cfg;
    const size_t N = (size_t)m->max_B * m->T, d = c->d_model, hd = m->hd;
    const size_t qd = c->n_head * hd, kd = c->n_kv_head * hd, F = c->d_ff, V = c->vocab_size;
    g->dres = carve_take(cv, N * d);
    g->dh = carve_take(cv, N * d);
    g->dxn = carve_take(cv, N * d);
    g->dq = carve_take(cv, N * qd);
    g->dk = carve_take(cv, N * kd);
    g->dv = carve_take(cv, N * kd);
    g->dvmix = carve_take(cv, N * kd);
    g->dqr = carve_take(cv, N * qd);
    g->dkr = carve_take(cv, N * kd);
    g->datty = carve_take(cv, N * qd);
    g->dao = carve_take(cv, N * d);
    g->dhm = carve_take(cv, N * d);
    g->dxn2 = carve_take(cv, N * d);
    g->df1 = carve_take(cv, N * F);
    g->df3 = carve_take(cv, N * F);
    g->dfg = carve_take(cv, N * F);
    g->dfo = carve_take(cv, N * d);
    g->dgate = carve_take(cv, N * c->n_kv_head);
    g->dp = carve_take(cv, N);
    g->dV1 = carve_take(cv, N * kd);
    g->dlogits = carve_take(cv, N * V);
    g->dxnf = carve_take(cv, N * d);
    g->rscratch = carve_take(cv, N * (size_t)m->R);
    int nt = omp_get_max_threads();
    int np = omp_get_num_procs();
    const size_t drop_rows = m->cfg.dropout > 0.0f ? ATTN_BLOCK : 0; /* attn_backward's P̃ block */
    g->attscratch = carve_take(cv, (size_t)(nt > np ? nt : np) * (m->T + drop_rows) * m->T);
    xl_layout_grads(m, carve_take(cv, xl_layout_grads(m, NULL)));
}

int model_init(gl_model *m, const gl_model_config *cfg, int max_B, char *err, size_t errlen) {
    memset(m, 0, sizeof *m);
    if (config_validate(cfg, err, errlen)) return -1;
    if (max_B < 1) {
        snprintf(err, errlen, "model: batch size must be at least 1 (got %d)", max_B);
        return -1;
    }
    m->cfg = *cfg;
    m->hd = cfg->d_model / cfg->n_head;
    m->R = config_router_hidden(cfg);
    m->max_B = max_B;
    m->T = cfg->seq_len;
    const int L = cfg->n_layer;

    if (tensors_build(cfg, &m->tensors, &m->n_tensors, &m->n_params)) goto oom;

    m->P.layer = calloc((size_t)L, sizeof(gl_block_params));
    m->G.layer = calloc((size_t)L, sizeof(gl_block_params));
    m->P.router = calloc((size_t)(L > 1 ? L - 1 : 1), sizeof(gl_router_params));
    m->G.router = calloc((size_t)(L > 1 ? L - 1 : 1), sizeof(gl_router_params));
    m->A = calloc((size_t)L, sizeof(gl_block_acts));
    m->P.xl = calloc((size_t)L, sizeof(gl_xl_params));
    m->G.xl = calloc((size_t)L, sizeof(gl_xl_params));
    m->params = alloc_floats(m->n_params);
    m->grads = alloc_floats(m->n_params);
    m->adam_m = alloc_floats(m->n_params);
    m->adam_v = alloc_floats(m->n_params);
    if (!m->P.layer || !m->G.layer || !m->P.router || !m->G.router || !m->A || !m->P.xl || !m->G.xl || !m->params ||
        !m->grads || !m->adam_m || !m->adam_v)
        goto oom;
    tensors_bind(m, &m->P, m->params);
    tensors_bind(m, &m->G, m->grads);

    gl_carver cv = {0};
    layout_acts(m, &cv);
    m->acts_mem = alloc_floats(cv.used);
    if (!m->acts_mem) goto oom;
    cv = (gl_carver){m->acts_mem, 0};
    layout_acts(m, &cv);

    gl_carver gv = {0};
    grad_bufs gb;
    layout_grads(m, &gv, &gb);
    m->scratch_floats = gv.used;
    m->dacts_mem = alloc_floats(gv.used);
    m->tokens = calloc((size_t)max_B * m->T, sizeof(int));
    m->targets = calloc((size_t)max_B * m->T, sizeof(int));
    m->frozen = calloc((size_t)max_B * m->T, 1);
    if (!m->dacts_mem || !m->tokens || !m->targets || !m->frozen) goto oom;

    if (!bb_gpt2(cfg)) rope_tables(m->rope_cos, m->rope_sin, m->T, m->hd, cfg->rope_base);
    return 0;
oom:
    snprintf(err, errlen, "model: out of memory allocating a model of d_model %d, n_layer %d, batch %d x %d",
             cfg->d_model, cfg->n_layer, max_B, cfg->seq_len);
    model_free(m);
    return -1;
}

void model_free(gl_model *m) {
    if (!m) return;
    free(m->tensors);
    free(m->P.layer);
    free(m->G.layer);
    free(m->P.router);
    free(m->G.router);
    free(m->P.xl);
    free(m->G.xl);
    free(m->A);
    free(m->params);
    free(m->grads);
    free(m->adam_m);
    free(m->adam_v);
    free(m->acts_mem);
    free(m->dacts_mem);
    free(m->tokens);
    free(m->targets);
    free(m->frozen);
    free(m->posthoc_mem);
    free(m->ov.gate_mode);
    free(m->ov.gate_value);
    free(m->ov.lambda1_mode);
    free(m->ov.lambda1_value);
    memset(m, 0, sizeof *m);
}

int model_posthoc_init(gl_model *m, char *err, size_t errlen) {
    const gl_model_config *c = &m->cfg;
    if (m->posthoc_mem) return 0;
    if (c->depth_routing != DR_NONE || c->cross_layer != CL_NONE) {
        snprintf(err, errlen, "post-hoc early exit needs a dense model with one residual stream; this one has "
                              "depth_routing = %s, cross_layer = %s (an early-exit model exits with --tau)",
                 config_depth_routing_name(c->depth_routing), config_cross_layer_name(c->cross_layer));
        return -1;
    }
    const size_t N = (size_t)m->max_B * m->T, d = c->d_model, V = c->vocab_size, L = c->n_layer;
    /* the layout of layout_acts's early-exit rows: per block n < L−1 xnf, rstdf, logits; then probs, conf */
    gl_carver cv = {0};
    for (int pass = 0; pass < 2; pass++) {
        for (size_t n = 0; n + 1 < L; n++) {
            float *xnf = carve_take(&cv, N * d), *rstdf = carve_take(&cv, N), *logits = carve_take(&cv, N * V);
            if (pass) m->A[n].xnf = xnf, m->A[n].rstdf = rstdf, m->A[n].logits = logits;
        }
        float *probs = carve_take(&cv, (L - 1) * N * V), *conf = carve_take(&cv, L * N);
        if (pass) {
            m->exit_probs = probs;
            m->exit_conf = conf;
        } else if (!(m->posthoc_mem = alloc_floats(cv.used))) {
            snprintf(err, errlen, "post-hoc early exit: out of memory for %d exit heads of %zu x %zu logits",
                     c->n_layer - 1, N, V);
            return -1;
        } else {
            cv = (gl_carver){m->posthoc_mem, 0};
        }
    }
    return 0;
}

/* ------------------------------------------------------------------------ */
/* overrides                                                                */

static int ensure_overrides(gl_model *m) {
    const int L = m->cfg.n_layer, Hkv = m->cfg.n_kv_head;
    if (!m->ov.gate_mode) {
        m->ov.gate_mode = calloc((size_t)L * Hkv, sizeof(gl_gate_mode));
        m->ov.gate_value = calloc((size_t)L * Hkv, sizeof(float));
        m->ov.lambda1_mode = calloc((size_t)L, sizeof(gl_gate_mode));
        m->ov.lambda1_value = calloc((size_t)L, sizeof(float));
    }
    return m->ov.gate_mode && m->ov.gate_value && m->ov.lambda1_mode && m->ov.lambda1_value ? 0 : -1;
}

void model_set_gate_override(gl_model *m, int layer, int kv_head, gl_gate_mode mode, float value) {
    assert(layer >= 0 && layer < m->cfg.n_layer && kv_head >= 0 && kv_head < m->cfg.n_kv_head);
    if (ensure_overrides(m)) abort();
    m->ov.gate_mode[layer * m->cfg.n_kv_head + kv_head] = mode;
    m->ov.gate_value[layer * m->cfg.n_kv_head + kv_head] = value;
    m->have_overrides = 1;
}

void model_set_gate_token_table(gl_model *m, const float *table) {
    if (ensure_overrides(m)) abort();
    m->ov.gate_token = table;
}

void model_set_lambda1_override(gl_model *m, int layer, gl_gate_mode mode, float value) {
    assert(layer >= 0 && layer < m->cfg.n_layer);
    if (ensure_overrides(m)) abort();
    m->ov.lambda1_mode[layer] = mode;
    m->ov.lambda1_value[layer] = value;
    m->have_overrides = 1;
}

void model_set_route_override(gl_model *m, gl_route_mode mode, float value, uint64_t seed) {
    if (ensure_overrides(m)) abort();
    m->ov.route_mode = mode;
    m->ov.route_value = value;
    m->ov.route_skip_prob = value;
    m->ov.route_seed = seed;
    m->have_overrides = 1;
}

void model_set_route_token_table(gl_model *m, const float *table) {
    if (ensure_overrides(m)) abort();
    m->ov.route_mode = ROUTE_TOKEN;
    m->ov.route_token = table;
    m->have_overrides = 1;
}

void model_clear_overrides(gl_model *m) {
    const int L = m->cfg.n_layer, Hkv = m->cfg.n_kv_head;
    if (m->ov.gate_mode) {
        memset(m->ov.gate_mode, 0, (size_t)L * Hkv * sizeof(gl_gate_mode));
        memset(m->ov.lambda1_mode, 0, (size_t)L * sizeof(gl_gate_mode));
    }
    m->ov.route_mode = ROUTE_FREE;
    m->ov.route_token = NULL;
    m->ov.gate_token = NULL;
    m->have_overrides = 0;
}

/* ------------------------------------------------------------------------ */
/* forward                                                                  */

/* The backbone's norm over rows of d: RMSNorm (llama; b unused) or LayerNorm with bias b (gpt2). */
static void norm_forward(const gl_model *m, float *out, float *rstd, const float *inp, const float *g, const float *b,
                         int N) {
    const gl_model_config *c = &m->cfg;
    if (bb_gpt2(c)) layernorm_forward(out, rstd, inp, g, b, N, c->d_model, c->norm_eps);
    else rmsnorm_forward(out, rstd, inp, g, N, c->d_model, c->norm_eps);
}
static void norm_backward(const gl_model *m, float *dinp, float *dg, float *db, const float *dout, const float *inp,
                          const float *g, const float *rstd, int N) {
    if (bb_gpt2(&m->cfg)) layernorm_backward(dinp, dg, db, dout, inp, g, rstd, N, m->cfg.d_model);
    else rmsnorm_backward(dinp, dg, dout, inp, g, rstd, N, m->cfg.d_model);
}

/* Dropout of this forward (training with model.dropout > 0 and a key), or NULL. */
static const gl_dropout *drop_of(const gl_model *m, gl_dropout *dr) {
    if (!(m->drop_key && m->cfg.dropout > 0.0f)) return NULL;
    *dr = (gl_dropout){m->drop_key, m->cfg.dropout, m->route_row0};
    return dr;
}

void model_final_norm(const gl_model *m, float *out, float *rstd, const float *h, int rows) {
    norm_forward(m, out, rstd, h, m->P.final_norm, m->P.final_norm_bias, rows);
}

/* The state router n−1 reads: the raw residual stream entering block n (tsa_form paper) or its
 * attention-norm output (gatelab). */
static const float *route_input(const gl_model *m, int n) {
    return tsa_paper(&m->cfg) ? m->A[n].h_in : m->A[n].xn1;
}

/* Halting probabilities of the router feeding block n (n >= 1). */
static void route_forward(gl_model *m, int n, int N) {
    gl_block_acts *a = &m->A[n];
    const gl_router_params *r = &m->P.router[n - 1];
    router_forward(a->p, a->r_pre, a->r_hid, route_input(m, n), r->fc1_w, r->fc1_b, r->fc2_w, r->fc2_b, N,
                   m->cfg.d_model, m->R, tsa_paper(&m->cfg));
    if (!m->have_overrides || m->ov.route_mode == ROUTE_FREE) return;
    for (int t = 0; t < N; t++) {
        if (m->ov.route_mode == ROUTE_CONST) {
            a->p[t] = m->ov.route_value;
        } else if (m->ov.route_mode == ROUTE_TOKEN) {
            const float v = m->ov.route_token[(size_t)(n - 1) * m->max_B * m->T + t];
            if (!isnan(v)) a->p[t] = v;
        } else {
            uint64_t h = rng_mix64(m->ov.route_seed ^ rng_mix64(((uint64_t)n << 40) + (uint64_t)t + 1));
            float u = (float)(h >> 40) * (1.0f / 16777216.0f);
            a->p[t] = u < m->ov.route_skip_prob ? 1.0f : 0.0f;
        }
    }
}

/* The FFN of block n on rows [0, K) of packed inputs hm (K, d) → fo rows [0, K). */
static void ffn_forward(gl_model *m, int n, const float *hm, int K) {
    const gl_model_config *c = &m->cfg;
    gl_block_acts *a = &m->A[n];
    const gl_block_params *b = &m->P.layer[n];
    norm_forward(m, a->xn2, a->rstd2, hm, b->ffn_norm, b->ffn_norm_bias, K);
    mm_forward(a->f1, a->xn2, b->w1, K, c->d_model, c->d_ff);
    if (bb_gpt2(c)) { /* fc1 + b1 → GELU → fc2 + b2 */
        bias_gelu_forward(a->fg, a->f1, b->b1, K, c->d_ff);
    } else { /* SwiGLU */
        mm_forward(a->f3, a->xn2, b->w3, K, c->d_model, c->d_ff);
        swiglu_forward(a->fg, a->f1, a->f3, (long)K * c->d_ff);
    }
    gl_dropout drs;
    const gl_dropout *dr = drop_of(m, &drs); /* training only: K is then every row */
    if (dr) dropout_rows(a->fg, K, c->d_ff, dr, DROP_FFN_HIDDEN, n);
    mm_forward(a->fo, a->fg, b->w2, K, c->d_ff, c->d_model);
    if (bb_gpt2(c)) bias_forward(a->fo, b->b2, K, c->d_model);
    if (dr) dropout_rows(a->fo, K, c->d_model, dr, DROP_FFN_OUT, n);
}

/* The norm of exit head n (n = L−1: the final head) in P (the parameters or their gradients): the
 * shared final norm, or in the paper's form (model.exit_form = paper) block n's own exit norm, the
 * final norm being the last block's. */
static float *exit_norm_of(const gl_model *m, const gl_param_ptrs *P, int n) {
    return ee_paper(&m->cfg) && n + 1 < m->cfg.n_layer ? P->layer[n].exit_norm : P->final_norm;
}
/* Its bias: the gpt2 backbone's LayerNorm has one (layers.{n}.exit_norm_bias, final_norm_bias); NULL on
 * the llama backbone, whose RMSNorm has none. */
static float *exit_norm_bias_of(const gl_model *m, const gl_param_ptrs *P, int n) {
    return ee_paper(&m->cfg) && n + 1 < m->cfg.n_layer ? P->layer[n].exit_norm_bias : P->final_norm_bias;
}

/* Early-exit head of block n's output h (N, d): logits, probs, confidence. */
static double exit_head_forward(gl_model *m, int n, const float *h, int N) {
    const gl_model_config *c = &m->cfg;
    gl_block_acts *a = &m->A[n];
    float *probs = m->exit_probs + (size_t)n * N * c->vocab_size;
    norm_forward(m, a->xnf, a->rstdf, h, exit_norm_of(m, &m->P, n), exit_norm_bias_of(m, &m->P, n), N);
    mm_forward(a->logits, a->xnf, m->P.head, N, c->d_model, c->vocab_size);
    double tot = xent_forward(probs, NULL, a->logits, m->targets, m->mask, N, c->vocab_size);
    xent_confidence(m->exit_conf + (size_t)n * N, probs, N, c->vocab_size);
    return tot;
}

/* The part of block n every token needs, also one that skips the block (later
 * tokens attend to its keys and values): xn1, k, v, the router (TSA), the
 * value residual, qk-norm of k and its rotary. */
static void block_kv_forward(gl_model *m, int n, int N, int T) {
    const gl_model_config *c = &m->cfg;
    const int d = c->d_model, hd = m->hd, Hkv = c->n_kv_head;
    gl_block_acts *a = &m->A[n];
    const gl_block_params *b = &m->P.layer[n];

    /* MUDD: q, k, v read separate streams (xl_*); otherwise all read xn1 = RMSNorm(h_in) */
    norm_forward(m, a->xn1, a->rstd1, xl_query_input(m, n), b->attn_norm, b->attn_norm_bias, N);
    xl_kv_norm_forward(m, n, N);
    mm_forward(a->k, xl_attn_input(m, n, 1), b->wk, N, d, Hkv * hd);
    mm_forward(a->v, xl_attn_input(m, n, 2), b->wv, N, d, Hkv * hd);
    if (c->depth_routing == DR_TSA && n >= 1) route_forward(m, n, N);
    if (config_routing_hard(c)) routing_forward(m, n, N / T, T);
    vr_forward(m, n, N);
    if (c->qk_norm) rmsnorm_forward(a->kr, a->krstd, a->k, b->k_norm, N * Hkv, hd, c->norm_eps);
    else memcpy(a->kr, a->k, (size_t)N * Hkv * hd * sizeof(float));
    if (!bb_gpt2(c)) rope_forward(a->kr, m->rope_cos, m->rope_sin, N, T, Hkv, hd);
}

/* Block n's attention for every token: block_kv_forward, then the queries, attention (dropout on its
 * probabilities in training) and the update ao = o Woᵀ (N rows). */
static void block_attn_forward(gl_model *m, int n, int B, int T) {
    const gl_model_config *c = &m->cfg;
    const int N = B * T, d = c->d_model, hd = m->hd, H = c->n_head, Hkv = c->n_kv_head;
    gl_block_acts *a = &m->A[n];
    const gl_block_params *b = &m->P.layer[n];
    const int hard = config_routing_hard(c) && config_block_routed(c, n); /* MoD, random */
    gl_dropout drs;

    block_kv_forward(m, n, N, T);
    mm_forward(a->q, a->xn1, b->wq, N, d, H * hd);
    if (c->qk_norm) rmsnorm_forward(a->qr, a->qrstd, a->q, b->q_norm, N * H, hd, c->norm_eps);
    else memcpy(a->qr, a->q, (size_t)N * H * hd * sizeof(float));
    if (!bb_gpt2(c)) rope_forward(a->qr, m->rope_cos, m->rope_sin, N, T, H, hd);
    if (hard && c->depth_routing == DR_MOD) /* MoD: the skipped tokens do not enter the block, as keys neither */
        routing_attn_forward(a->atty, a->att, a->qr, a->kr, a->vmix, a->keep, B, T, H, Hkv, hd);
    else if (drop_of(m, &drs)) { /* (MoD is refused with dropout: config.c) */
        /* P̃'s row blocks in backward's scratch (dacts_mem), free during the forward, as sparse inference's */
        gl_carver cv = {m->dacts_mem, 0};
        float *scratch = carve_take(&cv, (size_t)omp_get_max_threads() * ATTN_BLOCK * T);
        assert(cv.used <= m->scratch_floats);
        attn_forward_dropout(a->atty, a->att, scratch, a->qr, a->kr, a->vmix, &drs, n, B, T, H, Hkv, hd);
    } else
        attn_forward(a->atty, a->att, a->qr, a->kr, a->vmix, B, T, H, Hkv, hd);
    mm_forward(a->ao, a->atty, b->wo, N, H * hd, d);
}

/* Every token through block n (training, and inference where all run).
 * frozen (early exit, bookkeeping reference): afterwards the exited tokens'
 * rows of h_next are restored to h_in, so they keep their state. */
static void block_forward(gl_model *m, int n, int B, int T, float *h_next, unsigned char *frozen) {
    const gl_model_config *c = &m->cfg;
    const int N = B * T, d = c->d_model;
    gl_block_acts *a = &m->A[n];
    const int tsa = c->depth_routing == DR_TSA && n >= 1;
    const int hard = config_routing_hard(c) && config_block_routed(c, n); /* MoD, random */

    block_attn_forward(m, n, B, T);
    if (c->cross_layer == CL_HYPER) {
        xl_hc_mid_forward(m, n, N); /* streams += attention; h_mid = the FFN's width connection */
    } else if (tsa && tsa_paper(c)) { /* sequential gates: the FFN reads h + (1 − p)·a */
#pragma omp parallel for schedule(static)
        for (int t = 0; t < N; t++) {
            const float s = 1.0f - a->p[t];
            for (int i = 0; i < d; i++) {
                size_t j = (size_t)t * d + i;
                a->h_mid[j] = a->h_in[j] + s * a->ao[j];
            }
        }
    } else {
#pragma omp parallel for schedule(static)
        for (size_t i = 0; i < (size_t)N * d; i++) a->h_mid[i] = a->h_in[i] + a->ao[i];
    }

    ffn_forward(m, n, a->h_mid, N);
    if (c->cross_layer == CL_HYPER) {
        xl_hc_out_forward(m, n, N); /* streams += FFN; the next input comes from xl_forward_after_block */
    } else if (tsa && tsa_paper(c)) { /* h_next = h_mid + (1 − p)·f */
#pragma omp parallel for schedule(static)
        for (int t = 0; t < N; t++) {
            float s = 1.0f - a->p[t];
            for (int i = 0; i < d; i++) {
                size_t j = (size_t)t * d + i;
                h_next[j] = a->h_mid[j] + s * a->fo[j];
            }
        }
    } else if (tsa) {
#pragma omp parallel for schedule(static)
        for (int t = 0; t < N; t++) {
            float s = 1.0f - a->p[t];
            for (int i = 0; i < d; i++) {
                size_t j = (size_t)t * d + i;
                h_next[j] = a->h_in[j] + s * (a->ao[j] + a->fo[j]);
            }
        }
    } else if (hard) {
#pragma omp parallel for schedule(static)
        for (int t = 0; t < N; t++) {
            const float s = a->rs[t];
            for (int i = 0; i < d; i++) {
                size_t j = (size_t)t * d + i;
                h_next[j] = a->h_in[j] + s * (a->ao[j] + a->fo[j]);
            }
        }
    } else {
#pragma omp parallel for schedule(static)
        for (size_t i = 0; i < (size_t)N * d; i++) h_next[i] = a->h_mid[i] + a->fo[i];
    }
    if (frozen) {
        for (int t = 0; t < N; t++)
            if (frozen[t]) memcpy(h_next + (size_t)t * d, a->h_in + (size_t)t * d, (size_t)d * sizeof(float));
            else if (n >= 1) m->active_count++;
    }
}

/* Inference scratch, carved from the activation-gradient block (inference has
 * no backward): the selected rows and the packed buffers of infer.c. */
typedef struct {
    int *idx;    /* (K <= N) selected token rows, ascending */
    int *slot;   /* (N) packed row of token t, or -1 when it skips */
    int *seq;    /* (B+1) packed rows of window b: [seq[b], seq[b+1]) */
    float *rows; /* (N, d) a gathered activation */
    float *att;  /* (threads, INFER_ATT_BLOCK, T) attention probabilities */
    float *kp, *vp; /* (N, Hkv*hd) MoD: the selected tokens' keys and values, packed */
} infer_scratch;

static infer_scratch infer_scratch_of(gl_model *m, int N, int B) {
    gl_carver cv = {m->dacts_mem, 0};
    infer_scratch s;
    s.idx = (int *)carve_take(&cv, (size_t)N);
    s.slot = (int *)carve_take(&cv, (size_t)N);
    s.seq = (int *)carve_take(&cv, (size_t)B + 1);
    s.rows = carve_take(&cv, (size_t)N * m->cfg.d_model);
    s.att = carve_take(&cv, (size_t)omp_get_max_threads() * INFER_ATT_BLOCK * m->T);
    const size_t kd = (size_t)m->cfg.n_kv_head * m->hd;
    s.kp = m->cfg.depth_routing == DR_MOD ? carve_take(&cv, (size_t)N * kd) : NULL;
    s.vp = m->cfg.depth_routing == DR_MOD ? carve_take(&cv, (size_t)N * kd) : NULL;
    assert(cv.used <= m->scratch_floats);
    return s;
}

/* TSA block n at inference in the paper's sparse form (m->sparse_form SPARSE_PAPER, model.h): every
 * token gets its attention; a token with p >= 0.5 halts (its row of h_next is h_in); a kept token
 * gets h + a, and only the K kept tokens, packed, run the FFN: h + a + f.  With hard gates the
 * paper's sequential form and gatelab's joint form agree, so this serves both TSA forms.  Afterwards
 * h_mid, xn2, f1, f3, fg and fo hold packed rows [0, K) (idx order). */
static void block_forward_paper_sparse(gl_model *m, int n, int B, int T, float *h_next) {
    const gl_model_config *c = &m->cfg;
    const int N = B * T, d = c->d_model;
    gl_block_acts *a = &m->A[n];
    infer_scratch s = infer_scratch_of(m, N, B);
    block_attn_forward(m, n, B, T);
    int K = 0;
    for (int t = 0; t < N; t++) {
        s.slot[t] = a->p[t] < 0.5f ? K : -1;
        if (a->p[t] < 0.5f) s.idx[K++] = t;
    }
#pragma omp parallel for schedule(static)
    for (int r = 0; r < K; r++)
        for (int i = 0; i < d; i++)
            a->h_mid[(size_t)r * d + i] = a->h_in[(size_t)s.idx[r] * d + i] + a->ao[(size_t)s.idx[r] * d + i];
    if (K) ffn_forward(m, n, a->h_mid, K);
#pragma omp parallel for schedule(static)
    for (int t = 0; t < N; t++) {
        const int r = s.slot[t];
        float *ho = h_next + (size_t)t * d;
        if (r < 0) memcpy(ho, a->h_in + (size_t)t * d, (size_t)d * sizeof(float));
        else
            for (int i = 0; i < d; i++) ho[i] = a->h_mid[(size_t)r * d + i] + a->fo[(size_t)r * d + i];
    }
    m->active_count += K;
}

/* MoD block n at inference (m->sparse): the selected tokens alone, packed,
 * get the whole block: query, keys and values among themselves (the packed
 * windows of k tokens, rotary at each token's own position), attention, Wo
 * and the FFN; every other token keeps its state.  Keys and values are
 * computed for every token by block_kv_forward (the value residual reads
 * them row-aligned) and the selected rows gathered; the rest are not read.
 * Rows of q qr atty ao h_mid and the FFN buffers are packed [0, K); att holds
 * the packed (B, H, k, k) probabilities. */
static void mod_block_forward_rows(gl_model *m, int n, int B, int T, float *h_next) {
    const gl_model_config *c = &m->cfg;
    const int N = B * T, d = c->d_model, hd = m->hd, H = c->n_head, Hkv = c->n_kv_head, kd = Hkv * hd;
    gl_block_acts *a = &m->A[n];
    const gl_block_params *b = &m->P.layer[n];
    infer_scratch s = infer_scratch_of(m, N, B);

    block_kv_forward(m, n, N, T);
    const int k = config_mod_k(c, T);
    int K = 0;
    for (int t = 0; t < N; t++)
        if (a->keep[t] > 0.5f) s.idx[K++] = t;
    /* every window holds exactly k selected tokens (the override of an ablation may break that: then
     * the packed windows are not k long, and the masked full block is the one that is right) */
    int even = K == B * k;
    for (int bb = 0; bb < B && even; bb++)
        for (int r = bb * k; r < (bb + 1) * k && even; r++) even = s.idx[r] / T == bb;
    if (!even) {
        block_forward(m, n, B, T, h_next, NULL);
        m->active_count += K;
        return;
    }
    infer_gather(s.rows, a->xn1, s.idx, K, d);
    mm_forward(a->q, s.rows, b->wq, K, d, H * hd);
    if (c->qk_norm) rmsnorm_forward(a->qr, a->qrstd, a->q, b->q_norm, K * H, hd, c->norm_eps);
    else memcpy(a->qr, a->q, (size_t)K * H * hd * sizeof(float));
    if (!bb_gpt2(c)) infer_rope_rows(a->qr, m->rope_cos, m->rope_sin, s.idx, K, T, H, hd);
    infer_gather(s.kp, a->kr, s.idx, K, kd);
    infer_gather(s.vp, a->vmix, s.idx, K, kd);
    attn_forward(a->atty, a->att, a->qr, s.kp, s.vp, B, k, H, Hkv, hd);
    mm_forward(a->ao, a->atty, b->wo, K, H * hd, d);
#pragma omp parallel for schedule(static)
    for (int r = 0; r < K; r++)
        for (int i = 0; i < d; i++)
            a->h_mid[(size_t)r * d + i] = a->h_in[(size_t)s.idx[r] * d + i] + a->ao[(size_t)r * d + i];
    ffn_forward(m, n, a->h_mid, K);
    memcpy(h_next, a->h_in, (size_t)N * d * sizeof(float));
#pragma omp parallel for schedule(static)
    for (int r = 0; r < K; r++) {
        const int t = s.idx[r];
        const float sc = a->rs[t];
        float *ho = h_next + (size_t)t * d;
        for (int i = 0; i < d; i++) ho[i] += sc * (a->ao[(size_t)r * d + i] + a->fo[(size_t)r * d + i]);
    }
    m->active_count += K;
}

/* Block n at inference when only some tokens run it: TSA sparse routing (run
 * where p <= 0.5) or early exit (run where not frozen).  Every token gets its
 * k and v (block_kv_forward); only the K running tokens, packed, get their
 * query, attention row, Wo projection and FFN (infer.c); a skipping token's
 * row of h_next is its h_in.  The arithmetic of a running row is that of
 * block_forward, in the same order.  Afterwards q, qr, atty, ao, h_mid, xn2,
 * f1, f3, fg and fo of block n hold packed rows [0, K) (idx order), not
 * token rows; att is not written. */
static void block_forward_rows(gl_model *m, int n, int B, int T, float *h_next, const unsigned char *frozen) {
    const gl_model_config *c = &m->cfg;
    const int N = B * T, d = c->d_model, hd = m->hd, H = c->n_head, Hkv = c->n_kv_head;
    gl_block_acts *a = &m->A[n];
    const gl_block_params *b = &m->P.layer[n];
    const int tsa = c->depth_routing == DR_TSA, hard = config_routing_hard(c);
    if (c->depth_routing == DR_MOD) {
        mod_block_forward_rows(m, n, B, T, h_next);
        return;
    }
    infer_scratch s = infer_scratch_of(m, N, B);

    block_kv_forward(m, n, N, T);
    int K = 0;
    for (int t = 0; t < N; t++) {
        const int run = tsa ? a->p[t] <= 0.5f : hard ? a->keep[t] > 0.5f : !frozen[t];
        s.slot[t] = run ? K : -1;
        if (run) s.idx[K++] = t;
    }
    if (K) {
        infer_gather(s.rows, a->xn1, s.idx, K, d);
        mm_forward(a->q, s.rows, b->wq, K, d, H * hd);
        if (c->qk_norm) rmsnorm_forward(a->qr, a->qrstd, a->q, b->q_norm, K * H, hd, c->norm_eps);
        else memcpy(a->qr, a->q, (size_t)K * H * hd * sizeof(float));
        if (!bb_gpt2(c)) infer_rope_rows(a->qr, m->rope_cos, m->rope_sin, s.idx, K, T, H, hd);
        infer_seq_bounds(s.seq, s.idx, K, B, T);
        infer_attn_rows(a->atty, a->qr, a->kr, a->vmix, s.idx, s.seq, B, T, H, Hkv, hd, s.att);
        mm_forward(a->ao, a->atty, b->wo, K, H * hd, d);
        const int seq = tsa && tsa_paper(c); /* sequential gates: the FFN reads h + (1 − p)·a */
#pragma omp parallel for schedule(static)
        for (int r = 0; r < K; r++) {
            const float sc = seq ? 1.0f - a->p[s.idx[r]] : 1.0f;
            for (int i = 0; i < d; i++)
                a->h_mid[(size_t)r * d + i] = a->h_in[(size_t)s.idx[r] * d + i] + sc * a->ao[(size_t)r * d + i];
        }
        ffn_forward(m, n, a->h_mid, K);
    }
#pragma omp parallel for schedule(static)
    for (int t = 0; t < N; t++) {
        const int r = s.slot[t];
        const float *hi = a->h_in + (size_t)t * d;
        float *ho = h_next + (size_t)t * d;
        if (r < 0) {
            memcpy(ho, hi, (size_t)d * sizeof(float));
        } else if (tsa && tsa_paper(c)) {
            const float sc = 1.0f - a->p[t];
            for (int i = 0; i < d; i++) ho[i] = a->h_mid[(size_t)r * d + i] + sc * a->fo[(size_t)r * d + i];
        } else if (tsa || hard) {
            const float sc = tsa ? 1.0f - a->p[t] : a->rs[t];
            for (int i = 0; i < d; i++) ho[i] = hi[i] + sc * (a->ao[(size_t)r * d + i] + a->fo[(size_t)r * d + i]);
        } else {
            for (int i = 0; i < d; i++) ho[i] = a->h_mid[(size_t)r * d + i] + a->fo[(size_t)r * d + i];
        }
    }
    if (n >= 1) m->active_count += K;
}

/* Early-exit head of block n at inference (skipping path): only the tokens
 * that ran block n (not frozen) go through the head; an exited token's
 * confidence is carried from the block before (its state, hence its head
 * output, has not changed).  Rows of a->xnf, a->logits and this block's
 * exit_probs are packed [0, K).  The task loss of an exit head is not summed:
 * at inference the loss is the final head's. */
static void exit_head_rows(gl_model *m, int n, const float *h, const unsigned char *frozen, int B, int N) {
    const gl_model_config *c = &m->cfg;
    const int d = c->d_model, V = c->vocab_size;
    gl_block_acts *a = &m->A[n];
    infer_scratch s = infer_scratch_of(m, N, B);
    float *conf = m->exit_conf + (size_t)n * N, *probs = m->exit_probs + (size_t)n * N * V;
    int K = 0;
    for (int t = 0; t < N; t++)
        if (frozen[t]) conf[t] = conf[t - N]; /* frozen at a block < n, so n >= 1 */
        else s.idx[K++] = t;
    if (!K) return;
    infer_gather(s.rows, h, s.idx, K, d);
    norm_forward(m, a->xnf, a->rstdf, s.rows, m->P.final_norm, m->P.final_norm_bias, K);
    mm_forward(a->logits, a->xnf, m->P.head, K, d, V);
    xent_forward(probs, NULL, a->logits, NULL, NULL, K, V);
    xent_confidence(s.rows, probs, K, V); /* s.rows is free again: K confidences */
    for (int r = 0; r < K; r++) conf[s.idx[r]] = s.rows[r];
}

/* The paper's exit rule after block n >= 1 (model.exit_form = paper at inference): a token still
 * running exits when its exit head's maximum softmax probability is above τ (strictly, as the official
 * code decides); m->frozen[t] keeps the block it exited after, 0 while it runs.  Its state is not
 * touched: later blocks keep updating it, and the other tokens attend to the updated state. */
static void exit_paper_decide(gl_model *m, int n, int N) {
    const float *conf = m->exit_conf + (size_t)n * N;
    for (int t = 0; t < N; t++)
        if (!m->frozen[t] && conf[t] > m->exit_tau) m->frozen[t] = (unsigned char)n;
}

/* The paper's predictions (model.exit_form = paper at inference): a token that exited after block e
 * predicts with exit head e's logits, frozen there; the others with the final head's, already in
 * m->logits.  Overwrites the exited rows of m->logits; afterwards the active fractions in both
 * conventions (model.h: active_frac, active_frac_paper).  Every block ran for every token, so
 * active_count is every (token, block >= 1) pair. */
static void exit_paper_predict(gl_model *m, int N) {
    const int L = m->cfg.n_layer, V = m->cfg.vocab_size;
    long post_stem = 0; /* Σ over tokens of the post-stem blocks run up to the exit: the exit block */
    for (int t = 0; t < N; t++) {
        const int e = m->frozen[t] ? m->frozen[t] : L - 1;
        if (e < L - 1) memcpy(m->logits + (size_t)t * V, m->A[e].logits + (size_t)t * V, (size_t)V * sizeof(float));
        post_stem += e;
    }
    m->active_count = (long)(L - 1) * N;
    m->active_frac = (float)((double)post_stem / ((double)(L - 1) * N));
    m->active_frac_paper = (float)((1.0 + (double)post_stem / N) / L);
}

static float exit_weight(const gl_model *m, int n) {
    const int L = m->cfg.n_layer;
    if (m->cfg.exit_weighting == EE_WEIGHT_UNIFORM) return 1.0f / L;
    return (float)(n + 1) / (float)(L * (L + 1) / 2);
}

float model_forward(gl_model *m, const int *tokens, const int *targets, const float *mask, int B, int T) {
    const gl_model_config *c = &m->cfg;
    assert(B >= 1 && B <= m->max_B && T >= 1 && T <= m->T);
    const int N = B * T, d = c->d_model, V = c->vocab_size, L = c->n_layer;
    m->B = B;
    m->cur_T = T;
    /* the rotary tables cover positions 0..seq_len-1, so a shorter T reads a prefix of them */
    memcpy(m->tokens, tokens, (size_t)N * sizeof(int));
    double msum = 0.0;
    for (int t = 0; t < N; t++) {
        m->targets[t] = targets ? targets[t] : -1;
        m->mask[t] = targets ? (mask ? mask[t] : 1.0f) : 0.0f;
        if (m->targets[t] >= 0) msum += m->mask[t];
    }
    m->mask_sum = (float)msum;

    /* embedding */
    float *h0 = m->A[0].h_in;
#pragma omp parallel for schedule(static)
    for (int t = 0; t < N; t++) {
        assert(tokens[t] >= 0 && tokens[t] < V);
        memcpy(h0 + (size_t)t * d, m->P.embed + (size_t)tokens[t] * d, (size_t)d * sizeof(float));
        if (bb_gpt2(c)) { /* learned absolute position t mod T of the row's sequence */
            const float *pe = m->P.pos_embed + (size_t)(t % T) * d;
            for (int i = 0; i < d; i++) h0[(size_t)t * d + i] += pe[i];
        }
    }
    gl_dropout drs;
    const gl_dropout *dr = drop_of(m, &drs);
    if (dr) dropout_rows(h0, N, d, dr, DROP_EMBED, 0);
    xl_forward_begin(m, N);

    const int ee = c->depth_routing == DR_EARLY_EXIT;
    /* post-hoc early exit of a dense model: the same exit heads (the final norm and head), any τ */
    const int ph = m->posthoc_exit && c->depth_routing == DR_NONE;
    assert(!ph || m->posthoc_mem);
    const int heads = ee || ph;
    /* the paper's form at inference: every block for every token, exits from block 1 on (exit_paper_*) */
    const int ee_official = ee && ee_paper(c) && m->exit_tau > 0.0f;
    const int ee_infer = (ee && !ee_official && m->exit_tau > 0.0f) || ph;
    const int sparse = config_routing_sparse(c) && m->sparse; /* TSA, MoD, random */
    const int paper_sparse = c->depth_routing == DR_TSA && m->sparse_form == SPARSE_PAPER;
    unsigned char *frozen = ee_infer ? m->frozen : NULL;
    if (frozen || ee_official) memset(m->frozen, 0, (size_t)N);
    m->active_frac_paper = NAN;
    double exit_sum[GL_MAX_LAYERS] = {0};
    m->active_count = 0;
    const int ee_skip = ee_infer && !m->exit_reference;
    int n_frozen = 0;
    for (int n = 0; n < L; n++) {
        float *h_next = xl_block_output(m, n, n + 1 < L ? m->A[n + 1].h_in : m->h_out);
        if (sparse && paper_sparse && config_block_routed(c, n))
            block_forward_paper_sparse(m, n, B, T, h_next);
        else if ((sparse && config_block_routed(c, n)) || (ee_skip && n_frozen > 0))
            block_forward_rows(m, n, B, T, h_next, frozen);
        else {
            block_forward(m, n, B, T, h_next, ee_infer ? frozen : NULL);
            if (sparse && n >= 1) m->active_count += N; /* MoD every other block: an unrouted block runs all */
        }
        xl_forward_after_block(m, n, N);
        if (heads && n + 1 < L) {
            if (ee_skip && n_frozen > 0) exit_head_rows(m, n, h_next, frozen, B, N);
            else exit_sum[n] = exit_head_forward(m, n, h_next, N);
            if (ee_infer)
                for (int t = 0; t < N; t++)
                    if (!frozen[t] && m->exit_conf[(size_t)n * N + t] >= m->exit_tau) {
                        frozen[t] = 1;
                        n_frozen++;
                    }
            if (ee_official && n >= 1) exit_paper_decide(m, n, N);
        }
    }

    /* final head */
    norm_forward(m, m->xnf, m->rstdf, m->h_out, m->P.final_norm, m->P.final_norm_bias, N);
    mm_forward(m->logits, m->xnf, m->P.head, N, d, V);
    if (ee_official) exit_paper_predict(m, N);
    double tot = xent_forward(m->probs, m->tok_loss, m->logits, m->targets, m->mask, N, V);
    if (heads) xent_confidence(m->exit_conf + (size_t)(L - 1) * N, m->probs, N, V);

    /* a data-parallel shard divides by the global batch's counts (model.h: norm_mask_sum) */
    const double norm = m->norm_mask_sum > 0 ? m->norm_mask_sum : msum;
    const double ntok = m->norm_tokens > 0 ? (double)m->norm_tokens : (double)N;
    m->task_loss = norm > 0 ? (float)(tot / norm) : 0.0f;
    m->loss = m->task_loss;
    m->penalty = 0.0f;
    if (!ee_official) m->active_frac = 1.0f;
    if (c->depth_routing == DR_TSA && L > 1) {
        double pen = 0.0;
        long active = 0;
        for (int n = 1; n < L; n++)
            for (int t = 0; t < N; t++) {
                pen += 1.0 - m->A[n].p[t];
                active += paper_sparse ? m->A[n].p[t] < 0.5f : m->A[n].p[t] <= 0.5f; /* the form's run rule */
            }
        m->penalty = (float)(c->tsa_lambda * pen / ((double)(L - 1) * ntok));
        m->active_frac = (float)((double)active / ((double)(L - 1) * ntok));
        if (!sparse) m->loss = m->task_loss + m->penalty;
    } else if (config_routing_hard(c) && L > 1) {
        /* MoD, random: the share of (token, block >= 1) pairs computed, unrouted blocks counting in full */
        long active = 0;
        for (int n = 1; n < L; n++)
            for (int t = 0; t < N; t++) active += m->A[n].keep[t] > 0.5f;
        m->active_frac = (float)((double)active / ((double)(L - 1) * ntok));
    } else if (heads && L > 1) {
        if (ee_infer) {
            m->active_frac = (float)((double)m->active_count / ((double)(L - 1) * N));
            /* a token that exits after block n ran n post-stem blocks: the official convention's count */
            m->active_frac_paper = (float)((1.0 + (double)m->active_count / N) / L);
        } else if (ee_official) {
            /* exit_paper_predict set both conventions */
        } else if (norm > 0) {
            double total = exit_weight(m, L - 1) * tot / norm;
            for (int n = 0; n + 1 < L; n++) total += exit_weight(m, n) * exit_sum[n] / norm;
            m->loss = (float)total;
        }
    }
    return targets ? m->loss : 0.0f;
}

/* ------------------------------------------------------------------------ */
/* backward                                                                 */

/* Zero a gradient buffer, in parallel (a serial memset of the (B·T, d_ff)
 * buffers was a visible share of the step). */
static void zero(float *p, size_t n) {
    const size_t chunk = 1 << 16;
    const long nchunks = (long)((n + chunk - 1) / chunk);
#pragma omp parallel for schedule(static)
    for (long c = 0; c < nchunks; c++) {
        size_t a = (size_t)c * chunk, len = a + chunk < n ? chunk : n - a;
        memset(p + a, 0, len * sizeof(float));
    }
}

void model_zero_grad(gl_model *m) { zero(m->grads, m->n_params); }

/* Head backward of exit head n (L−1: the final head): dlogits = scale·mask·(probs − onehot) → dxnf →
 * its norm (exit_norm_of) → dh (+=). */
static void head_backward(gl_model *m, grad_bufs *g, int n, const float *probs, const float *xnf,
                          const float *h, const float *rstdf, float scale, float *dh, int N) {
    const gl_model_config *c = &m->cfg;
    const int d = c->d_model, V = c->vocab_size;
    xent_backward(g->dlogits, probs, m->targets, m->mask, scale, N, V);
    zero(g->dxnf, (size_t)N * d);
    mm_backward(g->dxnf, m->G.head, g->dlogits, xnf, m->P.head, N, d, V);
    norm_backward(m, dh, exit_norm_of(m, &m->G, n), exit_norm_bias_of(m, &m->G, n), g->dxnf, h,
                  exit_norm_of(m, &m->P, n), rstdf, N);
}

/* Block n's FFN half backward: from dres (the gradient at h_out) through s·f and the FFN to g->dhm, the
 * gradient at h_mid by way of the FFN norm (set, not added); dr: the forward's dropout masks or NULL. */
static void block_ffn_backward(gl_model *m, grad_bufs *g, int n, const gl_dropout *dr) {
    const gl_model_config *c = &m->cfg;
    const int N = m->B * m->cur_T, d = c->d_model, F = c->d_ff;
    const gl_block_acts *a = &m->A[n];
    const gl_block_params *b = &m->P.layer[n];
    gl_block_params *gb = &m->G.layer[n];
    const int tsa = c->depth_routing == DR_TSA && n >= 1;
    const int hard = config_routing_hard(c) && config_block_routed(c, n); /* MoD, random: s = rs */
    const float *dres = g->dres;

    /* h_out = h + s·(a + f), s = 1 − p (TSA), rs (MoD, random) or 1 */
    if (c->cross_layer == CL_HYPER) {
        xl_hc_ffn_out_backward(m, n, N, g->dfo);
    } else {
#pragma omp parallel for schedule(static)
        for (int t = 0; t < N; t++) {
            float s = tsa ? 1.0f - a->p[t] : hard ? a->rs[t] : 1.0f;
            for (int i = 0; i < d; i++) g->dfo[(size_t)t * d + i] = s * dres[(size_t)t * d + i];
        }
    }
    /* FFN (dropout: the forward's masks on the output's and the hidden activation's gradients) */
    if (dr) dropout_rows(g->dfo, N, d, dr, DROP_FFN_OUT, n);
    if (bb_gpt2(c)) bias_backward(gb->b2, g->dfo, N, d);
    mm_backward_set(g->dfg, gb->w2, g->dfo, a->fg, b->w2, N, F, d);
    if (dr) dropout_rows(g->dfg, N, F, dr, DROP_FFN_HIDDEN, n);
    if (bb_gpt2(c)) {
        gelu_bias_backward(g->df1, gb->b1, g->dfg, a->f1, N, F);
        mm_backward_set(g->dxn2, gb->w1, g->df1, a->xn2, b->w1, N, d, F);
    } else {
        swiglu_backward(g->df1, g->df3, g->dfg, a->f1, a->f3, (long)N * F);
        mm_backward_set(g->dxn2, gb->w1, g->df1, a->xn2, b->w1, N, d, F);
        mm_backward(g->dxn2, gb->w3, g->df3, a->xn2, b->w3, N, d, F);
    }
    zero(g->dhm, (size_t)N * d);
    norm_backward(m, g->dhm, gb->ffn_norm, gb->ffn_norm_bias, g->dxn2, a->h_mid, b->ffn_norm, a->rstd2, N);
}

static void block_backward(gl_model *m, grad_bufs *g, int n) {
    const gl_model_config *c = &m->cfg;
    const int B = m->B, T = m->cur_T, N = B * T, d = c->d_model, hd = m->hd;
    const int H = c->n_head, Hkv = c->n_kv_head, qd = H * hd, kd = Hkv * hd;
    gl_block_acts *a = &m->A[n];
    const gl_block_params *b = &m->P.layer[n];
    gl_block_params *gb = &m->G.layer[n];
    const int tsa = c->depth_routing == DR_TSA && n >= 1;
    const int hard = config_routing_hard(c) && config_block_routed(c, n); /* MoD, random: s = rs */
    const float *dres = g->dres;
    gl_dropout drs;
    const gl_dropout *dr = drop_of(m, &drs);

    block_ffn_backward(m, g, n, dr);
    /* dao = s·dres + dhm;  dh = dres + dhm;  TSA: dp = −Σ dres·(a + f) − λ/((L−1)N) */
    const double ntok = m->norm_tokens > 0 ? (double)m->norm_tokens : (double)N; /* model.h: norm_tokens */
    const float dpen = tsa ? (float)(c->tsa_lambda / ((double)(c->n_layer - 1) * ntok)) : 0.0f;
    if (c->cross_layer == CL_HYPER) {
        /* hyper: dao from the attention's depth connection; dh gets only the attention-norm path */
        xl_hc_mid_backward(m, n, N, g->dhm, g->dao);
        zero(g->dh, (size_t)N * d);
    } else if (tsa && tsa_paper(c)) {
        /* sequential gates: h_mid = h + s·a, h_out = h_mid + s·f (s = 1 − p), so with dh_mid = dres + dhm:
         * dao = s·dh_mid, dh = dh_mid, dp = −(Σ dres·f + Σ dh_mid·a) − λ/((L−1)N) */
#pragma omp parallel for schedule(static)
        for (int t = 0; t < N; t++) {
            const float s = 1.0f - a->p[t];
            const size_t r = (size_t)t * d;
            for (int i = 0; i < d; i++) {
                const float dmid = dres[r + i] + g->dhm[r + i];
                g->dao[r + i] = s * dmid;
                g->dh[r + i] = dmid;
            }
            /* the row sums lane-wise (vred.h): a scalar chain here was most of this loop's time */
            g->dp[t] = -(gl_dot(dres + r, a->fo + r, d) + gl_dot(g->dh + r, a->ao + r, d)) - dpen;
        }
    } else {
#pragma omp parallel for schedule(static)
        for (int t = 0; t < N; t++) {
            const float s = tsa ? 1.0f - a->p[t] : hard ? a->rs[t] : 1.0f;
            const size_t r = (size_t)t * d;
            for (int i = 0; i < d; i++) {
                g->dao[r + i] = s * dres[r + i] + g->dhm[r + i];
                g->dh[r + i] = dres[r + i] + g->dhm[r + i];
            }
            if (!tsa && !hard) continue; /* a dense block has no gate to differentiate */
            const float dp = -gl_dot_add(dres + r, a->ao + r, a->fo + r, d); /* lane-wise (vred.h) */
            g->dp[t] = tsa ? dp - dpen : -dp; /* hard: dL/d rs = Σ dres·(a + f) */
        }
        if (hard) routing_backward(m, n, g->dp, g->dh, N);
    }
    /* attention */
    mm_backward_set(g->datty, gb->wo, g->dao, a->atty, b->wo, N, qd, d);
    attn_backward(g->dqr, g->dkr, g->dvmix, g->datty, a->att, dr, n, a->qr, a->kr, a->vmix, g->attscratch,
                  B, T, H, Hkv, hd);
    if (!bb_gpt2(c)) {
        rope_backward(g->dqr, m->rope_cos, m->rope_sin, N, T, H, hd);
        rope_backward(g->dkr, m->rope_cos, m->rope_sin, N, T, Hkv, hd);
    }
    const float *dq = g->dqr, *dk = g->dkr;
    if (c->qk_norm) {
        zero(g->dq, (size_t)N * qd);
        zero(g->dk, (size_t)N * kd);
        rmsnorm_backward(g->dq, gb->q_norm, g->dqr, a->q, b->q_norm, a->qrstd, N * H, hd);
        rmsnorm_backward(g->dk, gb->k_norm, g->dkr, a->k, b->k_norm, a->krstd, N * Hkv, hd);
        dq = g->dq;
        dk = g->dk;
    }
    if (m->cap_dgate) { /* attribution: dL/d gate of v' = v + gate·V1, Σ_i dv'·V1, whatever makes the gate */
        const float *V1 = m->A[0].v;
#pragma omp parallel for schedule(static)
        for (int t = 0; t < N; t++)
            for (int j = 0; j < Hkv; j++) {
                const float *dm = g->dvmix + ((size_t)t * Hkv + j) * hd, *v1 = V1 + ((size_t)t * Hkv + j) * hd;
                double s = 0.0;
                for (int i = 0; i < hd; i++) s += (double)dm[i] * v1[i];
                m->cap_dgate[((size_t)n * N + t) * Hkv + j] = (float)s;
            }
    }
    const float *dv = vr_backward(m, n, N, g->dvmix, g->dV1, g->dv, g->dgate);
    if (n == 0 && c->value_residual != VR_NONE) {
        /* V1 is block 0's v: add what every later block sent back */
#pragma omp parallel for schedule(static)
        for (size_t i = 0; i < (size_t)N * kd; i++) g->dv[i] = g->dvmix[i] + g->dV1[i];
        dv = g->dv;
    }
    zero(g->dxn, (size_t)N * d);
    float *dxk, *dxv; /* MUDD: the key/value inputs have their own gradient buffers */
    xl_kv_grads(m, n, N, g->dxn, &dxk, &dxv);
    mm_backward(g->dxn, gb->wq, dq, a->xn1, b->wq, N, d, qd);
    mm_backward(dxk, gb->wk, dk, xl_attn_input(m, n, 1), b->wk, N, d, kd);
    mm_backward(dxv, gb->wv, dv, xl_attn_input(m, n, 2), b->wv, N, d, kd);
    vr_input_backward(m, n, N, g->dgate, dxv);
    if (tsa) {
        const gl_router_params *r = &m->P.router[n - 1];
        gl_router_params *gr = &m->G.router[n - 1];
        if (m->have_overrides && m->ov.route_mode != ROUTE_FREE) zero(g->dp, (size_t)N);
        if (m->cap_dp) memcpy(m->cap_dp + (size_t)n * N, g->dp, (size_t)N * sizeof(float));
        /* the paper's router reads h_in itself: its gradient joins dh, not the attention norm's */
        router_backward(tsa_paper(c) ? g->dh : g->dxn, gr->fc1_w, gr->fc1_b, gr->fc2_w, gr->fc2_b, g->dp, a->p,
                        a->r_pre, a->r_hid, route_input(m, n), r->fc1_w, r->fc2_w, g->rscratch, N, d, m->R,
                        tsa_paper(c));
    }
    if (!xl_attn_norm_backward(m, n, N, g->dxn))
        norm_backward(m, g->dh, gb->attn_norm, gb->attn_norm_bias, g->dxn, a->h_in, b->attn_norm, a->rstd1, N);
}

void model_backward(gl_model *m) {
    const gl_model_config *c = &m->cfg;
    assert(!m->sparse && m->exit_tau <= 0.0f);
    const int N = m->B * m->cur_T, d = c->d_model, L = c->n_layer, V = c->vocab_size;
    grad_bufs g;
    gl_carver cv = {m->dacts_mem, 0};
    layout_grads(m, &cv, &g);
    const float norm = m->norm_mask_sum > 0 ? (float)m->norm_mask_sum : m->mask_sum;
    if (norm <= 0.0f) return; /* nothing scored: zero gradient */
    const int ee = c->depth_routing == DR_EARLY_EXIT;
    const float inv = 1.0f / norm;

    zero(g.dres, (size_t)N * d);
    head_backward(m, &g, L - 1, m->probs, m->xnf, m->h_out, m->rstdf, (ee ? exit_weight(m, L - 1) : 1.0f) * inv,
                  g.dres, N);
    if (c->value_residual != VR_NONE) zero(g.dV1, (size_t)N * c->n_kv_head * m->hd);
    for (int n = L - 1; n >= 0; n--) {
        if (ee && n + 1 < L) {
            /* the exit head of block n reads h_{n+1} = A[n+1].h_in */
            head_backward(m, &g, n, m->exit_probs + (size_t)n * N * V, m->A[n].xnf, m->A[n + 1].h_in,
                          m->A[n].rstdf, exit_weight(m, n) * inv, g.dres, N);
        }
        xl_backward_block_out(m, g.dres, n, N); /* dense averages / MUDD mixes read after block n */
        block_backward(m, &g, n);
        xl_backward_block_in(m, g.dh, n, N);
        float *tmp = g.dres; /* the block's input gradient becomes the next dres */
        g.dres = g.dh;
        g.dh = tmp;
    }
    gl_dropout drs;
    const gl_dropout *dr = drop_of(m, &drs);
    if (dr) dropout_rows(g.dres, N, d, dr, DROP_EMBED, 0); /* the embedding sum's mask */
    /* embedding rows, in token order (serial: a token id can repeat) */
    for (int t = 0; t < N; t++) {
        float *ge = m->G.embed + (size_t)m->tokens[t] * d;
        const float *gr = g.dres + (size_t)t * d;
        for (int i = 0; i < d; i++) ge[i] += gr[i];
    }
    if (bb_gpt2(c)) /* positions: row t is position t mod T */
        for (int t = 0; t < N; t++) {
            float *gp = m->G.pos_embed + (size_t)(t % m->cur_T) * d;
            const float *gr = g.dres + (size_t)t * d;
            for (int i = 0; i < d; i++) gp[i] += gr[i];
        }
}
