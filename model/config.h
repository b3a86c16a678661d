/*
 * config.h — the shape and variant of one gatelab model.
 *
 * A gl_model_config is plain data: the harness fills it from a manifest
 * (harness/store/manifest.c), the model reads it (model/model.c), checkpoints hash
 * it.  Nothing here allocates or does I/O.  The model definition it describes
 * is the one in DESIGN.md ("Model"), and the variants are:
 *
 *   value_residual   none | resformer | satformer     (SATFormer paper)
 *   depth_routing    none | tsa | early_exit          (TSA paper)
 *   cross_layer      none | denseformer | hyper | mudd  (dense baselines, docs/crosslayer.md)
 *
 * Parameter names and shapes derived from a config are listed by
 * model_tensor_table() in model/model.h.
 */
#ifndef GATELAB_MODEL_CONFIG_H
#define GATELAB_MODEL_CONFIG_H

#include <stddef.h>

typedef enum { VR_NONE = 0, VR_RESFORMER, VR_SATFORMER } gl_value_residual;
typedef enum { RF_PLUS = 0, RF_LEARNABLE, RF_IDENTITY } gl_resformer_variant;
typedef enum { DR_NONE = 0, DR_TSA, DR_EARLY_EXIT } gl_depth_routing;
typedef enum { EE_WEIGHT_LINEAR = 0, EE_WEIGHT_UNIFORM } gl_exit_weighting;
typedef enum { CL_NONE = 0, CL_DENSEFORMER, CL_HYPER, CL_MUDD } gl_cross_layer;

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

/* Fill the defaults of DESIGN.md (a small char model: V 65, d 128, L 4, H 4,
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

/* Names used in manifests, exports and trace attributes. */
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
