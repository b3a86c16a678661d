/*
 * analyze.h — `gatelab analyze`: everything a run's trace.h5 says about its
 * gates, as tab-separated files (one header row each) for plotting, metric
 * rows for the registry (split "analysis"), and a summary the command prints.
 * Which analyses run is decided by the gates the trace holds, read through
 * the gate table (model/gatekind.h) by their axes: a per-(block, KV head)
 * gate gets the head statistics under its key ("alpha_heads.tsv",
 * "alpha_mean.L1.H0"; a gate that is the same for every token is analysed as
 * if recorded at every probe token), per-block coefficients a table, routers
 * the depth profile, per-block per-token values their means.
 * File columns and metric names: docs/analysis.md.
 */
#ifndef GATELAB_ANALYSIS_MEASURE_ANALYZE_H
#define GATELAB_ANALYSIS_MEASURE_ANALYZE_H

#include <stddef.h>
#include <stdint.h>

#include "store/categories.h"
#include "store/trace.h"
#include "model/gatekind.h"
#include "model/model.h"
#include "analysis/core/gates.h"
#include "analysis/core/report.h"

#define ANALYZE_MAX_HEADS 64
#define ANALYZE_MAX_FILES 24
#define ANALYZE_SPLIT "analysis"
#define ANALYZE_P_BINS 10 /* halting-probability histogram: bins of [0, 1] (p_hist.tsv, p_hist_b<i>) */

/* The statistics of a per-(block, KV head) gate (SATFormer α, …) at the
 * last trace step. */
typedef struct {
    int gated[GL_MAX_LAYERS];                    /* 1: block n has the gate */
    gates_summary layer[GL_MAX_LAYERS];          /* over (probe tokens, KV heads) of block n */
    double entropy[GL_MAX_LAYERS];               /* normalised entropy across heads */
    double head_mean[GL_MAX_LAYERS][ANALYZE_MAX_HEADS];
    double cat[GL_MAX_LAYERS][CAT_COUNT];        /* mean by category of the token */
    double mean;                                 /* over every gated block */
} analyze_head_gate;

/* What the last evaluation step of the trace shows (for the printed summary;
 * the files and metric rows hold everything, every step). */
typedef struct {
    int n_layer, n_kv_head, n_router, n_steps;
    long n_probe;
    long step;                                   /* last trace step */
    int has[GATE_COUNT];                         /* the trace records gate g (model/gatekind.h) */
    int head_gate;                               /* the per-head gate analysed into head, or -1 */
    analyze_head_gate head;
    long cat_count[CAT_COUNT];                   /* probe tokens per category */
    double p_mean[GL_MAX_LAYERS];                /* per block n >= 1 (router n−1); index n */
    double p_active[GL_MAX_LAYERS];              /* share of tokens running block n */
    double p_cat[GL_MAX_LAYERS][CAT_COUNT];
    double depth_soft, depth_hard, active_frac;  /* expected depths (blocks), α */
    double lambda1[GL_MAX_LAYERS], lambda2[GL_MAX_LAYERS];
    /* per-token gates with one value per block (early-exit confidence, MoD weight, selection):
     * the mean by block, and by token category, at the last step; index [gate][block] */
    double tok_mean[GATE_COUNT][GL_MAX_LAYERS];
    double tok_cat[GATE_COUNT][GL_MAX_LAYERS][CAT_COUNT];
    int n_files;
    char files[ANALYZE_MAX_FILES][64];           /* names written in the output folder */
} analyze_summary;

/* Analyse td.  vocab (vocab_size bytes, id → byte) is used to print the
 * probe characters in depth_tokens.tsv (NULL: ids are shown).  Writes the
 * TSV files into out_dir (created if needed), appends metric rows to rm
 * (split "analysis", one set per trace step) and fills s.  Returns 0, or -1
 * with a message naming the file that failed or the trace's problem (no
 * evaluation step yet). */
int analyze_trace(const gl_trace_data *td, const uint8_t *vocab, int vocab_size, const char *out_dir,
                  report_metrics *rm, analyze_summary *s, char *err, size_t errlen);

/* Printable form of byte b for a TSV cell and a gnuplot label: itself for
 * printable ASCII except '"' (shown as ”, since gnuplot reads " as a quote
 * in data files), '\\' (shown as ∖, gnuplot drops it) and ' ' (shown as ␣), "↵" for a newline, "→" for a tab, "·"
 * otherwise.  Returns out. */
const char *analyze_char_label(uint8_t b, char out[8]);

#endif
