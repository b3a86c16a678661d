/*
 * depth_profile.c — per-token effective depth, expected depth, per-router
 * profile and depth histogram from TSA halting probabilities (depth.h).
 *
 * What it does not do: run a model, or decide how the soft model and sparse
 * inference differ beyond the 0.5 threshold docs/model.md gives ("a token with
 * p > 0.5 keeps its state through that block").  Follows the TSA definition
 * of docs/model.md ("Depth routing").  Sums in double precision, index order.
 */
#include "analysis/measure/depth.h"

#include <assert.h>
#include <math.h>

double depth_token_soft(const float *p, int R, long P, long t) {
    assert(t >= 0 && t < P);
    double d = 1.0;
    for (int l = 0; l < R; l++) d += 1.0 - (double)p[(size_t)l * P + t];
    return d;
}

int depth_token_hard(const float *p, int R, long P, long t) {
    assert(t >= 0 && t < P);
    int d = 1;
    for (int l = 0; l < R; l++) d += p[(size_t)l * P + t] <= DEPTH_HALT;
    return d;
}

void depth_tokens(const float *p, int R, long P, float *soft, int *hard) {
    for (long t = 0; t < P; t++) {
        if (soft) soft[t] = (float)depth_token_soft(p, R, P, t);
        if (hard) hard[t] = depth_token_hard(p, R, P, t);
    }
}

void depth_expected(const float *p, int R, long P, double *soft, double *hard) {
    double s = 0.0, h = 0.0;
    for (long t = 0; t < P; t++) {
        s += depth_token_soft(p, R, P, t);
        h += depth_token_hard(p, R, P, t);
    }
    if (soft) *soft = P > 0 ? s / (double)P : NAN;
    if (hard) *hard = P > 0 ? h / (double)P : NAN;
}

void depth_router_profile(const float *p, int R, long P, double *mean_p, double *active) {
    for (int l = 0; l < R; l++) {
        double s = 0.0;
        long a = 0;
        for (long t = 0; t < P; t++) {
            float v = p[(size_t)l * P + t];
            s += v;
            a += v <= DEPTH_HALT;
        }
        if (mean_p) mean_p[l] = P > 0 ? s / (double)P : NAN;
        if (active) active[l] = P > 0 ? (double)a / (double)P : NAN;
    }
}

double depth_active_frac(const float *p, int R, long P) {
    if (R <= 0 || P <= 0) return 1.0;
    long a = 0;
    for (size_t i = 0; i < (size_t)R * (size_t)P; i++) a += p[i] <= DEPTH_HALT;
    return (double)a / ((double)R * (double)P);
}

void depth_hist_hard(const float *p, int R, long P, long *counts) {
    for (int k = 0; k <= R; k++) counts[k] = 0;
    for (long t = 0; t < P; t++) counts[depth_token_hard(p, R, P, t) - 1]++;
}
