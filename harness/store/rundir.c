/*
 * rundir.c — find, create and open run folders (see rundir.h).
 *
 * Opening a run trusts the checkpoint, not the manifest file it came from:
 * the config text stored in ckpt rebuilds the model (so a later edit of
 * experiments/ID.ini cannot silently change what a run means), and the model
 * hash and tensor table are checked by ckpt_load.
 *
 * Not here: writing checkpoints or traces (ckpt.c, trace.c), choosing run ids
 * or registering runs (the training loop and the registry).
 */
#include "rundir.h"
#include "fileio.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <libgen.h>
#include <sys/stat.h>

static int run_is_dir(const char *p) {
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static int run_is_file(const char *p) {
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISREG(sb.st_mode);
}

const char *run_results_dir(const char *results) {
    if (results && *results) return results;
    const char *env = getenv("GATELAB_RESULTS");
    if (env && *env) return env;
    return "results";
}

int run_path(char *out, size_t outlen, const char *dir, const char *name) {
    int n = snprintf(out, outlen, "%s/%s", dir, name);
    return (n < 0 || (size_t)n >= outlen) ? -1 : 0;
}

int run_resolve(const char *arg, const char *results, char *dir, size_t dirlen, char *err, size_t errlen) {
    const char *res = run_results_dir(results);
    char runs[GL_PATH_MAX], cand[GL_PATH_MAX];
    if (!arg || !*arg) {
        snprintf(err, errlen, "no run given: pass a run id or a run folder");
        return -1;
    }
    if (run_is_dir(arg)) {
        if ((size_t)snprintf(dir, dirlen, "%s", arg) >= dirlen) goto too_long;
        return 0;
    }
    if (strchr(arg, '/')) {
        snprintf(err, errlen, "%s: no such run folder", arg);
        return -1;
    }
    if (run_path(runs, sizeof runs, res, "runs") != 0 || run_path(cand, sizeof cand, runs, arg) != 0) goto too_long;
    if (run_is_dir(cand)) {
        if ((size_t)snprintf(dir, dirlen, "%s", cand) >= dirlen) goto too_long;
        return 0;
    }
    /* a unique prefix of a run id */
    DIR *dp = opendir(runs);
    if (!dp) {
        snprintf(err, errlen, "no run '%s': it is not a folder, and %s cannot be read (%s); "
                 "pass --results DIR or set GATELAB_RESULTS", arg, runs, strerror(errno));
        return -1;
    }
    size_t alen = strlen(arg);
    int matches = 0;
    char first[256] = "", second[256] = "";
    struct dirent *e;
    while ((e = readdir(dp))) {
        if (e->d_name[0] == '.' || strncmp(e->d_name, arg, alen) != 0) continue;
        if (run_path(cand, sizeof cand, runs, e->d_name) != 0 || !run_is_dir(cand)) continue;
        if (matches == 0) snprintf(first, sizeof first, "%s", e->d_name);
        else if (matches == 1) snprintf(second, sizeof second, "%s", e->d_name);
        matches++;
    }
    closedir(dp);
    if (matches == 1) {
        if (run_path(dir, dirlen, runs, first) != 0) goto too_long;
        return 0;
    }
    if (matches > 1)
        snprintf(err, errlen, "run '%s' is ambiguous in %s: %d runs start with it (%s, %s%s); give more of the id",
                 arg, runs, matches, first, second, matches > 2 ? ", ..." : "");
    else
        snprintf(err, errlen, "no run '%s': not a folder, and not in %s (see `gatelab runs`; "
                 "pass --results DIR or set GATELAB_RESULTS for another results folder)", arg, runs);
    return -1;
too_long:
    snprintf(err, errlen, "run path too long: %s", arg);
    return -1;
}

int run_create_dir(const char *results, const char *run_id, char *dir, size_t dirlen, char *err, size_t errlen) {
    const char *res = run_results_dir(results);
    char runs[GL_PATH_MAX];
    if (!run_id || !*run_id || strchr(run_id, '/') || !strcmp(run_id, ".") || !strcmp(run_id, "..")) {
        snprintf(err, errlen, "run id '%s' is not a valid folder name", run_id ? run_id : "");
        return -1;
    }
    if (run_path(runs, sizeof runs, res, "runs") != 0 || run_path(dir, dirlen, runs, run_id) != 0) {
        snprintf(err, errlen, "run folder path too long: %s/runs/%s", res, run_id);
        return -1;
    }
    char why[GL_PATH_MAX + 128];
    if (fileio_mkdir_p(dir, why, sizeof why) != 0) {
        snprintf(err, errlen, "%s: cannot create the run folder: %s (check --results / GATELAB_RESULTS)", dir,
                 strerror(errno));
        return -1;
    }
    return 0;
}

void run_close(gl_run *r) {
    if (!r) return;
    model_free(&r->model);
    free(r->config_ini);
    free(r->u8b);
    bpe_free(&r->bpe);
    memset(r, 0, sizeof *r);
}

int run_open(gl_run *r, const char *arg, const char *results, int max_B, char *err, size_t errlen) {
    char ckpt[GL_PATH_MAX], cfg_path[GL_PATH_MAX], origin[GL_PATH_MAX + 32];
    int rc = -1;
    memset(r, 0, sizeof *r);
    if (run_resolve(arg, results, r->dir, sizeof r->dir, err, errlen) != 0) goto cleanup;
    if (run_path(ckpt, sizeof ckpt, r->dir, RUN_CKPT) != 0 || run_path(cfg_path, sizeof cfg_path, r->dir, RUN_CONFIG) != 0) {
        snprintf(err, errlen, "%s: run folder path too long", r->dir);
        goto cleanup;
    }
    if (!run_is_file(ckpt)) {
        if (run_is_file(cfg_path))
            snprintf(err, errlen, "%s: no checkpoint yet (%s missing): the run stopped before its first "
                     "checkpoint; train it again", r->dir, ckpt);
        else
            snprintf(err, errlen, "%s: not a run folder (no %s, no %s)", r->dir, RUN_CKPT, RUN_CONFIG);
        goto cleanup;
    }
    ckpt_info info;
    if (ckpt_read_info(ckpt, &r->config_ini, &info, err, errlen) != 0) goto cleanup;
    snprintf(origin, sizeof origin, "%s (stored config)", ckpt);
    if (r->config_ini[0] == '\0') {
        /* a checkpoint saved without its config: fall back to the folder's config.ini */
        snprintf(err, errlen, "%s stores no config and %s is missing; cannot rebuild the model", ckpt, cfg_path);
        char why[GL_PATH_MAX + 128];
        size_t len;
        char *text = fileio_slurp(cfg_path, "config", 0, &len, why, sizeof why);
        if (!text) goto cleanup; /* err already says what is missing */
        free(r->config_ini);
        r->config_ini = text;
        snprintf(origin, sizeof origin, "%s", cfg_path);
    }
    if (manifest_load_text(&r->mf, r->config_ini, origin, err, errlen) != 0) goto cleanup;
    uint64_t hash = manifest_model_hash(&r->mf);
    /* vocab_size 0 means "from the data"; the checkpoint knows what the data gave */
    if (r->mf.model.vocab_size == 0) r->mf.model.vocab_size = info.vocab_size;
    if (model_init(&r->model, &r->mf.model, max_B, err, errlen) != 0) goto cleanup;
    if (ckpt_load(ckpt, &r->model, &r->st, hash, err, errlen) != 0) goto cleanup;
    if (r->st.tokenizer == TOK_BPE && bpe_build(&r->bpe, &r->st.bpe, err, errlen) != 0) goto cleanup;
    if (r->st.tokenizer == TOK_UTF8) {
        r->u8b = malloc((size_t)4 * (size_t)r->st.utf8.V);
        if (!r->u8b) {
            snprintf(err, errlen, "%s: out of memory for the run's %d characters", ckpt, r->st.utf8.V);
            goto cleanup;
        }
        for (int v = 0; v < r->st.utf8.V; v++) utf8_put(r->st.utf8.cp[v], r->u8b + 4 * (size_t)v);
    }
    rc = 0;
cleanup:
    if (rc != 0) {
        /* keep the message, drop the half-opened run */
        model_free(&r->model);
        bpe_free(&r->bpe);
        free(r->config_ini);
        r->config_ini = NULL;
        free(r->u8b);
        r->u8b = NULL;
    }
    return rc;
}

long run_encode(const gl_run *r, const uint8_t *bytes, size_t n, int *ids, char *err, size_t errlen) {
    if (r->bpe.V > 0) {
        uint16_t *tmp = malloc((n ? n : 1) * sizeof *tmp);
        if (!tmp) {
            snprintf(err, errlen, "out of memory encoding %zu bytes", n);
            return -1;
        }
        size_t k = bpe_encode(&r->bpe, bytes, n, tmp);
        for (size_t i = 0; i < k; i++) ids[i] = tmp[i];
        free(tmp);
        return (long)k;
    }
    if (r->st.tokenizer == TOK_UTF8) {
        long k = 0;
        for (size_t i = 0; i < n; k++) {
            uint32_t cp;
            size_t used = utf8_next(bytes + i, n - i, &cp);
            int id = utf8_vocab_id(&r->st.utf8, cp);
            if (id < 0) {
                snprintf(err, errlen, "the character U+%04X at byte offset %zu is not in the run's vocabulary of %d "
                         "characters", (unsigned)cp, i, r->st.utf8.V);
                return -1;
            }
            ids[k] = id;
            i += used;
        }
        return k;
    }
    int id_of[256];
    for (int b = 0; b < 256; b++) id_of[b] = -1;
    for (int v = r->st.vocab_size - 1; v >= 0; v--) id_of[r->st.vocab[v]] = v;
    for (size_t i = 0; i < n; i++) {
        if (id_of[bytes[i]] < 0) {
            snprintf(err, errlen, "byte 0x%02x ('%c') at offset %zu is not in the run's vocabulary of %d bytes",
                     bytes[i], bytes[i] >= 32 && bytes[i] < 127 ? bytes[i] : '?', i, r->st.vocab_size);
            return -1;
        }
        ids[i] = id_of[bytes[i]];
    }
    return (long)n;
}

const uint8_t *run_token(const gl_run *r, int id, size_t *len) {
    if (r->bpe.V > 0) return bpe_token(&r->bpe, id, len);
    assert(id >= 0 && id < r->st.vocab_size);
    if (r->u8b) {
        uint8_t tmp[4];
        *len = (size_t)utf8_put(r->st.utf8.cp[id], tmp);
        return r->u8b + 4 * (size_t)id;
    }
    *len = 1;
    return r->st.vocab + id;
}

void run_repo_path(char *out, size_t n, const char *rel) {
    const char *root = getenv("GATELAB_ROOT");
    if (root && *root) {
        snprintf(out, n, "%s/%s", root, rel);
        return;
    }
    char exe[4096];
    ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (k > 0) {
        exe[k] = 0;
        /* <root>/build/gatelab, <root>/build/tests/x, <root>/build/asan/tests/x: walk up */
        char *d = dirname(exe);
        for (int up = 0; up < 4 && strcmp(d, "/") && strcmp(d, "."); up++) {
            d = dirname(d);
            snprintf(out, n, "%s/%s", d, rel);
            if (access(out, R_OK) == 0) return;
        }
    }
    snprintf(out, n, "%s", rel);
}
