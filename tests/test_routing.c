/*
 * test_routing.c — TSA and early exit at inference.
 *
 *  - α / TLOps arithmetic, including the published pairs for L = 6;
 *  - the active fraction the model reports on constructed routers;
 *  - sparse inference (gather → sgemm on packed rows → scatter) equals the
 *    soft model whose skipped updates are zeroed by hand (hard routing), and
 *    with every p ≤ 0.5 computes every token and equals the soft model;
 *  - early exit: τ = 1 (nobody exits) equals the plain forward; the skipping
 *    path (an exited token computes only its k and v) gives the outputs of
 *    the bookkeeping reference; the τ bisection reaches a requested α within
 *    0.005; in the TSA paper's form (exit_form paper) the exits, predictions and
 *    loss equal a slow reference (every block for every token, each prediction
 *    taken at its exit), an exited token's state keeps being updated, and α in
 *    both conventions on cases checked by hand;
 *  - post-hoc early exit of a dense model: τ > 1 is the dense loss exactly,
 *    τ = 0 is block 0's logit lens (computed here in double), the skipping
 *    path equals the bookkeeping reference;
 *  - the headline's hard evaluation (TSA p > 0.5 skips): the sparse pass, its
 *    α equals the share of rows really computed, and the p_mid_share;
 *    eval_each_batch, the one evaluation loop, and eval_split's loss_se
 *    against the textbook cluster-robust formula.
 *  - Mixture-of-Depths and random routing: each routed block runs exactly
 *    k = round(capacity·T) tokens per window (MoD) and α is the count's share;
 *    real skipping (m->sparse: only the selected tokens, packed, enter the
 *    block) gives the masked full forward's logits; random routing's
 *    evaluation draw depends on a window's tokens only (not its batch slot),
 *    its training draw on the step; the equal-TLOps dense block count.
 */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "store/data.h"
#include "run/evaluate.h"
#include "model/model.h"
#include "model/rng.h"

static void test_tlops_arithmetic(void **s) {
    (void)s;
    /* docs/model.md: with L = 6, α 0.726 → 22.8 %, 0.833 → 13.9 %, 0.341 → 54.9 % */
    const double pairs[][2] = {{0.726, 0.228}, {0.833, 0.139}, {0.341, 0.549}, {1.0, 0.0}, {0.0, 5.0 / 6.0}};
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        double got = eval_tlops_saved(pairs[i][0], 6);
        printf("  α %.3f → TLOps saved %.4f (published %.3f)\n", pairs[i][0], got, pairs[i][1]);
        assert_true(fabs(got - pairs[i][1]) < 6e-4);
    }
}

/* Applied to tsa_model's config before the model is built (NULL: the default llama, gatelab form). */
static void (*g_tsa_tweak)(gl_model_config *c);

static void tsa_model(gl_model *m, int B, float router_scale, float bias) {
    gl_model_config c;
    config_defaults(&c);
    c.vocab_size = 13;
    c.d_model = 32;
    c.n_layer = 4;
    c.n_head = 4;
    c.n_kv_head = 2;
    c.d_ff = 48;
    c.seq_len = 16;
    c.depth_routing = DR_TSA;
    c.router_init_bias = bias;
    if (g_tsa_tweak) g_tsa_tweak(&c);
    char err[256];
    assert_int_equal(model_init(m, &c, B, err, sizeof err), 0);
    model_init_weights(m, 5);
    for (int i = 0; i < m->n_tensors; i++) {
        const gl_tensor *t = &m->tensors[i];
        float *p = m->params + t->offset;
        if (t->ndim == 2)
            for (size_t j = 0; j < t->size; j++) p[j] *= strstr(t->name, "routers") ? router_scale : 5.0f;
    }
}

static void tokens(int *tok, int n, int V) {
    gl_rng r;
    rng_seed(&r, 11);
    for (int i = 0; i < n; i++) tok[i] = (int)rng_below(&r, V);
}

static void test_active_fraction(void **s) {
    (void)s;
    gl_model m;
    tsa_model(&m, 2, 0.0f, 0.0f);
    int tok[32];
    tokens(tok, 32, 13);
    /* routers 0 and 2 skip (p = σ(3) > 0.5), router 1 runs (p = σ(−3)): α = 1/3 */
    m.P.router[0].fc2_b[0] = 3.0f;
    m.P.router[1].fc2_b[0] = -3.0f;
    m.P.router[2].fc2_b[0] = 3.0f;
    model_forward(&m, tok, NULL, NULL, 2, 16);
    printf("  constructed routers: α = %.6f (expected 1/3)\n", m.active_frac);
    assert_true(fabs(m.active_frac - 1.0 / 3.0) < 1e-6);
    model_free(&m);
}

static double max_abs_diff(const float *a, const float *b, size_t n) {
    double w = 0;
    for (size_t i = 0; i < n; i++) w = fmax(w, fabs((double)a[i] - b[i]));
    return w;
}

static void test_sparse_equals_hard_soft(void **s) {
    (void)s;
    /* Hard routing (p ∈ {0, 1} from a seeded ROUTE_RANDOM override, the same
     * in both models): the soft model multiplies a skipped pair's update by
     * 1 − p = 0 and still computes its FFN; the sparse model keeps the state
     * and never computes the FFN rows.  They must agree up to the rounding of
     * packed vs unpacked sgemm. */
    gl_model m, ref;
    tsa_model(&m, 3, 30.0f, 0.0f);
    tsa_model(&ref, 3, 30.0f, 0.0f);
    const int B = 3, T = 16, N = B * T, V = 13;
    int tok[48];
    tokens(tok, N, V);
    model_set_route_override(&m, ROUTE_RANDOM, 0.4f, 7);
    model_set_route_override(&ref, ROUTE_RANDOM, 0.4f, 7);
    model_forward(&ref, tok, NULL, NULL, B, T);
    m.sparse = 1;
    model_forward(&m, tok, NULL, NULL, B, T);
    double d = max_abs_diff(m.logits, ref.logits, (size_t)N * V);
    printf("  hard routing (α = %.3f, %ld of %d pairs computed): sparse vs soft with zeroed updates, max |Δlogit| = %.2e\n",
           m.active_frac, m.active_count, N * (m.cfg.n_layer - 1), d);
    assert_true(m.active_frac > 0.3 && m.active_frac < 0.9);
    assert_true(fabs(m.active_frac - ref.active_frac) < 1e-7);
    assert_int_equal(m.active_count, (long)lround(m.active_frac * N * (m.cfg.n_layer - 1)));
    assert_true(d < 1e-4);
    model_free(&m);
    model_free(&ref);
}

static void test_sparse_all_kept(void **s) {
    (void)s;
    gl_model m;
    tsa_model(&m, 2, 0.0f, -4.0f); /* p = σ(−4) ≈ 0.018 for every token */
    const int B = 2, T = 16, N = B * T, V = 13;
    int tok[32];
    tokens(tok, N, V);
    model_forward(&m, tok, NULL, NULL, B, T);
    float soft[32 * 13];
    memcpy(soft, m.logits, sizeof soft);
    m.sparse = 1;
    model_forward(&m, tok, NULL, NULL, B, T);
    double d = max_abs_diff(soft, m.logits, (size_t)N * V);
    printf("  every p <= 0.5: α %.3f, active pairs %ld of %d, max |Δlogit| = %.2e\n", m.active_frac,
           m.active_count, N * (m.cfg.n_layer - 1), d);
    assert_true(m.active_frac == 1.0f);
    assert_int_equal(m.active_count, N * (m.cfg.n_layer - 1));
    assert_true(d < 1e-4);
    model_free(&m);
}

/* The same two checks on the TSA paper's own model (docs/model.md "The TSA paper's own configuration"):
 * the gpt2 backbone with either TSA form, and the paper's form on the llama block.  The paper's
 * sequential gates keep a skipped token's state through both halves of the block, as the joint gate does. */
static void tw_gpt2(gl_model_config *c) { c->backbone = BB_GPT2; c->qk_norm = 0; c->norm_eps = 1e-5f; }
static void tw_gpt2_paper(gl_model_config *c) { tw_gpt2(c); c->tsa_form = TF_PAPER; }
static void tw_paper(gl_model_config *c) { c->tsa_form = TF_PAPER; }
static void test_sparse_paper_forms(void **s) {
    void (*tw[])(gl_model_config *) = {tw_gpt2, tw_gpt2_paper, tw_paper};
    const char *names[] = {"gpt2, tsa_form gatelab", "gpt2, tsa_form paper", "llama, tsa_form paper"};
    for (int i = 0; i < 3; i++) {
        printf(" %s:\n", names[i]);
        g_tsa_tweak = tw[i];
        test_sparse_equals_hard_soft(s);
        test_sparse_all_kept(s);
    }
    g_tsa_tweak = NULL;
}

/* The paper's sparse form (m->sparse_form = SPARSE_PAPER: p >= 0.5 halts, attention for every token,
 * the FFN on kept tokens only, kept tokens unscaled) gives the loss of the dense model whose gates are
 * the hard 0/1 version of the sparse run's p (a ROUTE_TOKEN table: 1 where p >= 0.5), on both backbones and
 * TSA forms; gatelab's form (kept pairs keep 1 − p) gives another loss. */
static void test_sparse_paper_form_is_hard_gate(void **s) {
    (void)s;
    void (*tw[])(gl_model_config *) = {NULL, tw_gpt2_paper, tw_paper};
    const char *names[] = {"llama, tsa_form gatelab", "gpt2, tsa_form paper", "llama, tsa_form paper"};
    for (int v = 0; v < 3; v++) {
        g_tsa_tweak = tw[v];
        gl_model m, ref;
        tsa_model(&m, 3, 30.0f, 0.0f);
        tsa_model(&ref, 3, 30.0f, 0.0f);
        const int B = 3, T = 16, N = B * T, V = 13, L = m.cfg.n_layer;
        int tok[48], tg[48];
        tokens(tok, N, V);
        for (int i = 0; i < N; i++) tg[i] = (tok[i] * 5 + 3) % V;
        m.sparse = 1;
        m.sparse_form = SPARSE_PAPER;
        model_forward(&m, tok, tg, NULL, B, T); /* the hard model's own p (its states differ from the soft one's) */
        float table[3 * 48];
        long halted = 0;
        for (int n = 1; n < L; n++)
            for (int t = 0; t < N; t++) {
                table[(size_t)(n - 1) * N + t] = m.A[n].p[t] >= 0.5f ? 1.0f : 0.0f;
                halted += m.A[n].p[t] >= 0.5f;
            }
        model_set_route_token_table(&ref, table); /* ref.max_B = 3: rows (n − 1)·max_B·T + t */
        model_forward(&ref, tok, tg, NULL, B, T);
        const double dl = fabs((double)m.task_loss - ref.task_loss) / ref.task_loss;
        const double dg = max_abs_diff(m.logits, ref.logits, (size_t)N * V);
        const long pairs = (long)N * (L - 1);
        printf("  %s: %ld of %ld pairs halt; paper form task loss %.7f vs hard-gated dense %.7f (rel %.1e), "
               "max |Δlogit| %.2e, α %.4f, %ld pairs ran\n",
               names[v], halted, pairs, m.task_loss, ref.task_loss, dl, dg, m.active_frac, m.active_count);
        assert_true(halted > pairs / 5 && halted < pairs * 4 / 5);
        assert_true(dl < 1e-5 && dg < 1e-4);
        assert_int_equal(m.active_count, pairs - halted);
        assert_true(fabs(m.active_frac - (double)(pairs - halted) / pairs) < 1e-6);
        float paper_logits[48 * 13];
        memcpy(paper_logits, m.logits, sizeof paper_logits);
        m.sparse_form = SPARSE_GATELAB; /* kept pairs scaled by 1 − p: another model */
        model_forward(&m, tok, tg, NULL, B, T);
        const double dgl = max_abs_diff(m.logits, paper_logits, (size_t)N * V);
        printf("    gatelab's form differs: max |Δlogit| %.2e\n", dgl);
        assert_true(dgl > 1e-4); /* rounding is below 1e-6 */
        model_free(&m);
        model_free(&ref);
    }
    g_tsa_tweak = NULL;
}

static void routed_setup(gl_model *m, gl_dataset *ds, int B, gl_depth_routing dr) {
    gl_model_config c;
    config_defaults(&c);
    c.d_model = 32;
    c.n_layer = 4;
    c.n_head = 4;
    c.n_kv_head = 2;
    c.d_ff = 48;
    c.seq_len = 21;
    c.depth_routing = dr;
    gl_data_config dc;
    memset(&dc, 0, sizeof dc);
    dc.task = TASK_COPY;
    dc.seq_items = 10;
    dc.n_symbols = 16;
    dc.train_frac = 0.9f;
    dc.val_frac = 0.1f;
    char err[256];
    assert_int_equal(data_open(ds, &dc, c.seq_len, 1, err, sizeof err), 0);
    c.vocab_size = data_vocab_size(ds);
    assert_int_equal(model_init(m, &c, B, err, sizeof err), 0);
    model_init_weights(m, 3);
    for (size_t i = 0; i < m->n_params; i++) m->params[i] *= 10.0f; /* spread the confidences */
    for (int i = 0; i < m->n_tensors; i++)
        if (strstr(m->tensors[i].name, "norm"))
            for (size_t j = 0; j < m->tensors[i].size; j++) m->params[m->tensors[i].offset + j] = 1.0f;
}

static void ee_setup(gl_model *m, gl_dataset *ds, int B) { routed_setup(m, ds, B, DR_EARLY_EXIT); }

static void test_exit_tau_one_is_plain(void **s) {
    (void)s;
    gl_model m;
    gl_dataset ds;
    ee_setup(&m, &ds, 8);
    gl_eval_result a, b;
    char err[256];
    assert_int_equal(eval_split(&m, &ds, SPLIT_VAL, 16, &a, err, sizeof err), 0);
    m.exit_tau = 1.0f + 1e-6f; /* no confidence reaches it: every token runs every layer */
    assert_int_equal(eval_split(&m, &ds, SPLIT_VAL, 16, &b, err, sizeof err), 0);
    printf("  τ > 1: loss %.6f vs plain %.6f, α %.3f\n", b.loss, a.loss, b.active_frac);
    assert_true(fabs(a.loss - b.loss) < 1e-9);
    assert_true(b.active_frac == 1.0);
    model_free(&m);
    data_close(&ds);
}

/* The skipping early exit (an exited token's later blocks compute only its k
 * and v) against the bookkeeping reference (every block for every token, the
 * exited rows restored afterwards): the same exits, logits, per-token losses,
 * confidences and loss.  The packed rows go through the same operations in
 * the same order as the dense ones (infer.c); what is left is OpenBLAS, which
 * picks another kernel (small-matrix or edge) for another row count and so
 * can round a row's dot products differently in the last bit.  Measured:
 * ~3 ulp on the logits after 4 blocks; the bound is 16 ulp of the largest
 * value, and the exits and counts must match exactly. */
static void test_exit_skip_equals_bookkeeping(void **s) {
    (void)s;
    gl_model m;
    gl_dataset ds;
    const int B = 6;
    ee_setup(&m, &ds, B);
    const int T = m.cfg.seq_len, N = B * T, V = m.cfg.vocab_size, L = m.cfg.n_layer;
    int *tok = malloc((size_t)N * sizeof(int)), *tg = malloc((size_t)N * sizeof(int));
    tokens(tok, N, V);
    tokens(tg, N, V);
    for (int i = 0; i < N; i++) tg[i] = tg[(i + 5) % N];
    /* τ at the median confidence of block 0: about half the tokens exit there, more later */
    model_forward(&m, tok, NULL, NULL, B, T);
    float *c0 = malloc((size_t)N * sizeof(float));
    memcpy(c0, m.exit_conf, (size_t)N * sizeof(float));
    for (int i = 0; i < N; i++)
        for (int j = i + 1; j < N; j++)
            if (c0[j] < c0[i]) { float t = c0[i]; c0[i] = c0[j]; c0[j] = t; }
    const float tau = c0[N / 2];
    const size_t nl = (size_t)N * V, nc = (size_t)L * N;
    float *logits = malloc(nl * sizeof(float)), *tl = malloc((size_t)N * sizeof(float)), *conf = malloc(nc * sizeof(float));
    unsigned char *fr = malloc((size_t)N);
    m.exit_tau = tau;
    m.exit_reference = 1;
    float ref_loss = model_forward(&m, tok, tg, NULL, B, T);
    long ref_active = m.active_count;
    memcpy(logits, m.logits, nl * sizeof(float));
    memcpy(tl, m.tok_loss, (size_t)N * sizeof(float));
    memcpy(conf, m.exit_conf, nc * sizeof(float));
    memcpy(fr, m.frozen, (size_t)N);
    m.exit_reference = 0;
    float loss = model_forward(&m, tok, tg, NULL, B, T);
    double dl = max_abs_diff(logits, m.logits, nl), dt = max_abs_diff(tl, m.tok_loss, (size_t)N);
    double dc = max_abs_diff(conf, m.exit_conf, nc), big = 0;
    for (size_t i = 0; i < nl; i++) big = fmax(big, fabs(logits[i]));
    printf("  τ %.5f: α %.3f, %ld of %d pairs run (reference %ld); max |Δlogit| %.2e (max |logit| %.1f), "
           "|Δtok_loss| %.2e, |Δconf| %.2e, loss %.7f vs %.7f\n",
           tau, m.active_frac, m.active_count, N * (L - 1), ref_active, dl, big, dt, dc, loss, ref_loss);
    assert_true(m.active_frac > 0.2 && m.active_frac < 0.9); /* the test exercises skipping */
    assert_int_equal(m.active_count, ref_active);
    assert_memory_equal(fr, m.frozen, (size_t)N);
    const double ulp16 = 16.0 * FLT_EPSILON;
    assert_true(dl <= ulp16 * big && dt <= ulp16 * 8.0 && dc <= ulp16);
    assert_true(fabs(loss - ref_loss) <= ulp16 * fabs(ref_loss));
    free(tok); free(tg); free(c0); free(logits); free(tl); free(conf); free(fr);
    model_free(&m);
    data_close(&ds);
}

/* Early exit in the TSA paper's form (model.exit_form = paper): routed_setup's model with an exit norm per
 * block, each scaled apart from the final norm so that every exit head is its own; gpt2: on the gpt2
 * backbone (LayerNorm exit norms with biases, left at 0). */
static void ee_paper_setup_bb(gl_model *m, gl_dataset *ds, int B, int gpt2) {
    gl_model_config c;
    config_defaults(&c);
    c.d_model = 32;
    c.n_layer = 4;
    c.n_head = 4;
    c.n_kv_head = 2;
    c.d_ff = 48;
    c.seq_len = 21;
    c.depth_routing = DR_EARLY_EXIT;
    c.exit_form = XF_PAPER;
    c.exit_weighting = EE_WEIGHT_UNIFORM;
    if (gpt2) c.backbone = BB_GPT2, c.qk_norm = 0;
    gl_data_config dc;
    memset(&dc, 0, sizeof dc);
    dc.task = TASK_COPY;
    dc.seq_items = 10;
    dc.n_symbols = 16;
    dc.train_frac = 0.9f;
    dc.val_frac = 0.1f;
    char err[256];
    assert_int_equal(data_open(ds, &dc, c.seq_len, 1, err, sizeof err), 0);
    c.vocab_size = data_vocab_size(ds);
    assert_int_equal(model_init(m, &c, B, err, sizeof err), 0);
    model_init_weights(m, 3);
    for (size_t i = 0; i < m->n_params; i++) m->params[i] *= 10.0f; /* spread the confidences */
    for (int i = 0; i < m->n_tensors; i++) {
        const gl_tensor *t = &m->tensors[i];
        const float v = strstr(t->name, "exit_norm") ? 0.6f + 0.3f * (float)t->index : 1.0f;
        if (strstr(t->name, "norm") && !strstr(t->name, "bias"))
            for (size_t j = 0; j < t->size; j++) m->params[t->offset + j] = v;
    }
}
static void ee_paper_setup(gl_model *m, gl_dataset *ds, int B) { ee_paper_setup_bb(m, ds, B, 0); }

/* Mean masked cross-entropy of rows (N, V) in double: Σ mask·(logsumexp − logit[target]) / Σ mask. */
static double ce_double(const float *const *rows, const int *tg, int N, int V) {
    double tot = 0;
    for (int t = 0; t < N; t++) {
        const float *r = rows[t];
        double mx = r[0], se = 0;
        for (int v = 1; v < V; v++) mx = fmax(mx, r[v]);
        for (int v = 0; v < V; v++) se += exp((double)r[v] - mx);
        tot += mx + log(se) - r[tg[t]];
    }
    return tot / N;
}

/* The paper's early exit against a reference computed the slow way: one pass with every block and every exit
 * head for every token (τ = 0, the training forward), then per token its exit block — the first block
 * n >= 1 whose exit head's maximum softmax probability is above τ, else the last — and its prediction taken
 * at that exit.  Every block runs for every token in both passes with the same arithmetic, so the exits,
 * the logits and the states are equal exactly; the loss (summed in another order) to 1e-5. */
static void exit_paper_slow_reference(int gpt2) {
    gl_model m;
    gl_dataset ds;
    const int B = 6;
    ee_paper_setup_bb(&m, &ds, B, gpt2);
    const int T = m.cfg.seq_len, N = B * T, V = m.cfg.vocab_size, L = m.cfg.n_layer, d = m.cfg.d_model;
    int *tok = malloc((size_t)N * sizeof(int)), *tg = malloc((size_t)N * sizeof(int));
    tokens(tok, N, V);
    tokens(tg, N, V);
    for (int i = 0; i < N; i++) tg[i] = tg[(i + 5) % N];
    model_forward(&m, tok, tg, NULL, B, T); /* every block, every exit head */
    const size_t nl = (size_t)N * V;
    float *lg = malloc((size_t)L * nl * sizeof(float)), *conf = malloc((size_t)L * N * sizeof(float));
    float *h = malloc((size_t)L * N * d * sizeof(float));
    for (int n = 0; n + 1 < L; n++) memcpy(lg + n * nl, m.A[n].logits, nl * sizeof(float));
    memcpy(lg + (size_t)(L - 1) * nl, m.logits, nl * sizeof(float));
    memcpy(conf, m.exit_conf, (size_t)L * N * sizeof(float));
    for (int n = 1; n < L; n++) memcpy(h + (size_t)n * N * d, m.A[n].h_in, (size_t)N * d * sizeof(float));
    /* τ at the median confidence of blocks 1..L−2: some tokens exit at each, some run to the end */
    float *cs = malloc((size_t)(L - 2) * N * sizeof(float));
    memcpy(cs, conf + N, (size_t)(L - 2) * N * sizeof(float));
    const int nc = (L - 2) * N;
    for (int i = 0; i < nc; i++)
        for (int j = i + 1; j < nc; j++)
            if (cs[j] < cs[i]) { float t = cs[i]; cs[i] = cs[j]; cs[j] = t; }
    const float tau = cs[nc / 2];
    int *exit_at = malloc((size_t)N * sizeof(int)), count[GL_MAX_LAYERS] = {0}, block0_confident = 0;
    const float **pred = malloc((size_t)N * sizeof(float *));
    long post_stem = 0;
    for (int t = 0; t < N; t++) {
        int e = 1;
        while (e < L - 1 && !(conf[(size_t)e * N + t] > tau)) e++;
        exit_at[t] = e;
        count[e]++;
        post_stem += e;
        block0_confident += conf[t] > tau;
        pred[t] = lg + (size_t)e * nl + (size_t)t * V;
    }
    const double ref_loss = ce_double(pred, tg, N, V);
    const double ref_gl = (double)post_stem / ((double)(L - 1) * N), ref_paper = (1.0 + (double)post_stem / N) / L;

    m.exit_tau = tau;
    const float loss = model_forward(&m, tok, tg, NULL, B, T);
    int exits_equal = 1;
    for (int t = 0; t < N; t++) exits_equal &= (m.frozen[t] ? m.frozen[t] : L - 1) == exit_at[t];
    double dl = 0, dh = 0;
    for (int t = 0; t < N; t++) dl = fmax(dl, max_abs_diff(m.logits + (size_t)t * V, pred[t], (size_t)V));
    for (int n = 1; n < L; n++) dh = fmax(dh, max_abs_diff(m.A[n].h_in, h + (size_t)n * N * d, (size_t)N * d));
    printf("  τ %.5f: exits after blocks 1..%d: %d %d, to the end %d (%d tokens confident at block 0, none exits "
           "there); loss %.7f vs slow %.7f; α %.5f vs %.5f, α_paper %.5f vs %.5f; max |Δlogit| %.1e, |Δh| %.1e\n",
           tau, L - 2, count[1], count[2], count[L - 1], block0_confident, loss, ref_loss, m.active_frac, ref_gl,
           m.active_frac_paper, ref_paper, dl, dh);
    assert_true(count[1] > 0 && count[2] > 0 && count[L - 1] > 0 && block0_confident > 0);
    assert_true(exits_equal);
    assert_true(dl == 0.0 && dh == 0.0);
    assert_true(fabs(loss - ref_loss) <= 1e-5 * fabs(ref_loss));
    assert_true(fabs(m.active_frac - ref_gl) < 1e-6 && fabs(m.active_frac_paper - ref_paper) < 1e-6);
    assert_int_equal(m.active_count, (long)(L - 1) * N); /* every pair really ran */
    free(tok); free(tg); free(lg); free(conf); free(h); free(cs); free(exit_at); free(pred);
    model_free(&m);
    data_close(&ds);
}
static void test_exit_paper_slow_reference(void **s) { (void)s; exit_paper_slow_reference(0); }
static void test_exit_paper_slow_reference_gpt2(void **s) { (void)s; exit_paper_slow_reference(1); }

/* The paper's exit freezes a token's prediction, not its state: a token s that exits after block 1 keeps
 * being updated by blocks 2 and 3 (its row of the residual stream changes after its exit), and a later token
 * t of its window that runs to the end gets the output of the pass in which nobody exits (it attends to s's
 * updated keys and values) exactly.  Were s's state frozen at its exit (gatelab's form), s's row would not
 * move, and t would attend to s's block-1 state in blocks 2 and 3 and differ from the pass without exits. */
static void test_exit_paper_state_updated(void **s) {
    (void)s;
    gl_model m;
    gl_dataset ds;
    const int B = 6;
    ee_paper_setup(&m, &ds, B);
    const int T = m.cfg.seq_len, N = B * T, V = m.cfg.vocab_size, L = m.cfg.n_layer, d = m.cfg.d_model;
    int *tok = malloc((size_t)N * sizeof(int));
    tokens(tok, N, V);
    model_forward(&m, tok, NULL, NULL, B, T);
    float *dense = malloc((size_t)N * V * sizeof(float));
    memcpy(dense, m.logits, (size_t)N * V * sizeof(float));
    /* τ just below the highest block-1 confidence among the first half of the windows' positions */
    float tau = 0;
    for (int t = 0; t < N; t++)
        if (t % T < T / 2) tau = fmaxf(tau, m.exit_conf[(size_t)N + t]);
    m.exit_tau = tau * 0.999f;
    model_forward(&m, tok, NULL, NULL, B, T);
    int sx = -1, tx = -1;
    for (int t = 0; t < N && tx < 0; t++)
        if (m.frozen[t] == 1 && t % T < T / 2) {
            sx = t;
            for (int u = t + 1; u < (t / T + 1) * T && tx < 0; u++)
                if (!m.frozen[u]) tx = u;
        }
    assert_true(sx >= 0 && tx >= 0);
    const double moved = max_abs_diff(m.h_out + (size_t)sx * d, m.A[2].h_in + (size_t)sx * d, (size_t)d);
    const double dt = max_abs_diff(m.logits + (size_t)tx * V, dense + (size_t)tx * V, (size_t)V);
    printf("  token %d exits after block 1: its state moves by %.3g over blocks 2..%d; later token %d (runs to "
           "the end): max |Δlogit| vs the pass without exits %.1e\n",
           sx, moved, L - 1, tx, dt);
    assert_true(moved > 1e-3);
    assert_true(dt == 0.0);
    free(tok); free(dense);
    model_free(&m);
    data_close(&ds);
}

/* α in both conventions on cases checked by hand, L = 4.  Paper form: τ above every confidence (nobody
 * exits: each token runs the 3 post-stem blocks) gives α = 3/3 = 1 and α_paper = (1 + 3)/4 = 1; τ below
 * every confidence (everyone exits after block 1, the first exit allowed) α = 1/3 and α_paper = (1 + 1)/4
 * = 0.5.  gatelab's form at the same tiny τ exits everyone after block 0: α = 0/3 = 0, α_paper = 1/4. */
static void test_exit_alpha_conventions(void **s) {
    (void)s;
    gl_model m;
    gl_dataset ds;
    const int B = 2;
    ee_paper_setup(&m, &ds, B);
    const int T = m.cfg.seq_len, N = B * T;
    int *tok = malloc((size_t)N * sizeof(int));
    tokens(tok, N, m.cfg.vocab_size);
    const struct { int form; float tau; double gl, paper; } cases[] = {
        {XF_PAPER, 1.5f, 1.0, 1.0}, {XF_PAPER, 1e-9f, 1.0 / 3.0, 0.5}, {XF_GATELAB, 1e-9f, 0.0, 0.25}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        m.cfg.exit_form = (gl_exit_form)cases[i].form;
        m.exit_tau = cases[i].tau;
        model_forward(&m, tok, NULL, NULL, B, T);
        printf("  %s form, τ %g: α %.6f (want %.6f), α_paper %.6f (want %.6f)\n",
               config_exit_form_name(m.cfg.exit_form), (double)cases[i].tau, m.active_frac, cases[i].gl,
               m.active_frac_paper, cases[i].paper);
        assert_true(fabs(m.active_frac - cases[i].gl) < 1e-6 && fabs(m.active_frac_paper - cases[i].paper) < 1e-6);
    }
    m.exit_tau = 0.0f; /* training mode: no exit, no α_paper */
    model_forward(&m, tok, NULL, NULL, B, T);
    assert_true(isnan(m.active_frac_paper));
    free(tok);
    model_free(&m);
    data_close(&ds);
}

/* The TSA paper's τ protocol (eval_match_paper) on the paper-form model: 13 thresholds in the official
 * order, each on 30 fresh random batches (another draw per threshold), α_paper non-increasing as τ falls
 * (up to the draw), the chosen threshold the nearest to the target (the first of a tie), m->exit_tau back
 * at 0. */
static void test_paper_tau_protocol(void **s) {
    (void)s;
    gl_model m;
    gl_dataset ds;
    ee_paper_setup(&m, &ds, 8);
    char err[256];
    static gl_eval_result rows[EVAL_PAPER_N_TAUS];
    const double targets[] = {0.9, 0.75, 0.6, 1.0}; /* 1.0: a tie of the highest thresholds, the first wins */
    for (size_t k = 0; k < sizeof targets / sizeof targets[0]; k++) {
        int best = -1;
        int rc = eval_match_paper(&m, &ds, SPLIT_VAL, 2, targets[k], 77, rows, &best, err, sizeof err);
        if (rc) printf("  %s\n", err);
        assert_int_equal(rc, 0);
        assert_true(m.exit_tau == 0.0f && best >= 0);
        double gap = INFINITY;
        int want = -1;
        for (int i = 0; i < EVAL_PAPER_N_TAUS; i++) {
            if (k == 0) printf("  τ %.2f: α_paper %.4f, α %.4f, loss %.4f on %ld windows\n", eval_paper_taus[i],
                               rows[i].active_frac_paper, rows[i].active_frac, rows[i].loss, rows[i].windows);
            assert_int_equal(rows[i].windows, EVAL_PAPER_BATCHES * 2);
            if (fabs(rows[i].active_frac_paper - targets[k]) < gap) gap = fabs(rows[i].active_frac_paper - targets[k]), want = i;
        }
        printf("  target %.2f: τ %.2f (α_paper %.4f)\n", targets[k], eval_paper_taus[best], rows[best].active_frac_paper);
        assert_int_equal(best, want);
        if (targets[k] == 1.0) assert_int_equal(best, 0);
    }
    /* the sweep reaches both ends of its range and the draws differ between thresholds */
    assert_true(rows[0].active_frac_paper > rows[EVAL_PAPER_N_TAUS - 1].active_frac_paper + 0.1);
    assert_true(eval_paper_taus[0] == 0.99 && eval_paper_taus[EVAL_PAPER_N_TAUS - 1] == 0.30);
    gl_eval_result a, b;
    m.exit_tau = 0.5f;
    assert_int_equal(eval_random(&m, &ds, SPLIT_VAL, 60, 5, &a, err, sizeof err), 0);
    assert_int_equal(eval_random(&m, &ds, SPLIT_VAL, 60, 6, &b, err, sizeof err), 0);
    assert_true(a.loss != b.loss);
    model_free(&m);
    data_close(&ds);
}

static void test_tau_search(void **s) {
    (void)s;
    gl_model m;
    gl_dataset ds;
    ee_setup(&m, &ds, 16);
    char err[256];
    const double targets[] = {0.8, 0.6, 0.4};
    for (size_t i = 0; i < 3; i++) {
        double tau = -1;
        gl_eval_result r;
        int rc = eval_match_alpha(&m, &ds, SPLIT_VAL, 64, targets[i], 0.005, &tau, &r, err, sizeof err);
        printf("  target α %.3f: τ %.5f gives α %.4f (loss %.4f)\n", targets[i], tau, r.active_frac, r.loss);
        assert_int_equal(rc, 0);
        assert_true(fabs(r.active_frac - targets[i]) <= 0.005);
    }
    model_free(&m);
    data_close(&ds);
}

/* Post-hoc early exit of a dense model at τ > 1: nobody exits, and the
 * forward is the dense one (the same blocks in the same order; the exit
 * heads only read the residual), so the loss is exactly the dense loss. */
static void test_posthoc_never_exits(void **s) {
    (void)s;
    gl_model m;
    gl_dataset ds;
    routed_setup(&m, &ds, 8, DR_NONE);
    gl_eval_result a, b;
    char err[256];
    assert_int_equal(eval_split(&m, &ds, SPLIT_VAL, 16, &a, err, sizeof err), 0);
    assert_int_equal(model_posthoc_init(&m, err, sizeof err), 0);
    m.posthoc_exit = 1;
    m.exit_tau = 1.5f;
    assert_int_equal(eval_split(&m, &ds, SPLIT_VAL, 16, &b, err, sizeof err), 0);
    printf("  post-hoc τ 1.5: loss %.9f vs dense %.9f, α %.3f, rows run %.3f\n", b.loss, a.loss, b.active_frac,
           b.run_frac);
    assert_true(a.loss == b.loss);
    assert_true(b.active_frac == 1.0 && b.run_frac == 1.0);
    model_free(&m);
    data_close(&ds);
}

/* Post-hoc early exit at τ = 0: every token exits after block 0 (any
 * confidence is >= 0), so the loss is block 0's logit lens: its output
 * through the final norm and head, computed here in double from the dense
 * forward's residual A[1].h_in.  Tolerance 1e-5 relative: the model's float
 * sgemm and softmax against a double reference over 32-wide dot products and
 * a 16-way log-sum-exp. */
static void test_posthoc_tau0_is_block0_lens(void **s) {
    (void)s;
    gl_model m;
    gl_dataset ds;
    const int B = 4;
    routed_setup(&m, &ds, B, DR_NONE);
    const gl_model_config *c = &m.cfg;
    const int T = c->seq_len, N = B * T, d = c->d_model, V = c->vocab_size;
    int *tok = malloc((size_t)N * sizeof(int)), *tg = malloc((size_t)N * sizeof(int));
    float *mask = malloc((size_t)N * sizeof(float));
    assert_int_equal(data_eval_batch(&ds, SPLIT_VAL, 0, B, tok, tg, mask), B);
    model_forward(&m, tok, tg, mask, B, T);
    double lens = 0, w = 0;
    for (int t = 0; t < N; t++) {
        if (mask[t] == 0.0f || tg[t] < 0) continue;
        const float *h = m.A[1].h_in + (size_t)t * d;
        double ss = 0, mx = -INFINITY, z = 0, lt = 0;
        for (int i = 0; i < d; i++) ss += (double)h[i] * h[i];
        const double rstd = 1.0 / sqrt(ss / d + c->norm_eps);
        double *lg = malloc((size_t)V * sizeof(double));
        for (int v = 0; v < V; v++) {
            double a = 0;
            for (int i = 0; i < d; i++) a += h[i] * rstd * m.P.final_norm[i] * m.P.head[(size_t)v * d + i];
            lg[v] = a;
            mx = fmax(mx, a);
        }
        for (int v = 0; v < V; v++) z += exp(lg[v] - mx);
        lt = mx + log(z) - lg[tg[t]];
        free(lg);
        lens += mask[t] * lt;
        w += mask[t];
    }
    lens /= w;
    char err[256];
    assert_int_equal(model_posthoc_init(&m, err, sizeof err), 0);
    m.posthoc_exit = 1;
    m.exit_tau = 0.0f;
    const float got = model_forward(&m, tok, tg, mask, B, T);
    printf("  post-hoc τ 0: loss %.7f, block-0 logit lens (double) %.7f, |Δ| %.2e; α %.3f, %ld pairs run\n", got,
           lens, fabs(got - lens), m.active_frac, m.active_count);
    assert_true(fabs(got - lens) <= 1e-5 * fabs(lens));
    assert_true(m.active_frac == 0.0f && m.active_count == 0);
    for (int t = 0; t < N; t++) assert_int_equal(m.frozen[t], 1);
    free(tok); free(tg); free(mask);
    model_free(&m);
    data_close(&ds);
}

/* Post-hoc exit at a τ where some tokens exit: the skipping path equals the
 * bookkeeping reference (exits exactly, loss within 16 ulp, as for early exit). */
static void test_posthoc_skip_equals_bookkeeping(void **s) {
    (void)s;
    gl_model m;
    gl_dataset ds;
    const int B = 6;
    routed_setup(&m, &ds, B, DR_NONE);
    const int T = m.cfg.seq_len, N = B * T;
    int *tok = malloc((size_t)N * sizeof(int)), *tg = malloc((size_t)N * sizeof(int));
    float *mask = malloc((size_t)N * sizeof(float));
    assert_int_equal(data_eval_batch(&ds, SPLIT_VAL, 0, B, tok, tg, mask), B);
    char err[256];
    assert_int_equal(model_posthoc_init(&m, err, sizeof err), 0);
    m.posthoc_exit = 1;
    m.exit_tau = 2.0f;
    model_forward(&m, tok, tg, mask, B, T);
    float *c0 = malloc((size_t)N * sizeof(float));
    memcpy(c0, m.exit_conf, (size_t)N * sizeof(float));
    for (int i = 0; i < N; i++)
        for (int j = i + 1; j < N; j++)
            if (c0[j] < c0[i]) { float t = c0[i]; c0[i] = c0[j]; c0[j] = t; }
    m.exit_tau = c0[N / 2];
    m.exit_reference = 1;
    const float ref = model_forward(&m, tok, tg, mask, B, T);
    const long ref_active = m.active_count;
    unsigned char *fr = malloc((size_t)N);
    memcpy(fr, m.frozen, (size_t)N);
    m.exit_reference = 0;
    const float got = model_forward(&m, tok, tg, mask, B, T);
    printf("  post-hoc τ %.5f: α %.3f, %ld pairs run (reference %ld), loss %.7f vs %.7f\n", m.exit_tau,
           m.active_frac, m.active_count, ref_active, got, ref);
    assert_true(m.active_frac > 0.2 && m.active_frac < 0.9);
    assert_int_equal(m.active_count, ref_active);
    assert_memory_equal(fr, m.frozen, (size_t)N);
    assert_true(fabs(got - ref) <= 16.0 * FLT_EPSILON * fabs(ref));
    free(tok); free(tg); free(mask); free(c0); free(fr);
    model_free(&m);
    data_close(&ds);
}

/* A routed or cross-layer model is refused post-hoc exit with a reason. */
static void test_posthoc_refuses_routed(void **s) {
    (void)s;
    gl_model m;
    gl_dataset ds;
    routed_setup(&m, &ds, 2, DR_EARLY_EXIT);
    char err[256] = "";
    assert_int_equal(model_posthoc_init(&m, err, sizeof err), -1);
    printf("  early-exit model: %s\n", err);
    assert_non_null(strstr(err, "early_exit"));
    model_free(&m);
    data_close(&ds);
}

/* The headline's hard evaluation: eval_split_hard is the sparse pass (the
 * same loss as m->sparse = 1 by hand, bit for bit: the same path), its α
 * (from p <= 0.5) equals the share of rows really computed (run_frac) to the
 * float rounding of the per-batch α (1e-6), and p_mid_share is the share of
 * (token, router) p in (0.3, 0.7) counted here from one forward. */
static void test_hard_eval(void **s) {
    (void)s;
    gl_model m;
    gl_dataset ds;
    routed_setup(&m, &ds, 8, DR_TSA);
    for (int r = 0; r + 1 < m.cfg.n_layer; r++) m.P.router[r].fc2_b[0] = 0.3f * (r - 1); /* p around 0.5 */
    char err[256];
    gl_eval_result soft, hard, byhand;
    assert_int_equal(eval_split(&m, &ds, SPLIT_VAL, 8, &soft, err, sizeof err), 0);
    assert_int_equal(eval_split_hard(&m, &ds, SPLIT_VAL, 8, &hard, err, sizeof err), 0);
    assert_int_equal(m.sparse, 0);
    m.sparse = 1;
    assert_int_equal(eval_split(&m, &ds, SPLIT_VAL, 8, &byhand, err, sizeof err), 0);
    m.sparse = 0;
    /* p_mid_share by hand: the 8 windows are one batch of 8 */
    const int T = m.cfg.seq_len, N = 8 * T, L = m.cfg.n_layer;
    int *tok = malloc((size_t)N * sizeof(int)), *tg = malloc((size_t)N * sizeof(int));
    float *mask = malloc((size_t)N * sizeof(float));
    assert_int_equal(data_eval_batch(&ds, SPLIT_VAL, 0, 8, tok, tg, mask), 8);
    model_forward(&m, tok, tg, mask, 8, T);
    long mid = 0;
    for (int n = 1; n < L; n++)
        for (int t = 0; t < N; t++) mid += m.A[n].p[t] > 0.3f && m.A[n].p[t] < 0.7f;
    const double share = (double)mid / ((double)(L - 1) * N);
    printf("  TSA: soft loss %.6f α %.4f | hard loss %.6f α %.6f, rows run %.6f | p in (0.3, 0.7): %.4f (by hand %.4f)\n",
           soft.loss, soft.active_frac, hard.loss, hard.active_frac, hard.run_frac, soft.p_mid_share, share);
    assert_true(hard.loss == byhand.loss && hard.active_frac == byhand.active_frac);
    assert_true(hard.active_frac > 0.05 && hard.active_frac < 0.95); /* the test exercises skipping */
    assert_true(fabs(hard.active_frac - hard.run_frac) < 1e-6);
    assert_true(isnan(soft.run_frac));
    assert_true(soft.p_mid_share == share && share > 0);
    free(tok); free(tg); free(mask);
    model_free(&m);
    data_close(&ds);
}

/* eval_split's loss_se is eval_cluster_se over its batches: against the
 * textbook form from each batch's own forward (x_b = task_loss, w_b =
 * mask_sum), SE² = G/(G−1)·Σ w_b²(x_b − x̄)²/(Σ w_b)², summed here in another
 * order (squares of each batch's weighted residual, not two passes of
 * y − R·w), so the two agree to rounding, not bit for bit: both are sums of
 * G = 6 double terms of size ~1e-2 whose rounding is ~1e-17, so 1e-12
 * relative leaves room and would still catch a wrong factor or weight.  The
 * loss itself is the same sum in the same order: exact. */
static void check_eval_loss_se(gl_model *m, const gl_dataset *ds, int *tok, int *tg, float *mask) {
    assert_int_equal(m->max_B, 3);
    char err[256] = "";
    gl_eval_result r;
    assert_int_equal(eval_split(m, ds, SPLIT_VAL, 17, &r, err, sizeof err), 0); /* 5 full batches and 2 windows */
    double x[6], w[6], sum = 0, W = 0;
    for (int b = 0; b < 6; b++) {
        const int got = b < 5 ? 3 : 2;
        assert_int_equal(data_eval_batch(ds, SPLIT_VAL, 3L * b, got, tok, tg, mask), got);
        model_forward(m, tok, tg, mask, got, m->T);
        x[b] = m->task_loss, w[b] = m->mask_sum;
        sum += x[b] * w[b], W += w[b];
    }
    const double xbar = sum / W;
    double ss = 0;
    for (int b = 0; b < 6; b++) ss += w[b] * w[b] * (x[b] - xbar) * (x[b] - xbar);
    const double want = sqrt(6.0 / 5.0 * ss) / W, rel = fabs(r.loss_se - want) / want;
    printf("  loss %.9f, loss_se %.6e vs textbook %.6e: relative diff %.2e (tol 1e-12)\n", r.loss, r.loss_se, want, rel);
    assert_true(r.loss == xbar);
    assert_true(want > 0 && rel < 1e-12);
    assert_int_equal(eval_split(m, ds, SPLIT_VAL, 3, &r, err, sizeof err), 0); /* one batch: no spread to see */
    assert_true(r.loss_se == 0.0);
}

/* eval_each_batch, the one evaluation loop: batches of max_B from window
 * first with their offsets, before → forward → after in that order (after sees
 * the loss of a by-hand forward of the same windows, bit for bit: the same
 * call), a callback's failure ends the pass, and the missing-window rule:
 * strict names the missing window, otherwise the pass stops at the split's end;
 * then eval_split's loss_se (check_eval_loss_se). */
typedef struct {
    gl_model *m;
    const gl_dataset *ds;
    long first, off[8];
    int got[8], n, befores, fail_at;
    float loss[8];
} each_log;

static int each_before(void *ctx, long off, int got, char *err, size_t errlen) {
    each_log *l = ctx;
    assert_int_equal(l->befores, l->n); /* one before per batch, ahead of its after */
    l->befores++;
    return 0;
}

static int each_after(void *ctx, long off, int got, char *err, size_t errlen) {
    each_log *l = ctx;
    assert_true(l->n < 8);
    l->off[l->n] = off, l->got[l->n] = got, l->loss[l->n] = l->m->task_loss;
    if (++l->n == l->fail_at) {
        snprintf(err, errlen, "stop here");
        return -1;
    }
    return 0;
}

static void test_each_batch(void **s) {
    (void)s;
    gl_model m;
    gl_dataset ds;
    routed_setup(&m, &ds, 3, DR_NONE);
    const int T = m.cfg.seq_len, N = 3 * T;
    int *tok = malloc((size_t)N * sizeof(int)), *tg = malloc((size_t)N * sizeof(int));
    int *tok2 = malloc((size_t)N * sizeof(int)), *tg2 = malloc((size_t)N * sizeof(int));
    float *mask = malloc((size_t)N * sizeof(float)), *mask2 = malloc((size_t)N * sizeof(float));
    const eval_buffers buf = {tok, tg, mask};
    char err[256] = "";
    each_log l = {.m = &m, .ds = &ds, .first = 2, .fail_at = -1};
    assert_int_equal(eval_each_batch(&m, &ds, SPLIT_VAL, 2, 7, 1, &buf, each_before, each_after, &l, err, sizeof err), 0);
    assert_int_equal(l.n, 3);
    assert_int_equal(l.befores, 3);
    const long offs[] = {0, 3, 6};
    const int gots[] = {3, 3, 1};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(l.off[i], offs[i]);
        assert_int_equal(l.got[i], gots[i]);
        assert_int_equal(data_eval_batch(&ds, SPLIT_VAL, 2 + offs[i], gots[i], tok2, tg2, mask2), gots[i]);
        model_forward(&m, tok2, tg2, mask2, gots[i], T);
        assert_true(m.task_loss == l.loss[i]);
    }
    each_log f = {.m = &m, .ds = &ds, .fail_at = 2};
    assert_int_equal(eval_each_batch(&m, &ds, SPLIT_VAL, 0, 9, 0, &buf, NULL, each_after, &f, err, sizeof err), -1);
    assert_int_equal(f.n, 2);
    assert_string_equal(err, "stop here");
    const long avail = data_eval_windows(&ds, SPLIT_VAL);
    each_log q = {.m = &m, .ds = &ds, .fail_at = -1};
    assert_int_equal(eval_each_batch(&m, &ds, SPLIT_VAL, avail - 2, 5, 0, &buf, NULL, each_after, &q, err, sizeof err), 0);
    assert_int_equal(q.n, 1); /* the last 2 windows, then quietly nothing */
    assert_int_equal(q.got[0], 2);
    each_log st = {.m = &m, .ds = &ds, .fail_at = -1};
    assert_int_equal(eval_each_batch(&m, &ds, SPLIT_VAL, avail - 2, 5, 1, &buf, NULL, each_after, &st, err, sizeof err), -1);
    assert_int_equal(st.n, 0);
    char want[128];
    snprintf(want, sizeof want, "the val split has no window %ld (it has %ld)", avail, avail);
    printf("  %d batches at offsets 0, 3, 6; strict past the end: %s\n", l.n, err);
    assert_string_equal(err, want);
    check_eval_loss_se(&m, &ds, tok2, tg2, mask2);
    free(tok); free(tg); free(mask); free(tok2); free(tg2); free(mask2);
    model_free(&m);
    data_close(&ds);
}

static void hard_model(gl_model *m, int B, gl_depth_routing dr, float cap, int every) {
    gl_model_config c;
    config_defaults(&c);
    c.vocab_size = 13;
    c.d_model = 32;
    c.n_layer = 5;
    c.n_head = 4;
    c.n_kv_head = 2;
    c.d_ff = 48;
    c.seq_len = 16;
    c.depth_routing = dr;
    c.mod_capacity = cap;
    c.mod_every = every;
    c.random_alpha = cap;
    c.value_residual = VR_SATFORMER;
    char err[256];
    assert_int_equal(model_init(m, &c, B, err, sizeof err), 0);
    model_init_weights(m, 5);
    for (int i = 0; i < m->n_tensors; i++) {
        const gl_tensor *t = &m->tensors[i];
        float *p = m->params + t->offset;
        if (t->ndim == 2)
            for (size_t j = 0; j < t->size; j++) p[j] *= 5.0f;
    }
}

static void test_mod_capacity_and_sparse(void **s) {
    (void)s;
    const int B = 3, T = 16, N = B * T, V = 13;
    int tok[48];
    tokens(tok, N, V);
    for (int every = 1; every <= 2; every++) {
        gl_model m;
        hard_model(&m, B, DR_MOD, 0.25f, every);
        const int L = m.cfg.n_layer, k = config_mod_k(&m.cfg, T);
        model_forward(&m, tok, NULL, NULL, B, T);
        int routed = 0, bad = 0;
        for (int n = 1; n < L; n++) {
            routed += config_block_routed(&m.cfg, n);
            for (int b = 0; b < B; b++) {
                int kept = 0;
                for (int i = 0; i < T; i++) kept += m.A[n].keep[b * T + i] > 0.5f;
                bad |= kept != (config_block_routed(&m.cfg, n) ? k : T);
            }
        }
        const double want = ((double)routed * k + (double)(L - 1 - routed) * T) / ((double)(L - 1) * T);
        float soft[48 * 13];
        memcpy(soft, m.logits, sizeof soft);
        const float a_soft = m.active_frac;
        m.sparse = 1;
        model_forward(&m, tok, NULL, NULL, B, T);
        double d = max_abs_diff(soft, m.logits, (size_t)N * V);
        printf("  mod every %d: k %d of %d per window in %d of %d routed blocks, α %.4f (expected %.4f), sparse α %.4f, "
               "%ld pairs run, max |Δlogit| sparse vs masked %.2e\n",
               every, k, T, routed, L - 1, a_soft, want, m.active_frac, m.active_count, d);
        assert_false(bad);
        assert_true(routed == (every == 1 ? L - 1 : (L - 1 + 1) / 2));
        assert_true(fabs(a_soft - want) < 1e-6 && m.active_frac == a_soft);
        assert_int_equal(m.active_count, (long)routed * k * B + (long)(L - 1 - routed) * N);
        assert_true(d < 1e-4);
        model_free(&m);
    }
}

static void test_random_draws(void **s) {
    (void)s;
    const int B = 2, T = 16, N = B * T, V = 13;
    int tok[32], swapped[32];
    tokens(tok, N, V);
    memcpy(swapped, tok + T, T * sizeof(int)); /* window 1 first */
    memcpy(swapped + T, tok, T * sizeof(int));
    gl_model m;
    hard_model(&m, B, DR_RANDOM, 0.5f, 1);
    const int L = m.cfg.n_layer;
    model_forward(&m, tok, NULL, NULL, B, T);
    float keep[5][32], soft[32 * 13];
    for (int n = 0; n < L; n++) memcpy(keep[n], m.A[n].keep, sizeof keep[n]);
    memcpy(soft, m.logits, sizeof soft);
    const float a_soft = m.active_frac;
    /* the evaluation draw follows the window, not its batch slot */
    model_forward(&m, swapped, NULL, NULL, B, T);
    int moved = 0;
    for (int n = 0; n < L; n++)
        moved |= memcmp(keep[n], m.A[n].keep + T, T * sizeof(float)) || memcmp(keep[n] + T, m.A[n].keep, T * sizeof(float));
    /* real skipping equals the soft model (whose skipped updates are multiplied by 0) */
    m.sparse = 1;
    model_forward(&m, tok, NULL, NULL, B, T);
    double d = max_abs_diff(soft, m.logits, (size_t)N * V);
    m.sparse = 0;
    /* training draws: one per step */
    m.route_draw = routing_train_key(1, 0);
    model_forward(&m, tok, NULL, NULL, B, T);
    float k0[32];
    memcpy(k0, m.A[1].keep, sizeof k0);
    m.route_draw = routing_train_key(1, 1);
    model_forward(&m, tok, NULL, NULL, B, T);
    const int differ = memcmp(k0, m.A[1].keep, sizeof k0) != 0;
    m.route_draw = routing_train_key(1, 0);
    model_forward(&m, tok, NULL, NULL, B, T);
    const int repeat = memcmp(k0, m.A[1].keep, sizeof k0) == 0;
    printf("  random α %.4f (target 0.5, %d pairs); draw follows the window: %s; sparse vs soft max |Δlogit| %.2e; "
           "steps 0 and 1 draw differently: %s, step 0 again the same: %s\n",
           a_soft, (L - 1) * N, moved ? "no" : "yes", d, differ ? "yes" : "no", repeat ? "yes" : "no");
    /* 128 Bernoulli(0.5) pairs: sd 0.044, so 4.5 sd = 0.2 */
    assert_true(fabs(a_soft - 0.5) < 0.2);
    assert_false(moved);
    assert_true(d < 1e-4 && differ && repeat);
    model_free(&m);
}

static void test_equal_tlops_layers(void **s) {
    (void)s;
    const struct { int L; double a; int want; } cases[] = {{6, 0.5, 4}, {12, 0.125, 2}, {4, 1.0, 4}, {8, 0.0, 1},
                                                           {6, 0.726, 5}, {3, 0.25, 2}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int got = config_equal_tlops_layers(cases[i].L, cases[i].a);
        printf("  L %d at α %.3f → equal-TLOps dense n_layer %d (expected %d)\n", cases[i].L, cases[i].a, got,
               cases[i].want);
        assert_int_equal(got, cases[i].want);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tlops_arithmetic),   cmocka_unit_test(test_active_fraction),
        cmocka_unit_test(test_sparse_equals_hard_soft), cmocka_unit_test(test_sparse_all_kept),
        cmocka_unit_test(test_exit_tau_one_is_plain), cmocka_unit_test(test_exit_skip_equals_bookkeeping),
        cmocka_unit_test(test_exit_paper_slow_reference), cmocka_unit_test(test_exit_paper_slow_reference_gpt2),
        cmocka_unit_test(test_exit_paper_state_updated),
        cmocka_unit_test(test_exit_alpha_conventions), cmocka_unit_test(test_paper_tau_protocol),
        cmocka_unit_test(test_tau_search), cmocka_unit_test(test_posthoc_never_exits),
        cmocka_unit_test(test_posthoc_tau0_is_block0_lens), cmocka_unit_test(test_posthoc_skip_equals_bookkeeping),
        cmocka_unit_test(test_posthoc_refuses_routed), cmocka_unit_test(test_hard_eval), cmocka_unit_test(test_each_batch),
        cmocka_unit_test(test_mod_capacity_and_sparse), cmocka_unit_test(test_random_draws),
        cmocka_unit_test(test_equal_tlops_layers), cmocka_unit_test(test_sparse_paper_forms),
        cmocka_unit_test(test_sparse_paper_form_is_hard_gate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
