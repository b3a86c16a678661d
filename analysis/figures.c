/*
 * figures.c — figure data (TSV) from the registry and traces, and the
 * gnuplot runs that draw it (figures.h).
 *
 * Figures, each NAME.png + NAME.pdf in the output folder, data in data/:
 *   loss_step, loss_time        train and val loss of every run vs step / seconds
 *   pareto                      TSA: TLOps saved vs val loss over λ (+ early exit over τ)
 *   depth_alpha, depth_p        mean α by block (SATFormer), mean p by block (TSA), all runs
 *   alpha_heatmap_<run>         block × KV head mean α        (needs `gatelab analyze`)
 *   category_alpha_<run>        mean α by block and category  (needs `gatelab analyze`)
 *   category_p_<run>            mean p by block and category  (needs `gatelab analyze`)
 *   ablation_<run>              ΔL by intervention and category (needs `gatelab ablate`)
 *   heads_<run>                 block × KV head ΔL of single-gate zeroing (needs `gatelab heads`)
 *   depth_map_<run>             per-character effective depth over the probe text (TSA trace)
 *
 * What it does not do: compute statistics (the analyses logged them), or
 * print.  Only FINISHED runs are drawn.  gnuplot runs as a child process
 * (posix_spawnp) with its stderr captured; anything there is a failure, so a
 * figure that "works with warnings" is not accepted.
 */
#include "figures.h"

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

#include "store/categories.h"
#include "store/rundir.h"
#include "store/trace.h"
#include "ablate.h"
#include "analyze.h"
#include "depth.h"
#include "report.h"
#include "tables.h"

extern char **environ;

/* ---- gnuplot ---- */

static int fg_run_once(const char *script, const char *assign, char *err, size_t errlen) {
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
    int rc = posix_spawnp(&pid, "gnuplot", &fa, NULL, argv, environ);
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
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || k > 0) {
        snprintf(err, errlen, "gnuplot %s (%s) %s: %s", script, assign,
                 WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "wrote on stderr" : "failed", k > 0 ? msg : "(no message)");
        goto done;
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
    static const char *const ext[2] = {"png", "pdf"};
    for (int e = 0; e < 2; e++) {
        char assign[12288];
        snprintf(assign, sizeof assign, "style='%s'; data='%s'; out='%s.%s'%s%s", style, data, out_base, ext[e],
                 vars && *vars ? "; " : "", vars && *vars ? vars : "");
        if (fg_run_once(path, assign, err, errlen)) return -1;
    }
    return 0;
}

/* ---- helpers ---- */

/* The range of the values a figure shows, passed to gnuplot so a single
 * point or a constant never gives it an empty range. */
typedef struct {
    double lo, hi;
} fg_rng;

static fg_rng fg_rng_empty(void) { return (fg_rng){INFINITY, -INFINITY}; }

static void fg_rng_add(fg_rng *r, double v) {
    if (isnan(v) || isinf(v)) return;
    if (v < r->lo) r->lo = v;
    if (v > r->hi) r->hi = v;
}

/* Append "; <axis>min=…; <axis>max=…" to buf: the range padded by 6 % (or
 * by max(10 % of |value|, 1e-3) when constant), widened to hold 0 when
 * include0.  Nothing when the range holds no value. */
static void fg_rng_vars(fg_rng r, const char *axis, int include0, char *buf, size_t n) {
    if (r.lo > r.hi) return;
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

static void fg_skip(figures_summary *s, const char *name, const char *why) {
    if (s->n_skipped < FIGURES_MAX) snprintf(s->skipped[s->n_skipped++], sizeof s->skipped[0], "%s: %s", name, why);
}

/* A run's legend / title text; a single quote (which would end gnuplot's
 * string) becomes a backquote. */
static void fg_label(const tables_run *r, char *out, size_t n) {
    snprintf(out, n, "%s %s %s seed %s", r->data, r->scale, r->variant, r->seed);
    for (char *c = out; *c; c++)
        if (*c == '\'') *c = '`';
}

/* Draw one figure; on failure record the error and return -1. */
static int fg_draw(figures_summary *s, const char *script, const char *data, const char *out_dir, const char *name,
                   const char *vars, char *err, size_t errlen) {
    char base[4096];
    snprintf(base, sizeof base, "%s/%s", out_dir, name);
    if (figures_gnuplot(script, data, base, vars, err, errlen)) return -1;
    fg_made(s, name);
    return 0;
}

/* Match name against "prefix.L%d.H%d" / "prefix.L%d" / "prefix.L%d.<cat>" exactly. */
static int fg_match_lh(const char *name, const char *prefix, int *l, int *h) {
    size_t pl = strlen(prefix);
    if (strncmp(name, prefix, pl)) return 0;
    int end = -1;
    if (sscanf(name + pl, ".L%d.H%d%n", l, h, &end) == 2 && end >= 0 && name[pl + end] == 0) return 1;
    return 0;
}

static int fg_match_l(const char *name, const char *prefix, int *l, const char **suffix) {
    size_t pl = strlen(prefix);
    if (strncmp(name, prefix, pl)) return 0;
    int end = -1;
    if (sscanf(name + pl, ".L%d%n", l, &end) != 1 || end < 0) return 0;
    *suffix = name + pl + end; /* "" or ".structural" … */
    return 1;
}

static int fg_param_int(rdb *db, const char *run, const char *key, int dflt, char *err, size_t errlen) {
    char v[64];
    int rc = rdb_param(db, run, key, v, sizeof v, err, errlen);
    return rc == 1 ? atoi(v) : dflt;
}

/* ---- figure data ---- */

static int fg_loss(rdb *db, const tables_run *runs, int n, const char *data_dir, const char *out_dir, figures_summary *s,
                   char *err, size_t errlen) {
    char path[4096];
    FILE *f = NULL;
    int blocks = 0, rc = -1;
    rdb_point *tr = NULL, *va = NULL;
    snprintf(path, sizeof path, "%s/loss.tsv", data_dir);
    f = fopen(path, "w");
    if (!f) {
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
        return -1;
    }
    for (int i = 0; i < n; i++) {
        int ntr = 0, nva = 0;
        double t0 = 0;
        free(tr);
        free(va);
        tr = va = NULL;
        if (rdb_metric_series(db, runs[i].run_id, "train", "loss", &tr, &ntr, err, errlen) ||
            rdb_metric_series(db, runs[i].run_id, "val", "loss", &va, &nva, err, errlen) ||
            rdb_run_t0(db, runs[i].run_id, &t0, err, errlen) < 0)
            goto cleanup;
        int gtr = 0, gva = 0;
        for (int k = 0; k < ntr; k++) gtr += !isnan(tr[k].value);
        for (int k = 0; k < nva; k++) gva += !isnan(va[k].value);
        if (!gtr || !gva) continue;
        char label[256];
        fg_label(&runs[i], label, sizeof label);
        for (int pass = 0; pass < 2; pass++) {
            const rdb_point *p = pass ? va : tr;
            int np = pass ? nva : ntr;
            fprintf(f, "%s%s %s\twall_s\tloss\n", blocks ? "\n\n" : "", label, pass ? "val" : "train");
            for (int k = 0; k < np; k++)
                if (!isnan(p[k].value)) fprintf(f, "%ld\t%.3f\t%.6g\n", p[k].step, p[k].wall_time - t0, p[k].value);
            blocks++;
        }
    }
    if (ferror(f) | fclose(f)) {
        f = NULL;
        snprintf(err, errlen, "writing %s failed", path);
        goto cleanup;
    }
    f = NULL;
    if (!blocks) {
        fg_skip(s, "loss_step, loss_time", "no finished run has train/loss and val/loss");
        rc = 0;
        goto cleanup;
    }
    if (fg_draw(s, "loss.gp", path, out_dir, "loss_step", "x='step'", err, errlen) ||
        fg_draw(s, "loss.gp", path, out_dir, "loss_time", "x='time'", err, errlen))
        goto cleanup;
    rc = 0;
cleanup:
    if (f) fclose(f);
    free(tr);
    free(va);
    return rc;
}

/* TSA runs grouped by (data, scale, variant), mean over seeds per λ; early
 * exit from ablation rows exit.tau<τ>.{tlops_saved,loss}. */
static int fg_pareto(rdb *db, const tables_run *runs, int n, const char *data_dir, const char *out_dir,
                     figures_summary *s, char *err, size_t errlen) {
    char path[4096], epath[4096];
    snprintf(path, sizeof path, "%s/pareto_tsa.tsv", data_dir);
    snprintf(epath, sizeof epath, "%s/pareto_exit.tsv", data_dir);
    FILE *f = fopen(path, "w");
    if (!f) {
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
        return -1;
    }
    int blocks = 0, eblocks = 0;
    fg_rng rx = fg_rng_empty(), ry = fg_rng_empty();
    /* runs are sorted by data, scale, variant, λ, seed (tables' order) */
    for (int i = 0; i < n;) {
        if (isnan(runs[i].lambda) || isnan(runs[i].tlops_saved)) {
            i++;
            continue;
        }
        int j = i;
        while (j < n && !strcmp(runs[j].data, runs[i].data) && !strcmp(runs[j].scale, runs[i].scale) &&
               !strcmp(runs[j].variant, runs[i].variant))
            j++;
        fprintf(f, "%s%s %s %s\ttlops_saved\tval_loss\n", blocks ? "\n\n" : "", runs[i].data, runs[i].scale, runs[i].variant);
        int pts = 0;
        for (int a = i; a < j;) {
            int b = a;
            double st = 0, sl = 0;
            int k = 0;
            for (; b < j && (runs[b].lambda == runs[a].lambda || (isnan(runs[b].lambda) && isnan(runs[a].lambda))); b++)
                if (!isnan(runs[b].tlops_saved) && !isnan(runs[b].val_loss)) st += runs[b].tlops_saved, sl += runs[b].val_loss, k++;
            if (k && !isnan(runs[a].lambda)) {
                fprintf(f, "%g\t%.4f\t%.6g\n", runs[a].lambda, 100.0 * st / k, sl / k);
                fg_rng_add(&rx, 100.0 * st / k);
                fg_rng_add(&ry, sl / k);
                pts++;
            }
            a = b;
        }
        if (!pts) fprintf(f, "nan\tnan\tnan\n"); /* unreachable: the first run had both */
        blocks++;
        i = j;
    }
    if (ferror(f) | fclose(f)) {
        snprintf(err, errlen, "writing %s failed", path);
        return -1;
    }
    /* early exit: every run with exit.tau* rows is its own curve */
    FILE *e = fopen(epath, "w");
    if (!e) {
        snprintf(err, errlen, "cannot write %s: %s", epath, strerror(errno));
        return -1;
    }
    for (int i = 0; i < n; i++) {
        rdb_named *m = NULL;
        int nm = 0;
        if (rdb_split_metrics(db, runs[i].run_id, ABLATE_SPLIT, &m, &nm, err, errlen)) {
            fclose(e);
            return -1;
        }
        int wrote = 0;
        for (int k = 0; k < nm; k++) {
            double tau;
            int end = -1;
            if (sscanf(m[k].name, "exit.tau%lf.tlops_saved%n", &tau, &end) != 1 || end < 0 || m[k].name[end]) continue;
            char want[160];
            snprintf(want, sizeof want, "%.*sloss", (int)(strlen(m[k].name) - strlen("tlops_saved")), m[k].name);
            double loss = NAN;
            for (int q = 0; q < nm; q++)
                if (!strcmp(m[q].name, want)) loss = m[q].value;
            if (isnan(loss) || isnan(m[k].value)) continue;
            if (!wrote) fprintf(e, "%s%s %s early exit (%s)\ttlops_saved\tval_loss\n", eblocks ? "\n\n" : "", runs[i].data,
                                runs[i].scale, runs[i].seed);
            fprintf(e, "%g\t%.4f\t%.6g\n", tau, 100.0 * m[k].value, loss);
            fg_rng_add(&rx, 100.0 * m[k].value);
            fg_rng_add(&ry, loss);
            wrote = 1;
        }
        eblocks += wrote;
        free(m);
    }
    if (ferror(e) | fclose(e)) {
        snprintf(err, errlen, "writing %s failed", epath);
        return -1;
    }
    if (!blocks && !eblocks) {
        fg_skip(s, "pareto", "no finished TSA run (and no early-exit sweep from `gatelab ablate --mode exit`)");
        return 0;
    }
    char vars[4400] = "";
    if (eblocks && blocks) snprintf(vars, sizeof vars, "exitdata='%s'", epath);
    fg_rng_vars(rx, "x", 0, vars, sizeof vars);
    fg_rng_vars(ry, "y", 0, vars, sizeof vars);
    if (!blocks) /* only early exit: draw it as the main data */
        return fg_draw(s, "pareto.gp", epath, out_dir, "pareto", vars, err, errlen);
    return fg_draw(s, "pareto.gp", path, out_dir, "pareto", vars, err, errlen);
}

/* Per-run figures from the analysis, ablation and trace data, and the depth profiles across runs. */
static int fg_per_run(rdb *db, const tables_run *runs, int n, const char *results, const char *data_dir,
                      const char *out_dir, figures_summary *s, char *err, size_t errlen) {
    char pa[4096], pp[4096];
    snprintf(pa, sizeof pa, "%s/depth_alpha.tsv", data_dir);
    snprintf(pp, sizeof pp, "%s/depth_p.tsv", data_dir);
    FILE *fa = fopen(pa, "w"), *fp = fopen(pp, "w");
    int na = 0, np = 0, rc = -1;
    fg_rng ax = fg_rng_empty(), ay = fg_rng_empty(), px = fg_rng_empty(), py = fg_rng_empty();
    rdb_named *m = NULL;
    double *grid = NULL;
    if (!fa || !fp) {
        snprintf(err, errlen, "cannot write %s: %s", !fa ? pa : pp, strerror(errno));
        goto cleanup;
    }
    for (int i = 0; i < n; i++) {
        const tables_run *r = &runs[i];
        const char *id = r->run_id;
        int nm = 0;
        free(m);
        m = NULL;
        const int L = fg_param_int(db, id, "model.n_layer", 0, err, errlen);
        const int H = fg_param_int(db, id, "model.n_kv_head", 0, err, errlen);
        if (L <= 0 || H <= 0 || L > GL_MAX_LAYERS || H > ANALYZE_MAX_HEADS) continue;
        /* (L, H) heads grid, (L) α by block, (L) p by block, (L, 3) α / p by category */
        free(grid);
        grid = malloc(((size_t)L * H * 2 + (size_t)L * 8) * sizeof(double));
        if (!grid) {
            snprintf(err, errlen, "out of memory");
            goto cleanup;
        }
        double *ah = grid, *dh = grid + (size_t)L * H, *al = dh + (size_t)L * H, *pl = al + L, *ac = pl + L,
               *pc = ac + 3 * L;
        for (size_t q = 0; q < (size_t)L * H * 2 + (size_t)L * 8; q++) grid[q] = NAN;
        int has_ah = 0, has_al = 0, has_pl = 0, has_ac = 0, has_pc = 0, has_dh = 0;
        if (rdb_split_metrics(db, id, ANALYZE_SPLIT, &m, &nm, err, errlen)) goto cleanup;
        for (int k = 0; k < nm; k++) {
            int l, h;
            const char *suf;
            if (fg_match_lh(m[k].name, "alpha_mean", &l, &h)) {
                if (l < L && h < H) ah[l * H + h] = m[k].value, has_ah = 1;
            } else if (fg_match_l(m[k].name, "alpha_mean", &l, &suf) && l < L) {
                if (!*suf) al[l] = m[k].value, has_al = 1;
                for (int c = 0; c < CAT_COUNT; c++)
                    if (suf[0] == '.' && !strcmp(suf + 1, cat_name(c))) ac[l * 3 + c] = m[k].value, has_ac = 1;
            } else if (fg_match_l(m[k].name, "p_mean", &l, &suf) && l < L) {
                if (!*suf) pl[l] = m[k].value, has_pl = 1;
                for (int c = 0; c < CAT_COUNT; c++)
                    if (suf[0] == '.' && !strcmp(suf + 1, cat_name(c))) pc[l * 3 + c] = m[k].value, has_pc = 1;
            }
        }
        free(m);
        m = NULL;
        /* ablation rows: bars, and single-gate zeroing for the heads map */
        if (rdb_split_metrics(db, id, ABLATE_SPLIT, &m, &nm, err, errlen)) goto cleanup;
        char label[256], name[160], path[4096], vars[512];
        fg_label(r, label, sizeof label);
        int nbars = 0, has_cat[CAT_COUNT] = {0};
        fg_rng ry = fg_rng_empty();
        snprintf(path, sizeof path, "%s/ablation_%s.tsv", data_dir, id);
        FILE *fb = fopen(path, "w");
        if (!fb) {
            snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
            goto cleanup;
        }
        /* which category columns any intervention has (the others are left out) */
        for (int k = 0; k < nm; k++)
            for (int c = 0; c < CAT_COUNT; c++) {
                const char *d = strstr(m[k].name, ".delta_loss.");
                if (d && !strcmp(d + 12, cat_name(c)) && strncmp(m[k].name, "exit.", 5) && !isnan(m[k].value)) has_cat[c] = 1;
            }
        fprintf(fb, "intervention\tall tokens");
        for (int c = 0; c < CAT_COUNT; c++)
            if (has_cat[c]) fprintf(fb, "\t%s", cat_name(c));
        fprintf(fb, "\n");
        for (int k = 0; k < nm; k++) {
            int l, h, end = -1;
            if (sscanf(m[k].name, "zero.L%dH%d.delta_loss%n", &l, &h, &end) == 2 && end > 0 && !m[k].name[end]) {
                if (l < L && h < H) dh[l * H + h] = m[k].value, has_dh = 1;
                continue; /* single gates go to the heads map, not the bars */
            }
            const char *nmk = m[k].name, *suf = ".delta_loss";
            size_t ln = strlen(nmk);
            if (ln <= strlen(suf) || strcmp(nmk + ln - strlen(suf), suf) || !strncmp(nmk, "exit.", 5)) continue;
            char prefix[128];
            snprintf(prefix, sizeof prefix, "%.*s", (int)(ln - strlen(suf)), nmk);
            double cv[CAT_COUNT] = {NAN, NAN, NAN};
            for (int q = 0; q < nm; q++)
                for (int c = 0; c < CAT_COUNT; c++) {
                    char want[256];
                    snprintf(want, sizeof want, "%s.delta_loss.%s", prefix, cat_name(c));
                    if (!strcmp(m[q].name, want)) cv[c] = m[q].value;
                }
            char *dot = strchr(prefix, '.');
            if (dot) *dot = ':';
            char b[32];
            fprintf(fb, "%s\t%s", prefix, report_num(b, 32, m[k].value));
            for (int c = 0; c < CAT_COUNT; c++)
                if (has_cat[c]) fprintf(fb, "\t%s", report_num(b, 32, cv[c]));
            fprintf(fb, "\n");
            fg_rng_add(&ry, m[k].value);
            for (int c = 0; c < CAT_COUNT; c++) fg_rng_add(&ry, cv[c]);
            nbars++;
        }
        if (ferror(fb) | fclose(fb)) {
            snprintf(err, errlen, "writing %s failed", path);
            goto cleanup;
        }
        snprintf(name, sizeof name, "ablation_%s", id);
        if (nbars) {
            snprintf(vars, sizeof vars, "title='%s'; ncol=%d", label, 2 + has_cat[0] + has_cat[1] + has_cat[2]);
            fg_rng_vars(ry, "y", 1, vars, sizeof vars);
            if (fg_draw(s, "ablation_bars.gp", path, out_dir, name, vars, err, errlen)) goto cleanup;
        }
        /* heatmaps */
        for (int pass = 0; pass < 2; pass++) {
            const double *g = pass ? dh : ah;
            if (!(pass ? has_dh : has_ah)) continue;
            snprintf(name, sizeof name, "%s_%s", pass ? "heads" : "alpha_heatmap", id);
            snprintf(path, sizeof path, "%s/%s.tsv", data_dir, name);
            FILE *fh = fopen(path, "w");
            if (!fh) {
                snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
                goto cleanup;
            }
            fprintf(fh, "layer\tkv_head\t%s\n", pass ? "delta_loss" : "alpha_mean");
            char b[32];
            fg_rng rc3 = fg_rng_empty();
            for (int l = 0; l < L; l++)
                for (int h = 0; h < H; h++) {
                    fprintf(fh, "%d\t%d\t%s\n", l, h, report_num(b, 32, g[l * H + h]));
                    fg_rng_add(&rc3, g[l * H + h]);
                }
            if (ferror(fh) | fclose(fh)) {
                snprintf(err, errlen, "writing %s failed", path);
                goto cleanup;
            }
            snprintf(vars, sizeof vars, "title='%s'; cblabel='%s'", label,
                     pass ? "ΔL when zeroed alone (nats/token)" : "mean α (probe tokens)");
            fg_rng_vars(rc3, "cb", 0, vars, sizeof vars);
            if (fg_draw(s, "heatmap.gp", path, out_dir, name, vars, err, errlen)) goto cleanup;
        }
        /* category bars */
        for (int pass = 0; pass < 2; pass++) {
            const double *c3 = pass ? pc : ac;
            if (!(pass ? has_pc : has_ac)) continue;
            snprintf(name, sizeof name, "category_%s_%s", pass ? "p" : "alpha", id);
            snprintf(path, sizeof path, "%s/%s.tsv", data_dir, name);
            FILE *fc = fopen(path, "w");
            if (!fc) {
                snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
                goto cleanup;
            }
            int hc[CAT_COUNT] = {0}, ncat = 0;
            for (int l = 0; l < L; l++)
                for (int c = 0; c < CAT_COUNT; c++) hc[c] |= !isnan(c3[l * 3 + c]);
            fprintf(fc, "block");
            for (int c = 0; c < CAT_COUNT; c++)
                if (hc[c]) fprintf(fc, "\t%s", cat_name(c)), ncat++;
            fprintf(fc, "\n");
            char b[32];
            fg_rng ryc = fg_rng_empty();
            for (int l = 0; l < L; l++) {
                if (isnan(c3[l * 3]) && isnan(c3[l * 3 + 1]) && isnan(c3[l * 3 + 2])) continue;
                fprintf(fc, "%d", l);
                for (int c = 0; c < CAT_COUNT; c++)
                    if (hc[c]) {
                        fprintf(fc, "\t%s", report_num(b, 32, c3[l * 3 + c]));
                        fg_rng_add(&ryc, c3[l * 3 + c]);
                    }
                fprintf(fc, "\n");
            }
            if (ferror(fc) | fclose(fc)) {
                snprintf(err, errlen, "writing %s failed", path);
                goto cleanup;
            }
            snprintf(vars, sizeof vars, "title='%s'; ylab='%s'; ncol=%d", label,
                     pass ? "mean halting probability p" : "mean gate α", 1 + ncat);
            fg_rng_vars(ryc, "y", 1, vars, sizeof vars);
            if (fg_draw(s, "category_bars.gp", path, out_dir, name, vars, err, errlen)) goto cleanup;
        }
        /* depth profiles across runs */
        if (has_al) {
            fprintf(fa, "%s%s\tmean_alpha\n", na ? "\n\n" : "", label);
            char b[32];
            for (int l = 0; l < L; l++)
                if (!isnan(al[l])) {
                    fprintf(fa, "%d\t%s\n", l, report_num(b, 32, al[l]));
                    fg_rng_add(&ax, l);
                    fg_rng_add(&ay, al[l]);
                }
            na++;
        }
        if (has_pl) {
            fprintf(fp, "%s%s\tmean_p\n", np ? "\n\n" : "", label);
            char b[32];
            for (int l = 0; l < L; l++)
                if (!isnan(pl[l])) {
                    fprintf(fp, "%d\t%s\n", l, report_num(b, 32, pl[l]));
                    fg_rng_add(&px, l);
                    fg_rng_add(&py, pl[l]);
                }
            np++;
        }
        /* per-token depth map from the trace */
        if (!isnan(r->lambda)) {
            char tpath[4096], rdir[4096], e2[1024];
            snprintf(rdir, sizeof rdir, "%s/runs/%s", results, id);
            snprintf(tpath, sizeof tpath, "%s/trace.h5", rdir);
            snprintf(name, sizeof name, "depth_map_%s", id);
            snprintf(path, sizeof path, "%s/%s.tsv", data_dir, name);
            static gl_run run;
            int rows = 0, maxd = 0;
            if (access(tpath, R_OK) != 0) {
                fg_skip(s, name, "no trace.h5 in the run folder");
            } else if (run_open(&run, rdir, results, 1, e2, sizeof e2)) {
                fg_skip(s, name, e2);
            } else {
                int drc = figures_depth_map_data(tpath, run.st.vocab, run.st.vocab_size, 512, 64, path, &rows, &maxd, e2,
                                                 sizeof e2);
                run_close(&run);
                if (drc) fg_skip(s, name, e2);
                else {
                    snprintf(vars, sizeof vars, "title='%s: effective depth per character (last evaluation)'; maxdepth=%d; "
                                                "fig_w=9; fig_h=%.2f",
                             label, maxd, 1.3 + 0.28 * rows);
                    if (fg_draw(s, "depth_map.gp", path, out_dir, name, vars, err, errlen)) goto cleanup;
                }
            }
        }
    }
    int bad = (ferror(fa) | fclose(fa)) | (ferror(fp) | fclose(fp));
    fa = fp = NULL;
    if (bad) {
        snprintf(err, errlen, "writing %s failed", pa);
        goto cleanup;
    }
    char pv[512];
    if (na) {
        snprintf(pv, sizeof pv, "ylab='mean gate α (probe tokens)'");
        fg_rng_vars(ax, "x", 0, pv, sizeof pv);
        fg_rng_vars(ay, "y", 1, pv, sizeof pv);
        if (fg_draw(s, "depth_profile.gp", pa, out_dir, "depth_alpha", pv, err, errlen)) goto cleanup;
    } else {
        fg_skip(s, "depth_alpha", "no SATFormer run analysed (`gatelab analyze RUN`)");
    }
    if (np) {
        snprintf(pv, sizeof pv, "ylab='mean halting probability p'");
        fg_rng_vars(px, "x", 0, pv, sizeof pv);
        fg_rng_vars(py, "y", 1, pv, sizeof pv);
        if (fg_draw(s, "depth_profile.gp", pp, out_dir, "depth_p", pv, err, errlen)) goto cleanup;
    } else {
        fg_skip(s, "depth_p", "no TSA run analysed (`gatelab analyze RUN`)");
    }
    rc = 0;
cleanup:
    if (fa) fclose(fa);
    if (fp) fclose(fp);
    free(m);
    free(grid);
    return rc;
}

int figures_depth_map_data(const char *trace_path, const unsigned char *vocab, int vocab_size, int max_chars, int cols,
                           const char *data_path, int *rows, int *max_depth, char *err, size_t errlen) {
    gl_trace_data td;
    memset(&td, 0, sizeof td);
    if (trace_read(trace_path, &td, err, errlen)) return -1;
    int rc = -1;
    FILE *f = NULL;
    if (!td.p || td.n_router < 1 || td.n_steps < 1) {
        snprintf(err, errlen, "%s holds no halting probabilities (not a TSA run, or no evaluation yet)", trace_path);
        goto cleanup;
    }
    const long P = td.n_probe;
    const int R = td.n_router;
    const float *p = td.p + (size_t)(td.n_steps - 1) * R * P;
    long n = P < max_chars ? P : max_chars;
    f = fopen(data_path, "w");
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

int figures_make_all(rdb *db, const char *experiment, const char *results, const char *out_dir, figures_summary *s,
                     char *err, size_t errlen) {
    memset(s, 0, sizeof *s);
    char data_dir[4096];
    snprintf(data_dir, sizeof data_dir, "%s/data", out_dir);
    if (report_mkdir_p(data_dir, err, errlen)) return -1;
    tables_run *runs = NULL;
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
