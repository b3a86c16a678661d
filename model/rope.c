/*
 * rope.c — rotary position embedding (Su et al., RoFormer, 2021) in the
 * rotate-half convention of GPT-NeoX/Llama: for i < hd/2, with
 * θ_i = base^(−2i/hd) and angle = pos·θ_i,
 *   y[i]      = x[i]·cos − x[i+hd/2]·sin
 *   y[i+hd/2] = x[i+hd/2]·cos + x[i]·sin
 * A rotation is orthogonal, so the backward is the inverse rotation of the
 * gradient.  Positions restart at 0 in every window (row r has pos r % T).
 */
#include <assert.h>
#include <math.h>
#include <stddef.h>

#include "ops.h"

void rope_tables(float *cos_t, float *sin_t, int T, int hd, float base) {
    assert(T > 0 && hd > 0 && hd % 2 == 0 && base > 0.0f);
    assert(cos_t && sin_t && ops_disjoint(cos_t, (size_t)T * hd / 2, sin_t, (size_t)T * hd / 2));
    int h2 = hd / 2;
    for (int t = 0; t < T; t++)
        for (int i = 0; i < h2; i++) {
            double theta = pow((double)base, -2.0 * i / hd);
            double a = t * theta;
            cos_t[(size_t)t * h2 + i] = (float)cos(a);
            sin_t[(size_t)t * h2 + i] = (float)sin(a);
        }
}

static void rope_apply(float *x, const float *cos_t, const float *sin_t, int N, int T, int nh,
                       int hd, float sign) {
    assert(N > 0 && T > 0 && nh > 0 && hd > 0 && hd % 2 == 0);
    assert(x && cos_t && sin_t);
    assert(ops_disjoint(x, (size_t)N * nh * hd, cos_t, (size_t)T * hd / 2) &&
           ops_disjoint(x, (size_t)N * nh * hd, sin_t, (size_t)T * hd / 2));
    int h2 = hd / 2;
#pragma omp parallel for schedule(static)
    for (int r = 0; r < N; r++) {
        const float *c = cos_t + (size_t)(r % T) * h2, *s = sin_t + (size_t)(r % T) * h2;
        for (int h = 0; h < nh; h++) {
            float *v = x + (size_t)r * nh * hd + (size_t)h * hd;
            for (int i = 0; i < h2; i++) {
                float a = v[i], b = v[i + h2], sn = sign * s[i];
                v[i] = a * c[i] - b * sn;
                v[i + h2] = b * c[i] + a * sn;
            }
        }
    }
}

void rope_forward(float *x, const float *cos_t, const float *sin_t, int N, int T, int nh, int hd) {
    rope_apply(x, cos_t, sin_t, N, T, nh, hd, 1.0f);
}

void rope_backward(float *dx, const float *cos_t, const float *sin_t, int N, int T, int nh, int hd) {
    rope_apply(dx, cos_t, sin_t, N, T, nh, hd, -1.0f);
}
