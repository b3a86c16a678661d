/*
 * bpe.c — byte-level BPE: pre-tokenization, merge training, encoding and
 * decoding (conventions, tie rule and pre-tokenization in bpe.h).
 *
 * Training follows Sennrich, Haddow & Birch, "Neural machine translation of
 * rare words with subword units" (ACL 2016), on bytes as GPT-2 does
 * (Radford et al. 2019), with a simpler pre-tokenization than GPT-2's regex.
 * The implementation is the usual incremental one (as in HuggingFace
 * tokenizers' BpeTrainer): the distinct chunks ("types") with their counts,
 * a pair table holding each pair's count and the types it occurs in, and a
 * lazy max-heap of (count, pair) entries — an entry whose count is no longer
 * the pair's count is dropped when it reaches the top.  A merge recounts only
 * the types that hold the merged pair.
 *
 * What it does not do: Unicode-aware pre-tokenization, special tokens,
 * dropout, or byte-to-unicode remapping (ids are bytes, the trace stores the
 * raw bytes of every token).  Chunks longer than BPE_CHUNK_MAX bytes are cut
 * every BPE_CHUNK_MAX bytes, which bounds a token's length and the quadratic
 * per-chunk encoder.
 */
#include "bpe.h"
#include "model/rng.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BPE_CHUNK_MAX 256

static int bpe_letter(uint8_t c) { return ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') || c >= 0x80; }

size_t bpe_chunk_len(const uint8_t *p, size_t n) {
    assert(n >= 1);
    size_t lim = n < BPE_CHUNK_MAX ? n : BPE_CHUNK_MAX, i = 0;
    if (p[0] == ' ' && lim > 1 && bpe_letter(p[1])) i = 1; /* the space that starts a word */
    if (bpe_letter(p[i])) {
        while (i < lim && bpe_letter(p[i])) i++;
        return i;
    }
    /* non-letters, up to a letter or to a space that starts the next word */
    while (i < lim && !bpe_letter(p[i])) {
        if (i > 0 && p[i] == ' ' && i + 1 < n && bpe_letter(p[i + 1])) break;
        i++;
    }
    return i;
}


static uint32_t bpe_key(int l, int r) { return ((uint32_t)l << 16) | (uint32_t)r; }

/* ------------------------------------------------------------- training */

typedef struct {
    /* chunk types */
    int n_types, cap_types;
    const uint8_t **tbytes; /* first occurrence in the text */
    int32_t *tlen;          /* chunk bytes */
    int64_t *freq;
    int32_t *soff, *slen;   /* symbols of type w: sym[soff[w] .. soff[w] + slen[w]) */
    int32_t *sym;
    int32_t *wstamp;        /* last merge (1-based) that recounted type w */
    /* chunk hash: slot -> type + 1 (0 empty) */
    int32_t *chash;
    size_t ccap;
    /* pairs */
    int n_pairs, cap_pairs;
    uint32_t *pkey;
    int64_t *pcnt;
    int32_t **pwhere, *pwn, *pwcap; /* types the pair occurs in (a superset: may hold stale types) */
    int32_t *pstamp;                /* last merge (1-based) that touched the pair */
    int32_t *phash;                 /* slot -> pair + 1 (0 empty) */
    size_t pcap;
    /* heap of (count, key) */
    struct bpe_he { int64_t cnt; uint32_t key; int32_t pair; } *heap;
    size_t hn, hcap;
    int32_t *touched;
    int n_touched, cap_touched;
    int oom;
} bpe_trainer;

static void *bpe_grow(void *p, int *cap, int need, size_t elem, int *oom) {
    if (need <= *cap) return p;
    int nc = *cap ? *cap : 64;
    while (nc < need) nc *= 2;
    void *q = realloc(p, (size_t)nc * elem);
    if (!q) {
        *oom = 1;
        return p;
    }
    *cap = nc;
    return q;
}

static uint64_t bpe_hash_bytes(const uint8_t *p, size_t n) {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ULL;
    return rng_mix64(h);
}

/* Index of the chunk type of p[0..n), added with count 0 when new; -1 on OOM. */
static int bt_type(bpe_trainer *b, const uint8_t *p, size_t n) {
    if ((size_t)(b->n_types + 1) * 2 > b->ccap) {
        size_t nc = b->ccap ? b->ccap * 2 : 1024;
        int32_t *nh = calloc(nc, sizeof *nh);
        if (!nh) return b->oom = 1, -1;
        for (int w = 0; w < b->n_types; w++) {
            size_t s = bpe_hash_bytes(b->tbytes[w], (size_t)b->tlen[w]) & (nc - 1);
            while (nh[s]) s = (s + 1) & (nc - 1);
            nh[s] = w + 1;
        }
        free(b->chash);
        b->chash = nh;
        b->ccap = nc;
    }
    size_t s = bpe_hash_bytes(p, n) & (b->ccap - 1);
    while (b->chash[s]) {
        int w = b->chash[s] - 1;
        if ((size_t)b->tlen[w] == n && !memcmp(b->tbytes[w], p, n)) return w;
        s = (s + 1) & (b->ccap - 1);
    }
    int w = b->n_types, cap = b->cap_types;
    b->tbytes = bpe_grow(b->tbytes, &cap, w + 1, sizeof *b->tbytes, &b->oom);
    cap = b->cap_types;
    b->tlen = bpe_grow(b->tlen, &cap, w + 1, sizeof *b->tlen, &b->oom);
    cap = b->cap_types;
    b->freq = bpe_grow(b->freq, &cap, w + 1, sizeof *b->freq, &b->oom);
    if (b->oom) return -1;
    b->cap_types = cap;
    b->tbytes[w] = p;
    b->tlen[w] = (int32_t)n;
    b->freq[w] = 0;
    b->chash[s] = w + 1;
    b->n_types++;
    return w;
}

/* Index of pair (l, r), inserted with count 0 when new; -1 on OOM. */
static int bt_pair(bpe_trainer *b, int l, int r) {
    uint32_t key = bpe_key(l, r);
    if ((size_t)(b->n_pairs + 1) * 2 > b->pcap) {
        size_t nc = b->pcap ? b->pcap * 2 : 4096;
        int32_t *nh = calloc(nc, sizeof *nh);
        if (!nh) return b->oom = 1, -1;
        for (int i = 0; i < b->n_pairs; i++) {
            size_t s = rng_mix64(b->pkey[i]) & (nc - 1);
            while (nh[s]) s = (s + 1) & (nc - 1);
            nh[s] = i + 1;
        }
        free(b->phash);
        b->phash = nh;
        b->pcap = nc;
    }
    size_t s = rng_mix64(key) & (b->pcap - 1);
    while (b->phash[s]) {
        int i = b->phash[s] - 1;
        if (b->pkey[i] == key) return i;
        s = (s + 1) & (b->pcap - 1);
    }
    int i = b->n_pairs, need = i + 1;
#define BT_GROW(arr)                                                                                               \
    do {                                                                                                           \
        int c_ = b->cap_pairs;                                                                                     \
        b->arr = bpe_grow(b->arr, &c_, need, sizeof *b->arr, &b->oom);                                             \
    } while (0)
    BT_GROW(pkey);
    BT_GROW(pcnt);
    BT_GROW(pwhere);
    BT_GROW(pwn);
    BT_GROW(pwcap);
    BT_GROW(pstamp);
#undef BT_GROW
    if (b->oom) return -1;
    if (need > b->cap_pairs) {
        int c = b->cap_pairs ? b->cap_pairs : 64;
        while (c < need) c *= 2;
        b->cap_pairs = c;
    }
    b->pkey[i] = key;
    b->pcnt[i] = 0;
    b->pwhere[i] = NULL;
    b->pwn[i] = b->pwcap[i] = 0;
    b->pstamp[i] = 0;
    b->phash[s] = i + 1;
    b->n_pairs++;
    return i;
}

static void bt_where_add(bpe_trainer *b, int p, int w) {
    if (b->pwn[p] > 0 && b->pwhere[p][b->pwn[p] - 1] == w) return;
    int cap = b->pwcap[p];
    b->pwhere[p] = bpe_grow(b->pwhere[p], &cap, b->pwn[p] + 1, sizeof **b->pwhere, &b->oom);
    if (b->oom) return;
    b->pwcap[p] = cap;
    b->pwhere[p][b->pwn[p]++] = w;
}

/* Heap order: larger count first, then smaller key (left id, then right id). */
static int bt_above(const struct bpe_he *a, const struct bpe_he *c) {
    return a->cnt != c->cnt ? a->cnt > c->cnt : a->key < c->key;
}

static void bt_push(bpe_trainer *b, int p) {
    if (b->hn == b->hcap) {
        size_t nc = b->hcap ? b->hcap * 2 : 4096;
        void *q = realloc(b->heap, nc * sizeof *b->heap);
        if (!q) {
            b->oom = 1;
            return;
        }
        b->heap = q;
        b->hcap = nc;
    }
    struct bpe_he e = {b->pcnt[p], b->pkey[p], p};
    size_t i = b->hn++;
    while (i > 0 && bt_above(&e, &b->heap[(i - 1) / 2])) {
        b->heap[i] = b->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    b->heap[i] = e;
}

static struct bpe_he bt_pop(bpe_trainer *b) {
    struct bpe_he top = b->heap[0], last = b->heap[--b->hn];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= b->hn) break;
        if (c + 1 < b->hn && bt_above(&b->heap[c + 1], &b->heap[c])) c++;
        if (!bt_above(&b->heap[c], &last)) break;
        b->heap[i] = b->heap[c];
        i = c;
    }
    if (b->hn > 0) b->heap[i] = last;
    return top;
}

static void bt_touch(bpe_trainer *b, int p, int stamp) {
    if (b->pstamp[p] == stamp) return;
    b->pstamp[p] = stamp;
    int cap = b->cap_touched;
    b->touched = bpe_grow(b->touched, &cap, b->n_touched + 1, sizeof *b->touched, &b->oom);
    if (b->oom) return;
    b->cap_touched = cap;
    b->touched[b->n_touched++] = p;
}

static void bt_free(bpe_trainer *b) {
    for (int i = 0; i < b->n_pairs; i++) free(b->pwhere[i]);
    free(b->tbytes);
    free(b->tlen);
    free(b->freq);
    free(b->soff);
    free(b->slen);
    free(b->sym);
    free(b->wstamp);
    free(b->chash);
    free(b->pkey);
    free(b->pcnt);
    free(b->pwhere);
    free(b->pwn);
    free(b->pwcap);
    free(b->pstamp);
    free(b->phash);
    free(b->heap);
    free(b->touched);
}

/* Add (sign +1) or remove (-1) the pairs of type w from the counts; when
 * adding, record w in the where-list of pairs that hold new_id. */
static void bt_count_type(bpe_trainer *b, int w, int sign, int new_id, int stamp) {
    const int32_t *s = b->sym + b->soff[w];
    for (int i = 0; i + 1 < b->slen[w] && !b->oom; i++) {
        int p = bt_pair(b, s[i], s[i + 1]);
        if (p < 0) return;
        b->pcnt[p] += sign * b->freq[w];
        if (stamp) bt_touch(b, p, stamp);
        if (sign > 0 && (new_id < 0 || s[i] == new_id || s[i + 1] == new_id)) bt_where_add(b, p, w);
    }
}

int bpe_train(const uint8_t *text, size_t n, int vocab_size, bpe_merges *out, char *err, size_t errlen) {
    bpe_trainer b;
    memset(&b, 0, sizeof b);
    int rc = -1;
    out->n = 0;
    if (vocab_size < BPE_VOCAB_MIN || vocab_size > BPE_VOCAB_MAX) {
        snprintf(err, errlen, "data.vocab_size = %d: a byte-level BPE needs %d to %d (256 bytes plus at least one merge)",
                 vocab_size, BPE_VOCAB_MIN, BPE_VOCAB_MAX);
        return -1;
    }
    /* chunk types and counts */
    long total_syms = 0;
    for (size_t i = 0; i < n && !b.oom;) {
        size_t len = bpe_chunk_len(text + i, n - i);
        int w = bt_type(&b, text + i, len);
        if (w < 0) break;
        b.freq[w]++;
        i += len;
    }
    if (b.oom) goto oom;
    for (int w = 0; w < b.n_types; w++) total_syms += b.tlen[w];
    b.soff = malloc(((size_t)b.n_types + 1) * sizeof *b.soff);
    b.slen = malloc(((size_t)b.n_types + 1) * sizeof *b.slen);
    b.wstamp = calloc((size_t)b.n_types + 1, sizeof *b.wstamp);
    b.sym = malloc(((size_t)total_syms + 1) * sizeof *b.sym);
    if (!b.soff || !b.slen || !b.wstamp || !b.sym) goto oom;
    for (int w = 0, at = 0; w < b.n_types; w++) {
        b.soff[w] = at;
        b.slen[w] = b.tlen[w];
        for (int k = 0; k < b.tlen[w]; k++) b.sym[at + k] = b.tbytes[w][k];
        at += b.tlen[w];
    }
    for (int w = 0; w < b.n_types && !b.oom; w++) bt_count_type(&b, w, +1, -1, 0);
    for (int p = 0; p < b.n_pairs && !b.oom; p++)
        if (b.pcnt[p] > 0) bt_push(&b, p);
    if (b.oom) goto oom;

    const int want = vocab_size - BPE_BASE;
    while (out->n < want) {
        int p = -1;
        while (b.hn > 0) {
            struct bpe_he e = bt_pop(&b);
            if (e.cnt == b.pcnt[e.pair] && e.cnt > 0) {
                p = e.pair;
                break;
            }
        }
        if (p < 0 || b.pcnt[p] < 2) {
            snprintf(err, errlen,
                     "data.vocab_size = %d: the training split (%zu bytes) has only %d pairs occurring twice or more "
                     "to merge (vocabulary %d); lower data.vocab_size to at most %d or use a longer file",
                     vocab_size, n, out->n, BPE_BASE + out->n, BPE_BASE + out->n);
            goto cleanup;
        }
        const int l = (int)(b.pkey[p] >> 16), r = (int)(b.pkey[p] & 0xffff), z = BPE_BASE + out->n;
        const int stamp = out->n + 1;
        out->pair[out->n][0] = (uint16_t)l;
        out->pair[out->n][1] = (uint16_t)r;
        out->n++;
        /* pwhere[p] does not grow below (new pairs hold z, p does not), but
         * the arrays may move as pairs are added: index afresh each time */
        for (int j = 0; j < b.pwn[p] && !b.oom; j++) {
            int w = b.pwhere[p][j];
            if (b.wstamp[w] == stamp) continue;
            b.wstamp[w] = stamp;
            int32_t *s = b.sym + b.soff[w];
            int has = 0;
            for (int i = 0; i + 1 < b.slen[w] && !has; i++) has = s[i] == l && s[i + 1] == r;
            if (!has) continue; /* stale: an earlier merge took the pair out of this type */
            bt_count_type(&b, w, -1, z, stamp);
            int o = 0;
            for (int i = 0; i < b.slen[w];) {
                if (i + 1 < b.slen[w] && s[i] == l && s[i + 1] == r) s[o++] = z, i += 2;
                else s[o++] = s[i++];
            }
            b.slen[w] = o;
            bt_count_type(&b, w, +1, z, stamp);
        }
        if (b.oom) goto oom;
        assert(b.pcnt[p] == 0);
        for (int t = 0; t < b.n_touched && !b.oom; t++)
            if (b.pcnt[b.touched[t]] > 0) bt_push(&b, b.touched[t]);
        b.n_touched = 0;
        if (b.oom) goto oom;
    }
    rc = 0;
    goto cleanup;
oom:
    snprintf(err, errlen, "data.tokenizer = bpe: out of memory training on %zu bytes", n);
cleanup:
    bt_free(&b);
    return rc;
}

/* ------------------------------------------------------------- the tokenizer */

void bpe_free(bpe_tok *t) {
    if (!t) return;
    free(t->bytes);
    free(t->off);
    free(t->rank_key);
    free(t->rank_val);
    memset(t, 0, sizeof *t);
}

static int bpe_rank(const bpe_tok *t, int l, int r) {
    uint32_t key = bpe_key(l, r) + 1;
    size_t s = rng_mix64(key) & (t->cap - 1);
    while (t->rank_key[s]) {
        if (t->rank_key[s] == key) return t->rank_val[s];
        s = (s + 1) & (t->cap - 1);
    }
    return -1;
}

int bpe_build(bpe_tok *t, const bpe_merges *m, char *err, size_t errlen) {
    memset(t, 0, sizeof *t);
    if (m->n < 0 || m->n > BPE_MERGES_MAX) {
        snprintf(err, errlen, "BPE tokenizer: %d merges, outside 0..%d", m->n, BPE_MERGES_MAX);
        return -1;
    }
    const int V = BPE_BASE + m->n;
    t->V = V;
    t->off = malloc(((size_t)V + 1) * sizeof *t->off);
    t->cap = 1;
    while (t->cap < 2 * (size_t)(m->n + 1)) t->cap *= 2;
    t->rank_key = calloc(t->cap, sizeof *t->rank_key);
    t->rank_val = calloc(t->cap, sizeof *t->rank_val);
    if (!t->off || !t->rank_key || !t->rank_val) goto oom;
    t->off[0] = 0;
    for (int i = 0; i < BPE_BASE; i++) t->off[i + 1] = i + 1;
    for (int k = 0; k < m->n; k++) {
        int l = m->pair[k][0], r = m->pair[k][1], id = BPE_BASE + k;
        if (l >= id || r >= id) {
            snprintf(err, errlen, "BPE tokenizer: merge %d joins ids %d and %d, not both earlier than its own id %d", k,
                     l, r, id);
            goto fail;
        }
        int32_t len = (t->off[l + 1] - t->off[l]) + (t->off[r + 1] - t->off[r]);
        if (len > BPE_CHUNK_MAX) {
            snprintf(err, errlen, "BPE tokenizer: merge %d makes a token of %d bytes, longer than a chunk (%d)", k,
                     (int)len, BPE_CHUNK_MAX);
            goto fail;
        }
        t->off[id + 1] = t->off[id] + len;
        uint32_t key = bpe_key(l, r) + 1;
        size_t s = rng_mix64(key) & (t->cap - 1);
        while (t->rank_key[s] && t->rank_key[s] != key) s = (s + 1) & (t->cap - 1);
        if (t->rank_key[s]) {
            snprintf(err, errlen, "BPE tokenizer: merge %d repeats the pair (%d, %d) of merge %d", k, l, r,
                     (int)t->rank_val[s]);
            goto fail;
        }
        t->rank_key[s] = key;
        t->rank_val[s] = k;
    }
    t->bytes = malloc((size_t)t->off[V] + 1);
    if (!t->bytes) goto oom;
    for (int i = 0; i < BPE_BASE; i++) t->bytes[i] = (uint8_t)i;
    for (int k = 0; k < m->n; k++) {
        int l = m->pair[k][0], r = m->pair[k][1], id = BPE_BASE + k;
        size_t ll = (size_t)(t->off[l + 1] - t->off[l]);
        memcpy(t->bytes + t->off[id], t->bytes + t->off[l], ll);
        memcpy(t->bytes + t->off[id] + ll, t->bytes + t->off[r], (size_t)(t->off[r + 1] - t->off[r]));
    }
    return 0;
oom:
    snprintf(err, errlen, "BPE tokenizer: out of memory building %d tokens", V);
fail:
    bpe_free(t);
    return -1;
}

size_t bpe_encode(const bpe_tok *t, const uint8_t *text, size_t n, uint16_t *ids) {
    int s[BPE_CHUNK_MAX];
    size_t out = 0;
    for (size_t i = 0; i < n;) {
        size_t len = bpe_chunk_len(text + i, n - i);
        int m = (int)len;
        for (int k = 0; k < m; k++) s[k] = text[i + k];
        for (;;) {
            int best = -1, bl = 0, br = 0;
            for (int k = 0; k + 1 < m; k++) {
                int r = bpe_rank(t, s[k], s[k + 1]);
                if (r >= 0 && (best < 0 || r < best)) best = r, bl = s[k], br = s[k + 1];
            }
            if (best < 0) break;
            int o = 0;
            for (int k = 0; k < m;) {
                if (k + 1 < m && s[k] == bl && s[k + 1] == br) s[o++] = BPE_BASE + best, k += 2;
                else s[o++] = s[k++];
            }
            m = o;
        }
        for (int k = 0; k < m; k++) ids[out++] = (uint16_t)s[k];
        i += len;
    }
    return out;
}

const uint8_t *bpe_token(const bpe_tok *t, int id, size_t *len) {
    assert(id >= 0 && id < t->V);
    *len = (size_t)(t->off[id + 1] - t->off[id]);
    return t->bytes + t->off[id];
}

size_t bpe_decode(const bpe_tok *t, const int *ids, size_t n, uint8_t *out, size_t cap) {
    size_t at = 0;
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= t->V) {
            bad = 1;
            continue;
        }
        size_t len;
        const uint8_t *p = bpe_token(t, ids[i], &len);
        for (size_t k = 0; k < len; k++, at++)
            if (at < cap) out[at] = p[k];
    }
    return bad ? (size_t)-1 : at;
}

int bpe_merges_equal(const bpe_merges *a, const bpe_merges *b) {
    return a->n == b->n && !memcmp(a->pair, b->pair, (size_t)a->n * sizeof a->pair[0]);
}
