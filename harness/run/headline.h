/*
 * headline.h — a run's headline numbers: the evaluation of a whole split (not
 * the few windows a training-time evaluation reads), recorded in the registry
 * with what it was measured on.  Written at the end of training and by
 * `gatelab eval RUN --record` for runs trained before; read by tables and the
 * paper report.
 *
 * Metric rows (split = the evaluated split, step = the checkpoint's step):
 *   final.loss, final.loss_se (nats/token), final.bpc (text), final.token_acc,
 *   final.seq_acc (tasks), final.active_frac, final.tlops_saved (routed
 *   models), final.p_mid_share (TSA: share of (token, router) p in
 *   (0.3, 0.7)), final.tokens, final.windows — the provenance of the numbers
 *   (final.* is the model as trained: TSA's soft model runs every block);
 *   hard.{loss,loss_se,bpc | token_acc,seq_acc, active_frac, tlops_saved,
 *   run_frac, tokens, windows} (early exit also active_frac_paper) — routed models, the same split with the
 *   skipping done (evaluate.h eval_split_hard: TSA p > 0.5 skips, early exit
 *   at τ 0.5); run_frac is the share of (token, block >= 1) pairs whose
 *   block was really computed, which equals hard.active_frac;
 *   hard_paper.{the same quantities as hard.*} — TSA, the same split and
 *   windows skipped in the TSA paper's sparse form (model.h SPARSE_PAPER:
 *   p >= 0.5 halts, attention for every token, the FFN on the kept tokens,
 *   a kept token's update unscaled; `eval --sparse=paper --record`, `paper
 *   post`); hard.* stays gatelab's form;
 *   matched.{tau,alpha_target,active_frac,tlops_saved,loss,loss_se,tokens,
 *   partner_loss} — early exit at the τ whose α matches alpha_target (the α
 *   of the TSA run it is compared with, whose loss is partner_loss) on the
 *   same whole split; matched.active_frac_paper is its α in the TSA paper's
 *   convention, (1 + mean post-stem blocks run)/L;
 *   matched_paper.{tau,alpha_target,active_frac_paper,tlops_saved_paper,
 *   active_frac,tlops_saved,run_frac,loss,loss_se,tokens,windows} — early exit
 *   at the τ the TSA paper's protocol chose (`eval --tau-protocol paper`: the
 *   13 thresholds on 30 random batches, α_paper nearest alpha_target;
 *   run/evaluate.h eval_match_paper), then exiting for real at that τ on the
 *   whole split (the tokens of the TSA run's hard.* and hard_paper.*: a paired
 *   comparison); tlops_saved_paper is the official script's ops saved,
 *   (1 − α_paper)(L − 1)/L; matched_paper.protocol_{loss,active_frac_paper,
 *   tokens,windows} — the chosen threshold on the protocol's random batches,
 *   the official script's own reading (the provenance counts the windows
 *   drawn);
 * Every row carries its provenance (store/registry.h gl_prov: the split,
 * windows [0, r->windows) and r->tokens scored); final.loss, final.bpc and
 * matched.loss carry their standard error.  Names: store/metric.h.
 */
#ifndef GATELAB_RUN_HEADLINE_H
#define GATELAB_RUN_HEADLINE_H

#include <stddef.h>

#include "run/evaluate.h"
#include "store/registry.h"

/* Record r (an evaluation of the whole split called split_name, e.g. "val")
 * as run_id's headline at step.  is_text: write bpc (else the accuracies);
 * n_layer > 0 and a routed model: write α and TLOps saved.  hard (NULL:
 * none) is the same split evaluated with the skipping done, written as
 * hard.*; it must have read the same windows and tokens as r. */
int headline_record(gl_db *db, const char *run_id, long step, const char *split_name, const gl_eval_result *r,
                    const gl_eval_result *hard, int is_text, int routed, int n_layer, char *err, size_t errlen);

/* Record hard_paper (the whole split called split_name evaluated with the
 * skipping done in the TSA paper's sparse form) as run_id's hard_paper.*
 * rows at step: the quantities of hard.*.  The caller checks that it read
 * the windows and tokens of the headline.  Returns 0, or -1 with a message. */
int headline_record_hard_paper(gl_db *db, const char *run_id, long step, const char *split_name,
                               const gl_eval_result *hard_paper, int is_text, int n_layer, char *err, size_t errlen);

/* Evaluate the whole split of m soft (r) and, for a routed model, hard
 * (*hard, *have_hard = 1; else 0) — what headline_record takes.  Returns 0,
 * or -1 with a message. */
int headline_measure(gl_model *m, const gl_dataset *ds, gl_split split, gl_eval_result *r, gl_eval_result *hard,
                     int *have_hard, char *err, size_t errlen);

/* Record an early-exit evaluation r on the whole split at the threshold tau the TSA paper's protocol chose
 * for alpha_target (α_paper of the TSA run), and that threshold's evaluation on the protocol's random batches
 * (protocol), as run_id's matched_paper.* rows, in one transaction.  Returns 0, or -1 with a message. */
int headline_record_matched_paper(gl_db *db, const char *run_id, long step, const char *split_name, double tau,
                                  double alpha_target, const gl_eval_result *r, const gl_eval_result *protocol,
                                  int n_layer, char *err, size_t errlen);

/* Record an early-exit evaluation r at threshold tau, searched to match
 * alpha_target, as run_id's matched.* rows; partner_loss is the loss of the
 * run whose α was matched, on the same tokens (NaN: not known, not written). */
int headline_record_matched(gl_db *db, const char *run_id, long step, const char *split_name, double tau,
                            double alpha_target, double partner_loss, const gl_eval_result *r, int n_layer, char *err,
                            size_t errlen);

#endif
