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

static const char alnum[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
static const char letters[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
static const char valsyms[] = "0123456789!#$%&*+-/<=>?@^~";

int task_check(const gl_data_config *dc, int T, char *err, size_t errlen) {
    const char *name = task_name(dc->task);
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
        return dc->n_symbols + 2;
    case TASK_MQAR:
        return dc->mqar_keys + dc->mqar_values + 1;
    default:
        return 0;
    }
}

int task_sep_id(const gl_data_config *dc) {
    return (dc->task == TASK_COPY || dc->task == TASK_SORT) ? dc->n_symbols : -1;
}

int task_pad_id(const gl_data_config *dc) { return task_vocab_size(dc) - 1; }

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
                                    : 2 * dc->seq_items + 1;
    int pad = task_pad_id(dc);
    if (dc->task == TASK_MQAR)
        mqar_sequence(dc, rng, T, tokens, targets, mask);
    else
        copy_sort_sequence(dc, rng, T, tokens, targets, mask);
    for (int j = len; j <= T; j++) put(T, tokens, targets, j, pad);
}

void task_eval_rng(gl_rng *r, uint64_t seed, int split, long i) {
    /* A domain constant keeps these seeds apart from rng_seed(train.seed),
     * which the training stream uses directly. */
    uint64_t h = rng_mix64(seed ^ 0x6a09e667f3bcc909ULL);
    h = rng_mix64(h + 0x9e3779b97f4a7c15ULL * (uint64_t)(split + 1));
    h = rng_mix64(h + (uint64_t)i);
    rng_seed(r, h);
}
