/*
 * dist.h — the ranks of a data-parallel training and the collectives that
 * combine them.  Two implementations of one interface:
 *
 *   dist.c      no MPI: one rank (rank 0 of 1); every collective is the
 *               identity.  Linked into build/gatelab and the tests.
 *   dist_mpi.c  OpenMPI (MPI_COMM_WORLD); linked into build/gatelab-mpi,
 *               which `make` builds when `pkg-config ompi-c` succeeds.
 *
 * The training loop (train.c) has one code path over this interface; with one
 * rank it runs exactly what it ran before ranks existed.
 *
 * Determinism: every sum is taken in rank order (rank 0 + rank 1 + …,
 * accumulated in double), whatever order the messages arrive in, so a run on a
 * fixed number of ranks repeats bit for bit.  MPI errors are fatal (MPI's
 * default handler aborts the whole job), so no collective returns a status: a
 * rank that dies ends the job instead of leaving the others waiting.
 */
#ifndef GATELAB_HARNESS_DIST_H
#define GATELAB_HARNESS_DIST_H

#include <stddef.h>

/* Time and volume spent in collectives since dist_init (this rank). */
typedef struct {
    double comm_s;      /* wall-clock seconds inside collectives, waiting for slower ranks included */
    double bytes;       /* bytes this rank handed to collectives (payload, not wire traffic) */
    long calls;         /* collectives made */
} gl_dist_stats;

/* Start the ranks (MPI_Init_thread with MPI_THREAD_FUNNELED: only the thread
 * that called it talks to MPI; OpenMP threads do not).  Call once, before any
 * other dist_ function; a process started without mpirun/srun is one rank.
 * Returns 0, or -1 with a message in err. */
int dist_init(int *argc, char ***argv, char *err, size_t errlen);

/* End the ranks (MPI_Finalize).  Safe without dist_init. */
void dist_finalize(void);

int dist_rank(void);          /* 0 .. dist_size()-1 */
int dist_size(void);          /* number of ranks */
const char *dist_kind(void);  /* "mpi" or "single" */

/* x[0..n) := Σ_r x_r[0..n) over the ranks, summed in rank order in double and
 * rounded to float once; the same result on every rank.  A reduce-scatter
 * (each rank sums one n/size slice) followed by an all-gather, so each rank
 * sends and receives about 2·n·(size−1)/size floats. */
void dist_sum_floats(float *x, size_t n);

/* x[0..n) := Σ_r x_r[0..n) in rank order (small n: gathered whole on every rank). */
void dist_sum_doubles(double *x, int n);

/* x[0..n) := max_r x_r[0..n) (flags: a signal, a failure seen on any rank). */
void dist_max_ints(int *x, int n);

/* Copy bytes bytes at buf from rank 0 to every rank. */
void dist_bcast(void *buf, size_t bytes);
/* all[r·each .. (r+1)·each) := rank r's string mine, cut to each − 1 bytes and NUL-padded, on every
 * rank (all holds dist_size() · each bytes): what each rank is running on, for the registry. */
void dist_gather_text(const char *mine, char *all, size_t each);

void dist_stats(gl_dist_stats *s);

/* Agreement on what the ranks are about to train, before any collective
 * that moves parameters (buffers sized from the config): each rank gives n
 * values (n <= DIST_AGREE_MAX; the same items in the same order: the data's
 * SHA-256, the vocabulary, each key of the resolved config).  One allgather
 * of the counts, one of n fixed-size digests per rank (a 64-bit FNV-1a hash
 * of each value and its first DIST_AGREE_SHOWN - 1 bytes).  Returns -1 when
 * every rank's values equal rank 0's; else the index of the first item some
 * rank differs on (n itself when the counts differ), with *rank the lowest
 * such rank and its value, cut short, in other.  The same answer on every
 * rank, so all of them stop together. */
#define DIST_AGREE_MAX 512
#define DIST_AGREE_SHOWN 48
int dist_agree_items(const char *const *vals, int n, int *rank, char other[DIST_AGREE_SHOWN]);

#endif
