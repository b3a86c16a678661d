/*
 * figures_int.h — what the files of the figures module (figures.c,
 * figures_run.c) share and nothing outside them reads: the value range a
 * figure passes to gnuplot, the groups of runs that differ only by seed, and
 * the drawing and bookkeeping helpers.  The public interface is figures.h.
 *
 * figures.c holds gnuplot, these helpers, the grouping, the loss and Pareto
 * figures and the drivers; figures_run.c the figures of one run (from its
 * analysis, ablation and trace) and those built from every run's (depth
 * profiles, ablation_seeds).
 */
#ifndef GATELAB_ANALYSIS_RENDER_FIGURES_INT_H
#define GATELAB_ANALYSIS_RENDER_FIGURES_INT_H

#include <math.h>
#include <stddef.h>

#include "analysis/render/figures.h"
#include "store/manifest.h"
#include "analysis/render/tables.h"

/* The range of the values a figure shows, passed to gnuplot so a single
 * point or a constant never gives it an empty range. */
typedef struct {
    double lo, hi;
} fg_rng;

static inline fg_rng fg_rng_empty(void) { return (fg_rng){INFINITY, -INFINITY}; }

/* How an axis treats zero: free, widened to hold 0 (bars), or a quantity that
 * is never negative (a loss, a share saved): its padding stops at 0. */
enum { FG_FREE = 0, FG_ZERO = 1, FG_NONNEG = 2 };

/* A figure draws one curve (or bar, or point) per group of runs whose
 * configurations are the same but for the seed, with the spread over the
 * seeds; its legend names what tells the groups apart and its title what
 * they share. */
#define FG_GROUPS_MAX 128
#define FG_SEEDS_MAX 64

typedef struct {
    int n;                 /* runs (seeds) in the group */
    int idx[FG_SEEDS_MAX]; /* into the runs array */
    char *fp;              /* its group key (runset_group_key: "section.key=value\n" lines, seed and
                            * bookkeeping left out; owned) */
    gl_manifest *mf;       /* its first run's config resolved (runset_resolve; owned), NULL none */
    char label[200];       /* what tells it from the other groups of the figure */
} fg_group;

typedef struct {
    int n;
    fg_group g[FG_GROUPS_MAX];
    char common[240]; /* what every group shares, for the title ("tinyshakespeare s"), possibly "" */
    int max_seeds, min_seeds; /* the most and fewest seeds of a group */
} fg_groups;

/* Widen r to hold v (NaN and ±inf ignored). */
void fg_rng_add(fg_rng *r, double v);
/* Append "; <axis>min=…; <axis>max=…" for r, padded, to buf (include0: FG_*). */
void fg_rng_vars(fg_rng r, const char *axis, int include0, char *buf, size_t n);
/* Record figure name as skipped, and why, in s. */
void fg_skip(figures_summary *s, const char *name, const char *why);
/* Record a note on figure name (what was left out of it) in s. */
void fg_note(figures_summary *s, const char *name, const char *what);
/* A run's legend label: its variant and knobs. */
void fg_label(const runset_row *r, char *out, size_t n);
/* Run gnuplot script on data into out_dir/name.{png,pdf} with vars; record it in s
 * (made, or skipped when gnuplot found no valid points).  0, or -1 with err. */
int fg_draw(figures_summary *s, const char *script, const char *data, const char *out_dir, const char *name,
            const char *vars, char *err, size_t errlen);
/* The integer registry parameter key of run (dflt when absent).  -1 on a registry error. */
int fg_param_int(gl_db *db, const char *run, const char *key, int dflt, char *err, size_t errlen);
/* Free the groups' owned strings (not G itself). */
void fg_groups_free(fg_groups *G);
/* Group runs[0..n) (those with want[i], or all when want is NULL) by their
 * seedless configuration, with labels and the shared title part.  0, or -1 with err. */
int fg_groups_build(gl_db *db, const runset_row *runs, int n, const unsigned char *want, fg_groups *G, char *err,
                    size_t errlen);
/* "mean ± sd over N seeds" (or "" for one seed) for a title. */
void fg_spread_text(const fg_groups *G, char *out, size_t n);
/* A figure's title: what, then what every group of G shares and the spread
 * over seeds ("Loss during training: tinyshakespeare s, mean ± sd over 3 seeds"). */
void fg_group_title(const fg_groups *G, const char *what, char *out, size_t n);
/* Mean and sample sd of x[0..k) (sd NaN for k < 2). */
void fg_mean_sd(const double *x, int k, double *m, double *sd);
/* Strip one pair of surrounding double quotes from s in place. */
void fg_unquote(char *s);
/* figures_run.c: every per-run figure (ablation bars, heatmaps, categories,
 * depth maps) and the figures across runs built from them (depth profiles,
 * ablation_seeds).  0, or -1 with err. */
int fg_per_run(gl_db *db, const runset_row *runs, int n, const char *results, const char *data_dir,
               const char *out_dir, figures_summary *s, char *err, size_t errlen);

#endif
