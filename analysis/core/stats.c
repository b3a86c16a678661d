/*
 * stats.c — the statistics kernel (stats.h).
 *
 * The incomplete beta is evaluated by its continued fraction (modified
 * Lentz's method, as in Numerical Recipes §6.4), using the symmetry
 * I_x(a, b) = 1 − I_{1−x}(b, a) where the fraction converges slowly.  The t
 * CDF follows from P(|T| > t) = I_{df/(df+t²)}(df/2, 1/2), and the quantile
 * by bisection on it (the CDF is monotone; 200 halvings of [0, 1e7] leave an
 * error far below the printed digits).  The bootstrap generator is
 * SplitMix64 (its finaliser is rng_mix64, model/rng.h), so an interval
 * repeats bit for bit for a given seed.  The one Gini of gatelab is st_gini;
 * gates_gini (gates_stats.c) adapts strided float gates to it.  The one
 * cluster-robust standard error is harness/run/evaluate.h's eval_cluster_se
 * (the evaluations' batches are its clusters, and harness/run/ may not call
 * analysis/); st_cluster_se hands it per-cluster sums.
 *
 * Not here: choosing which runs are a sample (runset.c) or what a verdict
 * is (claims.c).
 */
#include "analysis/core/stats.h"
#include "model/rng.h"
#include "run/evaluate.h" /* eval_cluster_se: the one cluster-robust standard error */

#include <math.h>
#include <stdlib.h>

/* Continued fraction of the incomplete beta (NR betacf). */
static double st_betacf(double a, double b, double x) {
    const double tiny = 1e-300, eps = 1e-15;
    double qab = a + b, qap = a + 1, qam = a - 1, c = 1, d = 1 - qab * x / qap;
    if (fabs(d) < tiny) d = tiny;
    d = 1 / d;
    double h = d;
    for (int m = 1; m <= 10000; m++) {
        int m2 = 2 * m;
        double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1 + aa * d;
        if (fabs(d) < tiny) d = tiny;
        c = 1 + aa / c;
        if (fabs(c) < tiny) c = tiny;
        d = 1 / d;
        h *= d * c;
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1 + aa * d;
        if (fabs(d) < tiny) d = tiny;
        c = 1 + aa / c;
        if (fabs(c) < tiny) c = tiny;
        d = 1 / d;
        double del = d * c;
        h *= del;
        if (fabs(del - 1) < eps) break;
    }
    return h;
}

double st_betai(double a, double b, double x) {
    if (!(a > 0) || !(b > 0) || !(x >= 0) || !(x <= 1)) return NAN;
    if (x == 0 || x == 1) return x;
    double lbt = lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x);
    double bt = exp(lbt);
    if (x < (a + 1) / (a + b + 2)) return bt * st_betacf(a, b, x) / a;
    return 1 - bt * st_betacf(b, a, 1 - x) / b;
}

double st_t_cdf(double t, double df) {
    if (!(df > 0) || isnan(t)) return NAN;
    if (isinf(t)) return t > 0 ? 1 : 0;
    double tail = 0.5 * st_betai(0.5 * df, 0.5, df / (df + t * t)); /* P(T > |t|) */
    return t >= 0 ? 1 - tail : tail;
}

double st_t_quantile(double p, double df) {
    if (!(df > 0) || !(p > 0) || !(p < 1)) return NAN;
    if (p == 0.5) return 0;
    double q = p > 0.5 ? p : 1 - p, lo = 0, hi = 1e7;
    for (int i = 0; i < 200 && hi - lo > 1e-12 * (1 + lo); i++) {
        double mid = 0.5 * (lo + hi);
        if (st_t_cdf(mid, df) < q) lo = mid;
        else hi = mid;
    }
    double t = 0.5 * (lo + hi);
    return p > 0.5 ? t : -t;
}

double st_t95(int df) { return df < 1 ? NAN : st_t_quantile(0.975, df); }

st_summary st_describe(const double *x, int n, double level) {
    st_summary s = {0, NAN, NAN, NAN, NAN, NAN};
    double sum = 0, q = 0;
    for (int i = 0; i < n; i++)
        if (!isnan(x[i])) sum += x[i], s.n++;
    if (!s.n) return s;
    s.mean = sum / s.n;
    for (int i = 0; i < n; i++)
        if (!isnan(x[i])) q += (x[i] - s.mean) * (x[i] - s.mean);
    if (s.n < 2) return s;
    s.sd = sqrt(q / (s.n - 1));
    s.se = s.sd / sqrt((double)s.n);
    double h = st_t_quantile(0.5 + 0.5 * level, s.n - 1) * s.se;
    s.lo = s.mean - h;
    s.hi = s.mean + h;
    return s;
}

st_summary st_paired(const double *a, const double *b, int n, int relative, double level) {
    double *d = malloc((size_t)(n > 0 ? n : 1) * sizeof *d);
    st_summary s = {0, NAN, NAN, NAN, NAN, NAN};
    if (!d) return s;
    for (int i = 0; i < n; i++)
        d[i] = isnan(a[i]) || isnan(b[i]) ? NAN : relative ? a[i] / b[i] - 1 : a[i] - b[i];
    s = st_describe(d, n, level);
    free(d);
    return s;
}

st_summary st_welch(st_summary a, st_summary b, double level, double *df) {
    st_summary s = {a.n + b.n, a.mean - b.mean, NAN, NAN, NAN, NAN};
    if (df) *df = NAN;
    if (a.n < 2 || b.n < 2 || isnan(a.sd) || isnan(b.sd)) return s;
    double va = a.sd * a.sd / a.n, vb = b.sd * b.sd / b.n, v = va + vb;
    s.se = sqrt(v);
    if (!(v > 0)) { /* both samples constant: the difference is exact */
        s.lo = s.hi = s.mean;
        return s;
    }
    double d = v * v / (va * va / (a.n - 1) + vb * vb / (b.n - 1));
    if (df) *df = d;
    double h = st_t_quantile(0.5 + 0.5 * level, d) * s.se;
    s.lo = s.mean - h;
    s.hi = s.mean + h;
    return s;
}

double st_mde(int n, double sd) {
    if (n < 2 || isnan(sd)) return NAN;
    return (st_t_quantile(0.975, n - 1) + st_t_quantile(0.8, n - 1)) * sd / sqrt((double)n);
}

int st_seeds_for(double sd, double sd_b, double eff, int max) {
    const int welch = !isnan(sd_b);
    if (!isfinite(sd) || sd < 0 || (welch && (!isfinite(sd_b) || sd_b < 0)) || !isfinite(eff) || eff <= 0) return -1;
    const double var = sd * sd + (welch ? sd_b * sd_b : 0);
    for (int n = 2; n <= max; n++) {
        const double df = welch ? 2.0 * n - 2 : n - 1.0;
        if ((st_t_quantile(0.975, df) + st_t_quantile(0.8, df)) * sqrt(var / n) <= eff) return n;
    }
    return max + 1;
}

double st_cluster_se(const double *x, const int *cluster, int n) {
    /* each cluster's Σ x and count, in order of first appearance, then the evaluations' kernel:
     * Σ_{i∈g} (x_i − mean) = y_g − mean·n_g, so the ratio mean's SE is this one */
    double *y = calloc((size_t)(n > 0 ? n : 1), 2 * sizeof(double));
    unsigned char *done = calloc((size_t)(n > 0 ? n : 1), 1);
    double se = NAN;
    if (!y || !done) goto cleanup;
    double *w = y + (n > 0 ? n : 1);
    int G = 0, N = 0;
    for (int i = 0; i < n; i++) { /* O(n²) over clusters: n is seeds × windows, small */
        if (done[i] || isnan(x[i])) continue;
        for (int j = i; j < n; j++)
            if (!done[j] && !isnan(x[j]) && cluster[j] == cluster[i]) y[G] += x[j], w[G] += 1, done[j] = 1;
        N += (int)w[G++];
    }
    if (N >= 2) se = eval_cluster_se(y, NULL, w, G);
cleanup:
    free(y);
    free(done);
    return se;
}

static int st_cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double st_gini(double *x, int n) {
    if (n < 2) return NAN;
    qsort(x, (size_t)n, sizeof *x, st_cmp);
    double s = 0, w = 0;
    for (int i = 0; i < n; i++) s += x[i], w += (2.0 * (i + 1) - n - 1) * x[i];
    return s > 0 ? w / (n * s) : NAN;
}

void st_sort(double *x, int n) {
    if (n > 1) qsort(x, (size_t)n, sizeof *x, st_cmp);
}

double st_quantile(double *x, int n, double q) {
    if (n < 1 || isnan(q)) return NAN;
    st_sort(x, n);
    return st_quantile_sorted(x, n, q);
}

double st_quantile_sorted(const double *x, int n, double q) {
    if (n < 1 || isnan(q)) return NAN;
    double h = (n - 1) * (q < 0 ? 0 : q > 1 ? 1 : q);
    int k = (int)floor(h);
    return k + 1 < n ? x[k] + (h - k) * (x[k + 1] - x[k]) : x[n - 1];
}

int st_bootstrap_mean(const double *x, int n, int B, uint64_t seed, double level, double *lo, double *hi) {
    *lo = *hi = NAN;
    if (n < 2 || B < 2) return -1;
    double *m = malloc((size_t)B * sizeof *m);
    if (!m) return -1;
    uint64_t s = seed;
    for (int b = 0; b < B; b++) {
        double sum = 0;
        for (int i = 0; i < n; i++) sum += x[rng_splitmix(&s) % (uint64_t)n];
        m[b] = sum / n;
    }
    *lo = st_quantile(m, B, 0.5 - 0.5 * level);
    *hi = st_quantile_sorted(m, B, 0.5 + 0.5 * level); /* the first call sorted m */
    free(m);
    return 0;
}
