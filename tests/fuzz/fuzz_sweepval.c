/*
 * fuzz_sweepval.c — libFuzzer target for the sweep value grammar
 * (store/sweepval.c: lists, choice(...), range(start, stop[, step])): any
 * text either expands or fails with a reason.  An expansion is a non-empty
 * NUL-terminated comma list that fits the buffer, holds no parenthesis,
 * repeats no item, and has at most max items when it came from range() (the
 * text starts with the call: "choice(a range, b)" is a list); it
 * is a fixed point (expanding it again gives it back).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "store/sweepval.h"

static int items(const char *s) {
    int n = 1;
    for (; *s; s++) n += *s == ',';
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1 || size > 2048) return 0;
    int max = 1 + data[0] % 64;
    char in[2048], out[1024], again[1024], why[256] = "";
    memcpy(in, data + 1, size - 1);
    in[size - 1] = '\0';
    memset(out, 0x5a, sizeof out);
    if (sweepval_expand(in, max, out, sizeof out, why, sizeof why) != 0) {
        if (!why[0] || !memchr(why, '\0', sizeof why)) abort();
        return 0;
    }
    if (!memchr(out, '\0', sizeof out) || strpbrk(out, "()")) abort();
    const char *call = in + strspn(in, " \t");
    int from_range = !strncmp(call, "range", 5) && call[5 + strspn(call + 5, " ")] == '(';
    if (from_range && items(out) > max) abort();
    why[0] = '\0';
    if (sweepval_expand(out, 1 << 20, again, sizeof again, why, sizeof why) != 0 || strcmp(out, again)) abort();
    return 0;
}
