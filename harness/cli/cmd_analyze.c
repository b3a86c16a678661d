/*
 * cmd_analyze.c — `gatelab analyze RUN [--results DIR] [--db PATH] [--out DIR] [--no-db]`.
 *
 * Reads the run's trace.h5 (every evaluation step) and writes what its gates
 * did (analysis/analyze_trace.c): TSV files into <run>/analysis/ (or --out),
 * metric rows into the registry (split "analysis"; --db defaults to the
 * gatelab.db two folders above the run folder, where `gatelab train` put
 * it), and a readable summary of the last evaluation on stdout.  The
 * checkpoint, when there is one, only supplies the vocabulary so the
 * per-token files show characters.  Files and names: docs/analysis.md.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/analyze.h"
#include "args.h"
#include "cli.h"
#include "store/registry.h"
#include "store/rundir.h"
#include "store/trace.h"

static const args_opt an_opts[] = {
    {"results", ARGS_KEY(0), "DIR", "results folder that holds runs/<RUN> (default $GATELAB_RESULTS or results)"},
    {"db", ARGS_KEY(1), "PATH", "registry for the metric rows (default <run folder>/../../gatelab.db)"},
    {"out", ARGS_KEY(2), "DIR", "TSV files (default <run folder>/analysis)"},
    {"no-db", ARGS_KEY(3), NULL, "write the files only, nothing to the registry"},
    {0}};
static const args_spec an_spec = {
    "analyze", "RUN [options]",
    "What a run's gates did, from its trace.h5: sparsity, depth profile, head map and token categories, as TSV\n"
    "files, registry rows (split \"analysis\") and a summary of the last evaluation.  RUN: a run id or run folder.",
    an_opts};

typedef struct {
    const char *run, *results, *db, *out;
    int no_db;
} an_args;

/* Read argv into a.  Returns -1 to go on, or the exit code (0 after --help, 2 bad usage). */
static int an_parse(int argc, char **argv, an_args *a) {
    memset(a, 0, sizeof *a);
    args_parser p;
    args_begin(&p, &an_spec, argc, argv);
    for (int k; (k = args_next(&p)) != ARGS_END;) {
        if (k < 0) return args_exit_code(k);
        if (k == ARGS_POS && a->run) return args_usage_error(&an_spec, "one RUN only ('%s' and '%s' given)", a->run, p.val);
        if (k == ARGS_POS) a->run = p.val;
        else if (k == ARGS_KEY(0)) a->results = p.val;
        else if (k == ARGS_KEY(1)) a->db = p.val;
        else if (k == ARGS_KEY(2)) a->out = p.val;
        else if (k == ARGS_KEY(3)) a->no_db = 1;
    }
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

int cmd_analyze(int argc, char **argv) {
    an_args a;
    int pr = an_parse(argc, argv, &a);
    if (pr >= 0) return pr;
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
    if (run_resolve(arg, rdir, dir, sizeof dir, err, sizeof err)) goto fail;
    args_run_id(dir, run_id, sizeof run_id);
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
    if (analyze_trace(&td, have_run ? run.st.vocab : NULL, have_run ? run.st.vocab_size : 0, out_dir, &rm, &s, err,
                      sizeof err))
        goto fail;
    int n_rows = rm.n;
    if (!no_db) {
        args_run_db_path(a.db, dir, db_path, sizeof db_path);
        if (db_open(&db, db_path, err, sizeof err) || report_metrics_flush(&rm, db, run_id, err, sizeof err)) {
            fprintf(stderr, "gatelab analyze: the files are written, but the registry was not updated: %s\n", err);
            goto fail_quiet;
        }
    }
    an_print_summary(run_id, &s, out_dir);
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
