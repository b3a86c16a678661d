/*
 * heads.h — `gatelab heads`: which (block, KV head) gates matter.  Every
 * gated pair is zero-ablated alone (ablate.h) and ranked by the loss
 * increase, beside its gate's mean, exact-zero share and Gini index on the
 * same evaluation tokens.
 */
#ifndef GATELAB_ANALYSIS_MEASURE_HEADS_H
#define GATELAB_ANALYSIS_MEASURE_HEADS_H

#include <stddef.h>
#include <stdio.h>

#include "analysis/measure/ablate.h"

typedef struct {
    int layer, kv_head;
    double delta;       /* loss increase when only this gate is zeroed (nats/token) */
    double ppl_ratio;   /* exp(delta) */
    double delta_se;    /* paired standard error of delta (ablate_paired_se; NaN: one cluster) */
    double delta_cat[CAT_COUNT];
    double alpha_mean;  /* gate mean over the evaluation tokens */
    double frac_zero;   /* share of evaluation tokens with α exactly 0 */
    double gini;        /* Gini index of α over the evaluation tokens */
} heads_row;

/* Rank every gated pair of a model with a per-head gate (SATFormer α, …).  *rows (malloc'd, the caller
 * frees it) holds *n rows sorted by delta, largest first (ties: block, head);
 * base receives the unmodified model's evaluation.  Returns 0, or -1 with a
 * message (no per-head gate, out of memory, evaluation failure). */
int heads_rank(ablate_ctx *c, heads_row **rows, int *n, ablate_eval *base, char *err, size_t errlen);

/* The ranking as a Markdown table (rank, block, head, ΔL, exp(ΔL), mean α,
 * zero share, Gini) to f. */
void heads_write_markdown(FILE *f, const heads_row *rows, int n, const ablate_eval *base, const char *eval_desc);

/* The ranking as TSV (header row; columns in docs/analysis.md) to f, and the
 * (block, head, ΔL) grid for the heatmap, every block and head of the model,
 * NaN where a block has no gate, to grid (may be NULL). */
void heads_write_tsv(FILE *f, FILE *grid, const heads_row *rows, int n, int n_layer, int n_kv_head);

#endif
