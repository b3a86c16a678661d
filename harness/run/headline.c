/*
 * headline.c — record whole-split evaluations as a run's headline metrics
 * (headline.h lists the rows).  The evaluation itself is evaluate.c's; this
 * file only names the numbers (store/metric.h, final.*, hard.*, hard_paper.* and matched.*), stamps
 * each with what it was measured on (split, windows, tokens: gl_prov; the
 * checkpoint step is the row's step) and writes them in one registry
 * transaction.
 */
#include "headline.h"

#include <math.h>
#include <stdio.h>

#include "store/metric.h"

#define HL_MAX_ROWS 16

typedef struct {
    gl_metric rows[HL_MAX_ROWS];
    metric_key keys[HL_MAX_ROWS];
    int n, bad;
    long step;
    const char *split, *kind;
    gl_prov prov;
} hl_rows;

static void hl_add(hl_rows *h, const char *quantity, double v, double se) {
    if (h->n >= HL_MAX_ROWS || metric_headline(&h->keys[h->n], h->kind, quantity)) {
        h->bad = 1;
        return;
    }
    gl_metric *g = &h->rows[h->n];
    g->step = h->step;
    g->split = h->split;
    g->name = h->keys[h->n].name;
    g->params = h->keys[h->n].params;
    g->value = v;
    g->wall_time = 0;
    g->prov = h->prov;
    g->se = se;
    h->n++;
}

static void hl_init(hl_rows *h, const char *kind, long step, const char *split_name, const gl_eval_result *r) {
    h->n = h->bad = 0;
    h->kind = kind;
    h->step = step;
    h->split = split_name;
    h->prov = db_prov(split_name, 0, r->windows, r->tokens);
}

static int hl_write(gl_db *db, const char *run_id, const hl_rows *h, char *err, size_t errlen) {
    if (h->bad) {
        snprintf(err, errlen, "run %s: cannot name the %s.* headline rows", run_id, h->kind);
        return -1;
    }
    return db_metrics_log(db, run_id, h->rows, h->n, err, errlen);
}

/* The quality rows of r under h's kind: loss (with its SE), bpc or the accuracies, α and TLOps saved. */
static void hl_quality(hl_rows *h, const gl_eval_result *r, int is_text, int routed, int n_layer) {
    hl_add(h, "loss", r->loss, r->loss_se);
    hl_add(h, "loss_se", r->loss_se, 0);
    if (is_text) {
        hl_add(h, "bpc", eval_bpc(r), eval_bpc_se(r));
    } else {
        hl_add(h, "token_acc", r->tok_acc, 0);
        hl_add(h, "seq_acc", r->seq_acc, 0);
    }
    if (routed) {
        hl_add(h, "active_frac", r->active_frac, 0);
        hl_add(h, "tlops_saved", eval_tlops_saved(r->active_frac, n_layer), 0);
    }
}

/* The rows of an evaluation with the skipping done, under kind (hard, hard_paper): the quality rows, α
 * (early exit also α in the paper's convention), the pairs really computed, the tokens and windows. */
static int hl_hard(gl_db *db, const char *run_id, const char *kind, long step, const char *split_name,
                   const gl_eval_result *hard, int is_text, int n_layer, char *err, size_t errlen) {
    static hl_rows h;
    hl_init(&h, kind, step, split_name, hard);
    hl_quality(&h, hard, is_text, 1, n_layer);
    if (!isnan(hard->active_frac_paper)) hl_add(&h, "active_frac_paper", hard->active_frac_paper, 0);
    hl_add(&h, "run_frac", hard->run_frac, 0);
    hl_add(&h, "tokens", hard->tokens, 0);
    hl_add(&h, "windows", (double)hard->windows, 0);
    return hl_write(db, run_id, &h, err, errlen);
}

int headline_record(gl_db *db, const char *run_id, long step, const char *split_name, const gl_eval_result *r,
                    const gl_eval_result *hard, int is_text, int routed, int n_layer, char *err, size_t errlen) {
    static hl_rows h;
    hl_init(&h, METRIC_FINAL, step, split_name, r);
    hl_quality(&h, r, is_text, routed, n_layer);
    if (!isnan(r->p_mid_share)) hl_add(&h, "p_mid_share", r->p_mid_share, 0);
    hl_add(&h, "tokens", r->tokens, 0);
    hl_add(&h, "windows", (double)r->windows, 0);
    int rc = hl_write(db, run_id, &h, err, errlen);
    if (rc || !hard) return rc;
    if (hard->windows != r->windows || hard->tokens != r->tokens) {
        snprintf(err, errlen, "run %s: the hard evaluation read %ld windows (%.0f tokens), the soft one %ld (%.0f): "
                              "not one token set", run_id, hard->windows, hard->tokens, r->windows, r->tokens);
        return -1;
    }
    return hl_hard(db, run_id, METRIC_HARD, step, split_name, hard, is_text, n_layer, err, errlen);
}

int headline_record_hard_paper(gl_db *db, const char *run_id, long step, const char *split_name,
                               const gl_eval_result *hard_paper, int is_text, int n_layer, char *err, size_t errlen) {
    return hl_hard(db, run_id, METRIC_HARD_PAPER, step, split_name, hard_paper, is_text, n_layer, err, errlen);
}

int headline_measure(gl_model *m, const gl_dataset *ds, gl_split split, gl_eval_result *r, gl_eval_result *hard,
                     int *have_hard, char *err, size_t errlen) {
    *have_hard = 0;
    if (eval_split(m, ds, split, 0, r, err, errlen)) return -1;
    if (!eval_has_hard(m)) return 0;
    if (eval_split_hard(m, ds, split, 0, hard, err, errlen)) return -1;
    *have_hard = 1;
    return 0;
}

int headline_record_matched(gl_db *db, const char *run_id, long step, const char *split_name, double tau,
                            double alpha_target, double partner_loss, const gl_eval_result *r, int n_layer, char *err,
                            size_t errlen) {
    static hl_rows h;
    hl_init(&h, METRIC_MATCHED, step, split_name, r);
    hl_add(&h, "tau", tau, 0);
    hl_add(&h, "alpha_target", alpha_target, 0);
    hl_add(&h, "active_frac", r->active_frac, 0);
    if (!isnan(r->active_frac_paper)) hl_add(&h, "active_frac_paper", r->active_frac_paper, 0);
    hl_add(&h, "tlops_saved", eval_tlops_saved(r->active_frac, n_layer), 0);
    hl_add(&h, "loss", r->loss, r->loss_se);
    hl_add(&h, "loss_se", r->loss_se, 0);
    hl_add(&h, "tokens", r->tokens, 0);
    if (!isnan(partner_loss)) hl_add(&h, "partner_loss", partner_loss, 0);
    return hl_write(db, run_id, &h, err, errlen);
}

int headline_record_matched_paper(gl_db *db, const char *run_id, long step, const char *split_name, double tau,
                                  double alpha_target, const gl_eval_result *r, const gl_eval_result *protocol,
                                  int n_layer, char *err, size_t errlen) {
    static hl_rows h;
    hl_init(&h, METRIC_MATCHED_PAPER, step, split_name, r);
    hl_add(&h, "tau", tau, 0);
    hl_add(&h, "alpha_target", alpha_target, 0);
    hl_add(&h, "active_frac_paper", r->active_frac_paper, 0);
    hl_add(&h, "tlops_saved_paper", eval_tlops_saved(r->active_frac_paper, n_layer), 0);
    hl_add(&h, "active_frac", r->active_frac, 0);
    hl_add(&h, "tlops_saved", eval_tlops_saved(r->active_frac, n_layer), 0);
    hl_add(&h, "run_frac", r->run_frac, 0);
    hl_add(&h, "loss", r->loss, r->loss_se);
    hl_add(&h, "loss_se", r->loss_se, 0);
    hl_add(&h, "tokens", r->tokens, 0);
    hl_add(&h, "windows", (double)r->windows, 0);
    /* the official reading, stamped with its own provenance: the windows drawn */
    h.prov = db_prov(split_name, 0, protocol->windows, protocol->tokens);
    hl_add(&h, "protocol_loss", protocol->loss, protocol->loss_se);
    hl_add(&h, "protocol_active_frac_paper", protocol->active_frac_paper, 0);
    hl_add(&h, "protocol_tokens", protocol->tokens, 0);
    hl_add(&h, "protocol_windows", (double)protocol->windows, 0);
    return hl_write(db, run_id, &h, err, errlen);
}
