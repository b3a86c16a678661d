/*
 * probe.c — one forward of a trained model on any tokens, kept as an
 * activation cache (probe.h; file layout in docs/files.md "probe cache").
 *
 * Everything is read from the activations the forward pass keeps (model.h
 * gl_block_acts): the gates through the gate table (gatekind_src), the
 * residual streams A[n+1].h_in and h_out, the values v and vmix, V1 = A[0].v,
 * the attention probabilities.  The only new arithmetic is the logit lens,
 * which runs the model's own final norm and head (the ops of model.c's final
 * head, in the same order) on each block's stream: at the last block it is
 * the final head itself, so its loss is the model's to the last bit.
 *
 * The lens follows nostalgebraist's "logit lens" (2020) as TransformerLens
 * computes it (accumulated residual → ln_final → unembed); the V1 share is
 * the norm ratio ‖α·V1‖ / ‖v + α·V1‖ of the value path the gate feeds
 * (docs/analysis.md "probe").  Not here: tokenising, file I/O, rendering.
 */
#include "analysis/measure/probe.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/gatekind.h"
#include "model/ops.h"

/* Index of per-token rows in pc arrays of shape (rows, P[, width]). */
static size_t pr_at(long P, int width, int row, long tok, int j) {
    return ((size_t)row * P + tok) * width + j;
}

/* log Σ exp(l) in double (the lens' log-softmax normaliser). */
static double pr_lse(const float *l, int V) {
    float mx = l[0];
    for (int v = 1; v < V; v++) mx = l[v] > mx ? l[v] : mx;
    double s = 0.0;
    for (int v = 0; v < V; v++) s += exp((double)l[v] - mx);
    return mx + log(s);
}

static int pr_argmax(const float *l, int V) {
    int b = 0;
    for (int v = 1; v < V; v++)
        if (l[v] > l[b]) b = v;
    return b;
}

/* One probe: the model, its sizes, the lens' scratch (one window of B = 1) and
 * the cache arrays being filled (NULL where the model or the flags leave one out). */
typedef struct {
    gl_model *m;
    const gl_model_config *c;
    int L, H, Hkv, d, V, T, hd;
    long P;
    int vg; /* the per-head value-residual gate, or -1 */
    float *xn, *rstd, *lg, *pr, *tl, *fl; /* (T, d), (T), (T, V) ×2, (T), (T, V) final head's logits */
    double *dla_y;                        /* (hd) the V1 part of one head's attention output */
    int *tg;                              /* (T) the window's targets */
    pc_array *ga[GATE_COUNT], *rn, *v1, *dla, *kl, *t1, *ll, *at;
} pr_ctx;

/* The cache's arrays: gates first (the gate table's order), then the measurements.
 * -1 when out of memory. */
static int pr_add_arrays(pr_ctx *x, gl_probecache *pc, int attention) {
    const gl_model_config *c = x->c;
    const int L = x->L, H = x->H, Hkv = x->Hkv, T = x->T;
    const long P = x->P;
    for (int g = 0; g < GATE_COUNT; g++) {
        if (!gatekind_has(c, (gl_gate)g)) continue;
        long dims[3];
        int r = gatekind_dims((gl_gate)g, L, Hkv, P, dims);
        char path[64], axes[64] = "";
        snprintf(path, sizeof path, "%s/%s", gatekind_info[g].group, gatekind_info[g].dataset);
        for (int k = 0; k < 3; k++)
            if (gatekind_info[g].axis[k] != GAX_NONE)
                snprintf(axes + strlen(axes), sizeof axes - strlen(axes), "%s%s", axes[0] ? "," : "",
                         gatekind_axis_name(gatekind_info[g].axis[k]));
        if (!(x->ga[g] = probecache_add(pc, path, axes, gatekind_info[g].title, r, dims))) return -1;
    }
    x->vg = gatekind_find(c, GABL_HEAD);
    long d2[2] = {L, P}, d3[3] = {L, P, Hkv}, d4[4] = {L, H, P, T};
    x->rn = probecache_add(pc, "resid/norm", "layer,token", "residual-stream norm after the block (L2)", 2, d2);
    if (x->vg >= 0 && !(x->v1 = probecache_add(pc, "v1/share", "layer,token,kv_head",
                                               "V1 share of the value path, |g V1| / |v + g V1|", 3, d3)))
        return -1;
    /* direct logit attribution of the V1 path: needs the attention of every row (the soft path) and the
     * one residual stream whose linear path to the head is h_out = h + s·(a + f) */
    const gl_model *m = x->m;
    if (x->v1 && !m->sparse && !(m->exit_tau > 0) && !m->posthoc_exit && c->cross_layer == CL_NONE) {
        if (!(x->dla = probecache_add(pc, "v1/dla", "layer,token,kv_head",
                                      "direct logit attribution of the V1 path to the next token (logits)", 3, d3)) ||
            !(x->dla_y = malloc((size_t)x->hd * sizeof(double))))
            return -1;
    }
    x->kl = probecache_add(pc, "lens/kl", "layer,token", "logit lens: KL(final || lens) (nats)", 2, d2);
    x->t1 = probecache_add(pc, "lens/top1", "layer,token", "logit lens: top-1 agrees with the final head (0/1)", 2, d2);
    x->ll = probecache_add(pc, "lens/loss", "layer,token", "logit lens: loss on the next token (nats)", 2, d2);
    if (!x->rn || !x->kl || !x->t1 || !x->ll) return -1;
    if (attention && !(x->at = probecache_add(pc, "attn/probs", "layer,head,token,key",
                                              "attention probability (key: position in the token's window)", 4, d4)))
        return -1;
    return 0;
}

/* Gates, as the trace records them, at tokens [t0, len) of the window starting at w0. */
static void pr_record_gates(pr_ctx *x, long w0, int t0, int len) {
    for (int g = 0; g < GATE_COUNT; g++) {
        pc_array *ga = x->ga[g];
        if (!ga) continue;
        const int rows = (int)ga->dims[0], per = gatekind_per_token((gl_gate)g);
        const int width = gatekind_width((gl_gate)g, x->Hkv);
        for (int r = 0; r < rows; r++) {
            const float *src = gatekind_src(x->m, (gl_gate)g, r);
            if (!per) {
                if (w0 == 0)
                    for (int j = 0; j < width; j++) ga->data[(size_t)r * width + j] = src ? src[j] : 0.0f;
                continue;
            }
            for (int t = t0; t < len; t++)
                for (int j = 0; j < width; j++)
                    ga->data[pr_at(x->P, width, r, w0 + t, j)] = src ? src[(size_t)t * width + j] : 0.0f;
        }
    }
}

/* Block n's stream h (len, d): its norm, and the logit lens through the same ops
 * as model_forward's final head, against the final head's logits x->fl. */
static void pr_record_lens(pr_ctx *x, int n, const float *h, long w0, int t0, int len) {
    const gl_model *m = x->m;
    const int d = x->d, V = x->V;
    for (int t = t0; t < len; t++) {
        double s = 0.0;
        for (int i = 0; i < d; i++) s += (double)h[(size_t)t * d + i] * h[(size_t)t * d + i];
        x->rn->data[pr_at(x->P, 1, n, w0 + t, 0)] = (float)sqrt(s);
    }
    model_final_norm(m, x->xn, x->rstd, h, len);
    mm_forward(x->lg, x->xn, m->P.head, len, d, V);
    xent_forward(x->pr, x->tl, x->lg, x->tg, NULL, len, V);
    for (int t = t0; t < len; t++) {
        const float *lf = x->fl + (size_t)t * V, *lz = x->lg + (size_t)t * V;
        const double zf = pr_lse(lf, V), zl = pr_lse(lz, V);
        double k = 0.0;
        for (int v = 0; v < V; v++) {
            const double lpf = lf[v] - zf, lpl = lz[v] - zl;
            k += exp(lpf) * (lpf - lpl);
        }
        const size_t at_i = pr_at(x->P, 1, n, w0 + t, 0);
        x->kl->data[at_i] = (float)(k > 0 ? k : 0.0); /* rounding can leave −1e-17 where the two agree */
        x->t1->data[at_i] = pr_argmax(lz, V) == pr_argmax(lf, V) ? 1.0f : 0.0f;
        x->ll->data[at_i] = x->tg[t] >= 0 ? x->tl[t] : NAN;
    }
}

/* The V1 share of each KV head's value path in block n. */
static void pr_record_v1_share(pr_ctx *x, int n, long w0, int t0, int len) {
    const gl_model *m = x->m;
    const int Hkv = x->Hkv, hd = x->hd;
    const float *g = gatekind_src(m, (gl_gate)x->vg, n);
    const int per = gatekind_per_token((gl_gate)x->vg);
    const gl_block_acts *a = &m->A[n];
    for (int t = t0; t < len; t++)
        for (int j = 0; j < Hkv; j++) {
            float share = NAN;
            if (g) {
                const float gv = g[(per ? (size_t)t * Hkv : 0) + j];
                const float *V1 = m->A[0].v + ((size_t)t * Hkv + j) * hd;
                const float *vm = a->vmix + ((size_t)t * Hkv + j) * hd;
                double s1 = 0.0, s2 = 0.0;
                for (int i = 0; i < hd; i++) {
                    const double v = (double)gv * V1[i];
                    s1 += v * v;
                    s2 += (double)vm[i] * vm[i];
                }
                share = s2 > 0 ? (float)sqrt(s1 / s2) : (s1 > 0 ? INFINITY : 0.0f);
            }
            x->v1->data[pr_at(x->P, Hkv, n, w0 + t, j)] = share;
        }
}

/* Direct logit attribution of the V1 path of (block n, KV head j) at token t: the part of the
 * attention output that comes from g·V1, y_h = Σ_u att[h, t, u]·g_u·V1_u over the group's query
 * heads h, through Wo, the block's residual scale s (TSA: 1 − p), the final norm frozen at its
 * rstd for t and the head's row of the next token: Σ_i W[next, i]·γ_i·rstd·s·(Wo y)_i */
static void pr_record_dla(pr_ctx *x, int n, long w0, int t0, int len) {
    const gl_model *m = x->m;
    const gl_model_config *c = x->c;
    const int H = x->H, Hkv = x->Hkv, hd = x->hd, d = x->d;
    const float *g = gatekind_src(m, (gl_gate)x->vg, n);
    const int per = gatekind_per_token((gl_gate)x->vg), G = H / Hkv, qd = H * hd;
    const float *Wo = m->P.layer[n].wo, *att = m->A[n].att, *V1 = m->A[0].v, *fn = m->P.final_norm;
    double *y = x->dla_y;
    for (int t = t0; t < len; t++)
        for (int j = 0; j < Hkv; j++) {
            float val = NAN;
            if (g && x->tg[t] >= 0) {
                const float *w = m->P.head + (size_t)x->tg[t] * d;
                const double sc = (c->depth_routing == DR_TSA && n >= 1 ? 1.0 - m->A[n].p[t] : 1.0) * m->rstdf[t];
                /* gpt2's LayerNorm sees a component c as (c − mean(c))·rstd·γ: with S1 = Σ w γ o,
                 * S2 = Σ o and Gw = Σ w γ, the centred sum is S1 − (S2/d)·Gw */
                const int ln = bb_gpt2(c);
                double tot = 0.0, s2 = 0.0, gw = 0.0;
                if (ln)
                    for (int i = 0; i < d; i++) gw += (double)w[i] * fn[i];
                for (int h = j * G; h < (j + 1) * G; h++) {
                    for (int k = 0; k < hd; k++) y[k] = 0.0;
                    for (int u = 0; u <= t; u++) {
                        const double wgt = (double)att[((size_t)h * len + t) * len + u] * g[(per ? (size_t)u * Hkv : 0) + j];
                        if (wgt == 0.0) continue;
                        const float *v = V1 + ((size_t)u * Hkv + j) * hd;
                        for (int k = 0; k < hd; k++) y[k] += wgt * v[k];
                    }
                    for (int i = 0; i < d; i++) {
                        const float *wo = Wo + (size_t)i * qd + (size_t)h * hd;
                        double o = 0.0;
                        for (int k = 0; k < hd; k++) o += (double)wo[k] * y[k];
                        tot += (double)w[i] * fn[i] * o;
                        s2 += o;
                    }
                }
                if (ln) tot -= s2 / d * gw;
                val = (float)(tot * sc);
            }
            x->dla->data[pr_at(x->P, Hkv, n, w0 + t, j)] = val;
        }
}

/* Block n's attention (1, H, len, len) → rows of this window in (L, H, P, T). */
static void pr_record_attention(pr_ctx *x, int n, long w0, int t0, int len) {
    for (int hh = 0; hh < x->H; hh++)
        for (int t = t0; t < len; t++)
            memcpy(x->at->data + (((size_t)n * x->H + hh) * x->P + w0 + t) * x->T,
                   x->m->A[n].att + ((size_t)hh * len + t) * len, (size_t)len * sizeof(float));
}

static void pr_free_scratch(pr_ctx *x) {
    free(x->xn), free(x->rstd), free(x->lg), free(x->pr), free(x->tl), free(x->fl), free(x->tg), free(x->dla_y);
}

int probe_run(gl_model *m, const int *ids, long n, int attention, int sliding, gl_probecache *pc, char *err,
              size_t errlen) {
    const gl_model_config *c = &m->cfg;
    pr_ctx x = {.m = m, .c = c, .L = c->n_layer, .H = c->n_head, .Hkv = c->n_kv_head, .d = c->d_model,
                .V = c->vocab_size, .T = m->T, .hd = m->hd, .P = n, .vg = -1};
    const int L = x.L, H = x.H, d = x.d, V = x.V, T = x.T;
    const long P = n;
    if (n < 1) {
        snprintf(err, errlen, "nothing to probe: the text has no token");
        return -1;
    }
    if (attention && (double)L * H * P * T > (double)PROBE_ATTN_MAX) {
        snprintf(err, errlen, "--attention: %d blocks × %d heads × %ld tokens × %d keys is more than %ld floats; "
                 "probe a shorter text (at most %ld tokens) or drop --attention", L, H, P, T, PROBE_ATTN_MAX,
                 PROBE_ATTN_MAX / ((long)L * H * T));
        return -1;
    }
    pc->n_tok = P;
    pc->n_layer = L;
    pc->n_head = H;
    pc->n_kv_head = x.Hkv;
    pc->seq_len = T;
    pc->tokens = malloc((size_t)P * sizeof(int));
    pc->targets = malloc((size_t)P * sizeof(int));
    const size_t N = (size_t)T; /* B = 1 */
    x.xn = malloc(N * d * sizeof(float));
    x.rstd = malloc(N * sizeof(float));
    x.lg = malloc(N * V * sizeof(float));
    x.pr = malloc(N * V * sizeof(float));
    x.tl = malloc(N * sizeof(float));
    x.fl = malloc(N * V * sizeof(float));
    x.tg = malloc(N * sizeof(int));
    if (!pc->tokens || !pc->targets || !x.xn || !x.rstd || !x.lg || !x.pr || !x.tl || !x.fl || !x.tg) goto oom;
    for (long i = 0; i < P; i++) {
        pc->tokens[i] = ids[i];
        pc->targets[i] = i + 1 < P ? ids[i + 1] : -1;
    }
    if (pr_add_arrays(&x, pc, attention)) goto oom;

    double loss = 0.0;
    long scored = 0;
    /* windowed: [kT, kT + T); sliding: [0, T), then for each later position i the window ending at i */
    const long n_jobs = sliding ? (P > T ? 1 + P - T : 1) : (P + T - 1) / T;
    for (long job = 0; job < n_jobs; job++) {
        const long w0 = sliding ? job : job * T;
        const int len = (int)(P - w0 < T ? P - w0 : T), t0 = sliding && job > 0 ? T - 1 : 0; /* record [t0, len) */
        for (int t = 0; t < len; t++) x.tg[t] = pc->targets[w0 + t];
        model_forward(m, ids + w0, x.tg, NULL, 1, len);
        for (int t = t0; t < len; t++)
            if (x.tg[t] >= 0) loss += m->tok_loss[t], scored++;
        pr_record_gates(&x, w0, t0, len);
        /* the final head's logits, against which every block's lens is compared */
        memcpy(x.fl, m->logits, (size_t)len * V * sizeof(float));
        for (int b = 0; b < L; b++) {
            pr_record_lens(&x, b, b + 1 < L ? m->A[b + 1].h_in : m->h_out, w0, t0, len);
            if (x.v1) pr_record_v1_share(&x, b, w0, t0, len);
            if (x.dla) pr_record_dla(&x, b, w0, t0, len);
            if (x.at) pr_record_attention(&x, b, w0, t0, len);
        }
    }
    pc->loss = scored ? loss / (double)scored : NAN;
    pc->scored = scored;
    pr_free_scratch(&x);
    return 0;
oom:
    pr_free_scratch(&x);
    snprintf(err, errlen, "probe: out of memory for the activation cache of %ld tokens (%d blocks, vocabulary %d)", P,
             L, V);
    return -1;
}
