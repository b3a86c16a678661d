/*
 * import.c — a run from an HDF5 file in the export layout (see import.h;
 * docs/files.md "Export", docs/cli.md "Import").
 *
 * Reading trusts nothing in the file: the model is built from the file's
 * `config` attribute by the same parser a run's stored config goes through
 * (manifest_load_text), and every root dataset must be a tensor of that
 * model, of its shape, floating point and finite; every tensor of the model
 * must be there.  The parameters are then written through the one checkpoint
 * writer (ckpt_save) and the run is registered FINISHED, so every command
 * that opens a run (eval, sample, probe, ablate, heads, report, export)
 * opens it as it opens a trained one.
 *
 * Not here: the command line (cli/cmd_import.c); the export writer (export.c);
 * the mapping from the TSA paper's PyTorch names, which is Python's
 * (scripts/python/gatelab/official.py).  A trace is not made: an imported
 * run was not trained here, so commands that read trace.h5 say it is absent.
 */
#include "import.h"
#include "export.h"
#include "fileio.h"
#include "registry.h"
#include "rundir.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <hdf5.h>

#define IMPORT_CONFIG_MAX (1u << 20) /* a config text is a few kB; more is not a gatelab export */
#define IMPORT_NAME_MAX 256

/* ------------------------------------------------------------ attributes */

/* 1 when path's root has attribute name. */
static int im_has_attr(hid_t f, const char *name) { return H5Aexists(f, name) > 0; }

/* A scalar integer attribute as int64; 0, or -1 when unreadable. */
static int im_attr_i64(hid_t f, const char *name, int64_t *out) {
    hid_t a = H5Aopen(f, name, H5P_DEFAULT), t = H5I_INVALID_HID, s = H5I_INVALID_HID;
    int rc = -1;
    if (a < 0) return -1;
    t = H5Aget_type(a);
    s = H5Aget_space(a);
    if (t >= 0 && s >= 0 && H5Tget_class(t) == H5T_INTEGER && H5Sget_simple_extent_npoints(s) == 1 &&
        H5Aread(a, H5T_NATIVE_INT64, out) >= 0)
        rc = 0;
    if (s >= 0) H5Sclose(s);
    if (t >= 0) H5Tclose(t);
    H5Aclose(a);
    return rc;
}

/* A scalar string attribute (variable or fixed length, as h5py and export.c
 * write them) into a malloc'd string; NULL when unreadable or too long. */
static char *im_attr_str(hid_t f, const char *name) {
    hid_t a = H5Aopen(f, name, H5P_DEFAULT), ft = H5I_INVALID_HID, mt = H5I_INVALID_HID, s = H5I_INVALID_HID;
    char *out = NULL;
    if (a < 0) return NULL;
    ft = H5Aget_type(a);
    s = H5Aget_space(a);
    if (ft < 0 || s < 0 || H5Tget_class(ft) != H5T_STRING || H5Sget_simple_extent_npoints(s) != 1) goto cleanup;
    mt = H5Tcopy(H5T_C_S1);
    if (mt < 0) goto cleanup;
    if (H5Tis_variable_str(ft) > 0) {
        char *v = NULL;
        if (H5Tset_size(mt, H5T_VARIABLE) < 0 || H5Tset_cset(mt, H5Tget_cset(ft)) < 0 || H5Aread(a, mt, &v) < 0)
            goto cleanup;
        if (v && strlen(v) < IMPORT_CONFIG_MAX) out = strdup(v);
        H5Dvlen_reclaim(mt, s, H5P_DEFAULT, &v);
    } else {
        size_t n = H5Tget_size(ft);
        if (n == 0 || n >= IMPORT_CONFIG_MAX || H5Tset_size(mt, n + 1) < 0 || H5Tset_cset(mt, H5Tget_cset(ft)) < 0)
            goto cleanup;
        out = calloc(n + 2, 1);
        if (out && H5Aread(a, mt, out) < 0) {
            free(out);
            out = NULL;
        }
    }
cleanup:
    if (mt >= 0) H5Tclose(mt);
    if (s >= 0) H5Sclose(s);
    if (ft >= 0) H5Tclose(ft);
    H5Aclose(a);
    return out;
}

/* -------------------------------------------------------------- datasets */

/* The rank and dims of ds (at most 2 dims); -1 when it has more or is unreadable. */
static int im_shape(hid_t ds, hsize_t dims[2]) {
    hid_t s = H5Dget_space(ds);
    if (s < 0) return -1;
    int rank = H5Sget_simple_extent_ndims(s);
    if (rank >= 0 && rank <= 2) H5Sget_simple_extent_dims(s, dims, NULL);
    H5Sclose(s);
    return rank > 2 ? -1 : rank;
}

static const char *im_class_name(H5T_class_t c) {
    switch (c) {
    case H5T_INTEGER: return "integer";
    case H5T_FLOAT: return "floating point";
    case H5T_STRING: return "string";
    default: return "not numeric";
    }
}

/* Load dataset name (already open as ds) into tensor t of m.  0, or -1 with err. */
static int im_load_tensor(gl_model *m, const gl_tensor *t, hid_t ds, const char *path, char *err, size_t errlen) {
    hsize_t dims[2] = {0, 0};
    hid_t type = H5Dget_type(ds);
    H5T_class_t cls = type >= 0 ? H5Tget_class(type) : H5T_NO_CLASS;
    if (type >= 0) H5Tclose(type);
    if (cls != H5T_FLOAT) {
        snprintf(err, errlen, "%s: tensor %s is %s; parameters are floating point (float32)", path, t->name,
                 im_class_name(cls));
        return -1;
    }
    int rank = im_shape(ds, dims);
    int same = rank == t->ndim && dims[0] == (hsize_t)t->shape[0] && (t->ndim == 1 || dims[1] == (hsize_t)t->shape[1]);
    if (!same) {
        char have[64], want[64];
        if (rank == 0) snprintf(have, sizeof have, "a scalar");
        else if (rank == 1) snprintf(have, sizeof have, "(%llu)", (unsigned long long)dims[0]);
        else if (rank == 2) snprintf(have, sizeof have, "(%llu, %llu)", (unsigned long long)dims[0], (unsigned long long)dims[1]);
        else snprintf(have, sizeof have, "of more than 2 dimensions");
        if (t->ndim == 1) snprintf(want, sizeof want, "(%d)", t->shape[0]);
        else snprintf(want, sizeof want, "(%d, %d)", t->shape[0], t->shape[1]);
        snprintf(err, errlen, "%s: tensor %s is %s in the file, %s in the model its config builds", path, t->name, have,
                 want);
        return -1;
    }
    float *p = m->params + t->offset;
    if (H5Dread(ds, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, p) < 0) {
        H5Eclear2(H5E_DEFAULT);
        snprintf(err, errlen, "%s: cannot read tensor %s (H5Dread failed)", path, t->name);
        return -1;
    }
    for (size_t j = 0; j < t->size; j++)
        if (!isfinite(p[j])) {
            snprintf(err, errlen, "%s: tensor %s holds a value that is not finite (%g at flat index %zu)", path, t->name,
                     (double)p[j], j);
            return -1;
        }
    return 0;
}

/* The uint8 vocabulary (n entries) into st->vocab; -1 with err. */
static int im_read_vocab(hid_t ds, const char *path, int *n_out, uint8_t vocab[256], char *err, size_t errlen) {
    hsize_t dims[2] = {0, 0};
    hid_t type = H5Dget_type(ds);
    int ok = type >= 0 && H5Tget_class(type) == H5T_INTEGER && H5Tget_size(type) == 1;
    if (type >= 0) H5Tclose(type);
    if (!ok || im_shape(ds, dims) != 1 || dims[0] < 1 || dims[0] > 256) {
        snprintf(err, errlen, "%s: dataset vocab must be uint8 of 1 to 256 entries (the byte of each token id)", path);
        return -1;
    }
    if (H5Dread(ds, H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, vocab) < 0) {
        H5Eclear2(H5E_DEFAULT);
        snprintf(err, errlen, "%s: cannot read dataset vocab (H5Dread failed)", path);
        return -1;
    }
    *n_out = (int)dims[0];
    return 0;
}

/* The BPE merges (n, 2) uint16 into st->bpe; -1 with err. */
static int im_read_merges(hid_t ds, const char *path, bpe_merges *b, char *err, size_t errlen) {
    hsize_t dims[2] = {0, 0};
    hid_t type = H5Dget_type(ds);
    int ok = type >= 0 && H5Tget_class(type) == H5T_INTEGER && H5Tget_size(type) <= 2;
    if (type >= 0) H5Tclose(type);
    if (!ok || im_shape(ds, dims) != 2 || dims[1] != 2 || dims[0] < 1 || dims[0] > BPE_MERGES_MAX) {
        snprintf(err, errlen, "%s: dataset merges must be uint16 (n, 2) with 1 <= n <= %d", path, BPE_MERGES_MAX);
        return -1;
    }
    if (H5Dread(ds, H5T_NATIVE_UINT16, H5S_ALL, H5S_ALL, H5P_DEFAULT, b->pair) < 0) {
        H5Eclear2(H5E_DEFAULT);
        snprintf(err, errlen, "%s: cannot read dataset merges (H5Dread failed)", path);
        return -1;
    }
    b->n = (int)dims[0];
    return 0;
}

/* --------------------------------------------------------------- reading */

void import_free(gl_import *im) {
    if (!im) return;
    model_free(&im->model);
    free(im->config_ini);
    memset(im, 0, sizeof *im);
}

/* Every root link of f in name order but vocab and merges (read first):
 * each into its tensor (seen[i] = 1).  0, or -1 with err. */
static int im_read_links(gl_import *im, hid_t f, const char *path, char *seen, char *err, size_t errlen) {
    H5G_info_t gi;
    if (H5Gget_info(f, &gi) < 0) {
        snprintf(err, errlen, "%s: cannot list the file's root (H5Gget_info failed)", path);
        return -1;
    }
    for (hsize_t i = 0; i < gi.nlinks; i++) {
        char name[IMPORT_NAME_MAX];
        ssize_t len = H5Lget_name_by_idx(f, ".", H5_INDEX_NAME, H5_ITER_INC, i, name, sizeof name, H5P_DEFAULT);
        if (len < 0 || (size_t)len >= sizeof name) {
            H5Eclear2(H5E_DEFAULT);
            snprintf(err, errlen, "%s: root entry %llu has no readable name of under %d bytes", path,
                     (unsigned long long)i, IMPORT_NAME_MAX);
            return -1;
        }
        if (!strcmp(name, "vocab") || !strcmp(name, "merges")) continue;
        const gl_tensor *t = model_find_tensor(&im->model, name);
        if (!t) {
            snprintf(err, errlen, "%s: %s is not a tensor of the model its config builds (model.* keys of the config "
                     "attribute; docs/files.md \"Export\" lists the names); remove it or fix the config", path, name);
            return -1;
        }
        hid_t ds = H5Dopen2(f, name, H5P_DEFAULT);
        if (ds < 0) {
            H5Eclear2(H5E_DEFAULT);
            snprintf(err, errlen, "%s: tensor %s is not a dataset", path, name);
            return -1;
        }
        int rc = im_load_tensor(&im->model, t, ds, path, err, errlen);
        H5Dclose(ds);
        if (rc) return -1;
        seen[t - im->model.tensors] = 1;
    }
    for (int i = 0; i < im->model.n_tensors; i++)
        if (!seen[i]) {
            snprintf(err, errlen, "%s: tensor %s is missing (the model its config builds has %d tensors)", path,
                     im->model.tensors[i].name, im->model.n_tensors);
            return -1;
        }
    return 0;
}

/* The config attribute into im->mf.  0, or -1 with err. */
static int im_read_config(gl_import *im, hid_t f, const char *path, char *err, size_t errlen) {
    int64_t v = -1;
    if (!im_has_attr(f, "schema_version") || im_attr_i64(f, "schema_version", &v) || v != EXPORT_SCHEMA_VERSION) {
        if (v < 0)
            snprintf(err, errlen, "%s: not a gatelab export (no integer root attribute schema_version; docs/files.md "
                     "\"Export\" has the layout)", path);
        else
            snprintf(err, errlen, "%s: export schema_version %lld; this gatelab reads %d", path, (long long)v,
                     EXPORT_SCHEMA_VERSION);
        return -1;
    }
    char *text = im_has_attr(f, "config") ? im_attr_str(f, "config") : NULL;
    if (!text) {
        snprintf(err, errlen, "%s: no string root attribute config (the run's manifest text, which builds the model)",
                 path);
        return -1;
    }
    char origin[GL_PATH_MAX + 32], why[1536];
    snprintf(origin, sizeof origin, "%s (attribute config)", path);
    int rc = manifest_load_text(&im->mf, text, origin, why, sizeof why);
    free(text);
    if (rc) {
        snprintf(err, errlen, "%s", why);
        return -1;
    }
    im->st.step = 0;
    if (im_has_attr(f, "step")) {
        if (im_attr_i64(f, "step", &v) || v < 0) {
            snprintf(err, errlen, "%s: root attribute step must be an integer >= 0", path);
            return -1;
        }
        im->st.step = (long)v;
    }
    return 0;
}

/* The vocabulary size the config and the file give, and the training state's
 * tokenizer from it.  0, or -1 with err. */
static int im_resolve_vocab(gl_import *im, const char *path, int n_vocab, const uint8_t *vocab, int have_merges,
                            char *err, size_t errlen) {
    gl_train_state *st = &im->st;
    const int bpe = im->mf.data.tokenizer == TOK_BPE;
    if (n_vocab == 0) {
        snprintf(err, errlen, "%s: no dataset vocab (uint8, the byte of each token id)", path);
        return -1;
    }
    if (bpe != have_merges) {
        snprintf(err, errlen, "%s: data.tokenizer = %s but the file %s a dataset merges", path,
                 task_tokenizer_name(im->mf.data.tokenizer), have_merges ? "has" : "lacks");
        return -1;
    }
    int V = bpe ? BPE_BASE + st->bpe.n : n_vocab;
    if (bpe) {
        bpe_tok tok = {0};
        char why[512];
        int rc = bpe_build(&tok, &st->bpe, why, sizeof why);
        bpe_free(&tok);
        if (rc) {
            snprintf(err, errlen, "%s: dataset merges: %s", path, why);
            return -1;
        }
        for (int b = 0; b < 256; b++)
            if (n_vocab != 256 || vocab[b] != b) {
                snprintf(err, errlen, "%s: a BPE export's vocab is the 256 byte ids 0..255 in order", path);
                return -1;
            }
    }
    if (!bpe) { /* a char run's ids and bytes are one to one (encode and decode go both ways) */
        int id_of[256];
        for (int b = 0; b < 256; b++) id_of[b] = -1;
        for (int v = 0; v < n_vocab; v++) {
            if (id_of[vocab[v]] >= 0) {
                snprintf(err, errlen, "%s: dataset vocab gives ids %d and %d the same byte 0x%02x; a char run's ids "
                         "are distinct bytes", path, id_of[vocab[v]], v, vocab[v]);
                return -1;
            }
            id_of[vocab[v]] = v;
        }
    }
    if (im->mf.model.vocab_size == 0) im->mf.model.vocab_size = V;
    if (im->mf.model.vocab_size != V) {
        snprintf(err, errlen, "%s: model.vocab_size = %d in the config but the file's vocabulary gives %d ids", path,
                 im->mf.model.vocab_size, V);
        return -1;
    }
    st->tokenizer = bpe ? TOK_BPE : TOK_CHAR;
    st->vocab_size = V;
    memcpy(st->vocab, vocab, (size_t)n_vocab);
    if (!bpe) st->bpe.n = 0;
    return 0;
}

int import_read(gl_import *im, const char *path, char *err, size_t errlen) {
    int rc = -1, n_vocab = 0, have_merges = 0;
    uint8_t vocab[256];
    char *seen = NULL;
    hid_t f = H5I_INVALID_HID;
    memset(im, 0, sizeof *im);
    snprintf(im->source, sizeof im->source, "%s", path);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    FILE *probe = NULL; /* a FIFO or folder is refused before HDF5 sees it */
    if (fileio_open_regular(path, "export file", &probe, err, errlen)) return -1;
    fclose(probe);
    f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) {
        H5Eclear2(H5E_DEFAULT);
        snprintf(err, errlen, "%s: not an HDF5 file (H5Fopen failed); write it with `gatelab export` or h5py", path);
        goto cleanup;
    }
    if (im_read_config(im, f, path, err, errlen)) goto cleanup;
    /* the vocabulary first, so the model is built at its size when the config leaves it to the data */
    hid_t vds = H5Lexists(f, "vocab", H5P_DEFAULT) > 0 ? H5Dopen2(f, "vocab", H5P_DEFAULT) : H5I_INVALID_HID;
    H5Eclear2(H5E_DEFAULT);
    if (vds >= 0) {
        int vr = im_read_vocab(vds, path, &n_vocab, vocab, err, errlen);
        H5Dclose(vds);
        if (vr) goto cleanup;
    }
    if (H5Lexists(f, "merges", H5P_DEFAULT) > 0) {
        hid_t mds = H5Dopen2(f, "merges", H5P_DEFAULT);
        int mr = mds < 0 ? -1 : im_read_merges(mds, path, &im->st.bpe, err, errlen);
        if (mds >= 0) H5Dclose(mds);
        if (mr) {
            if (mds < 0) snprintf(err, errlen, "%s: root entry merges is not a dataset", path);
            goto cleanup;
        }
        have_merges = 1;
    }
    H5Eclear2(H5E_DEFAULT);
    if (im_resolve_vocab(im, path, n_vocab, vocab, have_merges, err, errlen)) goto cleanup;
    char why[1024];
    if (model_init(&im->model, &im->mf.model, 1, why, sizeof why)) {
        snprintf(err, errlen, "%s: the config's model cannot be built: %s", path, why);
        goto cleanup;
    }
    memset(im->model.adam_m, 0, im->model.n_params * sizeof(float));
    memset(im->model.adam_v, 0, im->model.n_params * sizeof(float));
    seen = calloc((size_t)im->model.n_tensors, 1);
    if (!seen) {
        snprintf(err, errlen, "%s: out of memory", path);
        goto cleanup;
    }
    if (im_read_links(im, f, path, seen, err, errlen)) goto cleanup;
    rng_seed(&im->st.data_rng, im->mf.train.seed ^ 0x5eed0da7aULL); /* as train.c seeds a fresh run */
    rng_seed(&im->st.aux_rng, im->mf.train.seed ^ 0xa0c5eedULL);
    im->config_ini = manifest_to_ini(&im->mf);
    if (!im->config_ini) {
        snprintf(err, errlen, "%s: out of memory", path);
        goto cleanup;
    }
    rc = 0;
cleanup:
    free(seen);
    if (f >= 0) H5Fclose(f);
    if (rc) {
        char keep[2048];
        snprintf(keep, sizeof keep, "%s", err);
        import_free(im);
        snprintf(err, errlen, "%s", keep);
    }
    return rc;
}

/* --------------------------------------------------------------- writing */

int import_claim_dir(const char *dir, char *err, size_t errlen) {
    char typed[GL_PATH_MAX], up[GL_PATH_MAX], real[PATH_MAX], why[GL_PATH_MAX + 128];
    size_t len = strlen(dir);
    while (len > 1 && dir[len - 1] == '/') len--;
    if (len == 0 || len >= sizeof typed) {
        snprintf(err, errlen, "--out '%.80s': not a usable folder path", dir);
        return -1;
    }
    snprintf(typed, sizeof typed, "%.*s", (int)len, dir);
    snprintf(up, sizeof up, "%s", typed);
    const char *id = basename(up);
    if (db_run_id_check(id, why, sizeof why)) {
        snprintf(err, errlen, "--out %s: the folder's name is the run id: %s", typed, why);
        return -1;
    }
    struct stat sb;
    if (lstat(typed, &sb) == 0) {
        snprintf(err, errlen, "%s exists already: import makes a new run folder and never writes into an existing "
                 "one; choose another --out or remove it", typed);
        return -1;
    }
    snprintf(up, sizeof up, "%s", typed);
    const char *parent = dirname(up);
    char pb[GL_PATH_MAX];
    snprintf(pb, sizeof pb, "%s", parent);
    const char *pname = basename(pb); /* ".", ".." or "/": only the real path says (checked below) */
    int named = !strcmp(pname, ".") || !strcmp(pname, "..") || !strcmp(pname, "/") || !strcmp(pname, "runs");
    if (named && fileio_mkdir_p(parent, why, sizeof why)) {
        snprintf(err, errlen, "--out %s: %s", typed, why);
        return -1;
    }
    if (named && !realpath(parent, real)) {
        snprintf(err, errlen, "--out %s: cannot resolve its folder %s: %s", typed, parent, strerror(errno));
        return -1;
    }
    if (!named || strcmp(basename(real), "runs") != 0) {
        snprintf(err, errlen, "--out %s: a run folder is <results>/runs/<id>, and %s is not a folder named runs "
                 "(the registry is found two folders up)", typed, named ? real : parent);
        return -1;
    }
    if (mkdir(typed, 0755) != 0) {
        snprintf(err, errlen, "%s: cannot create the run folder: %s%s", typed, strerror(errno),
                 errno == EEXIST ? " (import never writes into an existing run folder)" : "");
        return -1;
    }
    return 0;
}

/* Remove what import_write wrote in dir (best effort: the error already said what failed). */
static void im_unwrite(const char *dir) {
    char p[GL_PATH_MAX];
    if (!run_path(p, sizeof p, dir, RUN_CKPT)) unlink(p);
    if (!run_path(p, sizeof p, dir, RUN_CONFIG)) unlink(p);
}

int import_write(const gl_import *im, const import_dest *d, char *err, size_t errlen) {
    gl_db *db = NULL;
    int rc = -1, made_row = 0, wrote = 0;
    char ckpt[GL_PATH_MAX], cfg[GL_PATH_MAX], detail[GL_PATH_MAX + 128], e2[512], abs[PATH_MAX];
    if (run_path(ckpt, sizeof ckpt, d->dir, RUN_CKPT) || run_path(cfg, sizeof cfg, d->dir, RUN_CONFIG)) {
        snprintf(err, errlen, "%s: run folder path too long", d->dir);
        return -1;
    }
    if (db_open(&db, d->db, err, errlen)) goto cleanup;
    int exists = db_run_exists(db, d->run_id, NULL, err, errlen);
    if (exists < 0) goto cleanup;
    if (exists) {
        snprintf(err, errlen, "run %s is already in the registry %s; choose another --out (the folder's name is the "
                 "run id)", d->run_id, d->db);
        goto cleanup;
    }
    wrote = 1;
    if (ckpt_save(ckpt, &im->model, &im->st, im->config_ini, manifest_model_hash(&im->mf), err, errlen)) goto cleanup;
    if (fileio_write_all(cfg, "resolved config", im->config_ini, strlen(im->config_ini), err, errlen)) goto cleanup;
    long long exp_id;
    if (db_experiment_ensure(db, d->experiment, im->config_ini, &exp_id, err, errlen)) goto cleanup;
    if (db_run_create(db, exp_id, d->run_id, d->run_id, im->config_ini, d->config_hash, im->mf.train.seed, "RUNNING",
                      err, errlen))
        goto cleanup;
    made_row = 1;
    snprintf(detail, sizeof detail, "imported from %s (step %ld, %zu parameters)", im->source, im->st.step,
             im->model.n_params);
    if (db_params_put(db, d->run_id, &im->mf, err, errlen) || db_run_start(db, d->run_id, err, errlen) ||
        db_run_event(db, d->run_id, "import", detail, err, errlen) ||
        db_artifact_put(db, d->run_id, "ckpt", realpath(ckpt, abs) ? abs : ckpt, err, errlen) ||
        db_run_finish(db, d->run_id, "FINISHED", 0, NULL, err, errlen))
        goto cleanup;
    rc = 0;
cleanup:
    if (rc && made_row) db_run_finish(db, d->run_id, "FAILED", 1, err, e2, sizeof e2);
    if (rc && wrote) im_unwrite(d->dir);
    db_close(db);
    return rc;
}
