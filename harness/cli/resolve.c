/*
 * resolve.c — the one resolver of RUN arguments and experiment names
 * (rules and contracts in resolve.h).
 *
 * The candidates are the registry's run ids (store/registry_runs.c
 * db_names, read-only) and the folder names under <results>/runs: a run
 * collected from another machine has a row but no folder, a run folder
 * copied in by hand has no row, and both are runs a user may name.  What a
 * command needs of the run (a folder, a row) is checked here too, so every
 * command says the same thing when it is missing.
 *
 * Not here: opening the run (store/rundir.c run_open, given the folder) or
 * writing to the registry (the commands do, in resolve_run.db).
 */
#include "resolve.h"

#include <dirent.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "args.h"
#include "store/rundir.h"

#define RESOLVE_LIST_MAX 8 /* candidates named in an "ambiguous" message */

static int rs_is_dir(const char *p) {
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}

/* A folder that holds a run: its config.ini or its checkpoint. */
static int rs_is_run_dir(const char *p) {
    char f[GL_PATH_MAX + 16];
    snprintf(f, sizeof f, "%s/%s", p, RUN_CONFIG);
    if (access(f, F_OK) == 0) return 1;
    snprintf(f, sizeof f, "%s/%s", p, RUN_CKPT);
    return access(f, F_OK) == 0;
}

/* The candidate names: the registry's run ids and the run folders. */
typedef struct {
    gl_name *v;
    int n, n_db; /* v[0..n_db) from the registry, then folders not in it */
    int have_db; /* the registry file exists and was read */
} rs_names;

static void rs_names_free(rs_names *c) {
    free(c->v);
    memset(c, 0, sizeof *c);
}

static int rs_find(const rs_names *c, const char *name) {
    for (int i = 0; i < c->n; i++)
        if (!strcmp(c->v[i].name, name)) return i;
    return -1;
}

/* Read the run ids of the registry at db_path (when it exists) and the
 * folders of runs_dir into c.  0, or -1 with err (an unreadable registry). */
static int rs_names_read(rs_names *c, const char *db_path, const char *runs_dir, char *err, size_t errlen) {
    memset(c, 0, sizeof *c);
    if (access(db_path, F_OK) == 0) {
        gl_db *db = NULL;
        if (db_open_readonly(&db, db_path, err, errlen) || db_names(db, DB_NAMES_RUNS, &c->v, &c->n, err, errlen)) {
            db_close(db);
            return -1;
        }
        db_close(db);
        c->n_db = c->n;
        c->have_db = 1;
    }
    DIR *dp = opendir(runs_dir);
    if (!dp) return 0; /* no runs folder: the registry's names alone */
    int cap = c->n;
    struct dirent *e;
    while ((e = readdir(dp))) {
        char p[GL_PATH_MAX + 300];
        if (e->d_name[0] == '.' || strlen(e->d_name) >= sizeof c->v[0].name) continue;
        snprintf(p, sizeof p, "%s/%s", runs_dir, e->d_name);
        if (!rs_is_dir(p) || rs_find(c, e->d_name) >= 0) continue;
        if (c->n == cap) {
            cap = cap ? 2 * cap : 32;
            gl_name *g = realloc(c->v, (size_t)cap * sizeof *g);
            if (!g) {
                closedir(dp);
                snprintf(err, errlen, "out of memory listing %s", runs_dir);
                return -1;
            }
            c->v = g;
        }
        snprintf(c->v[c->n].name, sizeof c->v[0].name, "%s", e->d_name);
        c->v[c->n++].deleted = 0;
    }
    closedir(dp);
    return 0;
}

/* r for a run folder given as a path: the id is its name, the results folder the one two up. */
static int rs_from_folder(const char *arg, const char *db, resolve_run *r, char *err, size_t errlen) {
    char typed[GL_PATH_MAX], up[GL_PATH_MAX], real[PATH_MAX];
    size_t len = strlen(arg);
    while (len > 1 && arg[len - 1] == '/') len--; /* "runs/a/" is "runs/a" */
    if (len >= sizeof typed) {
        snprintf(err, errlen, "run folder path too long: %.80s…", arg);
        return -1;
    }
    snprintf(typed, sizeof typed, "%.*s", (int)len, arg);
    snprintf(r->dir, sizeof r->dir, "%s", typed);
    snprintf(up, sizeof up, "%s", typed);
    snprintf(r->id, sizeof r->id, "%s", basename(up));
    /* <results>/runs/<id>: two folders up, from the real path when the path as typed
     * does not say ("a" typed inside results/runs, or "../a") */
    snprintf(up, sizeof up, "%s", typed);
    char *parent = dirname(up), pb[GL_PATH_MAX];
    snprintf(pb, sizeof pb, "%s", parent);
    const char *pname = basename(pb);
    if (!strcmp(pname, ".") || !strcmp(pname, "..") || !strcmp(pname, "/")) {
        if (!realpath(typed, real)) {
            snprintf(err, errlen, "%s: %s", typed, strerror(errno));
            return -1;
        }
        snprintf(up, sizeof up, "%s", real);
        parent = dirname(up);
    }
    snprintf(r->results, sizeof r->results, "%s", dirname(parent));
    if (db && *db) snprintf(r->db, sizeof r->db, "%s", db);
    else snprintf(r->db, sizeof r->db, "%s/gatelab.db", r->results);
    return 0;
}

/* ", a, b, c" (at most RESOLVE_LIST_MAX, then "…") of the candidates that start with prefix. */
static int rs_list_prefix(const rs_names *c, const char *prefix, char *out, size_t n) {
    size_t used = 0, plen = strlen(prefix);
    int k = 0;
    out[0] = '\0';
    for (int i = 0; i < c->n; i++) {
        if (strncmp(c->v[i].name, prefix, plen)) continue;
        if (k < RESOLVE_LIST_MAX && used < n)
            used += (size_t)snprintf(out + used, n - used, "%s%s%s", k ? ", " : "", c->v[i].name,
                                     c->v[i].deleted ? " (deleted)" : "");
        else if (k == RESOLVE_LIST_MAX && used < n)
            used += (size_t)snprintf(out + used, n - used, ", …");
        k++;
    }
    return k;
}

/* " (did you mean X?)" for the id one or two typos away, else "". */
static void rs_near(const rs_names *c, const char *arg, char *out, size_t n) {
    const char **names = malloc((size_t)(c->n > 0 ? c->n : 1) * sizeof *names);
    out[0] = '\0';
    if (!names) return;
    for (int i = 0; i < c->n; i++) names[i] = c->v[i].name;
    const char *near = args_suggest(arg, names, c->n);
    if (near) snprintf(out, n, " (did you mean %s?)", near);
    /* a mistyped prefix ("demo-cpy"): the same comparison against the start of each id */
    char (*pre)[80] = near ? NULL : malloc((size_t)(c->n > 0 ? c->n : 1) * sizeof *pre);
    const size_t la = strlen(arg);
    if (pre && la >= 3 && la < sizeof pre[0]) {
        const char **pn = (const char **)names;
        for (int i = 0; i < c->n; i++) {
            snprintf(pre[i], sizeof pre[i], "%.*s", (int)la, c->v[i].name);
            pn[i] = pre[i];
        }
        const char *p = args_suggest(arg, pn, c->n);
        int k = 0;
        for (int i = 0; p && i < c->n; i++) k += !strncmp(c->v[i].name, p, strlen(p));
        if (p && k == 1) {
            for (int i = 0; i < c->n; i++)
                if (!strncmp(c->v[i].name, p, strlen(p))) snprintf(out, n, " (did you mean %s?)", c->v[i].name);
        } else if (p) snprintf(out, n, " (did you mean %s…, the start of %d runs?)", p, k);
    }
    free(pre);
    free(names);
}

/* Check what need asks of r.  0, or -1 with err. */
static int rs_check_need(const resolve_run *r, int need, int have_db, char *err, size_t errlen) {
    if ((need & RESOLVE_DIR) && !r->dir[0]) {
        snprintf(err, errlen, "run %s is in the registry %s but has no folder %s/runs/%s (collected from another "
                              "machine? pass --results DIR for the results folder that holds it)",
                 r->id, r->db, r->results, r->id);
        return -1;
    }
    if ((need & RESOLVE_DB) && !r->in_db) {
        if (!have_db)
            snprintf(err, errlen, "run %s: no registry at %s (pass --db PATH, or the run folder inside its results "
                                  "folder)", r->id, r->db);
        else
            snprintf(err, errlen, "run %s is not in the registry %s (its folder is %s; `gatelab runs --db %s` lists "
                                  "the runs there)", r->id, r->db, r->dir, r->db);
        return -1;
    }
    return 0;
}

/* A run folder given as a path (or found in the working directory): r, and
 * whether its registry (when there is one) has the run.  0, or -1 with err. */
static int rs_folder(const char *arg, const char *db, int need, resolve_run *r, char *err, size_t errlen) {
    int have_db = 0;
    if (rs_from_folder(arg, db, r, err, errlen)) return -1;
    if (access(r->db, F_OK) == 0) {
        gl_db *h = NULL;
        char status[16];
        int e = db_open_readonly(&h, r->db, err, errlen) ? -1 : db_run_exists(h, r->id, status, err, errlen);
        db_close(h);
        if (e < 0) return -1;
        r->in_db = e;
        have_db = 1;
    }
    return rs_check_need(r, need, have_db, err, errlen);
}

int resolve_run_arg(const char *arg, const char *db, const char *results, int need, resolve_run *r, char *err,
                    size_t errlen) {
    const char *res = run_results_dir(results);
    char runs_dir[GL_PATH_MAX + 8];
    rs_names c;
    int rc = -1;
    memset(r, 0, sizeof *r);
    memset(&c, 0, sizeof c);
    if (!arg || !*arg) {
        snprintf(err, errlen, "no run given: pass a run id (or a unique prefix of one) or a run folder");
        return -1;
    }
    snprintf(runs_dir, sizeof runs_dir, "%s/runs", res);
    if (strchr(arg, '/')) { /* 1. a path */
        if (!rs_is_dir(arg)) {
            snprintf(err, errlen, "%s: no such run folder", arg);
            return -1;
        }
        return rs_folder(arg, db, need, r, err, errlen);
    }
    char dbp[GL_PATH_MAX + 16];
    args_db_path(db, results, dbp, sizeof dbp);
    if (rs_names_read(&c, dbp, runs_dir, err, errlen)) goto cleanup;
    int at = rs_find(&c, arg), matches = 0;
    if (at < 0 && rs_is_dir(arg) && rs_is_run_dir(arg)) { /* 3. a run folder in the working directory */
        rs_names_free(&c);
        return rs_folder(arg, db, need, r, err, errlen);
    }
    if (at < 0) { /* 4. a unique prefix */
        char list[1024];
        matches = rs_list_prefix(&c, arg, list, sizeof list);
        if (matches > 1) {
            snprintf(err, errlen, "run '%s' is ambiguous: %d runs start with it (%s); give more of the id", arg, matches,
                     list);
            goto cleanup;
        }
        for (int i = 0; i < c.n && matches == 1 && at < 0; i++)
            if (!strncmp(c.v[i].name, arg, strlen(arg))) at = i;
    }
    if (at < 0) {
        char near[200];
        rs_near(&c, arg, near, sizeof near);
        if (c.have_db)
            snprintf(err, errlen, "run %s is not in the registry %s nor a folder in %s%s; `gatelab runs` lists the "
                                  "runs (--db PATH or --results DIR for another registry)", arg, dbp, runs_dir, near);
        else
            snprintf(err, errlen, "no run '%s': not a folder in %s, and there is no registry at %s%s (pass --results "
                                  "DIR or set GATELAB_RESULTS for another results folder)", arg, runs_dir, dbp, near);
        goto cleanup;
    }
    /* 2. (or 4.) one run id */
    snprintf(r->id, sizeof r->id, "%s", c.v[at].name);
    snprintf(r->results, sizeof r->results, "%s", res);
    snprintf(r->db, sizeof r->db, "%s", dbp);
    r->in_db = at < c.n_db;
    r->deleted = r->in_db && c.v[at].deleted;
    snprintf(runs_dir + strlen(runs_dir), sizeof runs_dir - strlen(runs_dir), "/%s", r->id);
    if (rs_is_dir(runs_dir)) snprintf(r->dir, sizeof r->dir, "%s", runs_dir);
    rc = rs_check_need(r, need, c.have_db, err, errlen);
cleanup:
    rs_names_free(&c);
    return rc;
}

int resolve_experiment(gl_db *db, const char *name, char *err, size_t errlen) {
    gl_name *v = NULL;
    int n = 0;
    if (db_names(db, DB_NAMES_EXPERIMENTS, &v, &n, err, errlen)) return -1;
    const char **names = malloc((size_t)(n > 0 ? n : 1) * sizeof *names);
    if (!names) {
        free(v);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int found = 0;
    char list[1024] = "";
    size_t used = 0;
    for (int i = 0; i < n; i++) {
        names[i] = v[i].name;
        found |= !strcmp(v[i].name, name);
        if (used < sizeof list) used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", v[i].name);
    }
    if (!found) {
        const char *near = args_suggest(name, names, n);
        if (n)
            snprintf(err, errlen, "no experiment '%s' in %s; its experiments: %s%s%s%s", name, db_path(db), list,
                     near ? " (did you mean " : "", near ? near : "", near ? "?)" : "");
        else snprintf(err, errlen, "no experiment '%s' in %s: it has no runs yet", name, db_path(db));
    }
    free(names);
    free(v);
    return found;
}
