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

#include "analysis/core/stats.h"
#include "model/gatekind.h"

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
    const int n = (int)per_row; /* the statistics kernel counts in int: a row is P × width values */
    double *buf = malloc((per_row ? per_row : 1) * sizeof *buf);
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
            const float *src = a + (size_t)s * per_step + (size_t)r * per_row;
            for (size_t i = 0; i < per_row; i++) buf[i] = src[i];
            const double m = st_describe(buf, n, 0.95).mean;
            st_sort(buf, n);
            fprintf(f, "%ld\t%.6g\t%.6g\t%.6g\t%.6g\t%.6g\t%.6g\n", td->step[s], st_quantile_sorted(buf, n, 0.05),
                    st_quantile_sorted(buf, n, 0.25), st_quantile_sorted(buf, n, 0.5), st_quantile_sorted(buf, n, 0.75),
                    st_quantile_sorted(buf, n, 0.95), m);
        }
        written++;
    }
    free(buf);
    if (fileio_commit(&out, "gate-band table", err, errlen)) return -1;
    *rows_out = written;
    return 0;
}
