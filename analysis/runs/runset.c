/*
 * runset.c — the run set (runset.h): every FINISHED run of a registry with
 * its typed config, commit and latest metrics, loaded once; the group rule
 * and the paired-partner rule every view uses.
 *
 * Not here: statistics (stats.c), what a claim picks or how it is judged
 * (claims.c), rendering (tables.c, figures.c, html.c, paper.c), and the rules
 * the registry's views hold (the headline, the variant label: read from
 * run_headline and run_variant through store/registry.h's db_set_* readers,
 * never re-derived here).
 */
#include "analysis/runs/runset.h"

#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/config.h"
#include "store/manifest.h"
#include "store/metric.h"


/* The config keys each axis frees besides its own: the knobs that only mean
 * something for one value of the axis (a dense run keeps tsa_lambda's default). */
static const struct {
    const char *axis;
    const char *keys[10]; /* "section.key", or "section.prefix*" */
} rs_axes[] = {
    {"depth_routing",
     {"model.depth_routing", "model.tsa_lambda", "model.router_hidden", "model.router_init_bias",
      "model.exit_weighting", "model.tsa_form", "model.exit_form", "model.mod_*", "model.random_*", NULL}},
    {"value_residual",
     {"model.value_residual", "model.resformer_variant", "model.value_residual_last_k", "model.decay_gates",
      "model.sat_*", "model.resformer_*", NULL}},
    {"cross_layer", {"model.cross_layer", "model.hc_expansion", "model.mudd_*", NULL}},
    {"task", {"data.task", "data.file", "data.seq_items", "data.n_symbols", "data.mqar_*", "model.vocab_size", NULL}},
    {"tsa_lambda", {"model.tsa_lambda", NULL}},
    {"scale", {"model.scale", "model.d_model", "model.n_layer", "model.n_head", "model.n_kv_head", "model.d_ff", NULL}},
};
#define RS_NAXES ((int)(sizeof rs_axes / sizeof rs_axes[0]))

int runset_key_ignored(const char *sec, const char *key) {
    if (!strcmp(sec, "log")) return 1;
    if (strcmp(sec, "train")) return 0;
    return !strcmp(key, "seed") || !strcmp(key, "threads") || !strcmp(key, "log_every") || !strcmp(key, "ckpt_every");
}

static int rs_axis_index(const char *axis) {
    for (int k = 0; k < RS_NAXES; k++)
        if (!strcmp(rs_axes[k].axis, axis)) return k;
    return -1;
}

int runset_axis_known(const char *axis) { return axis && rs_axis_index(axis) >= 0; }

static int rs_axis_frees(int ax, const char *sec, const char *key) {
    if (ax < 0) return 0;
    char full[160];
    snprintf(full, sizeof full, "%s.%s", sec, key);
    for (int k = 0; rs_axes[ax].keys[k]; k++) {
        const char *p = rs_axes[ax].keys[k];
        size_t l = strlen(p);
        if (l && p[l - 1] == '*' ? !strncmp(full, p, l - 1) : !strcmp(full, p)) return 1;
    }
    return 0;
}

gl_manifest *runset_resolve(const char *ini) {
    gl_manifest *mf = malloc(sizeof *mf);
    char err[512];
    if (mf && manifest_load_text(mf, ini ? ini : "", "a stored config", err, sizeof err)) {
        free(mf);
        return NULL;
    }
    return mf;
}

/* The fields of a resolved config the group rule compares: the typed walk (manifest_each_key) less
 * the late keys at their default (manifest_identity_text's rule: a run registered before a late key
 * existed reads the same as one written after with the key at its default, so the sweep's run
 * identity and the group and partner rules are one rule), less the ignored keys (keep_seed: but
 * train.seed kept), less the keys axis ax frees (ax < 0: none). */
typedef struct {
    int keep_seed, ax;
    int (*fn)(const char *key, const char *text, void *ctx);
    void *ctx;
} rs_walk;

static int rs_field(const gl_key *k, void *ctx) {
    const rs_walk *w = ctx;
    int seed = !strcmp(k->section, "train") && !strcmp(k->name, "seed");
    if ((k->late && k->at_default) || (runset_key_ignored(k->section, k->name) && !(w->keep_seed && seed)) ||
        rs_axis_frees(w->ax, k->section, k->name))
        return 0;
    char full[160];
    snprintf(full, sizeof full, "%s.%s", k->section, k->name);
    return w->fn(full, k->text, w->ctx);
}

static int rs_fields(const gl_manifest *mf, int keep_seed, int ax,
                     int (*fn)(const char *key, const char *text, void *ctx), void *ctx) {
    rs_walk w = {keep_seed, ax, fn, ctx};
    return manifest_each_key(mf, rs_field, &w);
}

int runset_group_each(const gl_manifest *mf, int (*fn)(const char *key, const char *text, void *ctx), void *ctx) {
    return rs_fields(mf, 0, -1, fn, ctx);
}

/* The fields as "section.key=text\n" lines, appended to a growing buffer. */
typedef struct {
    char *p;
    size_t len, cap;
    int oom;
} rs_text;

static int rs_line(const char *key, const char *text, void *ctx) {
    rs_text *t = ctx;
    size_t need = strlen(key) + strlen(text) + 3;
    if (t->len + need > t->cap) {
        size_t cap = 2 * (t->len + need) + 256;
        char *p = realloc(t->p, cap);
        if (!p) return t->oom = 1;
        t->p = p, t->cap = cap;
    }
    t->len += (size_t)snprintf(t->p + t->len, t->cap - t->len, "%s=%s\n", key, text);
    return 0;
}

/* The group key (ax < 0) or partner key (keep_seed, ax >= 0) of a stored config: its fields as
 * lines.  A config this gatelab cannot read is keyed by its text itself: a group only with the very
 * same text, and no partners.  malloc'd; NULL when out of memory. */
static char *rs_identity_fingerprint(const char *ini, int keep_seed, int ax) {
    gl_manifest *mf = runset_resolve(ini);
    if (!mf) return strdup(ini ? ini : "");
    rs_text t = {0};
    rs_fields(mf, keep_seed, ax, rs_line, &t);
    free(mf);
    if (t.oom) {
        free(t.p);
        return NULL;
    }
    return t.p ? t.p : strdup("");
}

char *runset_group_key(const char *ini) { return rs_identity_fingerprint(ini, 0, -1); }

int runset_same_group(const runset_run *a, const runset_run *b) {
    return a->group && b->group && !strcmp(a->group, b->group);
}

/* key ("section.key") of a resolved config as the typed walk gives it, unless the group rule ignores it
 * (log.* and the cadence are run bookkeeping, not parameters; train.seed is one): 0 found, -1 not. */
static int rs_get(const gl_manifest *mf, const char *key, gl_key_value *v) {
    const char *dot = strchr(key, '.');
    if (!mf || !dot) return -1;
    char sec[64];
    snprintf(sec, sizeof sec, "%.*s", (int)(dot - key), key);
    if (runset_key_ignored(sec, dot + 1) && strcmp(key, "train.seed")) return -1;
    return manifest_key_get(mf, key, v);
}

int runset_param(const runset_run *r, const char *key, char *out, size_t n) {
    out[0] = 0;
    gl_manifest *mf = r->config ? runset_resolve(r->config) : NULL;
    gl_key_value v;
    int found = mf && !rs_get(mf, key, &v);
    if (found) snprintf(out, n, "%s", v.text);
    free(mf);
    return found;
}

int runset_param_or_default(const runset_run *r, const char *key, char *out, size_t n) {
    if (runset_param(r, key, out, n)) return 1;
    static gl_manifest dflt; /* a config this gatelab cannot read, or none: the defaults */
    static int made;
    if (!made) manifest_defaults(&dflt), made = 1;
    gl_key_value v;
    if (rs_get(&dflt, key, &v)) return 0;
    snprintf(out, n, "%s", v.text);
    return 1;
}

void runset_axis_value(const runset_run *r, const char *axis, char *out, size_t n) {
    if (!strcmp(axis, "depth_routing")) snprintf(out, n, "%s", r->depth_routing);
    else if (!strcmp(axis, "value_residual")) snprintf(out, n, "%s", r->value_residual);
    else if (!strcmp(axis, "cross_layer")) snprintf(out, n, "%s", r->cross_layer);
    else if (!strcmp(axis, "task")) snprintf(out, n, "%s", r->t.data);
    else if (!strcmp(axis, "scale")) snprintf(out, n, "%s", r->t.scale);
    else if (!strcmp(axis, "tsa_lambda")) runset_param(r, "model.tsa_lambda", out, n);
    else out[0] = 0;
}

int runset_partners(const runset *rs, const runset_run *a, const char *axis, const char *value,
                    const runset_run **out, int max) {
    int ax = rs_axis_index(axis), n = 0;
    if (ax < 0 || !a->config) return 0;
    char *ka = rs_identity_fingerprint(a->config, 1, ax);
    for (int i = 0; ka && i < rs->n; i++) {
        const runset_run *b = &rs->r[i];
        if (b == a || !b->config) continue;
        char v[64];
        runset_axis_value(b, axis, v, sizeof v);
        if (strcmp(v, value)) continue;
        char *kb = rs_identity_fingerprint(b->config, 1, ax);
        if (kb && !strcmp(ka, kb)) {
            if (n < max) out[n] = b;
            n++;
        }
        free(kb);
    }
    free(ka);
    return n;
}

const runset_run *runset_partner(const runset *rs, const runset_run *a, const char *axis, const char *value) {
    const runset_run *hit = NULL;
    return runset_partners(rs, a, axis, value, &hit, 1) ? hit : NULL;
}

unsigned long long runset_partner_key(const runset_run *r, const char *axis) {
    return runset_partner_key_ini(r->config, axis);
}

unsigned long long runset_partner_key_ini(const char *ini, const char *axis) {
    int ax = rs_axis_index(axis);
    if (ax < 0 || !ini) return 0;
    char *k = rs_identity_fingerprint(ini, 1, ax);
    if (!k) return 0;
    unsigned long long h = 1469598103934665603ull; /* FNV-1a 64 */
    for (const char *c = k; *c; c++) h = (h ^ (unsigned char)*c) * 1099511628211ull;
    free(k);
    return h ? h : 1;
}

static int rs_cmp_value(const void *a, const void *b) {
    return strcmp(((const runset_value *)a)->key, ((const runset_value *)b)->key);
}

const runset_value *runset_get(const runset_run *r, const char *key) {
    if (!r->m || !r->nm) return NULL;
    if (strchr(key, '*')) {
        for (int i = 0; i < r->nm; i++)
            if (!fnmatch(key, r->m[i].key, 0)) return &r->m[i];
        return NULL;
    }
    runset_value k;
    snprintf(k.key, sizeof k.key, "%s", key);
    return bsearch(&k, r->m, (size_t)r->nm, sizeof *r->m, rs_cmp_value);
}

double runset_num(const runset_run *r, const char *key) {
    const runset_value *v = runset_get(r, key);
    return v ? v->value : NAN;
}

/* The typed fields of r read once from its resolved config: the variant names ("none" when the
 * config is absent or not one this gatelab reads) and the budget's sizes (0 then). */
static void rs_typed(runset_run *r) {
    gl_manifest *mf = r->config ? runset_resolve(r->config) : NULL;
    const struct {
        const char *key;
        char *dst;
    } names[] = {{"model.value_residual", r->value_residual},
                 {"model.depth_routing", r->depth_routing},
                 {"model.cross_layer", r->cross_layer}};
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        gl_key_value v;
        snprintf(names[k].dst, sizeof r->value_residual, "%s", mf && !rs_get(mf, names[k].key, &v) ? v.text : "none");
    }
    const struct {
        const char *key;
        long *dst;
    } sizes[] = {{"train.steps", &r->steps},
                 {"train.batch_size", &r->batch},
                 {"model.seq_len", &r->seq_len},
                 {"model.n_layer", &r->n_layer},
                 {"model.n_kv_head", &r->n_kv_head}};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        gl_key_value v;
        *sizes[k].dst = mf && !rs_get(mf, sizes[k].key, &v) ? (long)v.num : 0;
    }
    free(mf);
}

void runset_free(runset *rs) {
    for (int i = 0; rs->r && i < rs->n; i++) {
        free(rs->r[i].config);
        free(rs->r[i].group);
        free(rs->r[i].m);
    }
    free(rs->r);
    rs->r = NULL;
    rs->n = 0;
}

/* ---- the loader: a run set in a handful of statements ---- */

/* The splits whose latest rows a run carries. */
#define RS_SPLITS "val,test,ablation,analysis,bench,train" /* train: its last values, alpha_paper.* */

/* A row's run id and index, sorted by id: where a set-wide read's row goes. */
typedef struct {
    const char *id;
    int i;
} rs_id;

/* What a load keeps beside the rows while the set-wide reads arrive. */
typedef struct {
    char scale[64], d_model[32], n_layer[32], task[32], file[1024];
    char lambda[64], knob[64];
    int has_lambda, has_knob;
    const char *knob_key;          /* the routing's knob param (config_routing_knob), NULL none */
    double tps_sum, tps_first;     /* training tokens/s, the first log row skipped (kept alone) */
    int tps_rows, tps_n;
    long latest_step[3];           /* settled, bench tps, bench rss: the row at the largest step, */
    long latest_windows[3];        /* of those the one on the most windows (db_metric_at's rule) */
} rs_extra;

typedef struct {
    gl_db *db;
    runset *rs;
    rs_extra *x;
    int cap;
    rs_id *by_id;                  /* the rows' ids and indices, sorted by id */
    char *err;
    size_t errlen;
} rs_load;

static int rs_oom(rs_load *L, const char *what) {
    snprintf(L->err, L->errlen, "out of memory loading %s", what);
    return -1;
}

static int rs_cmp_id(const void *a, const void *b) { return strcmp(((const rs_id *)a)->id, ((const rs_id *)b)->id); }

/* The row of run_id, or -1 (a run outside the set: cannot happen, every read has the same filter). */
static int rs_index(const rs_load *L, const char *run_id) {
    const rs_id key = {run_id, -1}, *hit = bsearch(&key, L->by_id, (size_t)L->rs->n, sizeof key, rs_cmp_id);
    return hit ? hit->i : -1;
}

static void rs_base_name(const char *path, char *out, size_t n) {
    const char *b = strrchr(path, '/');
    snprintf(out, n, "%s", b ? b + 1 : path);
    char *dot = strrchr(out, '.');
    if (dot && dot != out) *dot = 0;
}

static int rs_on_run(const gl_set_run *g, void *ctx) {
    rs_load *L = ctx;
    runset *rs = L->rs;
    if (rs->n == L->cap) {
        int cap = L->cap ? 2 * L->cap : 64;
        runset_run *r = realloc(rs->r, (size_t)cap * sizeof *r);
        rs_extra *x = r ? realloc(L->x, (size_t)cap * sizeof *x) : NULL;
        if (r) rs->r = r;
        if (!r || !x) return rs_oom(L, "a run set");
        L->x = x;
        L->cap = cap;
    }
    runset_run *r = &rs->r[rs->n];
    rs_extra *x = &L->x[rs->n];
    memset(r, 0, sizeof *r);
    memset(x, 0, sizeof *x);
    rs->n++;
    runset_row *t = &r->t;
    snprintf(t->run_id, sizeof t->run_id, "%s", g->run_id);
    snprintf(t->experiment, sizeof t->experiment, "%s", g->experiment);
    snprintf(t->variant, sizeof t->variant, "%s", g->variant);
    snprintf(t->axis[0], sizeof t->axis[0], "%s", g->value_residual);
    snprintf(t->axis[1], sizeof t->axis[1], "%s", g->depth_routing);
    snprintf(t->axis[2], sizeof t->axis[2], "%s", g->cross_layer);
    snprintf(r->commit, sizeof r->commit, "%s", g->commit);
    r->dirty = g->dirty;
    if (!(r->config = strdup(g->config))) return rs_oom(L, "a run's config");
    snprintf(x->d_model, sizeof x->d_model, "?");
    snprintf(x->n_layer, sizeof x->n_layer, "?");
    snprintf(x->task, sizeof x->task, "text");
    gl_depth_routing drk = DR_NONE;
    x->knob_key = config_parse_depth_routing(g->depth_routing, &drk)
                      ? NULL : config_routing_knob(drk, &t->knob_sym, &t->routing);
    for (int k = 0; k < 3; k++) x->latest_step[k] = x->latest_windows[k] = -1;
    t->settled = t->bench_tps = t->bench_rss = t->tokens_per_s = NAN;
    t->val_loss = t->val_bpc = t->tok_acc = t->seq_acc = t->active_frac = t->tlops_saved = NAN;
    t->val_se = t->soft_loss = t->hard_alpha = t->hard_loss = NAN;
    t->val_step = -1;
    return 0;
}

static int rs_on_param(const char *run_id, const char *key, const char *value, void *ctx) {
    rs_load *L = ctx;
    int i = rs_index(L, run_id);
    if (i < 0) return 0;
    runset_row *t = &L->rs->r[i].t;
    rs_extra *x = &L->x[i];
    const struct {
        const char *key;
        char *dst;
        size_t n;
    } want[] = {{"model.scale", x->scale, sizeof x->scale}, {"model.d_model", x->d_model, sizeof x->d_model},
                {"model.n_layer", x->n_layer, sizeof x->n_layer}, {"data.task", x->task, sizeof x->task},
                {"data.file", x->file, sizeof x->file},         {"train.seed", t->seed, sizeof t->seed}};
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++)
        if (!strcmp(key, want[k].key)) snprintf(want[k].dst, want[k].n, "%s", value);
    if (!strcmp(key, "model.tsa_lambda")) snprintf(x->lambda, sizeof x->lambda, "%s", value), x->has_lambda = 1;
    if (x->knob_key && !strcmp(key, x->knob_key)) snprintf(x->knob, sizeof x->knob, "%s", value), x->has_knob = 1;
    return 0;
}

static int rs_on_headline(const gl_set_headline *h, void *ctx) {
    rs_load *L = ctx;
    int i = rs_index(L, h->run_id);
    if (i < 0) return 0;
    runset_row *t = &L->rs->r[i].t;
    t->headline = strcmp(h->source, "periodic") != 0;
    t->hard_missing = !strcmp(h->source, "hard_missing");
    t->val_loss = h->loss, t->val_bpc = h->bpc, t->tok_acc = h->token_acc, t->seq_acc = h->seq_acc;
    t->active_frac = h->active_frac, t->tlops_saved = h->tlops_saved;
    t->val_se = h->loss_se, t->val_step = h->step, t->val_prov = h->prov, t->soft_loss = h->soft_loss;
    t->hard_alpha = t->headline ? h->hard_active_frac : NAN;
    t->hard_loss = t->headline ? h->hard_loss : NAN;
    return 0;
}

/* A latest row: into the run's metrics ("split/label"; of several windows of one name and params, the
 * first listed: the most windows), and the few the row shows by db_metric_at's rule. */
static int rs_on_latest(const char *run_id, const char *split, const gl_metric_latest *m, void *ctx) {
    rs_load *L = ctx;
    int i = rs_index(L, run_id);
    if (i < 0) return 0;
    runset_run *r = &L->rs->r[i];
    rs_extra *x = &L->x[i];
    static const struct {
        const char *split, *name;
    } shown[3] = {{"analysis", "settled_at_halt"}, {"bench", "train_tokens_per_s"}, {"bench", "peak_rss_mib"}};
    double *dst[3] = {&r->t.settled, &r->t.bench_tps, &r->t.bench_rss};
    for (int k = 0; k < 3; k++)
        if (!strcmp(split, shown[k].split) && !strcmp(m->key.name, shown[k].name) && !strcmp(m->key.params, "{}") &&
            (m->step > x->latest_step[k] || (m->step == x->latest_step[k] && m->prov.count > x->latest_windows[k]))) {
            *dst[k] = m->value;
            x->latest_step[k] = m->step;
            x->latest_windows[k] = m->prov.count;
        }
    char label[RUNSET_KEY_MAX], key[RUNSET_KEY_MAX];
    metric_label(m->key.name, m->key.params, label, sizeof label); /* the claims' names */
    snprintf(key, sizeof key, "%s/%s", split, label);
    if (r->nm && !strcmp(r->m[r->nm - 1].key, key)) return 0; /* fewer windows of the same metric */
    if (!(r->nm & (r->nm - 1))) { /* grow at 0, 1, 2, 4, … */
        runset_value *v = realloc(r->m, (size_t)(r->nm ? 2 * r->nm : 1) * sizeof *v);
        if (!v) return rs_oom(L, "a run's metrics");
        r->m = v;
    }
    runset_value *v = &r->m[r->nm++];
    snprintf(v->key, sizeof v->key, "%s", key);
    v->value = m->value;
    v->se = m->se;
    v->step = m->step;
    v->prov = m->prov;
    return 0;
}

static int rs_on_tps(const char *run_id, const gl_metric_point *p, void *ctx) {
    rs_load *L = ctx;
    int i = rs_index(L, run_id);
    if (i < 0) return 0;
    rs_extra *x = &L->x[i];
    if (x->tps_rows++ && !isnan(p->value)) x->tps_sum += p->value, x->tps_n++;
    else if (!isnan(p->value)) x->tps_first = p->value;
    return 0;
}

/* An environment event: the kernel it names joins the run's list (db_run_kernels' rule). */
static int rs_on_environment(const char *run_id, const char *detail, void *ctx) {
    rs_load *L = ctx;
    int i = rs_index(L, run_id);
    if (i >= 0) db_kernel_from_event(L->rs->r[i].kernels, sizeof L->rs->r[i].kernels, detail);
    return 0;
}

/* A numeric param by the manifest's parser (db_param_typed's rule): NaN without one ("auto" too). */
static int rs_param_num(const rs_load *L, const char *run_id, const char *key, const char *text, int has,
                        double *out) {
    *out = NAN;
    if (!has) return 0;
    char origin[256];
    gl_key_value v;
    snprintf(origin, sizeof origin, "%s: run %s's param", db_path(L->db), run_id);
    if (manifest_parse_key(key, text, origin, &v, L->err, L->errlen)) return -1;
    *out = v.num;
    return 0;
}

/* What a row derives once every read is in: data, scale, λ and the routing's knob, throughput, the
 * group key and its hash, the partner keys of the three variant axes, the typed config fields. */
static int rs_finish(rs_load *L, int i) {
    runset_run *r = &L->rs->r[i];
    runset_row *t = &r->t;
    rs_extra *x = &L->x[i];
    t->text = !strcmp(x->task, "text");
    if (t->text && x->file[0]) rs_base_name(x->file, t->data, sizeof t->data);
    else snprintf(t->data, sizeof t->data, "%s", x->task);
    if (x->scale[0]) snprintf(t->scale, sizeof t->scale, "%s", x->scale);
    else snprintf(t->scale, sizeof t->scale, "d%sL%s", x->d_model, x->n_layer);
    t->lambda = NAN;
    if (!strcmp(t->axis[1], "tsa") && rs_param_num(L, t->run_id, "model.tsa_lambda", x->lambda, x->has_lambda, &t->lambda))
        return -1;
    if (rs_param_num(L, t->run_id, x->knob_key ? x->knob_key : "", x->knob, x->knob_key && x->has_knob, &t->knob))
        return -1;
    if (isnan(t->knob)) t->knob_sym = t->routing = NULL;
    t->tokens_per_s = x->tps_n ? x->tps_sum / x->tps_n : x->tps_rows == 1 && !isnan(x->tps_first) ? x->tps_first : NAN;
    if (!(r->group = runset_group_key(r->config))) return rs_oom(L, "a run's group key");
    unsigned long long h = 1469598103934665603ull; /* FNV-1a 64 of the group key */
    for (const char *c = r->group; *c; c++) h = (h ^ (unsigned char)*c) * 1099511628211ull;
    t->group = h;
    static const char *const axes[3] = {"value_residual", "depth_routing", "cross_layer"};
    for (int a = 0; a < 3; a++) t->partner[a] = runset_partner_key_ini(r->config, axes[a]);
    rs_typed(r);
    if (r->nm > 1) qsort(r->m, (size_t)r->nm, sizeof *r->m, rs_cmp_value);
    return 0;
}

int runset_load_set(gl_db *db, const gl_set_filter *f, runset *rs, char *err, size_t errlen) {
    rs_load L = {.db = db, .rs = rs, .err = err, .errlen = errlen};
    rs->r = NULL;
    rs->n = 0;
    int rc = -1;
    if (db_set_runs(db, f, rs_on_run, &L, err, errlen)) goto done;
    if (!(L.by_id = malloc((size_t)(rs->n ? rs->n : 1) * sizeof *L.by_id))) {
        rs_oom(&L, "a run set");
        goto done;
    }
    for (int i = 0; i < rs->n; i++) L.by_id[i] = (rs_id){rs->r[i].t.run_id, i};
    qsort(L.by_id, (size_t)rs->n, sizeof *L.by_id, rs_cmp_id); /* no shared state: serve loads from several threads */
    if (db_set_params(db, f, rs_on_param, &L, err, errlen) ||
        db_set_headlines(db, f, "val", rs_on_headline, &L, err, errlen) ||
        db_set_latest(db, f, RS_SPLITS, rs_on_latest, &L, err, errlen) ||
        db_set_series(db, f, "train", "tokens_per_s", rs_on_tps, &L, err, errlen) ||
        db_set_events(db, f, "environment", rs_on_environment, &L, err, errlen))
        goto done;
    for (int i = 0; i < rs->n; i++)
        if (rs_finish(&L, i)) goto done;
    rc = 0;
done:
    free(L.by_id);
    free(L.x);
    if (rc) runset_free(rs);
    return rc;
}

int runset_load(gl_db *db, const char *prefix, runset *rs, char *err, size_t errlen) {
    gl_set_filter f = {.status = "FINISHED", .prefix = prefix};
    return runset_load_set(db, &f, rs, err, errlen);
}
