/*
 * paper_fig.h — the figures of the paper report, each over seeds
 * (paper_fig.c): paper_pareto, paper_alpha_heatmap, paper_category,
 * paper_ablation, paper_loss_time, paper_p_hist (.tsv, .png, .pdf).
 */
#ifndef GATELAB_ANALYSIS_PAPER_PAPER_FIG_H
#define GATELAB_ANALYSIS_PAPER_PAPER_FIG_H

#include <stddef.h>

#include "analysis/paper/paper.h"
#include "analysis/runs/runset.h"

#define PAPER_FIGS_MAX 12

typedef struct {
    int n_made;
    char made[PAPER_FIGS_MAX][64];     /* base names drawn */
    int n_skipped;
    char skipped[PAPER_FIGS_MAX][160]; /* "name: why" */
} paper_figs;

/* The paper's own points for the Pareto figure (from the claims file's
 * `pareto` keys): share saved (0..1) and loss ÷ dense − 1, drawn at our dense
 * loss × (1 + rel).  NaN: not given. */
#define PAPER_POINTS_MAX 8
typedef struct {
    int n;
    char label[PAPER_POINTS_MAX][64];
    double saved[PAPER_POINTS_MAX], rel[PAPER_POINTS_MAX];
} paper_points;

/* Which runs the figures draw: those of the claims file's base data set
 * (claims_base_data) at its base scale, and how the figures name the data set
 * (the claims file's [report] data_title). */
typedef struct {
    char data[64];  /* "tinyshakespeare" */
    char title[64]; /* "Tiny Shakespeare" */
    char scale[32]; /* "s" */
} paper_base;

/* Draw every figure that has data into dir (which must exist), for the
 * runs of b.  runs are paper_collect's view of rs (the run set they came
 * from, whose rows the figures read); db gives the one set-wide read the run
 * set does not carry (the validation-loss series).  Returns 0, or -1 with a
 * message (a registry, gnuplot or file failure; missing data is a skip, not
 * a failure). */
int paper_figures(gl_db *db, const runset *rs, const paper_run *runs, int n, const paper_base *b,
                  const paper_points *pp, const char *dir, paper_figs *s, char *err, size_t errlen);

/* Draw dir/paper_forest from the TSV tsv (paper.c writes it: index, row, mean,
 * lo, hi, paper, verdict; rows lines), sized to its rows.  Returns 0 or -1. */
int paper_fig_forest(const char *tsv, const char *dir, int rows, const char *panels, paper_figs *s, char *err,
                     size_t errlen);

/* Record that figure name was not drawn, and why. */
void paper_fig_skip(paper_figs *s, const char *name, const char *why);

#endif
