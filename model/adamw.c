/*
 * adamw.c — AdamW with global-norm clipping, matching torch.optim.AdamW and
 * torch.nn.utils.clip_grad_norm_ (see adamw.h).  Weight decay applies to the
 * tensors the model's table marks (gl_tensor.decay), or to every tensor when
 * gl_adamw.decay_all is set (train.weight_decay_policy = all).
 *
 * The squared norm is summed in double over fixed chunks of the flat gradient
 * (the chunking depends only on the parameter count), the chunk sums are added
 * in chunk order, so a step is bit-for-bit repeatable for any thread count.
 * The update runs every tensor inside one parallel region (one fork and one
 * barrier per step instead of one per tensor: a model has dozens of tensors,
 * many of them a few hundred floats long).
 */
#include "adamw.h"

#include <math.h>

#define ADAMW_MAX_CHUNKS 1024
#define ADAMW_MIN_CHUNK 16384

/* Σ g² in double, deterministic (see the header essay). */
static double grad_sumsq(const float *g, size_t n) {
    size_t chunk = (n + ADAMW_MAX_CHUNKS - 1) / ADAMW_MAX_CHUNKS;
    if (chunk < ADAMW_MIN_CHUNK) chunk = ADAMW_MIN_CHUNK;
    const long nchunks = (long)((n + chunk - 1) / chunk);
    double part[ADAMW_MAX_CHUNKS];
#pragma omp parallel for schedule(static)
    for (long c = 0; c < nchunks; c++) {
        size_t a = (size_t)c * chunk, b = a + chunk < n ? a + chunk : n;
        double s = 0.0;
        for (size_t i = a; i < b; i++) s += (double)g[i] * g[i];
        part[c] = s;
    }
    double ss = 0.0;
    for (long c = 0; c < nchunks; c++) ss += part[c];
    return ss;
}

float adamw_step(gl_model *m, const gl_adamw *o, float lr, long step) {
    float norm = (float)sqrt(grad_sumsq(m->grads, m->n_params));
    if (!isfinite(norm)) return norm;
    float clip = 1.0f;
    /* torch: clip_coef = max_norm / (total_norm + 1e-6), applied when < 1 */
    if (o->grad_clip > 0.0f) {
        float coef = o->grad_clip / (norm + 1e-6f);
        if (coef < 1.0f) clip = coef;
    }
    const float bc1 = 1.0f - powf(o->beta1, (float)step);
    const float bc2 = 1.0f - powf(o->beta2, (float)step);
    const float step_size = lr / bc1, bc2_sqrt = sqrtf(bc2);
    const float b1 = o->beta1, b2 = o->beta2, eps = o->eps;
#pragma omp parallel
    for (int k = 0; k < m->n_tensors; k++) {
        const gl_tensor *t = &m->tensors[k];
        const float decay = t->decay || o->decay_all ? 1.0f - lr * o->weight_decay : 1.0f;
        float *p = m->params + t->offset, *g = m->grads + t->offset;
        float *mm = m->adam_m + t->offset, *vv = m->adam_v + t->offset;
        const long n = (long)t->size;
#pragma omp for schedule(static) nowait
        for (long i = 0; i < n; i++) {
            float gi = g[i] * clip;
            float mi = b1 * mm[i] + (1.0f - b1) * gi;
            float vi = b2 * vv[i] + (1.0f - b2) * gi * gi;
            mm[i] = mi;
            vv[i] = vi;
            float denom = sqrtf(vi) / bc2_sqrt + eps;
            p[i] = p[i] * decay - step_size * mi / denom;
        }
    }
    return norm;
}

float adamw_schedule(long step, long warmup, long total, float lr_max, float lr_min) {
    if (warmup > 0 && step < warmup) return lr_max * (float)(step + 1) / (float)warmup;
    if (step >= total) return lr_min;
    double progress = (double)(step - warmup) / (double)(total - warmup > 0 ? total - warmup : 1);
    return (float)(lr_min + 0.5 * (lr_max - lr_min) * (1.0 + cos(3.14159265358979323846 * progress)));
}
