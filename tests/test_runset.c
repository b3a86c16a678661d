/*
 * test_runset.c — the run set's two rules and the claims evaluator on a
 * registry built here, where the old identity rules disagree: two runs of the
 * same data, scale and variant that differ in train.lr (the old tables rule,
 * data/scale/variant/λ, merged them; the group rule keeps them apart), and a
 * seed's run that differs only in bookkeeping (threads, log.name: one group).
 * Checks: groups (runset and tables agree), the paired partner (same seed,
 * depth_routing freed with its tsa_lambda), metrics by key, and a claims
 * file: parsed, judged (paired difference by hand), magnitude-differs, "not
 * measured" with its reason, and a parse error naming file and line.
 * Then a second, hostile registry (experiment grp-h, data "hostile") where the
 * three old rules disagree — seeds that differ only in bookkeeping and in a
 * late key left out at its default (data.tokenizer absent vs "char"), runs
 * that differ only in train.steps, data.tokenizer = bpe, model.sat_gate —
 * rendered by the tables, the figures (loss.tsv's blocks and n), the HTML
 * page (its inlined tables) and the claims evaluator the paper report uses
 * (a row's n and paired mean), all checked against the run set's groups and
 * partners.  One line per check; exits non-zero on any failure.  Values are exact binary fractions
 * where compared exactly.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/paper/claims.h"
#include "analysis/render/figures.h"
#include "analysis/render/figures_int.h"
#include "analysis/render/html.h"
#include "analysis/paper/paper.h"
#include "analysis/runs/runset.h"
#include "analysis/render/tables.h"
#include "store/registry.h"

static int fails, checks; /* tests/run.sh counts the cmocka-style summary lines printed at the end */

static void ok(const char *what, int cond) {
    printf("%s %s\n", cond ? "ok  " : "FAIL", what);
    fails += !cond;
    checks++;
}

/* runset_group_each callbacks: collect "key=text\n" lines (flagging late-at-default and bookkeeping
 * keys, which must never come), and stop at the second call. */
static int group_line(const char *key, const char *text, void *ctx) {
    struct {
        char *buf;
        int *n, *late, *bookkeeping;
    } *a = ctx;
    size_t l = strlen(a->buf);
    snprintf(a->buf + l, 8192 - l, "%s=%s\n", key, text);
    ++*a->n;
    *a->late += !strcmp(key, "model.sat_gate") || !strcmp(key, "data.tokenizer");
    *a->bookkeeping += !strncmp(key, "log.", 4) || !strcmp(key, "train.seed") || !strcmp(key, "train.threads");
    return 0;
}

static int group_stop(const char *key, const char *text, void *ctx) {
    (void)key, (void)text;
    return ++*(int *)ctx == 2 ? 9 : 0;
}

static void add_run(gl_db *db, long long exp, const char *id, const char *ini, double loss) {
    char err[1024];
    gl_metric m = {.step = 10, .split = "val", .name = "final.loss", .value = loss, .prov = {"val", 0, 100, 6400}};
    int rc = db_run_create(db, exp, id, id, ini, "h", 1, "SCHEDULED", err, sizeof err) ||
             db_params_put_ini(db, id, ini, err, sizeof err) || db_run_start(db, id, err, sizeof err) ||
             db_metrics_log(db, id, &m, 1, err, sizeof err) || db_run_finish(db, id, "FINISHED", 0, NULL, err, sizeof err);
    if (rc) printf("FAIL add_run %s: %s\n", id, err), fails++;
}

/* A hostile-registry run: the headline, plus train/loss and val/loss series (the figures' curves). */
static void add_run_series(gl_db *db, long long exp, const char *id, const char *ini, double loss) {
    char err[1024];
    add_run(db, exp, id, ini, loss);
    gl_metric m[2] = {{.step = 5, .split = "train", .name = "loss", .value = loss + 1},
                      {.step = 10, .split = "val", .name = "loss", .value = loss}};
    if (db_metrics_log(db, id, m, 2, err, sizeof err)) printf("FAIL series %s: %s\n", id, err), fails++;
}

/* Lines of path starting with prefix; *with gets those that also contain needle (NULL: none). */
static int count_lines(const char *path, const char *prefix, const char *needle, int *with) {
    FILE *f = fopen(path, "r");
    char line[4096];
    int n = 0;
    if (with) *with = 0;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, prefix, strlen(prefix))) {
            n++;
            if (with && needle && strstr(line, needle)) (*with)++;
        }
    if (f) fclose(f);
    return f ? n : -1;
}

static const runset_run *find(const runset *rs, const char *id) {
    for (int i = 0; i < rs->n; i++)
        if (!strcmp(rs->r[i].t.run_id, id)) return &rs->r[i];
    return NULL;
}

#define CFGS(sc, vr, dr, lam, lr, seed, extra)                                                                       \
    "[model]\nscale = " sc "\nvalue_residual = " vr "\ndepth_routing = " dr "\ntsa_lambda = " lam                    \
    "\n[data]\ntask = text\nfile = tinyshakespeare.txt\n[train]\nlr = " lr "\nseed = " seed "\n" extra
#define CFG(vr, dr, lam, lr, seed, extra)                                                                            \
    "[model]\nscale = xs\nvalue_residual = " vr "\ndepth_routing = " dr "\ntsa_lambda = " lam                        \
    "\n[data]\ntask = text\nfile = tinyshakespeare.txt\n[train]\nlr = " lr "\nseed = " seed "\n" extra

/* claims_parse refuses text with a message that holds want (the file is freed either way). */
static int parse_refused(const char *text, const char *want) {
    claims_file cf;
    char err[1024] = "";
    const int rc = claims_parse(text, "r.ini", &cf, err, sizeof err);
    if (!rc) claims_free(&cf);
    if (rc && !strstr(err, want)) printf("     refused, but with: %s\n", err);
    return rc != 0 && strstr(err, want) != NULL;
}

/* One value row (id A) after head, for the question checks. */
#define ROW_A "[A]\nclaim = 1\npaper = p\nquantity = value\nruns = data=d\nmetric = val/final.loss\n"

int main(void) {
    char dir[] = "/tmp/gatelab-test-runset-XXXXXX", path[256], err[1024] = "";
    if (!mkdtemp(dir)) return 1;
    snprintf(path, sizeof path, "%s/gatelab.db", dir);
    gl_db *db = NULL;
    long long e;
    if (db_open(&db, path, err, sizeof err) || db_experiment_ensure(db, "paper-x", "", &e, err, sizeof err)) {
        printf("FAIL registry: %s\n", err);
        return 1;
    }
    add_run(db, e, "base1", CFG("none", "none", "0.01", "0.001", "1", ""), 1.5);
    add_run(db, e, "base2", CFG("none", "none", "0.01", "0.001", "2", "threads = 4\n[log]\nname = other\n"), 1.75);
    add_run(db, e, "base1-lr", CFG("none", "none", "0.01", "0.002", "1", ""), 1.0);
    add_run(db, e, "tsa1", CFG("none", "tsa", "0.05", "0.001", "1", ""), 1.625);
    add_run(db, e, "tsa2", CFG("none", "tsa", "0.05", "0.001", "2", ""), 2.0);
    /* a second scale, for across = scale: TSA − dense = {0.5, 0.75} at s against {0.125, 0.25} at xs */
    add_run(db, e, "base-s1", CFGS("s", "none", "none", "0.01", "0.001", "1", ""), 1.0);
    add_run(db, e, "base-s2", CFGS("s", "none", "none", "0.01", "0.001", "2", ""), 1.0);
    add_run(db, e, "tsa-s1", CFGS("s", "none", "tsa", "0.05", "0.001", "1", ""), 1.5);
    add_run(db, e, "tsa-s2", CFGS("s", "none", "tsa", "0.05", "0.001", "2", ""), 1.75);

    /* a row whose name carries its partner (meas22's difficulty rows), read back through a '*' key */
    metric_key dk;
    metric_partner(&dk, METRIC_DIFFICULTY, "base1", 22, "rho");
    gl_metric dm = {.step = 10, .split = "analysis", .name = dk.name, .params = dk.params, .value = 0.375};
    if (db_metrics_log(db, "tsa1", &dm, 1, err, sizeof err)) printf("FAIL log difficulty: %s\n", err), fails++;
    runset rs = {0};
    ok("runset_load", runset_load(db, "paper-", &rs, err, sizeof err) == 0 && rs.n == 9);
    const runset_run *b1 = find(&rs, "base1"), *b2 = find(&rs, "base2"), *bl = find(&rs, "base1-lr"),
                     *t1 = find(&rs, "tsa1"), *t2 = find(&rs, "tsa2");
    ok("the xs runs loaded", b1 && b2 && bl && t1 && t2);
    if (!(b1 && b2 && bl && t1 && t2)) return 1;
    ok("group: seeds 1 and 2 (threads, log.name differ) are one group", runset_same_group(b1, b2));
    ok("group: train.lr 0.002 is another group (the old tables rule merged it)", !runset_same_group(b1, bl));
    ok("group: TSA is another group", !runset_same_group(b1, t1));
    ok("tables agree: base1 and base2 share runset_row.group", b1->t.group == b2->t.group);
    ok("tables agree: base1-lr has its own runset_row.group", b1->t.group != bl->t.group);
    ok("partner of tsa1 along depth_routing=none is base1 (same seed, same lr)",
       runset_partner(&rs, t1, "depth_routing", "none") == b1);
    ok("partner of tsa2 is base2 (bookkeeping keys ignored)", runset_partner(&rs, t2, "depth_routing", "none") == b2);
    ok("no partner along an unknown axis", runset_partner(&rs, t1, "colour", "none") == NULL);
    /* the paper's TSA form and exit form are routing knobs: a paper-form TSA run (round two's toy_off_tsa
     * line) pairs with the dense run of its seed, and with the paper-form early-exit run */
    const unsigned long long kd = runset_partner_key_ini(CFG("none", "none", "0.01", "0.001", "1", ""), "depth_routing"),
                             kp = runset_partner_key_ini(CFG("none", "tsa", "0.01", "0.001", "1", "[model]\ntsa_form = paper\n"
                                                             "router_init_bias = -1\n"), "depth_routing"),
                             ke = runset_partner_key_ini(CFG("none", "early_exit", "0.01", "0.001", "1", "[model]\n"
                                                             "exit_form = paper\nexit_weighting = uniform\n"), "depth_routing"),
                             k2 = runset_partner_key_ini(CFG("none", "tsa", "0.01", "0.001", "2", "[model]\ntsa_form = paper\n"),
                                                         "depth_routing");
    ok("partner keys: TSA (tsa_form = paper) = dense = early exit (exit_form = paper) of one seed", kd == kp && kd == ke);
    ok("partner keys: another seed differs", kp != k2);
    ok("metric by key: val/final.loss of tsa1 = 1.625", runset_num(t1, "val/final.loss") == 1.625);
    ok("absent metric is NaN", isnan(runset_num(t1, "val/hard.loss")));
    ok("a '*' key finds difficulty.<partner>.seed<N>.rho", runset_num(t1, "analysis/difficulty.*.rho") == 0.375);
    ok("a '*' key with no match is NaN", isnan(runset_num(t1, "analysis/difficulty.*.rho_lo")));
    paper_run *pr = NULL;
    int npr = 0;
    ok("paper_collect (a view of the run set)", paper_collect(db, &pr, &npr, err, sizeof err) == 0 && npr == 9);
    const paper_run *pt1 = NULL, *pb1 = NULL;
    for (int i = 0; i < npr; i++) {
        if (!strcmp(pr[i].t.run_id, "tsa1")) pt1 = &pr[i];
        if (!strcmp(pr[i].t.run_id, "base1")) pb1 = &pr[i];
    }
    ok("paper_depth_partner(tsa1, none) = base1 (the run set's partner rule)",
       pt1 && pb1 && paper_depth_partner(pr, npr, pt1, "none") == pb1);
    ok("paper_depth_partner(base1, tsa) = tsa1", pt1 && pb1 && paper_depth_partner(pr, npr, pb1, "tsa") == pt1);
    free(pr);

    /* the tables render the same groups: two baseline rows at xs (lr 0.001 with seeds 1, 2; lr 0.002 with seed 1),
     * where the old data/scale/variant/λ rule printed one row over three seeds */
    char tdir[300];
    snprintf(tdir, sizeof tdir, "%s/tables", dir);
    tables_summary ts;
    ok("tables_write_all", tables_write_all(db, "paper-x", tdir, &ts, err, sizeof err) == 0);
    char tpath[400], line[2048];
    snprintf(tpath, sizeof tpath, "%s/loss_by_variant.md", tdir);
    FILE *tf = fopen(tpath, "r");
    int base_rows = 0, three = 0;
    while (tf && fgets(line, sizeof line, tf))
        if (!strncmp(line, "| tinyshakespeare | xs | baseline |", 35)) {
            base_rows++;
            three |= strstr(line, "| 3 |") != NULL;
        }
    if (tf) fclose(tf);
    printf("     loss_by_variant.md: %d baseline rows at xs\n", base_rows);
    ok("tables: two baseline groups at xs (the lr runs apart), none over three seeds", base_rows == 2 && !three);

    const char *text = "[report]\ntitle = t\n[disclosure 1]\ntext = changed\n"
                       "[A]\nclaim = 1\npaper = TSA costs loss\npaper_value = 0.5\nquantity = diff\n"
                       "runs = data=tinyshakespeare scale=xs depth_routing=tsa\nmetric = val/hard.loss|val/final.loss\n"
                       "metric_b = val/final.loss\nversus = depth_routing=none\nexpect = above 0\n"
                       "[B]\nclaim = 2\npaper = p\nquantity = value\nruns = scale=xs depth_routing=tsa\n"
                       "metric = ablation/random.all.delta_loss\nexpect = above 0\n"
                       "[C]\nclaim = 3\npaper = grows with depth\nquantity = diff\nruns = depth_routing=tsa\n"
                       "each = scale\nacross = scale\nmetric = val/final.loss\nversus = depth_routing=none\n"
                       "expect = above 0\n"
                       "[D]\nclaim = 4\npaper = no cost, reference at the ceiling\nquantity = diff\n"
                       "runs = data=tinyshakespeare scale=xs depth_routing=tsa\nmetric = val/final.loss\n"
                       "metric_b = val/final.loss\nversus = depth_routing=none\nexpect = above -1\nceiling = 0\n"
                       "[E]\nclaim = 5\npaper = a cost below the threshold, reference at the ceiling\nquantity = diff\n"
                       "runs = data=tinyshakespeare scale=xs depth_routing=tsa\nmetric = val/final.loss\n"
                       "metric_b = val/final.loss\nversus = depth_routing=none\nexpect = above 1\nceiling = 0\n"
                       "[F]\nclaim = 6\npaper = no routed run trained, the reference at the ceiling\nquantity = diff\n"
                       "runs = data=tinyshakespeare scale=xs depth_routing=tsa lambda=0.5\nmetric = val/final.loss\n"
                       "metric_b = val/final.loss\nversus = depth_routing=none\nexpect = above -1\nceiling = 0\n"
                       "[G]\nclaim = 7\npaper = no routed run trained, the reference below the ceiling\nquantity = diff\n"
                       "runs = data=tinyshakespeare scale=xs depth_routing=tsa lambda=0.5\nmetric = val/final.loss\n"
                       "metric_b = val/final.loss\nversus = depth_routing=none\nexpect = above -1\nceiling = 100\n";
    claims_file cf;
    ok("claims_parse", claims_parse(text, "t.ini", &cf, err, sizeof err) == 0 && cf.n == 7 && cf.n_disclosures == 1);
    claims_result r;
    claims_eval(&cf.rows[0], &rs, &r);
    /* differences: tsa1 − base1 = 0.125, tsa2 − base2 = 0.25: mean 0.1875 */
    ok("paired difference over seeds: n 2, mean 0.1875", r.ne == 1 && r.e[0].s.n == 2 && r.e[0].s.mean == 0.1875);
    printf("     interval [%g, %g], verdict %s, measured: %s\n", r.e[0].s.lo, r.e[0].s.hi, claims_verdict_name(r.v),
           r.measured);
    ok("the soft fallback is stated", strstr(r.measured, "soft (hard not measured): val/final.loss") != NULL);
    ok("two seeds: the t(1) interval straddles 0: inconclusive", r.v == CV_INCONCLUSIVE);
    ok("the runs are named", strstr(r.runs, "tsa1") && strstr(r.runs, "base2"));
    claims_eval(&cf.rows[1], &rs, &r);
    ok("absent metric: not measured with its reason",
       r.v == CV_NOT_MEASURED && strstr(r.why, "ablation/random.all.delta_loss") != NULL);
    /* the same pairs, t(1) interval [−0.61, +0.98], with the reference (base final.loss) above a ceiling of 0:
     * a pass (threshold −1) is uninformative, a failure (threshold +1: the interval lies below it) stays one */
    claims_eval(&cf.rows[3], &rs, &r);
    ok("ceiling: a pass is uninformative", r.v == CV_UNINFORMATIVE && strstr(r.why, "cannot show") != NULL);
    claims_eval(&cf.rows[4], &rs, &r);
    ok("ceiling: a result below the threshold is not reproduced", r.v == CV_NO && strstr(r.why, "ceiling") != NULL);
    /* no TSA run at λ 0.5: with every reference run (the three dense xs runs) at the ceiling the row is
     * uninformative, naming the reference; with one below it, not measured */
    claims_eval(&cf.rows[5], &rs, &r);
    printf("     %s\n", r.why);
    ok("ceiling rule: no routed run, every reference at the ceiling: uninformative, the reference named",
       r.v == CV_UNINFORMATIVE && r.ne == 0 && strstr(r.why, "depth_routing=none") && strstr(r.why, "3 runs") &&
           strstr(r.why, "reference (`data=tinyshakespeare scale=xs depth_routing=none`:"));
    claims_eval(&cf.rows[6], &rs, &r);
    ok("ceiling rule: the reference below the ceiling: not measured", r.v == CV_NOT_MEASURED &&
       strstr(r.why, "no finished run matches"));
    claims_eval(&cf.rows[2], &rs, &r);
    /* across: (s: mean 0.625, sd 0.1768) − (xs: mean 0.1875, sd 0.0884) = 0.4375 */
    ok("across = scale: three elements, the last the deepest − the shallowest",
       r.ne == 3 && strstr(r.e[2].label, "scale s") == r.e[2].label && strstr(r.e[2].label, "scale xs"));
    ok("across = scale: Welch difference 0.4375", r.ne == 3 && fabs(r.e[2].s.mean - 0.4375) < 1e-12);
    ok("across = scale: per-scale elements are described, not judged",
       r.ne == 3 && r.e[0].v == CV_DESCRIBED && r.e[1].v == CV_DESCRIBED);
    claims_free(&cf);
    ok("bad quantity: error names file and line",
       claims_parse("[A]\nclaim = 1\nquantity = nope\n", "bad.ini", &cf, err, sizeof err) == -1 &&
           strstr(err, "bad.ini:3") != NULL);
    printf("     %s\n", err);
    ok("bad expect rejected", claims_parse("[A]\nexpect = sideways 3\n", "b.ini", &cf, err, sizeof err) == -1);
    ok("missing metric rejected",
       claims_parse("[A]\nclaim = 1\npaper = p\nquantity = value\n", "c.ini", &cf, err, sizeof err) == -1);
    /* issue 45 item 8: a key twice, a pilot that re-creates @pilot, paper_value × scale past a double */
    ok("a key given twice in a row is refused, naming both lines",
       parse_refused(ROW_A "metric = val/loss\n", "r.ini:7: key 'metric' given twice in this section (first on line 6)"));
    ok("a key given twice in a question is refused",
       parse_refused(ROW_A "[question 1]\ntext = t\nrows = A\ntext = u\n", "key 'text' given twice"));
    ok("a pilot whose substitution re-creates @pilot is refused, naming the row",
       parse_refused("[A]\nclaim = 1\npaper = p\nquantity = value\nruns = data=@pi@pilot\npilot = lot\n"
                     "metric = val/final.loss\n", "row [A]: pilot = 'lot' put in place of @pilot"));
    ok("paper_value × scale overflowing a double is refused, naming the row",
       parse_refused(ROW_A "paper_value = 1e300\nscale = 1e300\n", "row [A]: paper_value × scale"));
    ok("paper_value × scale overflowing only after the threshold is refused too",
       parse_refused(ROW_A "paper_value = 1e308\nexpect = below -1.7e308\n", "row [A]: paper_value × scale"));
    {
        claims_file pf;
        claims_result pr;
        int parsed = claims_parse("[A]\nclaim = 1\npaper = p\nquantity = value\nruns = data=@pilot\npilot = x\n"
                                  "metric = val/final.loss\n", "p.ini", &pf, err, sizeof err) == 0;
        if (parsed) { /* a row built past the parser: @pi + @pilot with pilot "lot" */
            snprintf(pf.rows[0].runs, sizeof pf.rows[0].runs, "data=@pi@pilot");
            snprintf(pf.rows[0].pilot, sizeof pf.rows[0].pilot, "lot");
            claims_eval(&pf.rows[0], &rs, &pr);
            claims_free(&pf);
        }
        ok("a pilot re-creating @pilot past the parser: not measured, never judged over every run",
           parsed && pr.v == CV_NOT_MEASURED && strstr(pr.why, "leaves an @pilot") != NULL);
    }

    /* ---- report v3 (issue 41): ranges, distances, equivalence, the deciding element, Holm, the summary ---- */
#define PAIR "quantity = diff\nruns = data=tinyshakespeare scale=xs depth_routing=tsa\nmetric = val/final.loss\n" \
             "versus = depth_routing=none\n"
    const char *v3 = "[R]\nclaim = 1\npaper = a cost inside a range\n" PAIR "expect = above 0\nrange = -0.2 0.2\n"
                     "digits = 4\n"
                     "[N]\nclaim = 2\npaper = a direction without a distance\n" PAIR "expect = above 0\ndigits = 4\n"
                     "[W]\nclaim = 3\npaper = break-even\n" PAIR "expect = within 0 1\n"
                     "[Ds]\nclaim = 4\npaper = decided at scale s\nquantity = diff\nruns = depth_routing=tsa\n"
                     "each = scale\ndecide = scale s\nmetric = val/final.loss\nversus = depth_routing=none\n"
                     "expect = above 0\n"
                     "[Dm]\nclaim = 5\npaper = decided at a scale not trained\nquantity = diff\nruns = depth_routing=tsa\n"
                     "each = scale\ndecide = scale m\nmetric = val/final.loss\nversus = depth_routing=none\n"
                     "expect = above 0\n"
                     "[P]\nclaim = 6\npaper = at matched accuracy\n" PAIR "expect = above 0\n"
                     "premise = the accuracies are not matched\n"
                     "[summary 1]\nclaims = 1 2\ntext = costs\nrow = R\n";
    ok("report v3 keys parse (range, within, decide, premise, summary)",
       claims_parse(v3, "v3.ini", &cf, err, sizeof err) == 0 && cf.n == 6 && cf.n_summary == 1);
    if (cf.n == 6) {
        claims_eval(&cf.rows[5], &rs, &r);
        ok("premise = …: measured and shown, not judged, the premise said",
           r.v == CV_PREMISE && r.ne == 1 && r.e[0].s.n == 2 && strstr(r.premise, "the accuracies are not matched") &&
               claims_combine(&r, 1, "6") == CV_PREMISE);
        claims_eval(&cf.rows[0], &rs, &r); /* t(1) interval [−0.61, +0.98] leaves [−0.2, 0.2] */
        printf("     range: %s\n", r.ne ? r.e[0].ours : r.why);
        ok("range: the t interval is cut to [−0.2, 0.2], the seeds shown",
           r.ne == 1 && r.e[0].interval == 4 && r.e[0].s.lo == -0.2 && r.e[0].s.hi == 0.2 &&
               strstr(r.e[0].ours, "seeds +0.1250, +0.2500") && strstr(r.e[0].ours, "uncut"));
        claims_eval(&cf.rows[1], &rs, &r);
        ok("no distance given: never underpowered, and it says so",
           r.ne == 1 && !r.e[0].underpowered && strstr(r.e[0].ours, "gives no distance"));
        ok("one-sided p of the paired t (mean 0.1875, sd 0.0884, n 2): t = 3, p = 0.1024",
           r.ne == 1 && fabs(r.e[0].p - 0.10241638) < 1e-6);
        claims_eval(&cf.rows[2], &rs, &r);
        ok("expect = within 0 1: an interval not wholly inside is inconclusive", r.v == CV_INCONCLUSIVE);
        claims_eval(&cf.rows[3], &rs, &r);
        ok("decide = scale s: the s element decides, the xs one is kept with its own verdict",
           r.ne == 2 && (r.v == r.e[!strcmp(r.e[0].label, "scale s") ? 0 : 1].v));
        claims_eval(&cf.rows[4], &rs, &r);
        ok("decide = scale m (no runs): not measured, the other elements shown",
           r.v == CV_NOT_MEASURED && r.ne == 2 && strstr(r.why, "(scale m) has no runs yet"));
    }
    claims_free(&cf);
    ok("a claim on two summary lines is refused",
       parse_refused(ROW_A "[summary 1]\nclaims = 1\ntext = a\nrow = A\n[summary 2]\nclaims = 2 1\ntext = b\nrow = A\n",
                     "claim 1 is on summary lines 1 and 2"));
    ok("a summary naming no row of the file is refused",
       parse_refused(ROW_A "[summary 1]\nclaims = 1\ntext = a\nrow = Z\n", "names row [Z]"));
    ok("expect = within needs LO < HI", parse_refused(ROW_A "expect = within 1 0\n", "within LO HI"));
    ok("range needs LO < HI", parse_refused(ROW_A "range = 1 1\n", "range"));
    { /* Holm across three primary rows: p (claimed side) 0.005, 0.01, 0.02 → adjusted 0.015, 0.02, 0.02, every
       * one below 0.025 (kept); then 0.01, 0.012, 0.5 → 0.03, 0.03, 0.5: none kept (inconclusive) */
        static claims_row hr[4];
        static claims_result hres[4];
        double adj[4];
        const double ps[2][3] = {{0.02, 0.005, 0.01}, {0.012, 0.01, 0.5}};
        for (int t = 0; t < 2; t++) {
            memset(hr, 0, sizeof hr);
            memset(hres, 0, sizeof hres);
            for (int i = 0; i < 4; i++) {
                hr[i].primary = i < 3; /* the fourth is secondary: left alone */
                snprintf(hr[i].expect, sizeof hr[i].expect, "above");
                hres[i].row = &hr[i];
                hres[i].ne = 1;
                hres[i].v = hres[i].e[0].v = CV_YES;
                hres[i].e[0].p = i < 3 ? ps[t][i] : 0.04;
            }
            int m = 0;
            claims_holm(hres, 4, &m, adj);
            printf("     Holm %d: adjusted %g %g %g\n", t, adj[0], adj[1], adj[2]);
            if (t == 0)
                ok("Holm: 0.005, 0.01, 0.02 → 0.015, 0.02, 0.02, all reproduced; the secondary row untouched",
                   m == 3 && fabs(adj[1] - 0.015) < 1e-12 && fabs(adj[2] - 0.02) < 1e-12 && fabs(adj[0] - 0.02) < 1e-12 &&
                       hres[0].v == CV_YES && hres[1].v == CV_YES && hres[2].v == CV_YES && isnan(adj[3]) &&
                       hres[3].v == CV_YES);
            else
                ok("Holm: 0.01, 0.012, 0.5 → 0.03, 0.03, 0.5: none kept, each inconclusive",
                   m == 3 && fabs(adj[1] - 0.03) < 1e-12 && fabs(adj[0] - 0.03) < 1e-12 && fabs(adj[2] - 0.5) < 1e-12 &&
                       hres[0].v == CV_INCONCLUSIVE && hres[1].v == CV_INCONCLUSIVE && hres[2].v == CV_INCONCLUSIVE);
        }
        hres[0].v = CV_NOT_REACHED; /* a primary row whose premise failed leaves the family */
        int m = 0;
        claims_holm(hres, 4, &m, adj);
        ok("Holm: a primary row not reached leaves the family (m = 2)", m == 2 && isnan(adj[0]));
    }
    /* [table N]: the paper's table beside ours — the runs a line picks and each column's mean and range */
    {
        claims_file tf;
        const char *tt = ROW_A "[table 1]\nbenchmark = B\nmodel = TSA\npaper = 1.6 nats\nruns = depth_routing=tsa scale=xs\n"
                               "soft = val/final.loss\nsparse_paper = val/hard_paper.loss|val/final.loss\n"
                               "alpha_hard = val/hard.active_frac\nrows = A\n"
                               "[table 2]\nbenchmark = B\nmodel = none\npaper = p\nruns = experiment=paper-nothing\n"
                               "soft = val/final.loss\n";
        ok("a [table] section parses", claims_parse(tt, "t.ini", &tf, err, sizeof err) == 0 && tf.n_tables == 2 &&
                                           !strcmp(tf.tables[0].rows, "A") && !tf.tables[0].col[CLAIMS_COL_TLOPS][0]);
        if (tf.n_tables == 2) {
            claims_table_result tr;
            claims_table_eval(&tf.tables[0], &rs, &tr);
            const claims_cell *c = &tr.c[CLAIMS_COL_SOFT], *sp = &tr.c[CLAIMS_COL_SPARSE_PAPER],
                              *ah = &tr.c[CLAIMS_COL_ALPHA_HARD], *tl = &tr.c[CLAIMS_COL_TLOPS];
            printf("     table 1: %d runs, soft %g [%g, %g] n %d; sparse_paper key %s\n", tr.n_runs, c->mean, c->lo, c->hi,
                   c->n, sp->key);
            ok("table: runs = depth_routing=tsa scale=xs picks tsa1 and tsa2; soft 1.8125 [1.625, 2.0]",
               tr.n_runs == 2 && c->n == 2 && c->mean == 1.8125 && c->lo == 1.625 && c->hi == 2.0);
            ok("table: of 'val/hard_paper.loss|val/final.loss' the first every run has is read",
               !strcmp(sp->key, "val/final.loss") && sp->n == 2);
            ok("table: a column no run has keeps its metric and n 0 (the report says 'not recorded')",
               !strcmp(ah->key, "val/hard.active_frac") && ah->n == 0 && isnan(ah->mean));
            ok("table: a column the line does not read is empty", !tl->key[0] && tl->n == 0);
            claims_table_eval(&tf.tables[1], &rs, &tr);
            ok("table: a line whose runs are not there yet picks 0 runs", tr.n_runs == 0 && tr.c[0].n == 0);
        }
        claims_free(&tf);
        ok("a [table] without runs is refused", parse_refused(ROW_A "[table 1]\nbenchmark = B\nmodel = m\npaper = p\n"
                                                              "soft = val/final.loss\n", "table 1 needs benchmark ="));
        ok("a [table] picking with '@' is refused", parse_refused(ROW_A "[table 1]\nbenchmark = B\nmodel = m\npaper = p\n"
                                                                  "runs = data=@base\nsoft = val/final.loss\n",
                                                                  "not key=value (no '@' value"));
        ok("a [table] reading no column is refused", parse_refused(ROW_A "[table 1]\nbenchmark = B\nmodel = m\npaper = p\n"
                                                                   "runs = data=d\n", "table 1 reads no column"));
        ok("a [table] naming a row the file has not is refused",
           parse_refused(ROW_A "[table 1]\nbenchmark = B\nmodel = m\npaper = p\nruns = data=d\nsoft = m\nrows = Z\n",
                         "table 1 names row [Z]"));
        ok("a [table]'s unknown key is refused, listing the columns",
           parse_refused(ROW_A "[table 1]\nbenchmark = B\nquality = m\n", "unknown key 'quality' (a [table] section takes"));
    }
    runset_free(&rs);

    /* ---- the hostile registry: every view against the run set's groups and partners ---- */
#define HCFG(vr, extra_model, extra_data, steps, seed, extra)                                                          \
    "[model]\nscale = xs\nvalue_residual = " vr "\ndepth_routing = none\n" extra_model "[data]\ntask = text\n"        \
    "file = hostile.txt\n" extra_data "[train]\nsteps = " steps "\nseed = " seed "\n" extra
    long long h;
    if (db_experiment_ensure(db, "grp-h", "", &h, err, sizeof err)) printf("FAIL grp-h: %s\n", err), fails++;
    /* G1: h1 (registered before data.tokenizer existed: no such key), h2 (tokenizer = char, the default, other
     * threads and log.name); G2: h3 (train.steps 200); G3: h4 (tokenizer = bpe); S1: h5, h6; S2: h7 (sat_gate
     * softmax); S3: h8 (train.steps 200).  The old tables rule (data/scale/variant/λ) merged G1–G3; the old
     * figures copy (no late-key rule) split G1; the old vs-baseline rule (data/scale/seed) paired h8 with h1. */
    add_run_series(db, h, "h1", HCFG("none", "", "", "100", "1", ""), 2.0);
    add_run_series(db, h, "h2", HCFG("none", "", "tokenizer = char\n", "100", "2", "threads = 4\n[log]\nname = x\n"), 2.25);
    add_run_series(db, h, "h3", HCFG("none", "", "", "200", "1", ""), 1.5);
    add_run_series(db, h, "h4", HCFG("none", "", "tokenizer = bpe\nvocab_size = 300\n", "100", "1", ""), 3.0);
    add_run_series(db, h, "h5", HCFG("satformer", "sat_gate = relu\n", "tokenizer = char\n", "100", "1", ""), 1.75);
    add_run_series(db, h, "h6", HCFG("satformer", "sat_gate = relu\n", "", "100", "2", ""), 1.875);
    add_run_series(db, h, "h7", HCFG("satformer", "sat_gate = softmax\n", "", "100", "1", ""), 2.5);
    add_run_series(db, h, "h8", HCFG("satformer", "sat_gate = relu\n", "", "200", "1", ""), 1.25);
    /* T1, T2: TSA at one λ, train.steps 100 and 200 (the Pareto figure averaged them into one point) */
#define TCFG(steps) "[model]\nscale = xs\nvalue_residual = none\ndepth_routing = tsa\ntsa_lambda = 0.05\n[data]\n" \
                    "task = text\nfile = hostile.txt\n[train]\nsteps = " steps "\nseed = 1\n"
    add_run_series(db, h, "h9", TCFG("100"), 2.125);
    add_run_series(db, h, "h10", TCFG("200"), 1.625);
    for (int q = 0; q < 2; q++) {
        /* a TSA run's headline is its hard.* evaluation, the skipping done (docs/registry.md "The headline"):
         * trained runs record it with the soft final.* rows, on the same tokens */
        gl_metric tm[5] = {{.step = 10, .split = "val", .name = "final.active_frac", .value = q ? 0.5 : 0.75,
                            .prov = {"val", 0, 100, 6400}},
                           {.step = 10, .split = "val", .name = "final.tlops_saved", .value = q ? 0.25 : 0.125,
                            .prov = {"val", 0, 100, 6400}},
                           {.step = 10, .split = "val", .name = "hard.loss", .value = q ? 1.625 : 2.125,
                            .prov = {"val", 0, 100, 6400}},
                           {.step = 10, .split = "val", .name = "hard.active_frac", .value = q ? 0.5 : 0.75,
                            .prov = {"val", 0, 100, 6400}},
                           {.step = 10, .split = "val", .name = "hard.tlops_saved", .value = q ? 0.25 : 0.125,
                            .prov = {"val", 0, 100, 6400}}};
        if (db_metrics_log(db, q ? "h10" : "h9", tm, 5, err, sizeof err)) printf("FAIL tsa rows: %s\n", err), fails++;
    }
    runset hs = {0};
    ok("hostile: runset_load", runset_load(db, "grp-", &hs, err, sizeof err) == 0 && hs.n == 10);
    const runset_run *h1 = find(&hs, "h1"), *h2 = find(&hs, "h2"), *h3 = find(&hs, "h3"), *h4 = find(&hs, "h4"),
                     *h5 = find(&hs, "h5"), *h6 = find(&hs, "h6"), *h7 = find(&hs, "h7"), *h8 = find(&hs, "h8");
    if (!(h1 && h2 && h3 && h4 && h5 && h6 && h7 && h8)) {
        printf("FAIL the hostile runs did not load\n");
        return 1;
    }
    ok("late key: h1 (no data.tokenizer) and h2 (tokenizer = char) are one group", runset_same_group(h1, h2));
    ok("non-seed keys: train.steps, tokenizer = bpe, sat_gate apart",
       !runset_same_group(h1, h3) && !runset_same_group(h1, h4) && !runset_same_group(h5, h7) &&
           !runset_same_group(h5, h8) && runset_same_group(h5, h6));
    ok("late key: h5 (tokenizer = char) partners h1 (no tokenizer), h6 (none) partners h2 (char)",
       runset_partner(&hs, h5, "value_residual", "none") == h1 && runset_partner(&hs, h6, "value_residual", "none") == h2);
    ok("partner of h8 (steps 200) is h3, not h1", runset_partner(&hs, h8, "value_residual", "none") == h3);
    { /* Q1 controls: the value-residual axis frees model.resformer_*, so both ResFormer starts pair with one SATFormer */
        long long q;
        if (db_experiment_ensure(db, "q1-x", "", &q, err, sizeof err)) printf("FAIL q1 experiment: %s\n", err), fails++;
        add_run(db, q, "q-sat", "[model]\nvalue_residual = satformer\n[train]\nseed = 1\n", 1.5);
        add_run(db, q, "q-rf", "[model]\nvalue_residual = resformer\n[train]\nseed = 1\n", 1.25);
        add_run(db, q, "q-rf09", "[model]\nvalue_residual = resformer\nresformer_lambda1_init = 0.09\n[train]\nseed = 1\n",
                1.375);
        add_run(db, q, "q-rf2", "[model]\nvalue_residual = resformer\n[train]\nseed = 2\n", 1.0);
        runset qs = {0};
        ok("q1: runset_load", runset_load(db, "q1-", &qs, err, sizeof err) == 0 && qs.n == 4);
        const runset_run *qs1 = find(&qs, "q-sat"), *qr = find(&qs, "q-rf"), *qr9 = find(&qs, "q-rf09"), *all[4];
        int np = qs1 ? runset_partners(&qs, qs1, "value_residual", "resformer", all, 4) : -1;
        ok("runset_partners: both ResFormer starts of seed 1 (not seed 2), in run-set order",
           np == 2 && ((all[0] == qr && all[1] == qr9) || (all[0] == qr9 && all[1] == qr)));
        ok("runset_partners: max 1 still counts 2", qs1 && runset_partners(&qs, qs1, "value_residual", "resformer",
                                                                            all, 1) == 2);
        char v[64];
        ok("runset_param_or_default: absent late key reads its default (auto)",
           qr && runset_param_or_default(qr, "model.resformer_lambda1_init", v, sizeof v) && !strcmp(v, "auto"));
        ok("runset_param_or_default: a stored value wins (0.09)",
           qr9 && runset_param_or_default(qr9, "model.resformer_lambda1_init", v, sizeof v) && !strcmp(v, "0.09"));
        ok("runset_param_or_default: train.weight_decay_policy absent reads matrices",
           qr && runset_param_or_default(qr, "train.weight_decay_policy", v, sizeof v) && !strcmp(v, "matrices"));
        ok("runset_param_or_default: a key the manifest does not know is 0",
           qr && !runset_param_or_default(qr, "model.no_such_key", v, sizeof v) && !v[0]);
        runset_free(&qs);
    }
    { /* reading = trend: SATFormer − ResFormer d at 100 and 200 steps, three seeds, one experiment per word */
        static const struct {
            const char *word;
            double d100[3], d200[3];
        } cases[] = {{"flips", {0.5, 0.625, 0.75}, {-0.5, -0.625, -0.75}},
                     {"persists", {0.5, 0.625, 0.75}, {0.375, 0.75, 0.625}},
                     {"shrinks", {1.0, 1.125, 1.25}, {0.0, 0.125, -0.125}},
                     {"grows", {0.0, 0.125, -0.125}, {1.0, 1.125, 1.25}}};
        for (int c = 0; c < 4; c++) {
            char name[32], id[64], ini[160];
            long long x;
            snprintf(name, sizeof name, "q2-%s", cases[c].word);
            if (db_experiment_ensure(db, name, "", &x, err, sizeof err)) printf("FAIL %s: %s\n", name, err), fails++;
            for (int st = 0; st < 2; st++)
                for (int k = 0; k < 3; k++)
                    for (int v = 0; v < 2; v++) {
                        snprintf(id, sizeof id, "%s-%d-%d-%d", cases[c].word, st, k, v);
                        /* lr apart per case: the same config in two experiments would be two partners */
                        snprintf(ini, sizeof ini, "[model]\nvalue_residual = %s\n[train]\nsteps = %d\nseed = %d\n"
                                 "lr = 0.00%d\n", v ? "satformer" : "resformer", st ? 200 : 100, k + 1, c + 1);
                        add_run(db, x, id, ini, 2.0 + (v ? (st ? cases[c].d200[k] : cases[c].d100[k]) : 0));
                    }
        }
        runset ts = {0};
        ok("trend: runset_load", runset_load(db, "q2-", &ts, err, sizeof err) == 0 && ts.n == 48);
        for (int c = 0; c < 4; c++) {
            char text[1024];
            snprintf(text, sizeof text, "[T]\nclaim = 9\npaper = p\nquantity = diff\nruns = experiment=q2-%s "
                     "value_residual=satformer\neach = steps\nacross = steps\nreading = trend\nmetric = val/final.loss\n"
                     "versus = value_residual=resformer model.resformer_lambda1_init=auto\nexpect = below 0\n"
                     "unit = nats\n", cases[c].word);
            claims_file tf;
            claims_result tr;
            char want[32];
            snprintf(want, sizeof want, "**%s**", cases[c].word);
            int parsed = claims_parse(text, "trend.ini", &tf, err, sizeof err) == 0;
            if (parsed) claims_eval(&tf.rows[0], &ts, &tr);
            ok(cases[c].word, parsed && tr.ne == 3 && strstr(tr.e[2].label, "200 steps − 100 steps") == tr.e[2].label &&
                                  strstr(tr.e[2].ours, want) && strstr(tr.why, cases[c].word));
            if (parsed) printf("     %s: ne %d, %s; %s\n", cases[c].word, tr.ne, tr.ne == 3 ? tr.e[2].ours : "", tr.why);
            if (parsed) claims_free(&tf);
        }
        ok("reading without across rejected",
           claims_parse("[A]\nclaim = 1\npaper = p\nquantity = value\nmetric = m\nreading = trend\n", "r.ini", &cf,
                        err, sizeof err) == -1 && strstr(err, "needs across"));
        ok("each = steps fuel rejected",
           claims_parse("[A]\nclaim = 1\npaper = p\nquantity = value\nmetric = m\neach = steps fuel\n", "e.ini", &cf,
                        err, sizeof err) == -1 && strstr(err, "each = 'steps fuel'"));
        static const struct {
            const char *reading, *runs, *says;
        } rd[] = {{"start", "q2-shrinks", "the start explains the gap"},     /* given > 0, this contains 0 */
                  {"start", "q2-grows", "sentence does not apply"},        /* given > 0, this > 0 */
                  {"mechanism", "q2-grows", "the mechanism at this scale"}, /* given > 0, this > 0 */
                  {"mechanism", "q2-shrinks", "sentence does not apply"}};
        for (int c = 0; c < 4; c++) {
            char text[1024], what[128];
            snprintf(text, sizeof text, "[R]\nclaim = 9\npaper = p\nquantity = diff\nruns = experiment=%s "
                     "value_residual=satformer steps=200\nmetric = val/final.loss\nversus = value_residual=resformer\n"
                     "reading = %s\ngiven = experiment=q2-flips value_residual=satformer steps=100 ; "
                     "value_residual=resformer\nexpect = below 0\nunit = nats\n", rd[c].runs, rd[c].reading);
            claims_file tf;
            claims_result tr;
            int parsed = claims_parse(text, "reading.ini", &tf, err, sizeof err) == 0;
            if (parsed) claims_eval(&tf.rows[0], &ts, &tr);
            snprintf(what, sizeof what, "reading = %s on %s at 200 steps against q2-flips at 100: %s", rd[c].reading,
                     rd[c].runs, rd[c].says);
            ok(what, parsed && tr.ne == 1 && strstr(tr.why, rd[c].says));
            if (parsed) claims_free(&tf);
        }
        ok("reading = start without given rejected",
           claims_parse("[A]\nclaim = 1\npaper = p\nquantity = diff\nmetric = m\nversus = value_residual=none\n"
                        "reading = start\n", "g.ini", &cf, err, sizeof err) == -1 && strstr(err, "needs given"));
        runset_free(&ts);
    }
    {
        char *a = runset_group_key("[data]\nfile = x\n[train]\nseed = 1\n"),
             *b = runset_group_key("[data]\nfile = x\ntokenizer = char\n[train]\nseed = 2\n"),
             *c = runset_group_key("[data]\nfile = x\ntokenizer = bpe\n");
        ok("runset_group_key: a config without data.tokenizer = one at its default, not bpe",
           a && b && c && !strcmp(a, b) && strcmp(a, c));
        char *fa = figures_seedless_config("[data]\nfile = x\n"), *fb = figures_seedless_config("[data]\nfile = x\ntokenizer = char\n");
        ok("figures_seedless_config is the run set's rule (late key at its default)", fa && fb && !strcmp(fa, fb));
        free(a), free(b), free(c), free(fa), free(fb);
    }
    { /* the typed walk behind the group key: runset_resolve + runset_group_each, and runset_param from it */
        const char *ini = "[model]\ntsa_lambda = 0.050\n[train]\nseed = 7\nthreads = 3\n[log]\nname = a\n";
        gl_manifest *mf = runset_resolve(ini);
        ok("runset_resolve reads a stored config", mf && mf->model.tsa_lambda == 0.05f);
        char *key = runset_group_key(ini), lines[8192] = "", v[64];
        int n = 0, late = 0, bookkeeping = 0, calls = 0;
        struct {
            char *buf;
            int *n, *late, *bookkeeping;
        } acc = {lines, &n, &late, &bookkeeping};
        int each = mf ? runset_group_each(mf, group_line, &acc) : -1;
        ok("runset_group_each: the group key's lines, in order, tsa_lambda as canonical text (0.05), no "
           "late key at its default, no seed, threads or log.*",
           each == 0 && key && !strcmp(key, lines) && n > 40 && strstr(lines, "model.tsa_lambda=0.05\n") && !late &&
               !bookkeeping);
        ok("runset_group_each stops at fn's first non-zero return",
           mf && runset_group_each(mf, group_stop, &calls) == 9 && calls == 2);
        runset_run r = {.config = (char *)ini};
        ok("runset_param: the typed walk's text (0.050 reads 0.05), a late key absent reads its default",
           runset_param(&r, "model.tsa_lambda", v, sizeof v) && !strcmp(v, "0.05") &&
               runset_param(&r, "model.sat_gate", v, sizeof v) && !strcmp(v, "relu"));
        ok("runset_param: train.seed is a parameter, train.threads and log.* are bookkeeping",
           runset_param(&r, "train.seed", v, sizeof v) && !strcmp(v, "7") && !runset_param(&r, "train.threads", v, sizeof v) &&
               !runset_param(&r, "log.name", v, sizeof v) && !v[0]);
        const char *bad = "[model]\nno_such_key = 1\n[train]\nseed = 1\n";
        char *kb = runset_group_key(bad);
        runset_run rb = {.config = (char *)bad};
        ok("a config this gatelab cannot read: runset_resolve NULL, keyed by its own text, no params",
           !runset_resolve(bad) && kb && !strcmp(kb, bad) && !runset_param(&rb, "model.d_model", v, sizeof v) &&
               runset_param_or_default(&rb, "model.d_model", v, sizeof v) && !strcmp(v, "128") &&
               runset_partner_key_ini(bad, "depth_routing") != runset_partner_key_ini(ini, "depth_routing"));
        free(kb), free(key), free(mf);
    }
    { /* the depth_routing axis frees the routing's forms: a paper-form exit run and a paper-form TSA run of one
       * config and seed are partners; another seed, or another key, is not */
        const char *base = "[model]\nbackbone = gpt2\nqk_norm = 0\n";
        char tsa[256], ee[256], ee2[256], eo[256];
        snprintf(tsa, sizeof tsa, "%sdepth_routing = tsa\ntsa_form = paper\nrouter_init_bias = -1\n[train]\nseed = 1\n", base);
        snprintf(ee, sizeof ee, "%sdepth_routing = early_exit\nexit_form = paper\nexit_weighting = uniform\n[train]\nseed = 1\n",
                 base);
        snprintf(ee2, sizeof ee2, "%sdepth_routing = early_exit\nexit_form = paper\nexit_weighting = uniform\n[train]\nseed = 2\n",
                 base);
        snprintf(eo, sizeof eo, "%sdepth_routing = early_exit\nexit_form = paper\nexit_weighting = uniform\n[train]\nseed = 1\n"
                 "warmup = 200\n", base);
        const unsigned long long kt = runset_partner_key_ini(tsa, "depth_routing");
        ok("depth_routing partners: a paper-form TSA run and a paper-form exit run of one config and seed",
           kt && kt == runset_partner_key_ini(ee, "depth_routing"));
        ok("... not across seeds, nor another train.warmup",
           kt != runset_partner_key_ini(ee2, "depth_routing") && kt != runset_partner_key_ini(eo, "depth_routing"));
    }
    { /* fg_group_title (figures_int.h): what, then what the groups share, then the spread over seeds */
        static fg_groups G;
        char t[400];
        memset(&G, 0, sizeof G);
        G.n = 2, G.max_seeds = G.min_seeds = 3;
        snprintf(G.common, sizeof G.common, "tinyshakespeare s");
        fg_group_title(&G, "Loss", t, sizeof t);
        ok("fg_group_title: shared part and spread", !strcmp(t, "Loss: tinyshakespeare s, mean ± sd over 3 seeds"));
        G.common[0] = 0, G.min_seeds = 2;
        fg_group_title(&G, "Loss", t, sizeof t);
        ok("fg_group_title: nothing shared, uneven seeds", !strcmp(t, "Loss: mean ± sd over 2–3 seeds"));
        G.max_seeds = G.min_seeds = 1, G.n = 1;
        fg_group_title(&G, "Loss", t, sizeof t);
        ok("fg_group_title: one group of one seed is the bare title", !strcmp(t, "Loss"));
    }
    /* the run set's groups: six, sizes 2 1 1 2 1 1 */
    int ng = 0, two = 0;
    for (int i = 0; i < hs.n; i++) {
        int first = 1, size = 0;
        for (int j = 0; j < hs.n; j++) {
            if (runset_same_group(&hs.r[i], &hs.r[j])) size++;
            if (j < i && runset_same_group(&hs.r[i], &hs.r[j])) first = 0;
        }
        ng += first;
        two += first && size == 2;
    }
    ok("run set: eight groups, two of them of two seeds", ng == 8 && two == 2);

    /* tables: one row per group, the Seeds column its size; vs baseline by the partner rule */
    char hres[300], hpath[400];
    snprintf(hres, sizeof hres, "%s/hres", dir);
    snprintf(tdir, sizeof tdir, "%s/tables", hres);
    ok("hostile: tables_write_all", tables_write_all(db, "grp-h", tdir, &ts, err, sizeof err) == 0);
    snprintf(tpath, sizeof tpath, "%s/loss_by_variant.md", tdir);
    int trows_two = 0, trows = count_lines(tpath, "| hostile | xs |", "| 2 |", &trows_two);
    printf("     loss_by_variant.md: %d hostile rows, %d of two seeds\n", trows, trows_two);
    ok("tables agree: eight rows, two of two seeds", trows == 8 && trows_two == 2);
    int s1 = 0, s3 = 0;
    count_lines(tpath, "| hostile | xs | satformer | 2 |", "−0.3125", &s1);
    if (!s1) count_lines(tpath, "| hostile | xs | satformer | 2 |", "-0.3125", &s1);
    count_lines(tpath, "| hostile | xs | satformer | 1 |", "-0.2500 (1 seed)", &s3);
    ok("tables: S1 vs baseline pairs h5−h1, h6−h2 (−0.3125); S3 pairs h8−h3 (−0.25, 1 seed)", s1 == 1 && s3 == 1);

    /* figures: loss.tsv holds a train and a val block per group; its n column the group's size */
    char fdir[400];
    snprintf(fdir, sizeof fdir, "%s/figures", hres);
    figures_summary fs;
    memset(&fs, 0, sizeof fs);
    int frc = figures_make_all(db, "grp-h", hres, fdir, &fs, err, sizeof err);
    if (frc) printf("     figures: %s\n", err);
    snprintf(hpath, sizeof hpath, "%s/data/loss.tsv", fdir);
    FILE *lf = fopen(hpath, "r");
    int blocks = 0, n2 = 0, n1 = 0;
    while (lf && fgets(line, sizeof line, lf)) {
        if (strstr(line, "\twall_s\tmean\tsd\tn")) blocks++;
        else if (line[0] >= '0' && line[0] <= '9') {
            const char *last = strrchr(line, '\t');
            n2 += last && atoi(last + 1) == 2;
            n1 += last && atoi(last + 1) == 1;
        }
    }
    if (lf) fclose(lf);
    printf("     loss.tsv: %d blocks, %d rows over two seeds, %d over one\n", blocks, n2, n1);
    ok("figures agree: 16 blocks (train, val per group), 4 rows of n 2, 12 of n 1",
       !frc && blocks == 16 && n2 == 4 && n1 == 12);
    snprintf(hpath, sizeof hpath, "%s/data/pareto_tsa.tsv", fdir);
    int pts005 = count_lines(hpath, "0.05\t", NULL, NULL);
    printf("     pareto_tsa.tsv: %d points at λ 0.05\n", pts005);
    ok("figures agree: the Pareto draws T1 and T2 (other train.steps) as two points, not their mean", pts005 == 2);

    /* the HTML page inlines those tables: one hostile row per group of the loss table */
    snprintf(hpath, sizeof hpath, "%s/report.html", hres);
    html_target ht = {.experiment = "grp-h", .run_id = NULL, .results = hres, .db_path = path};
    html_opts ho;
    memset(&ho, 0, sizeof ho);
    ho.kv_head = -1;
    int nfig = 0;
    int hrc = html_report(db, &ht, &ho, hpath, &nfig, NULL, err, sizeof err);
    if (hrc) printf("     html: %s\n", err);
    FILE *hf = fopen(hpath, "r");
    int hrows = 0;
    while (hf && fgets(line, sizeof line, hf))
        for (const char *q = line; (q = strstr(q, "<td>hostile</td><td>xs</td>")); q++) hrows++;
    if (hf) fclose(hf);
    int md_rows = 0;
    for (int i = 0; i < ts.n_written; i++) {
        snprintf(tpath, sizeof tpath, "%s/%s.md", tdir, ts.written[i]);
        int k = count_lines(tpath, "| hostile | xs |", NULL, NULL);
        md_rows += k > 0 ? k : 0;
    }
    printf("     report.html: %d hostile rows, the tables' .md %d\n", hrows, md_rows);
    ok("HTML agrees: its rows are the tables' rows", !hrc && hrows == md_rows && hrows >= 8);

    /* the paper report's evaluator: a row over S1 has n 2 and the partner-paired mean */
    const char *htext = "[S]\nclaim = 1\npaper = p\nquantity = diff\n"
                        "runs = data=hostile value_residual=satformer model.sat_gate=relu train.steps=100\n"
                        "metric = val/final.loss\nversus = value_residual=none\nexpect = below 0\n"
                        "[B]\nclaim = 2\npaper = p\nquantity = value\nruns = data=hostile value_residual=none\n"
                        "metric = val/final.loss\nexpect = below 9\n";
    ok("hostile claims parse", claims_parse(htext, "h.ini", &cf, err, sizeof err) == 0 && cf.n == 2);
    claims_eval(&cf.rows[0], &hs, &r);
    printf("     S row: n %d, mean %g; %s\n", r.ne ? r.e[0].s.n : -1, r.ne ? r.e[0].s.mean : NAN, r.why);
    ok("paper rows agree: n 2 (h5, h6), mean (h5−h1 + h6−h2)/2 = −0.3125",
       r.ne == 1 && r.e[0].s.n == 2 && r.e[0].s.mean == -0.3125);
    claims_eval(&cf.rows[1], &hs, &r);
    ok("paper rows agree: value_residual=none is five configurations (three dense, two TSA), not one",
       r.v == CV_NOT_MEASURED && strstr(r.why, "matches 5 configurations") != NULL);
    claims_free(&cf);

    /* [question N]: text and rows, each row id a row of the file */
    ok("a question naming its rows parses",
       claims_parse("[question 1]\ntext = Q1. does it?\nrows = A B\n[A]\nclaim = 1\npaper = p\nquantity = value\n"
                    "runs = data=d\nmetric = val/final.loss\n[B]\nclaim = 1\npaper = p\nquantity = value\n"
                    "runs = data=d\nmetric = val/final.loss\n", "q.ini", &cf, err, sizeof err) == 0 &&
           cf.n_questions == 1 && !strcmp(cf.questions[0].rows, "A B") && cf.n == 2);
    claims_free(&cf);
    ok("a question naming a row the file has not is refused, naming it",
       parse_refused("[question 1]\ntext = Q1\nrows = A Z\n" ROW_A, "question 1 names row [Z]"));
    ok("a question without rows is refused", parse_refused("[question 1]\ntext = Q1\n" ROW_A,
                                                           "question 1 needs text = and rows ="));
    ok("a question's unknown key is refused",
       parse_refused("[question 1]\ntext = Q1\nrow = A\n" ROW_A, "unknown key 'row'"));
    ok("a question's plan groups parse (the report checks them against the plan)",
       claims_parse("[question 1]\ntext = Q1\nrows = A\ngroups = g1 g2\n" ROW_A, "q.ini", &cf, err, sizeof err) == 0 &&
           !strcmp(cf.questions[0].groups, "g1 g2"));
    claims_free(&cf);

    /* alpha_within: the operating point refuses a group whose mean α is too far from the paper's (h9: α 0.75) */
    const char *wtext = "[W]\nclaim = 5\npaper = p\nquantity = value\n"
                        "runs = data=hostile depth_routing=tsa train.steps=100 lambda=@alpha\nalpha = 0.5\n"
                        "alpha_within = 0.1\nmetric = val/final.tlops_saved\nexpect = above 0\n"
                        "[X]\nclaim = 5\npaper = p\nquantity = value\n"
                        "runs = data=hostile depth_routing=tsa train.steps=100 lambda=@alpha\nalpha = 0.5\n"
                        "alpha_within = 0.3\nmetric = val/final.tlops_saved\nexpect = above 0\n";
    ok("alpha_within rows parse", claims_parse(wtext, "w.ini", &cf, err, sizeof err) == 0 && cf.n == 2);
    claims_eval(&cf.rows[0], &hs, &r);
    printf("     W row: %s\n", r.why);
    printf("     W row premise: %s\n", r.premise);
    ok("alpha_within 0.1: α 0.75 is 0.25 from 0.5: operating point not reached, shown (n 1) and not judged, naming "
       "the nearest λ and α",
       r.v == CV_NOT_REACHED && r.ne == 1 && r.e[0].v == CV_NOT_REACHED && r.e[0].s.mean == 0.125 &&
           strstr(r.premise, "operating point not reached") && strstr(r.premise, "within 0.1 of the paper's 0.500") &&
           strstr(r.premise, "α 0.750"));
    claims_eval(&cf.rows[1], &hs, &r);
    ok("alpha_within 0.3: the same group is taken (tlops_saved 0.125, n 1)",
       r.v != CV_NOT_MEASURED && r.ne == 1 && r.e[0].s.n == 1 && r.e[0].s.mean == 0.125);
    claims_free(&cf);
    /* across over elements all at one value of the axis (h9, h10: scale xs at 100 and 200 steps) */
    ok("one-value across row parses",
       claims_parse("[U]\nclaim = 9\npaper = p\nquantity = diff\nruns = data=hostile depth_routing=tsa\n"
                    "each = scale steps\nacross = scale\nmetric = val/final.loss\nversus = depth_routing=none\n"
                    "expect = below 0\n", "u.ini", &cf, err, sizeof err) == 0 && cf.n == 1);
    claims_eval(&cf.rows[0], &hs, &r);
    printf("     U row: %s | %s\n", r.why, r.measured);
    const char *pm = strstr(r.measured, "; partner (");
    ok("across at one value: not measured, saying the groups are all at one value of scale",
       r.v == CV_NOT_MEASURED && strstr(r.why, "2 groups with pairs, all at one value (the first: scale xs"));
    ok("the partner's metric is named once, not once per element", pm && !strstr(pm + 1, "; partner ("));
    claims_free(&cf);
    ok("alpha_within without lambda=@alpha is refused",
       parse_refused("[V]\nclaim = 5\npaper = p\nquantity = value\nruns = data=hostile lambda=0.05\n"
                     "alpha_within = 0.1\nmetric = val/final.loss\n", "alpha_within needs alpha =, lambda=@alpha"));

    /* paper post's operating point: the paper's α from the claims file, λ* by the hard α when every run has it */
    if (claims_load("experiments/paper/claims.ini", &cf, err, sizeof err) == 0) {
        ok("claims.ini: tinyshakespeare's operating α is 0.726", claims_operating_alpha(&cf, "tinyshakespeare") == 0.726);
        ok("claims.ini: copy 0.341, enwik8_small by enwik8* 0.833, an unknown data set NaN",
           claims_operating_alpha(&cf, "copy") == 0.341 && claims_operating_alpha(&cf, "enwik8_small") == 0.833 &&
               isnan(claims_operating_alpha(&cf, "nope")));
        claims_free(&cf);
    } else {
        printf("     (claims.ini not readable from here: %s; its checks skipped)\n", err);
    }
    ok("claims_operating_alpha reads the row's alpha, not a literal",
       claims_parse("[T]\nclaim = 1\npaper = p\nquantity = value\nruns = data=d depth_routing=tsa lambda=@alpha\n"
                    "alpha = 0.5\nmetric = val/final.loss\n", "o.ini", &cf, err, sizeof err) == 0 &&
           claims_operating_alpha(&cf, "d") == 0.5);
    claims_free(&cf);
    paper_run lr[4];
    memset(lr, 0, sizeof lr);
    const double lam[4] = {0.01, 0.01, 0.05, 0.05}, soft[4] = {0.70, 0.70, 0.50, 0.50}, hard[4] = {0.90, 0.90, 0.72, 0.72};
    for (int i = 0; i < 4; i++) {
        snprintf(lr[i].t.data, sizeof lr[i].t.data, "d");
        snprintf(lr[i].t.scale, sizeof lr[i].t.scale, "xs");
        snprintf(lr[i].depth, sizeof lr[i].depth, "tsa");
        lr[i].t.lambda = lam[i];
        lr[i].alpha = soft[i];
        lr[i].hard_alpha = hard[i];
    }
    double lstar = NAN;
    int is_hard = -1;
    ok("λ* by the hard α (0.72 at λ 0.05 nearest 0.726, where the soft α would pick λ 0.01)",
       paper_lambda_star(lr, 4, "d", "xs", 0.726, &is_hard, &lstar) == 1 && lstar == 0.05 && is_hard == 1);
    lr[3].hard_alpha = NAN;
    ok("a TSA run without hard α: λ* by the soft α (λ 0.01), said so",
       paper_lambda_star(lr, 4, "d", "xs", 0.726, &is_hard, &lstar) == 1 && lstar == 0.01 && is_hard == 0);
    runset_free(&hs);
    db_close(db);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd)) printf("(could not remove %s)\n", dir);
    printf("%s: %d failure%s\n", fails ? "FAIL" : "ok", fails, fails == 1 ? "" : "s");
    if (fails) printf("[  FAILED  ] %d check(s), listed above.\n", fails);
    else printf("[  PASSED  ] %d check(s).\n", checks);
    return fails ? 1 : 0;
}
