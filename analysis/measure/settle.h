/*
 * settle.h — "had its prediction settled?": for a TSA run, at the point where
 * a token first halts under hard routing (the stream entering the first block
 * its router skips, p > 0.5), and for an early-exit run at its exit block
 * (the first block whose confidence reaches τ), the logit lens — that stream
 * through the final norm and head — against the prediction the token ends
 * with if it goes on: TSA's hard-routed final head (the token resumes at
 * later blocks), early exit's full-depth final head (what the exit cut off).
 *
 *   settled_at_halt   share of halted tokens whose lens top-1 is that final top-1
 *   halted_share      share of tokens that halt before the last block
 *   halt_block_mean   mean block at which they halt (the first skipped block;
 *                     early exit: the exit block + 1, the first block not run)
 *
 * Registry rows (split "analysis", metric_stat names, also by input-token
 * category for text runs are not kept: over all tokens only), measured on
 * validation windows [0, W).  Not here: printing, files.
 */
#ifndef GATELAB_ANALYSIS_MEASURE_SETTLE_H
#define GATELAB_ANALYSIS_MEASURE_SETTLE_H

#include <stddef.h>

#include "model/model.h"
#include "analysis/core/report.h"
#include "store/data.h"

#define SETTLE_TAU 0.5 /* early exit's τ: the headline's hard evaluation (hard.*) */

typedef struct {
    long windows;
    double tokens, halted, settled;
    double block_sum;   /* Σ halting block over halted tokens */
} settle_result;

/* Measure on validation windows [0, windows) (windows <= 0 or more than the
 * split has: min(64, all)) of ds, B = 1 per forward (m->max_B >= 1).  The
 * model's inference settings are restored.  Returns 0, or -1 with a message
 * (not a TSA or early-exit model, no validation window). */
int settle_measure(gl_model *m, const gl_dataset *ds, long windows, settle_result *r, char *err, size_t errlen);

/* Rows settled_at_halt, halted_share, halt_block_mean at step into rm (its prov set here). */
int settle_metrics(const settle_result *r, long step, report_metrics *rm, char *err, size_t errlen);

#endif
