/*
 * fuzz_ckpt.c — libFuzzer target for the checkpoint loader (store/ckpt.c).
 * The input is a checkpoint file; its trailing FNV-1a checksum is recomputed
 * before loading (a forger can do that, and otherwise nearly every mutation
 * would stop at the checksum), so the checks of every field are reached.
 * ckpt_read_info and ckpt_load into a fixed tiny model must either succeed or
 * fail with a message; a success must leave finite parameters and a state
 * within bounds.
 *
 * GATELAB_FUZZ_SEED_OUT=FILE: write a valid checkpoint of the tiny model to
 * FILE and exit (how tests/fuzz/ckpt/ was seeded).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/model.h"
#include "store/ckpt.h"

static gl_model g_model;
static char g_path[64];

static void tiny_model(void) {
    gl_model_config c;
    config_defaults(&c);
    c.vocab_size = 4;
    c.d_model = 8;
    c.n_layer = 2;
    c.n_head = 1;
    c.n_kv_head = 1;
    c.d_ff = 8;
    c.seq_len = 4;
    c.value_residual = VR_SATFORMER;
    char err[256];
    if (model_init(&g_model, &c, 1, err, sizeof err)) {
        fprintf(stderr, "fuzz_ckpt: %s\n", err);
        exit(1);
    }
    model_init_weights(&g_model, 1);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    tiny_model();
    snprintf(g_path, sizeof g_path, "/tmp/gatelab_fuzz_ckpt_%d", (int)getpid());
    const char *seed = getenv("GATELAB_FUZZ_SEED_OUT");
    if (seed) {
        gl_train_state st;
        memset(&st, 0, sizeof st);
        st.step = 3;
        st.vocab_size = 4;
        memcpy(st.vocab, "abcd", 4);
        char err[512];
        if (ckpt_save(seed, &g_model, &st, "[model]\nd_model = 8\n", 0, err, sizeof err)) {
            fprintf(stderr, "%s\n", err);
            exit(1);
        }
        exit(0);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 1 << 20) return 0;
    uint8_t *b = malloc(size ? size : 1);
    if (!b) return 0;
    memcpy(b, data, size);
    if (size > 8) {
        uint64_t h = 0xcbf29ce484222325ULL;
        for (size_t i = 0; i < size - 8; i++) {
            h ^= b[i];
            h *= 0x100000001b3ULL;
        }
        memcpy(b + size - 8, &h, 8);
    }
    FILE *f = fopen(g_path, "wb");
    if (!f) abort();
    if (size && fwrite(b, 1, size, f) != size) abort();
    fclose(f);
    free(b);
    char err[1024] = "", *config = NULL;
    ckpt_info info;
    if (ckpt_read_info(g_path, &config, &info, err, sizeof err) == 0) {
        if (info.step < 0 || info.vocab_size < 1 || info.vocab_size > BPE_VOCAB_MAX || !config) abort(); /* > 256: BPE */
        free(config);
        gl_train_state st;
        err[0] = '\0';
        if (ckpt_load(g_path, &g_model, &st, 0, err, sizeof err) == 0) {
            if (st.step < 0 || st.vocab_size != 4) abort();
            for (size_t i = 0; i < g_model.n_params; i++)
                if (!isfinite(g_model.params[i]) || !(g_model.adam_v[i] >= 0)) abort();
        } else if (!err[0]) {
            abort();
        }
    } else if (!err[0]) {
        abort();
    }
    unlink(g_path);
    return 0;
}
