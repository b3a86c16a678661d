/*
 * carve.h — the one buffer carver of the model: hand out consecutive,
 * 64-byte-aligned slices of one float arena, so each family (activations,
 * activation gradients, cross-layer state) is one allocation with typed
 * pointers into it (STYLE.md, "one allocation per family").
 *
 * Used in two passes: with base NULL it only counts (carve_take returns NULL
 * and used grows), then the arena of used floats is allocated and the same
 * layout function runs again with base set.  model.c (the blocks' buffers)
 * and crosslayer.c (DenseFormer/MUDD/hyper-connection state) both carve
 * through it.  Not here: allocating or zeroing the arena (model.c does).
 */
#ifndef GATELAB_MODEL_CARVE_H
#define GATELAB_MODEL_CARVE_H

#include <stddef.h>

typedef struct {
    float *base; /* the arena, or NULL to count */
    size_t used; /* floats handed out so far, each slice rounded up to 16 */
} gl_carver;

/* The next n floats of the arena (NULL while counting); every slice starts on
 * a multiple of 16 floats (64 bytes) from base. */
static inline float *carve_take(gl_carver *cv, size_t n) {
    float *p = cv->base ? cv->base + cv->used : NULL;
    cv->used += (n + 15) & ~(size_t)15;
    return p;
}

#endif
