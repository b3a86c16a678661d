/*
 * cmd_report.c — `gatelab report RUN|EXPERIMENT --html`: one self-contained
 * HTML page (analysis/html.h) for a run or for every finished run of an
 * experiment, with the figures, the tables and the probe text coloured by a
 * gate α or by TSA's effective depth.
 *
 *   gatelab report TARGET --html [--out FILE] [--block N] [--kv-head H] [--chars N]
 *                  [--results DIR] [--db PATH]
 *
 * TARGET is a run id (or run folder) or an experiment name in the registry.
 * The page goes to <results>/report/<TARGET>.html unless --out says otherwise;
 * the figures and tables are (re)drawn into <results>/figures and
 * <results>/tables on the way, as `gatelab figures` and `tables` would.
 */
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/html.h"
#include "store/registry.h"
#include "cli.h"
#include "store/manifest.h"
#include "store/rundir.h"

typedef struct {
    const char *target, *out, *results, *db;
    int html;
    html_opts o;
} rp_args;

static void rp_usage(FILE *f) {
    fprintf(f, "usage: gatelab report RUN|EXPERIMENT --html [--out FILE] [--block N] [--kv-head H] [--chars N]\n"
               "                      [--results DIR] [--db PATH]\n"
               "  one self-contained HTML page: figures (SVG), tables, and the probe text coloured by the α of\n"
               "  block N, KV head H (default: the gate with the largest mean α; the others one click away)\n"
               "  or by TSA's effective depth; hover a character for its value.  No script, no network.\n"
               "  --out defaults to <results>/report/<RUN|EXPERIMENT>.html; --chars: probe characters shown (1024)\n");
}

static int rp_parse(int argc, char **argv, rp_args *a) {
    memset(a, 0, sizeof *a);
    a->o.block = a->o.kv_head = -1;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        int hv = i + 1 < argc;
        if (!strcmp(s, "--html")) a->html = 1;
        else if (!strcmp(s, "--out") && hv) a->out = argv[++i];
        else if (!strcmp(s, "--results") && hv) a->results = argv[++i];
        else if (!strcmp(s, "--db") && hv) a->db = argv[++i];
        else if (!strcmp(s, "--block") && hv) a->o.block = atoi(argv[++i]);
        else if (!strcmp(s, "--kv-head") && hv) a->o.kv_head = atoi(argv[++i]);
        else if (!strcmp(s, "--chars") && hv) a->o.max_chars = atoi(argv[++i]);
        else if (!strcmp(s, "-h") || !strcmp(s, "--help")) return 1;
        else if (s[0] != '-' && !a->target) a->target = s;
        else {
            fprintf(stderr, "gatelab report: unknown or incomplete argument '%s'\n", s);
            return 2;
        }
    }
    if (!a->target || !a->html) {
        fprintf(stderr, "gatelab report: %s\n", !a->target ? "name a run or an experiment" : "say --html (the one format)");
        return 2;
    }
    if ((a->o.block < 0) != (a->o.kv_head < 0)) {
        fprintf(stderr, "gatelab report: give --block and --kv-head together\n");
        return 2;
    }
    return 0;
}

/* Is target a run (0 = yes; run_id and experiment filled), an experiment (1), or neither (-1, err)? */
static int rp_classify(gl_db *db, const char *target, const char *results, char *run_id, size_t rn, char *exp,
                       size_t en, char *err, size_t errlen) {
    gl_run_row *runs = NULL;
    int n = 0, kind = -1;
    if (db_runs_list(db, NULL, NULL, &runs, &n, err, errlen)) return -1;
    char dir[GL_PATH_MAX + 16], e2[512], id[GL_PATH_MAX + 16];
    snprintf(id, sizeof id, "%s", target);
    if (run_resolve(target, results, dir, sizeof dir, e2, sizeof e2) == 0) snprintf(id, sizeof id, "%s", basename(dir));
    for (int i = 0; i < n && kind < 0; i++)
        if (!strcmp(runs[i].run_id, id)) {
            snprintf(run_id, rn, "%s", id);
            snprintf(exp, en, "%s", runs[i].experiment);
            kind = strcmp(runs[i].status, "FINISHED") ? -2 : 0;
        }
    for (int i = 0; i < n && kind == -1; i++)
        if (!strcmp(runs[i].experiment, target)) {
            snprintf(exp, en, "%s", target);
            kind = 1;
        }
    free(runs);
    if (kind == -2) snprintf(err, errlen, "run %s is not FINISHED; a report covers finished runs (`gatelab runs`)", id);
    else if (kind == -1)
        snprintf(err, errlen, "%s is neither a run nor an experiment in the registry; `gatelab runs` lists them", target);
    return kind < 0 ? -1 : kind;
}

int cmd_report(int argc, char **argv) {
    rp_args a;
    int pr = rp_parse(argc, argv, &a);
    if (pr) {
        rp_usage(pr == 1 ? stdout : stderr);
        return pr == 1 ? 0 : 2;
    }
    const char *results = run_results_dir(a.results);
    char db_path[GL_PATH_MAX + 16], out[GL_PATH_MAX + 64], run_id[256] = "", exp[256] = "", err[4096] = "";
    if (a.db) snprintf(db_path, sizeof db_path, "%s", a.db);
    else snprintf(db_path, sizeof db_path, "%s/gatelab.db", results);
    gl_db *db = NULL;
    int rc = 1, nfig = 0, ntext = 0;
    if (db_open_readonly(&db, db_path, err, sizeof err)) goto done;
    int kind = rp_classify(db, a.target, results, run_id, sizeof run_id, exp, sizeof exp, err, sizeof err);
    if (kind < 0) goto done;
    if (a.out) snprintf(out, sizeof out, "%s", a.out);
    else snprintf(out, sizeof out, "%s/report/%s.html", results, kind == 0 ? run_id : exp);
    html_target t = {.experiment = exp, .run_id = kind == 0 ? run_id : NULL, .results = results, .db_path = db_path};
    if (html_report(db, &t, &a.o, out, &nfig, &ntext, err, sizeof err)) goto done;
    printf("gatelab report: %s %s: %d figures, %d coloured probe-text views\n  %s\n", kind == 0 ? "run" : "experiment",
           kind == 0 ? run_id : exp, nfig, ntext, out);
    rc = 0;
done:
    if (rc) fprintf(stderr, "gatelab report: %s\n", err);
    db_close(db);
    return rc;
}
