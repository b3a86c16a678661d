/*
 * test_probe.c — the activation cache's numbers against the model itself
 * (analysis/measure/probe.h), on a tiny SATFormer with random weights scaled so that
 * gates are open:
 *   - the logit lens at the last block is the final head: its loss per token
 *     is m->tok_loss bit for bit (the same ops on the same stream), its KL 0;
 *   - the direct logit attribution of the V1 path of (block 1, KV head j)
 *     equals the change of that block's attention update when the gate is
 *     overridden to 0 (the attention is linear in v' = v + α·V1 and its
 *     probabilities do not depend on v'), pushed through the frozen final
 *     norm and the next token's head row: float32 sums of d·hd terms in
 *     another order, so within 1e-4 of the largest |DLA| (3e-7 seen);
 *   - the V1 share with the gate overridden to 0 is exactly 0;
 * on the llama block and on the gpt2 backbone (LayerNorm: the lens through
 * model_final_norm, the DLA of a component centred as LayerNorm centres it).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "analysis/measure/probe.h"
#include "model/model.h"
#include "model/rng.h"

static gl_rng rng;

/* gpt2: the same checks through LayerNorm (the lens is model_final_norm; the DLA centres a component,
 * as LayerNorm does) */
static void probe_vs_model(int gpt2) {
    gl_model_config cfg;
    config_defaults(&cfg);
    cfg.vocab_size = 13;
    cfg.d_model = 16;
    cfg.n_layer = 3;
    cfg.n_head = 4;
    cfg.n_kv_head = 2;
    cfg.d_ff = 24;
    cfg.seq_len = 8;
    cfg.value_residual = VR_SATFORMER;
    if (gpt2) cfg.backbone = BB_GPT2, cfg.qk_norm = 0, cfg.norm_eps = 1e-5f;
    printf(" backbone %s:\n", gpt2 ? "gpt2" : "llama");
    gl_model m;
    char err[256];
    assert_int_equal(model_init(&m, &cfg, 1, err, sizeof err), 0);
    model_init_weights(&m, 11);
    for (int i = 0; i < m.n_tensors; i++) {
        const gl_tensor *t = &m.tensors[i];
        float *p = m.params + t->offset;
        for (size_t j = 0; j < t->size; j++) {
            if (t->ndim == 2) p[j] *= strstr(t->name, "alpha") ? 20.0f : 8.0f;
            else p[j] += 0.2f * rng_normal(&rng);
        }
    }
    const int T = cfg.seq_len, L = cfg.n_layer, Hkv = cfg.n_kv_head, d = cfg.d_model;
    int ids[9], tg[8];
    for (int i = 0; i < 9; i++) ids[i] = (int)rng_below(&rng, cfg.vocab_size);
    for (int t = 0; t < T; t++) tg[t] = ids[t + 1];
    gl_probecache pc;
    memset(&pc, 0, sizeof pc);
    assert_int_equal(probe_run(&m, ids, 9, 0, 0, &pc, err, sizeof err), 0); /* windows [0, 8) and [8, 9) */
    /* the model on the first window, as probe ran it */
    model_forward(&m, ids, tg, NULL, 1, T);
    const pc_array *ll = probecache_find(&pc, "lens/loss"), *kl = probecache_find(&pc, "lens/kl");
    const pc_array *dla = probecache_find(&pc, "v1/dla");
    assert_non_null(ll);
    assert_non_null(dla);
    int same = 1;
    for (int t = 0; t < T; t++) {
        same &= ll->data[(size_t)(L - 1) * 9 + t] == m.tok_loss[t];
        same &= kl->data[(size_t)(L - 1) * 9 + t] == 0.0f;
    }
    printf("  lens at the last block: loss = tok_loss and KL = 0 on all %d tokens: %s\n", T, same ? "yes" : "NO");
    assert_true(same);
    /* DLA of block 1's V1 path, per KV head, against the change of its attention update */
    float *ao = malloc((size_t)T * d * sizeof(float)), *rstd = malloc((size_t)T * sizeof(float));
    memcpy(ao, m.A[1].ao, (size_t)T * d * sizeof(float));
    memcpy(rstd, m.rstdf, (size_t)T * sizeof(float));
    double worst = 0, big = 1e-6;
    for (int j = 0; j < Hkv; j++) {
        model_clear_overrides(&m);
        model_set_gate_override(&m, 1, j, GATE_CONST, 0.0f);
        model_forward(&m, ids, tg, NULL, 1, T);
        for (int t = 0; t < T; t++) {
            double ref = 0, mean = 0;
            for (int i = 0; i < d; i++) mean += gpt2 ? ((double)ao[(size_t)t * d + i] - m.A[1].ao[(size_t)t * d + i]) / d : 0;
            for (int i = 0; i < d; i++)
                ref += (double)m.P.head[(size_t)tg[t] * d + i] * m.P.final_norm[i] * rstd[t] *
                       ((double)ao[(size_t)t * d + i] - m.A[1].ao[(size_t)t * d + i] - mean);
            const double got = dla->data[((size_t)1 * 9 + t) * Hkv + j];
            worst = fmax(worst, fabs(got - ref));
            big = fmax(big, fabs(ref));
        }
    }
    model_clear_overrides(&m);
    printf("  V1-path DLA of block 1 vs the attention update's change: max |DLA| %.3e, worst |diff| %.2e\n", big, worst);
    assert_true(big > 1e-3);
    assert_true(worst <= 1e-4 * big);
    /* a zeroed gate: V1 share exactly 0 (and its DLA too) */
    gl_probecache pz;
    memset(&pz, 0, sizeof pz);
    model_set_gate_override(&m, 2, 1, GATE_CONST, 0.0f);
    assert_int_equal(probe_run(&m, ids, 9, 0, 0, &pz, err, sizeof err), 0);
    model_clear_overrides(&m);
    const pc_array *sh = probecache_find(&pz, "v1/share"), *dz = probecache_find(&pz, "v1/dla");
    int zero = 1;
    for (int t = 0; t < 9; t++) zero &= sh->data[((size_t)2 * 9 + t) * Hkv + 1] == 0.0f;
    for (int t = 0; t < 8; t++) zero &= dz->data[((size_t)2 * 9 + t) * Hkv + 1] == 0.0f;
    printf("  block 2, KV head 1 zeroed: V1 share and DLA exactly 0: %s\n", zero ? "yes" : "NO");
    assert_true(zero);
    free(ao), free(rstd);
    probecache_free(&pc);
    probecache_free(&pz);
    model_free(&m);
}

static void test_probe_vs_model(void **state) {
    (void)state;
    probe_vs_model(0);
}
static void test_probe_vs_model_gpt2(void **state) {
    (void)state;
    probe_vs_model(1);
}

int main(void) {
    rng_seed(&rng, 77);
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_probe_vs_model), cmocka_unit_test(test_probe_vs_model_gpt2)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
