/*
 * test_measure.c — the measurement entry points `eval`, `ablate`, `analyze`
 * and `paper post` share (run/eval_run.h, analysis/pipeline/measure.h), on tiny
 * SATFormer, TSA, early-exit and dense runs trained here (train_run) into a
 * temporary results folder on the test's own corpus (tests/corpus.h).
 *
 * Checks: a whole-split evaluation reproduces the headline training
 * recorded (the same model on the same windows; tolerance below) and its
 * record round-trips bit for bit; early exit matched to a TSA partner takes
 * the partner's recorded hard α and loss exactly and stores the pair; the
 * TSA paper's τ protocol (13 thresholds on 30 random batches, a paper-form
 * early-exit run) chooses the threshold nearest the partner's paper α and
 * records matched_paper.*;
 * options a model cannot take are refused by name; an ablation's and a τ
 * sweep's rows are what the call returned; the trace analysis writes its
 * files and rows (none with no_db); difficulty routing records its ρ.  Run
 * from the repository root (tests/run.sh does).  Needs no data set.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sqlite3.h>
#include <unistd.h>

#include "analysis/pipeline/measure.h"
#include "corpus.h"
#include "run/eval_run.h"
#include "run/train.h"
#include "store/manifest.h"
#include "store/metric.h"
#include "store/registry.h"

static char g_dir[64], g_results[128], g_db[160];
static char g_run_dir[5][160];
static const char *const g_ids[5] = {"sat", "tsa", "ee", "dense", "eep"};
enum { SAT, TSA, EE, DENSE, EEP }; /* EEP: early exit in the TSA paper's form (model.exit_form = paper) */

static evalrun_target target(int k) {
    return (evalrun_target){g_ids[k], g_run_dir[k], g_results, g_db};
}

/* The value of the last row (run, split, name, params); fails the test when absent. */
static double row(const char *run, const char *split, const char *name, const char *params) {
    gl_db *db = NULL;
    char err[512];
    double v = NAN;
    assert_int_equal(db_open_readonly(&db, g_db, err, sizeof err), 0);
    int k = db_metric_last(db, run, split, name, params, &v, NULL, err, sizeof err);
    if (k != 1) print_message("no row %s %s %s %s: %s\n", run, split, name, params ? params : "", err);
    assert_int_equal(k, 1);
    db_close(db);
    return v;
}

/* How many metric rows run has in split (the registry read with SQLite itself). */
static long count_rows(const char *run, const char *split) {
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    long n = -1;
    assert_int_equal(sqlite3_open_v2(g_db, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, "select count(*) from metrics where run_id = ?1 and split = ?2", -1, &st,
                                        NULL), SQLITE_OK);
    sqlite3_bind_text(st, 1, run, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, split, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW) n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return n;
}

static void train_one(int k, const char *corpus, const char *over1, const char *over2, const char *over3) {
    static const char *ini = "[model]\nd_model = 32\nn_layer = 3\nn_head = 2\nn_kv_head = 2\nd_ff = 64\nseq_len = 32\n"
                             "[train]\nsteps = 30\nbatch_size = 4\nlr = 3e-3\nwarmup = 5\nthreads = 1\n"
                             "eval_every = 10\neval_windows = 4\nckpt_every = 30\nlog_every = 5\n"
                             "[log]\nexperiment = tiny\nprobe_windows = 4\ntrace = 1\n";
    gl_manifest mf;
    char err[1024], set[GL_PATH_MAX + 32];
    assert_int_equal(manifest_load_text(&mf, ini, "test_measure", err, sizeof err), 0);
    snprintf(set, sizeof set, "data.file=%s", corpus);
    const char *over[] = {set, over1, over2, over3};
    for (int i = 0; i < 4; i++) {
        if (!over[i]) continue;
        int rc = manifest_set(&mf, over[i], "test_measure", 0, err, sizeof err);
        if (rc) print_message("%s: %s\n", over[i], err);
        assert_int_equal(rc, 0);
    }
    gl_train_opts o = {.run_id = g_ids[k], .results = g_results, .quiet = 1};
    gl_train_outcome r = train_run(&mf, &o, err, sizeof err);
    if (r != TRAIN_FINISHED) print_message("train %s: %s\n", g_ids[k], err);
    assert_int_equal(r, TRAIN_FINISHED);
    snprintf(g_run_dir[k], sizeof g_run_dir[k], "%s/runs/%s", g_results, g_ids[k]);
}

static int setup(void **state) {
    (void)state;
    snprintf(g_dir, sizeof g_dir, "/tmp/gatelab_test_measure_XXXXXX");
    if (!mkdtemp(g_dir)) return -1;
    char corpus[128];
    snprintf(corpus, sizeof corpus, "%s/corpus.txt", g_dir);
    if (corpus_write(corpus, 131072, 1, "experiments/function_words.txt")) return -1;
    snprintf(g_results, sizeof g_results, "%s/results", g_dir);
    snprintf(g_db, sizeof g_db, "%s/gatelab.db", g_results);
    train_one(SAT, corpus, "model.value_residual=satformer", NULL, NULL);
    train_one(TSA, corpus, "model.depth_routing=tsa", "model.router_init_bias=0", NULL);
    train_one(EE, corpus, "model.depth_routing=early_exit", "train.steps=10", NULL);
    train_one(DENSE, corpus, NULL, NULL, NULL);
    train_one(EEP, corpus, "model.depth_routing=early_exit", "model.exit_form=paper", "model.exit_weighting=uniform");
    return 0;
}

static int teardown(void **state) {
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* The headline: soft and hard on the whole split, against what training recorded. */
static void test_headline(void **state) {
    (void)state;
    evalrun_opts o;
    evalrun_defaults(&o);
    o.run = target(TSA);
    o.record = 1;
    static evalrun_result r;
    char err[1024] = "";
    const double trained = row("tsa", "val", "final.loss", NULL), trained_hard = row("tsa", "val", "hard.loss", NULL);
    int rc = evalrun_measure(&o, &r, err, sizeof err);
    if (rc) print_message("evalrun_measure: %s\n", err);
    assert_int_equal(rc, 0);
    assert_true(r.have_hard && !r.have_sparse && !r.have_exit && r.routed);
    /* the same checkpoint on the same windows; OpenMP may split the sums differently than training did, so a
     * relative 1e-5 (float accumulation over a few thousand tokens) rather than bit for bit */
    print_message("soft loss %.9g, trained %.9g; hard %.9g, trained %.9g\n", r.soft.loss, trained, r.hard.loss,
                  trained_hard);
    assert_true(fabs(r.soft.loss - trained) <= 1e-5 * trained);
    assert_true(fabs(r.hard.loss - trained_hard) <= 1e-5 * trained_hard);
    assert_int_equal(evalrun_record(&o, &r, err, sizeof err), 0);
    assert_true(row("tsa", "val", "final.loss", NULL) == r.soft.loss); /* a REAL round trip */
    assert_true(row("tsa", "val", "hard.loss", NULL) == r.hard.loss);
    assert_true(row("tsa", "val", "hard.active_frac", NULL) == r.hard.active_frac);
}

/* Early exit matched to the TSA run's recorded hard α: the target and the partner's loss are the rows read. */
static void test_matched(void **state) {
    (void)state;
    evalrun_opts o;
    evalrun_defaults(&o);
    o.run = target(EE);
    o.partner_arg = "tsa";
    o.partner = target(TSA);
    o.record = 1;
    static evalrun_result r;
    char err[1024] = "";
    int rc = evalrun_measure(&o, &r, err, sizeof err);
    if (rc) print_message("evalrun_measure: %s\n", err);
    assert_int_equal(rc, 0);
    const double alpha = row("tsa", "val", "hard.active_frac", NULL), loss = row("tsa", "val", "hard.loss", NULL);
    assert_true(r.alpha_target == alpha && r.partner_loss == loss);
    assert_int_equal(r.have_exit, 2);
    print_message("matched α %.4f to %.4f at τ %.4f (closest only: %d)\n", r.exit.active_frac, alpha, r.tau,
                  r.closest_only);
    assert_true(r.closest_only || fabs(r.exit.active_frac - alpha) <= 0.005);
    assert_int_equal(evalrun_record(&o, &r, err, sizeof err), 0);
    assert_true(row("ee", "val", "matched.alpha_target", NULL) == alpha);
    assert_true(row("ee", "val", "matched.partner_loss", NULL) == loss);
    assert_true(row("ee", "val", "matched.loss", NULL) == r.exit.loss);
}

/* The TSA paper's τ protocol (--tau-protocol paper) on the paper-form early-exit run: the target is the TSA
 * run's train/alpha_paper.mean_evals, the 13 thresholds are each evaluated on 30 random batches of
 * train.batch_size windows, the chosen one has the α_paper nearest the target (the first of a tie), α_paper
 * is (1 + (L − 1)·α)/L on every row, that τ is then run on the whole split (the pair's side), and the
 * record is matched_paper.* with the protocol's own reading as matched_paper.protocol_* (nothing under
 * matched.*). */
static void test_matched_paper(void **state) {
    (void)state;
    evalrun_opts o;
    evalrun_defaults(&o);
    o.run = target(EEP);
    o.partner_arg = "tsa";
    o.partner = target(TSA);
    o.tau_protocol = EVALRUN_TAU_PAPER;
    o.record = 1;
    static evalrun_result r;
    char err[1024] = "";
    const long matched_before = count_rows("eep", "val");
    int rc = evalrun_measure(&o, &r, err, sizeof err);
    if (rc) print_message("evalrun_measure: %s\n", err);
    assert_int_equal(rc, 0);
    const double alpha = row("tsa", "train", "alpha_paper.mean_evals", NULL);
    assert_true(r.alpha_target == alpha && isnan(r.partner_loss));
    assert_int_equal(r.have_exit, 3);
    int best = -1;
    for (int i = 0; i < EVAL_PAPER_N_TAUS; i++) {
        const gl_eval_result *g = &r.grid[i];
        print_message("τ %.2f: α_paper %.4f (α %.4f), loss %.4f, %ld windows\n", eval_paper_taus[i],
                      g->active_frac_paper, g->active_frac, g->loss, g->windows);
        assert_int_equal(g->windows, EVAL_PAPER_BATCHES * 4); /* train.batch_size = 4 */
        assert_true(fabs(g->active_frac_paper - eval_alpha_paper(g->active_frac, r.n_layer)) < 1e-6);
        if (best < 0 || fabs(g->active_frac_paper - alpha) < fabs(r.grid[best].active_frac_paper - alpha)) best = i;
    }
    print_message("target α_paper %.4f: τ %.2f chosen (α_paper %.4f)\n", alpha, r.tau, r.exit.active_frac_paper);
    assert_true(r.tau == eval_paper_taus[best] && r.paper_best == best);
    /* then that τ exits for real on the whole split: the windows of the soft headline, not the random batches */
    assert_true(r.exit.windows == r.soft.windows && r.exit.tokens == r.soft.tokens &&
                r.exit.windows != r.grid[best].windows);
    assert_true(r.grid[0].windows == r.grid[1].windows && r.grid[0].loss != r.grid[1].loss); /* fresh batches */
    assert_int_equal(evalrun_record(&o, &r, err, sizeof err), 0);
    assert_true(row("eep", "val", "matched_paper.tau", NULL) == r.tau);
    assert_true(row("eep", "val", "matched_paper.alpha_target", NULL) == alpha);
    assert_true(row("eep", "val", "matched_paper.active_frac_paper", NULL) == r.exit.active_frac_paper);
    assert_true(row("eep", "val", "matched_paper.loss", NULL) == r.exit.loss);
    assert_true(row("eep", "val", "matched_paper.windows", NULL) == (double)r.exit.windows);
    assert_true(row("eep", "val", "matched_paper.protocol_loss", NULL) == r.grid[best].loss);
    assert_true(row("eep", "val", "matched_paper.protocol_active_frac_paper", NULL) == r.grid[best].active_frac_paper);
    assert_true(row("eep", "val", "matched_paper.protocol_windows", NULL) == (double)r.grid[best].windows);
    gl_db *db = NULL;
    double v;
    assert_int_equal(db_open_readonly(&db, g_db, err, sizeof err), 0);
    assert_int_equal(db_metric_last(db, "eep", "val", "matched.loss", NULL, &v, NULL, err, sizeof err), 0);
    db_close(db);
    assert_true(count_rows("eep", "val") > matched_before);
    /* the pair's side is `eval --tau` at the chosen τ on the split: the same code path, so the same bits */
    const double tau = r.tau, loss = r.exit.loss, frac = r.exit.active_frac;
    evalrun_defaults(&o);
    o.run = target(EEP);
    o.tau = tau;
    assert_int_equal(evalrun_measure(&o, &r, err, sizeof err), 0);
    assert_true(r.have_exit == 1 && r.exit.loss == loss && r.exit.active_frac == frac);
    /* the paper's protocol needs a target and the whole sweep: refused with --tau */
    evalrun_defaults(&o);
    o.run = target(EEP);
    o.tau_protocol = EVALRUN_TAU_PAPER;
    o.tau = 0.5;
    assert_int_equal(evalrun_measure(&o, &r, err, sizeof err), -1);
    assert_non_null(strstr(err, "--tau-protocol paper"));
}

/* Options the model cannot take, refused by name before anything is written. */
static void test_refusals(void **state) {
    (void)state;
    static evalrun_result r;
    char err[1024];
    evalrun_opts o;
    evalrun_defaults(&o);
    o.run = target(DENSE);
    o.sparse = 1;
    assert_int_equal(evalrun_measure(&o, &r, err, sizeof err), -1);
    assert_non_null(strstr(err, "--sparse needs a TSA model"));
    evalrun_defaults(&o);
    o.run = target(TSA);
    o.tau = 0.5;
    assert_int_equal(evalrun_measure(&o, &r, err, sizeof err), -1);
    assert_non_null(strstr(err, "--tau and --match-alpha need an early-exit model"));
    evalrun_defaults(&o);
    o.run = target(EE);
    o.partner_arg = "dense";
    o.partner = target(DENSE); /* a dense run records no α */
    assert_int_equal(evalrun_measure(&o, &r, err, sizeof err), -1);
    assert_non_null(strstr(err, "has no headline α"));
    static measure_ablation a;
    memset(&a, 0, sizeof a);
    measure_ablate_opts ao = {.kind = MEASURE_GATES, .mode = ABLATE_FULL_DEPTH, .layers = "1", .windows = 4,
                              .batch = 16};
    evalrun_target t = target(TSA);
    assert_int_equal(measure_ablate(&a, &t, &ao, err, sizeof err), -1);
    assert_non_null(strstr(err, "--mode full-depth acts on every router"));
    measure_ablation_close(&a);
}

/* An ablation and a τ sweep: the rows recorded are the values returned. */
static void test_ablate(void **state) {
    (void)state;
    static measure_ablation a;
    memset(&a, 0, sizeof a);
    char err[1024] = "";
    measure_ablate_opts o = {.kind = MEASURE_GATES, .mode = ABLATE_ZERO, .windows = 8, .batch = 16};
    evalrun_target t = target(SAT);
    int rc = measure_ablate(&a, &t, &o, err, sizeof err), n = 0;
    if (rc) print_message("measure_ablate: %s\n", err);
    assert_int_equal(rc, 0);
    assert_string_equal(a.label, "all");
    assert_true(isfinite(a.res.delta) && a.res.delta != 0);
    assert_int_equal(measure_ablation_record(&a, &n, err, sizeof err), 0);
    assert_true(n > 0);
    metric_key k;
    metric_ablation(&k, "zero", METRIC_LABEL_ALL, "delta_loss", METRIC_NONE);
    assert_true(row("sat", "ablation", k.name, k.params) == a.res.delta);
    measure_ablation_close(&a);

    memset(&a, 0, sizeof a);
    measure_ablate_opts x = {.kind = MEASURE_EXIT, .windows = 8, .batch = 16};
    t = target(EE);
    assert_int_equal(measure_ablate(&a, &t, &x, err, sizeof err), 0);
    static const double frontier[] = MEASURE_DEFAULT_TAUS;
    assert_int_equal(a.n_pts, 8);
    for (int i = 0; i < a.n_pts; i++) assert_true(a.pts[i].tau == frontier[i]);
    assert_int_equal(measure_ablation_record(&a, &n, err, sizeof err), 0);
    assert_true(n > 0);
    metric_exit_mode(&k, METRIC_EXIT_MODE, 0.95, "loss", METRIC_NONE);
    assert_true(row("ee", "ablation", k.name, k.params) == a.pts[7].r.loss);
    measure_ablation_close(&a);
}

/* The trace analysis: files and rows; with no_db the files only. */
static void test_trace(void **state) {
    (void)state;
    static measure_trace_result r;
    char err[1024] = "", path[GL_PATH_MAX + 64];
    measure_trace_opts o = {0};
    evalrun_target t = target(SAT);
    int rc = measure_trace(&t, &o, &r, err, sizeof err);
    if (rc) print_message("measure_trace: %s\n", err);
    assert_int_equal(rc, 0);
    if (r.notes[0]) print_message("notes: %s", r.notes);
    assert_true(r.n_rows > 0 && !r.routed);
    snprintf(path, sizeof path, "%s/alpha_heads.tsv", r.out_dir);
    assert_int_equal(access(path, R_OK), 0);
    assert_true(isfinite(row("sat", "analysis", "alpha_mean", NULL)));
    const long before = count_rows("sat", "analysis");
    o.no_db = 1;
    assert_int_equal(measure_trace(&t, &o, &r, err, sizeof err), 0);
    assert_int_equal(count_rows("sat", "analysis"), before);
}

/* Difficulty routing: ρ in [-1, 1], recorded on the TSA run against its dense partner. */
static void test_difficulty(void **state) {
    (void)state;
    static measure_difficulty_result r;
    char err[1024] = "";
    measure_difficulty_opts o = {.windows = 4, .seed = DIFF_SEED, .batch = 16};
    evalrun_target tsa = target(TSA), dense = target(DENSE);
    int rc = measure_difficulty(&tsa, &dense, &o, &r, err, sizeof err);
    if (rc) print_message("measure_difficulty: %s\n", err);
    assert_int_equal(rc, 0);
    assert_true(r.r.rho >= -1 && r.r.rho <= 1 && r.n_layer == 3);
    assert_int_equal(measure_difficulty_record(&tsa, &dense, &o, &r, err, sizeof err), 0);
    metric_key k;
    assert_int_equal(metric_partner(&k, METRIC_DIFFICULTY, "dense", DIFF_SEED, "rho"), 0);
    assert_true(row("tsa", "analysis", k.name, k.params) == r.r.rho);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_headline), cmocka_unit_test(test_matched), cmocka_unit_test(test_matched_paper),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_ablate),   cmocka_unit_test(test_trace),   cmocka_unit_test(test_difficulty),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
