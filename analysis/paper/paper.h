/*
 * paper.h — the reproduction report of the SATFormer and TSA papers
 * (REPORT.md) and the per-run view the `paper post` stage and the paper
 * figures read.
 *
 * Everything comes from the registry through the run set (runset.h), the
 * claims file experiments/paper/claims.ini (claims.h: one row per tested
 * statement, judged by one evaluator) and the plan that made the runs
 * (experiments/paper/PRESET.plan); nothing is typed by hand.  docs/report.md
 * describes the claims file, the verdicts and the rules.
 */
#ifndef GATELAB_ANALYSIS_PAPER_PAPER_H
#define GATELAB_ANALYSIS_PAPER_PAPER_H

#include <stddef.h>

#include "store/registry.h"
#include "analysis/render/tables.h"

/* One finished run with what the claims read. NaN = not measured. */
typedef struct {
    runset_row t;            /* identity: data, variant, scale, seed, λ, ... */
    char value[16], depth[16], cross[16]; /* model.value_residual, depth_routing, cross_layer */
    long steps, batch, seq_len;
    double loss, loss_se;    /* final.* on the whole validation split (nats/token) */
    double alpha, tlops;     /* final.active_frac, final.tlops_saved (routed models) */
    double hard_alpha;       /* hard.active_frac: α with the skipping done (TSA; NaN: not recorded) */
    double tok_acc, seq_acc; /* final.* (synthetic tasks) */
    double m_loss, m_alpha, m_tau, m_target, m_tlops; /* matched.* (early exit at TSA's α) */
    double zero_dl, mean_dl; /* ablation: ΔL with every gate zeroed / set to its mean */
    gl_prov loss_prov;       /* what loss (final.*) was measured on; its step is loss_step */
    long loss_step;
    gl_prov zero_prov;       /* what zero_dl was measured on */
    double train_tps;        /* mean training tokens/s (first log row skipped) */
    double wall_s;           /* seconds training: gaps between training metrics, pauses left out */
    double t0, t1;           /* wall time (unix s) of the first and last training metric */
    double late_alpha, early_alpha;     /* SATFormer: mean α of the later / earlier half of blocks ≥ 1 */
    double late_sem, late_other;        /* mean α of later-half blocks on semantic / other tokens */
    double head_gini;        /* Gini of per-(block, head) mean α: 0 even, 1 all on one head */
    unsigned long long depth_key; /* runset_partner_key(run, "depth_routing"): equal = partners along depth_routing */
    int d_model, n_layer;    /* its shape, with seq_len and batch: what a step costs (the plan's cost to finish) */
    int threads;             /* train.threads of its config (1 when unset): wall_s × threads is its core-seconds */
} paper_run;

/* The FINISHED runs of the plan (experiments paper-GROUP) with the fields above.
 * *runs is malloc'd (the caller frees it).  Returns 0 or -1. */
int paper_collect(gl_db *db, paper_run **runs, int *n, char *err, size_t errlen);

/* The partner of like that differs from it only in depth_routing (depth:
 * "none", "tsa", "early_exit"), by the run set's one partner rule
 * (runset_partner: the same config but for the seed's bookkeeping and the
 * routing's own keys, the same seed); NULL when there is none.  The first
 * such run when several (TSA at several λ). */
const paper_run *paper_depth_partner(const paper_run *runs, int n, const paper_run *like, const char *depth);

/* TSA's λ* for a data set and scale: the λ whose mean α over seeds is
 * nearest target (the paper's α for the claim: claims_operating_alpha).  The
 * α is the hard one (hard.active_frac, the skipping done) when every TSA run
 * of that data and scale has it recorded, else the soft final.active_frac;
 * *hard (may be NULL) says which.  Returns 1 found, 0 none. */
int paper_lambda_star(const paper_run *runs, int n, const char *data, const char *scale, double target, int *hard,
                      double *lambda);

/* Write out_dir/REPORT.md for the runs of preset (plan_path lists the groups,
 * their claims and the sweep arguments that made them; results is where the
 * registry lives, for the regenerate commands).  *n_rows gets the claims
 * written.  Returns 0 or -1. */
int paper_report(gl_db *db, const char *preset, const char *plan_path, const char *results, const char *out_dir,
                 int *n_rows, char *err, size_t errlen);

/* Two-sided 95 % Student t quantile for df degrees of freedom (df ≥ 1). */
double paper_t95(int df);

#endif
