/*
 * cmd_probe.c — `gatelab probe`: one forward of a run's checkpoint on any
 * text, kept as an HDF5 activation cache (analysis/measure/probe.h; the layout in
 * docs/files.md "probe cache"), and a per-block summary of the logit lens.
 *
 *   gatelab probe RUN --text FILE | --prompt STR [--out CACHE.h5] [--attention] [--zero L1H0,...]
 *                 [--threads N] [--results DIR]
 *
 * The text is encoded with the run's own tokenizer.  --zero fixes the chosen
 * per-head value-residual gates (the gate table's GABL_HEAD row: SATFormer α,
 * the static head gate) to 0 for the whole forward, as `ablate --mode zero`
 * does.  `gatelab report --probe CACHE --html` colours the text by any array.
 */
#include <errno.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/measure/ablate.h"
#include "analysis/measure/probe.h"
#include "cmd_probe.h"
#include "args.h"
#include "cli.h"
#include "model/gatekind.h"
#include "resolve.h"
#include "store/fileio.h"
#include "store/probecache.h"
#include "store/rundir.h"
#include "store/sha256.h"
#include "analysis/core/report.h"

typedef struct {
    const char *run, *text, *prompt, *out, *results, *zero;
    int attention, threads;
    char zero_buf[1024];
} pb_args;

static const args_opt pb_opts[] = {
    {"text", ARGS_KEY(0), "FILE", "the bytes of FILE (encoded with the run's tokenizer)"},
    {"prompt", ARGS_KEY(1), "STR", "the bytes of STR instead of a file"},
    {"out", ARGS_KEY(2), "CACHE.h5", "the activation cache (default <run>/analysis/probe_<8 hex of the text's sha256>.h5)"},
    {"attention", ARGS_KEY(3), NULL, "also keep the attention probabilities (/attn/probs)"},
    {"zero", ARGS_KEY(4), "L1H0,...", "fix these per-head gates (BLOCK:KV_HEAD or L<block>H<head>) to 0"},
    {"threads", ARGS_KEY(5), "N", "OpenMP threads (default: the run's train.threads; 0 = every core)"},
    {"results", ARGS_KEY(6), "DIR", "results folder that holds runs/<RUN> (default $GATELAB_RESULTS or results)"},
    {0}};
const args_spec pb_spec = {
    "probe", "RUN --text FILE | --prompt STR [options]",
    "One forward of the run's checkpoint on any text, kept as an HDF5 activation cache: every gate, the\n"
    "residual-stream norms, the V1 share of each KV head, the per-block logit lens (KL to the final head,\n"
    "top-1 agreement, loss) and with --attention the attention probabilities.  Prints the lens per block.",
    pb_opts};

static int pb_parse(int argc, char **argv, pb_args *a) {
    memset(a, 0, sizeof *a);
    a->threads = -1;
    args_parser p;
    args_begin(&p, &pb_spec, argc, argv);
    int bad = 0;
    for (int k; !bad && (k = args_next(&p)) != ARGS_END;) {
        if (k < 0) return args_exit_code(k);
        char err[512];
        switch (k) {
        case ARGS_POS:
            if (a->run) return args_usage_error(&pb_spec, "one RUN only ('%s' and '%s' given)", a->run, p.val);
            a->run = p.val;
            break;
        case ARGS_KEY(0): a->text = p.val; break;
        case ARGS_KEY(1): a->prompt = p.val; break;
        case ARGS_KEY(2): a->out = p.val; break;
        case ARGS_KEY(3): a->attention = 1; break;
        case ARGS_KEY(4):
            if (args_heads("--zero", p.val, a->zero_buf, sizeof a->zero_buf, err, sizeof err)) {
                fprintf(stderr, "gatelab probe: %s\n", err);
                bad = 1;
            }
            a->zero = a->zero_buf;
            break;
        case ARGS_KEY(5): bad = args_get_int(&p, 0, 1024, &a->threads); break;
        case ARGS_KEY(6): a->results = p.val; break;
        }
    }
    if (bad) return 2;
    if (!a->run) return args_usage_error(&pb_spec, "RUN is missing");
    if (!a->text == !a->prompt) return args_usage_error(&pb_spec, "give --text FILE or --prompt STR (one of them)");
    if (a->prompt && !*a->prompt) return args_usage_error(&pb_spec, "--prompt is empty: give at least one byte");
    return -1;
}

/* The run's vocabulary into pc (/vocab): token id's bytes. */
int probe_vocab(const gl_run *run, gl_probecache *pc) {
    const int V = run->model.cfg.vocab_size;
    size_t tot = 0, len;
    for (int id = 0; id < V; id++) run_token(run, id, &len), tot += len;
    pc->n_vocab = V;
    pc->vocab_offset = malloc((size_t)(V + 1) * sizeof(int32_t));
    pc->vocab_bytes = malloc(tot ? tot : 1);
    if (!pc->vocab_offset || !pc->vocab_bytes) return -1;
    pc->vocab_offset[0] = 0;
    for (int id = 0; id < V; id++) {
        const uint8_t *p = run_token(run, id, &len);
        memcpy(pc->vocab_bytes + pc->vocab_offset[id], p, len);
        pc->vocab_offset[id + 1] = pc->vocab_offset[id] + (int32_t)len;
    }
    return 0;
}

/* The display text of ids[0..n) through the run's vocabulary into out (cut to fit). */
static void pb_show(const gl_run *run, const int *ids, int n, char *out, size_t cap) {
    size_t k = 0;
    for (int i = 0; i < n && k + 1 < cap; i++) {
        size_t len = 0;
        const uint8_t *p = run_token(run, ids[i], &len);
        for (size_t j = 0; j < len && k + 1 < cap; j++) out[k++] = (char)p[j];
    }
    out[k] = 0;
}

/* A synthetic task's format (docs/tasks.md): 1 when ids[0..n) could be (a prefix of) one of its
 * sequences; the format and an example into fmt either way.  Text runs take any text (1, fmt ""). */
static int pb_task_format(const gl_run *run, const int *ids, long n, char *fmt, size_t cap) {
    const gl_data_config *d = &run->mf.data;
    int ex[512], m = 0, ok = 1;
    char show[600];
    fmt[0] = 0;
    if (d->task == TASK_COPY || d->task == TASK_SORT) {
        const int N = d->seq_items, S = d->n_symbols;
        for (int i = 0; i < N && m < 255; i++) ex[m++] = i % S;
        ex[m++] = S; /* SEP */
        for (int i = 0; i < N && m < 511; i++) ex[m++] = i % S;
        ok = n <= 2L * N + 1;
        for (long i = 0; ok && i < n; i++) ok = i == N ? ids[i] == S : ids[i] >= 0 && ids[i] < S;
        pb_show(run, ex, m, show, sizeof show);
        snprintf(fmt, cap, "the %s task's sequences are %d symbols, the separator, then the %d symbols %s, e.g. '%s'",
                 task_name(d->task), N, N, d->task == TASK_COPY ? "again" : "sorted", show);
    } else if (d->task == TASK_MQAR) {
        const int P = d->mqar_pairs, Q = d->mqar_queries, K = d->mqar_keys;
        for (int i = 0; i < P && m < 500; i++) ex[m++] = i % K, ex[m++] = K + i % d->mqar_values;
        for (int i = 0; i < Q && m < 510; i++) ex[m++] = i % K, ex[m++] = K + i % d->mqar_values;
        ok = n <= 2L * (P + Q);
        for (long i = 0; ok && i < n; i++) ok = i % 2 == 0 ? ids[i] >= 0 && ids[i] < K : ids[i] >= K && ids[i] < K + d->mqar_values;
        pb_show(run, ex, m, show, sizeof show);
        snprintf(fmt, cap, "the mqar task's sequences are %d key-value pairs, then %d queries each followed by its "
                 "value, e.g. '%s'", P, Q, show);
    }
    return ok;
}

int cmd_probe(int argc, char **argv) {
    pb_args a;
    int pr = pb_parse(argc, argv, &a);
    if (pr >= 0) return pr;
    static gl_run run;
    static gl_probecache pc;
    char err[2048], out[GL_PATH_MAX + 64];
    uint8_t *bytes = NULL;
    int *ids = NULL, rc = 1;
    resolve_run rr;
    if (resolve_run_arg(a.run, NULL, a.results, RESOLVE_DIR, &rr, err, sizeof err) ||
        run_open(&run, rr.dir, NULL, 1, err, sizeof err))
        goto done;
    gl_model *m = &run.model;
    int threads = a.threads >= 0 ? a.threads : run.mf.train.threads;
    if (threads > 0) omp_set_num_threads(threads);
    if (a.zero) {
        const int g = gatekind_find(&m->cfg, GABL_HEAD), L = m->cfg.n_layer, Hkv = m->cfg.n_kv_head;
        unsigned char sel[GL_MAX_LAYERS * 64];
        if (g < 0) {
            snprintf(err, sizeof err, "--zero: run %s has no per-head value-residual gate (model.value_residual = %s; "
                     "satformer and headgate have one)", rr.id, config_value_residual_name(m->cfg.value_residual));
            goto done;
        }
        if (L * Hkv > (int)sizeof sel) {
            snprintf(err, sizeof err, "--zero: %d blocks × %d KV heads is more than this build handles", L, Hkv);
            goto done;
        }
        if (ablate_parse_selection(m, NULL, a.zero, sel, err, sizeof err)) goto done;
        for (int l = 0; l < L; l++)
            for (int j = 0; j < Hkv; j++)
                if (sel[l * Hkv + j]) model_set_gate_override(m, l, j, GATE_CONST, 0.0f);
    }
    size_t nb = a.prompt ? strlen(a.prompt) : 0;
    if (a.text) {
        if (!(bytes = (uint8_t *)fileio_slurp(a.text, "--text file", 0, &nb, err, sizeof err))) goto done;
    } else if (!(bytes = malloc(nb))) {
        snprintf(err, sizeof err, "out of memory");
        goto done;
    } else {
        memcpy(bytes, a.prompt, nb);
    }
    if (!(ids = malloc((nb ? nb : 1) * sizeof(int)))) {
        snprintf(err, sizeof err, "out of memory for %zu tokens", nb);
        goto done;
    }
    char why[512];
    long n = run_encode(&run, bytes, nb, ids, why, sizeof why);
    if (n < 1) {
        snprintf(err, sizeof err, "%s: %s", a.text ? a.text : "--prompt", n < 0 ? why : "no tokens (it is empty)");
        goto done;
    }
    if (probe_run(m, ids, n, a.attention, 0, &pc, err, sizeof err)) goto done;
    if (probe_vocab(&run, &pc)) {
        snprintf(err, sizeof err, "out of memory for the vocabulary");
        goto done;
    }
    snprintf(pc.run_id, sizeof pc.run_id, "%s", rr.id);
    snprintf(pc.source, sizeof pc.source, "%s", a.text ? a.text : "--prompt");
    pc.config_ini = strdup(run.config_ini ? run.config_ini : "");
    if (a.out) snprintf(out, sizeof out, "%s", a.out);
    else { /* one cache per text: a second probe on other text does not overwrite the first */
        char hex[65];
        sha256_hex(bytes, nb, hex);
        snprintf(out, sizeof out, "%s/analysis", rr.dir);
        if (fileio_mkdir_p(out, err, sizeof err)) goto done;
        snprintf(out, sizeof out, "%s/analysis/probe_%.8s.h5", rr.dir, hex);
    }
    if (probecache_write(out, &pc, err, sizeof err)) goto done;
    const pc_array *kl = probecache_find(&pc, "lens/kl"), *t1 = probecache_find(&pc, "lens/top1"),
                   *ll = probecache_find(&pc, "lens/loss"), *rn = probecache_find(&pc, "resid/norm");
    printf("gatelab probe: run %s, %ld tokens (%ld scored), loss %.6f nats/token\n  %s\n", rr.id, pc.n_tok, pc.scored,
           pc.loss, out);
    printf("  block  lens KL (nats)  top-1 agree  lens loss (nats)  |resid|\n");
    for (int l = 0; l < pc.n_layer; l++) {
        double sk = 0, st = 0, sl = 0, sr = 0;
        long nl = 0;
        for (long i = 0; i < pc.n_tok; i++) {
            const size_t k = (size_t)l * pc.n_tok + i;
            sk += kl->data[k], st += t1->data[k], sr += rn->data[k];
            if (pc.targets[i] >= 0) sl += ll->data[k], nl++;
        }
        printf("  %5d  %14.6f  %11.4f  %16.6f  %7.3f\n", l, sk / pc.n_tok, st / pc.n_tok, nl ? sl / nl : 0.0,
               sr / pc.n_tok);
    }
    if (run.mf.data.task != TASK_TEXT) {
        char fmt[1024];
        if (!pb_task_format(&run, ids, n, fmt, sizeof fmt))
            printf("note: this text is not in the format run %s was trained on: %s (docs/tasks.md). The model never "
                   "saw such a sequence, so the loss above says little about it.\n", rr.id, fmt);
        else
            printf("note: %s. The task scores only the answers; the loss above counts every next token, the "
                   "randomly drawn inputs too, which no model can predict.\n", fmt);
    }
    rc = 0;
done:
    if (rc) fprintf(stderr, "gatelab probe: %s\n", err);
    free(bytes);
    free(ids);
    probecache_free(&pc);
    run_close(&run);
    return rc;
}

int probe_sample_trace(gl_run *run, const int *ctx, size_t len, size_t plen, double tau, const char *path, char *err,
                       size_t errlen) {
    static gl_probecache pc;
    gl_model *m = &run->model;
    const gl_model_config *c = &m->cfg;
    const int L = c->n_layer;
    int rc = -1;
    memset(&pc, 0, sizeof pc);
    if (probe_run(m, ctx, (long)len, 0, 1, &pc, err, errlen)) goto done;
    if (probe_vocab(run, &pc)) {
        snprintf(err, errlen, "out of memory for the vocabulary");
        goto done;
    }
    char id[256];
    args_run_id(run->dir, id, sizeof id);
    snprintf(pc.run_id, sizeof pc.run_id, "%s", id);
    snprintf(pc.source, sizeof pc.source, "sample");
    pc.config_ini = strdup(run->config_ini ? run->config_ini : "");
    const long P = pc.n_tok, d1[1] = {P};
    pc_array *gen = probecache_add(&pc, "sample/generated", "token", "generated (1) or prompt (0)", 1, d1);
    if (!gen) goto oom;
    for (long i = 0; i < P; i++) gen->data[i] = (size_t)i >= plen;
    /* where each token halts, as analyze's halt_block (analysis/measure/settle.h): the first block it does not run —
     * TSA the first block its router skips (p > 0.5), early exit the block after the one whose confidence
     * first reaches τ; L when it runs every block */
    char title[128];
    const pc_array *src = NULL;
    if (c->depth_routing == DR_TSA) {
        src = probecache_find(&pc, "tsa/p");
        snprintf(title, sizeof title, "TSA: first block skipped under hard routing (p > 0.5; %d: none)", L);
    } else if (c->depth_routing == DR_EARLY_EXIT) {
        src = probecache_find(&pc, "exit/confidence");
        snprintf(title, sizeof title, "early exit: first block not run, its exit block + 1 (confidence >= %.3g; %d: none)",
                 tau, L);
    }
    if (src) {
        pc_array *hb = probecache_add(&pc, "sample/halt_block", "token", title, 1, d1);
        if (!hb) goto oom;
        const int rows = (int)src->dims[0];
        for (long i = 0; i < P; i++) {
            int h = L;
            for (int r = 0; r < rows && h == L; r++) {
                const float v = src->data[(size_t)r * P + i];
                if (c->depth_routing == DR_TSA ? v > 0.5f : (r + 1 < L && v >= (float)tau)) h = r + 1;
            }
            hb->data[i] = (float)h;
        }
    }
    rc = probecache_write(path, &pc, err, errlen);
    goto done;
oom:
    snprintf(err, errlen, "out of memory for the sample trace");
done:
    probecache_free(&pc);
    return rc;
}
