/*
 * manifest.c — read, check and write a run's configuration (manifest.h).
 *
 * One table (mf_keys[] in manifest_keys.c) knows every key: its section, type, place in
 * gl_manifest, range, and whether a sweep may vary it.  Parsing, range checks,
 * error messages, the canonical INI text and the model hash are all driven by
 * that table, so adding a key is one line here plus one in docs/manifest.md.
 *
 * Order of a load: defaults, then the file, then the command-line overrides,
 * then the named scale (experiments/scales.ini) fills d_model, n_layer,
 * n_head, n_kv_head and d_ff wherever the file or the command line did not set
 * them, then whole-config checks (config_validate, the data fractions, the
 * synthetic task against seq_len).
 *
 * INI parsing is inih (Debian libinih-dev).  We feed it through our own line
 * reader, which counts physical lines (inih as packaged cannot hand the line
 * number to the handler), strips leading blanks (so an indented line is never
 * taken for a continuation of the previous value) and reports over-long lines
 * instead of letting inih split them.  The claims file and the ranks' config
 * comparison read INI through store/initext.c, the same design as a shared reader.
 *
 * What it does not do: expand sweeps (sweep.c does; here [sweep] lists are
 * only parsed and every item checked), open data files, or print.
 */
#include "manifest.h"

#include <ctype.h>
#include <dirent.h>
#include <limits.h>
#include <errno.h>
#include <inttypes.h>
#include <ini.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fileio.h"
#include "parse.h"
#include "sweepval.h"
#include "bpe.h"
#include "editdist.h"
#include "tasks.h"

/* snprintf without -Wformat-truncation noise: messages are cut to the
 * caller's buffer by design. */
__attribute__((format(printf, 3, 4))) static int msgf(char *out, size_t outlen, const char *fmt,
                                                       ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(out, outlen, fmt, ap);
    va_end(ap);
    return n;
}

#include "manifest_keys.h"

#define N_KEYS MF_N_KEYS

static const char *const sections[] = {"model", "data", "train", "log", "sweep"};
#define N_SECTIONS 4 /* sections that hold keys; "sweep" is the fifth name */

/* Short names accepted on the command line and in [sweep]. */
static const struct {
    const char *alias, *section, *name;
} aliases[] = {
    {"lambda", "model", "tsa_lambda"},
    {"scale", "model", "scale"},
    {"seed", "train", "seed"},
    {"value_residual", "model", "value_residual"},
    {"depth_routing", "model", "depth_routing"},
    {"lr", "train", "lr"},
};

/* The five keys a named scale sets, in scales.ini order. */
static const char *const scale_keys[5] = {"d_model", "n_layer", "n_head", "n_kv_head", "d_ff"};

static int find_key(const char *section, const char *name) {
    for (int i = 0; i < N_KEYS; i++)
        if (!strcmp(mf_keys[i].section, section) && !strcmp(mf_keys[i].name, name)) return i;
    return -1;
}

/* --------------------------------------------------------- small tools --- */

/* Write " (did you mean X?)" into out when some candidate is close. */
static void suggest(char *out, size_t outlen, const char *word, const char *const *cands, int n) {
    int best = -1, bd = 99;
    for (int i = 0; i < n; i++) {
        int d = editdist(word, cands[i], 0); /* keys are lower case: "LR" is not "lr" */
        if (d < bd) bd = d, best = i;
    }
    int len = (int)strlen(word);
    if (best >= 0 && (bd <= 2 || bd * 3 <= len) && bd < len)
        msgf(out, outlen, " (did you mean %s?)", cands[best]);
    else
        out[0] = '\0';
}

static int ieq(const char *a, const char *b) {
    for (; *a && *b; a++, b++)
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b)) return 0;
    return *a == *b;
}

/* A growable string for the canonical text. */
typedef struct {
    char *p;
    size_t len, cap;
    int oom;
} strbuf;

static void sb_printf(strbuf *sb, const char *fmt, ...) {
    if (sb->oom) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        size_t room = sb->cap - sb->len;
        int n = vsnprintf(sb->p ? sb->p + sb->len : NULL, sb->p ? room : 0, fmt, ap);
        va_end(ap);
        if (n < 0) {
            sb->oom = 1;
            return;
        }
        if (sb->p && (size_t)n < room) {
            sb->len += (size_t)n;
            return;
        }
        size_t cap = sb->cap ? sb->cap * 2 : 1024;
        while (cap < sb->len + (size_t)n + 1) cap *= 2;
        char *q = realloc(sb->p, cap);
        if (!q) {
            sb->oom = 1;
            return;
        }
        sb->p = q;
        sb->cap = cap;
    }
}

/* ------------------------------------------------------ value parsing --- */

/* The canonical text of key k's current value. */
static void range_text(char *out, size_t outlen, const key_def *k) {
    if (k->kind == K_INT) {
        msgf(out, outlen, "must be between %.0f and %.0f", k->lo, k->hi);
    } else {
        msgf(out, outlen, "must be %sin %c%g, %g%c", k->aux == F_AUTO ? "auto or " : "", k->lo_open ? '(' : '[',
             k->lo, k->hi, k->hi_open ? ')' : ']');
    }
}

static int in_range(const key_def *k, double v) {
    if (k->lo_open ? !(v > k->lo) : !(v >= k->lo)) return 0;
    if (k->hi_open ? !(v < k->hi) : !(v <= k->hi)) return 0;
    return 1;
}

static int name_char_ok(int c) {
    return isalnum(c) || c == '_' || c == '-' || c == '.' || c == '+' || c == '=' || c == ',';
}

/* Parse value for key k and store it in mf.  On failure writes the reason
 * ("not a number", "must be between 1 and 64", ...) into why and returns -1
 * (quote = 1 when the value should be shown in quotes). */
static int parse_value(gl_manifest *mf, const key_def *k, const char *value, char *why,
                       size_t whylen, int *quote) {
    char *base = (char *)mf + k->off;
    *quote = 1;
    switch (k->kind) {
    case K_INT: {
        long v;
        int prc = parse_long(value, LONG_MIN, LONG_MAX, &v, why, whylen); /* syntax: parse.c */
        *quote = prc == -1;
        if (prc == -1) return -1;
        if (prc == -2) return range_text(why, whylen, k), -1;
        if (v < INT_MIN || v > INT_MAX || !in_range(k, (double)v)) return range_text(why, whylen, k), -1;
        *(int *)base = (int)v;
        return 0;
    }
    case K_U64: {
        uint64_t v;
        int prc = parse_u64(value, &v, why, whylen);
        *quote = prc == -1;
        if (prc) return -1;
        *(uint64_t *)base = v;
        return 0;
    }
    case K_FLOAT: {
        float v;
        if (k->aux == F_AUTO && !strcmp(value, "auto")) return *(float *)base = NAN, 0;
        if (parse_float(value, &v, why, whylen)) {
            if (k->aux == F_AUTO) msgf(why, whylen, "not a number, nor auto");
            return -1;
        }
        *quote = 0;
        if (!in_range(k, (double)v)) return range_text(why, whylen, k), -1;
        *(float *)base = v;
        return 0;
    }
    case K_BOOL: {
        static const char *const yes[] = {"1", "true", "yes", "on"};
        static const char *const no[] = {"0", "false", "no", "off"};
        for (int i = 0; i < 4; i++) {
            if (ieq(value, yes[i])) return *(int *)base = 1, 0;
            if (ieq(value, no[i])) return *(int *)base = 0, 0;
        }
        return msgf(why, whylen, "not a boolean (use 1/0, true/false, yes/no or on/off)"), -1;
    }
    case K_ENUM: {
        int n = mf_enum_count(k->aux);
        for (int i = 0; i < n; i++)
            if (!strcmp(value, mf_enum_name(k->aux, i))) return mf_enum_store(mf, k->aux, i), 0;
        size_t used = (size_t)msgf(why, whylen, "must be one of");
        const char *names[64];
        for (int i = 0; i < n && used < whylen; i++)
            used += (size_t)msgf(why + used, whylen - used, "%s %s", i ? "," : "",
                                     mf_enum_name(k->aux, i));
        for (int i = 0; i < n && i < 64; i++) names[i] = mf_enum_name(k->aux, i);
        char hint[160];
        suggest(hint, sizeof hint, value, names, n < 64 ? n : 64);
        if (used < whylen) msgf(why + used, whylen - used, "%s", hint);
        return -1;
    }
    case K_STR:
    case K_SCALE: {
        size_t len = strlen(value);
        if (len >= k->size)
            return msgf(why, whylen, "too long (at most %zu bytes)", k->size - 1), -1;
        for (const char *p = value; *p; p++) {
            unsigned char c = (unsigned char)*p;
            if (c < 32 || c == 127)
                return msgf(why, whylen, "contains a control character"), -1;
            if (c == ';')
                return msgf(why, whylen, "contains ';', which starts an INI comment"), -1;
            if (k->kind == K_SCALE && !(isalnum(c) || c == '_' || c == '-'))
                return msgf(why, whylen, "a scale name is letters, digits, '_' and '-'"), -1;
            if (k->kind == K_STR && k->aux == S_NAME && !name_char_ok(c))
                return msgf(why, whylen,
                                "must be usable as a folder name: letters, digits and ._-+=, "
                                "only"),
                       -1;
        }
        if (k->kind == K_STR && k->aux == S_NAME && value[0] == '.')
            return msgf(why, whylen, "must not start with '.'"), -1;
        if (k->kind == K_STR && k->aux == S_NONEMPTY && len == 0)
            return msgf(why, whylen, "must not be empty"), -1;
        memset(base, 0, k->size); /* whole buffer, so equal configs compare equal */
        memcpy(base, value, len);
        return 0;
    }
    }
    return -1;
}

/* ------------------------------------------------------------- scales --- */

#define MAX_SCALES 64

typedef struct {
    char path[GL_PATH_MAX];
    int n;
    struct {
        char name[32];
        int v[5];
        int set[5];
        int line;
    } s[MAX_SCALES];
} scale_table;

/* Parse context: one per manifest_load / manifest_load_text / manifest_set. */
typedef struct {
    gl_manifest *mf;
    const char *origin;  /* file path, "command line", or the text's origin */
    int line;            /* current line, 0 when there are no lines */
    int in_file;         /* 1 while reading a file or text (duplicates are errors) */
    int track;           /* 1: remember explicit keys and resolve the scale at the end */
    int set_line[MF_N_KEYS]; /* file line where a key was set, 0 = not */
    int explicit_[MF_N_KEYS];
    int scale_line;      /* where model.scale was set */
    const char *scale_origin;
    char scale_origin_buf[GL_PATH_MAX];
    scale_table *scales; /* loaded on first need */
    int scales_tried;
    char *err;
    size_t errlen;
    int failed;
    int err_line;
} load_ctx;

static void ctx_error(load_ctx *c, const char *fmt, ...) {
    if (c->failed) return;
    char msg[1536];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (c->line > 0)
        msgf(c->err, c->errlen, "%s:%d: %s", c->origin, c->line, msg);
    else
        msgf(c->err, c->errlen, "%s: %s", c->origin, msg);
    c->failed = 1;
    c->err_line = c->line;
}

typedef struct {
    const char *p;  /* rest of the text */
    int line;       /* physical lines handed out so far */
    int long_line;  /* first line that did not fit inih's buffer, 0 = none */
    void *user;     /* the handler's own context */
    int (*handler)(void *, const char *, const char *, const char *);
} text_stream;

/* fgets-style reader for ini_parse_stream: exactly one physical line per
 * call, leading blanks stripped, too-long lines truncated and remembered. */
static char *stream_reader(char *str, int num, void *stream) {
    text_stream *ts = stream;
    if (!*ts->p) return NULL;
    const char *s = ts->p;
    const char *nl = strchr(s, '\n');
    size_t len = nl ? (size_t)(nl - s) + 1 : strlen(s);
    ts->p = s + len;
    ts->line++;
    while (len > 0 && (*s == ' ' || *s == '\t')) s++, len--;
    if (len + 1 > (size_t)num) {
        if (!ts->long_line) ts->long_line = ts->line;
        len = (size_t)num - 1;
    }
    memcpy(str, s, len);
    str[len] = '\0';
    return str;
}

static int stream_handler(void *user, const char *section, const char *name, const char *value) {
    text_stream *ts = user;
    return ts->handler(ts->user, section, name, value);
}

/* " (did you mean DIR/X.ini?)" into out for a manifest path that does not exist: the nearest *.ini
 * of its folder, or of experiments/ when it names none ("copy_tsa" finds experiments/copy_tsa.ini);
 * "" when none is near. */
static void near_manifest(const char *path, char *out, size_t n) {
    char dir[GL_PATH_MAX], want[256], names[64][256];
    const char *cands[64];
    int k = 0;
    out[0] = 0;
    const char *slash = strrchr(path, '/');
    if (slash) snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    else snprintf(dir, sizeof dir, "experiments");
    if (!dir[0]) snprintf(dir, sizeof dir, "/");
    snprintf(want, sizeof want, "%s", slash ? slash + 1 : path);
    size_t wl = strlen(want);
    if (wl > 4 && !strcmp(want + wl - 4, ".ini")) want[wl - 4] = 0;
    DIR *d = opendir(dir);
    if (!d) return;
    for (struct dirent *e; k < 64 && (e = readdir(d));) {
        size_t l = strlen(e->d_name);
        if (l <= 4 || l >= sizeof names[0] || strcmp(e->d_name + l - 4, ".ini")) continue;
        snprintf(names[k], sizeof names[k], "%.*s", (int)(l - 4), e->d_name);
        cands[k] = names[k];
        k++;
    }
    closedir(d);
    char hint[300];
    suggest(hint, sizeof hint, want, cands, k);
    if (!hint[0]) return;
    /* hint is " (did you mean NAME?)": give the path to type instead */
    char name[256];
    snprintf(name, sizeof name, "%s", hint + strlen(" (did you mean "));
    name[strlen(name) - 2] = 0;
    msgf(out, n, " (did you mean %s/%s.ini?)", dir, name);
}

static char *read_text_file(const char *path, char *err, size_t errlen, const char *what) {
    FILE *f;
    char *buf = NULL;
    if (fileio_open_regular(path, what, &f, err, errlen)) { /* no hang on a FIFO */
        size_t used = strlen(err);
        if (!strcmp(what, "manifest") && access(path, F_OK) != 0 && used < errlen)
            near_manifest(path, err + used, errlen - used);
        return NULL;
    }
    size_t cap = 4096, len = 0;
    buf = malloc(cap);
    while (buf) {
        size_t got = fread(buf + len, 1, cap - len - 1, f);
        len += got;
        if (got == 0) break;
        if (len + 1 == cap) {
            if (cap >= (1u << 24)) {
                msgf(err, errlen, "%s %s is larger than 16 MiB; is it the right file?", what,
                         path);
                free(buf);
                buf = NULL;
                goto cleanup;
            }
            char *q = realloc(buf, cap * 2);
            if (!q) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = q;
            cap *= 2;
        }
    }
    if (!buf) {
        msgf(err, errlen, "out of memory reading %s %s", what, path);
        goto cleanup;
    }
    if (ferror(f)) {
        msgf(err, errlen, "cannot read %s %s: %s", what, path, strerror(errno));
        free(buf);
        buf = NULL;
        goto cleanup;
    }
    buf[len] = '\0';
    if (strlen(buf) != len) {
        msgf(err, errlen, "%s %s contains a NUL byte; is it a text file?", what, path);
        free(buf);
        buf = NULL;
    }
cleanup:
    fclose(f);
    return buf;
}

/* The handler of scales.ini: [name] sections with the five size keys. */
typedef struct {
    scale_table *tab;
    int *line;
    char *err;
    size_t errlen;
    int failed;
} scales_parse;

static int scales_handler(void *user, const char *section, const char *name, const char *value) {
    scales_parse *sp = user;
    scale_table *tab = sp->tab;
    if (sp->failed) return 1;
    int line = *sp->line;
    int idx = -1;
    for (int i = 0; i < tab->n; i++)
        if (!strcmp(tab->s[i].name, section)) idx = i;
    if (idx < 0) {
        if (!*section || strlen(section) >= sizeof tab->s[0].name || tab->n == MAX_SCALES) {
            msgf(sp->err, sp->errlen, "%s:%d: key %s is outside a [scale] section (or the "
                     "section name is too long, or there are more than %d scales)",
                     tab->path, line, name, MAX_SCALES);
            sp->failed = 1;
            return 1;
        }
        idx = tab->n++;
        msgf(tab->s[idx].name, sizeof tab->s[idx].name, "%s", section);
        tab->s[idx].line = line;
    }
    int j = -1;
    for (int i = 0; i < 5; i++)
        if (!strcmp(name, scale_keys[i])) j = i;
    if (j < 0) {
        char hint[96];
        suggest(hint, sizeof hint, name, scale_keys, 5);
        msgf(sp->err, sp->errlen,
                 "%s:%d: [%s] unknown key %s%s; a scale sets d_model, n_layer, n_head, n_kv_head "
                 "and d_ff",
                 tab->path, line, section, name, hint);
        sp->failed = 1;
        return 1;
    }
    gl_manifest tmp;
    const key_def *k = &mf_keys[find_key("model", name)];
    char why[256];
    int quote;
    if (parse_value(&tmp, k, value, why, sizeof why, &quote)) {
        msgf(sp->err, sp->errlen, quote ? "%s:%d: [%s] %s = \"%s\": %s" : "%s:%d: [%s] %s = %s: %s",
                 tab->path, line, section, name, value, why);
        sp->failed = 1;
        return 1;
    }
    tab->s[idx].v[j] = *(const int *)((const char *)&tmp + k->off);
    tab->s[idx].set[j] = 1;
    return 1;
}

/* Find and read scales.ini: the manifest's folder, $GATELAB_ROOT/experiments,
 * ./experiments.  Returns 0; 1 when no file exists (where[] lists the places
 * looked); -1 on a malformed file (err). */
static int scales_load(scale_table *tab, const char *manifest_path, char *where, size_t wherelen,
                       char *err, size_t errlen) {
    char cand[3][GL_PATH_MAX];
    int nc = 0;
    if (manifest_path && *manifest_path) {
        const char *slash = strrchr(manifest_path, '/');
        if (slash)
            msgf(cand[nc++], GL_PATH_MAX, "%.*s/scales.ini", (int)(slash - manifest_path),
                     manifest_path);
        else
            msgf(cand[nc++], GL_PATH_MAX, "scales.ini");
    }
    const char *root = getenv("GATELAB_ROOT");
    if (root && *root) msgf(cand[nc++], GL_PATH_MAX, "%s/experiments/scales.ini", root);
    msgf(cand[nc++], GL_PATH_MAX, "experiments/scales.ini");

    memset(tab, 0, sizeof *tab);
    const char *found = NULL;
    for (int i = 0; i < nc && !found; i++) {
        FILE *f = fopen(cand[i], "rb");
        if (f) fclose(f), found = cand[i];
    }
    if (!found) {
        size_t used = 0;
        where[0] = '\0';
        for (int i = 0; i < nc && used < wherelen; i++)
            used += (size_t)msgf(where + used, wherelen - used, "%s%s", i ? ", " : "", cand[i]);
        return 1;
    }
    msgf(tab->path, sizeof tab->path, "%s", found);
    char *text = read_text_file(found, err, errlen, "scales file");
    if (!text) return -1;
    scales_parse sp = {tab, NULL, err, errlen, 0};
    text_stream ts = {text, 0, 0, &sp, scales_handler};
    sp.line = &ts.line;
    if (ini_max_line < 4096) ini_max_line = 4096;
    int rc = ini_parse_stream(stream_reader, &ts, stream_handler, &ts);
    free(text);
    if (sp.failed) return -1;
    if (rc != 0 || ts.long_line) {
        msgf(err, errlen, "%s:%d: cannot parse the line (expected [scale] or key = value)",
                 tab->path, rc > 0 ? rc : ts.long_line);
        return -1;
    }
    for (int i = 0; i < tab->n; i++)
        for (int j = 0; j < 5; j++)
            if (!tab->s[i].set[j]) {
                msgf(err, errlen, "%s:%d: scale [%s] does not set %s (a scale sets d_model, "
                         "n_layer, n_head, n_kv_head and d_ff)",
                         tab->path, tab->s[i].line, tab->s[i].name, scale_keys[j]);
                return -1;
            }
    return 0;
}

/* Load the scales table into the context once.  Returns 0, 1 (no file; where
 * filled), -1 (error already in ctx). */
static int ctx_scales(load_ctx *c, char *where, size_t wherelen) {
    if (!c->scales) {
        c->scales = calloc(1, sizeof *c->scales);
        if (!c->scales) return ctx_error(c, "out of memory reading the scales file"), -1;
    }
    char emsg[1024];
    int rc = scales_load(c->scales, c->mf->path, where, wherelen, emsg, sizeof emsg);
    if (rc < 0) {
        /* the scales file's own position is in emsg; keep the manifest origin too */
        int saved = c->line;
        c->line = 0;
        ctx_error(c, "while reading the scales: %s", emsg);
        c->line = saved;
        c->err_line = saved;
        return -1;
    }
    return rc;
}

static int scale_find(const scale_table *tab, const char *name) {
    for (int i = 0; i < tab->n; i++)
        if (!strcmp(tab->s[i].name, name)) return i;
    return -1;
}

static void scale_list(char *out, size_t outlen, const scale_table *tab) {
    size_t used = 0;
    out[0] = '\0';
    for (int i = 0; i < tab->n && used < outlen; i++)
        used += (size_t)msgf(out + used, outlen - used, "%s%s", i ? ", " : "", tab->s[i].name);
}

/* Apply the named scale to the five size keys that were not set explicitly
 * (all five when the context does not track explicit keys). */
static int apply_scale(load_ctx *c) {
    gl_manifest *mf = c->mf;
    if (!mf->scale[0]) return 0;
    int need = 0;
    for (int j = 0; j < 5; j++)
        if (!c->track || !c->explicit_[find_key("model", scale_keys[j])]) need = 1;
    /* Every size key explicit (a stored run config, say): the name is only a
     * label, and the run must reload even where scales.ini differs. */
    if (!need) return 0;
    char where[3 * GL_PATH_MAX + 8];
    int saved_line = c->line;
    const char *saved_origin = c->origin;
    c->line = c->scale_line;
    c->origin = c->scale_origin ? c->scale_origin : c->origin;
    int rc = ctx_scales(c, where, sizeof where);
    if (rc < 0) goto done;
    if (rc == 1) {
        ctx_error(c, "[model] scale = \"%s\": no scales file found (looked in %s); set "
                  "GATELAB_ROOT to the gatelab folder or put scales.ini next to the manifest",
                  mf->scale, where);
        goto done;
    }
    int i = scale_find(c->scales, mf->scale);
    if (i < 0) {
        char known[512];
        scale_list(known, sizeof known, c->scales);
        ctx_error(c, "[model] scale = \"%s\": unknown scale (%s has %s)", mf->scale,
                  c->scales->path, known);
        rc = -1;
        goto done;
    }
    int *dst[5] = {&mf->model.d_model, &mf->model.n_layer, &mf->model.n_head,
                   &mf->model.n_kv_head, &mf->model.d_ff};
    for (int j = 0; j < 5; j++)
        if (!c->track || !c->explicit_[find_key("model", scale_keys[j])])
            *dst[j] = c->scales->s[i].v[j];
    rc = 0;
done:
    c->line = saved_line;
    c->origin = saved_origin;
    return c->failed ? -1 : rc;
}

/* -------------------------------------------------------- key lookup --- */

/* Resolve "section.key", an alias, or a bare key that exactly one section
 * has.  Returns the key index, or -1 with ctx_error. */
static int resolve_key(load_ctx *c, const char *spec, const char *what) {
    const char *dot = strchr(spec, '.');
    char hint[128];
    if (dot) {
        char sec[64];
        size_t sl = (size_t)(dot - spec);
        if (sl >= sizeof sec) sl = sizeof sec - 1;
        memcpy(sec, spec, sl);
        sec[sl] = '\0';
        const char *name = dot + 1;
        int known_sec = 0;
        for (int s = 0; s < N_SECTIONS; s++) known_sec |= !strcmp(sections[s], sec);
        if (!known_sec) {
            suggest(hint, sizeof hint, sec, sections, N_SECTIONS);
            ctx_error(c, "%s %s: unknown section [%s]%s", what, spec, sec, hint);
            return -1;
        }
        int k = find_key(sec, name);
        if (k < 0) {
            const char *cands[N_KEYS];
            int n = 0;
            for (int i = 0; i < N_KEYS; i++)
                if (!strcmp(mf_keys[i].section, sec)) cands[n++] = mf_keys[i].name;
            suggest(hint, sizeof hint, name, cands, n);
            ctx_error(c, "%s %s: unknown key [%s] %s%s", what, spec, sec, name, hint);
        }
        return k;
    }
    for (size_t a = 0; a < sizeof aliases / sizeof aliases[0]; a++)
        if (!strcmp(spec, aliases[a].alias)) return find_key(aliases[a].section, aliases[a].name);
    int found = -1, count = 0;
    for (int i = 0; i < N_KEYS; i++)
        if (!strcmp(mf_keys[i].name, spec)) found = i, count++;
    if (count == 1) return found;
    if (count > 1) {
        ctx_error(c, "%s %s: ambiguous key; write it as section.key", what, spec);
        return -1;
    }
    const char *cands[N_KEYS + 8];
    int n = 0;
    for (int i = 0; i < N_KEYS; i++) cands[n++] = mf_keys[i].name;
    for (size_t a = 0; a < sizeof aliases / sizeof aliases[0]; a++) cands[n++] = aliases[a].alias;
    suggest(hint, sizeof hint, spec, cands, n);
    ctx_error(c, "%s %s: unknown key%s; write keys as section.key (e.g. train.lr)", what, spec,
              hint);
    return -1;
}

/* Set key k from value text, with the context's origin and line in errors. */
static int set_key(load_ctx *c, int k, const char *value) {
    const key_def *kd = &mf_keys[k];
    char why[512];
    int quote;
    if (c->in_file && c->set_line[k]) {
        ctx_error(c, "[%s] %s is set twice (first on line %d)", kd->section, kd->name,
                  c->set_line[k]);
        return -1;
    }
    if (parse_value(c->mf, kd, value, why, sizeof why, &quote)) {
        const char *more = strlen(value) > 80 ? "..." : "";
        if (quote)
            ctx_error(c, "[%s] %s = \"%.80s%s\": %s", kd->section, kd->name, value, more, why);
        else
            ctx_error(c, "[%s] %s = %.80s%s: %s", kd->section, kd->name, value, more, why);
        return -1;
    }
    if (c->in_file) c->set_line[k] = c->line > 0 ? c->line : 1;
    c->explicit_[k] = 1;
    if (kd->kind == K_SCALE) {
        c->scale_line = c->line;
        msgf(c->scale_origin_buf, sizeof c->scale_origin_buf, "%s", c->origin);
        c->scale_origin = c->scale_origin_buf;
        if (!c->track) return apply_scale(c);
    }
    return 0;
}

static void trim(char *s) {
    size_t n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1])) s[--n] = '\0';
    size_t i = 0;
    while (s[i] && isspace((unsigned char)s[i])) i++;
    if (i) memmove(s, s + i, n - i + 1);
}

/* [sweep] key = v1, v2, ...: every item must parse for the key. */
static int sweep_add(load_ctx *c, const char *name, const char *value) {
    gl_manifest *mf = c->mf;
    int k = resolve_key(c, name, "[sweep]");
    if (k < 0) return -1;
    const key_def *kd = &mf_keys[k];
    char canon[64];
    msgf(canon, sizeof canon, "%s.%s", kd->section, kd->name);
    if (!kd->sweep) {
        ctx_error(c, "[sweep] %s: [%s] keys cannot be swept", canon, kd->section);
        return -1;
    }
    for (int i = 0; i < mf->n_sweep; i++)
        if (!strcmp(mf->sweep[i].key, canon)) {
            ctx_error(c, "[sweep] %s is listed twice (first on line %d)", canon,
                      mf->sweep[i].line);
            return -1;
        }
    if (mf->n_sweep == GL_SWEEP_MAX_KEYS) {
        ctx_error(c, "[sweep] %s: more than %d sweep keys", canon, GL_SWEEP_MAX_KEYS);
        return -1;
    }
    char list[sizeof mf->sweep[0].values];
    if (strlen(value) >= sizeof list) {
        ctx_error(c, "[sweep] %s: the list is longer than %zu characters", canon, sizeof list - 1);
        return -1;
    }
    char why_list[256];
    if (sweepval_expand(value, 256, list, sizeof list, why_list, sizeof why_list)) { /* range(), choice() */
        ctx_error(c, "[sweep] %s: %s", canon, why_list);
        return -1;
    }
    trim(list);
    if (!list[0]) {
        ctx_error(c, "[sweep] %s: empty list; give the values separated by commas", canon);
        return -1;
    }
    gl_manifest *scratch = malloc(sizeof *scratch);
    if (!scratch) return ctx_error(c, "out of memory"), -1;
    int rc = -1, item = 0;
    char buf[sizeof list];
    msgf(buf, sizeof buf, "%s", list);
    char *p = buf;
    for (;;) {
        char *comma = strchr(p, ',');
        if (comma) *comma = '\0';
        trim(p);
        item++;
        if (!*p) {
            ctx_error(c, "[sweep] %s = %s: item %d is empty", canon, list, item);
            goto cleanup;
        }
        *scratch = *mf;
        char why[512];
        int quote;
        if (parse_value(scratch, kd, p, why, sizeof why, &quote)) {
            ctx_error(c, "[sweep] %s: item %d \"%s\": %s", canon, item, p, why);
            goto cleanup;
        }
        if (kd->kind == K_SCALE) {
            char where[3 * GL_PATH_MAX + 8], known[512];
            int sr = ctx_scales(c, where, sizeof where);
            if (sr < 0) goto cleanup;
            if (sr == 1) {
                ctx_error(c, "[sweep] %s: item %d \"%s\": no scales file found (looked in %s)",
                          canon, item, p, where);
                goto cleanup;
            }
            if (scale_find(c->scales, p) < 0) {
                scale_list(known, sizeof known, c->scales);
                ctx_error(c, "[sweep] %s: item %d \"%s\": unknown scale (%s has %s)", canon, item,
                          p, c->scales->path, known);
                goto cleanup;
            }
        }
        if (!comma) break;
        p = comma + 1;
    }
    gl_sweep_axis *ax = &mf->sweep[mf->n_sweep++];
    memset(ax, 0, sizeof *ax);
    msgf(ax->key, sizeof ax->key, "%s", canon);
    msgf(ax->values, sizeof ax->values, "%s", list);
    ax->line = c->line;
    rc = 0;
cleanup:
    free(scratch);
    return rc;
}

/* One name = value pair from a file or text. */
static int ctx_pair(load_ctx *c, const char *section, const char *name, const char *value) {
    if (!strcmp(section, "sweep")) return sweep_add(c, name, value);
    int known = 0;
    for (int s = 0; s < N_SECTIONS; s++) known |= !strcmp(sections[s], section);
    char hint[128];
    if (!known) {
        if (!*section)
            ctx_error(c, "%s = %s is outside any section; put it under [model], [data], [train], "
                      "[log] or [sweep]",
                      name, value);
        else {
            suggest(hint, sizeof hint, section, sections, 5);
            ctx_error(c, "unknown section [%s]%s", section, hint);
        }
        return -1;
    }
    int k = find_key(section, name);
    if (k < 0) {
        const char *cands[N_KEYS];
        int n = 0;
        for (int i = 0; i < N_KEYS; i++)
            if (!strcmp(mf_keys[i].section, section)) cands[n++] = mf_keys[i].name;
        suggest(hint, sizeof hint, name, cands, n);
        const char *elsewhere = NULL;
        for (int i = 0; i < N_KEYS; i++)
            if (!strcmp(mf_keys[i].name, name)) elsewhere = mf_keys[i].section;
        if (!hint[0] && elsewhere)
            msgf(hint, sizeof hint, " (it belongs in [%s])", elsewhere);
        ctx_error(c, "unknown key [%s] %s%s", section, name, hint);
        return -1;
    }
    return set_key(c, k, value);
}

typedef struct {
    load_ctx *c;
    text_stream *ts;
} file_glue;

static int file_handler(void *user, const char *section, const char *name, const char *value) {
    file_glue *g = user;
    if (g->c->failed) return 1;
    g->c->line = g->ts->line;
    ctx_pair(g->c, section, name, value);
    return 1; /* our errors are in ctx; a 0 would make inih count a syntax error */
}

/* Parse INI text into c->mf with c's origin (line numbers from 1). */
static int ctx_parse_text(load_ctx *c, const char *text) {
    file_glue g = {c, NULL};
    text_stream ts = {text, 0, 0, &g, file_handler};
    g.ts = &ts;
    if (ini_max_line < 4096) ini_max_line = 4096;
    c->in_file = 1;
    int rc = ini_parse_stream(stream_reader, &ts, stream_handler, &ts);
    c->in_file = 0;
    int bad = rc > 0 ? rc : 0;
    if (ts.long_line && (!bad || ts.long_line < bad)) bad = ts.long_line;
    if (bad && (!c->failed || bad <= c->err_line)) {
        c->failed = 0;
        c->line = bad;
        if (bad == ts.long_line)
            ctx_error(c, "line is longer than %d characters", ini_max_line - 3);
        else
            ctx_error(c, "cannot parse the line (expected [section], key = value, or a comment "
                      "starting with ; or #)");
    }
    c->line = 0;
    return c->failed ? -1 : 0;
}

/* One "section.key=value" (or alias=value) assignment. */
static int ctx_assign(load_ctx *c, const char *assignment) {
    const char *eq = strchr(assignment, '=');
    if (!eq) {
        ctx_error(c, "\"%s\": expected section.key=value (e.g. train.lr=3e-4)", assignment);
        return -1;
    }
    char key[128], value[GL_PATH_MAX + 64];
    size_t kl = (size_t)(eq - assignment);
    if (kl >= sizeof key || strlen(eq + 1) >= sizeof value) {
        ctx_error(c, "\"%.60s...\": too long", assignment);
        return -1;
    }
    memcpy(key, assignment, kl);
    key[kl] = '\0';
    msgf(value, sizeof value, "%s", eq + 1);
    trim(key);
    trim(value);
    if (!key[0]) {
        ctx_error(c, "\"%s\": missing key before '='; expected section.key=value", assignment);
        return -1;
    }
    if (!strncmp(key, "sweep.", 6)) return sweep_add(c, key + 6, value);
    int k = resolve_key(c, key, "");
    if (k < 0) return -1;
    return set_key(c, k, value);
}

/* Whole-config checks after everything is applied. */
static int ctx_finish(load_ctx *c) {
    gl_manifest *mf = c->mf;
    if (c->track && apply_scale(c)) return -1;
    c->line = 0;
    const char *origin = mf->path[0] ? mf->path : c->origin;
    char msg[1024];
    gl_model_config mc = mf->model;
    if (mc.vocab_size == 0) mc.vocab_size = 1; /* 0 = "from the data", resolved by the caller */
    if (config_validate(&mc, msg, sizeof msg)) {
        msgf(c->err, c->errlen, "%s: %s", origin, msg);
        return -1;
    }
    if (mf->data.task == TASK_TEXT) {
        double sum = (double)mf->data.train_frac + (double)mf->data.val_frac;
        if (sum > 1.0 + 1e-6) {
            char a[32], b[32];
            mf_format_float(a, sizeof a, mf->data.train_frac);
            mf_format_float(b, sizeof b, mf->data.val_frac);
            msgf(c->err, c->errlen,
                     "%s: data.train_frac (%s) + data.val_frac (%s) is more than 1", origin, a, b);
            return -1;
        }
    }
    if (mf->data.tokenizer != TOK_CHAR && mf->data.task != TASK_TEXT) {
        msgf(c->err, c->errlen, "%s: data.tokenizer = %s applies to data.task = text, not %s; remove the key",
             origin, task_tokenizer_name(mf->data.tokenizer), task_name(mf->data.task));
        return -1;
    }
    if (mf->data.tokenizer == TOK_BPE && mf->data.vocab_size < BPE_VOCAB_MIN) {
        msgf(c->err, c->errlen,
             "%s: data.vocab_size = %d with data.tokenizer = bpe: set it to %d..%d (the 256 bytes plus the "
             "merges to learn, e.g. 1024)",
             origin, mf->data.vocab_size, BPE_VOCAB_MIN, BPE_VOCAB_MAX);
        return -1;
    }
    if (mf->data.tokenizer != TOK_BPE && mf->data.vocab_size != 0) {
        msgf(c->err, c->errlen,
             "%s: data.vocab_size = %d applies to data.tokenizer = bpe; the %s tokenizer takes its vocabulary "
             "from the file: remove data.vocab_size or set data.tokenizer = bpe",
             origin, mf->data.vocab_size, task_tokenizer_name(mf->data.tokenizer));
        return -1;
    }
    if ((mf->data.train_len > 0) != (mf->data.val_len > 0)) {
        msgf(c->err, c->errlen, "%s: data.train_len (%d) and data.val_len (%d) go together: set both (the splits in "
             "tokens) or neither (the fractions)", origin, mf->data.train_len, mf->data.val_len);
        return -1;
    }
    if (mf->data.train_len > 0 && (mf->data.task != TASK_TEXT || mf->data.tokenizer == TOK_BPE)) {
        msgf(c->err, c->errlen, "%s: data.train_len and data.val_len apply to data.task = text with data.tokenizer = "
             "char or utf8 (a BPE split is cut in bytes before encoding: use the fractions)", origin);
        return -1;
    }
    if (mf->data.train_size > 0 && mf->data.train_size < mf->train.batch_size) {
        msgf(c->err, c->errlen,
             "%s: data.train_size (%d) is smaller than train.batch_size (%d): an epoch of the fixed training set "
             "must hold at least one batch; raise data.train_size or lower train.batch_size",
             origin, mf->data.train_size, mf->train.batch_size);
        return -1;
    }
    if (task_check(&mf->data, mf->model.seq_len, msg, sizeof msg)) {
        msgf(c->err, c->errlen, "%s: %s", origin, msg);
        return -1;
    }
    if (mf->data.task != TASK_TEXT && mf->model.vocab_size != 0 &&
        mf->model.vocab_size != task_vocab_size(&mf->data)) {
        msgf(c->err, c->errlen,
                 "%s: model.vocab_size (%d) does not match data.task = %s, which has %d ids; set "
                 "it to 0 (taken from the task)",
                 origin, mf->model.vocab_size, task_name(mf->data.task),
                 task_vocab_size(&mf->data));
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------ inert knobs --- */

/* A knob that acts only under one variant (docs/model.md; the tensors and
 * paths of model/variants.h): set under another it changes no weight and no
 * step, only the run's identity, so a sweep over it trains one model under
 * several ids.  active says whether c's variant reads the knob. */
typedef struct {
    const char *name;                         /* the [model] key */
    int (*active)(const gl_model_config *c);
    const char *needs;                        /* the variant, for the message */
} mf_inert_rule;

static int mf_on_sat(const gl_model_config *c) { return c->value_residual == VR_SATFORMER; }
static int mf_on_sat_bias(const gl_model_config *c) { return c->value_residual == VR_SATFORMER && c->sat_gate_bias; }
static int mf_on_rf(const gl_model_config *c) { return c->value_residual == VR_RESFORMER; }
static int mf_on_vr(const gl_model_config *c) { return c->value_residual != VR_NONE; }
static int mf_on_tsa(const gl_model_config *c) { return c->depth_routing == DR_TSA; }
static int mf_on_exit(const gl_model_config *c) { return c->depth_routing == DR_EARLY_EXIT; }
static int mf_on_mod(const gl_model_config *c) { return c->depth_routing == DR_MOD; }
static int mf_on_random(const gl_model_config *c) { return c->depth_routing == DR_RANDOM; }
static int mf_on_hyper(const gl_model_config *c) { return c->cross_layer == CL_HYPER; }

static const mf_inert_rule mf_inert_rules[] = {
    {"sat_gate", mf_on_sat, "model.value_residual = satformer"},
    {"sat_gate_bias", mf_on_sat, "model.value_residual = satformer"},
    {"sat_gate_bias_init", mf_on_sat_bias, "model.value_residual = satformer with model.sat_gate_bias = 1"},
    {"resformer_variant", mf_on_rf, "model.value_residual = resformer"},
    {"resformer_lambda1_init", mf_on_rf, "model.value_residual = resformer"},
    {"value_residual_last_k", mf_on_vr, "a model.value_residual other than none"},
    {"decay_gates", mf_on_vr, "a model.value_residual other than none (the gates it decays)"},
    {"router_hidden", mf_on_tsa, "model.depth_routing = tsa"},
    {"router_init_bias", mf_on_tsa, "model.depth_routing = tsa"},
    {"tsa_lambda", mf_on_tsa, "model.depth_routing = tsa"},
    {"exit_weighting", mf_on_exit, "model.depth_routing = early_exit"},
    {"mod_capacity", mf_on_mod, "model.depth_routing = mod"},
    {"mod_every", mf_on_mod, "model.depth_routing = mod"},
    {"random_alpha", mf_on_random, "model.depth_routing = random"},
    {"hc_expansion", mf_on_hyper, "model.cross_layer = hyper"},
};
#define MF_N_INERT (int)(sizeof mf_inert_rules / sizeof mf_inert_rules[0])

typedef struct {
    char text[MF_N_INERT][64];
    int at_default[MF_N_INERT];
} mf_knob_texts;

static int mf_knob_collect(const gl_key *k, void *ctx) {
    mf_knob_texts *t = ctx;
    if (strcmp(k->section, "model")) return 0;
    for (int i = 0; i < MF_N_INERT; i++)
        if (!strcmp(k->name, mf_inert_rules[i].name)) {
            snprintf(t->text[i], sizeof t->text[i], "%s", k->text);
            t->at_default[i] = k->at_default;
        }
    return 0;
}

/* The overrides (command line, plan arguments, sweep axes) may not set a
 * knob the run's variant does not read: refused when mf's value of such a
 * knob is not its default and not what the manifest file itself (base: mf
 * before the overrides) says.  A value the file sets stays accepted as it
 * always was (the paper's base manifests set tsa_lambda for every run they
 * make; refusing it would change no model and every run id of the plans). */
static int mf_inert_check(const gl_manifest *mf, const gl_manifest *base, const char *origin, char *err,
                          size_t errlen) {
    static mf_knob_texts now, was; /* one load at a time (manifest_load is not re-entered) */
    memset(&now, 0, sizeof now);
    memset(&was, 0, sizeof was);
    manifest_each_key(mf, mf_knob_collect, &now);
    manifest_each_key(base, mf_knob_collect, &was);
    for (int i = 0; i < MF_N_INERT; i++) {
        const mf_inert_rule *r = &mf_inert_rules[i];
        if (r->active(&mf->model) || now.at_default[i] || !strcmp(now.text[i], was.text[i])) continue;
        msgf(err, errlen, "%s: model.%s = %s has no effect without %s (this run has value_residual %s, "
             "depth_routing %s, cross_layer %s): it would change only the run's id; drop it or set the variant",
             origin, r->name, now.text[i], r->needs, config_value_residual_name(mf->model.value_residual),
             config_depth_routing_name(mf->model.depth_routing), config_cross_layer_name(mf->model.cross_layer));
        return -1;
    }
    return 0;
}

/* --------------------------------------------------------------- API --- */

void manifest_defaults(gl_manifest *mf) {
    memset(mf, 0, sizeof *mf);
    config_defaults(&mf->model);
    mf->model.vocab_size = 0; /* taken from the data set or task */

    gl_data_config *d = &mf->data;
    d->task = TASK_TEXT;
    msgf(d->file, sizeof d->file, "tinyshakespeare.txt");
    d->train_frac = 0.9f;
    d->val_frac = 0.1f;
    d->seq_items = 10;
    d->n_symbols = 16;
    d->mqar_pairs = 8;
    d->mqar_queries = 4;
    d->mqar_keys = 32;
    d->mqar_values = 32;

    gl_train_config *t = &mf->train;
    t->steps = 200;
    t->batch_size = 16;
    t->lr = 1e-3f;
    t->min_lr = 1e-4f;
    t->warmup = 20;
    t->weight_decay = 0.1f;
    t->weight_decay_policy = WD_MATRICES;
    t->beta1 = 0.9f;
    t->beta2 = 0.95f;
    t->eps = 1e-8f;
    t->grad_clip = 1.0f;
    t->seed = 1;
    t->threads = 0;
    t->eval_every = 50;
    t->eval_windows = 16;
    t->ckpt_every = 100;
    t->log_every = 10;
    t->eval_mode = EM_FIRST;
    t->eval_batches = 20;

    msgf(mf->log.results, sizeof mf->log.results, "results");
    mf->log.trace = 1;
    mf->log.probe_windows = 4;
}

static void ctx_init(load_ctx *c, gl_manifest *mf, const char *origin, char *err, size_t errlen) {
    memset(c, 0, sizeof *c);
    c->mf = mf;
    c->origin = origin;
    c->err = err;
    c->errlen = errlen;
    c->track = 1;
    if (errlen) err[0] = '\0';
}

int manifest_load(gl_manifest *mf, const char *path, int n_over, char *const *over, char *err,
                  size_t errlen) {
    load_ctx *c = malloc(sizeof *c);
    gl_manifest *base = NULL;
    char *text = NULL;
    int rc = -1;
    if (!c) {
        msgf(err, errlen, "out of memory loading manifest %s", path ? path : "(none)");
        return -1;
    }
    manifest_defaults(mf);
    ctx_init(c, mf, path && *path ? path : "command line", err, errlen);
    if (path && *path) {
        if (strlen(path) >= sizeof mf->path) {
            msgf(err, errlen, "manifest path %.80s... is too long", path);
            goto cleanup;
        }
        msgf(mf->path, sizeof mf->path, "%s", path);
        text = read_text_file(path, err, errlen, "manifest");
        if (!text) goto cleanup;
        if (ctx_parse_text(c, text)) goto cleanup;
    }
    if (n_over && !(base = malloc(sizeof *base))) {
        msgf(err, errlen, "out of memory loading manifest %s", path ? path : "(none)");
        goto cleanup;
    }
    if (base) *base = *mf; /* what the file says, before the overrides (mf_inert_check) */
    c->origin = "command line";
    for (int i = 0; i < n_over; i++) {
        c->line = 0;
        if (ctx_assign(c, over[i])) goto cleanup;
    }
    c->origin = mf->path[0] ? mf->path : "command line";
    if (ctx_finish(c)) goto cleanup;
    if (base && mf_inert_check(mf, base, "command line", err, errlen)) goto cleanup;
    rc = 0;
cleanup:
    if (c) free(c->scales);
    free(c);
    free(text);
    free(base);
    return rc;
}

int manifest_load_text(gl_manifest *mf, const char *text, const char *origin, char *err,
                       size_t errlen) {
    load_ctx *c = malloc(sizeof *c);
    if (!c) {
        msgf(err, errlen, "out of memory loading %s", origin);
        return -1;
    }
    manifest_defaults(mf);
    ctx_init(c, mf, origin ? origin : "(text)", err, errlen);
    int rc = -1;
    if (ctx_parse_text(c, text ? text : "")) goto cleanup;
    if (ctx_finish(c)) goto cleanup;
    rc = 0;
cleanup:
    free(c->scales);
    free(c);
    return rc;
}

int manifest_set(gl_manifest *mf, const char *assignment, const char *origin, int line, char *err,
                 size_t errlen) {
    load_ctx *c = malloc(sizeof *c);
    if (!c) {
        msgf(err, errlen, "out of memory");
        return -1;
    }
    ctx_init(c, mf, origin ? origin : "command line", err, errlen);
    c->track = 0; /* a lone model.scale sets all five size keys */
    c->line = line;
    int rc = ctx_assign(c, assignment);
    free(c->scales);
    free(c);
    return rc;
}

int manifest_parse_key(const char *key, const char *value, const char *origin, gl_key_value *out, char *err,
                       size_t errlen) {
    gl_manifest *mf = malloc(sizeof *mf);
    size_t n = strlen(key) + strlen(value) + 2;
    char *assignment = malloc(n);
    int rc = -1;
    if (!mf || !assignment) {
        msgf(err, errlen, "out of memory reading %s", key);
        goto cleanup;
    }
    manifest_defaults(mf);
    snprintf(assignment, n, "%s=%s", key, value);
    if (manifest_set(mf, assignment, origin, 0, err, errlen)) goto cleanup;
    rc = manifest_key_get(mf, key, out);
    if (rc) msgf(err, errlen, "%s: %s is not a key of the manifest (docs/manifest.md)", origin, key);
cleanup:
    free(assignment);
    free(mf);
    return rc;
}

static void write_section(strbuf *sb, const gl_manifest *mf, const char *section) {
    char val[GL_PATH_MAX + 64];
    sb_printf(sb, "[%s]\n", section);
    for (int i = 0; i < N_KEYS; i++) {
        if (strcmp(mf_keys[i].section, section)) continue;
        mf_format_value(val, sizeof val, mf, &mf_keys[i]);
        sb_printf(sb, "%s =%s%s\n", mf_keys[i].name, val[0] ? " " : "", val);
    }
}

/* The identity lines of one section (or of every section, section NULL), from the typed walk: the
 * canonical text less the late keys that hold their default (manifest_identity_text's rule).  The
 * model section's is what the model hash covers, so a checkpoint written before a late key existed
 * still loads. */
typedef struct {
    strbuf *sb;
    const char *only, *at; /* the section wanted (NULL: all); the one written last */
} identity_ctx;

static int identity_line(const gl_key *key, void *ctx) {
    identity_ctx *c = ctx;
    if (c->only && strcmp(c->only, key->section)) return 0;
    if (!c->at || strcmp(c->at, key->section)) {
        sb_printf(c->sb, "%s[%s]\n", c->at ? "\n" : "", key->section);
        c->at = key->section;
    }
    if (!(key->late && key->at_default)) sb_printf(c->sb, "%s =%s%s\n", key->name, key->text[0] ? " " : "", key->text);
    return 0;
}

static void write_identity(strbuf *sb, const gl_manifest *mf, const char *section) {
    identity_ctx c = {sb, section, NULL};
    manifest_each_key(mf, identity_line, &c);
}

char *manifest_to_ini(const gl_manifest *mf) {
    strbuf sb = {0};
    for (int s = 0; s < N_SECTIONS; s++) {
        if (s) sb_printf(&sb, "\n");
        write_section(&sb, mf, sections[s]);
    }
    if (sb.oom) {
        free(sb.p);
        return NULL;
    }
    return sb.p;
}

char *manifest_identity_text(const char *config_ini) {
    gl_manifest *mf = malloc(sizeof *mf);
    char err[512];
    if (!mf) return NULL;
    strbuf sb = {0};
    if (manifest_load_text(mf, config_ini, "a stored config", err, sizeof err)) {
        sb_printf(&sb, "%s", config_ini); /* not a config this gatelab reads: the text itself */
    } else {
        write_identity(&sb, mf, NULL);
    }
    free(mf);
    if (sb.oom) {
        free(sb.p);
        return NULL;
    }
    return sb.p ? sb.p : strdup("");
}

uint64_t manifest_model_hash(const gl_manifest *mf) {
    strbuf sb = {0};
    write_identity(&sb, mf, "model"); /* late keys at their default left out, as in the identity */
    uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a 64 offset basis */
    if (!sb.oom)
        for (size_t i = 0; i < sb.len; i++) {
            h ^= (unsigned char)sb.p[i];
            h *= 0x100000001b3ULL; /* FNV prime */
        }
    free(sb.p);
    return h;
}
