/*
 * tmpdir.h — a fresh temporary folder for a cmocka group (tests that write
 * files): tmpdir_setup makes /tmp/gatelab_test_<name>_XXXXXX into g_dir,
 * tmpdir_teardown removes it with everything in it.  Included by one test
 * program at a time, so the state is static.
 */
#ifndef GATELAB_TESTS_TMPDIR_H
#define GATELAB_TESTS_TMPDIR_H

#include <stdio.h>
#include <stdlib.h>

static char g_dir[256];

static int tmpdir_make(const char *name) {
    snprintf(g_dir, sizeof g_dir, "/tmp/gatelab_test_%s_XXXXXX", name);
    return mkdtemp(g_dir) ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

#endif
