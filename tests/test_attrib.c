/*
 * test_attrib.c — the gradients attribution patching reads (model.h
 * cap_dgate, cap_dp) against central finite differences of the loss taken
 * through the per-token overrides (GATE_TOKEN for α, ROUTE_TOKEN for p), so
 * the estimate a(t, site) = (0 − x)·∂L/∂x is the directional derivative of
 * the loss along "move x towards 0"; Spearman's ρ on known cases; and the
 * two overrides are exact no-ops when they hold the model's own values.
 *
 * Model: the whole-model check of test_grad.c (SATFormer + TSA, weights
 * scaled up so gates are open and gradients O(1e-2)), tsa_lambda = 0 so the
 * loss is the task loss the attribution estimates.  Tolerance as there: a
 * central difference with h = 2e-3 on a float32 loss of ≈ 2.6 carries
 * ≈ 1e-4 of rounding noise, so the error is relative to max(max|g|, 2e-2)
 * and must be below 1e-2; α entries are taken only where α > 0.05 (25 h
 * from the ReLU's kink).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "analysis/measure/attrib.h"
#include "model/model.h"
#include "model/rng.h"

typedef struct {
    gl_model m;
    int *tok, *tg;
    float *mask;
    int B, T;
} mctx;

static gl_rng rng;

static void build(mctx *c) {
    gl_model_config cfg;
    config_defaults(&cfg);
    cfg.vocab_size = 11;
    cfg.d_model = 16;
    cfg.n_layer = 3;
    cfg.n_head = 4;
    cfg.n_kv_head = 2;
    cfg.d_ff = 24;
    cfg.seq_len = 6;
    cfg.value_residual = VR_SATFORMER;
    cfg.depth_routing = DR_TSA;
    cfg.tsa_lambda = 0.0f;
    cfg.router_init_bias = 0.0f;
    c->B = 2;
    c->T = cfg.seq_len;
    char err[256];
    assert_int_equal(model_init(&c->m, &cfg, c->B, err, sizeof err), 0);
    model_init_weights(&c->m, 7);
    for (int i = 0; i < c->m.n_tensors; i++) {
        const gl_tensor *t = &c->m.tensors[i];
        float *p = c->m.params + t->offset;
        for (size_t j = 0; j < t->size; j++) {
            if (t->ndim == 2) p[j] *= strstr(t->name, "alpha") ? 20.0f : 8.0f;
            else p[j] += 0.2f * rng_normal(&rng);
        }
    }
    const int n = c->B * c->T;
    c->tok = malloc(n * sizeof(int));
    c->tg = malloc(n * sizeof(int));
    c->mask = malloc(n * sizeof(float));
    for (int i = 0; i < n; i++) {
        c->tok[i] = (int)rng_below(&rng, cfg.vocab_size);
        c->tg[i] = (int)rng_below(&rng, cfg.vocab_size);
        c->mask[i] = i % 5 == 3 ? 0.0f : 1.0f;
    }
}

static void unbuild(mctx *c) {
    free(c->tok), free(c->tg), free(c->mask);
    model_free(&c->m);
}

static double loss(mctx *c) { return model_forward(&c->m, c->tok, c->tg, c->mask, c->B, c->T); }

static void test_gate_gradients(void **state) {
    (void)state;
    mctx c;
    build(&c);
    gl_model *m = &c.m;
    const int L = m->cfg.n_layer, Hkv = m->cfg.n_kv_head, N = c.B * c.T;
    const size_t cap = (size_t)m->max_B * m->T;
    float *cdg = calloc((size_t)L * N * Hkv, sizeof(float)), *cdp = calloc((size_t)L * N, sizeof(float));
    const double L0 = loss(&c);
    m->cap_dgate = cdg;
    m->cap_dp = cdp;
    model_zero_grad(m);
    model_backward(m);
    m->cap_dgate = m->cap_dp = NULL;
    /* the forward's own gates, for the override tables */
    float *alpha = malloc((size_t)L * N * Hkv * sizeof(float)), *p = malloc((size_t)L * N * sizeof(float));
    for (int n = 0; n < L; n++) {
        memcpy(alpha + (size_t)n * N * Hkv, m->A[n].gate, (size_t)N * Hkv * sizeof(float));
        if (n >= 1) memcpy(p + (size_t)n * N, m->A[n].p, (size_t)N * sizeof(float));
    }
    float *gtab = malloc((size_t)L * cap * Hkv * sizeof(float)), *rtab = malloc((size_t)(L - 1) * cap * sizeof(float));
    const float h = 2e-3f;

    /* overrides holding the model's own values change nothing, bit for bit */
    for (int n = 0; n < L; n++)
        for (int t = 0; t < N; t++)
            for (int j = 0; j < Hkv; j++) gtab[((size_t)n * cap + t) * Hkv + j] = alpha[((size_t)n * N + t) * Hkv + j];
    model_set_gate_token_table(m, gtab);
    model_set_gate_override(m, 1, 0, GATE_TOKEN, 0.0f);
    const double Lg = loss(&c);
    model_clear_overrides(m);
    for (size_t i = 0; i < (size_t)(L - 1) * cap; i++) rtab[i] = NAN;
    for (int t = 0; t < N; t++) rtab[1 * cap + t] = p[(size_t)2 * N + t];
    model_set_route_token_table(m, rtab);
    const double Lr = loss(&c);
    model_clear_overrides(m);
    printf("  own values through GATE_TOKEN: loss %a vs %a; through ROUTE_TOKEN: %a\n", Lg, L0, Lr);
    assert_true(Lg == L0 && Lr == L0);

    /* α: ∂L/∂α(n, t, j) by central differences through GATE_TOKEN */
    double worst = 0, gmax = 2e-2, num[64] = {0}, ana[64] = {0}, est[64] = {0}, fdest[64] = {0};
    int k = 0;
    for (int n = 1; n < L && k < 64; n++)
        for (int t = 0; t < N && k < 64; t++)
            for (int j = 0; j < Hkv && k < 64; j++) {
                const float a = alpha[((size_t)n * N + t) * Hkv + j];
                if (a <= 0.05f) continue;
                for (int tt = 0; tt < N; tt++) gtab[((size_t)n * cap + tt) * Hkv + j] = alpha[((size_t)n * N + tt) * Hkv + j];
                model_set_gate_token_table(m, gtab);
                model_set_gate_override(m, n, j, GATE_TOKEN, 0.0f);
                gtab[((size_t)n * cap + t) * Hkv + j] = a + h;
                const double fp = loss(&c);
                gtab[((size_t)n * cap + t) * Hkv + j] = a - h;
                const double fm = loss(&c);
                model_clear_overrides(m);
                num[k] = (fp - fm) / (2.0 * h);
                ana[k] = cdg[((size_t)n * N + t) * Hkv + j];
                est[k] = -a * ana[k];   /* the attribution estimate of α → 0 */
                fdest[k] = -a * num[k]; /* the same directional derivative, by differences */
                gmax = fmax(gmax, fabs(ana[k]));
                k++;
            }
    double emax = 2e-2 * 0.05, worst_e = 0; /* the estimate's scale: |g| floor times the smallest α taken */
    for (int i = 0; i < k; i++) emax = fmax(emax, fabs(est[i]));
    for (int i = 0; i < k; i++) {
        worst = fmax(worst, fabs(num[i] - ana[i]) / gmax);
        worst_e = fmax(worst_e, fabs(est[i] - fdest[i]) / emax);
    }
    printf("  dL/dα: %d entries (α > 0.05), max|g| %.3e, worst rel err %.2e\n", k, gmax, worst);
    printf("  estimate −α·dL/dα vs the directional difference: max|est| %.3e, worst rel err %.2e (e.g. %.5e vs %.5e)\n",
           emax, worst_e, est[0], fdest[0]);
    assert_true(k >= 8);
    assert_true(worst < 1e-2 && worst_e < 1e-2);

    /* p: ∂L/∂p(router l, t) by central differences through ROUTE_TOKEN (NaN elsewhere: the routers' own p) */
    double worst_p = 0, pmax = 2e-2, nump[64] = {0}, anap[64] = {0};
    int kp = 0;
    for (int l = 0; l + 1 < L; l++)
        for (int t = 0; t < N && kp < 64; t++) {
            const float pv = p[(size_t)(l + 1) * N + t];
            for (size_t i = 0; i < (size_t)(L - 1) * cap; i++) rtab[i] = NAN;
            model_set_route_token_table(m, rtab);
            rtab[(size_t)l * cap + t] = pv + h;
            const double fp = loss(&c);
            rtab[(size_t)l * cap + t] = pv - h;
            const double fm = loss(&c);
            model_clear_overrides(m);
            nump[kp] = (fp - fm) / (2.0 * h);
            anap[kp] = cdp[(size_t)(l + 1) * N + t];
            pmax = fmax(pmax, fabs(anap[kp]));
            kp++;
        }
    for (int i = 0; i < kp; i++) worst_p = fmax(worst_p, fabs(nump[i] - anap[i]) / pmax);
    printf("  dL/dp: %d entries, max|g| %.3e, worst rel err %.2e\n", kp, pmax, worst_p);
    assert_true(kp == 2 * N);
    assert_true(worst_p < 1e-2);
    free(cdg), free(cdp), free(alpha), free(p), free(gtab), free(rtab);
    unbuild(&c);
}

static void test_spearman(void **state) {
    (void)state;
    const double a[] = {1, 2, 3, 4}, b[] = {4, 3, 2, 1}, s[] = {1, 3, 2, 4}, z[] = {0, 0, 1, 2}, k[] = {5, 5, 5, 5};
    printf("  ρ: same %.4f, reversed %.4f, one swap %.4f, ties %.4f\n", attrib_spearman(a, a, 4),
           attrib_spearman(a, b, 4), attrib_spearman(a, s, 4), attrib_spearman(z, z, 4));
    assert_true(fabs(attrib_spearman(a, a, 4) - 1) < 1e-12);
    assert_true(fabs(attrib_spearman(a, b, 4) + 1) < 1e-12);
    assert_true(fabs(attrib_spearman(a, s, 4) - 0.8) < 1e-12); /* 1 − 6·2 / (4·15) */
    assert_true(fabs(attrib_spearman(z, z, 4) - 1) < 1e-12);
    assert_true(isnan(attrib_spearman(a, k, 4)) && isnan(attrib_spearman(a, a, 1)));
}

int main(void) {
    rng_seed(&rng, 2024);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gate_gradients),
        cmocka_unit_test(test_spearman),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
