/*
 * html.c — the HTML report page (html.h): one file per run or experiment,
 * assembled from what the other analyses already wrote — the figures'
 * SVG (figures.c, gnuplot's svg terminal), the registry's tables (tables.c,
 * Markdown), a run's analysis files (TSV) — and from the run's trace for the
 * coloured probe text.
 *
 * Self-contained on purpose: figures are inlined as base64 data URIs (each
 * SVG stays its own document, so gnuplot's element ids cannot clash), the
 * style sheet is in the page, and there is no script and no link to another
 * host.  Interactivity is HTML's own: <details> to open another gate's view,
 * title attributes for the value under the pointer.
 *
 * Gates come from the gate table (model/gatekind.h), never by name: a run's
 * section shows each gate's analysis files (hr_gate_files) and colours the
 * probe text by each per-token gate, the view chosen by the shape of its axes
 * (hr_view_of), so a new gate kind appears here without an edit.
 *
 * Colour scales: a head gate (SATFormer α) is shown relative to the largest
 * value of the view (white = 0, deep orange = that maximum; the legend gives
 * the number); a router gate (TSA p) as the effective depth
 * Dₜ = 1 + Σₗ (1 − pₗₜ) (analysis/measure/depth.h, soft) from 1 (white) to L blocks
 * (deep blue); a per-block gate by its mean over blocks.  All read the last
 * evaluation in the trace.
 *
 * What it does not do: compute statistics (analyze, ablate and tables did),
 * or draw (gnuplot did).
 */
#include "analysis/render/html.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "store/fileio.h"
#include "store/rundir.h"
#include "store/trace.h"
#include "analysis/measure/depth.h"
#include "analysis/render/figures.h"
#include "analysis/core/report.h"
#include "analysis/render/tables.h"
#include "analysis/runs/runset.h"

#define HR_VIEWS_MAX 32 /* head-gate views (block × KV head) written before only the chosen one is kept */

/* ---- small writers ---- */

void html_escape(FILE *f, const char *s) {
    for (; *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&#39;", f); break;
        default: fputc(*s, f);
        }
    }
}

void html_colour(double v, int blue, char out[8]) {
    if (!(v >= 0)) v = 0; /* NaN too */
    if (v > 1) v = 1;
    /* white -> #e6550d (orange) or -> #2171b5 (blue) */
    const int to[2][3] = {{0xe6, 0x55, 0x0d}, {0x21, 0x71, 0xb5}};
    const int *t = to[blue ? 1 : 0];
    int rgb[3];
    for (int k = 0; k < 3; k++) rgb[k] = (int)lround(255.0 + (t[k] - 255.0) * v);
    snprintf(out, 8, "#%02x%02x%02x", rgb[0], rgb[1], rgb[2]);
}

/* The whole file at path (malloc'd, NUL-terminated), its length in *n; NULL if unreadable. */
static char *hr_slurp(const char *path, size_t *n) {
    char why[64]; /* an unreadable part is left out of the report, not an error */
    size_t len;
    char *buf = fileio_slurp(path, "report part", 0, &len, why, sizeof why);
    if (buf && n) *n = len;
    return buf;
}

static void hr_base64(FILE *f, const unsigned char *p, size_t n) {
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) | (i + 2 < n ? p[i + 2] : 0);
        fputc(tab[v >> 18 & 63], f);
        fputc(tab[v >> 12 & 63], f);
        fputc(i + 1 < n ? tab[v >> 6 & 63] : '=', f);
        fputc(i + 2 < n ? tab[v & 63] : '=', f);
    }
}

/* ---- figures and tables ---- */

/* One figure: the SVG at path inlined as a data URI.  Returns 1 written, 0 no such file. */
static int hr_figure(FILE *f, const char *path, const char *name) {
    size_t n = 0;
    char *svg = hr_slurp(path, &n);
    if (!svg) return 0;
    fputs("<figure><img alt=\"", f);
    html_escape(f, name);
    fputs("\" src=\"data:image/svg+xml;base64,", f);
    hr_base64(f, (const unsigned char *)svg, n);
    fputs("\"><figcaption>", f);
    html_escape(f, name);
    fputs("</figcaption></figure>\n", f);
    free(svg);
    return 1;
}

/* Split a Markdown table row "| a | b |" in place into cells; returns how many. */
static int hr_md_cells(char *line, char **cells, int max) {
    int n = 0;
    char *s = strchr(line, '|');
    if (!s) return 0;
    for (s++; *s && n < max;) {
        char *bar = strchr(s, '|');
        if (!bar) break;
        *bar = 0;
        while (*s == ' ') s++;
        for (char *e = bar - 1; e >= s && *e == ' '; e--) *e = 0;
        cells[n++] = s;
        s = bar + 1;
    }
    return n;
}

/* The heading (tag h3 or h4) and the opening of a table. */
static void hr_table_open(FILE *f, const char *tag, const char *title) {
    fprintf(f, "<%s>", tag);
    html_escape(f, title);
    fprintf(f, "</%s>\n<table>\n", tag);
}

/* One table cell: a header cell (th) or a data cell (td). */
static void hr_table_cell(FILE *f, const char *text, int header) {
    fputs(header ? "<th>" : "<td>", f);
    html_escape(f, text);
    fputs(header ? "</th>" : "</td>", f);
}

/* A Markdown pipe table (tables.c's .md) as an HTML table, with its title line. */
static void hr_table_md(FILE *f, const char *path, const char *name) {
    size_t n = 0;
    char *md = hr_slurp(path, &n);
    if (!md) return;
    hr_table_open(f, "h3", name);
    int row = 0;
    for (char *line = strtok(md, "\n"); line; line = strtok(NULL, "\n")) {
        if (!strncmp(line, "<!--", 4)) continue; /* "generated by" notes */
        if (line[0] != '|') {
            fputs("<caption>", f);
            html_escape(f, line[0] == '#' ? line + strspn(line, "# ") : line);
            fputs("</caption>\n", f);
            continue;
        }
        char *cells[64];
        int k = hr_md_cells(line, cells, 64);
        if (row == 1 && k > 0 && strspn(cells[0], "-: ") == strlen(cells[0])) { /* the |---| line */
            row++;
            continue;
        }
        fputs("<tr>", f);
        for (int c = 0; c < k; c++) hr_table_cell(f, cells[c], row == 0);
        fputs("</tr>\n", f);
        row++;
    }
    fputs("</table>\n", f);
    free(md);
}

/* A TSV file with a header row (the analyses' files) as an HTML table, up to max_rows rows. */
static void hr_table_tsv(FILE *f, const char *path, const char *title, int max_rows) {
    size_t n = 0;
    char *tsv = hr_slurp(path, &n);
    if (!tsv) return;
    hr_table_open(f, "h4", title);
    int row = 0;
    for (char *line = strtok(tsv, "\n"); line && row <= max_rows; line = strtok(NULL, "\n"), row++) {
        fputs("<tr>", f);
        for (char *c = line, *tab;; c = tab + 1) {
            tab = strchr(c, '\t');
            if (tab) *tab = 0;
            hr_table_cell(f, c, row == 0);
            if (!tab) break;
        }
        fputs("</tr>\n", f);
    }
    fputs("</table>\n", f);
    free(tsv);
}

/* ---- coloured probe text ---- */

/* One probe character: newline shown as ↵ then a line break; other
 * non-printing bytes as their hex code. */
static void hr_char(FILE *f, unsigned char b) {
    if (b == '\n') fputs("\xe2\x86\xb5<br>", f);
    else if (b == '\t') fputs("\xe2\x87\xa5", f);
    else if (b < 32 || b >= 127) fprintf(f, "\\x%02x", b);
    else {
        char s[2] = {(char)b, 0};
        html_escape(f, s);
    }
}

/* The legend bar of a view: a gradient from lo to hi. */
static void hr_legend(FILE *f, const char *what, double lo, double hi, int blue) {
    char c0[8], c1[8];
    html_colour(0, blue, c0);
    html_colour(1, blue, c1);
    fprintf(f, "<p class=\"legend\">%s: <span class=\"num\">%.3g</span> <span class=\"bar\" "
               "style=\"background:linear-gradient(to right,%s,%s)\"></span> <span class=\"num\">%.3g</span> "
               "(hover a character for its value)</p>\n",
            what, lo, c0, c1, hi);
}

/* Characters coloured by val (P values, scaled by lo..hi), with a title per character. */
static void hr_probe_text(FILE *f, const gl_trace_data *t, const uint8_t *vocab, int V, const float *val, double lo,
                          double hi, int blue, const char *label, int max_chars) {
    long P = t->n_probe < max_chars ? t->n_probe : max_chars;
    fputs("<div class=\"probe\">", f);
    for (long i = 0; i < P; i++) {
        int id = t->probe_tokens[i];
        unsigned char b = id >= 0 && id < V ? vocab[id] : '?';
        char col[8];
        html_colour(hi > lo ? (val[i] - lo) / (hi - lo) : 0, blue, col);
        fprintf(f, "<span style=\"background:%s\" title=\"%s %.4f · token %ld · byte 0x%02x\">", col, label,
                (double)val[i], i, b);
        hr_char(f, b);
        fputs("</span>", f);
    }
    if (P < t->n_probe) fprintf(f, " … (%ld more characters not shown)", t->n_probe - P);
    fputs("</div>\n", f);
}

/* A per-token head gate's views (SATFormer α): the chosen (block, KV head)
 * open, the others in closed <details>.  Returns the views written. */
static int hr_head_views(FILE *f, const gl_trace_data *t, gl_gate g, const uint8_t *vocab, int V, const html_opts *o,
                         int max_chars, float *val) {
    const char *sym = gatekind_info[g].symbol;
    const int L = t->n_layer, H = t->n_kv_head;
    const long P = t->n_probe, S = t->n_steps;
    const float *a = t->gate[g] + (size_t)(S - 1) * L * P * H; /* (L, P, Hkv) at the last evaluation */
    int cb = o->block, ch = o->kv_head, pick = cb < 0 || ch < 0;
    double best = -1;
    for (int l = 1; l < L && pick; l++) /* default: the gate with the largest mean */
        for (int h = 0; h < H; h++) {
            double m = 0;
            for (long i = 0; i < P; i++) m += a[((size_t)l * P + i) * H + h];
            if (m > best) best = m, cb = l, ch = h;
        }
    if (cb < 1 || cb >= L || ch < 0 || ch >= H) {
        fprintf(f, "<p class=\"note\">--block %d --kv-head %d is not a gate of this run (blocks 1..%d, KV heads "
                   "0..%d); showing none.</p>\n", o->block, o->kv_head, L - 1, H - 1);
        return 0;
    }
    int views = 0, all = (L - 1) * H <= HR_VIEWS_MAX;
    for (int l = 1; l < L; l++)
        for (int h = 0; h < H; h++) {
            int chosen = l == cb && h == ch;
            if (!chosen && !all) continue;
            double lo = 0, hi = 0; /* from 0, or from the most negative value of a signed gate (sat_gate tanh, identity) */
            for (long i = 0; i < P; i++) {
                val[i] = a[((size_t)l * P + i) * H + h];
                if (val[i] > hi) hi = val[i];
                if (val[i] < lo) lo = val[i];
            }
            fprintf(f, "<details%s><summary>%s of block %d, KV head %d%s%s (max %.3g)</summary>\n", chosen ? " open" : "",
                    sym, l, h, chosen ? (o->block < 0 ? " — the gate with the largest mean " : " — chosen") : "",
                    chosen && o->block < 0 ? sym : "", hi);
            char label[64];
            snprintf(label, sizeof label, "%s (block %d, KV head %d) =", sym, l, h);
            hr_legend(f, sym, lo, hi, 0);
            hr_probe_text(f, t, vocab, V, val, lo, hi, 0, label, max_chars);
            fputs("</details>\n", f);
            views++;
        }
    if (!all) fputs("<p class=\"note\">Other gates: run the report with --block N --kv-head H.</p>\n", f);
    return views;
}

/* A per-(block, token) gate's view: each character coloured by its mean over
 * blocks 1..L−1 at the last evaluation (for a selection, the share of those
 * blocks the token ran).  Returns the views written. */
static int hr_block_token_view(FILE *f, const gl_trace_data *t, gl_gate g, const uint8_t *vocab, int V,
                               int max_chars, float *val) {
    const int L = t->n_layer;
    const long P = t->n_probe;
    if (L < 2) return 0;
    const float *a = t->gate[g] + (size_t)(t->n_steps - 1) * L * P; /* (L, P) */
    double lo = INFINITY, hi = -INFINITY;
    for (long i = 0; i < P; i++) {
        double m = 0;
        for (int n = 1; n < L; n++) m += a[(size_t)n * P + i];
        val[i] = (float)(m / (L - 1));
        lo = fmin(lo, val[i]);
        hi = fmax(hi, val[i]);
    }
    const gl_gate_info *gi = &gatekind_info[g];
    fprintf(f, "<details open><summary>%s, mean over blocks 1..%d</summary>\n", gi->title, L - 1);
    char label[96];
    snprintf(label, sizeof label, "mean %s =", gi->symbol);
    hr_legend(f, gi->symbol, lo, hi, 1);
    hr_probe_text(f, t, vocab, V, val, lo, hi, 1, label, max_chars);
    fputs("</details>\n", f);
    return 1;
}

/* A per-token router gate's view (TSA p): each character coloured by its
 * effective depth Dₜ = 1 + Σₗ (1 − pₗₜ) (depth.h) at the last evaluation.
 * Returns the views written. */
static int hr_depth_view(FILE *f, const gl_trace_data *t, gl_gate g, const uint8_t *vocab, int V, int max_chars,
                         float *val) {
    const int R = t->n_router;
    const char *sym = gatekind_info[g].symbol;
    const float *p = t->gate[g] + (size_t)(t->n_steps - 1) * R * t->n_probe;
    for (long i = 0; i < t->n_probe; i++) val[i] = (float)depth_token_soft(p, R, t->n_probe, i);
    fprintf(f, "<details open><summary>effective depth Dₜ = 1 + Σₗ (1 − %sₗₜ) from the %s, of %d blocks</summary>\n",
            sym, gatekind_info[g].title, R + 1);
    hr_legend(f, "depth (blocks)", 1, R + 1, 1);
    hr_probe_text(f, t, vocab, V, val, 1, R + 1, 1, "effective depth", max_chars);
    fputs("</details>\n", f);
    return 1;
}

/* The kind of probe-text view gate g gets, from the shape of its axes: per
 * token and KV head (head views), per router and token (effective depth), per
 * block and token (mean over blocks); none for a gate without a token axis
 * (the same colour on every character says nothing) or with coefficients. */
typedef enum { HR_VIEW_NONE = 0, HR_VIEW_HEADS, HR_VIEW_DEPTH, HR_VIEW_BLOCKS } hr_view;

static hr_view hr_view_of(gl_gate g) {
    const gl_gate_info *gi = &gatekind_info[g];
    if (gi->axis[1] != GAX_TOKEN) return HR_VIEW_NONE;
    if (gi->axis[2] == GAX_KV_HEAD) return HR_VIEW_HEADS;
    if (gi->axis[2] != GAX_NONE) return HR_VIEW_NONE;
    return gi->axis[0] == GAX_ROUTER ? HR_VIEW_DEPTH : HR_VIEW_BLOCKS;
}

/* The probe text of one run coloured by each per-token gate of the gate
 * table it traced (hr_view_of).  Returns the views written (0 when the run
 * has no trace or no such gate in it). */
static int hr_probe(FILE *f, const char *results, const char *run_id, const html_opts *o) {
    char dir[GL_PATH_MAX + 16], tpath[GL_PATH_MAX + 32], e2[1024];
    snprintf(dir, sizeof dir, "%s/runs/%s", results, run_id);
    snprintf(tpath, sizeof tpath, "%s/trace.h5", dir);
    if (access(tpath, R_OK) != 0) return 0;
    static gl_trace_data t;
    static gl_run run;
    memset(&t, 0, sizeof t);
    int views = 0, max_chars = o->max_chars > 0 ? o->max_chars : 1024;
    float *val = NULL;
    if (trace_read(tpath, &t, e2, sizeof e2) || t.n_steps < 1) goto done;
    int any = 0;
    for (int g = 0; g < GATE_COUNT; g++) any |= t.gate[g] && hr_view_of((gl_gate)g) != HR_VIEW_NONE;
    if (!any) goto done;
    if (run_open(&run, dir, results, 1, e2, sizeof e2)) {
        fprintf(f, "<p class=\"note\">probe text not shown: ");
        html_escape(f, e2);
        fputs("</p>\n", f);
        goto done;
    }
    val = malloc((size_t)t.n_probe * sizeof *val);
    if (val) {
        fprintf(f, "<h3>Probe text (%d characters, step %ld)</h3>\n", t.n_probe, t.step[t.n_steps - 1]);
        const uint8_t *vocab = run.st.vocab;
        const int V = ckpt_vocab_bytes(&run.st);
        for (int g = 0; g < GATE_COUNT; g++) {
            if (!t.gate[g]) continue;
            switch (hr_view_of((gl_gate)g)) {
            case HR_VIEW_HEADS: views += hr_head_views(f, &t, (gl_gate)g, vocab, V, o, max_chars, val); break;
            case HR_VIEW_DEPTH: views += hr_depth_view(f, &t, (gl_gate)g, vocab, V, max_chars, val); break;
            case HR_VIEW_BLOCKS: views += hr_block_token_view(f, &t, (gl_gate)g, vocab, V, max_chars, val); break;
            case HR_VIEW_NONE: break;
            }
        }
    }
    run_close(&run);
done:
    free(val);
    trace_data_free(&t);
    return views;
}

/* ---- the page ---- */

static const char hr_style[] =
    "body{font-family:'DejaVu Sans',sans-serif;margin:24px auto;max-width:1200px;color:#222}"
    "h1{font-size:22px}h2{font-size:18px;border-bottom:1px solid #ccc;margin-top:32px}h3{font-size:15px}"
    "table{border-collapse:collapse;margin:8px 0 16px;font-size:13px}"
    "th,td{border:1px solid #ccc;padding:3px 8px;text-align:right}th{background:#f0f0f0}"
    "caption{text-align:left;font-style:italic;padding:4px 0}"
    "figure{display:inline-block;margin:8px;vertical-align:top}figure img{width:560px;border:1px solid #ddd}"
    "figcaption{font-size:12px;color:#555}"
    ".probe{font-family:'DejaVu Sans Mono',monospace;font-size:15px;line-height:1.6;white-space:pre-wrap;"
    "border:1px solid #ccc;padding:10px;max-width:1100px}"
    ".probe span:hover{outline:1px solid #000}"
    ".legend .bar{display:inline-block;width:200px;height:12px;border:1px solid #999;vertical-align:middle}"
    ".note{color:#666;font-size:13px}.meta{color:#555;font-size:13px}summary{cursor:pointer;margin:6px 0}";

/* The analysis files of gate g that a run's section shows (analyze_trace.c
 * names them by the gate's key and the shape of its axes) and their titles:
 * per block and KV head and per token category for a head gate, per router
 * and the depth histogram for a router gate, the table itself otherwise.
 * Returns how many (at most 2). */
static int hr_gate_files(gl_gate g, char names[2][64], char titles[2][160]) {
    const gl_gate_info *gi = &gatekind_info[g];
    if (gi->axis[2] == GAX_KV_HEAD) {
        snprintf(names[0], 64, "%s_heads.tsv", gi->key);
        snprintf(titles[0], 160, "%s per block and KV head (gatelab analyze)", gi->symbol);
        snprintf(names[1], 64, "%s_categories.tsv", gi->key);
        snprintf(titles[1], 160, "%s per token category", gi->symbol);
        return 2;
    }
    if (gi->axis[0] == GAX_ROUTER) {
        snprintf(names[0], 64, "%s_routers.tsv", gi->key);
        snprintf(titles[0], 160, "%s per router", gi->title);
        snprintf(names[1], 64, "depth_hist.tsv");
        snprintf(titles[1], 160, "effective depth histogram (from the %s)", gi->title);
        return 2;
    }
    snprintf(names[0], 64, "%s.tsv", gi->key);
    snprintf(titles[0], 160, "%s (gatelab analyze)", gi->title);
    return 1;
}

/* A run's section: final metrics, its analysis files, its coloured probe text. */
static int hr_run_section(FILE *f, gl_db *db, const char *results, const char *run_id, const html_opts *o, char *err,
                          size_t errlen) {
    fputs("<h2 id=\"run-", f);
    html_escape(f, run_id);
    fputs("\">Run ", f);
    html_escape(f, run_id);
    fputs("</h2>\n<table><tr><th>split</th><th>metric</th><th>value</th><th>± se</th><th>step</th>"
          "<th>measured on</th></tr>\n", f);
    static const char *const splits[] = {"val", "train"};
    for (int s = 0; s < 2; s++) {
        gl_metric_latest *rows = NULL;
        int n = 0;
        if (db_metrics_latest(db, run_id, splits[s], &rows, &n, err, errlen)) return -1;
        for (int i = 0; i < n; i++) {
            char b[32];
            fprintf(f, "<tr><td>%s</td><td>", splits[s]);
            char label[METRIC_NAME_MAX + METRIC_PARAMS_MAX];
            metric_label(rows[i].key.name, rows[i].key.params, label, sizeof label);
            html_escape(f, label);
            char se[32], on[64];
            /* train rows (loss, lr, grad_norm, tokens/s …) are logged per step from the training batches
             * and carry no windows of a split: db_prov_str would print "?" for them */
            if (!rows[i].prov.split[0] || rows[i].prov.count <= 0)
                snprintf(on, sizeof on, "%s", s == 1 ? "training batches up to this step" : "not recorded");
            else db_prov_str(&rows[i].prov, on, sizeof on);
            fprintf(f, "</td><td>%s</td><td>%s</td><td>%ld</td><td>", report_num(b, sizeof b, rows[i].value),
                    isnan(rows[i].se) ? "" : report_num(se, sizeof se, rows[i].se), rows[i].step);
            html_escape(f, on); /* the registry's text: from anywhere (collect) */
            fputs("</td></tr>\n", f);
        }
        free(rows);
    }
    fputs("</table>\n", f);
    for (int g = 0; g < GATE_COUNT; g++) {
        char names[2][64], titles[2][160];
        for (int k = 0, n = hr_gate_files((gl_gate)g, names, titles); k < n; k++) {
            char p[GL_PATH_MAX + 96];
            snprintf(p, sizeof p, "%s/runs/%s/analysis/%s", results, run_id, names[k]);
            hr_table_tsv(f, p, titles[k], 40);
        }
    }
    return hr_probe(f, results, run_id, o);
}

/* Does figure name belong on run_id's page?  Its own figures, and those of the whole experiment that
 * concern it: the loss curves; the Pareto figure when it routes depth; a gate's depth_<key> when it
 * has that gate (mc, its model config; NULL when unknown: every experiment figure). */
static int hr_figure_of_run(const char *name, const char *run_id, const gl_model_config *mc) {
    static const char *const common[] = {"loss_step", "loss_time"};
    for (size_t i = 0; i < sizeof common / sizeof common[0]; i++)
        if (!strcmp(name, common[i])) return 1;
    if (!strcmp(name, "pareto")) return !mc || mc->depth_routing != DR_NONE;
    for (int g = 0; g < GATE_COUNT; g++) /* depth_<key>: a gate's mean by block per group of seeds (figures.c) */
        if (!strncmp(name, "depth_", 6) && !strcmp(name + 6, gatekind_info[g].key)) return !mc || gatekind_has(mc, (gl_gate)g);
    size_t n = strlen(name), r = strlen(run_id);
    return n > r + 1 && name[n - r - 1] == '_' && !strcmp(name + n - r, run_id);
}

static void hr_head(FILE *f, const html_target *t) {
    char when[64];
    time_t now = time(NULL);
    strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", gmtime(&now));
    fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>gatelab report: ");
    html_escape(f, t->run_id ? t->run_id : t->experiment);
    fprintf(f, "</title><style>%s</style></head><body>\n<h1>gatelab report: %s ", hr_style,
            t->run_id ? "run" : "experiment");
    html_escape(f, t->run_id ? t->run_id : t->experiment);
    fputs("</h1>\n<p class=\"meta\">experiment ", f);
    html_escape(f, t->experiment);
    fputs(" · registry ", f);
    html_escape(f, t->db_path ? t->db_path : "");
    fprintf(f, " · made %s by <code>gatelab report --html</code>; every number comes from the registry and the "
               "runs' traces.</p>\n", when);
}

int html_report(gl_db *db, const html_target *t, const html_opts *o, const char *out_path, int *n_figures, int *n_texts,
                char *err, size_t errlen) {
    static figures_summary fs;
    static tables_summary ts;
    char fig_dir[GL_PATH_MAX + 16], tab_dir[GL_PATH_MAX + 16], dir[GL_PATH_MAX + 16];
    fileio_out out = {0};
    FILE *f = NULL;
    runset rs = {0};
    const gl_set_filter finished = {.status = "FINISHED", .experiment = t->experiment};
    int rc = -1, nfig = 0, ntext = 0;
    figures_dir(t->results, t->experiment, fig_dir, sizeof fig_dir);
    snprintf(tab_dir, sizeof tab_dir, "%s/tables", t->results);
    memset(&fs, 0, sizeof fs);
    memset(&ts, 0, sizeof ts);
    if (figures_make_all(db, t->experiment, t->results, fig_dir, &fs, err, errlen)) goto cleanup;
    if (tables_write_all(db, t->experiment, tab_dir, &ts, err, errlen)) goto cleanup;
    if (runset_load_set(db, &finished, &rs, err, errlen)) goto cleanup; /* the run loader's rows */
    snprintf(dir, sizeof dir, "%s", out_path);
    char *slash = strrchr(dir, '/');
    if (slash && slash != dir) {
        *slash = 0;
        if (fileio_mkdir_p(dir, err, errlen)) goto cleanup;
    }
    if (fileio_begin_own(&out, out_path, "HTML report", fileio_is_html, err, errlen)) goto cleanup;
    f = out.f;
    hr_head(f, t);
    fputs("<h2>Figures</h2>\n", f);
    /* a run's page: its model config decides which experiment figures concern it */
    static gl_manifest mf;
    const gl_model_config *mc = NULL;
    if (t->run_id) {
        char *ini = NULL, why[512];
        if (db_run_config(db, t->run_id, &ini, NULL, why, sizeof why) == 1 && ini &&
            !manifest_load_text(&mf, ini, t->run_id, why, sizeof why))
            mc = &mf.model;
        free(ini);
    }
    for (int i = 0; i < fs.n_made; i++) {
        if (t->run_id && !hr_figure_of_run(fs.made[i], t->run_id, mc)) continue;
        char p[GL_PATH_MAX + 160];
        snprintf(p, sizeof p, "%s/%s.svg", fig_dir, fs.made[i]);
        nfig += hr_figure(f, p, fs.made[i]);
    }
    for (int i = 0; i < fs.n_skipped; i++) {
        fputs("<p class=\"note\">skipped ", f);
        html_escape(f, fs.skipped[i]);
        fputs("</p>\n", f);
    }
    fputs("<h2>Tables</h2>\n", f);
    for (int i = 0; i < ts.n_written; i++) {
        char p[GL_PATH_MAX + 96];
        snprintf(p, sizeof p, "%s/%s.md", tab_dir, ts.written[i]);
        hr_table_md(f, p, ts.written[i]);
    }
    for (int i = 0; i < rs.n; i++) {
        if (t->run_id && strcmp(rs.r[i].t.run_id, t->run_id)) continue;
        int v = hr_run_section(f, db, t->results, rs.r[i].t.run_id, o, err, errlen);
        if (v < 0) goto cleanup;
        ntext += v;
    }
    fputs("</body></html>\n", f);
    f = NULL;
    if (fileio_commit(&out, "HTML report", err, errlen)) goto cleanup;
    if (n_figures) *n_figures = nfig;
    if (n_texts) *n_texts = ntext;
    rc = 0;
cleanup:
    fileio_abort(&out);
    runset_free(&rs);
    return rc;
}
