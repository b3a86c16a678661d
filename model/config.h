/*
 * config.h — the shape and variant of one gatelab model.
 *
 * A gl_model_config is plain data: the harness fills it from a manifest
 * (harness/store/manifest.c), the model reads it (model/model.c), checkpoints hash
 * it.  Nothing here allocates or does I/O.  The model definition it describes
 * is the one in docs/model.md, and the variants are:
 *
 *   value_residual   none | resformer | satformer | ...  (SATFormer paper; docs/model.md)
 *   depth_routing    none | tsa | early_exit | mod | random  (TSA paper; Raposo et al. 2024;
 *                                                            a random hard-routing control)
 *   cross_layer      none | denseformer | hyper | mudd      (dense baselines, docs/crosslayer.md)
 *   backbone         llama | gpt2   (gpt2: the TSA paper's own GPT-2 style block)
 *   tsa_form         gatelab | paper (the TSA paper's router and sequential gates)
 *   dropout          a rate, training only (docs/model.md "The TSA paper's own configuration")
 *
 * Every name is a row of model/variants.h.  Parameter names and shapes
 * derived from a config are the tensor table (model.h: m->tensors,
 * model_find_tensor).
 */
#ifndef GATELAB_MODEL_CONFIG_H
#define GATELAB_MODEL_CONFIG_H

#include <math.h>
#include <stddef.h>

#include "variants.h"

/* The enums come from the lists in variants.h (one row per variant, with its
 * manifest name); *_COUNT is the number of names. */
#define GL_ENUM_ID(id, name) id,
#define GL_ENUM_ONE(id, name) +1
typedef enum { GL_VALUE_RESIDUALS(GL_ENUM_ID) } gl_value_residual;
typedef enum { GL_RESFORMER_VARIANTS(GL_ENUM_ID) } gl_resformer_variant;
typedef enum { GL_SAT_GATES(GL_ENUM_ID) } gl_sat_gate;
typedef enum { GL_DEPTH_ROUTINGS(GL_ENUM_ID) } gl_depth_routing;
typedef enum { GL_EXIT_WEIGHTINGS(GL_ENUM_ID) } gl_exit_weighting;
typedef enum { GL_EXIT_FORMS(GL_ENUM_ID) } gl_exit_form;
typedef enum { GL_CROSS_LAYERS(GL_ENUM_ID) } gl_cross_layer;
typedef enum { GL_BACKBONES(GL_ENUM_ID) } gl_backbone;
typedef enum { GL_TSA_FORMS(GL_ENUM_ID) } gl_tsa_form;
enum {
    VR_COUNT = 0 GL_VALUE_RESIDUALS(GL_ENUM_ONE),
    RF_COUNT = 0 GL_RESFORMER_VARIANTS(GL_ENUM_ONE),
    SG_COUNT = 0 GL_SAT_GATES(GL_ENUM_ONE),
    DR_COUNT = 0 GL_DEPTH_ROUTINGS(GL_ENUM_ONE),
    EE_COUNT = 0 GL_EXIT_WEIGHTINGS(GL_ENUM_ONE),
    XF_COUNT = 0 GL_EXIT_FORMS(GL_ENUM_ONE),
    CL_COUNT = 0 GL_CROSS_LAYERS(GL_ENUM_ONE),
    BB_COUNT = 0 GL_BACKBONES(GL_ENUM_ONE),
    TF_COUNT = 0 GL_TSA_FORMS(GL_ENUM_ONE),
};
#undef GL_ENUM_ID
#undef GL_ENUM_ONE

typedef struct {
    int vocab_size;  /* V: number of token ids */
    int d_model;     /* d */
    int n_layer;     /* L: blocks, numbered 0..L-1 */
    int n_head;      /* H query heads; head size hd = d / H */
    int n_kv_head;   /* Hkv key/value heads, H % Hkv == 0 */
    int d_ff;        /* FFN hidden width (SwiGLU's, or gpt2's GELU MLP's) */
    int seq_len;     /* T: context length the model is trained at */
    float norm_eps;  /* RMSNorm (LayerNorm for gpt2) epsilon, 1e-6 */
    float rope_base; /* rotary base, 10000 */
    int qk_norm;     /* 1: per-head RMSNorm on q and k (learned scale of size hd) */
    int tied;        /* 1: output head is the embedding (logits = x Eᵀ) */
    gl_backbone backbone; /* llama (default) | gpt2: the TSA paper's GPT-2 style block (docs/model.md) */
    float dropout;   /* dropout rate in training, [0, 1): embedding sum, attention probabilities, FFN hidden
                        activation, FFN output; off at evaluation and inference (model.h drop_key) */

    gl_value_residual value_residual;
    gl_resformer_variant resformer_variant;
    int vr_last_k;   /* 0: every block n >= 1 mixes V1; k > 0: only blocks n >= L-k (and n >= 1) */
    int decay_gates; /* 1: AdamW weight decay also on Wα (and its bias) and the λ's */
    gl_sat_gate sat_gate;     /* SATFormer: α = φ(x Wα + b), φ from GL_SAT_GATES (default relu) */
    int sat_gate_bias;        /* SATFormer: 1 adds the learned bias b (Hkv per block) */
    float sat_gate_bias_init; /* its initial value (every entry), default 0 */
    float rf_lambda1_init;    /* ResFormer plus / learnable: initial λ1 of every block; NaN (manifest
                                 "auto", the default): the variant's own start, s = L (λ1 = L/M) for
                                 plus, 0.5 for learnable */

    gl_depth_routing depth_routing;
    int router_hidden;      /* 0: max(d/4, 16) */
    float router_init_bias; /* initial fc2_b of every router; p0 = σ(bias) */
    float tsa_lambda;       /* depth penalty λ */
    gl_tsa_form tsa_form;   /* TSA router and gating: gatelab (default) | paper */
    gl_exit_weighting exit_weighting;
    gl_exit_form exit_form; /* early exit: gatelab (default) | paper (the TSA paper's official protocol) */
    float mod_capacity;     /* mod: share of a window's tokens each routed block processes, (0, 1] */
    int mod_every;          /* mod: block n >= 1 is routed when (n - 1) % mod_every == 0 */
    float random_alpha;     /* random: probability that a (token, block >= 1) pair is computed, (0, 1] */

    gl_cross_layer cross_layer; /* cross-layer connectivity (model/crosslayer.c) */
    int hc_expansion;           /* hyper: residual streams n_s, default 4 */
} gl_model_config;

/* Fill the defaults of docs/model.md (a small char model: V 65, d 128, L 4, H 4,
 * Hkv 4, d_ff 512, T 128, qk-norm on, tied, no variants). */
void config_defaults(gl_model_config *c);

/* Check internal consistency (divisibility, ranges, variant combinations).
 * Returns 0, or -1 with a message in err that names the offending key. */
/* The ranges of the model's keys with fixed bounds, one row each, read by both config_validate and the
 * manifest's key table (harness/store/manifest_keys.c takes a row's numbers through CFG_RANGE(name)),
 * so the two can no longer disagree.  An integer row is lo, hi (both ends included); a real row is
 * lo, hi, lo_open, hi_open (*_open = 1 excludes that end).
 *
 * The integer bounds are generous for a CPU harness and small enough that products such as V*d and
 * L*d*d_ff stay far from int overflow.  vocab_size starts at 1 here; the manifest also takes 0
 * ("from the data set or task", resolved before the model is built).  mod_every (a routed block every
 * n) is bounded by the depth bound; hc_expansion counts hyper-connection streams.
 * tsa_lambda ends at 1000, the bound the manifest always had: no stored config can exceed it, so
 * every existing checkpoint and manifest still loads, and a weight 1000 times the loss is already
 * beyond any setting the TSA paper uses.  rope_base and router_init_bias take the manifest's ends
 * (1e9, +-30) for the same reason. */
#define CFG_RANGE_vocab_size 1, 1048576
#define CFG_RANGE_d_model 1, 16384
#define CFG_RANGE_n_layer 1, 64
#define CFG_RANGE_n_head 1, 256
#define CFG_RANGE_n_kv_head 1, 256
#define CFG_RANGE_d_ff 1, 65536
#define CFG_RANGE_seq_len 1, 65536
#define CFG_RANGE_router_hidden 0, 65536 /* 0: max(d/4, 16) */
#define CFG_RANGE_mod_every CFG_RANGE_n_layer
#define CFG_RANGE_hc_expansion 1, 16
#define CFG_RANGE_norm_eps 0, 1, 1, 0
#define CFG_RANGE_rope_base 1, 1e9, 1, 0
#define CFG_RANGE_router_init_bias -30, 30, 0, 0
#define CFG_RANGE_tsa_lambda 0, 1000, 0, 0
#define CFG_RANGE_dropout 0, 1, 0, 1
#define CFG_RANGE(name) CFG_RANGE_##name
/* A row as config_validate reads it.  A row applies to every config, or only to one depth routing
 * (mod_every: mod) or cross-layer variant (hc_expansion: hyper), -1 meaning any: a zeroed knob of a
 * variant not in use stays valid. */
typedef struct {
    const char *name; /* the [model] key */
    size_t off;       /* offset of its int (is_float 0) or float (1) in gl_model_config */
    int is_float;
    double lo, hi;
    int lo_open, hi_open;
    int routing, cross; /* the gl_depth_routing / gl_cross_layer it applies to, -1 any */
} config_range;
extern const config_range config_ranges[];
extern const int config_n_ranges;

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

/* Initial resformer.scale s of ResFormer plus: λ1ₙ = s·softmax(ℓ)ₙ = s/M at ℓ = 0 (M blocks mix V1),
 * so s = L by default and s = λ1_init·M when model.resformer_lambda1_init is set. */
static inline float vr_plus_scale_init(const gl_model_config *c) {
    int M = 0;
    for (int n = 0; n < c->n_layer; n++) M += config_layer_mixes_v1(c, n);
    return isnan(c->rf_lambda1_init) ? (float)c->n_layer : c->rf_lambda1_init * (float)M;
}
/* 1 for the gpt2 backbone (LayerNorm, learned positions, GELU MLP with biases) */
static inline int bb_gpt2(const gl_model_config *c) { return c->backbone == BB_GPT2; }
/* 1 for TSA in the paper's form (router on raw h, ReLU, sequential gates) */
static inline int tsa_paper(const gl_model_config *c) {
    return c->depth_routing == DR_TSA && c->tsa_form == TF_PAPER;
}

/* 1 when block n's tokens are routed: TSA and random every block n >= 1,
 * MoD blocks n >= 1 with (n - 1) % mod_every == 0; never block 0. */
static inline int config_block_routed(const gl_model_config *c, int n) {
    if (n < 1) return 0;
    if (c->depth_routing == DR_TSA || c->depth_routing == DR_RANDOM) return 1;
    return c->depth_routing == DR_MOD && c->mod_every > 0 && (n - 1) % c->mod_every == 0;
}
/* 1 for early exit in the TSA paper's official form (model.exit_form = paper): an exit norm per block */
static inline int ee_paper(const gl_model_config *c) {
    return c->depth_routing == DR_EARLY_EXIT && c->exit_form == XF_PAPER;
}
/* The routing kinds table of variants.h (GL_ROUTING_KINDS) for c's depth routing. */
int config_routing_counts(const gl_model_config *c); /* training logs α and TLOps saved */
int config_routing_sparse(const gl_model_config *c); /* m->sparse skips for real */
int config_routing_hard(const gl_model_config *c);   /* MoD, random: pairs computed or skipped (A[n].keep) */
/* The manifest key of routing dr's compute knob ("model.tsa_lambda", "model.mod_capacity", ...)
 * with its symbol and the routing's name for legends (either may be NULL), or NULL when it has none. */
const char *config_routing_knob(gl_depth_routing dr, const char **symbol, const char **title);
/* NULL, or why `sample` cannot generate with this routing. */
const char *config_routing_decode_refusal(const gl_model_config *c);
/* MoD: tokens a routed block processes in a window of T: round(mod_capacity·T), at least 1, at most T. */
int config_mod_k(const gl_model_config *c, int T);
/* The dense model of equal TLOps to a routed model of L blocks at active
 * fraction α: 1 + (L − 1)·α blocks, rounded to nearest (docs/model.md "Equal-TLOps dense"). */
int config_equal_tlops_layers(int n_layer, double alpha);

/* Names used in manifests, exports and trace attributes ("unknown" out of range). */
const char *config_value_residual_name(gl_value_residual v);
const char *config_resformer_variant_name(gl_resformer_variant v);
const char *config_sat_gate_name(gl_sat_gate v);
const char *config_depth_routing_name(gl_depth_routing v);
const char *config_exit_weighting_name(gl_exit_weighting v);
const char *config_exit_form_name(gl_exit_form v);
const char *config_cross_layer_name(gl_cross_layer v);
const char *config_backbone_name(gl_backbone v);
const char *config_tsa_form_name(gl_tsa_form v);
/* Parse a name; return 0 on success, -1 if unknown. */
int config_parse_value_residual(const char *s, gl_value_residual *out);
int config_parse_resformer_variant(const char *s, gl_resformer_variant *out);
int config_parse_sat_gate(const char *s, gl_sat_gate *out);
int config_parse_depth_routing(const char *s, gl_depth_routing *out);
int config_parse_exit_weighting(const char *s, gl_exit_weighting *out);
int config_parse_exit_form(const char *s, gl_exit_form *out);
int config_parse_cross_layer(const char *s, gl_cross_layer *out);
int config_parse_backbone(const char *s, gl_backbone *out);
int config_parse_tsa_form(const char *s, gl_tsa_form *out);

#endif
