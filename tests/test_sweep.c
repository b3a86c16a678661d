/*
 * test_sweep.c — sweep expansion (harness/run/sweep.c: the grid of a
 * manifest's [sweep] lists and command-line lists, run ids from the config
 * identity, each run's config what train would load) and the refusal of bad
 * sweeps by `gatelab sweep` (harness/cli/cmd_sweep.c: file:line and key,
 * exit 2, no registry written).  Every test works in one temporary folder.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "store/manifest.h"
#include "store/sha256.h"
#include "run/sweep.h"
#include "tmpdir.h"
#include "files.h"

/* <g_dir>/<name>, made fresh. */
static void sweep_dir(char *out, size_t len, const char *name) {
    snprintf(out, len, "%s/%s", g_dir, name);
    assert_int_equal(mkdir(out, 0777), 0);
}


static const char sweep_manifest[] =
    "; test manifest\n"
    "[model]\n"
    "d_model = 32\n"
    "n_layer = 2\n"
    "n_head = 2\n"
    "n_kv_head = 2\n"
    "d_ff = 64\n"
    "seq_len = 16\n"
    "depth_routing = tsa\n"
    "\n"
    "[train]\n"
    "steps = 5\n"
    "\n"
    "[log]\n"
    "experiment = sw\n"
    "\n"
    "[sweep]\n"
    "lambda = 0, 0.01\n"
    "seed = 1, 2, 3\n";

static void test_sweep_expansion(void **state) {
    (void)state;
    char dir[600], path[700], err[1024];
    sweep_dir(dir, sizeof dir, "sweep");
    snprintf(path, sizeof path, "%s/grid.ini", dir);
    write_file(path, sweep_manifest);
    gl_sweep sw, sw2;
    OK(sweep_expand(&sw, path, 0, NULL, 0, NULL, err, sizeof err));
    assert_int_equal(sw.n_runs, 6);
    assert_string_equal(sw.experiment, "sw");
    static const char *const want[6][2] = {{"0", "1"}, {"0", "2"}, {"0", "3"}, {"0.01", "1"}, {"0.01", "2"}, {"0.01", "3"}};
    for (int i = 0; i < 6; i++) {
        char a[64], b[64], prefix[32];
        snprintf(a, sizeof a, "model.tsa_lambda=%s", want[i][0]);
        snprintf(b, sizeof b, "train.seed=%s", want[i][1]);
        assert_int_equal(sw.runs[i].n_over, 2);
        assert_string_equal(sw.runs[i].over[0], a);
        assert_string_equal(sw.runs[i].over[1], b);
        snprintf(prefix, sizeof prefix, "sw-%03d-", i);
        assert_int_equal(strncmp(sw.runs[i].run_id, prefix, strlen(prefix)), 0);
        assert_int_equal(strlen(sw.runs[i].run_id), strlen(prefix) + 8);
        assert_int_equal(strncmp(sw.runs[i].run_id + strlen(prefix), sw.runs[i].config_hash, 8), 0);
        char hex[65], *ident = manifest_identity_text(sw.runs[i].config_ini); /* late keys at default left out */
        assert_non_null(ident);
        assert_true(strlen(ident) < strlen(sw.runs[i].config_ini));
        sha256_hex(ident, strlen(ident), hex);
        free(ident);
        assert_string_equal(hex, sw.runs[i].config_hash);
        assert_int_equal((int)sw.runs[i].seed, atoi(want[i][1]));
        for (int j = 0; j < i; j++) assert_string_not_equal(sw.runs[i].config_hash, sw.runs[j].config_hash);
        /* The run's config is what train would load from the same overrides. */
        gl_manifest mf;
        char *over[2] = {sw.runs[i].over[0], sw.runs[i].over[1]};
        OK(manifest_load(&mf, path, 2, over, err, sizeof err));
        char *ini = manifest_to_ini(&mf);
        assert_string_equal(ini, sw.runs[i].config_ini);
        free(ini);
    }
    /* Deterministic: the same ids a second time. */
    OK(sweep_expand(&sw2, path, 0, NULL, 0, NULL, err, sizeof err));
    for (int i = 0; i < 6; i++) assert_string_equal(sw.runs[i].run_id, sw2.runs[i].run_id);
    sweep_free(&sw2);

    /* The command line replaces a list (alias or canonical key), fixes a key; a list on a key that is
     * not an axis is refused with how to declare it, and added as an axis with --axis. */
    char *cli[] = {"seed=5,6", "train.steps=7", "train.lr=0.001,0.002"};
    assert_int_equal(sweep_expand(&sw2, path, 3, cli, 0, NULL, err, sizeof err), -1);
    assert_non_null(strstr(err, "train.lr is not a sweep axis"));
    assert_non_null(strstr(err, "[sweep] section"));
    assert_non_null(strstr(err, "--axis train.lr=0.001,0.002"));
    char *axis[] = {"train.lr=0.001,0.002"};
    OK(sweep_expand(&sw2, path, 2, cli, 1, axis, err, sizeof err));
    assert_int_equal(sw2.n_runs, 2 * 2 * 2);
    assert_int_equal(sw2.n_fixed, 1);
    assert_string_equal(sw2.runs[0].over[1], "train.seed=5");
    assert_string_equal(sw2.runs[1].over[2], "train.lr=0.002");
    assert_non_null(strstr(sw2.runs[7].config_ini, "steps = 7"));
    assert_string_equal(sw2.runs[7].label, "model.tsa_lambda=0.01 train.seed=6 train.lr=0.002");
    sweep_free(&sw2);
    char *cli2[] = {"model.tsa_lambda=0.5"};
    OK(sweep_expand(&sw2, path, 1, cli2, 0, NULL, err, sizeof err));
    assert_int_equal(sw2.n_runs, 3);
    assert_string_equal(sw2.runs[2].over[0], "model.tsa_lambda=0.5");
    sweep_free(&sw2);
    /* range() (stop excluded, items start + i*step) and choice() */
    char *cli3[] = {"lambda=range(0, 0.1, 0.025)", "seed=choice(7, 8)"};
    OK(sweep_expand(&sw2, path, 2, cli3, 0, NULL, err, sizeof err));
    assert_int_equal(sw2.n_runs, 4 * 2);
    assert_string_equal(sw2.axes[0].values, "0, 0.025, 0.05, 0.075");
    assert_string_equal(sw2.runs[7].label, "model.tsa_lambda=0.075 train.seed=8");
    sweep_free(&sw2);
    char *axis2[] = {"train.steps=range(10, 40, 10)"};
    OK(sweep_expand(&sw2, path, 0, NULL, 1, axis2, err, sizeof err));
    assert_string_equal(sw2.axes[2].values, "10, 20, 30");
    sweep_free(&sw2);
    char *bad[][1] = {{"lambda=range(0, 1, 0)"}, {"lambda=range(1, 0)"}, {"lambda=range(0)"}, {"seed=rnge(1, 3)"}};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(sweep_expand(&sw2, path, 1, bad[i], 0, NULL, err, sizeof err), -1);
        printf("  refused %s: %s\n", bad[i][0], err);
    }
    sweep_free(&sw);
    printf("sweep: 2 x 3 grid in order (first axis slowest), ids <exp>-<i>-<hash8> stable and matching "
           "train's config; command-line lists replace and add axes\n");
}

/* Expect `gatelab sweep` and sweep_expand to refuse text with a message
 * holding each of the needles, and nothing to be written. */
static void expect_refused(const char *dir, const char *name, const char *text, const char *n1, const char *n2) {
    char path[700], db[700], err[1024];
    snprintf(path, sizeof path, "%s/%s.ini", dir, name);
    snprintf(db, sizeof db, "%s/%s-registry/gatelab.db", dir, name);
    write_file(path, text);
    gl_sweep sw;
    assert_int_equal(sweep_expand(&sw, path, 0, NULL, 0, NULL, err, sizeof err), -1);
    assert_int_equal(sw.n_runs, 0);
    if (!strstr(err, n1) || !strstr(err, n2)) {
        print_error("%s: message '%s' lacks '%s' or '%s'\n", name, err, n1, n2);
        fail();
    }
    char *argv[] = {"sweep", path, "--db", db, NULL};
    assert_int_equal(cmd_sweep(4, argv), 2);
    assert_false(file_exists(db));
    printf("  refused %s: %s\n", name, err);
}

static void test_sweep_errors_write_nothing(void **state) {
    (void)state;
    char dir[600], scales[700], err[1024];
    sweep_dir(dir, sizeof dir, "sweep_errors");
    snprintf(scales, sizeof scales, "%s/scales.ini", dir);
    write_file(scales, "[xs]\nd_model = 32\nn_layer = 2\nn_head = 2\nn_kv_head = 2\nd_ff = 64\n");
    expect_refused(dir, "malformed", "[train]\nsteps = 5\n\n[sweep]\nlambda 0, 0.1\n", "malformed.ini:5", "");
    expect_refused(dir, "unknown_scale", "[train]\nsteps = 5\n[sweep]\nscale = xs, huge\n", "unknown_scale.ini:4",
                   "huge");
    expect_refused(dir, "empty_list", "[train]\nsteps = 5\n[sweep]\nlambda =\n", "empty_list.ini:4", "lambda");
    expect_refused(dir, "empty_item", "[train]\nsteps = 5\n[sweep]\nseed = 1,,2\n", "empty_item.ini:4", "seed");
    expect_refused(dir, "bad_value", "[sweep]\n\nlambda = 0, zero\n", "bad_value.ini:3", "tsa_lambda");
    /* Bad lists on the command line. */
    char path[700], db[700];
    snprintf(path, sizeof path, "%s/ok.ini", dir);
    snprintf(db, sizeof db, "%s/ok-registry/gatelab.db", dir);
    write_file(path, sweep_manifest);
    gl_sweep sw;
    char *cli[] = {"seed=1,,2"};
    assert_int_equal(sweep_expand(&sw, path, 1, cli, 0, NULL, err, sizeof err), -1);
    assert_non_null(strstr(err, "command line"));
    assert_non_null(strstr(err, "seed"));
    char *cli2[] = {"model.scale=xs,nosuch"};
    assert_int_equal(sweep_expand(&sw, path, 1, cli2, 0, NULL, err, sizeof err), -1);
    assert_non_null(strstr(err, "nosuch"));
    char *argv[] = {"sweep", path, "lambda=", "--db", db, NULL};
    assert_int_equal(cmd_sweep(5, argv), 2);
    assert_false(file_exists(db));
    /* --dry-run writes nothing either. */
    char *argv2[] = {"sweep", path, "--dry-run", "--db", db, NULL};
    assert_int_equal(cmd_sweep(5, argv2), 0);
    assert_false(file_exists(db));
    printf("sweep errors: malformed line, unknown scale, empty list and item, bad value -> file:line and key, "
           "exit 2, no registry written\n");
}

static int setup(void **state) {
    (void)state;
    return tmpdir_make("sweep");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sweep_expansion),
        cmocka_unit_test(test_sweep_errors_write_nothing),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
