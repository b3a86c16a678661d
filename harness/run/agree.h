/*
 * agree.h — the points where the ranks of a training (dist.h) agree before
 * they act: on what they train (the data, the vocabulary, the resolved
 * config) before the first collective that moves parameters, on whether a
 * set-up step failed anywhere, and, at each step of the loop, on the signals
 * any rank received and the failures any rank met.  Every rank calls the same
 * function at the same point, so every rank leaves together; with one rank
 * (build/gatelab) each agreement is the rank's own flags, unchanged.
 *
 * Not here: the signal handlers (train.c owns them and hands their flags in)
 * and the collectives themselves (dist.h).
 */
#ifndef GATELAB_HARNESS_AGREE_H
#define GATELAB_HARNESS_AGREE_H

#include <signal.h>
#include <stddef.h>

#include "store/data.h"

/* The flags a signal handler sets: a stop signal's number (0: none) and a
 * checkpoint request (SIGUSR1). */
typedef struct agree_signals {
    volatile sig_atomic_t *stop, *ckpt;
} agree_signals;

/* What the ranks agreed on: the largest stop signal and checkpoint request
 * over the ranks, and fail = 1 + the highest failing rank (0: none failed). */
typedef struct agree_flags {
    int stop, ckpt, fail;
} agree_flags;

/* One point of agreement in the loop (a collective: every rank calls it).
 * fail: this rank failed (its message is in err).  A stop signal another rank
 * got is raised in *sig->stop too (the run ends KILLED, not FINISHED).  When
 * another rank failed and this one did not, err says which rank and where its
 * message is.  Never fails itself. */
agree_flags agree_point(const agree_signals *sig, int fail, char *err, size_t errlen);

/* The ranks agree on a set-up step: returns 1 when any rank failed (*own:
 * this rank did), 0 when none did.  *own stays 1 on a rank whose own message
 * is worth printing: rank 0's, or another rank's when rank 0 did not fail (a
 * file missing on one node); it is cleared elsewhere. */
int agree_setup(const agree_signals *sig, int *own, char *err, size_t errlen);

/* The ranks agree on what they train before any collective that moves
 * parameters (the state broadcasts fill buffers sized from each rank's own
 * config: another d_ff or vocabulary would be MPI_ERR_TRUNCATE or heap
 * corruption): the SHA-256 of ds's token stream (a synthetic task: its
 * name), the vocabulary's size and SHA-256, and every key of config_ini (the
 * resolved config, canonical INI), in that order, at most DIST_AGREE_MAX
 * items.  Returns 0, or -1 on every rank, with rank 0's err naming the first
 * item a rank differs on, both values and what to check (err "" elsewhere). */
int agree_config(const gl_dataset *ds, const char *config_ini, char *err, size_t errlen);

#endif
