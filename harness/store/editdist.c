/*
 * editdist.c — optimal-string-alignment distance (editdist.h): Levenshtein's
 * insert, delete and substitute plus a swap of two neighbours as one edit
 * (Damerau 1964), without the full Damerau–Levenshtein transposition of
 * separated letters.  One dynamic-programming table on the stack; words are
 * short (commands, flags, keys, run ids).
 */
#include "editdist.h"

#include <ctype.h>
#include <string.h>

static int ed_char(const char *s, size_t i, int fold_case) {
    const int c = (unsigned char)s[i];
    return fold_case ? tolower(c) : c;
}

int editdist(const char *a, const char *b, int fold_case) {
    const size_t m = strlen(a), n = strlen(b);
    if (m >= EDITDIST_MAX || n >= EDITDIST_MAX) return EDITDIST_FAR;
    int d[EDITDIST_MAX + 1][EDITDIST_MAX + 1];
    for (size_t i = 0; i <= m; i++) d[i][0] = (int)i;
    for (size_t j = 0; j <= n; j++) d[0][j] = (int)j;
    for (size_t i = 1; i <= m; i++)
        for (size_t j = 1; j <= n; j++) {
            const int ca = ed_char(a, i - 1, fold_case), cb = ed_char(b, j - 1, fold_case);
            int v = d[i - 1][j - 1] + (ca != cb);
            if (d[i - 1][j] + 1 < v) v = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < v) v = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && ca == ed_char(b, j - 2, fold_case) && ed_char(a, i - 2, fold_case) == cb &&
                d[i - 2][j - 2] + 1 < v)
                v = d[i - 2][j - 2] + 1;
            d[i][j] = v;
        }
    return d[m][n];
}
