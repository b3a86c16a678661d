/*
 * tensors.c — the tensor table of a model: every parameter of a config, in
 * the order of the parameter block, with its name, shape, weight decay,
 * initial value and the typed pointer it binds to.
 *
 * The rows are the tensor lists of variants.h; this file expands each row
 * once into a tn_kind (presence, shape and initial value as small functions, the
 * binding as an offset into the typed view of its scope) and walks the kinds
 * in list order, blocks and routers in number order inside their lists.  No
 * name is parsed: a tensor is bound through its kind, and model_find_tensor
 * is the only name lookup (for checkpoints, exports and tests).
 *
 * Initialisation follows docs/model.md: draws from one seeded stream in table
 * order (N(0, 0.02) for the llama backbone; PyTorch's defaults and GPT-2's
 * scaled residual projections for gpt2), or a constant from the row; the
 * cross-layer variants' structured starts come from crosslayer.c afterwards.
 *
 * Deliberately not here: allocation of the families (model.c), any maths of
 * the forward or backward pass, I/O.
 */
#include <assert.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crosslayer.h"
#include "model.h"
#include "rng.h"
#include "tensors.h"

/* Sizes the rows of variants.h are written in (s.*). */
typedef struct {
    int d, hd, qd, kd, Hkv, F, V, R, M, S;
} gl_sizes;

static gl_sizes tn_sizes(const gl_model_config *c) {
    gl_sizes s;
    s.d = c->d_model;
    s.hd = c->d_model / c->n_head;
    s.qd = c->n_head * s.hd;
    s.kd = c->n_kv_head * s.hd;
    s.Hkv = c->n_kv_head;
    s.F = c->d_ff;
    s.V = c->vocab_size;
    s.R = config_router_hidden(c);
    s.M = 0; /* ResFormer plus: blocks that mix V1 */
    for (int n = 0; n < c->n_layer; n++) s.M += config_layer_mixes_v1(c, n);
    s.S = c->hc_expansion;
    return s;
}

typedef enum { DECAY_NONE = 0, DECAY_ALL, DECAY_GATES, DECAY_LLAMA } tn_decay;
typedef enum { SC_MODEL, SC_BLOCK, SC_XL, SC_ROUTER } tn_scope;

/* The init column of a row (variants.h), evaluated for a config: how the entries start. */
typedef enum {
    TI_NORMAL,    /* a·N(0, 1) draws */
    TI_UNIFORM,   /* U(−a, a) draws */
    TI_FILL,      /* every entry a, no draw */
    TI_DRAW_FILL, /* every entry a, after 0.02·N(0, 1) draws thrown away */
    TI_XL,        /* 0.02·N(0, 1) draws, then crosslayer.c's structured start */
} tn_init_kind;
typedef struct {
    tn_init_kind kind;
    float a;
} tn_init;
#define INIT_NORMAL ((tn_init){TI_NORMAL, 0.02f})
#define INIT_NORMAL_SD(sd) ((tn_init){TI_NORMAL, (sd)})
#define INIT_UNIFORM(b) ((tn_init){TI_UNIFORM, (b)})
#define INIT_FILL(v) ((tn_init){TI_FILL, (v)})
#define INIT_DRAW_FILL(v) ((tn_init){TI_DRAW_FILL, (v)})
#define INIT_XL ((tn_init){TI_XL, 0.0f})

typedef struct {
    const char *name; /* printf format; %d is the block or router number */
    tn_scope scope;
    size_t slot;      /* offset of the pointer in the scope's typed view */
    int ndim;
    tn_decay decay;
    int (*has)(const gl_model_config *c, int n);
    void (*shape)(const gl_model_config *c, const gl_sizes *s, int n, int *rows, int *cols);
    tn_init (*init)(const gl_model_config *c, const gl_sizes *s, int n);
} tn_kind;

/* One row → its three small functions. */
#define TN_FUNCS(id, name, rows, cols, ndim, has, decay, init)                                          \
    static int tn_has_##id(const gl_model_config *c, int n) { return (has); }                           \
    static void tn_shape_##id(const gl_model_config *c, const gl_sizes *s_, int n, int *r, int *k) {    \
        const gl_sizes s = *s_;                                                                          \
        (void)s;                                                                                         \
        *r = (rows);                                                                                     \
        *k = (cols);                                                                                     \
    }                                                                                                    \
    static tn_init tn_init_##id(const gl_model_config *c, const gl_sizes *s_, int n) {                  \
        const gl_sizes s = *s_;                                                                          \
        (void)s, (void)n, (void)c;                                                                       \
        return init;                                                                                     \
    }
#define TN_XL_FUNCS(id, member, name, rows, cols, ndim, has, decay, init) \
    TN_FUNCS(id, name, rows, cols, ndim, has, decay, init)

GL_EMBED_TENSORS(TN_FUNCS)
GL_BLOCK_TENSORS(TN_FUNCS)
GL_RESFORMER_TENSORS(TN_FUNCS)
GL_XL_TENSORS(TN_XL_FUNCS)
GL_ROUTER_TENSORS(TN_FUNCS)
GL_OUTPUT_TENSORS(TN_FUNCS)

/* One row → its tn_kind. */
#define TN_KIND(scope, type, id, member, name, rows, cols, ndim, has, decay, init) \
    {name, scope, offsetof(type, member), ndim, decay, tn_has_##id, tn_shape_##id, tn_init_##id},
#define TN_MODEL(id, ...) TN_KIND(SC_MODEL, gl_param_ptrs, id, id, __VA_ARGS__)
#define TN_BLOCK(id, ...) TN_KIND(SC_BLOCK, gl_block_params, id, id, __VA_ARGS__)
#define TN_ROUTER(id, ...) TN_KIND(SC_ROUTER, gl_router_params, id, id, __VA_ARGS__)
#define TN_XL(id, member, ...) TN_KIND(SC_XL, gl_xl_params, id, member, __VA_ARGS__)

/* In parameter-block order; consecutive rows of one scope are walked block by block. */
static const tn_kind tn_kinds[] = {
    GL_EMBED_TENSORS(TN_MODEL) GL_BLOCK_TENSORS(TN_BLOCK) GL_RESFORMER_TENSORS(TN_MODEL) GL_XL_TENSORS(TN_XL)
    GL_ROUTER_TENSORS(TN_ROUTER) GL_OUTPUT_TENSORS(TN_MODEL)};

#define TN_COUNT(...) +1
enum {
    TN_N_MODEL = 0 GL_EMBED_TENSORS(TN_COUNT) GL_RESFORMER_TENSORS(TN_COUNT) GL_OUTPUT_TENSORS(TN_COUNT),
    TN_N_BLOCK = 0 GL_BLOCK_TENSORS(TN_COUNT),
    TN_N_XL = 0 GL_XL_TENSORS(TN_COUNT),
    TN_N_ROUTER = 0 GL_ROUTER_TENSORS(TN_COUNT),
};
_Static_assert(sizeof tn_kinds / sizeof tn_kinds[0] == TN_N_MODEL + TN_N_BLOCK + TN_N_XL + TN_N_ROUTER,
               "one tn_kind per row of the tensor lists");
_Static_assert(sizeof(gl_xl_params) == TN_N_XL * sizeof(float *),
               "every pointer of gl_xl_params has exactly one row in GL_XL_TENSORS");
_Static_assert(sizeof(gl_block_params) == TN_N_BLOCK * sizeof(float *), "gl_block_params is GL_BLOCK_TENSORS");
_Static_assert(sizeof(gl_router_params) == TN_N_ROUTER * sizeof(float *), "gl_router_params is GL_ROUTER_TENSORS");
_Static_assert(sizeof(gl_param_ptrs) == TN_N_MODEL * sizeof(float *) + 3 * sizeof(void *),
               "gl_param_ptrs is the model-wide rows plus the layer, router and xl arrays");

/* How many of a scope's instances there are (blocks, routers). */
static int tn_instances(const gl_model_config *c, tn_scope sc) {
    switch (sc) {
    case SC_MODEL: return 1;
    case SC_BLOCK:
    case SC_XL: return c->n_layer;
    case SC_ROUTER: return c->n_layer - 1;
    }
    return 0;
}

static int tn_add(gl_tensor **t, int *n, int *cap, size_t *total, const gl_model_config *c, const gl_sizes *s,
                  int kind, int index) {
    const tn_kind *k = &tn_kinds[kind];
    if (*n == *cap) {
        int nc = *cap ? *cap * 2 : 64;
        gl_tensor *p = realloc(*t, (size_t)nc * sizeof *p);
        if (!p) return -1;
        *t = p;
        *cap = nc;
    }
    gl_tensor *e = &(*t)[(*n)++];
    memset(e, 0, sizeof *e);
    int rows, cols;
    k->shape(c, s, index < 0 ? 0 : index, &rows, &cols);
    if (k->scope == SC_MODEL) snprintf(e->name, sizeof e->name, "%s", k->name);
    else snprintf(e->name, sizeof e->name, k->name, index);
    e->offset = *total;
    e->size = (size_t)rows * cols;
    e->ndim = k->ndim;
    e->shape[0] = rows;
    e->shape[1] = k->ndim == 2 ? cols : 1;
    e->decay = k->decay == DECAY_ALL || (k->decay == DECAY_GATES && c->decay_gates) ||
               (k->decay == DECAY_LLAMA && !bb_gpt2(c));
    e->kind = kind;
    e->index = index;
    *total += e->size;
    return 0;
}

int tensors_build(const gl_model_config *c, gl_tensor **out, int *n_out, size_t *total) {
    const gl_sizes s = tn_sizes(c);
    const int nk = (int)(sizeof tn_kinds / sizeof tn_kinds[0]);
    gl_tensor *t = NULL;
    int n = 0, cap = 0;
    *total = 0;
    for (int a = 0; a < nk;) {
        int b = a; /* [a, b): one run of rows of the same scope */
        while (b < nk && tn_kinds[b].scope == tn_kinds[a].scope) b++;
        const int inst = tn_instances(c, tn_kinds[a].scope);
        for (int i = 0; i < inst; i++)
            for (int k = a; k < b; k++) {
                const int index = tn_kinds[k].scope == SC_MODEL ? -1 : i;
                if (!tn_kinds[k].has(c, i)) continue;
                if (tn_add(&t, &n, &cap, total, c, &s, k, index)) {
                    free(t);
                    return -1;
                }
            }
        a = b;
    }
    *out = t;
    *n_out = n;
    return 0;
}

static float **tn_slot(gl_param_ptrs *P, const gl_tensor *t) {
    const tn_kind *k = &tn_kinds[t->kind];
    char *base = NULL;
    switch (k->scope) {
    case SC_MODEL: base = (char *)P; break;
    case SC_BLOCK: base = (char *)&P->layer[t->index]; break;
    case SC_XL: base = (char *)&P->xl[t->index]; break;
    case SC_ROUTER: base = (char *)&P->router[t->index]; break;
    }
    return (float **)(base + k->slot);
}

void tensors_bind(const gl_model *m, gl_param_ptrs *P, float *base) {
    for (int i = 0; i < m->n_tensors; i++) *tn_slot(P, &m->tensors[i]) = base + m->tensors[i].offset;
    if (m->cfg.tied) P->head = P->embed;
}

void model_init_weights(gl_model *m, uint64_t seed) {
    const gl_sizes s = tn_sizes(&m->cfg);
    gl_rng r;
    rng_seed(&r, seed);
    for (int i = 0; i < m->n_tensors; i++) {
        const gl_tensor *t = &m->tensors[i];
        const tn_init in = tn_kinds[t->kind].init(&m->cfg, &s, t->index < 0 ? 0 : t->index);
        float *p = m->params + t->offset;
        switch (in.kind) {
        case TI_NORMAL:
            for (size_t j = 0; j < t->size; j++) p[j] = in.a * rng_normal(&r);
            break;
        case TI_UNIFORM:
            for (size_t j = 0; j < t->size; j++) p[j] = in.a * (2.0f * rng_uniform(&r) - 1.0f);
            break;
        case TI_XL: /* crosslayer.c writes the start below */
            for (size_t j = 0; j < t->size; j++) p[j] = 0.02f * rng_normal(&r);
            break;
        case TI_DRAW_FILL: /* the draw is thrown away */
            for (size_t j = 0; j < t->size; j++) (void)rng_normal(&r);
            for (size_t j = 0; j < t->size; j++) p[j] = in.a;
            break;
        case TI_FILL:
            for (size_t j = 0; j < t->size; j++) p[j] = in.a;
            break;
        }
    }
    xl_init_weights(m);
    memset(m->adam_m, 0, m->n_params * sizeof(float));
    memset(m->adam_v, 0, m->n_params * sizeof(float));
}

const gl_tensor *model_find_tensor(const gl_model *m, const char *name) {
    for (int i = 0; i < m->n_tensors; i++)
        if (!strcmp(m->tensors[i].name, name)) return &m->tensors[i];
    return NULL;
}

size_t model_param_count(const gl_model *m) { return m->n_params; }

double model_train_flops_per_token(const gl_model *m) {
    /* 6 FLOPs per weight per token for every matmul weight (forward 2, backward 4),
     * the head included, plus attention scores and values: 12·L·T·d (the usual
     * count that ignores causal masking, as in the PaLM appendix).  The
     * embedding is a lookup; tied, it is counted once as the head. */
    double w = 0;
    for (int i = 0; i < m->n_tensors; i++)
        if (m->tensors[i].ndim == 2 && strcmp(m->tensors[i].name, "embed") && strcmp(m->tensors[i].name, "pos_embed"))
            w += m->tensors[i].size; /* the embeddings are lookups */
    if (m->cfg.tied) w += (double)m->cfg.vocab_size * m->cfg.d_model;
    return 6.0 * w + 12.0 * m->cfg.n_layer * m->cfg.seq_len * m->cfg.d_model;
}
