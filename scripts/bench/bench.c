/*
 * bench.c — training and inference throughput and memory of the C core (a
 * benchmark, not a test: it prints figures and never asserts on time).
 *
 * Method.  Every measured variant gets the same warm-up (--warmup steps each,
 * interleaved), then --steps timed rounds; a round times one step of every
 * variant, in an order shuffled per round (seeded), so slow phases of a
 * shared machine fall on all variants alike.  Reported per variant: the
 * median and the spread (min–max and the quartiles) of its step times, and
 * the median and quartiles of the paired ratio (its step ÷ the baseline's
 * step in the same round).  Every variant here does strictly more work than
 * the baseline, so one whose ratio is below 1 beyond the spread (upper
 * quartile < 1) is printed as "measurement problem", not as a result.  The
 * same pairing holds for sparse inference (dense and sparse forward
 * alternate, ABBA) and early exit (bookkeeping reference and skipping path).
 *
 * For the reference config (V 65, d 256, L 6, H 8, Hkv 8, d_ff 1024, T 256,
 * B 32 unless overridden) it prints one JSON line per figure:
 *   header        openblas_get_corename(), OPENBLAS_CORETYPE, threads, sgemm
 *                 GFLOP/s on the model's matmul shapes (median and min–max)
 *   training      per variant: train and forward tokens/s, step ms (median,
 *                 min, max, q1, q3), model GFLOP/s and its ratio to sgemm,
 *                 step ratio to the baseline (median, q1, q3), verdict
 *   sparse        TSA at batch 64, routers forced to random hard routing at α
 *                 0.73 and 0.50: dense vs sparse tokens/s, speed-up, the FLOP
 *                 ideal and the share of it reached; then the break-even batch
 *   exit          early exit at the same α (τ found by bisection): the
 *                 bookkeeping reference vs the skipping path, against the same
 *                 kind of ideal
 *   memory        (--memory, one variant per process) peak RSS of a training
 *                 step beside the analytic size from the config, and the ratio
 * The ideal of an inference mode counts what a skipped (token, block) pair
 * really leaves out: its query projection, its attention row (causal: (T+1)/2
 * keys on average), Wo and the FFN; its norm, k and v (and router) still run.
 * ideal_ffn_only is the older, FFN-only figure.
 *
 * Training variants are base, a value_residual / depth_routing / cross_layer
 * name, or one of SATFormer's knobs as a variant of its own: satformer_softmax
 * (model.sat_gate = softmax), satformer_bias (model.sat_gate_bias = 1),
 * satformer_decay_all (train.weight_decay_policy = all); tsa_paper (TSA in the
 * TSA paper's form).  The TSA paper's GPT-2 backbone (docs/model.md "The TSA
 * paper's own configuration") is a family of its own: gpt2 (dropout 0.1, its
 * masks drawn per step as training does) is its baseline, gpt2_nodrop and
 * gpt2+NAME (a variant above on that backbone) are paired to it.
 *
 * --checkpoint RUN: a trained routed run as it is, on its validation windows:
 * each form's loss (the dense soft pass, gatelab's sparse form and for TSA the
 * paper's, computed as `gatelab eval --sparse=FORM` computes it), then the
 * dense pass and the sparse forms timed in the same shuffled rounds at batch
 * 1, 2, 4 ... (run_sparse_trained).
 *
 * With --db PATH --tag TAG each training variant is also recorded in the
 * registry as a FINISHED run of experiment "cost-TAG" (params: its model
 * config; metrics in split "bench": train_tokens_per_s, fwd_tokens_per_s,
 * step_ms, peak_rss_mib, model_gflops, rounds, and with a baseline in the same
 * process step_ratio, step_ratio_q1, step_ratio_q3: the paired per-round
 * ratio), which `gatelab tables cost-TAG` turns into the cost table.  With
 * "sparse", run cost-TAG-SCALE-sparse holds the α 0.73 speed-up (median, q1,
 * q3), its FLOP ideal and the α reached (make paper's bench stage reads them).  Run one variant per process (scripts/bench/run.sh
 * does) for a per-variant peak RSS.
 */
#include <cblas.h>
#include <getopt.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "model/adamw.h"
#include "model/dropout.h"
#include "model/model.h"
#include "model/ops.h"
#include "model/rng.h"
#include "run/eval_run.h"
#include "run/evaluate.h"
#include "store/data.h"
#include "store/parse.h"
#include "store/registry.h"
#include "store/rundir.h"

char *openblas_get_corename(void);

#define MAX_VARIANTS 16

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median, extremes and quartiles (linear interpolation) of n values. */
typedef struct {
    double med, lo, hi, q1, q3;
} spread;

static double quantile(const double *sorted, int n, double q) {
    double x = q * (n - 1);
    int i = (int)x;
    return i + 1 < n ? sorted[i] + (x - i) * (sorted[i + 1] - sorted[i]) : sorted[n - 1];
}

static spread stats(const double *v, int n) {
    double *s = malloc((size_t)n * sizeof *s);
    if (!s) abort();
    memcpy(s, v, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, cmp_d);
    spread r = {quantile(s, n, 0.5), s[0], s[n - 1], quantile(s, n, 0.25), quantile(s, n, 0.75)};
    free(s);
    return r;
}

static double peak_rss_mib(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss / 1024.0;
}

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "bench: out of memory (%zu bytes)\n", n);
        exit(1);
    }
    return p;
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

/* The TSA paper's GPT-2 style block on c's sizes (docs/model.md "The TSA paper's own configuration", as
 * experiments/paper/tsa_official_*.ini set it): LayerNorm eps 1e-5, learned positions, no qk-norm, a GELU
 * MLP of 4·d with biases, multi-head attention, tied head, dropout 0.1 in training. */
static void gpt2_config(gl_model_config *c) {
    c->backbone = BB_GPT2;
    c->qk_norm = 0;
    c->norm_eps = 1e-5f;
    c->tied = 1;
    c->n_kv_head = c->n_head;
    c->d_ff = 4 * c->d_model;
    c->dropout = 0.1f;
}

static void model_or_die(gl_model *m, const gl_model_config *c, int B) {
    char err[256];
    if (model_init(m, c, B, err, sizeof err)) {
        fprintf(stderr, "bench: %s\n", err);
        exit(1);
    }
    model_init_weights(m, 1);
}

/* Shuffle order[0..n) (Fisher–Yates, seeded): the order of one round. */
static void shuffle(int *order, int n, gl_rng *r) {
    for (int i = 0; i < n; i++) order[i] = i;
    for (int i = n - 1; i > 0; i--) {
        int j = (int)rng_below(r, (uint64_t)i + 1), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
}

/* Record one variant's figures as a FINISHED run of experiment cost-<tag>. */
#define RECORD_MAX_METRICS 128

/* checkpoint: the run folder measured (tag "checkpoint" of the cost run), or NULL. */
static int record(const char *db_path, const char *tag, const char *scale, const char *variant,
                  const gl_model_config *c, int decay_all, int B, const double *vals, const char *const *names, int nv,
                  const char *checkpoint) {
    gl_db *db = NULL;
    char err[512], exp[160], id[256], ini[1536];
    snprintf(exp, sizeof exp, "cost-%s", tag);
    snprintf(id, sizeof id, "cost-%s-%s-%s", tag, scale, variant);
    snprintf(ini, sizeof ini,
             "[model]\nscale = %s\nd_model = %d\nn_layer = %d\nn_head = %d\nn_kv_head = %d\nd_ff = %d\nseq_len = %d\n"
             "vocab_size = %d\nvalue_residual = %s\nsat_gate = %s\nsat_gate_bias = %d\ndepth_routing = %s\n"
             "cross_layer = %s\nbackbone = %s\nqk_norm = %d\nnorm_eps = %g\ntied = %d\ndropout = %g\ntsa_form = %s\n"
             "[train]\nbatch_size = %d\nthreads = %d\nweight_decay_policy = %s\n",
             scale, c->d_model, c->n_layer, c->n_head, c->n_kv_head, c->d_ff, c->seq_len, c->vocab_size,
             config_value_residual_name(c->value_residual), config_sat_gate_name(c->sat_gate), c->sat_gate_bias,
             config_depth_routing_name(c->depth_routing), config_cross_layer_name(c->cross_layer),
             config_backbone_name(c->backbone), c->qk_norm, (double)c->norm_eps, c->tied, (double)c->dropout,
             config_tsa_form_name(c->tsa_form), B,
             omp_get_max_threads(), decay_all ? "all" : "matrices");
    long long exp_id;
    gl_metric rows[RECORD_MAX_METRICS];
    if (nv > RECORD_MAX_METRICS) nv = RECORD_MAX_METRICS;
    for (int i = 0; i < nv; i++) rows[i] = (gl_metric){.step = 0, .split = "bench", .name = names[i], .value = vals[i], .wall_time = 0};
    int rc = db_open(&db, db_path, err, sizeof err) || db_experiment_ensure(db, exp, ini, &exp_id, err, sizeof err) ||
             db_run_create(db, exp_id, id, variant, ini, "", 0, "RUNNING", err, sizeof err) ||
             db_run_start(db, id, err, sizeof err) || /* host, pid and this binary's build commit */
             db_params_put_ini(db, id, ini, err, sizeof err) || db_metrics_log(db, id, rows, nv, err, sizeof err) ||
             (checkpoint && db_tag_set(db, id, "checkpoint", checkpoint, err, sizeof err)) ||
             db_run_environment(db, id, err, sizeof err) ||
             db_run_finish(db, id, "FINISHED", 0, NULL, err, sizeof err);
    if (rc) fprintf(stderr, "bench: registry %s: %s\n", db_path, err);
    db_close(db);
    return rc ? -1 : 0;
}

/* sgemm GFLOP/s over the model's matmul shapes (forward and both backward
 * products of each linear layer): one rate per call.  With training variants
 * the rounds are interleaved with theirs (one sgemm round in each shuffled
 * round), so "% of sgemm" is a paired per-round ratio, as the step ratios are. */
typedef struct {
    int N, d, F, V;
    float *x, *w, *y, *dw;
} sgemm_bench;

static void sgemm_setup(sgemm_bench *b, const gl_model_config *c, int B) {
    *b = (sgemm_bench){B * c->seq_len, c->d_model, c->d_ff, c->vocab_size, NULL, NULL, NULL, NULL};
    const size_t widest = (size_t)(b->F > b->V ? b->F : b->V), nx = (size_t)b->N * widest, maxw = widest * b->d;
    b->x = xmalloc(nx * sizeof(float));
    b->y = xmalloc(nx * sizeof(float));
    b->w = xmalloc(maxw * sizeof(float));
    b->dw = xmalloc(maxw * sizeof(float));
    for (size_t i = 0; i < nx; i++) b->x[i] = b->y[i] = 0.01f * (float)(i % 97);
    for (size_t i = 0; i < maxw; i++) b->w[i] = b->dw[i] = 0.001f * (float)(i % 89);
}

static double sgemm_round(sgemm_bench *b) {
    const int N = b->N, shapes[][2] = {{b->d, b->d}, {b->d, b->F}, {b->F, b->d}, {b->d, b->V}};
    double flops = 0, t0 = now_s();
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const int in = shapes[s][0], out = shapes[s][1];
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, out, in, 1, b->x, in, b->w, in, 0, b->y, out);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, in, out, 1, b->y, out, b->w, in, 0, b->x, in);
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, out, in, N, 1, b->y, out, b->x, in, 1, b->dw, in);
        flops += 3.0 * 2.0 * N * in * out;
    }
    return flops / (now_s() - t0) / 1e9;
}

static void sgemm_free(sgemm_bench *b) {
    free(b->x); free(b->w); free(b->y); free(b->dw);
}

/* ------------------------------------------------------------------------ */
/* training variants, interleaved                                           */

typedef struct {
    const char *name;
    gl_model_config cfg;
    int decay_all; /* train.weight_decay_policy = all */
    const char *family; /* the variant its step ratio is taken to: "base" (llama) or "gpt2" */
    int less_work;      /* 1: does less work than its family's baseline (gpt2_nodrop) */
    gl_model m;
    double *step, *fwd; /* (rounds) seconds */
} variant;

typedef struct {
    int B, warmup, rounds;
    uint64_t seed;
    int *tok, *tg; /* (B*T) shared by every variant */
} train_setup;

/* One training step as the training loop takes it: with model.dropout > 0 the step's masks are drawn
 * (the key of step s, as train.c sets it) and cleared after, so forward-only timings run without. */
static void train_step(gl_model *m, int decay_all, const train_setup *ts, int s) {
    const gl_adamw opt = {0.9f, 0.95f, 1e-8f, 0.1f, 1.0f, decay_all};
    m->drop_key = m->cfg.dropout > 0.0f ? dropout_train_key(ts->seed, s) : 0;
    model_forward(m, ts->tok, ts->tg, NULL, ts->B, m->cfg.seq_len);
    model_zero_grad(m);
    model_backward(m);
    adamw_step(m, &opt, 1e-3f, s + 1);
    m->drop_key = 0;
}

/* Warm-up, then timed rounds of one training step per variant in shuffled order (and, with sb, one
 * sgemm round in each: slot nv of the order, its GFLOP/s in rate[k]); then the forward-only rounds. */
static void run_rounds(variant *v, int nv, const train_setup *ts, sgemm_bench *sb, double *rate) {
    gl_rng r;
    rng_seed(&r, ts->seed);
    int order[MAX_VARIANTS + 1];
    const int slots = nv + (sb != NULL);
    for (int w = 0; w < ts->warmup; w++) {
        for (int i = 0; i < nv; i++) train_step(&v[i].m, v[i].decay_all, ts, w);
        if (sb) sgemm_round(sb);
    }
    for (int k = 0; k < ts->rounds; k++) {
        shuffle(order, slots, &r);
        for (int i = 0; i < slots; i++) {
            if (order[i] == nv) {
                rate[k] = sgemm_round(sb);
                continue;
            }
            variant *x = &v[order[i]];
            double t0 = now_s();
            train_step(&x->m, x->decay_all, ts, ts->warmup + k);
            x->step[k] = now_s() - t0;
        }
    }
    for (int i = 0; i < nv; i++) model_forward(&v[i].m, ts->tok, ts->tg, NULL, ts->B, v[i].cfg.seq_len);
    for (int k = 0; k < ts->rounds; k++) {
        shuffle(order, nv, &r);
        for (int i = 0; i < nv; i++) {
            variant *x = &v[order[i]];
            double t0 = now_s();
            model_forward(&x->m, ts->tok, ts->tg, NULL, ts->B, x->cfg.seq_len);
            x->fwd[k] = now_s() - t0;
        }
    }
}

/* Analytic memory of a training step, in bytes, from the config (model.h's
 * families): parameters, gradients and the two AdamW moments (4 × P floats);
 * the activations kept for backward; the one-block gradient workspace; the
 * token, target and mask arrays.  Cross-layer buffers are not in the formula
 * (memory_check refuses those variants). */
static double analytic_bytes(const gl_model *m, int B, double parts[4]) {
    const gl_model_config *c = &m->cfg;
    const double T = c->seq_len, N = (double)B * T, d = c->d_model, F = c->d_ff, V = c->vocab_size;
    const double L = c->n_layer, H = c->n_head, Hkv = c->n_kv_head, hd = m->hd, R = m->R;
    const double qd = H * hd, kd = Hkv * hd;
    const int tsa = c->depth_routing == DR_TSA, ee = c->depth_routing == DR_EARLY_EXIT;
    const int hard = config_routing_hard(c), mod = c->depth_routing == DR_MOD;
    /* per token and block: h_in xn1 ao h_mid xn2 fo | q qr atty | k v kr vmix | f1 f3 fg |
     * rstd1 rstd2, qk rstds, gate and its pre-activation | softmax rows (H·T) | router | exit head |
     * MoD / random selection and scale, MoD router logit and weight */
    double blk = 6 * d + 3 * qd + 4 * kd + 3 * F + 2 + H + 3 * Hkv + H * T + (tsa ? 2 * R + 1 : 0) +
                 (ee ? d + 1 + V : 0) + (hard ? 2 : 0) + (mod ? 2 : 0);
    /* model-wide per token: h_out xnf rstdf logits probs tok_loss mask; exit probs and confidences */
    double top = 2 * d + 1 + 2 * V + 2 + (ee ? (L - 1) * V + L : 0);
    /* one block's gradients: 8 d-wide, 3 q-wide, 5 kv-wide, 3 F-wide, gate, dp, dlogits, router scratch */
    double ws = 8 * d + 3 * qd + 5 * kd + 3 * F + Hkv + 1 + V + R;
    double threads = omp_get_max_threads() > omp_get_num_procs() ? omp_get_max_threads() : omp_get_num_procs();
    parts[0] = 4.0 * 4 * (double)model_param_count(m);                    /* params, grads, m, v */
    parts[1] = 4.0 * (N * (L * blk + top) + T * hd);                      /* saved activations (+ rope tables) */
    parts[2] = 4.0 * (N * ws + threads * T * T);                          /* workspace */
    parts[3] = N * (4 + 4 + 1) + 4.0 * N;                                 /* tokens, targets, frozen; bench's own */
    return parts[0] + parts[1] + parts[2] + parts[3];
}

/* v's step ÷ the baseline's in the same round, over the rounds (all NaN without a baseline). */
static spread paired_ratio(const variant *v, const variant *base, int rounds) {
    spread ra = {NAN, NAN, NAN, NAN, NAN};
    if (!base) return ra;
    double *ratio = xmalloc((size_t)rounds * sizeof *ratio);
    for (int k = 0; k < rounds; k++) ratio[k] = v->step[k] / base->step[k];
    ra = stats(ratio, rounds);
    free(ratio);
    return ra;
}

/* Median over rounds of the model's GFLOP/s in round k over sgemm's in the same round (NaN without sgemm). */
static double sgemm_share(const variant *v, const train_setup *ts, const double *rate) {
    if (!rate) return NAN;
    const double flops = model_train_flops_per_token(&v->m) * ts->B * v->cfg.seq_len / 1e9;
    double *share = xmalloc((size_t)ts->rounds * sizeof *share);
    for (int k = 0; k < ts->rounds; k++) share[k] = flops / v->step[k] / rate[k];
    const double med = stats(share, ts->rounds).med;
    free(share);
    return med;
}

static void print_variant(const variant *v, const variant *base, const train_setup *ts, const double *rate) {
    const int N = ts->B * v->cfg.seq_len;
    spread st = stats(v->step, ts->rounds), fw = stats(v->fwd, ts->rounds), ra = paired_ratio(v, base, ts->rounds);
    const double tps = N / st.med, gflops = model_train_flops_per_token(&v->m) * tps / 1e9;
    const double share = sgemm_share(v, ts, rate);
    /* every variant but gpt2_nodrop does strictly more work than its baseline: faster beyond the spread
     * is not a result (and gpt2_nodrop, which does less, slower beyond it) */
    const char *verdict = !base ? "no baseline in this run" : v == base ? "baseline"
                          : (v->less_work ? ra.q1 > 1.0 : ra.q3 < 1.0) ? "measurement problem" : "result";
    printf("{\"variant\":\"%s\",\"baseline\":\"%s\",\"backbone\":\"%s\",\"dropout\":%g,\"batch\":%d,\"seq_len\":%d,"
           "\"rounds\":%d,\"train_tokens_per_s\":%.0f,"
           "\"fwd_tokens_per_s\":%.0f,\"step_ms\":{\"median\":%.1f,\"min\":%.1f,\"max\":%.1f,\"q1\":%.1f,\"q3\":%.1f},"
           "\"fwd_ms\":{\"median\":%.1f,\"min\":%.1f,\"max\":%.1f},\"model_gflops\":%.1f,\"ratio_to_sgemm\":%.3f,"
           "\"step_ratio\":{\"median\":%.4f,\"q1\":%.4f,\"q3\":%.4f,\"min\":%.4f,\"max\":%.4f},\"verdict\":\"%s\"}\n",
           v->name, v->family, config_backbone_name(v->cfg.backbone), (double)v->cfg.dropout, ts->B, v->cfg.seq_len,
           ts->rounds, tps, N / fw.med, st.med * 1e3, st.lo * 1e3, st.hi * 1e3,
           st.q1 * 1e3, st.q3 * 1e3, fw.med * 1e3, fw.lo * 1e3, fw.hi * 1e3, gflops, isnan(share) ? 0.0 : share,
           ra.med, ra.q1, ra.q3, ra.lo, ra.hi, verdict);
    fflush(stdout);
}

/* --------------------------------------------------------------------------
 * inference: FLOP ideal, TSA sparse routing, early exit                     */

/* Forward FLOPs per token of the parts of one block (causal attention); the FFN has three d × d_ff
 * matrices (SwiGLU) on the llama backbone, two (the GELU MLP) on gpt2. */
typedef struct {
    double kv, q, o, attn, ffn, head;
} block_flops;

static block_flops flops_of(const gl_model_config *c) {
    const double d = c->d_model, T = c->seq_len, hd = (double)c->d_model / c->n_head;
    const double qd = c->n_head * hd, kd = c->n_kv_head * hd;
    return (block_flops){.kv = 2 * d * 2 * kd, .q = 2 * d * qd, .o = 2 * qd * d, .attn = 2.0 * 2 * qd * (T + 1) / 2,
                         .ffn = (bb_gpt2(c) ? 4 : 6) * d * c->d_ff, .head = 2 * d * c->vocab_size};
}

/* Ideal speed-up of skipping `skipped` (token, block) pairs out of L·N, plus
 * `heads_skipped` early-exit heads (early exit runs L-1 of them per token). */
static double ideal_speedup(const gl_model_config *c, double skipped, double heads_skipped, double N, int ffn_only) {
    const block_flops f = flops_of(c);
    const double L = c->n_layer, ee = c->depth_routing == DR_EARLY_EXIT;
    const double total = N * (L * (f.kv + f.q + f.o + f.attn + f.ffn) + (1 + ee * (L - 1)) * f.head);
    const double saved = skipped * (ffn_only ? f.ffn : f.q + f.o + f.attn + f.ffn) + heads_skipped * f.head;
    return total / (total - saved);
}

/* Time `rounds` pairs of forwards A (mode 0) and B (mode 1), alternating which
 * goes first (ABBA), after one warm-up pair.  set(m, mode) switches modes. */
static void paired_forwards(gl_model *m, const int *tok, int B, int rounds, void (*set)(gl_model *, int),
                            double *ta, double *tb) {
    const int T = m->cfg.seq_len;
    for (int k = -1; k < rounds; k++) {
        for (int j = 0; j < 2; j++) {
            int mode = (k & 1) ? 1 - j : j;
            set(m, mode);
            double t0 = now_s();
            model_forward(m, tok, NULL, NULL, B, T);
            double dt = now_s() - t0;
            if (k >= 0) (mode ? tb : ta)[k] = dt;
        }
    }
}

static void set_sparse(gl_model *m, int mode) { m->sparse = mode; }
static void set_exit_skip(gl_model *m, int mode) { m->exit_reference = !mode; }

typedef struct {
    double dense_tps, sparse_tps;
    spread speedup;
} pair_result;

static pair_result pair_stats(const double *ta, const double *tb, int rounds, int N) {
    double *sp = xmalloc((size_t)rounds * sizeof *sp);
    for (int k = 0; k < rounds; k++) sp[k] = ta[k] / tb[k];
    pair_result r = {N / stats(ta, rounds).med, N / stats(tb, rounds).med, stats(sp, rounds)};
    free(sp);
    return r;
}

/* share_of_ideal is null where the ideal is no speed-up (α = 1: nothing to skip), as JSON has no inf. */
static void print_pair(const char *what, int B, double alpha, const pair_result *p, double ideal, double ideal_ffn,
                       const char *extra) {
    char share[32] = "null";
    if (ideal > 1.0) snprintf(share, sizeof share, "%.3f", (p->speedup.med - 1.0) / (ideal - 1.0));
    printf("{\"variant\":\"%s\",\"batch\":%d,\"alpha\":%.4f,\"dense_tokens_per_s\":%.0f,\"sparse_tokens_per_s\":%.0f,"
           "\"speedup\":{\"median\":%.4f,\"q1\":%.4f,\"q3\":%.4f,\"min\":%.4f,\"max\":%.4f},\"ideal_speedup\":%.4f,"
           "\"share_of_ideal\":%s,\"ideal_ffn_only\":%.4f%s}\n",
           what, B, alpha, p->dense_tps, p->sparse_tps, p->speedup.med, p->speedup.q1, p->speedup.q3, p->speedup.lo,
           p->speedup.hi, ideal, share, ideal_ffn, extra);
    fflush(stdout);
}

/* TSA sparse inference at each α (routers forced to random hard routing),
 * then the break-even batch at the first α: the smallest batch whose sparse
 * forward is faster than the dense one in at least 3 of 4 rounds (q1 > 1). */
/* out (may be NULL): the result at alphas[0] — median, q1, q3 of the speed-up, its ideal, the α reached. */
static void run_sparse(int B, int rounds, const double *alphas, int na, int breakeven, double out[5]) {
    gl_model_config cfg = ref_config("m");
    cfg.depth_routing = DR_TSA;
    gl_model m;
    model_or_die(&m, &cfg, B);
    const int T = cfg.seq_len;
    int *tok = xmalloc((size_t)B * T * sizeof(int));
    for (int i = 0; i < B * T; i++) tok[i] = i % cfg.vocab_size;
    double *ta = xmalloc((size_t)rounds * sizeof *ta), *tb = xmalloc((size_t)rounds * sizeof *tb);
    for (int a = 0; a < na; a++) {
        model_set_route_override(&m, ROUTE_RANDOM, (float)(1.0 - alphas[a]), 99);
        paired_forwards(&m, tok, B, rounds, set_sparse, ta, tb);
        const double alpha = m.active_frac, N = (double)B * T, skipped = (1 - alpha) * (cfg.n_layer - 1) * N;
        pair_result p = pair_stats(ta, tb, rounds, B * T);
        const double ideal = ideal_speedup(&cfg, skipped, 0, N, 0);
        print_pair("tsa_sparse_inference", B, alpha, &p, ideal, ideal_speedup(&cfg, skipped, 0, N, 1), "");
        if (a == 0 && out) {
            out[0] = p.speedup.med;
            out[1] = p.speedup.q1;
            out[2] = p.speedup.q3;
            out[3] = ideal;
            out[4] = alpha;
        }
    }
    if (breakeven && na > 0) {
        model_set_route_override(&m, ROUTE_RANDOM, (float)(1.0 - alphas[0]), 99);
        int found = 0;
        for (int b = 1; b <= B && !found; b *= 2) {
            paired_forwards(&m, tok, b, rounds, set_sparse, ta, tb);
            pair_result p = pair_stats(ta, tb, rounds, b * T);
            printf("{\"variant\":\"tsa_sparse_batch\",\"batch\":%d,\"alpha\":%.4f,\"speedup\":{\"median\":%.4f,"
                   "\"q1\":%.4f,\"q3\":%.4f}}\n", b, m.active_frac, p.speedup.med, p.speedup.q1, p.speedup.q3);
            if (p.speedup.q1 > 1.0) {
                found = b;
                printf("{\"variant\":\"tsa_sparse_break_even\",\"alpha\":%.4f,\"break_even_batch\":%d}\n", m.active_frac,
                       b);
            }
        }
        if (!found) printf("{\"variant\":\"tsa_sparse_break_even\",\"alpha\":%.4f,\"break_even_batch\":null}\n", m.active_frac);
        fflush(stdout);
    }
    free(ta); free(tb); free(tok);
    model_free(&m);
}

/* The command line (parse_options). */
typedef struct {
    int rounds, warmup, B, infer_B, do_sgemm, memory, quick, n_layer;
    long eval_windows; /* --checkpoint: validation windows of the quality rows (0: all; -1: infer_B's) */
    uint64_t seed;
    const char *variants, *scale, *db_path, *tag, *checkpoint;
} options;

/* The forms a trained checkpoint is timed and evaluated in: the soft model (every block for every
 * token, the dense pass), and its sparse inference in gatelab's form and, for TSA, the paper's
 * (model.h gl_sparse_form; docs/model.md "The TSA paper's own configuration"). */
enum { FORM_DENSE = 0, FORM_GATELAB, FORM_PAPER, N_FORMS };
static const char *const form_names[N_FORMS] = {"dense", "gatelab", "paper"};

static void set_form(gl_model *m, int f) {
    m->sparse = f != FORM_DENSE;
    m->sparse_form = f == FORM_PAPER ? SPARSE_PAPER : SPARSE_GATELAB;
}

/* s as a JSON string (quotes, backslashes and control characters escaped). */
static void json_str(const char *s) {
    putchar('"');
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (*c == '"' || *c == '\\') printf("\\%c", *c);
        else if (*c < 0x20) printf("\\u%04x", *c);
        else putchar(*c);
    }
    putchar('"');
}

/* ,"key":v with v printed to the last bit (%.17g, as `gatelab eval` prints), null when not finite. */
static void json_num(const char *key, double v) {
    if (isfinite(v)) printf(",\"%s\":%.17g", key, v);
    else printf(",\"%s\":null", key);
}

/* One quality row: form f's evaluation r (text: loss and bpc; tasks: loss and the accuracies). */
static void print_quality(int f, const gl_eval_result *r, int is_text) {
    printf("{\"variant\":\"trained_sparse_quality\",\"form\":\"%s\",\"split\":\"val\",\"windows\":%ld,\"tokens\":%.0f",
           form_names[f], r->windows, r->tokens);
    json_num("loss", r->loss);
    if (is_text) json_num("bpc", eval_bpc(r));
    else {
        json_num("token_acc", r->tok_acc);
        json_num("seq_acc", r->seq_acc);
    }
    json_num("active_frac", r->active_frac);
    json_num("run_frac", r->run_frac);
    printf("}\n");
}

/* Quality of each form on the first `windows` validation windows (0: the whole split): for each sparse
 * form the evaluation `gatelab eval RUN --sparse=FORM --windows N` makes (evalrun_measure, at eval's
 * default batch), so the losses are eval's own.  loss[f] gets form f's loss.  Returns 0, or 1 with a
 * message naming the run. */
static int trained_quality(const char *dir, const char *id, long windows, int nf, double loss[N_FORMS]) {
    char err[1024];
    evalrun_result *r = malloc(sizeof *r);
    if (!r) { fprintf(stderr, "bench: --checkpoint %s: out of memory\n", dir); return 1; }
    for (int f = FORM_GATELAB; f < nf; f++) {
        evalrun_opts eo;
        evalrun_defaults(&eo);
        eo.run = (evalrun_target){id, dir, NULL, NULL};
        eo.windows = windows;
        eo.sparse = 1;
        eo.sparse_form = f == FORM_PAPER ? SPARSE_PAPER : SPARSE_GATELAB;
        if (evalrun_measure(&eo, r, err, sizeof err)) {
            fprintf(stderr, "bench: --checkpoint %s: %s\n", dir, err);
            free(r);
            return 1;
        }
        if (f == FORM_GATELAB) {
            print_quality(FORM_DENSE, &r->soft, r->is_text);
            loss[FORM_DENSE] = r->soft.loss;
        }
        /* eval_run.h: --sparse=paper's pass is r->paper_sparse (hard is gatelab's form, left unmeasured here) */
        const gl_eval_result *sp = f == FORM_PAPER ? &r->paper_sparse : &r->hard;
        if (f == FORM_PAPER && !r->have_paper_sparse) {
            fprintf(stderr, "bench: --checkpoint %s: the paper form's evaluation was not made\n", dir);
            free(r);
            return 1;
        }
        print_quality(f, sp, r->is_text);
        loss[f] = sp->loss;
    }
    fflush(stdout);
    free(r);
    return 0;
}

/* The FFN of every block replayed on the first N rows as the dense pass runs it: model.c ffn_forward's
 * kernels, parameters and buffers (each block's own h_mid in, its xn2, rstd2, f1, f3, fg, fo out: the
 * same memory traffic; the next forward writes them anew).  Its time is what the dense pass spends in
 * the work a skipped pair's FFN leaves out, at the kernels' real cost (docs/benchmarks.md). */
static void ffn_replay_run(gl_model *m, int N) {
    const gl_model_config *c = &m->cfg;
    const int d = c->d_model, F = c->d_ff;
    for (int n = 0; n < c->n_layer; n++) {
        const gl_block_params *b = &m->P.layer[n];
        gl_block_acts *a = &m->A[n];
        if (bb_gpt2(c)) layernorm_forward(a->xn2, a->rstd2, a->h_mid, b->ffn_norm, b->ffn_norm_bias, N, d, c->norm_eps);
        else rmsnorm_forward(a->xn2, a->rstd2, a->h_mid, b->ffn_norm, N, d, c->norm_eps);
        mm_forward(a->f1, a->xn2, b->w1, N, d, F);
        if (bb_gpt2(c)) {
            bias_forward(a->f1, b->b1, N, F);
            gelu_forward(a->fg, a->f1, (long)N * F);
        } else {
            mm_forward(a->f3, a->xn2, b->w3, N, d, F);
            swiglu_forward(a->fg, a->f1, a->f3, (long)N * F);
        }
        mm_forward(a->fo, a->fg, b->w2, N, F, d);
        if (bb_gpt2(c)) bias_forward(a->fo, b->b2, N, d);
    }
}

/* The timed ideal of a form that skips `skipped` (token, block) pairs of N·L: the dense pass's median time
 * t_dense less what the skipped work costs in it — each skipped FFN at its replayed time (t_ffn for all
 * L·N), and in gatelab's form (not ffn_only) the query, attention row and Wo at the FLOP rate of the
 * dense pass's other work ((FLOPs − FFN FLOPs) ÷ (t_dense − t_ffn)).  NAN when the times leave nothing
 * for the rest (noise). */
static double ideal_timed(const gl_model_config *c, double skipped, double N, double t_dense, double t_ffn,
                          int ffn_only) {
    const block_flops f = flops_of(c);
    const double L = c->n_layer, rest_t = t_dense - t_ffn;
    const double rest_flops = N * (L * (f.kv + f.q + f.o + f.attn) + f.head);
    if (!(rest_t > 0) || !(t_ffn > 0)) return NAN;
    const double saved =
        skipped * t_ffn / (L * N) + (ffn_only ? 0 : skipped * (f.q + f.o + f.attn) * rest_t / rest_flops);
    return t_dense / (t_dense - saved);
}

/* Sparse inference of a trained routed run (--checkpoint): the model as trained, its own routers,
 * either backbone and TSA form.  Quality first (trained_quality: each form's loss on the first
 * --eval-windows validation windows, eval's own numbers).  Then speed on the first windows of its
 * validation split at batch 1, 2, 4 ... infer_B: the dense (soft) forward and each sparse form timed
 * in the same rounds, one forward of each per round in an order shuffled per round (seeded), after
 * one warm-up forward of each.  Per batch and sparse form one row: the form, the batch, the α its
 * routers reach on those windows with its skipping done (the share of (token, block >= 1) pairs that
 * run: p <= 0.5 in gatelab's form, p < 0.5 in the paper's), dense and sparse tokens/s (medians), the
 * speed-up (dense ÷ sparse time in the same round: median, quartiles, extremes), the form's loss on
 * those windows (nats/token) and the FLOP ideal at that α — gatelab's skips a pair's query, attention
 * row, Wo and FFN; the paper's runs attention for every token and skips the FFN only, so its ideal
 * is the FFN-only one.  Beside it the timed ideal (ideal_timed: the FFN replayed in the same rounds,
 * ffn_time_share of the dense time) and above_flop_ideal; on the gpt2 backbone the GELU makes the FFN
 * a larger share of the time than of the FLOPs (docs/benchmarks.md).  Recorded (--db) as run
 * cost-TAG-trained-sparse: gatelab's form as sparse_speedup_bB (quartiles _q1, _q3), sparse_ideal_bB,
 * sparse_alpha_bB (the names claims.ini reads), the paper's as sparse_paper_*_bB, the dense pass as
 * dense_tokens_per_s_bB, the timed ideals as *_ideal_timed_bB, dense_ffn_time_share_bB, the losses as
 * loss_dense, loss_gatelab, loss_paper with eval_windows; tag
 * checkpoint = the run folder.  Returns 0, or 1 with a message naming the run. */
static int run_sparse_trained(const options *o, int rounds) {
    char err[512];
    int rc = 1, *tok = NULL, *tg = NULL;
    float *mask = NULL;
    double *t[N_FORMS], *t_ffn = xmalloc((size_t)rounds * sizeof(double));
    for (int f = 0; f < N_FORMS; f++) t[f] = xmalloc((size_t)rounds * sizeof(double));
    gl_run *run = calloc(1, sizeof *run);
    gl_dataset ds;
    memset(&ds, 0, sizeof ds);
    if (!run) { fprintf(stderr, "bench: out of memory opening %s\n", o->checkpoint); goto done; }
    if (run_open(run, o->checkpoint, NULL, o->infer_B, err, sizeof err)) {
        fprintf(stderr, "bench: --checkpoint %s: %s\n", o->checkpoint, err);
        goto done;
    }
    gl_model *m = &run->model;
    const gl_model_config *cfg = &m->cfg;
    if (cfg->depth_routing != DR_TSA && cfg->depth_routing != DR_MOD && cfg->depth_routing != DR_RANDOM) {
        fprintf(stderr, "bench: --checkpoint %s: depth_routing = %s has no sparse inference (tsa, mod or random)\n",
                o->checkpoint, config_depth_routing_name(cfg->depth_routing));
        goto done;
    }
    const int nf = cfg->depth_routing == DR_TSA ? N_FORMS : FORM_PAPER; /* the paper's form is TSA's */
    if (data_open_tok(&ds, &run->mf.data, cfg->seq_len, run->mf.train.seed,
                      run->st.tokenizer == TOK_BPE ? &run->st.bpe : NULL, err, sizeof err)) {
        fprintf(stderr, "bench: --checkpoint %s: %s\n", o->checkpoint, err);
        goto done;
    }
    const int T = cfg->seq_len;
    if (data_eval_windows(&ds, SPLIT_VAL) < o->infer_B) {
        fprintf(stderr, "bench: --checkpoint %s: %ld validation windows, fewer than --infer-batch %d\n", o->checkpoint,
                data_eval_windows(&ds, SPLIT_VAL), o->infer_B);
        goto done;
    }
    const long eval_windows = o->eval_windows >= 0 ? o->eval_windows : o->infer_B;
    printf("{\"variant\":\"trained_checkpoint\",\"run\":");
    json_str(run->dir);
    printf(",\"step\":%ld,\"backbone\":\"%s\",\"tsa_form\":\"%s\",\"depth_routing\":\"%s\",\"dropout\":%g,"
           "\"d_model\":%d,\"n_layer\":%d,\"seq_len\":%d,\"forms\":\"%s\",\"rounds\":%d,\"eval_windows\":%ld}\n",
           (long)run->st.step, config_backbone_name(cfg->backbone), config_tsa_form_name(cfg->tsa_form),
           config_depth_routing_name(cfg->depth_routing), (double)cfg->dropout, cfg->d_model, cfg->n_layer, T,
           nf == N_FORMS ? "dense,gatelab,paper" : "dense,gatelab", rounds, eval_windows);
    fflush(stdout);
    const char *slash = strrchr(run->dir, '/');
    double loss[N_FORMS] = {NAN, NAN, NAN};
    if (trained_quality(run->dir, slash && slash[1] ? slash + 1 : run->dir, eval_windows, nf, loss)) goto done;

    tok = xmalloc((size_t)o->infer_B * T * sizeof *tok);
    tg = xmalloc((size_t)o->infer_B * T * sizeof *tg);
    mask = xmalloc((size_t)o->infer_B * T * sizeof *mask);
    if (data_eval_batch(&ds, SPLIT_VAL, 0, o->infer_B, tok, tg, mask) != o->infer_B) {
        fprintf(stderr, "bench: --checkpoint %s: cannot read its validation windows\n", o->checkpoint);
        goto done;
    }
    static char names_buf[RECORD_MAX_METRICS][48];
    const char *names[RECORD_MAX_METRICS];
    double vals[RECORD_MAX_METRICS];
    int nv = 0;
#define PUT(value, ...)                                                                                        \
    do {                                                                                                       \
        snprintf(names_buf[nv], sizeof names_buf[nv], __VA_ARGS__);                                            \
        names[nv] = names_buf[nv];                                                                             \
        vals[nv++] = (value);                                                                                  \
    } while (0)
    for (int f = 0; f < nf; f++) PUT(loss[f], "loss_%s", form_names[f]);
    PUT((double)eval_windows, "eval_windows");
    PUT(rounds, "rounds");
    PUT((double)run->st.step, "ckpt_step");
    const int per_batch = 2 + 6 * (nf - 1);
    gl_rng order_rng;
    rng_seed(&order_rng, o->seed);
    int order[N_FORMS + 1]; /* the forms 0 .. nf-1, and nf: the FFN replay */
    for (int b = 1; b <= o->infer_B; b *= 2) {
        if (nv + per_batch > RECORD_MAX_METRICS) {
            fprintf(stderr, "bench: --checkpoint: batches above %d not measured (at most %d figures per run)\n", b / 2,
                    RECORD_MAX_METRICS);
            break;
        }
        for (int k = -1; k < rounds; k++) { /* round -1 warms up, in the plain order */
            if (k < 0) for (int i = 0; i <= nf; i++) order[i] = i;
            else shuffle(order, nf + 1, &order_rng);
            for (int i = 0; i <= nf; i++) {
                if (order[i] < nf) set_form(m, order[i]);
                double t0 = now_s();
                if (order[i] < nf) model_forward(m, tok, NULL, NULL, b, T);
                else ffn_replay_run(m, b * T);
                double dt = now_s() - t0;
                if (k >= 0) (order[i] < nf ? t[order[i]] : t_ffn)[k] = dt;
            }
        }
        const double N = (double)b * T, t_dense = stats(t[FORM_DENSE], rounds).med, dense_tps = N / t_dense;
        const double t_ffn_med = stats(t_ffn, rounds).med, ffn_share = t_ffn_med / t_dense;
        const block_flops fl = flops_of(cfg);
        const double ffn_flop_share =
            cfg->n_layer * fl.ffn / (cfg->n_layer * (fl.kv + fl.q + fl.o + fl.attn + fl.ffn) + fl.head);
        PUT(dense_tps, "dense_tokens_per_s_b%d", b);
        PUT(ffn_share, "dense_ffn_time_share_b%d", b);
        for (int f = FORM_GATELAB; f < nf; f++) {
            set_form(m, f); /* one more forward in this form: its α and loss on these b windows */
            model_forward(m, tok, tg, mask, b, T);
            const double alpha = m->active_frac, skipped = (1 - alpha) * (cfg->n_layer - 1) * N;
            pair_result p = pair_stats(t[FORM_DENSE], t[f], rounds, b * T);
            const double ideal_ffn = ideal_speedup(cfg, skipped, 0, N, 1);
            const double ideal = f == FORM_PAPER ? ideal_ffn : ideal_speedup(cfg, skipped, 0, N, 0);
            const double timed = ideal_timed(cfg, skipped, N, t_dense, t_ffn_med, f == FORM_PAPER);
            char extra[512], tshare[32] = "null", tid[32] = "null";
            if (isfinite(timed)) snprintf(tid, sizeof tid, "%.4f", timed);
            if (isfinite(timed) && timed > 1.0)
                snprintf(tshare, sizeof tshare, "%.3f", (p.speedup.med - 1) / (timed - 1));
            snprintf(extra, sizeof extra,
                     ",\"form\":\"%s\",\"loss\":%.9g,\"backbone\":\"%s\",\"tsa_form\":\"%s\",\"rounds\":%d,"
                     "\"above_flop_ideal\":%s,\"ffn_time_share\":%.4f,\"ffn_flop_share\":%.4f,"
                     "\"ideal_timed\":%s,\"share_of_timed_ideal\":%s",
                     form_names[f], (double)m->task_loss, config_backbone_name(cfg->backbone),
                     config_tsa_form_name(cfg->tsa_form), rounds, p.speedup.med > ideal ? "true" : "false",
                     ffn_share, ffn_flop_share, tid, tshare);
            print_pair("trained_sparse_inference", b, alpha, &p, ideal, ideal_ffn, extra);
            const char *pre = f == FORM_PAPER ? "sparse_paper" : "sparse";
            PUT(p.speedup.med, "%s_speedup_b%d", pre, b);
            PUT(p.speedup.q1, "%s_speedup_b%d_q1", pre, b);
            PUT(p.speedup.q3, "%s_speedup_b%d_q3", pre, b);
            PUT(ideal, "%s_ideal_b%d", pre, b);
            if (isfinite(timed)) PUT(timed, "%s_ideal_timed_b%d", pre, b);
            PUT(alpha, "%s_alpha_b%d", pre, b);
        }
        set_form(m, FORM_DENSE);
    }
#undef PUT
    rc = 0;
    if (o->db_path) {
        rc = record(o->db_path, o->tag, "trained", "sparse", cfg, 0, o->infer_B, vals, names, nv, run->dir) ? 1 : 0;
    }
done:
    for (int f = 0; f < N_FORMS; f++) free(t[f]);
    free(t_ffn);
    free(tok); free(tg); free(mask);
    data_close(&ds);
    run_close(run);
    free(run);
    return rc;
}

/* τ giving active fraction ≈ alpha on the first sequences (bisection: α grows with τ). */
static double exit_tau_for(gl_model *m, const int *tok, int B, double alpha) {
    double lo = 0.0, hi = 1.0;
    m->exit_reference = 0;
    for (int it = 0; it < 24; it++) { /* 2^-24: below the spread of the confidences */
        m->exit_tau = (float)(0.5 * (lo + hi));
        model_forward(m, tok, NULL, NULL, B, m->cfg.seq_len);
        if (m->active_frac < alpha) lo = m->exit_tau;
        else hi = m->exit_tau;
    }
    return 0.5 * (lo + hi);
}

/* Early exit at inference at each α: the bookkeeping reference (every block
 * for every token) against the skipping path (an exited token computes only
 * its k and v), batch B; the ideal counts the skipped pairs and exit heads. */
static void run_exit(int B, int rounds, const double *alphas, int na) {
    gl_model_config cfg = ref_config("m");
    cfg.depth_routing = DR_EARLY_EXIT;
    gl_model m;
    model_or_die(&m, &cfg, B);
    const int T = cfg.seq_len, L = cfg.n_layer, N = B * T;
    int *tok = xmalloc((size_t)N * sizeof(int));
    gl_rng r;
    rng_seed(&r, 5);
    for (int i = 0; i < N; i++) tok[i] = (int)rng_below(&r, cfg.vocab_size);
    double *ta = xmalloc((size_t)rounds * sizeof *ta), *tb = xmalloc((size_t)rounds * sizeof *tb);
    for (int a = 0; a < na; a++) {
        double tau = exit_tau_for(&m, tok, B < 16 ? B : 16, alphas[a]);
        m.exit_tau = (float)tau;
        paired_forwards(&m, tok, B, rounds, set_exit_skip, ta, tb);
        long frozen_end = 0; /* tokens exited before the last block: they skip it but have no exit head there */
        for (int t = 0; t < N; t++) frozen_end += m.frozen[t];
        const double alpha = m.active_frac, skipped = (1 - alpha) * (L - 1) * (double)N;
        pair_result p = pair_stats(ta, tb, rounds, N);
        char extra[64];
        snprintf(extra, sizeof extra, ",\"tau\":%.6g", tau);
        print_pair("early_exit_inference", B, alpha, &p, ideal_speedup(&cfg, skipped, skipped - frozen_end, N, 0),
                   ideal_speedup(&cfg, skipped, 0, N, 1), extra);
    }
    m.exit_tau = 0.0f;
    free(ta); free(tb); free(tok);
    model_free(&m);
}

/* --------------------------------------------------------------------------
 * command line                                                              */

static void usage(FILE *f) {
    fprintf(f,
            "usage: bench_gatelab [options]\n"
            "  --steps N      timed rounds per variant (default 10; --quick: 3)\n"
            "  --warmup N     warm-up steps per variant, the same for every variant (default 2; --quick: 1)\n"
            "  --batch B      training batch (default 32)\n"
            "  --infer-batch B  batch of the inference figures (default 64)\n"
            "  --scale s|m    model scale (default m)\n"
            "  --n-layer N    blocks of the training variants (default 6: the scale's)\n"
            "  --checkpoint RUN  sparse inference of a trained TSA / MoD / random-routing run (its folder),\n"
            "                 either backbone and TSA form: each form's loss on its first --eval-windows\n"
            "                 validation windows (gatelab eval's numbers), then its own routers on its\n"
            "                 validation windows at batch 1, 2, 4 ... --infer-batch, the dense (soft) pass\n"
            "                 and both sparse forms (gatelab's full skip; TSA: also the paper's) timed in\n"
            "                 the same shuffled rounds, beside the FLOP ideal at the α each reached\n"
            "                 (recorded as run cost-TAG-trained-sparse)\n"
            "  --eval-windows N  --checkpoint's quality rows: the first N validation windows (default:\n"
            "                 --infer-batch's value, the windows timed; 0: the whole split)\n"
            "  --variants L   comma list: base, a value_residual, depth_routing or cross_layer name\n"
            "                 (resformer satformer tsa early_exit mod random denseformer hyper mudd ...),\n"
            "                 tsa_paper (TSA in the paper's form: model.tsa_form paper, router bias -1),\n"
            "                 gpt2 (the TSA paper's GPT-2 backbone, dropout 0.1: its family's baseline),\n"
            "                 gpt2_nodrop (the same, dropout 0), gpt2+NAME (NAME on the gpt2 backbone,\n"
            "                 dropout 0.1, e.g. gpt2+tsa_paper); step ratios are to base, gpt2's to gpt2,\n"
            "                 SATFormer's knobs satformer_softmax (sat_gate softmax), satformer_bias\n"
            "                 (sat_gate_bias 1), satformer_decay_all (train.weight_decay_policy all), sparse\n"
            "                 (TSA sparse inference and break-even batch), exit (early-exit inference)\n"
            "                 (default base,resformer,satformer,tsa,mod,random,sparse,exit)\n"
            "  --memory       one training variant: peak RSS of a step beside the analytic size\n"
            "  --no-sgemm     skip the sgemm measurement and its buffers\n"
            "  --seed N       seed of the round order (default 1)\n"
            "  --quick        3 rounds, 1 warm-up, no break-even sweep\n"
            "  --db PATH --tag TAG   record training variants as experiment cost-TAG\n"
            "  --help         this text\n");
}

static int int_flag(const char *name, const char *arg, int lo, int hi, int *out) {
    char why[128];
    if (parse_int(arg, lo, hi, out, why, sizeof why)) {
        fprintf(stderr, "bench: --%s %s: %s\n", name, arg, why);
        return -1;
    }
    return 0;
}

static int parse_options(int argc, char **argv, options *o) {
    static const struct option longopts[] = {
        {"steps", required_argument, 0, 's'}, {"warmup", required_argument, 0, 'w'},
        {"batch", required_argument, 0, 'b'}, {"scale", required_argument, 0, 'c'},
        {"variants", required_argument, 0, 'v'}, {"db", required_argument, 0, 'd'},
        {"tag", required_argument, 0, 't'}, {"seed", required_argument, 0, 'e'},
        {"no-sgemm", no_argument, 0, 'n'}, {"memory", no_argument, 0, 'm'},
        {"infer-batch", required_argument, 0, 'i'}, {"quick", no_argument, 0, 'q'}, {"help", no_argument, 0, 'h'},
        {"n-layer", required_argument, 0, 'L'}, {"checkpoint", required_argument, 0, 'k'},
        {"eval-windows", required_argument, 0, 'W'}, {0, 0, 0, 0}};
    *o = (options){.rounds = -1, .warmup = -1, .B = 32, .infer_B = 64, .do_sgemm = 1, .seed = 1, .eval_windows = -1,
                   .variants = "base,resformer,satformer,tsa,mod,random,sparse,exit", .scale = "m"};
    int ch, seed, ew;
    while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (ch) {
        case 's': if (int_flag("steps", optarg, 1, 100000, &o->rounds)) return 2; break;
        case 'w': if (int_flag("warmup", optarg, 0, 100000, &o->warmup)) return 2; break;
        case 'b': if (int_flag("batch", optarg, 1, 4096, &o->B)) return 2; break;
        case 'i': if (int_flag("infer-batch", optarg, 1, 4096, &o->infer_B)) return 2; break;
        case 'e': if (int_flag("seed", optarg, 0, 1 << 30, &seed)) return 2; o->seed = (uint64_t)seed; break;
        case 'c': o->scale = optarg; break;
        case 'v': o->variants = optarg; break;
        case 'd': o->db_path = optarg; break;
        case 't': o->tag = optarg; break;
        case 'n': o->do_sgemm = 0; break;
        case 'm': o->memory = 1; break;
        case 'q': o->quick = 1; break;
        case 'L': if (int_flag("n-layer", optarg, 2, 64, &o->n_layer)) return 2; break;
        case 'k': o->checkpoint = optarg; break;
        case 'W': if (int_flag("eval-windows", optarg, 0, 1 << 30, &ew)) return 2; o->eval_windows = ew; break;
        case 'h': usage(stdout); exit(0);
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "bench: unexpected argument %s (see --help)\n", argv[optind]);
        return 2;
    }
    if (o->rounds < 0) o->rounds = o->quick ? 3 : 10;
    if (o->warmup < 0) o->warmup = o->quick ? 1 : 2;
    if (strcmp(o->scale, "s") && strcmp(o->scale, "m")) {
        fprintf(stderr, "bench: --scale must be s or m (got %s)\n", o->scale);
        return 2;
    }
    if (!o->db_path != !o->tag) {
        fprintf(stderr, "bench: --db and --tag go together\n");
        return 2;
    }
    return 0;
}

/* Peak RSS of a training step (after warm-up and one more step) beside the
 * analytic size; one variant per process, so the peak is its own. */
static int memory_check(const char *name, const gl_model_config *c, const train_setup *ts) {
    if (c->cross_layer != CL_NONE) {
        fprintf(stderr, "bench: --memory covers the backbone, value residuals and depth routing; %s has cross-layer "
                        "buffers the analytic formula does not count\n", name);
        return 2;
    }
    if (bb_gpt2(c) || c->dropout > 0.0f) {
        fprintf(stderr, "bench: --memory's analytic formula is the llama block's; %s (backbone %s, dropout %g) has "
                        "biases, positions and dropout buffers it does not count\n",
                name, config_backbone_name(c->backbone), (double)c->dropout);
        return 2;
    }
    gl_model m;
    model_or_die(&m, c, ts->B);
    for (int s = 0; s <= ts->warmup; s++) train_step(&m, 0, ts, s); /* the decay policy does not change memory */
    double parts[4], total = analytic_bytes(&m, ts->B, parts), rss = peak_rss_mib(), mib = 1024.0 * 1024.0;
    printf("{\"variant\":\"memory\",\"model\":\"%s\",\"batch\":%d,\"peak_rss_mib\":%.0f,\"analytic_mib\":%.1f,"
           "\"params_grads_adamw_mib\":%.1f,\"saved_activations_mib\":%.1f,\"workspace_mib\":%.1f,\"inputs_mib\":%.1f,"
           "\"ratio\":%.3f}\n",
           name, ts->B, rss, total / mib, parts[0] / mib, parts[1] / mib, parts[2] / mib, parts[3] / mib,
           rss * mib / total);
    model_free(&m);
    return 0;
}

/* SATFormer's knobs (docs/model.md "SATFormer gate functions"; train.weight_decay_policy) as
 * training variants of their own, so the cost table has a row for each. */
static const struct {
    const char *name;
    gl_sat_gate gate;
    int bias, decay_all;
} sat_knob_variants[] = {
    {"satformer_softmax", SG_SOFTMAX, 0, 0},
    {"satformer_bias", SG_RELU, 1, 0},
    {"satformer_decay_all", SG_RELU, 0, 1},
};

/* Parse one training variant name into a config (and its decay policy); -1 if unknown.  v may name
 * the gpt2 backbone (gpt2, gpt2_nodrop, gpt2+NAME): *family is then "gpt2", the variant its step
 * ratio is taken to, else "base"; *less_work is 1 for gpt2_nodrop, which does less than gpt2. */
static int variant_config(const char *v, const gl_model_config *base, gl_model_config *c, int *decay_all,
                          const char **family, int *less_work) {
    *c = *base;
    *decay_all = 0;
    *family = "base";
    *less_work = 0;
    if (!strncmp(v, "gpt2", 4) && (!v[4] || v[4] == '+' || !strcmp(v + 4, "_nodrop"))) {
        gl_model_config g = *base;
        gpt2_config(&g);
        const int plus = v[4] == '+';
        const char *inner = plus ? v + 5 : "base", *fam;
        int lw;
        if (plus && (!*inner || !strncmp(inner, "gpt2", 4) || !strcmp(inner, "base") || !strcmp(inner, "none")))
            return fprintf(stderr, "bench: variant %s: gpt2+NAME takes one llama variant name (gpt2+tsa_paper)\n",
                           v), -1;
        if (variant_config(inner, &g, c, decay_all, &fam, &lw)) return -1;
        if (!strcmp(v + 4, "_nodrop")) c->dropout = 0.0f;
        *family = "gpt2";
        *less_work = !strcmp(v + 4, "_nodrop");
        char err[256];
        if (config_validate(c, err, sizeof err))
            return fprintf(stderr, "bench: variant %s: %s\n", v, err), -1;
        return 0;
    }
    if (!strcmp(v, "base") || !strcmp(v, "none")) return 0;
    if (!strcmp(v, "tsa_paper")) { /* the paper's router and sequential gates (docs/model.md) */
        c->depth_routing = DR_TSA;
        c->tsa_form = TF_PAPER;
        c->router_init_bias = -1.0f;
        return 0;
    }
    for (size_t k = 0; k < sizeof sat_knob_variants / sizeof sat_knob_variants[0]; k++)
        if (!strcmp(v, sat_knob_variants[k].name)) {
            c->value_residual = VR_SATFORMER;
            c->sat_gate = sat_knob_variants[k].gate;
            c->sat_gate_bias = sat_knob_variants[k].bias;
            *decay_all = sat_knob_variants[k].decay_all;
            return 0;
        }
    if (!config_parse_value_residual(v, &c->value_residual) || !config_parse_depth_routing(v, &c->depth_routing) ||
        !config_parse_cross_layer(v, &c->cross_layer))
        return 0;
    fprintf(stderr, "bench: unknown variant %s (base, sparse, exit, satformer_softmax, satformer_bias, "
                    "satformer_decay_all, tsa_paper, gpt2, gpt2_nodrop, gpt2+NAME, or a value_residual, "
                    "depth_routing or cross_layer name)\n", v);
    return -1;
}

/* v's baseline in this run: the variant named by its family (base, also written none; gpt2), or NULL. */
static const variant *family_base(const variant *v, int nv, const variant *x) {
    for (int i = 0; i < nv; i++)
        if (!strcmp(v[i].name, x->family) || (!strcmp(x->family, "base") && !strcmp(v[i].name, "none"))) return &v[i];
    return NULL;
}

/* The header line: the OpenBLAS core, threads, rounds and sgemm's GFLOP/s (median, min, max; null when
 * not measured: JSON has no NaN). */
static void print_header(const options *o, const double *rate) {
    char sgs[160] = "null";
    if (rate) {
        const spread s = stats(rate, o->rounds);
        snprintf(sgs, sizeof sgs, "%.1f,\"sgemm_gflops_min\":%.1f,\"sgemm_gflops_max\":%.1f", s.med, s.lo, s.hi);
    }
    const char *env_core = getenv("OPENBLAS_CORETYPE");
    printf("{\"openblas_core\":\"%s\",\"OPENBLAS_CORETYPE\":\"%s\",\"threads\":%d,\"rounds\":%d,\"warmup\":%d,"
           "\"sgemm_gflops\":%s}\n",
           openblas_get_corename(), env_core ? env_core : "(unset)", omp_get_max_threads(), o->rounds, o->warmup, sgs);
    fflush(stdout);
}

/* The training variants' rounds, sgemm's interleaved with them; prints the header, then a line per variant. */
static int run_training(variant *v, int nv, const train_setup *ts, const options *o, const gl_model_config *base_cfg) {
    for (int i = 0; i < nv; i++) {
        model_or_die(&v[i].m, &v[i].cfg, ts->B);
        v[i].step = xmalloc((size_t)ts->rounds * sizeof(double));
        v[i].fwd = xmalloc((size_t)ts->rounds * sizeof(double));
    }
    sgemm_bench sb;
    double *rate = NULL;
    if (o->do_sgemm) {
        sgemm_setup(&sb, base_cfg, ts->B);
        rate = xmalloc((size_t)ts->rounds * sizeof *rate);
    }
    run_rounds(v, nv, ts, rate ? &sb : NULL, rate);
    if (rate) sgemm_free(&sb);
    print_header(o, rate);
    int rc = 0;
    for (int i = 0; i < nv; i++) {
        const variant *base = family_base(v, nv, &v[i]);
        print_variant(&v[i], base, ts, rate);
        if (o->db_path && !rc) {
            const int N = ts->B * v[i].cfg.seq_len;
            const double st = stats(v[i].step, ts->rounds).med, fw = stats(v[i].fwd, ts->rounds).med;
            spread ra = paired_ratio(&v[i], base, ts->rounds);
            const char *names[] = {"train_tokens_per_s", "fwd_tokens_per_s", "step_ms", "peak_rss_mib", "model_gflops",
                                   "rounds", "step_ratio", "step_ratio_q1", "step_ratio_q3"};
            const double vals[] = {N / st, N / fw, st * 1e3, peak_rss_mib(),
                                   model_train_flops_per_token(&v[i].m) * N / st / 1e9, ts->rounds, ra.med, ra.q1, ra.q3};
            rc = record(o->db_path, o->tag, o->scale, v[i].name, &v[i].cfg, v[i].decay_all, ts->B, vals, names,
                        base ? 9 : 6, NULL);
        }
    }
    if (nv == 1 && !o->do_sgemm) printf("{\"variant\":\"%s\",\"peak_rss_mib\":%.0f}\n", v[0].name, peak_rss_mib());
    free(rate);
    for (int i = 0; i < nv; i++) {
        model_free(&v[i].m);
        free(v[i].step);
        free(v[i].fwd);
    }
    return rc;
}

int main(int argc, char **argv) {
    options o;
    int rc = parse_options(argc, argv, &o);
    if (rc) return rc;
#ifdef GATELAB_HEAD
    db_set_build(GATELAB_HEAD, GATELAB_DIRTY); /* the Makefile's: each cost run records what measured it */
#endif
    gl_model_config base = ref_config(o.scale);
    if (o.n_layer) base.n_layer = o.n_layer;
    variant v[MAX_VARIANTS];
    int nv = 0, sparse = 0, ee = 0;
    char list[512];
    snprintf(list, sizeof list, "%s", o.variants);
    for (char *name = strtok(list, ","); name; name = strtok(NULL, ",")) {
        if (!strcmp(name, "sparse")) sparse = 1;
        else if (!strcmp(name, "exit")) ee = 1;
        else if (nv == MAX_VARIANTS) return fprintf(stderr, "bench: at most %d training variants\n", MAX_VARIANTS), 2;
        else if (variant_config(name, &base, &v[nv].cfg, &v[nv].decay_all, &v[nv].family, &v[nv].less_work)) return 2;
        else v[nv++].name = name;
    }
    const int T = base.seq_len, N = o.B * T;
    train_setup ts = {o.B, o.warmup, o.rounds, o.seed, xmalloc((size_t)N * sizeof(int)), xmalloc((size_t)N * sizeof(int))};
    gl_rng r;
    rng_seed(&r, 3);
    for (int i = 0; i < N; i++) {
        ts.tok[i] = (int)rng_below(&r, base.vocab_size);
        ts.tg[i] = (int)rng_below(&r, base.vocab_size);
    }
    if (o.memory) {
        if (nv != 1 || sparse || ee) return fprintf(stderr, "bench: --memory takes exactly one training variant\n"), 2;
        return memory_check(v[0].name, &v[0].cfg, &ts);
    }
    if (nv > 0) rc = run_training(v, nv, &ts, &o, &base);
    else if (o.do_sgemm) { /* no training variant: sgemm's rounds alone */
        sgemm_bench sb;
        sgemm_setup(&sb, &base, o.B);
        double *rate = xmalloc((size_t)o.rounds * sizeof *rate);
        sgemm_round(&sb); /* warm-up */
        for (int k = 0; k < o.rounds; k++) rate[k] = sgemm_round(&sb);
        print_header(&o, rate);
        sgemm_free(&sb);
        free(rate);
    } else
        print_header(&o, NULL);
    const double alphas[] = {0.73, 0.5};
    const int inf_rounds = o.rounds < 6 ? o.rounds : 6;
    if (sparse) {
        double sp[5] = {NAN, NAN, NAN, NAN, NAN};
        run_sparse(o.infer_B, inf_rounds, alphas, 2, !o.quick, sp);
        if (o.db_path && !rc) { /* run cost-TAG-SCALE-sparse (the model is the reference config, scale m) */
            gl_model_config c = ref_config("m");
            c.depth_routing = DR_TSA;
            const char *names[] = {"sparse_speedup_a073", "sparse_speedup_a073_q1", "sparse_speedup_a073_q3",
                                   "sparse_ideal_a073", "sparse_alpha", "rounds", "batch"};
            const double vals[] = {sp[0], sp[1], sp[2], sp[3], sp[4], inf_rounds, o.infer_B};
            rc = record(o.db_path, o.tag, o.scale, "sparse", &c, 0, o.infer_B, vals, names, 7, NULL);
        }
    }
    if (ee) run_exit(o.infer_B, inf_rounds, alphas, 2);
    if (o.checkpoint && !rc) rc = run_sparse_trained(&o, o.rounds);
    free(ts.tok);
    free(ts.tg);
    return rc ? 1 : 0;
}
