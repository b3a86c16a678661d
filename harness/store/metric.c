/*
 * metric.c — build and read the metric keys of metric.h.
 *
 * The analyses (analyze, ablate, heads) write keys into the registry and the
 * readers (tables, figures, paper) read their parts back; both sides call
 * this file, so a key cannot be written in one shape and read in another.
 * A key is built as (name, canonical JSON params) and stored as it is built:
 * nothing joins the parameters into the name to take them out again.
 * metric_label writes the one-string label people and claim plans read.
 *
 * What it does not do: talk to the registry (registry.c stores the rows), or
 * know which statistics or interventions exist (the analyses choose their
 * tokens; this file only checks and places them).  Reading params is strict:
 * the canonical key order, digits without sign or space, no trailing text,
 * categories by their exact names.
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

/* A text that sits inside a JSON string without escapes: no '"', '\\' or
 * control character (UTF-8 passes as it is). */
static int metric_json_plain(const char *s) {
    for (; *s; s++)
        if (*s == '"' || *s == '\\' || (unsigned char)*s < 0x20) return 0;
    return 1;
}

/* A run id token: letters, digits, '_', '-', '+'. */
static int metric_json_safe(const char *s) {
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_' ||
              *s == '-' || *s == '+'))
            return 0;
    return 1;
}

/* An empty key, and -1 (every builder's refusal). */
static int metric_refuse(metric_key *k) {
    k->name[0] = k->params[0] = 0;
    return -1;
}

/* Append ,"category":"<name>" (or the first key) and the closing brace to
 * the params being written in k; cat METRIC_NONE adds only the brace. */
static int metric_close(metric_key *k, int cat) {
    size_t len = strlen(k->params);
    const char *sep = len > 1 ? "," : "";
    int rc = cat == METRIC_NONE ? metric_print(k->params + len, sizeof k->params - len, "}")
                                : metric_print(k->params + len, sizeof k->params - len, "%s\"category\":\"%s\"}",
                                               sep, cat_name(cat));
    return rc ? metric_refuse(k) : 0;
}

int metric_plain(metric_key *k, const char *name) {
    if (!name || !*name || metric_print(k->name, sizeof k->name, "%s", name)) return metric_refuse(k);
    snprintf(k->params, sizeof k->params, "{}");
    return 0;
}

/* k->name = "<a>.<b>" of two tokens, params opened with "{". */
static int metric_pair(metric_key *k, const char *a, const char *b) {
    if (!metric_token_ok(a) || !metric_token_ok(b) || metric_print(k->name, sizeof k->name, "%s.%s", a, b))
        return metric_refuse(k);
    snprintf(k->params, sizeof k->params, "{");
    return 0;
}

/* ---- statistics ---- */

int metric_stat(metric_key *k, const char *stat, int layer, int head, int cat) {
    if (!metric_token_ok(stat) || layer < METRIC_NONE || head < METRIC_NONE || cat < METRIC_NONE ||
        cat >= CAT_COUNT || (head != METRIC_NONE && layer == METRIC_NONE) ||
        metric_print(k->name, sizeof k->name, "%s", stat))
        return metric_refuse(k);
    if (layer != METRIC_NONE && head != METRIC_NONE)
        snprintf(k->params, sizeof k->params, "{\"layer\":%d,\"head\":%d", layer, head);
    else if (layer != METRIC_NONE) snprintf(k->params, sizeof k->params, "{\"layer\":%d", layer);
    else snprintf(k->params, sizeof k->params, "{");
    return metric_close(k, cat);
}

/* ---- interventions and early exit ---- */

int metric_ablation(metric_key *k, const char *mode, const char *label, const char *quantity, int cat) {
    if (!metric_token_ok(label) || !metric_json_plain(label) || cat < METRIC_NONE || cat >= CAT_COUNT ||
        metric_pair(k, mode, quantity) ||
        metric_print(k->params, sizeof k->params, "{\"gates\":\"%s\"", label))
        return metric_refuse(k);
    return metric_close(k, cat);
}

int metric_tau_mode(const char *mode) {
    return mode && (!strcmp(mode, METRIC_EXIT_MODE) || !strcmp(mode, METRIC_POSTHOC_MODE));
}

int metric_exit_mode(metric_key *k, const char *mode, double tau, const char *quantity, int cat) {
    if (!metric_tau_mode(mode) || (!isnan(tau) && (!isfinite(tau) || fabs(tau) >= 1e6)) || cat < METRIC_NONE ||
        cat >= CAT_COUNT || metric_pair(k, mode, quantity))
        return metric_refuse(k);
    if (isnan(tau)) snprintf(k->params, sizeof k->params, "{\"tau\":null");
    else snprintf(k->params, sizeof k->params, "{\"tau\":%.3f", tau);
    return metric_close(k, cat);
}

int metric_exit(metric_key *k, double tau, const char *quantity, int cat) {
    return metric_exit_mode(k, METRIC_EXIT_MODE, tau, quantity, cat);
}

/* ---- paired analyses ---- */

int metric_partner(metric_key *k, const char *family, const char *partner, unsigned long seed,
                   const char *quantity) {
    if (!metric_token_ok(partner) || !metric_json_safe(partner) || seed > 4294967295UL ||
        metric_pair(k, family, quantity) ||
        metric_print(k->params, sizeof k->params, "{\"partner\":\"%s\",\"seed\":%lu}", partner, seed))
        return metric_refuse(k);
    return 0;
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

int metric_headline(metric_key *k, const char *kind, const char *quantity) {
    if (!kind ||
        (strcmp(kind, METRIC_FINAL) && strcmp(kind, METRIC_HARD) && strcmp(kind, METRIC_HARD_PAPER) &&
         strcmp(kind, METRIC_MATCHED) && strcmp(kind, METRIC_MATCHED_PAPER)) ||
        metric_pair(k, kind, quantity))
        return metric_refuse(k);
    snprintf(k->params, sizeof k->params, "{}");
    return 0;
}

int metric_headline_parse(const metric_key *k, const char *kind, char *quantity, size_t qn) {
    size_t n = strlen(kind);
    const char *q = k->name + n + 1;
    if (strcmp(k->params, "{}") || strncmp(k->name, kind, n) || k->name[n] != '.' || !metric_token_ok(q) ||
        strlen(q) >= qn)
        return 0;
    snprintf(quantity, qn, "%s", q);
    return 1;
}

/* ---- reading params ----
 *
 * The params this file writes, read back in their canonical key order (each
 * key optional); anything else does not parse. */

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
    if (!s || *s++ != '{') return 0;
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
            if (end == p || !isfinite(mp->tau)) return 0;
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
    return p[0] == '}' && p[1] == 0 && (mp->head == METRIC_NONE || mp->layer != METRIC_NONE);
}

/* Split a two-token name <a>.<b> into a and b: 1, or 0. */
static int metric_name_pair(const char *name, char *a, size_t an, char *b, size_t bn) {
    const char *p = metric_take(name, a, an);
    if (!p || *p != '.' || !(p = metric_take(p + 1, b, bn)) || *p) return 0;
    return 1;
}

int metric_stat_parse(const metric_key *k, const char *stat, int *layer, int *head, int *cat) {
    metric_params mp;
    *layer = *head = *cat = METRIC_NONE;
    if (strcmp(k->name, stat) || !metric_params_parse(k->params, &mp) || mp.gates[0] || mp.has_tau ||
        mp.partner[0])
        return 0;
    *layer = mp.layer, *head = mp.head, *cat = mp.cat;
    return 1;
}

int metric_ablation_parse(const metric_key *k, metric_ablation_key *a) {
    metric_params mp;
    memset(a, 0, sizeof *a);
    a->cat = METRIC_NONE;
    a->tau = NAN;
    if (!metric_name_pair(k->name, a->mode, sizeof a->mode, a->quantity, sizeof a->quantity) ||
        !metric_params_parse(k->params, &mp) || mp.layer != METRIC_NONE || mp.partner[0])
        return 0;
    if (mp.has_tau && metric_tau_mode(a->mode) && !mp.gates[0]) {
        a->tau = mp.tau;
        if (isnan(mp.tau)) snprintf(a->label, sizeof a->label, "full");
        else snprintf(a->label, sizeof a->label, "tau%.3f", mp.tau);
    } else if (mp.gates[0] && !mp.has_tau) snprintf(a->label, sizeof a->label, "%s", mp.gates);
    else return 0;
    a->cat = mp.cat;
    return 1;
}

int metric_ablation_sibling(metric_key *k, const metric_ablation_key *a, const char *quantity, int cat) {
    if (metric_tau_mode(a->mode) && (!isnan(a->tau) || !strcmp(a->label, "full")))
        return metric_exit_mode(k, a->mode, a->tau, quantity, cat);
    return metric_ablation(k, a->mode, a->label, quantity, cat);
}

/* ---- labels ---- */

/* The label of (name, params), or -1 (out untouched) when params is not ours. */
static int metric_label_of(const char *name, const char *params, char *out, size_t n) {
    metric_params mp;
    char mode[32], quantity[32], lh[32] = "", cs[48];
    if (!params || !*params || !strcmp(params, "{}")) return metric_print(out, n, "%s", name);
    if (!metric_params_parse(params, &mp)) return -1;
    const char *csuf = metric_cat_suffix(mp.cat, cs, sizeof cs);
    if (!mp.gates[0] && !mp.has_tau && !mp.partner[0]) {
        if (mp.layer != METRIC_NONE && mp.head != METRIC_NONE) snprintf(lh, sizeof lh, ".L%d.H%d", mp.layer, mp.head);
        else if (mp.layer != METRIC_NONE) snprintf(lh, sizeof lh, ".L%d", mp.layer);
        return metric_print(out, n, "%s%s%s", name, lh, csuf);
    }
    if (!metric_name_pair(name, mode, sizeof mode, quantity, sizeof quantity)) return -1;
    if (mp.partner[0]) return metric_print(out, n, "%s.%s.seed%ld.%s", mode, mp.partner, mp.seed, quantity);
    if (mp.has_tau && isnan(mp.tau)) return metric_print(out, n, "%s.full.%s%s", mode, quantity, csuf);
    if (mp.has_tau) return metric_print(out, n, "%s.tau%.3f.%s%s", mode, mp.tau, quantity, csuf);
    return metric_print(out, n, "%s.%s.%s%s", mode, mp.gates, quantity, csuf);
}

int metric_label(const char *name, const char *params, char *out, size_t n) {
    if (!metric_label_of(name, params, out, n)) return 0;
    if (n) snprintf(out, n, "%s %s", name, params ? params : "");
    return -1;
}
