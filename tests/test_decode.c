/*
 * test_decode.c — KV-cache decoding (model/decode.c) against the full
 * forward pass, for every variant the model has.
 *
 *  - teacher-forced: B = 3 sequences, prefill 5 positions, then one step per
 *    position up to the window; after every step the cached logits of each
 *    sequence equal model_forward's last-position logits over the window
 *    (up to the rounding of one row against B·T rows in sgemm);
 *  - greedy generation (harness/run/sample.c, temperature 0) over three
 *    windows' worth of tokens: the cached path gives exactly the tokens of
 *    the uncached path (past the window it re-prefills, decode.h);
 *  - TSA sparse inference and early exit really skip rows in a step (some
 *    (token, block) pairs halted or exited, some run), and still agree;
 *  - gate and constant-routing overrides pass through; the random-routing
 *    override is refused with a message and sample falls back to the
 *    uncached path.
 * Weights are N(0, 0.02) scaled ×4 (norm scales kept at 1) so that logits,
 * gates and halting probabilities are far from flat: a path that got a
 * position, a cache slot or a gate wrong moves them by far more than the
 * tolerance.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "model/decode.h"
#include "model/model.h"
#include "model/rng.h"
#include "run/sample.h"

enum { V = 17, T = 16, BMAX = 3, PROMPT = 5 };

typedef struct {
    const char *name;
    gl_value_residual vr;
    gl_resformer_variant rf;
    int last_k;
    gl_depth_routing dr;
    gl_cross_layer cl;
    int qk_norm, tied, kv_head;
    int sparse;    /* TSA: sparse inference with routers that halt about half the pairs */
    int exit;      /* early exit: τ set so that about half the tokens exit somewhere */
    int overrides; /* 1: a constant gate and a constant route override */
} variant;

static const variant VARIANTS[] = {
    {"base gqa qk", VR_NONE, RF_PLUS, 0, DR_NONE, CL_NONE, 1, 1, 2, 0, 0, 0},
    {"base mha no-qk untied", VR_NONE, RF_PLUS, 0, DR_NONE, CL_NONE, 0, 0, 4, 0, 0, 0},
    {"resformer plus", VR_RESFORMER, RF_PLUS, 0, DR_NONE, CL_NONE, 1, 1, 2, 0, 0, 0},
    {"resformer learnable", VR_RESFORMER, RF_LEARNABLE, 0, DR_NONE, CL_NONE, 1, 1, 2, 0, 0, 0},
    {"resformer identity", VR_RESFORMER, RF_IDENTITY, 0, DR_NONE, CL_NONE, 1, 1, 2, 0, 0, 0},
    {"satformer", VR_SATFORMER, RF_PLUS, 0, DR_NONE, CL_NONE, 1, 1, 2, 0, 0, 0},
    {"satformer last_k 1", VR_SATFORMER, RF_PLUS, 1, DR_NONE, CL_NONE, 1, 1, 2, 0, 0, 0},
    {"headgate", VR_HEADGATE, RF_PLUS, 0, DR_NONE, CL_NONE, 1, 1, 2, 0, 0, 0},
    {"satformer + overrides", VR_SATFORMER, RF_PLUS, 0, DR_NONE, CL_NONE, 1, 1, 2, 0, 0, 1},
    {"tsa soft", VR_NONE, RF_PLUS, 0, DR_TSA, CL_NONE, 1, 1, 2, 0, 0, 0},
    {"tsa sparse", VR_NONE, RF_PLUS, 0, DR_TSA, CL_NONE, 1, 1, 2, 1, 0, 0},
    {"tsa sparse + satformer", VR_SATFORMER, RF_PLUS, 0, DR_TSA, CL_NONE, 1, 1, 2, 1, 0, 0},
    {"tsa + constant route", VR_NONE, RF_PLUS, 0, DR_TSA, CL_NONE, 1, 1, 2, 1, 0, 1},
    {"early exit", VR_NONE, RF_PLUS, 0, DR_EARLY_EXIT, CL_NONE, 1, 1, 2, 0, 0, 0},
    {"early exit tau", VR_RESFORMER, RF_PLUS, 0, DR_EARLY_EXIT, CL_NONE, 1, 1, 2, 0, 1, 0},
    {"denseformer", VR_NONE, RF_PLUS, 0, DR_NONE, CL_DENSEFORMER, 1, 1, 2, 0, 0, 0},
    {"denseformer + tsa sparse + satformer", VR_SATFORMER, RF_PLUS, 0, DR_TSA, CL_DENSEFORMER, 1, 1, 2, 1, 0, 0},
    {"hyper + resformer", VR_RESFORMER, RF_PLUS, 0, DR_NONE, CL_HYPER, 1, 1, 2, 0, 0, 0},
    {"mudd + satformer", VR_SATFORMER, RF_PLUS, 0, DR_NONE, CL_MUDD, 1, 1, 2, 0, 0, 0},
};
enum { N_VARIANTS = sizeof VARIANTS / sizeof VARIANTS[0] };

static void tokens(int *tok, int n, uint64_t seed) {
    gl_rng r;
    rng_seed(&r, seed);
    for (int i = 0; i < n; i++) tok[i] = (int)rng_below(&r, V);
}

/* Median of the early-exit confidences of blocks 0..L-2 over a forward of tok. */
static float median_confidence(gl_model *m, const int *tok) {
    m->exit_tau = 0.0f;
    model_forward(m, tok, NULL, NULL, BMAX, T);
    const int n = (m->cfg.n_layer - 1) * BMAX * T;
    float *c = malloc((size_t)n * sizeof(float));
    memcpy(c, m->exit_conf, (size_t)n * sizeof(float));
    for (int i = 1; i < n; i++) /* insertion sort: n is small */
        for (int j = i; j > 0 && c[j - 1] > c[j]; j--) {
            float x = c[j];
            c[j] = c[j - 1];
            c[j - 1] = x;
        }
    float med = c[n / 2];
    free(c);
    return med;
}

/* Applied to the config after the row's settings (NULL: nothing): SATFormer's gate knobs. */
static void (*g_tweak)(gl_model_config *c);

static void build(gl_model *m, const variant *v) {
    gl_model_config c;
    config_defaults(&c);
    c.vocab_size = V;
    c.d_model = 32;
    c.n_layer = 4;
    c.n_head = 4;
    c.n_kv_head = v->kv_head;
    c.d_ff = 48;
    c.seq_len = T;
    c.qk_norm = v->qk_norm;
    c.tied = v->tied;
    c.value_residual = v->vr;
    c.resformer_variant = v->rf;
    c.vr_last_k = v->last_k;
    c.depth_routing = v->dr;
    c.cross_layer = v->cl;
    c.hc_expansion = 3;
    c.router_init_bias = 0.0f;
    if (g_tweak) g_tweak(&c);
    char err[256];
    int rc = model_init(m, &c, BMAX, err, sizeof err);
    if (rc) printf("  %s: %s\n", v->name, err);
    assert_int_equal(rc, 0);
    model_init_weights(m, 7);
    for (int i = 0; i < m->n_tensors; i++) {
        const gl_tensor *t = &m->tensors[i];
        float *p = m->params + t->offset;
        int is_router = strstr(t->name, "routers") != NULL;
        if (t->ndim == 2)
            for (size_t j = 0; j < t->size; j++) p[j] *= is_router ? 40.0f : 4.0f;
    }
    m->sparse = v->sparse;
    if (v->overrides) {
        if (v->vr != VR_NONE) model_set_gate_override(m, 2, 1, GATE_CONST, 0.3f);
        if (v->dr == DR_TSA) model_set_route_override(m, ROUTE_CONST, 0.25f, 0);
    }
    if (v->exit) {
        int tok[BMAX * T];
        tokens(tok, BMAX * T, 99);
        m->exit_tau = median_confidence(m, tok);
    }
}

static double max_abs(const float *a, const float *b, int n) {
    double w = 0;
    for (int i = 0; i < n; i++) w = fmax(w, fabs((double)a[i] - b[i]));
    return w;
}

/* Teacher-forced: cached logits vs model_forward after every step.  Returns
 * the worst difference; counts the (token, block >= 1) pairs the steps ran. */
static double teacher_forced(gl_model *m, gl_decode *dc) {
    int tok[BMAX * T], win[BMAX * T];
    tokens(tok, BMAX * T, 3);
    float *want = malloc((size_t)BMAX * V * sizeof(float));
    double worst = 0;
    for (int len = PROMPT; len <= T; len++) {
        for (int b = 0; b < BMAX; b++) memcpy(win + b * len, tok + b * T, (size_t)len * sizeof(int));
        if (len == PROMPT) {
            decode_prefill(dc, win, len);
        } else {
            int step[BMAX];
            for (int b = 0; b < BMAX; b++) step[b] = tok[b * T + len - 1];
            decode_step(dc, step);
        }
        assert_int_equal(dc->len, len);
        model_forward(m, win, NULL, NULL, BMAX, len);
        for (int b = 0; b < BMAX; b++)
            memcpy(want + b * V, m->logits + ((size_t)b * len + len - 1) * V, V * sizeof(float));
        worst = fmax(worst, max_abs(want, dc->logits, BMAX * V));
    }
    free(want);
    return worst;
}

static void collect(int token, void *ctx) {
    int **p = ctx;
    *(*p)++ = token;
}

/* Greedy tokens of one path into out (n). */
static void greedy(gl_model *m, const int *prompt, int use_cache, int *out, long n) {
    gl_sample_opts o = {n, 0.0, 1, use_cache};
    int cached = -1, *cur = out;
    char note[512], err[256];
    assert_int_equal(sample_run(m, prompt, PROMPT, &o, collect, &cur, &cached, note, sizeof note, err, sizeof err), 0);
    assert_int_equal(cached, use_cache);
    assert_int_equal(cur - out, n);
}

/* One variant: cached = uncached, teacher-forced and greedy past the window. */
static void decode_variant(const variant *v, int i, const char *label) {
    const long NEW = 3 * T; /* past the window: the cached path re-prefills from token T - PROMPT on */
    {
        gl_model m;
        gl_decode dc;
        char err[256];
        build(&m, v);
        assert_int_equal(decode_init(&dc, &m, BMAX, err, sizeof err), 0);
        double dl = teacher_forced(&m, &dc);
        long run = dc.pairs_run, total = dc.pairs_total;
        decode_free(&dc);
        int prompt[PROMPT], a[3 * T], b[3 * T];
        tokens(prompt, PROMPT, 5 + i);
        greedy(&m, prompt, 1, a, NEW);
        greedy(&m, prompt, 0, b, NEW);
        int same = !memcmp(a, b, sizeof a), distinct = 0;
        for (int k = 0; k < NEW; k++) distinct += k == 0 || a[k] != a[k - 1];
        printf("  %-38s max |Δlogit| %.2e; steps ran %ld of %ld (token, block >= 1) pairs; "
               "greedy %ld tokens: %s (%d changes of token)\n",
               label, dl, run, total, NEW, same ? "identical" : "DIFFERENT", distinct);
        /* one row against B·T rows in sgemm and a loop attention: float rounding, |logit| ~ 1..10 */
        assert_true(dl < 2e-4);
        assert_true(same);
        assert_int_equal(total, (long)BMAX * (T - PROMPT) * (m.cfg.n_layer - 1));
        if (v->sparse && !v->overrides)
            assert_true(run > total / 10 && run < total - total / 10);
        else if (v->exit)
            assert_true(run > 0 && run < total);
        else
            assert_true(run == total); /* soft routing, no exits, or the constant p = 0.25 */
        model_free(&m);
    }
}

static void test_variants(void **s) {
    (void)s;
    for (int i = 0; i < N_VARIANTS; i++) decode_variant(&VARIANTS[i], i, VARIANTS[i].name);
}

/* SATFormer's gate functions and bias (model.sat_gate, model.sat_gate_bias) on the
 * "satformer + overrides" row: block 2's KV head 1 fixed, the others free. */
static void tw_softmax_bias(gl_model_config *c) { c->sat_gate = SG_SOFTMAX; c->sat_gate_bias = 1; c->sat_gate_bias_init = 0.5f; }
static void tw_sm_sigmoid(gl_model_config *c) { c->sat_gate = SG_SOFTMAX_SIGMOID; }
static void tw_tanh(gl_model_config *c) { c->sat_gate = SG_TANH; }
static void test_sat_gates(void **s) {
    (void)s;
    const struct {
        void (*tw)(gl_model_config *);
        const char *label;
    } k[] = {{tw_softmax_bias, "satformer softmax + bias + overrides"},
             {tw_sm_sigmoid, "satformer softmax_sigmoid + overrides"},
             {tw_tanh, "satformer tanh + overrides"}};
    for (size_t j = 0; j < sizeof k / sizeof k[0]; j++) {
        g_tweak = k[j].tw;
        decode_variant(&VARIANTS[8], 8, k[j].label);
    }
    g_tweak = NULL;
}

/* The TSA paper's own model (docs/model.md "The TSA paper's own configuration") on rows of the table:
 * the gpt2 backbone (learned positions at the step's position, LayerNorm, GELU MLP with biases), TSA in
 * the paper's form (router on the raw stream, sequential gates) on gpt2 and on the llama block. */
static void tw_gpt2(gl_model_config *c) { c->backbone = BB_GPT2, c->qk_norm = 0, c->norm_eps = 1e-5f; }
static void tw_gpt2_paper(gl_model_config *c) { tw_gpt2(c), c->tsa_form = TF_PAPER; }
static void tw_paper(gl_model_config *c) { c->tsa_form = TF_PAPER; }
static void test_paper_model(void **s) {
    (void)s;
    const struct {
        int row;
        void (*tw)(gl_model_config *);
        const char *label;
    } k[] = {{1, tw_gpt2, "gpt2 mha untied"},        {5, tw_gpt2, "gpt2 satformer"},
             {9, tw_gpt2_paper, "gpt2 tsa paper soft"}, {10, tw_gpt2_paper, "gpt2 tsa paper sparse"},
             {14, tw_gpt2, "gpt2 early exit tau"},     {10, tw_paper, "llama tsa paper sparse"}};
    for (size_t j = 0; j < sizeof k / sizeof k[0]; j++) {
        g_tweak = k[j].tw;
        decode_variant(&VARIANTS[k[j].row], k[j].row, k[j].label);
    }
    g_tweak = NULL;
}

/* The paper's sparse form (m->sparse_form) is the uncached path's: decode_check says so. */
static void test_paper_sparse_form_refused(void **s) {
    (void)s;
    gl_model m;
    g_tweak = tw_paper;
    build(&m, &VARIANTS[10]);
    g_tweak = NULL;
    char why[512];
    assert_int_equal(decode_check(&m, why, sizeof why), 0);
    m.sparse_form = SPARSE_PAPER;
    assert_int_equal(decode_check(&m, why, sizeof why), -1);
    printf("  SPARSE_PAPER: %s\n", why);
    assert_non_null(strstr(why, "sparse form"));
    model_free(&m);
}

static void test_random_route_refused(void **s) {
    (void)s;
    gl_model m;
    gl_decode dc;
    char err[256], note[512];
    build(&m, &VARIANTS[9]); /* tsa soft */
    model_set_route_override(&m, ROUTE_RANDOM, 0.5f, 3);
    assert_int_equal(decode_init(&dc, &m, 1, err, sizeof err), -1);
    printf("  refused: %s\n", err);
    assert_non_null(strstr(err, "--no-cache"));
    int prompt[PROMPT], out[8], *cur = out, cached = -1;
    tokens(prompt, PROMPT, 1);
    gl_sample_opts o = {8, 0.0, 1, 1};
    assert_int_equal(sample_run(&m, prompt, PROMPT, &o, collect, &cur, &cached, note, sizeof note, err, sizeof err), 0);
    printf("  sample: %s\n", note);
    assert_int_equal(cached, 0);
    assert_non_null(strstr(note, "not used"));
    assert_int_equal(decode_init(&dc, &m, BMAX + 1, err, sizeof err), -1);
    model_clear_overrides(&m);
    assert_int_equal(decode_init(&dc, &m, BMAX + 1, err, sizeof err), -1);
    printf("  batch too large: %s\n", err);
    assert_int_equal(decode_init(&dc, &m, BMAX, err, sizeof err), 0);
    decode_free(&dc);
    decode_free(&dc); /* a freed (zeroed) cache frees again */
    model_free(&m);
}

static void test_temperature_sampling_same(void **s) {
    (void)s;
    /* At temperature > 0 both paths draw from the same rng sequence; their
     * probabilities differ only by rounding, so the draws agree except where
     * a uniform falls within ~1e-6 of a boundary (not with this seed). */
    gl_model m;
    build(&m, &VARIANTS[5]); /* satformer */
    int prompt[PROMPT], a[2 * T], b[2 * T], *ca = a, *cb = b, cached;
    char note[512], err[256];
    tokens(prompt, PROMPT, 2);
    gl_sample_opts o = {2 * T, 0.8, 42, 1};
    assert_int_equal(sample_run(&m, prompt, PROMPT, &o, collect, &ca, &cached, note, sizeof note, err, sizeof err), 0);
    o.use_cache = 0;
    assert_int_equal(sample_run(&m, prompt, PROMPT, &o, collect, &cb, &cached, note, sizeof note, err, sizeof err), 0);
    int same = !memcmp(a, b, sizeof a);
    printf("  temperature 0.8, seed 42, %d tokens: %s\n", 2 * T, same ? "identical" : "different");
    assert_true(same);
    model_free(&m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_variants),
        cmocka_unit_test(test_sat_gates),
        cmocka_unit_test(test_random_route_refused),
        cmocka_unit_test(test_paper_model),
        cmocka_unit_test(test_paper_sparse_form_refused),
        cmocka_unit_test(test_temperature_sampling_same),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
