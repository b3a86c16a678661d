/*
 * tasks.h — the synthetic sequence tasks copy, sort and MQAR.
 *
 * data.c serves them through the gl_dataset interface (data.h); this header is
 * the layer below, used by data.c, by manifest.c (to refuse a seq_len that
 * cannot hold a sequence while the line number is still known) and by tests.
 * It owns the [data] section's struct, so that manifest.h includes this
 * header and not the other way round.
 * Exact formats, vocabulary layout and the evaluation seeds: docs/tasks.md.
 * Where things live: generators and scoring masks in tasks.c; batches in data.c.
 *
 * Vocabulary layout (ids):
 *   copy, sort: symbols 0..S-1, SEP = S, PAD = S+1                   V = S + 2
 *   mqar:       keys 0..K-1, values K..K+Vv-1, PAD = K+Vv             V = K + Vv + 1
 *   copy, sort with data.task_format = paper (the TSA paper's official
 *   toy_tasks.py layout): PAD = 0, BOS = 1, EOS = 2, SEP = 3,
 *   symbols 4..S+3                                                    V = S + 4
 */
#ifndef GATELAB_HARNESS_TASKS_H
#define GATELAB_HARNESS_TASKS_H

#include <stddef.h>
#include <stdint.h>

#include "model/rng.h"

/* Longest path anywhere in the harness (data files, run folders, results). */
#define GL_PATH_MAX 1024

/* The tasks: X(IDENTIFIER, "manifest name"), in enum order. */
#define GL_TASKS(X) X(TASK_TEXT, "text") X(TASK_COPY, "copy") X(TASK_SORT, "sort") X(TASK_MQAR, "mqar")
#define GL_TASK_ID(id, name) id,
#define GL_TASK_ONE(id, name) +1
typedef enum { GL_TASKS(GL_TASK_ID) } gl_task;
enum { TASK_COUNT = 0 GL_TASKS(GL_TASK_ONE) };
#undef GL_TASK_ID
#undef GL_TASK_ONE

/* Tokenizers of the text task: X(IDENTIFIER, "manifest name"), in enum order
 * (char: one id per distinct byte of the file; bpe: byte-level BPE, bpe.h). */
#define GL_TOKENIZERS(X) X(TOK_CHAR, "char") X(TOK_BPE, "bpe")
#define GL_TOK_ID(id, name) id,
#define GL_TOK_ONE(id, name) +1
typedef enum { GL_TOKENIZERS(GL_TOK_ID) } gl_tokenizer;
enum { TOK_COUNT = 0 GL_TOKENIZERS(GL_TOK_ONE) };
#undef GL_TOK_ID
#undef GL_TOK_ONE

/* Layouts of the copy and sort sequences: X(IDENTIFIER, "manifest name"), in enum order
 * (gatelab: x SEP y, scored on y; paper: BOS x SEP y EOS, scored on y and EOS; docs/tasks.md). */
#define GL_TASK_FORMATS(X) X(TASKF_GATELAB, "gatelab") X(TASKF_PAPER, "paper")
#define GL_TF_ID(id, name) id,
#define GL_TF_ONE(id, name) +1
typedef enum { GL_TASK_FORMATS(GL_TF_ID) } gl_task_format;
enum { TASKF_COUNT = 0 GL_TASK_FORMATS(GL_TF_ONE) };
#undef GL_TF_ID
#undef GL_TF_ONE

/* The paper format's special ids (data.task_format = paper). */
enum { TF_PAPER_PAD = 0, TF_PAPER_BOS = 1, TF_PAPER_EOS = 2, TF_PAPER_SEP = 3, TF_PAPER_SPECIAL = 4 };

typedef struct {
    gl_task task;
    char file[GL_PATH_MAX]; /* text task: file name, resolved against $GATELAB_DATA (default "data/")
                               unless absolute or starting with "./" */
    float train_frac;       /* 0.9 */
    float val_frac;         /* 0.1 (enwik8: 0.05; the rest is test) */
    gl_tokenizer tokenizer; /* text task: char (default) or bpe */
    int vocab_size;         /* tokenizer = bpe: 256 bytes + merges (257..8192); char: 0 */
    /* synthetic tasks */
    int seq_items;          /* copy/sort: items per sequence (10) */
    int n_symbols;          /* copy/sort: distinct item symbols (16) */
    int mqar_pairs;         /* mqar: key-value pairs per sequence (8) */
    int mqar_queries;       /* mqar: queries per sequence (4) */
    int mqar_keys;          /* mqar: key vocabulary size (32) */
    int mqar_values;        /* mqar: value vocabulary size (32) */
    gl_task_format task_format; /* copy/sort: gatelab (default) or paper */
    int train_size;         /* synthetic: 0 = a fresh sequence every row (default); N = a fixed set of N
                               training sequences, read in epochs of shuffled batches */
    int eval_size;          /* synthetic: sequences in the val and the test set (0 = TASK_EVAL_WINDOWS) */
} gl_data_config;

/* "text", "copy", "sort", "mqar"; "unknown" out of range. */
const char *task_name(gl_task t);

/* "char", "bpe"; "unknown" out of range. */
const char *task_tokenizer_name(gl_tokenizer t);

/* "gatelab", "paper"; "unknown" out of range. */
const char *task_format_name(gl_task_format f);

/* Sequences in the val and the test set of a synthetic task: data.eval_size, or
 * TASK_EVAL_WINDOWS when it is 0. */
long task_eval_size(const gl_data_config *dc);

/* Evaluation windows per split of a synthetic task (val and test). */
#define TASK_EVAL_WINDOWS 256

/* Check that the task's parameters fit a context of T tokens and each other
 * (copy/sort: T >= 2n; mqar: keys >= pairs >= queries, T >= 2P + 2Q).  The
 * text task always passes here (data_open checks the file).  Returns 0, or -1
 * with a message naming the manifest keys to change. */
int task_check(const gl_data_config *dc, int T, char *err, size_t errlen);

/* Layout of the vocabulary (see above).  task_sep_id is -1 for mqar;
 * task_bos_id and task_eos_id are -1 except in the paper format. */
int task_vocab_size(const gl_data_config *dc);
int task_sep_id(const gl_data_config *dc);
int task_pad_id(const gl_data_config *dc);
int task_bos_id(const gl_data_config *dc);
int task_eos_id(const gl_data_config *dc);
/* The id of item symbol i (0 <= i < n_symbols) of copy/sort. */
int task_symbol_id(const gl_data_config *dc, int i);
/* mqar: id of value number v (0 <= v < mqar_values). */
int task_value_id(const gl_data_config *dc, int v);

/* One printable byte per id, for display only (symbols repeat once the
 * alphabet runs out): sym has task_vocab_size(dc) entries. */
void task_display(const gl_data_config *dc, uint8_t *sym);

/* One sequence of the task drawn from rng, cut to a window: tokens[t] = s[t],
 * targets[t] = s[t+1] for t < T, mask[t] = 1 exactly where the target is
 * scored.  Requires task_check(dc, T) == 0.  No allocation. */
void task_sequence(const gl_data_config *dc, gl_rng *rng, int T, int *tokens, int *targets,
                   float *mask);

/* The generator of evaluation window i of split (1 = val, 2 = test): a fixed
 * function of (seed, split, i), so every evaluation sees the same sequences.
 * Split 0 (train) gives sequence i of the fixed training set (data.train_size). */
void task_eval_rng(gl_rng *r, uint64_t seed, int split, long i);

#endif
