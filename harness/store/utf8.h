/*
 * utf8.h — the UTF-8 character tokenizer of the text task (data.tokenizer =
 * utf8): a file decoded as UTF-8 into Unicode code points, each distinct code
 * point one token id, ids in ascending code-point order.  This is the TSA
 * paper's CharTokenizer (src/tsa/benchmarks/shakespeare.py: sorted(set(text))
 * over the text Python decoded) applied to enwik8 (benchmarks/enwik8.py:
 * bytes.decode("utf-8", errors="replace")).
 *
 * Decoding follows Python's "replace" error handler, which is Unicode's
 * "maximal subpart" practice (The Unicode Standard, ch. 3, U+FFFD
 * substitution): a byte that cannot start a character becomes one U+FFFD; a
 * started sequence that breaks off (a wrong continuation byte, or the end of
 * the input) becomes one U+FFFD for the bytes read so far, and decoding goes
 * on at the byte that broke it.  Well-formed sequences are those of Table 3-7
 * (no overlong forms, no surrogates, nothing above U+10FFFF).
 *
 * Where things live: the codec and the vocabulary here; reading files and
 * splitting in data.c; the vocabulary stored with a run in ckpt.c.  What it
 * does not do: normalise (NFC etc.) or read files.
 */
#ifndef GATELAB_HARNESS_UTF8_H
#define GATELAB_HARNESS_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* The most distinct characters a utf8 vocabulary holds (enwik8 has 6,064). */
#define UTF8_VOCAB_MAX 16384
#define UTF8_REPLACEMENT 0xFFFDu

/* The vocabulary: V code points, strictly ascending; id i is cp[i]. */
typedef struct {
    int V;
    uint32_t cp[UTF8_VOCAB_MAX];
} utf8_vocab;

/* Decode the next character of s[0, n) (n >= 1): its code point in *cp and
 * the bytes it took (>= 1), U+FFFD for an ill-formed part as above. */
size_t utf8_next(const uint8_t *s, size_t n, uint32_t *cp);

/* The UTF-8 bytes of code point cp (a Unicode scalar value) into out; returns
 * their number (1 to 4). */
int utf8_put(uint32_t cp, uint8_t out[4]);

/* The id of cp in v, or -1 when v lacks it (binary search). */
int utf8_vocab_id(const utf8_vocab *v, uint32_t cp);

/* Check v as untrusted input (a checkpoint's): 1 <= V <= UTF8_VOCAB_MAX, code
 * points strictly ascending, each a Unicode scalar value (not a surrogate,
 * at most U+10FFFF).  0, or -1 with what is wrong in why. */
int utf8_vocab_check(const utf8_vocab *v, char *why, size_t whylen);

#endif
