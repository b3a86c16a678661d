/*
 * vred.h — reductions (sum, dot, max) over a float row that the compiler can
 * vectorise.
 *
 * Without -ffast-math (which we never use) GCC keeps a float `s += x[i]` loop
 * scalar, because vectorising it would reorder the additions.  These helpers
 * write the reordering down: GL_LANES running partial results, lane l taking
 * elements l, l + GL_LANES, …, then the tail in order, then the lanes in lane
 * order.  The order is fixed by n alone, so results are bit-for-bit
 * repeatable (they differ in the last bits from a left-to-right sum).  The
 * inner lane loop becomes vector instructions (SLP); a scalar build computes
 * the same values.
 * The max uses `x > m ? x : m`, which is exactly the semantics of the x86
 * max instruction, so it needs no reordering licence at all.
 */
#ifndef GATELAB_MODEL_VRED_H
#define GATELAB_MODEL_VRED_H

#define GL_LANES 16

/* Σ x[i] for i < n. */
static inline float gl_sum(const float *x, int n) {
    float acc[GL_LANES] = {0};
    int i = 0;
    for (; i + GL_LANES <= n; i += GL_LANES)
        for (int l = 0; l < GL_LANES; l++) acc[l] += x[i + l];
    float s = 0.0f;
    for (; i < n; i++) s += x[i];
    for (int l = 0; l < GL_LANES; l++) s += acc[l];
    return s;
}

/* Σ a[i]·b[i] for i < n. */
static inline float gl_dot(const float *a, const float *b, int n) {
    float acc[GL_LANES] = {0};
    int i = 0;
    for (; i + GL_LANES <= n; i += GL_LANES)
        for (int l = 0; l < GL_LANES; l++) acc[l] += a[i + l] * b[i + l];
    float s = 0.0f;
    for (; i < n; i++) s += a[i] * b[i];
    for (int l = 0; l < GL_LANES; l++) s += acc[l];
    return s;
}

/* Σ a[i]·b[i]·c[i] for i < n (products formed left to right). */
static inline float gl_dot3(const float *a, const float *b, const float *c, int n) {
    float acc[GL_LANES] = {0};
    int i = 0;
    for (; i + GL_LANES <= n; i += GL_LANES)
        for (int l = 0; l < GL_LANES; l++) acc[l] += a[i + l] * b[i + l] * c[i + l];
    float s = 0.0f;
    for (; i < n; i++) s += a[i] * b[i] * c[i];
    for (int l = 0; l < GL_LANES; l++) s += acc[l];
    return s;
}

/* Σ (x[i] − m)² for i < n (LayerNorm's variance about its mean m). */
static inline float gl_sumsq_dev(const float *x, float m, int n) {
    float acc[GL_LANES] = {0};
    int i = 0;
    for (; i + GL_LANES <= n; i += GL_LANES)
        for (int l = 0; l < GL_LANES; l++) acc[l] += (x[i + l] - m) * (x[i + l] - m);
    float s = 0.0f;
    for (; i < n; i++) s += (x[i] - m) * (x[i] - m);
    for (int l = 0; l < GL_LANES; l++) s += acc[l];
    return s;
}

/* Σ a[i]·b[i]·(c[i] − m) for i < n (products formed left to right). */
static inline float gl_dot3_dev(const float *a, const float *b, const float *c, float m, int n) {
    float acc[GL_LANES] = {0};
    int i = 0;
    for (; i + GL_LANES <= n; i += GL_LANES)
        for (int l = 0; l < GL_LANES; l++) acc[l] += a[i + l] * b[i + l] * (c[i + l] - m);
    float s = 0.0f;
    for (; i < n; i++) s += a[i] * b[i] * (c[i] - m);
    for (int l = 0; l < GL_LANES; l++) s += acc[l];
    return s;
}

/* Σ a[i]·(b[i] + c[i]) for i < n. */
static inline float gl_dot_add(const float *a, const float *b, const float *c, int n) {
    float acc[GL_LANES] = {0};
    int i = 0;
    for (; i + GL_LANES <= n; i += GL_LANES)
        for (int l = 0; l < GL_LANES; l++) acc[l] += a[i + l] * (b[i + l] + c[i + l]);
    float s = 0.0f;
    for (; i < n; i++) s += a[i] * (b[i] + c[i]);
    for (int l = 0; l < GL_LANES; l++) s += acc[l];
    return s;
}

/* max x[i] for i < n (n >= 1); NaN inputs are skipped unless x[0]'s lane keeps one. */
static inline float gl_max(const float *x, int n) {
    float m = x[0];
    int i = 0;
    if (n >= GL_LANES) {
        float acc[GL_LANES];
        for (int l = 0; l < GL_LANES; l++) acc[l] = x[l];
        for (i = GL_LANES; i + GL_LANES <= n; i += GL_LANES)
            for (int l = 0; l < GL_LANES; l++) acc[l] = x[i + l] > acc[l] ? x[i + l] : acc[l];
        for (int l = 0; l < GL_LANES; l++) m = acc[l] > m ? acc[l] : m;
    }
    for (; i < n; i++) m = x[i] > m ? x[i] : m;
    return m;
}

#endif
