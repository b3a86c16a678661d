/*
 * cmd_train.c — `gatelab train MANIFEST [section.key=value ...] [--resume RUN]
 * [--run-id ID] [--db PATH] [--results DIR] [--quiet] [--allow-config-change]`.
 * Parses the command line, loads the manifest with its overrides, runs
 * train_run and maps the outcome to the exit code (0 finished, 1 failed,
 * 2 bad usage or manifest, 3 killed by a signal).
 *
 * --resume RUN takes any run reference (resolve.h: an id, a unique prefix,
 * a run folder).  Without a MANIFEST the run's own config.ini is the
 * manifest (overrides still apply on top of it and are compared with it, as
 * a MANIFEST would be); the run continues in the results folder that holds
 * it, with that folder's registry unless --db says otherwise.
 *
 * Under mpirun or srun (build/gatelab-mpi) every rank runs this; the ranks
 * start and end here (dist_init / dist_finalize), and a message every rank
 * shares is printed by rank 0 alone.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/registry.h"
#include "args.h"
#include "cli.h"
#include "resolve.h"
#include "store/manifest.h"
#include "store/rundir.h"
#include "run/dist.h"
#include "run/train.h"


static const args_opt train_opts[] = {
    {"resume", ARGS_KEY(0), "RUN", "continue RUN bit for bit from its checkpoint (MANIFEST: its config.ini by default)"},
    {"run-id", ARGS_KEY(1), "ID", "the new run's id (default: log.name or the manifest's name, UTC time and process id)"},
    {"db", ARGS_KEY(2), "PATH", "registry (default <results>/gatelab.db)"},
    {"results", ARGS_KEY(3), "DIR", "results folder (default $GATELAB_RESULTS, else the manifest's log.results)"},
    {"quiet", ARGS_KEY(4), NULL, "no progress lines on the terminal (train.log still has them)"},
    {"allow-config-change", ARGS_KEY(5), NULL, "--resume even though the configuration changed (recorded)"},
    {0}};
const args_spec train_spec = {
    "train", "MANIFEST [section.key=value ...] [options] | --resume RUN [section.key=value ...] [options]",
    "Train one run of MANIFEST (an INI file, docs/manifest.md); section.key=value overrides a key.\n"
    "Exit 0 finished, 1 failed, 2 bad usage or manifest, 3 killed by a signal (resume it with --resume).",
    train_opts};

#define TRAIN_MAX_OVERRIDES 256

int cmd_train(int argc, char **argv) {
    const char *manifest = NULL;
    gl_train_opts o = {0};
    char *over[TRAIN_MAX_OVERRIDES];
    int n_over = 0;
    args_parser p;
    args_begin(&p, &train_spec, argc, argv);
    for (int k; (k = args_next(&p)) != ARGS_END;) {
        if (k < 0) return args_exit_code(k);
        switch (k) {
        case ARGS_POS:
            if (strchr(p.val, '=')) {
                if (n_over == TRAIN_MAX_OVERRIDES)
                    return args_usage_error(&train_spec, "more than %d overrides", TRAIN_MAX_OVERRIDES);
                over[n_over++] = (char *)p.val;
            } else if (!manifest) manifest = p.val;
            else return args_usage_error(&train_spec, "unexpected argument '%s' (overrides look like section.key=value)",
                                         p.val);
            break;
        case ARGS_KEY(0): o.resume = p.val; break;
        case ARGS_KEY(1): o.run_id = p.val; break;
        case ARGS_KEY(2): o.db_path = p.val; break;
        case ARGS_KEY(3): o.results = p.val; break;
        case ARGS_KEY(4): o.quiet = 1; break;
        case ARGS_KEY(5): o.allow_config_change = 1; break;
        }
    }
    /* run ids name a folder and a registry row; a longer one would be cut short silently */
    char why[256];
    if (o.run_id && db_run_id_check(o.run_id, why, sizeof why)) {
        fprintf(stderr, "gatelab train: --run-id: %s (docs/registry.md, \"Run ids\")\n", why);
        return 2;
    }
    if (o.resume && (!*o.resume || strlen(o.resume) > GL_PATH_MAX - 64)) {
        fprintf(stderr, "gatelab train: --resume '%.40s…': give a run id or a run folder\n", o.resume);
        return 2;
    }
    if (!manifest && !o.resume) return args_usage_error(&train_spec, "MANIFEST is missing");
    static gl_manifest mf;
    char err[2048], cfg[GL_PATH_MAX + 16];
    static resolve_run rr;
    if (dist_init(NULL, NULL, err, sizeof err)) {
        fprintf(stderr, "gatelab train: %s\n", err);
        return 1;
    }
    int rc;
    /* the ranks agree on the manifest: {rank 0 failed, any rank failed}; a
     * rank's own message is printed unless rank 0 prints the same one */
    int bad = 0;
    if (o.resume && !manifest) { /* the run's own configuration: find the run first */
        bad = resolve_run_arg(o.resume, o.db_path, o.results, RESOLVE_DIR, &rr, err, sizeof err) != 0;
        if (!bad) {
            snprintf(cfg, sizeof cfg, "%s/%s", rr.dir, RUN_CONFIG);
            manifest = cfg;
        }
    }
    bad = bad || manifest_load(&mf, manifest, n_over, over, err, sizeof err) != 0;
    if (!bad && o.resume && manifest != cfg) { /* a MANIFEST beside it: its log.results is the default */
        const char *res = o.results ? o.results : getenv("GATELAB_RESULTS") ? getenv("GATELAB_RESULTS") : mf.log.results;
        bad = resolve_run_arg(o.resume, o.db_path, res, RESOLVE_DIR, &rr, err, sizeof err) != 0;
    }
    if (!bad && o.resume) { /* the folder found, and the results folder (so the registry) that holds it */
        o.resume = rr.dir;
        o.results = rr.results;
    }
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
