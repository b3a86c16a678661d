/*
 * fuzz_plan.c — libFuzzer target for the paper plan reader (analysis/paper/plan.c):
 * any bytes either parse or fail with a message naming the file.  A parsed
 * plan holds at least one line; every line's group is 1-63 bytes of
 * [A-Za-z0-9_-], unique, its claims within 1..99 and at least one, its line
 * number increasing, and its sweep arguments a string inside the plan's text.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/paper/plan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 1 << 16) return 0;
    paper_plan p;
    char err[512] = "";
    if (plan_parse((const char *)data, size, "fuzz.plan", &p, err, sizeof err) != 0) {
        if (!err[0] || !strstr(err, "fuzz.plan") || p.lines || p.text || p.n) abort();
        return 0;
    }
    if (p.n < 1 || !p.text) abort();
    for (int i = 0; i < p.n; i++) {
        const plan_line *l = &p.lines[i];
        size_t g = strlen(l->group);
        if (!g || g > PLAN_GROUP_MAX || strspn(l->group, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != g)
            abort();
        if (!l->manifest[0] || strlen(l->manifest) > PLAN_MANIFEST_MAX || !l->claims[0]) abort();
        int claims = 0;
        for (int c = 0; c <= PLAN_CLAIM_MAX; c++) claims += l->claim[c];
        if (!claims || l->claim[0]) abort();
        if (i && l->line <= p.lines[i - 1].line) abort();
        for (int j = 0; j < i; j++)
            if (!strcmp(p.lines[j].group, l->group)) abort();
        if (!l->args || l->args < p.text || l->args > p.text + size) abort();
    }
    plan_free(&p);
    return 0;
}
