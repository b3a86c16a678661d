/*
 * jsonl.h — the JSON gatelab prints: one compact object per line, built with
 * jansson (Debian libjansson-dev).  <jansson.h> is included here and by the
 * cmd_*.c files that print JSON, nowhere outside harness/cli/.
 *
 * jansson escapes strings and writes integers as integers; what it leaves to
 * us is that json_real(NaN) and json_string(non-UTF-8) return NULL, which
 * json_object_set_new would then drop silently.  These helpers never return
 * NULL except when out of memory:
 *
 *   jsonl_num    a finite double as a number, NaN or ±infinity as null
 *   jsonl_int    an integer (json_int_t), never "4096.000000"
 *   jsonl_count  a count kept in a double (token counts): an integer, or null
 *   jsonl_str    a string, NULL as null; bytes that are not UTF-8 become U+FFFD
 *
 * Reals are written with JSONL_DIGITS significant digits (enough for a unix
 * time to 10 ms).  A line that names a run starts with the one shape used
 * everywhere, "run_id" (the registry's id) and "run_dir" (its folder):
 * jsonl_run.
 */
#ifndef GATELAB_HARNESS_CLI_JSONL_H
#define GATELAB_HARNESS_CLI_JSONL_H

#include <jansson.h>
#include <stdio.h>

#define JSONL_DIGITS 12

json_t *jsonl_num(double v);
json_t *jsonl_int(long long v);
json_t *jsonl_count(double v);
json_t *jsonl_str(const char *s);
/* jsonl_str of len bytes that may hold NUL (written as \u0000); s[len] must
 * be readable and NUL (the UTF-8 check reads up to it). */
json_t *jsonl_strn(const char *s, size_t len);
/* obj[key] = v (a new reference, taken); returns obj, so calls chain. */
json_t *jsonl_set(json_t *obj, const char *key, json_t *v);
/* A new object {"run_id": run_id, "run_dir": run_dir} (run_dir NULL: null). */
json_t *jsonl_run(const char *run_id, const char *run_dir);
/* Write v on one line of f (compact, keys in insertion order) and release it.
 * Returns 0, or -1 when v is NULL (out of memory) or the write failed. */
int jsonl_print(FILE *f, json_t *v);
/* v as compact text (malloc'd, the caller frees it), or NULL; v is kept. */
char *jsonl_dumps(const json_t *v);

/* The other machine-readable form (--format csv): t as one CSV field on
 * f (RFC 4180: quoted, with "" for ", when it holds a comma, quote or
 * line break; as it is otherwise; nothing for NULL). */
void jsonl_csv_field(FILE *f, const char *t);

#endif
