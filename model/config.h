/*
 * config.h — the shape and variant of one gatelab model.
 *
 * A gl_model_config is plain data: the harness fills it from a manifest
 * (harness/store/manifest.c), the model reads it (model/model.c), checkpoints hash
 * it.  Nothing here allocates or does I/O.  The model definition it describes
 * is the one in docs/model.md, and the variants are:
 *
 *   value_residual   none | resformer | satformer | ...  (SATFormer paper; docs/model.md)
 *   depth_routing    none | tsa | early_exit                (TSA paper)
 *   cross_layer      none | denseformer | hyper | mudd      (dense baselines, docs/crosslayer.md)
 *
 * Every name is a row of model/variants.h.  Parameter names and shapes
 * derived from a config are the tensor table (model.h: m->tensors,
 * model_find_tensor).
 */
#ifndef GATELAB_MODEL_CONFIG_H
#define GATELAB_MODEL_CONFIG_H

#include <stddef.h>

#include "variants.h"

/* The enums come from the lists in variants.h (one row per variant, with its
 * manifest name); *_COUNT is the number of names. */
#define GL_ENUM_ID(id, name) id,
#define GL_ENUM_ONE(id, name) +1
typedef enum { GL_VALUE_RESIDUALS(GL_ENUM_ID) } gl_value_residual;
typedef enum { GL_RESFORMER_VARIANTS(GL_ENUM_ID) } gl_resformer_variant;
typedef enum { GL_DEPTH_ROUTINGS(GL_ENUM_ID) } gl_depth_routing;
typedef enum { GL_EXIT_WEIGHTINGS(GL_ENUM_ID) } gl_exit_weighting;
typedef enum { GL_CROSS_LAYERS(GL_ENUM_ID) } gl_cross_layer;
enum {
    VR_COUNT = 0 GL_VALUE_RESIDUALS(GL_ENUM_ONE),
    RF_COUNT = 0 GL_RESFORMER_VARIANTS(GL_ENUM_ONE),
    DR_COUNT = 0 GL_DEPTH_ROUTINGS(GL_ENUM_ONE),
    EE_COUNT = 0 GL_EXIT_WEIGHTINGS(GL_ENUM_ONE),
    CL_COUNT = 0 GL_CROSS_LAYERS(GL_ENUM_ONE),
};
#undef GL_ENUM_ID
#undef GL_ENUM_ONE

typedef struct {
    int vocab_size;  /* V: number of token ids */
    int d_model;     /* d */
    int n_layer;     /* L: blocks, numbered 0..L-1 */
    int n_head;      /* H query heads; head size hd = d / H */
    int n_kv_head;   /* Hkv key/value heads, H % Hkv == 0 */
    int d_ff;        /* SwiGLU hidden width */
    int seq_len;     /* T: context length the model is trained at */
    float norm_eps;  /* RMSNorm epsilon, 1e-6 */
    float rope_base; /* rotary base, 10000 */
    int qk_norm;     /* 1: per-head RMSNorm on q and k (learned scale of size hd) */
    int tied;        /* 1: output head is the embedding (logits = x Eᵀ) */

    gl_value_residual value_residual;
    gl_resformer_variant resformer_variant;
    int vr_last_k;   /* 0: every block n >= 1 mixes V1; k > 0: only blocks n >= L-k (and n >= 1) */
    int decay_gates; /* 1: AdamW weight decay also on Wα and the λ's */

    gl_depth_routing depth_routing;
    int router_hidden;      /* 0: max(d/4, 16) */
    float router_init_bias; /* initial fc2_b of every router; p0 = σ(bias) */
    float tsa_lambda;       /* depth penalty λ */
    gl_exit_weighting exit_weighting;

    gl_cross_layer cross_layer; /* cross-layer connectivity (model/crosslayer.c) */
    int hc_expansion;           /* hyper: residual streams n_s, default 4 */
} gl_model_config;

/* Fill the defaults of docs/model.md (a small char model: V 65, d 128, L 4, H 4,
 * Hkv 4, d_ff 512, T 128, qk-norm on, tied, no variants). */
void config_defaults(gl_model_config *c);

/* Check internal consistency (divisibility, ranges, variant combinations).
 * Returns 0, or -1 with a message in err that names the offending key. */
int config_validate(const gl_model_config *c, char *err, size_t errlen);

/* Derived sizes. */
int config_head_dim(const gl_model_config *c);
int config_router_hidden(const gl_model_config *c);
/* 1 when block n mixes V1 into its values (n >= 1 and inside last_k). */
int config_layer_mixes_v1(const gl_model_config *c, int n);
/* 1 when the value residual is vr and block n mixes V1 (used by the rows of variants.h). */
static inline int vr_mixes(const gl_model_config *c, int n, gl_value_residual vr) {
    return c->value_residual == vr && config_layer_mixes_v1(c, n);
}
/* 1 for ResFormer plus (which has the shared resformer.scale and .logits). */
static inline int vr_plus(const gl_model_config *c) {
    return c->value_residual == VR_RESFORMER && c->resformer_variant == RF_PLUS;
}

/* Names used in manifests, exports and trace attributes ("unknown" out of range). */
const char *config_value_residual_name(gl_value_residual v);
const char *config_resformer_variant_name(gl_resformer_variant v);
const char *config_depth_routing_name(gl_depth_routing v);
const char *config_exit_weighting_name(gl_exit_weighting v);
const char *config_cross_layer_name(gl_cross_layer v);
/* Parse a name; return 0 on success, -1 if unknown. */
int config_parse_value_residual(const char *s, gl_value_residual *out);
int config_parse_resformer_variant(const char *s, gl_resformer_variant *out);
int config_parse_depth_routing(const char *s, gl_depth_routing *out);
int config_parse_exit_weighting(const char *s, gl_exit_weighting *out);
int config_parse_cross_layer(const char *s, gl_cross_layer *out);

#endif
