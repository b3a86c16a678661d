/*
 * test_difficulty.c — the statistics of difficulty-proportional routing
 * (analysis/measure/difficulty.h) against hand computations:
 *
 *  - Spearman's ρ with ties (average ranks) on a small table worked by hand;
 *  - weights are multiplicities: ρ with weights equals ρ of the expanded
 *    list (each token repeated), ranked afresh by a plain reference;
 *  - the bootstrap over windows: every resample's ρ recomputed by expanding
 *    the drawn windows and ranking from scratch (a sort per resample), the
 *    same percentile interval;
 *  - the type-7 quantile on a hand case; too few tokens is an error;
 *  - the metric names of the rows and their stored form (partner, seed).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "analysis/core/stats.h"
#include "analysis/measure/difficulty.h"
#include "store/metric.h"

/* Plain reference: average ranks by counting (O(n²)), then Pearson. */
static void ref_ranks(const double *v, long n, double *r) {
    for (long i = 0; i < n; i++) {
        double less = 0, eq = 0;
        for (long j = 0; j < n; j++) less += v[j] < v[i], eq += v[j] == v[i];
        r[i] = less + (eq + 1) / 2;
    }
}

static double ref_spearman(const double *x, const double *y, long n) {
    double *rx = malloc((size_t)n * sizeof *rx), *ry = malloc((size_t)n * sizeof *ry);
    ref_ranks(x, n, rx);
    ref_ranks(y, n, ry);
    double mx = 0, my = 0;
    for (long i = 0; i < n; i++) mx += rx[i] / n, my += ry[i] / n;
    double sxx = 0, syy = 0, sxy = 0;
    for (long i = 0; i < n; i++) {
        sxx += (rx[i] - mx) * (rx[i] - mx);
        syy += (ry[i] - my) * (ry[i] - my);
        sxy += (rx[i] - mx) * (ry[i] - my);
    }
    free(rx);
    free(ry);
    return sxy / sqrt(sxx * syy);
}

static double spearman(const double *x, const double *y, const double *w, long n) {
    long *ox = malloc((size_t)n * sizeof *ox), *oy = malloc((size_t)n * sizeof *oy);
    double *rx = malloc((size_t)n * sizeof *rx), *ry = malloc((size_t)n * sizeof *ry);
    assert_int_equal(diff_order(x, n, ox), 0);
    assert_int_equal(diff_order(y, n, oy), 0);
    double r = diff_spearman(x, y, w, ox, oy, n, rx, ry);
    free(ox); free(oy); free(rx); free(ry);
    return r;
}

/* depth x = (1, 2, 2, 3, 1), loss y = (0.5, 0.9, 0.7, 2.0, 0.9).
 * Ranks of x: 1 and 1 share ranks 1, 2 → 1.5; the 2s share 3, 4 → 3.5; 3 → 5:
 *   rx = (1.5, 3.5, 3.5, 5, 1.5).
 * Ranks of y: 0.5 → 1, 0.7 → 2, the 0.9s share 3, 4 → 3.5, 2.0 → 5:
 *   ry = (1, 3.5, 2, 5, 3.5).
 * Both means are 3.  Deviations: dx = (−1.5, .5, .5, 2, −1.5), dy = (−2, .5, −1, 2, .5).
 *   Σ dx dy = 3 + .25 − .5 + 4 − .75 = 6;  Σ dx² = 2.25+.25+.25+4+2.25 = 9;  Σ dy² = 4+.25+1+4+.25 = 9.5
 *   ρ = 6 / sqrt(9 · 9.5) = 0.6488856845... */
static void test_spearman_by_hand(void **s) {
    (void)s;
    const double x[] = {1, 2, 2, 3, 1}, y[] = {0.5, 0.9, 0.7, 2.0, 0.9};
    const double hand = 6.0 / sqrt(9.0 * 9.5);
    const double got = spearman(x, y, NULL, 5);
    printf("  ρ with ties: %.12f, by hand %.12f, |Δ| %.1e\n", got, hand, fabs(got - hand));
    assert_true(fabs(got - hand) < 1e-14);
    /* a perfect monotone relation and its reverse */
    const double up[] = {1, 2, 3, 4}, sq[] = {1, 4, 9, 16}, down[] = {16, 9, 4, 1};
    assert_true(fabs(spearman(up, sq, NULL, 4) - 1.0) < 1e-15);
    assert_true(fabs(spearman(up, down, NULL, 4) + 1.0) < 1e-15);
    /* no spread in one variable: undefined */
    const double flat[] = {2, 2, 2, 2};
    assert_true(isnan(spearman(flat, sq, NULL, 4)));
}

/* Weights as multiplicities: the same ρ as the expanded list ranked afresh. */
static void test_weights_are_multiplicities(void **s) {
    (void)s;
    const double x[] = {1, 3, 2, 2, 1, 3, 2}, y[] = {0.1, 1.5, 0.9, 0.9, 0.4, 0.2, 1.1};
    const double w[] = {2, 0, 1, 3, 1, 2, 1};
    double ex[16], ey[16];
    long m = 0;
    for (int i = 0; i < 7; i++)
        for (int k = 0; k < (int)w[i]; k++) ex[m] = x[i], ey[m] = y[i], m++;
    const double got = spearman(x, y, w, 7), ref = ref_spearman(ex, ey, m);
    printf("  weighted ρ %.12f, expanded list (%ld tokens) %.12f\n", got, m, ref);
    assert_true(fabs(got - ref) < 1e-12);
}

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The bootstrap against expand-and-sort: 5 windows of 4 tokens, 300
 * resamples drawn by diff_draw, each resample's windows expanded and ranked
 * afresh by the reference. */
static void test_bootstrap_reference(void **s) {
    (void)s;
    enum { W = 5, TW = 4, n = W * TW, B = 300 };
    double x[n], y[n];
    long win[n];
    for (int i = 0; i < n; i++) {
        win[i] = i / TW;
        x[i] = 1 + (i * 7 % 5) % 3;              /* depths 1..3, many ties */
        y[i] = 0.3 * x[i] + ((i * 13) % 11) / 10.0; /* loss, loosely rising with depth */
    }
    diff_result r;
    char err[256];
    const uint64_t seed = 12345;
    assert_int_equal(diff_bootstrap(x, y, win, n, W, B, seed, &r, err, sizeof err), 0);
    double rho[B];
    int used = 0;
    for (int b = 0; b < B; b++) {
        double ex[n], ey[n];
        long m = 0;
        for (long j = 0; j < W; j++) {
            const long wdw = diff_draw(seed, b, j, W);
            for (int t = 0; t < TW; t++) ex[m] = x[wdw * TW + t], ey[m] = y[wdw * TW + t], m++;
        }
        const double v = ref_spearman(ex, ey, m);
        if (!isnan(v)) rho[used++] = v;
    }
    qsort(rho, (size_t)used, sizeof *rho, cmp_double);
    const double lo = st_quantile_sorted(rho, used, 0.025), hi = st_quantile_sorted(rho, used, 0.975);
    const double full = ref_spearman(x, y, n);
    printf("  ρ %.6f (reference %.6f), interval [%.6f, %.6f] (reference [%.6f, %.6f]), %d of %d resamples\n", r.rho,
           full, r.rho_lo, r.rho_hi, lo, hi, r.resamples_used, used);
    assert_int_equal(r.resamples_used, used);
    assert_true(fabs(r.rho - full) < 1e-12);
    assert_true(fabs(r.rho_lo - lo) < 1e-12 && fabs(r.rho_hi - hi) < 1e-12);
    assert_true(r.rho_lo < r.rho && r.rho < r.rho_hi);
    /* the draw covers every window and is reproducible */
    int seen[W] = {0};
    for (int j = 0; j < 200; j++) seen[diff_draw(seed, 0, j, W)]++;
    for (int k = 0; k < W; k++) assert_true(seen[k] > 0);
    assert_int_equal(diff_draw(seed, 3, 2, W), diff_draw(seed, 3, 2, W));
}

/* Type 7: s = (1, 2, 4, 8), q = 0.25 → h = 0.75 → 1 + 0.75·1 = 1.75; q = 0.9 → h = 2.7 → 4 + 0.7·4 = 6.8. */
static void test_quantile_and_errors(void **s) {
    (void)s;
    const double v[] = {1, 2, 4, 8};
    assert_true(fabs(st_quantile_sorted(v, 4, 0.25) - 1.75) < 1e-15);
    assert_true(fabs(st_quantile_sorted(v, 4, 0.9) - 6.8) < 1e-15);
    assert_true(st_quantile_sorted(v, 4, 1.0) == 8 && st_quantile_sorted(v, 4, 0.0) == 1);
    diff_result r;
    char err[256] = "";
    const double one[] = {1};
    const long w0[] = {0};
    assert_int_equal(diff_bootstrap(one, one, w0, 1, 1, 10, 1, &r, err, sizeof err), -1);
    printf("  one token: %s\n", err);
    assert_non_null(strstr(err, "too few"));
}

/* The rows' keys: difficulty.<q> {"partner", "seed"}, labelled difficulty.<partner>.seed<S>.<q>. */
static void test_metric_names(void **s) {
    (void)s;
    metric_key k;
    char label[METRIC_NAME_MAX + METRIC_PARAMS_MAX];
    assert_int_equal(metric_partner(&k, METRIC_DIFFICULTY, "paper-x-003-ab12cd34", 22, "rho_lo"), 0);
    assert_int_equal(metric_label(k.name, k.params, label, sizeof label), 0);
    printf("  %s %s -> %s\n", k.name, k.params, label);
    assert_string_equal(k.name, "difficulty.rho_lo");
    assert_string_equal(k.params, "{\"partner\":\"paper-x-003-ab12cd34\",\"seed\":22}");
    assert_string_equal(label, "difficulty.paper-x-003-ab12cd34.seed22.rho_lo");
    /* a partner that is not a plain token is refused, not mangled */
    assert_int_equal(metric_partner(&k, METRIC_DIFFICULTY, "a.b", 1, "rho"), -1);
    assert_int_equal(metric_partner(&k, METRIC_DIFFICULTY, "a\"b", 1, "rho"), -1);
    /* post-hoc exit rows take the exit grammar */
    assert_int_equal(metric_exit_mode(&k, METRIC_POSTHOC_MODE, 0.3, "loss", METRIC_NONE), 0);
    assert_string_equal(k.name, "posthoc.loss");
    assert_string_equal(k.params, "{\"tau\":0.300}");
    assert_int_equal(metric_label(k.name, k.params, label, sizeof label), 0);
    assert_string_equal(label, "posthoc.tau0.300.loss");
    assert_int_equal(metric_exit_mode(&k, METRIC_POSTHOC_MODE, NAN, "loss", METRIC_NONE), 0);
    assert_string_equal(k.params, "{\"tau\":null}");
    assert_int_equal(metric_label(k.name, k.params, label, sizeof label), 0);
    assert_string_equal(label, "posthoc.full.loss");
    assert_int_equal(metric_headline(&k, METRIC_HARD, "active_frac"), 0);
    assert_string_equal(k.name, "hard.active_frac");
    assert_string_equal(k.params, "{}");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spearman_by_hand),    cmocka_unit_test(test_weights_are_multiplicities),
        cmocka_unit_test(test_bootstrap_reference), cmocka_unit_test(test_quantile_and_errors),
        cmocka_unit_test(test_metric_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
