/*
 * sample.c — text generation for `gatelab sample`: a sliding window of the
 * model's context length (seq_len), one token per step, sampled from the
 * last position's logits.
 *
 * Two paths give the same tokens at temperature 0 (tests/test_decode.c,
 * tests/integration/sample.sh):
 *   cached    (default) prefill the prompt once, then one KV-cache step per
 *             token (model/decode.h).  Once the context is longer than the
 *             window, every window is a shifted one whose rotary positions
 *             all change, so each further token re-prefills the last seq_len
 *             tokens: the same work as the uncached path.
 *   uncached  model_forward over the whole window for every token.
 *
 * Deliberately not here: reading runs, tokenising, printing (harness/cli/cmd_sample.c).
 */
#include "sample.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/decode.h"

int sample_pick(const float *logits, int V, double temperature, double *p, gl_rng *r) {
    int next = 0;
    if (temperature == 0.0) {
        for (int v = 1; v < V; v++)
            if (logits[v] > logits[next]) next = v;
        return next;
    }
    double mx = logits[0], z = 0;
    for (int v = 1; v < V; v++) mx = logits[v] > mx ? logits[v] : mx;
    for (int v = 0; v < V; v++) z += (p[v] = exp((logits[v] - mx) / temperature));
    double u = rng_uniform(r) * z, acc = 0;
    next = V - 1;
    for (int v = 0; v < V; v++)
        if ((acc += p[v]) > u) return v;
    return next;
}

/* Logits of the next token after ctx[0, len) with the KV cache: prefill at
 * the first step or when the window is full, else one step. */
static const float *cached_logits(gl_decode *dc, const int *ctx, size_t len, long k) {
    const size_t T = (size_t)dc->T;
    if (k == 0 || len > T) {
        size_t start = len > T ? len - T : 0;
        decode_prefill(dc, ctx + start, (int)(len - start));
    } else {
        decode_step(dc, ctx + len - 1); /* the cache holds ctx[0, len-1) */
    }
    return dc->logits;
}

int sample_run(gl_model *m, const int *prompt, size_t plen, const gl_sample_opts *o, gl_sample_emit emit, void *ectx,
               int *cached, char *note, size_t notelen, char *err, size_t errlen) {
    const int T = m->T, V = m->cfg.vocab_size;
    int rc = -1;
    gl_decode dc;
    memset(&dc, 0, sizeof dc);
    if (note && notelen) note[0] = '\0';
    *cached = 0;
    int *ctx = malloc((plen + (size_t)o->n_tokens + 1) * sizeof(int));
    double *p = malloc((size_t)V * sizeof(double));
    if (!ctx || !p) {
        snprintf(err, errlen, "sample: out of memory for %zu prompt + %ld new tokens", plen, o->n_tokens);
        goto cleanup;
    }
    memcpy(ctx, prompt, plen * sizeof(int));
    if (o->use_cache && o->n_tokens > 0) {
        char why[512];
        if (decode_init(&dc, m, 1, why, sizeof why))
            snprintf(note, notelen, "the KV cache is not used (%s)", why);
        else
            *cached = 1;
    }
    gl_rng r;
    rng_seed(&r, o->seed);
    size_t len = plen;
    for (long k = 0; k < o->n_tokens; k++) {
        const float *logit;
        if (*cached) {
            logit = cached_logits(&dc, ctx, len, k);
        } else {
            size_t start = len > (size_t)T ? len - T : 0;
            int t = (int)(len - start);
            model_forward(m, ctx + start, NULL, NULL, 1, t);
            logit = m->logits + (size_t)(t - 1) * V;
        }
        int next = sample_pick(logit, V, o->temperature, p, &r);
        ctx[len++] = next;
        emit(next, ectx);
    }
    rc = 0;
cleanup:
    decode_free(&dc);
    free(ctx);
    free(p);
    return rc;
}
