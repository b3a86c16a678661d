/*
 * test_agree.c — the points where the ranks agree (harness/run/agree.h), on
 * one rank (dist.c, the build every test links): each agreement must be the
 * rank's own flags, unchanged, and leave err alone unless another rank
 * failed.  The several-rank behaviour (a signal on one rank stopping all, a
 * config mismatch named) is tests/integration/mpi.sh and mpi_agree.sh.
 * Exact comparisons throughout: integer flags and strings.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "run/agree.h"
#include "run/dist.h"

static int fails, checks; /* tests/run.sh counts the summary line printed at the end */

static void check(const char *what, int ok) {
    printf("%s %s\n", ok ? "ok  " : "FAIL", what);
    fails += !ok;
    checks++;
}

int main(void) {
    static volatile sig_atomic_t stop, ckpt;
    const agree_signals sig = {&stop, &ckpt};
    char err[512];
    check("one rank", dist_size() == 1 && dist_rank() == 0);

    strcpy(err, "untouched");
    agree_flags a = agree_point(&sig, 0, err, sizeof err);
    check("no signal, no failure: all flags 0", a.stop == 0 && a.ckpt == 0 && a.fail == 0);
    check("no failure: err untouched", strcmp(err, "untouched") == 0);

    stop = SIGTERM;
    ckpt = 1;
    a = agree_point(&sig, 0, err, sizeof err);
    check("SIGTERM and SIGUSR1 seen: stop = SIGTERM, ckpt = 1", a.stop == SIGTERM && a.ckpt == 1 && a.fail == 0);
    check("the stop flag stays as it was", stop == SIGTERM && ckpt == 1);
    stop = 0;
    ckpt = 0;

    strcpy(err, "rank 0's own message");
    a = agree_point(&sig, 1, err, sizeof err);
    check("rank 0 failed: fail = 1 (rank 0 + 1)", a.fail == 1 && a.stop == 0);
    check("own failure: its message kept", strcmp(err, "rank 0's own message") == 0);

    int own = 0;
    check("set-up, no failure: 0", agree_setup(&sig, &own, err, sizeof err) == 0 && own == 0);
    own = 1;
    check("set-up, rank 0 failed: 1, own stays 1", agree_setup(&sig, &own, err, sizeof err) == 1 && own == 1);
    check("set-up failure: the message kept", strcmp(err, "rank 0's own message") == 0);

    /* a text data set of 5 bytes over a 3-byte vocabulary, and a config */
    uint8_t vocab[3] = {'a', 'b', 'c'}, ids[5] = {0, 1, 2, 1, 0};
    gl_dataset ds;
    memset(&ds, 0, sizeof ds);
    ds.task = TASK_TEXT;
    ds.vocab_size = 3;
    ds.vocab = vocab;
    ds.ids = ids;
    ds.n = 5;
    strcpy(err, "untouched");
    check("config on one rank: agreed (0)",
          agree_config(&ds, "[model]\nd_model = 64\n; a comment\n[train]\nsteps = 10\n", err, sizeof err) == 0);
    check("config agreed: err untouched", strcmp(err, "untouched") == 0);
    check("no config text: agreed (0)", agree_config(&ds, NULL, err, sizeof err) == 0);
    ds.task = TASK_COPY;
    check("a synthetic task: agreed (0)", agree_config(&ds, "[data]\ntask = copy\n", err, sizeof err) == 0);

    printf("%s: %d failure%s\n", fails ? "FAIL" : "ok", fails, fails == 1 ? "" : "s");
    if (fails) printf("[  FAILED  ] %d check(s), listed above.\n", fails);
    else printf("[  PASSED  ] %d check(s).\n", checks);
    return fails ? 1 : 0;
}
