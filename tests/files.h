/*
 * files.h — two file helpers for cmocka programs that write their own inputs:
 * write_file (a whole file from a string; a failure fails the test),
 * file_exists, and OK(call): a call that must return 0, else the test fails
 * printing the call and the caller's err buffer.  static inline, so a program that uses one of them only
 * compiles cleanly.
 */
#ifndef GATELAB_TESTS_FILES_H
#define GATELAB_TESTS_FILES_H

#include <stdio.h>
#include <sys/stat.h>

static inline void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

static inline int file_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

#define OK(call)                                                     \
    do {                                                             \
        if ((call) != 0) {                                           \
            print_error("%s failed: %s\n", #call, err);              \
            fail();                                                  \
        }                                                            \
    } while (0)

#endif
