/*
 * test_cli.c — the command-line pieces every command shares (harness/cli/args.c,
 * jsonl.c), checked in-process: getopt_long tables read as documented (order of
 * positionals, --flag=value, "--", refused abbreviations, a second parse in the
 * same process), numbers named by their flag, --heads in both spellings, and
 * JSON values that a strict reader accepts (null for NaN, integers for counts,
 * U+FFFD for bytes that are not UTF-8), the edit distance behind every
 * "did you mean", choices in any case, and the run resolver (cli/resolve.c)
 * on run folders without a registry: exact id, unique prefix, ambiguous,
 * unknown with a near miss, a folder path and its results folder.  The
 * binary's behaviour end to end is tests/integration/badargs.sh, json.sh and
 * resolve.sh (with registries).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/stat.h>

#include <cmocka.h>

#include "cli/args.h"
#include "cli/jsonl.h"
#include "cli/resolve.h"
#include "store/editdist.h"
#include "tmpdir.h"

static const args_opt opts[] = {
    {"windows", ARGS_KEY(0), "N", "windows"},
    {"taus", ARGS_KEY(1), "T,...", "thresholds"},
    {"tau", ARGS_KEY(2), "T", "threshold"},
    {"sparse", ARGS_KEY(3), NULL, "switch"},
    {"jobs", 'j', "N", "jobs"},
    {0}};
static const args_spec spec = {"testcmd", "RUN [options]", NULL, opts};

/* Parse a NULL-terminated argument list; record keys and values into out ("key=value;" …).
 * Returns the last args_next result (ARGS_END, or < 0). */
static int run_parse(char *out, size_t n, ...) {
    char *argv[32];
    int argc = 0;
    va_list ap;
    va_start(ap, n);
    for (char *a = va_arg(ap, char *); a && argc < 31; a = va_arg(ap, char *)) argv[argc++] = a;
    va_end(ap);
    argv[argc] = NULL;
    args_parser p;
    args_begin(&p, &spec, argc, argv);
    out[0] = '\0';
    int k;
    while ((k = args_next(&p)) > 0) {
        size_t used = strlen(out);
        snprintf(out + used, n - used, "%d:%s=%s;", k, p.flag, p.val ? p.val : "");
    }
    return k;
}

static void test_order_and_forms(void **state) {
    (void)state;
    char got[512];
    assert_int_equal(run_parse(got, sizeof got, "testcmd", "a", "--windows", "4", "b=1", "--tau=0.5", "-j3", "--sparse",
                               "--", "--windows", NULL),
                     ARGS_END);
    /* positionals keep their order, also after "--"; --x=v and -jN give the value; the flag as typed */
    assert_string_equal(got, "1:=a;256:--windows=4;1:=b=1;258:--tau=0.5;106:-j=3;259:--sparse=;1:=--windows;");
    printf("order, --flag=value, -jN, --: %s\n", got);
    /* a second command in the same process starts afresh (getopt's state is reset) */
    assert_int_equal(run_parse(got, sizeof got, "testcmd", "--jobs", "2", "x", NULL), ARGS_END);
    assert_string_equal(got, "106:--jobs=2;1:=x;");
}

static void test_refusals(void **state) {
    (void)state;
    char got[512];
    /* a unique prefix getopt_long would accept, an unknown flag, a missing value, a short one */
    assert_int_equal(run_parse(got, sizeof got, "testcmd", "--win", "4", NULL), ARGS_BAD);
    assert_int_equal(run_parse(got, sizeof got, "testcmd", "--bogus", NULL), ARGS_BAD);
    assert_int_equal(run_parse(got, sizeof got, "testcmd", "a", "--windows", NULL), ARGS_BAD);
    assert_int_equal(run_parse(got, sizeof got, "testcmd", "-x", NULL), ARGS_BAD);
    assert_int_equal(run_parse(got, sizeof got, "testcmd", "--sparse=1", NULL), ARGS_BAD);
    /* exact names that are prefixes of others are fine: --tau is not --taus */
    assert_int_equal(run_parse(got, sizeof got, "testcmd", "--tau", "1", "--taus", "2", NULL), ARGS_END);
    assert_string_equal(got, "258:--tau=1;257:--taus=2;");
    assert_int_equal(args_exit_code(ARGS_BAD), 2);
    assert_int_equal(args_exit_code(ARGS_HELP), 0);
}

static void test_numbers(void **state) {
    (void)state;
    char *argv[] = {"testcmd", "--windows", "12", NULL};
    args_parser p;
    args_begin(&p, &spec, 3, argv);
    long w = -1;
    assert_int_equal(args_next(&p), ARGS_KEY(0));
    assert_int_equal(args_get_long(&p, 1, 100, &w), 0);
    assert_int_equal(w, 12);
    assert_int_equal(args_get_long(&p, 1, 10, &w), -1); /* out of range: refused, unchanged */
    assert_int_equal(w, 12);
    int idx = -1;
    p.val = "csv";
    assert_int_equal(args_get_choice(&p, "table,csv,json", &idx), 0);
    assert_int_equal(idx, 1);
    p.val = "xml";
    assert_int_equal(args_get_choice(&p, "table,csv,json", &idx), -1);
}

static void test_heads(void **state) {
    (void)state;
    char out[128], err[256];
    assert_int_equal(args_heads("--heads", "L2H0,3:1,l10h7", out, sizeof out, err, sizeof err), 0);
    assert_string_equal(out, "2:0,3:1,10:7");
    const char *bad[] = {"L2", "2:", "LxH1", "2:1,", "H2L1", "L-1H0", "2:0x1", ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(args_heads("--heads", bad[i], out, sizeof out, err, sizeof err), -1);
        assert_non_null(strstr(err, "--heads"));
        printf("--heads '%s' refused: %s\n", bad[i], err);
    }
}

static void test_edit_distance(void **state) {
    (void)state;
    /* insert, delete, substitute, and a swap of neighbours each count 1; case counts only when asked
     * (the command line folds it, the manifest's keys do not) */
    assert_int_equal(editdist("train", "train", 1), 0);
    assert_int_equal(editdist("trian", "train", 1), 1);
    assert_int_equal(editdist("experment", "experiment", 1), 1);
    assert_int_equal(editdist("JSON", "json", 1), 0);
    assert_int_equal(editdist("JSON", "json", 0), 4);
    assert_int_equal(editdist("Trian", "train", 0), 2);
    assert_int_equal(editdist("", "abc", 1), 3);
    assert_int_equal(editdist("kitten", "sitting", 0), 3);
    assert_int_equal(editdist("ca", "abc", 0), 3); /* optimal string alignment: no edit of a swapped pair */
    char longw[EDITDIST_MAX + 1];
    memset(longw, 'a', EDITDIST_MAX);
    longw[EDITDIST_MAX] = 0;
    assert_int_equal(editdist(longw, "a", 1), EDITDIST_FAR);
    longw[EDITDIST_MAX - 1] = 0; /* 63 bytes: still measured */
    assert_int_equal(editdist(longw, "", 1), EDITDIST_MAX - 1);
    const char *cmds[] = {"train", "eval", "sample", "tables", "tag", "runs", "report"};
    assert_string_equal(args_suggest("trian", cmds, 7), "train");
    assert_string_equal(args_suggest("tabels", cmds, 7), "tables");
    assert_string_equal(args_suggest("rnus", cmds, 7), "runs");
    assert_null(args_suggest("bogus", cmds, 7));   /* nothing near */
    assert_null(args_suggest("tg", cmds, 7));      /* 1 edit of 2 letters: too little left of the word */
    const char *tie[] = {"cat", "car"};
    assert_null(args_suggest("caz", tie, 2));      /* two names equally near: no guess */
    printf("trian -> %s, tabels -> %s, bogus -> none\n", args_suggest("trian", cmds, 7), args_suggest("tabels", cmds, 7));
}

static void test_choice_any_case(void **state) {
    (void)state;
    char *argv[] = {"testcmd", NULL};
    args_parser p;
    args_begin(&p, &spec, 1, argv);
    int idx = -1;
    p.val = "JSON";
    assert_int_equal(args_get_choice(&p, "table,csv,json", &idx), 0);
    assert_int_equal(idx, 2);
    p.val = "Finished";
    assert_int_equal(args_get_choice(&p, "SCHEDULED,RUNNING,FINISHED,FAILED,KILLED", &idx), 0);
    assert_int_equal(idx, 2);
    p.val = "jsno"; /* refused (with "did you mean json?" on stderr) */
    assert_int_equal(args_get_choice(&p, "table,csv,json", &idx), -1);
    assert_int_equal(idx, 2);
    /* an unknown long flag near one of the table's is still refused (the hint is only a hint) */
    char got[256];
    assert_int_equal(run_parse(got, sizeof got, "testcmd", "--windws", "4", NULL), ARGS_BAD);
}

/* g_dir/results/runs/<name>/config.ini */
/* The line of `gatelab --help` is written out from the flag table: every flag, in order, with its
 * short form and value; "[options]" replaced in place; a flag the synopsis names is not repeated. */
static void test_usage_line(void **state) {
    (void)state;
    char buf[1024] = "";
    FILE *f = fmemopen(buf, sizeof buf - 1, "w");
    assert_non_null(f);
    args_print_line(&spec, f);
    const args_spec named = {"two", "RUN --windows N [options] | --other", NULL, opts};
    args_print_line(&named, f);
    const args_spec none = {"three", "RUN", NULL, opts + 3};
    args_print_line(&none, f);
    const args_spec prefix = {"four", "--tau T [options]", NULL, opts + 1}; /* --tau named, --taus not */
    args_print_line(&prefix, f);
    fclose(f);
    assert_string_equal(buf, "  gatelab testcmd RUN [--windows N] [--taus T,...] [--tau T] [--sparse] [-j|--jobs N]\n"
                             "  gatelab two RUN --windows N [--taus T,...] [--tau T] [--sparse] [-j|--jobs N] | --other\n"
                             "  gatelab three RUN [--sparse] [-j|--jobs N]\n"
                             "  gatelab four --tau T [--taus T,...] [--sparse] [-j|--jobs N]\n");
}

/* --format csv fields: as they are, or quoted with "" when they hold a comma, quote or line break. */
static void test_csv_field(void **state) {
    (void)state;
    char buf[256] = "";
    FILE *f = fmemopen(buf, sizeof buf - 1, "w");
    assert_non_null(f);
    const char *in[] = {"plain", "a,b", "say \"hi\"", "two\nlines", "", NULL};
    for (int i = 0; i < 6; i++) jsonl_csv_field(f, in[i]), fputc('|', f);
    fclose(f);
    assert_string_equal(buf, "plain|\"a,b\"|\"say \"\"hi\"\"\"|\"two\nlines\"|||");
}

static void make_run_dir(const char *name) {
    char p[512];
    snprintf(p, sizeof p, "%s/results", g_dir);
    mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/results/runs", g_dir);
    mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/results/runs/%s", g_dir, name);
    assert_int_equal(mkdir(p, 0755), 0);
    snprintf(p, sizeof p, "%s/results/runs/%s/config.ini", g_dir, name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fclose(f);
}

static void test_resolve_folders(void **state) {
    (void)state;
    assert_int_equal(tmpdir_make("cli"), 0);
    make_run_dir("tsa-full");
    make_run_dir("tsa-killed");
    make_run_dir("plain");
    char res[300], err[2048], p[600];
    snprintf(res, sizeof res, "%s/results", g_dir);
    resolve_run r;
    /* an exact id, then a unique prefix: the folder and the registry of that results folder */
    assert_int_equal(resolve_run_arg("plain", NULL, res, RESOLVE_DIR, &r, err, sizeof err), 0);
    assert_string_equal(r.id, "plain");
    snprintf(p, sizeof p, "%s/runs/plain", res);
    assert_string_equal(r.dir, p);
    snprintf(p, sizeof p, "%s/gatelab.db", res);
    assert_string_equal(r.db, p);
    assert_int_equal(r.in_db, 0);
    assert_int_equal(resolve_run_arg("tsa-f", NULL, res, RESOLVE_DIR, &r, err, sizeof err), 0);
    assert_string_equal(r.id, "tsa-full");
    /* ambiguous: both candidates named */
    assert_int_equal(resolve_run_arg("tsa", NULL, res, RESOLVE_DIR, &r, err, sizeof err), -1);
    printf("ambiguous: %s\n", err);
    assert_non_null(strstr(err, "ambiguous"));
    assert_non_null(strstr(err, "tsa-full"));
    assert_non_null(strstr(err, "tsa-killed"));
    /* unknown, one typo away */
    assert_int_equal(resolve_run_arg("palin", NULL, res, RESOLVE_DIR, &r, err, sizeof err), -1);
    printf("unknown: %s\n", err);
    assert_non_null(strstr(err, "did you mean plain?"));
    /* a folder path: its name, and its results folder two up, whatever --results says */
    snprintf(p, sizeof p, "%s/runs/tsa-killed/", res);
    assert_int_equal(resolve_run_arg(p, NULL, "/nonexistent", RESOLVE_DIR, &r, err, sizeof err), 0);
    assert_string_equal(r.id, "tsa-killed");
    assert_string_equal(r.results, res);
    snprintf(p, sizeof p, "%s/gatelab.db", res);
    assert_string_equal(r.db, p);
    /* a registry row is asked for and there is no registry: said so */
    assert_int_equal(resolve_run_arg("plain", NULL, res, RESOLVE_DB, &r, err, sizeof err), -1);
    assert_non_null(strstr(err, "no registry"));
    snprintf(p, sizeof p, "%s/nope/x", g_dir);
    assert_int_equal(resolve_run_arg(p, NULL, res, RESOLVE_DIR, &r, err, sizeof err), -1);
    assert_non_null(strstr(err, "no such run folder"));
}

static char *dump(json_t *v) {
    char *s = jsonl_dumps(v);
    json_decref(v);
    return s;
}

static void test_json_values(void **state) {
    (void)state;
    json_t *o = json_object();
    jsonl_set(o, "nan", jsonl_num(NAN));
    jsonl_set(o, "inf", jsonl_num(-INFINITY));
    jsonl_set(o, "x", jsonl_num(0.5));
    jsonl_set(o, "one", jsonl_num(1.0));
    jsonl_set(o, "tokens", jsonl_count(4096.0));
    jsonl_set(o, "none", jsonl_count(NAN));
    jsonl_set(o, "s", jsonl_str("a\"b\\c\nd\x01"));
    jsonl_set(o, "bad", jsonl_str("x\xff\xc3(\xe2\x82\xac")); /* 0xff, a cut 2-byte sequence, then a real € */
    jsonl_set(o, "null", jsonl_str(NULL));
    char *s = dump(o);
    assert_non_null(s);
    printf("%s\n", s);
    assert_string_equal(s, "{\"nan\":null,\"inf\":null,\"x\":0.5,\"one\":1.0,\"tokens\":4096,\"none\":null,"
                           "\"s\":\"a\\\"b\\\\c\\nd\\u0001\",\"bad\":\"x\xef\xbf\xbd\xef\xbf\xbd(\xe2\x82\xac\","
                           "\"null\":null}");
    free(s);
    s = dump(jsonl_run("r1", "results/runs/r1"));
    assert_string_equal(s, "{\"run_id\":\"r1\",\"run_dir\":\"results/runs/r1\"}");
    free(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order_and_forms), cmocka_unit_test(test_refusals), cmocka_unit_test(test_numbers),
        cmocka_unit_test(test_heads),           cmocka_unit_test(test_json_values),
        cmocka_unit_test(test_edit_distance),   cmocka_unit_test(test_choice_any_case),
        cmocka_unit_test(test_usage_line),      cmocka_unit_test(test_csv_field),
        cmocka_unit_test_teardown(test_resolve_folders, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
