/*
 * tui.c -- `lcm tui` (see tui.h): the screen, the keys and the navigation. Each tab is a
 * stack of views (tui_views.h) that Enter pushes and Esc pops; the footer holds the key
 * help, the search prompt or the last error. Text is UTF-8 drawn by display width (wide
 * characters take two columns, control characters one blank), and a view is re-cut for
 * the width it is drawn at, so a resize (KEY_RESIZE) redraws everything at the new size.
 */
#ifndef NCURSES_WIDECHAR
#define NCURSES_WIDECHAR 1
#endif
#include "tui.h"

#include <curses.h>
#include <limits.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <wchar.h>

#include "termsafe.h"
#include "tui_views.h"
#include "util.h"

#define TUI_TABS 4
#define TUI_DEPTH 32          /* views one tab can stack (the DAG is at most 8 deep) */
#define TUI_QUERY_MAX 512     /* bytes of a search query */
#define TUI_ESC 27
#define TUI_CTRL_R 18

enum { TUI_TAB_SESSIONS = 0, TUI_TAB_SEARCH, TUI_TAB_SUMMARIES, TUI_TAB_STATS };
static const char *const tui_tab_names[TUI_TABS] = {"Sessions", "Search", "Summaries", "Stats"};

typedef struct tui_app {
    const char *home;
    tui_view *stack[TUI_TABS][TUI_DEPTH];
    int depth[TUI_TABS];
    int tab;
    char *session;        /* the selected session (tab 1's cursor, or the one opened) */
    char *summ_session;   /* the session tab 3's root was read for */
    int prompting;
    char query[TUI_QUERY_MAX];
    size_t qlen;
    int pattern;          /* the prompt's mode: 0 FTS5 query, 1 PCRE2 pattern */
    int one_session;      /* the prompt's scope: 0 every session, 1 the selected one */
    char *status;         /* the footer's message until the next key */
    int quit;
} tui_app;

/* ---- drawing ------------------------------------------------------------------------------ */

/* One UTF-8 character at s[0..len): its code point in *wc (U+FFFD for a bad byte) and its
 * byte length (at least 1). */
static size_t tui_decode(const char *s, size_t len, wchar_t *wc)
{
    mbstate_t st;
    memset(&st, 0, sizeof st);
    size_t k = mbrtowc(wc, s, len, &st);
    if (k == (size_t)-1 || k == (size_t)-2) {
        *wc = L'?';
        return 1;
    }
    return k ? k : 1;
}

/* The columns a character takes on screen: control characters (termsafe.h) are drawn as
 * one blank. */
static int tui_cols_of(wchar_t *wc)
{
    if (*wc < 0x20 || termsafe_control((uint32_t)*wc)) {
        *wc = L' ';
        return 1;
    }
    int w = wcwidth(*wc);
    if (w < 0) {
        *wc = L'?';
        return 1;
    }
    return w;
}

/* Draw s[0..len) at (y, x) in at most `cols` columns; the columns drawn. */
static int tui_put(int y, int x, const char *s, size_t len, int cols)
{
    wchar_t buf[256];
    int used = 0, n = 0;
    size_t i = 0;
    move(y, x);
    while (i < len && used < cols) {
        wchar_t wc;
        size_t k = tui_decode(s + i, len - i, &wc);
        int w = tui_cols_of(&wc);
        if (used + w > cols) break;
        i += k;
        if (w == 0 && n == 0) continue; /* a combining mark with nothing to combine with */
        buf[n++] = wc;
        used += w;
        if (n == (int)(sizeof buf / sizeof buf[0])) {
            addnwstr(buf, n);
            n = 0;
        }
    }
    if (n) addnwstr(buf, n);
    return used;
}

static int tui_puts(int y, int x, const char *s, int cols) { return tui_put(y, x, s, strlen(s), cols); }

/* Blank the rest of row y from column x. */
static void tui_fill(int y, int x)
{
    for (int c = x; c < COLS; c++) mvaddch(y, c, ' ');
}

/* Cut v->text into lines of at most `cols` columns, at a space when the line has one, at
 * every newline. */
static int tui_wrap(tui_view *v, int cols)
{
    if (v->wrap_cols == cols && v->wrap_off) return LC_OK;
    const char *t = v->text ? v->text : "";
    size_t len = strlen(t), cap = 64, n = 0, i = 0;
    size_t *off = malloc(cap * sizeof *off), *ln = malloc(cap * sizeof *ln);
    if (!off || !ln) goto oom;
    while (i <= len) {
        size_t start = i, brk = 0;
        int used = 0;
        while (i < len && t[i] != '\n') {
            wchar_t wc;
            size_t k = tui_decode(t + i, len - i, &wc);
            int w = tui_cols_of(&wc);
            if (used + w > cols) break;
            if (wc == L' ') brk = i + 1;
            used += w;
            i += k;
        }
        size_t end = i;
        if (i < len && t[i] != '\n' && brk > start) end = i = brk; /* wrap at the last space */
        if (n == cap) {
            cap *= 2;
            size_t *no = realloc(off, cap * sizeof *no);
            if (!no) goto oom;
            off = no;
            size_t *nl = realloc(ln, cap * sizeof *nl);
            if (!nl) goto oom;
            ln = nl;
        }
        off[n] = start;
        ln[n] = end - start;
        n++;
        if (i < len && t[i] == '\n') i++;
        else if (i >= len) break;
    }
    free(v->wrap_off);
    free(v->wrap_len);
    v->wrap_off = off;
    v->wrap_len = ln;
    v->wrap_n = n;
    v->wrap_cols = cols;
    return LC_OK;
oom:
    free(off);
    free(ln);
    return LC_NOMEM;
}

static tui_view *tui_top(tui_app *a)
{
    int d = a->depth[a->tab];
    return d ? a->stack[a->tab][d - 1] : NULL;
}

/* The rows the body of a view has on this screen. */
static int tui_body_rows(const tui_view *v)
{
    int h = LINES - 3 - (v && v->kind == TUI_VIEW_LIST && v->head ? 1 : 0);
    return h > 1 ? h : 1;
}

static void tui_draw_tabs(tui_app *a)
{
    int x = 0;
    attron(A_REVERSE);
    tui_fill(0, 0);
    for (int t = 0; t < TUI_TABS && x < COLS; t++) {
        char label[32];
        snprintf(label, sizeof label, " %d %s ", t + 1, tui_tab_names[t]);
        if (t == a->tab) attroff(A_REVERSE), attron(A_BOLD);
        x += tui_puts(0, x, label, COLS - x);
        if (t == a->tab) attroff(A_BOLD), attron(A_REVERSE);
    }
    if (a->session && x + 12 < COLS) {
        char *s = lc_asprintf(" session %s ", a->session);
        if (s) {
            int w = (int)strlen(s), room = COLS - x - 1;
            tui_puts(0, w < room ? COLS - w : x + 1, s, room);
        }
        free(s);
    }
    attroff(A_REVERSE);
}

static void tui_draw_list(tui_view *v, int y0)
{
    int h = tui_body_rows(v), y = y0;
    if (v->head) {
        attron(A_UNDERLINE);
        tui_puts(y, 0, v->head, COLS);
        attroff(A_UNDERLINE);
        y++;
    }
    if (v->sel >= v->n) v->sel = v->n ? v->n - 1 : 0;
    if (v->sel < v->top) v->top = v->sel;
    if (v->sel >= v->top + (size_t)h) v->top = v->sel - (size_t)h + 1;
    for (int r = 0; r < h && v->top + (size_t)r < v->n; r++) {
        const tui_row *row = &v->rows[v->top + (size_t)r];
        int sel = v->top + (size_t)r == v->sel;
        int attr = sel ? A_REVERSE : row->kind == TUI_ROW_INFO ? A_BOLD : A_NORMAL;
        attron(attr);
        int w = tui_puts(y + r, 0, row->line, COLS);
        if (sel) tui_fill(y + r, w);
        attroff(attr);
    }
}

/* A text is cut for this width and its first line kept where a full screen still shows. */
static int tui_text_fit(tui_view *v)
{
    int h = tui_body_rows(v);
    if (tui_wrap(v, COLS) != LC_OK) return LC_NOMEM;
    size_t last = v->wrap_n > (size_t)h ? v->wrap_n - (size_t)h : 0;
    if (v->top > last) v->top = last;
    return LC_OK;
}

static void tui_draw_text(tui_view *v, int y0)
{
    int h = tui_body_rows(v);
    if (tui_text_fit(v) != LC_OK) {
        tui_puts(y0, 0, "out of memory", COLS);
        return;
    }
    for (int r = 0; r < h && v->top + (size_t)r < v->wrap_n; r++) {
        size_t k = v->top + (size_t)r;
        tui_put(y0 + r, 0, v->text + v->wrap_off[k], v->wrap_len[k], COLS);
    }
}

/* Where the view is: rows a-b of n (more), or lines a-b of n. */
static void tui_draw_title(tui_view *v)
{
    char pos[64] = "";
    int h = tui_body_rows(v);
    if (v->kind == TUI_VIEW_LIST && v->n)
        snprintf(pos, sizeof pos, " %zu/%zu%s", v->sel + 1, v->n, v->more ? "+" : "");
    else if (v->kind == TUI_VIEW_TEXT && v->wrap_n) {
        size_t end = v->top + (size_t)h < v->wrap_n ? v->top + (size_t)h : v->wrap_n;
        snprintf(pos, sizeof pos, " lines %zu-%zu/%zu", v->top + 1, end, v->wrap_n);
    }
    int pw = (int)strlen(pos);
    attron(A_BOLD);
    tui_puts(1, 0, v->title ? v->title : "", COLS - pw > 0 ? COLS - pw : 0);
    attroff(A_BOLD);
    if (pw < COLS) tui_puts(1, COLS - pw, pos, pw);
}

static const char tui_help_keys[] =
    "Enter open  Esc back  / search  1-4 tabs  j/k PgUp/PgDn  ? keys  q quit";

static void tui_draw_footer(tui_app *a)
{
    int y = LINES - 1;
    if (a->prompting) {
        char *p = lc_asprintf("%s in %s (Tab scope, ^R mode): ", a->pattern ? "pattern" : "query",
                              a->one_session && a->session ? "this session" : "all sessions");
        int x = p ? tui_puts(y, 0, p, COLS) : 0;
        free(p);
        /* The query's tail when it is wider than the room left. */
        size_t from = 0;
        while (from < a->qlen) {
            size_t cols = 0, i = from;
            while (i < a->qlen) {
                wchar_t wc;
                i += tui_decode(a->query + i, a->qlen - i, &wc);
                cols += (size_t)tui_cols_of(&wc);
            }
            if ((int)cols < COLS - x - 1) break;
            wchar_t wc;
            from += tui_decode(a->query + from, a->qlen - from, &wc);
        }
        x += tui_put(y, x, a->query + from, a->qlen - from, COLS - x - 1);
        move(y, x < COLS ? x : COLS - 1);
        return;
    }
    attron(a->status ? A_BOLD : A_DIM);
    tui_puts(y, 0, a->status ? a->status : tui_help_keys, COLS);
    attroff(a->status ? A_BOLD : A_DIM);
}

static void tui_draw(tui_app *a)
{
    erase();
    tui_draw_tabs(a);
    tui_view *v = tui_top(a);
    if (v) {
        if (v->kind == TUI_VIEW_TEXT) tui_text_fit(v); /* the title counts its lines */
        tui_draw_title(v);
        if (v->kind == TUI_VIEW_LIST) tui_draw_list(v, 2);
        else tui_draw_text(v, 2);
    }
    tui_draw_footer(a);
    curs_set(a->prompting ? 1 : 0);
    refresh();
}

/* ---- navigation ----------------------------------------------------------------------------- */

static void tui_set_status(tui_app *a, const char *msg)
{
    free(a->status);
    a->status = msg ? lc_strdup(msg) : NULL;
}

static void tui_set_session(tui_app *a, const char *session)
{
    if (!session || (a->session && !strcmp(a->session, session))) return;
    char *s = lc_strdup(session);
    if (!s) return;
    free(a->session);
    a->session = s;
}

static void tui_clear_tab(tui_app *a, int tab)
{
    while (a->depth[tab] > 0) {
        tui_view *v = a->stack[tab][--a->depth[tab]];
        tui_views_free(v);
        free(v);
    }
}

/* A fresh view for a loader to fill. */
static tui_view *tui_new_view(tui_app *a)
{
    tui_view *v = calloc(1, sizeof *v);
    if (!v) tui_set_status(a, "lcm tui: out of memory");
    return v;
}

/* Push what a loader made onto `tab` (root: the tab's stack is replaced); on failure the
 * loader's sentence goes to the footer and nothing changes. */
static int tui_take(tui_app *a, int tab, int root, tui_view *v, int rc, char *err)
{
    if (rc == LC_OK && !root && a->depth[tab] == TUI_DEPTH) {
        rc = LC_INVALID;
        free(err);
        err = lc_strdup("lcm tui: too many levels open (Esc goes back)");
    }
    if (rc != LC_OK) {
        tui_set_status(a, err ? err : "lcm tui: could not read the store");
        free(err);
        tui_views_free(v);
        free(v);
        return rc;
    }
    free(err);
    /* The cursor starts on the first row Enter can open. */
    while (v->kind == TUI_VIEW_LIST && v->sel + 1 < v->n && v->rows[v->sel].kind == TUI_ROW_INFO) v->sel++;
    if (root) tui_clear_tab(a, tab);
    a->stack[tab][a->depth[tab]++] = v;
    a->tab = tab;
    return LC_OK;
}

/* Tab 1's root, read again (a store may have come or grown); the cursor stays on the
 * selected session. */
static void tui_open_sessions(tui_app *a)
{
    tui_view *v = tui_new_view(a);
    char *err = NULL;
    if (!v) return;
    int rc = tui_views_sessions(a->home, v, &err);
    if (tui_take(a, TUI_TAB_SESSIONS, 1, v, rc, err) != LC_OK) return;
    for (size_t i = 0; a->session && i < v->n; i++)
        if (v->rows[i].session && !strcmp(v->rows[i].session, a->session)) v->sel = i;
    if (!a->session && v->n && v->rows[0].kind == TUI_ROW_SESSION) tui_set_session(a, v->rows[0].session);
}

/* Tab 3's root: the selected session's DAG, read again unless a drill-down into the same
 * session is open (a compaction since shows up). */
static void tui_open_summaries(tui_app *a)
{
    if (!a->session) {
        tui_set_status(a, "no session selected: pick one on tab 1");
        return;
    }
    if (a->depth[TUI_TAB_SUMMARIES] > 1 && a->summ_session && !strcmp(a->summ_session, a->session)) {
        a->tab = TUI_TAB_SUMMARIES;
        return;
    }
    tui_view *v = tui_new_view(a);
    char *err = NULL;
    if (!v) return;
    int rc = tui_views_summaries(a->home, a->session, v, &err);
    if (tui_take(a, TUI_TAB_SUMMARIES, 1, v, rc, err) == LC_OK) {
        free(a->summ_session);
        a->summ_session = lc_strdup(a->session);
    }
}

static void tui_open_stats(tui_app *a)
{
    tui_view *v = tui_new_view(a);
    char *err = NULL;
    if (!v) return;
    tui_take(a, TUI_TAB_STATS, 1, v, tui_views_stats(a->home, a->session, v, &err), err);
}

/* A text view that is not read from a store (the search tab before a search, the keys). */
static void tui_open_note(tui_app *a, int tab, int root, const char *title, const char *text)
{
    tui_view *v = tui_new_view(a);
    if (!v) return;
    v->kind = TUI_VIEW_TEXT;
    v->title = lc_strdup(title);
    v->text = lc_strdup(text);
    tui_take(a, tab, root, v, v->title && v->text ? LC_OK : LC_NOMEM, NULL);
}

static const char tui_keys_text[] =
    "1 Sessions   the stores of the home, newest first; Enter: a session's messages\n"
    "2 Search     the last search's hits; Enter: the message whole\n"
    "3 Summaries  the selected session's summaries by depth; Enter: a summary's text,\n"
    "             its children and its verbatim originals\n"
    "4 Stats      counts, the depth histogram, store bytes, the backend\n"
    "\n"
    "/            search from any tab: type, Enter runs it, Esc cancels;\n"
    "             Tab: every session or the selected one; Ctrl-R: FTS5 query or PCRE2 pattern\n"
    "Enter        open the row under the cursor\n"
    "v            on a message: its verbatim JSON as stored, and back to its text\n"
    "Esc          back one level (Backspace and Left too)\n"
    "j k, arrows  move; PgUp PgDn a screen; g G (Home End) the first and the last\n"
    "q            quit\n"
    "\n"
    "Nothing is written: every store is opened read-only.\n";

static void tui_switch(tui_app *a, int tab)
{
    if (tab == TUI_TAB_SESSIONS) {
        if (a->depth[tab] <= 1) tui_open_sessions(a);
        else a->tab = tab;
    } else if (tab == TUI_TAB_SEARCH) {
        if (!a->depth[tab]) tui_open_note(a, tab, 1, "search", "Press / and type a query; Enter runs it.\n");
        else a->tab = tab;
    } else if (tab == TUI_TAB_SUMMARIES) {
        tui_open_summaries(a);
    } else {
        tui_open_stats(a);
    }
}

static void tui_search(tui_app *a)
{
    tui_view *v = tui_new_view(a);
    char *err = NULL;
    if (!v) return;
    a->query[a->qlen] = '\0';
    const char *scope = a->one_session ? a->session : NULL;
    int rc = tui_views_search(a->home, scope, a->query, a->pattern, v, &err);
    tui_take(a, TUI_TAB_SEARCH, 1, v, rc, err);
}

/* Enter on the cursor's row. */
static void tui_enter(tui_app *a)
{
    tui_view *cur = tui_top(a);
    if (!cur || cur->kind != TUI_VIEW_LIST || cur->sel >= cur->n) return;
    const tui_row *r = &cur->rows[cur->sel];
    tui_view *v;
    char *err = NULL;
    int rc;
    if (r->kind == TUI_ROW_INFO || !(v = tui_new_view(a))) return;
    switch (r->kind) {
    case TUI_ROW_SESSION:
        tui_set_session(a, r->session);
        rc = tui_views_messages(a->home, r->session, v, &err);
        break;
    case TUI_ROW_MESSAGE:
        rc = tui_views_message(a->home, r->session, r->entry_id, 0, v, &err);
        break;
    case TUI_ROW_SUMMARY:
        rc = tui_views_summary(a->home, r->session, r->summary_id, v, &err);
        break;
    case TUI_ROW_SUMMARY_TEXT:
        rc = tui_views_summary_text(a->home, r->session, r->summary_id, v, &err);
        break;
    default:
        rc = tui_views_originals(a->home, r->session, r->summary_id, v, &err);
        break;
    }
    tui_take(a, a->tab, 0, v, rc, err);
}

/* v on a message: the same message as its verbatim JSON, or back to its text, in place. */
static void tui_toggle_raw(tui_app *a)
{
    tui_view *cur = tui_top(a), *v;
    char *err = NULL;
    if (!cur || !cur->entry_id || !(v = tui_new_view(a))) return;
    int rc = tui_views_message(a->home, cur->session, cur->entry_id, !cur->raw, v, &err);
    if (rc == LC_OK) {
        a->depth[a->tab]--;
        tui_views_free(cur);
        free(cur);
    }
    tui_take(a, a->tab, 0, v, rc, err);
}

static void tui_back(tui_app *a)
{
    if (a->depth[a->tab] <= 1) return;
    tui_view *v = a->stack[a->tab][--a->depth[a->tab]];
    tui_views_free(v);
    free(v);
}

/* Move the cursor (a list) or the first line (a text) by `d`; a list at its end reads its
 * next page first. */
static void tui_move(tui_app *a, long d)
{
    tui_view *v = tui_top(a);
    if (!v) return;
    if (v->kind == TUI_VIEW_TEXT) {
        long top = (long)v->top + d;
        v->top = top < 0 ? 0 : (size_t)top; /* the draw clamps the end */
        return;
    }
    if (!v->n) return;
    long sel = (long)v->sel + d;
    if (sel >= (long)v->n && v->more) {
        char *err = NULL;
        if (tui_views_more(a->home, v, &err) != LC_OK) tui_set_status(a, err ? err : "lcm tui: could not read more");
        free(err);
    }
    if (sel >= (long)v->n) sel = (long)v->n - 1;
    if (sel < 0) sel = 0;
    /* Past the notes (a depth's heading): on in the direction of the move, else back. */
    long step = d < 0 ? -1 : 1, s2 = sel;
    while (s2 >= 0 && s2 < (long)v->n && v->rows[s2].kind == TUI_ROW_INFO) s2 += step;
    if (s2 < 0 || s2 >= (long)v->n)
        for (s2 = sel; s2 >= 0 && s2 < (long)v->n && v->rows[s2].kind == TUI_ROW_INFO;) s2 -= step;
    if (s2 >= 0 && s2 < (long)v->n) sel = s2;
    v->sel = (size_t)sel;
    if (a->tab == TUI_TAB_SESSIONS && a->depth[a->tab] == 1 && v->rows[v->sel].kind == TUI_ROW_SESSION)
        tui_set_session(a, v->rows[v->sel].session);
}

/* The prompt's keys: text, Backspace, Tab (scope), Ctrl-R (mode), Enter, Esc. */
static void tui_prompt_key(tui_app *a, int k, wint_t ch)
{
    if (k == KEY_CODE_YES) {
        if (ch == KEY_BACKSPACE) k = OK, ch = 127;
        else if (ch == KEY_ENTER) k = OK, ch = '\n';
        else return;
    }
    if (ch == TUI_ESC) {
        a->prompting = 0;
    } else if (ch == '\n' || ch == '\r') {
        a->prompting = 0;
        if (a->qlen) tui_search(a);
    } else if (ch == '\t') {
        a->one_session = !a->one_session;
    } else if (ch == TUI_CTRL_R) {
        a->pattern = !a->pattern;
    } else if (ch == 127 || ch == 8) {
        /* Back over one whole UTF-8 character. */
        while (a->qlen > 0 && ((unsigned char)a->query[a->qlen - 1] & 0xC0) == 0x80) a->qlen--;
        if (a->qlen > 0) a->qlen--;
    } else if (ch >= 0x20) {
        char mb[MB_LEN_MAX];
        mbstate_t st;
        memset(&st, 0, sizeof st);
        size_t n = wcrtomb(mb, (wchar_t)ch, &st);
        if (n != (size_t)-1 && a->qlen + n < TUI_QUERY_MAX) {
            memcpy(a->query + a->qlen, mb, n);
            a->qlen += n;
        }
    }
}

static void tui_key(tui_app *a, int k, wint_t ch)
{
    tui_set_status(a, NULL);
    if (a->prompting) {
        tui_prompt_key(a, k, ch);
        return;
    }
    tui_view *v = tui_top(a);
    long page = v ? tui_body_rows(v) - 1 : 1;
    if (page < 1) page = 1;
    if (k == KEY_CODE_YES) {
        switch (ch) {
        case KEY_UP: tui_move(a, -1); break;
        case KEY_DOWN: tui_move(a, 1); break;
        case KEY_PPAGE: tui_move(a, -page); break;
        case KEY_NPAGE: tui_move(a, page); break;
        case KEY_HOME: tui_move(a, -(long)(v ? v->n + v->wrap_n : 0)); break;
        case KEY_END: tui_move(a, (long)(v ? v->n + v->wrap_n : 0)); break;
        case KEY_ENTER: case KEY_RIGHT: tui_enter(a); break;
        case KEY_BACKSPACE: case KEY_LEFT: tui_back(a); break;
        default: break; /* KEY_RESIZE: the next draw is at the new size */
        }
        return;
    }
    switch (ch) {
    case 'q': a->quit = 1; break;
    case '1': case '2': case '3': case '4': tui_switch(a, (int)(ch - '1')); break;
    case '/': a->prompting = 1; a->qlen = 0; break;
    case '?': tui_open_note(a, a->tab, 0, "keys", tui_keys_text); break;
    case 'v': tui_toggle_raw(a); break;
    case 'k': tui_move(a, -1); break;
    case 'j': tui_move(a, 1); break;
    case 'g': tui_move(a, -(long)(v ? v->n + v->wrap_n : 0)); break;
    case 'G': tui_move(a, (long)(v ? v->n + v->wrap_n : 0)); break;
    case ' ': tui_move(a, page); break;
    case '\n': case '\r': tui_enter(a); break;
    case TUI_ESC: case 127: case 8: case 'h': tui_back(a); break;
    default: break;
    }
}

int tui_run(const char *home)
{
    if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
        fprintf(stderr, "lcm tui: needs a terminal on stdin and stdout\n");
        return 1;
    }
    setlocale(LC_ALL, "");
    SCREEN *scr = newterm(NULL, stdout, stdin);
    if (!scr) {
        fprintf(stderr, "lcm tui: cannot drive the terminal (TERM=%s)\n", getenv("TERM") ? getenv("TERM") : "");
        return 1;
    }
    set_term(scr);
    cbreak();
    noecho();
    nonl();
    keypad(stdscr, TRUE);
    set_escdelay(25);
    tui_app a = {.home = home};
    tui_open_sessions(&a);
    /* A terminal that went away reads as an error every time: give up after a run of them. */
    int errs = 0;
    while (!a.quit && errs < 100) {
        tui_draw(&a);
        wint_t ch = 0;
        int k = get_wch(&ch);
        if (k == ERR) {
            errs++;
            continue;
        }
        errs = 0;
        tui_key(&a, k, ch);
    }
    endwin();
    delscreen(scr);
    for (int t = 0; t < TUI_TABS; t++) tui_clear_tab(&a, t);
    free(a.session);
    free(a.summ_session);
    free(a.status);
    return 0;
}
