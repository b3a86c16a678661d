/*
 * probe.h — `gatelab probe`: one forward of a trained model on any token
 * sequence, kept as an activation cache (store/probecache.h):
 *
 *   every gate of the gate table (model/gatekind.h) at its trace path, e.g.
 *     /sat/alpha (layer, token, kv_head), /tsa/p (router, token),
 *     /exit/confidence (layer, token), /resformer/lambda (layer, coef)
 *   /resid/norm  (layer, token)  ‖h‖₂ of the residual stream block n hands on
 *                (the stream block n+1 reads; the last block's: the final one)
 *   /v1/share    (layer, token, kv_head)  ‖g·V1‖ / ‖v + g·V1‖ per KV head, for
 *                the per-head value-residual gate g (GABL_HEAD rows of the gate
 *                table: SATFormer α, the static head gate); NaN where a block
 *                has no such gate
 *   /lens/kl, /lens/top1, /lens/loss  (layer, token)  the logit lens: block n's
 *                stream through the final norm and head; KL(final ‖ lens) in nats,
 *                1 when its argmax is the final head's, −log p_lens(next token)
 *                in nats (NaN for the last token, which has no next)
 *   /attn/probs  (layer, head, token, key)  with attention: each token's
 *                attention over the keys of its window (key = position in it)
 *
 * The text is cut into windows of seq_len tokens (the last one shorter), each
 * one forward with B = 1, the targets the next token of the text (so the last
 * position of a window is scored on the first token of the next).  The model
 * runs as it was trained (soft TSA routing, every exit head computed), with
 * whatever overrides the caller set (e.g. a gate zeroed).
 */
#ifndef GATELAB_ANALYSIS_MEASURE_PROBE_H
#define GATELAB_ANALYSIS_MEASURE_PROBE_H

#include <stddef.h>

#include "model/model.h"
#include "store/probecache.h"

/* Most floats /attn/probs may hold (L·H·P·T): 2^26, 256 MiB. */
#define PROBE_ATTN_MAX (1L << 26)

/* Run m over ids (n >= 1 tokens) and fill pc's arrays, tokens, targets, loss
 * and sizes (not the vocabulary, run_id or source: the caller's).  sliding 0:
 * windows [kT, kT + T) as above; 1: as `gatelab sample` reads its context —
 * the first T tokens in one window, then each later token i as the last
 * position of the window ending at i (one forward per token).  Returns 0, or
 * -1 with a message (out of memory, attention too large). */
int probe_run(gl_model *m, const int *ids, long n, int attention, int sliding, gl_probecache *pc, char *err,
              size_t errlen);

/* The probe page: pc's text coloured by every array with one token axis, one
 * <details> view per row / column of its other axes (only arrays whose path
 * starts with `only` when not NULL), values on hover.  Returns the views
 * written, or -1 with a message. */
int probe_html(const gl_probecache *pc, const char *out_path, const char *only, int max_chars, char *err,
               size_t errlen);

#endif
