/*
 * fileio.c — opening input files safely (contract in fileio.h).
 *
 * fopen(path, "rb") on a FIFO blocks until some process opens it for writing,
 * forever in a batch job; on a folder it succeeds and the first read fails
 * with EISDIR, which callers reported as "empty file" or "truncated".  Here
 * the file is opened with O_NONBLOCK (which makes the open of a FIFO return at
 * once), checked with fstat to be a regular file, switched back to blocking
 * reads, and only then wrapped in a FILE.
 *
 * Not here: reading the contents, or files gatelab writes.
 */
#include "fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int fileio_open_regular(const char *path, const char *what, FILE **out, char *err, size_t errlen) {
    *out = NULL;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        snprintf(err, errlen, "cannot read %s %s: %s", what, path, strerror(e));
        errno = e;
        return -1;
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        int e = errno;
        const char *kind = S_ISDIR(sb.st_mode) ? "a directory" : S_ISFIFO(sb.st_mode) ? "a FIFO (named pipe)"
                           : S_ISCHR(sb.st_mode) || S_ISBLK(sb.st_mode) ? "a device" : "a special file";
        if (e == 0 || S_ISDIR(sb.st_mode) || S_ISFIFO(sb.st_mode)) e = S_ISDIR(sb.st_mode) ? EISDIR : EINVAL;
        snprintf(err, errlen, "%s %s is %s, not a regular file; give the path of one", what, path, kind);
        close(fd);
        errno = e;
        return -1;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0 || !(*out = fdopen(fd, "rb"))) {
        int e = errno;
        snprintf(err, errlen, "cannot read %s %s: %s", what, path, strerror(e));
        close(fd);
        errno = e;
        return -1;
    }
    return 0;
}
