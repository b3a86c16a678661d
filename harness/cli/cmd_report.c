/*
 * cmd_report.c — `gatelab report RUN|EXPERIMENT [--html]`: one self-contained
 * HTML page (analysis/render/html.h) for a run or for every finished run of an
 * experiment, with the figures, the tables and the probe text coloured by a
 * gate α or by TSA's effective depth.
 *
 *   gatelab report TARGET [--html] [--out FILE] [--block N --kv-head H | --gate L2H0] [--chars N]
 *                  [--results DIR] [--db PATH]
 *
 * TARGET is a run (an id, a unique prefix of one, or its folder: resolve.h)
 * or an experiment name in the registry; an exact run id or an experiment's
 * name come first, so an experiment "tiny" is not read as the prefix of its
 * runs "tiny-…".  A --gate / --block that no run of the report has is an
 * error, not an empty page.
 * The page goes to <results>/report/<TARGET>.html unless --out says otherwise;
 * the figures and tables are (re)drawn into <results>/figures/<experiment> and
 * <results>/tables on the way, as `gatelab figures` and `tables` would.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/render/html.h"
#include "analysis/measure/probe.h"
#include "store/probecache.h"
#include "store/registry.h"
#include "args.h"
#include "cli.h"
#include "resolve.h"
#include "store/manifest.h"
#include "store/rundir.h"

typedef struct {
    const char *target, *out, *results, *db, *probe, *only;
    int html;
    html_opts o;
} rp_args;

static const args_opt rp_opts[] = {
    {"html", ARGS_KEY(0), NULL, "write the HTML page (the one format, and the default: may be left out)"},
    {"out", ARGS_KEY(1), "FILE", "the page (default <results>/report/<RUN|EXPERIMENT>.html)"},
    {"block", ARGS_KEY(2), "N", "colour the probe text by the α of block N (with --kv-head)"},
    {"kv-head", ARGS_KEY(3), "H", "… and KV head H (default: the gate with the largest mean α)"},
    {"gate", ARGS_KEY(4), "G", "block and KV head at once: 2:0 or TransformerLens's L2H0"},
    {"chars", ARGS_KEY(5), "N", "probe characters shown per view (default 1024)"},
    {"results", ARGS_KEY(6), "DIR", "results folder (default $GATELAB_RESULTS or results)"},
    {"db", ARGS_KEY(7), "PATH", "registry to read (default <results>/gatelab.db)"},
    {"probe", ARGS_KEY(8), "CACHE", "colour the text of a probe cache (gatelab probe) by each of its arrays instead"},
    {"only", ARGS_KEY(9), "PATH", "--probe: only the arrays whose path starts with PATH (e.g. lens/ or sat/alpha)"},
    {0}};
const args_spec rp_spec = {
    "report", "RUN|EXPERIMENT [--html] [options]",
    "One self-contained HTML page: figures (SVG), tables, and the probe text coloured by a gate's α (the\n"
    "others one click away) or by TSA's effective depth; hover a character for its value.  No script, no network.",
    rp_opts};

/* Read argv into a.  Returns -1 to go on, or the exit code (0 after --help, 2 bad usage). */
static int rp_parse(int argc, char **argv, rp_args *a) {
    memset(a, 0, sizeof *a);
    a->o.block = a->o.kv_head = -1;
    args_parser p;
    args_begin(&p, &rp_spec, argc, argv);
    int bad = 0;
    for (int k; !bad && (k = args_next(&p)) != ARGS_END;) {
        if (k < 0) return args_exit_code(k);
        char gate[32], err[256];
        switch (k) {
        case ARGS_POS:
            if (a->target) return args_usage_error(&rp_spec, "one RUN or EXPERIMENT only ('%s' and '%s' given)",
                                                   a->target, p.val);
            a->target = p.val;
            break;
        case ARGS_KEY(0): a->html = 1; break;
        case ARGS_KEY(1): a->out = p.val; break;
        case ARGS_KEY(2): bad = args_get_int(&p, 0, GL_MAX_LAYERS, &a->o.block); break;
        case ARGS_KEY(3): bad = args_get_int(&p, 0, 1 << 20, &a->o.kv_head); break;
        case ARGS_KEY(4):
            if (args_heads("--gate", p.val, gate, sizeof gate, err, sizeof err)) bad = 1;
            else if (strchr(gate, ',')) bad = snprintf(err, sizeof err, "--gate '%s': one gate only", p.val) > 0;
            else bad = sscanf(gate, "%d:%d", &a->o.block, &a->o.kv_head) != 2;
            if (bad) fprintf(stderr, "gatelab report: %s\n", err);
            break;
        case ARGS_KEY(5): bad = args_get_int(&p, 1, 1 << 24, &a->o.max_chars); break;
        case ARGS_KEY(6): a->results = p.val; break;
        case ARGS_KEY(7): a->db = p.val; break;
        case ARGS_KEY(8): a->probe = p.val; break;
        case ARGS_KEY(9): a->only = p.val; break;
        }
    }
    if (bad) return 2;
    if (a->probe && a->target)
        return args_usage_error(&rp_spec, "--probe reports one cache: drop '%s' (the cache names its run)", a->target);
    if (a->probe) return -1;
    if (!a->target && !a->probe) return args_usage_error(&rp_spec, "name a run or an experiment");
    if ((a->o.block < 0) != (a->o.kv_head < 0)) return args_usage_error(&rp_spec, "give --block and --kv-head together");
    return -1;
}

/* Is target a run (0 = yes; run_id and experiment filled), an experiment (1),
 * or neither (-1, err)?  An exact run id, then an experiment's name, then the
 * resolver (a folder or a unique prefix). */
static int rp_classify(gl_db *db, const rp_args *a, char *run_id, size_t rn, char *exp, size_t en, char *err,
                       size_t errlen) {
    gl_run_row *runs = NULL;
    int n = 0, kind = -1;
    const char *target = a->target;
    if (db_runs_list(db, NULL, NULL, &runs, &n, err, errlen)) return -1;
    char id[GL_PATH_MAX + 16], why[1024] = "";
    resolve_run rr;
    int exact = 0, is_exp = 0;
    for (int i = 0; i < n; i++) {
        exact |= !strcmp(runs[i].run_id, target);
        is_exp |= !strcmp(runs[i].experiment, target);
    }
    snprintf(id, sizeof id, "%s", target);
    if (!exact && is_exp) kind = 1;
    else if (!exact && resolve_run_arg(target, db_path(db), a->results, RESOLVE_DB, &rr, why, sizeof why) == 0)
        snprintf(id, sizeof id, "%s", rr.id);
    for (int i = 0; i < n && kind == -1; i++)
        if (!strcmp(runs[i].run_id, id)) {
            snprintf(run_id, rn, "%s", id);
            snprintf(exp, en, "%s", runs[i].experiment);
            kind = strcmp(runs[i].status, "FINISHED") ? -2 : 0;
        }
    if (kind == 1) snprintf(exp, en, "%s", target);
    free(runs);
    if (kind == -2) snprintf(err, errlen, "run %s is not FINISHED; a report covers finished runs (`gatelab runs`)", id);
    else if (kind == -1) {
        char e2[1024];
        if (resolve_experiment(db, target, e2, sizeof e2) < 0) snprintf(e2, sizeof e2, "%s", err);
        snprintf(err, errlen, "%s is neither a run nor an experiment in the registry: %s; and %s", target,
                 why[0] ? why : "no such run", e2);
    }
    return kind < 0 ? -1 : kind;
}

/* 1 when run_id has the SATFormer gate (block, kv_head) the report is asked to
 * colour by (GATE_ALPHA's rule: a satformer run, a block that mixes V1, a KV
 * head it has), 0 when not (why says what it has), -1 on a registry error. */
static int rp_run_has_gate(gl_db *db, const char *run_id, int block, int kv_head, char *why, size_t whylen, char *err,
                           size_t errlen) {
    char *ini = NULL;
    static gl_manifest mf;
    int k = db_run_config(db, run_id, &ini, NULL, err, errlen);
    if (k <= 0) {
        if (!k) snprintf(err, errlen, "run %s has no stored config in %s", run_id, db_path(db));
        return -1;
    }
    int bad = manifest_load_text(&mf, ini, run_id, err, errlen);
    free(ini);
    if (bad) return -1;
    const gl_model_config *c = &mf.model;
    if (c->value_residual != VR_SATFORMER) {
        snprintf(why, whylen, "run %s has no SATFormer gates (model.value_residual = %s)", run_id,
                 config_value_residual_name(c->value_residual));
        return 0;
    }
    if (block < 0 || block >= c->n_layer || !config_layer_mixes_v1(c, block) || kv_head < 0 || kv_head >= c->n_kv_head) {
        int lo = -1, hi = -1;
        for (int n = 0; n < c->n_layer; n++)
            if (config_layer_mixes_v1(c, n)) hi = n, lo = lo < 0 ? n : lo;
        snprintf(why, whylen, "run %s has gates L%dH0..L%dH%d (blocks %d..%d, KV heads 0..%d), not L%dH%d", run_id, lo,
                 hi, c->n_kv_head - 1, lo, hi, c->n_kv_head - 1, block, kv_head);
        return 0;
    }
    return 1;
}

/* With --gate / --block: 0 when some run the report covers has that gate,
 * else -1 with err naming the gates there are. */
static int rp_check_gate(gl_db *db, const rp_args *a, int kind, const char *run_id, const char *exp, char *err,
                         size_t errlen) {
    if (a->o.block < 0) return 0;
    gl_run_row *runs = NULL;
    int n = 0, found = 0;
    char why[512] = "";
    if (kind == 1 && db_runs_list(db, exp, "FINISHED", &runs, &n, err, errlen)) return -1;
    for (int i = 0; i < (kind == 1 ? n : 1) && !found; i++) {
        char w[512];
        int k = rp_run_has_gate(db, kind == 1 ? runs[i].run_id : run_id, a->o.block, a->o.kv_head, w, sizeof w, err,
                                errlen);
        if (k < 0) { free(runs); return -1; }
        found = k;
        if (!k && !why[0]) snprintf(why, sizeof why, "%s", w);
    }
    free(runs);
    if (found) return 0;
    snprintf(err, errlen, "--gate L%dH%d: %s%s", a->o.block, a->o.kv_head,
             kind == 1 ? "no finished run of the experiment has it; e.g. " : "", why[0] ? why : "no finished runs");
    return -1;
}

/* report --probe CACHE --html: the cache's text coloured by its arrays (analysis/measure/probe.h). */
static int rp_probe(const rp_args *a) {
    static gl_probecache pc;
    char err[2048], out[GL_PATH_MAX + 16];
    int rc = 1, views = -1;
    if (probecache_read(a->probe, &pc, err, sizeof err)) goto done;
    if (a->out) snprintf(out, sizeof out, "%s", a->out);
    else {
        const char *dot = strrchr(a->probe, '.');
        int stem = dot && !strchr(dot, '/') ? (int)(dot - a->probe) : (int)strlen(a->probe);
        snprintf(out, sizeof out, "%.*s.html", stem, a->probe);
    }
    if ((views = probe_html(&pc, out, a->only, a->o.max_chars, err, sizeof err)) < 0) goto done;
    if (views == 0) {
        snprintf(err, sizeof err, "%s: no array with a token axis%s%s", a->probe, a->only ? " under " : "",
                 a->only ? a->only : "");
        goto done;
    }
    printf("gatelab report: probe cache %s (run %s, %ld tokens): %d coloured views\n  %s\n", a->probe, pc.run_id,
           pc.n_tok, views, out);
    rc = 0;
done:
    if (rc) fprintf(stderr, "gatelab report: %s\n", err);
    probecache_free(&pc);
    return rc;
}

int cmd_report(int argc, char **argv) {
    rp_args a;
    int pr = rp_parse(argc, argv, &a);
    if (pr >= 0) return pr;
    if (a.probe) return rp_probe(&a);
    const char *results = run_results_dir(a.results);
    char db_path[GL_PATH_MAX + 16], out[GL_PATH_MAX + 64], run_id[256] = "", exp[256] = "", err[4096] = "";
    args_db_path(a.db, a.results, db_path, sizeof db_path);
    gl_db *db = NULL;
    int rc = 1, nfig = 0, ntext = 0;
    if (db_open_readonly(&db, db_path, err, sizeof err)) goto done;
    int kind = rp_classify(db, &a, run_id, sizeof run_id, exp, sizeof exp, err, sizeof err);
    if (kind < 0 || rp_check_gate(db, &a, kind, run_id, exp, err, sizeof err)) goto done;
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
