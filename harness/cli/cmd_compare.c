/*
 * cmd_compare.c — `gatelab compare RUN RUN ...`: runs side by side.
 *
 * First the parameters (the flattened config, `section.key`) whose values
 * differ between the runs — a key a run lacks counts as different and shows
 * as "-" — then each run's variant and status and its headline metrics (the
 * whole-split evaluation at the end of training: val/final.*, test/final.*,
 * and val/matched.* when an early-exit run was matched to a TSA run), with the
 * last train/loss.  Where a metric was measured more than once, the
 * measurement on the most windows is shown (as `runs` and `tables` do).
 * Formats: a table (default), CSV (one row per parameter or metric: kind,
 * key, then one column per run; RFC 4180 quoting) or JSON (an object with
 * runs, params and metrics; null for a missing value).
 * It reads the registry only (opened read-only) and computes nothing that is
 * not stored there; statistics over seeds are `gatelab tables`' job.
 */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "store/metric.h"
#include "store/registry.h"

typedef enum { CMP_TABLE, CMP_CSV, CMP_JSON } cmp_format;

/* One row of the comparison: a key and one text per run (NULL: missing). */
typedef struct {
    char kind[8]; /* "param" or "metric" */
    char key[192];
    char **val;   /* nrun texts */
} cmp_row;

typedef struct {
    int nrun;
    gl_run_row *runs; /* nrun */
    cmp_row *rows;
    int nrows, cap;
} cmp_set;

static void cmp_usage(FILE *f) {
    fprintf(f, "usage: gatelab compare RUN RUN ... [--format table|csv|json] [--db PATH] [--results DIR]\n"
               "  the parameters that differ between the runs, then their headline metrics side by side\n"
               "  (val/final.*, test/final.*, val/matched.*, and the last train/loss)\n"
               "  RUN is a run id or its folder; PATH defaults to DIR/gatelab.db (DIR: results)\n");
}

/* The row of (kind, key), added when new; NULL when out of memory. */
static cmp_row *cmp_row_get(cmp_set *s, const char *kind, const char *key) {
    for (int i = 0; i < s->nrows; i++)
        if (!strcmp(s->rows[i].kind, kind) && !strcmp(s->rows[i].key, key)) return &s->rows[i];
    if (s->nrows == s->cap) {
        int cap = s->cap ? 2 * s->cap : 32;
        cmp_row *g = realloc(s->rows, (size_t)cap * sizeof *g);
        if (!g) return NULL;
        s->rows = g;
        s->cap = cap;
    }
    cmp_row *r = &s->rows[s->nrows];
    memset(r, 0, sizeof *r);
    if (!(r->val = calloc((size_t)s->nrun, sizeof *r->val))) return NULL;
    s->nrows++;
    snprintf(r->kind, sizeof r->kind, "%s", kind);
    snprintf(r->key, sizeof r->key, "%s", key);
    return r;
}

/* Set run j's text of (kind, key).  0, or -1 when out of memory. */
static int cmp_put(cmp_set *s, const char *kind, const char *key, int j, const char *text) {
    cmp_row *r = cmp_row_get(s, kind, key);
    if (!r) return -1;
    free(r->val[j]);
    return (r->val[j] = strdup(text)) ? 0 : -1;
}

static int cmp_put_num(cmp_set *s, const char *key, int j, double v) {
    char t[64];
    if (!isfinite(v)) return 0;
    snprintf(t, sizeof t, "%.9g", v);
    return cmp_put(s, "metric", key, j, t);
}

/* Headline rows of one split for run j: final.* and matched.* names. */
static int cmp_headline(gl_db *db, cmp_set *s, int j, const char *split, char *err, size_t errlen) {
    gl_metric_latest *m = NULL;
    int n = 0;
    if (db_metrics_latest(db, s->runs[j].run_id, split, &m, &n, err, errlen)) return -1;
    for (int i = 0; i < n; i++) {
        char q[64], key[192];
        if (!metric_headline_parse(m[i].name, METRIC_FINAL, q, sizeof q) &&
            !metric_headline_parse(m[i].name, METRIC_MATCHED, q, sizeof q))
            continue;
        if (db_metrics_latest_get(m, n, m[i].name, NULL) != &m[i]) continue; /* the most windows only */
        snprintf(key, sizeof key, "%s/%s", split, m[i].name);
        if (cmp_put_num(s, key, j, m[i].value)) {
            free(m);
            snprintf(err, errlen, "out of memory");
            return -1;
        }
    }
    free(m);
    return 0;
}

/* Fill s: every param of every run (the equal ones dropped later), then the metrics. */
static int cmp_collect(gl_db *db, cmp_set *s, char *err, size_t errlen) {
    for (int j = 0; j < s->nrun; j++) {
        gl_param *p = NULL;
        int np = 0;
        if (db_params_all(db, s->runs[j].run_id, &p, &np, err, errlen)) return -1;
        for (int i = 0; i < np; i++)
            if (cmp_put(s, "param", p[i].key, j, p[i].value)) {
                free(p);
                snprintf(err, errlen, "out of memory");
                return -1;
            }
        free(p);
    }
    for (int j = 0; j < s->nrun; j++) {
        double v;
        if (cmp_put(s, "metric", "variant", j, s->runs[j].variant) ||
            cmp_put(s, "metric", "status", j, s->runs[j].status)) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        int k = db_metric_last(db, s->runs[j].run_id, "train", "loss", &v, NULL, err, errlen);
        if (k < 0 || (k && cmp_put_num(s, "train/loss", j, v))) return -1;
        if (cmp_headline(db, s, j, "val", err, errlen) || cmp_headline(db, s, j, "test", err, errlen)) return -1;
    }
    return 0;
}

/* 1 when a param row has the same text for every run. */
static int cmp_same(const cmp_set *s, const cmp_row *r) {
    for (int j = 1; j < s->nrun; j++) {
        const char *a = r->val[0], *b = r->val[j];
        if ((!a) != (!b) || (a && strcmp(a, b))) return 0;
    }
    return 1;
}

static void cmp_csv_text(const char *t) {
    if (!t) return;
    if (!strpbrk(t, ",\"\n\r")) { fputs(t, stdout); return; }
    putchar('"');
    for (; *t; t++) {
        if (*t == '"') putchar('"');
        putchar(*t);
    }
    putchar('"');
}

static void cmp_json_text(const char *t) {
    if (!t) { fputs("null", stdout); return; }
    putchar('"');
    for (; *t; t++) {
        unsigned char c = (unsigned char)*t;
        if (c == '"' || c == '\\') printf("\\%c", c);
        else if (c < 0x20) printf("\\u%04x", c);
        else putchar(c);
    }
    putchar('"');
}

/* A metric value as JSON: a number as written, or a string (variant, status). */
static void cmp_json_value(const char *t) {
    char *end = NULL;
    if (t && *t) {
        strtod(t, &end);
        if (end && !*end) { fputs(t, stdout); return; }
    }
    cmp_json_text(t);
}

static void cmp_print_table(const cmp_set *s, int nsame) {
    int w = 24;
    for (int i = 0; i < s->nrows; i++)
        if ((int)strlen(s->rows[i].key) > w) w = (int)strlen(s->rows[i].key);
    printf("%-*s", w, "");
    for (int j = 0; j < s->nrun; j++) printf("  %-24s", s->runs[j].run_id);
    printf("\n");
    const char *section = "";
    for (int i = 0; i < s->nrows; i++) {
        const cmp_row *r = &s->rows[i];
        if (!strcmp(r->kind, "param") && cmp_same(s, r)) continue;
        if (strcmp(section, r->kind)) {
            section = r->kind;
            printf(!strcmp(section, "param") ? "parameters that differ:\n" : "headline metrics:\n");
        }
        printf("%-*s", w, r->key);
        for (int j = 0; j < s->nrun; j++) {
            char t[64];
            char *end = NULL;
            const char *v = r->val[j] ? r->val[j] : "-";
            double x = strtod(v, &end);
            if (!strcmp(r->kind, "metric") && end && !*end && end != v) snprintf(t, sizeof t, "%.6g", x), v = t;
            printf("  %-24s", v);
        }
        printf("\n");
    }
    printf("(%d parameter%s equal in every run not shown)\n", nsame, nsame == 1 ? "" : "s");
}

static void cmp_print(const cmp_set *s, cmp_format fmt) {
    int nsame = 0;
    for (int i = 0; i < s->nrows; i++) nsame += !strcmp(s->rows[i].kind, "param") && cmp_same(s, &s->rows[i]);
    if (fmt == CMP_TABLE) { cmp_print_table(s, nsame); return; }
    if (fmt == CMP_CSV) {
        printf("kind,key");
        for (int j = 0; j < s->nrun; j++) putchar(','), cmp_csv_text(s->runs[j].run_id);
        putchar('\n');
        for (int i = 0; i < s->nrows; i++) {
            const cmp_row *r = &s->rows[i];
            if (!strcmp(r->kind, "param") && cmp_same(s, r)) continue;
            printf("%s,", r->kind);
            cmp_csv_text(r->key);
            for (int j = 0; j < s->nrun; j++) putchar(','), cmp_csv_text(r->val[j]);
            putchar('\n');
        }
        return;
    }
    printf("{\"runs\": [");
    for (int j = 0; j < s->nrun; j++) printf("%s", j ? ", " : ""), cmp_json_text(s->runs[j].run_id);
    printf("]");
    for (int pass = 0; pass < 2; pass++) {
        const char *kind = pass ? "metric" : "param";
        int first = 1;
        printf(", \"%s\": {", pass ? "metrics" : "params");
        for (int i = 0; i < s->nrows; i++) {
            const cmp_row *r = &s->rows[i];
            if (strcmp(r->kind, kind) || (!pass && cmp_same(s, r))) continue;
            printf("%s\n  ", first ? "" : ",");
            first = 0;
            cmp_json_text(r->key);
            printf(": [");
            for (int j = 0; j < s->nrun; j++) {
                printf("%s", j ? ", " : "");
                if (pass) cmp_json_value(r->val[j]);
                else cmp_json_text(r->val[j]);
            }
            printf("]");
        }
        printf("%s}", first ? "" : "\n");
    }
    printf("}\n");
}

static const struct option cmp_opts[] = {
    {"format", required_argument, NULL, 'f'}, {"db", required_argument, NULL, 'd'},
    {"results", required_argument, NULL, 'r'}, {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

int cmd_compare(int argc, char **argv) {
    const char *db_arg = NULL, *results = NULL;
    cmp_format fmt = CMP_TABLE;
    int c, rc = 1;
    char err[1024], path[4096];
    gl_db *db = NULL;
    cmp_set s;
    memset(&s, 0, sizeof s);
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", cmp_opts, NULL)) != -1) {
        if (c == 'h') { cmp_usage(stdout); return 0; }
        else if (c == 'd') db_arg = optarg;
        else if (c == 'r') results = optarg;
        else if (c == 'f' && !strcmp(optarg, "table")) fmt = CMP_TABLE;
        else if (c == 'f' && !strcmp(optarg, "csv")) fmt = CMP_CSV;
        else if (c == 'f' && !strcmp(optarg, "json")) fmt = CMP_JSON;
        else if (c == 'f') { fprintf(stderr, "gatelab compare: --format '%s': table, csv or json\n", optarg); return 2; }
        else { cmp_usage(stderr); return 2; }
    }
    if (argc - optind < 2) {
        fprintf(stderr, "gatelab compare: give at least two runs\n");
        cmp_usage(stderr);
        return 2;
    }
    s.nrun = argc - optind;
    reg_db_path(path, sizeof path, db_arg, results);
    if (!(s.runs = calloc((size_t)s.nrun, sizeof *s.runs))) { fprintf(stderr, "gatelab compare: out of memory\n"); return 1; }
    if (db_open_readonly(&db, path, err, sizeof err)) goto fail;
    for (int j = 0; j < s.nrun; j++) {
        char id[256];
        gl_run_row *one = NULL;
        int n = 0;
        reg_run_id(argv[optind + j], id, sizeof id);
        gl_run_filter f = {.run_id = id, .deleted = 1};
        if (db_runs_find(db, &f, &one, &n, err, sizeof err)) goto fail;
        int k = n ? 0 : 1;
        if (k == n) snprintf(err, sizeof err, "%s: run %s is not in the registry (see gatelab runs)", path, id);
        else s.runs[j] = one[k];
        free(one);
        if (k == n) goto fail;
    }
    if (cmp_collect(db, &s, err, sizeof err)) goto fail;
    cmp_print(&s, fmt);
    rc = 0;
    goto cleanup;
fail:
    fprintf(stderr, "gatelab compare: %s\n", err);
cleanup:
    for (int i = 0; i < s.nrows; i++) {
        for (int j = 0; j < s.nrun; j++) free(s.rows[i].val[j]);
        free(s.rows[i].val);
    }
    free(s.rows);
    free(s.runs);
    db_close(db);
    return rc;
}
