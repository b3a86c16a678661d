/*
 * infer.c — the row-selective kernels of inference: when only some tokens run
 * a block (TSA sparse routing, early exit once a token has exited), the
 * others still need their keys and values (later tokens attend to them), but
 * not their query, attention output, Wo projection or FFN.  model.c computes
 * k and v for every row and hands the selected rows here packed.
 *
 * Attention for packed query rows: per (window, head), the packed rows are
 * cut into blocks by 64-position bucket, exactly as attn.c blocks the dense
 * rows: a block whose rows have positions in [i0, i0+64) reads key/value
 * columns [0, i1), i1 = min(i0+64, T), with the same sgemm calls, the same
 * masked softmax (gl_expf, vred.h's max and sum) and the same zero fill.  So a
 * selected row gets the value the dense attn_forward would give it, and the
 * early-exit test can ask for identical outputs.  The probabilities go to a
 * per-thread scratch, never to the (B, H, T, T) att buffer: inference keeps
 * no attention matrix for backward.
 *
 * No plain-loop version of its own: the packed rows' reference is the dense
 * op's.  tests/test_grad.c checks infer_attn_rows with every row packed
 * against attn_forward bit for bit, and on a subset of rows against
 * attn_forward_ref's plain loops; test_routing.c the model's packed paths
 * against the dense ones.
 *
 * Deliberately not here: choosing the rows (model.c), backward (inference
 * only), the dense kernels (attn.c, rope.c).
 */
#include "infer.h"

#include <assert.h>
#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <string.h>

#include "ops.h"
#include "vexp.h"
#include "vred.h"

void infer_gather(float *dst, const float *src, const int *idx, int K, int C) {
    /* memcpy of rows: dst must not overlap the rows it reads (src is (idx[K-1]+1, C) at least) */
    assert(K > 0 && C > 0 && dst && src && idx && idx[K - 1] >= 0);
    assert(ops_disjoint(dst, (size_t)K * C, src, ((size_t)idx[K - 1] + 1) * C));
#pragma omp parallel for schedule(static)
    for (int r = 0; r < K; r++) memcpy(dst + (size_t)r * C, src + (size_t)idx[r] * C, (size_t)C * sizeof(float));
}

void infer_rope_rows(float *x, const float *cos_t, const float *sin_t, const int *idx, int K, int T,
                     int nh, int hd) {
    assert(K > 0 && T > 0 && nh > 0 && hd > 0 && hd % 2 == 0);
    assert(x && cos_t && sin_t && idx);
    const int h2 = hd / 2;
#pragma omp parallel for schedule(static)
    for (int r = 0; r < K; r++) {
        const int pos = idx[r] % T;
        const float *c = cos_t + (size_t)pos * h2, *s = sin_t + (size_t)pos * h2;
        for (int h = 0; h < nh; h++) {
            float *v = x + (size_t)r * nh * hd + (size_t)h * hd;
            for (int i = 0; i < h2; i++) { /* rope.c's rotation, sign +1 */
                float a = v[i], b = v[i + h2], sn = s[i];
                v[i] = a * c[i] - b * sn;
                v[i + h2] = b * c[i] + a * sn;
            }
        }
    }
}

void infer_seq_bounds(int *seq, const int *idx, int K, int B, int T) {
    assert(K > 0 && B > 0 && T > 0 && seq && idx && idx[0] >= 0 && idx[K - 1] < B * T);
    int r = 0;
    for (int b = 0; b <= B; b++) {
        while (r < K && idx[r] < b * T) r++;
        seq[b] = r;
    }
}

/* Causal softmax of one score row at position i, zero from i+1 to i1.  It
 * must stay the arithmetic of attn_forward's row loop (attn.c): the tests
 * compare packed rows with dense ones.  When attn.c changes its reductions,
 * change them here too. */
static void softmax_row(float *row, int i, int i1) {
    const float mx = gl_max(row, i + 1);
    for (int j = 0; j <= i; j++) row[j] = gl_expf(row[j] - mx);
    const float inv = 1.0f / gl_sum(row, i + 1);
    for (int j = 0; j <= i; j++) row[j] *= inv;
    for (int j = i + 1; j < i1; j++) row[j] = 0.0f;
}

/* One (window, head): packed rows [ra, rb) of window b, positions pos(r). */
static void attn_rows_head(float *y, const float *q, const float *kb, const float *vb, const int *idx,
                           int ra, int rb, int b, int h, int T, int qs, int ks, int hd, float scale, float *S) {
    for (int r0 = ra; r0 < rb;) {
        const int i0 = (idx[r0] - b * T) / INFER_ATT_BLOCK * INFER_ATT_BLOCK;
        const int i1 = i0 + INFER_ATT_BLOCK < T ? i0 + INFER_ATT_BLOCK : T;
        int r1 = r0;
        while (r1 < rb && idx[r1] - b * T < i1) r1++;
        const int m = r1 - r0;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, i1, hd, scale, q + (size_t)r0 * qs + (size_t)h * hd,
                    qs, kb, ks, 0.0f, S, T);
        for (int r = r0; r < r1; r++) softmax_row(S + (size_t)(r - r0) * T, idx[r] - b * T, i1);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, hd, i1, 1.0f, S, T, vb, ks, 0.0f,
                    y + (size_t)r0 * qs + (size_t)h * hd, qs);
        r0 = r1;
    }
}

void infer_attn_rows(float *y, const float *q, const float *k, const float *v, const int *idx,
                     const int *seq, int B, int T, int H, int Hkv, int hd, float *scratch) {
    assert(B > 0 && T > 0 && H > 0 && Hkv > 0 && hd > 0 && H % Hkv == 0);
    assert(y && q && k && v && idx && seq && scratch && seq[0] == 0 && seq[B] > 0);
    {   /* y is written while the packed queries, every key and value and the scratch are read */
        const size_t ny = (size_t)seq[B] * H * hd, nk = (size_t)B * T * Hkv * hd;
        const size_t ns = (size_t)omp_get_max_threads() * INFER_ATT_BLOCK * T;
        assert(ops_disjoint(y, ny, q, ny) && ops_disjoint(y, ny, k, nk) && ops_disjoint(y, ny, v, nk) &&
               ops_disjoint(y, ny, scratch, ns));
        assert(ops_disjoint(scratch, ns, q, ny) && ops_disjoint(scratch, ns, k, nk) && ops_disjoint(scratch, ns, v, nk));
        (void)ny, (void)nk, (void)ns;
    }
    const int qs = H * hd, ks = Hkv * hd, rep = H / Hkv;
    const float scale = 1.0f / sqrtf((float)hd);
#pragma omp parallel for schedule(dynamic, 1)
    for (int bh = 0; bh < B * H; bh++) {
        const int b = bh / H, h = bh % H, g = h / rep;
        if (seq[b] == seq[b + 1]) continue;
        float *S = scratch + (size_t)omp_get_thread_num() * INFER_ATT_BLOCK * T;
        attn_rows_head(y, q, k + (size_t)b * T * ks + (size_t)g * hd, v + (size_t)b * T * ks + (size_t)g * hd, idx,
                       seq[b], seq[b + 1], b, h, T, qs, ks, hd, scale, S);
    }
}
