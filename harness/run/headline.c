/*
 * headline.c — record whole-split evaluations as a run's headline metrics
 * (headline.h lists the rows).  The evaluation itself is evaluate.c's; this
 * file only names the numbers and writes them in one registry transaction.
 */
#include "headline.h"

#include <math.h>
#include <stdio.h>

#define HL_MAX_ROWS 16

typedef struct {
    gl_metric rows[HL_MAX_ROWS];
    int n;
} hl_rows;

static void hl_add(hl_rows *h, long step, const char *split, const char *name, double v) {
    if (h->n < HL_MAX_ROWS) h->rows[h->n++] = (gl_metric){step, split, name, v, 0.0};
}

int headline_record(gl_db *db, const char *run_id, long step, const char *split_name, const gl_eval_result *r,
                    int is_text, int routed, int n_layer, char *err, size_t errlen) {
    hl_rows h = {.n = 0};
    hl_add(&h, step, split_name, "final.loss", r->loss);
    hl_add(&h, step, split_name, "final.loss_se", r->loss_se);
    if (is_text) {
        hl_add(&h, step, split_name, "final.bpc", r->loss / log(2.0));
    } else {
        hl_add(&h, step, split_name, "final.token_acc", r->tok_acc);
        hl_add(&h, step, split_name, "final.seq_acc", r->seq_acc);
    }
    if (routed) {
        hl_add(&h, step, split_name, "final.active_frac", r->active_frac);
        hl_add(&h, step, split_name, "final.tlops_saved", eval_tlops_saved(r->active_frac, n_layer));
    }
    hl_add(&h, step, split_name, "final.tokens", r->tokens);
    hl_add(&h, step, split_name, "final.windows", (double)r->windows);
    return db_metrics_log(db, run_id, h.rows, h.n, err, errlen);
}

int headline_record_matched(gl_db *db, const char *run_id, long step, const char *split_name, double tau,
                            double alpha_target, const gl_eval_result *r, int n_layer, char *err, size_t errlen) {
    hl_rows h = {.n = 0};
    hl_add(&h, step, split_name, "matched.tau", tau);
    hl_add(&h, step, split_name, "matched.alpha_target", alpha_target);
    hl_add(&h, step, split_name, "matched.active_frac", r->active_frac);
    hl_add(&h, step, split_name, "matched.tlops_saved", eval_tlops_saved(r->active_frac, n_layer));
    hl_add(&h, step, split_name, "matched.loss", r->loss);
    hl_add(&h, step, split_name, "matched.loss_se", r->loss_se);
    hl_add(&h, step, split_name, "matched.tokens", r->tokens);
    return db_metrics_log(db, run_id, h.rows, h.n, err, errlen);
}
