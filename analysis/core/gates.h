/*
 * gates.h — statistics of gate values (SATFormer α, TSA p, exit confidences)
 * on plain arrays: mean, exact-zero and below-ε fractions, Gini and Hoyer
 * sparsity, normalised entropy across heads, histograms.
 *
 * Every function reads n values x[0], x[stride], …, x[(n−1)·stride], so one
 * KV head of an (tokens, Hkv) array is (x + j, n_tok, Hkv).  Nothing here
 * allocates, prints or does I/O; definitions are in docs/analysis.md.
 */
#ifndef GATELAB_ANALYSIS_CORE_GATES_H
#define GATELAB_ANALYSIS_CORE_GATES_H

#include <stddef.h>

#define GATES_N_EPS 3

/* The thresholds of the below-ε fractions: 1e-3, 1e-2, 0.1. */
extern const double gates_eps[GATES_N_EPS];
/* Their names in metric names and TSV headers: "1e-3", "1e-2", "1e-1". */
extern const char *const gates_eps_name[GATES_N_EPS];

typedef struct {
    long n;                          /* values summarised */
    double mean;                     /* arithmetic mean (NaN when n = 0) */
    double frac_zero;                /* share of values exactly 0 */
    double frac_below[GATES_N_EPS];  /* share of values with |x| < gates_eps[i] */
    double gini;                     /* Gini index of |x| in [0, 1 − 1/n]; NaN if n < 2 or Σ|x| = 0 */
    double hoyer;                    /* Hoyer sparsity of x in [0, 1]; NaN if n < 2 or Σ|x| = 0 */
} gates_summary;

double gates_mean(const float *x, long n, long stride);
double gates_frac_zero(const float *x, long n, long stride);
double gates_frac_below(const float *x, long n, long stride, double eps);

/* Gini index (Hurley & Rickard 2009) of |x|: with c the values sorted
 * ascending, G = 1 − 2 Σₖ (cₖ/‖c‖₁)(n − k + ½)/n = Σₖ (2k − n − 1) cₖ / (n ‖c‖₁),
 * k = 1..n.  0 when all values are equal, 1 − 1/n when one value holds all the
 * mass.  An adapter: |x| (strided floats) is copied into scratch (n doubles)
 * and handed to st_gini (stats.h), the one Gini of gatelab.  NaN when n < 2
 * or every value is 0. */
double gates_gini(const float *x, long n, long stride, double *scratch);

/* Hoyer (2004) sparsity (√n − ‖x‖₁/‖x‖₂)/(√n − 1): 0 for a constant vector,
 * 1 for a one-hot one.  NaN when n < 2 or every value is 0. */
double gates_hoyer(const float *x, long n, long stride);

/* All of the above in one pass plus one sort; scratch holds n doubles. */
void gates_summarize(const float *x, long n, long stride, double *scratch, gates_summary *s);

/* Normalised entropy across heads: for each token t of x (n_tok, n_head) with
 * Σⱼ xₜⱼ > 0, qⱼ = xₜⱼ / Σⱼ xₜⱼ and Hₜ = −Σⱼ qⱼ ln qⱼ / ln n_head, in [0, 1]
 * (1: the gate spreads evenly over heads; 0: one head carries it).  Returns
 * the mean of Hₜ over those tokens and their count in *n_used (may be NULL);
 * NaN when n_head < 2 or no token has mass.  A signed gate (model.sat_gate =
 * tanh or identity) enters by its magnitude |xₜⱼ|, the size of each head's V1
 * contribution, as the Gini index and Hoyer measure above also take it. */
double gates_head_entropy(const float *x, long n_tok, int n_head, long *n_used);

/* Histogram of nbins equal bins over [lo, hi]: bin i holds lo + i·w ≤ x <
 * lo + (i+1)·w with w = (hi − lo)/nbins; hi itself and anything above falls in
 * the last bin, anything below lo in the first; NaN is skipped.  counts
 * (nbins) is overwritten.  Returns the number of values counted. */
long gates_histogram(const float *x, long n, long stride, double lo, double hi, int nbins, long *counts);

#endif
