/*
 * tasks.c — synthetic sequence tasks: copy, sort and multi-query associative
 * recall (MQAR), generated on the fly from an explicit gl_rng.
 *
 * Formats (docs/tasks.md has the full description):
 *   copy:  x1..xn SEP x1..xn             scored on the n outputs
 *   sort:  x1..xn SEP sort(x1..xn)       scored on the n outputs
 *   mqar:  k1 v1 .. kP vP  q1 a1 .. qQ aQ   scored where the input is a query
 *          key and the target its value (Arora et al., "Zoology: measuring and
 *          improving recall in efficient language models", 2023, MQAR task;
 *          here keys and values have disjoint id ranges and the queries follow
 *          the pairs directly, without Zoology's filler tokens).
 * data.task_format = paper lays copy/sort out as the TSA paper's official code
 * does (src/tsa/benchmarks/toy_tasks.py of github.com/AhmedHamadto/TSA):
 *   BOS x1..xn SEP y1..yn EOS           scored on the n outputs and EOS
 * with PAD = 0, BOS = 1, EOS = 2, SEP = 3 and the items at ids 4 and up.
 * Items of copy/sort are uniform with replacement; MQAR keys are distinct
 * within a sequence, values uniform with replacement, the Q queries are
 * distinct keys of the sequence in random order.
 *
 * What it does not do: hold data sets, allocate, or read files (data.c does
 * the gl_dataset side).  Everything here is a pure function of its inputs and
 * the rng, so a fixed seed gives the same sequences on every machine.
 */
#include "tasks.h"
#include "model/rng.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>

#define GL_TASK_NAME(id, name) [id] = name,
static const char *const task_names[] = {GL_TASKS(GL_TASK_NAME)};
#undef GL_TASK_NAME
_Static_assert(sizeof task_names / sizeof task_names[0] == TASK_COUNT, "one name per task");

const char *task_name(gl_task t) { return (int)t >= 0 && (int)t < TASK_COUNT ? task_names[t] : "unknown"; }

#define GL_TOK_NAME(id, name) [id] = name,
static const char *const tokenizer_names[] = {GL_TOKENIZERS(GL_TOK_NAME)};
#undef GL_TOK_NAME
_Static_assert(sizeof tokenizer_names / sizeof tokenizer_names[0] == TOK_COUNT, "one name per tokenizer");

const char *task_tokenizer_name(gl_tokenizer t) {
    return (int)t >= 0 && (int)t < TOK_COUNT ? tokenizer_names[t] : "unknown";
}

#define GL_TF_NAME(id, name) [id] = name,
static const char *const format_names[] = {GL_TASK_FORMATS(GL_TF_NAME)};
#undef GL_TF_NAME
_Static_assert(sizeof format_names / sizeof format_names[0] == TASKF_COUNT, "one name per task format");

const char *task_format_name(gl_task_format f) {
    return (int)f >= 0 && (int)f < TASKF_COUNT ? format_names[f] : "unknown";
}

long task_eval_size(const gl_data_config *dc) { return dc->eval_size > 0 ? dc->eval_size : TASK_EVAL_WINDOWS; }

static int paper(const gl_data_config *dc) {
    return dc->task_format == TASKF_PAPER && (dc->task == TASK_COPY || dc->task == TASK_SORT);
}

static const char alnum[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
static const char letters[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
static const char valsyms[] = "0123456789!#$%&*+-/<=>?@^~";

int task_check(const gl_data_config *dc, int T, char *err, size_t errlen) {
    const char *name = task_name(dc->task);
    if (dc->task_format != TASKF_GATELAB && dc->task != TASK_COPY && dc->task != TASK_SORT) {
        snprintf(err, errlen, "data.task_format = %s applies to data.task = copy or sort, not %s; remove the key",
                 task_format_name(dc->task_format), name);
        return -1;
    }
    if (dc->task == TASK_TEXT && (dc->train_size != 0 || dc->eval_size != 0)) {
        snprintf(err, errlen, "data.%s applies to the synthetic tasks (copy, sort, mqar), not data.task = text; "
                 "remove the key (a text's splits are set by data.train_frac and data.val_frac)",
                 dc->train_size != 0 ? "train_size" : "eval_size");
        return -1;
    }
    switch (dc->task) {
    case TASK_TEXT:
        return 0;
    case TASK_COPY:
    case TASK_SORT:
        if (dc->seq_items < 1 || dc->n_symbols < 1) {
            snprintf(err, errlen, "data.seq_items (%d) and data.n_symbols (%d) must be at least 1",
                     dc->seq_items, dc->n_symbols);
            return -1;
        }
        if (paper(dc) && (long)T < 2L * dc->seq_items + 2) {
            snprintf(err, errlen,
                     "model.seq_len (%d) is too short for data.task = %s with data.task_format = paper and "
                     "data.seq_items = %d: the sequence BOS x1..xn SEP y1..yn EOS is read as model.seq_len >= "
                     "2 * data.seq_items + 2 = %ld inputs; raise model.seq_len or lower data.seq_items",
                     T, name, dc->seq_items, 2L * dc->seq_items + 2);
            return -1;
        }
        if ((long)T < 2L * dc->seq_items) {
            snprintf(err, errlen,
                     "model.seq_len (%d) is too short for data.task = %s with data.seq_items = %d: "
                     "the sequence x1..xn SEP y1..yn needs model.seq_len >= 2 * data.seq_items = "
                     "%ld; raise model.seq_len or lower data.seq_items",
                     T, name, dc->seq_items, 2L * dc->seq_items);
            return -1;
        }
        return 0;
    case TASK_MQAR:
        if (dc->mqar_pairs < 1 || dc->mqar_queries < 1 || dc->mqar_values < 1) {
            snprintf(err, errlen,
                     "data.mqar_pairs (%d), data.mqar_queries (%d) and data.mqar_values (%d) must "
                     "be at least 1",
                     dc->mqar_pairs, dc->mqar_queries, dc->mqar_values);
            return -1;
        }
        if (dc->mqar_keys < dc->mqar_pairs) {
            snprintf(err, errlen,
                     "data.mqar_keys (%d) must be at least data.mqar_pairs (%d): the keys of one "
                     "sequence are distinct",
                     dc->mqar_keys, dc->mqar_pairs);
            return -1;
        }
        if (dc->mqar_queries > dc->mqar_pairs) {
            snprintf(err, errlen,
                     "data.mqar_queries (%d) must be at most data.mqar_pairs (%d): each query asks "
                     "a different key",
                     dc->mqar_queries, dc->mqar_pairs);
            return -1;
        }
        if ((long)T < 2L * dc->mqar_pairs + 2L * dc->mqar_queries) {
            snprintf(err, errlen,
                     "model.seq_len (%d) is too short for data.task = mqar: %d pairs and %d queries "
                     "need model.seq_len >= 2 * data.mqar_pairs + 2 * data.mqar_queries = %ld",
                     T, dc->mqar_pairs, dc->mqar_queries,
                     2L * dc->mqar_pairs + 2L * dc->mqar_queries);
            return -1;
        }
        return 0;
    }
    snprintf(err, errlen, "data.task (%d) is not a known task", (int)dc->task);
    return -1;
}

int task_vocab_size(const gl_data_config *dc) {
    switch (dc->task) {
    case TASK_COPY:
    case TASK_SORT:
        return dc->n_symbols + (paper(dc) ? TF_PAPER_SPECIAL : 2);
    case TASK_MQAR:
        return dc->mqar_keys + dc->mqar_values + 1;
    default:
        return 0;
    }
}

int task_sep_id(const gl_data_config *dc) {
    if (paper(dc)) return TF_PAPER_SEP;
    return (dc->task == TASK_COPY || dc->task == TASK_SORT) ? dc->n_symbols : -1;
}

int task_pad_id(const gl_data_config *dc) { return paper(dc) ? TF_PAPER_PAD : task_vocab_size(dc) - 1; }

int task_bos_id(const gl_data_config *dc) { return paper(dc) ? TF_PAPER_BOS : -1; }

int task_eos_id(const gl_data_config *dc) { return paper(dc) ? TF_PAPER_EOS : -1; }

int task_symbol_id(const gl_data_config *dc, int i) {
    assert((dc->task == TASK_COPY || dc->task == TASK_SORT) && i >= 0 && i < dc->n_symbols);
    return paper(dc) ? TF_PAPER_SPECIAL + i : i;
}

int task_value_id(const gl_data_config *dc, int v) {
    assert(dc->task == TASK_MQAR && v >= 0 && v < dc->mqar_values);
    return dc->mqar_keys + v;
}

void task_display(const gl_data_config *dc, uint8_t *sym) {
    int V = task_vocab_size(dc);
    if (dc->task == TASK_MQAR) {
        for (int k = 0; k < dc->mqar_keys; k++) sym[k] = (uint8_t)letters[k % (sizeof letters - 1)];
        for (int v = 0; v < dc->mqar_values; v++)
            sym[dc->mqar_keys + v] = (uint8_t)valsyms[v % (sizeof valsyms - 1)];
    } else if (paper(dc)) {
        for (int i = 0; i < dc->n_symbols; i++) sym[task_symbol_id(dc, i)] = (uint8_t)alnum[i % (sizeof alnum - 1)];
        sym[TF_PAPER_PAD] = '.';
        sym[TF_PAPER_BOS] = '^';
        sym[TF_PAPER_EOS] = '$';
        sym[TF_PAPER_SEP] = '|';
        return;
    } else {
        for (int i = 0; i < dc->n_symbols; i++) sym[i] = (uint8_t)alnum[i % (sizeof alnum - 1)];
        sym[dc->n_symbols] = '|';
    }
    sym[V - 1] = '.';
}

/* The window view of a sequence s: element j goes to tokens[j] (j < T) and
 * to targets[j-1] (1 <= j <= T). */
static void put(int T, int *tokens, int *targets, int j, int v) {
    if (j < T) tokens[j] = v;
    if (j >= 1 && j <= T) targets[j - 1] = v;
}

static int cmp_int(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

static void copy_sort_sequence(const gl_data_config *dc, gl_rng *rng, int T, int *tokens,
                               int *targets, float *mask) {
    int n = dc->seq_items, sep = task_sep_id(dc);
    /* x1..xn at s[0..n) lie in tokens[0..n) since n <= T/2 */
    for (int j = 0; j < n; j++) put(T, tokens, targets, j, (int)rng_below(rng, (uint64_t)dc->n_symbols));
    put(T, tokens, targets, n, sep);
    /* y_k = s[n+k] is targets[n+k-1]: the block targets[n..2n) */
    for (int k = 0; k < n; k++) targets[n + k] = tokens[k];
    if (dc->task == TASK_SORT) qsort(targets + n, (size_t)n, sizeof(int), cmp_int);
    for (int k = 1; k <= n && n + k < T; k++) tokens[n + k] = targets[n + k - 1]; /* s[n+k] */
    for (int t = 0; t < T; t++) mask[t] = (t >= n && t < 2 * n) ? 1.0f : 0.0f;
}

/* The paper format, s = BOS x1..xn SEP y1..yn EOS (s[0] = BOS, x_j = s[j], SEP = s[n+1],
 * y_k = s[n+1+k], EOS = s[2n+2]); T >= 2n+2, so everything but EOS is an input.  Scored: the
 * targets of positions n+1 .. 2n+1, i.e. y1..yn and EOS (toy_tasks.py masks the first n+1). */
static void paper_sequence(const gl_data_config *dc, gl_rng *rng, int T, int *tokens, int *targets,
                           float *mask) {
    const int n = dc->seq_items;
    put(T, tokens, targets, 0, TF_PAPER_BOS);
    for (int j = 1; j <= n; j++)
        put(T, tokens, targets, j, task_symbol_id(dc, (int)rng_below(rng, (uint64_t)dc->n_symbols)));
    put(T, tokens, targets, n + 1, TF_PAPER_SEP);
    int *y = targets + n + 1; /* y_k = s[n+1+k] is targets[n+k]: y points at y_1 */
    for (int k = 0; k < n; k++) y[k] = tokens[1 + k];
    if (dc->task == TASK_SORT) qsort(y, (size_t)n, sizeof(int), cmp_int);
    for (int k = 0; k < n; k++) put(T, tokens, targets, n + 2 + k, y[k]);
    put(T, tokens, targets, 2 * n + 2, TF_PAPER_EOS);
    for (int t = 0; t < T; t++) mask[t] = (t >= n + 1 && t <= 2 * n + 1) ? 1.0f : 0.0f;
}

static void mqar_sequence(const gl_data_config *dc, gl_rng *rng, int T, int *tokens, int *targets,
                          float *mask) {
    int P = dc->mqar_pairs, Q = dc->mqar_queries, K = dc->mqar_keys;
    /* P distinct keys: Floyd's sampling (exactly P draws), then a Fisher–Yates
     * shuffle so the order of the pairs is uniform too.  Keys live at s[2i]. */
    for (int i = 0; i < P; i++) {
        int j = K - P + i;
        int t = (int)rng_below(rng, (uint64_t)j + 1);
        int seen = 0;
        for (int m = 0; m < i && !seen; m++) seen = tokens[2 * m] == t;
        tokens[2 * i] = seen ? j : t;
    }
    for (int i = P - 1; i > 0; i--) {
        int j = (int)rng_below(rng, (uint64_t)i + 1);
        int tmp = tokens[2 * i];
        tokens[2 * i] = tokens[2 * j];
        tokens[2 * j] = tmp;
    }
    for (int i = 0; i < P; i++) {
        put(T, tokens, targets, 2 * i, tokens[2 * i]);
        put(T, tokens, targets, 2 * i + 1,
            task_value_id(dc, (int)rng_below(rng, (uint64_t)dc->mqar_values)));
    }
    /* Q distinct pair indices (Floyd over [0, P)), shuffled; query keys at s[2P+2q]. */
    int base = 2 * P;
    for (int q = 0; q < Q; q++) {
        int j = P - Q + q;
        int t = (int)rng_below(rng, (uint64_t)j + 1);
        int seen = 0;
        for (int m = 0; m < q && !seen; m++) seen = tokens[base + 2 * m] == tokens[2 * t];
        tokens[base + 2 * q] = tokens[2 * (seen ? j : t)];
    }
    for (int q = Q - 1; q > 0; q--) {
        int j = (int)rng_below(rng, (uint64_t)q + 1);
        int tmp = tokens[base + 2 * q];
        tokens[base + 2 * q] = tokens[base + 2 * j];
        tokens[base + 2 * j] = tmp;
    }
    for (int t = 0; t < T; t++) mask[t] = 0.0f;
    for (int q = 0; q < Q; q++) {
        int key = tokens[base + 2 * q], value = -1;
        for (int i = 0; i < P && value < 0; i++)
            if (tokens[2 * i] == key) value = tokens[2 * i + 1];
        assert(value >= 0);
        put(T, tokens, targets, base + 2 * q, key);
        put(T, tokens, targets, base + 2 * q + 1, value);
        mask[base + 2 * q] = 1.0f;
    }
}

void task_sequence(const gl_data_config *dc, gl_rng *rng, int T, int *tokens, int *targets,
                   float *mask) {
    assert(dc->task == TASK_COPY || dc->task == TASK_SORT || dc->task == TASK_MQAR);
    int len = dc->task == TASK_MQAR ? 2 * dc->mqar_pairs + 2 * dc->mqar_queries
              : paper(dc)           ? 2 * dc->seq_items + 3
                                    : 2 * dc->seq_items + 1;
    int pad = task_pad_id(dc);
    if (dc->task == TASK_MQAR)
        mqar_sequence(dc, rng, T, tokens, targets, mask);
    else if (paper(dc))
        paper_sequence(dc, rng, T, tokens, targets, mask);
    else
        copy_sort_sequence(dc, rng, T, tokens, targets, mask);
    for (int j = len; j <= T; j++) put(T, tokens, targets, j, pad);
}

void task_eval_rng(gl_rng *r, uint64_t seed, int split, long i) {
    /* A domain constant keeps these seeds apart from rng_seed(train.seed),
     * which the training stream uses directly. */
    uint64_t h = rng_mix64(seed ^ 0x6a09e667f3bcc909ULL);
    h = rng_splitmix_at(h, (uint64_t)(split + 1));
    h = rng_mix64(h + (uint64_t)i);
    rng_seed(r, h);
}
