/*
 * jsonl.c — JSON lines through jansson (contract in jsonl.h).
 *
 * The one decision made here besides jansson's is what a value jansson cannot
 * hold becomes: NaN and infinities are null (JSON has neither, and "-nan"
 * breaks every strict reader), and a string with bytes that are not UTF-8 (a
 * path, a byte-level vocabulary) keeps its valid characters and shows each bad
 * byte as U+FFFD, as Python's errors="replace" does.  Nothing here prints
 * anything but the JSON it is given.
 */
#include "jsonl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

json_t *jsonl_num(double v) { return isfinite(v) ? json_real(v) : json_null(); }

json_t *jsonl_int(long long v) { return json_integer((json_int_t)v); }

json_t *jsonl_count(double v) { return isfinite(v) ? json_integer((json_int_t)llround(v)) : json_null(); }

/* Length of the UTF-8 sequence at s (1-4), or 0 when it is not one (overlong,
 * surrogate, beyond U+10FFFF, cut short). */
static size_t jsonl_utf8_len(const unsigned char *s) {
    unsigned c = s[0];
    if (c < 0x80) return 1;
    size_t n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    for (size_t i = 1; i < n; i++)
        if ((s[i] & 0xc0) != 0x80) return 0;
    if (n == 3 && ((c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] > 0x9f))) return 0;
    if (n == 4 && ((c == 0xf0 && s[1] < 0x90) || (c == 0xf4 && s[1] > 0x8f))) return 0;
    return n;
}

json_t *jsonl_str(const char *s) { return s ? jsonl_strn(s, strlen(s)) : json_null(); }

json_t *jsonl_strn(const char *s, size_t len) {
    if (!s) return json_null();
    const unsigned char *u = (const unsigned char *)s;
    size_t bad = 0;
    for (size_t i = 0; i < len;) {
        size_t n = jsonl_utf8_len(u + i);
        bad += n == 0;
        i += n ? n : 1;
    }
    if (!bad) return json_stringn(s, len);
    char *t = malloc(len + 2 * bad + 1); /* each bad byte becomes the 3 bytes of U+FFFD */
    if (!t) return NULL;
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        size_t n = jsonl_utf8_len(u + i);
        if (n) {
            memcpy(t + o, s + i, n);
            o += n;
            i += n;
        } else {
            memcpy(t + o, "\xef\xbf\xbd", 3);
            o += 3;
            i++;
        }
    }
    json_t *v = json_stringn(t, o);
    free(t);
    return v;
}

json_t *jsonl_set(json_t *obj, const char *key, json_t *v) {
    if (obj && v) json_object_set_new(obj, key, v);
    else json_decref(v);
    return obj;
}

json_t *jsonl_run(const char *run_id, const char *run_dir) {
    json_t *o = json_object();
    jsonl_set(o, "run_id", jsonl_str(run_id));
    jsonl_set(o, "run_dir", jsonl_str(run_dir));
    return o;
}

char *jsonl_dumps(const json_t *v) {
    return v ? json_dumps(v, JSON_COMPACT | JSON_REAL_PRECISION(JSONL_DIGITS)) : NULL;
}

int jsonl_print(FILE *f, json_t *v) {
    char *s = jsonl_dumps(v);
    json_decref(v);
    if (!s) return -1;
    int rc = fputs(s, f) < 0 || fputc('\n', f) == EOF ? -1 : 0;
    free(s);
    fflush(f);
    return rc;
}

void jsonl_csv_field(FILE *f, const char *t) {
    if (!t) return;
    if (!strpbrk(t, ",\"\n\r")) {
        fputs(t, f);
        return;
    }
    putc('"', f);
    for (; *t; t++) {
        if (*t == '"') putc('"', f);
        putc(*t, f);
    }
    putc('"', f);
}
