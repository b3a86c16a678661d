/*
 * test_export.c — `gatelab export` (harness/store/export.c): a tiny model built in
 * memory is exported, then read back with the HDF5 library itself: every
 * tensor-table entry is a float32 dataset of the right name, shape and
 * values, the vocabulary and the config attributes are there.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "tmpdir.h"
#include <hdf5.h>

#include "store/export.h"


static int setup(void **state) {
    (void)state;
    return tmpdir_make("export");
}


static int read_int_attr(hid_t f, const char *name) {
    int v = -12345;
    hid_t a = H5Aopen(f, name, H5P_DEFAULT);
    assert_true(a >= 0);
    assert_true(H5Aread(a, H5T_NATIVE_INT, &v) >= 0);
    H5Aclose(a);
    return v;
}

static float read_float_attr(hid_t f, const char *name) {
    float v = -1;
    hid_t a = H5Aopen(f, name, H5P_DEFAULT);
    assert_true(a >= 0);
    assert_true(H5Aread(a, H5T_NATIVE_FLOAT, &v) >= 0);
    H5Aclose(a);
    return v;
}

/* Read a variable-length UTF-8 string attribute into out. */
static void read_str_attr(hid_t f, const char *name, char *out, size_t n) {
    hid_t a = H5Aopen(f, name, H5P_DEFAULT);
    assert_true(a >= 0);
    hid_t ft = H5Aget_type(a);
    assert_true(H5Tis_variable_str(ft) > 0);
    assert_int_equal(H5Tget_cset(ft), H5T_CSET_UTF8);
    hid_t mt = H5Tcopy(H5T_C_S1);
    H5Tset_size(mt, H5T_VARIABLE);
    H5Tset_cset(mt, H5T_CSET_UTF8);
    char *s = NULL;
    assert_true(H5Aread(a, mt, &s) >= 0);
    snprintf(out, n, "%s", s);
    H5free_memory(s);
    H5Tclose(mt);
    H5Tclose(ft);
    H5Aclose(a);
}

static void test_export_round_trip(void **state) {
    (void)state;
    char path[512], err[512] = "";
    snprintf(path, sizeof path, "%s/model.h5", g_dir);
    gl_model_config c;
    config_defaults(&c);
    c.vocab_size = 20;
    c.d_model = 16;
    c.n_layer = 3;
    c.n_head = 2;
    c.n_kv_head = 1;
    c.d_ff = 24;
    c.seq_len = 8;
    c.tied = 0;
    c.value_residual = VR_SATFORMER;
    c.depth_routing = DR_TSA;
    c.tsa_lambda = 0.25f;
    gl_model m;
    int rc = model_init(&m, &c, 1, err, sizeof err);
    if (rc) print_message("model_init: %s\n", err);
    assert_int_equal(rc, 0);
    model_init_weights(&m, 11);
    gl_train_state st;
    memset(&st, 0, sizeof st);
    st.step = 123;
    st.vocab_size = 20;
    for (int i = 0; i < 20; i++) st.vocab[i] = (uint8_t)(' ' + i);
    const char *ini = "[model]\nd_model = 16\n";
    rc = export_model(path, &m, &st, ini, err, sizeof err);
    if (rc) print_message("export: %s\n", err);
    assert_int_equal(rc, 0);

    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    assert_true(f >= 0);
    hsize_t nobj = 0;
    H5G_info_t gi;
    assert_true(H5Gget_info(f, &gi) >= 0);
    nobj = gi.nlinks;
    size_t bad_shape = 0, bad_values = 0;
    for (int i = 0; i < m.n_tensors; i++) {
        const gl_tensor *t = &m.tensors[i];
        hid_t ds = H5Dopen2(f, t->name, H5P_DEFAULT);
        if (ds < 0) {
            print_message("missing dataset %s\n", t->name);
            bad_shape++;
            continue;
        }
        hid_t sp = H5Dget_space(ds), ty = H5Dget_type(ds);
        hsize_t dims[2] = {0, 0};
        int rank = H5Sget_simple_extent_dims(sp, dims, NULL);
        int ok = rank == t->ndim && dims[0] == (hsize_t)t->shape[0] && (rank == 1 || dims[1] == (hsize_t)t->shape[1]) &&
                 H5Tequal(ty, H5T_IEEE_F32LE) > 0;
        if (!ok) {
            print_message("%s: rank %d dims (%llu, %llu), want ndim %d (%d, %d)\n", t->name, rank,
                          (unsigned long long)dims[0], (unsigned long long)dims[1], t->ndim, t->shape[0], t->shape[1]);
            bad_shape++;
        } else {
            float *buf = malloc(t->size * sizeof(float));
            assert_true(H5Dread(ds, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) >= 0);
            bad_values += memcmp(buf, m.params + t->offset, t->size * sizeof(float)) != 0;
            free(buf);
        }
        H5Tclose(ty);
        H5Sclose(sp);
        H5Dclose(ds);
    }
    print_message("export: %d tensors, %zu wrong name/shape, %zu with different values; %llu root objects\n",
                  m.n_tensors, bad_shape, bad_values, (unsigned long long)nobj);
    assert_int_equal(bad_shape + bad_values, 0);
    assert_int_equal(nobj, (hsize_t)m.n_tensors + 1); /* + vocab */
    assert_non_null(model_find_tensor(&m, "head"));
    assert_non_null(model_find_tensor(&m, "layers.2.attn.alpha"));
    assert_non_null(model_find_tensor(&m, "routers.1.fc2_b"));

    uint8_t vocab[20];
    hid_t vd = H5Dopen2(f, "vocab", H5P_DEFAULT);
    assert_true(vd >= 0);
    assert_true(H5Dread(vd, H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, vocab) >= 0);
    H5Dclose(vd);
    assert_memory_equal(vocab, st.vocab, 20);

    assert_int_equal(read_int_attr(f, "vocab_size"), 20);
    assert_int_equal(read_int_attr(f, "d_model"), 16);
    assert_int_equal(read_int_attr(f, "n_layer"), 3);
    assert_int_equal(read_int_attr(f, "n_head"), 2);
    assert_int_equal(read_int_attr(f, "n_kv_head"), 1);
    assert_int_equal(read_int_attr(f, "d_ff"), 24);
    assert_int_equal(read_int_attr(f, "seq_len"), 8);
    assert_int_equal(read_int_attr(f, "qk_norm"), 1);
    assert_int_equal(read_int_attr(f, "tied"), 0);
    assert_int_equal(read_int_attr(f, "value_residual_last_k"), 0);
    assert_int_equal(read_int_attr(f, "router_hidden"), 16);
    assert_int_equal(read_int_attr(f, "step"), 123);
    assert_true(read_float_attr(f, "norm_eps") == 1e-6f);
    assert_true(read_float_attr(f, "rope_base") == 10000.0f);
    assert_true(read_float_attr(f, "tsa_lambda") == 0.25f);
    char s[256];
    read_str_attr(f, "value_residual", s, sizeof s);
    assert_string_equal(s, "satformer");
    read_str_attr(f, "depth_routing", s, sizeof s);
    assert_string_equal(s, "tsa");
    read_str_attr(f, "resformer_variant", s, sizeof s);
    assert_string_equal(s, config_resformer_variant_name(c.resformer_variant));
    read_str_attr(f, "exit_form", s, sizeof s);
    assert_string_equal(s, "gatelab");
    read_str_attr(f, "config", s, sizeof s);
    assert_string_equal(s, ini);
    H5Fclose(f);
    print_message("vocab and config attributes read back\n");

    char tmp[600];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    struct stat sb;
    assert_int_not_equal(stat(tmp, &sb), 0);
    rc = export_model("/nonexistent/dir/model.h5", &m, &st, ini, err, sizeof err);
    print_message("export into a missing folder: \"%s\"\n", err);
    assert_int_equal(rc, -1);
    assert_non_null(strstr(err, "/nonexistent/dir/model.h5.tmp"));
    assert_non_null(strstr(err, "H5Fcreate"));
    model_free(&m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_export_round_trip),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
