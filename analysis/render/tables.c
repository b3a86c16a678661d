/*
 * tables.c — the paper tables from the registry (tables.h): the FINISHED runs
 * as the run loader gives them (analysis/runs/runset.h: the headline and label
 * of the registry's views), grouped where they differ only in their seed, and
 * rendered as Markdown and LaTeX (booktabs) side by side.
 *
 * What it does not do: run or evaluate models, read traces, or invent a
 * number — a metric missing from the registry shows as "–", a comparison
 * that cannot be made says so in its cell.  Validation numbers are the
 * headline val/final.{loss,bpc,token_acc,seq_acc,active_frac,tlops_saved}
 * (the whole split, recorded at the end of training or by `eval --record`),
 * all from one measurement; a run without a headline falls back to the last
 * val/loss, val/bpc, … of its periodic evaluations, marked "†".  Throughput
 * is the mean of train/tokens_per_s over every log row after the first (the
 * first includes start-up).
 */
#include "analysis/render/tables.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/fileio.h"
#include "store/metric.h"
#include "analysis/measure/ablate.h"
#include "analysis/runs/runset.h"
#include "analysis/core/stats.h"
#include "analysis/core/report.h"

/* ---- the runs: the run loader's rows ---- */

int tables_collect(gl_db *db, const char *experiment, runset_row **runs_out, int *n_out, char *err, size_t errlen) {
    runset rs;
    gl_set_filter f = {.status = "FINISHED", .experiment = experiment};
    *runs_out = NULL;
    *n_out = 0;
    if (runset_load_set(db, &f, &rs, err, errlen)) return -1;
    runset_row *v = calloc((size_t)(rs.n > 0 ? rs.n : 1), sizeof *v);
    if (!v) {
        runset_free(&rs);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (int i = 0; i < rs.n; i++) v[i] = rs.r[i].t;
    *runs_out = v;
    *n_out = rs.n;
    runset_free(&rs);
    return 0;
}

double tables_t95(int df) { return st_t95(df); }

void tables_mean_std(const double *x, int n, double *mean, double *std, int *k) {
    st_summary s = st_describe(x, n, 0.95);
    *k = s.n;
    *mean = s.mean;
    *std = s.sd;
}

/* ---- a table: cells in two renderings ---- */

#define TB_MAX_COL 12 /* the widest table has 12 columns */

typedef struct {
    char md[160];
    char tex[200];
} tb_cell;

typedef struct {
    const char *name, *title;
    int ncol;
    const char *head_md[TB_MAX_COL];
    const char *head_tex[TB_MAX_COL];
    const char *align; /* one of l/r per column */
    tb_cell *cells;    /* [nrows * ncol] */
    int nrows, cap;
    int periodic;      /* a cell fell back to a periodic evaluation ("†"): the note says so */
    char missing[400]; /* routed runs left out: their hard loss is not recorded ("" none) */
    char soft[600];    /* the routed rows' soft losses, named in a note under the table ("" none) */
} tb_table;

#define TB_SOFT_NOTE                                                                                           \
    "Not shown: TSA and early-exit runs whose loss with the skipping done is not recorded (their soft loss, "  \
    "every block run, is not their headline); `gatelab eval RUN --record` records it: "

#define TB_DAGGER_NOTE                                                                                         \
    "† the run's last periodic evaluation (a few validation windows), not the whole split: it has no headline; " \
    "record one with `gatelab eval RUN --record`."

static void tb_free(tb_table *t) {
    free(t->cells);
    t->cells = NULL;
    t->nrows = t->cap = 0;
}

/* LaTeX-escape s into out. */
static void tb_tex_escape(const char *s, char *out, size_t n) {
    size_t k = 0;
    for (; *s && k + 16 < n; s++) {
        const char *rep = NULL;
        char one[2] = {*s, 0};
        switch (*s) {
        case '_': rep = "\\_"; break;
        case '%': rep = "\\%"; break;
        case '&': rep = "\\&"; break;
        case '#': rep = "\\#"; break;
        case '$': rep = "\\$"; break;
        case '{': rep = "\\{"; break;
        case '}': rep = "\\}"; break;
        case '~': rep = "\\textasciitilde{}"; break;
        case '^': rep = "\\textasciicircum{}"; break;
        case '\\': rep = "\\textbackslash{}"; break;
        default: rep = one;
        }
        size_t l = strlen(rep);
        memcpy(out + k, rep, l);
        k += l;
    }
    out[k] = 0;
}

static tb_cell *tb_row(tb_table *t, char *err, size_t errlen) {
    if (t->nrows == t->cap) {
        int cap = t->cap ? 2 * t->cap : 16;
        tb_cell *c = realloc(t->cells, (size_t)cap * t->ncol * sizeof *c);
        if (!c) {
            snprintf(err, errlen, "out of memory building table %s", t->name);
            return NULL;
        }
        t->cells = c;
        t->cap = cap;
    }
    tb_cell *r = t->cells + (size_t)t->nrows * t->ncol;
    memset(r, 0, (size_t)t->ncol * sizeof *r);
    t->nrows++;
    return r;
}

static void tb_text(tb_cell *c, const char *s) {
    snprintf(c->md, sizeof c->md, "%s", s);
    tb_tex_escape(s, c->tex, sizeof c->tex);
}

static void tb_num(tb_cell *c, double v, const char *fmt) {
    if (isnan(v)) {
        snprintf(c->md, sizeof c->md, "–");
        snprintf(c->tex, sizeof c->tex, "--");
        return;
    }
    snprintf(c->md, sizeof c->md, fmt, v);
    snprintf(c->tex, sizeof c->tex, "$");
    snprintf(c->tex + 1, sizeof c->tex - 1, fmt, v);
    strcat(c->tex, "$");
}

static void tb_int(tb_cell *c, long v) {
    snprintf(c->md, sizeof c->md, "%ld", v);
    snprintf(c->tex, sizeof c->tex, "%ld", v);
}

/* mean ± std over seeds (digits after the point). */
static void tb_pm(tb_cell *c, const double *x, int n, int digits) {
    double m, s;
    int k;
    tables_mean_std(x, n, &m, &s, &k);
    if (!k) {
        tb_num(c, NAN, "%g");
        return;
    }
    if (k == 1 || isnan(s)) {
        snprintf(c->md, sizeof c->md, "%.*f", digits, m);
        snprintf(c->tex, sizeof c->tex, "$%.*f$", digits, m);
    } else {
        snprintf(c->md, sizeof c->md, "%.*f ± %.*f", digits, m, digits, s);
        snprintf(c->tex, sizeof c->tex, "$%.*f \\pm %.*f$", digits, m, digits, s);
    }
}

static int tb_write(const tb_table *t, const char *out_dir, const char *source, char *err, size_t errlen) {
    char path[4096];
    int rc = -1;
    FILE *f = NULL;
    snprintf(path, sizeof path, "%s/%s.md", out_dir, t->name);
    f = fileio_fopen_w(path);
    if (!f) goto io;
    fprintf(f, "### %s\n\n<!-- generated by `gatelab tables` from %s; do not edit -->\n\n|", t->title, source);
    for (int j = 0; j < t->ncol; j++) fprintf(f, " %s |", t->head_md[j]);
    fprintf(f, "\n|");
    for (int j = 0; j < t->ncol; j++) fprintf(f, " %s |", t->align[j] == 'r' ? "---:" : "---");
    fprintf(f, "\n");
    for (int i = 0; i < t->nrows; i++) {
        fprintf(f, "|");
        for (int j = 0; j < t->ncol; j++) fprintf(f, " %s |", t->cells[(size_t)i * t->ncol + j].md);
        fprintf(f, "\n");
    }
    if (t->periodic) fprintf(f, "\n%s\n", TB_DAGGER_NOTE);
    if (t->missing[0]) fprintf(f, "\n%s%s.\n", TB_SOFT_NOTE, t->missing);
    if (t->soft[0])
        fprintf(f, "\nTSA and early exit are shown with the skipping done (tokens with p > 0.5, or past their exit, "
                   "skip the block; α and TLOps of that evaluation); their soft loss, every block run with its update "
                   "scaled by 1 − p (what training optimised), nats/token: %s.\n", t->soft);
    if (ferror(f) | fclose(f)) {
        f = NULL;
        goto io;
    }
    snprintf(path, sizeof path, "%s/%s.tex", out_dir, t->name);
    f = fileio_fopen_w(path);
    if (!f) goto io;
    char title[256], src[1024];
    tb_tex_escape(t->title, title, sizeof title);
    tb_tex_escape(source, src, sizeof src);
    fprintf(f, "%% generated by gatelab tables from %s; do not edit.  Needs \\usepackage{booktabs}.\n", src);
    fprintf(f, "\\begin{table}[t]\n\\centering\n\\caption{%s}\n\\label{tab:%s}\n\\begin{tabular}{%s}\n\\toprule\n", title,
            t->name, t->align);
    for (int j = 0; j < t->ncol; j++) fprintf(f, "%s%s", j ? " & " : "", t->head_tex[j]);
    fprintf(f, " \\\\\n\\midrule\n");
    for (int i = 0; i < t->nrows; i++) {
        for (int j = 0; j < t->ncol; j++) fprintf(f, "%s%s", j ? " & " : "", t->cells[(size_t)i * t->ncol + j].tex);
        fprintf(f, " \\\\\n");
    }
    fprintf(f, "\\bottomrule\n\\end{tabular}\n");
    if (t->periodic) {
        char note[512];
        tb_tex_escape(TB_DAGGER_NOTE, note, sizeof note);
        fprintf(f, "\\par\\footnotesize %s\n", note);
    }
    if (t->missing[0]) {
        char note[1400];
        tb_tex_escape(TB_SOFT_NOTE, note, sizeof note);
        size_t k = strlen(note);
        tb_tex_escape(t->missing, note + k, sizeof note - k);
        fprintf(f, "\\par\\footnotesize %s.\n", note);
    }
    if (t->soft[0]) {
        char note[1400];
        tb_tex_escape(t->soft, note, sizeof note);
        fprintf(f, "\\par\\footnotesize TSA and early exit with the skipping done; their soft loss (every block "
                   "run, nats/token): %s\n", note);
    }
    fprintf(f, "\\end{table}\n");
    if (ferror(f) | fclose(f)) {
        f = NULL;
        goto io;
    }
    return 0;
io:
    snprintf(err, errlen, "cannot write %s", path);
    if (f) fclose(f);
    return rc;
}

/* ---- grouping runs that differ only in their seed ---- */

static int tb_scale_rank(const char *s) {
    static const char *order[] = {"xs", "s", "m", "l", "xl"};
    for (int i = 0; i < 5; i++)
        if (!strcmp(s, order[i])) return i;
    return 10;
}

/* Variants in the order of their value residual's row in model/variants.h
 * (baseline = none first); the variant label is "<value residual>[+…]". */
static int tb_variant_rank(const char *v) {
    char vr[64];
    snprintf(vr, sizeof vr, "%.*s", (int)strcspn(v, "+["), v);
    gl_value_residual r;
    if (!strcmp(vr, "baseline")) return VR_NONE;
    return config_parse_value_residual(vr, &r) == 0 ? (int)r : VR_COUNT;
}

static int tb_cmp(const void *a, const void *b) {
    const runset_row *x = a, *y = b;
    int c = strcmp(x->data, y->data);
    if (c) return c;
    int r = tb_scale_rank(x->scale) - tb_scale_rank(y->scale);
    if (r) return r;
    if ((c = strcmp(x->scale, y->scale))) return c;
    r = tb_variant_rank(x->variant) - tb_variant_rank(y->variant);
    if (r) return r;
    if ((c = strcmp(x->variant, y->variant))) return c;
    int xn = isnan(x->lambda), yn = isnan(y->lambda);
    if (xn != yn) return xn - yn;
    if (!xn && x->lambda != y->lambda) return x->lambda < y->lambda ? -1 : 1;
    xn = isnan(x->knob), yn = isnan(y->knob);
    if (xn != yn) return xn - yn;
    if (!xn && x->knob != y->knob) return x->knob < y->knob ? -1 : 1;
    if (x->group != y->group) return x->group < y->group ? -1 : 1;
    if ((c = strcmp(x->seed, y->seed))) return c;
    return strcmp(x->run_id, y->run_id);
}

void tables_sort(runset_row *runs, int n) {
    if (n > 1) qsort(runs, (size_t)n, sizeof *runs, tb_cmp);
}

/* 1 when two (sorted) runs belong to the same group: the run set's one rule
 * (runset_group_key: the config less the seed and run bookkeeping). */
static int tb_same(const runset_row *x, const runset_row *y) { return x->group == y->group; }

typedef enum { TB_LOSS, TB_LAMBDA, TB_ACC, TB_TPS } tb_kind;

static int tb_wanted(const runset_row *r, tb_kind k) {
    switch (k) {
    case TB_LOSS: return !isnan(r->val_loss);
    case TB_LAMBDA: return !isnan(r->lambda) && !r->hard_missing;
    case TB_ACC: return !r->text && (!isnan(r->tok_acc) || !isnan(r->seq_acc));
    case TB_TPS: return !isnan(r->tokens_per_s);
    }
    return 0;
}

/* One cell over the k seeds of a group: mean ± sd, or for one seed its value
 * ± its standard error (se, NaN: the value alone); "†" appended when dagger. */
static void tb_stat(tb_cell *c, const double *x, int k, int digits, double se, int dagger) {
    if (k == 1 && !isnan(x[0]) && !isnan(se) && se > 0) {
        snprintf(c->md, sizeof c->md, "%.*f ± %.*f", digits, x[0], digits, se);
        snprintf(c->tex, sizeof c->tex, "$%.*f \\pm %.*f$", digits, x[0], digits, se);
    } else {
        tb_pm(c, x, k, digits);
    }
    if (dagger && strcmp(c->md, "–")) {
        strcat(c->md, " †");
        strcat(c->tex, "$^\\dagger$");
    }
}

/* A signed difference with its standard error: "+0.2500 ± 0.0123" ("+0.2500" without one). */
static void tb_delta(tb_cell *c, double v, double se) {
    if (isnan(v)) {
        tb_num(c, NAN, "%g");
    } else if (isnan(se) || se <= 0) {
        tb_num(c, v, "%+.4f");
    } else {
        snprintf(c->md, sizeof c->md, "%+.4f ± %.4f", v, se);
        snprintf(c->tex, sizeof c->tex, "$%+.4f \\pm %.4f$", v, se);
    }
}

/* What the group's validation numbers rest on: one provenance and step
 * ("val[0,100) 6400 tok @40"), "mixed" when the seeds differ; "periodic"
 * first when they are not headlines. */
static void tb_measured(tb_cell *c, const runset_row *const *g, int k) {
    char p[64], text[128];
    int same = 1;
    for (int q = 1; q < k; q++)
        same &= db_prov_same(&g[q]->val_prov, &g[0]->val_prov) && g[q]->val_step == g[0]->val_step &&
                g[q]->headline == g[0]->headline;
    if (!k || g[0]->val_step < 0) snprintf(text, sizeof text, "–");
    else if (!same) snprintf(text, sizeof text, "mixed (see `gatelab runs`)");
    else snprintf(text, sizeof text, "%s%s @%ld", g[0]->headline ? "" : "periodic ",
                  db_prov_str(&g[0]->val_prov, p, sizeof p), g[0]->val_step);
    tb_text(c, text);
}

/* The loss difference of the group g (k runs) from its baseline, paired by
 * seed, on one token set: "+d [lo, hi]" (95 % t interval, two or more seeds),
 * "+d (1 seed)", or why there is none.  The baseline of a run is the run
 * set's partner (runset_partner_key_ini: the same config but for the axis's
 * keys, the same seed) along the variant's axis — the first of
 * value_residual, depth_routing, cross_layer that is not "none" — whose value
 * there is "none".  So satformer pairs with the plain run of the same budget,
 * data and scale, baseline+tsa with the dense run, satformer+tsa with
 * baseline+tsa (the value residual is what its label leads with), and a run
 * with another train.steps or lr has no baseline unless one was trained. */
static void tb_vs_baseline(tb_cell *c, const runset_row *const *g, int k, const runset_row *runs, int n) {
    int ax = 0;
    while (k && ax < 3 && !strcmp(g[0]->axis[ax], "none")) ax++;
    if (!k || ax == 3) {
        tb_text(c, "–");
        return;
    }
    double d[64];
    int nd = 0, other = 0, seen = 0;
    for (int q = 0; q < k && nd < 64; q++)
        for (int j = 0; j < n; j++) {
            const runset_row *b = &runs[j];
            if (strcmp(b->axis[ax], "none") || !g[q]->partner[ax] || b->partner[ax] != g[q]->partner[ax] ||
                isnan(b->val_loss))
                continue;
            seen = 1;
            if (!db_prov_same(&b->val_prov, &g[q]->val_prov) || !b->headline || !g[q]->headline ||
                isnan(g[q]->val_loss)) {
                other = 1;
                continue;
            }
            d[nd++] = g[q]->val_loss - b->val_loss;
            break;
        }
    char text[128];
    st_summary ds = st_describe(d, nd, 0.95);
    const double m = ds.mean;
    const int kk = ds.n;
    if (!seen) snprintf(text, sizeof text, "– (no baseline run)");
    else if (!nd) snprintf(text, sizeof text, other ? "not matched: other tokens or no headline" : "–");
    else if (kk == 1) snprintf(text, sizeof text, "%+.4f (1 seed)", m);
    else {
        snprintf(text, sizeof text, "%+.4f [%+.4f, %+.4f]", m, ds.lo, ds.hi);
    }
    tb_text(c, text);
}

/* Fill t with one row per group of the runs wanted for kind. */
static int tb_grouped(tb_table *t, const runset_row *runs, int n, tb_kind kind, char *err, size_t errlen) {
    double *x[6];
    const runset_row **g = malloc((size_t)(n > 0 ? n : 1) * sizeof *g);
    for (int q = 0; q < 6; q++) x[q] = malloc((size_t)(n > 0 ? n : 1) * sizeof(double));
    int rc = -1;
    for (int q = 0; q < 6; q++)
        if (!x[q] || !g) {
            snprintf(err, errlen, "out of memory");
            goto cleanup;
        }
    for (int i = 0; i < n && (kind == TB_LOSS || kind == TB_LAMBDA); i++) { /* say who is left out, and why */
        size_t used = strlen(t->missing);
        if (runs[i].hard_missing && used + strlen(runs[i].run_id) + 8 < sizeof t->missing)
            snprintf(t->missing + used, sizeof t->missing - used, "%s%s", used ? ", " : "", runs[i].run_id);
    }
    for (int i = 0; i < n;) {
        if (!tb_wanted(&runs[i], kind)) {
            i++;
            continue;
        }
        int k = 0, j = i, dagger = 0;
        for (; j < n && tb_same(&runs[i], &runs[j]); j++) {
            const runset_row *r = &runs[j];
            if (!tb_wanted(r, kind)) continue;
            g[k] = r;
            dagger |= kind != TB_TPS && !r->headline;
            x[0][k] = r->val_loss;
            x[1][k] = r->val_bpc;
            x[2][k] = r->tok_acc * 100.0;
            x[3][k] = r->seq_acc * 100.0;
            x[4][k] = r->tokens_per_s;
            x[5][k] = r->active_frac;
            k++;
        }
        t->periodic |= dagger;
        const runset_row *g0 = &runs[i];
        if (kind == TB_LOSS || kind == TB_LAMBDA) {
            double sl[64];
            int ks = 0;
            for (int q = 0; q < k && ks < 64; q++)
                if (!isnan(g[q]->soft_loss) && !g[q]->hard_missing) sl[ks++] = g[q]->soft_loss;
            size_t used = strlen(t->soft);
            if (ks && used + 80 < sizeof t->soft) {
                tb_cell sc;
                tb_stat(&sc, sl, ks, 4, NAN, 0);
                snprintf(t->soft + used, sizeof t->soft - used, "%s%s %s %s", used ? "; " : "", g0->data,
                         g0->variant, sc.md);
            }
        }
        const double se = k == 1 ? g[0]->val_se : NAN;
        tb_cell *c = tb_row(t, err, errlen);
        if (!c) goto cleanup;
        int col = 0;
        tb_text(&c[col++], g0->data);
        tb_text(&c[col++], g0->scale);
        tb_text(&c[col++], g0->variant);
        switch (kind) {
        case TB_LOSS:
            tb_int(&c[col++], k);
            tb_stat(&c[col++], x[0], k, 4, se, dagger);
            if (g0->text) {
                /* bpc = loss / ln 2 / bytes per token: a BPE run's per-byte scale applies to its SE too */
                const double per = k == 1 && g[0]->val_loss > 0 ? g[0]->val_bpc / g[0]->val_loss : 1.0 / log(2.0);
                tb_stat(&c[col++], x[1], k, 4, fabs(per * log(2.0) - 1.0) < 1e-9 ? se / log(2.0) : se * per, dagger);
            }
            else tb_num(&c[col++], NAN, "%g");
            tb_vs_baseline(&c[col++], g, k, runs, n);
            tb_measured(&c[col++], g, k);
            break;
        case TB_LAMBDA: {
            tb_num(&c[col++], g0->lambda, "%g");
            tb_int(&c[col++], k);
            tb_stat(&c[col++], x[5], k, 3, NAN, dagger);
            double tl[64];
            int kk = 0;
            for (int q = 0; q < k && kk < 64; q++) tl[kk++] = g[q]->tlops_saved * 100.0;
            tb_stat(&c[col++], tl, kk, 1, NAN, dagger);
            tb_stat(&c[col++], x[0], k, 4, se, dagger);
            double sh[64];
            int ks = 0;
            for (int q = 0; q < k && ks < 64; q++) sh[ks++] = g[q]->settled * 100.0;
            tb_stat(&c[col++], sh, ks, 1, NAN, 0);
            tb_measured(&c[col++], g, k);
            break;
        }
        case TB_ACC:
            tb_int(&c[col++], k);
            tb_stat(&c[col++], x[2], k, 2, NAN, dagger);
            tb_stat(&c[col++], x[3], k, 2, NAN, dagger);
            tb_measured(&c[col++], g, k);
            break;
        case TB_TPS:
            tb_int(&c[col++], k);
            tb_pm(&c[col++], x[4], k, 0);
            break;
        }
        i = j;
    }
    rc = 0;
cleanup:
    for (int q = 0; q < 6; q++) free(x[q]);
    free(g);
    return rc;
}

/* The latest value of the sibling of k named by (quantity, cat), measured
 * like `like` (the same step and windows), NaN if absent. */
static double tb_sibling(const gl_metric_latest *m, int nm, const metric_ablation_key *k, const char *quantity, int cat,
                         const gl_metric_latest *like) {
    metric_key want;
    if (metric_ablation_sibling(&want, k, quantity, cat)) return NAN;
    return db_metrics_latest_find_like(m, nm, &want, like);
}

/* Ablation rows: one per (run, intervention, measurement) from split
 * "ablation": a rerun on other windows is its own row, never averaged with
 * the first, and every sibling (ratio, categories) comes from the same
 * measurement. */
static int tb_ablations(tb_table *t, gl_db *db, const runset_row *runs, int n, char *err, size_t errlen) {
    for (int i = 0; i < n; i++) {
        gl_metric_latest *m = NULL;
        int nm = 0;
        if (db_metrics_latest(db, runs[i].run_id, ABLATE_SPLIT, &m, &nm, err, errlen)) return -1;
        for (int k = 0; k < nm; k++) {
            /* one row per intervention's <mode>.delta_loss */
            metric_ablation_key key;
            if (!metric_ablation_parse(&m[k].key, &key) || strcmp(key.quantity, "delta_loss") || key.cat != METRIC_NONE)
                continue;
            double cat[CAT_COUNT], ratio = tb_sibling(m, nm, &key, "ppl_ratio", METRIC_NONE, &m[k]);
            for (int c = 0; c < CAT_COUNT; c++) cat[c] = tb_sibling(m, nm, &key, "delta_loss", c, &m[k]);
            tb_cell *c = tb_row(t, err, errlen);
            if (!c) {
                free(m);
                return -1;
            }
            int col = 0;
            tb_text(&c[col++], runs[i].run_id);
            tb_text(&c[col++], runs[i].variant);
            tb_text(&c[col++], runs[i].scale);
            tb_text(&c[col++], key.mode);
            tb_text(&c[col++], key.label);
            tb_delta(&c[col++], m[k].value, m[k].se);
            tb_num(&c[col++], ratio, "%.4f");
            for (int q = 0; q < CAT_COUNT; q++) tb_num(&c[col++], cat[q], "%+.4f");
            char p[64], on[96];
            snprintf(on, sizeof on, "%s @%ld", db_prov_str(&m[k].prov, p, sizeof p), m[k].step);
            tb_text(&c[col++], on);
        }
        free(m);
    }
    return 0;
}

/* The matched pair an early-exit run holds (matched.*, `gatelab eval EXIT
 * --match-run TSA --record`): 1 found, 0 none, -1 error. */
typedef struct {
    double tau, alpha_target, alpha, loss, loss_se, partner_loss;
    gl_metric_val at;
} tb_match;

static int tb_matched(gl_db *db, const char *run, tb_match *mt, char *err, size_t errlen) {
    metric_key name;
    metric_headline(&name, METRIC_MATCHED, "loss");
    int rc = db_metric_at(db, run, "val", name.name, name.params, NULL, &mt->at, err, errlen);
    if (rc != 1) return rc;
    mt->loss = mt->at.value;
    mt->loss_se = mt->at.se;
    const char *q[4] = {"tau", "alpha_target", "active_frac", "partner_loss"};
    double *dst[4] = {&mt->tau, &mt->alpha_target, &mt->alpha, &mt->partner_loss};
    for (int k = 0; k < 4; k++) {
        gl_metric_val v;
        metric_headline(&name, METRIC_MATCHED, q[k]);
        int r = db_metric_at(db, run, "val", name.name, name.params, &mt->at.prov, &v, err, errlen);
        if (r < 0) return -1;
        *dst[k] = r == 1 && v.step == mt->at.step ? v.value : NAN;
    }
    return 1;
}

/* TSA against early exit at a matched active fraction, on one token set:
 * each early-exit run's matched pair (τ found by bisection for the α of a TSA
 * run of the same data and scale, both on the whole validation split) beside
 * that TSA run's headline — hard (the skipping done: hard.active_frac and
 * hard.loss) when the pair was matched to its hard α, else soft.  A pair that is not matched — no bisection
 * recorded, α not reached within 0.005, or the TSA headline on other tokens —
 * says so in the row. */
static int tb_tsa_vs_exit(tb_table *t, gl_db *db, const runset_row *runs, int n, char *err, size_t errlen) {
    for (int j = 0; j < n; j++) {
        if (!strstr(runs[j].variant, "early_exit")) continue;
        int any_tsa = 0;
        for (int i = 0; i < n; i++)
            any_tsa |= !isnan(runs[i].lambda) && !strcmp(runs[i].data, runs[j].data) &&
                       !strcmp(runs[i].scale, runs[j].scale);
        if (!any_tsa) continue;
        tb_match mt;
        int rc = tb_matched(db, runs[j].run_id, &mt, err, errlen);
        if (rc < 0) return -1;
        /* the TSA run whose headline α is the target: its hard α (eval --match-run's target when recorded),
         * else its soft one; its loss of the same kind */
        const runset_row *tsa = NULL;
        int tsa_hard = 0;
        for (int i = 0; rc == 1 && i < n; i++) {
            const runset_row *r = &runs[i];
            if (isnan(r->lambda) || strcmp(r->data, runs[j].data) || strcmp(r->scale, runs[j].scale) || !r->headline ||
                !db_prov_same(&r->val_prov, &mt.at.prov))
                continue;
            const int hard = !isnan(r->hard_alpha) && !isnan(r->hard_loss) && fabs(r->hard_alpha - mt.alpha_target) <= 1e-9;
            if (!hard && fabs(r->active_frac - mt.alpha_target) > 1e-9) continue;
            if (!tsa || !strcmp(r->seed, runs[j].seed)) tsa = r, tsa_hard = hard; /* the same seed first */
        }
        tb_cell *c = tb_row(t, err, errlen);
        if (!c) return -1;
        int col = 0;
        char text[160], p[64];
        tb_text(&c[col++], runs[j].data);
        tb_text(&c[col++], runs[j].scale);
        tb_text(&c[col++], tsa ? tsa->run_id : "–");
        tb_num(&c[col++], tsa ? tsa->lambda : NAN, "%g");
        tb_num(&c[col++], rc == 1 ? mt.alpha_target : NAN, "%.3f");
        const double l_tsa = tsa ? (tsa_hard ? tsa->hard_loss : tsa->val_loss) : rc == 1 ? mt.partner_loss : NAN;
        /* val_se is the SE of the headline, the hard loss for a TSA run that has one (db_run_headline) */
        tb_stat(&c[col++], &l_tsa, 1, 4, tsa && (!tsa_hard || tsa->hard_loss == tsa->val_loss) ? tsa->val_se : NAN, 0);
        tb_text(&c[col++], runs[j].run_id);
        tb_num(&c[col++], rc == 1 ? mt.tau : NAN, "%.3f");
        tb_num(&c[col++], rc == 1 ? mt.alpha : NAN, "%.3f");
        tb_stat(&c[col++], &mt.loss, 1, 4, rc == 1 ? mt.loss_se : NAN, 0);
        if (rc != 1)
            snprintf(text, sizeof text, "not matched: run `gatelab eval %s --match-run TSA_RUN --record`",
                     runs[j].run_id);
        else if (isnan(mt.alpha) || fabs(mt.alpha - mt.alpha_target) > 0.005)
            snprintf(text, sizeof text, "not matched: α %.3f vs %.3f", mt.alpha, mt.alpha_target);
        else if (isnan(l_tsa))
            snprintf(text, sizeof text, "not matched: no TSA headline on these tokens");
        else snprintf(text, sizeof text, "%+.4f", mt.loss - l_tsa);
        tb_text(&c[col++], text);
        if (rc == 1) snprintf(text, sizeof text, "%s @%ld", db_prov_str(&mt.at.prov, p, sizeof p), mt.at.step);
        else snprintf(text, sizeof text, "–");
        tb_text(&c[col++], text);
    }
    return 0;
}

/* The cost table (`make bench`): training tokens/s and peak memory of every
 * variant relative to the baseline of the same scale, from split "bench". */
static int tb_cost(tb_table *t, const runset_row *runs, int n, char *err, size_t errlen) {
    for (int i = 0; i < n; i++) {
        if (isnan(runs[i].bench_tps)) continue;
        const runset_row *base = NULL;
        for (int j = 0; j < n && !base; j++)
            if (!isnan(runs[j].bench_tps) && !strcmp(runs[j].variant, "baseline") &&
                !strcmp(runs[j].scale, runs[i].scale) && !strcmp(runs[j].experiment, runs[i].experiment))
                base = &runs[j];
        tb_cell *c = tb_row(t, err, errlen);
        if (!c) return -1;
        int col = 0;
        tb_text(&c[col++], runs[i].scale);
        tb_text(&c[col++], runs[i].variant);
        tb_num(&c[col++], runs[i].bench_tps, "%.0f");
        tb_num(&c[col++], base ? runs[i].bench_tps / base->bench_tps : NAN, "%.3f");
        tb_num(&c[col++], base ? base->bench_tps / runs[i].bench_tps : NAN, "%.3f");
        tb_num(&c[col++], runs[i].bench_rss, "%.0f");
        tb_num(&c[col++], base ? runs[i].bench_rss / base->bench_rss : NAN, "%.3f");
    }
    return 0;
}

static void tb_note(tables_summary *s, const tb_table *t, const char *why) {
    if (s->n_skipped < TABLES_MAX) snprintf(s->skipped[s->n_skipped++], sizeof s->skipped[0], "%s: %s", t->name, why);
}

int tables_write_all(gl_db *db, const char *experiment, const char *out_dir, tables_summary *s, char *err,
                     size_t errlen) {
    memset(s, 0, sizeof *s);
    runset_row *runs = NULL;
    int n = 0, rc = -1;
    if (tables_collect(db, experiment, &runs, &n, err, errlen)) return -1;
    s->n_runs = n;
    tables_sort(runs, n);
    if (fileio_mkdir_p(out_dir, err, errlen)) goto cleanup;
    char source[512];
    snprintf(source, sizeof source, "the registry%s%s", experiment ? ", experiment " : "", experiment ? experiment : "");

    tb_table tabs[7] = {
        {"loss_by_variant",
         "Validation loss by variant and scale on the whole validation split (mean ± std over seeds; one seed: ± "
         "standard error over tokens); difference from the baseline paired by seed with its 95 % interval",
         8,
         {"Data", "Scale", "Variant", "Seeds", "Val loss (nats/token)", "Val bpc", "Δ vs baseline (paired)",
          "Measured on"},
         {"Data", "Scale", "Variant", "Seeds", "Val loss (nats/token)", "Val bpc", "$\\Delta$ vs baseline (paired)",
          "Measured on"},
         "lllrrrrl", NULL, 0, 0, 0, "", ""},
        {"tsa_lambda", "Token-selective depth: active fraction, TLOps saved and loss by λ (whole validation split); "
         "settled: share of halting tokens whose logit lens at the first skipped block has the final top-1 "
         "(`gatelab analyze`, its own windows)", 10,
         {"Data", "Scale", "Variant", "λ", "Seeds", "Active fraction α", "TLOps saved (%)", "Val loss (nats/token)",
          "Settled at halt (%)", "Measured on"},
         {"Data", "Scale", "Variant", "$\\lambda$", "Seeds", "Active fraction $\\alpha$", "TLOps saved (\\%)",
          "Val loss (nats/token)", "Settled at halt (\\%)", "Measured on"},
         "lllrrrrrrl", NULL, 0, 0, 0, "", ""},
        {"task_accuracy", "Synthetic tasks: accuracy on the scored positions (%)", 7,
         {"Task", "Scale", "Variant", "Seeds", "Token acc (%)", "Sequence acc (%)", "Measured on"},
         {"Task", "Scale", "Variant", "Seeds", "Token acc (\\%)", "Sequence acc (\\%)", "Measured on"}, "lllrrrl",
         NULL, 0, 0, 0, "", ""},
        {"throughput", "Training throughput (tokens/s, mean over log intervals)", 5,
         {"Data", "Scale", "Variant", "Seeds", "Tokens/s"}, {"Data", "Scale", "Variant", "Seeds", "Tokens/s"}, "lllrr",
         NULL, 0, 0, 0, "", ""},
        {"ablations",
         "Gate interventions: loss change ΔL (nats/token, ± paired standard error over tokens) on the validation "
         "windows each was measured on",
         11,
         {"Run", "Variant", "Scale", "Intervention", "Gates", "ΔL", "exp(ΔL)", "ΔL structural", "ΔL functional",
          "ΔL semantic", "Measured on"},
         {"Run", "Variant", "Scale", "Intervention", "Gates", "$\\Delta L$", "$\\exp(\\Delta L)$", "$\\Delta L$ structural",
          "$\\Delta L$ functional", "$\\Delta L$ semantic", "Measured on"},
         "lllllrrrrrl", NULL, 0, 0, 0, "", ""},
        {"tsa_vs_exit",
         "Token-selective depth against early exit at a matched active fraction α: τ found by bisection for the TSA "
         "run's α, both on the whole validation split (loss in nats/token)",
         12,
         {"Data", "Scale", "TSA run", "λ", "α (TSA)", "TSA loss", "Early-exit run", "τ", "α (exit)", "Exit loss",
          "Exit − TSA", "Measured on"},
         {"Data", "Scale", "TSA run", "$\\lambda$", "$\\alpha$ (TSA)", "TSA loss", "Early-exit run", "$\\tau$",
          "$\\alpha$ (exit)", "Exit loss", "Exit $-$ TSA", "Measured on"},
         "lllrrrlrrrll", NULL, 0, 0, 0, "", ""},
        {"cost", "Training cost by variant (`make bench`, one process per variant): throughput and peak memory relative to the baseline of the same scale", 7,
         {"Scale", "Variant", "Train tokens/s", "× baseline", "Baseline speed-up over it", "Peak RSS (MiB)", "Memory × baseline"},
         {"Scale", "Variant", "Train tokens/s", "$\\times$ baseline", "Baseline speed-up over it", "Peak RSS (MiB)",
          "Memory $\\times$ baseline"},
         "llrrrrr", NULL, 0, 0, 0, "", ""},
    };
    const tb_kind kinds[4] = {TB_LOSS, TB_LAMBDA, TB_ACC, TB_TPS};
    const char *why[7] = {"no finished run has val/loss", "no finished TSA run", "no finished copy/sort/mqar run",
                          "no finished run has train/tokens_per_s",
                          "no ablation results (run `gatelab ablate` or `gatelab heads`)",
                          "needs a TSA run and an early-exit run of the same data and scale (the pair: `gatelab eval EXIT "
                          "--match-run TSA --record`)",
                          "no cost runs (make bench records them as experiment cost-<tag>)"};
    for (int q = 0; q < 7; q++) {
        int r = q < 4 ? tb_grouped(&tabs[q], runs, n, kinds[q], err, errlen)
                : q == 4 ? tb_ablations(&tabs[q], db, runs, n, err, errlen)
                : q == 5 ? tb_tsa_vs_exit(&tabs[q], db, runs, n, err, errlen)
                         : tb_cost(&tabs[q], runs, n, err, errlen);
        if (r) goto free_tabs;
        if (!tabs[q].nrows) {
            tb_note(s, &tabs[q], why[q]);
            continue;
        }
        if (tb_write(&tabs[q], out_dir, source, err, errlen)) goto free_tabs;
        snprintf(s->written[s->n_written], sizeof s->written[0], "%s", tabs[q].name);
        s->rows[s->n_written++] = tabs[q].nrows;
    }
    rc = 0;
free_tabs:
    for (int q = 0; q < 7; q++) tb_free(&tabs[q]);
cleanup:
    free(runs);
    return rc;
}
