/*
 * cmd_seeds.h — `gatelab analyze --seeds RUN1,RUN2,…` (cmd_seeds.c).
 */
#ifndef GATELAB_HARNESS_CLI_CMD_SEEDS_H
#define GATELAB_HARNESS_CLI_CMD_SEEDS_H

#include <stddef.h>

/* Compare the runs of list (comma-separated RUNs) pairwise on validation
 * windows [0, windows) (<= 0: 64); seeds.tsv into out_dir (NULL: the first
 * run's analysis folder).  Returns 0, or -1 with a message. */
int analyze_seeds(const char *list, const char *results, long windows, const char *out_dir, char *err, size_t errlen);

#endif
