/*
 * train.c — the training loop: data → forward → backward → AdamW, with
 * validation passes, the probe pass that feeds trace.h5, checkpoints, the
 * registry, a progress line, and the signals a cluster sends.
 *
 * What a run leaves (docs/files.md):
 *   <results>/runs/<id>/config.ini   the resolved manifest (canonical INI)
 *   <results>/runs/<id>/ckpt         parameters, AdamW moments, step, RNG, vocab
 *   <results>/runs/<id>/trace.h5     gates / halting probabilities / exit confidences
 *   <results>/runs/<id>/train.log    the progress lines
 *   <results>/gatelab.db             run row, params, metrics, artifacts
 *
 * Numbers and what they rest on: the periodic validation pass reads the
 * first train.eval_windows windows (a small, cheap estimate, logged as
 * val/loss with that provenance), or with train.eval_mode = random the TSA
 * paper's estimate, train.eval_batches batches of random windows drawn anew
 * at every pass (val/random.loss); a run that finishes is then evaluated on
 * the whole validation split, and the test split when the data has one, and
 * that is its headline (val/final.*, headline.h).  The headline comes after
 * the last step and the last checkpoint, so it changes nothing in training.
 *
 * Repeatability: the only randomness is the seeded init and the data stream
 * (st.data_rng), both restored from the checkpoint, and every kernel reduces
 * in a fixed order — so a run killed and resumed ends bit for bit where an
 * uninterrupted run ends.  Evaluation never touches the training stream.
 *
 * Ranks (dist.h, docs/mpi.md): under mpirun/srun (build/gatelab-mpi) each rank
 * trains a shard of the global batch and the gradients are summed in rank
 * order; rank 0 alone writes the folder, checkpoint, trace, registry and
 * console, and the ranks agree (agree.h) on signals and failures before acting on
 * them.  With one rank (build/gatelab) every collective is the identity.
 *
 * Signals: SIGINT/SIGTERM → checkpoint, flush, mark KILLED, exit 3.
 * SIGUSR1 (Slurm's pre-timeout signal) → checkpoint and keep going.
 * A NaN or infinite loss or gradient → the run is FAILED at that step and the
 * last good checkpoint stays as it was.
 */
#include "train.h"

#include <errno.h>
#include <libgen.h>
#include <math.h>
#include <omp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "model/adamw.h"
#include "model/dropout.h"
#include "model/model.h"
#include "agree.h"
#include "dist.h"
#include "timing.h"
#include "store/categories.h"
#include "store/ckpt.h"
#include "store/fileio.h"
#include "store/data.h"
#include "evaluate.h"
#include "headline.h"
#include "store/registry.h"
#include "store/rundir.h"
#include "sweep.h"
#include "store/trace.h"

static volatile sig_atomic_t g_stop = 0, g_ckpt = 0;
static void on_stop(int sig) { g_stop = sig; }
static void on_usr1(int sig) {
    (void)sig;
    g_ckpt = 1;
}

typedef struct {
    const gl_manifest *mf;
    gl_manifest resolved; /* mf with model.vocab_size taken from the data */
    char results[GL_PATH_MAX];
    char dir[GL_PATH_MAX];
    char run_id[160];
    char ckpt_path[GL_PATH_MAX + 8];
    char trace_path[GL_PATH_MAX + 16];
    char *config_ini;
    uint64_t model_hash;
    char config_change[1024]; /* resume with --allow-config-change: "key: old -> new; ..." ("" none) */
    gl_dataset ds;
    gl_model m;
    gl_train_state st;
    gl_trace *trace;
    gl_db *db;
    FILE *log;
    int tty, quiet;
    int rank, ranks;      /* dist.h: this process's rank of ranks; rank 0 alone writes files and the registry */
    int B_local, b0;      /* this rank's shard of the global batch: sequences [b0, b0 + B_local) */
    int from_ckpt; /* resumed from a checkpoint (a --resume of a run that has none starts again) */
    int bpe_reused;       /* BPE: the merges came from the checkpoint (1) or were trained now (0) */
    double bpe_train_s;   /* BPE: seconds data_open took to train and encode (0 when reused) */
    double alpha_paper;   /* TSA: the paper's soft α of the last training batch, mean over routed blocks
                             n >= 1 and all its tokens of 1 - p (NaN before the first step) */
    double trace_s; /* wall-clock seconds in probe passes and trace writes (this process) */
    /* probe batch */
    int P, probe_B;
    int *probe_tok, *probe_tg;
    float *probe_mask;
    uint8_t *probe_cat;
    int32_t *vocab_off;  /* (V+1) the vocabulary as the trace stores it (/vocab) */
    uint8_t *vocab_bytes, *vocab_cat;
    float *gate_buf[GATE_COUNT]; /* each gate the model records, as the trace stores it (model/gatekind.h) */
    /* metrics waiting for the next registry write */
    gl_metric pending[64];
    char names[64][32];
    int n_pending;
    char *rank_env; /* ranks > 1: each rank's environment, DB_ENV_MAX bytes each (dist_gather_text) */
} run_ctx;

/* Progress and log lines: stderr (in place on a TTY) and train.log. */
static void say(run_ctx *c, int transient, const char *fmt, ...) {
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (!c->quiet) {
        if (c->tty) fprintf(stderr, "\r\033[K%s%s", line, transient ? "" : "\n");
        else if (!transient) fprintf(stderr, "%s\n", line);
    }
    if (c->log && !transient) {
        fprintf(c->log, "%s\n", line);
        fflush(c->log);
    }
}

/* Queue a metric measured on prov (NULL: not an evaluation) with standard error se (0: none). */
static void metric_on(run_ctx *c, long step, const char *split, const char *name, double v, const gl_prov *prov,
                      double se) {
    if (c->n_pending == 64) return;
    gl_metric *g = &c->pending[c->n_pending];
    memset(g, 0, sizeof *g);
    snprintf(c->names[c->n_pending], sizeof c->names[0], "%s", name);
    g->step = step;
    g->split = split;
    g->name = c->names[c->n_pending];
    g->value = v;
    g->wall_time = 0;
    if (prov) g->prov = *prov;
    g->se = se;
    c->n_pending++;
}

static void metric(run_ctx *c, long step, const char *split, const char *name, double v) {
    metric_on(c, step, split, name, v, NULL, 0);
}

/* Write the pending metrics, then refresh the run's heartbeat: a flush comes
 * at every log interval, every evaluation and the end, so a RUNNING run whose
 * heartbeat is older than a few intervals has lost its process. */
static int flush_metrics(run_ctx *c, char *err, size_t errlen) {
    if (!c->db) { /* a rank other than 0 keeps no registry */
        c->n_pending = 0;
        return 0;
    }
    int rc = c->n_pending ? db_metrics_log(c->db, c->run_id, c->pending, c->n_pending, err, errlen) : 0;
    c->n_pending = 0;
    return rc ? rc : db_run_heartbeat(c->db, c->run_id, err, errlen);
}

/* The vocabulary as the trace stores it: every token's bytes and its class
 * on its own (cat_token_class).  Returns 0, or -1 when out of memory. */
static int setup_vocab(run_ctx *c, const cat_words *fw) {
    const int V = data_vocab_size(&c->ds);
    size_t nb = 0, len;
    for (int id = 0; id < V; id++) data_token(&c->ds, id, &len), nb += len;
    c->vocab_off = malloc(((size_t)V + 1) * sizeof *c->vocab_off);
    c->vocab_bytes = malloc(nb ? nb : 1);
    c->vocab_cat = malloc((size_t)V);
    if (!c->vocab_off || !c->vocab_bytes || !c->vocab_cat) return -1;
    c->vocab_off[0] = 0;
    for (int id = 0; id < V; id++) {
        const uint8_t *p = data_token(&c->ds, id, &len);
        memcpy(c->vocab_bytes + c->vocab_off[id], p, len);
        c->vocab_off[id + 1] = c->vocab_off[id] + (int32_t)len;
        c->vocab_cat[id] = (uint8_t)cat_token_class(p, len, fw);
    }
    return 0;
}

/* What /vocab's tokenizer attribute says: char or bpe for text, the task's name for a synthetic task. */
static const char *mf_tokenizer_name(const gl_manifest *mf) {
    return mf->data.task == TASK_TEXT ? task_tokenizer_name(mf->data.tokenizer) : task_name(mf->data.task);
}

/* The probe batch: the first probe_windows validation windows, with categories. */
static int setup_probe(run_ctx *c, char *err, size_t errlen) {
    const int T = c->m.T;
    c->probe_B = c->mf->log.probe_windows;
    long avail = data_eval_windows(&c->ds, SPLIT_VAL);
    if (c->probe_B > avail) c->probe_B = (int)avail;
    if (c->probe_B < 1) {
        snprintf(err, errlen, "the validation split has no window of %d tokens for the probe batch", T);
        return -1;
    }
    c->P = c->probe_B * T;
    c->probe_tok = malloc((size_t)c->P * sizeof(int));
    c->probe_tg = malloc((size_t)c->P * sizeof(int));
    c->probe_mask = malloc((size_t)c->P * sizeof(float));
    c->probe_cat = malloc((size_t)c->P);
    const gl_model_config *mc = &c->m.cfg;
    int gates_ok = 1;
    for (int g = 0; g < GATE_COUNT; g++)
        if (gatekind_has(mc, (gl_gate)g)) {
            c->gate_buf[g] = calloc(gatekind_size((gl_gate)g, mc->n_layer, mc->n_kv_head, c->P), sizeof(float));
            gates_ok &= c->gate_buf[g] != NULL;
        }
    if (!c->probe_tok || !c->probe_tg || !c->probe_mask || !c->probe_cat || !gates_ok) {
        snprintf(err, errlen, "out of memory for the probe batch");
        return -1;
    }
    data_eval_batch(&c->ds, SPLIT_VAL, 0, c->probe_B, c->probe_tok, c->probe_tg, c->probe_mask);
    cat_words fw;
    memset(&fw, 0, sizeof fw);
    char fwpath[GL_PATH_MAX], e2[256];
    run_repo_path(fwpath, sizeof fwpath, "experiments/function_words.txt");
    if (cat_load_function_words(fwpath, &fw, e2, sizeof e2)) say(c, 0, "warning: %s (every word counts as semantic)", e2);
    int oom = setup_vocab(c, &fw); /* each window on its own: a word cut by a window's edge is classified from the part inside */
    for (int w = 0; w < c->probe_B && !oom; w++)
        oom = data_categories(&c->ds, c->probe_tok + (size_t)w * T, T, &fw, c->probe_cat + (size_t)w * T);
    cat_words_free(&fw);
    if (oom) {
        snprintf(err, errlen, "out of memory classifying the probe batch");
        return -1;
    }
    return 0;
}

/* Run the probe batch and gather what the trace stores: every gate of the
 * gate table that the model records, as the forward pass left it. */
static void probe_pass(run_ctx *c) {
    gl_model *m = &c->m;
    model_forward(m, c->probe_tok, c->probe_tg, c->probe_mask, c->probe_B, m->T);
    for (int g = 0; g < GATE_COUNT; g++)
        if (c->gate_buf[g]) gatekind_copy(m, (gl_gate)g, c->gate_buf[g]);
}

/* GATELAB_KILL_AFTER_CKPT=N (fault injection for the tests): once the
 * checkpoint of step N is on disk the process sends itself SIGKILL, exactly
 * what `kill -9` does, at a known point instead of at a moment a test would
 * have to guess (which could land after the run had finished).  With ranks,
 * GATELAB_KILL_RANK=r (default 0) picks the rank that dies. */
static int kill_due(const run_ctx *c) {
    const char *kill_at = getenv("GATELAB_KILL_AFTER_CKPT"), *rank = getenv("GATELAB_KILL_RANK");
    return kill_at && *kill_at && atol(kill_at) == c->st.step && c->rank == (rank && *rank ? atoi(rank) : 0);
}

static int save_ckpt(run_ctx *c, char *err, size_t errlen) {
    int rc = ckpt_save(c->ckpt_path, &c->m, &c->st, c->config_ini, c->model_hash, err, errlen);
    if (rc == 0 && kill_due(c)) raise(SIGKILL);
    return rc;
}

static void ctx_free(run_ctx *c) {
    trace_close(c->trace);
    free(c->rank_env);
    if (c->log) fclose(c->log);
    db_close(c->db);
    model_free(&c->m);
    data_close(&c->ds);
    free(c->config_ini);
    free(c->probe_tok);
    free(c->probe_tg);
    free(c->probe_mask);
    free(c->probe_cat);
    free(c->vocab_off);
    free(c->vocab_bytes);
    free(c->vocab_cat);
    for (int g = 0; g < GATE_COUNT; g++) free(c->gate_buf[g]);
}


static void fmt_eta(char *out, size_t n, double s) {
    if (s < 0 || !isfinite(s)) snprintf(out, n, "?");
    else if (s < 60) snprintf(out, n, "%.0fs", s);
    else if (s < 3600) snprintf(out, n, "%dm%02ds", (int)s / 60, (int)s % 60);
    else snprintf(out, n, "%dh%02dm", (int)s / 3600, ((int)s / 60) % 60);
}

/* The generator of the random validation windows of the pass at step (train.eval_mode =
 * random): a function of (train.seed, step) alone, apart from the training stream and the
 * synthetic tasks' fixed sets, so a resumed run draws what an uninterrupted one draws. */
static uint64_t random_eval_key(uint64_t seed, long step) {
    return rng_mix64(rng_mix64(seed ^ 0xbb67ae8584caa73bULL) + (uint64_t)step);
}

/* Validation pass + probe pass + trace row + metrics at the current step.  train.eval_mode =
 * first: the first eval_windows windows (val/loss, ...); random: eval_batches batches of
 * batch_size random windows (val/random.loss, ...), the TSA paper's estimate — named apart so
 * neither is read as the other or as the whole split's headline (val/final.*). */
static int evaluate_now(run_ctx *c, double train_loss, char *err, size_t errlen) {
    gl_model *m = &c->m;
    const gl_manifest *mf = c->mf;
    const gl_train_config *tc = &mf->train;
    const int rnd = tc->eval_mode == EM_RANDOM;
    gl_eval_result r;
    long step = c->st.step;
    if (rnd ? eval_random(m, &c->ds, SPLIT_VAL, (long)tc->eval_batches * tc->batch_size,
                          random_eval_key(tc->seed, step), &r, err, errlen)
            : eval_split(m, &c->ds, SPLIT_VAL, tc->eval_windows, &r, err, errlen))
        return -1;
    /* the periodic windows, not the whole split; for val/random.* the count is of the windows drawn at
     * random (docs/registry.md), not the range [0, count) */
    const gl_prov pv = db_prov("val", 0, r.windows, r.tokens);
    const char *pre = rnd ? "random." : "";
    char nm[32];
#define VAL_METRIC(q, v, se) (snprintf(nm, sizeof nm, "%s%s", pre, q), metric_on(c, step, "val", nm, v, &pv, se))
    VAL_METRIC("loss", r.loss, r.loss_se);
    int text = mf->data.task == TASK_TEXT;
    if (text) VAL_METRIC("bpc", eval_bpc(&r), eval_bpc_se(&r));
    else {
        VAL_METRIC("token_acc", r.tok_acc, 0);
        VAL_METRIC("seq_acc", r.seq_acc, 0);
    }
    char extra[160] = "";
    if (config_routing_counts(&m->cfg)) {
        VAL_METRIC("active_frac", r.active_frac, 0);
        VAL_METRIC("tlops_saved", eval_tlops_saved(r.active_frac, m->cfg.n_layer), 0);
        snprintf(extra, sizeof extra, " | α %.3f", r.active_frac);
    }
#undef VAL_METRIC
    if (c->trace) {
        double t0 = timing_now_s();
        probe_pass(c);
        if (trace_append(c->trace, step, (float)train_loss, (float)r.loss, (const float *const *)c->gate_buf, err,
                         errlen))
            return -1;
        c->trace_s += timing_now_s() - t0;
    }
    /* the periodic evaluation reads the first eval_windows windows of the split (a probe), or random
     * windows; "val loss" alone is the headline's, over the whole split, at the end */
    char what[80];
    if (rnd) snprintf(what, sizeof what, "%ld random windows, %.0f tokens", r.windows, r.tokens);
    else snprintf(what, sizeof what, "%.0f-token probe", r.tokens);
    if (text) say(c, 0, "step %ld | val loss (%s) %.4f | %.3f bpc%s", step, what, r.loss, eval_bpc(&r), extra);
    else say(c, 0, "step %ld | val loss (%s) %.4f | token acc %.4f | seq acc %.4f%s", step, what, r.loss, r.tok_acc,
             r.seq_acc, extra);
    return flush_metrics(c, err, errlen);
}

static const char *base_name(const char *path, char *out, size_t n) {
    const char *b = strrchr(path, '/');
    snprintf(out, n, "%s", b ? b + 1 : path);
    char *dot = strrchr(out, '.');
    if (dot && dot != out) *dot = 0;
    return out;
}

/* ---- the configuration a resume continues with ---- */

/* The keys of one configuration in walk order (manifest_each_key), each value's canonical text. */
typedef struct {
    char *text[256]; /* more than the key table has rows; a longer walk is refused (cfg_collect) */
    int n, oom;
} cfg_texts;

static int cfg_collect(const gl_key *k, void *ctx) {
    cfg_texts *t = ctx;
    if (t->n >= (int)(sizeof t->text / sizeof t->text[0])) return 1;
    if (!(t->text[t->n++] = strdup(k->text))) t->oom = 1;
    return t->oom;
}

typedef struct {
    const cfg_texts *old;
    int i, count;
    char *diff;
    size_t n;
} cfg_diff_ctx;

/* Append "section.key: old -> new" for a key whose canonical text differs. */
static int cfg_diff_key(const gl_key *k, void *ctx) {
    cfg_diff_ctx *d = ctx;
    const char *ov = d->old->text[d->i++];
    if (!strcmp(ov, k->text)) return 0;
    size_t len = strlen(d->diff);
    snprintf(d->diff + len, d->n - len, "%s%s.%s: %s -> %s", d->count ? "; " : "", k->section, k->name, ov, k->text);
    d->count++;
    return 0;
}

/* Compare a run's stored config.ini (old, read through the manifest parser, so a key it lacks has
 * its default: a key added to gatelab after the run started is not a change) with the config
 * resolved now, key by key through manifest_each_key.  Returns the number of keys that differ,
 * listed in diff (n bytes) as "section.key: old -> new; ...", or -1 with a message in err when old
 * no longer parses or memory runs out. */
static int cfg_diff(const char *old, const char *path, const gl_manifest *now, char *diff, size_t n, char *err,
                    size_t errlen) {
    static gl_manifest om;
    char why[512];
    diff[0] = 0;
    if (manifest_load_text(&om, old, path, why, sizeof why)) {
        snprintf(err, errlen, "--resume: the run's %s no longer reads as a configuration (%s); resume it with the "
                              "gatelab that made it, or start a new run", path, why);
        return -1;
    }
    cfg_texts t = {.n = 0};
    int rc = manifest_each_key(&om, cfg_collect, &t);
    cfg_diff_ctx d = {.old = &t, .diff = diff, .n = n};
    if (!rc) rc = manifest_each_key(now, cfg_diff_key, &d);
    for (int i = 0; i < t.n; i++) free(t.text[i]);
    if (rc) {
        snprintf(err, errlen, "--resume: out of memory comparing %s with the configuration", path);
        return -1;
    }
    return d.count;
}

/* On resume: compare the configuration the run trained under — the one its
 * checkpoint stores (ckpt_save keeps it in every checkpoint), else, for a
 * checkpoint without one, its config.ini — with the configuration resolved
 * now.  Never config.ini with itself: `--resume RUN` resolves from
 * config.ini, so a hand edit there (lr, steps) is a change like any other.
 * Equal: 0.  Different: -1 with a message naming the keys, unless allowed —
 * then config.ini is rewritten (its earlier comment lines kept, a new one
 * saying what changed) and c->config_change holds the change for the
 * registry.  A run with neither is taken as it is. */
static int check_resume_config(run_ctx *c, int allowed, char *err, size_t errlen) {
    char path[GL_PATH_MAX + 16], why[512];
    snprintf(path, sizeof path, "%s/config.ini", c->dir);
    char *trained = NULL, *ini = NULL;
    size_t n = 0;
    int rc = -1;
    const char *from = c->ckpt_path;
    if (ckpt_read_config(c->ckpt_path, &trained, why, sizeof why) != 0 || !trained || !trained[0]) {
        free(trained); /* no config in the checkpoint (or it is damaged: ckpt_load says so) */
        trained = NULL;
        from = path;
    }
    ini = fileio_slurp(path, "resolved config", 0, &n, why, sizeof why);
    if (!trained && !ini) return 0;
    const char *old = trained ? trained : ini;
    char diff[sizeof c->config_change];
    int k = cfg_diff(old, from, &c->resolved, diff, sizeof diff, err, errlen);
    if (k <= 0) {
        rc = k;
        goto done;
    }
    if (!allowed) {
        snprintf(err, errlen, "--resume %s: the configuration differs from the one the run trained under (%s) in %d "
                              "key%s: %s. Resume with the same manifest and overrides (and config.ini as it was), or "
                              "pass --allow-config-change to continue with the new values (the change is recorded in "
                              "the registry and in config.ini)",
                 c->run_id, from, k, k == 1 ? "" : "s", diff);
        goto done;
    }
    snprintf(c->config_change, sizeof c->config_change, "resumed at step %ld with --allow-config-change: %s",
             c->st.step, diff);
    /* the earlier comment lines (the history of changes), then this one, then the new configuration */
    const char *hist = ini ? ini : "";
    size_t cap = strlen(hist) + strlen(c->config_ini) + strlen(c->config_change) + 8, len = 0;
    char *text = malloc(cap);
    if (!text) {
        snprintf(err, errlen, "out of memory rewriting %s", path);
        goto done;
    }
    for (const char *p = hist; *p;) {
        size_t l = strcspn(p, "\n");
        if (*p == ';') len += (size_t)snprintf(text + len, cap - len, "%.*s\n", (int)l, p);
        p += l + (p[l] == '\n');
    }
    snprintf(text + len, cap - len, "; %s\n%s", c->config_change, c->config_ini);
    rc = fileio_write_all(path, "resolved config", text, strlen(text), err, errlen);
    free(text);
    say(c, 0, "warning: %s", c->config_change);
done:
    free(trained);
    free(ini);
    return rc;
}

/* Signals from the start, so a Ctrl-C during set-up still ends as KILLED with a checkpoint. */
static void install_signals(void) {
    g_stop = 0;
    g_ckpt = 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sa.sa_handler = on_usr1;
    sigaction(SIGUSR1, &sa, NULL);
}

/* A BPE run being resumed reuses the merges stored in its checkpoint (it
 * never retrains them): *given points into *held, which the caller frees, or
 * stays NULL (fresh run, char run, no checkpoint yet, or another rank: ranks
 * other than 0 train the same merges from the same bytes, deterministically,
 * and share_state checks them against rank 0's).  A RUN that cannot be
 * resolved is left for setup_run to report. */
static int resume_tokenizer(run_ctx *c, const gl_train_opts *o, gl_train_state **held, const bpe_merges **given,
                            char *err, size_t errlen) {
    *given = NULL;
    *held = NULL;
    if (c->mf->data.tokenizer != TOK_BPE || !o->resume || c->rank != 0) return 0;
    char dir[GL_PATH_MAX], ck[GL_PATH_MAX + 8], e2[256];
    if (run_resolve(o->resume, c->results, dir, sizeof dir, e2, sizeof e2)) return 0;
    snprintf(ck, sizeof ck, "%s/%s", dir, RUN_CKPT);
    if (access(ck, F_OK) != 0) return 0;
    *held = malloc(sizeof **held);
    if (!*held) {
        snprintf(err, errlen, "out of memory reading the tokenizer of %s", ck);
        return -1;
    }
    if (ckpt_read_state(ck, *held, err, errlen)) return -1;
    if ((*held)->tokenizer == TOK_BPE) *given = &(*held)->bpe;
    return 0;
}

/* The data, then the model sized from it; c->resolved is mf with the
 * vocabulary size the data gives, and its canonical INI and model hash. */
static int setup_model(run_ctx *c, const gl_train_opts *o, char *err, size_t errlen) {
    const gl_manifest *mf = c->mf;
    const gl_train_config *tc = &mf->train;
    /* the global batch split over the ranks: the first B % ranks ranks take one sequence more */
    const int B = tc->batch_size, R = c->ranks;
    if (B < R) {
        snprintf(err, errlen, "train.batch_size = %d is smaller than the %d ranks: each rank needs at least one "
                 "sequence; raise train.batch_size or start fewer ranks", B, R);
        return -1;
    }
    c->B_local = B / R + (c->rank < B % R);
    c->b0 = c->rank * (B / R) + (c->rank < B % R ? c->rank : B % R);
    gl_train_state *held;
    const bpe_merges *given;
    if (resume_tokenizer(c, o, &held, &given, err, errlen)) return free(held), -1;
    double t0 = timing_now_s();
    int drc = data_open_tok(&c->ds, &mf->data, mf->model.seq_len, tc->seed, given, err, errlen);
    c->bpe_reused = given != NULL;
    c->bpe_train_s = timing_now_s() - t0;
    free(held);
    if (drc) return -1;
    gl_model_config mc = mf->model;
    int V = data_vocab_size(&c->ds);
    if (mc.vocab_size == 0) mc.vocab_size = V;
    else if (mc.vocab_size != V) {
        snprintf(err, errlen, "model.vocab_size = %d but the data has %d distinct tokens; remove the key or set it to %d",
                 mc.vocab_size, V, V);
        return -1;
    }
    c->resolved = *mf;
    c->resolved.model = mc;
    c->config_ini = manifest_to_ini(&c->resolved);
    c->model_hash = manifest_model_hash(&c->resolved);
    int max_B = c->B_local > mf->log.probe_windows ? c->B_local : mf->log.probe_windows;
    return model_init(&c->m, &mc, max_B, err, errlen);
}

/* The checkpoint's vocabulary (c->st) is the data set's: the same byte
 * table (char), or the same merges (bpe). */
static int same_vocab(const run_ctx *c) {
    const int V = data_vocab_size(&c->ds);
    if (c->st.vocab_size != V) return 0;
    if (c->ds.merges) return c->st.tokenizer == TOK_BPE && bpe_merges_equal(&c->st.bpe, c->ds.merges);
    return c->st.tokenizer == TOK_CHAR && !memcmp(c->st.vocab, data_vocab(&c->ds), (size_t)V);
}

/* A run's folder must be its own: a symbolic link (results/runs/ALIAS ->
 * another run's folder) would make this run rewrite the other's checkpoint
 * and trace and register a second run for the same files.  Returns 0, or -1
 * naming the folder the link leads to. */
static int refuse_aliased_dir(const char *dir, const char *run_id, char *err, size_t errlen) {
    struct stat sb;
    if (lstat(dir, &sb) != 0 || !S_ISLNK(sb.st_mode)) return 0;
    char *to = realpath(dir, NULL);
    snprintf(err, errlen, "run folder %s is a symbolic link to %s: a run's folder must be its own (it would "
             "rewrite that folder's checkpoint and trace as run %s); resume the run of that folder by its own "
             "path, or remove the link", dir, to ? to : "a missing folder", run_id);
    free(to);
    return -1;
}

/* Run identity, folder and train.log; then the weights, fresh (and
 * config.ini written) or from the checkpoint of the run resumed. */
static int setup_run(run_ctx *c, const gl_train_opts *o, char *err, size_t errlen) {
    const gl_manifest *mf = c->mf;
    const gl_train_config *tc = &mf->train;
    if (o->resume) {
        if (run_resolve(o->resume, c->results, c->dir, sizeof c->dir, err, errlen)) return -1;
        char tmp[GL_PATH_MAX];
        snprintf(tmp, sizeof tmp, "%s", c->dir);
        snprintf(c->run_id, sizeof c->run_id, "%s", basename(tmp));
    } else if (o->run_id) {
        snprintf(c->run_id, sizeof c->run_id, "%s", o->run_id);
    } else {
        char nm[128], ts[32];
        time_t t = time(NULL);
        strftime(ts, sizeof ts, "%Y%m%d-%H%M%S", gmtime(&t));
        snprintf(c->run_id, sizeof c->run_id, "%s-%s-%05d",
                 mf->log.name[0] ? mf->log.name : mf->path[0] ? base_name(mf->path, nm, sizeof nm) : "run", ts,
                 (int)getpid() % 100000);
    }
    char why[256];
    if (db_run_id_check(c->run_id, why, sizeof why)) {
        snprintf(err, errlen, "%s%s (docs/registry.md, \"Run ids\")", why,
                 o->resume ? ": the folder's name is the run id" : o->run_id ? "" : ": shorten log.name");
        return -1;
    }
    if (!o->resume && run_create_dir(c->results, c->run_id, c->dir, sizeof c->dir, err, errlen)) return -1;
    if (refuse_aliased_dir(c->dir, c->run_id, err, errlen)) return -1;
    snprintf(c->ckpt_path, sizeof c->ckpt_path, "%s/ckpt", c->dir);
    if (!o->resume && access(c->ckpt_path, F_OK) == 0) {
        snprintf(err, errlen, "run %s already has a checkpoint (%s): continue it with --resume %s, or pick another --run-id",
                 c->run_id, c->ckpt_path, c->run_id);
        return -1;
    }
    snprintf(c->trace_path, sizeof c->trace_path, "%s/trace.h5", c->dir);
    char path[GL_PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/train.log", c->dir);
    if (fileio_open_append(path, "training log", &c->log, err, errlen)) return -1;
    /* the claim: one process trains a run at a time.  The lock is taken
     * before anything is written to the folder and goes with the process
     * (a kill -9 leaves none behind); a second `train --run-id X` or
     * `--resume X` started meanwhile stops here, having written nothing. */
    if (flock(fileno(c->log), LOCK_EX | LOCK_NB) != 0) {
        snprintf(err, errlen, "run %s is being trained by another process right now (%s is locked%s%s): wait for it, "
                 "or pick another --run-id", c->run_id, path, errno == EWOULDBLOCK ? "" : ": ",
                 errno == EWOULDBLOCK ? "" : strerror(errno));
        fclose(c->log);
        c->log = NULL;
        return -1;
    }
    const int V = data_vocab_size(&c->ds);
    if (c->ds.merges)
        say(c, 0, "data.tokenizer = bpe: %d merges (vocabulary %d) %s; %zu train, %zu val, %zu test tokens", c->ds.merges->n, V,
            c->bpe_reused ? "from the checkpoint (not retrained)" : "trained on the train split", c->ds.split_len[0],
            c->ds.split_len[1], c->ds.split_len[2]);
    if (c->ds.merges && !c->bpe_reused)
        say(c, 0, "data.tokenizer = bpe: trained on %zu bytes and encoded %zu in %.2f s", c->ds.split_bytes[0], c->ds.n,
            c->bpe_train_s);
    /* A run stopped before its first checkpoint (kill -9 during set-up) has
     * nothing to resume: start it again from step 0 in its folder, saying so. */
    c->from_ckpt = o->resume && access(c->ckpt_path, F_OK) == 0;
    if (o->resume && !c->from_ckpt)
        say(c, 0, "run %s has no checkpoint yet (stopped before its first one): starting it again from step 0", c->run_id);
    if (c->from_ckpt) {
        /* a refused change is named key by key before the checkpoint is read (which could only say
         * that a tensor is missing); an allowed one needs the step, so it is checked after */
        if (!o->allow_config_change && check_resume_config(c, 0, err, errlen)) return -1;
        if (ckpt_load(c->ckpt_path, &c->m, &c->st, c->model_hash, err, errlen)) return -1;
        if (o->allow_config_change && check_resume_config(c, 1, err, errlen)) return -1;
        if (!same_vocab(c)) {
            snprintf(err, errlen, "%s was trained on a different vocabulary than data.file %s has now (data.tokenizer "
                     "%s, %d ids)", c->ckpt_path, mf->data.file, task_tokenizer_name(mf->data.tokenizer), V);
            return -1;
        }
        return 0;
    }
    model_init_weights(&c->m, tc->seed);
    c->st.step = 0;
    rng_seed(&c->st.data_rng, tc->seed ^ 0x5eed0da7aULL);
    rng_seed(&c->st.aux_rng, tc->seed ^ 0xa0c5eedULL);
    c->st.vocab_size = V;
    memcpy(c->st.vocab, data_vocab(&c->ds), (size_t)(V < 256 ? V : 256));
    c->st.tokenizer = c->ds.merges ? TOK_BPE : TOK_CHAR;
    if (c->ds.merges) c->st.bpe = *c->ds.merges;
    snprintf(path, sizeof path, "%s/config.ini", c->dir);
    return fileio_write_all(path, "resolved config", c->config_ini, strlen(c->config_ini), err, errlen);
}

/* Open the registry and register the run (or take over the one a sweep
 * scheduled), then mark it RUNNING.  *registered = 1 once it is. */
static int setup_registry(run_ctx *c, const gl_train_opts *o, int *registered, char *err, size_t errlen) {
    const gl_manifest *mf = c->mf;
    char dbp[GL_PATH_MAX + 16], nm[128], status[16];
    snprintf(dbp, sizeof dbp, "%s/gatelab.db", c->results);
    if (db_open(&c->db, o->db_path ? o->db_path : dbp, err, errlen)) return -1;
    const char *exp = mf->log.experiment[0] ? mf->log.experiment : mf->path[0] ? base_name(mf->path, nm, sizeof nm) : "default";
    long long exp_id;
    int exists = db_run_exists(c->db, c->run_id, status, err, errlen);
    if (exists < 0) return -1;
    if (!exists) {
        if (db_experiment_ensure(c->db, exp, c->config_ini, &exp_id, err, errlen)) return -1;
        char hash[65];
        sweep_config_hash(c->config_ini, hash); /* the same hash a sweep records */
        if (db_run_create(c->db, exp_id, c->run_id, mf->log.name[0] ? mf->log.name : c->run_id, c->config_ini, hash,
                          (unsigned long long)mf->train.seed, "SCHEDULED", err, errlen))
            return -1;
        if (db_params_put(c->db, c->run_id, &c->resolved, err, errlen)) return -1;
    } else if (!strcmp(status, "FINISHED") && !o->resume) {
        snprintf(err, errlen, "run %s is already FINISHED in %s", c->run_id, db_path(c->db));
        return -1;
    } else if (db_params_put(c->db, c->run_id, &c->resolved, err, errlen)) {
        /* a run a sweep scheduled: store the resolved values (vocab size from the data) */
        return -1;
    }
    if (c->config_change[0]) { /* a resume with --allow-config-change: the registry keeps what changed */
        char hash[65];
        sweep_config_hash(c->config_ini, hash);
        if (db_run_event(c->db, c->run_id, "config_change", c->config_change, err, errlen) ||
            db_run_config_set(c->db, c->run_id, c->config_ini, hash, err, errlen))
            return -1;
    }
    if (db_run_start(c->db, c->run_id, err, errlen)) return -1;
    if (c->rank_env ? db_run_environment_ranks(c->db, c->run_id, c->rank_env, c->ranks, DB_ENV_MAX, err, errlen)
                    : db_run_environment(c->db, c->run_id, err, errlen))
        return -1;
    *registered = 1;
    return 0;
}

/* Which windows the probe batch is, for the trace's identity: the split's
 * place in the data (a text file's byte range, a task's seed). */
static void probe_split(const run_ctx *c, char *out, size_t n) {
    const gl_dataset *ds = &c->ds;
    if (ds->task == TASK_TEXT)
        snprintf(out, n, "val windows 0-%d: bytes %zu+%zu of the %zu of %s", c->probe_B - 1, ds->split_start[SPLIT_VAL],
                 ds->split_len[SPLIT_VAL], ds->n, c->mf->data.file);
    else
        snprintf(out, n, "val windows 0-%d of task %s, seed %llu", c->probe_B - 1, task_name(ds->task),
                 (unsigned long long)ds->seed);
}

/* A resumed run whose trace records another probe (a config change of
 * log.probe_windows or of the split): the trace so far is kept whole as
 * trace.N.h5 (the first free N from 1), and a new trace.h5 starts at the
 * resumed step; said on the terminal and in train.log, and recorded as a
 * trace_change event in the registry.  Returns 0, or -1 with a message. */
static int trace_start_new(run_ctx *c, const char *why, char *err, size_t errlen) {
    char kept[GL_PATH_MAX + 32], prev[GL_PATH_MAX + 16];
    snprintf(prev, sizeof prev, "%s.prev", c->trace_path);
    /* trace.h5 deleted: its copy is what is left of the old trace */
    const char *from = access(c->trace_path, F_OK) == 0 ? c->trace_path : prev;
    int k = 1;
    for (; k < 1000; k++) {
        snprintf(kept, sizeof kept, "%s/trace.%d.h5", c->dir, k);
        struct stat sb;
        if (lstat(kept, &sb) != 0) break;
    }
    /* link + unlink, not rename: a trace.N.h5 that appeared meanwhile is never replaced */
    if (k == 1000 || link(from, kept) != 0 || unlink(from) != 0) {
        snprintf(err, errlen, "%s: %s; keeping it as %s before a new trace failed: %s", from, why, kept,
                 k == 1000 ? "999 kept traces already" : strerror(errno));
        return -1;
    }
    unlink(prev); /* a copy of the kept trace, not of the new one */
    char ev[1024 + GL_PATH_MAX];
    snprintf(ev, sizeof ev, "%s; the trace up to step %ld is kept as %s; trace.h5 holds the evaluations after "
             "step %ld", why, c->st.step, kept, c->st.step);
    say(c, 0, "gatelab train: the probe changed (%s)", ev);
    return c->db ? db_run_event(c->db, c->run_id, "trace_change", ev, err, errlen) : 0;
}

/* The probe batch, and trace.h5 created (or reopened on resume) when log.trace
 * is on.  A resumed run's trace must record this run's probe (shape,
 * vocabulary, split, probe tokens): when it does not, the resume is refused,
 * or, when the run's config was changed on purpose (--allow-config-change), a
 * new trace starts beside the old one (trace_start_new). */
static int setup_trace(run_ctx *c, const gl_train_opts *o, char *err, size_t errlen) {
    const gl_model_config mc = c->resolved.model;
    if (setup_probe(c, err, errlen)) return -1;
    if (!c->mf->log.trace) return 0;
    char split[GL_PATH_MAX + 160];
    probe_split(c, split, sizeof split);
    gl_trace_desc td = {.n_layer = mc.n_layer,
                        .n_kv_head = mc.n_kv_head,
                        .n_router = mc.depth_routing == DR_TSA ? mc.n_layer - 1 : 0,
                        .n_probe = c->P,
                        .config_ini = c->config_ini,
                        .n_vocab = data_vocab_size(&c->ds),
                        .vocab_offset = c->vocab_off,
                        .vocab_bytes = c->vocab_bytes,
                        .vocab_category = c->vocab_cat,
                        .tokenizer = mf_tokenizer_name(c->mf),
                        .vocab_size = data_vocab_size(&c->ds),
                        .split = split};
    for (int g = 0; g < GATE_COUNT; g++) td.has[g] = gatekind_has(&mc, (gl_gate)g);
    /* resuming at step 0 (stopped during step 0) evaluates step 0 again: a fresh trace */
    if (c->from_ckpt && c->st.step > 0) {
        char prev[GL_PATH_MAX + 16];
        snprintf(prev, sizeof prev, "%s.prev", c->trace_path);
        if (access(c->trace_path, F_OK) == 0 || access(prev, F_OK) == 0) {
            int rc = trace_resume(&c->trace, c->trace_path, c->st.step, &td, c->probe_tok, err, errlen);
            if (rc != -2) return rc;
            /* only a change of what the probe is made of explains another probe */
            const char *cc = c->config_change;
            int probe_changed = strstr(cc, "log.probe_windows:") || strstr(cc, "data.") || strstr(cc, "model.seq_len:");
            if (!probe_changed) {
                snprintf(err + strlen(err), errlen - strlen(err), " (no change of log.probe_windows, data.* or "
                         "model.seq_len explains it: is this another run's trace? move it away to start a new "
                         "trace after step %ld)", c->st.step);
                return -1;
            }
            char why[512];
            const char *tag = "of what this run records: ", *at = strstr(err, tag);
            snprintf(why, sizeof why, "%s", at ? at + strlen(tag) : err);
            char *cut = strstr(why, "; nothing was appended");
            if (cut) *cut = 0;
            if (trace_start_new(c, why, err, errlen)) return -1;
        } else {
            say(c, 0, "gatelab train: %s is missing and has no copy (trace.h5.prev): a new trace starts at step %ld; "
                "the evaluations before it are not in any trace", c->trace_path, c->st.step);
        }
    }
    return trace_create(&c->trace, c->trace_path, &td, c->probe_tok, c->probe_cat, err, errlen);
}

/* Rank 0's weights, AdamW moments and training state (fresh or from its
 * checkpoint, which only rank 0 reads) copied to every rank, so every rank
 * starts identical without a shared filesystem.  The other ranks then check
 * that their data gives the vocabulary rank 0's run has.  Returns 0, or -1
 * with a message on this rank. */
static int share_state(run_ctx *c, char *err, size_t errlen) {
    if (c->ranks < 2) return 0;
    gl_model *m = &c->m;
    dist_bcast(m->params, m->n_params * sizeof(float));
    dist_bcast(m->adam_m, m->n_params * sizeof(float));
    dist_bcast(m->adam_v, m->n_params * sizeof(float));
    dist_bcast(&c->st, sizeof c->st);
    if (!same_vocab(c)) {
        snprintf(err, errlen, "rank %d: data.file %s gives a different vocabulary than on rank 0; every rank must "
                 "read the same file", c->rank, c->mf->data.file);
        return -1;
    }
    return 0;
}

/* What the loop keeps between steps: the batch buffers, the optimiser's
 * settings, and the clocks and token counts of the progress line. */
typedef struct {
    int B, T;
    int *tok, *tg; /* (B*T) */
    float *mask;   /* (B*T) */
    gl_adamw opt;
    double t_start, t_log, t_draw, elapsed0;
    long log_tokens, step_at_start;
    float last_loss;
} train_loop;

static void loop_free(train_loop *lp) {
    free(lp->tok);
    free(lp->tg);
    free(lp->mask);
}

static int loop_init(train_loop *lp, const run_ctx *c, char *err, size_t errlen) {
    const gl_train_config *tc = &c->mf->train;
    memset(lp, 0, sizeof *lp);
    lp->B = tc->batch_size;
    lp->T = c->resolved.model.seq_len;
    const size_t NT = (size_t)lp->B * lp->T;
    lp->tok = malloc(NT * sizeof(int));
    lp->tg = malloc(NT * sizeof(int));
    lp->mask = malloc(NT * sizeof(float));
    if (!lp->tok || !lp->tg || !lp->mask) {
        snprintf(err, errlen, "out of memory for a batch");
        return -1;
    }
    lp->opt = (gl_adamw){tc->beta1, tc->beta2, tc->eps, tc->weight_decay, tc->grad_clip,
                         tc->weight_decay_policy == WD_ALL};
    lp->t_start = lp->t_log = timing_now_s();
    lp->t_draw = 0;
    lp->elapsed0 = c->st.elapsed_s;
    lp->step_at_start = c->st.step;
    lp->last_loss = NAN;
    return 0;
}

/* Forward of this rank's shard of the batch just drawn; with several ranks
 * the shard's loss is its share of the global batch's loss (model.h:
 * norm_mask_sum), and the shares and statistics are summed over the ranks in
 * rank order, so every rank sees the global loss, penalty and α.  Returns the
 * global loss. */
static float shard_forward(run_ctx *c, train_loop *lp) {
    gl_model *m = &c->m;
    const size_t off = (size_t)c->b0 * lp->T, NT = (size_t)lp->B * lp->T;
    if (c->ranks > 1) { /* every rank drew the whole batch: the global counts need no message */
        double msum = 0.0;
        for (size_t t = 0; t < NT; t++)
            if (lp->tg[t] >= 0) msum += lp->mask[t];
        m->norm_mask_sum = msum;
        m->norm_tokens = (long)NT;
    }
    float loss = model_forward(m, lp->tok + off, lp->tg + off, lp->mask + off, c->B_local, lp->T);
    /* the TSA paper's α (variable_depth.py: 1 - mean(halt_prob) per routed block, averaged over the
     * blocks) from the halting probabilities this training forward left, dropout as it ran */
    const int L = m->cfg.n_layer, tsa = m->cfg.depth_routing == DR_TSA && L > 1;
    double soft = 0.0;
    const size_t N = (size_t)c->B_local * lp->T;
    for (int n = 1; tsa && n < L; n++)
        for (size_t t = 0; t < N; t++) soft += 1.0 - (double)m->A[n].p[t];
    double sums[5] = {loss, m->task_loss, m->penalty, m->active_frac, soft};
    dist_sum_doubles(sums, 5);
    m->loss = (float)sums[0];
    m->task_loss = (float)sums[1];
    m->penalty = (float)sums[2];
    m->active_frac = (float)sums[3];
    c->alpha_paper = tsa ? sums[4] / ((double)(L - 1) * (double)NT) : NAN;
    return m->loss;
}

/* One optimiser step on the next training batch: each rank's gradient of its
 * shard, summed over the ranks in rank order, then the same AdamW update on
 * every rank.  Returns 0, or -1 when the loss or the gradient is not finite
 * (err says which, at which step; the step is not taken, on any rank). */
static int train_step(run_ctx *c, train_loop *lp, float *lr, float *gnorm, char *err, size_t errlen) {
    const gl_train_config *tc = &c->mf->train;
    const size_t NT = (size_t)lp->B * lp->T;
    data_train_batch_step(&c->ds, &c->st.data_rng, c->st.step, lp->B, lp->tok, lp->tg, lp->mask);
    /* random routing draws per step from (train.seed, step, global row): a resumed run draws the same */
    c->m.route_draw = routing_train_key(tc->seed, c->st.step);
    c->m.route_row0 = (long)c->b0 * lp->T;
    c->m.drop_key = dropout_train_key(tc->seed, c->st.step); /* model.dropout's masks, likewise */
    float loss = shard_forward(c, lp);
    *lr = adamw_schedule(c->st.step, tc->warmup, tc->steps, tc->lr, tc->min_lr);
    *gnorm = NAN;
    if (isfinite(loss)) { /* the global loss: every rank takes the same branch */
        model_zero_grad(&c->m);
        model_backward(&c->m);
        dist_sum_floats(c->m.grads, c->m.n_params);
        *gnorm = adamw_step(&c->m, &lp->opt, *lr, c->st.step + 1);
    }
    c->m.norm_mask_sum = 0; /* evaluation and probe passes normalise by their own batch */
    c->m.norm_tokens = 0;
    c->m.route_draw = 0; /* and take the evaluation draw */
    c->m.route_row0 = 0;
    c->m.drop_key = 0; /* evaluation runs without dropout */
    if (!isfinite(loss) || !isfinite(*gnorm)) {
        snprintf(err, errlen, "%s at step %ld (loss %g, gradient norm %g); the last good checkpoint is kept in %s — "
                 "lower train.lr or raise train.warmup and resume or restart",
                 !isfinite(loss) ? "the loss is not finite" : "the gradient is not finite", c->st.step + 1, loss, *gnorm,
                 c->ckpt_path);
        return -1;
    }
    lp->last_loss = loss;
    c->st.step++;
    c->st.tokens_seen += (long)NT;
    lp->log_tokens += (long)NT;
    c->st.log_loss_sum += c->m.task_loss;
    c->st.log_n++;
    c->st.eval_loss_sum += c->m.task_loss;
    c->st.eval_n++;
    return 0;
}

/* The log-interval metrics, the progress line and the registry flush at step. */
static int log_interval(run_ctx *c, train_loop *lp, float lr, float gnorm, double t, char *err, size_t errlen) {
    const gl_train_config *tc = &c->mf->train;
    const gl_model_config *mc = &c->m.cfg;
    const long step = c->st.step;
    double tps = lp->log_tokens / (t - lp->t_log);
    double mean_loss = c->st.log_loss_sum / c->st.log_n;
    metric(c, step, "train", "loss", mean_loss);
    metric(c, step, "train", "lr", lr);
    metric(c, step, "train", "grad_norm", gnorm);
    metric(c, step, "train", "tokens_per_s", tps);
    if (config_routing_counts(mc)) {
        metric(c, step, "train", "active_frac", c->m.active_frac);
        metric(c, step, "train", "tlops_saved", eval_tlops_saved(c->m.active_frac, mc->n_layer));
    }
    if (mc->depth_routing == DR_TSA) metric(c, step, "train", "penalty", c->m.penalty);
    if (mc->depth_routing == DR_EARLY_EXIT) metric(c, step, "train", "exit_loss", c->m.loss);
    char eta[32];
    fmt_eta(eta, sizeof eta, (tc->steps - step) * (t - lp->t_start) / (double)(step - lp->step_at_start));
    int plain_due = t - lp->t_draw >= 5.0 || step == tc->steps;
    if (c->tty || plain_due) {
        /* "train loss (last N batches)": the mean task loss of the batches since the last line, never
         * confused with the validation losses (the probe's every eval_every steps, the headline's) */
        say(c, c->tty && step != tc->steps, "step %ld/%d | train loss (last %ld batches) %.4f | lr %.2e | %.0f tok/s | ETA %s",
            step, tc->steps, c->st.log_n, mean_loss, lr, tps, eta);
        lp->t_draw = t;
    }
    if (flush_metrics(c, err, errlen)) return -1;
    lp->t_log = timing_now_s();
    lp->log_tokens = 0;
    c->st.log_loss_sum = 0;
    c->st.log_n = 0;
    return 0;
}

/* This process's signal flags, as the points of agreement read them (agree.h). */
static const agree_signals g_sig = {&g_stop, &g_ckpt};

/* Rank 0 writes the checkpoint; the ranks then agree on whether it worked. */
static int save_ckpt_agreed(run_ctx *c, char *err, size_t errlen) {
    int fail = c->rank == 0 && save_ckpt(c, err, errlen);
    if (agree_point(&g_sig, fail, err, errlen).fail) return -1;
    if (c->rank != 0 && kill_due(c)) raise(SIGKILL); /* the checkpoint is on disk: rank 0 agreed */
    return 0;
}

/* Steps until train.steps or a stop signal: log, evaluate and checkpoint when
 * due (rank 0 writes; the ranks agree on signals and failures before they act
 * on them, so every rank leaves the loop at the same step).  Returns 0, 1 (a
 * non-finite loss or gradient) or 2 (an I/O error); err says what happened. */
static int train_loop_run(run_ctx *c, train_loop *lp, char *err, size_t errlen) {
    const gl_train_config *tc = &c->mf->train;
    const int writer = c->rank == 0;
    int fail = writer && c->st.step == 0 && tc->eval_every > 0 && evaluate_now(c, NAN, err, errlen);
    agree_flags a = agree_point(&g_sig, fail, err, errlen);
    if (a.fail) return 2;
    if (a.stop) /* stopped before the first step: keep where we are */
        return save_ckpt_agreed(c, err, errlen) ? 2 : 0;
    while (c->st.step < tc->steps) {
        float lr, gnorm;
        if (train_step(c, lp, &lr, &gnorm, err, errlen)) return 1;
        const long step = c->st.step;
        double t = timing_now_s();
        c->st.elapsed_s = lp->elapsed0 + (t - lp->t_start);
        if (writer && (step % tc->log_every == 0 || step == tc->steps)) fail = log_interval(c, lp, lr, gnorm, t, err, errlen);
        int eval_due = (tc->eval_every > 0 && step % tc->eval_every == 0) || step == tc->steps;
        if (eval_due) {
            /* the paper's α is read at each evaluation from the training batch just taken (phase6_language.py) */
            if (writer && !isnan(c->alpha_paper)) {
                metric(c, step, "train", "alpha_paper", c->alpha_paper);
                metric(c, step, "train", "tlops_saved_paper", eval_tlops_saved(c->alpha_paper, c->m.cfg.n_layer));
            }
            if (writer && !fail) fail = evaluate_now(c, c->st.eval_n ? c->st.eval_loss_sum / c->st.eval_n : NAN, err, errlen);
            c->st.eval_loss_sum = 0;
            c->st.eval_n = 0;
            lp->t_log = timing_now_s();
        }
        a = agree_point(&g_sig, fail, err, errlen);
        if (a.fail) return 2;
        int ckpt_due = (tc->ckpt_every > 0 && step % tc->ckpt_every == 0) || step == tc->steps || a.stop || a.ckpt;
        if (ckpt_due) {
            if (save_ckpt_agreed(c, err, errlen)) return 2;
            if (a.ckpt) say(c, 0, "checkpoint at step %ld (SIGUSR1)", step);
            g_ckpt = 0;
            lp->t_log = timing_now_s();
        }
        if (a.stop) break;
    }
    return 0;
}

/* With several ranks: the time rank 0 spent in collectives (waiting for the
 * slower ranks included) and the gradient volume of a step, on the console,
 * in train.log and as metrics (train: ranks, comm_s, comm_share). */
static void report_ranks(run_ctx *c, const train_loop *lp) {
    if (c->ranks < 2) return;
    gl_dist_stats ds;
    dist_stats(&ds);
    const double span = timing_now_s() - lp->t_start;
    const long steps = c->st.step - lp->step_at_start;
    say(c, 0, "ranks: %d (%s) x %d threads | communication %.3f s in %ld collectives, %.1f %% of %.1f s | "
        "gradient %.2f MiB per step", c->ranks, dist_kind(), omp_get_max_threads(), ds.comm_s, ds.calls,
        span > 0 ? 100.0 * ds.comm_s / span : 0.0, span, c->m.n_params * sizeof(float) / 1048576.0);
    metric(c, c->st.step, "train", "ranks", c->ranks);
    metric(c, c->st.step, "train", "comm_s", ds.comm_s);
    if (span > 0 && steps > 0) metric(c, c->st.step, "train", "comm_share", ds.comm_s / span);
}

/* The headline of a finished run: the whole validation split, and the test
 * split when the data has one, soft and (routed models) hard, recorded with
 * headline_record.  Returns 0, or
 * -1 with a message (the run stays FINISHED; `gatelab eval RUN --record`
 * can record it later). */
static int final_evaluation(run_ctx *c, char *err, size_t errlen) {
    if (c->rank != 0 || !c->db) return 0; /* rank 0 alone evaluates and writes the registry */
    const gl_model_config *mc = &c->m.cfg;
    const int text = c->mf->data.task == TASK_TEXT;
    const gl_split splits[2] = {SPLIT_VAL, SPLIT_TEST};
    for (int k = 0; k < 2; k++) {
        if (data_eval_windows(&c->ds, splits[k]) <= 0) continue;
        gl_eval_result r, hard;
        int have_hard = 0;
        const char *name = data_split_name(splits[k]);
        if (headline_measure(&c->m, &c->ds, splits[k], &r, &hard, &have_hard, err, errlen) ||
            headline_record(c->db, c->run_id, c->st.step, name, &r, have_hard ? &hard : NULL, text,
                            mc->depth_routing != DR_NONE, mc->n_layer, err, errlen))
            return -1;
        char extra[96] = "";
        if (have_hard)
            snprintf(extra, sizeof extra, " | α %.3f | skipping done: loss %.4f, α %.3f", r.active_frac, hard.loss,
                     hard.active_frac);
        say(c, 0, "headline: %s loss %.4f ± %.4f nats/token over the whole %s split (%ld windows, %.0f tokens, step "
                  "%ld)%s", name, r.loss, r.loss_se, name, r.windows, r.tokens, c->st.step, extra);
    }
    return 0;
}

/* train.record_best: of the periodic evaluations at the official schedule (steps k·eval_every,
 * k >= 1; gatelab's step-0 evaluation and a last step off the schedule are not among them), the
 * one with the lowest validation loss, its values recorded beside the headline as val/best.*
 * (the TSA paper's toy tasks report accuracy there: core/trainer.py keeps the best val loss).
 * Read back from the registry, so a resumed run counts the evaluations of every session.  The
 * loss is the periodic one (val/loss on the first train.eval_windows windows, or val/random.loss
 * with train.eval_mode = random).  Returns 0, or -1 with a message. */
static int record_best(run_ctx *c, char *err, size_t errlen) {
    const gl_train_config *tc = &c->mf->train;
    if (!tc->record_best || c->rank != 0 || !c->db) return 0;
    const char *lname = tc->eval_mode == EM_RANDOM ? "random.loss" : "loss";
    gl_metric_point *pts = NULL;
    int n = 0;
    if (db_metric_series(c->db, c->run_id, "val", lname, NULL, &pts, &n, err, errlen)) return -1;
    int best = -1;
    for (int i = 0; i < n; i++) {
        if (pts[i].step <= 0 || pts[i].step % tc->eval_every != 0 || isnan(pts[i].value)) continue;
        if (i > 0 && pts[i - 1].step == pts[i].step) continue; /* of one step, the row on the most windows */
        if (best < 0 || pts[i].value < pts[best].value) best = i; /* strict: the earliest of equal losses */
    }
    if (best < 0) {
        free(pts);
        say(c, 0, "warning: train.record_best: no evaluation at a multiple of train.eval_every = %d before step %ld; "
                  "no val/best.* recorded", tc->eval_every, c->st.step);
        return 0;
    }
    const long at = pts[best].step;
    const gl_prov pv = pts[best].prov;
    const int text = c->mf->data.task == TASK_TEXT;
    metric_on(c, c->st.step, "val", "best.loss", pts[best].value, &pv, 0);
    metric_on(c, c->st.step, "val", "best.step", (double)at, &pv, 0);
    const char *pre = tc->eval_mode == EM_RANDOM ? "random." : "";
    const char *more[2] = {text ? "bpc" : "token_acc", text ? NULL : "seq_acc"};
    char line[160];
    int k = snprintf(line, sizeof line, "best periodic evaluation: step %ld | val loss %.4f", at, pts[best].value);
    for (int j = 0; j < 2 && more[j]; j++) {
        double v;
        char src[32];
        snprintf(src, sizeof src, "%s%s", pre, more[j]);
        int got = db_metric_get(c->db, c->run_id, at, "val", src, NULL, &v, err, errlen);
        if (got < 0) {
            free(pts);
            return -1;
        }
        if (got == 0) continue;
        char nm[32];
        snprintf(nm, sizeof nm, "best.%s", more[j]);
        metric_on(c, c->st.step, "val", nm, v, &pv, 0);
        if (k > 0 && (size_t)k < sizeof line) k += snprintf(line + k, sizeof line - (size_t)k, " | %s %.4f", more[j], v);
    }
    free(pts);
    say(c, 0, "%s (val/best.*)", line);
    return flush_metrics(c, err, errlen);
}

/* TSA: the paper's α in the paper's three conventions, from the train/alpha_paper rows of every
 * session (the registry), recorded at the last step beside the hard α of the headline:
 *   alpha_paper.mean_evals  mean over the evaluations at steps k·eval_every, k >= 1
 *                           (Shakespeare and enwik8: the mean of the 20 evaluation points)
 *   alpha_paper.last_eval   at the last of those evaluations (the λ sweep)
 *   alpha_paper.last_batch  of the last training batch, step train.steps (the toy tasks)
 *   alpha_paper.n_evals     how many evaluations mean_evals averages
 * and tlops_saved_paper.* = (1 − α)(L − 1)/L of each (linear in α, so the mean's is the mean's).
 * Returns 0, or -1 with a message. */
static int record_alpha_paper(run_ctx *c, char *err, size_t errlen) {
    const gl_train_config *tc = &c->mf->train;
    const int L = c->m.cfg.n_layer;
    if (c->m.cfg.depth_routing != DR_TSA || L < 2 || c->rank != 0 || !c->db) return 0;
    gl_metric_point *pts = NULL;
    int n = 0;
    if (db_metric_series(c->db, c->run_id, "train", "alpha_paper", NULL, &pts, &n, err, errlen)) return -1;
    double sum = 0.0, last_eval = NAN, last_batch = NAN;
    long k = 0, last_eval_step = -1;
    for (int i = 0; i < n; i++) {
        if (i > 0 && pts[i - 1].step == pts[i].step) continue;
        if (pts[i].step == c->st.step) last_batch = pts[i].value;
        if (pts[i].step <= 0 || pts[i].step % tc->eval_every != 0 || isnan(pts[i].value)) continue;
        sum += pts[i].value;
        k++;
        last_eval = pts[i].value;
        last_eval_step = pts[i].step;
    }
    free(pts);
    const double mean = k > 0 ? sum / (double)k : NAN;
    const struct { const char *conv; double a; } rows[3] = {
        {"mean_evals", mean}, {"last_eval", last_eval}, {"last_batch", last_batch}};
    char nm[48];
    for (int j = 0; j < 3; j++) {
        if (isnan(rows[j].a)) continue;
        snprintf(nm, sizeof nm, "alpha_paper.%s", rows[j].conv);
        metric(c, c->st.step, "train", nm, rows[j].a);
        snprintf(nm, sizeof nm, "tlops_saved_paper.%s", rows[j].conv);
        metric(c, c->st.step, "train", nm, eval_tlops_saved(rows[j].a, L));
    }
    metric(c, c->st.step, "train", "alpha_paper.n_evals", (double)k);
    say(c, 0, "the paper's α (soft, training batches): mean of %ld evaluations %.4f | last evaluation (step %ld) %.4f | "
              "last batch %.4f (train/alpha_paper.*)", k, mean, last_eval_step, last_eval, last_batch);
    return flush_metrics(c, err, errlen);
}

/* 1 when the run has a headline at its checkpoint's step (0 also when the registry cannot say). */
static int has_headline(run_ctx *c) {
    if (c->rank != 0 || !c->db) return 1; /* rank 0 alone records it */
    gl_metric_val v;
    char e2[256];
    return db_metric_at(c->db, c->run_id, "val", "final.loss", NULL, NULL, &v, e2, sizeof e2) == 1 && v.step == c->st.step;
}

/* The outcome after the loop (failed: train_loop_run's code), its closing
 * line, and what the registry keeps: artifacts and the last metrics. */
static gl_train_outcome train_finish(run_ctx *c, const train_loop *lp, int failed, char *err, size_t errlen) {
    const gl_train_config *tc = &c->mf->train;
    gl_train_outcome outcome;
    char e2[512] = "";
    if (failed) {
        outcome = TRAIN_FAILED;
        say(c, 0, "FAILED: %s", err);
    } else if (g_stop && c->st.step < tc->steps) {
        outcome = TRAIN_KILLED;
        snprintf(err, errlen, "stopped by signal %d at step %ld; checkpoint saved: continue with --resume %s",
                 (int)g_stop, c->st.step, c->run_id);
        say(c, 0, "KILLED: %s", err);
    } else {
        outcome = TRAIN_FINISHED;
        /* the hex float makes bit-for-bit comparisons of runs possible from the log; a session that took
         * no step (resumed from the final checkpoint, e.g. killed during the headline evaluation) has no
         * train loss of its own: the session that took the last step logged it.  "Objective": what the
         * optimiser minimised on that one batch (m->loss: the task loss, + the λ penalty for TSA, the
         * weighted exits' loss for early exit), not the train loss of the progress line */
        if (isnan(lp->last_loss))
            say(c, 0, "finished %d steps in %.1f s | no step in this session (the checkpoint was at step %ld) | "
                      "run folder %s", tc->steps, c->st.elapsed_s, c->st.step, c->dir);
        else
            say(c, 0, "finished %d steps in %.1f s | objective of the last batch %.6f (%a) | run folder %s", tc->steps,
                c->st.elapsed_s, lp->last_loss, lp->last_loss, c->dir);
        double span = c->st.elapsed_s - lp->elapsed0;
        if (c->trace_s > 0 && span > 0) {
            say(c, 0, "trace: %.3f s in probe passes and writes, %.2f %% of this session's %.1f s", c->trace_s,
                100.0 * c->trace_s / span, span);
            metric(c, c->st.step, "train", "trace_share", c->trace_s / span);
        }
        err[0] = 0;
        if (record_best(c, e2, sizeof e2)) say(c, 0, "warning: no val/best.* recorded (%s)", e2);
        if (record_alpha_paper(c, e2, sizeof e2)) say(c, 0, "warning: no train/alpha_paper.* recorded (%s)", e2);
        if (final_evaluation(c, e2, sizeof e2))
            say(c, 0, "warning: no headline recorded (%s); record it with `gatelab eval %s --record`", e2, c->run_id);
    }
    if (c->trace) {
        trace_close(c->trace);
        c->trace = NULL;
        if (access(c->trace_path, F_OK) == 0) db_artifact_put(c->db, c->run_id, "trace", c->trace_path, e2, sizeof e2);
    }
    if (c->db && access(c->ckpt_path, F_OK) == 0) db_artifact_put(c->db, c->run_id, "ckpt", c->ckpt_path, e2, sizeof e2);
    flush_metrics(c, e2, sizeof e2);
    return outcome;
}

gl_train_outcome train_run(const gl_manifest *mf, const gl_train_opts *o, char *err, size_t errlen) {
    run_ctx c;
    train_loop lp;
    memset(&c, 0, sizeof c);
    memset(&lp, 0, sizeof lp);
    c.mf = mf;
    c.rank = dist_rank();
    c.ranks = dist_size();
    c.quiet = o->quiet || c.rank != 0; /* one progress line: rank 0's */
    c.alpha_paper = NAN;
    c.tty = isatty(2);
    gl_train_outcome outcome = TRAIN_FAILED;
    int registered = 0, own = 0; /* own: this rank's set-up failed (its message is its own) */
    char e2[512] = "";
    const gl_train_config *tc = &mf->train;

    snprintf(c.results, sizeof c.results, "%s",
             o->results ? o->results : getenv("GATELAB_RESULTS") ? getenv("GATELAB_RESULTS") : mf->log.results);
    if (tc->threads > 0) omp_set_num_threads(tc->threads);
    install_signals();
    /* every rank: data and model; rank 0 alone: run folder, weights, registry, trace */
    own = setup_model(&c, o, err, errlen);
    if (c.ranks > 1) { /* before rank 0 touches the run folder or the registry */
        if (agree_setup(&g_sig, &own, err, errlen)) goto cleanup;
        if (agree_config(&c.ds, c.config_ini, err, errlen)) {
            own = c.rank == 0;
            goto cleanup;
        }
        /* each rank's kernels, threads and CPU (they can differ across machines), for the registry */
        char env[DB_ENV_MAX];
        db_environment_text(env, sizeof env);
        c.rank_env = malloc((size_t)c.ranks * DB_ENV_MAX);
        int no_mem = !c.rank_env;
        dist_max_ints(&no_mem, 1);
        if (no_mem) {
            snprintf(err, errlen, "out of memory for %d ranks' environments", c.ranks);
            own = !c.rank_env;
            goto cleanup;
        }
        dist_gather_text(env, c.rank_env, DB_ENV_MAX);
    }
    own = own || (c.rank == 0 && (setup_run(&c, o, err, errlen) || setup_registry(&c, o, &registered, err, errlen)));
    /* a finished run: nothing to train, nothing appended to its log, metrics or trace; the
     * registry says FINISHED (cleanup), also when a kill had landed before it was told */
    int done = c.rank == 0 && !own && o->resume && c.st.step >= tc->steps;
    if (c.rank == 0 && !own && !done) own = setup_trace(&c, o, err, errlen);
    if (agree_setup(&g_sig, &own, err, errlen)) goto cleanup;
    dist_max_ints(&done, 1);
    if (done) {
        if (c.rank == 0)
            fprintf(stderr, "gatelab train: run %s has already finished: its checkpoint is at step %ld of train.steps = %d; "
                    "nothing to do\n", c.run_id, c.st.step, tc->steps);
        err[0] = 0;
        outcome = TRAIN_FINISHED;
        /* a kill during the headline evaluation left the run without one: record it now (and the
         * summaries recorded just before it) */
        if (!has_headline(&c)) {
            if (record_best(&c, e2, sizeof e2)) say(&c, 0, "warning: no val/best.* recorded (%s)", e2);
            if (record_alpha_paper(&c, e2, sizeof e2)) say(&c, 0, "warning: no train/alpha_paper.* recorded (%s)", e2);
            if (final_evaluation(&c, e2, sizeof e2))
                say(&c, 0, "warning: no headline recorded (%s); record it with `gatelab eval %s --record`", e2, c.run_id);
        }
        goto cleanup;
    }
    own = share_state(&c, err, errlen) || loop_init(&lp, &c, err, errlen);
    if (agree_setup(&g_sig, &own, err, errlen)) goto cleanup;
    say(&c, 0, "gatelab train: run %s | %zu parameters | %d threads | %s", c.run_id, model_param_count(&c.m),
        omp_get_max_threads(), c.dir);
    if (c.ranks > 1)
        say(&c, 0, "data parallel: %d ranks (%s) x %d threads; the batch of %d sequences split %d-%d per rank",
            c.ranks, dist_kind(), omp_get_max_threads(), tc->batch_size, tc->batch_size / c.ranks,
            (tc->batch_size + c.ranks - 1) / c.ranks);
    if (c.from_ckpt) say(&c, 0, "resuming at step %ld of %d", c.st.step, tc->steps);
    int failed = train_loop_run(&c, &lp, err, errlen);
    report_ranks(&c, &lp);
    outcome = train_finish(&c, &lp, failed, err, errlen);

cleanup:
    if (registered) {
        const char *status = outcome == TRAIN_FINISHED ? "FINISHED" : outcome == TRAIN_KILLED ? "KILLED" : "FAILED";
        if (db_run_finish(c.db, c.run_id, status, (int)outcome, outcome == TRAIN_FINISHED ? NULL : err, e2, sizeof e2) &&
            outcome == TRAIN_FINISHED) {
            snprintf(err, errlen, "%s", e2);
            outcome = TRAIN_FAILED;
        }
    }
    if (c.rank != 0 && !own) err[0] = '\0'; /* rank 0 reports what every rank shares */
    loop_free(&lp);
    ctx_free(&c);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGUSR1, SIG_DFL);
    return outcome;
}
