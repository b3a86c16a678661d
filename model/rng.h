/*
 * rng.h — the one random number generator of gatelab: xoshiro256** seeded
 * through splitmix64 (Blackman & Vigna, "Scrambled linear pseudorandom number
 * generators", 2018).  Its whole state is four words, so a checkpoint stores
 * it and a resumed run draws exactly the numbers an uninterrupted run would.
 * rng_mix64, the splitmix64 finaliser, is the one counter-based hash of
 * gatelab: every keyed draw (routing, tasks, ablation, difficulty, BPE's
 * hash table) calls it, so there is one copy of its constants.
 */
#ifndef GATELAB_MODEL_RNG_H
#define GATELAB_MODEL_RNG_H

#include <stdint.h>

typedef struct { uint64_t s[4]; } gl_rng;

/* splitmix64's finaliser (Steele, Lea & Flood 2014; Vigna's constants): a
 * bijective 64-bit mix.  rng_mix64(x + k·γ) is splitmix64's k-th output
 * from state x (rng_splitmix_at below). */
static inline uint64_t rng_mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* splitmix64's increment γ = 2⁶⁴/φ (Vigna's splitmix64.c): written here only. */
#define RNG_GAMMA 0x9e3779b97f4a7c15ULL

/* One splitmix64 step: advance the state *x by γ and return its mix. */
static inline uint64_t rng_splitmix(uint64_t *x) { return rng_mix64(*x += RNG_GAMMA); }

/* splitmix64's k-th output from state x without stepping through the first
 * k − 1 (k ≥ 1): rng_splitmix_at(x, k) is what the k-th rng_splitmix(&x)
 * returns, a counter-based draw keyed by (x, k). */
static inline uint64_t rng_splitmix_at(uint64_t x, uint64_t k) { return rng_mix64(x + k * RNG_GAMMA); }

void rng_seed(gl_rng *r, uint64_t seed);
uint64_t rng_next(gl_rng *r);
/* Uniform in [0, n), n > 0, without modulo bias. */
uint64_t rng_below(gl_rng *r, uint64_t n);
/* Uniform float in [0, 1) with 24 random bits. */
float rng_uniform(gl_rng *r);
/* Standard normal (Box–Muller, one value per call; deterministic). */
float rng_normal(gl_rng *r);

#endif
