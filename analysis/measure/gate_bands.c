/*
 * gate_bands.c — quantile bands of a gate over training (gate_bands.h),
 * read from the trace's rows (model/gatekind.h layout: (S, rows, P[, width])).
 * Quantiles are type 7 (linear between order statistics, as R's default and
 * difficulty.c's), on a sorted copy; the mean in double.
 */
#include "store/fileio.h"
#include "analysis/measure/gate_bands.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/gatekind.h"

static int gb_cmp(const void *a, const void *b) {
    const float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

static double gb_q(const float *v, size_t n, double q) {
    const double h = (double)(n - 1) * q;
    const size_t lo = (size_t)h;
    return lo + 1 < n ? v[lo] + (h - (double)lo) * (v[lo + 1] - v[lo]) : v[n - 1];
}

int gate_bands_write(const gl_trace_data *td, gl_gate g, const char *path, int *rows_out, char *err, size_t errlen) {
    const float *a = td->gate[g];
    *rows_out = 0;
    if (!a || !gatekind_per_token(g)) {
        snprintf(err, errlen, "gate bands: the trace has no per-token %s", gatekind_info[g].key);
        return -1;
    }
    long dims[3];
    gatekind_dims(g, td->n_layer, td->n_kv_head, td->n_probe, dims);
    const int rows = (int)dims[0];
    const size_t per_row = (size_t)td->n_probe * gatekind_width(g, td->n_kv_head), per_step = (size_t)rows * per_row;
    float *buf = malloc((per_row ? per_row : 1) * sizeof(float));
    fileio_out out; /* the output rule (fileio.h): a link or a special file at path is refused */
    if (!buf) {
        snprintf(err, errlen, "gate bands: out of memory for %s", path);
        return -1;
    }
    if (fileio_begin_own(&out, path, "gate-band table", NULL, err, errlen)) {
        free(buf);
        return -1;
    }
    FILE *f = out.f;
    const char *rname = gatekind_info[g].axis[0] == GAX_ROUTER ? "router" : "block";
    int written = 0;
    for (int r = 0; r < rows; r++) {
        int any = 0;
        for (int s = 0; s < td->n_steps && !any; s++)
            for (size_t i = 0; i < per_row && !any; i++) any = a[(size_t)s * per_step + (size_t)r * per_row + i] != 0.0f;
        if (!any) continue;
        fprintf(f, "%s%s %d\tq05\tq25\tq50\tq75\tq95\tmean\n", written ? "\n\n" : "", rname, r);
        for (int s = 0; s < td->n_steps; s++) {
            memcpy(buf, a + (size_t)s * per_step + (size_t)r * per_row, per_row * sizeof(float));
            double m = 0.0;
            for (size_t i = 0; i < per_row; i++) m += buf[i];
            qsort(buf, per_row, sizeof(float), gb_cmp);
            fprintf(f, "%ld\t%.6g\t%.6g\t%.6g\t%.6g\t%.6g\t%.6g\n", td->step[s], gb_q(buf, per_row, 0.05),
                    gb_q(buf, per_row, 0.25), gb_q(buf, per_row, 0.5), gb_q(buf, per_row, 0.75),
                    gb_q(buf, per_row, 0.95), m / (double)per_row);
        }
        written++;
    }
    free(buf);
    if (fileio_commit(&out, "gate-band table", err, errlen)) return -1;
    *rows_out = written;
    return 0;
}
