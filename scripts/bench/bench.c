/*
 * bench.c — training and inference throughput of the C core (a benchmark, not
 * a test: it prints figures and never asserts on time).
 *
 * For the reference config (V 65, d 256, L 6, H 8, Hkv 8, d_ff 1024, T 256,
 * B 32 unless overridden) it reports, as one JSON line per variant:
 *   train_tokens_per_s  median over --steps timed steps (forward + backward + AdamW)
 *   fwd_tokens_per_s    median forward-only throughput
 *   model_gflops        training FLOPs per token × tokens/s (6N + 12·L·T·d)
 *   sgemm_gflops        sgemm on the model's own matmul shapes, same process
 *   ratio_to_sgemm      model_gflops / sgemm_gflops
 *   step_ratio          this variant's median step / the baseline's
 *   peak_rss_mib, openblas core, threads
 * Variants run back to back in one process, so ratios share the machine's state.
 *
 * With --db PATH --tag TAG each variant is also recorded in the registry as a
 * FINISHED run of experiment "cost-TAG" (params: its model config; metrics in
 * split "bench": train_tokens_per_s, fwd_tokens_per_s, step_ms, peak_rss_mib,
 * model_gflops), which `gatelab tables cost-TAG` turns into the cost table.
 * Run one variant per process (scripts/bench/run.sh does) for a per-variant
 * peak RSS; --no-sgemm skips the sgemm measurement and its buffers.
 *
 * usage: bench_gatelab [--steps N] [--warmup N] [--batch B] [--scale s|m] [--variants a,b,…]
 *                      [--no-sgemm] [--db PATH --tag TAG]
 *        variants: base, any value_residual, depth_routing or cross_layer name
 *        of model/variants.h (resformer satformer tsa early_exit denseformer
 *        hyper mudd ...), and sparse
 *        (sparse: TSA inference at batch 64 with p forced to give α ≈ 0.73 and
 *        0.5, dense vs sparse tokens/s and the ideal speed-up from FFN FLOPs)
 */
#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "model/adamw.h"
#include "model/model.h"
#include "model/rng.h"
#include "store/registry.h"

char *openblas_get_corename(void);
int openblas_get_num_threads(void);

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static double peak_rss_mib(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss / 1024.0;
}

/* The reference config (scale m of experiments/scales.ini) or scale s. */
static gl_model_config ref_config(const char *scale) {
    gl_model_config c;
    config_defaults(&c);
    c.vocab_size = 65;
    c.d_model = 256;
    c.n_layer = 6;
    c.n_head = 8;
    c.n_kv_head = 8;
    c.d_ff = 1024;
    c.seq_len = 256;
    if (!strcmp(scale, "s")) { /* scales.ini [s] */
        c.d_model = 128;
        c.n_head = 4;
        c.n_kv_head = 4;
        c.d_ff = 512;
    }
    return c;
}

/* Record one variant's figures as a FINISHED run of experiment cost-<tag>. */
static int record(const char *db_path, const char *tag, const char *scale, const char *variant,
                  const gl_model_config *c, int B, const double *vals, const char *const *names, int nv) {
    gl_db *db = NULL;
    char err[512], exp[160], id[256], ini[1024];
    snprintf(exp, sizeof exp, "cost-%s", tag);
    snprintf(id, sizeof id, "cost-%s-%s-%s", tag, scale, variant);
    snprintf(ini, sizeof ini,
             "[model]\nscale = %s\nd_model = %d\nn_layer = %d\nn_head = %d\nn_kv_head = %d\nd_ff = %d\nseq_len = %d\n"
             "vocab_size = %d\nvalue_residual = %s\ndepth_routing = %s\ncross_layer = %s\n[train]\nbatch_size = %d\n"
             "threads = %d\n",
             scale, c->d_model, c->n_layer, c->n_head, c->n_kv_head, c->d_ff, c->seq_len, c->vocab_size,
             config_value_residual_name(c->value_residual), config_depth_routing_name(c->depth_routing),
             config_cross_layer_name(c->cross_layer), B, omp_get_max_threads());
    long long exp_id;
    gl_metric rows[8];
    for (int i = 0; i < nv; i++) rows[i] = (gl_metric){.step = 0, .split = "bench", .name = names[i], .value = vals[i], .wall_time = 0};
    int rc = db_open(&db, db_path, err, sizeof err) || db_experiment_ensure(db, exp, ini, &exp_id, err, sizeof err) ||
             db_run_create(db, exp_id, id, variant, ini, "", 0, "RUNNING", err, sizeof err) ||
             db_params_put_ini(db, id, ini, err, sizeof err) || db_metrics_log(db, id, rows, nv, err, sizeof err) ||
             db_run_finish(db, id, "FINISHED", 0, NULL, err, sizeof err);
    if (rc) fprintf(stderr, "bench: registry %s: %s\n", db_path, err);
    db_close(db);
    return rc ? -1 : 0;
}

/* sgemm GFLOP/s over the model's matmul shapes (forward and both backward
 * products of each linear layer): the median over `reps` rounds after one
 * warm-up round, so one slow round on a shared machine does not set it. */
static double sgemm_rate(const gl_model_config *c, int B, int reps) {
    const int N = B * c->seq_len, d = c->d_model, F = c->d_ff;
    const int shapes[][2] = {{d, d}, {d, F}, {F, d}, {d, c->vocab_size}};
    size_t maxw = (size_t)F * d;
    float *x = malloc((size_t)N * F * sizeof(float)), *w = malloc(maxw * sizeof(float));
    float *y = malloc((size_t)N * F * sizeof(float)), *dw = malloc(maxw * sizeof(float));
    double *rate = malloc((size_t)(reps + 1) * sizeof(double));
    for (size_t i = 0; i < (size_t)N * F; i++) x[i] = y[i] = 0.01f * (float)(i % 97);
    for (size_t i = 0; i < maxw; i++) w[i] = dw[i] = 0.001f * (float)(i % 89);
    for (int r = 0; r <= reps; r++) {
        double flops = 0, t0 = now_s();
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            int in = shapes[s][0], out = shapes[s][1];
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, out, in, 1, x, in, w, in, 0, y, out);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, in, out, 1, y, out, w, in, 0, x, in);
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, out, in, N, 1, y, out, x, in, 1, dw, in);
            flops += 3.0 * 2.0 * N * in * out;
        }
        rate[r] = flops / (now_s() - t0) / 1e9;
    }
    double med = median(rate + 1, reps); /* round 0 warms up */
    free(x); free(w); free(y); free(dw); free(rate);
    return med;
}

typedef struct {
    double step_s, fwd_s, tps, fwd_tps, gflops;
} result;

static result run_variant(gl_model_config cfg, int B, int warmup, int steps) {
    gl_model m;
    char err[256];
    if (model_init(&m, &cfg, B, err, sizeof err)) {
        fprintf(stderr, "bench: %s\n", err);
        exit(1);
    }
    model_init_weights(&m, 1);
    const int T = cfg.seq_len, N = B * T;
    int *tok = malloc(N * sizeof(int)), *tg = malloc(N * sizeof(int));
    gl_rng r;
    rng_seed(&r, 3);
    for (int i = 0; i < N; i++) {
        tok[i] = (int)rng_below(&r, cfg.vocab_size);
        tg[i] = (int)rng_below(&r, cfg.vocab_size);
    }
    gl_adamw opt = {0.9f, 0.95f, 1e-8f, 0.1f, 1.0f};
    double *ts = malloc((size_t)(steps + warmup) * sizeof(double));
    for (int s = 0; s < warmup + steps; s++) {
        double t0 = now_s();
        model_forward(&m, tok, tg, NULL, B, T);
        model_zero_grad(&m);
        model_backward(&m);
        adamw_step(&m, &opt, 1e-3f, s + 1);
        ts[s] = now_s() - t0;
    }
    result res;
    res.step_s = median(ts + warmup, steps);
    for (int s = 0; s < warmup + steps; s++) {
        double t0 = now_s();
        model_forward(&m, tok, tg, NULL, B, T);
        ts[s] = now_s() - t0;
    }
    res.fwd_s = median(ts + warmup, steps);
    res.tps = N / res.step_s;
    res.fwd_tps = N / res.fwd_s;
    res.gflops = model_train_flops_per_token(&m) * res.tps / 1e9;
    free(ts); free(tok); free(tg);
    model_free(&m);
    return res;
}

/* TSA sparse inference: dense vs sparse forward at a forced active fraction. */
static void run_sparse(int B, int warmup, int steps, double alpha_target) {
    gl_model_config cfg = ref_config("m");
    cfg.depth_routing = DR_TSA;
    gl_model m;
    char err[256];
    if (model_init(&m, &cfg, B, err, sizeof err)) {
        fprintf(stderr, "bench: %s\n", err);
        exit(1);
    }
    model_init_weights(&m, 1);
    /* random routing: each (token, router) skips with probability 1 − α */
    model_set_route_override(&m, ROUTE_RANDOM, (float)(1.0 - alpha_target), 99);
    const int T = cfg.seq_len, N = B * T;
    int *tok = malloc(N * sizeof(int));
    for (int i = 0; i < N; i++) tok[i] = i % cfg.vocab_size;
    double *td = malloc((size_t)(steps + warmup) * sizeof(double)), *tsp = malloc((size_t)(steps + warmup) * sizeof(double));
    for (int s = 0; s < warmup + steps; s++) {
        m.sparse = 0;
        double t0 = now_s();
        model_forward(&m, tok, NULL, NULL, B, T);
        td[s] = now_s() - t0;
        m.sparse = 1;
        t0 = now_s();
        model_forward(&m, tok, NULL, NULL, B, T);
        tsp[s] = now_s() - t0;
    }
    double alpha = m.active_frac;
    double dense = median(td + warmup, steps), sparse = median(tsp + warmup, steps);
    /* ideal: only the FFN of skipped (token, layer >= 1) pairs is saved */
    const double d = cfg.d_model, F = cfg.d_ff, L = cfg.n_layer, V = cfg.vocab_size;
    double attn = 2.0 * (4 * d * d) + 4.0 * T * d, ffn = 2.0 * 3 * d * F, head = 2.0 * d * V;
    double total = L * (attn + ffn) + head;
    double saved = (L - 1) * (1.0 - alpha) * ffn;
    double ideal = total / (total - saved);
    printf("{\"variant\":\"tsa_sparse_inference\",\"batch\":%d,\"alpha\":%.4f,\"dense_tokens_per_s\":%.0f,"
           "\"sparse_tokens_per_s\":%.0f,\"speedup\":%.4f,\"ideal_speedup\":%.4f,\"share_of_ideal\":%.3f}\n",
           B, alpha, N / dense, N / sparse, dense / sparse, ideal, (dense / sparse - 1.0) / (ideal - 1.0));
    fflush(stdout);
    free(td); free(tsp); free(tok);
    model_free(&m);
}

int main(int argc, char **argv) {
    int steps = 10, warmup = 2, B = 32, do_sgemm = 1;
    const char *variants = "base,resformer,satformer,tsa", *scale = "m", *db_path = NULL, *tag = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--steps") && i + 1 < argc) steps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--warmup") && i + 1 < argc) warmup = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--batch") && i + 1 < argc) B = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--variants") && i + 1 < argc) variants = argv[++i];
        else if (!strcmp(argv[i], "--scale") && i + 1 < argc) scale = argv[++i];
        else if (!strcmp(argv[i], "--db") && i + 1 < argc) db_path = argv[++i];
        else if (!strcmp(argv[i], "--tag") && i + 1 < argc) tag = argv[++i];
        else if (!strcmp(argv[i], "--no-sgemm")) do_sgemm = 0;
        else {
            fprintf(stderr, "usage: bench_gatelab [--steps N] [--warmup N] [--batch B] [--scale s|m] [--no-sgemm] "
                            "[--db PATH --tag TAG] [--variants base,resformer,satformer,tsa,early_exit,denseformer,hyper,mudd,sparse]\n");
            return 2;
        }
    }
    if (strcmp(scale, "s") && strcmp(scale, "m")) {
        fprintf(stderr, "bench: --scale must be s or m\n");
        return 2;
    }
    if (!db_path != !tag) {
        fprintf(stderr, "bench: --db and --tag go together\n");
        return 2;
    }
    gl_model_config base = ref_config(scale);
    const char *env_core = getenv("OPENBLAS_CORETYPE");
    double sg = do_sgemm ? sgemm_rate(&base, B, 10) : NAN;
    char sgs[32] = "null"; /* JSON has no NaN: null when not measured */
    if (do_sgemm) snprintf(sgs, sizeof sgs, "%.1f", sg);
    printf("{\"openblas_core\":\"%s\",\"OPENBLAS_CORETYPE\":\"%s\",\"threads\":%d,\"sgemm_gflops\":%s}\n",
           openblas_get_corename(), env_core ? env_core : "(unset)", omp_get_max_threads(), sgs);
    fflush(stdout);
    double base_step = 0;
    char list[256];
    snprintf(list, sizeof list, "%s", variants);
    for (char *v = strtok(list, ","); v; v = strtok(NULL, ",")) {
        if (!strcmp(v, "sparse")) {
            run_sparse(64, 1, steps > 5 ? 5 : steps, 0.73);
            run_sparse(64, 1, steps > 5 ? 5 : steps, 0.5);
            continue;
        }
        gl_model_config c = base; /* hyper: hc_expansion 4 */
        if (strcmp(v, "base") && strcmp(v, "none") && config_parse_value_residual(v, &c.value_residual) &&
            config_parse_depth_routing(v, &c.depth_routing) && config_parse_cross_layer(v, &c.cross_layer)) {
            fprintf(stderr, "bench: unknown variant %s (base, sparse, or a value_residual, depth_routing or "
                            "cross_layer name)\n", v);
            return 2;
        }
        result r = run_variant(c, B, warmup, steps);
        if (!strcmp(v, "base")) base_step = r.step_s;
        double rss = peak_rss_mib();
        if (db_path) {
            const char *names[] = {"train_tokens_per_s", "fwd_tokens_per_s", "step_ms", "peak_rss_mib", "model_gflops"};
            const double vals[] = {r.tps, r.fwd_tps, r.step_s * 1e3, rss, r.gflops};
            if (record(db_path, tag, scale, v, &c, B, vals, names, 5)) return 1;
        }
        printf("{\"variant\":\"%s\",\"scale\":\"%s\",\"batch\":%d,\"seq_len\":%d,\"train_tokens_per_s\":%.0f,\"fwd_tokens_per_s\":%.0f,"
               "\"train_step_ms_median\":%.1f,\"model_gflops\":%.1f,\"ratio_to_sgemm\":%.3f,\"step_ratio\":%.4f,"
               "\"peak_rss_mib\":%.0f}\n",
               v, scale, B, c.seq_len, r.tps, r.fwd_tps, r.step_s * 1e3, r.gflops, do_sgemm ? r.gflops / sg : 0.0,
               base_step > 0 ? r.step_s / base_step : 0.0, rss);
        fflush(stdout);
    }
    return 0;
}
