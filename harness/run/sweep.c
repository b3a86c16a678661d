/*
 * sweep.c — expand a manifest's [sweep] grid into runs (see sweep.h).
 *
 * Order: the Cartesian product of the axes in manifest order, the first axis
 * varying slowest (like nested for-loops written top to bottom), so run i is
 * the same run whoever expands the grid: a restarted sweep, a Slurm array
 * task given --index i, or `--dry-run`.
 *
 * What it does not do: touch the registry or the file system (sweep_pool.c
 * registers and runs, slurm.c writes the array script), interpret values (manifest_set parses and validates
 * each one, so an unknown scale or a malformed number is reported with the
 * manifest's file, line and key).
 */
#include "sweep.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/manifest.h"
#include "store/registry.h"
#include "store/sha256.h"

#define SWEEP_MAX_ITEMS 256

void sweep_config_hash(const char *config_ini, char hex[65]) {
    char *id = manifest_identity_text(config_ini); /* late keys at their default left out */
    const char *t = id ? id : config_ini;          /* out of memory: the whole text */
    sha256_hex(t, strlen(t), hex);
    free(id);
}

void sweep_experiment_name(const gl_manifest *mf, char *out, size_t outlen) {
    assert(outlen > 1);
    const char *src = mf->log.experiment;
    size_t len = strlen(src);
    if (!len) {
        const char *slash = strrchr(mf->path, '/');
        src = slash ? slash + 1 : mf->path;
        len = strlen(src);
        if (len > 4 && !strcmp(src + len - 4, ".ini")) len -= 4;
    }
    if (!len) {
        src = "default";
        len = strlen(src);
    }
    if (len >= outlen) len = outlen - 1;
    for (size_t i = 0; i < len; i++) {
        char c = src[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                 c == '_' || c == '-';
        out[i] = ok ? c : '_';
    }
    out[len] = '\0';
}

int sweep_split_list(const char *list, char (*out)[SWEEP_ASSIGN_MAX], int max) {
    int n = 0;
    const char *p = list;
    for (;;) {
        const char *comma = strchr(p, ',');
        const char *end = comma ? comma : p + strlen(p);
        const char *b = p, *e = end;
        while (b < e && (*b == ' ' || *b == '\t')) b++;
        while (e > b && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r' || e[-1] == '\n')) e--;
        if (e == b || n >= max || (size_t)(e - b) >= SWEEP_ASSIGN_MAX) return -1;
        memcpy(out[n], b, (size_t)(e - b));
        out[n][e - b] = '\0';
        n++;
        if (!comma) break;
        p = comma + 1;
    }
    return n;
}

void sweep_free(gl_sweep *sw) {
    if (!sw) return;
    for (int i = 0; i < sw->n_fixed; i++) free(sw->fixed[i]);
    free(sw->fixed);
    if (sw->runs)
        for (int i = 0; i < sw->n_runs; i++) free(sw->runs[i].config_ini);
    free(sw->runs);
    sw->fixed = NULL;
    sw->runs = NULL;
    sw->n_fixed = sw->n_runs = sw->n_axes = 0;
}

/* Check a command-line list "key=values" with the manifest parser's own
 * [sweep] rules (range() and choice() expanded, every item parsed for the
 * key, scale names looked up) and get the key's canonical name ("lambda" ->
 * "model.tsa_lambda") and the expanded list (list, listlen bytes).  Returns
 * 0, or -1 with the parser's message (origin "command line") in err. */
static int sweep_check_cli_list(const char *key, const char *values, char *canon, size_t canonlen, char *list,
                                size_t listlen, char *err, size_t errlen) {
    int rc = -1;
    gl_manifest *tmp = malloc(sizeof *tmp);
    size_t need = strlen(key) + strlen(values) + 16;
    char *text = malloc(need);
    char msg[1024];
    if (!tmp || !text) { snprintf(err, errlen, "command line: out of memory"); goto cleanup; }
    snprintf(text, need, "[sweep]\n%s = %s\n", key, values);
    if (manifest_load_text(tmp, text, "command line", msg, sizeof msg)) {
        /* The parser numbers the lines of our two-line text; drop that number. */
        const char *p = msg;
        if (!strncmp(p, "command line:2: ", 16)) p += 16;
        snprintf(err, errlen, "command line: %s=%s: %s", key, values, p);
        goto cleanup;
    }
    if (tmp->n_sweep != 1) { snprintf(err, errlen, "command line: %s=%s is not a sweep list", key, values); goto cleanup; }
    snprintf(canon, canonlen, "%s", tmp->sweep[0].key);
    snprintf(list, listlen, "%s", tmp->sweep[0].values);
    rc = 0;
cleanup:
    free(tmp);
    free(text);
    return rc;
}

/* Find the axis whose key is key (as written or canonical); -1 if none. */
static int sweep_find_axis(const gl_sweep *sw, const char *key, const char *canon) {
    for (int a = 0; a < sw->n_axes; a++)
        if (!strcmp(sw->axes[a].key, key) || !strcmp(sw->axes[a].key, canon)) return a;
    return -1;
}

/* Apply one command-line argument: replace an axis's list (or add an axis,
 * only when explicit: `--axis key=a,b`), or a fixed override.  A list on a
 * key that is not an axis is an error that says how to declare it. */
static int sweep_apply_cli(gl_sweep *sw, const char *arg, int explicit_axis, char *err, size_t errlen) {
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg) {
        snprintf(err, errlen, "command line: '%s' is not key=value (e.g. train.steps=100 or lambda=0,0.01)", arg);
        return -1;
    }
    char key[64];
    if ((size_t)(eq - arg) >= sizeof key) {
        snprintf(err, errlen, "command line: key of '%s' is too long", arg);
        return -1;
    }
    memcpy(key, arg, (size_t)(eq - arg));
    key[eq - arg] = '\0';
    const char *values = eq + 1;
    /* Parsed as a [sweep] list, the key gets its canonical name and every item is checked;
     * a single value that does not parse as a list (e.g. a [log] key) is a fixed override. */
    char canon[64], list_err[1024], list[sizeof sw->axes[0].values];
    int is_list = sweep_check_cli_list(key, values, canon, sizeof canon, list, sizeof list, list_err,
                                       sizeof list_err) == 0;
    if (!is_list) snprintf(canon, sizeof canon, "%s", key);
    /* several values, or one written as range()/choice() */
    const int many = is_list ? strchr(list, ',') || strcmp(list, values) : strchr(values, ',') || strchr(values, '(');
    if (!is_list && (many || explicit_axis)) {
        snprintf(err, errlen, "%s", list_err);
        return -1;
    }
    int a = sweep_find_axis(sw, key, canon);
    if (a < 0 && many && !explicit_axis) {
        snprintf(err, errlen,
                 "command line: '%s': %s is not a sweep axis of %s; declare it in the manifest's [sweep] section "
                 "(%s = %s) or give it as an axis here: --axis %s",
                 arg, canon, sw->manifest_path, key, values, arg);
        return -1;
    }
    if (a < 0 && explicit_axis) {
        if (sw->n_axes >= GL_SWEEP_MAX_KEYS) {
            snprintf(err, errlen, "command line: '%s' would be sweep axis %d; at most %d axes", arg,
                     sw->n_axes + 1, GL_SWEEP_MAX_KEYS);
            return -1;
        }
        a = sw->n_axes++;
        snprintf(sw->axes[a].key, sizeof sw->axes[a].key, "%s", canon);
    }
    if (a >= 0) {
        snprintf(sw->axes[a].values, sizeof sw->axes[a].values, "%s", is_list ? list : values);
        sw->axes[a].line = 0; /* now from the command line */
        return 0;
    }
    /* A fixed override for every run (checked when the base is loaded). */
    char **grown = realloc(sw->fixed, (size_t)(sw->n_fixed + 1) * sizeof *grown);
    if (!grown) { snprintf(err, errlen, "command line: out of memory"); return -1; }
    sw->fixed = grown;
    if (!(sw->fixed[sw->n_fixed] = strdup(arg))) { snprintf(err, errlen, "command line: out of memory"); return -1; }
    sw->n_fixed++;
    return 0;
}

/* Build run r (index idx): the manifest file loaded with the fixed overrides
 * and then one override per axis — exactly what `gatelab train MANIFEST
 * <those overrides>` loads, so the config and its hash agree with train's. */
static int sweep_build_run(gl_sweep *sw, gl_sweep_run *r, int idx, char (**items)[SWEEP_ASSIGN_MAX],
                           const int *n_items, gl_manifest *work, char **over, char *err, size_t errlen) {
    int pick[GL_SWEEP_MAX_KEYS];
    int rem = idx;
    for (int a = sw->n_axes - 1; a >= 0; a--) { /* first axis slowest */
        pick[a] = rem % n_items[a];
        rem /= n_items[a];
    }
    r->index = idx;
    r->n_over = sw->n_axes;
    r->label[0] = '\0';
    for (int i = 0; i < sw->n_fixed; i++) over[i] = sw->fixed[i];
    for (int a = 0; a < sw->n_axes; a++) {
        const gl_sweep_axis *ax = &sw->axes[a];
        int w = snprintf(r->over[a], SWEEP_ASSIGN_MAX, "%s=%s", ax->key, items[a][pick[a]]);
        if (w < 0 || w >= SWEEP_ASSIGN_MAX) {
            snprintf(err, errlen, "%s, line %d, key %s: value too long", sw->manifest_path, ax->line, ax->key);
            return -1;
        }
        over[sw->n_fixed + a] = r->over[a];
        size_t len = strlen(r->label);
        snprintf(r->label + len, sizeof r->label - len, "%s%s", len ? " " : "", r->over[a]);
    }
    char lerr[1024];
    if (manifest_load(work, sw->manifest_path, sw->n_fixed + sw->n_axes, over, lerr, sizeof lerr)) {
        snprintf(err, errlen, "%s: sweep run %d (%s): %s", sw->manifest_path, idx,
                 r->label[0] ? r->label : "no overrides", lerr);
        return -1;
    }
    r->config_ini = manifest_to_ini(work);
    if (!r->config_ini) {
        snprintf(err, errlen, "%s: sweep run %d: out of memory rendering the config", sw->manifest_path, idx);
        return -1;
    }
    sweep_config_hash(r->config_ini, r->config_hash);
    snprintf(r->run_id, sizeof r->run_id, "%s-%03d-%.8s", sw->experiment, idx, r->config_hash);
    char why[256];
    if (db_run_id_check(r->run_id, why, sizeof why)) {
        snprintf(err, errlen, "%s: sweep run %d: %s; the ids are EXPERIMENT-NNN-HASH8, so shorten log.experiment "
                 "(%zu bytes) to at most %d", sw->manifest_path, idx, why, strlen(sw->experiment),
                 DB_RUN_ID_MAX - (int)(strlen(r->run_id) - strlen(sw->experiment)));
        return -1;
    }
    r->seed = (unsigned long long)work->train.seed;
    return 0;
}

int sweep_expand(gl_sweep *sw, const char *path, int n_cli, char *const *cli, int n_axis, char *const *axis, char *err,
                 size_t errlen) {
    int rc = -1;
    char (*items[GL_SWEEP_MAX_KEYS])[SWEEP_ASSIGN_MAX] = {0};
    int n_items[GL_SWEEP_MAX_KEYS] = {0};
    gl_manifest *work = malloc(sizeof *work);
    char **over = calloc((size_t)n_cli + GL_SWEEP_MAX_KEYS + 1, sizeof *over);
    memset(sw, 0, sizeof *sw);
    if (!work || !over) { snprintf(err, errlen, "%s: out of memory expanding the sweep", path); goto cleanup; }
    /* The file alone: its [sweep] axes (every item already checked by the parser). */
    if (manifest_load(work, path, 0, NULL, err, errlen)) goto cleanup;
    snprintf(sw->manifest_path, sizeof sw->manifest_path, "%s", path);
    sweep_experiment_name(work, sw->experiment, sizeof sw->experiment);
    sw->n_axes = work->n_sweep;
    memcpy(sw->axes, work->sweep, (size_t)work->n_sweep * sizeof work->sweep[0]);
    for (int i = 0; i < n_axis; i++)
        if (sweep_apply_cli(sw, axis[i], 1, err, errlen)) goto cleanup;
    for (int i = 0; i < n_cli; i++)
        if (sweep_apply_cli(sw, cli[i], 0, err, errlen)) goto cleanup;
    /* The base: the file plus the fixed overrides. */
    if (manifest_load(&sw->base, path, sw->n_fixed, sw->fixed, err, errlen)) goto cleanup;
    sweep_experiment_name(&sw->base, sw->experiment, sizeof sw->experiment);

    long total = 1;
    for (int a = 0; a < sw->n_axes; a++) {
        const gl_sweep_axis *ax = &sw->axes[a];
        const char *origin = ax->line > 0 ? sw->manifest_path : "command line";
        items[a] = malloc(SWEEP_MAX_ITEMS * sizeof *items[a]);
        if (!items[a]) { snprintf(err, errlen, "%s: out of memory expanding the sweep", origin); goto cleanup; }
        n_items[a] = sweep_split_list(ax->values, items[a], SWEEP_MAX_ITEMS);
        if (n_items[a] < 0) {
            snprintf(err, errlen,
                     "%s, line %d, key %s: the sweep list '%s' is empty, has an empty item or more than %d "
                     "items; write a comma list such as 0, 0.01, 0.1",
                     origin, ax->line, ax->key, ax->values, SWEEP_MAX_ITEMS);
            goto cleanup;
        }
        total *= n_items[a];
        if (total > SWEEP_MAX_RUNS) {
            snprintf(err, errlen, "%s: the sweep has more than %d runs; split it into several manifests",
                     sw->manifest_path, SWEEP_MAX_RUNS);
            goto cleanup;
        }
    }
    sw->runs = calloc((size_t)total, sizeof *sw->runs);
    if (!sw->runs) { snprintf(err, errlen, "%s: out of memory expanding the sweep", sw->manifest_path); goto cleanup; }
    sw->n_runs = (int)total;
    for (int i = 0; i < sw->n_runs; i++)
        if (sweep_build_run(sw, &sw->runs[i], i, items, n_items, work, over, err, errlen)) goto cleanup;
    /* two items that resolve to one configuration (seed=1,2,1; lr=0.01,1e-2)
     * would train the same run twice and count it twice in tables */
    for (int i = 0; i < sw->n_runs; i++)
        for (int j = 0; j < i; j++)
            if (!strcmp(sw->runs[i].config_hash, sw->runs[j].config_hash)) {
                snprintf(err, errlen, "%s: sweep runs %d (%s) and %d (%s) are the same configuration: an axis "
                         "repeats an item; list each value once", sw->manifest_path, j,
                         sw->runs[j].label[0] ? sw->runs[j].label : "no overrides", i,
                         sw->runs[i].label[0] ? sw->runs[i].label : "no overrides");
                goto cleanup;
            }
    rc = 0;
cleanup:
    for (int a = 0; a < GL_SWEEP_MAX_KEYS; a++) free(items[a]);
    free(work);
    free(over);
    if (rc) sweep_free(sw);
    return rc;
}
