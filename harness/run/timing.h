/*
 * timing.h — the one wall clock of the run layer: seconds on the monotonic
 * clock, for durations (steps/s, evaluation time, trace and BPE time).
 *
 * It lives in harness/run/ because only the run layer measures how long
 * things take; model/ is pure computation and never reads a clock, and the
 * store's timestamps (registry.c) are calendar time (CLOCK_REALTIME), a
 * different quantity.  Not for timestamps: the monotonic clock has no epoch.
 */
#ifndef GATELAB_HARNESS_RUN_TIMING_H
#define GATELAB_HARNESS_RUN_TIMING_H

#include <time.h>

/* Seconds since an arbitrary fixed point; only differences mean anything. */
static inline double timing_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

#endif
