/*
 * cmd_data.c — `gatelab data`: where gatelab looks for data sets and what it
 * finds there, through the same lookup training uses (store/data.h,
 * data_find): $GATELAB_DATA, then data/ in the clone, then ../shared/data.
 *
 *   gatelab data              every folder searched, and where each data set of
 *                             `make data` is (or that it is missing)
 *   gatelab data FILE ...     the path of each FILE, one per line (for scripts);
 *                             exit 1 with the folders searched when one is missing
 *
 * It does not download anything: `make data` (scripts/fetch_data.sh) does.
 */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "args.h"
#include "cli.h"
#include "store/data.h"

/* The data sets `make data` fetches, by the names manifests use. */
static const char *const data_known[] = {"tinyshakespeare.txt", "enwik8", "enwik8_first4000000.txt"};

static const args_opt data_opts[] = {{0}};
const args_spec data_spec = {
    "data", "[FILE ...]",
    "Without FILE: the folders searched for data sets, in order, and where each data set is.\n"
    "With FILE: the path of each FILE, one per line; exit 1 naming the folders searched if one is missing.\n"
    "Get the data sets with `make data` (scripts/fetch_data.sh) or set GATELAB_DATA to a folder holding them.",
    data_opts};

static void data_overview(void) {
    gl_data_dirs d;
    data_search_dirs(&d);
    printf("folders searched for data sets, in order:\n");
    for (int i = 0; i < d.n; i++) {
        struct stat st;
        int there = stat(d.dir[i], &st) == 0 && S_ISDIR(st.st_mode);
        printf("  %d. %-40s %s%s\n", i + 1, d.dir[i], d.origin[i], there ? "" : "  (no such folder)");
    }
    int missing = 0;
    printf("data sets:\n");
    for (size_t k = 0; k < sizeof data_known / sizeof data_known[0]; k++) {
        char path[GL_PATH_MAX + 64], err[4096];
        if (data_find(data_known[k], path, sizeof path, err, sizeof err) == 0) {
            printf("  %-26s %s\n", data_known[k], path);
        } else {
            printf("  %-26s missing\n", data_known[k]);
            missing++;
        }
    }
    if (missing)
        printf("get the missing ones with `make data` (downloads into data/), or set GATELAB_DATA to the folder "
               "that holds them; without data, `make demo` and the tests use the built-in tasks\n");
}

int cmd_data(int argc, char **argv) {
    const char *files[256];
    int n = 0;
    args_parser p;
    args_begin(&p, &data_spec, argc, argv);
    for (int k; (k = args_next(&p)) != ARGS_END;) {
        if (k < 0) return args_exit_code(k);
        if (n == 256) return args_usage_error(&data_spec, "at most 256 FILEs at once");
        files[n++] = p.val;
    }
    if (n == 0) {
        data_overview();
        return 0;
    }
    int rc = 0;
    for (int i = 0; i < n; i++) {
        char path[GL_PATH_MAX + 64], err[4096];
        if (data_find(files[i], path, sizeof path, err, sizeof err) == 0 && access(path, R_OK) == 0) {
            printf("%s\n", path);
        } else {
            if (path[0]) snprintf(err, sizeof err, "data.file: %s is not readable", path);
            fprintf(stderr, "gatelab data: %s\n", err);
            rc = 1;
        }
    }
    return rc;
}
