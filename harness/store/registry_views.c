/*
 * registry_views.c — the registry's views (run_variant, run_headline): the rules every view of runs
 * shares (the variant label; the headline, else the last periodic evaluation), once, as SQL over the
 * registry's own tables, so gatelab, the Python package and a sqlite3 shell read one definition.
 *
 * The text is scripts/python/gatelab/views.sql, embedded at build time (db_views_sql; the Makefile
 * runs harness/store/embed_sql.sh).  A registry opened for writing keeps the views in its schema,
 * replaced when its stored text differs from this build's; one opened read-only that lacks them or
 * holds another version (a registry older than the views, a snapshot written by another gatelab)
 * gets them as TEMP views of the connection, which shadow the stored ones: every read sees this
 * build's rules, and nothing is written to a file opened read-only.
 *
 * What it does not do: read rows (registry_runs.c, analysis/runs/runset.c), or change a table.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "registry_sql.h"

extern const char db_views_sql[]; /* build/gen/registry_views.c */

typedef struct {
    char *text; /* the stored text of a view: "" none */
} db_view_sql_out;

static int db_row_view_sql(sqlite3_stmt *st, void *ctx, char *err, size_t errlen) {
    (void)err, (void)errlen;
    const unsigned char *t = sqlite3_column_text(st, 0);
    ((db_view_sql_out *)ctx)->text = strdup(t ? (const char *)t : "");
    return 0;
}

/* One statement of db_views_sql, [s, e): its name ("CREATE VIEW name AS") into name. */
static int db_view_name(const char *s, const char *e, char *name, size_t n) {
    static const char head[] = "CREATE VIEW ";
    if ((size_t)(e - s) <= sizeof head || strncmp(s, head, sizeof head - 1)) return -1;
    const char *b = s + sizeof head - 1, *q = b;
    while (q < e && *q != ' ') q++;
    if (q == b || (size_t)(q - b) >= n) return -1;
    snprintf(name, n, "%.*s", (int)(q - b), b);
    return 0;
}

int db_views_ensure(gl_db *db, int writable, char *err, size_t errlen) {
    int rc = -1, began = 0;
    char *sql = NULL;
    const char *p = db_views_sql;
    while (*p) {
        /* the next statement: skip blank and comment lines, then up to a line holding only ';' (or the end) */
        while (*p == '\n' || *p == ' ' || !strncmp(p, "--", 2)) {
            if (*p == '-') p += strcspn(p, "\n");
            if (*p) p++;
        }
        if (!*p) break;
        const char *end = strstr(p, "\n;\n"), *next;
        if (!end) end = p + strlen(p), next = end;
        else next = end + 3;
        const char *e = end;
        while (e > p && (e[-1] == '\n' || e[-1] == ' ')) e--;
        char name[64];
        if (db_view_name(p, e, name, sizeof name)) {
            snprintf(err, errlen, "%s: the registry's views (views.sql) hold a statement that is not \"CREATE VIEW "
                     "name AS ...\": rebuild gatelab", db->path);
            goto cleanup;
        }
        db_view_sql_out have = {NULL};
        if (db_query_one(db, "cannot read the registry's views",
                         "SELECT sql FROM main.sqlite_master WHERE type = 'view' AND name = ?1", db_row_view_sql, &have,
                         err, errlen, "t", name) < 0)
            goto cleanup;
        int same = have.text && strlen(have.text) == (size_t)(e - p) && !strncmp(have.text, p, (size_t)(e - p));
        free(have.text);
        if (!same) {
            size_t len = (size_t)(e - p);
            free(sql);
            if (!(sql = malloc(len + 128))) {
                snprintf(err, errlen, "%s: out of memory creating the registry's views", db->path);
                goto cleanup;
            }
            if (writable) {
                if (!began && db_begin(db, err, errlen)) goto cleanup;
                began = 1;
                snprintf(sql, len + 128, "DROP VIEW IF EXISTS main.%s; %.*s", name, (int)len, p);
            } else { /* "CREATE VIEW x" -> "CREATE TEMP VIEW x": the connection's own, nothing written */
                snprintf(sql, len + 128, "DROP VIEW IF EXISTS temp.%s; CREATE TEMP VIEW %.*s", name,
                         (int)(len - strlen("CREATE VIEW ")), p + strlen("CREATE VIEW "));
            }
            if (db_exec(db, sql, "cannot create the registry's views", err, errlen)) goto cleanup;
        }
        p = next;
    }
    if (began && db_commit(db, err, errlen)) goto cleanup;
    began = 0;
    rc = 0;
cleanup:
    if (began) db_rollback(db);
    free(sql);
    return rc;
}
