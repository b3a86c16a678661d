/*
 * evaluate.h — loss, accuracy and active fraction of a model over evaluation
 * windows, shared by the training loop (validation passes) and `gatelab eval`.
 */
#ifndef GATELAB_HARNESS_EVALUATE_H
#define GATELAB_HARNESS_EVALUATE_H

#include "model/model.h"
#include "store/data.h"

typedef struct {
    double loss;        /* mean cross-entropy over scored tokens (nats/token) */
    double loss_se;     /* standard error of loss: batches of windows as clusters (eval_cluster_se); 0 when
                           fewer than two batches score tokens */
    double tokens;      /* scored tokens */
    double tok_acc;     /* argmax accuracy on scored tokens */
    double seq_acc;     /* share of windows with every scored token right */
    double active_frac; /* TSA / early exit: share of (token, layer >= 1) pairs that ran (TSA: p <= 0.5) */
    double active_frac_paper; /* early exit at τ (and post-hoc exit): α in the TSA paper's official convention,
                                 (1 + mean post-stem blocks run up to the exit)/L (m->active_frac_paper);
                                 NaN in every other mode */
    double run_frac;    /* inference modes (TSA sparse, early exit at τ, post-hoc exit): share of (token,
                           layer >= 1) pairs whose block really ran, counted from the rows computed
                           (m->active_count); NaN in the soft / training modes, which run every pair */
    double p_mid_share; /* TSA: share of (token, router) halting probabilities p in (0.3, 0.7), all
                           tokens of the windows; NaN for other models */
    long windows;
    double seconds;     /* wall-clock time of the forward passes */
    double bytes_per_token; /* text bytes per scored target token: 1 for char and the tasks, more for BPE */
} gl_eval_result;

/* Bits per character (byte) of a text evaluation: loss / ln 2 per token,
 * divided by the bytes each scored token stands for (exactly loss / ln 2
 * when that is 1, i.e. for char runs); eval_bpc_se the same of loss_se. */
double eval_bpc(const gl_eval_result *r);
double eval_bpc_se(const gl_eval_result *r);

/* Evaluate windows [0, n_windows) of split (n_windows <= 0: all) in batches of
 * the model's max_B.  Returns 0, or -1 with a message (empty split). */
int eval_split(gl_model *m, const gl_dataset *ds, gl_split split, long n_windows, gl_eval_result *r,
               char *err, size_t errlen);

/* The one evaluation loop: windows [first, first + n) of split in batches of
 * m->max_B, each read into buf (tok, tg, mask: (max_B, T) each) with
 * data_eval_batch, then before(ctx, off, got) (may be NULL: ablate's resample
 * fill), model_forward, after(ctx, off, got) (each caller's sums); off is the
 * batch's first window counted from first.  A callback's non-zero return
 * ends the pass with -1 (the callback wrote err).  The missing-window rule is
 * the caller's: strict = 1 makes a batch that comes back short an error naming
 * the window; strict = 0 stops quietly at the first empty batch.  Returns 0 or -1. */
typedef struct { int *tok, *tg; float *mask; } eval_buffers;
typedef int (*eval_batch_fn)(void *ctx, long off, int got, char *err, size_t errlen);
int eval_each_batch(gl_model *m, const gl_dataset *ds, gl_split split, long first, long n, int strict,
                    const eval_buffers *buf, eval_batch_fn before, eval_batch_fn after, void *ctx, char *err,
                    size_t errlen);

/* The standard errors of every evaluation (eval_split, eval_ids, analysis/measure/ablate.c):
 * batches of windows are the clusters.  Cluster g holds y[g], the sum of the
 * per-token losses of its scored tokens, and w[g], their weight (Σ mask).
 * eval_cluster_se is the cluster-robust (CR1) standard error of the ratio
 * mean R = Σ y / Σ w over the G clusters with w[g] > 0:
 *     SE² = G/(G−1) · Σ_g (y[g] − R·w[g])² / (Σ_g w[g])²
 * (yb not NULL: of the paired difference (Σ y − Σ yb) / Σ w of two
 * evaluations of the same windows, y[g] − yb[g] in place of y[g]; yb's
 * clusters take w's weights).  NaN with fewer than two such clusters.
 * eval_cluster_add adds one batch's sums to cluster batch mod n (n at least
 * the number of batches: one cluster per batch). */
double eval_cluster_se(const double *y, const double *yb, const double *w, int n);
void eval_cluster_add(double *y, double *w, int n, long batch, double loss_sum, double scored);

/* The model's hard routing: TSA with p > 0.5 really skipping (m->sparse),
 * early exit at its trained rule τ = EVAL_HARD_TAU (m->exit_tau); 0 when m
 * has no routing (depth_routing none).  eval_split_hard evaluates like
 * eval_split in that mode and puts the model's modes back afterwards;
 * returns 0, or -1 with a message (no routing, empty split). */
#define EVAL_HARD_TAU 0.5
int eval_has_hard(const gl_model *m);
int eval_split_hard(gl_model *m, const gl_dataset *ds, gl_split split, long n_windows, gl_eval_result *r, char *err,
                    size_t errlen);

/* The TSA paper's validation estimate: n_windows random windows of split
 * (data_random_batch) drawn from a generator seeded by key, run in batches of
 * m->max_B; the loss is the mean over their scored tokens (for full text
 * windows the mean of the paper's per-batch means, since every batch scores
 * the same number of tokens).  r->windows counts the windows drawn (a window
 * drawn twice counts twice).  Returns 0, or -1 with a message (a split too
 * short for one window of T + 1 tokens, out of memory). */
int eval_random(gl_model *m, const gl_dataset *ds, gl_split split, long n_windows, uint64_t key, gl_eval_result *r,
                char *err, size_t errlen);

/* Evaluate the first n_windows non-overlapping windows of an id sequence
 * (window i: inputs ids[iT, iT+T), targets shifted by one).  n_windows <= 0: all. */
int eval_ids(gl_model *m, const int *ids, size_t n_ids, long n_windows, gl_eval_result *r,
             char *err, size_t errlen);

/* Early exit at matched compute: find τ by bisection so that the active
 * fraction on windows [0, n_windows) of split is within tol of target.  Fills
 * *tau and *r with the closest point found (also when tol is not reached:
 * returns 1 then, 0 on success, -1 on error).  Leaves m->exit_tau at 0. */
int eval_match_alpha(gl_model *m, const gl_dataset *ds, gl_split split, long n_windows, double target,
                     double tol, double *tau, gl_eval_result *r, char *err, size_t errlen);

/* The TSA paper's τ protocol for early exit (scripts/ablation_early_exit.py of the official code): each
 * of the EVAL_PAPER_N_TAUS thresholds (0.99 … 0.30) evaluated on EVAL_PAPER_BATCHES fresh random batches
 * of `batch` windows of split (eval_random: threshold i draws from a generator seeded by a hash of key
 * and i, as the official sweep draws new batches for every threshold), and the threshold whose α in the
 * official convention (active_frac_paper) is nearest target chosen, the first of a tie (Python's min).
 * rows[i] holds threshold i's evaluation; *best its index.  Leaves m->exit_tau at 0.  Returns 0, or -1
 * with a message (no early-exit model, a split too short). */
#define EVAL_PAPER_N_TAUS 13
#define EVAL_PAPER_BATCHES 30
extern const double eval_paper_taus[EVAL_PAPER_N_TAUS];
int eval_match_paper(gl_model *m, const gl_dataset *ds, gl_split split, int batch, double target, uint64_t key,
                     gl_eval_result rows[EVAL_PAPER_N_TAUS], int *best, char *err, size_t errlen);

/* α in the TSA paper's early-exit convention from gatelab's: a token that ran k of the L − 1 post-stem
 * blocks counts (1 + k)/L there and k/(L − 1) here, so α_paper = (1 + (L − 1)·α)/L. */
double eval_alpha_paper(double alpha, int n_layer);

/* TLOps saved by routing at active fraction alpha over L layers: (1−α)(L−1)/L. */
double eval_tlops_saved(double alpha, int n_layer);

#endif
