/*
 * parse.c — strict text-to-number conversion (contract in parse.h).
 *
 * strtol/strtod alone accept too much: leading spaces, "0x10", "nan", "inf",
 * "1e14" read by atol as 1, and an empty string read as 0.  Here the text is
 * first checked against the grammar in parse.h character by character; only
 * then is strto* asked for the value, and it must consume every character.
 * ERANGE from strto* is an error (overflow, and underflow of reals: "1e-400"
 * silently becoming 0 is not what anyone typed).
 *
 * Not here: what a flag means or its default (the cmd_* files), the
 * manifest's open/closed bounds (manifest.c).
 */
#include "parse.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* 1 when s is [+-]digits. */
static int parse_is_integer(const char *s) {
    if (*s == '+' || *s == '-') s++;
    if (!*s) return 0;
    for (; *s; s++)
        if (!isdigit((unsigned char)*s)) return 0;
    return 1;
}

/* 1 when s is [+-](digits[.digits*] | .digits)([eE][+-]digits)?. */
static int parse_is_real(const char *s) {
    if (*s == '+' || *s == '-') s++;
    int digits = 0;
    while (isdigit((unsigned char)*s)) s++, digits++;
    if (*s == '.') {
        s++;
        while (isdigit((unsigned char)*s)) s++, digits++;
    }
    if (!digits) return 0;
    if (*s == 'e' || *s == 'E') {
        s++;
        if (*s == '+' || *s == '-') s++;
        if (!isdigit((unsigned char)*s)) return 0;
        while (isdigit((unsigned char)*s)) s++;
    }
    return *s == '\0';
}

/* The reason a string is not a number at all. */
static void parse_not_number(const char *s, const char *kind, char *why, size_t whylen) {
    const char *t = (*s == '+' || *s == '-') ? s + 1 : s;
    if (!*s) snprintf(why, whylen, "empty, expected %s", kind);
    else if (!strcasecmp(t, "nan") || !strcasecmp(t, "inf") || !strcasecmp(t, "infinity"))
        snprintf(why, whylen, "not a finite number (NaN and infinity are not accepted), expected %s", kind);
    else if (isspace((unsigned char)s[0]) || isspace((unsigned char)s[strlen(s) - 1]))
        snprintf(why, whylen, "has spaces around it, expected %s", kind);
    else snprintf(why, whylen, "not %s", kind);
}

int parse_long(const char *s, long lo, long hi, long *out, char *why, size_t whylen) {
    if (!s || !parse_is_integer(s)) {
        parse_not_number(s ? s : "", parse_is_real(s ? s : "") ? "an integer (digits only, no exponent or point)"
                                                                : "an integer",
                         why, whylen);
        return -1;
    }
    errno = 0;
    char *end;
    long v = strtol(s, &end, 10);
    if (*end || errno == ERANGE || v < lo || v > hi) {
        snprintf(why, whylen, "must be between %ld and %ld", lo, hi);
        return -2;
    }
    *out = v;
    return 0;
}

int parse_int(const char *s, int lo, int hi, int *out, char *why, size_t whylen) {
    long v;
    int rc = parse_long(s, lo, hi, &v, why, whylen);
    if (rc) return rc;
    *out = (int)v;
    return 0;
}

int parse_u64(const char *s, uint64_t *out, char *why, size_t whylen) {
    if (!s || !parse_is_integer(s) || *s == '-' || *s == '+') {
        parse_not_number(s ? s : "", "a non-negative integer", why, whylen);
        return -1;
    }
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end || errno == ERANGE) {
        snprintf(why, whylen, "must be between 0 and %" PRIu64, UINT64_MAX);
        return -2;
    }
    *out = (uint64_t)v;
    return 0;
}

int parse_double(const char *s, double lo, double hi, double *out, char *why, size_t whylen) {
    if (!s || !parse_is_real(s)) {
        parse_not_number(s ? s : "", "a number", why, whylen);
        return -1;
    }
    errno = 0;
    char *end;
    double v = strtod(s, &end);
    if (*end || !isfinite(v)) {
        snprintf(why, whylen, "not a finite number");
        return -1;
    }
    if (errno == ERANGE) {
        snprintf(why, whylen, "%s the range of a double", fabs(v) < 1 ? "underflows" : "overflows");
        return -1;
    }
    if (!(v >= lo && v <= hi)) {
        snprintf(why, whylen, "must be between %g and %g", lo, hi);
        return -2;
    }
    *out = v;
    return 0;
}

int parse_float(const char *s, float *out, char *why, size_t whylen) {
    if (!s || !parse_is_real(s)) {
        parse_not_number(s ? s : "", "a number", why, whylen);
        return -1;
    }
    errno = 0;
    char *end;
    float v = strtof(s, &end); /* strtof, not (float)strtod: one rounding, as before */
    if (*end || !isfinite(v)) {
        snprintf(why, whylen, "not a finite number (a float reaches about %g)", (double)FLT_MAX);
        return -1;
    }
    if (errno == ERANGE) {
        snprintf(why, whylen, "underflows a float (the smallest normal float is about %g)", (double)FLT_MIN);
        return -1;
    }
    *out = v;
    return 0;
}
