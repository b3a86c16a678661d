/*
 * cmd_export.c — `gatelab export RUN --out FILE.h5 [--results DIR]`: opens the
 * run's checkpoint and hands the model to export_model (store/export.c).
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "store/export.h"
#include "store/rundir.h"

static void export_usage(FILE *out) {
    fprintf(out, "usage: gatelab export RUN --out FILE.h5 [--results DIR]\n"
                 "  Write every parameter of RUN (a run id or run folder) as a float32 dataset named\n"
                 "  by the tensor table, the vocabulary and the config as attributes.\n");
}

int cmd_export(int argc, char **argv) {
    const char *run = NULL, *out = NULL, *results = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            export_usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--out") || !strcmp(argv[i], "-o")) {
            if (++i >= argc) {
                fprintf(stderr, "gatelab export: --out needs a file name\n");
                export_usage(stderr);
                return 2;
            }
            out = argv[i];
        } else if (!strncmp(argv[i], "--out=", 6)) {
            out = argv[i] + 6;
        } else if (!strcmp(argv[i], "--results")) {
            if (++i >= argc) {
                fprintf(stderr, "gatelab export: --results needs a folder\n");
                return 2;
            }
            results = argv[i];
        } else if (!strncmp(argv[i], "--results=", 10)) {
            results = argv[i] + 10;
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "gatelab export: unknown option '%s'\n", argv[i]);
            export_usage(stderr);
            return 2;
        } else if (!run) {
            run = argv[i];
        } else {
            fprintf(stderr, "gatelab export: one RUN only ('%s' and '%s' given)\n", run, argv[i]);
            return 2;
        }
    }
    if (!run || !out) {
        fprintf(stderr, "gatelab export: %s\n", !run ? "RUN is missing" : "--out FILE.h5 is missing");
        export_usage(stderr);
        return 2;
    }
    char err[2048] = "";
    gl_run r;
    if (run_open(&r, run, results, 1, err, sizeof err) != 0) {
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
