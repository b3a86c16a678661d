/*
 * cmd_probe.h — the probe cache of a run (cmd_probe.c), shared with
 * `gatelab sample --trace`.
 */
#ifndef GATELAB_HARNESS_CLI_CMD_PROBE_H
#define GATELAB_HARNESS_CLI_CMD_PROBE_H

#include <stddef.h>

#include "store/probecache.h"
#include "store/rundir.h"

/* The run's vocabulary into pc (/vocab).  Returns 0, or -1 out of memory. */
int probe_vocab(const gl_run *run, gl_probecache *pc);

/* `sample --trace PATH`: the probe cache of ctx (len tokens, the first plen
 * the prompt) as sampling read it (analysis/measure/probe.h sliding windows), with the
 * model's inference settings as they are (sparse TSA, exit τ), plus
 * /sample/generated and, for TSA and early exit, /sample/halt_block (the
 * first block not run: TSA's first skipped block, early exit's exit block + 1
 * at confidence >= tau; L when none).
 * Returns 0, or -1 with a message. */
int probe_sample_trace(gl_run *run, const int *ctx, size_t len, size_t plen, double tau, const char *path, char *err,
                       size_t errlen);

#endif
