/*
 * cmd_ablate.c — `gatelab ablate` (gate interventions) and `gatelab heads`
 * (every gate zeroed alone, ranked).
 *
 *   gatelab ablate RUN --mode zero|mean|resample|file|full-depth|random|exit|posthoc-exit [--layers 1,3] [--heads 2:0,L3H1]
 *                  [--values FILE] [--taus 0.5,0.9] [--windows N] [--batch B] [--threads N] [--results DIR]
 *                  [--db PATH] [--no-db]
 *   gatelab heads RUN [--windows N] [--batch B] [--threads N] [--results DIR] [--db PATH] [--out DIR] [--no-db]
 *                 [--no-figure] [--json]
 *
 * Flags are read from one table per command (args.h); --heads takes
 * BLOCK:KV_HEAD or TransformerLens's L<block>H<head> (args_heads).
 *
 * --threads defaults to the run's train.threads (0: every core).
 *
 * Both load the run's checkpoint, evaluate validation windows with the
 * model's overrides (analysis/measure/ablate.c), print a table and one JSON line
 * (heads: with --json; jsonl.h, starting with run_id and run_dir),
 * and log rows under split "ablation" at the run's step, each stamped with
 * what it was measured on (the evaluation windows and their tokens), so a
 * rerun on other windows is kept beside the first, never over it.  heads also writes
 * heads.md, heads.tsv and heads_grid.tsv into <run>/analysis/ (or --out) and
 * draws the block × KV-head ΔL map into <results>/figures/<experiment>/heads_<run>.{png,pdf}.
 * Definitions of the modes and of the evaluation / reference tokens:
 * analysis/measure/ablate.h and docs/analysis.md.  Opening the run, the measurement
 * and its rows are analysis/pipeline/measure.h (measure_ablate, measure_ablation_record);
 * this file parses, prints, and is what `paper post` calls (cmd_ablate_run).
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/measure/ablate.h"
#include "analysis/pipeline/measure.h"
#include "store/fileio.h"
#include "analysis/render/figures.h"
#include "analysis/measure/heads.h"
#include "cmd_attrib.h"
#include "args.h"
#include "cli.h"
#include "cmd_measure.h"
#include "jsonl.h"
#include "resolve.h"
#include "store/parse.h"
#include "store/data.h"
#include "store/metric.h"
#include "store/registry.h"
#include "store/rundir.h"

typedef struct {
    const char *arg, *results, *db, *out, *layers, *heads, *taus, *mode;
    long windows;
    const char *values; /* --mode file: "block kv_head value" lines */
    int batch, threads, no_db, no_figure, json, attribution;
    char heads_buf[1024]; /* --heads rewritten as "2:0,3:1" (args_heads) */
} ab_args;

/* Flags of both commands; ablate and heads each list theirs (heads: no mode, gates or τ). */
#define AB_COMMON                                                                                                    \
    {"windows", ARGS_KEY(0), "N", "evaluation windows (default 64, fewer when the split is short)"},                 \
        {"batch", ARGS_KEY(1), "B", "sequences per forward pass (default 16, at most 4096)"},                        \
        {"threads", ARGS_KEY(2), "N", "OpenMP threads (default: the run's train.threads; 0 = every core)"},          \
        {"results", ARGS_KEY(3), "DIR", "results folder that holds runs/<RUN> (default $GATELAB_RESULTS or results)"}, \
        {"db", ARGS_KEY(4), "PATH", "registry for the rows (default <run folder>/../../gatelab.db)"},                \
        {"no-db", ARGS_KEY(5), NULL, "write nothing to the registry"}

static const args_opt ablate_opts[] = {
    {"mode", ARGS_KEY(10), "M", "zero, mean, resample, file, full-depth, random, exit or posthoc-exit (required)"},
    {"layers", ARGS_KEY(11), "1,3", "zero/mean/resample: every gate of these blocks"},
    {"heads", ARGS_KEY(12), "2:0,L3H1", "zero/mean/resample: these gates, BLOCK:KV_HEAD or TransformerLens's L<block>H<head>"},
    {"values", ARGS_KEY(13), "FILE", "file: lines \"block kv_head value\", each gate set to its value"},
    {"taus", ARGS_KEY(14), "T,...", "exit, posthoc-exit: thresholds τ (default 0.3,0.4,0.5,0.6,0.7,0.8,0.9,0.95)"},
    AB_COMMON,
    {0}};
const args_spec ablate_spec = {
    "ablate", "RUN --mode zero|mean|resample|file|full-depth|random|exit|posthoc-exit [options]",
    "Gate interventions on validation windows: a table, one JSON line, and rows in the registry (split \"ablation\").\n"
    "  zero/mean: SATFormer α (or ResFormer λ1 with zero) on the selected gates (default: all)\n"
    "  resample: each token's selected gates taken from a random token of the reference windows\n"
    "  file: each gate listed in --values FILE set to its value\n"
    "  full-depth/random: TSA routing forced to p = 0 / random at the learned active fraction\n"
    "  exit: early exit at each threshold τ of --taus\n"
    "  posthoc-exit: a dense model exits each token at the first block whose residual, through its own final\n"
    "    norm and head, is confident >= τ (later blocks compute only its k and v)",
    ablate_opts};

static const args_opt heads_opts[] = {
    AB_COMMON,
    {"out", ARGS_KEY(20), "DIR", "heads.md, heads.tsv and heads_grid.tsv (default <run folder>/analysis)"},
    {"no-figure", ARGS_KEY(21), NULL, "do not draw <results>/figures/<experiment>/heads_<run>.{png,pdf}"},
    {"json", ARGS_KEY(22), NULL, "also print the ranking as one JSON line"},
    {"attribution", ARGS_KEY(23), NULL, "first-order estimate of zeroing each gate and router (one backward) beside the exact ΔL"},
    {0}};
const args_spec heads_spec = {
    "heads", "RUN [options]",
    "Which heads read V1: every gate zeroed alone, ranked by the loss increase ΔL (nats/token).",
    heads_opts};

static const char *const ab_modes[] = {"zero", "mean", "resample", "file", "full-depth", "random", "exit", "posthoc-exit"};

/* Read argv into a.  Returns -1 to go on, or the exit code (0 after --help, 2 bad usage). */
static int ab_parse(int argc, char **argv, ab_args *a, int heads) {
    memset(a, 0, sizeof *a);
    a->batch = 16;
    const args_spec *spec = heads ? &heads_spec : &ablate_spec;
    args_parser p;
    args_begin(&p, spec, argc, argv);
    int bad = 0;
    for (int k; !bad && (k = args_next(&p)) != ARGS_END;) {
        if (k < 0) return args_exit_code(k);
        switch (k) {
        case ARGS_POS:
            if (a->arg) return args_usage_error(spec, "one RUN only ('%s' and '%s' given)", a->arg, p.val);
            a->arg = p.val;
            break;
        case ARGS_KEY(0): bad = args_get_long(&p, 1, LONG_MAX, &a->windows); break;
        case ARGS_KEY(1): bad = args_get_int(&p, 1, 4096, &a->batch); break;
        case ARGS_KEY(2): bad = args_get_int(&p, 0, 1024, &a->threads); break;
        case ARGS_KEY(3): a->results = p.val; break;
        case ARGS_KEY(4): a->db = p.val; break;
        case ARGS_KEY(5): a->no_db = 1; break;
        case ARGS_KEY(10): { /* in any case: Zero is zero */
            int m;
            bad = args_get_choice(&p, "zero,mean,resample,file,full-depth,random,exit,posthoc-exit", &m);
            if (!bad) a->mode = ab_modes[m];
            break;
        }
        case ARGS_KEY(11): a->layers = p.val; break;
        case ARGS_KEY(12): a->heads = p.val; break;
        case ARGS_KEY(13): a->values = p.val; break;
        case ARGS_KEY(14): a->taus = p.val; break;
        case ARGS_KEY(20): a->out = p.val; break;
        case ARGS_KEY(21): a->no_figure = 1; break;
        case ARGS_KEY(22): a->json = 1; break;
        case ARGS_KEY(23): a->attribution = 1; break;
        }
    }
    if (bad) return 2;
    if (!a->arg) return args_usage_error(spec, "RUN is missing");
    if (!heads && !a->mode) return args_usage_error(spec, "--mode is missing");
    char err[1200];
    if (a->heads && args_heads("--heads", a->heads, a->heads_buf, sizeof a->heads_buf, err, sizeof err)) {
        fprintf(stderr, "gatelab ablate: %s\n", err);
        return 2;
    }
    if (a->heads) a->heads = a->heads_buf;
    if (a->layers && args_int_list("--layers", a->layers, 0, GL_MAX_LAYERS - 1, err, sizeof err)) {
        fprintf(stderr, "gatelab ablate: %s\n", err);
        return 2;
    }
    return -1;
}

/* Resolve a->arg (with --db and --results) into t, backed by rr. */
static int ab_target(const ab_args *a, resolve_run *rr, evalrun_target *t, char *err, size_t errlen) {
    if (resolve_run_arg(a->arg, a->db, a->results, RESOLVE_DIR, rr, err, errlen)) return -1;
    *t = (evalrun_target){rr->id, rr->dir, rr->results, rr->db};
    return 0;
}

/* ablate_init's warning (fewer windows than asked), as the commands print it. */
static void ab_warn(const measure_ablation *e) {
    if (e->have_ctx && e->warn[0]) fprintf(stderr, "gatelab: warning: %s\n", e->warn);
}

static void ab_print_rows(const measure_ablation *e, int n) {
    if (n) printf("registry: %d rows (split \"%s\") for run %s in %s\n", n, ABLATE_SPLIT, e->run_id, e->db_path);
}

/* The line's head: the run (jsonl_run), its step and the mode. */
static json_t *ab_json_head(const measure_ablation *e, const char *mode) {
    json_t *o = jsonl_run(e->run_id, e->run.dir);
    jsonl_set(o, "step", jsonl_int(e->run.st.step));
    jsonl_set(o, "mode", jsonl_str(mode));
    return o;
}

/* The table and the JSON line of one ablation.  Returns 0, or -1 when the line could not be written. */
static int ab_print_result(const measure_ablation *e) {
    const ablate_ctx *c = &e->ctx;
    const ablate_result *r = &e->res;
    const char *label = e->label;
    printf("gatelab ablate: run %s | mode %s | gates %s | evaluation %s (%.0f scored tokens)%s%s\n", e->run_id,
           ablate_mode_name(r->mode), label, c->eval_desc, r->base.tokens, ablate_mode_uses_reference(r->mode) ? " | reference " : "",
           ablate_mode_uses_reference(r->mode) ? c->ref_desc : "");
    if (r->mode == ABLATE_RANDOM)
        printf("  baseline: the learned routers run hard at α = %.4f; control: random skipping with probability %.4f\n",
               r->base.active_frac, r->route_skip);
    printf("  %-12s %10s %12s %12s %10s\n", "tokens", "count", "base (nats)", "ablated", "ΔL");
    printf("  %-12s %10.0f %12.5f %12.5f %+10.5f   ± %.5f (paired SE)   exp(ΔL) = %.4f\n", "all", r->base.tokens,
           r->base.loss, r->ablated.loss, r->delta, r->delta_se, r->ppl_ratio);
    for (int k = 0; k < CAT_COUNT; k++)
        if (!isnan(r->delta_cat[k]))
            printf("  %-12s %10.0f %12.5f %12.5f %+10.5f\n", cat_name(k), r->base.cat_tokens[k], r->base.cat_loss[k],
                   r->ablated.cat_loss[k], r->delta_cat[k]);
    json_t *o = ab_json_head(e, ablate_mode_name(r->mode));
    jsonl_set(o, "gates", jsonl_str(label));
    jsonl_set(o, "eval", jsonl_str(c->eval_desc));
    jsonl_set(o, "reference", jsonl_str(ablate_mode_uses_reference(r->mode) ? c->ref_desc : NULL));
    jsonl_set(o, "tokens", jsonl_count(r->base.tokens));
    jsonl_set(o, "base_loss", jsonl_num(r->base.loss));
    jsonl_set(o, "loss", jsonl_num(r->ablated.loss));
    jsonl_set(o, "delta_loss", jsonl_num(r->delta));
    jsonl_set(o, "delta_loss_se", jsonl_num(r->delta_se));
    jsonl_set(o, "ppl_ratio", jsonl_num(r->ppl_ratio));
    if (r->mode == ABLATE_FULL_DEPTH || r->mode == ABLATE_RANDOM) {
        jsonl_set(o, "base_active_frac", jsonl_num(r->base.active_frac));
        jsonl_set(o, "active_frac", jsonl_num(r->ablated.active_frac));
    }
    json_t *cat = json_object();
    for (int k = 0; k < CAT_COUNT; k++) jsonl_set(cat, cat_name(k), jsonl_num(r->delta_cat[k]));
    jsonl_set(o, "delta_loss_by_category", cat);
    return jsonl_print(stdout, o);
}

/* The τ sweep's table and JSON line.  Returns 0, or -1 when the line could not be written. */
static int ab_print_exit(const measure_ablation *e) {
    const char *mode = e->kind == MEASURE_POSTHOC ? "posthoc-exit" : "exit";
    const ablate_eval *full = &e->full;
    const ablate_exit_point *pts = e->pts;
    const int n = e->n_pts, L = e->run.model.cfg.n_layer;
    printf("gatelab ablate: run %s | mode %s | evaluation %s (%.0f scored tokens) | full depth %.5f nats/token\n",
           e->run_id, mode, e->ctx.eval_desc, full->tokens, full->loss);
    printf("  %8s %10s %10s %12s %10s\n", "τ", "α", "TLOps %", "loss", "ΔL");
    for (int i = 0; i < n; i++)
        printf("  %8.3f %10.4f %10.2f %12.5f %+10.5f\n", pts[i].tau, pts[i].r.active_frac, 100 * pts[i].tlops_saved,
               pts[i].r.loss, pts[i].r.loss - full->loss);
    json_t *o = ab_json_head(e, mode), *points = json_array();
    jsonl_set(o, "eval", jsonl_str(e->ctx.eval_desc));
    jsonl_set(o, "layers", jsonl_int(L));
    jsonl_set(o, "tokens", jsonl_count(full->tokens));
    jsonl_set(o, "full_loss", jsonl_num(full->loss));
    for (int i = 0; i < n; i++) {
        json_t *pt = json_object();
        jsonl_set(pt, "tau", jsonl_num(pts[i].tau));
        jsonl_set(pt, "active_frac", jsonl_num(pts[i].r.active_frac));
        jsonl_set(pt, "tlops_saved", jsonl_num(pts[i].tlops_saved));
        jsonl_set(pt, "loss", jsonl_num(pts[i].r.loss));
        if (!isnan(pts[i].r.acc)) jsonl_set(pt, "acc", jsonl_num(pts[i].r.acc));
        json_array_append_new(points, pt);
    }
    jsonl_set(o, "points", points);
    return jsonl_print(stdout, o);
}

/* --taus for exit (posthoc 0) and posthoc-exit (1): a comma list of thresholds into o.  Returns 0, or -1. */
static int ab_taus(const char *list, int posthoc, measure_ablate_opts *o, char *err, size_t errlen) {
    int n = 0;
    for (const char *s = list; *s && n < MEASURE_MAX_TAUS;) {
        char item[64], why[160];
        size_t len = strcspn(s, ",");
        snprintf(item, sizeof item, "%.*s", (int)(len < sizeof item ? len : sizeof item - 1), s);
        if (len >= sizeof item || parse_double(item, 0, posthoc ? 1e6 : 1, &o->taus[n++], why, sizeof why)) {
            snprintf(err, errlen, "--taus '%s': item '%s': %s; expected a comma list of thresholds in [0, %s], "
                     "e.g. 0.5,0.9", list, item, len >= sizeof item ? "too long" : why, posthoc ? "1e6" : "1");
            return -1;
        }
        s += len + (s[len] == ',');
    }
    o->n_taus = n;
    return 0;
}

int cmd_ablate_run(const char *run_arg, const char *db, const char *results, measure_ablate_opts *o, int no_db) {
    static measure_ablation e;
    memset(&e, 0, sizeof e);
    char err[2048] = "";
    int rc = 1, n_rows = 0;
    resolve_run rr;
    evalrun_target t;
    const ab_args a = {.arg = run_arg, .db = db, .results = results};
    if (ab_target(&a, &rr, &t, err, sizeof err)) goto fail;
    int mrc = measure_ablate(&e, &t, o, err, sizeof err);
    ab_warn(&e);
    if (mrc) goto fail;
    if (o->kind == MEASURE_GATES ? ab_print_result(&e) : ab_print_exit(&e)) {
        snprintf(err, sizeof err, "cannot write the JSON line to stdout");
        goto fail;
    }
    if (!no_db && measure_ablation_record(&e, &n_rows, err, sizeof err)) goto fail;
    ab_print_rows(&e, n_rows);
    rc = 0;
    goto done;
fail:
    fprintf(stderr, "gatelab ablate: %s\n", err);
done:
    measure_ablation_close(&e);
    return rc;
}

int cmd_ablate(int argc, char **argv) {
    static ab_args a;
    int pr = ab_parse(argc, argv, &a, 0);
    if (pr >= 0) return pr;
    measure_ablate_opts o = {.windows = a.windows, .batch = a.batch, .threads = a.threads, .layers = a.layers,
                             .heads = a.heads, .values = a.values};
    char err[1024];
    if (!strcmp(a.mode, "exit") || !strcmp(a.mode, "posthoc-exit")) {
        o.kind = !strcmp(a.mode, "exit") ? MEASURE_EXIT : MEASURE_POSTHOC;
        if (a.taus && ab_taus(a.taus, o.kind == MEASURE_POSTHOC, &o, err, sizeof err)) {
            fprintf(stderr, "gatelab ablate: %s\n", err);
            return 1;
        }
    } else if (ablate_parse_mode(a.mode, &o.mode)) {
        fprintf(stderr, "gatelab ablate: --mode '%s': expected zero, mean, resample, file, full-depth, random, exit or "
                        "posthoc-exit\n", a.mode);
        return 2;
    }
    return cmd_ablate_run(a.arg, a.db, a.results, &o, a.no_db);
}

/* heads --json: the ranking as one line, gates largest ΔL first, each named
 * both ways ("block"/"kv_head" and TransformerLens's "L2H0"). */
static int ab_heads_json(const measure_ablation *e, const heads_row *rows, int n, const ablate_eval *base) {
    json_t *o = ab_json_head(e, "heads"), *gates = json_array();
    jsonl_set(o, "eval", jsonl_str(e->ctx.eval_desc));
    jsonl_set(o, "tokens", jsonl_count(base->tokens));
    jsonl_set(o, "base_loss", jsonl_num(base->loss));
    for (int i = 0; i < n; i++) {
        const heads_row *r = &rows[i];
        char name[32];
        snprintf(name, sizeof name, "L%dH%d", r->layer, r->kv_head);
        json_t *g = json_object();
        jsonl_set(g, "rank", jsonl_int(i + 1));
        jsonl_set(g, "gate", jsonl_str(name));
        jsonl_set(g, "block", jsonl_int(r->layer));
        jsonl_set(g, "kv_head", jsonl_int(r->kv_head));
        jsonl_set(g, "delta_loss", jsonl_num(r->delta));
        jsonl_set(g, "delta_loss_se", jsonl_num(r->delta_se));
        jsonl_set(g, "ppl_ratio", jsonl_num(r->ppl_ratio));
        jsonl_set(g, "alpha_mean", jsonl_num(r->alpha_mean));
        jsonl_set(g, "frac_zero", jsonl_num(r->frac_zero));
        jsonl_set(g, "gini", jsonl_num(r->gini));
        json_array_append_new(gates, g);
    }
    jsonl_set(o, "gates", gates);
    return jsonl_print(stdout, o);
}

int cmd_heads(int argc, char **argv) {
    static ab_args a;
    int pr = ab_parse(argc, argv, &a, 1);
    if (pr >= 0) return pr;
    static measure_ablation e;
    memset(&e, 0, sizeof e);
    report_metrics rm = {0};
    heads_row *rows = NULL;
    resolve_run rr;
    evalrun_target t;
    int n = 0, rc = 1;
    char err[2048] = "", out_dir[GL_PATH_MAX + 16], path[GL_PATH_MAX + 64], grid[GL_PATH_MAX + 64];
    FILE *f = NULL, *g = NULL;
    ablate_eval base;
    if (ab_target(&a, &rr, &t, err, sizeof err)) goto fail;
    int orc = measure_ablation_open(&e, &t, a.windows, a.batch, a.threads, err, sizeof err);
    ab_warn(&e);
    if (orc) goto fail;
    if (a.attribution) { /* cmd_attrib.c: the estimate beside the exact ΔL, routers included */
        if (a.out) snprintf(out_dir, sizeof out_dir, "%s", a.out);
        else snprintf(out_dir, sizeof out_dir, "%s/analysis", e.run.dir);
        if (cmd_heads_attribution(&e.ctx, e.run_id, e.run.dir, out_dir, a.json, err, sizeof err)) goto fail;
        rc = 0;
        goto done;
    }
    if (heads_rank(&e.ctx, &rows, &n, &base, err, sizeof err)) goto fail;
    const gl_model_config *mc = &e.run.model.cfg;
    if (a.out) snprintf(out_dir, sizeof out_dir, "%s", a.out);
    else snprintf(out_dir, sizeof out_dir, "%s/analysis", e.run.dir);
    if (fileio_mkdir_p(out_dir, err, sizeof err)) goto fail;
    snprintf(path, sizeof path, "%s/heads.md", out_dir);
    if (!(f = fileio_fopen_w(path))) goto io;
    heads_write_markdown(f, rows, n, &base, e.ctx.eval_desc);
    if (report_tsv_close(f, path, err, sizeof err)) {
        f = NULL;
        goto fail;
    }
    snprintf(path, sizeof path, "%s/heads.tsv", out_dir);
    snprintf(grid, sizeof grid, "%s/heads_grid.tsv", out_dir);
    f = fileio_fopen_w(path);
    g = fileio_fopen_w(grid);
    if (!f || !g) goto io;
    heads_write_tsv(f, g, rows, n, mc->n_layer, mc->n_kv_head);
    int bad = report_tsv_close(f, path, err, sizeof err) | report_tsv_close(g, grid, err, sizeof err);
    f = g = NULL;
    if (bad) goto fail;

    printf("gatelab heads: run %s | %d gates | evaluation %s\n\n", e.run_id, n, e.ctx.eval_desc);
    heads_write_markdown(stdout, rows, n, &base, e.ctx.eval_desc);
    printf("\nfiles: %s/heads.md, heads.tsv, heads_grid.tsv\n", out_dir);
    if (a.json && ab_heads_json(&e, rows, n, &base)) {
        snprintf(err, sizeof err, "cannot write the JSON line to stdout");
        goto fail;
    }
    if (!a.no_figure) {
        char fig_dir[GL_PATH_MAX + 160], base_name[GL_PATH_MAX + 500], vars[1024], title[512];
        measure_figure_dir(&t, fig_dir, sizeof fig_dir);
        if (fileio_mkdir_p(fig_dir, err, sizeof err)) goto fail;
        snprintf(base_name, sizeof base_name, "%s/heads_%s", fig_dir, e.run_id);
        snprintf(title, sizeof title, "%s: ΔL when one gate is zeroed, on %s (%.0f tokens) at step %ld", e.run_id,
                 e.ctx.eval_desc, base.tokens, e.run.st.step);
        figures_title_var(vars, sizeof vars, title, 5.5, 0.85); /* heatmap.gp's width beside its colour bar */
        snprintf(vars + strlen(vars), sizeof vars - strlen(vars), "; cblabel='ΔL (nats/token)'; diverging=1");
        if (figures_gnuplot("heatmap.gp", grid, base_name, vars, err, sizeof err)) goto fail;
        printf("figure: %s.png, %s.pdf\n", base_name, base_name);
    }
    measure_ablation_prov(&e, &rm, base.tokens);
    for (int i = 0; i < n; i++) {
        ablate_result r;
        memset(&r, 0, sizeof r);
        r.delta_se = rows[i].delta_se;
        r.ablated.loss_se = NAN;
        r.mode = ABLATE_ZERO;
        r.base = base;
        r.ablated.loss = base.loss + rows[i].delta;
        r.delta = rows[i].delta;
        r.ppl_ratio = rows[i].ppl_ratio;
        memcpy(r.delta_cat, rows[i].delta_cat, sizeof r.delta_cat);
        char label[32];
        metric_label_gate(label, sizeof label, rows[i].layer, rows[i].kv_head);
        if (ablate_metrics(&r, label, e.run.st.step, &rm, err, sizeof err)) goto fail;
    }
    const int n_rows = a.no_db ? 0 : rm.n;
    if (n_rows && measure_ablation_flush(&e, &rm, err, sizeof err)) goto fail;
    ab_print_rows(&e, n_rows);
    rc = 0;
    goto done;
io:
    snprintf(err, sizeof err, "cannot write %s", f ? grid : path);
fail:
    fprintf(stderr, "gatelab heads: %s\n", err);
done:
    if (f) fclose(f);
    if (g) fclose(g);
    free(rows);
    report_metrics_free(&rm);
    measure_ablation_close(&e);
    return rc;
}
