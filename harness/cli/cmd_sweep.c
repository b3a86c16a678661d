/*
 * cmd_sweep.c — `gatelab sweep` (run a manifest's grid, resumably) and
 * `gatelab collect` (merge per-task registries into the main one).
 *
 * sweep: expand the grid (sweep.c), register every run SCHEDULED if it is
 * missing, then keep up to -j training processes going.  Each run is claimed
 * atomically in the registry (db_run_claim, one BEGIN IMMEDIATE transaction)
 * before its process starts, so two sweep commands on the same registry never
 * run the same run, and a restarted sweep picks up SCHEDULED runs, runs left
 * RUNNING by a dead process, and KILLED runs.  A run is executed by fork+exec
 * of `<this binary> train MANIFEST <overrides> --run-id ID [--resume ID]
 * --db PATH --results DIR` (never in-process: OpenMP state does not survive
 * fork); --resume is passed when results/runs/<id>/ckpt exists.  The child's
 * console output goes to results/runs/<id>/sweep.log (train keeps its own
 * train.log there too).
 *
 * Signals: SIGINT/SIGTERM stop claiming, wait for the running trainings (which
 * checkpoint and mark themselves KILLED) and exit; the signal is forwarded to
 * them (Ctrl-C reaches the whole process group anyway; kill PID does not).
 * SIGUSR1 is forwarded (checkpoint and go on).  The
 * children get SIGTERM if the sweep process dies (PR_SET_PDEATHSIG).
 *
 * --index I runs only run I, by exec'ing train in place (a Slurm array task:
 * Slurm's signals reach train directly); --emit-slurm writes the sbatch array
 * script for such tasks, each with its own registry on node-local disk,
 * merged afterwards with `gatelab collect`.
 *
 * Data-parallel runs (docs/mpi.md): --launcher "CMD ARGS" starts each
 * training as `CMD ARGS <this binary>-mpi train …` (e.g. "srun
 * --kill-on-bad-exit=1" or "mpirun -np 4"; the words are split at spaces, no
 * shell quoting); --emit-slurm with --nodes N and/or --ntasks-per-node K
 * gives each array task N×K ranks and writes that launcher with srun.
 */
#include <errno.h>
#include <stdarg.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>

#include "args.h"
#include "store/fileio.h"
#include "cli.h"
#include "store/parse.h"
#include "store/registry.h"
#include "run/sweep.h"

#define SWEEP_MAX_JOBS 256

/* snprintf into out; a path or message longer than len is cut (paths are
 * checked with sweep_path_ok).  Returns 0, or -1 when it was cut. */
__attribute__((format(printf, 3, 4))) static int sweep_fmt(char *out, size_t len, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(out, len, fmt, ap);
    va_end(ap);
    return n < 0 || (size_t)n >= len ? -1 : 0;
}

typedef struct {
    const char *manifest;
    int n_cli;
    char **cli;
    int jobs;           /* -j; 0 = not given */
    int dry_run;
    int index;          /* -1 = all */
    const char *slurm;  /* --emit-slurm FILE */
    const char *db;     /* --db */
    const char *results;/* --results */
    double stale_s;     /* --stale */
    int retry_failed;   /* --retry-failed */
    const char *launcher; /* --launcher: command words before `<binary>-mpi train …`, or NULL */
    int nodes;          /* --nodes (Slurm script): 0 = not given */
    int ntasks_per_node;/* --ntasks-per-node (Slurm script): 0 = not given */
    int n_axis;
    char **axis;        /* --axis key=a,b (explicit axes), in order */
    const char *time, *mem, *partition; /* --time, --mem, --partition (Slurm script) or NULL */
} sweep_args;

static volatile sig_atomic_t sweep_stop_sig = 0; /* SIGINT or SIGTERM received */
static volatile sig_atomic_t sweep_usr1 = 0;

static void sweep_on_signal(int sig) {
    if (sig == SIGUSR1) sweep_usr1 = 1;
    else if (!sweep_stop_sig) sweep_stop_sig = sig;
}

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
static int sweep_parse_args(int argc, char **argv, sweep_args *a) {
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

/* mkdir -p path.  Returns 0 or -1 (errno set). */
static int sweep_mkdirs(const char *path) {
    char buf[GL_PATH_MAX];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) { errno = ENAMETOOLONG; return -1; }
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(buf, 0777) && errno != EEXIST) return -1;
        *p = '/';
    }
    if (mkdir(buf, 0777) && errno != EEXIST) return -1;
    return 0;
}

static int sweep_file_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* The train command for run r, as a NULL-terminated argv (malloc'd array of
 * pointers into r, sw, a and exe; free the array only). */
static char **sweep_train_argv(const char *exe, const gl_sweep *sw, const gl_sweep_run *r, const sweep_args *a,
                               const char *db, const char *results, int resume) {
    int n = 0, words = 0;
    static char launcher[1024]; /* --launcher split in place at spaces; v points into it */
    if (a->launcher) {
        snprintf(launcher, sizeof launcher, "%s", a->launcher);
        for (char *p = launcher; *p;) {
            while (*p == ' ') *p++ = '\0';
            if (!*p) break;
            words++;
            while (*p && *p != ' ') p++;
        }
    }
    int cap = 12 + words + sw->n_fixed + r->n_over;
    char **v = calloc((size_t)cap, sizeof *v);
    if (!v) return NULL;
    for (char *p = launcher; n < words; p++)
        if (*p && (p == launcher || p[-1] == '\0')) v[n++] = p;
    v[n++] = (char *)exe;
    v[n++] = "train";
    v[n++] = (char *)a->manifest;
    for (int i = 0; i < sw->n_fixed; i++) v[n++] = sw->fixed[i];
    for (int i = 0; i < r->n_over; i++) v[n++] = (char *)r->over[i];
    v[n++] = "--run-id";
    v[n++] = (char *)r->run_id;
    if (resume) {
        v[n++] = "--resume";
        v[n++] = (char *)r->run_id;
    }
    v[n++] = "--db";
    v[n++] = (char *)db;
    v[n++] = "--results";
    v[n++] = (char *)results;
    v[n] = NULL;
    return v;
}

/* Path of the binary that runs each training (`<it> train ...`): this one,
 * or with --launcher its MPI build next to it (`<this>-mpi`, Makefile).
 * Returns 0, or -1 after printing why not. */
static int sweep_train_exe(const sweep_args *a, char *out, size_t outlen) {
    ssize_t n = readlink("/proc/self/exe", out, outlen - 1);
    if (n <= 0) {
        fprintf(stderr, "gatelab sweep: cannot find this binary's path\n");
        return -1;
    }
    out[n] = '\0';
    if (!a->launcher || (n > 4 && !strcmp(out + n - 4, "-mpi"))) return 0;
    if (sweep_fmt(out + n, outlen - (size_t)n, "-mpi") || access(out, X_OK)) {
        fprintf(stderr, "gatelab sweep: --launcher needs %s, the MPI build: install libopenmpi-dev openmpi-bin "
                        "and run make\n", out);
        return -1;
    }
    return 0;
}

/* ---- registration ---- */

/* Register runs [lo, hi) of sw as SCHEDULED where missing.  Returns 0 or -1 (printed). */
static int sweep_register(gl_db *db, const gl_sweep *sw, int lo, int hi) {
    char err[512];
    long long exp_id;
    char *manifest_text = NULL;
    FILE *f = fopen(sw->manifest_path, "rb");
    if (f) {
        fseek(f, 0, SEEK_END);
        long len = ftell(f);
        fseek(f, 0, SEEK_SET);
        manifest_text = len >= 0 ? calloc((size_t)len + 1, 1) : NULL;
        if (manifest_text && fread(manifest_text, 1, (size_t)len, f) != (size_t)len) manifest_text[0] = '\0';
        fclose(f);
    }
    int rc = db_experiment_ensure(db, sw->experiment, manifest_text, &exp_id, err, sizeof err);
    free(manifest_text);
    if (rc) { fprintf(stderr, "gatelab sweep: %s\n", err); return -1; }
    for (int i = lo; i < hi; i++) {
        const gl_sweep_run *r = &sw->runs[i];
        int have = db_run_exists(db, r->run_id, NULL, err, sizeof err);
        if (have < 0) { fprintf(stderr, "gatelab sweep: %s\n", err); return -1; }
        if (have) continue;
        if (db_run_create(db, exp_id, r->run_id, r->label[0] ? r->label : sw->experiment, r->config_ini,
                          r->config_hash, r->seed, "SCHEDULED", err, sizeof err) ||
            db_params_put_ini(db, r->run_id, r->config_ini, err, sizeof err)) {
            /* Another sweep may have registered it a moment ago. */
            if (db_run_exists(db, r->run_id, NULL, err, sizeof err) == 1) continue;
            fprintf(stderr, "gatelab sweep: %s\n", err);
            return -1;
        }
    }
    return 0;
}

/* ---- --dry-run and --emit-slurm ---- */

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

/* Quote s for a POSIX shell into out. */
static void sweep_shell_quote(const char *s, char *out, size_t outlen) {
    size_t n = 0;
    if (outlen < 3) { if (outlen) out[0] = '\0'; return; }
    out[n++] = '\'';
    for (; *s && n + 5 < outlen; s++) {
        if (*s == '\'') { memcpy(out + n, "'\\''", 4); n += 4; }
        else out[n++] = *s;
    }
    out[n++] = '\'';
    out[n] = '\0';
}

/* Absolute version of path (relative paths against the working directory). */
static void sweep_abspath(const char *path, char *out, size_t outlen) {
    char cwd[GL_PATH_MAX];
    if (path[0] == '/' || !getcwd(cwd, sizeof cwd)) snprintf(out, outlen, "%s", path);
    else sweep_fmt(out, outlen, "%s/%s", cwd, path);
}

/* The #SBATCH lines and the comments that open the Slurm script. */
static void sweep_slurm_header(FILE *f, const gl_sweep *sw, const sweep_args *a, const char *exe,
                               const char *abs_results, int k) {
    const size_t n = strlen(exe);
    fprintf(f, "#!/bin/bash\n");
    fprintf(f, "#SBATCH --job-name=gatelab-%s\n", sw->experiment);
    fprintf(f, "#SBATCH --array=0-%d%%%d\n", sw->n_runs - 1, k);
    fprintf(f, "#SBATCH --signal=B:USR1@120\n");
    fprintf(f, "#SBATCH --output=%s/slurm/%s/%%A_%%a.out\n", abs_results, sw->experiment);
    fprintf(f, "#SBATCH --error=%s/slurm/%s/%%A_%%a.err\n", abs_results, sw->experiment);
    fprintf(f, "#SBATCH --requeue\n");
    fprintf(f, "#SBATCH --open-mode=append\n"); /* a requeued task adds to its logs */
    if (a->time) fprintf(f, "#SBATCH --time=%s\n", a->time);
    if (a->mem) fprintf(f, "#SBATCH --mem=%s\n", a->mem);
    if (a->partition) fprintf(f, "#SBATCH --partition=%s\n", a->partition);
    if (sw->base.train.threads > 0) fprintf(f, "#SBATCH --cpus-per-task=%d\n", sw->base.train.threads);
    const int ranks = a->nodes || a->ntasks_per_node; /* data-parallel array tasks (docs/mpi.md) */
    if (a->nodes) fprintf(f, "#SBATCH --nodes=%d\n", a->nodes);
    if (a->ntasks_per_node) fprintf(f, "#SBATCH --ntasks-per-node=%d\n", a->ntasks_per_node);
    if ((ranks || a->launcher) && !(n > 4 && !strcmp(exe + n - 4, "-mpi"))) {
        char mpi_exe[GL_PATH_MAX + 8];
        snprintf(mpi_exe, sizeof mpi_exe, "%s-mpi", exe);
        if (access(mpi_exe, X_OK))
            fprintf(stderr, "gatelab sweep: warning: %s is missing: build it (make, with libopenmpi-dev installed) "
                            "before the tasks start\n", mpi_exe);
    }
    fprintf(f, "#\n# Written by `gatelab sweep %s --emit-slurm`: %d runs of experiment %s, at most %d at once.\n",
            a->manifest, sw->n_runs, sw->experiment, k);
    fprintf(f, "# Array task i runs sweep run i (see `gatelab sweep ... --dry-run`).%s\n"
               "# The output folder must exist before submitting:\n"
               "#   mkdir -p %s/slurm/%s && sbatch %s\n",
            a->time && a->mem && a->partition ? "" : " Time, memory and partition: pass\n"
            "# --time, --mem, --partition to `gatelab sweep --emit-slurm` (or sbatch) as your cluster needs.",
            abs_results, sw->experiment, a->slurm);
    fprintf(f, "# Near the time limit Slurm sends USR1 (120 s before): the training checkpoints and stops, the\n"
               "# task saves its registry and requeues itself (scontrol requeue), and the requeued task resumes\n"
               "# the run from its checkpoint (--resume).\n");
    fprintf(f, "# Each task keeps its registry on node-local disk (SQLite WAL must not live on a network\n"
               "# filesystem) and copies it to %s/slurm/%s/task-<i>.db when it ends. Afterwards:\n"
               "#   %s collect %s/gatelab.db %s/slurm/%s/task-*.db\n",
            abs_results, sw->experiment, exe, abs_results, abs_results, sw->experiment);
    if (ranks || a->launcher)
        fprintf(f, "# Each task trains its run data-parallel on %s%d node(s) x %s%d rank(s) per node: the sweep\n"
                   "# process claims the run, then becomes `%s <binary>-mpi train ...`\n"
                   "# (kill-on-bad-exit: a rank that dies ends the step). Set train.threads to the cores per rank.\n",
                a->nodes ? "" : "<default> ", a->nodes ? a->nodes : 1, a->ntasks_per_node ? "" : "<default> ",
                a->ntasks_per_node ? a->ntasks_per_node : 1,
                a->launcher ? a->launcher : "srun --kill-on-bad-exit=1 --cpus-per-task=...");
}

/* Write the sbatch array script.  Returns 0 or 1 (printed). */
static int sweep_emit_slurm(const gl_sweep *sw, const sweep_args *a, const char *results) {
    char exe[GL_PATH_MAX], q[4 * GL_PATH_MAX], cwd[GL_PATH_MAX], abs_results[GL_PATH_MAX], abs_manifest[GL_PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) { fprintf(stderr, "gatelab sweep: cannot find this binary's path for the Slurm script\n"); return 1; }
    exe[n] = '\0';
    if (!getcwd(cwd, sizeof cwd)) { fprintf(stderr, "gatelab sweep: cannot read the working directory\n"); return 1; }
    sweep_abspath(results, abs_results, sizeof abs_results);
    sweep_abspath(a->manifest, abs_manifest, sizeof abs_manifest);
    int k = a->jobs > 0 ? a->jobs : sw->n_runs;
    FILE *f = fileio_fopen_w(a->slurm);
    if (!f) { fprintf(stderr, "gatelab sweep: cannot write %s: %s\n", a->slurm, strerror(errno)); return 1; }
    sweep_slurm_header(f, sw, a, exe, abs_results, k);
    const int ranks = a->nodes || a->ntasks_per_node; /* data-parallel array tasks (docs/mpi.md) */
    fprintf(f, "set -u\n");
    sweep_shell_quote(cwd, q, sizeof q);
    fprintf(f, "cd %s || exit 1\n", q);
    const char *data = getenv("GATELAB_DATA");
    if (data && *data) {
        char abs_data[GL_PATH_MAX];
        sweep_abspath(data, abs_data, sizeof abs_data);
        sweep_shell_quote(abs_data, q, sizeof q);
        fprintf(f, "export GATELAB_DATA=%s\n", q);
    }
    sweep_shell_quote(abs_results, q, sizeof q);
    fprintf(f, "results=%s\n", q);
    fprintf(f, "out_db=\"$results/slurm/%s/task-${SLURM_ARRAY_TASK_ID}.db\"\n", sw->experiment);
    fprintf(f, "task_db=\"${TMPDIR:-/tmp}/gatelab-%s-${SLURM_ARRAY_JOB_ID:-0}-${SLURM_ARRAY_TASK_ID}.db\"\n",
            sw->experiment);
    fprintf(f, "mkdir -p \"$(dirname \"$out_db\")\"\n");
    fprintf(f, "# A requeued task starts from its earlier registry.\n");
    fprintf(f, "[ -f \"$out_db\" ] && [ ! -f \"$task_db\" ] && cp \"$out_db\" \"$task_db\"\n");
    sweep_shell_quote(exe, q, sizeof q);
    fprintf(f, "%s sweep ", q);
    sweep_shell_quote(abs_manifest, q, sizeof q);
    fprintf(f, "%s", q);
    for (int i = 0; i < a->n_axis; i++) {
        sweep_shell_quote(a->axis[i], q, sizeof q);
        fprintf(f, " --axis %s", q);
    }
    for (int i = 0; i < a->n_cli; i++) {
        sweep_shell_quote(a->cli[i], q, sizeof q);
        fprintf(f, " %s", q);
    }
    if (a->launcher) {
        sweep_shell_quote(a->launcher, q, sizeof q);
        fprintf(f, " --launcher %s", q);
    } else if (ranks) {
        /* srun does not inherit the batch's --cpus-per-task (Slurm >= 22.05): pass it on */
        fprintf(f, " --launcher \"srun --kill-on-bad-exit=1 --cpus-per-task=${SLURM_CPUS_PER_TASK:-1}\"");
    }
    fprintf(f, " --index \"$SLURM_ARRAY_TASK_ID\" --db \"$task_db\" --results \"$results\" &\n");
    fprintf(f, "pid=$!\n");
    fprintf(f, "# Slurm signals this batch shell (B:).  USR1 (the time limit is near): stop the training, which\n"
               "# checkpoints, and requeue below; TERM/INT: pass on (checkpoint and stop).\n");
    fprintf(f, "requeue=0\n");
    fprintf(f, "trap 'requeue=1; kill -TERM $pid 2>/dev/null' USR1\n");
    fprintf(f, "trap 'kill -TERM $pid 2>/dev/null' TERM INT\n");
    fprintf(f, "while :; do wait \"$pid\"; rc=$?; kill -0 \"$pid\" 2>/dev/null || break; done\n");
    fprintf(f, "cp \"$task_db\" \"$out_db.tmp\" && mv \"$out_db.tmp\" \"$out_db\" && rm -f \"$task_db\"\n");
    fprintf(f, "if [ \"$requeue\" = 1 ] && [ \"$rc\" -ne 0 ]; then\n"
               "    echo \"gatelab: time limit near: run checkpointed; requeueing task $SLURM_ARRAY_TASK_ID "
               "(job $SLURM_JOB_ID) to resume it\" >&2\n"
               "    scontrol requeue \"$SLURM_JOB_ID\" && exit 0\n"
               "    echo \"gatelab: scontrol requeue failed; resubmit this task to resume the run\" >&2\n"
               "fi\n");
    fprintf(f, "exit $rc\n");
    if (fclose(f)) { fprintf(stderr, "gatelab sweep: cannot write %s: %s\n", a->slurm, strerror(errno)); return 1; }
    chmod(a->slurm, 0755);
    printf("wrote %s: %d array tasks (at most %d at once)\n", a->slurm, sw->n_runs, k);
    printf("submit:  mkdir -p %s/slurm/%s && sbatch %s\n", abs_results, sw->experiment, a->slurm);
    printf("collect: %s collect %s/gatelab.db %s/slurm/%s/task-*.db\n", exe, abs_results, abs_results, sw->experiment);
    return 0;
}

/* ---- running ---- */

typedef struct {
    pid_t pid;
    int run;
    double started;
} sweep_child;

typedef struct {
    int total, finished, failed, running, killed, scheduled;
    int timed;         /* FINISHED runs with a start and end time */
    double timed_s;    /* their summed durations (first start to end), seconds */
} sweep_counts;

/* Trainings at once (-j), for the ETA of the progress line. */
static int sweep_eta_jobs = 1;

static int sweep_count(gl_db *db, const gl_sweep *sw, int lo, int hi, sweep_counts *c) {
    char err[512], status[16];
    memset(c, 0, sizeof *c);
    for (int i = lo; i < hi; i++) {
        if (db_run_exists(db, sw->runs[i].run_id, status, err, sizeof err) < 0) {
            fprintf(stderr, "gatelab sweep: %s\n", err);
            return -1;
        }
        c->total++;
        double t0, t1;
        if (!strcmp(status, "FINISHED") && db_run_times(db, sw->runs[i].run_id, &t0, &t1, err, sizeof err) == 1 &&
            isfinite(t0) && isfinite(t1) && t1 >= t0)
            c->timed++, c->timed_s += t1 - t0;
        if (!strcmp(status, "FINISHED")) c->finished++;
        else if (!strcmp(status, "FAILED")) c->failed++;
        else if (!strcmp(status, "RUNNING")) c->running++;
        else if (!strcmp(status, "KILLED")) c->killed++;
        else c->scheduled++;
    }
    return 0;
}

/* "ETA 1h05m" from the mean duration of the grid's finished runs: the runs
 * not yet finished (failed ones excluded; a running one counted as half
 * done) times that mean, over -j trainings at once.  "" before any run has
 * finished, or when nothing is left. */
static void sweep_eta(const sweep_counts *c, char *out, size_t n) {
    out[0] = '\0';
    double left = c->scheduled + c->killed + 0.5 * c->running;
    if (!c->timed || left <= 0) return;
    double s = c->timed_s / c->timed * left / (sweep_eta_jobs < c->total ? sweep_eta_jobs : c->total);
    long m = (long)(s / 60 + 0.5);
    if (s < 60) snprintf(out, n, ", ETA %.0fs", s);
    else if (m < 60) snprintf(out, n, ", ETA %ldm", m);
    else snprintf(out, n, ", ETA %ldh%02ldm", m / 60, m % 60);
}

static void sweep_progress(const gl_sweep *sw, const sweep_counts *c, const char *what) {
    char eta[48];
    sweep_eta(c, eta, sizeof eta);
    fprintf(stderr, "[sweep %s: %d/%d done, %d running, %d failed%s] %s\n", sw->experiment, c->finished, c->total,
            c->running, c->failed, eta, what);
}

/* fork+exec the training of run r.  Returns the child's pid, or -1 (printed). */
static pid_t sweep_launch(const char *exe, const gl_sweep *sw, const gl_sweep_run *r, const sweep_args *a,
                          const char *db_path_s, const char *results, int resume, char *log, size_t loglen) {
    char dir[GL_PATH_MAX];
    if (sweep_fmt(dir, sizeof dir, "%s/runs/%s", results, r->run_id) ||
        sweep_fmt(log, loglen, "%s/sweep.log", dir)) {
        fprintf(stderr, "gatelab sweep: results path too long: %s\n", results);
        return -1;
    }
    if (sweep_mkdirs(dir)) {
        fprintf(stderr, "gatelab sweep: cannot create %s: %s\n", dir, strerror(errno));
        return -1;
    }
    char **argv = sweep_train_argv(exe, sw, r, a, db_path_s, results, resume);
    if (!argv) { fprintf(stderr, "gatelab sweep: out of memory\n"); return -1; }
    pid_t parent = getpid();
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "gatelab sweep: fork failed: %s\n", strerror(errno));
        free(argv);
        return -1;
    }
    if (pid == 0) {
        /* The child: default signals, die with the sweep, output to the run's log. */
        struct sigaction dfl;
        memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        sigaction(SIGINT, &dfl, NULL);
        sigaction(SIGTERM, &dfl, NULL);
        sigaction(SIGUSR1, &dfl, NULL);
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent) _exit(127);
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW, 0644);
        if (fd >= 0) {
            dup2(fd, STDOUT_FILENO);
            dup2(fd, STDERR_FILENO);
            if (fd > STDERR_FILENO) close(fd);
        }
        int devnull = open("/dev/null", O_RDONLY);
        if (devnull >= 0) {
            dup2(devnull, STDIN_FILENO);
            if (devnull > STDERR_FILENO) close(devnull);
        }
        execvp(argv[0], argv);
        fprintf(stderr, "gatelab sweep: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    free(argv);
    return pid;
}

/* The last non-empty line of the file at path into out ("" if none). */
static void sweep_last_line(const char *path, char *out, size_t outlen) {
    out[0] = '\0';
    FILE *f = fopen(path, "rb");
    if (!f) return;
    char buf[4096];
    long size = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    long from = size > (long)sizeof buf - 1 ? size - (long)sizeof buf + 1 : 0;
    size_t n = 0;
    if (size >= 0 && fseek(f, from, SEEK_SET) == 0) n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' ')) buf[--n] = '\0';
    char *start = strrchr(buf, '\n');
    snprintf(out, outlen, "%s", start ? start + 1 : buf);
}

/* After the training of run r ended with wait status ws: make sure the
 * registry says how (a training that died before recording its end is marked
 * KILLED when a signal ended it, FAILED otherwise, with the last line of its
 * console log).  Returns the run's final status in status[16]. */
static void sweep_settle(gl_db *db, const gl_sweep_run *r, const char *results, int ws, char *status) {
    char err[512], msg[512], log[GL_PATH_MAX], last[256] = "";
    if (db_run_exists(db, r->run_id, status, err, sizeof err) < 0) {
        fprintf(stderr, "gatelab sweep: %s\n", err);
        snprintf(status, 16, "?");
        return;
    }
    if (strcmp(status, "RUNNING") && strcmp(status, "SCHEDULED")) return; /* train recorded its end */
    if (sweep_fmt(log, sizeof log, "%s/runs/%s/sweep.log", results, r->run_id) == 0)
        sweep_last_line(log, last, sizeof last);
    const char *end = "FAILED";
    int code;
    if (WIFSIGNALED(ws)) {
        end = "KILLED";
        code = 128 + WTERMSIG(ws);
        sweep_fmt(msg, sizeof msg, "training process killed by signal %d before recording an end state%s%s",
                  WTERMSIG(ws), last[0] ? "; its last output: " : "", last);
    } else {
        code = WIFEXITED(ws) ? WEXITSTATUS(ws) : 1;
        sweep_fmt(msg, sizeof msg, "training process exited with code %d before recording an end state%s%s", code,
                  last[0] ? ": " : "", last);
    }
    if (db_run_finish(db, r->run_id, end, code, msg, err, sizeof err)) fprintf(stderr, "gatelab sweep: %s\n", err);
    snprintf(status, 16, "%s", end);
}

/* --index I: run sweep run I in this process (exec).  Returns an exit code
 * unless the exec succeeds. */
static int sweep_run_index(gl_db *db, const gl_sweep *sw, const sweep_args *a, const char *dbp,
                           const char *results) {
    char err[512], status[16], exe[GL_PATH_MAX];
    const gl_sweep_run *r = &sw->runs[a->index];
    if (db_run_exists(db, r->run_id, status, err, sizeof err) < 0) { fprintf(stderr, "gatelab sweep: %s\n", err); return 1; }
    if (!strcmp(status, "FINISHED")) {
        fprintf(stderr, "gatelab sweep: run %s already FINISHED\n", r->run_id);
        return 0;
    }
    if (!strcmp(status, "FAILED") && !a->retry_failed) {
        fprintf(stderr, "gatelab sweep: run %s FAILED earlier; pass --retry-failed to run it again\n", r->run_id);
        return 1;
    }
    if (!strcmp(status, "FAILED") && db_run_release(db, r->run_id, err, sizeof err)) {
        fprintf(stderr, "gatelab sweep: %s\n", err);
        return 1;
    }
    const char *ids[1] = {r->run_id};
    int interrupted = 0;
    int got = db_run_claim(db, ids, 1, a->stale_s, &interrupted, err, sizeof err);
    if (got == -1) { fprintf(stderr, "gatelab sweep: %s\n", err); return 1; }
    if (got == -2) {
        fprintf(stderr, "gatelab sweep: run %s is being run by another live process; not starting it twice\n",
                r->run_id);
        return 1;
    }
    if (sweep_train_exe(a, exe, sizeof exe)) goto release;
    char ckpt[GL_PATH_MAX];
    sweep_fmt(ckpt, sizeof ckpt, "%s/runs/%s/ckpt", results, r->run_id);
    int resume = sweep_file_exists(ckpt);
    char **argv = sweep_train_argv(exe, sw, r, a, dbp, results, resume);
    if (!argv) goto release;
    fprintf(stderr, "gatelab sweep: run %d/%d %s (%s)%s\n", a->index, sw->n_runs, r->run_id,
            r->label[0] ? r->label : "no overrides", resume ? ", resuming from its checkpoint" : "");
    fflush(NULL);
    execvp(argv[0], argv);
    fprintf(stderr, "gatelab sweep: cannot run %s: %s\n", argv[0], strerror(errno));
    free(argv);
release:
    if (db_run_release(db, r->run_id, err, sizeof err)) fprintf(stderr, "gatelab sweep: %s\n", err);
    return 1;
}

/* The state of sweep_run_all: our trainings, which runs this invocation has
 * launched, and the counts of the last progress line. */
typedef struct {
    gl_db *db;
    const gl_sweep *sw;
    const sweep_args *a;
    const char *dbp, *results;
    char exe[GL_PATH_MAX];
    int jobs, n_children;
    sweep_child *children; /* [jobs] */
    char *launched;        /* [n_runs] 1: started by this invocation */
    const char **ids;      /* [n_runs] scratch: the ids still to claim */
    int *map;              /* [n_runs] scratch: ids[k] is run map[k] */
    sweep_counts c;
    char what[GL_PATH_MAX + 256];
} sweep_pool;

/* Reap finished trainings: settle each run's status and say how it ended.  Returns 0 or -1. */
static int sweep_reap(sweep_pool *p) {
    int ws;
    pid_t pid;
    while ((pid = waitpid(-1, &ws, WNOHANG)) > 0) {
        for (int k = 0; k < p->n_children; k++) {
            if (p->children[k].pid != pid) continue;
            const gl_sweep_run *r = &p->sw->runs[p->children[k].run];
            char status[16];
            double took = db_now() - p->children[k].started;
            sweep_settle(p->db, r, p->results, ws, status);
            p->children[k] = p->children[--p->n_children];
            if (sweep_count(p->db, p->sw, 0, p->sw->n_runs, &p->c)) return -1;
            if (!strcmp(status, "FINISHED"))
                sweep_fmt(p->what, sizeof p->what, "%s FINISHED after %.1f s", r->run_id, took);
            else
                sweep_fmt(p->what, sizeof p->what, "%s %s after %.1f s; see %s/runs/%s/train.log and sweep.log",
                          r->run_id, status, took, p->results, r->run_id);
            sweep_progress(p->sw, &p->c, p->what);
            break;
        }
    }
    return 0;
}

/* Pass SIGUSR1 on to our trainings, and a stop signal once (*forwarded). */
static void sweep_forward_signals(sweep_pool *p, int *forwarded) {
    if (sweep_usr1) {
        sweep_usr1 = 0;
        for (int k = 0; k < p->n_children; k++) kill(p->children[k].pid, SIGUSR1);
    }
    if (sweep_stop_sig && !*forwarded) {
        *forwarded = 1;
        fprintf(stderr, "[sweep %s] %s: no new runs; waiting for %d running to checkpoint and stop\n",
                p->sw->experiment, sweep_stop_sig == SIGINT ? "interrupted" : "terminated", p->n_children);
        /* Ctrl-C reached the whole process group already, but a signal sent to the sweep
         * alone did not, and a training forked a moment after it missed it; training
         * treats a second stop signal like the first. */
        for (int k = 0; k < p->n_children; k++) kill(p->children[k].pid, sweep_stop_sig);
    }
}

/* Claim and start runs while there is a free slot and a claimable run.  Returns 0 or -1. */
static int sweep_start_more(sweep_pool *p) {
    char err[512];
    const int n = p->sw->n_runs;
    while (!sweep_stop_sig && p->n_children < p->jobs) {
        int m = 0;
        for (int i = 0; i < n; i++)
            if (!p->launched[i]) { p->ids[m] = p->sw->runs[i].run_id; p->map[m++] = i; }
        if (m == 0) break;
        int interrupted = 0;
        int got = db_run_claim(p->db, p->ids, m, p->a->stale_s, &interrupted, err, sizeof err);
        if (got == -1) { fprintf(stderr, "gatelab sweep: %s\n", err); return -1; }
        if (got == -2) break;
        int i = p->map[got];
        const gl_sweep_run *r = &p->sw->runs[i];
        p->launched[i] = 1;
        char ckpt[GL_PATH_MAX], log[GL_PATH_MAX];
        sweep_fmt(ckpt, sizeof ckpt, "%s/runs/%s/ckpt", p->results, r->run_id);
        int resume = sweep_file_exists(ckpt);
        pid_t child = sweep_launch(p->exe, p->sw, r, p->a, p->dbp, p->results, resume, log, sizeof log);
        if (child < 0) {
            if (db_run_release(p->db, r->run_id, err, sizeof err)) fprintf(stderr, "gatelab sweep: %s\n", err);
            return -1;
        }
        p->children[p->n_children].pid = child;
        p->children[p->n_children].run = i;
        p->children[p->n_children].started = db_now();
        p->n_children++;
        if (sweep_count(p->db, p->sw, 0, n, &p->c)) return -1;
        snprintf(p->what, sizeof p->what, "started %s (%s)%s", r->run_id, r->label[0] ? r->label : "no overrides",
                 resume ? ", resuming from its checkpoint" : interrupted ? ", restarting (no checkpoint)" : "");
        sweep_progress(p->sw, &p->c, p->what);
    }
    return 0;
}

/* Nothing of ours runs and nothing is claimable: 1 when the sweep is done,
 * 0 when another live process still holds runs of the grid (after a
 * second's wait), -1 on error. */
static int sweep_idle(sweep_pool *p, int *waiting_note) {
    char err[512], status[16];
    const int n = p->sw->n_runs;
    if (sweep_count(p->db, p->sw, 0, n, &p->c)) return -1;
    int held = 0;
    for (int i = 0; i < n; i++)
        if (!p->launched[i] && db_run_exists(p->db, p->sw->runs[i].run_id, status, err, sizeof err) == 1 &&
            !strcmp(status, "RUNNING"))
            held++;
    if (!held) return 1;
    if (!*waiting_note) {
        snprintf(p->what, sizeof p->what, "waiting for %d run%s held by another live process", held,
                 held == 1 ? "" : "s");
        sweep_progress(p->sw, &p->c, p->what);
        *waiting_note = 1;
    }
    sleep(1);
    return 0;
}

/* Keep up to a->jobs trainings going until no run is left to claim.  Returns the exit code. */
static int sweep_run_all(gl_db *db, const gl_sweep *sw, const sweep_args *a, const char *dbp, const char *results) {
    char err[512];
    const int n = sw->n_runs;
    int rc = 1, forwarded = 0, waiting_note = 0;
    sweep_pool p = {.db = db, .sw = sw, .a = a, .dbp = dbp, .results = results, .jobs = a->jobs > 0 ? a->jobs : 1};
    sweep_eta_jobs = p.jobs;
    p.children = calloc((size_t)p.jobs, sizeof *p.children);
    p.launched = calloc((size_t)n, 1);
    p.ids = calloc((size_t)n, sizeof *p.ids);
    p.map = calloc((size_t)n, sizeof *p.map);
    if (!p.children || !p.launched || !p.ids || !p.map) { fprintf(stderr, "gatelab sweep: out of memory\n"); goto cleanup; }
    if (sweep_train_exe(a, p.exe, sizeof p.exe)) goto cleanup;

    if (a->retry_failed) {
        char status[16];
        for (int i = 0; i < n; i++)
            if (db_run_exists(db, sw->runs[i].run_id, status, err, sizeof err) == 1 && !strcmp(status, "FAILED") &&
                db_run_release(db, sw->runs[i].run_id, err, sizeof err))
                fprintf(stderr, "gatelab sweep: %s\n", err);
    }
    if (sweep_count(db, sw, 0, n, &p.c)) goto cleanup;
    sweep_fmt(p.what, sizeof p.what, "%d to run, -j %d, registry %s, logs in %s/runs/<id>/train.log",
              p.c.total - p.c.finished - p.c.failed, p.jobs, dbp, results);
    sweep_progress(sw, &p.c, p.what);

    for (;;) {
        if (sweep_reap(&p)) goto cleanup;
        sweep_forward_signals(&p, &forwarded);
        if (sweep_start_more(&p)) goto cleanup;
        if (p.n_children == 0) {
            if (sweep_stop_sig) break;
            int done = sweep_idle(&p, &waiting_note);
            if (done < 0) goto cleanup;
            if (done) break;
            continue;
        }
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    sweep_counts *c = &p.c;
    if (sweep_count(db, sw, 0, n, c)) goto cleanup;
    snprintf(p.what, sizeof p.what, "%s: %d finished, %d failed, %d not finished%s", sweep_stop_sig ? "stopped" : "done",
             c->finished, c->failed, c->total - c->finished - c->failed,
             c->total - c->finished - c->failed ? " (rerun the same command to resume them)" : "");
    sweep_progress(sw, c, p.what);
    rc = sweep_stop_sig ? 128 + sweep_stop_sig : (c->finished == c->total ? 0 : 1);
cleanup:
    /* On an error exit, stop and reap our trainings (they mark themselves KILLED). */
    for (int k = 0; k < p.n_children; k++) kill(p.children[k].pid, SIGTERM);
    for (int k = 0; k < p.n_children; k++) {
        int ws;
        if (waitpid(p.children[k].pid, &ws, 0) > 0) {
            char status[16];
            sweep_settle(db, &sw->runs[p.children[k].run], results, ws, status);
        }
    }
    free(p.children);
    free(p.launched);
    free(p.ids);
    free(p.map);
    return rc;
}

int cmd_sweep(int argc, char **argv) {
    sweep_args a;
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
        rc = sweep_emit_slurm(sw, &a, results);
        goto cleanup;
    }
    if (db_open(&db, dbp, err, sizeof err)) { fprintf(stderr, "gatelab sweep: %s\n", err); goto cleanup; }
    int lo = a.index >= 0 ? a.index : 0, hi = a.index >= 0 ? a.index + 1 : sw->n_runs;
    if (sweep_register(db, sw, lo, hi)) goto cleanup;

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = sweep_on_signal;
    sigemptyset(&sa.sa_mask);
    if (a.index >= 0) {
        rc = sweep_run_index(db, sw, &a, dbp, results); /* returns only when it did not exec */
        goto cleanup;
    }
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGUSR1, &sa, NULL);
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
