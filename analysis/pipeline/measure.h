/*
 * measure.h — the measurements `gatelab ablate`, `gatelab analyze` and
 * `gatelab paper post` take of one run, as library calls with typed options:
 * an ablation or an early-exit τ sweep on validation windows (with its
 * registry rows), the trace analysis (files, rows, figures), and
 * difficulty-proportional routing of a TSA run against its dense partner.
 *
 * Where each concept lives: the interventions, their evaluation windows and
 * their rows are analysis/measure/ablate.h; what a trace says, analysis/measure/analyze.h;
 * halting and the logit lens, analysis/measure/settle.h; ρ(depth, dense loss),
 * analysis/measure/difficulty.h; the whole-split headline and early exit matched to
 * a TSA partner, run/eval_run.h (whose evalrun_target names a run here too).
 * This file opens the run and its data, chains those calls and writes the
 * rows.  The command line resolves the RUN argument, parses flags into these
 * options and prints the results (harness/cli/cmd_ablate.c, cmd_analyze.c);
 * nothing here prints.
 */
#ifndef GATELAB_ANALYSIS_PIPELINE_MEASURE_H
#define GATELAB_ANALYSIS_PIPELINE_MEASURE_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/measure/ablate.h"
#include "analysis/measure/analyze.h"
#include "analysis/measure/difficulty.h"
#include "analysis/core/report.h"
#include "analysis/measure/settle.h"
#include "model/gatekind.h"
#include "run/eval_run.h"
#include "store/rundir.h"

/* ---- ablations (ablate.h) ---- */

#define MEASURE_MAX_TAUS 32
/* The τ frontier of docs/analysis.md: what exit and posthoc-exit sweep when no τ is given. */
#define MEASURE_DEFAULT_TAUS {0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95}

typedef enum {
    MEASURE_GATES = 0, /* one intervention (ablate_mode) on the selected gates or routers */
    MEASURE_EXIT,      /* early exit at each τ (ablate_exit_sweep), rows METRIC_EXIT_MODE */
    MEASURE_POSTHOC,   /* post-hoc early exit of a dense model (ablate_posthoc_sweep), rows METRIC_POSTHOC_MODE */
} measure_kind;

typedef struct {
    measure_kind kind;
    ablate_mode mode;   /* MEASURE_GATES: which intervention */
    const char *layers; /* zero/mean/resample: every gate of these blocks ("1,3"); NULL: all */
    const char *heads;  /* zero/mean/resample: these gates as BLOCK:KV_HEAD ("2:0,3:1"); NULL: all */
    const char *values; /* ABLATE_FILE: "block kv_head value" lines */
    double taus[MEASURE_MAX_TAUS];
    int n_taus;         /* the sweeps' thresholds; 0: MEASURE_DEFAULT_TAUS */
    long windows;       /* evaluation windows (0: ablate's default, 64) */
    int batch;          /* sequences per forward pass (16) */
    int threads;        /* OpenMP threads (0: the run's train.threads) */
} measure_ablate_opts;

/* An opened run with its ablation context, and the last measurement's
 * result.  Large: callers keep it static or on the heap, zeroed. */
typedef struct {
    gl_run run;
    gl_dataset ds;
    ablate_ctx ctx;
    int have_run, have_ctx;
    char run_id[256], db_path[GL_PATH_MAX + 16], results[GL_PATH_MAX];
    char warn[1024];            /* ablate_init's warning ("" none): fewer windows than asked */
    measure_kind kind;          /* of the result below */
    char label[REPORT_NAME_MAX / 2]; /* MEASURE_GATES: the gates acted on ("all", "file", "L2H0,...") */
    ablate_result res;          /* MEASURE_GATES */
    ablate_eval full;           /* the sweeps: full depth on the same windows */
    ablate_exit_point pts[MEASURE_MAX_TAUS];
    int n_pts;
} measure_ablation;

/* Open t (id, dir, results and db read) with batch, threads (0: the run's
 * train.threads; sets OpenMP's count) and the ablation context on windows.
 * Returns 0, or -1 with a message; measure_ablation_close in both cases. */
int measure_ablation_open(measure_ablation *a, const evalrun_target *t, long windows, int batch, int threads,
                          char *err, size_t errlen);

/* measure_ablation_open, then the measurement o into a (a->res, or a->full
 * and a->pts).  Returns 0, or -1 with a message (a selection that does not
 * fit the mode, a bad --values file, a failed pass). */
int measure_ablate(measure_ablation *a, const evalrun_target *t, const measure_ablate_opts *o, char *err,
                   size_t errlen);

/* Write the rows of a's result (split ABLATE_SPLIT, the run's step, stamped
 * with the evaluation windows) to its registry; *n_rows how many.  Returns
 * 0, or -1 with a message. */
int measure_ablation_record(const measure_ablation *a, int *n_rows, char *err, size_t errlen);

/* For rows the caller builds (heads): stamp the rows added next to rm with
 * a's evaluation windows and the tokens scored, and write rm to a's
 * registry (emptying it).  flush returns 0, or -1 with a message. */
void measure_ablation_prov(const measure_ablation *a, report_metrics *rm, double tokens);
int measure_ablation_flush(const measure_ablation *a, report_metrics *rm, char *err, size_t errlen);

void measure_ablation_close(measure_ablation *a); /* accepts a zeroed or half-opened one */

/* ---- the trace analysis (analyze.h) ---- */

typedef struct {
    const char *out; /* the TSV files' folder; NULL: <run folder>/analysis */
    int no_db;       /* write the files only */
} measure_trace_opts;

typedef struct {
    analyze_summary s;                  /* the last evaluation, for the summary */
    char out_dir[GL_PATH_MAX + 16];     /* where the files went */
    char bands[GATE_COUNT][64];         /* gates whose quantile-band figure was drawn */
    int n_bands;
    int routed;                         /* TSA / early exit with halting statistics in st */
    settle_result st;
    long step;                          /* the checkpoint's step (routed) */
    int n_rows;                         /* registry rows written (unless no_db) */
    char notes[2048];                   /* "note: ..." lines, each ending in '\n': what was left out and why */
} measure_trace_result;

/* Where a run's own figures go (gate bands, heads): <results>/figures/<its experiment>/, the folder
 * `gatelab figures EXPERIMENT` writes (figures_dir); "all" when the registry cannot say. */
void measure_figure_dir(const evalrun_target *t, char *out, size_t n);

/* Read t's trace.h5 (t: id, dir, results, db), write what its gates did
 * (analyze_trace, the gate bands and their figures under t->results/figures,
 * settle statistics from the checkpoint of a routed run) and, unless
 * o->no_db, the rows.  Returns 0, or -1 with a message ("the files are
 * written, but the registry was not updated: ..." when only the rows
 * failed); r->notes holds the notes either way. */
int measure_trace(const evalrun_target *t, const measure_trace_opts *o, measure_trace_result *r, char *err,
                  size_t errlen);

/* ---- difficulty-proportional routing (difficulty.h) ---- */

typedef struct {
    long windows;  /* the first N validation windows; 0: all */
    uint64_t seed; /* the bootstrap seed (DIFF_SEED) */
    int batch;     /* sequences per forward pass (16) */
} measure_difficulty_opts;

typedef struct {
    diff_result r;
    int n_layer; /* of the TSA model */
    long step;   /* the TSA checkpoint's step */
} measure_difficulty_result;

/* Both checkpoints (tsa, dense: id, dir and results read), one
 * measurement on their validation windows.  Returns 0, or -1 with a message. */
int measure_difficulty(const evalrun_target *tsa, const evalrun_target *dense, const measure_difficulty_opts *o,
                       measure_difficulty_result *r, char *err, size_t errlen);

/* The difficulty.* rows of r on tsa (its db), partner dense->id.  Returns 0, or -1. */
int measure_difficulty_record(const evalrun_target *tsa, const evalrun_target *dense,
                              const measure_difficulty_opts *o, const measure_difficulty_result *r, char *err,
                              size_t errlen);

#endif
