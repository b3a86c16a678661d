/*
 * cmd_sweep.c — `gatelab sweep` (run a manifest's grid, resumably) and
 * `gatelab collect` (merge per-task registries into the main one): the flags,
 * their checks and the --dry-run listing.  The work is below:
 * harness/run/sweep.c expands the grid, harness/run/sweep_pool.c registers,
 * claims and runs it (fork/exec, signals, resume; --index exec's one run in
 * place, a Slurm array task), harness/run/slurm.c writes the sbatch array
 * script (--emit-slurm), store/registry.c merges (collect).
 *
 * Data-parallel runs (docs/mpi.md): --launcher "CMD ARGS" starts each
 * training as `CMD ARGS <this binary>-mpi train …` (e.g. "srun
 * --kill-on-bad-exit=1" or "mpirun -np 4"; the words are split at spaces, no
 * shell quoting); --emit-slurm with --nodes N and/or --ntasks-per-node K
 * gives each array task N×K ranks and writes that launcher with srun.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cli.h"
#include "store/registry.h"
#include "run/slurm.h"
#include "run/sweep.h"
#include "run/sweep_pool.h"

#define SWEEP_MAX_JOBS 256

static const args_opt sweep_opts[] = {
    {"jobs", 'j', "N", "trainings at once (default 1; -j4 works too)"},
    {"dry-run", ARGS_KEY(0), NULL, "print the grid (index, run id, overrides) and stop"},
    {"index", ARGS_KEY(1), "I", "run only run I of the grid, in this process (a Slurm array task)"},
    {"emit-slurm", ARGS_KEY(2), "FILE", "write an sbatch array script for the grid and stop"},
    {"db", ARGS_KEY(3), "PATH", "registry (default <results>/gatelab.db)"},
    {"results", ARGS_KEY(4), "DIR", "results folder (default: the manifest's log.results, else results)"},
    {"stale", ARGS_KEY(5), "SECONDS", "a RUNNING run silent this long is taken over (default 1800)"},
    {"retry-failed", ARGS_KEY(6), NULL, "run FAILED runs again (otherwise they are left as they are)"},
    {"launcher", ARGS_KEY(7), "\"CMD ARGS\"", "run each training data-parallel as CMD ARGS <binary>-mpi train … (srun, mpirun -np N)"},
    {"nodes", ARGS_KEY(8), "N", "with --emit-slurm: nodes per array task (ranks launched with srun)"},
    {"ntasks-per-node", ARGS_KEY(9), "K", "with --emit-slurm: ranks per node"},
    {"axis", ARGS_KEY(10), "KEY=A,B", "a new axis of the grid (a list on a key that is not a [sweep] axis is an error)"},
    {"time", ARGS_KEY(11), "T", "with --emit-slurm: #SBATCH --time (minutes, H:MM:SS or D-HH:MM:SS)"},
    {"mem", ARGS_KEY(12), "M", "with --emit-slurm: #SBATCH --mem (e.g. 8G)"},
    {"partition", ARGS_KEY(13), "P", "with --emit-slurm: #SBATCH --partition"},
    {0}};
const args_spec sweep_spec = {
    "sweep", "MANIFEST [key=value | key=a,b,c ...] [options]",
    "Run the manifest's grid ([sweep] lists), resumably: rerun the same command after a crash or Ctrl-C and only\n"
    "what is missing runs, interrupted runs resume.  key=a,b,c replaces the list of a [sweep] axis; a key that\n"
    "is not one is an error unless given as --axis key=a,b,c (a new axis); key=value fixes a key for every run.\n"
    "A list may be written range(start, stop[, step]) (stop excluded) or choice(a, b, c).",
    sweep_opts};

/* Check a --time, --mem or --partition value before it goes into an
 * #SBATCH line: Slurm's own forms only (no spaces, quotes or newlines).
 * Returns 0, or -1 after printing what is wrong. */
static int sweep_slurm_value(const char *flag, const char *v) {
    const char *ok = !strcmp(flag, "--time") ? "0123456789:-" : !strcmp(flag, "--mem") ? "0123456789KMGTkmgt"
                     : "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.,-";
    const char *form = !strcmp(flag, "--time") ? "minutes, H:MM:SS or D-HH:MM:SS (e.g. 4:00:00)"
                       : !strcmp(flag, "--mem") ? "a size with an optional unit K, M, G or T (e.g. 8G)"
                                                : "partition names separated by commas";
    if (!*v || v[strspn(v, ok)] || (!strcmp(flag, "--mem") && (v[0] < '0' || v[0] > '9'))) {
        fprintf(stderr, "gatelab sweep: %s '%s': write %s\n", flag, v, form);
        return -1;
    }
    return 0;
}

/* Parse argv (argv[0] is "sweep").  Returns 0, 3 after --help, or 2 after printing a usage error. */
static int sweep_parse_args(int argc, char **argv, gl_sweep_opts *a) {
    memset(a, 0, sizeof *a);
    a->index = -1;
    a->stale_s = 1800;
    a->cli = calloc((size_t)argc, sizeof *a->cli);
    a->axis = calloc((size_t)argc, sizeof *a->axis);
    if (!a->cli || !a->axis) { fprintf(stderr, "gatelab sweep: out of memory\n"); return 2; }
    args_parser p;
    args_begin(&p, &sweep_spec, argc, argv);
    int bad = 0, stale = 0;
    for (int k; !bad && (k = args_next(&p)) != ARGS_END;) {
        if (k < 0) return k == ARGS_HELP ? 3 : 2;
        switch (k) {
        case ARGS_POS:
            if (!a->manifest && !strchr(p.val, '=')) a->manifest = p.val;
            else if (!strchr(p.val, '='))
                return args_usage_error(&sweep_spec, "'%s' is neither an option nor key=value", p.val);
            else a->cli[a->n_cli++] = (char *)p.val;
            break;
        case 'j': bad = args_get_int(&p, 1, SWEEP_MAX_JOBS, &a->jobs); break;
        case ARGS_KEY(0): a->dry_run = 1; break;
        case ARGS_KEY(1): bad = args_get_int(&p, 0, SWEEP_MAX_RUNS - 1, &a->index); break;
        case ARGS_KEY(2): a->slurm = p.val; break;
        case ARGS_KEY(3): a->db = p.val; break;
        case ARGS_KEY(4): a->results = p.val; break;
        case ARGS_KEY(5):
            bad = args_get_int(&p, 1, INT_MAX, &stale);
            a->stale_s = stale;
            break;
        case ARGS_KEY(6): a->retry_failed = 1; break;
        case ARGS_KEY(7):
            if (!p.val[strspn(p.val, " ")]) return args_usage_error(&sweep_spec, "--launcher is empty");
            a->launcher = p.val;
            break;
        case ARGS_KEY(8): bad = args_get_int(&p, 1, 100000, &a->nodes); break;
        case ARGS_KEY(9): bad = args_get_int(&p, 1, 100000, &a->ntasks_per_node); break;
        case ARGS_KEY(10):
            if (!strchr(p.val, '='))
                return args_usage_error(&sweep_spec, "--axis '%s': write key=a,b,c", p.val);
            a->axis[a->n_axis++] = (char *)p.val;
            break;
        case ARGS_KEY(11):
        case ARGS_KEY(12):
        case ARGS_KEY(13):
            if (sweep_slurm_value(p.flag, p.val)) return 2;
            *(k == ARGS_KEY(11) ? &a->time : k == ARGS_KEY(12) ? &a->mem : &a->partition) = p.val;
            break;
        }
    }
    if (bad) return 2;
    if (!a->manifest) return args_usage_error(&sweep_spec, "MANIFEST is missing");
    if ((a->time || a->mem || a->partition) && !a->slurm) {
        fprintf(stderr, "gatelab sweep: --time, --mem and --partition go into the Slurm script: use them with "
                        "--emit-slurm FILE\n");
        return 2;
    }
    if ((a->nodes || a->ntasks_per_node) && !a->slurm) {
        fprintf(stderr, "gatelab sweep: --nodes and --ntasks-per-node shape the Slurm script: use them with --emit-slurm "
                        "(to run data-parallel here, pass --launcher \"mpirun -np N\")\n");
        return 2;
    }
    return 0;
}

/* ---- --dry-run ---- */

static void sweep_print_plan(const gl_sweep *sw, int index) {
    printf("sweep %s: %d run%s from %s", sw->experiment, sw->n_runs, sw->n_runs == 1 ? "" : "s", sw->manifest_path);
    if (sw->n_axes) {
        printf(" (axes:");
        for (int a = 0; a < sw->n_axes; a++) printf(" %s", sw->axes[a].key);
        printf(")");
    }
    printf("\n");
    for (int i = 0; i < sw->n_fixed; i++) printf("fixed: %s\n", sw->fixed[i]);
    printf("%-5s  %-40s  %s\n", "index", "run_id", "overrides");
    for (int i = 0; i < sw->n_runs; i++) {
        if (index >= 0 && i != index) continue;
        printf("%5d  %-40s  %s\n", i, sw->runs[i].run_id, sw->runs[i].label[0] ? sw->runs[i].label : "(none)");
    }
}

int cmd_sweep(int argc, char **argv) {
    gl_sweep_opts a;
    gl_sweep *sw = calloc(1, sizeof *sw);
    gl_db *db = NULL;
    char err[1024], results[GL_PATH_MAX], dbp[GL_PATH_MAX];
    int rc = sweep_parse_args(argc, argv, &a);
    if (rc == 3) { rc = 0; goto cleanup; }
    if (rc) goto cleanup;
    rc = 1;
    if (!sw) { fprintf(stderr, "gatelab sweep: out of memory\n"); goto cleanup; }
    if (sweep_expand(sw, a.manifest, a.n_cli, a.cli, a.n_axis, a.axis, err, sizeof err)) {
        fprintf(stderr, "gatelab sweep: %s\n", err);
        rc = 2;
        goto cleanup;
    }
    if (a.index >= sw->n_runs) {
        fprintf(stderr, "gatelab sweep: --index %d is out of range: the sweep has runs 0..%d\n", a.index, sw->n_runs - 1);
        rc = 2;
        goto cleanup;
    }
    snprintf(results, sizeof results, "%s", a.results ? a.results : sw->base.log.results[0] ? sw->base.log.results : "results");
    if (a.db) snprintf(dbp, sizeof dbp, "%s", a.db);
    else sweep_fmt(dbp, sizeof dbp, "%s/gatelab.db", results);

    if (a.dry_run) {
        sweep_print_plan(sw, a.index);
        rc = 0;
        goto cleanup;
    }
    if (a.slurm) {
        rc = slurm_emit(sw, &a, results);
        goto cleanup;
    }
    if (db_open(&db, dbp, err, sizeof err)) { fprintf(stderr, "gatelab sweep: %s\n", err); goto cleanup; }
    int lo = a.index >= 0 ? a.index : 0, hi = a.index >= 0 ? a.index + 1 : sw->n_runs;
    if (sweep_register(db, sw, lo, hi)) goto cleanup;

    if (a.index >= 0) {
        rc = sweep_run_index(db, sw, &a, dbp, results); /* returns only when it did not exec */
        goto cleanup;
    }
    sweep_pool_catch_signals();
    if (a.jobs > 1 && sw->base.train.threads == 0)
        fprintf(stderr, "gatelab sweep: note: train.threads = 0 lets each of the %d trainings use every core; "
                        "set train.threads (e.g. train.threads=1) so that -j x threads <= cores\n", a.jobs);
    rc = sweep_run_all(db, sw, &a, dbp, results);
cleanup:
    db_close(db);
    if (sw) sweep_free(sw);
    free(sw);
    free(a.cli);
    free(a.axis);
    return rc;
}

static const args_opt collect_opts[] = {{0}};
const args_spec collect_spec = {
    "collect", "MAIN.db TASK.db [TASK.db ...]",
    "Merge per-task registries (Slurm array tasks) into MAIN.db: a run id is kept once, with the more\n"
    "advanced status (SCHEDULED < RUNNING < KILLED < FAILED < FINISHED).",
    collect_opts};

int cmd_collect(int argc, char **argv) {
    char err[1024];
    gl_db *db = NULL;
    int total_merged = 0, total_skipped = 0, n = 0;
    const char **dbs = calloc((size_t)argc + 1, sizeof *dbs); /* MAIN.db, then the TASK.db files */
    if (!dbs) {
        fprintf(stderr, "gatelab collect: out of memory\n");
        return 1;
    }
    args_parser p;
    args_begin(&p, &collect_spec, argc, argv);
    for (int k; (k = args_next(&p)) != ARGS_END;) {
        if (k < 0) {
            free(dbs);
            return args_exit_code(k);
        }
        dbs[n++] = p.val;
    }
    if (n < 2) {
        free(dbs);
        return args_usage_error(&collect_spec, "%s", n < 1 ? "MAIN.db is missing" : "no TASK.db to merge");
    }
    int rc = 1;
    if (db_open(&db, dbs[0], err, sizeof err)) {
        fprintf(stderr, "gatelab collect: %s\n", err);
        goto cleanup;
    }
    rc = 0;
    for (int i = 1; i < n; i++) {
        int merged = 0, skipped = 0;
        if (db_merge(db, dbs[i], &merged, &skipped, err, sizeof err)) {
            fprintf(stderr, "gatelab collect: %s\n", err);
            rc = 1;
            continue;
        }
        printf("%s: %d run%s merged, %d already present\n", dbs[i], merged, merged == 1 ? "" : "s", skipped);
        total_merged += merged;
        total_skipped += skipped;
    }
    printf("collect into %s: %d merged, %d already present%s\n", dbs[0], total_merged, total_skipped,
           rc ? " (some files failed, see above)" : "");
cleanup:
    db_close(db);
    free(dbs);
    return rc;
}

