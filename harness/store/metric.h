/*
 * metric.h — the names of registry metrics, built and parsed in one place.
 *
 * A metric row is (run, step, split, name, value).  Training and evaluation
 * log bare names ("loss", "bpc", "active_frac", "tokens_per_s", …).  The
 * analyses log structured names, and every writer and reader of those goes
 * through this module, so the grammar below is the only place it is written:
 *
 *   statistic (split "analysis"):  <stat>[.L<layer>[.H<head>]][.<category>]
 *       alpha_mean.L1.H0   alpha_mean.L1   alpha_mean.L1.semantic   tokens.functional   expected_depth
 *   intervention (split "ablation"):  <mode>.<label>.<quantity>[.<category>]
 *       zero.all.delta_loss   zero.L1H0.delta_loss   mean.L2.delta_loss.semantic   random.all.base_loss
 *   early exit (split "ablation"):  exit.tau<τ, 3 decimals>.<quantity>[.<category>],  exit.full.loss
 *       and the same for post-hoc early exit of a dense model:  posthoc.tau0.500.loss,  posthoc.full.loss
 *   headline (split = the evaluated data split, "val" or "test"):  final.<quantity>,  hard.<quantity>,
 *   matched.<quantity>
 *       final.loss   final.bpc   final.active_frac   final.p_mid_share   hard.loss   hard.active_frac
 *       matched.tau   matched.loss   matched.partner_loss
 *
 * Every row also carries what it was measured on (store/registry.h gl_prov:
 * split, windows, tokens) and the checkpoint step; the name never does.
 *
 * Tokens (stat, mode, label, quantity) are non-empty and hold no '.', except
 * an early-exit label "tau0.500", whose dot belongs to the number.  A gate
 * label is "all", "L<layer>" (every gate of a block), "L<layer>H<head>" (one
 * KV head) or several joined by '+'.  Layers and heads count from 0;
 * categories are the codes of store/categories.h (cat_name).
 *
 * Builders return 0, or -1 when a token is empty or holds a '.', or the name
 * does not fit in n bytes (out then holds ""); they never truncate.  Parsers
 * return 1 when the name has the form asked for, 0 when not.
 */
#ifndef GATELAB_STORE_METRIC_H
#define GATELAB_STORE_METRIC_H

#include <stddef.h>

#define METRIC_NAME_MAX 96   /* bytes of a name, with its terminating 0 */
#define METRIC_NONE (-1)     /* no layer, head or category in a name */
#define METRIC_EXIT_MODE "exit"  /* the mode of early-exit rows */
#define METRIC_POSTHOC_MODE "posthoc" /* post-hoc early exit of a dense model: the same grammar as exit */
#define METRIC_LABEL_ALL "all"   /* the label of every gate of the model */

/* ---- statistics: <stat>[.L<layer>[.H<head>]][.<category>] ---- */

/* layer, head and cat may each be METRIC_NONE; a head needs a layer. */
int metric_stat(char *out, size_t n, const char *stat, int layer, int head, int cat);

/* 1 when name is exactly stat followed by the optional parts above; each of
 * *layer, *head, *cat is set, METRIC_NONE where the part is absent. */
int metric_stat_parse(const char *name, const char *stat, int *layer, int *head, int *cat);

/* ---- interventions: <mode>.<label>.<quantity>[.<category>] ---- */

int metric_ablation(char *out, size_t n, const char *mode, const char *label, const char *quantity, int cat);

/* Early exit at threshold tau (NaN: the full model, label "full"). */
int metric_exit(char *out, size_t n, double tau, const char *quantity, int cat);
/* The same under another threshold mode: METRIC_EXIT_MODE or METRIC_POSTHOC_MODE
 * (posthoc.tau0.500.loss, posthoc.full.loss). */
int metric_exit_mode(char *out, size_t n, const char *mode, double tau, const char *quantity, int cat);
/* 1 when mode's labels are thresholds (exit, posthoc). */
int metric_tau_mode(const char *mode);

typedef struct {
    char mode[32];      /* zero, mean, full-depth, random, file, exit */
    char label[64];     /* all, L1, L1H0, L1H0+L2 …; for exit: full or tau0.500 */
    char quantity[32];  /* loss, base_loss, delta_loss, ppl_ratio, active_frac, tlops_saved … */
    int cat;            /* category code, METRIC_NONE for all tokens */
    double tau;         /* exit rows with a threshold: τ; NaN otherwise */
} metric_ablation_key;

/* Split an intervention or early-exit name into its parts: 1, or 0 when name
 * has neither form. */
int metric_ablation_parse(const char *name, metric_ablation_key *k);

/* The name of another quantity or category of the intervention k was parsed
 * from (k's mode and label kept as written). */
int metric_ablation_sibling(char *out, size_t n, const metric_ablation_key *k, const char *quantity, int cat);

/* ---- headline: final.<quantity> (the whole split at the end of training)
 *      and matched.<quantity> (early exit at the τ matched to a TSA run's α) ---- */

#define METRIC_FINAL "final"
#define METRIC_HARD "hard"   /* the same split with the skipping done (routed models) */
#define METRIC_MATCHED "matched"

/* kind is METRIC_FINAL, METRIC_HARD or METRIC_MATCHED; quantity a token. */
int metric_headline(char *out, size_t n, const char *kind, const char *quantity);

/* 1 when name is kind.<quantity> (quantity copied to out, qn bytes). */
int metric_headline_parse(const char *name, const char *kind, char *quantity, size_t qn);

/* ---- paired analyses (split "analysis"): <family>.<partner run>.seed<N>.<quantity> ----
 *
 *   difficulty.<dense run>.seed<N>.rho  ->  stored as difficulty.rho  {"partner":"<dense run>","seed":N}
 *
 * A statistic of this run measured against a partner run, with the seed of
 * its resampling (bootstrap).  The partner is a token of letters, digits,
 * '_', '-' and '+' (a run id). */
#define METRIC_DIFFICULTY "difficulty"

int metric_partner(char *out, size_t n, const char *family, const char *partner, unsigned long seed,
                   const char *quantity);

/* ---- gate labels ---- */

/* "L<layer>" (head METRIC_NONE) or "L<layer>H<head>". */
int metric_label_gate(char *out, size_t n, int layer, int head);

/* 1 when label names exactly one block ("L<l>", *head = METRIC_NONE) or one
 * KV head ("L<l>H<h>"). */
int metric_label_gate_parse(const char *label, int *layer, int *head);

/* ---- stored form: base name + parameters as data ----
 *
 * The registry (schema 3) keeps the parameters out of the name: a row is
 * (name = base, params = canonical JSON).  By split:
 *   analysis   alpha_mean.L1.H0.semantic  -> alpha_mean  {"layer":1,"head":0,"category":"semantic"}
 *   ablation   zero.L1H0.delta_loss       -> zero.delta_loss  {"gates":"L1H0"}
 *              exit.tau0.500.loss         -> exit.loss  {"tau":0.500}
 *              exit.full.loss             -> exit.loss  {"tau":null}
 *              posthoc.tau0.500.loss      -> posthoc.loss  {"tau":0.500}
 *   analysis   difficulty.RUN.seed7.rho   -> difficulty.rho  {"partner":"RUN","seed":7}
 *   any other name, or one that would not come back whole:  name  {}
 * Keys always appear in the order layer, head, gates, tau, category, partner, seed, so equal
 * parameters are equal text. */
#define METRIC_PARAMS_MAX 160  /* bytes of a params text, with its terminating 0 */

/* Take the structured name (logged under split) apart into base and params.
 * Returns 0 (a name without parameters gives base = name, params "{}"), or
 * -1 when name does not fit in bn bytes. */
int metric_split(const char *split, const char *name, char *base, size_t bn, char *params, size_t pn);

/* The structured name of (base, params); params "" or "{}" gives base.
 * 0, or -1 when params is not a text metric_split writes. */
int metric_unsplit(const char *base, const char *params, char *out, size_t n);

#endif
