/*
 * paper.c — the claims of the TSA and SATFormer papers against our runs, and
 * the report that sets them side by side (paper.h).
 *
 * A claim is a function of the collected runs.  Comparisons are paired by
 * seed: a TSA, SATFormer or early-exit run is set against the run of the same
 * data, scale, budget and seed that differs only in the variant.  The
 * interval is the 95 % Student t interval of the mean paired difference over
 * seeds (n − 1 degrees of freedom); with one seed there is no interval and the
 * verdict is at best inconclusive.  The verdict rule of each claim is printed
 * in its row, decided before any run of the `local` preset was looked at, and
 * is never adjusted to make a claim pass.
 *
 * Not here: running anything (the post stage of `gatelab paper` records the
 * whole-split evaluations, matched-α early exit, ablations and analyses this
 * file reads), figures (figures.c draws them per experiment).
 */
#include "paper.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "paper_fig.h"
#include "plan.h"
#include "store/categories.h"
#include "store/fileio.h"
#include "store/metric.h"
#include "report.h"

/* ---- statistics ---- */

double paper_t95(int df) { return tables_t95(df); }

typedef struct {
    double mean, sd, lo, hi; /* lo, hi: 95 % interval of the mean (NaN when n < 2) */
    int n;
} pstat;

static pstat st_of(const double *x, int n) {
    pstat s = {NAN, NAN, NAN, NAN, 0};
    double sum = 0, q = 0;
    for (int i = 0; i < n; i++)
        if (!isnan(x[i])) sum += x[i], s.n++;
    if (!s.n) return s;
    s.mean = sum / s.n;
    for (int i = 0; i < n; i++)
        if (!isnan(x[i])) q += (x[i] - s.mean) * (x[i] - s.mean);
    if (s.n > 1) {
        s.sd = sqrt(q / (s.n - 1));
        double h = paper_t95(s.n - 1) * s.sd / sqrt(s.n);
        s.lo = s.mean - h;
        s.hi = s.mean + h;
    }
    return s;
}

/* ---- collecting ---- */

static double pc_last(gl_db *db, const char *run, const char *split, const char *name, int *fail, char *err,
                      size_t errlen) {
    double v = NAN;
    int rc = db_metric_last(db, run, split, name, &v, NULL, err, errlen);
    if (rc < 0) *fail = 1;
    return rc == 1 ? v : NAN;
}

static long pc_param_long(gl_db *db, const char *run, const char *key, int *fail, char *err, size_t errlen) {
    char v[64] = "";
    if (db_param_get(db, run, key, v, sizeof v, err, errlen) < 0) *fail = 1;
    return v[0] ? atol(v) : 0;
}

/* Gini coefficient of x[0..n) (non-negative values): 0 spread evenly, → 1 all on one. */
static double pc_gini(double *x, int n) {
    if (n < 2) return NAN;
    for (int i = 1; i < n; i++) /* insertion sort: n is (L−1)·Hkv, small */
        for (int j = i; j > 0 && x[j - 1] > x[j]; j--) {
            double t = x[j];
            x[j] = x[j - 1];
            x[j - 1] = t;
        }
    double s = 0, w = 0;
    for (int i = 0; i < n; i++) s += x[i], w += (2.0 * (i + 1) - n - 1) * x[i];
    return s > 0 ? w / (n * s) : NAN;
}

/* SATFormer gate statistics from the analysis rows of the last traced step. */
static void pc_gates(gl_db *db, paper_run *p, int *fail, char *err, size_t errlen) {
    const char *id = p->t.run_id;
    int L = (int)pc_param_long(db, id, "model.n_layer", fail, err, errlen);
    int H = (int)pc_param_long(db, id, "model.n_kv_head", fail, err, errlen);
    double early = 0, late = 0, sem = 0, oth = 0, heads[4096];
    int ne = 0, nl = 0, nh = 0, nsem = 0;
    const int first_late = 1 + (L - 1) / 2; /* blocks 1..L−1; the later half starts here */
    char name[METRIC_NAME_MAX];
    for (int n = 1; n < L && !*fail; n++) {
        metric_stat(name, sizeof name, "alpha_mean", n, METRIC_NONE, METRIC_NONE);
        double a = pc_last(db, id, "analysis", name, fail, err, errlen);
        if (isnan(a)) continue;
        if (n >= first_late) late += a, nl++;
        else early += a, ne++;
        if (n >= first_late) {
            double c[3];
            const int cat[3] = {CAT_SEMANTIC, CAT_STRUCTURAL, CAT_FUNCTIONAL};
            for (int k = 0; k < 3; k++) {
                metric_stat(name, sizeof name, "alpha_mean", n, METRIC_NONE, cat[k]);
                c[k] = pc_last(db, id, "analysis", name, fail, err, errlen);
            }
            if (!isnan(c[0]) && !isnan(c[1]) && !isnan(c[2])) sem += c[0], oth += 0.5 * (c[1] + c[2]), nsem++;
        }
        for (int h = 0; h < H && nh < 4096; h++) {
            metric_stat(name, sizeof name, "alpha_mean", n, h, METRIC_NONE);
            double v = pc_last(db, id, "analysis", name, fail, err, errlen);
            if (!isnan(v)) heads[nh++] = v;
        }
    }
    p->early_alpha = ne ? early / ne : NAN;
    p->late_alpha = nl ? late / nl : NAN;
    p->late_sem = nsem ? sem / nsem : NAN;
    p->late_other = nsem ? oth / nsem : NAN;
    p->head_gini = pc_gini(heads, nh);
}

static int cmp_dbl(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Seconds a run spent training: the sum of the gaps between its logged
 * training losses, leaving out any gap over 20 times the median gap (the run
 * lay stopped there and was resumed later, e.g. in the next session).  NAN
 * with fewer than two points. */
static double pc_training_seconds(const gl_metric_point *pts, int np) {
    if (np < 2) return NAN;
    double *gap = malloc((size_t)(np - 1) * sizeof *gap), *sorted = malloc((size_t)(np - 1) * sizeof *sorted);
    double sum = NAN;
    if (gap && sorted) {
        for (int k = 1; k < np; k++) gap[k - 1] = sorted[k - 1] = pts[k].wall_time - pts[k - 1].wall_time;
        qsort(sorted, (size_t)(np - 1), sizeof *sorted, cmp_dbl);
        double med = sorted[(np - 1) / 2];
        sum = 0;
        for (int k = 0; k < np - 1; k++)
            if (gap[k] <= 20 * med) sum += gap[k];
    }
    free(gap);
    free(sorted);
    return sum;
}

static void pc_wall(gl_db *db, paper_run *p, int *fail, char *err, size_t errlen) {
    gl_metric_point *pts = NULL;
    int np = 0;
    if (db_metric_series(db, p->t.run_id, "train", "loss", &pts, &np, err, errlen)) *fail = 1;
    p->wall_s = pc_training_seconds(pts, np);
    p->t0 = np ? pts[0].wall_time : NAN;
    p->t1 = np ? pts[np - 1].wall_time : NAN;
    free(pts);
}

static void pc_one(gl_db *db, paper_run *p, int *fail, char *err, size_t errlen) {
    const char *id = p->t.run_id;
    const struct {
        const char *key;
        char *dst;
    } want[] = {{"model.value_residual", p->value}, {"model.depth_routing", p->depth}, {"model.cross_layer", p->cross}};
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++)
        if (db_param_get(db, id, want[k].key, want[k].dst, sizeof p->value, err, errlen) < 0) *fail = 1;
    p->steps = pc_param_long(db, id, "train.steps", fail, err, errlen);
    p->batch = pc_param_long(db, id, "train.batch_size", fail, err, errlen);
    p->seq_len = pc_param_long(db, id, "model.seq_len", fail, err, errlen);
    gl_metric_val hv;
    int hk = db_metric_at(db, id, "val", "final.loss", NULL, &hv, err, errlen);
    if (hk < 0) *fail = 1;
    memset(&p->loss_prov, 0, sizeof p->loss_prov);
    p->loss_step = hk == 1 ? hv.step : -1;
    if (hk == 1) p->loss_prov = hv.prov;
    p->loss = pc_last(db, id, "val", "final.loss", fail, err, errlen);
    p->loss_se = pc_last(db, id, "val", "final.loss_se", fail, err, errlen);
    p->alpha = pc_last(db, id, "val", "final.active_frac", fail, err, errlen);
    p->tlops = pc_last(db, id, "val", "final.tlops_saved", fail, err, errlen);
    p->tok_acc = pc_last(db, id, "val", "final.token_acc", fail, err, errlen);
    p->seq_acc = pc_last(db, id, "val", "final.seq_acc", fail, err, errlen);
    p->m_loss = pc_last(db, id, "val", "matched.loss", fail, err, errlen);
    p->m_alpha = pc_last(db, id, "val", "matched.active_frac", fail, err, errlen);
    p->m_tau = pc_last(db, id, "val", "matched.tau", fail, err, errlen);
    p->m_target = pc_last(db, id, "val", "matched.alpha_target", fail, err, errlen);
    p->m_tlops = pc_last(db, id, "val", "matched.tlops_saved", fail, err, errlen);
    char name[METRIC_NAME_MAX];
    metric_ablation(name, sizeof name, "zero", METRIC_LABEL_ALL, "delta_loss", METRIC_NONE);
    p->zero_dl = pc_last(db, id, "ablation", name, fail, err, errlen);
    memset(&p->zero_prov, 0, sizeof p->zero_prov);
    if (!isnan(p->zero_dl)) {
        gl_metric_val zv;
        int zk = db_metric_at(db, id, "ablation", name, NULL, &zv, err, errlen);
        if (zk < 0) *fail = 1;
        if (zk == 1) p->zero_prov = zv.prov;
    }
    metric_ablation(name, sizeof name, "mean", METRIC_LABEL_ALL, "delta_loss", METRIC_NONE);
    p->mean_dl = pc_last(db, id, "ablation", name, fail, err, errlen);
    p->train_tps = p->t.tokens_per_s;
    pc_wall(db, p, fail, err, errlen);
    if (!strcmp(p->value, "satformer")) pc_gates(db, p, fail, err, errlen);
    else p->early_alpha = p->late_alpha = p->late_sem = p->late_other = p->head_gini = NAN;
}

int paper_collect(gl_db *db, paper_run **runs, int *n, char *err, size_t errlen) {
    tables_run *t = NULL;
    int nt = 0, fail = 0;
    *runs = NULL;
    *n = 0;
    if (tables_collect(db, NULL, &t, &nt, err, errlen)) return -1;
    paper_run *p = calloc((size_t)(nt > 0 ? nt : 1), sizeof *p);
    if (!p) {
        free(t);
        snprintf(err, errlen, "out of memory for %d runs", nt);
        return -1;
    }
    int np = 0; /* the plan's runs (experiments paper-GROUP); cost-paper* and others are not trained runs */
    for (int i = 0; i < nt && !fail; i++) {
        if (strncmp(t[i].experiment, "paper-", 6) != 0) continue;
        p[np].t = t[i];
        pc_one(db, &p[np++], &fail, err, errlen);
    }
    free(t);
    if (fail) {
        free(p);
        return -1;
    }
    *runs = p;
    *n = np;
    return 0;
}

/* ---- finding runs ---- */

/* What selects a set of runs: NULL / NaN fields match anything. */
typedef struct {
    const char *data, *scale, *value, *depth, *cross;
    double lambda;
} pick;

static int pk_match(const paper_run *r, const pick *k) {
    return (!k->data || !strcmp(r->t.data, k->data)) && (!k->scale || !strcmp(r->t.scale, k->scale)) &&
           (!k->value || !strcmp(r->value, k->value)) && (!k->depth || !strcmp(r->depth, k->depth)) &&
           (!k->cross || !strcmp(r->cross, k->cross)) &&
           (isnan(k->lambda) || fabs(r->t.lambda - k->lambda) < 1e-9);
}

/* The run matching k with the same seed, budget and window as like. */
static const paper_run *pk_partner(const paper_run *runs, int n, const pick *k, const paper_run *like) {
    for (int i = 0; i < n; i++)
        if (pk_match(&runs[i], k) && !strcmp(runs[i].t.seed, like->t.seed) && runs[i].steps == like->steps &&
            runs[i].batch == like->batch && runs[i].seq_len == like->seq_len)
            return &runs[i];
    return NULL;
}

const paper_run *paper_depth_partner(const paper_run *runs, int n, const paper_run *like, const char *depth) {
    pick k = {like->t.data, like->t.scale, like->value, depth, like->cross, NAN};
    return pk_partner(runs, n, &k, like);
}

#define PF(field) offsetof(paper_run, field)
static double pf(const paper_run *r, size_t off) { return *(const double *)((const char *)r + off); }

/* Values of field over the runs matching k (one per seed). */
static int pk_values(const paper_run *runs, int n, const pick *k, size_t off, double *x, int max) {
    int c = 0;
    for (int i = 0; i < n && c < max; i++)
        if (pk_match(&runs[i], k)) x[c++] = pf(&runs[i], off);
    return c;
}

/* Paired differences a.field_a − b.field_b (relative to b.field_b when rel),
 * over the runs matching a that have a partner matching b. */
static int pk_paired(const paper_run *runs, int n, const pick *a, size_t fa, const pick *b, size_t fb, int rel,
                     double *d, int max) {
    int c = 0;
    for (int i = 0; i < n && c < max; i++) {
        if (!pk_match(&runs[i], a)) continue;
        const paper_run *q = pk_partner(runs, n, b, &runs[i]);
        if (!q) continue;
        double va = pf(&runs[i], fa), vb = pf(q, fb);
        d[c++] = rel ? (va - vb) / vb : va - vb;
    }
    return c;
}

int paper_lambda_star(const paper_run *runs, int n, const char *data, const char *scale, double target,
                      double *lambda) {
    double best = INFINITY;
    int found = 0;
    for (int i = 0; i < n; i++) {
        const paper_run *r = &runs[i];
        if (strcmp(r->depth, "tsa") || strcmp(r->t.data, data) || strcmp(r->t.scale, scale)) continue;
        pick k = {data, scale, NULL, "tsa", NULL, r->t.lambda};
        double a[64];
        pstat s = st_of(a, pk_values(runs, n, &k, PF(alpha), a, 64));
        if (s.n && fabs(s.mean - target) < best) best = fabs(s.mean - target), *lambda = r->t.lambda, found = 1;
    }
    return found;
}

/* ---- one row of the report ---- */

typedef enum { V_NONE, V_YES, V_NO, V_INCONCLUSIVE } verdict;

typedef struct {
    int id;
    const char *claim; /* what the paper says */
    char paper[160];   /* its number */
    char ours[512];    /* ours, mean ± sd (n) */
    char diff[256];    /* the deciding difference with its interval */
    verdict v;
    char why[384];     /* the rule, and why this verdict */
    char basis[256];   /* scale and token budget */
} paper_row;

typedef struct {
    const paper_run *runs;
    int n;
    double lstar;      /* TSA λ* on Tiny Shakespeare at the base scale (NaN: none) */
    const char *scale; /* the base scale of the Shakespeare comparisons */
    gl_db *db;         /* for the cost measurements of the bench stage (experiments cost-paper*) */
} pctx;

static const char *verdict_name(verdict v) {
    return v == V_YES ? "**reproduced**" : v == V_NO ? "**not reproduced**" : v == V_INCONCLUSIVE ? "*inconclusive*" : "not run";
}

/* "m ± sd (n)" with prec decimals (scaled by mul, e.g. 100 for %). */
static void fmt_stat(char *out, size_t len, pstat s, double mul, int prec, const char *unit) {
    if (!s.n) snprintf(out, len, "—");
    else if (s.n == 1) snprintf(out, len, "%.*f%s (n = 1)", prec, s.mean * mul, unit);
    else snprintf(out, len, "%.*f ± %.*f%s (n = %d)", prec, s.mean * mul, prec, s.sd * mul, unit, s.n);
}

static void fmt_ci(char *out, size_t len, pstat s, double mul, int prec, const char *unit) {
    if (!s.n) snprintf(out, len, "—");
    else if (s.n < 2) snprintf(out, len, "%+.*f%s (one seed: no interval)", prec, s.mean * mul, unit);
    else snprintf(out, len, "%+.*f%s [%+.*f, %+.*f]", prec, s.mean * mul, unit, prec, s.lo * mul, prec, s.hi * mul);
}

/* The interval lies below (−1), above (+1) or across (0) the threshold; 0 also for n < 2. */
static int ci_side(pstat s, double thr) {
    if (s.n < 2) return 0;
    return s.hi < thr ? -1 : s.lo > thr ? 1 : 0;
}

static long run_tokens(const paper_run *r) { return r->steps * r->batch * r->seq_len; }

/* Parameters of a tied model from its registry identity (embedding + blocks). */
static void fmt_basis(char *out, size_t len, const paper_run *r, int seeds) {
    if (!r) {
        snprintf(out, len, "no runs");
        return;
    }
    snprintf(out, len, "%s, %s, %ld steps × %ld × %ld = %.2f M tokens, %d seed%s", r->t.data, r->t.scale, r->steps,
             r->batch, r->seq_len, run_tokens(r) / 1e6, seeds, seeds == 1 ? "" : "s");
}

static const paper_run *first(const pctx *c, const pick *k) {
    for (int i = 0; i < c->n; i++)
        if (pk_match(&c->runs[i], k)) return &c->runs[i];
    return NULL;
}

#define NMAX 64
#define NONE_L NAN

static pstat st_values(const pctx *c, const pick *k, size_t off) {
    double x[NMAX];
    int n = pk_values(c->runs, c->n, k, off, x, NMAX);
    return st_of(x, n);
}

static pstat st_pair(const pctx *c, const pick *a, size_t fa, const pick *b, size_t fb, int rel) {
    double d[NMAX];
    int n = pk_paired(c->runs, c->n, a, fa, b, fb, rel, d, NMAX);
    return st_of(d, n);
}

/* Append s to dst (a buffer of len bytes), cutting what does not fit. */
static void app(char *dst, size_t len, const char *s) {
    size_t used = strlen(dst);
    if (used + 1 < len) snprintf(dst + used, len - used, "%s", s);
}

/* Claims 1 and 2: TSA on a task skips a share of TLOps at (almost) no accuracy loss. */
static void claim_task(const pctx *c, paper_row *r, const char *task, double paper_saved, double paper_alpha,
                       const char *paper_acc) {
    pick tsa = {task, NULL, NULL, "tsa", NULL, NONE_L}, base = {task, NULL, NULL, "none", "none", NONE_L};
    pstat saved = st_values(c, &tsa, PF(tlops));
    pstat alpha = st_values(c, &tsa, PF(alpha));
    pstat acc = st_values(c, &tsa, PF(tok_acc));
    pstat dacc = st_pair(c, &tsa, PF(tok_acc), &base, PF(tok_acc), 0);
    snprintf(r->paper, sizeof r->paper, "%.1f %% TLOps skipped (α = %.3f), %s", 100 * paper_saved, paper_alpha,
             paper_acc);
    char s1[96], s2[96], s3[96];
    fmt_stat(s1, sizeof s1, saved, 100, 1, " %");
    fmt_stat(s2, sizeof s2, alpha, 1, 3, "");
    fmt_stat(s3, sizeof s3, acc, 100, 2, " %");
    snprintf(r->ours, sizeof r->ours, "%s skipped (α %s); token accuracy %s", s1, s2, s3);
    fmt_ci(s1, sizeof s1, dacc, 100, 2, " pp");
    snprintf(r->diff, sizeof r->diff, "accuracy TSA − dense: %s", s1);
    const double need = 0.5 * paper_saved;
    if (!saved.n || !dacc.n) r->v = V_NONE;
    else if (saved.mean < need || ci_side(dacc, -0.01) < 0) r->v = V_NO;
    else if (ci_side(dacc, -0.01) > 0) r->v = V_YES;
    else r->v = V_INCONCLUSIVE;
    snprintf(r->why, sizeof r->why,
             "reproduced if TSA skips at least half the paper's share (%.1f %%) and the interval of the accuracy "
             "change lies above −1 pp; not reproduced if it skips less or the interval lies below −1 pp",
             100 * need);
    fmt_basis(r->basis, sizeof r->basis, first(c, &tsa), saved.n);
}

/* Claims 3, 4, 5: TSA saves TLOps at a small relative loss cost against the dense run of the same seed. */
static void claim_cost(const pctx *c, paper_row *r, const char *data, const char *scale, double lambda,
                       double paper_saved, const char *paper_txt, double margin) {
    pick tsa = {data, scale, NULL, "tsa", NULL, lambda}, base = {data, scale, "none", "none", "none", NONE_L};
    pstat saved = st_values(c, &tsa, PF(tlops));
    pstat alpha = st_values(c, &tsa, PF(alpha));
    pstat rel = st_pair(c, &tsa, PF(loss), &base, PF(loss), 1);
    pstat abs_d = st_pair(c, &tsa, PF(loss), &base, PF(loss), 0);
    snprintf(r->paper, sizeof r->paper, "%s", paper_txt);
    char s1[96], s2[96], s3[96];
    fmt_stat(s1, sizeof s1, saved, 100, 1, " %");
    fmt_stat(s2, sizeof s2, alpha, 1, 3, "");
    fmt_ci(s3, sizeof s3, abs_d, 1, 4, " nats");
    if (saved.n) snprintf(r->ours, sizeof r->ours, "λ = %g: %s TLOps saved (α %s); ΔL %s", lambda, s1, s2, s3);
    fmt_ci(s1, sizeof s1, rel, 100, 2, " %");
    if (rel.n) snprintf(r->diff, sizeof r->diff, "val loss TSA ÷ dense − 1: %s", s1);
    const double need = 0.5 * paper_saved;
    if (!saved.n || !rel.n) r->v = V_NONE;
    else if (saved.mean < need || ci_side(rel, margin) > 0) r->v = V_NO;
    else if (ci_side(rel, margin) < 0) r->v = V_YES;
    else r->v = V_INCONCLUSIVE;
    snprintf(r->why, sizeof r->why,
             "reproduced if TSA saves at least half the paper's share (%.1f %%) and the interval of the relative loss "
             "change lies below %+.1f %%; not reproduced if it saves less or the interval lies above %+.1f %%",
             100 * need, 100 * margin, 100 * margin);
    fmt_basis(r->basis, sizeof r->basis, first(c, &tsa), saved.n);
}

static void claim3(const pctx *c, paper_row *r) {
    claim_cost(c, r, "tinyshakespeare", c->scale, c->lstar, 0.228,
               "22.8 % TLOps saved (α = 0.726) for +0.006 nats (+0.4 %)", 0.01);
    char extra[160];
    snprintf(extra, sizeof extra, " (λ* = the λ whose mean α is nearest 0.726)");
    app(r->why, sizeof r->why, extra);
}

static void claim3m(const pctx *c, paper_row *r) {
    /* the paper-scale pair: the largest scale with a dense and a TSA run */
    const char *sc = NULL;
    for (int i = 0; i < c->n; i++)
        if (!strcmp(c->runs[i].t.data, "tinyshakespeare") && !strcmp(c->runs[i].depth, "tsa") &&
            strcmp(c->runs[i].t.scale, c->scale))
            sc = c->runs[i].t.scale;
    if (!sc) {
        snprintf(r->paper, sizeof r->paper, "as claim 3, at the paper's scale (6 layers, ≈ 6 M parameters)");
        r->v = V_NONE;
        snprintf(r->why, sizeof r->why, "no finished paper-scale pair in the registry (see \"Plan progress\")");
        return;
    }
    double lam = NAN;
    for (int i = 0; i < c->n; i++)
        if (!strcmp(c->runs[i].t.scale, sc) && !strcmp(c->runs[i].depth, "tsa")) lam = c->runs[i].t.lambda;
    claim_cost(c, r, "tinyshakespeare", sc, lam, 0.228, "as claim 3, at the paper's scale (≈ 6 M parameters)", 0.01);
    strncat(r->basis, "; nanoGPT shakespeare_char reaches val 1.4697 at 10.7 M parameters after 5000 × 64 × 256 = "
                      "81.9 M tokens",
            sizeof r->basis - strlen(r->basis) - 1);
}

static void claim4(const pctx *c, paper_row *r) {
    double lam = NAN;
    for (int i = 0; i < c->n; i++)
        if (!strncmp(c->runs[i].t.data, "enwik8", 6) && !strcmp(c->runs[i].depth, "tsa")) lam = c->runs[i].t.lambda;
    const char *data = "enwik8_first4000000";
    claim_cost(c, r, data, c->scale, lam, 0.139, "13.9 % TLOps saved (α = 0.833), val loss no worse (slightly better)",
               0.005);
}

static void claim5(const pctx *c, paper_row *r) {
    claim_cost(c, r, "tinyshakespeare", c->scale, 0.05, 0.504,
               "λ = 0.05: 50.4 % saved at negligible cost; robust over λ ∈ [0, 0.1]", 0.01);
    /* robustness: the relative cost at every λ of the sweep */
    double seen[32];
    int ns = 0;
    char buf[256] = "; all λ:";
    for (int i = 0; i < c->n && ns < 32; i++) {
        const paper_run *q = &c->runs[i];
        if (strcmp(q->depth, "tsa") || strcmp(q->t.data, "tinyshakespeare") || strcmp(q->t.scale, c->scale)) continue;
        int dup = 0;
        for (int j = 0; j < ns; j++) dup |= fabs(seen[j] - q->t.lambda) < 1e-9;
        if (dup) continue;
        seen[ns++] = q->t.lambda;
        pick tsa = {"tinyshakespeare", c->scale, NULL, "tsa", NULL, q->t.lambda};
        pick base = {"tinyshakespeare", c->scale, "none", "none", "none", NONE_L};
        pstat rel = st_pair(c, &tsa, PF(loss), &base, PF(loss), 1);
        char one[64];
        snprintf(one, sizeof one, " %g → %+.2f %%", q->t.lambda, 100 * rel.mean);
        app(buf, sizeof buf, one);
    }
    if (ns) app(r->ours, sizeof r->ours, buf);
}

static void claim6(const pctx *c, paper_row *r) {
    pick tsa = {"tinyshakespeare", c->scale, NULL, "tsa", NULL, 0.0};
    pstat saved = st_values(c, &tsa, PF(tlops));
    pstat alpha = st_values(c, &tsa, PF(alpha));
    snprintf(r->paper, sizeof r->paper, "λ = 0: routers still skip ≈ 20 %% of token-layer operations");
    char s1[96], s2[96];
    fmt_stat(s1, sizeof s1, saved, 100, 1, " %");
    fmt_stat(s2, sizeof s2, alpha, 1, 3, "");
    snprintf(r->ours, sizeof r->ours, "%s TLOps saved (α %s)", s1, s2);
    fmt_ci(s1, sizeof s1, saved, 100, 1, " %");
    snprintf(r->diff, sizeof r->diff, "TLOps saved: %s", s1);
    int side = ci_side(saved, 0.10);
    r->v = !saved.n ? V_NONE : side > 0 ? V_YES : side < 0 ? V_NO : V_INCONCLUSIVE;
    snprintf(r->why, sizeof r->why,
             "reproduced if the interval of the share saved lies above 10 %% (half the paper's), not reproduced if "
             "it lies below");
    fmt_basis(r->basis, sizeof r->basis, first(c, &tsa), saved.n);
}

static void claim7(const pctx *c, paper_row *r) {
    pick tsa = {"tinyshakespeare", c->scale, NULL, "tsa", NULL, c->lstar};
    pick ex = {"tinyshakespeare", c->scale, NULL, "early_exit", NULL, NONE_L};
    pstat rel = st_pair(c, &tsa, PF(loss), &ex, PF(m_loss), 1);
    pstat at = st_values(c, &tsa, PF(alpha));
    pstat ae = st_values(c, &ex, PF(m_alpha));
    snprintf(r->paper, sizeof r->paper, "at matched α ≈ 0.726, TSA's val loss is 0.71 %% lower than early exit's");
    char s1[96], s2[96];
    fmt_stat(s1, sizeof s1, at, 1, 3, "");
    fmt_stat(s2, sizeof s2, ae, 1, 3, "");
    snprintf(r->ours, sizeof r->ours, "TSA (λ* = %g) α %s; early exit at the τ matched to each seed's α: α %s", c->lstar,
             s1, s2);
    fmt_ci(s1, sizeof s1, rel, 100, 2, " %");
    snprintf(r->diff, sizeof r->diff, "val loss TSA ÷ early exit − 1: %s", s1);
    int side = ci_side(rel, 0);
    r->v = !rel.n ? V_NONE : side < 0 ? V_YES : side > 0 ? V_NO : V_INCONCLUSIVE;
    snprintf(r->why, sizeof r->why,
             "reproduced if the interval lies below 0 (TSA better on the same tokens at the same α), not reproduced "
             "if above");
    fmt_basis(r->basis, sizeof r->basis, first(c, &tsa), rel.n);
}

/* The bench stage of make paper (scripts/paper.sh): one bench_gatelab
 * process times every variant in interleaved rounds (experiment cost-paper,
 * run cost-paper-s-VARIANT, always scale s: step_ratio = this variant's step ÷ the
 * baseline's in the same round, median and quartiles over the rounds), and
 * one process per variant measures its peak RSS (experiment cost-paper-mem).
 * Sparse inference: run cost-paper-s-sparse (speed-up over dense at
 * batch 64 and its FLOP ideal, at α 0.73). */
typedef struct {
    double ratio, q1, q3; /* step time ÷ the baseline's, paired by round */
    double rss;           /* peak RSS of a process training only this variant (MiB) */
    int rounds;
} bench_row;

static bench_row bench_of(const pctx *c, const char *variant) {
    bench_row b = {NAN, NAN, NAN, NAN, 0};
    char id[160], err[256];
    int fail = 0;
    snprintf(id, sizeof id, "cost-paper-s-%s", variant);
    b.ratio = pc_last(c->db, id, "bench", "step_ratio", &fail, err, sizeof err);
    b.q1 = pc_last(c->db, id, "bench", "step_ratio_q1", &fail, err, sizeof err);
    b.q3 = pc_last(c->db, id, "bench", "step_ratio_q3", &fail, err, sizeof err);
    b.rounds = (int)pc_last(c->db, id, "bench", "rounds", &fail, err, sizeof err);
    snprintf(id, sizeof id, "cost-paper-mem-s-%s", variant);
    b.rss = pc_last(c->db, id, "bench", "peak_rss_mib", &fail, err, sizeof err);
    return b;
}

/* "1.012× [1.004, 1.020]" (median and quartiles of the paired step ratio). */
static void fmt_ratio(char *out, size_t len, bench_row b) {
    if (isnan(b.ratio)) snprintf(out, len, "—");
    else snprintf(out, len, "%.3f× [%.3f, %.3f]", b.ratio, b.q1, b.q3);
}

static void fmt_bench_basis(char *out, size_t len, const bench_row *b) {
    snprintf(out, len, "scale s, training steps timed by `bench_gatelab` in %d interleaved rounds (one process, "
             "same warm-up, same batch); median [quartiles] of the per-round ratio", b->rounds);
}

static void claim8(const pctx *c, paper_row *r) {
    bench_row t = bench_of(c, "tsa");
    char id[160], err[256], s1[96];
    int fail = 0;
    snprintf(id, sizeof id, "cost-paper-s-sparse");
    double sp = pc_last(c->db, id, "bench", "sparse_speedup_a073", &fail, err, sizeof err);
    double ideal = pc_last(c->db, id, "bench", "sparse_ideal_a073", &fail, err, sizeof err);
    double alpha = pc_last(c->db, id, "bench", "sparse_alpha", &fail, err, sizeof err);
    double batch = pc_last(c->db, id, "bench", "batch", &fail, err, sizeof err);
    snprintf(r->paper, sizeof r->paper, "soft TSA costs ≈ 1 %% training throughput; sparse inference +2.3 %% at α "
                                        "0.726 (batch ≥ 64)");
    fmt_ratio(s1, sizeof s1, t);
    if (isnan(sp))
        snprintf(r->ours, sizeof r->ours, "soft TSA training step ÷ plain: %s", s1);
    else
        snprintf(r->ours, sizeof r->ours, "soft TSA training step ÷ plain: %s; sparse inference at α %.2f, batch %.0f "
                 "(scale m): %+.1f %% tokens/s over dense (FLOP ideal %+.1f %%)", s1, alpha, batch, 100 * (sp - 1),
                 100 * (ideal - 1));
    snprintf(r->diff, sizeof r->diff, "TSA step ÷ plain − 1: %s", isnan(t.ratio) ? "—" : "");
    if (!isnan(t.ratio))
        snprintf(r->diff, sizeof r->diff, "TSA step ÷ plain − 1: %+.1f %% [%+.1f, %+.1f]", 100 * (t.ratio - 1),
                 100 * (t.q1 - 1), 100 * (t.q3 - 1));
    r->v = isnan(t.ratio) ? V_NONE : t.q3 <= 1.05 ? V_YES : t.q1 > 1.05 ? V_NO : V_INCONCLUSIVE;
    snprintf(r->why, sizeof r->why,
             "reproduced if the interquartile range of the paired step ratio lies below 1.05 (a cost of at most a "
             "few per cent), not reproduced if it lies above; the sparse-inference speed-up is reported beside its "
             "FLOP ideal, not judged (our FFN share of a block differs from the paper's)");
    fmt_bench_basis(r->basis, sizeof r->basis, &t);
}

/* Claim 9: SATFormer < ResFormer < plain at every scale with all three. */
static void claim9(const pctx *c, paper_row *r) {
    snprintf(r->paper, sizeof r->paper, "val loss SATFormer < ResFormer < plain transformer at every scale (130 M–1.3 B)");
    int any = 0, no = 0, all_yes = 1, seeds = 0;
    const paper_run *ex = NULL;
    r->ours[0] = r->diff[0] = 0;
    const char *scales[] = {"xs", "s", "m", "l"};
    for (size_t si = 0; si < sizeof scales / sizeof scales[0]; si++) {
        pick sat = {"tinyshakespeare", scales[si], "satformer", "none", "none", NONE_L};
        pick res = {"tinyshakespeare", scales[si], "resformer", "none", "none", NONE_L};
        pick base = {"tinyshakespeare", scales[si], "none", "none", "none", NONE_L};
        pstat sr = st_pair(c, &sat, PF(loss), &res, PF(loss), 0);
        pstat rb = st_pair(c, &res, PF(loss), &base, PF(loss), 0);
        if (!sr.n || !rb.n) continue;
        any = 1;
        seeds = sr.n;
        ex = first(c, &sat);
        char a[96], b[96], s1[96], s2[96], s3[96], line[400];
        fmt_stat(s1, sizeof s1, st_values(c, &base, PF(loss)), 1, 4, "");
        fmt_stat(s2, sizeof s2, st_values(c, &res, PF(loss)), 1, 4, "");
        fmt_stat(s3, sizeof s3, st_values(c, &sat, PF(loss)), 1, 4, "");
        snprintf(line, sizeof line, "%s%s: plain %s, ResFormer %s, SATFormer %s", r->ours[0] ? "; " : "", scales[si],
                 s1, s2, s3);
        app(r->ours, sizeof r->ours, line);
        fmt_ci(a, sizeof a, sr, 1, 4, "");
        fmt_ci(b, sizeof b, rb, 1, 4, "");
        snprintf(line, sizeof line, "%s%s: SAT − Res %s; Res − plain %s", r->diff[0] ? "; " : "", scales[si], a, b);
        app(r->diff, sizeof r->diff, line);
        if (ci_side(sr, 0) > 0 || ci_side(rb, 0) > 0) no = 1;
        if (!(ci_side(sr, 0) < 0 && ci_side(rb, 0) < 0)) all_yes = 0;
    }
    r->v = !any ? V_NONE : no ? V_NO : all_yes ? V_YES : V_INCONCLUSIVE;
    snprintf(r->why, sizeof r->why,
             "reproduced if both paired intervals (nats) lie below 0 at every scale, not reproduced if either lies "
             "above 0 at any scale");
    fmt_basis(r->basis, sizeof r->basis, ex, seeds);
}

/* Claims 10 and 11: a within-run difference of gate statistics over the SATFormer runs. */
static void claim_gates(const pctx *c, paper_row *r, size_t fa, size_t fb, const char *paper, const char *what,
                        const char *rule) {
    pick sat = {"tinyshakespeare", c->scale, "satformer", "none", "none", NONE_L};
    double d[NMAX], a[NMAX], b[NMAX], g[NMAX];
    int n = 0;
    for (int i = 0; i < c->n && n < NMAX; i++)
        if (pk_match(&c->runs[i], &sat)) {
            a[n] = pf(&c->runs[i], fa);
            b[n] = pf(&c->runs[i], fb);
            g[n] = c->runs[i].head_gini;
            d[n] = a[n] - b[n];
            n++;
        }
    pstat sd = st_of(d, n), sa = st_of(a, n), sb = st_of(b, n), sg = st_of(g, n);
    snprintf(r->paper, sizeof r->paper, "%s", paper);
    char s1[96], s2[96], s3[96];
    fmt_stat(s1, sizeof s1, sa, 1, 4, "");
    fmt_stat(s2, sizeof s2, sb, 1, 4, "");
    fmt_stat(s3, sizeof s3, sg, 1, 3, "");
    snprintf(r->ours, sizeof r->ours, "%s: %s vs %s; Gini of mean α over (block, head) %s", what, s1, s2, s3);
    fmt_ci(s1, sizeof s1, sd, 1, 4, "");
    snprintf(r->diff, sizeof r->diff, "difference: %s", s1);
    int side = ci_side(sd, 0);
    r->v = !sd.n ? V_NONE : side > 0 ? V_YES : side < 0 ? V_NO : V_INCONCLUSIVE;
    snprintf(r->why, sizeof r->why, "%s", rule);
    fmt_basis(r->basis, sizeof r->basis, first(c, &sat), sd.n);
}

static void claim10(const pctx *c, paper_row *r) {
    claim_gates(c, r, PF(late_alpha), PF(early_alpha),
                "most early/middle-layer heads put near-zero weight on V1; access concentrates in later-layer heads",
                "mean α, later half of blocks vs earlier half",
                "reproduced if the interval of (later − earlier mean α) over seeds lies above 0, not reproduced if "
                "below; α from the traced probe tokens at the last evaluation");
}

static void claim11(const pctx *c, paper_row *r) {
    claim_gates(c, r, PF(late_sem), PF(late_other),
                "later-layer heads read V1 more for semantic tokens than for structural or functional ones",
                "mean α in the later half of blocks, semantic vs structural/functional",
                "reproduced if the interval of (semantic − mean of structural and functional) lies above 0, not "
                "reproduced if below");
}

static void claim12(const pctx *c, paper_row *r) {
    pick sat = {"tinyshakespeare", c->scale, "satformer", "none", "none", NONE_L};
    pstat sz = st_values(c, &sat, PF(zero_dl));
    pstat sm = st_values(c, &sat, PF(mean_dl));
    snprintf(r->paper, sizeof r->paper, "setting the gates to zero, or to their mean, raises perplexity");
    char s1[96], s2[96];
    fmt_ci(s1, sizeof s1, sz, 1, 4, " nats");
    fmt_ci(s2, sizeof s2, sm, 1, 4, " nats");
    snprintf(r->ours, sizeof r->ours, "ΔL zero %s; ΔL mean %s", s1, s2);
    snprintf(r->diff, sizeof r->diff, "zero %s; mean %s", s1, s2);
    int a = ci_side(sz, 0), b = ci_side(sm, 0);
    r->v = !sz.n || !sm.n ? V_NONE : (a > 0 && b > 0) ? V_YES : (a < 0 || b < 0) ? V_NO : V_INCONCLUSIVE;
    snprintf(r->why, sizeof r->why,
             "reproduced if both intervals of ΔL lie above 0, not reproduced if either lies below 0");
    fmt_basis(r->basis, sizeof r->basis, first(c, &sat), sz.n);
}

static void claim13(const pctx *c, paper_row *r) {
    pick sat = {"mqar", NULL, "satformer", "none", "none", NONE_L}, res = {"mqar", NULL, "resformer", "none", "none", NONE_L},
         base = {"mqar", NULL, "none", "none", "none", NONE_L};
    pstat sr = st_pair(c, &sat, PF(tok_acc), &res, PF(tok_acc), 0);
    pstat sb = st_pair(c, &sat, PF(tok_acc), &base, PF(tok_acc), 0);
    snprintf(r->paper, sizeof r->paper, "on recall-heavy tasks SATFormer scores highest");
    char s1[96], s2[96], s3[96];
    fmt_stat(s1, sizeof s1, st_values(c, &base, PF(tok_acc)), 100, 1, " %");
    fmt_stat(s2, sizeof s2, st_values(c, &res, PF(tok_acc)), 100, 1, " %");
    fmt_stat(s3, sizeof s3, st_values(c, &sat, PF(tok_acc)), 100, 1, " %");
    snprintf(r->ours, sizeof r->ours, "MQAR accuracy: plain %s, ResFormer %s, SATFormer %s", s1, s2, s3);
    fmt_ci(s1, sizeof s1, sr, 100, 1, " pp");
    fmt_ci(s2, sizeof s2, sb, 100, 1, " pp");
    snprintf(r->diff, sizeof r->diff, "SAT − Res %s; SAT − plain %s", s1, s2);
    int a = ci_side(sr, 0), b = ci_side(sb, 0);
    if (!sb.n) r->v = V_NONE;
    else if (a < 0 || b < 0) r->v = V_NO;
    else if (b > 0 && (a > 0 || !sr.n)) r->v = V_YES;
    else r->v = V_INCONCLUSIVE;
    snprintf(r->why, sizeof r->why,
             "reproduced if SATFormer's paired accuracy gains over both lie above 0, not reproduced if either lies "
             "below 0");
    fmt_basis(r->basis, sizeof r->basis, first(c, &sat), sb.n);
}

static void claim14(const pctx *c, paper_row *r) {
    bench_row b = bench_of(c, "base"), sat = bench_of(c, "satformer"), hy = bench_of(c, "hyper"),
              mu = bench_of(c, "mudd");
    snprintf(r->paper, sizeof r->paper, "SATFormer ≈ baseline throughput; Hyper-Connections / MUDDFormer 1.75× / "
                                        "1.82× slower (+31 %% / +5 %% memory)");
    char s1[96], s2[96], s3[96], m[160] = "";
    fmt_ratio(s1, sizeof s1, sat);
    fmt_ratio(s2, sizeof s2, hy);
    fmt_ratio(s3, sizeof s3, mu);
    if (!isnan(b.rss) && !isnan(sat.rss) && !isnan(hy.rss) && !isnan(mu.rss))
        snprintf(m, sizeof m, "; peak RSS ÷ plain: SATFormer %.2f×, Hyper %.2f×, MUDD %.2f×", sat.rss / b.rss,
                 hy.rss / b.rss, mu.rss / b.rss);
    snprintf(r->ours, sizeof r->ours, "training step ÷ plain: SATFormer %s, Hyper %s, MUDD %s%s", s1, s2, s3, m);
    snprintf(r->diff, sizeof r->diff, "step ratio, SATFormer %s", s1);
    int have = !isnan(sat.ratio) && !isnan(hy.ratio) && !isnan(mu.ratio);
    if (!have) r->v = V_NONE;
    else if (sat.q1 > 1.05 || hy.q3 < sat.q1 || mu.q3 < sat.q1) r->v = V_NO;
    else if (sat.q3 <= 1.05 && hy.q1 > sat.q3 && mu.q1 > sat.q3) r->v = V_YES;
    else r->v = V_INCONCLUSIVE;
    snprintf(r->why, sizeof r->why,
             "the direction: reproduced if SATFormer's paired step ratio (interquartile range) lies below 1.05 and "
             "both dense variants' ratios lie above SATFormer's; not reproduced if SATFormer's lies above 1.05 or a "
             "dense variant is faster than SATFormer; the magnitudes are reported beside the paper's");
    fmt_bench_basis(r->basis, sizeof r->basis, &sat);
}

/* ---- the report ---- */

typedef void (*claim_fn)(const pctx *, paper_row *);
static void claim1(const pctx *c, paper_row *r) {
    claim_task(c, r, "copy", 0.549, 0.341, "no accuracy loss");
}
static void claim2(const pctx *c, paper_row *r) {
    claim_task(c, r, "sort", 0.225, 0.730, "≈ 98.8 % accuracy");
}

static const struct {
    int id;
    const char *label;
    claim_fn fn;
} claims[] = {
    {1, "1", claim1},   {2, "2", claim2},   {3, "3", claim3},   {3, "3 (paper scale)", claim3m},
    {4, "4", claim4},   {5, "5", claim5},   {6, "6", claim6},   {7, "7", claim7},
    {8, "8", claim8},   {9, "9", claim9},   {10, "10", claim10}, {11, "11", claim11},
    {12, "12", claim12}, {13, "13", claim13}, {14, "14", claim14},
};

/* The sweep command of the plan line that lists claim id. */
static void plan_command(const paper_plan *plan, int id, const char *results, char *out, size_t len) {
    snprintf(out, len, "—");
    for (int i = 0; i < plan->n; i++) {
        const plan_line *l = &plan->lines[i];
        if (id < 1 || id > PLAN_CLAIM_MAX || !l->claim[id]) continue;
        snprintf(out, len, "`gatelab sweep experiments/paper/%s %s log.experiment=paper-%s --results %s`", l->manifest,
                 l->args, l->group, results);
        break;
    }
}

/* Per plan line: runs registered in the registry for experiment paper-GROUP
 * and how many finished, so a partial report says what it lacks. */
static int cmp_span(const void *a, const void *b) {
    const double *x = a, *y = b;
    return (x[0] > y[0]) - (x[0] < y[0]);
}

/* Wall-clock seconds during which at least one run was training: the union of
 * the spans [end − training seconds, end] (a resumed run's training seconds
 * leave out the time it lay stopped, so pauses between sessions do not count). */
static double busy_seconds(const paper_run *runs, int n) {
    double(*sp)[2] = malloc((size_t)(n ? n : 1) * sizeof *sp);
    if (!sp) return NAN;
    int m = 0;
    for (int i = 0; i < n; i++)
        if (!isnan(runs[i].wall_s) && !isnan(runs[i].t1)) {
            sp[m][0] = runs[i].t1 - runs[i].wall_s;
            sp[m][1] = runs[i].t1;
            m++;
        }
    qsort(sp, (size_t)m, sizeof *sp, cmp_span);
    double busy = 0, lo = 0, hi = -INFINITY;
    for (int i = 0; i < m; i++) {
        if (sp[i][0] > hi) {
            if (hi > lo) busy += hi - lo;
            lo = sp[i][0];
            hi = sp[i][1];
        } else if (sp[i][1] > hi) {
            hi = sp[i][1];
        }
    }
    if (hi > lo) busy += hi - lo;
    free(sp);
    return busy;
}

static int write_progress(FILE *f, gl_db *db, const paper_plan *plan, const char *preset, char *err, size_t errlen) {
    fprintf(f, "## Plan progress\n\n| group | claims | runs finished / registered |\n| --- | --- | ---: |\n");
    int partial = 0, rc = 0;
    for (int k = 0; k < plan->n && !rc; k++) {
        const plan_line *l = &plan->lines[k];
        char exp[80];
        snprintf(exp, sizeof exp, "paper-%s", l->group);
        gl_run_row *rows = NULL;
        int n = 0, done = 0;
        if (db_runs_list(db, exp, NULL, &rows, &n, err, errlen)) {
            rc = -1;
            break;
        }
        for (int i = 0; i < n; i++) done += !strcmp(rows[i].status, "FINISHED");
        free(rows);
        if (!n || done < n) partial = 1;
        if (n) fprintf(f, "| %s | %s | %d / %d |\n", l->group, l->claims, done, n);
        else fprintf(f, "| %s | %s | not started |\n", l->group, l->claims);
    }
    if (!rc && partial)
        fprintf(f, "\n**This report is partial**: some groups of the plan have not finished. Their claims read \"not "
                   "run\" or rest on fewer runs. `make paper PRESET=%s` continues where the runs stopped.\n",
                preset);
    fprintf(f, "\n");
    return rc;
}

static int write_rows(FILE *f, const pctx *c, const paper_plan *plan, const char *results, int *n_rows) {
    fprintf(f, "| # | the paper says | ours | deciding difference [95 %% CI] | verdict | scale and budget |\n"
               "| --- | --- | --- | --- | --- | --- |\n");
    paper_row rows[sizeof claims / sizeof claims[0]];
    for (size_t i = 0; i < sizeof claims / sizeof claims[0]; i++) {
        paper_row *r = &rows[i];
        memset(r, 0, sizeof *r);
        r->id = claims[i].id;
        claims[i].fn(c, r);
        fprintf(f, "| %s | %s | %s | %s | %s | %s |\n", claims[i].label, r->paper, r->ours[0] ? r->ours : "—",
                r->diff[0] ? r->diff : "—", r->v == V_NONE ? "not run" : verdict_name(r->v),
                r->basis[0] ? r->basis : "—");
        (*n_rows)++;
    }
    fprintf(f, "\n## Verdict rules and the commands behind each row\n\n");
    for (size_t i = 0; i < sizeof claims / sizeof claims[0]; i++) {
        char cmd[1400];
        plan_command(plan, rows[i].id, results, cmd, sizeof cmd);
        fprintf(f, "- **Claim %s** — %s. Verdict: %s. Runs: %s\n", claims[i].label, rows[i].why,
                verdict_name(rows[i].v), cmd);
    }
    return ferror(f) ? -1 : 0;
}

static void write_runs(FILE *f, const pctx *c) {
    fprintf(f, "\n## Every run\n\nWhole-split validation loss (nats/token ± its standard error over batches of "
               "windows) with what it was measured on (split[first window, last window) scored tokens @ checkpoint "
               "step), the windows the gate ablations (ΔL) were measured on, the training tokens and the run's "
               "training time.\n\n"
               "| run | data | scale | variant | λ | seed | val loss | ± se | measured on | ΔL measured on | "
               "train tokens | α | accuracy | train s |\n"
               "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | --- | --- | ---: | ---: | ---: | ---: |\n");
    for (int i = 0; i < c->n; i++) {
        const paper_run *r = &c->runs[i];
        char lam[32] = "", acc[32] = "", al[32] = "", on[64], zon[64] = "";
        if (!isnan(r->t.lambda)) snprintf(lam, sizeof lam, "%g", r->t.lambda);
        if (!isnan(r->tok_acc)) snprintf(acc, sizeof acc, "%.4f", r->tok_acc);
        if (!isnan(r->alpha)) snprintf(al, sizeof al, "%.3f", r->alpha);
        db_prov_str(&r->loss_prov, on, sizeof on);
        if (r->loss_step >= 0) snprintf(on + strlen(on), sizeof on - strlen(on), " @%ld", r->loss_step);
        if (!isnan(r->zero_dl)) db_prov_str(&r->zero_prov, zon, sizeof zon);
        fprintf(f, "| %s | %s | %s | %s | %s | %s | %.4f | %.4f | %s | %s | %ld | %s | %s | %.0f |\n", r->t.run_id,
                r->t.data, r->t.scale, r->t.variant, lam, r->t.seed, r->loss, r->loss_se, on, zon, run_tokens(r), al,
                acc, r->wall_s);
    }
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static const struct {
    const char *name, *caption;
} fig_captions[] = {
    {"paper_pareto", "Claims 3, 5–7: TLOps saved against whole-split validation loss over λ (mean ± sd over seeds), "
                     "the dense model at 0 %, and early exit at the τ matched to TSA's α at λ*."},
    {"paper_alpha_heatmap", "Claim 10: SATFormer's mean gate α per block and KV head (block 0 has no gate), mean over "
                            "seeds, from the traced probe tokens."},
    {"paper_category", "Claim 11: SATFormer's mean α per block on semantic, structural and functional tokens, mean ± sd "
                       "over seeds."},
    {"paper_ablation", "Claim 12: loss increase when every gate is zeroed or set to its mean (SATFormer), or ResFormer's "
                       "λ1 is zeroed; mean ± sd over seeds."},
    {"paper_loss_time", "Claim 14: training loss against wall-clock time, mean ± sd over the seeds of each variant "
                        "(timed on a shared machine)."},
};

/* The seed-aggregated figures with captions, then links to the per-run figures
 * that `gatelab figures paper-GROUP` drew into out_dir/figures. */
static void write_figures(FILE *f, const char *out_dir, const paper_figs *pf, const char *fig_err) {
    fprintf(f, "\n## Figures\n\n");
    for (size_t k = 0; k < sizeof fig_captions / sizeof fig_captions[0]; k++) {
        int made = 0;
        for (int i = 0; i < pf->n_made; i++) made |= !strcmp(pf->made[i], fig_captions[k].name);
        if (made) fprintf(f, "![%s](figures/%s.png)\n\n%s (`figures/%s.tsv` holds the numbers.)\n\n", fig_captions[k].name,
                          fig_captions[k].name, fig_captions[k].caption, fig_captions[k].name);
    }
    for (int i = 0; i < pf->n_skipped; i++) fprintf(f, "- not drawn: %s\n", pf->skipped[i]);
    if (fig_err && *fig_err) fprintf(f, "- a figure failed: %s\n", fig_err);
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/figures", out_dir);
    DIR *d = opendir(dir);
    if (!d) return;
    char *names[1024];
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) && n < 1024;) {
        size_t l = strlen(e->d_name);
        if (l > 4 && !strcmp(e->d_name + l - 4, ".png") && strncmp(e->d_name, "paper_", 6))
            names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, cmp_str);
    if (n) fprintf(f, "\nPer-run figures (`gatelab figures paper-GROUP`): ");
    for (int i = 0; i < n; i++) {
        if (names[i]) fprintf(f, "%s[%.*s](figures/%s)", i ? ", " : "", (int)strlen(names[i]) - 4, names[i], names[i]);
        free(names[i]);
    }
    if (n) fprintf(f, ".\n");
}

/* Whether the registry holds this preset's runs: none of the plan's groups
 * registered, or a run of a group whose params disagree with a fixed
 * override of its plan line (steps=60 in the plan, train.steps = 30 in the
 * run: another preset's registry), written into why; 0 when it matches.  A
 * fixed key is compared with the run's param of that name or ending in
 * ".key" (aliases such as scale= are not compared); numbers as numbers. */
static int plan_mismatch(gl_db *db, const paper_plan *plan, char *why, size_t n, char *err, size_t errlen) {
    int registered = 0, bad = 0;
    for (int k = 0; k < plan->n && !bad; k++) {
        const plan_line *l = &plan->lines[k];
        char exp[80];
        snprintf(exp, sizeof exp, "paper-%s", l->group);
        gl_run_row *rows = NULL;
        int nr = 0;
        if (db_runs_list(db, exp, NULL, &rows, &nr, err, errlen)) return -1;
        registered += nr;
        for (int r = 0; r < nr && !bad; r++) {
            gl_param *ps = NULL;
            int np = 0;
            if (db_params_all(db, rows[r].run_id, &ps, &np, err, errlen)) {
                free(rows);
                return -1;
            }
            char args[2048];
            snprintf(args, sizeof args, "%s", l->args);
            int axis = 0;
            for (char *w = strtok(args, " \t"); w && !bad; w = strtok(NULL, " \t")) {
                if (!strcmp(w, "--axis")) { axis = 1; continue; }
                char *eq = strchr(w, '=');
                if (axis || !eq || eq == w) { axis = 0; continue; }
                *eq = '\0';
                const char *key = w, *want = eq + 1;
                for (int i = 0; i < np; i++) {
                    size_t kl = strlen(key), pl = strlen(ps[i].key);
                    if (strcmp(ps[i].key, key) && !(pl > kl && ps[i].key[pl - kl - 1] == '.' && !strcmp(ps[i].key + pl - kl, key)))
                        continue;
                    char *e1, *e2;
                    double a = strtod(ps[i].value, &e1), b = strtod(want, &e2);
                    int same = *ps[i].value && !*e1 && *want && !*e2 ? a == b : !strcmp(ps[i].value, want);
                    if (!same) {
                        snprintf(why, n, "run %s of group %s has %s = %s where the plan's line %d says %s=%s",
                                 rows[r].run_id, l->group, ps[i].key, ps[i].value, l->line, key, want);
                        bad = 1;
                    }
                    break;
                }
            }
            free(ps);
        }
        free(rows);
    }
    if (!bad && !registered) {
        snprintf(why, n, "no run of the plan's groups (experiments paper-GROUP) is in this registry");
        bad = 1;
    }
    return bad;
}

int paper_report(gl_db *db, const char *preset, const char *plan_path, const char *results, const char *out_dir,
                 int *n_rows, char *err, size_t errlen) {
    paper_run *runs = NULL;
    int n = 0, rc = -1;
    *n_rows = 0;
    paper_plan plan;
    /* a plan that is missing, a folder, empty or malformed is an error: a report of it would judge nothing */
    if (plan_read(plan_path, &plan, err, errlen)) return -1;
    char mismatch[512] = "";
    int mm = plan_mismatch(db, &plan, mismatch, sizeof mismatch, err, errlen);
    if (mm < 0 || paper_collect(db, &runs, &n, err, errlen)) {
        plan_free(&plan);
        return -1;
    }
    pctx c = {runs, n, NAN, "s", db};
    /* the base scale: that of the Shakespeare SATFormer comparison, else of any Shakespeare run */
    for (int i = 0; i < n; i++)
        if (!strcmp(runs[i].t.data, "tinyshakespeare") && !strcmp(runs[i].value, "satformer")) c.scale = runs[i].t.scale;
    if (!paper_lambda_star(runs, n, "tinyshakespeare", c.scale, 0.726, &c.lstar)) c.lstar = NAN;
    char path[4200], fig_err[1024] = "";
    snprintf(path, sizeof path, "%s/figures", out_dir);
    if (report_mkdir_p(path, err, errlen)) goto done;
    paper_figs figs;
    if (paper_figures(db, runs, n, c.scale, path, &figs, fig_err, sizeof fig_err))
        fprintf(stderr, "gatelab paper report: %s (the report goes on without it)\n", fig_err);
    snprintf(path, sizeof path, "%s/REPORT.md", out_dir);
    fileio_out out = {0};
    if (fileio_begin(&out, path, "report", err, errlen)) goto done;
    FILE *f = out.f;
    if (mm)
        fprintf(f, "# gatelab reproduces the SATFormer and TSA papers — registry `%s` is not preset `%s`'s\n\n"
                   "**This registry does not hold the runs of preset `%s`**: %s. The claims below are judged on "
                   "whatever runs it holds; run `gatelab paper report` with the preset that trained them.\n\n",
                db_path(db), preset, preset, mismatch);
    else
        fprintf(f, "# gatelab reproduces the SATFormer and TSA papers (preset `%s`)\n\n", preset);
    fprintf(f, "Generated by `gatelab paper report %s --results %s` from the registry and traces of %d finished runs; "
               "nothing in it is typed by hand. Loss is the mean cross-entropy over the **whole validation split** "
               "(nats/token), never the few windows a training-time evaluation reads. Intervals are 95 %% Student t "
               "intervals over seeds of the paired difference (same data, scale, budget and seed; only the variant "
               "differs). A claim tested at a scale far below the paper's tests its *direction* only.\n\n",
            preset, results, n);
    double t0 = INFINITY, t1 = -INFINITY, train_s = 0, tokens = 0;
    for (int i = 0; i < n; i++) {
        if (runs[i].t0 < t0) t0 = runs[i].t0;
        if (runs[i].t1 > t1) t1 = runs[i].t1;
        if (!isnan(runs[i].wall_s)) train_s += runs[i].wall_s;
        tokens += (double)run_tokens(&runs[i]);
    }
    if (n)
        fprintf(f, "Training: %d runs, %.1f M tokens in all, %.0f s of training summed over runs; %.2f h of "
                   "wall-clock time with at least one run training (runs in parallel, sharing the machine; %.1f h "
                   "from the first training step to the last, pauses between sessions included).\n\n",
                n, tokens / 1e6, train_s, busy_seconds(runs, n) / 3600.0, (t1 - t0) / 3600.0);
    if (write_progress(f, db, &plan, preset, err, errlen)) {
        fileio_abort(&out);
        goto done;
    }
    if (write_rows(f, &c, &plan, results, n_rows) == 0) write_runs(f, &c);
    write_figures(f, out_dir, &figs, fig_err);
    if (fileio_commit(&out, "report", err, errlen)) goto done;
    rc = 0;
done:
    plan_free(&plan);
    free(runs);
    return rc;
}
