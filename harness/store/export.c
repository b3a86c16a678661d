/*
 * export.c — a run's parameters by name, in HDF5, for other tools (h5py, PyTorch loaders).
 *
 * One float32 dataset per entry of the model's tensor table, named exactly as
 * the table names it ("layers.3.attn.wq"), shape (out, in) for matrices and
 * (n) for vectors; a uint8 dataset "vocab" (the byte of each token id); the
 * model config as root attributes (strings UTF-8) plus the run's config text
 * and step.  Written with the library's default (oldest) format bounds, so
 * any HDF5 1.8+ reader opens it, to "FILE.h5.tmp" and renamed when complete.
 *
 * Not here: the command line (cli/cmd_export.c), traces (trace.c),
 * checkpoints (ckpt.c), reading an export back (import.c).  This file,
 * import.c, trace.c, trace_read.c and probecache.c are the only ones that
 * include hdf5.h.
 */
#include "export.h"
#include "fileio.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hdf5.h>


typedef struct {
    char inner[256];
} export_walk_data;

static herr_t export_walk(unsigned n, const H5E_error2_t *e, void *data) {
    export_walk_data *w = data;
    if (n == 0 && e && e->desc) snprintf(w->inner, sizeof w->inner, "%s", e->desc);
    return 0;
}

/* "path: op failed for what: innermost HDF5 message"; clears the stack. */
static void export_fail(char *err, size_t errlen, const char *path, const char *op, const char *what) {
    export_walk_data w = {""};
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, export_walk, &w);
    H5Eclear2(H5E_DEFAULT);
    snprintf(err, errlen, "%s: %s failed%s%s%s%s", path, op, what ? " for " : "", what ? what : "",
             w.inner[0] ? ": " : "", w.inner);
}

static int export_attr(hid_t obj, const char *name, hid_t ftype, hid_t mtype, const void *value) {
    hid_t space = H5Screate(H5S_SCALAR), attr = H5I_INVALID_HID;
    int rc = -1;
    if (space < 0) goto cleanup;
    attr = H5Acreate2(obj, name, ftype, space, H5P_DEFAULT, H5P_DEFAULT);
    if (attr < 0 || H5Awrite(attr, mtype, value) < 0) goto cleanup;
    rc = 0;
cleanup:
    if (attr >= 0) H5Aclose(attr);
    if (space >= 0) H5Sclose(space);
    return rc;
}

static int export_attr_int(hid_t obj, const char *name, int v) {
    return export_attr(obj, name, H5T_STD_I32LE, H5T_NATIVE_INT, &v);
}

static int export_attr_i64(hid_t obj, const char *name, int64_t v) {
    return export_attr(obj, name, H5T_STD_I64LE, H5T_NATIVE_INT64, &v);
}

static int export_attr_float(hid_t obj, const char *name, float v) {
    return export_attr(obj, name, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, &v);
}

static int export_attr_str(hid_t obj, const char *name, const char *v) {
    hid_t type = H5Tcopy(H5T_C_S1);
    int rc = -1;
    if (type < 0) return -1;
    if (H5Tset_size(type, H5T_VARIABLE) >= 0 && H5Tset_cset(type, H5T_CSET_UTF8) >= 0) {
        const char *s = v ? v : "";
        rc = export_attr(obj, name, type, type, &s);
    }
    H5Tclose(type);
    return rc;
}

/* Root attributes describing the model. */
static int export_config_attrs(hid_t f, const gl_model *m, const gl_train_state *st, const char *config_ini) {
    const gl_model_config *c = &m->cfg;
    int bad = 0;
    bad |= export_attr_int(f, "schema_version", EXPORT_SCHEMA_VERSION);
    bad |= export_attr_str(f, "format", "gatelab model export");
    bad |= export_attr_str(f, "layout", "row-major float32; matrices (out, in): y = x W^T; "
                                        "vectors (n); names as the gatelab tensor table");
    bad |= export_attr_int(f, "vocab_size", c->vocab_size);
    bad |= export_attr_int(f, "d_model", c->d_model);
    bad |= export_attr_int(f, "n_layer", c->n_layer);
    bad |= export_attr_int(f, "n_head", c->n_head);
    bad |= export_attr_int(f, "n_kv_head", c->n_kv_head);
    bad |= export_attr_int(f, "d_ff", c->d_ff);
    bad |= export_attr_int(f, "seq_len", c->seq_len);
    bad |= export_attr_float(f, "norm_eps", c->norm_eps);
    bad |= export_attr_float(f, "rope_base", c->rope_base);
    bad |= export_attr_int(f, "qk_norm", c->qk_norm);
    bad |= export_attr_int(f, "tied", c->tied);
    bad |= export_attr_str(f, "backbone", config_backbone_name(c->backbone));
    bad |= export_attr_float(f, "dropout", c->dropout);
    bad |= export_attr_str(f, "value_residual", config_value_residual_name(c->value_residual));
    bad |= export_attr_str(f, "resformer_variant", config_resformer_variant_name(c->resformer_variant));
    bad |= export_attr_int(f, "value_residual_last_k", c->vr_last_k);
    bad |= export_attr_int(f, "decay_gates", c->decay_gates);
    bad |= export_attr_str(f, "sat_gate", config_sat_gate_name(c->sat_gate));
    bad |= export_attr_int(f, "sat_gate_bias", c->sat_gate_bias);
    bad |= export_attr_str(f, "depth_routing", config_depth_routing_name(c->depth_routing));
    bad |= export_attr_int(f, "router_hidden", config_router_hidden(c));
    bad |= export_attr_float(f, "router_init_bias", c->router_init_bias);
    bad |= export_attr_float(f, "tsa_lambda", c->tsa_lambda);
    bad |= export_attr_str(f, "tsa_form", config_tsa_form_name(c->tsa_form));
    bad |= export_attr_str(f, "exit_weighting", config_exit_weighting_name(c->exit_weighting));
    bad |= export_attr_str(f, "exit_form", config_exit_form_name(c->exit_form));
    bad |= export_attr_str(f, "cross_layer", config_cross_layer_name(c->cross_layer));
    bad |= export_attr_int(f, "hc_expansion", c->hc_expansion);
    bad |= export_attr_float(f, "mod_capacity", c->mod_capacity);
    bad |= export_attr_int(f, "mod_every", c->mod_every);
    bad |= export_attr_float(f, "random_alpha", c->random_alpha);
    bad |= export_attr_i64(f, "n_params", (int64_t)m->n_params);
    bad |= export_attr_i64(f, "step", (int64_t)st->step);
    bad |= export_attr_str(f, "config", config_ini);
    return bad ? -1 : 0;
}

static int export_dataset(hid_t f, const char *name, hid_t ftype, hid_t mtype, int rank, const hsize_t *dims,
                          const void *data) {
    hid_t space = H5Screate_simple(rank, dims, NULL), ds = H5I_INVALID_HID;
    int rc = -1;
    if (space < 0) goto cleanup;
    ds = H5Dcreate2(f, name, ftype, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (ds < 0 || H5Dwrite(ds, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0) goto cleanup;
    rc = 0;
cleanup:
    if (ds >= 0) H5Dclose(ds);
    if (space >= 0) H5Sclose(space);
    return rc;
}

int export_model(const char *path, const gl_model *m, const gl_train_state *st, const char *config_ini,
                 char *err, size_t errlen) {
    int rc = -1;
    char tmp[4096];
    hid_t f = H5I_INVALID_HID;
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", path) >= sizeof tmp) {
        snprintf(err, errlen, "%s: path too long", path);
        return -1;
    }
    if (fileio_clear_tmp(tmp, "export", err, errlen) != 0) return -1;
    f = H5Fcreate(tmp, H5F_ACC_EXCL, H5P_DEFAULT, H5P_DEFAULT); /* O_EXCL: never through a link */
    if (f < 0) {
        export_fail(err, errlen, tmp, "H5Fcreate", "the export (does its folder exist and is it writable?)");
        goto cleanup;
    }
    if (export_config_attrs(f, m, st, config_ini) != 0) {
        export_fail(err, errlen, tmp, "H5Acreate2/H5Awrite", "the root attributes");
        goto cleanup;
    }
    for (int i = 0; i < m->n_tensors; i++) {
        const gl_tensor *t = &m->tensors[i];
        hsize_t dims[2] = {(hsize_t)t->shape[0], (hsize_t)t->shape[1]};
        if (export_dataset(f, t->name, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, t->ndim, dims, m->params + t->offset) != 0) {
            export_fail(err, errlen, tmp, "H5Dcreate2/H5Dwrite", t->name);
            goto cleanup;
        }
    }
    int nv = st->vocab_size;
    if (nv < 1 || nv > 256) nv = m->cfg.vocab_size < 256 ? m->cfg.vocab_size : 256;
    hsize_t vd[1] = {(hsize_t)nv};
    if (export_dataset(f, "vocab", H5T_STD_U8LE, H5T_NATIVE_UINT8, 1, vd, st->vocab) != 0) {
        export_fail(err, errlen, tmp, "H5Dcreate2/H5Dwrite", "vocab");
        goto cleanup;
    }
    /* a BPE run: vocab holds the 256 byte ids; merge k (row k) joins two ids into id 256 + k */
    hsize_t md[2] = {(hsize_t)st->bpe.n, 2};
    if (st->tokenizer == TOK_BPE &&
        export_dataset(f, "merges", H5T_STD_U16LE, H5T_NATIVE_UINT16, 2, md, st->bpe.pair) != 0) {
        export_fail(err, errlen, tmp, "H5Dcreate2/H5Dwrite", "merges");
        goto cleanup;
    }
    /* a utf8 run: id i is the character cp[i] (its vocab bytes are not the tokens') */
    hsize_t cd[1] = {(hsize_t)st->utf8.V};
    if (st->tokenizer == TOK_UTF8 &&
        export_dataset(f, "code_points", H5T_STD_U32LE, H5T_NATIVE_UINT32, 1, cd, st->utf8.cp) != 0) {
        export_fail(err, errlen, tmp, "H5Dcreate2/H5Dwrite", "code_points");
        goto cleanup;
    }
    herr_t cl = H5Fclose(f);
    f = H5I_INVALID_HID;
    if (cl < 0) {
        export_fail(err, errlen, tmp, "H5Fclose", NULL);
        goto cleanup;
    }
    if (rename(tmp, path) != 0) {
        snprintf(err, errlen, "%s: cannot rename %s over it: %s", path, tmp, strerror(errno));
        goto cleanup;
    }
    fileio_sync_dir(path); /* best effort: the export is complete either way */
    rc = 0;
cleanup:
    if (f >= 0) H5Fclose(f);
    if (rc != 0) unlink(tmp);
    return rc;
}
