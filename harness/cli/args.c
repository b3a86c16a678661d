/*
 * args.c — the command line of every subcommand (contract in args.h).
 *
 * getopt_long (glibc) reads the flags; this file builds its tables from the
 * command's args_opt list, so the --help text and what is accepted come from
 * one place, and turns getopt's terse '?' into one line that names the flag
 * and the command's --help.  The number syntax and ranges live in
 * store/parse.c, shared with the manifest; here the command and the flag are
 * put around the reason, so that `--windows abc` says "gatelab eval:
 * --windows 'abc': not an integer" instead of meaning 0.
 *
 * Not here: what a flag means, its default or how flags combine (the cmd_*
 * files), and any output besides usage errors and --help.
 */
#include "args.h"

#include <assert.h>
#include <ctype.h>
#include <libgen.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "store/editdist.h"
#include "store/parse.h"
#include "store/rundir.h"

void args_begin(args_parser *p, const args_spec *spec, int argc, char **argv) {
    memset(p, 0, sizeof *p);
    p->spec = spec;
    p->argc = argc;
    p->argv = argv;
    /* "-": positionals come back in order as key 1; ":": a missing value is ':' not '?' */
    size_t ns = 0;
    p->shorts[ns++] = '-';
    p->shorts[ns++] = ':';
    p->shorts[ns++] = 'h';
    int n = 0;
    for (const args_opt *o = spec->opts; o && o->name; o++, n++) {
        assert(n < ARGS_MAX_OPTS && "a command's flag table is longer than ARGS_MAX_OPTS");
        assert(o->key != 'h' && o->key != 1 && o->key != ':' && o->key != '?');
        /* an arg starting with '=' ("=FORM") is optional: --name alone, or --name=VALUE */
        const int opt_arg = o->arg && o->arg[0] == '=';
        p->lo[n] = (struct option){o->name, opt_arg ? optional_argument : o->arg ? required_argument : no_argument, NULL,
                                   o->key};
        if (o->key > 0 && o->key < 128) {
            p->shorts[ns++] = (char)o->key;
            if (o->arg) p->shorts[ns++] = ':';
            if (opt_arg) p->shorts[ns++] = ':';
        }
    }
    p->lo[n++] = (struct option){"help", no_argument, NULL, 'h'};
    p->lo[n] = (struct option){0};
    p->shorts[ns] = '\0';
    optind = 0; /* glibc: 0 re-initialises getopt completely (a command may run another in-process) */
    opterr = 0;
}

/* The option at argv[i] as typed, without "=value", into p->flag. */
static void args_name_of(args_parser *p, int i) {
    const char *w = i > 0 && i < p->argc ? p->argv[i] : "?";
    size_t len = strcspn(w, "=");
    snprintf(p->flag, sizeof p->flag, "%.*s", (int)(len < sizeof p->flag ? len : sizeof p->flag - 1), w);
}

const char *args_suggest(const char *typed, const char *const *names, int n) {
    const char *best = NULL;
    int bd = 3, ties = 0, len = (int)strlen(typed);
    for (int i = 0; i < n; i++) {
        int d = editdist(typed, names[i], 1);
        if (d < bd) bd = d, best = names[i], ties = 0;
        else if (d == bd && best && strcmp(best, names[i])) ties++;
    }
    /* "db" is 2 edits from "no"; a suggestion must keep more than half the word */
    return best && !ties && 2 * bd < len ? best : NULL;
}

/* The long flag closest to the one typed ("--experment": "experiment"), or NULL. */
static const char *args_near_flag(const args_parser *p, const char *typed) {
    const char *names[ARGS_MAX_OPTS + 2] = {0};
    int n = 0;
    for (const struct option *o = p->lo; o->name; o++) names[n++] = o->name;
    return args_suggest(typed, names, n);
}

static int args_bad(args_parser *p, const char *what) {
    fprintf(stderr, "gatelab %s: %s; see gatelab %s --help\n", p->spec->cmd, what, p->spec->cmd);
    return ARGS_BAD;
}

int args_next(args_parser *p) {
    if (p->rest) { /* after "--": the rest are positional */
        if (p->rest >= p->argc) return ARGS_END;
        p->val = p->argv[p->rest++];
        p->flag[0] = '\0';
        return ARGS_POS;
    }
    /* no permutation (the leading '-'), so the word getopt reads next is argv[at] */
    int li = -1, at = optind ? optind : 1;
    int k = getopt_long(p->argc, p->argv, p->shorts, p->lo, &li);
    char msg[160];
    p->val = optarg;
    if (k == -1) {
        if (optind < p->argc) { /* stopped at "--" */
            p->rest = optind;
            return args_next(p);
        }
        return ARGS_END;
    }
    if (k == 1) {
        p->flag[0] = '\0';
        return ARGS_POS;
    }
    args_name_of(p, at);
    if (k == ':') return snprintf(msg, sizeof msg, "%s needs a value", p->flag), args_bad(p, msg);
    if (k == '?') {
        int switch_with_value = 0; /* "--sparse=1": getopt_long says '?' for a switch given a value */
        for (const struct option *o = p->lo; o->name && p->flag[1] == '-'; o++)
            switch_with_value |= !strcmp(o->name, p->flag + 2) && o->has_arg == no_argument;
        const char *near = p->flag[0] == '-' && p->flag[1] == '-' ? args_near_flag(p, p->flag + 2) : NULL;
        if (switch_with_value) snprintf(msg, sizeof msg, "%s takes no value", p->flag);
        else if (optopt && optopt < 128 && p->flag[1] != '-') snprintf(msg, sizeof msg, "unknown option '-%c'", optopt);
        else if (near) snprintf(msg, sizeof msg, "unknown option '%s' (did you mean --%s?)", p->flag, near);
        else snprintf(msg, sizeof msg, "unknown option '%s'", p->flag);
        return args_bad(p, msg);
    }
    /* getopt_long also takes a unique prefix ("--win"); only the full name is accepted */
    if (li >= 0 && strcmp(p->flag + 2, p->lo[li].name)) {
        snprintf(msg, sizeof msg, "unknown option '%s' (did you mean --%s?)", p->flag, p->lo[li].name);
        return args_bad(p, msg);
    }
    if (li < 0) snprintf(p->flag, sizeof p->flag, "-%c", k);
    if (k == 'h') {
        args_print_help(p->spec, stdout);
        return ARGS_HELP;
    }
    return k;
}

int args_exit_code(int k) { return k == ARGS_HELP ? 0 : 2; }

void args_print_help(const args_spec *s, FILE *f) {
    fprintf(f, "usage: gatelab %s %s\n", s->cmd, s->synopsis ? s->synopsis : "");
    if (s->about) fprintf(f, "%s\n", s->about);
    fprintf(f, "options:\n");
    for (const args_opt *o = s->opts; o && o->name; o++) {
        char left[64], val[32] = "";
        if (o->arg) snprintf(val, sizeof val, o->arg[0] == '=' ? "[%s]" : " %s", o->arg);
        if (o->key > 0 && o->key < 128) snprintf(left, sizeof left, "-%c, --%s%s", o->key, o->name, val);
        else snprintf(left, sizeof left, "    --%s%s", o->name, val);
        if (strlen(left) > 26) fprintf(f, "  %s\n  %26s  %s\n", left, "", o->help);
        else fprintf(f, "  %-26s  %s\n", left, o->help);
    }
    fprintf(f, "  %-26s  %s\n", "-h, --help", "this help");
}

/* 1 when the synopsis s names --name as a whole word (not a prefix of a longer flag). */
static int args_synopsis_names(const char *s, const char *name) {
    size_t n = strlen(name);
    for (const char *at = s; (at = strstr(at, "--")); at += 2)
        if (!strncmp(at + 2, name, n) && !(isalnum((unsigned char)at[2 + n]) || at[2 + n] == '-')) return 1;
    return 0;
}

void args_print_line(const args_spec *s, FILE *f) {
    const char *syn = s->synopsis ? s->synopsis : "", *opt = strstr(syn, "[options]");
    fprintf(f, "  gatelab %s", s->cmd);
    if (*syn) fprintf(f, " %.*s", (int)(opt ? opt - syn : (ptrdiff_t)strlen(syn)), syn);
    int printed = !opt && *syn; /* a space before the next flag */
    for (const args_opt *o = s->opts; o && o->name; o++) {
        if (args_synopsis_names(syn, o->name)) continue;
        fprintf(f, "%s[", printed++ ? " " : "");
        if (o->key > 0 && o->key < 128) fprintf(f, "-%c|", o->key);
        if (o->arg && o->arg[0] == '=') fprintf(f, "--%s[%s]]", o->name, o->arg);
        else fprintf(f, "--%s%s%s]", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
    }
    if (opt) fprintf(f, "%s", opt + strlen("[options]"));
    fprintf(f, "\n");
}

int args_usage_error(const args_spec *spec, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "gatelab %s: %s; see gatelab %s --help\n", spec->cmd, msg, spec->cmd);
    return 2;
}

static int args_fail(const char *cmd, const char *flag, const char *value, const char *why) {
    fprintf(stderr, "gatelab %s: %s '%s': %s\n", cmd, flag, value, why);
    return -1;
}

int args_long(const char *cmd, const char *flag, const char *value, long lo, long hi, long *out) {
    char why[160];
    return parse_long(value, lo, hi, out, why, sizeof why) ? args_fail(cmd, flag, value, why) : 0;
}

int args_int(const char *cmd, const char *flag, const char *value, int lo, int hi, int *out) {
    char why[160];
    return parse_int(value, lo, hi, out, why, sizeof why) ? args_fail(cmd, flag, value, why) : 0;
}

int args_u64(const char *cmd, const char *flag, const char *value, uint64_t *out) {
    char why[160];
    return parse_u64(value, out, why, sizeof why) ? args_fail(cmd, flag, value, why) : 0;
}

int args_double(const char *cmd, const char *flag, const char *value, double lo, double hi, double *out) {
    char why[160];
    return parse_double(value, lo, hi, out, why, sizeof why) ? args_fail(cmd, flag, value, why) : 0;
}

int args_get_long(const args_parser *p, long lo, long hi, long *out) {
    return args_long(p->spec->cmd, p->flag, p->val, lo, hi, out);
}

int args_get_int(const args_parser *p, int lo, int hi, int *out) {
    return args_int(p->spec->cmd, p->flag, p->val, lo, hi, out);
}

int args_get_u64(const args_parser *p, uint64_t *out) { return args_u64(p->spec->cmd, p->flag, p->val, out); }

int args_get_double(const args_parser *p, double lo, double hi, double *out) {
    return args_double(p->spec->cmd, p->flag, p->val, lo, hi, out);
}

int args_get_choice(const args_parser *p, const char *choices, int *index) {
    char list[256] = "expected ", names[16][32];
    const char *ptr[16];
    size_t n = strlen(list);
    int i = 0;
    for (const char *c = choices; *c; i++) {
        size_t len = strcspn(c, ",");
        const char *next = c + len + (c[len] == ',');
        assert(i < 16 && len < sizeof names[0]);
        /* the choices are distinct in lower case, so any case names one of them */
        if (strlen(p->val) == len && !strncasecmp(c, p->val, len)) {
            *index = i;
            return 0;
        }
        snprintf(names[i], sizeof names[i], "%.*s", (int)len, c);
        ptr[i] = names[i];
        if (n < sizeof list)
            n += (size_t)snprintf(list + n, sizeof list - n, "%s%.*s", i == 0 ? "" : *next ? ", " : " or ", (int)len, c);
        c = next;
    }
    const char *near = args_suggest(p->val, ptr, i);
    if (near && n < sizeof list) snprintf(list + n, sizeof list - n, " (did you mean %s?)", near);
    return args_fail(p->spec->cmd, p->flag, p->val, list);
}

void args_db_path(const char *db, const char *results, char *out, size_t n) {
    if (db && *db) snprintf(out, n, "%s", db);
    else snprintf(out, n, "%s/gatelab.db", run_results_dir(results));
}

void args_run_id(const char *run_dir, char *out, size_t n) {
    char tmp[GL_PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s", run_dir);
    snprintf(out, n, "%s", basename(tmp));
}

int args_int_list(const char *flag, const char *list, int lo, int hi, char *err, size_t errlen) {
    for (const char *s = list;;) {
        size_t len = strcspn(s, ",");
        char item[32], why[160];
        int v;
        snprintf(item, sizeof item, "%.*s", (int)(len < sizeof item ? len : sizeof item - 1), s);
        if (len >= sizeof item || parse_int(item, lo, hi, &v, why, sizeof why)) {
            snprintf(err, errlen, "%s '%s': item '%s': %s", flag, list, item, len >= sizeof item ? "too long" : why);
            return -1;
        }
        if (!s[len]) return 0;
        s += len + 1;
    }
}

/* One --heads item, "2:0" or "L2H0" (either case), as block and KV head.  Returns 0 or -1 (why). */
static int args_head_item(const char *item, int *block, int *head, char *why, size_t whylen) {
    char a[32], b[32];
    const char *sep;
    if ((item[0] == 'L' || item[0] == 'l') && (sep = strpbrk(item, "Hh"))) {
        snprintf(a, sizeof a, "%.*s", (int)(sep - item - 1 < 31 ? sep - item - 1 : 31), item + 1);
        snprintf(b, sizeof b, "%s", sep + 1);
    } else if ((sep = strchr(item, ':'))) {
        snprintf(a, sizeof a, "%.*s", (int)(sep - item < 31 ? sep - item : 31), item);
        snprintf(b, sizeof b, "%s", sep + 1);
    } else {
        snprintf(why, whylen, "expected BLOCK:KV_HEAD (2:0) or TransformerLens's L<block>H<head> (L2H0)");
        return -1;
    }
    char w[160];
    if (parse_int(a, 0, 1 << 20, block, w, sizeof w) || parse_int(b, 0, 1 << 20, head, w, sizeof w)) {
        snprintf(why, whylen, "%s; expected BLOCK:KV_HEAD (2:0) or L<block>H<head> (L2H0)", w);
        return -1;
    }
    return 0;
}

int args_heads(const char *flag, const char *heads, char *out, size_t n, char *err, size_t errlen) {
    size_t used = 0;
    out[0] = '\0';
    for (const char *s = heads;;) {
        size_t len = strcspn(s, ",");
        char item[64], why[200];
        int block, head;
        snprintf(item, sizeof item, "%.*s", (int)(len < sizeof item ? len : sizeof item - 1), s);
        if (len >= sizeof item || args_head_item(item, &block, &head, why, sizeof why)) {
            snprintf(err, errlen, "%s '%s': item '%s': %s", flag, heads, item, len >= sizeof item ? "too long" : why);
            return -1;
        }
        int w = snprintf(out + used, n - used, "%s%d:%d", used ? "," : "", block, head);
        if (w < 0 || (size_t)w >= n - used) {
            snprintf(err, errlen, "%s '%.60s…': too many gates", flag, heads);
            return -1;
        }
        used += (size_t)w;
        if (!s[len]) return 0;
        s += len + 1;
    }
}
