/*
 * claims.h — published claims as data (experiments/paper/claims.ini, format
 * in docs/report.md) and the one evaluator that judges every row against a
 * run set (runset.h) with the statistics kernel (stats.h).
 *
 * A row names the paper's text and number, the runs it picks, the quantity
 * (one of a small table: value, diff, rel, within, vs_curve, rho, bench_*),
 * the metric(s) it reads, the partner axis of a paired quantity, the
 * threshold and its side, and guards (floor, ceiling) that make a row
 * uninformative.  Rows of one claim are combined into the claim's verdict.
 * Published numbers live only in the file; this code holds none.
 *
 * Verdicts (every threshold judged on the interval, never the mean):
 *   reproduced         the interval lies wholly on the claimed side, and the
 *                      paper's number (when given) inside it;
 *   direction reproduced, magnitude differs
 *                      the interval on the claimed side, the paper's number
 *                      outside it;
 *   not reproduced     the interval lies wholly on the other side;
 *   inconclusive       the interval straddles the threshold (or there is no
 *                      interval: one seed, one measurement);
 *   uninformative      a guard fired (every variant at a trivial
 *                      heuristic's level, or the reference at the ceiling);
 *   not measured       the rows it needs are absent (the reason is printed);
 *   described          the row has no threshold: a number for the reader.
 */
#ifndef GATELAB_ANALYSIS_PAPER_CLAIMS_H
#define GATELAB_ANALYSIS_PAPER_CLAIMS_H

#include <stddef.h>

#include "analysis/runs/runset.h"
#include "analysis/core/stats.h"

#define CLAIMS_TEXT 1024
#define CLAIMS_ELEMS 8

typedef enum {
    CV_NOT_MEASURED,
    CV_YES,
    CV_MAGNITUDE,
    CV_NO,
    CV_INCONCLUSIVE,
    CV_UNINFORMATIVE,
    CV_DESCRIBED,
    CV_NOT_REACHED, /* the row's premise failed: its operating point (α) is further from the paper's than
                     * alpha_within; measured, shown, not judged */
    CV_PREMISE,     /* a premise the claims file states failed (premise =): measured, shown, not judged */
} claims_verdict;

/* One row of a claims file, as written (values are the file's text). */
typedef struct {
    char id[32];           /* the section name: "1a" */
    char claim[32];        /* the claim it belongs to: "1", "3 (paper scale)" */
    char paper[CLAIMS_TEXT];
    double paper_value;    /* in the row's units before `scale` (NaN: none) */
    char quantity[24];
    char runs[CLAIMS_TEXT];       /* pick: "key=value" words */
    char metric[CLAIMS_TEXT];     /* "split/name|split/name": the first present is used */
    char metric_b[CLAIMS_TEXT];   /* the partner's (diff, rel) or the second (within); default metric */
    char versus[CLAIMS_TEXT];     /* "axis=value" for diff, rel, vs_curve, then optional "key=value" words that
                                   * narrow the partners to one (a key the run's config lacks reads as its default) */
    char curve[128];              /* vs_curve: "split/prefix" of the partner's τ rows (…tau<τ>.loss, .active_frac) */
    char alpha_metric[CLAIMS_TEXT]; /* the operating point's α (lambda=@alpha, vs_curve) */
    double alpha;                 /* the paper's α for lambda=@alpha (NaN: none) */
    double alpha_within;          /* lambda=@alpha: the largest |mean α − alpha| accepted (NaN: any) */
    char expect[16];              /* above, below, within, none */
    double threshold;
    double threshold_hi;          /* expect = within LO HI: the upper end (threshold the lower) */
    double effect;                /* the distance from the threshold a power statement uses when the paper gives no
                                   * number (paper_value): NaN none — no underpowered verdict, the MDE alone */
    char effect_source[128];      /* where effect comes from ("PREREGISTRATION.md, Common rules") */
    double range_lo, range_hi;    /* the quantity's range in the row's units before `scale` (NaN: unbounded): a t
                                   * interval that leaves it is not given; the seeds are shown instead */
    int primary;                  /* 1: a primary endpoint named before the runs (Holm across them) */
    char premise[CLAIMS_TEXT];    /* "": none; else a premise of the claim that the data show failed (e.g. "matched
                                   * accuracy" where one side collapsed), said in the row: measured, not judged */
    char decide[64];              /* each: the label of the one element that decides the row ("scale s, 2000 steps");
                                   * the others are shown with their own verdicts, secondary.  "": every element must
                                   * hold */
    char form[16];                /* TSA rows: the model form read, gatelab or paper ("" not a TSA row) */
    char alpha_def[16];           /* TSA rows: α's definition, hard (on validation, skipping done) or soft (the
                                   * paper's mean p over tokens and blocks) */
    char sparse[16];              /* TSA rows: the sparse form, gatelab (the whole block skipped) or paper (the FFN's
                                   * compute only) */
    char each[48];                /* "": one group; words of lambda, scale, steps, n_layer: one element per group,
                                   * labelled by them; "block": one element per gated block */
    char across[16];              /* "": none; scale, steps or n_layer (one of each's words): judge the element
                                   * at that axis's largest value − the one at its smallest (Welch) */
    char reading[16];             /* "": none; "trend": across's element read as flips/shrinks/persists/grows;
                                   * "start" / "mechanism": Q1's sentence from this row and its `given` pair */
    char given[CLAIMS_TEXT];      /* reading start/mechanism: "RUNS ; VERSUS" of the reference pair it reads against */
    char pilot[64];               /* the value that replaces "@pilot" in runs and versus ("": not yet chosen) */
    char agg[32];                 /* analysis patterns: mean, gini, share_below X */
    double floor, ceiling;        /* guards (NaN: none) */
    char bench_a[96], bench_b[96];
    double scale;                 /* display multiplier (100: per cent) */
    char unit[16];
    int digits;
    char note[CLAIMS_TEXT];
    char pareto[64];              /* "saved LABEL" / "cost LABEL": the paper's value is that point's x (share saved)
                                   * or y (loss ÷ dense − 1) on the Pareto figure; "" none */
    int context;                  /* 1: shown, not part of the claim's verdict */
} claims_row;

/* A line of the report's first screen (`[summary N]`): the claims it covers, in plain words, and the
 * row (and optionally the element of it) whose number it shows. */
typedef struct {
    char claims[64];          /* claim numbers separated by spaces: "1 2"; a claim N covers the rows whose claim
                               * is N or begins "N (" */
    char text[CLAIMS_TEXT];   /* the claims in plain words */
    char row[32];             /* the row whose number is shown */
    char element[64];         /* its element's label ("1000 steps"); "" the first */
    char scale[CLAIMS_TEXT];  /* the scale tested at, against the paper's */
} claims_summary;

/* A question of the plan (`[question N]`: text, the ids of the rows that answer it, and the
 * plan groups whose runs they read). */
typedef struct {
    char text[CLAIMS_TEXT];
    char rows[CLAIMS_TEXT];   /* row ids separated by spaces, each a row of the file */
    char groups[CLAIMS_TEXT]; /* plan groups separated by spaces ("" none): the report checks each against
                               * the plan, and a question with runs left there is not answered */
} claims_question;

/* A line of the paper's results table beside ours (`[table N]`): the benchmark and model as the paper's table
 * names them, its numbers as text, the runs of ours that are the same model at the same settings, and the
 * metric each column reads (alternatives by '|', the first every run has; "" the column does not apply).
 * Described, not judged: the rows named in `rows` judge it. */
enum {
    CLAIMS_COL_SOFT,         /* quality, every block run (soft) */
    CLAIMS_COL_SPARSE_PAPER, /* quality, the skipping done in the paper's sparse form (or the paper's exit) */
    CLAIMS_COL_SPARSE_OURS,  /* quality, the skipping done in gatelab's form */
    CLAIMS_COL_ALPHA_PAPER,  /* α as the paper defines it */
    CLAIMS_COL_ALPHA_HARD,   /* α on validation with the skipping done */
    CLAIMS_COL_TLOPS,        /* share of token-layer operations saved (a fraction; printed in per cent) */
    CLAIMS_COLS
};
typedef struct {
    char benchmark[256];
    char model[128];
    char paper[CLAIMS_TEXT];  /* the paper's numbers, as its table states them */
    char runs[CLAIMS_TEXT];   /* pick: "key=value" words, as a row's runs (no "@" values) */
    char col[CLAIMS_COLS][160];
    char rows[256];           /* row ids that judge this line, separated by spaces ("" none) */
} claims_table;

/* One column of a [table] line over its runs: the metric read, how many runs have it, mean and range. */
typedef struct {
    char key[160];            /* the alternative read ("" the column does not apply) */
    int n;
    double mean, lo, hi;      /* over the runs that have it (NaN when n = 0) */
} claims_cell;

typedef struct {
    int n_runs;               /* the finished runs the line's pick selects */
    claims_cell c[CLAIMS_COLS];
} claims_table_result;

typedef struct {
    claims_row *rows;
    int n;
    char disclosures[32][CLAIMS_TEXT];
    int n_disclosures;
    claims_question questions[16];
    int n_questions;
    claims_summary summary[12];
    int n_summary;
    claims_table tables[16];
    int n_tables;
    char title[CLAIMS_TEXT];
    char data_title[64];      /* [report] data_title: how the report names the base data set in its figures
                               * ("Tiny Shakespeare"); "" the data set's own name */
} claims_file;

/* One element of a row's result (a row with `each` has one per group). */
typedef struct {
    char label[64];
    double at;             /* the across axis's value of the element's runs (scale rank, steps, n_layer) */
    st_summary s;          /* the deciding quantity; lo/hi its interval */
    int interval;          /* 0 t over seeds, 1 interquartile range (dispersion), 2 bootstrap of one run, 3 none,
                            * 4 t over seeds cut to the quantity's range (it left it; the seeds are shown) */
    double p;              /* one-sided p of the t test that the mean is on the claimed side (NaN: none) */
    double mde;            /* minimum detectable effect at its n (NaN: n < 2) */
    int underpowered;      /* the paper's distance from the threshold is below the MDE */
    claims_verdict v;
    char ours[CLAIMS_TEXT];
} claims_elem;

typedef struct {
    const claims_row *row;
    claims_verdict v;
    claims_elem e[CLAIMS_ELEMS];
    int ne;
    char why[CLAIMS_TEXT];       /* not measured: the reason; otherwise notes */
    char premise[512];           /* "" or why the row is not judged though measured (operating point not reached) */
    int primary_m;               /* a primary row: how many rows Holm corrected across (0: not primary) */
    double p_holm;               /* a primary row: its Holm-adjusted one-sided p (NaN otherwise) */
    char measured[CLAIMS_TEXT];  /* what was read: metric chosen, soft/hard, operating point */
    char runs[1024];             /* run ids used */
    char commits[160];           /* commits that trained them */
    char kernels[96];            /* the OpenBLAS kernels they recorded, distinct */
    int unrecorded;              /* how many of them recorded no kernel (trained before it was recorded) */
    char basis[256];             /* data, scale, budget, seeds */
} claims_result;

/* Read a claims file.  Returns 0, or -1 with a message naming the file, the
 * line and what to write instead.  claims_free releases it. */
int claims_load(const char *path, claims_file *cf, char *err, size_t errlen);
int claims_parse(const char *text, const char *name, claims_file *cf, char *err, size_t errlen);
void claims_free(claims_file *cf);

/* The paper's α for TSA's operating point on data set data: the `alpha` of
 * the first row that picks `depth_routing=tsa lambda=@alpha` with a `data=`
 * word matching data (a trailing '*' matches a prefix); NaN when no row does.
 * `paper post` matches early exit to it, so the published numbers live only
 * in the claims file. */
double claims_operating_alpha(const claims_file *cf, const char *data);

/* The row claims_operating_alpha reads, narrowed to the model form form
 * ("gatelab" also matches a row without `form`; NULL: any form); NULL when
 * no row matches. */
const claims_row *claims_operating_row(const claims_file *cf, const char *data, const char *form);

/* 1 when row's runs pick experiment (its `experiment=` word: alternatives by
 * '|', a trailing '*' a prefix; a row without one picks every experiment). */
int claims_row_experiment(const claims_row *row, const char *experiment);

/* Read a [table] line over rs: the runs its pick selects and each column's mean and range. */
void claims_table_eval(const claims_table *t, const runset *rs, claims_table_result *out);

/* The keys of a [table] section's columns, in column order ("soft", "sparse_paper", …). */
extern const char *const claims_table_keys[CLAIMS_COLS];

/* Judge row against rs into res. */
void claims_eval(const claims_row *row, const runset *rs, claims_result *res);

/* The combined verdict of the rows of one claim (context rows left out). */
claims_verdict claims_combine(const claims_result *res, int n, const char *claim);

/* The same over every row of claim number num: claim "num" and every "num (…)". */
claims_verdict claims_combine_number(const claims_result *res, int n, const char *num);

/* Holm's step-down correction across the rows marked primary = 1: each primary row's verdict is
 * re-judged at its Holm-adjusted level (reproduced / not reproduced only where the adjusted one-sided
 * p is below 0.025); *m gets how many rows are primary, adj[i] (n slots, NaN elsewhere) each primary
 * row's adjusted p. */
void claims_holm(claims_result *res, int n, int *m, double *adj);

const char *claims_verdict_name(claims_verdict v);

/* An element's number in a few words for the report's first screen: "+0.0042 nats [−0.0076 nats,
 * +0.0160 nats] (95 % interval, n = 3)", or what stands in for an interval. */
void claims_elem_brief(const claims_row *row, const claims_elem *e, char *out, size_t n);

/* Helpers of claims_file.c that claims.c shares: a number (0, or -1 when v is
 * not one entirely) and a string trimmed of spaces, tabs and '\r' in place. */
int claims_num(const char *v, double *out);
char *claims_trim(char *s);
/* Replace every "@pilot" of src by val into out (n bytes).  0, or -1 when
 * the result does not fit or still holds "@pilot" (val and the text around
 * it make a new one: the row could never be judged as written). */
int claims_pilot_subst(const char *src, const char *val, char *out, size_t n);
/* The value word of key in a runs text ("data=tinyshakespeare scale=@base": "tinyshakespeare" for
 * "data") into out; "" when the text has no key=. */
void claims_pick_value(const char *pick, const char *key, char *out, size_t n);

/* The base data set: the data= word of the file's first row that picks scale=@base or @top (such a row
 * names exactly one data set: claims_parse refuses one that does not); "" when no row does.  The
 * report's figures draw its runs. */
void claims_base_data(const claims_file *cf, char *out, size_t n);

/* The base scale of the runs of data set data (that of its SATFormer runs, else of any of its runs;
 * "" none): what scale=@base means in a row whose runs say data=DATA. */
void claims_base_scale(const runset *rs, const char *data, char *out, size_t n);

#endif
