/*
 * corpus.h — a small English-like text corpus that a test writes for itself,
 * so no test needs a downloaded data set to have real text to train on,
 * classify and analyse.
 *
 * The text is play-like: a speaker line ("KING HENRY:") then sentences of
 * words separated by spaces, with commas, semicolons, full stops, question
 * and exclamation marks, and a newline every few words.  About half the words
 * are function words read from the repository's experiments/function_words.txt
 * (so the structural / functional / semantic token categories all occur); the
 * rest are content words from a fixed list.  Word choice is skewed (frequent
 * and rare words, as in real text) and follows a simple grammar (a function
 * word is usually followed by a content word), so a small model's loss falls
 * quickly, as it does on Tiny Shakespeare.
 *
 * Deterministic: the same seed and size give the same bytes on every machine
 * (splitmix64; no libc rand).  Used by the C tests directly and by the
 * integration scripts through build/tests/mkcorpus (tests/mkcorpus.c).
 * Not a stand-in for a named data set: nothing checks its numbers against
 * published ones.
 */
#ifndef GATELAB_TESTS_CORPUS_H
#define GATELAB_TESTS_CORPUS_H

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define CORPUS_FW_MAX 400

static const char *const corpus_content[] = {
    "king",   "night",  "sword",  "crown",  "love",   "heart",  "blood",  "honour", "lord",   "queen",
    "death",  "time",   "world",  "eyes",   "hand",   "father", "son",    "grace",  "tongue", "war",
    "peace",  "friend", "gold",   "speak",  "come",   "stand",  "know",   "fear",   "good",   "sweet",
    "noble",  "fair",   "dead",   "young",  "old",    "true",   "great",  "little", "gentle", "poor",
    "house",  "city",   "field",  "storm",  "ship",   "letter", "prince", "duke",   "soldier","lady",
    "answer", "swear",  "marry",  "sleep",  "weep",   "fight",  "pray",   "bring",  "leave",  "keep",
};
static const char *const corpus_speakers[] = {"KING HENRY", "QUEEN", "ROMEO", "LADY ANNE", "FIRST SOLDIER",
                                              "DUKE", "GLOUCESTER", "NURSE"};

static uint64_t corpus_next(uint64_t *s) { /* splitmix64 */
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* An index in [0, n), skewed towards small indices (about Zipf-like). */
static size_t corpus_pick(uint64_t *s, size_t n) {
    double u = (double)(corpus_next(s) >> 11) / 9007199254740992.0;
    size_t k = (size_t)(u * u * (double)n);
    return k < n ? k : n - 1;
}

/* Read the function words of fw_path (one per line, '#' comments) into
 * words; returns how many (0 when the file cannot be read). */
static int corpus_function_words(const char *fw_path, char words[][32], int max) {
    FILE *f = fopen(fw_path, "r");
    if (!f) return 0;
    char line[256];
    int n = 0;
    while (n < max && fgets(line, sizeof line, f)) {
        char *h = strchr(line, '#');
        if (h) *h = 0;
        char w[32];
        if (sscanf(line, "%31s", w) == 1) snprintf(words[n++], 32, "%s", w);
    }
    fclose(f);
    return n;
}

/* Write `bytes` bytes of corpus text to path, seeded by seed, with the
 * function words of fw_path.  Returns 0, or -1 when the file cannot be
 * written or fw_path holds no word (a corpus without function words would
 * leave the "functional" category empty). */
static int corpus_write(const char *path, size_t bytes, uint64_t seed, const char *fw_path) {
    static char fw[CORPUS_FW_MAX][32];
    int nfw = corpus_function_words(fw_path, fw, CORPUS_FW_MAX);
    if (nfw == 0) return -1;
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    uint64_t s = seed * 0x2545f4914f6cdd1dULL + 1;
    const size_t nc = sizeof corpus_content / sizeof corpus_content[0];
    const size_t ns = sizeof corpus_speakers / sizeof corpus_speakers[0];
    size_t written = 0;
    int words_in_line = 0, words_in_sentence = 0, prev_function = 0, sentences_in_speech = 0;
    char buf[96];
    fprintf(f, "%s:\n", corpus_speakers[0]);
    written += strlen(corpus_speakers[0]) + 2;
    while (written < bytes) {
        /* a function word is usually followed by a content word; otherwise half and half */
        int function = prev_function ? (corpus_next(&s) % 5 == 0) : (corpus_next(&s) % 2 == 0);
        const char *w = function ? fw[corpus_pick(&s, (size_t)nfw)] : corpus_content[corpus_pick(&s, nc)];
        int n = snprintf(buf, sizeof buf, "%s", w);
        if (words_in_sentence == 0) buf[0] = (char)toupper((unsigned char)buf[0]);
        prev_function = function;
        words_in_sentence++;
        words_in_line++;
        /* what follows the word: punctuation, then a space or a newline */
        uint64_t r = corpus_next(&s) % 100;
        int end = words_in_sentence >= 4 && r < 18;
        if (end) n += snprintf(buf + n, sizeof buf - (size_t)n, "%s", r < 12 ? "." : r < 15 ? "?" : "!");
        else if (r > 90) n += snprintf(buf + n, sizeof buf - (size_t)n, "%s", r > 97 ? ";" : ",");
        if (end && ++sentences_in_speech >= 3 && corpus_next(&s) % 3 == 0) {
            n += snprintf(buf + n, sizeof buf - (size_t)n, "\n\n%s:\n", corpus_speakers[corpus_pick(&s, ns)]);
            sentences_in_speech = 0;
            words_in_line = 0;
        } else if (words_in_line >= 7 && corpus_next(&s) % 3 == 0) {
            n += snprintf(buf + n, sizeof buf - (size_t)n, "\n");
            words_in_line = 0;
        } else {
            n += snprintf(buf + n, sizeof buf - (size_t)n, " ");
        }
        if (end) words_in_sentence = 0;
        size_t k = (size_t)n;
        if (written + k > bytes) k = bytes - written;
        if (fwrite(buf, 1, k, f) != k) break;
        written += k;
    }
    int bad = ferror(f);
    if (fclose(f) != 0 || bad || written != bytes) return -1;
    return 0;
}

#endif
