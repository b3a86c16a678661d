/*
 * test_analysis.c — the analysis layer (analysis/): gate statistics, depth
 * profiles and category means on constructed arrays with known answers;
 * `analyze` on a constructed trace; gate interventions on a tiny SATFormer
 * and a tiny TSA model trained in memory on the test's own corpus
 * (tests/corpus.h: words, punctuation, function words, newlines); the paper
 * tables from a registry built here.
 *
 * Ablation checks: zeroing every gate changes the loss; zeroing (or
 * mean-replacing) a gate that is 0 on every token — its Wα row set to zero,
 * so ReLU(x·0) = 0 exactly — changes nothing, bit for bit; the per-category
 * losses recombine into the overall loss.  Run from the repository root
 * (tests/run.sh does, for experiments/function_words.txt).  Needs no data set.
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
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/measure/ablate.h"
#include "analysis/measure/analyze.h"
#include "analysis/core/catsens.h"
#include "analysis/measure/depth.h"
#include "analysis/core/gates.h"
#include "analysis/measure/heads.h"
#include "analysis/render/tables.h"
#include "store/data.h"
#include "store/registry.h"
#include "model/adamw.h"
#include "model/model.h"
#include "corpus.h"

/* Check |got − want| <= tol, print the check and its difference. */
static double g_worst;
#define NEAR(got, want, tol, what)                                                                      \
    do {                                                                                                \
        double g_ = (got), w_ = (want), d_ = fabs(g_ - w_);                                             \
        if (d_ > g_worst) g_worst = d_;                                                                 \
        if (!(d_ <= (tol))) print_message("FAIL %s: got %.9g want %.9g (diff %.3g)\n", what, g_, w_, d_); \
        assert_true(d_ <= (tol));                                                                       \
    } while (0)

static void test_gate_stats(void **state) {
    (void)state;
    g_worst = 0;
    double scratch[16];
    /* mean, zeros, below-ε */
    const float x[8] = {0.0f, 0.0f, 0.0005f, 0.005f, 0.05f, 0.5f, 1.0f, 2.0f};
    NEAR(gates_mean(x, 8, 1), (0.0005 + 0.005 + 0.05 + 0.5 + 1 + 2) / 8.0, 1e-7, "mean");
    NEAR(gates_frac_zero(x, 8, 1), 2.0 / 8, 0, "fraction exactly zero");
    NEAR(gates_frac_below(x, 8, 1, 1e-3), 3.0 / 8, 0, "fraction < 1e-3");
    NEAR(gates_frac_below(x, 8, 1, 1e-2), 4.0 / 8, 0, "fraction < 1e-2");
    NEAR(gates_frac_below(x, 8, 1, 1e-1), 5.0 / 8, 0, "fraction < 0.1");
    /* Gini: equal → 0; one-hot of n → 1 − 1/n; half zeros, half equal → 0.5 */
    const float eq[4] = {3, 3, 3, 3}, oh[4] = {0, 0, 7, 0}, half[4] = {1, 0, 1, 0};
    NEAR(gates_gini(eq, 4, 1, scratch), 0.0, 1e-12, "Gini of a constant");
    NEAR(gates_gini(oh, 4, 1, scratch), 0.75, 1e-12, "Gini of a one-hot vector of 4");
    NEAR(gates_gini(half, 4, 1, scratch), 0.5, 1e-12, "Gini of half zeros");
    /* Hoyer: constant → 0, one-hot → 1, [1,1,0,0] → (2 − √2)/(2 − 1) */
    NEAR(gates_hoyer(eq, 4, 1), 0.0, 1e-7, "Hoyer of a constant");
    NEAR(gates_hoyer(oh, 4, 1), 1.0, 1e-12, "Hoyer of a one-hot vector");
    NEAR(gates_hoyer(half, 4, 1), 2.0 - sqrt(2.0), 1e-7, "Hoyer of half zeros");
    /* undefined cases are NaN */
    const float z[3] = {0, 0, 0};
    assert_true(isnan(gates_gini(z, 3, 1, scratch)) && isnan(gates_hoyer(z, 3, 1)));
    assert_true(isnan(gates_gini(oh, 1, 1, scratch)) && isnan(gates_mean(x, 0, 1)));
    /* stride: head 1 of a (4 tokens, 2 heads) array is the one-hot column */
    const float th[8] = {1, 0, 1, 0, 1, 7, 1, 0};
    NEAR(gates_gini(th + 1, 4, 2, scratch), 0.75, 1e-12, "Gini with stride 2");
    const float neg[4] = {0, -7, 0, 0};
    NEAR(gates_gini(neg, 4, 1, scratch), 0.75, 1e-12, "Gini of |x|");
    /* the adapter against the Hurley–Rickard sum gates_gini used to compute
     * itself (unsorted L1, float sort): the same up to rounding, ≤ 1e-12 for
     * 16 values of order 1 (each of the 16 terms has relative error ~1e-16) */
    float r[16], c[16];
    for (int i = 0; i < 16; i++) r[i] = c[i] = (float)((i * 7919) % 13) / 13.0f - 0.2f;
    double l1 = 0;
    for (int i = 0; i < 16; i++) l1 += c[i] = fabsf(c[i]);
    for (int i = 1; i < 16; i++)
        for (int k = i; k > 0 && c[k - 1] > c[k]; k--) { float t = c[k]; c[k] = c[k - 1]; c[k - 1] = t; }
    double acc = 0;
    for (int k = 1; k <= 16; k++) acc += (c[k - 1] / l1) * ((16.0 - k + 0.5) / 16.0);
    NEAR(gates_gini(r, 16, 1, scratch), 1.0 - 2.0 * acc, 1e-12, "Gini = the Hurley-Rickard sum");
    NEAR(gates_mean(th, 4, 2), 1.0, 0, "mean with stride 2");
    gates_summary s;
    gates_summarize(th + 1, 4, 2, scratch, &s);
    NEAR(s.frac_zero, 0.75, 0, "summary: zeros");
    NEAR(s.hoyer, 1.0, 1e-12, "summary: Hoyer");
    /* entropy across heads: uniform 1, one-hot 0, two of four 0.5; massless tokens skipped */
    const float hx[4 * 4] = {1, 1, 1, 1, 0, 5, 0, 0, 2, 0, 2, 0, 0, 0, 0, 0};
    long used = -1;
    NEAR(gates_head_entropy(hx, 1, 4, &used), 1.0, 1e-12, "entropy of uniform heads");
    NEAR(gates_head_entropy(hx + 4, 1, 4, &used), 0.0, 1e-12, "entropy of one head");
    NEAR(gates_head_entropy(hx + 8, 1, 4, &used), 0.5, 1e-12, "entropy of two of four heads");
    NEAR(gates_head_entropy(hx, 4, 4, &used), 0.5, 1e-12, "mean entropy over tokens with mass");
    assert_int_equal(used, 3);
    /* a signed gate (sat_gate tanh / identity) enters by magnitude: {-2, 0, 2, 0} is two of four */
    const float hs[4] = {-2, 0, 2, 0};
    NEAR(gates_head_entropy(hs, 1, 4, &used), 0.5, 1e-12, "entropy of a signed gate, by magnitude");
    /* histogram: bins [0, .25) [.25, .5) [.5, .75) [.75, 1]; outside values clamp; NaN skipped */
    const float hv[7] = {-1.0f, 0.0f, 0.25f, 0.5f, 0.99f, 1.0f, NAN};
    long counts[4];
    assert_int_equal(gates_histogram(hv, 7, 1, 0.0, 1.0, 4, counts), 6);
    assert_true(counts[0] == 2 && counts[1] == 1 && counts[2] == 1 && counts[3] == 2);
    print_message("gate statistics: mean, zero / below-ε shares, Gini, Hoyer, head entropy, histogram; worst diff %.3g\n",
                  g_worst);
}

static void test_depth_and_categories(void **state) {
    (void)state;
    g_worst = 0;
    /* R = 2 routers (L = 3), P = 3 tokens */
    const float p[6] = {0.2f, 0.7f, 0.5f, /* router 0 → block 1 */
                        0.2f, 0.1f, 0.6f}; /* router 1 → block 2 */
    float soft[3];
    int hard[3];
    depth_tokens(p, 2, 3, soft, hard);
    NEAR(soft[0], 1 + 0.8 + 0.8, 1e-6, "soft depth of token 0");
    NEAR(soft[1], 1 + 0.3 + 0.9, 1e-6, "soft depth of token 1");
    NEAR(soft[2], 1 + 0.5 + 0.4, 1e-6, "soft depth of token 2");
    assert_true(hard[0] == 3 && hard[1] == 2 && hard[2] == 2); /* p = 0.5 still runs */
    double ds, dh, mp[2], act[2];
    depth_expected(p, 2, 3, &ds, &dh);
    NEAR(ds, (2.6 + 2.2 + 1.9) / 3, 1e-6, "expected soft depth");
    NEAR(dh, 7.0 / 3, 1e-12, "expected hard depth");
    double a = depth_active_frac(p, 2, 3);
    NEAR(a, 4.0 / 6, 1e-12, "active fraction");
    NEAR(dh, 1 + 2 * a, 1e-12, "mean hard depth = 1 + (L−1)·α");
    depth_router_profile(p, 2, 3, mp, act);
    NEAR(mp[0], (0.2 + 0.7 + 0.5) / 3, 1e-7, "mean p of router 0");
    NEAR(act[1], 2.0 / 3, 1e-12, "active share of block 2");
    long hist[3];
    depth_hist_hard(p, 2, 3, hist);
    assert_true(hist[0] == 0 && hist[1] == 2 && hist[2] == 1);
    /* category means with counts */
    const float v[6] = {1, 2, 3, 4, 5, 6};
    const uint8_t cat[6] = {CAT_STRUCTURAL, CAT_SEMANTIC, CAT_SEMANTIC, CAT_STRUCTURAL, CAT_SEMANTIC, 7};
    double mean[CAT_COUNT];
    long cnt[CAT_COUNT];
    assert_int_equal(catsens_means(v, 6, 1, cat, mean, cnt), 5);
    NEAR(mean[CAT_STRUCTURAL], 2.5, 0, "structural mean");
    NEAR(mean[CAT_SEMANTIC], 10.0 / 3, 1e-12, "semantic mean");
    assert_true(isnan(mean[CAT_FUNCTIONAL]) && cnt[CAT_FUNCTIONAL] == 0 && cnt[CAT_SEMANTIC] == 3);
    const float w[6] = {1, 0, 1, 3, 1, 1};
    double wsum[CAT_COUNT];
    catsens_weighted(v, w, 6, cat, mean, wsum);
    NEAR(mean[CAT_STRUCTURAL], (1 + 12) / 4.0, 1e-12, "weighted structural mean");
    NEAR(wsum[CAT_SEMANTIC], 2.0, 0, "semantic weight (masked token left out)");
    print_message("depth: soft/hard per token, expected depth, α, router profile, histogram; categories; worst diff %.3g\n",
                  g_worst);
}

static void tmp_dir(char *out, size_t n, const char *tag) {
    const char *t = getenv("TMPDIR");
    snprintf(out, n, "%s/gatelab-test-%s-XXXXXX", t && *t ? t : "/tmp", tag);
    assert_non_null(mkdtemp(out));
}

static long count_lines(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    long n = 0;
    int c;
    while ((c = fgetc(f)) != EOF) n += c == '\n';
    fclose(f);
    return n;
}

/* analyze on a constructed trace: 2 steps, L = 3, Hkv = 2, 4 probe tokens, TSA p too. */
static void test_analyze_trace(void **state) {
    (void)state;
    g_worst = 0;
    enum { S = 2, L = 3, H = 2, P = 4, R = 2 };
    long step[S] = {0, 10};
    float tl[S] = {NAN, 3.0f}, vl[S] = {4.0f, 3.5f};
    float alpha[S * L * P * H] = {0};
    float p[S * R * P];
    /* last step, block 1: head 0 = [0, 0, 0, 4] (one-hot), head 1 = [1, 1, 1, 1] */
    for (int t = 0; t < P; t++) {
        alpha[((1 * L + 1) * P + t) * H + 0] = t == 3 ? 4.0f : 0.0f;
        alpha[((1 * L + 1) * P + t) * H + 1] = 1.0f;
        alpha[((1 * L + 2) * P + t) * H + 0] = 0.5f;
    }
    for (int i = 0; i < S * R * P; i++) p[i] = (i % 3) == 0 ? 0.9f : 0.1f;
    int tok[P] = {0, 1, 2, 3};
    uint8_t cat[P] = {CAT_STRUCTURAL, CAT_FUNCTIONAL, CAT_SEMANTIC, CAT_SEMANTIC};
    gl_trace_data td = {S, L, H, R, P, step, tl, vl, {[GATE_ALPHA] = alpha, [GATE_P] = p}, tok, cat, (char *)"",
                        0, NULL, NULL, NULL, "", TRACE_SCHEMA_VERSION, 0, (char *)"", ""};
    char dir[512], err[1024] = "";
    tmp_dir(dir, sizeof dir, "analyze");
    report_metrics rm = {0};
    static analyze_summary s;
    const uint8_t vocab[4] = {' ', 'a', 'b', '"'};
    int rc = analyze_trace(&td, vocab, 4, dir, &rm, &s, err, sizeof err);
    if (rc) print_message("analyze_trace: %s\n", err);
    assert_int_equal(rc, 0);
    assert_true(s.head.gated[1] && s.head.gated[2] && !s.head.gated[0]);
    NEAR(s.head.head_mean[1][0], 1.0, 0, "α mean of block 1 head 0");
    NEAR(s.head.layer[1].mean, 1.0, 0, "α mean of block 1");
    double v;
    metric_key k;
    metric_stat(&k, "alpha_gini", 1, 0, METRIC_NONE);
    assert_true(report_metric_find(&rm, ANALYZE_SPLIT, &k, &v));
    NEAR(v, 0.75, 1e-12, "registry row alpha_gini.L1.H0 (one-hot)");
    metric_stat(&k, "alpha_gini", 1, 1, METRIC_NONE);
    assert_true(report_metric_find(&rm, ANALYZE_SPLIT, &k, &v));
    NEAR(v, 0.0, 1e-12, "registry row alpha_gini.L1.H1 (constant)");
    metric_stat(&k, "alpha_frac_zero", 2, METRIC_NONE, METRIC_NONE);
    assert_true(report_metric_find(&rm, ANALYZE_SPLIT, &k, &v));
    NEAR(v, 0.5, 0, "alpha_frac_zero.L2 (head 1 is all zero)");
    metric_stat(&k, "alpha_mean", 1, METRIC_NONE, CAT_SEMANTIC);
    assert_true(report_metric_find(&rm, ANALYZE_SPLIT, &k, &v));
    NEAR(v, (0 + 1 + 4 + 1) / 4.0, 0, "alpha_mean.L1.semantic");
    metric_plain(&k, "expected_depth_hard");
    assert_true(report_metric_find(&rm, ANALYZE_SPLIT, &k, &v));
    NEAR(v, 1 + 2 * depth_active_frac(p + R * P, R, P), 1e-12, "expected_depth_hard");
    metric_stat(&k, "p_mean", 2, METRIC_NONE, METRIC_NONE);
    assert_true(report_metric_find(&rm, ANALYZE_SPLIT, &k, &v));
    /* last step, router 1 = p[12..15] = 0.9, 0.1, 0.1, 0.9 */
    NEAR(v, (0.9 + 0.1 + 0.1 + 0.9) / 4, 1e-7, "p_mean.L2 (router 1)");
    /* the halting-probability histogram of the last step: p[8..15] = 0.1f ×5 (bin [0.1, 0.2)) and
     * 0.9f ×3 (0.89999998: bin [0.8, 0.9)) */
    metric_plain(&k, "p_hist_b1");
    assert_true(report_metric_find(&rm, ANALYZE_SPLIT, &k, &v));
    NEAR(v, 5.0 / 8, 0, "p_hist_b1");
    metric_plain(&k, "p_hist_b8");
    assert_true(report_metric_find(&rm, ANALYZE_SPLIT, &k, &v));
    NEAR(v, 3.0 / 8, 0, "p_hist_b8");
    metric_plain(&k, "p_hist_b5");
    assert_true(report_metric_find(&rm, ANALYZE_SPLIT, &k, &v));
    NEAR(v, 0.0, 0, "p_hist_b5");
    /* files: header + rows */
    char path[1024];
    snprintf(path, sizeof path, "%s/alpha_heads.tsv", dir);
    assert_int_equal(count_lines(path), 1 + 2 * H);
    snprintf(path, sizeof path, "%s/alpha_evolution.tsv", dir);
    assert_int_equal(count_lines(path), 1 + S * 2 * (H + 1));
    snprintf(path, sizeof path, "%s/depth_tokens.tsv", dir);
    assert_int_equal(count_lines(path), 1 + P);
    snprintf(path, sizeof path, "%s/depth_hist.tsv", dir);
    assert_int_equal(count_lines(path), 1 + L);
    snprintf(path, sizeof path, "%s/p_hist.tsv", dir);
    assert_int_equal(count_lines(path), 1 + ANALYZE_P_BINS);
    print_message("analyze on a constructed trace: %d files, %d metric rows; worst diff %.3g\n", s.n_files, rm.n, g_worst);
    report_metrics_free(&rm);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

/* ---- a tiny model trained in memory ---- */

/* The test's own corpus (tests/corpus.h), written once per process. */
static const char *corpus_path(void) {
    static char path[64];
    if (!path[0]) {
        char dir[] = "/tmp/gatelab_test_analysis_corpus_XXXXXX";
        assert_non_null(mkdtemp(dir));
        snprintf(path, sizeof path, "%s/corpus.txt", dir);
        assert_int_equal(corpus_write(path, 131072, 1, "experiments/function_words.txt"), 0);
    }
    return path;
}

static void corpus_remove(void) {
    const char *p = corpus_path();
    char dir[64];
    snprintf(dir, sizeof dir, "%s", p);
    *strrchr(dir, '/') = 0;
    unlink(p);
    rmdir(dir);
}

static void open_text(gl_dataset *ds, int T) {
    gl_manifest mf;
    manifest_defaults(&mf);
    char err[1024];
    snprintf(mf.data.file, sizeof mf.data.file, "%s", corpus_path());
    mf.data.task = TASK_TEXT;
    int rc = data_open(ds, &mf.data, T, 1, err, sizeof err);
    if (rc) print_message("data_open: %s\n", err);
    assert_int_equal(rc, 0);
}

static void tiny_model(gl_model *m, const gl_dataset *ds, gl_value_residual vr, gl_depth_routing dr, float bias, int steps) {
    gl_model_config c;
    config_defaults(&c);
    c.vocab_size = data_vocab_size(ds);
    c.d_model = 32;
    c.n_layer = 3;
    c.n_head = 2;
    c.n_kv_head = 2;
    c.d_ff = 64;
    c.seq_len = 32;
    c.value_residual = vr;
    c.depth_routing = dr;
    c.router_init_bias = bias;
    char err[512];
    int rc = model_init(m, &c, 4, err, sizeof err);
    if (rc) print_message("model_init: %s\n", err);
    assert_int_equal(rc, 0);
    model_init_weights(m, 7);
    gl_rng rng;
    rng_seed(&rng, 11);
    int tok[4 * 32], tg[4 * 32];
    float mask[4 * 32];
    gl_adamw opt = {0.9f, 0.95f, 1e-8f, 0.0f, 1.0f, 0};
    for (int s = 1; s <= steps; s++) {
        data_train_batch(ds, &rng, 4, tok, tg, mask);
        model_forward(m, tok, tg, mask, 4, 32);
        model_zero_grad(m);
        model_backward(m);
        adamw_step(m, &opt, 3e-3f, s);
    }
}

static void test_ablate_satformer(void **state) {
    (void)state;
    static gl_dataset ds;
    static gl_model m;
    static ablate_ctx c;
    memset(&ds, 0, sizeof ds);
    memset(&m, 0, sizeof m);
    open_text(&ds, 32);
    tiny_model(&m, &ds, VR_SATFORMER, DR_NONE, 0.0f, 20);
    /* a dead gate: block 2, KV head 1 reads V1 with Wα row = 0, so α = ReLU(0) = 0 on every token */
    const int d = m.cfg.d_model, L = m.cfg.n_layer, Hkv = m.cfg.n_kv_head;
    memset(m.P.layer[2].alpha + 1 * d, 0, (size_t)d * sizeof(float));
    char err[1024] = "", warn[512];
    int rc = ablate_init(&c, &m, &ds, 8, 3, "experiments/function_words.txt", warn, sizeof warn, err, sizeof err);
    if (rc) print_message("ablate_init: %s\n", err);
    assert_int_equal(rc, 0);
    assert_string_equal(c.eval_desc, "val[0,8)");
    assert_string_equal(c.ref_desc, "val[8,16)");
    unsigned char sel[64];
    ablate_eval base;
    assert_int_equal(ablate_baseline(&c, &base, NULL, err, sizeof err), 0);
    /* categories recombine into the total */
    double tw = 0, tl = 0;
    for (int k = 0; k < CAT_COUNT; k++)
        if (base.cat_tokens[k] > 0) tw += base.cat_tokens[k], tl += base.cat_tokens[k] * base.cat_loss[k];
    NEAR(tw, base.tokens, 0, "category token counts sum to the scored tokens");
    NEAR(tl / tw, base.loss, 1e-9, "category losses recombine into the loss");
    NEAR(base.tokens, 8 * 32, 0, "scored tokens of 8 windows");

    /* every gate zeroed: the loss moves */
    ablate_result all, dead, dead_mean;
    assert_int_equal(ablate_parse_selection(&m, NULL, NULL, sel, err, sizeof err), 0);
    rc = ablate_run(&c, ABLATE_ZERO, sel, &base, &all, err, sizeof err);
    if (rc) print_message("ablate_run: %s\n", err);
    assert_int_equal(rc, 0);
    print_message("zero every gate: base %.6f → %.6f nats/token, ΔL %+.3g\n", all.base.loss, all.ablated.loss, all.delta);
    assert_true(fabs(all.delta) > 1e-6);
    NEAR(all.ppl_ratio, exp(all.delta), 1e-12, "exp(ΔL)");

    /* the dead gate zeroed or mean-replaced: nothing changes, bit for bit */
    assert_int_equal(ablate_parse_selection(&m, NULL, "2:1", sel, err, sizeof err), 0);
    assert_int_equal(ablate_run(&c, ABLATE_ZERO, sel, NULL, &dead, err, sizeof err), 0);
    assert_true(dead.ablated.loss == dead.base.loss && dead.delta == 0.0);
    assert_int_equal(ablate_run(&c, ABLATE_MEAN, sel, NULL, &dead_mean, err, sizeof err), 0);
    assert_true(dead_mean.delta == 0.0);
    float mean[64];
    assert_int_equal(ablate_reference_alpha(&c, mean, err, sizeof err), 0);
    assert_true(mean[2 * Hkv + 1] == 0.0f && mean[1 * Hkv + 0] >= 0.0f);
    print_message("dead gate (block 2, head 1): zero ΔL %g, mean ΔL %g (exactly 0)\n", dead.delta, dead_mean.delta);
    /* a live head mean-replaced uses its reference mean (not 0): the result differs from zeroing */
    ablate_result z1, m1;
    assert_int_equal(ablate_parse_selection(&m, NULL, "1:0", sel, err, sizeof err), 0);
    assert_int_equal(ablate_run(&c, ABLATE_ZERO, sel, &base, &z1, err, sizeof err), 0);
    assert_int_equal(ablate_run(&c, ABLATE_MEAN, sel, &base, &m1, err, sizeof err), 0);
    assert_true(mean[1 * Hkv + 0] == 0.0f || z1.ablated.loss != m1.ablated.loss);

    /* heads: the dead gate has ΔL 0 and α = 0 on every token */
    heads_row *rows = NULL;
    int n = 0;
    ablate_eval hb;
    assert_int_equal(heads_rank(&c, &rows, &n, &hb, err, sizeof err), 0);
    assert_int_equal(n, (L - 1) * Hkv);
    int found = 0;
    for (int i = 0; i < n; i++) {
        if (i) assert_true(rows[i - 1].delta >= rows[i].delta);
        if (rows[i].layer == 2 && rows[i].kv_head == 1) {
            found = 1;
            assert_true(rows[i].delta == 0.0 && rows[i].frac_zero == 1.0 && rows[i].alpha_mean == 0.0);
        }
    }
    assert_true(found);
    free(rows);

    /* selections and labels */
    char label[64];
    assert_int_equal(ablate_parse_selection(&m, "1", "2:0", sel, err, sizeof err), 0);
    ablate_selection_label(&m, sel, label, sizeof label);
    assert_string_equal(label, "L1+L2H0");
    assert_int_equal(ablate_parse_selection(&m, "0", NULL, sel, err, sizeof err), -1);
    assert_non_null(strstr(err, "block 0"));
    assert_int_equal(ablate_parse_selection(&m, NULL, "2:5", sel, err, sizeof err), -1);
    assert_int_equal(ablate_run(&c, ABLATE_FULL_DEPTH, sel, NULL, &dead, err, sizeof err), -1);
    assert_non_null(strstr(err, "TSA"));
    ablate_free(&c);
    model_free(&m);
    data_close(&ds);
}

/* The paired standard error of ΔL: clusters of the same windows, by hand. */
static void test_paired_se(void **state) {
    (void)state;
    static ablate_eval a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    /* 3 clusters of 10 tokens; per-cluster mean loss a: 2.0, 2.2, 2.4; b: 1.9, 2.0, 2.1 */
    const double ma[3] = {2.0, 2.2, 2.4}, mb[3] = {1.9, 2.0, 2.1};
    for (int k = 0; k < 3; k++) {
        a.clu_w[k] = b.clu_w[k] = 10;
        a.clu_loss[k] = 10 * ma[k];
        b.clu_loss[k] = 10 * mb[k];
    }
    /* d_c = 1, 2, 3 (sums), Δ = 6/30 = 0.2, residuals d_c − Δ·w_c = −1, 0, 1: SE² = 3/2 · 2 / 900 */
    const double want = sqrt(1.5 * 2.0) / 30.0, got = ablate_paired_se(&a, &b);
    print_message("paired SE of ΔL: %.9f (by hand %.9f)\n", got, want);
    assert_true(fabs(got - want) < 1e-12);
    /* alone: the cluster-robust SE of a's loss; one cluster: none */
    assert_true(fabs(ablate_paired_se(&a, NULL) - sqrt(1.5 * 8.0) / 30.0) < 1e-12);
    a.clu_w[1] = a.clu_w[2] = 0;
    assert_true(isnan(ablate_paired_se(&a, &b)));
}

static void test_ablate_tsa(void **state) {
    (void)state;
    static gl_dataset ds;
    static gl_model m;
    static ablate_ctx c;
    memset(&ds, 0, sizeof ds);
    memset(&m, 0, sizeof m);
    open_text(&ds, 32);
    /* router bias +6: p ≈ 1 everywhere, so the learned routing skips every routed block */
    tiny_model(&m, &ds, VR_NONE, DR_TSA, 6.0f, 5);
    char err[1024] = "", warn[512];
    assert_int_equal(ablate_init(&c, &m, &ds, 4, 3, NULL, warn, sizeof warn, err, sizeof err), 0);
    ablate_result fd, rnd;
    int rc = ablate_run(&c, ABLATE_FULL_DEPTH, NULL, NULL, &fd, err, sizeof err);
    if (rc) print_message("full-depth: %s\n", err);
    assert_int_equal(rc, 0);
    assert_true(fd.ablated.active_frac == 1.0 && fabs(fd.delta) > 1e-6);
    assert_int_equal(ablate_run(&c, ABLATE_RANDOM, NULL, NULL, &rnd, err, sizeof err), 0);
    /* α = 0 learned → skip probability 1 → random routing skips everything too: identical */
    NEAR(rnd.base.active_frac, 0.0, 0, "learned hard α");
    NEAR(rnd.route_skip, 1.0, 0, "random skip probability");
    assert_true(rnd.delta == 0.0);
    print_message("TSA: full depth ΔL %+.4g (α 1.0), random at α 0 ΔL %g\n", fd.delta, rnd.delta);
    ablate_result z;
    unsigned char sel[64] = {0};
    assert_int_equal(ablate_run(&c, ABLATE_ZERO, sel, NULL, &z, err, sizeof err), -1);
    assert_non_null(strstr(err, "value_residual = none"));
    ablate_free(&c);
    model_free(&m);
    data_close(&ds);
}

/* ---- tables from a registry built here ---- */

static void add_run(gl_db *db, long long exp, const char *id, const char *ini, const char *status, const gl_metric *mt,
                    int n) {
    char err[1024];
    assert_int_equal(db_run_create(db, exp, id, id, ini, "h", 1, "SCHEDULED", err, sizeof err), 0);
    assert_int_equal(db_params_put_ini(db, id, ini, err, sizeof err), 0);
    assert_int_equal(db_run_start(db, id, err, sizeof err), 0);
    int rc = db_metrics_log(db, id, mt, n, err, sizeof err);
    if (rc) print_message("metrics: %s\n", err);
    assert_int_equal(rc, 0);
    if (strcmp(status, "RUNNING")) assert_int_equal(db_run_finish(db, id, status, 0, NULL, err, sizeof err), 0);
}

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    static char buf[1 << 16];
    size_t k = fread(buf, 1, sizeof buf - 1, f);
    buf[k] = 0;
    fclose(f);
    return buf;
}

static void test_tables(void **state) {
    (void)state;
    char dir[512], path[1024], err[1024] = "";
    tmp_dir(dir, sizeof dir, "tables");
    snprintf(path, sizeof path, "%s/gatelab.db", dir);
    gl_db *db = NULL;
    assert_int_equal(db_open(&db, path, err, sizeof err), 0);
    long long e;
    assert_int_equal(db_experiment_ensure(db, "paper", "", &e, err, sizeof err), 0);
    const char *sat = "[model]\nscale = xs\nvalue_residual = satformer\ndepth_routing = none\n[data]\ntask = text\n"
                      "file = tinyshakespeare.txt\n[train]\nseed = %d\n";
    char ini[512];
    /* headline rows on the whole split (val[0,100), 6400 tokens) at step 10; periodic rows on 4 windows */
#define HL(n, v, e_) {.step = 10, .split = "val", .name = n, .value = v, .prov = WHOLE, .se = e_}
#define PER(st, n, v) {.step = st, .split = "val", .name = n, .value = v, .prov = {"val", 0, 4, 256}}
#define M(st, sp, n, v) {.step = st, .split = sp, .name = n, .value = v}
    const gl_prov WHOLE = {"val", 0, 100, 6400};
    gl_metric m1[] = {HL("final.loss", 1.5, 0.01), PER(10, "loss", 1.9), PER(0, "loss", 9.0),
                      HL("final.bpc", 1.5 / log(2), 0), M(5, "train", "tokens_per_s", 100),
                      M(10, "train", "tokens_per_s", 1000)};
    snprintf(ini, sizeof ini, sat, 1);
    add_run(db, e, "sat1", ini, "FINISHED", m1, 6);
    gl_metric m2[] = {HL("final.loss", 1.7, 0.01), HL("final.bpc", 1.7 / log(2), 0), M(10, "train", "tokens_per_s", 2000),
                      {.step = 10, .split = "ablation", .name = "zero.delta_loss", .params = "{\"gates\":\"all\"}", .value = 0.25,
                       .prov = {"val", 0, 64, 4096}, .se = 0.0125},
                      {.step = 10, .split = "ablation", .name = "zero.ppl_ratio", .params = "{\"gates\":\"all\"}", .value = exp(0.25),
                       .prov = {"val", 0, 64, 4096}},
                      {.step = 10, .split = "ablation", .name = "zero.delta_loss",
                       .params = "{\"gates\":\"all\",\"category\":\"semantic\"}", .value = 0.5,
                       .prov = {"val", 0, 64, 4096}},
                      /* the same intervention on 128 windows: its own row, never mixed with the 64 */
                      {.step = 10, .split = "ablation", .name = "zero.delta_loss", .params = "{\"gates\":\"all\"}", .value = 0.375,
                       .prov = {"val", 0, 128, 8192}}};
    snprintf(ini, sizeof ini, sat, 2);
    add_run(db, e, "sat2", ini, "FINISHED", m2, 7);
    gl_metric m3[] = {PER(10, "loss", 5.0)};
    snprintf(ini, sizeof ini, sat, 3);
    add_run(db, e, "sat3-running", ini, "RUNNING", m3, 1); /* not finished: left out */
    /* baselines of seeds 1 and 2 (paired with sat1, sat2), seed 2 with only a periodic evaluation (no headline) */
    const char *base = "[model]\nscale = xs\nvalue_residual = none\ndepth_routing = none\n[data]\ntask = text\n"
                       "file = tinyshakespeare.txt\n[train]\nseed = %d\n";
    gl_metric b1[] = {HL("final.loss", 1.625, 0.01)};
    snprintf(ini, sizeof ini, base, 1);
    add_run(db, e, "base1", ini, "FINISHED", b1, 1);
    gl_metric b2[] = {PER(10, "loss", 1.75)};
    snprintf(ini, sizeof ini, base, 2);
    add_run(db, e, "base2", ini, "FINISHED", b2, 1);
    /* TSA: its headline is the hard.* evaluation, the skipping done; final.* is its soft loss (docs/registry.md,
     * "The headline") */
    gl_metric m4[] = {HL("final.loss", 2.1, 0.02), HL("final.active_frac", 0.9, 0), HL("final.tlops_saved", 0.05, 0),
                      HL("hard.loss", 2.0, 0.02), HL("hard.active_frac", 0.726, 0), HL("hard.tlops_saved", 0.228, 0),
                      PER(10, "loss", 2.5), PER(10, "active_frac", 0.5),
                      {.step = 10, .split = "analysis", .name = "settled_at_halt", .value = 0.8125,
                       .prov = {"val", 0, 64, 4096}}};
    add_run(db, e, "tsa1",
            "[model]\nscale = s\nvalue_residual = none\ndepth_routing = tsa\ntsa_lambda = 0.01\n[data]\ntask = text\n"
            "file = tinyshakespeare.txt\n[train]\nseed = 1\n",
            "FINISHED", m4, 9);
    /* the early-exit run holds the matched pair: τ for α 0.726 by bisection, on the same whole split */
    gl_metric m6[] = {HL("final.loss", 2.4, 0.02), HL("hard.loss", 2.3, 0.02), HL("matched.tau", 0.8125, 0), HL("matched.alpha_target", 0.726, 0),
                      HL("matched.active_frac", 0.7275, 0), HL("matched.loss", 2.2, 0.02),
                      HL("matched.partner_loss", 2.0, 0)};
    add_run(db, e, "ee1",
            "[model]\nscale = s\ndepth_routing = early_exit\n[data]\ntask = text\nfile = tinyshakespeare.txt\n[train]\n"
            "seed = 1\n",
            "FINISHED", m6, 7);
    /* an early-exit run whose bisection did not reach the TSA α, and whose hard loss is not recorded */
    gl_metric m7[] = {HL("final.loss", 2.45, 0.02), HL("matched.tau", 0.5, 0), HL("matched.alpha_target", 0.726, 0),
                      HL("matched.active_frac", 0.52, 0), HL("matched.loss", 2.6, 0.02)};
    add_run(db, e, "ee2",
            "[model]\nscale = s\ndepth_routing = early_exit\n[data]\ntask = text\nfile = tinyshakespeare.txt\n[train]\n"
            "seed = 2\n",
            "FINISHED", m7, 5);
    gl_metric m5[] = {HL("final.loss", 0.1, 0.001), HL("final.token_acc", 0.995, 0), HL("final.seq_acc", 0.9, 0)};
    add_run(db, e, "copy1", "[model]\nscale = xs\n[data]\ntask = copy\n[train]\nseed = 1\n", "FINISHED", m5, 3);
    /* `make bench` cost runs (their own experiment): baseline and hyper at scale m */
    long long ec;
    assert_int_equal(db_experiment_ensure(db, "cost-t", "", &ec, err, sizeof err), 0);
    gl_metric c1[] = {M(0, "bench", "train_tokens_per_s", 3000), M(0, "bench", "peak_rss_mib", 2000)};
    gl_metric c2[] = {M(0, "bench", "train_tokens_per_s", 2400), M(0, "bench", "peak_rss_mib", 2600)};
#undef HL
#undef PER
#undef M
    add_run(db, ec, "cost-t-m-base", "[model]\nscale = m\ncross_layer = none\n", "FINISHED", c1, 2);
    add_run(db, ec, "cost-t-m-hyper", "[model]\nscale = m\ncross_layer = hyper\n", "FINISHED", c2, 2);
    db_close(db);

    gl_db *r = NULL;
    assert_int_equal(db_open_readonly(&r, path, err, sizeof err), 0);
    static tables_summary s;
    char out[600];
    snprintf(out, sizeof out, "%s/tables", dir);
    int rc = tables_write_all(r, "paper", out, &s, err, sizeof err);
    if (rc) print_message("tables: %s\n", err);
    assert_int_equal(rc, 0);
    assert_int_equal(s.n_runs, 8);
    assert_int_equal(s.n_written, 6);
    /* headlines 1.5 and 1.7 (not the periodic 1.9): mean 1.6, sample std 0.1414; measured on one token set */
    snprintf(path, sizeof path, "%s/loss_by_variant.md", out);
    char *t = slurp(path);
    assert_non_null(t);
    assert_non_null(strstr(t, "| tinyshakespeare | xs | satformer | 2 | 1.6000 ± 0.1414 | 2.3083 ± 0.2040 |"));
    assert_non_null(strstr(t, "| val[0,100) 6400 tok @10 |"));
    assert_null(strstr(t, "5.0000"));
    assert_null(strstr(t, "1.9000"));
    /* the baseline pairs by seed only where both are headlines on one token set: seed 1, 1.5 − 1.625 */
    assert_non_null(strstr(t, "| -0.1250 (1 seed) |"));
    /* one seed: ± its standard error; a run without a headline is marked and the note says why */
    assert_non_null(strstr(t, "| tinyshakespeare | s | baseline+tsa | 1 | 2.0000 ± 0.0200 | – |"));
    assert_non_null(strstr(t, "1.6875 ± 0.0884 †"));
    assert_non_null(strstr(t, "mixed"));
    assert_non_null(strstr(t, "† the run's last periodic evaluation"));
    /* routed runs by their loss with the skipping done, the soft loss named in a note; ee2 without hard rows
     * has no headline, and the note says so */
    assert_non_null(strstr(t, "| tinyshakespeare | s | baseline+early_exit | 1 | 2.3000 ± 0.0200 |"));
    assert_non_null(strstr(t, "their soft loss"));
    assert_non_null(strstr(t, "tinyshakespeare baseline+tsa 2.1000"));
    assert_non_null(strstr(t, "Not shown: TSA and early-exit runs whose loss with the skipping done is not recorded"));
    assert_non_null(strstr(t, "records it: ee2."));
    snprintf(path, sizeof path, "%s/loss_by_variant.tex", out);
    t = slurp(path);
    assert_non_null(t);
    assert_non_null(strstr(t, "$1.6000 \\pm 0.1414$"));
    assert_non_null(strstr(t, "\\toprule"));
    snprintf(path, sizeof path, "%s/tsa_lambda.md", out);
    t = slurp(path);
    assert_non_null(strstr(t, "| tinyshakespeare | s | baseline+tsa | 0.01 | 1 | 0.726 | 22.8 | 2.0000 ± 0.0200 | 81.2 | "
                              "val[0,100) 6400 tok @10 |")); /* settled at halt: analyze's row, 81.25 % */
    snprintf(path, sizeof path, "%s/task_accuracy.md", out);
    t = slurp(path);
    assert_non_null(strstr(t, "| copy | xs | baseline | 1 | 99.50 | 90.00 |"));
    /* throughput: the first log row is start-up and left out when there are more: (1000 + 2000) / 2 */
    snprintf(path, sizeof path, "%s/throughput.md", out);
    t = slurp(path);
    assert_non_null(strstr(t, "| tinyshakespeare | xs | satformer | 2 | 1500 ± 707 |"));
    /* ablations: the 64- and 128-window measurements are two rows, each with its own siblings */
    snprintf(path, sizeof path, "%s/ablations.md", out);
    t = slurp(path);
    assert_non_null(strstr(t, "| sat2 | satformer | xs | zero | all | +0.2500 ± 0.0125 | 1.2840 | – | – | +0.5000 | "
                              "val[0,64) 4096 tok @10 |"));
    assert_non_null(strstr(t, "| sat2 | satformer | xs | zero | all | +0.3750 | – | – | – | – | val[0,128) 8192 tok @10 |"));
    /* TSA against early exit: the recorded pair at matched α, and an unmatched one that says so */
    snprintf(path, sizeof path, "%s/tsa_vs_exit.md", out);
    t = slurp(path);
    assert_non_null(t);
    assert_non_null(strstr(t, "| tinyshakespeare | s | tsa1 | 0.01 | 0.726 | 2.0000 ± 0.0200 | ee1 | 0.812 | 0.728 | "
                              "2.2000 ± 0.0200 | +0.2000 | val[0,100) 6400 tok @10 |"));
    assert_non_null(strstr(t, "| ee2 | 0.500 | 0.520 | 2.6000 ± 0.0200 | not matched: α 0.520 vs 0.726 |"));
    print_message("tables: 6 tables from %d finished runs; headlines, provenance, paired differences, matched pairs\n",
                  s.n_runs);
    /* the cost table: throughput and memory relative to the same scale's baseline */
    char out2[640];
    snprintf(out2, sizeof out2, "%s/cost", dir);
    assert_int_equal(tables_write_all(r, "cost-t", out2, &s, err, sizeof err), 0);
    assert_int_equal(s.n_written, 1);
    snprintf(path, sizeof path, "%s/cost.md", out2);
    t = slurp(path);
    assert_non_null(t);
    assert_non_null(strstr(t, "| m | baseline+hyper | 2400 | 0.800 | 1.250 | 2600 | 1.300 |"));
    /* an experiment with no runs: every table skipped, none written */
    assert_int_equal(tables_write_all(r, "nope", out, &s, err, sizeof err), 0);
    assert_int_equal(s.n_written, 0);
    assert_int_equal(s.n_skipped, 7);
    db_close(r);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gate_stats),   cmocka_unit_test(test_depth_and_categories),
        cmocka_unit_test(test_analyze_trace), cmocka_unit_test(test_ablate_satformer),
        cmocka_unit_test(test_ablate_tsa),   cmocka_unit_test(test_paired_se),   cmocka_unit_test(test_tables),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    corpus_remove();
    return failed;
}
