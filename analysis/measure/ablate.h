/*
 * ablate.h — gate interventions: re-evaluate a trained model with its gates
 * overridden and measure what the loss does, overall and by token category.
 *
 *   zero         SATFormer α = 0 on the selected (block, KV head) pairs, or
 *                ResFormer λ1 = 0 on the selected blocks
 *   mean         SATFormer α = its mean over the reference tokens, per
 *                (block, KV head)
 *   resample     every evaluation token's gates on the selected (block, KV
 *                head) pairs replaced by those of one other token drawn at
 *                random from the reference windows (TransformerLens's
 *                resample ablation): the draw depends only on the seed and
 *                the token's position, so a rerun gives the same numbers
 *   full-depth   TSA: p = 0 for every router (every token runs every block)
 *   random       TSA: each (token, router) skips at random with probability
 *                1 − α, α the active fraction the learned routers reach on
 *                the evaluation tokens; compared with the learned routing run
 *                hard (sparse inference) at that same α
 *
 * Evaluation tokens are validation windows [0, N).  Reference tokens, from
 * which mean mode takes α's mean, are disjoint from them: validation windows
 * [N, 2N) when the split has them, else as many as there are after N, else
 * the first N windows of the training split (text) or test split (synthetic
 * tasks).  Categories are those of each *input* token (the token whose gate
 * or halting probability acts at that position), for text tasks only.
 */
#ifndef GATELAB_ANALYSIS_MEASURE_ABLATE_H
#define GATELAB_ANALYSIS_MEASURE_ABLATE_H

#include <stddef.h>
#include <stdint.h>

#include "store/categories.h"
#include "store/data.h"
#include "model/model.h"
#include "analysis/core/report.h"

#define ABLATE_SPLIT "ablation"

/* zero: gate := 0; mean: := its per-(block, KV head) mean on reference tokens;
 * resample: := the gate of a random reference token, drawn per evaluation token;
 * file: := a per-(block, KV head) value read from a file (ablate_read_values);
 * full-depth / random: TSA routing forced to p = 0 / random at the learned α. */
typedef enum { ABLATE_ZERO = 0, ABLATE_MEAN, ABLATE_FULL_DEPTH, ABLATE_RANDOM, ABLATE_FILE, ABLATE_RESAMPLE } ablate_mode;

#define ABLATE_CLUSTERS 64 /* batches of windows folded into this many clusters for standard errors */

typedef struct {
    double loss;                  /* mean cross-entropy over scored tokens (nats/token) */
    double loss_se;               /* its cluster-robust standard error (batches of windows as clusters; NaN: one) */
    double clu_loss[ABLATE_CLUSTERS], clu_w[ABLATE_CLUSTERS]; /* loss sum and scored tokens per cluster */
    int n_clu;                    /* clusters holding tokens */
    double tokens;                /* scored tokens */
    double cat_loss[CAT_COUNT];   /* the same by category of the input token (NaN: none, or no categories) */
    double cat_tokens[CAT_COUNT];
    double active_frac;           /* TSA / early exit: share of (token, block >= 1) pairs that ran */
    double acc;                   /* synthetic tasks: token accuracy on scored tokens (NaN for text) */
} ablate_eval;

typedef struct {
    ablate_mode mode;
    ablate_eval base;             /* the unmodified model (random: learned routing run hard) */
    ablate_eval ablated;
    double delta;                 /* ablated.loss − base.loss (nats/token) */
    double delta_se;              /* its paired standard error (the same windows, cluster by cluster; NaN: one) */
    double ppl_ratio;             /* exp(delta) */
    double delta_cat[CAT_COUNT];  /* per category (NaN where none) */
    double route_skip;            /* random: the skip probability used (1 − α) */
} ablate_result;

typedef struct {
    gl_model *m;
    const gl_dataset *ds;
    gl_split eval_split, ref_split;
    long eval_first, eval_windows, ref_first, ref_windows;
    char eval_desc[48], ref_desc[48]; /* e.g. "val[0,64)" */
    int have_cats;                /* 1: text task with categories */
    cat_words fw;
    uint64_t seed;                /* random routing */
    int *tok, *tg;                /* (max_B, T) */
    float *mask;                  /* (max_B, T) */
    uint8_t *bytes, *cat;         /* (max_B, T) */
    float *values;                /* (L·Hkv) ABLATE_FILE: the value of each selected gate (owned) */
    /* ABLATE_RESAMPLE, set by ablate_run for its evaluation only: */
    const float *rs_ref;          /* (L, rs_pos, Hkv) the gate on every reference position */
    long rs_pos;                  /* reference positions (ref_windows·T) */
    const unsigned char *rs_sel;  /* (L·Hkv) the resampled pairs */
    float *rs_tab;                /* (L, max_B*T, Hkv) the current batch's values (model_set_gate_token_table) */
} ablate_ctx;

/* Read gate values for --mode file: lines "block kv_head value" (whitespace
 * separated; '#' starts a comment; a first line that is not numeric is a
 * header).  For ResFormer the value replaces block's λ1 and kv_head is
 * ignored (write 0).  Fills c->values and sel (L·Hkv, 1 = listed).  Returns 0,
 * or -1 with a message naming the file and line (a block or head out of
 * range, a value that is not a finite number, a pair listed twice, no line). */
int ablate_read_values(ablate_ctx *c, const char *path, unsigned char *sel, char *err, size_t errlen);

/* Set up evaluation on N = windows validation windows (windows <= 0: 64, at
 * most half the split when that leaves reference windows) and the reference
 * windows described above.  fw_path is the function-word list (NULL: the
 * repository's experiments/function_words.txt); if it cannot be read every
 * word counts as semantic and *warning (if not NULL) says so.  Returns 0, or
 * -1 with a message (no validation windows).  The caller calls ablate_free. */
int ablate_init(ablate_ctx *c, gl_model *m, const gl_dataset *ds, long windows, uint64_t seed, const char *fw_path,
                char *warning, size_t warnlen, char *err, size_t errlen);
void ablate_free(ablate_ctx *c); /* accepts a zeroed or half-built context */

/* Evaluate the model as it is now (overrides included) on n windows of split
 * starting at first.  alpha_sum (L·Hkv, may be NULL) receives the sum of the
 * SATFormer gate over every position per (block, KV head); alpha_all (L, n·T,
 * Hkv, may be NULL) every gate value.  Returns 0, or -1 with a message. */
int ablate_evaluate(ablate_ctx *c, gl_split split, long first, long n, ablate_eval *r, double *alpha_sum,
                    float *alpha_all, char *err, size_t errlen);

/* Standard error of a->loss − b->loss, two evaluations of the same windows:
 * paired cluster by cluster, SE² = G/(G−1) Σ_c (d_c − Δ·w_c)² / W², with d_c
 * the difference of the clusters' loss sums, w_c their tokens, W = Σ w_c
 * (run/evaluate.h eval_cluster_se on the clusters' sums).
 * b NULL: the SE of a->loss alone.  NaN with fewer than two clusters. */
double ablate_paired_se(const ablate_eval *a, const ablate_eval *b);

/* The unmodified model on the evaluation windows (alpha_all as above). */
int ablate_baseline(ablate_ctx *c, ablate_eval *r, float *alpha_all, char *err, size_t errlen);

/* Per-(block, KV head) mean of α over the reference windows, into mean (L·Hkv). */
int ablate_reference_alpha(ablate_ctx *c, float *mean, char *err, size_t errlen);

/* Run one intervention.  sel (L·Hkv, 1 = selected) names the (block, KV
 * head) pairs for zero, mean and resample (ResFormer: a block is selected when any of
 * its entries is); it is ignored for the TSA modes.  base is the baseline of
 * ablate_baseline (NULL: computed here; random always computes its own).
 * Overrides are cleared before returning.  Returns 0, or -1 with a message
 * that says why the mode does not apply to this model. */
int ablate_run(ablate_ctx *c, ablate_mode mode, const unsigned char *sel, const ablate_eval *base, ablate_result *res,
               char *err, size_t errlen);

/* Early exit over thresholds: for each τ in taus (n of them) evaluate the
 * model exiting at confidence ≥ τ (m->exit_tau); full receives the
 * full-depth evaluation (no exiting) every point is compared with.  pts (n)
 * are filled in order.  Returns 0, or -1 with a message (not an early-exit
 * model, τ outside (0, 1]). */
typedef struct {
    double tau;
    ablate_eval r;
    double tlops_saved;  /* (1 − α)(L − 1)/L, a fraction */
} ablate_exit_point;
int ablate_exit_sweep(ablate_ctx *c, const double *taus, int n, ablate_eval *full, ablate_exit_point *pts, char *err,
                      size_t errlen);

/* Post-hoc early exit of a dense model (depth_routing none): each block's
 * residual through the model's own final norm and head; a token exits at
 * the first block whose max softmax probability is >= τ and its later blocks
 * compute only its k and v (model.h posthoc_exit).  τ >= 0 (0: every token
 * exits after block 0; above 1: none exits).  full is the dense model.  As
 * ablate_exit_sweep otherwise. */
int ablate_posthoc_sweep(ablate_ctx *c, const double *taus, int n, ablate_eval *full, ablate_exit_point *pts,
                         char *err, size_t errlen);

/* Registry rows of a sweep under mode METRIC_EXIT_MODE or METRIC_POSTHOC_MODE
 * (measured on rm->prov; loss and delta_loss with their standard errors):
 * <mode>.{loss, delta_loss, ppl_ratio, active_frac, tlops_saved, acc
 * (tasks)} with params {"tau":<τ as %.3f>} (delta_loss also per category),
 * and <mode>.{loss, acc} with {"tau":null} (the full model), split
 * "ablation" at step (store/metric.h metric_exit_mode). */
int ablate_exit_metrics(const char *mode, const ablate_eval *full, const ablate_exit_point *pts, int n, long step,
                        report_metrics *rm, char *err, size_t errlen);

/* Parse "--layers 1,3" and "--heads 2:0,3:1" (either may be NULL) into sel
 * (L·Hkv): the union of whole blocks and single pairs; neither → every gated
 * pair.  Blocks without a gate, indices out of range and malformed lists are
 * errors naming the item.  Returns 0 or -1 with a message. */
int ablate_parse_selection(const gl_model *m, const char *layers, const char *heads, unsigned char *sel, char *err,
                           size_t errlen);

/* A short label of sel for metric names: "all", or "L1+L3H0" (whole blocks as
 * L{n}, single pairs as L{n}H{j}); truncated with "+…" past n bytes. */
void ablate_selection_label(const gl_model *m, const unsigned char *sel, char *out, size_t n);

/* "zero", "mean", "full-depth", "random", "file", "resample"; parse returns 0 or -1. */
const char *ablate_mode_name(ablate_mode mode);
int ablate_parse_mode(const char *s, ablate_mode *mode);

/* 1 when the mode reads the reference windows (mean, resample). */
int ablate_mode_uses_reference(ablate_mode mode);
/* 1 when --layers / --heads select its gates (zero, mean, resample). */
int ablate_mode_selects_gates(ablate_mode mode);

/* The source position of evaluation position pos (window index × T + t)
 * under resample with seed: uniform over [0, n_ref), a pure function of
 * (seed, pos), so batch size and thread count do not change the draw. */
long ablate_resample_source(uint64_t seed, long pos, long n_ref);

/* 1 when block n of m has a gate the mode can override (SATFormer α or ResFormer λ1). */
int ablate_block_gated(const gl_model *m, int n);

/* Registry rows of res as <mode>.<quantity> with params {"gates":"<label>"}
 * (measured on rm->prov; the losses and delta_loss with their standard
 * errors): base_loss, loss, delta_loss, ppl_ratio, delta_loss per category,
 * active_frac (routed models), route_skip (random); split "ablation" at
 * step (store/metric.h metric_ablation).  Returns 0 or -1 with a message. */
int ablate_metrics(const ablate_result *res, const char *label, long step, report_metrics *rm, char *err,
                   size_t errlen);

#endif
