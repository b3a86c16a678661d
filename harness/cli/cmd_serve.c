/*
 * cmd_serve.c — `gatelab serve`: a read-only local web dashboard over the
 * registry and the runs' traces, served by libmicrohttpd (Debian's
 * libmicrohttpd-dev), one internal thread, so HDF5 and SQLite are only ever
 * used from one thread.
 *
 *   /                       the runs table (web/index.html, web/runs.js)
 *   /run/ID                 a run's page (web/run.html with ID filled in, web/run.js)
 *   /static/PATH            the embedded files of harness/cli/web/ (serve.h)
 *   /api/runs?experiment=E&status=S&tag=K=V...   the JSON of `runs --format json`
 *   /api/metrics?run=ID&split=S&name=GLOB&experiment=E   the JSON of `metrics --format json`
 *   /api/run?run=ID         one run: its `runs` row, config, latest metrics per split, the
 *                           trace's gates (shape and axes) and the probe text decoded
 *   /api/trace?run=ID&gate=/sat/alpha&step=-1    a gate's values at a step, with shape and axes
 *   /api/trace?run=ID&gate=G&summary=quantiles   per step and row (block or router) the
 *                           5/25/50/75/95% quantiles of the gate over tokens and heads
 * Endpoints, fields and errors: docs/serve.md.
 *
 * Safety, the whole of it: it binds 127.0.0.1 unless --bind says otherwise,
 * and on a loopback address answers only requests whose Host is a loopback
 * name (a page elsewhere cannot reach it by DNS rebinding); it answers GET and
 * HEAD only; the registry is opened read-only per request and nothing is
 * written anywhere; a URL never becomes a file path: static files come from
 * memory, and the only files read are <results>/runs/<ID>/trace.h5 and ckpt
 * of an ID the registry lists, refused (403) when the ID holds '/' or is
 * "." / "..", or when the file's realpath leaves the results folder (a
 * symlink out); every run id, tag and parameter reaches HTML escaped
 * (serve_html) and JSON through jansson; pages carry a Content-Security-
 * Policy without inline scripts, and the scripts write text with textContent.
 *
 * What it does not do: compute what the registry or trace does not hold
 * beyond a view's own reduction (quantiles of a gate, the tokens per step of
 * the x axis); sample from the checkpoint (that loads the model: `gatelab
 * sample`); cache (every request reads the registry and trace afresh, which
 * is what makes a RUNNING run's page live).
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/core/stats.h"
#include "analysis/render/figures.h"
#include "args.h"
#include "cli.h"
#include "jsonl.h"
#include "model/gatekind.h"
#include "resolve.h"
#include "serve.h"
#include "store/bpe.h"
#include "store/ckpt.h"
#include "store/registry.h"
#include "store/rundir.h"
#include "store/trace.h"
#include "views.h"

#define SERVE_STALE_S 1800 /* a RUNNING run silent this long shows as STALE, as in `gatelab runs` */
#define SERVE_MAX_TAGS 16

typedef struct {
    char results[PATH_MAX];     /* realpath of the results folder */
    char db[GL_PATH_MAX + 16];  /* the registry */
    int loopback;               /* bound to a loopback address: check Host */
} serve_ctx;

/* ---- a growing text buffer ---- */

typedef struct {
    char *p;
    size_t n, cap;
    int oom;
} serve_buf;

static void sb_put(serve_buf *b, const char *s, size_t n) {
    if (b->oom) return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = 2 * (b->n + n + 1) + 256;
        char *q = realloc(b->p, cap);
        if (!q) {
            b->oom = 1;
            return;
        }
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

static void sb_puts(serve_buf *b, const char *s) { sb_put(b, s, strlen(s)); }

/* s with & < > " ' as entities: safe in element text and in quoted attributes. */
static void serve_html(serve_buf *b, const char *s) {
    for (; *s; s++) {
        const char *e = NULL;
        switch (*s) {
        case '&': e = "&amp;"; break;
        case '<': e = "&lt;"; break;
        case '>': e = "&gt;"; break;
        case '"': e = "&quot;"; break;
        case '\'': e = "&#39;"; break;
        }
        if (e) sb_puts(b, e);
        else sb_put(b, s, 1);
    }
}

/* ---- responses ---- */

static enum MHD_Result serve_send(struct MHD_Connection *c, unsigned code, const char *type, const void *body,
                                  size_t len, int copy) {
    struct MHD_Response *r =
        MHD_create_response_from_buffer(len, (void *)body, copy ? MHD_RESPMEM_MUST_COPY : MHD_RESPMEM_PERSISTENT);
    if (!r) return MHD_NO;
    MHD_add_response_header(r, "Content-Type", type);
    MHD_add_response_header(r, "Cache-Control", "no-store");
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
    MHD_add_response_header(r, "Content-Security-Policy",
                            "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
                            "img-src 'self' data:; frame-ancestors 'none'; form-action 'self'");
    enum MHD_Result q = MHD_queue_response(c, code, r);
    MHD_destroy_response(r);
    return q;
}

/* v as the response (taken), or a 500 when it could not be built. */
static enum MHD_Result serve_json(struct MHD_Connection *c, unsigned code, json_t *v) {
    char *s = jsonl_dumps(v);
    json_decref(v);
    if (!s) return serve_send(c, 500, "text/plain; charset=utf-8", "out of memory\n", 14, 0);
    enum MHD_Result q = serve_send(c, code, "application/json; charset=utf-8", s, strlen(s), 1);
    free(s);
    return q;
}

/* {"error": msg} with status code. */
static enum MHD_Result serve_json_error(struct MHD_Connection *c, unsigned code, const char *msg) {
    json_t *o = json_object();
    jsonl_set(o, "error", jsonl_str(msg));
    jsonl_set(o, "status", jsonl_int(code));
    return serve_json(c, code, o);
}

/* A small HTML page saying msg (escaped), with status code. */
static enum MHD_Result serve_html_error(struct MHD_Connection *c, unsigned code, const char *msg) {
    serve_buf b = {0};
    char head[160];
    snprintf(head, sizeof head, "<!doctype html><meta charset=\"utf-8\"><title>gatelab serve: %u</title>"
                                "<p>%u: ", code, code);
    sb_puts(&b, head);
    serve_html(&b, msg);
    sb_puts(&b, "</p><p><a href=\"/\">all runs</a></p>\n");
    if (b.oom) {
        free(b.p);
        return serve_send(c, 500, "text/plain; charset=utf-8", "out of memory\n", 14, 0);
    }
    enum MHD_Result q = serve_send(c, code, "text/html; charset=utf-8", b.p, b.n, 1);
    free(b.p);
    return q;
}

static const serve_asset *serve_asset_find(const char *path) {
    for (int i = 0; i < serve_n_assets; i++)
        if (!strcmp(serve_assets[i].path, path)) return &serve_assets[i];
    return NULL;
}

/* ---- requests ---- */

static const char *serve_arg(struct MHD_Connection *c, const char *key) {
    const char *v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, key);
    return v && *v ? v : NULL;
}

typedef struct {
    const char *v[SERVE_MAX_TAGS];
    int n, over;
} serve_tags;

static enum MHD_Result serve_tag_arg(void *cls, enum MHD_ValueKind kind, const char *key, const char *value) {
    serve_tags *t = cls;
    if (strcmp(key, "tag") || !value || !*value) return MHD_YES;
    if (t->n == SERVE_MAX_TAGS) t->over = 1;
    else t->v[t->n++] = value;
    return MHD_YES;
}

/* 1 when id may name a folder under <results>/runs/ (no '/', not "." or ".."). */
static int serve_id_safe(const char *id) {
    return id && *id && !strchr(id, '/') && strcmp(id, ".") && strcmp(id, "..") && strlen(id) < 160;
}

/* The registry row of run id (not deleted) into *out: 1 found, 0 not, -1 error. */
static int serve_find_run(gl_db *db, const char *id, gl_run_row *out, char *err, size_t errlen) {
    gl_run_filter f = {.run_id = id};
    gl_run_row *rows = NULL;
    int n = 0;
    if (db_runs_find(db, &f, &rows, &n, err, errlen)) return -1;
    if (n >= 1 && out) *out = rows[0];
    free(rows);
    return n >= 1;
}

/* A run file opened for reading: *fd open on a regular file (the caller closes it) and out naming
 * it as /proc/self/fd/N, the path the HDF5 and checkpoint readers are given, so what they read is the
 * file that was checked (a file swapped for a FIFO after the check cannot block them).
 * <results>/runs/<id>/<name>: 0 when it exists inside the results folder and is a regular file;
 * 1 when it does not exist; -1 when its realpath leaves the results folder (a symlink out); -2 when
 * it is not a regular file (a FIFO, a socket, a device, a folder).  The open is non-blocking (a FIFO
 * with no writer would block it), and the server's single thread never waits on a file. */
static int serve_run_file(const serve_ctx *s, const char *id, const char *name, char *out, size_t n, int *fd) {
    char p[PATH_MAX + 256], real[PATH_MAX];
    *fd = -1;
    snprintf(p, sizeof p, "%s/runs/%s/%s", s->results, id, name);
    if (!realpath(p, real)) return 1;
    size_t k = strlen(s->results);
    if (strncmp(real, s->results, k) || real[k] != '/') return -1;
    struct stat st;
    if (stat(real, &st) || !S_ISREG(st.st_mode)) return errno == ENOENT ? 1 : -2;
    int f = open(real, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (f < 0) return 1;
    if (fstat(f, &st) || !S_ISREG(st.st_mode)) { /* swapped between stat and open */
        close(f);
        return -2;
    }
    *fd = f;
    snprintf(out, n, "/proc/self/fd/%d", f);
    return 0;
}

/* msg with every "/proc/self/fd/N" of fd replaced by the file's name in its run folder. */
static void serve_name_file(char *msg, size_t n, int fd, const char *id, const char *name) {
    char proc[40], *at, rest[1024];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
    if (!(at = strstr(msg, proc))) return;
    snprintf(rest, sizeof rest, "%s", at + strlen(proc));
    snprintf(at, n - (size_t)(at - msg), "runs/%s/%s%s", id, name, rest);
}

/* A RUNNING row whose process is gone or silent shows as STALE (as `runs` shows it; nothing is marked). */
static int serve_mark_stale(gl_db *db, gl_run_row *rows, int n, char *err, size_t errlen) {
    for (int i = 0; i < n; i++) {
        if (strcmp(rows[i].status, "RUNNING")) continue;
        char why[256];
        int st = db_run_stale(db, rows[i].run_id, SERVE_STALE_S, why, sizeof why, err, errlen);
        if (st < 0) return -1;
        if (st) snprintf(rows[i].status, sizeof rows[i].status, "STALE");
    }
    return 0;
}

static const char *const serve_statuses[] = {"SCHEDULED", "RUNNING", "FINISHED", "FAILED", "KILLED", NULL};

static enum MHD_Result serve_api_runs(struct MHD_Connection *c, gl_db *db) {
    char err[1024], status[16] = "";
    serve_tags tags = {{0}, 0, 0};
    MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, serve_tag_arg, &tags);
    if (tags.over) return serve_json_error(c, 400, "at most 16 tag filters");
    for (int i = 0; i < tags.n; i++)
        if (!strchr(tags.v[i], '=') || tags.v[i][0] == '=')
            return serve_json_error(c, 400, "tag: write it as key=value");
    const char *st = serve_arg(c, "status"), *exp = serve_arg(c, "experiment");
    if (st) {
        for (int i = 0; st[i] && i < 15; i++) status[i] = (char)toupper((unsigned char)st[i]);
        int ok = 0;
        for (int i = 0; serve_statuses[i]; i++) ok |= !strcmp(status, serve_statuses[i]);
        if (!ok) return serve_json_error(c, 400, "status: one of SCHEDULED, RUNNING, FINISHED, FAILED, KILLED");
    }
    if (exp) {
        int r = resolve_experiment(db, exp, err, sizeof err);
        if (r != 1) return serve_json_error(c, r < 0 ? 500 : 404, err);
    }
    gl_run_filter f = {.experiment = exp, .status = st ? status : NULL, .tags = tags.v, .ntags = tags.n};
    gl_run_row *rows = NULL;
    int n = 0;
    if (db_runs_find(db, &f, &rows, &n, err, sizeof err) || serve_mark_stale(db, rows, n, err, sizeof err)) {
        free(rows);
        return serve_json_error(c, 500, err);
    }
    json_t *a = json_array();
    for (int i = 0; i < n && a; i++)
        if (json_array_append_new(a, runs_json_row(&rows[i]))) {
            json_decref(a);
            a = NULL;
        }
    free(rows);
    return serve_json(c, 200, a);
}

static int serve_metric_row(const gl_metric_long *r, void *ctx) {
    char bad[512];
    json_t *params = metrics_params_json(r, bad, sizeof bad); /* a damaged cell: the request fails, as the CLI does */
    if (!params) return -2;
    return json_array_append_new(ctx, metrics_json_row(r, params)) ? -2 : 0;
}

static enum MHD_Result serve_api_metrics(struct MHD_Connection *c, gl_db *db) {
    char err[1024], split[32];
    gl_metric_filter f = {.experiment = serve_arg(c, "experiment"), .run_id = serve_arg(c, "run"),
                          .name_glob = serve_arg(c, "name")};
    const char *sp = serve_arg(c, "split"), *slash = f.name_glob ? strchr(f.name_glob, '/') : NULL;
    if (sp) { /* the registry's splits are lower case, as `metrics --split` takes them */
        snprintf(split, sizeof split, "%s", sp);
        for (char *q = split; *q; q++) *q = (char)tolower((unsigned char)*q);
        f.split = split;
    }
    if (slash) { /* name=SPLIT/GLOB, the form compare prints, as `metrics --name` takes it ('*': any split) */
        char ns[32];
        size_t k = (size_t)(slash - f.name_glob);
        const char *wild = strpbrk(f.name_glob, "?[");
        if (k >= sizeof ns || (wild && wild < slash))
            return serve_json_error(c, 400, "name: SPLIT/GLOB with a split name (val, test, ...) or '*' before '/'");
        memcpy(ns, f.name_glob, k);
        ns[k] = 0;
        for (char *q = ns; *q; q++) *q = (char)tolower((unsigned char)*q);
        if (strchr(ns, '*') && strcmp(ns, "*"))
            return serve_json_error(c, 400, "name: SPLIT/GLOB with a split name (val, test, ...) or '*' before '/'");
        if (strcmp(ns, "*")) {
            if (f.split && strcmp(f.split, ns)) return serve_json_error(c, 400, "name: its split and split= differ");
            snprintf(split, sizeof split, "%s", ns);
            f.split = split;
        }
        f.name_glob = slash + 1;
    }
    if (f.run_id) {
        if (!serve_id_safe(f.run_id)) return serve_json_error(c, 403, "run: not a run id");
        int r = serve_find_run(db, f.run_id, NULL, err, sizeof err);
        if (r != 1) return serve_json_error(c, r < 0 ? 500 : 404, r < 0 ? err : "run: no such run in the registry");
    }
    if (f.experiment) {
        int r = resolve_experiment(db, f.experiment, err, sizeof err);
        if (r != 1) return serve_json_error(c, r < 0 ? 500 : 404, err);
    }
    json_t *a = json_array();
    if (!a) return serve_json_error(c, 500, "out of memory");
    int rc = db_metrics_each(db, &f, serve_metric_row, a, err, sizeof err);
    if (rc) {
        json_decref(a);
        return serve_json_error(c, 500, rc == -2 ? "out of memory" : err);
    }
    return serve_json(c, 200, a);
}

/* ---- traces ---- */

/* The gate a request names: its trace path "/sat/alpha" or its key "alpha"; -1 when none. */
static int serve_gate(const char *name) {
    for (int g = 0; g < GATE_COUNT; g++) {
        char path[96];
        snprintf(path, sizeof path, "/%s/%s", gatekind_info[g].group, gatekind_info[g].dataset);
        if (!strcmp(name, path) || !strcmp(name, gatekind_info[g].key)) return g;
    }
    return -1;
}

/* gate g's description: key, path, title, symbol, axes and shape (one step). */
static json_t *serve_gate_json(const gl_trace_data *t, int g) {
    const gl_gate_info *gi = &gatekind_info[g];
    char path[96];
    long dims[3];
    snprintf(path, sizeof path, "/%s/%s", gi->group, gi->dataset);
    int rank = gatekind_dims((gl_gate)g, t->n_layer, t->n_kv_head, t->n_probe, dims);
    json_t *o = json_object(), *axes = json_array(), *shape = json_array();
    for (int k = 0, d = 0; k < 3; k++) {
        if (gi->axis[k] == GAX_NONE) continue;
        json_array_append_new(axes, jsonl_str(gatekind_axis_name(gi->axis[k])));
        if (d < rank) json_array_append_new(shape, jsonl_int(dims[d++]));
    }
    jsonl_set(o, "key", jsonl_str(gi->key));
    jsonl_set(o, "path", jsonl_str(path));
    jsonl_set(o, "title", jsonl_str(gi->title));
    jsonl_set(o, "symbol", jsonl_str(gi->symbol));
    jsonl_set(o, "per_token", json_boolean(gatekind_per_token((gl_gate)g)));
    jsonl_set(o, "coef", jsonl_str(gi->coef));
    jsonl_set(o, "axes", axes);
    jsonl_set(o, "shape", shape);
    return o;
}

/* Read the trace of run id: 0 with *t, 1 when the run has none (or it cannot be
 * read yet: msg says why), -1 when its path leaves the results folder or is not
 * a regular file. */
static int serve_trace(const serve_ctx *s, const char *id, gl_trace_data *t, char *msg, size_t n) {
    char path[PATH_MAX];
    int fd;
    memset(t, 0, sizeof *t);
    int r = serve_run_file(s, id, RUN_TRACE, path, sizeof path, &fd);
    if (r) {
        snprintf(msg, n, r == -1   ? "the run's trace.h5 lies outside the results folder"
                         : r == -2 ? "the run's trace.h5 is not a regular file (a FIFO, device or folder): not read"
                                   : "the run has no trace.h5 yet");
        return r < 0 ? -1 : 1;
    }
    r = trace_read(path, t, msg, n);
    close(fd);
    if (r) {
        serve_name_file(msg, n, fd, id, RUN_TRACE);
        trace_data_free(t);
        return 1;
    }
    return 0;
}

static const double serve_qs[] = {0.05, 0.25, 0.5, 0.75, 0.95};

/* Per step and row, the quantiles of the gate's values in that row (tokens × width). */
static json_t *serve_quantiles(const gl_trace_data *t, int g) {
    long dims[3];
    int rank = gatekind_dims((gl_gate)g, t->n_layer, t->n_kv_head, t->n_probe, dims);
    const size_t per_step = gatekind_size((gl_gate)g, t->n_layer, t->n_kv_head, t->n_probe);
    const long R = rank ? dims[0] : 1;
    const size_t per_row = per_step / (size_t)R;
    double *tmp = malloc((per_row ? per_row : 1) * sizeof *tmp);
    json_t *q = json_array(), *qs = json_array();
    if (!tmp || !q || !qs) {
        free(tmp);
        json_decref(q);
        json_decref(qs);
        return NULL;
    }
    for (size_t k = 0; k < sizeof serve_qs / sizeof serve_qs[0]; k++) json_array_append_new(qs, jsonl_num(serve_qs[k]));
    for (int si = 0; si < t->n_steps; si++) {
        json_t *step = json_array();
        for (long r = 0; r < R; r++) {
            const float *src = t->gate[g] + (size_t)si * per_step + (size_t)r * per_row;
            size_t m = 0;
            for (size_t i = 0; i < per_row; i++)
                if (isfinite(src[i])) tmp[m++] = src[i];
            st_sort(tmp, (int)m);
            json_t *row = json_array();
            for (size_t k = 0; k < sizeof serve_qs / sizeof serve_qs[0]; k++)
                json_array_append_new(row, jsonl_num(st_quantile_sorted(tmp, (int)m, serve_qs[k])));
            json_array_append_new(step, row);
        }
        json_array_append_new(q, step);
    }
    free(tmp);
    json_t *o = json_object();
    jsonl_set(o, "q", qs);
    jsonl_set(o, "quantiles", q);
    return o;
}

static json_t *serve_steps_json(const gl_trace_data *t) {
    json_t *a = json_array();
    for (int i = 0; i < t->n_steps; i++) json_array_append_new(a, jsonl_int(t->step[i]));
    return a;
}

static enum MHD_Result serve_api_trace(struct MHD_Connection *c, const serve_ctx *s, gl_db *db) {
    char err[1024];
    const char *id = serve_arg(c, "run"), *gname = serve_arg(c, "gate"), *stp = serve_arg(c, "step"),
               *summary = serve_arg(c, "summary");
    if (!id) return serve_json_error(c, 400, "run: missing (/api/trace?run=ID&gate=/sat/alpha&step=-1)");
    if (!serve_id_safe(id)) return serve_json_error(c, 403, "run: not a run id");
    int r = serve_find_run(db, id, NULL, err, sizeof err);
    if (r != 1) return serve_json_error(c, r < 0 ? 500 : 404, r < 0 ? err : "run: no such run in the registry");
    int g = gname ? serve_gate(gname) : -1;
    if (g < 0) return serve_json_error(c, 400, "gate: a trace path (/sat/alpha, /tsa/p, /resformer/lambda, "
                                               "/exit/confidence, /headgate/g) or its key (alpha, p, ...)");
    if (summary && strcmp(summary, "quantiles")) return serve_json_error(c, 400, "summary: only 'quantiles'");
    long want = -1;
    if (stp) {
        char *e;
        errno = 0;
        want = strtol(stp, &e, 10);
        if (errno || *e || want < -1) return serve_json_error(c, 400, "step: a step of the trace, or -1 for the last");
    }
    gl_trace_data t;
    r = serve_trace(s, id, &t, err, sizeof err);
    if (r) return serve_json_error(c, r < 0 ? 403 : 404, err);
    enum MHD_Result q;
    if (!t.gate[g]) {
        snprintf(err, sizeof err, "gate %s: this run's trace does not record it", gname);
        q = serve_json_error(c, 404, err);
        goto done;
    }
    if (!t.n_steps) {
        q = serve_json_error(c, 404, "the trace has no evaluation yet");
        goto done;
    }
    json_t *o = jsonl_run(id, NULL);
    jsonl_set(o, "gate", serve_gate_json(&t, g));
    jsonl_set(o, "steps", serve_steps_json(&t));
    if (summary) {
        json_t *qs = serve_quantiles(&t, g);
        if (!qs) {
            json_decref(o);
            q = serve_json_error(c, 500, "out of memory");
            goto done;
        }
        json_object_update(o, qs);
        json_decref(qs);
    } else {
        int si = t.n_steps - 1;
        if (want >= 0) {
            for (si = 0; si < t.n_steps && t.step[si] != want; si++) {}
            if (si == t.n_steps) {
                json_decref(o);
                q = serve_json_error(c, 404, "step: the trace has no evaluation at that step (see steps in "
                                             "/api/run)");
                goto done;
            }
        }
        const size_t per_step = gatekind_size((gl_gate)g, t.n_layer, t.n_kv_head, t.n_probe);
        json_t *v = json_array();
        for (size_t i = 0; i < per_step && v; i++)
            json_array_append_new(v, jsonl_num(t.gate[g][(size_t)si * per_step + i]));
        jsonl_set(o, "step", jsonl_int(t.step[si]));
        jsonl_set(o, "values", v);
    }
    q = serve_json(c, 200, o);
done:
    trace_data_free(&t);
    return q;
}

/* p[0..n) into b as UTF-8: every byte that does not start a whole, valid sequence becomes U+FFFD
 * (a BPE token may hold half a character; jansson takes valid UTF-8 only). */
static void serve_utf8(serve_buf *b, const uint8_t *p, size_t n) {
    for (size_t i = 0; i < n;) {
        uint8_t c = p[i];
        size_t len = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 && c >= 0xC2 ? 2 : (c & 0xF0) == 0xE0 ? 3
                                                       : (c & 0xF8) == 0xF0 && c <= 0xF4 ? 4 : 0;
        int ok = len > 0 && i + len <= n && c != 0;
        for (size_t k = 1; ok && k < len; k++) ok = (p[i + k] & 0xC0) == 0x80;
        if (ok && len == 3) ok = !(c == 0xE0 && p[i + 1] < 0xA0) && !(c == 0xED && p[i + 1] >= 0xA0);
        if (ok && len == 4) ok = !(c == 0xF0 && p[i + 1] < 0x90) && !(c == 0xF4 && p[i + 1] >= 0x90);
        if (ok) {
            sb_put(b, (const char *)p + i, len);
            i += len;
        } else {
            sb_puts(b, "\xef\xbf\xbd");
            i++;
        }
    }
}

/* Token id's bytes: from the trace's own /vocab when it carries one, else from the checkpoint's
 * state (a char run's byte table, a BPE run's merges through tok); NULL for an id outside the
 * vocabulary (every table index is bounded: a damaged trace names ids of any size). */
static const uint8_t *serve_token(const gl_trace_data *t, const gl_train_state *st, const bpe_tok *tok, int id,
                                  size_t *len) {
    if (t->n_vocab > 0) {
        if (id < 0 || id >= t->n_vocab) return NULL;
        *len = (size_t)(t->vocab_offset[id + 1] - t->vocab_offset[id]);
        return t->vocab_bytes + t->vocab_offset[id];
    }
    if (!st || id < 0) return NULL;
    if (tok && tok->V > 0) return id < tok->V ? bpe_token(tok, id, len) : NULL;
    if (id >= ckpt_vocab_bytes(st)) return NULL;
    *len = 1;
    return &st->vocab[id];
}

/* The probe text: one string per token (its bytes as UTF-8, U+FFFD for what is not), from the
 * trace's /vocab, else the checkpoint's tokenizer; null when neither is there. */
static json_t *serve_probe_text(const serve_ctx *s, const char *id, const gl_trace_data *t) {
    char path[PATH_MAX], err[512];
    gl_train_state *st = NULL;
    bpe_tok tok;
    memset(&tok, 0, sizeof tok);
    json_t *a = NULL;
    if (t->n_vocab <= 0) {
        int fd;
        if (serve_run_file(s, id, RUN_CKPT, path, sizeof path, &fd)) return json_null();
        st = calloc(1, sizeof *st);
        int bad = !st || ckpt_read_state(path, st, err, sizeof err);
        close(fd);
        if (bad || (st->tokenizer == TOK_BPE && bpe_build(&tok, &st->bpe, err, sizeof err))) goto done;
    }
    a = json_array();
    for (int i = 0; a && i < t->n_probe; i++) {
        size_t len = 0;
        const uint8_t *p = serve_token(t, st, &tok, t->probe_tokens[i], &len);
        serve_buf b = {0};
        if (p && len) serve_utf8(&b, p, len);
        else sb_puts(&b, "\xef\xbf\xbd");
        json_array_append_new(a, b.oom ? json_null() : jsonl_str(b.p));
        free(b.p);
    }
done:
    bpe_free(&tok);
    free(st);
    return a ? a : json_null();
}

/* The tokens one optimiser step consumes (batch_size × seq_len), or null when the params lack either. */
static json_t *serve_tokens_per_step(gl_db *db, const char *id) {
    gl_key_value b, t; /* typed (db_param_typed), never atoll */
    char err[256];
    if (db_param_typed(db, id, "train.batch_size", &b, err, sizeof err) != 1 ||
        db_param_typed(db, id, "model.seq_len", &t, err, sizeof err) != 1)
        return json_null();
    return jsonl_int((long long)b.num * (long long)t.num);
}

static json_t *serve_latest(gl_db *db, const char *id, char *err, size_t errlen) {
    static const char *const splits[] = {"val", "test", "train"};
    json_t *a = json_array();
    for (size_t k = 0; k < sizeof splits / sizeof splits[0]; k++) {
        gl_metric_latest *m = NULL;
        int n = 0;
        if (db_metrics_latest(db, id, splits[k], &m, &n, err, errlen)) {
            json_decref(a);
            return NULL;
        }
        for (int i = 0; i < n; i++) {
            char on[96], label[METRIC_NAME_MAX + METRIC_PARAMS_MAX];
            json_t *o = json_object();
            metric_label(m[i].key.name, m[i].key.params, label, sizeof label);
            jsonl_set(o, "split", jsonl_str(splits[k]));
            jsonl_set(o, "name", jsonl_str(label));
            jsonl_set(o, "value", jsonl_num(m[i].value));
            jsonl_set(o, "se", jsonl_num(m[i].se));
            jsonl_set(o, "step", jsonl_int(m[i].step));
            jsonl_set(o, "measured_on", m[i].prov.count > 0 ? jsonl_str(db_prov_str(&m[i].prov, on, sizeof on))
                                                            : json_null());
            json_array_append_new(a, o);
        }
        free(m);
    }
    return a;
}

static enum MHD_Result serve_api_run(struct MHD_Connection *c, const serve_ctx *s, gl_db *db) {
    char err[1024];
    const char *id = serve_arg(c, "run");
    if (!id) return serve_json_error(c, 400, "run: missing (/api/run?run=ID)");
    if (!serve_id_safe(id)) return serve_json_error(c, 403, "run: not a run id");
    gl_run_row row;
    int r = serve_find_run(db, id, &row, err, sizeof err);
    if (r != 1) return serve_json_error(c, r < 0 ? 500 : 404, r < 0 ? err : "run: no such run in the registry");
    if (serve_mark_stale(db, &row, 1, err, sizeof err)) return serve_json_error(c, 500, err);
    char *ini = NULL;
    if (db_run_config(db, id, &ini, NULL, err, sizeof err) < 0) return serve_json_error(c, 500, err);
    json_t *latest = serve_latest(db, id, err, sizeof err);
    if (!latest) {
        free(ini);
        return serve_json_error(c, 500, err);
    }
    json_t *o = json_object();
    jsonl_set(o, "run", runs_json_row(&row));
    jsonl_set(o, "config", jsonl_str(ini));
    char *fp = ini ? figures_seedless_config(ini) : NULL; /* the one rule for "the same run but for the seed" */
    jsonl_set(o, "group", jsonl_str(fp ? fp : id));
    free(fp);
    free(ini);
    jsonl_set(o, "tokens_per_step", serve_tokens_per_step(db, id));
    jsonl_set(o, "latest", latest);
    gl_trace_data t;
    r = serve_trace(s, id, &t, err, sizeof err);
    if (r < 0) {
        json_decref(o);
        return serve_json_error(c, 403, err);
    }
    if (r == 0) {
        json_t *tr = json_object(), *gates = json_array();
        jsonl_set(tr, "n_steps", jsonl_int(t.n_steps));
        jsonl_set(tr, "steps", serve_steps_json(&t));
        jsonl_set(tr, "n_layer", jsonl_int(t.n_layer));
        jsonl_set(tr, "n_kv_head", jsonl_int(t.n_kv_head));
        jsonl_set(tr, "n_router", jsonl_int(t.n_router));
        jsonl_set(tr, "n_probe", jsonl_int(t.n_probe));
        for (int g = 0; g < GATE_COUNT; g++)
            if (t.gate[g]) json_array_append_new(gates, serve_gate_json(&t, g));
        jsonl_set(tr, "gates", gates);
        json_t *cat = json_array();
        for (int i = 0; i < t.n_probe; i++) json_array_append_new(cat, jsonl_int(t.probe_category[i]));
        jsonl_set(tr, "probe_text", serve_probe_text(s, id, &t));
        jsonl_set(tr, "probe_category", cat);
        jsonl_set(o, "trace", tr);
        trace_data_free(&t);
    } else {
        jsonl_set(o, "trace", json_null());
        jsonl_set(o, "trace_note", jsonl_str(err));
    }
    return serve_json(c, 200, o);
}

/* /run/ID: web/run.html with every {{RUN}} replaced by the escaped id. */
static enum MHD_Result serve_run_page(struct MHD_Connection *c, gl_db *db, const char *id) {
    char err[1024];
    if (!serve_id_safe(id)) return serve_html_error(c, 403, "not a run id");
    int r = serve_find_run(db, id, NULL, err, sizeof err);
    if (r < 0) return serve_html_error(c, 500, err);
    if (!r) {
        snprintf(err, sizeof err, "no run '%.300s' in the registry", id);
        return serve_html_error(c, 404, err);
    }
    const serve_asset *a = serve_asset_find("/static/run.html");
    if (!a) return serve_html_error(c, 500, "run.html is not embedded (rebuild gatelab)");
    serve_buf b = {0};
    const char *p = (const char *)a->data;
    for (const char *m; (m = strstr(p, "{{RUN}}"));) {
        sb_put(&b, p, (size_t)(m - p));
        serve_html(&b, id);
        p = m + 7;
    }
    sb_puts(&b, p);
    if (b.oom) {
        free(b.p);
        return serve_html_error(c, 500, "out of memory");
    }
    enum MHD_Result q = serve_send(c, 200, "text/html; charset=utf-8", b.p, b.n, 1);
    free(b.p);
    return q;
}

/* On a loopback address, the Host a browser sends must be a loopback name. */
static int serve_host_ok(struct MHD_Connection *c, const serve_ctx *s) {
    if (!s->loopback) return 1;
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Host");
    if (!h) return 1; /* HTTP/1.0 clients without Host */
    static const char *const ok[] = {"127.0.0.1", "localhost", "[::1]"};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        size_t k = strlen(ok[i]);
        if (!strncmp(h, ok[i], k) && (h[k] == 0 || h[k] == ':')) return 1;
    }
    return 0;
}

static enum MHD_Result serve_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                     const char *version, const char *upload, size_t *upload_size, void **state) {
    const serve_ctx *s = cls;
    if (strcmp(method, "GET") && strcmp(method, "HEAD"))
        return serve_send(c, 405, "text/plain; charset=utf-8", "read-only: GET and HEAD only\n", 29, 0);
    if (*upload_size) return serve_send(c, 400, "text/plain; charset=utf-8", "no request body\n", 16, 0);
    if (!serve_host_ok(c, s))
        return serve_send(c, 403, "text/plain; charset=utf-8", "Host must be 127.0.0.1 or localhost\n", 36, 0);
    if (strstr(url, "..") && strncmp(url, "/run/", 5)) /* /run/ID says 403 itself, as a page */
        return serve_send(c, 403, "text/plain; charset=utf-8", "no '..' in paths\n", 17, 0);
    if (!strcmp(url, "/") || !strcmp(url, "/index.html")) {
        const serve_asset *a = serve_asset_find("/static/index.html");
        return a ? serve_send(c, 200, a->type, a->data, a->len, 0) : serve_html_error(c, 500, "index.html missing");
    }
    if (!strncmp(url, "/static/", 8)) {
        const serve_asset *a = serve_asset_find(url);
        return a ? serve_send(c, 200, a->type, a->data, a->len, 0) : serve_html_error(c, 404, "no such file");
    }
    if (!strcmp(url, "/favicon.ico")) return serve_send(c, 204, "text/plain", "", 0, 0);
    const int api = !strncmp(url, "/api/", 5), page = !strncmp(url, "/run/", 5);
    if (!api && !page) return serve_html_error(c, 404, "no such page (see docs/serve.md)");
    char err[1024];
    gl_db *db = NULL;
    if (db_open_readonly(&db, s->db, err, sizeof err))
        return api ? serve_json_error(c, 500, err) : serve_html_error(c, 500, err);
    enum MHD_Result q;
    if (page) q = serve_run_page(c, db, url + 5);
    else if (!strcmp(url, "/api/runs")) q = serve_api_runs(c, db);
    else if (!strcmp(url, "/api/metrics")) q = serve_api_metrics(c, db);
    else if (!strcmp(url, "/api/trace")) q = serve_api_trace(c, s, db);
    else if (!strcmp(url, "/api/run")) q = serve_api_run(c, s, db);
    else q = serve_json_error(c, 404, "no such endpoint: /api/runs, /api/metrics, /api/run, /api/trace");
    db_close(db);
    return q;
}

/* ---- the command ---- */

static const args_opt serve_opts[] = {
    {"port", ARGS_KEY(0), "N", "TCP port (default 8000; 0: any free port, printed)"},
    {"bind", ARGS_KEY(1), "ADDR", "IPv4 address to listen on (default 127.0.0.1: this machine only)"},
    {"results", ARGS_KEY(2), "DIR", "results folder: its gatelab.db and runs/ (default $GATELAB_RESULTS or results)"},
    {"db", ARGS_KEY(3), "PATH", "registry to read (default <results>/gatelab.db); traces still come from <results>/runs"},
    {0}};
const args_spec serve_spec = {
    "serve", "[options]",
    "A read-only web dashboard over the registry and the runs' traces: the runs table with their loss\n"
    "curves, a page per run with its gates; a RUNNING run's page follows it live.  Ctrl-C stops it.\n"
    "Endpoints: docs/serve.md.",
    serve_opts};

int cmd_serve(int argc, char **argv) {
    const char *db_arg = NULL, *results_arg = NULL, *bind = "127.0.0.1";
    int port = 8000, bad = 0;
    args_parser p;
    args_begin(&p, &serve_spec, argc, argv);
    for (int k; !bad && (k = args_next(&p)) != ARGS_END;) {
        if (k < 0) return args_exit_code(k);
        switch (k) {
        case ARGS_POS: return args_usage_error(&serve_spec, "unexpected argument '%s'", p.val);
        case ARGS_KEY(0): bad = args_get_int(&p, 0, 65535, &port); break;
        case ARGS_KEY(1): bind = p.val; break;
        case ARGS_KEY(2): results_arg = p.val; break;
        case ARGS_KEY(3): db_arg = p.val; break;
        }
    }
    if (bad) return 2;
    static serve_ctx s;
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, bind, &sa.sin_addr) != 1)
        return args_usage_error(&serve_spec, "--bind '%s': an IPv4 address such as 127.0.0.1", bind);
    s.loopback = (ntohl(sa.sin_addr.s_addr) >> 24) == 127;
    const char *results = run_results_dir(results_arg);
    if (!realpath(results, s.results)) {
        fprintf(stderr, "gatelab serve: --results %s: %s (train a run first, or pass --results DIR)\n", results,
                strerror(errno));
        return 1;
    }
    args_db_path(db_arg, results_arg, s.db, sizeof s.db);
    char err[1024];
    gl_db *db = NULL;
    if (db_open_readonly(&db, s.db, err, sizeof err)) {
        fprintf(stderr, "gatelab serve: %s\n", err);
        return 1;
    }
    db_close(db);
    /* SIGINT and SIGTERM are taken by sigwait below; the daemon's thread inherits the mask */
    sigset_t sig;
    sigemptyset(&sig);
    sigaddset(&sig, SIGINT);
    sigaddset(&sig, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sig, NULL);
    struct MHD_Daemon *d =
        MHD_start_daemon(MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ERROR_LOG, (uint16_t)port, NULL, NULL,
                         serve_request, &s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
                         MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)30, MHD_OPTION_END);
    if (!d) {
        fprintf(stderr, "gatelab serve: cannot listen on %s:%d (%s): pick another --port, or stop what holds it\n",
                bind, port, strerror(errno));
        return 1;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    unsigned actual = info ? info->port : (unsigned)port;
    printf("gatelab serve: http://%s:%u/  (registry %s, results %s; read-only; Ctrl-C stops)\n", bind, actual, s.db,
           s.results);
    if (!s.loopback)
        printf("gatelab serve: listening beyond this machine (%s): anyone who reaches it reads every run\n", bind);
    fflush(stdout);
    int got = 0;
    sigwait(&sig, &got);
    /* stopping joins the server's thread: should a request ever be stuck (nothing it reads may
     * block, but a stuck one must not make the server unkillable), the alarm ends the process */
    alarm(10);
    MHD_stop_daemon(d);
    printf("gatelab serve: stopped (signal %d)\n", got);
    return 0;
}
