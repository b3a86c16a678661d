/*
 * dist_mpi.c — dist.h over MPI (OpenMPI from Debian: libopenmpi-dev), the
 * only file that includes mpi.h.  Ranks are MPI_COMM_WORLD, started by
 * `mpirun -np N` or Slurm's `srun`; a process started alone is one rank.
 *
 * Sums in rank order.  MPI_Allreduce makes no promise about the order in
 * which it adds contributions (the algorithm may depend on the message size
 * and the rank count, and the standard only recommends, never requires, an
 * order that repeats), so sums are built from data movement alone:
 *   dist_sum_floats   reduce-scatter by MPI_Alltoallv (rank r receives slice
 *                     r of every rank's vector), a local sum over the received
 *                     copies in rank order, in double; then MPI_Allgatherv of
 *                     the summed slices.  Each rank moves ~2·n·(R−1)/R floats,
 *                     the volume of a ring all-reduce.
 *   dist_sum_doubles  MPI_Allgather of the small vector, summed in rank order.
 * Maxima of ints (dist_max_ints) are exact in any order: MPI_Allreduce(MAX).
 *
 * Failures: MPI_COMM_WORLD keeps MPI's default handler, MPI_ERRORS_ARE_FATAL,
 * and mpirun (or srun --kill-on-bad-exit=1) ends every rank when one dies, so
 * a collective never returns an error and never waits for a dead rank.
 * Out of memory for the scratch slice aborts the job with a message.
 */
#include "dist.h"

#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int g_rank = 0, g_size = 1, g_inited = 0;
static gl_dist_stats g_stats;
static float *g_scratch;        /* (size · slice) received copies of this rank's slice */
static size_t g_scratch_floats;
static int *g_counts;           /* [4 · size]: send counts/displacements, receive counts/displacements */

int dist_init(int *argc, char ***argv, char *err, size_t errlen) {
    int provided = 0;
    if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
        snprintf(err, errlen, "MPI_Init_thread failed: is this run under mpirun or srun with a working OpenMPI?");
        return -1;
    }
    g_inited = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    g_counts = calloc((size_t)4 * g_size, sizeof *g_counts);
    if (!g_counts) {
        snprintf(err, errlen, "out of memory for the MPI count tables of %d ranks", g_size);
        return -1;
    }
    if (provided < MPI_THREAD_FUNNELED && g_rank == 0)
        fprintf(stderr, "gatelab: warning: MPI gives thread level %d < MPI_THREAD_FUNNELED; only the main thread calls MPI\n",
                provided);
    return 0;
}

void dist_finalize(void) {
    if (g_inited) MPI_Finalize();
    g_inited = 0;
    free(g_scratch);
    free(g_counts);
    g_scratch = NULL;
    g_counts = NULL;
    g_scratch_floats = 0;
}

int dist_rank(void) { return g_rank; }
int dist_size(void) { return g_size; }
const char *dist_kind(void) { return "mpi"; }

static void account(double t0, double bytes) {
    g_stats.comm_s += MPI_Wtime() - t0;
    g_stats.bytes += bytes;
    g_stats.calls++;
}

/* Slice r of n floats over g_size ranks: the first n % size slices hold one more. */
static void slice(size_t n, int r, size_t *off, size_t *cnt) {
    size_t q = n / (size_t)g_size, rem = n % (size_t)g_size;
    *cnt = q + ((size_t)r < rem);
    *off = (size_t)r * q + ((size_t)r < rem ? (size_t)r : rem);
}

void dist_sum_floats(float *x, size_t n) {
    if (g_size == 1 || n == 0) return;
    const int R = g_size;
    size_t my_off, my_cnt;
    slice(n, g_rank, &my_off, &my_cnt);
    if (n / R + 1 > (size_t)INT_MAX / R) {
        fprintf(stderr, "gatelab: %zu floats are too many for one MPI all-to-all over %d ranks\n", n, R);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (g_scratch_floats < my_cnt * R) {
        free(g_scratch);
        g_scratch = malloc(my_cnt * R * sizeof(float));
        if (!g_scratch) {
            fprintf(stderr, "gatelab: rank %d: out of memory for %zu floats of gradient slices\n", g_rank, my_cnt * R);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        g_scratch_floats = my_cnt * R;
    }
    int *scnt = g_counts, *sdis = g_counts + R, *rcnt = g_counts + 2 * R, *rdis = g_counts + 3 * R;
    for (int r = 0; r < R; r++) {
        size_t off, cnt;
        slice(n, r, &off, &cnt);
        scnt[r] = (int)cnt; /* my copy of slice r goes to rank r */
        sdis[r] = (int)off;
        rcnt[r] = (int)my_cnt; /* rank r's copy of my slice lands at r·my_cnt */
        rdis[r] = (int)(r * my_cnt);
    }
    double t0 = MPI_Wtime();
    MPI_Alltoallv(x, scnt, sdis, MPI_FLOAT, g_scratch, rcnt, rdis, MPI_FLOAT, MPI_COMM_WORLD);
    float *mine = x + my_off;
    for (size_t i = 0; i < my_cnt; i++) {
        double s = 0.0;
        for (int r = 0; r < R; r++) s += (double)g_scratch[(size_t)r * my_cnt + i];
        mine[i] = (float)s;
    }
    /* every rank now gathers the summed slices: slice r from rank r */
    for (int r = 0; r < R; r++) rcnt[r] = scnt[r];
    MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, x, rcnt, sdis, MPI_FLOAT, MPI_COMM_WORLD);
    account(t0, 2.0 * (double)n * sizeof(float));
}

void dist_sum_doubles(double *x, int n) {
    if (g_size == 1 || n <= 0) return;
    double buf[64 * 16];
    double *all = (size_t)n * g_size <= sizeof buf / sizeof buf[0] ? buf : malloc((size_t)n * g_size * sizeof(double));
    if (!all) {
        fprintf(stderr, "gatelab: rank %d: out of memory for %d x %d doubles\n", g_rank, n, g_size);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    double t0 = MPI_Wtime();
    MPI_Allgather(x, n, MPI_DOUBLE, all, n, MPI_DOUBLE, MPI_COMM_WORLD);
    for (int i = 0; i < n; i++) {
        double s = 0.0;
        for (int r = 0; r < g_size; r++) s += all[(size_t)r * n + i];
        x[i] = s;
    }
    account(t0, (double)n * sizeof(double));
    if (all != buf) free(all);
}

void dist_max_ints(int *x, int n) {
    if (g_size == 1 || n <= 0) return;
    double t0 = MPI_Wtime();
    MPI_Allreduce(MPI_IN_PLACE, x, n, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    account(t0, (double)n * sizeof(int));
}

void dist_bcast(void *buf, size_t bytes) {
    if (g_size == 1 || bytes == 0) return;
    double t0 = MPI_Wtime();
    const size_t chunk = (size_t)1 << 30; /* MPI counts are ints */
    for (size_t done = 0; done < bytes; done += chunk) {
        size_t len = bytes - done < chunk ? bytes - done : chunk;
        MPI_Bcast((char *)buf + done, (int)len, MPI_BYTE, 0, MPI_COMM_WORLD);
    }
    account(t0, (double)bytes);
}

void dist_gather_text(const char *mine, char *all, size_t each) {
    if (!each) return;
    char *own = calloc(1, each);
    if (!own) {
        fprintf(stderr, "gatelab: rank %d: out of memory for %zu bytes\n", g_rank, each);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    snprintf(own, each, "%s", mine);
    double t0 = MPI_Wtime();
    MPI_Allgather(own, (int)each, MPI_BYTE, all, (int)each, MPI_BYTE, MPI_COMM_WORLD);
    account(t0, (double)each);
    free(own);
}

void dist_stats(gl_dist_stats *s) { *s = g_stats; }

typedef struct {
    unsigned long long hash;     /* FNV-1a 64 of the whole value */
    char shown[DIST_AGREE_SHOWN]; /* its first bytes, NUL-padded */
} dist_digest;

int dist_agree_items(const char *const *vals, int n, int *rank, char other[DIST_AGREE_SHOWN]) {
    other[0] = 0;
    *rank = 0;
    if (g_size == 1) return -1;
    double t0 = MPI_Wtime();
    int *counts = malloc((size_t)g_size * sizeof *counts);
    if (!counts) {
        fprintf(stderr, "gatelab: rank %d: out of memory agreeing on the config\n", g_rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    int mine = n < 0 ? 0 : n > DIST_AGREE_MAX ? DIST_AGREE_MAX : n;
    MPI_Allgather(&mine, 1, MPI_INT, counts, 1, MPI_INT, MPI_COMM_WORLD);
    int first = -1;
    for (int r = 1; r < g_size && first < 0; r++)
        if (counts[r] != counts[0]) {
            first = counts[0] < counts[r] ? counts[0] : counts[r];
            *rank = r;
            snprintf(other, DIST_AGREE_SHOWN, "%d items", counts[r]);
        }
    free(counts);
    if (first >= 0) return first; /* every rank saw the same counts: all return here */
    dist_digest *d = calloc((size_t)mine * (size_t)(g_size + 1), sizeof *d);
    if (!d && mine) {
        fprintf(stderr, "gatelab: rank %d: out of memory agreeing on the config\n", g_rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    dist_digest *all = d + mine;
    for (int i = 0; i < mine; i++) {
        unsigned long long h = 0xcbf29ce484222325ULL;
        for (const unsigned char *p = (const unsigned char *)(vals[i] ? vals[i] : ""); *p; p++)
            h = (h ^ *p) * 0x100000001b3ULL;
        d[i].hash = h;
        snprintf(d[i].shown, sizeof d[i].shown, "%s", vals[i] ? vals[i] : "");
    }
    if (mine)
        MPI_Allgather(d, (int)(mine * sizeof *d), MPI_BYTE, all, (int)(mine * sizeof *d), MPI_BYTE, MPI_COMM_WORLD);
    for (int i = 0; i < mine && first < 0; i++)
        for (int r = 1; r < g_size; r++) {
            const dist_digest *a = &all[i], *b = &all[(size_t)r * mine + i];
            if (a->hash != b->hash || memcmp(a->shown, b->shown, sizeof a->shown)) {
                first = i;
                *rank = r;
                memcpy(other, b->shown, DIST_AGREE_SHOWN);
                other[DIST_AGREE_SHOWN - 1] = 0;
                break;
            }
        }
    free(d);
    account(t0, (double)mine * sizeof(dist_digest));
    return first;
}
