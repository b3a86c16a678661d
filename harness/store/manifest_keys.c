/*
 * manifest_keys.c — the rows of the manifest's key table (manifest_keys.h).
 *
 * Adding a key is one row here plus one in docs/manifest.md; parsing, range
 * checks, messages, the canonical INI text, the identity text and the typed
 * walk (manifest_each_key) all follow from the row.  Beside the rows live
 * what reads a row back out of a gl_manifest: the enum names and fields, the
 * canonical text of a value (mf_format_value) and the typed walk itself, so
 * every reader of a config goes through the same rows.  What it does not do:
 * parse or check a value (manifest.c does), or print.
 */
#include "manifest_keys.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpe.h"
#include "tasks.h"

#define OFF(f) offsetof(gl_manifest, f)
#define KINT(s, n, f, lo, hi) {s, n, K_INT, OFF(f), 0, lo, hi, 0, 0, 0, 1, 0}
#define KFLT(s, n, f, lo, hi, lo_open, hi_open) {s, n, K_FLOAT, OFF(f), 0, lo, hi, lo_open, hi_open, 0, 1, 0}
/* A [model] int or float whose range is model/config.h's row (config_validate checks the same
 * numbers); KINT_CFG0 also takes 0 below the row (vocab_size: 0 = from the data set or task). */
#define KINT_CFG(s, n, f) KINT_CFG_(s, n, model.f, CFG_RANGE(f))
#define KINT_CFG_(s, n, f, ...) KINT(s, n, f, __VA_ARGS__)
#define KINT_CFG0(s, n, f) KINT_CFG0_(s, n, model.f, CFG_RANGE(f))
#define KINT_CFG0_(s, n, f, ...) KINT_CFG0__(s, n, f, __VA_ARGS__)
#define KINT_CFG0__(s, n, f, lo, hi) KINT(s, n, f, 0, hi)
#define LINT_CFG(s, n, f) LINT_CFG_(s, n, model.f, CFG_RANGE(f))
#define LINT_CFG_(s, n, f, ...) LINT(s, n, f, __VA_ARGS__)
#define KFLT_CFG(s, n, f) KFLT_CFG_(s, n, model.f, CFG_RANGE(f))
#define KFLT_CFG_(s, n, f, ...) KFLT(s, n, f, __VA_ARGS__)
#define LFLT_CFG(s, n, f) LFLT_CFG_(s, n, model.f, CFG_RANGE(f))
#define LFLT_CFG_(s, n, f, ...) LFLT(s, n, f, __VA_ARGS__)
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

/* The [model] ranges are model/config.h's CFG_RANGE rows wherever config_validate checks a fixed
 * range (it checks configs from checkpoints against the same rows; tests/test_manifest.c walks
 * both).  Canonical order = table order. */
const key_def mf_keys[MF_N_KEYS] = {
    {"model", "scale", K_SCALE, OFF(scale), sizeof(((gl_manifest *)0)->scale), 0, 0, 0, 0, 0, 1, 0},
    KINT_CFG0("model", "vocab_size", vocab_size),
    KINT_CFG("model", "d_model", d_model),
    KINT_CFG("model", "n_layer", n_layer),
    KINT_CFG("model", "n_head", n_head),
    KINT_CFG("model", "n_kv_head", n_kv_head),
    KINT_CFG("model", "d_ff", d_ff),
    KINT_CFG("model", "seq_len", seq_len),
    KFLT_CFG("model", "norm_eps", norm_eps),
    KFLT_CFG("model", "rope_base", rope_base),
    KBOOL("model", "qk_norm", model.qk_norm),
    KBOOL("model", "tied", model.tied),
    LENUM("model", "backbone", model.backbone, EN_BB),
    LFLT_CFG("model", "dropout", dropout),
    KENUM("model", "value_residual", model.value_residual, EN_VR),
    KENUM("model", "resformer_variant", model.resformer_variant, EN_RF),
    KINT("model", "value_residual_last_k", model.vr_last_k, 0, 63),
    KBOOL("model", "decay_gates", model.decay_gates),
    LENUM("model", "sat_gate", model.sat_gate, EN_SG),
    LBOOL("model", "sat_gate_bias", model.sat_gate_bias),
    LFLT("model", "sat_gate_bias_init", model.sat_gate_bias_init, -30, 30, 0, 0),
    LFLT_AUTO("model", "resformer_lambda1_init", model.rf_lambda1_init, -100, 100),
    KENUM("model", "depth_routing", model.depth_routing, EN_DR),
    KINT_CFG("model", "router_hidden", router_hidden),
    KFLT_CFG("model", "router_init_bias", router_init_bias),
    KFLT_CFG("model", "tsa_lambda", tsa_lambda),
    LENUM("model", "tsa_form", model.tsa_form, EN_TF),
    KENUM("model", "exit_weighting", model.exit_weighting, EN_EE),
    LENUM("model", "exit_form", model.exit_form, EN_XF),
    LFLT("model", "mod_capacity", model.mod_capacity, 0, 1, 1, 0),
    LINT_CFG("model", "mod_every", mod_every),
    LFLT("model", "random_alpha", model.random_alpha, 0, 1, 1, 0),
    KENUM("model", "cross_layer", model.cross_layer, EN_CL),
    KINT_CFG("model", "hc_expansion", hc_expansion),

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
    LENUM("data", "task_format", data.task_format, EN_TASKF),
    LINT("data", "train_size", data.train_size, 0, 100000000), /* 0 = a fresh sequence per row */
    LINT("data", "eval_size", data.eval_size, 0, 100000000),   /* 0 = TASK_EVAL_WINDOWS */
    LINT("data", "train_len", data.train_len, 0, 2000000000),  /* 0 = data.train_frac */
    LINT("data", "val_len", data.val_len, 0, 2000000000),

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
    LENUM("train", "eval_mode", train.eval_mode, EN_EM),
    LINT("train", "eval_batches", train.eval_batches, 1, 1000000),
    LBOOL("train", "record_best", train.record_best),

    KSTR("log", "results", log.results, S_NONEMPTY, 0),
    KSTR("log", "name", log.name, S_NAME, 0),
    KSTR("log", "experiment", log.experiment, S_NAME, 0),
    {"log", "trace", K_BOOL, OFF(log.trace), 0, 0, 1, 0, 0, 0, 0, 0},
    {"log", "probe_windows", K_INT, OFF(log.probe_windows), 0, 1, 4096, 0, 0, 0, 0, 0},
};
_Static_assert(sizeof mf_keys / sizeof mf_keys[0] == MF_N_KEYS, "MF_N_KEYS must count the rows of mf_keys[]");

/* --------------------------------------------------------------- enums --- */

/* train.weight_decay_policy names, indexed by gl_wd_policy */
static const char *const wd_policy_names[] = {[WD_MATRICES] = "matrices", [WD_ALL] = "all"};
_Static_assert(sizeof wd_policy_names / sizeof wd_policy_names[0] == WD_COUNT, "one name per weight-decay policy");
/* train.eval_mode names, indexed by gl_eval_mode */
static const char *const eval_mode_names[] = {[EM_FIRST] = "first", [EM_RANDOM] = "random"};
_Static_assert(sizeof eval_mode_names / sizeof eval_mode_names[0] == EM_COUNT, "one name per evaluation mode");

const char *mf_enum_name(int en, int v) {
    switch (en) {
    case EN_VR: return config_value_residual_name((gl_value_residual)v);
    case EN_RF: return config_resformer_variant_name((gl_resformer_variant)v);
    case EN_DR: return config_depth_routing_name((gl_depth_routing)v);
    case EN_EE: return config_exit_weighting_name((gl_exit_weighting)v);
    case EN_XF: return config_exit_form_name((gl_exit_form)v);
    case EN_CL: return config_cross_layer_name((gl_cross_layer)v);
    case EN_SG: return config_sat_gate_name((gl_sat_gate)v);
    case EN_BB: return config_backbone_name((gl_backbone)v);
    case EN_TF: return config_tsa_form_name((gl_tsa_form)v);
    case EN_WD: return v >= 0 && v < WD_COUNT ? wd_policy_names[v] : "unknown";
    case EN_TASK: return task_name((gl_task)v);
    case EN_TOK: return task_tokenizer_name((gl_tokenizer)v);
    case EN_TASKF: return task_format_name((gl_task_format)v);
    case EN_EM: return v >= 0 && v < EM_COUNT ? eval_mode_names[v] : "unknown";
    }
    return "unknown";
}

int mf_enum_count(int en) {
    switch (en) {
    case EN_VR: return VR_COUNT;
    case EN_RF: return RF_COUNT;
    case EN_DR: return DR_COUNT;
    case EN_EE: return EE_COUNT;
    case EN_XF: return XF_COUNT;
    case EN_CL: return CL_COUNT;
    case EN_SG: return SG_COUNT;
    case EN_BB: return BB_COUNT;
    case EN_TF: return TF_COUNT;
    case EN_WD: return WD_COUNT;
    case EN_TASK: return TASK_COUNT;
    case EN_TOK: return TOK_COUNT;
    case EN_TASKF: return TASKF_COUNT;
    case EN_EM: return EM_COUNT;
    }
    return 0;
}

/* Enum fields are written through their own type, never through an int*. */
void mf_enum_store(gl_manifest *mf, int en, int v) {
    switch (en) {
    case EN_VR: mf->model.value_residual = (gl_value_residual)v; break;
    case EN_RF: mf->model.resformer_variant = (gl_resformer_variant)v; break;
    case EN_DR: mf->model.depth_routing = (gl_depth_routing)v; break;
    case EN_EE: mf->model.exit_weighting = (gl_exit_weighting)v; break;
    case EN_XF: mf->model.exit_form = (gl_exit_form)v; break;
    case EN_CL: mf->model.cross_layer = (gl_cross_layer)v; break;
    case EN_SG: mf->model.sat_gate = (gl_sat_gate)v; break;
    case EN_BB: mf->model.backbone = (gl_backbone)v; break;
    case EN_TF: mf->model.tsa_form = (gl_tsa_form)v; break;
    case EN_WD: mf->train.weight_decay_policy = (gl_wd_policy)v; break;
    case EN_TASK: mf->data.task = (gl_task)v; break;
    case EN_TOK: mf->data.tokenizer = (gl_tokenizer)v; break;
    case EN_TASKF: mf->data.task_format = (gl_task_format)v; break;
    case EN_EM: mf->train.eval_mode = (gl_eval_mode)v; break;
    }
}

int mf_enum_load(const gl_manifest *mf, int en) {
    switch (en) {
    case EN_VR: return (int)mf->model.value_residual;
    case EN_RF: return (int)mf->model.resformer_variant;
    case EN_DR: return (int)mf->model.depth_routing;
    case EN_EE: return (int)mf->model.exit_weighting;
    case EN_XF: return (int)mf->model.exit_form;
    case EN_CL: return (int)mf->model.cross_layer;
    case EN_SG: return (int)mf->model.sat_gate;
    case EN_BB: return (int)mf->model.backbone;
    case EN_TF: return (int)mf->model.tsa_form;
    case EN_WD: return (int)mf->train.weight_decay_policy;
    case EN_TASK: return (int)mf->data.task;
    case EN_TOK: return (int)mf->data.tokenizer;
    case EN_TASKF: return (int)mf->data.task_format;
    case EN_EM: return (int)mf->train.eval_mode;
    }
    return 0;
}


/* ---------------------------------------------------------------- text --- */

/* Shortest "%.*g" text that reads back as exactly f (so "0.001", not
 * "0.00100000005"); at most 9 digits, which always round-trips a float.
 * Whole numbers are written without an exponent. */
void mf_format_float(char *out, size_t outlen, float f) {
    if (fabsf(f) >= 1.0f && fabsf(f) < 1e15f && f == nearbyintf(f)) {
        snprintf(out, outlen, "%.0f", (double)f); /* 10000, not 1e+04 */
        return;
    }
    for (int p = 1; p <= 9; p++) {
        snprintf(out, outlen, "%.*g", p, (double)f);
        if (strtof(out, NULL) == f) return;
    }
    snprintf(out, outlen, "%.9g", (double)f);
}

void mf_format_value(char *out, size_t outlen, const gl_manifest *mf, const key_def *k) {
    const char *base = (const char *)mf + k->off;
    switch (k->kind) {
    case K_INT: snprintf(out, outlen, "%d", *(const int *)base); break;
    case K_BOOL: snprintf(out, outlen, "%d", *(const int *)base ? 1 : 0); break;
    case K_U64: snprintf(out, outlen, "%" PRIu64, *(const uint64_t *)base); break;
    case K_FLOAT:
        if (k->aux == F_AUTO && isnan(*(const float *)base)) snprintf(out, outlen, "auto");
        else mf_format_float(out, outlen, *(const float *)base);
        break;
    case K_ENUM: snprintf(out, outlen, "%s", mf_enum_name(k->aux, mf_enum_load(mf, k->aux))); break;
    case K_STR:
    case K_SCALE: snprintf(out, outlen, "%s", base); break;
    }
}


/* ------------------------------------------------------------- the walk --- */

int manifest_each_key(const gl_manifest *mf, int (*fn)(const gl_key *key, void *ctx), void *ctx) {
    static const gl_key_type types[] = {[K_INT] = MF_INT, [K_U64] = MF_U64,   [K_FLOAT] = MF_FLOAT, [K_BOOL] = MF_BOOL,
                                        [K_STR] = MF_STR, [K_ENUM] = MF_ENUM, [K_SCALE] = MF_STR};
    gl_manifest *dm = malloc(sizeof *dm);
    if (dm) manifest_defaults(dm);
    int rc = 0;
    for (int i = 0; i < MF_N_KEYS && !rc; i++) {
        const key_def *k = &mf_keys[i];
        const char *base = (const char *)mf + k->off;
        char text[GL_PATH_MAX + 32], dtext[GL_PATH_MAX + 32] = "";
        mf_format_value(text, sizeof text, mf, k);
        if (dm) mf_format_value(dtext, sizeof dtext, dm, k);
        gl_key key = {.section = k->section, .name = k->name, .type = types[k->kind], .text = text,
                      .has_range = k->kind == K_INT || k->kind == K_FLOAT, .lo = k->lo, .hi = k->hi,
                      .lo_open = k->lo_open, .hi_open = k->hi_open, .late = k->late,
                      .at_default = dm && !strcmp(text, dtext)};
        switch (k->kind) {
        case K_INT: key.num = *(const int *)base; break;
        case K_BOOL: key.num = *(const int *)base != 0; break;
        case K_FLOAT: key.num = *(const float *)base; break;
        case K_ENUM: key.num = mf_enum_load(mf, k->aux); break;
        case K_U64: key.u64 = *(const uint64_t *)base; break;
        case K_STR:
        case K_SCALE: break;
        }
        rc = fn(&key, ctx);
    }
    free(dm);
    return rc;
}

typedef struct {
    const char *key;
    gl_key_value *out;
} key_get_ctx;

static int key_get_one(const gl_key *key, void *ctx) {
    key_get_ctx *g = ctx;
    size_t sl = strlen(key->section);
    if (strncmp(g->key, key->section, sl) || g->key[sl] != '.' || strcmp(g->key + sl + 1, key->name)) return 0;
    g->out->type = key->type;
    /* a float as the decimal its canonical text stands for (0.1, not (double)0.1f = 0.100000001...),
     * the number a claim or a plan that writes 0.1 compares with */
    g->out->num = key->type == MF_FLOAT && !isnan(key->num) ? strtod(key->text, NULL) : key->num;
    g->out->u64 = key->u64;
    snprintf(g->out->text, sizeof g->out->text, "%s", key->text);
    return 1;
}

int manifest_key_get(const gl_manifest *mf, const char *key, gl_key_value *out) {
    key_get_ctx g = {key, out};
    return manifest_each_key(mf, key_get_one, &g) == 1 ? 0 : -1;
}
