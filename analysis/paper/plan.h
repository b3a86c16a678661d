/*
 * plan.h — a paper preset's plan (experiments/paper/PRESET.plan): one sweep
 * per line, "GROUP MANIFEST CLAIMS sweep-arguments…"; '#' starts a comment
 * line, blank lines are skipped.  Lines may be of any length.  Read by
 * `gatelab paper report` (analysis/paper/paper.c); scripts/paper.sh runs the lines.
 */
#ifndef GATELAB_ANALYSIS_PAPER_PLAN_H
#define GATELAB_ANALYSIS_PAPER_PLAN_H

#include <stddef.h>

#define PLAN_GROUP_MAX 63    /* bytes of GROUP: letters, digits, '_', '-' (experiment paper-GROUP) */
#define PLAN_MANIFEST_MAX 127
#define PLAN_CLAIM_MAX 99    /* claims are numbers 1..PLAN_CLAIM_MAX, lists "3,5" and ranges "9-12" */

typedef struct {
    int line;                            /* 1-based line number in the file */
    char group[PLAN_GROUP_MAX + 1];
    char manifest[PLAN_MANIFEST_MAX + 1];
    char claims[64];                     /* as written, e.g. "3,5,6" or "9-12" */
    unsigned char claim[PLAN_CLAIM_MAX + 1]; /* claim[id] = 1 when the line lists claim id */
    const char *args;                    /* the sweep arguments (rest of the line, trimmed; may be "") */
} plan_line;

typedef struct {
    plan_line *lines;
    int n;
    char *text; /* the file's text, NUL at each line end: args point into it */
} paper_plan;

/* Parse n bytes of plan text (need not be NUL-terminated; a NUL byte inside is
 * an error) named path in messages.  Every line that is not blank or a
 * comment must hold GROUP MANIFEST CLAIMS; a plan without one such line is an
 * error.  Returns 0 with *out filled (free with plan_free), or -1 with a
 * message naming path and line. */
int plan_parse(const char *text, size_t n, const char *path, paper_plan *out, char *err, size_t errlen);

/* plan_parse of the file at path, which must be a regular file (a folder, a
 * FIFO or a missing file is an error naming it). */
int plan_read(const char *path, paper_plan *out, char *err, size_t errlen);

void plan_free(paper_plan *p); /* accepts a zeroed or freed plan */

#endif
