/*
 * editdist.h — the one edit distance of gatelab: how far a word typed is from
 * each word it could have meant, for the "(did you mean X?)" of an unknown
 * command, flag, run id, manifest key, section or value.
 *
 * Not here: which word is near enough to suggest — the command line
 * (harness/cli/args.c args_suggest) and the manifest (harness/store/manifest.c)
 * each keep their own rule on top of this distance.
 */
#ifndef GATELAB_HARNESS_EDITDIST_H
#define GATELAB_HARNESS_EDITDIST_H

/* What editdist returns for a word of EDITDIST_MAX bytes or longer: farther
 * than any two shorter words can be. */
#define EDITDIST_MAX 64
#define EDITDIST_FAR 99

/* The optimal-string-alignment distance between a and b: the number of
 * single-character edits (insert, delete, substitute, or swap two neighbours:
 * "trian" is 1 from "train"), compared without ASCII case when fold_case is
 * non-zero; EDITDIST_FAR when either is EDITDIST_MAX bytes or longer. */
int editdist(const char *a, const char *b, int fold_case);

#endif
