/*
 * rng.h — the one random number generator of gatelab: xoshiro256** seeded
 * through splitmix64 (Blackman & Vigna, "Scrambled linear pseudorandom number
 * generators", 2018).  Its whole state is four words, so a checkpoint stores
 * it and a resumed run draws exactly the numbers an uninterrupted run would.
 */
#ifndef GATELAB_MODEL_RNG_H
#define GATELAB_MODEL_RNG_H

#include <stdint.h>

typedef struct { uint64_t s[4]; } gl_rng;

void rng_seed(gl_rng *r, uint64_t seed);
uint64_t rng_next(gl_rng *r);
/* Uniform in [0, n), n > 0, without modulo bias. */
uint64_t rng_below(gl_rng *r, uint64_t n);
/* Uniform float in [0, 1) with 24 random bits. */
float rng_uniform(gl_rng *r);
/* Standard normal (Box–Muller, one value per call; deterministic). */
float rng_normal(gl_rng *r);

#endif
