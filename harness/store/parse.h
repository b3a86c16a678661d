/*
 * parse.h — strict conversion of text to numbers, for every command-line flag
 * and manifest value.  One place decides what a number is:
 *
 *   integers  an optional sign and decimal digits, nothing else: no spaces,
 *             no "0x", no "1e3", no trailing junk; outside [lo, hi] is an error
 *   reals     an optional sign, digits with an optional point, an optional
 *             exponent ("3e-3", "-.5", "1E+2"); never NaN, infinity, hex
 *             floats or a value that overflows or underflows the type
 *
 * Each function returns 0 and stores the value; or leaves *out as it was,
 * writes a short reason into why and returns -1 when the text is not a number
 * of that kind ("not an integer") or -2 when it is one but out of range
 * ("must be between 1 and 64").  The caller names the flag or key around the
 * reason.
 * Where things live: the conversions in parse.c; the flags' tables in
 * harness/cli/ and the manifest's keys in manifest.c call them.
 */
#ifndef GATELAB_HARNESS_PARSE_H
#define GATELAB_HARNESS_PARSE_H

#include <stddef.h>
#include <stdint.h>

int parse_long(const char *s, long lo, long hi, long *out, char *why, size_t whylen);
int parse_int(const char *s, int lo, int hi, int *out, char *why, size_t whylen);
int parse_u64(const char *s, uint64_t *out, char *why, size_t whylen);
/* A finite double in [lo, hi]. */
int parse_double(const char *s, double lo, double hi, double *out, char *why, size_t whylen);
/* A finite float (no range: the manifest checks its own open and closed bounds). */
int parse_float(const char *s, float *out, char *why, size_t whylen);

#endif
