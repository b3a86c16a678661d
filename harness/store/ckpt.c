/*
 * ckpt.c — save and load a run's checkpoint (see ckpt.h, layout in
 * docs/files.md).
 *
 * The file is one header, the model's tensor table, the training state, the
 * config text, the parameters, AdamW m and v, and an FNV-1a 64 checksum of
 * every byte before it.  Numbers are stored in the writer's byte order, which
 * the header records (a file from a machine of the other order is refused, not
 * converted).  Saving goes through "path.tmp" + fsync + rename + fsync of the
 * folder, the usual recipe for an atomic replace on POSIX file systems.
 * Loading checks everything before writing a byte of the model.
 *
 * Not here: HDF5 (exports live in export.c), deciding when to checkpoint (the
 * training loop), or building the model (run_open in rundir.c).
 */
#include "ckpt.h"
#include "fileio.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char ckpt_magic[8] = {'G', 'L', 'A', 'B', 'C', 'K', 'P', 'T'};
#define CKPT_BYTE_ORDER 0x01020304u
#define CKPT_HEADER_BYTES 48u
#define CKPT_HEADER_BPE_BYTES 56u /* version 3: + u32 tokenizer, u32 merges */
#define CKPT_MERGE_BYTES 4u       /* version 3: u16 left, u16 right per merge */
#define CKPT_CP_BYTES 4u          /* version 4: u32 code point per character of the vocabulary */
#define CKPT_TENSOR_BYTES (GL_NAME_MAX + 32u)
#define CKPT_STATE_BYTES 380u
#define CKPT_SUM_BYTES 8u

#define FNV_OFFSET 0xcbf29ce484222325ULL
#define FNV_PRIME 0x100000001b3ULL

static uint64_t ckpt_fnv(uint64_t h, const void *p, size_t n) {
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= FNV_PRIME;
    }
    return h;
}

/* ---------------------------------------------------------------- writing */

typedef struct {
    FILE *f;
    uint64_t hash;
    uint64_t bytes;
    int err_no; /* first errno seen, 0 if none */
} ckpt_writer;

static void ckpt_put(ckpt_writer *w, const void *p, size_t n) {
    if (w->err_no || n == 0) return;
    if (fwrite(p, 1, n, w->f) != n) {
        w->err_no = errno ? errno : EIO;
        return;
    }
    w->hash = ckpt_fnv(w->hash, p, n);
    w->bytes += n;
}

static void ckpt_put_u32(ckpt_writer *w, uint32_t v) { ckpt_put(w, &v, sizeof v); }
static void ckpt_put_u64(ckpt_writer *w, uint64_t v) { ckpt_put(w, &v, sizeof v); }
static void ckpt_put_i32(ckpt_writer *w, int32_t v) { ckpt_put(w, &v, sizeof v); }
static void ckpt_put_i64(ckpt_writer *w, int64_t v) { ckpt_put(w, &v, sizeof v); }

/* Bytes of a checkpoint with these counts; UINT64_MAX when the counts are so
 * large the sum would overflow (a hostile header must not wrap round to the
 * file's real size). */
static uint64_t ckpt_expected_bytes(uint32_t version, uint64_t n_merges, uint64_t n_tensors, uint64_t config_len,
                                    uint64_t n_params) {
    if (n_tensors > (1ull << 32) || config_len > (1ull << 32) || n_params > (UINT64_MAX / 16) ||
        n_merges > (1ull << 32))
        return UINT64_MAX;
    uint64_t extra = version == CKPT_VERSION_BPE    ? (CKPT_HEADER_BPE_BYTES - CKPT_HEADER_BYTES) + n_merges * CKPT_MERGE_BYTES
                     : version == CKPT_VERSION_UTF8 ? (CKPT_HEADER_BPE_BYTES - CKPT_HEADER_BYTES) + n_merges * CKPT_CP_BYTES
                                                    : 0;
    return CKPT_HEADER_BYTES + extra + n_tensors * CKPT_TENSOR_BYTES + CKPT_STATE_BYTES + config_len +
           3 * n_params * sizeof(float) + CKPT_SUM_BYTES;
}

int ckpt_vocab_bytes(const gl_train_state *st) {
    if (st->tokenizer == TOK_BPE) return BPE_BASE;
    if (st->tokenizer == TOK_UTF8) return 0;
    return st->vocab_size < 0 ? 0 : st->vocab_size > 256 ? 256 : st->vocab_size;
}

/* What a failed save leaves: the words for the error message.  Only claims an
 * unchanged previous checkpoint when one is there. */
static void ckpt_previous(const char *path, char *out, size_t n) {
    if (access(path, F_OK) == 0) snprintf(out, n, "the previous checkpoint %s is unchanged", path);
    else snprintf(out, n, "there is no earlier checkpoint at %s (the run has none yet)", path);
}

int ckpt_save(const char *path, const gl_model *m, const gl_train_state *st, const char *config_ini,
              uint64_t model_hash, char *err, size_t errlen) {
    assert(m && st && path);
    assert(m->params && m->adam_m && m->adam_v && m->tensors);
    int rc = -1;
    ckpt_writer w = {NULL, FNV_OFFSET, 0, 0};
    fileio_out out = {0};

    if (fileio_begin(&out, path, "checkpoint", err, errlen) != 0) goto cleanup;
    w.f = out.f;

    uint64_t config_len = config_ini ? strlen(config_ini) : 0;
    uint64_t n_params = m->n_params;
    const int bpe = st->tokenizer == TOK_BPE, u8 = st->tokenizer == TOK_UTF8;
    assert(!bpe || (st->bpe.n >= 0 && st->bpe.n <= BPE_MERGES_MAX && st->vocab_size == BPE_BASE + st->bpe.n));
    assert(!u8 || (st->utf8.V >= 1 && st->utf8.V <= UTF8_VOCAB_MAX && st->vocab_size == st->utf8.V));
    const uint32_t version = bpe ? CKPT_VERSION_BPE : u8 ? CKPT_VERSION_UTF8 : CKPT_VERSION;
    /* the tokenizer section's entries: merges (version 3) or code points (version 4) */
    const uint32_t n_tok = bpe ? (uint32_t)st->bpe.n : u8 ? (uint32_t)st->utf8.V : 0;
    uint64_t total = ckpt_expected_bytes(version, n_tok, (uint64_t)m->n_tensors, config_len, n_params);

    /* header */
    ckpt_put(&w, ckpt_magic, sizeof ckpt_magic);
    ckpt_put_u32(&w, version);
    ckpt_put_u32(&w, CKPT_BYTE_ORDER);
    ckpt_put_u64(&w, total);
    ckpt_put_u64(&w, model_hash);
    ckpt_put_u64(&w, n_params);
    ckpt_put_u32(&w, (uint32_t)m->n_tensors);
    ckpt_put_u32(&w, (uint32_t)config_len);
    if (bpe || u8) {
        ckpt_put_u32(&w, (uint32_t)st->tokenizer);
        ckpt_put_u32(&w, n_tok);
    }
    assert(w.err_no || w.bytes == (bpe || u8 ? CKPT_HEADER_BPE_BYTES : CKPT_HEADER_BYTES));

    /* tensor table */
    for (int i = 0; i < m->n_tensors; i++) {
        const gl_tensor *t = &m->tensors[i];
        char name[GL_NAME_MAX];
        memset(name, 0, sizeof name);
        snprintf(name, sizeof name, "%s", t->name);
        ckpt_put(&w, name, sizeof name);
        ckpt_put_u64(&w, t->offset);
        ckpt_put_u64(&w, t->size);
        ckpt_put_i32(&w, t->ndim);
        ckpt_put_i32(&w, t->shape[0]);
        ckpt_put_i32(&w, t->shape[1]);
        ckpt_put_i32(&w, t->decay);
    }

    /* training state */
    ckpt_put_i64(&w, st->step);
    for (int i = 0; i < 4; i++) ckpt_put_u64(&w, st->data_rng.s[i]);
    for (int i = 0; i < 4; i++) ckpt_put_u64(&w, st->aux_rng.s[i]);
    ckpt_put(&w, &st->elapsed_s, sizeof(double));
    ckpt_put_i64(&w, st->tokens_seen);
    ckpt_put_i32(&w, st->vocab_size);
    ckpt_put(&w, st->vocab, 256);
    ckpt_put(&w, &st->log_loss_sum, sizeof(double));
    ckpt_put_i64(&w, st->log_n);
    ckpt_put(&w, &st->eval_loss_sum, sizeof(double));
    ckpt_put_i64(&w, st->eval_n);

    /* tokenizer section (version 3) */
    for (int k = 0; bpe && k < st->bpe.n; k++) {
        ckpt_put(&w, &st->bpe.pair[k][0], sizeof(uint16_t));
        ckpt_put(&w, &st->bpe.pair[k][1], sizeof(uint16_t));
    }
    /* tokenizer section (version 4) */
    for (int k = 0; u8 && k < st->utf8.V; k++) ckpt_put_u32(&w, st->utf8.cp[k]);

    ckpt_put(&w, config_ini, config_len);
    ckpt_put(&w, m->params, n_params * sizeof(float));
    ckpt_put(&w, m->adam_m, n_params * sizeof(float));
    ckpt_put(&w, m->adam_v, n_params * sizeof(float));
    uint64_t sum = w.hash;
    ckpt_put_u64(&w, sum);

    char prev[4200];
    ckpt_previous(path, prev, sizeof prev);
    if (w.err_no) {
        snprintf(err, errlen, "%s: writing checkpoint failed: %s (free disk space or check the device); %s",
                 out.tmp, strerror(w.err_no), prev);
        goto cleanup;
    }
    assert(w.bytes == total);
    w.f = NULL;
    if (fileio_commit(&out, "checkpoint", err, errlen) != 0) goto cleanup;
    rc = 0;
cleanup:
    fileio_abort(&out);
    return rc;
}

/* ---------------------------------------------------------------- reading */

typedef struct {
    FILE *f;
    uint64_t total, model_hash, n_params;
    uint32_t version, n_tensors, config_len;
    uint32_t tokenizer, n_merges; /* versions 3 and 4 (n_merges: the code points in 4); 0 and 0 in version 2 */
    uint32_t header_bytes;
    gl_tensor *tensors;   /* [n_tensors] as stored (name, offset, size, ndim, shape, decay) */
    gl_train_state st;
    char *config;         /* config_len + 1, NUL-terminated */
} ckpt_file;

static void ckpt_file_close(ckpt_file *cf) {
    if (cf->f) fclose(cf->f);
    free(cf->tensors);
    free(cf->config);
    memset(cf, 0, sizeof *cf);
}

/* Read exactly n bytes; 0 on success. */
static int ckpt_get(FILE *f, void *p, size_t n) { return fread(p, 1, n, f) == n ? 0 : -1; }

static uint32_t ckpt_u32(const uint8_t *b) { uint32_t v; memcpy(&v, b, sizeof v); return v; }
static uint64_t ckpt_u64(const uint8_t *b) { uint64_t v; memcpy(&v, b, sizeof v); return v; }
static int32_t ckpt_i32(const uint8_t *b) { int32_t v; memcpy(&v, b, sizeof v); return v; }
static int64_t ckpt_i64(const uint8_t *b) { int64_t v; memcpy(&v, b, sizeof v); return v; }

/* Every field of a checkpoint is untrusted input, even under a good checksum
 * (the checksum finds accidents, not a file made to look right): check each
 * against what a writer can produce.  0, or -1 with the field named. */
static int ckpt_check_fields(const ckpt_file *cf, const char *path, char *err, size_t errlen) {
    const gl_train_state *st = &cf->st;
    const char *bad = NULL;
    char what[320] = "";
    if (st->tokenizer == TOK_BPE) {
        bpe_tok t;
        char why[256];
        if (bpe_build(&t, &st->bpe, why, sizeof why)) {
            snprintf(what, sizeof what, "its tokenizer section is invalid (%s)", why);
            bad = what;
        } else if (st->vocab_size != t.V) {
            snprintf(what, sizeof what, "the vocabulary size is %d, its %d BPE merges give %d", st->vocab_size,
                     st->bpe.n, t.V);
            bad = what;
        }
        bpe_free(&t);
        if (bad) goto done;
    }
    if (st->tokenizer == TOK_UTF8) {
        char why[256];
        if (utf8_vocab_check(&st->utf8, why, sizeof why)) {
            snprintf(what, sizeof what, "its tokenizer section is invalid (%s)", why);
            bad = what;
        } else if (st->vocab_size != st->utf8.V) {
            snprintf(what, sizeof what, "the vocabulary size is %d, its UTF-8 section holds %d characters",
                     st->vocab_size, st->utf8.V);
            bad = what;
        }
        if (bad) goto done;
    }
    if (st->step < 0) bad = "the step is negative";
    else if (st->tokens_seen < 0 || st->log_n < 0 || st->eval_n < 0) bad = "a token or step count is negative";
    else if (!isfinite(st->elapsed_s) || st->elapsed_s < 0) bad = "the elapsed time is negative or not finite";
    else if (!isfinite(st->log_loss_sum) || !isfinite(st->eval_loss_sum)) bad = "a running loss sum is not finite";
    else if (st->tokenizer == TOK_CHAR && (st->vocab_size < 1 || st->vocab_size > 256)) {
        snprintf(what, sizeof what, "the vocabulary size is %d (a byte vocabulary has 1 to 256)", st->vocab_size);
        bad = what;
    } else if (memchr(cf->config, '\0', cf->config_len)) bad = "the config text holds a NUL byte";
    for (uint32_t i = 0; !bad && i < cf->n_tensors; i++) {
        const gl_tensor *t = &cf->tensors[i];
        uint64_t elems = t->ndim == 2 ? (uint64_t)(uint32_t)t->shape[0] * (uint32_t)t->shape[1]
                                      : (uint64_t)(uint32_t)t->shape[0];
        if ((t->ndim != 1 && t->ndim != 2) || t->shape[0] < 1 || (t->ndim == 2 && t->shape[1] < 1) ||
            elems != t->size || t->offset > cf->n_params || t->size > cf->n_params - t->offset) {
            snprintf(what, sizeof what, "tensor %u (%s) has a shape, size or offset outside the %" PRIu64
                     " stored parameters", i, t->name, cf->n_params);
            bad = what;
        }
    }
done:
    if (!bad) return 0;
    snprintf(err, errlen, "%s: corrupted or hand-made: %s; restore the file or restart the run", path, bad);
    return -1;
}

/* The FNV-1a 64 of every byte of cf's file before the last 8 (the header, already read into hdr,
 * then the rest in 1 MiB chunks) against the stored checksum.  Returns 0, or -1 with a message. */
static int ckpt_verify_sum(ckpt_file *cf, const char *path, const uint8_t *hdr, char *err, size_t errlen) {
    int rc = -1;
    uint8_t *buf = NULL;
    enum { CHUNK = 1 << 20 };
    buf = malloc(CHUNK);
    if (!buf) {
        snprintf(err, errlen, "%s: out of memory checking the checkpoint", path);
        goto done;
    }
    uint64_t h = ckpt_fnv(FNV_OFFSET, hdr, cf->header_bytes);
    uint64_t left = cf->total - cf->header_bytes - CKPT_SUM_BYTES;
    while (left > 0) {
        size_t n = left < CHUNK ? (size_t)left : CHUNK;
        if (ckpt_get(cf->f, buf, n) != 0) {
            snprintf(err, errlen, "%s: read error while checking the checkpoint: %s", path,
                     ferror(cf->f) ? strerror(errno) : "unexpected end of file");
            goto done;
        }
        h = ckpt_fnv(h, buf, n);
        left -= n;
    }
    uint8_t sumb[8];
    if (ckpt_get(cf->f, sumb, sizeof sumb) != 0) {
        snprintf(err, errlen, "%s: read error at the checksum", path);
        goto done;
    }
    if (ckpt_u64(sumb) != h) {
        snprintf(err, errlen, "%s: corrupted: checksum mismatch (stored %016" PRIx64 ", computed %016" PRIx64
                 "); restore the file or restart the run", path, ckpt_u64(sumb), h);
        goto done;
    }

    rc = 0;
done:
    free(buf);
    return rc;
}

/* Read and decode the header of the open cf->f into hdr and cf (version, sizes, the
 * tokenizer of a version-3 file); *size: the file's length.  Checks the magic, that
 * the header is whole, and the byte order.  0, or -1 with a message in err. */
static int ckpt_read_header(ckpt_file *cf, const char *path, uint8_t *hdr, uint64_t *size, char *err,
                            size_t errlen) {
    struct stat sb;
    if (fstat(fileno(cf->f), &sb) != 0) {
        snprintf(err, errlen, "%s: cannot stat checkpoint: %s", path, strerror(errno));
        return -1;
    }
    *size = (uint64_t)sb.st_size;
    size_t got = fread(hdr, 1, CKPT_HEADER_BYTES, cf->f);
    if (got < sizeof ckpt_magic || memcmp(hdr, ckpt_magic, sizeof ckpt_magic) != 0) {
        snprintf(err, errlen, "%s: not a gatelab checkpoint (bad magic); pass a run folder's ckpt file", path);
        return -1;
    }
    const int wide = got == CKPT_HEADER_BYTES &&
                     (ckpt_u32(hdr + 8) == CKPT_VERSION_BPE || ckpt_u32(hdr + 8) == CKPT_VERSION_UTF8);
    if (wide) got += fread(hdr + CKPT_HEADER_BYTES, 1, CKPT_HEADER_BPE_BYTES - CKPT_HEADER_BYTES, cf->f);
    cf->header_bytes = wide ? CKPT_HEADER_BPE_BYTES : CKPT_HEADER_BYTES;
    if (got < cf->header_bytes) {
        snprintf(err, errlen, "%s: truncated: %" PRIu64 " bytes, shorter than the %u-byte header; "
                 "the file was cut short — restore it or restart the run", path, *size, CKPT_HEADER_BYTES);
        return -1;
    }
    cf->version = ckpt_u32(hdr + 8);
    uint32_t order = ckpt_u32(hdr + 12);
    cf->total = ckpt_u64(hdr + 16);
    cf->model_hash = ckpt_u64(hdr + 24);
    cf->n_params = ckpt_u64(hdr + 32);
    cf->n_tensors = ckpt_u32(hdr + 40);
    cf->config_len = ckpt_u32(hdr + 44);
    if (cf->header_bytes == CKPT_HEADER_BPE_BYTES) {
        cf->tokenizer = ckpt_u32(hdr + 48);
        cf->n_merges = ckpt_u32(hdr + 52);
    }
    if (order != CKPT_BYTE_ORDER) {
        snprintf(err, errlen, "%s: written on a machine of the other byte order; "
                 "load it on such a machine and export it instead", path);
        return -1;
    }
    return 0;
}

/* The decoded header against what this gatelab reads and against the file's
 * length (size bytes).  0, or -1 with a message in err. */
static int ckpt_check_header(const ckpt_file *cf, const char *path, uint64_t size, char *err, size_t errlen) {
    if (cf->version != CKPT_VERSION && cf->version != CKPT_VERSION_BPE && cf->version != CKPT_VERSION_UTF8) {
        snprintf(err, errlen, "%s: checkpoint format version %u, this gatelab reads versions %d to %d; "
                 "use the gatelab that wrote it", path, cf->version, CKPT_VERSION, CKPT_VERSION_UTF8);
        return -1;
    }
    if (cf->version == CKPT_VERSION_UTF8 &&
        (cf->tokenizer != TOK_UTF8 || cf->n_merges < 1 || cf->n_merges > UTF8_VOCAB_MAX)) {
        snprintf(err, errlen, "%s: corrupted or hand-made: tokenizer %u with %u characters (a version-4 checkpoint "
                 "holds a UTF-8 vocabulary of 1 to %d characters); restore the file or restart the run", path,
                 cf->tokenizer, cf->n_merges, UTF8_VOCAB_MAX);
        return -1;
    }
    if (cf->version == CKPT_VERSION_BPE && (cf->tokenizer != TOK_BPE || cf->n_merges > BPE_MERGES_MAX)) {
        snprintf(err, errlen, "%s: corrupted or hand-made: tokenizer %u with %u merges (a version-3 checkpoint holds "
                 "a BPE tokenizer of at most %d merges); restore the file or restart the run", path, cf->tokenizer,
                 cf->n_merges, BPE_MERGES_MAX);
        return -1;
    }
    if (size < cf->total) {
        snprintf(err, errlen, "%s: truncated: %" PRIu64 " of %" PRIu64 " bytes; the file was cut short "
                 "(full disk or interrupted copy) — restore it or restart the run", path, size, cf->total);
        return -1;
    }
    if (size > cf->total) {
        snprintf(err, errlen, "%s: corrupted: %" PRIu64 " bytes where the header says %" PRIu64
                 "; restore the file or restart the run", path, size, cf->total);
        return -1;
    }
    if (cf->total != ckpt_expected_bytes(cf->version, cf->n_merges, cf->n_tensors, cf->config_len, cf->n_params)) {
        snprintf(err, errlen, "%s: corrupted: header sizes do not add up to its length; "
                 "restore the file or restart the run", path);
        return -1;
    }
    return 0;
}

/* The training state record (CKPT_STATE_BYTES) into cf->st. */
static void ckpt_decode_state(ckpt_file *cf, const uint8_t *sb2) {
    cf->st.step = (long)ckpt_i64(sb2);
    for (int i = 0; i < 4; i++) cf->st.data_rng.s[i] = ckpt_u64(sb2 + 8 + 8 * i);
    for (int i = 0; i < 4; i++) cf->st.aux_rng.s[i] = ckpt_u64(sb2 + 40 + 8 * i);
    memcpy(&cf->st.elapsed_s, sb2 + 72, sizeof(double));
    cf->st.tokens_seen = (long)ckpt_i64(sb2 + 80);
    cf->st.vocab_size = ckpt_i32(sb2 + 88);
    memcpy(cf->st.vocab, sb2 + 92, 256);
    memcpy(&cf->st.log_loss_sum, sb2 + 348, sizeof(double));
    cf->st.log_n = (long)ckpt_i64(sb2 + 356);
    memcpy(&cf->st.eval_loss_sum, sb2 + 364, sizeof(double));
    cf->st.eval_n = (long)ckpt_i64(sb2 + 372);
    cf->st.tokenizer = cf->version == CKPT_VERSION_BPE ? TOK_BPE : cf->version == CKPT_VERSION_UTF8 ? TOK_UTF8 : TOK_CHAR;
}

/* After the checksum passed: the tensor table, the state, the BPE merges and the
 * config, leaving cf->f at the parameters.  0, or -1 with a message in err. */
static int ckpt_read_tables(ckpt_file *cf, const char *path, char *err, size_t errlen) {
    if (fseek(cf->f, (long)cf->header_bytes, SEEK_SET) != 0) {
        snprintf(err, errlen, "%s: seek failed: %s", path, strerror(errno));
        return -1;
    }
    cf->tensors = calloc(cf->n_tensors ? cf->n_tensors : 1, sizeof *cf->tensors);
    cf->config = malloc((size_t)cf->config_len + 1);
    if (!cf->tensors || !cf->config) {
        snprintf(err, errlen, "%s: out of memory reading the checkpoint", path);
        return -1;
    }
    for (uint32_t i = 0; i < cf->n_tensors; i++) {
        uint8_t tb[CKPT_TENSOR_BYTES];
        if (ckpt_get(cf->f, tb, sizeof tb) != 0) goto read_error;
        gl_tensor *t = &cf->tensors[i];
        memcpy(t->name, tb, GL_NAME_MAX);
        t->name[GL_NAME_MAX - 1] = '\0';
        t->offset = (size_t)ckpt_u64(tb + GL_NAME_MAX);
        t->size = (size_t)ckpt_u64(tb + GL_NAME_MAX + 8);
        t->ndim = ckpt_i32(tb + GL_NAME_MAX + 16);
        t->shape[0] = ckpt_i32(tb + GL_NAME_MAX + 20);
        t->shape[1] = ckpt_i32(tb + GL_NAME_MAX + 24);
        t->decay = ckpt_i32(tb + GL_NAME_MAX + 28);
    }
    uint8_t sb2[CKPT_STATE_BYTES];
    if (ckpt_get(cf->f, sb2, sizeof sb2) != 0) goto read_error;
    ckpt_decode_state(cf, sb2);
    const int u8 = cf->version == CKPT_VERSION_UTF8;
    cf->st.bpe.n = u8 ? 0 : (int)cf->n_merges;
    cf->st.utf8.V = u8 ? (int)cf->n_merges : 0;
    for (uint32_t k = 0; u8 && k < cf->n_merges; k++) {
        uint8_t cb[CKPT_CP_BYTES];
        if (ckpt_get(cf->f, cb, sizeof cb) != 0) goto read_error;
        cf->st.utf8.cp[k] = ckpt_u32(cb);
    }
    for (uint32_t k = 0; !u8 && k < cf->n_merges; k++) {
        uint8_t mb[CKPT_MERGE_BYTES];
        if (ckpt_get(cf->f, mb, sizeof mb) != 0) goto read_error;
        memcpy(&cf->st.bpe.pair[k][0], mb, sizeof(uint16_t));
        memcpy(&cf->st.bpe.pair[k][1], mb + 2, sizeof(uint16_t));
    }
    if (ckpt_get(cf->f, cf->config, cf->config_len) != 0) goto read_error;
    cf->config[cf->config_len] = '\0';
    return 0;
read_error:
    snprintf(err, errlen, "%s: read error after the checksum passed (file changed while reading?)", path);
    return -1;
}

/* Open path and check magic, version, byte order, length and checksum; then
 * read the tensor table, state and config.  On success cf->f is positioned at
 * the parameters.  Returns 0, or -1 with a message in err (cf closed). */
static int ckpt_open_checked(const char *path, ckpt_file *cf, char *err, size_t errlen) {
    int rc = -1;
    uint8_t hdr[CKPT_HEADER_BPE_BYTES];
    uint64_t size = 0;
    memset(cf, 0, sizeof *cf);
    if (fileio_open_regular(path, "checkpoint", &cf->f, err, errlen)) goto cleanup;
    if (ckpt_read_header(cf, path, hdr, &size, err, errlen)) goto cleanup;
    if (ckpt_check_header(cf, path, size, err, errlen)) goto cleanup;
    /* checksum over everything before the last 8 bytes */
    if (ckpt_verify_sum(cf, path, hdr, err, errlen)) goto cleanup;
    if (ckpt_read_tables(cf, path, err, errlen)) goto cleanup;
    if (ckpt_check_fields(cf, path, err, errlen) != 0) goto cleanup;
    rc = 0;
cleanup:
    if (rc != 0) ckpt_file_close(cf);
    return rc;
}

static void ckpt_shape_str(const gl_tensor *t, char *out, size_t n) {
    if (t->ndim == 2) snprintf(out, n, "(%d, %d)", t->shape[0], t->shape[1]);
    else snprintf(out, n, "(%d)", t->shape[0]);
}

/* Compare the stored table with the model's; 0 if identical, else -1 with the
 * first difference described in what. */
static int ckpt_compare_tables(const ckpt_file *cf, const gl_model *m, char *what, size_t n) {
    /* names first (the most telling difference), then shapes, then layout */
    for (uint32_t i = 0; i < cf->n_tensors; i++) {
        if (!model_find_tensor(m, cf->tensors[i].name)) {
            snprintf(what, n, "checkpoint has %s, this model does not", cf->tensors[i].name);
            return -1;
        }
    }
    for (int j = 0; j < m->n_tensors; j++) {
        int found = 0;
        for (uint32_t i = 0; i < cf->n_tensors && !found; i++)
            found = !strcmp(m->tensors[j].name, cf->tensors[i].name);
        if (!found) {
            snprintf(what, n, "this model has %s, the checkpoint does not", m->tensors[j].name);
            return -1;
        }
    }
    for (uint32_t i = 0; i < cf->n_tensors; i++) {
        const gl_tensor *t = &cf->tensors[i];
        const gl_tensor *u = model_find_tensor(m, t->name);
        if (u->ndim != t->ndim || u->shape[0] != t->shape[0] || (t->ndim == 2 && u->shape[1] != t->shape[1]) ||
            u->size != t->size) {
            char a[48], b[48];
            ckpt_shape_str(t, a, sizeof a);
            ckpt_shape_str(u, b, sizeof b);
            snprintf(what, n, "%s is %s in the checkpoint, %s in this model", t->name, a, b);
            return -1;
        }
    }
    for (uint32_t i = 0; i < cf->n_tensors; i++) {
        const gl_tensor *t = &cf->tensors[i];
        const gl_tensor *u = model_find_tensor(m, t->name);
        if (u->offset != t->offset) {
            snprintf(what, n, "%s is at offset %zu in the checkpoint, %zu in this model", t->name,
                     t->offset, u->offset);
            return -1;
        }
    }
    if (cf->n_params != m->n_params) {
        snprintf(what, n, "%" PRIu64 " parameters in the checkpoint, %zu in this model", cf->n_params, m->n_params);
        return -1;
    }
    return 0;
}

/* A trained model's numbers are finite and AdamW's second moments are not
 * negative; a checkpoint that says otherwise would print "loss": nan or train
 * on garbage.  Reads the three arrays from f's position (the parameters) in
 * chunks, before anything is copied into the model, and seeks back.  0, or
 * -1 naming the tensor and index. */
static int ckpt_check_values(FILE *f, const gl_model *m, const char *path, char *err, size_t errlen) {
    static const char *const family[3] = {"parameter", "AdamW first moment", "AdamW second moment"};
    enum { CHUNK = 1 << 16 };
    int rc = -1;
    long start = ftell(f);
    float *buf = malloc(CHUNK * sizeof(float));
    if (start < 0 || !buf) {
        snprintf(err, errlen, "%s: %s checking the checkpoint's values", path, buf ? "cannot tell the position" : "out of memory");
        goto cleanup;
    }
    for (int fam = 0; fam < 3; fam++) {
        for (size_t i0 = 0; i0 < m->n_params; i0 += CHUNK) {
            size_t n = m->n_params - i0 < CHUNK ? m->n_params - i0 : CHUNK;
            if (ckpt_get(f, buf, n * sizeof(float)) != 0) {
                snprintf(err, errlen, "%s: read error after the checksum passed (file changed while reading?)", path);
                goto cleanup;
            }
            for (size_t k = 0; k < n; k++) {
                float v = buf[k];
                if (isfinite(v) && !(fam == 2 && v < 0)) continue;
                size_t i = i0 + k;
                const char *name = "?";
                for (int j = 0; j < m->n_tensors; j++)
                    if (i >= m->tensors[j].offset && i < m->tensors[j].offset + m->tensors[j].size) name = m->tensors[j].name;
                snprintf(err, errlen, "%s: corrupted or hand-made: %s %s[%zu] is %g; restore the file or restart the run",
                         path, family[fam], name, i - (name[0] == '?' ? 0 : model_find_tensor(m, name)->offset), (double)v);
                goto cleanup;
            }
        }
    }
    if (fseek(f, start, SEEK_SET) != 0) {
        snprintf(err, errlen, "%s: seek failed: %s", path, strerror(errno));
        goto cleanup;
    }
    rc = 0;
cleanup:
    free(buf);
    return rc;
}

int ckpt_load(const char *path, gl_model *m, gl_train_state *st, uint64_t expect_model_hash,
              char *err, size_t errlen) {
    assert(m && st && path);
    ckpt_file cf;
    int rc = -1;
    if (ckpt_open_checked(path, &cf, err, errlen) != 0) return -1;

    char what[256];
    if (ckpt_compare_tables(&cf, m, what, sizeof what) != 0) {
        snprintf(err, errlen, "%s: written by a different model config: %s; open the run with the config "
                 "stored in its checkpoint (gatelab eval/export RUN do), or start a new run", path, what);
        goto cleanup;
    }
    if (expect_model_hash != 0 && cf.model_hash != expect_model_hash) {
        snprintf(err, errlen, "%s: written by a different model config: model hash %016" PRIx64
                 ", this config %016" PRIx64 " (same tensors, different settings such as norm_eps, "
                 "rope_base or a variant); use the run's own config.ini or start a new run",
                 path, cf.model_hash, expect_model_hash);
        goto cleanup;
    }
    if (cf.st.vocab_size != m->cfg.vocab_size) {
        snprintf(err, errlen, "%s: corrupted or hand-made: a vocabulary of %d bytes for a model with %d token "
                 "embeddings; restore the file or restart the run", path, cf.st.vocab_size, m->cfg.vocab_size);
        goto cleanup;
    }
    if (ckpt_check_values(cf.f, m, path, err, errlen) != 0) goto cleanup;
    /* Everything checked: now fill the model. */
    size_t bytes = m->n_params * sizeof(float);
    if (ckpt_get(cf.f, m->params, bytes) != 0 || ckpt_get(cf.f, m->adam_m, bytes) != 0 ||
        ckpt_get(cf.f, m->adam_v, bytes) != 0) {
        snprintf(err, errlen, "%s: read error after the checks passed (file changed while loading?); "
                 "the model is partly loaded — do not use it", path);
        goto cleanup;
    }
    *st = cf.st;
    rc = 0;
cleanup:
    ckpt_file_close(&cf);
    return rc;
}

int ckpt_read_info(const char *path, char **config_ini, ckpt_info *info, char *err, size_t errlen) {
    ckpt_file cf;
    if (config_ini) *config_ini = NULL;
    if (ckpt_open_checked(path, &cf, err, errlen) != 0) return -1;
    if (info) {
        info->model_hash = cf.model_hash;
        info->step = cf.st.step;
        info->vocab_size = cf.st.vocab_size;
        memcpy(info->vocab, cf.st.vocab, sizeof info->vocab);
        info->n_params = (size_t)cf.n_params;
        info->n_tensors = (int)cf.n_tensors;
    }
    if (config_ini) {
        *config_ini = cf.config;
        cf.config = NULL;
    }
    ckpt_file_close(&cf);
    return 0;
}

int ckpt_read_state(const char *path, gl_train_state *st, char *err, size_t errlen) {
    ckpt_file cf;
    if (ckpt_open_checked(path, &cf, err, errlen) != 0) return -1;
    *st = cf.st;
    ckpt_file_close(&cf);
    return 0;
}

int ckpt_read_config(const char *path, char **config_ini, char *err, size_t errlen) {
    return ckpt_read_info(path, config_ini, NULL, err, errlen);
}
