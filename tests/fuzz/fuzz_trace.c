/*
 * fuzz_trace.c — libFuzzer target for the trace reader (store/trace.c): the
 * input is written as a trace.h5 and read with trace_read, which must either
 * succeed with a consistent result (category codes 0..2, steps not -1) or
 * fail with a message.  Built with TR_READ_TRIES=1 (no one-second retry of a
 * cut-short file, the everyday input here).  HDF5 itself is not instrumented;
 * what is checked is gatelab's handling of what the library returns.
 *
 * GATELAB_FUZZ_SEED_OUT=DIR: write small valid traces (plain, SATFormer, TSA
 * with rows) to DIR and exit (how tests/fuzz/trace/ was seeded).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hdf5.h>

#include "store/trace.h"

static char g_path[64];

static void write_seeds(const char *dir) {
    enum { L = 2, HKV = 1, P = 4 };
    int tok[P] = {0, 1, 2, 3};
    uint8_t cat[P] = {0, 1, 2, 0};
    float alpha[L * P * HKV] = {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f, 0.7f, 0.8f};
    float p[(L - 1) * P] = {0.1f, 0.9f, 0.4f, 0.6f};
    gl_trace_desc ds[3] = {
        {.n_layer = L, .n_kv_head = HKV, .n_probe = P, .config_ini = "[model]\n"},
        {.n_layer = L, .n_kv_head = HKV, .n_probe = P, .config_ini = "[model]\nvalue_residual = satformer\n"},
        {.n_layer = L, .n_kv_head = HKV, .n_router = L - 1, .n_probe = P, .config_ini = "[model]\n"},
    };
    ds[1].has[GATE_ALPHA] = 1;
    ds[2].has[GATE_P] = 1;
    for (int k = 0; k < 3; k++) {
        char path[4096], err[1024];
        snprintf(path, sizeof path, "%s/seed%d.h5", dir, k);
        gl_trace *t = NULL;
        if (trace_create(&t, path, &ds[k], tok, cat, err, sizeof err)) goto fail;
        const float *gates[GATE_COUNT] = {0};
        if (ds[k].has[GATE_ALPHA]) gates[GATE_ALPHA] = alpha;
        if (ds[k].has[GATE_P]) gates[GATE_P] = p;
        for (long s = 0; s < 2 * k; s += 1)
            if (trace_append(t, s * 10, 1.0f, 2.0f, gates, err, sizeof err)) goto fail;
        trace_close(t);
        continue;
    fail:
        fprintf(stderr, "%s\n", err);
        exit(1);
    }
    exit(0);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    snprintf(g_path, sizeof g_path, "/tmp/gatelab_fuzz_trace_%d.h5", (int)getpid());
    const char *seed = getenv("GATELAB_FUZZ_SEED_OUT");
    if (seed) write_seeds(seed);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 1 << 18) return 0;
    FILE *f = fopen(g_path, "wb");
    if (!f) abort();
    if (size && fwrite(data, 1, size, f) != size) abort();
    fclose(f);
    gl_trace_data d;
    char err[1024] = "";
    if (trace_read_flags(g_path, &d, TRACE_READ_CURRENT_ONLY, err, sizeof err) == 0) {
        for (int i = 0; i < d.n_probe; i++)
            if (d.probe_category[i] > 2) abort();
        for (int s = 0; s < d.n_steps; s++)
            if (d.step[s] < 0) abort();
        trace_data_free(&d);
    } else if (!err[0]) {
        abort();
    }
    unlink(g_path);
    H5garbage_collect(); /* HDF5's free lists would otherwise grow past the fuzzer's RSS limit */
    return 0;
}
