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
 * model's overrides (analysis/ablate.c), print a table and one JSON line
 * (heads: with --json; jsonl.h, starting with run_id and run_dir),
 * and log rows under split "ablation" at the run's step, each stamped with
 * what it was measured on (the evaluation windows and their tokens), so a
 * rerun on other windows is kept beside the first, never over it.  heads also writes
 * heads.md, heads.tsv and heads_grid.tsv into <run>/analysis/ (or --out) and
 * draws the block × KV-head ΔL map into <results>/figures/heads_<run>.{png,pdf}.
 * Definitions of the modes and of the evaluation / reference tokens:
 * analysis/ablate.h and docs/analysis.md.
 */
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/ablate.h"
#include "store/fileio.h"
#include "analysis/figures.h"
#include "analysis/heads.h"
#include "cmd_attrib.h"
#include "args.h"
#include "cli.h"
#include "jsonl.h"
#include "resolve.h"
#include "store/parse.h"
#include "store/data.h"
#include "store/metric.h"
#include "store/registry.h"
#include "store/rundir.h"

#define AB_MAX_TAUS 32

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
    {"no-figure", ARGS_KEY(21), NULL, "do not draw <results>/figures/heads_<run>.{png,pdf}"},
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

/* Shared set-up: the run, its data, the ablation context, the registry path. */
typedef struct {
    gl_run run;
    gl_dataset ds;
    ablate_ctx ctx;
    char run_id[256], db_path[GL_PATH_MAX + 16], results[GL_PATH_MAX];
    int have_run, have_ctx;
} ab_env;

static int ab_open(ab_env *e, const ab_args *a, char *err, size_t errlen) {
    resolve_run rr;
    if (resolve_run_arg(a->arg, a->db, a->results, RESOLVE_DIR, &rr, err, errlen) ||
        run_open(&e->run, rr.dir, NULL, a->batch, err, errlen))
        return -1;
    e->have_run = 1;
    int threads = a->threads ? a->threads : e->run.mf.train.threads;
    if (threads > 0) omp_set_num_threads(threads);
    snprintf(e->run_id, sizeof e->run_id, "%s", rr.id);
    snprintf(e->results, sizeof e->results, "%s", rr.results);
    snprintf(e->db_path, sizeof e->db_path, "%s", rr.db);
    const gl_model_config *mc = &e->run.model.cfg;
    if (data_open_tok(&e->ds, &e->run.mf.data, mc->seq_len, e->run.mf.train.seed,
                      e->run.st.tokenizer == TOK_BPE ? &e->run.st.bpe : NULL, err, errlen))
        return -1;
    char warn[1024];
    if (ablate_init(&e->ctx, &e->run.model, &e->ds, a->windows, e->run.mf.train.seed ^ 0xab1a7eULL, NULL, warn,
                    sizeof warn, err, errlen))
        return -1;
    e->have_ctx = 1;
    if (warn[0]) fprintf(stderr, "gatelab: warning: %s\n", warn);
    return 0;
}

static void ab_close(ab_env *e) {
    if (e->have_ctx) ablate_free(&e->ctx);
    data_close(&e->ds);
    if (e->have_run) run_close(&e->run);
}

/* Stamp the rows added next to rm with the evaluation windows (tokens scored). */
static void ab_prov(const ab_env *e, report_metrics *rm, double tokens) {
    const ablate_ctx *c = &e->ctx;
    rm->prov = db_prov(data_split_name(c->eval_split), c->eval_first, c->eval_windows, tokens);
}

static int ab_log(const ab_env *e, report_metrics *rm, int no_db, char *err, size_t errlen) {
    if (no_db || !rm->n) return 0;
    gl_db *db = NULL;
    int n = rm->n;
    int rc = db_open(&db, e->db_path, err, errlen) || report_metrics_flush(rm, db, e->run_id, err, errlen) ? -1 : 0;
    db_close(db);
    if (rc == 0) printf("registry: %d rows (split \"%s\") for run %s in %s\n", n, ABLATE_SPLIT, e->run_id, e->db_path);
    return rc;
}

/* The line's head: the run (jsonl_run), its step and the mode. */
static json_t *ab_json_head(const ab_env *e, const char *mode) {
    json_t *o = jsonl_run(e->run_id, e->run.dir);
    jsonl_set(o, "step", jsonl_int(e->run.st.step));
    jsonl_set(o, "mode", jsonl_str(mode));
    return o;
}

/* The table and the JSON line of one ablation.  Returns 0, or -1 when the line could not be written. */
static int ab_print_result(const ab_env *e, const ablate_result *r, const char *label) {
    const ablate_ctx *c = &e->ctx;
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

/* exit (posthoc 0) and posthoc-exit (1): the τ sweep, its table, its JSON line and its rows. */
static int ab_exit(ab_env *e, const ab_args *a, int posthoc, report_metrics *rm, char *err, size_t errlen) {
    double taus[AB_MAX_TAUS] = {0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95}; /* the τ frontier of docs/analysis.md */
    int n = 8;
    const char *mode = posthoc ? "posthoc-exit" : "exit";
    if (a->taus) {
        n = 0;
        const char *s = a->taus;
        while (*s && n < AB_MAX_TAUS) {
            char item[64], why[160];
            size_t len = strcspn(s, ",");
            snprintf(item, sizeof item, "%.*s", (int)(len < sizeof item ? len : sizeof item - 1), s);
            if (len >= sizeof item || parse_double(item, 0, posthoc ? 1e6 : 1, &taus[n++], why, sizeof why)) {
                snprintf(err, errlen, "--taus '%s': item '%s': %s; expected a comma list of thresholds in [0, %s], "
                         "e.g. 0.5,0.9", a->taus, item, len >= sizeof item ? "too long" : why, posthoc ? "1e6" : "1");
                return -1;
            }
            s += len + (s[len] == ',');
        }
    }
    ablate_eval full;
    ablate_exit_point pts[AB_MAX_TAUS];
    if ((posthoc ? ablate_posthoc_sweep : ablate_exit_sweep)(&e->ctx, taus, n, &full, pts, err, errlen)) return -1;
    const int L = e->run.model.cfg.n_layer;
    printf("gatelab ablate: run %s | mode %s | evaluation %s (%.0f scored tokens) | full depth %.5f nats/token\n",
           e->run_id, mode, e->ctx.eval_desc, full.tokens, full.loss);
    printf("  %8s %10s %10s %12s %10s\n", "τ", "α", "TLOps %", "loss", "ΔL");
    for (int i = 0; i < n; i++)
        printf("  %8.3f %10.4f %10.2f %12.5f %+10.5f\n", pts[i].tau, pts[i].r.active_frac, 100 * pts[i].tlops_saved,
               pts[i].r.loss, pts[i].r.loss - full.loss);
    json_t *o = ab_json_head(e, mode), *points = json_array();
    jsonl_set(o, "eval", jsonl_str(e->ctx.eval_desc));
    jsonl_set(o, "layers", jsonl_int(L));
    jsonl_set(o, "tokens", jsonl_count(full.tokens));
    jsonl_set(o, "full_loss", jsonl_num(full.loss));
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
    if (jsonl_print(stdout, o)) {
        snprintf(err, errlen, "cannot write the JSON line to stdout");
        return -1;
    }
    ab_prov(e, rm, full.tokens);
    return ablate_exit_metrics(posthoc ? METRIC_POSTHOC_MODE : METRIC_EXIT_MODE, &full, pts, n, e->run.st.step, rm,
                               err, errlen);
}

int cmd_ablate(int argc, char **argv) {
    static ab_args a;
    int pr = ab_parse(argc, argv, &a, 0);
    if (pr >= 0) return pr;
    ablate_mode mode = ABLATE_ZERO;
    int exit_mode = !strcmp(a.mode, "exit"), posthoc = !strcmp(a.mode, "posthoc-exit");
    if (!exit_mode && !posthoc && ablate_parse_mode(a.mode, &mode)) {
        fprintf(stderr, "gatelab ablate: --mode '%s': expected zero, mean, resample, file, full-depth, random, exit or "
                        "posthoc-exit\n", a.mode);
        return 2;
    }
    static ab_env e;
    memset(&e, 0, sizeof e);
    report_metrics rm = {0};
    unsigned char *sel = NULL;
    char err[2048] = "";
    int rc = 1;
    if (ab_open(&e, &a, err, sizeof err)) goto fail;
    if (exit_mode || posthoc) {
        if (ab_exit(&e, &a, posthoc, &rm, err, sizeof err)) goto fail;
    } else {
        const gl_model *m = &e.run.model;
        sel = calloc((size_t)m->cfg.n_layer * m->cfg.n_kv_head, 1);
        if (!sel) {
            snprintf(err, sizeof err, "out of memory");
            goto fail;
        }
        char label[REPORT_NAME_MAX / 2] = "all";
        if (mode == ABLATE_FILE) {
            if (!a.values || a.layers || a.heads) {
                snprintf(err, sizeof err, "--mode file takes the gates and their values from --values FILE "
                                          "(and no --layers / --heads)");
                goto fail;
            }
            if (ablate_read_values(&e.ctx, a.values, sel, err, sizeof err)) goto fail;
            snprintf(label, sizeof label, "file");
        } else if (ablate_mode_selects_gates(mode)) {
            if (ablate_parse_selection(m, a.layers, a.heads, sel, err, sizeof err)) goto fail;
            ablate_selection_label(m, sel, label, sizeof label);
        } else if (a.layers || a.heads) {
            snprintf(err, sizeof err, "--layers / --heads select gates for zero, mean and resample; --mode %s acts on every router",
                     a.mode);
            goto fail;
        }
        ablate_result res;
        if (ablate_run(&e.ctx, mode, sel, NULL, &res, err, sizeof err)) goto fail;
        if (ab_print_result(&e, &res, label)) {
            snprintf(err, sizeof err, "cannot write the JSON line to stdout");
            goto fail;
        }
        ab_prov(&e, &rm, res.base.tokens);
        if (ablate_metrics(&res, label, e.run.st.step, &rm, err, sizeof err)) goto fail;
    }
    if (ab_log(&e, &rm, a.no_db, err, sizeof err)) goto fail;
    rc = 0;
    goto done;
fail:
    fprintf(stderr, "gatelab ablate: %s\n", err);
done:
    free(sel);
    report_metrics_free(&rm);
    ab_close(&e);
    return rc;
}

/* heads --json: the ranking as one line, gates largest ΔL first, each named
 * both ways ("block"/"kv_head" and TransformerLens's "L2H0"). */
static int ab_heads_json(const ab_env *e, const heads_row *rows, int n, const ablate_eval *base) {
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
    static ab_env e;
    memset(&e, 0, sizeof e);
    report_metrics rm = {0};
    heads_row *rows = NULL;
    int n = 0, rc = 1;
    char err[2048] = "", out_dir[GL_PATH_MAX + 16], path[GL_PATH_MAX + 64], grid[GL_PATH_MAX + 64];
    FILE *f = NULL, *g = NULL;
    ablate_eval base;
    if (ab_open(&e, &a, err, sizeof err)) goto fail;
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
        char fig_dir[GL_PATH_MAX + 16], base_name[GL_PATH_MAX + 300], vars[1024], title[512];
        snprintf(fig_dir, sizeof fig_dir, "%s/figures", e.results);
        if (fileio_mkdir_p(fig_dir, err, sizeof err)) goto fail;
        snprintf(base_name, sizeof base_name, "%s/heads_%s", fig_dir, e.run_id);
        snprintf(title, sizeof title, "%s: ΔL when one gate is zeroed, on %s (%.0f tokens) at step %ld", e.run_id,
                 e.ctx.eval_desc, base.tokens, e.run.st.step);
        figures_title_var(vars, sizeof vars, title, 5.5, 0.85); /* heatmap.gp's width beside its colour bar */
        snprintf(vars + strlen(vars), sizeof vars - strlen(vars), "; cblabel='ΔL (nats/token)'; diverging=1");
        if (figures_gnuplot("heatmap.gp", grid, base_name, vars, err, sizeof err)) goto fail;
        printf("figure: %s.png, %s.pdf\n", base_name, base_name);
    }
    ab_prov(&e, &rm, base.tokens);
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
    if (ab_log(&e, &rm, a.no_db, err, sizeof err)) goto fail;
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
    ab_close(&e);
    return rc;
}
