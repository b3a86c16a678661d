/*
 * slurm.c — the sbatch array script of a sweep (contract in slurm.h).  The
 * script is plain text written line by line; every path in it is absolute
 * and shell-quoted, and the command it runs per task is `gatelab sweep` with
 * the same manifest, axes and overrides plus --index, so a task claims and
 * resumes its run exactly as a local sweep would.
 *
 * Not here: running anything (sweep_pool.c), checking --time/--mem/
 * --partition (harness/cli/cmd_sweep.c, before the values reach #SBATCH).
 */
#include "run/slurm.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/fileio.h"

/* Quote s for a POSIX shell into out. */
static void slurm_shell_quote(const char *s, char *out, size_t outlen) {
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
static void slurm_abspath(const char *path, char *out, size_t outlen) {
    char cwd[GL_PATH_MAX];
    if (path[0] == '/' || !getcwd(cwd, sizeof cwd)) snprintf(out, outlen, "%s", path);
    else sweep_fmt(out, outlen, "%s/%s", cwd, path);
}

/* The #SBATCH lines and the comments that open the Slurm script. */
/* What --emit-slurm may replace: a script it wrote before. */
static int slurm_is_own(const char *path) { return fileio_starts_with(path, "#!/bin/bash\n#SBATCH --job-name=gatelab-"); }

static void slurm_header(FILE *f, const gl_sweep *sw, const gl_sweep_opts *a, const char *exe,
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

/* (contract in slurm.h) */
int slurm_emit(const gl_sweep *sw, const gl_sweep_opts *a, const char *results) {
    char exe[GL_PATH_MAX], q[4 * GL_PATH_MAX], cwd[GL_PATH_MAX], abs_results[GL_PATH_MAX], abs_manifest[GL_PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) { fprintf(stderr, "gatelab sweep: cannot find this binary's path for the Slurm script\n"); return 1; }
    exe[n] = '\0';
    if (!getcwd(cwd, sizeof cwd)) { fprintf(stderr, "gatelab sweep: cannot read the working directory\n"); return 1; }
    slurm_abspath(results, abs_results, sizeof abs_results);
    slurm_abspath(a->manifest, abs_manifest, sizeof abs_manifest);
    int k = a->jobs > 0 ? a->jobs : sw->n_runs;
    fileio_out out; /* the output rule (fileio.h): never over a file that is not a gatelab Slurm script */
    char ferr[GL_PATH_MAX + 512];
    if (fileio_begin_own(&out, a->slurm, "Slurm script", slurm_is_own, ferr, sizeof ferr)) {
        fprintf(stderr, "gatelab sweep: --emit-slurm: %s\n", ferr);
        return 1;
    }
    FILE *f = out.f;
    slurm_header(f, sw, a, exe, abs_results, k);
    const int ranks = a->nodes || a->ntasks_per_node; /* data-parallel array tasks (docs/mpi.md) */
    fprintf(f, "set -u\n");
    slurm_shell_quote(cwd, q, sizeof q);
    fprintf(f, "cd %s || exit 1\n", q);
    const char *data = getenv("GATELAB_DATA");
    if (data && *data) {
        char abs_data[GL_PATH_MAX];
        slurm_abspath(data, abs_data, sizeof abs_data);
        slurm_shell_quote(abs_data, q, sizeof q);
        fprintf(f, "export GATELAB_DATA=%s\n", q);
    }
    slurm_shell_quote(abs_results, q, sizeof q);
    fprintf(f, "results=%s\n", q);
    fprintf(f, "out_db=\"$results/slurm/%s/task-${SLURM_ARRAY_TASK_ID}.db\"\n", sw->experiment);
    fprintf(f, "task_db=\"${TMPDIR:-/tmp}/gatelab-%s-${SLURM_ARRAY_JOB_ID:-0}-${SLURM_ARRAY_TASK_ID}.db\"\n",
            sw->experiment);
    fprintf(f, "mkdir -p \"$(dirname \"$out_db\")\"\n");
    fprintf(f, "# A requeued task starts from its earlier registry.\n");
    fprintf(f, "[ -f \"$out_db\" ] && [ ! -f \"$task_db\" ] && cp \"$out_db\" \"$task_db\"\n");
    slurm_shell_quote(exe, q, sizeof q);
    fprintf(f, "%s sweep ", q);
    slurm_shell_quote(abs_manifest, q, sizeof q);
    fprintf(f, "%s", q);
    for (int i = 0; i < a->n_axis; i++) {
        slurm_shell_quote(a->axis[i], q, sizeof q);
        fprintf(f, " --axis %s", q);
    }
    for (int i = 0; i < a->n_cli; i++) {
        slurm_shell_quote(a->cli[i], q, sizeof q);
        fprintf(f, " %s", q);
    }
    if (a->launcher) {
        slurm_shell_quote(a->launcher, q, sizeof q);
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
    if (fileio_commit(&out, "Slurm script", ferr, sizeof ferr)) {
        fprintf(stderr, "gatelab sweep: --emit-slurm: %s\n", ferr);
        return 1;
    }
    chmod(a->slurm, 0755);
    printf("wrote %s: %d array tasks (at most %d at once)\n", a->slurm, sw->n_runs, k);
    printf("submit:  mkdir -p %s/slurm/%s && sbatch %s\n", abs_results, sw->experiment, a->slurm);
    printf("collect: %s collect %s/gatelab.db %s/slurm/%s/task-*.db\n", exe, abs_results, abs_results, sw->experiment);
    return 0;
}
