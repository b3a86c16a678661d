/*
 * measure.c — one run's ablations, trace analysis and difficulty routing as
 * library calls (measure.h), behind `gatelab ablate`, `gatelab analyze` and
 * `gatelab paper post`.  It opens the run, its data and its trace, calls
 * analysis/measure/ablate.c, analyze_trace.c, gate_bands.c, settle.c and
 * difficulty.c, and writes their rows to the run's registry.  It does not
 * resolve RUN arguments or print: the command line does both.
 */
#include <assert.h>
#include <math.h>
#include <omp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/render/figures.h"
#include "analysis/measure/gate_bands.h"
#include "analysis/pipeline/measure.h"
#include "store/fileio.h"
#include "store/metric.h"
#include "store/trace.h"

/* ---- ablations ---- */

int measure_ablation_open(measure_ablation *a, const evalrun_target *t, long windows, int batch, int threads,
                          char *err, size_t errlen) {
    if (run_open(&a->run, t->dir, NULL, batch, err, errlen)) return -1;
    a->have_run = 1;
    if (!threads) threads = a->run.mf.train.threads;
    if (threads > 0) omp_set_num_threads(threads);
    snprintf(a->run_id, sizeof a->run_id, "%s", t->id);
    snprintf(a->results, sizeof a->results, "%s", t->results);
    snprintf(a->db_path, sizeof a->db_path, "%s", t->db);
    const gl_model_config *mc = &a->run.model.cfg;
    if (data_open_tok(&a->ds, &a->run.mf.data, mc->seq_len, a->run.mf.train.seed,
                      a->run.st.tokenizer == TOK_BPE ? &a->run.st.bpe : NULL, err, errlen))
        return -1;
    if (ablate_init(&a->ctx, &a->run.model, &a->ds, windows, a->run.mf.train.seed ^ 0xab1a7eULL, NULL, a->warn,
                    sizeof a->warn, err, errlen))
        return -1;
    a->have_ctx = 1;
    return 0;
}

void measure_ablation_close(measure_ablation *a) {
    if (a->have_ctx) ablate_free(&a->ctx);
    data_close(&a->ds);
    if (a->have_run) run_close(&a->run);
    a->have_ctx = a->have_run = 0;
}

/* One intervention on the gates o selects (or every router): a->res, a->label. */
static int measure_gates(measure_ablation *a, const measure_ablate_opts *o, char *err, size_t errlen) {
    const gl_model *m = &a->run.model;
    unsigned char *sel = calloc((size_t)m->cfg.n_layer * m->cfg.n_kv_head, 1);
    int rc = -1;
    if (!sel) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    snprintf(a->label, sizeof a->label, "all");
    if (o->mode == ABLATE_FILE) {
        if (!o->values || o->layers || o->heads) {
            snprintf(err, errlen, "--mode file takes the gates and their values from --values FILE "
                                  "(and no --layers / --heads)");
            goto cleanup;
        }
        if (ablate_read_values(&a->ctx, o->values, sel, err, errlen)) goto cleanup;
        snprintf(a->label, sizeof a->label, "file");
    } else if (ablate_mode_selects_gates(o->mode)) {
        if (ablate_parse_selection(m, o->layers, o->heads, sel, err, errlen)) goto cleanup;
        ablate_selection_label(m, sel, a->label, sizeof a->label);
    } else if (o->layers || o->heads) {
        snprintf(err, errlen, "--layers / --heads select gates for zero, mean and resample; --mode %s acts on every "
                              "router", ablate_mode_name(o->mode));
        goto cleanup;
    }
    rc = ablate_run(&a->ctx, o->mode, sel, NULL, &a->res, err, errlen);
cleanup:
    free(sel);
    return rc;
}

int measure_ablate(measure_ablation *a, const evalrun_target *t, const measure_ablate_opts *o, char *err,
                   size_t errlen) {
    if (measure_ablation_open(a, t, o->windows, o->batch, o->threads, err, errlen)) return -1;
    a->kind = o->kind;
    if (o->kind == MEASURE_GATES) return measure_gates(a, o, err, errlen);
    static const double frontier[] = MEASURE_DEFAULT_TAUS;
    const double *taus = o->n_taus ? o->taus : frontier;
    a->n_pts = o->n_taus ? o->n_taus : (int)(sizeof frontier / sizeof frontier[0]);
    assert(a->n_pts > 0 && a->n_pts <= MEASURE_MAX_TAUS);
    return (o->kind == MEASURE_POSTHOC ? ablate_posthoc_sweep : ablate_exit_sweep)(&a->ctx, taus, a->n_pts, &a->full,
                                                                                  a->pts, err, errlen);
}

void measure_ablation_prov(const measure_ablation *a, report_metrics *rm, double tokens) {
    const ablate_ctx *c = &a->ctx;
    rm->prov = db_prov(data_split_name(c->eval_split), c->eval_first, c->eval_windows, tokens);
}

int measure_ablation_flush(const measure_ablation *a, report_metrics *rm, char *err, size_t errlen) {
    gl_db *db = NULL;
    int rc = db_open(&db, a->db_path, err, errlen) || report_metrics_flush(rm, db, a->run_id, err, errlen) ? -1 : 0;
    db_close(db);
    return rc;
}

int measure_ablation_record(const measure_ablation *a, int *n_rows, char *err, size_t errlen) {
    report_metrics rm = {0};
    const long step = a->run.st.step;
    int rc;
    *n_rows = 0;
    if (a->kind == MEASURE_GATES) {
        measure_ablation_prov(a, &rm, a->res.base.tokens);
        rc = ablate_metrics(&a->res, a->label, step, &rm, err, errlen);
    } else {
        measure_ablation_prov(a, &rm, a->full.tokens);
        rc = ablate_exit_metrics(a->kind == MEASURE_POSTHOC ? METRIC_POSTHOC_MODE : METRIC_EXIT_MODE, &a->full,
                                 a->pts, a->n_pts, step, &rm, err, errlen);
    }
    const int n = rm.n;
    if (!rc && n) rc = measure_ablation_flush(a, &rm, err, errlen);
    if (!rc) *n_rows = n;
    report_metrics_free(&rm);
    return rc;
}

/* ---- the trace analysis ---- */

/* Append one line (fmt, no newline) to r->notes; a line that does not fit is cut short. */
static void measure_note(measure_trace_result *r, const char *fmt, ...) {
    size_t used = strlen(r->notes), room = sizeof r->notes - used;
    if (room < 2) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->notes + used, room - 1, fmt, ap); /* room for the newline */
    va_end(ap);
    strcat(r->notes, "\n");
}

void measure_figure_dir(const evalrun_target *t, char *out, size_t n) {
    gl_db *db = NULL;
    gl_run_row *rows = NULL;
    gl_run_filter f = {.run_id = t->id};
    int k = 0;
    char why[512];
    const char *exp = NULL;
    if (t->db && !db_open_readonly(&db, t->db, why, sizeof why) && !db_runs_find(db, &f, &rows, &k, why, sizeof why) &&
        k > 0)
        exp = rows[0].experiment;
    figures_dir(t->results, exp, out, n);
    free(rows);
    db_close(db);
}

/* Each per-token gate over training: quantile bands per block (analysis/measure/gate_bands.h, gate_bands.gp), a
 * figure each in its experiment's figures folder when gnuplot draws it (else a note). */
static int measure_bands(const evalrun_target *t, const gl_trace_data *td, measure_trace_result *r, char *err,
                         size_t errlen) {
    for (int g = 0; g < GATE_COUNT; g++) {
        if (!td->gate[g] || !gatekind_per_token((gl_gate)g)) continue;
        char tsv[GL_PATH_MAX + 96], fig_dir[GL_PATH_MAX + 160], base[GL_PATH_MAX + 600], vars[600], why[1024];
        int rows;
        snprintf(tsv, sizeof tsv, "%s/gate_bands_%s.tsv", r->out_dir, gatekind_info[g].key);
        if (gate_bands_write(td, (gl_gate)g, tsv, &rows, err, errlen)) return -1;
        measure_figure_dir(t, fig_dir, sizeof fig_dir);
        snprintf(base, sizeof base, "%s/gate_bands_%s_%s", fig_dir, t->id, gatekind_info[g].key);
        snprintf(vars, sizeof vars, "title='%s: %s over training (probe tokens)'; ylabel='%s'", t->id,
                 gatekind_info[g].title, gatekind_info[g].symbol);
        if (rows && (fileio_mkdir_p(fig_dir, why, sizeof why) ||
                     figures_gnuplot("gate_bands.gp", tsv, base, vars, why, sizeof why)))
            measure_note(r, "note: no gate-band figure for %s: %s", gatekind_info[g].key, why);
        else if (rows) snprintf(r->bands[r->n_bands++], sizeof r->bands[0], "%s", gatekind_info[g].key);
    }
    return 0;
}

/* TSA / early exit: the logit lens where tokens halt (analysis/measure/settle.h), from the checkpoint, into rm. */
static int measure_settle(gl_run *run, report_metrics *rm, measure_trace_result *r, char *err, size_t errlen) {
    gl_dataset ds;
    char why[1024];
    if (data_open_tok(&ds, &run->mf.data, run->model.cfg.seq_len, run->mf.train.seed,
                      run->st.tokenizer == TOK_BPE ? &run->st.bpe : NULL, why, sizeof why) ||
        settle_measure(&run->model, &ds, 0, &r->st, why, sizeof why)) {
        measure_note(r, "note: no halting statistics (settled_at_halt): %s", why);
        r->routed = 0;
    } else if (settle_metrics(&r->st, run->st.step, rm, err, errlen)) {
        data_close(&ds);
        return -1;
    }
    data_close(&ds);
    return 0;
}

/* The trace analysis proper, on the trace td and the run (NULL: no checkpoint), into rm and r. */
static int measure_trace_rows(const evalrun_target *t, const gl_trace_data *td, gl_run *run, report_metrics *rm,
                              measure_trace_result *r, char *err, size_t errlen) {
    if (analyze_trace(td, run ? run->st.vocab : NULL, run ? ckpt_vocab_bytes(&run->st) : 0, r->out_dir, rm, &r->s,
                      err, errlen) ||
        measure_bands(t, td, r, err, errlen))
        return -1;
    r->routed = run && (run->model.cfg.depth_routing == DR_TSA || run->model.cfg.depth_routing == DR_EARLY_EXIT);
    if (run) r->step = run->st.step;
    return r->routed ? measure_settle(run, rm, r, err, errlen) : 0;
}

int measure_trace(const evalrun_target *t, const measure_trace_opts *o, measure_trace_result *r, char *err,
                  size_t errlen) {
    memset(r, 0, sizeof *r);
    char trace_path[GL_PATH_MAX + 16], why[1024];
    gl_trace_data td;
    memset(&td, 0, sizeof td);
    report_metrics rm = {0};
    gl_db *db = NULL;
    gl_run *run = calloc(1, sizeof *run);
    int rc = -1, have_run = 0;
    if (!run) {
        snprintf(err, errlen, "out of memory opening run %s", t->id);
        return -1;
    }
    snprintf(trace_path, sizeof trace_path, "%s/%s", t->dir, RUN_TRACE);
    if (access(trace_path, R_OK) != 0) {
        snprintf(err, errlen, "%s: no trace (train with log.trace = 1)", trace_path);
        goto cleanup;
    }
    if (trace_read(trace_path, &td, err, errlen)) goto cleanup;
    if (run_open(run, t->dir, t->results, 1, why, sizeof why) == 0) have_run = 1;
    else measure_note(r, "note: %s; probe tokens are shown as ids", why);
    if (o->out) snprintf(r->out_dir, sizeof r->out_dir, "%s", o->out);
    else snprintf(r->out_dir, sizeof r->out_dir, "%s/analysis", t->dir);
    if (measure_trace_rows(t, &td, have_run ? run : NULL, &rm, r, err, errlen)) goto cleanup;
    r->n_rows = rm.n;
    if (!o->no_db && (db_open(&db, t->db, why, sizeof why) || report_metrics_flush(&rm, db, t->id, why, sizeof why))) {
        snprintf(err, errlen, "the files are written, but the registry was not updated: %s", why);
        goto cleanup;
    }
    rc = 0;
cleanup:
    db_close(db);
    report_metrics_free(&rm);
    trace_data_free(&td);
    if (have_run) run_close(run);
    free(run);
    return rc;
}

/* ---- difficulty-proportional routing ---- */

int measure_difficulty(const evalrun_target *tsa_t, const evalrun_target *dense_t, const measure_difficulty_opts *o,
                       measure_difficulty_result *r, char *err, size_t errlen) {
    memset(r, 0, sizeof *r);
    gl_run *tsa = calloc(1, sizeof *tsa), *dense = calloc(1, sizeof *dense);
    gl_dataset ds, dt;
    memset(&ds, 0, sizeof ds);
    memset(&dt, 0, sizeof dt);
    int rc = -1;
    if (!tsa || !dense) {
        snprintf(err, errlen, "out of memory opening runs %s and %s", tsa_t->id, dense_t->id);
        goto cleanup;
    }
    if (run_open(tsa, tsa_t->dir, tsa_t->results, o->batch, err, errlen) ||
        run_open(dense, dense_t->dir, dense_t->results, o->batch, err, errlen))
        goto cleanup;
    if (data_open(&ds, &tsa->mf.data, tsa->model.cfg.seq_len, tsa->mf.train.seed, err, errlen) ||
        data_open(&dt, &dense->mf.data, dense->model.cfg.seq_len, dense->mf.train.seed, err, errlen))
        goto cleanup;
    r->n_layer = tsa->model.cfg.n_layer;
    r->step = tsa->st.step;
    rc = diff_measure(&tsa->model, &ds, &dense->model, &dt, SPLIT_VAL, o->windows, DIFF_RESAMPLES, o->seed, &r->r,
                      err, errlen);
cleanup:
    data_close(&ds);
    data_close(&dt);
    if (tsa) run_close(tsa);
    if (dense) run_close(dense);
    free(tsa);
    free(dense);
    return rc;
}

int measure_difficulty_record(const evalrun_target *tsa, const evalrun_target *dense,
                              const measure_difficulty_opts *o, const measure_difficulty_result *r, char *err,
                              size_t errlen) {
    report_metrics rm = {0};
    gl_db *db = NULL;
    rm.prov = db_prov("val", 0, r->r.windows, r->r.tokens);
    int rc = diff_metrics(&r->r, dense->id, o->seed, r->step, &rm, err, errlen) || db_open(&db, tsa->db, err, errlen) ||
                     report_metrics_flush(&rm, db, tsa->id, err, errlen)
                 ? -1
                 : 0;
    db_close(db);
    report_metrics_free(&rm);
    return rc;
}
