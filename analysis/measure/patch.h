/*
 * patch.h — paired activation patching of gates (`gatelab patch`): run a
 * clean and a corrupted input, copy one gate's values at chosen positions
 * from the clean run into the corrupted one, and measure how much of the
 * metric comes back:
 *
 *   recovered = (metric(patched) − metric(corrupt)) / (metric(clean) − metric(corrupt))
 *
 * A gate is a per-token row of the gate table (model/gatekind.h): the
 * per-head value-residual gate (GABL_HEAD with a token axis: SATFormer α of
 * block n, KV head j) through GATE_TOKEN, or a router's halting probability
 * (GABL_ROUTE: TSA p of router l, which feeds block l+1) through ROUTE_TOKEN.
 * A gate of block n depends only on the blocks below it, so at every
 * position not patched the corrupted run's own value is kept exactly (the
 * table holds it), and the patch changes nothing else.
 *
 * Pairs: the metric reads the answer positions.  Task pairs (mqar, sort,
 * copy: one key's value / one item changed in validation window i) answer
 * at the scored positions whose target changed; text pairs (one word of a
 * validation window replaced by another word of the same token length from
 * the same window) and file pairs answer at every position from the last
 * changed input on (the shared continuation).  Metrics over the answer
 * positions, summed in double in position order: loss = mean −log p(clean
 * target) (nats); logit_diff = mean logit(clean target) − logit(corrupt
 * target), over answer positions whose two targets differ.
 */
#ifndef GATELAB_ANALYSIS_MEASURE_PATCH_H
#define GATELAB_ANALYSIS_MEASURE_PATCH_H

#include <stddef.h>

#include "model/model.h"
#include "store/data.h"

typedef enum { PATCH_PAIR_FILES = 0, PATCH_PAIR_MQAR, PATCH_PAIR_SORT, PATCH_PAIR_COPY, PATCH_PAIR_TEXT } patch_pair_kind;
typedef enum { PATCH_METRIC_LOSS = 0, PATCH_METRIC_LOGIT_DIFF } patch_metric;

typedef struct {
    int B, T;                     /* pairs, positions per pair */
    int *clean, *corrupt;         /* (B, T) inputs */
    int *clean_tg, *corrupt_tg;   /* (B, T) next tokens, -1 where none */
    unsigned char *answer;        /* (B, T) 1: the metric reads this position */
    int *first_diff;              /* (B) first position whose input differs (T when none) */
} patch_pairs;

/* "files", "mqar", "sort", "copy", "text"; parse returns 0 or -1. */
const char *patch_pair_name(patch_pair_kind k);
int patch_parse_pair(const char *s, patch_pair_kind *k);

/* Build n pairs from validation windows [0, n) of ds (task pairs: ds must be
 * that task; text: a text data set, is_letter (V) saying which token ids are
 * letters, so a word is a maximal run of them).  Returns 0, or -1 with a
 * message (the wrong task, no window, a window with no word to replace). */
int patch_make_pairs(patch_pairs *pp, patch_pair_kind kind, const gl_dataset *ds, int n, const unsigned char *is_letter,
                     char *err, size_t errlen);
/* One pair from two token sequences of the same length n (2 <= n <= T + 1):
 * inputs ids[0, n−1), targets ids[1, n).  Returns 0, or -1 with a message
 * (lengths differ, too long). */
int patch_pair_from_ids(patch_pairs *pp, const int *a, const int *b, long n, int T, char *err, size_t errlen);
void patch_pairs_free(patch_pairs *pp);

/* What is patched: gate = a row of the gate table (gatekind.h), row = its
 * block (GABL_HEAD) or router (GABL_ROUTE), col = the KV head (0 for a router). */
typedef struct {
    int gate, row, col;
} patch_site;

typedef struct {
    gl_model *m;
    const patch_pairs *pp;
    patch_metric metric;
    double clean, corrupt;        /* the metric of the two runs */
    long n_answer;                /* answer positions the metric averages over */
    int head_gate, route_gate;    /* the patchable gates of m (gate table rows), or -1 */
    float *g_clean, *g_corrupt;   /* (L, B·T, Hkv) the per-head gate in each run */
    float *p_clean, *p_corrupt;   /* (L-1, B·T) the routers' p in each run */
    float *tab;                   /* the override table (gate: (L, max_B·T, Hkv); route: (L-1, max_B·T)) */
    int *tg;                      /* (B·T) targets the metric scores */
    float *mask;                  /* (B·T) */
} patch_ctx;

/* Run the clean and corrupted inputs (B = pp->B <= m->max_B sequences) and
 * keep their gates and metrics.  Returns 0, or -1 with a message (no per-
 * token gate to patch, logit_diff with no answer whose targets differ). */
int patch_init(patch_ctx *c, gl_model *m, const patch_pairs *pp, patch_metric metric, char *err, size_t errlen);
void patch_free(patch_ctx *c);

/* Every site of m that can be patched (per-head gates of blocks that have
 * one, then routers), at most max; returns the count. */
int patch_sites(const patch_ctx *c, patch_site *sites, int max);

/* Parse "L2H1" / "2:1" (gate) or a router number into a site.  Returns 0,
 * or -1 with a message naming what the model has. */
int patch_site_gate(const patch_ctx *c, int block, int kv_head, patch_site *s, char *err, size_t errlen);
int patch_site_router(const patch_ctx *c, int router, patch_site *s, char *err, size_t errlen);

/* The corrupted run with site's values at positions (T entries, 1 = patch;
 * NULL = every position) taken from the clean run.  *metric gets the
 * patched metric.  Overrides are cleared before returning. */
void patch_apply(patch_ctx *c, const patch_site *site, const unsigned char *positions, double *metric);

/* The recovered fraction; NaN when clean and corrupt give the same metric. */
double patch_recovered(const patch_ctx *c, double patched);

/* "L2H1" or "router 3" into out. */
void patch_site_label(const patch_ctx *c, const patch_site *s, char *out, size_t n);

#endif
