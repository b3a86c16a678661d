/*
 * bpe.h — a byte-level byte-pair encoding (BPE) tokenizer for the text task
 * (data.tokenizer = bpe, data.vocab_size = V).
 *
 * Vocabulary: ids 0..255 are the 256 bytes (every byte, present in the
 * corpus or not, so any text can be encoded); id 256 + k is merge k, the
 * concatenation of the two tokens of merges.pair[k].  V = 256 + merges.n.
 *
 * Pre-tokenization (merges never cross a chunk boundary): the text is cut at
 * every boundary between a letter and a non-letter, where a letter is an
 * ASCII letter or any byte >= 0x80 (the word bytes of categories.h, without
 * its inner-apostrophe rule); one space directly before a letter belongs to
 * the letter's chunk (" the", GPT-2 style).  So a chunk is " "? + letters, or
 * a run of non-letters (spaces, newlines, punctuation, digits) with any space
 * that starts the next word left out.  A token therefore holds the letters of
 * at most one word, or no letter at all.
 *
 * Training (bpe_train): the classic algorithm of Sennrich et al. 2016 on the
 * chunk types with their counts: count adjacent pairs, merge the most
 * frequent, repeat until V is reached.  Pair counts are kept incrementally
 * (only the chunk types holding the merged pair are recounted) with a lazy
 * max-heap.  Ties: the most frequent pair wins; among equal counts the pair
 * with the smaller left id, then the smaller right id.  A pair must occur at
 * least twice to be merged.  The result depends only on the bytes given.
 *
 * Encoding (bpe_encode): per chunk, repeatedly merge the adjacent pair of the
 * lowest merge rank (all its occurrences, left to right) until no adjacent
 * pair is a merge — the same result training gave the training text.
 * Decoding concatenates the tokens' bytes: an exact round trip of any input.
 * Where things live: the algorithm in bpe.c; training it on the train split
 * and encoding the splits in data.c; its merges in the checkpoint (ckpt.c).
 */
#ifndef GATELAB_HARNESS_BPE_H
#define GATELAB_HARNESS_BPE_H

#include <stddef.h>
#include <stdint.h>

#define BPE_BASE 256        /* ids 0..255: the bytes */
#define BPE_VOCAB_MIN 257   /* data.vocab_size: at least one merge */
#define BPE_VOCAB_MAX 8192  /* data.vocab_size: ids fit a uint16 and the merge table stays small */
#define BPE_MERGES_MAX (BPE_VOCAB_MAX - BPE_BASE)

/* The learned merges: all a tokenizer is (stored in checkpoints and traces). */
typedef struct {
    int n;                                /* merges; V = BPE_BASE + n */
    uint16_t pair[BPE_MERGES_MAX][2];     /* merge k joins (left, right) into id BPE_BASE + k */
} bpe_merges;

/* A tokenizer built from merges: token bytes and the rank lookup. */
typedef struct {
    int V;
    uint8_t *bytes;      /* (off[V]) the bytes of every token, concatenated */
    int32_t *off;        /* (V+1) token id's bytes are bytes[off[id] .. off[id+1]) */
    uint32_t *rank_key;  /* (cap) open-addressing table: key (left << 16 | right) + 1, 0 = empty */
    int32_t *rank_val;   /* (cap) the merge rank of the key */
    size_t cap;          /* power of two */
} bpe_tok;

/* Length of the first pre-tokenization chunk of p[0..n) (n >= 1; result >= 1). */
size_t bpe_chunk_len(const uint8_t *p, size_t n);

/* Learn vocab_size - 256 merges from text[0..n) (pass the training split
 * only).  Returns 0 with out filled, or -1 with a message naming
 * data.vocab_size when it is out of range or the text has too few repeated
 * pairs to reach it (out->n is then how many merges it supported), or on
 * running out of memory. */
int bpe_train(const uint8_t *text, size_t n, int vocab_size, bpe_merges *out, char *err, size_t errlen);

/* Build t from m, checking m as untrusted input (every pair refers to
 * earlier ids, no pair twice, n in range).  Returns 0, or -1 with a message
 * (t is then empty).  The caller frees t with bpe_free. */
int bpe_build(bpe_tok *t, const bpe_merges *m, char *err, size_t errlen);
void bpe_free(bpe_tok *t); /* accepts a zeroed or half-built t */

/* Encode text[0..n) into ids (capacity n: never more ids than bytes).
 * Returns the number of ids.  No allocation. */
size_t bpe_encode(const bpe_tok *t, const uint8_t *text, size_t n, uint16_t *ids);

/* The bytes of token id (0 <= id < V): *len bytes at the returned pointer. */
const uint8_t *bpe_token(const bpe_tok *t, int id, size_t *len);

/* Concatenate the bytes of ids[0..n) into out (capacity cap).  Returns the
 * number of bytes the whole decode needs (writes at most cap); an id outside
 * [0, V) decodes to nothing and makes the result (size_t)-1. */
size_t bpe_decode(const bpe_tok *t, const int *ids, size_t n, uint8_t *out, size_t cap);

/* 1 when a and b hold the same merges. */
int bpe_merges_equal(const bpe_merges *a, const bpe_merges *b);

#endif
