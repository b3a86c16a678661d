/*
 * main.c — the `gatelab` command: dispatch to a subcommand, `gatelab --help`
 * (one line per command with every flag it takes; `gatelab CMD --help` says
 * what each does) and `gatelab --version`.
 * Every subcommand lives in its own file and is listed once in the table below.
 * The commit comes from the Makefile (-DGATELAB_COMMIT, `git describe
 * --always --dirty`, "unknown" outside a git checkout).
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

typedef struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *usage;
} command;

static const command commands[] = {
    {"train", cmd_train, "train MANIFEST [section.key=value ...] [--resume RUN] [--run-id ID] [--db PATH] [--results DIR] [--quiet] [--allow-config-change]   (--resume RUN alone: its config.ini)"},
    {"eval", cmd_eval, "eval RUN [--split val|test|train | --text FILE] [--windows N] [--sparse] [--tau T | --match-alpha A | --match-run TSA_RUN] [--batch B] [--results DIR] [--record]"},
    {"sample", cmd_sample, "sample RUN [--tokens N] [--prompt S] [--temperature T] [--seed S] [--results DIR] [--json] [--no-cache] [--sparse | --tau T] [--trace OUT.h5]"},
    {"export", cmd_export, "export RUN --out FILE.h5 [--results DIR]"},
    {"sweep", cmd_sweep, "sweep MANIFEST [key=a,b,c ...] [-j|--jobs N] [--dry-run] [--index I] [--emit-slurm FILE [--nodes N] [--ntasks-per-node K]] [--launcher \"CMD ARGS\"] [--stale SECONDS] [--retry-failed] [--axis KEY=A,B ...] [--time T] [--mem M] [--partition P] [--db PATH] [--results DIR]"},
    {"collect", cmd_collect, "collect MAIN.db TASK.db [TASK.db ...]"},
    {"runs", cmd_runs, "runs [--experiment E] [--status S] [--format table|csv|json] [--stale-after SECONDS] [--fix-stale] [--tag KEY=VALUE ...] [--deleted] [--db PATH] [--results DIR]"},
    {"analyze", cmd_analyze, "analyze RUN [--out DIR] [--no-db] [--db PATH] [--results DIR] | analyze TSA_RUN --difficulty DENSE_RUN [--windows N] [--seed S] [--batch B] | analyze --seeds RUN1,RUN2,... [--windows N] [--out DIR]"},
    {"ablate", cmd_ablate, "ablate RUN --mode zero|mean|resample|file|full-depth|random|exit|posthoc-exit [--layers 1,3] [--heads 2:0,L3H1] [--values FILE] [--taus T,...] [--windows N] [--batch B] [--threads N] [--no-db] [--db PATH] [--results DIR]"},
    {"heads", cmd_heads, "heads RUN [--windows N] [--batch B] [--threads N] [--out DIR] [--no-figure] [--json] [--attribution] [--no-db] [--db PATH] [--results DIR]"},
    {"probe", cmd_probe, "probe RUN --text FILE | --prompt STR [--out CACHE.h5] [--attention] [--zero L1H0,...] [--threads N] [--results DIR]   (an activation cache)"},
    {"patch", cmd_patch, "patch RUN --pair mqar|sort|copy|text | --clean A --corrupt B [--gate L2H1 | --router L] [--positions 3,5|all] [--metric logit_diff|loss] [--pairs N] [--json] [--threads N] [--results DIR]"},
    {"tables", cmd_tables, "tables [EXPERIMENT] [--out DIR] [--db PATH] [--results DIR]"},
    {"figures", cmd_figures, "figures [EXPERIMENT | --runs ID,ID,... | --tag KEY=VALUE ...] [--out DIR] [--db PATH] [--results DIR]"},
    {"report", cmd_report, "report RUN|EXPERIMENT --html [--out FILE] [--block N --kv-head H | --gate L2H0] [--chars N] [--db PATH] [--results DIR] | report --probe CACHE.h5 --html [--out FILE] [--only PATH]"},
    {"paper", cmd_paper, "paper post [--results DIR] | paper report PRESET [--results DIR] [--out DIR]   (stages of make paper)"},
    {"tag", cmd_tag, "tag RUN key=value ... [--remove KEY ...] [--db PATH] [--results DIR]   (tags shown by runs; runs --tag key=value)"},
    {"delete", cmd_delete, "delete RUN ... [--db PATH] [--results DIR]   (hidden from runs, tables, figures, reports; files kept)"},
    {"restore", cmd_restore, "restore RUN ... [--db PATH] [--results DIR]   (undo delete)"},
    {"compare", cmd_compare, "compare RUN RUN ... [--format table|csv|json] [--db PATH] [--results DIR]   (params that differ, headline metrics)"},
    {"metrics", cmd_metrics, "metrics [--experiment E] [--run RUN] [--split S] [--name GLOB] [--format csv|json] [--db PATH] [--results DIR]   (long form)"},
    {"serve", cmd_serve, "serve [--port 8000] [--bind 127.0.0.1] [--results DIR] [--db PATH]   (read-only web dashboard: docs/serve.md)"},
    {"data", cmd_data, "data [FILE ...]   (where data sets are looked for and found; `make data` fetches them)"},
};

static void usage(FILE *f) {
    fprintf(f, "gatelab — train, trace and take apart gated transformers\n\nusage:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  gatelab %s\n", commands[i].usage);
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
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V") || !strcmp(argv[1], "version")) {
        version();
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name)) return commands[i].run(argc - 1, argv + 1);
    const char *names[sizeof commands / sizeof commands[0]];
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) names[i] = commands[i].name;
    const char *near = args_suggest(argv[1], names, (int)(sizeof commands / sizeof commands[0]));
    if (near) fprintf(stderr, "gatelab: unknown command '%s' (did you mean %s?); see gatelab --help\n", argv[1], near);
    else fprintf(stderr, "gatelab: unknown command '%s'; see gatelab --help\n", argv[1]);
    return 2;
}
