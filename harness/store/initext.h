/*
 * initext.h — INI text read through inih (Debian libinih-dev), with what the
 * packaged inih cannot give a caller: the physical line of every key and
 * section (the library is built without INI_HANDLER_LINENO, and a caller
 * cannot turn it on without breaking the handler's ABI), every [section] line
 * as it comes (inih reports only keys, so an empty or repeated section is
 * invisible to it), a refusal of over-long lines instead of a silent split,
 * and no continuation lines (leading blanks are stripped before inih sees a
 * line).  inih splits key = value, trims, and skips blank and comment lines
 * (';' or '#' first).
 *
 * Used for the claims file (analysis/paper/claims_file.c) and the resolved
 * config the ranks compare (harness/run/agree.c).  The manifest reader
 * (manifest.c) keeps its own line reader of the same design.
 *
 * Not thread-safe: inih's options are process globals; initext_parse sets the
 * ones it needs and puts them back before it returns.
 */
#ifndef GATELAB_HARNESS_INITEXT_H
#define GATELAB_HARNESS_INITEXT_H

/* Why initext_parse stopped. */
typedef enum {
    INITEXT_OK = 0,
    INITEXT_SYNTAX,  /* a line that is not [section], key = value, a comment or blank ("key: value" included) */
    INITEXT_SECTION, /* a line that opens with '[' but is not [name] with nothing after it */
    INITEXT_LONG,    /* a line longer than max_line bytes */
    INITEXT_STOPPED, /* a callback returned non-zero */
    INITEXT_NOMEM
} initext_why;

typedef struct {
    /* Every key = value line: key and value trimmed, section the name of the
     * last [section] line ("" before any), line its physical line (from 1).
     * Return 0 to go on, non-zero to stop the parse. */
    int (*on_key)(void *user, const char *section, const char *key, const char *value, int line);
    /* Every [name] line, name trimmed, before any key under it; NULL: none.
     * Return 0 to go on, non-zero to stop. */
    int (*on_section)(void *user, const char *name, int line);
    void *user;
    int max_line;        /* the longest line accepted, in bytes without its newline */
    int inline_comments; /* 1: " ;" ends a value (inih's default); 0: ';' inside a value is text */
} initext_spec;

/* Parse text (NUL-terminated) line by line.  Returns INITEXT_OK, or why it
 * stopped with *line the physical line it stopped at (0 for INITEXT_NOMEM). */
initext_why initext_parse(const char *text, const initext_spec *spec, int *line);

#endif
