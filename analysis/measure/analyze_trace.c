/*
 * analyze_trace.c — `gatelab analyze`'s work: a trace (harness/store/trace.h) in,
 * TSV files, registry metric rows and a summary out (analyze.h).
 *
 * The gates a trace holds are the rows of the gate table (model/gatekind.h);
 * each is analysed by the shape of its axes (an_gate):
 *   (block, [token], KV head)  per block and KV head, and per block over all
 *       heads, the mean, exact-zero and below-ε fractions, Gini and Hoyer
 *       sparsity (gates_stats.c), the normalised entropy across heads, and
 *       means by token category (catsens.c) — at every trace step, under the
 *       gate's key (SATFormer α: alpha_*).  A gate without a token axis is the
 *       same for every token and is analysed as such;
 *   (block, coef)             tabulated as it is (ResFormer λ);
 *   (router, token)           mean p and active share per routed block, the
 *       soft and hard effective depth of every probe token and their
 *       histogram, expected depths (depth_profile.c);
 *   (block, token)            means per block and category (early-exit confidence).
 *
 * What it does not do: run the model (ablate.c and heads.c do), read the
 * registry, or print.  Which blocks have a gate comes from the config stored
 * in the trace (config_layer_mixes_v1); a trace without a readable config is
 * taken to gate every block n >= 1.
 */
#include "analysis/measure/analyze.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/fileio.h"
#include "store/manifest.h"
#include "store/metric.h"
#include "analysis/core/catsens.h"
#include "analysis/measure/depth.h"

/* One output file: opened, registered in the summary, closed with a check. */
typedef struct {
    FILE *f;
    char path[4096];
} tsv_out;

static int an_open(tsv_out *o, const char *dir, const char *name, const char *header, analyze_summary *s,
                   char *err, size_t errlen) {
    o->f = report_tsv_open(dir, name, header, o->path, sizeof o->path, err, errlen);
    if (!o->f) return -1;
    if (s->n_files < ANALYZE_MAX_FILES) snprintf(s->files[s->n_files++], sizeof s->files[0], "%s", name);
    return 0;
}

static int an_close(tsv_out *o, char *err, size_t errlen) {
    int rc = report_tsv_close(o->f, o->path, err, errlen);
    o->f = NULL;
    return rc;
}

const char *analyze_char_label(uint8_t b, char out[8]) {
    if (b == '"') snprintf(out, 8, "\xe2\x80\x9d");      /* ” */
    else if (b == '\\') snprintf(out, 8, "\xe2\x88\x96"); /* ∖ (gnuplot drops a lone backslash) */
    else if (b == ' ') snprintf(out, 8, "\xe2\x90\xa3"); /* ␣ */
    else if (b == '\n') snprintf(out, 8, "\xe2\x86\xb5"); /* ↵ */
    else if (b == '\t') snprintf(out, 8, "\xe2\x86\x92"); /* → */
    else if (b > 32 && b < 127) snprintf(out, 8, "%c", b);
    else snprintf(out, 8, "\xc2\xb7"); /* · */
    return out;
}

/* What every analysis of one trace shares. */
typedef struct {
    const gl_trace_data *td;
    const uint8_t *vocab;
    int vocab_size;
    const char *dir;
    report_metrics *rm;
    analyze_summary *s;
    char *err;
    size_t errlen;
    int S, L, Hkv, R;
    long P;
    const uint8_t *cat; /* (P) */
} an_ctx;

/* One registry row: statistic stat at (layer, head, category), any of them
 * METRIC_NONE, = v at step; the name comes from store/metric.h. */
static int an_stat(an_ctx *a, long step, double v, const char *stat, int layer, int head, int cat) {
    metric_key name;
    if (metric_stat(&name, stat, layer, head, cat)) {
        snprintf(a->err, a->errlen, "cannot name metric %s (layer %d, head %d, category %d)", stat, layer, head, cat);
        return -1;
    }
    return report_metric_add(a->rm, step, ANALYZE_SPLIT, &name, v, a->err, a->errlen);
}

/* The same for gate g's statistic "<key>_<what>" (alpha_mean, alpha_gini, …). */
static int an_gstat(an_ctx *a, long step, double v, gl_gate g, const char *what, int layer, int head, int cat) {
    char stat[64];
    snprintf(stat, sizeof stat, "%s_%s", gatekind_info[g].key, what);
    return an_stat(a, step, v, stat, layer, head, cat);
}

/* TSV cells: "\t" and each number (report_num: NaN as "nan"), n of them. */
static void an_nums(FILE *f, int n, const double *v) {
    char b[32];
    for (int i = 0; i < n; i++) fprintf(f, "\t%s", report_num(b, sizeof b, v[i]));
}

static int an_open_a(an_ctx *a, tsv_out *o, const char *name, const char *header) {
    return an_open(o, a->dir, name, header, a->s, a->err, a->errlen);
}

/* The statistic suffix "frac_lt_<eps>" for threshold e of gates_eps_name. */
static const char *an_lt(char out[40], int e) {
    snprintf(out, 40, "frac_lt_%s", gates_eps_name[e]);
    return out;
}

/* "<key>_<what>.tsv" for gate g. */
static const char *an_file(char *out, size_t n, gl_gate g, const char *what) {
    snprintf(out, n, "%s_%s.tsv", gatekind_info[g].key, what);
    return out;
}

/* Which blocks carry a value-residual gate, from the trace's config. */
static void an_gated_blocks(const gl_trace_data *td, int *gated) {
    gl_manifest mf;
    char e[512];
    int ok = td->config_ini && td->config_ini[0] &&
             manifest_load_text(&mf, td->config_ini, "trace.h5 config", e, sizeof e) == 0 &&
             mf.model.n_layer == td->n_layer;
    for (int n = 0; n < td->n_layer; n++) gated[n] = ok ? config_layer_mixes_v1(&mf.model, n) : n >= 1;
}

/* ---- losses ---- */

static int an_losses(an_ctx *a) {
    tsv_out o = {0};
    const gl_trace_data *td = a->td;
    if (an_open_a(a, &o, "losses.tsv", "step\ttrain_loss\tval_loss")) return -1;
    for (int k = 0; k < a->S; k++) {
        fprintf(o.f, "%ld", td->step[k]);
        an_nums(o.f, 2, (const double[]){td->train_loss[k], td->val_loss[k]});
        fputc('\n', o.f);
    }
    if (an_close(&o, a->err, a->errlen)) return -1;
    for (int k = 0; k < a->S; k++)
        for (int c = 0; c < CAT_COUNT; c++)
            if (an_stat(a, td->step[k], (double)a->s->cat_count[c], "tokens", METRIC_NONE, METRIC_NONE, c)) return -1;
    return 0;
}

/* ---- a per-(block, KV head) gate ---- */

/* Files of a head gate at its last step, and the evolution over steps. */
typedef struct {
    tsv_out ev, heads, cats;
    double *scratch; /* (P·Hkv) */
} an_head_files;

/* Head j of block n at step k: metric rows, evolution row, and at the last step the head tables. */
static int an_head(an_ctx *a, an_head_files *hf, gl_gate g, const float *x, long step, int last, int n, int j) {
    const long P = a->P;
    const int H = a->Hkv;
    gates_summary gs;
    gates_summarize(x + j, P, H, hf->scratch, &gs);
    double cm[CAT_COUNT];
    long cc[CAT_COUNT];
    catsens_means(x + j, P, H, a->cat, cm, cc);
    char lt[40];
    if (an_gstat(a, step, gs.mean, g, "mean", n, j, METRIC_NONE) || an_gstat(a, step, gs.frac_zero, g, "frac_zero", n, j, METRIC_NONE))
        return -1;
    for (int e = 0; e < GATES_N_EPS; e++)
        if (an_gstat(a, step, gs.frac_below[e], g, an_lt(lt, e), n, j, METRIC_NONE)) return -1;
    if (an_gstat(a, step, gs.gini, g, "gini", n, j, METRIC_NONE) || an_gstat(a, step, gs.hoyer, g, "hoyer", n, j, METRIC_NONE))
        return -1;
    fprintf(hf->ev.f, "%ld\t%d\t%d", step, n, j);
    an_nums(hf->ev.f, 5, (const double[]){gs.mean, gs.frac_zero, gs.frac_below[1], gs.gini, gs.hoyer});
    fputc('\n', hf->ev.f);
    if (!last) return 0;
    a->s->head.head_mean[n][j] = gs.mean;
    fprintf(hf->heads.f, "%d\t%d\t%ld", n, j, gs.n);
    an_nums(hf->heads.f, 10,
            (const double[]){gs.mean, gs.frac_zero, gs.frac_below[0], gs.frac_below[1], gs.frac_below[2], gs.gini,
                             gs.hoyer, cm[0], cm[1], cm[2]});
    fputc('\n', hf->heads.f);
    for (int c = 0; c < CAT_COUNT; c++) {
        fprintf(hf->cats.f, "%d\t%d\t%d\t%s\t%ld", n, j, c, cat_name(c), cc[c]);
        an_nums(hf->cats.f, 1, &cm[c]);
        fputc('\n', hf->cats.f);
    }
    return 0;
}

/* Block n over every (token, head) value at step k; adds to the all-block mean. */
static int an_head_block(an_ctx *a, an_head_files *hf, gl_gate g, const float *x, long step, int last, int n,
                         double *all_sum, long *all_n) {
    const long P = a->P;
    const int H = a->Hkv;
    gates_summary gs;
    gates_summarize(x, P * H, 1, hf->scratch, &gs);
    long used = 0;
    double ent = gates_head_entropy(x, P, H, &used);
    /* per category over tokens and heads: mean of each token's head mean */
    double sum[CAT_COUNT] = {0}, cm[CAT_COUNT];
    long cnt[CAT_COUNT] = {0};
    for (long t = 0; t < P; t++) {
        if (a->cat[t] >= CAT_COUNT) continue;
        for (int j = 0; j < H; j++) sum[a->cat[t]] += x[t * H + j];
        cnt[a->cat[t]] += H;
    }
    for (int c = 0; c < CAT_COUNT; c++) cm[c] = cnt[c] ? sum[c] / cnt[c] : NAN;
    *all_sum += gs.mean * (double)gs.n;
    *all_n += gs.n;
    char lt[40];
    if (an_gstat(a, step, gs.mean, g, "mean", n, METRIC_NONE, METRIC_NONE) || an_gstat(a, step, gs.frac_zero, g, "frac_zero", n, METRIC_NONE, METRIC_NONE))
        return -1;
    for (int e = 0; e < GATES_N_EPS; e++)
        if (an_gstat(a, step, gs.frac_below[e], g, an_lt(lt, e), n, METRIC_NONE, METRIC_NONE)) return -1;
    if (an_gstat(a, step, gs.gini, g, "gini", n, METRIC_NONE, METRIC_NONE) || an_gstat(a, step, gs.hoyer, g, "hoyer", n, METRIC_NONE, METRIC_NONE) ||
        an_gstat(a, step, ent, g, "head_entropy", n, METRIC_NONE, METRIC_NONE))
        return -1;
    for (int c = 0; c < CAT_COUNT; c++)
        if (an_gstat(a, step, cm[c], g, "mean", n, METRIC_NONE, c)) return -1;
    fprintf(hf->ev.f, "%ld\t%d\t-1", step, n);
    an_nums(hf->ev.f, 5, (const double[]){gs.mean, gs.frac_zero, gs.frac_below[1], gs.gini, gs.hoyer});
    fputc('\n', hf->ev.f);
    if (!last) return 0;
    analyze_head_gate *hs = &a->s->head;
    hs->layer[n] = gs;
    hs->entropy[n] = ent;
    for (int c = 0; c < CAT_COUNT; c++) {
        hs->cat[n][c] = cm[c];
        fprintf(hf->cats.f, "%d\t-1\t%d\t%s\t%ld", n, c, cat_name(c), a->s->cat_count[c]);
        an_nums(hf->cats.f, 1, &cm[c]);
        fputc('\n', hf->cats.f);
    }
    return 0;
}

/* The per-block table at the last step. */
static int an_head_layers(an_ctx *a, gl_gate g) {
    char name[64];
    tsv_out o = {0};
    const analyze_head_gate *hs = &a->s->head;
    if (an_open_a(a, &o, an_file(name, sizeof name, g, "layers"),
                  "layer\tn_values\tmean\tfrac_zero\tfrac_lt_1e-3\tfrac_lt_1e-2\tfrac_lt_1e-1\tgini\thoyer"
                  "\thead_entropy\tmean_structural\tmean_functional\tmean_semantic"))
        return -1;
    for (int n = 0; n < a->L; n++) {
        if (!hs->gated[n]) continue;
        const gates_summary *gs = &hs->layer[n];
        fprintf(o.f, "%d\t%ld", n, gs->n);
        an_nums(o.f, 11,
                (const double[]){gs->mean, gs->frac_zero, gs->frac_below[0], gs->frac_below[1], gs->frac_below[2],
                                 gs->gini, gs->hoyer, hs->entropy[n], hs->cat[n][0], hs->cat[n][1], hs->cat[n][2]});
        fputc('\n', o.f);
    }
    return an_close(&o, a->err, a->errlen);
}

/* Values of g at step k, block n as (P, Hkv): the trace's own rows, or the
 * per-block values repeated for every probe token (a gate without a token axis). */
static const float *an_head_rows(an_ctx *a, gl_gate g, int k, int n, float *expand) {
    const long P = a->P;
    const int H = a->Hkv;
    const float *base = a->td->gate[g];
    if (gatekind_per_token(g)) return base + ((size_t)k * a->L + n) * P * H;
    const float *row = base + ((size_t)k * a->L + n) * H;
    for (long t = 0; t < P; t++) memcpy(expand + (size_t)t * H, row, (size_t)H * sizeof(float));
    return expand;
}

static int an_head_step(an_ctx *a, an_head_files *hf, gl_gate g, int k, float *expand) {
    char name[64];
    const long step = a->td->step[k];
    const int last = k == a->S - 1;
    double all_sum = 0.0;
    long all_n = 0;
    if (last && (an_open_a(a, &hf->heads, an_file(name, sizeof name, g, "heads"),
                           "layer\tkv_head\tn_tokens\tmean\tfrac_zero\tfrac_lt_1e-3\tfrac_lt_1e-2\tfrac_lt_1e-1\tgini"
                           "\thoyer\tmean_structural\tmean_functional\tmean_semantic") ||
                 an_open_a(a, &hf->cats, an_file(name, sizeof name, g, "categories"),
                           "layer\tkv_head\tcategory\tcategory_name\tn_tokens\tmean")))
        return -1;
    for (int n = 0; n < a->L; n++) {
        if (!a->s->head.gated[n]) continue;
        const float *x = an_head_rows(a, g, k, n, expand); /* (P, Hkv) */
        for (int j = 0; j < a->Hkv; j++)
            if (an_head(a, hf, g, x, step, last, n, j)) return -1;
        if (an_head_block(a, hf, g, x, step, last, n, &all_sum, &all_n)) return -1;
    }
    double mean = all_n ? all_sum / (double)all_n : NAN;
    if (an_gstat(a, step, mean, g, "mean", METRIC_NONE, METRIC_NONE, METRIC_NONE)) return -1;
    if (!last) return 0;
    a->s->head.mean = mean;
    if (an_close(&hf->heads, a->err, a->errlen) || an_close(&hf->cats, a->err, a->errlen)) return -1;
    return an_head_layers(a, g);
}

static int an_head_gate(an_ctx *a, gl_gate g) {
    char name[64];
    int rc = -1;
    an_head_files hf = {0};
    const size_t PH = (size_t)(a->P > 0 ? a->P : 1) * (a->Hkv > 0 ? a->Hkv : 1);
    float *expand = malloc(PH * sizeof(float));
    hf.scratch = malloc(PH * sizeof(double));
    if (!expand || !hf.scratch) {
        snprintf(a->err, a->errlen, "out of memory analysing %ld probe tokens", a->P);
        goto cleanup;
    }
    a->s->head_gate = g;
    an_gated_blocks(a->td, a->s->head.gated);
    if (an_open_a(a, &hf.ev, an_file(name, sizeof name, g, "evolution"),
                  "step\tlayer\tkv_head\tmean\tfrac_zero\tfrac_lt_1e-2\tgini\thoyer"))
        goto cleanup;
    for (int k = 0; k < a->S; k++)
        if (an_head_step(a, &hf, g, k, expand)) goto cleanup;
    rc = an_close(&hf.ev, a->err, a->errlen);
cleanup:
    if (hf.ev.f) fclose(hf.ev.f);
    if (hf.heads.f) fclose(hf.heads.f);
    if (hf.cats.f) fclose(hf.cats.f);
    free(expand);
    free(hf.scratch);
    return rc;
}

/* ---- per-block coefficients (ResFormer λ1, λ2) ---- */

static int an_coef(an_ctx *a, gl_gate g) {
    tsv_out o = {0};
    const float *x = a->td->gate[g];
    if (an_open_a(a, &o, "lambda.tsv", "step\tlayer\tlambda1\tlambda2")) return -1;
    for (int k = 0; k < a->S; k++) {
        long step = a->td->step[k];
        for (int n = 0; n < a->L; n++) {
            double l1 = x[((size_t)k * a->L + n) * 2], l2 = x[((size_t)k * a->L + n) * 2 + 1];
            fprintf(o.f, "%ld\t%d", step, n);
            an_nums(o.f, 2, (const double[]){l1, l2});
            fputc('\n', o.f);
            if (an_stat(a, step, l1, "lambda1", n, METRIC_NONE, METRIC_NONE) || an_stat(a, step, l2, "lambda2", n, METRIC_NONE, METRIC_NONE)) {
                fclose(o.f);
                return -1;
            }
            if (k == a->S - 1) {
                a->s->lambda1[n] = l1;
                a->s->lambda2[n] = l2;
            }
        }
    }
    return an_close(&o, a->err, a->errlen);
}

/* ---- routers (TSA p) ---- */

/* One step: per-router means and active shares, expected depths. */
static int an_router_step(an_ctx *a, gl_gate g, int k, FILE *pe, FILE *de) {
    const int R = a->R;
    const long P = a->P, step = a->td->step[k];
    const float *p = a->td->gate[g] + (size_t)k * R * P;
    double mp[GL_MAX_LAYERS], act[GL_MAX_LAYERS], ds, dh;
    depth_router_profile(p, R, P, mp, act);
    depth_expected(p, R, P, &ds, &dh);
    double af = depth_active_frac(p, R, P);
    for (int l = 0; l < R; l++) {
        fprintf(pe, "%ld\t%d\t%d", step, l, l + 1);
        an_nums(pe, 2, (const double[]){mp[l], act[l]});
        fputc('\n', pe);
        double cm[CAT_COUNT];
        long cc[CAT_COUNT];
        catsens_means(p + (size_t)l * P, P, 1, a->cat, cm, cc);
        if (an_stat(a, step, mp[l], "p_mean", l + 1, METRIC_NONE, METRIC_NONE) || an_stat(a, step, act[l], "active_frac", l + 1, METRIC_NONE, METRIC_NONE))
            return -1;
        for (int c = 0; c < CAT_COUNT; c++)
            if (an_stat(a, step, cm[c], "p_mean", l + 1, METRIC_NONE, c)) return -1;
        if (k == a->S - 1) {
            a->s->p_mean[l + 1] = mp[l];
            a->s->p_active[l + 1] = act[l];
            for (int c = 0; c < CAT_COUNT; c++) a->s->p_cat[l + 1][c] = cm[c];
        }
    }
    if (an_stat(a, step, ds, "expected_depth", METRIC_NONE, METRIC_NONE, METRIC_NONE) || an_stat(a, step, dh, "expected_depth_hard", METRIC_NONE, METRIC_NONE, METRIC_NONE) ||
        an_stat(a, step, af, "active_frac", METRIC_NONE, METRIC_NONE, METRIC_NONE))
        return -1;
    fprintf(de, "%ld", step);
    an_nums(de, 3, (const double[]){ds, dh, af});
    fputc('\n', de);
    if (k == a->S - 1) {
        a->s->depth_soft = ds;
        a->s->depth_hard = dh;
        a->s->active_frac = af;
    }
    return 0;
}

/* Last step: histograms of the hard and soft depths. */
static int an_router_hists(an_ctx *a, const float *p, const float *soft) {
    const int R = a->R;
    const long P = a->P;
    tsv_out o = {0};
    long hist[GL_MAX_LAYERS + 1];
    depth_hist_hard(p, R, P, hist);
    if (an_open_a(a, &o, "depth_hist.tsv", "depth\tn_tokens\tfrac")) return -1;
    for (int d = 1; d <= R + 1; d++) {
        fprintf(o.f, "%d\t%ld", d, hist[d - 1]);
        an_nums(o.f, 1, (const double[]){P ? (double)hist[d - 1] / P : NAN});
        fputc('\n', o.f);
    }
    if (an_close(&o, a->err, a->errlen)) return -1;
    /* soft depths in bins of a quarter block over [1, L] */
    const int nb = 4 * R > 0 ? 4 * R : 1;
    long *sh = calloc((size_t)nb, sizeof(long));
    if (!sh) {
        snprintf(a->err, a->errlen, "out of memory for a histogram");
        return -1;
    }
    gates_histogram(soft, P, 1, 1.0, (double)(R + 1), nb, sh);
    if (an_open_a(a, &o, "depth_hist_soft.tsv", "bin_lo\tbin_hi\tn_tokens\tfrac")) {
        free(sh);
        return -1;
    }
    char b1[32], b2[32];
    for (int i = 0; i < nb; i++) {
        fprintf(o.f, "%s\t%s\t%ld", report_num(b1, 32, 1.0 + i * 0.25), report_num(b2, 32, 1.0 + (i + 1) * 0.25), sh[i]);
        an_nums(o.f, 1, (const double[]){P ? (double)sh[i] / P : NAN});
        fputc('\n', o.f);
    }
    free(sh);
    if (an_close(&o, a->err, a->errlen)) return -1;
    /* the halting probabilities themselves, every (router, probe token), in ANALYZE_P_BINS bins of
     * [0, 1] (0.5, where a token skips, is a bin edge): bimodal when the routers have decided */
    long ph[ANALYZE_P_BINS];
    const long np = gates_histogram(p, (long)R * P, 1, 0.0, 1.0, ANALYZE_P_BINS, ph);
    if (an_open_a(a, &o, "p_hist.tsv", "bin_lo\tbin_hi\tn\tfrac")) return -1;
    const long step = a->td->step[a->S - 1];
    for (int i = 0; i < ANALYZE_P_BINS; i++) {
        const double frac = np ? (double)ph[i] / np : NAN;
        char stat[32];
        fprintf(o.f, "%s\t%s\t%ld", report_num(b1, 32, (double)i / ANALYZE_P_BINS),
                report_num(b2, 32, (double)(i + 1) / ANALYZE_P_BINS), ph[i]);
        an_nums(o.f, 1, &frac);
        fputc('\n', o.f);
        snprintf(stat, sizeof stat, "p_hist_b%d", i);
        if (an_stat(a, step, frac, stat, METRIC_NONE, METRIC_NONE, METRIC_NONE)) {
            fclose(o.f);
            return -1;
        }
    }
    return an_close(&o, a->err, a->errlen);
}

/* Last step: every probe token's depths and halting probabilities. */
static int an_router_tokens(an_ctx *a, const float *p, const float *soft, const int *hard) {
    const int R = a->R;
    const long P = a->P;
    const gl_trace_data *td = a->td;
    tsv_out o = {0};
    char header[4096];
    int hl = snprintf(header, sizeof header, "index\twindow\tpos\ttoken\tchar\tcategory\tdepth_soft\tdepth_hard");
    for (int l = 0; l < R && hl < (int)sizeof header - 16; l++) hl += snprintf(header + hl, sizeof header - hl, "\tp_L%d", l + 1);
    if (an_open_a(a, &o, "depth_tokens.tsv", header)) return -1;
    /* windows are the trace's probe windows, consecutive, T tokens each (T
     * from the stored config; without one the probe is taken as one window) */
    gl_manifest mf;
    char e2[256], b1[32];
    long T = (td->config_ini && manifest_load_text(&mf, td->config_ini, "trace", e2, sizeof e2) == 0 &&
              mf.model.seq_len > 0 && P % mf.model.seq_len == 0)
                 ? mf.model.seq_len
                 : P;
    for (long t = 0; t < P; t++) {
        char cl[8];
        int id = td->probe_tokens[t];
        if (a->vocab && id >= 0 && id < a->vocab_size) analyze_char_label(a->vocab[id], cl);
        else snprintf(cl, sizeof cl, "%d", id);
        fprintf(o.f, "%ld\t%ld\t%ld\t%d\t%s\t%s\t%s\t%d", t, t / T, t % T, id, cl, cat_name(a->cat[t]),
                report_num(b1, 32, soft[t]), hard[t]);
        for (int l = 0; l < R; l++) an_nums(o.f, 1, (const double[]){p[(size_t)l * P + t]});
        fputc('\n', o.f);
    }
    return an_close(&o, a->err, a->errlen);
}

static int an_router(an_ctx *a, gl_gate g) {
    const int R = a->R;
    const long P = a->P;
    int rc = -1;
    tsv_out o = {0}, dv = {0};
    float *soft = malloc((size_t)(P > 0 ? P : 1) * sizeof(float));
    int *hard = malloc((size_t)(P > 0 ? P : 1) * sizeof(int));
    if (!soft || !hard) {
        snprintf(a->err, a->errlen, "out of memory analysing %ld probe tokens", P);
        goto cleanup;
    }
    if (an_open_a(a, &o, "p_evolution.tsv", "step\trouter\tlayer\tmean_p\tactive_frac") ||
        an_open_a(a, &dv, "depth_evolution.tsv", "step\texpected_depth_soft\texpected_depth_hard\tactive_frac"))
        goto cleanup;
    for (int k = 0; k < a->S; k++)
        if (an_router_step(a, g, k, o.f, dv.f)) goto cleanup;
    if (an_close(&o, a->err, a->errlen) || an_close(&dv, a->err, a->errlen)) goto cleanup;
    if (an_open_a(a, &o, "p_routers.tsv",
                  "router\tlayer\tmean_p\tactive_frac\tmean_p_structural\tmean_p_functional\tmean_p_semantic"))
        goto cleanup;
    const analyze_summary *s = a->s;
    for (int l = 0; l < R; l++) {
        fprintf(o.f, "%d\t%d", l, l + 1);
        an_nums(o.f, 5,
                (const double[]){s->p_mean[l + 1], s->p_active[l + 1], s->p_cat[l + 1][0], s->p_cat[l + 1][1],
                                 s->p_cat[l + 1][2]});
        fputc('\n', o.f);
    }
    if (an_close(&o, a->err, a->errlen)) goto cleanup;
    const float *p = a->td->gate[g] + (size_t)(a->S - 1) * R * P;
    depth_tokens(p, R, P, soft, hard);
    if (an_router_hists(a, p, soft) || an_router_tokens(a, p, soft, hard)) goto cleanup;
    rc = 0;
cleanup:
    if (o.f) fclose(o.f);
    if (dv.f) fclose(dv.f);
    free(soft);
    free(hard);
    return rc;
}

/* ---- per-block per-token values (early-exit confidence, MoD weight, hard-routing selection) ---- */

/* <key>.tsv with the mean by block and by token category per step, the metric rows,
 * and the last step's means in the summary. */
static int an_block_tokens(an_ctx *a, gl_gate g) {
    tsv_out o = {0};
    const long P = a->P;
    char name[64], header[160];
    snprintf(name, sizeof name, "%s.tsv", gatekind_info[g].key);
    snprintf(header, sizeof header, "step\tlayer\tmean_%s\tmean_structural\tmean_functional\tmean_semantic",
             gatekind_info[g].symbol);
    if (an_open_a(a, &o, name, header)) return -1;
    for (int k = 0; k < a->S; k++) {
        long step = a->td->step[k];
        for (int n = 0; n < a->L; n++) {
            const float *cf = a->td->gate[g] + ((size_t)k * a->L + n) * P;
            double mc = gates_mean(cf, P, 1), cm[CAT_COUNT];
            long cc[CAT_COUNT];
            catsens_means(cf, P, 1, a->cat, cm, cc);
            int bad = an_stat(a, step, mc, gatekind_info[g].key, n, METRIC_NONE, METRIC_NONE);
            for (int c = 0; c < CAT_COUNT && !bad; c++) bad = an_stat(a, step, cm[c], gatekind_info[g].key, n, METRIC_NONE, c);
            if (bad) {
                fclose(o.f);
                return -1;
            }
            fprintf(o.f, "%ld\t%d", step, n);
            an_nums(o.f, 4, (const double[]){mc, cm[0], cm[1], cm[2]});
            fputc('\n', o.f);
            if (k == a->S - 1) {
                a->s->tok_mean[g][n] = mc;
                for (int c = 0; c < CAT_COUNT; c++) a->s->tok_cat[g][n][c] = cm[c];
            }
        }
    }
    return an_close(&o, a->err, a->errlen);
}

/* ---- driver ---- */

/* The analysis of gate g, chosen by its axes (file comment). */
static int an_gate(an_ctx *a, gl_gate g) {
    const gl_gate_info *gi = &gatekind_info[g];
    if (gi->axis[2] == GAX_KV_HEAD) return an_head_gate(a, g);
    if (gi->axis[2] == GAX_COEF) return an_coef(a, g);
    if (gi->axis[0] == GAX_ROUTER) return a->R > 0 ? an_router(a, g) : 0;
    return an_block_tokens(a, g);
}

int analyze_trace(const gl_trace_data *td, const uint8_t *vocab, int vocab_size, const char *out_dir,
                  report_metrics *rm, analyze_summary *s, char *err, size_t errlen) {
    memset(s, 0, sizeof *s);
    s->head_gate = -1;
    an_ctx a = {td, vocab, vocab_size, out_dir, rm, s, err, errlen, td->n_steps, td->n_layer, td->n_kv_head,
                td->n_router, td->n_probe, td->probe_category};
    if (a.S < 1) {
        snprintf(err, errlen, "the trace has no evaluation step yet: train at least until the first evaluation");
        return -1;
    }
    if (a.L > GL_MAX_LAYERS || a.Hkv > ANALYZE_MAX_HEADS) {
        snprintf(err, errlen, "the trace has %d layers and %d KV heads; analyze handles at most %d and %d", a.L,
                 a.Hkv, GL_MAX_LAYERS, ANALYZE_MAX_HEADS);
        return -1;
    }
    s->n_layer = a.L;
    s->n_kv_head = a.Hkv;
    s->n_router = a.R;
    s->n_steps = a.S;
    s->n_probe = a.P;
    s->step = td->step[a.S - 1];
    for (int g = 0; g < GATE_COUNT; g++)
        s->has[g] = td->gate[g] != NULL && (gatekind_info[g].axis[0] != GAX_ROUTER || a.R > 0);
    if (fileio_mkdir_p(out_dir, err, errlen)) return -1;
    for (long t = 0; t < a.P; t++)
        if (a.cat[t] < CAT_COUNT) s->cat_count[a.cat[t]]++;
    if (an_losses(&a)) return -1;
    for (int g = 0; g < GATE_COUNT; g++)
        if (s->has[g] && an_gate(&a, (gl_gate)g)) return -1;
    return 0;
}
