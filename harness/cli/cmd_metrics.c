/*
 * cmd_metrics.c — `gatelab metrics`: every stored metric row in long form,
 * one row per measurement, ready for pandas (`pd.read_csv`) or R
 * (`read.csv`):
 *
 *   run_id, experiment, variant, split, name, params, step, value, se,
 *   data_split, win_first, win_count, tokens, wall_time
 *
 * name is the quantity without parameters (`exit.loss`, `zero.delta_loss`,
 * `alpha_mean`, `loss`) and params its parameters as a JSON object
 * (`{"tau":0.500}`, `{"layer":1,"head":0}`, `{}`), as the registry stores them
 * (docs/registry.md); in pandas, `df.join(pd.json_normalize(df.params.map(
 * json.loads)))` turns them into columns.  variant is the label `tables` uses.
 * What a value was measured on is in data_split / win_first / win_count /
 * tokens (empty when unknown); NaN or infinite values were stored as NULL and
 * print empty (CSV) or null (JSON).  Deleted runs are left out.
 * It reads the registry only (opened read-only) and aggregates nothing.
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cli.h"
#include "jsonl.h"
#include "resolve.h"
#include "views.h"
#include "store/registry.h"
#include "store/rundir.h"

typedef enum { MET_CSV, MET_JSON } met_format;

typedef struct {
    met_format fmt;
    long rows;
    int oom; /* a JSON row could not be built */
    char bad[512]; /* a registry cell that is not what it must be ("" none) */
} met_ctx;

/* The params cell of r parsed: a JSON object (an empty cell is {}); NULL
 * with c->bad set when the registry holds anything else there. */
json_t *metrics_params_json(const gl_metric_long *r, char *bad, size_t n) {
    json_error_t je;
    json_t *p = r->params[0] ? json_loads(r->params, 0, &je) : json_object();
    if (p && json_is_object(p)) return p;
    snprintf(bad, n, "run %s, metric %s at step %ld: the params cell '%.120s' is not a JSON object "
             "(%s); the registry is damaged or was edited by hand", r->run_id, r->name, r->step, r->params,
             p ? "another JSON value" : je.text);
    json_decref(p);
    return NULL;
}

static json_t *met_params(const gl_metric_long *r, met_ctx *c) { return metrics_params_json(r, c->bad, sizeof c->bad); }

static const args_opt met_opts[] = {
    {"experiment", ARGS_KEY(0), "E", "only the runs of experiment E"},
    {"run", ARGS_KEY(1), "RUN", "only run RUN (a run id, a unique prefix of one, or its folder)"},
    {"split", ARGS_KEY(2), "S", "only split S (train, val, test, ablation, ...)"},
    {"name", ARGS_KEY(3), "GLOB", "only names matching GLOB (e.g. 'exit.*', 'final.*'); SPLIT/GLOB, the form `compare`\n"
                                  "and `runs` print ('val/final.loss', 'val/*', '*/loss'), also picks the split"},
    {"format", ARGS_KEY(4), "F", "csv (default) or json"},
    {"db", ARGS_KEY(5), "PATH", "registry to read (default <results>/gatelab.db)"},
    {"results", ARGS_KEY(6), "DIR", "results folder whose gatelab.db is read (default $GATELAB_RESULTS or results)"},
    {0}};
const args_spec met_spec = {
    "metrics", "[options]",
    "Every metric row in long form (run_id, experiment, variant, split, name, params, step, value, se,\n"
    "data_split, win_first, win_count, tokens, wall_time); name has no parameters in it, params is a JSON\n"
    "object ({\"tau\":0.500}).  Deleted runs are left out.",
    met_opts};

/* A number, or the empty field (CSV) / null (JSON) when NaN. */
static void met_num(met_format fmt, double v, const char *f) {
    if (isfinite(v)) printf(f, v);
    else if (fmt == MET_JSON) fputs("null", stdout);
}

/* One row as a JSON object (views.h: `gatelab serve` answers with the same); params is stolen. */
json_t *metrics_json_row(const gl_metric_long *r, json_t *params) {
    const int known = r->prov.split[0] && r->prov.count > 0;
    json_t *o = json_object();
    jsonl_set(o, "run_id", jsonl_str(r->run_id));
    jsonl_set(o, "experiment", jsonl_str(r->experiment));
    jsonl_set(o, "variant", jsonl_str(r->variant));
    jsonl_set(o, "split", jsonl_str(r->split));
    jsonl_set(o, "name", jsonl_str(r->name));
    jsonl_set(o, "params", params);
    jsonl_set(o, "step", jsonl_int(r->step));
    jsonl_set(o, "value", jsonl_num(r->value));
    jsonl_set(o, "se", jsonl_num(r->se));
    jsonl_set(o, "data_split", known ? jsonl_str(r->prov.split) : json_null());
    jsonl_set(o, "win_first", known ? jsonl_int(r->prov.first) : json_null());
    jsonl_set(o, "win_count", known ? jsonl_int(r->prov.count) : json_null());
    jsonl_set(o, "tokens", known ? jsonl_count(r->prov.tokens) : json_null());
    jsonl_set(o, "wall_time", jsonl_num(isfinite(r->wall_time) ? round(r->wall_time * 1000) / 1000 : NAN));
    return o;
}

/* One row on its own line of the array (after "[" or ","); params is stolen. */
static int met_json_row(const gl_metric_long *r, long before, json_t *params) {
    json_t *o = metrics_json_row(r, params);
    char *dump = jsonl_dumps(o);
    json_decref(o);
    if (!dump) return -1;
    printf("%s\n  %s", before ? "," : "", dump);
    free(dump);
    return 0;
}

static int met_row(const gl_metric_long *r, void *vctx) {
    met_ctx *c = vctx;
    const int known = r->prov.split[0] && r->prov.count > 0;
    json_t *params = met_params(r, c); /* the registry's canonical JSON */
    if (!params) return -1;
    if (c->fmt == MET_CSV) {
        json_decref(params);
        const char *t[] = {r->run_id, r->experiment, r->variant, r->split, r->name, r->params};
        for (int i = 0; i < 6; i++) {
            if (i) putchar(',');
            jsonl_csv_field(stdout, t[i]);
        }
        printf(",%ld,", r->step);
        met_num(c->fmt, r->value, "%.9g");
        putchar(',');
        met_num(c->fmt, r->se, "%.9g");
        if (known) printf(",%s,%ld,%ld,", r->prov.split, r->prov.first, r->prov.count);
        else printf(",,,,");
        met_num(c->fmt, known ? r->prov.tokens : NAN, "%.0f");
        putchar(',');
        met_num(c->fmt, r->wall_time, "%.3f");
        putchar('\n');
    } else if (met_json_row(r, c->rows, params)) {
        c->oom = 1;
        return -1;
    }
    c->rows++;
    return 0;
}

int cmd_metrics(int argc, char **argv) {
    const char *db_arg = NULL, *results = NULL, *run = NULL;
    char err[1024], path[GL_PATH_MAX + 16], split[32], name_split[32];
    gl_metric_filter f = {0};
    met_ctx ctx = {MET_CSV, 0, 0, ""};
    gl_db *db = NULL;
    int fmt = MET_CSV, bad = 0;
    args_parser p;
    args_begin(&p, &met_spec, argc, argv);
    for (int k; !bad && (k = args_next(&p)) != ARGS_END;) {
        if (k < 0) return args_exit_code(k);
        switch (k) {
        case ARGS_POS: return args_usage_error(&met_spec, "unexpected argument '%s' (a run is given with --run RUN)", p.val);
        case ARGS_KEY(0): f.experiment = p.val; break;
        case ARGS_KEY(1): run = p.val; break;
        case ARGS_KEY(2): /* the registry's splits are lower case: VAL is val */
            snprintf(split, sizeof split, "%s", p.val);
            for (char *c = split; *c; c++) *c = (char)tolower((unsigned char)*c);
            f.split = split;
            break;
        case ARGS_KEY(3): f.name_glob = p.val; break;
        case ARGS_KEY(4): bad = args_get_choice(&p, "csv,json", &fmt); break;
        case ARGS_KEY(5): db_arg = p.val; break;
        case ARGS_KEY(6): results = p.val; break;
        }
    }
    if (bad) return 2;
    const char *slash = f.name_glob ? strchr(f.name_glob, '/') : NULL;
    if (slash) { /* SPLIT/GLOB: the split/name form compare prints; '*' as the split is any split */
        size_t k = (size_t)(slash - f.name_glob);
        if (k >= sizeof name_split)
            return args_usage_error(&met_spec, "--name '%s': the split before '/' is too long", f.name_glob);
        memcpy(name_split, f.name_glob, k);
        name_split[k] = 0;
        for (char *c = name_split; *c; c++) *c = (char)tolower((unsigned char)*c);
        if (strpbrk(name_split, "?[") || (strchr(name_split, '*') && strcmp(name_split, "*")))
            return args_usage_error(&met_spec, "--name '%s': the split before '/' is a name (val, test, train, "
                                    "ablation, ...) or '*'", f.name_glob);
        if (strcmp(name_split, "*")) {
            if (f.split && strcmp(f.split, name_split))
                return args_usage_error(&met_spec, "--name '%s' names split %s, --split says %s", f.name_glob,
                                        name_split, f.split);
            f.split = name_split;
        }
        f.name_glob = slash + 1;
    }
    ctx.fmt = (met_format)fmt;
    resolve_run r;
    args_db_path(db_arg, results, path, sizeof path);
    if (run && resolve_run_arg(run, db_arg, results, RESOLVE_DB, &r, err, sizeof err)) {
        fprintf(stderr, "gatelab metrics: --run %s\n", err);
        return 1;
    }
    if (run && r.deleted) {
        fprintf(stderr, "gatelab metrics: --run %s: the run is deleted (`gatelab restore %s` shows it again)\n", r.id, r.id);
        return 1;
    }
    if (run) { /* a run folder: its own registry */
        snprintf(path, sizeof path, "%s", r.db);
        f.run_id = r.id;
    }
    if (db_open_readonly(&db, path, err, sizeof err) ||
        (f.experiment && resolve_experiment(db, f.experiment, err, sizeof err) != 1)) {
        fprintf(stderr, "gatelab metrics: %s%s\n", db && f.experiment ? "--experiment: " : "", err);
        db_close(db);
        return 1;
    }
    if (ctx.fmt == MET_CSV)
        printf("run_id,experiment,variant,split,name,params,step,value,se,data_split,win_first,win_count,tokens,"
               "wall_time\n");
    else printf("[");
    int rc = db_metrics_each(db, &f, met_row, &ctx, err, sizeof err);
    if (ctx.fmt == MET_JSON) printf("%s]\n", ctx.rows ? "\n" : "");
    db_close(db);
    if (rc) {
        fprintf(stderr, "gatelab metrics: %s\n", ctx.bad[0] ? ctx.bad : ctx.oom ? "out of memory writing JSON" : err);
        return 1;
    }
    if (!ctx.rows) fprintf(stderr, "gatelab metrics: no metric rows match in %s\n", path);
    return 0;
}
