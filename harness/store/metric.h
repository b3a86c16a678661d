/*
 * metric.h — the names of registry metrics, built and read in one place.
 *
 * A metric row is (run, step, split, name, params, value).  A metric has one
 * form, the one the registry stores and every reader sees (SQL, the Python
 * package, `gatelab metrics`): a name, the quantity without its parameters,
 * and params, the parameters as canonical JSON ("{}" when none).  Training and
 * evaluation log bare names ("loss", "bpc", "final.loss", …; params "{}").
 * The analyses log names with parameters, and every writer and reader of
 * those goes through this module (metric_key), so the grammar below is the
 * only place it is written:
 *
 *   statistic (split "analysis"):  <stat>  {"layer":L,"head":H,"category":C}, each key optional
 *       alpha_mean {"layer":1,"head":0}   alpha_mean {"layer":1,"category":"semantic"}   expected_depth {}
 *   intervention (split "ablation"):  <mode>.<quantity>  {"gates":"<label>","category":C}
 *       zero.delta_loss {"gates":"all"}   zero.delta_loss {"gates":"L1H0"}   random.base_loss {"gates":"all"}
 *   early exit (split "ablation"):  exit.<quantity>  {"tau":<τ, 3 decimals>,"category":C},
 *       exit.loss {"tau":null} (the full model); the same for post-hoc early
 *       exit of a dense model: posthoc.loss {"tau":0.500}
 *   paired analysis (split "analysis"):  <family>.<quantity>  {"partner":"<run>","seed":N}
 *       difficulty.rho {"partner":"dense-run","seed":22}
 *   headline (split = the evaluated data split, "val" or "test"):  final.<quantity>,
 *       hard.<quantity>, hard_paper.<quantity>, matched.<quantity>, matched_paper.<quantity>, params {}
 *
 * Keys always come in the order layer, head, gates, tau, category, partner,
 * seed, so equal parameters are equal text and SQL matches them with "=".
 *
 * A metric also has a label, for people and for the claim plans that name
 * metrics (analysis/paper/claims.h: "ablation/zero.all.delta_loss"): metric_label
 * writes it (alpha_mean.L1.H0, zero.L1H0.delta_loss, exit.tau0.500.loss,
 * exit.full.loss, difficulty.RUN.seed22.rho; a name without parameters is its
 * own label).  Labels are only written, never taken apart.
 *
 * Every row also carries what it was measured on (store/registry.h gl_prov:
 * split, windows, tokens) and the checkpoint step; the key never does.
 *
 * Tokens (stat, mode, label, quantity) are non-empty and hold no '.'.  A gate
 * label is "all", "L<layer>" (every gate of a block), "L<layer>H<head>" (one
 * KV head) or several joined by '+'.  Layers and heads count from 0;
 * categories are the codes of store/categories.h (cat_name).
 *
 * Builders return 0, or -1 when a token is empty or holds a '.', or the key
 * does not fit (the key then holds ""); they never truncate.  Parsers read a
 * key's parts: 1 when it has the form asked for, 0 when not.
 */
#ifndef GATELAB_STORE_METRIC_H
#define GATELAB_STORE_METRIC_H

#include <stddef.h>

#define METRIC_NAME_MAX 96   /* bytes of a name, with its terminating 0 */
#define METRIC_NONE (-1)     /* no layer, head or category in a name */
#define METRIC_EXIT_MODE "exit"  /* the mode of early-exit rows */
#define METRIC_POSTHOC_MODE "posthoc" /* post-hoc early exit of a dense model: the same grammar as exit */
#define METRIC_LABEL_ALL "all"   /* the label of every gate of the model */

/* A metric as stored: the name (the quantity without its parameters) and
 * the parameters as canonical JSON. */
#define METRIC_PARAMS_MAX 160  /* bytes of a params text, with its terminating 0 */
typedef struct {
    char name[METRIC_NAME_MAX];      /* alpha_mean, zero.delta_loss, exit.loss, final.loss, loss */
    char params[METRIC_PARAMS_MAX];  /* {"layer":1,"head":0}, {"gates":"all"}, {"tau":0.500}, {} */
} metric_key;

/* A name without parameters (params "{}"): loss, final.loss, expected_depth. */
int metric_plain(metric_key *k, const char *name);

/* ---- statistics: <stat> {"layer":L,"head":H,"category":C} ---- */

/* layer, head and cat may each be METRIC_NONE (the key left out); a head needs a layer. */
int metric_stat(metric_key *k, const char *stat, int layer, int head, int cat);

/* 1 when k is statistic stat with only the parameters above; each of
 * *layer, *head, *cat is set, METRIC_NONE where the key is absent. */
int metric_stat_parse(const metric_key *k, const char *stat, int *layer, int *head, int *cat);

/* ---- interventions: <mode>.<quantity> {"gates":"<label>","category":C} ---- */

/* label: a gate label (letters, digits, '+'; no '.'). */
int metric_ablation(metric_key *k, const char *mode, const char *label, const char *quantity, int cat);

/* Early exit at threshold tau (NaN: the full model, {"tau":null}). */
int metric_exit(metric_key *k, double tau, const char *quantity, int cat);
/* The same under another threshold mode: METRIC_EXIT_MODE or METRIC_POSTHOC_MODE
 * (posthoc.loss {"tau":0.500}, posthoc.loss {"tau":null}). */
int metric_exit_mode(metric_key *k, const char *mode, double tau, const char *quantity, int cat);
/* 1 when mode's parameter is a threshold (exit, posthoc). */
int metric_tau_mode(const char *mode);

typedef struct {
    char mode[32];      /* zero, mean, full-depth, random, file, exit */
    char label[64];     /* all, L1, L1H0, L1H0+L2 …; for a threshold: full or tau0.500 (as metric_label writes it) */
    char quantity[32];  /* loss, base_loss, delta_loss, ppl_ratio, active_frac, tlops_saved … */
    int cat;            /* category code, METRIC_NONE for all tokens */
    double tau;         /* threshold rows with a τ: τ; NaN otherwise */
} metric_ablation_key;

/* The parts of an intervention or early-exit key: 1, or 0 when k has neither form. */
int metric_ablation_parse(const metric_key *k, metric_ablation_key *a);

/* The key of another quantity or category of the intervention a was parsed
 * from (a's mode and gates or τ kept). */
int metric_ablation_sibling(metric_key *k, const metric_ablation_key *a, const char *quantity, int cat);

/* ---- headline: final.<quantity> (the whole split at the end of training)
 *      and matched.<quantity> (early exit at the τ matched to a TSA run's α) ---- */

#define METRIC_FINAL "final"
#define METRIC_HARD "hard"   /* the same split with the skipping done (routed models; TSA: gatelab's sparse form) */
#define METRIC_HARD_PAPER "hard_paper" /* TSA: the same split and windows as hard.*, skipped in the TSA paper's
                                          sparse form (SPARSE_PAPER, model/model.h) */
#define METRIC_MATCHED "matched"
#define METRIC_MATCHED_PAPER "matched_paper" /* early exit at τ chosen by the TSA paper's protocol (13 values, 30
                                                 random batches; run/evaluate.h eval_match_paper) */

/* kind is METRIC_FINAL, METRIC_HARD, METRIC_HARD_PAPER, METRIC_MATCHED or METRIC_MATCHED_PAPER; quantity a
 * token. */
int metric_headline(metric_key *k, const char *kind, const char *quantity);

/* 1 when k is kind.<quantity> without parameters (quantity copied to out, qn bytes). */
int metric_headline_parse(const metric_key *k, const char *kind, char *quantity, size_t qn);

/* ---- paired analyses (split "analysis"): <family>.<quantity> {"partner":"<run>","seed":N} ----
 *
 * A statistic of this run measured against a partner run, with the seed of
 * its resampling (bootstrap).  The partner is a token of letters, digits,
 * '_', '-' and '+' (a run id). */
#define METRIC_DIFFICULTY "difficulty"

int metric_partner(metric_key *k, const char *family, const char *partner, unsigned long seed,
                   const char *quantity);

/* ---- gate labels ---- */

/* "L<layer>" (head METRIC_NONE) or "L<layer>H<head>". */
int metric_label_gate(char *out, size_t n, int layer, int head);

/* 1 when label names exactly one block ("L<l>", *head = METRIC_NONE) or one
 * KV head ("L<l>H<h>"). */
int metric_label_gate_parse(const char *label, int *layer, int *head);

/* ---- labels: the readable one-string form, for display and claim plans ----
 *
 *   alpha_mean {"layer":1,"head":0,"category":"semantic"}  ->  alpha_mean.L1.H0.semantic
 *   zero.delta_loss {"gates":"L1H0+L2"}                     ->  zero.L1H0+L2.delta_loss
 *   exit.loss {"tau":0.500}  ->  exit.tau0.500.loss          exit.loss {"tau":null}  ->  exit.full.loss
 *   difficulty.rho {"partner":"RUN","seed":22}              ->  difficulty.RUN.seed22.rho
 *   any name with params "{}" (or NULL)                     ->  the name
 *
 * 0, or -1 when params is not a text this module writes or the label does
 * not fit in n bytes; out then holds "<name> <params>", cut to n bytes, so a
 * display can still show the row as stored. */
int metric_label(const char *name, const char *params, char *out, size_t n);

#endif
