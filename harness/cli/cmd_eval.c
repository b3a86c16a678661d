/*
 * cmd_eval.c — `gatelab eval RUN [--text FILE | --split val|test] [--windows N]
 * [--sparse] [--tau T | --match-alpha A | --match-run TSA_RUN] [--batch B] [--results DIR] [--record]`.
 *
 * Prints one JSON line: loss (nats/token), bpc for text, tokens, windows,
 * accuracy for synthetic tasks, and for routed models the active fraction α,
 * the TLOps saved and tokens/s.  --record (whole split only) also writes the
 * result to the run's registry as its headline (run/headline.h): final.* rows,
 * and with --match-alpha the matched.* rows.  --sparse (TSA) evaluates both the soft model
 * and real skipping, side by side.  --tau T evaluates early exit at threshold
 * T; --match-alpha A finds τ by bisection on the validation split so that the
 * early-exit α is within 0.005 of A (the matched-compute comparison).
 * --match-run TSA_RUN takes A from that run's recorded headline α on the
 * same split (the whole split, so both runs are measured on one token set)
 * and records the pair: matched.alpha_target is α_TSA, matched.partner_loss
 * the TSA run's headline loss (the TSA run needs `eval TSA_RUN --record`
 * first; training records it at the end of every run).
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libgen.h>

#include "args.h"
#include "cli.h"
#include "store/fileio.h"
#include "run/evaluate.h"
#include "run/headline.h"
#include "store/data.h"
#include "store/registry.h"
#include "store/rundir.h"

/* "key":value with JSON's null for NaN or infinity (printf's "nan" is not JSON). */
static void json_num(const char *key, double v, const char *after) {
    if (isfinite(v)) printf("\"%s\":%.6f%s", key, v, after);
    else printf("\"%s\":null%s", key, after);
}

static void print_result(const char *label, const gl_eval_result *r, int text, int L, int T) {
    printf("\"%s\":{", label);
    json_num("loss", r->loss, ",");
    if (text) json_num("bpc", r->loss / log(2.0), ",");
    else {
        json_num("token_acc", r->tok_acc, ",");
        json_num("seq_acc", r->seq_acc, ",");
    }
    printf("\"tokens\":%.0f,\"windows\":%ld,", r->tokens, r->windows);
    json_num("active_frac", r->active_frac, ",");
    json_num("tlops_saved", eval_tlops_saved(r->active_frac, L), ",");
    printf("\"tokens_per_s\":%.1f}", r->seconds > 0 ? (double)r->windows * T / r->seconds : 0.0);
}

/* Evaluate either the text file's ids or the dataset split. */
static int run_eval(gl_run *run, const int *ids, size_t n_ids, const gl_dataset *ds, gl_split split,
                    long windows, gl_eval_result *r, char *err, size_t errlen) {
    if (ids) return eval_ids(&run->model, ids, n_ids, windows, r, err, errlen);
    return eval_split(&run->model, ds, split, windows, r, err, errlen);
}

/* The registry of the run's results folder: <run dir>/../../gatelab.db, and the run's id. */
static void eval_db_path(const gl_run *run, char *run_id, size_t idlen, char *db_path, size_t dblen) {
    char tmp[GL_PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s", run->dir);
    snprintf(run_id, idlen, "%s", basename(tmp));
    snprintf(tmp, sizeof tmp, "%s", run->dir);
    snprintf(db_path, dblen, "%s/gatelab.db", dirname(dirname(tmp)));
}

/* The headline α and loss of partner (a TSA run) on split, from the
 * registry: the target of --match-run.  Returns 0, or -1 with a message. */
static int partner_headline(const gl_run *run, const char *partner, const char *split_name, double *alpha,
                            double *loss, gl_prov *prov, char *err, size_t errlen) {
    char run_id[256], db_path[GL_PATH_MAX + 16];
    eval_db_path(run, run_id, sizeof run_id, db_path, sizeof db_path);
    gl_db *db = NULL;
    gl_metric_val a, l;
    int rc = db_open_readonly(&db, db_path, err, errlen), ka = 0, kl = 0;
    if (!rc) ka = db_metric_at(db, partner, split_name, "final.active_frac", NULL, &a, err, errlen);
    if (!rc && ka == 1) kl = db_metric_at(db, partner, split_name, "final.loss", &a.prov, &l, err, errlen);
    db_close(db);
    if (rc || ka < 0 || kl < 0) return -1;
    if (ka == 0 || kl == 0 || isnan(a.value)) {
        snprintf(err, errlen, "--match-run %s: that run has no headline α on the %s split in %s; record it with "
                              "`gatelab eval %s --split %s --record` (a TSA run)", partner, split_name, db_path, partner,
                 split_name);
        return -1;
    }
    *alpha = a.value;
    *loss = l.value;
    *prov = a.prov;
    return 0;
}

/* Write the whole-split result (and the matched early-exit point, when
 * match >= 0) to the registry of the run's results folder. */
static int record(const gl_run *run, const char *split_name, const gl_eval_result *soft, double match,
                  double partner_loss, double tau, const gl_eval_result *exit_r, char *err, size_t errlen) {
    char run_id[256], db_path[GL_PATH_MAX + 16];
    eval_db_path(run, run_id, sizeof run_id, db_path, sizeof db_path);
    const gl_model_config *mc = &run->model.cfg;
    const int text = run->mf.data.task == TASK_TEXT, L = mc->n_layer;
    gl_db *db = NULL;
    int rc = db_open(&db, db_path, err, errlen);
    if (!rc)
        rc = headline_record(db, run_id, run->st.step, split_name, soft, text, mc->depth_routing != DR_NONE, L, err,
                             errlen);
    if (!rc && match >= 0)
        rc = headline_record_matched(db, run_id, run->st.step, split_name, tau, match, partner_loss, exit_r, L, err,
                                     errlen);
    db_close(db);
    if (!rc) fprintf(stderr, "gatelab eval: recorded the headline of %s (step %ld, %s split) in %s\n", run_id,
                     run->st.step, split_name, db_path);
    return rc;
}

/* The bytes of the file at path as the run's token ids: *ids malloc'd (the
 * caller frees it, also on failure), *n_ids of them.  Returns 0, or -1 with a
 * message naming a byte missing from the run's vocabulary. */
static int read_text_ids(const gl_run *run, const char *text, int **ids_out, size_t *n_ids, char *err,
                         size_t errlen) {
    FILE *f;
    if (fileio_open_regular(text, "--text file", &f, err, errlen)) return -1; /* no hang on a FIFO */
    long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (n < 0 || fseek(f, 0, SEEK_SET) != 0) {
        snprintf(err, errlen, "--text %s: cannot find its length: %s", text, strerror(errno));
        fclose(f);
        return -1;
    }
    unsigned char *bytes = malloc(n > 0 ? (size_t)n : 1);
    int *ids = malloc((n > 0 ? (size_t)n : 1) * sizeof(int));
    *ids_out = ids;
    size_t got = bytes && ids ? fread(bytes, 1, (size_t)n, f) : 0;
    fclose(f);
    int bad = -1;
    for (size_t i = 0; i < got && bad < 0; i++) {
        int id = -1;
        for (int v = 0; v < run->st.vocab_size; v++)
            if (run->st.vocab[v] == bytes[i]) id = v;
        if (id < 0) bad = (int)i;
        else ids[i] = id;
    }
    if (bad >= 0) {
        snprintf(err, errlen, "%s: byte 0x%02x ('%c') at offset %d is not in the run's vocabulary of %d bytes", text,
                 bytes[bad], bytes[bad] >= 32 && bytes[bad] < 127 ? bytes[bad] : '?', bad, run->st.vocab_size);
        free(bytes);
        return -1;
    }
    free(bytes);
    *n_ids = got;
    return 0;
}

int cmd_eval(int argc, char **argv) {
    const char *arg = NULL, *text = NULL, *results = NULL, *split_name = "val", *partner = NULL;
    long windows = 0;
    int sparse = 0, batch = 16, rec = 0;
    double tau = -1, match = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int hv = i + 1 < argc;
        if (!strcmp(a, "--text") && hv) text = argv[++i];
        else if (!strcmp(a, "--windows") && hv) {
            if (args_long("eval", a, argv[++i], 1, LONG_MAX, &windows)) return 2;
        } else if (!strcmp(a, "--split") && hv) split_name = argv[++i];
        else if (!strcmp(a, "--sparse")) sparse = 1;
        else if (!strcmp(a, "--record")) rec = 1;
        else if (!strcmp(a, "--tau") && hv) {
            if (args_double("eval", a, argv[++i], 0, 1, &tau)) return 2;
        } else if (!strcmp(a, "--match-alpha") && hv) {
            if (args_double("eval", a, argv[++i], 0, 1, &match)) return 2;
        } else if (!strcmp(a, "--match-run") && hv) {
            partner = argv[++i];
        } else if (!strcmp(a, "--batch") && hv) {
            if (args_int("eval", a, argv[++i], 1, 4096, &batch)) return 2;
        } else if (!strcmp(a, "--results") && hv) results = argv[++i];
        else if (a[0] != '-' && !arg) arg = a;
        else {
            fprintf(stderr, "gatelab eval: unknown or incomplete argument '%s'\n", a);
            return 2;
        }
    }
    gl_split split = !strcmp(split_name, "test") ? SPLIT_TEST : !strcmp(split_name, "train") ? SPLIT_TRAIN : SPLIT_VAL;
    if (strcmp(split_name, "val") && strcmp(split_name, "test") && strcmp(split_name, "train")) {
        fprintf(stderr, "gatelab eval: --split '%s': must be val, test or train\n", split_name);
        return 2;
    }
    if (!arg) {
        fprintf(stderr, "usage: gatelab eval RUN [--text FILE | --split val|test] [--windows N] [--sparse] "
                        "[--tau T | --match-alpha A | --match-run TSA_RUN] [--batch B] [--results DIR] [--record]\n");
        return 2;
    }
    if (rec && (text || windows > 0 || tau >= 0 || sparse)) {
        fprintf(stderr, "gatelab eval: --record writes a headline, which is the whole split: drop --text, --windows, "
                        "--tau and --sparse\n");
        return 2;
    }
    static gl_run run;
    gl_dataset ds;
    memset(&ds, 0, sizeof ds);
    char err[1024];
    int rc = 1, *ids = NULL;
    size_t n_ids = 0;
    if (run_open(&run, arg, results, batch, err, sizeof err)) goto fail;
    gl_model *m = &run.model;
    const gl_model_config *mc = &m->cfg;
    if (sparse && mc->depth_routing != DR_TSA) {
        snprintf(err, sizeof err, "--sparse needs a TSA model; run %s has depth_routing = %s", arg,
                 config_depth_routing_name(mc->depth_routing));
        goto fail;
    }
    double partner_loss = NAN;
    gl_prov partner_prov;
    if (partner && (match >= 0 || text || windows > 0)) {
        snprintf(err, sizeof err, "--match-run takes α from the run %s on the whole split: drop --match-alpha, "
                                  "--text and --windows", partner);
        goto fail;
    }
    if (partner && partner_headline(&run, partner, split_name, &match, &partner_loss, &partner_prov, err, sizeof err))
        goto fail;
    if ((tau >= 0 || match >= 0) && mc->depth_routing != DR_EARLY_EXIT) {
        snprintf(err, sizeof err, "--tau and --match-alpha need an early-exit model; run %s has depth_routing = %s",
                 arg, config_depth_routing_name(mc->depth_routing));
        goto fail;
    }
    if (text) {
        if (read_text_ids(&run, text, &ids, &n_ids, err, sizeof err)) goto fail;
    } else if (data_open(&ds, &run.mf.data, mc->seq_len, run.mf.train.seed, err, sizeof err)) {
        goto fail;
    }
    const int is_text = run.mf.data.task == TASK_TEXT;
    const int L = mc->n_layer;
    gl_eval_result soft, r2;
    if (run_eval(&run, ids, n_ids, &ds, split, windows, &soft, err, sizeof err)) goto fail;
    printf("{\"run\":\"%s\",\"source\":\"%s\",", run.dir, text ? text : split_name);
    print_result("soft", &soft, is_text, L, mc->seq_len);
    if (sparse) {
        m->sparse = 1;
        if (run_eval(&run, ids, n_ids, &ds, split, windows, &r2, err, sizeof err)) goto fail;
        m->sparse = 0;
        printf(",");
        print_result("sparse", &r2, is_text, L, mc->seq_len);
        printf(",\"sparse_speedup\":%.4f", soft.seconds > 0 && r2.seconds > 0 ? soft.seconds / r2.seconds : 0.0);
    }
    if (match >= 0) {
        if (ids) {
            snprintf(err, sizeof err, "--match-alpha searches τ on the run's validation split; drop --text");
            goto fail;
        }
        int mrc = eval_match_alpha(m, &ds, split, windows, match, 0.005, &tau, &r2, err, sizeof err);
        if (mrc < 0) goto fail;
        if (partner && (r2.windows != partner_prov.count || strcmp(partner_prov.split, split_name))) {
            char a[64];
            snprintf(err, sizeof err, "--match-run %s: its headline was measured on %s, this run's %s split has %ld "
                                      "windows: not one token set, so no matched pair is recorded",
                     partner, db_prov_str(&partner_prov, a, sizeof a), split_name, r2.windows);
            goto fail;
        }
        printf(",\"tau\":%.6f,\"alpha_target\":%.6f,", tau, match);
        print_result("exit", &r2, is_text, L, mc->seq_len);
        if (mrc > 0)
            fprintf(stderr, "gatelab eval: closest α reached is %.4f (target %.4f ± 0.005): α moves in steps at this data size\n",
                    r2.active_frac, match);
    } else if (tau >= 0) {
        m->exit_tau = (float)tau;
        if (run_eval(&run, ids, n_ids, &ds, split, windows, &r2, err, sizeof err)) goto fail;
        m->exit_tau = 0;
        printf(",\"tau\":%.6f,", tau);
        print_result("exit", &r2, is_text, L, mc->seq_len);
    }
    printf(",");
    json_num("loss", soft.loss, ",");
    json_num("loss_se", soft.loss_se, ",");
    printf("\"tokens\":%.0f}\n", soft.tokens);
    fflush(stdout);
    if (rec && record(&run, split_name, &soft, match, partner_loss, tau, &r2, err, sizeof err)) goto fail;
    rc = 0;
    goto done;
fail:
    fprintf(stderr, "gatelab eval: %s\n", err);
done:
    free(ids);
    data_close(&ds);
    run_close(&run);
    return rc;
}
