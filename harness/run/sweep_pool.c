/*
 * sweep_pool.c — the sweep's process manager (contract and signal rules in
 * sweep_pool.h): registration, the claim-and-launch pool with its progress
 * line and ETA, how a child's exit settles its run, and --index's exec.
 *
 * Not here: the grid (sweep.c), the Slurm script (slurm.c), flags and the
 * --dry-run listing (harness/cli/cmd_sweep.c).
 */
#include "run/sweep_pool.h"
#include "store/fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int sweep_fmt(char *out, size_t len, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(out, len, fmt, ap);
    va_end(ap);
    return n < 0 || (size_t)n >= len ? -1 : 0;
}

static volatile sig_atomic_t sweep_stop_sig = 0; /* SIGINT or SIGTERM received */
static volatile sig_atomic_t sweep_usr1 = 0;

static void sweep_on_signal(int sig) {
    if (sig == SIGUSR1) sweep_usr1 = 1;
    else if (!sweep_stop_sig) sweep_stop_sig = sig;
}

void sweep_pool_catch_signals(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = sweep_on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGUSR1, &sa, NULL);
}

static int sweep_file_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* The train command for run r, as a NULL-terminated argv (malloc'd array of
 * pointers into r, sw, a and exe; free the array only). */
static char **sweep_train_argv(const char *exe, const gl_sweep *sw, const gl_sweep_run *r, const gl_sweep_opts *a,
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
static int sweep_train_exe(const gl_sweep_opts *a, char *out, size_t outlen) {
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

/* (contract in sweep_pool.h) */
int sweep_register(gl_db *db, const gl_sweep *sw, int lo, int hi) {
    char err[512];
    long long exp_id;
    size_t manifest_len; /* the manifest's text, kept with the experiment; none when unreadable */
    char *manifest_text = fileio_slurp(sw->manifest_path, "manifest", 0, &manifest_len, err, sizeof err);
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

/* ---- running ---- */

typedef struct {
    pid_t pid;
    int run;
    double started;
    int fresh; /* started from step 0 (no checkpoint): its time is a whole run's */
} sweep_child;

#define SWEEP_TIMED_MAX 512
typedef struct {
    int total, finished, failed, running, killed, scheduled;
    int timed;                     /* FINISHED runs with a start and end time (the first SWEEP_TIMED_MAX) */
    double timed_s[SWEEP_TIMED_MAX]; /* their durations, first start to end, seconds */
} sweep_counts;

/* Trainings at once (-j), for the ETA of the progress line. */
static int sweep_eta_jobs = 1;
/* Whole runs this invocation trained from step 0 to FINISHED, and their seconds: measured here and
 * now, so the ETA prefers them to the registry's first-start-to-end times, which span the pauses of
 * a run resumed in a later session (or on another machine). */
static double sweep_own_s[SWEEP_TIMED_MAX];
static int sweep_own_n;

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
            isfinite(t0) && isfinite(t1) && t1 >= t0 && c->timed < SWEEP_TIMED_MAX)
            c->timed_s[c->timed++] = t1 - t0;
        if (!strcmp(status, "FINISHED")) c->finished++;
        else if (!strcmp(status, "FAILED")) c->failed++;
        else if (!strcmp(status, "RUNNING")) c->running++;
        else if (!strcmp(status, "KILLED")) c->killed++;
        else c->scheduled++;
    }
    return 0;
}

/* The median of x[0..n) (n > 0; x is reordered). */
static double sweep_median(double *x, int n) {
    for (int i = 1; i < n; i++) /* insertion sort: n is a grid's size */
        for (int j = i; j > 0 && x[j - 1] > x[j]; j--) {
            const double t = x[j];
            x[j] = x[j - 1], x[j - 1] = t;
        }
    return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

/* "ETA 1h05m": the runs not yet finished (failed ones excluded; a running one counted as half
 * done) times a run's duration, over -j trainings at once.  A run's duration is the median of
 * the whole runs this invocation trained, else the median of the grid's finished runs in the
 * registry (a median: one run resumed days later must not make it days).  "" before any run has
 * finished, or when nothing is left. */
static void sweep_eta(const sweep_counts *c, char *out, size_t n) {
    out[0] = '\0';
    double left = c->scheduled + c->killed + 0.5 * c->running;
    if ((!c->timed && !sweep_own_n) || left <= 0) return;
    double x[SWEEP_TIMED_MAX];
    const int k = sweep_own_n ? sweep_own_n : c->timed;
    memcpy(x, sweep_own_n ? sweep_own_s : c->timed_s, (size_t)k * sizeof *x);
    double s = sweep_median(x, k) * left / (sweep_eta_jobs < c->total ? sweep_eta_jobs : c->total);
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
static pid_t sweep_launch(const char *exe, const gl_sweep *sw, const gl_sweep_run *r, const gl_sweep_opts *a,
                          const char *db_path_s, const char *results, int resume, char *log, size_t loglen) {
    char dir[GL_PATH_MAX];
    if (sweep_fmt(dir, sizeof dir, "%s/runs/%s", results, r->run_id) ||
        sweep_fmt(log, loglen, "%s/sweep.log", dir)) {
        fprintf(stderr, "gatelab sweep: results path too long: %s\n", results);
        return -1;
    }
    char merr[GL_PATH_MAX + 128];
    if (fileio_mkdir_p(dir, merr, sizeof merr)) {
        fprintf(stderr, "gatelab sweep: %s\n", merr);
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
int sweep_run_index(gl_db *db, const gl_sweep *sw, const gl_sweep_opts *a, const char *dbp,
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
    const gl_sweep_opts *a;
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
            const int fresh = p->children[k].fresh;
            sweep_settle(p->db, r, p->results, ws, status);
            if (fresh && !strcmp(status, "FINISHED") && sweep_own_n < SWEEP_TIMED_MAX) sweep_own_s[sweep_own_n++] = took;
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
        p->children[p->n_children].fresh = !resume;
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
int sweep_run_all(gl_db *db, const gl_sweep *sw, const gl_sweep_opts *a, const char *dbp, const char *results) {
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
