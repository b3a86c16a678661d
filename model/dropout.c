/*
 * dropout.c — inverted dropout whose masks are hashes, not draws (dropout.h).
 *
 * A site (kind, block) of a key has its own stream key
 *   ks = rng_mix64(key ^ rng_mix64(site + 1)),  site = kind·64 + block,
 * and one splitmix64 output per PAIR of entries, h = rng_mix64(ks + p·γ) (rng_splitmix_at(ks, p)),
 * gives both entries of pair p their 24-bit uniforms: entry 2p takes bits 8..31 of h, entry 2p + 1
 * bits 40..63.  keep(entry) = u ≥ ⌈rate·2²⁴⌉, i.e. u/2²⁴ ≥ rate exactly (u/2²⁴ is exact in float).
 * The entry's index is its global position: (row0 + t)·C + i for a (N, C) activation,
 * ((row0 + b·T + i)·H + h)·T + j for attention probability (b, h, i, j), so a mask depends on
 * (key, site, index) only.  dropout_span works in chunks: first the pair hashes (a vector loop of
 * 64-bit multiplies), then the entries (a vector loop of compares).
 * Deliberately not here: where the sites are (model.c, attn.c), the key's lifetime
 * (the training loop sets m->drop_key per step and clears it after).
 */
#include "dropout.h"

#include <assert.h>
#include <math.h>
#include <omp.h>

#include "model.h"
#include "rng.h"

_Static_assert(GL_MAX_LAYERS <= 64, "a dropout site packs the block number into 6 bits");

#define DROP_CHUNK 128 /* entries per hash chunk: even, so a chunk's pairs start at an even entry */

uint64_t dropout_train_key(uint64_t seed, long step) {
    uint64_t k = rng_mix64(rng_mix64(seed ^ 0x44524f504f555431ULL) + (uint64_t)step + 1);
    return k ? k : 1;
}

gl_drop_mask dropout_mask(const gl_dropout *dr, gl_drop_site site, int n) {
    assert(dr && dr->key && dr->rate >= 0.0f && dr->rate < 1.0f && n >= 0 && n < 64);
    const uint64_t s = (uint64_t)site * 64 + (uint64_t)n;
    return (gl_drop_mask){rng_mix64(dr->key ^ rng_mix64(s + 1)), (uint32_t)ceilf(dr->rate * 16777216.0f),
                          1.0f / (1.0f - dr->rate)};
}

float dropout_scale_at(const gl_drop_mask *mk, uint64_t index) {
    const uint64_t h = rng_splitmix_at(mk->ks, index >> 1);
    const uint32_t u = (uint32_t)(h >> (index & 1 ? 40 : 8)) & 0xffffffu;
    return u >= mk->thr ? mk->inv : 0.0f;
}

void dropout_span(float *dst, const float *src, long len, const gl_drop_mask *mk, uint64_t index0) {
    assert(dst && src && len >= 0);
    const uint64_t ks = mk->ks;
    const uint32_t thr = mk->thr;
    const float inv = mk->inv;
    const int odd = (int)(index0 & 1); /* the span starts at the second entry of its first pair */
    uint32_t u[DROP_CHUNK + 2];
    for (long j0 = 0; j0 < len; j0 += DROP_CHUNK) {
        const int m = len - j0 < DROP_CHUNK ? (int)(len - j0) : DROP_CHUNK;
        const uint64_t p0 = (index0 + (uint64_t)j0) >> 1;
        const int np = (odd + m + 1) / 2;
        for (int p = 0; p < np; p++) { /* vectorised */
            const uint64_t h = rng_mix64(ks + (p0 + (uint64_t)p) * RNG_GAMMA);
            u[2 * p] = (uint32_t)h >> 8;
            u[2 * p + 1] = (uint32_t)(h >> 40);
        }
        const uint32_t *uc = u + odd;
        float *d = dst + j0;
        const float *s = src + j0;
        for (int j = 0; j < m; j++) d[j] = s[j] * (uc[j] >= thr ? inv : 0.0f); /* vectorised */
    }
}

void dropout_rows(float *x, int N, int C, const gl_dropout *dr, gl_drop_site site, int n) {
    assert(x && dr && dr->key && N > 0 && C > 0 && n >= 0 && n < 64);
    const gl_drop_mask mk = dropout_mask(dr, site, n);
#pragma omp parallel for schedule(static)
    for (int t = 0; t < N; t++) {
        float *row = x + (size_t)t * C;
        dropout_span(row, row, C, &mk, (uint64_t)(dr->row0 + t) * (uint64_t)C);
    }
}
