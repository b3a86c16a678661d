/*
 * sha256.h — SHA-256 (FIPS 180-4) of memory and of files, as lowercase hex.
 * Used for artifact checksums and run configuration hashes in the registry.
 * Where things live: the hash in sha256.c; its users registry.c, run/train.c,
 * harness/run/sweep.c and trace_read.c (the probe batch's digest).
 */
#ifndef GATELAB_HARNESS_SHA256_H
#define GATELAB_HARNESS_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint32_t h[8];
    uint64_t bytes;      /* message length so far */
    unsigned char buf[64];
    size_t fill;         /* bytes in buf */
} sha256_ctx;

void sha256_init(sha256_ctx *c);
void sha256_update(sha256_ctx *c, const void *data, size_t len);
void sha256_final(sha256_ctx *c, unsigned char digest[32]);

/* hex[65]: 64 lowercase hex digits and a NUL. */
void sha256_hex(const void *data, size_t len, char hex[65]);
void sha256_digest_hex(const unsigned char digest[32], char hex[65]);

/* Hash the file at path; *bytes (if non-NULL) gets its size.  Returns 0, or
 * -1 with a message naming the file in err. */
int sha256_file(const char *path, char hex[65], long long *bytes, char *err, size_t errlen);

#endif
