/*
 * probecache.c — the activation cache of `gatelab probe` in HDF5
 * (probecache.h; layout in docs/files.md "probe cache").
 *
 * Writing: root attributes (schema, kind = "probe cache", run_id, source,
 * n_layer, n_head, n_kv_head, seq_len, n_vocab, loss, scored, config_ini),
 * /probe/tokens and /probe/targets (int32, P), /vocab/offset and
 * /vocab/bytes (the trace's /vocab layout), and one float32 dataset per
 * array with attributes axes and title.  Reading walks the file
 * (H5Ovisit) and keeps every float dataset that has an axes attribute, so a
 * new array needs no edit here.
 *
 * Not here: what the arrays hold (analysis/measure/probe.c), rendering (analysis/render/probe_html.c).
 */
#include "probecache.h"

#include "fileio.h"
#include "trace_h5.h"

#include <errno.h>
#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

pc_array *probecache_add(gl_probecache *pc, const char *path, const char *axes, const char *title, int rank,
                         const long *dims) {
    if (pc->n_arr >= PC_MAX_ARRAYS || rank < 1 || rank > 4) return NULL;
    pc_array *a = &pc->arr[pc->n_arr];
    memset(a, 0, sizeof *a);
    snprintf(a->path, sizeof a->path, "%s", path);
    snprintf(a->axes, sizeof a->axes, "%s", axes);
    snprintf(a->title, sizeof a->title, "%s", title);
    a->rank = rank;
    size_t n = 1;
    for (int i = 0; i < rank; i++) a->dims[i] = dims[i], n *= (size_t)dims[i];
    a->token_axis = -1;
    char tmp[64];
    snprintf(tmp, sizeof tmp, "%s", axes);
    int k = 0;
    for (char *s = strtok(tmp, ","); s; s = strtok(NULL, ","), k++)
        if (!strcmp(s, "token") && a->token_axis < 0) a->token_axis = k;
    a->data = calloc(n ? n : 1, sizeof(float));
    if (!a->data) return NULL;
    pc->n_arr++;
    return a;
}

const pc_array *probecache_find(const gl_probecache *pc, const char *path) {
    for (int i = 0; i < pc->n_arr; i++)
        if (!strcmp(pc->arr[i].path, path)) return &pc->arr[i];
    return NULL;
}

void probecache_free(gl_probecache *pc) {
    if (!pc) return;
    free(pc->tokens);
    free(pc->targets);
    free(pc->vocab_offset);
    free(pc->vocab_bytes);
    free(pc->config_ini);
    for (int i = 0; i < pc->n_arr; i++) free(pc->arr[i].data);
    memset(pc, 0, sizeof *pc);
}

/* ---- writing ---- */

static int pc_attr_str(hid_t obj, const char *name, const char *value) {
    hid_t type = H5Tcopy(H5T_C_S1), space = H5Screate(H5S_SCALAR), attr = H5I_INVALID_HID;
    int rc = -1;
    if (type < 0 || space < 0 || H5Tset_size(type, strlen(value) + 1) < 0) goto cleanup;
    attr = H5Acreate2(obj, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
    if (attr >= 0 && H5Awrite(attr, type, value) >= 0) rc = 0;
cleanup:
    if (attr >= 0) H5Aclose(attr);
    if (space >= 0) H5Sclose(space);
    if (type >= 0) H5Tclose(type);
    return rc;
}

static int pc_attr_num(hid_t obj, const char *name, hid_t ftype, hid_t mtype, const void *value) {
    hid_t space = H5Screate(H5S_SCALAR), attr = H5I_INVALID_HID;
    int rc = -1;
    if (space >= 0) attr = H5Acreate2(obj, name, ftype, space, H5P_DEFAULT, H5P_DEFAULT);
    if (attr >= 0 && H5Awrite(attr, mtype, value) >= 0) rc = 0;
    if (attr >= 0) H5Aclose(attr);
    if (space >= 0) H5Sclose(space);
    return rc;
}

/* Write a dataset at path (its groups created) with its axes (and title when not NULL). */
static int pc_dataset(hid_t file, const char *path, hid_t ftype, hid_t mtype, int rank, const long *dims,
                      const void *data, const char *axes, const char *title) {
    hsize_t hd[4];
    for (int i = 0; i < rank; i++) hd[i] = (hsize_t)dims[i];
    hid_t lcpl = H5Pcreate(H5P_LINK_CREATE), space = H5I_INVALID_HID, ds = H5I_INVALID_HID;
    int rc = -1;
    if (lcpl < 0 || H5Pset_create_intermediate_group(lcpl, 1) < 0) goto cleanup;
    if ((space = H5Screate_simple(rank, hd, NULL)) < 0) goto cleanup;
    if ((ds = H5Dcreate2(file, path, ftype, space, lcpl, H5P_DEFAULT, H5P_DEFAULT)) < 0) goto cleanup;
    if (H5Dwrite(ds, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0) goto cleanup;
    if (pc_attr_str(ds, "axes", axes) < 0 || (title && pc_attr_str(ds, "title", title) < 0)) goto cleanup;
    rc = 0;
cleanup:
    if (ds >= 0) H5Dclose(ds);
    if (space >= 0) H5Sclose(space);
    if (lcpl >= 0) H5Pclose(lcpl);
    return rc;
}

static int pc_read_attr_str(hid_t obj, const char *name, char *out, size_t n);

/* The output rule's "own kind" for a probe cache: an HDF5 file whose root
 * attribute kind is "probe cache" (so --out never replaces the registry, a
 * checkpoint, a trace or a model export). */
static int pc_is_cache(const char *path) {
    hid_t file = H5I_INVALID_HID;
    char kind[64];
    int own = 0;
    H5E_BEGIN_TRY {
        if (H5Fis_hdf5(path) > 0) file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    }
    H5E_END_TRY;
    if (file < 0) return 0;
    own = pc_read_attr_str(file, "kind", kind, sizeof kind) == 0 && !strcmp(kind, "probe cache");
    H5Fclose(file);
    return own;
}

int probecache_write(const char *path, const gl_probecache *pc, char *err, size_t errlen) {
    const char *what = "H5Fcreate";
    char tmp[4096 + 8];
    hid_t file = H5I_INVALID_HID;
    int rc = -1, made = 0, msg = 1;
    tr_quiet(); /* failures kept for the message (the system's reason: "No space left on device") */
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", path) >= sizeof tmp) {
        snprintf(err, errlen, "probe cache %s: path too long", path);
        return -1;
    }
    if (fileio_check_dest(path, "probe cache", pc_is_cache, err, errlen) ||
        fileio_clear_tmp(tmp, "probe cache", err, errlen))
        return -1;
    made = 1; /* from here a failure removes the temporary, however far HDF5 got */
    file = H5Fcreate(tmp, H5F_ACC_EXCL, H5P_DEFAULT, H5P_DEFAULT); /* O_EXCL: never through a link */
    if (file < 0) goto cleanup;
    what = "writing the root attributes";
    const int schema = PC_SCHEMA_VERSION;
    const long long scored = pc->scored;
    if (pc_attr_str(file, "kind", "probe cache") || pc_attr_num(file, "schema", H5T_STD_I32LE, H5T_NATIVE_INT, &schema) ||
        pc_attr_str(file, "run_id", pc->run_id) || pc_attr_str(file, "source", pc->source) ||
        pc_attr_str(file, "config_ini", pc->config_ini ? pc->config_ini : "") ||
        pc_attr_num(file, "n_layer", H5T_STD_I32LE, H5T_NATIVE_INT, &pc->n_layer) ||
        pc_attr_num(file, "n_head", H5T_STD_I32LE, H5T_NATIVE_INT, &pc->n_head) ||
        pc_attr_num(file, "n_kv_head", H5T_STD_I32LE, H5T_NATIVE_INT, &pc->n_kv_head) ||
        pc_attr_num(file, "seq_len", H5T_STD_I32LE, H5T_NATIVE_INT, &pc->seq_len) ||
        pc_attr_num(file, "n_vocab", H5T_STD_I32LE, H5T_NATIVE_INT, &pc->n_vocab) ||
        pc_attr_num(file, "loss", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &pc->loss) ||
        pc_attr_num(file, "scored", H5T_STD_I64LE, H5T_NATIVE_LLONG, &scored))
        goto cleanup;
    what = "writing /probe/tokens and /probe/targets";
    if (pc_dataset(file, "probe/tokens", H5T_STD_I32LE, H5T_NATIVE_INT, 1, &pc->n_tok, pc->tokens, "token", NULL) ||
        pc_dataset(file, "probe/targets", H5T_STD_I32LE, H5T_NATIVE_INT, 1, &pc->n_tok, pc->targets, "token", NULL))
        goto cleanup;
    what = "writing /vocab";
    long nv1 = pc->n_vocab + 1, nb = pc->vocab_offset[pc->n_vocab];
    if (pc_dataset(file, "vocab/offset", H5T_STD_I32LE, H5T_NATIVE_INT32, 1, &nv1, pc->vocab_offset,
                   "token id (V + 1 bounds)", NULL) ||
        pc_dataset(file, "vocab/bytes", H5T_STD_U8LE, H5T_NATIVE_UINT8, 1, &nb, pc->vocab_bytes, "byte", NULL))
        goto cleanup;
    for (int i = 0; i < pc->n_arr; i++) {
        const pc_array *a = &pc->arr[i];
        what = a->path;
        if (pc_dataset(file, a->path, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, a->rank, a->dims, a->data, a->axes, a->title))
            goto cleanup;
    }
    what = "H5Fclose";
    hid_t f = file;
    file = H5I_INVALID_HID; /* never closed twice: a failed close leaves nothing to close (tr_quiet) */
    if (H5Fclose(f) < 0) goto cleanup;
    msg = 0;
    if (fileio_sync_file(tmp, "probe cache", err, errlen)) goto cleanup;
    if (rename(tmp, path) != 0) {
        snprintf(err, errlen, "probe cache %s: cannot rename %s over it: %s", path, tmp, strerror(errno));
        goto cleanup;
    }
    made = 0;
    fileio_sync_dir(path); /* best effort: the cache is complete either way */
    rc = 0;
cleanup:
    if (file >= 0) H5Fclose(file);
    if (rc && msg) {
        char inner[1024];
        tr_fail(inner, sizeof inner, tmp, what, NULL);
        snprintf(err, errlen, "probe cache %s: %s (free disk space, or check the folder exists and is writable); "
                 "%s is as it was", path, inner, path);
    }
    if (made) unlink(tmp);
    return rc;
}

/* ---- reading ---- */

static int pc_read_attr_str(hid_t obj, const char *name, char *out, size_t n) {
    hid_t attr = H5I_INVALID_HID, type = H5I_INVALID_HID, mem = H5I_INVALID_HID;
    int rc = -1;
    out[0] = 0;
    H5E_BEGIN_TRY { attr = H5Aopen(obj, name, H5P_DEFAULT); }
    H5E_END_TRY;
    if (attr < 0) return -1;
    if ((type = H5Aget_type(attr)) < 0 || H5Tget_class(type) != H5T_STRING || H5Tis_variable_str(type) > 0) goto cleanup;
    size_t sz = H5Tget_size(type);
    char *buf = calloc(sz + 1, 1);
    if (!buf) goto cleanup;
    mem = H5Tcopy(H5T_C_S1);
    if (mem >= 0 && H5Tset_size(mem, sz) >= 0 && H5Aread(attr, mem, buf) >= 0) {
        snprintf(out, n, "%s", buf);
        rc = 0;
    }
    free(buf);
cleanup:
    if (mem >= 0) H5Tclose(mem);
    if (type >= 0) H5Tclose(type);
    H5Aclose(attr);
    return rc;
}

static int pc_read_attr_num(hid_t obj, const char *name, hid_t mtype, void *out) {
    hid_t attr = H5I_INVALID_HID;
    H5E_BEGIN_TRY { attr = H5Aopen(obj, name, H5P_DEFAULT); }
    H5E_END_TRY;
    if (attr < 0) return -1;
    int rc = H5Aread(attr, mtype, out) < 0 ? -1 : 0;
    H5Aclose(attr);
    return rc;
}

/* Read a 1-D dataset of n elements (n checked) into a new buffer. */
static void *pc_read_1d(hid_t file, const char *path, hid_t mtype, size_t esize, long *n) {
    hid_t ds = H5I_INVALID_HID, space = H5I_INVALID_HID;
    void *buf = NULL;
    H5E_BEGIN_TRY { ds = H5Dopen2(file, path, H5P_DEFAULT); }
    H5E_END_TRY;
    if (ds < 0) return NULL;
    hsize_t d[1];
    if ((space = H5Dget_space(ds)) >= 0 && H5Sget_simple_extent_ndims(space) == 1 &&
        H5Sget_simple_extent_dims(space, d, NULL) == 1 && (buf = malloc((d[0] ? d[0] : 1) * esize)) &&
        H5Dread(ds, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0) {
        free(buf);
        buf = NULL;
    }
    if (buf) *n = (long)d[0];
    if (space >= 0) H5Sclose(space);
    H5Dclose(ds);
    return buf;
}

typedef struct {
    gl_probecache *pc;
    int bad;
    char why[256];
} pc_visit;

#if H5_VERSION_GE(1, 12, 0)
typedef H5O_info2_t pc_oinfo;
#define PC_OVISIT(f, cb, d) H5Ovisit3(f, H5_INDEX_NAME, H5_ITER_NATIVE, cb, d, H5O_INFO_BASIC)
#else
typedef H5O_info_t pc_oinfo;
#define PC_OVISIT(f, cb, d) H5Ovisit2(f, H5_INDEX_NAME, H5_ITER_NATIVE, cb, d, H5O_INFO_BASIC)
#endif

static herr_t pc_visit_cb(hid_t obj, const char *name, const pc_oinfo *info, void *p) {
    pc_visit *v = p;
    if (info->type != H5O_TYPE_DATASET || !strncmp(name, "probe/", 6) || !strncmp(name, "vocab/", 6)) return 0;
    hid_t ds = H5Dopen2(obj, name, H5P_DEFAULT), space = H5I_INVALID_HID, type = H5I_INVALID_HID;
    if (ds < 0) return 0;
    char axes[64], title[128];
    int rc = 0;
    if (pc_read_attr_str(ds, "axes", axes, sizeof axes)) goto cleanup; /* not one of ours */
    if (pc_read_attr_str(ds, "title", title, sizeof title)) title[0] = 0;
    type = H5Dget_type(ds);
    space = H5Dget_space(ds);
    int rank = space >= 0 ? H5Sget_simple_extent_ndims(space) : -1;
    hsize_t hd[4];
    if (type < 0 || H5Tget_class(type) != H5T_FLOAT || rank < 1 || rank > 4 ||
        H5Sget_simple_extent_dims(space, hd, NULL) != rank) {
        snprintf(v->why, sizeof v->why, "dataset /%s is not a float array of rank 1..4", name);
        v->bad = 1;
        rc = -1;
        goto cleanup;
    }
    long dims[4];
    for (int i = 0; i < rank; i++) dims[i] = (long)hd[i];
    pc_array *a = probecache_add(v->pc, name, axes, title, rank, dims);
    if (!a || H5Dread(ds, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, a->data) < 0) {
        snprintf(v->why, sizeof v->why, "cannot read dataset /%s (out of memory or more than %d arrays)", name,
                 PC_MAX_ARRAYS);
        v->bad = 1;
        rc = -1;
    }
cleanup:
    if (type >= 0) H5Tclose(type);
    if (space >= 0) H5Sclose(space);
    H5Dclose(ds);
    return rc;
}

int probecache_read(const char *path, gl_probecache *pc, char *err, size_t errlen) {
    memset(pc, 0, sizeof *pc);
    hid_t file = H5I_INVALID_HID;
    char kind[64];
    const char *why = "it is not an HDF5 file gatelab can open";
    H5E_BEGIN_TRY { file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT); }
    H5E_END_TRY;
    if (file < 0) goto fail;
    why = "it has no root attribute kind = \"probe cache\" (write one with `gatelab probe`)";
    if (pc_read_attr_str(file, "kind", kind, sizeof kind) || strcmp(kind, "probe cache")) goto fail;
    why = "a root attribute (n_layer, n_head, n_kv_head, seq_len, n_vocab, loss, scored) is missing";
    long long scored = 0;
    if (pc_read_attr_num(file, "n_layer", H5T_NATIVE_INT, &pc->n_layer) ||
        pc_read_attr_num(file, "n_head", H5T_NATIVE_INT, &pc->n_head) ||
        pc_read_attr_num(file, "n_kv_head", H5T_NATIVE_INT, &pc->n_kv_head) ||
        pc_read_attr_num(file, "seq_len", H5T_NATIVE_INT, &pc->seq_len) ||
        pc_read_attr_num(file, "n_vocab", H5T_NATIVE_INT, &pc->n_vocab) ||
        pc_read_attr_num(file, "loss", H5T_NATIVE_DOUBLE, &pc->loss) ||
        pc_read_attr_num(file, "scored", H5T_NATIVE_LLONG, &scored))
        goto fail;
    pc->scored = (long)scored;
    pc_read_attr_str(file, "run_id", pc->run_id, sizeof pc->run_id);
    pc_read_attr_str(file, "source", pc->source, sizeof pc->source);
    long n1 = 0, n2 = 0, nv = 0, nb = 0;
    why = "/probe/tokens, /probe/targets or /vocab is missing or unreadable";
    pc->tokens = pc_read_1d(file, "probe/tokens", H5T_NATIVE_INT, sizeof(int), &n1);
    pc->targets = pc_read_1d(file, "probe/targets", H5T_NATIVE_INT, sizeof(int), &n2);
    pc->vocab_offset = pc_read_1d(file, "vocab/offset", H5T_NATIVE_INT32, sizeof(int32_t), &nv);
    pc->vocab_bytes = pc_read_1d(file, "vocab/bytes", H5T_NATIVE_UINT8, 1, &nb);
    if (!pc->tokens || !pc->targets || !pc->vocab_offset || !pc->vocab_bytes || n1 != n2 || nv != pc->n_vocab + 1)
        goto fail;
    pc->n_tok = n1;
    why = "/vocab/offset is not increasing from 0 to the length of /vocab/bytes";
    if (pc->vocab_offset[0] != 0 || pc->vocab_offset[pc->n_vocab] != nb) goto fail;
    for (int i = 0; i < pc->n_vocab; i++)
        if (pc->vocab_offset[i + 1] < pc->vocab_offset[i]) goto fail;
    why = "a token of /probe/tokens is outside the vocabulary";
    for (long i = 0; i < pc->n_tok; i++)
        if (pc->tokens[i] < 0 || pc->tokens[i] >= pc->n_vocab) goto fail;
    pc_visit v = {pc, 0, ""};
    if (PC_OVISIT(file, pc_visit_cb, &v) < 0 || v.bad) {
        snprintf(err, errlen, "probe cache %s: %s", path, v.why[0] ? v.why : "cannot list its datasets");
        H5Fclose(file);
        probecache_free(pc);
        return -1;
    }
    H5Fclose(file);
    return 0;
fail:
    snprintf(err, errlen, "probe cache %s: %s", path, why);
    if (file >= 0) H5Fclose(file);
    probecache_free(pc);
    return -1;
}
