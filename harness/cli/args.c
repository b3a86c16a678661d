/*
 * args.c — numbers on the command line (contract in args.h).  The syntax and
 * range rules live in store/parse.c, shared with the manifest; this file only
 * puts the command and the flag around the reason, so that `--windows abc`
 * says "gatelab eval: --windows 'abc': not an integer" instead of meaning 0.
 */
#include "args.h"

#include <stdio.h>

#include "store/parse.h"

static int args_fail(const char *cmd, const char *flag, const char *value, const char *why) {
    fprintf(stderr, "gatelab %s: %s '%s': %s\n", cmd, flag, value, why);
    return -1;
}

int args_long(const char *cmd, const char *flag, const char *value, long lo, long hi, long *out) {
    char why[160];
    return parse_long(value, lo, hi, out, why, sizeof why) ? args_fail(cmd, flag, value, why) : 0;
}

int args_int(const char *cmd, const char *flag, const char *value, int lo, int hi, int *out) {
    char why[160];
    return parse_int(value, lo, hi, out, why, sizeof why) ? args_fail(cmd, flag, value, why) : 0;
}

int args_u64(const char *cmd, const char *flag, const char *value, uint64_t *out) {
    char why[160];
    return parse_u64(value, out, why, sizeof why) ? args_fail(cmd, flag, value, why) : 0;
}

int args_double(const char *cmd, const char *flag, const char *value, double lo, double hi, double *out) {
    char why[160];
    return parse_double(value, lo, hi, out, why, sizeof why) ? args_fail(cmd, flag, value, why) : 0;
}
