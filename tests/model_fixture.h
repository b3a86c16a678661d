/*
 * model_fixture.h — weights far from their start, for tests that need open
 * gates and routers that decide (test_grad.c's finite differences,
 * test_causal.c's future-token check): every matrix scaled by 8 (a gate's
 * α matrix by 20), every other tensor and the cross-layer weights (which
 * start at structured or zero values) moved by 0.2·N(0, 1).
 */
#ifndef GATELAB_TESTS_MODEL_FIXTURE_H
#define GATELAB_TESTS_MODEL_FIXTURE_H

#include <string.h>
#include "model/model.h"
#include "model/rng.h"

static void fixture_spread_weights(gl_model *m, gl_rng *rng) {
    for (int i = 0; i < m->n_tensors; i++) {
        const gl_tensor *t = &m->tensors[i];
        float *p = m->params + t->offset;
        const int xl = !strncmp(t->name, "dwa.", 4) || !strncmp(t->name, "hyper.", 6) || !strncmp(t->name, "mudd.", 5);
        for (size_t j = 0; j < t->size; j++) {
            if (t->ndim == 2 && !xl) p[j] *= strstr(t->name, "alpha") ? 20.0f : 8.0f;
            else p[j] += 0.2f * rng_normal(rng);
        }
    }
}

#endif
