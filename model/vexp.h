/*
 * vexp.h — an exp for float that the compiler can vectorise.
 *
 * glibc's expf is a call per element, so the softmax and SwiGLU loops that use
 * it stay scalar (without -ffast-math, which we never use, GCC will not swap
 * in a vector libm).  This version is branch-free arithmetic: Cody–Waite
 * reduction x = n·ln2 + r, |r| <= ln2/2, a degree-7 Taylor polynomial for e^r
 * (truncation error r^8/8! < 1.1e-9 relative) and 2^n by building the float's
 * exponent bits.  Measured against expf over [-87, 88]: within 2 ulp
 * (tests/test_grad.c checks it).  Inputs below -87.3 give 0 (as the softmax
 * wants for masked scores), above 88 they saturate at e^88 ≈ 1.65e38; NaN
 * stays NaN.
 */
#ifndef GATELAB_MODEL_VEXP_H
#define GATELAB_MODEL_VEXP_H

#include <math.h>
#include <stdint.h>
#include <string.h>

static inline float gl_expf(float x) {
    const float lo = -87.33654f, hi = 88.0f;
    float xc = x < lo ? lo : (x > hi ? hi : x);
    float nf = __builtin_rintf(xc * 1.44269504088896341f); /* nearest, vectorises */
    /* ln 2 split so that n·ln2_hi is exact */
    float r = xc - nf * 0.693145751953125f;
    r = r - nf * 1.428606765330187045e-06f;
    float p = 1.0f / 5040.0f;
    p = p * r + 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    int32_t n = (int32_t)nf;
    /* 2^n for n in [-126, 127]: exponent field n + 127; n = -126 at the low clamp keeps it normal */
    int32_t bits = (n + 127) << 23;
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    float out = p * scale;
    out = x < lo ? 0.0f : out;
    return x != x ? x : out;
}

/* erf for float, vectorisable and without exp: erf(x) ≈ x·P(x²)/Q(x²) for |x| <= 4, P and Q of
 * degree 5 (a division and 10 FMAs), and ±1 beyond.  The coefficients are the minimax fit of the
 * absolute error on [0, 4.05] (level 2.5e-8), fitted here by a rational Remez exchange
 * (scripts/reference/fit_erf.py reproduces them).  All are positive, so the Horner sums never cancel;
 * their float rounding, at most about 6 ulp of a result near 1, is most of the error: absolute error
 * 3.8e-7 at worst over every float (the erfc-and-exp form it replaced: 4.6e-7; tests/test_grad.c
 * checks it against libm's erf).  The form is odd, so erf(−x) = −erf(x) exactly; the clamp at 4
 * (erfc(4) = 1.5e-8) is where the float evaluation gives exactly 1, so erf(±inf) = ±1 and GELU is
 * exact in its tails; NaN stays NaN.  fmaf: one rounding per step, and the same bits in every build
 * (inline vfmadd with -march=native, libm's correctly rounded fmaf otherwise). */
static inline float gl_erff(float x) {
    const float c = 4.0f;
    float xc = x < -c ? -c : (x > c ? c : x); /* NaN compares false and passes through */
    float s = xc * xc;
    float p = 1.939802587e-06f;
    p = fmaf(p, s, 2.887937007e-04f);
    p = fmaf(p, s, 4.095871933e-03f);
    p = fmaf(p, s, 5.374817178e-02f);
    p = fmaf(p, s, 1.985789388e-01f);
    p = fmaf(p, s, 1.128378987e+00f);
    float q = 3.715666026e-05f;
    q = fmaf(q, s, 1.236243173e-03f);
    q = fmaf(q, s, 1.563034579e-02f);
    q = fmaf(q, s, 1.174146608e-01f);
    q = fmaf(q, s, 5.093168020e-01f);
    q = fmaf(q, s, 1.0f);
    return xc * p / q;
}

/* GELU in its exact form, x·Φ(x) = x/2·(1 + erf(x/√2)), and its derivative Φ(x) + x·φ(x), on
 * gl_erff and gl_expf: inline so the loops over a (N, d_ff) activation vectorise (as out-of-line
 * calls they took 29 % of a gpt2 training step). */
static inline float gl_gelu(float x) { return 0.5f * x * (1.0f + gl_erff(x * 0.70710678118654752f)); }

static inline float gl_gelu_grad(float x) {
    float cdf = 0.5f * (1.0f + gl_erff(x * 0.70710678118654752f));
    float pdf = 0.39894228040143268f * gl_expf(-0.5f * x * x);
    return cdf + x * pdf;
}

#endif
