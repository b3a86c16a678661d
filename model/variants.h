/*
 * variants.h — every kind of thing a gatelab model can have, listed once:
 * the variant enums and their manifest names, the parameter tensors (name,
 * shape, presence, weight decay, initial value), and the recorded gates
 * (trace dataset, axes, where the forward pass keeps them, how they are
 * overridden and ablated).
 *
 * The lists are X-macros: this file holds data only, and each user expands a
 * list into what it needs (config.h the enums, config.c the name tables,
 * model.h the typed parameter views, tensors.c the tensor table, gatekind.c
 * the gate table), with _Static_assert on every count.  A new variant adds
 * its rows here and its maths in the file that does that part of the model
 * (valueres.c for a value residual); nothing else names it.
 *
 * Expressions in the rows may use: c (const gl_model_config *), n (block or
 * router number), s (gl_sizes: d, hd, qd, kd, Hkv, F, V, R, M, S; see
 * tensors.c) and, in the gate rows, m (const gl_model *) and N (rows of the
 * last forward, B·T).
 */
#ifndef GATELAB_MODEL_VARIANTS_H
#define GATELAB_MODEL_VARIANTS_H

/* ------------------------------------------------------------------------ */
/* enums: X(IDENTIFIER, "manifest name"), in enum order                     */

#define GL_VALUE_RESIDUALS(X) \
    X(VR_NONE, "none")        \
    X(VR_RESFORMER, "resformer") \
    X(VR_SATFORMER, "satformer") \
    X(VR_HEADGATE, "headgate")

/* SATFormer's gate function φ, applied to z = x·Wα (+ b) per token (valueres.c, docs/model.md) */
#define GL_SAT_GATES(X)                        \
    X(SG_RELU, "relu")                         \
    X(SG_SIGMOID, "sigmoid")                   \
    X(SG_SOFTMAX, "softmax")                   \
    X(SG_SOFTMAX_SIGMOID, "softmax_sigmoid")   \
    X(SG_TANH, "tanh")                         \
    X(SG_IDENTITY, "identity")

#define GL_RESFORMER_VARIANTS(X) \
    X(RF_PLUS, "plus")           \
    X(RF_LEARNABLE, "learnable") \
    X(RF_IDENTITY, "identity")

#define GL_DEPTH_ROUTINGS(X) \
    X(DR_NONE, "none")       \
    X(DR_TSA, "tsa")         \
    X(DR_EARLY_EXIT, "early_exit") \
    X(DR_MOD, "mod")         \
    X(DR_RANDOM, "random")

/* early exit's form (docs/model.md "Early exit"): gatelab = the shared final norm as every exit's norm,
 * an exit after any block, an exited token's state frozen; paper = the TSA paper's official code: an exit
 * norm of its own per block (the final norm is the last block's), uniform loss weights, no exit after
 * block 0, the state of an exited token still updated (only its prediction is frozen) */
#define GL_EXIT_FORMS(X)          \
    X(XF_GATELAB, "gatelab")      \
    X(XF_PAPER, "paper")

#define GL_EXIT_WEIGHTINGS(X)       \
    X(EE_WEIGHT_LINEAR, "linear")   \
    X(EE_WEIGHT_UNIFORM, "uniform")

/* the block's backbone (docs/model.md "Backbones"): llama = RMSNorm, RoPE, qk-norm, SwiGLU, no biases;
 * gpt2 = the TSA paper's own model: LayerNorm with bias, learned absolute positions, GELU MLP with biases */
#define GL_BACKBONES(X) \
    X(BB_LLAMA, "llama") \
    X(BB_GPT2, "gpt2")

/* TSA's router and gating (docs/model.md "The TSA paper's own configuration"): gatelab = router on the
 * attention-norm output, GELU, joint gate h + (1-p)(a + f); paper = router on the raw residual stream,
 * ReLU, sequential gates h += (1-p)a, then h += (1-p)f */
#define GL_TSA_FORMS(X) \
    X(TF_GATELAB, "gatelab") \
    X(TF_PAPER, "paper")

#define GL_CROSS_LAYERS(X)             \
    X(CL_NONE, "none")                 \
    X(CL_DENSEFORMER, "denseformer")   \
    X(CL_HYPER, "hyper")               \
    X(CL_MUDD, "mudd")

/* ------------------------------------------------------------------------ */
/* routing kinds: what the harness may ask of each depth routing            */
/*
 * X(ID, counts, sparse, hard, decode, knob, symbol, title)
 *   counts  1: training logs α and TLOps saved (train/val active_frac, tlops_saved)
 *   sparse  1: `eval --sparse` / m->sparse skips the unselected (token, block) pairs for real
 *   hard    1: a (token, block) pair is either computed or skipped in training too (MoD, random),
 *           kept in A[n].keep; routed blocks are config_block_routed (config.h)
 *   decode  NULL, or why `sample` cannot generate with it (a message for the user)
 *   knob    the manifest key that sets its compute (the Pareto figure's curve parameter), or NULL;
 *   symbol, title  the knob's symbol and the routing's name in figure legends ("TSA over λ")
 */
#define GL_ROUTING_KINDS(X)                                                                                   \
    X(DR_NONE, 0, 0, 0, NULL, NULL, NULL, NULL)                                                               \
    X(DR_TSA, 1, 1, 0, NULL, "model.tsa_lambda", "λ", "TSA")                                                 \
    X(DR_EARLY_EXIT, 0, 0, 0, NULL, NULL, NULL, NULL)                                                         \
    X(DR_MOD, 1, 1, 1,                                                                                        \
      "Mixture-of-Depths picks each routed block's top-k tokens over the whole window, future tokens "       \
      "included, so it has no causal rule for generating one token at a time (the paper's auxiliary "        \
      "causal predictor is not implemented; docs/model.md \"Mixture-of-Depths\")",                           \
      "model.mod_capacity", "c", "MoD")                                                                       \
    X(DR_RANDOM, 1, 1, 1, NULL, "model.random_alpha", "α", "random routing")

/* ------------------------------------------------------------------------ */
/* tensors                                                                  */
/*
 * X(id, "name", rows, cols, ndim, has, decay, init)
 *   id      the field of the typed view (gl_param_ptrs, gl_block_params,
 *           gl_router_params); the cross-layer list has a member path instead
 *           (X(id, member, "name", ...), the view gl_xl_params is written out in model.h)
 *   name    printf format of the docs/model.md name; %d is the block or router number
 *   rows, cols  the shape, (out, in) for matrices, (n, 1) for vectors
 *   ndim    1 or 2
 *   has     1 when the config has the tensor (for block n / router n)
 *   decay   DECAY_ALL (AdamW weight decay), DECAY_NONE, DECAY_GATES (when model.decay_gates),
 *           DECAY_LLAMA (decayed on the llama backbone only: the TSA paper's code decays no embedding);
 *           train.weight_decay_policy = all decays every tensor whatever its row says (adamw.c)
 *   init    an expression of c, s and n giving one of (several rows choose by backbone or TSA form):
 *           INIT_NORMAL               N(0, 0.02) from the seeded stream
 *           INIT_NORMAL_SD(sd)        N(0, sd²) from the stream (gpt2's residual projections)
 *           INIT_UNIFORM(b)           U(−b, b) from the stream (PyTorch's nn.Linear default, b = 1/√fan_in)
 *           INIT_FILL(v)              every entry v, no draw
 *           INIT_DRAW_FILL(v)         every entry v after a draw that is thrown away: the draw
 *                                     keeps the random stream of every later tensor where it
 *                                     was before these tensors had a rule (runs repeat bit for bit)
 *           INIT_XL                   drawn, then crosslayer.c writes its structured start
 *                                     (docs/crosslayer.md "Initialisation")
 * The table's order is the parameter block's order (checkpoints depend on
 * it): the lists are laid out as embed; per block n; resformer; per block n
 * the cross-layer rows; per router l; the output rows.
 */

#define GL_EMBED_TENSORS(X)                                                                                   \
    X(embed, "embed", s.V, s.d, 2, 1, DECAY_LLAMA, INIT_NORMAL)                                               \
    X(pos_embed, "pos_embed", c->seq_len, s.d, 2, bb_gpt2(c), DECAY_NONE, INIT_NORMAL)

/* gpt2's init (the TSA paper's code): PyTorch's nn.Linear default U(±1/√fan_in) for weights and biases,
 * N(0, 0.02/√(2L)) for the two residual projections (attention output, FFN output) */
#define GL_INIT_LINEAR(fan_in) (bb_gpt2(c) ? INIT_UNIFORM(1.0f / sqrtf((float)(fan_in))) : INIT_NORMAL)
#define GL_INIT_RESID (bb_gpt2(c) ? INIT_NORMAL_SD(0.02f / sqrtf(2.0f * (float)c->n_layer)) : INIT_NORMAL)

#define GL_BLOCK_TENSORS(X)                                                                                   \
    X(attn_norm, "layers.%d.attn_norm", s.d, 1, 1, 1, DECAY_NONE, INIT_FILL(1.0f))                            \
    X(attn_norm_bias, "layers.%d.attn_norm_bias", s.d, 1, 1, bb_gpt2(c), DECAY_NONE, INIT_FILL(0.0f))        \
    X(attn_norm_k, "layers.%d.attn_norm_k", s.d, 1, 1, xl_separate_kv_norms(c, n), DECAY_NONE,                \
      INIT_DRAW_FILL(1.0f))                                                                                   \
    X(attn_norm_v, "layers.%d.attn_norm_v", s.d, 1, 1, xl_separate_kv_norms(c, n), DECAY_NONE,                \
      INIT_DRAW_FILL(1.0f))                                                                                   \
    X(wq, "layers.%d.attn.wq", s.qd, s.d, 2, 1, DECAY_ALL, GL_INIT_LINEAR(s.d))                               \
    X(wk, "layers.%d.attn.wk", s.kd, s.d, 2, 1, DECAY_ALL, GL_INIT_LINEAR(s.d))                               \
    X(wv, "layers.%d.attn.wv", s.kd, s.d, 2, 1, DECAY_ALL, GL_INIT_LINEAR(s.d))                               \
    X(wo, "layers.%d.attn.wo", s.d, s.qd, 2, 1, DECAY_ALL, GL_INIT_RESID)                                     \
    X(q_norm, "layers.%d.attn.q_norm", s.hd, 1, 1, c->qk_norm, DECAY_NONE, INIT_FILL(1.0f))                   \
    X(k_norm, "layers.%d.attn.k_norm", s.hd, 1, 1, c->qk_norm, DECAY_NONE, INIT_FILL(1.0f))                   \
    X(alpha, "layers.%d.attn.alpha", s.Hkv, s.d, 2, vr_mixes(c, n, VR_SATFORMER), DECAY_GATES, INIT_NORMAL)   \
    X(alpha_bias, "layers.%d.attn.alpha_bias", s.Hkv, 1, 1, vr_mixes(c, n, VR_SATFORMER) && c->sat_gate_bias,    \
      DECAY_GATES, INIT_FILL(c->sat_gate_bias_init))                                                          \
    X(lambda1, "layers.%d.attn.lambda1", 1, 1, 1, vr_mixes(c, n, VR_RESFORMER) && c->resformer_variant == RF_LEARNABLE, \
      DECAY_GATES, INIT_FILL(isnan(c->rf_lambda1_init) ? 0.5f : c->rf_lambda1_init))                                                                           \
    X(lambda2, "layers.%d.attn.lambda2", 1, 1, 1, vr_mixes(c, n, VR_RESFORMER) && c->resformer_variant != RF_IDENTITY, \
      DECAY_GATES, INIT_FILL(0.5f))                                                                           \
    X(headgate, "layers.%d.attn.headgate", s.Hkv, 1, 1, vr_mixes(c, n, VR_HEADGATE), DECAY_GATES,              \
      INIT_FILL(0.02f * sqrtf((float)c->d_model) / sqrtf(6.2831853f)))                                        \
    X(exit_norm, "layers.%d.exit_norm", s.d, 1, 1, ee_paper(c) && n + 1 < c->n_layer, DECAY_NONE,              \
      INIT_FILL(1.0f))                                                                                        \
    X(exit_norm_bias, "layers.%d.exit_norm_bias", s.d, 1, 1, ee_paper(c) && n + 1 < c->n_layer && bb_gpt2(c),   \
      DECAY_NONE, INIT_FILL(0.0f))                                                                            \
    X(ffn_norm, "layers.%d.ffn_norm", s.d, 1, 1, 1, DECAY_NONE, INIT_FILL(1.0f))                              \
    X(ffn_norm_bias, "layers.%d.ffn_norm_bias", s.d, 1, 1, bb_gpt2(c), DECAY_NONE, INIT_FILL(0.0f))          \
    X(w1, "layers.%d.ffn.w1", s.F, s.d, 2, 1, DECAY_ALL, GL_INIT_LINEAR(s.d))                                 \
    X(b1, "layers.%d.ffn.b1", s.F, 1, 1, bb_gpt2(c), DECAY_NONE, INIT_UNIFORM(1.0f / sqrtf((float)s.d)))     \
    X(w2, "layers.%d.ffn.w2", s.d, s.F, 2, 1, DECAY_ALL, GL_INIT_RESID)                                       \
    X(b2, "layers.%d.ffn.b2", s.d, 1, 1, bb_gpt2(c), DECAY_NONE, INIT_UNIFORM(1.0f / sqrtf((float)s.F)))     \
    X(w3, "layers.%d.ffn.w3", s.F, s.d, 2, !bb_gpt2(c), DECAY_ALL, INIT_NORMAL)

#define GL_RESFORMER_TENSORS(X)                                                                               \
    X(rf_scale, "resformer.scale", 1, 1, 1, vr_plus(c), DECAY_GATES, INIT_FILL(vr_plus_scale_init(c)))            \
    X(rf_logits, "resformer.logits", s.M, 1, 1, vr_plus(c), DECAY_GATES, INIT_FILL(0.0f))

#define GL_XL_TENSORS(X)                                                                                      \
    X(dwa, dwa, "dwa.%d", n + 2, 1, 1, c->cross_layer == CL_DENSEFORMER, DECAY_NONE, INIT_XL)                 \
    X(hca_sa, hc[0].static_alpha, "hyper.%d.attn.static_alpha", s.S, s.S + 1, 2, c->cross_layer == CL_HYPER, DECAY_NONE, INIT_XL) \
    X(hca_sb, hc[0].static_beta, "hyper.%d.attn.static_beta", s.S, 1, 1, c->cross_layer == CL_HYPER, DECAY_NONE, INIT_DRAW_FILL(1.0f)) \
    X(hca_da, hc[0].dynamic_alpha_fn, "hyper.%d.attn.dynamic_alpha_fn", s.S + 1, s.d, 2, c->cross_layer == CL_HYPER, DECAY_ALL, INIT_DRAW_FILL(0.0f)) \
    X(hca_db, hc[0].dynamic_beta_fn, "hyper.%d.attn.dynamic_beta_fn", 1, s.d, 2, c->cross_layer == CL_HYPER, DECAY_ALL, INIT_DRAW_FILL(0.0f)) \
    X(hca_das, hc[0].dynamic_alpha_scale, "hyper.%d.attn.dynamic_alpha_scale", 1, 1, 1, c->cross_layer == CL_HYPER, DECAY_NONE, INIT_DRAW_FILL(0.01f)) \
    X(hca_dbs, hc[0].dynamic_beta_scale, "hyper.%d.attn.dynamic_beta_scale", 1, 1, 1, c->cross_layer == CL_HYPER, DECAY_NONE, INIT_DRAW_FILL(0.01f)) \
    X(hcf_sa, hc[1].static_alpha, "hyper.%d.ffn.static_alpha", s.S, s.S + 1, 2, c->cross_layer == CL_HYPER, DECAY_NONE, INIT_XL) \
    X(hcf_sb, hc[1].static_beta, "hyper.%d.ffn.static_beta", s.S, 1, 1, c->cross_layer == CL_HYPER, DECAY_NONE, INIT_DRAW_FILL(1.0f)) \
    X(hcf_da, hc[1].dynamic_alpha_fn, "hyper.%d.ffn.dynamic_alpha_fn", s.S + 1, s.d, 2, c->cross_layer == CL_HYPER, DECAY_ALL, INIT_DRAW_FILL(0.0f)) \
    X(hcf_db, hc[1].dynamic_beta_fn, "hyper.%d.ffn.dynamic_beta_fn", 1, s.d, 2, c->cross_layer == CL_HYPER, DECAY_ALL, INIT_DRAW_FILL(0.0f)) \
    X(hcf_das, hc[1].dynamic_alpha_scale, "hyper.%d.ffn.dynamic_alpha_scale", 1, 1, 1, c->cross_layer == CL_HYPER, DECAY_NONE, INIT_DRAW_FILL(0.01f)) \
    X(hcf_dbs, hc[1].dynamic_beta_scale, "hyper.%d.ffn.dynamic_beta_scale", 1, 1, 1, c->cross_layer == CL_HYPER, DECAY_NONE, INIT_DRAW_FILL(0.01f)) \
    X(mudd_w1, mudd_w1, "mudd.%d.w1", xl_mudd_k(c, n), s.d, 2, c->cross_layer == CL_MUDD, DECAY_ALL, INIT_NORMAL) \
    X(mudd_w2, mudd_w2, "mudd.%d.w2", xl_mudd_k(c, n), xl_mudd_k(c, n), 2, c->cross_layer == CL_MUDD, DECAY_ALL, INIT_DRAW_FILL(0.0f)) \
    X(mudd_bias, mudd_bias, "mudd.%d.bias", xl_mudd_c(c, n), n + 2, 2, c->cross_layer == CL_MUDD, DECAY_NONE, INIT_XL)

/* the paper's router keeps PyTorch's nn.Linear default U(±1/√fan_in) for its weights and first bias */
#define GL_INIT_ROUTER(fan_in, otherwise) \
    (tsa_paper(c) ? INIT_UNIFORM(1.0f / sqrtf((float)(fan_in))) : (otherwise))
#define GL_ROUTER_TENSORS(X)                                                                                  \
    X(fc1_w, "routers.%d.fc1_w", s.R, s.d, 2, c->depth_routing == DR_TSA, DECAY_ALL, GL_INIT_ROUTER(s.d, INIT_NORMAL)) \
    X(fc1_b, "routers.%d.fc1_b", s.R, 1, 1, c->depth_routing == DR_TSA, DECAY_NONE,                           \
      GL_INIT_ROUTER(s.d, INIT_FILL(0.0f)))                                                                   \
    X(fc2_w, "routers.%d.fc2_w", 1, s.R, 2, c->depth_routing == DR_TSA, DECAY_ALL, GL_INIT_ROUTER(s.R, INIT_NORMAL)) \
    X(fc2_b, "routers.%d.fc2_b", 1, 1, 1, c->depth_routing == DR_TSA, DECAY_NONE, INIT_FILL(c->router_init_bias)) \
    X(mod_w, "routers.%d.mod_w", 1, s.d, 2, c->depth_routing == DR_MOD && config_block_routed(c, n + 1), DECAY_ALL, \
      INIT_NORMAL)

#define GL_OUTPUT_TENSORS(X)                                                                                  \
    X(final_norm, "final_norm", s.d, 1, 1, 1, DECAY_NONE, INIT_FILL(1.0f))                                    \
    X(final_norm_bias, "final_norm_bias", s.d, 1, 1, bb_gpt2(c), DECAY_NONE, INIT_FILL(0.0f))                \
    X(head, "head", s.V, s.d, 2, !c->tied, DECAY_ALL, INIT_NORMAL)

/* ------------------------------------------------------------------------ */
/* recorded gates                                                           */
/*
 * X(ID, "key", "group", "dataset", axis0, axis1, axis2, "coef", has, src, ablate, "title", "symbol")
 *   key       file and metric prefix of the analyses ("alpha" → alpha_heads.tsv, alpha_mean.L1.H0)
 *   group, dataset  the trace's /group/dataset; its axes attribute is "step," + the axes
 *   axis0..2  GAX_LAYER or GAX_ROUTER, then GAX_TOKEN (one value per probe token) or GAX_NONE,
 *             then GAX_KV_HEAD, GAX_COEF (2) or GAX_NONE
 *   coef      names of the coef axis (a dataset attribute), or NULL
 *   has       1 when a config records the gate
 *   src       where the forward pass keeps layer (router) n's values: (N, width) with a token
 *             axis, else its first width values; NULL where that layer has none (read as 0)
 *   ablate    GABL_HEAD: zero / mean / file per (block, KV head) through model_set_gate_override
 *             GABL_BLOCK: zero / file per block through model_set_lambda1_override
 *             GABL_ROUTE: full-depth / random routing through model_set_route_override
 *             GABL_NONE: not overridden (early exit is swept by threshold instead)
 *   title, symbol  for printed summaries
 */
#define GL_GATES(X)                                                                                           \
    X(GATE_ALPHA, "alpha", "sat", "alpha", GAX_LAYER, GAX_TOKEN, GAX_KV_HEAD, NULL,                            \
      c->value_residual == VR_SATFORMER, vr_mixes(&m->cfg, n, VR_SATFORMER) ? m->A[n].gate : NULL, GABL_HEAD, \
      "SATFormer gate α", "α")                                                                                 \
    X(GATE_LAMBDA, "lambda", "resformer", "lambda", GAX_LAYER, GAX_NONE, GAX_COEF, "lambda1,lambda2",          \
      c->value_residual == VR_RESFORMER, m->vr_lambda + 2 * (size_t)n, GABL_BLOCK,                            \
      "ResFormer coefficients (λ1, λ2)", "λ")                                                                  \
    X(GATE_P, "p", "tsa", "p", GAX_ROUTER, GAX_TOKEN, GAX_NONE, NULL, c->depth_routing == DR_TSA,              \
      m->A[n + 1].p, GABL_ROUTE, "TSA halting probability", "p")                                               \
    X(GATE_CONF, "exit_conf", "exit", "confidence", GAX_LAYER, GAX_TOKEN, GAX_NONE, NULL,                      \
      c->depth_routing == DR_EARLY_EXIT, m->exit_conf + (size_t)n * N, GABL_NONE,                              \
      "early-exit confidence (max softmax probability)", "conf")                                              \
    X(GATE_HEADGATE, "headgate", "headgate", "g", GAX_LAYER, GAX_NONE, GAX_KV_HEAD, NULL,                      \
      c->value_residual == VR_HEADGATE, vr_mixes(&m->cfg, n, VR_HEADGATE) ? m->A[n].gate : NULL, GABL_HEAD,   \
      "static head gate g", "g")                                                                             \
    X(GATE_MOD_W, "mod_w", "mod", "weight", GAX_LAYER, GAX_TOKEN, GAX_NONE, NULL, c->depth_routing == DR_MOD,  \
      config_block_routed(&m->cfg, n) ? m->A[n].mod_g : NULL, GABL_ROUTE, "MoD router weight σ(r)", "w")                                               \
    X(GATE_SELECTED, "selected", "route", "selected", GAX_LAYER, GAX_TOKEN, GAX_NONE, NULL,                   \
      config_routing_hard(c), m->A[n].keep, GABL_NONE, "routed block ran the token (1) or skipped it (0)", "sel")

#endif
