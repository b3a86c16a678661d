/*
 * cmd_import.c — `gatelab import FILE.h5 --out RUN_DIR [--experiment NAME]
 * [--db PATH]`: reads an HDF5 file in the export layout (import_read), makes
 * the new run folder RUN_DIR (import_claim_dir), finds its registry as every
 * RUN argument does (resolve.h: <RUN_DIR>/../../gatelab.db, or --db) and
 * writes the run there (import_write).  The work is in store/import.c.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "cli.h"
#include "resolve.h"
#include "run/sweep.h"
#include "store/import.h"

static const args_opt import_opts[] = {
    {"out", 'o', "RUN_DIR", "the new run folder, <results>/runs/<id> (required; must not exist)"},
    {"experiment", ARGS_KEY(0), "NAME", "the registry's experiment of the run (default import)"},
    {"db", ARGS_KEY(1), "PATH", "the registry (default: gatelab.db of the results folder holding RUN_DIR)"},
    {0}};
const args_spec import_spec = {
    "import", "FILE.h5 --out RUN_DIR [options]",
    "Make a run from an HDF5 file in the export layout (docs/files.md \"Export\"): the model is built from the file's\n"
    "config attribute, every tensor is loaded by name (a missing, extra or mis-shaped one is refused, named), the\n"
    "checkpoint and config.ini are written to RUN_DIR and the run is registered FINISHED.",
    import_opts};

int cmd_import(int argc, char **argv) {
    const char *file = NULL, *out = NULL, *experiment = "import", *db = NULL;
    args_parser p;
    args_begin(&p, &import_spec, argc, argv);
    for (int k; (k = args_next(&p)) != ARGS_END;) {
        if (k < 0) return args_exit_code(k);
        if (k == ARGS_POS && file) return args_usage_error(&import_spec, "one FILE.h5 only ('%s' and '%s' given)", file, p.val);
        if (k == ARGS_POS) file = p.val;
        else if (k == 'o') out = p.val;
        else if (k == ARGS_KEY(0)) experiment = p.val;
        else if (k == ARGS_KEY(1)) db = p.val;
    }
    if (!file || !out) return args_usage_error(&import_spec, "%s", !file ? "FILE.h5 is missing" : "--out RUN_DIR is missing");
    char err[2048] = "", dir[GL_PATH_MAX + 2], hash[65], assign[300];
    static gl_import im; /* large (the tokenizer's merges): not on the stack */
    snprintf(assign, sizeof assign, "log.experiment=%s", experiment); /* the manifest's rule for the name */
    manifest_defaults(&im.mf);
    if (strlen(experiment) > 128 || manifest_set(&im.mf, assign, "--experiment", 0, err, sizeof err))
        return args_usage_error(&import_spec, "--experiment '%.128s': %s", experiment, err[0] ? err : "too long");
    resolve_run rr;
    if (import_read(&im, file, err, sizeof err)) {
        fprintf(stderr, "gatelab import: %s\n", err);
        return 1;
    }
    /* a path with a '/' is a run folder to the resolver, wherever it is */
    snprintf(dir, sizeof dir, "%s%s", strchr(out, '/') ? "" : "./", out);
    int rc = 1, claimed = 0;
    if (import_claim_dir(dir, err, sizeof err)) goto cleanup;
    claimed = 1;
    if (resolve_run_arg(dir, db, NULL, RESOLVE_DIR, &rr, err, sizeof err)) goto cleanup;
    if (rr.in_db) {
        snprintf(err, sizeof err, "run %s is already in the registry %s; choose another --out (the folder's name is "
                 "the run id)", rr.id, rr.db);
        goto cleanup;
    }
    sweep_config_hash(im.config_ini, hash);
    import_dest d = {rr.dir, rr.id, rr.db, experiment, hash};
    if (import_write(&im, &d, err, sizeof err)) goto cleanup;
    printf("imported %d tensors (%zu parameters, step %ld) from %s into %s: run %s (experiment %s) in %s\n",
           im.model.n_tensors, im.model.n_params, im.st.step, file, rr.dir, rr.id, experiment, rr.db);
    rc = 0;
cleanup:
    if (rc) {
        fprintf(stderr, "gatelab import: %s\n", err);
        if (claimed) rmdir(dir); /* empty: import_write removes what it wrote */
    }
    import_free(&im);
    return rc;
}
