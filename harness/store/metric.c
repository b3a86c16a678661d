/*
 * metric.c — build and parse the structured metric names of metric.h.
 *
 * The analyses (analyze, ablate, heads) write these names into the registry
 * and the readers (tables, figures) take them apart again; both sides call
 * this file, so a name cannot be written in one shape and read in another.
 *
 * It also gives a name's stored form (metric_split / metric_unsplit): the
 * registry keeps the parameters of a name (layer, head, gates, τ, category)
 * as a canonical JSON text beside the bare quantity, and puts the name back
 * together for every reader; a name is only taken apart when it comes back
 * whole, so a name this file did not write is stored as it is.
 *
 * What it does not do: talk to the registry (registry.c stores the rows), or
 * know which statistics or interventions exist (the analyses choose their
 * tokens; this file only joins and splits them).  Parsing is strict: digits
 * without sign or space, no trailing text, categories by their exact names.
 */
#include "metric.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "categories.h"

/* ---- small helpers ---- */

/* A token: non-empty, no '.'. */
static int metric_token_ok(const char *s) { return s && *s && !strchr(s, '.'); }

/* snprintf that refuses to truncate: 0, or -1 with out = "". */
static int metric_print(char *out, size_t n, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(out, n, fmt, ap);
    va_end(ap);
    if (k < 0 || (size_t)k >= n) {
        if (n) out[0] = 0;
        return -1;
    }
    return 0;
}

/* The category code whose name is s, or METRIC_NONE. */
static int metric_cat_code(const char *s) {
    for (int c = 0; c < CAT_COUNT; c++)
        if (!strcmp(s, cat_name(c))) return c;
    return METRIC_NONE;
}

/* ".<category>" or "" (cat METRIC_NONE); NULL for a code out of range. */
static const char *metric_cat_suffix(int cat, char *buf, size_t n) {
    if (cat == METRIC_NONE) return "";
    if (cat < 0 || cat >= CAT_COUNT) return NULL;
    snprintf(buf, n, ".%s", cat_name(cat));
    return buf;
}

/* Read an unsigned decimal at *s (digits only, at most 6); advances *s.
 * Returns the value, or -1 when no digit is there. */
static int metric_uint(const char **s) {
    const char *p = *s;
    long v = 0;
    int k = 0;
    while (*p >= '0' && *p <= '9' && k < 6) v = v * 10 + (*p++ - '0'), k++;
    if (!k || (*p >= '0' && *p <= '9')) return -1;
    *s = p;
    return (int)v;
}

/* Copy the token at s up to the next '.' (or the end) into out; returns the
 * position after it (at the '.' or the end), or NULL if empty or too long. */
static const char *metric_take(const char *s, char *out, size_t n) {
    size_t k = strcspn(s, ".");
    if (!k || k >= n) return NULL;
    memcpy(out, s, k);
    out[k] = 0;
    return s + k;
}

/* ---- statistics ---- */

int metric_stat(char *out, size_t n, const char *stat, int layer, int head, int cat) {
    char lh[32] = "", cs[48];
    const char *csuf = metric_cat_suffix(cat, cs, sizeof cs);
    if (!metric_token_ok(stat) || !csuf || layer < METRIC_NONE || head < METRIC_NONE ||
        (head != METRIC_NONE && layer == METRIC_NONE)) {
        if (n) out[0] = 0;
        return -1;
    }
    if (layer != METRIC_NONE && head != METRIC_NONE) snprintf(lh, sizeof lh, ".L%d.H%d", layer, head);
    else if (layer != METRIC_NONE) snprintf(lh, sizeof lh, ".L%d", layer);
    return metric_print(out, n, "%s%s%s", stat, lh, csuf);
}

int metric_stat_parse(const char *name, const char *stat, int *layer, int *head, int *cat) {
    size_t sl = strlen(stat);
    *layer = *head = *cat = METRIC_NONE;
    if (!sl || strncmp(name, stat, sl)) return 0;
    const char *p = name + sl;
    if (!strncmp(p, ".L", 2) && p[2] >= '0' && p[2] <= '9') {
        p += 2;
        if ((*layer = metric_uint(&p)) < 0) return 0;
        if (!strncmp(p, ".H", 2) && p[2] >= '0' && p[2] <= '9') {
            p += 2;
            if ((*head = metric_uint(&p)) < 0) return 0;
        }
    }
    if (*p == 0) return 1;
    if (*p != '.') return 0;
    *cat = metric_cat_code(p + 1);
    return *cat != METRIC_NONE;
}

/* ---- interventions and early exit ---- */

/* mode.label.quantity[.cat] with the label checked by the caller. */
static int metric_join(char *out, size_t n, const char *mode, const char *label, const char *quantity, int cat) {
    char cs[48];
    const char *csuf = metric_cat_suffix(cat, cs, sizeof cs);
    if (!metric_token_ok(mode) || !label || !*label || !metric_token_ok(quantity) || !csuf) {
        if (n) out[0] = 0;
        return -1;
    }
    return metric_print(out, n, "%s.%s.%s%s", mode, label, quantity, csuf);
}

int metric_ablation(char *out, size_t n, const char *mode, const char *label, const char *quantity, int cat) {
    if (!metric_token_ok(label)) {
        if (n) out[0] = 0;
        return -1;
    }
    return metric_join(out, n, mode, label, quantity, cat);
}

int metric_tau_mode(const char *mode) {
    return mode && (!strcmp(mode, METRIC_EXIT_MODE) || !strcmp(mode, METRIC_POSTHOC_MODE));
}

int metric_exit_mode(char *out, size_t n, const char *mode, double tau, const char *quantity, int cat) {
    char label[40];
    if (!metric_tau_mode(mode)) {
        if (n) out[0] = 0;
        return -1;
    }
    if (isnan(tau)) snprintf(label, sizeof label, "full");
    else if (!isfinite(tau) || fabs(tau) >= 1e6) {
        if (n) out[0] = 0;
        return -1;
    } else snprintf(label, sizeof label, "tau%.3f", tau);
    return metric_join(out, n, mode, label, quantity, cat);
}

int metric_exit(char *out, size_t n, double tau, const char *quantity, int cat) {
    return metric_exit_mode(out, n, METRIC_EXIT_MODE, tau, quantity, cat);
}

/* The early-exit label at p ("tau<number>" or a plain token) into k; returns
 * the position after it, or NULL. */
static const char *metric_exit_label(const char *p, metric_ablation_key *k) {
    if (strncmp(p, "tau", 3)) return metric_take(p, k->label, sizeof k->label);
    char *end = NULL;
    double tau = strtod(p + 3, &end);
    if (end == p + 3 || (*end != '.' && *end != 0) || !isfinite(tau)) return NULL;
    size_t len = (size_t)(end - p);
    if (len >= sizeof k->label) return NULL;
    memcpy(k->label, p, len);
    k->label[len] = 0;
    k->tau = tau;
    return end;
}

int metric_ablation_parse(const char *name, metric_ablation_key *k) {
    memset(k, 0, sizeof *k);
    k->cat = METRIC_NONE;
    k->tau = NAN;
    const char *p = metric_take(name, k->mode, sizeof k->mode);
    if (!p || *p != '.') return 0;
    p++;
    p = metric_tau_mode(k->mode) ? metric_exit_label(p, k) : metric_take(p, k->label, sizeof k->label);
    if (!p || *p != '.') return 0;
    p = metric_take(p + 1, k->quantity, sizeof k->quantity);
    if (!p) return 0;
    if (*p == 0) return 1;
    k->cat = metric_cat_code(p + 1);
    return k->cat != METRIC_NONE;
}

int metric_ablation_sibling(char *out, size_t n, const metric_ablation_key *k, const char *quantity, int cat) {
    int exit_tau = metric_tau_mode(k->mode) && !isnan(k->tau);
    if (!exit_tau && !metric_token_ok(k->label)) {
        if (n) out[0] = 0;
        return -1;
    }
    return metric_join(out, n, k->mode, k->label, quantity, cat);
}

/* ---- paired analyses ---- */

/* A token safe inside a JSON string without escapes: letters, digits, '_', '-', '+'. */
static int metric_json_safe(const char *s);

int metric_partner(char *out, size_t n, const char *family, const char *partner, unsigned long seed,
                   const char *quantity) {
    if (!metric_token_ok(family) || !metric_token_ok(partner) || !metric_json_safe(partner) ||
        !metric_token_ok(quantity) || seed > 4294967295UL) {
        if (n) out[0] = 0;
        return -1;
    }
    return metric_print(out, n, "%s.%s.seed%lu.%s", family, partner, seed, quantity);
}

/* Parse family.partner.seed<N>.quantity (family METRIC_DIFFICULTY): 1, or 0. */
static int metric_partner_parse(const char *name, char *family, size_t fn, char *partner, size_t pn, long *seed,
                                char *quantity, size_t qn) {
    const char *p = metric_take(name, family, fn);
    if (!p || *p != '.' || strcmp(family, METRIC_DIFFICULTY)) return 0;
    if (!(p = metric_take(p + 1, partner, pn)) || *p != '.' || !metric_json_safe(partner)) return 0;
    p++;
    if (strncmp(p, "seed", 4)) return 0;
    p += 4;
    long v = 0;
    int k = 0;
    while (*p >= '0' && *p <= '9' && k < 10) v = v * 10 + (*p++ - '0'), k++;
    if (!k || *p != '.' || v > 4294967295L) return 0;
    if (!(p = metric_take(p + 1, quantity, qn)) || *p) return 0;
    *seed = v;
    return 1;
}

/* ---- gate labels ---- */

int metric_label_gate(char *out, size_t n, int layer, int head) {
    if (layer < 0 || head < METRIC_NONE) {
        if (n) out[0] = 0;
        return -1;
    }
    if (head == METRIC_NONE) return metric_print(out, n, "L%d", layer);
    return metric_print(out, n, "L%dH%d", layer, head);
}

int metric_label_gate_parse(const char *label, int *layer, int *head) {
    const char *p = label;
    *layer = *head = METRIC_NONE;
    if (*p++ != 'L' || (*layer = metric_uint(&p)) < 0) return 0;
    if (*p == 0) return 1;
    if (*p++ != 'H' || (*head = metric_uint(&p)) < 0 || *p) {
        *layer = *head = METRIC_NONE;
        return 0;
    }
    return 1;
}

/* ---- headline ---- */

int metric_headline(char *out, size_t n, const char *kind, const char *quantity) {
    if (n) out[0] = 0;
    if (!kind || (strcmp(kind, METRIC_FINAL) && strcmp(kind, METRIC_HARD) && strcmp(kind, METRIC_MATCHED)) ||
        !metric_token_ok(quantity))
        return -1;
    return metric_print(out, n, "%s.%s", kind, quantity);
}

int metric_headline_parse(const char *name, const char *kind, char *quantity, size_t qn) {
    size_t k = strlen(kind);
    if (strncmp(name, kind, k) || name[k] != '.' || !metric_token_ok(name + k + 1) || strlen(name + k + 1) >= qn)
        return 0;
    snprintf(quantity, qn, "%s", name + k + 1);
    return 1;
}

/* ---- stored form: a base name and its parameters as data ----
 *
 * The registry stores a structured name as (base, params): the base names
 * the quantity, the params are canonical JSON with a fixed key order, so
 * equal parameters are equal text and a reader can match them with "=".
 * metric_split only takes a name apart when metric_unsplit gives the same
 * name back; anything else is kept whole with "{}", so no name is lost. */

/* Append the JSON form of key:value (ival used when sval is NULL) to out. */
static int metric_json_add(char *out, size_t n, const char *key, const char *sval, int ival) {
    size_t len = strlen(out);
    const char *sep = len > 1 ? "," : "";
    if (sval) return metric_print(out + len, n - len, "%s\"%s\":\"%s\"", sep, key, sval);
    return metric_print(out + len, n - len, "%s\"%s\":%d", sep, key, ival);
}

/* A token safe inside a JSON string without escapes: letters, digits, '_', '-', '+'. */
static int metric_json_safe(const char *s) {
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_' ||
              *s == '-' || *s == '+'))
            return 0;
    return 1;
}

/* The params of a statistic name, or -1 when name is not one. */
static int metric_split_stat(const char *name, char *base, size_t bn, char *params, size_t pn) {
    char stat[METRIC_NAME_MAX];
    int layer, head, cat;
    if (!metric_take(name, stat, sizeof stat) || !metric_stat_parse(name, stat, &layer, &head, &cat)) return -1;
    if (metric_print(base, bn, "%s", stat) || metric_print(params, pn, "{")) return -1;
    if (layer != METRIC_NONE && metric_json_add(params, pn, "layer", NULL, layer)) return -1;
    if (head != METRIC_NONE && metric_json_add(params, pn, "head", NULL, head)) return -1;
    if (cat != METRIC_NONE && metric_json_add(params, pn, "category", cat_name(cat), 0)) return -1;
    size_t len = strlen(params);
    return metric_print(params + len, pn - len, "}");
}

/* The params of an intervention or early-exit name, or -1 when name is not one. */
static int metric_split_ablation(const char *name, char *base, size_t bn, char *params, size_t pn) {
    metric_ablation_key k;
    if (!metric_ablation_parse(name, &k)) return -1;
    if (metric_print(base, bn, "%s.%s", k.mode, k.quantity)) return -1;
    int rc;
    if (metric_tau_mode(k.mode) && !isnan(k.tau)) rc = metric_print(params, pn, "{\"tau\":%.3f", k.tau);
    else if (metric_tau_mode(k.mode) && !strcmp(k.label, "full")) rc = metric_print(params, pn, "{\"tau\":null");
    else if (metric_json_safe(k.label)) rc = metric_print(params, pn, "{\"gates\":\"%s\"", k.label);
    else return -1;
    if (rc || (k.cat != METRIC_NONE && metric_json_add(params, pn, "category", cat_name(k.cat), 0))) return -1;
    size_t len = strlen(params);
    return metric_print(params + len, pn - len, "}");
}

/* The params of a paired-analysis name, or -1 when name is not one. */
static int metric_split_partner(const char *name, char *base, size_t bn, char *params, size_t pn) {
    char family[32], partner[METRIC_NAME_MAX], quantity[32];
    long seed;
    if (!metric_partner_parse(name, family, sizeof family, partner, sizeof partner, &seed, quantity, sizeof quantity))
        return -1;
    if (metric_print(base, bn, "%s.%s", family, quantity)) return -1;
    return metric_print(params, pn, "{\"partner\":\"%s\",\"seed\":%ld}", partner, seed);
}

int metric_split(const char *split, const char *name, char *base, size_t bn, char *params, size_t pn) {
    char back[METRIC_NAME_MAX];
    int rc = -1;
    if (split && !strcmp(split, "analysis")) {
        rc = metric_split_partner(name, base, bn, params, pn);
        if (rc) rc = metric_split_stat(name, base, bn, params, pn);
    }
    else if (split && !strcmp(split, "ablation")) rc = metric_split_ablation(name, base, bn, params, pn);
    if (!rc && (metric_unsplit(base, params, back, sizeof back) || strcmp(back, name))) rc = -1;
    if (!rc) return 0;
    if (metric_print(base, bn, "%s", name) || metric_print(params, pn, "{}")) return -1;
    return 0;
}

/* Read "key": at *p (after '{' or ','); advances past the ':'. */
static int metric_json_key(const char **p, const char *key) {
    size_t k = strlen(key);
    if ((*p)[0] != '"' || strncmp(*p + 1, key, k) || (*p)[k + 1] != '"' || (*p)[k + 2] != ':') return 0;
    *p += k + 3;
    return 1;
}

/* Read a "string" at *p into out (no escapes: the writer never needs them). */
static int metric_json_str(const char **p, char *out, size_t n) {
    if (**p != '"') return 0;
    const char *e = strchr(*p + 1, '"');
    if (!e || (size_t)(e - *p - 1) >= n) return 0;
    memcpy(out, *p + 1, (size_t)(e - *p - 1));
    out[e - *p - 1] = 0;
    *p = e + 1;
    return 1;
}

/* The params text parsed (keys in the canonical order, each optional). */
typedef struct {
    int layer, head, cat, has_tau;
    double tau;
    char gates[64];
    char partner[METRIC_NAME_MAX];
    long seed;
} metric_params;

static int metric_params_parse(const char *s, metric_params *mp) {
    char cat[32];
    mp->layer = mp->head = mp->cat = METRIC_NONE;
    mp->has_tau = 0;
    mp->tau = NAN;
    mp->gates[0] = 0;
    mp->partner[0] = 0;
    mp->seed = -1;
    if (*s++ != '{') return 0;
    const char *p = s;
    if (metric_json_key(&p, "layer") && (mp->layer = metric_uint(&p)) >= 0 && *p == ',') p++;
    if (metric_json_key(&p, "head") && (mp->head = metric_uint(&p)) >= 0 && *p == ',') p++;
    if (metric_json_key(&p, "gates") && metric_json_str(&p, mp->gates, sizeof mp->gates) && *p == ',') p++;
    if (metric_json_key(&p, "tau")) {
        mp->has_tau = 1;
        if (!strncmp(p, "null", 4)) p += 4;
        else {
            char *end = NULL;
            mp->tau = strtod(p, &end);
            if (end == p) return 0;
            p = end;
        }
        if (*p == ',') p++;
    }
    if (metric_json_key(&p, "category")) {
        if (!metric_json_str(&p, cat, sizeof cat) || (mp->cat = metric_cat_code(cat)) == METRIC_NONE) return 0;
        if (*p == ',') p++;
    }
    if (metric_json_key(&p, "partner")) {
        if (!metric_json_str(&p, mp->partner, sizeof mp->partner) || *p != ',') return 0;
        p++;
        if (!metric_json_key(&p, "seed")) return 0;
        char *end = NULL;
        mp->seed = strtol(p, &end, 10);
        if (end == p || mp->seed < 0) return 0;
        p = end;
    }
    return p[0] == '}' && p[1] == 0;
}

int metric_unsplit(const char *base, const char *params, char *out, size_t n) {
    metric_params mp;
    char mode[32], quantity[32];
    if (!params || !*params || !strcmp(params, "{}")) return metric_print(out, n, "%s", base);
    if (!metric_params_parse(params, &mp)) {
        if (n) out[0] = 0;
        return -1;
    }
    if (!mp.gates[0] && !mp.has_tau && !mp.partner[0]) return metric_stat(out, n, base, mp.layer, mp.head, mp.cat);
    const char *p = metric_take(base, mode, sizeof mode);
    if (!p || *p != '.' || !(p = metric_take(p + 1, quantity, sizeof quantity)) || *p) {
        if (n) out[0] = 0;
        return -1;
    }
    if (mp.partner[0]) return metric_partner(out, n, mode, mp.partner, (unsigned long)mp.seed, quantity);
    if (mp.has_tau) return metric_exit_mode(out, n, mode, mp.tau, quantity, mp.cat);
    return metric_ablation(out, n, mode, mp.gates, quantity, mp.cat);
}
