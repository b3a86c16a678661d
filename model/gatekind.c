/*
 * gatekind.c — the gate table (gatekind.h) expanded from GL_GATES in
 * variants.h: the static description of each gate, whether a config has it,
 * and where the forward pass keeps its values.  The trace writer copies
 * those values; it never recomputes a gate (STYLE.md).
 *
 * Deliberately not here: I/O (the trace is harness/store/trace.c), statistics
 * (analysis/), overrides (model.c, valueres.c).
 */
#include "gatekind.h"

#include <assert.h>
#include <string.h>

#define GK_INFO(id, key, group, dataset, a0, a1, a2, coef, has, src, abl, title, symbol) \
    [id] = {key, group, dataset, {a0, a1, a2}, coef, abl, title, symbol},
const gl_gate_info gatekind_info[GATE_COUNT] = {GL_GATES(GK_INFO)};
#undef GK_INFO
_Static_assert(sizeof gatekind_info / sizeof gatekind_info[0] == GATE_COUNT, "one gl_gate_info per gate");

int gatekind_has(const gl_model_config *c, gl_gate g) {
    switch (g) {
#define GK_HAS(id, key, group, dataset, a0, a1, a2, coef, has, src, abl, title, symbol) \
    case id: return (has);
        GL_GATES(GK_HAS)
#undef GK_HAS
    }
    return 0;
}

const float *gatekind_src(const gl_model *m, gl_gate g, int n) {
    const size_t N = (size_t)m->B * m->cur_T;
    (void)N;
    assert(gatekind_has(&m->cfg, g));
    switch (g) {
#define GK_SRC(id, key, group, dataset, a0, a1, a2, coef, has, src, abl, title, symbol) \
    case id: return (src);
        GL_GATES(GK_SRC)
#undef GK_SRC
    }
    return NULL;
}

int gatekind_per_token(gl_gate g) { return gatekind_info[g].axis[1] == GAX_TOKEN; }

const char *gatekind_axis_name(gl_gate_axis a) {
    switch (a) {
    case GAX_LAYER: return "layer";
    case GAX_ROUTER: return "router";
    case GAX_TOKEN: return "token";
    case GAX_KV_HEAD: return "kv_head";
    case GAX_COEF: return "coef";
    case GAX_NONE: break;
    }
    return "";
}

static long gk_axis_size(gl_gate_axis a, int n_layer, int n_kv_head, long n_token) {
    switch (a) {
    case GAX_LAYER: return n_layer;
    case GAX_ROUTER: return n_layer - 1;
    case GAX_TOKEN: return n_token;
    case GAX_KV_HEAD: return n_kv_head;
    case GAX_COEF: return 2;
    case GAX_NONE: break;
    }
    return 1;
}

int gatekind_dims(gl_gate g, int n_layer, int n_kv_head, long n_token, long dims[3]) {
    int r = 0;
    for (int i = 0; i < 3; i++)
        if (gatekind_info[g].axis[i] != GAX_NONE) dims[r++] = gk_axis_size(gatekind_info[g].axis[i], n_layer, n_kv_head, n_token);
    return r;
}

size_t gatekind_size(gl_gate g, int n_layer, int n_kv_head, long n_token) {
    long dims[3];
    int r = gatekind_dims(g, n_layer, n_kv_head, n_token, dims);
    size_t n = 1;
    for (int i = 0; i < r; i++) n *= (size_t)(dims[i] > 0 ? dims[i] : 0);
    return n;
}

int gatekind_width(gl_gate g, int n_kv_head) {
    return (int)gk_axis_size(gatekind_info[g].axis[2], 0, n_kv_head, 0);
}

void gatekind_copy(const gl_model *m, gl_gate g, float *out) {
    const int rows = (int)gk_axis_size(gatekind_info[g].axis[0], m->cfg.n_layer, 0, 0);
    const size_t N = (size_t)m->B * m->cur_T;
    const size_t per_row = (gatekind_per_token(g) ? N : 1) * (size_t)gatekind_width(g, m->cfg.n_kv_head);
    for (int n = 0; n < rows; n++) {
        const float *src = gatekind_src(m, g, n);
        if (src) memcpy(out + (size_t)n * per_row, src, per_row * sizeof(float));
        else memset(out + (size_t)n * per_row, 0, per_row * sizeof(float));
    }
}

int gatekind_find(const gl_model_config *c, gl_gate_ablation abl) {
    for (int g = 0; g < GATE_COUNT; g++)
        if (gatekind_info[g].ablate == abl && gatekind_has(c, (gl_gate)g)) return g;
    return -1;
}
