/*
 * gate_bands.h — a gate's distribution over training from a run's trace:
 * per evaluation step and block (or router), quantiles of the gate over the
 * probe tokens and its width (KV heads), for the figure gate_bands.gp.
 */
#ifndef GATELAB_ANALYSIS_MEASURE_GATE_BANDS_H
#define GATELAB_ANALYSIS_MEASURE_GATE_BANDS_H

#include <stddef.h>

#include "store/trace.h"

/* Write path (gate_bands.gp's data: a block per row of g, quantiles
 * 0.05, 0.25, 0.5, 0.75, 0.95 (type 7) and the mean at every step).  A row
 * that is 0 at every step and token is left out (a block without the gate,
 * or one dead throughout).  *rows gets the rows written.  Requires a per-
 * token gate the trace has.  Returns 0, or -1 with a message. */
int gate_bands_write(const gl_trace_data *td, gl_gate g, const char *path, int *rows, char *err, size_t errlen);

#endif
