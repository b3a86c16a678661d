/*
 * heads.c — head ranking by single-gate zero ablation (heads.h): "which
 * heads read V1".
 *
 * It ranks the per-(block, KV head) gate of any variant whose row in the gate
 * table (model/gatekind.h) is ablated per head (GABL_HEAD).
 *
 * What it does not do: choose evaluation tokens (ablate_init does), load
 * runs or draw (cmd_heads and figures.c do).  The statistics beside each
 * ΔL come from gates_stats.c on the baseline pass's own gate values, so the
 * two columns describe the same tokens.
 */
#include "analysis/measure/heads.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/core/gates.h"
#include "model/gatekind.h"

static int heads_cmp(const void *a, const void *b) {
    const heads_row *x = a, *y = b;
    /* NaN sorts last */
    int xn = isnan(x->delta), yn = isnan(y->delta);
    if (xn != yn) return xn - yn;
    if (!xn && x->delta != y->delta) return x->delta < y->delta ? 1 : -1;
    if (x->layer != y->layer) return x->layer - y->layer;
    return x->kv_head - y->kv_head;
}

int heads_rank(ablate_ctx *c, heads_row **rows_out, int *n_out, ablate_eval *base, char *err, size_t errlen) {
    gl_model *m = c->m;
    const int L = m->cfg.n_layer, Hkv = m->cfg.n_kv_head;
    *rows_out = NULL;
    *n_out = 0;
    if (gatekind_find(&m->cfg, GABL_HEAD) < 0) {
        snprintf(err, errlen, "heads ranks per-(block, KV head) gates; this model has value_residual = %s, which "
                              "has none (for ResFormer use `gatelab ablate RUN --mode zero --layers N`)",
                 config_value_residual_name(m->cfg.value_residual));
        return -1;
    }
    const size_t ntok = (size_t)c->eval_windows * m->T;
    int rc = -1, k = 0;
    float *alpha = malloc((size_t)L * ntok * Hkv * sizeof(float));
    double *scratch = malloc(ntok * sizeof(double));
    unsigned char *sel = calloc((size_t)L * Hkv, 1);
    heads_row *rows = calloc((size_t)L * Hkv, sizeof *rows);
    if (!alpha || !scratch || !sel || !rows) {
        snprintf(err, errlen, "out of memory for the gates of %zu evaluation tokens", ntok);
        goto cleanup;
    }
    if (ablate_baseline(c, base, alpha, err, errlen)) goto cleanup;
    for (int n = 0; n < L; n++) {
        if (!ablate_block_gated(m, n)) continue;
        for (int j = 0; j < Hkv; j++) {
            heads_row *r = &rows[k++];
            r->layer = n;
            r->kv_head = j;
            const float *a = alpha + (size_t)n * ntok * Hkv + j;
            r->alpha_mean = gates_mean(a, (long)ntok, Hkv);
            r->frac_zero = gates_frac_zero(a, (long)ntok, Hkv);
            r->gini = gates_gini(a, (long)ntok, Hkv, scratch);
            memset(sel, 0, (size_t)L * Hkv);
            sel[n * Hkv + j] = 1;
            ablate_result res;
            if (ablate_run(c, ABLATE_ZERO, sel, base, &res, err, errlen)) goto cleanup;
            r->delta = res.delta;
            r->delta_se = res.delta_se;
            r->ppl_ratio = res.ppl_ratio;
            memcpy(r->delta_cat, res.delta_cat, sizeof r->delta_cat);
        }
    }
    qsort(rows, (size_t)k, sizeof *rows, heads_cmp);
    *rows_out = rows;
    *n_out = k;
    rows = NULL;
    rc = 0;
cleanup:
    free(alpha);
    free(scratch);
    free(sel);
    free(rows);
    return rc;
}

void heads_write_markdown(FILE *f, const heads_row *rows, int n, const ablate_eval *base, const char *eval_desc) {
    fprintf(f, "Gates ranked by the loss increase when only that gate is zeroed (gate = 0), on %s "
               "(%.0f scored tokens; baseline loss %.4f nats/token).\n\n",
            eval_desc, base->tokens, base->loss);
    fprintf(f, "| rank | block | KV head | ΔL (nats/token) | exp(ΔL) | mean gate | gate = 0 share | Gini(gate) |\n");
    fprintf(f, "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    for (int i = 0; i < n; i++) {
        const heads_row *r = &rows[i];
        fprintf(f, "| %d | %d | %d | %+.5f | %.4f | %.4f | %.3f | %.3f |\n", i + 1, r->layer, r->kv_head, r->delta,
                r->ppl_ratio, r->alpha_mean, r->frac_zero, r->gini);
    }
}

void heads_write_tsv(FILE *f, FILE *grid, const heads_row *rows, int n, int n_layer, int n_kv_head) {
    char b[8][32];
    fprintf(f, "rank\tlayer\tkv_head\tdelta_loss\tppl_ratio\talpha_mean\tfrac_zero\tgini\tdelta_structural"
               "\tdelta_functional\tdelta_semantic\n");
    for (int i = 0; i < n; i++) {
        const heads_row *r = &rows[i];
        fprintf(f, "%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", i + 1, r->layer, r->kv_head,
                report_num(b[0], 32, r->delta), report_num(b[1], 32, r->ppl_ratio), report_num(b[2], 32, r->alpha_mean),
                report_num(b[3], 32, r->frac_zero), report_num(b[4], 32, r->gini), report_num(b[5], 32, r->delta_cat[0]),
                report_num(b[6], 32, r->delta_cat[1]), report_num(b[7], 32, r->delta_cat[2]));
    }
    if (!grid) return;
    fprintf(grid, "layer\tkv_head\tdelta_loss\n");
    for (int l = 0; l < n_layer; l++)
        for (int j = 0; j < n_kv_head; j++) {
            double v = NAN;
            for (int i = 0; i < n; i++)
                if (rows[i].layer == l && rows[i].kv_head == j) v = rows[i].delta;
            fprintf(grid, "%d\t%d\t%s\n", l, j, report_num(b[0], 32, v));
        }
}
