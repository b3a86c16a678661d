/*
 * cmd_attrib.h — `gatelab heads RUN --attribution` (cmd_attrib.c), called by
 * cmd_heads once the run and its evaluation windows are open.
 */
#ifndef GATELAB_HARNESS_CLI_CMD_ATTRIB_H
#define GATELAB_HARNESS_CLI_CMD_ATTRIB_H

#include <stddef.h>

#include "analysis/measure/ablate.h"

/* Print the first-order estimate of zeroing each gate beside its exact ΔL
 * and their Spearman ρ; write attribution.tsv and attribution_tokens.tsv
 * into out_dir; with json one JSON line.  Returns 0, or -1 with a message. */
int cmd_heads_attribution(ablate_ctx *c, const char *run_id, const char *run_dir, const char *out_dir, int json,
                          char *err, size_t errlen);

#endif
