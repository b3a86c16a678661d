/*
 * main.c — the `gatelab` command: dispatch to a subcommand, `gatelab --help`
 * (one line per command with every flag it takes, written out from the
 * command's flag table; `gatelab CMD --help` says what each does) and
 * `gatelab --version`.
 * Every subcommand lives in its own file and is listed once in the table
 * below, with its args_spec: nothing here repeats a flag.
 * The commit comes from the Makefile (-DGATELAB_COMMIT, `git describe
 * --always --dirty`, "unknown" outside a git checkout); the full commit and
 * dirty flag (-DGATELAB_HEAD, -DGATELAB_DIRTY) go to the registry, which
 * records them for every run this binary starts (db_set_build).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "cli.h"
#include "store/ckpt.h"
#include "store/export.h"
#include "store/registry.h"
#include "store/trace.h"

#define GATELAB_VERSION "0.1.0" /* raised by hand at a release; the commit says exactly what was built */
#ifndef GATELAB_COMMIT
#define GATELAB_COMMIT "unknown"
#endif
#ifndef GATELAB_HEAD
#define GATELAB_HEAD ""
#define GATELAB_DIRTY -1
#endif

/* One row per command: what runs it and its flag table (args.h), from which
 * both its parsing and its line of `gatelab --help` come. */
typedef struct {
    int (*run)(int argc, char **argv);
    const args_spec *spec; /* spec->cmd is the command's name */
} command;

static const command commands[] = {
    {cmd_train, &train_spec},
    {cmd_eval, &eval_spec},
    {cmd_sample, &sample_spec},
    {cmd_export, &export_spec},
    {cmd_import, &import_spec},
    {cmd_sweep, &sweep_spec},
    {cmd_collect, &collect_spec},
    {cmd_runs, &runs_spec},
    {cmd_analyze, &an_spec},
    {cmd_ablate, &ablate_spec},
    {cmd_heads, &heads_spec},
    {cmd_probe, &pb_spec},
    {cmd_patch, &pt_spec},
    {cmd_tables, &tables_spec},
    {cmd_figures, &figures_spec},
    {cmd_report, &rp_spec},
    {cmd_paper, &paper_spec},
    {cmd_tag, &tag_spec},
    {cmd_delete, &delete_spec},
    {cmd_restore, &restore_spec},
    {cmd_compare, &cmp_spec},
    {cmd_metrics, &met_spec},
    {cmd_serve, &serve_spec},
    {cmd_data, &data_spec},
};

static void usage(FILE *f) {
    fprintf(f, "gatelab — train, trace and take apart gated transformers\n\nusage:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) args_print_line(commands[i].spec, f);
    fprintf(f, "  gatelab --version\n"
               "\nRUN is a run id, a unique prefix of one, or a run folder (results/runs/<id>, with its own registry\n"
               "two folders up); DIR (--results) defaults to $GATELAB_RESULTS or results, PATH (--db) to DIR/gatelab.db.\n"
               "`gatelab CMD --help` explains each flag of CMD; docs/cli.md the rules every command keeps.\n");
}

static void version(void) {
    printf("gatelab %s (commit %s)\n", GATELAB_VERSION, GATELAB_COMMIT);
    printf("formats: registry schema %d, checkpoint %d, trace schema %d, export schema %d\n", DB_SCHEMA_VERSION,
           CKPT_VERSION, TRACE_SCHEMA_VERSION, EXPORT_SCHEMA_VERSION);
}

/* OpenMP threads that spin at barriers (libgomp's default) lose whole time
 * slices when the cores are shared — another run, a sweep with -j, a build —
 * and a step with hundreds of parallel regions then runs 10-20x slower
 * (measured: 205 s instead of 21 s for a small run on a loaded 2-core
 * machine).  libgomp reads OMP_WAIT_POLICY only when it loads, so when the
 * user has not chosen a policy we set "passive" and start again once.
 * OMP_WAIT_POLICY=active is faster on cores nobody else uses. */
static void choose_wait_policy(char **argv) {
    if (getenv("OMP_WAIT_POLICY")) return;
    setenv("OMP_WAIT_POLICY", "passive", 1);
    execv("/proc/self/exe", argv); /* returns only on failure: then carry on as we are */
}

int main(int argc, char **argv) {
    choose_wait_policy(argv);
    db_set_build(GATELAB_HEAD, GATELAB_DIRTY);
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V") || !strcmp(argv[1], "version")) {
        version();
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].spec->cmd)) return commands[i].run(argc - 1, argv + 1);
    const char *names[sizeof commands / sizeof commands[0]];
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) names[i] = commands[i].spec->cmd;
    const char *near = args_suggest(argv[1], names, (int)(sizeof commands / sizeof commands[0]));
    if (near) fprintf(stderr, "gatelab: unknown command '%s' (did you mean %s?); see gatelab --help\n", argv[1], near);
    else fprintf(stderr, "gatelab: unknown command '%s'; see gatelab --help\n", argv[1]);
    return 2;
}
