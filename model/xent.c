/*
 * xent.c — softmax cross-entropy over the vocabulary with a weight per
 * position (0 = not scored: tasks that score only their answer positions).
 * The caller divides by Σ mask; this file only sums, so the same code serves
 * the final head and each early-exit head.
 */
#include <assert.h>
#include <math.h>
#include <stddef.h>

#include "ops.h"
#include "vexp.h"
#include "vred.h"

double xent_forward(float *probs, float *tok_loss, const float *logits, const int *targets,
                    const float *mask, int N, int V) {
    /* logits[target] is read after the row of probs is written: they must not overlap */
    assert(N > 0 && V > 0 && probs && logits);
    assert(ops_disjoint(probs, (size_t)N * V, logits, (size_t)N * V));
    assert(ops_disjoint(tok_loss, (size_t)N, logits, (size_t)N * V) &&
           ops_disjoint(tok_loss, (size_t)N, probs, (size_t)N * V));
    assert(ops_disjoint(probs, (size_t)N * V, mask, (size_t)N));
    double total = 0.0;
#pragma omp parallel for schedule(static) reduction(+ : total)
    for (int n = 0; n < N; n++) {
        const float *l = logits + (size_t)n * V;
        float *p = probs + (size_t)n * V;
        const float mx = gl_max(l, V);
        for (int v = 0; v < V; v++) p[v] = gl_expf(l[v] - mx); /* vectorised (vexp.h) */
        double sum = 0.0;
        for (int v = 0; v < V; v++) sum += p[v];
        float inv = (float)(1.0 / sum);
        for (int v = 0; v < V; v++) p[v] *= inv;
        float w = mask ? mask[n] : 1.0f;
        if (targets && targets[n] >= 0 && w != 0.0f) {
            /* -log softmax computed from the logits, not from p, to keep precision */
            double lt = -((double)l[targets[n]] - mx - log(sum));
            if (tok_loss) tok_loss[n] = (float)lt;
            total += w * lt;
        } else if (tok_loss) {
            tok_loss[n] = 0.0f;
        }
    }
    return total;
}

void xent_backward(float *dlogits, const float *probs, const int *targets, const float *mask,
                   float scale, int N, int V) {
    /* elementwise per row: dlogits may be probs */
    assert(N > 0 && V > 0 && dlogits && probs && targets);
    assert(ops_disjoint(dlogits, (size_t)N * V, mask, (size_t)N));
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        float w = (mask ? mask[n] : 1.0f) * scale;
        float *d = dlogits + (size_t)n * V;
        const float *p = probs + (size_t)n * V;
        if (targets[n] < 0 || w == 0.0f) {
            for (int v = 0; v < V; v++) d[v] = 0.0f;
            continue;
        }
        for (int v = 0; v < V; v++) d[v] = w * p[v];
        d[targets[n]] -= w;
    }
}

void xent_confidence(float *conf, const float *probs, int N, int V) {
    assert(N > 0 && V > 0 && conf && probs && ops_disjoint(conf, (size_t)N, probs, (size_t)N * V));
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        const float *p = probs + (size_t)n * V;
        float mx = p[0];
        for (int v = 1; v < V; v++) mx = p[v] > mx ? p[v] : mx;
        conf[n] = mx;
    }
}
