/*
 * infer.h — the row-selective pieces of the inference paths (model/infer.c):
 * attention and rotary for a packed subset of query rows, and parallel
 * gathers.  Internal to model/: model.c's sparse TSA and early-exit forward
 * call them; nothing outside model/ needs them.
 *
 * Packed rows: idx (K) lists the selected token rows of a (B*T)-row
 * activation in ascending order; a packed buffer holds row idx[r] of the full
 * one at row r.  Position of row r in its window: idx[r] % T.
 */
#ifndef GATELAB_MODEL_INFER_H
#define GATELAB_MODEL_INFER_H

#include <stddef.h>

/* Row block of the packed attention: rows whose positions share one
 * 64-position bucket, as attn.c blocks the dense rows. */
#define INFER_ATT_BLOCK 64

/* dst (K, C) row r = src (·, C) row idx[r]. */
void infer_gather(float *dst, const float *src, const int *idx, int K, int C);

/* x (K, nh*hd) packed rows, in place: the rotation of rope_forward with row
 * r at position idx[r] % T (cos/sin are rope_tables' (T, hd/2)). */
void infer_rope_rows(float *x, const float *cos_t, const float *sin_t, const int *idx, int K, int T,
                     int nh, int hd);

/* Causal softmax attention for the packed query rows only.
 * q (K, H*hd) packed queries (after qk-norm and rotary), k/v (B*T, Hkv*hd)
 * every token's keys and values, idx (K) ascending → y (K, H*hd).
 * seq (B+1): packed rows of window b are [seq[b], seq[b+1]) (infer_seq_bounds).
 * scratch: n_threads × INFER_ATT_BLOCK × T floats.  Per row the arithmetic is
 * that of attn_forward (same blocks of 64 positions, same column range, same
 * exp), so with every row selected the result equals attn_forward's. */
void infer_attn_rows(float *y, const float *q, const float *k, const float *v, const int *idx,
                     const int *seq, int B, int T, int H, int Hkv, int hd, float *scratch);

/* seq (B+1) from idx (K ascending): window b's packed rows are [seq[b], seq[b+1]). */
void infer_seq_bounds(int *seq, const int *idx, int K, int B, int T);

#endif
