/*
 * categories.h — structural / functional / semantic classes of the bytes of a
 * text, for the probe batch of a trace and the token-category analyses.
 *
 * A byte position is
 *   CAT_STRUCTURAL (0)  whitespace, punctuation, digits, markup (<>[]{}|=&;'),
 *                       control bytes — anything outside a word;
 *   CAT_FUNCTIONAL (1)  a byte of a word whose lowercased form is in the
 *                       function-word list (experiments/function_words.txt);
 *   CAT_SEMANTIC   (2)  a byte of any other word.
 * A word is a maximal run of letters, where a letter is an ASCII letter or any
 * byte >= 0x80 (UTF-8 non-ASCII text), and an apostrophe with a letter on both
 * sides belongs to the word ("don't" is one word; the '' of wiki markup is not).
 * A word containing non-ASCII bytes can never match the ASCII list, so it is
 * semantic.
 * Where things live: the classifier in categories.c; the probe batch's codes
 * in the trace (trace.c); the per-category analyses in analysis/.
 */
#ifndef GATELAB_HARNESS_CATEGORIES_H
#define GATELAB_HARNESS_CATEGORIES_H

#include <stddef.h>
#include <stdint.h>

enum { CAT_STRUCTURAL = 0, CAT_FUNCTIONAL = 1, CAT_SEMANTIC = 2, CAT_COUNT = 3 };

/* Longest word the list may hold (bytes); longer text words are semantic. */
#define CAT_WORD_MAX 31

typedef struct {
    char **words; /* [n] sorted (strcmp), lowercase ASCII letters and apostrophes */
    size_t n;
    char *buf;    /* storage of the words */
} cat_words;

/* Load a function-word list: one word per line; '#' starts a comment (whole
 * line or after the word); blank lines are skipped; words are lowercased.
 * A word with characters other than ASCII letters and inner apostrophes, a
 * word longer than CAT_WORD_MAX or a duplicate is an error naming path:line.
 * Returns 0, or -1 with a message in err (fw is then empty).  The caller
 * frees a loaded list with cat_words_free. */
int cat_load_function_words(const char *path, cat_words *fw, char *err, size_t errlen);
void cat_words_free(cat_words *fw); /* accepts an empty or half-built list */

/* 1 if the len bytes at word, lowercased, are in the list. */
int cat_is_function_word(const cat_words *fw, const char *word, size_t len);

/* Classify every byte of bytes[0..n) into out[0..n) (CAT_* codes).  A word cut
 * by either end of the span is classified from the part inside it; classify a
 * wider span and take the middle when the context matters. */
void cat_classify(const uint8_t *bytes, size_t n, const cat_words *fw, uint8_t *out);

/* Tokens of several bytes (BPE, bpe.h): the text is bytes[0 .. start[n]),
 * token i is bytes[start[i] .. start[i+1]).  Token i takes the class that
 * cat_classify gives its first byte that is not a space in that text, so a
 * token takes the class of the word it belongs to ("the" inside "there" is
 * semantic, a piece "'t" of "don't" takes the class of "don't"); a token of
 * spaces only is structural.  For one-byte tokens this is cat_classify.
 * scratch holds start[n] bytes (the class of every byte). */
void cat_classify_tokens(const uint8_t *bytes, const size_t *start, size_t n, const cat_words *fw,
                         uint8_t *scratch, uint8_t *out);

/* The class of one token on its own, without context (stored per vocabulary
 * entry in trace.h5 /vocab/category): structural when it holds no letter
 * (whitespace, punctuation, digits only); functional when, stripped of its
 * leading whitespace and lowercased, it is a word of the list; semantic
 * otherwise (a word piece such as "ing" or " th" included). */
int cat_token_class(const uint8_t *tok, size_t len, const cat_words *fw);

/* "structural", "functional", "semantic" (or "unknown"). */
const char *cat_name(int code);

/* The codes as one line, stored with /probe/category in trace.h5:
 * "0=structural,1=functional,2=semantic". */
const char *cat_codes_description(void);

#endif
