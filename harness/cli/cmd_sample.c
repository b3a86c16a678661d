/*
 * cmd_sample.c — `gatelab sample RUN [--tokens N] [--prompt S] [--temperature T]
 * [--seed S] [--results DIR]`: generate text from a trained run, one token at
 * a time over a sliding window of the model's context length.  Temperature 0
 * takes the most likely token.  Output goes to stdout as raw bytes.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/rng.h"
#include "cli.h"
#include "store/rundir.h"

int cmd_sample(int argc, char **argv) {
    const char *arg = NULL, *prompt = "\n", *results = NULL;
    long n_tokens = 200;
    double temperature = 1.0;
    unsigned long long seed = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int hv = i + 1 < argc;
        if (!strcmp(a, "--tokens") && hv) n_tokens = atol(argv[++i]);
        else if (!strcmp(a, "--prompt") && hv) prompt = argv[++i];
        else if (!strcmp(a, "--temperature") && hv) temperature = atof(argv[++i]);
        else if (!strcmp(a, "--seed") && hv) seed = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(a, "--results") && hv) results = argv[++i];
        else if (a[0] != '-' && !arg) arg = a;
        else {
            fprintf(stderr, "gatelab sample: unknown or incomplete argument '%s'\n", a);
            return 2;
        }
    }
    if (!arg || n_tokens < 0 || temperature < 0) {
        fprintf(stderr, "usage: gatelab sample RUN [--tokens N] [--prompt S] [--temperature T] [--seed S]\n");
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
