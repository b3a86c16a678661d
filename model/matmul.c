/*
 * matmul.c — sgemm for the model's linear layers (every projection, the FFN,
 * the head, routers and cross-layer MLPs).  Four files call cblas directly
 * instead, on strided views or single rows: attn.c (the per-head products),
 * routing.c (attention over a routed subset), infer.c (packed query rows;
 * sgemm) and decode.c (one-row projections and the cached attention; sgemv).
 *
 * Layout, stated once: row-major; activations (N, in); weights (out, in) as a
 * linear layer stores them; so
 *     Y  = X·Wᵀ          sgemm(NoTrans, Trans)
 *     dX += dY·W         sgemm(NoTrans, NoTrans, beta 1)
 *     dW += dYᵀ·X        sgemm(Trans, NoTrans, beta 1)
 * The _ref versions are plain loops in double, used only by the tests
 * (tests/test_grad.c, "matmul") to check the sgemm calls and their
 * transposes against them.  The direct cblas callers check against these or
 * attn.c's loops (ops.h says which).
 * OpenBLAS is linked in its OpenMP build: called from outside a parallel
 * region it uses the OpenMP pool; called inside one (attn.c) it runs serially.
 */
#include <assert.h>
#include <cblas.h>
#include <stddef.h>

#include "ops.h"

/* Sizes positive; out written while inp and w are still read: no overlap. */
static void mm_check_forward(const float *out, const float *inp, const float *w, int N, int Din, int Dout) {
    assert(N > 0 && Din > 0 && Dout > 0);
    assert(out && inp && w);
    assert(ops_disjoint(out, (size_t)N * Dout, inp, (size_t)N * Din));
    assert(ops_disjoint(out, (size_t)N * Dout, w, (size_t)Dout * Din));
    (void)out, (void)inp, (void)w, (void)N, (void)Din, (void)Dout;
}

/* dinp and dw (either may be NULL) overlap neither each other nor the inputs. */
static void mm_check_backward(const float *dinp, const float *dw, const float *dout, const float *inp,
                              const float *w, int N, int Din, int Dout) {
    assert(N > 0 && Din > 0 && Dout > 0);
    assert(dout && (!dinp || w) && (!dw || inp));
    const size_t ni = (size_t)N * Din, no = (size_t)N * Dout, nw = (size_t)Dout * Din;
    assert(ops_disjoint(dinp, ni, dout, no) && ops_disjoint(dinp, ni, w, nw) && ops_disjoint(dinp, ni, inp, ni));
    assert(ops_disjoint(dw, nw, dout, no) && ops_disjoint(dw, nw, inp, ni) && ops_disjoint(dw, nw, dinp, ni));
    (void)dinp, (void)dw, (void)dout, (void)inp, (void)w, (void)ni, (void)no, (void)nw;
}

void mm_forward(float *out, const float *inp, const float *w, int N, int Din, int Dout) {
    mm_check_forward(out, inp, w, N, Din, Dout);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, Dout, Din, 1.0f, inp, Din, w, Din, 0.0f, out, Dout);
}

void mm_backward(float *dinp, float *dw, const float *dout, const float *inp, const float *w,
                 int N, int Din, int Dout) {
    mm_check_backward(dinp, dw, dout, inp, w, N, Din, Dout);
    if (dinp)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, Din, Dout, 1.0f, dout, Dout, w, Din, 1.0f,
                    dinp, Din);
    if (dw)
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, Dout, Din, N, 1.0f, dout, Dout, inp, Din, 1.0f,
                    dw, Din);
}

void mm_backward_set(float *dinp, float *dw, const float *dout, const float *inp, const float *w,
                     int N, int Din, int Dout) {
    assert(dinp); /* the set variant always writes dinp */
    mm_check_backward(dinp, dw, dout, inp, w, N, Din, Dout);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, Din, Dout, 1.0f, dout, Dout, w, Din, 0.0f,
                dinp, Din);
    mm_backward(NULL, dw, dout, inp, w, N, Din, Dout);
}

void mm_forward_ref(float *out, const float *inp, const float *w, int N, int Din, int Dout) {
    mm_check_forward(out, inp, w, N, Din, Dout);
    for (int n = 0; n < N; n++)
        for (int o = 0; o < Dout; o++) {
            double s = 0;
            for (int i = 0; i < Din; i++) s += (double)inp[(size_t)n * Din + i] * w[(size_t)o * Din + i];
            out[(size_t)n * Dout + o] = (float)s;
        }
}

void mm_backward_ref(float *dinp, float *dw, const float *dout, const float *inp, const float *w,
                     int N, int Din, int Dout) {
    mm_check_backward(dinp, dw, dout, inp, w, N, Din, Dout);
    if (dinp)
        for (int n = 0; n < N; n++)
            for (int i = 0; i < Din; i++) {
                double s = 0;
                for (int o = 0; o < Dout; o++) s += (double)dout[(size_t)n * Dout + o] * w[(size_t)o * Din + i];
                dinp[(size_t)n * Din + i] += (float)s;
            }
    if (dw)
        for (int o = 0; o < Dout; o++)
            for (int i = 0; i < Din; i++) {
                double s = 0;
                for (int n = 0; n < N; n++) s += (double)dout[(size_t)n * Dout + o] * inp[(size_t)n * Din + i];
                dw[(size_t)o * Din + i] += (float)s;
            }
}
