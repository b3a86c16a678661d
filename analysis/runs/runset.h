/*
 * runset.h — the finished runs of a registry, loaded once, and the two rules
 * every view shares: which runs are "the same run but for the seed" (a
 * group), and which run is the paired partner of another along a named axis.
 *
 * A run carries its identity as every view shows it (runset_row: data, scale,
 * variant label, seed, λ, the headline with its provenance), its typed
 * configuration (the registry's stored config text, and the routing, value
 * residual and budget read from it), the commit that trained it, and every
 * latest metric of the splits val, test, ablation, analysis, bench and train by
 * "split/name" key with its provenance and step.
 *
 * The group rule (runset_group_key): two runs are the same but for the seed
 * when every "section.key = value" of their stored configs is equal except
 *   train.seed                              the seed itself;
 *   train.threads                           how many cores computed it;
 *   train.log_every, train.ckpt_every       logging and checkpoint cadence;
 *   log.*                                   run bookkeeping: results folder,
 *                                           run name, experiment, trace and
 *                                           probe settings.
 * Everything else (budget, schedule, eval_every, data, model) is part of the
 * experiment.  The fields compared are the manifest's typed walk of the
 * stored config (runset_resolve, runset_group_each: manifest_each_key, the
 * canonical text of each value, never a line parser) less, as in its identity
 * text (store/manifest.h manifest_identity_text), a *late* key (one added after
 * runs existed: data.tokenizer, model.sat_gate, model.mod_capacity,
 * train.weight_decay_policy, …) at its default, so a run
 * registered before the key existed, whose config lacks it, groups with a new
 * run at the default — the sweep's run identity and this rule are one rule.
 * A run without a stored config is a group of its own.
 *
 * The partner rule (runset_partner): the partner of run a along axis X with
 * value v is the run whose config equals a's in every key except the
 * ignored keys above (but with the same train.seed) and the keys of axis X
 * (runset.c's axis table: depth_routing also frees the routing's own knobs
 * tsa_lambda, router_*, exit_weighting, tsa_form, exit_form; value_residual the ResFormer knobs;
 * …), and whose X is v.  So TSA at λ 0.05 seed 2 pairs with the dense run of
 * the same data, scale, budget and seed, wherever in the plan it was trained.
 */
#ifndef GATELAB_ANALYSIS_RUNS_RUNSET_H
#define GATELAB_ANALYSIS_RUNS_RUNSET_H

#include <stddef.h>

#include "store/manifest.h"
#include "store/registry.h"

#define RUNSET_KEY_MAX 160

/* One run as every view shows it (tables, figures, the paper's claims): identity, variant label, the
 * headline with its provenance, the statistics the tables print.  Filled by runset_load_set from the
 * registry's views (run_variant, run_headline) and a few set-wide reads. */
typedef struct {
    char run_id[128], experiment[128];
    char data[64];      /* task name, or the text file's base name without extension */
    int text;           /* 1: text task (bpc meaningful) */
    char variant[64];   /* baseline | resformer | satformer, "[softmax,bias,wd=all]" (non-default SATFormer
                           knobs), "+tsa" / "+early_exit" / "+<cross_layer>" appended */
    char scale[32];     /* model.scale, else "d{d_model}L{n_layer}" */
    char seed[32];
    double lambda;      /* model.tsa_lambda (NaN unless TSA) */
    double knob;        /* the routing's compute knob (routing kinds table: λ, mod_capacity, random_alpha); NaN none */
    const char *knob_sym, *routing; /* its symbol ("λ") and the routing's name ("TSA"); NULL without a knob */
    double val_loss, val_bpc, tok_acc, seq_acc, tokens_per_s, active_frac, tlops_saved; /* NaN: absent */
    double settled;     /* TSA / early exit: analyze's settled_at_halt, the latest (NaN: absent) */
    int headline;       /* 1: the val numbers are the headline (val/final.*); 0: the last periodic evaluation */
    double val_se;      /* standard error of val_loss (NaN: unknown) */
    long val_step;      /* the checkpoint step of the val numbers (-1: none) */
    gl_prov val_prov;   /* what the val numbers were measured on */
    double bench_tps, bench_rss; /* `make bench` cost runs: bench/train_tokens_per_s, bench/peak_rss_mib */
    unsigned long long group;    /* hash of runset_group_key (analysis/runs/runset.h): equal = same run but for the seed */
    double hard_alpha, hard_loss; /* val/hard.active_frac, val/hard.loss: TSA with the skipping done (NaN: absent) */
    double soft_loss;   /* a routed model (TSA, early exit): val/final.loss, every block run (NaN otherwise);
                           its val_loss, α, TLOps, accuracy are then the hard.* ones (db_run_headline) */
    int hard_missing;   /* a routed model whose hard.* rows are not recorded: the val numbers are its soft ones */
    char axis[3][32];            /* model.value_residual, depth_routing, cross_layer ("none" when absent) */
    unsigned long long partner[3]; /* runset_partner_key_ini along each of those axes (0: no config) */
} runset_row;

/* One latest metric row: key "split/name". */
typedef struct {
    char key[RUNSET_KEY_MAX];
    double value, se; /* NaN when absent / none */
    long step;
    gl_prov prov;
} runset_value;

typedef struct {
    runset_row t;           /* identity, label, headline: what every view shows */
    char value_residual[32], depth_routing[32], cross_layer[32];
    long steps, batch, seq_len, n_layer, n_kv_head;
    char commit[48];        /* git commit that trained it ("" unknown) */
    int dirty;              /* 1 trained from a dirty tree, 0 clean, -1 unknown */
    char kernels[64];       /* OpenBLAS kernels its attempts ran on ("" not recorded) */
    char *config;           /* stored config text (owned; NULL: none) */
    char *group;            /* the group key (owned) */
    runset_value *m;        /* sorted by key (owned) */
    int nm;
} runset_run;

typedef struct {
    runset_run *r;
    int n;
} runset;

/* Load the runs f selects (store/registry.h gl_set_filter: status, experiment, prefix), in the order
 * of `gatelab runs` (experiment, then run id), in a handful of statements over the whole set
 * (db_set_*: runs with run_variant's label, params, run_headline's val rows, the latest rows of val,
 * test, ablation, analysis and bench, training throughput, kernels), never per run.  The headline and
 * the label are the views'; the group and partner keys come from each stored config (below).
 * Returns 0, or -1 with a message; rs is empty on failure.  runset_free releases it (and accepts an
 * empty or half-built one). */
int runset_load_set(gl_db *db, const gl_set_filter *f, runset *rs, char *err, size_t errlen);

/* The FINISHED runs whose experiment starts with prefix (NULL or "": all): runset_load_set. */
int runset_load(gl_db *db, const char *prefix, runset *rs, char *err, size_t errlen);
void runset_free(runset *rs);

/* 1 when "section.key" is left out of the group key (the list above). */
int runset_key_ignored(const char *section, const char *key);

/* A stored config resolved by the manifest's own parser (manifest_load_text), so every value read
 * from it is the typed walk's canonical text; malloc'd (the caller frees it), NULL when it is not a
 * config this gatelab reads (or out of memory). */
gl_manifest *runset_resolve(const char *ini);

/* The group key of a stored config: a "section.key=value" line per field the group rule compares
 * (runset_group_each), in canonical order.  A config this gatelab cannot read is keyed by its text
 * itself (a group only with the very same text, and no partners).  malloc'd; NULL when out of memory. */
char *runset_group_key(const char *ini);

/* The fields the group rule compares of a resolved config: the typed walk (manifest_each_key) less
 * the ignored keys above and the late keys at their default.  fn("section.key", canonical text, ctx)
 * for each, in canonical order; stops at fn's first non-zero return and returns it (else 0). */
int runset_group_each(const gl_manifest *mf, int (*fn)(const char *key, const char *text, void *ctx), void *ctx);

/* 1 when a and b are the same run but for the seed. */
int runset_same_group(const runset_run *a, const runset_run *b);

/* The partner of a along axis ("depth_routing", "value_residual",
 * "cross_layer", "task", "tsa_lambda", "scale") whose axis value is value, or
 * NULL (no such run, or an unknown axis). */
const runset_run *runset_partner(const runset *rs, const runset_run *a, const char *axis, const char *value);

/* A hash of what runset_partner compares along axis (the config less the
 * ignored keys, seed kept, less the axis's keys): two runs are partners along
 * axis exactly when their keys are equal and their axis values differ as
 * asked.  0 for an unknown axis or a run without a config. */
unsigned long long runset_partner_key(const runset_run *r, const char *axis);

/* Every partner of a along axis with axis value value (runset_partner's
 * rule), the first max of them into out, in run-set order; returns how many
 * there are (more than max: the count, out holds max).  A view that must be
 * unambiguous narrows them further and refuses more than one. */
int runset_partners(const runset *rs, const runset_run *a, const char *axis, const char *value,
                    const runset_run **out, int max);

/* The same from a stored config text (NULL: 0), for views that hold the
 * text rather than a runset_run (tables.c's "vs baseline" cell). */
unsigned long long runset_partner_key_ini(const char *ini, const char *axis);

/* 1 when axis is a name runset_partner knows. */
int runset_axis_known(const char *axis);

/* The value of an axis of a run ("tsa", "none", "copy", …) into out. */
void runset_axis_value(const runset_run *r, const char *axis, char *out, size_t n);

/* The latest row of split/name, or NULL.  A '*' in key matches any run of
 * characters (the first matching key in sorted order), for names that carry
 * a parameter such as difficulty.<partner>.seed<N>.rho. */
const runset_value *runset_get(const runset_run *r, const char *key);

/* Its value (NaN when absent). */
double runset_num(const runset_run *r, const char *key);

/* A config parameter ("model.n_layer") into out as the typed walk writes it (the stored config
 * resolved by runset_resolve, so a late key it lacks reads as its default); 0 ("" then) for a run
 * without a config or with one this gatelab cannot read, a key the manifest does not know, and the
 * keys the group rule ignores (log.*, the cadence: bookkeeping, not parameters; train.seed is one). */
int runset_param(const runset_run *r, const char *key, char *out, size_t n);

/* The same, but a run whose config is absent or unreadable reads the key's default
 * (manifest_defaults): returns 1 with the value, 0 only for a key the manifest does not know (or
 * one the group rule ignores). */
int runset_param_or_default(const runset_run *r, const char *key, char *out, size_t n);

#endif
