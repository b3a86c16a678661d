/*
 * test_grad.c — every backward against central finite differences.
 *
 * Per op (matmul and attention — also sgemm against their plain loops, forward
 * and backward, and inference's packed-row attention (infer.c) against the
 * dense one and the loops —, RMSNorm, rotary, SwiGLU, cross-entropy, router)
 * and for the whole model in every variant (baseline with and without
 * qk-norm, untied head, GQA, ResFormer plus/learnable/identity, SATFormer,
 * SATFormer last-k, every SATFormer gate function (model.sat_gate) with and
 * without the gate bias, one with a gate overridden, the static head gate, TSA, TSA+SATFormer, early exit linear/uniform and in the TSA paper's form
 * (exit_form paper: an exit norm per block), and the
 * cross-layer variants DenseFormer, hyper-connections, MUDD and their
 * combinations with value residuals / TSA; Mixture-of-Depths every block and
 * every other block with SATFormer, random routing), and MoD's masked
 * attention (routing_attn_forward, whose backward is attn_backward).
 * The TSA paper's own model: LayerNorm, GELU with biases and the ReLU router
 * (ops), attention with dropout on its probabilities (sgemm against loops and
 * differences), the gpt2 backbone with and without TSA in either form and with
 * every variant it takes, TSA's paper form on the llama block, and dropout on
 * either backbone with a fixed key (so fixed masks across the differences).
 *
 * MoD's top-k selection is piecewise constant in the router logits: the
 * gradient exists only away from ties, where a small step does not change
 * which tokens are selected.  The model objective therefore records the
 * selection of the unperturbed forward and counts every finite-difference
 * evaluation whose selection differs; the test requires none (the check is
 * made away from ties, and would say so if a step crossed one).  Random
 * routing's evaluation draw depends on the tokens only, so it is fixed
 * across the differences.
 *
 * The objective is a fixed random projection of the op's output, summed in
 * double.  The ops themselves run in float32, so a central difference with
 * step h has a rounding error of about ε_f·|f|/h ≈ 6e-8·|f|/h; with h = 1e-2
 * for ops (smooth, O(1) inputs) and 2e-3 for the whole model the expected
 * disagreement is below 1e-3 relative to the largest gradient, and we allow
 * 5e-3 (ops) and 1e-2 (model: a ReLU or the causal mask can sit within h of
 * a kink; the inputs are drawn to make that unlikely, and the seed is fixed).
 * For the model the error is relative to max(max|g|, 2e-2): the float loss
 * (≈ 2.6) carries ≈ 1e-4 absolute difference noise at h = 2e-3, which would
 * otherwise dominate tensors whose whole gradient is ~1e-3 (router biases).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <omp.h>

#include "model/adamw.h"
#include "model/dropout.h"
#include "model/infer.h"
#include "model/model.h"
#include "model/ops.h"
#include "model/rng.h"
#include "model/routing.h"
#include "model/vexp.h"
#include "model_fixture.h"

static gl_rng rng;

static float *randn(size_t n, float scale) {
    float *p = malloc(n * sizeof *p);
    for (size_t i = 0; i < n; i++) p[i] = scale * rng_normal(&rng);
    return p;
}

static double dot(const float *a, const float *b, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++) s += (double)a[i] * b[i];
    return s;
}

/* Compare analytic gradient g of x (n) against central differences of f().
 * A ReLU (the paper's router) or a hard selection makes f piecewise smooth: when a kink lies within h of
 * x[i], the central difference mixes two slopes and disagrees with any correct gradient.  So a coordinate
 * whose difference at h misses by more than 1e-3 (relative to max|g|) is measured again at h/2 and h/4,
 * whose intervals leave out a kink at a distance beyond them, and keeps the smallest of its misses.  At a
 * smooth point every step estimates the same slope (the smaller ones with more float noise: about 2 and 4
 * times the miss at h), so a wrong gradient misses at each of them and the check still fails. */
typedef double (*objective)(void *ctx);
static double fd_check(const char *what, float *x, const float *g, size_t n, objective f, void *ctx,
                       float h, size_t max_checks, double gfloor) {
    double worst = 0, gmax = gfloor;
    int shorter = 0;
    for (size_t i = 0; i < n; i++) gmax = fmax(gmax, fabs(g[i]));
    size_t stride = n > max_checks ? n / max_checks : 1;
    for (size_t i = 0; i < n; i += stride) {
        const float keep = x[i];
        double e = INFINITY;
        for (int k = 0; k < 3 && e > 1e-3; k++) {
            const float hk = ldexpf(h, -k);
            x[i] = keep + hk;
            const double fp = f(ctx), up = (double)x[i] - keep;
            x[i] = keep - hk;
            const double fm = f(ctx), dn = keep - (double)x[i];
            x[i] = keep;
            const double ek = fabs((fp - fm) / (up + dn) - g[i]) / gmax;
            if (ek < e) e = ek, shorter += k > 0;
        }
        if (e > worst) worst = e;
    }
    printf("  %-34s n=%-6zu max|g|=%.3e worst rel err %.2e", what, n, gmax, worst);
    if (shorter) printf(" (%d closer with a shorter step)", shorter);
    printf("\n");
    return worst;
}

/* ---------------- per-op checks ---------------- */

/* gl_expf (the vectorisable exp of the softmax and SwiGLU) against libm's expf,
 * in units in the last place, over the whole finite range and at its edges. */
static void test_vexp(void **state) {
    (void)state;
    double worst = 0;
    for (float x = -87.0f; x <= 88.0f; x += 0.000731f) {
        float a = gl_expf(x), b = expf(x);
        double ulp = fabs((double)a - b) / (nextafterf(b, INFINITY) - b);
        if (ulp > worst) worst = ulp;
    }
    printf("  gl_expf vs expf on [-87, 88]: worst %.2f ulp\n", worst);
    assert_true(worst <= 2.0);
    assert_true(gl_expf(0.0f) == 1.0f);
    assert_true(gl_expf(-1000.0f) == 0.0f && gl_expf(-INFINITY) == 0.0f);
    assert_true(isfinite(gl_expf(1000.0f)) && isnan(gl_expf(NAN)));
}

/* gl_erff (the exp-free rational of vexp.h) against libm's erf over the whole float range, every 13th
 * float from 0 to FLT_MAX and its negative; its edges (±inf, NaN, the clamp at 4); and the GELU pair
 * built on it: gl_gelu and gl_gelu_grad against x·Φ(x) and Φ(x) + x·φ(x) in double over [-12, 12],
 * exact in the tails, and gl_gelu_grad against central differences of gl_gelu. */
static void test_verf_gelu(void **state) {
    (void)state;
    double werf = 0, wat = 0;
    int odd = 1;
    for (uint32_t bits = 0; bits < 0x7f800000u; bits += 13) {
        float x;
        memcpy(&x, &bits, sizeof x);
        const float e = gl_erff(x);
        const double d = fabs((double)e - erf((double)x));
        if (d > werf) werf = d, wat = x;
        odd &= gl_erff(-x) == -e;
    }
    printf("  gl_erff vs erf, whole float range: worst absolute error %.2e at %.6g; odd: %s\n", werf, wat,
           odd ? "yes" : "NO");
    /* the fit (2.5e-8) plus the float rounding of its Horner sums (about 6 ulp at most, 3.8e-7
     * over every float); the exp-based erfc form it replaced reached 4.6e-7 near 0 */
    assert_true(werf < 4e-7 && odd);
    assert_true(gl_erff(0.0f) == 0.0f && gl_erff(INFINITY) == 1.0f && gl_erff(-INFINITY) == -1.0f);
    assert_true(gl_erff(4.0f) == 1.0f && gl_erff(1e30f) == 1.0f && isnan(gl_erff(NAN)));
    double wg = 0, wd = 0, wfd = 0;
    for (float x = -12.0f; x <= 12.0f; x += 0.00371f) {
        const double xd = x, cdf = 0.5 * (1.0 + erf(xd / sqrt(2.0))), pdf = exp(-0.5 * xd * xd) / sqrt(2.0 * M_PI);
        wg = fmax(wg, fabs(gl_gelu(x) - xd * cdf) / fmax(1.0, fabs(xd))); /* relative beyond |x| = 1 */
        wd = fmax(wd, fabs(gl_gelu_grad(x) - (cdf + xd * pdf)));
        const float h = 1.0f / 64; /* a power of two: x ± h is exact wherever the quotient matters */
        wfd = fmax(wfd, fabs(((double)gl_gelu(x + h) - gl_gelu(x - h)) / (2.0 * h) - gl_gelu_grad(x)));
    }
    printf("  gl_gelu vs x·Φ(x) on [-12, 12]: %.2e (absolute, relative beyond |x| = 1); gl_gelu_grad vs "
           "Φ + x·φ: %.2e; vs central differences of gl_gelu (h = 1/64): %.2e\n", wg, wd, wfd);
    assert_true(wg < 4e-7 && wd < 4e-7);
    /* truncation h²/6 times the third derivative φ(x)·(x³ − 4x) (below 0.8): 3.3e-5, plus gl_gelu's
     * error (below 1.2e-6 absolute) twice over 2h: 7.7e-5 */
    assert_true(wfd < 2e-4);
    /* the tails are exact: erf is ±1 beyond |x| = 4, so GELU is x and 0 there, GELU' 1 and 0 */
    assert_true(gl_gelu(100.0f) == 100.0f && gl_gelu(-100.0f) == 0.0f);
    assert_true(gl_gelu_grad(100.0f) == 1.0f && gl_gelu_grad(-100.0f) == 0.0f);
}

/* fd_check itself: a kink within h of the point (a ReLU at 0.3·h) must not fail a correct gradient, and a
 * gradient off by 2.2 % of max|g| at one smooth coordinate, or the slope of the wrong side of the kink, must
 * still fail. f(x) = Σ w_i·relu(x_i) + x_i²/2 in float, as the models' objectives are. */
typedef struct {
    float x[8], w[8];
} kink_ctx;
static double kink_obj(void *p) {
    const kink_ctx *k = p;
    float s = 0.0f;
    for (int i = 0; i < 8; i++) s += k->w[i] * (k->x[i] > 0.0f ? k->x[i] : 0.0f) + 0.5f * k->x[i] * k->x[i];
    return s;
}
static void test_fd_check_kink(void **state) {
    (void)state;
    const float h = 2e-3f;
    kink_ctx k;
    float g[8];
    for (int i = 0; i < 8; i++) k.x[i] = 0.1f * (float)(i + 1) - 0.35f, k.w[i] = 0.5f + 0.1f * (float)i;
    k.x[3] = 0.3f * h; /* the ReLU's kink 0.3·h to the left: the difference at h mixes both slopes */
    for (int i = 0; i < 8; i++) g[i] = (k.x[i] > 0.0f ? k.w[i] : 0.0f) + k.x[i];
    assert_true(fd_check("kink within h, right gradient", k.x, g, 8, kink_obj, &k, h, 8, 2e-2) < 1e-2);
    float bad[8];
    memcpy(bad, g, sizeof g);
    bad[5] += 0.03f * 1.2f; /* max|g| is w[7] + x[7] = 1.65: 3 % of it is ≈ 0.05, this 0.036 is 2.2 % */
    assert_true(fd_check("one coordinate off by 2.2 %", k.x, bad, 8, kink_obj, &k, h, 8, 2e-2) > 1e-2);
    memcpy(bad, g, sizeof g);
    bad[3] = k.x[3]; /* the slope left of the kink, where x is not */
    assert_true(fd_check("kink, the other side's slope", k.x, bad, 8, kink_obj, &k, h, 8, 2e-2) > 1e-2);
}

enum { N = 12, C = 16 };

typedef struct {
    float *x, *g, *out, *rstd, *w;
    int n, c;
} norm_ctx;

static double norm_obj(void *p) {
    norm_ctx *k = p;
    rmsnorm_forward(k->out, k->rstd, k->x, k->g, k->n, k->c, 1e-6f);
    return dot(k->out, k->w, (size_t)k->n * k->c);
}

static void test_rmsnorm(void **state) {
    (void)state;
    norm_ctx k = {randn(N * C, 1), randn(C, 0.3f), malloc(N * C * 4), malloc(N * 4), randn(N * C, 1), N, C};
    for (int i = 0; i < C; i++) k.g[i] += 1.0f;
    float *dx = calloc(N * C, 4), *dg = calloc(C, 4);
    norm_obj(&k);
    rmsnorm_backward(dx, dg, k.w, k.x, k.g, k.rstd, N, C);
    assert_true(fd_check("rmsnorm dx", k.x, dx, N * C, norm_obj, &k, 1e-2f, 400, 1e-12) < 5e-3);
    assert_true(fd_check("rmsnorm dg", k.g, dg, C, norm_obj, &k, 1e-2f, 400, 1e-12) < 5e-3);
    free(k.x); free(k.g); free(k.out); free(k.rstd); free(k.w); free(dx); free(dg);
}

typedef struct {
    float *x, *y, *w, *cs, *sn;
    int n, t, nh, hd;
} rope_ctx;

static double rope_obj(void *p) {
    rope_ctx *k = p;
    size_t sz = (size_t)k->n * k->nh * k->hd;
    memcpy(k->y, k->x, sz * 4);
    rope_forward(k->y, k->cs, k->sn, k->n, k->t, k->nh, k->hd);
    return dot(k->y, k->w, sz);
}

static void test_rope(void **state) {
    (void)state;
    int T = 6, nh = 2, hd = 8, n = 12;
    size_t sz = (size_t)n * nh * hd;
    rope_ctx k = {randn(sz, 1), malloc(sz * 4), randn(sz, 1), malloc(T * hd / 2 * 4), malloc(T * hd / 2 * 4), n, T, nh, hd};
    rope_tables(k.cs, k.sn, T, hd, 10000.0f);
    float *dx = malloc(sz * 4);
    memcpy(dx, k.w, sz * 4);
    rope_backward(dx, k.cs, k.sn, n, T, nh, hd);
    assert_true(fd_check("rope dx", k.x, dx, sz, rope_obj, &k, 1e-2f, 400, 1e-12) < 5e-3);
    /* position 0 is the identity */
    memcpy(k.y, k.x, sz * 4);
    rope_forward(k.y, k.cs, k.sn, n, T, nh, hd);
    for (int i = 0; i < nh * hd; i++) assert_float_equal(k.y[i], k.x[i], 0);
    free(k.x); free(k.y); free(k.w); free(k.cs); free(k.sn); free(dx);
}

typedef struct {
    float *q, *k, *v, *y, *att, *w;
    int B, T, H, Hkv, hd;
} attn_ctx;

static double attn_obj(void *p) {
    attn_ctx *c = p;
    attn_forward(c->y, c->att, c->q, c->k, c->v, c->B, c->T, c->H, c->Hkv, c->hd);
    return dot(c->y, c->w, (size_t)c->B * c->T * c->H * c->hd);
}

/* infer_attn_rows (model/infer.c), attention for packed query rows: with every
 * row packed it is attn_forward bit for bit (the same 64-row blocks, sgemm
 * calls and softmax, infer.h); on a subset (every third row and the rows past
 * the 64 boundary) against attn_forward_ref's plain loops yr, the bound of the
 * dense check (1e-5): another row count may take another OpenBLAS kernel. */
static void test_infer_rows(const attn_ctx *c, const float *yr) {
    const int B = c->B, T = c->T, H = c->H, Hkv = c->Hkv, hd = c->hd, qd = H * hd;
    int *idx = malloc((size_t)B * T * sizeof(int)), seq[8];
    float *qp = malloc((size_t)B * T * qd * 4), *yp = malloc((size_t)B * T * qd * 4);
    float *scr = malloc((size_t)omp_get_max_threads() * INFER_ATT_BLOCK * T * 4);
    assert_true(B < 8);
    double exact = 0, sub = 0;
    for (int pass = 0; pass < 2; pass++) {
        int K = 0;
        for (int r = 0; r < B * T; r++)
            if (pass == 0 || r % 3 == 0 || r % T >= 60) idx[K++] = r;
        infer_gather(qp, c->q, idx, K, qd);
        infer_seq_bounds(seq, idx, K, B, T);
        infer_attn_rows(yp, qp, c->k, c->v, idx, seq, B, T, H, Hkv, hd, scr);
        for (int r = 0; r < K; r++)
            for (int i = 0; i < qd; i++) {
                const double d = pass == 0 ? fabs((double)yp[(size_t)r * qd + i] - c->y[(size_t)idx[r] * qd + i])
                                           : fabs((double)yp[(size_t)r * qd + i] - yr[(size_t)idx[r] * qd + i]);
                if (pass == 0) exact = fmax(exact, d);
                else sub = fmax(sub, d);
            }
    }
    printf("  packed-row attention: all rows vs attn_forward max abs diff %.2e (must be 0), subset vs loops %.2e\n",
           exact, sub);
    assert_true(exact == 0.0);
    assert_true(sub < 1e-5);
    free(idx); free(qp); free(yp); free(scr);
}

static void test_attention(void **state) {
    (void)state;
    /* T = 70 crosses the 64-row causal block boundary */
    int B = 2, T = 70, H = 4, Hkv = 2, hd = 8;
    size_t qn = (size_t)B * T * H * hd, kn = (size_t)B * T * Hkv * hd;
    attn_ctx c = {randn(qn, 1), randn(kn, 1), randn(kn, 1), malloc(qn * 4), malloc((size_t)B * H * T * T * 4), randn(qn, 1), B, T, H, Hkv, hd};
    /* sgemm path equals the plain-loop reference */
    float *yr = malloc(qn * 4), *ar = malloc((size_t)B * H * T * T * 4);
    attn_obj(&c);
    attn_forward_ref(yr, ar, c.q, c.k, c.v, NULL, B, T, H, Hkv, hd);
    double worst = 0;
    for (size_t i = 0; i < qn; i++) worst = fmax(worst, fabs(yr[i] - c.y[i]));
    printf("  attention sgemm vs loops: max abs diff %.2e\n", worst);
    assert_true(worst < 1e-5);
    test_infer_rows(&c, yr);
    float *dq = calloc(qn, 4), *dk = malloc(kn * 4), *dv = malloc(kn * 4), *scr = malloc((size_t)64 * T * T * 4);
    for (size_t i = 0; i < kn; i++) dk[i] = dv[i] = 7.0f; /* attn_backward overwrites dk, dv: stale values must go */
    attn_backward(dq, dk, dv, c.w, c.att, NULL, 0, c.q, c.k, c.v, scr, B, T, H, Hkv, hd);
    /* the sgemm backward against its plain loops in double on the same att: dq, dk, dv are sums of at most
     * rep·T = 140 products of O(1) values (|g| up to ~4 here), float against double, measured ~1e-6; 1e-4 */
    float *dqr = malloc(qn * 4), *dkr = malloc(kn * 4), *dvr = malloc(kn * 4);
    attn_backward_ref(dqr, dkr, dvr, c.w, c.att, NULL, c.q, c.k, c.v, B, T, H, Hkv, hd);
    double eq = 0, ek = 0, ev = 0;
    for (size_t i = 0; i < qn; i++) eq = fmax(eq, fabs((double)dq[i] - dqr[i]));
    for (size_t i = 0; i < kn; i++) ek = fmax(ek, fabs((double)dk[i] - dkr[i])), ev = fmax(ev, fabs((double)dv[i] - dvr[i]));
    printf("  attention backward sgemm vs loops: dq %.2e, dk %.2e, dv %.2e\n", eq, ek, ev);
    assert_true(eq < 1e-4 && ek < 1e-4 && ev < 1e-4);
    free(dqr); free(dkr); free(dvr);
    assert_true(fd_check("attention dq", c.q, dq, qn, attn_obj, &c, 1e-2f, 300, 1e-12) < 5e-3);
    assert_true(fd_check("attention dk", c.k, dk, kn, attn_obj, &c, 1e-2f, 300, 1e-12) < 5e-3);
    assert_true(fd_check("attention dv", c.v, dv, kn, attn_obj, &c, 1e-2f, 300, 1e-12) < 5e-3);
    free(c.q); free(c.k); free(c.v); free(c.y); free(c.att); free(c.w); free(yr); free(ar);
    free(dq); free(dk); free(dv); free(scr);
}

/* matmul: sgemm against the plain loops in double (forward, both backward
 * products, the overwrite variant) on shapes that are not multiples of any
 * kernel block, then dinp and dw against finite differences.  sgemm sums in
 * float in its own order, so agreement is to about 1e-5 relative on O(1)
 * inputs with ≤ 40 terms; we allow 1e-4. */
typedef struct { float *x, *w, *y, *r; int N, Din, Dout; } mm_ctx;
static double mm_obj(void *p) {
    mm_ctx *c = p;
    mm_forward(c->y, c->x, c->w, c->N, c->Din, c->Dout);
    return dot(c->y, c->r, (size_t)c->N * c->Dout);
}

static double max_abs_diff(const float *a, const float *b, size_t n) {
    double worst = 0;
    for (size_t i = 0; i < n; i++) worst = fmax(worst, fabs((double)a[i] - b[i]));
    return worst;
}

/* ops_disjoint (ops.h), the aliasing check of the ops' asserts: ranges that
 * touch are apart, one shared float overlaps, NULL and empty ranges overlap nothing. */
static void test_ops_disjoint(void **state) {
    (void)state;
    float buf[16] = {0}; /* only addresses are compared; initialised for -O0 -Wmaybe-uninitialized */
    assert_true(ops_disjoint(buf, 8, buf + 8, 8));   /* adjacent */
    assert_true(ops_disjoint(buf + 8, 8, buf, 8));   /* either order */
    assert_false(ops_disjoint(buf, 9, buf + 8, 8));  /* one float shared */
    assert_false(ops_disjoint(buf + 8, 8, buf, 9));
    assert_false(ops_disjoint(buf, 16, buf + 4, 2)); /* contained */
    assert_false(ops_disjoint(buf, 4, buf, 4));      /* the same buffer */
    assert_true(ops_disjoint(NULL, 4, buf, 4));
    assert_true(ops_disjoint(buf, 0, buf, 4));
    assert_true(ops_disjoint(buf, 4, buf, 0));
    printf("ops_disjoint: 9 cases\n");
}

static void test_matmul(void **state) {
    (void)state;
    const gl_rng keep = rng; /* its own draws: the later tests see the stream they always saw */
    const int N = 37, Din = 29, Dout = 41;
    const size_t nx = (size_t)N * Din, nw = (size_t)Dout * Din, ny = (size_t)N * Dout;
    mm_ctx c = {randn(nx, 1), randn(nw, 1), malloc(ny * 4), randn(ny, 1), N, Din, Dout};
    float *yr = malloc(ny * 4), *dx = randn(nx, 1), *dw = randn(nw, 1), *dxr = malloc(nx * 4), *dwr = malloc(nw * 4);
    memcpy(dxr, dx, nx * 4);
    memcpy(dwr, dw, nw * 4);
    mm_obj(&c);
    mm_forward_ref(yr, c.x, c.w, N, Din, Dout);
    double e_fwd = max_abs_diff(c.y, yr, ny);
    mm_backward(dx, dw, c.r, c.x, c.w, N, Din, Dout); /* accumulates onto the random start */
    mm_backward_ref(dxr, dwr, c.r, c.x, c.w, N, Din, Dout);
    double e_dx = max_abs_diff(dx, dxr, nx), e_dw = max_abs_diff(dw, dwr, nw);
    memset(dwr, 0, nw * 4);
    mm_backward_set(dx, dwr, c.r, c.x, c.w, N, Din, Dout); /* dx overwritten, dwr from zero */
    memset(dxr, 0, nx * 4);
    memset(dw, 0, nw * 4);
    mm_backward_ref(dxr, dw, c.r, c.x, c.w, N, Din, Dout);
    double e_set = fmax(max_abs_diff(dx, dxr, nx), max_abs_diff(dwr, dw, nw));
    printf("  matmul sgemm vs loops: forward %.2e, dinp %.2e, dw %.2e, backward_set %.2e\n", e_fwd, e_dx, e_dw, e_set);
    assert_true(e_fwd < 1e-4 && e_dx < 1e-4 && e_dw < 1e-4 && e_set < 1e-4);
    assert_true(fd_check("matmul dinp", c.x, dxr, nx, mm_obj, &c, 1e-2f, 300, 1e-12) < 5e-3);
    assert_true(fd_check("matmul dw", c.w, dw, nw, mm_obj, &c, 1e-2f, 300, 1e-12) < 5e-3);
    free(c.x); free(c.w); free(c.y); free(c.r); free(yr); free(dx); free(dw); free(dxr); free(dwr);
    rng = keep;
}

/* LayerNorm (the gpt2 backbone's norm): dx, dg and db against differences. */
typedef struct {
    float *x, *g, *b, *out, *rstd, *w;
    int n, c;
} ln_ctx;
static double ln_obj(void *p) {
    ln_ctx *k = p;
    layernorm_forward(k->out, k->rstd, k->x, k->g, k->b, k->n, k->c, 1e-5f);
    return dot(k->out, k->w, (size_t)k->n * k->c);
}

static void test_layernorm(void **state) {
    (void)state;
    ln_ctx k = {randn(N * C, 1), randn(C, 0.3f), randn(C, 0.3f), malloc(N * C * 4), malloc(N * 4), randn(N * C, 1), N, C};
    for (int i = 0; i < N * C; i++) k.x[i] += 0.5f; /* a row mean away from 0, so centring matters */
    for (int i = 0; i < C; i++) k.g[i] += 1.0f;
    float *dx = calloc(N * C, 4), *dg = calloc(C, 4), *db = calloc(C, 4);
    ln_obj(&k);
    layernorm_backward(dx, dg, db, k.w, k.x, k.g, k.rstd, N, C);
    assert_true(fd_check("layernorm dx", k.x, dx, N * C, ln_obj, &k, 1e-2f, 400, 1e-12) < 5e-3);
    assert_true(fd_check("layernorm dg", k.g, dg, C, ln_obj, &k, 1e-2f, 400, 1e-12) < 5e-3);
    assert_true(fd_check("layernorm db", k.b, db, C, ln_obj, &k, 1e-2f, 400, 1e-12) < 5e-3);
    ln_obj(&k); /* the outputs at the unperturbed inputs */
    /* against plain loops in double: mean, biased variance, (x − μ)·rstd·g + b */
    double worst = 0;
    for (int r = 0; r < N; r++) {
        const float *x = k.x + (size_t)r * C;
        double mu = 0, var = 0;
        for (int i = 0; i < C; i++) mu += x[i];
        mu /= C;
        for (int i = 0; i < C; i++) var += (x[i] - mu) * (x[i] - mu);
        var /= C;
        for (int i = 0; i < C; i++)
            worst = fmax(worst, fabs((x[i] - mu) / sqrt(var + 1e-5) * k.g[i] + k.b[i] - k.out[(size_t)r * C + i]));
    }
    printf("  layernorm vs double loops: %.2e\n", worst);
    assert_true(worst < 1e-5);
    free(k.x); free(k.g); free(k.b); free(k.out); free(k.rstd); free(k.w); free(dx); free(dg); free(db);
}

/* The gpt2 MLP's GELU and bias ops. */
typedef struct { float *x, *b, *y, *w; int n, c; } gelu_ctx;
static double gelu_obj(void *p) {
    gelu_ctx *k = p;
    memcpy(k->y, k->x, (size_t)k->n * k->c * sizeof(float));
    bias_forward(k->y, k->b, k->n, k->c);
    gelu_forward(k->y, k->y, (long)k->n * k->c);
    return dot(k->y, k->w, (size_t)k->n * k->c);
}

static void test_gelu_bias(void **state) {
    (void)state;
    const int n = 9, c = 20;
    gelu_ctx k = {randn(n * c, 1.5f), randn(c, 0.5f), malloc(n * c * 4), randn(n * c, 1), n, c};
    float *pre = malloc(n * c * 4), *dpre = malloc(n * c * 4), *dx = calloc(n * c, 4), *db = calloc(c, 4);
    gelu_obj(&k);
    memcpy(pre, k.x, (size_t)n * c * 4);
    bias_forward(pre, k.b, n, c);
    gelu_backward(dpre, k.w, pre, (long)n * c);
    for (int i = 0; i < n * c; i++) dx[i] = dpre[i];
    bias_backward(db, dpre, n, c);
    double worst = 0; /* GELU against x·Φ(x) in double */
    for (int i = 0; i < n * c; i++) worst = fmax(worst, fabs(0.5 * pre[i] * (1 + erf(pre[i] / sqrt(2.0))) - k.y[i]));
    printf("  gelu vs x·Φ(x) in double: %.2e\n", worst);
    assert_true(worst < 1e-6);
    assert_true(fd_check("gelu+bias dx", k.x, dx, n * c, gelu_obj, &k, 1e-2f, 400, 1e-12) < 5e-3);
    assert_true(fd_check("gelu+bias db", k.b, db, c, gelu_obj, &k, 1e-2f, 400, 1e-12) < 5e-3);
    /* the fused pair the model runs: every element the same arithmetic as the separate ops and each
     * column of db summed in row order, so equal bit for bit (a wider n, c: several vector widths
     * and a tail; db starts non-zero, as backward adds) */
    const int n2 = 37, c2 = 133;
    const gl_rng saved = rng; /* this check's draws leave the later tests' inputs as they were */
    float *x2 = randn(n2 * c2, 1.5f), *b2 = randn(c2, 0.5f), *dy2 = randn(n2 * c2, 1), *db0 = randn(c2, 1);
    float *pa = malloc(n2 * c2 * 4), *pb = malloc(n2 * c2 * 4), *ya = malloc(n2 * c2 * 4), *yb = malloc(n2 * c2 * 4);
    float *da = malloc(n2 * c2 * 4), *dd = malloc(n2 * c2 * 4), *dba = malloc(c2 * 4), *dbb = malloc(c2 * 4);
    rng = saved;
    memcpy(pa, x2, (size_t)n2 * c2 * 4);
    memcpy(pb, x2, (size_t)n2 * c2 * 4);
    memcpy(dba, db0, (size_t)c2 * 4);
    memcpy(dbb, db0, (size_t)c2 * 4);
    bias_forward(pa, b2, n2, c2);
    gelu_forward(ya, pa, (long)n2 * c2);
    gelu_backward(da, dy2, pa, (long)n2 * c2);
    bias_backward(dba, da, n2, c2);
    bias_gelu_forward(yb, pb, b2, n2, c2);
    memcpy(dd, dy2, (size_t)n2 * c2 * 4); /* dpre may be dout: the model passes them apart, the contract allows it */
    gelu_bias_backward(dd, dbb, dd, pb, n2, c2);
    const int same = !memcmp(pa, pb, (size_t)n2 * c2 * 4) && !memcmp(ya, yb, (size_t)n2 * c2 * 4) &&
                     !memcmp(da, dd, (size_t)n2 * c2 * 4) && !memcmp(dba, dbb, (size_t)c2 * 4);
    printf("  bias_gelu_forward / gelu_bias_backward vs the separate ops: %s\n", same ? "bit for bit" : "DIFFER");
    assert_true(same);
    free(x2); free(b2); free(dy2); free(db0); free(pa); free(pb); free(ya); free(yb); free(da); free(dd); free(dba);
    free(dbb);
    free(k.x); free(k.b); free(k.y); free(k.w); free(pre); free(dpre); free(dx); free(db);
}

/* Attention with dropout on its probabilities (model.dropout): y = (P ⊙ mask/(1 − r)) v with a fixed
 * mask (a fixed key); attn_backward, which makes P̃ again, against differences and against its plain
 * loops given the whole P̃ (attd, built here from dropout_scale_at, the masks' definition). */
typedef struct {
    float *q, *k, *v, *att, *scr, *y, *w;
    gl_dropout dr;
    int B, T, H, Hkv, hd;
} dattn_ctx;
static double dattn_obj(void *p) {
    dattn_ctx *c = p;
    attn_forward_dropout(c->y, c->att, c->scr, c->q, c->k, c->v, &c->dr, 1, c->B, c->T, c->H, c->Hkv, c->hd);
    return dot(c->y, c->w, (size_t)c->B * c->T * c->H * c->hd);
}

/* One instance: forward's y against the loops of attd·v (double; 1e-5 is float rounding of sums of at
 * most T terms of size about 1), backward against attn_backward_ref with attd (1e-4), and, fd set,
 * against finite differences; prints the share dropped. */
static void dattn_check(int B, int T, int H, int Hkv, int hd, long row0, int fd) {
    const size_t qn = (size_t)B * T * H * hd, kn = (size_t)B * T * Hkv * hd, an = (size_t)B * H * T * T;
    const size_t nt = (size_t)omp_get_max_threads();
    dattn_ctx c = {randn(qn, 1), randn(kn, 1), randn(kn, 1), calloc(an, 4), malloc(nt * ATTN_BLOCK * T * 4),
                   malloc(qn * 4), randn(qn, 1), {0x1234567ULL, 0.3f, row0}, B, T, H, Hkv, hd};
    dattn_obj(&c);
    const gl_drop_mask mk = dropout_mask(&c.dr, DROP_ATT, 1);
    float *attd = calloc(an, 4);
    long dropped = 0, kept = 0;
    double ye = 0.0;
    for (int bh = 0; bh < B * H; bh++)
        for (int i = 0; i < T; i++) {
            const int b = bh / H, h = bh % H;
            for (int j = 0; j <= i; j++) {
                const size_t o = ((size_t)bh * T + i) * T + j;
                const uint64_t index = ((uint64_t)(c.dr.row0 + b * T + i) * H + h) * T + j;
                attd[o] = c.att[o] * dropout_scale_at(&mk, index);
                if (attd[o] == 0.0f) dropped++;
                else {
                    kept++;
                    assert_true(fabsf(attd[o] - c.att[o] / 0.7f) <= 1e-6f * c.att[o]);
                }
            }
            for (int e = 0; e < hd; e++) {
                const float *vg = c.v + (size_t)(h / (H / Hkv)) * hd + e; /* kv head of h, column e */
                double acc = 0.0;
                for (int j = 0; j <= i; j++)
                    acc += (double)attd[((size_t)bh * T + i) * T + j] * vg[((size_t)b * T + j) * Hkv * hd];
                ye = fmax(ye, fabs(acc - c.y[((size_t)b * T + i) * H * hd + (size_t)h * hd + e]));
            }
        }
    printf("  attention dropout r 0.3, T %d: %ld of %ld probabilities dropped; y vs P̃v loops %.2e\n", T, dropped,
           dropped + kept, ye);
    assert_true(dropped > 0.15 * (dropped + kept) && dropped < 0.45 * (dropped + kept));
    assert_true(ye < 1e-5);
    float *dq = calloc(qn, 4), *dk = calloc(kn, 4), *dv = calloc(kn, 4), *scr = malloc(nt * (T + ATTN_BLOCK) * T * 4);
    float *dqr = calloc(qn, 4), *dkr = calloc(kn, 4), *dvr = calloc(kn, 4);
    attn_backward(dq, dk, dv, c.w, c.att, &c.dr, 1, c.q, c.k, c.v, scr, B, T, H, Hkv, hd);
    attn_backward_ref(dqr, dkr, dvr, c.w, c.att, attd, c.q, c.k, c.v, B, T, H, Hkv, hd);
    double e = fmax(max_abs_diff(dq, dqr, qn), fmax(max_abs_diff(dk, dkr, kn), max_abs_diff(dv, dvr, kn)));
    printf("  attention dropout backward, T %d, sgemm vs loops: %.2e\n", T, e);
    assert_true(e < 1e-4);
    if (fd) {
        assert_true(fd_check("attention dropout dq", c.q, dq, qn, dattn_obj, &c, 1e-2f, 300, 1e-12) < 5e-3);
        assert_true(fd_check("attention dropout dk", c.k, dk, kn, dattn_obj, &c, 1e-2f, 300, 1e-12) < 5e-3);
        assert_true(fd_check("attention dropout dv", c.v, dv, kn, dattn_obj, &c, 1e-2f, 300, 1e-12) < 5e-3);
    }
    free(c.q); free(c.k); free(c.v); free(c.att); free(c.scr); free(c.y); free(c.w); free(attd);
    free(dq); free(dk); free(dv); free(scr); free(dqr); free(dkr); free(dvr);
}

static void test_attention_dropout(void **state) {
    (void)state;
    dattn_check(2, 7, 4, 2, 4, 5, 1);
    /* several row blocks (T 70 > ATTN_BLOCK), odd row0; its draws leave the later tests' inputs as they were */
    const gl_rng saved = rng;
    dattn_check(1, 70, 2, 1, 4, 3, 0);
    rng = saved;
}

typedef struct { float *a, *b, *g, *w; long n; } glu_ctx;
static double glu_obj(void *p) {
    glu_ctx *c = p;
    swiglu_forward(c->g, c->a, c->b, c->n);
    return dot(c->g, c->w, c->n);
}

static void test_swiglu(void **state) {
    (void)state;
    long n = 200;
    glu_ctx c = {randn(n, 2), randn(n, 1), malloc(n * 4), randn(n, 1), n};
    float *da = calloc(n, 4), *db = calloc(n, 4);
    swiglu_backward(da, db, c.w, c.a, c.b, n);
    assert_true(fd_check("swiglu da", c.a, da, n, glu_obj, &c, 1e-2f, 400, 1e-12) < 5e-3);
    assert_true(fd_check("swiglu db", c.b, db, n, glu_obj, &c, 1e-2f, 400, 1e-12) < 5e-3);
    free(c.a); free(c.b); free(c.g); free(c.w); free(da); free(db);
}

typedef struct { float *logits, *probs, *mask; int *tg; int n, v; } xent_ctx;
static double xent_obj(void *p) {
    xent_ctx *c = p;
    return xent_forward(c->probs, NULL, c->logits, c->tg, c->mask, c->n, c->v);
}

static void test_xent(void **state) {
    (void)state;
    int n = 10, v = 7;
    xent_ctx c = {randn(n * v, 2), malloc(n * v * 4), malloc(n * 4), malloc(n * sizeof(int)), n, v};
    for (int i = 0; i < n; i++) {
        c.tg[i] = (int)rng_below(&rng, v);
        c.mask[i] = i % 3 ? 1.0f : 0.0f;
    }
    float *dl = malloc(n * v * 4);
    xent_obj(&c);
    xent_backward(dl, c.probs, c.tg, c.mask, 1.0f, n, v);
    assert_true(fd_check("cross-entropy dlogits", c.logits, dl, n * v, xent_obj, &c, 1e-2f, 400, 1e-12) < 5e-3);
    free(c.logits); free(c.probs); free(c.mask); free(c.tg); free(dl);
}

typedef struct { float *x, *w1, *b1, *w2, *b2, *p, *pre, *hid, *wp; int n, d, r; } router_ctx;
static int router_relu; /* 1: the paper's ReLU router */
static double router_obj(void *p) {
    router_ctx *c = p;
    router_forward(c->p, c->pre, c->hid, c->x, c->w1, c->b1, c->w2, c->b2, c->n, c->d, c->r, router_relu);
    return dot(c->p, c->wp, c->n);
}

static void router_check(void) {
    printf("  router hidden activation: %s\n", router_relu ? "ReLU (tsa_form paper)" : "GELU");
    /* ReLU: a step of 1e-3 (rounding ≈ 6e-8·|f|/h ≈ 2e-4 of max|g|) keeps the 144 pre-activations' kinks
     * out of reach; 1e-2 put one within a step in this draw */
    const float h = router_relu ? 1e-3f : 1e-2f;
    int n = 9, d = 12, r = 16;
    router_ctx c = {randn(n * d, 1), randn(r * d, 0.4f), randn(r, 0.3f), randn(r, 0.5f), randn(1, 0.3f),
                    malloc(n * 4), malloc(n * r * 4), malloc(n * r * 4), randn(n, 1), n, d, r};
    float *dx = calloc(n * d, 4), *dw1 = calloc(r * d, 4), *db1 = calloc(r, 4), *dw2 = calloc(r, 4),
          *db2 = calloc(1, 4), *scr = malloc(n * r * 4);
    router_obj(&c);
    router_backward(dx, dw1, db1, dw2, db2, c.wp, c.p, c.pre, c.hid, c.x, c.w1, c.w2, scr, n, d, r, router_relu);
    assert_true(fd_check("router dx", c.x, dx, n * d, router_obj, &c, h, 400, 1e-12) < 5e-3);
    assert_true(fd_check("router dW1", c.w1, dw1, r * d, router_obj, &c, h, 400, 1e-12) < 5e-3);
    assert_true(fd_check("router db1", c.b1, db1, r, router_obj, &c, h, 400, 1e-12) < 5e-3);
    assert_true(fd_check("router dw2", c.w2, dw2, r, router_obj, &c, h, 400, 1e-12) < 5e-3);
    assert_true(fd_check("router db2", c.b2, db2, 1, router_obj, &c, h, 400, 1e-12) < 5e-3);
    free(c.x); free(c.w1); free(c.b1); free(c.w2); free(c.b2); free(c.p); free(c.pre); free(c.hid);
    free(c.wp); free(dx); free(dw1); free(db1); free(dw2); free(db2); free(scr);
}
static void test_router(void **state) {
    (void)state;
    router_relu = 0;
    router_check();
}
/* ReLU is piecewise linear: a difference is exact unless a pre-activation lies within a step of 0 (the
 * check would show it as a large error) */
static void test_router_relu(void **state) {
    (void)state;
    router_relu = 1;
    router_check();
    router_relu = 0;
}

/* ---------------- whole model ---------------- */

typedef struct {
    gl_model m;
    int *tok, *tg;
    float *mask;
    int B, T;
} model_ctx;

/* MoD / random: the selection of the unperturbed forward, (L, B·T), and the
 * finite-difference evaluations whose selection differed from it */
static float *sel_ref;
static long sel_flips;

static double model_obj(void *p) {
    model_ctx *c = p;
    double f = model_forward(&c->m, c->tok, c->tg, c->mask, c->B, c->T);
    if (sel_ref) {
        const int N = c->B * c->T;
        int flip = 0;
        for (int n = 0; n < c->m.cfg.n_layer; n++)
            flip |= memcmp(sel_ref + (size_t)n * N, c->m.A[n].keep, (size_t)N * sizeof(float)) != 0;
        sel_flips += flip;
    }
    return f;
}

/* Called after the weights are set, before the check (NULL: nothing). */
static void (*g_after_init)(gl_model *m);

static void check_model(const char *label, void (*tweak)(gl_model_config *)) {
    gl_model_config cfg;
    config_defaults(&cfg);
    cfg.vocab_size = 11;
    cfg.d_model = 16;
    cfg.n_layer = 3;
    cfg.n_head = 4;
    cfg.n_kv_head = 2;
    cfg.d_ff = 24;
    cfg.seq_len = 6;
    tweak(&cfg);
    model_ctx c = {.B = 2, .T = cfg.seq_len};
    char err[256];
    assert_int_equal(model_init(&c.m, &cfg, c.B, err, sizeof err), 0);
    model_init_weights(&c.m, 7);
    fixture_spread_weights(&c.m, &rng); /* non-trivial: bigger weights, norms away from 1, open gates */
    if (g_after_init) g_after_init(&c.m);
    int n = c.B * c.T;
    c.tok = malloc(n * sizeof(int));
    c.tg = malloc(n * sizeof(int));
    c.mask = malloc(n * sizeof(float));
    for (int i = 0; i < n; i++) {
        c.tok[i] = (int)rng_below(&rng, cfg.vocab_size);
        c.tg[i] = (int)rng_below(&rng, cfg.vocab_size);
        c.mask[i] = i % 5 == 3 ? 0.0f : 1.0f;
    }
    printf("model %s: loss %.6f\n", label, model_obj(&c));
    const int hard = config_routing_hard(&cfg), NT = c.B * c.T, L = cfg.n_layer;
    if (hard) {
        sel_ref = malloc((size_t)L * NT * sizeof(float));
        long kept = 0;
        for (int n = 0; n < L; n++) {
            memcpy(sel_ref + (size_t)n * NT, c.m.A[n].keep, (size_t)NT * sizeof(float));
            for (int t = 0; t < NT; t++) kept += n >= 1 && c.m.A[n].keep[t] > 0.5f;
        }
        sel_flips = 0;
        printf("model %s: %ld of %d (token, block >= 1) pairs selected, α %.4f\n", label, kept, (L - 1) * NT,
               (double)c.m.active_frac);
        assert_true(kept > 0 && kept < (long)(L - 1) * NT); /* something is routed away, something runs */
    }
    model_zero_grad(&c.m);
    model_backward(&c.m);
    float *g = malloc(c.m.n_params * sizeof(float));
    memcpy(g, c.m.grads, c.m.n_params * sizeof(float));
    double worst = 0;
    for (int i = 0; i < c.m.n_tensors; i++) {
        const gl_tensor *t = &c.m.tensors[i];
        double e = fd_check(t->name, c.m.params + t->offset, g + t->offset, t->size, model_obj, &c, getenv("FDH") ? (float)atof(getenv("FDH")) : 2e-3f, 24, 2e-2);
        if (e > worst) worst = e;
    }
    printf("model %s: worst rel err %.2e over %d tensors\n", label, worst, c.m.n_tensors);
    if (hard) printf("model %s: %ld finite-difference evaluations changed the selection (must be 0)\n", label, sel_flips);
    assert_true(worst < 1e-2);
    if (hard) {
        assert_true(sel_flips == 0);
        free(sel_ref);
        sel_ref = NULL;
    }
    free(g); free(c.tok); free(c.tg); free(c.mask);
    model_free(&c.m);
}

static void v_base(gl_model_config *c) { (void)c; }
static void v_noqk_untied(gl_model_config *c) { c->qk_norm = 0; c->tied = 0; c->n_kv_head = 4; }
static void v_rf_plus(gl_model_config *c) { c->value_residual = VR_RESFORMER; }
static void v_rf_learn(gl_model_config *c) { c->value_residual = VR_RESFORMER; c->resformer_variant = RF_LEARNABLE; }
static void v_rf_ident(gl_model_config *c) { c->value_residual = VR_RESFORMER; c->resformer_variant = RF_IDENTITY; }
static void v_sat(gl_model_config *c) { c->value_residual = VR_SATFORMER; }
static void v_headgate(gl_model_config *c) { c->value_residual = VR_HEADGATE; }
/* SATFormer gate functions (cfg n_kv_head = 2, so softmax is over two heads) and the gate bias */
static void v_sat_sigmoid(gl_model_config *c) { v_sat(c); c->sat_gate = SG_SIGMOID; }
static void v_sat_softmax(gl_model_config *c) { v_sat(c); c->sat_gate = SG_SOFTMAX; }
static void v_sat_softmax4(gl_model_config *c) { v_sat(c); c->sat_gate = SG_SOFTMAX; c->n_kv_head = 4; }
static void v_sat_softmax_sigmoid(gl_model_config *c) { v_sat(c); c->sat_gate = SG_SOFTMAX_SIGMOID; }
static void v_sat_tanh(gl_model_config *c) { v_sat(c); c->sat_gate = SG_TANH; }
static void v_sat_identity(gl_model_config *c) { v_sat(c); c->sat_gate = SG_IDENTITY; }
static void v_sat_relu_bias(gl_model_config *c) { v_sat(c); c->sat_gate_bias = 1; c->sat_gate_bias_init = 0.3f; }
static void v_sat_sm_sig_bias(gl_model_config *c) { v_sat_softmax_sigmoid(c); c->sat_gate_bias = 1; c->sat_gate_bias_init = -0.2f; }
static void v_rf_plus_l1(gl_model_config *c) { v_rf_plus(c); c->rf_lambda1_init = 0.09f; }
static void v_sat_lastk(gl_model_config *c) { c->value_residual = VR_SATFORMER; c->n_layer = 4; c->vr_last_k = 2; }
static void v_tsa(gl_model_config *c) { c->depth_routing = DR_TSA; c->tsa_lambda = 0.1f; c->router_init_bias = 0.0f; }
static void v_tsa_sat(gl_model_config *c) { v_tsa(c); c->value_residual = VR_SATFORMER; }
static void v_ee(gl_model_config *c) { c->depth_routing = DR_EARLY_EXIT; }
static void v_ee_uni(gl_model_config *c) { c->depth_routing = DR_EARLY_EXIT; c->exit_weighting = EE_WEIGHT_UNIFORM; }
/* the TSA paper's official early exit: an exit norm per block (layers.{n}.exit_norm), uniform weights; 4 blocks
 * so that two blocks have exit norms of their own besides block 0's */
static void v_ee_paper(gl_model_config *c) { v_ee_uni(c); c->exit_form = XF_PAPER; c->n_layer = 4; }
static void v_dense(gl_model_config *c) { c->cross_layer = CL_DENSEFORMER; }
static void v_dense_tsa_sat(gl_model_config *c) { v_tsa(c); c->value_residual = VR_SATFORMER; c->cross_layer = CL_DENSEFORMER; }
static void v_hyper(gl_model_config *c) { c->cross_layer = CL_HYPER; }
static void v_hyper3_rf(gl_model_config *c) { c->cross_layer = CL_HYPER; c->hc_expansion = 3; c->value_residual = VR_RESFORMER; }
static void v_mudd(gl_model_config *c) { c->cross_layer = CL_MUDD; c->n_layer = 4; }
static void v_mudd_sat(gl_model_config *c) { c->cross_layer = CL_MUDD; c->value_residual = VR_SATFORMER; }
static void v_mod(gl_model_config *c) { c->depth_routing = DR_MOD; c->mod_capacity = 0.5f; c->mod_every = 1; }
static void v_mod2_sat(gl_model_config *c) {
    c->depth_routing = DR_MOD; c->mod_capacity = 0.34f; c->mod_every = 2; c->n_layer = 4; c->value_residual = VR_SATFORMER;
}
static void v_random(gl_model_config *c) { c->depth_routing = DR_RANDOM; c->random_alpha = 0.5f; }
/* the TSA paper's own model (docs/model.md "The TSA paper's own configuration") and its pieces on either side.
 * gpt2 draws its Linear weights from PyTorch's U(±1/√fan_in) (std 0.14 at d 16, seven times the llama
 * rows' 0.02): spread by 8 like every matrix, q·k reaches logits of ~20 without a qk-norm and the
 * softmax's curvature puts a step of 2e-3 far from the tangent (the error falls as h shrinks: a
 * curvature, not a gradient, error).  gpt2_unspread brings those rows back to their drawn size, where
 * the logits are O(1) as in the llama instances. */
static void gpt2_unspread(gl_model *m) {
    static const char *const rows[] = {".attn.wq", ".attn.wk", ".attn.wv", ".ffn.w1", ".fc1_w", ".fc2_w"};
    for (int i = 0; i < m->n_tensors; i++) {
        const gl_tensor *t = &m->tensors[i];
        for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
            const size_t nl = strlen(t->name), nr = strlen(rows[r]);
            if (nl < nr || strcmp(t->name + nl - nr, rows[r])) continue;
            for (size_t j = 0; j < t->size; j++) m->params[t->offset + j] /= 8.0f;
        }
    }
}
static void v_gpt2(gl_model_config *c) { c->backbone = BB_GPT2; c->qk_norm = 0; c->norm_eps = 1e-5f; }
static void v_gpt2_mha_untied(gl_model_config *c) { v_gpt2(c); c->n_kv_head = 4; c->tied = 0; }
static void v_gpt2_tsa_paper(gl_model_config *c) { v_gpt2(c); v_tsa(c); c->tsa_form = TF_PAPER; c->router_init_bias = -1.0f; }
static void v_gpt2_tsa(gl_model_config *c) { v_gpt2(c); v_tsa(c); }
static void v_tsa_paper(gl_model_config *c) { v_tsa(c); c->tsa_form = TF_PAPER; }
static void v_gpt2_sat(gl_model_config *c) { v_gpt2(c); v_sat(c); }
static void v_gpt2_rf(gl_model_config *c) { v_gpt2(c); v_rf_plus(c); }
static void v_gpt2_ee(gl_model_config *c) { v_gpt2(c); v_ee(c); }
/* the official early exit on the official backbone: LayerNorm exit norms with biases (layers.{n}.exit_norm_bias) */
static void v_gpt2_ee_paper(gl_model_config *c) { v_gpt2(c); v_ee_paper(c); }
static void v_gpt2_random(gl_model_config *c) { v_gpt2(c); v_random(c); }
static void v_gpt2_mod(gl_model_config *c) { v_gpt2(c); v_mod(c); }
/* dropout on (fixed masks: the key below stays for every difference), on both backbones and the paper's TSA */
static void v_gpt2_drop(gl_model_config *c) { v_gpt2_tsa_paper(c); c->dropout = 0.25f; }
static void v_drop(gl_model_config *c) { v_tsa(c); v_rf_plus(c); c->dropout = 0.1f; }
static void set_drop_key(gl_model *m) { m->drop_key = 0x5eedULL; m->route_row0 = 3; }
static void drop_gpt2_after(gl_model *m) { gpt2_unspread(m); set_drop_key(m); }
static void test_model_gpt2_dropout(void **s) {
    (void)s;
    g_after_init = drop_gpt2_after;
    check_model("v_gpt2_drop (tsa paper, dropout 0.25)", v_gpt2_drop);
    g_after_init = NULL;
}
static void test_model_dropout(void **s) {
    (void)s;
    g_after_init = set_drop_key;
    check_model("v_drop (tsa + resformer, dropout 0.1)", v_drop);
    g_after_init = NULL;
}

/* gpt2's and the paper router's initialisation (variants.h): U(±1/√fan_in) for the Linears and their
 * biases (max |w| under the bound and near it, sd bound/√3), N(0, 0.02/√(2L)) for the residual
 * projections, N(0, 0.02) for the embeddings, LayerNorm 1 and 0, the router's output bias; a seed
 * repeats its draw and another seed draws another. */
static double sd_of(const float *p, size_t n, double *maxabs) {
    double s = 0, m = 0;
    for (size_t i = 0; i < n; i++) s += (double)p[i] * p[i], m = fmax(m, fabs(p[i]));
    *maxabs = m;
    return sqrt(s / n);
}
static void test_init_gpt2(void **s) {
    (void)s;
    gl_model_config cfg;
    config_defaults(&cfg);
    cfg.d_model = 64, cfg.n_layer = 4, cfg.n_head = 4, cfg.d_ff = 256, cfg.seq_len = 32;
    v_gpt2(&cfg);
    cfg.depth_routing = DR_TSA, cfg.tsa_form = TF_PAPER, cfg.router_init_bias = -1.0f;
    gl_model m, m2;
    char err[256];
    assert_int_equal(model_init(&m, &cfg, 1, err, sizeof err), 0);
    assert_int_equal(model_init(&m2, &cfg, 1, err, sizeof err), 0);
    model_init_weights(&m, 5);
    const struct {
        const char *name;
        int uniform;
        double scale; /* uniform: the bound; normal: the sd; < 0: constant -scale - 1 */
    } rows[] = {
        {"embed", 0, 0.02}, {"pos_embed", 0, 0.02}, {"layers.1.attn.wq", 1, 1 / 8.0}, {"layers.1.attn.wv", 1, 1 / 8.0},
        {"layers.1.attn.wo", 0, 0.02 / sqrt(8.0)}, {"layers.2.ffn.w1", 1, 1 / 8.0}, {"layers.2.ffn.b1", 1, 1 / 8.0},
        {"layers.2.ffn.w2", 0, 0.02 / sqrt(8.0)}, {"layers.2.ffn.b2", 1, 1 / 16.0}, {"routers.0.fc1_w", 1, 1 / 8.0},
        {"routers.0.fc1_b", 1, 1 / 8.0}, {"routers.0.fc2_w", 1, 1 / 4.0},
    };
    for (size_t k = 0; k < sizeof rows / sizeof rows[0]; k++) {
        const gl_tensor *t = model_find_tensor(&m, rows[k].name);
        assert_non_null(t);
        double mx, sd = sd_of(m.params + t->offset, t->size, &mx);
        const double want = rows[k].uniform ? rows[k].scale / sqrt(3.0) : rows[k].scale;
        /* sampling error of an sd over n draws ≈ want/√(2n): 5 of those, at least 2 % */
        const double tol = fmax(5.0 / sqrt(2.0 * t->size), 0.02) * want;
        printf("  %-18s n=%-5zu sd %.5f (want %.5f ± %.5f), max|w| %.4f%s\n", rows[k].name, t->size, sd, want, tol, mx,
               rows[k].uniform ? " (bound)" : "");
        assert_true(fabs(sd - want) <= tol);
        if (rows[k].uniform) assert_true(mx <= rows[k].scale && mx > 0.8 * rows[k].scale);
    }
    const gl_tensor *b = model_find_tensor(&m, "routers.2.fc2_b"), *g = model_find_tensor(&m, "layers.3.ffn_norm"),
                    *gb = model_find_tensor(&m, "final_norm_bias");
    assert_true(m.params[b->offset] == -1.0f && m.params[g->offset] == 1.0f && m.params[gb->offset] == 0.0f);
    model_init_weights(&m2, 5);
    assert_memory_equal(m.params, m2.params, m.n_params * sizeof(float));
    model_init_weights(&m2, 6);
    assert_true(memcmp(m.params, m2.params, m.n_params * sizeof(float)) != 0);
    model_free(&m);
    model_free(&m2);
}

/* Dropout is off without a key (evaluation): the same loss as model.dropout = 0, bit for bit; a key
 * gives another loss, the same key the same loss, another key another; the masks keep about 1 − r. */
static void test_dropout_keys(void **s) {
    (void)s;
    gl_model_config cfg;
    config_defaults(&cfg);
    cfg.vocab_size = 11, cfg.d_model = 16, cfg.n_layer = 2, cfg.n_head = 4, cfg.d_ff = 24, cfg.seq_len = 8;
    v_gpt2(&cfg);
    gl_model a, b;
    char err[256];
    assert_int_equal(model_init(&a, &cfg, 2, err, sizeof err), 0);
    cfg.dropout = 0.1f;
    assert_int_equal(model_init(&b, &cfg, 2, err, sizeof err), 0);
    model_init_weights(&a, 3);
    model_init_weights(&b, 3);
    int tok[16], tg[16];
    for (int i = 0; i < 16; i++) tok[i] = (i * 7) % 11, tg[i] = (i * 5 + 1) % 11;
    const float la = model_forward(&a, tok, tg, NULL, 2, 8), l0 = model_forward(&b, tok, tg, NULL, 2, 8);
    b.drop_key = dropout_train_key(1, 0);
    const float l1 = model_forward(&b, tok, tg, NULL, 2, 8), l1b = model_forward(&b, tok, tg, NULL, 2, 8);
    b.drop_key = dropout_train_key(1, 1);
    const float l2 = model_forward(&b, tok, tg, NULL, 2, 8);
    printf("  dropout 0.1: no key %.7f (dropout 0: %.7f), key(step 0) %.7f twice %.7f, key(step 1) %.7f\n", l0, la, l1,
           l1b, l2);
    assert_true(l0 == la && l1 == l1b && l1 != l0 && l2 != l1);
    assert_true(dropout_train_key(1, 0) != dropout_train_key(2, 0) && dropout_train_key(1, 0) != 0);
    float ones[4096];
    for (int i = 0; i < 4096; i++) ones[i] = 1.0f;
    gl_dropout dr = {b.drop_key, 0.1f, 0};
    dropout_rows(ones, 64, 64, &dr, DROP_FFN_HIDDEN, 1);
    int zeros = 0;
    for (int i = 0; i < 4096; i++) {
        zeros += ones[i] == 0.0f;
        assert_true(ones[i] == 0.0f || ones[i] == 1.0f / 0.9f);
    }
    printf("  dropout_rows r 0.1: %d of 4096 dropped (expected 410 ± 3 sd = 57)\n", zeros);
    assert_true(abs(zeros - 410) <= 57);
    /* the chunked vector loop is the definition (dropout_scale_at) bit for bit, from an odd global
     * index too (row0 3, C 261 odd, rows longer than a chunk); either entry of a pair (its two halves
     * of one hash) drops about r = 0.3 of its 3 × 261 / 2 ≈ 392, 117 (3 sd = 3·√(392·0.3·0.7) ≈ 27) */
    enum { RN = 3, RC = 261 };
    float xs[RN * RC];
    for (int i = 0; i < RN * RC; i++) xs[i] = 1.0f + (float)i / 64.0f;
    gl_dropout dr3 = {b.drop_key, 0.3f, 3};
    dropout_rows(xs, RN, RC, &dr3, DROP_EMBED, 0);
    const gl_drop_mask mk = dropout_mask(&dr3, DROP_EMBED, 0);
    int differ = 0, dz[2] = {0, 0};
    for (int i = 0; i < RN * RC; i++) {
        const uint64_t index = (uint64_t)3 * RC + (uint64_t)i;
        differ += xs[i] != (1.0f + (float)i / 64.0f) * dropout_scale_at(&mk, index);
        dz[index & 1] += xs[i] == 0.0f;
    }
    printf("  dropout_rows vs dropout_scale_at from odd indices: %d of %d differ; r 0.3 dropped %d even, %d odd "
           "(about 117 of 392 each)\n", differ, RN * RC, dz[0], dz[1]);
    assert_true(differ == 0 && abs(dz[0] - 117) <= 27 && abs(dz[1] - 117) <= 27);
    model_free(&a);
    model_free(&b);
}

#define MODEL_TEST(fn, variant) \
    static void fn(void **s) { (void)s; check_model(#variant, variant); }
#define GPT2_TEST(fn, variant)                                                                              \
    static void fn(void **s) {                                                                              \
        (void)s;                                                                                           \
        g_after_init = gpt2_unspread;                                                                       \
        check_model(#variant, variant);                                                                     \
        g_after_init = NULL;                                                                                \
    }
MODEL_TEST(test_model_base, v_base)
MODEL_TEST(test_model_noqk_untied, v_noqk_untied)
MODEL_TEST(test_model_resformer_plus, v_rf_plus)
MODEL_TEST(test_model_resformer_learnable, v_rf_learn)
MODEL_TEST(test_model_resformer_identity, v_rf_ident)
MODEL_TEST(test_model_satformer, v_sat)
MODEL_TEST(test_model_satformer_lastk, v_sat_lastk)
MODEL_TEST(test_model_sat_sigmoid, v_sat_sigmoid)
MODEL_TEST(test_model_sat_softmax, v_sat_softmax)
MODEL_TEST(test_model_sat_softmax4, v_sat_softmax4)
MODEL_TEST(test_model_sat_softmax_sigmoid, v_sat_softmax_sigmoid)
MODEL_TEST(test_model_sat_tanh, v_sat_tanh)
MODEL_TEST(test_model_sat_identity, v_sat_identity)
MODEL_TEST(test_model_sat_relu_bias, v_sat_relu_bias)
MODEL_TEST(test_model_sat_softmax_sigmoid_bias, v_sat_sm_sig_bias)
MODEL_TEST(test_model_resformer_plus_lambda1_init, v_rf_plus_l1)
GPT2_TEST(test_model_gpt2, v_gpt2)
GPT2_TEST(test_model_gpt2_mha_untied, v_gpt2_mha_untied)
GPT2_TEST(test_model_gpt2_tsa_paper, v_gpt2_tsa_paper)
GPT2_TEST(test_model_gpt2_tsa, v_gpt2_tsa)
MODEL_TEST(test_model_tsa_paper, v_tsa_paper)
GPT2_TEST(test_model_gpt2_satformer, v_gpt2_sat)
GPT2_TEST(test_model_gpt2_resformer, v_gpt2_rf)
GPT2_TEST(test_model_gpt2_early_exit, v_gpt2_ee)
GPT2_TEST(test_model_gpt2_early_exit_paper, v_gpt2_ee_paper)
GPT2_TEST(test_model_gpt2_random, v_gpt2_random)
GPT2_TEST(test_model_gpt2_mod, v_gpt2_mod)

/* softmax with block 1's KV head 0 fixed at 0.7: the other head's gate still
 * depends on both logits, the fixed one passes no gradient. */
static void fix_head0(gl_model *m) { model_set_gate_override(m, 1, 0, GATE_CONST, 0.7f); }
static void test_model_sat_softmax_override(void **s) {
    (void)s;
    g_after_init = fix_head0;
    check_model("v_sat_softmax4 + override (1, 0)", v_sat_softmax4);
    g_after_init = NULL;
}

/* The start of ResFormer's λ1 (model.resformer_lambda1_init): auto keeps each
 * variant's own (plus s = L so λ1 = L/M, learnable 0.5); a value sets λ1 of
 * every mixing block; and the gate bias starts at model.sat_gate_bias_init. */
static void test_init_knobs(void **s) {
    (void)s;
    char err[256];
    const struct {
        gl_resformer_variant v;
        float init, want;
    } cases[] = {{RF_PLUS, NAN, 3.0f / 2.0f}, {RF_PLUS, 0.09f, 0.09f}, {RF_LEARNABLE, NAN, 0.5f}, {RF_LEARNABLE, 1.2f, 1.2f}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        gl_model_config cfg;
        config_defaults(&cfg);
        cfg.d_model = 16; cfg.n_layer = 3; cfg.n_head = 2; cfg.n_kv_head = 2; cfg.d_ff = 16; cfg.seq_len = 4;
        cfg.value_residual = VR_RESFORMER;
        cfg.resformer_variant = cases[k].v;
        cfg.rf_lambda1_init = cases[k].init;
        gl_model m;
        assert_int_equal(model_init(&m, &cfg, 1, err, sizeof err), 0);
        model_init_weights(&m, 1);
        for (int n = 1; n < 3; n++) {
            float l1, l2;
            model_resformer_lambda(&m, n, &l1, &l2);
            printf("  λ1 init %-9s %-5g block %d: %.7g (want %.7g)\n", config_resformer_variant_name(cases[k].v),
                   (double)cases[k].init, n, (double)l1, (double)cases[k].want);
            assert_true(fabsf(l1 - cases[k].want) <= 1e-6f * cases[k].want);
        }
        model_free(&m);
    }
    gl_model_config cfg;
    config_defaults(&cfg);
    cfg.d_model = 16; cfg.n_layer = 3; cfg.n_head = 2; cfg.n_kv_head = 2; cfg.d_ff = 16; cfg.seq_len = 4;
    cfg.value_residual = VR_SATFORMER;
    cfg.sat_gate_bias = 1;
    cfg.sat_gate_bias_init = 1.2f;
    gl_model m;
    assert_int_equal(model_init(&m, &cfg, 1, err, sizeof err), 0);
    model_init_weights(&m, 1);
    assert_null(model_find_tensor(&m, "layers.0.attn.alpha_bias")); /* block 0 makes V1, it does not mix */
    for (int n = 1; n < 3; n++) {
        char name[GL_NAME_MAX];
        snprintf(name, sizeof name, "layers.%d.attn.alpha_bias", n);
        const gl_tensor *t = model_find_tensor(&m, name);
        assert_non_null(t);
        assert_int_equal((int)t->size, 2);
        for (size_t j = 0; j < t->size; j++) assert_true(m.params[t->offset + j] == 1.2f);
    }
    model_free(&m);
    printf("  init knobs: ResFormer λ1 (auto, set) and the SATFormer gate bias start as configured\n");
}

/* train.weight_decay_policy = all (gl_adamw.decay_all): with zero gradients
 * an AdamW step is p ← p·(1 − lr·wd) on the tensors that decay and p on the
 * others; under all, every tensor decays (norm gains, gates, biases). */
static void test_decay_all(void **s) {
    (void)s;
    char err[256];
    gl_model_config cfg;
    config_defaults(&cfg);
    cfg.d_model = 16; cfg.n_layer = 3; cfg.n_head = 2; cfg.n_kv_head = 2; cfg.d_ff = 16; cfg.seq_len = 4;
    cfg.value_residual = VR_SATFORMER;
    cfg.sat_gate_bias = 1;
    cfg.sat_gate_bias_init = 1.0f;
    for (int all = 0; all <= 1; all++) {
        gl_model m;
        assert_int_equal(model_init(&m, &cfg, 1, err, sizeof err), 0);
        model_init_weights(&m, 3);
        float *p0 = malloc(m.n_params * sizeof(float));
        memcpy(p0, m.params, m.n_params * sizeof(float));
        model_zero_grad(&m);
        gl_adamw opt = {0.9f, 0.95f, 1e-8f, 0.1f, 1.0f, all};
        adamw_step(&m, &opt, 0.5f, 1);
        int n_decayed = 0;
        for (int i = 0; i < m.n_tensors; i++) {
            const gl_tensor *t = &m.tensors[i];
            const float want = (t->decay || all) ? 1.0f - 0.5f * 0.1f : 1.0f;
            for (size_t j = 0; j < t->size; j++) assert_true(m.params[t->offset + j] == p0[t->offset + j] * want);
            n_decayed += t->decay || all;
        }
        printf("  weight_decay_policy %-8s: %d of %d tensors decayed\n", all ? "all" : "matrices", n_decayed, m.n_tensors);
        if (all) assert_int_equal(n_decayed, m.n_tensors);
        else assert_true(n_decayed < m.n_tensors && !model_find_tensor(&m, "layers.1.attn_norm")->decay);
        free(p0);
        model_free(&m);
    }
}
MODEL_TEST(test_model_headgate, v_headgate)
MODEL_TEST(test_model_tsa, v_tsa)
MODEL_TEST(test_model_tsa_satformer, v_tsa_sat)
MODEL_TEST(test_model_early_exit, v_ee)
MODEL_TEST(test_model_early_exit_uniform, v_ee_uni)
MODEL_TEST(test_model_early_exit_paper, v_ee_paper)
MODEL_TEST(test_model_denseformer, v_dense)
MODEL_TEST(test_model_denseformer_tsa_satformer, v_dense_tsa_sat)
MODEL_TEST(test_model_hyper, v_hyper)
MODEL_TEST(test_model_hyper3_resformer, v_hyper3_rf)
MODEL_TEST(test_model_mudd, v_mudd)
MODEL_TEST(test_model_mudd_satformer, v_mudd_sat)
MODEL_TEST(test_model_mod, v_mod)
MODEL_TEST(test_model_mod_every2_satformer, v_mod2_sat)
MODEL_TEST(test_model_random, v_random)

/* MoD's masked attention: with every token kept it is attn_forward (the
 * softmax sums in another order: 1e-6); with a mask, y and att against the
 * plain loops (attn_forward_ref with the mask, 1e-5), and dq, dk, dv from
 * attn_backward against finite differences (a dropped query's row is its own
 * value, y_i = v_i, which attn_backward's P = e_i row differentiates too). */
typedef struct { float *q, *k, *v, *y, *att, *w, *keep; int B, T, H, Hkv, hd; } mattn_ctx;
static double mattn_obj(void *p) {
    mattn_ctx *c = p;
    routing_attn_forward(c->y, c->att, c->q, c->k, c->v, c->keep, c->B, c->T, c->H, c->Hkv, c->hd);
    return dot(c->y, c->w, (size_t)c->B * c->T * c->H * c->hd);
}

static void test_masked_attention(void **state) {
    (void)state;
    int B = 2, T = 70, H = 4, Hkv = 2, hd = 8;
    size_t qn = (size_t)B * T * H * hd, kn = (size_t)B * T * Hkv * hd, an = (size_t)B * H * T * T;
    mattn_ctx c = {randn(qn, 1), randn(kn, 1), randn(kn, 1), malloc(qn * 4), malloc(an * 4), randn(qn, 1),
                   malloc((size_t)B * T * 4), B, T, H, Hkv, hd};
    float *y0 = malloc(qn * 4), *a0 = malloc(an * 4);
    for (int t = 0; t < B * T; t++) c.keep[t] = 1.0f;
    mattn_obj(&c);
    attn_forward(y0, a0, c.q, c.k, c.v, B, T, H, Hkv, hd);
    double worst = 0;
    for (size_t i = 0; i < qn; i++) worst = fmax(worst, fabs(y0[i] - c.y[i]));
    printf("  masked attention, nothing masked, vs attn_forward: max abs diff %.2e\n", worst);
    assert_true(worst < 1e-6);
    for (int t = 0; t < B * T; t++) c.keep[t] = (t % 7 == 0 || t % 3 == 1) ? 1.0f : 0.0f;
    mattn_obj(&c);
    attn_forward_ref(y0, a0, c.q, c.k, c.v, c.keep, B, T, H, Hkv, hd); /* the plain loops with the mask */
    double wy = 0, wa = 0;
    for (size_t i = 0; i < qn; i++) wy = fmax(wy, fabs(y0[i] - c.y[i]));
    for (int bh = 0; bh < B * H; bh++) /* att is defined for j <= i only (attn.c) */
        for (int i = 0; i < T; i++)
            for (int j = 0; j <= i; j++) {
                const size_t o = ((size_t)bh * T + i) * T + j;
                wa = fmax(wa, fabs(a0[o] - c.att[o]));
            }
    printf("  masked attention vs plain loops with the mask: y %.2e, att %.2e\n", wy, wa);
    assert_true(wy < 1e-5 && wa < 1e-5); /* the dense check's bound */
    float *dq = calloc(qn, 4), *dk = malloc(kn * 4), *dv = malloc(kn * 4), *scr = malloc((size_t)64 * T * T * 4);
    attn_backward(dq, dk, dv, c.w, c.att, NULL, 0, c.q, c.k, c.v, scr, B, T, H, Hkv, hd);
    /* a masked key gets no gradient from any query but its own (dropped) row */
    double leak = 0;
    for (int t = 0; t < B * T; t++)
        if (c.keep[t] == 0.0f)
            for (int i = 0; i < Hkv * hd; i++) leak = fmax(leak, fabs(dk[(size_t)t * Hkv * hd + i]));
    printf("  masked attention: |dk| of masked keys %.2e (must be 0)\n", leak);
    assert_true(leak == 0.0);
    assert_true(fd_check("masked attention dq", c.q, dq, qn, mattn_obj, &c, 1e-2f, 300, 1e-12) < 5e-3);
    assert_true(fd_check("masked attention dk", c.k, dk, kn, mattn_obj, &c, 1e-2f, 300, 1e-12) < 5e-3);
    assert_true(fd_check("masked attention dv", c.v, dv, kn, mattn_obj, &c, 1e-2f, 300, 1e-12) < 5e-3);
    free(c.q); free(c.k); free(c.v); free(c.y); free(c.att); free(c.w); free(c.keep); free(y0); free(a0);
    free(dq); free(dk); free(dv); free(scr);
}

int main(void) {
    rng_seed(&rng, 12345);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ops_disjoint),   cmocka_unit_test(test_vexp), cmocka_unit_test(test_fd_check_kink),  cmocka_unit_test(test_matmul),
        cmocka_unit_test(test_rmsnorm),        cmocka_unit_test(test_rope),
        cmocka_unit_test(test_attention),      cmocka_unit_test(test_swiglu),
        cmocka_unit_test(test_xent),           cmocka_unit_test(test_router),
        cmocka_unit_test(test_model_base),     cmocka_unit_test(test_model_noqk_untied),
        cmocka_unit_test(test_model_resformer_plus), cmocka_unit_test(test_model_resformer_learnable),
        cmocka_unit_test(test_model_resformer_identity), cmocka_unit_test(test_model_satformer),
        cmocka_unit_test(test_model_satformer_lastk), cmocka_unit_test(test_model_tsa),
        cmocka_unit_test(test_model_tsa_satformer), cmocka_unit_test(test_model_early_exit),
        cmocka_unit_test(test_model_early_exit_uniform),
        cmocka_unit_test(test_model_denseformer), cmocka_unit_test(test_model_denseformer_tsa_satformer),
        cmocka_unit_test(test_model_hyper), cmocka_unit_test(test_model_hyper3_resformer),
        cmocka_unit_test(test_model_mudd), cmocka_unit_test(test_model_mudd_satformer),
        cmocka_unit_test(test_model_headgate),
        /* the model checks draw their random instances from one shared stream, so this order is part
         * of each instance; some instances put a finite-difference step across a ReLU kink or a top-k
         * tie (checked with FDH=1e-3: the error then drops to 1e-4), so reorder only with a rerun */
        cmocka_unit_test(test_model_mod), cmocka_unit_test(test_model_mod_every2_satformer),
        cmocka_unit_test(test_model_random), cmocka_unit_test(test_masked_attention),
        cmocka_unit_test(test_model_sat_sigmoid), cmocka_unit_test(test_model_sat_softmax),
        cmocka_unit_test(test_model_sat_softmax4), cmocka_unit_test(test_model_sat_softmax_sigmoid),
        cmocka_unit_test(test_model_sat_tanh), cmocka_unit_test(test_model_sat_identity),
        cmocka_unit_test(test_model_sat_relu_bias), cmocka_unit_test(test_model_sat_softmax_sigmoid_bias),
        cmocka_unit_test(test_model_sat_softmax_override),
        cmocka_unit_test(test_model_resformer_plus_lambda1_init),
        cmocka_unit_test(test_init_knobs), cmocka_unit_test(test_decay_all),
        /* added with the gpt2 backbone, after every older check so their random instances are unchanged */
        cmocka_unit_test(test_layernorm), cmocka_unit_test(test_gelu_bias), cmocka_unit_test(test_router_relu),
        cmocka_unit_test(test_model_gpt2), cmocka_unit_test(test_model_gpt2_mha_untied),
        cmocka_unit_test(test_model_gpt2_tsa_paper), cmocka_unit_test(test_model_gpt2_tsa),
        cmocka_unit_test(test_model_tsa_paper), cmocka_unit_test(test_model_gpt2_satformer),
        cmocka_unit_test(test_model_gpt2_resformer), cmocka_unit_test(test_model_gpt2_early_exit),
        cmocka_unit_test(test_model_gpt2_random), cmocka_unit_test(test_model_gpt2_mod),
        cmocka_unit_test(test_attention_dropout), cmocka_unit_test(test_model_gpt2_dropout),
        cmocka_unit_test(test_model_dropout), cmocka_unit_test(test_dropout_keys), cmocka_unit_test(test_init_gpt2),
        /* last, so that the shared random stream every test before them draws from is what it was */
        cmocka_unit_test(test_model_early_exit_paper), cmocka_unit_test(test_model_gpt2_early_exit_paper),
        cmocka_unit_test(test_verf_gelu), /* draws nothing from the random stream */
    };
    if (getenv("GRAD_ONLY")) cmocka_set_test_filter(getenv("GRAD_ONLY")); /* e.g. GRAD_ONLY='*dropout*' */
    return cmocka_run_group_tests(tests, NULL, NULL);
}
