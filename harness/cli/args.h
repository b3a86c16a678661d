/*
 * args.h — a number given to a command-line flag, parsed by store/parse.h's
 * rules, with the command and flag named in the error.  Each returns 0 and
 * stores the value, or prints "gatelab CMD: FLAG VALUE: reason" to stderr and
 * returns -1 (the command then exits 2, bad usage).
 */
#ifndef GATELAB_HARNESS_CLI_ARGS_H
#define GATELAB_HARNESS_CLI_ARGS_H

#include <stdint.h>

int args_long(const char *cmd, const char *flag, const char *value, long lo, long hi, long *out);
int args_int(const char *cmd, const char *flag, const char *value, int lo, int hi, int *out);
int args_u64(const char *cmd, const char *flag, const char *value, uint64_t *out);
int args_double(const char *cmd, const char *flag, const char *value, double lo, double hi, double *out);

#endif
