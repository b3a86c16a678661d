/*
 * cli.h — the gatelab subcommands.  Each cmd_* parses its own arguments,
 * prints its own results and errors, and returns the process exit code
 * (0 success, 1 failure of the work, 2 bad usage).  main.c only dispatches.
 */
#ifndef GATELAB_HARNESS_CLI_H
#define GATELAB_HARNESS_CLI_H

#include <stddef.h>

int cmd_train(int argc, char **argv);  /* harness/cli/cmd_train.c */
int cmd_eval(int argc, char **argv);   /* harness/cli/cmd_eval.c */
int cmd_sample(int argc, char **argv); /* harness/cli/cmd_sample.c */
int cmd_export(int argc, char **argv); /* harness/cli/cmd_export.c */
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

int cmd_paper(int argc, char **argv);  /* harness/cli/cmd_paper.c */

/* The registry's notes on runs and views of it. */
int cmd_tag(int argc, char **argv);     /* harness/cli/cmd_tag.c */
int cmd_delete(int argc, char **argv);  /* harness/cli/cmd_tag.c */
int cmd_restore(int argc, char **argv); /* harness/cli/cmd_tag.c */
int cmd_compare(int argc, char **argv); /* harness/cli/cmd_compare.c */
int cmd_metrics(int argc, char **argv); /* harness/cli/cmd_metrics.c */

/* Shared by those (cmd_tag.c): the registry path from --db (wins) or
 * --results DIR (DIR/gatelab.db; DIR defaults as run_results_dir), and a
 * run id from a RUN argument (an id, or a run folder: its last component). */
void reg_db_path(char *out, size_t n, const char *db, const char *results);
const char *reg_run_id(const char *arg, char *buf, size_t n);

#endif
