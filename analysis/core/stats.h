/*
 * stats.h — the one statistics kernel of the analyses: every mean, standard
 * deviation, interval and test quantile a table, figure, HTML page or the
 * paper report prints comes from here, so one seed, one NaN or one df reads
 * the same everywhere.
 *
 * Conventions: NaN inputs are skipped (a value not measured is not a zero);
 * sd is the sample standard deviation (n − 1); intervals are two-sided
 * Student t intervals of the mean (NaN when fewer than two values); the t
 * quantile is computed for any df (bisection on the CDF, which is the
 * regularized incomplete beta), never read from a table.
 */
#ifndef GATELAB_ANALYSIS_CORE_STATS_H
#define GATELAB_ANALYSIS_CORE_STATS_H

#include <stdint.h>

/* Summary of the non-NaN values of a sample. */
typedef struct {
    int n;              /* values used */
    double mean;        /* NaN when n = 0 */
    double sd, se;      /* sample sd (n − 1) and sd / √n: NaN when n < 2 */
    double lo, hi;      /* the level's t interval of the mean: NaN when n < 2 */
} st_summary;

/* Regularized incomplete beta I_x(a, b) (a, b > 0, 0 ≤ x ≤ 1); NaN outside. */
double st_betai(double a, double b, double x);

/* Student t CDF P(T ≤ t) for df > 0 (df may be fractional). */
double st_t_cdf(double t, double df);

/* The p quantile of Student t with df > 0 degrees of freedom (0 < p < 1):
 * st_t_quantile(0.975, 1) = 12.706.  NaN for df ≤ 0 or p outside (0, 1). */
double st_t_quantile(double p, double df);

/* Two-sided 95 % quantile t_{0.975, df} (NaN for df < 1). */
double st_t95(int df);

/* mean, sd, se and the two-sided level (e.g. 0.95) t interval of x[0..n). */
st_summary st_describe(const double *x, int n, double level);

/* The same over the paired differences a[i] − b[i] (relative: a[i] / b[i] − 1),
 * a pair counting only when both are measured. */
st_summary st_paired(const double *a, const double *b, int n, int relative, double level);

/* Welch's difference of two independent sample means a.mean − b.mean (each
 * a summary with n ≥ 2): se = √(sa²/na + sb²/nb), Welch–Satterthwaite df
 * (into *df when not NULL), and the level's t interval.  n = na + nb. */
st_summary st_welch(st_summary a, st_summary b, double level, double *df);

/* Minimum detectable effect of a one-sample (or paired) t test at two-sided
 * 5 % and 80 % power: (t_{0.975, n−1} + t_{0.8, n−1}) · sd / √n.  NaN for n < 2. */
double st_mde(int n, double sd);

/* The budget that would detect eff (> 0): the smallest n ≥ 2 with st_mde(n, sd) ≤ eff, searched up to
 * max; max + 1 when even max seeds would not; -1 when sd or eff is not a usable number.  For a Welch
 * contrast of two groups of n seeds each (sd_b ≥ 0; pass NaN for a one-sample or paired row) the
 * standard error is √((sd² + sd_b²)/n) and df 2n − 2, the equal-n Welch bound. */
int st_seeds_for(double sd, double sd_b, double eff, int max);

/* Cluster-robust standard error of the mean of x[0..n) whose observations
 * fall in clusters cluster[0..n) (any integer labels): with G clusters and
 * residuals e = x − mean, se = √(G / (G − 1) · Σ_g (Σ_{i∈g} e_i)²) / N
 * (run/evaluate.h eval_cluster_se on each cluster's Σ x and count).
 * NaN when fewer than two clusters. */
double st_cluster_se(const double *x, const int *cluster, int n);

/* Gini coefficient of the non-negative values x[0..n) (sorted in place):
 * 0 spread evenly, → 1 all on one.  NaN for n < 2 or a zero sum. */
double st_gini(double *x, int n);

/* The q quantile (0 ≤ q ≤ 1) of x[0..n) by linear interpolation between order
 * statistics (type 7, R's default); x is sorted in place.  NaN for n = 0. */
double st_quantile(double *x, int n, double q);

/* The same over x[0..n) already in ascending order (st_sort), for several
 * quantiles of one sample without sorting it again. */
double st_quantile_sorted(const double *x, int n, double q);

/* Sort x[0..n) ascending (no NaN in x). */
void st_sort(double *x, int n);

/* Percentile bootstrap interval of the mean of x[0..n): B resamples with
 * replacement drawn by a seeded generator (the same seed gives the same
 * interval), the (1 − level)/2 and (1 + level)/2 quantiles of the resampled
 * means.  Returns 0, or -1 (n < 2, B < 2, out of memory) with lo = hi = NaN. */
int st_bootstrap_mean(const double *x, int n, int B, uint64_t seed, double level, double *lo, double *hi);

#endif
