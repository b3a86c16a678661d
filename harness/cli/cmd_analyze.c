/*
 * cmd_analyze.c — `gatelab analyze RUN [--results DIR] [--db PATH] [--out DIR] [--no-db]`
 * and `gatelab analyze TSA_RUN --difficulty DENSE_RUN [--windows N] [--seed S] [--batch B]`.
 *
 * With --difficulty it reads no trace: it loads both checkpoints and
 * measures difficulty-proportional routing (analysis/measure/difficulty.h: the TSA
 * run's per-token depth, routed hard, against the dense run's per-token
 * loss on the same validation windows, Spearman ρ with a 95 % bootstrap
 * interval over windows), recorded on the TSA run as difficulty.* rows.
 *
 * Reads the run's trace.h5 (every evaluation step) and writes what its gates
 * did (analysis/measure/analyze_trace.c): TSV files into <run>/analysis/ (or --out),
 * metric rows into the registry (split "analysis"; --db defaults to the
 * gatelab.db two folders above the run folder, where `gatelab train` put
 * it), and a readable summary of the last evaluation on stdout.  The
 * checkpoint, when there is one, only supplies the vocabulary so the
 * per-token files show characters.  Files and names: docs/analysis.md.
 * Both measurements are analysis/pipeline/measure.h (measure_trace, measure_difficulty);
 * this file parses, prints, and is what `paper post` calls (cmd_measure.h).
 */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/measure/analyze.h"
#include "analysis/measure/difficulty.h"
#include "analysis/pipeline/measure.h"
#include "model/gatekind.h"
#include "cmd_measure.h"
#include "cmd_seeds.h"
#include "args.h"
#include "cli.h"
#include "resolve.h"

static const args_opt an_opts[] = {
    {"results", ARGS_KEY(0), "DIR", "results folder that holds runs/<RUN> (default $GATELAB_RESULTS or results)"},
    {"db", ARGS_KEY(1), "PATH", "registry for the metric rows (default <run folder>/../../gatelab.db)"},
    {"out", ARGS_KEY(2), "DIR", "TSV files (default <run folder>/analysis)"},
    {"no-db", ARGS_KEY(3), NULL, "write the files only, nothing to the registry"},
    {"difficulty", ARGS_KEY(4), "DENSE_RUN", "per-token depth (hard routing) against DENSE_RUN's per-token loss"},
    {"windows", ARGS_KEY(5), "N", "difficulty: the first N validation windows (default: the whole split)"},
    {"seed", ARGS_KEY(6), "S", "difficulty: the bootstrap seed (default 22)"},
    {"batch", ARGS_KEY(7), "B", "difficulty: sequences per forward pass (default 16, at most 4096)"},
    {"seeds", ARGS_KEY(8), "RUN1,RUN2,...", "instead of RUN: head profiles and halted sets compared across seeds"},
    {0}};
const args_spec an_spec = {
    "analyze", "RUN [options]",
    "What a run's gates did, from its trace.h5: sparsity, depth profile, head map and token categories, as TSV\n"
    "files, registry rows (split \"analysis\") and a summary of the last evaluation.  RUN: a run id, a unique prefix of\n"
    "one, or a run folder.",
    an_opts};

typedef struct {
    const char *run, *results, *db, *out, *partner, *seeds;
    int no_db, batch;
    long windows, seed;
} an_args;

/* Read argv into a.  Returns -1 to go on, or the exit code (0 after --help, 2 bad usage). */
static int an_parse(int argc, char **argv, an_args *a) {
    memset(a, 0, sizeof *a);
    a->batch = 16;
    a->seed = DIFF_SEED;
    args_parser p;
    args_begin(&p, &an_spec, argc, argv);
    int bad = 0;
    for (int k; !bad && (k = args_next(&p)) != ARGS_END;) {
        if (k < 0) return args_exit_code(k);
        if (k == ARGS_POS && a->run) return args_usage_error(&an_spec, "one RUN only ('%s' and '%s' given)", a->run, p.val);
        if (k == ARGS_POS) a->run = p.val;
        else if (k == ARGS_KEY(0)) a->results = p.val;
        else if (k == ARGS_KEY(1)) a->db = p.val;
        else if (k == ARGS_KEY(2)) a->out = p.val;
        else if (k == ARGS_KEY(3)) a->no_db = 1;
        else if (k == ARGS_KEY(4)) a->partner = p.val;
        else if (k == ARGS_KEY(5)) bad = args_get_long(&p, 1, LONG_MAX, &a->windows);
        else if (k == ARGS_KEY(6)) bad = args_get_long(&p, 0, 4294967295L, &a->seed);
        else if (k == ARGS_KEY(7)) bad = args_get_int(&p, 1, 4096, &a->batch);
        else if (k == ARGS_KEY(8)) a->seeds = p.val;
    }
    if (bad) return 2;
    if (a->seeds && (a->run || a->partner))
        return args_usage_error(&an_spec, "--seeds RUN1,RUN2,... replaces RUN (and --difficulty)");
    if (a->seeds) return -1;
    if (!a->partner && (a->windows || a->seed != DIFF_SEED || a->batch != 16))
        return args_usage_error(&an_spec, "--windows, --seed and --batch belong to --difficulty DENSE_RUN");
    if (a->partner && a->out) return args_usage_error(&an_spec, "--difficulty writes registry rows only: drop --out");
    return a->run ? -1 : args_usage_error(&an_spec, "RUN is missing");
}

static void an_print_summary(const char *run_id, const analyze_summary *s, const char *out_dir) {
    printf("gatelab analyze: run %s | last evaluation at step %ld (%d in the trace) | %ld probe tokens: "
           "%ld structural, %ld functional, %ld semantic\n",
           run_id, s->step, s->n_steps, s->n_probe, s->cat_count[0], s->cat_count[1], s->cat_count[2]);
    if (s->head_gate >= 0) {
        const gl_gate_info *gi = &gatekind_info[s->head_gate];
        const char *y = gi->symbol;
        const analyze_head_gate *h = &s->head;
        char c0[16], c1[16], c2[16];
        snprintf(c0, sizeof c0, "%s=0", y);
        snprintf(c1, sizeof c1, "%s<1e-2", y);
        snprintf(c2, sizeof c2, "%s<0.1", y);
        printf("\n%s by block (over probe tokens and KV heads)\n", gi->title);
        printf("  %5s %8s %7s %8s %8s %7s %7s %9s %8s %8s %8s\n", "block", "mean", c0, c1, c2, "Gini", "Hoyer",
               "H(heads)", "struct", "funct", "semant");
        for (int n = 0; n < s->n_layer; n++) {
            if (!h->gated[n]) continue;
            const gates_summary *g = &h->layer[n];
            printf("  %5d %8.4f %7.3f %8.3f %8.3f %7.3f %7.3f %9.3f %8.4f %8.4f %8.4f\n", n, g->mean, g->frac_zero,
                   g->frac_below[1], g->frac_below[2], g->gini, g->hoyer, h->entropy[n], h->cat[n][0], h->cat[n][1],
                   h->cat[n][2]);
        }
        printf("\n  mean %s by block (rows) and KV head (columns):\n  %5s", y, "");
        for (int j = 0; j < s->n_kv_head && j < ANALYZE_MAX_HEADS; j++) printf(" %7s%-2d", "H", j);
        printf("\n");
        for (int n = 0; n < s->n_layer; n++) {
            if (!h->gated[n]) continue;
            printf("  %5d", n);
            for (int j = 0; j < s->n_kv_head && j < ANALYZE_MAX_HEADS; j++) printf(" %9.4f", h->head_mean[n][j]);
            printf("\n");
        }
        printf("  %s over every gated block: %.4f\n", y, h->mean);
    }
    if (s->has[GATE_LAMBDA]) {
        printf("\nResFormer coefficients by block\n  %5s %9s %9s\n", "block", "λ1", "λ2");
        for (int n = 0; n < s->n_layer; n++) printf("  %5d %9.4f %9.4f\n", n, s->lambda1[n], s->lambda2[n]);
    }
    if (s->has[GATE_P]) {
        printf("\nTSA routing: active fraction α %.4f (TLOps saved %.1f %%) | expected depth %.3f blocks soft, "
               "%.3f hard, of %d\n",
               s->active_frac, 100.0 * (1.0 - s->active_frac) * (s->n_layer - 1) / s->n_layer, s->depth_soft,
               s->depth_hard, s->n_layer);
        printf("  %5s %8s %8s %9s %9s %9s\n", "block", "mean p", "runs", "p struct", "p funct", "p semant");
        for (int n = 1; n < s->n_layer; n++)
            printf("  %5d %8.4f %8.3f %9.4f %9.4f %9.4f\n", n, s->p_mean[n], s->p_active[n], s->p_cat[n][0], s->p_cat[n][1],
                   s->p_cat[n][2]);
    }
    /* every per-token gate with one value per block, through its table row */
    for (int g = 0; g < GATE_COUNT; g++) {
        const gl_gate_info *gi = &gatekind_info[g];
        if (!s->has[g] || gi->axis[0] != GAX_LAYER || gi->axis[1] != GAX_TOKEN || gi->axis[2] != GAX_NONE) continue;
        printf("\n%s: mean by block\n  %5s %9s %9s %9s %9s\n", gi->title, "block", gi->symbol, "struct", "funct",
               "semant");
        for (int n = 0; n < s->n_layer; n++)
            printf("  %5d %9.4f %9.4f %9.4f %9.4f\n", n, s->tok_mean[g][n], s->tok_cat[g][n][0], s->tok_cat[g][n][1],
                   s->tok_cat[g][n][2]);
    }
    printf("\nfiles in %s:", out_dir);
    for (int i = 0; i < s->n_files; i++) printf(" %s", s->files[i]);
    printf("\n");
}

/* Resolve arg (with --db and --results) into t, backed by rr. */
static int an_target(const char *arg, const char *db, const char *results, resolve_run *rr, evalrun_target *t,
                     char *err, size_t errlen) {
    if (resolve_run_arg(arg, db, results, RESOLVE_DIR, rr, err, errlen)) return -1;
    *t = (evalrun_target){rr->id, rr->dir, rr->results, rr->db};
    return 0;
}

int cmd_analyze_difficulty(const char *run_arg, const char *dense_arg, const char *db, const char *results,
                           measure_difficulty_opts *o, int no_db) {
    static resolve_run rt, rp;
    static measure_difficulty_result r;
    evalrun_target tsa, dense;
    char err[2048] = "";
    if (an_target(run_arg, db, results, &rt, &tsa, err, sizeof err) ||
        an_target(dense_arg, db, results, &rp, &dense, err, sizeof err) ||
        measure_difficulty(&tsa, &dense, o, &r, err, sizeof err))
        goto fail;
    const diff_result *d = &r.r;
    printf("gatelab analyze: run %s against dense %s | val[0,%ld) %.0f tokens | mean depth %.3f of %d blocks\n"
           "  Spearman ρ(depth, dense loss) = %.4f, 95 %% bootstrap interval over windows [%.4f, %.4f] "
           "(%d of %d resamples, seed %ld)\n",
           tsa.id, dense.id, d->windows, d->tokens, d->depth_mean, r.n_layer, d->rho, d->rho_lo, d->rho_hi,
           d->resamples_used, DIFF_RESAMPLES, (long)o->seed);
    if (!no_db) {
        if (measure_difficulty_record(&tsa, &dense, o, &r, err, sizeof err)) goto fail;
        printf("registry: difficulty.* rows (split \"analysis\", partner %s) for run %s in %s\n", dense.id, tsa.id,
               tsa.db);
    }
    return 0;
fail:
    fprintf(stderr, "gatelab analyze: %s\n", err);
    return 1;
}

/* r's notes on stderr, one "gatelab analyze: note: ..." line each. */
static void an_print_notes(const measure_trace_result *r) {
    for (const char *s = r->notes; *s;) {
        size_t len = strcspn(s, "\n");
        fprintf(stderr, "gatelab analyze: %.*s\n", (int)len, s);
        s += len + (s[len] == '\n');
    }
}

int cmd_analyze_trace(const char *run_arg, const char *db, const char *results, measure_trace_opts *o) {
    static measure_trace_result r;
    memset(&r, 0, sizeof r);
    resolve_run rr;
    evalrun_target t;
    char err[2048] = "";
    if (an_target(run_arg, db, results, &rr, &t, err, sizeof err)) goto fail;
    int mrc = measure_trace(&t, o, &r, err, sizeof err);
    an_print_notes(&r);
    if (mrc) goto fail;
    an_print_summary(t.id, &r.s, r.out_dir);
    char fig_dir[GL_PATH_MAX + 160];
    measure_figure_dir(&t, fig_dir, sizeof fig_dir);
    for (int i = 0; i < r.n_bands; i++)
        printf("%s%s/gate_bands_%s_%s.{png,pdf,svg}", i ? ", " : "figures: ", fig_dir, t.id, r.bands[i]);
    if (r.n_bands) printf(" (each gate's quantile bands over training)\n");
    const settle_result *st = &r.st;
    if (r.routed)
        printf("\nHalting and the logit lens (val[0,%ld), %.0f tokens, checkpoint step %ld): %.1f %% of tokens halt "
               "before the last block, at block %.2f on average; %.1f %% of them had their final top-1 prediction "
               "settled there\n", st->windows, st->tokens, r.step, 100.0 * (st->tokens > 0 ? st->halted / st->tokens : 0),
               st->halted > 0 ? st->block_sum / st->halted : 0.0, 100.0 * (st->halted > 0 ? st->settled / st->halted : 0));
    if (!o->no_db) printf("registry: %d rows (split \"%s\") for run %s in %s\n", r.n_rows, ANALYZE_SPLIT, t.id, t.db);
    return 0;
fail:
    fprintf(stderr, "gatelab analyze: %s\n", err);
    return 1;
}

int cmd_analyze(int argc, char **argv) {
    an_args a;
    int pr = an_parse(argc, argv, &a);
    if (pr >= 0) return pr;
    if (a.partner) {
        measure_difficulty_opts o = {.windows = a.windows, .seed = (uint64_t)a.seed, .batch = a.batch};
        return cmd_analyze_difficulty(a.run, a.partner, a.db, a.results, &o, a.no_db);
    }
    if (a.seeds) {
        char e[2048];
        if (analyze_seeds(a.seeds, a.results, a.windows, a.out, e, sizeof e) == 0) return 0;
        fprintf(stderr, "gatelab analyze: %s\n", e);
        return 1;
    }
    measure_trace_opts o = {.out = a.out, .no_db = a.no_db};
    return cmd_analyze_trace(a.run, a.db, a.results, &o);
}
