/*
 * attrib.h — attribution patching (`gatelab heads RUN --attribution`): the
 * first-order estimate of zeroing each gate, from one backward pass per
 * batch, beside the exact effect of zeroing it.
 *
 * A site is a per-head gate of a block (GABL_HEAD rows of the gate table:
 * SATFormer α, the static head gate; KV head j of block n) or a router
 * (GABL_ROUTE: TSA p of router l, feeding block l+1).  For the mean task loss
 * L over the evaluation tokens, the estimate of setting gate value x of
 * token t to 0 is the first-order change
 *
 *   a(t, site) = (0 − x)·∂L/∂x        i.e. −α·∂L/∂α  and  −p·∂L/∂p,
 *
 * summed over tokens for a site (≈ ΔL of zeroing it everywhere, nats/token)
 * and over sites for a token.  The exact ΔL is measured as `ablate --mode
 * zero` does for a head (the override GATE_CONST 0) and, for a router, with
 * its p forced to 0 on every token (ROUTE_TOKEN).  The agreement is the
 * Spearman rank correlation over the sites (average ranks for ties).
 *
 * The gradient is the task loss's: TSA's depth penalty is switched off for
 * the backward (tsa_lambda = 0, forward values unchanged).  Early-exit models
 * are refused (their training loss weights every exit head, not the final
 * head's loss that the exact ΔL measures).  Following Nanda (2023),
 * "Attribution patching: activation patching at industrial scale".
 */
#ifndef GATELAB_ANALYSIS_MEASURE_ATTRIB_H
#define GATELAB_ANALYSIS_MEASURE_ATTRIB_H

#include <stddef.h>

#include "analysis/measure/ablate.h"

typedef struct {
    int gate, row, col; /* gate table row; block (head gate) or router; KV head (0 for a router) */
    double attrib;      /* Σ_t a(t, site): first-order ΔL of zeroing the site (nats/token) */
    double exact;       /* the measured ΔL (nats/token) */
    double exact_se;    /* its paired standard error (NaN: one cluster) */
} attrib_site;

typedef struct {
    attrib_site *sites; /* [n] in gate-table order: heads by block then head, then routers */
    int n;
    double rho;         /* Spearman rank correlation of attrib and exact over the sites (NaN: fewer than 2) */
    double base_loss;   /* the unmodified model on the evaluation windows (nats/token) */
    double tokens;      /* scored tokens */
    long positions;     /* evaluation positions, eval_windows · T */
    float *tok;         /* (positions) Σ over sites of a(t, site) for the token at each position */
    int *tok_id;        /* (positions) its token id */
} attrib_result;

/* Estimate and measure every site of c->m on c's evaluation windows.
 * Returns 0, or -1 with a message (no site, an early-exit model). */
int attrib_run(ablate_ctx *c, attrib_result *r, char *err, size_t errlen);
void attrib_free(attrib_result *r); /* accepts a zeroed result */

/* Spearman's ρ of x and y (n each; average ranks for ties); NaN for n < 2 or a constant column. */
double attrib_spearman(const double *x, const double *y, int n);

/* "L2H1" or "router 3". */
void attrib_site_label(const attrib_site *s, char *out, size_t n);

#endif
