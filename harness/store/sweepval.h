/*
 * sweepval.h — the value of a sweep axis, as written in a manifest's [sweep]
 * section or on the `gatelab sweep` command line, turned into a comma list:
 *
 *   0, 0.01, 0.1              a list (kept as written)
 *   choice(none, resformer)   the same list, spelled as in Hydra's sweeper
 *   range(1, 4)               1, 2, 3         (start, stop: stop excluded, as in Python and Hydra)
 *   range(0, 0.1, 0.025)      0, 0.025, 0.05, 0.075
 *   range(10, 0, -5)          10, 5
 *
 * range items are start + i·step (never an accumulated sum), printed with 10
 * significant digits, so 0.1 stays 0.1; when start, stop and step are all
 * integers the items are integers.  An empty range, a zero step, or more
 * than max items is an error.  Nothing here knows which keys exist: the
 * manifest parser checks every item for its key afterwards.
 * Where things live: the expansion in sweepval.c; the [sweep] section in
 * manifest.c; running the grid in harness/run/sweep.c.
 */
#ifndef GATELAB_STORE_SWEEPVAL_H
#define GATELAB_STORE_SWEEPVAL_H

#include <stddef.h>

/* Expand value into out (n bytes) as "a, b, c".  0, or -1 with a short
 * reason in why ("range(0, 1, 0): the step is 0"). */
int sweepval_expand(const char *value, int max_items, char *out, size_t n, char *why, size_t whylen);

#endif
