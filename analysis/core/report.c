/*
 * report.c — sinks for analysis results: registry metric rows, TSV files,
 * folders, and repository paths (report.h).
 *
 * What it does not do: compute anything, choose metric names (the analyses
 * do), or talk SQL (registry.c does, through db_metrics_log).
 */
#include "analysis/core/report.h"

#include <errno.h>
#include <libgen.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/fileio.h"

int report_metric_add(report_metrics *rm, long step, const char *split, const metric_key *key, double value,
                      char *err, size_t errlen) {
    return report_metric_add_se(rm, step, split, key, value, NAN, err, errlen);
}

int report_metric_add_se(report_metrics *rm, long step, const char *split, const metric_key *key, double value,
                         double se, char *err, size_t errlen) {
    if (strlen(split) >= sizeof rm->splits[0]) {
        snprintf(err, errlen, "metric split %s of %s is too long (at most %d bytes)", split, key->name,
                 (int)sizeof rm->splits[0] - 1);
        return -1;
    }
    if (rm->n == rm->cap) {
        int cap = rm->cap ? 2 * rm->cap : 256;
        gl_metric *rows = realloc(rm->rows, (size_t)cap * sizeof *rows);
        if (rows) rm->rows = rows;
        metric_key *keys = rows ? realloc(rm->keys, (size_t)cap * sizeof *keys) : NULL;
        if (keys) rm->keys = keys;
        char(*splits)[16] = keys ? realloc(rm->splits, (size_t)cap * sizeof *splits) : NULL;
        if (splits) rm->splits = splits;
        if (!splits) {
            snprintf(err, errlen, "out of memory for %d metric rows", cap);
            return -1;
        }
        rm->cap = cap;
    }
    rm->keys[rm->n] = *key;
    snprintf(rm->splits[rm->n], sizeof rm->splits[0], "%s", split);
    gl_metric *g = &rm->rows[rm->n];
    g->step = step;
    g->value = value;
    g->wall_time = 0;
    g->name = g->params = NULL;
    g->split = NULL;
    g->prov = rm->prov;
    g->se = se;
    rm->n++;
    return 0;
}

int report_metric_find(const report_metrics *rm, const char *split, const metric_key *key, double *value) {
    for (int i = rm->n - 1; i >= 0; i--)
        if (!strcmp(rm->keys[i].name, key->name) && !strcmp(rm->keys[i].params, key->params) &&
            !strcmp(rm->splits[i], split)) {
            *value = rm->rows[i].value;
            return 1;
        }
    return 0;
}

int report_metrics_flush(report_metrics *rm, gl_db *db, const char *run_id, char *err, size_t errlen) {
    if (!rm->n) return 0;
    for (int i = 0; i < rm->n; i++) {
        rm->rows[i].name = rm->keys[i].name;
        rm->rows[i].params = rm->keys[i].params;
        rm->rows[i].split = rm->splits[i];
    }
    int rc = db_metrics_log(db, run_id, rm->rows, rm->n, err, errlen);
    if (rc == 0) rm->n = 0;
    return rc;
}

void report_metrics_free(report_metrics *rm) {
    if (!rm) return;
    free(rm->rows);
    free(rm->keys);
    free(rm->splits);
    rm->rows = NULL;
    rm->keys = NULL;
    rm->splits = NULL;
    rm->n = rm->cap = 0;
}

FILE *report_tsv_open(const char *dir, const char *name, const char *header, char *path_out, size_t pathlen,
                      char *err, size_t errlen) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (path_out) snprintf(path_out, pathlen, "%s", path);
    FILE *f = fileio_fopen_w(path);
    if (!f) {
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
        return NULL;
    }
    fprintf(f, "%s\n", header);
    return f;
}

int report_tsv_close(FILE *f, const char *path, char *err, size_t errlen) {
    if (!f) return 0;
    int bad = ferror(f);
    if (fclose(f) || bad) {
        snprintf(err, errlen, "writing %s failed (disk full?): %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

const char *report_num(char *buf, size_t n, double v) {
    if (isnan(v)) snprintf(buf, n, "nan");
    else snprintf(buf, n, "%.6g", v);
    return buf;
}

