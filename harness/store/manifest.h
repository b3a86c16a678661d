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

#define GL_PATH_MAX 1024
#define GL_SWEEP_MAX_KEYS 16

typedef enum { TASK_TEXT = 0, TASK_COPY, TASK_SORT, TASK_MQAR } gl_task;

typedef struct {
    gl_task task;
    char file[GL_PATH_MAX]; /* text task: file name, resolved against $GATELAB_DATA (default "data/")
                               unless absolute or starting with "./" */
    float train_frac;       /* 0.9 */
    float val_frac;         /* 0.1 (enwik8: 0.05; the rest is test) */
    /* synthetic tasks */
    int seq_items;          /* copy/sort: items per sequence (10) */
    int n_symbols;          /* copy/sort: distinct item symbols (16) */
    int mqar_pairs;         /* mqar: key-value pairs per sequence (8) */
    int mqar_queries;       /* mqar: queries per sequence (4) */
    int mqar_keys;          /* mqar: key vocabulary size (32) */
    int mqar_values;        /* mqar: value vocabulary size (32) */
} gl_data_config;

typedef struct {
    int steps;              /* optimiser steps */
    int batch_size;         /* B sequences per step */
    float lr;               /* peak learning rate */
    float min_lr;           /* floor of the cosine decay */
    int warmup;             /* linear warmup steps */
    float weight_decay;     /* 0.1 on matrices */
    float beta1, beta2, eps;/* 0.9, 0.95, 1e-8 */
    float grad_clip;        /* global-norm clip; 0 = off */
    uint64_t seed;          /* init, data order, probe */
    int threads;            /* 0 = all cores */
    int eval_every;         /* steps between validation passes */
    int eval_windows;       /* validation windows per pass */
    int ckpt_every;         /* steps between checkpoints (and at the end) */
    int log_every;          /* steps between train-loss log rows */
} gl_train_config;

typedef struct {
    char results[GL_PATH_MAX]; /* results folder ("results") */
    char name[128];            /* run name prefix ("" = manifest base name) */
    char experiment[128];      /* experiment name ("" = manifest base name) */
    int trace;                 /* 1: write trace.h5 */
    int probe_windows;         /* probe batch size for the trace (4) */
} gl_log_config;

typedef struct {
    char key[64];              /* "section.key", e.g. "train.tsa_lambda" or "scale" */
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

const char *manifest_task_name(gl_task t);

#endif
