/*
 * report.h — where analysis results go: a growable list of registry metric
 * rows (flushed with db_metrics_log in one transaction), tab-separated files
 * with a header row, folders, and the repository files an analysis needs
 * (the function-word list, the gnuplot scripts).
 */
#ifndef GATELAB_ANALYSIS_CORE_REPORT_H
#define GATELAB_ANALYSIS_CORE_REPORT_H

#include <stddef.h>
#include <stdio.h>

#include "store/metric.h"
#include "store/registry.h"

#define REPORT_NAME_MAX METRIC_NAME_MAX

typedef struct {
    gl_metric *rows;                 /* [n] name and params pointers are set at flush */
    metric_key *keys;                /* [n] */
    char (*splits)[16];              /* [n] */
    int n, cap;
    gl_prov prov;                    /* what the rows added next were measured on (zero: none); set by the caller */
} report_metrics;

/* Append one row (step, split, key, value) measured on rm->prov; split and
 * key (a store/metric.h builder's) are copied.  NaN is kept (the registry
 * stores it as NULL).  Returns 0, or -1 with a message (out of memory, a
 * split longer than 15 bytes). */
int report_metric_add(report_metrics *rm, long step, const char *split, const metric_key *key, double value,
                      char *err, size_t errlen);

/* The same with the standard error se of value (NaN: none). */
int report_metric_add_se(report_metrics *rm, long step, const char *split, const metric_key *key, double value,
                         double se, char *err, size_t errlen);

/* Value of the last row added with this split and key: 1 found, 0 not. */
int report_metric_find(const report_metrics *rm, const char *split, const metric_key *key, double *value);

/* Write every row for run_id in one transaction, then empty the list.
 * Returns 0, or -1 with the registry's message. */
int report_metrics_flush(report_metrics *rm, gl_db *db, const char *run_id, char *err, size_t errlen);

void report_metrics_free(report_metrics *rm); /* accepts a zeroed list */

/* mkdir -p is fileio_mkdir_p (store/fileio.h). */

/* Create dir/name for writing and write the header line (tab-separated column
 * names, given with tabs already in place).  The full path goes to path_out
 * (pathlen bytes) when it is not NULL.  Returns the open file, or NULL with a
 * message.  The caller closes it with report_tsv_close. */
FILE *report_tsv_open(const char *dir, const char *name, const char *header, char *path_out, size_t pathlen,
                      char *err, size_t errlen);

/* Close f; returns 0, or -1 with a message naming path if a write failed. */
int report_tsv_close(FILE *f, const char *path, char *err, size_t errlen);

/* A number for a TSV cell: "%.6g", or "nan" (gnuplot reads both). */
const char *report_num(char *buf, size_t n, double v);


#endif
