/*
 * manifest.h — a run's whole configuration, read from an INI manifest.
 *
 * A manifest (experiments/NAME.ini) has the sections [model] [data] [train]
 * [log] and, for sweeps, [sweep]; `section.key=value` overrides from the
 * command line are applied after the file.  Every key is known to a table in
 * manifest.c; an unknown key, a malformed value or an out-of-range value is an
 * error naming the file, the line and the key (or "command line" and the
 * override).  The parser is inih (Debian libinih-dev).
 *
 * The resolved configuration can be written back as canonical INI text
 * (manifest_to_ini) — that text is what a run stores, hashes and reloads.
 */
#ifndef GATELAB_HARNESS_MANIFEST_H
#define GATELAB_HARNESS_MANIFEST_H

#include <stddef.h>
#include <stdint.h>

#include "model/config.h"
#include "tasks.h" /* gl_task, gl_data_config, GL_PATH_MAX */

#define GL_SWEEP_MAX_KEYS 16

/* train.weight_decay_policy: which tensors AdamW decays (docs/manifest.md) */
typedef enum {
    WD_MATRICES = 0, /* the tensor table's decay flags: matrices and embeddings (+ gates when model.decay_gates) */
    WD_ALL,          /* every parameter, as the official SATFormer code's single AdamW group */
    WD_COUNT
} gl_wd_policy;

/* train.eval_mode: what a periodic validation pass reads. */
typedef enum {
    EM_FIRST = 0, /* the first train.eval_windows non-overlapping windows (val/loss, ...) */
    EM_RANDOM,    /* train.eval_batches x train.batch_size random windows, fresh at every pass (val/random.*),
                   * the TSA paper's evaluate() */
    EM_COUNT
} gl_eval_mode;

typedef struct {
    int steps;              /* optimiser steps */
    int batch_size;         /* B sequences per step */
    float lr;               /* peak learning rate */
    float min_lr;           /* floor of the cosine decay */
    int warmup;             /* linear warmup steps */
    float weight_decay;     /* 0.1 on matrices */
    gl_wd_policy weight_decay_policy; /* matrices (default) or all */
    float beta1, beta2, eps;/* 0.9, 0.95, 1e-8 */
    float grad_clip;        /* global-norm clip; 0 = off */
    uint64_t seed;          /* init, data order, probe */
    int threads;            /* 0 = all cores */
    int eval_every;         /* steps between validation passes */
    int eval_windows;       /* validation windows per pass */
    int ckpt_every;         /* steps between checkpoints (and at the end) */
    int log_every;          /* steps between train-loss log rows */
    gl_eval_mode eval_mode; /* periodic validation: first (the first eval_windows windows) or random */
    int eval_batches;       /* eval_mode = random: batches of batch_size random windows per pass (20) */
    int record_best;        /* 1: at the end, record val/best.* — the periodic evaluation (at a multiple of
                               eval_every) with the lowest validation loss, as the TSA paper's toy tasks report */
} gl_train_config;

typedef struct {
    char results[GL_PATH_MAX]; /* results folder ("results") */
    char name[128];            /* run name prefix ("" = manifest base name) */
    char experiment[128];      /* experiment name ("" = manifest base name) */
    int trace;                 /* 1: write trace.h5 */
    int probe_windows;         /* probe batch size for the trace (4) */
} gl_log_config;

typedef struct {
    char key[64];              /* "section.key", e.g. "model.tsa_lambda" or "scale" */
    char values[1024];         /* the comma list as written */
    int line;                  /* line in the manifest */
} gl_sweep_axis;

typedef struct {
    char path[GL_PATH_MAX];    /* manifest file the config came from ("" if none) */
    char scale[32];            /* named scale from experiments/scales.ini ("" = none) */
    gl_model_config model;
    gl_data_config data;
    gl_train_config train;
    gl_log_config log;
    int n_sweep;
    gl_sweep_axis sweep[GL_SWEEP_MAX_KEYS];
} gl_manifest;

/* Defaults for every key (a small Tiny Shakespeare run). */
void manifest_defaults(gl_manifest *mf);

/* Parse path into mf (starting from defaults), then apply the overrides
 * argv-style "section.key=value" strings.  Returns 0, or -1 with a message
 * naming file, line and key in err.  mf is valid only on success. */
int manifest_load(gl_manifest *mf, const char *path, int n_over, char *const *over,
                  char *err, size_t errlen);

/* Parse INI text (e.g. a run's stored config) the same way; origin names it in errors. */
int manifest_load_text(gl_manifest *mf, const char *text, const char *origin,
                       char *err, size_t errlen);

/* Apply one "section.key=value" override.  Returns 0 or -1 with a message. */
int manifest_set(gl_manifest *mf, const char *assignment, const char *origin, int line,
                 char *err, size_t errlen);

/* Canonical INI text of every key (not [sweep]); the caller frees it. */
char *manifest_to_ini(const gl_manifest *mf);

/* FNV-1a 64-bit hash of the model section's canonical text (checkpoints must match it). */
uint64_t manifest_model_hash(const gl_manifest *mf);

/* A run's identity: config_ini read by manifest_load_text and written back by the typed walk
 * (manifest_each_key) less every *late* key (one added after runs were first registered, whose
 * default is the behaviour before it existed) that has its default value, so a run, a sweep's run
 * id and the "same run but for the seed" rule read the same for a config written before the key
 * existed and one written after.  For a canonical text (manifest_to_ini's) that is its text less
 * those lines.  A text manifest_load_text refuses (not a config this gatelab reads) is returned
 * whole.  Malloc'd; NULL when out of memory. */
char *manifest_identity_text(const char *config_ini);

/* One key of a resolved configuration, as the typed walk gives it (manifest_each_key). */
typedef enum { MF_INT, MF_U64, MF_FLOAT, MF_BOOL, MF_STR, MF_ENUM } gl_key_type;
typedef struct {
    const char *section, *name; /* "model", "tsa_lambda" */
    gl_key_type type;
    double num;                 /* INT, BOOL, FLOAT (NaN = "auto"), ENUM (its index); 0 for U64, STR */
    uint64_t u64;               /* U64 (train.seed); 0 otherwise */
    const char *text;           /* the canonical text, exactly as manifest_to_ini writes it */
    int has_range;              /* INT and FLOAT: lo..hi below hold */
    double lo, hi;
    int lo_open, hi_open;       /* 1: that end is excluded */
    int late;                   /* a late key (manifest_identity_text's rule) */
    int at_default;             /* text equals the default's text */
} gl_key;

/* Call fn(key, ctx) for every key of mf in canonical order (the key table's), stopping at the first
 * non-zero return, which is returned; 0 when every key was visited.  key and its strings live until
 * fn returns.  Every reader of a config (a run's config.ini, the registry's params, the identity
 * text, resume's comparison) goes through manifest_load_text and this walk, never its own parser. */
int manifest_each_key(const gl_manifest *mf, int (*fn)(const gl_key *key, void *ctx), void *ctx);

/* One key's typed value, copied out of the walk (it outlives it). */
typedef struct {
    gl_key_type type;
    double num;                   /* as gl_key.num, but a FLOAT is the double of its canonical text */
    uint64_t u64;                 /* as gl_key.u64 */
    char text[GL_PATH_MAX + 32];  /* the canonical text */
} gl_key_value;

/* The value of key ("section.name") in mf, from the walk: 0, or -1 when no key has that name. */
int manifest_key_get(const gl_manifest *mf, const char *key, gl_key_value *out);

/* Parse value as key ("section.name") would be in a manifest (the same parser, types and ranges,
 * applied to the defaults) and return its typed value: 0, or -1 with a message naming origin and
 * the key.  How a stored parameter (the registry's params) is read back as a number. */
int manifest_parse_key(const char *key, const char *value, const char *origin, gl_key_value *out, char *err,
                       size_t errlen);

#endif
