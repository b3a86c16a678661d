/*
 * html.h — `gatelab report RUN|EXPERIMENT --html`: one self-contained HTML
 * page per run or experiment — the figures (gnuplot's SVG, inlined as data
 * URIs), the tables (the registry's Markdown tables and the run's analysis
 * files as HTML tables), and the probe text coloured character by character
 * by a gate α (one block and KV head; the others one click away in
 * <details>) or by TSA's effective depth, with each value on hover (title
 * attributes).  No script, no network: one file that opens anywhere.
 */
#ifndef GATELAB_ANALYSIS_RENDER_HTML_H
#define GATELAB_ANALYSIS_RENDER_HTML_H

#include <stddef.h>
#include <stdio.h>

#include "store/registry.h"

typedef struct {
    int block;      /* α view: block (1..L-1); -1: the gate with the largest mean α */
    int kv_head;    /* α view: KV head; -1: as above */
    int max_chars;  /* probe characters shown per view (0: 1024) */
} html_opts;

/* What a report covers: one run (run_id set) or every FINISHED run of an
 * experiment (run_id NULL). */
typedef struct {
    const char *experiment; /* the run's experiment, or the experiment reported */
    const char *run_id;     /* NULL: the experiment */
    const char *results;    /* results folder: run folders, figures/, tables/ */
    const char *db_path;    /* for the page's header */
} html_target;

/* Draw the experiment's figures and tables (figures_make_all,
 * tables_write_all into <results>/figures/<experiment> and <results>/tables) and write the
 * page to out_path (its folder is created).  *n_figures and *n_texts (if not
 * NULL) get the number of figures inlined and of coloured probe-text views.
 * Returns 0, or -1 with a message naming what failed. */
int html_report(gl_db *db, const html_target *t, const html_opts *o, const char *out_path, int *n_figures,
                int *n_texts, char *err, size_t errlen);

/* The colour of a value v in [0, 1] on the page's scale (white to orange
 * for α, white to blue for depth): "#rrggbb" into out (8 bytes). */
void html_colour(double v, int blue, char out[8]);

/* Write s with &, <, >, " and ' escaped. */
void html_escape(FILE *f, const char *s);

#endif
