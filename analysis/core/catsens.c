/*
 * catsens.c — per-category means of a per-token quantity (catsens.h).
 *
 * What it does not do: classify bytes (harness/store/categories.c does, with the
 * rules and word list documented there) or choose which quantity to split.
 * Sums in double precision in token order.
 */
#include "analysis/core/catsens.h"

#include <assert.h>
#include <math.h>

long catsens_means(const float *x, long n, long stride, const uint8_t *cat, double mean[CAT_COUNT],
                   long count[CAT_COUNT]) {
    assert(stride >= 1);
    double sum[CAT_COUNT] = {0};
    long counted = 0;
    for (int c = 0; c < CAT_COUNT; c++) count[c] = 0;
    for (long t = 0; t < n; t++) {
        int c = cat[t];
        if (c >= CAT_COUNT) continue;
        sum[c] += x[t * stride];
        count[c]++;
        counted++;
    }
    for (int c = 0; c < CAT_COUNT; c++) mean[c] = count[c] ? sum[c] / (double)count[c] : NAN;
    return counted;
}

void catsens_weighted(const float *x, const float *w, long n, const uint8_t *cat, double mean[CAT_COUNT],
                      double wsum[CAT_COUNT]) {
    double sum[CAT_COUNT] = {0};
    for (int c = 0; c < CAT_COUNT; c++) wsum[c] = 0.0;
    for (long t = 0; t < n; t++) {
        int c = cat[t];
        if (c >= CAT_COUNT || w[t] == 0.0f) continue;
        sum[c] += (double)w[t] * x[t];
        wsum[c] += w[t];
    }
    for (int c = 0; c < CAT_COUNT; c++) mean[c] = wsum[c] > 0 ? sum[c] / wsum[c] : NAN;
}
