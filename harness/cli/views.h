/*
 * views.h — the JSON rows the CLI prints, for the other views that show the
 * same things: `gatelab serve` (cmd_serve.c) answers /api/runs and
 * /api/metrics with exactly the objects `runs --format json` and `metrics
 * --format json` print, built by the functions below (in cmd_runs.c and
 * cmd_metrics.c), so the two never drift apart.
 */
#ifndef GATELAB_HARNESS_CLI_VIEWS_H
#define GATELAB_HARNESS_CLI_VIEWS_H

#include "jsonl.h"
#include "store/registry.h"

/* One run as `gatelab runs --format json` prints it (a new object; NULL only
 * when out of memory).  cmd_runs.c */
json_t *runs_json_row(const gl_run_row *r);

/* A metric row's params cell as a JSON object (new reference), or NULL with a message in bad
 * naming the run, metric and step when the cell is not a JSON object.  cmd_metrics.c */
json_t *metrics_params_json(const gl_metric_long *r, char *bad, size_t n);

/* One metric row as `gatelab metrics --format json` prints it, with params (stolen: from
 * metrics_params_json) as its params (a new object; NULL only when out of memory).  cmd_metrics.c */
json_t *metrics_json_row(const gl_metric_long *r, json_t *params);

#endif
