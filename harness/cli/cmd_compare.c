/*
 * cmd_compare.c — `gatelab compare RUN RUN ...`: runs side by side.
 *
 * First the parameters (the flattened config, `section.key`) whose values
 * differ between the runs — a key a run lacks counts as different and shows
 * as "-" — then each run's variant and status and its headline metrics (the
 * whole-split evaluation at the end of training: val/final.*, test/final.*,
 * and val/matched.* or val/matched_paper.* when an early-exit run was matched to a TSA run), with the
 * last train/loss.  Where a metric was measured more than once, the
 * measurement on the most windows is shown (as `runs` and `tables` do).
 * Formats: a table (default), CSV (one row per parameter or metric: kind,
 * key, then one column per run; RFC 4180 quoting) or JSON (an object with
 * runs, params and metrics; null for a missing value).
 * It reads the registry only (opened read-only) and computes nothing that is
 * not stored there; statistics over seeds are `gatelab tables`' job.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cli.h"
#include "jsonl.h"
#include "resolve.h"
#include "store/metric.h"
#include "store/registry.h"
#include "store/rundir.h"

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

static const args_opt cmp_opts[] = {
    {"format", ARGS_KEY(0), "F", "table (default), csv or json"},
    {"db", ARGS_KEY(1), "PATH", "registry to read (default <results>/gatelab.db)"},
    {"results", ARGS_KEY(2), "DIR", "results folder whose gatelab.db is read (default $GATELAB_RESULTS or results)"},
    {0}};
const args_spec cmp_spec = {
    "compare", "RUN RUN ... [options]",
    "The parameters that differ between the runs, then their headline metrics side by side\n"
    "(val/final.*, test/final.*, val/matched.*, val/matched_paper.*, and the last train/loss).  RUN is a run id, a unique prefix\n"
    "of one, or its folder; all of them in one registry.",
    cmp_opts};

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

/* Headline rows of one split for run j: final.*, hard.* (a routed model with the skipping done),
 * hard_paper.* (TSA, the paper's sparse form), matched.* and matched_paper.* names. */
static int cmp_headline(gl_db *db, cmp_set *s, int j, const char *split, char *err, size_t errlen) {
    gl_metric_latest *m = NULL;
    int n = 0;
    if (db_metrics_latest(db, s->runs[j].run_id, split, &m, &n, err, errlen)) return -1;
    for (int i = 0; i < n; i++) {
        char q[64], key[192];
        if (!metric_headline_parse(&m[i].key, METRIC_FINAL, q, sizeof q) &&
            !metric_headline_parse(&m[i].key, METRIC_HARD, q, sizeof q) &&
            !metric_headline_parse(&m[i].key, METRIC_HARD_PAPER, q, sizeof q) &&
            !metric_headline_parse(&m[i].key, METRIC_MATCHED, q, sizeof q) &&
            !metric_headline_parse(&m[i].key, METRIC_MATCHED_PAPER, q, sizeof q))
            continue;
        if (db_metrics_latest_get(m, n, &m[i].key, NULL) != &m[i]) continue; /* the most windows only */
        snprintf(key, sizeof key, "%s/%s", split, m[i].key.name); /* a headline: no parameters */
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
        int k = db_metric_last(db, s->runs[j].run_id, "train", "loss", NULL, &v, NULL, err, errlen);
        if (k < 0 || (k && cmp_put_num(s, "train/loss", j, v))) return -1;
        /* the headline by the one rule (db_run_headline): a routed model's with the skipping done, its
         * soft loss beside it and named, so two runs are compared like with like */
        gl_headline hl;
        if (db_run_headline(db, s->runs[j].run_id, "val", &hl, err, errlen)) return -1;
        static const char *const kind[] = {"-", "final.loss", "hard (skipping done)",
                                           "not recorded: soft only (eval RUN --record)"};
        if (cmp_put(s, "metric", "val headline is", j, kind[hl.kind]) ||
            (hl.kind != HEADLINE_HARD_MISSING && cmp_put_num(s, "val headline loss", j, hl.loss.value)) ||
            cmp_put_num(s, "val soft loss (every block run)", j, hl.soft_loss)) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
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

/* A metric value as JSON: a number when the text is one (NaN: null), else a string (variant, status). */
static json_t *cmp_json_value(const char *t) {
    char *end = NULL;
    if (t && *t) {
        double v = strtod(t, &end);
        if (end && !*end) return jsonl_num(v);
    }
    return jsonl_str(t);
}

/* The whole comparison as one JSON object: runs, params (that differ), metrics. */
static int cmp_print_json(const cmp_set *s) {
    json_t *o = json_object(), *runs = json_array();
    for (int j = 0; j < s->nrun; j++) json_array_append_new(runs, jsonl_str(s->runs[j].run_id));
    jsonl_set(o, "runs", runs);
    for (int pass = 0; pass < 2; pass++) {
        json_t *kv = json_object();
        for (int i = 0; i < s->nrows; i++) {
            const cmp_row *r = &s->rows[i];
            if (strcmp(r->kind, pass ? "metric" : "param") || (!pass && cmp_same(s, r))) continue;
            json_t *vals = json_array();
            for (int j = 0; j < s->nrun; j++)
                json_array_append_new(vals, pass ? cmp_json_value(r->val[j]) : jsonl_str(r->val[j]));
            jsonl_set(kv, r->key, vals);
        }
        jsonl_set(o, pass ? "metrics" : "params", kv);
    }
    return jsonl_print(stdout, o);
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

/* Print s in fmt.  0, or -1 (out of memory writing JSON). */
static int cmp_print(const cmp_set *s, cmp_format fmt) {
    int nsame = 0;
    for (int i = 0; i < s->nrows; i++) nsame += !strcmp(s->rows[i].kind, "param") && cmp_same(s, &s->rows[i]);
    if (fmt == CMP_TABLE) { cmp_print_table(s, nsame); return 0; }
    if (fmt == CMP_CSV) {
        printf("kind,key");
        for (int j = 0; j < s->nrun; j++) putchar(','), jsonl_csv_field(stdout, s->runs[j].run_id);
        putchar('\n');
        for (int i = 0; i < s->nrows; i++) {
            const cmp_row *r = &s->rows[i];
            if (!strcmp(r->kind, "param") && cmp_same(s, r)) continue;
            printf("%s,", r->kind);
            jsonl_csv_field(stdout, r->key);
            for (int j = 0; j < s->nrun; j++) putchar(','), jsonl_csv_field(stdout, r->val[j]);
            putchar('\n');
        }
        return 0;
    }
    return cmp_print_json(s);
}

int cmd_compare(int argc, char **argv) {
    const char *db_arg = NULL, *results = NULL;
    int fmt = CMP_TABLE, rc = 1, bad = 0, npos = 0;
    char err[1024], path[GL_PATH_MAX + 16];
    gl_db *db = NULL;
    cmp_set s;
    memset(&s, 0, sizeof s);
    const char **pos = calloc((size_t)argc + 1, sizeof *pos);
    if (!pos) { fprintf(stderr, "gatelab compare: out of memory\n"); return 1; }
    args_parser p;
    args_begin(&p, &cmp_spec, argc, argv);
    for (int k; !bad && (k = args_next(&p)) != ARGS_END;) {
        if (k < 0) { rc = args_exit_code(k); goto cleanup; }
        if (k == ARGS_POS) pos[npos++] = p.val;
        else if (k == ARGS_KEY(0)) bad = args_get_choice(&p, "table,csv,json", &fmt);
        else if (k == ARGS_KEY(1)) db_arg = p.val;
        else if (k == ARGS_KEY(2)) results = p.val;
    }
    rc = 2;
    if (bad) goto cleanup;
    if (npos < 2) {
        args_usage_error(&cmp_spec, "give at least two runs");
        goto cleanup;
    }
    rc = 1;
    s.nrun = npos;
    if (!(s.runs = calloc((size_t)s.nrun, sizeof *s.runs))) { fprintf(stderr, "gatelab compare: out of memory\n"); goto cleanup; }
    for (int j = 0; j < s.nrun; j++) {
        resolve_run r;
        gl_run_row *one = NULL;
        int n = 0;
        if (resolve_run_arg(pos[j], db_arg, results, RESOLVE_DB, &r, err, sizeof err)) goto fail;
        if (j == 0) snprintf(path, sizeof path, "%s", r.db);
        else if (strcmp(path, r.db)) {
            snprintf(err, sizeof err, "run %s is in %s, run %s in %s: compare reads one registry (merge them with "
                                      "`gatelab collect`)", s.runs[0].run_id, path, r.id, r.db);
            goto fail;
        }
        if (!db && db_open_readonly(&db, path, err, sizeof err)) goto fail;
        gl_run_filter f = {.run_id = r.id, .deleted = 1};
        if (db_runs_find(db, &f, &one, &n, err, sizeof err)) goto fail;
        if (n != 1) { /* the resolver found the row a moment ago: only a concurrent delete gets here */
            snprintf(err, sizeof err, "%s: run %s is not in the registry (see gatelab runs)", path, r.id);
            free(one);
            goto fail;
        }
        s.runs[j] = one[0];
        free(one);
    }
    if (cmp_collect(db, &s, err, sizeof err)) goto fail;
    if (cmp_print(&s, (cmp_format)fmt)) {
        snprintf(err, sizeof err, "out of memory writing JSON");
        goto fail;
    }
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
    free(pos);
    db_close(db);
    return rc;
}
