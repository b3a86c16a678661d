/*
 * test_claims_file.c — the claims file read through inih (store/initext.c,
 * analysis/paper/claims_file.c): the rules inih alone does not keep (a line
 * number on every refusal, a key twice, an empty or repeated section, ';'
 * inside a value, an indented line that is no continuation, over-long lines)
 * hold, and the inih options a claims file needs are put back for the
 * manifest reader.  One line per check; exits non-zero on any failure.
 */
#include <ini.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/paper/claims.h"
#include "store/initext.h"

static int fails, checks;

static void ok(const char *what, int cond, const char *got) {
    printf("%s %-60s %s\n", cond ? "ok  " : "FAIL", what, got ? got : "");
    fails += !cond;
    checks++;
}

/* One row A that passes every check. */
#define ROW_A "[A]\nclaim = 1\npaper = p\nquantity = value\nmetric = m\n"

/* claims_parse of text: refused with exactly want (FILE:LINE: message). */
static void refused(const char *what, const char *text, const char *want) {
    claims_file cf;
    char err[1024] = "";
    const int rc = claims_parse(text, "c.ini", &cf, err, sizeof err);
    if (!rc) claims_free(&cf);
    ok(what, rc == -1 && !strcmp(err, want), err);
}

/* claims_parse of text succeeds; *cf filled (the caller frees). */
static int parsed(const char *text, claims_file *cf) {
    char err[1024] = "";
    const int rc = claims_parse(text, "c.ini", cf, err, sizeof err);
    if (rc) printf("     refused: %s\n", err);
    return rc == 0;
}

typedef struct {
    int n, lines[8];
    char keys[8][32];
} seen_keys;

static int note_key(void *user, const char *section, const char *key, const char *value, int line) {
    (void)value;
    seen_keys *s = user;
    if (s->n < 8) snprintf(s->keys[s->n], sizeof s->keys[0], "%s.%s", section, key), s->lines[s->n++] = line;
    return 0;
}

int main(void) {
    claims_file cf;
    /* refusals name the file and the line, as the hand-written reader did */
    refused("a key twice names both lines", ROW_A "# a comment\nmetric = n\n",
            "c.ini:7: key 'metric' given twice in this section (first on line 5): keep one");
    refused("a row id twice", ROW_A "[A]\n", "c.ini:6: row [A] twice");
    refused("text after a section's ]", ROW_A "[B] junk\n", "c.ini:6: a section line is [name] with nothing after it");
    refused("a section never closed", "[A\n", "c.ini:1: a section line is [name] with nothing after it");
    refused("a key before any section", "claim = 1\n" ROW_A, "c.ini:1: key 'claim' before any [section]");
    refused("a line without =", ROW_A "note\n", "c.ini:6: expected key = value or [section]");
    refused("key: value is not INI here", ROW_A "note: x\n", "c.ini:6: expected key = value or [section]");
    refused("a byte-order mark is not skipped", "\xEF\xBB\xBF" ROW_A, "c.ini:1: expected key = value or [section]");
    refused("an empty row id", ROW_A "[]\n", "c.ini:6: a row id is 1..31 bytes");
    refused("an unknown key", ROW_A "colour = red\n", "c.ini:6: unknown key 'colour'");
    refused("the last row's check names no line", "[A]\nclaim = 1\n", "c.ini: row [A] has no paper = (what the paper says)");
    char *big = malloc(8192);
    snprintf(big, 8192, "%s", ROW_A "note = ");
    size_t l = strlen(big);
    memset(big + l, 'x', 4096 - 7);
    snprintf(big + l + 4096 - 7, 16, "\n"); /* "note = " and 4089 bytes: 4096 on the line */
    refused("a line over 4095 bytes", big, "c.ini:6: line longer than 4095 bytes");
    free(big);

    /* what reads: ';' in a value is text, an indented key is a key, CRLF, blanks and comments anywhere */
    if (parsed("# head\r\n\r\n[report]\r\ntitle = T ; with a semicolon\r\n[disclosure]\n[disclosure]\ntext = d\n"
               "[ A ]\n  claim = 1\n\tpaper = p ; q\nquantity = value\nmetric = m\n; tail\n",
               &cf)) {
        ok("title keeps ' ; with a semicolon'", !strcmp(cf.title, "T ; with a semicolon"), cf.title);
        ok("paper keeps '; q'", !strcmp(cf.rows[0].paper, "p ; q"), cf.rows[0].paper);
        ok("an indented key is a key, not a continuation", !strcmp(cf.rows[0].claim, "1"), cf.rows[0].claim);
        ok("[ A ] is row A", cf.n == 1 && !strcmp(cf.rows[0].id, "A"), cf.rows[0].id);
        ok("an empty [disclosure] still counts (2)", cf.n_disclosures == 2, NULL);
        claims_free(&cf);
    } else {
        ok("the mixed file parses", 0, NULL);
    }

    /* the base data set comes from the rows that pick scale=@base / @top, its title from [report] */
    if (parsed("[report]\ndata_title = Enwik 8\n" ROW_A "[B]\nclaim = 2\npaper = p\nquantity = value\nmetric = m\n"
               "runs = data=enwik8 scale=@base\n",
               &cf)) {
        char data[64];
        claims_base_data(&cf, data, sizeof data);
        ok("base data = enwik8 (row B's data=)", !strcmp(data, "enwik8"), data);
        ok("data_title = Enwik 8", !strcmp(cf.data_title, "Enwik 8"), cf.data_title);
        claims_free(&cf);
    } else {
        ok("a file with a @base row parses", 0, NULL);
    }
    if (parsed(ROW_A, &cf)) {
        char data[64] = "x";
        claims_base_data(&cf, data, sizeof data);
        ok("no @base row: no base data set", !data[0], data);
        claims_free(&cf);
    }
    refused("scale=@base without data=", ROW_A "runs = scale=@base depth_routing=tsa\n",
            "c.ini: row [A]: scale=@base or @top needs data=NAME in runs (one data set, whose base scale it means)");
    refused("scale=@top with a data pattern", ROW_A "runs = data=enwik8* scale=@top\n",
            "c.ini: row [A]: scale=@base or @top needs data=NAME in runs (one data set, whose base scale it means)");

    /* the inih options claims_parse sets are the caller's again (the manifest reader relies on them) */
    ok("ini_allow_inline_comments back", ini_allow_inline_comments, NULL);
    ok("ini_allow_multiline back", ini_allow_multiline, NULL);
    ok("ini_allow_bom back", ini_allow_bom, NULL);
    ok("ini_stop_on_first_error back", !ini_stop_on_first_error, NULL);

    /* initext itself: the physical line of each key, with comments, blanks and a CRLF between */
    seen_keys s = {0};
    int line = -1;
    const initext_spec spec = {note_key, NULL, &s, 100, 1};
    const initext_why why = initext_parse("[model]\nd_model = 64 ; inline\n\n; c\r\n[train]\r\nsteps = 10\n", &spec, &line);
    char got[160];
    snprintf(got, sizeof got, "%s@%d %s@%d", s.keys[0], s.lines[0], s.n > 1 ? s.keys[1] : "-", s.n > 1 ? s.lines[1] : 0);
    ok("keys model.d_model@2 train.steps@6", why == INITEXT_OK && s.n == 2 && !strcmp(got, "model.d_model@2 train.steps@6"),
       got);
    s.n = 0;
    ok("a line longer than max_line stops at it", initext_parse("[a]\nk = v\nk2 = 0123456789\n", &(initext_spec){note_key, NULL, &s, 12, 1}, &line) == INITEXT_LONG && line == 3 && s.n == 1, NULL);

    printf("%s: %d failure%s\n", fails ? "FAIL" : "ok", fails, fails == 1 ? "" : "s");
    if (fails) printf("[  FAILED  ] %d check(s), listed above.\n", fails);
    else printf("[  PASSED  ] %d check(s).\n", checks);
    return fails ? 1 : 0;
}
