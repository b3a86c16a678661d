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
 * Writing: every file gatelab writes goes through fileio_begin/commit.  The
 * temporary PATH.tmp is created O_CREAT|O_EXCL|O_NOFOLLOW in the destination's
 * own folder (so the rename never crosses a file system), so a planted link at
 * PATH.tmp is refused instead of followed onto another run's file; a regular
 * leftover (a crash between create and rename) is removed first.  The data is
 * fsync'd before the rename and the folder after it: a crash leaves the old or
 * the new file, never a mix.  rename() replaces a link at PATH itself rather
 * than writing through it.  Logs are appended with O_NOFOLLOW.
 *
 * Small utilities: fileio_mkdir_p (mkdir -p) and fileio_slurp (a whole file
 * into memory, through the same regular-file check) are the only copies.
 *
 * Not here: parsing the contents; HDF5 files, which the library creates
 * (callers clear the temporary with fileio_clear_tmp and create it with
 * H5F_ACC_EXCL, which does not follow links either).
 */
#include "fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
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

/* What a non-regular thing at path is, for messages. */
static const char *fio_kind(mode_t m) {
    return S_ISLNK(m) ? "a symbolic link" : S_ISDIR(m) ? "a directory" : S_ISFIFO(m) ? "a FIFO (named pipe)"
           : S_ISCHR(m) || S_ISBLK(m) ? "a device" : "a special file";
}

int fileio_refuse_link(const char *path, const char *what, char *err, size_t errlen) {
    struct stat sb;
    if (lstat(path, &sb) != 0 || !S_ISLNK(sb.st_mode)) return 0;
    snprintf(err, errlen, "%s %s is a symbolic link; gatelab does not write through links (it could overwrite "
             "another run's file): remove the link", what, path);
    errno = ELOOP;
    return -1;
}

int fileio_clear_tmp(const char *tmp, const char *what, char *err, size_t errlen) {
    struct stat sb;
    if (lstat(tmp, &sb) != 0) {
        if (errno == ENOENT) return 0;
        int e = errno;
        snprintf(err, errlen, "cannot check the temporary %s for the %s: %s", tmp, what, strerror(e));
        errno = e;
        return -1;
    }
    if (!S_ISREG(sb.st_mode)) {
        snprintf(err, errlen, "the temporary %s for the %s is %s; gatelab does not write through links or over "
                 "other files: remove it", tmp, what, fio_kind(sb.st_mode));
        errno = S_ISLNK(sb.st_mode) ? ELOOP : EEXIST;
        return -1;
    }
    if (unlink(tmp) != 0 && errno != ENOENT) {
        int e = errno;
        snprintf(err, errlen, "cannot remove the leftover temporary %s for the %s: %s", tmp, what, strerror(e));
        errno = e;
        return -1;
    }
    return 0;
}

int fileio_check_dest(const char *path, const char *what, fileio_own_fn own, char *err, size_t errlen) {
    struct stat sb;
    if (lstat(path, &sb) != 0) {
        if (errno == ENOENT) return 0;
        int e = errno;
        snprintf(err, errlen, "cannot check the %s %s: %s", what, path, strerror(e));
        errno = e;
        return -1;
    }
    if (!S_ISREG(sb.st_mode)) {
        snprintf(err, errlen, "%s exists and is %s, not a %s; gatelab neither writes through links nor replaces "
                 "other files: choose another path, or remove it", path, fio_kind(sb.st_mode), what);
        errno = S_ISLNK(sb.st_mode) ? ELOOP : EEXIST;
        return -1;
    }
    if (own && sb.st_size > 0 && !own(path)) {
        snprintf(err, errlen, "%s exists and is not a gatelab %s; gatelab replaces only its own %s files (never the "
                 "registry, a checkpoint or a trace): choose another path, or remove it", path, what, what);
        errno = EEXIST;
        return -1;
    }
    return 0;
}

int fileio_starts_with(const char *path, const char *prefix) {
    FILE *f;
    char err[64];
    if (fileio_open_regular(path, "file", &f, err, sizeof err) != 0) return 0;
    size_t n = strlen(prefix);
    char buf[256];
    int ok = n <= sizeof buf && fread(buf, 1, n, f) == n && memcmp(buf, prefix, n) == 0;
    fclose(f);
    return ok;
}

int fileio_is_html(const char *path) { return fileio_starts_with(path, "<!DOCTYPE html"); }

int fileio_begin_own(fileio_out *o, const char *path, const char *what, fileio_own_fn own, char *err, size_t errlen) {
    o->f = NULL;
    o->tmp[0] = '\0';
    if (fileio_check_dest(path, what, own, err, errlen) != 0) return -1;
    return fileio_begin(o, path, what, err, errlen);
}

int fileio_sync_file(const char *path, const char *what, char *err, size_t errlen) {
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 || fsync(fd) != 0) {
        int e = errno;
        snprintf(err, errlen, "%s: syncing the %s failed: %s (free disk space or check the device)", path, what,
                 strerror(e));
        if (fd >= 0) close(fd);
        errno = e;
        return -1;
    }
    close(fd);
    return 0;
}

int fileio_begin(fileio_out *o, const char *path, const char *what, char *err, size_t errlen) {
    o->f = NULL;
    o->tmp[0] = '\0';
    if ((size_t)snprintf(o->path, sizeof o->path, "%s", path) >= sizeof o->path ||
        (size_t)snprintf(o->tmp, sizeof o->tmp, "%s.tmp", path) >= sizeof o->path) {
        snprintf(err, errlen, "%s: path of the %s too long", path, what);
        o->tmp[0] = '\0';
        errno = ENAMETOOLONG;
        return -1;
    }
    if (fileio_clear_tmp(o->tmp, what, err, errlen) != 0) {
        o->tmp[0] = '\0';
        return -1;
    }
    int fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) {
        int e = errno;
        snprintf(err, errlen, "%s: cannot create the %s: %s (check the folder exists and is writable)", o->tmp,
                 what, strerror(e));
        o->tmp[0] = '\0';
        errno = e;
        return -1;
    }
    if (!(o->f = fdopen(fd, "wb"))) {
        int e = errno;
        snprintf(err, errlen, "%s: cannot open a stream for the %s: %s", o->tmp, what, strerror(e));
        close(fd);
        unlink(o->tmp);
        o->tmp[0] = '\0';
        errno = e;
        return -1;
    }
    return 0;
}

void fileio_abort(fileio_out *o) {
    if (o->f) fclose(o->f);
    o->f = NULL;
    if (o->tmp[0]) unlink(o->tmp);
    o->tmp[0] = '\0';
}

int fileio_commit(fileio_out *o, const char *what, char *err, size_t errlen) {
    int e = 0;
    const char *step = "writing";
    if (!o->f) {
        snprintf(err, errlen, "%s: the %s was not opened", o->path, what);
        errno = EINVAL;
        return -1;
    }
    if (ferror(o->f)) e = errno ? errno : EIO;
    if (!e && fflush(o->f) != 0) e = errno ? errno : EIO;
    if (!e && fsync(fileno(o->f)) != 0) step = "syncing", e = errno;
    if (fclose(o->f) != 0 && !e) e = errno ? errno : EIO;
    o->f = NULL;
    if (!e && rename(o->tmp, o->path) != 0) step = "renaming", e = errno;
    if (e) {
        int had = access(o->path, F_OK) == 0;
        snprintf(err, errlen, "%s: %s the %s failed: %s (free disk space or check the device); %s%s%s",
                 o->tmp, step, what, strerror(e), had ? "the previous one, " : "there is no earlier one at ",
                 o->path, had ? ", is unchanged" : "");
        unlink(o->tmp);
        o->tmp[0] = '\0';
        errno = e;
        return -1;
    }
    o->tmp[0] = '\0';
    if (fileio_sync_dir(o->path) != 0) {
        e = errno;
        snprintf(err, errlen, "%s: the %s was written but syncing its folder failed: %s", o->path, what,
                 strerror(e));
        errno = e;
        return -1;
    }
    return 0;
}

int fileio_write_all(const char *path, const char *what, const void *data, size_t n, char *err, size_t errlen) {
    fileio_out o;
    if (fileio_begin(&o, path, what, err, errlen) != 0) return -1;
    if (n && fwrite(data, 1, n, o.f) != n) {
        int e = errno ? errno : EIO;
        snprintf(err, errlen, "%s: writing the %s failed: %s (free disk space or check the device); %s is as it was",
                 o.tmp, what, strerror(e), path);
        fileio_abort(&o);
        errno = e;
        return -1;
    }
    return fileio_commit(&o, what, err, errlen);
}

int fileio_open_append(const char *path, const char *what, FILE **out, char *err, size_t errlen) {
    *out = NULL;
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0644);
    if (fd < 0) {
        int e = errno;
        if (e == ELOOP)
            snprintf(err, errlen, "%s %s is a symbolic link; gatelab does not write through links (it could "
                     "append to another run's file): remove the link", what, path);
        else
            snprintf(err, errlen, "cannot open %s %s for appending: %s", what, path, strerror(e));
        errno = e;
        return -1;
    }
    struct stat sb;
    int fl;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        snprintf(err, errlen, "%s %s is %s, not a regular file: remove it", what, path, fio_kind(sb.st_mode));
        close(fd);
        errno = EINVAL;
        return -1;
    }
    if ((fl = fcntl(fd, F_GETFL)) < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0 || !(*out = fdopen(fd, "a"))) {
        int e = errno;
        snprintf(err, errlen, "cannot open %s %s for appending: %s", what, path, strerror(e));
        close(fd);
        errno = e;
        return -1;
    }
    return 0;
}

int fileio_sync_dir(const char *path) {
    char dir[4096];
    const char *slash = strrchr(path, '/');
    if (!slash) snprintf(dir, sizeof dir, ".");
    else if (slash == path) snprintf(dir, sizeof dir, "/");
    else snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return -1;
    int rc = fsync(fd);
    int e = errno;
    close(fd);
    if (rc != 0 && e != EINVAL) {
        errno = e;
        return -1;
    }
    return 0;
}

FILE *fileio_fopen_w(const char *path) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) return NULL;
    FILE *f = fdopen(fd, "w");
    if (!f) {
        int e = errno;
        close(fd);
        errno = e;
    }
    return f;
}

int fileio_mkdir_p(const char *path, char *err, size_t errlen) {
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s", path) >= (int)sizeof tmp) {
        errno = ENAMETOOLONG;
        snprintf(err, errlen, "folder path too long: %.200s…", path);
        return -1;
    }
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            if (mkdir(tmp, 0755) && errno != EEXIST) goto fail;
            *p = '/';
        }
    if (mkdir(tmp, 0755) && errno != EEXIST) goto fail;
    struct stat st;
    if (stat(tmp, &st) != 0) goto fail;
    if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        snprintf(err, errlen, "cannot create folder %s: it exists and is not a folder", tmp);
        return -1;
    }
    return 0;
fail:;
    int e = errno;
    snprintf(err, errlen, "cannot create folder %s: %s", tmp, strerror(e));
    errno = e;
    return -1;
}

char *fileio_slurp(const char *path, const char *what, size_t max_bytes, size_t *n, char *err, size_t errlen) {
    FILE *f;
    *n = 0;
    if (fileio_open_regular(path, what, &f, err, errlen)) return NULL;
    struct stat st;
    size_t cap = fstat(fileno(f), &st) == 0 && st.st_size > 0 ? (size_t)st.st_size + 1 : 4096, len = 0;
    if (max_bytes && cap > max_bytes + 1) cap = max_bytes + 1;
    char *buf = malloc(cap);
    while (buf) {
        if (len + 1 >= cap) { /* the size grew while reading, or fstat gave none */
            if (max_bytes && len >= max_bytes) {
                int c = fgetc(f);
                if (c == EOF) break;
                snprintf(err, errlen, "%s %s is larger than %zu bytes; is it the right file?", what, path, max_bytes);
                free(buf);
                fclose(f);
                return NULL;
            }
            size_t nc = max_bytes && cap * 2 > max_bytes + 1 ? max_bytes + 1 : cap * 2;
            char *nb = realloc(buf, nc);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap = nc;
        }
        size_t got = fread(buf + len, 1, cap - len - 1, f);
        len += got;
        if (got == 0) break;
    }
    if (!buf) {
        snprintf(err, errlen, "%s %s: out of memory reading it", what, path);
    } else if (ferror(f)) {
        snprintf(err, errlen, "%s %s: read error: %s", what, path, strerror(errno));
        free(buf);
        buf = NULL;
    } else {
        buf[len] = '\0';
        *n = len;
    }
    fclose(f);
    return buf;
}
