/*
 * cmd_paper.c — `gatelab paper post|report`: the two stages of `make paper`
 * (scripts/paper.sh) that follow the training sweeps.
 *
 *   gatelab paper post [--results DIR]
 *       Measures what the claims need and records it in DIR/gatelab.db, for
 *       every FINISHED run that lacks it (so a rerun repeats nothing):
 *       1. the headline: the whole validation split (`eval --record`); for a
 *          TSA run also the TSA paper's sparse form on the same windows
 *          (`eval --sparse=paper --record`, hard_paper.*, beside gatelab's
 *          hard.*; a run whose headline is recorded gets that pass alone);
 *       2. a run with a value gate (SATFormer, ResFormer): every gate zeroed
 *          (`ablate --mode zero --windows 128`), a gate with a value per token
 *          (SATFormer's α) also set to its mean (--mode mean; ResFormer's λ1 is
 *          a constant, so its mean is itself); a run with a per-token gate that
 *          ablates (SATFormer's α, TSA's p): the trace analysis (`analyze`).
 *          Which applies is read from the gate table (model/gatekind.h), never
 *          from the variant's name;
 *       3. early exit: τ matched to the α (hard, the skipping done, when
 *          recorded) of its TSA partner (same config and seed) at λ* (the λ
 *          whose mean α is nearest the paper's α for that data set, read from
 *          experiments/paper/claims.ini), on the whole split (`eval EXIT
 *          --match-run TSA --record`, which stores the pair: α_TSA, α_exit, τ
 *          and both losses); an exit run in the paper's form
 *          (model.exit_form = paper) also by the paper's τ protocol against
 *          the same TSA run (`eval EXIT --match-run TSA --tau-protocol paper
 *          --record`: matched_paper.*, the target TSA's
 *          train/alpha_paper.mean_evals);
 *       4. depth routing (pp_depth): TSA's random-routing control and its
 *          difficulty-proportional routing against its dense partner, the
 *          early-exit τ frontier, post-hoc early exit of the dense partner.
 *       The headline of a routed run holds hard.* (the skipping done, gatelab's
 *       form) beside final.*; a run recorded without it is evaluated again.
 *       The sparse forms are measured on the final weights only: val/best.*
 *       (train.record_best) is a periodic soft evaluation, and no checkpoint
 *       of that step is kept to skip with.
 *   gatelab paper report PRESET [--results DIR] [--out DIR]
 *       Writes OUT/REPORT.md (default DIR) from the registry: analysis/paper/paper.c.
 *
 * Each measurement is a typed call (cmd_measure.h), the one the command it
 * names makes after parsing its flags: the library entry point
 * (run/eval_run.h for the headline and the matched pair, analysis/pipeline/measure.h
 * for ablations, the trace analysis and difficulty routing) and the command's
 * printing, so what the report reads is exactly what those commands record.
 * No argv: the options are the commands' defaults plus what the stage names.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/paper/claims.h"
#include "analysis/measure/difficulty.h"
#include "analysis/paper/paper.h"
#include "model/config.h"
#include "model/gatekind.h"
#include "store/registry.h"
#include "args.h"
#include "cli.h"
#include "cmd_measure.h"
#include "store/metric.h"
#include "store/rundir.h"

/* The measurements, each as its command would make it (cmd_measure.h: the
 * same library call, the same lines printed, the same rows); stdout flushed
 * after each so its lines stay beside the stage's messages in one log.
 * Each returns 1 when the measurement failed (its message printed), else 0. */
static int pp_done(int rc) {
    fflush(stdout);
    return rc != 0;
}

/* The evaluations post asks of `eval`, all with --record:
 *   PP_HEADLINE        `eval RUN` (partner NULL) or `eval RUN --match-run PARTNER`;
 *   PP_HEADLINE_PAPER  `eval RUN --sparse=paper`: the headline and the paper's sparse form (TSA);
 *   PP_PAPER_ONLY      the same, narrowed to the paper's sparse form (hard_paper.*) on the windows of
 *                      the recorded headline, which is not measured again (evalrun_opts.record_sparse_only);
 *   PP_TAU_PAPER       `eval RUN --match-run PARTNER --tau-protocol paper` (matched_paper.*). */
typedef enum { PP_HEADLINE, PP_HEADLINE_PAPER, PP_PAPER_ONLY, PP_TAU_PAPER } pp_eval_kind;

static int pp_eval(const char *run, const char *partner, pp_eval_kind kind, const char *results) {
    evalrun_opts o;
    evalrun_defaults(&o);
    o.record = 1;
    o.partner_arg = partner;
    o.sparse = kind == PP_HEADLINE_PAPER || kind == PP_PAPER_ONLY;
    o.sparse_form = o.sparse ? SPARSE_PAPER : SPARSE_GATELAB;
    o.record_sparse_only = kind == PP_PAPER_ONLY;
    o.tau_protocol = kind == PP_TAU_PAPER ? EVALRUN_TAU_PAPER : EVALRUN_TAU_GATELAB;
    return pp_done(cmd_eval_run(run, results, &o));
}

/* `ablate RUN --mode zero|mean|random --windows 128` (kind MEASURE_GATES), `--mode exit`, `--mode posthoc-exit`. */
static int pp_ablate(const char *run, measure_kind kind, ablate_mode mode, const char *results) {
    measure_ablate_opts o = {.kind = kind, .mode = mode, .windows = 128, .batch = 16};
    return pp_done(cmd_ablate_run(run, NULL, results, &o, 0));
}

/* `analyze RUN` (dense NULL) or `analyze RUN --difficulty DENSE`. */
static int pp_analyze(const char *run, const char *dense, const char *results) {
    if (dense) {
        measure_difficulty_opts o = {.seed = DIFF_SEED, .batch = 16};
        return pp_done(cmd_analyze_difficulty(run, dense, NULL, results, &o, 0));
    }
    measure_trace_opts o = {0};
    return pp_done(cmd_analyze_trace(run, NULL, results, &o));
}

/* 1 when run has a row of the metric (name, params; NULL: none) in split. */
static int pp_has(gl_db *db, const char *run, const char *split, const char *name, const char *params) {
    char err[256];
    double v;
    return db_metric_last(db, run, split, name, params, &v, NULL, err, sizeof err) == 1;
}

static int pp_open(gl_db **db, const char *results, char *err, size_t errlen) {
    char path[GL_PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/gatelab.db", results);
    return db_open_readonly(db, path, err, errlen);
}

/* The gates a paper run records, from the gate table (model/gatekind.h) on a
 * config holding only the run's value residual and depth routing (what the
 * table's `has` column reads for these variants): its value gate (a
 * per-head or per-block ablation class, -1 for none) and the per-token gate
 * the trace analysis reads (a value gate or a router, -1 for none). */
static void pp_gates(const paper_run *r, int *value_gate, int *traced_gate) {
    gl_model_config c;
    memset(&c, 0, sizeof c);
    gl_value_residual vr;
    gl_depth_routing dr;
    if (!config_parse_value_residual(r->value, &vr)) c.value_residual = vr;
    if (!config_parse_depth_routing(r->depth, &dr)) c.depth_routing = dr;
    *value_gate = gatekind_find(&c, GABL_HEAD);
    if (*value_gate < 0) *value_gate = gatekind_find(&c, GABL_BLOCK);
    *traced_gate = -1;
    for (int g = 0; g < GATE_COUNT && *traced_gate < 0; g++)
        if (gatekind_has(&c, (gl_gate)g) && gatekind_per_token((gl_gate)g) && gatekind_info[g].ablate != GABL_NONE)
            *traced_gate = g;
}

/* Stages 1 and 2 for one run.  Returns the number of failed measurements. */
static int pp_measure(gl_db *db, const paper_run *r, const char *results) {
    const char *id = r->t.run_id;
    int bad = 0;
    metric_key zero, mean;
    metric_ablation(&zero, "zero", METRIC_LABEL_ALL, "delta_loss", METRIC_NONE);
    metric_ablation(&mean, "mean", METRIC_LABEL_ALL, "delta_loss", METRIC_NONE);
    /* a routed run's headline has hard.* beside final.* (runs recorded before hard.* existed are measured
     * again); a TSA run's also hard_paper.*, the paper's sparse form on the same windows (only that pass
     * when the headline is there) */
    const int routed = strcmp(r->depth, "none") != 0, tsa = !strcmp(r->depth, "tsa");
    const int paper_sparse = tsa && !pp_has(db, id, "val", "hard_paper.loss", NULL);
    if (!pp_has(db, id, "val", "final.loss", NULL) || (routed && !pp_has(db, id, "val", "hard.loss", NULL))) {
        fprintf(stderr, "[paper post] %s: whole-split evaluation%s%s\n", id, routed ? ", soft and with the skipping done" : "",
                paper_sparse ? " (gatelab's sparse form and the paper's)" : "");
        bad += pp_eval(id, NULL, paper_sparse ? PP_HEADLINE_PAPER : PP_HEADLINE, results);
    } else if (paper_sparse) {
        /* a run measured before hard_paper.* existed whose folder is gone (a registry restored from a
         * snapshot): said, not retried as a failure at every post */
        char ckpt[GL_PATH_MAX + 192];
        snprintf(ckpt, sizeof ckpt, "%s/runs/%s/%s", results, id, RUN_CKPT);
        if (access(ckpt, R_OK)) {
            fprintf(stderr, "[paper post] %s: no checkpoint (%s): the paper's sparse form (hard_paper.*) cannot be "
                    "measured; left out\n", id, ckpt);
        } else {
            fprintf(stderr, "[paper post] %s: the paper's sparse form on the headline's windows (hard_paper.*)\n", id);
            bad += pp_eval(id, NULL, PP_PAPER_ONLY, results);
        }
    }
    int vg, tg;
    pp_gates(r, &vg, &tg);
    if (vg >= 0 && !pp_has(db, id, "ablation", zero.name, zero.params)) {
        fprintf(stderr, "[paper post] %s: gates zeroed\n", id);
        bad += pp_ablate(id, MEASURE_GATES, ABLATE_ZERO, results);
    }
    /* a gate without a value per token (ResFormer's λ1, one constant per block) is its own mean:
     * its mean ablation is the identity (ablate refuses it) */
    if (vg >= 0 && gatekind_per_token((gl_gate)vg) && !pp_has(db, id, "ablation", mean.name, mean.params)) {
        fprintf(stderr, "[paper post] %s: gates at their mean\n", id);
        bad += pp_ablate(id, MEASURE_GATES, ABLATE_MEAN, results);
    }
    /* analyze records "<key>_mean" of a value gate (alpha_mean), and a router's active fraction */
    char traced[METRIC_NAME_MAX];
    if (tg >= 0 && gatekind_info[tg].ablate == GABL_ROUTE) snprintf(traced, sizeof traced, "active_frac");
    else if (tg >= 0) snprintf(traced, sizeof traced, "%s_mean", gatekind_info[tg].key);
    if (tg >= 0 && !pp_has(db, id, "analysis", traced, NULL)) {
        fprintf(stderr, "[paper post] %s: trace analysis\n", id);
        bad += pp_analyze(id, NULL, results);
    }
    return bad;
}

/* Stage 3: early exit matched to TSA's α, paired by seed.  The operating
 * point: the paper's α for the exit run's data set, read from the claims file
 * (claims_operating_alpha: the row that picks depth_routing=tsa
 * lambda=@alpha), and λ* the TSA λ whose mean α over seeds is nearest it —
 * the hard α (the skipping done) when every TSA run of that data and scale
 * has it, else the soft one (paper_lambda_star).  The TSA run is the exit
 * run's partner along depth_routing (the same config and seed, at λ*); eval
 * --match-run then matches τ to that run's hard α when recorded (matched.*).
 * An exit run in the paper's form (model.exit_form = paper) is also matched
 * to the same TSA run by the paper's τ protocol (`--tau-protocol paper`: the
 * 13 thresholds on random batches, the target that run's
 * train/alpha_paper.mean_evals; matched_paper.*). */

/* The TSA partner of exit run e at λ* (above): *t, or NULL with the reason printed.
 * An exit run in the paper's form (paper: 1) is matched within the experiment
 * of the claims file's paper-form operating row for its data (form = paper;
 * else its first operating row; round two: paper-shk_off_tsa, λ 0.001), so a
 * TSA run of another experiment and λ in the same registry
 * (group 3's λ 0 and 0.05) is never its partner, whenever post runs; λ* is
 * then chosen among that experiment's λ's alone (PREREGISTRATION.md, groups 2
 * and 3: "TSA = the shk_off_tsa run of its seed"). */
static const paper_run *pp_tsa_partner(const paper_run *runs, int n, const paper_run *e, const claims_file *cf,
                                       int paper, int *hard, double *lstar, double *target) {
    const claims_row *op = paper ? claims_operating_row(cf, e->t.data, "paper") : NULL;
    if (!op) op = claims_operating_row(cf, e->t.data, NULL); /* a claims file without paper-form rows */
    if (!op) {
        fprintf(stderr, "[paper post] %s: the claims file has no TSA operating point (lambda=@alpha) for data %s; "
                "skipped\n", e->t.run_id, e->t.data);
        return NULL;
    }
    *target = op->alpha;
    /* the candidates: every run, or (paper form) the TSA runs of the operating row's experiment */
    paper_run *pool = NULL;
    int m = n;
    const paper_run *from = runs;
    if (paper) {
        pool = malloc((size_t)(n ? n : 1) * sizeof *pool);
        if (!pool) {
            fprintf(stderr, "[paper post] %s: out of memory choosing its TSA partner; skipped\n", e->t.run_id);
            return NULL;
        }
        m = 0;
        for (int j = 0; j < n; j++)
            if (strcmp(runs[j].depth, "tsa") || claims_row_experiment(op, runs[j].t.experiment)) pool[m++] = runs[j];
        from = pool;
    }
    *hard = 0;
    const paper_run *t = NULL;
    if (!paper_lambda_star(from, m, e->t.data, e->t.scale, *target, hard, lstar)) {
        fprintf(stderr, "[paper post] %s: no TSA run of %s at scale %s%s to match; skipped\n", e->t.run_id,
                e->t.data, e->t.scale, paper ? " in the paper-form operating row's experiment" : "");
    } else {
        for (int j = 0; j < m && !t; j++)
            if (!strcmp(from[j].depth, "tsa") && e->depth_key && from[j].depth_key == e->depth_key &&
                fabs(from[j].t.lambda - *lstar) < 1e-9 && !isnan(*hard ? from[j].hard_alpha : from[j].alpha))
                t = &from[j];
        if (!t)
            fprintf(stderr, "[paper post] %s: no TSA partner at λ* = %g with seed %s; skipped\n", e->t.run_id, *lstar,
                    e->t.seed);
    }
    if (t && pool) /* point into runs, which outlives the pool */
        for (int j = 0; j < n; j++)
            if (!strcmp(runs[j].t.run_id, t->t.run_id)) { t = &runs[j]; break; }
    free(pool);
    return t;
}

/* 1 when run is early exit in the TSA paper's form (model.exit_form = paper; absent: gatelab's). */
static int pp_exit_paper(gl_db *db, const char *run) {
    char v[32], err[256];
    return db_param_get(db, run, "model.exit_form", v, sizeof v, err, sizeof err) == 1 && !strcmp(v, "paper");
}

static int pp_match(const paper_run *runs, int n, gl_db *db, const char *results, const claims_file *cf) {
    int bad = 0;
    for (int i = 0; i < n; i++) {
        const paper_run *e = &runs[i];
        if (strcmp(e->depth, "early_exit")) continue;
        const int want = !pp_has(db, e->t.run_id, "val", "matched.loss", NULL);
        const int paper = pp_exit_paper(db, e->t.run_id);
        const int want_paper = paper && !pp_has(db, e->t.run_id, "val", "matched_paper.loss", NULL);
        if (!want && !want_paper) continue;
        int hard;
        double lstar, target;
        const paper_run *t = pp_tsa_partner(runs, n, e, cf, paper, &hard, &lstar, &target);
        if (!t) continue;
        if (want) {
            fprintf(stderr, "[paper post] %s: early exit matched to the %s α %.6f of %s (λ* = %g, the paper's α %.3f)\n",
                    e->t.run_id, hard ? "hard" : "soft", hard ? t->hard_alpha : t->alpha, t->t.run_id, lstar, target);
            /* --match-run: the target is the TSA run's recorded headline α (hard when recorded) on the same split */
            bad += pp_eval(e->t.run_id, t->t.run_id, PP_HEADLINE, results);
        }
        if (want_paper) {
            fprintf(stderr, "[paper post] %s: the paper's τ protocol matched to the paper's α of %s "
                    "(train/alpha_paper.mean_evals; λ* = %g)\n", e->t.run_id, t->t.run_id, lstar);
            bad += pp_eval(e->t.run_id, t->t.run_id, PP_TAU_PAPER, results);
        }
    }
    return bad;
}

/* Stage 4: what the depth-routing claims read, for every run that lacks it
 * (ablation windows val[0,128) throughout, so the rows pair window by window):
 *   TSA: learned vs random routing at the same α (ablate --mode random, with
 *        the learned routers run hard as its baseline), and, with a dense
 *        partner, difficulty-proportional routing (analyze --difficulty);
 *   early exit: its τ frontier and its full-depth loss (ablate --mode exit);
 *   dense with a TSA or early-exit partner: post-hoc early exit over the same
 *        τ grid (ablate --mode posthoc-exit), whose posthoc.full.loss is the
 *        dense loss on those windows.
 * The partner: paper_depth_partner (the same run but for depth_routing). */
static int pp_depth(const paper_run *runs, int n, gl_db *db, const char *results) {
    int bad = 0;
    metric_key name, last_tau, post_tau;
    metric_exit_mode(&last_tau, METRIC_EXIT_MODE, 0.95, "loss", METRIC_NONE);
    metric_exit_mode(&post_tau, METRIC_POSTHOC_MODE, 0.95, "loss", METRIC_NONE);
    for (int i = 0; i < n; i++) {
        const paper_run *r = &runs[i];
        const char *id = r->t.run_id;
        if (!strcmp(r->depth, "tsa")) {
            metric_ablation(&name, "random", METRIC_LABEL_ALL, "delta_loss", METRIC_NONE);
            if (!pp_has(db, id, "ablation", name.name, name.params)) {
                fprintf(stderr, "[paper post] %s: learned vs random routing at the same α\n", id);
                bad += pp_ablate(id, MEASURE_GATES, ABLATE_RANDOM, results);
            }
            const paper_run *d = paper_depth_partner(runs, n, r, "none");
            if (d && !metric_partner(&name, METRIC_DIFFICULTY, d->t.run_id, DIFF_SEED, "rho") &&
                !pp_has(db, id, "analysis", name.name, name.params)) {
                fprintf(stderr, "[paper post] %s: per-token depth against the loss of dense %s\n", id, d->t.run_id);
                bad += pp_analyze(id, d->t.run_id, results);
            }
        } else if (!strcmp(r->depth, "early_exit") && !pp_has(db, id, "ablation", last_tau.name, last_tau.params)) {
            fprintf(stderr, "[paper post] %s: the early-exit τ frontier\n", id);
            bad += pp_ablate(id, MEASURE_EXIT, ABLATE_ZERO, results);
        } else if (!strcmp(r->depth, "none") &&
                   (paper_depth_partner(runs, n, r, "tsa") || paper_depth_partner(runs, n, r, "early_exit")) &&
                   !pp_has(db, id, "ablation", post_tau.name, post_tau.params)) {
            fprintf(stderr, "[paper post] %s: post-hoc early exit of the dense model\n", id);
            bad += pp_ablate(id, MEASURE_POSTHOC, ABLATE_ZERO, results);
        }
    }
    return bad;
}

static int paper_post(const char *results) {
    char err[1024];
    gl_db *db = NULL;
    paper_run *runs = NULL;
    int n = 0, bad = 0;
    claims_file cf = {0};
    char claims_path[GL_PATH_MAX + 64];
    run_repo_path(claims_path, sizeof claims_path, "experiments/paper/claims.ini"); /* the published numbers */
    if (claims_load(claims_path, &cf, err, sizeof err) || pp_open(&db, results, err, sizeof err) ||
        paper_collect(db, &runs, &n, err, sizeof err))
        goto fail;
    fprintf(stderr, "[paper post] %d finished runs in %s\n", n, results);
    for (int i = 0; i < n; i++) bad += pp_measure(db, &runs[i], results);
    free(runs);
    runs = NULL;
    if (paper_collect(db, &runs, &n, err, sizeof err)) goto fail; /* now with the headlines */
    bad += pp_match(runs, n, db, results, &cf);
    bad += pp_depth(runs, n, db, results);
    free(runs);
    claims_free(&cf);
    db_close(db);
    if (bad) fprintf(stderr, "gatelab paper post: %d measurement%s failed (messages above); rerun to retry them\n", bad,
                     bad == 1 ? "" : "s");
    return bad ? 1 : 0;
fail:
    fprintf(stderr, "gatelab paper post: %s\n", err);
    free(runs);
    claims_free(&cf);
    db_close(db);
    return 1;
}

static int paper_report_cmd(const char *preset, const char *results, const char *out) {
    char err[1024], plan[GL_PATH_MAX + 64], rel[128];
    snprintf(rel, sizeof rel, "experiments/paper/%s.plan", preset);
    run_repo_path(plan, sizeof plan, rel);
    gl_db *db = NULL;
    int rows = 0;
    if (pp_open(&db, results, err, sizeof err) ||
        paper_report(db, preset, plan, results, out ? out : results, &rows, err, sizeof err)) {
        fprintf(stderr, "gatelab paper report: %s\n", err);
        db_close(db);
        return 1;
    }
    db_close(db);
    printf("wrote %s/REPORT.md: %d claim rows\n", out ? out : results, rows);
    return 0;
}

static const args_opt paper_opts[] = {
    {"results", ARGS_KEY(0), "DIR", "results folder of the preset (default $GATELAB_RESULTS or results)"},
    {"out", ARGS_KEY(1), "DIR", "report: where REPORT.md and its figures go (default DIR)"},
    {0}};
const args_spec paper_spec = {
    "paper", "post | report PRESET [options]",
    "The stages of `make paper PRESET=smoke|local|full` after training (scripts/paper.sh):\n"
    "  post    measure what the claims need, for every finished run that lacks it (headline soft and hard,\n"
    "          TSA's hard in the paper's sparse form too, ablations, trace analysis, early exit matched to\n"
    "          TSA's α (also by the paper's τ protocol for a paper-form exit), random routing, the τ frontiers,\n"
    "          post-hoc exit, difficulty-proportional routing), recorded in the registry\n"
    "  report  REPORT.md from the registry and the traces alone",
    paper_opts};

int cmd_paper(int argc, char **argv) {
    const char *stage = NULL, *preset = NULL, *results = NULL, *out = NULL;
    args_parser p;
    args_begin(&p, &paper_spec, argc, argv);
    for (int k; (k = args_next(&p)) != ARGS_END;) {
        if (k < 0) return args_exit_code(k);
        if (k == ARGS_POS && !stage) stage = p.val;
        else if (k == ARGS_POS && !preset) preset = p.val;
        else if (k == ARGS_POS) return args_usage_error(&paper_spec, "unexpected argument '%s'", p.val);
        else if (k == ARGS_KEY(0)) results = p.val;
        else if (k == ARGS_KEY(1)) out = p.val;
    }
    if (!results) results = run_results_dir(NULL);
    if (stage && !strcmp(stage, "post") && !preset && !out) return paper_post(results);
    if (stage && !strcmp(stage, "report") && preset) return paper_report_cmd(preset, results, out);
    if (!stage) return args_usage_error(&paper_spec, "say which stage: post or report PRESET");
    if (!strcmp(stage, "post"))
        return args_usage_error(&paper_spec, "post takes no %s", preset ? "PRESET" : "--out");
    if (!strcmp(stage, "report")) return args_usage_error(&paper_spec, "report needs a PRESET (smoke, local or full)");
    return args_usage_error(&paper_spec, "unknown stage '%s' (post or report)", stage);
}
