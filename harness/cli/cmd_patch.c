/*
 * cmd_patch.c — `gatelab patch`: paired activation patching of gates
 * (analysis/measure/patch.h): the clean and corrupted metrics, then for each gate
 * (or the one asked for) the corrupted run with that gate's clean values at
 * the chosen positions, and the fraction of the metric it recovers.
 *
 *   gatelab patch RUN --pair mqar|sort|copy|text | --clean A --corrupt B
 *                 [--gate L2H1 | --router 3] [--positions 3,5 | all] [--metric logit_diff|loss]
 *                 [--pairs N] [--json] [--threads N] [--results DIR]
 *
 * Files A and B are encoded with the run's tokenizer and must give the same
 * number of tokens.  Prints a table and, with --json, one JSON line with
 * each metric in full and as a C hex float (the self-patch test compares
 * those bit for bit).  Definitions: docs/analysis.md "patch".
 */
#include <errno.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/measure/patch.h"
#include "args.h"
#include "cli.h"
#include "jsonl.h"
#include "resolve.h"
#include "store/data.h"
#include "store/fileio.h"
#include "store/rundir.h"

#define PT_MAX_SITES 4096

typedef struct {
    const char *run, *clean, *corrupt, *pair, *gate, *positions, *results, *metric;
    int router, pairs, threads, json;
} pt_args;

static const args_opt pt_opts[] = {
    {"pair", ARGS_KEY(0), "KIND", "built-in pairs from validation windows: mqar, sort, copy (the run's task) or text"},
    {"clean", ARGS_KEY(1), "FILE", "the clean text (with --corrupt; same token count)"},
    {"corrupt", ARGS_KEY(2), "FILE", "the corrupted text"},
    {"gate", ARGS_KEY(3), "G", "patch this per-head gate only: 2:1 or L2H1 (default: every gate and router)"},
    {"router", ARGS_KEY(4), "L", "patch TSA router L's p only (router L feeds block L+1)"},
    {"positions", ARGS_KEY(5), "LIST", "positions to patch, 0-based in the window: 3,5,7 or all (default all)"},
    {"metric", ARGS_KEY(6), "M", "logit_diff (default for task pairs) or loss (default for text and files)"},
    {"pairs", ARGS_KEY(7), "N", "--pair: validation windows made into pairs (default 16)"},
    {"json", ARGS_KEY(8), NULL, "also print one JSON line"},
    {"threads", ARGS_KEY(9), "N", "OpenMP threads (default: the run's train.threads; 0 = every core)"},
    {"results", ARGS_KEY(10), "DIR", "results folder that holds runs/<RUN> (default $GATELAB_RESULTS or results)"},
    {0}};
const args_spec pt_spec = {
    "patch", "RUN --pair mqar|sort|copy|text | --clean A --corrupt B [options]",
    "Paired activation patching of gates: the corrupted input run with one gate's values from the clean run\n"
    "at the chosen positions; prints the fraction of the metric recovered,\n"
    "(patched − corrupt) / (clean − corrupt), per gate.",
    pt_opts};

static int pt_parse(int argc, char **argv, pt_args *a) {
    memset(a, 0, sizeof *a);
    a->router = -1;
    a->pairs = 16;
    a->threads = -1;
    args_parser p;
    args_begin(&p, &pt_spec, argc, argv);
    int bad = 0;
    for (int k; !bad && (k = args_next(&p)) != ARGS_END;) {
        if (k < 0) return args_exit_code(k);
        int ch;
        switch (k) {
        case ARGS_POS:
            if (a->run) return args_usage_error(&pt_spec, "one RUN only ('%s' and '%s' given)", a->run, p.val);
            a->run = p.val;
            break;
        case ARGS_KEY(0): a->pair = p.val; break;
        case ARGS_KEY(1): a->clean = p.val; break;
        case ARGS_KEY(2): a->corrupt = p.val; break;
        case ARGS_KEY(3): a->gate = p.val; break;
        case ARGS_KEY(4): bad = args_get_int(&p, 0, GL_MAX_LAYERS, &a->router); break;
        case ARGS_KEY(5): a->positions = p.val; break;
        case ARGS_KEY(6):
            bad = args_get_choice(&p, "loss,logit_diff", &ch);
            if (!bad) a->metric = ch ? "logit_diff" : "loss";
            break;
        case ARGS_KEY(7): bad = args_get_int(&p, 1, 4096, &a->pairs); break;
        case ARGS_KEY(8): a->json = 1; break;
        case ARGS_KEY(9): bad = args_get_int(&p, 0, 1024, &a->threads); break;
        case ARGS_KEY(10): a->results = p.val; break;
        }
    }
    if (bad) return 2;
    if (!a->run) return args_usage_error(&pt_spec, "RUN is missing");
    if (!!a->clean != !!a->corrupt) return args_usage_error(&pt_spec, "give --clean and --corrupt together");
    if (!a->pair == !a->clean) return args_usage_error(&pt_spec, "give --pair KIND or --clean A --corrupt B (one of them)");
    patch_pair_kind kind;
    if (a->pair && patch_parse_pair(a->pair, &kind))
        return args_usage_error(&pt_spec, "--pair '%s': one of mqar, sort, copy, text", a->pair);
    if (a->gate && a->router >= 0) return args_usage_error(&pt_spec, "--gate and --router: patch one site at a time");
    return -1;
}

/* The run's token ids of a whole file (malloc'd, *n of them), or NULL with a message. */
static int *pt_encode_file(const gl_run *run, const char *flag, const char *path, long *n, char *err, size_t errlen) {
    size_t got;
    uint8_t *b = (uint8_t *)fileio_slurp(path, flag, 0, &got, err, errlen);
    if (!b) return NULL;
    int *ids = malloc((got ? got : 1) * sizeof(int));
    char why[512];
    *n = b && ids ? run_encode(run, b, got, ids, why, sizeof why) : -1;
    free(b);
    if (*n < 0) {
        snprintf(err, errlen, "%s %s: %s", flag, path, ids ? why : "out of memory");
        free(ids);
        return NULL;
    }
    return ids;
}

/* --positions: "all" (NULL out) or a comma list of positions in [0, T). */
static int pt_positions(const char *s, int T, unsigned char *pos, int *all, char *err, size_t errlen) {
    *all = !s || !strcmp(s, "all");
    if (*all) return 0;
    if (args_int_list("--positions", s, 0, T - 1, err, errlen)) return -1;
    memset(pos, 0, (size_t)T);
    for (const char *p = s; *p;) {
        char *e;
        long v = strtol(p, &e, 10);
        pos[v] = 1;
        p = *e == ',' ? e + 1 : e;
    }
    return 0;
}

/* The pairs to patch: --pair KIND drawn from the run's data (opened into ds,
 * *have_ds set), or --clean/--corrupt, one pair of files.  Returns 0, or -1
 * with a message in err. */
static int pt_make_pairs(const pt_args *a, gl_run *run, gl_dataset *ds, int *have_ds, int n_pairs, patch_pairs *pp,
                         patch_pair_kind *kind, char *err, size_t errlen) {
    const int T = run->model.T, V = run->model.cfg.vocab_size;
    int rc = -1, *ia = NULL, *ib = NULL;
    unsigned char *letters = NULL;
    if (a->pair) {
        patch_parse_pair(a->pair, kind);
        if (data_open_tok(ds, &run->mf.data, T, run->mf.train.seed, run->st.tokenizer == TOK_BPE ? &run->st.bpe : NULL,
                          err, errlen))
            goto done;
        *have_ds = 1;
        if (!(letters = calloc((size_t)V, 1))) {
            snprintf(err, errlen, "out of memory");
            goto done;
        }
        for (int id = 0; id < V && *kind == PATCH_PAIR_TEXT; id++) {
            size_t len;
            const uint8_t *p = run_token(run, id, &len);
            int all = len > 0;
            for (size_t i = 0; i < len; i++) all &= (p[i] >= 'a' && p[i] <= 'z') || (p[i] >= 'A' && p[i] <= 'Z');
            letters[id] = (unsigned char)all;
        }
        if (patch_make_pairs(pp, *kind, ds, n_pairs, letters, err, errlen)) goto done;
    } else {
        long na, nb;
        if (!(ia = pt_encode_file(run, "--clean", a->clean, &na, err, errlen)) ||
            !(ib = pt_encode_file(run, "--corrupt", a->corrupt, &nb, err, errlen)))
            goto done;
        if (na != nb) {
            snprintf(err, errlen, "--clean %s has %ld tokens and --corrupt %s %ld: a pair needs the same number "
                     "(replace a word by one of the same length)", a->clean, na, a->corrupt, nb);
            goto done;
        }
        if (patch_pair_from_ids(pp, ia, ib, na, T, err, errlen)) goto done;
    }
    rc = 0;
done:
    free(ia), free(ib), free(letters);
    return rc;
}

/* The sites to patch into sites[PT_MAX_SITES]: --gate (one), --router (one) or
 * every site of the model.  Returns their count, or -1 with a message in err. */
static int pt_choose_sites(const pt_args *a, patch_ctx *c, patch_site *sites, char *err, size_t errlen) {
    if (a->gate) {
        char g[64];
        int blk, head;
        if (args_heads("--gate", a->gate, g, sizeof g, err, errlen)) return -1;
        if (strchr(g, ',') || sscanf(g, "%d:%d", &blk, &head) != 2) {
            snprintf(err, errlen, "--gate '%s': one gate only", a->gate);
            return -1;
        }
        return patch_site_gate(c, blk, head, &sites[0], err, errlen) ? -1 : 1;
    }
    if (a->router >= 0) return patch_site_router(c, a->router, &sites[0], err, errlen) ? -1 : 1;
    return patch_sites(c, sites, PT_MAX_SITES);
}

int cmd_patch(int argc, char **argv) {
    pt_args a;
    int pr = pt_parse(argc, argv, &a);
    if (pr >= 0) return pr;
    static gl_run run;
    static gl_dataset ds;
    patch_pairs pp = {0};
    patch_ctx c = {0};
    char err[2048];
    int rc = 1, have_ds = 0;
    unsigned char *pos = NULL;
    patch_site *sites = NULL;
    resolve_run rr;
    const int n_pairs = a.pair ? a.pairs : 1;
    if (resolve_run_arg(a.run, NULL, a.results, RESOLVE_DIR, &rr, err, sizeof err) ||
        run_open(&run, rr.dir, NULL, n_pairs, err, sizeof err))
        goto done;
    gl_model *m = &run.model;
    int threads = a.threads >= 0 ? a.threads : run.mf.train.threads;
    if (threads > 0) omp_set_num_threads(threads);
    patch_pair_kind kind = PATCH_PAIR_FILES;
    if (pt_make_pairs(&a, &run, &ds, &have_ds, n_pairs, &pp, &kind, err, sizeof err)) goto done;
    const patch_metric metric = a.metric ? (strcmp(a.metric, "loss") ? PATCH_METRIC_LOGIT_DIFF : PATCH_METRIC_LOSS)
                                         : (kind == PATCH_PAIR_FILES || kind == PATCH_PAIR_TEXT ? PATCH_METRIC_LOSS
                                                                                               : PATCH_METRIC_LOGIT_DIFF);
    if (!(pos = malloc((size_t)pp.T))) goto oom;
    int all;
    if (pt_positions(a.positions, pp.T, pos, &all, err, sizeof err)) goto done;
    if (patch_init(&c, m, &pp, metric, err, sizeof err)) goto done;
    if (!(sites = malloc(PT_MAX_SITES * sizeof *sites))) goto oom;
    const int ns = pt_choose_sites(&a, &c, sites, err, sizeof err);
    if (ns < 0) goto done;
    const char *mname = metric == PATCH_METRIC_LOSS ? "loss" : "logit_diff";
    printf("gatelab patch: run %s, %s pairs (%d, %ld answer positions), metric %s%s\n", rr.id, patch_pair_name(kind),
           pp.B, c.n_answer, mname, metric == PATCH_METRIC_LOSS ? " (nats, clean target)" : " (clean − corrupt target)");
    printf("  clean %.6f   corrupt %.6f   clean − corrupt %.6f\n", c.clean, c.corrupt, c.clean - c.corrupt);
    if (isnan(patch_recovered(&c, c.clean)))
        printf("  (clean and corrupt give the same metric: the recovered fraction is undefined)\n");
    printf("  %-10s %-10s %12s %14s %10s\n", "site", "positions", "patched", "patched−corrupt", "recovered");
    json_t *o = NULL, *arr = NULL;
    if (a.json) {
        char hx[64];
        o = jsonl_run(rr.id, rr.dir);
        jsonl_set(o, "pair", jsonl_str(patch_pair_name(kind)));
        jsonl_set(o, "metric", jsonl_str(mname));
        jsonl_set(o, "pairs", jsonl_int(pp.B));
        jsonl_set(o, "answers", jsonl_int(c.n_answer));
        jsonl_set(o, "positions", jsonl_str(all ? "all" : a.positions));
        jsonl_set(o, "clean", jsonl_num(c.clean));
        jsonl_set(o, "corrupt", jsonl_num(c.corrupt));
        snprintf(hx, sizeof hx, "%a", c.corrupt);
        jsonl_set(o, "corrupt_hex", jsonl_str(hx));
        arr = json_array();
    }
    for (int i = 0; i < ns; i++) {
        double v;
        char label[32];
        patch_apply(&c, &sites[i], all ? NULL : pos, &v);
        patch_site_label(&c, &sites[i], label, sizeof label);
        const double rec = patch_recovered(&c, v);
        printf("  %-10s %-10s %12.6f %14.3g %10.4f\n", label, all ? "all" : a.positions, v, v - c.corrupt, rec);
        if (arr) {
            char hx[64];
            json_t *s = json_object();
            jsonl_set(s, "site", jsonl_str(label));
            jsonl_set(s, "patched", jsonl_num(v));
            snprintf(hx, sizeof hx, "%a", v);
            jsonl_set(s, "patched_hex", jsonl_str(hx));
            jsonl_set(s, "delta", jsonl_num(v - c.corrupt));
            jsonl_set(s, "recovered", jsonl_num(rec));
            json_array_append_new(arr, s);
        }
    }
    if (o) {
        jsonl_set(o, "sites", arr);
        if (jsonl_print(stdout, o)) {
            snprintf(err, sizeof err, "cannot write the JSON line");
            goto done;
        }
    }
    rc = 0;
    goto done;
oom:
    snprintf(err, sizeof err, "out of memory");
done:
    if (rc) fprintf(stderr, "gatelab patch: %s\n", err);
    patch_free(&c);
    patch_pairs_free(&pp);
    free(pos), free(sites);
    if (have_ds) data_close(&ds);
    run_close(&run);
    return rc;
}
