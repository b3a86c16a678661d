/*
 * cmd_tables.c — `gatelab tables` and `gatelab figures`: the paper's tables
 * (Markdown + LaTeX) and figures (gnuplot PNG + PDF + SVG) from the registry and
 * the runs' traces alone.
 *
 *   gatelab tables [EXPERIMENT] [--db PATH] [--results DIR] [--out DIR]     (default out: <results>/tables)
 *   gatelab figures [EXPERIMENT] [--db PATH] [--results DIR] [--out DIR]    (default out: <results>/figures)
 *
 * --db defaults to <results>/gatelab.db.  What each table and figure shows:
 * analysis/tables.h, analysis/figures.c and docs/analysis.md.
 */
#include <stdio.h>
#include <string.h>

#include "analysis/figures.h"
#include "analysis/tables.h"
#include "cli.h"
#include "store/manifest.h"
#include "store/registry.h"
#include "store/rundir.h"

typedef struct {
    const char *experiment, *db, *results, *out;
} tf_args;

static int tf_parse(int argc, char **argv, tf_args *a, const char *cmd) {
    memset(a, 0, sizeof *a);
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        int hv = i + 1 < argc;
        if (!strcmp(s, "--db") && hv) a->db = argv[++i];
        else if (!strcmp(s, "--results") && hv) a->results = argv[++i];
        else if (!strcmp(s, "--out") && hv) a->out = argv[++i];
        else if (!strcmp(s, "-h") || !strcmp(s, "--help")) return 1;
        else if (s[0] != '-' && !a->experiment) a->experiment = s;
        else {
            fprintf(stderr, "gatelab %s: unknown or incomplete argument '%s'\n", cmd, s);
            return 2;
        }
    }
    return 0;
}

static void tf_usage(FILE *f, const char *cmd) {
    fprintf(f, "usage: gatelab %s [EXPERIMENT] [--db PATH] [--results DIR] [--out DIR]\n"
               "  EXPERIMENT: only that experiment's runs (default: every finished run)\n"
               "  --db PATH defaults to <results>/gatelab.db; --out to <results>/%s\n",
            cmd, cmd);
}

/* Open the registry and resolve the output folder. */
static int tf_open(const tf_args *a, const char *what, gl_db **db, char *db_path, size_t dbn, char *out, size_t outn,
                   char *err, size_t errlen) {
    const char *results = run_results_dir(a->results);
    if (a->db) snprintf(db_path, dbn, "%s", a->db);
    else snprintf(db_path, dbn, "%s/gatelab.db", results);
    if (a->out) snprintf(out, outn, "%s", a->out);
    else snprintf(out, outn, "%s/%s", results, what);
    return db_open_readonly(db, db_path, err, errlen);
}

int cmd_tables(int argc, char **argv) {
    tf_args a;
    int pr = tf_parse(argc, argv, &a, "tables");
    if (pr) {
        tf_usage(pr == 1 ? stdout : stderr, "tables");
        return pr == 1 ? 0 : 2;
    }
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
    int pr = tf_parse(argc, argv, &a, "figures");
    if (pr) {
        tf_usage(pr == 1 ? stdout : stderr, "figures");
        return pr == 1 ? 0 : 2;
    }
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
