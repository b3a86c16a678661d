/*
 * cmd_tag.c — `gatelab tag`, `gatelab delete` and `gatelab restore`: the
 * registry's own notes on runs.
 *
 *   gatelab tag RUN key=value ... [--remove key ...]   set or remove tags (shown by `runs`,
 *                                                      filtered with `runs --tag key=value`)
 *   gatelab delete RUN ...                             hide runs (soft delete)
 *   gatelab restore RUN ...                            show them again
 *
 * A deleted run is hidden from `runs` (unless --deleted), `tables`,
 * `figures`, `report`, `paper report` and `metrics`; its rows, run folder,
 * checkpoint and trace stay untouched, so `restore` brings it back whole.
 * What it does not do: remove files (delete a run folder by hand after
 * deleting the run, if you mean to), or change a run's config or metrics.
 * Also here: the two helpers the registry commands share (reg_db_path,
 * reg_run_id; declared in cli.h).
 */
#include <getopt.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "store/registry.h"
#include "store/rundir.h"

void reg_db_path(char *out, size_t n, const char *db, const char *results) {
    if (db && *db) snprintf(out, n, "%s", db);
    else snprintf(out, n, "%s/gatelab.db", run_results_dir(results));
}

const char *reg_run_id(const char *arg, char *buf, size_t n) {
    snprintf(buf, n, "%s", arg);
    size_t len = strlen(buf);
    while (len > 1 && buf[len - 1] == '/') buf[--len] = '\0';
    if (!strchr(buf, '/')) return buf;
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s", buf);
    snprintf(buf, n, "%s", basename(tmp));
    return buf;
}

static void tag_usage(FILE *f) {
    fprintf(f, "usage: gatelab tag RUN key=value ... [--remove key ...] [--db PATH] [--results DIR]\n"
               "  sets (or replaces) the tags of RUN; --remove drops one (repeat it for more)\n"
               "  key: letters, digits, '_', '-', '.'; value: one line of text\n"
               "  RUN is a run id or its folder; PATH defaults to DIR/gatelab.db (DIR: results)\n"
               "  tags show in `gatelab runs`; `gatelab runs --tag key=value` lists the runs that carry one\n");
}

static void delete_usage(FILE *f, const char *cmd) {
    fprintf(f, "usage: gatelab %s RUN ... [--db PATH] [--results DIR]\n", cmd);
    if (!strcmp(cmd, "delete"))
        fprintf(f, "  hides the runs from runs, tables, figures, report and metrics; their rows and files stay\n"
                   "  (`gatelab runs --deleted` lists them; `gatelab restore RUN` shows them again)\n");
    else fprintf(f, "  shows runs hidden by `gatelab delete` again\n");
}

static const struct option reg_common_opts[] = {
    {"db", required_argument, NULL, 'd'},
    {"results", required_argument, NULL, 'r'},
    {"remove", required_argument, NULL, 'x'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

int cmd_tag(int argc, char **argv) {
    const char *db_arg = NULL, *results = NULL;
    const char **remove = calloc((size_t)argc, sizeof *remove);
    int nremove = 0, c, rc = 2;
    gl_db *db = NULL;
    char err[1024], path[4096], id[256];
    if (!remove) { fprintf(stderr, "gatelab tag: out of memory\n"); return 1; }
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", reg_common_opts, NULL)) != -1) {
        if (c == 'h') { tag_usage(stdout); rc = 0; goto cleanup; }
        else if (c == 'd') db_arg = optarg;
        else if (c == 'r') results = optarg;
        else if (c == 'x') remove[nremove++] = optarg;
        else { tag_usage(stderr); goto cleanup; }
    }
    if (optind >= argc || (optind + 1 >= argc && !nremove)) {
        fprintf(stderr, "gatelab tag: give a run and at least one key=value (or --remove key)\n");
        tag_usage(stderr);
        goto cleanup;
    }
    for (int i = optind + 1; i < argc; i++) {
        const char *eq = strchr(argv[i], '=');
        if (!eq || eq == argv[i]) {
            fprintf(stderr, "gatelab tag: '%s': write a tag as key=value (to remove one: --remove key)\n", argv[i]);
            goto cleanup;
        }
    }
    reg_run_id(argv[optind], id, sizeof id);
    reg_db_path(path, sizeof path, db_arg, results);
    rc = 1;
    if (db_open(&db, path, err, sizeof err)) { fprintf(stderr, "gatelab tag: %s\n", err); goto cleanup; }
    for (int i = optind + 1; i < argc; i++) {
        char key[256];
        const char *eq = strchr(argv[i], '=');
        snprintf(key, sizeof key, "%.*s", (int)(eq - argv[i]), argv[i]);
        if (db_tag_set(db, id, key, eq + 1, err, sizeof err)) { fprintf(stderr, "gatelab tag: %s\n", err); goto cleanup; }
    }
    for (int i = 0; i < nremove; i++) {
        int k = db_tag_remove(db, id, remove[i], err, sizeof err);
        if (k < 0) { fprintf(stderr, "gatelab tag: %s\n", err); goto cleanup; }
        if (!k) fprintf(stderr, "gatelab tag: run %s had no tag '%s' (nothing removed)\n", id, remove[i]);
    }
    rc = 0;
cleanup:
    db_close(db);
    free(remove);
    return rc;
}

/* delete (deleted 1) or restore (0) every RUN argument. */
static int delete_or_restore(int argc, char **argv, int deleted) {
    const char *cmd = deleted ? "delete" : "restore", *db_arg = NULL, *results = NULL;
    int c, bad = 0;
    gl_db *db = NULL;
    char err[1024], path[4096], id[256];
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", reg_common_opts, NULL)) != -1) {
        if (c == 'h') { delete_usage(stdout, cmd); return 0; }
        else if (c == 'd') db_arg = optarg;
        else if (c == 'r') results = optarg;
        else { delete_usage(stderr, cmd); return 2; }
    }
    if (optind >= argc) {
        fprintf(stderr, "gatelab %s: give at least one run\n", cmd);
        delete_usage(stderr, cmd);
        return 2;
    }
    reg_db_path(path, sizeof path, db_arg, results);
    if (db_open(&db, path, err, sizeof err)) {
        fprintf(stderr, "gatelab %s: %s\n", cmd, err);
        return 1;
    }
    for (int i = optind; i < argc; i++) {
        reg_run_id(argv[i], id, sizeof id);
        if (db_run_set_deleted(db, id, deleted, err, sizeof err)) {
            fprintf(stderr, "gatelab %s: %s\n", cmd, err);
            bad = 1;
            continue;
        }
        printf("%s %s\n", deleted ? "deleted" : "restored", id);
    }
    db_close(db);
    return bad;
}

int cmd_delete(int argc, char **argv) { return delete_or_restore(argc, argv, 1); }

int cmd_restore(int argc, char **argv) { return delete_or_restore(argc, argv, 0); }
