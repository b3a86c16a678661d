/*
 * trace.c — write a run's trace.h5 and reopen it to resume (see trace.h;
 * layout in docs/files.md, "trace.h5"; reading back in trace_read.c).
 *
 * The file is closed between appends.  trace_create writes the whole file
 * (every group, dataset and attribute, the step axis at 0 rows, latest format
 * bounds so the superblock is version 3 and SWMR-capable) and closes it.  Each
 * append opens it in SWMR-write mode, extends every dataset along its
 * unlimited step axis, writes the rows (/step last), flushes and closes it.
 * Closing clears the superblock's "open for writing" flags, so outside the
 * milliseconds of an append the file on disk is a cleanly closed HDF5 file:
 * plain h5dump opens it while training runs and after a kill -9, and readers
 * that use SWMR (h5py swmr=True, trace_read) may also hold it open across
 * appends and refresh.  The SWMR-write open matters for those: it makes the
 * library order its metadata writes so that a concurrent SWMR reader never
 * sees a half-updated structure (HDF5 1.10 "Single Writer / Multiple Reader"
 * user guide).  /step's fill value is -1, so a reader drops a row whose
 * append was cut short.
 *
 * File locks: HDF5 1.10 flock()s a file it opens (shared for readers, SWMR
 * ones included, exclusive for writers) and keeps a reader's lock until the
 * reader closes.  A writer that honoured locks could never append while an
 * h5py session holds the trace open, so appends open the file with locking
 * off (H5Pset_file_locking); the superblock flags still stop a non-SWMR
 * reader from opening the file during an append.  When locking is forced on
 * (HDF5_USE_FILE_LOCKING=TRUE) and a reader holds a lock, the append retries
 * for about a second, then fails naming the file.
 *
 * Which gates a trace holds, their paths, axes and shapes come from the gate
 * table (model/gatekind.h): this file names no gate.
 *
 * Where things live: writing, appending and resuming here; reading a trace
 * back (trace_read, the SWMR open, the checks on untrusted files) in
 * trace_read.c; the helpers and dataset table the two share in trace_h5.h.
 *
 * Not here: choosing the probe batch or computing gates (the training loop
 * gathers them from the model's activations), analyses, the checkpoint.
 * This file, trace_read.c, probecache.c, export.c and import.c are the only
 * ones that include hdf5.h.
 */
#include "trace.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <hdf5.h>

#include "categories.h"
#include "fileio.h"
#include "trace_h5.h"

tr_spec tr_spec_of(int k) {
    static const tr_spec scalars[TR_GATE0] = {
        {NULL, "step", "step", 1}, {"loss", "train", "step", 1}, {"loss", "val", "step", 1}};
    if (k < TR_GATE0) return scalars[k];
    const gl_gate_info *gi = &gatekind_info[k - TR_GATE0];
    tr_spec sp = {gi->group, gi->dataset, "step", 1};
    for (int i = 0; i < 3; i++)
        if (gi->axis[i] != GAX_NONE) {
            size_t len = strlen(sp.axes);
            snprintf(sp.axes + len, sizeof sp.axes - len, ",%s", gatekind_axis_name(gi->axis[i]));
            sp.rank++;
        }
    return sp;
}

/* Chunk length of the 1-D per-step datasets (a row there is one number, so
 * one row per chunk would spend more on the index than on the data). */
#define TR_SCALAR_CHUNK 256
#define TR_ATTR_STR_MAX (1u << 20) /* a string attribute longer than this is not one gatelab wrote */

static const char *tr_axes_doc =
    "step: one row per evaluation, /step holds the completed optimiser steps; "
    "layer: block 0..n_layer-1; router: TSA router l (after block l, scaling block l+1), 0..n_layer-2; "
    "token: probe position, window w and position t at w*seq_len+t; kv_head: key/value head; "
    "coef: 0 = lambda1 (weight of V1), 1 = lambda2 (weight of the block's own v)";

/* Attempts and pause for opening the trace to append while a reader's lock
 * is in the way (only when locking is forced on, see the file comment). */
#define TR_OPEN_TRIES 10
#define TR_OPEN_PAUSE_NS 100000000L

struct gl_trace {
    long n_steps;
    long last_step;
    gl_trace_desc d; /* config_ini not kept */
    char path[4096];
};

/* ------------------------------------------------------------ HDF5 errors */

static herr_t tr_walk(unsigned n, const H5E_error2_t *e, void *data) {
    tr_walk_data *w = data;
    if (n == 0 && e && e->desc) {
        /* the sec2 driver's message is several lines with a time stamp and a
         * buffer address; keep its head and the system's reason ("No space
         * left on device") */
        const char *why = strstr(e->desc, "error message = '");
        const char *colon = strchr(e->desc, ':');
        if (why && colon && colon < why)
            snprintf(w->inner, sizeof w->inner, "%.*s: %.*s", (int)(colon - e->desc), e->desc,
                     (int)strcspn(why + 17, "'"), why + 17);
        else snprintf(w->inner, sizeof w->inner, "%s", e->desc);
    }
    if (e && e->min_num == H5E_CANTLOCKFILE) w->lock = 1;
    return 0;
}

/* The last failed HDF5 call's innermost message.  Kept by an error handler
 * at the moment of the failure, because every later HDF5 call (closing
 * handles on the way to cleanup:) clears the library's error stack.  gatelab
 * calls HDF5 from one thread. */
static tr_walk_data tr_last;

static herr_t tr_on_error(hid_t stack, void *data) {
    (void)data;
    tr_walk_data w = {"", 0};
    H5Ewalk2(stack, H5E_WALK_UPWARD, tr_walk, &w);
    tr_last = w;
    return 0;
}

/* Take the last failed call's message (see tr_last) and clear it. */
tr_walk_data tr_take_error(void) {
    tr_walk_data w = tr_last;
    memset(&tr_last, 0, sizeof tr_last);
    H5Eclear2(H5E_DEFAULT);
    return w;
}

/* Fill err with "path: op failed (what): innermost HDF5 message" and clear
 * the HDF5 error stack. */
void tr_fail(char *err, size_t errlen, const char *path, const char *op, const char *what) {
    tr_walk_data w = tr_take_error();
    snprintf(err, errlen, "%s: %s failed%s%s%s%s", path, op, what ? " for " : "", what ? what : "",
             w.inner[0] ? ": " : "", w.inner);
}

/* Called by every public entry: HDF5 prints nothing, failures are kept in
 * tr_last for the messages. */
void tr_quiet(void) {
    /* A file whose H5Fclose failed (a full disk) stays half-open inside the
     * library, and HDF5's atexit shutdown then loops or crashes trying to
     * flush it again.  Every file this code opens is closed before it
     * returns, so there is nothing for that shutdown to do: skip it.  Only
     * effective before the library's first use; later calls return an error,
     * ignored. */
    H5dont_atexit();
    H5Eset_auto2(H5E_DEFAULT, tr_on_error, NULL);
    memset(&tr_last, 0, sizeof tr_last);
}

/* File access properties for every open: latest format bounds (SWMR needs
 * superblock version 3) and the locking asked for (1: best effort, i.e. lock
 * where the file system can; 0: none).  H5Pset_file_locking came with
 * 1.10.7 / 1.12.1; older libraries lock as HDF5_USE_FILE_LOCKING says. */
hid_t tr_fapl(int lock) {
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    if (fapl < 0) return fapl;
    if (H5Pset_libver_bounds(fapl, H5F_LIBVER_LATEST, H5F_LIBVER_LATEST) < 0) goto fail;
#if (H5_VERS_MAJOR == 1 && H5_VERS_MINOR == 10 && H5_VERS_RELEASE >= 7) || H5_VERSION_GE(1, 12, 1)
    if (H5Pset_file_locking(fapl, lock ? 1 : 0, 1) < 0) goto fail;
#else
    (void)lock;
#endif
    return fapl;
fail:
    H5Pclose(fapl);
    return H5I_INVALID_HID;
}

/* ------------------------------------------------------------- helpers */

static int tr_has(const gl_trace_desc *d, int k) { return k < TR_GATE0 ? 1 : d->has[k - TR_GATE0]; }

/* Dimensions of one row (everything after the step axis); returns their count. */
int tr_row_dims(const gl_trace_desc *d, int k, hsize_t *dims) {
    if (k < TR_GATE0) return 0;
    long ld[3];
    int r = gatekind_dims((gl_gate)(k - TR_GATE0), d->n_layer, d->n_kv_head, d->n_probe, ld);
    for (int i = 0; i < r; i++) dims[i] = (hsize_t)(ld[i] > 0 ? ld[i] : 0);
    return r;
}

void tr_dataset_path(int k, char *out, size_t n) {
    const tr_spec sp = tr_spec_of(k);
    if (sp.group) snprintf(out, n, "/%s/%s", sp.group, sp.name);
    else snprintf(out, n, "/%s", sp.name);
}

/* Strings are stored fixed-length (schema 2): a variable-length string lives
 * in HDF5's global heap, whose object lengths the library trusts when it reads
 * them (a hostile file over-reads inside HDF5 1.10.8, tests/fuzz/README.md). */
static int tr_attr_str(hid_t obj, const char *name, const char *value) {
    int rc = -1;
    const char *v = value ? value : "";
    size_t n = strlen(v);
    hid_t type = H5Tcopy(H5T_C_S1), space = H5I_INVALID_HID, attr = H5I_INVALID_HID;
    if (type < 0) goto cleanup;
    if (H5Tset_size(type, n ? n : 1) < 0 || H5Tset_strpad(type, H5T_STR_NULLPAD) < 0 ||
        H5Tset_cset(type, H5T_CSET_UTF8) < 0)
        goto cleanup;
    space = H5Screate(H5S_SCALAR);
    if (space < 0) goto cleanup;
    attr = H5Acreate2(obj, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
    if (attr < 0) goto cleanup;
    if (H5Awrite(attr, type, n ? v : "") < 0) goto cleanup;
    rc = 0;
cleanup:
    if (attr >= 0) H5Aclose(attr);
    if (space >= 0) H5Sclose(space);
    if (type >= 0) H5Tclose(type);
    return rc;
}

static int tr_attr_int(hid_t obj, const char *name, int value) {
    int rc = -1;
    hid_t space = H5Screate(H5S_SCALAR), attr = H5I_INVALID_HID;
    if (space < 0) goto cleanup;
    attr = H5Acreate2(obj, name, H5T_STD_I32LE, space, H5P_DEFAULT, H5P_DEFAULT);
    if (attr < 0) goto cleanup;
    if (H5Awrite(attr, H5T_NATIVE_INT, &value) < 0) goto cleanup;
    rc = 0;
cleanup:
    if (attr >= 0) H5Aclose(attr);
    if (space >= 0) H5Sclose(space);
    return rc;
}

/* Read an integer attribute; returns 0, or -1 if absent or unreadable. */
int tr_read_attr_int(hid_t obj, const char *name, int *value) {
    if (H5Aexists(obj, name) <= 0) return -1;
    hid_t attr = H5Aopen(obj, name, H5P_DEFAULT);
    if (attr < 0) return -1;
    int rc = H5Aread(attr, H5T_NATIVE_INT, value) < 0 ? -1 : 0;
    H5Aclose(attr);
    return rc;
}

/* Read a string attribute into a malloc'd string; returns NULL if absent or
 * unreadable.  Fixed-length strings always; variable-length ones only when
 * allow_vlen (schema 1 traces wrote them), else NULL with *refused = 1. */
char *tr_read_attr_str(hid_t obj, const char *name, int allow_vlen, int *refused) {
    char *out = NULL;
    hid_t attr = H5I_INVALID_HID, ftype = H5I_INVALID_HID, mtype = H5I_INVALID_HID, space = H5I_INVALID_HID;
    *refused = 0;
    if (H5Aexists(obj, name) <= 0) return NULL;
    attr = H5Aopen(obj, name, H5P_DEFAULT);
    if (attr < 0) goto cleanup;
    ftype = H5Aget_type(attr);
    if (ftype < 0 || H5Tget_class(ftype) != H5T_STRING) goto cleanup;
    space = H5Aget_space(attr);
    if (space < 0 || H5Sget_simple_extent_npoints(space) != 1) goto cleanup;
    if (H5Tis_variable_str(ftype) > 0) {
        if (!allow_vlen) {
            *refused = 1;
            goto cleanup;
        }
        mtype = H5Tcopy(H5T_C_S1);
        H5Tset_size(mtype, H5T_VARIABLE);
        H5Tset_cset(mtype, H5Tget_cset(ftype));
        char *v = NULL;
        if (H5Aread(attr, mtype, &v) < 0) goto cleanup;
        out = strdup(v ? v : "");
        H5Dvlen_reclaim(mtype, space, H5P_DEFAULT, &v);
    } else {
        size_t n = H5Tget_size(ftype);
        if (n == 0 || n > TR_ATTR_STR_MAX) goto cleanup;
        mtype = H5Tcopy(H5T_C_S1);
        H5Tset_size(mtype, n + 1);
        H5Tset_cset(mtype, H5Tget_cset(ftype));
        out = calloc(n + 2, 1);
        if (out && H5Aread(attr, mtype, out) < 0) {
            free(out);
            out = NULL;
        }
    }
cleanup:
    if (space >= 0) H5Sclose(space);
    if (mtype >= 0) H5Tclose(mtype);
    if (ftype >= 0) H5Tclose(ftype);
    if (attr >= 0) H5Aclose(attr);
    return out;
}

static hid_t tr_file_type(int k) {
    return k == TR_STEP ? H5T_STD_I64LE : H5T_IEEE_F32LE;
}

/* ------------------------------------------------------------- writing */

/* Create dataset k at 0 rows: unlimited step axis, chunked one row per chunk
 * (TR_SCALAR_CHUNK rows for 1-D), shuffle + deflate 4 for the gate arrays. */
static hid_t tr_create_dataset(hid_t file, const gl_trace_desc *d, int k) {
    hid_t ds = H5I_INVALID_HID, space = H5I_INVALID_HID, dcpl = H5I_INVALID_HID, loc = H5I_INVALID_HID;
    hsize_t dims[4] = {0}, maxdims[4], chunk[4];
    hsize_t row[3];
    const tr_spec sp = tr_spec_of(k);
    int r = tr_row_dims(d, k, row);
    int rank = r + 1;
    assert(rank == sp.rank);
    maxdims[0] = H5S_UNLIMITED;
    chunk[0] = rank == 1 ? TR_SCALAR_CHUNK : 1;
    for (int i = 0; i < r; i++) dims[i + 1] = maxdims[i + 1] = chunk[i + 1] = row[i];

    space = H5Screate_simple(rank, dims, maxdims);
    dcpl = H5Pcreate(H5P_DATASET_CREATE);
    if (space < 0 || dcpl < 0) goto cleanup;
    if (H5Pset_chunk(dcpl, rank, chunk) < 0) goto cleanup;
    if (rank > 1 && (H5Pset_shuffle(dcpl) < 0 || H5Pset_deflate(dcpl, 4) < 0)) goto cleanup;
    if (k == TR_STEP) {
        int64_t fill = -1;
        if (H5Pset_fill_value(dcpl, H5T_NATIVE_INT64, &fill) < 0) goto cleanup;
    }
    if (sp.group) {
        htri_t ex = H5Lexists(file, sp.group, H5P_DEFAULT);
        if (ex < 0) goto cleanup;
        loc = ex ? H5Gopen2(file, sp.group, H5P_DEFAULT)
                 : H5Gcreate2(file, sp.group, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        if (loc < 0) goto cleanup;
    }
    ds = H5Dcreate2(loc >= 0 ? loc : file, sp.name, tr_file_type(k), space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    if (ds < 0) goto cleanup;
    if (tr_attr_str(ds, "axes", sp.axes) < 0) goto fail;
    if ((k == TR_TRAIN || k == TR_VAL) && tr_attr_str(ds, "units", "nats per token") < 0) goto fail;
    if (k == TR_STEP && tr_attr_str(ds, "units", "completed optimiser steps") < 0) goto fail;
    if (k >= TR_GATE0 && gatekind_info[k - TR_GATE0].coef &&
        tr_attr_str(ds, "coef", gatekind_info[k - TR_GATE0].coef) < 0)
        goto fail;
    goto cleanup;
fail:
    H5Dclose(ds);
    ds = H5I_INVALID_HID;
cleanup:
    if (loc >= 0) H5Gclose(loc);
    if (dcpl >= 0) H5Pclose(dcpl);
    if (space >= 0) H5Sclose(space);
    return ds;
}

/* Fixed-size probe dataset (P elements, contiguous). */
static int tr_write_probe(hid_t grp, const char *name, hid_t ftype, hid_t mtype, int P, const void *data,
                          const char *codes) {
    int rc = -1;
    hsize_t dims[1] = {(hsize_t)P};
    hid_t space = H5Screate_simple(1, dims, NULL), ds = H5I_INVALID_HID;
    if (space < 0) goto cleanup;
    ds = H5Dcreate2(grp, name, ftype, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (ds < 0) goto cleanup;
    if (P > 0 && H5Dwrite(ds, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0) goto cleanup;
    if (tr_attr_str(ds, "axes", "token") < 0) goto cleanup;
    if (codes && tr_attr_str(ds, "codes", codes) < 0) goto cleanup;
    rc = 0;
cleanup:
    if (ds >= 0) H5Dclose(ds);
    if (space >= 0) H5Sclose(space);
    return rc;
}

/* Elements of a 1-D dataset, or -1 when it is not 1-D or on error. */
long long tr_probe_len(hid_t ds) {
    hsize_t dims[1] = {0};
    hid_t sp = H5Dget_space(ds);
    int rank = sp >= 0 ? H5Sget_simple_extent_ndims(sp) : -1;
    if (rank == 1) H5Sget_simple_extent_dims(sp, dims, NULL);
    if (sp >= 0) H5Sclose(sp);
    return rank == 1 ? (long long)dims[0] : -1;
}

/* /vocab: the tokenizer's name, every token's bytes and class (trace.h). */
static int tr_write_vocab(hid_t file, const gl_trace_desc *d) {
    int rc = -1;
    const int V = d->n_vocab;
    const struct {
        const char *name;
        hid_t ftype, mtype;
        hsize_t n;
        const void *data;
        const char *axes, *codes;
    } sets[3] = {
        {"offset", H5T_STD_I32LE, H5T_NATIVE_INT32, (hsize_t)V + 1, d->vocab_offset, "token id (V + 1 bounds)", NULL},
        {"bytes", H5T_STD_U8LE, H5T_NATIVE_UINT8, (hsize_t)d->vocab_offset[V], d->vocab_bytes,
         "byte (token id's bytes: bytes[offset[id] .. offset[id+1]])", NULL},
        {"category", H5T_STD_U8LE, H5T_NATIVE_UINT8, (hsize_t)V, d->vocab_category, "token id",
         cat_codes_description()},
    };
    hid_t grp = H5Gcreate2(file, "vocab", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), space = H5I_INVALID_HID,
          ds = H5I_INVALID_HID;
    if (grp < 0 || tr_attr_str(grp, "tokenizer", d->tokenizer ? d->tokenizer : "") < 0 ||
        tr_attr_int(grp, "n_vocab", V) < 0)
        goto cleanup;
    for (int i = 0; i < 3; i++) {
        hsize_t dims[1] = {sets[i].n};
        space = H5Screate_simple(1, dims, NULL);
        if (space < 0) goto cleanup;
        ds = H5Dcreate2(grp, sets[i].name, sets[i].ftype, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        if (ds < 0) goto cleanup;
        if (sets[i].n > 0 && H5Dwrite(ds, sets[i].mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, sets[i].data) < 0) goto cleanup;
        if (tr_attr_str(ds, "axes", sets[i].axes) < 0) goto cleanup;
        if (sets[i].codes && tr_attr_str(ds, "codes", sets[i].codes) < 0) goto cleanup;
        H5Dclose(ds);
        H5Sclose(space);
        ds = space = H5I_INVALID_HID;
    }
    rc = 0;
cleanup:
    if (ds >= 0) H5Dclose(ds);
    if (space >= 0) H5Sclose(space);
    if (grp >= 0) H5Gclose(grp);
    return rc;
}

static int tr_check_desc(const char *path, const gl_trace_desc *d, char *err, size_t errlen) {
    const char *bad = NULL;
    if (d->n_layer < 1) bad = "n_layer must be at least 1";
    else if (d->n_probe < 0) bad = "n_probe must not be negative";
    for (int g = 0; g < GATE_COUNT && !bad; g++) {
        if (!d->has[g]) continue;
        const gl_gate_info *gi = &gatekind_info[g];
        if (gi->axis[2] == GAX_KV_HEAD && d->n_kv_head < 1) bad = "n_kv_head must be at least 1 for a per-head gate";
        else if (gi->axis[0] == GAX_ROUTER && d->n_router != d->n_layer - 1) bad = "n_router must be n_layer-1 when p is traced";
        else if (gi->axis[0] == GAX_ROUTER && d->n_router < 1) bad = "TSA traces need n_layer >= 2";
        else if (gi->axis[1] == GAX_TOKEN && d->n_probe < 1) bad = "gate traces need a probe batch (set log.probe_windows >= 1)";
    }
    if (bad) {
        snprintf(err, errlen, "%s: cannot create trace: %s", path, bad);
        return -1;
    }
    return 0;
}

int trace_create(gl_trace **out, const char *path, const gl_trace_desc *d, const int *probe_tokens,
                 const uint8_t *probe_category, char *err, size_t errlen) {
    int rc = -1;
    gl_trace *t = NULL;
    hid_t fapl = H5I_INVALID_HID, file = H5I_INVALID_HID, grp = H5I_INVALID_HID, ds = H5I_INVALID_HID;
    int made = 0; /* a half-written file is at path: remove it on failure */
    *out = NULL;
    tr_quiet();
    if (tr_check_desc(path, d, err, errlen) != 0) goto cleanup;
    t = calloc(1, sizeof *t);
    if (!t) {
        snprintf(err, errlen, "%s: out of memory creating the trace", path);
        goto cleanup;
    }
    t->d = *d;
    t->d.config_ini = NULL;
    t->d.vocab_offset = NULL; /* written once here; the handle keeps no borrowed pointer */
    t->d.vocab_bytes = t->d.vocab_category = NULL;
    t->d.tokenizer = NULL;
    t->last_step = -1;
    if ((size_t)snprintf(t->path, sizeof t->path, "%s", path) >= sizeof t->path) {
        snprintf(err, errlen, "%s: path too long for a trace", path);
        goto cleanup;
    }

    char probe_hex[65];
    trace_probe_sha256(probe_tokens, d->n_probe, probe_hex);
    fapl = tr_fapl(1);
    if (fapl < 0) {
        tr_fail(err, errlen, path, "H5Pset_libver_bounds/H5Pset_file_locking", NULL);
        goto cleanup;
    }
    /* a reader may still hold an old file here open: unlink it so that the
     * reader keeps the old inode instead of seeing it truncated; a link is
     * refused, and the create is exclusive (O_EXCL does not follow links) */
    if (fileio_refuse_link(path, "trace", err, errlen) != 0) goto cleanup;
    if (unlink(path) != 0 && errno != ENOENT) {
        snprintf(err, errlen, "%s: cannot replace the old trace: %s", path, strerror(errno));
        goto cleanup;
    }
    file = H5Fcreate(path, H5F_ACC_EXCL, H5P_DEFAULT, fapl);
    if (file < 0) {
        tr_fail(err, errlen, path, "H5Fcreate", "the trace file (does the run folder exist and is it writable?)");
        goto cleanup;
    }
    made = 1;
    if (tr_attr_int(file, "schema_version", TRACE_SCHEMA_VERSION) < 0 ||
        tr_attr_str(file, "config", d->config_ini) < 0 || tr_attr_str(file, "axes", tr_axes_doc) < 0 ||
        tr_attr_int(file, "n_layer", d->n_layer) < 0 || tr_attr_int(file, "n_kv_head", d->n_kv_head) < 0 ||
        tr_attr_int(file, "n_router", d->n_router) < 0 || tr_attr_int(file, "n_probe", d->n_probe) < 0 ||
        tr_attr_str(file, "writer", "gatelab") < 0 || tr_attr_int(file, "vocab_size", d->vocab_size) < 0 ||
        tr_attr_str(file, "split", d->split) < 0 || tr_attr_str(file, "probe_sha256", probe_hex) < 0) {
        tr_fail(err, errlen, path, "H5Acreate2/H5Awrite", "the root attributes");
        goto cleanup;
    }
    grp = H5Gcreate2(file, "probe", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (grp < 0) {
        tr_fail(err, errlen, path, "H5Gcreate2", "/probe");
        goto cleanup;
    }
    if (tr_write_probe(grp, "tokens", H5T_STD_I32LE, H5T_NATIVE_INT, d->n_probe, probe_tokens, NULL) < 0) {
        tr_fail(err, errlen, path, "writing", "/probe/tokens");
        goto cleanup;
    }
    if (tr_write_probe(grp, "category", H5T_STD_U8LE, H5T_NATIVE_UINT8, d->n_probe, probe_category,
                       cat_codes_description()) < 0) {
        tr_fail(err, errlen, path, "writing", "/probe/category");
        goto cleanup;
    }
    if (d->n_vocab > 0 && tr_write_vocab(file, d) < 0) {
        tr_fail(err, errlen, path, "writing", "/vocab");
        goto cleanup;
    }
    for (int k = 0; k < TR_N; k++) {
        if (!tr_has(d, k)) continue;
        ds = tr_create_dataset(file, d, k);
        if (ds < 0) {
            char name[64];
            tr_dataset_path(k, name, sizeof name);
            tr_fail(err, errlen, path, "H5Dcreate2", name);
            goto cleanup;
        }
        H5Dclose(ds);
        ds = H5I_INVALID_HID;
    }
    H5Gclose(grp);
    grp = H5I_INVALID_HID;
    herr_t closed = H5Fclose(file);
    file = H5I_INVALID_HID;
    if (closed < 0) {
        tr_fail(err, errlen, path, "H5Fclose", "the new trace");
        goto cleanup;
    }
    *out = t;
    t = NULL;
    rc = 0;
cleanup:
    if (ds >= 0) H5Dclose(ds);
    if (grp >= 0) H5Gclose(grp);
    if (file >= 0) H5Fclose(file);
    if (fapl >= 0) H5Pclose(fapl);
    if (made && rc != 0) unlink(path);
    free(t);
    return rc;
}

/* Open path for appending: SWMR write, no file locking (file comment).  If
 * the open fails because a lock is held anyway (locking forced on by
 * HDF5_USE_FILE_LOCKING), try TR_OPEN_TRIES times TR_OPEN_PAUSE_NS apart.
 * Returns the file id, or H5I_INVALID_HID with a message naming path and
 * `what` (the step being written). */
static hid_t tr_open_write(const char *path, const char *what, char *err, size_t errlen) {
    hid_t f = H5I_INVALID_HID, fapl;
    if (fileio_refuse_link(path, "trace", err, errlen) != 0) return f;
    if ((fapl = tr_fapl(0)) < 0) {
        tr_fail(err, errlen, path, "H5Pset_libver_bounds/H5Pset_file_locking", what);
        return f;
    }
    for (int i = 0; i < TR_OPEN_TRIES; i++) {
        f = H5Fopen(path, H5F_ACC_RDWR | H5F_ACC_SWMR_WRITE, fapl);
        if (f >= 0) break;
        tr_walk_data w = tr_take_error();
        if (access(path, F_OK) != 0) {
            snprintf(err, errlen, "%s: cannot open the trace to append %s: %s (was the run folder moved or "
                     "deleted?)", path, what, strerror(errno));
            break;
        }
        if (!w.lock) {
            snprintf(err, errlen, "%s: H5Fopen (SWMR write) failed for %s: %s%s", path, what, w.inner,
                     strstr(w.inner, "already open") ? " (another process writes this trace, or one was killed "
                                                       "while appending: h5clear -s clears the flag)"
                                                     : "");
            break;
        }
        if (i + 1 == TR_OPEN_TRIES) {
            snprintf(err, errlen, "%s: cannot append %s: another program holds a lock on the file (%s) and "
                     "file locking is forced on; %d tries over %.1f s.  Close that reader, or unset "
                     "HDF5_USE_FILE_LOCKING", path, what, w.inner, TR_OPEN_TRIES,
                     (TR_OPEN_TRIES - 1) * (double)TR_OPEN_PAUSE_NS * 1e-9);
            break;
        }
        struct timespec pause = {0, TR_OPEN_PAUSE_NS};
        nanosleep(&pause, NULL);
    }
    H5Pclose(fapl);
    return f;
}

/* Extend dataset k of an open file from row0 to row0 + n rows and write
 * those n rows from buf.  Returns 0 or -1 (HDF5 error stack set). */
static int tr_write_rows(hid_t file, const gl_trace_desc *d, int k, hsize_t row0, hsize_t n, const void *buf) {
    int rc = -1;
    char name[64];
    hsize_t dims[4], start[4] = {0}, count[4];
    hsize_t row[3];
    int r = tr_row_dims(d, k, row);
    dims[0] = row0 + n;
    start[0] = row0;
    count[0] = n;
    for (int i = 0; i < r; i++) dims[i + 1] = count[i + 1] = row[i];
    hid_t ds = H5I_INVALID_HID, fs = H5I_INVALID_HID, ms = H5I_INVALID_HID;
    tr_dataset_path(k, name, sizeof name);
    ds = H5Dopen2(file, name, H5P_DEFAULT);
    if (ds < 0 || H5Dset_extent(ds, dims) < 0) goto cleanup;
    fs = H5Dget_space(ds);
    if (fs < 0 || H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL) < 0) goto cleanup;
    ms = H5Screate_simple(r + 1, count, NULL);
    if (ms < 0) goto cleanup;
    hid_t mtype = k == TR_STEP ? H5T_NATIVE_INT64 : H5T_NATIVE_FLOAT;
    if (H5Dwrite(ds, mtype, ms, fs, H5P_DEFAULT, buf) < 0) goto cleanup;
    rc = 0;
cleanup:
    if (ms >= 0) H5Sclose(ms);
    if (fs >= 0) H5Sclose(fs);
    if (ds >= 0) H5Dclose(ds);
    return rc;
}

/* Rows of /step in an open trace, or -1 on error. */
static long tr_rows_on_disk(hid_t file) {
    hsize_t dims[1] = {0};
    hid_t ds = H5Dopen2(file, "/step", H5P_DEFAULT);
    hid_t sp = ds >= 0 ? H5Dget_space(ds) : H5I_INVALID_HID;
    int rank = sp >= 0 ? H5Sget_simple_extent_dims(sp, dims, NULL) : -1;
    if (sp >= 0) H5Sclose(sp);
    if (ds >= 0) H5Dclose(ds);
    return rank == 1 ? (long)dims[0] : -1;
}

/* Keep a copy of the trace as it is before an append, as path.prev (written
 * to path.prev.tmp, fsync'd, renamed).  An append that fails part-way — a
 * disk that fills inside HDF5's metadata writes — can leave a block of
 * trace.h5 torn for good; trace_reopen then rebuilds from the copy.  The copy
 * is the size of the trace (for the runs of experiments/paper ~0.4 MB) and is
 * rewritten at every evaluation.  Returns 0, or -1 with a message (the trace
 * itself untouched). */
static int tr_backup(const char *path, const char *what, char *err, size_t errlen) {
    char prev[4096], why[8200];
    if ((size_t)snprintf(prev, sizeof prev, "%s.prev", path) >= sizeof prev) {
        snprintf(err, errlen, "%s: path too long", path);
        return -1;
    }
    fileio_out out = {0};
    int in = -1, rc = -1;
    if (fileio_refuse_link(path, "trace", why, sizeof why) != 0) goto done;
    if ((in = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
        snprintf(why, sizeof why, "%s: %s", path, strerror(errno));
        goto done;
    }
    if (fileio_begin(&out, prev, "copy of the trace", why, sizeof why) != 0) goto done;
    char buf[1 << 16];
    for (;;) {
        ssize_t r = read(in, buf, sizeof buf);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            snprintf(why, sizeof why, "%s: %s", path, strerror(errno));
            goto done;
        }
        if (r == 0) break;
        if (fwrite(buf, 1, (size_t)r, out.f) != (size_t)r) {
            snprintf(why, sizeof why, "%s: %s", out.tmp, strerror(errno));
            goto done;
        }
    }
    if (fileio_commit(&out, "copy of the trace", why, sizeof why) != 0) goto done;
    rc = 0;
done:
    if (rc != 0)
        snprintf(err, errlen, "%s: cannot keep a copy of the trace before appending %s (%s); the trace is "
                 "unchanged", path, what, why);
    if (in >= 0) close(in);
    fileio_abort(&out);
    return rc;
}

/* Append n rows: steps (n), and for each dataset k the trace has, bufs[k]
 * holding n rows (bufs[TR_STEP] is ignored).  Opens the file, writes every
 * data row and /step last, flushes and closes it; t's counters advance only
 * when all of that succeeded.  Returns 0, or -1 with a message naming path,
 * the step(s) and the operation. */
static int tr_append_rows(gl_trace *t, long n, const int64_t *steps, const void *const *bufs, int backup,
                          char *err, size_t errlen) {
    int rc = -1;
    hid_t file = H5I_INVALID_HID;
    char what[96];
    assert(n >= 1);
    if (n == 1) snprintf(what, sizeof what, "step %ld", (long)steps[0]);
    else snprintf(what, sizeof what, "steps %ld to %ld", (long)steps[0], (long)steps[n - 1]);

    if (backup && tr_backup(t->path, what, err, errlen) != 0) goto cleanup;
    file = tr_open_write(t->path, what, err, errlen);
    if (file < 0) goto cleanup;
    /* the file is not held open between appends: make sure nobody else
     * appended to it in the meantime (two runs writing one trace) */
    long on_disk = tr_rows_on_disk(file);
    if (on_disk < 0) {
        tr_fail(err, errlen, t->path, "H5Dopen2/H5Dget_space", "/step");
        goto cleanup;
    }
    if (on_disk != t->n_steps) {
        snprintf(err, errlen, "%s: cannot append %s: /step has %ld rows on disk but this run wrote %ld; another "
                 "process is writing or rewrote this trace", t->path, what, on_disk, t->n_steps);
        goto cleanup;
    }
    /* every data row first, /step last: a reader treats a row whose /step is
     * still the fill value -1 as not written */
    for (int i = 1; i <= TR_N; i++) {
        int k = i % TR_N;
        if (!tr_has(&t->d, k)) continue;
        const void *buf = k == TR_STEP ? (const void *)steps : bufs[k];
        if (tr_write_rows(file, &t->d, k, (hsize_t)t->n_steps, (hsize_t)n, buf) != 0) {
            char name[64], at[192];
            tr_dataset_path(k, name, sizeof name);
            snprintf(at, sizeof at, "%s at %s", name, what);
            tr_fail(err, errlen, t->path, "H5Dopen2/H5Dset_extent/H5Dwrite", at);
            goto cleanup;
        }
    }
    if (H5Fflush(file, H5F_SCOPE_LOCAL) < 0) {
        tr_fail(err, errlen, t->path, "H5Fflush", what);
        goto cleanup;
    }
    herr_t closed = H5Fclose(file);
    file = H5I_INVALID_HID;
    if (closed < 0) {
        tr_fail(err, errlen, t->path, "H5Fclose", what);
        goto cleanup;
    }
    t->n_steps += n;
    t->last_step = (long)steps[n - 1];
    rc = 0;
cleanup:
    if (file >= 0) {
        H5Fclose(file);
        H5Eclear2(H5E_DEFAULT);
    }
    return rc;
}

int trace_append(gl_trace *t, long step, float train_loss, float val_loss, const float *const gates[GATE_COUNT],
                 char *err, size_t errlen) {
    assert(t);
    tr_quiet();
    const void *bufs[TR_N];
    int64_t step64 = step;
    bufs[TR_STEP] = &step64;
    bufs[TR_TRAIN] = &train_loss;
    bufs[TR_VAL] = &val_loss;
    for (int g = 0; g < GATE_COUNT; g++) bufs[TR_GATE0 + g] = gates ? gates[g] : NULL;
    if (step <= t->last_step) {
        snprintf(err, errlen, "%s: step %ld is not after the last traced step %ld", t->path, step, t->last_step);
        return -1;
    }
    for (int k = 0; k < TR_N; k++) {
        if (tr_has(&t->d, k) && !bufs[k]) {
            char name[64];
            tr_dataset_path(k, name, sizeof name);
            snprintf(err, errlen, "%s: step %ld: the trace has %s but no data was given for it", t->path, step, name);
            return -1;
        }
    }
    return tr_append_rows(t, 1, &step64, bufs, 1, err, errlen);
}

long trace_n_steps(const gl_trace *t) { return t ? t->n_steps : 0; }
long trace_last_step(const gl_trace *t) { return t ? t->last_step : -1; }

void trace_close(gl_trace *t) { free(t); }

/* ------------------------------------------------------------- resuming */

/* The first way the trace read into old differs from what this run records
 * (want, with its probe tokens), written into why; 0 when they agree.  A
 * field the trace does not record (schema < 3) is not compared. */
static int tr_identity_diff(const gl_trace_data *old, const gl_trace_desc *want, const int *tokens, char *why,
                            size_t n) {
    const struct { const char *name; int have, want; } ints[] = {
        {"n_layer", old->n_layer, want->n_layer},
        {"n_kv_head", old->n_kv_head, want->n_kv_head},
        {"n_router", old->n_router, want->n_router},
        {"n_probe (probe tokens = log.probe_windows x model.seq_len)", old->n_probe, want->n_probe},
    };
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
        if (ints[i].have != ints[i].want) {
            snprintf(why, n, "%s: %d in the trace, %d in this run", ints[i].name, ints[i].have, ints[i].want);
            return 1;
        }
    for (int g = 0; g < GATE_COUNT; g++)
        if ((old->gate[g] != NULL) != (want->has[g] != 0)) {
            snprintf(why, n, "gate %s: %s in the trace, %s in this run", gatekind_info[g].key,
                     old->gate[g] ? "recorded" : "absent", want->has[g] ? "recorded" : "absent");
            return 1;
        }
    if (old->vocab_size && want->vocab_size && old->vocab_size != want->vocab_size) {
        snprintf(why, n, "vocab_size: %d in the trace, %d in this run's data", old->vocab_size, want->vocab_size);
        return 1;
    }
    if (old->split[0] && want->split && strcmp(old->split, want->split)) {
        snprintf(why, n, "split: \"%s\" in the trace, \"%s\" in this run", old->split, want->split);
        return 1;
    }
    for (int i = 0; i < old->n_probe; i++)
        if (old->probe_tokens[i] != tokens[i]) {
            snprintf(why, n, "probe tokens: token %d is %d in the trace, %d in this run (other data or another "
                     "split)", i, old->probe_tokens[i], tokens[i]);
            return 1;
        }
    return 0;
}

int trace_reopen(gl_trace **out, const char *path, long last_step, char *err, size_t errlen) {
    return trace_resume(out, path, last_step, NULL, NULL, err, errlen);
}

int trace_resume(gl_trace **out, const char *path, long last_step, const gl_trace_desc *want,
                 const int *probe_tokens, char *err, size_t errlen) {
    int rc = -1;
    gl_trace_data old;
    gl_trace *t = NULL;
    int64_t *steps = NULL;
    char tmp[4096];
    *out = NULL;
    memset(&old, 0, sizeof old);
    if (trace_read(path, &old, err, errlen) != 0) {
        /* an append that failed part-way may have torn the file (or the file
         * was deleted): the copy taken before the last append (tr_backup)
         * holds every earlier row */
        char prev[4200], perr[512];
        int missing = access(path, F_OK) != 0;
        snprintf(prev, sizeof prev, "%s.prev", path);
        if (access(prev, R_OK) != 0) return -1;
        if (trace_read(prev, &old, perr, sizeof perr) != 0) {
            snprintf(err + strlen(err), errlen - strlen(err), "; and its copy %s is unreadable too: %s", prev, perr);
            return -1;
        }
        if (missing)
            fprintf(stderr, "gatelab: %s is missing; rebuilding it from the copy taken before its last append, %s "
                    "(%d rows)\n", path, prev, old.n_steps);
        else
            fprintf(stderr, "gatelab: %s\n  is unreadable; resuming from the copy taken before its last append, "
                    "%s (%d rows)\n", err, prev, old.n_steps);
    }
    if (want) {
        char why[512];
        if (tr_identity_diff(&old, want, probe_tokens, why, sizeof why)) {
            snprintf(err, errlen, "%s is not a trace of what this run records: %s; nothing was appended", path, why);
            rc = -2;
            goto cleanup;
        }
    }
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", path) >= sizeof tmp) {
        snprintf(err, errlen, "%s: path too long", path);
        goto cleanup;
    }
    if (fileio_clear_tmp(tmp, "trace", err, errlen) != 0) goto cleanup;
    gl_trace_desc d = {
        .n_layer = old.n_layer, .n_kv_head = old.n_kv_head, .n_router = old.n_router, .n_probe = old.n_probe,
        .config_ini = old.config_ini,
        .n_vocab = old.n_vocab, .vocab_offset = old.vocab_offset, .vocab_bytes = old.vocab_bytes,
        .vocab_category = old.vocab_category, .tokenizer = old.tokenizer,
        .vocab_size = old.vocab_size, .split = old.split,
    };
    if (want) { /* an older schema's trace gains the identity it matched */
        d.vocab_size = want->vocab_size;
        d.split = want->split;
    }
    for (int g = 0; g < GATE_COUNT; g++) d.has[g] = old.gate[g] != NULL;
    if (trace_create(&t, tmp, &d, old.probe_tokens, old.probe_category, err, errlen) != 0) goto cleanup;
    /* the rows to keep, written in one append; steps are strictly increasing
     * in a trace this file wrote, check anyway since appends rely on it */
    long keep = 0;
    while (keep < old.n_steps && old.step[keep] <= last_step) {
        if (keep > 0 && old.step[keep] <= old.step[keep - 1]) {
            snprintf(err, errlen, "%s: row %ld has step %ld after step %ld: steps must increase", path, keep,
                     old.step[keep], old.step[keep - 1]);
            goto cleanup;
        }
        keep++;
    }
    if (keep > 0) {
        steps = malloc((size_t)keep * sizeof *steps);
        if (!steps) {
            snprintf(err, errlen, "%s: out of memory resuming the trace", path);
            goto cleanup;
        }
        for (long i = 0; i < keep; i++) steps[i] = old.step[i];
        const void *bufs[TR_N] = {NULL, old.train_loss, old.val_loss};
        for (int g = 0; g < GATE_COUNT; g++) bufs[TR_GATE0 + g] = old.gate[g];
        /* the temporary is new: a failure leaves the old trace, no copy needed */
        if (tr_append_rows(t, keep, steps, bufs, 0, err, errlen) != 0) goto cleanup;
    }
    if (rename(tmp, path) != 0) {
        snprintf(err, errlen, "%s: cannot rename %s over it: %s; the old trace is unchanged", path, tmp,
                 strerror(errno));
        goto cleanup;
    }
    snprintf(t->path, sizeof t->path, "%s", path);
    *out = t;
    t = NULL;
    rc = 0;
cleanup:
    if (t) {
        trace_close(t);
        unlink(tmp);
    }
    free(steps);
    trace_data_free(&old);
    return rc;
}
