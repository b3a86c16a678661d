/*
 * runset.c — the run set (runset.h): every FINISHED run of a registry with
 * its typed config, commit and latest metrics, loaded once; the group rule
 * and the paired-partner rule every view uses.
 *
 * Not here: statistics (stats.c), what a claim picks or how it is judged
 * (claims.c), rendering (tables.c, figures.c, html.c, paper.c).
 */
#include "analysis/runs/runset.h"

#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/manifest.h"

/* The splits whose latest rows a run carries. */
static const char *const rs_splits[] = {"val", "test", "ablation", "analysis", "bench", "train"}; /* train: alpha_paper.* */

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

/* The latest rows of every split; of several provenances of one name, the
 * one on the most windows (db_metrics_latest lists it first). */
static int rs_metrics(gl_db *db, runset_run *r, char *err, size_t errlen) {
    int cap = 0;
    for (size_t s = 0; s < sizeof rs_splits / sizeof rs_splits[0]; s++) {
        gl_metric_latest *rows = NULL;
        int n = 0;
        if (db_metrics_latest(db, r->t.run_id, rs_splits[s], &rows, &n, err, errlen)) return -1;
        for (int i = 0; i < n; i++) {
            if (i && !strcmp(rows[i].key.name, rows[i - 1].key.name) &&
                !strcmp(rows[i].key.params, rows[i - 1].key.params))
                continue;
            if (r->nm == cap) {
                cap = cap ? 2 * cap : 64;
                runset_value *m = realloc(r->m, (size_t)cap * sizeof *m);
                if (!m) {
                    free(rows);
                    snprintf(err, errlen, "out of memory loading the metrics of %s", r->t.run_id);
                    return -1;
                }
                r->m = m;
            }
            runset_value *v = &r->m[r->nm++];
            char label[RUNSET_KEY_MAX];
            metric_label(rows[i].key.name, rows[i].key.params, label, sizeof label); /* the claims' names */
            snprintf(v->key, sizeof v->key, "%s/%s", rs_splits[s], label);
            v->value = rows[i].value;
            v->se = rows[i].se;
            v->step = rows[i].step;
            v->prov = rows[i].prov;
        }
        free(rows);
    }
    if (r->nm > 1) qsort(r->m, (size_t)r->nm, sizeof *r->m, rs_cmp_value);
    return 0;
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

int runset_load(gl_db *db, const char *prefix, runset *rs, char *err, size_t errlen) {
    tables_run *t = NULL;
    int nt = 0;
    rs->r = NULL;
    rs->n = 0;
    if (tables_collect(db, NULL, &t, &nt, err, errlen)) return -1;
    rs->r = calloc((size_t)(nt > 0 ? nt : 1), sizeof *rs->r);
    if (!rs->r) {
        free(t);
        snprintf(err, errlen, "out of memory for %d runs", nt);
        return -1;
    }
    for (int i = 0; i < nt; i++) {
        if (prefix && *prefix && strncmp(t[i].experiment, prefix, strlen(prefix))) continue;
        runset_run *r = &rs->r[rs->n++];
        r->t = t[i];
        int rc = db_run_config(db, r->t.run_id, &r->config, NULL, err, errlen);
        if (rc < 0) goto fail;
        r->group = r->config ? runset_group_key(r->config) : strdup(r->t.run_id); /* no config: a group of its own */
        if (!r->group) {
            snprintf(err, errlen, "out of memory");
            goto fail;
        }
        if (db_run_commit(db, r->t.run_id, r->commit, &r->dirty, err, errlen) < 0) goto fail;
        if (db_run_kernels(db, r->t.run_id, r->kernels, sizeof r->kernels, err, errlen) < 0) goto fail;
        rs_typed(r);
        if (rs_metrics(db, r, err, errlen)) goto fail;
    }
    free(t);
    return 0;
fail:
    free(t);
    runset_free(rs);
    return -1;
}
