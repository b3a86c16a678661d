/*
 * cmd_seeds.c — `gatelab analyze --seeds RUN1,RUN2,… [--windows N] [--out DIR]`
 * (analysis/measure/seeds.h): for every pair of runs, Spearman's ρ of their head
 * profiles (heads sorted within each block) and, for TSA, the Jaccard overlap
 * of their halted (position, block) sets, all on the same validation
 * windows.  Prints both matrices' pairs and their means and writes
 * seeds.tsv into DIR (default: the first run's analysis folder).  The runs
 * must share the model's shape and gates; a pair with the same train.seed is
 * flagged (it is not a seed comparison).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/core/report.h"
#include "analysis/measure/seeds.h"
#include "cmd_seeds.h"
#include "resolve.h"
#include "store/fileio.h"
#include "store/data.h"
#include "store/rundir.h"

#define SD_MAX_RUNS 32

/* seeds.tsv's first line: the output rule replaces only a file that starts with it. */
#define SEEDS_HEADER "run_a\trun_b\tseed_a\tseed_b\tprofile_rho\thalted_jaccard\n"
static int seeds_is_own(const char *path) { return fileio_starts_with(path, SEEDS_HEADER); }

int analyze_seeds(const char *list, const char *results, long windows, const char *out_dir, char *err, size_t errlen) {
    static gl_run run;
    static seeds_run sr[SD_MAX_RUNS];
    static char ids[SD_MAX_RUNS][160], dirs[SD_MAX_RUNS][GL_PATH_MAX];
    uint64_t seed[SD_MAX_RUNS];
    gl_model_config cfg0 = {0};
    int n = 0, rc = -1;
    FILE *f = NULL;
    fileio_out out = {.f = NULL}; /* seeds.tsv through the output rule (fileio.h) */
    char buf[4096], path[GL_PATH_MAX + 64];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *s = strtok(buf, ","); s; s = strtok(NULL, ",")) {
        if (n == SD_MAX_RUNS) {
            snprintf(err, errlen, "--seeds: at most %d runs", SD_MAX_RUNS);
            goto done;
        }
        resolve_run rr;
        if (resolve_run_arg(s, NULL, results, RESOLVE_DIR, &rr, err, errlen) ||
            run_open(&run, rr.dir, NULL, 1, err, errlen))
            goto done;
        snprintf(ids[n], sizeof ids[n], "%s", rr.id);
        snprintf(dirs[n], sizeof dirs[n], "%s", rr.dir);
        const gl_model_config *c = &run.model.cfg;
        if (n == 0) cfg0 = *c;
        else if (c->n_layer != cfg0.n_layer || c->n_kv_head != cfg0.n_kv_head || c->value_residual != cfg0.value_residual ||
                 c->depth_routing != cfg0.depth_routing || c->seq_len != cfg0.seq_len) {
            snprintf(err, errlen, "--seeds: run %s is not the configuration of %s but for the seed (n_layer, n_kv_head, "
                     "value_residual, depth_routing, seq_len must match)", ids[n], ids[0]);
            run_close(&run);
            goto done;
        }
        seed[n] = run.mf.train.seed;
        gl_dataset ds;
        if (data_open_tok(&ds, &run.mf.data, run.model.cfg.seq_len, run.mf.train.seed,
                          run.st.tokenizer == TOK_BPE ? &run.st.bpe : NULL, err, errlen)) {
            run_close(&run);
            goto done;
        }
        int bad = seeds_measure(&run.model, &ds, windows, &sr[n], err, errlen);
        data_close(&ds);
        run_close(&run);
        if (bad) goto done;
        n++;
    }
    if (n < 2) {
        snprintf(err, errlen, "--seeds: give at least two runs, comma-separated (got %d)", n);
        goto done;
    }
    if (!sr[0].n_prof && !sr[0].halted) {
        snprintf(err, errlen, "--seeds: the runs have no per-head gate and no router (nothing to compare)");
        goto done;
    }
    char dir[GL_PATH_MAX + 16];
    if (out_dir) snprintf(dir, sizeof dir, "%s", out_dir);
    else snprintf(dir, sizeof dir, "%s/analysis", dirs[0]);
    if (fileio_mkdir_p(dir, err, errlen)) goto done;
    snprintf(path, sizeof path, "%s/seeds.tsv", dir);
    if (fileio_begin_own(&out, path, "seed table", seeds_is_own, err, errlen)) goto done;
    f = out.f;
    fprintf(f, SEEDS_HEADER);
    printf("gatelab analyze --seeds: %d runs on val[0,%ld) (%ld positions each)\n", n, sr[0].windows, sr[0].n_pos);
    printf("  %-24s %-24s %12s %15s\n", "run a", "run b", "profile ρ", "halted Jaccard");
    double sr_sum = 0, sj_sum = 0;
    int kr = 0, kj = 0;
    for (int a = 0; a < n; a++)
        for (int b = a + 1; b < n; b++) {
            const double rho = seeds_profile_rho(&sr[a], &sr[b]), jac = seeds_jaccard(&sr[a], &sr[b]);
            printf("  %-24s %-24s %12.4f %15.4f%s\n", ids[a], ids[b], rho, jac,
                   seed[a] == seed[b] ? "   (same train.seed: not a seed comparison)" : "");
            fprintf(f, "%s\t%s\t%llu\t%llu\t%.9g\t%.9g\n", ids[a], ids[b], (unsigned long long)seed[a],
                    (unsigned long long)seed[b], rho, jac);
            if (!isnan(rho)) sr_sum += rho, kr++;
            if (!isnan(jac)) sj_sum += jac, kj++;
        }
    printf("  mean over %d pairs: profile ρ %.4f, halted Jaccard %.4f\n  %s\n", n * (n - 1) / 2,
           kr ? sr_sum / kr : NAN, kj ? sj_sum / kj : NAN, path);
    f = NULL;
    rc = fileio_commit(&out, "seed table", err, errlen);
done:
    fileio_abort(&out);
    for (int i = 0; i < n; i++) seeds_run_free(&sr[i]);
    return rc;
}
