/*
 * difficulty.h — difficulty-proportional routing (the TSA paper's claim that
 * harder tokens get more depth, which the task gradient alone should make
 * emerge): the per-token depth a TSA run computes with hard routing (blocks
 * really run: block 0, plus every block n >= 1 whose router gives p <= 0.5)
 * against the per-token loss of the paired dense run on the same tokens,
 * as Spearman's ρ with a 95 % bootstrap interval over windows.
 *
 * Why windows: the tokens of one window share a context and are correlated,
 * so the bootstrap resamples whole windows (with replacement, as many as
 * there are), never single tokens.  Each resample's ρ is computed on every
 * scored token of the drawn windows, a window drawn twice counting twice.
 * Ranks are average ranks among ties (the depth takes at most L values, so
 * ties are the rule); ρ is Pearson's correlation of the ranks.  The interval
 * is the percentile interval: the 2.5 % and 97.5 % quantiles (linear
 * interpolation between order statistics, R's type 7) of the resampled ρ.
 *
 * Registry rows (split "analysis", on the TSA run, store/metric.h
 * metric_partner): difficulty.<q> for q in {rho, rho_lo, rho_hi, windows,
 * tokens, depth_mean} with params {"partner":"<dense run>","seed":S},
 * labelled difficulty.<dense run>.seed<S>.<q>.
 */
#ifndef GATELAB_ANALYSIS_MEASURE_DIFFICULTY_H
#define GATELAB_ANALYSIS_MEASURE_DIFFICULTY_H

#include <stddef.h>
#include <stdint.h>

#include "model/model.h"
#include "analysis/core/report.h"
#include "store/data.h"

#define DIFF_RESAMPLES 2000
#define DIFF_SEED 22 /* the default bootstrap seed (recorded in the rows' params) */

/* Spearman's ρ of (x_i, y_i), i < n, token i counted w[i] times (w NULL:
 * once; w[i] = 0 leaves it out): average ranks among ties in the weighted
 * multiset, then the weighted Pearson correlation of the ranks.  ox and oy
 * are the indices sorted by x and by y (diff_order).  rx, ry (n) are scratch.
 * NaN when fewer than two tokens count or a rank has no spread. */
double diff_spearman(const double *x, const double *y, const double *w, const long *ox, const long *oy, long n,
                     double *rx, double *ry);

/* The indices 0..n-1 sorted by v ascending (ties by index), into o (n).
 * Returns 0, or -1 out of memory. */
int diff_order(const double *v, long n, long *o);

/* Window j of resample b (of W windows) under seed: uniform over [0, W), a
 * pure function of (seed, b, j), so the draw is reproducible by hand. */
long diff_draw(uint64_t seed, long b, long j, long W);


typedef struct {
    double rho, rho_lo, rho_hi; /* ρ on every token; its 95 % percentile interval over window resamples */
    long windows;               /* windows measured (the unit of resampling) */
    double tokens;              /* scored tokens */
    double depth_mean;          /* mean blocks computed per token (1..L) */
    int resamples_used;         /* resamples whose ρ was defined */
} diff_result;

/* ρ and its interval for tokens i < n with x (depth), y (loss), window win[i]
 * in [0, W): B resamples under seed.  Returns 0, or -1 with a message. */
int diff_bootstrap(const double *x, const double *y, const long *win, long n, long W, int B, uint64_t seed,
                   diff_result *r, char *err, size_t errlen);

/* Evaluate windows [0, n_windows) of split (n_windows <= 0: all) with the TSA
 * model tsa routed hard (m->sparse) and the dense model dense, check that
 * both read the same tokens (dt is the dense run's own dataset), and fill r
 * (bootstrap with B resamples under seed).  Returns 0, or -1 with a message
 * (not a TSA / dense pair, different windows or tokens, empty split). */
int diff_measure(gl_model *tsa, const gl_dataset *ds, gl_model *dense, const gl_dataset *dt, gl_split split,
                 long n_windows, int B, uint64_t seed, diff_result *r, char *err, size_t errlen);

/* r's registry rows (split "analysis") against partner, measured on rm->prov. */
int diff_metrics(const diff_result *r, const char *partner, uint64_t seed, long step, report_metrics *rm, char *err,
                 size_t errlen);

#endif
