/*
 * cmd_tables.c — `gatelab tables` and `gatelab figures`: the paper's tables
 * (Markdown + LaTeX) and figures (gnuplot PNG + PDF + SVG) from the registry and
 * the runs' traces alone.
 *
 *   gatelab tables [EXPERIMENT] [--db PATH] [--results DIR] [--out DIR]     (default out: <results>/tables)
 *   gatelab figures [EXPERIMENT] [--db PATH] [--results DIR] [--out DIR]    (default out: <results>/figures/EXPERIMENT, or .../all)
 *
 * --db defaults to <results>/gatelab.db.  What each table and figure shows:
 * analysis/tables.h, analysis/figures.c and docs/analysis.md.
 */
#include <stdio.h>
#include <string.h>

#include "analysis/figures.h"
#include "analysis/tables.h"
#include "args.h"
#include "cli.h"
#include "store/manifest.h"
#include "store/registry.h"
#include "store/rundir.h"

typedef struct {
    const char *experiment, *db, *results, *out;
} tf_args;

#define TF_OPTS(what)                                                                                             \
    {{"db", ARGS_KEY(0), "PATH", "registry to read (default <results>/gatelab.db)"},                                 \
     {"results", ARGS_KEY(1), "DIR", "results folder (default $GATELAB_RESULTS or results)"},                       \
     {"out", ARGS_KEY(2), "DIR", "where the " what " go (default <results>/" what ")"},                             \
     {0}}
static const args_opt tables_opts[] = TF_OPTS("tables"), figures_opts[] = TF_OPTS("figures");
static const args_spec tables_spec = {
    "tables", "[EXPERIMENT] [options]",
    "The paper's tables (Markdown and LaTeX) from the registry; EXPERIMENT: only that experiment's runs\n"
    "(default: every finished run).",
    tables_opts};
static const args_spec figures_spec = {
    "figures", "[EXPERIMENT] [options]",
    "The paper's figures (gnuplot: PNG, PDF and SVG) from the registry and the runs' traces; EXPERIMENT: only\n"
    "that experiment's runs (default: every finished run).",
    figures_opts};

/* Read argv into a.  Returns -1 to go on, or the exit code (0 after --help, 2 bad usage). */
static int tf_parse(int argc, char **argv, tf_args *a, const args_spec *spec) {
    memset(a, 0, sizeof *a);
    args_parser p;
    args_begin(&p, spec, argc, argv);
    for (int k; (k = args_next(&p)) != ARGS_END;) {
        if (k < 0) return args_exit_code(k);
        if (k == ARGS_POS && a->experiment)
            return args_usage_error(spec, "one EXPERIMENT only ('%s' and '%s' given)", a->experiment, p.val);
        if (k == ARGS_POS) a->experiment = p.val;
        else if (k == ARGS_KEY(0)) a->db = p.val;
        else if (k == ARGS_KEY(1)) a->results = p.val;
        else if (k == ARGS_KEY(2)) a->out = p.val;
    }
    return -1;
}

/* Open the registry and resolve the output folder. */
static int tf_open(const tf_args *a, const char *what, gl_db **db, char *db_path, size_t dbn, char *out, size_t outn,
                   char *err, size_t errlen) {
    const char *results = run_results_dir(a->results);
    args_db_path(a->db, a->results, db_path, dbn);
    if (a->out) snprintf(out, outn, "%s", a->out);
    else if (!strcmp(what, "figures")) figures_dir(results, a->experiment, out, outn); /* figures/<experiment>/ */
    else snprintf(out, outn, "%s/%s", results, what);
    return db_open_readonly(db, db_path, err, errlen);
}

int cmd_tables(int argc, char **argv) {
    tf_args a;
    int pr = tf_parse(argc, argv, &a, &tables_spec);
    if (pr >= 0) return pr;
    char err[2048] = "", db_path[GL_PATH_MAX + 16], out[GL_PATH_MAX + 16];
    gl_db *db = NULL;
    static tables_summary s;
    int rc = 1;
    if (tf_open(&a, "tables", &db, db_path, sizeof db_path, out, sizeof out, err, sizeof err) ||
        tables_write_all(db, a.experiment, out, &s, err, sizeof err)) {
        fprintf(stderr, "gatelab tables: %s\n", err);
        goto done;
    }
    printf("gatelab tables: %d finished runs%s%s in %s\n", s.n_runs, a.experiment ? " of experiment " : "",
           a.experiment ? a.experiment : "", db_path);
    for (int i = 0; i < s.n_written; i++)
        printf("  %-16s %3d rows  %s/%s.md  %s/%s.tex\n", s.written[i], s.rows[i], out, s.written[i], out, s.written[i]);
    for (int i = 0; i < s.n_skipped; i++) printf("  skipped %s\n", s.skipped[i]);
    rc = 0;
done:
    db_close(db);
    return rc;
}

int cmd_figures(int argc, char **argv) {
    tf_args a;
    int pr = tf_parse(argc, argv, &a, &figures_spec);
    if (pr >= 0) return pr;
    char err[4096] = "", db_path[GL_PATH_MAX + 16], out[GL_PATH_MAX + 16];
    gl_db *db = NULL;
    static figures_summary s;
    int rc = 1;
    if (tf_open(&a, "figures", &db, db_path, sizeof db_path, out, sizeof out, err, sizeof err) ||
        figures_make_all(db, a.experiment, run_results_dir(a.results), out, &s, err, sizeof err)) {
        fprintf(stderr, "gatelab figures: %s\n", err);
        for (int i = 0; i < s.n_made; i++) fprintf(stderr, "  made before the failure: %s\n", s.made[i]);
        goto done;
    }
    printf("gatelab figures: %d figures (PNG + PDF + SVG) in %s, data in %s/data\n", s.n_made, out, out);
    for (int i = 0; i < s.n_made; i++) printf("  %s.png  %s.pdf\n", s.made[i], s.made[i]);
    for (int i = 0; i < s.n_skipped; i++) printf("  skipped %s\n", s.skipped[i]);
    for (int i = 0; i < s.n_notes; i++) printf("  left out of %s\n", s.notes[i]);
    rc = 0;
done:
    db_close(db);
    return rc;
}
