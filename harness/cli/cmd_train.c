/*
 * cmd_train.c — `gatelab train MANIFEST [section.key=value ...] [--resume RUN]
 * [--run-id ID] [--db PATH] [--results DIR] [--quiet] [--allow-config-change]`.
 * Parses the command line, loads the manifest with its overrides, runs
 * train_run and maps the outcome to the exit code (0 finished, 1 failed,
 * 2 bad usage or manifest, 3 killed by a signal).
 *
 * Under mpirun or srun (build/gatelab-mpi) every rank runs this; the ranks
 * start and end here (dist_init / dist_finalize), and a message every rank
 * shares is printed by rank 0 alone.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "store/manifest.h"
#include "run/dist.h"
#include "run/train.h"

#define TRAIN_RUN_ID_MAX 159 /* run_ctx.run_id in run/train.c holds 160 bytes */

int cmd_train(int argc, char **argv) {
    const char *manifest = NULL;
    gl_train_opts o = {0};
    char *over[256];
    int n_over = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has_val = i + 1 < argc;
        if (!strcmp(a, "--resume") && has_val) o.resume = argv[++i];
        else if (!strcmp(a, "--run-id") && has_val) o.run_id = argv[++i];
        else if (!strcmp(a, "--db") && has_val) o.db_path = argv[++i];
        else if (!strcmp(a, "--results") && has_val) o.results = argv[++i];
        else if (!strcmp(a, "--quiet")) o.quiet = 1;
        else if (!strcmp(a, "--allow-config-change")) o.allow_config_change = 1;
        else if (a[0] == '-' && a[1] == '-') {
            fprintf(stderr, "gatelab train: unknown or incomplete option '%s'\n", a);
            return 2;
        } else if (strchr(a, '=')) {
            if (n_over == 256) {
                fprintf(stderr, "gatelab train: too many overrides\n");
                return 2;
            }
            over[n_over++] = argv[i];
        } else if (!manifest) manifest = a;
        else {
            fprintf(stderr, "gatelab train: unexpected argument '%s' (overrides look like section.key=value)\n", a);
            return 2;
        }
    }
    /* run ids name a folder and a registry row; a longer one would be cut short silently */
    const char *ids[2] = {o.run_id, o.resume};
    for (int k = 0; k < 2; k++) {
        if (ids[k] && (!*ids[k] || strlen(ids[k]) > TRAIN_RUN_ID_MAX)) {
            fprintf(stderr, "gatelab train: %s '%.40s%s': a run id is 1 to %d characters (this one has %zu)\n",
                    k ? "--resume" : "--run-id", ids[k], strlen(ids[k]) > 40 ? "…" : "", TRAIN_RUN_ID_MAX,
                    strlen(ids[k]));
            return 2;
        }
    }
    if (!manifest) {
        fprintf(stderr, "usage: gatelab train MANIFEST [section.key=value ...] [--resume RUN] [--run-id ID] "
                        "[--db PATH] [--results DIR] [--quiet] [--allow-config-change]\n");
        return 2;
    }
    static gl_manifest mf;
    char err[2048];
    if (dist_init(NULL, NULL, err, sizeof err)) {
        fprintf(stderr, "gatelab train: %s\n", err);
        return 1;
    }
    int rc;
    /* the ranks agree on the manifest: {rank 0 failed, any rank failed}; a
     * rank's own message is printed unless rank 0 prints the same one */
    int bad = manifest_load(&mf, manifest, n_over, over, err, sizeof err) != 0;
    int v[2] = {dist_rank() == 0 && bad, bad};
    dist_max_ints(v, 2);
    if (v[1]) {
        if (bad && dist_rank() == 0) fprintf(stderr, "gatelab train: %s\n", err);
        else if (bad && !v[0]) fprintf(stderr, "gatelab train: rank %d: %s\n", dist_rank(), err);
        rc = 2;
    } else {
        gl_train_outcome r = train_run(&mf, &o, err, sizeof err);
        if (r != TRAIN_FINISHED && err[0]) fprintf(stderr, "gatelab train: %s\n", err);
        rc = (int)r;
    }
    dist_finalize();
    return rc;
}
