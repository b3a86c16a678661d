/*
 * crosslayer.h — the hooks model.c calls for cross-layer connectivity
 * (cross_layer = denseformer | hyper | mudd; model/crosslayer.c).  Internal to
 * model/: the harness sees only the config field, the parameter names in the
 * tensor table (rows in variants.h) and the typed views in model.h
 * (gl_xl_params, gl_xl_acts).
 *
 * Where the hooks sit (block n, forward):
 *   xl_forward_begin                after the embedding (hyper: widen to S streams)
 *   xl_block_output                 where block n writes its output
 *   xl_query_input, xl_kv_norm_forward, xl_attn_input
 *                                   the attention's q/k/v inputs (MUDD: three streams)
 *   xl_hc_mid_forward               hyper: replaces h_mid = h + a
 *   xl_hc_out_forward               hyper: replaces h_out = h_mid + f
 *   xl_forward_after_block          the dense average / MUDD mix / next hyper input
 * and backward, in reverse: xl_backward_block_out before block_backward(n),
 * xl_hc_ffn_out_backward / xl_hc_mid_backward / xl_kv_grads /
 * xl_attn_norm_backward inside it, xl_backward_block_in after it.  Every hook
 * is a no-op (or returns its default argument) when the variant does not use it.
 */
#ifndef GATELAB_MODEL_CROSSLAYER_H
#define GATELAB_MODEL_CROSSLAYER_H

#include <stddef.h>

#include "model.h"

/* ---- parameters (their rows: GL_XL_TENSORS in variants.h) ---- */
/* MUDD after block n: C ways (4 before the last block, 1 after it), K = C·(n+2) weights. */
int xl_mudd_c(const gl_model_config *c, int n);
int xl_mudd_k(const gl_model_config *c, int n);
/* 1 when block n has separate key/value attention norms (MUDD, n >= 1). */
int xl_separate_kv_norms(const gl_model_config *c, int n);
/* The structured initial values (INIT_XL rows); after the table's draws and fills. */
void xl_init_weights(gl_model *m);

/* ---- memory: with base NULL these only count; they return floats used ---- */
size_t xl_layout_acts(gl_model *m, float *base);
size_t xl_layout_grads(gl_model *m, float *base);

/* ---- forward ---- */
void xl_forward_begin(gl_model *m, int N);
float *xl_block_output(gl_model *m, int n, float *h_next);
void xl_forward_after_block(gl_model *m, int n, int N);
const float *xl_query_input(const gl_model *m, int n);
void xl_kv_norm_forward(gl_model *m, int n, int N);
/* Normed input of the query (0), key (1) or value (2) projection of block n. */
const float *xl_attn_input(const gl_model *m, int n, int which);
void xl_hc_mid_forward(gl_model *m, int n, int N);
void xl_hc_out_forward(gl_model *m, int n, int N);

/* ---- backward ---- */
/* dres (N, d): in, dL/d(block n's output as model.c sees it); out, dL/d(block
 * n's own output s_{n+1}) for DenseFormer/MUDD; hyper reads it at n = L-1 only. */
void xl_backward_block_out(gl_model *m, float *dres, int n, int N);
/* dh (N, d): dL/d(block n's attention input); at n = 0 it leaves dL/dh0. */
void xl_backward_block_in(gl_model *m, float *dh, int n, int N);
void xl_hc_ffn_out_backward(gl_model *m, int n, int N, float *dfo);
void xl_hc_mid_backward(gl_model *m, int n, int N, const float *dhm, float *dao);
/* Gradient buffers of the key/value normed inputs (zeroed), or dxn for both. */
void xl_kv_grads(gl_model *m, int n, int N, float *dxn, float **dxk, float **dxv);
/* MUDD, n >= 1: the three attention norms' backward into the stream
 * gradients; returns 1 when done, 0 when model.c should do its own. */
int xl_attn_norm_backward(gl_model *m, int n, int N, const float *dxn);

#endif
