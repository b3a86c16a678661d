/*
 * dist.c — dist.h without MPI: one rank, and every collective leaves its
 * data as it is (the sum over one rank is that rank's value).  build/gatelab
 * links this file, so a machine without MPI builds, trains and tests exactly
 * as before; build/gatelab-mpi links dist_mpi.c instead.
 */
#include "dist.h"

#include <stdio.h>
#include <string.h>

int dist_init(int *argc, char ***argv, char *err, size_t errlen) {
    (void)argc;
    (void)argv;
    if (errlen) err[0] = '\0';
    return 0;
}

void dist_finalize(void) {}

int dist_rank(void) { return 0; }
int dist_size(void) { return 1; }
const char *dist_kind(void) { return "single"; }

void dist_sum_floats(float *x, size_t n) {
    (void)x;
    (void)n;
}

void dist_sum_doubles(double *x, int n) {
    (void)x;
    (void)n;
}

void dist_max_ints(int *x, int n) {
    (void)x;
    (void)n;
}

void dist_bcast(void *buf, size_t bytes) {
    (void)buf;
    (void)bytes;
}

void dist_gather_text(const char *mine, char *all, size_t each) {
    if (!each) return;
    memset(all, 0, each);
    snprintf(all, each, "%s", mine);
}

void dist_stats(gl_dist_stats *s) { memset(s, 0, sizeof *s); }

int dist_agree_items(const char *const *vals, int n, int *rank, char other[DIST_AGREE_SHOWN]) {
    (void)vals, (void)n, (void)rank, (void)other;
    return -1;
}
