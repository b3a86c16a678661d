/*
 * figures.c — figure data (TSV) from the registry and traces, and the
 * gnuplot runs that draw it (figures.h).
 *
 * Figures, each NAME.png + NAME.pdf in the output folder, data in data/:
 *   loss_step, loss_time        train and val loss vs step / seconds, per group of seeds
 *   pareto                      TSA: TLOps saved vs val loss over λ (MoD over capacity, random routing
 *                               over α: the routing kinds table's knob), early exit at the matched α
 *                               (+ the τ sweep when it was measured on the same tokens)
 *   depth_<key>                 mean by block of each gate of the gate table that has one (per-head
 *                               and router gates: depth_alpha, depth_p, depth_headgate), per group of seeds
 *   <key>_heatmap_<run>         block × KV head mean of the run's per-head gate (the gate
 *                               table's key: alpha_heatmap for SATFormer; needs `gatelab analyze`)
 *   category_<key>_<run>        the run's per-head and router gates' means by block and category
 *                               (category_alpha_, category_p_; needs `gatelab analyze`)
 *   ablation_<run>              ΔL by intervention and category (needs `gatelab ablate`)
 *   ablation_seeds              those bars pooled over the seeds of each configuration (mean ± sd)
 *   heads_<run>                 block × KV head ΔL of single-gate zeroing (needs `gatelab heads`)
 *   depth_map_<run>             per-character effective depth over the probe text (TSA trace)
 *
 * This file: gnuplot, the helpers and the grouping the module shares
 * (figures_int.h), the loss and Pareto figures, the drivers; the per-run
 * figures and the depth profiles are in figures_run.c.
 *
 * Runs whose configurations differ only by seed form a group (fg_groups):
 * curves and bars show the group's mean with ± sd over its seeds, legends
 * name what tells groups apart and titles what they share.  Text is plain
 * (style.gp's terminals are noenhanced), so labels print as written.
 *
 * One figure, one token set: every number a figure sets side by side was
 * measured on the same windows at the same step (the registry's provenance);
 * what was measured on other tokens is left out and listed in s->notes, and
 * the titles say what the numbers rest on.
 *
 * What it does not do: compute statistics over tokens (the analyses logged
 * them; only means and sds over seeds are taken here), or
 * print.  Only FINISHED runs are drawn.  gnuplot runs as a child process
 * (posix_spawnp) with its stderr captured and LC_CTYPE=C.UTF-8 (the scripts'
 * labels are UTF-8: under LC_ALL=C gnuplot warns "iconv failed to convert
 * degree sign").  It is judged by its exit status and the file it was to
 * write; what it says on stderr otherwise is passed on as a warning, except
 * "no valid points", which means the figure has no data (skipped).
 */
#include "analysis/render/figures.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "store/fileio.h"
#include "store/categories.h"
#include "store/metric.h"
#include "store/rundir.h"
#include "store/trace.h"
#include "analysis/measure/ablate.h"
#include "analysis/measure/analyze.h"
#include "model/gatekind.h"
#include "analysis/measure/depth.h"
#include "analysis/core/report.h"
#include "analysis/render/tables.h"
#include "analysis/runs/runset.h"
#include "analysis/core/stats.h"
#include "analysis/render/figures_int.h"

extern char **environ;

/* ---- gnuplot ---- */

/* The environment for gnuplot: this one with LC_ALL and LC_CTYPE replaced by
 * LC_CTYPE=C.UTF-8 (and LC_ALL's value kept as LANG, so the other categories
 * follow it as before).  NULL when out of memory. */
static char **fg_child_env(void) {
    size_t n = 0;
    while (environ[n]) n++;
    char **env = calloc(n + 3, sizeof *env);
    if (!env) return NULL;
    static char lang[256];
    const char *all = getenv("LC_ALL");
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "LC_ALL=", 7) && strncmp(environ[i], "LC_CTYPE=", 9) &&
            !(all && *all && !strncmp(environ[i], "LANG=", 5)))
            env[k++] = environ[i];
    env[k++] = "LC_CTYPE=C.UTF-8";
    if (all && *all && snprintf(lang, sizeof lang, "LANG=%s", all) < (int)sizeof lang) env[k++] = lang;
    env[k] = NULL;
    return env;
}

static int fg_run_once(const char *script, const char *assign, const char *out_file, char *err, size_t errlen) {
    char tmpl[] = "/tmp/gatelab-gnuplot-XXXXXX";
    int fd = mkstemp(tmpl);
    if (fd < 0) {
        snprintf(err, errlen, "cannot create a temporary file for gnuplot's messages: %s", strerror(errno));
        return -1;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fd, 2);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addclose(&fa, fd);
    char *argv[] = {"gnuplot", "-e", (char *)assign, (char *)script, NULL};
    pid_t pid;
    char **env = fg_child_env();
    unlink(out_file); /* judged by the file it writes: not one left from before */
    int rc = env ? posix_spawnp(&pid, "gnuplot", &fa, NULL, argv, env) : ENOMEM;
    free(env);
    posix_spawn_file_actions_destroy(&fa);
    int status = 0, out = -1;
    if (rc != 0) {
        snprintf(err, errlen, "cannot run gnuplot (%s): install it (Debian: gnuplot-nox)", strerror(rc));
        goto done;
    }
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    char msg[1024] = "";
    ssize_t k = pread(fd, msg, sizeof msg - 1, 0);
    msg[k > 0 ? k : 0] = 0;
    struct stat sb;
    int wrote = stat(out_file, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size > 0;
    int empty = strstr(msg, "no valid points") || strstr(msg, "undefined value"); /* fg_draw skips the figure */
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !wrote || empty) {
        snprintf(err, errlen, "gnuplot %s (%s) %s: %s", script, assign,
                 !WIFEXITED(status) || WEXITSTATUS(status) != 0 ? "failed" : !wrote ? "wrote no file" : "found no data",
                 k > 0 ? msg : "(no message)");
        goto done;
    }
    if (k > 0) { /* drawn, with a remark: passed on, not a failure */
        for (ssize_t i = k - 1; i >= 0 && (msg[i] == '\n' || msg[i] == ' '); i--) msg[i] = 0;
        fprintf(stderr, "gatelab: warning: gnuplot drawing %s: %s\n", out_file, msg);
    }
    out = 0;
done:
    close(fd);
    unlink(tmpl);
    return out;
}

int figures_gnuplot(const char *script, const char *data, const char *out_base, const char *vars, char *err,
                    size_t errlen) {
    char dir[4096], path[4096], style[4096];
    run_repo_path(dir, sizeof dir, "scripts/plots");
    snprintf(path, sizeof path, "%s/%s", dir, script);
    snprintf(style, sizeof style, "%s/style.gp", dir);
    if (access(path, R_OK) != 0) {
        snprintf(err, errlen, "gnuplot script %s not found (set GATELAB_ROOT to the repository)", path);
        return -1;
    }
    if (strchr(data, '\'') || strchr(out_base, '\'') || strchr(dir, '\'')) {
        snprintf(err, errlen, "path with a single quote cannot be passed to gnuplot: %s", strchr(data, '\'') ? data : out_base);
        return -1;
    }
    static const char *const ext[3] = {"png", "pdf", "svg"}; /* svg: for `gatelab report --html` */
    for (int e = 0; e < 3; e++) {
        char assign[12288];
        snprintf(assign, sizeof assign, "style='%s'; data='%s'; out='%s.%s'%s%s", style, data, out_base, ext[e],
                 vars && *vars ? "; " : "", vars && *vars ? vars : "");
        char out_file[4200];
        snprintf(out_file, sizeof out_file, "%s.%s", out_base, ext[e]);
        if (fg_run_once(path, assign, out_file, err, errlen)) return -1;
    }
    return 0;
}

/* ---- helpers ---- */



void fg_rng_add(fg_rng *r, double v) {
    if (isnan(v) || isinf(v)) return;
    if (v < r->lo) r->lo = v;
    if (v > r->hi) r->hi = v;
}


/* Append "; <axis>min=…; <axis>max=…" to buf: the range padded by 6 % (or
 * by max(10 % of |value|, 1e-3) when constant), widened to hold 0 when
 * include0 is FG_ZERO, not padded below 0 when FG_NONNEG and every value is
 * ≥ 0.  Nothing when the range holds no value. */
void fg_rng_vars(fg_rng r, const char *axis, int include0, char *buf, size_t n) {
    if (r.lo > r.hi) return;
    if (include0 == FG_NONNEG) {
        double w = r.hi - r.lo, pad = w > 0 ? 0.06 * w : fmax(0.1 * fabs(r.hi), 1e-3);
        double lo = r.lo - pad, hi = r.hi + pad;
        if (r.lo >= 0 && lo < 0) lo = 0;
        if (!(hi > lo)) hi = lo + 1e-3;
        size_t k = strlen(buf);
        snprintf(buf + k, n - k, "%s%smin=%.9g; %smax=%.9g", k ? "; " : "", axis, lo, axis, hi);
        return;
    }
    if (include0) {
        if (r.lo > 0) r.lo = 0;
        if (r.hi < 0) r.hi = 0;
    }
    double w = r.hi - r.lo, pad = w > 0 ? 0.06 * w : fmax(0.1 * fabs(r.hi), 1e-3);
    double lo = r.lo - pad, hi = r.hi + pad;
    if (include0 && r.lo == 0) lo = w > 0 ? 0 : -pad; /* bars start at the axis */
    size_t k = strlen(buf);
    snprintf(buf + k, n - k, "%s%smin=%.9g; %smax=%.9g", k ? "; " : "", axis, lo, axis, hi);
}

static void fg_made(figures_summary *s, const char *name) {
    if (s->n_made < FIGURES_MAX) snprintf(s->made[s->n_made++], sizeof s->made[0], "%s", name);
}

void fg_skip(figures_summary *s, const char *name, const char *why) {
    if (s->n_skipped < FIGURES_MAX) snprintf(s->skipped[s->n_skipped++], sizeof s->skipped[0], "%s: %s", name, why);
}

void fg_note(figures_summary *s, const char *name, const char *what) {
    if (s->n_notes < FIGURES_MAX) snprintf(s->notes[s->n_notes++], sizeof s->notes[0], "%s: %s", name, what);
}

void figures_dir(const char *results, const char *experiment, char *out, size_t n) {
    snprintf(out, n, "%s/figures/%s", results, experiment && *experiment ? experiment : "all");
    /* the experiment's name as one safe folder name: a registry arrives from anywhere (collect), and
     * a '/', a quote or markup in a name must neither leave results/figures nor reach gnuplot's
     * quoted strings; every byte outside [A-Za-z0-9._-] becomes '_' (".." too) */
    char *c0 = out + strlen(results) + strlen("/figures/");
    for (char *c = c0; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '.' ||
              *c == '_' || *c == '-'))
            *c = '_';
    if (!strcmp(c0, ".") || !strcmp(c0, "..")) *c0 = '_';
}

/* Characters of title text per inch of canvas on the narrowest terminal: the PDF's 8-point
 * DejaVu Sans averages ≈ 4.6 pt a character (72 pt an inch: ≈ 15.6), the PNG and SVG fit
 * ≈ 20; 13.5 leaves the margins gnuplot keeps either side. */
#define FG_TITLE_CPI 13.5

static size_t fg_utf8_len(const char *s, size_t bytes) {
    size_t k = 0;
    for (size_t i = 0; i < bytes && s[i]; i++) k += ((unsigned char)s[i] & 0xC0) != 0x80;
    return k;
}

void figures_title_var(char *out, size_t n, const char *title, double fig_w, double share) {
    const size_t max = (size_t)(fig_w * (share > 0 && share <= 1 ? share : 1) * FG_TITLE_CPI);
    size_t k = (size_t)snprintf(out, n, "title='");
    const char *p = title;
    for (int line = 0; *p && k + 16 < n; line++) {
        while (*p == ' ') p++;
        size_t len = strlen(p), cut = len;
        if (fg_utf8_len(p, len) > max && line < 3) {
            /* the last space within max characters; one after ":" or "," when it is not too early */
            size_t best = 0, best_punct = 0, chars = 0;
            for (size_t i = 0; i < len && chars <= max; i++) {
                chars += ((unsigned char)p[i] & 0xC0) != 0x80;
                if (p[i] == ' ' && i > 0) {
                    best = i;
                    if (p[i - 1] == ':' || p[i - 1] == ',') best_punct = i;
                }
            }
            if (best_punct && best_punct * 5 >= best * 2) best = best_punct; /* from 40 % of the line on */
            if (best) cut = best;
        }
        if (line) k += (size_t)snprintf(out + k, n - k, "'.\"\\n\".'");
        for (size_t i = 0; i < cut && k + 3 < n; i++) out[k++] = p[i] == '\'' ? '`' : p[i];
        out[k] = 0;
        p += cut;
    }
    if (k + 2 > n) k = n - 2; /* truncated: still close the string */
    snprintf(out + k, n - k, "'");
}

/* A run's legend / title text; a single quote (which would end gnuplot's
 * string) becomes a backquote. */
void fg_label(const runset_row *r, char *out, size_t n) {
    char lam[48] = "";
    if (!isnan(r->lambda)) snprintf(lam, sizeof lam, " λ=%g", r->lambda);
    snprintf(out, n, "%s %s %s%s seed %s", r->data, r->scale, r->variant, lam, r->seed);
    for (char *c = out; *c; c++)
        if (*c == '\'') *c = '`';
}

/* Draw one figure; on failure record the error and return -1. */
int fg_draw(figures_summary *s, const char *script, const char *data, const char *out_dir, const char *name,
            const char *vars, char *err, size_t errlen) {
    char base[4096];
    snprintf(base, sizeof base, "%s/%s", out_dir, name);
    if (figures_gnuplot(script, data, base, vars, err, errlen)) {
        /* gnuplot found nothing to draw (every value missing): a figure without data is skipped,
         * with a note, like the others; any other gnuplot message is still a failure */
        if (!strstr(err, "no valid points") && !strstr(err, "undefined value")) return -1;
        static const char *const ext[] = {"png", "pdf", "svg"};
        for (size_t e = 0; e < sizeof ext / sizeof ext[0]; e++) {
            char f[4200];
            snprintf(f, sizeof f, "%s.%s", base, ext[e]);
            unlink(f); /* a half-drawn file */
        }
        fg_skip(s, name, "no data to draw (gnuplot: every value is missing)");
        err[0] = 0;
        return 0;
    }
    fg_made(s, name);
    return 0;
}

int fg_param_int(gl_db *db, const char *run, const char *key, int dflt, char *err, size_t errlen) {
    gl_key_value v;
    int rc = db_param_typed(db, run, key, &v, err, errlen);
    return rc == 1 ? (int)v.num : dflt;
}

/* ---- figure data ---- */

/* ---- runs that differ only by seed ---- */


void fg_groups_free(fg_groups *G) {
    for (int k = 0; k < G->n; k++) free(G->g[k].fp), free(G->g[k].mf);
    G->n = 0;
}

/* The fingerprint of a stored config: the run set's group key
 * (runset_group_key, "section.key=value" lines less the seed, threads,
 * cadence, log.* and the late keys at their default), so a figure's groups
 * are the tables' and the paper report's.  malloc'd, NULL when out of memory. */
static char *fg_fingerprint(const char *ini) { return runset_group_key(ini); }

static void fg_cat(char *out, size_t n, const char *s) {
    size_t k = strlen(out);
    if (*s) snprintf(out + k, n - k, "%s%s", k ? " " : "", s);
}

/* A single quote would end gnuplot's string: it becomes a backquote. */
void fg_unquote(char *s) {
    for (; *s; s++)
        if (*s == '\'') *s = '`';
}

/* The readable name of run r restricted to the fields in mask (1 data, 2
 * scale, 4 variant, 8 λ). */
static void fg_name(const runset_row *r, int mask, char *out, size_t n) {
    out[0] = 0;
    char lam[48] = "";
    if (!isnan(r->lambda)) snprintf(lam, sizeof lam, "λ=%g", r->lambda);
    if (mask & 1) fg_cat(out, n, r->data);
    if (mask & 2) fg_cat(out, n, r->scale);
    if (mask & 4) fg_cat(out, n, r->variant);
    if (mask & 8) fg_cat(out, n, lam);
}

/* Two groups with the same readable name: name them by the config keys that
 * differ between them too ("lr=0.001"), at most three: the fields of group a's
 * group key in canonical order (runset_group_each), each compared with the same
 * key of every clashing group's config ("" for a group without one). */
typedef struct {
    const fg_groups *G;
    int a, added;
    char extra[200];
} fg_clash;

static int fg_clash_key(const char *key, const char *va, void *ctx) {
    fg_clash *c = ctx;
    if (c->added >= 3) return 1;
    int differs = 0;
    for (int b = 0; b < c->G->n; b++)
        if (b != c->a && !strcmp(c->G->g[c->a].label, c->G->g[b].label)) {
            gl_key_value v;
            const gl_manifest *mb = c->G->g[b].mf;
            differs |= strcmp(va, mb && !manifest_key_get(mb, key, &v) ? v.text : "") != 0;
        }
    if (!differs) return 0;
    char kv[200];
    const char *dot = strchr(key, '.');
    snprintf(kv, sizeof kv, "%s=%.95s", dot ? dot + 1 : key, va);
    fg_cat(c->extra, sizeof c->extra, kv);
    c->added++;
    return 0;
}

static void fg_groups_disambiguate(fg_groups *G) {
    for (int a = 0; a < G->n; a++) {
        int clash = 0;
        for (int b = 0; b < G->n; b++) clash |= b != a && !strcmp(G->g[a].label, G->g[b].label);
        if (!clash || !G->g[a].mf) continue;
        fg_clash c = {G, a, 0, ""};
        runset_group_each(G->g[a].mf, fg_clash_key, &c);
        fg_cat(G->g[a].label, sizeof G->g[a].label, c.extra);
    }
    for (int a = 0; a < G->n; a++) fg_unquote(G->g[a].label);
}

/* Group the runs with want[i] set (want NULL: all) by configuration less the
 * seed, label each by what differs and record what they share.  Returns 0,
 * or -1 with a message (registry, memory). */
int fg_groups_build(gl_db *db, const runset_row *runs, int n, const unsigned char *want, fg_groups *G, char *err,
                    size_t errlen) {
    memset(G, 0, sizeof *G);
    for (int i = 0; i < n; i++) {
        if (want && !want[i]) continue;
        char *ini = NULL;
        int rc = db_run_config(db, runs[i].run_id, &ini, NULL, err, errlen);
        if (rc < 0) goto fail;
        char *fp = rc == 1 && ini ? fg_fingerprint(ini) : strdup(runs[i].run_id); /* no config: a group of its own */
        if (!fp) {
            free(ini);
            snprintf(err, errlen, "out of memory");
            goto fail;
        }
        int k = 0;
        while (k < G->n && strcmp(G->g[k].fp, fp)) k++;
        if (k < G->n && G->g[k].n < FG_SEEDS_MAX) {
            free(fp);
            G->g[k].idx[G->g[k].n++] = i;
        } else if (k == G->n && G->n < FG_GROUPS_MAX) {
            G->g[k].fp = fp;
            G->g[k].mf = rc == 1 && ini ? runset_resolve(ini) : NULL;
            G->g[k].idx[0] = i;
            G->g[k].n = 1;
            G->n++;
        } else {
            free(fp); /* past the figure's capacity: left out */
        }
        free(ini);
    }
    /* which readable fields differ between groups */
    int differ = 0;
    for (int k = 1; k < G->n; k++) {
        const runset_row *a = &runs[G->g[0].idx[0]], *b = &runs[G->g[k].idx[0]];
        differ |= strcmp(a->data, b->data) ? 1 : 0;
        differ |= strcmp(a->scale, b->scale) ? 2 : 0;
        differ |= strcmp(a->variant, b->variant) ? 4 : 0;
        differ |= (isnan(a->lambda) != isnan(b->lambda) || (!isnan(a->lambda) && a->lambda != b->lambda)) ? 8 : 0;
    }
    for (int k = 0; k < G->n; k++) {
        fg_name(&runs[G->g[k].idx[0]], differ, G->g[k].label, sizeof G->g[k].label);
        if (G->g[k].n > G->max_seeds) G->max_seeds = G->g[k].n;
        if (!k || G->g[k].n < G->min_seeds) G->min_seeds = G->g[k].n;
    }
    if (G->n) {
        const runset_row *r0 = &runs[G->g[0].idx[0]];
        fg_name(r0, 15 & ~differ, G->common, sizeof G->common);
        int one_seed = G->max_seeds == 1;
        for (int k = 1; k < G->n && one_seed; k++) one_seed = !strcmp(runs[G->g[k].idx[0]].seed, r0->seed);
        if (one_seed) {
            char sd[48];
            snprintf(sd, sizeof sd, "seed %s", r0->seed);
            fg_cat(G->common, sizeof G->common, sd);
        }
        fg_unquote(G->common);
        for (int k = 0; k < G->n; k++)
            if (!G->g[k].label[0]) snprintf(G->g[k].label, sizeof G->g[k].label, "%s", r0->variant);
    }
    fg_groups_disambiguate(G);
    return 0;
fail:
    fg_groups_free(G);
    return -1;
}

/* "mean ± sd over 3 seeds" / "one seed each" / "" (one run), for titles. */
void fg_spread_text(const fg_groups *G, char *out, size_t n) {
    if (G->max_seeds > 1 && G->min_seeds == G->max_seeds) snprintf(out, n, "mean ± sd over %d seeds", G->max_seeds);
    else if (G->max_seeds > 1) snprintf(out, n, "mean ± sd over %d–%d seeds", G->min_seeds, G->max_seeds);
    else snprintf(out, n, "%s", G->n > 1 && !strstr(G->common, "seed ") ? "one seed each" : "");
}

/* One point of a run's curve, to be averaged with the other seeds' at its step. */
typedef struct {
    long step;
    double wall, value;
} fg_pt;

static int fg_pt_cmp(const void *a, const void *b) {
    const fg_pt *x = a, *y = b;
    return (x->step > y->step) - (x->step < y->step);
}

/* Write one block: header "title\twall_s\tmean\tsd\tn", then per step the
 * mean over the seeds that logged it (sd 0 with one).  pts are sorted here.
 * Returns the rows written. */
static int fg_write_band(FILE *f, const char *title, fg_pt *pts, int np, fg_rng *ry) {
    qsort(pts, (size_t)np, sizeof *pts, fg_pt_cmp);
    fprintf(f, "%s\twall_s\tmean\tsd\tn\n", title);
    int rows = 0;
    for (int a = 0; a < np;) {
        int b = a;
        double sw = 0, v[FG_SEEDS_MAX];
        for (; b < np && pts[b].step == pts[a].step; b++) {
            sw += pts[b].wall;
            if (b - a < FG_SEEDS_MAX) v[b - a] = pts[b].value;
        }
        const int k = b - a;
        const st_summary s = st_describe(v, k < FG_SEEDS_MAX ? k : FG_SEEDS_MAX, 0.95);
        const double mean = s.mean, sd = isnan(s.sd) ? 0.0 : s.sd; /* one seed: no band drawn (n says 1) */
        fprintf(f, "%ld\t%.3f\t%.6g\t%.6g\t%d\n", pts[a].step, sw / k, mean, sd, k);
        fg_rng_add(ry, mean - sd);
        fg_rng_add(ry, mean + sd);
        rows++;
        a = b;
    }
    return rows;
}

/* The points of split/loss of every seed of group g (one per step: the row
 * with the most windows), wall time from each run's start.  *out malloc'd. */
static int fg_group_series(gl_db *db, const runset_row *runs, const fg_group *g, const char *split, fg_pt **out,
                           int *nout, char *err, size_t errlen) {
    fg_pt *all = NULL;
    int n = 0, cap = 0;
    *out = NULL;
    *nout = 0;
    for (int s = 0; s < g->n; s++) {
        gl_metric_point *p = NULL;
        int np = 0;
        double t0 = 0;
        if (db_metric_series(db, runs[g->idx[s]].run_id, split, "loss", NULL, &p, &np, err, errlen) ||
            db_run_t0(db, runs[g->idx[s]].run_id, &t0, err, errlen) < 0) {
            free(p);
            free(all);
            return -1;
        }
        if (n + np > cap) {
            cap = 2 * (n + np) + 16;
            fg_pt *q = realloc(all, (size_t)cap * sizeof *q);
            if (!q) {
                free(p);
                free(all);
                snprintf(err, errlen, "out of memory");
                return -1;
            }
            all = q;
        }
        for (int k = 0; k < np; k++) {
            if (isnan(p[k].value) || (k && p[k].step == p[k - 1].step)) continue; /* one row per step */
            all[n++] = (fg_pt){p[k].step, p[k].wall_time - t0, p[k].value};
        }
        free(p);
    }
    *out = all;
    *nout = n;
    return 0;
}

/* A figure's title: what it shows, then what every group shares and the
 * spread over seeds ("Loss during training: tinyshakespeare s, mean ± sd over 3 seeds"). */
void fg_group_title(const fg_groups *G, const char *what, char *out, size_t n) {
    char spread[64];
    fg_spread_text(G, spread, sizeof spread);
    snprintf(out, n, "%s%s%s%s%s", what, G->common[0] ? ": " : "", G->common,
             spread[0] ? (G->common[0] ? ", " : ": ") : "", spread);
}

/* loss data: for every group of G, its train and its val loss band (two
 * blocks each, fg_write_band), into path; the y range into *ry and the blocks
 * written into *blocks.  A group without both series is left out (and named
 * in s when s is not NULL).  0, or -1 with err. */
static int fg_loss_data(gl_db *db, const runset_row *runs, const fg_groups *G, const char *path, figures_summary *s,
                        fg_rng *ry, int *blocks, char *err, size_t errlen) {
    fg_pt *pt[2] = {NULL, NULL};
    int rc = -1;
    *blocks = 0;
    FILE *f = fileio_fopen_w(path);
    if (!f) {
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
        return -1;
    }
    for (int k = 0; k < G->n; k++) {
        int np[2];
        for (int q = 0; q < 2; q++) {
            free(pt[q]);
            pt[q] = NULL;
            if (fg_group_series(db, runs, &G->g[k], q ? "val" : "train", &pt[q], &np[q], err, errlen)) goto cleanup;
        }
        if (!np[0] || !np[1]) {
            if (s) fg_skip(s, G->g[k].label, "no train/loss or val/loss rows");
            continue;
        }
        for (int q = 0; q < 2; q++) {
            if ((*blocks)++) fprintf(f, "\n\n");
            fg_write_band(f, G->g[k].label, pt[q], np[q], ry);
        }
    }
    rc = 0;
cleanup:;
    int bad = ferror(f) | fclose(f);
    if (bad && !rc) snprintf(err, errlen, "writing %s failed", path), rc = -1;
    free(pt[0]);
    free(pt[1]);
    return rc;
}

static int fg_loss(gl_db *db, const runset_row *runs, int n, const char *data_dir, const char *out_dir, figures_summary *s,
                   char *err, size_t errlen) {
    char path[4096];
    int blocks = 0, rc = -1;
    fg_groups *G = malloc(sizeof *G);
    if (!G) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (fg_groups_build(db, runs, n, NULL, G, err, errlen)) {
        free(G);
        return -1;
    }
    snprintf(path, sizeof path, "%s/loss.tsv", data_dir);
    fg_rng ry = fg_rng_empty();
    if (fg_loss_data(db, runs, G, path, NULL, &ry, &blocks, err, errlen)) goto cleanup;
    if (!blocks) {
        fg_skip(s, "loss_step, loss_time", "no finished run has train/loss and val/loss");
        rc = 0;
        goto cleanup;
    }
    char vars[1200], title[400], tv[700];
    fg_group_title(G, "Loss during training", title, sizeof title);
    const double fig_w = blocks > 16 ? 8.5 : 6.5;
    figures_title_var(tv, sizeof tv, title, fig_w, 0.8); /* the key sits outside, on the right */
    for (int q = 0; q < 2; q++) {
        snprintf(vars, sizeof vars, "x='%s'; %s; band=%d; fig_w=%g", q ? "time" : "step", tv, G->max_seeds > 1, fig_w);
        fg_rng_vars(ry, "y", FG_NONNEG, vars, sizeof vars);
        if (fg_draw(s, "loss.gp", path, out_dir, q ? "loss_time" : "loss_step", vars, err, errlen)) goto cleanup;
    }
    rc = 0;
cleanup:
    fg_groups_free(G);
    free(G);
    return rc;
}

/* The token set of the TSA points of one (data, scale): early-exit points
 * join the figure only when measured on it. */
typedef struct {
    char data[64], scale[32];
    gl_prov prov;
} fg_tokens;

static const gl_prov *fg_tokens_of(const fg_tokens *t, int nt, const runset_row *r) {
    for (int i = 0; i < nt; i++)
        if (!strcmp(t[i].data, r->data) && !strcmp(t[i].scale, r->scale)) return &t[i].prov;
    return NULL;
}

/* Mean and sample sd of x[0..k) into m, sd (sd 0 with one value). */
void fg_mean_sd(const double *x, int k, double *m, double *sd) {
    const st_summary s = st_describe(x, k, 0.95);
    *m = s.mean;
    *sd = isnan(s.sd) ? 0.0 : s.sd; /* one seed: no error bar drawn */
}

/* One row of the Pareto files: knob, saved mean, sd, loss mean, sd, point label ("." none). */
static void fg_pareto_row(FILE *f, double knob, const double *saved, const double *loss, int k, const char *label,
                          fg_rng *rx, fg_rng *ry) {
    double sm, ss, lm, ls;
    fg_mean_sd(saved, k, &sm, &ss);
    fg_mean_sd(loss, k, &lm, &ls);
    fprintf(f, "%g\t%.4f\t%.4f\t%.6g\t%.6g\t%s\n", knob, sm, ss, lm, ls, label && *label ? label : ".");
    fg_rng_add(rx, sm - ss), fg_rng_add(rx, sm + ss);
    fg_rng_add(ry, lm - ls), fg_rng_add(ry, lm + ls);
}

#define FG_PARETO_SEEDS 64

/* Routed runs with a compute knob (the routing kinds table: TSA's λ, MoD's
 * capacity, random routing's α) grouped by (data, scale, variant), mean ± sd
 * over seeds per knob value, from their headlines (runs without one are left
 * out: noted).  Records each (data, scale)'s token set in tok.  Legend: "TSA
 * over λ", with the data, scale and variant when the figure holds several. */
static int fg_pareto_tsa(FILE *f, const runset_row *runs, int n, fg_tokens *tok, int *ntok, fg_rng *rx, fg_rng *ry,
                         figures_summary *s) {
    int blocks = 0, first = -1, several = 0;
    char note[200], p[64];
    for (int i = 0; i < n; i++) {
        if (isnan(runs[i].knob) || isnan(runs[i].tlops_saved) || !runs[i].headline) continue;
        if (first < 0) first = i;
        else several |= strcmp(runs[i].data, runs[first].data) || strcmp(runs[i].scale, runs[first].scale) ||
                        strcmp(runs[i].variant, runs[first].variant);
    }
    for (int i = 0; i < n;) {
        if (isnan(runs[i].knob) || isnan(runs[i].tlops_saved) || !runs[i].headline) {
            if (!isnan(runs[i].knob) && !runs[i].headline) {
                snprintf(note, sizeof note, "%s run %s left out: no headline (record it with `gatelab eval %s --record`)",
                         runs[i].routing, runs[i].run_id, runs[i].run_id);
                fg_note(s, "pareto", note);
            }
            i++;
            continue;
        }
        const gl_prov *have = fg_tokens_of(tok, *ntok, &runs[i]);
        if (!have && *ntok < 64) {
            snprintf(tok[*ntok].data, sizeof tok[0].data, "%s", runs[i].data);
            snprintf(tok[*ntok].scale, sizeof tok[0].scale, "%s", runs[i].scale);
            tok[*ntok].prov = runs[i].val_prov;
            have = &tok[(*ntok)++].prov;
        }
        int j = i;
        while (j < n && !strcmp(runs[j].data, runs[i].data) && !strcmp(runs[j].scale, runs[i].scale) &&
               !strcmp(runs[j].variant, runs[i].variant))
            j++;
        char title[200];
        snprintf(title, sizeof title, "%s over %s", runs[i].routing, runs[i].knob_sym);
        if (several) snprintf(title, sizeof title, "%s %s %s", runs[i].data, runs[i].scale, runs[i].variant);
        fg_unquote(title);
        fprintf(f, "%s%s\tsaved\tsaved_sd\tloss\tloss_sd\tlabel\n", blocks ? "\n\n" : "", title);
        int pts = 0;
        for (int a = i; a < j;) {
            int b = a, k = 0;
            double st[FG_PARETO_SEEDS], sl[FG_PARETO_SEEDS];
            /* a point is one group of the run set (the same run but for the seed): runs at one knob value that
             * differ in another key (train.steps, lr, …) are points of their own, never averaged together */
            for (; b < j && runs[b].group == runs[a].group &&
                   (runs[b].knob == runs[a].knob || (isnan(runs[b].knob) && isnan(runs[a].knob)));
                 b++) {
                const runset_row *r = &runs[b];
                if (isnan(r->tlops_saved) || isnan(r->val_loss) || !r->headline) continue;
                if (!db_prov_same(&r->val_prov, have)) {
                    snprintf(note, sizeof note, "%s run %s left out: measured on %s, not on the tokens of the others",
                             r->routing, r->run_id, db_prov_str(&r->val_prov, p, sizeof p));
                    fg_note(s, "pareto", note);
                    continue;
                }
                if (k < FG_PARETO_SEEDS) st[k] = 100.0 * r->tlops_saved, sl[k] = r->val_loss, k++;
            }
            if (k && !isnan(runs[a].knob)) {
                char lab[32];
                snprintf(lab, sizeof lab, "%s=%g", runs[a].knob_sym, runs[a].knob);
                fg_pareto_row(f, runs[a].knob, st, sl, k, lab, rx, ry);
                pts++;
            }
            a = b;
        }
        if (!pts) fprintf(f, "nan\tnan\tnan\tnan\tnan\t.\n");
        blocks++;
        i = j;
    }
    return blocks;
}

typedef struct {
    double tau, saved, loss;
} fg_tau_pt;

static int fg_tau_cmp(const void *a, const void *b) {
    const fg_tau_pt *x = a, *y = b;
    return (x->tau > y->tau) - (x->tau < y->tau);
}

/* The matched point (matched.*, τ bisected for a TSA run's α on the whole
 * split) of early-exit run r on the tokens want: 1 with *tau, *saved (%),
 * *loss; 0 none there; -1 error. */
static int fg_exit_matched(gl_db *db, const runset_row *r, const gl_prov *want, double *tau, double *saved,
                           double *loss, char *err, size_t errlen) {
    metric_key name;
    gl_metric_val ml, mt, mtau = {.value = NAN};
    metric_headline(&name, METRIC_MATCHED, "loss");
    int k = db_metric_at(db, r->run_id, "val", name.name, name.params, NULL, &ml, err, errlen);
    metric_headline(&name, METRIC_MATCHED, "tlops_saved");
    if (k == 1) k = db_metric_at(db, r->run_id, "val", name.name, name.params, &ml.prov, &mt, err, errlen);
    metric_headline(&name, METRIC_MATCHED, "tau");
    if (k == 1 && db_metric_at(db, r->run_id, "val", name.name, name.params, &ml.prov, &mtau, err, errlen) < 0)
        k = -1;
    if (k != 1) return k;
    if (!want || !db_prov_same(&ml.prov, want)) return 0;
    *tau = mtau.value, *saved = 100.0 * mt.value, *loss = ml.value;
    return 1;
}

/* The τ sweep (exit.tau* of `ablate --mode exit`) of early-exit run r on the
 * tokens want, appended to pts (cap); a sweep on other tokens is noted. */
static int fg_exit_sweep(gl_db *db, const runset_row *r, const gl_prov *want, fg_tau_pt *pts, int *np, int cap,
                         figures_summary *s, char *err, size_t errlen) {
    gl_metric_latest *m = NULL;
    int nm = 0, other = 0;
    char note[200], p[64], q[64];
    if (db_metrics_latest(db, r->run_id, ABLATE_SPLIT, &m, &nm, err, errlen)) return -1;
    for (int k = 0; k < nm; k++) {
        metric_ablation_key key;
        metric_key sib;
        if (!metric_ablation_parse(&m[k].key, &key) || strcmp(key.mode, METRIC_EXIT_MODE) || isnan(key.tau) ||
            strcmp(key.quantity, "tlops_saved") || key.cat != METRIC_NONE ||
            metric_ablation_sibling(&sib, &key, "loss", METRIC_NONE))
            continue;
        if (!want || !db_prov_same(&m[k].prov, want)) {
            if (!other++) {
                snprintf(note, sizeof note, "the τ sweep of %s on %s left out: the TSA points are on %s", r->run_id,
                         db_prov_str(&m[k].prov, p, sizeof p), want ? db_prov_str(want, q, sizeof q) : "none");
                fg_note(s, "pareto", note);
            }
            continue;
        }
        const double loss = db_metrics_latest_find_like(m, nm, &sib, &m[k]);
        if (isnan(loss) || isnan(m[k].value) || *np >= cap) continue;
        pts[(*np)++] = (fg_tau_pt){key.tau, 100.0 * m[k].value, loss};
    }
    free(m);
    return 0;
}

/* Early exit on the TSA points' tokens, per (data, scale): the matched point
 * over seeds (mean ± sd, labelled with the mean τ) and the τ sweep over
 * seeds (mean ± sd per τ, only its two ends labelled, so labels never pile
 * up).  Returns the blocks written, or -1. */
static int fg_pareto_exit(gl_db *db, FILE *e, const runset_row *runs, int n, const fg_tokens *tok, int ntok, fg_rng *rx,
                          fg_rng *ry, figures_summary *s, char *err, size_t errlen) {
    enum { CAP = 1024 };
    static fg_tau_pt sw[CAP];
    int eblocks = 0;
    for (int t = 0; t < ntok; t++) {
        double mt[FG_PARETO_SEEDS], ms[FG_PARETO_SEEDS], ml[FG_PARETO_SEEDS];
        int nmatch = 0, nsw = 0;
        for (int i = 0; i < n; i++) {
            if (!strstr(runs[i].variant, "early_exit") || strcmp(runs[i].data, tok[t].data) ||
                strcmp(runs[i].scale, tok[t].scale))
                continue;
            double tau, sv, ls;
            int k = fg_exit_matched(db, &runs[i], &tok[t].prov, &tau, &sv, &ls, err, errlen);
            if (k < 0) return -1;
            if (k == 1 && nmatch < FG_PARETO_SEEDS) mt[nmatch] = tau, ms[nmatch] = sv, ml[nmatch] = ls, nmatch++;
            if (fg_exit_sweep(db, &runs[i], &tok[t].prov, sw, &nsw, CAP, s, err, errlen)) return -1;
        }
        char pre[128] = "";
        if (ntok > 1) snprintf(pre, sizeof pre, "%s %s: ", tok[t].data, tok[t].scale);
        fg_unquote(pre);
        if (nmatch) {
            double tm, tsd;
            char lab[48], seeds[32] = "";
            fg_mean_sd(mt, nmatch, &tm, &tsd);
            snprintf(lab, sizeof lab, "τ=%.2f", tm);
            if (nmatch > 1) snprintf(seeds, sizeof seeds, " (%d seeds)", nmatch);
            fprintf(e, "%s%searly exit at matched α%s\tsaved\tsaved_sd\tloss\tloss_sd\tlabel\n", eblocks++ ? "\n\n" : "",
                    pre, seeds);
            fg_pareto_row(e, tm, ms, ml, nmatch, lab, rx, ry);
        }
        if (nsw) {
            qsort(sw, (size_t)nsw, sizeof *sw, fg_tau_cmp);
            fprintf(e, "%s%searly exit over τ\tsaved\tsaved_sd\tloss\tloss_sd\tlabel\n", eblocks++ ? "\n\n" : "", pre);
            for (int a = 0; a < nsw;) {
                int b = a;
                double xs[FG_PARETO_SEEDS], xl[FG_PARETO_SEEDS];
                int k = 0;
                for (; b < nsw && fabs(sw[b].tau - sw[a].tau) < 1e-9; b++)
                    if (k < FG_PARETO_SEEDS) xs[k] = sw[b].saved, xl[k] = sw[b].loss, k++;
                char lab[32] = "";
                if (a == 0 || b == nsw) snprintf(lab, sizeof lab, "τ=%g", sw[a].tau);
                fg_pareto_row(e, sw[a].tau, xs, xl, k, lab, rx, ry);
                a = b;
            }
        }
    }
    return eblocks;
}

/* pareto: TSA's λ curves and early exit, every point on the whole validation
 * split of its data (one token set per data and scale). */
static int fg_pareto(gl_db *db, const runset_row *runs, int n, const char *data_dir, const char *out_dir,
                     figures_summary *s, char *err, size_t errlen) {
    char path[4096], epath[4096];
    snprintf(path, sizeof path, "%s/pareto_tsa.tsv", data_dir);
    snprintf(epath, sizeof epath, "%s/pareto_exit.tsv", data_dir);
    FILE *f = fileio_fopen_w(path);
    if (!f) {
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
        return -1;
    }
    static fg_tokens tok[64];
    int ntok = 0;
    fg_rng rx = fg_rng_empty(), ry = fg_rng_empty();
    int blocks = fg_pareto_tsa(f, runs, n, tok, &ntok, &rx, &ry, s);
    if (ferror(f) | fclose(f)) {
        snprintf(err, errlen, "writing %s failed", path);
        return -1;
    }
    FILE *e = fileio_fopen_w(epath);
    if (!e) {
        snprintf(err, errlen, "cannot write %s: %s", epath, strerror(errno));
        return -1;
    }
    int eblocks = fg_pareto_exit(db, e, runs, n, tok, ntok, &rx, &ry, s, err, errlen);
    if ((ferror(e) | fclose(e)) && eblocks >= 0) {
        snprintf(err, errlen, "writing %s failed", epath);
        return -1;
    }
    if (eblocks < 0) return -1;
    if (!blocks) {
        fg_skip(s, "pareto", "no finished TSA run with a headline (the whole validation split)");
        return 0;
    }
    char vars[4600] = "", p[64], what[160], title[400];
    snprintf(what, sizeof what, "%s %s", tok[0].data, tok[0].scale);
    if (ntok == 1)
        snprintf(title, sizeof title, "TLOps saved vs validation loss with the skipping done, %s (mean ± sd over "
                 "seeds), on %s", what, db_prov_str(&tok[0].prov, p, sizeof p));
    else snprintf(title, sizeof title,
                  "TLOps saved vs validation loss with the skipping done (mean ± sd over seeds), each on the whole "
                  "validation split of its data");
    figures_title_var(vars, sizeof vars, title, 7.5, 0.85); /* pareto.gp's width; the key sits outside */
    if (eblocks) snprintf(vars + strlen(vars), sizeof vars - strlen(vars), "; exitdata='%s'", epath);
    fg_rng_vars(rx, "x", FG_NONNEG, vars, sizeof vars);
    fg_rng_vars(ry, "y", FG_NONNEG, vars, sizeof vars);
    return fg_draw(s, "pareto.gp", path, out_dir, "pareto", vars, err, errlen);
}

int figures_depth_map_data(const char *trace_path, const unsigned char *vocab, int vocab_size, int max_chars, int cols,
                           const char *data_path, int *rows, int *max_depth, char *err, size_t errlen) {
    gl_trace_data td;
    memset(&td, 0, sizeof td);
    if (trace_read(trace_path, &td, err, errlen)) return -1;
    int rc = -1;
    FILE *f = NULL;
    int g = -1; /* the trace's per-token router gate (gate table: TSA p) */
    for (int k = 0; k < GATE_COUNT && g < 0; k++)
        if (gatekind_info[k].axis[0] == GAX_ROUTER && gatekind_per_token((gl_gate)k) && td.gate[k]) g = k;
    if (g < 0 || td.n_router < 1 || td.n_steps < 1) {
        snprintf(err, errlen, "%s holds no halting probabilities (not a TSA run, or no evaluation yet)", trace_path);
        goto cleanup;
    }
    const long P = td.n_probe;
    const int R = td.n_router;
    const float *p = td.gate[g] + (size_t)(td.n_steps - 1) * R * P;
    long n = P < max_chars ? P : max_chars;
    f = fileio_fopen_w(data_path);
    if (!f) {
        snprintf(err, errlen, "cannot write %s: %s", data_path, strerror(errno));
        goto cleanup;
    }
    fprintf(f, "col\trow\tdepth\tchar\n");
    for (long t = 0; t < n; t++) {
        char cl[8];
        int id = td.probe_tokens[t];
        if (vocab && id >= 0 && id < vocab_size) analyze_char_label(vocab[id], cl);
        else snprintf(cl, sizeof cl, "?");
        fprintf(f, "%ld\t%ld\t%.4f\t%s\n", t % cols, t / cols, depth_token_soft(p, R, P, t), cl);
    }
    if (ferror(f) | fclose(f)) {
        f = NULL;
        snprintf(err, errlen, "writing %s failed", data_path);
        goto cleanup;
    }
    f = NULL;
    *rows = (int)((n + cols - 1) / cols);
    *max_depth = R + 1;
    rc = 0;
cleanup:
    if (f) fclose(f);
    trace_data_free(&td);
    return rc;
}

int figures_make_all(gl_db *db, const char *experiment, const char *results, const char *out_dir, figures_summary *s,
                     char *err, size_t errlen) {
    memset(s, 0, sizeof *s);
    char data_dir[4096];
    snprintf(data_dir, sizeof data_dir, "%s/data", out_dir);
    if (fileio_mkdir_p(data_dir, err, errlen)) return -1;
    runset_row *runs = NULL;
    int n = 0, rc = -1;
    if (tables_collect(db, experiment, &runs, &n, err, errlen)) return -1;
    if (!n) {
        fg_skip(s, "all figures", experiment ? "no finished run in this experiment" : "no finished run in the registry");
        free(runs);
        return 0;
    }
    tables_sort(runs, n);
    if (fg_loss(db, runs, n, data_dir, out_dir, s, err, errlen)) goto cleanup;
    if (fg_pareto(db, runs, n, data_dir, out_dir, s, err, errlen)) goto cleanup;
    if (fg_per_run(db, runs, n, results, data_dir, out_dir, s, err, errlen)) goto cleanup;
    rc = 0;
cleanup:
    free(runs);
    return rc;
}

/* ---- chosen runs overlaid: `gatelab figures --runs ID,... | --tag k=v` ---- */

char *figures_seedless_config(const char *ini) { return runset_group_key(ini); }

int figures_loss_runs(gl_db *db, const char *const *ids, int nids, const char *out_dir, figures_summary *s, char *err,
                      size_t errlen) {
    memset(s, 0, sizeof *s);
    char data_dir[4096], path[4200];
    snprintf(data_dir, sizeof data_dir, "%s/data", out_dir);
    if (fileio_mkdir_p(data_dir, err, errlen)) return -1;
    runset_row *runs = NULL;
    unsigned char *want = NULL;
    fg_groups *G = NULL;
    int n = 0, rc = -1, blocks = 0, chosen = 0;
    if (tables_collect(db, NULL, &runs, &n, err, errlen)) return -1;
    tables_sort(runs, n);
    want = calloc((size_t)(n ? n : 1), 1);
    G = malloc(sizeof *G);
    if (!want || !G) {
        snprintf(err, errlen, "out of memory");
        goto cleanup;
    }
    G->n = 0;
    for (int k = 0; k < nids; k++) {
        int found = 0;
        for (int i = 0; i < n; i++)
            if (!strcmp(runs[i].run_id, ids[k])) want[i] = 1, found = 1;
        if (!found) fg_skip(s, ids[k], "not a FINISHED run of the registry (only finished runs are drawn)");
        chosen += found;
    }
    if (!chosen) {
        fg_skip(s, "loss_runs_step, loss_runs_time", "none of the chosen runs is finished");
        rc = 0;
        goto cleanup;
    }
    if (fg_groups_build(db, runs, n, want, G, err, errlen)) goto cleanup;
    snprintf(path, sizeof path, "%s/loss_runs.tsv", data_dir);
    fg_rng ry = fg_rng_empty();
    if (fg_loss_data(db, runs, G, path, s, &ry, &blocks, err, errlen)) goto cleanup;
    if (!blocks) {
        fg_skip(s, "loss_runs_step, loss_runs_time", "no chosen run has train/loss and val/loss");
        rc = 0;
        goto cleanup;
    }
    char vars[800], what[64], title[400];
    snprintf(what, sizeof what, "Loss during training, %d chosen run%s", chosen, chosen == 1 ? "" : "s");
    fg_group_title(G, what, title, sizeof title);
    for (int q = 0; q < 2; q++) {
        snprintf(vars, sizeof vars, "x='%s'; title='%s'; band=%d; fig_w=%g", q ? "time" : "step", title,
                 G->max_seeds > 1, blocks > 16 ? 8.5 : 6.5);
        fg_rng_vars(ry, "y", 0, vars, sizeof vars);
        if (fg_draw(s, "loss.gp", path, out_dir, q ? "loss_runs_time" : "loss_runs_step", vars, err, errlen))
            goto cleanup;
    }
    rc = 0;
cleanup:
    if (G) fg_groups_free(G);
    free(G);
    free(want);
    free(runs);
    return rc;
}
