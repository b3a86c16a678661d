/*
 * adamw.h — AdamW (Loshchilov & Hutter, 2019) with global-norm gradient
 * clipping and a linear-warmup + cosine-decay learning-rate schedule.
 * The update matches torch.optim.AdamW (decoupled decay p *= 1 - lr·wd, then
 * p -= lr/(1-β1^t) · m / (sqrt(v)/sqrt(1-β2^t) + eps)).
 */
#ifndef GATELAB_MODEL_ADAMW_H
#define GATELAB_MODEL_ADAMW_H

#include "model.h"

typedef struct {
    float beta1, beta2, eps;
    float weight_decay; /* applied to tensors whose gl_tensor.decay is 1 */
    float grad_clip;    /* global L2 norm; <= 0 disables clipping */
    int decay_all;      /* 1: weight decay on every tensor, whatever gl_tensor.decay says
                           (train.weight_decay_policy = all: the official SATFormer code's single group) */
} gl_adamw;

/* One update of every parameter from m->grads (step is 1-based).  Returns the
 * global gradient norm before clipping (NaN/inf if the gradients are). */
float adamw_step(gl_model *m, const gl_adamw *opt, float lr, long step);

/* Linear warmup over `warmup` steps to lr_max, then cosine decay to lr_min at
 * `total` steps (step is 0-based; constant lr_min past total). */
float adamw_schedule(long step, long warmup, long total, float lr_max, float lr_min);

#endif
