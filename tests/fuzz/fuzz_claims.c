/*
 * fuzz_claims.c — libFuzzer target for the claims-file reader
 * (analysis/paper/claims.c claims_parse).  Beyond "no crash, no UB, no leak", it
 * checks the contract: a success holds at least one row, every row with an
 * id, a claim, a paper text and a known quantity, and a side of expect
 * (above, below, within or none);
 * a failure says why, naming the file; no key twice in a section is
 * accepted; a filled-in pilot leaves no @pilot in runs or versus; a paper
 * value times its scale is finite (issue 45 item 8).  Seed corpus:
 * tests/fuzz/claims/ (the real experiments/paper/claims.ini, a small file,
 * and one file per refusal of item 8).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/paper/claims.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 1 << 16) return 0;
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = 0;
    claims_file cf;
    char err[512] = "";
    int rc = claims_parse(text, "fuzz.ini", &cf, err, sizeof err);
    if (rc == 0) {
        if (cf.n < 1) abort();
        for (int i = 0; i < cf.n; i++) {
            const claims_row *r = &cf.rows[i];
            if (!r->id[0] || !r->claim[0] || !r->paper[0] || !r->quantity[0]) abort();
            if (strcmp(r->expect, "none") && strcmp(r->expect, "above") && strcmp(r->expect, "below") &&
                strcmp(r->expect, "within"))
                abort();
            char out[CLAIMS_TEXT];
            if (r->pilot[0] && !strstr(r->pilot, "@pilot") &&
                (claims_pilot_subst(r->runs, r->pilot, out, sizeof out) ||
                 claims_pilot_subst(r->versus, r->pilot, out, sizeof out)))
                abort();
            if (!isnan(r->paper_value) && !isfinite(r->paper_value * r->scale)) abort();
        }
        claims_free(&cf);
    } else if (rc != -1 || strncmp(err, "fuzz.ini", 8) || cf.rows) {
        abort();
    }
    free(text);
    return 0;
}
