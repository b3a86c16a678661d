/*
 * patch.c — paired activation patching of gates (patch.h): the pair makers,
 * the clean and corrupted runs, and one patched run per site through the
 * model's per-token overrides (GATE_TOKEN for a per-head gate, ROUTE_TOKEN
 * for a router).  Which gates can be patched is the gate table's business
 * (gatekind.h: a GABL_HEAD or GABL_ROUTE row with a token axis); this file
 * names no variant.
 *
 * The method is activation patching as in Meng et al. (2022, "causal
 * tracing") and Wang et al. (2022, IOI: the logit difference and its
 * recovered fraction), as TransformerLens's `patching` module computes it;
 * here the patched activation is a gate, not a residual stream.
 *
 * Not here: reading files, tokenising, printing (cmd_patch.c).
 */
#include "analysis/measure/patch.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/gatekind.h"

static const char *const patch_pair_names[] = {"files", "mqar", "sort", "copy", "text"};

const char *patch_pair_name(patch_pair_kind k) {
    return k >= PATCH_PAIR_FILES && k <= PATCH_PAIR_TEXT ? patch_pair_names[k] : "unknown";
}

int patch_parse_pair(const char *s, patch_pair_kind *k) {
    for (int i = PATCH_PAIR_MQAR; i <= PATCH_PAIR_TEXT; i++)
        if (!strcmp(s, patch_pair_names[i])) {
            *k = (patch_pair_kind)i;
            return 0;
        }
    return -1;
}

void patch_pairs_free(patch_pairs *pp) {
    if (!pp) return;
    free(pp->clean);
    free(pp->corrupt);
    free(pp->clean_tg);
    free(pp->corrupt_tg);
    free(pp->answer);
    free(pp->first_diff);
    memset(pp, 0, sizeof *pp);
}

static int pp_alloc(patch_pairs *pp, int B, int T) {
    memset(pp, 0, sizeof *pp);
    const size_t n = (size_t)B * T;
    pp->B = B;
    pp->T = T;
    pp->clean = malloc(n * sizeof(int));
    pp->corrupt = malloc(n * sizeof(int));
    pp->clean_tg = malloc(n * sizeof(int));
    pp->corrupt_tg = malloc(n * sizeof(int));
    pp->answer = calloc(n, 1);
    pp->first_diff = malloc((size_t)B * sizeof(int));
    if (pp->clean && pp->corrupt && pp->clean_tg && pp->corrupt_tg && pp->answer && pp->first_diff) return 0;
    patch_pairs_free(pp);
    return -1;
}

/* First and last position whose inputs differ in pair b (T and −1 when none). */
static void pp_diff(patch_pairs *pp, int b, int *last) {
    const int T = pp->T;
    const int *x = pp->clean + (size_t)b * T, *y = pp->corrupt + (size_t)b * T;
    int f = T, l = -1;
    for (int t = 0; t < T; t++)
        if (x[t] != y[t]) {
            if (f == T) f = t;
            l = t;
        }
    pp->first_diff[b] = f;
    *last = l;
}

/* Answer positions of a continuation pair: every position from the last changed input on (all when none). */
static void pp_answer_continuation(patch_pairs *pp, int b) {
    int last;
    pp_diff(pp, b, &last);
    for (int t = last < 0 ? 0 : last; t < pp->T; t++) {
        const size_t r = (size_t)b * pp->T + t;
        pp->answer[r] = pp->clean_tg[r] >= 0;
    }
}

/* Element j of the sequence s into the window view (tasks.c's put): tokens[j], targets[j−1]. */
static void pp_put(int T, int *tokens, int *targets, int j, int v) {
    if (j < T) tokens[j] = v;
    if (j >= 1 && j <= T) targets[j - 1] = v;
}

static int pp_cmp_int(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* A task pair from window i (clean already filled): one key's value (mqar) or one item (copy, sort) changed. */
static int pp_task(patch_pairs *pp, int i, const gl_data_config *dc, const float *mask, char *err, size_t errlen) {
    const int T = pp->T;
    int *tok = pp->corrupt + (size_t)i * T, *tg = pp->corrupt_tg + (size_t)i * T;
    const unsigned h = (unsigned)i * 7u; /* which alternative: a fixed function of the window */
    if (dc->task == TASK_MQAR) {
        const int P = dc->mqar_pairs, Q = dc->mqar_queries, K = dc->mqar_keys, Vv = dc->mqar_values, base = 2 * P;
        if (Vv < 2) {
            snprintf(err, errlen, "--pair mqar needs at least 2 values (data.mqar_values = %d)", Vv);
            return -1;
        }
        const int q = i % Q, key = tok[base + 2 * q];
        int pi = -1;
        for (int k = 0; k < P && pi < 0; k++)
            if (tok[2 * k] == key) pi = k;
        assert(pi >= 0);
        const int vi = tok[2 * pi + 1] - K, vn = (vi + 1 + (int)(h % (unsigned)(Vv - 1))) % Vv;
        const int v2 = task_value_id(dc, vn);
        pp_put(T, tok, tg, 2 * pi + 1, v2);        /* the pair's value in the context */
        pp_put(T, tok, tg, base + 2 * q + 1, v2);  /* and the answer to its query */
    } else {
        const int n = dc->seq_items, S = dc->n_symbols;
        if (S < 2) {
            snprintf(err, errlen, "--pair %s needs at least 2 symbols (data.n_symbols = %d)", task_name(dc->task), S);
            return -1;
        }
        const int j = i % n;
        int *x = malloc((size_t)n * sizeof(int)); /* the answer's items: data.seq_items, up to the manifest's 4096 */
        if (!x) {
            snprintf(err, errlen, "--pair %s: out of memory for %d items", task_name(dc->task), n);
            return -1;
        }
        tok[j] = (tok[j] + 1 + (int)(h % (unsigned)(S - 1))) % S;
        pp_put(T, tok, tg, j, tok[j]);
        memcpy(x, tok, (size_t)n * sizeof(int));
        if (dc->task == TASK_SORT) qsort(x, (size_t)n, sizeof(int), pp_cmp_int);
        for (int k = 0; k < n; k++) pp_put(T, tok, tg, n + 1 + k, x[k]); /* y_k = s[n+1+k] */
        free(x);
    }
    int last;
    pp_diff(pp, i, &last);
    for (int t = 0; t < T; t++) {
        const size_t r = (size_t)i * T + t;
        pp->answer[r] = mask[t] > 0 && pp->clean_tg[r] >= 0 && pp->clean_tg[r] != pp->corrupt_tg[r];
    }
    return 0;
}

/* A text pair from window i: one word (a maximal run of letter tokens, 2 or more, ending before the last
 * position) replaced by another word of the same token length and other spelling from the same window. */
static int pp_text(patch_pairs *pp, int i, const unsigned char *is_letter, char *err, size_t errlen) {
    const int T = pp->T;
    const int *x = pp->clean + (size_t)i * T;
    int *tok = pp->corrupt + (size_t)i * T, *tg = pp->corrupt_tg + (size_t)i * T;
    int ws[256], wl[256], nw = 0;
    for (int t = 0; t < T && nw < 256;) {
        if (!is_letter[x[t]]) {
            t++;
            continue;
        }
        int e = t;
        while (e < T && is_letter[x[e]]) e++;
        if (e - t >= 2 && e < T) ws[nw] = t, wl[nw++] = e - t;
        t = e;
    }
    for (int k = 0; k < nw; k++) {
        const int w = (i + k) % nw; /* the word tried first depends on the window */
        for (int u = 0; u < nw; u++) {
            if (wl[u] != wl[w] || !memcmp(x + ws[u], x + ws[w], (size_t)wl[w] * sizeof(int))) continue;
            memcpy(tok + ws[w], x + ws[u], (size_t)wl[w] * sizeof(int));
            for (int t = 0; t + 1 < T; t++) tg[t] = tok[t + 1];
            pp_answer_continuation(pp, i);
            return 0;
        }
    }
    snprintf(err, errlen, "--pair text: validation window %d has no word with another word of its length to swap "
             "in (%d words of 2+ letters); give two files with --clean and --corrupt", i, nw);
    return -1;
}

int patch_make_pairs(patch_pairs *pp, patch_pair_kind kind, const gl_dataset *ds, int n, const unsigned char *is_letter,
                     char *err, size_t errlen) {
    const gl_task want = kind == PATCH_PAIR_MQAR ? TASK_MQAR : kind == PATCH_PAIR_SORT ? TASK_SORT
                         : kind == PATCH_PAIR_COPY ? TASK_COPY : TASK_TEXT;
    if (ds->task != want) {
        snprintf(err, errlen, "--pair %s needs a run trained on data.task = %s; this run's task is %s", patch_pair_name(kind),
                 task_name(want), task_name(ds->task));
        return -1;
    }
    const long avail = data_eval_windows(ds, SPLIT_VAL);
    if (n < 1 || avail < n) {
        snprintf(err, errlen, "--pairs %d: the validation split has %ld windows", n, avail);
        return -1;
    }
    const int T = ds->T;
    float *mask = malloc((size_t)T * sizeof(float));
    if (!mask || pp_alloc(pp, n, T)) {
        free(mask);
        snprintf(err, errlen, "out of memory for %d pairs of %d tokens", n, T);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        int *x = pp->clean + (size_t)i * T, *xt = pp->clean_tg + (size_t)i * T;
        if (data_eval_batch(ds, SPLIT_VAL, i, 1, x, xt, mask) != 1) {
            snprintf(err, errlen, "cannot read validation window %d", i);
            goto fail;
        }
        memcpy(pp->corrupt + (size_t)i * T, x, (size_t)T * sizeof(int));
        memcpy(pp->corrupt_tg + (size_t)i * T, xt, (size_t)T * sizeof(int));
        if (kind == PATCH_PAIR_TEXT ? pp_text(pp, i, is_letter, err, errlen) : pp_task(pp, i, &ds->dc, mask, err, errlen))
            goto fail;
    }
    free(mask);
    return 0;
fail:
    free(mask);
    patch_pairs_free(pp);
    return -1;
}

int patch_pair_from_ids(patch_pairs *pp, const int *a, const int *b, long n, int T, char *err, size_t errlen) {
    if (n < 2 || n - 1 > T) {
        snprintf(err, errlen, "the two texts have %ld tokens; a pair needs 2 to %d (seq_len + 1)", n, T + 1);
        return -1;
    }
    if (pp_alloc(pp, 1, (int)(n - 1))) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (long t = 0; t + 1 < n; t++) {
        pp->clean[t] = a[t], pp->corrupt[t] = b[t];
        pp->clean_tg[t] = a[t + 1], pp->corrupt_tg[t] = b[t + 1];
    }
    pp_answer_continuation(pp, 0);
    return 0;
}

/* ---- the runs ---- */

void patch_free(patch_ctx *c) {
    if (!c) return;
    free(c->g_clean);
    free(c->g_corrupt);
    free(c->p_clean);
    free(c->p_corrupt);
    free(c->tab);
    free(c->tg);
    free(c->mask);
    memset(c, 0, sizeof *c);
}

/* The metric of the last forward over the answer positions, in position order. */
static double patch_measure(const patch_ctx *c, long *count) {
    const gl_model *m = c->m;
    const patch_pairs *pp = c->pp;
    const int V = m->cfg.vocab_size;
    const size_t N = (size_t)pp->B * pp->T;
    double s = 0.0;
    long k = 0;
    for (size_t r = 0; r < N; r++) {
        if (!pp->answer[r]) continue;
        if (c->metric == PATCH_METRIC_LOSS) {
            s += m->tok_loss[r];
            k++;
        } else if (pp->clean_tg[r] != pp->corrupt_tg[r] && pp->corrupt_tg[r] >= 0) {
            const float *l = m->logits + r * V;
            s += (double)l[pp->clean_tg[r]] - l[pp->corrupt_tg[r]];
            k++;
        }
    }
    if (count) *count = k;
    return k ? s / (double)k : NAN;
}

/* Forward of the clean (which = 0) or corrupted (1) inputs, scoring the clean targets at the answer positions. */
static void patch_forward(patch_ctx *c, int which) {
    const patch_pairs *pp = c->pp;
    model_forward(c->m, which ? pp->corrupt : pp->clean, c->tg, c->mask, pp->B, pp->T);
}

/* Keep the patchable gates of the last forward into g (L, B·T, Hkv) and p (L−1, B·T). */
static void patch_keep(const patch_ctx *c, float *g, float *p) {
    const gl_model *m = c->m;
    const int L = m->cfg.n_layer, Hkv = m->cfg.n_kv_head;
    const size_t N = (size_t)c->pp->B * c->pp->T;
    if (c->head_gate >= 0)
        for (int n = 0; n < L; n++) {
            const float *src = gatekind_src(m, (gl_gate)c->head_gate, n);
            if (src) memcpy(g + (size_t)n * N * Hkv, src, N * Hkv * sizeof(float));
            else memset(g + (size_t)n * N * Hkv, 0, N * Hkv * sizeof(float));
        }
    if (c->route_gate >= 0)
        for (int l = 0; l + 1 < L; l++) memcpy(p + (size_t)l * N, gatekind_src(m, (gl_gate)c->route_gate, l), N * sizeof(float));
}

/* The gate of m with ablation class abl that has a token axis, or -1.  A routing gate must have one row
 * per router (GAX_ROUTER: router l feeds block l+1), the rows ROUTE_TOKEN overrides; a routing gate by
 * block (another routing kind's weights) is not patched here. */
static int patch_find(const gl_model_config *c, gl_gate_ablation abl) {
    for (int g = 0; g < GATE_COUNT; g++)
        if (gatekind_info[g].ablate == abl && gatekind_has(c, (gl_gate)g) && gatekind_per_token((gl_gate)g) &&
            (abl != GABL_ROUTE || gatekind_info[g].axis[0] == GAX_ROUTER))
            return g;
    return -1;
}

int patch_init(patch_ctx *c, gl_model *m, const patch_pairs *pp, patch_metric metric, char *err, size_t errlen) {
    memset(c, 0, sizeof *c);
    c->m = m;
    c->pp = pp;
    c->metric = metric;
    const gl_model_config *mc = &m->cfg;
    const int L = mc->n_layer, Hkv = mc->n_kv_head;
    assert(pp->B <= m->max_B && pp->T <= m->T);
    c->head_gate = patch_find(mc, GABL_HEAD);
    c->route_gate = patch_find(mc, GABL_ROUTE);
    if (c->head_gate < 0 && c->route_gate < 0) {
        snprintf(err, errlen, "nothing to patch: the run has no per-token gate (model.value_residual = %s, "
                 "depth_routing = %s); a static head gate or ResFormer λ is the same for every input",
                 config_value_residual_name(mc->value_residual), config_depth_routing_name(mc->depth_routing));
        return -1;
    }
    const size_t N = (size_t)pp->B * pp->T, cap = (size_t)m->max_B * m->T;
    const size_t tab = (size_t)L * cap * Hkv > (size_t)L * cap ? (size_t)L * cap * Hkv : (size_t)L * cap;
    c->g_clean = malloc(((size_t)L * N * Hkv + 1) * sizeof(float));
    c->g_corrupt = malloc(((size_t)L * N * Hkv + 1) * sizeof(float));
    c->p_clean = malloc(((size_t)L * N + 1) * sizeof(float));
    c->p_corrupt = malloc(((size_t)L * N + 1) * sizeof(float));
    c->tab = malloc(tab * sizeof(float));
    c->tg = malloc(N * sizeof(int));
    c->mask = malloc(N * sizeof(float));
    if (!c->g_clean || !c->g_corrupt || !c->p_clean || !c->p_corrupt || !c->tab || !c->tg || !c->mask) {
        patch_free(c);
        snprintf(err, errlen, "out of memory for patching %d pairs of %d tokens", pp->B, pp->T);
        return -1;
    }
    for (size_t r = 0; r < N; r++) {
        c->tg[r] = pp->answer[r] ? pp->clean_tg[r] : -1;
        c->mask[r] = pp->answer[r] ? 1.0f : 0.0f;
    }
    model_clear_overrides(m);
    patch_forward(c, 0);
    c->clean = patch_measure(c, &c->n_answer);
    patch_keep(c, c->g_clean, c->p_clean);
    patch_forward(c, 1);
    c->corrupt = patch_measure(c, NULL);
    patch_keep(c, c->g_corrupt, c->p_corrupt);
    if (!c->n_answer) {
        snprintf(err, errlen, "%s: no answer position%s", metric == PATCH_METRIC_LOSS ? "loss" : "logit_diff",
                 metric == PATCH_METRIC_LOGIT_DIFF ? " whose clean and corrupted targets differ (the pair changes no "
                                                     "answer; use --metric loss)" : "");
        patch_free(c);
        return -1;
    }
    return 0;
}

int patch_sites(const patch_ctx *c, patch_site *sites, int max) {
    const gl_model *m = c->m;
    const int L = m->cfg.n_layer, Hkv = m->cfg.n_kv_head;
    int k = 0;
    if (c->head_gate >= 0)
        for (int n = 0; n < L; n++)
            if (gatekind_src(m, (gl_gate)c->head_gate, n))
                for (int j = 0; j < Hkv && k < max; j++) sites[k++] = (patch_site){c->head_gate, n, j};
    if (c->route_gate >= 0)
        for (int l = 0; l + 1 < L && k < max; l++) sites[k++] = (patch_site){c->route_gate, l, 0};
    return k;
}

int patch_site_gate(const patch_ctx *c, int block, int kv_head, patch_site *s, char *err, size_t errlen) {
    const gl_model *m = c->m;
    if (c->head_gate < 0) {
        snprintf(err, errlen, "--gate: the run has no per-token per-head gate (model.value_residual = %s)",
                 config_value_residual_name(m->cfg.value_residual));
        return -1;
    }
    if (block < 0 || block >= m->cfg.n_layer || kv_head < 0 || kv_head >= m->cfg.n_kv_head ||
        !gatekind_src(m, (gl_gate)c->head_gate, block)) {
        snprintf(err, errlen, "--gate L%dH%d: not a gate of this run (blocks 1..%d have %s, KV heads 0..%d)", block,
                 kv_head, m->cfg.n_layer - 1, gatekind_info[c->head_gate].symbol, m->cfg.n_kv_head - 1);
        return -1;
    }
    *s = (patch_site){c->head_gate, block, kv_head};
    return 0;
}

int patch_site_router(const patch_ctx *c, int router, patch_site *s, char *err, size_t errlen) {
    const gl_model *m = c->m;
    if (c->route_gate < 0) {
        snprintf(err, errlen, "--router: the run has no routers (model.depth_routing = %s)",
                 config_depth_routing_name(m->cfg.depth_routing));
        return -1;
    }
    if (router < 0 || router + 1 >= m->cfg.n_layer) {
        snprintf(err, errlen, "--router %d: the run has routers 0..%d (router l feeds block l+1)", router,
                 m->cfg.n_layer - 2);
        return -1;
    }
    *s = (patch_site){c->route_gate, router, 0};
    return 0;
}

void patch_site_label(const patch_ctx *c, const patch_site *s, char *out, size_t n) {
    if (gatekind_info[s->gate].ablate == GABL_ROUTE) snprintf(out, n, "router %d", s->row);
    else snprintf(out, n, "L%dH%d", s->row, s->col);
    (void)c;
}

void patch_apply(patch_ctx *c, const patch_site *site, const unsigned char *positions, double *metric) {
    gl_model *m = c->m;
    const patch_pairs *pp = c->pp;
    const int Hkv = m->cfg.n_kv_head, T = pp->T;
    const size_t N = (size_t)pp->B * T, cap = (size_t)m->max_B * m->T;
    model_clear_overrides(m);
    if (gatekind_info[site->gate].ablate == GABL_HEAD) {
        /* row n of the table: the corrupted run's own α, the clean one's where patched */
        const int n = site->row, j = site->col;
        for (size_t r = 0; r < N; r++) {
            const size_t at = ((size_t)n * N + r) * Hkv + j;
            const int take = !positions || positions[r % T];
            c->tab[((size_t)n * cap + r) * Hkv + j] = take ? c->g_clean[at] : c->g_corrupt[at];
        }
        model_set_gate_token_table(m, c->tab);
        model_set_gate_override(m, n, j, GATE_TOKEN, 0.0f);
    } else {
        const int L = m->cfg.n_layer, l = site->row;
        for (size_t i = 0; i < (size_t)(L - 1) * cap; i++) c->tab[i] = NAN; /* NaN: the router's own p */
        for (size_t r = 0; r < N; r++)
            if (!positions || positions[r % T]) c->tab[(size_t)l * cap + r] = c->p_clean[(size_t)l * N + r];
        model_set_route_token_table(m, c->tab);
    }
    patch_forward(c, 1);
    *metric = patch_measure(c, NULL);
    model_clear_overrides(m);
}

double patch_recovered(const patch_ctx *c, double patched) {
    const double den = c->clean - c->corrupt;
    return den != 0.0 ? (patched - c->corrupt) / den : NAN;
}
