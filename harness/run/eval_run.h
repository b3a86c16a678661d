/*
 * eval_run.h — one evaluation of a run's checkpoint as `gatelab eval` and
 * `gatelab paper post` ask for it, and its recording as the run's headline:
 * the library entry point behind both (the command line parses flags into an
 * evalrun_opts and prints an evalrun_result; it measures nothing itself).
 *
 * Where the pieces live: the evaluation loop and its modes (soft, hard,
 * early exit at τ, τ matched to an α) are run/evaluate.h; the headline's
 * metric rows are run/headline.h; this file opens the run and its data,
 * checks the options against the model, finds a --match-run partner's
 * headline α in the registry, and chains those calls.  What a RUN argument
 * names (an id, a prefix, a folder) is the command line's resolver
 * (harness/cli/resolve.h): an evalrun_target is what it found.  Ablations,
 * the trace analysis and difficulty routing are analysis/pipeline/measure.h.
 *
 * Messages keep the command's flag names (--match-run, --sparse, --tau):
 * they are what the user typed, whoever called.
 */
#ifndef GATELAB_RUN_EVAL_RUN_H
#define GATELAB_RUN_EVAL_RUN_H

#include <stddef.h>

#include "run/evaluate.h"
#include "store/data.h"
#include "store/registry.h"
#include "store/tasks.h" /* GL_PATH_MAX */

/* A run as a measurement takes it: what the command line's resolver found.
 * Only the fields a call names are read; the strings are borrowed. */
typedef struct {
    const char *id;      /* the run id: its registry row and folder name */
    const char *dir;     /* its folder (config.ini, ckpt); "" or NULL when it has none */
    const char *results; /* the results folder that holds it (figures/) */
    const char *db;      /* its registry, gatelab.db */
} evalrun_target;

typedef struct {
    evalrun_target run;     /* id, dir and db are read */
    const char *text;       /* NULL: the split; else a file whose bytes are evaluated (no record) */
    gl_split split;         /* SPLIT_VAL, SPLIT_TEST or SPLIT_TRAIN */
    const char *split_name; /* its name as recorded: "val", "test" or "train" */
    long windows;           /* the first N windows; 0: all (a record needs 0) */
    int batch;              /* sequences per forward pass (the command's default: 16) */
    int sparse;             /* TSA, mod, random: also evaluate with real skipping (the hard.* of a record) */
    int sparse_form;        /* with sparse: 0 gatelab's skipping, 1 the TSA paper's (SPARSE_PAPER, model.h; TSA only;
                               a record writes it as hard_paper.*, beside gatelab's hard.* measured too: the
                               registry's hard.* rows are always gatelab's form) */
    int record_sparse_only; /* with record and sparse_form 1: write only hard_paper.*, not the headline (final.*,
                               hard.*), which must be recorded already on the same windows and tokens: `paper post`
                               adding the paper's sparse form to a run measured before it existed */
    double tau;             /* >= 0: early exit at this threshold; < 0: none */
    double match_alpha;     /* >= 0: early exit at the τ whose α is within 0.005 of it; < 0: none */
    /* --match-run: the TSA run whose recorded headline α is the target (id and db read; dir names it in
     * messages); partner_arg (NULL: none) is how the user named it */
    const char *partner_arg;
    evalrun_target partner;
    int record; /* the result is to be recorded (evalrun_record): a routed model is also evaluated hard */
    /* how τ is matched to α (--tau-protocol): EVALRUN_TAU_GATELAB bisects τ on the whole split until α is
     * within 0.005 of the target (matched.*); EVALRUN_TAU_PAPER is the TSA paper's protocol: the 13
     * thresholds on 30 random batches of train.batch_size windows, the one whose α in the paper's convention
     * is nearest the target chosen (matched_paper.*; with --match-run the target is the TSA run's
     * train/alpha_paper.mean_evals, the paper's α) */
    int tau_protocol;
} evalrun_opts;
enum { EVALRUN_TAU_GATELAB = 0, EVALRUN_TAU_PAPER = 1 };

/* The defaults of `gatelab eval RUN`: the whole validation split, batch 16, no early exit. */
void evalrun_defaults(evalrun_opts *o);

typedef struct {
    char id[160];          /* the run id evaluated */
    char dir[GL_PATH_MAX]; /* its folder, as opened */
    long step;             /* the checkpoint's step */
    int is_text;           /* text data: bpc (else the task accuracies) */
    int n_layer, seq_len;  /* the model's */
    int routed;            /* depth_routing is not none: α and TLOps saved go in the headline */
    int counts;            /* config_routing_counts: the model logs α (equal_tlops_layers is meaningful) */
    int equal_tlops_layers; /* the dense n_layer of equal compute at soft's α (docs/model.md) */
    gl_eval_result soft;   /* the model as trained, on the split or text */
    gl_eval_result hard;   /* with the skipping done: --sparse, or the record's eval_split_hard */
    int have_sparse;       /* a --sparse pass was made: hard (gatelab's form) or paper_sparse (the paper's) */
    gl_eval_result paper_sparse; /* --sparse=paper: the TSA paper's sparse form (hard_paper.* of a record) */
    int have_paper_sparse; /* paper_sparse is measured */
    int have_hard;         /* hard is the headline's hard.* (a record of a model with hard routing; gatelab's form) */
    gl_eval_result exit;   /* early exit at tau (have_exit), exiting for real on the split (the paper's
                            * protocol too: τ chosen on its random batches, then the whole split at that τ) */
    int have_exit;         /* 1: --tau, 2: τ matched to alpha_target (3: by the paper's protocol) */
    gl_eval_result grid[EVAL_PAPER_N_TAUS]; /* the paper's protocol: every threshold's random-batch evaluation */
    int paper_best;        /* have_exit 3: the index in grid of the chosen threshold (the official reading) */
    int closest_only;      /* the match missed ±0.005: exit is the closest α reached */
    double tau;            /* the early-exit threshold (-1: none) */
    double alpha_target;   /* the α matched (-1: none) */
    double partner_loss;   /* --match-run: the partner's headline loss on the same split (NaN: none) */
} evalrun_result;

/* Open o->run's checkpoint and data, check the options against the model
 * (--sparse needs sparse routing, --tau and --match-alpha early exit,
 * --match-run the partner's headline on the whole split), and evaluate into
 * *r.  Returns 0, or -1 with a message in err.  Nothing is written. */
int evalrun_measure(const evalrun_opts *o, evalrun_result *r, char *err, size_t errlen);

/* Write r (a whole-split evaluation: o->text NULL, o->windows 0, no --tau)
 * to o->run.db as o->run.id's headline (run/headline.h: final.*, hard.* when
 * r->have_hard) and, when an α was matched, its matched.* rows (matched_paper.*
 * under the paper's τ protocol); with r->have_paper_sparse also hard_paper.*
 * (only those under o->record_sparse_only, after checking that the recorded
 * hard.* read the same windows and tokens).  Returns 0, or -1 with a message. */
int evalrun_record(const evalrun_opts *o, const evalrun_result *r, char *err, size_t errlen);

#endif
