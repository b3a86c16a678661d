/*
 * cmd_analyze.c — `gatelab analyze RUN [--results DIR] [--db PATH] [--out DIR] [--no-db]`
 * and `gatelab analyze TSA_RUN --difficulty DENSE_RUN [--windows N] [--seed S] [--batch B]`.
 *
 * With --difficulty it reads no trace: it loads both checkpoints and
 * measures difficulty-proportional routing (analysis/difficulty.h: the TSA
 * run's per-token depth, routed hard, against the dense run's per-token
 * loss on the same validation windows, Spearman ρ with a 95 % bootstrap
 * interval over windows), recorded on the TSA run as difficulty.* rows.
 *
 * Reads the run's trace.h5 (every evaluation step) and writes what its gates
 * did (analysis/analyze_trace.c): TSV files into <run>/analysis/ (or --out),
 * metric rows into the registry (split "analysis"; --db defaults to the
 * gatelab.db two folders above the run folder, where `gatelab train` put
 * it), and a readable summary of the last evaluation on stdout.  The
 * checkpoint, when there is one, only supplies the vocabulary so the
 * per-token files show characters.  Files and names: docs/analysis.md.
 */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/analyze.h"
#include "analysis/difficulty.h"
#include "analysis/settle.h"
#include "analysis/gate_bands.h"
#include "analysis/figures.h"
#include "analysis/report.h"
#include "model/gatekind.h"
#include "cmd_seeds.h"
#include "args.h"
#include "cli.h"
#include "resolve.h"
#include "store/fileio.h"
#include "store/data.h"
#include "store/registry.h"
#include "store/rundir.h"
#include "store/trace.h"

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

/* --difficulty: both checkpoints, one measurement, rows on the TSA run.  Returns the exit code. */
static int an_difficulty(const an_args *a) {
    static gl_run tsa, dense;
    gl_dataset ds, dt;
    memset(&ds, 0, sizeof ds);
    memset(&dt, 0, sizeof dt);
    char err[2048] = "";
    static resolve_run rt, rp;
    report_metrics rm = {0};
    gl_db *db = NULL;
    diff_result r;
    int rc = 1;
    if (resolve_run_arg(a->run, a->db, a->results, RESOLVE_DIR, &rt, err, sizeof err) ||
        resolve_run_arg(a->partner, a->db, a->results, RESOLVE_DIR, &rp, err, sizeof err) ||
        run_open(&tsa, rt.dir, rt.results, a->batch, err, sizeof err) ||
        run_open(&dense, rp.dir, rp.results, a->batch, err, sizeof err))
        goto fail;
    const char *run_id = rt.id, *partner_id = rp.id, *db_path = rt.db;
    if (data_open(&ds, &tsa.mf.data, tsa.model.cfg.seq_len, tsa.mf.train.seed, err, sizeof err) ||
        data_open(&dt, &dense.mf.data, dense.model.cfg.seq_len, dense.mf.train.seed, err, sizeof err))
        goto fail;
    if (diff_measure(&tsa.model, &ds, &dense.model, &dt, SPLIT_VAL, a->windows, DIFF_RESAMPLES, (uint64_t)a->seed,
                     &r, err, sizeof err))
        goto fail;
    printf("gatelab analyze: run %s against dense %s | val[0,%ld) %.0f tokens | mean depth %.3f of %d blocks\n"
           "  Spearman ρ(depth, dense loss) = %.4f, 95 %% bootstrap interval over windows [%.4f, %.4f] "
           "(%d of %d resamples, seed %ld)\n",
           run_id, partner_id, r.windows, r.tokens, r.depth_mean, tsa.model.cfg.n_layer, r.rho, r.rho_lo, r.rho_hi,
           r.resamples_used, DIFF_RESAMPLES, a->seed);
    if (!a->no_db) {
        rm.prov = db_prov("val", 0, r.windows, r.tokens);
        if (diff_metrics(&r, partner_id, (uint64_t)a->seed, tsa.st.step, &rm, err, sizeof err) ||
            db_open(&db, db_path, err, sizeof err) || report_metrics_flush(&rm, db, run_id, err, sizeof err))
            goto fail;
        printf("registry: difficulty.* rows (split \"analysis\", partner %s) for run %s in %s\n", partner_id, run_id,
               db_path);
    }
    rc = 0;
    goto done;
fail:
    fprintf(stderr, "gatelab analyze: %s\n", err);
done:
    db_close(db);
    report_metrics_free(&rm);
    data_close(&ds);
    data_close(&dt);
    run_close(&tsa);
    run_close(&dense);
    return rc;
}

int cmd_analyze(int argc, char **argv) {
    an_args a;
    int pr = an_parse(argc, argv, &a);
    if (pr >= 0) return pr;
    if (a.partner) return an_difficulty(&a);
    if (a.seeds) {
        char e[2048];
        if (analyze_seeds(a.seeds, a.results, a.windows, a.out, e, sizeof e) == 0) return 0;
        fprintf(stderr, "gatelab analyze: %s\n", e);
        return 1;
    }
    const char *arg = a.run, *results = a.results, *out_arg = a.out;
    const int no_db = a.no_db;
    char err[2048] = "", dir[GL_PATH_MAX], trace_path[GL_PATH_MAX + 16], out_dir[GL_PATH_MAX + 16],
         db_path[GL_PATH_MAX + 16], run_id[256];
    gl_trace_data td;
    memset(&td, 0, sizeof td);
    report_metrics rm = {0};
    gl_db *db = NULL;
    static gl_run run;
    static analyze_summary s;
    int rc = 1, have_run = 0;
    const char *rdir = run_results_dir(results);
    resolve_run rr;
    if (resolve_run_arg(arg, a.db, results, RESOLVE_DIR, &rr, err, sizeof err)) goto fail;
    snprintf(dir, sizeof dir, "%s", rr.dir);
    snprintf(run_id, sizeof run_id, "%s", rr.id);
    snprintf(trace_path, sizeof trace_path, "%s/%s", dir, RUN_TRACE);
    if (access(trace_path, R_OK) != 0) {
        snprintf(err, sizeof err, "%s: no trace (train with log.trace = 1)", trace_path);
        goto fail;
    }
    if (trace_read(trace_path, &td, err, sizeof err)) goto fail;
    char e2[1024];
    if (run_open(&run, dir, rdir, 1, e2, sizeof e2) == 0) have_run = 1;
    else fprintf(stderr, "gatelab analyze: note: %s; probe tokens are shown as ids\n", e2);
    if (out_arg) snprintf(out_dir, sizeof out_dir, "%s", out_arg);
    else snprintf(out_dir, sizeof out_dir, "%s/analysis", dir);
    if (analyze_trace(&td, have_run ? run.st.vocab : NULL, have_run ? ckpt_vocab_bytes(&run.st) : 0, out_dir, &rm, &s, err,
                      sizeof err))
        goto fail;
    /* each per-token gate over training: quantile bands per block (analysis/gate_bands.h, gate_bands.gp) */
    char bands[GATE_COUNT][64];
    int n_bands = 0;
    for (int g = 0; g < GATE_COUNT; g++) {
        if (!td.gate[g] || !gatekind_per_token((gl_gate)g)) continue;
        char tsv[GL_PATH_MAX + 96], fig_dir[GL_PATH_MAX + 16], base[GL_PATH_MAX + 400], vars[600];
        int rows;
        snprintf(tsv, sizeof tsv, "%s/gate_bands_%s.tsv", out_dir, gatekind_info[g].key);
        if (gate_bands_write(&td, (gl_gate)g, tsv, &rows, err, sizeof err)) goto fail;
        snprintf(fig_dir, sizeof fig_dir, "%s/figures", rr.results);
        snprintf(base, sizeof base, "%s/gate_bands_%s_%s", fig_dir, run_id, gatekind_info[g].key);
        snprintf(vars, sizeof vars, "title='%s: %s over training (probe tokens)'; ylabel='%s'", run_id,
                 gatekind_info[g].title, gatekind_info[g].symbol);
        if (rows && (fileio_mkdir_p(fig_dir, e2, sizeof e2) || figures_gnuplot("gate_bands.gp", tsv, base, vars, e2, sizeof e2)))
            fprintf(stderr, "gatelab analyze: note: no gate-band figure for %s: %s\n", gatekind_info[g].key, e2);
        else if (rows) snprintf(bands[n_bands++], sizeof bands[0], "%s", gatekind_info[g].key);
    }
    /* TSA / early exit: the logit lens where tokens halt (analysis/settle.h), from the checkpoint */
    settle_result st = {0};
    int routed = have_run && (run.model.cfg.depth_routing == DR_TSA || run.model.cfg.depth_routing == DR_EARLY_EXIT);
    if (routed) {
        gl_dataset ds;
        if (data_open_tok(&ds, &run.mf.data, run.model.cfg.seq_len, run.mf.train.seed,
                          run.st.tokenizer == TOK_BPE ? &run.st.bpe : NULL, e2, sizeof e2) ||
            settle_measure(&run.model, &ds, 0, &st, e2, sizeof e2)) {
            fprintf(stderr, "gatelab analyze: note: no halting statistics (settled_at_halt): %s\n", e2);
            routed = 0;
        } else if (settle_metrics(&st, run.st.step, &rm, err, sizeof err)) {
            data_close(&ds);
            goto fail;
        }
        data_close(&ds);
    }
    int n_rows = rm.n;
    if (!no_db) {
        snprintf(db_path, sizeof db_path, "%s", rr.db);
        if (db_open(&db, db_path, err, sizeof err) || report_metrics_flush(&rm, db, run_id, err, sizeof err)) {
            fprintf(stderr, "gatelab analyze: the files are written, but the registry was not updated: %s\n", err);
            goto fail_quiet;
        }
    }
    an_print_summary(run_id, &s, out_dir);
    for (int i = 0; i < n_bands; i++)
        printf("%s%s/figures/gate_bands_%s_%s.{png,pdf,svg}", i ? ", " : "figures: ", rr.results, run_id, bands[i]);
    if (n_bands) printf(" (each gate's quantile bands over training)\n");
    if (routed)
        printf("\nHalting and the logit lens (val[0,%ld), %.0f tokens, checkpoint step %ld): %.1f %% of tokens halt "
               "before the last block, at block %.2f on average; %.1f %% of them had their final top-1 prediction "
               "settled there\n", st.windows, st.tokens, run.st.step, 100.0 * (st.tokens > 0 ? st.halted / st.tokens : 0),
               st.halted > 0 ? st.block_sum / st.halted : 0.0, 100.0 * (st.halted > 0 ? st.settled / st.halted : 0));
    if (!no_db) printf("registry: %d rows (split \"%s\") for run %s in %s\n", n_rows, ANALYZE_SPLIT, run_id, db_path);
    rc = 0;
    goto done;
fail:
    fprintf(stderr, "gatelab analyze: %s\n", err);
fail_quiet:
    rc = 1;
done:
    db_close(db);
    report_metrics_free(&rm);
    trace_data_free(&td);
    if (have_run) run_close(&run);
    return rc;
}
