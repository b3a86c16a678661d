/*
 * model.h — one gatelab model: parameters, gradients, AdamW moments,
 * activations, forward, backward, gate overrides.
 *
 * Layout (stated once, used everywhere):
 *   row-major; a token-major activation is (B*T, width); weights are stored
 *   (out, in) like a linear layer, so Y = X·Wᵀ, dX += dY·W, dW += dYᵀ·X.
 *
 * Memory: model_init makes one allocation per family (parameters, gradients,
 * AdamW m, AdamW v, activations, activation gradients) sized for max_B × T;
 * no step allocates.  Every tensor of a family is a typed pointer into it.
 *
 * Names: m->tensors lists every parameter of this config with its docs/model.md
 * name, shape, offset into the parameter block and whether weight decay
 * applies (built by tensors.c from the rows of variants.h; model_find_tensor
 * looks one up).  That one table drives checkpoints, exports and test labels.
 * The gates a run records are the rows of variants.h's GL_GATES (gatekind.h).
 *
 * The model does no I/O and knows nothing of manifests, SQLite or HDF5.
 *
 * Where things live: the forward/backward wiring and the buffers in model.c;
 * the layer ops in ops.h (matmul.c, attn.c, norm.c, rope.c, ffn.c, xent.c,
 * router.c); the config and its checks in config.h; the tensor and gate tables
 * in variants.h (tensors.c, gatekind.h); value residuals in valueres.h, depth
 * routing in routing.h, cross-layer connections in crosslayer.h, dropout's
 * masks in dropout.h, the
 * row-selective inference kernels in infer.h, KV-cache decoding in decode.h,
 * AdamW in adamw.h, the seeded generators in rng.h.
 */
#ifndef GATELAB_MODEL_MODEL_H
#define GATELAB_MODEL_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"

#define GL_NAME_MAX 48
#define GL_MAX_LAYERS 64

typedef struct {
    char name[GL_NAME_MAX]; /* e.g. "layers.3.attn.wq" */
    size_t offset;          /* in floats, from the start of the parameter block */
    size_t size;            /* in floats */
    int ndim;               /* 1 or 2 */
    int shape[2];           /* (out, in) for matrices; (n, 1) for vectors */
    int decay;              /* 1: AdamW weight decay applies */
    int kind;               /* its row in the tensor lists of variants.h (tensors.c) */
    int index;              /* block or router number; -1 for model-wide tensors */
} gl_tensor;

/* Typed views of the parameter (or gradient) block: one pointer per row of
 * the tensor lists in variants.h, whose rows give each one's name and shape;
 * NULL where the config has no such tensor. */
#define GL_VIEW_FIELD(id, name, rows, cols, ndim, has, decay, init) float *id;
typedef struct {
    GL_BLOCK_TENSORS(GL_VIEW_FIELD)
} gl_block_params;

typedef struct {
    GL_ROUTER_TENSORS(GL_VIEW_FIELD)
} gl_router_params;

/* Cross-layer parameters (model/crosslayer.c, docs/crosslayer.md); S = hc_expansion.
 * Written out by hand (hc[] nests); every pointer is a member of one row of
 * GL_XL_TENSORS, which tensors.c checks at compile time. */
typedef struct {
    float *static_alpha;        /* (S, S+1)  [A_m | A_r] of Zhu et al. */
    float *static_beta;         /* (S) */
    float *dynamic_alpha_fn;    /* (S+1, d)  the paper's W_α, stored (out, in) */
    float *dynamic_beta_fn;     /* (1, d) */
    float *dynamic_alpha_scale; /* (1) */
    float *dynamic_beta_scale;  /* (1) */
} gl_hc_params;

typedef struct {
    float *dwa;         /* (n+2)  DenseFormer weights after block n */
    gl_hc_params hc[2]; /* hyper: [0] around block n's attention, [1] around its FFN */
    float *mudd_w1;     /* (K, d)  MUDD after block n, K = C·(n+2), C = 4 (n < L-1) or 1 */
    float *mudd_w2;     /* (K, K) */
    float *mudd_bias;   /* (C, n+2) static part of the dense weights */
} gl_xl_params;

typedef struct {
    GL_EMBED_TENSORS(GL_VIEW_FIELD)
    GL_RESFORMER_TENSORS(GL_VIEW_FIELD)
    GL_OUTPUT_TENSORS(GL_VIEW_FIELD) /* head == embed when tied */
    gl_block_params *layer; /* [L] */
    gl_router_params *router; /* [L-1] (TSA only) */
    gl_xl_params *xl;       /* [L] cross-layer (all NULL when cross_layer = none) */
} gl_param_ptrs;
#undef GL_VIEW_FIELD

/* Per-block activations kept for backward; all (B*T, width) token-major. */
typedef struct {
    float *h_in;   /* (B*T, d) residual stream entering the block */
    float *xn1;    /* (B*T, d) attention-norm output */
    float *rstd1;  /* (B*T) */
    float *q;      /* (B*T, H*hd) x Wq */
    float *k;      /* (B*T, Hkv*hd) x Wk */
    float *v;      /* (B*T, Hkv*hd) x Wv (block 0: this is V1) */
    float *qr;     /* (B*T, H*hd) after qk-norm and rotary */
    float *kr;     /* (B*T, Hkv*hd) after qk-norm and rotary */
    float *qrstd;  /* (B*T*H) */
    float *krstd;  /* (B*T*Hkv) */
    float *vmix;   /* (B*T, Hkv*hd) v' after the value residual (== v when none) */
    float *gate;   /* (B*T, Hkv) value-residual gate per token and KV head, after overrides:
                      v' = v + gate·V1 (SATFormer α; see valueres.c) */
    float *gate_pre;/* (B*T, Hkv) SATFormer z = x Wα (+ b) before the gate function */
    float *att;    /* (B, H, T, T) softmax probabilities */
    float *atty;   /* (B*T, H*hd) attention output before Wo */
    float *ao;     /* (B*T, d) attention update o Wo */
    float *h_mid;  /* (B*T, d) h_in + ao */
    float *xn2;    /* (B*T, d) */
    float *rstd2;  /* (B*T) */
    float *f1;     /* (B*T, d_ff) x W1ᵀ */
    float *f3;     /* (B*T, d_ff) x W3ᵀ */
    float *fg;     /* (B*T, d_ff) silu(f1) ⊙ f3 */
    float *fo;     /* (B*T, d) FFN update */
    /* TSA: router l = n-1 feeding this block (n >= 1) */
    float *r_pre;  /* (B*T, R) W1 x + b1 */
    float *r_hid;  /* (B*T, R) GELU */
    float *p;      /* (B*T) halting probability of router n-1 */
    /* MoD / random (config_routing_hard): NULL otherwise */
    float *keep;   /* (B*T) 1 when token t runs this block, 0 when it skips (all 1 in an unrouted block) */
    float *rs;     /* (B*T) scale of a routed block's update: keep·σ(r) (MoD), keep (random) */
    float *mod_r;  /* (B*T) MoD router logit r = h_in·w of a routed block */
    float *mod_g;  /* (B*T) σ(r) */
    /* early exit: this block's output through the final norm and head */
    float *xnf;    /* (B*T, d) */
    float *rstdf;  /* (B*T) */
    float *logits; /* (B*T, V) */
} gl_block_acts;

/* Cross-layer activations (B*T rows each, B = max_B; S = hc_expansion) and the
 * gradient buffers of their backward (in dacts_mem).  NULL where unused. */
typedef struct {
    /* DenseFormer, MUDD: s_{n+1}, the output of block n (s_0 is A[0].h_in) */
    float *state[GL_MAX_LAYERS];  /* (B*T, d) */
    /* MUDD: block n >= 1 reads query/key/value streams (its residual stream is A[n].h_in) */
    float *in_q[GL_MAX_LAYERS], *in_k[GL_MAX_LAYERS], *in_v[GL_MAX_LAYERS]; /* (B*T, d) */
    float *xnk[GL_MAX_LAYERS], *xnv[GL_MAX_LAYERS];       /* (B*T, d)  normed key/value streams */
    float *rstdk[GL_MAX_LAYERS], *rstdv[GL_MAX_LAYERS];   /* (B*T) */
    /* MUDD: dense-weight MLP after block n */
    float *mrstd[GL_MAX_LAYERS];  /* (B*T)  1/rms of s_{n+1} */
    float *mz[GL_MAX_LAYERS];     /* (B*T, K)  w1 · norm(s_{n+1}) */
    float *mg[GL_MAX_LAYERS];     /* (B*T, K)  GELU(mz) */
    float *mdw[GL_MAX_LAYERS];    /* (B*T, K)  dense weights (w2 · mg + bias), index c·(n+2)+j */
    float *mu;                    /* (B*T, d)  scratch: norm(s_{n+1}) */
    /* hyper: streams H^(k) entering module k (k = 2n attention, 2n+1 FFN; H^(2L) final) */
    float *hs[2 * GL_MAX_LAYERS + 1];  /* (B*T, S, d) */
    float *hrstd[2 * GL_MAX_LAYERS];   /* (B*T, S)  1/rms of each stream */
    float *hta[2 * GL_MAX_LAYERS];     /* (B*T, S, S+1)  tanh of the dynamic α projection */
    float *htb[2 * GL_MAX_LAYERS];     /* (B*T, S)  tanh of the dynamic β projection */
    float *hbar;                       /* (B*T, S, d)  scratch: normed streams */
    /* gradient buffers */
    float *ds[GL_MAX_LAYERS + 1];      /* (B*T, d)  dL/ds_j accumulators */
    float *dots;                       /* (B*T, Kmax)  per-token weight gradients */
    float *dq, *dk, *dv;               /* (B*T, d)  MUDD: dL/d stream inputs of the block below */
    float *dxnk, *dxnv;                /* (B*T, d) */
    float *dg, *dz, *du;               /* (B*T, Kmax), (B*T, Kmax), (B*T, d) */
    float *dH[2];                      /* (B*T, S, d)  hyper: stream gradients, ping-pong */
    int cur;                           /* index of dH holding the current stream gradient */
    float *dhbar;                      /* (B*T, S, d) */
    float *dalpha;                     /* (B*T, S, S+1) */
    float *dbeta;                      /* (B*T, S) */
} gl_xl_acts;

/* Gate overrides for ablations and interventions, applied in forward. */
/* GATE_CONST: one value per (layer, KV head); GATE_TOKEN: a value per token from
 * a caller's table (resample ablation). */
typedef enum { GATE_FREE = 0, GATE_CONST, GATE_TOKEN } gl_gate_mode;
/* ROUTE_TOKEN: p per (router, batch position) from a caller's table; NaN keeps the router's own p. */
typedef enum { ROUTE_FREE = 0, ROUTE_CONST, ROUTE_RANDOM, ROUTE_TOKEN } gl_route_mode;

typedef struct {
    gl_gate_mode *gate_mode;  /* (L, Hkv) the value-residual gate (A[n].gate) */
    float *gate_value;        /* (L, Hkv) value used when mode is GATE_CONST */
    const float *gate_token;  /* (L, max_B*T, Hkv) borrowed: value by batch position when mode is GATE_TOKEN */
    gl_gate_mode *lambda1_mode; /* (L) ResFormer λ1 */
    float *lambda1_value;       /* (L) */
    gl_route_mode route_mode;   /* TSA: ROUTE_CONST forces p = route_value for every router */
    float route_value;
    float route_skip_prob;      /* ROUTE_RANDOM: each (token, router) skips with this probability */
    uint64_t route_seed;
    const float *route_token;   /* (L-1, max_B*T) borrowed: ROUTE_TOKEN's p of router l at each batch position */
} gl_overrides;

/* How m->sparse skips a TSA (token, block) pair at inference (docs/model.md "The TSA paper's own
 * configuration"):
 *   SPARSE_GATELAB  p > 0.5 skips the pair's query, attention row, Wo and FFN; a kept pair keeps its
 *                   (1 − p) scale (infer.c's packed rows)
 *   SPARSE_PAPER    the TSA paper's sparse_infer.py: p >= 0.5 halts; attention runs for every token
 *                   and a halted token's attention update is dropped (a hard 0/1 gate); the FFN runs
 *                   on the kept tokens only (gather, scatter); a kept token gets the unscaled update */
typedef enum { SPARSE_GATELAB = 0, SPARSE_PAPER } gl_sparse_form;

typedef struct gl_model {
    gl_model_config cfg;
    int hd, R;            /* head size, router hidden width */
    int max_B, T;         /* capacity */
    int B, cur_T;         /* sizes of the last forward */

    gl_tensor *tensors;   /* [n_tensors] */
    int n_tensors;
    size_t n_params;      /* floats */

    float *params;        /* (n_params) */
    float *grads;         /* (n_params) */
    float *adam_m;        /* (n_params) */
    float *adam_v;        /* (n_params) */
    gl_param_ptrs P, G;   /* typed views into params and grads */

    /* activations and their gradients: one allocation each, carved (carve.h) into the views below */
    float *acts_mem;      /* every activation: A[0..L), xl, h_out … tok_loss, sized for max_B */
    float *dacts_mem;     /* (scratch_floats) the activation gradients of backward, carved per step */
    gl_block_acts *A;     /* [L] */
    float *h_out;         /* (B*T, d) final residual stream */
    float *xnf, *rstdf;   /* (B*T, d), (B*T)  final norm */
    float *logits;        /* (B*T, V) */
    gl_xl_acts xl;        /* cross-layer activations and gradient buffers */
    float *probs;         /* (B*T, V) softmax of logits (kept for backward) */
    float *exit_probs;    /* (L, B*T, V) early exit: softmax per block (block L-1 aliases probs) */
    float *exit_conf;     /* (L, B*T) early exit: max softmax probability per block */
    float *vr_lambda;     /* (L, 2) ResFormer (λ1, λ2) of each block in the last forward, (0, 1) where
                             a block does not mix V1 */
    float *tok_loss;      /* (B*T) per-token cross-entropy of the final head (nats) */
    float *rope_cos, *rope_sin; /* (T, hd/2) */
    size_t scratch_floats; /* floats of dacts_mem: backward's gradient buffers and scratch, (B*T, widths) */

    /* inputs of the last forward (kept for backward) */
    int *tokens;          /* (B*T) */
    int *targets;         /* (B*T) */
    float *mask;          /* (B*T) weight of each target; 0 = not scored */
    float mask_sum;
    /* Data-parallel shards (set by the training loop, 0 otherwise): when > 0,
     * the loss is normalised by the whole global batch's Σ mask and the TSA
     * penalty and active fraction by its token count, instead of this batch's
     * own.  loss, task_loss, penalty and active_frac are then this shard's
     * share, and shares (and gradients) add up over shards to the global
     * batch's values. */
    double norm_mask_sum;
    long norm_tokens;

    /* results of the last forward */
    float loss;           /* optimised loss: task loss (+ λ penalty for TSA) */
    float task_loss;      /* mean cross-entropy of the final head (nats/token) */
    float penalty;        /* TSA depth penalty term λ·(1/(L-1))Σ mean(1-p) */
    float active_frac;    /* TSA / exit / MoD / random: share of (token, layer>=1) pairs that run */
    float active_frac_paper; /* early exit at inference (and post-hoc exit): α in the TSA paper's official
                             convention, (1 + mean over tokens of the post-stem blocks run up to the exit)/L;
                             NaN in every other mode (docs/model.md "Early exit") */
    long active_count;    /* inference modes: (token, layer>=1) pairs that ran */
    unsigned char *frozen;/* (B*T) early exit at inference: 1 once a token has exited; in the paper's form
                             (model.exit_form = paper) the block it exited after, 0 while it runs */

    int sparse;           /* 1: TSA hard routing at inference (p > 0.5 skips the block: only its k, v run);
                             random: a skipped pair likewise; MoD: only the selected tokens enter a routed block */
    gl_sparse_form sparse_form; /* TSA with m->sparse: which skipping (SPARSE_GATELAB, the default) */
    float exit_tau;       /* early exit at inference: > 0 enables exiting at confidence >= tau; an
                             exited token's later blocks compute only its k and v.  In the paper's form
                             (model.exit_form = paper): exiting at confidence > tau after a block n >= 1,
                             the prediction frozen at that exit, the state still updated by every block */
    int posthoc_exit;     /* dense model (depth_routing none) at inference, after model_posthoc_init: 1
                             exits a token at the first block whose residual, through the model's own
                             final norm and head, has max softmax probability >= exit_tau (any τ, 0
                             included: every token exits after block 0; τ > 1: none exits); its later
                             blocks compute only its k and v, as early exit does */
    float *posthoc_mem;   /* posthoc_exit: the exit heads' buffers (A[n].xnf, rstdf, logits, exit_probs,
                             exit_conf), allocated by model_posthoc_init */
    int exit_reference;   /* early exit at inference: 1 runs every block for every token and restores
                             exited tokens' state afterwards (the bookkeeping reference the skipping
                             path is tested and benchmarked against) */
    int have_overrides;
    gl_overrides ov;
    /* random routing's draw (routing.c): 0 = the evaluation draw, a hash of each window's tokens (the
     * same tokens get the same routing in every evaluation); otherwise the training draw's key, set by
     * the training loop per step from train.seed and the step (routing_train_key), with route_row0 the
     * global row of this shard's row 0 */
    uint64_t route_draw;
    long route_row0;
    /* dropout's key for this forward (dropout.h): 0 (the default) runs without dropout, as evaluation and
     * inference do; the training loop sets dropout_train_key(train.seed, step) for the step's forward and
     * backward and clears it after.  Rows are numbered from route_row0, as random routing's. */
    uint64_t drop_key;
    /* Gradients of the gates, for attribution (analysis/measure/attrib.c); NULL (the default) keeps none.
     * model_backward copies into them, rows of the last forward's B*T tokens: */
    float *cap_dgate;     /* (L, B*T, Hkv) dL/d A[n].gate per block, the gate itself (v' = v + gate·V1), not
                             what makes it; rows of blocks without a per-head gate are not meaningful */
    float *cap_dp;        /* (L, B*T) dL/dp of the router feeding block n >= 1 (TSA), the depth penalty
                             included (zero model.tsa_lambda for the task loss's alone); row 0 unused */
} gl_model;

/* Create a model for cfg with room for batches of up to max_B sequences of
 * cfg->seq_len tokens.  Returns 0, or -1 with a message in err (invalid
 * config, out of memory).  The parameters are zero until model_init_weights
 * or a checkpoint fills them.  model_free accepts a half-built model. */
int model_init(gl_model *m, const gl_model_config *cfg, int max_B, char *err, size_t errlen);
void model_free(gl_model *m);

/* Give a dense model (depth_routing none, cross_layer none) the exit heads'
 * buffers post-hoc early exit needs (m->posthoc_exit): per block n < L−1 its
 * residual through the final norm and head.  Training and every other mode
 * are unchanged.  Returns 0 (also when already done), or -1 with a message
 * (a routed or cross-layer model, out of memory).  model_free frees them. */
int model_posthoc_init(gl_model *m, char *err, size_t errlen);

/* docs/model.md initialisation: matrices and embedding N(0, 0.02), norms 1,
 * ResFormer s = L, ℓ = 0, λ = 0.5, routers N(0, 0.02) with fc2_b = router_init_bias. */
void model_init_weights(gl_model *m, uint64_t seed);

/* Look a parameter up by name; NULL if the model has none by that name. */
const gl_tensor *model_find_tensor(const gl_model *m, const char *name);

/* Forward over B sequences of T tokens (B <= max_B, T <= seq_len).
 * tokens (B*T); targets (B*T) or NULL (then no loss: logits only); mask (B*T)
 * per-target weights or NULL for all ones.  Returns the optimised loss (or 0
 * without targets).  Fills logits, gates, halting probabilities, confidences. */
float model_forward(gl_model *m, const int *tokens, const int *targets, const float *mask, int B, int T);

/* The final norm the head reads, on rows h (rows, d) → out (rows, d), rstd (rows): RMSNorm, or
 * LayerNorm with its bias on the gpt2 backbone; the same op model_forward applies (analyses' logit
 * lens). */
void model_final_norm(const gl_model *m, float *out, float *rstd, const float *h, int rows);

/* Zero the gradient block. */
void model_zero_grad(gl_model *m);

/* Backward of the last forward (which must have had targets); adds into grads. */
void model_backward(gl_model *m);

/* Overrides: allocate on first use; model_clear_overrides returns to free gates.
 * model_set_gate_override fixes the value-residual gate of (layer, kv_head)
 * (A[n].gate: SATFormer α, ...); lambda1 ResFormer's λ1 of a block; route the
 * TSA routers. */
void model_set_gate_override(gl_model *m, int layer, int kv_head, gl_gate_mode mode, float value);
/* The table GATE_TOKEN reads, (L, max_B*T, Hkv), borrowed until cleared
 * (model_clear_overrides) or replaced; the caller refills it per batch. */
void model_set_gate_token_table(gl_model *m, const float *table);
void model_set_lambda1_override(gl_model *m, int layer, gl_gate_mode mode, float value);
void model_set_route_override(gl_model *m, gl_route_mode mode, float value, uint64_t seed);
/* ROUTE_TOKEN (activation patching): router l's p at batch position t is
 * table[l·max_B·T + t] where that is not NaN, its own p where it is.  The
 * table (L-1, max_B*T) is borrowed until cleared or replaced. */
void model_set_route_token_table(gl_model *m, const float *table);
void model_clear_overrides(gl_model *m);

/* Effective ResFormer coefficients of block n (λ1ₙ, λ2ₙ) from the current
 * parameters and overrides; (0, 1) for blocks that do not mix (valueres.c). */
void model_resformer_lambda(const gl_model *m, int n, float *lambda1, float *lambda2);

/* The key of random routing's training draw at step (0-based) of a run seeded seed; never 0. */
uint64_t routing_train_key(uint64_t seed, long step);

/* Counts for reporting. */
size_t model_param_count(const gl_model *m);
/* Approximate training FLOPs per token (forward + backward: 6 per weight MAC pair plus attention). */
double model_train_flops_per_token(const gl_model *m);

#endif
