/*
 * initext.c — INI text through inih with line numbers and section events
 * (initext.h).  A reader hands inih one physical line per call, as
 * ini_parse_stream's fgets-style reader: it counts the line, strips leading
 * blanks, refuses a line too long, a malformed section line or a line that is
 * neither a section, a comment nor key = value, and reports each [section]
 * line itself; inih then splits, trims and calls the key handler, which
 * forwards the key with the reader's line and section.
 */
#include "initext.h"

#include <ini.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const initext_spec *spec;
    const char *p;    /* the rest of the text */
    int line;         /* physical lines handed out so far */
    initext_why why;  /* set when the parse must stop */
    char *section;    /* the last [section]'s name, trimmed */
} it_state;

static int it_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

/* Check the trimmed line s[0..len) that is not blank: a section, a comment or key = value.  A section's
 * name goes to st->section and on_section.  Returns 0, or -1 with st->why. */
static int it_check(it_state *st, const char *s, size_t len) {
    if (s[0] == ';' || s[0] == '#') return 0;
    if (s[0] == '[') {
        const char *r = memchr(s, ']', len);
        if (!r || (size_t)(r - s) != len - 1) return st->why = INITEXT_SECTION, -1;
        const char *a = s + 1, *b = r;
        while (a < b && it_blank(*a)) a++;
        while (b > a && it_blank(b[-1])) b--;
        memcpy(st->section, a, (size_t)(b - a));
        st->section[b - a] = 0;
        if (st->spec->on_section && st->spec->on_section(st->spec->user, st->section, st->line))
            return st->why = INITEXT_STOPPED, -1;
        return 0;
    }
    const size_t sep = strcspn(s, "=:"); /* inih splits at the first '=' or ':'; a key never holds ':' */
    if (sep >= len || s[sep] != '=') return st->why = INITEXT_SYNTAX, -1;
    return 0;
}

/* ini_parse_stream's reader: one physical line per call, leading blanks stripped; NULL at the end of
 * the text or once the parse must stop. */
static char *it_reader(char *str, int num, void *stream) {
    it_state *st = stream;
    if (st->why != INITEXT_OK || !*st->p) return NULL;
    const char *s = st->p, *nl = strchr(s, '\n');
    size_t len = nl ? (size_t)(nl - s) : strlen(s);
    st->p = s + len + (nl ? 1 : 0);
    st->line++;
    if (len > (size_t)st->spec->max_line) {
        st->why = INITEXT_LONG;
        return NULL;
    }
    while (len > 0 && (*s == ' ' || *s == '\t')) s++, len--;
    size_t t = len;
    while (t > 0 && it_blank(s[t - 1])) t--;
    if (t > 0 && it_check(st, s, t)) return NULL;
    if (len + 1 > (size_t)num) len = (size_t)num - 1; /* cannot happen: ini_max_line > max_line */
    memcpy(str, s, len);
    str[len] = 0;
    return str;
}

static int it_handler(void *user, const char *section, const char *name, const char *value) {
    (void)section; /* inih's is untrimmed; the reader keeps the trimmed one */
    it_state *st = user;
    if (st->why == INITEXT_OK && st->spec->on_key(st->spec->user, st->section, name, value, st->line))
        st->why = INITEXT_STOPPED;
    return 1;
}

initext_why initext_parse(const char *text, const initext_spec *spec, int *line) {
    *line = 0;
    it_state st = {spec, text, 0, INITEXT_OK, malloc((size_t)spec->max_line + 1)};
    if (!st.section) return INITEXT_NOMEM;
    st.section[0] = 0;
    /* inih's options are globals: set ours, put the caller's back */
    const bool inl = ini_allow_inline_comments, multi = ini_allow_multiline, bom = ini_allow_bom,
               stop = ini_stop_on_first_error;
    const int maxl = ini_max_line;
    ini_allow_inline_comments = spec->inline_comments != 0;
    ini_allow_multiline = false;
    ini_allow_bom = false; /* a BOM is refused as the hand-written readers did, not skipped on line 1 only */
    ini_stop_on_first_error = true;
    ini_max_line = spec->max_line + 3; /* the line, '\n' (none: the reader drops it) and NUL, with room */
    const int rc = ini_parse_stream(it_reader, &st, it_handler, &st);
    ini_allow_inline_comments = inl, ini_allow_multiline = multi, ini_allow_bom = bom;
    ini_stop_on_first_error = stop, ini_max_line = maxl;
    free(st.section);
    if (st.why == INITEXT_OK && rc != 0) st.why = rc < 0 ? INITEXT_NOMEM : INITEXT_SYNTAX;
    *line = st.why == INITEXT_NOMEM ? 0 : st.line;
    return st.why;
}
