/*
 * test_parity.c — the C model against the independent PyTorch reference.
 *
 * What it does: for every tests/fixtures/<case>.h5 written by
 * scripts/reference/make_fixtures.py (float64 ground truth stored as float32)
 * it builds the model the file describes, loads the file's parameters by
 * name, and checks forward (loss, task loss, logits), backward (every
 * parameter gradient), the activations the traces read (SATFormer gates,
 * ResFormer λ, TSA halting probabilities, early-exit confidences, the MoD /
 * random selection — exactly — and MoD's router weights σ(r)), early exit
 * in the TSA paper's form at the fixture's threshold τ (each token's exit
 * block exactly, the frozen predictions, their loss and both active
 * fractions), and three AdamW steps (losses and parameters afterwards).  One cmocka test per
 * fixture; each prints one line per check with its worst difference.
 *
 * What it does not: it does not compute any reference value itself — the
 * numbers come only from the fixture files — and it does not test single ops
 * (the gradient tests do that against finite differences).
 *
 * Fixtures are looked up in $GATELAB_FIXTURES, else tests/fixtures relative to
 * the working directory (tests run from the repository root).  No fixture is
 * a failure: regenerate them with `make fixtures`.
 */
#include <dirent.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <hdf5.h>

#include "model/adamw.h"
#include "model/config.h"
#include "model/model.h"

/* Tolerances.  The fixture is float64 truth; the model runs in float32, so a
 * correct model differs by float32 rounding carried through a few layers:
 * ~1e-7 relative on losses and logits, ~1e-6 on gradients (the float32 run of
 * the reference itself is within 2.5e-6 on every case; make_fixtures.py prints
 * it).  Gradients get 1e-4 because a gradient sums many products whose
 * magnitudes cancel, so its error is relative to the tensor's largest entry,
 * not to each entry. */
#define TOL_LOSS 1e-5    /* |loss - ref| / |ref| */
#define TOL_LOGITS 1e-5  /* max|logit - ref| / max|ref| */
#define TOL_GRAD 1e-4    /* per tensor: max|g - ref| / max(max|ref|, 1e-6) */
#define TOL_ACT 1e-5     /* gates, λ, p, confidences: max|a - ref| / max|ref| */
/* AdamW: three steps at lr 1e-2 compound the forward/backward rounding, and
 * Adam divides each gradient by its own running RMS, so an entry with a small
 * gradient turns a tiny absolute gradient error into a larger relative step
 * error (bounded by lr/(4·eps) times the gradient error; the fixtures use
 * eps 1e-4 to keep this bounded — see make_fixtures.py).  The float32 run of
 * the reference stays within 1e-6 on these losses and 5.2e-6 on these
 * parameters, so 1e-4 leaves a 20x margin while an optimiser bug (a missing
 * bias correction, decay on the wrong tensor, clipping off) moves them by
 * 1e-3 or more. */
#define TOL_ADAM_LOSS 1e-4  /* |loss_s - ref_s| / |ref_s| */
#define TOL_ADAM_PARAM 1e-4 /* per tensor: max|p - ref| / max|ref| */

#define MAX_FIXTURES 64
#define PATH_MAX_LEN 1024

typedef struct {
    char path[PATH_MAX_LEN + 300]; /* directory + '/' + a d_name of up to 256 */
    char name[128];
} fixture;

static fixture g_fixtures[MAX_FIXTURES];
static int g_n_fixtures;
static char g_fixture_dir[PATH_MAX_LEN];

/* ---- reading the fixture ------------------------------------------------ */

typedef struct {
    hid_t file;
    int failures;   /* checks that failed (including unreadable data) */
    const char *case_name;
} parity_ctx;

static void parity_fail(parity_ctx *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    printf("  FAIL %s: ", c->case_name);
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    c->failures++;
}

/* Report one numeric check: one line with the worst difference and tolerance. */
static void parity_check(parity_ctx *c, const char *what, double worst, double tol, const char *where) {
    int ok = worst <= tol; /* NaN fails */
    printf("  %-4s %-26s %-34s %.2e (tol %.0e)%s%s\n", ok ? "ok" : "FAIL", c->case_name, what, worst,
           tol, where && *where ? "  worst: " : "", where ? where : "");
    if (!ok) c->failures++;
}

static int attr_int(parity_ctx *c, const char *key, int *out) {
    if (H5Aexists(c->file, key) <= 0) {
        parity_fail(c, "root attribute '%s' missing; regenerate fixtures with `make fixtures`", key);
        return -1;
    }
    hid_t a = H5Aopen(c->file, key, H5P_DEFAULT);
    herr_t st = a < 0 ? -1 : H5Aread(a, H5T_NATIVE_INT, out);
    if (a >= 0) H5Aclose(a);
    if (st < 0) parity_fail(c, "cannot read int attribute '%s'", key);
    return st < 0 ? -1 : 0;
}

static int attr_float(parity_ctx *c, const char *key, float *out) {
    if (H5Aexists(c->file, key) <= 0) {
        parity_fail(c, "root attribute '%s' missing; regenerate fixtures with `make fixtures`", key);
        return -1;
    }
    hid_t a = H5Aopen(c->file, key, H5P_DEFAULT);
    herr_t st = a < 0 ? -1 : H5Aread(a, H5T_NATIVE_FLOAT, out);
    if (a >= 0) H5Aclose(a);
    if (st < 0) parity_fail(c, "cannot read float attribute '%s'", key);
    return st < 0 ? -1 : 0;
}

/* A string attribute, fixed-length or variable-length, into buf. */
static int attr_str(parity_ctx *c, const char *key, char *buf, size_t buflen) {
    int rc = -1;
    hid_t a = -1, ft = -1, mt = -1;
    buf[0] = '\0';
    if (H5Aexists(c->file, key) <= 0) {
        parity_fail(c, "root attribute '%s' missing; regenerate fixtures with `make fixtures`", key);
        return -1;
    }
    a = H5Aopen(c->file, key, H5P_DEFAULT);
    if (a < 0) goto cleanup;
    ft = H5Aget_type(a);
    if (ft < 0 || H5Tget_class(ft) != H5T_STRING) goto cleanup;
    if (H5Tis_variable_str(ft) > 0) {
        char *s = NULL;
        mt = H5Tcopy(H5T_C_S1);
        H5Tset_size(mt, H5T_VARIABLE);
        H5Tset_cset(mt, H5Tget_cset(ft));
        if (H5Aread(a, mt, &s) < 0) goto cleanup;
        snprintf(buf, buflen, "%s", s ? s : "");
        H5free_memory(s);
    } else {
        size_t n = H5Tget_size(ft);
        char *tmp = calloc(n + 1, 1);
        if (!tmp) goto cleanup;
        mt = H5Tcopy(ft);
        if (H5Aread(a, mt, tmp) < 0) {
            free(tmp);
            goto cleanup;
        }
        snprintf(buf, buflen, "%s", tmp);
        free(tmp);
    }
    rc = 0;
cleanup:
    if (mt >= 0) H5Tclose(mt);
    if (ft >= 0) H5Tclose(ft);
    if (a >= 0) H5Aclose(a);
    if (rc) parity_fail(c, "cannot read string attribute '%s'", key);
    return rc;
}

static int has_path(parity_ctx *c, const char *path) {
    /* H5Lexists needs every intermediate group to exist: walk the path. */
    char part[256];
    const char *p = path;
    while ((p = strchr(p, '/')) != NULL) {
        size_t n = (size_t)(p - path);
        if (n >= sizeof part) return 0;
        memcpy(part, path, n);
        part[n] = '\0';
        if (H5Lexists(c->file, part, H5P_DEFAULT) <= 0) return 0;
        p++;
    }
    return H5Lexists(c->file, path, H5P_DEFAULT) > 0;
}

/* Number of elements of dataset `path`, or -1 (with a failure) when absent. */
static long dset_size(parity_ctx *c, const char *path) {
    if (!has_path(c, path)) {
        parity_fail(c, "dataset '%s' missing from the fixture", path);
        return -1;
    }
    hid_t d = H5Dopen2(c->file, path, H5P_DEFAULT);
    if (d < 0) {
        parity_fail(c, "cannot open dataset '%s'", path);
        return -1;
    }
    hid_t s = H5Dget_space(d);
    long n = s < 0 ? -1 : (long)H5Sget_simple_extent_npoints(s);
    if (s >= 0) H5Sclose(s);
    H5Dclose(d);
    if (n < 0) parity_fail(c, "cannot read the shape of dataset '%s'", path);
    return n;
}

/* Read dataset `path` of exactly n elements into out (as `memtype`). */
static int dset_read(parity_ctx *c, const char *path, hid_t memtype, void *out, long n) {
    long have = dset_size(c, path);
    if (have < 0) return -1;
    if (have != n) {
        parity_fail(c, "dataset '%s' has %ld elements, the model expects %ld", path, have, n);
        return -1;
    }
    hid_t d = H5Dopen2(c->file, path, H5P_DEFAULT);
    herr_t st = d < 0 ? -1 : H5Dread(d, memtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, out);
    if (d >= 0) H5Dclose(d);
    if (st < 0) parity_fail(c, "cannot read dataset '%s'", path);
    return st < 0 ? -1 : 0;
}

/* Read a float dataset into a new buffer of exactly n floats; NULL on failure. */
static float *dset_floats(parity_ctx *c, const char *path, long n) {
    float *buf = malloc((size_t)(n > 0 ? n : 1) * sizeof *buf);
    if (!buf) {
        parity_fail(c, "out of memory reading '%s'", path);
        return NULL;
    }
    if (dset_read(c, path, H5T_NATIVE_FLOAT, buf, n) < 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* The fixture's config, B and T.  Returns 0, or -1 after reporting. */
/* train.weight_decay_policy of the fixture: "all" (decay every tensor) or, when absent, matrices. */
static int g_decay_all;
static uint64_t g_drop_key; /* dropout cases: the key the fixture's masks were made from (rows from 0) */

static int read_config(parity_ctx *c, gl_model_config *cfg, int *B, int *T) {
    char s[64];
    int bad = 0;
    config_defaults(cfg);
    bad |= attr_int(c, "vocab_size", &cfg->vocab_size);
    bad |= attr_int(c, "d_model", &cfg->d_model);
    bad |= attr_int(c, "n_layer", &cfg->n_layer);
    bad |= attr_int(c, "n_head", &cfg->n_head);
    bad |= attr_int(c, "n_kv_head", &cfg->n_kv_head);
    bad |= attr_int(c, "d_ff", &cfg->d_ff);
    bad |= attr_int(c, "seq_len", &cfg->seq_len);
    bad |= attr_float(c, "norm_eps", &cfg->norm_eps);
    bad |= attr_float(c, "rope_base", &cfg->rope_base);
    bad |= attr_int(c, "qk_norm", &cfg->qk_norm);
    bad |= attr_int(c, "tied", &cfg->tied);
    bad |= attr_int(c, "value_residual_last_k", &cfg->vr_last_k);
    bad |= attr_int(c, "decay_gates", &cfg->decay_gates);
    bad |= attr_int(c, "router_hidden", &cfg->router_hidden);
    bad |= attr_float(c, "tsa_lambda", &cfg->tsa_lambda);
    bad |= attr_int(c, "B", B);
    bad |= attr_int(c, "T", T);
    if (attr_str(c, "value_residual", s, sizeof s) || config_parse_value_residual(s, &cfg->value_residual)) {
        parity_fail(c, "value_residual '%s' not understood", s);
        bad = -1;
    }
    if (attr_str(c, "resformer_variant", s, sizeof s) ||
        config_parse_resformer_variant(s, &cfg->resformer_variant)) {
        parity_fail(c, "resformer_variant '%s' not understood", s);
        bad = -1;
    }
    if (attr_str(c, "depth_routing", s, sizeof s) || config_parse_depth_routing(s, &cfg->depth_routing)) {
        parity_fail(c, "depth_routing '%s' not understood", s);
        bad = -1;
    }
    if (attr_str(c, "exit_weighting", s, sizeof s) || config_parse_exit_weighting(s, &cfg->exit_weighting)) {
        parity_fail(c, "exit_weighting '%s' not understood", s);
        bad = -1;
    }
    /* SATFormer gate knobs and the decay policy are written only where they differ from
     * the defaults (relu, no bias, matrices) */
    if (H5Aexists(c->file, "sat_gate") > 0 &&
        (attr_str(c, "sat_gate", s, sizeof s) || config_parse_sat_gate(s, &cfg->sat_gate))) {
        parity_fail(c, "sat_gate '%s' not understood", s);
        bad = -1;
    }
    if (H5Aexists(c->file, "sat_gate_bias") > 0) bad |= attr_int(c, "sat_gate_bias", &cfg->sat_gate_bias);
    g_decay_all = 0;
    if (H5Aexists(c->file, "weight_decay_policy") > 0) {
        if (attr_str(c, "weight_decay_policy", s, sizeof s) || (strcmp(s, "all") && strcmp(s, "matrices"))) {
            parity_fail(c, "weight_decay_policy '%s' not understood", s);
            bad = -1;
        }
        g_decay_all = !strcmp(s, "all");
    }
    /* cross-layer attributes are written only by cross-layer cases; absent means none */
    if (H5Aexists(c->file, "cross_layer") > 0) {
        bad |= attr_int(c, "hc_expansion", &cfg->hc_expansion);
        if (attr_str(c, "cross_layer", s, sizeof s) || config_parse_cross_layer(s, &cfg->cross_layer)) {
            parity_fail(c, "cross_layer '%s' not understood", s);
            bad = -1;
        }
    }
    /* the TSA paper's model (backbone, tsa_form, dropout with its key) is written only where it is not
     * the default; absent means llama, gatelab, no dropout */
    g_drop_key = 0;
    if (H5Aexists(c->file, "backbone") > 0 &&
        (attr_str(c, "backbone", s, sizeof s) || config_parse_backbone(s, &cfg->backbone))) {
        parity_fail(c, "backbone '%s' not understood", s);
        bad = -1;
    }
    if (H5Aexists(c->file, "tsa_form") > 0 &&
        (attr_str(c, "tsa_form", s, sizeof s) || config_parse_tsa_form(s, &cfg->tsa_form))) {
        parity_fail(c, "tsa_form '%s' not understood", s);
        bad = -1;
    }
    if (H5Aexists(c->file, "exit_form") > 0 &&
        (attr_str(c, "exit_form", s, sizeof s) || config_parse_exit_form(s, &cfg->exit_form))) {
        parity_fail(c, "exit_form '%s' not understood", s);
        bad = -1;
    }
    if (H5Aexists(c->file, "dropout") > 0) {
        bad |= attr_float(c, "dropout", &cfg->dropout);
        char *end = NULL;
        if (attr_str(c, "drop_key", s, sizeof s) || !(g_drop_key = strtoull(s, &end, 16)) || *end) {
            parity_fail(c, "drop_key '%s' not understood", s);
            bad = -1;
        }
    }
    /* hard-routing attributes are written only by the mod and random cases */
    if (H5Aexists(c->file, "mod_capacity") > 0) {
        bad |= attr_float(c, "mod_capacity", &cfg->mod_capacity);
        bad |= attr_int(c, "mod_every", &cfg->mod_every);
        bad |= attr_float(c, "random_alpha", &cfg->random_alpha);
    }
    return bad ? -1 : 0;
}

/* ---- comparisons -------------------------------------------------------- */

static double max_abs(const float *a, long n) {
    double m = 0;
    for (long i = 0; i < n; i++) {
        double v = fabs((double)a[i]);
        if (v > m || isnan(v)) m = v;
    }
    return m;
}

/* max|a - ref| / max(max|ref|, floor); NaN anywhere gives NaN. */
static double rel_max_diff(const float *a, const float *ref, long n, double floor) {
    double d = 0;
    for (long i = 0; i < n; i++) {
        double e = fabs((double)a[i] - (double)ref[i]);
        if (e > d || isnan(e)) d = e;
    }
    double s = max_abs(ref, n);
    return d / (s > floor ? s : floor);
}

static double rel_scalar(double a, double ref) { return fabs(a - ref) / fabs(ref); }

/* The reference's mixing blocks (convention 8), computed here from the
 * fixture's config rather than taken from the model. */
static int mixes(const gl_model_config *cfg, int n) {
    if (cfg->value_residual == VR_NONE || n < 1 || n >= cfg->n_layer) return 0;
    return cfg->vr_last_k == 0 || n >= cfg->n_layer - cfg->vr_last_k;
}

/* Every parameter of the model is in the fixture with the same size, and
 * every fixture parameter is in the model.  Loads the values.  Returns the
 * number of structural failures (missing, extra or mis-sized tensors), after
 * which no numeric comparison means anything; a decay-flag mismatch is
 * reported but does not stop the numeric checks. */
static int load_params(parity_ctx *c, gl_model *m) {
    char path[128];
    int before = c->failures, decay_failures = 0;
    for (int i = 0; i < m->n_tensors; i++) {
        const gl_tensor *t = &m->tensors[i];
        snprintf(path, sizeof path, "params/%s", t->name);
        if (!has_path(c, path)) {
            parity_fail(c, "the model has tensor '%s' (%zu floats) that the fixture lacks", t->name, t->size);
            continue;
        }
        if (dset_read(c, path, H5T_NATIVE_FLOAT, m->params + t->offset, (long)t->size) < 0) continue;
        /* make_fixtures.py records which tensors AdamW decays (convention 11). */
        hid_t d = H5Dopen2(c->file, path, H5P_DEFAULT);
        if (d >= 0 && H5Aexists(d, "decay") > 0) {
            int decay = -1;
            hid_t a = H5Aopen(d, "decay", H5P_DEFAULT);
            if (a >= 0 && H5Aread(a, H5T_NATIVE_INT, &decay) >= 0 && decay != t->decay) {
                parity_fail(c, "tensor '%s': model decay flag %d, reference %d", t->name, t->decay, decay);
                decay_failures++;
            }
            if (a >= 0) H5Aclose(a);
        }
        if (d >= 0) H5Dclose(d);
    }
    hid_t g = H5Gopen2(c->file, "params", H5P_DEFAULT);
    if (g < 0) {
        parity_fail(c, "group 'params' missing");
        return c->failures - before - decay_failures;
    }
    H5G_info_t info;
    if (H5Gget_info(g, &info) >= 0) {
        for (hsize_t i = 0; i < info.nlinks; i++) {
            char name[GL_NAME_MAX + 16];
            ssize_t len = H5Lget_name_by_idx(g, ".", H5_INDEX_NAME, H5_ITER_INC, i, name, sizeof name,
                                             H5P_DEFAULT);
            if (len < 0 || (size_t)len >= sizeof name) {
                parity_fail(c, "cannot read the name of params entry %llu", (unsigned long long)i);
                continue;
            }
            if (!model_find_tensor(m, name))
                parity_fail(c, "the fixture has tensor '%s' that the model lacks", name);
        }
    }
    H5Gclose(g);
    return c->failures - before - decay_failures;
}

/* Worst per-tensor relative difference between the model block `vals`
 * (params or grads) and fixture group `group`; writes the worst tensor name. */
static double compare_tensors(parity_ctx *c, const gl_model *m, const float *vals, const char *group,
                              double floor, char *worst_name, size_t wlen) {
    double worst = 0;
    char path[128];
    snprintf(worst_name, wlen, "-");
    for (int i = 0; i < m->n_tensors; i++) {
        const gl_tensor *t = &m->tensors[i];
        snprintf(path, sizeof path, "%s/%s", group, t->name);
        float *ref = dset_floats(c, path, (long)t->size);
        if (!ref) continue;
        double e = rel_max_diff(vals + t->offset, ref, (long)t->size, floor);
        if (e > worst || isnan(e)) {
            worst = e;
            snprintf(worst_name, wlen, "%s (max|ref| %.2e)", t->name, max_abs(ref, (long)t->size));
        }
        free(ref);
    }
    return worst;
}

/* The kept activations: SATFormer gates, ResFormer λ, TSA p, exit confidences. */
static void compare_activations(parity_ctx *c, const gl_model *m, int B, int T) {
    const gl_model_config *cfg = &m->cfg;
    int L = cfg->n_layer, Hkv = cfg->n_kv_head;
    long BT = (long)B * T;
    char where[96];

    for (int n = 0; n < L; n++)
        if (config_layer_mixes_v1(cfg, n) != mixes(cfg, n))
            parity_fail(c, "config_layer_mixes_v1(%d) = %d, reference %d", n, config_layer_mixes_v1(cfg, n),
                        mixes(cfg, n));

    if (has_path(c, "sat/alpha")) {
        float *ref = dset_floats(c, "sat/alpha", (long)L * BT * Hkv);
        if (ref) {
            double worst = 0;
            snprintf(where, sizeof where, "-");
            for (int n = 0; n < L; n++) {
                if (!mixes(cfg, n)) continue;
                if (!m->A[n].gate) {
                    parity_fail(c, "block %d mixes V1 but m.A[%d].gate is NULL", n, n);
                    continue;
                }
                double e = rel_max_diff(m->A[n].gate, ref + (long)n * BT * Hkv, BT * Hkv, 1e-6);
                if (e > worst || isnan(e)) {
                    worst = e;
                    snprintf(where, sizeof where, "block %d", n);
                }
            }
            parity_check(c, "sat/alpha", worst, TOL_ACT, where);
            free(ref);
        }
    }
    if (has_path(c, "resformer/lambda")) {
        float *ref = dset_floats(c, "resformer/lambda", (long)L * 2);
        if (ref) {
            double worst = 0;
            snprintf(where, sizeof where, "-");
            for (int n = 0; n < L; n++) {
                float l[2];
                model_resformer_lambda(m, n, &l[0], &l[1]);
                for (int j = 0; j < 2; j++) {
                    double s = fabs(ref[2 * n + j]) > 1e-6 ? fabs(ref[2 * n + j]) : 1e-6;
                    double e = fabs((double)l[j] - ref[2 * n + j]) / s;
                    if (e > worst || isnan(e)) {
                        worst = e;
                        snprintf(where, sizeof where, "block %d λ%d = %.6g, ref %.6g", n, j + 1, l[j],
                                 ref[2 * n + j]);
                    }
                }
            }
            parity_check(c, "resformer/lambda", worst, TOL_ACT, where);
            free(ref);
        }
    }
    if (has_path(c, "tsa/p")) {
        float *ref = dset_floats(c, "tsa/p", (long)(L - 1) * BT);
        if (ref) {
            double worst = 0;
            snprintf(where, sizeof where, "-");
            for (int n = 1; n < L; n++) {
                if (!m->A[n].p) {
                    parity_fail(c, "TSA block %d has no halting probabilities (m.A[%d].p is NULL)", n, n);
                    continue;
                }
                double e = rel_max_diff(m->A[n].p, ref + (long)(n - 1) * BT, BT, 1e-6);
                if (e > worst || isnan(e)) {
                    worst = e;
                    snprintf(where, sizeof where, "router %d", n - 1);
                }
            }
            parity_check(c, "tsa/p", worst, TOL_ACT, where);
            free(ref);
        }
    }
    if (has_path(c, "route/keep")) {
        /* the selection (MoD's top-k, random's draw) must be the reference's exactly: one flipped
         * pair changes the model */
        float *ref = dset_floats(c, "route/keep", (long)L * BT);
        if (ref) {
            long flips = 0;
            snprintf(where, sizeof where, "-");
            for (int n = 0; n < L; n++) {
                if (!m->A[n].keep) {
                    parity_fail(c, "hard-routing block %d has no selection (m.A[%d].keep is NULL)", n, n);
                    continue;
                }
                for (long t = 0; t < BT; t++)
                    if (m->A[n].keep[t] != ref[(long)n * BT + t] && !flips++)
                        snprintf(where, sizeof where, "block %d token %ld: %g, ref %g", n, t, m->A[n].keep[t],
                                 ref[(long)n * BT + t]);
            }
            parity_check(c, "route/keep (pairs that differ)", (double)flips, 0.0, where);
            free(ref);
        }
    }
    if (has_path(c, "mod/weight")) {
        float *ref = dset_floats(c, "mod/weight", (long)L * BT);
        if (ref) {
            double worst = 0;
            snprintf(where, sizeof where, "-");
            for (int n = 1; n < L; n++) {
                if (!config_block_routed(cfg, n)) continue;
                double e = rel_max_diff(m->A[n].mod_g, ref + (long)n * BT, BT, 1e-6);
                if (e > worst || isnan(e)) {
                    worst = e;
                    snprintf(where, sizeof where, "block %d", n);
                }
            }
            parity_check(c, "mod/weight", worst, TOL_ACT, where);
            free(ref);
        }
    }
    if (has_path(c, "exit/confidence")) {
        float *ref = dset_floats(c, "exit/confidence", (long)L * BT);
        if (ref) {
            if (!m->exit_conf)
                parity_fail(c, "early exit model has no exit confidences (m.exit_conf is NULL)");
            else
                parity_check(c, "exit/confidence", rel_max_diff(m->exit_conf, ref, (long)L * BT, 1e-6), TOL_ACT,
                             NULL);
            free(ref);
        }
    }
}

/* Early exit in the TSA paper's form at the fixture's threshold (root attribute exit_tau, group
 * exit_paper; make_fixtures.py chose τ with every confidence at least 1e-4 away from it): a forward at
 * m.exit_tau = τ on the fixture's parameters, without dropout, must exit every token after the
 * reference's block exactly (exit_paper/block: 1..L-2, or L-1 for the final head), predict with that
 * exit's logits, and give the reference's loss and active fractions (α and the paper's α, which follow
 * from the blocks: exact up to float rounding).  Leaves m.exit_tau at 0 and m.drop_key as it was. */
static void compare_exit_paper(parity_ctx *c, gl_model *m, const int *tokens, const int *targets,
                               const float *mask, int B, int T) {
    const int L = m->cfg.n_layer, V = m->cfg.vocab_size;
    const long BT = (long)B * T;
    float tau, ref_loss, ref_af[2], *ref_logits = NULL;
    int *ref_block = malloc((size_t)BT * sizeof *ref_block);
    char where[128];
    if (!ref_block) {
        parity_fail(c, "out of memory");
        return;
    }
    if (attr_float(c, "exit_tau", &tau) || dset_read(c, "exit_paper/block", H5T_NATIVE_INT, ref_block, BT) ||
        dset_read(c, "exit_paper/loss", H5T_NATIVE_FLOAT, &ref_loss, 1) ||
        dset_read(c, "exit_paper/active_frac", H5T_NATIVE_FLOAT, ref_af, 2) ||
        !(ref_logits = dset_floats(c, "exit_paper/logits", BT * V)))
        goto cleanup;
    const uint64_t key = m->drop_key;
    m->drop_key = 0; /* evaluation: no dropout */
    m->exit_tau = tau;
    float loss = model_forward(m, tokens, targets, mask, B, T);
    m->exit_tau = 0.0f;
    m->drop_key = key;

    long flips = 0;
    snprintf(where, sizeof where, "-");
    for (long t = 0; t < BT; t++) {
        int e = m->frozen[t] ? m->frozen[t] : L - 1; /* frozen: the block exited after, 0 = none */
        if (e != ref_block[t] && !flips++)
            snprintf(where, sizeof where, "token %ld: exit %d, ref %d (τ %.6g)", t, e, ref_block[t], tau);
    }
    parity_check(c, "exit_paper/block (differ)", (double)flips, 0.0, where);
    parity_check(c, "exit_paper/logits", rel_max_diff(m->logits, ref_logits, BT * V, 1e-6), TOL_LOGITS, NULL);
    snprintf(where, sizeof where, "%.7g vs ref %.7g", loss, ref_loss);
    parity_check(c, "exit_paper/loss", rel_scalar(loss, ref_loss), TOL_LOSS, where);
    snprintf(where, sizeof where, "α %.7g vs %.7g, paper α %.7g vs %.7g", m->active_frac, ref_af[0],
             m->active_frac_paper, ref_af[1]);
    double e = fmax(rel_scalar(m->active_frac, ref_af[0]), rel_scalar(m->active_frac_paper, ref_af[1]));
    parity_check(c, "exit_paper/active_frac", e, TOL_LOSS, where);
cleanup:
    free(ref_logits);
    free(ref_block);
}

/* ---- one fixture -------------------------------------------------------- */

/* Run every check of one fixture; returns the number of failed checks. */
static int parity_case(const fixture *fx) {
    parity_ctx c = {.file = -1, .failures = 0, .case_name = fx->name};
    gl_model m;
    int model_ok = 0;
    int B = 0, T = 0, n_steps = 0;
    int *tokens = NULL, *targets = NULL;
    float *mask = NULL, *ref = NULL;
    char err[512], where[128];
    gl_model_config cfg;

    memset(&m, 0, sizeof m);
    c.file = H5Fopen(fx->path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (c.file < 0) {
        parity_fail(&c, "cannot open %s as HDF5; regenerate with `make fixtures`", fx->path);
        goto cleanup;
    }
    if (read_config(&c, &cfg, &B, &T) < 0) goto cleanup;
    if (model_init(&m, &cfg, B, err, sizeof err) != 0) {
        parity_fail(&c, "model_init refused the fixture's config: %s", err);
        goto cleanup;
    }
    model_ok = 1;
    m.drop_key = g_drop_key; /* dropout cases: the fixture's masks, at every forward below */
    long BT = (long)B * T, V = cfg.vocab_size;

    int structural = load_params(&c, &m);
    tokens = malloc((size_t)BT * sizeof *tokens);
    targets = malloc((size_t)BT * sizeof *targets);
    mask = malloc((size_t)BT * sizeof *mask);
    if (!tokens || !targets || !mask) {
        parity_fail(&c, "out of memory");
        goto cleanup;
    }
    if (dset_read(&c, "tokens", H5T_NATIVE_INT, tokens, BT) || dset_read(&c, "targets", H5T_NATIVE_INT, targets, BT) ||
        dset_read(&c, "mask", H5T_NATIVE_FLOAT, mask, BT))
        goto cleanup;
    if (structural) goto cleanup; /* parameters did not load: nothing below means anything */

    /* forward */
    float loss = model_forward(&m, tokens, targets, mask, B, T);
    float ref_loss, ref_task;
    if (dset_read(&c, "loss", H5T_NATIVE_FLOAT, &ref_loss, 1) || dset_read(&c, "task_loss", H5T_NATIVE_FLOAT, &ref_task, 1))
        goto cleanup;
    snprintf(where, sizeof where, "%.7g vs ref %.7g", loss, ref_loss);
    parity_check(&c, "loss", rel_scalar(loss, ref_loss), TOL_LOSS, where);
    if (m.loss != loss) parity_fail(&c, "model_forward returned %.9g but m.loss is %.9g", loss, m.loss);
    snprintf(where, sizeof where, "%.7g vs ref %.7g", m.task_loss, ref_task);
    parity_check(&c, "task_loss", rel_scalar(m.task_loss, ref_task), TOL_LOSS, where);
    if (!(ref = dset_floats(&c, "logits", BT * V))) goto cleanup;
    parity_check(&c, "logits", rel_max_diff(m.logits, ref, BT * V, 1e-6), TOL_LOGITS, NULL);
    free(ref);
    ref = NULL;
    compare_activations(&c, &m, B, T);

    /* backward */
    model_zero_grad(&m);
    model_backward(&m);
    double worst = compare_tensors(&c, &m, m.grads, "grads", 1e-6, where, sizeof where);
    parity_check(&c, "grads (per tensor)", worst, TOL_GRAD, where);
    if (has_path(&c, "exit_paper/block")) compare_exit_paper(&c, &m, tokens, targets, mask, B, T);

    /* AdamW: forward, zero_grad, backward, step — as make_fixtures.py does */
    gl_adamw opt = {.decay_all = g_decay_all};
    float lr;
    if (attr_int(&c, "n_adam_steps", &n_steps) || attr_float(&c, "beta1", &opt.beta1) ||
        attr_float(&c, "beta2", &opt.beta2) || attr_float(&c, "eps", &opt.eps) ||
        attr_float(&c, "weight_decay", &opt.weight_decay) || attr_float(&c, "grad_clip", &opt.grad_clip) ||
        attr_float(&c, "lr", &lr))
        goto cleanup;
    if (!(ref = dset_floats(&c, "losses_adam", n_steps + 1))) goto cleanup;
    memset(m.adam_m, 0, m.n_params * sizeof *m.adam_m);
    memset(m.adam_v, 0, m.n_params * sizeof *m.adam_v);
    double worst_loss = 0;
    snprintf(where, sizeof where, "-");
    for (int s = 0; s <= n_steps; s++) {
        float l = model_forward(&m, tokens, targets, mask, B, T);
        double e = rel_scalar(l, ref[s]);
        if (e > worst_loss || isnan(e)) {
            worst_loss = e;
            snprintf(where, sizeof where, "before step %d: %.7g vs ref %.7g", s + 1, l, ref[s]);
        }
        if (s == n_steps) break;
        model_zero_grad(&m);
        model_backward(&m);
        adamw_step(&m, &opt, lr, s + 1);
    }
    free(ref);
    ref = NULL;
    parity_check(&c, "losses_adam", worst_loss, TOL_ADAM_LOSS, where);
    worst = compare_tensors(&c, &m, m.params, "params_after", 1e-6, where, sizeof where);
    parity_check(&c, "params_after (per tensor)", worst, TOL_ADAM_PARAM, where);

cleanup:
    free(ref);
    free(tokens);
    free(targets);
    free(mask);
    if (model_ok) model_free(&m);
    if (c.file >= 0) H5Fclose(c.file);
    return c.failures;
}

static void test_fixture(void **state) {
    const fixture *fx = *state;
    int failures = parity_case(fx);
    if (failures) fail_msg("%s: %d parity check(s) failed (see the FAIL lines above)", fx->name, failures);
}

static void test_no_fixtures(void **state) {
    (void)state;
    fail_msg("no *.h5 fixtures in '%s' — run `make fixtures` (or set GATELAB_FIXTURES)", g_fixture_dir);
}

static int cmp_fixture(const void *a, const void *b) {
    return strcmp(((const fixture *)a)->name, ((const fixture *)b)->name);
}

static void find_fixtures(void) {
    const char *env = getenv("GATELAB_FIXTURES");
    snprintf(g_fixture_dir, sizeof g_fixture_dir, "%s", env && *env ? env : "tests/fixtures");
    DIR *d = opendir(g_fixture_dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && g_n_fixtures < MAX_FIXTURES) {
        size_t n = strlen(e->d_name);
        if (n < 4 || strcmp(e->d_name + n - 3, ".h5") != 0 || n - 3 >= sizeof g_fixtures[0].name) continue;
        fixture *f = &g_fixtures[g_n_fixtures++];
        snprintf(f->path, sizeof f->path, "%s/%s", g_fixture_dir, e->d_name);
        memcpy(f->name, e->d_name, n - 3);
        f->name[n - 3] = '\0';
    }
    closedir(d);
    qsort(g_fixtures, (size_t)g_n_fixtures, sizeof g_fixtures[0], cmp_fixture);
}

int main(void) {
    static struct CMUnitTest tests[MAX_FIXTURES];
    find_fixtures();
    int n = g_n_fixtures;
    if (n == 0) {
        tests[0] = (struct CMUnitTest){"fixtures_present", test_no_fixtures, NULL, NULL, NULL};
        n = 1;
    }
    for (int i = 0; i < g_n_fixtures; i++)
        tests[i] = (struct CMUnitTest){g_fixtures[i].name, test_fixture, NULL, NULL, &g_fixtures[i]};
    printf("parity: %d fixture(s) in %s\n", g_n_fixtures, g_fixture_dir);
    return _cmocka_run_group_tests("parity", tests, (size_t)n, NULL, NULL);
}
