/*
 * test_cli.c — the command-line pieces every command shares (harness/cli/args.c,
 * jsonl.c), checked in-process: getopt_long tables read as documented (order of
 * positionals, --flag=value, "--", refused abbreviations, a second parse in the
 * same process), numbers named by their flag, --heads in both spellings, and
 * JSON values that a strict reader accepts (null for NaN, integers for counts,
 * U+FFFD for bytes that are not UTF-8).  The binary's behaviour end to end is
 * tests/integration/badargs.sh and json.sh.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cli/args.h"
#include "cli/jsonl.h"

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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
