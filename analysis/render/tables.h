/*
 * tables.h — `gatelab tables`: the paper's tables as Markdown and LaTeX,
 * drawn from the registry alone (store/registry.h).
 *
 *   loss_by_variant   validation loss (nats/token) and bpc by data, scale and variant,
 *                     with the paired difference from the baseline of the same seeds
 *   tsa_lambda        TSA: active fraction α, TLOps saved and loss by λ
 *   task_accuracy     copy / sort / mqar: token and sequence accuracy
 *   throughput        training tokens/s by variant and scale
 *   ablations         gate interventions (split "ablation") per run and measurement
 *   tsa_vs_exit       TSA against early exit at a matched α: the pair `eval --match-run` recorded
 *
 * Validation numbers are each run's headline (the whole split, val/final.*);
 * a run without one (trained before the headline existed) falls back to its
 * last periodic evaluation, and the cell says so with "†" and a note under
 * the table.  Every number says what it was measured on: a column with the
 * split, windows, tokens and checkpoint step.  Every cell over seeds is
 * "mean ± sample std (n − 1)" with the seed count in its own column; a single
 * seed shows its value ± its standard error over tokens.  Differences between
 * variants are paired by seed, with a 95 % Student t interval, and only
 * between numbers measured on one token set.  Only FINISHED runs count.
 * Columns: docs/analysis.md.
 */
#ifndef GATELAB_ANALYSIS_RENDER_TABLES_H
#define GATELAB_ANALYSIS_RENDER_TABLES_H

#include <stddef.h>

#include "store/registry.h"
#include "analysis/runs/runset.h"

/* The FINISHED runs of experiment (NULL: all) with their parameters and final
 * metrics: the rows of the run loader (runset_load_set).  *runs is malloc'd (the
 * caller frees it).  Returns 0 or -1. */
int tables_collect(gl_db *db, const char *experiment, runset_row **runs, int *n, char *err, size_t errlen);

/* Sort runs by data, scale (xs, s, m, l, xl, then others), variant
 * (baseline, resformer, satformer, then others), λ, seed: the tables' order. */
void tables_sort(runset_row *runs, int n);

#define TABLES_MAX 8

typedef struct {
    int n_written;
    char written[TABLES_MAX][64];   /* base names written (NAME.md and NAME.tex) */
    int rows[TABLES_MAX];           /* body rows of each */
    int n_skipped;
    char skipped[TABLES_MAX][128];  /* "NAME: why" */
    int n_runs;
} tables_summary;

/* Write every table that has rows into out_dir (created if needed) as NAME.md
 * and NAME.tex.  Returns 0, or -1 with a message. */
int tables_write_all(gl_db *db, const char *experiment, const char *out_dir, tables_summary *s, char *err,
                     size_t errlen);

/* The two-sided 95 % quantile of Student's t with df degrees of freedom (NaN for df < 1). */
double tables_t95(int df);

/* mean and sample standard deviation of x[0..n) skipping NaN; *k the count used. */
void tables_mean_std(const double *x, int n, double *mean, double *std, int *k);

#endif
