/*
 * data.c — byte-level text data sets and the gl_dataset face of the synthetic
 * tasks: loading, vocabulary, splits, training and evaluation windows,
 * encoding and accuracy.  See data.h for the conventions.
 *
 * Follows nanoGPT's data/shakespeare_char/prepare.py: vocabulary =
 * sorted(set(text)) over the whole file, train = data[:int(n*0.9)], val = the
 * rest; and the enwik8 convention of consecutive 90/5/5 splits (Transformer-XL).
 *
 * Where files are found: one lookup order ($GATELAB_DATA, data/ in the
 * clone, ../shared/data; data_find), used by training, evaluation, the
 * tests and `gatelab data`, and printed whole when a file is missing.
 *
 * Tokenizers: char (bytes, as above) or a byte-level BPE (bpe.c) trained
 * here on the training split's bytes only; each split is encoded on its own.
 *
 * What it does not do: download (scripts/fetch_data.sh does, `make data`),
 * shuffle, or stream from disk.
 * The file is read once into memory (one byte per token id, so the full
 * 100 MB enwik8 costs 100 MB; BPE adds two bytes per token) and never
 * modified.
 */
#include "data.h"
#include "fileio.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rundir.h"
#include "tasks.h"

const char *data_split_name(gl_split split) {
    switch (split) {
    case SPLIT_TRAIN: return "train";
    case SPLIT_VAL: return "val";
    case SPLIT_TEST: return "test";
    }
    return "unknown";
}

/* The decimal the user wrote for a float fraction: the shortest "%.*g" that
 * reads back as the same float, as a double.  0.9f is 0.899999976..., and
 * 4,000,000 × 0.899999976 floors to 3,599,999; the decimal 0.9 gives the
 * 3,600,000 everyone else uses. */
static double frac_decimal(float f) {
    char buf[32];
    for (int p = 1; p <= 9; p++) {
        snprintf(buf, sizeof buf, "%.*g", p, (double)f);
        if (strtof(buf, NULL) == f) return strtod(buf, NULL);
    }
    return (double)f;
}

/* ---- where data sets are found ---- */

/* dir joined with rel, into out; a relative dir is taken against the working
 * folder (where the command started: nothing in gatelab changes it). */
static void dd_absolute(char *out, size_t n, const char *dir) {
    if (dir[0] == '/') {
        snprintf(out, n, "%s", dir);
        return;
    }
    char cwd[GL_PATH_MAX];
    if (!getcwd(cwd, sizeof cwd)) snprintf(cwd, sizeof cwd, ".");
    while (!strncmp(dir, "./", 2)) dir += 2;
    snprintf(out, n, "%s/%s", cwd, *dir && strcmp(dir, ".") ? dir : "");
    size_t k = strlen(out);
    while (k > 1 && out[k - 1] == '/') out[--k] = 0;
}

/* The clone this binary belongs to: the folder holding experiments/scales.ini
 * that run_repo_path finds ($GATELAB_ROOT, else walking up from the binary),
 * else the working folder. */
static void dd_clone_root(char *out, size_t n) {
    static const char probe[] = "experiments/scales.ini";
    char p[GL_PATH_MAX];
    run_repo_path(p, sizeof p, probe);
    size_t k = strlen(p), pk = sizeof probe - 1;
    if (access(p, R_OK) == 0 && k > pk && p[k - pk - 1] == '/') {
        p[k - pk - 1] = 0;
        dd_absolute(out, n, p);
    } else {
        dd_absolute(out, n, ".");
    }
}

void data_search_dirs(gl_data_dirs *d) {
    memset(d, 0, sizeof *d);
    const char *env = getenv("GATELAB_DATA");
    if (env && *env) {
        dd_absolute(d->dir[d->n], sizeof d->dir[0], env);
        d->origin[d->n++] = "$GATELAB_DATA";
    }
    char root[GL_PATH_MAX];
    dd_clone_root(root, sizeof root);
    snprintf(d->dir[d->n], sizeof d->dir[0], "%s/data", root);
    d->origin[d->n++] = "data/ in the clone";
    char *slash = strrchr(root, '/');
    if (slash) *slash = 0; /* the clone's parent ("" for a clone at /) */
    snprintf(d->dir[d->n], sizeof d->dir[0], "%s/shared/data", root);
    d->origin[d->n++] = "../shared/data";
}

/* A path given as a path, not a name to look up. */
static int dd_is_path(const char *file) {
    return file[0] == '/' || !strncmp(file, "./", 2) || !strncmp(file, "../", 3);
}

int data_find(const char *file, char *out, size_t outlen, char *err, size_t errlen) {
    if (dd_is_path(file)) {
        int n = snprintf(out, outlen, "%s", file);
        if (n < 0 || (size_t)n >= outlen) {
            snprintf(err, errlen, "data.file: the path %s is longer than %zu bytes", file, outlen - 1);
            return -1;
        }
        return 0;
    }
    gl_data_dirs d;
    data_search_dirs(&d);
    for (int i = 0; i < d.n; i++) {
        int n = snprintf(out, outlen, "%s/%s", d.dir[i], file);
        if (n < 0 || (size_t)n >= outlen) continue;
        if (access(out, F_OK) == 0) return 0;
    }
    out[0] = 0;
    size_t k = (size_t)snprintf(err, errlen, "data.file: %s not found; searched", file);
    for (int i = 0; i < d.n && k < errlen; i++)
        k += (size_t)snprintf(err + k, errlen - k, "%s %s/%s (%s)", i ? "," : "", d.dir[i], file, d.origin[i]);
    if (k < errlen)
        snprintf(err + k, errlen - k,
                 ". Get the data sets with `make data` (scripts/fetch_data.sh downloads Tiny Shakespeare and "
                 "enwik8 into data/), or set GATELAB_DATA to the folder that holds %s",
                 file);
    return -1;
}

/* Read the whole file at ds->path into ds->ids.  Returns 0 or -1 with err. */
static int read_file(gl_dataset *ds, char *err, size_t errlen) {
    static const char hint[] =
        "give data.file as an existing path, or as a bare name looked up in $GATELAB_DATA, data/ and "
        "../shared/data (`make data` fetches Tiny Shakespeare and enwik8 into data/)";
    int rc = -1;
    FILE *f;
    char why[GL_PATH_MAX + 128];
    if (fileio_open_regular(ds->path, "data file", &f, why, sizeof why)) { /* no hang on a FIFO */
        if (strstr(why, "cannot read")) snprintf(err, errlen, "data.file: cannot open %s: %s; %s", ds->path, strerror(errno), hint);
        else snprintf(err, errlen, "data.file: %s; %s", why, hint);
        goto cleanup;
    }
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "data.file: %s is not a regular file; %s", ds->path, hint);
        goto cleanup;
    }
    size_t size = (size_t)st.st_size;
    ds->ids = malloc(size > 0 ? size : 1);
    if (!ds->ids) {
        snprintf(err, errlen, "data.file: out of memory reading %s (%zu bytes)", ds->path, size);
        goto cleanup;
    }
    size_t got = fread(ds->ids, 1, size, f);
    if (got != size || ferror(f)) {
        snprintf(err, errlen, "data.file: read %zu of %zu bytes of %s: %s", got, size, ds->path,
                 ferror(f) ? strerror(errno) : "file changed while reading");
        goto cleanup;
    }
    ds->n = size;
    rc = 0;
cleanup:
    if (f) fclose(f);
    return rc;
}

static int open_bpe(gl_dataset *ds, const bpe_merges *given, char *err, size_t errlen);

/* data.tokenizer = utf8: the file's bytes (ds->ids, kept as they are) decoded
 * twice — once to find the characters present, once to write one id per
 * character into ds->tok — so no code-point copy of the file is made (the full
 * enwik8: 100 MB of bytes + 200 MB of ids).  ds->vocab becomes the 256 bytes
 * (as for BPE: data_token gives a character's bytes).  0, or -1 with err. */
static int open_utf8(gl_dataset *ds, char *err, size_t errlen) {
    enum { CP_COUNT = 0x110000 };
    int rc = -1;
    uint8_t *seen = calloc(CP_COUNT / 8, 1);
    uint16_t *id_of = NULL;
    ds->u8v = malloc(sizeof *ds->u8v);
    if (!seen || !ds->u8v) goto oom;
    size_t chars = 0;
    for (size_t i = 0; i < ds->n; chars++) {
        uint32_t cp;
        i += utf8_next(ds->ids + i, ds->n - i, &cp);
        seen[cp >> 3] |= (uint8_t)(1u << (cp & 7));
    }
    int V = 0;
    for (uint32_t cp = 0; cp < CP_COUNT; cp++) {
        if (!(seen[cp >> 3] >> (cp & 7) & 1)) continue;
        if (V == UTF8_VOCAB_MAX) {
            snprintf(err, errlen, "data.tokenizer = utf8: %s has more than %d distinct characters (the most a utf8 "
                     "vocabulary holds); use data.tokenizer = char or bpe for it", ds->path, UTF8_VOCAB_MAX);
            goto cleanup;
        }
        ds->u8v->cp[V++] = cp;
    }
    ds->u8v->V = V;
    id_of = malloc(CP_COUNT * sizeof *id_of);
    ds->tok = malloc((chars ? chars : 1) * sizeof *ds->tok);
    ds->u8b = malloc((size_t)4 * (size_t)V);
    ds->vocab = malloc(V > 256 ? (size_t)V : 256); /* the 256 bytes, zero beyond: V bytes are readable */
    if (!id_of || !ds->tok || !ds->u8b || !ds->vocab) goto oom;
    for (int v = 0; v < V; v++) {
        id_of[ds->u8v->cp[v]] = (uint16_t)v;
        utf8_put(ds->u8v->cp[v], ds->u8b + 4 * (size_t)v);
    }
    size_t k = 0;
    for (size_t i = 0; i < ds->n; k++) {
        uint32_t cp;
        i += utf8_next(ds->ids + i, ds->n - i, &cp);
        ds->tok[k] = id_of[cp];
    }
    assert(k == chars);
    ds->n_tok = chars;
    memset(ds->vocab, 0, V > 256 ? (size_t)V : 256);
    for (int b = 0; b < 256; b++) ds->vocab[b] = (uint8_t)b, ds->byte_id[b] = -1;
    ds->vocab_size = V;
    rc = 0;
    goto cleanup;
oom:
    snprintf(err, errlen, "data.tokenizer = utf8: out of memory for the characters of %s (%zu bytes)", ds->path, ds->n);
cleanup:
    free(seen);
    free(id_of);
    return rc;
}

static int open_text(gl_dataset *ds, const bpe_merges *given, char *err, size_t errlen) {
    if (task_check(&ds->dc, ds->T, err, errlen)) return -1; /* the synthetic-only keys */
    if (data_find(ds->dc.file, ds->path, sizeof ds->path, err, errlen)) return -1;
    if (read_file(ds, err, errlen)) return -1;
    if (ds->n < 2) {
        snprintf(err, errlen,
                 "data.file: %s has %zu byte%s; a text data set needs enough bytes for a "
                 "training and a validation window of model.seq_len + 1 = %d bytes each",
                 ds->path, ds->n, ds->n == 1 ? "" : "s", ds->T + 1);
        return -1;
    }

    size_t n = ds->n; /* the units the fractions split: bytes, or characters (utf8) */
    if (ds->dc.tokenizer == TOK_UTF8) {
        if (open_utf8(ds, err, errlen)) return -1;
        n = ds->n_tok;
    } else {
        /* vocabulary: sorted distinct bytes; then bytes -> ids in place */
        int present[256] = {0};
        for (size_t i = 0; i < ds->n; i++) present[ds->ids[i]] = 1;
        ds->vocab = malloc(256);
        if (!ds->vocab) {
            snprintf(err, errlen, "data.file: out of memory for the vocabulary of %s", ds->path);
            return -1;
        }
        int V = 0;
        for (int b = 0; b < 256; b++) {
            ds->byte_id[b] = present[b] ? V : -1;
            if (present[b]) ds->vocab[V++] = (uint8_t)b;
        }
        ds->vocab_size = V;
        for (size_t i = 0; i < ds->n; i++) ds->ids[i] = (uint8_t)ds->byte_id[ds->ids[i]];
    }

    /* splits: consecutive; val takes the rest when the fractions sum to 1 */
    double tf = frac_decimal(ds->dc.train_frac), vf = frac_decimal(ds->dc.val_frac);
    size_t train_end = (size_t)floor((double)n * tf);
    size_t val_end = (tf + vf >= 1.0 - 1e-9) ? n : train_end + (size_t)floor((double)n * vf);
    if (ds->dc.train_len > 0) { /* absolute lengths, in tokens (the manifest pairs them, char/utf8 only) */
        if ((size_t)ds->dc.train_len + (size_t)ds->dc.val_len > n) {
            snprintf(err, errlen, "data.train_len (%d) + data.val_len (%d) is more than the %zu %s of %s; lower them "
                     "or use the whole file", ds->dc.train_len, ds->dc.val_len, n,
                     ds->dc.tokenizer == TOK_UTF8 ? "characters" : "bytes", ds->path);
            return -1;
        }
        train_end = (size_t)ds->dc.train_len;
        val_end = train_end + (size_t)ds->dc.val_len;
    }
    if (train_end > n) train_end = n;
    if (val_end > n) val_end = n;
    ds->split_start[SPLIT_TRAIN] = 0;
    ds->split_len[SPLIT_TRAIN] = train_end;
    ds->split_start[SPLIT_VAL] = train_end;
    ds->split_len[SPLIT_VAL] = val_end - train_end;
    ds->split_start[SPLIT_TEST] = val_end;
    ds->split_len[SPLIT_TEST] = n - val_end;
    if (ds->dc.tokenizer != TOK_UTF8)
        for (int s = 0; s < 3; s++) ds->split_bytes[s] = ds->split_len[s];
    if (ds->dc.tokenizer == TOK_BPE && open_bpe(ds, given, err, errlen)) return -1;

    const char *unit = ds->dc.tokenizer == TOK_BPE ? "BPE tokens" : ds->dc.tokenizer == TOK_UTF8 ? "characters" : "bytes";
    for (int s = SPLIT_TRAIN; s <= SPLIT_VAL; s++) {
        if (ds->split_len[s] < (size_t)ds->T + 1) {
            const char *which = s == SPLIT_TRAIN ? "train" : "val";
            char given[96];
            if (ds->dc.train_len > 0) snprintf(given, sizeof given, "data.%s_len", which);
            else snprintf(given, sizeof given, "data.%s_frac = %g of %zu %s", which, s == SPLIT_TRAIN ? tf : vf, n,
                          ds->dc.tokenizer == TOK_UTF8 ? "characters" : "bytes");
            snprintf(err, errlen,
                     "data: the %s split of %s has %zu %s (%s), fewer than one window of model.seq_len + 1 = %d; "
                     "lower model.seq_len, raise data.%s_%s or use a longer file",
                     which, ds->path, ds->split_len[s], unit, given, ds->T + 1, which,
                     ds->dc.train_len > 0 ? "len" : "frac");
            return -1;
        }
    }
    return 0;
}

/* BPE: the merges (trained on the train split's bytes, or given), the
 * tokenizer, and every split encoded alone; the split fields become token
 * counts.  The char vocabulary open_text built is replaced by the 256 bytes;
 * ds->ids is turned back into the file's bytes. */
static int open_bpe(gl_dataset *ds, const bpe_merges *given, char *err, size_t errlen) {
    for (size_t i = 0; i < ds->n; i++) ds->ids[i] = ds->vocab[ds->ids[i]];
    for (int b = 0; b < 256; b++) ds->vocab[b] = (uint8_t)b, ds->byte_id[b] = b;
    ds->merges = malloc(sizeof *ds->merges);
    ds->tok = malloc((ds->n ? ds->n : 1) * sizeof *ds->tok);
    if (!ds->merges || !ds->tok) {
        snprintf(err, errlen, "data.tokenizer = bpe: out of memory for the tokens of %s", ds->path);
        return -1;
    }
    if (given) {
        *ds->merges = *given;
    } else if (bpe_train(ds->ids, ds->split_bytes[SPLIT_TRAIN], ds->dc.vocab_size, ds->merges, err, errlen)) {
        return -1;
    }
    if (bpe_build(&ds->bpe, ds->merges, err, errlen)) return -1;
    ds->vocab_size = ds->bpe.V;
    /* data_vocab promises V readable bytes (agree.c hashes them): the 256 bytes, zero beyond */
    uint8_t *wide = realloc(ds->vocab, ds->bpe.V > 256 ? (size_t)ds->bpe.V : 256);
    if (!wide) {
        snprintf(err, errlen, "data.tokenizer = bpe: out of memory for the vocabulary of %s", ds->path);
        return -1;
    }
    ds->vocab = wide;
    if (ds->bpe.V > 256) memset(ds->vocab + 256, 0, (size_t)ds->bpe.V - 256);
    size_t at = 0, byte0 = 0;
    for (int s = 0; s < 3; s++) {
        size_t k = bpe_encode(&ds->bpe, ds->ids + byte0, ds->split_bytes[s], ds->tok + at);
        ds->split_start[s] = at;
        ds->split_len[s] = k;
        at += k;
        byte0 += ds->split_bytes[s];
    }
    ds->n_tok = at;
    return 0;
}

static int open_task(gl_dataset *ds, char *err, size_t errlen) {
    if (task_check(&ds->dc, ds->T, err, errlen)) return -1;
    int V = task_vocab_size(&ds->dc);
    ds->vocab = malloc((size_t)V);
    if (!ds->vocab) {
        snprintf(err, errlen, "data: out of memory for the vocabulary of data.task = %s (%d ids)",
                 task_name(ds->task), V);
        return -1;
    }
    ds->vocab_size = V;
    task_display(&ds->dc, ds->vocab);
    for (int b = 0; b < 256; b++) ds->byte_id[b] = -1;
    for (int i = V - 1; i >= 0; i--) ds->byte_id[ds->vocab[i]] = i; /* first id wins */
    if (ds->dc.train_size > 0) {
        ds->perm = malloc((size_t)ds->dc.train_size * sizeof *ds->perm);
        if (!ds->perm) {
            snprintf(err, errlen, "data.train_size = %d: out of memory for the order of the training set",
                     ds->dc.train_size);
            return -1;
        }
        ds->perm_epoch = -1;
    }
    return 0;
}

int data_open(gl_dataset *ds, const gl_data_config *dc, int T, uint64_t seed, char *err,
              size_t errlen) {
    return data_open_tok(ds, dc, T, seed, NULL, err, errlen);
}

int data_open_tok(gl_dataset *ds, const gl_data_config *dc, int T, uint64_t seed, const bpe_merges *merges,
                  char *err, size_t errlen) {
    memset(ds, 0, sizeof *ds);
    ds->task = dc->task;
    ds->dc = *dc;
    ds->T = T;
    ds->seed = seed;
    if (T < 1) {
        snprintf(err, errlen, "model.seq_len (%d) must be at least 1", T);
        return -1;
    }
    int rc = dc->task == TASK_TEXT ? open_text(ds, merges, err, errlen) : open_task(ds, err, errlen);
    if (rc) data_close(ds);
    return rc;
}

void data_close(gl_dataset *ds) {
    if (!ds) return;
    free(ds->vocab);
    free(ds->ids);
    free(ds->merges);
    free(ds->tok);
    free(ds->perm);
    free(ds->u8v);
    free(ds->u8b);
    bpe_free(&ds->bpe);
    ds->perm = NULL;
    ds->u8v = NULL;
    ds->u8b = NULL;
    ds->vocab = NULL;
    ds->ids = NULL;
    ds->merges = NULL;
    ds->tok = NULL;
    ds->n_tok = 0;
    ds->vocab_size = 0;
    ds->n = 0;
}

int data_vocab_size(const gl_dataset *ds) { return ds->vocab_size; }

const uint8_t *data_vocab(const gl_dataset *ds) { return ds->vocab; }

const uint8_t *data_token(const gl_dataset *ds, int id, size_t *len) {
    assert(id >= 0 && id < ds->vocab_size);
    if (ds->u8v) {
        uint8_t tmp[4];
        *len = (size_t)utf8_put(ds->u8v->cp[id], tmp);
        return ds->u8b + 4 * (size_t)id;
    }
    if (ds->tok) return bpe_token(&ds->bpe, id, len);
    *len = 1;
    return ds->vocab + id;
}

int data_categories(const gl_dataset *ds, const int *tokens, int n, const cat_words *fw, uint8_t *out) {
    size_t nb = 0;
    for (int i = 0; i < n; i++) {
        size_t len;
        data_token(ds, tokens[i], &len);
        nb += len;
    }
    uint8_t *bytes = malloc(nb ? nb : 1), *scratch = malloc(nb ? nb : 1);
    size_t *start = malloc(((size_t)n + 1) * sizeof *start);
    if (!bytes || !start || !scratch) {
        free(bytes);
        free(scratch);
        free(start);
        return -1;
    }
    size_t at = 0;
    for (int i = 0; i < n; i++) {
        size_t len;
        const uint8_t *p = data_token(ds, tokens[i], &len);
        start[i] = at;
        memcpy(bytes + at, p, len);
        at += len;
    }
    start[n] = at;
    cat_classify_tokens(bytes, start, (size_t)n, fw, scratch, out);
    free(bytes);
    free(scratch);
    free(start);
    return 0;
}

static void text_window(const gl_dataset *ds, size_t start, int *tokens, int *targets,
                        float *mask) {
    if (ds->tok) {
        const uint16_t *q = ds->tok + start;
        for (int t = 0; t < ds->T; t++) {
            tokens[t] = q[t];
            targets[t] = q[t + 1];
            mask[t] = 1.0f;
        }
        return;
    }
    const uint8_t *p = ds->ids + start;
    for (int t = 0; t < ds->T; t++) {
        tokens[t] = p[t];
        targets[t] = p[t + 1];
        mask[t] = 1.0f;
    }
}

void data_train_batch(const gl_dataset *ds, gl_rng *rng, int B, int *tokens, int *targets,
                      float *mask) {
    int T = ds->T;
    for (int b = 0; b < B; b++) {
        int *tk = tokens + (size_t)b * T, *tg = targets + (size_t)b * T;
        float *mk = mask + (size_t)b * T;
        if (ds->task == TASK_TEXT) {
            /* starts s with s + T inside the split: train_len - T choices */
            assert(ds->split_len[SPLIT_TRAIN] > (size_t)T);
            size_t s = ds->split_start[SPLIT_TRAIN] +
                       (size_t)rng_below(rng, (uint64_t)(ds->split_len[SPLIT_TRAIN] - (size_t)T));
            text_window(ds, s, tk, tg, mk);
        } else {
            task_sequence(&ds->dc, rng, T, tk, tg, mk);
        }
    }
}

/* The order of epoch e of the fixed training set: the identity shuffled
 * (Fisher–Yates) by a generator seeded from (seed, e) alone, so a batch is a
 * function of (seed, step) and a resumed run reads the batches an
 * uninterrupted one reads. */
static void epoch_order(gl_dataset *ds, long e) {
    const int N = ds->dc.train_size;
    for (int i = 0; i < N; i++) ds->perm[i] = (uint32_t)i;
    gl_rng r;
    rng_seed(&r, rng_mix64(rng_mix64(ds->seed ^ 0x3c6ef372fe94f82bULL) + (uint64_t)e));
    for (int i = N - 1; i > 0; i--) {
        int j = (int)rng_below(&r, (uint64_t)i + 1);
        uint32_t t = ds->perm[i];
        ds->perm[i] = ds->perm[j];
        ds->perm[j] = t;
    }
    ds->perm_epoch = e;
}

long data_train_steps_per_epoch(const gl_dataset *ds, int B) {
    return ds->task != TASK_TEXT && ds->dc.train_size > 0 && B > 0 ? ds->dc.train_size / B : 0;
}

void data_train_batch_step(gl_dataset *ds, gl_rng *rng, long step, int B, int *tokens, int *targets, float *mask) {
    const long E = data_train_steps_per_epoch(ds, B);
    if (E <= 0) {
        data_train_batch(ds, rng, B, tokens, targets, mask);
        return;
    }
    assert(step >= 0);
    const long e = step / E, j = step % E;
    if (ds->perm_epoch != e) epoch_order(ds, e);
    const int T = ds->T;
    for (int b = 0; b < B; b++) {
        gl_rng r;
        task_eval_rng(&r, ds->seed, SPLIT_TRAIN, (long)ds->perm[j * B + b]);
        task_sequence(&ds->dc, &r, T, tokens + (size_t)b * T, targets + (size_t)b * T, mask + (size_t)b * T);
    }
}

long data_random_starts(const gl_dataset *ds, gl_split split) {
    assert(split >= SPLIT_TRAIN && split <= SPLIT_TEST);
    if (ds->task != TASK_TEXT) return data_eval_windows(ds, split);
    size_t len = ds->split_len[split];
    return len < (size_t)ds->T + 2 ? 0 : (long)(len - (size_t)ds->T - 1);
}

void data_random_batch(const gl_dataset *ds, gl_split split, gl_rng *rng, int B, int *tokens, int *targets,
                       float *mask) {
    const int T = ds->T;
    const long n = data_random_starts(ds, split);
    assert(n > 0);
    for (int b = 0; b < B; b++) {
        int *tk = tokens + (size_t)b * T, *tg = targets + (size_t)b * T;
        float *mk = mask + (size_t)b * T;
        long w = (long)rng_below(rng, (uint64_t)n);
        if (ds->task == TASK_TEXT) {
            text_window(ds, ds->split_start[split] + (size_t)w, tk, tg, mk);
        } else {
            gl_rng r;
            task_eval_rng(&r, ds->seed, (int)split, w);
            task_sequence(&ds->dc, &r, T, tk, tg, mk);
        }
    }
}

long data_eval_windows(const gl_dataset *ds, gl_split split) {
    assert(split >= SPLIT_TRAIN && split <= SPLIT_TEST);
    if (ds->task != TASK_TEXT) return split == SPLIT_TRAIN ? 0 : task_eval_size(&ds->dc);
    size_t len = ds->split_len[split];
    return len < (size_t)ds->T + 1 ? 0 : (long)((len - 1) / (size_t)ds->T);
}

int data_eval_batch(const gl_dataset *ds, gl_split split, long first, int B, int *tokens,
                    int *targets, float *mask) {
    int T = ds->T, filled = 0;
    long count = data_eval_windows(ds, split);
    for (int b = 0; b < B; b++) {
        long w = first + b;
        int *tk = tokens + (size_t)b * T, *tg = targets + (size_t)b * T;
        float *mk = mask + (size_t)b * T;
        if (w < 0 || w >= count) {
            for (int t = 0; t < T; t++) tk[t] = tg[t] = 0, mk[t] = 0.0f;
            continue;
        }
        if (ds->task == TASK_TEXT) {
            text_window(ds, ds->split_start[split] + (size_t)w * (size_t)T, tk, tg, mk);
        } else {
            gl_rng r;
            task_eval_rng(&r, ds->seed, (int)split, w);
            task_sequence(&ds->dc, &r, T, tk, tg, mk);
        }
        filled++;
    }
    return filled;
}

int data_encode(const gl_dataset *ds, const uint8_t *bytes, size_t n, int *ids, char *err,
                size_t errlen) {
    for (size_t i = 0; i < n; i++) {
        int id = ds->byte_id[bytes[i]];
        if (id < 0) {
            char shown[8];
            if (isprint(bytes[i]) && bytes[i] < 128)
                snprintf(shown, sizeof shown, "'%c'", bytes[i]);
            else if (bytes[i] == '\n')
                snprintf(shown, sizeof shown, "'\\n'");
            else
                snprintf(shown, sizeof shown, "'\\x%02x'", bytes[i]);
            snprintf(err, errlen,
                     "byte %s (0x%02x) at offset %zu is not in the vocabulary of %s (%d symbols)",
                     shown, bytes[i], i,
                     ds->task == TASK_TEXT ? ds->path : task_name(ds->task),
                     ds->vocab_size);
            return -1;
        }
        ids[i] = id;
    }
    return 0;
}

void data_accuracy(const float *logits, const int *targets, const float *mask, int B, int T, int V,
                   double *tok_acc, double *seq_acc) {
    long scored = 0, correct = 0, rows = 0, rows_right = 0;
    for (int b = 0; b < B; b++) {
        int row_scored = 0, row_right = 1;
        for (int t = 0; t < T; t++) {
            size_t i = (size_t)b * T + t;
            if (!(mask[i] > 0.0f)) continue;
            const float *l = logits + i * (size_t)V;
            int best = 0;
            for (int v = 1; v < V; v++)
                if (l[v] > l[best]) best = v;
            int ok = best == targets[i];
            scored++;
            correct += ok;
            row_scored = 1;
            row_right &= ok;
        }
        rows += row_scored;
        rows_right += row_scored && row_right;
    }
    *tok_acc = scored ? (double)correct / (double)scored : 0.0;
    *seq_acc = rows ? (double)rows_right / (double)rows : 0.0;
}
