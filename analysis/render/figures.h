/*
 * figures.h — `gatelab figures`: the data files behind every figure (TSV,
 * from the registry and the runs' traces) and the gnuplot runs that draw
 * them as PNG and PDF with the scripts in scripts/plots and their shared
 * style.gp.
 * Figure list, data columns and file names: docs/analysis.md.
 */
#ifndef GATELAB_ANALYSIS_RENDER_FIGURES_H
#define GATELAB_ANALYSIS_RENDER_FIGURES_H

#include <stddef.h>

#include "store/registry.h"

#define FIGURES_MAX 256

typedef struct {
    int n_made;
    char made[FIGURES_MAX][128];     /* base names: NAME.png, NAME.pdf and NAME.svg exist */
    int n_skipped;
    char skipped[FIGURES_MAX][200];  /* "NAME: why" */
    int n_notes;
    char notes[FIGURES_MAX][240];    /* "NAME: what was left out of a drawn figure and why" (other tokens) */
} figures_summary;

/* Draw scripts/plots/<script> three times — out_base.png (pngcairo),
 * out_base.pdf (pdfcairo) and out_base.svg (svg, inlined by `gatelab report
 * --html`) — with gnuplot -e "style=…; data=…; out=…; vars".
 * vars (may be NULL or "") are more gnuplot assignments separated by ';'.
 * gnuplot runs with LC_CTYPE=C.UTF-8 whatever the locale.  Fails when
 * gnuplot is missing, exits non-zero, writes no output file, or finds no
 * data ("no valid points"); the message quotes gnuplot's stderr.  Other
 * stderr output of a run that drew its file is passed on as a warning.  Paths must not contain a
 * single quote.  Returns 0 or -1. */
int figures_gnuplot(const char *script, const char *data, const char *out_base, const char *vars, char *err,
                    size_t errlen);

/* The default folder of experiment's figures: <results>/figures/<experiment>, or
 * <results>/figures/all for every run (experiment NULL or ""), so that two experiments'
 * loss_step.png, pareto.png … never overwrite each other.  Every byte of the name outside
 * [A-Za-z0-9._-] becomes '_' (a '/', a quote or markup from a collected registry). */
void figures_dir(const char *results, const char *experiment, char *out, size_t n);

/* A gnuplot assignment "title='…'" for a figure fig_w inches wide whose title is
 * centred over share (0–1] of that width (less than 1 beside an outside key or a
 * colour bar): wrapped at spaces into lines short enough for the narrowest
 * terminal (the PDF's), joined as 'line'."\n".'line'.  A single quote becomes a
 * backquote.  The result is always a valid assignment, possibly truncated. */
void figures_title_var(char *out, size_t n, const char *title, double fig_w, double share);

/* Every figure of experiment (NULL: all runs): data files into
 * out_dir/data/, figures into out_dir.  results is the results folder (run
 * folders and traces for the per-token depth map).  A figure without data is
 * listed in s->skipped, not an error.  Returns 0, or -1 with a message. */
int figures_make_all(gl_db *db, const char *experiment, const char *results, const char *out_dir, figures_summary *s,
                     char *err, size_t errlen);

/* The per-token depth map of one TSA run from its trace (last evaluation):
 * up to max_chars probe characters, cols per row, into data_path; *rows and
 * *max_depth (blocks) for the drawing.  vocab (vocab_size) maps ids to
 * bytes.  Returns 0, or -1 with a message (no trace, not TSA). */
int figures_depth_map_data(const char *trace_path, const unsigned char *vocab, int vocab_size, int max_chars, int cols,
                           const char *data_path, int *rows, int *max_depth, char *err, size_t errlen);

/* The chosen runs' train and val loss overlaid in one figure, loss_runs_step
 * and loss_runs_time (PNG, PDF, SVG) in out_dir, data in out_dir/data/
 * loss_runs.tsv; runs that differ only by seed are one curve with ± sd, as in
 * loss_step.  A chosen run that is not FINISHED is listed in s->skipped.
 * Returns 0, or -1 with a message.  (`gatelab figures --runs | --tag`) */
int figures_loss_runs(gl_db *db, const char *const *ids, int nids, const char *out_dir, figures_summary *s, char *err,
                      size_t errlen);

/* A run's configuration (INI text) less the seed and bookkeeping keys: runs
 * with equal texts are the same run but for the seed (the figures' groups).
 * It IS the run set's rule (runset_group_key, analysis/runs/runset.h), not a copy.
 * malloc'd, NULL when out of memory. */
char *figures_seedless_config(const char *ini);

#endif
