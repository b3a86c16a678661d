/*
 * cmd_sample.c — `gatelab sample RUN [--tokens N] [--prompt S] [--temperature T]
 * [--seed S] [--results DIR]`: generate text from a trained run, one token at
 * a time over a sliding window of the model's context length.  Temperature 0
 * takes the most likely token.  Output goes to stdout as raw bytes.
 *
 * Flags are checked before the run is opened: --tokens 0..SAMPLE_MAX_TOKENS,
 * --temperature a finite 0..SAMPLE_MAX_TEMPERATURE, --prompt at least one
 * byte of the run's vocabulary (the model predicts from a context).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/rng.h"
#include "args.h"
#include "cli.h"
#include "store/rundir.h"

#define SAMPLE_MAX_TOKENS 10000000L  /* one forward pass each: days on a laptop beyond this */
#define SAMPLE_MAX_TEMPERATURE 1000.0 /* far past uniform sampling already */

int cmd_sample(int argc, char **argv) {
    const char *arg = NULL, *prompt = "\n", *results = NULL;
    long n_tokens = 200;
    double temperature = 1.0;
    uint64_t seed = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int hv = i + 1 < argc;
        if (!strcmp(a, "--tokens") && hv) {
            if (args_long("sample", a, argv[++i], 0, SAMPLE_MAX_TOKENS, &n_tokens)) return 2;
        } else if (!strcmp(a, "--prompt") && hv) prompt = argv[++i];
        else if (!strcmp(a, "--temperature") && hv) {
            if (args_double("sample", a, argv[++i], 0, SAMPLE_MAX_TEMPERATURE, &temperature)) return 2;
        } else if (!strcmp(a, "--seed") && hv) {
            if (args_u64("sample", a, argv[++i], &seed)) return 2;
        } else if (!strcmp(a, "--results") && hv) results = argv[++i];
        else if (a[0] != '-' && !arg) arg = a;
        else {
            fprintf(stderr, "gatelab sample: unknown or incomplete argument '%s'\n", a);
            return 2;
        }
    }
    if (!arg) {
        fprintf(stderr, "usage: gatelab sample RUN [--tokens N] [--prompt S] [--temperature T] [--seed S]\n");
        return 2;
    }
    if (!*prompt) { /* the model needs at least one token of context to predict the next */
        fprintf(stderr, "gatelab sample: --prompt is empty: give at least one byte (the default is a newline)\n");
        return 2;
    }
    static gl_run run;
    char err[1024];
    if (run_open(&run, arg, results, 1, err, sizeof err)) {
        fprintf(stderr, "gatelab sample: %s\n", err);
        return 1;
    }
    gl_model *m = &run.model;
    const int T = m->T, V = m->cfg.vocab_size;
    size_t plen = strlen(prompt), cap = plen + (size_t)n_tokens + 1;
    int *ctx = malloc(cap * sizeof(int));
    if (!ctx) {
        run_close(&run);
        return 1;
    }
    for (size_t i = 0; i < plen; i++) {
        int id = -1;
        for (int v = 0; v < run.st.vocab_size; v++)
            if (run.st.vocab[v] == (unsigned char)prompt[i]) id = v;
        if (id < 0) {
            fprintf(stderr, "gatelab sample: the prompt's byte 0x%02x ('%c') at offset %zu is not in the run's vocabulary\n",
                    (unsigned char)prompt[i], prompt[i], i);
            free(ctx);
            run_close(&run);
            return 1;
        }
        ctx[i] = id;
    }
    fwrite(prompt, 1, plen, stdout);
    gl_rng r;
    rng_seed(&r, seed);
    size_t len = plen;
    for (long k = 0; k < n_tokens; k++) {
        size_t start = len > (size_t)T ? len - T : 0;
        int t = (int)(len - start);
        model_forward(m, ctx + start, NULL, NULL, 1, t);
        const float *logit = m->logits + (size_t)(t - 1) * V;
        int next = 0;
        if (temperature == 0.0) {
            for (int v = 1; v < V; v++)
                if (logit[v] > logit[next]) next = v;
        } else {
            double mx = logit[0], z = 0;
            for (int v = 1; v < V; v++) mx = logit[v] > mx ? logit[v] : mx;
            double p[256];
            for (int v = 0; v < V; v++) z += (p[v] = exp((logit[v] - mx) / temperature));
            double u = rng_uniform(&r) * z, acc = 0;
            next = V - 1;
            for (int v = 0; v < V; v++)
                if ((acc += p[v]) > u) {
                    next = v;
                    break;
                }
        }
        ctx[len++] = next;
        fputc(run.st.vocab[next], stdout);
    }
    fputc('\n', stdout);
    free(ctx);
    run_close(&run);
    return 0;
}
