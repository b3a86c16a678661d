/*
 * eval_run.c — `gatelab eval`'s measurement as a library call (eval_run.h):
 * open the run, check the options, evaluate soft / sparse (gatelab's or the
 * TSA paper's form) / hard / early exit, and record the headline.  The loops are run/evaluate.c's, the rows
 * run/headline.c's; the JSON line and the messages about it are the command
 * line's (harness/cli/cmd_eval.c).  Not here: resolving a RUN argument.
 */
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/config.h"
#include "run/eval_run.h"
#include "run/headline.h"
#include "store/fileio.h"
#include "store/rundir.h"

void evalrun_defaults(evalrun_opts *o) {
    memset(o, 0, sizeof *o);
    o->split = SPLIT_VAL;
    o->split_name = "val";
    o->batch = 16;
    o->tau = -1;
    o->match_alpha = -1;
}

/* Bytes per scored target of text windows [0, windows) (targets ids[1 ..
 * windows*T]): what bits per character divides by (1 for a char run). */
static double evalrun_text_bytes(const gl_run *run, const int *ids, long windows, int T) {
    if (run->bpe.V == 0 || windows <= 0) return 1.0;
    double bytes = 0;
    size_t n = (size_t)windows * (size_t)T;
    for (size_t i = 1; i <= n; i++) {
        size_t len;
        run_token(run, ids[i], &len);
        bytes += (double)len;
    }
    return bytes / (double)n;
}

/* Evaluate either the text file's ids or the dataset split. */
static int evalrun_once(gl_run *run, const int *ids, size_t n_ids, const gl_dataset *ds, const evalrun_opts *o,
                        gl_eval_result *r, char *err, size_t errlen) {
    if (ids) {
        if (eval_ids(&run->model, ids, n_ids, o->windows, r, err, errlen)) return -1;
        r->bytes_per_token = evalrun_text_bytes(run, ids, r->windows, run->model.T);
        return 0;
    }
    return eval_split(&run->model, ds, o->split, o->windows, r, err, errlen);
}

/* The bytes of the file at path as the run's token ids (through the run's
 * stored tokenizer): *ids malloc'd (the caller frees it, also on failure),
 * *n_ids of them.  Returns 0, or -1 with a message naming a byte missing
 * from a char run's vocabulary. */
static int evalrun_text_ids(const gl_run *run, const char *text, int **ids_out, size_t *n_ids, char *err,
                            size_t errlen) {
    size_t got;
    unsigned char *bytes = (unsigned char *)fileio_slurp(text, "--text file", 0, &got, err, errlen);
    if (!bytes) return -1; /* no hang on a FIFO: fileio_slurp refuses one */
    int *ids = malloc((got ? got : 1) * sizeof(int));
    *ids_out = ids;
    if (!ids) {
        free(bytes);
        snprintf(err, errlen, "--text %s: out of memory for %zu tokens", text, got);
        return -1;
    }
    char why[512];
    long k = run_encode(run, bytes, got, ids, why, sizeof why);
    free(bytes);
    if (k < 0) {
        snprintf(err, errlen, "%s: %s", text, why);
        return -1;
    }
    *n_ids = (size_t)k;
    return 0;
}

/* The headline α and loss of the partner (a TSA run) on split, from its
 * registry: the target of --match-run, with the provenance of that α.  The
 * hard headline (the skipping done) when recorded, else the soft one: TSA's
 * α as it runs.  Returns 0, or -1 with a message. */
static int evalrun_partner(const evalrun_opts *o, double *alpha, double *loss, gl_prov *prov, char *err,
                           size_t errlen) {
    const char *partner = o->partner.id, *db_path = o->partner.db, *split_name = o->split_name;
    gl_db *db = NULL;
    gl_metric_val a, l;
    int rc = db_open_readonly(&db, db_path, err, errlen), ka = 0, kl = 0;
    if (!rc) ka = db_metric_at(db, partner, split_name, "hard.active_frac", NULL, NULL, &a, err, errlen);
    if (!rc && ka == 1) kl = db_metric_at(db, partner, split_name, "hard.loss", NULL, &a.prov, &l, err, errlen);
    if (!rc && ka >= 0 && kl >= 0 && (ka == 0 || kl == 0 || isnan(a.value))) {
        ka = db_metric_at(db, partner, split_name, "final.active_frac", NULL, NULL, &a, err, errlen);
        kl = 0;
        if (ka == 1) kl = db_metric_at(db, partner, split_name, "final.loss", NULL, &a.prov, &l, err, errlen);
    }
    db_close(db);
    if (rc || ka < 0 || kl < 0) return -1;
    if (ka == 0 || kl == 0 || isnan(a.value)) {
        const char *dir = o->partner.dir && o->partner.dir[0] ? o->partner.dir : partner;
        snprintf(err, errlen, "--match-run %s: that run has no headline α on the %s split in %s; record it with "
                              "`gatelab eval %s --split %s --record` (a TSA run)", partner, split_name, db_path,
                 dir, split_name);
        return -1;
    }
    *alpha = a.value;
    *loss = l.value;
    *prov = a.prov;
    return 0;
}

/* The paper's τ protocol's target from the partner (a TSA run): its α in the paper's convention,
 * train/alpha_paper.mean_evals (the soft α averaged over the evaluation points, as the official Shakespeare
 * run reports it; recorded at the end of a TSA run's training).  Returns 0, or -1 with a message. */
static int evalrun_partner_paper(const evalrun_opts *o, double *alpha, char *err, size_t errlen) {
    gl_db *db = NULL;
    gl_metric_val a;
    int rc = db_open_readonly(&db, o->partner.db, err, errlen), k = 0;
    if (!rc) k = db_metric_at(db, o->partner.id, "train", "alpha_paper.mean_evals", NULL, NULL, &a, err, errlen);
    db_close(db);
    if (rc || k < 0) return -1;
    if (k == 0 || isnan(a.value)) {
        snprintf(err, errlen, "--match-run %s --tau-protocol paper: that run has no train/alpha_paper.mean_evals in %s "
                              "(the TSA paper's α, recorded when a TSA run finishes training); give the target with "
                              "--match-alpha instead", o->partner_arg, o->partner.db);
        return -1;
    }
    *alpha = a.value;
    return 0;
}

/* Check the options against the model (sparse needs TSA, τ early exit) and
 * find the --match-run target: *match (o->match_alpha, or the partner's α),
 * *partner_loss and its provenance.  Returns 0, or -1 with a message. */
static int evalrun_check(const gl_run *run, const evalrun_opts *o, double *match, double *partner_loss,
                         gl_prov *partner_prov, char *err, size_t errlen) {
    const gl_model_config *mc = &run->model.cfg;
    *match = o->match_alpha;
    if (o->sparse && o->sparse_form == SPARSE_PAPER && mc->depth_routing != DR_TSA) {
        snprintf(err, errlen, "--sparse=paper is the TSA paper's skipping, for a TSA model only; run %s has "
                              "depth_routing = %s: nothing to record as hard_paper.* (%s)", o->run.id,
                 config_depth_routing_name(mc->depth_routing),
                 config_routing_sparse(mc) ? "use --sparse" : "drop --sparse");
        return -1;
    }
    if (o->sparse && !config_routing_sparse(mc)) {
        snprintf(err, errlen, "--sparse needs a TSA model (or mod, random); run %s has depth_routing = %s",
                 o->run.id, config_depth_routing_name(mc->depth_routing));
        return -1;
    }
    assert(!o->record_sparse_only || (o->record && o->sparse && o->sparse_form == SPARSE_PAPER));
    if (o->partner_arg && (o->match_alpha >= 0 || o->text || o->windows > 0)) {
        snprintf(err, errlen, "--match-run takes α from the run %s on the whole split: drop --match-alpha, "
                              "--text and --windows", o->partner_arg);
        return -1;
    }
    const int paper = o->tau_protocol == EVALRUN_TAU_PAPER;
    if (paper && (o->tau >= 0 || o->text || o->windows > 0 || (o->match_alpha < 0 && !o->partner_arg))) {
        snprintf(err, errlen, "--tau-protocol paper chooses τ among the paper's %d thresholds for an α on %d random "
                              "batches of the split: give --match-alpha A or --match-run TSA_RUN, and drop --tau, "
                              "--text and --windows", EVAL_PAPER_N_TAUS, EVAL_PAPER_BATCHES);
        return -1;
    }
    if (o->partner_arg && paper && evalrun_partner_paper(o, match, err, errlen)) return -1;
    if (o->partner_arg && !paper && evalrun_partner(o, match, partner_loss, partner_prov, err, errlen)) return -1;
    if ((o->tau >= 0 || *match >= 0) && mc->depth_routing != DR_EARLY_EXIT) {
        snprintf(err, errlen, "--tau and --match-alpha need an early-exit model; run %s has depth_routing = %s",
                 o->run.id, config_depth_routing_name(mc->depth_routing));
        return -1;
    }
    if (*match >= 0 && o->text) {
        snprintf(err, errlen, "--match-alpha searches τ on the run's validation split; drop --text");
        return -1;
    }
    return 0;
}

/* τ matched to r->alpha_target, or o->tau: the early-exit evaluation into
 * r->exit.  Nothing asked is 0 too; -1 with a message. */
static int evalrun_exit(gl_run *run, const evalrun_opts *o, const int *ids, size_t n_ids, const gl_dataset *ds,
                        const gl_prov *partner_prov, evalrun_result *r, char *err, size_t errlen) {
    gl_model *m = &run->model;
    if (r->alpha_target >= 0 && o->tau_protocol == EVALRUN_TAU_PAPER) {
        /* the random batches: train.batch_size windows each, from a generator keyed by the run's seed */
        int best;
        const uint64_t key = rng_mix64(run->mf.train.seed ^ 0x7061706572746175ULL); /* "papertau" */
        if (eval_match_paper(m, ds, o->split, run->mf.train.batch_size, r->alpha_target, key, r->grid, &best, err,
                             errlen))
            return -1;
        /* then that τ exiting for real on the split, on the tokens of the TSA run's headline: the paired
         * comparison's side (grid[best] stays the official script's own reading, on its random batches) */
        r->tau = eval_paper_taus[best];
        r->paper_best = best;
        m->exit_tau = (float)r->tau;
        const int rc = evalrun_once(run, ids, n_ids, ds, o, &r->exit, err, errlen);
        m->exit_tau = 0;
        if (rc) return -1;
        r->have_exit = 3;
    } else if (r->alpha_target >= 0) {
        int mrc = eval_match_alpha(m, ds, o->split, o->windows, r->alpha_target, 0.005, &r->tau, &r->exit, err,
                                   errlen);
        if (mrc < 0) return -1;
        if (o->partner_arg &&
            (r->exit.windows != partner_prov->count || strcmp(partner_prov->split, o->split_name))) {
            char pa[64];
            snprintf(err, errlen, "--match-run %s: its headline was measured on %s, this run's %s split has %ld "
                                  "windows: not one token set, so no matched pair is recorded",
                     o->partner_arg, db_prov_str(partner_prov, pa, sizeof pa), o->split_name, r->exit.windows);
            return -1;
        }
        r->have_exit = 2;
        r->closest_only = mrc > 0;
    } else if (r->tau >= 0) {
        m->exit_tau = (float)r->tau;
        if (evalrun_once(run, ids, n_ids, ds, o, &r->exit, err, errlen)) return -1;
        m->exit_tau = 0;
        r->have_exit = 1;
    }
    return 0;
}

/* The passes on an opened run: soft, then sparse or hard, then early exit. */
static int evalrun_passes(gl_run *run, const evalrun_opts *o, const int *ids, size_t n_ids, const gl_dataset *ds,
                          const gl_prov *partner_prov, evalrun_result *r, char *err, size_t errlen) {
    gl_model *m = &run->model;
    const gl_model_config *mc = &m->cfg;
    if (evalrun_once(run, ids, n_ids, ds, o, &r->soft, err, errlen)) return -1;
    r->counts = config_routing_counts(mc);
    if (r->counts) r->equal_tlops_layers = config_equal_tlops_layers(mc->n_layer, r->soft.active_frac);
    const int paper_form = o->sparse && o->sparse_form == SPARSE_PAPER;
    /* the headline's hard.* is gatelab's form: measured beside the paper's, never replaced by it */
    const int want_hard = o->record && !o->record_sparse_only && eval_has_hard(m);
    if (o->sparse) {
        m->sparse = 1;
        m->sparse_form = paper_form ? SPARSE_PAPER : SPARSE_GATELAB;
        const int rc = evalrun_once(run, ids, n_ids, ds, o, paper_form ? &r->paper_sparse : &r->hard, err, errlen);
        m->sparse = 0;
        m->sparse_form = SPARSE_GATELAB;
        if (rc) return -1;
        r->have_sparse = 1;
        r->have_paper_sparse = paper_form;
    }
    if (want_hard && !(o->sparse && !paper_form)) {
        /* the headline's hard.* rows: the whole split with the skipping done (evaluate.h eval_split_hard) */
        if (eval_split_hard(m, ds, o->split, 0, &r->hard, err, errlen)) return -1;
    }
    r->have_hard = want_hard;
    return evalrun_exit(run, o, ids, n_ids, ds, partner_prov, r, err, errlen);
}

int evalrun_measure(const evalrun_opts *o, evalrun_result *r, char *err, size_t errlen) {
    memset(r, 0, sizeof *r);
    r->tau = o->tau;
    r->partner_loss = NAN;
    gl_run *run = calloc(1, sizeof *run); /* large: the model and its buffers' pointers */
    gl_dataset ds;
    memset(&ds, 0, sizeof ds);
    gl_prov partner_prov;
    memset(&partner_prov, 0, sizeof partner_prov);
    int rc = -1, *ids = NULL;
    size_t n_ids = 0;
    if (!run) {
        snprintf(err, errlen, "out of memory opening run %s", o->run.id);
        return -1;
    }
    if (run_open(run, o->run.dir, NULL, o->batch, err, errlen) ||
        evalrun_check(run, o, &r->alpha_target, &r->partner_loss, &partner_prov, err, errlen))
        goto cleanup;
    const gl_model_config *mc = &run->model.cfg;
    if (o->text) {
        if (evalrun_text_ids(run, o->text, &ids, &n_ids, err, errlen)) goto cleanup;
    } else if (data_open_tok(&ds, &run->mf.data, mc->seq_len, run->mf.train.seed,
                             run->st.tokenizer == TOK_BPE ? &run->st.bpe : NULL, err, errlen)) {
        goto cleanup;
    } else if (run->st.tokenizer == TOK_UTF8 &&
               (!ds.u8v || ds.u8v->V != run->st.utf8.V ||
                memcmp(ds.u8v->cp, run->st.utf8.cp, (size_t)run->st.utf8.V * sizeof *run->st.utf8.cp))) {
        /* the characters are the file's: another file (or an edited one) gives other ids */
        snprintf(err, errlen, "run %s was trained on the %d characters of data.file %s; the file there now has %d: "
                 "evaluate on the file the run was trained on", o->run.id, run->st.utf8.V, run->mf.data.file,
                 ds.u8v ? ds.u8v->V : 0);
        goto cleanup;
    }
    snprintf(r->id, sizeof r->id, "%s", o->run.id);
    snprintf(r->dir, sizeof r->dir, "%s", run->dir);
    r->step = run->st.step;
    r->is_text = run->mf.data.task == TASK_TEXT;
    r->n_layer = mc->n_layer;
    r->seq_len = mc->seq_len;
    r->routed = mc->depth_routing != DR_NONE;
    rc = evalrun_passes(run, o, ids, n_ids, &ds, &partner_prov, r, err, errlen);
cleanup:
    free(ids);
    data_close(&ds);
    run_close(run);
    free(run);
    return rc;
}

/* The paper's sparse form as hard_paper.*, on the windows and tokens of the headline: the soft pass of
 * this evaluation, and under record_sparse_only (the headline not written again) the recorded hard.*
 * too.  Returns 0, or -1 with a message. */
static int evalrun_record_paper(gl_db *db, const evalrun_opts *o, const evalrun_result *r, char *err,
                                size_t errlen) {
    const gl_eval_result *p = &r->paper_sparse;
    if (p->windows != r->soft.windows || p->tokens != r->soft.tokens) {
        snprintf(err, errlen, "run %s: the paper-form sparse evaluation read %ld windows (%.0f tokens), the soft one "
                              "%ld (%.0f): not one token set", o->run.id, p->windows, p->tokens, r->soft.windows,
                 r->soft.tokens);
        return -1;
    }
    if (o->record_sparse_only) {
        gl_metric_val h;
        const int k = db_metric_at(db, o->run.id, o->split_name, "hard.loss", NULL, NULL, &h, err, errlen);
        if (k < 0) return -1;
        if (k == 0 || h.step != r->step || h.prov.first != 0 || h.prov.count != p->windows ||
            h.prov.tokens != p->tokens) {
            char pa[64];
            snprintf(err, errlen, "run %s: its recorded hard.* (%s, step %ld) is not on the checkpoint and windows the "
                                  "paper-form pass read (%s[0,%ld) %.0f tok, step %ld): record both with `gatelab eval "
                                  "%s --sparse=paper --record`", o->run.id, k ? db_prov_str(&h.prov, pa, sizeof pa) : "none",
                     k ? h.step : -1L, o->split_name, p->windows, p->tokens, r->step, o->run.id);
            return -1;
        }
    }
    return headline_record_hard_paper(db, o->run.id, r->step, o->split_name, p, r->is_text, r->n_layer, err,
                                      errlen);
}

int evalrun_record(const evalrun_opts *o, const evalrun_result *r, char *err, size_t errlen) {
    gl_db *db = NULL;
    int rc = db_open(&db, o->run.db, err, errlen);
    if (!rc && !o->record_sparse_only)
        rc = headline_record(db, o->run.id, r->step, o->split_name, &r->soft, r->have_hard ? &r->hard : NULL,
                             r->is_text, r->routed, r->n_layer, err, errlen);
    if (!rc && r->have_paper_sparse) rc = evalrun_record_paper(db, o, r, err, errlen);
    if (!rc && r->alpha_target >= 0 && r->have_exit == 3)
        rc = headline_record_matched_paper(db, o->run.id, r->step, o->split_name, r->tau, r->alpha_target, &r->exit,
                                           &r->grid[r->paper_best], r->n_layer, err, errlen);
    else if (!rc && r->alpha_target >= 0)
        rc = headline_record_matched(db, o->run.id, r->step, o->split_name, r->tau, r->alpha_target,
                                     r->partner_loss, &r->exit, r->n_layer, err, errlen);
    db_close(db);
    return rc;
}
