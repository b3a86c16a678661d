/*
 * ops.h — the layer operations of the model, each a forward/backward pair in
 * the style of llm.c: x_forward(out, inp, params…, sizes) and
 * x_backward(dinp, dparams…, dout, inp/cached…, params…, sizes).
 * Backward functions ADD into their gradient outputs (dinp, dparams).
 *
 * Layout: row-major; token-major activations (N = B*T rows); weights (out, in):
 *   Y = X·Wᵀ,  dX += dY·W,  dW += dYᵀ·X.
 * Files: matmul.c (mm_), norm.c (rmsnorm_, layernorm_), rope.c (rope_), attn.c (attn_),
 * ffn.c (swiglu_, gelu_, bias_), xent.c (xent_), router.c (router_, gelu_erf);
 * dropout masks in dropout.c (dropout.h).
 * The ops that call sgemm, matmul and attention, have plain-loop references
 * in double (suffix _ref, forward and backward) that tests/test_grad.c
 * compares them with; the other ops (plain loops already) are checked
 * against finite differences directly.  The files that call cblas on their
 * own take their references from these: routing.c's masked attention and
 * infer.c's packed rows attn_forward_ref; decode.c's one-row step the whole
 * model_forward (decode.c says why).
 * Invariants: each op asserts at entry its sizes (positive), its buffers
 * (non-NULL unless the contract says it may be NULL) and, where the op reads
 * an input after writing an output, that the two do not overlap (ops_disjoint).
 * The builds do not define NDEBUG, so the asserts are on in release, debug and
 * asan builds alike; they are O(1) per call and change no arithmetic.
 * Where things live: the ops here; the model that strings them together in
 * model.c (model.h); the row-selective inference kernels in infer.c (infer.h);
 * KV-cache decoding in decode.c (decode.h); routed attention in routing.c
 * (routing.h); cross-layer connections in crosslayer.c (crosslayer.h).
 */
#ifndef GATELAB_MODEL_OPS_H
#define GATELAB_MODEL_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "dropout.h"

/* 1 when the float ranges a[0, na) and b[0, nb) share no element; a NULL or
 * empty range overlaps nothing.  For asserts: assert(ops_disjoint(out, …, inp, …)). */
static inline int ops_disjoint(const float *a, size_t na, const float *b, size_t nb) {
    if (!a || !b || !na || !nb) return 1;
    const uintptr_t a0 = (uintptr_t)a, b0 = (uintptr_t)b;
    return a0 + na * sizeof(float) <= b0 || b0 + nb * sizeof(float) <= a0;
}

/* ---- matmul.c: the linear layers through cblas_sgemm (attn.c, routing.c, infer.c and decode.c
 *      call cblas themselves on strided views and single rows) ---- */
/* out (N, Dout) = inp (N, Din) · wᵀ, w (Dout, Din).  out is overwritten. */
void mm_forward(float *out, const float *inp, const float *w, int N, int Din, int Dout);
/* dinp (N, Din) += dout·w (skipped if dinp is NULL);  dw (Dout, Din) += doutᵀ·inp. */
void mm_backward(float *dinp, float *dw, const float *dout, const float *inp, const float *w,
                 int N, int Din, int Dout);
/* The same, but dinp is overwritten (beta 0) instead of accumulated: for the
 * first contribution to a buffer, which then needs no zeroing pass. */
void mm_backward_set(float *dinp, float *dw, const float *dout, const float *inp, const float *w,
                     int N, int Din, int Dout);
void mm_forward_ref(float *out, const float *inp, const float *w, int N, int Din, int Dout);
void mm_backward_ref(float *dinp, float *dw, const float *dout, const float *inp, const float *w,
                     int N, int Din, int Dout);

/* ---- norm.c: RMSNorm y = x / sqrt(mean(x²) + eps) · g over rows of C ---- */
void rmsnorm_forward(float *out, float *rstd, const float *inp, const float *g, int N, int C, float eps);
/* dinp (N, C) += ..., dg (C) += ... (dg may be NULL) */
void rmsnorm_backward(float *dinp, float *dg, const float *dout, const float *inp, const float *g,
                      const float *rstd, int N, int C);

/* ---- norm.c: LayerNorm y = (x − mean)·rstd·g + b over rows of C (the gpt2 backbone) ---- */
void layernorm_forward(float *out, float *rstd, const float *inp, const float *g, const float *b, int N, int C,
                       float eps);
/* dinp (N, C) += ..., dg, db (C) += ... (either may be NULL); the row mean is recomputed from inp */
void layernorm_backward(float *dinp, float *dg, float *db, const float *dout, const float *inp, const float *g,
                        const float *rstd, int N, int C);

/* ---- rope.c: rotary embedding, rotate-half convention, in place ---- */
/* x is (B*T, nh*hd); row r has position r % T.  cos/sin are (T, hd/2). */
void rope_tables(float *cos_t, float *sin_t, int T, int hd, float base);
void rope_forward(float *x, const float *cos_t, const float *sin_t, int N, int T, int nh, int hd);
/* the inverse rotation applied to a gradient, in place */
void rope_backward(float *dx, const float *cos_t, const float *sin_t, int N, int T, int nh, int hd);

/* ---- attn.c: causal softmax attention with grouped-query heads ---- */
/* q (B*T, H*hd), k/v (B*T, Hkv*hd) → att (B, H, T, T) probabilities, y (B*T, H*hd). */
void attn_forward(float *y, float *att, const float *q, const float *k, const float *v,
                  int B, int T, int H, int Hkv, int hd);
/* attn_forward with dropout on the probabilities (dropout.h, site DROP_ATT of block n under dr): att
 * as attn_forward's, y = P̃·v with P̃ = att ⊙ mask/(1 − r) (row i of sequence b is global row
 * dr->row0 + b·T + i), P̃ made per block of ATTN_BLOCK rows in scratch (n_threads × ATTN_BLOCK × T
 * floats), never stored whole. */
#define ATTN_BLOCK 64
void attn_forward_dropout(float *y, float *att, float *scratch, const float *q, const float *k, const float *v,
                          const gl_dropout *dr, int n, int B, int T, int H, int Hkv, int hd);
/* dq, dk, dv = ... (all overwritten: dq has one writer per row, dk/dv one per (sequence, kv head));
 * dr, n: the dropout y was made with (attn_forward_dropout, whose P̃ blocks backward makes again), dr
 * NULL when y came from att itself; scratch holds n_threads × T × T floats, n_threads × (T + ATTN_BLOCK)
 * × T with dr. */
void attn_backward(float *dq, float *dk, float *dv, const float *dy, const float *att, const gl_dropout *dr, int n,
                   const float *q, const float *k, const float *v, float *scratch,
                   int B, int T, int H, int Hkv, int hd);
/* Plain loops in double, for the tests: attn_forward's y and att (keep (B*T) not NULL: those of
 * routing_attn_forward, routing.h, with that mask); attn_backward's dq, dk, dv (overwritten) from
 * the same att, without scratch (attd: the whole P̃ (B, H, T, T) y was made from, NULL for att). */
void attn_forward_ref(float *y, float *att, const float *q, const float *k, const float *v, const float *keep,
                      int B, int T, int H, int Hkv, int hd);
void attn_backward_ref(float *dq, float *dk, float *dv, const float *dy, const float *att, const float *attd,
                       const float *q, const float *k, const float *v, int B, int T, int H, int Hkv, int hd);

/* ---- ffn.c: SwiGLU gate g = silu(a) ⊙ b ---- */
void swiglu_forward(float *g, const float *a, const float *b, long n);
/* da = dg·b·silu'(a), db = dg·silu(a): OVERWRITTEN (the only writer of these buffers) */
void swiglu_backward(float *da, float *db, const float *dg, const float *a, const float *b, long n);

/* ---- ffn.c: the gpt2 MLP's pieces: exact GELU (erf) and the bias of a linear layer ---- */
/* out = GELU(inp) elementwise (out may be inp) */
void gelu_forward(float *out, const float *inp, long n);
/* dinp = dout·GELU'(inp): OVERWRITTEN */
void gelu_backward(float *dinp, const float *dout, const float *inp, long n);
/* out (N, C) += b (C) per row */
void bias_forward(float *out, const float *b, int N, int C);
/* db (C) += Σ_rows dout (N, C), each column summed in row order */
void bias_backward(float *db, const float *dout, int N, int C);
/* The fc1 bias and GELU fused (the training and decoding path; the four above are its reference):
 * pre (N, C) += b, out = GELU(pre); backward dpre = dout·GELU'(pre) (OVERWRITTEN, may be dout) and
 * db += Σ_rows dpre, bit for bit what the separate ops give. */
void bias_gelu_forward(float *out, float *pre, const float *b, int N, int C);
void gelu_bias_backward(float *dpre, float *db, const float *dout, const float *pre, int N, int C);

/* ---- xent.c: softmax cross-entropy with per-position weights ---- */
/* probs (N, V) = softmax(logits); tok_loss (N) = -log p[target] (0 where mask is 0).
 * Returns Σ mask·loss (in double); targets < 0 are not scored. */
double xent_forward(float *probs, float *tok_loss, const float *logits, const int *targets,
                    const float *mask, int N, int V);
/* dlogits (N, V) = scale·mask·(probs − onehot) — overwritten, not accumulated. */
void xent_backward(float *dlogits, const float *probs, const int *targets, const float *mask,
                   float scale, int N, int V);
/* max over V of probs, per row */
void xent_confidence(float *conf, const float *probs, int N, int V);

/* ---- router.c: TSA halting router p = σ(w2·φ(W1 x + b1) + b2), φ = GELU or (relu 1) ReLU ---- */
float gelu_erf(float x);
float gelu_erf_grad(float x);
/* x (N, d) → pre (N, R), hid (N, R), p (N) */
void router_forward(float *p, float *pre, float *hid, const float *x, const float *w1,
                    const float *b1, const float *w2, const float *b2, int N, int d, int R, int relu);
/* dp (N) is dL/dp; dx (N, d) += ...; dw1, db1, dw2, db2 += ...; scratch (N, R) */
void router_backward(float *dx, float *dw1, float *db1, float *dw2, float *db2, const float *dp,
                     const float *p, const float *pre, const float *hid, const float *x,
                     const float *w1, const float *w2, float *scratch, int N, int d, int R, int relu);

#endif
