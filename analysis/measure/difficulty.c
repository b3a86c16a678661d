/*
 * difficulty.c — per-token depth of a TSA run against the paired dense run's
 * per-token loss: Spearman's ρ with a bootstrap interval over windows
 * (difficulty.h states the method).
 *
 * The resamples never re-sort: a window drawn c times gives each of its
 * tokens the weight c, and the average rank of a tie group in the resampled
 * multiset is (weight before the group) + (group weight + 1) / 2, read off
 * the one sort of each variable made at the start.  That is exactly the
 * rank the expanded multiset would give (the test checks it against an
 * expand-and-sort reference), at O(n) per resample.
 *
 * Not here: loading runs or writing the registry (cmd_analyze.c), the
 * pairing rule that names the dense partner (the paper's run set).
 */
#include "analysis/measure/difficulty.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/core/stats.h"
#include "model/rng.h"
#include "store/metric.h"

typedef struct {
    double v;
    long i;
} diff_pair;

static int diff_cmp(const void *a, const void *b) {
    const diff_pair *p = a, *q = b;
    if (p->v < q->v) return -1;
    if (p->v > q->v) return 1;
    return (p->i > q->i) - (p->i < q->i);
}

int diff_order(const double *v, long n, long *o) {
    diff_pair *p = malloc((size_t)(n > 0 ? n : 1) * sizeof *p);
    if (!p) return -1;
    for (long i = 0; i < n; i++) p[i] = (diff_pair){v[i], i};
    qsort(p, (size_t)n, sizeof *p, diff_cmp);
    for (long i = 0; i < n; i++) o[i] = p[i].i;
    free(p);
    return 0;
}

/* Average ranks (1-based) of v in the multiset weighted by w, in sorted order o. */
static void diff_ranks(const double *v, const double *w, const long *o, long n, double *r) {
    double before = 0.0;
    for (long a = 0; a < n;) {
        long b = a;
        double gw = 0.0;
        while (b < n && v[o[b]] == v[o[a]]) gw += w ? w[o[b]] : 1.0, b++;
        const double rank = before + (gw + 1.0) / 2.0;
        for (long k = a; k < b; k++) r[o[k]] = rank;
        before += gw;
        a = b;
    }
}

double diff_spearman(const double *x, const double *y, const double *w, const long *ox, const long *oy, long n,
                     double *rx, double *ry) {
    diff_ranks(x, w, ox, n, rx);
    diff_ranks(y, w, oy, n, ry);
    double sw = 0, sx = 0, sy = 0;
    for (long i = 0; i < n; i++) {
        const double wi = w ? w[i] : 1.0;
        sw += wi;
        sx += wi * rx[i];
        sy += wi * ry[i];
    }
    if (sw < 2) return NAN;
    const double mx = sx / sw, my = sy / sw;
    double cxx = 0, cyy = 0, cxy = 0; /* centred sums: no cancellation at 10^5 tokens */
    for (long i = 0; i < n; i++) {
        const double wi = w ? w[i] : 1.0, dx = rx[i] - mx, dy = ry[i] - my;
        cxx += wi * dx * dx;
        cyy += wi * dy * dy;
        cxy += wi * dx * dy;
    }
    if (!(cxx > 0) || !(cyy > 0)) return NAN;
    return cxy / sqrt(cxx * cyy);
}

long diff_draw(uint64_t seed, long b, long j, long W) {
    /* splitmix64 of a counter, as ablate_resample_source */
    uint64_t z = rng_splitmix_at(seed, (uint64_t)b * (uint64_t)W + (uint64_t)j + 1);
    return (long)(z % (uint64_t)W);
}

int diff_bootstrap(const double *x, const double *y, const long *win, long n, long W, int B, uint64_t seed,
                   diff_result *r, char *err, size_t errlen) {
    r->rho = r->rho_lo = r->rho_hi = NAN;
    r->resamples_used = 0;
    if (n < 2 || W < 1 || B < 1) {
        snprintf(err, errlen, "difficulty: %ld tokens in %ld windows, %d resamples: too few to correlate", n, W, B);
        return -1;
    }
    long *ox = malloc((size_t)n * sizeof *ox), *oy = malloc((size_t)n * sizeof *oy);
    double *rx = malloc((size_t)n * sizeof *rx), *ry = malloc((size_t)n * sizeof *ry);
    double *w = malloc((size_t)n * sizeof *w), *cnt = calloc((size_t)W, sizeof *cnt);
    double *rho = malloc((size_t)B * sizeof *rho);
    int rc = -1;
    if (!ox || !oy || !rx || !ry || !w || !cnt || !rho || diff_order(x, n, ox) || diff_order(y, n, oy)) {
        snprintf(err, errlen, "difficulty: out of memory for %ld tokens", n);
        goto cleanup;
    }
    r->rho = diff_spearman(x, y, NULL, ox, oy, n, rx, ry);
    int used = 0;
    for (int b = 0; b < B; b++) {
        memset(cnt, 0, (size_t)W * sizeof *cnt);
        for (long j = 0; j < W; j++) cnt[diff_draw(seed, b, j, W)] += 1.0;
        for (long i = 0; i < n; i++) w[i] = cnt[win[i]];
        const double v = diff_spearman(x, y, w, ox, oy, n, rx, ry);
        if (!isnan(v)) rho[used++] = v;
    }
    r->resamples_used = used;
    if (used * 2 >= B) { /* an interval only when most resamples define ρ */
        st_sort(rho, used);
        r->rho_lo = st_quantile_sorted(rho, used, 0.025);
        r->rho_hi = st_quantile_sorted(rho, used, 0.975);
    }
    rc = 0;
cleanup:
    free(ox);
    free(oy);
    free(rx);
    free(ry);
    free(w);
    free(cnt);
    free(rho);
    return rc;
}

/* Grow the per-token arrays to hold cap tokens.  Returns 0, or -1. */
static int diff_grow(double **x, double **y, long **win, long cap) {
    double *a = realloc(*x, (size_t)cap * sizeof **x);
    if (a) *x = a;
    double *b = realloc(*y, (size_t)cap * sizeof **y);
    if (b) *y = b;
    long *c = realloc(*win, (size_t)cap * sizeof **win);
    if (c) *win = c;
    return a && b && c ? 0 : -1;
}

int diff_measure(gl_model *tsa, const gl_dataset *ds, gl_model *dense, const gl_dataset *dt, gl_split split,
                 long n_windows, int B, uint64_t seed, diff_result *r, char *err, size_t errlen) {
    memset(r, 0, sizeof *r);
    const gl_model_config *tc = &tsa->cfg, *dc = &dense->cfg;
    if (tc->depth_routing != DR_TSA || dc->depth_routing != DR_NONE) {
        snprintf(err, errlen, "difficulty needs a TSA run and a dense partner (depth_routing none); got depth_routing "
                              "= %s and %s", config_depth_routing_name(tc->depth_routing),
                 config_depth_routing_name(dc->depth_routing));
        return -1;
    }
    const int T = tsa->T, L = tc->n_layer;
    const long avail = data_eval_windows(ds, split);
    if (dense->T != T || data_eval_windows(dt, split) != avail) {
        snprintf(err, errlen, "difficulty: the runs do not read the same windows (seq_len %d and %d, %ld and %ld %s "
                              "windows): the dense partner must have the same data and seq_len",
                 T, dense->T, avail, data_eval_windows(dt, split), data_split_name(split));
        return -1;
    }
    if (avail <= 0) {
        snprintf(err, errlen, "the %s split has no complete window of %d tokens", data_split_name(split), T);
        return -1;
    }
    if (n_windows <= 0 || n_windows > avail) n_windows = avail;
    const int mb = tsa->max_B < dense->max_B ? tsa->max_B : dense->max_B;
    const size_t cap = (size_t)mb * T;
    int *tok = malloc(cap * sizeof *tok), *tg = malloc(cap * sizeof *tg);
    int *tok2 = malloc(cap * sizeof *tok2), *tg2 = malloc(cap * sizeof *tg2);
    float *mask = malloc(cap * sizeof *mask), *mask2 = malloc(cap * sizeof *mask2);
    double *x = NULL, *y = NULL, depth_sum = 0;
    long *win = NULL, n = 0, room = 0;
    int rc = -1;
    const int sparse0 = tsa->sparse;
    if (!tok || !tg || !tok2 || !tg2 || !mask || !mask2) {
        snprintf(err, errlen, "difficulty: out of memory");
        goto cleanup;
    }
    tsa->sparse = 1; /* hard routing: p > 0.5 skips the block for real */
    for (long w0 = 0; w0 < n_windows; w0 += mb) {
        const int want = (int)(n_windows - w0 < mb ? n_windows - w0 : mb);
        const int got = data_eval_batch(ds, split, w0, want, tok, tg, mask);
        const int got2 = data_eval_batch(dt, split, w0, want, tok2, tg2, mask2);
        const size_t N = (size_t)got * T;
        if (got != want || got2 != got || memcmp(tok, tok2, N * sizeof *tok) || memcmp(tg, tg2, N * sizeof *tg) ||
            memcmp(mask, mask2, N * sizeof *mask)) {
            snprintf(err, errlen, "difficulty: the runs' %s windows %ld..%ld hold different tokens: the dense partner "
                                  "must have the same data", data_split_name(split), w0, w0 + want - 1);
            goto cleanup;
        }
        model_forward(tsa, tok, tg, mask, got, T);
        model_forward(dense, tok, tg, mask, got, T);
        if (n + (long)N > room) {
            room = (n + (long)N) * 2;
            if (diff_grow(&x, &y, &win, room)) {
                snprintf(err, errlen, "difficulty: out of memory for %ld tokens", room);
                goto cleanup;
            }
        }
        for (size_t t = 0; t < N; t++) {
            if (mask[t] == 0.0f || tg[t] < 0) continue;
            int depth = 1; /* block 0 always runs */
            for (int l = 1; l < L; l++) depth += tsa->A[l].p[t] <= 0.5f;
            x[n] = depth;
            y[n] = dense->tok_loss[t];
            win[n] = w0 + (long)(t / T);
            depth_sum += depth;
            n++;
        }
    }
    r->windows = n_windows;
    r->tokens = (double)n;
    r->depth_mean = n ? depth_sum / n : NAN;
    if (diff_bootstrap(x, y, win, n, n_windows, B, seed, r, err, errlen)) goto cleanup;
    rc = 0;
cleanup:
    tsa->sparse = sparse0;
    free(tok);
    free(tg);
    free(tok2);
    free(tg2);
    free(mask);
    free(mask2);
    free(x);
    free(y);
    free(win);
    return rc;
}

int diff_metrics(const diff_result *r, const char *partner, uint64_t seed, long step, report_metrics *rm, char *err,
                 size_t errlen) {
    static const char *const q[] = {"rho", "rho_lo", "rho_hi", "windows", "tokens", "depth_mean"};
    const double v[] = {r->rho, r->rho_lo, r->rho_hi, (double)r->windows, r->tokens, r->depth_mean};
    for (int i = 0; i < (int)(sizeof q / sizeof *q); i++) {
        metric_key name;
        if (metric_partner(&name, METRIC_DIFFICULTY, partner, (unsigned long)seed, q[i])) {
            snprintf(err, errlen, "cannot name the difficulty rows against partner '%s' (a run id of letters, digits, "
                                  "'_', '-' and '+')", partner);
            return -1;
        }
        if (report_metric_add(rm, step, "analysis", &name, v[i], err, errlen)) return -1;
    }
    return 0;
}
