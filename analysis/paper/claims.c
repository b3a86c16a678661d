/*
 * claims.c — the one evaluator of claims rows (claims.h); the file reader is
 * claims_file.c.
 *
 * Evaluating a row: pick the runs (runset.h: the row's `runs` words), split
 * them into groups (the run set's one "same but for the seed" rule), choose
 * the group (the operating point lambda=@alpha: the group whose mean α over
 * seeds is nearest the paper's α; `each`: every group an element), compute
 * the quantity per seed — for paired quantities against the run set's one
 * partner of that seed along the row's axis — and summarise it with the
 * statistics kernel (stats.h: mean, sd, 95 % t interval, MDE).  The verdict
 * is decided on the interval only (claims.h lists the verdicts).
 *
 * The MDE of a row is that of a one-sample t test on its per-seed values at
 * two-sided 5 % and 80 % power, (t_{0.975,n−1} + t_{0.8,n−1})·sd/√n; a row
 * is underpowered when the paper's distance from the threshold,
 * |paper_value − threshold| (a direction-only row in nats: 0.01 nats), is below it (the paper's effect could not be
 * told from the threshold at this n even if it were true).
 *
 * Not here: loading runs (runset.c), rendering (paper.c).
 */
#include "analysis/paper/claims.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CL_MAXRUNS 64

/* ---- picking runs ---- */

static int cl_scale_rank(const char *s) {
    static const char *order[] = {"xs", "s", "m", "l", "xl"};
    for (int i = 0; i < 5; i++)
        if (!strcmp(s, order[i])) return i;
    return -1;
}

void claims_base_scale(const runset *rs, const char *data, char *out, size_t n) {
    out[0] = 0;
    for (int i = 0; data[0] && i < rs->n; i++)
        if (!strcmp(rs->r[i].t.data, data) && (!out[0] || !strcmp(rs->r[i].value_residual, "satformer")))
            snprintf(out, n, "%s", rs->r[i].t.scale);
}

/* 1 when text matches pat ("abc*": prefix). */
static int cl_like(const char *text, const char *pat) {
    size_t l = strlen(pat);
    return l && pat[l - 1] == '*' ? !strncmp(text, pat, l - 1) : !strcmp(text, pat);
}

const claims_row *claims_operating_row(const claims_file *cf, const char *data, const char *form) {
    for (int i = 0; i < cf->n; i++) {
        const claims_row *row = &cf->rows[i];
        if (isnan(row->alpha)) continue;
        if (form && strcmp(row->form[0] ? row->form : "gatelab", form)) continue;
        int tsa = 0, at = 0, hit = 0;
        char words[CLAIMS_TEXT];
        snprintf(words, sizeof words, "%s", row->runs);
        for (char *save = NULL, *w = strtok_r(words, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
            tsa |= !strcmp(w, "depth_routing=tsa");
            at |= !strcmp(w, "lambda=@alpha");
            hit |= !strncmp(w, "data=", 5) && cl_like(data, w + 5);
        }
        if (tsa && at && hit) return row;
    }
    return NULL;
}

double claims_operating_alpha(const claims_file *cf, const char *data) {
    const claims_row *row = claims_operating_row(cf, data, NULL);
    return row ? row->alpha : NAN;
}

int claims_row_experiment(const claims_row *row, const char *experiment) {
    char words[CLAIMS_TEXT];
    snprintf(words, sizeof words, "%s", row->runs);
    for (char *save = NULL, *w = strtok_r(words, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
        if (strncmp(w, "experiment=", 11)) continue;
        for (char *s2 = NULL, *a = strtok_r(w + 11, "|", &s2); a; a = strtok_r(NULL, "|", &s2))
            if (cl_like(experiment, a)) return 1;
        return 0;
    }
    return 1;
}

/* 1 when r matches the word key=val (scale and lambda resolved by the caller). */
static int cl_match_word(const runset_run *r, const char *key, const char *val) {
    if (!strcmp(key, "experiment")) { /* "a|b*": any of the alternatives */
        char alt[CLAIMS_TEXT];
        snprintf(alt, sizeof alt, "%s", val);
        for (char *save = NULL, *a = strtok_r(alt, "|", &save); a; a = strtok_r(NULL, "|", &save))
            if (cl_like(r->t.experiment, a)) return 1;
        return 0;
    }
    if (!strcmp(key, "data")) return cl_like(r->t.data, val);
    if (!strcmp(key, "scale")) return !strcmp(r->t.scale, val);
    if (!strcmp(key, "value_residual")) return !strcmp(r->value_residual, val);
    if (!strcmp(key, "depth_routing")) return !strcmp(r->depth_routing, val);
    if (!strcmp(key, "cross_layer")) return !strcmp(r->cross_layer, val);
    if (!strcmp(key, "lambda")) {
        double want;
        return !isnan(r->t.lambda) && !claims_num(val, &want) && fabs(r->t.lambda - want) < 1e-9;
    }
    if (!strcmp(key, "steps")) return r->steps == atol(val);
    if (!strcmp(key, "n_layer")) return r->n_layer == atol(val);
    char v[128]; /* a key the run's stored config predates reads as its default */
    if (strchr(key, '.')) return runset_param_or_default(r, key, v, sizeof v) && !strcmp(v, val);
    return 0;
}

/* Does r match every word of pick except those whose key is skip ("" none)?
 * "@" values other than @base are skipped (the caller resolves them). */
static int cl_match(const runset_run *r, const char *pick, const char *base, const char *skip) {
    char buf[CLAIMS_TEXT];
    snprintf(buf, sizeof buf, "%s", pick);
    for (char *save = NULL, *w = strtok_r(buf, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
        char *eq = strchr(w, '=');
        if (!eq) return 0;
        *eq = 0;
        const char *key = w, *val = eq + 1;
        if (skip[0] && !strcmp(key, skip)) continue;
        if (!strcmp(val, "@base")) val = base;
        else if (val[0] == '@') continue;
        if (!cl_match_word(r, key, val)) return 0;
    }
    return 1;
}

/* ---- reading a metric of a run ---- */

/* The value of one key, or of an analysis pattern with {late}, {early}, {all}
 * (blocks 1..L−1: the later half from 1 + (L−1)/2) and {h} (every KV head),
 * aggregated by agg (mean, gini, share_below X).  NaN when nothing matched. */
static double cl_value(const runset_run *r, const char *key, const char *agg) {
    const char *brace = strchr(key, '{');
    if (!brace) return runset_num(r, key);
    int L = (int)r->n_layer, H = (int)r->n_kv_head, first_late = 1 + (L - 1) / 2;
    char pre[RUNSET_KEY_MAX], post[RUNSET_KEY_MAX], which[16];
    snprintf(pre, sizeof pre, "%.*s", (int)(brace - key), key);
    const char *close = strchr(brace, '}');
    if (!close) return NAN;
    snprintf(which, sizeof which, "%.*s", (int)(close - brace - 1), brace + 1);
    snprintf(post, sizeof post, "%s", close + 1);
    double vals[4096];
    int nv = 0;
    if (!strcmp(which, "h")) { /* one block (each = block put its number in): every KV head */
        for (int h = 0; h < H && nv < 4096; h++) {
            char k[RUNSET_KEY_MAX];
            snprintf(k, sizeof k, "%s%d%s", pre, h, post);
            double v = runset_num(r, k);
            if (!isnan(v)) vals[nv++] = v;
        }
    } else {
        int lo = 1, hi = L - 1;
        if (!strcmp(which, "late")) lo = first_late;
        else if (!strcmp(which, "early")) hi = first_late - 1;
        else if (strcmp(which, "all")) return NAN;
        int per_head = !strncmp(post, ".H{h}", 5);
        for (int l = lo; l <= hi; l++)
            for (int h = 0; h < (per_head ? H : 1) && nv < 4096; h++) {
                char k[RUNSET_KEY_MAX];
                if (per_head) snprintf(k, sizeof k, "%s%d.H%d%s", pre, l, h, post + 5);
                else snprintf(k, sizeof k, "%s%d%s", pre, l, post);
                double v = runset_num(r, k);
                if (!isnan(v)) vals[nv++] = v;
            }
    }
    if (!nv) return NAN;
    if (agg[0] && !strcmp(agg, "gini")) return st_gini(vals, nv);
    if (!strncmp(agg, "share_below ", 12)) {
        double thr = atof(agg + 12);
        int k = 0;
        for (int i = 0; i < nv; i++) k += vals[i] < thr;
        return (double)k / nv;
    }
    return st_describe(vals, nv, 0.95).mean;
}

/* Of the alternatives "a|b|c", the first that every run of runs[0..n) has
 * (else the first any has) into out; returns its index, -1 when none. */
static int cl_choose(const char *alts, const runset_run *const *runs, int n, const char *agg, char *out, size_t on) {
    char buf[CLAIMS_TEXT];
    snprintf(buf, sizeof buf, "%s", alts);
    int idx = 0, any = -1;
    char any_s[CLAIMS_TEXT] = "";
    out[0] = 0;
    for (char *save = NULL, *a = strtok_r(buf, "|", &save); a; a = strtok_r(NULL, "|", &save), idx++) {
        char *k = claims_trim(a);
        int have = 0;
        for (int i = 0; i < n; i++) have += !isnan(cl_value(runs[i], k, agg));
        if (n && have == n) {
            snprintf(out, on, "%s", k);
            return idx;
        }
        if (have && any < 0) any = idx, snprintf(any_s, sizeof any_s, "%s", k);
    }
    if (any >= 0) snprintf(out, on, "%s", any_s);
    return any;
}

static void cl_first_alt(const char *alts, char *out, size_t n) {
    snprintf(out, n, "%.*s", (int)strcspn(alts, "|"), alts);
    char *t = claims_trim(out);
    memmove(out, t, strlen(t) + 1);
}

/* The runs a [table] line picks and each column over them (claims.h). */
void claims_table_eval(const claims_table *t, const runset *rs, claims_table_result *out) {
    memset(out, 0, sizeof *out);
    const runset_run **pk = rs->n ? malloc((size_t)rs->n * sizeof *pk) : NULL;
    int n = 0;
    for (int i = 0; pk && i < rs->n; i++)
        if (cl_match(&rs->r[i], t->runs, "", "")) pk[n++] = &rs->r[i];
    out->n_runs = n;
    for (int c = 0; c < CLAIMS_COLS; c++) {
        claims_cell *cell = &out->c[c];
        cell->mean = cell->lo = cell->hi = NAN;
        if (!t->col[c][0]) continue;
        if (!n || cl_choose(t->col[c], pk, n, "", cell->key, sizeof cell->key) < 0) { /* no run has it */
            cl_first_alt(t->col[c], cell->key, sizeof cell->key);
            continue;
        }
        double sum = 0;
        for (int i = 0; i < n; i++) {
            const double v = cl_value(pk[i], cell->key, "");
            if (isnan(v)) continue;
            if (!cell->n || v < cell->lo) cell->lo = v;
            if (!cell->n || v > cell->hi) cell->hi = v;
            sum += v;
            cell->n++;
        }
        if (cell->n) cell->mean = sum / cell->n;
    }
    free(pk);
}

/* ---- the quantities ---- */

__attribute__((format(printf, 3, 4))) static void cl_app(char *dst, size_t len, const char *fmt, ...) {
    size_t used = strlen(dst);
    if (used + 1 >= len) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(dst + used, len - used, fmt, ap);
    va_end(ap);
}

/* The α a row reads: its alpha_metric, else the hard α of the sparse form it names (hard_paper.* for
 * sparse = paper, hard.* otherwise), the soft count where that is not measured. */
static const char *cl_alpha_metric(const claims_row *row) {
    if (row->alpha_metric[0]) return row->alpha_metric;
    return !strcmp(row->sparse, "paper") ? "val/hard_paper.active_frac|val/final.active_frac"
                                         : "val/hard.active_frac|val/final.active_frac";
}

/* A partner's curve (τ rows prefix…tau<τ>.loss / .active_frac) evaluated at α
 * by linear interpolation between the two τ whose α bracket it (NaN outside
 * the measured range: no extrapolation). */
static double cl_curve_at(const runset_run *b, const char *prefix, double alpha, int *npts) {
    double a[64], l[64];
    int n = 0;
    size_t pl = strlen(prefix);
    for (int i = 0; i < b->nm && n < 64; i++) {
        const char *k = b->m[i].key;
        if (strncmp(k, prefix, pl)) continue;
        const char *dot = strrchr(k, '.');
        if (!dot || strcmp(dot, ".loss")) continue;
        char ak[RUNSET_KEY_MAX];
        snprintf(ak, sizeof ak, "%.*s.active_frac", (int)(dot - k), k);
        double av = runset_num(b, ak);
        if (isnan(av) || isnan(b->m[i].value)) continue;
        a[n] = av;
        l[n] = b->m[i].value;
        n++;
    }
    *npts = n;
    /* the tightest bracket */
    double lo_a = -INFINITY, hi_a = INFINITY, lo_l = NAN, hi_l = NAN;
    for (int i = 0; i < n; i++) {
        if (a[i] <= alpha && a[i] > lo_a) lo_a = a[i], lo_l = l[i];
        if (a[i] >= alpha && a[i] < hi_a) hi_a = a[i], hi_l = l[i];
    }
    if (isnan(lo_l) || isnan(hi_l)) return NAN;
    return hi_a > lo_a ? lo_l + (alpha - lo_a) / (hi_a - lo_a) * (hi_l - lo_l) : lo_l;
}

static void cl_fmt(char *out, size_t n, const claims_row *row, double v) {
    if (isnan(v)) snprintf(out, n, "—");
    else snprintf(out, n, "%+.*f%s%s", row->digits, v * row->scale, row->unit[0] ? " " : "", row->unit);
}

/* The verdict of an interval [lo, hi] (n ≥ 2 or a stated interval) against the row's rule. */
static claims_verdict cl_judge(const claims_row *row, double lo, double hi, int have_interval) {
    if (!strcmp(row->expect, "none")) return CV_DESCRIBED;
    if (!have_interval || isnan(lo) || isnan(hi)) return CV_INCONCLUSIVE;
    int above = !strcmp(row->expect, "above"), within = !strcmp(row->expect, "within");
    int yes = within ? lo > row->threshold && hi < row->threshold_hi : above ? lo > row->threshold : hi < row->threshold;
    int no = within ? hi < row->threshold || lo > row->threshold_hi : above ? hi < row->threshold : lo > row->threshold;
    if (yes) return !isnan(row->paper_value) && (row->paper_value < lo || row->paper_value > hi) ? CV_MAGNITUDE : CV_YES;
    return no ? CV_NO : CV_INCONCLUSIVE;
}

typedef struct {
    const runset *rs;
    const claims_row *row;
    claims_result *res;
    char axis[64], axis_val[64];
    const char *vextra; /* versus's words after the first: they narrow the partners to one */
} cl_ctx;

/* The one partner of a (c->axis=c->axis_val, narrowed by c->vextra), or
 * NULL; *ambiguous counts partners when more than one is left. */
static const runset_run *cl_partner(const cl_ctx *c, const runset_run *a, int *ambiguous) {
    const runset_run *all[CL_MAXRUNS], *hit = NULL;
    int n = runset_partners(c->rs, a, c->axis, c->axis_val, all, CL_MAXRUNS), k = 0;
    *ambiguous = 0;
    for (int i = 0; i < n && i < CL_MAXRUNS; i++)
        if (!c->vextra[0] || cl_match(all[i], c->vextra, "", "")) {
            hit = all[i];
            k++;
        }
    if (k > 1) *ambiguous = k;
    return k == 1 ? hit : NULL;
}

/* Record the runs a result rests on, with their commits and kernels (each run once). */
static void cl_note_run(claims_result *res, const runset_run *r) {
    if (!r || strstr(res->runs, r->t.run_id)) return;
    cl_app(res->runs, sizeof res->runs, "%s%s", res->runs[0] ? ", " : "", r->t.run_id);
    char c[16];
    snprintf(c, sizeof c, "%.7s%s", r->commit[0] ? r->commit : "unknown", r->dirty == 1 ? "+dirty" : "");
    if (!strstr(res->commits, c)) cl_app(res->commits, sizeof res->commits, "%s%s", res->commits[0] ? ", " : "", c);
    if (!r->kernels[0]) {
        res->unrecorded++;
        return;
    }
    char one[64];
    const char *p = r->kernels;
    while (*p) { /* each of the run's kernels, once in the row's list */
        size_t len = strcspn(p, ",");
        snprintf(one, sizeof one, "%.*s", (int)len, p);
        db_kernel_list_add(res->kernels, sizeof res->kernels, one);
        p += len;
        while (*p == ',' || *p == ' ') p++;
    }
}

/* What one element reads and its per-seed values. */
typedef struct {
    char ma[CLAIMS_TEXT], mb[CLAIMS_TEXT], am[CLAIMS_TEXT]; /* the metric chosen, the partner's / second, the α */
    const runset_run *partner[CL_MAXRUNS];
    double x[CL_MAXRUNS], y[CL_MAXRUNS];
    int paired;
} cl_sample;

/* Choose the metrics of an element (the first alternative every run has),
 * say which in res->measured, and find the partners.  -1: not measured. */
static int cl_sample_choose(cl_ctx *c, const runset_run *const *g, int n, cl_sample *sm) {
    const claims_row *row = c->row;
    claims_result *res = c->res;
    const char *q = row->quantity;
    const runset_run **partner = sm->partner;
    char *ma = sm->ma, *mb = sm->mb, *am = sm->am, first[CLAIMS_TEXT];
    const size_t ml = sizeof sm->ma;
    const int paired = sm->paired = !strcmp(q, "diff") || !strcmp(q, "rel") || !strcmp(q, "vs_curve");
    int ia = cl_choose(row->metric, g, n, row->agg, ma, ml);
    cl_first_alt(row->metric, first, sizeof first);
    if (ia < 0) {
        snprintf(res->why, sizeof res->why, "not measured: no run has %s", row->metric);
        return -1;
    }
    if (ia > 0 && !strstr(res->measured, ma) && strstr(first, "/hard.") && strstr(ma, "/final."))
        cl_app(res->measured, sizeof res->measured, "%ssoft (hard not measured): %s in place of %s",
               res->measured[0] ? "; " : "", ma, first);
    else if (ia > 0 && !strstr(res->measured, ma))
        cl_app(res->measured, sizeof res->measured, "%s%s (%s not measured)", res->measured[0] ? "; " : "", ma, first);
    else if (!strstr(res->measured, ma) && strstr(ma, "/hard."))
        cl_app(res->measured, sizeof res->measured, "%shard (skipping done): %s", res->measured[0] ? "; " : "", ma);
    else if (!strstr(res->measured, ma))
        cl_app(res->measured, sizeof res->measured, "%s%s", res->measured[0] ? "; " : "", ma);
    int np = 0;
    if (paired) {
        for (int i = 0; i < n; i++) {
            int amb = 0;
            partner[i] = cl_partner(c, g[i], &amb);
            np += partner[i] != NULL;
            if (amb) {
                snprintf(res->why, sizeof res->why, "not measured: %d runs pair with %s by seed (%s=%s%s%s): name which "
                         "in versus with key=value words", amb, g[i]->t.run_id, c->axis, c->axis_val,
                         c->vextra[0] ? " " : "", c->vextra);
                return -1;
            }
        }
        if (!np) {
            snprintf(res->why, sizeof res->why, "not measured: no run pairs with %s by seed (%s=%s%s%s, everything else "
                     "but the seed's bookkeeping equal)", g[0]->t.run_id, c->axis, c->axis_val, c->vextra[0] ? " " : "",
                     c->vextra);
            return -1;
        }
        if (strcmp(q, "vs_curve")) {
            const runset_run *pb[CL_MAXRUNS];
            int k = 0;
            for (int i = 0; i < n; i++)
                if (partner[i]) pb[k++] = partner[i];
            int ib = cl_choose(row->metric_b[0] ? row->metric_b : row->metric, pb, k, row->agg, mb, ml);
            if (ib < 0) {
                snprintf(res->why, sizeof res->why, "not measured: the partners (%s=%s) have no %s", c->axis,
                         c->axis_val, row->metric_b[0] ? row->metric_b : row->metric);
                return -1;
            }
            char frag[2 * CLAIMS_TEXT]; /* once per row, not once per element of `each` */
            snprintf(frag, sizeof frag, "; partner (%s=%s%s%s): %s", c->axis, c->axis_val, c->vextra[0] ? " " : "",
                     c->vextra, mb);
            if (!strstr(res->measured, frag)) cl_app(res->measured, sizeof res->measured, "%s", frag);
        }
    } else if (!strcmp(q, "within")) {
        if (cl_choose(row->metric_b, g, n, row->agg, mb, ml) < 0) {
            snprintf(res->why, sizeof res->why, "not measured: no run has %s", row->metric_b);
            return -1;
        }
        cl_app(res->measured, sizeof res->measured, " − %s", mb);
    }
    if (!strcmp(q, "vs_curve")) {
        if (cl_choose(cl_alpha_metric(row), g, n, "", am, ml) < 0) {
            snprintf(res->why, sizeof res->why, "not measured: no α (%s) to match the curve at", row->alpha_metric);
            return -1;
        }
        cl_app(res->measured, sizeof res->measured, "; partner's %s curve at this run's α (%s), interpolated", row->curve, am);
    }
    return 0;
}

/* The per-seed values x (this run) and y (partner, second metric or curve),
 * the runs noted, and whether the sides were measured on the same tokens.
 * -1: not measured. */
static int cl_sample_values(cl_ctx *c, const runset_run *const *g, int n, cl_sample *sm) {
    const claims_row *row = c->row;
    claims_result *res = c->res;
    const char *q = row->quantity, *ma = sm->ma, *mb = sm->mb, *am = sm->am;
    const runset_run *const *partner = sm->partner;
    double *x = sm->x, *y = sm->y;
    const int paired = sm->paired;
    int npts_min = 1 << 30;
    for (int i = 0; i < n; i++) {
        x[i] = cl_value(g[i], ma, row->agg);
        y[i] = NAN;
        if (paired && !partner[i]) {
            x[i] = NAN;
            continue;
        }
        if (!strcmp(q, "vs_curve")) {
            int npts = 0;
            y[i] = cl_curve_at(partner[i], row->curve, cl_value(g[i], am, ""), &npts);
            if (npts < npts_min) npts_min = npts;
        } else if (paired) {
            y[i] = cl_value(partner[i], mb, row->agg);
        } else if (!strcmp(q, "within")) {
            y[i] = cl_value(g[i], mb, row->agg);
        }
        if (!isnan(x[i])) cl_note_run(res, g[i]);
        if (paired && !isnan(y[i])) cl_note_run(res, partner[i]);
    }
    if (paired && strcmp(q, "vs_curve")) /* like for like: say when the two sides were measured on different tokens */
        for (int i = 0; i < n; i++) {
            const runset_value *va = partner[i] && !strchr(ma, '{') ? runset_get(g[i], ma) : NULL;
            const runset_value *vb = va && !strchr(mb, '{') ? runset_get(partner[i], mb) : NULL;
            if (!va || !vb) continue;
            if (!db_prov_same(&va->prov, &vb->prov)) {
                char pa[64], pb[64];
                db_prov_str(&va->prov, pa, sizeof pa);
                db_prov_str(&vb->prov, pb, sizeof pb);
                cl_app(res->why, sizeof res->why, "%sthe two sides were measured on different tokens (%s on %s, %s on "
                       "%s): not like for like", res->why[0] ? "; " : "", ma, pa, mb, pb);
            }
            break;
        }
    if (!strcmp(q, "vs_curve")) /* like for like: the curve's tokens against the run's */
        for (int i = 0; i < n; i++) {
            const runset_value *va = partner[i] ? runset_get(g[i], ma) : NULL, *vb = NULL;
            for (int j = 0; va && j < partner[i]->nm && !vb; j++)
                if (!strncmp(partner[i]->m[j].key, row->curve, strlen(row->curve)) &&
                    strstr(partner[i]->m[j].key, ".loss"))
                    vb = &partner[i]->m[j];
            if (!va || !vb) continue;
            if (!db_prov_same(&va->prov, &vb->prov)) {
                char pa[64], pb[64];
                db_prov_str(&va->prov, pa, sizeof pa);
                db_prov_str(&vb->prov, pb, sizeof pb);
                cl_app(res->why, sizeof res->why, "%sthe run (%s on %s) and the curve (%s on %s) were measured on "
                       "different tokens: not like for like", res->why[0] ? "; " : "", ma, pa, row->curve, pb);
            }
            break;
        }
    if (!strcmp(q, "vs_curve") && npts_min == 0) {
        snprintf(res->why, sizeof res->why, "not measured: the partners (%s=%s) have no %s…loss rows", c->axis,
                 c->axis_val, row->curve);
        return -1;
    }
    return 0;
}

/* The distance a power statement uses: the paper's number's distance from the threshold, else the
 * row's own `effect` (with its source, e.g. the pre-registration's 0.01 nats for Q1's direction-only
 * rows); NaN when neither is given — then no row is called underpowered, the MDE alone is printed. */
static double cl_effect(const claims_row *row) {
    if (!strcmp(row->expect, "none") || !strcmp(row->expect, "within")) return NAN;
    return !isnan(row->paper_value) ? fabs(row->paper_value - row->threshold) : row->effect;
}

static int cl_underpowered(const claims_row *row, double mde) {
    double eff = cl_effect(row);
    return !isnan(mde) && !isnan(eff) && eff < mde;
}

/* An underpowered element says what budget would decide it: the seeds whose MDE (at the measured sd
 * sd_a; for a Welch contrast sd_b is the second group's, else NaN) reaches the row's effect. */
static void cl_budget_note(const claims_row *row, claims_elem *e, double sd_a, double sd_b) {
    if (!e->underpowered) return;
    const double eff = cl_effect(row);
    const int max = 1000, ns = st_seeds_for(sd_a, sd_b, eff, max);
    if (ns < 0) return;
    char ef[64];
    cl_fmt(ef, sizeof ef, row, eff);
    if (ef[0] == '+') memmove(ef, ef + 1, strlen(ef)); /* a size, not a signed difference */
    if (ns > max) cl_app(e->ours, sizeof e->ours, " (more than %d seeds%s would be needed to detect %s)", max,
                         isnan(sd_b) ? "" : " per group", ef);
    else cl_app(e->ours, sizeof e->ours, " (%d seeds%s would detect %s at this sd)", ns, isnan(sd_b) ? "" : " per group", ef);
}

/* A judged row without a distance (no paper number, no effect =) is never called underpowered: say so. */
static void cl_no_distance_note(const claims_row *row, claims_elem *e) {
    if ((!strcmp(row->expect, "above") || !strcmp(row->expect, "below")) && isnan(cl_effect(row)))
        cl_app(e->ours, sizeof e->ours, " (the claim gives no distance from the threshold: power not judged)");
}

/* The one-sided p of the t test that the element's mean lies on the row's claimed side of the
 * threshold (H0: on the threshold or the other side); NaN without a t interval or a side. */
static double cl_p_claimed(const claims_row *row, const claims_elem *e) {
    if (e->interval != 0 || e->s.n < 2 || !(e->s.sd > 0)) return NAN;
    const int above = !strcmp(row->expect, "above");
    if (!above && strcmp(row->expect, "below")) return NAN;
    const double t = (e->s.mean - row->threshold) / e->s.se, F = st_t_cdf(t, e->s.n - 1); /* se = sd / √n */
    return above ? 1 - F : F;
}

/* One element over the runs g[0..n) of one group: its summary, interval,
 * MDE, guards, verdict and text.  Returns 0, or -1 with res->why saying what
 * is not measured. */
static int cl_elem(cl_ctx *c, const runset_run *const *g, int n, claims_elem *e) {
    const claims_row *row = c->row;
    claims_result *res = c->res;
    const char *q = row->quantity;
    cl_sample sm;
    memset(&sm, 0, sizeof sm);
    if (cl_sample_choose(c, g, n, &sm) || cl_sample_values(c, g, n, &sm)) return -1;
    const double *x = sm.x, *y = sm.y;
    const char *ma = sm.ma, *mb = sm.mb;
    if (!strcmp(q, "value") || !strcmp(q, "rho")) e->s = st_describe(x, n, 0.95);
    else e->s = st_paired(x, y, n, !strcmp(q, "rel") || !strcmp(q, "vs_curve"), 0.95);
    if (!e->s.n) {
        snprintf(res->why, sizeof res->why, "not measured: %s",
                 !strcmp(q, "vs_curve") ? "no run's α lies inside the partner's measured curve (no extrapolation)"
                                        : "no seed has both values");
        return -1;
    }
    e->interval = e->s.n >= 2 ? 0 : 3;
    if (!strcmp(q, "rho") && e->s.n == 1) { /* one run: its own bootstrap interval over windows */
        for (int i = 0; i < n; i++)
            if (!isnan(x[i])) {
                char k[RUNSET_KEY_MAX];
                snprintf(k, sizeof k, "%s_lo", ma);
                e->s.lo = runset_num(g[i], k);
                snprintf(k, sizeof k, "%s_hi", ma);
                e->s.hi = runset_num(g[i], k);
            }
        if (!isnan(e->s.lo) && !isnan(e->s.hi)) e->interval = 2;
    }
    e->mde = st_mde(e->s.n, e->s.sd);
    e->underpowered = cl_underpowered(row, e->mde);
    e->p = cl_p_claimed(row, e);
    /* the per-seed values, for a row whose t interval leaves the quantity's range */
    double d[CL_MAXRUNS];
    int nd = 0;
    for (int i = 0; i < n; i++) {
        double v = !strcmp(q, "value") || !strcmp(q, "rho") ? x[i]
                   : !strcmp(q, "rel") || !strcmp(q, "vs_curve") ? x[i] / y[i] - 1
                                                                  : x[i] - y[i];
        if (!isnan(v)) d[nd++] = v;
    }
    /* A t interval that leaves the quantity's range is cut to it (the true mean lies in the range, so the cut
     * interval keeps the t interval's coverage), and the seeds are shown beside it: with n this small the
     * t interval's symmetric shape is the assumption that failed. */
    double t_lo = e->s.lo, t_hi = e->s.hi;
    if (e->interval == 0 && !isnan(row->range_lo) && (e->s.lo < row->range_lo || e->s.hi > row->range_hi)) {
        e->interval = 4;
        if (e->s.lo < row->range_lo) e->s.lo = row->range_lo;
        if (e->s.hi > row->range_hi) e->s.hi = row->range_hi;
    }
    /* guards: the reference at the ceiling, or everything at a trivial level */
    double ma_mean = st_describe(x, n, 0.95).mean, mb_mean = st_describe(y, n, 0.95).mean;
    e->v = cl_judge(row, e->s.lo, e->s.hi, e->interval != 3);
    /* A reference at the ceiling leaves a cost nowhere to show, so only a pass says nothing;
     * a result whose interval lies below the threshold is a failure whatever the reference. */
    if (!isnan(row->ceiling) && !isnan(mb_mean) && mb_mean >= row->ceiling) {
        const int pass = e->v == CV_YES;
        if (pass) e->v = CV_UNINFORMATIVE;
        cl_app(res->why, sizeof res->why, "%sthe reference is at the ceiling (mean %s ≥ %g): %s", res->why[0] ? "; " : "",
               mb, row->ceiling, pass ? "a pass cannot show that nothing was lost" : "only a pass would say nothing");
    }
    if (!isnan(row->floor) && ma_mean < row->floor && (isnan(mb_mean) || mb_mean < row->floor)) {
        e->v = CV_UNINFORMATIVE;
        cl_app(res->why, sizeof res->why, "%severy variant is below the trivial level %g: nothing was learnt",
               res->why[0] ? "; " : "", row->floor);
    }
    char m[64], lo[64], hi[64], sd[64];
    cl_fmt(m, sizeof m, row, e->s.mean);
    cl_fmt(lo, sizeof lo, row, e->s.lo);
    cl_fmt(hi, sizeof hi, row, e->s.hi);
    if (e->interval == 0) {
        snprintf(sd, sizeof sd, "%.*f%s%s", row->digits, e->s.sd * row->scale, row->unit[0] ? " " : "", row->unit);
        snprintf(e->ours, sizeof e->ours, "%s [%s, %s] (95 %% t interval, n = %d, sd %s)", m, lo, hi, e->s.n, sd);
    } else if (e->interval == 2) {
        snprintf(e->ours, sizeof e->ours, "%s [%s, %s] (one run: 95 %% bootstrap interval over windows)", m, lo, hi);
    } else if (e->interval == 4) { /* the t interval cut to the quantity's range, the seeds beside it */
        char rl[64], rh[64], tl[64], th[64];
        cl_fmt(rl, sizeof rl, row, row->range_lo);
        cl_fmt(rh, sizeof rh, row, row->range_hi);
        cl_fmt(tl, sizeof tl, row, t_lo);
        cl_fmt(th, sizeof th, row, t_hi);
        snprintf(e->ours, sizeof e->ours, "%s [%s, %s] (95 %% t interval cut to the quantity's range [%s, %s]: uncut "
                 "[%s, %s]; n = %d, seeds", m, lo, hi, rl, rh, tl, th, e->s.n);
        for (int i = 0; i < nd; i++) {
            char v[64];
            cl_fmt(v, sizeof v, row, d[i]);
            cl_app(e->ours, sizeof e->ours, "%s %s", i ? "," : "", v);
        }
        cl_app(e->ours, sizeof e->ours, ")");
    } else {
        snprintf(e->ours, sizeof e->ours, "%s (n = 1: no interval)", m);
    }
    if (!isnan(e->mde)) {
        char md[64];
        snprintf(md, sizeof md, "%.*f%s%s", row->digits, e->mde * row->scale, row->unit[0] ? " " : "", row->unit);
        cl_app(e->ours, sizeof e->ours, "; MDE %s%s", md, e->underpowered ? " — **underpowered**" : "");
        cl_budget_note(row, e, e->s.sd, NAN);
        cl_no_distance_note(row, e);
    }
    return 0;
}

/* Bench quantities: runs bench_a (bench_b) of the bench stage, split bench. */
static const runset_run *cl_run_id(const runset *rs, const char *id) {
    for (int i = 0; i < rs->n; i++)
        if (!strcmp(rs->r[i].t.run_id, id)) return &rs->r[i];
    return NULL;
}

static int cl_bench(cl_ctx *c, claims_elem *e) {
    const claims_row *row = c->row;
    claims_result *res = c->res;
    const runset_run *a = cl_run_id(c->rs, row->bench_a), *b = row->bench_b[0] ? cl_run_id(c->rs, row->bench_b) : NULL;
    if (!a || (row->bench_b[0] && !b)) {
        snprintf(res->why, sizeof res->why, "not measured: no bench run %s (the bench stage of make paper records it)",
                 !a ? row->bench_a : row->bench_b);
        return -1;
    }
    cl_note_run(res, a);
    cl_note_run(res, b);
    const char *q = row->quantity;
    e->s = (st_summary){1, NAN, NAN, NAN, NAN, NAN};
    e->mde = NAN;
    if (!strcmp(q, "bench_ratio") || !strcmp(q, "bench_gap")) {
        double ra = runset_num(a, "bench/step_ratio"), qa1 = runset_num(a, "bench/step_ratio_q1"),
               qa3 = runset_num(a, "bench/step_ratio_q3");
        if (isnan(ra)) {
            snprintf(res->why, sizeof res->why, "not measured: %s has no bench/step_ratio", a->t.run_id);
            return -1;
        }
        if (!strcmp(q, "bench_ratio")) {
            e->s.mean = ra, e->s.lo = qa1, e->s.hi = qa3;
        } else {
            double rb = runset_num(b, "bench/step_ratio"), qb1 = runset_num(b, "bench/step_ratio_q1"),
                   qb3 = runset_num(b, "bench/step_ratio_q3");
            if (isnan(rb)) {
                snprintf(res->why, sizeof res->why, "not measured: %s has no bench/step_ratio", b->t.run_id);
                return -1;
            }
            e->s.mean = ra - rb, e->s.lo = qa1 - qb3, e->s.hi = qa3 - qb1;
        }
        e->interval = 1;
        snprintf(res->measured, sizeof res->measured, "bench/step_ratio of %s%s%s (median over interleaved rounds; "
                 "the bracket is the interquartile range over rounds, a dispersion, not a confidence interval%s)",
                 a->t.run_id, b ? " minus " : "", b ? b->t.run_id : "", b ? "; for a gap: A's quartiles against B's" : "");
    } else if (!strcmp(q, "bench_rss")) {
        double xa = runset_num(a, "bench/peak_rss_mib"), xb = b ? runset_num(b, "bench/peak_rss_mib") : NAN;
        if (isnan(xa) || isnan(xb)) {
            snprintf(res->why, sizeof res->why, "not measured: bench/peak_rss_mib of %s and %s", row->bench_a,
                     row->bench_b);
            return -1;
        }
        e->s.mean = xa / xb;
        e->interval = 3;
        snprintf(res->measured, sizeof res->measured, "peak RSS %s ÷ %s (MiB; one process each: no interval)",
                 a->t.run_id, b->t.run_id);
    } else { /* bench_sparse: the speed-up beside its FLOP ideal, never above it unexplained */
        /* metric = bench/sparse_speedup_X (default _a073: the forced-α run); its
         * quartiles X_q1, X_q3, its ideal sparse_ideal_X and the α reached sparse_alpha_X */
        const char *mname = row->metric[0] ? row->metric : "bench/sparse_speedup_a073";
        const char *tail = strstr(mname, "sparse_speedup_");
        if (!tail) {
            snprintf(res->why, sizeof res->why, "not measured: metric = %s is not a bench/sparse_speedup_* figure", mname);
            return -1;
        }
        tail += strlen("sparse_speedup_");
        char mq1[160], mq3[160], mid[160], mal[160];
        snprintf(mq1, sizeof mq1, "%s_q1", mname);
        snprintf(mq3, sizeof mq3, "%s_q3", mname);
        snprintf(mid, sizeof mid, "bench/sparse_ideal_%s", tail);
        snprintf(mal, sizeof mal, "bench/sparse_alpha_%s", tail);
        double sp = runset_num(a, mname), ideal = runset_num(a, mid), q1 = runset_num(a, mq1), q3 = runset_num(a, mq3),
               al = runset_num(a, mal);
        if (isnan(sp)) {
            snprintf(res->why, sizeof res->why, "not measured: %s has no %s", a->t.run_id, mname);
            return -1;
        }
        e->s.mean = sp, e->s.lo = q1, e->s.hi = q3;
        e->interval = isnan(q1) ? 3 : 1;
        char at[64] = "";
        if (!isnan(al)) snprintf(at, sizeof at, " at the α it reached, %.3f", al);
        snprintf(res->measured, sizeof res->measured, "%s of %s (tokens/s sparse ÷ dense; "
                 "bracket: interquartile range over rounds, a dispersion) beside %s = %.3f×%s",
                 mname, a->t.run_id, mid, ideal, at);
        if (!isnan(row->alpha_within) && (isnan(al) || fabs(al - row->alpha) > row->alpha_within))
            snprintf(res->premise, sizeof res->premise, "operating point not reached: the one α measured, %.3f, is not "
                     "within %g of the paper's %.3f, and one α gives nothing to interpolate along; shown, not judged", al,
                     row->alpha_within, row->alpha);
        if (!isnan(ideal) && sp > ideal)
            cl_app(res->why, sizeof res->why, "%sthe measured speed-up %.3f× lies ABOVE its FLOP ideal %.3f×: skipping "
                   "cannot save more time than the FLOPs it removes, so the excess is timing noise or a memory/cache "
                   "effect of the sparse path (smaller working set), not a saving of compute; read %.3f× as the bound",
                   res->why[0] ? "; " : "", sp, ideal, ideal);
    }
    e->v = cl_judge(row, e->s.lo, e->s.hi, e->interval != 3);
    e->p = NAN;
    /* The quartiles of one measurement's rounds are its dispersion, not a confidence interval: where they lie
     * is said in words, and the row stays inconclusive until repeated measurements give an interval. */
    if (e->interval == 1 && (e->v == CV_YES || e->v == CV_MAGNITUDE || e->v == CV_NO)) {
        cl_app(res->why, sizeof res->why, "%sthe rounds' interquartile range lies wholly %s the threshold — the "
               "dispersion of one measurement (one process, one machine), not a confidence interval, so not judged "
               "from it alone", res->why[0] ? "; " : "", (e->v == CV_NO) == !strcmp(row->expect, "above") ? "below" : "above");
        e->v = CV_INCONCLUSIVE;
    }
    char m[64], lo[64], hi[64];
    snprintf(m, sizeof m, "%.*f", row->digits, e->s.mean);
    snprintf(lo, sizeof lo, "%.*f", row->digits, e->s.lo);
    snprintf(hi, sizeof hi, "%.*f", row->digits, e->s.hi);
    if (e->interval == 1) snprintf(e->ours, sizeof e->ours, "%s [%s, %s] (median [interquartile range: dispersion])", m, lo, hi);
    else snprintf(e->ours, sizeof e->ours, "%s (one measurement: no interval)", m);
    return 0;
}

/* ---- one row ---- */

static int cl_cmp_group(const void *a, const void *b) {
    const runset_run *const *x = a, *const *y = b;
    int c = strcmp((*x)->group, (*y)->group);
    return c ? c : strcmp((*x)->t.seed, (*y)->t.seed);
}

static double cl_lambda_of(const runset_run *r) { return r->t.lambda; }

/* The runs row picks into pk (rs->n slots): its words, scale=@base / @top
 * resolved.  Returns how many, or -1 with res->why (not measured). */
static int cl_pick(const claims_row *row, const runset *rs, claims_result *res, const runset_run **pk) {
    char base[32], scale_w[32], data[64];
    claims_pick_value(row->runs, "data", data, sizeof data); /* @base and @top are this data set's */
    claims_base_scale(rs, data, base, sizeof base);
    claims_pick_value(row->runs, "scale", scale_w, sizeof scale_w);
    if (!strcmp(scale_w, "@base") && !base[0]) {
        snprintf(res->why, sizeof res->why, "not measured: no %s run sets the base scale", data);
        return -1;
    }
    int n = 0;
    char top[32] = "";
    if (!strcmp(scale_w, "@top")) { /* the largest scale other than the base with matching runs */
        for (int i = 0; i < rs->n; i++)
            if (cl_match(&rs->r[i], row->runs, base, "scale") && strcmp(rs->r[i].t.scale, base) &&
                cl_scale_rank(rs->r[i].t.scale) > cl_scale_rank(top))
                snprintf(top, sizeof top, "%s", rs->r[i].t.scale);
        if (!top[0]) {
            snprintf(res->why, sizeof res->why, "not measured: no matching runs at a scale other than the base (%s)",
                     base);
            return -1;
        }
    }
    for (int i = 0; i < rs->n; i++)
        if (cl_match(&rs->r[i], row->runs, base, "") && (!top[0] || !strcmp(rs->r[i].t.scale, top)))
            pk[n++] = &rs->r[i];
    if (!n) {
        snprintf(res->why, sizeof res->why, "not measured: no finished run matches `%s`", row->runs);
        return -1;
    }
    return n;
}

/* A ceiling row none of whose runs was trained, whose reference arm was: a pre-registered ceiling rule stops
 * where the reference is already at the ceiling (round two, group 1: copy at 40 and 60 items, the dense pilots
 * at 100 %), so nothing was left to lose and the row is uninformative, with why, rather than "not measured".
 * The reference: the row's runs with depth_routing set to versus's value (and versus's other words), the
 * routed arm's own words (lambda, model.tsa_form, model.router_init_bias) dropped; every one of its runs must
 * be at the ceiling on metric_b.  Returns 1 when it judged the row (res->v, res->why), else 0. */
static int cl_reference_ceiling(const cl_ctx *c, claims_result *res) {
    const claims_row *row = c->row;
    if (isnan(row->ceiling) || strcmp(c->axis, "depth_routing") || !row->metric_b[0]) return 0;
    char spec[CLAIMS_TEXT] = "", words[CLAIMS_TEXT], base[32], data[64];
    size_t used = 0;
    snprintf(words, sizeof words, "%s", row->runs);
    for (char *save = NULL, *w = strtok_r(words, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
        if (!strncmp(w, "lambda=", 7) || !strncmp(w, "model.tsa_form=", 15) || !strncmp(w, "model.router_init_bias=", 23))
            continue;
        const int dr = !strncmp(w, "depth_routing=", 14);
        if (used < sizeof spec)
            used += (size_t)snprintf(spec + used, sizeof spec - used, "%s%s%s", used ? " " : "",
                                     dr ? "depth_routing=" : w, dr ? c->axis_val : "");
    }
    if (c->vextra && c->vextra[0] && used < sizeof spec)
        used += (size_t)snprintf(spec + used, sizeof spec - used, " %s", c->vextra);
    if (used >= sizeof spec) return 0;
    claims_pick_value(row->runs, "data", data, sizeof data);
    claims_base_scale(c->rs, data, base, sizeof base);
    const runset_run *ref[CL_MAXRUNS];
    int n = 0;
    for (int i = 0; i < c->rs->n && n < CL_MAXRUNS; i++)
        if (cl_match(&c->rs->r[i], spec, base, "")) ref[n++] = &c->rs->r[i];
    char mb[CLAIMS_TEXT];
    if (!n || cl_choose(row->metric_b, ref, n, "", mb, sizeof mb) < 0) return 0;
    double lo = INFINITY;
    for (int i = 0; i < n; i++) lo = fmin(lo, cl_value(ref[i], mb, ""));
    if (!(lo >= row->ceiling)) return 0;
    res->v = CV_UNINFORMATIVE;
    snprintf(res->why, sizeof res->why, "uninformative: no run matches `%s`, and its reference (`%s`: %d run%s, %s "
             "from %.4f) is at the ceiling (≥ %g): nothing was left to lose, so the ceiling rule trained no routed run "
             "there", row->runs, spec, n, n == 1 ? "" : "s", mb, lo, row->ceiling);
    return 1;
}

/* The operating point (lambda=@alpha): keep the group [gs[k], gs[k+1]) of
 * pk whose mean α over seeds is nearest the paper's; *ng becomes 1.  -1 with
 * res->why when no group has an α. */
static int cl_operating_point(const claims_row *row, claims_result *res, const runset_run **pk, int n, int *gs,
                              int *ng) {
    char am[CLAIMS_TEXT];
    const char *alts = cl_alpha_metric(row);
    if (cl_choose(alts, pk, n, "", am, sizeof am) < 0) {
        snprintf(res->why, sizeof res->why, "not measured: no α (%s) to choose the operating point", alts);
        return -1;
    }
    int best = -1;
    double bd = INFINITY, bm = NAN;
    for (int k = 0; k < *ng; k++) {
        double a[CL_MAXRUNS];
        int m = 0;
        for (int i = gs[k]; i < gs[k + 1] && m < CL_MAXRUNS; i++) a[m++] = cl_value(pk[i], am, "");
        double mean = st_describe(a, m, 0.95).mean;
        if (!isnan(mean) && fabs(mean - row->alpha) < bd) bd = fabs(mean - row->alpha), best = k, bm = mean;
    }
    if (best < 0) {
        snprintf(res->why, sizeof res->why, "not measured: no group has %s", am);
        return -1;
    }
    if (!isnan(row->alpha_within) && bd > row->alpha_within) /* measured and shown, not judged */
        snprintf(res->premise, sizeof res->premise, "operating point not reached: no group's mean α (%s) is within %g "
                 "of the paper's %.3f; the nearest, λ = %g, had α %.3f (%.3f away), and is shown below, not judged",
                 am, row->alpha_within, row->alpha, cl_lambda_of(pk[gs[best]]), bm, bd);
    cl_app(res->measured, sizeof res->measured, "operating point λ* = %g: the λ whose mean α (%s) over seeds, "
           "%.3f, is nearest the paper's %.3f", cl_lambda_of(pk[gs[best]]), am, bm, row->alpha);
    int from = gs[best], to = gs[best + 1];
    gs[0] = from;
    gs[1] = to;
    *ng = 1;
    return 0;
}

/* The across axis's value of run r (a scale's rank, the steps, the blocks). */
static double cl_axis_at(const char *axis, const runset_run *r) {
    if (!strcmp(axis, "scale")) return cl_scale_rank(r->t.scale);
    if (!strcmp(axis, "steps")) return (double)r->steps;
    if (!strcmp(axis, "n_layer")) return (double)r->n_layer;
    return 0;
}

/* The element's label from each's words ("scale s, 300 steps") into out. */
static void cl_label(const char *each, const runset_run *r0, char *out, size_t n) {
    char buf[64];
    out[0] = 0;
    snprintf(buf, sizeof buf, "%s", each);
    for (char *save = NULL, *w = strtok_r(buf, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
        const char *sep = out[0] ? ", " : "";
        if (!strcmp(w, "lambda")) cl_app(out, n, "%sλ = %g", sep, r0->t.lambda);
        else if (!strcmp(w, "scale")) cl_app(out, n, "%sscale %s", sep, r0->t.scale);
        else if (!strcmp(w, "steps")) cl_app(out, n, "%s%ld steps", sep, r0->steps);
        else if (!strcmp(w, "n_layer")) cl_app(out, n, "%s%ld blocks", sep, r0->n_layer);
    }
}

/* reading = trend (PREREGISTRATION.md, Q1's 9-trend): the pre-registered word
 * for the across element t (largest − smallest) given the elements at the two
 * ends, hi and lo, each judged on its interval. */
static const char *cl_trend_word(const claims_elem *t, const claims_elem *hi, const claims_elem *lo) {
    int hi_below = hi->interval != 3 && hi->s.hi < 0, hi_above = hi->interval != 3 && hi->s.lo > 0;
    int lo_above = lo->interval != 3 && lo->s.lo > 0, have = t->interval != 3;
    if (hi_below && lo_above) return "flips";
    if (have && t->s.hi < 0 && !hi_below) return "shrinks";
    if (have && t->s.lo <= 0 && t->s.hi >= 0 && hi_above) return "persists";
    if (have && t->s.lo > 0) return "grows";
    return NULL;
}

/* across = AXIS: the deciding element is the one at the axis's largest value
 * − the one at its smallest (Welch over their seeds); the others are shown. */
static void cl_across(const claims_row *row, claims_result *res, int ok) {
    int lo = -1, hi = -1;
    for (int k = 0; k < res->ne; k++) {
        if (lo < 0 || res->e[k].at < res->e[lo].at) lo = k;
        if (hi < 0 || res->e[k].at > res->e[hi].at) hi = k;
    }
    for (int k = 0; k < res->ne; k++) res->e[k].v = CV_DESCRIBED;
    if (res->ne < 2 || lo == hi || res->e[lo].at == res->e[hi].at || res->ne >= CLAIMS_ELEMS) {
        int nv = 0; /* distinct values of the axis among the elements */
        for (int k = 0; k < res->ne; k++) {
            int seen = 0;
            for (int j = 0; j < k && !seen; j++) seen = res->e[j].at == res->e[k].at;
            nv += !seen;
        }
        if (res->ne >= 2 && nv == 1)
            snprintf(res->why, sizeof res->why, "not measured: needs pairs at two or more values of %s; the registry "
                     "has %d groups with pairs, all at one value (the first: %s): another value, or narrow the row's runs",
                     row->across, ok, res->e[0].label);
        else
            snprintf(res->why, sizeof res->why, "not measured: needs pairs at two or more values of %s; the registry "
                     "has them at %d", row->across, nv);
        res->ne = 0;
        return;
    }
    char lab_hi[64], lab_lo[64];
    snprintf(lab_hi, sizeof lab_hi, "%s", res->e[hi].label);
    snprintf(lab_lo, sizeof lab_lo, "%s", res->e[lo].label);
    claims_elem *e = &res->e[res->ne++];
    memset(e, 0, sizeof *e);
    double df = NAN;
    snprintf(e->label, sizeof e->label, "%.28s − %.28s", lab_hi, lab_lo);
    e->s = st_welch(res->e[hi].s, res->e[lo].s, 0.95, &df);
    e->interval = isnan(e->s.lo) ? 3 : 0;
    /* the Welch MDE: as st_mde with Welch's standard error √(sa²/na + sb²/nb) in place of sd/√n */
    const double se = e->s.se;
    e->mde = isnan(df) || isnan(se) ? NAN : (st_t_quantile(0.975, df) + st_t_quantile(0.80, df)) * se;
    e->underpowered = cl_underpowered(row, e->mde);
    e->v = cl_judge(row, e->s.lo, e->s.hi, e->interval != 3);
    e->p = NAN;
    if (e->interval == 0 && se > 0 && (!strcmp(row->expect, "above") || !strcmp(row->expect, "below"))) {
        const double F = st_t_cdf((e->s.mean - row->threshold) / se, df);
        e->p = !strcmp(row->expect, "above") ? 1 - F : F;
    }
    char m[64], l[64], h[64];
    cl_fmt(m, sizeof m, row, e->s.mean);
    cl_fmt(l, sizeof l, row, e->s.lo);
    cl_fmt(h, sizeof h, row, e->s.hi);
    if (e->interval == 0) snprintf(e->ours, sizeof e->ours, "%s [%s, %s] (Welch 95 %% interval, df %.1f)", m, l, h, df);
    else snprintf(e->ours, sizeof e->ours, "%s (fewer than two seeds at a value: no interval)", m);
    if (!isnan(e->mde)) {
        cl_app(e->ours, sizeof e->ours, "; MDE %.*f%s%s%s", row->digits, e->mde * row->scale, row->unit[0] ? " " : "",
               row->unit, e->underpowered ? " — **underpowered**" : "");
        cl_budget_note(row, e, res->e[hi].s.sd, res->e[lo].s.sd);
    }
    res->v = e->v;
    if (!strcmp(row->reading, "trend")) {
        const char *w = cl_trend_word(e, &res->e[hi], &res->e[lo]);
        cl_app(res->why, sizeof res->why, "%sreading: %s", res->why[0] ? "; " : "",
               w ? w : "none of flips / shrinks / persists / grows holds (the intervals are too wide to say)");
        if (w) cl_app(e->ours, sizeof e->ours, " — **%s**", w);
    }
}

/* The row's verdict from its elements: each must hold. */
static void cl_combine_elems(claims_result *res) {
    claims_verdict v = res->e[0].v;
    for (int k = 1; k < res->ne; k++) {
        claims_verdict w = res->e[k].v;
        if (w == CV_NO || v == CV_NO) v = CV_NO;
        else if (w == CV_UNINFORMATIVE || v == CV_UNINFORMATIVE) v = CV_UNINFORMATIVE;
        else if (w == CV_INCONCLUSIVE || v == CV_INCONCLUSIVE) v = CV_INCONCLUSIVE;
        else if (w == CV_MAGNITUDE || v == CV_MAGNITUDE) v = CV_MAGNITUDE;
    }
    res->v = v;
}

/* Replace every "{b}" of src by the block number l into out. */
static void cl_subst_block(const char *src, int l, char *out, size_t n) {
    out[0] = 0;
    for (const char *p = src; *p;) {
        const char *q = strstr(p, "{b}");
        size_t k = q ? (size_t)(q - p) : strlen(p);
        cl_app(out, n, "%.*s", (int)k, p);
        if (!q) break;
        cl_app(out, n, "%d", l);
        p = q + 3;
    }
}

/* each = block: an element per gated block of the group g[0..n), the row's
 * metrics with {b} the block.  Returns the elements made (0: res->why says why). */
static int cl_blocks(cl_ctx *c, const runset_run *const *g, int n) {
    const claims_row *row = c->row;
    claims_result *res = c->res;
    static claims_row one; /* ~10 KB: static, one row at a time */
    int L = (int)g[0]->n_layer, ok = 0;
    for (int l = 1; l < L && res->ne < CLAIMS_ELEMS; l++) {
        one = *row;
        cl_subst_block(row->metric, l, one.metric, sizeof one.metric);
        cl_subst_block(row->metric_b, l, one.metric_b, sizeof one.metric_b);
        cl_ctx cb = *c;
        cb.row = &one;
        claims_elem *e = &res->e[res->ne];
        memset(e, 0, sizeof *e);
        snprintf(e->label, sizeof e->label, "block %d", l);
        if (cl_elem(&cb, g, n, e) == 0) {
            ok++;
            res->ne++;
        }
    }
    if (ok && !res->basis[0])
        snprintf(res->basis, sizeof res->basis, "%s, %s, %ld steps × %ld × %ld = %.2f M tokens, %d seed%s", g[0]->t.data,
                 g[0]->t.scale, g[0]->steps, g[0]->batch, g[0]->seq_len,
                 (double)g[0]->steps * g[0]->batch * g[0]->seq_len / 1e6, res->e[0].s.n, res->e[0].s.n == 1 ? "" : "s");
    return ok;
}

/* reading = start / mechanism (PREREGISTRATION.md Q1): judge the row's own
 * element against its given pair ("RUNS ; VERSUS", judged like the row) and
 * print the pre-registered sentence where it applies:
 *   start      the given pair (9b at 1000 steps, default starts) > 0 and this
 *              (matched start) contains or lies below 0: the start explains the gap;
 *   mechanism  the given pair (matched start) > 0 and this (weight decay on
 *              every parameter) > 0: the gap persists: the mechanism at this scale. */
static void cl_reading(const claims_row *row, const runset *rs, claims_result *res) {
    static claims_row ref; /* ~10 KB: static, one row at a time */
    static claims_result rr;
    if (res->ne != 1) return;
    ref = *row;
    const char *semi = strchr(row->given, ';');
    snprintf(ref.runs, sizeof ref.runs, "%.*s", (int)(semi - row->given), row->given);
    snprintf(ref.versus, sizeof ref.versus, "%s", semi + 1);
    memmove(ref.runs, claims_trim(ref.runs), strlen(claims_trim(ref.runs)) + 1);
    memmove(ref.versus, claims_trim(ref.versus), strlen(claims_trim(ref.versus)) + 1);
    ref.reading[0] = ref.given[0] = 0;
    claims_eval(&ref, rs, &rr);
    if (rr.ne != 1 || rr.e[0].interval == 3) {
        cl_app(res->why, sizeof res->why, "%sreading: not yet (the reference pair `%s` is not measured with an "
               "interval)", res->why[0] ? "; " : "", row->given);
        return;
    }
    const claims_elem *g = &rr.e[0], *e = &res->e[0];
    int g_above = g->s.lo > 0, have = e->interval != 3;
    const char *say = NULL;
    if (!strcmp(row->reading, "start") && g_above && have && e->s.lo <= 0) say = "**the start explains the gap**";
    else if (!strcmp(row->reading, "mechanism") && g_above && have && e->s.lo > 0)
        say = "**the mechanism at this scale** (the gap persists under matched starts and weight decay on every parameter)";
    cl_app(res->why, sizeof res->why, "%sreading (against %s: %s): %s", res->why[0] ? "; " : "", row->given, g->ours,
           say ? say : "the pre-registered sentence does not apply");
}

/* A row with "@pilot" in runs or versus: not measured until the row's
 * pilot = names the pilot's choice, then judged with it in place. */
static void cl_eval_pilot(const claims_row *row, const runset *rs, claims_result *res) {
    static claims_row one; /* ~10 KB: static, one row at a time (not re-entered: one has no @pilot left) */
    if (!row->pilot[0] || strstr(row->pilot, "@pilot")) {
        memset(res, 0, sizeof *res);
        res->row = row;
        res->v = CV_NOT_MEASURED;
        snprintf(res->why, sizeof res->why, "not measured: the pilot's choice is not filled in (write pilot = VALUE in "
                 "row [%s] once the pilot has chosen it; it replaces @pilot in runs and versus)", row->id);
        return;
    }
    one = *row;
    /* claims_parse refuses a pilot that leaves an @pilot; a row built otherwise is not measured, never judged
     * with its runs emptied (one is static: a second round would overwrite its own source) */
    if (claims_pilot_subst(row->runs, row->pilot, one.runs, sizeof one.runs) ||
        claims_pilot_subst(row->versus, row->pilot, one.versus, sizeof one.versus)) {
        memset(res, 0, sizeof *res);
        res->row = row;
        res->v = CV_NOT_MEASURED;
        snprintf(res->why, sizeof res->why, "not measured: pilot = '%s' in place of @pilot leaves an @pilot in row "
                 "[%s] (or too long a text): write the pilot's choice itself", row->pilot, row->id);
        return;
    }
    claims_eval(&one, rs, res);
    res->row = row;
    cl_app(res->measured, sizeof res->measured, "%sthe pilot's choice: %s", res->measured[0] ? "; " : "", row->pilot);
}

/* decide = LABEL: the element so labelled decides the row; the others keep their own verdicts, shown
 * beside them (secondary).  Without it (its runs not yet trained) the row is not measured. */
static int cl_decider(const claims_row *row, const claims_result *res) {
    for (int k = 0; k < res->ne; k++)
        if (!strcmp(res->e[k].label, row->decide)) return k;
    return -1;
}

static void cl_decide(const claims_row *row, claims_result *res) {
    const int k = cl_decider(row, res);
    if (k >= 0) {
        res->v = res->e[k].v;
        return;
    }
    res->v = CV_NOT_MEASURED;
    cl_app(res->why, sizeof res->why, "%snot measured: the element that decides the row (%s) has no runs yet; the "
           "others are shown with their own verdicts and do not decide it", res->why[0] ? "; " : "", row->decide);
}

/* A row whose premise failed (res->premise) is measured and shown, never judged: every element and
 * the row read *operating point not reached*. */
static void cl_premise(claims_result *res) {
    const claims_verdict v = res->premise[0] ? CV_NOT_REACHED : CV_PREMISE;
    if (!res->ne || (!res->premise[0] && !res->row->premise[0])) return;
    if (!res->premise[0]) snprintf(res->premise, sizeof res->premise, "premise failed: %s; shown, not judged",
                                   res->row->premise);
    for (int k = 0; k < res->ne; k++) res->e[k].v = v, res->e[k].p = NAN;
    res->v = v;
}

void claims_eval(const claims_row *row, const runset *rs, claims_result *res) {
    memset(res, 0, sizeof *res);
    res->row = row;
    res->v = CV_NOT_MEASURED;
    if (strstr(row->runs, "@pilot") || strstr(row->versus, "@pilot")) {
        cl_eval_pilot(row, rs, res);
        return;
    }
    cl_ctx c = {rs, row, res, "", "", ""};
    if (row->versus[0]) { /* "axis=value [key=value …]" */
        size_t w = strcspn(row->versus, " \t"), k = strcspn(row->versus, "=");
        snprintf(c.axis, sizeof c.axis, "%.*s", (int)k, row->versus);
        snprintf(c.axis_val, sizeof c.axis_val, "%.*s", (int)(w > k ? w - k - 1 : 0), row->versus + k + 1);
        c.vextra = row->versus + w + strspn(row->versus + w, " \t");
    }
    if (!strncmp(row->quantity, "bench_", 6)) {
        if (cl_bench(&c, &res->e[0])) return;
        res->ne = 1;
        res->v = res->e[0].v;
        cl_premise(res);
        snprintf(res->basis, sizeof res->basis, "bench stage of make paper (scale s, one process, interleaved rounds)");
        return;
    }
    char lambda_w[32];
    claims_pick_value(row->runs, "lambda", lambda_w, sizeof lambda_w);
    const runset_run **pk = malloc((size_t)(rs->n > 0 ? rs->n : 1) * sizeof *pk);
    if (!pk) {
        snprintf(res->why, sizeof res->why, "not measured: out of memory");
        return;
    }
    int n = cl_pick(row, rs, res, pk);
    if (n < 0) {
        cl_reference_ceiling(&c, res);
        free(pk);
        return;
    }
    qsort(pk, (size_t)n, sizeof *pk, cl_cmp_group);
    /* groups: [gs[k], gs[k+1]) */
    int gs[CL_MAXRUNS + 1], ng = 0;
    for (int i = 0; i < n && ng < CL_MAXRUNS; i++)
        if (!i || !runset_same_group(pk[i], pk[i - 1])) gs[ng++] = i;
    gs[ng] = n;
    if (!strcmp(lambda_w, "@alpha") && cl_operating_point(row, res, pk, n, gs, &ng)) {
        free(pk);
        return;
    }
    if (ng > 1 && !row->each[0]) {
        snprintf(res->why, sizeof res->why, "not measured: `%s` matches %d configurations (e.g. %s and %s); narrow "
                 "the row's runs", row->runs, ng, pk[gs[0]]->t.run_id, pk[gs[1]]->t.run_id);
        free(pk);
        return;
    }
    int ok = 0;
    if (!strcmp(row->each, "block")) { /* one group; an element per gated block (1 .. L − 1) */
        ok = cl_blocks(&c, pk + gs[0], gs[1] - gs[0]);
        free(pk);
        if (ok) cl_combine_elems(res);
        return;
    }
    char last[CLAIMS_TEXT] = ""; /* the last left-out element's reason */
    for (int k = 0; k < ng && res->ne < CLAIMS_ELEMS; k++) {
        claims_elem *e = &res->e[res->ne];
        memset(e, 0, sizeof *e);
        const runset_run *r0 = pk[gs[k]];
        cl_label(row->each, r0, e->label, sizeof e->label);
        e->at = row->across[0] ? cl_axis_at(row->across, r0) : 0;
        char keep[CLAIMS_TEXT];
        snprintf(keep, sizeof keep, "%s", res->why);
        if (cl_elem(&c, pk + gs[k], gs[k + 1] - gs[k], e) == 0) {
            ok++;
            res->ne++;
            if (!res->basis[0])
                snprintf(res->basis, sizeof res->basis, "%s, %s, %ld steps × %ld × %ld = %.2f M tokens, %d seed%s",
                         r0->t.data, r0->t.scale, r0->steps, r0->batch, r0->seq_len,
                         (double)r0->steps * r0->batch * r0->seq_len / 1e6, e->s.n, e->s.n == 1 ? "" : "s");
        } else if (row->each[0] && ng > 1) {
            snprintf(last, sizeof last, "%s", res->why);
            snprintf(res->why, sizeof res->why, "%s", keep); /* an element without data is left out */
        }
    }
    free(pk);
    if (!ok && !res->why[0]) snprintf(res->why, sizeof res->why, "%s", last); /* no element: the last one's reason */
    if (!ok) return; /* res->why says why */
    if (row->across[0]) {
        cl_across(row, res, ok);
        cl_premise(res);
        return;
    }
    cl_combine_elems(res);
    if (row->decide[0]) cl_decide(row, res);
    if (row->given[0]) cl_reading(row, rs, res);
    cl_premise(res);
}

/* Whether row claim c belongs to the claim asked for: exactly claim, or (by number) c is num or "num (…)". */
static int cl_claim_of(const char *c, const char *claim, int by_number) {
    if (!by_number) return !strcmp(c, claim);
    size_t l = strlen(claim);
    return !strncmp(c, claim, l) && (!c[l] || !strncmp(c + l, " (", 2));
}

static claims_verdict cl_combine(const claims_result *res, int n, const char *claim, int by_number) {
    int any = 0, no = 0, unmeasured = 0, unreached = 0, unin = 0, inc = 0, mag = 0, desc = 0;
    int context_seen = 0; /* a claim of context rows only: described once one of them was measured */
    for (int i = 0; i < n; i++) {
        if (!cl_claim_of(res[i].row->claim, claim, by_number)) continue;
        if (res[i].row->context) {
            context_seen |= res[i].v != CV_NOT_MEASURED;
            continue;
        }
        any = 1;
        switch (res[i].v) {
        case CV_NO: no = 1; break;
        case CV_NOT_MEASURED: unmeasured = 1; break;
        case CV_UNINFORMATIVE: unin = 1; break;
        case CV_INCONCLUSIVE: inc = 1; break;
        case CV_MAGNITUDE: mag = 1; break;
        case CV_DESCRIBED: desc = 1; break;
        case CV_NOT_REACHED:
        case CV_PREMISE: unreached = 1; break;
        case CV_YES: break;
        }
    }
    if (!any) return context_seen ? CV_DESCRIBED : CV_NOT_MEASURED;
    if (no) return CV_NO;
    if (unmeasured) return CV_NOT_MEASURED;
    if (unreached) { /* the first such row's kind names the claim's */
        for (int i = 0; i < n; i++)
            if (cl_claim_of(res[i].row->claim, claim, by_number) && !res[i].row->context &&
                (res[i].v == CV_NOT_REACHED || res[i].v == CV_PREMISE))
                return res[i].v;
    }
    if (unin) return CV_UNINFORMATIVE;
    if (inc) return CV_INCONCLUSIVE;
    if (mag) return CV_MAGNITUDE;
    return desc ? CV_DESCRIBED : CV_YES;
}

claims_verdict claims_combine(const claims_result *res, int n, const char *claim) { return cl_combine(res, n, claim, 0); }

claims_verdict claims_combine_number(const claims_result *res, int n, const char *num) {
    return cl_combine(res, n, num, 1);
}

/* Holm (1979): sort the m primary rows' p ascending; the k-th (from 0) is rejected at level
 * 0.025 / (m − k) while every earlier one was; its adjusted p is max over j ≤ k of (m − j)·p_(j),
 * capped at 1.  A primary row is judged on that: reproduced (or magnitude differs, as before) only when
 * its adjusted p for the claimed side is below 0.025, not reproduced only when that for the other side
 * is, inconclusive otherwise.  A row's p is that of its deciding element (the across element, or the
 * only one); a primary row with several elements and no across takes its largest p (each must hold). */
void claims_holm(claims_result *res, int n, int *m, double *adj) {
    int idx[256], k = 0;
    double p[256], q[256];
    for (int i = 0; i < n; i++) adj[i] = NAN;
    for (int i = 0; i < n && k < 256; i++) {
        if (!res[i].row->primary) continue;
        /* a primary row whose premise failed (not measured, operating point not reached, a guard) leaves the family */
        if (res[i].v == CV_NOT_MEASURED || res[i].v == CV_NOT_REACHED || res[i].v == CV_PREMISE ||
            res[i].v == CV_UNINFORMATIVE ||
            res[i].v == CV_DESCRIBED)
            continue;
        double pc = NAN, po = NAN; /* claimed side, other side */
        const int dk = res[i].row->decide[0] ? cl_decider(res[i].row, &res[i]) : -1;
        for (int e = 0; e < res[i].ne; e++) {
            const claims_elem *el = &res[i].e[e];
            if (res[i].row->across[0] && e != res[i].ne - 1) continue; /* the across element decides */
            if (dk >= 0 && e != dk) continue;                            /* so does decide's */
            if (isnan(el->p)) { pc = po = NAN; break; }
            if (isnan(pc) || el->p > pc) pc = el->p;
            if (isnan(po) || 1 - el->p < po) po = 1 - el->p;
        }
        if (!res[i].ne) pc = po = NAN;
        idx[k] = i, p[k] = isnan(pc) ? 1 : pc, q[k] = isnan(po) ? 1 : po, k++;
    }
    *m = k;
    for (int side = 0; side < 2; side++) { /* adjusted p for the claimed side, then the other */
        double *v = side ? q : p, a[256];
        int ord[256];
        for (int i = 0; i < k; i++) ord[i] = i;
        for (int i = 1; i < k; i++) /* insertion sort by p, ascending */
            for (int j = i; j > 0 && v[ord[j]] < v[ord[j - 1]]; j--) {
                int t = ord[j];
                ord[j] = ord[j - 1], ord[j - 1] = t;
            }
        double run = 0;
        for (int r = 0; r < k; r++) {
            double x = (k - r) * v[ord[r]];
            if (x > run) run = x;
            a[ord[r]] = run > 1 ? 1 : run;
        }
        for (int i = 0; i < k; i++) {
            claims_result *rr = &res[idx[i]];
            rr->primary_m = k;
            if (!side) adj[idx[i]] = rr->p_holm = a[i];
            if (!side && (rr->v == CV_YES || rr->v == CV_MAGNITUDE) && !(a[i] < 0.025)) rr->v = CV_INCONCLUSIVE;
            if (side && rr->v == CV_NO && !(a[i] < 0.025)) rr->v = CV_INCONCLUSIVE;
        }
    }
}

void claims_elem_brief(const claims_row *row, const claims_elem *e, char *out, size_t n) {
    char m[64], lo[64], hi[64];
    const int bench = !strncmp(row->quantity, "bench_", 6);
    if (bench) {
        snprintf(m, sizeof m, "%.*f", row->digits, e->s.mean);
        snprintf(lo, sizeof lo, "%.*f", row->digits, e->s.lo);
        snprintf(hi, sizeof hi, "%.*f", row->digits, e->s.hi);
    } else {
        cl_fmt(m, sizeof m, row, e->s.mean);
        cl_fmt(lo, sizeof lo, row, e->s.lo);
        cl_fmt(hi, sizeof hi, row, e->s.hi);
    }
    switch (e->interval) {
    case 0: snprintf(out, n, "%s [%s, %s] (95 %% interval, n = %d)", m, lo, hi, e->s.n); break;
    case 1: snprintf(out, n, "%s [%s, %s] (median [quartiles of one measurement's rounds: dispersion])", m, lo, hi); break;
    case 2: snprintf(out, n, "%s [%s, %s] (one run's bootstrap interval)", m, lo, hi); break;
    case 4: snprintf(out, n, "%s [%s, %s] (95 %% t interval cut to the quantity's range, n = %d; seeds in its row)", m,
                     lo, hi, e->s.n); break;
    default: snprintf(out, n, "%s (no interval)", m); break;
    }
}
