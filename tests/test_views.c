/*
 * test_views.c — the registry's views (harness/store/registry_views.c, scripts/python/gatelab/views.sql)
 * against the rules they state once: run_headline gives, for every run and split, the headline (kind,
 * loss, soft loss, step, windows) of ref_headline below — the rule as gatelab wrote it in C before the
 * view, one db_metric_at at a time, kept here as the reference — and db_run_headline (which reads the
 * view) and the run listing agree with it; run_variant gives the label the run listing (`gatelab runs`)
 * and the run set (tables, figures, the paper report) print.
 *
 * Registries: one made here (a dense run, TSA with its hard rows, TSA with only its soft rows, TSA
 * whose hard rows are of an older step, a run with only periodic evaluations, SATFormer with every
 * knob), and copies of the committed snapshots docs/report/registries/decisive*.db (skipped, said,
 * when absent).  Values are compared exactly: both sides read the same stored double, no arithmetic.
 * Read-only opens of a registry without the views must create none in the file (TEMP views).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>
#include "store/registry_sql.h"

#include "analysis/runs/runset.h"
#include "store/registry.h"

static int fails, checks;

static void ok(const char *what, int cond) {
    checks++;
    if (!cond) fails++;
    printf("%s %s\n", cond ? "ok  " : "FAIL", what);
}

static int same_num(double a, double b) { return (isnan(a) && isnan(b)) || a == b; }

/* The headline rule in C, one lookup at a time (the reference): final.loss at its largest step (the
 * most windows there); a model routing depth (tsa, early_exit) is judged by hard.loss on those windows
 * at that step, HARD_MISSING without it. */
static int ref_headline(gl_db *db, const char *run_id, const char *split, gl_headline *h, char *err, size_t errlen) {
    memset(h, 0, sizeof *h);
    h->prefix = "final";
    h->soft_loss = NAN;
    int k = db_metric_at(db, run_id, split, "final.loss", NULL, NULL, &h->loss, err, errlen);
    if (k <= 0) return k;
    h->kind = HEADLINE_FINAL;
    char dr[32] = "";
    if (db_param_get(db, run_id, "model.depth_routing", dr, sizeof dr, err, errlen) < 0) return -1;
    if (strcmp(dr, "tsa") && strcmp(dr, "early_exit")) return 0;
    gl_metric_val hv;
    h->soft_loss = h->loss.value;
    k = db_metric_at(db, run_id, split, "hard.loss", NULL, &h->loss.prov, &hv, err, errlen);
    if (k < 0) return -1;
    if (k == 1 && hv.step == h->loss.step) {
        h->kind = HEADLINE_HARD;
        h->prefix = "hard";
        h->loss = hv;
    } else {
        h->kind = HEADLINE_HARD_MISSING;
    }
    return 0;
}

/* One run_headline row. */
typedef struct {
    char run_id[128], split[16], source[16];
    long step;
    gl_prov prov;
    double loss, soft;
} view_row;

typedef struct {
    view_row *v;
    int n, cap;
} view_rows;

static int row_view(sqlite3_stmt *st, void *ctx, char *err, size_t errlen) {
    (void)err, (void)errlen;
    view_rows *r = ctx;
    if (r->n == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 64;
        r->v = realloc(r->v, (size_t)r->cap * sizeof *r->v);
        if (!r->v) return -1;
    }
    view_row *v = &r->v[r->n++];
    db_col_text(st, 0, v->run_id, sizeof v->run_id);
    db_col_text(st, 1, v->split, sizeof v->split);
    db_col_text(st, 2, v->source, sizeof v->source);
    v->step = (long)sqlite3_column_int64(st, 3);
    v->prov = db_col_prov(st, 4);
    v->loss = db_col_real(st, 8);
    v->soft = db_col_real(st, 9);
    return 0;
}

/* Every (run, split val/test) of db: the view's row and db_run_headline against ref_headline.  Returns
 * the mismatches. */
static int compare_headlines(gl_db *db, const char *label, int *nrows) {
    char err[1024], what[512];
    view_rows vr = {0};
    int bad = 0;
    if (db_query_each(db, "run_headline",
                      "SELECT run_id, split, source, step, data_split, win_first, win_count, tokens, loss, soft_loss "
                      "FROM run_headline WHERE split IN ('val', 'test') ORDER BY run_id, split",
                      row_view, &vr, err, sizeof err, "") < 0) {
        printf("FAIL %s: %s\n", label, err);
        return 1;
    }
    gl_run_row *rows = NULL;
    int n = 0;
    gl_run_filter f = {.deleted = 1};
    if (db_runs_find(db, &f, &rows, &n, err, sizeof err)) {
        printf("FAIL %s: %s\n", label, err);
        free(vr.v);
        return 1;
    }
    static const char *const kinds[] = {"none", "final", "hard", "hard_missing"};
    *nrows = 0;
    for (int i = 0; i < n; i++) {
        for (int s = 0; s < 2; s++) {
            const char *split = s ? "test" : "val";
            gl_headline h, c;
            if (ref_headline(db, rows[i].run_id, split, &h, err, sizeof err) ||
                db_run_headline(db, rows[i].run_id, split, &c, err, sizeof err)) {
                bad++;
                continue;
            }
            if (c.kind != h.kind || strcmp(c.prefix, h.prefix) || !same_num(c.soft_loss, h.soft_loss) ||
                (h.kind != HEADLINE_NONE && (c.loss.step != h.loss.step || !same_num(c.loss.value, h.loss.value)))) {
                bad++;
                snprintf(what, sizeof what, "%s: %s %s: db_run_headline %s %.17g, the reference %s %.17g", label,
                         rows[i].run_id, split, c.prefix, c.loss.value, h.prefix, h.loss.value);
                ok(what, 0);
            }
            const view_row *v = NULL;
            for (int k = 0; k < vr.n && !v; k++)
                if (!strcmp(vr.v[k].run_id, rows[i].run_id) && !strcmp(vr.v[k].split, split)) v = &vr.v[k];
            int good;
            if (h.kind == HEADLINE_NONE) /* no headline: the view has none, or (val only) the periodic one */
                good = !v || (!strcmp(v->source, "periodic") && s == 0);
            else {
                (*nrows)++;
                good = v && !strcmp(v->source, kinds[h.kind]) && v->step == h.loss.step &&
                       !strcmp(v->prov.split, h.loss.prov.split) && v->prov.first == h.loss.prov.first &&
                       v->prov.count == h.loss.prov.count && same_num(v->soft, h.soft_loss) &&
                       (h.kind == HEADLINE_HARD_MISSING ? isnan(v->loss) : same_num(v->loss, h.loss.value));
            }
            if (!good) {
                bad++;
                snprintf(what, sizeof what, "%s: %s %s: view %s %.17g step %ld, C %s %.17g step %ld", label,
                         rows[i].run_id, split, v ? v->source : "(none)", v ? v->loss : NAN, v ? v->step : -1,
                         kinds[h.kind], h.loss.value, h.loss.step);
                ok(what, 0);
            }
        }
        /* the listing's headline is the view's (val), and so its periodic fallback */
        const view_row *v = NULL;
        for (int k = 0; k < vr.n && !v; k++)
            if (!strcmp(vr.v[k].run_id, rows[i].run_id) && !strcmp(vr.v[k].split, "val")) v = &vr.v[k];
        if (v && !(same_num(rows[i].val_loss, v->loss) && rows[i].val_step == v->step)) {
            bad++;
            snprintf(what, sizeof what, "%s: %s: runs' val loss %.17g @%ld, the view's %.17g @%ld", label,
                     rows[i].run_id, rows[i].val_loss, rows[i].val_step, v->loss, v->step);
            ok(what, 0);
        }
    }
    free(rows);
    free(vr.v);
    return bad;
}

/* The runs' labels and headlines: the listing (`gatelab runs`, gl_run_row) and the run set (tables,
 * figures, the paper report: runset_row) name every finished run alike — run_variant's label, and
 * run_headline's loss, soft loss, step and kind.  Returns the mismatches. */
static int compare_labels(gl_db *db, const char *label) {
    char err[1024], what[512];
    gl_run_row *rows = NULL;
    int n = 0, bad = 0;
    runset rs = {0};
    if (db_runs_list(db, NULL, "FINISHED", &rows, &n, err, sizeof err) || runset_load(db, NULL, &rs, err, sizeof err)) {
        printf("FAIL %s: %s\n", label, err);
        free(rows);
        return 1;
    }
    for (int i = 0; i < rs.n; i++) {
        const gl_run_row *r = NULL;
        for (int k = 0; k < n && !r; k++)
            if (!strcmp(rows[k].run_id, rs.r[i].t.run_id)) r = &rows[k];
        const runset_row *t = &rs.r[i].t;
        if (!r || strcmp(r->variant, t->variant)) {
            bad++;
            snprintf(what, sizeof what, "%s: %s: runs says '%s', the run set '%s'", label, t->run_id,
                     r ? r->variant : "(absent)", t->variant);
            ok(what, 0);
        } else if (r->val_headline != t->headline || !same_num(r->val_loss, t->val_loss) ||
                   !same_num(r->val_soft, t->soft_loss) || r->val_step != t->val_step ||
                   (r->val_kind == HEADLINE_HARD_MISSING) != t->hard_missing) {
            bad++;
            snprintf(what, sizeof what, "%s: %s: runs' headline %.17g @%ld (%d), the run set's %.17g @%ld (%d)", label,
                     t->run_id, r->val_loss, r->val_step, r->val_headline, t->val_loss, t->val_step, t->headline);
            ok(what, 0);
        }
    }
    runset_free(&rs);
    free(rows);
    return bad;
}

static void log_one(gl_db *db, const char *run, const char *split, const char *name, long step, double v,
                    long count) {
    char err[512];
    gl_metric m = {.step = step, .split = split, .name = name, .value = v, .wall_time = 100 + step, .se = 0.01};
    if (count) {
        snprintf(m.prov.split, sizeof m.prov.split, "%s", split);
        m.prov.count = count;
        m.prov.tokens = 64.0 * (double)count;
    }
    if (db_metrics_log(db, run, &m, 1, err, sizeof err)) printf("FAIL log %s: %s\n", run, err), fails++;
}

static void make(gl_db *db, long long exp, const char *run, const char *ini) {
    char err[512];
    if (db_run_create(db, exp, run, run, ini, "h", 1, "FINISHED", err, sizeof err) ||
        db_params_put_ini(db, run, ini, err, sizeof err))
        printf("FAIL make %s: %s\n", run, err), fails++;
}

static void test_made(const char *dir) {
    char path[600], err[512];
    snprintf(path, sizeof path, "%s/made.db", dir);
    unlink(path);
    gl_db *db = NULL;
    long long exp = 0;
    if (db_open(&db, path, err, sizeof err) ||
        db_experiment_ensure(db, "views", "[train]\nsteps = 10\n", &exp, err, sizeof err)) {
        printf("FAIL open %s: %s\n", path, err);
        fails++;
        return;
    }
    make(db, exp, "dense", "[model]\nvalue_residual = none\n");
    make(db, exp, "tsa_hard", "[model]\ndepth_routing = tsa\n");
    make(db, exp, "tsa_soft", "[model]\ndepth_routing = tsa\n");
    make(db, exp, "tsa_old", "[model]\ndepth_routing = early_exit\n");
    make(db, exp, "periodic", "[model]\nvalue_residual = resformer\n");
    make(db, exp, "knobs", "[model]\nvalue_residual = satformer\nsat_gate = softmax\nsat_gate_bias = 1\n"
                           "[train]\nweight_decay_policy = all\n");
    log_one(db, "dense", "val", "final.loss", 10, 2.5, 8);
    log_one(db, "dense", "val", "final.loss", 10, 2.4, 16); /* more windows at the same step: this one */
    log_one(db, "dense", "val", "loss", 10, 2.9, 2);
    log_one(db, "tsa_hard", "val", "final.loss", 10, 2.0, 8);
    log_one(db, "tsa_hard", "val", "hard.loss", 10, 2.2, 8);
    log_one(db, "tsa_hard", "test", "final.loss", 10, 2.1, 4);
    log_one(db, "tsa_hard", "test", "hard.loss", 10, 2.3, 8); /* other windows: not its headline */
    log_one(db, "tsa_soft", "val", "final.loss", 10, 2.0, 8);
    log_one(db, "tsa_old", "val", "final.loss", 20, 1.9, 8);
    log_one(db, "tsa_old", "val", "hard.loss", 10, 2.2, 8);
    log_one(db, "periodic", "val", "loss", 5, 3.1, 2);
    log_one(db, "periodic", "val", "loss", 10, 3.0, 2);
    log_one(db, "knobs", "val", "final.loss", 10, 2.6, 8);
    db_close(db);
    if (db_open_readonly(&db, path, err, sizeof err)) {
        printf("FAIL open %s read-only: %s\n", path, err);
        fails++;
        return;
    }
    int nrows = 0, bad = compare_headlines(db, "made", &nrows);
    ok("made registry: run_headline and db_run_headline = the reference for every run and split (final, hard, soft only, older hard)",
       !bad && nrows == 6);
    const struct {
        const char *run, *split, *source;
        double loss;
    } want[] = {{"dense", "val", "final", 2.4},          {"tsa_hard", "val", "hard", 2.2},
                {"tsa_hard", "test", "hard_missing", NAN}, {"tsa_soft", "val", "hard_missing", NAN},
                {"tsa_old", "val", "hard_missing", NAN},  {"periodic", "val", "periodic", 3.0}};
    view_rows vr = {0};
    db_query_each(db, "run_headline",
                  "SELECT run_id, split, source, step, data_split, win_first, win_count, tokens, loss, soft_loss "
                  "FROM run_headline ORDER BY run_id, split", row_view, &vr, err, sizeof err, "");
    int found = 0;
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++)
        for (int i = 0; i < vr.n; i++)
            if (!strcmp(vr.v[i].run_id, want[k].run) && !strcmp(vr.v[i].split, want[k].split) &&
                !strcmp(vr.v[i].source, want[k].source) && same_num(vr.v[i].loss, want[k].loss))
                found++;
    free(vr.v);
    ok("made registry: each source as stated (final on the most windows, hard, hard_missing x3, periodic)",
       found == (int)(sizeof want / sizeof want[0]));
    char label[64] = "";
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db->h, "SELECT label FROM run_variant WHERE run_id = 'knobs'", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        db_col_text(st, 0, label, sizeof label);
    sqlite3_finalize(st);
    ok("made registry: run_variant labels SATFormer's knobs: satformer[softmax,bias,wd=all]",
       !strcmp(label, "satformer[softmax,bias,wd=all]"));
    ok("made registry: the run listing and the run set print the same label and headline for every run", !compare_labels(db, "made"));
    db_close(db);
}

/* A committed snapshot, copied (a read-only open of the copy must leave it without views). */
static void test_snapshot(const char *dir, const char *name) {
    char src[600], dst[700], cmd[1600], err[1024], what[256];
    snprintf(src, sizeof src, "docs/report/registries/%s", name);
    if (access(src, R_OK)) {
        printf("SKIP %s: not here\n", src);
        return;
    }
    snprintf(dst, sizeof dst, "%s/%s", dir, name);
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", src, dst);
    if (system(cmd)) {
        printf("FAIL cannot copy %s\n", src);
        fails++;
        return;
    }
    gl_db *db = NULL;
    if (db_open_readonly(&db, dst, err, sizeof err)) {
        printf("FAIL open %s: %s\n", dst, err);
        fails++;
        return;
    }
    int nrows = 0, bad = compare_headlines(db, name, &nrows);
    snprintf(what, sizeof what, "%s: run_headline and db_run_headline = the reference for all %d headlines", name, nrows);
    ok(what, !bad && nrows > 0);
    snprintf(what, sizeof what, "%s: the run listing and the run set print the same label and headline for every run", name);
    ok(what, !compare_labels(db, name));
    db_close(db);
    sqlite3 *h = NULL;
    int views = -1;
    sqlite3_stmt *st = NULL;
    if (sqlite3_open_v2(dst, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(h, "SELECT count(*) FROM sqlite_master WHERE type = 'view'", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        views = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(h);
    snprintf(what, sizeof what, "%s: a read-only open wrote no view into the file (TEMP views)", name);
    ok(what, views == 0);
}

int main(void) {
    char dir[512];
    const char *t = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/gatelab_test_views_%d", t && *t ? t : "/tmp", (int)getpid());
    char cmd[600];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
    if (system(cmd)) return 1;
    test_made(dir);
    static const char *const snaps[] = {"decisive-q2.db", "decisive-q1i.db", "decisive-q1c.db", "decisive-q1e.db",
                                        "decisive-q4p.db", "decisive.db"};
    for (size_t k = 0; k < sizeof snaps / sizeof snaps[0]; k++) test_snapshot(dir, snaps[k]);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd)) fprintf(stderr, "could not remove %s\n", dir);
    printf("[==========] %d checks\n[  PASSED  ] %d\n", checks, checks - fails);
    if (fails) printf("[  FAILED  ] %d\n", fails);
    return fails ? 1 : 0;
}
