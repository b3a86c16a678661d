/*
 * figures_run.c — the figures of one run, from what its analyses recorded
 * (figures_int.h; the module's interface is figures.h): the per-head gate's
 * heatmap and its means by category (`gatelab analyze`), the intervention
 * bars (`gatelab ablate`), the single-head ΔL heatmap (`gatelab heads`), the
 * per-character depth map (a TSA trace); and the figures built from every
 * run's: the depth profiles (mean gate by block per group of seeds) and
 * ablation_seeds (the bars pooled over seeds).
 *
 * The per-head gate is the gate-table row (model/gatekind.h) whose
 * "<key>_mean" rows the run has; names and symbols come from that row.
 *
 * What it does not do: statistics over tokens (the analyses did), grouping
 * or drawing (figures.c: fg_groups_build, fg_draw).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/gatekind.h"
#include "store/categories.h"
#include "store/fileio.h"
#include "store/manifest.h"
#include "store/metric.h"
#include "store/rundir.h"
#include "store/trace.h"
#include "analysis/measure/ablate.h"
#include "analysis/measure/analyze.h"
#include "analysis/measure/depth.h"
#include "analysis/render/figures_int.h"
#include "analysis/core/report.h"
#include "analysis/core/stats.h"

/* Every run's intervention bars (ΔL over all tokens), for ablation_seeds. */
typedef struct {
    int run;          /* index into the runs array */
    double v;         /* ΔL (nats/token) */
    char label[160];  /* the readable intervention */
} fg_abl_pt;

typedef struct fg_abl_pts {
    fg_abl_pt *p;
    int n, cap;
} fg_abl_pts;

static int fg_abl_add(fg_abl_pts *a, int run, const char *label, double v) {
    if (a->n == a->cap) {
        int cap = a->cap ? 2 * a->cap : 64;
        fg_abl_pt *q = realloc(a->p, (size_t)cap * sizeof *q);
        if (!q) return -1;
        a->p = q, a->cap = cap;
    }
    a->p[a->n].run = run, a->p[a->n].v = v;
    snprintf(a->p[a->n].label, sizeof a->p[0].label, "%s", label);
    a->n++;
    return 0;
}

/* What one run's analysis and ablation rows hold by block, KV head and
 * category (NaN where absent), and its legend text. */
typedef struct {
    const runset_row *run;
    int L, H;
    double *alpha_head;  /* (L, H) mean α per KV head (analysis) */
    double *delta_head;  /* (L, H) ΔL when that one gate is zeroed (ablation) */
    double *alpha_block; /* (L) mean α per block */
    double *p_block;     /* (L) mean halting probability per router */
    double *alpha_cat;   /* (L, CAT_COUNT) mean α per block and category */
    double *p_cat;       /* (L, CAT_COUNT) mean p per router and category */
    int has_alpha_head, has_delta_head, has_alpha_block, has_p_block, has_alpha_cat, has_p_cat;
    gl_gate gate;        /* the per-head gate the alpha_* fields hold (gate table, model/gatekind.h) */
    gl_gate route;       /* the router gate the p_* fields hold */
    char delta_head_on[96];  /* what delta_head was measured on ("val[0,64) 4096 tok @40") */
    char label[256];
    struct fg_abl_pts *abl;  /* where the bars' all-token values go for the figure over seeds (may be NULL) */
    int idx;                 /* the run's index in the runs array */
} fg_run_data;

static void fg_run_data_free(fg_run_data *d) {
    free(d->alpha_head);
    memset(d, 0, sizeof *d);
}

/* Size d for run r from its parameters: 1 ready, 0 the run has no usable
 * shape (skipped), -1 out of memory. */
static int fg_run_data_init(fg_run_data *d, gl_db *db, const runset_row *r, char *err, size_t errlen) {
    fg_run_data_free(d);
    d->run = r;
    d->L = fg_param_int(db, r->run_id, "model.n_layer", 0, err, errlen);
    d->H = fg_param_int(db, r->run_id, "model.n_kv_head", 0, err, errlen);
    if (d->L <= 0 || d->H <= 0 || d->L > GL_MAX_LAYERS || d->H > ANALYZE_MAX_HEADS) return 0;
    const size_t LH = (size_t)d->L * d->H, L = (size_t)d->L, total = 2 * LH + 2 * L + 2 * L * CAT_COUNT;
    double *g = malloc(total * sizeof *g);
    if (!g) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (size_t q = 0; q < total; q++) g[q] = NAN;
    d->alpha_head = g;
    d->delta_head = g + LH;
    d->alpha_block = g + 2 * LH;
    d->p_block = d->alpha_block + L;
    d->alpha_cat = d->p_block + L;
    d->p_cat = d->alpha_cat + L * CAT_COUNT;
    fg_label(r, d->label, sizeof d->label);
    return 1;
}

/* The last gate of the gate table whose axis[ax] is want and whose
 * "<key>_mean" rows are among m[0..nm); dflt when none. */
static gl_gate fg_gate_of_rows(const gl_metric_latest *m, int nm, int ax, gl_gate_axis want, gl_gate dflt) {
    gl_gate found = dflt;
    char mean[64];
    for (int g = 0; g < GATE_COUNT; g++) {
        if (gatekind_info[g].axis[ax] != want) continue;
        snprintf(mean, sizeof mean, "%s_mean", gatekind_info[g].key);
        for (int k = 0; k < nm; k++) {
            int l, h, c;
            if (metric_stat_parse(&m[k].key, mean, &l, &h, &c)) found = (gl_gate)g;
        }
    }
    return found;
}

/* Gate statistics of `gatelab analyze` (split ANALYZE_SPLIT) into d:
 * <key>_mean.L<l>.H<h>, <key>_mean.L<l>[.<cat>] of its per-head gate (alpha_mean …)
 * and <key>_mean.L<l>[.<cat>] of its router gate (p_mean …). */
static int fg_read_analysis(gl_db *db, fg_run_data *d, char *err, size_t errlen) {
    gl_metric_latest *m = NULL;
    int nm = 0;
    if (db_metrics_latest(db, d->run->run_id, ANALYZE_SPLIT, &m, &nm, err, errlen)) return -1;
    const int L = d->L, H = d->H;
    /* the run's per-head gate and router gate: those whose "<key>_mean" rows it has */
    char mean[64];
    d->gate = fg_gate_of_rows(m, nm, 2, GAX_KV_HEAD, GATE_ALPHA);
    d->route = fg_gate_of_rows(m, nm, 0, GAX_ROUTER, GATE_P);
    char route_mean[64];
    snprintf(route_mean, sizeof route_mean, "%s_mean", gatekind_info[d->route].key);
    snprintf(mean, sizeof mean, "%s_mean", gatekind_info[d->gate].key);
    for (int k = 0; k < nm; k++) {
        int l, h, c;
        const double v = m[k].value;
        if (metric_stat_parse(&m[k].key, mean, &l, &h, &c) && l != METRIC_NONE && l < L) {
            if (h != METRIC_NONE && c == METRIC_NONE) {
                if (h < H) d->alpha_head[l * H + h] = v, d->has_alpha_head = 1;
            } else if (h == METRIC_NONE && c == METRIC_NONE) {
                d->alpha_block[l] = v, d->has_alpha_block = 1;
            } else if (h == METRIC_NONE) {
                d->alpha_cat[l * CAT_COUNT + c] = v, d->has_alpha_cat = 1;
            }
        } else if (metric_stat_parse(&m[k].key, route_mean, &l, &h, &c) && l != METRIC_NONE && l < L &&
                   h == METRIC_NONE) {
            if (c == METRIC_NONE) d->p_block[l] = v, d->has_p_block = 1;
            else d->p_cat[l * CAT_COUNT + c] = v, d->has_p_cat = 1;
        }
    }
    free(m);
    return 0;
}

/* 1 when key is the ΔL of zeroing one KV head (zero.L<l>H<h>.delta_loss). */
static int fg_single_gate(const metric_ablation_key *key, int *l, int *h) {
    return !strcmp(key->mode, "zero") && !strcmp(key->quantity, "delta_loss") && key->cat == METRIC_NONE &&
           metric_label_gate_parse(key->label, l, h) && *h != METRIC_NONE;
}

/* 1 when row k is a bar of the ablation figure (single = 0: an intervention's
 * delta_loss over all tokens, not early exit, not one gate) or a cell of the
 * heads map (single = 1: the ΔL of zeroing one KV head). */
static int fg_ablation_kind(const gl_metric_latest *row, int single) {
    metric_ablation_key key;
    int l, h;
    if (!metric_ablation_parse(&row->key, &key)) return 0;
    if (fg_single_gate(&key, &l, &h)) return single;
    return !single && !strcmp(key.quantity, "delta_loss") && key.cat == METRIC_NONE && !metric_tau_mode(key.mode);
}

/* The measurement (step and token set) with the most rows of the kind (ties:
 * the most windows): a figure draws that one alone.  NULL when there is none. */
static const gl_metric_latest *fg_main_measurement(const gl_metric_latest *m, int nm, int single) {
    const gl_metric_latest *best = NULL;
    int best_n = 0;
    for (int k = 0; k < nm; k++) {
        if (!fg_ablation_kind(&m[k], single)) continue;
        int c = 0;
        for (int q = 0; q < nm; q++)
            c += fg_ablation_kind(&m[q], single) && m[q].step == m[k].step && db_prov_same(&m[q].prov, &m[k].prov);
        if (c > best_n || (c == best_n && best && m[k].prov.count > best->prov.count)) best = &m[k], best_n = c;
    }
    return best;
}

/* Note, once per figure, that rows of another measurement were left out. */
static void fg_note_other(figures_summary *s, const char *fig, const gl_metric_latest *row, const gl_metric_latest *main,
                          int *noted) {
    if ((*noted)++) return;
    char a[64], b[64], note[220];
    snprintf(note, sizeof note, "rows measured on %s @%ld left out: the figure shows %s @%ld",
             db_prov_str(&row->prov, a, sizeof a), row->step, db_prov_str(&main->prov, b, sizeof b), main->step);
    fg_note(s, fig, note);
}

/* The bar label of an intervention (mode, gate label as in the metric
 * names; sym: the gate's symbol): "α := 0 (every gate)", "α := its mean
 * (L1+L3H0)", "full depth (p := 0)"…; an unknown mode keeps "mode:label". */
static void fg_intervention_label(const char *mode, const char *label, const char *sym, char *out, size_t n) {
    char which[96];
    if (!strcmp(label, METRIC_LABEL_ALL)) snprintf(which, sizeof which, "every gate");
    else snprintf(which, sizeof which, "%s", label);
    if (!strcmp(mode, "zero")) snprintf(out, n, "%s := 0 (%s)", sym, which);
    else if (!strcmp(mode, "mean")) snprintf(out, n, "%s := its mean (%s)", sym, which);
    else if (!strcmp(mode, "resample")) snprintf(out, n, "%s resampled from other tokens (%s)", sym, which);
    else if (!strcmp(mode, "file")) snprintf(out, n, "%s := values from a file (%s)", sym, which);
    else if (!strcmp(mode, "full-depth")) snprintf(out, n, "full depth (p := 0)");
    else if (!strcmp(mode, "random")) snprintf(out, n, "random routing at the learned α");
    else snprintf(out, n, "%s:%s", mode, label);
    fg_unquote(out);
}

/* ablation_<run>: one bar group per intervention (every <mode>.<label>.delta_loss
 * except early exit and single-gate zeroing, which goes to the heads map: its
 * values are kept in d->delta_head). */
/* The symbol of what `gatelab ablate` intervened on in run d, from the gate
 * table: the value-residual gate the ablation takes (ablate.c: the per-head
 * gate, else the per-block one), and for a gate of coefficients its first
 * (a GABL_BLOCK override sets λ1).  d->gate's when the configuration cannot
 * be read.  0, or -1 with err on a registry error. */
static int fg_ablated_symbol(gl_db *db, const fg_run_data *d, char sym[16], char *err, size_t errlen) {
    char *ini = NULL, e2[256];
    gl_manifest mf;
    int g = -1;
    if (db_run_config(db, d->run->run_id, &ini, NULL, err, errlen) < 0) return -1;
    if (ini && manifest_load_text(&mf, ini, "registry config", e2, sizeof e2) == 0) {
        g = gatekind_find(&mf.model, GABL_HEAD);
        if (g < 0) g = gatekind_find(&mf.model, GABL_BLOCK);
    }
    free(ini);
    if (g < 0) g = (int)d->gate;
    snprintf(sym, 16, "%s%s", gatekind_info[g].symbol, gatekind_info[g].axis[2] == GAX_COEF ? "1" : "");
    return 0;
}

static int fg_ablation_bars(gl_db *db, fg_run_data *d, const char *data_dir, const char *out_dir, figures_summary *s,
                            char *err, size_t errlen) {
    gl_metric_latest *m = NULL;
    int nm = 0, nbars = 0, has_cat[CAT_COUNT] = {0}, rc = -1;
    char path[4096], name[160], vars[1024], b[32];
    fg_rng ry = fg_rng_empty();
    const char *id = d->run->run_id;
    char sym[16];
    if (fg_ablated_symbol(db, d, sym, err, errlen)) return -1;
    if (db_metrics_latest(db, id, ABLATE_SPLIT, &m, &nm, err, errlen)) return -1;
    snprintf(path, sizeof path, "%s/ablation_%s.tsv", data_dir, id);
    FILE *fb = fileio_fopen_w(path);
    if (!fb) {
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
        goto cleanup;
    }
    /* which category columns any intervention has (the others are left out) */
    for (int k = 0; k < nm; k++) {
        metric_ablation_key key;
        if (metric_ablation_parse(&m[k].key, &key) && !strcmp(key.quantity, "delta_loss") && key.cat != METRIC_NONE &&
            !metric_tau_mode(key.mode) && !isnan(m[k].value))
            has_cat[key.cat] = 1;
    }
    fprintf(fb, "intervention\tall tokens");
    for (int c = 0; c < CAT_COUNT; c++)
        if (has_cat[c]) fprintf(fb, "\t%s", cat_name(c));
    fprintf(fb, "\n");
    snprintf(name, sizeof name, "ablation_%s", id);
    const gl_metric_latest *bars = fg_main_measurement(m, nm, 0), *cells = fg_main_measurement(m, nm, 1);
    int noted_bars = 0, noted_cells = 0;
    char heads_name[160];
    snprintf(heads_name, sizeof heads_name, "heads_%s", id);
    for (int k = 0; k < nm; k++) {
        metric_ablation_key key;
        int l, h;
        if (!metric_ablation_parse(&m[k].key, &key)) continue;
        if (fg_single_gate(&key, &l, &h)) { /* single gates go to the heads map, not the bars */
            if (m[k].step != cells->step || !db_prov_same(&m[k].prov, &cells->prov))
                fg_note_other(s, heads_name, &m[k], cells, &noted_cells);
            else if (l < d->L && h < d->H) d->delta_head[l * d->H + h] = m[k].value, d->has_delta_head = 1;
            continue;
        }
        if (!fg_ablation_kind(&m[k], 0)) continue;
        if (m[k].step != bars->step || !db_prov_same(&m[k].prov, &bars->prov)) {
            fg_note_other(s, name, &m[k], bars, &noted_bars);
            continue;
        }
        double cv[CAT_COUNT];
        for (int c = 0; c < CAT_COUNT; c++) {
            metric_key want;
            cv[c] = metric_ablation_sibling(&want, &key, "delta_loss", c) ? NAN
                                                                          : db_metrics_latest_find_like(m, nm, &want, &m[k]);
        }
        char readable[160];
        fg_intervention_label(key.mode, key.label, sym, readable, sizeof readable);
        fprintf(fb, "%s\t%s", readable, report_num(b, 32, m[k].value));
        for (int c = 0; c < CAT_COUNT; c++)
            if (has_cat[c]) fprintf(fb, "\t%s", report_num(b, 32, cv[c]));
        fprintf(fb, "\n");
        fg_rng_add(&ry, m[k].value);
        for (int c = 0; c < CAT_COUNT; c++) fg_rng_add(&ry, cv[c]);
        nbars++;
        if (d->abl && !isnan(m[k].value) && fg_abl_add(d->abl, d->idx, readable, m[k].value)) {
            snprintf(err, errlen, "out of memory");
            goto cleanup;
        }
    }
    int bad = ferror(fb) | fclose(fb);
    fb = NULL;
    if (bad) {
        snprintf(err, errlen, "writing %s failed", path);
        goto cleanup;
    }
    char on[64];
    if (cells) snprintf(d->delta_head_on, sizeof d->delta_head_on, "%s @%ld", db_prov_str(&cells->prov, on, sizeof on),
                        cells->step);
    if (nbars) {
        int ncol = 2;
        for (int c = 0; c < CAT_COUNT; c++) ncol += has_cat[c];
        db_prov_str(&bars->prov, on, sizeof on);
        char title[400];
        snprintf(title, sizeof title, "Loss increase per gate intervention: %s, on %s @%ld", d->label,
                 strcmp(on, "?") ? on : "tokens not recorded", bars->step);
        figures_title_var(vars, sizeof vars, title, 5.5, 1.0);
        snprintf(vars + strlen(vars), sizeof vars - strlen(vars), "; ncol=%d", ncol);
        fg_rng_vars(ry, "y", FG_ZERO, vars, sizeof vars);
        if (fg_draw(s, "ablation_bars.gp", path, out_dir, name, vars, err, errlen)) goto cleanup;
    }
    rc = 0;
cleanup:
    if (fb) fclose(fb);
    free(m);
    return rc;
}

/* alpha_heatmap_<run> (heads = 0: mean α) or heads_<run> (heads = 1: ΔL of
 * single-gate zeroing): block × KV head. */
static int fg_heatmap(const fg_run_data *d, int heads, const char *data_dir, const char *out_dir, figures_summary *s,
                      char *err, size_t errlen) {
    const double *g = heads ? d->delta_head : d->alpha_head;
    if (!(heads ? d->has_delta_head : d->has_alpha_head)) return 0;
    char name[160], path[4096], vars[1024], b[32];
    const gl_gate_info *gi = &gatekind_info[d->gate];
    snprintf(name, sizeof name, "%s%s_%s", heads ? "heads" : gi->key, heads ? "" : "_heatmap", d->run->run_id);
    snprintf(path, sizeof path, "%s/%s.tsv", data_dir, name);
    FILE *fh = fileio_fopen_w(path);
    if (!fh) {
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
        return -1;
    }
    fprintf(fh, "layer\tkv_head\t%s%s\n", heads ? "delta_loss" : gi->key, heads ? "" : "_mean");
    fg_rng rc3 = fg_rng_empty();
    for (int l = 0; l < d->L; l++) {
        int any = 0; /* a block without a gate (block 0: no V1 to mix) is left out, not drawn as an empty row */
        for (int h = 0; h < d->H; h++) any |= !isnan(g[l * d->H + h]);
        if (!any) continue;
        for (int h = 0; h < d->H; h++) {
            fprintf(fh, "%d\t%d\t%s\n", l, h, report_num(b, 32, g[l * d->H + h]));
            fg_rng_add(&rc3, g[l * d->H + h]);
        }
    }
    if (ferror(fh) | fclose(fh)) {
        snprintf(err, errlen, "writing %s failed", path);
        return -1;
    }
    char cbl[64], title[400];
    snprintf(cbl, sizeof cbl, "mean %s (probe tokens)", gi->symbol);
    if (heads) snprintf(title, sizeof title, "Loss increase when one gate is zeroed: %s, on %s", d->label, d->delta_head_on);
    else snprintf(title, sizeof title, "Mean %s per block and KV head: %s", gi->symbol, d->label);
    figures_title_var(vars, sizeof vars, title, 5.5, 0.85); /* the colour bar takes the right */
    if (heads) snprintf(vars + strlen(vars), sizeof vars - strlen(vars),
                        "; cblabel='ΔL when zeroed alone (nats/token)'; diverging=1");
    else snprintf(vars + strlen(vars), sizeof vars - strlen(vars), "; cblabel='%s'", cbl);
    if (heads && rc3.lo <= rc3.hi) { /* signed: a range symmetric about zero, so white means "no change" */
        double a = fmax(fmax(fabs(rc3.lo), fabs(rc3.hi)), 1e-6);
        size_t k = strlen(vars);
        snprintf(vars + k, sizeof vars - k, "; cbmin=%.9g; cbmax=%.9g", -1.02 * a, 1.02 * a);
    } else fg_rng_vars(rc3, "cb", FG_NONNEG, vars, sizeof vars);
    return fg_draw(s, "heatmap.gp", path, out_dir, name, vars, err, errlen);
}

/* category_<key>_<run> of the run's head gate (p = 0) or router gate (p = 1):
 * bars by block and token category. */
static int fg_category(const fg_run_data *d, int p, const char *data_dir, const char *out_dir, figures_summary *s,
                       char *err, size_t errlen) {
    const double *c3 = p ? d->p_cat : d->alpha_cat;
    if (!(p ? d->has_p_cat : d->has_alpha_cat)) return 0;
    char name[160], path[4096], vars[1024], b[32];
    snprintf(name, sizeof name, "category_%s_%s", gatekind_info[p ? d->route : d->gate].key, d->run->run_id);
    snprintf(path, sizeof path, "%s/%s.tsv", data_dir, name);
    FILE *fc = fileio_fopen_w(path);
    if (!fc) {
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
        return -1;
    }
    int hc[CAT_COUNT] = {0}, ncat = 0;
    for (int l = 0; l < d->L; l++)
        for (int c = 0; c < CAT_COUNT; c++) hc[c] |= !isnan(c3[l * CAT_COUNT + c]);
    fprintf(fc, "block");
    for (int c = 0; c < CAT_COUNT; c++)
        if (hc[c]) fprintf(fc, "\t%s", cat_name(c)), ncat++;
    fprintf(fc, "\n");
    fg_rng ryc = fg_rng_empty();
    for (int l = 0; l < d->L; l++) {
        int any = 0;
        for (int c = 0; c < CAT_COUNT; c++) any |= !isnan(c3[l * CAT_COUNT + c]);
        if (!any) continue;
        fprintf(fc, "%d", l);
        for (int c = 0; c < CAT_COUNT; c++)
            if (hc[c]) {
                fprintf(fc, "\t%s", report_num(b, 32, c3[l * CAT_COUNT + c]));
                fg_rng_add(&ryc, c3[l * CAT_COUNT + c]);
            }
        fprintf(fc, "\n");
    }
    if (ferror(fc) | fclose(fc)) {
        snprintf(err, errlen, "writing %s failed", path);
        return -1;
    }
    char yl[160], title[400]; /* a router gate by its title (TSA halting probability), a head gate by its symbol */
    if (p) snprintf(yl, sizeof yl, "mean %s", gatekind_info[d->route].title);
    else snprintf(yl, sizeof yl, "mean gate %s", gatekind_info[d->gate].symbol);
    snprintf(title, sizeof title, "%s by block and token category: %s", yl, d->label);
    figures_title_var(vars, sizeof vars, title, 5.5, 1.0);
    snprintf(vars + strlen(vars), sizeof vars - strlen(vars), "; ylab='%s'; ncol=%d", yl, 1 + ncat);
    fg_rng_vars(ryc, "y", FG_ZERO, vars, sizeof vars);
    return fg_draw(s, "category_bars.gp", path, out_dir, name, vars, err, errlen);
}

/* The depth profiles across runs: each analysed run's mean by block of each
 * gate of the gate table that has one ("<key>_mean" per block: a per-head
 * gate such as SATFormer α, a router gate such as TSA p), drawn once every
 * run is in, one curve per group of seeds (mean ± sd). */
typedef struct {
    int n, L;                      /* runs, blocks per row */
    double *v[GATE_COUNT];         /* (n, L) NaN where absent */
    unsigned char *has[GATE_COUNT]; /* (n) */
} fg_profiles;

/* 1 when gate g has a depth profile: its analysis logs "<key>_mean" by block. */
static int fg_profile_gate(gl_gate g) {
    return gatekind_info[g].axis[2] == GAX_KV_HEAD || gatekind_info[g].axis[0] == GAX_ROUTER;
}

static int fg_profiles_init(fg_profiles *pr, int n, char *err, size_t errlen) {
    memset(pr, 0, sizeof *pr);
    pr->n = n;
    pr->L = GL_MAX_LAYERS;
    for (int p = 0; p < GATE_COUNT; p++) {
        pr->v[p] = malloc((size_t)(n ? n : 1) * pr->L * sizeof(double));
        pr->has[p] = calloc((size_t)(n ? n : 1), 1);
        if (!pr->v[p] || !pr->has[p]) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        for (size_t q = 0; q < (size_t)n * pr->L; q++) pr->v[p][q] = NAN;
    }
    return 0;
}

static void fg_profiles_free(fg_profiles *pr) {
    for (int p = 0; p < GATE_COUNT; p++) free(pr->v[p]), free(pr->has[p]);
    memset(pr, 0, sizeof *pr);
}

static void fg_profiles_add(fg_profiles *pr, int i, const fg_run_data *d) {
    for (int p = 0; p < 2; p++) {
        const double *v = p ? d->p_block : d->alpha_block;
        const gl_gate g = p ? d->route : d->gate;
        if (!(p ? d->has_p_block : d->has_alpha_block)) continue;
        pr->has[g][i] = 1;
        for (int l = 0; l < d->L && l < pr->L; l++) pr->v[g][(size_t)i * pr->L + l] = v[l];
    }
}

/* depth_<key> for each gate with a profile: data files and figures (or say why not). */
static int fg_profiles_draw(gl_db *db, const runset_row *runs, const fg_profiles *pr, const char *data_dir,
                            const char *out_dir, figures_summary *s, char *err, size_t errlen) {
    fg_groups *G = malloc(sizeof *G);
    if (!G) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int rc = -1;
    for (int p = 0; p < GATE_COUNT; p++) {
        if (!fg_profile_gate((gl_gate)p)) continue;
        const gl_gate_info *gi = &gatekind_info[p];
        char name[80], why[200], what[200], ylab[200];
        snprintf(name, sizeof name, "depth_%s", gi->key);
        snprintf(why, sizeof why, "no run with the %s analysed (`gatelab analyze RUN`)", gi->title);
        snprintf(what, sizeof what, "Mean %s by block", gi->title);
        snprintf(ylab, sizeof ylab, "mean %s (probe tokens)", gi->title);
        if (fg_groups_build(db, runs, pr->n, pr->has[p], G, err, errlen)) goto done;
        if (!G->n) {
            fg_skip(s, name, why);
            continue;
        }
        char path[4200], b[32], c[32];
        snprintf(path, sizeof path, "%s/%s.tsv", data_dir, name);
        FILE *f = fileio_fopen_w(path);
        if (!f) {
            snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
            fg_groups_free(G);
            goto done;
        }
        fg_rng rx = fg_rng_empty(), ry = fg_rng_empty();
        for (int k = 0; k < G->n; k++) {
            fprintf(f, "%s%s\tmean\tsd\tn\n", k ? "\n\n" : "", G->g[k].label);
            for (int l = 0; l < pr->L; l++) {
                double x[FG_SEEDS_MAX];
                for (int q = 0; q < G->g[k].n; q++) x[q] = pr->v[p][(size_t)G->g[k].idx[q] * pr->L + l];
                const st_summary sm = st_describe(x, G->g[k].n, 0.95); /* NaN (not analysed) skipped */
                const int m = sm.n;
                if (!m) continue;
                const double mean = sm.mean, sd = m > 1 ? sm.sd : 0.0; /* one seed: drawn without a bar */
                fprintf(f, "%d\t%s\t%s\t%d\n", l, report_num(b, 32, mean), report_num(c, 32, sd), m);
                fg_rng_add(&rx, l);
                fg_rng_add(&ry, mean - sd);
                fg_rng_add(&ry, mean + sd);
            }
        }
        int bad = ferror(f) | fclose(f);
        if (bad) {
            snprintf(err, errlen, "writing %s failed", path);
            fg_groups_free(G);
            goto done;
        }
        char pv[1400], title[400], tv[700];
        fg_group_title(G, what, title, sizeof title);
        const double fig_w = G->n > 8 ? 8.0 : 6.5;
        figures_title_var(tv, sizeof tv, title, fig_w, 0.8); /* the key sits outside */
        snprintf(pv, sizeof pv, "ylab='%s'; %s; fig_w=%g", ylab, tv, fig_w);
        fg_rng_vars(rx, "x", FG_FREE, pv, sizeof pv);
        fg_rng_vars(ry, "y", FG_ZERO, pv, sizeof pv);
        fg_groups_free(G);
        if (fg_draw(s, "depth_profile.gp", path, out_dir, name, pv, err, errlen)) goto done;
    }
    rc = 0;
done:
    free(G);
    return rc;
}

/* depth_map_<run>: per-character effective depth of a TSA run from its
 * trace's last evaluation.  A run without a usable trace is skipped. */
static int fg_depth_map(const fg_run_data *d, const char *results, const char *data_dir, const char *out_dir,
                        figures_summary *s, char *err, size_t errlen) {
    const char *id = d->run->run_id;
    char tpath[4096], rdir[4096], e2[1024], name[160], path[4096], vars[512];
    snprintf(rdir, sizeof rdir, "%s/runs/%s", results, id);
    snprintf(tpath, sizeof tpath, "%s/trace.h5", rdir);
    snprintf(name, sizeof name, "depth_map_%s", id);
    snprintf(path, sizeof path, "%s/%s.tsv", data_dir, name);
    static gl_run run;
    int rows = 0, maxd = 0;
    if (access(tpath, R_OK) != 0) {
        fg_skip(s, name, "no trace.h5 in the run folder");
        return 0;
    }
    if (run_open(&run, rdir, results, 1, e2, sizeof e2)) {
        fg_skip(s, name, e2);
        return 0;
    }
    int drc = figures_depth_map_data(tpath, run.st.vocab, ckpt_vocab_bytes(&run.st), 512, 64, path, &rows, &maxd, e2,
                                     sizeof e2);
    run_close(&run);
    if (drc) {
        fg_skip(s, name, e2);
        return 0;
    }
    char title[400];
    snprintf(title, sizeof title, "%s: effective depth per character (last evaluation)", d->label);
    figures_title_var(vars, sizeof vars, title, 9, 0.85); /* the colour bar takes the right */
    snprintf(vars + strlen(vars), sizeof vars - strlen(vars), "; maxdepth=%d; fig_w=9; fig_h=%.2f", maxd,
             1.3 + 0.28 * rows);
    return fg_draw(s, "depth_map.gp", path, out_dir, name, vars, err, errlen);
}

/* ablation_seeds: the bars of ablation_<run> (ΔL over all tokens) pooled
 * over the seeds of each group: one bar per (group, intervention), mean ±
 * sd over seeds.  Drawn when some configuration has two or more seeds. */
static int fg_ablation_seeds(gl_db *db, const runset_row *runs, int n, const fg_abl_pts *a, const char *data_dir,
                             const char *out_dir, figures_summary *s, char *err, size_t errlen) {
    if (!a->n) return 0;
    unsigned char *want = calloc((size_t)n, 1);
    fg_groups *G = malloc(sizeof *G);
    int rc = -1, rows = 0;
    FILE *f = NULL;
    char path[4200];
    if (!want || !G) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }
    for (int k = 0; k < a->n; k++) want[a->p[k].run] = 1;
    if (fg_groups_build(db, runs, n, want, G, err, errlen)) goto done;
    if (G->max_seeds < 2) {
        fg_skip(s, "ablation_seeds", "every ablated configuration has one seed (its bars: ablation_<run>)");
        rc = 0;
        goto done_groups;
    }
    snprintf(path, sizeof path, "%s/ablation_seeds.tsv", data_dir);
    if (!(f = fileio_fopen_w(path))) {
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
        goto done_groups;
    }
    fprintf(f, "intervention\tdelta_loss\tsd\tseeds\n");
    for (int g = 0; g < G->n; g++)
        for (int k = 0; k < a->n; k++) { /* each intervention once per group, in the order first met */
            int in = 0, first = 1;
            for (int q = 0; q < G->g[g].n; q++) in |= G->g[g].idx[q] == a->p[k].run;
            for (int j = 0; j < k && in && first; j++)
                for (int q = 0; q < G->g[g].n; q++)
                    if (G->g[g].idx[q] == a->p[j].run && !strcmp(a->p[j].label, a->p[k].label)) first = 0;
            if (!in || !first) continue;
            double x[FG_SEEDS_MAX], mean, sd;
            int m = 0;
            for (int j = k; j < a->n; j++)
                for (int q = 0; q < G->g[g].n && m < FG_SEEDS_MAX; q++)
                    if (G->g[g].idx[q] == a->p[j].run && !strcmp(a->p[j].label, a->p[k].label)) x[m++] = a->p[j].v;
            fg_mean_sd(x, m, &mean, &sd);
            char b1[32], b2[32];
            fprintf(f, "%s%s%s\t%s\t%s\t%d\n", G->n > 1 ? G->g[g].label : "", G->n > 1 ? ": " : "", a->p[k].label,
                    report_num(b1, 32, mean), m > 1 ? report_num(b2, 32, sd) : "nan", m);
            rows++;
        }
    int bad = ferror(f) | fclose(f);
    f = NULL;
    if (bad) {
        snprintf(err, errlen, "writing %s failed", path);
        goto done_groups;
    }
    char vars[1400], title[400];
    fg_group_title(G, "Loss increase per gate intervention", title, sizeof title);
    const double fig_w = rows > 6 ? 8.0 : 5.5;
    figures_title_var(vars, sizeof vars, title, fig_w, 1.0);
    snprintf(vars + strlen(vars), sizeof vars - strlen(vars), "; ylab='ΔL (nats/token)'; fig_w=%g", fig_w);
    rc = rows ? fg_draw(s, "paper_bars.gp", path, out_dir, "ablation_seeds", vars, err, errlen) : 0;
done_groups:
    fg_groups_free(G);
done:
    if (f) fclose(f);
    free(G);
    free(want);
    return rc;
}

/* Per-run figures from the analysis, ablation and trace data, and the depth profiles across runs. */
int fg_per_run(gl_db *db, const runset_row *runs, int n, const char *results, const char *data_dir,
               const char *out_dir, figures_summary *s, char *err, size_t errlen) {
    fg_profiles pr;
    fg_run_data d;
    fg_abl_pts abl = {NULL, 0, 0};
    int rc = -1;
    memset(&d, 0, sizeof d);
    if (fg_profiles_init(&pr, n, err, errlen)) goto cleanup;
    for (int i = 0; i < n; i++) {
        int ok = fg_run_data_init(&d, db, &runs[i], err, errlen);
        if (ok < 0) goto cleanup;
        if (!ok) continue;
        d.abl = &abl;
        d.idx = i;
        if (fg_read_analysis(db, &d, err, errlen) || fg_ablation_bars(db, &d, data_dir, out_dir, s, err, errlen) ||
            fg_heatmap(&d, 0, data_dir, out_dir, s, err, errlen) || fg_heatmap(&d, 1, data_dir, out_dir, s, err, errlen) ||
            fg_category(&d, 0, data_dir, out_dir, s, err, errlen) || fg_category(&d, 1, data_dir, out_dir, s, err, errlen))
            goto cleanup;
        fg_profiles_add(&pr, i, &d);
        if (!isnan(runs[i].lambda) && fg_depth_map(&d, results, data_dir, out_dir, s, err, errlen)) goto cleanup;
    }
    rc = fg_profiles_draw(db, runs, &pr, data_dir, out_dir, s, err, errlen) ||
         fg_ablation_seeds(db, runs, n, &abl, data_dir, out_dir, s, err, errlen) ? -1 : 0;
cleanup:
    free(abl.p);
    fg_profiles_free(&pr);
    fg_run_data_free(&d);
    return rc;
}
