/*
 * categories.c — classify the bytes of a text as structural, functional or
 * semantic (see categories.h for the rules), and load the function-word list.
 *
 * Tokens of several bytes (BPE) take the class of their first non-space
 * byte in context (cat_classify_tokens), or, on their own, the class of
 * cat_token_class; for a char-level run a byte position is a token position.
 *
 * What it does not do: tokenise for the model (data.c and bpe.c do), stem, or handle Unicode
 * case — non-ASCII words are semantic by rule.  The three classes follow the
 * token classes suggested in ../shared/data/README.md; the word list is
 * experiments/function_words.txt (Snowball's English stop list plus modals
 * and archaic pronouns, see its header).
 */
#include "categories.h"
#include "fileio.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cat_is_ascii_letter(uint8_t c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

/* A letter of a word: ASCII letter or any byte of a UTF-8 multibyte sequence. */
static int cat_is_letter(uint8_t c) { return cat_is_ascii_letter(c) || c >= 0x80; }

static char cat_lower(char c) { return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c; }

static int cat_cmp(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

const char *cat_name(int code) {
    switch (code) {
    case CAT_STRUCTURAL: return "structural";
    case CAT_FUNCTIONAL: return "functional";
    case CAT_SEMANTIC: return "semantic";
    default: return "unknown";
    }
}

const char *cat_codes_description(void) { return "0=structural,1=functional,2=semantic"; }

void cat_words_free(cat_words *fw) {
    if (!fw) return;
    free(fw->words);
    free(fw->buf);
    fw->words = NULL;
    fw->buf = NULL;
    fw->n = 0;
}

int cat_load_function_words(const char *path, cat_words *fw, char *err, size_t errlen) {
    int rc = -1;
    size_t len = 0;
    memset(fw, 0, sizeof *fw);
    char *text = fileio_slurp(path, "function-word list", 0, &len, err, errlen);
    if (!text) goto cleanup;

    /* Words are no longer than the file, and there are at most len/2+1 of them. */
    fw->buf = malloc(len + 1);
    fw->words = malloc((len / 2 + 1) * sizeof *fw->words);
    if (!fw->buf || !fw->words) {
        snprintf(err, errlen, "%s: out of memory loading the function-word list", path);
        goto cleanup;
    }
    char *out = fw->buf;
    int line = 0;
    for (char *p = text; *p;) {
        char *eol = strchr(p, '\n');
        if (!eol) eol = p + strlen(p);
        line++;
        char *hash = memchr(p, '#', (size_t)(eol - p));
        char *end = hash ? hash : eol;
        while (p < end && (*p == ' ' || *p == '\t' || *p == '\r')) p++;
        while (end > p && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r')) end--;
        size_t wl = (size_t)(end - p);
        if (wl > 0) {
            if (wl > CAT_WORD_MAX) {
                snprintf(err, errlen, "%s:%d: word longer than %d bytes; shorten it or remove it",
                         path, line, CAT_WORD_MAX);
                goto cleanup;
            }
            for (size_t i = 0; i < wl; i++) {
                uint8_t c = (uint8_t)p[i];
                int ok = cat_is_ascii_letter(c) ||
                         (c == '\'' && i > 0 && i + 1 < wl && cat_is_ascii_letter((uint8_t)p[i - 1]) &&
                          cat_is_ascii_letter((uint8_t)p[i + 1]));
                if (!ok) {
                    snprintf(err, errlen,
                             "%s:%d: '%.*s' is not one word of ASCII letters (apostrophes only "
                             "between letters); one word per line, '#' for comments",
                             path, line, (int)wl, p);
                    goto cleanup;
                }
                out[i] = cat_lower(p[i]);
            }
            out[wl] = '\0';
            fw->words[fw->n++] = out;
            out += wl + 1;
        }
        p = *eol ? eol + 1 : eol;
    }
    qsort(fw->words, fw->n, sizeof *fw->words, cat_cmp);
    for (size_t i = 1; i < fw->n; i++) {
        if (!strcmp(fw->words[i - 1], fw->words[i])) {
            snprintf(err, errlen, "%s: '%s' is listed twice; remove the duplicate", path, fw->words[i]);
            goto cleanup;
        }
    }
    if (fw->n == 0) {
        snprintf(err, errlen, "%s: no words found (one word per line expected)", path);
        goto cleanup;
    }
    rc = 0;
cleanup:
    free(text);
    if (rc != 0) cat_words_free(fw);
    return rc;
}

int cat_is_function_word(const cat_words *fw, const char *word, size_t len) {
    if (!fw || fw->n == 0 || len == 0 || len > CAT_WORD_MAX) return 0;
    char key[CAT_WORD_MAX + 1];
    for (size_t i = 0; i < len; i++) key[i] = cat_lower(word[i]);
    key[len] = '\0';
    const char *kp = key;
    return bsearch(&kp, fw->words, fw->n, sizeof *fw->words, cat_cmp) != NULL;
}

void cat_classify(const uint8_t *bytes, size_t n, const cat_words *fw, uint8_t *out) {
    size_t i = 0;
    while (i < n) {
        if (!cat_is_letter(bytes[i])) {
            out[i++] = CAT_STRUCTURAL;
            continue;
        }
        /* Extend the word over letters and over apostrophes between letters. */
        size_t j = i + 1;
        while (j < n) {
            if (cat_is_letter(bytes[j])) {
                j++;
            } else if (bytes[j] == '\'' && j + 1 < n && cat_is_letter(bytes[j + 1])) {
                j += 2;
            } else {
                break;
            }
        }
        uint8_t c = cat_is_function_word(fw, (const char *)bytes + i, j - i) ? CAT_FUNCTIONAL : CAT_SEMANTIC;
        memset(out + i, c, j - i);
        i = j;
    }
}

void cat_classify_tokens(const uint8_t *bytes, const size_t *start, size_t n, const cat_words *fw,
                         uint8_t *scratch, uint8_t *out) {
    cat_classify(bytes, start[n], fw, scratch);
    for (size_t i = 0; i < n; i++) {
        size_t b = start[i];
        while (b < start[i + 1] && bytes[b] == ' ') b++;
        out[i] = b < start[i + 1] ? scratch[b] : CAT_STRUCTURAL;
    }
}

int cat_token_class(const uint8_t *tok, size_t len, const cat_words *fw) {
    size_t b = 0;
    while (b < len && (tok[b] == ' ' || tok[b] == '\t' || tok[b] == '\n' || tok[b] == '\r')) b++;
    int letters = 0;
    for (size_t i = b; i < len; i++) letters |= cat_is_letter(tok[i]);
    if (!letters) return CAT_STRUCTURAL;
    return cat_is_function_word(fw, (const char *)tok + b, len - b) ? CAT_FUNCTIONAL : CAT_SEMANTIC;
}
