/*
 * tui_views.c -- the rows and texts of `lcm tui`'s screens, read through the engine's
 * read APIs (see tui_views.h). No SQL and no search logic of its own: listing is the
 * catalog's, hits are recall's, rows and the DAG are the store's walks.
 */
#include "tui_views.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "cliview.h"
#include "ledger.h"
#include "files.h"
#include "recall.h"
#include "redact.h"
#include "store.h"
#include "util.h"

/* Rows fetched per page of messages; more come when the cursor reaches the end. */
#define TUI_SCAN_PAGE 200
/* A list line carries at most this many characters of a text (the screen clips it). */
#define TUI_SNIP_CHARS 300
/* The widest bar of the depth histogram. */
#define TUI_BAR_COLS 40

void tui_views_free(tui_view *v)
{
    if (!v) return;
    for (size_t i = 0; i < v->n; i++) LC_FREE(v->rows[i].line, v->rows[i].session, v->rows[i].entry_id);
    LC_FREE(v->rows, v->title, v->head, v->text, v->wrap_off, v->wrap_len, v->session, v->entry_id,
            v->query);
    memset(v, 0, sizeof *v);
}

/* Takes `line` (freed on failure). */
static int tui_views_add(tui_view *v, tui_row_kind kind, char *line, const char *session, const char *entry_id,
                         int64_t summary_id)
{
    if (!line) return LC_NOMEM;
    tui_row *nr = lc_grow(v->rows, &v->cap, v->n + 1, sizeof *nr);
    if (!nr) {
        free(line);
        return LC_NOMEM;
    }
    v->rows = nr;
    tui_row *r = &v->rows[v->n];
    memset(r, 0, sizeof *r);
    r->kind = kind;
    r->line = line;
    r->summary_id = summary_id;
    if ((session && !(r->session = lc_strdup(session))) || (entry_id && !(r->entry_id = lc_strdup(entry_id)))) {
        free(r->line);
        free(r->session);
        return LC_NOMEM;
    }
    v->n++;
    return LC_OK;
}

/* The first TUI_SNIP_CHARS characters of a text on one line: runs of whitespace (newlines
 * included) become one space, secrets masked. malloc'd. */
static char *tui_views_snip(const char *text, size_t len)
{
    if (!text) return lc_strdup("");
    size_t cut = files_utf8_prefix(text, len, TUI_SNIP_CHARS);
    char *flat = malloc(cut + 1);
    if (!flat) return NULL;
    size_t o = 0;
    int space = 0;
    for (size_t i = 0; i < cut; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
            space = o > 0;
            continue;
        }
        if (space) flat[o++] = ' ';
        space = 0;
        flat[o++] = (char)c;
    }
    flat[o] = '\0';
    char *masked = redact_text(flat, o, 1, NULL);
    free(flat);
    return masked;
}

static void tui_views_bytes(char *buf, size_t n, double b)
{
    if (b >= 1024.0 * 1024.0 * 1024.0) snprintf(buf, n, "%.1fG", b / (1024.0 * 1024.0 * 1024.0));
    else if (b >= 1024.0 * 1024.0) snprintf(buf, n, "%.1fM", b / (1024.0 * 1024.0));
    else if (b >= 1024.0) snprintf(buf, n, "%.1fk", b / 1024.0);
    else snprintf(buf, n, "%.0f", b);
}

/* A session's store, read-only, of the schema this build reads. */
static int tui_views_open(const char *home, const char *session, store **s, char **err)
{
    int schema = -1;
    int rc = catalog_open(home, session, CATALOG_READ, s, &schema, err);
    if (rc == LC_NOTFOUND) return lc_errf(err, rc, "no store for session %s under %s/lcm", session, home);
    if (rc != LC_OK) return rc;
    if (!STORE_SCHEMA_ANSWERS(schema)) {
        store_close(*s);
        *s = NULL;
        return lc_errf(err, LC_INVALID,
                       "session %s is an older store (schema %d, this build reads %d): "
                       "lcm migrate --apply upgrades it",
                       session, schema, STORE_SCHEMA_VERSION);
    }
    return LC_OK;
}

/* ---- sessions ----------------------------------------------------------------------- */

int tui_views_sessions(const char *home, tui_view *out, char **err)
{
    catalog_filter f = {.counts = 1, .order = CATALOG_NEWEST_FIRST};
    catalog_list l = {0};
    int rc = catalog_list_stores(home, &f, &l, err);
    if (rc != LC_OK) return rc;
    out->kind = TUI_VIEW_LIST;
    out->title = lc_asprintf("%zu session%s under %s/lcm, newest first", l.n, l.n == 1 ? "" : "s", home);
    /* Fits 80 columns: the short id (lcm takes it back), sizes whole, the folder by its end
     * (20 columns at most), then the title (the first request) in what is left of the screen. */
    out->head = lc_asprintf("%-9s %-16s %5s %4s %6s  %s", "session", "created (UTC)", "msgs", "sums", "size",
                            "cwd  first request");
    if (!out->title || !out->head) rc = LC_NOMEM;
    for (size_t i = 0; i < l.n && rc == LC_OK; i++) {
        const catalog_entry *e = &l.v[i];
        char size[16], *line, *id = cliview_short_id(&l, i), *title = NULL, *cwd = NULL;
        tui_views_bytes(size, sizeof size, (double)e->bytes);
        char *date = lc_utc_format(e->created, "%Y-%m-%d %H:%M", "?");
        const char *c = e->cwd ? e->cwd : "?";
        size_t cl = strlen(c);
        cwd = cl > 20 ? lc_asprintf("\xE2\x80\xA6%s", c + lc_utf8_back(c, cl - 19)) : lc_strdup(c);
        if (e->damaged) line = lc_asprintf("%-9s damaged: %s", id ? id : e->name, e->damaged);
        else {
            title = cliview_title(e, 200);
            line = lc_asprintf("%-9s %-16s %5lld %4lld %6s  %s  %s", id ? id : e->name, date ? date : "?",
                               (long long)e->messages, (long long)e->summaries, size, cwd ? cwd : c,
                               title ? title : "");
        }
        free(date);
        free(id);
        free(title);
        free(cwd);
        rc = tui_views_add(out, e->damaged ? TUI_ROW_INFO : TUI_ROW_SESSION, line, e->name, NULL, 0);
    }
    if (rc == LC_OK && l.n == 0)
        rc = tui_views_add(out, TUI_ROW_INFO, lc_asprintf("no stores yet (lcm import FILE brings a transcript in)"),
                           NULL, NULL, 0);
    catalog_list_free(&l);
    return rc == LC_NOMEM ? lc_errf(err, rc, "lcm tui: out of memory") : rc;
}

/* ---- message lists: a session's rows, a summary's originals ------------------------- */

typedef struct tui_views_scan {
    tui_view *v;
    size_t left;
    int rc;
} tui_views_scan;

static int tui_views_scan_visit(void *ud, const store_search_row *r, char **err)
{
    tui_views_scan *c = ud;
    (void)err;
    if (c->left == 0) {
        c->v->more = 1;
        return STORE_VISIT_STOP;
    }
    char *snip = tui_views_snip(r->text, r->text_len);
    char *line = snip ? lc_asprintf("%6lld %-10s %s%s", (long long)r->ordinal, r->role ? r->role : "?",
                                    r->removed ? "[removed] " : "", snip)
                      : NULL;
    free(snip);
    if ((c->rc = tui_views_add(c->v, TUI_ROW_MESSAGE, line, c->v->session, r->entry_id, 0)) != LC_OK)
        return STORE_VISIT_STOP;
    c->v->after_ordinal = r->ordinal;
    c->v->after_id = r->id;
    c->left--;
    return LC_OK;
}

/* The next TUI_SCAN_PAGE rows after the view's position. */
static int tui_views_scan_page(const char *home, tui_view *v, char **err)
{
    store *s = NULL;
    int rc = tui_views_open(home, v->session, &s, err);
    if (rc != LC_OK) return rc;
    store_search_scope sc = {.summary_id = v->summary_id,
                             .include_removed = 1,
                             .after_ordinal = v->after_ordinal,
                             .after_id = v->after_id};
    tui_views_scan c = {v, TUI_SCAN_PAGE, LC_OK};
    v->more = 0;
    rc = store_search_scan(s, &sc, tui_views_scan_visit, &c, NULL, err);
    if (rc == LC_OK) rc = c.rc;
    store_close(s);
    return rc == LC_NOMEM ? lc_errf(err, rc, "lcm tui: out of memory") : rc;
}

static int tui_views_scan_begin(const char *home, const char *session, int64_t summary_id, char *title, tui_view *out,
                                char **err)
{
    out->kind = TUI_VIEW_LIST;
    out->title = title;
    out->source = TUI_SRC_SCAN;
    out->summary_id = summary_id;
    out->head = lc_asprintf("%6s %-10s %s", "#", "role", "text");
    if (!title || !out->head || !(out->session = lc_strdup(session)))
        return lc_errf(err, LC_NOMEM, "lcm tui: out of memory");
    int rc = tui_views_scan_page(home, out, err);
    if (rc == LC_OK && out->n == 0) rc = tui_views_add(out, TUI_ROW_INFO, lc_strdup("no messages"), NULL, NULL, 0);
    return rc;
}

int tui_views_messages(const char *home, const char *session, tui_view *out, char **err)
{
    return tui_views_scan_begin(home, session, 0, lc_asprintf("session %s: messages, oldest first", session), out,
                                err);
}

int tui_views_originals(const char *home, const char *session, int64_t id, tui_view *out, char **err)
{
    return tui_views_scan_begin(home, session, id,
                                lc_asprintf("summary #%lld: the verbatim originals", (long long)id), out, err);
}

/* ---- search --------------------------------------------------------------------------- */

/* The store (file name) of a cross-session hit's meta session id. */
static const char *tui_views_store_of(const catalog_list *l, const char *session_id)
{
    for (size_t i = 0; i < l->n; i++)
        if (l->v[i].session_id && !strcmp(l->v[i].session_id, session_id)) return l->v[i].name;
    return session_id;
}

static int tui_views_search_page(const char *home, tui_view *v, char **err)
{
    recall_grep_opts o = {.query = v->pattern ? NULL : v->query,
                          .pattern = v->pattern ? v->query : NULL,
                          .offset = v->offset,
                          .redact = 1};
    recall_result r = {0};
    catalog_list l = {0};
    store *s = NULL;
    int rc;
    if (v->session) {
        if ((rc = tui_views_open(home, v->session, &s, err)) != LC_OK) return rc;
        rc = recall_grep(s, &o, &r, err);
    } else {
        rc = catalog_list_stores(home, NULL, &l, err);
        if (rc == LC_OK) rc = recall_grep_sessions(home, NULL, NULL, RECALL_SCOPE_ALL_SESSIONS, &o, &r, err);
    }
    for (size_t i = 0; i < r.n && rc == LC_OK; i++) {
        const recall_hit *h = &r.hits[i];
        const char *where = v->session ? v->session : tui_views_store_of(&l, h->session_id);
        char *line = v->session ? lc_asprintf("%6lld %-10s %s%s", (long long)h->ordinal, h->role,
                                              h->removed ? "[removed] " : "", h->snippet)
                                : lc_asprintf("%-10s %-12.12s %-10s %s%s", h->session_date, h->session_id, h->role,
                                              h->removed ? "[removed] " : "", h->snippet);
        rc = tui_views_add(v, TUI_ROW_MESSAGE, line, where, h->entry_id, 0);
    }
    if (rc == LC_OK) {
        v->offset += r.n;
        v->more = r.more;
        if (!v->title) {
            const char *scope = v->session ? v->session : "all sessions";
            /* recall's bounds, said where the count is (its text names them the same way) */
            char bound[96] = "";
            if (r.timed_out || r.stop_time) snprintf(bound, sizeof bound, " (stopped at the time bound)");
            else if (r.stop_stores) snprintf(bound, sizeof bound, " (the newest %zu stores)", r.stores_searched);
            v->title = r.total >= 0 ? lc_asprintf("%s \"%s\" in %s: %lld hit%s%s", v->pattern ? "pattern" : "query",
                                                  v->query, scope, (long long)r.total, r.total == 1 ? "" : "s", bound)
                                    : lc_asprintf("pattern \"%s\" in %s%s", v->query, scope, bound);
            if (!v->title) rc = LC_NOMEM;
        }
    }
    recall_result_free(&r);
    catalog_list_free(&l);
    store_close(s);
    return rc == LC_NOMEM ? lc_errf(err, rc, "lcm tui: out of memory") : rc;
}

int tui_views_search(const char *home, const char *session, const char *query, int pattern, tui_view *out, char **err)
{
    out->kind = TUI_VIEW_LIST;
    out->source = TUI_SRC_SEARCH;
    out->pattern = pattern;
    out->head = session ? lc_asprintf("%6s %-10s %s", "#", "role", "snippet")
                        : lc_asprintf("%-10s %-12s %-10s %s", "date", "session", "role", "snippet");
    if (!out->head || !(out->query = lc_strdup(query)) || (session && !(out->session = lc_strdup(session))))
        return lc_errf(err, LC_NOMEM, "lcm tui: out of memory");
    int rc = tui_views_search_page(home, out, err);
    if (rc == LC_OK && out->n == 0) rc = tui_views_add(out, TUI_ROW_INFO, lc_strdup("no hits"), NULL, NULL, 0);
    return rc;
}

int tui_views_more(const char *home, tui_view *v, char **err)
{
    if (!v->more) return LC_OK;
    if (v->source == TUI_SRC_SCAN) return tui_views_scan_page(home, v, err);
    if (v->source == TUI_SRC_SEARCH) return tui_views_search_page(home, v, err);
    return LC_OK;
}

/* ---- one message whole ------------------------------------------------------------------ */

int tui_views_message(const char *home, const char *session, const char *entry_id, int raw, tui_view *out,
                      char **err)
{
    store *s = NULL;
    store_row row = {0};
    sbuf b = {0};
    int rc = tui_views_open(home, session, &s, err);
    if (rc != LC_OK) return rc;
    if ((rc = store_get_message(s, entry_id, &row, err)) != LC_OK) {
        if (rc == LC_NOTFOUND) rc = lc_errf(err, rc, "session %s holds no message %s", session, entry_id);
        store_close(s);
        return rc;
    }
    /* raw: the AgentMessage bytes exactly as stored (secrets masked on the way out) */
    const char *src = raw ? row.raw_json : row.text;
    size_t len = raw ? row.raw_len : row.text ? strlen(row.text) : 0;
    char *body = redact_text(src ? src : "", src ? len : 0, 1, NULL);
    sb_printf(&b, "session %s\nentry %s, #%lld, role %s, %lld tokens, %lld chars%s\n", session, entry_id,
              (long long)row.ordinal, row.role ? row.role : "?", (long long)row.tokens, (long long)row.chars,
              row.removed ? ", on a removed branch" : "");
    if (row.tool_name)
        sb_printf(&b, "tool %s%s%s\n", row.tool_name, row.tool_path ? " " : "", row.tool_path ? row.tool_path : "");
    if (row.payload && !raw)
        sb_printf(&b, "(blocks that are not text: %zu bytes, kept verbatim in the store; v shows them)\n",
                  strlen(row.payload));
    sb_puts(&b, "\n");
    sb_puts(&b, body ? body : "");
    free(body);
    out->kind = TUI_VIEW_TEXT;
    out->raw = raw;
    out->title = lc_asprintf("message #%lld (%s)%s", (long long)row.ordinal, row.role ? row.role : "?",
                             raw ? ", the verbatim JSON (v: the text)" : " (v: the verbatim JSON)");
    out->text = sb_detach(&b);
    rc = out->title && out->text && (out->session = lc_strdup(session)) && (out->entry_id = lc_strdup(entry_id))
             ? LC_OK
             : lc_errf(err, LC_NOMEM, "lcm tui: out of memory");
    store_row_free(&row);
    store_close(s);
    return rc;
}

/* ---- the DAG ------------------------------------------------------------------------------ */

typedef struct tui_views_node {
    int64_t id;
    int depth, leaf;
    char *snip;
} tui_views_node;

typedef struct tui_views_nodes {
    tui_views_node *v;
    size_t n, cap;
    int oom;
} tui_views_nodes;

static int tui_views_nodes_visit(void *ud, const store_node *n, char **err)
{
    tui_views_nodes *c = ud;
    (void)err;
    tui_views_node *nv = lc_grow(c->v, &c->cap, c->n + 1, sizeof *nv);
    if (!nv) {
        c->oom = 1;
        return STORE_VISIT_STOP;
    }
    c->v = nv;
    tui_views_node *t = &c->v[c->n];
    t->id = n->id;
    t->depth = n->depth;
    t->leaf = n->leaf;
    if (!(t->snip = tui_views_snip(n->text, n->text ? strlen(n->text) : 0))) {
        c->oom = 1;
        return STORE_VISIT_STOP;
    }
    c->n++;
    return LC_OK;
}

/* Deepest first (the top of the DAG), then oldest. */
static int tui_views_node_cmp(const void *a, const void *b)
{
    const tui_views_node *x = a, *y = b;
    if (x->depth != y->depth) return y->depth - x->depth;
    return x->id < y->id ? -1 : x->id > y->id;
}

int tui_views_summaries(const char *home, const char *session, tui_view *out, char **err)
{
    store *s = NULL;
    tui_views_nodes c = {0};
    int rc = tui_views_open(home, session, &s, err);
    if (rc != LC_OK) return rc;
    /* Every text starts with the empty prefix: the walk visits every summary. */
    rc = store_dag_walk_prefixed(s, "", tui_views_nodes_visit, &c, err);
    store_close(s);
    if (rc == LC_OK && c.oom) rc = LC_NOMEM;
    if (rc == LC_OK) {
        if (c.n) qsort(c.v, c.n, sizeof *c.v, tui_views_node_cmp);
        out->kind = TUI_VIEW_LIST;
        out->title = lc_asprintf("session %s: %zu summar%s by depth", session, c.n, c.n == 1 ? "y" : "ies");
        out->head = lc_asprintf("%8s %-9s %s", "id", "kind", "summary");
        if (!out->title || !out->head) rc = LC_NOMEM;
    }
    for (size_t i = 0; i < c.n && rc == LC_OK; i++) {
        if (i == 0 || c.v[i].depth != c.v[i - 1].depth) {
            size_t k = i;
            while (k < c.n && c.v[k].depth == c.v[i].depth)
                k++;
            rc = tui_views_add(
                out, TUI_ROW_INFO,
                lc_asprintf("-- depth %d: %zu summar%s --", c.v[i].depth, k - i, k - i == 1 ? "y" : "ies"), NULL,
                NULL, 0);
            if (rc != LC_OK) break;
        }
        char id[24];
        snprintf(id, sizeof id, "#%lld", (long long)c.v[i].id);
        rc = tui_views_add(out, TUI_ROW_SUMMARY,
                           lc_asprintf("%8s %-9s %s", id, c.v[i].leaf ? "leaf" : "condensed", c.v[i].snip), session,
                           NULL, c.v[i].id);
    }
    if (rc == LC_OK && c.n == 0)
        rc = tui_views_add(out, TUI_ROW_INFO,
                           lc_asprintf("no summaries yet (lcm compact --session %s builds them)", session), NULL,
                           NULL, 0);
    for (size_t i = 0; i < c.n; i++)
        free(c.v[i].snip);
    free(c.v);
    return rc == LC_NOMEM ? lc_errf(err, rc, "lcm tui: out of memory") : rc;
}

typedef struct tui_views_child {
    tui_view *v;
    const char *session;
    int rc;
} tui_views_child;

static int tui_views_child_visit(void *ud, const store_node *n, char **err)
{
    tui_views_child *c = ud;
    (void)err;
    char *snip = tui_views_snip(n->text, n->text ? strlen(n->text) : 0);
    char *line = snip ? lc_asprintf("#%-7lld d%d %-9s %5lld msgs: %s", (long long)n->id, n->depth,
                                    n->leaf ? "leaf" : "condensed", (long long)n->entry_count, snip)
                      : NULL;
    free(snip);
    c->rc = tui_views_add(c->v, TUI_ROW_SUMMARY, line, c->session, NULL, n->id);
    return c->rc == LC_OK ? LC_OK : STORE_VISIT_STOP;
}

typedef struct tui_views_head {
    store_node n;
    char *text;
} tui_views_head;

static int tui_views_head_visit(void *ud, const store_node *n, char **err)
{
    tui_views_head *h = ud;
    (void)err;
    h->n = *n;
    h->n.first_entry = h->n.last_entry = h->n.tiers_json = NULL;
    h->text = tui_views_snip(n->text, n->text ? strlen(n->text) : 0);
    h->n.text = NULL;
    return h->text ? LC_OK : LC_NOMEM;
}

int tui_views_summary(const char *home, const char *session, int64_t id, tui_view *out, char **err)
{
    store *s = NULL;
    tui_views_head h = {0};
    store_scope_totals t = {0};
    int rc = tui_views_open(home, session, &s, err);
    if (rc != LC_OK) return rc;
    if ((rc = store_summary_get(s, id, tui_views_head_visit, &h, err)) != LC_OK) {
        if (rc == LC_NOTFOUND) rc = lc_errf(err, rc, "session %s holds no summary #%lld", session, (long long)id);
        goto done;
    }
    if (store_scope_totals_get(s, id, &t, NULL) != LC_OK) t.messages = h.n.entry_count;
    out->kind = TUI_VIEW_LIST;
    out->title = lc_asprintf("summary #%lld: depth %d %s, %lld tokens, ordinals %lld..%lld", (long long)id, h.n.depth,
                             h.n.leaf ? "leaf" : "condensed", (long long)h.n.tokens, (long long)h.n.first_ordinal,
                             (long long)h.n.last_ordinal);
    if (!out->title) rc = LC_NOMEM;
    if (rc == LC_OK)
        rc = tui_views_add(out, TUI_ROW_SUMMARY_TEXT, lc_asprintf("text (Enter: whole): %s", h.text), session, NULL,
                           id);
    if (rc == LC_OK && !h.n.leaf) {
        tui_views_child c = {out, session, LC_OK};
        rc = tui_views_add(out, TUI_ROW_ORIGINALS,
                           lc_asprintf("originals (Enter): %lld verbatim messages under it", (long long)t.messages),
                           session, NULL, id);
        if (rc == LC_OK) rc = tui_views_add(out, TUI_ROW_INFO, lc_strdup("-- children --"), NULL, NULL, 0);
        if (rc == LC_OK) rc = store_dag_walk_children(s, id, tui_views_child_visit, &c, err);
        if (rc == LC_OK) rc = c.rc;
    } else if (rc == LC_OK) {
        /* A leaf's children are its originals: listed here, paged like a session. */
        rc = tui_views_add(out, TUI_ROW_INFO, lc_asprintf("-- the %lld verbatim originals --", (long long)t.messages),
                           NULL, NULL, 0);
        out->source = TUI_SRC_SCAN;
        out->summary_id = id;
        if (rc == LC_OK && !(out->session = lc_strdup(session))) rc = LC_NOMEM;
        store_close(s);
        s = NULL;
        if (rc == LC_OK) rc = tui_views_scan_page(home, out, err);
    }
done:
    free(h.text);
    store_close(s);
    return rc == LC_NOMEM ? lc_errf(err, rc, "lcm tui: out of memory") : rc;
}

int tui_views_summary_text(const char *home, const char *session, int64_t id, tui_view *out, char **err)
{
    store *s = NULL;
    char addr[32];
    int rc = tui_views_open(home, session, &s, err);
    if (rc != LC_OK) return rc;
    snprintf(addr, sizeof addr, "#%lld", (long long)id);
    rc = recall_describe(s, addr, 1, &out->text, err);
    store_close(s);
    if (rc != LC_OK) return rc;
    out->kind = TUI_VIEW_TEXT;
    out->title = lc_asprintf("summary #%lld", (long long)id);
    return out->title ? LC_OK : lc_errf(err, LC_NOMEM, "lcm tui: out of memory");
}

/* ---- stats ---------------------------------------------------------------------------------- */

static void tui_views_session_stats(const char *home, const char *session, const catalog_list *l, sbuf *b)
{
    store *s = NULL;
    store_facts f;
    char *err = NULL, sz[16];
    sb_printf(b, "\nsession %s\n", session);
    for (size_t i = 0; i < l->n; i++)
        if (!strcmp(l->v[i].name, session)) {
            char *date = lc_utc_format(l->v[i].created, "%Y-%m-%d %H:%M UTC", "unknown");
            sb_printf(b, "  created      %s\n  cwd          %s\n", date ? date : "?",
                      l->v[i].cwd ? l->v[i].cwd : "?");
            tui_views_bytes(sz, sizeof sz, (double)l->v[i].bytes);
            sb_printf(b, "  store file   %s (%lld bytes, with its log)\n", sz, (long long)l->v[i].bytes);
            free(date);
        }
    if (tui_views_open(home, session, &s, &err) != LC_OK || store_facts_get(s, &f, &err) != LC_OK) {
        sb_printf(b, "  %s\n", err ? err : "unreadable");
        free(err);
        store_close(s);
        return;
    }
    tui_views_bytes(sz, sizeof sz, (double)store_db_bytes(s));
    sb_printf(b, "  database     %s (pages in use), schema %d\n", sz, f.schema_version);
    sb_printf(b, "  messages     %lld (%lld on removed branches)\n", (long long)f.messages, (long long)f.removed);
    tui_views_bytes(sz, sizeof sz, (double)f.payload_bytes);
    sb_printf(b, "  payloads     %s of blocks kept verbatim beside the text\n", sz);
    sb_printf(b, "  file handles %lld\n  summaries    %lld\n  uncovered    %lld active messages no leaf covers\n",
              (long long)f.file_handles, (long long)f.summaries, (long long)f.unleafed);
    sb_printf(b, "  passes       %lld recorded\n", (long long)f.runs);
    int64_t top = 0;
    for (int d = 0; d <= STORE_MAX_DEPTH; d++)
        if (f.depth_hist[d] > top) top = f.depth_hist[d];
    sb_puts(b, "\n  summaries by depth\n");
    for (int d = STORE_MAX_DEPTH; d >= 0; d--) {
        if (!f.depth_hist[d]) continue;
        int w = (int)((f.depth_hist[d] * TUI_BAR_COLS + top - 1) / top);
        sb_printf(b, "  depth %d %6lld ", d, (long long)f.depth_hist[d]);
        for (int k = 0; k < w; k++)
            sb_putc(b, '#');
        sb_putc(b, '\n');
    }
    if (!top) sb_puts(b, "  (none yet)\n");
    store_close(s);
}

int tui_views_stats(const char *home, const char *session, tui_view *out, char **err)
{
    catalog_filter f = {.counts = 1, .order = CATALOG_NEWEST_FIRST};
    catalog_list l = {0};
    sbuf b = {0};
    int rc = catalog_list_stores(home, &f, &l, err);
    if (rc != LC_OK) return rc;
    long long msgs = 0, sums = 0, bytes = 0;
    size_t damaged = 0;
    for (size_t i = 0; i < l.n; i++) {
        if (l.v[i].damaged) damaged++;
        if (l.v[i].messages > 0) msgs += l.v[i].messages;
        if (l.v[i].summaries > 0) sums += l.v[i].summaries;
        bytes += l.v[i].bytes;
    }
    char sz[16];
    tui_views_bytes(sz, sizeof sz, (double)bytes);
    sb_printf(&b,
              "home %s\n  stores       %zu (%zu damaged)\n  messages     %lld\n  summaries    %lld\n"
              "  store bytes  %s (%lld)\n  backend      %s %s\n",
              home, l.n, damaged, msgs, sums, sz, bytes, store_backend_name(), store_backend_version());
    if (session) tui_views_session_stats(home, session, &l, &b);
    /* What LCM's own model calls spent (ledger.h): the home's, per day / session / kind. */
    char *spend = ledger_report(home, session, 0, NULL);
    if (spend) sb_printf(&b, "\n%s", spend);
    free(spend);
    catalog_list_free(&l);
    out->kind = TUI_VIEW_TEXT;
    out->title = lc_strdup(session ? "stats: the home and the selected session" : "stats: the home");
    out->text = sb_detach(&b);
    return out->title && out->text ? LC_OK : lc_errf(err, LC_NOMEM, "lcm tui: out of memory");
}
