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
#include "probe.h"

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

int probe_run(gl_model *m, const int *ids, long n, int attention, int sliding, gl_probecache *pc, char *err,
              size_t errlen) {
    const gl_model_config *c = &m->cfg;
    const int L = c->n_layer, Hkv = c->n_kv_head, H = c->n_head, d = c->d_model, V = c->vocab_size, T = m->T;
    const int hd = m->hd;
    const long P = n;
    float *xn = NULL, *rstd = NULL, *lg = NULL, *pr = NULL, *tl = NULL, *fl = NULL;
    double *dla_y = NULL; /* (hd) the V1 part of one head's attention output */
    int *tg = NULL;
    pc_array *ga[GATE_COUNT] = {0};
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
    pc->n_kv_head = Hkv;
    pc->seq_len = T;
    pc->tokens = malloc((size_t)P * sizeof(int));
    pc->targets = malloc((size_t)P * sizeof(int));
    const size_t N = (size_t)T; /* B = 1 */
    xn = malloc(N * d * sizeof(float));
    rstd = malloc(N * sizeof(float));
    lg = malloc(N * V * sizeof(float));
    pr = malloc(N * V * sizeof(float));
    tl = malloc(N * sizeof(float));
    fl = malloc(N * V * sizeof(float)); /* the final head's logits of this window */
    tg = malloc(N * sizeof(int));
    if (!pc->tokens || !pc->targets || !xn || !rstd || !lg || !pr || !tl || !fl || !tg) goto oom;
    for (long i = 0; i < P; i++) {
        pc->tokens[i] = ids[i];
        pc->targets[i] = i + 1 < P ? ids[i + 1] : -1;
    }

    /* the arrays: gates first (the gate table's order), then the measurements */
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
        if (!(ga[g] = probecache_add(pc, path, axes, gatekind_info[g].title, r, dims))) goto oom;
    }
    const int vg = gatekind_find(c, GABL_HEAD); /* the per-head value-residual gate, or -1 */
    long d2[2] = {L, P}, d3[3] = {L, P, Hkv}, d4[4] = {L, H, P, T};
    pc_array *rn = probecache_add(pc, "resid/norm", "layer,token", "residual-stream norm after the block (L2)", 2, d2);
    pc_array *v1 = NULL;
    if (vg >= 0 && !(v1 = probecache_add(pc, "v1/share", "layer,token,kv_head",
                                         "V1 share of the value path, |g V1| / |v + g V1|", 3, d3)))
        goto oom;
    /* direct logit attribution of the V1 path: needs the attention of every row (the soft path) and the
     * one residual stream whose linear path to the head is h_out = h + s·(a + f) */
    pc_array *dla = NULL;
    if (v1 && !m->sparse && !(m->exit_tau > 0) && !m->posthoc_exit && c->cross_layer == CL_NONE) {
        if (!(dla = probecache_add(pc, "v1/dla", "layer,token,kv_head",
                                   "direct logit attribution of the V1 path to the next token (logits)", 3, d3)) ||
            !(dla_y = malloc((size_t)hd * sizeof(double))))
            goto oom;
    }
    pc_array *kl = probecache_add(pc, "lens/kl", "layer,token", "logit lens: KL(final || lens) (nats)", 2, d2);
    pc_array *t1 = probecache_add(pc, "lens/top1", "layer,token", "logit lens: top-1 agrees with the final head (0/1)", 2, d2);
    pc_array *ll = probecache_add(pc, "lens/loss", "layer,token", "logit lens: loss on the next token (nats)", 2, d2);
    pc_array *at = NULL;
    if (!rn || !kl || !t1 || !ll) goto oom;
    if (attention && !(at = probecache_add(pc, "attn/probs", "layer,head,token,key",
                                           "attention probability (key: position in the token's window)", 4, d4)))
        goto oom;

    double loss = 0.0;
    long scored = 0;
    /* windowed: [kT, kT + T); sliding: [0, T), then for each later position i the window ending at i */
    const long n_jobs = sliding ? (P > T ? 1 + P - T : 1) : (P + T - 1) / T;
    for (long job = 0; job < n_jobs; job++) {
        const long w0 = sliding ? job : job * T;
        const int len = (int)(P - w0 < T ? P - w0 : T), t0 = sliding && job > 0 ? T - 1 : 0; /* record [t0, len) */
        for (int t = 0; t < len; t++) tg[t] = pc->targets[w0 + t];
        model_forward(m, ids + w0, tg, NULL, 1, len);
        for (int t = t0; t < len; t++)
            if (tg[t] >= 0) loss += m->tok_loss[t], scored++;
        /* gates, as the trace records them, at this window's tokens */
        for (int g = 0; g < GATE_COUNT; g++) {
            if (!ga[g]) continue;
            const int rows = (int)ga[g]->dims[0], per = gatekind_per_token((gl_gate)g);
            const int width = gatekind_width((gl_gate)g, Hkv);
            for (int r = 0; r < rows; r++) {
                const float *src = gatekind_src(m, (gl_gate)g, r);
                if (!per) {
                    if (w0 == 0)
                        for (int j = 0; j < width; j++) ga[g]->data[(size_t)r * width + j] = src ? src[j] : 0.0f;
                    continue;
                }
                for (int t = t0; t < len; t++)
                    for (int j = 0; j < width; j++)
                        ga[g]->data[pr_at(P, width, r, w0 + t, j)] = src ? src[(size_t)t * width + j] : 0.0f;
            }
        }
        /* the final head's logits, against which every block's lens is compared */
        memcpy(fl, m->logits, (size_t)len * V * sizeof(float));
        for (int n = 0; n < L; n++) {
            const float *h = n + 1 < L ? m->A[n + 1].h_in : m->h_out;
            for (int t = t0; t < len; t++) {
                double s = 0.0;
                for (int i = 0; i < d; i++) s += (double)h[(size_t)t * d + i] * h[(size_t)t * d + i];
                rn->data[pr_at(P, 1, n, w0 + t, 0)] = (float)sqrt(s);
            }
            /* the lens: the same ops as model_forward's final head */
            rmsnorm_forward(xn, rstd, h, m->P.final_norm, len, d, c->norm_eps);
            mm_forward(lg, xn, m->P.head, len, d, V);
            xent_forward(pr, tl, lg, tg, NULL, len, V);
            for (int t = t0; t < len; t++) {
                const float *lf = fl + (size_t)t * V, *lz = lg + (size_t)t * V;
                const double zf = pr_lse(lf, V), zl = pr_lse(lz, V);
                double k = 0.0;
                for (int v = 0; v < V; v++) {
                    const double lpf = lf[v] - zf, lpl = lz[v] - zl;
                    k += exp(lpf) * (lpf - lpl);
                }
                const size_t at_i = pr_at(P, 1, n, w0 + t, 0);
                kl->data[at_i] = (float)(k > 0 ? k : 0.0); /* rounding can leave −1e-17 where the two agree */
                t1->data[at_i] = pr_argmax(lz, V) == pr_argmax(lf, V) ? 1.0f : 0.0f;
                ll->data[at_i] = tg[t] >= 0 ? tl[t] : NAN;
            }
            /* the V1 share of each KV head's value path */
            if (v1) {
                const float *g = gatekind_src(m, (gl_gate)vg, n);
                const int per = gatekind_per_token((gl_gate)vg);
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
                                const double x = (double)gv * V1[i];
                                s1 += x * x;
                                s2 += (double)vm[i] * vm[i];
                            }
                            share = s2 > 0 ? (float)sqrt(s1 / s2) : (s1 > 0 ? INFINITY : 0.0f);
                        }
                        v1->data[pr_at(P, Hkv, n, w0 + t, j)] = share;
                    }
            }
            /* direct logit attribution of the V1 path of (block n, KV head j) at token t: the part of the
             * attention output that comes from g·V1, y_h = Σ_u att[h, t, u]·g_u·V1_u over the group's query
             * heads h, through Wo, the block's residual scale s (TSA: 1 − p), the final norm frozen at its
             * rstd for t and the head's row of the next token: Σ_i W[next, i]·γ_i·rstd·s·(Wo y)_i */
            if (dla) {
                const float *g = gatekind_src(m, (gl_gate)vg, n);
                const int per = gatekind_per_token((gl_gate)vg), G = H / Hkv, qd = H * hd;
                const float *Wo = m->P.layer[n].wo, *att = m->A[n].att, *V1 = m->A[0].v, *fn = m->P.final_norm;
                double *y = dla_y;
                for (int t = t0; t < len; t++)
                    for (int j = 0; j < Hkv; j++) {
                        float val = NAN;
                        if (g && tg[t] >= 0) {
                            const float *w = m->P.head + (size_t)tg[t] * d;
                            const double sc = (c->depth_routing == DR_TSA && n >= 1 ? 1.0 - m->A[n].p[t] : 1.0) *
                                              m->rstdf[t];
                            double tot = 0.0;
                            for (int h = j * G; h < (j + 1) * G; h++) {
                                for (int k = 0; k < hd; k++) y[k] = 0.0;
                                for (int u = 0; u <= t; u++) {
                                    const double wgt = (double)att[((size_t)h * len + t) * len + u] *
                                                       g[(per ? (size_t)u * Hkv : 0) + j];
                                    if (wgt == 0.0) continue;
                                    const float *v = V1 + ((size_t)u * Hkv + j) * hd;
                                    for (int k = 0; k < hd; k++) y[k] += wgt * v[k];
                                }
                                for (int i = 0; i < d; i++) {
                                    const float *wo = Wo + (size_t)i * qd + (size_t)h * hd;
                                    double o = 0.0;
                                    for (int k = 0; k < hd; k++) o += (double)wo[k] * y[k];
                                    tot += (double)w[i] * fn[i] * o;
                                }
                            }
                            val = (float)(tot * sc);
                        }
                        dla->data[pr_at(P, Hkv, n, w0 + t, j)] = val;
                    }
            }
            /* attention (1, H, len, len) → (L, H, P, T) rows of this window */
            if (at)
                for (int hh = 0; hh < H; hh++)
                    for (int t = t0; t < len; t++)
                        memcpy(at->data + (((size_t)n * H + hh) * P + w0 + t) * T,
                               m->A[n].att + ((size_t)hh * len + t) * len, (size_t)len * sizeof(float));
        }
    }
    pc->loss = scored ? loss / (double)scored : NAN;
    pc->scored = scored;
    free(xn), free(rstd), free(lg), free(pr), free(tl), free(fl), free(tg), free(dla_y);
    return 0;
oom:
    free(xn), free(rstd), free(lg), free(pr), free(tl), free(fl), free(tg), free(dla_y);
    snprintf(err, errlen, "probe: out of memory for the activation cache of %ld tokens (%d blocks, vocabulary %d)", P,
             L, V);
    return -1;
}
