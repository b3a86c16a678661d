/*
 * evaluate.c — evaluation passes: mean cross-entropy (nats/token), token and
 * sequence accuracy, and the active fraction of routed or exiting models,
 * accumulated over windows in the model's batch size.  Whatever inference
 * mode the model is set to (m->sparse, m->exit_tau, overrides) applies.
 *
 * The standard error of the loss treats each batch of windows as a cluster
 * (tokens inside a window are not independent; windows far apart nearly are).
 * A batch b gives y_b, the sum of its scored tokens' losses, and w_b, their
 * weight; the loss is the ratio mean R = Σ y_b / Σ w_b, and its standard
 * error the cluster-robust one (eval_cluster_se, evaluate.h):
 *     SE² = G/(G−1) · Σ_b (y_b − R·w_b)² / (Σ_b w_b)².
 * It is the sandwich variance of a weighted least-squares fit of the
 * per-token loss on a constant, clustered by batch, with the small-sample
 * factor G/(G−1) (CR1: Cameron & Miller 2015, "A Practitioner's Guide to
 * Cluster-Robust Inference", J. Human Resources 50(2)), which is
 * also the linearised variance of a ratio estimate (Cochran 1977, Sampling
 * Techniques, ch. 6); for a paired difference of two evaluations of the same
 * windows y_b is the difference of their batch sums.
 *
 * eval_each_batch is the one loop over evaluation windows (read a batch, a
 * hook before the forward, the forward, a hook after): eval_split,
 * analysis/measure/ablate.c's ablate_evaluate and analysis/measure/attrib.c's gradient pass
 * run on it.  eval_cluster_add / eval_cluster_se are the one cluster
 * arithmetic: eval_split and eval_ids keep one cluster per batch, ablate
 * folds batches into ABLATE_CLUSTERS clusters so that two evaluations pair
 * cluster by cluster (ablate_paired_se).  They live here, next to the loop
 * whose batches are the clusters, and not in analysis/core/stats.c (the analyses'
 * statistics kernel) because harness/run/ never calls analysis/ and the
 * training loop's validation passes need them; stats.c's st_cluster_se is
 * this kernel on observations labelled by cluster.
 */
#include "evaluate.h"
#include "timing.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    double loss_sum, scored, tok_right, seq_right, active_sum, active_w;
    double paper_sum, paper_w; /* early exit: active_frac_paper by windows, over the batches that have it */
    double run_pairs, all_pairs, p_mid, p_all; /* rows really run / (token, block >= 1) pairs; p in (0.3, 0.7) / p's */
    double *clu_y, *clu_w; /* (n_clu) per batch: its loss sum x·w (x the batch mean, w its tokens) and w */
    int n_clu;
    long windows, batches;
} accum;

/* The sums of one batch the model has just run forward on. */
static void add_batch(const gl_model *m, const int *tok, const int *tg, const float *mask, int B, accum *a) {
    const int T = m->T, V = m->cfg.vocab_size;
    double tacc = 0, sacc = 0;
    data_accuracy(m->logits, tg, mask, B, T, V, &tacc, &sacc);
    const double x = m->task_loss, w = m->mask_sum;
    a->loss_sum += x * w;
    a->scored += w;
    eval_cluster_add(a->clu_y, a->clu_w, a->n_clu, a->batches, x * w, w);
    a->batches++;
    a->tok_right += tacc * m->mask_sum;
    a->seq_right += sacc * B;
    a->active_sum += (double)m->active_frac * B;
    a->active_w += B;
    if (!isnan(m->active_frac_paper)) {
        a->paper_sum += (double)m->active_frac_paper * B;
        a->paper_w += B;
    }
    a->windows += B;
    const int L = m->cfg.n_layer, N = B * T;
    a->run_pairs += (double)m->active_count;
    a->all_pairs += (double)(L - 1) * N;
    if (m->cfg.depth_routing == DR_TSA)
        for (int n = 1; n < L; n++)
            for (int t = 0; t < N; t++) {
                const float p = m->A[n].p[t];
                a->p_mid += p > 0.3f && p < 0.7f;
                a->p_all += 1;
            }
}

double eval_bpc(const gl_eval_result *r) { return r->loss / log(2.0) / r->bytes_per_token; }
double eval_bpc_se(const gl_eval_result *r) { return r->loss_se / log(2.0) / r->bytes_per_token; }

void eval_cluster_add(double *y, double *w, int n, long batch, double loss_sum, double scored) {
    assert(y && w && n > 0 && batch >= 0);
    const int k = (int)(batch % n);
    y[k] += loss_sum;
    w[k] += scored;
}

double eval_cluster_se(const double *y, const double *yb, const double *w, int n) {
    assert(y && w && n >= 0);
    double W = 0.0, D = 0.0; /* Σ w, Σ (y − yb) over the clusters holding tokens, in cluster order */
    int g = 0;
    for (int k = 0; k < n; k++) {
        if (w[k] <= 0) continue;
        W += w[k];
        D += y[k] - (yb ? yb[k] : 0.0);
        g++;
    }
    if (g < 2 || W <= 0) return NAN;
    const double R = D / W;
    double ss = 0.0; /* Σ (y − yb − R·w)²: two passes, no cancellation of large sums */
    for (int k = 0; k < n; k++) {
        if (w[k] <= 0) continue;
        const double d = y[k] - (yb ? yb[k] : 0.0) - R * w[k];
        ss += d * d;
    }
    return sqrt((double)g / (g - 1.0) * ss) / W;
}

/* Room for one cluster per batch of a pass over n windows in batches of max_B; 0 or -1 (out of memory). */
static int accum_init(accum *a, long n, int max_B) {
    memset(a, 0, sizeof *a);
    a->n_clu = (int)((n + max_B - 1) / max_B);
    a->clu_y = calloc((size_t)2 * a->n_clu, sizeof(double));
    a->clu_w = a->clu_y ? a->clu_y + a->n_clu : NULL;
    return a->clu_y ? 0 : -1;
}

/* 1 when the model's current mode skips rows for real (and counts them in m->active_count). */
static int infer_mode(const gl_model *m) {
    const gl_model_config *c = &m->cfg;
    return (c->depth_routing == DR_TSA && m->sparse) || (c->depth_routing == DR_EARLY_EXIT && m->exit_tau > 0.0f) ||
           (c->depth_routing == DR_NONE && m->posthoc_exit);
}

static void finish(const accum *a, gl_eval_result *r, double t0, int infer) {
    r->loss = a->scored > 0 ? a->loss_sum / a->scored : 0.0;
    int scoring = 0; /* batches with scored tokens: the clusters */
    for (int b = 0; b < a->n_clu; b++) scoring += a->clu_w[b] > 0;
    r->loss_se = scoring > 1 ? eval_cluster_se(a->clu_y, NULL, a->clu_w, a->n_clu) : 0.0;
    r->tokens = a->scored;
    r->tok_acc = a->scored > 0 ? a->tok_right / a->scored : 0.0;
    r->seq_acc = a->windows > 0 ? a->seq_right / a->windows : 0.0;
    r->active_frac = a->active_w > 0 ? a->active_sum / a->active_w : 1.0;
    r->active_frac_paper = a->paper_w > 0 ? a->paper_sum / a->paper_w : NAN;
    r->windows = a->windows;
    r->seconds = timing_now_s() - t0;
    r->bytes_per_token = 1.0;
    r->run_frac = !infer ? NAN : a->all_pairs > 0 ? a->run_pairs / a->all_pairs : 1.0;
    r->p_mid_share = a->p_all > 0 ? a->p_mid / a->p_all : NAN;
}

int eval_each_batch(gl_model *m, const gl_dataset *ds, gl_split split, long first, long n, int strict,
                    const eval_buffers *buf, eval_batch_fn before, eval_batch_fn after, void *ctx, char *err,
                    size_t errlen) {
    for (long w = first; w < first + n; w += m->max_B) {
        const int want = (int)(first + n - w < m->max_B ? first + n - w : m->max_B);
        const int got = data_eval_batch(ds, split, w, want, buf->tok, buf->tg, buf->mask);
        if (strict && got < want) {
            snprintf(err, errlen, "the %s split has no window %ld (it has %ld)", data_split_name(split), w + got,
                     data_eval_windows(ds, split));
            return -1;
        }
        if (got <= 0) break;
        if (before && before(ctx, w - first, got, err, errlen)) return -1;
        model_forward(m, buf->tok, buf->tg, buf->mask, got, m->T);
        if (after && after(ctx, w - first, got, err, errlen)) return -1;
    }
    return 0;
}

typedef struct {
    const gl_model *m;
    const gl_dataset *ds;
    eval_buffers buf;
    accum a;
    double bytes, scored; /* BPE: the bytes the scored targets cover, and those targets */
} split_ctx;

static int split_after(void *ctx, long off, int got, char *err, size_t errlen) {
    split_ctx *c = ctx;
    add_batch(c->m, c->buf.tok, c->buf.tg, c->buf.mask, got, &c->a);
    for (size_t i = 0; c->ds->tok && i < (size_t)got * c->m->T; i++) {
        if (!(c->buf.mask[i] > 0.0f)) continue;
        size_t len;
        data_token(c->ds, c->buf.tg[i], &len);
        c->bytes += (double)len;
        c->scored += 1.0;
    }
    return 0;
}

/* A split pass's buffers (one batch of max_B windows) and accumulator for n_windows windows: 0, or -1
 * with a message (nothing left allocated). */
static int split_begin(split_ctx *sc, gl_model *m, const gl_dataset *ds, long n_windows, char *err, size_t errlen) {
    const size_t cap = (size_t)m->max_B * m->T;
    *sc = (split_ctx){.m = m, .ds = ds};
    sc->buf.tok = malloc(cap * sizeof *sc->buf.tok);
    sc->buf.tg = malloc(cap * sizeof *sc->buf.tg);
    sc->buf.mask = malloc(cap * sizeof *sc->buf.mask);
    if (accum_init(&sc->a, n_windows, m->max_B) || !sc->buf.tok || !sc->buf.tg || !sc->buf.mask) {
        free(sc->buf.tok), free(sc->buf.tg), free(sc->buf.mask), free(sc->a.clu_y);
        snprintf(err, errlen, "evaluation: out of memory");
        return -1;
    }
    return 0;
}

/* The pass's result into r (t0: when it began), and its buffers freed. */
static void split_end(split_ctx *sc, gl_eval_result *r, double t0) {
    finish(&sc->a, r, t0, infer_mode(sc->m));
    if (sc->ds->tok && sc->scored > 0) r->bytes_per_token = sc->bytes / sc->scored;
    free(sc->buf.tok), free(sc->buf.tg), free(sc->buf.mask), free(sc->a.clu_y);
}

int eval_split(gl_model *m, const gl_dataset *ds, gl_split split, long n_windows, gl_eval_result *r,
               char *err, size_t errlen) {
    memset(r, 0, sizeof *r);
    long avail = data_eval_windows(ds, split);
    if (avail <= 0) {
        snprintf(err, errlen, "the %s split has no complete window of %d tokens", data_split_name(split), m->T);
        return -1;
    }
    if (n_windows <= 0 || n_windows > avail) n_windows = avail;
    split_ctx sc;
    if (split_begin(&sc, m, ds, n_windows, err, errlen)) return -1;
    double t0 = timing_now_s();
    eval_each_batch(m, ds, split, 0, n_windows, 0, &sc.buf, NULL, split_after, &sc, err, errlen); /* cannot fail */
    split_end(&sc, r, t0);
    return 0;
}

int eval_random(gl_model *m, const gl_dataset *ds, gl_split split, long n_windows, uint64_t key, gl_eval_result *r,
                char *err, size_t errlen) {
    memset(r, 0, sizeof *r);
    if (data_random_starts(ds, split) <= 0) {
        snprintf(err, errlen, "the %s split has no window of %d + 1 tokens to draw at random", data_split_name(split),
                 m->T);
        return -1;
    }
    if (n_windows < 1) n_windows = 1;
    split_ctx sc;
    if (split_begin(&sc, m, ds, n_windows, err, errlen)) return -1;
    gl_rng rng;
    rng_seed(&rng, key);
    double t0 = timing_now_s();
    for (long w = 0; w < n_windows; w += m->max_B) {
        const int got = (int)(n_windows - w < m->max_B ? n_windows - w : m->max_B);
        /* window i: the i-th draw, whatever max_B */
        data_random_batch(ds, split, &rng, got, sc.buf.tok, sc.buf.tg, sc.buf.mask);
        model_forward(m, sc.buf.tok, sc.buf.tg, sc.buf.mask, got, m->T);
        split_after(&sc, w, got, err, errlen);
    }
    split_end(&sc, r, t0);
    return 0;
}

int eval_ids(gl_model *m, const int *ids, size_t n_ids, long n_windows, gl_eval_result *r,
             char *err, size_t errlen) {
    memset(r, 0, sizeof *r);
    const int T = m->T;
    long avail = n_ids > (size_t)T ? (long)((n_ids - 1) / T) : 0;
    if (avail <= 0) {
        snprintf(err, errlen, "the text has %zu tokens: fewer than one window of %d + 1", n_ids, T);
        return -1;
    }
    if (n_windows <= 0 || n_windows > avail) n_windows = avail;
    const size_t cap = (size_t)m->max_B * T;
    int *tg = malloc(cap * sizeof *tg);
    float *mask = malloc(cap * sizeof *mask);
    accum a;
    if (accum_init(&a, n_windows, m->max_B) || !tg || !mask) {
        free(tg); free(mask); free(a.clu_y);
        snprintf(err, errlen, "evaluation: out of memory");
        return -1;
    }
    for (size_t i = 0; i < cap; i++) mask[i] = 1.0f;
    double t0 = timing_now_s();
    for (long w = 0; w < n_windows; w += m->max_B) {
        int B = (int)(n_windows - w < m->max_B ? n_windows - w : m->max_B);
        const int *tok = ids + (size_t)w * T; /* windows are consecutive: B windows = B·T ids */
        for (size_t i = 0; i < (size_t)B * T; i++) tg[i] = ids[(size_t)w * T + i + 1];
        model_forward(m, tok, tg, mask, B, T);
        add_batch(m, tok, tg, mask, B, &a);
    }
    finish(&a, r, t0, infer_mode(m));
    free(tg); free(mask); free(a.clu_y);
    return 0;
}

int eval_match_alpha(gl_model *m, const gl_dataset *ds, gl_split split, long n_windows, double target,
                     double tol, double *tau, gl_eval_result *r, char *err, size_t errlen) {
    /* α is non-decreasing in τ (a higher bar lets fewer tokens exit early) */
    double lo = 0.0, hi = 1.0 + 1e-6, best_gap = INFINITY;
    gl_eval_result cur;
    int rc = 1;
    for (int it = 0; it < 40; it++) {
        double mid = 0.5 * (lo + hi);
        m->exit_tau = (float)mid;
        if (eval_split(m, ds, split, n_windows, &cur, err, errlen)) {
            rc = -1;
            break;
        }
        double gap = fabs(cur.active_frac - target);
        if (gap < best_gap) {
            best_gap = gap;
            *r = cur;
            *tau = mid;
        }
        if (gap <= tol) {
            rc = 0;
            break;
        }
        if (cur.active_frac > target) hi = mid;
        else lo = mid;
    }
    m->exit_tau = 0.0f;
    return rc;
}

const double eval_paper_taus[EVAL_PAPER_N_TAUS] = {0.99, 0.95, 0.90, 0.85, 0.80, 0.75, 0.70,
                                                    0.65, 0.60, 0.55, 0.50, 0.40, 0.30};

int eval_match_paper(gl_model *m, const gl_dataset *ds, gl_split split, int batch, double target, uint64_t key,
                     gl_eval_result rows[EVAL_PAPER_N_TAUS], int *best, char *err, size_t errlen) {
    if (m->cfg.depth_routing != DR_EARLY_EXIT) {
        snprintf(err, errlen, "the paper's τ protocol needs an early-exit model; this one has depth_routing = %s",
                 config_depth_routing_name(m->cfg.depth_routing));
        return -1;
    }
    assert(batch >= 1);
    *best = -1;
    double best_gap = INFINITY;
    int rc = 0;
    for (int i = 0; i < EVAL_PAPER_N_TAUS && !rc; i++) {
        m->exit_tau = (float)eval_paper_taus[i];
        rc = eval_random(m, ds, split, (long)EVAL_PAPER_BATCHES * batch, rng_splitmix_at(key, (uint64_t)(i + 1)),
                         &rows[i], err, errlen);
        const double gap = fabs(rows[i].active_frac_paper - target);
        if (!rc && gap < best_gap) {
            best_gap = gap;
            *best = i;
        }
    }
    m->exit_tau = 0.0f;
    return rc;
}

double eval_alpha_paper(double alpha, int n_layer) {
    return n_layer > 0 ? (1.0 + (n_layer - 1) * alpha) / n_layer : NAN;
}

int eval_has_hard(const gl_model *m) {
    return m->cfg.depth_routing == DR_TSA || m->cfg.depth_routing == DR_EARLY_EXIT;
}

int eval_split_hard(gl_model *m, const gl_dataset *ds, gl_split split, long n_windows, gl_eval_result *r, char *err,
                    size_t errlen) {
    if (!eval_has_hard(m)) {
        snprintf(err, errlen, "a hard evaluation needs depth routing (tsa or early_exit); this model has "
                              "depth_routing = %s", config_depth_routing_name(m->cfg.depth_routing));
        return -1;
    }
    const int sparse0 = m->sparse;
    const float tau0 = m->exit_tau;
    if (m->cfg.depth_routing == DR_TSA) m->sparse = 1;
    else m->exit_tau = (float)EVAL_HARD_TAU;
    int rc = eval_split(m, ds, split, n_windows, r, err, errlen);
    m->sparse = sparse0;
    m->exit_tau = tau0;
    return rc;
}

double eval_tlops_saved(double alpha, int n_layer) {
    return n_layer > 0 ? (1.0 - alpha) * (n_layer - 1) / n_layer : 0.0;
}
