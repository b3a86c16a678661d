/*
 * tables.c — the paper tables from the registry (tables.h): collect each
 * FINISHED run's parameters and final metrics, group runs that differ only in
 * their seed, and render Markdown and LaTeX (booktabs) side by side.
 *
 * What it does not do: run or evaluate models, read traces, or invent a
 * number — a metric missing from the registry shows as "–".  Final metrics
 * are the last logged value of val/loss, val/bpc, val/token_acc,
 * val/seq_acc, val/active_frac and val/tlops_saved; throughput is the mean of
 * train/tokens_per_s over every log row after the first (the first includes
 * start-up).
 */
#include "tables.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/metric.h"
#include "ablate.h"
#include "report.h"

/* ---- one run ---- */

static void tb_base_name(const char *path, char *out, size_t n) {
    const char *b = strrchr(path, '/');
    snprintf(out, n, "%s", b ? b + 1 : path);
    char *dot = strrchr(out, '.');
    if (dot && dot != out) *dot = 0;
}

static double tb_last(gl_db *db, const char *run, const char *split, const char *name, int *fail, char *err,
                      size_t errlen) {
    double v = NAN;
    int rc = db_metric_last(db, run, split, name, &v, NULL, err, errlen);
    if (rc < 0) *fail = 1;
    return rc == 1 ? v : NAN;
}

int tables_collect(gl_db *db, const char *experiment, tables_run **runs_out, int *n_out, char *err, size_t errlen) {
    gl_run_row *rr = NULL;
    int nr = 0, fail = 0;
    *runs_out = NULL;
    *n_out = 0;
    if (db_runs_list(db, experiment, "FINISHED", &rr, &nr, err, errlen)) return -1;
    tables_run *v = calloc((size_t)(nr > 0 ? nr : 1), sizeof *v);
    if (!v) {
        free(rr);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (int i = 0; i < nr && !fail; i++) {
        tables_run *t = &v[i];
        const char *id = rr[i].run_id;
        snprintf(t->run_id, sizeof t->run_id, "%s", id);
        snprintf(t->experiment, sizeof t->experiment, "%s", rr[i].experiment);
        char vr[64] = "none", dr[64] = "none", scale[64] = "", dm[32] = "?", nl[32] = "?", task[32] = "text", file[1024] = "",
             lam[64] = "", cl[64] = "none";
        const struct {
            const char *key;
            char *dst;
            size_t n;
        } want[] = {{"model.value_residual", vr, sizeof vr}, {"model.depth_routing", dr, sizeof dr},
                    {"model.scale", scale, sizeof scale},   {"model.d_model", dm, sizeof dm},
                    {"model.n_layer", nl, sizeof nl},       {"data.task", task, sizeof task},
                    {"data.file", file, sizeof file},       {"train.seed", t->seed, sizeof t->seed},
                    {"model.tsa_lambda", lam, sizeof lam},  {"model.cross_layer", cl, sizeof cl}};
        for (size_t k = 0; k < sizeof want / sizeof want[0]; k++)
            if (db_param_get(db, id, want[k].key, want[k].dst, want[k].n, err, errlen) < 0) fail = 1;
        t->text = !strcmp(task, "text");
        if (t->text && file[0]) tb_base_name(file, t->data, sizeof t->data);
        else snprintf(t->data, sizeof t->data, "%s", task);
        snprintf(t->variant, sizeof t->variant, "%s%s%s%s%s", !strcmp(vr, "none") ? "baseline" : vr,
                 strcmp(dr, "none") ? "+" : "", strcmp(dr, "none") ? dr : "", strcmp(cl, "none") ? "+" : "",
                 strcmp(cl, "none") ? cl : "");
        if (scale[0]) snprintf(t->scale, sizeof t->scale, "%s", scale);
        else snprintf(t->scale, sizeof t->scale, "d%sL%s", dm, nl);
        t->lambda = !strcmp(dr, "tsa") && lam[0] ? atof(lam) : NAN;
        t->val_loss = tb_last(db, id, "val", "loss", &fail, err, errlen);
        t->val_bpc = tb_last(db, id, "val", "bpc", &fail, err, errlen);
        t->tok_acc = tb_last(db, id, "val", "token_acc", &fail, err, errlen);
        t->seq_acc = tb_last(db, id, "val", "seq_acc", &fail, err, errlen);
        t->active_frac = tb_last(db, id, "val", "active_frac", &fail, err, errlen);
        t->tlops_saved = tb_last(db, id, "val", "tlops_saved", &fail, err, errlen);
        t->bench_tps = tb_last(db, id, "bench", "train_tokens_per_s", &fail, err, errlen);
        t->bench_rss = tb_last(db, id, "bench", "peak_rss_mib", &fail, err, errlen);
        /* throughput: skip the first log row (start-up) when there are others */
        gl_metric_point *pts = NULL;
        int np = 0;
        if (db_metric_series(db, id, "train", "tokens_per_s", &pts, &np, err, errlen)) fail = 1;
        double s = 0;
        int k = 0;
        for (int j = np > 1 ? 1 : 0; j < np; j++)
            if (!isnan(pts[j].value)) s += pts[j].value, k++;
        t->tokens_per_s = k ? s / k : NAN;
        free(pts);
    }
    free(rr);
    if (fail) {
        free(v);
        return -1;
    }
    *runs_out = v;
    *n_out = nr;
    return 0;
}

void tables_mean_std(const double *x, int n, double *mean, double *std, int *k) {
    double s = 0;
    int c = 0;
    for (int i = 0; i < n; i++)
        if (!isnan(x[i])) s += x[i], c++;
    *k = c;
    *mean = c ? s / c : NAN;
    double q = 0;
    for (int i = 0; i < n; i++)
        if (!isnan(x[i])) q += (x[i] - *mean) * (x[i] - *mean);
    *std = c > 1 ? sqrt(q / (c - 1)) : NAN;
}

/* ---- a table: cells in two renderings ---- */

#define TB_MAX_COL 12 /* the widest table has 11 columns */

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
} tb_table;

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
    f = fopen(path, "w");
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
    if (ferror(f) | fclose(f)) {
        f = NULL;
        goto io;
    }
    snprintf(path, sizeof path, "%s/%s.tex", out_dir, t->name);
    f = fopen(path, "w");
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
    fprintf(f, "\\bottomrule\n\\end{tabular}\n\\end{table}\n");
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
    snprintf(vr, sizeof vr, "%.*s", (int)strcspn(v, "+"), v);
    gl_value_residual r;
    if (!strcmp(vr, "baseline")) return VR_NONE;
    return config_parse_value_residual(vr, &r) == 0 ? (int)r : VR_COUNT;
}

static int tb_cmp(const void *a, const void *b) {
    const tables_run *x = a, *y = b;
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
    if ((c = strcmp(x->seed, y->seed))) return c;
    return strcmp(x->run_id, y->run_id);
}

void tables_sort(tables_run *runs, int n) {
    if (n > 1) qsort(runs, (size_t)n, sizeof *runs, tb_cmp);
}

/* 1 when two (sorted) runs belong to the same group. */
static int tb_same(const tables_run *x, const tables_run *y) {
    int ln = isnan(x->lambda) && isnan(y->lambda);
    return !strcmp(x->data, y->data) && !strcmp(x->scale, y->scale) && !strcmp(x->variant, y->variant) &&
           (ln || x->lambda == y->lambda);
}

typedef enum { TB_LOSS, TB_LAMBDA, TB_ACC, TB_TPS } tb_kind;

static int tb_wanted(const tables_run *r, tb_kind k) {
    switch (k) {
    case TB_LOSS: return !isnan(r->val_loss);
    case TB_LAMBDA: return !isnan(r->lambda);
    case TB_ACC: return !r->text && (!isnan(r->tok_acc) || !isnan(r->seq_acc));
    case TB_TPS: return !isnan(r->tokens_per_s);
    }
    return 0;
}

/* Fill t with one row per group of the runs wanted for kind. */
static int tb_grouped(tb_table *t, const tables_run *runs, int n, tb_kind kind, char *err, size_t errlen) {
    double *x[6];
    for (int q = 0; q < 6; q++) x[q] = malloc((size_t)(n > 0 ? n : 1) * sizeof(double));
    int rc = -1;
    for (int q = 0; q < 6; q++)
        if (!x[q]) {
            snprintf(err, errlen, "out of memory");
            goto cleanup;
        }
    for (int i = 0; i < n;) {
        if (!tb_wanted(&runs[i], kind)) {
            i++;
            continue;
        }
        int k = 0, j = i;
        for (; j < n && tb_same(&runs[i], &runs[j]); j++) {
            const tables_run *r = &runs[j];
            if (!tb_wanted(r, kind)) continue;
            x[0][k] = r->val_loss;
            x[1][k] = r->val_bpc;
            x[2][k] = r->tok_acc;
            x[3][k] = r->seq_acc;
            x[4][k] = r->tokens_per_s;
            x[5][k] = r->active_frac;
            k++;
        }
        const tables_run *g = &runs[i];
        tb_cell *c = tb_row(t, err, errlen);
        if (!c) goto cleanup;
        int col = 0;
        tb_text(&c[col++], g->data);
        tb_text(&c[col++], g->scale);
        tb_text(&c[col++], g->variant);
        switch (kind) {
        case TB_LOSS:
            tb_int(&c[col++], k);
            tb_pm(&c[col++], x[0], k, 4);
            if (g->text) tb_pm(&c[col++], x[1], k, 4);
            else tb_num(&c[col++], NAN, "%g");
            break;
        case TB_LAMBDA: {
            tb_num(&c[col++], g->lambda, "%g");
            tb_int(&c[col++], k);
            tb_pm(&c[col++], x[5], k, 3);
            double tl[64];
            int kk = 0;
            for (int q = i; q < j && kk < 64; q++)
                if (tb_wanted(&runs[q], kind)) tl[kk++] = runs[q].tlops_saved * 100.0;
            tb_pm(&c[col++], tl, kk, 1);
            tb_pm(&c[col++], x[0], k, 4);
            break;
        }
        case TB_ACC:
            tb_int(&c[col++], k);
            for (int q = 0; q < k; q++) x[2][q] *= 100.0, x[3][q] *= 100.0;
            tb_pm(&c[col++], x[2], k, 2);
            tb_pm(&c[col++], x[3], k, 2);
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
    return rc;
}

/* The latest value of the sibling of k named by (quantity, cat), NaN if absent. */
static double tb_sibling(const gl_metric_latest *m, int nm, const metric_ablation_key *k, const char *quantity, int cat) {
    char want[METRIC_NAME_MAX];
    if (metric_ablation_sibling(want, sizeof want, k, quantity, cat)) return NAN;
    return db_metrics_latest_find(m, nm, want);
}

/* Ablation rows: one per (run, intervention) from split "ablation". */
static int tb_ablations(tb_table *t, gl_db *db, const tables_run *runs, int n, char *err, size_t errlen) {
    for (int i = 0; i < n; i++) {
        gl_metric_latest *m = NULL;
        int nm = 0;
        if (db_metrics_latest(db, runs[i].run_id, ABLATE_SPLIT, &m, &nm, err, errlen)) return -1;
        for (int k = 0; k < nm; k++) {
            /* one row per <mode>.<label>.delta_loss */
            metric_ablation_key key;
            if (!metric_ablation_parse(m[k].name, &key) || strcmp(key.quantity, "delta_loss") || key.cat != METRIC_NONE)
                continue;
            double cat[CAT_COUNT], ratio = tb_sibling(m, nm, &key, "ppl_ratio", METRIC_NONE);
            for (int c = 0; c < CAT_COUNT; c++) cat[c] = tb_sibling(m, nm, &key, "delta_loss", c);
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
            tb_num(&c[col++], m[k].value, "%+.4f");
            tb_num(&c[col++], ratio, "%.4f");
            for (int q = 0; q < CAT_COUNT; q++) tb_num(&c[col++], cat[q], "%+.4f");
        }
        free(m);
    }
    return 0;
}

/* TSA against early exit at matched compute: each TSA run's learned routing
 * run hard (random.all.base_loss / base_active_frac, logged by `gatelab
 * ablate RUN --mode random`) beside the τ of each early-exit run of the same
 * data and scale (exit.tau*, `gatelab ablate RUN --mode exit`) whose α is
 * nearest.  Both are measured on the same validation windows when both
 * commands used the same --windows. */
static int tb_tsa_vs_exit(tb_table *t, gl_db *db, const tables_run *runs, int n, char *err, size_t errlen) {
    for (int i = 0; i < n; i++) {
        if (isnan(runs[i].lambda)) continue;
        gl_metric_latest *m = NULL;
        int nm = 0;
        char na[METRIC_NAME_MAX], nl[METRIC_NAME_MAX];
        if (metric_ablation(na, sizeof na, "random", METRIC_LABEL_ALL, "base_active_frac", METRIC_NONE) ||
            metric_ablation(nl, sizeof nl, "random", METRIC_LABEL_ALL, "base_loss", METRIC_NONE)) {
            snprintf(err, errlen, "tsa_vs_exit: cannot build the metric names of `ablate --mode random`");
            return -1;
        }
        if (db_metrics_latest(db, runs[i].run_id, ABLATE_SPLIT, &m, &nm, err, errlen)) return -1;
        double a_tsa = db_metrics_latest_find(m, nm, na), l_tsa = db_metrics_latest_find(m, nm, nl);
        free(m);
        if (isnan(a_tsa) || isnan(l_tsa)) continue;
        for (int j = 0; j < n; j++) {
            if (strcmp(runs[j].data, runs[i].data) || strcmp(runs[j].scale, runs[i].scale) ||
                !strstr(runs[j].variant, "early_exit"))
                continue;
            if (db_metrics_latest(db, runs[j].run_id, ABLATE_SPLIT, &m, &nm, err, errlen)) return -1;
            double best_tau = NAN, best_a = NAN, best_l = NAN;
            for (int k = 0; k < nm; k++) {
                metric_ablation_key key;
                if (!metric_ablation_parse(m[k].name, &key) || strcmp(key.mode, METRIC_EXIT_MODE) || isnan(key.tau) ||
                    strcmp(key.quantity, "active_frac") || key.cat != METRIC_NONE)
                    continue;
                double l = tb_sibling(m, nm, &key, "loss", METRIC_NONE);
                if (isnan(l) || isnan(m[k].value)) continue;
                if (isnan(best_a) || fabs(m[k].value - a_tsa) < fabs(best_a - a_tsa))
                    best_tau = key.tau, best_a = m[k].value, best_l = l;
            }
            free(m);
            if (isnan(best_a)) continue;
            tb_cell *c = tb_row(t, err, errlen);
            if (!c) return -1;
            int col = 0;
            tb_text(&c[col++], runs[i].data);
            tb_text(&c[col++], runs[i].scale);
            tb_text(&c[col++], runs[i].run_id);
            tb_num(&c[col++], runs[i].lambda, "%g");
            tb_num(&c[col++], a_tsa, "%.3f");
            tb_num(&c[col++], l_tsa, "%.4f");
            tb_text(&c[col++], runs[j].run_id);
            tb_num(&c[col++], best_tau, "%.3f");
            tb_num(&c[col++], best_a, "%.3f");
            tb_num(&c[col++], best_l, "%.4f");
            tb_num(&c[col++], best_l - l_tsa, "%+.4f");
        }
    }
    return 0;
}

/* The cost table (`make bench`): training tokens/s and peak memory of every
 * variant relative to the baseline of the same scale, from split "bench". */
static int tb_cost(tb_table *t, const tables_run *runs, int n, char *err, size_t errlen) {
    for (int i = 0; i < n; i++) {
        if (isnan(runs[i].bench_tps)) continue;
        const tables_run *base = NULL;
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
    tables_run *runs = NULL;
    int n = 0, rc = -1;
    if (tables_collect(db, experiment, &runs, &n, err, errlen)) return -1;
    s->n_runs = n;
    tables_sort(runs, n);
    if (report_mkdir_p(out_dir, err, errlen)) goto cleanup;
    char source[512];
    snprintf(source, sizeof source, "the registry%s%s", experiment ? ", experiment " : "", experiment ? experiment : "");

    tb_table tabs[7] = {
        {"loss_by_variant", "Validation loss by variant and scale (mean ± std over seeds)", 6,
         {"Data", "Scale", "Variant", "Seeds", "Val loss (nats/token)", "Val bpc"},
         {"Data", "Scale", "Variant", "Seeds", "Val loss (nats/token)", "Val bpc"}, "lllrrr", NULL, 0, 0},
        {"tsa_lambda", "Token-selective depth: active fraction, TLOps saved and loss by λ", 8,
         {"Data", "Scale", "Variant", "λ", "Seeds", "Active fraction α", "TLOps saved (%)", "Val loss (nats/token)"},
         {"Data", "Scale", "Variant", "$\\lambda$", "Seeds", "Active fraction $\\alpha$", "TLOps saved (\\%)",
          "Val loss (nats/token)"},
         "lllrrrrr", NULL, 0, 0},
        {"task_accuracy", "Synthetic tasks: accuracy on the scored positions (%)", 6,
         {"Task", "Scale", "Variant", "Seeds", "Token acc (%)", "Sequence acc (%)"},
         {"Task", "Scale", "Variant", "Seeds", "Token acc (\\%)", "Sequence acc (\\%)"}, "lllrrr", NULL, 0, 0},
        {"throughput", "Training throughput (tokens/s, mean over log intervals)", 5,
         {"Data", "Scale", "Variant", "Seeds", "Tokens/s"}, {"Data", "Scale", "Variant", "Seeds", "Tokens/s"}, "lllrr",
         NULL, 0, 0},
        {"ablations", "Gate interventions: loss change ΔL (nats/token) on validation tokens", 10,
         {"Run", "Variant", "Scale", "Intervention", "Gates", "ΔL", "exp(ΔL)", "ΔL structural", "ΔL functional",
          "ΔL semantic"},
         {"Run", "Variant", "Scale", "Intervention", "Gates", "$\\Delta L$", "$\\exp(\\Delta L)$", "$\\Delta L$ structural",
          "$\\Delta L$ functional", "$\\Delta L$ semantic"},
         "lllllrrrrr", NULL, 0, 0},
        {"tsa_vs_exit", "Token-selective depth against early exit at matched active fraction α (validation loss, nats/token)",
         11,
         {"Data", "Scale", "TSA run", "λ", "α (TSA, hard)", "TSA loss", "Early-exit run", "τ", "α (exit)", "Exit loss",
          "Exit − TSA"},
         {"Data", "Scale", "TSA run", "$\\lambda$", "$\\alpha$ (TSA, hard)", "TSA loss", "Early-exit run", "$\\tau$",
          "$\\alpha$ (exit)", "Exit loss", "Exit $-$ TSA"},
         "lllrrrlrrrr", NULL, 0, 0},
        {"cost", "Training cost by variant (`make bench`, one process per variant): throughput and peak memory relative to the baseline of the same scale", 7,
         {"Scale", "Variant", "Train tokens/s", "× baseline", "Baseline speed-up over it", "Peak RSS (MiB)", "Memory × baseline"},
         {"Scale", "Variant", "Train tokens/s", "$\\times$ baseline", "Baseline speed-up over it", "Peak RSS (MiB)",
          "Memory $\\times$ baseline"},
         "llrrrrr", NULL, 0, 0},
    };
    const tb_kind kinds[4] = {TB_LOSS, TB_LAMBDA, TB_ACC, TB_TPS};
    const char *why[7] = {"no finished run has val/loss", "no finished TSA run", "no finished copy/sort/mqar run",
                          "no finished run has train/tokens_per_s",
                          "no ablation results (run `gatelab ablate` or `gatelab heads`)",
                          "needs a TSA run with `gatelab ablate RUN --mode random` and an early-exit run of the same data "
                          "and scale with `gatelab ablate RUN --mode exit`",
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
