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
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "store/registry.h"

typedef enum { MET_CSV, MET_JSON } met_format;

typedef struct {
    met_format fmt;
    long rows;
} met_ctx;

static void met_usage(FILE *f) {
    fprintf(f, "usage: gatelab metrics [--experiment E] [--run RUN] [--split S] [--name GLOB] [--format csv|json]\n"
               "                       [--db PATH] [--results DIR]\n"
               "  every metric row in long form (run_id, experiment, variant, split, name, params, step, value, se,\n"
               "  data_split, win_first, win_count, tokens, wall_time); name has no parameters in it, params is\n"
               "  a JSON object ({\"tau\":0.500}); GLOB matches name (e.g. 'exit.*', 'final.*'); default format csv\n"
               "  PATH defaults to DIR/gatelab.db (DIR: results)\n");
}

static void met_csv_text(const char *t) {
    if (!strpbrk(t, ",\"\n\r")) { fputs(t, stdout); return; }
    putchar('"');
    for (; *t; t++) {
        if (*t == '"') putchar('"');
        putchar(*t);
    }
    putchar('"');
}

static void met_json_text(const char *t) {
    putchar('"');
    for (; *t; t++) {
        unsigned char c = (unsigned char)*t;
        if (c == '"' || c == '\\') printf("\\%c", c);
        else if (c < 0x20) printf("\\u%04x", c);
        else putchar(c);
    }
    putchar('"');
}

/* A number, or the empty field (CSV) / null (JSON) when NaN. */
static void met_num(met_format fmt, double v, const char *f) {
    if (isfinite(v)) printf(f, v);
    else if (fmt == MET_JSON) fputs("null", stdout);
}

static int met_row(const gl_metric_long *r, void *vctx) {
    met_ctx *c = vctx;
    const int known = r->prov.split[0] && r->prov.count > 0;
    if (c->fmt == MET_CSV) {
        const char *t[] = {r->run_id, r->experiment, r->variant, r->split, r->name, r->params};
        for (int i = 0; i < 6; i++) {
            if (i) putchar(',');
            met_csv_text(t[i]);
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
    } else {
        printf("%s\n  {\"run_id\": ", c->rows ? "," : "");
        met_json_text(r->run_id);
        printf(", \"experiment\": ");
        met_json_text(r->experiment);
        printf(", \"variant\": ");
        met_json_text(r->variant);
        printf(", \"split\": ");
        met_json_text(r->split);
        printf(", \"name\": ");
        met_json_text(r->name);
        printf(", \"params\": %s, \"step\": %ld, \"value\": ", r->params, r->step); /* params: canonical JSON */
        met_num(c->fmt, r->value, "%.9g");
        printf(", \"se\": ");
        met_num(c->fmt, r->se, "%.9g");
        printf(", \"data_split\": ");
        if (known) met_json_text(r->prov.split);
        else fputs("null", stdout);
        if (known) printf(", \"win_first\": %ld, \"win_count\": %ld, \"tokens\": ", r->prov.first, r->prov.count);
        else printf(", \"win_first\": null, \"win_count\": null, \"tokens\": ");
        met_num(c->fmt, known ? r->prov.tokens : NAN, "%.0f");
        printf(", \"wall_time\": ");
        met_num(c->fmt, r->wall_time, "%.3f");
        printf("}");
    }
    c->rows++;
    return 0;
}

static const struct option met_opts[] = {
    {"experiment", required_argument, NULL, 'e'}, {"run", required_argument, NULL, 'R'},
    {"split", required_argument, NULL, 's'},      {"name", required_argument, NULL, 'n'},
    {"format", required_argument, NULL, 'f'},     {"db", required_argument, NULL, 'd'},
    {"results", required_argument, NULL, 'r'},    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

int cmd_metrics(int argc, char **argv) {
    const char *db_arg = NULL, *results = NULL;
    char err[1024], path[4096], id[256];
    gl_metric_filter f = {0};
    met_ctx ctx = {MET_CSV, 0};
    gl_db *db = NULL;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", met_opts, NULL)) != -1) {
        if (c == 'h') { met_usage(stdout); return 0; }
        else if (c == 'e') f.experiment = optarg;
        else if (c == 'R') f.run_id = reg_run_id(optarg, id, sizeof id);
        else if (c == 's') f.split = optarg;
        else if (c == 'n') f.name_glob = optarg;
        else if (c == 'd') db_arg = optarg;
        else if (c == 'r') results = optarg;
        else if (c == 'f' && !strcmp(optarg, "csv")) ctx.fmt = MET_CSV;
        else if (c == 'f' && !strcmp(optarg, "json")) ctx.fmt = MET_JSON;
        else if (c == 'f') { fprintf(stderr, "gatelab metrics: --format '%s': csv or json\n", optarg); return 2; }
        else { met_usage(stderr); return 2; }
    }
    if (optind < argc) {
        fprintf(stderr, "gatelab metrics: unexpected argument '%s' (a run is given with --run RUN)\n", argv[optind]);
        met_usage(stderr);
        return 2;
    }
    reg_db_path(path, sizeof path, db_arg, results);
    if (db_open_readonly(&db, path, err, sizeof err)) {
        fprintf(stderr, "gatelab metrics: %s\n", err);
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
        fprintf(stderr, "gatelab metrics: %s\n", err);
        return 1;
    }
    if (!ctx.rows) fprintf(stderr, "gatelab metrics: no metric rows match in %s\n", path);
    return 0;
}
