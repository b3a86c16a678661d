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
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cli.h"
#include "resolve.h"
#include "store/registry.h"
#include "store/rundir.h"

static const args_opt tag_opts[] = {
    {"remove", ARGS_KEY(0), "KEY", "remove the tag KEY (repeat for more)"},
    {"db", ARGS_KEY(1), "PATH", "registry (default <results>/gatelab.db)"},
    {"results", ARGS_KEY(2), "DIR", "results folder whose gatelab.db is used (default $GATELAB_RESULTS or results)"},
    {0}};
const args_spec tag_spec = {
    "tag", "RUN key=value ... [options]",
    "Set (or replace) the tags of RUN (a run id, a unique prefix of one, or its folder: then its own registry).  key: letters, digits, '_', '-', '.';\n"
    "value: one line of text.  Tags show in `gatelab runs`; `gatelab runs --tag key=value` lists the runs\n"
    "that carry one.",
    tag_opts};

static const args_opt delete_opts[] = {
    {"db", ARGS_KEY(1), "PATH", "registry (default <results>/gatelab.db)"},
    {"results", ARGS_KEY(2), "DIR", "results folder whose gatelab.db is used (default $GATELAB_RESULTS or results)"},
    {0}};
const args_spec delete_spec = {
    "delete", "RUN ... [options]",
    "Hide the runs (ids, unique prefixes or folders) from runs, tables, figures, report and metrics; their rows\n"
    "and files stay\n"
    "(`gatelab runs --deleted` lists them; `gatelab restore RUN` shows them again).",
    delete_opts};
const args_spec restore_spec = {"restore", "RUN ... [options]", "Show runs hidden by `gatelab delete` again.",
                                       delete_opts};

/* Read the flags of tag, delete or restore; the positionals go to pos (argc
 * slots).  Returns -1 to go on, else the exit code (0 after --help, 2). */
static int tag_parse(const args_spec *spec, int argc, char **argv, const char **pos, int *npos, const char **remove,
                     int *nremove, const char **db, const char **results) {
    args_parser p;
    args_begin(&p, spec, argc, argv);
    for (int k; (k = args_next(&p)) != ARGS_END;) {
        if (k < 0) return args_exit_code(k);
        if (k == ARGS_POS) pos[(*npos)++] = p.val;
        else if (k == ARGS_KEY(0)) remove[(*nremove)++] = p.val;
        else if (k == ARGS_KEY(1)) *db = p.val;
        else if (k == ARGS_KEY(2)) *results = p.val;
    }
    return -1;
}

/* Set the key=value tags (pos) and remove the keys (rm) of run id.  0, or 1 after a message. */
static int tag_apply(gl_db *db, const char *id, const char **pos, int npos, const char **rm, int nrm) {
    char err[1024];
    for (int i = 0; i < npos; i++) {
        char key[256];
        const char *eq = strchr(pos[i], '=');
        snprintf(key, sizeof key, "%.*s", (int)(eq - pos[i]), pos[i]);
        if (db_tag_set(db, id, key, eq + 1, err, sizeof err)) { fprintf(stderr, "gatelab tag: %s\n", err); return 1; }
    }
    for (int i = 0; i < nrm; i++) {
        int k = db_tag_remove(db, id, rm[i], err, sizeof err);
        if (k < 0) { fprintf(stderr, "gatelab tag: %s\n", err); return 1; }
        if (!k) fprintf(stderr, "gatelab tag: run %s had no tag '%s' (nothing removed)\n", id, rm[i]);
    }
    return 0;
}

int cmd_tag(int argc, char **argv) {
    const char *db_arg = NULL, *results = NULL;
    const char **pos = calloc((size_t)argc + 1, sizeof *pos), **remove = calloc((size_t)argc + 1, sizeof *remove);
    int npos = 0, nremove = 0, rc = 2;
    gl_db *db = NULL;
    char err[1024];
    if (!pos || !remove) { fprintf(stderr, "gatelab tag: out of memory\n"); rc = 1; goto cleanup; }
    if ((rc = tag_parse(&tag_spec, argc, argv, pos, &npos, remove, &nremove, &db_arg, &results)) >= 0) goto cleanup;
    rc = 2;
    if (npos < 1 || (npos < 2 && !nremove)) {
        args_usage_error(&tag_spec, "give a run and at least one key=value (or --remove key)");
        goto cleanup;
    }
    for (int i = 1; i < npos; i++) {
        const char *eq = strchr(pos[i], '=');
        if (!eq || eq == pos[i]) {
            args_usage_error(&tag_spec, "'%s': write a tag as key=value (to remove one: --remove key)", pos[i]);
            goto cleanup;
        }
    }
    rc = 1;
    resolve_run r;
    if (resolve_run_arg(pos[0], db_arg, results, RESOLVE_DB, &r, err, sizeof err) ||
        db_open_existing(&db, r.db, err, sizeof err)) {
        fprintf(stderr, "gatelab tag: %s\n", err);
        goto cleanup;
    }
    rc = tag_apply(db, r.id, pos + 1, npos - 1, remove, nremove);
cleanup:
    db_close(db);
    free(pos);
    free(remove);
    return rc;
}

/* *db open on path: kept when it already is (runs of one registry), else
 * closed and path opened (a run folder names its own).  0, or -1 with err. */
static int tag_open(gl_db **db, const char *path, char *err, size_t errlen) {
    if (*db && !strcmp(db_path(*db), path)) return 0;
    db_close(*db);
    *db = NULL;
    return db_open_existing(db, path, err, errlen); /* never creates a registry */
}

/* delete (deleted 1) or restore (0) every RUN argument. */
static int delete_or_restore(int argc, char **argv, int deleted) {
    const args_spec *spec = deleted ? &delete_spec : &restore_spec;
    const char *cmd = spec->cmd, *db_arg = NULL, *results = NULL;
    const char **pos = calloc((size_t)argc + 1, sizeof *pos);
    int npos = 0, nremove = 0, rc = 2;
    gl_db *db = NULL;
    char err[1024];
    if (!pos) { fprintf(stderr, "gatelab %s: out of memory\n", cmd); return 1; }
    if ((rc = tag_parse(spec, argc, argv, pos, &npos, NULL, &nremove, &db_arg, &results)) >= 0) goto cleanup;
    rc = 2;
    if (npos < 1) {
        args_usage_error(spec, "give at least one run");
        goto cleanup;
    }
    rc = 0;
    for (int i = 0; i < npos; i++) {
        resolve_run r;
        if (resolve_run_arg(pos[i], db_arg, results, RESOLVE_DB, &r, err, sizeof err) ||
            tag_open(&db, r.db, err, sizeof err) || db_run_set_deleted(db, r.id, deleted, err, sizeof err)) {
            fprintf(stderr, "gatelab %s: %s\n", cmd, err);
            rc = 1;
            continue;
        }
        printf("%s %s\n", deleted ? "deleted" : "restored", r.id);
    }
cleanup:
    db_close(db);
    free(pos);
    return rc;
}

int cmd_delete(int argc, char **argv) { return delete_or_restore(argc, argv, 1); }

int cmd_restore(int argc, char **argv) { return delete_or_restore(argc, argv, 0); }
