/*
 * test_bpe.c — the byte-level BPE of harness/store/bpe.c and its use by the
 * data sets (data.tokenizer = bpe), the token categories and checkpoints.
 *
 * Checks: pre-tokenization chunks on crafted text; the incremental trainer
 * gives exactly the merges of a naive reference (recount every pair after
 * every merge, same tie rule) on the tests' own corpus and on text full of
 * overlapping repeats; training is deterministic; the vocabulary size asked
 * for is reached (and a size the text cannot reach is refused naming
 * data.vocab_size); encode → decode is the identity on the whole corpus, on
 * Tiny Shakespeare when present (skipped with the reason otherwise) and on
 * random bytes never seen in training; data_open trains on the training split
 * only (changing validation or test bytes leaves the merges unchanged,
 * changing a training byte does not); invalid merges are refused; tokens get
 * the documented categories in and out of context; a BPE checkpoint round
 * trips (version 3), a char one stays version 2, and a hand-made merge table
 * under a valid checksum is refused; the manifest keys default to char,
 * round-trip and refuse bad combinations naming the key.  Run from the
 * repository root (tests/run.sh does).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "corpus.h"
#include "tmpdir.h"

#include "model/model.h"
#include "store/bpe.h"
#include "store/categories.h"
#include "store/ckpt.h"
#include "store/data.h"
#include "store/manifest.h"

#define FW_LIST "experiments/function_words.txt"

static uint8_t *g_text; /* the tests' own corpus, CORPUS_BYTES of it */
static size_t g_n;
#define CORPUS_BYTES 131072

static void path_in(char *out, size_t n, const char *name) { snprintf(out, n, "%s/%s", g_dir, name); }

static uint8_t *read_all(const char *path, size_t *n) {
    *n = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc(len > 0 ? (size_t)len : 1);
    *n = b ? fread(b, 1, (size_t)len, f) : 0;
    fclose(f);
    return b;
}

static int write_all(const char *path, const uint8_t *b, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t w = fwrite(b, 1, n, f);
    return fclose(f) == 0 && w == n ? 0 : -1;
}

static int setup(void **state) {
    (void)state;
    if (tmpdir_make("bpe")) return -1;
    char p[512];
    path_in(p, sizeof p, "corpus.txt");
    if (corpus_write(p, CORPUS_BYTES, 1, FW_LIST)) return -1;
    g_text = read_all(p, &g_n);
    return g_text && g_n == CORPUS_BYTES ? 0 : -1;
}

static int teardown_all(void **state) {
    free(g_text);
    return teardown(state);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ------------------------------------------------------------ pre-tokenization */

static void test_chunks(void **state) {
    (void)state;
    static const struct {
        const char *text;
        const char *want; /* the chunks joined by '|' */
    } cases[] = {
        {"Hello, world\n", "Hello|,| world|\n"},
        {"  the king", " | the| king"},
        {"x123 y", "x|123| y"},
        {"don't stop", "don|'|t| stop"},
        {"KING HENRY:\n\nO,", "KING| HENRY|:\n\n|O|,"},
        {"a \xc3\xa9t\xc3\xa9 b", "a| \xc3\xa9t\xc3\xa9| b"},
        {" ", " "},
        {"  \n ", "  \n "},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const uint8_t *p = (const uint8_t *)cases[c].text;
        size_t n = strlen(cases[c].text);
        char got[128] = "";
        size_t k = 0;
        for (size_t i = 0; i < n;) {
            size_t len = bpe_chunk_len(p + i, n - i);
            assert_true(len >= 1 && len <= n - i);
            k += (size_t)snprintf(got + k, sizeof got - k, "%s%.*s", i ? "|" : "", (int)len, (const char *)p + i);
            i += len;
        }
        if (strcmp(got, cases[c].want)) print_message("chunks of \"%s\": got \"%s\", want \"%s\"\n", cases[c].text, got, cases[c].want);
        assert_string_equal(got, cases[c].want);
    }
    /* a run longer than 256 bytes is cut every 256 */
    uint8_t dots[600];
    memset(dots, '.', sizeof dots);
    assert_int_equal(bpe_chunk_len(dots, sizeof dots), 256);
    print_message("pre-tokenization: %zu crafted texts cut as documented; long runs cut at 256 bytes\n",
                  sizeof cases / sizeof cases[0]);
}

/* ------------------------------------------------------------ the naive reference */

/* Recount every pair of every chunk type after every merge; pick the most
 * frequent pair, ties to the smaller (left, right); stop below count 2. */
static int naive_train(const uint8_t *text, size_t n, int vocab_size, bpe_merges *out) {
    int cap = 1 << 16, nt = 0;
    int **sym = calloc((size_t)cap, sizeof *sym), *len = calloc((size_t)cap, sizeof *len);
    long *freq = calloc((size_t)cap, sizeof *freq);
    const uint8_t **first = calloc((size_t)cap, sizeof *first);
    assert_non_null(sym);
    for (size_t i = 0; i < n;) {
        size_t l = bpe_chunk_len(text + i, n - i);
        int w = 0;
        while (w < nt && !((size_t)len[w] == l && !memcmp(first[w], text + i, l))) w++;
        if (w == nt) {
            assert_true(nt < cap);
            first[w] = text + i;
            len[w] = (int)l;
            sym[w] = malloc(l * sizeof(int));
            for (size_t k = 0; k < l; k++) sym[w][k] = text[i + k];
            nt++;
        }
        freq[w]++;
        i += l;
    }
    const int V = vocab_size;
    long *cnt = malloc((size_t)V * V * sizeof *cnt);
    assert_non_null(cnt);
    out->n = 0;
    int rc = 0;
    while (BPE_BASE + out->n < V) {
        const int cur = BPE_BASE + out->n;
        memset(cnt, 0, (size_t)V * V * sizeof *cnt);
        for (int w = 0; w < nt; w++)
            for (int k = 0; k + 1 < len[w]; k++) cnt[(size_t)sym[w][k] * V + sym[w][k + 1]] += freq[w];
        long best = 1;
        int bl = -1, br = -1;
        for (int l = 0; l < cur; l++)
            for (int r = 0; r < cur; r++)
                if (cnt[(size_t)l * V + r] > best) best = cnt[(size_t)l * V + r], bl = l, br = r;
        if (bl < 0) {
            rc = -1;
            break;
        }
        out->pair[out->n][0] = (uint16_t)bl;
        out->pair[out->n][1] = (uint16_t)br;
        out->n++;
        for (int w = 0; w < nt; w++) {
            int o = 0;
            for (int k = 0; k < len[w];) {
                if (k + 1 < len[w] && sym[w][k] == bl && sym[w][k + 1] == br) sym[w][o++] = cur, k += 2;
                else sym[w][o++] = sym[w][k++];
            }
            len[w] = o;
        }
    }
    for (int w = 0; w < nt; w++) free(sym[w]);
    free(sym);
    free(len);
    free(freq);
    free(first);
    free(cnt);
    return rc;
}

static int first_difference(const bpe_merges *a, const bpe_merges *b) {
    int n = a->n < b->n ? a->n : b->n;
    for (int k = 0; k < n; k++)
        if (a->pair[k][0] != b->pair[k][0] || a->pair[k][1] != b->pair[k][1]) return k;
    return a->n == b->n ? -1 : n;
}

static void test_matches_naive(void **state) {
    (void)state;
    static bpe_merges fast, slow;
    char err[512] = "";
    /* the corpus (first 32 KB: the naive recount is O(V^2) per merge) */
    const size_t n = 32768;
    const int V = 420;
    assert_int_equal(bpe_train(g_text, n, V, &fast, err, sizeof err), 0);
    assert_int_equal(naive_train(g_text, n, V, &slow), 0);
    int d = first_difference(&fast, &slow);
    print_message("incremental vs naive on %zu corpus bytes: %d and %d merges, first difference at %d (-1 = none)\n",
                  n, fast.n, slow.n, d);
    assert_int_equal(d, -1);
    /* overlapping repeats ("aaaa", "abab") and ties everywhere */
    static const char odd[] = "aaaa aaa aa a aaaaa abab ababab ba ba bab aaaa abab, aaaa; abab aaaa\n\n\naaa abab ";
    uint8_t buf[4096];
    size_t m = 0;
    while (m + sizeof odd - 1 < sizeof buf) memcpy(buf + m, odd, sizeof odd - 1), m += sizeof odd - 1;
    int Vo = 256 + 12;
    assert_int_equal(naive_train(buf, m, Vo, &slow), 0);
    assert_int_equal(bpe_train(buf, m, Vo, &fast, err, sizeof err), 0);
    d = first_difference(&fast, &slow);
    print_message("incremental vs naive on overlapping repeats: %d merges, first difference at %d\n", fast.n, d);
    assert_int_equal(d, -1);
}

/* ------------------------------------------------------------ training, encoding */

static void test_deterministic_and_size(void **state) {
    (void)state;
    static bpe_merges a, b;
    char err[512] = "";
    uint8_t *copy = malloc(g_n);
    assert_non_null(copy);
    memcpy(copy, g_text, g_n);
    const int sizes[] = {257, 300, 512, 1024};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        double t0 = now_s();
        assert_int_equal(bpe_train(g_text, g_n, sizes[i], &a, err, sizeof err), 0);
        double t = now_s() - t0;
        assert_int_equal(bpe_train(copy, g_n, sizes[i], &b, err, sizeof err), 0);
        assert_int_equal(a.n, sizes[i] - BPE_BASE);
        assert_true(bpe_merges_equal(&a, &b));
        bpe_tok tk;
        assert_int_equal(bpe_build(&tk, &a, err, sizeof err), 0);
        assert_int_equal(tk.V, sizes[i]);
        bpe_free(&tk);
        print_message("vocab_size %d reached (%d merges), twice the same, %.3f s on %zu bytes\n", sizes[i], a.n, t, g_n);
    }
    free(copy);
    /* a size the text cannot reach, and sizes out of range, name the key */
    static const char small[] = "ab ab ab cd";
    assert_int_equal(bpe_train((const uint8_t *)small, sizeof small - 1, 300, &a, err, sizeof err), -1);
    print_message("too few pairs: %s\n", err);
    assert_non_null(strstr(err, "data.vocab_size"));
    assert_true(a.n > 0 && a.n < 44);
    assert_int_equal(bpe_train(g_text, g_n, 256, &a, err, sizeof err), -1);
    assert_non_null(strstr(err, "data.vocab_size"));
    assert_int_equal(bpe_train(g_text, g_n, BPE_VOCAB_MAX + 1, &a, err, sizeof err), -1);
    assert_non_null(strstr(err, "data.vocab_size"));
}

/* encode → decode of text[0..n) with tk: 1 if the bytes come back exactly */
static int round_trip(const bpe_tok *tk, const uint8_t *text, size_t n, size_t *n_ids) {
    uint16_t *ids = malloc((n ? n : 1) * sizeof *ids);
    int *ii = malloc((n ? n : 1) * sizeof *ii);
    uint8_t *back = malloc(n ? n : 1);
    assert_true(ids && ii && back);
    size_t k = bpe_encode(tk, text, n, ids);
    for (size_t i = 0; i < k; i++) ii[i] = ids[i];
    size_t got = bpe_decode(tk, ii, k, back, n);
    int ok = got == n && !memcmp(back, text, n);
    for (size_t i = 0; i < k; i++) ok &= ids[i] < tk->V;
    *n_ids = k;
    free(ids);
    free(ii);
    free(back);
    return ok;
}

static void test_round_trip(void **state) {
    (void)state;
    static bpe_merges m;
    char err[512] = "";
    bpe_tok tk;
    assert_int_equal(bpe_train(g_text, g_n * 9 / 10, 1024, &m, err, sizeof err), 0);
    assert_int_equal(bpe_build(&tk, &m, err, sizeof err), 0);
    size_t k;
    assert_true(round_trip(&tk, g_text, g_n, &k));
    print_message("corpus: %zu bytes -> %zu tokens -> the same bytes (%.2f bytes/token)\n", g_n, k, (double)g_n / k);
    assert_true(k < g_n / 2); /* the merges do compress the text */
    /* bytes never seen in training (every byte value, NULs included) */
    uint8_t rnd[8192];
    uint64_t s = 42;
    for (size_t i = 0; i < sizeof rnd; i++) rnd[i] = (uint8_t)(corpus_next(&s) >> 56);
    assert_true(round_trip(&tk, rnd, sizeof rnd, &k));
    print_message("random bytes: %zu -> %zu tokens -> the same bytes\n", sizeof rnd, k);
    /* an id outside the vocabulary is reported */
    int bad[2] = {65, tk.V};
    uint8_t out[8];
    assert_true(bpe_decode(&tk, bad, 2, out, sizeof out) == (size_t)-1);
    bpe_free(&tk);

    /* Tiny Shakespeare, whole, at 4096 */
    char path[1024], why[2048];
    if (data_find("tinyshakespeare.txt", path, sizeof path, why, sizeof why)) {
        printf("SKIP tinyshakespeare round trip: %s\n", why);
        fflush(stdout);
        return;
    }
    size_t n;
    uint8_t *ts = read_all(path, &n);
    assert_non_null(ts);
    static bpe_merges mt;
    double t0 = now_s();
    assert_int_equal(bpe_train(ts, n * 9 / 10, 4096, &mt, err, sizeof err), 0);
    double t1 = now_s();
    assert_int_equal(bpe_build(&tk, &mt, err, sizeof err), 0);
    assert_true(round_trip(&tk, ts, n, &k));
    double t2 = now_s();
    print_message("Tiny Shakespeare: merges to 4096 in %.2f s; %zu bytes -> %zu tokens -> the same bytes (%.2f s)\n",
                  t1 - t0, n, k, t2 - t1);
    bpe_free(&tk);
    free(ts);
}

static void test_build_rejects(void **state) {
    (void)state;
    static bpe_merges m;
    char err[512] = "";
    bpe_tok tk;
    memset(&m, 0, sizeof m);
    m.n = 2;
    m.pair[0][0] = 'a', m.pair[0][1] = 'b';
    m.pair[1][0] = 257, m.pair[1][1] = 'c'; /* 257 is this merge's own id */
    assert_int_equal(bpe_build(&tk, &m, err, sizeof err), -1);
    print_message("forward reference: %s\n", err);
    assert_null(tk.bytes);
    m.pair[1][0] = 'a', m.pair[1][1] = 'b';
    assert_int_equal(bpe_build(&tk, &m, err, sizeof err), -1);
    print_message("repeated pair: %s\n", err);
    m.n = BPE_MERGES_MAX + 1;
    assert_int_equal(bpe_build(&tk, &m, err, sizeof err), -1);
    /* doubling a token past a chunk's length */
    m.n = 10;
    m.pair[0][0] = 'a', m.pair[0][1] = 'a';
    for (int k = 1; k < 10; k++) m.pair[k][0] = m.pair[k][1] = (uint16_t)(256 + k - 1);
    assert_int_equal(bpe_build(&tk, &m, err, sizeof err), -1);
    print_message("oversized token: %s\n", err);
    bpe_free(&tk); /* harmless on an empty tokenizer */
}

/* ------------------------------------------------------------ data sets */

static void bpe_config(gl_data_config *dc, const char *path, int V) {
    memset(dc, 0, sizeof *dc);
    dc->task = TASK_TEXT;
    snprintf(dc->file, sizeof dc->file, "%s", path);
    dc->train_frac = 0.8f;
    dc->val_frac = 0.1f;
    dc->tokenizer = TOK_BPE;
    dc->vocab_size = V;
}

static void test_train_split_only(void **state) {
    (void)state;
    char p[512], q[512], err[1024] = "";
    path_in(p, sizeof p, "split.txt");
    path_in(q, sizeof q, "split2.txt");
    assert_int_equal(write_all(p, g_text, g_n), 0);
    gl_data_config dc;
    bpe_config(&dc, p, 600);
    gl_dataset a, b;
    int rc = data_open(&a, &dc, 32, 1, err, sizeof err);
    if (rc) print_message("data_open: %s\n", err);
    assert_int_equal(rc, 0);
    assert_int_equal(data_vocab_size(&a), 600);
    assert_int_equal(a.split_bytes[0], (size_t)(g_n * 8 / 10));
    /* every split decodes to its own bytes */
    size_t byte0 = 0;
    for (int s = 0; s < 3; s++) {
        size_t nb = 0;
        int ok = 1;
        for (size_t i = 0; i < a.split_len[s]; i++) {
            size_t len;
            const uint8_t *t = data_token(&a, a.tok[a.split_start[s] + i], &len);
            ok &= byte0 + nb + len <= g_n && !memcmp(t, g_text + byte0 + nb, len);
            nb += len;
        }
        print_message("split %s: %zu bytes as %zu tokens decode back: %s\n", data_split_name((gl_split)s),
                      a.split_bytes[s], a.split_len[s], ok && nb == a.split_bytes[s] ? "yes" : "NO");
        assert_true(ok && nb == a.split_bytes[s]);
        byte0 += nb;
    }
    /* the merges are those of the training bytes alone */
    static bpe_merges direct;
    assert_int_equal(bpe_train(g_text, a.split_bytes[0], 600, &direct, err, sizeof err), 0);
    assert_true(bpe_merges_equal(&direct, a.merges));
    /* validation and test bytes replaced: the same merges */
    uint8_t *t2 = malloc(g_n);
    assert_non_null(t2);
    memcpy(t2, g_text, g_n);
    for (size_t i = a.split_bytes[0]; i < g_n; i++) t2[i] = (uint8_t)("zq xj, ZQ!\n"[i % 11]);
    assert_int_equal(write_all(q, t2, g_n), 0);
    bpe_config(&dc, q, 600);
    assert_int_equal(data_open(&b, &dc, 32, 1, err, sizeof err), 0);
    int same_val = bpe_merges_equal(a.merges, b.merges);
    data_close(&b);
    /* one training byte changed: different merges (the check can fail) */
    memcpy(t2, g_text, g_n);
    for (size_t i = 0; i < 2000; i++) t2[i] = (uint8_t)("zq xj, ZQ!\n"[i % 11]);
    assert_int_equal(write_all(q, t2, g_n), 0);
    assert_int_equal(data_open(&b, &dc, 32, 1, err, sizeof err), 0);
    int same_train = bpe_merges_equal(a.merges, b.merges);
    print_message("val/test bytes replaced: merges %s; train bytes changed: merges %s\n",
                  same_val ? "unchanged" : "CHANGED", same_train ? "UNCHANGED" : "changed");
    assert_true(same_val);
    assert_false(same_train);
    /* given merges are used as they are (a resumed run never retrains) */
    data_close(&b);
    assert_int_equal(data_open_tok(&b, &dc, 32, 1, a.merges, err, sizeof err), 0);
    assert_true(bpe_merges_equal(a.merges, b.merges));
    /* training windows: ids below V, targets the next token */
    gl_rng r;
    rng_seed(&r, 5);
    int tok[4 * 32], tg[4 * 32];
    float mk[4 * 32];
    data_train_batch(&a, &r, 4, tok, tg, mk);
    int ok = 1;
    for (int i = 0; i < 4 * 32; i++) ok &= tok[i] >= 0 && tok[i] < 600 && tg[i] >= 0 && tg[i] < 600;
    for (int i = 0; i + 1 < 32; i++) ok &= tg[i] == tok[i + 1];
    assert_true(ok);
    data_close(&a);
    data_close(&b);
    free(t2);
    /* a split too short in tokens names the key */
    bpe_config(&dc, p, 600);
    dc.val_frac = 0.0001f;
    assert_int_equal(data_open(&a, &dc, 32, 1, err, sizeof err), -1);
    print_message("short split: %s\n", err);
    assert_non_null(strstr(err, "BPE tokens"));
}

/* ------------------------------------------------------------ categories */

static void test_categories(void **state) {
    (void)state;
    cat_words fw;
    char err[512] = "";
    assert_int_equal(cat_load_function_words(FW_LIST, &fw, err, sizeof err), 0);
    static const struct {
        const char *tok;
        int want;
    } own[] = {
        {" the", CAT_FUNCTIONAL}, {"The", CAT_FUNCTIONAL}, {" of", CAT_FUNCTIONAL}, {"\nand", CAT_FUNCTIONAL},
        {" theme", CAT_SEMANTIC}, {" th", CAT_SEMANTIC},    {"ing", CAT_SEMANTIC},   {" king", CAT_SEMANTIC},
        {",\n", CAT_STRUCTURAL},  {"123", CAT_STRUCTURAL},  {" ", CAT_STRUCTURAL},   {"'", CAT_STRUCTURAL},
        {":\n\n", CAT_STRUCTURAL},
    };
    for (size_t i = 0; i < sizeof own / sizeof own[0]; i++) {
        int c = cat_token_class((const uint8_t *)own[i].tok, strlen(own[i].tok), &fw);
        if (c != own[i].want) print_message("token \"%s\": %s, want %s\n", own[i].tok, cat_name(c), cat_name(own[i].want));
        assert_int_equal(c, own[i].want);
    }
    /* in context: a token takes the class of the word it is part of (" the" of " theme" is semantic) */
    static const char *const toks[] = {" the", "me", " the", " king", ",", " don", "'", "t", " ", "go"};
    static const int want[] = {CAT_SEMANTIC,   CAT_SEMANTIC,   CAT_FUNCTIONAL, CAT_SEMANTIC,   CAT_STRUCTURAL,
                               CAT_FUNCTIONAL, CAT_FUNCTIONAL, CAT_FUNCTIONAL, CAT_STRUCTURAL, CAT_SEMANTIC};
    const size_t n = sizeof toks / sizeof toks[0];
    uint8_t bytes[128], scratch[128], out[16];
    size_t start[16], at = 0;
    for (size_t i = 0; i < n; i++) {
        start[i] = at;
        memcpy(bytes + at, toks[i], strlen(toks[i]));
        at += strlen(toks[i]);
    }
    start[n] = at;
    cat_classify_tokens(bytes, start, n, &fw, scratch, out);
    for (size_t i = 0; i < n; i++) {
        if (out[i] != want[i]) print_message("token %zu \"%s\" in context: %s, want %s\n", i, toks[i], cat_name(out[i]), cat_name(want[i]));
        assert_int_equal(out[i], want[i]);
    }
    /* one-byte tokens: exactly cat_classify */
    static const char line[] = "KING HENRY: the night, and don't 12 swords!";
    const size_t L = sizeof line - 1;
    uint8_t by[64], sc[64], o1[64];
    size_t st1[65];
    for (size_t i = 0; i <= L; i++) st1[i] = i;
    cat_classify((const uint8_t *)line, L, &fw, by);
    cat_classify_tokens((const uint8_t *)line, st1, L, &fw, sc, o1);
    assert_memory_equal(by, o1, L);
    print_message("%zu tokens on their own, %zu in context and %zu one-byte tokens classified as documented\n",
                  sizeof own / sizeof own[0], n, L);
    cat_words_free(&fw);
}

/* ------------------------------------------------------------ checkpoints */

static uint64_t fnv(const uint8_t *p, size_t n) {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ULL;
    return h;
}

static void test_checkpoint(void **state) {
    (void)state;
    char path[512], err[1024] = "";
    path_in(path, sizeof path, "ckpt");
    static gl_train_state st, back;
    memset(&st, 0, sizeof st);
    assert_int_equal(bpe_train(g_text, g_n, 300, &st.bpe, err, sizeof err), 0);
    st.tokenizer = TOK_BPE;
    st.vocab_size = 300;
    for (int i = 0; i < 256; i++) st.vocab[i] = (uint8_t)i;
    st.step = 7;
    gl_model_config c;
    config_defaults(&c);
    c.vocab_size = 300, c.d_model = 16, c.n_layer = 1, c.n_head = 2, c.n_kv_head = 1, c.d_ff = 32, c.seq_len = 8;
    gl_model m;
    assert_int_equal(model_init(&m, &c, 1, err, sizeof err), 0);
    model_init_weights(&m, 3);
    assert_int_equal(ckpt_save(path, &m, &st, "[data]\ntokenizer = bpe\n", 9, err, sizeof err), 0);
    memset(&back, 0, sizeof back);
    assert_int_equal(ckpt_load(path, &m, &back, 9, err, sizeof err), 0);
    assert_int_equal(back.tokenizer, TOK_BPE);
    assert_true(bpe_merges_equal(&back.bpe, &st.bpe));
    assert_int_equal(back.vocab_size, 300);
    memset(&back, 0, sizeof back);
    assert_int_equal(ckpt_read_state(path, &back, err, sizeof err), 0);
    assert_true(bpe_merges_equal(&back.bpe, &st.bpe));
    size_t n;
    uint8_t *b = read_all(path, &n);
    assert_non_null(b);
    uint32_t version;
    memcpy(&version, b + 8, 4);
    assert_int_equal(version, CKPT_VERSION_BPE);
    /* a merge table made to refer forward, under a recomputed checksum: refused */
    const size_t merges_at = 56 + (size_t)m.n_tensors * (GL_NAME_MAX + 32) + 380;
    uint16_t fwd = 299;
    memcpy(b + merges_at, &fwd, 2); /* merge 0 joining id 299 */
    uint64_t h = fnv(b, n - 8);
    memcpy(b + n - 8, &h, 8);
    char bad[512];
    path_in(bad, sizeof bad, "ckpt.bad");
    assert_int_equal(write_all(bad, b, n), 0);
    assert_int_equal(ckpt_load(bad, &m, &back, 0, err, sizeof err), -1);
    print_message("hand-made merges: %s\n", err);
    assert_non_null(strstr(err, "tokenizer"));
    free(b);
    /* a char state still writes version 2 */
    static gl_train_state ch;
    memset(&ch, 0, sizeof ch);
    gl_model_config c2 = c;
    c2.vocab_size = 40;
    gl_model m2;
    assert_int_equal(model_init(&m2, &c2, 1, err, sizeof err), 0);
    model_init_weights(&m2, 3);
    ch.vocab_size = 40;
    for (int i = 0; i < 40; i++) ch.vocab[i] = (uint8_t)(' ' + i);
    assert_int_equal(ckpt_save(path, &m2, &ch, NULL, 9, err, sizeof err), 0);
    b = read_all(path, &n);
    memcpy(&version, b + 8, 4);
    assert_int_equal(version, CKPT_VERSION);
    memset(&back, 0, sizeof back);
    assert_int_equal(ckpt_load(path, &m2, &back, 9, err, sizeof err), 0);
    assert_int_equal(back.tokenizer, TOK_CHAR);
    assert_int_equal(back.bpe.n, 0);
    print_message("BPE checkpoint (version %d) round-trips its %d merges; char checkpoints stay version %d\n",
                  CKPT_VERSION_BPE, st.bpe.n, CKPT_VERSION);
    free(b);
    model_free(&m);
    model_free(&m2);
}

/* ------------------------------------------------------------ manifest keys */

static void test_manifest_keys(void **state) {
    (void)state;
    static gl_manifest mf;
    char err[1024] = "";
    assert_int_equal(manifest_load_text(&mf, "[data]\n", "t", err, sizeof err), 0);
    assert_int_equal(mf.data.tokenizer, TOK_CHAR);
    assert_int_equal(mf.data.vocab_size, 0);
    assert_int_equal(manifest_load_text(&mf, "[data]\ntokenizer = bpe\nvocab_size = 1024\n", "t", err, sizeof err), 0);
    assert_int_equal(mf.data.tokenizer, TOK_BPE);
    assert_int_equal(mf.data.vocab_size, 1024);
    char *ini = manifest_to_ini(&mf);
    assert_non_null(ini);
    assert_non_null(strstr(ini, "tokenizer = bpe\nvocab_size = 1024\n"));
    static gl_manifest again;
    assert_int_equal(manifest_load_text(&again, ini, "t", err, sizeof err), 0);
    assert_int_equal(again.data.tokenizer, TOK_BPE);
    assert_int_equal(again.data.vocab_size, 1024);
    free(ini);
    static const struct {
        const char *text, *want;
    } bad[] = {
        {"[data]\ntokenizer = bpe\n", "data.vocab_size = 0 with data.tokenizer = bpe"},
        {"[data]\ntokenizer = bpe\nvocab_size = 256\n", "data.vocab_size = 256"},
        {"[data]\nvocab_size = 512\n", "applies to data.tokenizer = bpe"},
        {"[data]\ntokenizer = bpe\nvocab_size = 8193\n", "vocab_size"},
        {"[data]\ntokenizer = sentencepiece\n", "tokenizer"},
        {"[data]\ntask = copy\ntokenizer = bpe\nvocab_size = 300\n", "applies to data.task = text"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(manifest_load_text(&mf, bad[i].text, "t", err, sizeof err), -1);
        if (!strstr(err, bad[i].want)) print_message("\"%s\": %s\n", bad[i].text, err);
        assert_non_null(strstr(err, bad[i].want));
    }
    print_message("data.tokenizer / data.vocab_size: defaults, round trip, %zu refusals naming the key\n",
                  sizeof bad / sizeof bad[0]);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chunks),
        cmocka_unit_test(test_matches_naive),
        cmocka_unit_test(test_deterministic_and_size),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_build_rejects),
        cmocka_unit_test(test_train_split_only),
        cmocka_unit_test(test_categories),
        cmocka_unit_test(test_checkpoint),
        cmocka_unit_test(test_manifest_keys),
    };
    return cmocka_run_group_tests(tests, setup, teardown_all);
}
