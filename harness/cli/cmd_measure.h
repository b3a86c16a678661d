/*
 * cmd_measure.h — the measurements of `eval`, `ablate` and `analyze` as typed
 * calls, shared by those commands (after parsing their flags) and by `paper
 * post` (cmd_paper.c, which builds the options itself: no argv).  Each
 * resolves the RUN argument (resolve.h), calls the library entry point
 * (run/eval_run.h, analysis/pipeline/measure.h), prints what the command prints, and
 * records; it returns the command's exit code (0, or 1 after its message
 * "gatelab eval|ablate|analyze: ..." on stderr).  The measuring is the
 * library's; only the resolving and the printing are here.
 */
#ifndef GATELAB_HARNESS_CLI_CMD_MEASURE_H
#define GATELAB_HARNESS_CLI_CMD_MEASURE_H

#include "analysis/pipeline/measure.h"
#include "run/eval_run.h"

/* cmd_eval.c: evaluate run_arg (--results results, NULL: the default) with
 * o (its run and partner are filled in here from run_arg and o->partner_arg),
 * print the JSON line, and with o->record write the headline. */
int cmd_eval_run(const char *run_arg, const char *results, evalrun_opts *o);

/* cmd_ablate.c: the ablation o (its run filled in here from run_arg, --db db
 * and --results results, either NULL), its table and JSON line, and unless
 * no_db its rows in the registry. */
int cmd_ablate_run(const char *run_arg, const char *db, const char *results, measure_ablate_opts *o, int no_db);

/* cmd_analyze.c: the trace analysis of run_arg (files, rows unless
 * o->no_db, the summary), and difficulty-proportional routing of run_arg (a
 * TSA run) against dense_arg (rows unless no_db). */
int cmd_analyze_trace(const char *run_arg, const char *db, const char *results, measure_trace_opts *o);
int cmd_analyze_difficulty(const char *run_arg, const char *dense_arg, const char *db, const char *results,
                           measure_difficulty_opts *o, int no_db);

#endif
