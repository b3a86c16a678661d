/*
 * plan.c — reading a paper preset's plan (contract in plan.h).
 *
 * The whole file is read into memory and split at newlines, so a line is as
 * long as it is (the report once read lines into 1,024-byte buffers, and a
 * longer line became two, the second parsed as a plan line of its own).
 * Each entry is checked when read: GROUP (the experiment is paper-GROUP),
 * MANIFEST, and CLAIMS as numbers and ranges; anything else is an error
 * naming the line, never a line skipped in silence.
 *
 * Not here: running the sweeps (scripts/paper.sh), or judging the claims
 * (analysis/paper/paper.c).
 */
#include "analysis/paper/plan.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/fileio.h"

/* The next word of *p (spaces and tabs between words), NUL-terminated in
 * place; NULL at the end of the line. */
static char *plan_word(char **p) {
    char *s = *p + strspn(*p, " \t\r");
    if (!*s) return NULL;
    char *e = s + strcspn(s, " \t\r");
    if (*e) *e++ = '\0';
    *p = e;
    return s;
}

/* CLAIMS "3,5,9-12" into l->claim; 0, or -1 with why. */
static int plan_claims(plan_line *l, const char *cl, char *why, size_t whylen) {
    const char *s = cl;
    for (;;) {
        char *end;
        long a = strtol(s, &end, 10), b = a;
        if (end == s || a < 1 || a > PLAN_CLAIM_MAX) goto bad;
        s = end;
        if (*s == '-') {
            const char *t = s + 1;
            b = strtol(t, &end, 10);
            if (end == t || b < a || b > PLAN_CLAIM_MAX) goto bad;
            s = end;
        }
        for (long i = a; i <= b; i++) l->claim[i] = 1;
        if (!*s) return 0;
        if (*s != ',') goto bad;
        s++;
    }
bad:
    snprintf(why, whylen, "claims '%s': write claim numbers 1 to %d, comma-separated, ranges as 9-12", cl,
             PLAN_CLAIM_MAX);
    return -1;
}

static int plan_group_ok(const char *g) {
    size_t n = strlen(g);
    if (!n || n > PLAN_GROUP_MAX) return 0;
    for (; *g; g++)
        if (!((*g >= 'a' && *g <= 'z') || (*g >= 'A' && *g <= 'Z') || (*g >= '0' && *g <= '9') || *g == '_' ||
              *g == '-'))
            return 0;
    return 1;
}

int plan_parse(const char *text, size_t n, const char *path, paper_plan *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    if (memchr(text, '\0', n)) {
        snprintf(err, errlen, "%s: holds a NUL byte (at byte %zu): not a plan", path,
                 (size_t)((const char *)memchr(text, '\0', n) - text) + 1);
        return -1;
    }
    out->text = malloc(n + 1);
    size_t cap = 1;
    for (size_t i = 0; i < n; i++) cap += text[i] == '\n';
    out->lines = calloc(cap, sizeof *out->lines);
    if (!out->text || !out->lines) {
        snprintf(err, errlen, "%s: out of memory reading the plan", path);
        goto fail;
    }
    memcpy(out->text, text, n);
    out->text[n] = '\0';
    int lineno = 0;
    for (char *line = out->text; line;) {
        char *nl = strchr(line, '\n');
        if (nl) *nl = '\0';
        lineno++;
        char *p = line, *first = line + strspn(line, " \t\r");
        if (*first && *first != '#') {
            plan_line *l = &out->lines[out->n];
            char *g = plan_word(&p), *m = plan_word(&p), *c = plan_word(&p), why[256];
            l->line = lineno;
            if (!g || !m || !c) {
                snprintf(err, errlen, "%s, line %d: write GROUP MANIFEST CLAIMS [sweep arguments]", path, lineno);
                goto fail;
            }
            if (!plan_group_ok(g)) {
                snprintf(err, errlen, "%s, line %d: group '%.80s': use 1-%d letters, digits, '_' or '-'", path, lineno,
                         g, PLAN_GROUP_MAX);
                goto fail;
            }
            if (strlen(m) > PLAN_MANIFEST_MAX || strlen(c) >= sizeof l->claims) {
                snprintf(err, errlen, "%s, line %d: the manifest (at most %d bytes) or the claims (at most %zu) are too "
                         "long", path, lineno, PLAN_MANIFEST_MAX, sizeof l->claims - 1);
                goto fail;
            }
            if (plan_claims(l, c, why, sizeof why)) {
                snprintf(err, errlen, "%s, line %d: %s", path, lineno, why);
                goto fail;
            }
            for (int i = 0; i < out->n; i++)
                if (!strcmp(out->lines[i].group, g)) {
                    snprintf(err, errlen, "%s, line %d: group %s again (first on line %d): each group is one "
                             "experiment, paper-%s", path, lineno, g, out->lines[i].line, g);
                    goto fail;
                }
            strcpy(l->group, g);
            strcpy(l->manifest, m);
            strcpy(l->claims, c);
            p += strspn(p, " \t\r");
            size_t k = strlen(p);
            while (k && (p[k - 1] == ' ' || p[k - 1] == '\t' || p[k - 1] == '\r')) p[--k] = '\0';
            l->args = p;
            out->n++;
        }
        line = nl ? nl + 1 : NULL;
    }
    if (!out->n) {
        snprintf(err, errlen, "%s: the plan lists no group (only comments or blank lines): a report of it would "
                 "judge nothing", path);
        goto fail;
    }
    return 0;
fail:
    plan_free(out);
    return -1;
}

int plan_read(const char *path, paper_plan *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    size_t n;
    char *buf = fileio_slurp(path, "plan", (size_t)64 << 20, &n, err, errlen);
    if (!buf) return -1;
    int rc = plan_parse(buf, n, path, out, err, errlen);
    free(buf);
    return rc;
}

void plan_free(paper_plan *p) {
    if (!p) return;
    free(p->lines);
    free(p->text);
    memset(p, 0, sizeof *p);
}
