/*
 * catsens.h — token-category sensitivity: means of a per-token quantity (a
 * gate α, a halting probability p, a loss difference) split by the category
 * of each token — structural, functional, semantic (harness/store/categories.h).
 * Nothing here allocates, prints or does I/O.
 */
#ifndef GATELAB_ANALYSIS_CORE_CATSENS_H
#define GATELAB_ANALYSIS_CORE_CATSENS_H

#include <stdint.h>

#include "store/categories.h"

/* For tokens t = 0..n−1 with value x[t·stride] and category cat[t]
 * (CAT_STRUCTURAL..CAT_SEMANTIC; other codes are ignored): mean[c] and
 * count[c] per category (mean NaN when count is 0).  Returns the number of
 * tokens counted. */
long catsens_means(const float *x, long n, long stride, const uint8_t *cat, double mean[CAT_COUNT],
                   long count[CAT_COUNT]);

/* The same with a weight per token (w[t] = 0 leaves the token out; e.g. a
 * loss mask): mean[c] = Σ w·x / Σ w, wsum[c] = Σ w. */
void catsens_weighted(const float *x, const float *w, long n, const uint8_t *cat, double mean[CAT_COUNT],
                      double wsum[CAT_COUNT]);

#endif
