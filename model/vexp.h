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

/* erf for float, vectorisable: erf(z) = 1 − erfc(|z|) (sign restored), with
 * erfc from the Chebyshev fit of Numerical Recipes (§6.2, fractional error
 * below 1.2e-7 everywhere) and gl_expf.  Absolute error below 5e-7 (measured
 * 3.1e-7, the fit plus the float rounding of 1 − erfc), which is
 * what the GELU of the TSA router needs (tests/test_grad.c checks it against
 * libm's erff). */
static inline float gl_erff(float x) {
    float z = x < 0.0f ? -x : x;
    float t = 1.0f / (1.0f + 0.5f * z);
    float p = 0.17087277f;
    p = p * t - 0.82215223f;
    p = p * t + 1.48851587f;
    p = p * t - 1.13520398f;
    p = p * t + 0.27886807f;
    p = p * t - 0.18628806f;
    p = p * t + 0.09678418f;
    p = p * t + 0.37409196f;
    p = p * t + 1.00002368f;
    p = p * t - 1.26551223f;
    float erfc = t * gl_expf(-z * z + p);
    float r = 1.0f - erfc;
    return x < 0.0f ? -r : r;
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
