/*
 * sweepval.c — range(...) and choice(...) in sweep values (see sweepval.h).
 *
 * The syntax follows Hydra's basic sweeper (range(start, stop[, step]) with
 * the stop excluded, choice(a, b, c)), which many researchers already write.
 * What it does not do: interval() or other samplers (a grid sweep needs
 * finite lists), nesting, or checking items against a key (manifest.c does).
 * Numbers go through store/parse.c, the one number syntax of the project.
 */
#include "sweepval.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "parse.h"

/* If value is name(...) (spaces allowed around), copy the inside to in and return 1. */
static int sweepval_call(const char *value, const char *name, char *in, size_t n) {
    size_t k = strlen(name);
    while (*value == ' ' || *value == '\t') value++;
    if (strncmp(value, name, k)) return 0;
    const char *p = value + k;
    while (*p == ' ') p++;
    if (*p != '(') return 0;
    const char *close = strrchr(p, ')');
    if (!close || close[1 + strspn(close + 1, " \t\r\n")]) return 0;
    snprintf(in, n, "%.*s", (int)(close - p - 1), p + 1);
    return 1;
}

/* Trim spaces in place; returns s. */
static char *sweepval_trim(char *s) {
    while (*s == ' ' || *s == '\t') s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t')) s[--n] = '\0';
    return s;
}

/* 1 when s is an integer in the project's syntax. */
static int sweepval_is_int(const char *s) {
    long v;
    char why[64];
    return parse_long(s, -1000000000L, 1000000000L, &v, why, sizeof why) == 0;
}

/* -1 with why when an item of the comma list appears twice (seed=1,2,1 would
 * train one run twice and count it as two seeds). */
static int sweepval_unique(const char *list, char *why, size_t whylen) {
    for (const char *a = list; *a;) {
        size_t la = strcspn(a, ",");
        const char *ta = a + strspn(a, " \t");
        size_t na = la - (size_t)(ta - a);
        while (na && (ta[na - 1] == ' ' || ta[na - 1] == '\t')) na--;
        for (const char *b = a + la + (a[la] == ','); *b && na;) {
            size_t lb = strcspn(b, ",");
            const char *tb = b + strspn(b, " \t");
            size_t nb = lb - (size_t)(tb - b);
            while (nb && (tb[nb - 1] == ' ' || tb[nb - 1] == '\t')) nb--;
            if (nb == na && !memcmp(ta, tb, na)) {
                snprintf(why, whylen, "'%.*s' appears twice in '%.200s': list each value once", (int)na, ta, list);
                return -1;
            }
            b += lb + (b[lb] == ',');
        }
        a += la + (a[la] == ',');
    }
    return 0;
}

static int sweepval_range(const char *args, int max_items, char *out, size_t n, char *why, size_t whylen) {
    char buf[256], *part[4];
    int k = 0;
    double v[3] = {0, 0, 1};
    snprintf(buf, sizeof buf, "%s", args);
    for (char *p = buf; k < 4;) {
        char *comma = strchr(p, ',');
        if (comma) *comma = '\0';
        part[k++] = sweepval_trim(p);
        if (!comma) break;
        p = comma + 1;
    }
    if (k < 2 || k > 3) {
        snprintf(why, whylen, "range(%s): write range(start, stop) or range(start, stop, step)", args);
        return -1;
    }
    int ints = 1;
    for (int i = 0; i < k; i++) {
        char r[128];
        if (parse_double(part[i], -1e15, 1e15, &v[i], r, sizeof r)) {
            snprintf(why, whylen, "range(%s): '%s': %s", args, part[i], r);
            return -1;
        }
        ints &= sweepval_is_int(part[i]);
    }
    if (v[2] == 0) {
        snprintf(why, whylen, "range(%s): the step is 0", args);
        return -1;
    }
    size_t len = 0;
    out[0] = '\0';
    int count = 0;
    for (long i = 0;; i++) {
        double x = v[0] + (double)i * v[2];
        /* stop excluded; a tolerance of 1e-9 steps keeps 0.3 out of range(0, 0.3, 0.1) */
        if (v[2] > 0 ? x >= v[1] - 1e-9 * fabs(v[2]) : x <= v[1] + 1e-9 * fabs(v[2])) break;
        if (++count > max_items) {
            snprintf(why, whylen, "range(%s) has more than %d items", args, max_items);
            return -1;
        }
        int w = ints ? snprintf(out + len, n - len, "%s%ld", len ? ", " : "", (long)llround(x))
                     : snprintf(out + len, n - len, "%s%.10g", len ? ", " : "", fabs(x) < 1e-12 ? 0.0 : x);
        if (w < 0 || (size_t)w >= n - len) {
            snprintf(why, whylen, "range(%s): the list is too long", args);
            return -1;
        }
        len += (size_t)w;
    }
    if (!count) {
        snprintf(why, whylen, "range(%s) is empty (the stop is excluded; the step must go from start towards stop)",
                 args);
        return -1;
    }
    /* items closer than the 10 printed digits (or below 1e-12, printed 0) would be one value twice */
    char dup[256];
    if (sweepval_unique(out, dup, sizeof dup)) {
        snprintf(why, whylen, "range(%s): two items print as the same value (%s); use a larger step", args, dup);
        return -1;
    }
    return 0;
}

int sweepval_expand(const char *value, int max_items, char *out, size_t n, char *why, size_t whylen) {
    char in[1024];
    if (sweepval_call(value, "range", in, sizeof in)) return sweepval_range(in, max_items, out, n, why, whylen);
    if (sweepval_call(value, "choice", in, sizeof in)) value = in;
    if (strlen(value) >= n) {
        snprintf(why, whylen, "the list is longer than %zu characters", n - 1);
        return -1;
    }
    snprintf(out, n, "%s", value);
    if (strpbrk(out, "()")) {
        snprintf(why, whylen, "'%s': only range(start, stop[, step]) and choice(a, b, ...) are understood", value);
        return -1;
    }
    return sweepval_unique(out, why, whylen);
}
