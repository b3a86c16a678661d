/*
 * test_crosslayer.c — properties of the cross-layer variants (model/crosslayer.c,
 * docs/crosslayer.md) that the gradient and parity tests do not cover:
 *
 *   - names parse and print; config_validate refuses the documented
 *     combinations with a message naming the key, and accepts the rest;
 *   - the parameter counts and the extra activation memory equal the formulas
 *     in docs/crosslayer.md;
 *   - at initialisation each variant is the plain residual network: with the
 *     baseline's weights copied in by name, loss, logits and every shared
 *     gradient agree (DenseFormer and MUDD to rounding, hyper up to the final
 *     norm's ε, since the S streams sum to S·h);
 *   - DenseFormer + TSA sparse inference with nothing skipped equals the dense
 *     forward; forward + backward twice is bit-identical.
 *
 * Gradients themselves are checked in test_grad.c (finite differences) and
 * test_parity.c (PyTorch fixtures).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "model/carve.h"
#include "model/crosslayer.h"
#include "model/model.h"
#include "model/rng.h"

static gl_model_config small_config(void) {
    gl_model_config c;
    config_defaults(&c);
    c.vocab_size = 11;
    c.d_model = 16;
    c.n_layer = 3;
    c.n_head = 4;
    c.n_kv_head = 2;
    c.d_ff = 24;
    c.seq_len = 8;
    return c;
}

/* ---- names and refusals ---------------------------------------------------- */

static void expect_refused(gl_model_config c, const char *what, const char *needle) {
    char err[512] = "";
    int rc = config_validate(&c, err, sizeof err);
    printf("  refused %-28s: %s\n", what, err);
    assert_int_equal(rc, -1);
    assert_non_null(strstr(err, needle));
}

static void expect_accepted(gl_model_config c, const char *what) {
    char err[512] = "";
    int rc = config_validate(&c, err, sizeof err);
    if (rc) printf("  unexpected refusal of %s: %s\n", what, err);
    assert_int_equal(rc, 0);
}

static void test_names_and_combinations(void **state) {
    (void)state;
    const char *names[] = {"none", "denseformer", "hyper", "mudd"};
    for (int i = 0; i < 4; i++) {
        gl_cross_layer v;
        assert_int_equal(config_parse_cross_layer(names[i], &v), 0);
        assert_int_equal((int)v, i);
        assert_string_equal(config_cross_layer_name(v), names[i]);
    }
    gl_cross_layer v;
    assert_int_equal(config_parse_cross_layer("dense", &v), -1);
    assert_int_equal(config_parse_cross_layer(NULL, &v), -1);

    gl_model_config c = small_config();
    assert_int_equal(c.cross_layer, CL_NONE);
    assert_int_equal(c.hc_expansion, 4);
    const gl_cross_layer all[3] = {CL_DENSEFORMER, CL_HYPER, CL_MUDD};
    for (int i = 0; i < 3; i++) {
        gl_model_config x = small_config();
        x.cross_layer = all[i];
        expect_accepted(x, names[i + 1]);
        x.value_residual = VR_SATFORMER;
        expect_accepted(x, "with satformer");
        x.value_residual = VR_RESFORMER;
        expect_accepted(x, "with resformer");
        x.value_residual = VR_NONE;
        x.depth_routing = DR_EARLY_EXIT;
        expect_refused(x, "with early_exit", "model.cross_layer");
        x.depth_routing = DR_TSA;
        if (all[i] == CL_DENSEFORMER)
            expect_accepted(x, "denseformer with tsa");
        else
            expect_refused(x, "with tsa", "model.cross_layer");
    }
    c.cross_layer = CL_HYPER;
    c.hc_expansion = 0;
    expect_refused(c, "hc_expansion 0", "model.hc_expansion");
    c.hc_expansion = 17;
    expect_refused(c, "hc_expansion 17", "model.hc_expansion");
    c.cross_layer = CL_NONE; /* the key only matters to hyper */
    expect_accepted(c, "none with hc_expansion 17");
    c.cross_layer = (gl_cross_layer)7;
    expect_refused(c, "cross_layer 7", "model.cross_layer");
}

/* ---- parameter and memory formulas ---------------------------------------- */

static size_t xl_param_floats(const gl_model *m) {
    size_t s = 0;
    for (int i = 0; i < m->n_tensors; i++) {
        const char *nm = m->tensors[i].name;
        if (!strncmp(nm, "dwa.", 4) || !strncmp(nm, "hyper.", 6) || !strncmp(nm, "mudd.", 5) ||
            strstr(nm, "attn_norm_k") || strstr(nm, "attn_norm_v"))
            s += m->tensors[i].size;
    }
    return s;
}

static void test_counts(void **state) {
    (void)state;
    const int B = 2, L = 4, S = 3; /* N = B·T = 16 and d = 16: every block is 16-float aligned */
    const size_t d = 16, N = 16;
    const gl_cross_layer all[3] = {CL_DENSEFORMER, CL_HYPER, CL_MUDD};
    for (int v = 0; v < 3; v++) {
        gl_model_config c = small_config();
        c.n_layer = L;
        c.hc_expansion = S;
        c.cross_layer = all[v];
        gl_model m;
        char err[256];
        assert_int_equal(model_init(&m, &c, B, err, sizeof err), 0);
        size_t params = 0, acts = 0, grads = 0, Kmax = (size_t)L + 1, sumK = 0;
        for (int n = 0; n < L; n++) {
            size_t C = n + 1 < L ? 4 : 1, K = C * (n + 2);
            Kmax = K > Kmax ? K : Kmax;
            sumK += K;
        }
        switch (all[v]) {
        case CL_DENSEFORMER:
            params = (size_t)L * (L + 3) / 2;
            acts = L * d;
            grads = (L + 1) * d + (L + 1);
            break;
        case CL_HYPER:
            params = (size_t)2 * L * (S * S + 2 * S + 2 + (S + 2) * d);
            acts = (size_t)(2 * L + 2) * S * d + (size_t)2 * L * S * (S + 3);
            grads = 3 * S * d + S * (S + 2);
            break;
        default:
            for (int n = 0; n < L; n++) {
                size_t C = n + 1 < L ? 4 : 1, K = C * (n + 2);
                params += K * d + K * K + K;
            }
            params += 2 * d * (L - 1);
            acts = L * d + (L + 3 * sumK) + (L - 1) * (5 * d + 2) + d;
            grads = 6 * d + 3 * Kmax + (L + 1) * d;
            break;
        }
        gl_model tmp = m; /* layout with base NULL only counts, but it writes pointers: use a copy */
        size_t a = xl_layout_acts(&tmp, NULL), g = xl_layout_grads(&tmp, NULL);
        printf("  %-12s params %6zu (formula %6zu)  acts %6zu (%6zu)  grad bufs %6zu (%6zu) floats\n",
               config_cross_layer_name(all[v]), xl_param_floats(&m), params, a, acts * N, g, grads * N);
        assert_int_equal(xl_param_floats(&m), params);
        assert_int_equal(a, acts * N);
        assert_int_equal(g, grads * N);
        model_free(&m);
    }
}

/* ---- the plain residual network at initialisation ------------------------ */

typedef struct {
    int *tok, *tg;
    float *mask;
    int B, T;
} batch;

static batch make_batch(gl_rng *r, int B, int T, int V) {
    batch b = {malloc(sizeof(int) * B * T), malloc(sizeof(int) * B * T), malloc(sizeof(float) * B * T), B, T};
    for (int i = 0; i < B * T; i++) {
        b.tok[i] = (int)rng_below(r, V);
        b.tg[i] = (int)rng_below(r, V);
        b.mask[i] = i % 5 == 3 ? 0.0f : 1.0f;
    }
    return b;
}

static void free_batch(batch *b) {
    free(b->tok);
    free(b->tg);
    free(b->mask);
}

static double rel_diff(const float *a, const float *b, size_t n) {
    double d = 0, s = 1e-12;
    for (size_t i = 0; i < n; i++) {
        d = fmax(d, fabs((double)a[i] - b[i]));
        s = fmax(s, fabs((double)b[i]));
    }
    return d / s;
}

static void check_residual_start(const char *label, gl_model_config c, double tol) {
    gl_model_config bc = c;
    bc.cross_layer = CL_NONE;
    gl_model base, xl;
    char err[256];
    const int B = 2, T = c.seq_len;
    assert_int_equal(model_init(&base, &bc, B, err, sizeof err), 0);
    assert_int_equal(model_init(&xl, &c, B, err, sizeof err), 0);
    model_init_weights(&base, 3);
    model_init_weights(&xl, 5);
    gl_rng r;
    rng_seed(&r, 11);
    /* non-trivial shared weights: bigger matrices, norms away from 1 */
    for (int i = 0; i < base.n_tensors; i++) {
        const gl_tensor *t = &base.tensors[i];
        float *p = base.params + t->offset;
        for (size_t j = 0; j < t->size; j++) p[j] = t->ndim == 2 ? 8.0f * p[j] : p[j] + 0.2f * rng_normal(&r);
    }
    for (int i = 0; i < base.n_tensors; i++) {
        const gl_tensor *t = &base.tensors[i], *u = model_find_tensor(&xl, t->name);
        assert_non_null(u);
        assert_int_equal(u->size, t->size);
        memcpy(xl.params + u->offset, base.params + t->offset, t->size * sizeof(float));
    }
    /* MUDD: the key/value stream norms start equal to the attention norm (all 1 at real init) */
    for (int n = 0; n < c.n_layer; n++)
        if (xl_separate_kv_norms(&c, n))
            for (int i = 0; i < c.d_model; i++)
                xl.P.layer[n].attn_norm_k[i] = xl.P.layer[n].attn_norm_v[i] = xl.P.layer[n].attn_norm[i];
    batch b = make_batch(&r, B, T, c.vocab_size);
    float lb = model_forward(&base, b.tok, b.tg, b.mask, B, T);
    float lx = model_forward(&xl, b.tok, b.tg, b.mask, B, T);
    double el = fabs((double)lx - lb) / fabs((double)lb);
    double eg = rel_diff(xl.logits, base.logits, (size_t)B * T * c.vocab_size);
    model_zero_grad(&base);
    model_backward(&base);
    model_zero_grad(&xl);
    model_backward(&xl);
    double worst = 0;
    const char *wname = "-";
    for (int i = 0; i < base.n_tensors; i++) {
        const gl_tensor *t = &base.tensors[i], *u = model_find_tensor(&xl, t->name);
        float *g = malloc(t->size * sizeof(float));
        memcpy(g, xl.grads + u->offset, t->size * sizeof(float));
        int n;
        char rest[GL_NAME_MAX];
        if (sscanf(t->name, "layers.%d.%47s", &n, rest) == 2 && !strcmp(rest, "attn_norm") &&
            xl_separate_kv_norms(&c, n))
            for (int k = 0; k < c.d_model; k++) /* base's one norm feeds q, k and v */
                g[k] += xl.G.layer[n].attn_norm_k[k] + xl.G.layer[n].attn_norm_v[k];
        double e = rel_diff(g, base.grads + t->offset, t->size);
        if (e > worst) worst = e, wname = t->name;
        free(g);
    }
    printf("  %-26s loss %.7f vs %.7f (rel %.1e)  logits rel %.1e  grads worst rel %.1e (%s)  tol %.0e\n",
           label, lx, lb, el, eg, worst, wname, tol);
    assert_true(el <= tol && eg <= tol && worst <= 10 * tol);
    free_batch(&b);
    model_free(&base);
    model_free(&xl);
}

static void test_starts_as_residual(void **state) {
    (void)state;
    gl_model_config c = small_config();
    /* DenseFormer and MUDD: the same sums with exact zeros and ones */
    c.cross_layer = CL_DENSEFORMER;
    check_residual_start("denseformer", c, 1e-6);
    c.value_residual = VR_SATFORMER;
    c.depth_routing = DR_TSA;
    check_residual_start("denseformer+satformer+tsa", c, 1e-6);
    c = small_config();
    c.cross_layer = CL_MUDD;
    c.n_layer = 4;
    check_residual_start("mudd", c, 1e-6);
    c.value_residual = VR_SATFORMER;
    check_residual_start("mudd+satformer", c, 1e-6);
    /* hyper: h_L = S·h, equal after the final RMSNorm up to its ε (~1e-6 relative) */
    c = small_config();
    c.cross_layer = CL_HYPER;
    check_residual_start("hyper S=4", c, 1e-5);
    c.hc_expansion = 3;
    c.value_residual = VR_RESFORMER;
    check_residual_start("hyper S=3+resformer", c, 1e-5);
}

/* ---- sparse inference and reruns ------------------------------------------- */

static void test_sparse_and_reruns(void **state) {
    (void)state;
    const gl_cross_layer all[3] = {CL_DENSEFORMER, CL_HYPER, CL_MUDD};
    gl_rng r;
    rng_seed(&r, 5);
    for (int v = 0; v < 3; v++) {
        gl_model_config c = small_config();
        c.cross_layer = all[v];
        if (all[v] == CL_DENSEFORMER) c.depth_routing = DR_TSA;
        gl_model m;
        char err[256];
        const int B = 2, T = c.seq_len;
        assert_int_equal(model_init(&m, &c, B, err, sizeof err), 0);
        model_init_weights(&m, 9);
        batch b = make_batch(&r, B, T, c.vocab_size);
        float l1 = model_forward(&m, b.tok, b.tg, b.mask, B, T);
        model_zero_grad(&m);
        model_backward(&m);
        float *g1 = malloc(m.n_params * sizeof(float));
        memcpy(g1, m.grads, m.n_params * sizeof(float));
        float l2 = model_forward(&m, b.tok, b.tg, b.mask, B, T);
        model_zero_grad(&m);
        model_backward(&m);
        int same = l1 == l2 && !memcmp(g1, m.grads, m.n_params * sizeof(float));
        printf("  %-12s rerun: loss %.7f, gradients %s\n", config_cross_layer_name(all[v]), l1,
               same ? "bit-identical" : "DIFFER");
        assert_true(same);
        if (all[v] == CL_DENSEFORMER) {
            /* p forced to 0: the sparse path keeps every token and must equal the dense forward */
            model_set_route_override(&m, ROUTE_CONST, 0.0f, 0);
            model_forward(&m, b.tok, b.tg, b.mask, B, T);
            float dense = m.task_loss;
            m.sparse = 1;
            model_forward(&m, b.tok, b.tg, b.mask, B, T);
            printf("  denseformer+tsa sparse (nothing skipped) task loss %.7f, dense %.7f\n", m.task_loss, dense);
            assert_true(fabs((double)m.task_loss - dense) <= 1e-6 * fabs((double)dense));
            /* p forced to 1: every routed block is skipped, s_{n+1} = x_n, averages still apply */
            model_set_route_override(&m, ROUTE_CONST, 1.0f, 0);
            model_forward(&m, b.tok, b.tg, b.mask, B, T);
            printf("  denseformer+tsa sparse (all skipped) task loss %.7f, active %ld\n", m.task_loss, m.active_count);
            assert_true(isfinite(m.task_loss) && m.active_count == 0);
            m.sparse = 0;
            model_clear_overrides(&m);
        }
        free(g1);
        free_batch(&b);
        model_free(&m);
    }
}

/* The carver model.c and crosslayer.c share: the counting pass and the real
 * pass agree, slices are 64-byte aligned, disjoint and in order, and the
 * splitmix64 finaliser both files' neighbours use is the reference one. */
static void test_carver_and_mix(void **state) {
    (void)state;
    const size_t sizes[5] = {1, 16, 17, 0, 33};
    gl_carver count = {NULL, 0};
    for (int i = 0; i < 5; i++) assert_null(carve_take(&count, sizes[i]));
    assert_int_equal(count.used, 16 + 16 + 32 + 0 + 48);
    float *arena = aligned_alloc(64, count.used * sizeof(float));
    assert_non_null(arena);
    gl_carver cv = {arena, 0};
    float *prev_end = arena;
    for (int i = 0; i < 5; i++) {
        float *p = carve_take(&cv, sizes[i]);
        assert_true(((uintptr_t)p & 63) == 0);
        assert_true(p >= prev_end);
        prev_end = p + sizes[i];
    }
    assert_true(prev_end <= arena + count.used);
    assert_int_equal(cv.used, count.used);
    free(arena);
    /* splitmix64 from state 0: the published first outputs (Vigna's splitmix64.c) */
    assert_true(rng_mix64(0x9e3779b97f4a7c15ULL) == 0xe220a8397b1dcdafULL);
    assert_true(rng_mix64(2 * 0x9e3779b97f4a7c15ULL) == 0x6e789e6aa1b965f4ULL);
    /* the one splitmix step (rng.h) gives the same outputs, and its counter form the k-th of them */
    uint64_t x = 0;
    assert_true(rng_splitmix(&x) == 0xe220a8397b1dcdafULL && x == RNG_GAMMA);
    assert_true(rng_splitmix(&x) == 0x6e789e6aa1b965f4ULL && x == 2 * RNG_GAMMA);
    const uint64_t keys[] = {0, 42, 0xdeadbeefcafef00dULL, ~0ULL};
    for (int i = 0; i < 4; i++) {
        uint64_t st = keys[i];
        for (uint64_t k = 1; k <= 9; k++) assert_true(rng_splitmix(&st) == rng_splitmix_at(keys[i], k));
    }
    print_message("carver: 5 slices, %zu floats, aligned and disjoint; rng_mix64, rng_splitmix and rng_splitmix_at = splitmix64's reference outputs\n",
                  cv.used);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_carver_and_mix),
        cmocka_unit_test(test_names_and_combinations),
        cmocka_unit_test(test_counts),
        cmocka_unit_test(test_starts_as_residual),
        cmocka_unit_test(test_sparse_and_reruns),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
