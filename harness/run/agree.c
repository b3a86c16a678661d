/*
 * agree.c — the ranks agree before they act (agree.h): on the config, data
 * and vocabulary they train before the first parameter broadcast, on set-up
 * failures, and on signals and failures at each step of the loop.
 *
 * Each function is a collective over dist.h and must be reached by every
 * rank at the same point; none of them writes a file or prints.  The config
 * comparison sends digests (dist_agree_items), not the values, and names the
 * first item that differs, so a mismatch reads "rank 1 disagrees with rank 0
 * on model.d_ff: ..." instead of an MPI truncation error.  docs/mpi.md tells
 * the story from the user's side.
 */
#include "agree.h"

#include <stdio.h>
#include <string.h>

#include "dist.h"
#include "store/initext.h"
#include "store/sha256.h"

agree_flags agree_point(const agree_signals *sig, int fail, char *err, size_t errlen) {
    int v[3] = {*sig->stop, *sig->ckpt, fail ? dist_rank() + 1 : 0};
    dist_max_ints(v, 3);
    if (v[0] && !*sig->stop) *sig->stop = v[0]; /* a signal another rank got counts here too (KILLED, not FINISHED) */
    if (v[2] && !fail)
        snprintf(err, errlen, "rank %d stopped the run after an error (its output%s says which)", v[2] - 1,
                 v[2] == 1 ? " and train.log" : "");
    return (agree_flags){v[0], v[1], v[2]};
}

int agree_setup(const agree_signals *sig, int *own, char *err, size_t errlen) {
    int v[1] = {dist_rank() == 0 && *own};
    if (!agree_point(sig, *own, err, errlen).fail) return 0;
    dist_max_ints(v, 1);
    if (v[0] && dist_rank() != 0) *own = 0;
    return 1;
}

/* The SHA-256 of the token stream, as bytes (vocab[id]), in hex: the same on
 * every rank that read the same data.file. */
static void agree_data_digest(const gl_dataset *ds, char hex[65]) {
    sha256_ctx h;
    sha256_init(&h);
    unsigned char buf[1 << 14], dg[32];
    for (size_t i = 0; i < ds->n;) {
        size_t k = 0;
        for (; k < sizeof buf && i < ds->n; k++, i++) buf[k] = ds->vocab[ds->ids[i]];
        sha256_update(&h, buf, k);
    }
    sha256_final(&h, dg);
    sha256_digest_hex(dg, hex);
}

enum { AGREE_N = DIST_AGREE_MAX, AGREE_VAL = DIST_AGREE_SHOWN + 80 };

/* The items the config adds: "section.key" and its value, up to max. */
typedef struct {
    char (*names)[96];
    char (*store)[AGREE_VAL];
    int max, n;
} agree_items;

static int agree_item(void *user, const char *section, const char *key, const char *value, int line) {
    (void)line;
    agree_items *it = user;
    if (it->n == it->max) return 1; /* full: the rest are not compared (as before: N items) */
    snprintf(it->names[it->n], sizeof it->names[0], "%s.%s", section, key);
    snprintf(it->store[it->n++], sizeof it->store[0], "%s", value);
    return 0;
}

int agree_config(const gl_dataset *ds, const char *config_ini, char *err, size_t errlen) {
    enum { N = AGREE_N };
    static char names[N][96];
    static char store[N][AGREE_VAL];
    const char *vals[N];
    int n = 0;
    snprintf(names[n], sizeof names[n], "data (SHA-256 of data.file)");
    if (ds->task == TASK_TEXT) agree_data_digest(ds, store[n]);
    else snprintf(store[n], sizeof store[n], "task %s", task_name(ds->task));
    n++;
    const int V = data_vocab_size(ds);
    char vh[65];
    sha256_hex(data_vocab(ds), (size_t)V, vh);
    snprintf(names[n], sizeof names[n], "the vocabulary");
    snprintf(store[n++], sizeof store[0], "%d tokens, SHA-256 %.16s", V, vh);
    agree_items it = {names, store, N, n};
    /* the resolved config is gatelab's own canonical text: a line it cannot read (none today) ends the list,
     * and the items before it are still compared, so every rank reaches dist_agree_items */
    const initext_spec spec = {agree_item, NULL, &it, 1 << 16, 0}; /* any line the manifest writer makes */
    int bad_line;
    if (config_ini) initext_parse(config_ini, &spec, &bad_line);
    n = it.n;
    for (int i = 0; i < n; i++) vals[i] = store[i];
    int rank = 0;
    char other[DIST_AGREE_SHOWN];
    int first = dist_agree_items(vals, n, &rank, other);
    if (first < 0) return 0;
    if (dist_rank() == 0)
        snprintf(err, errlen, "rank %d disagrees with rank 0 on %s: rank 0 has '%s', rank %d has '%s'; every rank must "
                 "train the same config on the same data (check each node's manifest, overrides and data.file)",
                 rank, first < n ? names[first] : "the number of config keys", first < n ? vals[first] : "?", rank, other);
    else
        err[0] = '\0';
    return -1;
}
