/*
 * test_categories.c — the token categories of harness/store/categories.c and the
 * function-word list experiments/function_words.txt.
 *
 * Checks: the list loads, covers every word of Snowball's English stop list
 * (function_words.txt, found like any data set by data_find: $GATELAB_DATA,
 * data/, ../shared/data; skipped with the reason when absent) plus the
 * modals; a constructed sentence gets the expected class at every byte;
 * malformed lists are refused with path:line.  Run from the repository root
 * (tests/run.sh does).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "store/categories.h"
#include "store/data.h"

#define OUR_LIST "experiments/function_words.txt"

static void test_list_covers_shared(void **state) {
    (void)state;
    char err[512] = "";
    cat_words ours, shared;
    int rc = cat_load_function_words(OUR_LIST, &ours, err, sizeof err);
    if (rc) print_message("load error: %s\n", err);
    assert_int_equal(rc, 0);
    char path[1024], why[2048];
    if (data_find("function_words.txt", path, sizeof path, why, sizeof why)) {
        cat_words_free(&ours);
        printf("SKIP test_list_covers_shared: Snowball's list is not here (%s)\n", why);
        fflush(stdout);
        skip();
    }
    rc = cat_load_function_words(path, &shared, err, sizeof err);
    if (rc) print_message("load error: %s\n", err);
    assert_int_equal(rc, 0);
    assert_int_equal(shared.n, 174); /* the Snowball list as documented in shared/data/README.md */

    size_t missing = 0;
    for (size_t i = 0; i < shared.n; i++) {
        if (!cat_is_function_word(&ours, shared.words[i], strlen(shared.words[i]))) {
            print_message("shared word missing from ours: %s\n", shared.words[i]);
            missing++;
        }
    }
    const char *added[] = {"will", "shall", "can", "may", "might", "must", "us", "thou", "thee", "hath"};
    for (size_t i = 0; i < sizeof added / sizeof added[0]; i++) {
        if (!cat_is_function_word(&ours, added[i], strlen(added[i]))) {
            print_message("documented addition missing: %s\n", added[i]);
            missing++;
        }
    }
    /* "art" is documented as deliberately left out. */
    assert_false(cat_is_function_word(&ours, "art", 3));
    print_message("list: %zu words, covers all %zu shared words and %zu additions; missing %zu\n",
                  ours.n, shared.n, sizeof added / sizeof added[0], missing);
    assert_int_equal(missing, 0);
    assert_true(ours.n > shared.n);
    cat_words_free(&ours);
    cat_words_free(&shared);
}

/* Expected classes as a string of '0', '1', '2', one per byte. */
static size_t check_classify(const cat_words *fw, const char *text, const char *want) {
    size_t n = strlen(text);
    assert_int_equal(strlen(want), n);
    uint8_t *out = malloc(n);
    assert_non_null(out);
    cat_classify((const uint8_t *)text, n, fw, out);
    size_t wrong = 0;
    for (size_t i = 0; i < n; i++) {
        if (out[i] != (uint8_t)(want[i] - '0')) {
            if (wrong < 5)
                print_message("  byte %zu (0x%02x): got %s, want %s\n", i, (uint8_t)text[i],
                              cat_name(out[i]), cat_name(want[i] - '0'));
            wrong++;
        }
    }
    free(out);
    print_message("classify \"%s\": %zu of %zu bytes wrong\n", text, wrong, n);
    return wrong;
}

static void test_classify_sentence(void **state) {
    (void)state;
    char err[512] = "";
    cat_words fw;
    assert_int_equal(cat_load_function_words(OUR_LIST, &fw, err, sizeof err), 0);
    size_t wrong = 0;
    /* capitals are lowercased; "don't" is one functional word; digits and punctuation structural */
    wrong += check_classify(&fw, "The cat don't sit, CAN it? 42x",
                            "111022201111102220011101100002");
    /* wiki markup: '' around a word is structural, an inner apostrophe joins the word */
    wrong += check_classify(&fw, "''Romeo's'' [[of|Verona]]", "0022222220000011022222200");
    /* UTF-8 letters make a semantic word; tabs and newlines are structural */
    wrong += check_classify(&fw, "\xc3\x9c" "ber\tthe\n", "2222201110");
    /* a word cut by the end of the span is classified from its visible part */
    wrong += check_classify(&fw, "into", "1111");
    wrong += check_classify(&fw, "int", "222");
    /* apostrophes at the edges and doubled */
    wrong += check_classify(&fw, "'tis it''s", "0222011002");
    assert_int_equal(wrong, 0);
    cat_words_free(&fw);
}

static int write_tmp(char *path, size_t len, const char *text) {
    snprintf(path, len, "/tmp/gatelab_test_cat_XXXXXX");
    int fd = mkstemp(path);
    if (fd < 0) return -1;
    size_t n = strlen(text);
    int ok = write(fd, text, n) == (ssize_t)n;
    close(fd);
    return ok ? 0 : -1;
}

static void test_bad_lists(void **state) {
    (void)state;
    struct { const char *text, *want; } cases[] = {
        {"# header\nthe\nfoo bar\n", ":3:"},
        {"the\nand\nThe\n", "listed twice"},
        {"-dash\n", ":1:"},
        {"# only comments\n\n", "no words"},
        {"don'\n", ":1:"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[64], err[512] = "";
        assert_int_equal(write_tmp(path, sizeof path, cases[i].text), 0);
        cat_words fw;
        int rc = cat_load_function_words(path, &fw, err, sizeof err);
        print_message("bad list %zu: rc %d, \"%s\"\n", i, rc, err);
        assert_int_equal(rc, -1);
        assert_non_null(strstr(err, path));
        assert_non_null(strstr(err, cases[i].want));
        assert_null(fw.words);
        unlink(path);
    }
    /* comments after a word, CRLF and mixed case are accepted */
    char path[64], err[512] = "";
    assert_int_equal(write_tmp(path, sizeof path, "The  # article\r\nDon't\r\n"), 0);
    cat_words fw;
    assert_int_equal(cat_load_function_words(path, &fw, err, sizeof err), 0);
    assert_int_equal(fw.n, 2);
    assert_true(cat_is_function_word(&fw, "THE", 3));
    assert_true(cat_is_function_word(&fw, "don't", 5));
    assert_false(cat_is_function_word(&fw, "don", 3));
    cat_words_free(&fw);
    cat_words_free(&fw); /* freeing twice is harmless */
    unlink(path);
    /* a missing file names the path */
    assert_int_equal(cat_load_function_words("/nonexistent/fw.txt", &fw, err, sizeof err), -1);
    assert_non_null(strstr(err, "/nonexistent/fw.txt"));
    print_message("malformed lists refused with path:line; missing file: \"%s\"\n", err);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_list_covers_shared),
        cmocka_unit_test(test_classify_sentence),
        cmocka_unit_test(test_bad_lists),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
