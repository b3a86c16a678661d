/*
 * fuzz_manifest.c — libFuzzer target for the manifest parser (store/manifest.c
 * through inih): any text either loads or fails with a message, and a loaded
 * manifest survives its own round trip: manifest_to_ini, loaded again, gives
 * the same text (what a run stores in its config.ini and checkpoint must read
 * back as the same run).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "store/manifest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 1 << 16) return 0;
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    static gl_manifest mf, again;
    char err[2048] = "";
    if (manifest_load_text(&mf, text, "fuzz", err, sizeof err) == 0) {
        char *ini = manifest_to_ini(&mf);
        if (!ini) abort();
        if (manifest_load_text(&again, ini, "fuzz round trip", err, sizeof err) != 0) abort();
        char *ini2 = manifest_to_ini(&again);
        if (!ini2 || strcmp(ini, ini2) != 0) abort();
        free(ini);
        free(ini2);
    } else if (!err[0]) {
        abort(); /* a refusal always says why */
    }
    free(text);
    return 0;
}
