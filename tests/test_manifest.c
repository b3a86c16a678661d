/*
 * test_manifest.c — manifests (harness/store/manifest.c) and model configs
 * (model/config.c): defaults, the shipped experiments, scales and their
 * precedence, overrides and aliases, [sweep] lists, every class of error
 * message, the canonical-text round trip and the model hash.
 *
 * Files are written to a fresh folder under /tmp; the shipped manifests are
 * read from $GATELAB_ROOT (default: the current folder, which tests/run.sh
 * sets to the repository root).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "store/manifest.h"
#include "model/config.h"

static char tmpdir[256];

static const char *root(void) {
    const char *r = getenv("GATELAB_ROOT");
    return r && *r ? r : ".";
}

/* Write content to tmpdir/name; returns the path (static buffer rotation). */
static const char *write_file(const char *name, const char *content) {
    static char paths[8][512];
    static int next;
    char *p = paths[next++ % 8];
    snprintf(p, 512, "%s/%s", tmpdir, name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(content, f);
    fclose(f);
    return p;
}

static int setup_dir(void **state) {
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/gl_test_manifest_XXXXXX");
    assert_non_null(mkdtemp(tmpdir));
    /* the manifests in tmpdir find this scales.ini first */
    write_file("scales.ini", "[tiny]\nd_model = 32\nn_layer = 2\nn_head = 2\nn_kv_head = 1\n"
                             "d_ff = 64\n\n[wide]\nd_model = 96\nn_layer = 3\nn_head = 6\n"
                             "n_kv_head = 3\nd_ff = 384\n");
    return 0;
}

static int teardown_dir(void **state) {
    (void)state;
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

/* Load a manifest with the given text (plus overrides) and require failure
 * with every needle in the message. */
static void expect_error(const char *name, const char *text, int n_over, char *const *over, ...) {
    gl_manifest mf;
    char err[2048] = "";
    const char *path = text ? write_file(name, text) : name;
    int rc = manifest_load(&mf, path, n_over, over, err, sizeof err);
    printf("  error: %s\n", err);
    assert_int_equal(rc, -1);
    va_list ap;
    va_start(ap, over);
    for (const char *needle; (needle = va_arg(ap, const char *));) {
        if (!strstr(err, needle)) {
            printf("  missing \"%s\" in the message\n", needle);
            fail();
        }
    }
    va_end(ap);
}

static void load_ok(gl_manifest *mf, const char *name, const char *text, int n_over,
                    char *const *over) {
    char err[2048] = "";
    const char *path = write_file(name, text);
    int rc = manifest_load(mf, path, n_over, over, err, sizeof err);
    if (rc) printf("  unexpected error: %s\n", err);
    assert_int_equal(rc, 0);
}

/* ------------------------------------------------------------ config --- */

static void test_config_defaults_and_validate(void **state) {
    (void)state;
    gl_model_config c;
    char err[512];
    config_defaults(&c);
    assert_int_equal(c.vocab_size, 65);
    assert_int_equal(c.d_model, 128);
    assert_int_equal(c.n_layer, 4);
    assert_int_equal(c.n_head, 4);
    assert_int_equal(c.n_kv_head, 4);
    assert_int_equal(c.d_ff, 512);
    assert_int_equal(c.seq_len, 128);
    assert_true(c.norm_eps == 1e-6f && c.rope_base == 10000.0f);
    assert_true(c.qk_norm == 1 && c.tied == 1 && c.decay_gates == 1);
    assert_true(c.value_residual == VR_NONE && c.resformer_variant == RF_PLUS);
    assert_true(c.depth_routing == DR_NONE && c.exit_weighting == EE_WEIGHT_LINEAR);
    assert_true(c.router_init_bias == -2.0f && c.tsa_lambda == 0.0f && c.router_hidden == 0);
    assert_int_equal(config_validate(&c, err, sizeof err), 0);
    assert_int_equal(config_head_dim(&c), 32);
    assert_int_equal(config_router_hidden(&c), 32);
    c.d_model = 32;
    assert_int_equal(config_router_hidden(&c), 16); /* max(d/4, 16) */
    c.router_hidden = 5;
    assert_int_equal(config_router_hidden(&c), 5);
    printf("  defaults as documented, valid; head dim 32, router hidden max(d/4,16)\n");

#define BAD(stmt, needle)                                                                          \
    do {                                                                                           \
        config_defaults(&c);                                                                       \
        stmt;                                                                                      \
        assert_int_equal(config_validate(&c, err, sizeof err), -1);                                \
        printf("  refused: %s\n", err);                                                            \
        assert_non_null(strstr(err, needle));                                                      \
    } while (0)
    BAD((c.n_head = 8, c.n_kv_head = 3), "model.n_kv_head (3) must divide model.n_head (8)");
    BAD(c.n_head = 3, "model.n_head (3) must divide model.d_model (128)");
    BAD((c.d_model = 24, c.n_head = 8), "must be even");
    BAD(c.n_layer = 0, "model.n_layer (0) must be between 1 and 64");
    BAD(c.vocab_size = 0, "model.vocab_size");
    BAD(c.norm_eps = 0.0f, "model.norm_eps");
    BAD(c.tsa_lambda = -1.0f, "model.tsa_lambda");
    BAD(c.vr_last_k = 4, "model.value_residual_last_k (4)");
    BAD((c.n_layer = 1, c.value_residual = VR_SATFORMER), "needs model.n_layer >= 2");
    BAD((c.n_layer = 1, c.depth_routing = DR_TSA), "model.depth_routing = tsa needs");
    BAD(c.qk_norm = 2, "model.qk_norm");
    BAD((c.depth_routing = DR_MOD, c.mod_capacity = 0.0f), "model.mod_capacity (0) must be in (0, 1]");
    BAD((c.depth_routing = DR_MOD, c.mod_capacity = 1.5f), "model.mod_capacity");
    BAD((c.depth_routing = DR_MOD, c.mod_capacity = NAN), "model.mod_capacity");
    BAD((c.depth_routing = DR_MOD, c.mod_every = 0), "model.mod_every (0) must be between 1 and 64");
    BAD((c.depth_routing = DR_RANDOM, c.random_alpha = -0.1f), "model.random_alpha");
    BAD((c.n_layer = 1, c.depth_routing = DR_MOD), "model.depth_routing = mod needs");
    BAD((c.depth_routing = DR_RANDOM, c.cross_layer = CL_DENSEFORMER), "cannot be combined with model.depth_routing = random");
#undef BAD
    config_defaults(&c);
    assert_true(c.mod_capacity == 0.125f && c.mod_every == 2 && c.random_alpha == 0.5f);
    c.mod_capacity = 7.0f; /* the MoD keys only matter to mod */
    assert_int_equal(config_validate(&c, err, sizeof err), 0);
    c.depth_routing = DR_MOD;
    c.mod_capacity = 1.0f;
    assert_int_equal(config_validate(&c, err, sizeof err), 0);
    c.n_layer = 6; /* mod_every 2: blocks 1, 3, 5 */
    for (int n = 0; n < 6; n++) assert_int_equal(config_block_routed(&c, n), n == 1 || n == 3 || n == 5);
    assert_int_equal(config_mod_k(&c, 128), 128);
    c.mod_capacity = 0.125f;
    assert_int_equal(config_mod_k(&c, 128), 16);
    assert_int_equal(config_mod_k(&c, 4), 1); /* 0.5 rounds up */
    assert_int_equal(config_mod_k(&c, 3), 1); /* at least 1 */
    printf("  mod / random keys: defaults 0.125, 2, 0.5; routed blocks 1, 3, 5 of 6; k = round(c·T) >= 1\n");
    config_defaults(&c);
    c.value_residual = VR_RESFORMER;
    c.depth_routing = DR_EARLY_EXIT;
    assert_int_equal(config_validate(&c, err, sizeof err), 0);
    printf("  early_exit with a value residual is accepted\n");
}

static void test_config_mixes_and_names(void **state) {
    (void)state;
    gl_model_config c;
    config_defaults(&c);
    c.n_layer = 6;
    for (int n = 0; n < 6; n++) assert_int_equal(config_layer_mixes_v1(&c, n), 0);
    c.value_residual = VR_SATFORMER;
    for (int n = 0; n < 6; n++) assert_int_equal(config_layer_mixes_v1(&c, n), n >= 1);
    c.vr_last_k = 2; /* only blocks 4 and 5 */
    for (int n = 0; n < 6; n++) assert_int_equal(config_layer_mixes_v1(&c, n), n >= 4);
    c.vr_last_k = 5; /* all of 1..5 */
    for (int n = 0; n < 6; n++) assert_int_equal(config_layer_mixes_v1(&c, n), n >= 1);
    printf("  mixing blocks: none / all n>=1 / last_k=2 -> {4,5} / last_k=5 -> 1..5\n");

    const char *vr[] = {"none", "resformer", "satformer"};
    const char *rf[] = {"plus", "learnable", "identity"};
    const char *dr[] = {"none", "tsa", "early_exit"};
    const char *ee[] = {"linear", "uniform"};
    for (int i = 0; i < 3; i++) {
        gl_value_residual v;
        gl_resformer_variant r;
        gl_depth_routing d;
        assert_int_equal(config_parse_value_residual(vr[i], &v), 0);
        assert_int_equal((int)v, i);
        assert_string_equal(config_value_residual_name(v), vr[i]);
        assert_int_equal(config_parse_resformer_variant(rf[i], &r), 0);
        assert_int_equal((int)r, i);
        assert_string_equal(config_resformer_variant_name(r), rf[i]);
        assert_int_equal(config_parse_depth_routing(dr[i], &d), 0);
        assert_int_equal((int)d, i);
        assert_string_equal(config_depth_routing_name(d), dr[i]);
    }
    for (int i = 0; i < 2; i++) {
        gl_exit_weighting w;
        assert_int_equal(config_parse_exit_weighting(ee[i], &w), 0);
        assert_int_equal((int)w, i);
        assert_string_equal(config_exit_weighting_name(w), ee[i]);
    }
    gl_value_residual v;
    assert_int_equal(config_parse_value_residual("SATFormer", &v), -1);
    assert_int_equal(config_parse_value_residual(NULL, &v), -1);
    printf("  every enum name parses back to itself; unknown names refused\n");
}

/* --------------------------------------------------------- manifests --- */

static void test_defaults_and_empty(void **state) {
    (void)state;
    gl_manifest a, b;
    manifest_defaults(&a);
    assert_int_equal(a.model.vocab_size, 0);
    assert_int_equal(a.data.task, TASK_TEXT);
    assert_string_equal(a.data.file, "tinyshakespeare.txt");
    assert_true(a.data.train_frac == 0.9f && a.data.val_frac == 0.1f);
    assert_true(a.data.seq_items == 10 && a.data.n_symbols == 16);
    assert_true(a.data.mqar_pairs == 8 && a.data.mqar_queries == 4);
    assert_true(a.data.mqar_keys == 32 && a.data.mqar_values == 32);
    assert_true(a.train.steps == 200 && a.train.batch_size == 16 && a.train.lr == 1e-3f);
    assert_true(a.train.min_lr == 1e-4f && a.train.warmup == 20 && a.train.weight_decay == 0.1f);
    assert_true(a.train.beta1 == 0.9f && a.train.beta2 == 0.95f && a.train.eps == 1e-8f);
    assert_true(a.train.grad_clip == 1.0f && a.train.seed == 1 && a.train.threads == 0);
    assert_true(a.train.eval_every == 50 && a.train.eval_windows == 16);
    assert_true(a.train.ckpt_every == 100 && a.train.log_every == 10);
    assert_string_equal(a.log.results, "results");
    assert_true(a.log.name[0] == 0 && a.log.experiment[0] == 0);
    assert_true(a.log.trace == 1 && a.log.probe_windows == 4);
    load_ok(&b, "empty.ini", "", 0, NULL);
    assert_memory_equal(&a.model, &b.model, sizeof a.model);
    assert_memory_equal(&a.data, &b.data, sizeof a.data);
    assert_memory_equal(&a.train, &b.train, sizeof a.train);
    assert_memory_equal(&a.log, &b.log, sizeof a.log);
    assert_int_equal(b.n_sweep, 0);
    assert_non_null(strstr(b.path, "empty.ini"));
    printf("  defaults as documented; an empty manifest loads to exactly the defaults\n");
}

static void test_shipped_experiments(void **state) {
    (void)state;
    char path[1024], err[2048];
    gl_manifest mf;
    snprintf(path, sizeof path, "%s/experiments/shakespeare_baseline.ini", root());
    if (access(path, R_OK) != 0) {
        printf("  SKIP: %s not found (run from the repository root or set GATELAB_ROOT)\n", path);
        skip();
    }
    int rc = manifest_load(&mf, path, 0, NULL, err, sizeof err);
    if (rc) printf("  %s\n", err);
    assert_int_equal(rc, 0);
    assert_string_equal(mf.scale, "xs");
    assert_true(mf.model.d_model == 64 && mf.model.n_layer == 4 && mf.model.n_head == 4);
    assert_true(mf.model.n_kv_head == 4 && mf.model.d_ff == 256);
    assert_int_equal(mf.data.task, TASK_TEXT);
    printf("  %s: scale xs -> d 64, L 4, H 4, Hkv 4, d_ff 256\n", path);

    snprintf(path, sizeof path, "%s/experiments/copy_tsa.ini", root());
    rc = manifest_load(&mf, path, 0, NULL, err, sizeof err);
    if (rc) printf("  %s\n", err);
    assert_int_equal(rc, 0);
    assert_int_equal(mf.data.task, TASK_COPY);
    assert_int_equal(mf.model.depth_routing, DR_TSA);
    assert_int_equal(mf.n_sweep, 1);
    assert_string_equal(mf.sweep[0].key, "model.tsa_lambda");
    assert_string_equal(mf.sweep[0].values, "0, 0.003, 0.01, 0.03, 0.1");
    printf("  %s: copy + tsa, sweep %s = %s (line %d)\n", path, mf.sweep[0].key,
           mf.sweep[0].values, mf.sweep[0].line);

    snprintf(path, sizeof path, "%s/experiments/scales.ini", root());
    rc = manifest_load(&mf, path, 0, NULL, err, sizeof err);
    printf("  scales.ini is not a manifest: %s\n", err);
    assert_int_equal(rc, -1);
}

static void test_scale_precedence(void **state) {
    (void)state;
    gl_manifest mf;
    /* explicit key after the scale */
    load_ok(&mf, "s1.ini", "[model]\nscale = wide\nn_layer = 5\n", 0, NULL);
    assert_true(mf.model.d_model == 96 && mf.model.n_layer == 5 && mf.model.n_head == 6);
    assert_true(mf.model.n_kv_head == 3 && mf.model.d_ff == 384);
    /* explicit key before the scale */
    load_ok(&mf, "s2.ini", "[model]\nd_ff = 200\nscale = wide\n", 0, NULL);
    assert_true(mf.model.d_model == 96 && mf.model.d_ff == 200);
    /* the command line wins over the file's scale, and may choose the scale */
    char *over1[] = {"model.n_head=4"};
    load_ok(&mf, "s3.ini", "[model]\nscale = tiny\n", 1, over1);
    assert_true(mf.model.d_model == 32 && mf.model.n_head == 4 && mf.model.n_kv_head == 1);
    char *over2[] = {"scale=wide"};
    load_ok(&mf, "s4.ini", "[model]\nscale = tiny\nd_model = 48\n", 1, over2);
    assert_string_equal(mf.scale, "wide");
    assert_true(mf.model.d_model == 48 && mf.model.n_layer == 3);
    printf("  explicit keys win over the scale before or after it; overrides pick scales\n");

    /* manifest_set alone applies all five (it has no record of explicit keys) */
    manifest_defaults(&mf);
    snprintf(mf.path, sizeof mf.path, "%s/x.ini", tmpdir);
    char err[1024];
    assert_int_equal(manifest_set(&mf, "model.scale=tiny", "sweep", 0, err, sizeof err), 0);
    assert_true(mf.model.d_model == 32 && mf.model.n_layer == 2 && mf.model.d_ff == 64);
    assert_int_equal(manifest_set(&mf, "model.scale=huge", "sweep", 0, err, sizeof err), -1);
    printf("  manifest_set: %s\n", err);
    assert_non_null(strstr(err, "unknown scale"));
}

static void test_overrides_and_aliases(void **state) {
    (void)state;
    gl_manifest mf;
    char *over[] = {"lambda=0.05",      "seed=18446744073709551615", "steps = 7",
                    "train.lr=3e-4",    "value_residual=satformer",  "log.trace=off",
                    "model.qk_norm=No", "depth_routing=tsa",         "data.task=sort"};
    load_ok(&mf, "o.ini", "[train]\nlr = 1\n", 9, over);
    assert_true(mf.model.tsa_lambda == 0.05f);
    assert_true(mf.train.seed == UINT64_MAX);
    assert_int_equal(mf.train.steps, 7);
    assert_true(mf.train.lr == 3e-4f);
    assert_int_equal(mf.model.value_residual, VR_SATFORMER);
    assert_int_equal(mf.model.depth_routing, DR_TSA);
    assert_int_equal(mf.log.trace, 0);
    assert_int_equal(mf.model.qk_norm, 0);
    assert_int_equal(mf.data.task, TASK_SORT);
    printf("  aliases lambda/seed/value_residual/depth_routing, bare unique key, booleans\n");

    const char *t[] = {"1", "0", "true", "false", "yes", "no", "on", "off", "TRUE", "Off"};
    for (int i = 0; i < 10; i++) {
        char text[64];
        snprintf(text, sizeof text, "[model]\ntied = %s\n", t[i]);
        load_ok(&mf, "b.ini", text, 0, NULL);
        assert_int_equal(mf.model.tied, (i % 2) == 0);
    }
    printf("  booleans 1/0 true/false yes/no on/off, any case\n");
}

static void test_sweep_parse(void **state) {
    (void)state;
    gl_manifest mf;
    load_ok(&mf, "sw.ini",
            "[sweep]\nlambda = 0, 0.01 ,0.1\nscale = tiny, wide\ntrain.seed = 1,2,3\n"
            "model.value_residual = none, resformer, satformer\n",
            0, NULL);
    assert_int_equal(mf.n_sweep, 4);
    assert_string_equal(mf.sweep[0].key, "model.tsa_lambda");
    assert_string_equal(mf.sweep[0].values, "0, 0.01 ,0.1");
    assert_int_equal(mf.sweep[0].line, 2);
    assert_string_equal(mf.sweep[1].key, "model.scale");
    assert_string_equal(mf.sweep[2].key, "train.seed");
    assert_string_equal(mf.sweep[3].key, "model.value_residual");
    assert_int_equal(mf.sweep[3].line, 5);
    /* the swept keys keep their base values */
    assert_true(mf.model.tsa_lambda == 0.0f && mf.scale[0] == 0);
    printf("  4 sweep axes, canonical keys, lines 2..5, base values untouched\n");

    expect_error("sw1.ini", "[sweep]\nlambda = 0, abc\n", 0, NULL, "sw1.ini:2:", "model.tsa_lambda",
                 "item 2 \"abc\"", "not a number", NULL);
    expect_error("sw2.ini", "[model]\nd_model=64\n[sweep]\nlambda =\n", 0, NULL, "sw2.ini:4:",
                 "empty list", NULL);
    expect_error("sw3.ini", "[sweep]\nseed = 1,,3\n", 0, NULL, "sw3.ini:2:", "item 2 is empty",
                 NULL);
    expect_error("sw4.ini", "[sweep]\nseed = 1,2,\n", 0, NULL, "item 3 is empty", NULL);
    expect_error("sw5.ini", "[sweep]\nscale = tiny, huge\n", 0, NULL, "sw5.ini:2:",
                 "item 2 \"huge\"", "unknown scale", "tiny, wide", NULL);
    expect_error("sw6.ini", "[sweep]\nmodel.n_layer = 2, 0\n", 0, NULL,
                 "must be between 1 and 64", NULL);
    expect_error("sw7.ini", "[sweep]\nlamda = 1, 2\n", 0, NULL, "sw7.ini:2:", "did you mean lambda?",
                 NULL);
    expect_error("sw8.ini", "[sweep]\nlambda = 1\nmodel.tsa_lambda = 2\n", 0, NULL, "sw8.ini:3:",
                 "listed twice", NULL);
    expect_error("sw9.ini", "[sweep]\nlog.trace = 0, 1\n", 0, NULL, "cannot be swept", NULL);
    expect_error("sw10.ini", "[sweep]\nvalue_residual = none, dense\n", 0, NULL, "item 2 \"dense\"",
                 "must be one of none, resformer, satformer", NULL);
}

static void test_errors(void **state) {
    (void)state;
    char missing[600];
    snprintf(missing, sizeof missing, "%s/no_such.ini", tmpdir);
    expect_error(missing, NULL, 0, NULL, "cannot read manifest", "no_such.ini",
                 "No such file", NULL);
    expect_error("e1.ini", "; comment\n[model]\n\nd_mdoel = 64\n", 0, NULL, "e1.ini:4:",
                 "unknown key [model] d_mdoel (did you mean d_model?)", NULL);
    expect_error("e2.ini", "[train]\nsteps = 10\nlr = abc\n", 0, NULL, "e2.ini:3:",
                 "[train] lr = \"abc\": not a number", NULL);
    expect_error("e3.ini", "[model]\nn_layer = 0\n", 0, NULL, "e3.ini:2:",
                 "[model] n_layer = 0: must be between 1 and 64", NULL);
    expect_error("e4.ini", "[model]\nn_layer = 4x\n", 0, NULL, "not an integer", NULL);
    expect_error("e5.ini", "[model]\nn_layer = 99999999999999999999\n", 0, NULL,
                 "must be between 1 and 64", NULL);
    expect_error("e6.ini", "[train]\nlr = nan\n", 0, NULL, "not a finite number", NULL);
    expect_error("e7.ini", "[train]\nlr = 0\n", 0, NULL, "[train] lr = 0: must be in (0, 10]", NULL);
    expect_error("e8.ini", "[train]\nbeta2 = 1\n", 0, NULL, "must be in [0, 1)", NULL);
    expect_error("e9.ini", "[train]\nseed = -1\n", 0, NULL, "not a non-negative integer", NULL);
    expect_error("e10.ini", "[model]\ntied = maybe\n", 0, NULL, "not a boolean", NULL);
    expect_error("e11.ini", "[model]\ndepth_routing = skip\n", 0, NULL,
                 "must be one of none, tsa, early_exit", NULL);
    expect_error("e12.ini", "[modle]\nd_model = 64\n", 0, NULL, "e12.ini:2:",
                 "unknown section [modle] (did you mean model?)", NULL);
    expect_error("e13.ini", "d_model = 64\n", 0, NULL, "e13.ini:1:", "outside any section", NULL);
    expect_error("e14.ini", "[model]\nd_model = 64\nd_model = 32\n", 0, NULL, "e14.ini:3:",
                 "set twice (first on line 2)", NULL);
    expect_error("e15.ini", "[model]\nthis line has no equals sign\n", 0, NULL, "e15.ini:2:",
                 "cannot parse the line", NULL);
    expect_error("e16.ini", "[model]\nn_head = 8\nn_kv_head = 3\n", 0, NULL,
                 "model.n_kv_head (3) must divide model.n_head (8)", NULL);
    expect_error("e17.ini", "[model]\nscale = huge\n", 0, NULL, "e17.ini:2:",
                 "[model] scale = \"huge\": unknown scale", "tiny, wide", NULL);
    expect_error("e18.ini", "[data]\ntask = copy\nseq_items = 20\n[model]\nseq_len = 32\n", 0, NULL,
                 "model.seq_len (32) is too short", NULL);
    expect_error("e19.ini", "[data]\ntrain_frac = 0.9\nval_frac = 0.2\n", 0, NULL,
                 "data.train_frac (0.9) + data.val_frac (0.2) is more than 1", NULL);
    expect_error("e20.ini", "[log]\nname = a/b\n", 0, NULL, "folder name", NULL);
    expect_error("e21.ini", "[data]\ntask = mqar\nmqar_queries = 9\n", 0, NULL,
                 "data.mqar_queries (9) must be at most data.mqar_pairs (8)", NULL);
    expect_error("e22.ini", "[data]\ntask = copy\n[model]\nvocab_size = 10\n", 0, NULL,
                 "model.vocab_size (10) does not match data.task = copy, which has 18 ids", NULL);
    expect_error("e23.ini", "[train]\nsteps = 1\n[model]\nlr = 1e-3\n", 0, NULL,
                 "unknown key [model] lr (it belongs in [train])", NULL);
    /* the first error in file order wins */
    expect_error("e24.ini", "[model]\nd_model = x\n[bogus\nn_layer = 0\n", 0, NULL, "e24.ini:2:",
                 NULL);
    char longline[5000];
    snprintf(longline, sizeof longline, "[data]\nfile = %04900d\n", 0);
    expect_error("e25.ini", longline, 0, NULL, "e25.ini:2:", "longer than", NULL);

    char *bad1[] = {"train.lr"};
    expect_error("o1.ini", "", 1, bad1, "command line", "expected section.key=value", NULL);
    char *bad2[] = {"train.lrr=1"};
    expect_error("o2.ini", "", 1, bad2, "command line", "unknown key [train] lrr",
                 "did you mean lr?", NULL);
    char *bad3[] = {"train.lr=abc"};
    expect_error("o3.ini", "", 1, bad3, "command line: [train] lr = \"abc\": not a number", NULL);
    char *bad4[] = {"trian.lr=1"};
    expect_error("o4.ini", "", 1, bad4, "unknown section [trian] (did you mean train?)", NULL);
    char *bad5[] = {"=5"};
    expect_error("o5.ini", "", 1, bad5, "missing key", NULL);
    char *bad6[] = {"eps=1"}; /* bare key of [train] only: fine; norm_eps is a different key */
    gl_manifest mf;
    load_ok(&mf, "o6.ini", "", 1, bad6);
    assert_true(mf.train.eps == 1.0f);
    char *bad7[] = {"model.scale=huge"};
    expect_error("o7.ini", "", 1, bad7, "command line", "unknown scale", NULL);
}

static void test_round_trip_and_hash(void **state) {
    (void)state;
    gl_manifest a, b;
    char err[2048];
    load_ok(&a, "rt.ini",
            "[model]\nscale = wide\nd_ff = 100\nnorm_eps = 1e-5\nrope_base = 500000\n"
            "value_residual = resformer\nresformer_variant = learnable\nvalue_residual_last_k = 2\n"
            "depth_routing = early_exit\nexit_weighting = uniform\nrouter_init_bias = -1.2345678\n"
            "tsa_lambda = 0.0123456789\nqk_norm = off\n"
            "[data]\ntask = mqar\nfile = ./some file.txt\ntrain_frac = 0.333333333\n"
            "val_frac = 0.1\nmqar_pairs = 5\nmqar_queries = 3\n"
            "[train]\nlr = 3.3e-4\nmin_lr = 0\nseed = 12345678901234567\nbeta2 = 0.999\n"
            "eps = 1.17549435e-38\ngrad_clip = 0\nthreads = 2\n"
            "[log]\nresults = /tmp/r es\nname = run-1\nexperiment = exp_2\ntrace = no\n"
            "[sweep]\nlambda = 1, 2\n",
            0, NULL);
    char *text = manifest_to_ini(&a);
    assert_non_null(text);
    assert_null(strstr(text, "[sweep]"));
    int rc = manifest_load_text(&b, text, "stored config", err, sizeof err);
    if (rc) printf("  %s\n", err);
    assert_int_equal(rc, 0);
    assert_memory_equal(&a.model, &b.model, sizeof a.model);
    assert_memory_equal(&a.data, &b.data, sizeof a.data);
    assert_memory_equal(&a.train, &b.train, sizeof a.train);
    assert_memory_equal(&a.log, &b.log, sizeof a.log);
    assert_string_equal(a.scale, b.scale);
    assert_int_equal(b.n_sweep, 0);
    assert_string_equal(b.path, "");
    char *text2 = manifest_to_ini(&b);
    assert_string_equal(text, text2);
    printf("  to_ini -> load_text reproduces every section bit for bit (%zu bytes)\n",
           strlen(text));
    assert_non_null(strstr(text, "lr = 0.00033\n"));
    assert_non_null(strstr(text, "d_ff = 100\n"));
    assert_non_null(strstr(text, "seed = 12345678901234567\n"));
    assert_non_null(strstr(text, "name = run-1\n"));

    /* independent FNV-1a 64 over the [model] section as written, less the late keys at their
     * default (the identity text's rule, so older checkpoints keep their hash) */
    char *ident = manifest_identity_text(text);
    assert_non_null(ident);
    const char *m0 = strstr(ident, "[model]");
    const char *m1 = strstr(ident, "\n[data]");
    assert_true(m0 == ident && m1 != NULL);
    assert_null(strstr(ident, "mod_capacity = 0.125\n"));  /* late keys at their default are not in it */
    uint64_t h = 0xcbf29ce484222325ULL;
    for (const char *p = m0; p < m1; p++) h = (h ^ (unsigned char)*p) * 0x100000001b3ULL;
    assert_true(h == manifest_model_hash(&a));
    gl_manifest c2 = a;
    c2.model.mod_capacity = 0.25f; /* a late key away from its default is hashed */
    assert_true(manifest_model_hash(&c2) != manifest_model_hash(&a));
    assert_true(manifest_model_hash(&a) == manifest_model_hash(&b));
    b.train.lr = 1.0f;
    assert_true(manifest_model_hash(&a) == manifest_model_hash(&b));
    b.model.tsa_lambda = nextafterf(a.model.tsa_lambda, 1.0f);
    assert_true(manifest_model_hash(&a) != manifest_model_hash(&b));
    printf("  model hash %016llx = FNV-1a of the [model] identity text; ignores [train]; sees 1 ulp\n",
           (unsigned long long)h);
    free(ident);
    free(text);
    free(text2);

    /* the defaults round-trip too, and an edited stored config is checked like a file */
    manifest_defaults(&a);
    text = manifest_to_ini(&a);
    assert_int_equal(manifest_load_text(&b, text, "defaults", err, sizeof err), 0);
    assert_memory_equal(&a, &b, sizeof a);
    free(text);
    rc = manifest_load_text(&b, "[model]\nn_layer = 65\n", "run 7 config", err, sizeof err);
    printf("  %s\n", err);
    assert_int_equal(rc, -1);
    assert_non_null(strstr(err, "run 7 config:2: [model] n_layer = 65"));
}


/* A run's identity text leaves out the late keys (added once runs existed) while they hold their
 * default, and nothing else: a config written before data.tokenizer existed and one written after
 * have one identity, so a sweep started then keeps its run ids. */
/* manifest_parse_key: one stored value read back typed by the manifest's own parser and key table. */
static void test_parse_key(void **state) {
    (void)state;
    gl_key_value v;
    char err[512];
    assert_int_equal(manifest_parse_key("model.n_layer", "6", "t", &v, err, sizeof err), 0);
    assert_int_equal(v.type, MF_INT);
    assert_true(v.num == 6.0);
    assert_int_equal(manifest_parse_key("model.tsa_lambda", "0.10", "t", &v, err, sizeof err), 0);
    assert_int_equal(v.type, MF_FLOAT);
    assert_string_equal(v.text, "0.1"); /* canonical */
    assert_true(v.num == 0.1);          /* the decimal, not (double)0.1f */
    assert_int_equal(manifest_parse_key("train.seed", "18446744073709551615", "t", &v, err, sizeof err), 0);
    assert_int_equal(v.type, MF_U64);
    assert_true(v.u64 == UINT64_MAX);
    assert_int_equal(manifest_parse_key("model.value_residual", "satformer", "t", &v, err, sizeof err), 0);
    assert_int_equal(v.type, MF_ENUM);
    assert_string_equal(v.text, "satformer");
    assert_int_equal(manifest_parse_key("model.n_layer", "six", "origin-x", &v, err, sizeof err), -1);
    assert_non_null(strstr(err, "origin-x"));
    assert_non_null(strstr(err, "n_layer"));
    assert_int_equal(manifest_parse_key("model.n_layers", "6", "origin-x", &v, err, sizeof err), -1);
    assert_non_null(strstr(err, "n_layers"));
    gl_manifest mf;
    manifest_defaults(&mf);
    mf.train.steps = 77;
    assert_int_equal(manifest_key_get(&mf, "train.steps", &v), 0);
    assert_string_equal(v.text, "77");
    assert_int_equal(manifest_key_get(&mf, "train.step", &v), -1);
    assert_int_equal(manifest_key_get(&mf, "steps", &v), -1);
}

static void test_identity_text(void **state) {
    (void)state;
    gl_manifest a;
    manifest_defaults(&a);
    char *text = manifest_to_ini(&a), *id = manifest_identity_text(text);
    assert_non_null(text);
    assert_non_null(id);
    assert_non_null(strstr(text, "tokenizer = char\n"));
    assert_null(strstr(id, "tokenizer ="));
    assert_non_null(strstr(id, "[data]\n"));
    assert_null(strstr(strstr(id, "[data]\n"), "vocab_size ="));  /* data.vocab_size, late, gone */
    assert_non_null(strstr(id, "[model]\nscale ="));         /* a non-late key at its default stays */
    assert_non_null(strstr(id, "vocab_size = 0\nd_model"));   /* model.vocab_size is not late */
    /* the text without the late lines (as written before they existed) has the same identity */
    char old[8192];
    size_t k = 0;
    for (const char *p = text; *p;) {
        size_t len = strcspn(p, "\n") + 1;
        int skip = !strncmp(p, "tokenizer = ", 12) || (!strncmp(p, "vocab_size = ", 13) && strstr(text, "[data]") < p);
        if (!skip) memcpy(old + k, p, len), k += len;
        p += len;
    }
    old[k] = 0;
    char *id_old = manifest_identity_text(old);
    assert_string_equal(id, id_old);
    /* a late key off its default is part of the identity */
    a.data.tokenizer = TOK_BPE;
    a.data.vocab_size = 512;
    char *text_bpe = manifest_to_ini(&a), *id_bpe = manifest_identity_text(text_bpe);
    assert_non_null(strstr(id_bpe, "tokenizer = bpe\n"));
    assert_non_null(strstr(id_bpe, "vocab_size = 512\n"));
    /* the identity is the walk's: a text missing non-late keys reads as the defaults written out, and
     * a text the manifest refuses is its own identity, whole */
    char *id_part = manifest_identity_text("[train]\nseed = 1\n");
    manifest_defaults(&a);
    a.train.seed = 1;
    char *text_def = manifest_to_ini(&a), *id_def = manifest_identity_text(text_def);
    assert_string_equal(id_part, id_def);
    char *id_bad = manifest_identity_text("[model]\nno_such_key = 3\n");
    assert_string_equal(id_bad, "[model]\nno_such_key = 3\n");
    free(id_part), free(text_def), free(id_def), free(id_bad);
    printf("  identity drops %zu bytes of late keys at their default; an older text reads the same\n",
           strlen(text) - strlen(id));
    free(text), free(id), free(id_old), free(text_bpe), free(id_bpe);
}

/* SATFormer's knobs and the decay policy: defaults written out, "auto" for
 * resformer_lambda1_init, round trips, the model hash sees the model keys only. */
static void test_sat_knobs(void **state) {
    (void)state;
    gl_manifest a, b;
    char err[2048];
    manifest_defaults(&a);
    char *text = manifest_to_ini(&a);
    assert_non_null(strstr(text, "sat_gate = relu\nsat_gate_bias = 0\nsat_gate_bias_init = 0\nresformer_lambda1_init = auto\n"));
    assert_non_null(strstr(text, "weight_decay_policy = matrices\n"));
    assert_true(isnan(a.model.rf_lambda1_init) && a.train.weight_decay_policy == WD_MATRICES);
    free(text);
    load_ok(&a, "sat.ini",
            "[model]\nvalue_residual = satformer\nn_kv_head = 2\nn_head = 2\nsat_gate = softmax_sigmoid\n"
            "sat_gate_bias = yes\nsat_gate_bias_init = 1.2\nresformer_lambda1_init = 0.09\n"
            "[train]\nweight_decay_policy = all\n",
            0, NULL);
    assert_true(a.model.sat_gate == SG_SOFTMAX_SIGMOID && a.model.sat_gate_bias == 1);
    assert_true(a.model.sat_gate_bias_init == 1.2f && a.model.rf_lambda1_init == 0.09f);
    assert_true(a.train.weight_decay_policy == WD_ALL);
    text = manifest_to_ini(&a);
    assert_int_equal(manifest_load_text(&b, text, "stored config", err, sizeof err), 0);
    assert_memory_equal(&a.model, &b.model, sizeof a.model);
    assert_memory_equal(&a.train, &b.train, sizeof a.train);
    assert_non_null(strstr(text, "resformer_lambda1_init = 0.09\n"));
    free(text);
    uint64_t h = manifest_model_hash(&a);
    b.train.weight_decay_policy = WD_MATRICES;
    assert_true(manifest_model_hash(&b) == h);
    b.model.sat_gate = SG_SOFTMAX;
    assert_true(manifest_model_hash(&b) != h);
    b = a;
    b.model.rf_lambda1_init = NAN;
    assert_true(manifest_model_hash(&b) != h);
    /* the command line takes auto back */
    assert_int_equal(manifest_set(&a, "model.resformer_lambda1_init=auto", NULL, 0, err, sizeof err), 0);
    assert_true(isnan(a.model.rf_lambda1_init));
    assert_int_equal(manifest_set(&a, "model.resformer_lambda1_init=101", NULL, 0, err, sizeof err), -1);
    printf("  %s\n", err);
    assert_non_null(strstr(err, "must be auto or in [-100, 100]"));
    printf("  sat_gate, sat_gate_bias(_init), resformer_lambda1_init (auto), weight_decay_policy round-trip\n");
}

/* manifest_each_key: the walk rebuilds manifest_to_ini's text line for line, its typed values are
 * the struct's, its ranges are the parser's (a value just past a bound is refused) and its
 * late/default flags agree with the identity text. */
typedef struct {
    char ini[65536];
    char section[16];
    int n, n_late_default;
    double tsa, tsa_hi;
    uint64_t seed;
    int tied;
} walk_acc;

static int walk_collect(const gl_key *k, void *ctx) {
    walk_acc *w = ctx;
    size_t len = strlen(w->ini);
    if (strcmp(w->section, k->section)) {
        snprintf(w->ini + len, sizeof w->ini - len, "%s[%s]\n", w->n ? "\n" : "", k->section);
        snprintf(w->section, sizeof w->section, "%s", k->section);
        len = strlen(w->ini);
    }
    snprintf(w->ini + len, sizeof w->ini - len, "%s =%s%s\n", k->name, k->text[0] ? " " : "", k->text);
    if (!strcmp(k->section, "model") && !strcmp(k->name, "tsa_lambda")) w->tsa = k->num, w->tsa_hi = k->hi;
    if (!strcmp(k->name, "seed")) w->seed = k->u64;
    if (!strcmp(k->name, "tied")) w->tied = (int)k->num;
    w->n_late_default += k->late && k->at_default;
    w->n++;
    return 0;
}

static int walk_stop(const gl_key *k, void *ctx) {
    return ++*(int *)ctx == 3 ? 7 : 0;
}

static void test_each_key(void **state) {
    (void)state;
    static gl_manifest a;
    char err[512];
    assert_int_equal(manifest_load_text(&a, "[model]\ntsa_lambda = 0.25\ntied = off\n[train]\nseed = 12345678901234567\n",
                                        "walk", err, sizeof err), 0);
    static walk_acc w;
    memset(&w, 0, sizeof w);
    assert_int_equal(manifest_each_key(&a, walk_collect, &w), 0);
    char *text = manifest_to_ini(&a);
    assert_non_null(text);
    if (strcmp(text, w.ini)) printf("  walk:\n%s\nto_ini:\n%s\n", w.ini, text);
    assert_string_equal(text, w.ini);
    free(text);
    assert_true(w.tsa == 0.25 && w.seed == 12345678901234567ULL && w.tied == 0);
    assert_true(w.n_late_default > 0);
    /* the range the walk reports is the one the parser enforces */
    char over[64];
    snprintf(over, sizeof over, "model.tsa_lambda=%.17g", w.tsa_hi);
    assert_int_equal(manifest_set(&a, over, "walk", 0, err, sizeof err), 0);
    snprintf(over, sizeof over, "model.tsa_lambda=%.17g", w.tsa_hi * 1.001);
    assert_int_equal(manifest_set(&a, over, "walk", 0, err, sizeof err), -1);
    /* config_validate (model/, for configs from checkpoints) checks the same row */
    gl_model_config mc;
    config_defaults(&mc);
    mc.tsa_lambda = (float)w.tsa_hi;
    assert_int_equal(config_validate(&mc, err, sizeof err), 0);
    mc.tsa_lambda = (float)(w.tsa_hi * 1.001);
    assert_int_equal(config_validate(&mc, err, sizeof err), -1);
    assert_non_null(strstr(err, "tsa_lambda"));
    int calls = 0;
    assert_int_equal(manifest_each_key(&a, walk_stop, &calls), 7);
    assert_int_equal(calls, 3);
    printf("  manifest_each_key: %d keys, text = to_ini byte for byte, tsa_lambda range ends at %g\n", w.n, w.tsa_hi);
}

/* The ranges written once: every ranged [model] key of the key table is either a row of config.h's
 * CFG_RANGE table (config_ranges: the same bounds; vocab_size also takes 0 in a manifest, "from the
 * data") or one of the few keys config_validate checks with a message of its own (listed below), and
 * for every one config_validate refuses the value just outside each end (lo-1 / hi+1, and for a real
 * the next float outward, or an open end itself) with that key's range message, and does not refuse
 * lo or hi (or the next float inward of an open end) for its range.  An end may still fail another
 * check (d_model 1 has an odd head size), so "not refused" means no range message for the key. */
typedef struct {
    char name[64];
    int is_float;
    double lo, hi;
    int lo_open, hi_open;
} ranged_key;

typedef struct {
    ranged_key k[64];
    int n;
} ranged_keys;

static int collect_ranged(const gl_key *k, void *ctx) {
    ranged_keys *r = ctx;
    if (strcmp(k->section, "model") || !k->has_range) return 0;
    assert_true(r->n < 64);
    ranged_key *o = &r->k[r->n++];
    snprintf(o->name, sizeof o->name, "%s", k->name);
    o->is_float = k->type == MF_FLOAT;
    o->lo = k->lo, o->hi = k->hi, o->lo_open = k->lo_open, o->hi_open = k->hi_open;
    return 0;
}

/* 1 when config_validate refuses c with key's range message. */
static int range_refused(const gl_model_config *c, const char *key) {
    char err[512] = "", want[96];
    if (config_validate(c, err, sizeof err) == 0) return 0;
    snprintf(want, sizeof want, "model.%s (", key);
    return !strncmp(err, want, strlen(want)) && strstr(err, " must be ") != NULL;
}

static void check_ends(const config_range *r, int *accepted) {
    gl_model_config c;
    config_defaults(&c);
    if (r->routing >= 0) c.depth_routing = (gl_depth_routing)r->routing;
    if (r->cross >= 0) c.cross_layer = (gl_cross_layer)r->cross;
    if (!strcmp(r->name, "value_residual_last_k")) c.n_layer = 64; /* its end is n_layer - 1 at the deepest */
    char *field = (char *)&c + r->off;
    double out_lo[2] = {r->lo - 1, r->lo}, out_hi[2] = {r->hi + 1, r->hi}, in_lo = r->lo, in_hi = r->hi;
    if (r->is_float) {
        out_lo[1] = r->lo_open ? r->lo : nextafterf((float)r->lo, -INFINITY);
        out_hi[1] = r->hi_open ? r->hi : nextafterf((float)r->hi, INFINITY);
        if (r->lo_open) in_lo = nextafterf((float)r->lo, INFINITY);
        if (r->hi_open) in_hi = nextafterf((float)r->hi, -INFINITY);
        /* hi + 1 that rounds back to hi as a float (rope_base's 1e9) is the next float outward */
        if ((float)out_lo[0] >= (float)r->lo) out_lo[0] = out_lo[1];
        if ((float)out_hi[0] <= (float)r->hi) out_hi[0] = out_hi[1];
    }
    double outside[4] = {out_lo[0], out_hi[0], out_lo[1], out_hi[1]}, inside[2] = {in_lo, in_hi};
    for (int i = 0; i < (r->is_float ? 4 : 2); i++) {
        if (r->is_float) *(float *)field = (float)outside[i];
        else *(int *)field = (int)outside[i];
        if (!range_refused(&c, r->name)) {
            printf("  model.%s = %.9g is not refused\n", r->name, outside[i]);
            fail();
        }
    }
    for (int i = 0; i < 2; i++) {
        char err[512];
        if (r->is_float) *(float *)field = (float)inside[i];
        else *(int *)field = (int)inside[i];
        if (range_refused(&c, r->name)) {
            printf("  model.%s = %.9g is refused for its range\n", r->name, inside[i]);
            fail();
        }
        *accepted += config_validate(&c, err, sizeof err) == 0;
    }
}

static void test_ranges_shared(void **state) {
    (void)state;
    /* the keys config_validate checks with their own message, and where their field is */
    static const struct {
        const char *name;
        size_t off;
        int routing;
    } own[] = {
        {"value_residual_last_k", offsetof(gl_model_config, vr_last_k), -1},
        {"sat_gate_bias_init", offsetof(gl_model_config, sat_gate_bias_init), -1},
        {"resformer_lambda1_init", offsetof(gl_model_config, rf_lambda1_init), -1},
        {"mod_capacity", offsetof(gl_model_config, mod_capacity), DR_MOD},
        {"random_alpha", offsetof(gl_model_config, random_alpha), DR_RANDOM},
    };
    static gl_manifest mf;
    manifest_defaults(&mf);
    static ranged_keys rk;
    memset(&rk, 0, sizeof rk);
    assert_int_equal(manifest_each_key(&mf, collect_ranged, &rk), 0);
    int n_rows = 0, n_own = 0, accepted = 0;
    for (int i = 0; i < rk.n; i++) {
        const ranged_key *k = &rk.k[i];
        const config_range *row = NULL;
        for (int j = 0; j < config_n_ranges; j++)
            if (!strcmp(config_ranges[j].name, k->name)) row = &config_ranges[j];
        config_range mine;
        if (row) {
            assert_int_equal(row->is_float, k->is_float);
            assert_true(row->lo == (strcmp(k->name, "vocab_size") ? k->lo : 1) && row->hi == k->hi);
            assert_true(row->lo_open == k->lo_open && row->hi_open == k->hi_open);
            n_rows++;
        } else {
            int o = -1;
            for (int j = 0; j < (int)(sizeof own / sizeof own[0]); j++)
                if (!strcmp(own[j].name, k->name)) o = j;
            if (o < 0) printf("  model.%s has a range in the key table but no config.h row\n", k->name);
            assert_true(o >= 0);
            mine = (config_range){k->name, own[o].off, k->is_float, k->lo, k->hi, k->lo_open, k->hi_open,
                                  own[o].routing, -1};
            row = &mine;
            n_own++;
        }
        check_ends(row, &accepted);
    }
    /* every row is a ranged key of the table */
    assert_int_equal(n_rows, config_n_ranges);
    assert_int_equal(n_own, (int)(sizeof own / sizeof own[0]));
    printf("  %d ranged [model] keys (%d config.h rows, %d own checks): both ends kept, just outside refused; "
           "%d of %d ends valid configs as they stand\n", rk.n, n_rows, n_own, accepted, 2 * rk.n);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sat_knobs),
        cmocka_unit_test(test_config_defaults_and_validate),
        cmocka_unit_test(test_config_mixes_and_names),
        cmocka_unit_test(test_defaults_and_empty),
        cmocka_unit_test(test_shipped_experiments),
        cmocka_unit_test(test_scale_precedence),
        cmocka_unit_test(test_overrides_and_aliases),
        cmocka_unit_test(test_sweep_parse),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_round_trip_and_hash),
        cmocka_unit_test(test_identity_text),
        cmocka_unit_test(test_parse_key),
        cmocka_unit_test(test_each_key),
        cmocka_unit_test(test_ranges_shared),
    };
    return cmocka_run_group_tests(tests, setup_dir, teardown_dir);
}
