/*
 * attn.c — causal softmax attention with grouped-query heads (Ainslie et al.,
 * GQA, 2023): query head h reads key/value head h / (H / Hkv).
 *
 *   S = q kᵀ / sqrt(hd),  P = softmax over j ≤ i,  y = P v
 *
 * Work is split over (sequence, head) for forward and (sequence, kv head) for
 * backward, so no two threads write the same output (dk, dv of a kv head are
 * owned by one thread) and the result does not depend on scheduling.  Inside
 * a task the matmuls go through sgemm (serial inside the OpenMP region).
 * Causality is exploited in row blocks of ATT_BLOCK: rows [i0, i1) only touch
 * columns [0, i1).  Entries of att at or beyond column i1 of a row block are
 * never written nor read: att is defined for j ≤ i only.
 * Backward (per row i): dP = dy vᵀ, dS = P ⊙ (dP − Σ_j P·dP), dq = dS k /√hd,
 * dk = Σ dSᵀ q /√hd, dv = Σ Pᵀ dy (all three written, not accumulated: each
 * task zeroes its own dk, dv slices first, so no zeroing pass runs before it).
 * The row reductions (max, Σ exp, Σ P·dP) go through vred.h, so they run as
 * vector code instead of one scalar exp and add per score.
 *
 * Dropout on the probabilities (model.dropout, dropout.c): y = P̃ v with P̃ = P ⊙ mask/(1 − r).
 * P̃ is never stored whole: attn_forward_dropout makes each row block's P̃ from P and the masks into a
 * per-thread block after the softmax and multiplies v by it; attn_backward makes the same block
 * again (the masks are hashes: the same bits).  With dP = dy vᵀ the chain rule
 * through P̃ = P·m gives dS = P ⊙ (m·dP − Σ_j P·m·dP) = P̃ ⊙ dP − P·Σ_j P̃·dP, and dv = Σ P̃ᵀ dy; no
 * mask is needed, only P̃ (without dropout P̃ = P and the kernel keeps its own arithmetic).
 *
 * attn_forward_ref and attn_backward_ref are the same maths in plain loops
 * summed in double, the tests' reference for the sgemm paths (tests/
 * test_grad.c "attention"); attn_forward_ref with a keep mask is also the
 * reference of routing.c's masked attention, and without one of infer.c's
 * packed-row attention.
 */
#include <assert.h>
#include <cblas.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <omp.h>

#include "ops.h"
#include "vexp.h"
#include "vred.h"

#define ATT_BLOCK ATTN_BLOCK /* ops.h: attn_forward_dropout's scratch is sized by it */

/* Sizes positive, query heads a multiple of kv heads; y and att are written
 * while q, k, v are read, so none of them overlap. */
static void attn_check_forward(const float *y, const float *att, const float *q, const float *k, const float *v,
                               int B, int T, int H, int Hkv, int hd) {
    assert(B > 0 && T > 0 && H > 0 && Hkv > 0 && hd > 0 && H % Hkv == 0);
    assert(y && att && q && k && v);
    const size_t nq = (size_t)B * T * H * hd, nk = (size_t)B * T * Hkv * hd, na = (size_t)B * H * T * T;
    assert(ops_disjoint(y, nq, q, nq) && ops_disjoint(y, nq, k, nk) && ops_disjoint(y, nq, v, nk));
    assert(ops_disjoint(att, na, q, nq) && ops_disjoint(att, na, k, nk) && ops_disjoint(att, na, v, nk));
    assert(ops_disjoint(y, nq, att, na));
    (void)y, (void)att, (void)q, (void)k, (void)v, (void)nq, (void)nk, (void)na;
}

/* Rows [i0, i1) of P̃ = P ⊙ mask (mk: block n's DROP_ATT masks) of head h of sequence b into pd
 * ((i1 − i0) rows of stride T), zero from the diagonal to column i1 (row0: the global row of
 * sequence 0's row 0; entry index ((row0 + b·T + i)·H + h)·T + j, dropout.c). */
static void attn_drop_block(float *pd, const float *P, const gl_drop_mask *mk, long row0, int b, int h, int i0,
                            int i1, int H, int T) {
    for (int i = i0; i < i1; i++) {
        float *rd = pd + (size_t)(i - i0) * T;
        dropout_span(rd, P + (size_t)i * T, i + 1, mk, ((uint64_t)(row0 + (long)b * T + i) * H + h) * (uint64_t)T);
        for (int j = i + 1; j < i1; j++) rd[j] = 0.0f;
    }
}

/* attn_forward, and with mk not NULL y = P̃ v, P̃ made per row block right after the softmax into
 * pds (ATT_BLOCK × T floats per thread) (row0: the global row of sequence 0's row 0). */
static void attn_forward_rows(float *y, float *att, float *pds, const gl_drop_mask *mk, long row0, const float *q,
                              const float *k, const float *v, int B, int T, int H, int Hkv, int hd) {
    const int qs = H * hd, ks = Hkv * hd, rep = H / Hkv;
    const float scale = 1.0f / sqrtf((float)hd);
#pragma omp parallel for schedule(static)
    for (int bh = 0; bh < B * H; bh++) {
        int b = bh / H, h = bh % H, g = h / rep;
        const float *qb = q + (size_t)b * T * qs + (size_t)h * hd;
        const float *kb = k + (size_t)b * T * ks + (size_t)g * hd;
        const float *vb = v + (size_t)b * T * ks + (size_t)g * hd;
        float *yb = y + (size_t)b * T * qs + (size_t)h * hd;
        float *P = att + (size_t)bh * T * T;
        float *pd = mk ? pds + (size_t)omp_get_thread_num() * ATT_BLOCK * T : NULL;
        for (int i0 = 0; i0 < T; i0 += ATT_BLOCK) {
            int i1 = i0 + ATT_BLOCK < T ? i0 + ATT_BLOCK : T, m = i1 - i0;
            float *Pb = P + (size_t)i0 * T;
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, i1, hd, scale, qb + (size_t)i0 * qs,
                        qs, kb, ks, 0.0f, Pb, T);
            for (int i = i0; i < i1; i++) {
                float *row = P + (size_t)i * T;
                const float mx = gl_max(row, i + 1);
                for (int j = 0; j <= i; j++) row[j] = gl_expf(row[j] - mx); /* vectorised */
                const float inv = 1.0f / gl_sum(row, i + 1);
                for (int j = 0; j <= i; j++) row[j] *= inv;
                for (int j = i + 1; j < i1; j++) row[j] = 0.0f;
            }
            if (mk) attn_drop_block(pd, P, mk, row0, b, h, i0, i1, H, T); /* the block still in cache */
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, hd, i1, 1.0f, mk ? pd : Pb, T, vb, ks, 0.0f,
                        yb + (size_t)i0 * qs, qs);
        }
    }
}

void attn_forward(float *y, float *att, const float *q, const float *k, const float *v,
                  int B, int T, int H, int Hkv, int hd) {
    attn_check_forward(y, att, q, k, v, B, T, H, Hkv, hd);
    attn_forward_rows(y, att, NULL, NULL, 0, q, k, v, B, T, H, Hkv, hd);
}

void attn_forward_dropout(float *y, float *att, float *scratch, const float *q, const float *k, const float *v,
                          const gl_dropout *dr, int n, int B, int T, int H, int Hkv, int hd) {
    attn_check_forward(y, att, q, k, v, B, T, H, Hkv, hd);
    const size_t ns = (size_t)omp_get_max_threads() * ATT_BLOCK * T;
    assert(scratch && dr && ops_disjoint(scratch, ns, att, (size_t)B * H * T * T) &&
           ops_disjoint(scratch, ns, y, (size_t)B * T * H * hd) &&
           ops_disjoint(scratch, ns, v, (size_t)B * T * Hkv * hd));
    (void)ns;
    const gl_drop_mask mk = dropout_mask(dr, DROP_ATT, n);
    attn_forward_rows(y, att, scratch, &mk, dr->row0, q, k, v, B, T, H, Hkv, hd);
}

/* Sizes positive, query heads a multiple of kv heads; the three gradients are
 * written while everything else (scratch: ns floats, 0 for none) is read. */
static void attn_check_backward(const float *dq, const float *dk, const float *dv, const float *dy, const float *att,
                                const float *q, const float *k, const float *v, const float *scratch, size_t ns,
                                int B, int T, int H, int Hkv, int hd) {
    assert(B > 0 && T > 0 && H > 0 && Hkv > 0 && hd > 0 && H % Hkv == 0);
    assert(dq && dk && dv && dy && att && q && k && v);
    const size_t nq = (size_t)B * T * H * hd, nk = (size_t)B * T * Hkv * hd, na = (size_t)B * H * T * T;
    const float *in[] = {dy, att, q, k, v, scratch};
    const size_t nin[] = {nq, na, nq, nk, nk, ns};
    for (int i = 0; i < 6; i++)
        assert(ops_disjoint(dq, nq, in[i], nin[i]) && ops_disjoint(dk, nk, in[i], nin[i]) &&
               ops_disjoint(dv, nk, in[i], nin[i]));
    assert(ops_disjoint(dq, nq, dk, nk) && ops_disjoint(dq, nq, dv, nk) && ops_disjoint(dk, nk, dv, nk));
    (void)dq, (void)dk, (void)dv, (void)in, (void)nin, (void)nq, (void)nk, (void)na;
}

void attn_backward(float *dq, float *dk, float *dv, const float *dy, const float *att, const gl_dropout *dr, int n,
                   const float *q, const float *k, const float *v, float *scratch,
                   int B, int T, int H, int Hkv, int hd) {
    assert(scratch);
    const size_t per = (size_t)T * T + (dr ? (size_t)ATT_BLOCK * T : 0); /* dP, then the P̃ block */
    attn_check_backward(dq, dk, dv, dy, att, q, k, v, scratch, (size_t)omp_get_max_threads() * per, B, T, H, Hkv,
                        hd);
    const gl_drop_mask mk = dr ? dropout_mask(dr, DROP_ATT, n) : (gl_drop_mask){0};
    const int qs = H * hd, ks = Hkv * hd, rep = H / Hkv;
    const float scale = 1.0f / sqrtf((float)hd);
#pragma omp parallel for schedule(static)
    for (int bg = 0; bg < B * Hkv; bg++) {
        int b = bg / Hkv, g = bg % Hkv;
        float *dP = scratch + (size_t)omp_get_thread_num() * per, *pd = dP + (size_t)T * T;
        const float *kb = k + (size_t)b * T * ks + (size_t)g * hd;
        const float *vb = v + (size_t)b * T * ks + (size_t)g * hd;
        float *dkb = dk + (size_t)b * T * ks + (size_t)g * hd;
        float *dvb = dv + (size_t)b * T * ks + (size_t)g * hd;
        for (int t = 0; t < T; t++) /* this task is the only writer of its dk, dv slices */
            for (int c = 0; c < hd; c++) dkb[(size_t)t * ks + c] = dvb[(size_t)t * ks + c] = 0.0f;
        for (int h = g * rep; h < (g + 1) * rep; h++) {
            const float *P = att + ((size_t)b * H + h) * T * T;
            const float *qb = q + (size_t)b * T * qs + (size_t)h * hd;
            const float *dyb = dy + (size_t)b * T * qs + (size_t)h * hd;
            float *dqb = dq + (size_t)b * T * qs + (size_t)h * hd;
            for (int i0 = 0; i0 < T; i0 += ATT_BLOCK) {
                int i1 = i0 + ATT_BLOCK < T ? i0 + ATT_BLOCK : T, m = i1 - i0;
                if (dr) attn_drop_block(pd, P, &mk, dr->row0, b, h, i0, i1, H, T); /* P̃, as forward made it */
                const float *Pdb = dr ? pd : P + (size_t)i0 * T; /* what y was made from */
                float *dPb = dP + (size_t)i0 * T;
                /* dP = dy vᵀ on the block */
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, i1, hd, 1.0f,
                            dyb + (size_t)i0 * qs, qs, vb, ks, 0.0f, dPb, T);
                /* dv += Pᵀ dy */
                cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, i1, hd, m, 1.0f, Pdb, T,
                            dyb + (size_t)i0 * qs, qs, 1.0f, dvb, ks);
                /* softmax backward, in place in dP, zero above the diagonal */
                for (int i = i0; i < i1; i++) {
                    const float *pr = P + (size_t)i * T, *pdr = Pdb + (size_t)(i - i0) * T;
                    float *dpr = dP + (size_t)i * T;
                    const float dot = gl_dot(pdr, dpr, i + 1);
                    if (dr)
                        for (int j = 0; j <= i; j++) dpr[j] = pdr[j] * dpr[j] - pr[j] * dot;
                    else
                        for (int j = 0; j <= i; j++) dpr[j] = pr[j] * (dpr[j] - dot);
                    for (int j = i + 1; j < i1; j++) dpr[j] = 0.0f;
                }
                /* dq = dS k / √hd (one writer per row) ; dk += dSᵀ q / √hd */
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, hd, i1, scale, dPb, T, kb, ks,
                            0.0f, dqb + (size_t)i0 * qs, qs);
                cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, i1, hd, m, scale, dPb, T,
                            qb + (size_t)i0 * qs, qs, 1.0f, dkb, ks);
            }
        }
    }
}

void attn_forward_ref(float *y, float *att, const float *q, const float *k, const float *v, const float *keep,
                      int B, int T, int H, int Hkv, int hd) {
    attn_check_forward(y, att, q, k, v, B, T, H, Hkv, hd);
    assert(T <= 4096); /* the score row s[] below */
    const int qs = H * hd, ks = Hkv * hd, rep = H / Hkv;
    const double scale = 1.0 / sqrt((double)hd);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            int g = h / rep;
            float *P = att + ((size_t)b * H + h) * T * T;
            const float *kp = keep ? keep + (size_t)b * T : NULL;
            for (int i = 0; i < T; i++) {
                const float *qi = q + ((size_t)b * T + i) * qs + (size_t)h * hd;
                double mx = -INFINITY, sum = 0.0, s[4096];
                for (int j = 0; j <= i; j++) {
                    const float *kj = k + ((size_t)b * T + j) * ks + (size_t)g * hd;
                    double d = 0.0;
                    for (int c = 0; c < hd; c++) d += (double)qi[c] * kj[c];
                    s[j] = d * scale;
                    if (!kp || kp[j] != 0.0f) mx = s[j] > mx ? s[j] : mx;
                }
                for (int j = 0; j <= i; j++) /* a dropped query attends to itself only; a dropped key gets 0 */
                    sum += (s[j] = kp && kp[i] == 0.0f ? j == i : !kp || kp[j] != 0.0f ? exp(s[j] - mx) : 0.0);
                for (int j = 0; j < T; j++) P[(size_t)i * T + j] = j <= i ? (float)(s[j] / sum) : 0.0f;
                float *yi = y + ((size_t)b * T + i) * qs + (size_t)h * hd;
                for (int c = 0; c < hd; c++) {
                    double acc = 0.0;
                    for (int j = 0; j <= i; j++)
                        acc += s[j] / sum * v[((size_t)b * T + j) * ks + (size_t)g * hd + c];
                    yi[c] = (float)acc;
                }
            }
        }
}

/* dP_ij = dy_i·v_j of query head h of sequence b, in double. */
static double attn_ref_dp(const float *dy, const float *v, int b, int h, int i, int j, int T, int H, int Hkv, int hd) {
    const int g = h / (H / Hkv);
    const float *dyi = dy + ((size_t)b * T + i) * H * hd + (size_t)h * hd;
    const float *vj = v + ((size_t)b * T + j) * Hkv * hd + (size_t)g * hd;
    double dp = 0.0;
    for (int c = 0; c < hd; c++) dp += (double)dyi[c] * vj[c];
    return dp;
}

void attn_backward_ref(float *dq, float *dk, float *dv, const float *dy, const float *att, const float *attd,
                       const float *q, const float *k, const float *v, int B, int T, int H, int Hkv, int hd) {
    attn_check_backward(dq, dk, dv, dy, att, q, k, v, NULL, 0, B, T, H, Hkv, hd);
    assert(T <= 4096); /* the rows dS[] below */
    const int qs = H * hd, ks = Hkv * hd, rep = H / Hkv;
    const double scale = 1.0 / sqrt((double)hd);
    const size_t nk = (size_t)B * T * ks;
    double *dk2 = calloc(2 * nk, sizeof *dk2), *dv2 = dk2 + nk; /* dk, dv summed in double, rounded once */
    assert(dk2);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            const int g = h / rep;
            const float *P = att + ((size_t)b * H + h) * T * T;
            const float *Pd = attd ? attd + ((size_t)b * H + h) * T * T : P;
            for (int i = 0; i < T; i++) {
                /* dS_ij = P̃_ij dP_ij − P_ij Σ_l P̃_il dP_il, j ≤ i (P̃ = P without dropout) */
                double dS[4096], D = 0.0;
                for (int j = 0; j <= i; j++) D += Pd[(size_t)i * T + j] * (dS[j] = attn_ref_dp(dy, v, b, h, i, j, T, H, Hkv, hd));
                for (int j = 0; j <= i; j++)
                    dS[j] = (double)Pd[(size_t)i * T + j] * dS[j] - (double)P[(size_t)i * T + j] * D;
                const float *qi = q + ((size_t)b * T + i) * qs + (size_t)h * hd;
                const float *dyi = dy + ((size_t)b * T + i) * qs + (size_t)h * hd;
                float *dqi = dq + ((size_t)b * T + i) * qs + (size_t)h * hd;
                for (int c = 0; c < hd; c++) { /* dq_i = Σ_j dS_ij k_j / √hd */
                    double acc = 0.0;
                    for (int j = 0; j <= i; j++) acc += dS[j] * k[((size_t)b * T + j) * ks + (size_t)g * hd + c];
                    dqi[c] = (float)(acc * scale);
                }
                for (int j = 0; j <= i; j++) /* dk_j += dS_ij q_i / √hd, dv_j += P_ij dy_i */
                    for (int c = 0; c < hd; c++) {
                        const size_t o = ((size_t)b * T + j) * ks + (size_t)g * hd + c;
                        dk2[o] += dS[j] * scale * qi[c];
                        dv2[o] += (double)Pd[(size_t)i * T + j] * dyi[c];
                    }
            }
        }
    for (size_t o = 0; o < nk; o++) dk[o] = (float)dk2[o], dv[o] = (float)dv2[o];
    free(dk2);
}
