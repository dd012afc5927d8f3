/*
 * cliview.c -- the `lcm` command's own words (see cliview.h): ids by unique prefix, short
 * ids, a session's title, human sizes, the screen's width, the tools' texts reworded.
 */
#include "cliview.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "carry.h"
#include "store.h"
#include "util.h"

/* How many candidates an ambiguous prefix names. */
#define CLIVIEW_NAMED 4

/* The id without its agent's prefix: what a person reads in the agent's own UI. */
static const char *cliview_bare(const char *id)
{
    static const char *const agents[] = {"claude-", "codex-"};
    for (size_t i = 0; i < sizeof agents / sizeof *agents; i++)
        if (!strncmp(id, agents[i], strlen(agents[i]))) return id + strlen(agents[i]);
    return id;
}

/* 1 when `arg` is a prefix `id` answers to: of the id, or of the id without its agent's
 * prefix; a sub-agent's store ("<session>--agent-...") only once `arg` reaches its "--". */
static int cliview_matches(const char *id, const char *arg)
{
    size_t n = strlen(arg);
    if (strstr(id, "--") && !strstr(arg, "--")) return 0;
    return !strncmp(id, arg, n) || !strncmp(cliview_bare(id), arg, n);
}

int cliview_session(const char *home, const char *arg, char **full, char **err)
{
    catalog_list l = {0};
    catalog_filter f = {.order = CATALOG_NEWEST_FIRST};
    size_t hits = 0, first = 0;
    sbuf names = {0};
    *full = NULL;
    /* A whole id with its store file: no need to list every store */
    char *path = store_valid_id(arg) ? catalog_path(home, arg) : NULL;
    int exists = path && access(path, F_OK) == 0;
    free(path);
    if (exists) return (*full = lc_strdup(arg)) ? LC_OK : lc_errf(err, LC_NOMEM, "out of memory");
    int rc = catalog_list_stores(home, &f, &l, err);
    if (rc != LC_OK) return rc;
    for (size_t i = 0; i < l.n; i++)
        if (l.v[i].session_id && !strcmp(l.v[i].session_id, arg)) {
            *full = lc_strdup(arg);
            goto done;
        }
    for (size_t i = 0; *arg && i < l.n; i++) {
        if (!l.v[i].session_id || !cliview_matches(l.v[i].session_id, arg)) continue;
        if (!hits++) first = i;
        if (hits <= CLIVIEW_NAMED) sb_printf(&names, "%s%s", hits > 1 ? ", " : "", l.v[i].session_id);
    }
    if (hits == 1) *full = lc_strdup(l.v[first].session_id);
    else if (hits > 1)
        rc = lc_errf(err, LC_INVALID, "session prefix %s names %zu sessions: %s%s (give more of it)", arg, hits,
                     names.p ? names.p : "", hits > CLIVIEW_NAMED ? ", ..." : "");
    else
        rc = lc_errf(err, LC_NOTFOUND, "no session %s under %s/lcm (lcm sessions lists them; a unique prefix will do)",
                     arg, home);
done:
    if (rc == LC_OK && !*full) rc = lc_errf(err, LC_NOMEM, "out of memory");
    sb_free(&names);
    catalog_list_free(&l);
    return rc;
}

typedef struct cliview_prefix {
    const char *arg;
    size_t n, hits;
    char *first;
    sbuf names;
} cliview_prefix;

static int cliview_entry_visit(void *ud, const store_search_row *r, char **err)
{
    (void)err;
    cliview_prefix *p = ud;
    if (!r->entry_id || strncmp(r->entry_id, p->arg, p->n) != 0) return LC_OK;
    if (!p->hits++ && !(p->first = lc_strdup(r->entry_id))) return lc_errf(err, LC_NOMEM, "out of memory");
    if (p->hits <= CLIVIEW_NAMED) sb_printf(&p->names, "%s%s", p->hits > 1 ? ", " : "", r->entry_id);
    return LC_OK;
}

int cliview_entry(const char *home, const char *session, const char *arg, char **full, char **err)
{
    store *s = NULL;
    store_row row = {0};
    cliview_prefix p = {.arg = arg, .n = strlen(arg)};
    int version = -1, rc;
    *full = NULL;
    /* A store that does not open is the reader's to explain: the id goes on as given. */
    if (catalog_open(home, session, CATALOG_READ, &s, &version, NULL) != LC_OK || !STORE_SCHEMA_ANSWERS(version)) {
        rc = LC_OK;
        goto keep;
    }
    if (store_get_message(s, arg, &row, NULL) == LC_OK) {
        store_row_free(&row);
        rc = LC_OK;
        goto keep;
    }
    store_search_scope scope = {.include_removed = 1};
    if ((rc = store_search_scan(s, &scope, cliview_entry_visit, &p, NULL, err)) != LC_OK) goto done;
    if (p.hits > 1) {
        rc = lc_errf(err, LC_INVALID, "entry prefix %s names %zu entries of session %s: %s%s (give more of it)", arg,
                     p.hits, session, p.names.p ? p.names.p : "", p.hits > CLIVIEW_NAMED ? ", ..." : "");
        goto done;
    }
    if (p.hits == 1) {
        *full = p.first;
        p.first = NULL;
        goto done;
    }
keep:
    *full = lc_strdup(arg);
done:
    if (rc == LC_OK && !*full) rc = lc_errf(err, LC_NOMEM, "out of memory");
    free(p.first);
    sb_free(&p.names);
    store_close(s);
    return rc;
}

/* How many listed sessions answer to the prefix cand[0..n) (cliview_session's rule). */
static size_t cliview_answering(const catalog_list *l, const char *cand)
{
    size_t k = 0;
    for (size_t j = 0; j < l->n; j++)
        if (l->v[j].session_id && cliview_matches(l->v[j].session_id, cand)) k++;
    return k;
}

char *cliview_short_id(const catalog_list *l, size_t i)
{
    const char *id = l->v[i].session_id ? l->v[i].session_id : l->v[i].name;
    const char *bare = cliview_bare(id);
    size_t len = strlen(bare), n = len <= 12 ? len : 8;
    /* A sub-agent's store is addressed whole: its prefix is its session's. */
    if (strstr(id, "--")) return lc_strdup(bare);
    for (; n < len; n++) {
        char *cand = lc_strndup(bare, n);
        size_t k = cand ? cliview_answering(l, cand) : 0;
        free(cand);
        if (k == 1) break;
    }
    return lc_strndup(bare, n);
}

typedef struct cliview_first {
    int after_command;
    size_t max;
    char *title;
} cliview_first;

static int cliview_title_visit(void *ud, const store_search_row *r, char **err)
{
    cliview_first *f = ud;
    char *text = lc_strndup(r->text ? r->text : "", r->text ? r->text_len : 0);
    size_t off = 0, len = 0;
    if (!text) return lc_errf(err, LC_NOMEM, "out of memory");
    if (r->role && !strcmp(r->role, "user") &&
        carry_classify_user(text, f->after_command, &off, &len) == CARRY_REQUEST && len)
        f->title = carry_line(text + off, len, f->max, NULL);
    f->after_command = carry_opens_template(r->role ? r->role : "", text);
    free(text);
    return f->title ? STORE_VISIT_STOP : LC_OK;
}

char *cliview_title(const catalog_entry *e, size_t max)
{
    store *s = NULL;
    int version = -1;
    cliview_first f = {.max = max};
    if (e->damaged || catalog_open_entry(e, &s, &version, NULL) != LC_OK) return NULL;
    store_search_scope scope = {0};
    if (STORE_SCHEMA_ANSWERS(version)) store_search_scan(s, &scope, cliview_title_visit, &f, NULL, NULL);
    store_close(s);
    return f.title;
}

char *cliview_home(const char *opt)
{
    const char *env_home = getenv("HOME");
    char *h = opt ? lc_strdup(opt) : lc_asprintf("%s/.agent", env_home && *env_home ? env_home : ".");
    if (!h || h[0] == '/') return h;
    char *cwd = getcwd(NULL, 0), *abs = cwd ? lc_asprintf("%s/%s", cwd, h) : NULL;
    free(cwd);
    free(h);
    return abs;
}

void cliview_size(int64_t bytes, char buf[24])
{
    static const char *const units[] = {"KB", "MB", "GB", "TB"};
    double v = (double)bytes;
    int u = -1;
    if (bytes < 1024) {
        snprintf(buf, 24, "%lld B", (long long)(bytes < 0 ? 0 : bytes));
        return;
    }
    while (v >= 1024.0 && u < 3) {
        v /= 1024.0;
        u++;
    }
    snprintf(buf, 24, "%.1f %s", v, units[u]);
}

int cliview_columns(void)
{
    struct winsize ws;
    if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
    const char *c = getenv("COLUMNS");
    int n = c ? atoi(c) : 0;
    return n > 0 ? n : 0;
}

int cliview_rows(void)
{
    struct winsize ws;
    if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0) return ws.ws_row;
    return 0;
}

/* The MCP calls the tools' texts name, and what a person types instead. Longest first. */
static const char *const cliview_calls[][2] = {
    {"lcm_expand({session, entry_id})", "lcm expand SESSION ENTRY"},
    {"lcm_expand({entry_id})", "lcm expand SESSION ENTRY"},
    {"call again with offset ", "again with --offset "},
    {"lcm_grep", "lcm grep"},
    {"lcm_expand", "lcm expand"},
    {"lcm_describe", "lcm describe"},
    {"lcm_sessions", "lcm sessions"},
    {"lcm_status", "lcm status"},
    {"lcm_handoff", "lcm handoff"},
};

/* Columns a code point takes on a terminal: 2 for the East Asian wide and fullwidth blocks
 * and emoji, 0 for combining marks, else 1. */
static int cliview_cp_cols(uint32_t cp)
{
    if ((cp >= 0x0300 && cp <= 0x036F) || (cp >= 0x200B && cp <= 0x200F) || (cp >= 0xFE00 && cp <= 0xFE0F)) return 0;
    if ((cp >= 0x1100 && cp <= 0x115F) || (cp >= 0x2E80 && cp <= 0x303E) || (cp >= 0x3041 && cp <= 0x33FF) ||
        (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0xA000 && cp <= 0xA4CF) ||
        (cp >= 0xAC00 && cp <= 0xD7A3) || (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0xFE30 && cp <= 0xFE4F) ||
        (cp >= 0xFF00 && cp <= 0xFF60) || (cp >= 0xFFE0 && cp <= 0xFFE6) || (cp >= 0x1F300 && cp <= 0x1F64F) ||
        (cp >= 0x1F900 && cp <= 0x1F9FF) || (cp >= 0x20000 && cp <= 0x3FFFD))
        return 2;
    return 1;
}

size_t cliview_fit(const char *s, size_t len, size_t cols, size_t *used)
{
    size_t i = 0, w = 0;
    while (i < len) {
        unsigned char c = (unsigned char)s[i];
        size_t n = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
        uint32_t cp = c < 0x80 ? c : c >= 0xF0 ? c & 0x07u : c >= 0xE0 ? c & 0x0Fu : c & 0x1Fu;
        if (i + n > len) n = len - i;
        for (size_t k = 1; k < n; k++) cp = (cp << 6) | ((unsigned char)s[i + k] & 0x3Fu);
        int cw = cliview_cp_cols(cp);
        if (w + (size_t)cw > cols) break;
        w += (size_t)cw;
        i += n;
    }
    if (used) *used = w;
    return i;
}

/* One line (line[0..len), no newline) onto b, cut to `width` columns ("…" in the last) when
 * wider. */
static void cliview_line(sbuf *b, const char *line, size_t len, int width)
{
    if (width <= 0 || cliview_fit(line, len, (size_t)width, NULL) == len) {
        sb_append(b, line, len);
        return;
    }
    sb_append(b, line, cliview_fit(line, len, (size_t)width - 1, NULL));
    sb_puts(b, "\xE2\x80\xA6");
}

/* A hit's line on a screen: "- ENTRY [role] (SHORT, date, cwd DIR):" (or, one session's,
 * "- ENTRY [role] date:") then its text indented on the next line, each cut to the width. */
static void cliview_hit(sbuf *b, const char *line, size_t len, int width, const catalog_list *l)
{
    static const char past[] = "(past session ";
    const char *open = memmem(line, len, past, sizeof past - 1);
    const char *close = open ? memmem(open, len - (size_t)(open - line), "): ", 3) : NULL;
    if (!close) {
        /* one session's hit, "- ENTRY [role] date: text": the text below its head too */
        const char *role = memmem(line, len, "] ", 2);
        const char *colon = role ? memmem(role, len - (size_t)(role - line), ": ", 2) : NULL;
        if (!colon) {
            cliview_line(b, line, len, width);
            return;
        }
        cliview_line(b, line, (size_t)(colon - line) + 1, width);
        sb_puts(b, "\n    ");
        cliview_line(b, colon + 2, len - (size_t)(colon + 2 - line), width > 4 ? width - 4 : width);
        return;
    }
    sbuf h = {0};
    const char *id = open + sizeof past - 1, *comma = memchr(id, ',', (size_t)(close - id));
    size_t idlen = comma ? (size_t)(comma - id) : (size_t)(close - id);
    char *shortid = NULL;
    for (size_t i = 0; l && i < l->n && !shortid; i++)
        if (l->v[i].session_id && strlen(l->v[i].session_id) == idlen && !strncmp(l->v[i].session_id, id, idlen))
            shortid = cliview_short_id(l, i);
    sb_append(&h, line, (size_t)(open - line) + 1);
    if (shortid) sb_puts(&h, shortid);
    else sb_append(&h, id, idlen);
    sb_append(&h, id + idlen, (size_t)(close - id - idlen) + 2);
    if (h.p) cliview_line(b, h.p, h.len, width);
    sb_puts(b, "\n    ");
    cliview_line(b, close + 3, len - (size_t)(close + 3 - line), width > 4 ? width - 4 : width);
    sb_free(&h);
    free(shortid);
}

char *cliview_words(char *text, int width, const catalog_list *l)
{
    sbuf b = {0}, c = {0};
    if (!text) return NULL;
    for (const char *p = text; *p;) {
        size_t k = 0, n = sizeof cliview_calls / sizeof *cliview_calls;
        for (; k < n; k++)
            if (!strncmp(p, cliview_calls[k][0], strlen(cliview_calls[k][0]))) break;
        if (k < n) {
            sb_puts(&b, cliview_calls[k][1]);
            p += strlen(cliview_calls[k][0]);
        } else {
            sb_putc(&b, *p++);
        }
    }
    free(text);
    if (!b.p) return lc_strdup("");
    for (const char *p = b.p; *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        if (width > 0 && len > 2 && p[0] == '-' && p[1] == ' ') cliview_hit(&c, p, len, width, l);
        else cliview_line(&c, p, len, width);
        if (nl) sb_putc(&c, '\n');
        p += len + (nl ? 1 : 0);
    }
    sb_free(&b);
    return c.p ? sb_detach(&c) : lc_strdup("");
}
