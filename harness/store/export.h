/*
 * export.h — write a model's parameters by name to an HDF5 file for other
 * tools (`gatelab export RUN --out FILE.h5`; the command is cmd_export in
 * cli.h).  Layout in docs/files.md ("export").
 * Where things live: the writer in export.c; the tensor names it writes come
 * from the model's table (model/tensors.c).
 */
#ifndef GATELAB_HARNESS_EXPORT_H
#define GATELAB_HARNESS_EXPORT_H

#include <stddef.h>

#include "model/model.h"
#include "ckpt.h"

#define EXPORT_SCHEMA_VERSION 1

/* Write every parameter of m as a float32 dataset named by the tensor table,
 * the vocabulary (st->vocab, uint8; a BPE run adds its merges) and the config as root attributes to
 * path, through "path.tmp" renamed over path (an existing file is replaced
 * only when the export is complete).  config_ini may be NULL.  Returns 0, or
 * -1 with a message naming path and the failed HDF5 operation. */
int export_model(const char *path, const gl_model *m, const gl_train_state *st, const char *config_ini,
                 char *err, size_t errlen);

#endif
