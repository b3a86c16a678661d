/*
 * fileio.h — open a file that must be a regular file (data, text, manifest,
 * checkpoint, word list) without hanging on a FIFO or misreading a folder;
 * write every file gatelab writes through one atomic routine that never
 * follows a symbolic link; append to logs without following one.  This is
 * the one home of the small file utilities: mkdir -p (fileio_mkdir_p) and the
 * whole-file reader (fileio_slurp) live here and nowhere else.
 */
#ifndef GATELAB_HARNESS_FILEIO_H
#define GATELAB_HARNESS_FILEIO_H

#include <stddef.h>
#include <stdio.h>

/* Open path for reading ("rb").  what names the role in the message ("data
 * file", "checkpoint").  Returns 0 with *out open (the caller fcloses it), or
 * -1 with *out NULL, errno set, and a message: cannot open (with strerror),
 * or "is a directory / a FIFO / not a regular file".  Never blocks on a FIFO
 * without a writer. */
int fileio_open_regular(const char *path, const char *what, FILE **out, char *err, size_t errlen);

/* One file being written atomically: the temporary PATH.tmp in PATH's own
 * folder, renamed over PATH by fileio_commit. */
typedef struct fileio_out {
    FILE *f;          /* write here between begin and commit */
    char path[4096];  /* the destination */
    char tmp[4104];   /* PATH.tmp */
} fileio_out;

/* Make sure nothing but a stale regular file is at tmp, and remove that (a
 * crash's leftover).  A symbolic link, a folder or anything else there is
 * refused, named: gatelab never writes through a link.  0 or -1 + message.
 * For writers (HDF5) that create the temporary themselves, exclusively. */
int fileio_clear_tmp(const char *tmp, const char *what, char *err, size_t errlen);

/* Refuse path when it is a symbolic link (0 when absent or not a link). */
int fileio_refuse_link(const char *path, const char *what, char *err, size_t errlen);

/* Whether the regular file at path is of a writer's own kind (an HDF5 probe
 * cache, an HTML page, a TSV table with its header): 1 yes, 0 no. */
typedef int (*fileio_own_fn)(const char *path);

/* The output rule's check of a destination before anything is written: 0 when
 * path is absent, or a regular file that own accepts (own NULL: any regular
 * file); -1 + message otherwise — a symbolic link (never written through or
 * replaced), a folder or special file, or a file of another kind ("PATH
 * exists and is not a WHAT; gatelab replaces only its own WHAT files (never
 * the registry, a checkpoint or a trace): choose another path").  errno EEXIST
 * (ELOOP for a link). */
int fileio_check_dest(const char *path, const char *what, fileio_own_fn own, char *err, size_t errlen);

/* 1 when the regular file at path starts with the bytes of prefix (a file's
 * own header: "<!DOCTYPE html", a TSV's first line), 0 otherwise. */
int fileio_starts_with(const char *path, const char *prefix);

/* 1 when path starts as the HTML pages gatelab writes ("<!DOCTYPE html"). */
int fileio_is_html(const char *path);

/* fileio_check_dest(path, what, own) and then fileio_begin: the one output
 * rule for a file a command writes at a path the user names. */
int fileio_begin_own(fileio_out *o, const char *path, const char *what, fileio_own_fn own, char *err, size_t errlen);

/* fsync the file at path (a file a library wrote and closed, e.g. HDF5's),
 * so a rename of it is durable.  0 or -1 + message naming the file and the
 * error (errno set). */
int fileio_sync_file(const char *path, const char *what, char *err, size_t errlen);

/* Start writing path: PATH.tmp is created with O_CREAT|O_EXCL|O_NOFOLLOW
 * (mode 0644 less the umask) after fileio_clear_tmp.  0 with o->f open, or -1
 * + message (o->f NULL, nothing left behind). */
int fileio_begin(fileio_out *o, const char *path, const char *what, char *err, size_t errlen);

/* Finish: flush, fsync, close, rename over path, fsync the folder.  Returns 0,
 * or -1 + message naming the step and the error; on failure the temporary is
 * removed and path is unchanged (bar a failed folder sync, reported after the
 * rename).  o->f is NULL afterwards either way.  Sets errno on failure. */
int fileio_commit(fileio_out *o, const char *what, char *err, size_t errlen);

/* Give up: close and remove the temporary (path unchanged).  Safe on a
 * fileio_out that was never begun (zeroed) or already committed. */
void fileio_abort(fileio_out *o);

/* fileio_begin + write n bytes + fileio_commit. */
int fileio_write_all(const char *path, const char *what, const void *data, size_t n, char *err, size_t errlen);

/* Open a log for appending (created 0644 when absent) with O_NOFOLLOW: a
 * symbolic link at path is refused, named.  0 with *out open, or -1 + message. */
int fileio_open_append(const char *path, const char *what, FILE **out, char *err, size_t errlen);

/* Open path for writing in place ("w": created 0644, truncated) with
 * O_NOFOLLOW: a drop-in for fopen(path, "w") for outputs that are rewritten
 * whole (tables, figure data).  A symbolic link at path is refused (NULL,
 * errno ELOOP).  Prefer fileio_begin/commit for anything a crash must not
 * leave half-written. */
FILE *fileio_fopen_w(const char *path);

/* fsync the folder holding path, so a rename into it is durable.  File
 * systems that cannot sync a folder (EINVAL) are accepted.  0 or -1 (errno). */
int fileio_sync_dir(const char *path);

/* mkdir -p: create path and every missing folder above it (mode 0755 less
 * the umask).  0 when path is (now) a folder; -1 with errno set and a message
 * naming the component that failed and strerror ("cannot create folder X:
 * Permission denied"; "X exists and is not a folder"). */
int fileio_mkdir_p(const char *path, char *err, size_t errlen);

/* The whole regular file at path, malloc'd with a NUL after its last byte
 * (so text can be parsed as a string), *n bytes long (the NUL not counted).
 * Opens through fileio_open_regular (a FIFO or a folder is refused, named, by
 * the role what).  max_bytes > 0 refuses a longer file ("is larger than …; is
 * it the right file?"); 0 means no limit.  NULL with a message on failure:
 * cannot open, too large, out of memory, read error.  The caller frees. */
char *fileio_slurp(const char *path, const char *what, size_t max_bytes, size_t *n, char *err, size_t errlen);

#endif
