/*
 * cmd_runs.c — `gatelab runs`: what the registry holds, one row per run.
 *
 * Columns: run id, experiment, variant (the label tables use), one column
 * per chosen parameter (the keys the sweep varied, read from the run's name
 * "key=value ..."), status, step reached (largest step with any
 * metric), last train loss, the validation loss (nats per token) with what
 * it was measured on — the run's headline (the whole validation split:
 * val/final.loss, or for a model that routes depth val/hard.loss, the
 * skipping done, with its soft loss in the column "soft"; db_run_headline)
 * or, for a run without one, the last periodic evaluation,
 * marked "*" and labelled "periodic" — the active fraction α and TLOps saved
 * (the headline's, else the last logged), throughput (tokens_per_s,
 * tokens/s), start time and duration.
 * The table prints a run's tags under it.  --tag key=value keeps the runs
 * with that tag; deleted runs (gatelab delete) are left out unless --deleted.
 * Formats: a readable table (default), CSV (RFC 4180 quoting; empty fields
 * for missing values) and JSON (an array of objects; null for missing values).
 * It reads only, with one exception: --fix-stale marks KILLED the runs that
 * are RUNNING in the registry but whose process is gone (kill -9, a full
 * registry disk at the end) or silent past --stale-after; without it those
 * show as STALE.  Without --fix-stale the registry is opened read-only, so an
 * older registry is never upgraded under the gatelab that writes it.  It does
 * not compute anything the registry does not hold.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "args.h"
#include "cli.h"
#include "jsonl.h"
#include "resolve.h"
#include "views.h"
#include "store/registry.h"
#include "store/rundir.h"

typedef enum { RUNS_TABLE, RUNS_CSV, RUNS_JSON } runs_format;

#define RUNS_MAX_TAGS 16

static const args_opt runs_opts[] = {
    {"experiment", ARGS_KEY(0), "E", "only the runs of experiment E"},
    {"status", ARGS_KEY(1), "S", "only runs with status S: SCHEDULED, RUNNING, FINISHED, FAILED or KILLED (any case)"},
    {"format", ARGS_KEY(2), "F", "table (default), csv or json"},
    {"db", ARGS_KEY(3), "PATH", "registry to read (default <results>/gatelab.db)"},
    {"results", ARGS_KEY(4), "DIR", "results folder whose gatelab.db is read (default $GATELAB_RESULTS or results)"},
    {"stale-after", ARGS_KEY(5), "SECONDS", "a RUNNING run silent this long shows as STALE (default 1800)"},
    {"fix-stale", ARGS_KEY(6), NULL, "mark STALE runs KILLED (then --resume RUN or a sweep continues them)"},
    {"tag", ARGS_KEY(7), "KEY=VALUE", "only the runs carrying that tag (repeat: all of them)"},
    {"deleted", ARGS_KEY(8), NULL, "list deleted runs too (gatelab delete)"},
    {0}};
const args_spec runs_spec = {
    "runs", "[options]",
    "What the registry holds, one row per run.  A RUNNING run whose process is gone, or without a heartbeat\n"
    "for --stale-after seconds, shows as STALE.",
    runs_opts};

/* Find RUNNING rows that nobody runs (db_run_stale); show them as STALE, or
 * with fix mark them KILLED in the registry.  why: n strings of 256 bytes. */
static int runs_check_stale(gl_db *db, gl_run_row *rows, int n, double stale_s, int fix, char (*why)[256],
                            char *err, size_t errlen) {
    int fixed = 0;
    for (int i = 0; i < n; i++) {
        why[i][0] = '\0';
        if (strcmp(rows[i].status, "RUNNING")) continue;
        int st = db_run_stale(db, rows[i].run_id, stale_s, why[i], sizeof why[i], err, errlen);
        if (st < 0) return -1;
        if (!st) continue;
        if (!fix) {
            snprintf(rows[i].status, sizeof rows[i].status, "STALE");
            continue;
        }
        char msg[400];
        snprintf(msg, sizeof msg, "marked KILLED by gatelab runs --fix-stale: %s", why[i]);
        if (db_run_finish(db, rows[i].run_id, "KILLED", 3, msg, err, errlen)) return -1;
        snprintf(rows[i].status, sizeof rows[i].status, "KILLED");
        snprintf(rows[i].error, sizeof rows[i].error, "%s", msg);
        why[i][0] = '\0';
        fprintf(stderr, "gatelab runs: %s marked KILLED (%s); continue it with gatelab train MANIFEST --resume %s\n",
                rows[i].run_id, msg + strlen("marked KILLED by gatelab runs --fix-stale: "), rows[i].run_id);
        fixed++;
    }
    return fixed;
}

/* Local time of a unix time as "YYYY-MM-DD HH:MM:SS" ("" when unknown). */
static void runs_time(double t, char *out, size_t len) {
    out[0] = '\0';
    if (!isfinite(t) || t <= 0) return;
    time_t s = (time_t)t;
    struct tm tm;
    if (localtime_r(&s, &tm)) strftime(out, len, "%Y-%m-%d %H:%M:%S", &tm);
}

/* ISO 8601 UTC of a unix time ("" when unknown). */
static void runs_iso(double t, char *out, size_t len) {
    out[0] = '\0';
    if (!isfinite(t) || t <= 0) return;
    time_t s = (time_t)t;
    struct tm tm;
    if (gmtime_r(&s, &tm)) strftime(out, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* Seconds the run has taken: end - start, or heartbeat - start while it runs. */
static double runs_duration(const gl_run_row *r) {
    if (!isfinite(r->start_time)) return NAN;
    double end = isfinite(r->end_time) ? r->end_time : r->heartbeat;
    return isfinite(end) ? end - r->start_time : NAN;
}

static void runs_num(double v, const char *fmt, char *out, size_t len) {
    if (isfinite(v)) snprintf(out, len, fmt, v);
    else snprintf(out, len, "-");
}

/* What the val column rests on: "val[0,1741) 111424 tok @600", or
 * "periodic val[0,4) 128 tok @40" when it is not the headline. */
static void runs_val_on(const gl_run_row *r, char *out, size_t len) {
    char p[64];
    if (r->val_step < 0) snprintf(out, len, "-");
    else snprintf(out, len, "%s%s @%ld", r->val_headline ? "" : "periodic ", db_prov_str(&r->val_prov, p, sizeof p),
                  r->val_step);
}

/* ---- the chosen parameters: a run's name is the sweep's "key=value ..." for it ---- */

#define RUNS_MAX_AXES 16
typedef struct {
    char key[RUNS_MAX_AXES][96];
    int n;
} runs_axes;

/* The value of key among the "key=value" words of name into out ("" when absent). */
static void runs_axis_value(const char *name, const char *key, char *out, size_t n) {
    size_t kl = strlen(key);
    out[0] = '\0';
    for (const char *p = name; *p;) {
        size_t w = strcspn(p, " ");
        if (w > kl && !strncmp(p, key, kl) && p[kl] == '=') {
            snprintf(out, n, "%.*s", (int)(w - kl - 1), p + kl + 1);
            return;
        }
        p += w;
        p += strspn(p, " ");
    }
}

/* The keys of the "key=value" words in the runs' names, first seen first. */
static void runs_axes_find(const gl_run_row *rows, int n, runs_axes *ax) {
    ax->n = 0;
    for (int i = 0; i < n; i++)
        for (const char *p = rows[i].name; *p;) {
            size_t w = strcspn(p, " "), k = strcspn(p, "= ");
            int have = k >= w || k == 0 || k >= sizeof ax->key[0];
            for (int j = 0; j < ax->n && !have; j++) have = strlen(ax->key[j]) == k && !strncmp(ax->key[j], p, k);
            if (!have && ax->n < RUNS_MAX_AXES) snprintf(ax->key[ax->n++], sizeof ax->key[0], "%.*s", (int)k, p);
            p += w;
            p += strspn(p, " ");
        }
}

/* The short header of an axis: its key after the section ("train.seed" -> "seed"). */
static const char *runs_axis_short(const char *key) {
    const char *dot = strrchr(key, '.');
    return dot ? dot + 1 : key;
}

/* The tags (one "key=value" per line) on one line: "a=1; b=two words". */
static const char *runs_tags_line(const char *tags, char *out, size_t n) {
    size_t k = 0;
    for (const char *p = tags; *p && k + 3 < n; p++) {
        if (*p == '\n') out[k++] = ';', out[k++] = ' ';
        else out[k++] = *p;
    }
    out[k] = '\0';
    return out;
}

static void runs_print_table(const gl_run_row *rows, int n, char (*why)[256]) {
    int periodic = 0, routed = 0, missing = 0;
    runs_axes ax;
    runs_axes_find(rows, n, &ax);
    printf("%-36s %-16s %-20s", "run_id", "experiment", "variant");
    int w[RUNS_MAX_AXES];
    for (int j = 0; j < ax.n; j++) {
        w[j] = (int)strlen(runs_axis_short(ax.key[j]));
        for (int i = 0; i < n; i++) {
            char v[64];
            runs_axis_value(rows[i].name, ax.key[j], v, sizeof v);
            if ((int)strlen(v) > w[j]) w[j] = (int)strlen(v);
        }
        printf(" %-*s", w[j], runs_axis_short(ax.key[j]));
    }
    printf(" %-9s %7s %8s %9s %8s %6s %6s %9s %-19s %8s  %s\n", "status", "step", "train", "val", "soft", "alpha",
           "tlops", "tok/s", "started", "took_s", "val measured on");
    for (int i = 0; i < n; i++) {
        const gl_run_row *r = &rows[i];
        printf("%-36s %-16s %-20s", r->run_id, r->experiment, r->variant);
        for (int j = 0; j < ax.n; j++) {
            char v[64];
            runs_axis_value(r->name, ax.key[j], v, sizeof v);
            printf(" %-*s", w[j], v[0] ? v : "-");
        }
        char step[24], tr[24], va[24], al[24], tl[24], tps[24], st[32], took[24];
        if (r->step >= 0) snprintf(step, sizeof step, "%ld", r->step);
        else snprintf(step, sizeof step, "-");
        runs_num(r->train_loss, "%.4f", tr, sizeof tr);
        runs_num(r->val_loss, r->val_headline ? "%.4f " : "%.4f*", va, sizeof va);
        if (r->val_kind == HEADLINE_HARD_MISSING) snprintf(va, sizeof va, "n/r+");
        periodic |= !r->val_headline && isfinite(r->val_loss);
        routed |= isfinite(r->val_soft);
        missing |= r->val_kind == HEADLINE_HARD_MISSING;
        char so[24];
        runs_num(r->val_soft, "%.4f", so, sizeof so);
        char on[128];
        runs_val_on(r, on, sizeof on);
        runs_num(r->active_frac, "%.3f", al, sizeof al);
        runs_num(isfinite(r->tlops_saved) ? 100.0 * r->tlops_saved : NAN, "%.1f%%", tl, sizeof tl);
        runs_num(r->tokens_per_s, "%.0f", tps, sizeof tps);
        runs_time(r->start_time, st, sizeof st);
        runs_num(runs_duration(r), "%.1f", took, sizeof took);
        printf(" %-9s %7s %8s %9s %8s %6s %6s %9s %-19s %8s  %s\n", r->status, step, tr, va, so, al, tl, tps,
               st[0] ? st : "-", took, on);
        if (r->tags[0]) {
            char t[sizeof r->tags * 2];
            printf("    tags: %s\n", runs_tags_line(r->tags, t, sizeof t));
        }
        if (isfinite(r->deleted_time)) printf("    deleted (gatelab restore %s shows it again)\n", r->run_id);
        if (r->error[0]) printf("    error: %s\n", r->error);
        if (why && why[i][0])
            printf("    stale: RUNNING in the registry but %s; `gatelab runs --fix-stale` marks it KILLED\n", why[i]);
    }
    printf("%d run%s\n", n, n == 1 ? "" : "s");
    if (periodic)
        printf("* a periodic evaluation on a few windows, not the whole validation split: record the headline with "
               "`gatelab eval RUN --record`\n");
    if (routed)
        printf("TSA and early exit: val is the loss with the skipping done (tokens with p > 0.5, or past their exit, "
               "skip the block); soft is the loss with every block run, each update scaled by 1 - p (what training "
               "optimised), alpha and tlops those of val\n");
    if (missing)
        printf("+ n/r: the loss with the skipping done is not recorded for this routed run (only its soft loss is); "
               "`gatelab eval RUN --record` records it\n");
}

static void runs_csv_num(double v) {
    if (isfinite(v)) printf(",%.9g", v);
    else printf(",");
}

/* Unix seconds with millisecond resolution (%.9g would round them to 10 s). */
static void runs_csv_time(double t) {
    if (isfinite(t)) printf(",%.3f", t);
    else printf(",");
}

static void runs_print_csv(const gl_run_row *rows, int n) {
    printf("run_id,experiment,name,status,step,train_loss,val_loss,active_frac,tlops_saved,tokens_per_s,"
           "start_time,end_time,start_iso,end_iso,duration_s,exit_code,error,val_headline,val_se,val_step,val_split,"
           "val_first,val_windows,val_tokens,variant,tags,deleted_time");
    runs_axes ax;
    runs_axes_find(rows, n, &ax);
    for (int j = 0; j < ax.n; j++) printf(","), jsonl_csv_field(stdout, ax.key[j]);
    putchar('\n');
    for (int i = 0; i < n; i++) {
        const gl_run_row *r = &rows[i];
        char a[32], b[32];
        jsonl_csv_field(stdout, r->run_id);
        putchar(',');
        jsonl_csv_field(stdout, r->experiment);
        putchar(',');
        jsonl_csv_field(stdout, r->name);
        putchar(',');
        jsonl_csv_field(stdout, r->status);
        if (r->step >= 0) printf(",%ld", r->step);
        else printf(",");
        runs_csv_num(r->train_loss);
        runs_csv_num(r->val_loss);
        runs_csv_num(r->active_frac);
        runs_csv_num(r->tlops_saved);
        runs_csv_num(r->tokens_per_s);
        runs_csv_time(r->start_time);
        runs_csv_time(r->end_time);
        runs_iso(r->start_time, a, sizeof a);
        runs_iso(r->end_time, b, sizeof b);
        printf(",%s,%s", a, b);
        runs_csv_num(runs_duration(r));
        if (r->exit_code >= 0) printf(",%d,", r->exit_code);
        else printf(",,");
        jsonl_csv_field(stdout, r->error);
        printf(",%d", r->val_headline);
        runs_csv_num(r->val_se);
        if (r->val_step >= 0) printf(",%ld,%s,%ld,%ld", r->val_step, r->val_prov.split, r->val_prov.first,
                                     r->val_prov.count);
        else printf(",,,,");
        runs_csv_num(r->val_prov.count > 0 ? r->val_prov.tokens : NAN);
        putchar(',');
        jsonl_csv_field(stdout, r->variant);
        putchar(',');
        jsonl_csv_field(stdout, r->tags); /* one key=value per line: a value may hold "; " but no newline */
        runs_csv_time(r->deleted_time);
        for (int j = 0; j < ax.n; j++) {
            char v[64];
            runs_axis_value(r->name, ax.key[j], v, sizeof v);
            putchar(',');
            jsonl_csv_field(stdout, v);
        }
        putchar('\n');
    }
}

/* A unix time with millisecond resolution, null when unknown. */
static json_t *runs_json_time(double t) { return jsonl_num(isfinite(t) ? round(t * 1000) / 1000 : NAN); }

/* variant, the chosen params and the tags as objects ("key=value" words of
 * the name, one tag per line), deleted_time: appended to o. */
static void runs_json_extra(json_t *o, const gl_run_row *r) {
    jsonl_set(o, "variant", jsonl_str(r->variant));
    for (int pass = 0; pass < 2; pass++) {
        const char *text = pass ? r->tags : r->name, *sep = pass ? "\n" : " ";
        json_t *kv = json_object();
        for (const char *p = text; *p;) {
            size_t w = strcspn(p, sep), k = strcspn(p, pass ? "=\n" : "= ");
            if (k < w && k > 0) {
                char key[128], val[DB_TAG_VALUE_MAX + 1];
                snprintf(key, sizeof key, "%.*s", (int)k, p);
                snprintf(val, sizeof val, "%.*s", (int)(w - k - 1), p + k + 1);
                jsonl_set(kv, key, jsonl_str(val));
            }
            p += w;
            p += strspn(p, sep);
        }
        jsonl_set(o, pass ? "tags" : "params", kv);
    }
    jsonl_set(o, "deleted_time", runs_json_time(r->deleted_time));
}

/* One run as a JSON object (the fields of the CSV, val_measured_on as an object); views.h. */
json_t *runs_json_row(const gl_run_row *r) {
    char a[32], b[32];
    json_t *o = json_object(), *on = json_null();
    jsonl_set(o, "run_id", jsonl_str(r->run_id));
    jsonl_set(o, "experiment", jsonl_str(r->experiment));
    jsonl_set(o, "name", jsonl_str(r->name));
    jsonl_set(o, "status", jsonl_str(r->status));
    jsonl_set(o, "step", r->step >= 0 ? jsonl_int(r->step) : json_null());
    jsonl_set(o, "train_loss", jsonl_num(r->train_loss));
    jsonl_set(o, "val_loss", jsonl_num(r->val_loss));
    jsonl_set(o, "val_se", jsonl_num(r->val_se));
    jsonl_set(o, "val_headline", json_boolean(r->val_headline));
    /* which headline (db_run_headline): "final", "hard" (a routed model, the skipping done), "hard_missing" */
    static const char *const kinds[] = {NULL, "final", "hard", "hard_missing"};
    jsonl_set(o, "val_kind", r->val_kind ? jsonl_str(kinds[r->val_kind]) : json_null());
    jsonl_set(o, "val_soft_loss", jsonl_num(r->val_soft));
    if (r->val_step >= 0 && r->val_prov.count > 0) {
        on = json_object();
        jsonl_set(on, "step", jsonl_int(r->val_step));
        jsonl_set(on, "split", jsonl_str(r->val_prov.split));
        jsonl_set(on, "first", jsonl_int(r->val_prov.first));
        jsonl_set(on, "windows", jsonl_int(r->val_prov.count));
    }
    jsonl_set(o, "val_measured_on", on);
    jsonl_set(o, "val_tokens", r->val_prov.count > 0 ? jsonl_count(r->val_prov.tokens) : json_null());
    jsonl_set(o, "active_frac", jsonl_num(r->active_frac));
    jsonl_set(o, "tlops_saved", jsonl_num(r->tlops_saved));
    jsonl_set(o, "tokens_per_s", jsonl_num(r->tokens_per_s));
    jsonl_set(o, "start_time", runs_json_time(r->start_time));
    jsonl_set(o, "end_time", runs_json_time(r->end_time));
    runs_iso(r->start_time, a, sizeof a);
    runs_iso(r->end_time, b, sizeof b);
    jsonl_set(o, "start_iso", jsonl_str(a));
    jsonl_set(o, "end_iso", jsonl_str(b));
    jsonl_set(o, "duration_s", jsonl_num(runs_duration(r)));
    jsonl_set(o, "exit_code", r->exit_code >= 0 ? jsonl_int(r->exit_code) : json_null());
    jsonl_set(o, "error", jsonl_str(r->error[0] ? r->error : NULL));
    runs_json_extra(o, r);
    return o;
}

/* A JSON array with one run per line, so `grep` and `wc -l` still work on it. */
static int runs_print_json(const gl_run_row *rows, int n) {
    printf("[");
    for (int i = 0; i < n; i++) {
        json_t *o = runs_json_row(&rows[i]);
        char *dump = jsonl_dumps(o);
        json_decref(o);
        if (!dump) return -1;
        printf("%s\n  %s", i ? "," : "", dump);
        free(dump);
    }
    printf("%s]\n", n ? "\n" : "");
    return 0;
}

static const char *const runs_statuses[] = {"SCHEDULED", "RUNNING", "FINISHED", "FAILED", "KILLED"};

int cmd_runs(int argc, char **argv) {
    const char *experiment = NULL, *status = NULL, *db_arg = NULL, *results = NULL;
    int fmt = RUNS_TABLE, fix_stale = 0, bad = 0;
    double stale_s = 1800;
    const char *tags[RUNS_MAX_TAGS];
    gl_run_filter filter = {.tags = tags};
    args_parser p;
    args_begin(&p, &runs_spec, argc, argv);
    for (int k; !bad && (k = args_next(&p)) != ARGS_END;) {
        if (k < 0) return args_exit_code(k);
        switch (k) {
        case ARGS_POS: return args_usage_error(&runs_spec, "unexpected argument '%s'", p.val);
        case ARGS_KEY(0): experiment = p.val; break;
        case ARGS_KEY(1): { /* in any case: finished is FINISHED */
            int st;
            bad = args_get_choice(&p, "SCHEDULED,RUNNING,FINISHED,FAILED,KILLED", &st);
            if (!bad) status = runs_statuses[st];
            break;
        }
        case ARGS_KEY(2): bad = args_get_choice(&p, "table,csv,json", &fmt); break;
        case ARGS_KEY(3): db_arg = p.val; break;
        case ARGS_KEY(4): results = p.val; break;
        case ARGS_KEY(5): bad = args_get_double(&p, 0, 1e9, &stale_s); break;
        case ARGS_KEY(6): fix_stale = 1; break;
        case ARGS_KEY(7):
            if (filter.ntags == RUNS_MAX_TAGS)
                return args_usage_error(&runs_spec, "at most %d --tag filters", RUNS_MAX_TAGS);
            if (!strchr(p.val, '=') || p.val[0] == '=')
                return args_usage_error(&runs_spec, "--tag '%s': write it as key=value", p.val);
            tags[filter.ntags++] = p.val;
            break;
        case ARGS_KEY(8): filter.deleted = 1; break;
        }
    }
    if (bad) return 2;
    char dbp[GL_PATH_MAX + 16];
    args_db_path(db_arg, results, dbp, sizeof dbp);
    if (access(dbp, F_OK) != 0) {
        fprintf(stderr, "gatelab runs: no registry at %s (run `gatelab train` or `gatelab sweep` first, or pass --db "
                        "or --results)\n", dbp);
        return 1;
    }
    char err[1024];
    gl_db *db = NULL;
    gl_run_row *rows = NULL;
    char (*why)[256] = NULL;
    int n = 0, rc = 1;
    filter.experiment = experiment;
    filter.status = status;
    if ((fix_stale ? db_open_existing(&db, dbp, err, sizeof err) : db_open_readonly(&db, dbp, err, sizeof err)) ||
        (experiment && resolve_experiment(db, experiment, err, sizeof err) != 1) ||
        db_runs_find(db, &filter, &rows, &n, err, sizeof err)) {
        fprintf(stderr, "gatelab runs: %s\n", err);
        goto cleanup;
    }
    why = calloc((size_t)(n ? n : 1), sizeof *why);
    if (!why) {
        fprintf(stderr, "gatelab runs: out of memory\n");
        goto cleanup;
    }
    if (runs_check_stale(db, rows, n, stale_s, fix_stale, why, err, sizeof err) < 0) {
        fprintf(stderr, "gatelab runs: %s\n", err);
        goto cleanup;
    }
    if (fmt == RUNS_CSV) runs_print_csv(rows, n);
    else if (fmt == RUNS_JSON) {
        if (runs_print_json(rows, n)) {
            fprintf(stderr, "gatelab runs: out of memory writing JSON\n");
            goto cleanup;
        }
    }
    else runs_print_table(rows, n, why);
    rc = 0;
cleanup:
    free(why);
    free(rows);
    db_close(db);
    return rc;
}
