/*
 * cmd_export.c — `gatelab export RUN --out FILE.h5 [--results DIR]`: opens the
 * run's checkpoint and hands the model to export_model (store/export.c).
 */
#include <stdio.h>
#include <string.h>

#include "args.h"
#include "cli.h"
#include "resolve.h"
#include "store/export.h"
#include "store/rundir.h"

static const args_opt export_opts[] = {
    {"out", 'o', "FILE.h5", "the HDF5 file to write (required)"},
    {"results", ARGS_KEY(0), "DIR", "results folder that holds runs/<RUN> (default $GATELAB_RESULTS or results)"},
    {0}};
const args_spec export_spec = {
    "export", "RUN --out FILE.h5 [options]",
    "Write every parameter of RUN (a run id, a unique prefix of one, or a run folder) as a float32 dataset named by the tensor table,\n"
    "the vocabulary and the config as attributes.",
    export_opts};

int cmd_export(int argc, char **argv) {
    const char *run = NULL, *out = NULL, *results = NULL;
    args_parser p;
    args_begin(&p, &export_spec, argc, argv);
    for (int k; (k = args_next(&p)) != ARGS_END;) {
        if (k < 0) return args_exit_code(k);
        if (k == ARGS_POS && run) return args_usage_error(&export_spec, "one RUN only ('%s' and '%s' given)", run, p.val);
        if (k == ARGS_POS) run = p.val;
        else if (k == 'o') out = p.val;
        else if (k == ARGS_KEY(0)) results = p.val;
    }
    if (!run || !out) return args_usage_error(&export_spec, "%s", !run ? "RUN is missing" : "--out FILE.h5 is missing");
    char err[2048] = "";
    gl_run r;
    resolve_run rr;
    memset(&r, 0, sizeof r);
    if (resolve_run_arg(run, NULL, results, RESOLVE_DIR, &rr, err, sizeof err) ||
        run_open(&r, rr.dir, NULL, 1, err, sizeof err) != 0) {
        fprintf(stderr, "gatelab export: %s\n", err);
        run_close(&r);
        return 1;
    }
    int rc = 0;
    if (export_model(out, &r.model, &r.st, r.config_ini, err, sizeof err) != 0) {
        fprintf(stderr, "gatelab export: %s\n", err);
        rc = 1;
    } else {
        printf("exported %d tensors (%zu parameters, step %ld) of %s to %s\n", r.model.n_tensors,
               r.model.n_params, r.st.step, r.dir, out);
    }
    run_close(&r);
    return rc;
}
