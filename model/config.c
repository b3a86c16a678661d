/*
 * config.c — defaults, consistency checks, derived sizes and enum names of a
 * gl_model_config (see config.h and docs/model.md).
 *
 * What it does not do: read manifests (harness/store/manifest.c does, and checks
 * each key's range with a line number before this file sees the struct) or
 * allocate anything.  config_validate is the last word on whether a config
 * can be built; it is also run on configs read back from checkpoints, and its
 * ranges are the rows the manifest's key table reads too (config.h, CFG_RANGE).
 *
 * Error messages name the manifest key ("model.n_kv_head"), because that is
 * what a user edits to fix them.
 */
#include "config.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* The ranged keys (config.h's CFG_RANGE rows), in the order config_validate reports them. */
#define CFG_INT_ROW(f, routing, cross) {#f, offsetof(gl_model_config, f), 0, CFG_RANGE(f), 0, 0, routing, cross}
#define CFG_FLOAT_ROW(f) {#f, offsetof(gl_model_config, f), 1, CFG_RANGE(f), -1, -1}
const config_range config_ranges[] = {
    CFG_INT_ROW(vocab_size, -1, -1),
    CFG_INT_ROW(d_model, -1, -1),
    CFG_INT_ROW(n_layer, -1, -1),
    CFG_INT_ROW(n_head, -1, -1),
    CFG_INT_ROW(n_kv_head, -1, -1),
    CFG_INT_ROW(d_ff, -1, -1),
    CFG_INT_ROW(seq_len, -1, -1),
    CFG_INT_ROW(router_hidden, -1, -1),
    CFG_FLOAT_ROW(norm_eps),
    CFG_FLOAT_ROW(rope_base),
    CFG_FLOAT_ROW(router_init_bias),
    CFG_FLOAT_ROW(tsa_lambda),
    CFG_FLOAT_ROW(dropout),
    CFG_INT_ROW(mod_every, DR_MOD, -1),
    CFG_INT_ROW(hc_expansion, -1, CL_HYPER),
};
const int config_n_ranges = (int)(sizeof config_ranges / sizeof config_ranges[0]);
#undef CFG_INT_ROW
#undef CFG_FLOAT_ROW

/* The one table of variant names (rows of variants.h), indexed by the enum. */
#define GL_ENUM_NAME(id, name) [id] = name,
static const char *const vr_names[] = {GL_VALUE_RESIDUALS(GL_ENUM_NAME)};
static const char *const rf_names[] = {GL_RESFORMER_VARIANTS(GL_ENUM_NAME)};
static const char *const sg_names[] = {GL_SAT_GATES(GL_ENUM_NAME)};
static const char *const dr_names[] = {GL_DEPTH_ROUTINGS(GL_ENUM_NAME)};
static const char *const ee_names[] = {GL_EXIT_WEIGHTINGS(GL_ENUM_NAME)};
static const char *const xf_names[] = {GL_EXIT_FORMS(GL_ENUM_NAME)};
static const char *const cl_names[] = {GL_CROSS_LAYERS(GL_ENUM_NAME)};
static const char *const bb_names[] = {GL_BACKBONES(GL_ENUM_NAME)};
static const char *const tf_names[] = {GL_TSA_FORMS(GL_ENUM_NAME)};
#undef GL_ENUM_NAME

#define NELEM(a) ((int)(sizeof(a) / sizeof((a)[0])))
_Static_assert(NELEM(vr_names) == VR_COUNT, "one name per value residual");
_Static_assert(NELEM(rf_names) == RF_COUNT, "one name per ResFormer variant");
_Static_assert(NELEM(sg_names) == SG_COUNT, "one name per SATFormer gate function");
_Static_assert(NELEM(dr_names) == DR_COUNT, "one name per depth routing");
_Static_assert(NELEM(ee_names) == EE_COUNT, "one name per exit weighting");
_Static_assert(NELEM(xf_names) == XF_COUNT, "one name per exit form");
_Static_assert(NELEM(cl_names) == CL_COUNT, "one name per cross-layer variant");
_Static_assert(NELEM(bb_names) == BB_COUNT, "one name per backbone");
_Static_assert(NELEM(tf_names) == TF_COUNT, "one name per TSA form");

void config_defaults(gl_model_config *c) {
    memset(c, 0, sizeof *c);
    c->vocab_size = 65; /* Tiny Shakespeare's 65 characters */
    c->d_model = 128;
    c->n_layer = 4;
    c->n_head = 4;
    c->n_kv_head = 4;
    c->d_ff = 512;
    c->seq_len = 128;
    c->norm_eps = 1e-6f;
    c->rope_base = 10000.0f;
    c->qk_norm = 1;
    c->tied = 1;
    c->backbone = BB_LLAMA;
    c->dropout = 0.0f;
    c->value_residual = VR_NONE;
    c->resformer_variant = RF_PLUS;
    c->vr_last_k = 0;
    c->decay_gates = 1;
    c->sat_gate = SG_RELU;
    c->sat_gate_bias = 0;
    c->sat_gate_bias_init = 0.0f;
    c->rf_lambda1_init = NAN; /* "auto": each ResFormer variant's own start */
    c->depth_routing = DR_NONE;
    c->router_hidden = 0;
    /* p0 = σ(−2) ≈ 0.12: every router starts by letting ~88 % of the residual
     * update through, so the untrained model is close to the full-depth
     * transformer and learns as one.  The depth penalty λ then pushes p up
     * where a token does not need the block.  Starting at p0 = 0.5 (bias 0)
     * would halve every update from step 0 and the model would first have to
     * learn its way back to depth; starting much lower (bias −6) saturates the
     * sigmoid so the penalty's gradient σ'(b) is ~400x smaller and routing
     * hardly moves. */
    c->router_init_bias = -2.0f;
    c->tsa_lambda = 0.0f;
    c->tsa_form = TF_GATELAB;
    c->exit_weighting = EE_WEIGHT_LINEAR;
    c->exit_form = XF_GATELAB;
    c->mod_capacity = 0.125f; /* Raposo et al. 2024's best setting: 12.5 % of tokens, every other block */
    c->mod_every = 2;
    c->random_alpha = 0.5f;
    c->cross_layer = CL_NONE;
    c->hc_expansion = 4; /* Zhu et al. 2024's default expansion rate */
}

/* Check the rows of config_ranges that are (is_float, routing, cross): the caller has already
 * established that they apply.  Returns 0, or -1 with the row's message. */
static int cv_ranges(const gl_model_config *c, char *err, size_t errlen, int is_float, int routing, int cross) {
    for (int i = 0; i < config_n_ranges; i++) {
        const config_range *r = &config_ranges[i];
        if (r->is_float != is_float || r->routing != routing || r->cross != cross) continue;
        const char *field = (const char *)c + r->off;
        if (!is_float) {
            int v = *(const int *)field;
            if (v >= r->lo && v <= r->hi) continue;
            snprintf(err, errlen, "model.%s (%d) must be between %d and %d", r->name, v, (int)r->lo, (int)r->hi);
            return -1;
        }
        double v = *(const float *)field;
        int below = r->lo_open ? !(v > r->lo) : !(v >= r->lo), above = r->hi_open ? !(v < r->hi) : !(v <= r->hi);
        if (!isfinite(v) || below || above) {
            snprintf(err, errlen, "model.%s (%g) must be in %c%g, %g%c", r->name, v, r->lo_open ? '(' : '[', r->lo,
                     r->hi, r->hi_open ? ')' : ']');
            return -1;
        }
    }
    return 0;
}

static int check_bool(char *err, size_t errlen, const char *key, int v) {
    if (v == 0 || v == 1) return 0;
    snprintf(err, errlen, "%s (%d) must be 0 or 1", key, v);
    return -1;
}

/* config_validate's checks by concern: sizes, flags and the value path (SATFormer's gate, ResFormer's
 * start); heads, numerics, enums and depth routing; the cross-layer variants and their combinations.
 * Each returns 0, or -1 with a message naming the key. */
static int cv_sizes_and_value_path(const gl_model_config *c, char *err, size_t errlen) {
    if (cv_ranges(c, err, errlen, 0, -1, -1) ||
        check_bool(err, errlen, "model.qk_norm", c->qk_norm) ||
        check_bool(err, errlen, "model.tied", c->tied) ||
        check_bool(err, errlen, "model.decay_gates", c->decay_gates) ||
        check_bool(err, errlen, "model.sat_gate_bias", c->sat_gate_bias))
        return -1;
    if ((int)c->sat_gate < 0 || (int)c->sat_gate >= NELEM(sg_names)) {
        snprintf(err, errlen, "model.sat_gate (%d) is not a known gate function", (int)c->sat_gate);
        return -1;
    }
    if (!(isfinite(c->sat_gate_bias_init) && fabsf(c->sat_gate_bias_init) <= 30.0f)) {
        snprintf(err, errlen, "model.sat_gate_bias_init (%g) must be in [-30, 30]", (double)c->sat_gate_bias_init);
        return -1;
    }
    /* softmax over a single KV head is the constant 1 (v' = v + V1 whatever Wα is): no gate to learn */
    if (c->value_residual == VR_SATFORMER && c->sat_gate == SG_SOFTMAX && c->n_kv_head < 2) {
        snprintf(err, errlen,
                 "model.sat_gate = softmax needs model.n_kv_head >= 2 (a softmax over one KV head is the "
                 "constant 1 and Wα gets no gradient), got %d; use more KV heads or another gate function",
                 c->n_kv_head);
        return -1;
    }
    if (!isnan(c->rf_lambda1_init) && !(isfinite(c->rf_lambda1_init) && fabsf(c->rf_lambda1_init) <= 100.0f)) {
        snprintf(err, errlen, "model.resformer_lambda1_init (%g) must be auto or in [-100, 100]",
                 (double)c->rf_lambda1_init);
        return -1;
    }
    if (!isnan(c->rf_lambda1_init) && c->value_residual == VR_RESFORMER && c->resformer_variant == RF_IDENTITY) {
        snprintf(err, errlen,
                 "model.resformer_lambda1_init = %g cannot be used with model.resformer_variant = identity "
                 "(its λ1 is the constant 0.5); use plus or learnable, or leave it auto",
                 (double)c->rf_lambda1_init);
        return -1;
    }

    return 0;
}

static int cv_heads_and_routing(const gl_model_config *c, char *err, size_t errlen) {
    if (c->d_model % c->n_head != 0) {
        snprintf(err, errlen, "model.n_head (%d) must divide model.d_model (%d)", c->n_head,
                 c->d_model);
        return -1;
    }
    int hd = c->d_model / c->n_head;
    if (hd % 2 != 0 && !bb_gpt2(c)) {
        snprintf(err, errlen,
                 "head size model.d_model / model.n_head = %d / %d = %d must be even "
                 "(rotary embedding rotates pairs)",
                 c->d_model, c->n_head, hd);
        return -1;
    }
    if (c->n_head % c->n_kv_head != 0) {
        snprintf(err, errlen, "model.n_kv_head (%d) must divide model.n_head (%d)", c->n_kv_head,
                 c->n_head);
        return -1;
    }
    if (cv_ranges(c, err, errlen, 1, -1, -1)) return -1;
    if ((int)c->value_residual < 0 || (int)c->value_residual >= NELEM(vr_names)) {
        snprintf(err, errlen, "model.value_residual (%d) is not a known variant",
                 (int)c->value_residual);
        return -1;
    }
    if ((int)c->resformer_variant < 0 || (int)c->resformer_variant >= NELEM(rf_names)) {
        snprintf(err, errlen, "model.resformer_variant (%d) is not a known variant",
                 (int)c->resformer_variant);
        return -1;
    }
    if ((int)c->depth_routing < 0 || (int)c->depth_routing >= NELEM(dr_names)) {
        snprintf(err, errlen, "model.depth_routing (%d) is not a known variant",
                 (int)c->depth_routing);
        return -1;
    }
    if ((int)c->exit_weighting < 0 || (int)c->exit_weighting >= NELEM(ee_names)) {
        snprintf(err, errlen, "model.exit_weighting (%d) is not a known weighting",
                 (int)c->exit_weighting);
        return -1;
    }
    if ((int)c->exit_form < 0 || (int)c->exit_form >= NELEM(xf_names)) {
        snprintf(err, errlen, "model.exit_form (%d) is not a known form", (int)c->exit_form);
        return -1;
    }
    /* the official early-exit protocol: its loss is the uniform mean over every exit, and its first exit
     * at inference is after block 1, so it needs an early-exit model of two blocks at least */
    if (c->exit_form == XF_PAPER && c->depth_routing != DR_EARLY_EXIT) {
        snprintf(err, errlen, "model.exit_form = paper needs model.depth_routing = early_exit (got %s); drop "
                 "exit_form or set depth_routing = early_exit", dr_names[c->depth_routing]);
        return -1;
    }
    if (c->exit_form == XF_PAPER && c->exit_weighting != EE_WEIGHT_UNIFORM) {
        snprintf(err, errlen, "model.exit_form = paper trains with the official uniform mean over the exits: "
                 "set model.exit_weighting = uniform (got %s)", ee_names[c->exit_weighting]);
        return -1;
    }
    if (c->exit_form == XF_PAPER && c->n_layer < 2) {
        snprintf(err, errlen, "model.exit_form = paper needs model.n_layer >= 2 (no exit after block 0), got %d",
                 c->n_layer);
        return -1;
    }
    if (c->vr_last_k < 0 || c->vr_last_k > c->n_layer - 1) {
        snprintf(err, errlen,
                 "model.value_residual_last_k (%d) must be between 0 and model.n_layer - 1 (%d)",
                 c->vr_last_k, c->n_layer - 1);
        return -1;
    }
    if (c->value_residual != VR_NONE && c->n_layer < 2) {
        snprintf(err, errlen,
                 "model.value_residual = %s needs model.n_layer >= 2 (block 0 only provides V1), "
                 "got %d",
                 vr_names[c->value_residual], c->n_layer);
        return -1;
    }
    if (c->depth_routing == DR_TSA && c->n_layer < 2) {
        snprintf(err, errlen,
                 "model.depth_routing = tsa needs model.n_layer >= 2 (block 0 always runs), got %d",
                 c->n_layer);
        return -1;
    }
    if ((c->depth_routing == DR_MOD || c->depth_routing == DR_RANDOM) && c->n_layer < 2) {
        snprintf(err, errlen, "model.depth_routing = %s needs model.n_layer >= 2 (block 0 always runs), got %d",
                 dr_names[c->depth_routing], c->n_layer);
        return -1;
    }
    /* the MoD and random keys only matter to their routing (a zeroed struct elsewhere stays valid) */
    if (c->depth_routing == DR_MOD) {
        if (!(isfinite(c->mod_capacity) && c->mod_capacity > 0.0f && c->mod_capacity <= 1.0f)) {
            snprintf(err, errlen, "model.mod_capacity (%g) must be in (0, 1] (the share of a window's tokens a "
                     "routed block processes)", (double)c->mod_capacity);
            return -1;
        }
        if (cv_ranges(c, err, errlen, 0, DR_MOD, -1)) return -1;
    }
    if (c->depth_routing == DR_RANDOM &&
        !(isfinite(c->random_alpha) && c->random_alpha > 0.0f && c->random_alpha <= 1.0f)) {
        snprintf(err, errlen, "model.random_alpha (%g) must be in (0, 1] (the probability a (token, block) pair "
                 "is computed)", (double)c->random_alpha);
        return -1;
    }
    return 0;
}

static int cv_cross_layer(const gl_model_config *c, char *err, size_t errlen) {
    if ((int)c->cross_layer < 0 || (int)c->cross_layer >= NELEM(cl_names)) {
        snprintf(err, errlen, "model.cross_layer (%d) is not a known variant", (int)c->cross_layer);
        return -1;
    }
    /* hc_expansion only matters to hyper (a zeroed struct elsewhere stays valid) */
    if (c->cross_layer == CL_HYPER && cv_ranges(c, err, errlen, 0, -1, CL_HYPER)) return -1;
    /* Cross-layer combinations (docs/crosslayer.md, "Combinations").  Value
     * residuals live inside a block's value path and combine with all three.
     * early_exit freezes an exited token's single residual state and reads the
     * shared head after every block; with a depth-weighted average, widened
     * streams or per-input dense mixes there is no one state to freeze.  TSA
     * scales one block's residual update by (1 - p) and reads one attention
     * input: well defined for DenseFormer (the update of the block's own
     * stream, before the average), not for hyper (the update enters n_s
     * streams with learned weights) or mudd (the block reads four different
     * streams). */
    if (c->cross_layer != CL_NONE && c->depth_routing == DR_EARLY_EXIT) {
        snprintf(err, errlen,
                 "model.cross_layer = %s cannot be combined with model.depth_routing = early_exit "
                 "(an exited token freezes one residual state, which %s does not have); use "
                 "depth_routing = none%s",
                 cl_names[c->cross_layer], cl_names[c->cross_layer],
                 c->cross_layer == CL_DENSEFORMER ? " or tsa" : "");
        return -1;
    }
    if ((c->cross_layer == CL_HYPER || c->cross_layer == CL_MUDD) && c->depth_routing == DR_TSA) {
        snprintf(err, errlen,
                 "model.cross_layer = %s cannot be combined with model.depth_routing = tsa (TSA "
                 "scales a block's update on a single residual stream; %s); use cross_layer = "
                 "denseformer with tsa, or depth_routing = none",
                 cl_names[c->cross_layer],
                 c->cross_layer == CL_HYPER ? "hyper-connections add it to hc_expansion streams with learned weights"
                                            : "MUDD blocks read separate query, key, value and residual streams");
        return -1;
    }
    /* MoD and random scale or drop one block's update on the single residual
     * stream like TSA; only the plain stream is implemented for them. */
    if (c->cross_layer != CL_NONE && (c->depth_routing == DR_MOD || c->depth_routing == DR_RANDOM)) {
        snprintf(err, errlen,
                 "model.cross_layer = %s cannot be combined with model.depth_routing = %s (implemented on the "
                 "plain residual stream only); use cross_layer = none",
                 cl_names[c->cross_layer], dr_names[c->depth_routing]);
        return -1;
    }
    /* Combinations: early_exit with a value residual is fine (V1 comes from
     * block 0, which every token runs); tsa together with early_exit cannot be
     * written, depth_routing is one enum. */
    return 0;
}

/* The backbone, dropout and the TSA form (docs/model.md "The TSA paper's own configuration").  gpt2 has
 * no rotary (head size may be odd) and no qk-norm; the cross-layer variants read RMSNorm'd streams of
 * their own (crosslayer.c) and are written for the llama block only. */
static int cv_backbone(const gl_model_config *c, char *err, size_t errlen) {
    if ((int)c->backbone < 0 || (int)c->backbone >= NELEM(bb_names)) {
        snprintf(err, errlen, "model.backbone (%d) is not a known backbone", (int)c->backbone);
        return -1;
    }
    if ((int)c->tsa_form < 0 || (int)c->tsa_form >= NELEM(tf_names)) {
        snprintf(err, errlen, "model.tsa_form (%d) is not a known TSA form", (int)c->tsa_form);
        return -1;
    }
    if (c->tsa_form == TF_PAPER && c->depth_routing != DR_TSA) {
        snprintf(err, errlen, "model.tsa_form = paper needs model.depth_routing = tsa (it is the form of TSA's "
                              "router and gates), got %s", dr_names[c->depth_routing]);
        return -1;
    }
    if (c->dropout > 0.0f && c->depth_routing == DR_MOD) {
        snprintf(err, errlen, "model.dropout = %g cannot be used with model.depth_routing = mod (its masked "
                              "attention has no dropout); set model.dropout = 0", (double)c->dropout);
        return -1;
    }
    if (!bb_gpt2(c)) return 0;
    if (c->qk_norm) {
        snprintf(err, errlen, "model.qk_norm = 1 cannot be used with model.backbone = gpt2 (the GPT-2 block has "
                              "no qk-norm); set model.qk_norm = 0");
        return -1;
    }
    if (c->cross_layer != CL_NONE) {
        snprintf(err, errlen, "model.cross_layer = %s cannot be used with model.backbone = gpt2 (the cross-layer "
                              "variants are written for the llama block); use cross_layer = none or backbone = llama",
                 cl_names[c->cross_layer]);
        return -1;
    }
    return 0;
}

int config_validate(const gl_model_config *c, char *err, size_t errlen) {
    if (cv_sizes_and_value_path(c, err, errlen) || cv_heads_and_routing(c, err, errlen) ||
        cv_cross_layer(c, err, errlen) || cv_backbone(c, err, errlen))
        return -1;
    return 0;
}

int config_head_dim(const gl_model_config *c) {
    assert(c->n_head > 0);
    return c->d_model / c->n_head;
}

int config_router_hidden(const gl_model_config *c) {
    if (c->router_hidden > 0) return c->router_hidden;
    int r = c->d_model / 4;
    return r > 16 ? r : 16;
}

int config_layer_mixes_v1(const gl_model_config *c, int n) {
    if (c->value_residual == VR_NONE || n < 1) return 0;
    return c->vr_last_k == 0 || n >= c->n_layer - c->vr_last_k;
}

/* The routing kinds table (variants.h), indexed by the enum. */
typedef struct {
    int counts, sparse, hard;
    const char *decode, *knob, *symbol, *title;
} routing_kind;
#define GL_ROUTING_ROW(id, counts, sparse, hard, decode, knob, symbol, title) \
    [id] = {counts, sparse, hard, decode, knob, symbol, title},
static const routing_kind routing_kinds[] = {GL_ROUTING_KINDS(GL_ROUTING_ROW)};
#undef GL_ROUTING_ROW
_Static_assert(NELEM(routing_kinds) == DR_COUNT, "one routing kind row per depth routing");

static const routing_kind *routing_of(const gl_model_config *c) {
    assert((int)c->depth_routing >= 0 && (int)c->depth_routing < DR_COUNT);
    return &routing_kinds[c->depth_routing];
}
int config_routing_counts(const gl_model_config *c) { return routing_of(c)->counts; }
int config_routing_sparse(const gl_model_config *c) { return routing_of(c)->sparse; }
int config_routing_hard(const gl_model_config *c) { return routing_of(c)->hard; }
const char *config_routing_decode_refusal(const gl_model_config *c) { return routing_of(c)->decode; }
const char *config_routing_knob(gl_depth_routing dr, const char **symbol, const char **title) {
    const routing_kind *k = (int)dr >= 0 && (int)dr < DR_COUNT ? &routing_kinds[dr] : &routing_kinds[DR_NONE];
    if (symbol) *symbol = k->symbol;
    if (title) *title = k->title;
    return k->knob;
}

int config_mod_k(const gl_model_config *c, int T) {
    long k = lroundf(c->mod_capacity * (float)T);
    return (int)(k < 1 ? 1 : k > T ? T : k);
}

int config_equal_tlops_layers(int n_layer, double alpha) {
    /* block 0 always runs; the others run on a share α of the tokens */
    long l = lround(1.0 + (n_layer - 1) * alpha);
    return (int)(l < 1 ? 1 : l > n_layer ? n_layer : l);
}

static const char *name_of(const char *const *names, int n, int v) {
    return (v >= 0 && v < n) ? names[v] : "unknown";
}

static int parse_name(const char *const *names, int n, const char *s, int *out) {
    if (!s) return -1;
    for (int i = 0; i < n; i++)
        if (!strcmp(s, names[i])) {
            *out = i;
            return 0;
        }
    return -1;
}

const char *config_value_residual_name(gl_value_residual v) {
    return name_of(vr_names, NELEM(vr_names), (int)v);
}
const char *config_resformer_variant_name(gl_resformer_variant v) {
    return name_of(rf_names, NELEM(rf_names), (int)v);
}
const char *config_sat_gate_name(gl_sat_gate v) {
    return name_of(sg_names, NELEM(sg_names), (int)v);
}
const char *config_depth_routing_name(gl_depth_routing v) {
    return name_of(dr_names, NELEM(dr_names), (int)v);
}
const char *config_exit_weighting_name(gl_exit_weighting v) {
    return name_of(ee_names, NELEM(ee_names), (int)v);
}
const char *config_exit_form_name(gl_exit_form v) {
    return name_of(xf_names, NELEM(xf_names), (int)v);
}
const char *config_cross_layer_name(gl_cross_layer v) {
    return name_of(cl_names, NELEM(cl_names), (int)v);
}
const char *config_backbone_name(gl_backbone v) { return name_of(bb_names, NELEM(bb_names), (int)v); }
const char *config_tsa_form_name(gl_tsa_form v) { return name_of(tf_names, NELEM(tf_names), (int)v); }

int config_parse_value_residual(const char *s, gl_value_residual *out) {
    int i;
    if (parse_name(vr_names, NELEM(vr_names), s, &i)) return -1;
    *out = (gl_value_residual)i;
    return 0;
}
int config_parse_resformer_variant(const char *s, gl_resformer_variant *out) {
    int i;
    if (parse_name(rf_names, NELEM(rf_names), s, &i)) return -1;
    *out = (gl_resformer_variant)i;
    return 0;
}
int config_parse_sat_gate(const char *s, gl_sat_gate *out) {
    int i;
    if (parse_name(sg_names, NELEM(sg_names), s, &i)) return -1;
    *out = (gl_sat_gate)i;
    return 0;
}
int config_parse_depth_routing(const char *s, gl_depth_routing *out) {
    int i;
    if (parse_name(dr_names, NELEM(dr_names), s, &i)) return -1;
    *out = (gl_depth_routing)i;
    return 0;
}
int config_parse_exit_weighting(const char *s, gl_exit_weighting *out) {
    int i;
    if (parse_name(ee_names, NELEM(ee_names), s, &i)) return -1;
    *out = (gl_exit_weighting)i;
    return 0;
}
int config_parse_exit_form(const char *s, gl_exit_form *out) {
    int i;
    if (parse_name(xf_names, NELEM(xf_names), s, &i)) return -1;
    *out = (gl_exit_form)i;
    return 0;
}
int config_parse_cross_layer(const char *s, gl_cross_layer *out) {
    int i;
    if (parse_name(cl_names, NELEM(cl_names), s, &i)) return -1;
    *out = (gl_cross_layer)i;
    return 0;
}
int config_parse_backbone(const char *s, gl_backbone *out) {
    int i;
    if (parse_name(bb_names, NELEM(bb_names), s, &i)) return -1;
    *out = (gl_backbone)i;
    return 0;
}
int config_parse_tsa_form(const char *s, gl_tsa_form *out) {
    int i;
    if (parse_name(tf_names, NELEM(tf_names), s, &i)) return -1;
    *out = (gl_tsa_form)i;
    return 0;
}
