/*
 * decode.c — decoding throughput of the KV-cache path (model/decode.h): a
 * benchmark, not a test; it prints figures and never asserts on time.
 *
 * The model is the reference config of bench.c (V 65, d 256, L 6, H 8, Hkv 8,
 * d_ff 1024) with seq_len = prompt + new tokens, so the cache never fills and
 * no step falls back to re-prefilling a shifted window.  Per repetition:
 * prefill B prompts of --prompt tokens, then --new steps of one token per
 * sequence.  The token fed at each step comes from a fixed random stream, not
 * the model's own choice (the arg max is still computed every step): both
 * implementations then do the same work on the same tokens, and a
 * random-weight model's routers see varied inputs instead of a repeated token.
 *
 * Variants:
 *   dense  the plain model (all blocks for every token)
 *   tsa    TSA in sparse inference (m->sparse): router weights scaled and
 *          each router's output bias set, block by block, so that a share
 *          --alpha of the (token, block >= 1) pairs of the token stream run;
 *          a halted token makes only its keys and values in a block.
 *
 * Output: one JSON line per timed repetition
 *   {"impl":"gatelab","variant","batch","prompt","new","threads","rep",
 *    "decode_tokens_per_s" (B·new / wall time of the steps),
 *    "decode_cpu_tokens_per_s" (B·new / process CPU time of the steps: on a
 *    loaded machine a steadier figure than wall time, but it counts every
 *    thread's time, spinning included), "prefill_ms", "alpha"
 *    (share of pairs that ran in the steps), "argmax_digest"}
 * With --dump DIR it also writes what the PyTorch anchor
 * (scripts/bench/torch_decode.py) needs to run the same model on the same
 * tokens: DIR/params.f32 (the parameter block, float32), DIR/params.idx (one
 * "name offset size rows cols" line per tensor), DIR/tokens.i32 (B, prompt +
 * new), DIR/argmax.i32 (B, new: this program's arg max per step, to compare)
 * and DIR/config.txt ("key value" lines).
 *
 * usage: bench_decode [--variant dense|tsa] [--batch B] [--prompt P] [--new N]
 *                     [--reps R] [--warmup W] [--alpha A] [--dump DIR] [--help]
 */
#include <getopt.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model/decode.h"
#include "model/model.h"
#include "model/rng.h"
#include "store/parse.h"

typedef struct {
    int tsa, B, prompt, n_new, reps, warmup;
    double alpha;
    const char *dump;
} opts;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void usage(FILE *f) {
    fprintf(f, "usage: bench_decode [--variant dense|tsa] [--batch B] [--prompt P] [--new N] [--reps R]\n"
               "                    [--warmup W] [--alpha A] [--dump DIR] [--help]\n"
               "  --variant  dense (default) or tsa (sparse inference, halted tokens skip their block)\n"
               "  --batch    sequences decoded together, 1..256 (default 1)\n"
               "  --prompt   prompt tokens per sequence, 1..4096 (default 64)\n"
               "  --new      decoding steps, 1..4096 (default 256); seq_len = prompt + new\n"
               "  --reps     timed repetitions, 1..1000 (default 1)\n"
               "  --warmup   untimed repetitions first, 0..100 (default 1)\n"
               "  --alpha    tsa: target share of (token, block >= 1) pairs that run, 0..1 (default 0.73)\n"
               "  --dump     write the weights, tokens and arg maxes for scripts/bench/torch_decode.py into DIR\n");
}

/* Parse one number flag; prints the flag and reason and returns -1 if bad. */
static int num_int(const char *flag, const char *s, int lo, int hi, int *out) {
    char why[128];
    if (!parse_int(s, lo, hi, out, why, sizeof why)) return 0;
    fprintf(stderr, "bench_decode: %s '%s': %s\n", flag, s, why);
    return -1;
}

static int parse_opts(int argc, char **argv, opts *o) {
    static const struct option longs[] = {{"variant", required_argument, 0, 'v'}, {"batch", required_argument, 0, 'b'},
                                          {"prompt", required_argument, 0, 'p'},  {"new", required_argument, 0, 'n'},
                                          {"reps", required_argument, 0, 'r'},    {"warmup", required_argument, 0, 'w'},
                                          {"alpha", required_argument, 0, 'a'},   {"dump", required_argument, 0, 'd'},
                                          {"help", no_argument, 0, 'h'},          {0, 0, 0, 0}};
    *o = (opts){0, 1, 64, 256, 1, 1, 0.73, NULL};
    char why[128];
    int c;
    while ((c = getopt_long(argc, argv, "", longs, NULL)) != -1) {
        int bad = 0;
        switch (c) {
        case 'v':
            if (!strcmp(optarg, "tsa"))
                o->tsa = 1;
            else if (strcmp(optarg, "dense")) {
                fprintf(stderr, "bench_decode: --variant '%s': must be dense or tsa\n", optarg);
                bad = 1;
            }
            break;
        case 'b':
            bad = num_int("--batch", optarg, 1, 256, &o->B);
            break;
        case 'p':
            bad = num_int("--prompt", optarg, 1, 4096, &o->prompt);
            break;
        case 'n':
            bad = num_int("--new", optarg, 1, 4096, &o->n_new);
            break;
        case 'r':
            bad = num_int("--reps", optarg, 1, 1000, &o->reps);
            break;
        case 'w':
            bad = num_int("--warmup", optarg, 0, 100, &o->warmup);
            break;
        case 'a':
            if (parse_double(optarg, 0.0, 1.0, &o->alpha, why, sizeof why)) {
                fprintf(stderr, "bench_decode: --alpha '%s': %s\n", optarg, why);
                bad = 1;
            }
            break;
        case 'd':
            o->dump = optarg;
            break;
        case 'h':
            usage(stdout);
            exit(0);
        default:
            bad = 1;
        }
        if (bad) return -1;
    }
    if (optind < argc) {
        fprintf(stderr, "bench_decode: unexpected argument '%s'\n", argv[optind]);
        return -1;
    }
    return 0;
}

static int cmp_f(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* TSA: scale every router's output weights by 50 (so p spreads over (0, 1)
 * instead of sitting at σ(bias)) and set router l's output bias so that a
 * share alpha of the stream's tokens keep p <= 0.5 there, in block order
 * under sparse inference (a later router sees the states the earlier ones left). */
static void calibrate_routers(gl_model *m, const int *stream, int len, double alpha) {
    const int L = m->cfg.n_layer, R = m->R;
    float *z = malloc((size_t)len * sizeof(float));
    for (int l = 0; l + 1 < L; l++)
        for (int r = 0; r < R; r++) m->P.router[l].fc2_w[r] *= 50.0f;
    m->sparse = 1;
    for (int l = 0; l + 1 < L; l++) {
        model_forward(m, stream, NULL, NULL, 1, len);
        const float *p = m->A[l + 1].p;
        for (int t = 0; t < len; t++) {
            float q = fminf(fmaxf(p[t], 1e-7f), 1.0f - 1e-7f);
            z[t] = logf(q / (1.0f - q)); /* the router's pre-sigmoid output */
        }
        qsort(z, (size_t)len, sizeof *z, cmp_f);
        int k = (int)lround(alpha * len);
        /* shift so that the k smallest outputs are <= 0 (run) and the rest > 0 (halt) */
        float cut = k <= 0 ? z[0] - 1.0f : k >= len ? z[len - 1] + 1.0f : 0.5f * (z[k - 1] + z[k]);
        m->P.router[l].fc2_b[0] -= cut;
    }
    free(z);
}

static gl_model_config bench_config(const opts *o) {
    gl_model_config c;
    config_defaults(&c);
    c.vocab_size = 65;
    c.d_model = 256;
    c.n_layer = 6;
    c.n_head = 8;
    c.n_kv_head = 8;
    c.d_ff = 1024;
    c.seq_len = o->prompt + o->n_new;
    if (o->tsa) c.depth_routing = DR_TSA;
    return c;
}

/* dir/name ← n items of size bytes from p.  Returns 0, or -1 (cannot open or write). */
static int write_raw(const char *dir, const char *name, const void *p, size_t size, size_t n) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    int ok = fwrite(p, size, n, f) == n;
    ok &= !fclose(f);
    return ok ? 0 : -1;
}

/* Write the files the PyTorch anchor reads (see the header).  Returns 0, or
 * -1 with a message on stderr. */
static int dump(const opts *o, const gl_model *m, const int *stream, const int *argmax) {
    const gl_model_config *c = &m->cfg;
    const size_t S = (size_t)o->prompt + o->n_new;
    char idx[64 * 1024], conf[1024];
    size_t len = 0;
    for (int i = 0; i < m->n_tensors && len < sizeof idx; i++) {
        const gl_tensor *t = &m->tensors[i];
        len += (size_t)snprintf(idx + len, sizeof idx - len, "%s %zu %zu %d %d\n", t->name, t->offset, t->size,
                                t->shape[0], t->ndim == 2 ? t->shape[1] : 1);
    }
    int n = snprintf(conf, sizeof conf,
                     "variant %s\nbatch %d\nprompt %d\nnew %d\nvocab_size %d\nd_model %d\nn_layer %d\nn_head %d\n"
                     "n_kv_head %d\nd_ff %d\nseq_len %d\nnorm_eps %g\nrope_base %g\nrouter_hidden %d\n",
                     o->tsa ? "tsa" : "dense", o->B, o->prompt, o->n_new, c->vocab_size, c->d_model, c->n_layer,
                     c->n_head, c->n_kv_head, c->d_ff, c->seq_len, (double)c->norm_eps, (double)c->rope_base, m->R);
    if (len >= sizeof idx || write_raw(o->dump, "params.f32", m->params, sizeof(float), m->n_params) ||
        write_raw(o->dump, "params.idx", idx, 1, len) ||
        write_raw(o->dump, "tokens.i32", stream, sizeof(int), (size_t)o->B * S) ||
        write_raw(o->dump, "argmax.i32", argmax, sizeof(int), (size_t)o->B * o->n_new) ||
        write_raw(o->dump, "config.txt", conf, 1, (size_t)n)) {
        fprintf(stderr, "bench_decode: cannot write the files of --dump into %s (does the folder exist?)\n", o->dump);
        return -1;
    }
    return 0;
}

typedef struct {
    double decode_s, prefill_s, decode_cpu_s;
    unsigned long digest;
} rep_result;

/* One repetition: prefill positions 0..prompt-1, then n_new steps feeding
 * positions prompt..prompt+n_new-1 from the stream; the arg max after every
 * step goes to argmax (B, n_new) and into the digest. */
static rep_result one_rep(gl_decode *dc, const opts *o, const int *stream, int *prompt, int *argmax) {
    const int B = o->B, S = o->prompt + o->n_new, V = dc->m->cfg.vocab_size;
    rep_result r = {0, 0, 0, 1469598103934665603UL};
    int step[256];
    for (int b = 0; b < B; b++)
        memcpy(prompt + (size_t)b * o->prompt, stream + (size_t)b * S, (size_t)o->prompt * sizeof(int));
    double t0 = now_s();
    decode_prefill(dc, prompt, o->prompt);
    double t1 = now_s(), c1 = cpu_s();
    for (int s = 0; s < o->n_new; s++) {
        for (int b = 0; b < B; b++) step[b] = stream[(size_t)b * S + o->prompt + s];
        decode_step(dc, step);
        for (int b = 0; b < B; b++) {
            const float *l = dc->logits + (size_t)b * V;
            int best = 0;
            for (int v = 1; v < V; v++)
                if (l[v] > l[best]) best = v;
            argmax[(size_t)b * o->n_new + s] = best;
            r.digest = (r.digest ^ (unsigned long)best) * 1099511628211UL;
        }
    }
    r.prefill_s = t1 - t0;
    r.decode_s = now_s() - t1;
    r.decode_cpu_s = cpu_s() - c1;
    return r;
}

int main(int argc, char **argv) {
    opts o;
    if (parse_opts(argc, argv, &o)) {
        usage(stderr);
        return 2;
    }
    gl_model_config cfg = bench_config(&o);
    gl_model m;
    gl_decode dc;
    char err[512];
    if (model_init(&m, &cfg, o.B, err, sizeof err)) {
        fprintf(stderr, "bench_decode: %s\n", err);
        return 1;
    }
    model_init_weights(&m, 1);
    const int S = o.prompt + o.n_new;
    int *stream = malloc((size_t)o.B * S * sizeof(int)), *prompt = malloc((size_t)o.B * o.prompt * sizeof(int));
    int *argmax = malloc((size_t)o.B * o.n_new * sizeof(int));
    gl_rng r;
    rng_seed(&r, 3);
    for (int i = 0; i < o.B * S; i++) stream[i] = (int)rng_below(&r, cfg.vocab_size);
    if (o.tsa) calibrate_routers(&m, stream, S, o.alpha);
    if (decode_init(&dc, &m, o.B, err, sizeof err)) {
        fprintf(stderr, "bench_decode: %s\n", err);
        model_free(&m);
        return 1;
    }
    int rc = 0;
    for (int k = 0; k < o.warmup + o.reps; k++) {
        dc.pairs_run = dc.pairs_total = 0;
        rep_result res = one_rep(&dc, &o, stream, prompt, argmax);
        if (k < o.warmup) continue;
        printf("{\"impl\":\"gatelab\",\"variant\":\"%s\",\"batch\":%d,\"prompt\":%d,\"new\":%d,\"threads\":%d,"
               "\"rep\":%d,\"decode_tokens_per_s\":%.1f,\"decode_cpu_tokens_per_s\":%.1f,\"prefill_ms\":%.2f,\"alpha\":"
               "%.4f,\"argmax_digest\":\"%016lx\"}\n",
               o.tsa ? "tsa" : "dense", o.B, o.prompt, o.n_new, omp_get_max_threads(), k - o.warmup,
               (double)o.B * o.n_new / res.decode_s, (double)o.B * o.n_new / res.decode_cpu_s, res.prefill_s * 1e3,
               dc.pairs_total ? (double)dc.pairs_run / dc.pairs_total : 1.0, res.digest);
        fflush(stdout);
    }
    if (o.dump && dump(&o, &m, stream, argmax)) rc = 1;
    decode_free(&dc);
    model_free(&m);
    free(stream);
    free(prompt);
    free(argmax);
    return rc;
}
