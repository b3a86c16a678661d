/*
 * seeds.c — gate stability across seeds (seeds.h).  One forward per
 * validation window with the model's own hard routing (TSA, m->sparse) so the
 * halted set is what sparse inference skips; the per-head gate means come
 * from the same forward through the gate table (gatekind_src).  Sums in
 * double in window order.
 */
#include "analysis/measure/seeds.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/measure/attrib.h"
#include "model/gatekind.h"

void seeds_run_free(seeds_run *r) {
    if (!r) return;
    free(r->prof);
    free(r->halted);
    memset(r, 0, sizeof *r);
}

static int sd_desc(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x < y) - (x > y);
}

int seeds_measure(gl_model *m, const gl_dataset *ds, long windows, seeds_run *r, char *err, size_t errlen) {
    const gl_model_config *c = &m->cfg;
    const int L = c->n_layer, Hkv = c->n_kv_head, T = m->T;
    memset(r, 0, sizeof *r);
    const long avail = data_eval_windows(ds, SPLIT_VAL);
    if (avail < 1) {
        snprintf(err, errlen, "the validation split has no window of %d tokens", T);
        return -1;
    }
    const long W = windows > 0 && windows <= avail ? windows : (avail < 64 ? avail : 64);
    const int hg = gatekind_find(c, GABL_HEAD), tsa = c->depth_routing == DR_TSA;
    int gated = 0;
    if (hg >= 0)
        for (int n = 0; n < L; n++) gated += gatekind_src(m, (gl_gate)hg, n) != NULL;
    r->windows = W;
    r->n_pos = W * T;
    r->n_prof = gated * Hkv;
    r->n_route = tsa ? L - 1 : 0;
    double *sum = calloc((size_t)L * Hkv + 1, sizeof(double));
    int *tok = malloc((size_t)T * sizeof(int)), *tg = malloc((size_t)T * sizeof(int));
    float *mask = malloc((size_t)T * sizeof(float));
    r->prof = malloc(((size_t)r->n_prof + 1) * sizeof(double));
    r->halted = tsa ? calloc((size_t)r->n_route * r->n_pos, 1) : NULL;
    if (!sum || !tok || !tg || !mask || !r->prof || (tsa && !r->halted)) {
        free(sum), free(tok), free(tg), free(mask);
        seeds_run_free(r);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    const int sparse = m->sparse;
    m->sparse = tsa;
    for (long w = 0; w < W; w++) {
        data_eval_batch(ds, SPLIT_VAL, w, 1, tok, tg, mask);
        model_forward(m, tok, NULL, NULL, 1, T);
        if (hg >= 0) {
            const int per = gatekind_per_token((gl_gate)hg);
            for (int n = 0; n < L; n++) {
                const float *g = gatekind_src(m, (gl_gate)hg, n);
                if (g)
                    for (int t = 0; t < T; t++)
                        for (int j = 0; j < Hkv; j++) sum[n * Hkv + j] += g[(per ? (size_t)t * Hkv : 0) + j];
            }
        }
        for (int n = 1; tsa && n < L; n++)
            for (int t = 0; t < T; t++) r->halted[(size_t)(n - 1) * r->n_pos + w * T + t] = m->A[n].p[t] > 0.5f;
    }
    m->sparse = sparse;
    int k = 0;
    for (int n = 0; hg >= 0 && n < L; n++) {
        if (!gatekind_src(m, (gl_gate)hg, n)) continue;
        for (int j = 0; j < Hkv; j++) r->prof[k + j] = sum[n * Hkv + j] / (double)r->n_pos;
        qsort(r->prof + k, (size_t)Hkv, sizeof(double), sd_desc);
        k += Hkv;
    }
    free(sum), free(tok), free(tg), free(mask);
    return 0;
}

double seeds_profile_rho(const seeds_run *a, const seeds_run *b) {
    if (a->n_prof != b->n_prof || a->n_prof < 2) return NAN;
    return attrib_spearman(a->prof, b->prof, a->n_prof);
}

double seeds_jaccard(const seeds_run *a, const seeds_run *b) {
    if (!a->halted || !b->halted || a->n_route != b->n_route || a->n_pos != b->n_pos) return NAN;
    long both = 0, any = 0;
    for (size_t i = 0; i < (size_t)a->n_route * a->n_pos; i++) both += a->halted[i] & b->halted[i], any += a->halted[i] | b->halted[i];
    return any ? (double)both / (double)any : NAN;
}
