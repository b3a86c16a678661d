/*
 * paper_fig.c — the report's figures, each over seeds (paper.h): the λ
 * Pareto curve with early exit at matched α, the layer × KV-head map of
 * SATFormer's mean gate, its gate per token category and block, the gate
 * ablations, training loss against wall-clock time, and TSA's halting
 * probabilities on copy and sort.
 *
 * Each figure is a TSV written next to its PNG/PDF (so a reader can replot
 * it) and drawn by scripts/plots/paper_*.gp or heatmap.gp through
 * figures_gnuplot.  A figure without data is skipped with its reason.
 *
 * What a figure reads comes from the run set (runset.h): each run's latest
 * rows by "split/label" key (runset_get) and its typed config, and one
 * set-wide read of the validation-loss series (db_set_series) for the
 * loss-against-time figure — never a statement per run or per metric.
 *
 * Not here: which runs answer which claim (paper.c), per-run figures
 * (figures.c).
 */
#include "analysis/paper/paper_fig.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/gatekind.h"
#include "analysis/measure/analyze.h"
#include "store/fileio.h"
#include "analysis/render/figures.h"
#include "store/categories.h"
#include "store/metric.h"
#include "analysis/core/stats.h"
#include "analysis/runs/runset.h"

/* The values of one cell over seeds; mean and sd come from the kernel (stats.h). */
#define ACC_MAX 64
typedef struct {
    double v[ACC_MAX];
    int n;
} acc;

static void acc_add(acc *a, double v) {
    if (isnan(v) || a->n >= ACC_MAX) return;
    a->v[a->n++] = v;
}
static double acc_mean(const acc *a) { return st_describe(a->v, a->n, 0.95).mean; }
static double acc_sd(const acc *a) { return st_describe(a->v, a->n, 0.95).sd; }

static void pf_num(FILE *f, double v) {
    if (isnan(v)) fprintf(f, "\tnan");
    else fprintf(f, "\t%.6g", v);
}

/* The latest split/<k's label> of run r from the run set's rows, keyed as the loader keys them
 * (metric_label, runset.c rs_on_latest); NaN when absent or r is NULL. */
static double pf_key(const runset_run *r, const char *split, const metric_key *k) {
    char label[RUNSET_KEY_MAX], key[RUNSET_KEY_MAX];
    if (!r) return NAN;
    metric_label(k->name, k->params, label, sizeof label);
    snprintf(key, sizeof key, "%s/%s", split, label);
    return runset_num(r, key);
}

/* The same for a metric without parameters. */
static double pf_val(const runset_run *r, const char *split, const char *name) {
    char key[RUNSET_KEY_MAX];
    snprintf(key, sizeof key, "%s/%s", split, name);
    return r ? runset_num(r, key) : NAN;
}

/* The run id of rs, or NULL. */
static const runset_run *pf_find(const runset *rs, const char *id) {
    for (int i = 0; rs && i < rs->n; i++)
        if (!strcmp(rs->r[i].t.run_id, id)) return &rs->r[i];
    return NULL;
}

/* 1 when r is a run of the figures' data set at their scale with (value, depth, cross); NULL: any. */
static int pf_is(const paper_run *r, const paper_base *b, const char *value, const char *depth, const char *cross) {
    return !strcmp(r->t.data, b->data) && !strcmp(r->t.scale, b->scale) && (!value || !strcmp(r->value, value)) &&
           (!depth || !strcmp(r->depth, depth)) && (!cross || !strcmp(r->cross, cross));
}

/* Open dir/name.tsv for writing; NULL with err set on failure. */
static FILE *pf_open(const char *dir, const char *name, char *path, size_t plen, char *err, size_t errlen) {
    snprintf(path, plen, "%s/%s.tsv", dir, name);
    FILE *f = fileio_fopen_w(path);
    if (!f) snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
    return f;
}

/* Close a figure's data file f (path), saying when the write failed.  0, or -1 with err. */
static int pf_close(FILE *f, const char *path, char *err, size_t errlen) {
    if (!fclose(f)) return 0;
    snprintf(err, errlen, "writing %s failed", path);
    return -1;
}

/* "<key>_mean" of gate g (the gate table's key), the analysis statistic a
 * figure reads. */
static const char *pf_mean_stat(gl_gate g, char out[64]) {
    snprintf(out, 64, "%s_mean", gatekind_info[g].key);
    return out;
}

static int pf_draw(paper_figs *s, const char *script, const char *tsv, const char *dir, const char *name,
                   const char *vars, char *err, size_t errlen) {
    char base[4200];
    snprintf(base, sizeof base, "%s/%s", dir, name);
    if (figures_gnuplot(script, tsv, base, vars, err, errlen)) return -1;
    if (s->n_made < PAPER_FIGS_MAX) snprintf(s->made[s->n_made++], sizeof s->made[0], "%s", name);
    return 0;
}

static void pf_skip(paper_figs *s, const char *name, const char *why) {
    if (s->n_skipped < PAPER_FIGS_MAX)
        snprintf(s->skipped[s->n_skipped++], sizeof s->skipped[0], "%s: %s", name, why);
}

/* pf_skip with " on DATA TITLE" after why: "no TSA runs on Tiny Shakespeare". */
static void pf_skip_on(paper_figs *s, const char *name, const char *why, const paper_base *b) {
    char w[200];
    snprintf(w, sizeof w, "%s on %s", why, b->title);
    pf_skip(s, name, w);
}

/* The distinct λ of the TSA runs of the figures' data set at their scale, in the order
 * the runs list them, into lam[0..32); returns how many. */
static int pf_lambdas(const paper_run *r, int n, const paper_base *b, double lam[32]) {
    int nl = 0;
    for (int i = 0; i < n && nl < 32; i++) {
        if (!pf_is(&r[i], b, NULL, "tsa", NULL)) continue;
        int dup = 0;
        for (int j = 0; j < nl; j++) dup |= fabs(lam[j] - r[i].t.lambda) < 1e-12;
        if (!dup) lam[nl++] = r[i].t.lambda;
    }
    return nl;
}

/* The blocks the Pareto adds when they were measured: TSA with the skipping
 * done (val/hard.*) per λ, early exit's τ frontier (ablation exit.tau<τ>.*)
 * and post-hoc early exit on the dense model (ablation posthoc.tau<τ>.*),
 * each the mean ± sd over seeds; a block nobody measured is left out. */
static void pf_pareto_extra(const runset_run *const *src, const paper_run *r, int n, const paper_base *b, FILE *f) {
    static const double taus[] = {0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95};
    double lam[32];
    const int nl = pf_lambdas(r, n, b, lam);
    int started = 0;
    for (int k = 0; k < nl; k++) {
        acc sv = {0}, ls = {0};
        for (int i = 0; i < n; i++) {
            if (!pf_is(&r[i], b, NULL, "tsa", NULL) || fabs(r[i].t.lambda - lam[k]) > 1e-12) continue;
            const double a = pf_val(src[i], "val", "hard.tlops_saved"), b = pf_val(src[i], "val", "hard.loss");
            if (!isnan(a) && !isnan(b)) acc_add(&sv, 100 * a), acc_add(&ls, b);
        }
        if (!ls.n) continue;
        if (!started++) fprintf(f, "\n\nTSA, skipping done (hard)\tsaved\tsaved_sd\tloss\tloss_sd\n");
        fprintf(f, "λ=%g", lam[k]);
        pf_num(f, acc_mean(&sv)), pf_num(f, acc_sd(&sv)), pf_num(f, acc_mean(&ls)), pf_num(f, acc_sd(&ls));
        fprintf(f, "\n");
    }
    const struct {
        const char *title, *depth, *mode;
    } curves[] = {{"early exit, τ frontier", "early_exit", "exit"}, {"post-hoc exit on the dense model", "none", "posthoc"}};
    for (size_t c = 0; c < sizeof curves / sizeof curves[0]; c++) {
        started = 0;
        for (size_t t = 0; t < sizeof taus / sizeof taus[0]; t++) {
            acc sv = {0}, ls = {0};
            for (int i = 0; i < n; i++) {
                if (!pf_is(&r[i], b, c ? "none" : NULL, curves[c].depth, c ? "none" : NULL))
                    continue;
                metric_key nl_, ns_;
                metric_exit_mode(&nl_, curves[c].mode, taus[t], "loss", METRIC_NONE);
                metric_exit_mode(&ns_, curves[c].mode, taus[t], "tlops_saved", METRIC_NONE);
                const double a = pf_key(src[i], "ablation", &ns_), b = pf_key(src[i], "ablation", &nl_);
                if (!isnan(a) && !isnan(b)) acc_add(&sv, 100 * a), acc_add(&ls, b);
            }
            if (!ls.n) continue;
            if (!started++) fprintf(f, "\n\n%s\tsaved\tsaved_sd\tloss\tloss_sd\n", curves[c].title);
            if (t == 0 || t + 1 == sizeof taus / sizeof taus[0]) fprintf(f, "τ=%.2f", taus[t]);
            pf_num(f, acc_mean(&sv)), pf_num(f, acc_sd(&sv)), pf_num(f, acc_mean(&ls)), pf_num(f, acc_sd(&ls));
            fprintf(f, "\n");
        }
    }
}

/* λ Pareto: TSA per λ, dense at 0 %, early exit at the matched τ. */
static int fig_pareto(const runset_run *const *src, const paper_run *r, int n, const paper_base *b,
                      const paper_points *pp, const char *dir, paper_figs *s, char *err, size_t errlen) {
    double lam[32];
    const int nl = pf_lambdas(r, n, b, lam);
    if (!nl) {
        pf_skip_on(s, "paper_pareto", "no TSA runs", b);
        return 0;
    }
    for (int i = 1; i < nl; i++) /* λ ascending */
        for (int j = i; j > 0 && lam[j - 1] > lam[j]; j--) {
            double t = lam[j];
            lam[j] = lam[j - 1];
            lam[j - 1] = t;
        }
    char path[4200];
    FILE *f = pf_open(dir, "paper_pareto", path, sizeof path, err, errlen);
    if (!f) return -1;
    fprintf(f, "TSA (λ)\tsaved\tsaved_sd\tloss\tloss_sd\n");
    for (int k = 0; k < nl; k++) {
        acc sv = {0}, ls = {0};
        for (int i = 0; i < n; i++)
            if (pf_is(&r[i], b, NULL, "tsa", NULL) && fabs(r[i].t.lambda - lam[k]) < 1e-12)
                acc_add(&sv, 100 * r[i].tlops), acc_add(&ls, r[i].loss);
        fprintf(f, "λ=%g", lam[k]);
        pf_num(f, acc_mean(&sv)), pf_num(f, acc_sd(&sv)), pf_num(f, acc_mean(&ls)), pf_num(f, acc_sd(&ls));
        fprintf(f, "\n");
    }
    /* the dense and early-exit points at the TSA points' budget (the steps most of them trained for): a
     * 3000-step or a 200-step dense run is not the baseline of a 1000-step TSA run */
    long budget = -1;
    for (int i = 0, best = 0; i < n; i++) {
        if (!pf_is(&r[i], b, NULL, "tsa", NULL)) continue;
        int c = 0;
        for (int j = 0; j < n; j++) c += pf_is(&r[j], b, NULL, "tsa", NULL) && r[j].steps == r[i].steps;
        if (c > best || (c == best && r[i].steps > budget)) best = c, budget = r[i].steps;
    }
    acc ls = {0}, esv = {0}, els = {0}, etau = {0};
    for (int i = 0; i < n; i++) {
        if (r[i].steps != budget) continue;
        if (pf_is(&r[i], b, "none", "none", "none")) acc_add(&ls, r[i].loss);
        if (pf_is(&r[i], b, NULL, "early_exit", NULL) && !isnan(r[i].m_loss))
            acc_add(&esv, 100 * r[i].m_tlops), acc_add(&els, r[i].m_loss), acc_add(&etau, r[i].m_tau);
    }
    fprintf(f, "\n\ndense\tsaved\tsaved_sd\tloss\tloss_sd\n\t0\t0");
    pf_num(f, acc_mean(&ls)), pf_num(f, acc_sd(&ls));
    fprintf(f, "\n");
    if (els.n) {
        fprintf(f, "\n\nearly exit (τ matched to TSA's α at λ*)\tsaved\tsaved_sd\tloss\tloss_sd\nτ=%.2f", acc_mean(&etau));
        pf_num(f, acc_mean(&esv)), pf_num(f, acc_sd(&esv)), pf_num(f, acc_mean(&els)), pf_num(f, acc_sd(&els));
        fprintf(f, "\n");
    }
    for (int k = 0; pp && k < pp->n; k++) /* the paper's points, placed on our dense loss */
        if (!isnan(pp->saved[k]) && !isnan(pp->rel[k]) && ls.n) {
            fprintf(f, "\n\npaper: %s (loss = our dense × (1 + its relative cost))\tsaved\tsaved_sd\tloss\tloss_sd\n",
                    pp->label[k]);
            fprintf(f, "%s\t%.6g\t0\t%.6g\t0\n", pp->label[k], 100 * pp->saved[k], acc_mean(&ls) * (1 + pp->rel[k]));
        }
    pf_pareto_extra(src, r, n, b, f);
    if (pf_close(f, path, err, errlen)) return -1;
    char vars[200];
    snprintf(vars, sizeof vars, "title='%s: TLOps saved vs whole-split loss, mean ± sd over seeds'", b->title);
    return pf_draw(s, "paper_pareto.gp", path, dir, "paper_pareto", vars, err, errlen);
}

static int pf_cmp_dbl(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return isnan(x) - isnan(y) ? isnan(x) - isnan(y) : (x > y) - (x < y);
}

/* The SATFormer gate map, block × KV head, one panel per seed side by side
 * (head indices are arbitrary per seed, so they are never averaged across
 * seeds): within each block the heads are sorted by mean α, rank 0 the
 * smallest; the colour scale starts at 0 (the "near zero" claim). */
static int fig_heatmap(const runset_run *const *src, const paper_run *r, int n, const paper_base *b, const char *dir,
                       paper_figs *s, char *err, size_t errlen) {
    enum { MAXL = 64, MAXH = 64, MAXS = 8 };
    static double cell[MAXS][MAXL][MAXH];
    char seeds[MAXS][32];
    int L = 0, H = 0, ns = 0;
    for (int i = 0; i < n && ns < MAXS; i++) {
        if (!pf_is(&r[i], b, "satformer", "none", "none")) continue;
        const int l = src[i] ? (int)src[i]->n_layer : 0, h = src[i] ? (int)src[i]->n_kv_head : 0; /* typed config */
        if (l > MAXL || h > MAXH || l < 2 || (ns && (l != L || h != H))) continue;
        L = l, H = h;
        int have = 0;
        for (int b = 1; b < l; b++) {
            for (int k = 0; k < h; k++) {
                metric_key name;
                char mean[64];
                metric_stat(&name, pf_mean_stat(GATE_ALPHA, mean), b, k, METRIC_NONE);
                const double a = pf_key(src[i], "analysis", &name);
                cell[ns][b][k] = a;
                have += !isnan(a);
            }
            qsort(cell[ns][b], (size_t)h, sizeof cell[ns][b][0], pf_cmp_dbl); /* sorted within the block */
        }
        if (!have) continue;
        snprintf(seeds[ns], sizeof seeds[ns], "%s", r[i].t.seed);
        ns++;
    }
    if (!ns) {
        pf_skip_on(s, "paper_alpha_heatmap", "no analysed SATFormer runs", b);
        return 0;
    }
    char path[4200];
    FILE *f = pf_open(dir, "paper_alpha_heatmap", path, sizeof path, err, errlen);
    if (!f) return -1;
    fprintf(f, "block\tseed_rank\tmean_alpha\n"); /* seed_rank = seed index · (H + 1) + rank within the block */
    double hi = 0;
    for (int q = 0; q < ns; q++)
        for (int b = 1; b < L; b++)
            for (int k = 0; k < H; k++) {
                double m = cell[q][b][k];
                fprintf(f, "%d\t%d", b, q * (H + 1) + k);
                pf_num(f, m);
                fprintf(f, "\n");
                if (!isnan(m)) hi = fmax(hi, m);
            }
    if (!(hi > 0)) hi = 1;
    if (pf_close(f, path, err, errlen)) return -1;
    char vars[512], list[160] = "";
    for (int q = 0; q < ns; q++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", q ? ", " : "", seeds[q]);
    snprintf(vars, sizeof vars,
             "title='SATFormer mean gate α per block; seeds %s left to right, heads sorted by α within each block'; "
             "cblabel='mean α'; xlab='KV heads sorted within the block, one panel per seed'; cbmin=0; cbmax=%.9g",
             list, hi);
    return pf_draw(s, "heatmap.gp", path, dir, "paper_alpha_heatmap", vars, err, errlen);
}

/* Mean α per block and token category over the SATFormer seeds. */
static int fig_category(const runset_run *const *src, const paper_run *r, int n, const paper_base *b, const char *dir,
                        paper_figs *s, char *err, size_t errlen) {
    enum { MAXL = 64 };
    static const int cat[3] = {CAT_SEMANTIC, CAT_STRUCTURAL, CAT_FUNCTIONAL};
    acc a[MAXL][3];
    memset(a, 0, sizeof a);
    int L = 0;
    for (int i = 0; i < n; i++) {
        if (!pf_is(&r[i], b, "satformer", "none", "none")) continue;
        L = src[i] ? (int)src[i]->n_layer : 0;
        L = L < MAXL ? L : MAXL;
        for (int b = 1; b < L; b++)
            for (int c = 0; c < 3; c++) {
                metric_key name;
                char mean[64];
                metric_stat(&name, pf_mean_stat(GATE_ALPHA, mean), b, METRIC_NONE, cat[c]);
                acc_add(&a[b][c], pf_key(src[i], "analysis", &name));
            }
    }
    if (L < 2 || !a[1][0].n) {
        pf_skip_on(s, "paper_category", "no analysed SATFormer runs", b);
        return 0;
    }
    char path[4200];
    FILE *f = pf_open(dir, "paper_category", path, sizeof path, err, errlen);
    if (!f) return -1;
    fprintf(f, "block\tsemantic\tsd\tstructural\tsd\tfunctional\tsd\n");
    for (int b = 1; b < L; b++) {
        fprintf(f, "%d", b);
        for (int c = 0; c < 3; c++) pf_num(f, acc_mean(&a[b][c])), pf_num(f, acc_sd(&a[b][c]));
        fprintf(f, "\n");
    }
    if (pf_close(f, path, err, errlen)) return -1;
    return pf_draw(s, "paper_category.gp", path, dir, "paper_category",
                   "title='SATFormer mean α by token category and block, mean ± sd over seeds'", err, errlen);
}

/* ΔL when the gates are zeroed or set to their mean, over seeds. */
static int fig_ablation(const paper_run *r, int n, const paper_base *b, const char *dir, paper_figs *s, char *err,
                        size_t errlen) {
    acc sz = {0}, sm = {0}, rz = {0};
    for (int i = 0; i < n; i++) {
        if (pf_is(&r[i], b, "satformer", "none", "none"))
            acc_add(&sz, r[i].zero_dl), acc_add(&sm, r[i].mean_dl);
        if (pf_is(&r[i], b, "resformer", "none", "none")) acc_add(&rz, r[i].zero_dl);
    }
    if (!sz.n && !rz.n) {
        pf_skip_on(s, "paper_ablation", "no ablated SATFormer or ResFormer runs", b);
        return 0;
    }
    char path[4200];
    FILE *f = pf_open(dir, "paper_ablation", path, sizeof path, err, errlen);
    if (!f) return -1;
    fprintf(f, "intervention\tdelta_loss\tsd\n");
    const struct {
        const char *label;
        const acc *a;
    } rows[] = {{"SATFormer: α := 0", &sz}, {"SATFormer: α := its mean", &sm}, {"ResFormer: λ1 := 0", &rz}};
    for (size_t k = 0; k < 3; k++) {
        if (!rows[k].a->n) continue;
        fprintf(f, "%s", rows[k].label);
        pf_num(f, acc_mean(rows[k].a)), pf_num(f, acc_sd(rows[k].a));
        fprintf(f, "\n");
    }
    if (pf_close(f, path, err, errlen)) return -1;
    return pf_draw(s, "paper_bars.gp", path, dir, "paper_ablation",
                   "title='Gate ablations: loss increase, mean ± sd over seeds'; ylab='ΔL (nats/token)'", err, errlen);
}

/* Claims 1–2 (Q4): TSA's halting probabilities on copy and sort — every (router, probe token) of
 * the last traced step in ANALYZE_P_BINS bins of [0, 1] (analyze: analysis/p_hist_b<i>), the share
 * per bin, mean ± sd over seeds, one series per (task, λ).  Decided routers put their mass near 0
 * and 1; a share near 0.5 is a token that real skipping treats unlike the soft model. */
static int fig_p_hist(const runset_run *const *src, const paper_run *r, int n, const char *dir, paper_figs *s,
                      char *err, size_t errlen) {
    enum { MAXS = 6 };
    static const char *const tasks[] = {"copy", "sort"};
    struct {
        const char *task;
        double lambda;
        acc bin[ANALYZE_P_BINS];
    } ser[MAXS];
    int ns = 0;
    for (size_t t = 0; t < sizeof tasks / sizeof *tasks; t++)
        for (int i = 0; i < n; i++) {
            if (strcmp(r[i].t.data, tasks[t]) || strcmp(r[i].depth, "tsa")) continue;
            double v[ANALYZE_P_BINS];
            int have = 1;
            for (int b = 0; b < ANALYZE_P_BINS && have; b++) {
                char stat[32];
                metric_key name;
                snprintf(stat, sizeof stat, "p_hist_b%d", b);
                metric_stat(&name, stat, METRIC_NONE, METRIC_NONE, METRIC_NONE);
                v[b] = pf_key(src[i], ANALYZE_SPLIT, &name);
                have = !isnan(v[b]);
            }
            if (!have) continue;
            int k = 0;
            while (k < ns && !(ser[k].task == tasks[t] && fabs(ser[k].lambda - r[i].t.lambda) < 1e-12)) k++;
            if (k == ns) {
                if (ns == MAXS) continue;
                memset(&ser[ns], 0, sizeof ser[ns]);
                ser[ns].task = tasks[t], ser[ns].lambda = r[i].t.lambda, ns++;
            }
            for (int b = 0; b < ANALYZE_P_BINS; b++) acc_add(&ser[k].bin[b], v[b]);
        }
    if (!ns) {
        pf_skip(s, "paper_p_hist", "no analysed TSA runs on copy or sort (analyze records p_hist from their traces)");
        return 0;
    }
    char path[4200];
    FILE *f = pf_open(dir, "paper_p_hist", path, sizeof path, err, errlen);
    if (!f) return -1;
    fprintf(f, "p");
    for (int k = 0; k < ns; k++) fprintf(f, "\t%s λ=%g (n=%d)\tsd", ser[k].task, ser[k].lambda, ser[k].bin[0].n);
    fprintf(f, "\n");
    for (int b = 0; b < ANALYZE_P_BINS; b++) {
        fprintf(f, "%.3g", (b + 0.5) / ANALYZE_P_BINS);
        for (int k = 0; k < ns; k++) pf_num(f, acc_mean(&ser[k].bin[b])), pf_num(f, acc_sd(&ser[k].bin[b]));
        fprintf(f, "\n");
    }
    if (pf_close(f, path, err, errlen)) return -1;
    char vars[256];
    snprintf(vars, sizeof vars, "nser=%d; binw=%.6g; title='TSA halting probabilities p (every router × probe token, "
             "last step): share per bin, mean ± sd over seeds'", ns, 1.0 / ANALYZE_P_BINS);
    return pf_draw(s, "paper_p_hist.gp", path, dir, "paper_p_hist", vars, err, errlen);
}

typedef struct {
    long step;
    double t, loss, tokens; /* t: seconds at the bench's step time (NaN: not benched) */
} pf_pt;

static int pf_pt_cmp(const void *a, const void *b) {
    const pf_pt *x = a, *y = b;
    return (x->step > y->step) - (x->step < y->step);
}

/* The validation-loss series of the figures' runs, read once for the set (db_set_series: the run set
 * holds latest values, not series): run i's points, by step, are p[i][0 .. np[i]). */
typedef struct {
    const paper_run *r;
    int n;
    gl_metric_point **p;
    int *np, *cap;
    int last; /* the run the previous row was of (rows come grouped by run id) */
    int oom;
} pf_series;

static int pf_on_point(const char *run_id, const gl_metric_point *pt, void *ctx) {
    pf_series *s = ctx;
    if (s->last < 0 || strcmp(s->r[s->last].t.run_id, run_id)) {
        s->last = -1;
        for (int i = 0; i < s->n && s->last < 0; i++)
            if (!strcmp(s->r[i].t.run_id, run_id)) s->last = i;
        if (s->last < 0) return 0; /* a run the figures do not draw */
    }
    const int i = s->last;
    if (s->np[i] == s->cap[i]) {
        int cap = s->cap[i] ? 2 * s->cap[i] : 64;
        gl_metric_point *q = realloc(s->p[i], (size_t)cap * sizeof *q);
        if (!q) return s->oom = 1;
        s->p[i] = q;
        s->cap[i] = cap;
    }
    s->p[i][s->np[i]++] = *pt;
    return 0;
}

static void pf_series_free(pf_series *s) {
    for (int i = 0; s->p && i < s->n; i++) free(s->p[i]);
    free(s->p), free(s->np), free(s->cap);
    memset(s, 0, sizeof *s);
}

/* val/loss of every run of r (the plan's FINISHED runs, experiments paper-*) in one statement.
 * Returns 0, or -1 with a message (registry, memory); ser is freed by pf_series_free either way. */
static int pf_series_read(gl_db *db, const paper_run *r, int n, pf_series *ser, char *err, size_t errlen) {
    const gl_set_filter plan_runs = {.status = "FINISHED", .prefix = "paper-"};
    *ser = (pf_series){.r = r, .n = n, .last = -1};
    const size_t m = (size_t)(n > 0 ? n : 1);
    ser->p = calloc(m, sizeof *ser->p), ser->np = calloc(m, sizeof *ser->np), ser->cap = calloc(m, sizeof *ser->cap);
    if (!ser->p || !ser->np || !ser->cap) {
        snprintf(err, errlen, "out of memory for the loss series of %d runs", n);
        return -1;
    }
    if (db_set_series(db, &plan_runs, "val", "loss", pf_on_point, ser, err, errlen)) return -1;
    if (ser->oom) {
        snprintf(err, errlen, "out of memory reading the validation-loss series");
        return -1;
    }
    return 0;
}

/* Every seed's validation loss of the runs matching (value, cross): points by
 * step with seconds at the bench's step time.  *out malloc'd; *seeds the runs. */
static int pf_loss_points(const pf_series *ser, const paper_run *r, int n, const paper_base *b, const char *value,
                          const char *cross, double step_s, pf_pt **out, int *np, int *seeds, char *err,
                          size_t errlen) {
    pf_pt *all = NULL;
    int k = 0, cap = 0;
    *seeds = 0;
    for (int i = 0; i < n; i++) {
        if (!pf_is(&r[i], b, value, "none", cross)) continue;
        const gl_metric_point *pts = ser->p[i];
        const int m = ser->np[i];
        if (m > 1) {
            if (k + m > cap) {
                cap = 2 * (k + m) + 16;
                pf_pt *q = realloc(all, (size_t)cap * sizeof *q);
                if (!q) {
                    free(all);
                    snprintf(err, errlen, "out of memory");
                    return -1;
                }
                all = q;
            }
            for (int j = 0; j < m; j++)
                if (!isnan(pts[j].value)) /* time: the bench's idle-machine step time, never this run's shared-machine clock */
                    all[k++] = (pf_pt){pts[j].step, pts[j].step * step_s, pts[j].value,
                                       (double)pts[j].step * r[i].batch * r[i].seq_len};
            (*seeds)++;
        }
    }
    if (k > 1) qsort(all, (size_t)k, sizeof *all, pf_pt_cmp); /* all is NULL when no run had points */
    *out = all;
    *np = k;
    return 0;
}

/* Training loss against wall-clock time, every variant over its seeds: per
 * step the mean time and the mean ± sd of the loss. */
static int fig_loss_time(const runset *rs, const pf_series *ser, const paper_run *r, int n, const paper_base *b,
                         const char *dir, paper_figs *s, char *err, size_t errlen) {
    const struct {
        const char *title, *value, *cross, *bench;
    } v[] = {{"plain", "none", "none", "base"},          {"ResFormer", "resformer", "none", "resformer"},
             {"SATFormer", "satformer", "none", "satformer"}, {"Hyper-Connections", "none", "hyper", "hyper"},
             {"MUDDFormer", "none", "mudd", "mudd"},       {"DenseFormer", "none", "denseformer", NULL}};
    char path[4200];
    FILE *f = NULL;
    int curves = 0, most = 0, fewest = 0, timed = 0;
    for (size_t k = 0; k < sizeof v / sizeof v[0]; k++) {
        pf_pt *pts = NULL;
        int np = 0, seeds = 0;
        double step_s = NAN;
        if (v[k].bench) { /* the bench stage's step time of this variant (scale s, one idle process; a FINISHED run) */
            char id[96];
            snprintf(id, sizeof id, "cost-paper-s-%s", v[k].bench);
            step_s = pf_val(pf_find(rs, id), "bench", "step_ms") / 1000;
        }
        if (pf_loss_points(ser, r, n, b, v[k].value, v[k].cross, step_s, &pts, &np, &seeds, err, errlen)) goto fail;
        if (np > 1) {
            if (!f && !(f = pf_open(dir, "paper_loss_time", path, sizeof path, err, errlen))) {
                free(pts);
                return -1;
            }
            fprintf(f, "%s%s (%d seed%s)\ttokens\tloss\tsd\tseeds\tbench_s\n", curves ? "\n\n" : "", v[k].title, seeds,
                    seeds == 1 ? "" : "s");
            for (int a = 0; a < np;) {
                int b = a;
                acc l = {0};
                for (; b < np && pts[b].step == pts[a].step; b++) acc_add(&l, pts[b].loss);
                double sd = acc_sd(&l);
                fprintf(f, "%ld\t%.0f\t%.6g\t%.6g\t%d", pts[a].step, pts[a].tokens, acc_mean(&l), isnan(sd) ? 0.0 : sd,
                        l.n);
                pf_num(f, pts[a].t);
                fprintf(f, "\n");
                timed |= !isnan(pts[a].t);
                a = b;
            }
            if (seeds > most) most = seeds;
            if (!curves || seeds < fewest) fewest = seeds;
            curves++;
        }
        free(pts);
    }
    if (!curves) {
        pf_skip_on(s, "paper_loss_time", "no runs of the value or cross-layer variants", b);
        return 0;
    }
    if (pf_close(f, path, err, errlen)) return -1;
    char vars[400];
    snprintf(vars, sizeof vars, "title='Validation loss (evaluation windows) by training tokens and by time at the bench "
             "step time, mean ± sd over %s%d seed%s'; timed=%d; fig_w=%g", fewest < most ? "up to " : "", most,
             most == 1 ? "" : "s", timed, timed ? 9.0 : 5.5);
    return pf_draw(s, "paper_loss_time.gp", path, dir, "paper_loss_time", vars, err, errlen);
fail:
    if (f) fclose(f);
    return -1;
}

int paper_figures(gl_db *db, const runset *rs, const paper_run *runs, int n, const paper_base *b,
                  const paper_points *pp, const char *dir, paper_figs *s, char *err, size_t errlen) {
    memset(s, 0, sizeof *s);
    pf_series ser = {0};
    int rc = -1;
    const runset_run **src = calloc((size_t)(n > 0 ? n : 1), sizeof *src); /* runs[i]'s row of the run set */
    if (!src) {
        snprintf(err, errlen, "out of memory for %d runs", n);
        return -1;
    }
    for (int i = 0; i < n; i++) src[i] = pf_find(rs, runs[i].t.run_id);
    if (pf_series_read(db, runs, n, &ser, err, errlen)) goto done;
    if (fig_pareto(src, runs, n, b, pp, dir, s, err, errlen) || fig_heatmap(src, runs, n, b, dir, s, err, errlen) ||
        fig_category(src, runs, n, b, dir, s, err, errlen) || fig_ablation(runs, n, b, dir, s, err, errlen) ||
        fig_loss_time(rs, &ser, runs, n, b, dir, s, err, errlen) || fig_p_hist(src, runs, n, dir, s, err, errlen))
        goto done;
    rc = 0;
done:
    pf_series_free(&ser);
    free(src);
    return rc;
}

void paper_fig_skip(paper_figs *s, const char *name, const char *why) { pf_skip(s, name, why); }

int paper_fig_forest(const char *tsv, const char *dir, int rows, const char *panels, paper_figs *s, char *err,
                     size_t errlen) {
    char vars[1024], units[512] = "", counts[256] = "", papers[128] = "", buf[512];
    int np = 0;
    snprintf(buf, sizeof buf, "%s", panels);
    for (char *save = NULL, *w = strtok_r(buf, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
        char *c2 = strrchr(w, ':');
        if (!c2) continue;
        *c2 = 0;
        char *c1 = strrchr(w, ':');
        if (!c1) continue;
        *c1 = 0;
        size_t lu = strlen(units), lc = strlen(counts), lp = strlen(papers);
        snprintf(units + lu, sizeof units - lu, "%s%s", lu ? " " : "", w);
        snprintf(counts + lc, sizeof counts - lc, "%s%s", lc ? " " : "", c1 + 1);
        snprintf(papers + lp, sizeof papers - lp, "%s%s", lp ? " " : "", c2 + 1);
        np++;
    }
    snprintf(vars, sizeof vars, "fig_w=7.5; fig_h=%g; npanels=%d; units='%s'; counts='%s'; papers='%s'; nrows=%d; "
             "title='Every judged row: deciding quantity − its threshold, 95 %% interval, paper (x); one panel per unit'",
             1.0 + 0.22 * rows + 0.55 * np, np, units, counts, papers, rows);
    return pf_draw(s, "paper_forest.gp", tsv, dir, "paper_forest", vars, err, errlen);
}
