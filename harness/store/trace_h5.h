/*
 * trace_h5.h — what trace.c (writing, resuming) and trace_read.c (reading)
 * share: the table of datasets, the HDF5 error capture and the attribute and
 * shape helpers.  Private to those two files; everything else goes through
 * trace.h and never sees an HDF5 type.
 */
#ifndef GATELAB_STORE_TRACE_H5_H
#define GATELAB_STORE_TRACE_H5_H

#include <stddef.h>

#include <hdf5.h>

#include "trace.h"

/* Datasets: the three per-step scalars, then one per gate kind (k = TR_GATE0 + g). */
enum { TR_STEP = 0, TR_TRAIN, TR_VAL, TR_GATE0, TR_N = TR_GATE0 + GATE_COUNT };

typedef struct {
    const char *group; /* NULL: root */
    const char *name;
    char axes[64];     /* stored as the dataset's "axes" attribute, e.g. "step,layer,token,kv_head" */
    int rank;          /* including the step axis */
} tr_spec;

/* Attempts and pause for opening the trace to read (see tr_open_read). */
#ifndef TR_READ_TRIES /* the fuzz build sets 1: a cut-short file is its everyday input */
#define TR_READ_TRIES 25 /* up to 1 s: an append under a sanitizer or a loaded machine took > 100 ms */
#endif
#define TR_READ_PAUSE_NS 40000000L
#ifndef TR_METADATA_READ_ATTEMPTS
#define TR_METADATA_READ_ATTEMPTS 31
#endif

typedef struct {
    char inner[256];
    int lock; /* some frame says the file could not be locked */
} tr_walk_data;

/* The specs of dataset k (the gates' from model/gatekind.h). */
tr_spec tr_spec_of(int k);
/* "/group/name" of dataset k. */
void tr_dataset_path(int k, char *out, size_t n);
/* Dimensions of one row of dataset k (everything after the step axis); returns their count. */
int tr_row_dims(const gl_trace_desc *d, int k, hsize_t *dims);

/* Called by every public entry: HDF5 prints nothing, failures are kept for the messages. */
void tr_quiet(void);
/* Take the last failed HDF5 call's message and clear it. */
tr_walk_data tr_take_error(void);
/* Fill err with "path: op failed (what): innermost HDF5 message" and clear the HDF5 error stack. */
void tr_fail(char *err, size_t errlen, const char *path, const char *op, const char *what);
/* File access properties: latest format bounds, locking as asked (1: best effort, 0: none). */
hid_t tr_fapl(int lock);

/* Read an integer attribute; returns 0, or -1 if absent or unreadable. */
int tr_read_attr_int(hid_t obj, const char *name, int *value);
/* Read a string attribute into a malloc'd string (NULL if absent or unreadable; a
 * variable-length one only when allow_vlen, else NULL with *refused = 1). */
char *tr_read_attr_str(hid_t obj, const char *name, int allow_vlen, int *refused);
/* Elements of a 1-D dataset, or -1 when it is not 1-D or on error. */
long long tr_probe_len(hid_t ds);

#endif
