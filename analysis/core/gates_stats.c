/*
 * gates_stats.c — sparsity and spread statistics of gate values on strided
 * float arrays (see gates.h for every definition).
 *
 * What it does not do: read traces, choose which tokens or layers to
 * summarise (analyze_trace.c and heads.c do), allocate, or print.
 * Follows Hurley & Rickard, "Comparing measures of sparsity" (IEEE TIT 2009)
 * for the Gini index and Hoyer, "Non-negative matrix factorization with
 * sparseness constraints" (JMLR 2004) for the Hoyer measure.  Sums run in
 * double precision in index order (the Gini's in sorted order, in st_gini:
 * stats.c is the one statistics kernel and holds the only Gini), so results
 * are repeatable bit for bit.
 */
#include "analysis/core/gates.h"
#include "analysis/core/stats.h"

#include <assert.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>

const double gates_eps[GATES_N_EPS] = {1e-3, 1e-2, 1e-1};
const char *const gates_eps_name[GATES_N_EPS] = {"1e-3", "1e-2", "1e-1"};

double gates_mean(const float *x, long n, long stride) {
    assert(stride >= 1);
    if (n <= 0) return NAN;
    double s = 0.0;
    for (long i = 0; i < n; i++) s += x[i * stride];
    return s / (double)n;
}

double gates_frac_zero(const float *x, long n, long stride) {
    assert(stride >= 1);
    if (n <= 0) return NAN;
    long z = 0;
    for (long i = 0; i < n; i++) z += x[i * stride] == 0.0f;
    return (double)z / (double)n;
}

double gates_frac_below(const float *x, long n, long stride, double eps) {
    assert(stride >= 1);
    if (n <= 0) return NAN;
    long z = 0;
    for (long i = 0; i < n; i++) z += fabs((double)x[i * stride]) < eps;
    return (double)z / (double)n;
}

double gates_gini(const float *x, long n, long stride, double *scratch) {
    assert(stride >= 1 && n <= INT_MAX);
    for (long i = 0; i < n; i++) scratch[i] = fabs((double)x[i * stride]);
    return st_gini(scratch, (int)n);
}

double gates_hoyer(const float *x, long n, long stride) {
    assert(stride >= 1);
    if (n < 2) return NAN;
    double l1 = 0.0, l2 = 0.0;
    for (long i = 0; i < n; i++) {
        double v = fabs((double)x[i * stride]);
        l1 += v;
        l2 += v * v;
    }
    if (!(l1 > 0.0)) return NAN;
    double rn = sqrt((double)n);
    double h = (rn - l1 / sqrt(l2)) / (rn - 1.0);
    /* rounding can push a constant vector a hair below 0 */
    return h < 0.0 ? 0.0 : h > 1.0 ? 1.0 : h;
}

void gates_summarize(const float *x, long n, long stride, double *scratch, gates_summary *s) {
    s->n = n;
    s->mean = gates_mean(x, n, stride);
    s->frac_zero = gates_frac_zero(x, n, stride);
    for (int e = 0; e < GATES_N_EPS; e++) s->frac_below[e] = gates_frac_below(x, n, stride, gates_eps[e]);
    s->gini = gates_gini(x, n, stride, scratch);
    s->hoyer = gates_hoyer(x, n, stride);
}

double gates_head_entropy(const float *x, long n_tok, int n_head, long *n_used) {
    long used = 0;
    double acc = 0.0;
    if (n_head >= 2) {
        const double norm = log((double)n_head);
        for (long t = 0; t < n_tok; t++) {
            const float *row = x + t * n_head;
            double sum = 0.0;
            for (int j = 0; j < n_head; j++) sum += fabsf(row[j]); /* signed gates by magnitude (gates.h) */
            if (!(sum > 0.0)) continue;
            double h = 0.0;
            for (int j = 0; j < n_head; j++) {
                double q = fabsf(row[j]) / sum;
                if (q > 0.0) h -= q * log(q);
            }
            acc += h / norm;
            used++;
        }
    }
    if (n_used) *n_used = used;
    return used ? acc / (double)used : NAN;
}

long gates_histogram(const float *x, long n, long stride, double lo, double hi, int nbins, long *counts) {
    assert(stride >= 1 && nbins >= 1 && hi > lo);
    for (int b = 0; b < nbins; b++) counts[b] = 0;
    long counted = 0;
    const double w = (hi - lo) / nbins;
    for (long i = 0; i < n; i++) {
        double v = x[i * stride];
        if (isnan(v)) continue;
        long b = v < lo ? 0 : v >= hi ? nbins - 1 : (long)floor((v - lo) / w);
        if (b >= nbins) b = nbins - 1; /* rounding just below hi */
        counts[b]++;
        counted++;
    }
    return counted;
}
