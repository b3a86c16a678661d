/*
 * rng.c — xoshiro256** with splitmix64 seeding.  See rng.h.
 * Deliberately no global state: every stream is an explicit gl_rng.
 */
#include "rng.h"

#include <math.h>

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

void rng_seed(gl_rng *r, uint64_t seed) {
    uint64_t x = seed;
    for (int i = 0; i < 4; i++) r->s[i] = rng_splitmix(&x);
}

uint64_t rng_next(gl_rng *r) {
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

uint64_t rng_below(gl_rng *r, uint64_t n) {
    /* rejection: draw until below the largest multiple of n */
    uint64_t limit = UINT64_MAX - (UINT64_MAX % n);
    uint64_t x;
    do x = rng_next(r); while (x >= limit);
    return x % n;
}

float rng_uniform(gl_rng *r) { return (float)(rng_next(r) >> 40) * (1.0f / 16777216.0f); }

float rng_normal(gl_rng *r) {
    /* u1 in (0, 1] so the log is finite */
    double u1 = ((double)(rng_next(r) >> 11) + 1.0) * (1.0 / 9007199254740992.0);
    double u2 = (double)(rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}
