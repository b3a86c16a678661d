/*
 * test_stats.c — the statistics kernel (analysis/core/stats.h) against values
 * computed by hand or printed in standard tables: Student t quantiles
 * (t_{0.975} for df 1, 2, 10, 30, 100; t_{0.8} for df 2, 10), the incomplete
 * beta of integer arguments (a binomial tail), mean/sd/se/interval, paired
 * differences, the MDE formula, cluster se (st_cluster_se and the kernel
 * under it and every evaluation's standard error, harness/run/evaluate.h
 * eval_cluster_se / eval_cluster_add), Gini, quantiles and the seeded
 * bootstrap.  One line per check with its worst difference; exits non-zero
 * on any failure.  Tolerances: table values are printed to 4 decimals, so
 * 5e-4; closed forms computed here in double, 1e-12.
 */
#include <math.h>
#include <stdio.h>

#include "analysis/core/stats.h"
#include "run/evaluate.h"

static int fails, checks; /* tests/run.sh counts the cmocka-style summary lines printed at the end */

static void near(const char *what, double got, double want, double tol) {
    double d = fabs(got - want);
    int ok = d <= tol || (isnan(got) && isnan(want));
    printf("%s %-44s got %.10g want %.10g (|diff| %.3g, tol %.1g)\n", ok ? "ok  " : "FAIL", what, got, want, d, tol);
    fails += !ok;
    checks++;
}

int main(void) {
    /* t quantiles: standard table values (4 decimals) */
    near("t(0.975, 1)", st_t_quantile(0.975, 1), 12.7062, 5e-4);
    near("t(0.975, 2)", st_t_quantile(0.975, 2), 4.3027, 5e-4);
    near("t(0.975, 10)", st_t_quantile(0.975, 10), 2.2281, 5e-4);
    near("t(0.975, 30)", st_t_quantile(0.975, 30), 2.0423, 5e-4);
    near("t(0.975, 100)", st_t_quantile(0.975, 100), 1.9840, 5e-4);
    near("t(0.8, 2)", st_t_quantile(0.8, 2), 1.0607, 5e-4);
    near("t(0.8, 10)", st_t_quantile(0.8, 10), 0.8791, 5e-4);
    near("t(0.025, 5) = -t(0.975, 5)", st_t_quantile(0.025, 5), -2.5706, 5e-4);
    near("t95(df 1) = t(0.975, 1)", st_t95(1), st_t_quantile(0.975, 1), 0);
    near("t95(0) is NaN", st_t95(0), NAN, 0);
    /* t(1) is Cauchy: CDF(1) = 3/4 exactly */
    near("t CDF(1, df 1) = 0.75", st_t_cdf(1, 1), 0.75, 1e-12);
    /* I_x(2, 3) = P(Binomial(4, x) >= 2) = 1 - (1-x)^4 - 4x(1-x)^3; at x = 0.4: 0.5248 */
    near("I_0.4(2, 3)", st_betai(2, 3, 0.4), 0.5248, 1e-12);
    near("I_0.9(2, 3) (the symmetric branch)", st_betai(2, 3, 0.9), 1 - pow(0.1, 4) - 4 * 0.9 * pow(0.1, 3), 1e-12);

    const double x[5] = {1, 2, NAN, 3, 4};
    st_summary s = st_describe(x, 5, 0.95);
    near("describe: n (NaN skipped)", s.n, 4, 0);
    near("describe: mean", s.mean, 2.5, 1e-12);
    near("describe: sd = sqrt(5/3)", s.sd, sqrt(5.0 / 3), 1e-12);
    near("describe: se = sd / 2", s.se, sqrt(5.0 / 3) / 2, 1e-12);
    near("describe: hi = 2.5 + t(0.975,3) se", s.hi, 2.5 + 3.1824 * sqrt(5.0 / 3) / 2, 5e-4);
    st_summary one = st_describe(x, 1, 0.95);
    near("describe one value: mean", one.mean, 1, 0);
    near("describe one value: sd NaN", one.sd, NAN, 0);
    near("describe one value: lo NaN", one.lo, NAN, 0);

    const double a[3] = {2, 4, 6}, b[3] = {1, 1, 1};
    st_summary p = st_paired(a, b, 3, 0, 0.95);
    near("paired: mean of {1, 3, 5}", p.mean, 3, 1e-12);
    near("paired: sd of {1, 3, 5}", p.sd, 2, 1e-12);
    st_summary r = st_paired(a, b, 3, 1, 0.95);
    near("paired relative: mean of a/b - 1", r.mean, 3, 1e-12);

    /* Welch: {1,2,3} vs {4,6}: difference -3, se^2 = 1/3 + 2/2 = 4/3, df = (4/3)^2 / ((1/3)^2/2 + 1) = 32/19 */
    const double wa[3] = {1, 2, 3}, wb[2] = {4, 6};
    double wdf;
    st_summary w = st_welch(st_describe(wa, 3, 0.95), st_describe(wb, 2, 0.95), 0.95, &wdf);
    near("Welch: difference", w.mean, -3, 1e-12);
    near("Welch: se = sqrt(4/3)", w.se, sqrt(4.0 / 3), 1e-12);
    near("Welch: df = 32/19", wdf, 32.0 / 19, 1e-12);
    near("Welch: hi = -3 + t(0.975, 32/19) se", w.hi, -3 + st_t_quantile(0.975, 32.0 / 19) * sqrt(4.0 / 3), 1e-12);
    near("t(0.975, df 32/19) between df 1 and df 2", st_t_quantile(0.975, 32.0 / 19) < 12.7062 &&
                                                         st_t_quantile(0.975, 32.0 / 19) > 4.3027, 1, 0);
    near("MDE n 3, sd 1 = (t.975,2 + t.8,2)/sqrt 3", st_mde(3, 1), (4.3027 + 1.0607) / sqrt(3.0), 5e-4);
    near("MDE n 1 is NaN", st_mde(1, 1), NAN, 0);
    /* seeds that would detect an effect: the smallest n whose MDE is at most it, by the definition */
    for (int n = 3; n <= 40; n += 7) {
        const double eff = st_mde(n, 0.01) * (1 + 1e-9);
        near("seeds for the MDE of n seeds is n", st_seeds_for(0.01, NAN, eff, 1000), n, 0);
        near("one seed fewer does not reach it", st_mde(n - 1, 0.01) > eff, 1, 0);
    }
    near("seeds for sd 0.0047, effect 0.01 (paired): 4 (MDE 0.0098; 3 give 0.0146)", st_seeds_for(0.0047, NAN, 0.01, 1000), 4, 0);
    near("seeds beyond the cap: max + 1", st_seeds_for(1, NAN, 1e-4, 50), 51, 0);
    near("seeds for a zero effect: -1", st_seeds_for(1, NAN, 0, 50), -1, 0);
    near("seeds for a NaN sd: -1", st_seeds_for(NAN, NAN, 0.01, 50), -1, 0);
    /* Welch, equal n: se = sqrt((sa^2 + sb^2)/n), df 2n - 2 */
    const int wn = st_seeds_for(0.01, 0.02, 0.03, 1000);
    const double wmde = (st_t_quantile(0.975, 2.0 * wn - 2) + st_t_quantile(0.8, 2.0 * wn - 2)) * sqrt(5e-4 / wn),
                 wprev = (st_t_quantile(0.975, 2.0 * wn - 4) + st_t_quantile(0.8, 2.0 * wn - 4)) * sqrt(5e-4 / (wn - 1));
    near("Welch seeds: its MDE reaches the effect, one fewer does not", wmde <= 0.03 && wprev > 0.03, 1, 0);

    const double cx[4] = {1, 2, 3, 4};
    const int cl[4] = {7, 7, 9, 9};
    near("cluster se: sqrt(2 * 8) / 4 = 1", st_cluster_se(cx, cl, 4), 1, 1e-12);
    const int one_cl[4] = {1, 1, 1, 1};
    near("cluster se: one cluster is NaN", st_cluster_se(cx, one_cl, 4), NAN, 0);
    /* the same against its definition Σ_g (Σ_{i∈g} (x_i − mean))², labels interleaved and a NaN skipped */
    const double dx[7] = {0.3, 2.5, NAN, 1.1, -0.7, 4.0, 0.9};
    const int dl[7] = {2, 5, 5, 2, 8, 5, 8};
    const double dm = (0.3 + 2.5 + 1.1 - 0.7 + 4.0 + 0.9) / 6, e2 = 0.3 + 1.1 - 2 * dm, e5 = 2.5 + 4.0 - 2 * dm,
                 e8 = -0.7 + 0.9 - 2 * dm;
    near("cluster se: 3 interleaved clusters, a NaN", st_cluster_se(dx, dl, 7),
         sqrt(1.5 * (e2 * e2 + e5 * e5 + e8 * e8)) / 6, 1e-12);

    /* eval_cluster_se: y = (3, 5, 10), w = (1, 2, 3): R = 3, residuals y − R·w = (0, −1, 1),
     * SE = sqrt(3/2 · 2) / 6; a weightless cluster is not a cluster; paired: y − yb the same sums */
    const double ey[4] = {3, 0, 5, 10}, ew[4] = {1, 0, 2, 3}, ea[4] = {4, 0, 6, 12}, eb[4] = {1, 0, 1, 2};
    near("eval_cluster_se: sqrt(3) / 6", eval_cluster_se(ey, NULL, ew, 4), sqrt(3.0) / 6, 1e-15);
    near("eval_cluster_se: paired (y − yb) the same", eval_cluster_se(ea, eb, ew, 4), sqrt(3.0) / 6, 1e-15);
    near("eval_cluster_se: a ratio mean with equal residuals is 0", eval_cluster_se(ew, NULL, ew, 4), 0, 0);
    near("eval_cluster_se: one cluster with weight is NaN", eval_cluster_se(ey, NULL, ew, 2), NAN, 0);
    /* eval_cluster_add folds batch b into cluster b mod n: batches 0..4 into 2 clusters */
    double fy[2] = {0, 0}, fw[2] = {0, 0};
    for (long b = 0; b < 5; b++) eval_cluster_add(fy, fw, 2, b, (double)(b + 1), 10.0);
    near("eval_cluster_add: cluster 0 = batches 0, 2, 4", fy[0] + fw[0], 1 + 3 + 5 + 30.0, 0);
    near("eval_cluster_add: cluster 1 = batches 1, 3", fy[1] + fw[1], 2 + 4 + 20.0, 0);

    double g1[4] = {0, 1, 0, 0}, g2[4] = {1, 1, 1, 1};
    near("Gini {0,0,0,1} = 3/4", st_gini(g1, 4), 0.75, 1e-12);
    near("Gini {1,1,1,1} = 0", st_gini(g2, 4), 0, 1e-12);

    double q[4] = {4, 1, 3, 2};
    near("quantile 0.25 of {1..4} = 1.75", st_quantile(q, 4, 0.25), 1.75, 1e-12);
    near("quantile 0.5 of {1..4} = 2.5", st_quantile(q, 4, 0.5), 2.5, 1e-12);
    /* the sorted form (serve's gate quantiles, gate bands, difficulty's interval): st_sort once, then each q */
    double qs[5] = {8, 1, 4, 2, NAN};
    st_sort(qs, 4);
    near("st_sort: ascending", qs[0] == 1 && qs[1] == 2 && qs[2] == 4 && qs[3] == 8, 1, 0);
    near("quantile_sorted 0.25 of {1,2,4,8} = 1.75", st_quantile_sorted(qs, 4, 0.25), 1.75, 0);
    near("quantile_sorted 0.9 of {1,2,4,8} = 6.8", st_quantile_sorted(qs, 4, 0.9), 6.8, 1e-15);
    near("quantile_sorted 1 = the largest", st_quantile_sorted(qs, 4, 1.0), 8, 0);
    near("quantile_sorted 0 = the smallest", st_quantile_sorted(qs, 4, 0.0), 1, 0);
    near("quantile_sorted of one value", st_quantile_sorted(qs, 1, 0.95), 1, 0);
    near("quantile_sorted of none is NaN", st_quantile_sorted(qs, 0, 0.5), NAN, 0);

    const double bx[6] = {1, 2, 3, 4, 5, 6};
    double lo1, hi1, lo2, hi2, lo3, hi3;
    st_bootstrap_mean(bx, 6, 2000, 42, 0.95, &lo1, &hi1);
    st_bootstrap_mean(bx, 6, 2000, 42, 0.95, &lo2, &hi2);
    near("bootstrap: same seed, same lo", lo2, lo1, 0);
    near("bootstrap: same seed, same hi", hi2, hi1, 0);
    near("bootstrap: lo below the mean 3.5", lo1 < 3.5, 1, 0);
    near("bootstrap: hi above the mean 3.5", hi1 > 3.5, 1, 0);
    near("bootstrap: lo within the data range", lo1 >= 1 && hi1 <= 6, 1, 0);
    const double cst[3] = {2, 2, 2};
    st_bootstrap_mean(cst, 3, 100, 1, 0.95, &lo3, &hi3);
    near("bootstrap of a constant: lo", lo3, 2, 0);
    near("bootstrap of a constant: hi", hi3, 2, 0);

    printf("%s: %d failure%s\n", fails ? "FAIL" : "ok", fails, fails == 1 ? "" : "s");
    if (fails) printf("[  FAILED  ] %d check(s), listed above.\n", fails);
    else printf("[  PASSED  ] %d check(s).\n", checks);
    return fails ? 1 : 0;
}
