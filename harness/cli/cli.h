/*
 * cli.h — the gatelab subcommands.  Each cmd_* parses its own arguments,
 * prints its own results and errors, and returns the process exit code
 * (0 success, 1 failure of the work, 2 bad usage).  main.c only dispatches.
 */
#ifndef GATELAB_HARNESS_CLI_H
#define GATELAB_HARNESS_CLI_H

#include "args.h"

int cmd_train(int argc, char **argv);  /* harness/cli/cmd_train.c */
int cmd_eval(int argc, char **argv);   /* harness/cli/cmd_eval.c */
int cmd_sample(int argc, char **argv); /* harness/cli/cmd_sample.c */
int cmd_export(int argc, char **argv); /* harness/cli/cmd_export.c */
int cmd_import(int argc, char **argv); /* harness/cli/cmd_import.c */
int cmd_sweep(int argc, char **argv);  /* harness/cli/cmd_sweep.c */
int cmd_collect(int argc, char **argv);/* harness/cli/cmd_sweep.c */
int cmd_runs(int argc, char **argv);   /* harness/cli/cmd_runs.c */
int cmd_analyze(int argc, char **argv);/* harness/cli/cmd_analyze.c */
int cmd_ablate(int argc, char **argv); /* harness/cli/cmd_ablate.c */
int cmd_heads(int argc, char **argv);  /* harness/cli/cmd_ablate.c */
int cmd_tables(int argc, char **argv); /* harness/cli/cmd_tables.c */
int cmd_figures(int argc, char **argv);/* harness/cli/cmd_tables.c */
int cmd_data(int argc, char **argv);   /* harness/cli/cmd_data.c */
int cmd_report(int argc, char **argv); /* harness/cli/cmd_report.c */
int cmd_probe(int argc, char **argv);  /* harness/cli/cmd_probe.c */
int cmd_patch(int argc, char **argv);  /* harness/cli/cmd_patch.c */

int cmd_paper(int argc, char **argv);  /* harness/cli/cmd_paper.c */

/* The registry's notes on runs and views of it. */
int cmd_tag(int argc, char **argv);     /* harness/cli/cmd_tag.c */
int cmd_delete(int argc, char **argv);  /* harness/cli/cmd_tag.c */
int cmd_restore(int argc, char **argv); /* harness/cli/cmd_tag.c */
int cmd_compare(int argc, char **argv); /* harness/cli/cmd_compare.c */
int cmd_metrics(int argc, char **argv); /* harness/cli/cmd_metrics.c */
int cmd_serve(int argc, char **argv);   /* harness/cli/cmd_serve.c: the web dashboard */

/* Each command's flag table (args.h), in the file of the command: it drives
 * the command's parsing, its --help and its line of `gatelab --help`. */
extern const args_spec train_spec, eval_spec, sample_spec, export_spec, import_spec, sweep_spec, collect_spec, runs_spec, an_spec,
    ablate_spec, heads_spec, pb_spec, pt_spec, tables_spec, figures_spec, rp_spec, paper_spec, tag_spec, delete_spec,
    restore_spec, cmp_spec, met_spec, serve_spec, data_spec;

#endif
