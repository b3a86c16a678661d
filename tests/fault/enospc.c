/*
 * enospc.c — an LD_PRELOAD shim that makes a disk fill up: after
 * GATELAB_FAULT_BYTES bytes have been written to files whose path contains
 * GATELAB_FAULT_PATH, every further write to such a file fails with ENOSPC
 * (the write that crosses the limit is cut short, as on a real disk), and so
 * do fsync/fdatasync on them.  Files elsewhere, pipes and terminals are left
 * alone, so the program can still print its error.
 *
 * Interposed: write, pwrite, pwrite64, writev, fwrite, fsync, fdatasync,
 * fallocate, posix_fallocate — what gatelab's checkpoint (stdio), HDF5's
 * sec2 driver (pwrite/write) and SQLite's unix VFS (pwrite64/write) call.
 * glibc's stdio flushes through an internal write that a shim cannot see,
 * hence fwrite itself is counted.
 *
 * GATELAB_FAULT_SIGNAL=N with GATELAB_FAULT_SIGNAL_PATH=S raises signal N
 * once, at the first write to a file whose path contains S: a SIGTERM that
 * arrives at a moment the test names, without timers.
 *
 * Used by tests/integration/faults.sh; needs no privileges (no tmpfs mount).
 * Not a general fault injector: one byte budget for the whole process.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

static long long g_limit = -1; /* bytes allowed before ENOSPC; -1: not configured */
static long long g_used;
static const char *g_match;

static const char *g_sig_match; /* GATELAB_FAULT_SIGNAL_PATH */
static int g_sig;               /* GATELAB_FAULT_SIGNAL: raised once, after the first write there */

static void fault_init(void) {
    static int done;
    if (done) return;
    done = 1;
    const char *b = getenv("GATELAB_FAULT_BYTES");
    g_match = getenv("GATELAB_FAULT_PATH");
    if (b && *b) g_limit = atoll(b);
    const char *sg = getenv("GATELAB_FAULT_SIGNAL");
    g_sig_match = getenv("GATELAB_FAULT_SIGNAL_PATH");
    if (sg && *sg && g_sig_match && *g_sig_match) g_sig = atoi(sg);
}

/* 1 when fd is a regular file whose path contains match. */
static int fault_path_has(int fd, const char *match) {
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) return 0;
    if (!match || !*match) return 1;
    char link[64], path[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    if (n < 0) return 0;
    path[n] = 0;
    return strstr(path, match) != NULL;
}

/* The signal a cluster would send, at a moment a test can name: right after
 * the process first writes to a file matching GATELAB_FAULT_SIGNAL_PATH
 * (e.g. trace.h5: during set-up, before step 0 is evaluated).  No timers. */
static void fault_maybe_signal(int fd) {
    fault_init();
    if (!g_sig || !fault_path_has(fd, g_sig_match)) return;
    int sig = g_sig;
    g_sig = 0;
    raise(sig);
}

/* 1 when fd is a regular file whose path contains the configured substring. */
static int fault_watched(int fd) {
    fault_init();
    if (g_limit < 0) return 0;
    return fault_path_has(fd, g_match);
}

/* How many of n bytes may still be written (0: the disk is full). */
static size_t fault_room(size_t n) {
    long long left = g_limit - g_used;
    if (left <= 0) return 0;
    return (long long)n < left ? n : (size_t)left;
}

#define REAL(name, ret, ...)                                            \
    static ret (*real_##name)(__VA_ARGS__);                             \
    if (!real_##name) real_##name = (ret (*)(__VA_ARGS__))dlsym(RTLD_NEXT, #name)

ssize_t write(int fd, const void *buf, size_t n) {
    REAL(write, ssize_t, int, const void *, size_t);
    fault_maybe_signal(fd);
    if (n && fault_watched(fd)) {
        size_t room = fault_room(n);
        if (!room) return errno = ENOSPC, -1;
        ssize_t r = real_write(fd, buf, room);
        if (r > 0) g_used += r;
        return r;
    }
    return real_write(fd, buf, n);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off) {
    REAL(pwrite, ssize_t, int, const void *, size_t, off_t);
    fault_maybe_signal(fd);
    if (n && fault_watched(fd)) {
        size_t room = fault_room(n);
        if (!room) return errno = ENOSPC, -1;
        ssize_t r = real_pwrite(fd, buf, room, off);
        if (r > 0) g_used += r;
        return r;
    }
    return real_pwrite(fd, buf, n, off);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off) {
    REAL(pwrite64, ssize_t, int, const void *, size_t, off_t);
    fault_maybe_signal(fd);
    if (n && fault_watched(fd)) {
        size_t room = fault_room(n);
        if (!room) return errno = ENOSPC, -1;
        ssize_t r = real_pwrite64(fd, buf, room, off);
        if (r > 0) g_used += r;
        return r;
    }
    return real_pwrite64(fd, buf, n, off);
}

ssize_t writev(int fd, const struct iovec *iov, int cnt) {
    REAL(writev, ssize_t, int, const struct iovec *, int);
    if (fault_watched(fd)) { /* rare here: write the pieces one by one through write() */
        ssize_t total = 0;
        for (int i = 0; i < cnt; i++) {
            ssize_t r = write(fd, iov[i].iov_base, iov[i].iov_len);
            if (r < 0) return total ? total : -1;
            total += r;
            if ((size_t)r < iov[i].iov_len) break;
        }
        return total;
    }
    return real_writev(fd, iov, cnt);
}

size_t fwrite(const void *buf, size_t size, size_t count, FILE *f) {
    REAL(fwrite, size_t, const void *, size_t, size_t, FILE *);
    size_t n = size * count;
    fault_maybe_signal(fileno(f));
    if (n && fault_watched(fileno(f))) {
        size_t room = fault_room(n);
        if (room < n) { /* do not write a partial item; the disk is full */
            errno = ENOSPC;
            g_used = g_limit;
            return 0;
        }
        size_t r = real_fwrite(buf, size, count, f);
        g_used += (long long)(r * size);
        return r;
    }
    return real_fwrite(buf, size, count, f);
}

int fsync(int fd) {
    REAL(fsync, int, int);
    if (fault_watched(fd) && g_used >= g_limit) return errno = ENOSPC, -1;
    return real_fsync(fd);
}

int fdatasync(int fd) {
    REAL(fdatasync, int, int);
    if (fault_watched(fd) && g_used >= g_limit) return errno = ENOSPC, -1;
    return real_fdatasync(fd);
}

int fallocate(int fd, int mode, off_t off, off_t len) {
    REAL(fallocate, int, int, int, off_t, off_t);
    if (fault_watched(fd) && g_used >= g_limit) return errno = ENOSPC, -1;
    return real_fallocate(fd, mode, off, len);
}

int posix_fallocate(int fd, off_t off, off_t len) {
    REAL(posix_fallocate, int, int, off_t, off_t);
    if (fault_watched(fd) && g_used >= g_limit) return ENOSPC;
    return real_posix_fallocate(fd, off, len);
}
