/*
 * serve.h — the dashboard's static files (harness/cli/web/), embedded into
 * the binary at build time: the Makefile runs harness/cli/web/embed.sh, which
 * writes $(BUILD)/gen/serve_assets.c with one byte array per file and the
 * table below.  cmd_serve.c serves them from memory, so `gatelab serve` needs
 * no network and no source tree, and no URL ever becomes a file path.
 */
#ifndef GATELAB_HARNESS_CLI_SERVE_H
#define GATELAB_HARNESS_CLI_SERVE_H

#include <stddef.h>

typedef struct {
    const char *path;          /* "/static/<path under harness/cli/web/>" */
    const char *type;          /* its Content-Type */
    const unsigned char *data; /* len bytes, then a NUL (not counted) */
    size_t len;
} serve_asset;

extern const serve_asset serve_assets[];
extern const int serve_n_assets;

#endif
