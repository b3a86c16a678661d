/*
 * fuzz_parse.c — libFuzzer target for store/parse.c, the number syntax of
 * every CLI flag and manifest value.  The first byte picks the function, the
 * rest (NUL-terminated) is the text.  Beyond "no crash, no UB", it checks the
 * contract: a success is in range and finite and agrees with strtol/strtod; a
 * failure leaves the output untouched and says why.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "store/parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1 || size > 256) return 0;
    char s[257], why[160];
    memcpy(s, data + 1, size - 1);
    s[size - 1] = '\0';
    why[0] = '\0';
    switch (data[0] % 4) {
    case 0: {
        long v = 12345;
        int rc = parse_long(s, -1000, 1000000, &v, why, sizeof why);
        if (rc == 0 && (v < -1000 || v > 1000000 || v != strtol(s, NULL, 10))) abort();
        if (rc != 0 && (v != 12345 || !why[0] || (rc != -1 && rc != -2))) abort();
        break;
    }
    case 1: {
        double v = 0.25;
        int rc = parse_double(s, -1e6, 1e6, &v, why, sizeof why);
        if (rc == 0 && (!isfinite(v) || v < -1e6 || v > 1e6 || v != strtod(s, NULL))) abort();
        if (rc != 0 && (v != 0.25 || !why[0])) abort();
        break;
    }
    case 2: {
        uint64_t v = 7;
        int rc = parse_u64(s, &v, why, sizeof why);
        if (rc == 0 && v != strtoull(s, NULL, 10)) abort();
        if (rc != 0 && (v != 7 || !why[0])) abort();
        break;
    }
    default: {
        float v = 0.5f;
        int rc = parse_float(s, &v, why, sizeof why);
        if (rc == 0 && (!isfinite(v) || v != strtof(s, NULL))) abort();
        if (rc != 0 && (v != 0.5f || !why[0])) abort();
        break;
    }
    }
    return 0;
}
