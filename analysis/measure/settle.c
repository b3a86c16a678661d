/*
 * settle.c — the logit lens at the halting block (settle.h).  One forward per
 * validation window with the model's own inference path: TSA routed hard
 * (m->sparse: a skipped block copies the token's stream, so A[n].h_in of every
 * block holds every token's stream and A[n].p its router's decision), early
 * exit at full depth (every exit head on every token; the exit block is the
 * first whose confidence is >= τ, as τ-exiting inference decides: until it
 * exits a token's stream is the same in both).  The lens is the final norm
 * and head (model ops, as model_forward's final head).  Counts are exact
 * integers; nothing here depends on the thread count.
 */
#include "analysis/measure/settle.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/ops.h"
#include "store/metric.h"

static int st_argmax(const float *l, int V) {
    int b = 0;
    for (int v = 1; v < V; v++)
        if (l[v] > l[b]) b = v;
    return b;
}

int settle_measure(gl_model *m, const gl_dataset *ds, long windows, settle_result *r, char *err, size_t errlen) {
    const gl_model_config *c = &m->cfg;
    const int L = c->n_layer, T = m->T, d = c->d_model, V = c->vocab_size;
    const int tsa = c->depth_routing == DR_TSA;
    memset(r, 0, sizeof *r);
    if (!tsa && c->depth_routing != DR_EARLY_EXIT) {
        snprintf(err, errlen, "settled-at-halt needs a TSA or early-exit model (depth_routing = %s)",
                 config_depth_routing_name(c->depth_routing));
        return -1;
    }
    const long avail = data_eval_windows(ds, SPLIT_VAL);
    if (avail < 1) {
        snprintf(err, errlen, "the validation split has no window of %d tokens", T);
        return -1;
    }
    const long W = windows > 0 && windows <= avail ? windows : (avail < 64 ? avail : 64);
    int *tok = malloc((size_t)T * sizeof(int)), *tg = malloc((size_t)T * sizeof(int));
    float *mask = malloc((size_t)T * sizeof(float)), *xn = malloc((size_t)d * sizeof(float));
    float *lg = malloc((size_t)V * sizeof(float)), rstd;
    if (!tok || !tg || !mask || !xn || !lg) {
        free(tok), free(tg), free(mask), free(xn), free(lg);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    const int sparse = m->sparse;
    const float tau = m->exit_tau;
    m->sparse = tsa;
    m->exit_tau = 0.0f;
    for (long w = 0; w < W; w++) {
        data_eval_batch(ds, SPLIT_VAL, w, 1, tok, tg, mask);
        model_forward(m, tok, NULL, NULL, 1, T);
        for (int t = 0; t < T; t++) {
            r->tokens++;
            const int final = st_argmax(m->logits + (size_t)t * V, V);
            int halt = -1, lens = -1;
            if (tsa) {
                for (int n = 1; n < L && halt < 0; n++)
                    if (m->A[n].p[t] > 0.5f) halt = n;
                if (halt > 0) {
                    model_final_norm(m, xn, &rstd, m->A[halt].h_in + (size_t)t * d, 1);
                    mm_forward(lg, xn, m->P.head, 1, d, V);
                    lens = st_argmax(lg, V);
                }
            } else {
                for (int n = 0; n + 1 < L && halt < 0; n++)
                    if (m->exit_conf[(size_t)n * T + t] >= (float)SETTLE_TAU) halt = n + 1;
                if (halt > 0) lens = st_argmax(m->exit_probs + ((size_t)(halt - 1) * T + t) * V, V);
            }
            if (halt < 0) continue;
            r->halted++;
            r->block_sum += halt;
            r->settled += lens == final;
        }
    }
    m->sparse = sparse;
    m->exit_tau = tau;
    r->windows = W;
    free(tok), free(tg), free(mask), free(xn), free(lg);
    return 0;
}

int settle_metrics(const settle_result *r, long step, report_metrics *rm, char *err, size_t errlen) {
    static const char *const names[3] = {"settled_at_halt", "halted_share", "halt_block_mean"};
    const double v[3] = {r->halted > 0 ? r->settled / r->halted : NAN, r->tokens > 0 ? r->halted / r->tokens : NAN,
                         r->halted > 0 ? r->block_sum / r->halted : NAN};
    rm->prov = db_prov("val", 0, r->windows, r->tokens);
    for (int i = 0; i < 3; i++) {
        metric_key name;
        if (metric_stat(&name, names[i], METRIC_NONE, METRIC_NONE, METRIC_NONE) ||
            report_metric_add(rm, step, "analysis", &name, v[i], err, errlen))
            return -1;
    }
    return 0;
}
