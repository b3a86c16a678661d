/*
 * cmd_attrib.c — `gatelab heads RUN --attribution` (analysis/measure/attrib.h): the
 * first-order estimate of zeroing every gate, from one backward pass per
 * batch, printed beside the exact ΔL with their Spearman rank correlation;
 * attribution.tsv (per site) and attribution_tokens.tsv (per evaluation
 * position) into the analysis folder, and with --json one JSON line.
 * cmd_heads (cmd_ablate.c) opens the run and calls this.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/measure/attrib.h"
#include "cmd_attrib.h"
#include "analysis/core/report.h"
#include "model/gatekind.h"
#include "jsonl.h"
#include "store/fileio.h"

/* Order of sites by exact ΔL, largest first (ties: gate-table order). */
/* The two tables' first lines: the output rule replaces only a file that
 * starts with its own (never a file a planted link or a typo points at). */
#define CA_SITES_HEADER "site\tgate\trow\tcol\texact_delta_loss\texact_se\tattribution\n"
#define CA_TOKENS_HEADER "window\tposition\ttoken\tattribution\n"
static int ca_is_sites(const char *path) { return fileio_starts_with(path, CA_SITES_HEADER); }
static int ca_is_tokens(const char *path) { return fileio_starts_with(path, CA_TOKENS_HEADER); }

static const attrib_result *ca_sort_r;
static int ca_cmp(const void *a, const void *b) {
    const attrib_site *x = &ca_sort_r->sites[*(const int *)a], *y = &ca_sort_r->sites[*(const int *)b];
    if (x->exact != y->exact) return x->exact < y->exact ? 1 : -1;
    return *(const int *)a - *(const int *)b;
}

int cmd_heads_attribution(ablate_ctx *c, const char *run_id, const char *run_dir, const char *out_dir, int json,
                          char *err, size_t errlen) {
    attrib_result r;
    int rc = -1, *order = NULL;
    FILE *f = NULL;
    fileio_out out = {.f = NULL}; /* every table through the output rule (fileio.h) */
    char path[4200];
    if (attrib_run(c, &r, err, errlen)) return -1;
    if (!(order = malloc((size_t)r.n * sizeof(int)))) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }
    for (int i = 0; i < r.n; i++) order[i] = i;
    ca_sort_r = &r;
    qsort(order, (size_t)r.n, sizeof(int), ca_cmp);
    printf("gatelab heads --attribution: run %s | %d sites | evaluation %s (%.0f tokens), loss %.6f nats/token\n\n",
           run_id, r.n, c->eval_desc, r.tokens, r.base_loss);
    printf("| rank | site | exact ΔL (nats) | ± SE | first-order ΔL (nats) | rank of first-order |\n");
    printf("| ---: | --- | ---: | ---: | ---: | ---: |\n");
    for (int i = 0; i < r.n; i++) {
        const attrib_site *s = &r.sites[order[i]];
        int ra = 1;
        for (int j = 0; j < r.n; j++) ra += r.sites[j].attrib > s->attrib;
        char label[32];
        attrib_site_label(s, label, sizeof label);
        printf("| %d | %s | %.6g | %.2g | %.6g | %d |\n", i + 1, label, s->exact, s->exact_se, s->attrib, ra);
    }
    printf("\nSpearman rank correlation of the first-order estimate and the exact ΔL: %.4f over %d sites\n", r.rho, r.n);
    /* per token: the positions whose gates the estimate finds matter most */
    long top[10];
    int nt = 0;
    for (int k = 0; k < 10; k++) {
        long best = -1;
        for (long i = 0; i < r.positions; i++) {
            int used = 0;
            for (int q = 0; q < nt; q++) used |= top[q] == i;
            if (!used && (best < 0 || fabsf(r.tok[i]) > fabsf(r.tok[best]))) best = i;
        }
        if (best >= 0) top[nt++] = best;
    }
    printf("largest per-token estimates (Σ over sites, nats): ");
    for (int q = 0; q < nt; q++)
        printf("%s%s[%ld]@%ld %.3g", q ? ", " : "", data_split_name(c->eval_split),
               c->eval_first + top[q] / c->m->T, top[q] % c->m->T, r.tok[top[q]]);
    printf("\n");

    if (fileio_mkdir_p(out_dir, err, errlen)) goto done;
    snprintf(path, sizeof path, "%s/attribution.tsv", out_dir);
    if (fileio_begin_own(&out, path, "attribution table", ca_is_sites, err, errlen)) goto done;
    f = out.f;
    fprintf(f, "%s", CA_SITES_HEADER);
    for (int i = 0; i < r.n; i++) {
        const attrib_site *s = &r.sites[i];
        char label[32];
        attrib_site_label(s, label, sizeof label);
        fprintf(f, "%s\t%s\t%d\t%d\t%.9g\t%.6g\t%.9g\n", label, gatekind_info[s->gate].key, s->row, s->col, s->exact,
                s->exact_se, s->attrib);
    }
    f = NULL;
    if (fileio_commit(&out, "attribution table", err, errlen)) goto done;
    snprintf(path, sizeof path, "%s/attribution_tokens.tsv", out_dir);
    if (fileio_begin_own(&out, path, "attribution table", ca_is_tokens, err, errlen)) goto done;
    f = out.f;
    fprintf(f, "%s", CA_TOKENS_HEADER);
    for (long i = 0; i < r.positions; i++)
        fprintf(f, "%ld\t%ld\t%d\t%.6g\n", c->eval_first + i / c->m->T, i % c->m->T, r.tok_id[i], r.tok[i]);
    f = NULL;
    if (fileio_commit(&out, "attribution table", err, errlen)) goto done;
    f = NULL;
    printf("files: %s/attribution.tsv, attribution_tokens.tsv\n", out_dir);
    if (json) {
        json_t *o = jsonl_run(run_id, run_dir), *arr = json_array();
        jsonl_set(o, "eval", jsonl_str(c->eval_desc));
        jsonl_set(o, "tokens", jsonl_count(r.tokens));
        jsonl_set(o, "base_loss", jsonl_num(r.base_loss));
        jsonl_set(o, "spearman", jsonl_num(r.rho));
        for (int i = 0; i < r.n; i++) {
            const attrib_site *s = &r.sites[order[i]];
            char label[32];
            attrib_site_label(s, label, sizeof label);
            json_t *g = json_object();
            jsonl_set(g, "site", jsonl_str(label));
            jsonl_set(g, "exact", jsonl_num(s->exact));
            jsonl_set(g, "attribution", jsonl_num(s->attrib));
            json_array_append_new(arr, g);
        }
        jsonl_set(o, "sites", arr);
        if (jsonl_print(stdout, o)) {
            snprintf(err, errlen, "cannot write the JSON line to stdout");
            goto done;
        }
    }
    rc = 0;
    goto done;
done:
    fileio_abort(&out);
    free(order);
    attrib_free(&r);
    return rc;
}
