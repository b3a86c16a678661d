/*
 * cmd_eval.c — `gatelab eval RUN [--text FILE | --split val|test] [--windows N]
 * [--sparse] [--tau T | --match-alpha A | --match-run TSA_RUN] [--batch B] [--results DIR] [--record]`.
 *
 * Prints one JSON line: loss (nats/token), bpc for text, tokens, windows,
 * accuracy for synthetic tasks, and for routed models the active fraction α,
 * the TLOps saved and tokens/s.  --record (whole split only) also writes the
 * result to the run's registry as its headline (run/headline.h): final.* rows,
 * for a routed run also hard.* (the same split with the skipping done: TSA
 * p > 0.5 skips, early exit at τ 0.5) and TSA's final.p_mid_share, and with
 * --match-alpha the matched.* rows.  --sparse (TSA) evaluates both the soft
 * model and real skipping, side by side (with --record, the sparse result is
 * the hard.* one).  --tau T evaluates early exit at threshold
 * T; --match-alpha A finds τ by bisection on the validation split so that the
 * early-exit α is within 0.005 of A (the matched-compute comparison).
 * --match-run TSA_RUN takes A from that run's recorded headline α on the
 * same split — its hard α (hard.active_frac, the skipping done) when recorded,
 * else the soft final.active_frac — (the whole split, so both runs are measured on one token set)
 * and records the pair: matched.alpha_target is α_TSA, matched.partner_loss
 * the TSA run's headline loss (the TSA run needs `eval TSA_RUN --record`
 * first; training records it at the end of every run).
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cli.h"
#include "jsonl.h"
#include "resolve.h"
#include "store/fileio.h"
#include "run/evaluate.h"
#include "run/headline.h"
#include "store/data.h"
#include "store/registry.h"
#include "store/rundir.h"

/* One evaluation as a JSON object: loss (nats/token), bpc for text or
 * accuracies for a task, tokens, windows, α, TLOps saved and tokens/s. */
static json_t *eval_json(const gl_eval_result *r, int text, int L, int T) {
    json_t *o = json_object();
    jsonl_set(o, "loss", jsonl_num(r->loss));
    if (text) jsonl_set(o, "bpc", jsonl_num(eval_bpc(r)));
    else {
        jsonl_set(o, "token_acc", jsonl_num(r->tok_acc));
        jsonl_set(o, "seq_acc", jsonl_num(r->seq_acc));
    }
    jsonl_set(o, "tokens", jsonl_count(r->tokens));
    jsonl_set(o, "windows", jsonl_int(r->windows));
    jsonl_set(o, "active_frac", jsonl_num(r->active_frac));
    if (!isnan(r->run_frac)) jsonl_set(o, "run_frac", jsonl_num(r->run_frac));
    jsonl_set(o, "tlops_saved", jsonl_num(eval_tlops_saved(r->active_frac, L)));
    jsonl_set(o, "tokens_per_s", jsonl_num(r->seconds > 0 ? (double)r->windows * T / r->seconds : 0.0));
    return o;
}

/* Bytes per scored target of --text windows [0, windows) (targets ids[1 ..
 * windows*T]): what bits per character divides by (1 for a char run). */
static double text_bytes_per_token(const gl_run *run, const int *ids, long windows, int T) {
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
static int run_eval(gl_run *run, const int *ids, size_t n_ids, const gl_dataset *ds, gl_split split,
                    long windows, gl_eval_result *r, char *err, size_t errlen) {
    if (ids) {
        if (eval_ids(&run->model, ids, n_ids, windows, r, err, errlen)) return -1;
        r->bytes_per_token = text_bytes_per_token(run, ids, r->windows, run->model.T);
        return 0;
    }
    return eval_split(&run->model, ds, split, windows, r, err, errlen);
}

/* The headline α and loss of partner (a TSA run: an id, a unique prefix
 * of one, or a folder, resolved in the registry of the run evaluated, rr) on
 * split, from the registry: the target of --match-run.  Returns 0, or -1
 * with a message. */
static int partner_headline(const resolve_run *rr, const char *partner_arg, const char *split_name, double *alpha,
                            double *loss, gl_prov *prov, char *err, size_t errlen) {
    resolve_run pr;
    char why[1024];
    if (resolve_run_arg(partner_arg, rr->db, rr->results, RESOLVE_DB, &pr, why, sizeof why)) {
        snprintf(err, errlen, "--match-run %s", why);
        return -1;
    }
    const char *partner = pr.id, *db_path = pr.db;
    gl_db *db = NULL;
    gl_metric_val a, l;
    int rc = db_open_readonly(&db, db_path, err, errlen), ka = 0, kl = 0;
    /* the hard headline (the skipping done) when recorded, else the soft one: TSA's α as it runs */
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
        snprintf(err, errlen, "--match-run %s: that run has no headline α on the %s split in %s; record it with "
                              "`gatelab eval %s --split %s --record` (a TSA run)", partner, split_name, db_path,
                 pr.dir[0] ? pr.dir : partner, split_name);
        return -1;
    }
    *alpha = a.value;
    *loss = l.value;
    *prov = a.prov;
    return 0;
}

/* Write the whole-split result (and the matched early-exit point, when
 * match >= 0) to the run's registry (that of the results folder holding it). */
static int record(const gl_run *run, const resolve_run *rr, const char *split_name, const gl_eval_result *soft,
                  const gl_eval_result *hard, double match, double partner_loss, double tau,
                  const gl_eval_result *exit_r, char *err, size_t errlen) {
    const char *run_id = rr->id, *db_path = rr->db;
    const gl_model_config *mc = &run->model.cfg;
    const int text = run->mf.data.task == TASK_TEXT, L = mc->n_layer;
    gl_db *db = NULL;
    int rc = db_open(&db, db_path, err, errlen);
    if (!rc)
        rc = headline_record(db, run_id, run->st.step, split_name, soft, hard, text, mc->depth_routing != DR_NONE, L,
                             err, errlen);
    if (!rc && match >= 0)
        rc = headline_record_matched(db, run_id, run->st.step, split_name, tau, match, partner_loss, exit_r, L, err,
                                     errlen);
    db_close(db);
    if (!rc) fprintf(stderr, "gatelab eval: recorded the headline of %s (step %ld, %s split) in %s\n", run_id,
                     run->st.step, split_name, db_path);
    return rc;
}

/* The bytes of the file at path as the run's token ids (through the run's
 * stored tokenizer): *ids malloc'd (the caller frees it, also on failure),
 * *n_ids of them.  Returns 0, or -1 with a message naming a byte missing
 * from a char run's vocabulary. */
static int read_text_ids(const gl_run *run, const char *text, int **ids_out, size_t *n_ids, char *err,
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


static const args_opt eval_opts[] = {
    {"split", ARGS_KEY(0), "S", "the data split: val (default), test or train"},
    {"text", ARGS_KEY(1), "FILE", "evaluate the bytes of FILE instead of a split"},
    {"windows", ARGS_KEY(2), "N", "only the first N windows (default: the whole split or file)"},
    {"sparse", ARGS_KEY(3), NULL, "TSA, mod, random: also evaluate with real skipping, side by side (sparse_speedup)"},
    {"tau", ARGS_KEY(4), "T", "early exit at confidence threshold T in [0, 1]"},
    {"match-alpha", ARGS_KEY(5), "A", "early exit: find τ whose active fraction is within 0.005 of A"},
    {"match-run", ARGS_KEY(6), "TSA_RUN", "early exit: A is TSA_RUN's recorded headline α; --record stores the pair"},
    {"batch", ARGS_KEY(7), "B", "sequences per forward pass (default 16, at most 4096)"},
    {"results", ARGS_KEY(8), "DIR", "results folder that holds runs/<RUN> (default $GATELAB_RESULTS or results)"},
    {"record", ARGS_KEY(9), NULL, "write the whole-split result to the registry as the run's headline"},
    {0}};
const args_spec eval_spec = {
    "eval", "RUN [options]",
    "Loss (nats/token), bpc or accuracy, active fraction α, TLOps saved and tokens/s of a run's checkpoint,\n"
    "printed as one JSON line.",
    eval_opts};

typedef struct {
    const char *run, *text, *results, *split_name, *partner;
    long windows;
    int sparse, batch, rec;
    double tau, match;
    gl_split split;
} eval_args;

/* Read argv into a.  Returns -1 to go on, or the exit code (0 after --help, 2 bad usage). */
static int eval_parse(int argc, char **argv, eval_args *a) {
    *a = (eval_args){.split_name = "val", .batch = 16, .tau = -1, .match = -1};
    args_parser p;
    args_begin(&p, &eval_spec, argc, argv);
    int split = 0, bad = 0;
    for (int k; (k = args_next(&p)) != ARGS_END && !bad;) {
        if (k < 0) return args_exit_code(k);
        switch (k) {
        case ARGS_POS:
            if (a->run) return args_usage_error(&eval_spec, "one RUN only ('%s' and '%s' given)", a->run, p.val);
            a->run = p.val;
            break;
        case ARGS_KEY(0): /* any case; the canonical name goes on */
            bad = args_get_choice(&p, "val,test,train", &split);
            a->split_name = split == 1 ? "test" : split == 2 ? "train" : "val";
            break;
        case ARGS_KEY(1): a->text = p.val; break;
        case ARGS_KEY(2): bad = args_get_long(&p, 1, LONG_MAX, &a->windows); break;
        case ARGS_KEY(3): a->sparse = 1; break;
        case ARGS_KEY(4): bad = args_get_double(&p, 0, 1, &a->tau); break;
        case ARGS_KEY(5): bad = args_get_double(&p, 0, 1, &a->match); break;
        case ARGS_KEY(6): a->partner = p.val; break;
        case ARGS_KEY(7): bad = args_get_int(&p, 1, 4096, &a->batch); break;
        case ARGS_KEY(8): a->results = p.val; break;
        case ARGS_KEY(9): a->rec = 1; break;
        }
    }
    if (bad) return 2;
    a->split = split == 1 ? SPLIT_TEST : split == 2 ? SPLIT_TRAIN : SPLIT_VAL;
    if (!a->run) return args_usage_error(&eval_spec, "RUN is missing");
    if (a->rec && (a->text || a->windows > 0 || a->tau >= 0)) {
        fprintf(stderr, "gatelab eval: --record writes a headline, which is the whole split: drop --text, --windows "
                        "and --tau\n");
        return 2;
    }
    return -1;
}

/* Check the flags against the model (sparse needs TSA, τ early exit) and
 * find the --match-run target.  Returns 0, or -1 with a message. */
static int eval_check(gl_run *run, const resolve_run *rr, eval_args *a, double *partner_loss, gl_prov *partner_prov,
                      char *err, size_t errlen) {
    const gl_model_config *mc = &run->model.cfg;
    if (a->sparse && !config_routing_sparse(mc)) {
        snprintf(err, errlen, "--sparse needs a TSA model (or mod, random); run %s has depth_routing = %s", a->run,
                 config_depth_routing_name(mc->depth_routing));
        return -1;
    }
    if (a->partner && (a->match >= 0 || a->text || a->windows > 0)) {
        snprintf(err, errlen, "--match-run takes α from the run %s on the whole split: drop --match-alpha, "
                              "--text and --windows", a->partner);
        return -1;
    }
    if (a->partner &&
        partner_headline(rr, a->partner, a->split_name, &a->match, partner_loss, partner_prov, err, errlen))
        return -1;
    if ((a->tau >= 0 || a->match >= 0) && mc->depth_routing != DR_EARLY_EXIT) {
        snprintf(err, errlen, "--tau and --match-alpha need an early-exit model; run %s has depth_routing = %s",
                 a->run, config_depth_routing_name(mc->depth_routing));
        return -1;
    }
    if (a->match >= 0 && a->text) {
        snprintf(err, errlen, "--match-alpha searches τ on the run's validation split; drop --text");
        return -1;
    }
    return 0;
}

/* --match-alpha/--match-run (τ matched to an α) or --tau: the early-exit
 * evaluation into r2 and out["exit"], τ into *tau.  Returns 0 (nothing asked
 * is 0 too), or -1 with a message in err. */
static int eval_exit(gl_run *run, const eval_args *a, const int *ids, size_t n_ids, const gl_dataset *ds,
                     const gl_prov *partner_prov, double *tau, gl_eval_result *r2, json_t *out, char *err,
                     size_t errlen) {
    gl_model *m = &run->model;
    const gl_model_config *mc = &m->cfg;
    const int is_text = run->mf.data.task == TASK_TEXT, L = mc->n_layer;
    if (a->match >= 0) {
        int mrc = eval_match_alpha(m, ds, a->split, a->windows, a->match, 0.005, tau, r2, err, errlen);
        if (mrc < 0) return -1;
        if (a->partner && (r2->windows != partner_prov->count || strcmp(partner_prov->split, a->split_name))) {
            char pa[64];
            snprintf(err, errlen, "--match-run %s: its headline was measured on %s, this run's %s split has %ld "
                                      "windows: not one token set, so no matched pair is recorded",
                     a->partner, db_prov_str(partner_prov, pa, sizeof pa), a->split_name, r2->windows);
            return -1;
        }
        jsonl_set(out, "tau", jsonl_num(*tau));
        jsonl_set(out, "alpha_target", jsonl_num(a->match));
        jsonl_set(out, "exit", eval_json(r2, is_text, L, mc->seq_len));
        if (mrc > 0)
            fprintf(stderr, "gatelab eval: closest α reached is %.4f (target %.4f ± 0.005): α moves in steps at this data size\n",
                    r2->active_frac, a->match);
    } else if (*tau >= 0) {
        m->exit_tau = (float)*tau;
        if (run_eval(run, ids, n_ids, ds, a->split, a->windows, r2, err, errlen)) return -1;
        m->exit_tau = 0;
        jsonl_set(out, "tau", jsonl_num(*tau));
        jsonl_set(out, "exit", eval_json(r2, is_text, L, mc->seq_len));
    }
    return 0;
}

int cmd_eval(int argc, char **argv) {
    eval_args a;
    int pr = eval_parse(argc, argv, &a);
    if (pr >= 0) return pr;
    const gl_split split = a.split;
    const char *text = a.text, *split_name = a.split_name;
    const long windows = a.windows;
    double tau = a.tau;
    static gl_run run;
    gl_dataset ds;
    memset(&ds, 0, sizeof ds);
    char err[1024];
    int rc = 1, *ids = NULL;
    size_t n_ids = 0;
    json_t *out = NULL;
    double partner_loss = NAN;
    gl_prov partner_prov;
    resolve_run rr;
    if (resolve_run_arg(a.run, NULL, a.results, RESOLVE_DIR, &rr, err, sizeof err) ||
        run_open(&run, rr.dir, NULL, a.batch, err, sizeof err))
        goto fail;
    gl_model *m = &run.model;
    const gl_model_config *mc = &m->cfg;
    if (eval_check(&run, &rr, &a, &partner_loss, &partner_prov, err, sizeof err)) goto fail;
    const double match = a.match;
    if (text) {
        if (read_text_ids(&run, text, &ids, &n_ids, err, sizeof err)) goto fail;
    } else if (data_open_tok(&ds, &run.mf.data, mc->seq_len, run.mf.train.seed,
                            run.st.tokenizer == TOK_BPE ? &run.st.bpe : NULL, err, sizeof err)) {
        goto fail;
    }
    const int is_text = run.mf.data.task == TASK_TEXT;
    const int L = mc->n_layer;
    gl_eval_result soft, r2;
    if (run_eval(&run, ids, n_ids, &ds, split, windows, &soft, err, sizeof err)) goto fail;
    out = jsonl_run(rr.id, run.dir);
    jsonl_set(out, "step", jsonl_int(run.st.step));
    jsonl_set(out, "source", jsonl_str(text ? text : split_name));
    jsonl_set(out, "soft", eval_json(&soft, is_text, L, mc->seq_len));
    if (config_routing_counts(mc)) {
        /* the dense model of equal compute (docs/model.md "Equal-TLOps dense"), for the plans */
        const int Le = config_equal_tlops_layers(L, soft.active_frac);
        jsonl_set(out, "equal_tlops_n_layer", jsonl_int(Le));
        fprintf(stderr, "gatelab eval: equal-TLOps dense: n_layer = %d (1 + (%d - 1)·α at α %.4f)\n", Le, L,
                soft.active_frac);
    }
    gl_eval_result hard;
    const int want_hard = a.rec && eval_has_hard(m);
    if (a.sparse) {
        m->sparse = 1;
        if (run_eval(&run, ids, n_ids, &ds, split, windows, &r2, err, sizeof err)) goto fail;
        m->sparse = 0;
        jsonl_set(out, "sparse", eval_json(&r2, is_text, L, mc->seq_len));
        jsonl_set(out, "sparse_speedup",
                  jsonl_num(soft.seconds > 0 && r2.seconds > 0 ? soft.seconds / r2.seconds : 0.0));
        hard = r2;
    } else if (want_hard) {
        /* the headline's hard.* rows: the whole split with the skipping done (evaluate.h eval_split_hard) */
        if (eval_split_hard(m, &ds, split, 0, &hard, err, sizeof err)) goto fail;
        jsonl_set(out, "hard", eval_json(&hard, is_text, L, mc->seq_len));
    }
    if (!isnan(soft.p_mid_share)) jsonl_set(out, "p_mid_share", jsonl_num(soft.p_mid_share));
    if (eval_exit(&run, &a, ids, n_ids, &ds, &partner_prov, &tau, &r2, out, err, sizeof err)) goto fail;
    jsonl_set(out, "loss", jsonl_num(soft.loss));
    jsonl_set(out, "loss_se", jsonl_num(soft.loss_se));
    jsonl_set(out, "tokens", jsonl_count(soft.tokens));
    int wrote = jsonl_print(stdout, out);
    out = NULL;
    if (wrote) {
        snprintf(err, sizeof err, "cannot write the JSON line to stdout (out of memory or a closed stdout)");
        goto fail;
    }
    if (a.rec && record(&run, &rr, split_name, &soft, want_hard ? &hard : NULL, match, partner_loss, tau, &r2, err,
                        sizeof err))
        goto fail;
    rc = 0;
    goto done;
fail:
    fprintf(stderr, "gatelab eval: %s\n", err);
done:
    json_decref(out);
    free(ids);
    data_close(&ds);
    run_close(&run);
    return rc;
}
