/*
 * cmd_ablate.c — `gatelab ablate` (gate interventions) and `gatelab heads`
 * (every gate zeroed alone, ranked).
 *
 *   gatelab ablate RUN --mode zero|mean|resample|full-depth|random|exit [--layers 1,3] [--heads 2:0,3:1]
 *                  [--taus 0.5,0.9] [--windows N] [--batch B] [--threads N] [--results DIR] [--db PATH] [--no-db]
 *   gatelab heads RUN [--windows N] [--batch B] [--threads N] [--results DIR] [--db PATH] [--out DIR] [--no-db]
 *                 [--no-figure]
 *
 * --threads defaults to the run's train.threads (0: every core).
 *
 * Both load the run's checkpoint, evaluate validation windows with the
 * model's overrides (analysis/ablate.c), print a table and one JSON line,
 * and log rows under split "ablation" at the run's step, each stamped with
 * what it was measured on (the evaluation windows and their tokens), so a
 * rerun on other windows is kept beside the first, never over it.  heads also writes
 * heads.md, heads.tsv and heads_grid.tsv into <run>/analysis/ (or --out) and
 * draws the block × KV-head ΔL map into <results>/figures/heads_<run>.{png,pdf}.
 * Definitions of the modes and of the evaluation / reference tokens:
 * analysis/ablate.h and docs/analysis.md.
 */
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/ablate.h"
#include "analysis/figures.h"
#include "analysis/heads.h"
#include "args.h"
#include "cli.h"
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
    int batch, threads, no_db, no_figure;
} ab_args;

static void ab_usage(FILE *f, int heads) {
    if (heads)
        fprintf(f, "usage: gatelab heads RUN [--windows N] [--batch B] [--threads N] [--results DIR] [--db PATH] [--out DIR]\n"
                   "                     [--no-db] [--no-figure]\n");
    else
        fprintf(f, "usage: gatelab ablate RUN --mode zero|mean|resample|file|full-depth|random|exit [--layers 1,3] [--heads 2:0,3:1]\n"
                   "                      [--taus 0.5,0.7,0.9] [--windows N] [--batch B] [--threads N] [--results DIR] [--db PATH]\n"
                   "                      [--no-db]\n"
                   "                      [--values FILE]\n"
                   "  zero/mean: SATFormer α (or ResFormer λ1 with zero) on the selected gates (default: all)\n"
                   "  resample: each token's selected gates taken from a random token of the reference windows\n"
                   "  file: each gate listed in --values FILE (lines \"block kv_head value\") set to its value\n"
                   "  full-depth/random: TSA routing forced to p = 0 / random at the learned active fraction\n"
                   "  exit: early exit at each threshold τ of --taus (default 0.5,0.6,0.7,0.8,0.9,0.95)\n");
}

static int ab_parse(int argc, char **argv, ab_args *a, int heads) {
    memset(a, 0, sizeof *a);
    a->batch = 16;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        int hv = i + 1 < argc;
        if (!strcmp(s, "--results") && hv) a->results = argv[++i];
        else if (!strcmp(s, "--db") && hv) a->db = argv[++i];
        else if (!strcmp(s, "--windows") && hv) {
            if (args_long(heads ? "heads" : "ablate", s, argv[++i], 1, LONG_MAX, &a->windows)) return 2;
        } else if (!strcmp(s, "--batch") && hv) {
            if (args_int(heads ? "heads" : "ablate", s, argv[++i], 1, 4096, &a->batch)) return 2;
        } else if (!strcmp(s, "--threads") && hv) {
            if (args_int(heads ? "heads" : "ablate", s, argv[++i], 0, 1024, &a->threads)) return 2;
        }
        else if (!strcmp(s, "--no-db")) a->no_db = 1;
        else if (heads && !strcmp(s, "--out") && hv) a->out = argv[++i];
        else if (heads && !strcmp(s, "--no-figure")) a->no_figure = 1;
        else if (!heads && !strcmp(s, "--mode") && hv) a->mode = argv[++i];
        else if (!heads && !strcmp(s, "--layers") && hv) a->layers = argv[++i];
        else if (!heads && !strcmp(s, "--heads") && hv) a->heads = argv[++i];
        else if (!heads && !strcmp(s, "--taus") && hv) a->taus = argv[++i];
        else if (!heads && !strcmp(s, "--values") && hv) a->values = argv[++i];
        else if (!strcmp(s, "-h") || !strcmp(s, "--help")) {
            ab_usage(stdout, heads);
            return 1;
        } else if (s[0] != '-' && !a->arg) a->arg = s;
        else {
            fprintf(stderr, "gatelab %s: unknown or incomplete argument '%s'\n", heads ? "heads" : "ablate", s);
            return 2;
        }
    }
    if (!a->arg || (!heads && !a->mode) || a->batch < 1 || a->windows < 0 || a->threads < 0) return 2;
    return 0;
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
    const char *rdir = run_results_dir(a->results);
    if (run_open(&e->run, a->arg, rdir, a->batch, err, errlen)) return -1;
    e->have_run = 1;
    int threads = a->threads ? a->threads : e->run.mf.train.threads;
    if (threads > 0) omp_set_num_threads(threads);
    char tmp[GL_PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s", e->run.dir);
    snprintf(e->run_id, sizeof e->run_id, "%s", basename(tmp));
    snprintf(tmp, sizeof tmp, "%s", e->run.dir);
    snprintf(e->results, sizeof e->results, "%s", dirname(dirname(tmp)));
    if (a->db) snprintf(e->db_path, sizeof e->db_path, "%s", a->db);
    else snprintf(e->db_path, sizeof e->db_path, "%s/gatelab.db", e->results);
    const gl_model_config *mc = &e->run.model.cfg;
    if (data_open(&e->ds, &e->run.mf.data, mc->seq_len, e->run.mf.train.seed, err, errlen)) return -1;
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

static void ab_json_num(const char *key, double v, int comma) {
    if (isnan(v) || isinf(v)) printf("\"%s\":null%s", key, comma ? "," : "");
    else printf("\"%s\":%.6f%s", key, v, comma ? "," : "");
}

static void ab_print_result(const ab_env *e, const ablate_result *r, const char *label) {
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
    printf("{\"run\":\"%s\",\"mode\":\"%s\",\"gates\":\"%s\",\"eval\":\"%s\",\"reference\":\"%s\",", e->run_id,
           ablate_mode_name(r->mode), label, c->eval_desc, ablate_mode_uses_reference(r->mode) ? c->ref_desc : "");
    ab_json_num("tokens", r->base.tokens, 1);
    ab_json_num("base_loss", r->base.loss, 1);
    ab_json_num("loss", r->ablated.loss, 1);
    ab_json_num("delta_loss", r->delta, 1);
    ab_json_num("delta_loss_se", r->delta_se, 1);
    ab_json_num("ppl_ratio", r->ppl_ratio, 1);
    if (r->mode == ABLATE_FULL_DEPTH || r->mode == ABLATE_RANDOM) {
        ab_json_num("base_active_frac", r->base.active_frac, 1);
        ab_json_num("active_frac", r->ablated.active_frac, 1);
    }
    printf("\"delta_loss_by_category\":{");
    for (int k = 0; k < CAT_COUNT; k++) ab_json_num(cat_name(k), r->delta_cat[k], k + 1 < CAT_COUNT);
    printf("}}\n");
}

static int ab_exit(ab_env *e, const ab_args *a, report_metrics *rm, char *err, size_t errlen) {
    double taus[AB_MAX_TAUS] = {0.5, 0.6, 0.7, 0.8, 0.9, 0.95};
    int n = 6;
    if (a->taus) {
        n = 0;
        const char *s = a->taus;
        while (*s && n < AB_MAX_TAUS) {
            char item[64], why[160];
            size_t len = strcspn(s, ",");
            snprintf(item, sizeof item, "%.*s", (int)(len < sizeof item ? len : sizeof item - 1), s);
            if (len >= sizeof item || parse_double(item, 0, 1, &taus[n++], why, sizeof why)) {
                snprintf(err, errlen, "--taus '%s': item '%s': %s; expected a comma list of thresholds in [0, 1], "
                         "e.g. 0.5,0.9", a->taus, item, len >= sizeof item ? "too long" : why);
                return -1;
            }
            s += len + (s[len] == ',');
        }
    }
    ablate_eval full;
    ablate_exit_point pts[AB_MAX_TAUS];
    if (ablate_exit_sweep(&e->ctx, taus, n, &full, pts, err, errlen)) return -1;
    const int L = e->run.model.cfg.n_layer;
    printf("gatelab ablate: run %s | mode exit | evaluation %s (%.0f scored tokens) | full depth %.5f nats/token\n",
           e->run_id, e->ctx.eval_desc, full.tokens, full.loss);
    printf("  %8s %10s %10s %12s %10s\n", "τ", "α", "TLOps %", "loss", "ΔL");
    for (int i = 0; i < n; i++)
        printf("  %8.3f %10.4f %10.2f %12.5f %+10.5f\n", pts[i].tau, pts[i].r.active_frac, 100 * pts[i].tlops_saved,
               pts[i].r.loss, pts[i].r.loss - full.loss);
    printf("{\"run\":\"%s\",\"mode\":\"exit\",\"eval\":\"%s\",\"layers\":%d,", e->run_id, e->ctx.eval_desc, L);
    ab_json_num("full_loss", full.loss, 1);
    printf("\"points\":[");
    for (int i = 0; i < n; i++) {
        printf("{");
        ab_json_num("tau", pts[i].tau, 1);
        ab_json_num("active_frac", pts[i].r.active_frac, 1);
        ab_json_num("tlops_saved", pts[i].tlops_saved, 1);
        ab_json_num("loss", pts[i].r.loss, 0);
        printf("}%s", i + 1 < n ? "," : "");
    }
    printf("]}\n");
    ab_prov(e, rm, full.tokens);
    return ablate_exit_metrics(&full, pts, n, e->run.st.step, rm, err, errlen);
}

int cmd_ablate(int argc, char **argv) {
    ab_args a;
    int pr = ab_parse(argc, argv, &a, 0);
    if (pr == 1) return 0;
    if (pr) {
        ab_usage(stderr, 0);
        return 2;
    }
    ablate_mode mode = ABLATE_ZERO;
    int exit_mode = !strcmp(a.mode, "exit");
    if (!exit_mode && ablate_parse_mode(a.mode, &mode)) {
        fprintf(stderr, "gatelab ablate: --mode '%s': expected zero, mean, resample, file, full-depth, random or exit\n", a.mode);
        return 2;
    }
    static ab_env e;
    memset(&e, 0, sizeof e);
    report_metrics rm = {0};
    unsigned char *sel = NULL;
    char err[2048] = "";
    int rc = 1;
    if (ab_open(&e, &a, err, sizeof err)) goto fail;
    if (exit_mode) {
        if (ab_exit(&e, &a, &rm, err, sizeof err)) goto fail;
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
        ab_print_result(&e, &res, label);
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

int cmd_heads(int argc, char **argv) {
    ab_args a;
    int pr = ab_parse(argc, argv, &a, 1);
    if (pr == 1) return 0;
    if (pr) {
        ab_usage(stderr, 1);
        return 2;
    }
    static ab_env e;
    memset(&e, 0, sizeof e);
    report_metrics rm = {0};
    heads_row *rows = NULL;
    int n = 0, rc = 1;
    char err[2048] = "", out_dir[GL_PATH_MAX + 16], path[GL_PATH_MAX + 64], grid[GL_PATH_MAX + 64];
    FILE *f = NULL, *g = NULL;
    ablate_eval base;
    if (ab_open(&e, &a, err, sizeof err)) goto fail;
    if (heads_rank(&e.ctx, &rows, &n, &base, err, sizeof err)) goto fail;
    const gl_model_config *mc = &e.run.model.cfg;
    if (a.out) snprintf(out_dir, sizeof out_dir, "%s", a.out);
    else snprintf(out_dir, sizeof out_dir, "%s/analysis", e.run.dir);
    if (report_mkdir_p(out_dir, err, sizeof err)) goto fail;
    snprintf(path, sizeof path, "%s/heads.md", out_dir);
    if (!(f = fopen(path, "w"))) goto io;
    heads_write_markdown(f, rows, n, &base, e.ctx.eval_desc);
    if (report_tsv_close(f, path, err, sizeof err)) {
        f = NULL;
        goto fail;
    }
    snprintf(path, sizeof path, "%s/heads.tsv", out_dir);
    snprintf(grid, sizeof grid, "%s/heads_grid.tsv", out_dir);
    f = fopen(path, "w");
    g = fopen(grid, "w");
    if (!f || !g) goto io;
    heads_write_tsv(f, g, rows, n, mc->n_layer, mc->n_kv_head);
    int bad = report_tsv_close(f, path, err, sizeof err) | report_tsv_close(g, grid, err, sizeof err);
    f = g = NULL;
    if (bad) goto fail;

    printf("gatelab heads: run %s | %d gates | evaluation %s\n\n", e.run_id, n, e.ctx.eval_desc);
    heads_write_markdown(stdout, rows, n, &base, e.ctx.eval_desc);
    printf("\nfiles: %s/heads.md, heads.tsv, heads_grid.tsv\n", out_dir);
    if (!a.no_figure) {
        char fig_dir[GL_PATH_MAX + 16], base_name[GL_PATH_MAX + 300], vars[512];
        snprintf(fig_dir, sizeof fig_dir, "%s/figures", e.results);
        if (report_mkdir_p(fig_dir, err, sizeof err)) goto fail;
        snprintf(base_name, sizeof base_name, "%s/heads_%s", fig_dir, e.run_id);
        snprintf(vars, sizeof vars, "title='%s: ΔL when one gate is zeroed, on %s (%.0f tokens) at step %ld'; "
                                    "cblabel='ΔL (nats/token)'; diverging=1", e.run_id, e.ctx.eval_desc, base.tokens, e.run.st.step);
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
