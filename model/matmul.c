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
 * transposes against them.
 * OpenBLAS is linked in its OpenMP build: called from outside a parallel
 * region it uses the OpenMP pool; called inside one (attn.c) it runs serially.
 */
#include <cblas.h>
#include <stddef.h>

#include "ops.h"

void mm_forward(float *out, const float *inp, const float *w, int N, int Din, int Dout) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, Dout, Din, 1.0f, inp, Din, w, Din, 0.0f, out, Dout);
}

void mm_backward(float *dinp, float *dw, const float *dout, const float *inp, const float *w,
                 int N, int Din, int Dout) {
    if (dinp)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, Din, Dout, 1.0f, dout, Dout, w, Din, 1.0f,
                    dinp, Din);
    if (dw)
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, Dout, Din, N, 1.0f, dout, Dout, inp, Din, 1.0f,
                    dw, Din);
}

void mm_backward_set(float *dinp, float *dw, const float *dout, const float *inp, const float *w,
                     int N, int Din, int Dout) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, Din, Dout, 1.0f, dout, Dout, w, Din, 0.0f,
                dinp, Din);
    mm_backward(NULL, dw, dout, inp, w, N, Din, Dout);
}

void mm_forward_ref(float *out, const float *inp, const float *w, int N, int Din, int Dout) {
    for (int n = 0; n < N; n++)
        for (int o = 0; o < Dout; o++) {
            double s = 0;
            for (int i = 0; i < Din; i++) s += (double)inp[(size_t)n * Din + i] * w[(size_t)o * Din + i];
            out[(size_t)n * Dout + o] = (float)s;
        }
}

void mm_backward_ref(float *dinp, float *dw, const float *dout, const float *inp, const float *w,
                     int N, int Din, int Dout) {
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
