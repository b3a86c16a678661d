/*
 * paper.c — the reproduction report (paper.h): REPORT.md from the run set
 * (runset.h) and the claims file (experiments/paper/claims.ini, judged by
 * claims.c), and paper_collect, the view of the run set the post stage and
 * the paper figures read.
 *
 * The report holds no claim logic and no published number: it renders each
 * claim's combined verdict, each row (the paper's text and number, ours with
 * its interval, MDE and notes, the verdict, what was measured, the budget),
 * the rule of each row with the runs and commits it rests on, the
 * pre-registration commit and the disclosed changes of method, the plan's
 * progress, every run, and the figures (paper_fig.c; the forest plot's
 * numbers are written here).
 *
 * Not here: running anything (the post stage of `gatelab paper` records the
 * whole-split evaluations, hard-skip headlines, τ frontiers, ablations and
 * analyses this file reads), judging (claims.c), statistics (stats.c).
 */
#include "analysis/paper/paper.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/paper/paper_fig.h"
#include "analysis/paper/plan.h"
#include "analysis/paper/claims.h"
#include "analysis/runs/runset.h"
#include "run/sweep.h" /* sweep_expand: the runs a plan line would train */
#include "model/gatekind.h"
#include "store/categories.h"
#include "store/fileio.h"
#include "store/metric.h"
#include "analysis/core/report.h"
#include "analysis/core/stats.h"

/* ---- statistics ---- */

double paper_t95(int df) { return tables_t95(df); }

/* ---- collecting: a view of the run set (runset.h) ---- */

/* The value of split/name of r (NaN when absent). */
static double pc_num(const runset_run *r, const char *split, const char *name) {
    char key[RUNSET_KEY_MAX];
    snprintf(key, sizeof key, "%s/%s", split, name);
    return runset_num(r, key);
}

/* The same for a metric with parameters, by its label (runset.h keys). */
static double pc_key(const runset_run *r, const char *split, const metric_key *k) {
    char label[RUNSET_KEY_MAX];
    return metric_label(k->name, k->params, label, sizeof label) ? NAN : pc_num(r, split, label);
}

/* Gate g's statistics from the analysis rows of the last traced step
 * ("<key>_mean", the gate table's key): NaN for a run without them. */
static void pc_gates(const runset_run *r, gl_gate g, paper_run *p) {
    char mean[64];
    snprintf(mean, sizeof mean, "%s_mean", gatekind_info[g].key);
    int L = (int)r->n_layer, H = (int)r->n_kv_head;
    double early = 0, late = 0, sem = 0, oth = 0, heads[4096];
    int ne = 0, nl = 0, nh = 0, nsem = 0;
    const int first_late = 1 + (L - 1) / 2; /* blocks 1..L−1; the later half starts here */
    metric_key name;
    for (int n = 1; n < L; n++) {
        metric_stat(&name, mean, n, METRIC_NONE, METRIC_NONE);
        double a = pc_key(r, "analysis", &name);
        if (isnan(a)) continue;
        if (n >= first_late) late += a, nl++;
        else early += a, ne++;
        if (n >= first_late) {
            double c[3];
            const int cat[3] = {CAT_SEMANTIC, CAT_STRUCTURAL, CAT_FUNCTIONAL};
            for (int k = 0; k < 3; k++) {
                metric_stat(&name, mean, n, METRIC_NONE, cat[k]);
                c[k] = pc_key(r, "analysis", &name);
            }
            if (!isnan(c[0]) && !isnan(c[1]) && !isnan(c[2])) sem += c[0], oth += 0.5 * (c[1] + c[2]), nsem++;
        }
        for (int h = 0; h < H && nh < 4096; h++) {
            metric_stat(&name, mean, n, h, METRIC_NONE);
            double v = pc_key(r, "analysis", &name);
            if (!isnan(v)) heads[nh++] = v;
        }
    }
    p->early_alpha = ne ? early / ne : NAN;
    p->late_alpha = nl ? late / nl : NAN;
    p->late_sem = nsem ? sem / nsem : NAN;
    p->late_other = nsem ? oth / nsem : NAN;
    p->head_gini = st_gini(heads, nh);
}

/* Seconds a run spent training: the sum of the gaps between its logged
 * training losses, leaving out any gap over 20 times the median gap (the run
 * lay stopped there and was resumed later, e.g. in the next session).  NAN
 * with fewer than two points. */
static double pc_training_seconds(const gl_metric_point *pts, int np) {
    if (np < 2) return NAN;
    double *gap = malloc((size_t)(np - 1) * sizeof *gap), *sorted = malloc((size_t)(np - 1) * sizeof *sorted);
    double sum = NAN;
    if (gap && sorted) {
        for (int k = 1; k < np; k++) gap[k - 1] = sorted[k - 1] = pts[k].wall_time - pts[k - 1].wall_time;
        st_quantile(sorted, np - 1, 0.5); /* sorts sorted[] (stats.h); the lower median as before: */
        const double med = sorted[(np - 1) / 2];
        sum = 0;
        for (int k = 0; k < np - 1; k++)
            if (gap[k] <= 20 * med) sum += gap[k];
    }
    free(gap);
    free(sorted);
    return sum;
}

/* The training-loss series of the plan's runs, read once for the set (db_set_series: the run set holds
 * latest values, not series), kept by run: run k's points are p[at[k] .. at[k + 1]). */
typedef struct {
    gl_metric_point *p;
    int n, cap;
    char (*id)[128];
    int *at; /* nruns + 1 entries */
    int nruns, capr;
    int oom;
} pc_series;

static int pc_on_point(const char *run_id, const gl_metric_point *pt, void *ctx) {
    pc_series *s = ctx;
    if (!s->nruns || strcmp(s->id[s->nruns - 1], run_id)) { /* a new run: rows come by run id */
        if (s->nruns + 2 > s->capr) {
            int cap = s->capr ? 2 * s->capr : 64;
            char(*id)[128] = realloc(s->id, (size_t)cap * sizeof *id);
            if (id) s->id = id;
            int *at = id ? realloc(s->at, (size_t)(cap + 1) * sizeof *at) : NULL;
            if (!id || !at) return s->oom = 1;
            s->at = at;
            s->capr = cap;
        }
        snprintf(s->id[s->nruns], sizeof s->id[0], "%s", run_id);
        s->at[s->nruns++] = s->n;
    }
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 1024;
        gl_metric_point *p = realloc(s->p, (size_t)cap * sizeof *p);
        if (!p) return s->oom = 1;
        s->p = p;
        s->cap = cap;
    }
    s->p[s->n++] = *pt;
    s->at[s->nruns] = s->n;
    return 0;
}

static void pc_series_free(pc_series *s) {
    free(s->p), free(s->id), free(s->at);
    memset(s, 0, sizeof *s);
}

static void pc_wall(const pc_series *s, paper_run *p) {
    int lo = 0, hi = s->nruns - 1, k = -1;
    while (lo <= hi && k < 0) {
        int mid = (lo + hi) / 2, c = strcmp(s->id[mid], p->t.run_id);
        if (!c) k = mid;
        else if (c < 0) lo = mid + 1;
        else hi = mid - 1;
    }
    const gl_metric_point *pts = k >= 0 ? s->p + s->at[k] : NULL;
    const int np = k >= 0 ? s->at[k + 1] - s->at[k] : 0;
    p->wall_s = pc_training_seconds(pts, np);
    p->t0 = np ? pts[0].wall_time : NAN;
    p->t1 = np ? pts[np - 1].wall_time : NAN;
}

static void pc_one(const pc_series *ser, const runset_run *r, paper_run *p) {
    p->t = r->t;
    snprintf(p->value, sizeof p->value, "%s", r->value_residual);
    snprintf(p->depth, sizeof p->depth, "%s", r->depth_routing);
    snprintf(p->cross, sizeof p->cross, "%s", r->cross_layer);
    p->steps = r->steps;
    p->batch = r->batch;
    p->seq_len = r->seq_len;
    const runset_value *hv = runset_get(r, "val/final.loss");
    memset(&p->loss_prov, 0, sizeof p->loss_prov);
    p->loss_step = hv ? hv->step : -1;
    if (hv) p->loss_prov = hv->prov;
    p->loss = hv ? hv->value : NAN;
    p->loss_se = pc_num(r, "val", "final.loss_se");
    p->alpha = pc_num(r, "val", "final.active_frac");
    p->hard_alpha = pc_num(r, "val", "hard.active_frac");
    p->tlops = pc_num(r, "val", "final.tlops_saved");
    p->tok_acc = pc_num(r, "val", "final.token_acc");
    p->seq_acc = pc_num(r, "val", "final.seq_acc");
    p->m_loss = pc_num(r, "val", "matched.loss");
    p->m_alpha = pc_num(r, "val", "matched.active_frac");
    p->m_tau = pc_num(r, "val", "matched.tau");
    p->m_target = pc_num(r, "val", "matched.alpha_target");
    p->m_tlops = pc_num(r, "val", "matched.tlops_saved");
    metric_key name;
    char label[RUNSET_KEY_MAX], key[RUNSET_KEY_MAX];
    metric_ablation(&name, "zero", METRIC_LABEL_ALL, "delta_loss", METRIC_NONE);
    metric_label(name.name, name.params, label, sizeof label);
    snprintf(key, sizeof key, "ablation/%s", label);
    const runset_value *zv = runset_get(r, key);
    p->zero_dl = zv ? zv->value : NAN;
    memset(&p->zero_prov, 0, sizeof p->zero_prov);
    if (zv) p->zero_prov = zv->prov;
    metric_ablation(&name, "mean", METRIC_LABEL_ALL, "delta_loss", METRIC_NONE);
    p->mean_dl = pc_key(r, "ablation", &name);
    p->train_tps = p->t.tokens_per_s;
    p->depth_key = runset_partner_key(r, "depth_routing");
    gl_manifest *mf = r->config ? runset_resolve(r->config) : NULL; /* one parse: threads is no runset_param */
    p->d_model = mf ? mf->model.d_model : 0;
    p->threads = mf && mf->train.threads > 0 ? mf->train.threads : 1;
    free(mf);
    p->n_layer = (int)r->n_layer;
    pc_wall(ser, p);
    pc_gates(r, GATE_ALPHA, p); /* the claims' α: SATFormer's gate, chosen by its row of the gate table */
}

/* The plan's runs (experiments paper-GROUP) of rs as paper_runs. */
static int pc_view(gl_db *db, const runset *rs, paper_run **runs, int *n, char *err, size_t errlen) {
    int np = 0;
    *runs = NULL;
    *n = 0;
    pc_series ser = {0};
    const gl_set_filter plan_runs = {.status = "FINISHED", .prefix = "paper-"};
    if (db_set_series(db, &plan_runs, "train", "loss", pc_on_point, &ser, err, errlen) || ser.oom) {
        if (ser.oom) snprintf(err, errlen, "out of memory reading the training series");
        pc_series_free(&ser);
        return -1;
    }
    paper_run *p = calloc((size_t)(rs->n > 0 ? rs->n : 1), sizeof *p);
    if (!p) {
        pc_series_free(&ser);
        snprintf(err, errlen, "out of memory for %d runs", rs->n);
        return -1;
    }
    for (int i = 0; i < rs->n; i++) /* cost-paper* and others are not trained runs */
        if (!strncmp(rs->r[i].t.experiment, "paper-", 6)) pc_one(&ser, &rs->r[i], &p[np++]);
    pc_series_free(&ser);
    *runs = p;
    *n = np;
    return 0;
}

const paper_run *paper_depth_partner(const paper_run *runs, int n, const paper_run *like, const char *depth) {
    for (int i = 0; i < n; i++)
        if (&runs[i] != like && like->depth_key && runs[i].depth_key == like->depth_key && !strcmp(runs[i].depth, depth))
            return &runs[i];
    return NULL;
}

int paper_collect(gl_db *db, paper_run **runs, int *n, char *err, size_t errlen) {
    runset rs = {0};
    *runs = NULL;
    *n = 0;
    if (runset_load(db, "paper-", &rs, err, errlen)) return -1;
    int rc = pc_view(db, &rs, runs, n, err, errlen);
    runset_free(&rs);
    return rc;
}

/* ---- finding runs ---- */

/* What selects a set of runs: NULL / NaN fields match anything. */
typedef struct {
    const char *data, *scale, *value, *depth, *cross;
    double lambda;
} pick;

static int pk_match(const paper_run *r, const pick *k) {
    return (!k->data || !strcmp(r->t.data, k->data)) && (!k->scale || !strcmp(r->t.scale, k->scale)) &&
           (!k->value || !strcmp(r->value, k->value)) && (!k->depth || !strcmp(r->depth, k->depth)) &&
           (!k->cross || !strcmp(r->cross, k->cross)) &&
           (isnan(k->lambda) || fabs(r->t.lambda - k->lambda) < 1e-9);
}

#define PF(field) offsetof(paper_run, field)
static double pf(const paper_run *r, size_t off) { return *(const double *)((const char *)r + off); }

/* Values of field over the runs matching k (one per seed). */
static int pk_values(const paper_run *runs, int n, const pick *k, size_t off, double *x, int max) {
    int c = 0;
    for (int i = 0; i < n && c < max; i++)
        if (pk_match(&runs[i], k)) x[c++] = pf(&runs[i], off);
    return c;
}

int paper_lambda_star(const paper_run *runs, int n, const char *data, const char *scale, double target, int *hard,
                      double *lambda) {
    double best = INFINITY;
    int found = 0, all_hard = 1, any = 0;
    for (int i = 0; i < n; i++) {
        const paper_run *r = &runs[i];
        if (strcmp(r->depth, "tsa") || strcmp(r->t.data, data) || strcmp(r->t.scale, scale)) continue;
        any = 1;
        all_hard &= !isnan(r->hard_alpha);
    }
    const size_t field = any && all_hard ? PF(hard_alpha) : PF(alpha);
    if (hard) *hard = any && all_hard;
    for (int i = 0; i < n; i++) {
        const paper_run *r = &runs[i];
        if (strcmp(r->depth, "tsa") || strcmp(r->t.data, data) || strcmp(r->t.scale, scale)) continue;
        pick k = {data, scale, NULL, "tsa", NULL, r->t.lambda};
        double a[64];
        st_summary s = st_describe(a, pk_values(runs, n, &k, field, a, 64), 0.95);
        if (s.n && fabs(s.mean - target) < best) best = fabs(s.mean - target), *lambda = r->t.lambda, found = 1;
    }
    return found;
}

/* Whether run id belongs to plan group g: its id is paper-G-NNN-HASH (a sweep's
 * run ids; G may hold '-', so the rest after "paper-G-" must be exactly NNN-HASH). */
static int plan_run_of(const char *id, const char *g) {
    size_t gl = strlen(g);
    if (strncmp(id, "paper-", 6) || strncmp(id + 6, g, gl) || id[6 + gl] != '-') return 0;
    const char *p = id + 7 + gl;
    size_t nd = strspn(p, "0123456789");
    return nd > 0 && p[nd] == '-' && p[nd + 1] && strspn(p + nd + 1, "0123456789abcdef") == strlen(p + nd + 1);
}

/* The sweep commands of the plan lines whose groups trained the row's runs
 * (runs: ", "-separated ids, as claims_result.runs), in plan order: the
 * command a reader reruns to make those runs.  "—" when none is a plan run
 * (a row not measured, or one that reads only the bench's cost runs). */
static void plan_command(const paper_plan *plan, const char *runs, const char *results, char *out, size_t len) {
    size_t used = 0;
    out[0] = 0;
    for (int i = 0; i < plan->n; i++) {
        const plan_line *l = &plan->lines[i];
        int hit = 0;
        for (const char *p = runs; *p && !hit; p += strspn(p, ", ")) {
            char id[160];
            size_t k = strcspn(p, ", ");
            snprintf(id, sizeof id, "%.*s", (int)(k < sizeof id ? k : sizeof id - 1), p);
            hit = plan_run_of(id, l->group);
            p += k;
        }
        if (!hit || used >= len) continue;
        int w = snprintf(out + used, len - used, "%s`gatelab sweep experiments/paper/%s %s log.experiment=paper-%s --results %s`",
                         used ? "; " : "", l->manifest, l->args, l->group, results);
        used += w > 0 ? (size_t)w : 0;
    }
    if (!out[0]) snprintf(out, len, "—");
}

/* Per plan line: runs registered in the registry for experiment paper-GROUP
 * and how many finished, so a partial report says what it lacks. */
static int cmp_span(const void *a, const void *b) {
    const double *x = a, *y = b;
    return (x[0] > y[0]) - (x[0] < y[0]);
}

/* Wall-clock seconds during which at least one run was training: the union of
 * the spans [end − training seconds, end] (a resumed run's training seconds
 * leave out the time it lay stopped, so pauses between sessions do not count). */
static double busy_seconds(const paper_run *runs, int n) {
    double(*sp)[2] = malloc((size_t)(n ? n : 1) * sizeof *sp);
    if (!sp) return NAN;
    int m = 0;
    for (int i = 0; i < n; i++)
        if (!isnan(runs[i].wall_s) && !isnan(runs[i].t1)) {
            sp[m][0] = runs[i].t1 - runs[i].wall_s;
            sp[m][1] = runs[i].t1;
            m++;
        }
    qsort(sp, (size_t)m, sizeof *sp, cmp_span);
    double busy = 0, lo = 0, hi = -INFINITY;
    for (int i = 0; i < m; i++) {
        if (sp[i][0] > hi) {
            if (hi > lo) busy += hi - lo;
            lo = sp[i][0];
            hi = sp[i][1];
        } else if (sp[i][1] > hi) {
            hi = sp[i][1];
        }
    }
    if (hi > lo) busy += hi - lo;
    free(sp);
    return busy;
}

/* Core-seconds per step of a run of this shape: the median over the finished runs of the same d_model,
 * n_layer, seq_len and batch (wall_s × threads / steps, measured as they ran here, so a run trained with two
 * threads counts both); NaN when none has run. */
static double pp_step_seconds(const paper_run *runs, int n, int d_model, int n_layer, long seq_len, long batch) {
    double *x = malloc((size_t)(n > 0 ? n : 1) * sizeof *x);
    int c = 0;
    for (int i = 0; x && i < n; i++)
        if (runs[i].d_model == d_model && runs[i].n_layer == n_layer && runs[i].seq_len == seq_len &&
            runs[i].batch == batch && runs[i].steps > 0 && !isnan(runs[i].wall_s))
            x[c++] = runs[i].wall_s * (runs[i].threads > 0 ? runs[i].threads : 1) / (double)runs[i].steps;
    const double med = c ? st_quantile(x, c, 0.5) : NAN;
    free(x);
    return med;
}

/* The registry's runs (soft-deleted ones left out), listed once (db_runs_list) in experiment, then
 * run-id order, so a plan group's runs are one stretch of it: what the plan's lines read (progress,
 * what is left, whether the registry is the preset's), not a listing per line. */
typedef struct {
    gl_run_row *r;
    int n;
} pr_listing;

/* The runs of experiment exp in ls, in run-id order: *n of them from the returned row (NULL: none). */
static const gl_run_row *pr_group_runs(const pr_listing *ls, const char *exp, int *n) {
    int lo = 0, hi;
    while (lo < ls->n && strcmp(ls->r[lo].experiment, exp)) lo++;
    for (hi = lo; hi < ls->n && !strcmp(ls->r[hi].experiment, exp); hi++) {}
    *n = hi - lo;
    return hi > lo ? ls->r + lo : NULL;
}

/* What a plan line has left to train: its sweep expanded as `gatelab sweep` expands it (the same
 * manifest, "--axis k=v" pairs and fixed "k=v" words, log.experiment=paper-GROUP), less its runs
 * FINISHED in the registry; *secs sums each left run's steps × the step time of its shape, *untimed
 * counts the runs whose shape no finished run has.  Returns the runs left, or -1 with why. */
static int pp_left(const plan_line *l, const char *plan_dir, const pr_listing *ls, const paper_run *runs, int n,
                   double *secs, int *untimed, char *why, size_t whylen) {
    *secs = 0, *untimed = 0;
    char args[2048], path[4200], exp[96];
    snprintf(args, sizeof args, "%s", l->args);
    snprintf(path, sizeof path, "%s%s", plan_dir, l->manifest);
    snprintf(exp, sizeof exp, "log.experiment=paper-%s", l->group);
    char *cli[GL_SWEEP_MAX_KEYS * 4 + 1], *axis[GL_SWEEP_MAX_KEYS];
    int ncli = 0, nax = 0, next_axis = 0;
    for (char *w = strtok(args, " \t"); w; w = strtok(NULL, " \t")) {
        if (!strcmp(w, "--axis")) next_axis = 1;
        else if (next_axis && nax < GL_SWEEP_MAX_KEYS) axis[nax++] = w, next_axis = 0;
        else if (!next_axis && ncli < GL_SWEEP_MAX_KEYS * 4) cli[ncli++] = w;
    }
    cli[ncli++] = exp;
    gl_sweep sw = {0};
    if (sweep_expand(&sw, path, ncli, cli, nax, axis, why, whylen)) return -1;
    int nr = 0, left = 0, finished = 0;
    const gl_run_row *rows = pr_group_runs(ls, exp + strlen("log.experiment="), &nr);
    for (int i = 0; i < nr; i++) finished += !strcmp(rows[i].status, "FINISHED");
    /* a group's finished runs count against its grid even under other ids (`train --run-id`) */
    const int budget = sw.n_runs > finished ? sw.n_runs - finished : 0;
    for (int k = 0; k < sw.n_runs && left < budget; k++) {
        int done = 0;
        for (int i = 0; i < nr && !done; i++) done = !strcmp(rows[i].run_id, sw.runs[k].run_id) && !strcmp(rows[i].status, "FINISHED");
        if (done) continue;
        left++;
        gl_manifest *mf = runset_resolve(sw.runs[k].config_ini);
        const double s = mf ? pp_step_seconds(runs, n, mf->model.d_model, mf->model.n_layer, mf->model.seq_len,
                                              mf->train.batch_size)
                            : NAN;
        if (isnan(s)) (*untimed)++;
        else *secs += s * mf->train.steps;
        free(mf);
    }
    sweep_free(&sw);
    return left;
}

/* A duration for the progress table: seconds under two minutes, minutes under two hours, else hours. */
static void pp_hours(char *out, size_t n, double secs) {
    if (secs < 120) snprintf(out, n, "%.1f s", secs);
    else if (secs < 7200) snprintf(out, n, "%.0f min", secs / 60);
    else snprintf(out, n, "%.1f h", secs / 3600);
}

/* The plan-progress table; left[k] gets plan line k's runs left to train (-1: not known here). */
static int write_progress(FILE *f, const pr_listing *ls, const paper_plan *plan, const char *plan_dir,
                          const char *preset, const paper_run *runs, int nruns, int *left_by_line, char *err,
                          size_t errlen) {
    fprintf(f, "## Plan progress\n\nLeft to run: each group's runs not finished, at the median core-seconds per "
               "step (training seconds × threads) of the finished runs of the same shape (d_model, blocks, context, "
               "batch), as measured here — runs that shared the machine ran slower, and the machines differed, so "
               "this is a budget in hours of one thread, not a forecast.\n\n"
               "| group | claims | runs finished / registered | left to run |\n| --- | --- | ---: | --- |\n");
    int partial = 0, rc = 0, all_left = 0, all_untimed = 0;
    double all_secs = 0;
    for (int k = 0; k < plan->n && !rc; k++) {
        const plan_line *l = &plan->lines[k];
        char exp[80];
        snprintf(exp, sizeof exp, "paper-%s", l->group);
        int n = 0, done = 0;
        const gl_run_row *rows = pr_group_runs(ls, exp, &n);
        for (int i = 0; i < n; i++) done += !strcmp(rows[i].status, "FINISHED");
        if (!n || done < n) partial = 1;
        char why[512], cell[640];
        double secs;
        int untimed;
        const int left = pp_left(l, plan_dir, ls, runs, nruns, &secs, &untimed, why, sizeof why);
        left_by_line[k] = left;
        if (left < 0) snprintf(cell, sizeof cell, "not known here: %s", why);
        else if (!left) snprintf(cell, sizeof cell, "—");
        else {
            int m = snprintf(cell, sizeof cell, "%d run%s", left, left == 1 ? "" : "s");
            char t[32];
            pp_hours(t, sizeof t, secs);
            if (left > untimed) m += snprintf(cell + m, sizeof cell - (size_t)m, ", ≈ %s", t);
            if (untimed) snprintf(cell + m, sizeof cell - (size_t)m, " (%d of a shape no finished run has timed)", untimed);
            all_left += left, all_untimed += untimed, all_secs += secs, partial = 1;
        }
        if (n) fprintf(f, "| %s | %s | %d / %d | %s |\n", l->group, l->claims, done, n, cell);
        else fprintf(f, "| %s | %s | not started | %s |\n", l->group, l->claims, cell);
    }
    char t[32];
    pp_hours(t, sizeof t, all_secs);
    if (!rc && all_left)
        fprintf(f, "\nLeft in all: %d runs, ≈ %s of one thread%s.\n", all_left, t,
                all_untimed ? " for those of a timed shape" : "");
    if (!rc && partial)
        fprintf(f, "\n**This report is partial**: some groups of the plan have not finished. Their claims read \"not "
                   "run\" or rest on fewer runs. `make paper PRESET=%s` continues where the runs stopped.\n",
                preset);
    fprintf(f, "\n");
    return rc;
}


/* ---- what was spent: every run of the registry, finished or not ---- */

/* What each run recorded of its machine, read for every run at once (db_set_events, db_set_params):
 * the OpenBLAS kernels of its environment events (db_run_kernels' list), the threads of its last one
 * ("N OpenMP threads"), and its train.threads param. */
typedef struct {
    char run_id[128], kernels[96];
    int th_event, th_param;
} sp_run;

typedef struct {
    sp_run *r;
    int n;
} sp_runs;

static sp_run *sp_find(const sp_runs *s, const char *run_id) {
    int lo = 0, hi = s->n - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2, c = strcmp(s->r[mid].run_id, run_id);
        if (!c) return &s->r[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid - 1;
    }
    return NULL;
}

static int sp_on_environment(const char *run_id, const char *detail, void *ctx) {
    sp_run *r = sp_find(ctx, run_id);
    if (!r) return 0;
    db_kernel_from_event(r->kernels, sizeof r->kernels, detail);
    r->th_event = 0; /* the last event's count */
    const char *t = strstr(detail, " OpenMP threads"), *b = t;
    while (t && b > detail && b[-1] >= '0' && b[-1] <= '9') b--;
    if (t && b < t) r->th_event = atoi(b);
    return 0;
}

static int sp_on_param(const char *run_id, const char *key, const char *value, void *ctx) {
    sp_run *r = strcmp(key, "train.threads") ? NULL : sp_find(ctx, run_id);
    if (r) r->th_param = atoi(value);
    return 0;
}

static int sp_cmp(const void *a, const void *b) { return strcmp(((const sp_run *)a)->run_id, ((const sp_run *)b)->run_id); }

/* Threads a run computed with: its last environment event's "N OpenMP threads", else its train.threads
 * param; 0 when neither is recorded. */
static int sp_threads(const sp_run *r) {
    return !r ? 0 : r->th_event > 0 ? r->th_event : r->th_param > 0 ? r->th_param : 0;
}

typedef struct {
    char group[96];
    int runs, finished, failed, unfinished, restarted, unthreaded, timed;
    double core_s, train_core_s;
    char hosts[128], kernels[96];
} sp_group;

/* "What was spent": per plan group (and the bench's cost experiments) and in total, the core-hours
 * from each run's start → end times × its threads (an upper bound: a run resumed in a later session
 * counts the pause between) and from its training seconds (pauses left out, paper_run.wall_s), the
 * machines (the registry's host) and OpenBLAS kernels, and the runs that failed, were never finished
 * (lost with a machine or abandoned) or were started more than once (resumed or trained again). */
static int pr_spent(FILE *f, gl_db *db, const paper_run *runs, int nruns, char *err, size_t errlen) {
    gl_run_row *rows = NULL;
    int n = 0, ng = 0;
    const gl_run_filter every = {NULL, NULL, NULL, NULL, 0, 1}; /* deleted runs too: they were spent */
    if (db_runs_find(db, &every, &rows, &n, err, errlen)) return -1;
    sp_group *g = calloc((size_t)n + 1, sizeof *g);
    if (!g) {
        free(rows);
        snprintf(err, errlen, "out of memory for %d runs", n);
        return -1;
    }
    sp_runs sr = {calloc((size_t)n + 1, sizeof *sr.r), n};
    const gl_set_filter all_runs = {.deleted = 1};
    if (!sr.r) {
        free(rows), free(g);
        snprintf(err, errlen, "out of memory for %d runs", n);
        return -1;
    }
    for (int i = 0; i < n; i++) snprintf(sr.r[i].run_id, sizeof sr.r[i].run_id, "%s", rows[i].run_id);
    qsort(sr.r, (size_t)n, sizeof *sr.r, sp_cmp);
    if (db_set_events(db, &all_runs, "environment", sp_on_environment, &sr, err, errlen) ||
        db_set_params(db, &all_runs, sp_on_param, &sr, err, errlen)) {
        free(rows), free(g), free(sr.r);
        return -1;
    }
    sp_group *all = &g[n];
    snprintf(all->group, sizeof all->group, "all");
    char notes[4096] = "";
    for (int i = 0; i < n; i++) {
        const gl_run_row *r = &rows[i];
        const char *grp = !strncmp(r->experiment, "paper-", 6) ? r->experiment + 6 : r->experiment;
        int k = 0;
        while (k < ng && strcmp(g[k].group, grp)) k++;
        if (k == ng) snprintf(g[ng++].group, sizeof g[0].group, "%s", grp);
        const sp_run *rr = sp_find(&sr, r->run_id);
        const int th = sp_threads(rr);
        const char *kern = rr ? rr->kernels : "";
        double train_s = NAN;
        for (int j = 0; j < nruns; j++)
            if (!strcmp(runs[j].t.run_id, r->run_id)) train_s = runs[j].wall_s;
        sp_group *t[2] = {&g[k], all};
        for (int j = 0; j < 2; j++) {
            sp_group *x = t[j];
            x->runs++;
            x->finished += !strcmp(r->status, "FINISHED");
            x->failed += !strcmp(r->status, "FAILED");
            x->unfinished += strcmp(r->status, "FINISHED") && strcmp(r->status, "FAILED");
            x->restarted += r->attempts > 1;
            x->unthreaded += !th;
            if (!isnan(r->start_time) && !isnan(r->end_time) && r->end_time > r->start_time)
                x->core_s += (r->end_time - r->start_time) * (th ? th : 1), x->timed++;
            if (!isnan(train_s)) x->train_core_s += train_s * (th ? th : 1);
            if (r->host[0]) db_kernel_list_add(x->hosts, sizeof x->hosts, r->host);
            for (const char *p = kern; *p;) {
                char one[64];
                size_t len = strcspn(p, ",");
                snprintf(one, sizeof one, "%.*s", (int)len, p);
                db_kernel_list_add(x->kernels, sizeof x->kernels, one);
                p += len;
                while (*p == ',' || *p == ' ') p++;
            }
        }
        if (strcmp(r->status, "FINISHED") || r->attempts > 1) {
            size_t l = strlen(notes);
            if (l + 200 < sizeof notes)
                snprintf(notes + l, sizeof notes - l, "%s%s (%s, %d attempt%s%s)", l ? ", " : "", r->run_id, r->status,
                         r->attempts, r->attempts == 1 ? "" : "s", isnan(r->deleted_time) ? "" : ", deleted from the "
                         "registry's listings");
        }
    }
    fprintf(f, "## What was spent\n\nFrom the registry (every run it holds, finished or not): core-hours as each run's "
               "start → end time × its threads (an upper bound: a run resumed in a later session counts the pause) "
               "and as its training seconds × threads (pauses left out; trained runs only), the machines it names "
               "and the OpenBLAS kernels the runs recorded. *Not finished*: runs left SCHEDULED, RUNNING or KILLED "
               "(lost with a machine or abandoned); *started again*: more than one attempt (resumed, or trained again "
               "after a machine was replaced). Runs lost with a machine before any snapshot are in no registry and "
               "not counted (PREREGISTRATION.md's pilot log names them).\n\n"
               "| group | runs | finished | failed | not finished | started again | core-h (start → end) | "
               "core-h (training) | machines | OpenBLAS kernels |\n"
               "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |\n");
    for (int k = 0; k <= ng; k++) {
        const sp_group *x = k < ng ? &g[k] : all;
        char span[32] = "not recorded", train[32] = "—";
        if (x->timed) snprintf(span, sizeof span, "%.2f%s", x->core_s / 3600, x->timed < x->runs ? "*" : "");
        if (x->train_core_s > 0) snprintf(train, sizeof train, "%.2f", x->train_core_s / 3600);
        fprintf(f, "| %s%s%s | %d | %d | %d | %d | %d | %s | %s | %s | %s |\n", k < ng ? "" : "**", x->group,
                k < ng ? "" : "**", x->runs, x->finished, x->failed, x->unfinished, x->restarted, span, train,
                x->hosts[0] ? x->hosts : "not recorded", x->kernels[0] ? x->kernels : "not recorded");
    }
    if (all->timed < all->runs)
        fprintf(f, "\n\\* %d run%s recorded no start time (the bench's cost runs record their rounds, not a span; "
                   "runs never started): left out of that column.\n", all->runs - all->timed,
                all->runs - all->timed == 1 ? "" : "s");
    if (all->unthreaded)
        fprintf(f, "\n%d run%s recorded neither an environment event nor train.threads; counted as one thread.\n",
                all->unthreaded, all->unthreaded == 1 ? "" : "s");
    if (notes[0]) fprintf(f, "\nNot finished or started again: %s.\n", notes);
    fprintf(f, "\n");
    free(rows);
    free(g);
    free(sr.r);
    return 0;
}

/* ---- the report: claims as data (claims.h) over the run set (runset.h) ---- */

static long run_tokens(const paper_run *r) { return r->steps * r->batch * r->seq_len; }

static const char *pr_verdict_md(claims_verdict v) {
    switch (v) {
    case CV_YES: return "**reproduced**";
    case CV_MAGNITUDE: return "**direction reproduced, magnitude differs**";
    case CV_NO: return "**not reproduced**";
    case CV_INCONCLUSIVE: return "*inconclusive*";
    case CV_UNINFORMATIVE: return "*uninformative*";
    case CV_DESCRIBED: return "described";
    case CV_NOT_REACHED: return "operating point not reached";
    case CV_PREMISE: return "not judged (premise failed)";
    case CV_NOT_MEASURED: break;
    }
    return "not measured";
}

/* What a quantity is, for the rule text. */
static const struct {
    const char *q, *what;
} pr_quantities[] = {
    {"value", "the mean over seeds (95 % t interval)"},
    {"diff", "the paired difference, run − its partner of the same seed (95 % t interval over seeds)"},
    {"rel", "the paired relative difference, run ÷ its partner of the same seed − 1 (95 % t interval over seeds)"},
    {"within", "the within-run difference of the two metrics (95 % t interval over seeds)"},
    {"vs_curve", "the paired relative difference against the partner's τ curve interpolated at the run's α (95 % t "
                 "interval over seeds)"},
    {"rho", "Spearman ρ, mean over seeds (95 % t interval; one seed: its bootstrap interval over windows)"},
    {"bench_ratio", "the median per-round step ratio to plain of one measurement (bracket: interquartile range over "
                    "rounds — a dispersion, not a confidence interval)"},
    {"bench_gap", "A's median step ratio − B's, one measurement each (bracket: A's quartiles against B's — a "
                  "dispersion)"},
    {"bench_rss", "the ratio of peak RSS (one process each: no interval)"},
    {"bench_sparse", "the sparse-inference speed-up over dense of one measurement (bracket: interquartile range over "
                     "rounds — a dispersion)"},
};

static void pr_rule(const claims_row *r, char *out, size_t n) {
    const char *what = r->quantity;
    for (size_t k = 0; k < sizeof pr_quantities / sizeof pr_quantities[0]; k++)
        if (!strcmp(pr_quantities[k].q, r->quantity)) what = pr_quantities[k].what;
    if (!strcmp(r->expect, "none")) {
        snprintf(out, n, "described, not judged: %s", what);
        return;
    }
    int above = !strcmp(r->expect, "above");
    char thr[48], thr_hi[48];
    snprintf(thr, sizeof thr, "%+.*f%s%s", r->digits, r->threshold * r->scale, r->unit[0] ? " " : "", r->unit);
    snprintf(thr_hi, sizeof thr_hi, "%+.*f%s%s", r->digits, r->threshold_hi * r->scale, r->unit[0] ? " " : "", r->unit);
    char band[128];
    if (!strcmp(r->expect, "within")) snprintf(band, sizeof band, "the band [%s, %s]", thr, thr_hi);
    else snprintf(band, sizeof band, "%s (%s is the claimed side)", thr, above ? "above" : "below");
    if (!strncmp(r->quantity, "bench_", 6)) /* one measurement: a dispersion rule, never a verdict from it alone */
        snprintf(out, n, "%s: a dispersion rule — where the bracket lies against %s is said in words; one "
                 "measurement's rounds are not independent repeats, so the row is never called reproduced or not "
                 "reproduced from them alone: inconclusive until repeated measurements give an interval", what, band);
    else if (!strcmp(r->expect, "within"))
        snprintf(out, n, "%s: reproduced if its interval lies wholly inside [%s, %s]; not reproduced if wholly outside; "
                 "otherwise inconclusive", what, thr, thr_hi);
    else
        snprintf(out, n, "%s: reproduced if its interval lies wholly %s %s%s; not reproduced if wholly %s; otherwise "
                 "inconclusive", what, above ? "above" : "below", thr,
                 isnan(r->paper_value) ? "" : " and holds the paper's value (outside it: direction reproduced, magnitude "
                                              "differs)",
                 above ? "below" : "above");
    size_t l = strlen(out);
    if (!isnan(r->ceiling) && l < n)
        snprintf(out + l, n - l, "; uninformative if the reference's mean is at or above %g (the ceiling)", r->ceiling);
    l = strlen(out);
    if (!isnan(r->floor) && l < n)
        snprintf(out + l, n - l, "; uninformative if every variant's mean is below %g (a trivial heuristic's level)",
                 r->floor);
    l = strlen(out);
    if (!isnan(r->alpha_within) && l < n)
        snprintf(out + l, n - l, "; not judged (operating point not reached) when the α it reads is more than %g from "
                 "the paper's %.3f", r->alpha_within, r->alpha);
    l = strlen(out);
    if (!isnan(r->range_lo) && l < n)
        snprintf(out + l, n - l, "; a t interval that leaves the quantity's range [%g, %g] is cut to it (it keeps its "
                 "coverage, the true value lying in the range) and the seeds are shown beside it",
                 r->range_lo * r->scale, r->range_hi * r->scale);
    l = strlen(out);
    if (!isnan(r->effect) && isnan(r->paper_value) && l < n && strcmp(r->expect, "none"))
        snprintf(out + l, n - l, "; underpowered when the MDE exceeds %g%s%s (%s)", r->effect * r->scale,
                 r->unit[0] ? " " : "", r->unit, r->effect_source[0] ? r->effect_source : "the row's effect =");
}

static void pr_paper_cell(const claims_row *r, char *out, size_t n) {
    if (isnan(r->paper_value)) snprintf(out, n, "%s", r->paper);
    else if (!strncmp(r->quantity, "bench_", 6))
        snprintf(out, n, "%s (%.*f)", r->paper, r->digits, r->paper_value);
    else
        snprintf(out, n, "%s (%+.*f%s%s)", r->paper, r->digits, r->paper_value * r->scale, r->unit[0] ? " " : "",
                 r->unit);
}

/* Markdown cells hold no '|' and no newline. */
static void pr_cell(FILE *f, const char *s) {
    fputc(' ', f);
    for (; *s; s++) fputs(*s == '|' ? "\\|" : *s == '\n' ? " " : (char[2]){*s, 0}, f);
    fputs(" |", f);
}

static void pr_ours(const claims_result *res, char *out, size_t n) {
    out[0] = 0;
    if (!res->ne) { /* nothing measured: not measured, or a verdict without a result (a reference at the ceiling) */
        snprintf(out, n, "%s", res->why[0] ? res->why : "not measured");
        return;
    }
    if (res->premise[0]) snprintf(out, n, "**%s** — ", res->premise);
    for (int k = 0; k < res->ne; k++) {
        size_t l = strlen(out);
        snprintf(out + l, n - l, "%s%s%s%s", k ? "; " : "", res->e[k].label, res->e[k].label[0] ? ": " : "",
                 res->e[k].ours);
        if (res->row->decide[0]) { /* each element's own verdict; the deciding one says so */
            l = strlen(out);
            snprintf(out + l, n - l, " → %s (%s)", pr_verdict_md(res->e[k].v),
                     strcmp(res->e[k].label, res->row->decide) ? "secondary: does not decide the row" : "decides the row");
        }
    }
    size_t l = strlen(out);
    if (res->why[0] && l < n) snprintf(out + l, n - l, " — %s", res->why); /* guards, unlike tokens, above-ideal */
}

/* Plan line of GROUP, or -1. */
static int pr_plan_line(const paper_plan *plan, const char *group) {
    for (int k = 0; k < plan->n; k++)
        if (!strcmp(plan->lines[k].group, group)) return k;
    return -1;
}

/* The plan's questions (`[question N]` of the claims file): each with the rows that answer it, their
 * verdicts, and whether it is answered — every judged row measured (a verdict other than *not
 * measured*) and no run left in the plan groups it names.  A group this plan has not (the claims file
 * serves every preset; tests/integration/plans.sh checks the decisive plan has them all) is said, and
 * keeps the question from being answered.  Rows that are described, not judged (context rows, and
 * rows without a threshold), are shown in parentheses and not counted. */
static void pr_questions(FILE *f, const claims_file *cf, const claims_result *res, const paper_plan *plan,
                         const int *left) {
    if (!cf->n_questions) return;
    fprintf(f, "## Questions\n\nThe plan's questions and the rows that answer them, with their verdicts (rows that "
               "are described, not judged, in parentheses). A question is *answered* when each of its judged rows is "
               "measured and the plan groups it names have no runs left, *partly* when some rows are measured, *not "
               "yet* when none is; the rows' own lines below give the interval, n and MDE.\n\n"
               "| question | answered | rows | runs left in its groups |\n| --- | --- | --- | --- |\n");
    for (int q = 0; q < cf->n_questions; q++) {
        const claims_question *qu = &cf->questions[q];
        char ids[CLAIMS_TEXT], cell[8192] = "", groups[CLAIMS_TEXT], runs_left[2048] = "", unmeasured[512] = "";
        int judged = 0, measured = 0, pending = 0;
        snprintf(ids, sizeof ids, "%s", qu->rows);
        for (char *save = NULL, *w = strtok_r(ids, " \t,", &save); w; w = strtok_r(NULL, " \t,", &save))
            for (int k = 0; k < cf->n; k++) {
                if (strcmp(cf->rows[k].id, w)) continue;
                const int shown = cf->rows[k].context || !strcmp(cf->rows[k].expect, "none");
                size_t l = strlen(cell);
                snprintf(cell + l, sizeof cell - l, "%s%s%s %s%s", l ? "; " : "", shown ? "(" : "", w,
                         res[k].v == CV_NOT_MEASURED ? "not measured" : pr_verdict_md(res[k].v), shown ? ")" : "");
                if (!shown) judged++, measured += res[k].v != CV_NOT_MEASURED;
                if (!shown && res[k].v == CV_NOT_MEASURED) {
                    size_t u = strlen(unmeasured);
                    snprintf(unmeasured + u, sizeof unmeasured - u, "%s%s", u ? ", " : "", w);
                }
                break;
            }
        snprintf(groups, sizeof groups, "%s", qu->groups);
        for (char *save = NULL, *w = strtok_r(groups, " \t,", &save); w; w = strtok_r(NULL, " \t,", &save)) {
            const int k = pr_plan_line(plan, w);
            if (k >= 0 && !left[k]) continue;
            size_t l = strlen(runs_left);
            if (k < 0) snprintf(runs_left + l, sizeof runs_left - l, "%s%s: not in this plan", l ? "; " : "", w);
            else if (left[k] < 0) snprintf(runs_left + l, sizeof runs_left - l, "%s%s: not known here", l ? "; " : "", w);
            else snprintf(runs_left + l, sizeof runs_left - l, "%s%s: %d", l ? "; " : "", w, left[k]);
            pending = 1;
        }
        const char *state = !judged     ? (strstr(cell, "not measured") || pending ? "partly" : "answered")
                          : !measured   ? "not yet"
                          : measured == judged && !pending ? "answered"
                                                           : "partly";
        fprintf(f, "|");
        pr_cell(f, qu->text);
        fprintf(f, " %s%s |", state, judged ? "" : " (described rows only)");
        pr_cell(f, cell);
        /* nothing left to run, yet a judged row unmeasured: the plan as written cannot answer it */
        if (runs_left[0]) pr_cell(f, runs_left);
        else if (unmeasured[0])
            fprintf(f, " %s; %s: no group of this plan measures %s |", qu->groups[0] ? "none" : "— (names no groups)",
                    unmeasured, strchr(unmeasured, ',') ? "them" : "it");
        else fprintf(f, " %s |", qu->groups[0] ? "none" : "— (names no groups)");
        fprintf(f, "\n");
    }
    fprintf(f, "\n");
}

/* Whether row r is a TSA row: it reads TSA runs, or TSA's sparse inference. */
static int pr_tsa_row(const claims_row *r) {
    return strstr(r->runs, "depth_routing=tsa") || r->form[0] || r->alpha_def[0] || r->sparse[0] ||
           !strcmp(r->quantity, "bench_sparse") || !strcmp(r->bench_a, "cost-paper-s-tsa");
}

/* The form a TSA row read: the claims file's form / alpha_def / sparse, defaults gatelab / hard / gatelab
 * (the form every round-one row read); "no skipping" for a soft row that names no sparse form; "—" for
 * other rows. */
static void pr_form(const claims_row *r, char *out, size_t n) {
    if (!pr_tsa_row(r)) {
        snprintf(out, n, "—");
        return;
    }
    /* a soft row with no sparse form named read the soft model: nothing was skipped */
    const int soft_only = !strcmp(r->alpha_def, "soft") && !r->sparse[0];
    /* a hard row whose operating point is judged on the paper's soft α says so */
    const int paper_point = strcmp(r->alpha_def, "soft") && strstr(r->alpha_metric, "train/alpha_paper.");
    snprintf(out, n, "model %s; α %s%s; %s%s", r->form[0] ? r->form : "gatelab", r->alpha_def[0] ? r->alpha_def : "hard",
             paper_point ? " (operating point on the paper's α)" : "", soft_only ? "no skipping" : "sparse ",
             soft_only ? "" : r->sparse[0] ? r->sparse : "gatelab");
}

/* The order of verdicts when several claims share a summary line: the weakest decides, as in claims_combine. */
static int pr_rank(claims_verdict v) {
    switch (v) {
    case CV_NO: return 0;
    case CV_NOT_MEASURED: return 1;
    case CV_NOT_REACHED:
    case CV_PREMISE: return 2;
    case CV_UNINFORMATIVE: return 3;
    case CV_INCONCLUSIVE: return 4;
    case CV_MAGNITUDE: return 5;
    case CV_YES: return 6;
    case CV_DESCRIBED: break;
    }
    return 7;
}

/* The first screen: one line per `[summary N]` of the claims file — the claims in plain words, their
 * verdict (the claims' combined verdict over every row of each claim number; where the numbers of one
 * line differ, each is named), the one number of the row it names, and the scale it was tested at. */
static void pr_summary(FILE *f, const claims_file *cf, const claims_result *res) {
    if (!cf->n_summary) return;
    fprintf(f, "## What to believe\n\n| claims | in plain words | verdict | the number [interval] | tested at |\n"
               "| --- | --- | --- | --- | --- |\n");
    for (int q = 0; q < cf->n_summary; q++) {
        const claims_summary *sm = &cf->summary[q];
        char ids[64], verdict[512] = "", each[512] = "";
        claims_verdict worst = CV_DESCRIBED;
        int nnum = 0, differ = 0;
        claims_verdict first = CV_DESCRIBED;
        snprintf(ids, sizeof ids, "%s", sm->claims);
        for (char *save = NULL, *w = strtok_r(ids, " \t,", &save); w; w = strtok_r(NULL, " \t,", &save)) {
            claims_verdict v = claims_combine_number(res, cf->n, w);
            if (!nnum) first = v;
            else differ |= v != first;
            if (pr_rank(v) < pr_rank(worst)) worst = v;
            /* the parts of claim w ("9", "9 (depth, Q1)" …) that are judged: named when their verdicts differ */
            char parts[400] = "";
            int nparts = 0, pdiffer = 0;
            claims_verdict pv0 = CV_DESCRIBED;
            size_t wl = strlen(w);
            for (int i = 0; i < cf->n; i++) {
                const char *c = cf->rows[i].claim;
                if (strncmp(c, w, wl) || (c[wl] && strncmp(c + wl, " (", 2))) continue;
                int seen = 0;
                for (int j = 0; j < i; j++) seen |= !strcmp(cf->rows[j].claim, c);
                claims_verdict pv = claims_combine(res, cf->n, c);
                if (seen || pv == CV_DESCRIBED) continue;
                if (!nparts) pv0 = pv;
                else pdiffer |= pv != pv0;
                size_t l = strlen(parts);
                snprintf(parts + l, sizeof parts - l, "%s%s: %s", l ? ", " : "", c, pr_verdict_md(pv));
                nparts++;
            }
            size_t l = strlen(each);
            snprintf(each + l, sizeof each - l, "%sclaim %s %s%s%s%s", l ? "; " : "", w, pr_verdict_md(v),
                     pdiffer ? " — its parts: " : "", pdiffer ? parts : "", "");
            differ |= pdiffer;
            nnum++;
        }
        if (differ) snprintf(verdict, sizeof verdict, "%s (%s)", pr_verdict_md(worst), each);
        else snprintf(verdict, sizeof verdict, "%s", pr_verdict_md(worst));
        char number[CLAIMS_TEXT] = "—", basis[300] = "";
        for (int i = 0; i < cf->n; i++) {
            if (strcmp(cf->rows[i].id, sm->row)) continue;
            const claims_result *r = &res[i];
            int k = 0;
            while (sm->element[0] && k < r->ne && strcmp(r->e[k].label, sm->element)) k++;
            if (k < r->ne) {
                char b[400];
                claims_elem_brief(r->row, &r->e[k], b, sizeof b);
                /* the shown row's own verdict where the line's differs (another row of the claims decided it) */
                char own[96] = "";
                if (r->v != worst && r->v != CV_DESCRIBED)
                    snprintf(own, sizeof own, " — this row %s", pr_verdict_md(r->v));
                snprintf(number, sizeof number, "row %s%s%s: %s%s", r->row->id, r->e[k].label[0] ? ", " : "",
                         r->e[k].label, b, r->v == CV_NOT_REACHED ? " — not judged: operating point not reached"
                         : r->v == CV_PREMISE     ? " — not judged: premise failed"
                                                  : own);
            } else {
                snprintf(number, sizeof number, "row %s: %s", r->row->id, pr_verdict_md(r->v));
            }
            snprintf(basis, sizeof basis, "%s", r->basis);
        }
        char at[CLAIMS_TEXT + 320];
        snprintf(at, sizeof at, "%s%s%s", sm->scale, sm->scale[0] && basis[0] ? "; " : "", basis);
        fprintf(f, "|");
        pr_cell(f, sm->claims);
        pr_cell(f, sm->text);
        pr_cell(f, verdict);
        pr_cell(f, number);
        pr_cell(f, at[0] ? at : "—");
        fprintf(f, "\n");
    }
    fprintf(f, "\nEach line's verdict combines every row of its claims (a claim N covers the rows of claim N and of "
               "\"N (…)\"; context rows are shown, not counted): not reproduced if any row is; otherwise not measured, "
               "operating point not reached, uninformative or inconclusive if any row is; otherwise direction "
               "reproduced, magnitude differs if any row is; otherwise reproduced. The questions, the claims and "
               "every row follow; methods, spending and disclosures after them.\n\n");
}

/* One cell of the paper's table: "mean [lowest, highest]" over the runs that have its metric, in per cent for
 * the TLOps column; "—" where the line reads no such column, "not recorded" where no run has it. */
static void pr_table_cell(const claims_cell *c, int col, int n_runs, char *out, size_t n) {
    const double k = col == CLAIMS_COL_TLOPS ? 100 : 1;
    const char *u = col == CLAIMS_COL_TLOPS ? " %" : "";
    const int d = col == CLAIMS_COL_TLOPS ? 1 : 4;
    if (!c->key[0] && !c->n) snprintf(out, n, "%s", n_runs ? "—" : "");
    else if (!c->n) snprintf(out, n, "not recorded");
    else if (c->n == 1) snprintf(out, n, "%.*f%s", d, k * c->mean, u);
    else snprintf(out, n, "%.*f%s [%.*f, %.*f]", d, k * c->mean, u, d, k * c->lo, d, k * c->hi);
    if (c->n && c->n < n_runs) {
        size_t l = strlen(out);
        snprintf(out + l, n - l, " (%d of %d runs)", c->n, n_runs);
    }
}

/* The paper's results table, line by line beside the same quantities of our runs of its model and settings
 * (`[table N]` of the claims file): described, not judged; the rows it names judge it. */
static void pr_paper_table(FILE *f, const claims_file *cf, const runset *rs) {
    if (!cf->n_tables) return;
    fprintf(f, "## The paper's table beside ours\n\nThe paper's published numbers, line by line, beside the same "
               "quantities of our runs of its own model at its settings: the mean over seeds [lowest, highest seed]; "
               "n is the finished runs the line picks. Described, not judged — the rows in the last column judge "
               "them, with intervals and pairing. Quality is validation loss in nats (token accuracy on the toy tasks) "
               "on the whole split, final weights (the toy tasks' soft accuracy at the best evaluation, where the paper "
               "reads it); *soft* runs every block, *skipping done* really skips (the paper's sparse form, its "
               "`sparse_infer.py`: p ≥ 0.5 halts, a halted token's attention update is dropped and its FFN not run, a "
               "kept token's update unscaled; gatelab's: p > 0.5 skips the token's whole block, a kept token keeps its "
               "(1 − p) scale). α is the active fraction: "
               "the paper's (mean 1 − p over routed blocks and tokens) and the hard one measured with the skipping "
               "done; TLOps saved at the paper's α, as it computes them.\n\n"
               "| benchmark | model | the paper | n | soft | skipping done (paper's form) | skipping done "
               "(gatelab's form) | α (paper's) | α (hard) | TLOps saved | judged in rows |\n"
               "| --- | --- | --- | ---: | --- | --- | --- | --- | --- | --- | --- |\n");
    for (int q = 0; q < cf->n_tables; q++) {
        const claims_table *t = &cf->tables[q];
        claims_table_result tr;
        claims_table_eval(t, rs, &tr);
        char nr[32];
        snprintf(nr, sizeof nr, "%d", tr.n_runs);
        fprintf(f, "|");
        pr_cell(f, t->benchmark);
        pr_cell(f, t->model);
        pr_cell(f, t->paper);
        pr_cell(f, tr.n_runs ? nr : "0 (not run yet)");
        for (int c = 0; c < CLAIMS_COLS; c++) {
            char cell[160];
            pr_table_cell(&tr.c[c], c, tr.n_runs, cell, sizeof cell);
            pr_cell(f, cell);
        }
        pr_cell(f, t->rows[0] ? t->rows : "—");
        fprintf(f, "\n");
    }
    fprintf(f, "\n");
}

/* Primary endpoints: Holm's correction across the rows the claims file marks primary = 1. */
static void pr_primary(FILE *f, const claims_file *cf, const claims_result *res, int m, const double *adj) {
    int np = 0;
    for (int i = 0; i < cf->n; i++) np += cf->rows[i].primary;
    fprintf(f, "## Primary endpoints\n\n");
    if (!np) {
        fprintf(f, "No row of the claims file is marked `primary = 1`: the pre-registration of these runs "
                   "(PREREGISTRATION.md) named no primary rows, so none is named after the results. Every judged row "
                   "is **secondary** — judged at its own 95 %% interval, with no correction for the %d rows judged "
                   "— and every context or threshold-free row is descriptive. Read a single *reproduced* among many "
                   "secondary rows as a lead, not a finding.\n\n", cf->n);
        return;
    }
    fprintf(f, "Holm's step-down correction across the rows marked `primary = 1` (named in the pre-registration "
               "before their runs; round one named none, so every round-one row is secondary): each row's one-sided "
               "t test of its deciding element against its threshold, the p values sorted, the k-th smallest compared "
               "with 0.025 / (m − k + 1) (the two-sided 5 %% of the rows' 95 %% intervals); a primary row is "
               "reproduced or not reproduced only where its adjusted p is below 0.025, inconclusive otherwise. A "
               "primary row whose premise fails (not measured, operating point not reached, a guard) leaves the family: "
               "the family shrinks, the rule does not change. Family now: m = %d of %d.\n\n"
               "| row | claim | adjusted p (claimed side) | verdict after Holm |\n| --- | --- | ---: | --- |\n", m, np);
    for (int i = 0; i < cf->n; i++) {
        if (!cf->rows[i].primary) continue;
        char p[64];
        if (isnan(adj[i])) snprintf(p, sizeof p, "— (left the family)");
        else snprintf(p, sizeof p, "%.4g", adj[i]);
        fprintf(f, "| %s | %s | %s | %s |\n", cf->rows[i].id, cf->rows[i].claim, p, pr_verdict_md(res[i].v));
    }
    fprintf(f, "\n");
}

static int pr_rows(FILE *f, const claims_file *cf, const claims_result *res, const paper_plan *plan, const int *left,
                   int *n_rows) {
    pr_questions(f, cf, res, plan, left);
    fprintf(f, "## Claims\n\nEach claim's verdict combines its rows (context rows are shown, not counted): not "
               "reproduced if any row is; otherwise not measured, operating point not reached, uninformative or "
               "inconclusive if any row is; "
               "otherwise direction reproduced, magnitude differs if any row is; otherwise reproduced.\n\n"
               "| claim | verdict | rows |\n| --- | --- | --- |\n");
    for (int i = 0; i < cf->n; i++) {
        int seen = 0;
        for (int j = 0; j < i; j++) seen |= !strcmp(cf->rows[j].claim, cf->rows[i].claim);
        if (seen) continue;
        char ids[256] = "";
        for (int j = i; j < cf->n; j++)
            if (!strcmp(cf->rows[j].claim, cf->rows[i].claim)) {
                size_t l = strlen(ids);
                snprintf(ids + l, sizeof ids - l, "%s%s%s", l ? ", " : "", cf->rows[j].id,
                         cf->rows[j].context ? " (context)" : "");
            }
        fprintf(f, "| %s | %s | %s |\n", cf->rows[i].claim, pr_verdict_md(claims_combine(res, cf->n, cf->rows[i].claim)),
                ids);
    }
    fprintf(f, "\n## Rows\n\nEvery row is *secondary* (judged at its own 95 %% interval, uncorrected) unless marked "
               "**primary** (Holm-corrected, section \"Primary endpoints\") or described, not judged. *Form* (TSA rows): "
               "the model form read (gatelab's or the paper's code), α's definition (hard: the share of (token, block) "
               "pairs computed on the validation split with the skipping done; soft: the paper's mean p) and the "
               "sparse form (gatelab: the whole block skipped; paper: the FFN's compute only).\n\n"
               "| row | claim | the paper says | ours [interval] | verdict | measured | form | scale and budget |\n"
               "| --- | --- | --- | --- | --- | --- | --- | --- |\n");
    for (int i = 0; i < cf->n; i++) {
        const claims_result *r = &res[i];
        char paper[CLAIMS_TEXT + 64], ours[CLAIMS_ELEMS * CLAIMS_TEXT + 64];
        pr_paper_cell(r->row, paper, sizeof paper);
        pr_ours(r, ours, sizeof ours);
        fprintf(f, "|");
        pr_cell(f, r->row->id);
        pr_cell(f, r->row->claim);
        pr_cell(f, paper);
        pr_cell(f, ours);
        char verdict[160];
        snprintf(verdict, sizeof verdict, "%s%s", pr_verdict_md(r->v),
                 r->row->primary ? " (primary)" : r->row->context || !strcmp(r->row->expect, "none") ? " (descriptive)"
                                                                                                  : " (secondary)");
        pr_cell(f, verdict);
        pr_cell(f, r->measured[0] ? r->measured : "—");
        char form[96];
        pr_form(r->row, form, sizeof form);
        pr_cell(f, form);
        pr_cell(f, r->basis[0] ? r->basis : "—");
        fprintf(f, "\n");
        (*n_rows)++;
    }
    return ferror(f) ? -1 : 0;
}

static void pr_provenance(FILE *f, const claims_file *cf, const claims_result *res, const paper_plan *plan,
                          const char *results) {
    fprintf(f, "\n## Verdict rules, notes and provenance of each row\n\n"
               "\"Made by\" gives each row's sweep commands with `--results DIR`: the folder that holds the registry "
               "and run folders (this report read `%s`; a sweep run again there trains nothing it finds finished).\n\n",
            results);
    for (int i = 0; i < cf->n; i++) {
        const claims_result *r = &res[i];
        char rule[1024], cmd[4096];
        pr_rule(r->row, rule, sizeof rule);
        plan_command(plan, r->runs, "DIR", cmd, sizeof cmd); /* the folder is named once, above */
        fprintf(f, "- **%s** (claim %s) — %s. Verdict: %s.", r->row->id, r->row->claim, rule, pr_verdict_md(r->v));
        if (r->row->note[0]) fprintf(f, " Note: %s", r->row->note);
        if (r->runs[0]) {
            fprintf(f, " Runs: %s (trained at commit %s", r->runs, r->commits);
            if (r->kernels[0]) fprintf(f, "; OpenBLAS kernel %s", r->kernels);
            if (r->kernels[0] && r->unrecorded) fprintf(f, ", not recorded for %d of them", r->unrecorded);
            if (!r->kernels[0]) fprintf(f, "; OpenBLAS kernel not recorded");
            fprintf(f, ").");
        }
        if (strcmp(cmd, "—")) fprintf(f, " Made by: %s", cmd);
        fprintf(f, "\n");
    }
}

/* Every forest table gatelab wrote starts with these columns (the panel columns came later): a file that
 * does not is not ours and is never replaced. */
#define PR_FOREST_PREFIX "index\trow\tmean\tlo\thi\tpaper\tverdict"
static int pr_forest_is_own(const char *path) { return fileio_starts_with(path, PR_FOREST_PREFIX); }

/* The forest plot's panel of a row: its unit ("%", "pp", "nats"), "ratio" for the bench's ratios, else
 * "unitless" — rows of one unit share an axis, never rows of different units. */
static const char *pr_panel(const claims_row *r) {
    return r->unit[0] ? r->unit : !strncmp(r->quantity, "bench_", 6) ? "ratio" : "unitless";
}

/* figures/paper_forest.tsv: one line per judged row element with a mean (a row whose operating point was
 * not reached is not judged and left out), in the row's display units, shifted so that the row's threshold
 * is at 0; grouped by panel (one per unit: column panel, 1 …; pindex its line within the panel), so that %,
 * pp, nats and ratios never share an axis.  *panels gets "unit:count:paper" words (paper: 1 when a line of
 * the panel has the paper's value), space-separated. */
static int pr_forest(const char *dir, const claims_result *res, int n, char *path, size_t plen, int *lines,
                     char *panels, size_t panlen, char *err, size_t errlen) {
    snprintf(path, plen, "%s/paper_forest.tsv", dir);
    fileio_out out;
    if (fileio_begin_own(&out, path, "forest table", pr_forest_is_own, err, errlen)) return -1;
    FILE *f = out.f;
    fprintf(f, PR_FOREST_PREFIX "\tpanel\tpindex\tunit\n");
    *lines = 0;
    panels[0] = 0;
    const char *units[16];
    int nu = 0;
    for (int i = 0; i < n; i++) { /* the panels, in the order the rows first name them */
        const char *u = pr_panel(res[i].row);
        int seen = 0;
        for (int k = 0; k < nu; k++) seen |= !strcmp(units[k], u);
        if (!seen && nu < 16) units[nu++] = u;
    }
    for (int k = 0; k < nu; k++) {
        int in_panel = 0, with_paper = 0;
        for (int i = 0; i < n; i++)
            for (int e = 0; e < res[i].ne; e++) {
                const claims_row *r = res[i].row;
                const claims_elem *el = &res[i].e[e];
                if (strcmp(pr_panel(r), units[k]) || isnan(el->s.mean) || !strcmp(r->expect, "none") ||
                    el->v == CV_NOT_REACHED || el->v == CV_PREMISE)
                    continue;
                double t = r->threshold, m = !strncmp(r->quantity, "bench_", 6) ? 1 : r->scale;
                fprintf(f, "%d\t%s%s%s (%s%s)\t%.6g\t", *lines, r->id, el->label[0] ? " " : "", el->label,
                        r->unit[0] ? r->unit : units[k],
                        el->interval == 1 ? "; bar: IQR" : el->interval == 4 ? "; bar cut to range" : "",
                        (el->s.mean - t) * m);
                if (isnan(el->s.lo)) fprintf(f, "nan\tnan\t");
                else fprintf(f, "%.6g\t%.6g\t", (el->s.lo - t) * m, (el->s.hi - t) * m);
                if (isnan(r->paper_value)) fprintf(f, "nan\t");
                else fprintf(f, "%.6g\t", (r->paper_value - t) * m), with_paper = 1;
                fprintf(f, "%s\t%d\t%d\t%s\n", claims_verdict_name(el->v), k + 1, in_panel, units[k]);
                (*lines)++, in_panel++;
            }
        if (in_panel) {
            size_t l = strlen(panels);
            snprintf(panels + l, panlen - l, "%s%s:%d:%d", l ? " " : "", units[k], in_panel, with_paper);
        } else { /* keep the panel numbers contiguous for the plot: a unit with no judged line has no panel */
            for (int j = k; j + 1 < nu; j++) units[j] = units[j + 1];
            nu--, k--;
        }
    }
    return fileio_commit(&out, "forest table", err, errlen);
}

/* A file of the source tree as a reader of the report finds it in a clone
 * ("experiments/paper/claims.ini"), not as this machine's absolute path. */
static const char *pr_tree_path(const char *path) {
    const char *best = NULL;
    for (const char *p = strstr(path, "experiments/"); p; p = strstr(p + 1, "experiments/"))
        if (p == path || p[-1] == '/') best = p;
    return best ? best : path;
}

/* "# preregistered: <commit>" in the plan, into out ("" none). */
static void pr_prereg(const char *plan_path, char *out, size_t n) {
    out[0] = 0;
    FILE *f = fopen(plan_path, "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "# preregistered:", 16)) {
            char *v = line + 16;
            while (*v == ' ') v++;
            v[strcspn(v, " \r\n")] = 0;
            snprintf(out, n, "%s", v);
            break;
        }
    fclose(f);
}

static void write_runs(FILE *f, const paper_run *runs, int nruns) {
    fprintf(f, "\n## Every run\n\nWhole-split validation loss (nats/token ± its standard error over batches of "
               "windows) with what it was measured on (split[first window, last window) scored tokens @ checkpoint "
               "step), the windows the gate ablations (ΔL) were measured on, the training tokens and the run's "
               "training time.\n\n"
               "| run | data | scale | variant | λ | seed | val loss | ± se | measured on | ΔL measured on | "
               "train tokens | α | accuracy | train s |\n"
               "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | --- | --- | ---: | ---: | ---: | ---: |\n");
    for (int i = 0; i < nruns; i++) {
        const paper_run *r = &runs[i];
        char lam[32] = "", acc[32] = "", al[32] = "", on[64], zon[64] = "";
        if (!isnan(r->t.lambda)) snprintf(lam, sizeof lam, "%g", r->t.lambda);
        if (!isnan(r->tok_acc)) snprintf(acc, sizeof acc, "%.4f", r->tok_acc);
        if (!isnan(r->alpha)) snprintf(al, sizeof al, "%.3f", r->alpha);
        db_prov_str(&r->loss_prov, on, sizeof on);
        if (r->loss_step >= 0) snprintf(on + strlen(on), sizeof on - strlen(on), " @%ld", r->loss_step);
        if (!isnan(r->zero_dl)) db_prov_str(&r->zero_prov, zon, sizeof zon);
        fprintf(f, "| %s | %s | %s | %s | %s | %s | %.4f | %.4f | %s | %s | %ld | %s | %s | %.0f |\n", r->t.run_id,
                r->t.data, r->t.scale, r->t.variant, lam, r->t.seed, r->loss, r->loss_se, on, zon, run_tokens(r), al,
                acc, r->wall_s);
    }
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static const struct {
    const char *name, *caption;
} fig_captions[] = {
    {"paper_forest", "Every judged row: its deciding quantity minus the row's threshold (0: the threshold), with its "
                     "interval (the quartiles of one measurement for the bench's ratios: dispersion), and the paper's "
                     "value (cross) on the same shift; one panel per unit (%, pp, nats, ratio, unitless), so rows of "
                     "different units never share an axis. Rows whose operating point was not reached are not judged "
                     "and not drawn."},
    {"paper_pareto", "Claims 3, 5–7: TLOps saved against whole-split validation loss over λ (mean ± sd over seeds), "
                     "the dense model at 0 %, and early exit at the τ matched to TSA's α at λ*."},
    {"paper_alpha_heatmap", "Claim 10: SATFormer's mean gate α per block and KV head (block 0 has no gate), one panel per "
                            "seed side by side (head indices are arbitrary per seed, so they are never averaged), heads "
                            "sorted by α within each block, colour scale from 0; traced probe tokens."},
    {"paper_category", "Claim 11: SATFormer's mean α per block on semantic, structural and functional tokens, mean ± sd "
                       "over seeds."},
    {"paper_ablation", "Claim 12: loss increase when every gate is zeroed or set to its mean (SATFormer), or ResFormer's "
                       "λ1 is zeroed; mean ± sd over seeds."},
    {"paper_loss_time", "Claim 14: validation loss on the training-time evaluation windows (not the whole split: it is "
                        "not recorded at every checkpoint) against training tokens and against time = step × the "
                        "variant's step time from the bench stage (scale s, idle machine), mean ± sd over seeds."},
    {"paper_p_hist", "Claims 1–2: TSA's halting probabilities p on copy and sort at the last traced step, every router "
                     "× probe token, as the share per bin of 0.1, mean ± sd over seeds (dotted: p = 0.5, above which a "
                     "token skips the next block). Mass near 0.5 is where real skipping departs from the soft model "
                     "the router was trained in."},
};

/* The seed-aggregated figures with captions, then links to the per-run figures
 * that `gatelab figures paper-GROUP` drew into out_dir/figures. */
static void write_figures(FILE *f, const char *out_dir, const paper_figs *pf, const char *fig_err) {
    fprintf(f, "\n## Figures\n\n");
    for (size_t k = 0; k < sizeof fig_captions / sizeof fig_captions[0]; k++) {
        int made = 0;
        for (int i = 0; i < pf->n_made; i++) made |= !strcmp(pf->made[i], fig_captions[k].name);
        if (made) fprintf(f, "![%s](figures/%s.png)\n\n%s (`figures/%s.tsv` holds the numbers.)\n\n", fig_captions[k].name,
                          fig_captions[k].name, fig_captions[k].caption, fig_captions[k].name);
    }
    for (int i = 0; i < pf->n_skipped; i++) fprintf(f, "- not drawn: %s\n", pf->skipped[i]);
    if (fig_err && *fig_err) fprintf(f, "- a figure failed: %s\n", fig_err);
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/figures", out_dir);
    DIR *d = opendir(dir);
    if (!d) return;
    char *names[1024];
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) && n < 1024;) {
        size_t l = strlen(e->d_name);
        if (l > 4 && !strcmp(e->d_name + l - 4, ".png") && strncmp(e->d_name, "paper_", 6))
            names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, cmp_str);
    if (n) fprintf(f, "\nPer-run figures (`gatelab figures paper-GROUP`): ");
    for (int i = 0; i < n; i++) {
        if (names[i]) fprintf(f, "%s[%.*s](figures/%s)", i ? ", " : "", (int)strlen(names[i]) - 4, names[i], names[i]);
        free(names[i]);
    }
    if (n) fprintf(f, ".\n");
}

/* Whether a stored param (key, value) holds the plan's want: the same typed value (manifest_parse_key's
 * canonical text, so 0.10 = 0.1 and 1e-2 = 0.01), or the same text where either does not read as key. */
static int pp_same_value(const char *key, const char *value, const char *want) {
    gl_key_value a, b;
    char e[256];
    if (manifest_parse_key(key, value, "the registry", &a, e, sizeof e) ||
        manifest_parse_key(key, want, "the plan", &b, e, sizeof e))
        return !strcmp(value, want);
    return !strcmp(a.text, b.text);
}

/* Whether the registry holds this preset's runs: none of the plan's groups
 * registered, or a run of a group whose params disagree with a fixed
 * override of its plan line (steps=60 in the plan, train.steps = 30 in the
 * run: another preset's registry), written into why; 0 when it matches.  A
 * fixed key is compared with the run's param of that name or ending in
 * ".key" (aliases such as scale= are not compared); numbers as numbers. */
/* The params of the plan's runs, read once for the set (db_set_params), by run then key. */
typedef struct {
    gl_param *p;
    char (*id)[128];
    int n, cap, oom;
} pm_params;

static int pm_on_param(const char *run_id, const char *key, const char *value, void *ctx) {
    pm_params *s = ctx;
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 1024;
        gl_param *p = realloc(s->p, (size_t)cap * sizeof *p);
        if (p) s->p = p;
        char(*id)[128] = p ? realloc(s->id, (size_t)cap * sizeof *id) : NULL;
        if (!p || !id) return s->oom = 1;
        s->id = id;
        s->cap = cap;
    }
    snprintf(s->id[s->n], sizeof s->id[0], "%s", run_id);
    snprintf(s->p[s->n].key, sizeof s->p[0].key, "%s", key);
    snprintf(s->p[s->n].value, sizeof s->p[0].value, "%s", value);
    s->n++;
    return 0;
}

/* Run run_id's params: *np of them from the returned one (NULL, 0: none). */
static const gl_param *pm_of(const pm_params *s, const char *run_id, int *np) {
    int lo = 0, hi = s->n;
    while (lo < hi) { /* the first row of run_id */
        int mid = (lo + hi) / 2;
        if (strcmp(s->id[mid], run_id) < 0) lo = mid + 1;
        else hi = mid;
    }
    int k = lo;
    while (k < s->n && !strcmp(s->id[k], run_id)) k++;
    *np = k - lo;
    return k > lo ? s->p + lo : NULL;
}

/* Whether the registry holds another preset's runs: 1 with why when a run of a plan group (its runs in
 * ls) has a param the plan line's fixed "k=v" words contradict, or no group has any run; 0 when it is
 * the plan's; -1 with err (the params, one set-wide read). */
static int plan_mismatch(gl_db *db, const pr_listing *ls, const paper_plan *plan, char *why, size_t n, char *err,
                         size_t errlen) {
    int registered = 0, bad = 0;
    pm_params pm = {0};
    const gl_set_filter plan_runs = {.prefix = "paper-"};
    if (db_set_params(db, &plan_runs, pm_on_param, &pm, err, errlen) || pm.oom) {
        if (pm.oom) snprintf(err, errlen, "out of memory reading the plan's runs' params");
        free(pm.p), free(pm.id);
        return -1;
    }
    for (int k = 0; k < plan->n && !bad; k++) {
        const plan_line *l = &plan->lines[k];
        char exp[80];
        snprintf(exp, sizeof exp, "paper-%s", l->group);
        int nr = 0;
        const gl_run_row *rows = pr_group_runs(ls, exp, &nr);
        registered += nr;
        for (int r = 0; r < nr && !bad; r++) {
            int np = 0;
            const gl_param *ps = pm_of(&pm, rows[r].run_id, &np);
            char args[2048];
            snprintf(args, sizeof args, "%s", l->args);
            int axis = 0;
            for (char *w = strtok(args, " \t"); w && !bad; w = strtok(NULL, " \t")) {
                if (!strcmp(w, "--axis")) { axis = 1; continue; }
                char *eq = strchr(w, '=');
                if (axis || !eq || eq == w) { axis = 0; continue; }
                *eq = '\0';
                const char *key = w, *want = eq + 1;
                for (int i = 0; i < np; i++) {
                    size_t kl = strlen(key), pl = strlen(ps[i].key);
                    if (strcmp(ps[i].key, key) && !(pl > kl && ps[i].key[pl - kl - 1] == '.' && !strcmp(ps[i].key + pl - kl, key)))
                        continue;
                    int same = pp_same_value(ps[i].key, ps[i].value, want);
                    if (!same) {
                        snprintf(why, n, "run %s of group %s has %s = %s where the plan's line %d says %s=%s",
                                 rows[r].run_id, l->group, ps[i].key, ps[i].value, l->line, key, want);
                        bad = 1;
                    }
                    break;
                }
            }
        }
    }
    free(pm.p), free(pm.id);
    if (!bad && !registered) {
        snprintf(why, n, "no run of the plan's groups (experiments paper-GROUP) is in this registry");
        bad = 1;
    }
    return bad;
}

/* The paper's points of the Pareto figure: the claims file's `pareto = saved|cost LABEL` rows. */
static void pr_paper_points(const claims_file *cf, paper_points *pp) {
    for (int i = 0; i < cf->n; i++) { /* the claims file's `pareto = saved|cost LABEL` rows */
        const claims_row *r = &cf->rows[i];
        if (!r->pareto[0] || isnan(r->paper_value)) continue;
        const char *lab = strchr(r->pareto, ' ') + 1;
        int k = 0;
        while (k < pp->n && strcmp(pp->label[k], lab)) k++;
        if (k == pp->n && pp->n < PAPER_POINTS_MAX) {
            snprintf(pp->label[pp->n], sizeof pp->label[0], "%s", lab);
            pp->saved[pp->n] = pp->rel[pp->n] = NAN;
            pp->n++;
        }
        if (k < pp->n) *(r->pareto[0] == 's' ? &pp->saved[k] : &pp->rel[k]) = r->paper_value;
    }
}

/* The report's methods paragraph. */
static void pr_methods(FILE *f) {
    fprintf(f, "## Methods\n\nLoss is the mean cross-entropy over the **whole validation split** (nats/token). Paired "
               "rows set a run against the run of the same data, scale, budget and seed that differs only in the named "
               "axis; intervals are 95 %% Student t intervals over seeds; every threshold is judged on the interval, "
               "never the mean. A quantity with a range (a share, an accuracy difference) whose t interval leaves that "
               "range has the interval cut to the range (the true value lies in it, so the cut interval keeps its "
               "coverage) and its seeds shown beside it, uncut bounds too: with n = 3 and a bimodal outcome the seeds, "
               "not the interval, say what happened. Each row prints its minimum detectable effect (MDE = (t_{0.975,n−1} + "
               "t_{0.8,n−1})·sd/√n) and says **underpowered** when the claim's own distance from the threshold — the "
               "paper's number, or a distance the claims file names with its source (`effect`) — is below it, "
               "with the seeds that would detect that distance at the measured sd; a row whose claim gives no distance "
               "says so and is never called underpowered. Bench rows are one measurement each: their brackets are "
               "interquartile ranges over interleaved rounds (dispersion, never confidence intervals), said in words and "
               "never the ground of a reproduced or not-reproduced verdict. A claim tested at a scale far below the "
               "paper's tests its *direction* only. Operating point: one policy for every TSA row whose claim names "
               "no λ (`lambda=@alpha`) — the λ whose mean α over seeds (hard, skipping done, where measured) is nearest "
               "the paper's α for that claim, the paper's α read in the paper's own convention (TLOps saved = (1 − α)"
               "(L − 1)/L); each such row states λ* and the α it had, and a row whose nearest α is further than its "
               "`alpha_within` from the paper's is *operating point not reached*: shown, not judged. TSA quality is read "
               "with the skipping done (`hard.*`) where it was measured; a row that fell back to the soft model says "
               "\"soft (hard not measured)\"; each TSA row's *form* column says which model form, α definition and "
               "sparse form it read.\n\n");
}

/* The pre-registration line and the disclosed changes of rule or method. */
static void pr_disclosures(FILE *f, const char *plan_path, const claims_file *cf) {
    char prereg[64];
    pr_prereg(plan_path, prereg, sizeof prereg);
    if (prereg[0]) fprintf(f, "Pre-registration: the rules of this plan were committed at `%s` before its runs.\n\n", prereg);
    else fprintf(f, "Pre-registration: none recorded (the plan has no `# preregistered: <commit>` line).\n\n");
    if (cf->n_disclosures) {
        fprintf(f, "## Disclosed changes of rule or method (made after results were seen)\n\n");
        for (int i = 0; i < cf->n_disclosures; i++) fprintf(f, "%d. %s\n", i + 1, cf->disclosures[i]);
        fprintf(f, "\n");
    }
}

/* Training's totals over the report's runs. */
static void pr_training(FILE *f, const paper_run *runs, int n) {
    double t0 = INFINITY, t1 = -INFINITY, train_s = 0, tokens = 0;
    for (int i = 0; i < n; i++) {
        if (runs[i].t0 < t0) t0 = runs[i].t0;
        if (runs[i].t1 > t1) t1 = runs[i].t1;
        if (!isnan(runs[i].wall_s)) train_s += runs[i].wall_s;
        tokens += (double)run_tokens(&runs[i]);
    }
    if (n)
        fprintf(f, "Training: %d runs, %.1f M tokens in all, %.0f s of training summed over runs; %.2f h of "
                   "wall-clock time with at least one run training (runs in parallel, sharing the machine; %.1f h "
                   "from the first training step to the last, pauses between sessions included).\n\n",
                n, tokens / 1e6, train_s, busy_seconds(runs, n) / 3600.0, (t1 - t0) / 3600.0);
}

int paper_report(gl_db *db, const char *preset, const char *plan_path, const char *results, const char *out_dir,
                 int *n_rows, char *err, size_t errlen) {
    paper_run *runs = NULL;
    int n = 0, rc = -1;
    runset rs = {0};
    pr_listing listing = {0};
    claims_file cf = {0};
    claims_result *res = NULL;
    int *left = NULL, holm_m = 0;
    double *holm_adj = NULL;
    char *progress = NULL;
    size_t progress_n = 0;
    FILE *f = NULL;
    *n_rows = 0;
    paper_plan plan;
    /* a plan that is missing, a folder, empty or malformed is an error: a report of it would judge nothing */
    if (plan_read(plan_path, &plan, err, errlen)) return -1;
    fileio_out out = {0};
    char mismatch[512] = "";
    if (db_runs_list(db, NULL, NULL, &listing.r, &listing.n, err, errlen)) goto done;
    const int mm = plan_mismatch(db, &listing, &plan, mismatch, sizeof mismatch, err, errlen);
    if (mm < 0) goto done;
    char claims_path[4200], path[4200], fig_err[1024] = "";
    const char *slash = strrchr(plan_path, '/');
    snprintf(claims_path, sizeof claims_path, "%.*sclaims.ini", slash ? (int)(slash - plan_path + 1) : 0, plan_path);
    if (claims_load(claims_path, &cf, err, errlen)) goto done;
    if (runset_load(db, NULL, &rs, err, errlen) || pc_view(db, &rs, &runs, &n, err, errlen)) goto done;
    res = calloc((size_t)cf.n, sizeof *res);
    if (!res) {
        snprintf(err, errlen, "out of memory for %d claim rows", cf.n);
        goto done;
    }
    for (int i = 0; i < cf.n; i++) claims_eval(&cf.rows[i], &rs, &res[i]);
    holm_adj = calloc((size_t)cf.n, sizeof *holm_adj);
    if (!holm_adj) {
        snprintf(err, errlen, "out of memory for %d claim rows", cf.n);
        goto done;
    }
    claims_holm(res, cf.n, &holm_m, holm_adj); /* before the figures and the text: a primary row's verdict is Holm's */
    paper_base base; /* the figures' runs: the claims file's base data set at its base scale */
    claims_base_data(&cf, base.data, sizeof base.data);
    snprintf(base.title, sizeof base.title, "%s", cf.data_title[0] ? cf.data_title : base.data);
    claims_base_scale(&rs, base.data, base.scale, sizeof base.scale);
    if (!base.scale[0]) snprintf(base.scale, sizeof base.scale, "s");
    snprintf(path, sizeof path, "%s/figures", out_dir);
    if (fileio_mkdir_p(path, err, errlen)) goto done;
    paper_figs figs;
    paper_points pp = {0};
    pr_paper_points(&cf, &pp);
    if (paper_figures(db, &rs, runs, n, &base, &pp, path, &figs, fig_err, sizeof fig_err))
        fprintf(stderr, "gatelab paper report: %s (the report goes on without it)\n", fig_err);
    char forest[4300], panels[512];
    int flines = 0;
    if (pr_forest(path, res, cf.n, forest, sizeof forest, &flines, panels, sizeof panels, err, errlen)) goto done;
    if (!flines) paper_fig_skip(&figs, "paper_forest", "no row has a deciding value yet");
    else if (paper_fig_forest(forest, path, flines, panels, &figs, fig_err, sizeof fig_err))
        fprintf(stderr, "gatelab paper report: %s (the report goes on without it)\n", fig_err);
    snprintf(path, sizeof path, "%s/REPORT.md", out_dir);
    if (fileio_begin(&out, path, "report", err, errlen)) goto done;
    f = out.f;
    if (mm)
        fprintf(f, "# %s — registry `%s` is not preset `%s`'s\n\n"
                   "**This registry does not hold the runs of preset `%s`**: %s. The claims below are judged on "
                   "whatever runs it holds; run `gatelab paper report` with the preset that trained them.\n\n",
                cf.title[0] ? cf.title : "gatelab reproduction report", db_path(db), preset, preset, mismatch);
    else
        fprintf(f, "# %s (preset `%s`)\n\n", cf.title[0] ? cf.title : "gatelab reproduction report", preset);
    fprintf(f, "Generated by `gatelab paper report %s --results %s` from the registry and traces of %d finished runs "
               "and the claims file `%s`; nothing in it is typed by hand. What to believe comes first, then the paper's "
               "table beside ours; the questions, claims and rows follow; methods, spending, the plan and disclosures after them.\n\n",
            preset, results, n, pr_tree_path(claims_path));
    pr_summary(f, &cf, res);
    pr_paper_table(f, &cf, &rs);
    char plan_dir[4200];
    snprintf(plan_dir, sizeof plan_dir, "%.*s", slash ? (int)(slash - plan_path + 1) : 0, plan_path);
    left = calloc((size_t)plan.n, sizeof *left);
    if (!left) {
        snprintf(err, errlen, "out of memory for a plan of %d lines", plan.n);
        goto done;
    }
    /* the plan's progress is printed after the rows, but the questions need what it counts first */
    FILE *pf = open_memstream(&progress, &progress_n);
    if (!pf) {
        snprintf(err, errlen, "out of memory for the plan's progress");
        goto done;
    }
    const int prc = write_progress(pf, &listing, &plan, plan_dir, preset, runs, n, left, err, errlen);
    if (fclose(pf) || prc) goto done;
    if (pr_rows(f, &cf, res, &plan, left, n_rows)) goto write_fail;
    pr_primary(f, &cf, res, holm_m, holm_adj);
    pr_methods(f);
    pr_disclosures(f, plan_path, &cf);
    if (pr_spent(f, db, runs, n, err, errlen)) goto done;
    pr_training(f, runs, n);
    fputs(progress, f);
    pr_provenance(f, &cf, res, &plan, results);
    write_runs(f, runs, n);
    write_figures(f, out_dir, &figs, fig_err);
    f = NULL;
    if (fileio_commit(&out, "report", err, errlen)) goto done;
    rc = 0;
    goto done;
write_fail:
    snprintf(err, errlen, "writing %s failed (disk full?)", path);
done:
    fileio_abort(&out); /* nothing when committed */
    plan_free(&plan);
    free(left);
    free(holm_adj);
    free(progress);
    free(res);
    claims_free(&cf);
    runset_free(&rs);
    free(runs);
    free(listing.r);
    return rc;
}
