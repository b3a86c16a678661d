/*
 * analyze_trace.c — `gatelab analyze`'s work: a trace (harness/store/trace.h) in,
 * TSV files, registry metric rows and a summary out (analyze.h).
 *
 * For SATFormer α: per block and KV head, and per block over all heads, the
 * mean, exact-zero and below-ε fractions, Gini and Hoyer sparsity
 * (gates_stats.c), the normalised entropy across heads, and means by token
 * category (catsens.c) — at every trace step.  For TSA p: mean p and active
 * share per routed block, the soft and hard effective depth of every probe
 * token and their histogram, expected depths (depth_profile.c).  ResFormer λ
 * and early-exit confidences are tabulated as they are.
 *
 * What it does not do: run the model (ablate.c and heads.c do), read the
 * registry, or print.  Which blocks have a gate comes from the config stored
 * in the trace (config_layer_mixes_v1); a trace without a readable config is
 * taken to gate every block n >= 1.
 */
#include "analyze.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/manifest.h"
#include "store/metric.h"
#include "catsens.h"
#include "depth.h"

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

/* Shorthand for a metric row: value of stat at (layer, head, category), any
 * of them METRIC_NONE; the name comes from store/metric.h. */
#define METRIC(value, stat, layer, head, cat)                                                          \
    do {                                                                                               \
        char nm_[REPORT_NAME_MAX];                                                                     \
        if (metric_stat(nm_, sizeof nm_, (stat), (layer), (head), (cat))) {                            \
            snprintf(err, errlen, "cannot name metric %s (layer %d, head %d, category %d)", (stat),      \
                     (layer), (head), (cat));                                                          \
            goto cleanup;                                                                              \
        }                                                                                              \
        if (report_metric_add(rm, step, ANALYZE_SPLIT, nm_, (value), err, errlen)) goto cleanup;       \
    } while (0)

/* The statistic "alpha_frac_lt_<eps>" for threshold e of gates_eps_name. */
static const char *an_lt_stat(char out[40], int e) {
    snprintf(out, 40, "alpha_frac_lt_%s", gates_eps_name[e]);
    return out;
}

static const char *num(char *b, double v) { return report_num(b, 32, v); }

/* Which blocks carry a SATFormer gate, from the trace's config. */
static void an_gated_blocks(const gl_trace_data *td, int *gated) {
    gl_manifest mf;
    char e[512];
    int ok = td->config_ini && td->config_ini[0] &&
             manifest_load_text(&mf, td->config_ini, "trace.h5 config", e, sizeof e) == 0 &&
             mf.model.n_layer == td->n_layer;
    for (int n = 0; n < td->n_layer; n++) gated[n] = ok ? config_layer_mixes_v1(&mf.model, n) : n >= 1;
}

int analyze_trace(const gl_trace_data *td, const uint8_t *vocab, int vocab_size, const char *out_dir,
                  report_metrics *rm, analyze_summary *s, char *err, size_t errlen) {
    memset(s, 0, sizeof *s);
    const int S = td->n_steps, L = td->n_layer, Hkv = td->n_kv_head, R = td->n_router;
    const long P = td->n_probe;
    int rc = -1;
    float *scratch = NULL, *soft = NULL;
    int *hard = NULL;
    tsv_out o = {0}, ev = {0}, cs = {0}, dv = {0}; /* closed at cleanup if still open */
    char b1[32], b2[32], b3[32], b4[32], b5[32], b6[32], b7[32], b8[32], b9[32], lt[40];
    if (S < 1) {
        snprintf(err, errlen, "the trace has no evaluation step yet: train at least until the first evaluation");
        return -1;
    }
    if (L > GL_MAX_LAYERS || Hkv > ANALYZE_MAX_HEADS) {
        snprintf(err, errlen, "the trace has %d layers and %d KV heads; analyze handles at most %d and %d", L, Hkv,
                 GL_MAX_LAYERS, ANALYZE_MAX_HEADS);
        return -1;
    }
    s->n_layer = L;
    s->n_kv_head = Hkv;
    s->n_router = R;
    s->n_steps = S;
    s->n_probe = P;
    s->step = td->step[S - 1];
    s->has_alpha = td->gate[GATE_ALPHA] != NULL;
    s->has_lambda = td->gate[GATE_LAMBDA] != NULL;
    s->has_p = td->gate[GATE_P] != NULL && R > 0;
    s->has_exit = td->gate[GATE_CONF] != NULL;
    if (report_mkdir_p(out_dir, err, errlen)) return -1;
    scratch = malloc((size_t)(P > 0 ? P : 1) * (Hkv > 0 ? Hkv : 1) * sizeof(float));
    soft = malloc((size_t)(P > 0 ? P : 1) * sizeof(float));
    hard = malloc((size_t)(P > 0 ? P : 1) * sizeof(int));
    if (!scratch || !soft || !hard) {
        snprintf(err, errlen, "out of memory analysing %ld probe tokens", P);
        goto cleanup;
    }
    const uint8_t *cat = td->probe_category;
    for (long t = 0; t < P; t++)
        if (cat[t] < CAT_COUNT) s->cat_count[cat[t]]++;

    /* losses over steps */
    if (an_open(&o, out_dir, "losses.tsv", "step\ttrain_loss\tval_loss", s, err, errlen)) goto cleanup;
    for (int k = 0; k < S; k++)
        fprintf(o.f, "%ld\t%s\t%s\n", td->step[k], num(b1, td->train_loss[k]), num(b2, td->val_loss[k]));
    if (an_close(&o, err, errlen)) goto cleanup;

    for (int k = 0; k < S; k++) {
        long step = td->step[k];
        for (int c = 0; c < CAT_COUNT; c++) METRIC((double)s->cat_count[c], "tokens", METRIC_NONE, METRIC_NONE, c);
    }

    /* ---- SATFormer α ---- */
    if (s->has_alpha) {
        an_gated_blocks(td, s->gated);
        if (an_open(&ev, out_dir, "alpha_evolution.tsv",
                    "step\tlayer\tkv_head\tmean\tfrac_zero\tfrac_lt_1e-2\tgini\thoyer", s, err, errlen))
            goto cleanup;
        for (int k = 0; k < S; k++) {
            long step = td->step[k];
            const int last = k == S - 1;
            double all_sum = 0.0;
            long all_n = 0;
            if (last) {
                if (an_open(&o, out_dir, "alpha_heads.tsv",
                            "layer\tkv_head\tn_tokens\tmean\tfrac_zero\tfrac_lt_1e-3\tfrac_lt_1e-2\tfrac_lt_1e-1\tgini\thoyer"
                            "\tmean_structural\tmean_functional\tmean_semantic",
                            s, err, errlen) ||
                    an_open(&cs, out_dir, "alpha_categories.tsv",
                            "layer\tkv_head\tcategory\tcategory_name\tn_tokens\tmean", s, err, errlen))
                    goto cleanup;
            }
            for (int n = 0; n < L; n++) {
                if (!s->gated[n]) continue;
                const float *a = td->gate[GATE_ALPHA] + ((size_t)k * L + n) * P * Hkv; /* (P, Hkv) */
                for (int j = 0; j < Hkv; j++) {
                    gates_summary g;
                    gates_summarize(a + j, P, Hkv, scratch, &g);
                    double cm[CAT_COUNT];
                    long cc[CAT_COUNT];
                    catsens_means(a + j, P, Hkv, cat, cm, cc);
                    METRIC(g.mean, "alpha_mean", n, j, METRIC_NONE);
                    METRIC(g.frac_zero, "alpha_frac_zero", n, j, METRIC_NONE);
                    for (int e = 0; e < GATES_N_EPS; e++)
                        METRIC(g.frac_below[e], an_lt_stat(lt, e), n, j, METRIC_NONE);
                    METRIC(g.gini, "alpha_gini", n, j, METRIC_NONE);
                    METRIC(g.hoyer, "alpha_hoyer", n, j, METRIC_NONE);
                    fprintf(ev.f, "%ld\t%d\t%d\t%s\t%s\t%s\t%s\t%s\n", step, n, j, num(b1, g.mean), num(b2, g.frac_zero),
                            num(b3, g.frac_below[1]), num(b4, g.gini), num(b5, g.hoyer));
                    if (last) {
                        s->alpha_head_mean[n][j] = g.mean;
                        fprintf(o.f, "%d\t%d\t%ld\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", n, j, g.n, num(b1, g.mean),
                                num(b2, g.frac_zero), num(b3, g.frac_below[0]), num(b4, g.frac_below[1]),
                                num(b5, g.frac_below[2]), num(b6, g.gini), num(b7, g.hoyer), num(b8, cm[0]),
                                num(b9, cm[1]), num(b1, cm[2]));
                        for (int c = 0; c < CAT_COUNT; c++)
                            fprintf(cs.f, "%d\t%d\t%d\t%s\t%ld\t%s\n", n, j, c, cat_name(c), cc[c], num(b1, cm[c]));
                    }
                }
                /* the whole block: every (token, head) value */
                gates_summary g;
                gates_summarize(a, P * Hkv, 1, scratch, &g);
                long used = 0;
                double ent = gates_head_entropy(a, P, Hkv, &used);
                double cm[CAT_COUNT] = {0};
                {
                    /* per category over tokens and heads: mean of each token's head mean */
                    double sum[CAT_COUNT] = {0};
                    long cnt[CAT_COUNT] = {0};
                    for (long t = 0; t < P; t++) {
                        if (cat[t] >= CAT_COUNT) continue;
                        for (int j = 0; j < Hkv; j++) sum[cat[t]] += a[t * Hkv + j];
                        cnt[cat[t]] += Hkv;
                    }
                    for (int c = 0; c < CAT_COUNT; c++) cm[c] = cnt[c] ? sum[c] / cnt[c] : NAN;
                }
                all_sum += g.mean * (double)g.n;
                all_n += g.n;
                METRIC(g.mean, "alpha_mean", n, METRIC_NONE, METRIC_NONE);
                METRIC(g.frac_zero, "alpha_frac_zero", n, METRIC_NONE, METRIC_NONE);
                for (int e = 0; e < GATES_N_EPS; e++)
                    METRIC(g.frac_below[e], an_lt_stat(lt, e), n, METRIC_NONE, METRIC_NONE);
                METRIC(g.gini, "alpha_gini", n, METRIC_NONE, METRIC_NONE);
                METRIC(g.hoyer, "alpha_hoyer", n, METRIC_NONE, METRIC_NONE);
                METRIC(ent, "alpha_head_entropy", n, METRIC_NONE, METRIC_NONE);
                for (int c = 0; c < CAT_COUNT; c++) METRIC(cm[c], "alpha_mean", n, METRIC_NONE, c);
                fprintf(ev.f, "%ld\t%d\t-1\t%s\t%s\t%s\t%s\t%s\n", step, n, num(b1, g.mean), num(b2, g.frac_zero),
                        num(b3, g.frac_below[1]), num(b4, g.gini), num(b5, g.hoyer));
                if (last) {
                    s->alpha_layer[n] = g;
                    s->alpha_entropy[n] = ent;
                    for (int c = 0; c < CAT_COUNT; c++) {
                        s->alpha_cat[n][c] = cm[c];
                        fprintf(cs.f, "%d\t-1\t%d\t%s\t%ld\t%s\n", n, c, cat_name(c), s->cat_count[c], num(b1, cm[c]));
                    }
                }
            }
            double amean = all_n ? all_sum / (double)all_n : NAN;
            METRIC(amean, "alpha_mean", METRIC_NONE, METRIC_NONE, METRIC_NONE);
            if (last) {
                s->alpha_mean = amean;
                if (an_close(&o, err, errlen) || an_close(&cs, err, errlen)) goto cleanup;
                /* per-layer table at the last step */
                if (an_open(&o, out_dir, "alpha_layers.tsv",
                            "layer\tn_values\tmean\tfrac_zero\tfrac_lt_1e-3\tfrac_lt_1e-2\tfrac_lt_1e-1\tgini\thoyer"
                            "\thead_entropy\tmean_structural\tmean_functional\tmean_semantic",
                            s, err, errlen))
                    goto cleanup;
                for (int n = 0; n < L; n++) {
                    if (!s->gated[n]) continue;
                    const gates_summary *g = &s->alpha_layer[n];
                    fprintf(o.f, "%d\t%ld\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", n, g->n, num(b1, g->mean),
                            num(b2, g->frac_zero), num(b3, g->frac_below[0]), num(b4, g->frac_below[1]),
                            num(b5, g->frac_below[2]), num(b6, g->gini), num(b7, g->hoyer), num(b8, s->alpha_entropy[n]),
                            num(b9, s->alpha_cat[n][0]), num(b1, s->alpha_cat[n][1]), num(b2, s->alpha_cat[n][2]));
                }
                if (an_close(&o, err, errlen)) goto cleanup;
            }
        }
        if (an_close(&ev, err, errlen)) goto cleanup;
    }

    /* ---- ResFormer λ ---- */
    if (s->has_lambda) {
        if (an_open(&o, out_dir, "lambda.tsv", "step\tlayer\tlambda1\tlambda2", s, err, errlen)) goto cleanup;
        for (int k = 0; k < S; k++) {
            long step = td->step[k];
            for (int n = 0; n < L; n++) {
                double l1 = td->gate[GATE_LAMBDA][((size_t)k * L + n) * 2], l2 = td->gate[GATE_LAMBDA][((size_t)k * L + n) * 2 + 1];
                fprintf(o.f, "%ld\t%d\t%s\t%s\n", step, n, num(b1, l1), num(b2, l2));
                METRIC(l1, "lambda1", n, METRIC_NONE, METRIC_NONE);
                METRIC(l2, "lambda2", n, METRIC_NONE, METRIC_NONE);
                if (k == S - 1) {
                    s->lambda1[n] = l1;
                    s->lambda2[n] = l2;
                }
            }
        }
        if (an_close(&o, err, errlen)) goto cleanup;
    }

    /* ---- TSA p ---- */
    if (s->has_p) {
        double mp[GL_MAX_LAYERS], act[GL_MAX_LAYERS];
        if (an_open(&o, out_dir, "p_evolution.tsv", "step\trouter\tlayer\tmean_p\tactive_frac", s, err, errlen) ||
            an_open(&dv, out_dir, "depth_evolution.tsv", "step\texpected_depth_soft\texpected_depth_hard\tactive_frac", s,
                    err, errlen))
            goto cleanup;
        for (int k = 0; k < S; k++) {
            long step = td->step[k];
            const float *p = td->gate[GATE_P] + (size_t)k * R * P;
            depth_router_profile(p, R, P, mp, act);
            double ds, dh;
            depth_expected(p, R, P, &ds, &dh);
            double af = depth_active_frac(p, R, P);
            for (int l = 0; l < R; l++) {
                fprintf(o.f, "%ld\t%d\t%d\t%s\t%s\n", step, l, l + 1, num(b1, mp[l]), num(b2, act[l]));
                METRIC(mp[l], "p_mean", l + 1, METRIC_NONE, METRIC_NONE);
                METRIC(act[l], "active_frac", l + 1, METRIC_NONE, METRIC_NONE);
                double cm[CAT_COUNT];
                long cc[CAT_COUNT];
                catsens_means(p + (size_t)l * P, P, 1, cat, cm, cc);
                for (int c = 0; c < CAT_COUNT; c++) METRIC(cm[c], "p_mean", l + 1, METRIC_NONE, c);
                if (k == S - 1) {
                    s->p_mean[l + 1] = mp[l];
                    s->p_active[l + 1] = act[l];
                    for (int c = 0; c < CAT_COUNT; c++) s->p_cat[l + 1][c] = cm[c];
                }
            }
            METRIC(ds, "expected_depth", METRIC_NONE, METRIC_NONE, METRIC_NONE);
            METRIC(dh, "expected_depth_hard", METRIC_NONE, METRIC_NONE, METRIC_NONE);
            METRIC(af, "active_frac", METRIC_NONE, METRIC_NONE, METRIC_NONE);
            fprintf(dv.f, "%ld\t%s\t%s\t%s\n", step, num(b1, ds), num(b2, dh), num(b3, af));
            if (k == S - 1) {
                s->depth_soft = ds;
                s->depth_hard = dh;
                s->active_frac = af;
            }
        }
        if (an_close(&o, err, errlen) || an_close(&dv, err, errlen)) goto cleanup;

        /* last step: per-router table, per-token depths, histograms */
        const float *p = td->gate[GATE_P] + (size_t)(S - 1) * R * P;
        if (an_open(&o, out_dir, "p_routers.tsv",
                    "router\tlayer\tmean_p\tactive_frac\tmean_p_structural\tmean_p_functional\tmean_p_semantic", s, err,
                    errlen))
            goto cleanup;
        for (int l = 0; l < R; l++)
            fprintf(o.f, "%d\t%d\t%s\t%s\t%s\t%s\t%s\n", l, l + 1, num(b1, s->p_mean[l + 1]), num(b2, s->p_active[l + 1]),
                    num(b3, s->p_cat[l + 1][0]), num(b4, s->p_cat[l + 1][1]), num(b5, s->p_cat[l + 1][2]));
        if (an_close(&o, err, errlen)) goto cleanup;

        depth_tokens(p, R, P, soft, hard);
        long hist[GL_MAX_LAYERS + 1];
        depth_hist_hard(p, R, P, hist);
        if (an_open(&o, out_dir, "depth_hist.tsv", "depth\tn_tokens\tfrac", s, err, errlen)) goto cleanup;
        for (int d = 1; d <= R + 1; d++)
            fprintf(o.f, "%d\t%ld\t%s\n", d, hist[d - 1], num(b1, P ? (double)hist[d - 1] / P : NAN));
        if (an_close(&o, err, errlen)) goto cleanup;
        /* soft depths in bins of a quarter block over [1, L] */
        const int nb = 4 * R > 0 ? 4 * R : 1;
        long *sh = calloc((size_t)nb, sizeof(long));
        if (!sh) {
            snprintf(err, errlen, "out of memory for a histogram");
            goto cleanup;
        }
        gates_histogram(soft, P, 1, 1.0, (double)(R + 1), nb, sh);
        if (an_open(&o, out_dir, "depth_hist_soft.tsv", "bin_lo\tbin_hi\tn_tokens\tfrac", s, err, errlen)) {
            free(sh);
            goto cleanup;
        }
        for (int i = 0; i < nb; i++)
            fprintf(o.f, "%s\t%s\t%ld\t%s\n", num(b1, 1.0 + i * 0.25), num(b2, 1.0 + (i + 1) * 0.25), sh[i],
                    num(b3, P ? (double)sh[i] / P : NAN));
        free(sh);
        if (an_close(&o, err, errlen)) goto cleanup;

        char header[4096];
        int hl = snprintf(header, sizeof header, "index\twindow\tpos\ttoken\tchar\tcategory\tdepth_soft\tdepth_hard");
        for (int l = 0; l < R && hl < (int)sizeof header - 16; l++) hl += snprintf(header + hl, sizeof header - hl, "\tp_L%d", l + 1);
        if (an_open(&o, out_dir, "depth_tokens.tsv", header, s, err, errlen)) goto cleanup;
        /* windows are the trace's probe windows; T from the config is not needed:
           a window boundary is where the stored position would restart, which the
           probe layout (windows × T, consecutive) gives as P / windows */
        gl_manifest mf;
        char e2[256];
        long T = (td->config_ini && manifest_load_text(&mf, td->config_ini, "trace", e2, sizeof e2) == 0 &&
                  mf.model.seq_len > 0 && P % mf.model.seq_len == 0)
                     ? mf.model.seq_len
                     : P;
        for (long t = 0; t < P; t++) {
            char cl[8];
            int id = td->probe_tokens[t];
            if (vocab && id >= 0 && id < vocab_size) analyze_char_label(vocab[id], cl);
            else snprintf(cl, sizeof cl, "%d", id);
            fprintf(o.f, "%ld\t%ld\t%ld\t%d\t%s\t%s\t%s\t%d", t, t / T, t % T, id, cl, cat_name(cat[t]), num(b1, soft[t]),
                    hard[t]);
            for (int l = 0; l < R; l++) fprintf(o.f, "\t%s", num(b1, p[(size_t)l * P + t]));
            fputc('\n', o.f);
        }
        if (an_close(&o, err, errlen)) goto cleanup;
    }

    /* ---- early-exit confidence ---- */
    if (s->has_exit) {
        if (an_open(&o, out_dir, "exit_conf.tsv",
                    "step\tlayer\tmean_conf\tmean_structural\tmean_functional\tmean_semantic", s, err, errlen))
            goto cleanup;
        for (int k = 0; k < S; k++) {
            long step = td->step[k];
            for (int n = 0; n < L; n++) {
                const float *cf = td->gate[GATE_CONF] + ((size_t)k * L + n) * P;
                double mc = gates_mean(cf, P, 1), cm[CAT_COUNT];
                long cc[CAT_COUNT];
                catsens_means(cf, P, 1, cat, cm, cc);
                METRIC(mc, "exit_conf", n, METRIC_NONE, METRIC_NONE);
                for (int c = 0; c < CAT_COUNT; c++) METRIC(cm[c], "exit_conf", n, METRIC_NONE, c);
                fprintf(o.f, "%ld\t%d\t%s\t%s\t%s\t%s\n", step, n, num(b1, mc), num(b2, cm[0]), num(b3, cm[1]),
                        num(b4, cm[2]));
                if (k == S - 1) s->conf_mean[n] = mc;
            }
        }
        if (an_close(&o, err, errlen)) goto cleanup;
    }
    rc = 0;

cleanup:
    if (o.f) fclose(o.f);
    if (ev.f) fclose(ev.f);
    if (cs.f) fclose(cs.f);
    if (dv.f) fclose(dv.f);
    free(scratch);
    free(soft);
    free(hard);
    return rc;
}
