/*
 * adamw.c — AdamW with global-norm clipping, matching torch.optim.AdamW and
 * torch.nn.utils.clip_grad_norm_ (see adamw.h).  Weight decay applies to the
 * tensors the model's table marks (gl_tensor.decay).  The norm is reduced in
 * double in a fixed order, so a step is bit-for-bit repeatable.
 */
#include "adamw.h"

#include <math.h>

float adamw_step(gl_model *m, const gl_adamw *o, float lr, long step) {
    double ss = 0.0;
    for (size_t i = 0; i < m->n_params; i++) ss += (double)m->grads[i] * m->grads[i];
    float norm = (float)sqrt(ss);
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
    for (int k = 0; k < m->n_tensors; k++) {
        const gl_tensor *t = &m->tensors[k];
        const float decay = t->decay ? 1.0f - lr * o->weight_decay : 1.0f;
        float *p = m->params + t->offset, *g = m->grads + t->offset;
        float *mm = m->adam_m + t->offset, *vv = m->adam_v + t->offset;
        const long n = (long)t->size;
#pragma omp parallel for schedule(static)
        for (long i = 0; i < n; i++) {
            float gi = g[i] * clip;
            p[i] *= decay;
            mm[i] = o->beta1 * mm[i] + (1.0f - o->beta1) * gi;
            vv[i] = o->beta2 * vv[i] + (1.0f - o->beta2) * gi * gi;
            float denom = sqrtf(vv[i]) / bc2_sqrt + o->eps;
            p[i] -= step_size * mm[i] / denom;
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
