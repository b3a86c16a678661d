/*
 * ablate.c — gate interventions on a loaded model (ablate.h): evaluation
 * with per-token losses split by category, the reference means of α, and
 * the zero / mean / resample / full-depth / random modes, the early-exit
 * and post-hoc early-exit threshold sweeps, through the
 * model's overrides (model_set_gate_override, model_set_gate_token_table,
 * model_set_lambda1_override, model_set_route_override).  Which override a model's gates take is their
 * row of the gate table (model/gatekind.h, "ablate"): this file names no
 * variant.
 *
 * What it does not do: load runs, write files or print (the cmd_* functions
 * do), or change weights — every intervention is an override cleared before
 * returning.  Losses are summed in double precision in token order from
 * m->tok_loss, so the same model and windows give the same numbers.
 * The window / batch / forward loop is evaluate.c's eval_each_batch (resample
 * fills its gate table before each forward; the sums are taken after), and
 * the standard errors its cluster kernel (eval_cluster_add, eval_cluster_se:
 * batch b into cluster b mod ABLATE_CLUSTERS, so that two evaluations of the
 * same windows pair cluster by cluster).
 * The interventions follow the SATFormer paper's analysis (zero and mean
 * ablation of the gates), TransformerLens's resample ablation (a token's
 * gates taken from another token of other windows of the same split, as
 * `resample_ablation` patches in activations from other inputs) and the TSA
 * paper's controls (full depth, random routing at a matched active
 * fraction).
 */
#include "analysis/measure/ablate.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/gatekind.h"
#include "model/rng.h"
#include "store/metric.h"
#include "store/rundir.h"
#include "analysis/core/catsens.h"
#include "run/evaluate.h" /* eval_each_batch, eval_cluster_*: the window / batch / forward loop and its SEs */

static const char *const ablate_names[] = {"zero", "mean", "full-depth", "random", "file", "resample"};

const char *ablate_mode_name(ablate_mode mode) {
    return mode >= ABLATE_ZERO && mode <= ABLATE_RESAMPLE ? ablate_names[mode] : "unknown";
}

int ablate_mode_uses_reference(ablate_mode mode) { return mode == ABLATE_MEAN || mode == ABLATE_RESAMPLE; }

int ablate_mode_selects_gates(ablate_mode mode) {
    return mode == ABLATE_ZERO || mode == ABLATE_MEAN || mode == ABLATE_RESAMPLE;
}

long ablate_resample_source(uint64_t seed, long pos, long n_ref) {
    /* splitmix64 of (seed, pos): a counter-based draw, the same whatever order the positions come in */
    uint64_t z = rng_splitmix_at(seed, (uint64_t)pos + 1);
    return (long)(z % (uint64_t)n_ref);
}

int ablate_parse_mode(const char *s, ablate_mode *mode) {
    for (int i = 0; i <= ABLATE_RESAMPLE; i++)
        if (!strcmp(s, ablate_names[i])) {
            *mode = (ablate_mode)i;
            return 0;
        }
    return -1;
}

/* The value-residual gate of m that zero / mean / file override (gatekind.h):
 * per (block, KV head) or per block; -1 when m has none. */
static int ablate_value_gate(const gl_model *m) {
    int g = gatekind_find(&m->cfg, GABL_HEAD);
    return g >= 0 ? g : gatekind_find(&m->cfg, GABL_BLOCK);
}

int ablate_block_gated(const gl_model *m, int n) {
    return ablate_value_gate(m) >= 0 && config_layer_mixes_v1(&m->cfg, n);
}

/* Gate value of (block l, token t, KV head j) from the last forward; a gate
 * without a token axis is the same for every token. */
static float ablate_gate_at(const float *src, int per_token, int t, int j, int Hkv) {
    return src[(per_token ? (size_t)t * Hkv : 0) + j];
}

void ablate_free(ablate_ctx *c) {
    if (c) free(c->values);
    if (!c) return;
    cat_words_free(&c->fw);
    free(c->tok);
    free(c->tg);
    free(c->mask);
    free(c->bytes);
    free(c->cat);
    c->tok = c->tg = NULL;
    c->mask = NULL;
    c->bytes = c->cat = NULL;
}

int ablate_init(ablate_ctx *c, gl_model *m, const gl_dataset *ds, long windows, uint64_t seed, const char *fw_path,
                char *warning, size_t warnlen, char *err, size_t errlen) {
    memset(c, 0, sizeof *c);
    if (warning && warnlen) warning[0] = 0;
    c->m = m;
    c->ds = ds;
    c->seed = seed;
    const size_t cap = (size_t)m->max_B * m->T;
    c->tok = malloc(cap * sizeof(int));
    c->tg = malloc(cap * sizeof(int));
    c->mask = malloc(cap * sizeof(float));
    c->bytes = malloc(cap);
    c->cat = malloc(cap);
    if (!c->tok || !c->tg || !c->mask || !c->bytes || !c->cat) {
        snprintf(err, errlen, "out of memory for evaluation batches of %d x %d tokens", m->max_B, m->T);
        ablate_free(c);
        return -1;
    }
    long avail = data_eval_windows(ds, SPLIT_VAL);
    if (avail < 1) {
        snprintf(err, errlen, "the validation split has no window of %d tokens to evaluate on", m->T);
        ablate_free(c);
        return -1;
    }
    long N = windows > 0 ? windows : 64;
    if (N > avail) N = avail;
    if (windows <= 0 && avail >= 2 && N > avail / 2) N = avail / 2;
    c->eval_split = SPLIT_VAL;
    c->eval_first = 0;
    c->eval_windows = N;
    if (avail - N >= 1) {
        c->ref_split = SPLIT_VAL;
        c->ref_first = N;
        c->ref_windows = avail - N < N ? avail - N : N;
    } else {
        gl_split alt = ds->task == TASK_TEXT ? SPLIT_TRAIN : SPLIT_TEST;
        long a2 = data_eval_windows(ds, alt);
        c->ref_split = alt;
        c->ref_first = 0;
        c->ref_windows = a2 < N ? a2 : N;
    }
    snprintf(c->eval_desc, sizeof c->eval_desc, "%s[%ld,%ld)", data_split_name(c->eval_split), c->eval_first,
             c->eval_first + c->eval_windows);
    if (c->ref_windows > 0)
        snprintf(c->ref_desc, sizeof c->ref_desc, "%s[%ld,%ld)", data_split_name(c->ref_split), c->ref_first,
                 c->ref_first + c->ref_windows);
    else
        snprintf(c->ref_desc, sizeof c->ref_desc, "none");
    c->have_cats = ds->task == TASK_TEXT;
    if (c->have_cats) {
        char path[4096], e2[512];
        if (fw_path) snprintf(path, sizeof path, "%s", fw_path);
        else run_repo_path(path, sizeof path, "experiments/function_words.txt");
        if (cat_load_function_words(path, &c->fw, e2, sizeof e2) && warning)
            snprintf(warning, warnlen, "%s (every word counts as semantic)", e2);
    }
    return 0;
}

/* One ablate_evaluate pass: its context, the window range and the running
 * sums eval_each_batch's callbacks add to. */
typedef struct {
    ablate_ctx *c;
    long n;                       /* windows in the pass */
    int hg;                       /* the per-head gate α_sum / α_all read, or -1 */
    ablate_eval *r;               /* clu_loss, clu_w filled per batch */
    double *alpha_sum;
    float *alpha_all;
    double loss, scored, cl[CAT_COUNT], cw[CAT_COUNT], act, right;
    long done;
} ablate_pass;

/* Resample (before the forward): the values of this batch (got windows from
 * evaluation window win0) into c->rs_tab, for the selected pairs: each
 * position's gates are those of one reference position drawn for it. */
static int ablate_resample_fill(void *ctx, long win0, int got, char *err, size_t errlen) {
    const ablate_ctx *c = ((ablate_pass *)ctx)->c;
    if (!c->rs_tab) return 0;
    const gl_model *m = c->m;
    const int T = m->T, L = m->cfg.n_layer, Hkv = m->cfg.n_kv_head;
    const size_t BT = (size_t)m->max_B * T;
    for (int b = 0; b < got; b++)
        for (int t = 0; t < T; t++) {
            const long src = ablate_resample_source(c->seed, (win0 + b) * (long)T + t, c->rs_pos);
            const size_t row = (size_t)b * T + t;
            for (int l = 0; l < L; l++)
                for (int j = 0; j < Hkv; j++)
                    if (c->rs_sel[l * Hkv + j])
                        c->rs_tab[((size_t)l * BT + row) * Hkv + j] = c->rs_ref[((size_t)l * c->rs_pos + src) * Hkv + j];
        }
    return 0;
}

/* After the forward: the batch's losses (one cluster of the standard error,
 * folded into ABLATE_CLUSTERS), accuracy, categories, active fraction and gates. */
static int ablate_pass_sums(void *ctx, long off, int got, char *err, size_t errlen) {
    ablate_pass *p = ctx;
    ablate_ctx *c = p->c;
    gl_model *m = c->m;
    const gl_model_config *mc = &m->cfg;
    const int T = m->T, L = mc->n_layer, Hkv = mc->n_kv_head, N = got * T;
    double bl = 0.0, bw = 0.0;
    for (int t = 0; t < N; t++) {
        if (c->mask[t] == 0.0f || c->tg[t] < 0) continue;
        bl += (double)c->mask[t] * m->tok_loss[t];
        bw += c->mask[t];
    }
    p->loss += bl;
    p->scored += bw;
    if (c->ds->task != TASK_TEXT) {
        double tacc = 0, sacc = 0;
        data_accuracy(m->logits, c->tg, c->mask, got, T, mc->vocab_size, &tacc, &sacc);
        p->right += tacc * m->mask_sum;
    }
    eval_cluster_add(p->r->clu_loss, p->r->clu_w, ABLATE_CLUSTERS, off / m->max_B, bl, bw);
    if (c->have_cats) {
        for (int b = 0; b < got; b++) /* each window on its own, as the trace's probe batch */
            if (data_categories(c->ds, c->tok + (size_t)b * T, T, &c->fw, c->cat + (size_t)b * T)) {
                snprintf(err, errlen, "out of memory classifying tokens");
                return -1;
            }
        for (int t = 0; t < N; t++) {
            if (c->mask[t] == 0.0f || c->tg[t] < 0 || c->cat[t] >= CAT_COUNT) continue;
            p->cl[c->cat[t]] += (double)c->mask[t] * m->tok_loss[t];
            p->cw[c->cat[t]] += c->mask[t];
        }
    }
    p->act += (double)m->active_frac * got;
    if (p->hg >= 0)
        for (int l = 0; l < L; l++) {
            const float *g = gatekind_src(m, (gl_gate)p->hg, l); /* (N, Hkv), or (Hkv) for every token */
            if (!g) continue;
            const int pt = gatekind_per_token((gl_gate)p->hg);
            float *all = p->alpha_all ? p->alpha_all + ((size_t)l * p->n * T + (size_t)off * T) * Hkv : NULL;
            for (int t = 0; t < N; t++)
                for (int j = 0; j < Hkv; j++) {
                    float v = ablate_gate_at(g, pt, t, j, Hkv);
                    if (p->alpha_sum) p->alpha_sum[l * Hkv + j] += v;
                    if (all) all[(size_t)t * Hkv + j] = v;
                }
        }
    p->done += got;
    return 0;
}

int ablate_evaluate(ablate_ctx *c, gl_split split, long first, long n, ablate_eval *r, double *alpha_sum,
                    float *alpha_all, char *err, size_t errlen) {
    gl_model *m = c->m;
    const int L = m->cfg.n_layer, Hkv = m->cfg.n_kv_head;
    memset(r, 0, sizeof *r);
    if (n < 1) {
        snprintf(err, errlen, "nothing to evaluate: 0 windows of the %s split", data_split_name(split));
        return -1;
    }
    if (alpha_sum) memset(alpha_sum, 0, (size_t)L * Hkv * sizeof(double));
    ablate_pass p = {.c = c, .n = n, .hg = gatekind_find(&m->cfg, GABL_HEAD), .r = r, .alpha_sum = alpha_sum,
                     .alpha_all = alpha_all};
    const eval_buffers buf = {c->tok, c->tg, c->mask};
    if (eval_each_batch(m, c->ds, split, first, n, 1, &buf, ablate_resample_fill, ablate_pass_sums, &p, err, errlen))
        return -1;
    r->loss = p.scored > 0 ? p.loss / p.scored : NAN;
    r->acc = c->ds->task != TASK_TEXT && p.scored > 0 ? p.right / p.scored : NAN;
    r->tokens = p.scored;
    for (int k = 0; k < ABLATE_CLUSTERS; k++) r->n_clu += r->clu_w[k] > 0;
    r->loss_se = ablate_paired_se(r, NULL);
    for (int k = 0; k < CAT_COUNT; k++) {
        r->cat_tokens[k] = p.cw[k];
        r->cat_loss[k] = p.cw[k] > 0 ? p.cl[k] / p.cw[k] : NAN;
    }
    r->active_frac = p.done ? p.act / (double)p.done : 1.0;
    return 0;
}

int ablate_baseline(ablate_ctx *c, ablate_eval *r, float *alpha_all, char *err, size_t errlen) {
    model_clear_overrides(c->m);
    return ablate_evaluate(c, c->eval_split, c->eval_first, c->eval_windows, r, NULL, alpha_all, err, errlen);
}

int ablate_reference_alpha(ablate_ctx *c, float *mean, char *err, size_t errlen) {
    gl_model *m = c->m;
    const int L = m->cfg.n_layer, Hkv = m->cfg.n_kv_head;
    if (c->ref_windows < 1) {
        snprintf(err, errlen, "no reference windows disjoint from the %ld evaluation windows: evaluate on fewer (--windows)",
                 c->eval_windows);
        return -1;
    }
    double *sum = malloc((size_t)L * Hkv * sizeof(double));
    if (!sum) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    ablate_eval r;
    model_clear_overrides(m);
    int rc = ablate_evaluate(c, c->ref_split, c->ref_first, c->ref_windows, &r, sum, NULL, err, errlen);
    if (rc == 0) {
        const double positions = (double)c->ref_windows * m->T;
        for (int i = 0; i < L * Hkv; i++) mean[i] = (float)(sum[i] / positions);
    }
    free(sum);
    return rc;
}

double ablate_paired_se(const ablate_eval *a, const ablate_eval *b) {
    return eval_cluster_se(a->clu_loss, b ? b->clu_loss : NULL, a->clu_w, ABLATE_CLUSTERS);
}

static void ablate_finish(ablate_result *res) {
    res->delta = res->ablated.loss - res->base.loss;
    res->delta_se = ablate_paired_se(&res->ablated, &res->base);
    res->ppl_ratio = exp(res->delta);
    for (int k = 0; k < CAT_COUNT; k++) res->delta_cat[k] = res->ablated.cat_loss[k] - res->base.cat_loss[k];
}

/* Resample: every reference position's gate (L, rs_pos, Hkv) into *ref and
 * a batch table into *tab (both malloc'd: the caller frees them after the
 * evaluation); points c->rs_* at them.  Returns 0, or -1 with a message. */
static int ablate_resample_prepare(ablate_ctx *c, const unsigned char *sel, float **ref, float **tab, char *err,
                                   size_t errlen) {
    gl_model *m = c->m;
    const int L = m->cfg.n_layer, Hkv = m->cfg.n_kv_head;
    if (c->ref_windows < 1) {
        snprintf(err, errlen, "no reference windows disjoint from the %ld evaluation windows to resample from: "
                              "evaluate on fewer (--windows)", c->eval_windows);
        return -1;
    }
    const long pos = c->ref_windows * (long)m->T;
    *ref = calloc((size_t)L * pos * Hkv, sizeof(float));
    *tab = calloc((size_t)L * m->max_B * m->T * Hkv, sizeof(float));
    if (!*ref || !*tab) {
        snprintf(err, errlen, "out of memory for the resample table (%d blocks x %ld positions x %d KV heads)", L, pos, Hkv);
        return -1;
    }
    ablate_eval r;
    model_clear_overrides(m);
    if (ablate_evaluate(c, c->ref_split, c->ref_first, c->ref_windows, &r, NULL, *ref, err, errlen)) return -1;
    c->rs_ref = *ref;
    c->rs_pos = pos;
    c->rs_sel = sel;
    c->rs_tab = *tab;
    model_set_gate_token_table(m, *tab);
    return 0;
}

/* The gate overrides of zero / mean / file / resample on the selected pairs
 * of m's value gate vg.  mean and resample read the reference windows first;
 * their buffers go to own[0..1] (the caller frees them after evaluating).
 * Returns 0, or -1 with a message. */
static int ablate_set_gates(ablate_ctx *c, ablate_mode mode, const unsigned char *sel, int vg, float **own, char *err,
                            size_t errlen) {
    gl_model *m = c->m;
    const int L = m->cfg.n_layer, Hkv = m->cfg.n_kv_head;
    if (mode == ABLATE_MEAN) {
        own[0] = malloc((size_t)L * Hkv * sizeof(float));
        if (!own[0]) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        if (ablate_reference_alpha(c, own[0], err, errlen)) return -1;
    } else if (mode == ABLATE_RESAMPLE && ablate_resample_prepare(c, sel, &own[0], &own[1], err, errlen)) {
        return -1;
    }
    for (int n = 0; n < L; n++) {
        if (!ablate_block_gated(m, n)) continue;
        if (gatekind_info[vg].ablate == GABL_BLOCK) {
            int any = 0;
            for (int j = 0; j < Hkv; j++) any |= sel[n * Hkv + j];
            float v = 0.0f;
            for (int j = 0; j < Hkv && mode == ABLATE_FILE; j++)
                if (sel[n * Hkv + j]) v = c->values[n * Hkv + j];
            if (any) model_set_lambda1_override(m, n, GATE_CONST, v);
            continue;
        }
        for (int j = 0; j < Hkv; j++) {
            if (!sel[n * Hkv + j]) continue;
            if (mode == ABLATE_RESAMPLE) model_set_gate_override(m, n, j, GATE_TOKEN, 0.0f);
            else
                model_set_gate_override(m, n, j, GATE_CONST,
                                        mode == ABLATE_MEAN   ? own[0][n * Hkv + j]
                                        : mode == ABLATE_FILE ? c->values[n * Hkv + j]
                                                              : 0.0f);
        }
    }
    return 0;
}

/* Whether mode applies to m (its value gate vg, -1 when none): 0, or -1 with
 * a message saying why not. */
static int ablate_check_mode(const gl_model *m, ablate_mode mode, const unsigned char *sel, int vg, char *err,
                             size_t errlen) {
    const gl_model_config *mc = &m->cfg;
    const int L = mc->n_layer, Hkv = mc->n_kv_head;
    if (mode == ABLATE_FULL_DEPTH || mode == ABLATE_RANDOM) {
        if (gatekind_find(mc, GABL_ROUTE) >= 0) return 0;
        snprintf(err, errlen, "--mode %s needs a learned router (a TSA or mod model); this one has depth_routing = %s",
                 ablate_mode_name(mode), config_depth_routing_name(mc->depth_routing));
        return -1;
    }
    if (vg < 0) {
        snprintf(err, errlen, "--mode %s needs a gate to remove: this model has value_residual = %s, which "
                              "records none", ablate_mode_name(mode), config_value_residual_name(mc->value_residual));
        return -1;
    }
    if (mode == ABLATE_MEAN && !gatekind_per_token((gl_gate)vg)) {
        snprintf(err, errlen, "%s is one constant per %s, so its mean ablation changes nothing; use --mode zero",
                 gatekind_info[vg].title, gatekind_info[vg].ablate == GABL_BLOCK ? "block" : "(block, KV head)");
        return -1;
    }
    if (mode == ABLATE_RESAMPLE && gatekind_info[vg].ablate == GABL_BLOCK) {
        snprintf(err, errlen, "%s are one constant per block, the same for every token, so resampling them from other "
                              "tokens changes nothing; use --mode zero", gatekind_info[vg].title);
        return -1;
    }
    int any = 0;
    for (int i = 0; i < L * Hkv; i++) any |= sel[i];
    if (!any) {
        snprintf(err, errlen, "the selection holds no gated block");
        return -1;
    }
    return 0;
}

int ablate_run(ablate_ctx *c, ablate_mode mode, const unsigned char *sel, const ablate_eval *base, ablate_result *res,
               char *err, size_t errlen) {
    gl_model *m = c->m;
    memset(res, 0, sizeof *res);
    res->mode = mode;
    res->route_skip = NAN;
    int rc = -1;
    float *own[2] = {NULL, NULL};
    const int sparse0 = m->sparse;

    const int gate_mode = mode == ABLATE_ZERO || mode == ABLATE_MEAN || mode == ABLATE_FILE || mode == ABLATE_RESAMPLE;
    if (mode == ABLATE_FILE && !c->values) {
        snprintf(err, errlen, "--mode file needs --values FILE");
        return -1;
    }
    const int vg = ablate_value_gate(m);
    if (ablate_check_mode(m, mode, sel, vg, err, errlen)) return -1;

    if (mode == ABLATE_RANDOM) {
        /* the learned routers run hard give α; random routing at that α is the control */
        model_clear_overrides(m);
        m->sparse = 1;
        if (ablate_evaluate(c, c->eval_split, c->eval_first, c->eval_windows, &res->base, NULL, NULL, err, errlen))
            goto cleanup;
    } else if (base) {
        res->base = *base;
    } else if (ablate_baseline(c, &res->base, NULL, err, errlen)) {
        goto cleanup;
    }

    if (gate_mode) {
        if (ablate_set_gates(c, mode, sel, vg, own, err, errlen)) goto cleanup;
    } else if (mode == ABLATE_FULL_DEPTH) {
        model_set_route_override(m, ROUTE_CONST, 0.0f, 0);
    } else {
        res->route_skip = 1.0 - res->base.active_frac;
        model_set_route_override(m, ROUTE_RANDOM, (float)res->route_skip, c->seed);
    }
    if (ablate_evaluate(c, c->eval_split, c->eval_first, c->eval_windows, &res->ablated, NULL, NULL, err, errlen))
        goto cleanup;
    ablate_finish(res);
    rc = 0;
cleanup:
    model_clear_overrides(m);
    m->sparse = sparse0;
    c->rs_ref = NULL;
    c->rs_sel = NULL;
    c->rs_tab = NULL;
    c->rs_pos = 0;
    free(own[0]);
    free(own[1]);
    return rc;
}

/* The sweep of both threshold modes: posthoc 0 is the early-exit model's own
 * exit (m->exit_tau, τ in (0, 1]), 1 the dense model's post-hoc exit
 * (m->posthoc_exit, any τ >= 0; τ > 1 never exits). */
static int ablate_tau_sweep(ablate_ctx *c, int posthoc, const double *taus, int n, ablate_eval *full,
                            ablate_exit_point *pts, char *err, size_t errlen) {
    gl_model *m = c->m;
    const gl_depth_routing want = posthoc ? DR_NONE : DR_EARLY_EXIT;
    if (m->cfg.depth_routing != want) {
        snprintf(err, errlen, "--mode %s needs %s model; this one has depth_routing = %s",
                 posthoc ? "posthoc-exit" : "exit", posthoc ? "a dense (depth_routing none)" : "an early-exit",
                 config_depth_routing_name(m->cfg.depth_routing));
        return -1;
    }
    for (int i = 0; i < n; i++)
        if (posthoc ? !(taus[i] >= 0.0 && isfinite(taus[i])) : !(taus[i] > 0.0 && taus[i] <= 1.0)) {
            snprintf(err, errlen, "--taus: %g is not a confidence threshold in %s", taus[i],
                     posthoc ? "[0, ∞)" : "(0, 1]");
            return -1;
        }
    if (posthoc && model_posthoc_init(m, err, errlen)) return -1;
    const float tau0 = m->exit_tau;
    const int ph0 = m->posthoc_exit;
    int rc = -1;
    m->exit_tau = 0.0f;
    m->posthoc_exit = 0;
    if (ablate_baseline(c, full, NULL, err, errlen)) goto cleanup;
    for (int i = 0; i < n; i++) {
        m->exit_tau = (float)taus[i];
        m->posthoc_exit = posthoc;
        pts[i].tau = taus[i];
        if (ablate_evaluate(c, c->eval_split, c->eval_first, c->eval_windows, &pts[i].r, NULL, NULL, err, errlen))
            goto cleanup;
        pts[i].tlops_saved = eval_tlops_saved(pts[i].r.active_frac, m->cfg.n_layer);
    }
    rc = 0;
cleanup:
    m->exit_tau = tau0;
    m->posthoc_exit = ph0;
    return rc;
}

int ablate_exit_sweep(ablate_ctx *c, const double *taus, int n, ablate_eval *full, ablate_exit_point *pts, char *err,
                      size_t errlen) {
    return ablate_tau_sweep(c, 0, taus, n, full, pts, err, errlen);
}

int ablate_posthoc_sweep(ablate_ctx *c, const double *taus, int n, ablate_eval *full, ablate_exit_point *pts,
                         char *err, size_t errlen) {
    return ablate_tau_sweep(c, 1, taus, n, full, pts, err, errlen);
}

int ablate_exit_metrics(const char *mode, const ablate_eval *full, const ablate_exit_point *pts, int n, long step,
                        report_metrics *rm, char *err, size_t errlen) {
    metric_key name;
#define ROW(val, tau, quantity, cat)                                                                          \
    do {                                                                                                      \
        if (metric_exit_mode(&name, mode, (tau), (quantity), (cat))) {                                        \
            snprintf(err, errlen, "cannot name the %s metric %s at tau %g", mode, (quantity), (double)(tau)); \
            return -1;                                                                                        \
        }                                                                                                     \
        if (report_metric_add_se(rm, step, ABLATE_SPLIT, &name, (val), se, err, errlen)) return -1;           \
        se = NAN;                                                                                             \
    } while (0)
    double se = full->loss_se;
    ROW(full->loss, NAN, "loss", METRIC_NONE);
    for (int i = 0; i < n; i++) {
        const ablate_exit_point *p = &pts[i];
        double d = p->r.loss - full->loss;
        se = p->r.loss_se;
        ROW(p->r.loss, p->tau, "loss", METRIC_NONE);
        se = ablate_paired_se(&p->r, full);
        ROW(d, p->tau, "delta_loss", METRIC_NONE);
        ROW(exp(d), p->tau, "ppl_ratio", METRIC_NONE);
        ROW(p->r.active_frac, p->tau, "active_frac", METRIC_NONE);
        ROW(p->tlops_saved, p->tau, "tlops_saved", METRIC_NONE);
        if (!isnan(p->r.acc)) ROW(p->r.acc, p->tau, "acc", METRIC_NONE);
        for (int k = 0; k < CAT_COUNT; k++)
            if (!isnan(p->r.cat_loss[k])) ROW(p->r.cat_loss[k] - full->cat_loss[k], p->tau, "delta_loss", k);
    }
    if (!isnan(full->acc)) ROW(full->acc, NAN, "acc", METRIC_NONE);
#undef ROW
    return 0;
}

/* Parse a comma list of non-negative integers; returns the count or -1. */
static int ablate_parse_ints(const char *s, int *out, int max) {
    int n = 0;
    while (*s) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v < 0 || v > 1000000 || n == max) return -1;
        out[n++] = (int)v;
        s = end;
        if (*s == ',') s++;
        else if (*s) return -1;
    }
    return n;
}

int ablate_parse_selection(const gl_model *m, const char *layers, const char *heads, unsigned char *sel, char *err,
                           size_t errlen) {
    const int L = m->cfg.n_layer, Hkv = m->cfg.n_kv_head;
    memset(sel, 0, (size_t)L * Hkv);
    if (!layers && !heads) {
        for (int n = 0; n < L; n++)
            for (int j = 0; j < Hkv; j++) sel[n * Hkv + j] = (unsigned char)ablate_block_gated(m, n);
        return 0;
    }
    if (layers) {
        int v[GL_MAX_LAYERS];
        int k = ablate_parse_ints(layers, v, GL_MAX_LAYERS);
        if (k <= 0) {
            snprintf(err, errlen, "--layers '%s': expected a comma list of block numbers, e.g. 1,3", layers);
            return -1;
        }
        for (int i = 0; i < k; i++) {
            if (v[i] >= L || !ablate_block_gated(m, v[i])) {
                snprintf(err, errlen, "--layers: block %d %s", v[i],
                         v[i] >= L ? "does not exist" : "has no value-residual gate (block 0 and blocks outside last_k do not)");
                return -1;
            }
            for (int j = 0; j < Hkv; j++) sel[v[i] * Hkv + j] = 1;
        }
    }
    if (heads) {
        int vg = ablate_value_gate(m);
        if (vg >= 0 && gatekind_info[vg].ablate == GABL_BLOCK) {
            snprintf(err, errlen, "--heads: %s are one coefficient per block; select blocks with --layers",
                     gatekind_info[vg].title);
            return -1;
        }
        const char *s = heads;
        while (*s) {
            char *end;
            long n = strtol(s, &end, 10);
            long j = -1;
            if (end != s && *end == ':') {
                const char *s2 = end + 1;
                j = strtol(s2, &end, 10);
                if (end == s2) j = -1;
            }
            if (j < 0 || n < 0 || (*end && *end != ',')) {
                snprintf(err, errlen, "--heads '%s': expected BLOCK:KV_HEAD pairs, e.g. 2:0,3:1", heads);
                return -1;
            }
            if (n >= L || j >= Hkv || !ablate_block_gated(m, (int)n)) {
                snprintf(err, errlen, "--heads: %ld:%ld is not a gated (block, KV head) pair (blocks 1..%d, heads 0..%d)", n, j,
                         L - 1, Hkv - 1);
                return -1;
            }
            sel[n * Hkv + j] = 1;
            s = *end ? end + 1 : end;
        }
    }
    return 0;
}

void ablate_selection_label(const gl_model *m, const unsigned char *sel, char *out, size_t n) {
    const int L = m->cfg.n_layer, Hkv = m->cfg.n_kv_head;
    int all = 1;
    for (int l = 0; l < L; l++)
        for (int j = 0; j < Hkv; j++)
            if (!!sel[l * Hkv + j] != ablate_block_gated(m, l)) all = 0;
    if (all) {
        snprintf(out, n, "%s", METRIC_LABEL_ALL);
        return;
    }
    size_t len = 0;
    out[0] = 0;
    for (int l = 0; l < L; l++) {
        int k = 0;
        for (int j = 0; j < Hkv; j++) k += sel[l * Hkv + j] != 0;
        if (!k) continue;
        char item[256], one[32];
        int il = 0;
        for (int j = 0; j < Hkv; j++) { /* a whole block as L<l>, else each head as L<l>H<h> (store/metric.h) */
            if (k != Hkv && !sel[l * Hkv + j]) continue;
            metric_label_gate(one, sizeof one, l, k == Hkv ? METRIC_NONE : j);
            il += snprintf(item + il, sizeof item - il, "%s%s", len || il ? "+" : "", one);
            if (k == Hkv || il > (int)sizeof item - 40) break; /* longer than any label: cut below */
        }
        if (len + il + 4 >= n) {
            snprintf(out + len, n - len, "+…");
            return;
        }
        memcpy(out + len, item, (size_t)il + 1);
        len += il;
    }
}

int ablate_metrics(const ablate_result *res, const char *label, long step, report_metrics *rm, char *err,
                   size_t errlen) {
    metric_key name;
    const char *mode = ablate_mode_name(res->mode);
#define ROW(val, quantity, cat)                                                                      \
    do {                                                                                             \
        if (metric_ablation(&name, mode, label, (quantity), (cat))) {                                \
            snprintf(err, errlen, "cannot name the metric %s of intervention %s.%s", (quantity), mode, label); \
            return -1;                                                                               \
        }                                                                                            \
        if (report_metric_add_se(rm, step, ABLATE_SPLIT, &name, (val), se, err, errlen)) return -1;  \
        se = NAN;                                                                                    \
    } while (0)
    double se = res->base.loss_se;
    ROW(res->base.loss, "base_loss", METRIC_NONE);
    se = res->ablated.loss_se;
    ROW(res->ablated.loss, "loss", METRIC_NONE);
    se = res->delta_se;
    ROW(res->delta, "delta_loss", METRIC_NONE);
    ROW(res->ppl_ratio, "ppl_ratio", METRIC_NONE);
    for (int k = 0; k < CAT_COUNT; k++)
        if (!isnan(res->delta_cat[k])) ROW(res->delta_cat[k], "delta_loss", k);
    if (res->mode == ABLATE_FULL_DEPTH || res->mode == ABLATE_RANDOM) {
        ROW(res->base.active_frac, "base_active_frac", METRIC_NONE);
        ROW(res->ablated.active_frac, "active_frac", METRIC_NONE);
    }
    if (res->mode == ABLATE_RANDOM) ROW(res->route_skip, "route_skip", METRIC_NONE);
#undef ROW
    return 0;
}

int ablate_read_values(ablate_ctx *c, const char *path, unsigned char *sel, char *err, size_t errlen) {
    const gl_model_config *mc = &c->m->cfg;
    const int L = mc->n_layer, Hkv = mc->n_kv_head;
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "--values %s: cannot open it", path);
        return -1;
    }
    free(c->values);
    c->values = calloc((size_t)L * Hkv, sizeof(float));
    if (!c->values) {
        fclose(f);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    memset(sel, 0, (size_t)L * Hkv);
    char line[512];
    int lineno = 0, rows = 0, rc = -1;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        char *hash = strchr(line, '#');
        if (hash) *hash = 0;
        char *p = line;
        while (*p == ' ' || *p == '\t') p++;
        if (!*p || *p == '\n' || *p == '\r') continue;
        char *e1, *e2, *e3;
        long n = strtol(p, &e1, 10);
        if (e1 == p) {
            if (rows == 0 && lineno == 1) continue; /* a header */
            snprintf(err, errlen, "%s:%d: expected \"block kv_head value\"", path, lineno);
            goto done;
        }
        long j = strtol(e1, &e2, 10);
        double v = strtod(e2, &e3);
        if (e2 == e1 || e3 == e2 || !isfinite(v)) {
            snprintf(err, errlen, "%s:%d: expected \"block kv_head value\" with a finite value", path, lineno);
            goto done;
        }
        if (n < 1 || n >= L || j < 0 || j >= Hkv || !config_layer_mixes_v1(mc, (int)n)) {
            snprintf(err, errlen, "%s:%d: block %ld, KV head %ld is not a gated pair of this model (blocks 1..%d that "
                     "mix V1, heads 0..%d)", path, lineno, n, j, L - 1, Hkv - 1);
            goto done;
        }
        if (sel[n * Hkv + j]) {
            snprintf(err, errlen, "%s:%d: block %ld, KV head %ld is listed twice", path, lineno, n, j);
            goto done;
        }
        sel[n * Hkv + j] = 1;
        c->values[n * Hkv + j] = (float)v;
        rows++;
    }
    if (!rows) {
        snprintf(err, errlen, "%s: no \"block kv_head value\" line", path);
        goto done;
    }
    rc = 0;
done:
    fclose(f);
    return rc;
}
