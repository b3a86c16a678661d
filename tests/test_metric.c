/*
 * test_metric.c — metric names (harness/store/metric.c): each builder's
 * (name, params) pair, the label `gatelab metrics` prints for it, the
 * siblings and partner rows, and the refusals of names and parameters that
 * do not fit.  No registry: the stored form is test_registry.c's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "store/categories.h"
#include "store/metric.h"

/* A key by hand (as a registry row holds it). */
static metric_key key_of(const char *name, const char *params) {
    metric_key k;
    snprintf(k.name, sizeof k.name, "%s", name);
    snprintf(k.params, sizeof k.params, "%s", params);
    return k;
}

/* k == (name, params), from a builder that returned 0, and its label. */
#define KEY_IS(call, want_name, want_params, want_label)                                 \
    do {                                                                                 \
        char label_[METRIC_NAME_MAX + METRIC_PARAMS_MAX];                                \
        assert_int_equal((call), 0);                                                     \
        assert_string_equal(k.name, (want_name));                                        \
        assert_string_equal(k.params, (want_params));                                    \
        assert_int_equal(metric_label(k.name, k.params, label_, sizeof label_), 0);      \
        assert_string_equal(label_, (want_label));                                       \
    } while (0)

static void test_metric_names(void **state) {
    (void)state;
    metric_key k, r;
    char label[64];
    int l, h, c;
    /* statistics */
    KEY_IS(metric_stat(&k, "alpha_mean", 1, 0, METRIC_NONE), "alpha_mean", "{\"layer\":1,\"head\":0}",
           "alpha_mean.L1.H0");
    KEY_IS(metric_stat(&k, "alpha_mean", 2, METRIC_NONE, CAT_SEMANTIC), "alpha_mean",
           "{\"layer\":2,\"category\":\"semantic\"}", "alpha_mean.L2.semantic");
    KEY_IS(metric_stat(&k, "tokens", METRIC_NONE, METRIC_NONE, CAT_FUNCTIONAL), "tokens",
           "{\"category\":\"functional\"}", "tokens.functional");
    KEY_IS(metric_stat(&k, "expected_depth", METRIC_NONE, METRIC_NONE, METRIC_NONE), "expected_depth", "{}",
           "expected_depth");
    KEY_IS(metric_plain(&k, "loss"), "loss", "{}", "loss");
    assert_int_equal(metric_stat(&k, "a.b", 1, METRIC_NONE, METRIC_NONE), -1);
    assert_string_equal(k.name, ""); /* a refusal leaves nothing to store */
    assert_int_equal(metric_stat(&k, "alpha_mean", METRIC_NONE, 0, METRIC_NONE), -1);
    assert_int_equal(metric_stat(&k, "alpha_mean", 1, METRIC_NONE, CAT_COUNT), -1);
    char longname[METRIC_NAME_MAX + 8];
    memset(longname, 'a', sizeof longname - 1);
    longname[sizeof longname - 1] = 0;
    assert_int_equal(metric_stat(&k, longname, 1, 0, METRIC_NONE), -1); /* never truncated */
    assert_string_equal(k.name, "");
    r = key_of("alpha_mean", "{\"layer\":12,\"head\":3}");
    assert_true(metric_stat_parse(&r, "alpha_mean", &l, &h, &c) && l == 12 && h == 3 && c == METRIC_NONE);
    r = key_of("p_mean", "{\"layer\":2,\"category\":\"structural\"}");
    assert_true(metric_stat_parse(&r, "p_mean", &l, &h, &c) && l == 2 && h == METRIC_NONE && c == CAT_STRUCTURAL);
    r = key_of("alpha_mean", "{}");
    assert_true(metric_stat_parse(&r, "alpha_mean", &l, &h, &c) && l == METRIC_NONE);
    r = key_of("alpha_mean_x", "{\"layer\":1}");
    assert_false(metric_stat_parse(&r, "alpha_mean", &l, &h, &c));
    r = key_of("alpha_mean", "{\"layer\":1,\"category\":\"bogus\"}");
    assert_false(metric_stat_parse(&r, "alpha_mean", &l, &h, &c));
    r = key_of("alpha_mean", "{\"layer\":-1}");
    assert_false(metric_stat_parse(&r, "alpha_mean", &l, &h, &c));
    r = key_of("alpha_mean", "{\"head\":1}"); /* a head needs its layer */
    assert_false(metric_stat_parse(&r, "alpha_mean", &l, &h, &c));
    r = key_of("alpha_mean", "{\"head\":0,\"layer\":1}"); /* keys out of the canonical order */
    assert_false(metric_stat_parse(&r, "alpha_mean", &l, &h, &c));
    r = key_of("alpha_mean", "{\"gates\":\"all\"}"); /* an intervention's parameter */
    assert_false(metric_stat_parse(&r, "alpha_mean", &l, &h, &c));
    /* every statistic key built parses back to its parts */
    for (int layer = METRIC_NONE; layer < 3; layer++)
        for (int head = METRIC_NONE; head < 2; head++)
            for (int cat = METRIC_NONE; cat < CAT_COUNT; cat++) {
                if (head != METRIC_NONE && layer == METRIC_NONE) continue;
                assert_int_equal(metric_stat(&k, "alpha_gini", layer, head, cat), 0);
                assert_true(metric_stat_parse(&k, "alpha_gini", &l, &h, &c));
                assert_true(l == layer && h == head && c == cat);
            }

    /* interventions and early exit */
    metric_ablation_key a;
    KEY_IS(metric_ablation(&k, "zero", "L1H0+L2", "delta_loss", CAT_SEMANTIC), "zero.delta_loss",
           "{\"gates\":\"L1H0+L2\",\"category\":\"semantic\"}", "zero.L1H0+L2.delta_loss.semantic");
    assert_true(metric_ablation_parse(&k, &a));
    assert_string_equal(a.mode, "zero");
    assert_string_equal(a.label, "L1H0+L2");
    assert_string_equal(a.quantity, "delta_loss");
    assert_true(a.cat == CAT_SEMANTIC && isnan(a.tau));
    KEY_IS(metric_exit(&k, 0.5, "tlops_saved", METRIC_NONE), "exit.tlops_saved", "{\"tau\":0.500}",
           "exit.tau0.500.tlops_saved");
    assert_true(metric_ablation_parse(&k, &a));
    assert_true(!strcmp(a.mode, "exit") && !strcmp(a.label, "tau0.500") && a.tau == 0.5 && a.cat == METRIC_NONE);
    KEY_IS(metric_ablation_sibling(&k, &a, "delta_loss", CAT_FUNCTIONAL), "exit.delta_loss",
           "{\"tau\":0.500,\"category\":\"functional\"}", "exit.tau0.500.delta_loss.functional");
    KEY_IS(metric_exit(&k, NAN, "loss", METRIC_NONE), "exit.loss", "{\"tau\":null}", "exit.full.loss");
    assert_true(metric_ablation_parse(&k, &a) && !strcmp(a.label, "full") && isnan(a.tau));
    KEY_IS(metric_ablation_sibling(&k, &a, "tlops_saved", METRIC_NONE), "exit.tlops_saved", "{\"tau\":null}",
           "exit.full.tlops_saved");
    KEY_IS(metric_exit_mode(&k, METRIC_POSTHOC_MODE, 0.3, "loss", METRIC_NONE), "posthoc.loss", "{\"tau\":0.300}",
           "posthoc.tau0.300.loss");
    assert_int_equal(metric_ablation(&k, "zero", "tau0.5", "loss", METRIC_NONE), -1);
    assert_int_equal(metric_ablation(&k, "zero", "a\"b", "loss", METRIC_NONE), -1); /* no JSON escapes */
    assert_int_equal(metric_exit(&k, INFINITY, "loss", METRIC_NONE), -1);
    assert_int_equal(metric_exit_mode(&k, "zero", 0.5, "loss", METRIC_NONE), -1);
    r = key_of("zero.all", "{}");
    assert_false(metric_ablation_parse(&r, &a));
    r = key_of("zero.delta_loss", "{}"); /* no gates: not an intervention */
    assert_false(metric_ablation_parse(&r, &a));
    r = key_of("zero.delta_loss", "{\"gates\":\"all\",\"category\":\"nope\"}");
    assert_false(metric_ablation_parse(&r, &a));
    r = key_of("exit.loss", "{\"tau\":x}");
    assert_false(metric_ablation_parse(&r, &a));
    r = key_of("zero.loss", "{\"tau\":0.500}"); /* a threshold only for exit and posthoc */
    assert_false(metric_ablation_parse(&r, &a));

    /* headline and paired analyses */
    KEY_IS(metric_headline(&k, METRIC_HARD, "active_frac"), "hard.active_frac", "{}", "hard.active_frac");
    assert_true(metric_headline_parse(&k, METRIC_HARD, label, sizeof label) && !strcmp(label, "active_frac"));
    assert_false(metric_headline_parse(&k, METRIC_FINAL, label, sizeof label));
    /* the paper's sparse form is its own kind: never read as hard.* (nor hard.* as it) */
    KEY_IS(metric_headline(&k, METRIC_HARD_PAPER, "token_acc"), "hard_paper.token_acc", "{}", "hard_paper.token_acc");
    assert_true(metric_headline_parse(&k, METRIC_HARD_PAPER, label, sizeof label) && !strcmp(label, "token_acc"));
    assert_false(metric_headline_parse(&k, METRIC_HARD, label, sizeof label));
    KEY_IS(metric_headline(&k, METRIC_HARD, "loss"), "hard.loss", "{}", "hard.loss");
    assert_false(metric_headline_parse(&k, METRIC_HARD_PAPER, label, sizeof label));
    assert_int_equal(metric_headline(&k, "soft", "loss"), -1);
    KEY_IS(metric_partner(&k, METRIC_DIFFICULTY, "paper-x-003", 22, "rho"), "difficulty.rho",
           "{\"partner\":\"paper-x-003\",\"seed\":22}", "difficulty.paper-x-003.seed22.rho");
    assert_int_equal(metric_partner(&k, METRIC_DIFFICULTY, "a.b", 1, "rho"), -1);

    /* labels of rows this module did not write: shown as stored, and said so */
    assert_int_equal(metric_label("alpha_mean", "{\"k\": ", label, sizeof label), -1);
    assert_string_equal(label, "alpha_mean {\"k\": ");
    assert_int_equal(metric_label("odd.L01", "{}", label, sizeof label), 0);
    assert_string_equal(label, "odd.L01");

    /* gate labels */
    assert_int_equal(metric_label_gate(label, sizeof label, 3, METRIC_NONE), 0);
    assert_string_equal(label, "L3");
    assert_int_equal(metric_label_gate(label, sizeof label, 3, 7), 0);
    assert_string_equal(label, "L3H7");
    assert_true(metric_label_gate_parse("L3H7", &l, &h) && l == 3 && h == 7);
    assert_true(metric_label_gate_parse("L3", &l, &h) && l == 3 && h == METRIC_NONE);
    assert_false(metric_label_gate_parse("L3H7+L2", &l, &h));
    assert_false(metric_label_gate_parse("all", &l, &h));
    assert_false(metric_label_gate_parse("L3H", &l, &h));
    printf("metric keys: statistics, interventions, early exit, headline and paired rows built as (name, params), "
           "read back to their parts, labelled; bad tokens refused\n");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_metric_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
