/*
 * runset.c — the run set (runset.h): every FINISHED run of a registry with
 * its typed config, commit and latest metrics, loaded once; the group rule
 * and the paired-partner rule every view uses.
 *
 * Not here: statistics (stats.c), what a claim picks or how it is judged
 * (claims.c), rendering (tables.c, figures.c, html.c, paper.c).
 */
#include "runset.h"

#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/manifest.h"

/* The splits whose latest rows a run carries. */
static const char *const rs_splits[] = {"val", "test", "ablation", "analysis", "bench"};

/* The config keys each axis frees besides its own: the knobs that only mean
 * something for one value of the axis (a dense run keeps tsa_lambda's default). */
static const struct {
    const char *axis;
    const char *keys[8]; /* "section.key", or "section.prefix*" */
} rs_axes[] = {
    {"depth_routing",
     {"model.depth_routing", "model.tsa_lambda", "model.router_hidden", "model.router_init_bias",
      "model.exit_weighting", "model.mod_*", "model.random_*", NULL}},
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

/* The "section.key=value\n" lines of ini, less the ignored keys (keep_seed:
 * but train.seed kept), less the keys axis ax frees (ax < 0: none). */
static char *rs_fingerprint(const char *ini, int keep_seed, int ax) {
    size_t cap = strlen(ini) + 64, k = 0;
    char *out = malloc(cap), sec[64] = "";
    if (!out) return NULL;
    out[0] = 0;
    for (const char *p = ini; *p;) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        char line[512];
        snprintf(line, sizeof line, "%.*s", (int)(len < sizeof line - 1 ? len : sizeof line - 1), p);
        p += len + (e ? 1 : 0);
        char *c = strpbrk(line, ";#");
        if (c) *c = 0;
        char *s = line;
        while (*s == ' ' || *s == '\t') s++;
        if (*s == '[') {
            char *r = strchr(s, ']');
            if (r) *r = 0;
            snprintf(sec, sizeof sec, "%s", s + 1);
            continue;
        }
        char *eq = strchr(s, '=');
        if (!eq) continue;
        char *ke = eq;
        while (ke > s && (ke[-1] == ' ' || ke[-1] == '\t')) ke--;
        *ke = 0;
        char *v = eq + 1;
        while (*v == ' ' || *v == '\t') v++;
        size_t vl = strlen(v);
        while (vl && (v[vl - 1] == ' ' || v[vl - 1] == '\t' || v[vl - 1] == '\r')) v[--vl] = 0;
        if (!*s) continue;
        int seed = !strcmp(sec, "train") && !strcmp(s, "seed");
        if (runset_key_ignored(sec, s) && !(keep_seed && seed)) continue;
        if (rs_axis_frees(ax, sec, s)) continue;
        k += (size_t)snprintf(out + k, cap - k, "%s.%s=%s\n", sec, s, v);
        if (k >= cap) { /* cannot happen: a line never grows by more than its section */
            out[cap - 1] = 0;
            break;
        }
    }
    return out;
}

/* rs_fingerprint of the config's identity text (manifest_identity_text: the
 * late keys at their default left out), so a run registered before a late key
 * existed reads the same as one written after with the key at its default:
 * the sweep's run identity and the group and partner rules are one rule. */
static char *rs_identity_fingerprint(const char *ini, int keep_seed, int ax) {
    char *id = manifest_identity_text(ini ? ini : "");
    if (!id) return NULL;
    char *fp = rs_fingerprint(id, keep_seed, ax);
    free(id);
    return fp;
}

char *runset_group_key(const char *ini) { return rs_identity_fingerprint(ini, 0, -1); }

int runset_same_group(const runset_run *a, const runset_run *b) {
    return a->group && b->group && !strcmp(a->group, b->group);
}

int runset_param(const runset_run *r, const char *key, char *out, size_t n) {
    out[0] = 0;
    if (!r->config) return 0;
    const char *dot = strchr(key, '.');
    if (!dot) return 0;
    char want_sec[64], want_key[96];
    snprintf(want_sec, sizeof want_sec, "%.*s", (int)(dot - key), key);
    snprintf(want_key, sizeof want_key, "%s", dot + 1);
    char *fp = rs_fingerprint(r->config, 1, -1); /* normalised lines; log.* and cadence are not typed params */
    if (!fp) return 0;
    char pat[200];
    snprintf(pat, sizeof pat, "%s.%s=", want_sec, want_key);
    size_t pl = strlen(pat);
    int found = 0;
    for (const char *p = fp; *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : p + strlen(p))
        if (!strncmp(p, pat, pl)) {
            const char *e = strchr(p + pl, '\n');
            snprintf(out, n, "%.*s", (int)(e ? e - (p + pl) : (long)strlen(p + pl)), p + pl);
            found = 1;
            break;
        }
    free(fp);
    return found;
}

int runset_param_or_default(const runset_run *r, const char *key, char *out, size_t n) {
    if (runset_param(r, key, out, n)) return 1;
    static char *dflt; /* the defaults' canonical text, made once */
    if (!dflt) {
        gl_manifest mf;
        manifest_defaults(&mf);
        dflt = manifest_to_ini(&mf);
        if (!dflt) return 0;
    }
    runset_run d = {0};
    d.config = dflt;
    return runset_param(&d, key, out, n);
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

static long rs_long(const runset_run *r, const char *key) {
    char v[64];
    return runset_param(r, key, v, sizeof v) ? atol(v) : 0;
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
        const struct {
            const char *key, *dflt;
            char *dst;
        } want[] = {{"model.value_residual", "none", r->value_residual},
                    {"model.depth_routing", "none", r->depth_routing},
                    {"model.cross_layer", "none", r->cross_layer}};
        for (size_t k = 0; k < sizeof want / sizeof want[0]; k++)
            if (!runset_param(r, want[k].key, want[k].dst, sizeof r->value_residual))
                snprintf(want[k].dst, sizeof r->value_residual, "%s", want[k].dflt);
        r->steps = rs_long(r, "train.steps");
        r->batch = rs_long(r, "train.batch_size");
        r->seq_len = rs_long(r, "model.seq_len");
        r->n_layer = rs_long(r, "model.n_layer");
        r->n_kv_head = rs_long(r, "model.n_kv_head");
        if (rs_metrics(db, r, err, errlen)) goto fail;
    }
    free(t);
    return 0;
fail:
    free(t);
    runset_free(rs);
    return -1;
}
