/*
 * gatekind.h — the recorded gates of a model, one row each in variants.h
 * (GL_GATES): SATFormer α, ResFormer λ, TSA halting p, early-exit
 * confidence, ...  Everything that records, reads, analyses or ablates gates
 * iterates over this table: the probe pass and the trace writer and reader
 * (harness), analyze, ablate, heads, tables and figures (analysis).
 *
 * A gate's array, as traced per evaluation step, is (rows, [tokens], [width]):
 * rows are blocks (GAX_LAYER, L) or routers (GAX_ROUTER, L−1); tokens the
 * probe tokens when the gate has one value per token (GAX_TOKEN); width KV
 * heads (GAX_KV_HEAD) or the two ResFormer coefficients (GAX_COEF).
 */
#ifndef GATELAB_MODEL_GATEKIND_H
#define GATELAB_MODEL_GATEKIND_H

#include <stddef.h>

#include "model.h"

typedef enum { GAX_NONE = 0, GAX_LAYER, GAX_ROUTER, GAX_TOKEN, GAX_KV_HEAD, GAX_COEF } gl_gate_axis;
typedef enum { GABL_NONE = 0, GABL_HEAD, GABL_BLOCK, GABL_ROUTE } gl_gate_ablation;

#define GL_GATE_ID(id, ...) id,
#define GL_GATE_ONE(id, ...) +1
typedef enum { GL_GATES(GL_GATE_ID) } gl_gate;
enum { GATE_COUNT = 0 GL_GATES(GL_GATE_ONE) };
#undef GL_GATE_ID
#undef GL_GATE_ONE

typedef struct {
    const char *key;          /* analysis files and metrics: "alpha" → alpha_heads.tsv, alpha_mean.L1.H0 */
    const char *group, *dataset; /* trace path /group/dataset */
    gl_gate_axis axis[3];     /* rows, token (or GAX_NONE), width (or GAX_NONE) */
    const char *coef;         /* names along GAX_COEF, or NULL */
    gl_gate_ablation ablate;
    const char *title, *symbol;
} gl_gate_info;

extern const gl_gate_info gatekind_info[GATE_COUNT];

/* 1 when a model of config c records gate g. */
int gatekind_has(const gl_model_config *c, gl_gate g);
/* 1 when g has one value per token (GAX_TOKEN). */
int gatekind_per_token(gl_gate g);
/* Axis names ("layer", "router", "token", "kv_head", "coef"). */
const char *gatekind_axis_name(gl_gate_axis a);
/* Sizes of g's axes for a model of n_layer blocks and n_kv_head KV heads and
 * n_token tokens: dims[0..rank) (GAX_NONE axes left out); returns the rank. */
int gatekind_dims(gl_gate g, int n_layer, int n_kv_head, long n_token, long dims[3]);
/* Their product. */
size_t gatekind_size(gl_gate g, int n_layer, int n_kv_head, long n_token);
/* Width of one row per token (KV heads, 2 coefficients, or 1). */
int gatekind_width(gl_gate g, int n_kv_head);

/* Where the last forward keeps row n of g (block or router n): (N, width)
 * for a per-token gate, else width values; NULL where row n has none (it
 * reads as zeros).  Requires gatekind_has(&m->cfg, g). */
const float *gatekind_src(const gl_model *m, gl_gate g, int n);
/* Copy g from the last forward (N = B·T tokens) into out, laid out as
 * gatekind_dims(g, L, Hkv, N) says.  Requires gatekind_has(&m->cfg, g). */
void gatekind_copy(const gl_model *m, gl_gate g, float *out);

/* The gate of m that the ablation class abl applies to (value-residual gates
 * GABL_HEAD / GABL_BLOCK, routing GABL_ROUTE), or -1 when m has none. */
int gatekind_find(const gl_model_config *c, gl_gate_ablation abl);

#endif
