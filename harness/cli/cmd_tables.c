/*
 * cmd_tables.c — `gatelab tables` and `gatelab figures`: the paper's tables
 * (Markdown + LaTeX) and figures (gnuplot PNG + PDF + SVG) from the registry and
 * the runs' traces alone.
 *
 *   gatelab tables [EXPERIMENT] [--db PATH] [--results DIR] [--out DIR]     (default out: <results>/tables)
 *   gatelab figures [EXPERIMENT] [--db PATH] [--results DIR] [--out DIR]    (default out: <results>/figures/EXPERIMENT, or .../all)
 *   gatelab figures --runs ID,ID,... | --tag KEY=VALUE ...                   (those runs overlaid in one figure)
 *
 * --db defaults to <results>/gatelab.db.  What each table and figure shows:
 * analysis/render/tables.h, analysis/render/figures.c and docs/analysis.md.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/render/figures.h"
#include "analysis/render/tables.h"
#include "args.h"
#include "cli.h"
#include "resolve.h"
#include "store/manifest.h"
#include "store/registry.h"
#include "store/rundir.h"

#define TF_MAX_CHOSEN 64

typedef struct {
    const char *experiment, *db, *results, *out;
    const char *runs;                /* figures --runs ID,ID,... */
    const char *tags[TF_MAX_CHOSEN]; /* figures --tag KEY=VALUE ... */
    int ntags;
} tf_args;

#define TF_OPTS(what)                                                                                             \
    {{"db", ARGS_KEY(0), "PATH", "registry to read (default <results>/gatelab.db)"},                                 \
     {"results", ARGS_KEY(1), "DIR", "results folder (default $GATELAB_RESULTS or results)"},                       \
     {"out", ARGS_KEY(2), "DIR", "where the " what " go (default <results>/" what ")"},                             \
     {0}}
static const args_opt tables_opts[] = TF_OPTS("tables");
static const args_opt figures_opts[] = {
    {"db", ARGS_KEY(0), "PATH", "registry to read (default <results>/gatelab.db)"},
    {"results", ARGS_KEY(1), "DIR", "results folder (default $GATELAB_RESULTS or results)"},
    {"out", ARGS_KEY(2), "DIR", "where the figures go (default <results>/figures)"},
    {"runs", ARGS_KEY(3), "ID,ID,...", "only overlay these runs' loss curves in one figure (loss_runs_step, loss_runs_time)"},
    {"tag", ARGS_KEY(4), "KEY=VALUE", "the same for the runs carrying that tag (repeat: all of them; adds to --runs)"},
    {0}};
const args_spec tables_spec = {
    "tables", "[EXPERIMENT] [options]",
    "The paper's tables (Markdown and LaTeX) from the registry; EXPERIMENT: only that experiment's runs\n"
    "(default: every finished run).",
    tables_opts};
const args_spec figures_spec = {
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
        else if (k == ARGS_KEY(3)) a->runs = p.val;
        else if (k == ARGS_KEY(4)) {
            if (!strchr(p.val, '=') || p.val[0] == '=')
                return args_usage_error(spec, "--tag '%s': write it as key=value", p.val);
            if (a->ntags == TF_MAX_CHOSEN) return args_usage_error(spec, "at most %d --tag filters", TF_MAX_CHOSEN);
            a->tags[a->ntags++] = p.val;
        }
    }
    if ((a->runs || a->ntags) && a->experiment)
        return args_usage_error(spec, "EXPERIMENT and --runs/--tag choose runs two ways: give one");
    return -1;
}

/* Open the registry (and check the EXPERIMENT asked for is in it) and resolve the output folder. */
static int tf_open(const tf_args *a, const char *what, gl_db **db, char *db_path, size_t dbn, char *out, size_t outn,
                   char *err, size_t errlen) {
    const char *results = run_results_dir(a->results);
    args_db_path(a->db, a->results, db_path, dbn);
    if (a->out) snprintf(out, outn, "%s", a->out);
    else if (!strcmp(what, "figures")) figures_dir(results, a->experiment, out, outn); /* figures/<experiment>/ */
    else snprintf(out, outn, "%s/%s", results, what);
    if (db_open_readonly(db, db_path, err, errlen)) return -1;
    return a->experiment && resolve_experiment(*db, a->experiment, err, errlen) != 1 ? -1 : 0;
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

/* figures --runs / --tag: resolve the runs named (a unique prefix is enough) and
 * those carrying every tag, then overlay them (figures_loss_runs). */
static int tf_chosen(const tf_args *a, gl_db *db, const char *out, figures_summary *s, char *err, size_t errlen) {
    static char ids[TF_MAX_CHOSEN][160];
    const char *idp[TF_MAX_CHOSEN];
    int n = 0;
    for (const char *p = a->runs; p && *p;) {
        size_t w = strcspn(p, ",");
        char one[GL_PATH_MAX];
        snprintf(one, sizeof one, "%.*s", (int)w, p);
        p += w + (p[w] == ',');
        if (!one[0]) continue;
        if (n == TF_MAX_CHOSEN) {
            snprintf(err, errlen, "--runs: at most %d runs", TF_MAX_CHOSEN);
            return -1;
        }
        resolve_run r;
        char e2[1024];
        if (resolve_run_arg(one, a->db, a->results, RESOLVE_DB, &r, e2, sizeof e2)) {
            snprintf(err, errlen, "--runs: %s", e2);
            return -1;
        }
        snprintf(ids[n], sizeof ids[n], "%s", r.id);
        n++;
    }
    if (a->ntags) {
        gl_run_filter f = {.tags = a->tags, .ntags = a->ntags};
        gl_run_row *rows = NULL;
        int nr = 0;
        if (db_runs_find(db, &f, &rows, &nr, err, errlen)) return -1;
        if (!nr) snprintf(err, errlen, "--tag: no run carries %s%s", a->tags[0], a->ntags > 1 ? " and the others" : "");
        for (int i = 0; i < nr && n < TF_MAX_CHOSEN; i++) snprintf(ids[n++], sizeof ids[0], "%s", rows[i].run_id);
        free(rows);
        if (!nr) return -1;
    }
    for (int i = 0; i < n; i++) idp[i] = ids[i];
    return figures_loss_runs(db, idp, n, out, s, err, errlen);
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
        (a.runs || a.ntags ? tf_chosen(&a, db, out, &s, err, sizeof err)
                           : figures_make_all(db, a.experiment, run_results_dir(a.results), out, &s, err, sizeof err))) {
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
