/*
 * cmd_eval.c — `gatelab eval RUN [--text FILE | --split val|test] [--windows N]
 * [--sparse] [--tau T | --match-alpha A | --match-run TSA_RUN [--tau-protocol gatelab|paper]] [--batch B]
 * [--results DIR] [--record]`.
 *
 * Prints one JSON line: loss (nats/token), bpc for text, tokens, windows,
 * accuracy for synthetic tasks, and for routed models the active fraction α,
 * the TLOps saved and tokens/s.  --record (whole split only) also writes the
 * result to the run's registry as its headline (run/headline.h): final.* rows,
 * for a routed run also hard.* (the same split with the skipping done: TSA
 * p > 0.5 skips, early exit at τ 0.5) and TSA's final.p_mid_share, and with
 * --match-alpha the matched.* rows.  --sparse (TSA) evaluates both the soft
 * model and real skipping, side by side (with --record, the sparse result is
 * the hard.* one); --sparse=paper (TSA only) skips in the TSA paper's sparse
 * form instead, and with --record writes it as hard_paper.* beside final.* and
 * hard.* (gatelab's form, measured too).  --tau T evaluates early exit at threshold
 * T; --match-alpha A finds τ by bisection on the validation split so that the
 * early-exit α is within 0.005 of A (the matched-compute comparison).
 * --match-run TSA_RUN takes A from that run's recorded headline α on the
 * same split — its hard α (hard.active_frac, the skipping done) when recorded,
 * else the soft final.active_frac — (the whole split, so both runs are measured on one token set)
 * and records the pair: matched.alpha_target is α_TSA, matched.partner_loss
 * the TSA run's headline loss (the TSA run needs `eval TSA_RUN --record`
 * first; training records it at the end of every run).
 * --tau-protocol paper chooses τ as the TSA paper's official script does
 * instead: the 13 thresholds 0.99 … 0.30, each on 30 fresh random batches of
 * train.batch_size windows, the one whose α in the paper's convention
 * (active_frac_paper) is nearest the target; with --match-run the target is
 * the TSA run's train/alpha_paper.mean_evals; --record writes matched_paper.*
 * (the JSON line lists the whole sweep as paper_sweep).
 *
 * This file parses the flags and prints; the measuring and the recording are
 * run/eval_run.h (evalrun_measure, evalrun_record), which `paper post` calls
 * through cmd_eval_run (cmd_measure.h) with the same options.
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cli.h"
#include "cmd_measure.h"
#include "jsonl.h"
#include "resolve.h"
#include "model/config.h"
#include "run/eval_run.h"

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
    if (!isnan(r->active_frac_paper)) jsonl_set(o, "active_frac_paper", jsonl_num(r->active_frac_paper));
    if (!isnan(r->run_frac)) jsonl_set(o, "run_frac", jsonl_num(r->run_frac));
    jsonl_set(o, "tlops_saved", jsonl_num(eval_tlops_saved(r->active_frac, L)));
    jsonl_set(o, "tokens_per_s", jsonl_num(r->seconds > 0 ? (double)r->windows * T / r->seconds : 0.0));
    return o;
}

static const args_opt eval_opts[] = {
    {"split", ARGS_KEY(0), "S", "the data split: val (default), test or train"},
    {"text", ARGS_KEY(1), "FILE", "evaluate the bytes of FILE instead of a split"},
    {"windows", ARGS_KEY(2), "N", "only the first N windows (default: the whole split or file)"},
    {"sparse", ARGS_KEY(3), "=FORM", "TSA, mod, random: also evaluate with real skipping, side by side (sparse_speedup); "
                                     "FORM gatelab (default: p > 0.5 skips, kept pairs scaled by 1 - p) or paper (TSA: the "
                                     "paper's sparse_infer.py, p >= 0.5 halts, FFN gathered, kept update unscaled; --record writes it as "
                                     "hard_paper.*)"},
    {"tau", ARGS_KEY(4), "T", "early exit at confidence threshold T in [0, 1]"},
    {"match-alpha", ARGS_KEY(5), "A", "early exit: find τ whose active fraction is within 0.005 of A"},
    {"match-run", ARGS_KEY(6), "TSA_RUN", "early exit: A is TSA_RUN's recorded headline α; --record stores the pair"},
    {"batch", ARGS_KEY(7), "B", "sequences per forward pass (default 16, at most 4096)"},
    {"results", ARGS_KEY(8), "DIR", "results folder that holds runs/<RUN> (default $GATELAB_RESULTS or results)"},
    {"record", ARGS_KEY(9), NULL, "write the whole-split result to the registry as the run's headline"},
    {"tau-protocol", ARGS_KEY(10), "P",
     "how --match-alpha/--match-run choose τ: gatelab (bisection on the whole split, default) or paper (the TSA "
     "paper's 13 thresholds on 30 random batches, α in the paper's convention; records matched_paper.*)"},
    {0}};
const args_spec eval_spec = {
    "eval", "RUN [options]",
    "Loss (nats/token), bpc or accuracy, active fraction α, TLOps saved and tokens/s of a run's checkpoint,\n"
    "printed as one JSON line.",
    eval_opts};

typedef struct {
    const char *run, *results;
    evalrun_opts o;
} eval_args;

/* Read argv into a.  Returns -1 to go on, or the exit code (0 after --help, 2 bad usage). */
static int eval_parse(int argc, char **argv, eval_args *a) {
    memset(a, 0, sizeof *a);
    evalrun_opts *o = &a->o;
    evalrun_defaults(o);
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
            o->split_name = split == 1 ? "test" : split == 2 ? "train" : "val";
            break;
        case ARGS_KEY(1): o->text = p.val; break;
        case ARGS_KEY(2): bad = args_get_long(&p, 1, LONG_MAX, &o->windows); break;
        case ARGS_KEY(3):
            o->sparse = 1;
            if (p.val) bad = args_get_choice(&p, "gatelab,paper", &o->sparse_form);
            break;
        case ARGS_KEY(4): bad = args_get_double(&p, 0, 1, &o->tau); break;
        case ARGS_KEY(5): bad = args_get_double(&p, 0, 1, &o->match_alpha); break;
        case ARGS_KEY(6): o->partner_arg = p.val; break;
        case ARGS_KEY(7): bad = args_get_int(&p, 1, 4096, &o->batch); break;
        case ARGS_KEY(8): a->results = p.val; break;
        case ARGS_KEY(9): o->record = 1; break;
        case ARGS_KEY(10): bad = args_get_choice(&p, "gatelab,paper", &o->tau_protocol); break;
        }
    }
    if (bad) return 2;
    o->split = split == 1 ? SPLIT_TEST : split == 2 ? SPLIT_TRAIN : SPLIT_VAL;
    if (!a->run) return args_usage_error(&eval_spec, "RUN is missing");
    if (o->record && (o->text || o->windows > 0 || o->tau >= 0)) {
        fprintf(stderr, "gatelab eval: --record writes a headline, which is the whole split: drop --text, --windows "
                        "and --tau\n");
        return 2;
    }
    return -1;
}

/* The result as one JSON line on stdout, after the notes about it on stderr.
 * Returns 0, or -1 when the line could not be written. */
static int eval_print(const evalrun_opts *o, const evalrun_result *r) {
    const int text = r->is_text, L = r->n_layer, T = r->seq_len;
    json_t *out = jsonl_run(r->id, r->dir);
    jsonl_set(out, "step", jsonl_int(r->step));
    jsonl_set(out, "source", jsonl_str(o->text ? o->text : o->split_name));
    jsonl_set(out, "soft", eval_json(&r->soft, text, L, T));
    if (r->counts) {
        /* the dense model of equal compute (docs/model.md "Equal-TLOps dense"), for the plans */
        jsonl_set(out, "equal_tlops_n_layer", jsonl_int(r->equal_tlops_layers));
        fprintf(stderr, "gatelab eval: equal-TLOps dense: n_layer = %d (1 + (%d - 1)·α at α %.4f)\n",
                r->equal_tlops_layers, L, r->soft.active_frac);
    }
    if (r->have_sparse) {
        const gl_eval_result *sp = r->have_paper_sparse ? &r->paper_sparse : &r->hard;
        jsonl_set(out, "sparse", eval_json(sp, text, L, T));
        jsonl_set(out, "sparse_form", jsonl_str(r->have_paper_sparse ? "paper" : "gatelab"));
        jsonl_set(out, "sparse_speedup", jsonl_num(r->soft.seconds > 0 && sp->seconds > 0
                                                       ? r->soft.seconds / sp->seconds
                                                       : 0.0));
    }
    if (r->have_hard && !(r->have_sparse && !r->have_paper_sparse)) /* gatelab's form, beside the paper's */
        jsonl_set(out, "hard", eval_json(&r->hard, text, L, T));
    if (!isnan(r->soft.p_mid_share)) jsonl_set(out, "p_mid_share", jsonl_num(r->soft.p_mid_share));
    if (r->have_exit) {
        jsonl_set(out, "tau", jsonl_num(r->tau));
        if (r->have_exit >= 2) jsonl_set(out, "alpha_target", jsonl_num(r->alpha_target));
        jsonl_set(out, "tau_protocol", jsonl_str(r->have_exit == 3 ? "paper" : r->have_exit == 2 ? "gatelab" : "given"));
        if (r->have_exit == 3) { /* every threshold of the paper's sweep, in its order */
            json_t *g = json_array();
            for (int i = 0; i < EVAL_PAPER_N_TAUS; i++) {
                json_t *row = eval_json(&r->grid[i], text, L, T);
                jsonl_set(row, "tau", jsonl_num(eval_paper_taus[i]));
                json_array_append_new(g, row);
            }
            jsonl_set(out, "paper_sweep", g);
            /* the chosen threshold on its random batches (the official script's reading); "exit" is that τ on the split */
            json_t *pr = eval_json(&r->grid[r->paper_best], text, L, T);
            jsonl_set(pr, "tau", jsonl_num(r->tau));
            jsonl_set(out, "exit_protocol", pr);
        }
        jsonl_set(out, "exit", eval_json(&r->exit, text, L, T));
    }
    if (r->closest_only)
        fprintf(stderr, "gatelab eval: closest α reached is %.4f (target %.4f ± 0.005): α moves in steps at this data size\n",
                r->exit.active_frac, r->alpha_target);
    jsonl_set(out, "loss", jsonl_num(r->soft.loss));
    jsonl_set(out, "loss_se", jsonl_num(r->soft.loss_se));
    jsonl_set(out, "tokens", jsonl_count(r->soft.tokens));
    return jsonl_print(stdout, out) ? -1 : 0;
}

int cmd_eval_run(const char *run_arg, const char *results, evalrun_opts *o) {
    static evalrun_result r;
    char err[1024], why[1024];
    resolve_run rr, pr;
    if (resolve_run_arg(run_arg, NULL, results, RESOLVE_DIR, &rr, err, sizeof err)) goto fail;
    o->run = (evalrun_target){rr.id, rr.dir, rr.results, rr.db};
    if (o->partner_arg) { /* the partner is looked up in the registry of the run evaluated */
        if (resolve_run_arg(o->partner_arg, rr.db, rr.results, RESOLVE_DB, &pr, why, sizeof why)) {
            snprintf(err, sizeof err, "--match-run %s", why);
            goto fail;
        }
        o->partner = (evalrun_target){pr.id, pr.dir, pr.results, pr.db};
    }
    if (evalrun_measure(o, &r, err, sizeof err)) goto fail;
    if (eval_print(o, &r)) {
        snprintf(err, sizeof err, "cannot write the JSON line to stdout (out of memory or a closed stdout)");
        goto fail;
    }
    if (o->record) {
        if (evalrun_record(o, &r, err, sizeof err)) goto fail;
        fprintf(stderr, "gatelab eval: recorded %s of %s (step %ld, %s split) in %s\n",
                o->record_sparse_only ? "the paper's sparse form (hard_paper.*)"
                : r.have_paper_sparse ? "the headline and the paper's sparse form (hard_paper.*)"
                                      : "the headline",
                o->run.id, r.step, o->split_name, o->run.db);
    }
    return 0;
fail:
    fprintf(stderr, "gatelab eval: %s\n", err);
    return 1;
}

int cmd_eval(int argc, char **argv) {
    static eval_args a;
    int pr = eval_parse(argc, argv, &a);
    if (pr >= 0) return pr;
    return cmd_eval_run(a.run, a.results, &a.o);
}
