/*
 * manifest_keys.h — the manifest's key table, private to harness/store/manifest*.c.
 *
 * One row per key: section, name, type, place in gl_manifest, range, whether a
 * sweep may vary it and whether it is late (key_def.late).  manifest.c parses,
 * checks, writes and walks (manifest_each_key) from these rows; manifest_keys.c
 * holds them.  Nothing outside harness/store/manifest*.c includes this header:
 * everyone else sees the table through manifest_each_key (manifest.h).
 */
#ifndef GATELAB_HARNESS_MANIFEST_KEYS_H
#define GATELAB_HARNESS_MANIFEST_KEYS_H

#include <stddef.h>

#include "manifest.h"

typedef enum { K_INT, K_U64, K_FLOAT, K_BOOL, K_STR, K_ENUM, K_SCALE } key_kind;
typedef enum { EN_NONE, EN_VR, EN_RF, EN_DR, EN_EE, EN_TASK, EN_CL, EN_TOK, EN_SG, EN_WD, EN_TASKF, EN_EM, EN_BB, EN_TF, EN_XF } enum_id;
/* string constraints */
enum { S_ANY = 0, S_NONEMPTY = 1, S_NAME = 2 };
/* float constraint: F_AUTO also accepts "auto", stored as NaN (the key's documented automatic value) */
enum { F_AUTO = 1 };

typedef struct {
    const char *section, *name;
    key_kind kind;
    size_t off;       /* offset of the field in gl_manifest */
    size_t size;      /* strings: buffer size */
    double lo, hi;    /* numeric range */
    int lo_open, hi_open;
    int aux;          /* K_ENUM: enum_id; K_STR: S_* constraint; K_FLOAT: F_AUTO or 0 */
    int sweep;        /* may be varied by [sweep] */
    int late;         /* added after runs were first registered (2026-12-01), its default being the
                       * behaviour from before it existed: left out of a run's identity while at
                       * its default (manifest_identity_text), so older runs keep their ids */
} key_def;

/* The table, in canonical order (manifest_keys.c); MF_N_KEYS rows, checked there at compile time. */
#define MF_N_KEYS 76
extern const key_def mf_keys[MF_N_KEYS];

/* An enum key's values (aux = enum_id): the name of value v, how many there are, and its field in
 * gl_manifest read and written through its own type, never through an int*. */
const char *mf_enum_name(int en, int v);
int mf_enum_count(int en);
void mf_enum_store(gl_manifest *mf, int en, int v);
int mf_enum_load(const gl_manifest *mf, int en);

/* The canonical text of a float (the shortest that reads back as exactly f) and of key k's value in mf. */
void mf_format_float(char *out, size_t outlen, float f);
void mf_format_value(char *out, size_t outlen, const gl_manifest *mf, const key_def *k);

#endif
