/*
 * slurm.h — the sbatch array script of a sweep (`gatelab sweep
 * --emit-slurm FILE`): array task i runs sweep run i (`gatelab sweep
 * MANIFEST ... --index i`, sweep_pool.h), each with its own registry on
 * node-local disk, copied back when it ends and merged with `gatelab
 * collect`; near the time limit (USR1) the training checkpoints and the task
 * requeues itself.  With --nodes/--ntasks-per-node or --launcher each task
 * trains data-parallel (docs/mpi.md).
 */
#ifndef GATELAB_HARNESS_SLURM_H
#define GATELAB_HARNESS_SLURM_H

#include "run/sweep_pool.h"

/* Write the script for sw to a->slurm (mode 0755), with results as the
 * results folder (made absolute), and print where it went and how to submit
 * and collect.  Returns 0, or 1 after printing what failed. */
int slurm_emit(const gl_sweep *sw, const gl_sweep_opts *a, const char *results);

#endif
