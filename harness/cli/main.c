/*
 * main.c — the `gatelab` command: dispatch to a subcommand.
 * Every subcommand lives in its own file and is listed once in the table below.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

typedef struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *usage;
} command;

static const command commands[] = {
    {"train", cmd_train, "train MANIFEST [section.key=value ...] [--resume RUN] [--run-id ID] [--db PATH] [--results DIR] [--quiet]"},
    {"eval", cmd_eval, "eval RUN [--text FILE | --split val|test] [--windows N] [--sparse] [--tau T | --match-alpha A] [--batch B]"},
    {"sample", cmd_sample, "sample RUN [--tokens N] [--prompt S] [--temperature T] [--seed S]"},
    {"export", cmd_export, "export RUN --out FILE.h5 [--results DIR]"},
    {"sweep", cmd_sweep, "sweep MANIFEST [key=a,b,c ...] [-j N] [--dry-run] [--index I] [--emit-slurm FILE] [--db PATH] [--results DIR]"},
    {"collect", cmd_collect, "collect MAIN.db TASK.db [TASK.db ...]"},
    {"runs", cmd_runs, "runs [--experiment E] [--status S] [--format table|csv|json] [--db PATH]"},
    {"analyze", cmd_analyze, "analyze RUN [--results DIR] [--db PATH] [--out DIR] [--no-db]"},
    {"ablate", cmd_ablate, "ablate RUN --mode zero|mean|resample|file|full-depth|random|exit [--layers 1,3] [--heads 2:0,3:1] [--taus T,...] [--windows N] [--db PATH]"},
    {"heads", cmd_heads, "heads RUN [--windows N] [--out DIR] [--db PATH] [--no-figure]"},
    {"tables", cmd_tables, "tables [EXPERIMENT] [--db PATH] [--results DIR] [--out DIR]"},
    {"paper", cmd_paper, "paper post | paper report PRESET [--results DIR] [--out DIR]   (stages of make paper)"},
    {"figures", cmd_figures, "figures [EXPERIMENT] [--db PATH] [--results DIR] [--out DIR]"},
    {"report", cmd_report, "report RUN|EXPERIMENT --html [--out FILE] [--block N --kv-head H] [--chars N] [--results DIR] [--db PATH]"},
    {"data", cmd_data, "data [FILE ...]   (where data sets are looked for and found; `make data` fetches them)"},
};

static void usage(FILE *f) {
    fprintf(f, "gatelab — train, trace and take apart gated transformers\n\nusage:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  gatelab %s\n", commands[i].usage);
    fprintf(f, "\nRUN is a run id or a run folder (results/runs/<id>).\n");
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
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name)) return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "gatelab: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return 2;
}
