/*
 * args.h — the command line of every gatelab subcommand: one table of flags
 * per command, read with glibc's getopt_long, and the pieces every command
 * repeats (numbers through store/parse.h with the flag named, the registry
 * path, the run id of a run folder, TransformerLens head names).  Which run
 * a RUN argument names is resolve.h's.
 *
 * A command declares its flags once:
 *
 *   static const args_opt eval_opts[] = {
 *       {"windows", ARGS_KEY(0), "N", "evaluate the first N windows (default: all)"},
 *       {"sparse", ARGS_KEY(1), NULL, "TSA: also run real skipping"},
 *       {0}};
 *   static const args_spec eval_spec = {"eval", "RUN [options]", "What eval does.", eval_opts};
 *
 * and reads them in a loop:
 *
 *   args_parser p;
 *   args_begin(&p, &eval_spec, argc, argv);
 *   for (int k; (k = args_next(&p)) != ARGS_END;) {
 *       if (k < 0) return args_exit_code(k);          // --help printed (0) or a bad flag (2)
 *       if (k == ARGS_POS) ... p.val is a positional argument ...
 *       if (k == ARGS_KEY(0) && args_get_long(&p, 1, LONG_MAX, &windows)) return 2;
 *   }
 *
 * -h/--help is added to every table: it prints the usage, the description
 * and one line per flag to stdout (the flags are listed from the same table
 * getopt_long reads, so the help cannot forget one).  An unknown flag, an
 * abbreviated one (getopt_long's prefix matching is refused: `--tau` must not
 * quietly mean `--taus`) or a flag without its value prints one line ending
 * "see gatelab CMD --help" to stderr; an unknown or abbreviated long flag
 * close to one of the table's (edit distance, args_suggest) says "did you
 * mean --NAME?".  A flag with a fixed set of values (args_get_choice) takes
 * them in any case.  --name=value and --name value both work.
 * Positional arguments come back in the order given (getopt_long with a
 * leading '-'), also after "--".
 */
#ifndef GATELAB_HARNESS_CLI_ARGS_H
#define GATELAB_HARNESS_CLI_ARGS_H

#include <getopt.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>

#define ARGS_MAX_OPTS 48
#define ARGS_KEY(n) (256 + (n)) /* the key of a flag without a one-letter form */

enum {
    ARGS_END = 0,  /* no more arguments */
    ARGS_POS = 1,  /* a positional argument, in p.val */
    ARGS_HELP = -1, /* --help was printed to stdout: exit 0 */
    ARGS_BAD = -2,  /* a bad flag was reported on stderr: exit 2 */
};

typedef struct {
    const char *name; /* long name without "--"; NULL ends the table */
    int key;          /* what args_next returns: a letter (also accepted as -x) or ARGS_KEY(n) */
    const char *arg;  /* metavariable of the value ("N", "FILE"), or NULL for a switch */
    const char *help; /* one line */
} args_opt;

typedef struct {
    const char *cmd;      /* "eval", or "paper" */
    const char *synopsis; /* what follows "gatelab CMD" in the usage line */
    const char *about;    /* a few lines printed under it, or NULL */
    const args_opt *opts; /* ends with {0} */
} args_spec;

typedef struct {
    const args_spec *spec;
    int argc;
    char **argv;
    const char *val; /* the value of the flag just read, or the positional argument */
    char flag[64];   /* the flag just read as typed without its value: "--windows", "-j" */
    int rest;        /* after "--": index of the next positional argument */
    struct option lo[ARGS_MAX_OPTS + 2];
    char shorts[3 * ARGS_MAX_OPTS + 4];
} args_parser;

/* Start reading argv (argv[0] is the command's name, e.g. "eval").  Resets
 * getopt's global state, so commands may call each other in one process. */
void args_begin(args_parser *p, const args_spec *spec, int argc, char **argv);
/* The next flag's key, ARGS_POS, ARGS_END, or ARGS_HELP / ARGS_BAD (printed). */
int args_next(args_parser *p);
/* 0 for ARGS_HELP, 2 otherwise: the exit code of a command that stops on k < 0. */
int args_exit_code(int k);

/* The usage block of spec (usage line, description, one line per flag). */
void args_print_help(const args_spec *spec, FILE *f);
/* spec's line of `gatelab --help`: "  gatelab CMD SYNOPSIS" with the first
 * "[options]" of the synopsis written out from the flag table ("[-j|--jobs N]
 * [--dry-run] ..."; flags the synopsis names already are left out), or the
 * flags appended when the synopsis has no "[options]". */
void args_print_line(const args_spec *spec, FILE *f);
/* "gatelab CMD: <message>; see gatelab CMD --help" on stderr; returns 2 (bad usage). */
int args_usage_error(const args_spec *spec, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The current flag's value as a number by store/parse.h's rules, in [lo, hi]:
 * 0 and *out set, or -1 after "gatelab CMD: --flag 'value': reason" on stderr. */
int args_get_long(const args_parser *p, long lo, long hi, long *out);
int args_get_int(const args_parser *p, int lo, int hi, int *out);
int args_get_u64(const args_parser *p, uint64_t *out);
int args_get_double(const args_parser *p, double lo, double hi, double *out);
/* The current flag's value as one of choices ("table,csv,json"), in any case
 * ("JSON" is json): 0 and *index, or -1 after "gatelab CMD: --flag 'value':
 * expected table, csv or json" (with "did you mean" for a near miss). */
int args_get_choice(const args_parser *p, const char *choices, int *index);

/* The same numbers for a flag read by hand (cmd names the command; kept for
 * commands that read a value outside args_next). */
int args_long(const char *cmd, const char *flag, const char *value, long lo, long hi, long *out);
int args_int(const char *cmd, const char *flag, const char *value, int lo, int hi, int *out);
int args_u64(const char *cmd, const char *flag, const char *value, uint64_t *out);
int args_double(const char *cmd, const char *flag, const char *value, double lo, double hi, double *out);

/* The one of names[0..n) closest to typed (store/editdist.h, without case) when it is close enough to be the
 * word meant (at most 2 edits, and fewer than half of typed's letters), else
 * NULL.  A tie between two names is no suggestion. */
const char *args_suggest(const char *typed, const char *const *names, int n);

/* The registry a command uses: db when given, else <results>/gatelab.db, with
 * results resolved by run_results_dir (--results, $GATELAB_RESULTS, "results"). */
void args_db_path(const char *db, const char *results, char *out, size_t n);
/* The run id of a run folder: its last path component. */
void args_run_id(const char *run_dir, char *out, size_t n);

/* A comma list of integers in [lo, hi] ("1,3") given to flag: 0, or -1 with a
 * message naming the flag and the bad item (store/parse.h's reason). */
int args_int_list(const char *flag, const char *list, int lo, int hi, char *err, size_t errlen);
/* A list of gates (flag: "--heads", "--gate") in either spelling, "2:0,3:1"
 * or TransformerLens's "L2H0,L3H1" (case-insensitive, mixed freely),
 * rewritten as "2:0,3:1" into out.  Returns 0, or -1 with a message naming
 * the flag and the bad item. */
int args_heads(const char *flag, const char *heads, char *out, size_t n, char *err, size_t errlen);

#endif
