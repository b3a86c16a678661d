/*
 * probe_html.c — `gatelab report --probe CACHE --html`: the text of an
 * activation cache (probe.h) coloured token by token by any of its arrays,
 * the value on hover.  Every float array with exactly one token axis gives
 * one view per combination of its other indices (a block, a block and KV
 * head, ...); the arrays come from the file, so a new gate kind or
 * measurement is shown with no edit here.  The colours and escaping are the
 * trace report's (html.h); the scale of a view runs from min(0, lowest) to
 * its highest value, so "near zero" reads white.  No script, no network.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/render/html.h"
#include "store/fileio.h"
#include "analysis/measure/probe.h"

/* One token's bytes, escaped; newline as ↵ and a break, other control bytes as hex. */
static void ph_bytes(FILE *f, const uint8_t *p, size_t n) {
    for (size_t i = 0; i < n; i++) {
        const unsigned char b = p[i];
        if (b == '\n') fputs("\xe2\x86\xb5<br>", f);
        else if (b == '\t') fputs("\xe2\x87\xa5", f);
        else if (b < 32 || b == 127) fprintf(f, "\\x%02x", b);
        else {
            char s[2] = {(char)b, 0};
            html_escape(f, s);
        }
    }
}

/* Name of index k of the axes string's axis number ax ("layer" → "block"). */
static void ph_axis(const char *axes, int ax, char *out, size_t n) {
    char tmp[64];
    snprintf(tmp, sizeof tmp, "%s", axes);
    int k = 0;
    out[0] = 0;
    for (char *s = strtok(tmp, ","); s; s = strtok(NULL, ","), k++)
        if (k == ax) snprintf(out, n, "%s", !strcmp(s, "layer") ? "block" : s);
}

/* One view: tokens coloured by val (P values, stride apart).  Returns 1, or 0
 * when every value is NaN (a row the model does not have: nothing written). */
static int ph_view(FILE *f, const gl_probecache *pc, const pc_array *a, size_t base, size_t stride, const char *label,
                    long max_tok, int open) {
    const long P = pc->n_tok, shown = P < max_tok ? P : max_tok;
    double lo = 0.0, hi = 0.0, sum = 0.0;
    long cnt = 0;
    for (long i = 0; i < P; i++) {
        const double v = a->data[base + (size_t)i * stride];
        if (!isfinite(v)) continue;
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
        sum += v, cnt++;
    }
    if (!cnt) return 0; /* a row the model does not have (e.g. block 0's V1 share) */
    char c0[8], c1[8];
    html_colour(0, 0, c0);
    html_colour(1, 0, c1);
    fprintf(f, "<details%s><summary>", open ? " open" : "");
    html_escape(f, a->title);
    fprintf(f, " — %s (mean %.4g, max %.4g)</summary>\n", label, sum / cnt, hi);
    fprintf(f, "<p class=\"legend\"><span class=\"num\">%.3g</span> <span class=\"bar\" "
               "style=\"background:linear-gradient(to right,%s,%s)\"></span> <span class=\"num\">%.3g</span></p>\n",
            lo, c0, c1, hi);
    fputs("<div class=\"probe\">", f);
    for (long i = 0; i < shown; i++) {
        const int id = pc->tokens[i];
        const double v = a->data[base + (size_t)i * stride];
        char col[8];
        html_colour(isfinite(v) && hi > lo ? (v - lo) / (hi - lo) : 0, 0, col);
        fprintf(f, "<span style=\"background:%s\" title=\"%s = %.4g · token %ld (id %d)\">", col, label, v, i, id);
        ph_bytes(f, pc->vocab_bytes + pc->vocab_offset[id], (size_t)(pc->vocab_offset[id + 1] - pc->vocab_offset[id]));
        fputs("</span>", f);
    }
    if (shown < P) fprintf(f, " … (%ld more tokens not shown)", P - shown);
    fputs("</div>\n</details>\n", f);
    return 1;
}

int probe_html(const gl_probecache *pc, const char *out_path, const char *only, int max_chars, char *err,
               size_t errlen) {
    fileio_out out;
    if (fileio_begin_own(&out, out_path, "HTML page", fileio_is_html, err, errlen)) return -1;
    FILE *f = out.f;
    const long max_tok = max_chars > 0 ? max_chars : 4096;
    fputs("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>probe ", f);
    html_escape(f, pc->run_id);
    fputs("</title>\n<style>body{font-family:sans-serif;max-width:70em;margin:1em auto}"
          ".probe{font-family:monospace;white-space:pre-wrap;line-height:1.6;border:1px solid #ccc;padding:.5em}"
          ".bar{display:inline-block;width:12em;height:.8em;border:1px solid #999}.num{font-family:monospace}"
          "summary{cursor:pointer;margin:.3em 0}</style></head><body>\n<h1>probe of ", f);
    html_escape(f, pc->run_id);
    fputs("</h1>\n<p>Source: ", f);
    html_escape(f, pc->source);
    fprintf(f, "; %ld tokens, %ld scored; the model's loss %.6f nats/token. Hover a token for its value.</p>\n",
            pc->n_tok, pc->scored, pc->loss);
    int views = 0;
    for (int k = 0; k < pc->n_arr; k++) {
        const pc_array *a = &pc->arr[k];
        if (a->token_axis < 0 || (only && strncmp(a->path, only, strlen(only)))) continue;
        int tok2 = 0;
        for (int i = 0; i < a->rank; i++) {
            char nm[32];
            ph_axis(a->axes, i, nm, sizeof nm);
            tok2 += !strcmp(nm, "token");
        }
        if (tok2 != 1 || a->dims[a->token_axis] != pc->n_tok) continue;
        if (strstr(a->axes, "key") && !only) continue; /* attention: a view per key, only when asked for (--only attn/) */
        fprintf(f, "<h2>/%s</h2>\n", a->path);
        /* every index of the other axes: strides of the row-major layout */
        size_t stride[4], total = 1;
        for (int i = a->rank - 1; i >= 0; i--) stride[i] = total, total *= (size_t)a->dims[i];
        const size_t combos = total / (size_t)a->dims[a->token_axis];
        for (size_t cidx = 0; cidx < combos; cidx++) {
            size_t rem = cidx, base = 0, ix[4] = {0};
            for (int i = a->rank - 1; i >= 0; i--) {
                if (i == a->token_axis) continue;
                ix[i] = rem % (size_t)a->dims[i];
                rem /= (size_t)a->dims[i];
                base += ix[i] * stride[i];
            }
            char label[128] = "";
            for (int i = 0; i < a->rank; i++) {
                if (i == a->token_axis) continue;
                char nm[32];
                ph_axis(a->axes, i, nm, sizeof nm);
                snprintf(label + strlen(label), sizeof label - strlen(label), "%s%s %zu", label[0] ? ", " : "", nm,
                         ix[i]);
            }
            if (!label[0]) snprintf(label, sizeof label, "every token");
            views += ph_view(f, pc, a, base, stride[a->token_axis], label, max_tok, views == 0);
        }
    }
    fputs("</body></html>\n", f);
    if (fileio_commit(&out, "HTML page", err, errlen)) return -1;
    return views;
}
