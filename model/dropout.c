/*
 * dropout.c — inverted dropout whose masks are hashes, not draws (dropout.h).
 *
 * keep(entry) = u ≥ rate with u = the top 24 bits of
 *   rng_mix64(key ^ rng_mix64(site·2^56 + index + 1)),  site = kind·64 + block,
 * index the entry's global position: (row0 + t)·C + i for a (N, C) activation,
 * ((row0 + b·T + i)·H + h)·T + j for attention probability (b, h, i, j).
 * Deliberately not here: where the sites are (model.c), the key's lifetime
 * (the training loop sets m->drop_key per step and clears it after).
 */
#include "dropout.h"

#include <assert.h>
#include <omp.h>

#include "model.h"
#include "rng.h"

_Static_assert(GL_MAX_LAYERS <= 64, "a dropout site packs the block number into 6 bits");

uint64_t dropout_train_key(uint64_t seed, long step) {
    uint64_t k = rng_mix64(rng_mix64(seed ^ 0x44524f504f555431ULL) + (uint64_t)step + 1);
    return k ? k : 1;
}

static inline float drop_scale(uint64_t key, uint64_t site, uint64_t index, float rate, float inv) {
    const uint64_t h = rng_mix64(key ^ rng_mix64((site << 56) + index + 1));
    return (float)(h >> 40) * (1.0f / 16777216.0f) < rate ? 0.0f : inv;
}

void dropout_rows(float *x, int N, int C, const gl_dropout *dr, gl_drop_site site, int n) {
    assert(x && dr && dr->key && N > 0 && C > 0 && n >= 0 && n < 64);
    const uint64_t s = (uint64_t)site * 64 + (uint64_t)n;
    const float inv = 1.0f / (1.0f - dr->rate);
#pragma omp parallel for schedule(static)
    for (int t = 0; t < N; t++) {
        const uint64_t base = (uint64_t)(dr->row0 + t) * (uint64_t)C;
        float *row = x + (size_t)t * C;
        for (int i = 0; i < C; i++) row[i] *= drop_scale(dr->key, s, base + (uint64_t)i, dr->rate, inv);
    }
}

void dropout_att(float *attd, const float *att, int B, int H, int T, const gl_dropout *dr, int n) {
    assert(attd && att && dr && dr->key && B > 0 && H > 0 && T > 0 && n >= 0 && n < 64);
    const uint64_t s = (uint64_t)DROP_ATT * 64 + (uint64_t)n;
    const float inv = 1.0f / (1.0f - dr->rate);
#pragma omp parallel for schedule(static)
    for (int bh = 0; bh < B * H; bh++) {
        const int b = bh / H, h = bh % H;
        for (int i = 0; i < T; i++) {
            const size_t o = ((size_t)bh * T + i) * T;
            const uint64_t base = ((uint64_t)(dr->row0 + (long)b * T + i) * (uint64_t)H + (uint64_t)h) * (uint64_t)T;
            for (int j = 0; j < T; j++)
                attd[o + j] = j <= i ? att[o + j] * drop_scale(dr->key, s, base + (uint64_t)j, dr->rate, inv) : 0.0f;
        }
    }
}
