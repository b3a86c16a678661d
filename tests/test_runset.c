/*
 * test_runset.c — the run set's two rules and the claims evaluator on a
 * registry built here, where the old identity rules disagree: two runs of the
 * same data, scale and variant that differ in train.lr (the old tables rule,
 * data/scale/variant/λ, merged them; the group rule keeps them apart), and a
 * seed's run that differs only in bookkeeping (threads, log.name: one group).
 * Checks: groups (runset and tables agree), the paired partner (same seed,
 * depth_routing freed with its tsa_lambda), metrics by key, and a claims
 * file: parsed, judged (paired difference by hand), magnitude-differs, "not
 * measured" with its reason, and a parse error naming file and line.  One line
 * per check; exits non-zero on any failure.  Values are exact binary fractions
 * where compared exactly.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/claims.h"
#include "analysis/paper.h"
#include "analysis/runset.h"
#include "analysis/tables.h"
#include "store/registry.h"

static int fails, checks; /* tests/run.sh counts the cmocka-style summary lines printed at the end */

static void ok(const char *what, int cond) {
    printf("%s %s\n", cond ? "ok  " : "FAIL", what);
    fails += !cond;
    checks++;
}

static void add_run(gl_db *db, long long exp, const char *id, const char *ini, double loss) {
    char err[1024];
    gl_metric m = {.step = 10, .split = "val", .name = "final.loss", .value = loss, .prov = {"val", 0, 100, 6400}};
    int rc = db_run_create(db, exp, id, id, ini, "h", 1, "SCHEDULED", err, sizeof err) ||
             db_params_put_ini(db, id, ini, err, sizeof err) || db_run_start(db, id, err, sizeof err) ||
             db_metrics_log(db, id, &m, 1, err, sizeof err) || db_run_finish(db, id, "FINISHED", 0, NULL, err, sizeof err);
    if (rc) printf("FAIL add_run %s: %s\n", id, err), fails++;
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
    gl_metric dm = {.step = 10, .split = "analysis", .name = "difficulty.base1.seed22.rho", .value = 0.375};
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
    ok("tables agree: base1 and base2 share tables_run.group", b1->t.group == b2->t.group);
    ok("tables agree: base1-lr has its own tables_run.group", b1->t.group != bl->t.group);
    ok("partner of tsa1 along depth_routing=none is base1 (same seed, same lr)",
       runset_partner(&rs, t1, "depth_routing", "none") == b1);
    ok("partner of tsa2 is base2 (bookkeeping keys ignored)", runset_partner(&rs, t2, "depth_routing", "none") == b2);
    ok("no partner along an unknown axis", runset_partner(&rs, t1, "colour", "none") == NULL);
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
                       "expect = above 0\n";
    claims_file cf;
    ok("claims_parse", claims_parse(text, "t.ini", &cf, err, sizeof err) == 0 && cf.n == 3 && cf.n_disclosures == 1);
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
    runset_free(&rs);
    db_close(db);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd)) printf("(could not remove %s)\n", dir);
    printf("%s: %d failure%s\n", fails ? "FAIL" : "ok", fails, fails == 1 ? "" : "s");
    if (fails) printf("[  FAILED  ] %d check(s), listed above.\n", fails);
    else printf("[  PASSED  ] %d check(s).\n", checks);
    return fails ? 1 : 0;
}
