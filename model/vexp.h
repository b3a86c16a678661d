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

#endif
