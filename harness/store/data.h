/*
 * data.h — data sets and batches: a byte-level text corpus (Tiny Shakespeare,
 * enwik8) or a synthetic task (copy, sort, MQAR; harness/store/tasks.h), behind one
 * interface the training loop, evaluation and analysis read from.
 *
 * Text: the whole file is read once into memory.  Splits are consecutive:
 * train = the first train_frac of the bytes, val = the next val_frac (all the
 * rest when the two fractions sum to 1), test = what remains (may be empty).
 * data.tokenizer = char (default): one token id per byte; the vocabulary is
 * the sorted set of distinct bytes of the whole file (nanoGPT's
 * shakespeare_char convention).  data.tokenizer = bpe: a byte-level BPE
 * (bpe.h) trained on the bytes of the training split alone (or given, when a
 * run resumes), and each split encoded on its own, so that no token straddles
 * two splits; split_start/split_len then count tokens, not bytes.
 * data.tokenizer = utf8: the file decoded as UTF-8 (utf8.h: ill-formed bytes
 * become U+FFFD, as Python's errors="replace"), one id per distinct
 * character, ids in ascending code-point order (the TSA paper's
 * CharTokenizer); the fractions split the characters, and split_start /
 * split_len count characters.
 *
 * Windows: a window is T input tokens and the T targets shifted by one, so it
 * reads T+1 consecutive tokens.  Training windows start uniformly at random in
 * the train split; evaluation window i of a split is the i-th non-overlapping
 * window from the split's start.  Synthetic tasks generate training sequences
 * from the caller's rng and evaluation window i of a split from a generator
 * seeded by (seed, split, i), so their val and test sets are fixed.
 *
 * Layout of every batch buffer: (B, T) row-major; tokens and targets are ids
 * in [0, V); mask is 1.0 where the target is scored and 0.0 elsewhere.
 * Formats of the synthetic tasks: docs/tasks.md.
 * Where things live: text corpora, splits and batches in data.c; the
 * synthetic tasks in tasks.c; the BPE tokenizer in bpe.c; the [data] keys in
 * manifest.c.
 */
#ifndef GATELAB_HARNESS_DATA_H
#define GATELAB_HARNESS_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "model/rng.h"
#include "bpe.h"
#include "categories.h"
#include "utf8.h"
#include "manifest.h"

typedef enum { SPLIT_TRAIN = 0, SPLIT_VAL, SPLIT_TEST } gl_split;

typedef struct {
    gl_task task;
    gl_data_config dc;        /* copy of the manifest's [data] section */
    int T;                    /* window length (model.seq_len) */
    uint64_t seed;            /* seeds the synthetic evaluation sets */
    int vocab_size;           /* V */
    uint8_t *vocab;           /* (V) id -> byte (text) or display symbol (synthetic) */
    int byte_id[256];         /* byte -> id, -1 when the byte is not in the vocabulary */
    char path[GL_PATH_MAX];   /* text: the resolved file; synthetic: "" */
    uint8_t *ids;             /* text: (n) the file; char: the token id of every byte */
    size_t n;                 /* text: bytes in the file */
    size_t split_start[3];    /* text: first token of train, val, test (char: a byte) */
    size_t split_len[3];      /* text: tokens in train, val, test (char: bytes) */
    /* data.tokenizer = bpe only (zero for char and the synthetic tasks) */
    bpe_merges *merges;       /* the merges (malloc'd), trained on the train split or given */
    bpe_tok bpe;              /* the tokenizer built from them; V = bpe.V */
    uint16_t *tok;            /* (n_tok) token ids of train, val and test, each split encoded alone */
    size_t n_tok;
    size_t split_bytes[3];    /* bytes in train, val, test */
    /* data.tokenizer = utf8 only (NULL otherwise); tok then holds one id per character */
    utf8_vocab *u8v;          /* the code points of the file, ascending: id -> code point */
    uint8_t *u8b;             /* (4 V) the UTF-8 bytes of each id, 4 bytes apart */
    /* data.train_size > 0 (synthetic tasks) only */
    uint32_t *perm;           /* (train_size) the order of the training set in epoch perm_epoch */
    long perm_epoch;          /* -1: none yet */
} gl_dataset;

/* The folders a data set named by a bare file name is looked for in, in
 * order: $GATELAB_DATA (when set; a relative value is taken against the
 * working folder, where the command started), data/ in the clone, then the
 * clone's ../shared/data.  "The clone" is the source tree the binary was
 * built in ($GATELAB_ROOT, else found from the binary's path as
 * run_repo_path does), else the working folder.  Every dir is absolute. */
#define DATA_DIRS_MAX 3
typedef struct {
    int n;
    char dir[DATA_DIRS_MAX][GL_PATH_MAX];
    const char *origin[DATA_DIRS_MAX]; /* "$GATELAB_DATA", "data/ in the clone", "../shared/data" */
} gl_data_dirs;

void data_search_dirs(gl_data_dirs *d);

/* Where file is: as given when it is a path (absolute, or starting with "./"
 * or "../"), else the first of data_search_dirs that holds it.  Returns 0
 * with the path in out, or -1 with a message in err that lists every place
 * searched and says how to get the data (`make data`, GATELAB_DATA). */
int data_find(const char *file, char *out, size_t outlen, char *err, size_t errlen);

/* Open the data set of dc for windows of T tokens.  Text: reads the file
 * (found by data_find) and checks that train and
 * val each hold at least one window of T+1 tokens.  Synthetic: checks the task
 * parameters against T (task_check).  seed fixes the synthetic val/test
 * sequences (pass train.seed).  Returns 0, or -1 with a message in err naming
 * the path or key and what to do; ds is then closed (nothing to free).  On
 * success the caller owns ds and calls data_close. */
int data_open(gl_dataset *ds, const gl_data_config *dc, int T, uint64_t seed, char *err,
              size_t errlen);

/* data_open, with the BPE merges given instead of trained (a resumed run, or
 * evaluating a run: the tokenizer stored with the run).  merges is used only
 * when dc->tokenizer is bpe, and may be NULL (then trained as data_open
 * does).  The merges are checked as untrusted input (bpe_build). */
int data_open_tok(gl_dataset *ds, const gl_data_config *dc, int T, uint64_t seed, const bpe_merges *merges,
                  char *err, size_t errlen);

/* Free what data_open allocated; accepts a zeroed or half-built ds and may be
 * called twice. */
void data_close(gl_dataset *ds);

int data_vocab_size(const gl_dataset *ds);

/* id -> byte for text (the sorted distinct bytes of the whole file, nanoGPT's
 * convention); for synthetic tasks a printable symbol per id for display
 * (symbols may repeat when the task has more ids than the alphabet).  For a
 * BPE or utf8 data set the 256 bytes, zero beyond (V bytes are readable; they
 * are the tokens' bytes only for BPE ids 0..255): use data_token for any id. */
const uint8_t *data_vocab(const gl_dataset *ds);

/* The bytes of token id (0 <= id < V): *len bytes at the returned pointer
 * (one byte for char and the synthetic tasks; a character's 1 to 4 UTF-8
 * bytes for utf8). */
const uint8_t *data_token(const gl_dataset *ds, int id, size_t *len);

/* The category (categories.h) of each of the n tokens at tokens, read as one
 * stretch of text: each token takes the class cat_classify gives its first
 * non-space byte in the decoded text (a token of spaces only is structural).
 * For one-byte tokens this is cat_classify of the bytes.  Returns 0, or -1
 * when out of memory. */
int data_categories(const gl_dataset *ds, const int *tokens, int n, const cat_words *fw, uint8_t *out);

/* B random training windows from rng: tokens, targets (B*T ints), mask (B*T
 * floats, 1 = scored).  Deterministic given the rng state; no allocation. */
void data_train_batch(const gl_dataset *ds, gl_rng *rng, int B, int *tokens, int *targets,
                      float *mask);

/* The training batch of optimiser step `step` (0-based).  With a fixed
 * training set (synthetic task, data.train_size = N > 0): epochs of
 * E = floor(N / B) batches, each epoch a fresh shuffle of the N sequences, the
 * last N mod B of each shuffle left out (PyTorch's DataLoader with shuffle
 * and drop_last, as the TSA paper's toy tasks are read); sequence i of the set
 * is generated from task_eval_rng(seed, 0, i), the shuffle of epoch e from
 * (seed, e), so the batch is a function of (seed, step) and rng is not used.
 * Otherwise data_train_batch with rng.  May update ds's cached order. */
void data_train_batch_step(gl_dataset *ds, gl_rng *rng, long step, int B, int *tokens, int *targets, float *mask);

/* E, the batches of B in one epoch of the fixed training set (0 when there is none). */
long data_train_steps_per_epoch(const gl_dataset *ds, int B);

/* Number of non-overlapping evaluation windows of the split (text:
 * (len - 1) / T, 0 when the split is shorter than T + 1; synthetic:
 * data.eval_size (TASK_EVAL_WINDOWS when 0) for val and test, 0 for train). */
long data_eval_windows(const gl_dataset *ds, gl_split split);

/* Windows [first, first+B) of the split (deterministic); returns how many were
 * filled (<= B).  Rows past the last window are filled with token 0, target 0
 * and mask 0 so a caller may always run a full batch. */
int data_eval_batch(const gl_dataset *ds, gl_split split, long first, int B, int *tokens,
                    int *targets, float *mask);

/* Random evaluation windows, as the TSA paper's evaluate() draws them
 * (scripts/phase6_language.py, mlx/evaluate.py: torch.randint(0, len - T - 1)
 * starts): text: B windows starting uniformly at one of the split's first
 * len - T - 1 tokens (the last possible start is never drawn, as there);
 * synthetic: B windows drawn uniformly, with replacement, from the split's
 * fixed set.  Deterministic given the rng state; no allocation.
 * data_random_starts is the number of starts (0: the split is too short, or
 * the train split of a synthetic task). */
long data_random_starts(const gl_dataset *ds, gl_split split);
void data_random_batch(const gl_dataset *ds, gl_split split, gl_rng *rng, int B, int *tokens, int *targets,
                       float *mask);

/* Map bytes to ids one for one (synthetic tasks: display symbols to the
 * first id that shows them; a BPE data set: the byte ids 0..255, not its
 * merges — text goes through bpe_encode with ds->bpe, or run_encode; a utf8
 * data set maps no byte: its text goes through run_encode).  Returns 0, or -1 with a message naming the first byte not in
 * the vocabulary (as a character and in hex) and its offset. */
int data_encode(const gl_dataset *ds, const uint8_t *bytes, size_t n, int *ids, char *err,
                size_t errlen);

/* Token and whole-sequence accuracy of argmax(logits) on masked positions
 * (logits B*T*V; ties go to the lower id).  tok_acc = correct / scored
 * positions; seq_acc = share of rows with at least one scored position whose
 * scored positions are all correct.  Both are 0 when nothing is scored. */
void data_accuracy(const float *logits, const int *targets, const float *mask, int B, int T, int V,
                   double *tok_acc, double *seq_acc);

/* "train", "val" or "test" (for messages and registry rows). */
const char *data_split_name(gl_split split);

#endif
