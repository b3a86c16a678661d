/*
 * utf8.c — UTF-8 decoding with U+FFFD substitution (Python's "replace"),
 * encoding, and the code-point vocabulary of data.tokenizer = utf8.  See
 * utf8.h for the rules and the paper code they follow.
 */
#include "utf8.h"

#include <stdio.h>

size_t utf8_next(const uint8_t *s, size_t n, uint32_t *cp) {
    const uint8_t b = s[0];
    if (b < 0x80) {
        *cp = b;
        return 1;
    }
    /* Table 3-7: the bytes that follow a lead byte, and the range of the first of them */
    int need;
    uint8_t lo = 0x80, hi = 0xBF;
    uint32_t v;
    if (b >= 0xC2 && b <= 0xDF) need = 1, v = b & 0x1F;
    else if (b == 0xE0) need = 2, lo = 0xA0, v = b & 0x0F;
    else if ((b >= 0xE1 && b <= 0xEC) || b == 0xEE || b == 0xEF) need = 2, v = b & 0x0F;
    else if (b == 0xED) need = 2, hi = 0x9F, v = b & 0x0F;
    else if (b == 0xF0) need = 3, lo = 0x90, v = b & 0x07;
    else if (b >= 0xF1 && b <= 0xF3) need = 3, v = b & 0x07;
    else if (b == 0xF4) need = 3, hi = 0x8F, v = b & 0x07;
    else { /* 80..C1, F5..FF start nothing */
        *cp = UTF8_REPLACEMENT;
        return 1;
    }
    size_t i = 1;
    for (int k = 0; k < need; k++, i++) {
        if (i >= n || s[i] < lo || s[i] > hi) { /* broke off: one U+FFFD for what was read */
            *cp = UTF8_REPLACEMENT;
            return i;
        }
        v = (v << 6) | (s[i] & 0x3F);
        lo = 0x80, hi = 0xBF;
    }
    *cp = v;
    return i;
}

int utf8_put(uint32_t cp, uint8_t out[4]) {
    if (cp < 0x80) {
        out[0] = (uint8_t)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (uint8_t)(0xC0 | (cp >> 6));
        out[1] = (uint8_t)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (uint8_t)(0xE0 | (cp >> 12));
        out[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (uint8_t)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (uint8_t)(0xF0 | (cp >> 18));
    out[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (uint8_t)(0x80 | (cp & 0x3F));
    return 4;
}

int utf8_vocab_id(const utf8_vocab *v, uint32_t cp) {
    int lo = 0, hi = v->V - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        if (v->cp[mid] == cp) return mid;
        if (v->cp[mid] < cp) lo = mid + 1;
        else hi = mid - 1;
    }
    return -1;
}

int utf8_vocab_check(const utf8_vocab *v, char *why, size_t whylen) {
    if (v->V < 1 || v->V > UTF8_VOCAB_MAX) {
        snprintf(why, whylen, "a UTF-8 vocabulary of %d characters (1 to %d)", v->V, UTF8_VOCAB_MAX);
        return -1;
    }
    for (int i = 0; i < v->V; i++) {
        const uint32_t c = v->cp[i];
        if (c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) {
            snprintf(why, whylen, "character %d of the UTF-8 vocabulary is U+%04X, not a Unicode scalar value", i,
                     (unsigned)c);
            return -1;
        }
        if (i > 0 && c <= v->cp[i - 1]) {
            snprintf(why, whylen, "the UTF-8 vocabulary is not strictly ascending at character %d (U+%04X after "
                     "U+%04X)", i, (unsigned)c, (unsigned)v->cp[i - 1]);
            return -1;
        }
    }
    return 0;
}
