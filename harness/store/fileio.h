/*
 * fileio.h — open a file that must be a regular file (data, text, manifest,
 * checkpoint, word list) without hanging on a FIFO or misreading a folder.
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

#endif
