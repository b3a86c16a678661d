/*
 * seeds.h — stability of gates across seeds (`gatelab analyze --seeds
 * RUN1,RUN2,…`): runs of the same configuration but the seed, each run on
 * the same validation windows.
 *
 *   head profile ρ   per pair of runs, Spearman's ρ of their per-head gate
 *                    means (GABL_HEAD rows of the gate table: SATFormer α,
 *                    the static head gate) after sorting the heads within
 *                    each block, largest first, blocks in order: head j of
 *                    one seed is not head j of another (SCIENCE.md), so only
 *                    the sorted profile of each block is compared
 *   halted Jaccard   TSA: per pair, |A ∩ B| / |A ∪ B| of the sets of
 *                    (position, block) pairs the router skips (p > 0.5) under
 *                    hard routing on the same tokens
 *
 * Not here: opening runs, printing (cmd_analyze.c).
 */
#ifndef GATELAB_ANALYSIS_MEASURE_SEEDS_H
#define GATELAB_ANALYSIS_MEASURE_SEEDS_H

#include <stddef.h>

#include "model/model.h"
#include "store/data.h"

typedef struct {
    int n_prof;            /* entries of prof: gated blocks × KV heads (0: no per-head gate) */
    double *prof;          /* (n_prof) per gated block, its heads' gate means sorted largest first */
    long n_pos;            /* positions measured (windows · T) */
    int n_route;           /* routed blocks (L − 1 for TSA, else 0) */
    unsigned char *halted; /* (n_route, n_pos) 1 where block n+1 is skipped (p > 0.5); NULL without routers */
    long windows;
} seeds_run;

/* One run's profile and halted set on validation windows [0, windows) of ds
 * (windows <= 0 or more than the split has: min(64, all)).  Returns 0, or -1
 * with a message.  Free with seeds_run_free. */
int seeds_measure(gl_model *m, const gl_dataset *ds, long windows, seeds_run *r, char *err, size_t errlen);
void seeds_run_free(seeds_run *r);

/* Spearman ρ of two profiles (NaN when the shapes differ or one is constant). */
double seeds_profile_rho(const seeds_run *a, const seeds_run *b);
/* Jaccard overlap of two halted sets (NaN without routers, shapes that differ, or both empty). */
double seeds_jaccard(const seeds_run *a, const seeds_run *b);

#endif
