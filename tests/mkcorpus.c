/*
 * mkcorpus.c — write the test corpus of tests/corpus.h to a file, for the
 * integration scripts (tests/integration/lib.sh: make_corpus).
 *
 *   build/tests/mkcorpus OUT [BYTES] [SEED]     (default 262144 bytes, seed 1)
 *
 * The function words come from the repository's experiments/function_words.txt
 * (found from the binary's path, or $GATELAB_ROOT).  Exit 0, or 1 with a
 * message naming what failed.
 */
#include <stdio.h>
#include <stdlib.h>

#include "corpus.h"
#include "store/rundir.h"

int main(int argc, char **argv) {
    if (argc < 2 || argc > 4) {
        fprintf(stderr, "usage: mkcorpus OUT [BYTES] [SEED]\n");
        return 2;
    }
    size_t bytes = argc > 2 ? (size_t)strtoull(argv[2], NULL, 10) : 262144;
    uint64_t seed = argc > 3 ? strtoull(argv[3], NULL, 10) : 1;
    char fw[4096];
    run_repo_path(fw, sizeof fw, "experiments/function_words.txt");
    if (bytes == 0 || corpus_write(argv[1], bytes, seed, fw) != 0) {
        fprintf(stderr, "mkcorpus: cannot write %zu bytes of corpus to %s (function words from %s)\n", bytes, argv[1], fw);
        return 1;
    }
    return 0;
}
