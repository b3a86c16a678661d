/*
 * attrib.c — attribution patching of gates (attrib.h): one forward and one
 * backward per batch of evaluation windows, with the model keeping the
 * gates' gradients (model.h cap_dgate, cap_dp), give every (token, site)
 * its first-order estimate; the exact ΔL per site comes from the same
 * overrides ablate uses.  Which sites a model has is read from the gate
 * table (GABL_HEAD and GABL_ROUTE rows); no variant is named here.
 *
 * The batches are those of evaluate.c's eval_each_batch, the one evaluation
 * loop (ablate's windows, its missing-window rule: strict); the backward runs
 * in its after-forward hook.  Sums are in double, in window and position
 * order, so a rerun gives the same numbers.  Not here: printing and files
 * (cmd_attrib.c).
 */
#include "analysis/measure/attrib.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/gatekind.h"
#include "run/evaluate.h" /* eval_each_batch: the window / batch / forward loop */

void attrib_free(attrib_result *r) {
    if (!r) return;
    free(r->sites);
    free(r->tok);
    free(r->tok_id);
    memset(r, 0, sizeof *r);
}

void attrib_site_label(const attrib_site *s, char *out, size_t n) {
    if (gatekind_info[s->gate].ablate == GABL_ROUTE) snprintf(out, n, "router %d", s->row);
    else snprintf(out, n, "L%dH%d", s->row, s->col);
}

/* Average ranks (1-based) of x into rk. */
static void attrib_ranks(const double *x, int n, double *rk) {
    for (int i = 0; i < n; i++) {
        int less = 0, same = 0;
        for (int j = 0; j < n; j++) less += x[j] < x[i], same += x[j] == x[i];
        rk[i] = less + (same + 1) / 2.0;
    }
}

double attrib_spearman(const double *x, const double *y, int n) {
    if (n < 2) return NAN;
    double *rx = malloc((size_t)n * sizeof(double)), *ry = malloc((size_t)n * sizeof(double));
    if (!rx || !ry) {
        free(rx), free(ry);
        return NAN;
    }
    attrib_ranks(x, n, rx);
    attrib_ranks(y, n, ry);
    /* Pearson's r of the ranks (right with ties, unlike 1 − 6Σd²/(n(n²−1))) */
    double mx = 0, my = 0, sxy = 0, sxx = 0, syy = 0;
    for (int i = 0; i < n; i++) mx += rx[i], my += ry[i];
    mx /= n, my /= n;
    for (int i = 0; i < n; i++) {
        sxy += (rx[i] - mx) * (ry[i] - my);
        sxx += (rx[i] - mx) * (rx[i] - mx);
        syy += (ry[i] - my) * (ry[i] - my);
    }
    free(rx), free(ry);
    return sxx > 0 && syy > 0 ? sxy / sqrt(sxx * syy) : NAN;
}

/* The gate of c with ablation class abl (gate table), or -1 when none.  A routing gate must have one
 * row per router (GAX_ROUTER: the p whose gradient model_backward keeps in cap_dp and ROUTE_TOKEN sets). */
static int attrib_gate(const gl_model_config *c, gl_gate_ablation abl) {
    for (int g = 0; g < GATE_COUNT; g++)
        if (gatekind_info[g].ablate == abl && gatekind_has(c, (gl_gate)g) &&
            (abl != GABL_ROUTE || (gatekind_info[g].axis[0] == GAX_ROUTER && gatekind_per_token((gl_gate)g))))
            return g;
    return -1;
}

/* The exact ΔL of every site, into r->sites[].exact. */
static int attrib_exact(ablate_ctx *c, const ablate_eval *base, attrib_result *r, char *err, size_t errlen) {
    gl_model *m = c->m;
    const int L = m->cfg.n_layer, Hkv = m->cfg.n_kv_head;
    const size_t cap = (size_t)m->max_B * m->T;
    unsigned char *sel = calloc((size_t)L * Hkv, 1);
    float *tab = malloc(((size_t)(L > 1 ? L - 1 : 1) * cap) * sizeof(float));
    int rc = -1;
    if (!sel || !tab) {
        snprintf(err, errlen, "out of memory");
        goto cleanup;
    }
    for (int i = 0; i < r->n; i++) {
        attrib_site *s = &r->sites[i];
        if (gatekind_info[s->gate].ablate == GABL_HEAD) {
            ablate_result res;
            memset(sel, 0, (size_t)L * Hkv);
            sel[s->row * Hkv + s->col] = 1;
            if (ablate_run(c, ABLATE_ZERO, sel, base, &res, err, errlen)) goto cleanup;
            s->exact = res.delta;
            s->exact_se = res.delta_se;
        } else {
            ablate_eval ev;
            for (size_t k = 0; k < (size_t)(L - 1) * cap; k++) tab[k] = NAN; /* NaN: the router's own p */
            for (size_t k = 0; k < cap; k++) tab[(size_t)s->row * cap + k] = 0.0f;
            model_set_route_token_table(m, tab);
            int bad = ablate_evaluate(c, c->eval_split, c->eval_first, c->eval_windows, &ev, NULL, NULL, err, errlen);
            model_clear_overrides(m);
            if (bad) goto cleanup;
            s->exact = ev.loss - base->loss;
            s->exact_se = ablate_paired_se(&ev, base);
        }
    }
    rc = 0;
cleanup:
    free(sel);
    free(tab);
    return rc;
}

/* The attributed sites: every (block, KV head) of the per-head gate hg where the block
 * has one, then every router rg (blocks 1..L-1).  Counts them when sites is NULL. */
static int attrib_list_sites(const gl_model *m, int hg, int rg, attrib_site *sites) {
    const int L = m->cfg.n_layer, Hkv = m->cfg.n_kv_head;
    int k = 0;
    if (hg >= 0)
        for (int n = 0; n < L; n++)
            if (gatekind_src(m, (gl_gate)hg, n))
                for (int j = 0; j < Hkv; j++) {
                    if (sites) sites[k] = (attrib_site){hg, n, j, 0, 0, 0};
                    k++;
                }
    if (rg >= 0)
        for (int l = 0; l + 1 < L; l++) {
            if (sites) sites[k] = (attrib_site){rg, l, 0, 0, 0, 0};
            k++;
        }
    return k;
}

/* One batch's gradient × gate products (N rows, weighted by its scored count, so that
 * dividing by the total gives the mean over every scored token): per site into acc,
 * per position p0 + t into tacc.  cdg, cdp: the captured dL/dgate and dL/dp. */
static void attrib_accumulate(const gl_model *m, const attrib_result *r, int hg, int rg, int N, double scored,
                              long p0, const float *cdg, const float *cdp, double *acc, double *tacc) {
    const int Hkv = m->cfg.n_kv_head;
    for (int s = 0; s < r->n; s++) {
        const attrib_site *st = &r->sites[s];
        double sum = 0.0;
        if (st->gate == hg) {
            const float *g = gatekind_src(m, (gl_gate)hg, st->row);
            const int per = gatekind_per_token((gl_gate)hg);
            for (int t = 0; t < N; t++) {
                const double a = -(double)g[(per ? (size_t)t * Hkv : 0) + st->col] *
                                 cdg[((size_t)st->row * N + t) * Hkv + st->col] * scored;
                sum += a;
                tacc[p0 + t] += a;
            }
        } else {
            const float *p = gatekind_src(m, (gl_gate)rg, st->row); /* A[l+1].p */
            for (int t = 0; t < N; t++) {
                const double a = -(double)p[t] * cdp[(size_t)(st->row + 1) * N + t] * scored;
                sum += a;
                tacc[p0 + t] += a;
            }
        }
        acc[s] += sum;
    }
}

/* One gradient pass: what attrib_batch reads and adds to. */
typedef struct {
    ablate_ctx *c;
    attrib_result *r;
    int hg, rg;
    const float *cdg, *cdp;
    double *acc, *tacc, total;
} attrib_pass;

/* After a batch's forward (eval_each_batch): the backward of its task loss and
 * the batch's gradient × gate products; off is its first window from eval_first. */
static int attrib_batch(void *ctx, long off, int got, char *err, size_t errlen) {
    attrib_pass *p = ctx;
    gl_model *m = p->c->m;
    const int T = m->T, N = got * T;
    const double scored = m->mask_sum; /* the batch mean's denominator */
    p->total += scored;
    if (scored <= 0) return 0;
    model_zero_grad(m);
    model_backward(m);
    const long p0 = off * T;
    for (int t = 0; t < N; t++) p->r->tok_id[p0 + t] = p->c->tok[t];
    attrib_accumulate(m, p->r, p->hg, p->rg, N, scored, p0, p->cdg, p->cdp, p->acc, p->tacc);
    return 0;
}

/* One forward and backward per batch of the evaluation windows (eval_each_batch,
 * strict: every window must be there), the task loss only (tsa_lambda 0 for the
 * pass, restored after), capturing the gates' gradients into cdg, cdp and
 * accumulating into acc, tacc; *total: the scored tokens. */
static int attrib_gradient_pass(ablate_ctx *c, attrib_result *r, int hg, int rg, float *cdg, float *cdp,
                                double *acc, double *tacc, double *total, char *err, size_t errlen) {
    gl_model *m = c->m;
    gl_model_config *mc = &m->cfg;
    const float lambda = mc->tsa_lambda;
    mc->tsa_lambda = 0.0f;
    model_clear_overrides(m);
    m->cap_dgate = cdg;
    m->cap_dp = cdp;
    attrib_pass p = {.c = c, .r = r, .hg = hg, .rg = rg, .cdg = cdg, .cdp = cdp, .acc = acc, .tacc = tacc};
    const eval_buffers buf = {c->tok, c->tg, c->mask};
    const int rc = eval_each_batch(m, c->ds, c->eval_split, c->eval_first, c->eval_windows, 1, &buf, NULL,
                                   attrib_batch, &p, err, errlen);
    *total = p.total;
    m->cap_dgate = NULL;
    m->cap_dp = NULL;
    mc->tsa_lambda = lambda;
    model_zero_grad(m);
    return rc;
}

/* Spearman's ρ between the gradient attribution and the exact ΔL over the sites (NaN
 * when out of memory for the ranks). */
static double attrib_agreement(const attrib_result *r) {
    const int ns = r->n;
    double rho = NAN, *x = malloc((size_t)ns * sizeof(double)), *y = malloc((size_t)ns * sizeof(double));
    if (x && y) {
        for (int s = 0; s < ns; s++) x[s] = r->sites[s].attrib, y[s] = r->sites[s].exact;
        rho = attrib_spearman(x, y, ns);
    }
    free(x), free(y);
    return rho;
}

int attrib_run(ablate_ctx *c, attrib_result *r, char *err, size_t errlen) {
    gl_model *m = c->m;
    gl_model_config *mc = &m->cfg;
    const int L = mc->n_layer, Hkv = mc->n_kv_head, T = m->T;
    memset(r, 0, sizeof *r);
    if (mc->depth_routing == DR_EARLY_EXIT) {
        snprintf(err, errlen, "--attribution: an early-exit model's loss weights every exit head, so its gradient "
                              "is not that of the final head's loss the exact ΔL measures; use `ablate --mode exit`");
        return -1;
    }
    const int hg = attrib_gate(mc, GABL_HEAD), rg = attrib_gate(mc, GABL_ROUTE);
    const size_t cap = (size_t)m->max_B * T;
    const int ns = attrib_list_sites(m, hg, rg, NULL);
    if (!ns) {
        snprintf(err, errlen, "--attribution: the run has no per-head gate and no router (model.value_residual = %s, "
                 "depth_routing = %s)", config_value_residual_name(mc->value_residual),
                 config_depth_routing_name(mc->depth_routing));
        return -1;
    }
    r->positions = c->eval_windows * T;
    r->sites = calloc((size_t)ns, sizeof *r->sites);
    r->tok = calloc((size_t)r->positions, sizeof(float));
    r->tok_id = calloc((size_t)r->positions, sizeof(int));
    double *acc = calloc((size_t)ns, sizeof(double)), *tacc = calloc((size_t)r->positions, sizeof(double));
    float *cdg = malloc(((size_t)L * cap * Hkv) * sizeof(float)), *cdp = malloc(((size_t)L * cap) * sizeof(float));
    if (!r->sites || !r->tok || !r->tok_id || !acc || !tacc || !cdg || !cdp) {
        free(acc), free(tacc), free(cdg), free(cdp);
        attrib_free(r);
        snprintf(err, errlen, "out of memory for the attribution of %d sites on %ld positions", ns, r->positions);
        return -1;
    }
    r->n = attrib_list_sites(m, hg, rg, r->sites);

    double total = 0.0;
    int rc = attrib_gradient_pass(c, r, hg, rg, cdg, cdp, acc, tacc, &total, err, errlen);
    ablate_eval base;
    if (!rc && total <= 0) {
        snprintf(err, errlen, "no scored token in the evaluation windows %s", c->eval_desc);
        rc = -1;
    }
    if (!rc) rc = ablate_baseline(c, &base, NULL, err, errlen);
    if (!rc) {
        for (int s = 0; s < ns; s++) r->sites[s].attrib = acc[s] / total;
        for (long i = 0; i < r->positions; i++) r->tok[i] = (float)(tacc[i] / total);
        r->base_loss = base.loss;
        r->tokens = base.tokens;
        rc = attrib_exact(c, &base, r, err, errlen);
    }
    if (!rc) r->rho = attrib_agreement(r);
    free(acc), free(tacc), free(cdg), free(cdp);
    if (rc) attrib_free(r);
    return rc;
}
