/*
 * claims_file.c — reading a claims file (claims.h; format in docs/report.md):
 * sections, keys, each row's checks, and the verdict names.
 *
 * The lines are read by inih (store/initext.h: line numbers, section lines as they come, no inline
 * comments); the rules on top of it are here: a key twice in one section, a row id twice, a key before
 * any section, each key's value.
 *
 * Not here: judging a row against a run set (claims.c).
 */
#include "analysis/paper/claims.h"
#include "store/fileio.h"
#include "store/initext.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- reading a claims file ---- */

static void cl_row_defaults(claims_row *r) {
    memset(r, 0, sizeof *r);
    r->paper_value = r->alpha = r->alpha_within = r->threshold = r->threshold_hi = r->floor = r->ceiling = NAN;
    r->effect = r->range_lo = r->range_hi = NAN;
    r->scale = 1;
    r->digits = 4;
    snprintf(r->expect, sizeof r->expect, "none");
}

int claims_num(const char *v, double *out) {
    char *end = NULL;
    errno = 0;
    double x = strtod(v, &end);
    if (end == v || *end || errno || !isfinite(x)) return -1;
    *out = x;
    return 0;
}

static const char *const cl_quantities[] = {"value",     "diff",      "rel",       "within",       "vs_curve",
                                            "rho",       "bench_ratio", "bench_gap", "bench_rss", "bench_sparse"};

static int cl_quantity_known(const char *q) {
    for (size_t k = 0; k < sizeof cl_quantities / sizeof cl_quantities[0]; k++)
        if (!strcmp(q, cl_quantities[k])) return 1;
    return 0;
}

/* The keys of a row cl_set hands on: 0 set, -1 refused (msg), 1 not one of this function's keys. */
enum { CL_NOT_MINE = 1 };

/* A text key of row r (claim, paper, runs, …) and the checks on its value. */
static int cl_set_text_key(claims_row *r, const char *key, const char *v, char *msg, size_t ml) {
    const struct {
        const char *key;
        char *dst;
        size_t n;
    } text[] = {{"claim", r->claim, sizeof r->claim},          {"paper", r->paper, sizeof r->paper},
                {"quantity", r->quantity, sizeof r->quantity}, {"runs", r->runs, sizeof r->runs},
                {"metric", r->metric, sizeof r->metric},       {"metric_b", r->metric_b, sizeof r->metric_b},
                {"versus", r->versus, sizeof r->versus},       {"curve", r->curve, sizeof r->curve},
                {"alpha_metric", r->alpha_metric, sizeof r->alpha_metric},
                {"each", r->each, sizeof r->each},             {"agg", r->agg, sizeof r->agg},
                {"bench_a", r->bench_a, sizeof r->bench_a},    {"bench_b", r->bench_b, sizeof r->bench_b},
                {"unit", r->unit, sizeof r->unit},             {"note", r->note, sizeof r->note},
                {"pareto", r->pareto, sizeof r->pareto},       {"pilot", r->pilot, sizeof r->pilot},
                {"given", r->given, sizeof r->given},          {"effect_source", r->effect_source, sizeof r->effect_source},
                {"form", r->form, sizeof r->form},             {"alpha_def", r->alpha_def, sizeof r->alpha_def},
                {"sparse", r->sparse, sizeof r->sparse},       {"decide", r->decide, sizeof r->decide},
                {"premise", r->premise, sizeof r->premise}};
    for (size_t k = 0; k < sizeof text / sizeof text[0]; k++)
        if (!strcmp(key, text[k].key)) {
            if (strlen(v) >= text[k].n) {
                snprintf(msg, ml, "the value of %s is longer than %zu bytes: shorten it", key, text[k].n - 1);
                return -1;
            }
            snprintf(text[k].dst, text[k].n, "%s", v);
            if (!strcmp(key, "pareto") && strncmp(v, "saved ", 6) && strncmp(v, "cost ", 5)) {
                snprintf(msg, ml, "pareto = '%s': write 'saved LABEL' or 'cost LABEL'", v);
                return -1;
            }
            if ((!strcmp(key, "form") || !strcmp(key, "sparse")) && strcmp(v, "gatelab") && strcmp(v, "paper")) {
                snprintf(msg, ml, "%s = '%s': gatelab or paper", key, v);
                return -1;
            }
            if (!strcmp(key, "alpha_def") && strcmp(v, "hard") && strcmp(v, "soft")) {
                snprintf(msg, ml, "alpha_def = '%s': hard (on validation, skipping done) or soft (the paper's mean p)", v);
                return -1;
            }
            if (!strcmp(key, "quantity") && !cl_quantity_known(v)) {
                snprintf(msg, ml, "unknown quantity '%s' (value, diff, rel, within, vs_curve, rho, bench_ratio, "
                                  "bench_gap, bench_rss, bench_sparse)", v);
                return -1;
            }
            return 0;
        }
    return CL_NOT_MINE;
}

/* A number key of row r (paper_value, alpha, …). */
static int cl_set_num_key(claims_row *r, const char *key, const char *v, char *msg, size_t ml) {
    const struct {
        const char *key;
        double *dst;
    } num[] = {{"paper_value", &r->paper_value}, {"alpha", &r->alpha},     {"alpha_within", &r->alpha_within}, {"floor", &r->floor},
               {"ceiling", &r->ceiling},         {"scale", &r->scale},     {"effect", &r->effect}};
    for (size_t k = 0; k < sizeof num / sizeof num[0]; k++)
        if (!strcmp(key, num[k].key)) {
            if (claims_num(v, num[k].dst)) {
                snprintf(msg, ml, "%s = '%s' is not a number", key, v);
                return -1;
            }
            return 0;
        }
    return CL_NOT_MINE;
}

/* A key of row r with a fixed form: digits, primary, range, across, reading, context. */
static int cl_set_form_key(claims_row *r, const char *key, const char *v, char *msg, size_t ml) {
    if (!strcmp(key, "digits")) {
        double d;
        if (claims_num(v, &d) || d < 0 || d > 8 || d != floor(d)) {
            snprintf(msg, ml, "digits = '%s': give an integer 0..8", v);
            return -1;
        }
        r->digits = (int)d;
        return 0;
    }
    if (!strcmp(key, "primary")) {
        if (strcmp(v, "0") && strcmp(v, "1")) {
            snprintf(msg, ml, "primary = '%s': 1 (a primary endpoint named before the runs) or 0", v);
            return -1;
        }
        r->primary = !strcmp(v, "1");
        return 0;
    }
    if (!strcmp(key, "range")) { /* "LO HI": the quantity's range before scale */
        char a[64] = "", b[64] = "";
        if (sscanf(v, "%63s %63s", a, b) != 2 || claims_num(a, &r->range_lo) || claims_num(b, &r->range_hi) ||
            !(r->range_lo < r->range_hi)) {
            snprintf(msg, ml, "range = '%s': write 'LO HI' with LO < HI (the quantity's range, before scale)", v);
            return -1;
        }
        return 0;
    }
    if (!strcmp(key, "across")) {
        if (strcmp(v, "scale") && strcmp(v, "steps") && strcmp(v, "n_layer")) {
            snprintf(msg, ml, "across = '%s': scale, steps or n_layer (the element at the axis's largest value − "
                     "the one at its smallest)", v);
            return -1;
        }
        snprintf(r->across, sizeof r->across, "%s", v);
        return 0;
    }
    if (!strcmp(key, "reading")) {
        if (strcmp(v, "trend") && strcmp(v, "start") && strcmp(v, "mechanism")) {
            snprintf(msg, ml, "reading = '%s': trend (flips / shrinks / persists / grows), start or mechanism "
                     "(PREREGISTRATION.md Q1's sentences, with given = RUNS ; VERSUS)", v);
            return -1;
        }
        snprintf(r->reading, sizeof r->reading, "%s", v);
        return 0;
    }
    if (!strcmp(key, "context")) {
        if (strcmp(v, "yes") && strcmp(v, "no")) {
            snprintf(msg, ml, "context = '%s': yes or no", v);
            return -1;
        }
        r->context = !strcmp(v, "yes");
        return 0;
    }
    return CL_NOT_MINE;
}

/* expect = "above X", "below X", "within LO HI" or "none" of row r. */
static int cl_set_expect(claims_row *r, const char *v, char *msg, size_t ml) {
    char side[16] = "", rest[64] = "", hi[64] = "";
    if (!strcmp(v, "none")) {
        snprintf(r->expect, sizeof r->expect, "none");
        return 0;
    }
    if (!strncmp(v, "within", 6)) {
        if (sscanf(v, "%15s %63s %63s", side, rest, hi) != 3 || strcmp(side, "within") ||
            claims_num(rest, &r->threshold) || claims_num(hi, &r->threshold_hi) || !(r->threshold < r->threshold_hi)) {
            snprintf(msg, ml, "expect = '%s': write 'within LO HI' with LO < HI (an equivalence: the interval "
                     "wholly inside)", v);
            return -1;
        }
        snprintf(r->expect, sizeof r->expect, "within");
        return 0;
    }
    if (sscanf(v, "%15s %63s", side, rest) != 2 || (strcmp(side, "above") && strcmp(side, "below")) ||
        claims_num(rest, &r->threshold)) {
        snprintf(msg, ml, "expect = '%s': write 'above X', 'below X', 'within LO HI' or 'none'", v);
        return -1;
    }
    snprintf(r->expect, sizeof r->expect, "%s", side);
    return 0;
}

/* Set key of row r; -1 with a message on a bad key or value. */
static int cl_set(claims_row *r, const char *key, const char *v, char *msg, size_t ml) {
    int rc = cl_set_text_key(r, key, v, msg, ml);
    if (rc == CL_NOT_MINE) rc = cl_set_num_key(r, key, v, msg, ml);
    if (rc == CL_NOT_MINE) rc = cl_set_form_key(r, key, v, msg, ml);
    if (rc == CL_NOT_MINE && !strcmp(key, "expect")) rc = cl_set_expect(r, v, msg, ml);
    if (rc != CL_NOT_MINE) return rc;
    snprintf(msg, ml, "unknown key '%s'", key);
    return -1;
}

char *claims_trim(char *s) {
    while (*s == ' ' || *s == '\t') s++;
    size_t l = strlen(s);
    while (l && (s[l - 1] == ' ' || s[l - 1] == '\t' || s[l - 1] == '\r')) s[--l] = 0;
    return s;
}

/* 1 when word is one of the space-separated words of list. */
static int cl_has_word(const char *list, const char *word) {
    size_t l = strlen(word);
    for (const char *p = list; (p = strstr(p, word)); p++)
        if ((p == list || p[-1] == ' ') && (p[l] == 0 || p[l] == ' ')) return 1;
    return 0;
}

int claims_pilot_subst(const char *src, const char *val, char *out, size_t n) {
    size_t k = 0, lv = strlen(val);
    out[0] = 0;
    for (const char *p = src; *p;) {
        const char *q = strstr(p, "@pilot");
        size_t l = q ? (size_t)(q - p) : strlen(p);
        if (k + l + (q ? lv : 0) >= n) return -1;
        memcpy(out + k, p, l), k += l;
        if (!q) break;
        memcpy(out + k, val, lv), k += lv;
        p = q + 6;
    }
    out[k] = 0;
    return strstr(out, "@pilot") ? -1 : 0;
}

void claims_pick_value(const char *pick, const char *key, char *out, size_t n) {
    out[0] = 0;
    char pat[64];
    snprintf(pat, sizeof pat, "%s=", key);
    for (const char *p = pick; (p = strstr(p, pat)); p++)
        if (p == pick || p[-1] == ' ' || p[-1] == '\t') {
            p += strlen(pat);
            snprintf(out, n, "%.*s", (int)strcspn(p, " \t"), p);
            return;
        }
}

/* 1 when row picks scale=@base or scale=@top (the base scale of its data set). */
static int cl_on_base(const claims_row *r) {
    char w[32];
    claims_pick_value(r->runs, "scale", w, sizeof w);
    return !strcmp(w, "@base") || !strcmp(w, "@top");
}

void claims_base_data(const claims_file *cf, char *out, size_t n) {
    out[0] = 0;
    for (int i = 0; i < cf->n && !out[0]; i++)
        if (cl_on_base(&cf->rows[i])) claims_pick_value(cf->rows[i].runs, "data", out, n);
}

/* The axes `each` may split by (block apart: it splits one group by block). */
static const char *const cl_each_axes[] = {"lambda", "scale", "steps", "n_layer"};

/* 0 when each is "", "block" or words of cl_each_axes. */
static int cl_each_check(const char *each) {
    if (!each[0] || !strcmp(each, "block")) return 0;
    char buf[64];
    snprintf(buf, sizeof buf, "%s", each);
    for (char *save = NULL, *w = strtok_r(buf, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
        int ok = 0;
        for (size_t k = 0; k < sizeof cl_each_axes / sizeof cl_each_axes[0]; k++) ok |= !strcmp(w, cl_each_axes[k]);
        if (!ok) return -1;
    }
    return 0;
}

/* Each id of ids (separated by spaces or commas) is a row of the file: 0, or -1 with msg naming the section
 * ("question 2") and the id. */
static int cl_rows_known(const claims_file *cf, const char *ids, const char *what, int num, char *msg, size_t ml) {
    char buf[CLAIMS_TEXT];
    snprintf(buf, sizeof buf, "%s", ids);
    for (char *save = NULL, *w = strtok_r(buf, " \t,", &save); w; w = strtok_r(NULL, " \t,", &save)) {
        int found = 0;
        for (int k = 0; k < cf->n && !found; k++) found = !strcmp(cf->rows[k].id, w);
        if (!found) return snprintf(msg, ml, "%s %d names row [%s], which the file has not", what, num, w), -1;
    }
    return 0;
}

/* Every question has its text and rows, and each of its row ids is a row of the file. */
static int cl_check_questions(const claims_file *cf, char *msg, size_t ml) {
    for (int q = 0; q < cf->n_questions; q++) {
        const claims_question *qu = &cf->questions[q];
        if (!qu->text[0] || !qu->rows[0])
            return snprintf(msg, ml, "question %d needs text = and rows =", q + 1), -1;
        if (cl_rows_known(cf, qu->rows, "question", q + 1, msg, ml)) return -1;
    }
    return 0;
}

const char *const claims_table_keys[CLAIMS_COLS] = {"soft", "sparse_paper", "sparse_gatelab",
                                                     "alpha_paper", "alpha_hard", "tlops_saved"};

/* Every [table] line has its benchmark, model, paper and runs; its pick has only key=value words without
 * "@" (nothing resolves one here), at least one column, and each of its rows is a row of the file. */
static int cl_check_tables(const claims_file *cf, char *msg, size_t ml) {
    for (int q = 0; q < cf->n_tables; q++) {
        const claims_table *t = &cf->tables[q];
        if (!t->benchmark[0] || !t->model[0] || !t->paper[0] || !t->runs[0])
            return snprintf(msg, ml, "table %d needs benchmark =, model =, paper = and runs =", q + 1), -1;
        char buf[CLAIMS_TEXT];
        snprintf(buf, sizeof buf, "%s", t->runs);
        for (char *save = NULL, *w = strtok_r(buf, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
            const char *eq = strchr(w, '=');
            if (!eq || eq == w || !eq[1] || eq[1] == '@')
                return snprintf(msg, ml, "table %d: runs word '%s' is not key=value (no '@' value: a table line names "
                                         "its runs outright)", q + 1, w), -1;
        }
        int cols = 0;
        for (int c = 0; c < CLAIMS_COLS; c++) cols += t->col[c][0] != 0;
        if (!cols)
            return snprintf(msg, ml, "table %d reads no column (give at least one of soft =, sparse_paper =, "
                                     "sparse_gatelab =, alpha_paper =, alpha_hard =, tlops_saved =)", q + 1), -1;
        if (cl_rows_known(cf, t->rows, "table", q + 1, msg, ml)) return -1;
    }
    return 0;
}

/* Every summary line has its claims, text and row, the row is a row of the file, and no claim number
 * is on two lines (the first screen gives each claim one verdict). */
static int cl_check_summary(const claims_file *cf, char *msg, size_t ml) {
    for (int q = 0; q < cf->n_summary; q++) {
        const claims_summary *sm = &cf->summary[q];
        if (!sm->claims[0] || !sm->text[0] || !sm->row[0])
            return snprintf(msg, ml, "summary %d needs claims =, text = and row =", q + 1), -1;
        int found = 0;
        for (int k = 0; k < cf->n && !found; k++) found = !strcmp(cf->rows[k].id, sm->row);
        if (!found) return snprintf(msg, ml, "summary %d names row [%s], which the file has not", q + 1, sm->row), -1;
        char ids[64];
        snprintf(ids, sizeof ids, "%s", sm->claims);
        for (char *save = NULL, *w = strtok_r(ids, " \t,", &save); w; w = strtok_r(NULL, " \t,", &save))
            for (int p = 0; p < q; p++)
                if (cl_has_word(cf->summary[p].claims, w))
                    return snprintf(msg, ml, "claim %s is on summary lines %d and %d: give each claim one line", w,
                                    p + 1, q + 1), -1;
    }
    return 0;
}

/* The forms a row names are the ones it reads (never one form's number under the other's label):
 * sparse = paper reads hard_paper.* (the TSA paper's sparse form), never hard.* (gatelab's), and a row
 * reading hard_paper.* says sparse = paper; alpha_def = soft reads its α from train/alpha_paper.* (the
 * paper's mean of 1 − p, in the convention the row names), a row with an α to read (alpha =, vs_curve)
 * names it in alpha_metric, and no other row reads train/alpha_paper.* as α.  -1 with a message. */
/* 1 when the row's α is a point on a curve (vs_curve), not only its operating point's guard. */
static int reads_alpha_curve(const claims_row *r) { return !strcmp(r->quantity, "vs_curve"); }

static int cl_form_check(const claims_row *r, char *msg, size_t ml) {
    const int paper = !strcmp(r->sparse, "paper"), soft = !strcmp(r->alpha_def, "soft");
    const struct {
        const char *key, *v;
    } reads[] = {{"metric", r->metric}, {"metric_b", r->metric_b}, {"alpha_metric", r->alpha_metric}};
    for (size_t i = 0; i < sizeof reads / sizeof reads[0]; i++) {
        if (paper && strstr(reads[i].v, "/hard."))
            return snprintf(msg, ml, "row [%s]: sparse = paper reads the paper's sparse form, hard_paper.*, but %s = %s "
                            "names hard.* (gatelab's form)", r->id, reads[i].key, reads[i].v), -1;
        if (!paper && strstr(reads[i].v, "/hard_paper."))
            return snprintf(msg, ml, "row [%s]: %s = %s reads the TSA paper's sparse form (hard_paper.*): say sparse = "
                            "paper", r->id, reads[i].key, reads[i].v), -1;
    }
    const int reads_alpha = !isnan(r->alpha) || !strcmp(r->quantity, "vs_curve");
    if (soft && reads_alpha && strcmp(r->quantity, "bench_sparse")) {
        char alts[CLAIMS_TEXT];
        snprintf(alts, sizeof alts, "%s", r->alpha_metric);
        int n = 0, bad = 0;
        for (char *save = NULL, *a = strtok_r(alts, "|", &save); a; a = strtok_r(NULL, "|", &save), n++)
            bad |= strncmp(a, "train/alpha_paper.", 18) != 0;
        if (!n || bad)
            return snprintf(msg, ml, "row [%s]: alpha_def = soft reads the paper's α: alpha_metric = "
                            "train/alpha_paper.mean_evals (Shakespeare, enwik8), .last_eval (the λ sweep) or .last_batch "
                            "(the toy tasks)%s%s", r->id, n ? ", not " : "", r->alpha_metric), -1;
    }
    /* a hard row of the paper's model may judge its operating point on the paper's α (the paper's point in its
     * own convention); a vs_curve row reads its point on the curve at that α, so there it is the row's α */
    if (!soft && strstr(r->alpha_metric, "train/alpha_paper.") && (strcmp(r->form, "paper") || reads_alpha_curve(r)))
        return snprintf(msg, ml, "row [%s]: alpha_metric = %s is the paper's soft α: say alpha_def = soft (or, on a "
                        "row of the paper's model, form = paper: its operating point judged on the paper's α)", r->id,
                        r->alpha_metric), -1;
    return 0;
}

/* Check a finished row; -1 with a message. */
static int cl_check(const claims_row *r, char *msg, size_t ml) {
    if (!r->claim[0]) return snprintf(msg, ml, "row [%s] has no claim = (the claim it belongs to)", r->id), -1;
    if (!r->paper[0]) return snprintf(msg, ml, "row [%s] has no paper = (what the paper says)", r->id), -1;
    if (!r->quantity[0]) return snprintf(msg, ml, "row [%s] has no quantity =", r->id), -1;
    int bench = !strncmp(r->quantity, "bench_", 6);
    if (bench && !r->bench_a[0]) return snprintf(msg, ml, "row [%s]: a bench quantity needs bench_a = RUN", r->id), -1;
    if (!bench && !r->metric[0]) return snprintf(msg, ml, "row [%s] has no metric = split/name", r->id), -1;
    int paired = !strcmp(r->quantity, "diff") || !strcmp(r->quantity, "rel") || !strcmp(r->quantity, "vs_curve");
    if (paired) {
        char axis[64];
        snprintf(axis, sizeof axis, "%.*s", (int)strcspn(r->versus, "="), r->versus);
        if (!strchr(r->versus, '=') || !runset_axis_known(axis))
            return snprintf(msg, ml, "row [%s]: %s needs versus = AXIS=VALUE with a known axis (depth_routing, "
                                     "value_residual, cross_layer, task, tsa_lambda, scale)", r->id, r->quantity), -1;
    }
    if (!strcmp(r->quantity, "within") && !r->metric_b[0])
        return snprintf(msg, ml, "row [%s]: within needs metric_b = (the metric subtracted)", r->id), -1;
    if (!strcmp(r->quantity, "vs_curve") && !r->curve[0])
        return snprintf(msg, ml, "row [%s]: vs_curve needs curve = split/prefix (e.g. ablation/exit.tau)", r->id), -1;
    if (strstr(r->runs, "@alpha") && isnan(r->alpha))
        return snprintf(msg, ml, "row [%s]: lambda=@alpha needs alpha = the paper's α", r->id), -1;
    if (!isnan(r->alpha_within) && ((!strstr(r->runs, "@alpha") && strcmp(r->quantity, "bench_sparse")) ||
                                    !(r->alpha_within > 0) || isnan(r->alpha)))
        return snprintf(msg, ml, "row [%s]: alpha_within needs alpha =, lambda=@alpha in runs (or quantity = "
                        "bench_sparse) and a value > 0", r->id), -1;
    if (r->across[0] && !cl_has_word(r->each, r->across))
        return snprintf(msg, ml, "row [%s]: across = %s needs %s among each's words", r->id, r->across, r->across), -1;
    if (!strcmp(r->reading, "trend") && !r->across[0])
        return snprintf(msg, ml, "row [%s]: reading = %s needs across = AXIS", r->id, r->reading), -1;
    if (r->reading[0] && strcmp(r->reading, "trend") && (!strchr(r->given, ';') || r->across[0] || r->each[0]))
        return snprintf(msg, ml, "row [%s]: reading = %s needs given = RUNS ; VERSUS (the reference pair) and "
                        "no each/across", r->id, r->reading), -1;
    if (r->decide[0] && (!r->each[0] || !strcmp(r->each, "block") || r->across[0]))
        return snprintf(msg, ml, "row [%s]: decide = LABEL needs each = (words of lambda, scale, steps, n_layer) and no "
                        "across", r->id), -1;
    if (cl_each_check(r->each))
        return snprintf(msg, ml, "row [%s]: each = '%s': block alone, or words of lambda, scale, steps, n_layer", r->id,
                        r->each), -1;
    if (cl_form_check(r, msg, ml)) return -1;
    if (!strcmp(r->each, "block") && !strstr(r->metric, "{b}"))
        return snprintf(msg, ml, "row [%s]: each = block needs {b} (the block) in metric", r->id), -1;
    if (r->pilot[0] && !strstr(r->pilot, "@pilot") && (strstr(r->runs, "@pilot") || strstr(r->versus, "@pilot"))) {
        char out[CLAIMS_TEXT];
        if (claims_pilot_subst(r->runs, r->pilot, out, sizeof out) ||
            claims_pilot_subst(r->versus, r->pilot, out, sizeof out))
            return snprintf(msg, ml, "row [%s]: pilot = '%s' put in place of @pilot in runs and versus leaves an "
                            "@pilot (or a text longer than %d bytes): write the pilot's choice itself", r->id,
                            r->pilot, CLAIMS_TEXT - 1), -1;
    }
    /* the forest figure draws (paper_value − threshold) × scale: a finite number, or the row cannot be drawn */
    if (!isnan(r->paper_value) &&
        (!isfinite(r->paper_value * r->scale) ||
         (!isnan(r->threshold) && !isfinite((r->paper_value - r->threshold) * r->scale))))
        return snprintf(msg, ml, "row [%s]: paper_value × scale (%g × %g) is not a finite number: give them in "
                        "another unit", r->id, r->paper_value, r->scale), -1;
    char data[64];
    claims_pick_value(r->runs, "data", data, sizeof data);
    if (cl_on_base(r) && (!data[0] || strpbrk(data, "*|,")))
        return snprintf(msg, ml, "row [%s]: scale=@base or @top needs data=NAME in runs (one data set, whose base "
                        "scale it means)", r->id), -1;
    if (r->agg[0] && strcmp(r->agg, "mean") && strcmp(r->agg, "gini") && strncmp(r->agg, "share_below ", 12))
        return snprintf(msg, ml, "row [%s]: agg = '%s': mean, gini or share_below X", r->id, r->agg), -1;
    return 0;
}

/* What a claims file's line is in: before any section, a row, a disclosure, [report], a question, a table line or
 * a summary line. */
typedef enum { SEC_NONE, SEC_ROW, SEC_DISCLOSURE, SEC_HEAD, SEC_QUESTION, SEC_SUMMARY, SEC_TABLE } cl_section;

/* Open section [sec] of cf (cap: the rows' allocation): *in becomes its kind. Returns 0, or -1 with msg. */
static int cl_open_section(claims_file *cf, const char *sec, int *cap, cl_section *in, char *msg, size_t msglen) {
    if (!strcmp(sec, "report")) {
        *in = SEC_HEAD;
    } else if (!strncmp(sec, "disclosure", 10)) {
        if (cf->n_disclosures == 32) return snprintf(msg, msglen, "more than 32 disclosures"), -1;
        cf->n_disclosures++;
        *in = SEC_DISCLOSURE;
    } else if (!strncmp(sec, "summary", 7) && (!sec[7] || sec[7] == ' ')) {
        if (cf->n_summary == 12)
            return snprintf(msg, msglen, "more than 12 summary lines (the first screen holds at most 12)"), -1;
        cf->n_summary++;
        *in = SEC_SUMMARY;
    } else if (!strncmp(sec, "table", 5) && (!sec[5] || sec[5] == ' ')) {
        if (cf->n_tables == 16) return snprintf(msg, msglen, "more than 16 table lines"), -1;
        cf->n_tables++;
        *in = SEC_TABLE;
    } else if (!strncmp(sec, "question", 8) && (!sec[8] || sec[8] == ' ')) {
        if (cf->n_questions == 16) return snprintf(msg, msglen, "more than 16 questions"), -1;
        cf->n_questions++;
        *in = SEC_QUESTION;
    } else {
        if (!*sec || strlen(sec) >= sizeof cf->rows[0].id) return snprintf(msg, msglen, "a row id is 1..31 bytes"), -1;
        for (int k = 0; k < cf->n; k++)
            if (!strcmp(cf->rows[k].id, sec)) return snprintf(msg, msglen, "row [%s] twice", sec), -1;
        if (cf->n && cl_check(&cf->rows[cf->n - 1], msg, msglen)) return -1;
        if (cf->n == *cap) {
            *cap = *cap ? 2 * *cap : 32;
            claims_row *nr = realloc(cf->rows, (size_t)*cap * sizeof *nr);
            if (!nr) return snprintf(msg, msglen, "out of memory"), -1;
            cf->rows = nr;
        }
        cl_row_defaults(&cf->rows[cf->n]);
        snprintf(cf->rows[cf->n].id, sizeof cf->rows[cf->n].id, "%s", sec);
        cf->n++;
        *in = SEC_ROW;
    }
    return 0;
}

/* key = val in a section that is not a row ([summary], [question], [table], [report], [disclosure]): 0, or -1 with
 * msg naming an unknown key or a value too long. */
static int cl_set_text(claims_file *cf, cl_section in, const char *key, const char *val, char *msg, size_t msglen) {
    char *dst = NULL;
    size_t n = CLAIMS_TEXT;
    const char *takes = "";
    if (in == SEC_SUMMARY) {
        claims_summary *sm = &cf->summary[cf->n_summary - 1];
        struct {
            const char *k;
            char *dst;
            size_t n;
        } f[] = {{"claims", sm->claims, sizeof sm->claims}, {"text", sm->text, sizeof sm->text},
                 {"row", sm->row, sizeof sm->row},          {"element", sm->element, sizeof sm->element},
                 {"scale", sm->scale, sizeof sm->scale}};
        for (size_t k = 0; k < sizeof f / sizeof f[0]; k++)
            if (!strcmp(key, f[k].k)) dst = f[k].dst, n = f[k].n;
        takes = "a [summary] section takes claims =, text =, row =, element = and scale =";
    } else if (in == SEC_TABLE) {
        claims_table *t = &cf->tables[cf->n_tables - 1];
        struct {
            const char *k;
            char *dst;
            size_t n;
        } f[] = {{"benchmark", t->benchmark, sizeof t->benchmark},
                 {"model", t->model, sizeof t->model},
                 {"paper", t->paper, sizeof t->paper},
                 {"runs", t->runs, sizeof t->runs},
                 {"rows", t->rows, sizeof t->rows}};
        for (size_t k = 0; k < sizeof f / sizeof f[0]; k++)
            if (!strcmp(key, f[k].k)) dst = f[k].dst, n = f[k].n;
        for (int c = 0; c < CLAIMS_COLS; c++)
            if (!strcmp(key, claims_table_keys[c])) dst = t->col[c], n = sizeof t->col[c];
        takes = "a [table] section takes benchmark =, model =, paper =, runs =, rows = and the columns soft =, "
                "sparse_paper =, sparse_gatelab =, alpha_paper =, alpha_hard =, tlops_saved =";
    } else if (in == SEC_QUESTION) {
        claims_question *q = &cf->questions[cf->n_questions - 1];
        dst = !strcmp(key, "text") ? q->text : !strcmp(key, "rows") ? q->rows : !strcmp(key, "groups") ? q->groups : NULL;
        takes = "a [question] section takes text =, rows = and groups =";
    } else {
        const int head = in == SEC_HEAD;
        if (head && !strcmp(key, "data_title")) dst = cf->data_title, n = sizeof cf->data_title;
        else if (!strcmp(key, head ? "title" : "text")) dst = head ? cf->title : cf->disclosures[cf->n_disclosures - 1];
        takes = head ? "a [report] section takes title = and data_title =" : "a [disclosure] section takes text =";
    }
    if (!dst) return snprintf(msg, msglen, "unknown key '%s' (%s)", key, takes), -1;
    if (strlen(val) >= n) return snprintf(msg, msglen, "%s is longer than %zu bytes", key, n - 1), -1;
    snprintf(dst, n, "%s", val);
    return 0;
}

/* The state of one claims_parse: the file being filled, the section being read and its keys. */
typedef struct {
    claims_file *cf;
    int cap;         /* the rows' allocation */
    cl_section in;   /* what the section being read is */
    char msg[400];   /* why the parse stopped */
    /* the keys of the section being read, with their lines: a key given twice is refused, never the last
     * value taken silently (every key of a row is shorter than 16 bytes; there are fewer than 48) */
    char seen[48][16];
    int seen_line[48], n_seen;
} cl_parse;

static int cl_on_section(void *user, const char *sec, int line) {
    (void)line;
    cl_parse *ps = user;
    ps->n_seen = 0;
    return cl_open_section(ps->cf, sec, &ps->cap, &ps->in, ps->msg, sizeof ps->msg);
}

static int cl_on_key(void *user, const char *section, const char *key, const char *val, int line) {
    (void)section; /* cl_on_section opened it */
    cl_parse *ps = user;
    if (ps->in == SEC_NONE) return snprintf(ps->msg, sizeof ps->msg, "key '%s' before any [section]", key), -1;
    for (int k = 0; k < ps->n_seen; k++)
        if (!strcmp(ps->seen[k], key))
            return snprintf(ps->msg, sizeof ps->msg, "key '%s' given twice in this section (first on line %d): keep one",
                            key, ps->seen_line[k]), -1;
    if (strlen(key) < sizeof ps->seen[0] && ps->n_seen < 48) { /* a longer or 49th key is unknown: refused below */
        snprintf(ps->seen[ps->n_seen], sizeof ps->seen[0], "%s", key);
        ps->seen_line[ps->n_seen++] = line;
    }
    if (ps->in != SEC_ROW) return cl_set_text(ps->cf, ps->in, key, val, ps->msg, sizeof ps->msg);
    return cl_set(&ps->cf->rows[ps->cf->n - 1], key, val, ps->msg, sizeof ps->msg);
}

/* The checks of the whole file once every line is read: the last row, at least one row, the questions and
 * the summary.  Returns 0, or -1 with msg. */
static int cl_check_file(const claims_file *cf, char *msg, size_t ml) {
    if (cf->n && cl_check(&cf->rows[cf->n - 1], msg, ml)) return -1;
    if (!cf->n) return snprintf(msg, ml, "no rows"), -1;
    return cl_check_questions(cf, msg, ml) || cl_check_summary(cf, msg, ml) || cl_check_tables(cf, msg, ml) ? -1 : 0;
}

int claims_parse(const char *text, const char *name, claims_file *cf, char *err, size_t errlen) {
    memset(cf, 0, sizeof *cf);
    enum { LINE_MAX_BYTES = 4095 };
    cl_parse ps = {.cf = cf, .in = SEC_NONE};
    /* ';' inside a value is text ("given = RUNS ; VERSUS"), never a comment */
    const initext_spec spec = {cl_on_key, cl_on_section, &ps, LINE_MAX_BYTES, 0};
    int line_no = 0;
    switch (initext_parse(text, &spec, &line_no)) {
    case INITEXT_OK:
        line_no = -1;
        if (!cl_check_file(cf, ps.msg, sizeof ps.msg)) return 0;
        break;
    case INITEXT_SYNTAX: snprintf(ps.msg, sizeof ps.msg, "expected key = value or [section]"); break;
    case INITEXT_SECTION: snprintf(ps.msg, sizeof ps.msg, "a section line is [name] with nothing after it"); break;
    case INITEXT_LONG: snprintf(ps.msg, sizeof ps.msg, "line longer than %d bytes", LINE_MAX_BYTES); break;
    case INITEXT_NOMEM: snprintf(ps.msg, sizeof ps.msg, "out of memory"); break;
    case INITEXT_STOPPED: break; /* the callback's own message */
    }
    if (line_no > 0) snprintf(err, errlen, "%s:%d: %s", name, line_no, ps.msg);
    else snprintf(err, errlen, "%s: %s", name, ps.msg);
    claims_free(cf);
    return -1;
}

int claims_load(const char *path, claims_file *cf, char *err, size_t errlen) {
    memset(cf, 0, sizeof *cf);
    size_t n;
    char *buf = fileio_slurp(path, "claims file", 0, &n, err, errlen);
    if (!buf) return -1;
    if (strlen(buf) != n) {
        free(buf);
        snprintf(err, errlen, "%s holds a NUL byte: it is not a text file", path);
        return -1;
    }
    int rc = claims_parse(buf, path, cf, err, errlen);
    free(buf);
    return rc;
}

void claims_free(claims_file *cf) {
    free(cf->rows);
    cf->rows = NULL;
    cf->n = 0;
}

const char *claims_verdict_name(claims_verdict v) {
    switch (v) {
    case CV_YES: return "reproduced";
    case CV_MAGNITUDE: return "direction reproduced, magnitude differs";
    case CV_NO: return "not reproduced";
    case CV_INCONCLUSIVE: return "inconclusive";
    case CV_UNINFORMATIVE: return "uninformative";
    case CV_DESCRIBED: return "described (no threshold)";
    case CV_NOT_REACHED: return "operating point not reached";
    case CV_PREMISE: return "not judged (premise failed)";
    case CV_NOT_MEASURED: break;
    }
    return "not measured";
}

