/*
 * trace_read.c — read a run's trace.h5 back (trace.h: trace_read,
 * trace_read_flags; layout in docs/files.md, "trace.h5").
 *
 * A trace is untrusted input: it may be one being appended to, one whose
 * writer was killed inside an append, one cut short by a full disk, or one
 * another tool wrote.  So the file is opened in SWMR-read mode with bounded
 * retries (tr_open_read), every shape is checked against the root
 * attributes, every category and vocabulary offset against its range, and
 * rows whose append did not complete (/step still -1) are dropped.
 *
 * Not here: writing, appending and resuming (trace.c); the dataset table and
 * helpers shared with the writer are in trace_h5.h.
 */
#include "trace.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <hdf5.h>

#include "categories.h"
#include "sha256.h"
#include "trace_h5.h"

/* Floats (or steps) in one row of dataset k. */
static size_t tr_row_size(const gl_trace_desc *d, int k) {
    hsize_t dims[3];
    int r = tr_row_dims(d, k, dims);
    size_t n = 1;
    for (int i = 0; i < r; i++) n *= (size_t)dims[i];
    return n;
}

/* /vocab of an open trace into out (untrusted: offsets must rise from 0 to
 * the byte count, classes be codes).  No /vocab: 0 with out->n_vocab = 0.
 * Returns 0, or -1 with a message naming path. */
static int tr_read_vocab(hid_t f, const char *path, gl_trace_data *out, char *err, size_t errlen) {
    int rc = -1, V = 0;
    hid_t grp = H5I_INVALID_HID, dsv[3] = {H5I_INVALID_HID, H5I_INVALID_HID, H5I_INVALID_HID};
    htri_t ex = H5Lexists(f, "vocab", H5P_DEFAULT);
    if (ex <= 0) return ex < 0 ? (tr_fail(err, errlen, path, "H5Lexists", "/vocab"), -1) : 0;
    grp = H5Gopen2(f, "vocab", H5P_DEFAULT);
    if (grp < 0 || tr_read_attr_int(grp, "n_vocab", &V) != 0) {
        snprintf(err, errlen, "%s: /vocab has no n_vocab attribute: not a trace this gatelab wrote", path);
        goto cleanup;
    }
    int refused = 0;
    char *tok = tr_read_attr_str(grp, "tokenizer", 0, &refused);
    snprintf(out->tokenizer, sizeof out->tokenizer, "%s", tok ? tok : "");
    free(tok);
    static const char *const names[3] = {"offset", "bytes", "category"};
    long long len[3];
    for (int i = 0; i < 3; i++) {
        dsv[i] = H5Dopen2(grp, names[i], H5P_DEFAULT);
        len[i] = dsv[i] >= 0 ? tr_probe_len(dsv[i]) : -1;
        if (len[i] < 0) {
            snprintf(err, errlen, "%s: /vocab/%s is missing or not 1-D: not a trace this gatelab wrote", path, names[i]);
            goto cleanup;
        }
    }
    if (V < 1 || V > (1 << 20) || len[0] != (long long)V + 1 || len[2] != V || len[1] > (1LL << 30)) {
        snprintf(err, errlen, "%s: /vocab holds %lld offsets and %lld classes for n_vocab = %d: not a trace this "
                 "gatelab wrote", path, len[0], len[2], V);
        goto cleanup;
    }
    out->vocab_offset = malloc(((size_t)V + 1) * sizeof *out->vocab_offset);
    out->vocab_bytes = malloc(len[1] > 0 ? (size_t)len[1] : 1);
    out->vocab_category = malloc((size_t)V);
    if (!out->vocab_offset || !out->vocab_bytes || !out->vocab_category) {
        snprintf(err, errlen, "%s: out of memory reading /vocab", path);
        goto cleanup;
    }
    if (H5Dread(dsv[0], H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, out->vocab_offset) < 0 ||
        (len[1] > 0 && H5Dread(dsv[1], H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, out->vocab_bytes) < 0) ||
        H5Dread(dsv[2], H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, out->vocab_category) < 0) {
        tr_fail(err, errlen, path, "H5Dread", "/vocab");
        goto cleanup;
    }
    int ok = out->vocab_offset[0] == 0 && out->vocab_offset[V] == len[1];
    for (int i = 0; ok && i < V; i++)
        ok = out->vocab_offset[i + 1] >= out->vocab_offset[i] && out->vocab_category[i] < CAT_COUNT;
    if (!ok) {
        snprintf(err, errlen, "%s: /vocab/offset does not rise from 0 to the %lld bytes, or a /vocab/category is "
                 "outside %s: not a trace this gatelab wrote", path, len[1], cat_codes_description());
        goto cleanup;
    }
    out->n_vocab = V;
    rc = 0;
cleanup:
    for (int i = 0; i < 3; i++)
        if (dsv[i] >= 0) H5Dclose(dsv[i]);
    if (grp >= 0) H5Gclose(grp);
    return rc;
}


void trace_data_free(gl_trace_data *d) {
    if (!d) return;
    free(d->step);
    free(d->train_loss);
    free(d->val_loss);
    for (int g = 0; g < GATE_COUNT; g++) free(d->gate[g]);
    free(d->probe_tokens);
    free(d->probe_category);
    free(d->config_ini);
    free(d->vocab_offset);
    free(d->vocab_bytes);
    free(d->vocab_category);
    free(d->split);
    memset(d, 0, sizeof *d);
}

/* 1 if /group/name exists, 0 if not, -1 on error. */
static int tr_exists(hid_t file, int k) {
    const tr_spec sp = tr_spec_of(k);
    if (sp.group) {
        htri_t g = H5Lexists(file, sp.group, H5P_DEFAULT);
        if (g <= 0) return g < 0 ? -1 : 0;
    }
    char name[64];
    tr_dataset_path(k, name, sizeof name);
    htri_t e = H5Lexists(file, name, H5P_DEFAULT);
    return e < 0 ? -1 : (e > 0);
}

/* Read the first n rows of an open dataset into buf (memory type mtype). */
static int tr_read_rows(hid_t ds, int rank, const hsize_t *dims, hsize_t n, hid_t mtype, void *buf) {
    if (n == 0) return 0;
    int rc = -1;
    hsize_t start[4] = {0}, count[4];
    count[0] = n;
    for (int i = 1; i < rank; i++) count[i] = dims[i];
    hid_t fs = H5Dget_space(ds), ms = H5I_INVALID_HID;
    if (fs < 0 || H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL) < 0) goto cleanup;
    ms = H5Screate_simple(rank, count, NULL);
    if (ms < 0) goto cleanup;
    if (H5Dread(ds, mtype, ms, fs, H5P_DEFAULT, buf) < 0) goto cleanup;
    rc = 0;
cleanup:
    if (ms >= 0) H5Sclose(ms);
    if (fs >= 0) H5Sclose(fs);
    return rc;
}

/* Open path for reading with SWMR read: works on a closed trace, one being
 * appended to, and one whose writer was killed inside an append.  An open
 * that overlaps an append can fail with "truncated file" (the file grew
 * between HDF5's size check and its superblock read); that is retried
 * TR_READ_TRIES times.  A file that is not SWMR-capable (written by another
 * tool in an older format) is opened plainly.  Never a plain open of a
 * gatelab trace: a plain reader trusts the superblock's end of file, and an
 * append during the read makes it fail.  Returns the file id, or
 * H5I_INVALID_HID with a message naming path. */
static hid_t tr_open_read(const char *path, char *err, size_t errlen) {
    hid_t fapl = tr_fapl(1);
    hid_t f = H5I_INVALID_HID;
    if (fapl < 0) {
        tr_fail(err, errlen, path, "H5Pset_libver_bounds/H5Pset_file_locking", NULL);
        return f;
    }
    /* HDF5's SWMR reader re-reads a block whose checksum fails (it may be
     * mid-write) with a pause that doubles from 1 ns each time; its default of
     * 100 attempts means hours on a block that is corrupted for good (a trace
     * cut short by a full disk).  TR_METADATA_READ_ATTEMPTS tries wait at
     * most ~2^TR_METADATA_READ_ATTEMPTS ns in all: 31 → about 2 s, longer
     * than an append takes on a loaded machine.  The fuzz build sets 1. */
    H5Pset_metadata_read_attempts(fapl, TR_METADATA_READ_ATTEMPTS);
    for (int i = 0; i < TR_READ_TRIES; i++) {
        if (i > 0) {
            struct timespec pause = {0, TR_READ_PAUSE_NS};
            nanosleep(&pause, NULL);
        }
        f = H5Fopen(path, H5F_ACC_RDONLY | H5F_ACC_SWMR_READ, fapl);
        if (f >= 0) break;
        tr_walk_data w = tr_take_error();
        if (access(path, R_OK) != 0) {
            snprintf(err, errlen, "%s: cannot open trace: %s", path, strerror(errno));
            break;
        }
        snprintf(err, errlen, "%s: H5Fopen (SWMR read) failed: %s (is it a gatelab trace.h5?)", path, w.inner);
        if (strstr(w.inner, "truncated file")) continue;
        f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
        if (f < 0) tr_take_error();
        break;
    }
    H5Pclose(fapl);
    return f;
}


int trace_read(const char *path, gl_trace_data *out, char *err, size_t errlen) {
    return trace_read_flags(path, out, 0, err, errlen);
}

/* The root attributes of an open trace: the schema version (refused outside
 * the versions flags allow), the shape counts and the config text, into out.
 * Returns 0, or -1 with a message naming path. */
static int tr_read_root(hid_t f, const char *path, int flags, gl_trace_data *out, char *err, size_t errlen) {
    int version = 0;
    if (tr_read_attr_int(f, "schema_version", &version) != 0) {
        snprintf(err, errlen, "%s: no schema_version attribute: not a gatelab trace", path);
        return -1;
    }
    /* CURRENT_ONLY: the fixed-length-string schemas (2 on), never schema 1's heap strings */
    int oldest = (flags & TRACE_READ_CURRENT_ONLY) ? 2 : TRACE_SCHEMA_OLDEST;
    if (version < oldest || version > TRACE_SCHEMA_VERSION) {
        snprintf(err, errlen, "%s: trace schema version %d, this gatelab reads versions %d to %d%s", path, version,
                 oldest, TRACE_SCHEMA_VERSION, version > TRACE_SCHEMA_VERSION ? " (written by a newer gatelab)" : "");
        return -1;
    }
    if (tr_read_attr_int(f, "n_layer", &out->n_layer) || tr_read_attr_int(f, "n_kv_head", &out->n_kv_head) ||
        tr_read_attr_int(f, "n_router", &out->n_router) || tr_read_attr_int(f, "n_probe", &out->n_probe)) {
        snprintf(err, errlen, "%s: missing one of the root attributes n_layer, n_kv_head, n_router, n_probe", path);
        return -1;
    }
    int refused = 0; /* schema 1 wrote variable-length strings; schema 2 never does */
    out->config_ini = tr_read_attr_str(f, "config", version < 2, &refused);
    if (refused) {
        snprintf(err, errlen, "%s: the root attribute config is a variable-length string, which schema version %d "
                 "traces never hold: not a trace this gatelab wrote", path, version);
        return -1;
    }
    if (!out->config_ini) out->config_ini = strdup("");
    out->schema_version = version;
    if (version >= 3) {
        char *sha = tr_read_attr_str(f, "probe_sha256", 0, &refused);
        out->split = tr_read_attr_str(f, "split", 0, &refused);
        if (tr_read_attr_int(f, "vocab_size", &out->vocab_size) || !sha || strlen(sha) != 64 || !out->split) {
            free(sha);
            snprintf(err, errlen, "%s: schema %d trace without its identity (root attributes vocab_size, split, "
                     "probe_sha256)", path, version);
            return -1;
        }
        memcpy(out->probe_sha256, sha, 65);
        free(sha);
    }
    if (!out->split) out->split = strdup("");
    if (!out->split) {
        snprintf(err, errlen, "%s: out of memory reading the trace", path);
        return -1;
    }
    return 0;
}

void trace_probe_sha256(const int *probe_tokens, int P, char hex[65]) {
    sha256_ctx c;
    sha256_init(&c);
    for (int i = 0; i < P; i++) {
        uint32_t v = (uint32_t)probe_tokens[i];
        unsigned char b[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
                              (unsigned char)(v >> 24)};
        sha256_update(&c, b, 4);
    }
    unsigned char dg[32];
    sha256_final(&c, dg);
    sha256_digest_hex(dg, hex);
}

/* The probe batch (/probe/tokens and /probe/category, n_probe values each) into out,
 * every category checked against the codes.  0, or -1 with a message naming path. */
static int tr_read_probe(hid_t f, const char *path, gl_trace_data *out, char *err, size_t errlen) {
    int rc = -1;
    hid_t pt = H5I_INVALID_HID, pc = H5I_INVALID_HID;
    size_t P = (size_t)(out->n_probe > 0 ? out->n_probe : 0);
    out->probe_tokens = malloc((P ? P : 1) * sizeof(int));
    out->probe_category = malloc(P ? P : 1);
    if (!out->config_ini || !out->probe_tokens || !out->probe_category) {
        snprintf(err, errlen, "%s: out of memory reading the trace", path);
        goto cleanup;
    }
    pt = H5Dopen2(f, "/probe/tokens", H5P_DEFAULT);
    pc = H5Dopen2(f, "/probe/category", H5P_DEFAULT);
    if (pt < 0 || pc < 0) {
        tr_fail(err, errlen, path, "H5Dopen2", "/probe/tokens or /probe/category");
        goto cleanup;
    }
    if (tr_probe_len(pt) != (long long)P || tr_probe_len(pc) != (long long)P) { /* H5S_ALL reads all of it */
        snprintf(err, errlen, "%s: /probe/tokens or /probe/category does not hold n_probe = %d values", path,
                 out->n_probe);
        goto cleanup;
    }
    if (P > 0 && (H5Dread(pt, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, out->probe_tokens) < 0 ||
                  H5Dread(pc, H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, out->probe_category) < 0)) {
        tr_fail(err, errlen, path, "H5Dread", "the probe batch");
        goto cleanup;
    }
    for (size_t i = 0; i < P; i++) { /* untrusted input: analyses index tables by category */
        if (out->probe_category[i] >= CAT_COUNT) {
            snprintf(err, errlen, "%s: /probe/category[%zu] is %u, outside the codes 0..%d (%s); not a trace "
                     "this gatelab wrote", path, i, out->probe_category[i], CAT_COUNT - 1, cat_codes_description());
            goto cleanup;
        }
    }
    rc = 0;
cleanup:
    if (pt >= 0) H5Dclose(pt);
    if (pc >= 0) H5Dclose(pc);
    return rc;
}

/* Open every per-step dataset that exists (ds[k], H5I_INVALID_HID where absent; the
 * three scalars must be there), check its shape against d, and set d->has and *S,
 * the row count they all hold.  0, or -1 with a message naming path. */
static int tr_open_steps(hid_t f, const char *path, gl_trace_desc *d, hid_t ds[TR_N], hsize_t dims[TR_N][4],
                         hsize_t *S, char *err, size_t errlen) {
    int first = 1;
    *S = 0;
    for (int k = 0; k < TR_N; k++) {
        char name[64];
        tr_dataset_path(k, name, sizeof name);
        int ex = tr_exists(f, k);
        if (ex < 0) {
            tr_fail(err, errlen, path, "H5Lexists", name);
            return -1;
        }
        if (!ex) {
            if (k <= TR_VAL) {
                snprintf(err, errlen, "%s: %s is missing: not a complete gatelab trace", path, name);
                return -1;
            }
            continue;
        }
        ds[k] = H5Dopen2(f, name, H5P_DEFAULT);
        hid_t sp = ds[k] >= 0 ? H5Dget_space(ds[k]) : H5I_INVALID_HID;
        int rank = sp >= 0 ? H5Sget_simple_extent_ndims(sp) : -1;
        if (rank == tr_spec_of(k).rank) H5Sget_simple_extent_dims(sp, dims[k], NULL);
        if (sp >= 0) H5Sclose(sp);
        if (ds[k] < 0 || rank < 0) {
            tr_fail(err, errlen, path, "H5Dopen2/H5Dget_space", name);
            return -1;
        }
        hsize_t row[3];
        int r = tr_row_dims(d, k, row);
        int ok = rank == r + 1;
        for (int i = 0; ok && i < r; i++) ok = dims[k][i + 1] == row[i];
        if (!ok) {
            snprintf(err, errlen, "%s: %s has the wrong shape for n_layer %d, n_kv_head %d, n_probe %d", path,
                     name, d->n_layer, d->n_kv_head, d->n_probe);
            return -1;
        }
        if (first || dims[k][0] < *S) *S = dims[k][0];
        first = 0;
    }
    for (int g = 0; g < GATE_COUNT; g++) d->has[g] = ds[TR_GATE0 + g] >= 0;
    return 0;
}

/* The first S rows of every open dataset into out, less the trailing rows whose
 * append did not complete (/step still -1).  0, or -1 with a message naming path. */
static int tr_read_steps(const char *path, const gl_trace_desc *d, const hid_t ds[TR_N], hsize_t dims[TR_N][4],
                         hsize_t S, gl_trace_data *out, char *err, size_t errlen) {
    int rc = -1;
    void *bufs[TR_N] = {0};
    for (int k = 0; k < TR_N; k++) {
        if (ds[k] < 0) continue;
        size_t elem = k == TR_STEP ? sizeof(int64_t) : sizeof(float);
        size_t n = (size_t)S * tr_row_size(d, k);
        bufs[k] = malloc((n ? n : 1) * elem);
        if (!bufs[k]) {
            snprintf(err, errlen, "%s: out of memory reading %llu steps", path, (unsigned long long)S);
            goto cleanup;
        }
        hid_t mtype = k == TR_STEP ? H5T_NATIVE_INT64 : H5T_NATIVE_FLOAT;
        if (tr_read_rows(ds[k], tr_spec_of(k).rank, dims[k], S, mtype, bufs[k]) < 0) {
            char name[64];
            tr_dataset_path(k, name, sizeof name);
            tr_fail(err, errlen, path, "H5Dread", name);
            goto cleanup;
        }
    }
    const int64_t *st = bufs[TR_STEP];
    hsize_t good = 0;
    while (good < S && st[good] >= 0) good++;
    out->n_steps = (int)good;
    out->step = malloc((good ? good : 1) * sizeof(long));
    if (!out->step) {
        snprintf(err, errlen, "%s: out of memory reading the trace", path);
        goto cleanup;
    }
    for (hsize_t i = 0; i < good; i++) out->step[i] = (long)st[i];
    out->train_loss = bufs[TR_TRAIN];
    out->val_loss = bufs[TR_VAL];
    for (int g = 0; g < GATE_COUNT; g++) out->gate[g] = bufs[TR_GATE0 + g];
    for (int k = TR_TRAIN; k < TR_N; k++) bufs[k] = NULL;
    rc = 0;
cleanup:
    for (int k = 0; k < TR_N; k++) free(bufs[k]);
    return rc;
}

int trace_read_flags(const char *path, gl_trace_data *out, int flags, char *err, size_t errlen) {
    int rc = -1;
    hid_t f = H5I_INVALID_HID, ds[TR_N];
    hsize_t dims[TR_N][4], S = 0;
    for (int k = 0; k < TR_N; k++) ds[k] = H5I_INVALID_HID;
    memset(out, 0, sizeof *out);
    tr_quiet();

    f = tr_open_read(path, err, errlen);
    if (f < 0 || tr_read_root(f, path, flags, out, err, errlen)) goto cleanup;
    gl_trace_desc d = {.n_layer = out->n_layer, .n_kv_head = out->n_kv_head, .n_router = out->n_router,
                       .n_probe = out->n_probe};
    if (tr_read_probe(f, path, out, err, errlen)) goto cleanup;
    if (tr_read_vocab(f, path, out, err, errlen)) goto cleanup;
    if (tr_open_steps(f, path, &d, ds, dims, &S, err, errlen)) goto cleanup;
    if (tr_read_steps(path, &d, ds, dims, S, out, err, errlen)) goto cleanup;
    rc = 0;
cleanup:
    for (int k = 0; k < TR_N; k++)
        if (ds[k] >= 0) H5Dclose(ds[k]);
    if (f >= 0) H5Fclose(f);
    if (rc != 0) trace_data_free(out);
    return rc;
}
