/*
 * manifest_keys.c — the rows of the manifest's key table (manifest_keys.h).
 *
 * Adding a key is one row here plus one in docs/manifest.md; parsing, range
 * checks, messages, the canonical INI text, the identity text and the typed
 * walk (manifest_each_key) all follow from the row.  What it does not do:
 * parse or check anything (manifest.c does).
 */
#include "manifest_keys.h"

#include "bpe.h"

#define OFF(f) offsetof(gl_manifest, f)
#define KINT(s, n, f, lo, hi) {s, n, K_INT, OFF(f), 0, lo, hi, 0, 0, 0, 1, 0}
#define KFLT(s, n, f, lo, hi, lo_open, hi_open) {s, n, K_FLOAT, OFF(f), 0, lo, hi, lo_open, hi_open, 0, 1, 0}
#define KFLT_AUTO(s, n, f, lo, hi) {s, n, K_FLOAT, OFF(f), 0, lo, hi, 0, 0, F_AUTO, 1, 0}
#define KBOOL(s, n, f) {s, n, K_BOOL, OFF(f), 0, 0, 1, 0, 0, 0, 1, 0}
#define KENUM(s, n, f, e) {s, n, K_ENUM, OFF(f), 0, 0, 0, 0, 0, e, 1, 0}
#define KSTR(s, n, f, c, sw) {s, n, K_STR, OFF(f), sizeof(((gl_manifest *)0)->f), 0, 0, 0, 0, c, sw, 0}
/* The same for a late key (key_def.late): a key added once runs existed.  Its default must be the
 * behaviour before it existed, bit for bit; a key whose default changes is never late. */
#define LINT(s, n, f, lo, hi) {s, n, K_INT, OFF(f), 0, lo, hi, 0, 0, 0, 1, 1}
#define LFLT(s, n, f, lo, hi, lo_open, hi_open) {s, n, K_FLOAT, OFF(f), 0, lo, hi, lo_open, hi_open, 0, 1, 1}
#define LBOOL(s, n, f) {s, n, K_BOOL, OFF(f), 0, 0, 1, 0, 0, 0, 1, 1}
#define LENUM(s, n, f, e) {s, n, K_ENUM, OFF(f), 0, 0, 0, 0, 0, e, 1, 1}
#define LFLT_AUTO(s, n, f, lo, hi) {s, n, K_FLOAT, OFF(f), 0, lo, hi, 0, 0, F_AUTO, 1, 1}

/* Ranges of [model] equal config.c's bounds (config_validate re-checks them
 * for configs that come from checkpoints).  Canonical order = table order. */
const key_def mf_keys[MF_N_KEYS] = {
    {"model", "scale", K_SCALE, OFF(scale), sizeof(((gl_manifest *)0)->scale), 0, 0, 0, 0, 0, 1, 0},
    KINT("model", "vocab_size", model.vocab_size, 0, 1048576),
    KINT("model", "d_model", model.d_model, 1, 16384),
    KINT("model", "n_layer", model.n_layer, 1, 64),
    KINT("model", "n_head", model.n_head, 1, 256),
    KINT("model", "n_kv_head", model.n_kv_head, 1, 256),
    KINT("model", "d_ff", model.d_ff, 1, 65536),
    KINT("model", "seq_len", model.seq_len, 1, 65536),
    KFLT("model", "norm_eps", model.norm_eps, 0, 1, 1, 0),
    KFLT("model", "rope_base", model.rope_base, 1, 1e9, 1, 0),
    KBOOL("model", "qk_norm", model.qk_norm),
    KBOOL("model", "tied", model.tied),
    KENUM("model", "value_residual", model.value_residual, EN_VR),
    KENUM("model", "resformer_variant", model.resformer_variant, EN_RF),
    KINT("model", "value_residual_last_k", model.vr_last_k, 0, 63),
    KBOOL("model", "decay_gates", model.decay_gates),
    LENUM("model", "sat_gate", model.sat_gate, EN_SG),
    LBOOL("model", "sat_gate_bias", model.sat_gate_bias),
    LFLT("model", "sat_gate_bias_init", model.sat_gate_bias_init, -30, 30, 0, 0),
    LFLT_AUTO("model", "resformer_lambda1_init", model.rf_lambda1_init, -100, 100),
    KENUM("model", "depth_routing", model.depth_routing, EN_DR),
    KINT("model", "router_hidden", model.router_hidden, 0, 65536),
    KFLT("model", "router_init_bias", model.router_init_bias, -30, 30, 0, 0),
    KFLT("model", "tsa_lambda", model.tsa_lambda, 0, 1000, 0, 0),
    KENUM("model", "exit_weighting", model.exit_weighting, EN_EE),
    LFLT("model", "mod_capacity", model.mod_capacity, 0, 1, 1, 0),
    LINT("model", "mod_every", model.mod_every, 1, 64),
    LFLT("model", "random_alpha", model.random_alpha, 0, 1, 1, 0),
    KENUM("model", "cross_layer", model.cross_layer, EN_CL),
    KINT("model", "hc_expansion", model.hc_expansion, 1, 16),

    KENUM("data", "task", data.task, EN_TASK),
    KSTR("data", "file", data.file, S_NONEMPTY, 1),
    KFLT("data", "train_frac", data.train_frac, 0, 1, 1, 0),
    KFLT("data", "val_frac", data.val_frac, 0, 1, 0, 0),
    LENUM("data", "tokenizer", data.tokenizer, EN_TOK),
    LINT("data", "vocab_size", data.vocab_size, 0, BPE_VOCAB_MAX), /* 0 = none (char) */
    KINT("data", "seq_items", data.seq_items, 1, 4096),
    KINT("data", "n_symbols", data.n_symbols, 1, 65536),
    KINT("data", "mqar_pairs", data.mqar_pairs, 1, 1024),
    KINT("data", "mqar_queries", data.mqar_queries, 1, 1024),
    KINT("data", "mqar_keys", data.mqar_keys, 1, 65536),
    KINT("data", "mqar_values", data.mqar_values, 1, 65536),

    KINT("train", "steps", train.steps, 1, 1000000000),
    KINT("train", "batch_size", train.batch_size, 1, 65536),
    KFLT("train", "lr", train.lr, 0, 10, 1, 0),
    KFLT("train", "min_lr", train.min_lr, 0, 10, 0, 0),
    KINT("train", "warmup", train.warmup, 0, 1000000000),
    KFLT("train", "weight_decay", train.weight_decay, 0, 10, 0, 0),
    LENUM("train", "weight_decay_policy", train.weight_decay_policy, EN_WD),
    KFLT("train", "beta1", train.beta1, 0, 1, 0, 1),
    KFLT("train", "beta2", train.beta2, 0, 1, 0, 1),
    KFLT("train", "eps", train.eps, 0, 1, 1, 0),
    KFLT("train", "grad_clip", train.grad_clip, 0, 1e9, 0, 0),
    {"train", "seed", K_U64, OFF(train.seed), 0, 0, 0, 0, 0, 0, 1, 0},
    KINT("train", "threads", train.threads, 0, 4096),
    KINT("train", "eval_every", train.eval_every, 1, 1000000000),
    KINT("train", "eval_windows", train.eval_windows, 1, 10000000),
    KINT("train", "ckpt_every", train.ckpt_every, 1, 1000000000),
    KINT("train", "log_every", train.log_every, 1, 1000000000),

    KSTR("log", "results", log.results, S_NONEMPTY, 0),
    KSTR("log", "name", log.name, S_NAME, 0),
    KSTR("log", "experiment", log.experiment, S_NAME, 0),
    {"log", "trace", K_BOOL, OFF(log.trace), 0, 0, 1, 0, 0, 0, 0, 0},
    {"log", "probe_windows", K_INT, OFF(log.probe_windows), 0, 1, 4096, 0, 0, 0, 0, 0},
};
_Static_assert(sizeof mf_keys / sizeof mf_keys[0] == MF_N_KEYS, "MF_N_KEYS must count the rows of mf_keys[]");
