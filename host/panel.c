/*
 * panel.c -- the interactive mode's panels (panel.h): which command lines open one, the
 * model that turns keys into page arguments (`/clm overview ZOOM at K`, `/clm edits N`,
 * `/clm config KEY VALUE`, `/lcm settings KEY VALUE`) and reads back only where a page's
 * selectable rows are (the events under the chart, the accepted revisions, the settings
 * rows), the key decoder, and the terminal: raw mode, the alternate screen, redraws on a
 * key or a resize, and the restore on every way out. host/pi/panel.js's PanelModel is
 * the same model for Pi; keep the two in step.
 */
#include "panel.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "files.h"
#include "util.h"

typedef enum { PANEL_OVERVIEW, PANEL_EDITS, PANEL_DIFF, PANEL_SETTINGS } panel_view;

static const char *const panel_zooms[] = {"fit", "requests", "turns"};
#define PANEL_N_ZOOMS 3

typedef enum {
    PK_NONE, PK_CHAR, PK_ENTER, PK_ESC, PK_BACKSPACE, PK_UP, PK_DOWN, PK_LEFT, PK_RIGHT,
    PK_PGUP, PK_PGDN, PK_CTRL_C
} panel_key;

/* A selectable row: its line in the page, and what it selects. */
typedef struct panel_row {
    size_t line;
    long rev;         /* edits: the revision */
    char key[48];     /* settings: the key and the value shown */
    char value[128];
} panel_row;

typedef struct panel {
    int lcm;                /* the /lcm cockpit, else a /clm page */
    panel_view view, back;  /* back: where Esc returns to from the diff */
    int zoom;
    long at;                /* the selected event, 1-based; 0 = now */
    long rev;               /* the revision the diff shows */
    size_t sel, scroll;
    int follow;             /* keep the selected row in view at the next draw */
    int editing;
    char ekey[48], ebuf[256];
    char note[256];         /* the answer of the last change */
    char *text;             /* the page; lines[] point into it */
    char **lines;
    size_t n_lines;
    long *events;           /* overview: per event, the revision it accepted (0: none) */
    size_t n_events;
    panel_row *rows;
    size_t n_rows;
} panel;

/* ---- which lines open a panel --------------------------------------------------------- */

/* The words of `s` after the command name: up to `max` of them, copied into w[]. */
static size_t panel_words(const char *s, char w[][32], size_t max)
{
    size_t n = 0;
    while (*s) {
        while (*s == ' ' || *s == '\t') s++;
        if (!*s) break;
        size_t l = strcspn(s, " \t");
        if (n < max) snprintf(w[n], 32, "%.*s", (int)(l < 31 ? l : 31), s);
        n++;
        s += l;
    }
    return n;
}

static int panel_is_num(const char *s)
{
    if (!*s) return 0;
    for (; *s; s++)
        if (*s < '0' || *s > '9') return 0;
    return 1;
}

/* Fill *p from the command line; 0 when it is not a panel page. */
static int panel_parse(const char *line, panel *p)
{
    char w[8][32];
    memset(p, 0, sizeof *p);
    while (*line == ' ') line++;
    int lcm = strncmp(line, "/lcm", 4) == 0 && (line[4] == ' ' || line[4] == '\t' || !line[4]);
    int clm = strncmp(line, "/clm", 4) == 0 && (line[4] == ' ' || line[4] == '\t' || !line[4]);
    if (!lcm && !clm) return 0;
    size_t n = panel_words(line + 4, w, 8);
    if (n == 0 || n > 8) return 0;
    p->lcm = lcm;
    if (lcm) {
        p->view = PANEL_SETTINGS;
        return n == 1 && !strcmp(w[0], "settings");
    }
    if (!strcmp(w[0], "settings") || (!strcmp(w[0], "config") && n == 1)) {
        p->view = PANEL_SETTINGS;
        return n == 1;
    }
    if (!strcmp(w[0], "edits")) {
        p->view = PANEL_EDITS;
        if (n >= 2 && panel_is_num(w[1])) {
            p->back = PANEL_EDITS;
            p->view = PANEL_DIFF;
            p->rev = strtol(w[1], NULL, 10);
        }
        return 1;
    }
    if (strcmp(w[0], "overview") != 0) return 0;
    p->view = PANEL_OVERVIEW;
    for (size_t i = 1; i < n; i++) {
        int known = 0;
        for (int z = 0; z < PANEL_N_ZOOMS; z++)
            if (!strcmp(w[i], panel_zooms[z])) p->zoom = z, known = 1;
        if (!strcmp(w[i], "at") && i + 1 < n && panel_is_num(w[i + 1]))
            p->at = strtol(w[++i], NULL, 10), known = 1;
        if (!strcmp(w[i], "now")) p->at = 0, known = 1;
        if (!known) return 0; /* the page itself says what is wrong */
    }
    return 1;
}

int panel_wants(const char *line)
{
    panel p;
    return panel_parse(line, &p);
}

/* ---- the model ------------------------------------------------------------------------- */

/* The command the current view is. */
static char *panel_request(const panel *p)
{
    if (p->lcm) return lc_strdup("/lcm settings");
    switch (p->view) {
    case PANEL_OVERVIEW:
        return p->at ? lc_asprintf("/clm overview %s at %ld", panel_zooms[p->zoom], p->at)
                     : lc_asprintf("/clm overview %s", panel_zooms[p->zoom]);
    case PANEL_DIFF: return lc_asprintf("/clm edits %ld", p->rev);
    case PANEL_EDITS: return lc_strdup("/clm edits");
    default: return lc_strdup("/clm settings");
    }
}

/* "revision N accepted" at s: N, else 0. */
static long panel_accepted(const char *s)
{
    if (strncmp(s, "revision ", 9) != 0) return 0;
    char *end;
    long n = strtol(s + 9, &end, 10);
    return end != s + 9 && strncmp(end, " accepted", 9) == 0 ? n : 0;
}

/* A settings row: 1-3 of ' ' or '*', a key [a-z][A-Za-z0-9]*, two or more spaces, a value. */
static int panel_setting_row(const char *l, panel_row *r)
{
    size_t i = 0;
    while (i < 3 && (l[i] == ' ' || l[i] == '*')) i++;
    if (i == 0 || l[i] < 'a' || l[i] > 'z') return 0;
    size_t k = i;
    while ((l[i] >= 'a' && l[i] <= 'z') || (l[i] >= 'A' && l[i] <= 'Z') || (l[i] >= '0' && l[i] <= '9')) i++;
    size_t klen = i - k, sp = 0;
    while (l[i] == ' ') i++, sp++;
    if (sp < 2 || !l[i]) return 0;
    size_t v = i;
    while (l[i] && l[i] != ' ') i++;
    snprintf(r->key, sizeof r->key, "%.*s", (int)klen, l + k);
    snprintf(r->value, sizeof r->value, "%.*s", (int)(i - v), l + v);
    return 1;
}

static void panel_clear_page(panel *p)
{
    LC_FREE(p->text, p->lines, p->events, p->rows);
    p->text = NULL, p->lines = NULL, p->events = NULL, p->rows = NULL;
    p->n_lines = p->n_events = p->n_rows = 0;
}

/* Take the page text (owned from here) and find its selectable rows. */
static int panel_show(panel *p, char *text)
{
    panel_clear_page(p);
    p->text = text;
    size_t n = 1;
    for (char *c = text; *c; c++) n += *c == '\n';
    p->lines = calloc(n, sizeof *p->lines);
    p->events = calloc(n, sizeof *p->events);
    p->rows = calloc(n, sizeof *p->rows);
    if (!p->lines || !p->events || !p->rows) return LC_NOMEM;
    for (char *l = text; l;) {
        char *nl = strchr(l, '\n');
        if (nl) *nl = '\0';
        if (!nl && !*l) break; /* the page's final newline */
        size_t i = p->n_lines++;
        p->lines[i] = l;
        panel_row r = {.line = i};
        if (p->view == PANEL_OVERVIEW && l[0] == ' ' && l[1] == ' ' && (l[2] == '>' || l[2] == ' ') &&
            l[3] == ' ' && l[4] >= '0' && l[4] <= '9') {
            char *end;
            strtol(l + 4, &end, 10);
            if (end[0] == '.' && end[1] == ' ') p->events[p->n_events++] = panel_accepted(end + 2);
        } else if (p->view == PANEL_EDITS && (r.rev = panel_accepted(l)) > 0) {
            p->rows[p->n_rows++] = r;
        } else if (p->view == PANEL_SETTINGS && panel_setting_row(l, &r)) {
            p->rows[p->n_rows++] = r;
        }
        l = nl ? nl + 1 : NULL;
    }
    if (p->view == PANEL_OVERVIEW && p->at > (long)p->n_events) p->at = 0;
    if (p->sel >= p->n_rows) p->sel = p->n_rows ? p->n_rows - 1 : 0;
    return LC_OK;
}

/* Ask the plugin for the current view (a failure is shown as the page). */
static int panel_load(panel *p, agent *a)
{
    char *cmd = panel_request(p), *out = NULL, *err = NULL;
    if (!cmd) return LC_NOMEM;
    int rc = agent_command(a, cmd, &out, &err);
    char *text = rc ? lc_asprintf("%s: %s", cmd, err ? err : "failed") : out ? out : lc_strdup("");
    if (rc) free(out);
    free(err);
    free(cmd);
    if (!text) return LC_NOMEM;
    return panel_show(p, text);
}

/* Run a change (a setting's new value) and keep the first line of its answer. */
static void panel_apply(panel *p, agent *a)
{
    char *cmd = p->lcm ? lc_asprintf("/lcm settings %s %s", p->ekey, p->ebuf)
                       : lc_asprintf("/clm config %s %s", p->ekey, p->ebuf);
    char *out = NULL, *err = NULL;
    if (cmd && agent_command(a, cmd, &out, &err) == LC_OK)
        snprintf(p->note, sizeof p->note, "%.*s", (int)strcspn(out ? out : "", "\n"), out ? out : "");
    else
        snprintf(p->note, sizeof p->note, "%s", err ? err : "out of memory");
    free(out);
    free(err);
    free(cmd);
}

enum { PANEL_NOTHING, PANEL_DRAW, PANEL_LOAD, PANEL_APPLY, PANEL_CLOSE };

static int panel_go(panel *p, panel_view v)
{
    p->view = v;
    p->scroll = p->sel = 0;
    return PANEL_LOAD;
}

/* The change one key makes. */
static int panel_key_do(panel *p, panel_key k, char ch)
{
    if (p->editing) {
        size_t l = strlen(p->ebuf);
        if (k == PK_ESC) return p->editing = 0, PANEL_DRAW;
        if (k == PK_ENTER) return p->editing = 0, PANEL_APPLY;
        if (k == PK_BACKSPACE) {
            if (l) p->ebuf[l - 1] = '\0';
            return PANEL_DRAW;
        }
        if (k == PK_CHAR && l + 1 < sizeof p->ebuf) {
            p->ebuf[l] = ch;
            p->ebuf[l + 1] = '\0';
            return PANEL_DRAW;
        }
        return PANEL_NOTHING;
    }
    p->note[0] = '\0'; /* the answer of a change shows until the next key */
    if ((k == PK_CHAR && ch == 'q') || k == PK_CTRL_C) return PANEL_CLOSE;
    if (k == PK_ESC) return p->view == PANEL_DIFF ? panel_go(p, p->back) : PANEL_CLOSE;
    if (k == PK_PGUP) return p->scroll = p->scroll > 10 ? p->scroll - 10 : 0, PANEL_DRAW;
    if (k == PK_PGDN) return p->scroll += 10, PANEL_DRAW;
    if ((k == PK_UP || k == PK_DOWN) && p->n_rows) {
        if (k == PK_UP && p->sel > 0) p->sel--;
        if (k == PK_DOWN && p->sel + 1 < p->n_rows) p->sel++;
        p->follow = 1;
        return PANEL_DRAW;
    }
    if (k == PK_UP) return p->scroll = p->scroll ? p->scroll - 1 : 0, PANEL_DRAW;
    if (k == PK_DOWN) return p->scroll++, PANEL_DRAW;
    if (!p->lcm && k == PK_CHAR) {
        panel_view v = ch == 'o' ? PANEL_OVERVIEW : ch == 'e' ? PANEL_EDITS : ch == 's' ? PANEL_SETTINGS : p->view;
        if ((ch == 'o' || ch == 'e' || ch == 's') && v != p->view) return panel_go(p, v);
    }
    if (p->view == PANEL_OVERVIEW) {
        long n = (long)p->n_events;
        if (k == PK_CHAR && ch == 'z') return p->zoom = (p->zoom + 1) % PANEL_N_ZOOMS, PANEL_LOAD;
        if (k == PK_LEFT && n) return p->at = p->at == 0 ? n : p->at > 1 ? p->at - 1 : 1, PANEL_LOAD;
        if (k == PK_RIGHT && p->at) return p->at = p->at >= n ? 0 : p->at + 1, PANEL_LOAD;
        if (k == PK_ENTER) {
            long rev = p->at ? p->events[p->at - 1] : 0;
            if (rev) {
                p->back = PANEL_OVERVIEW;
                p->rev = rev;
                return panel_go(p, PANEL_DIFF);
            }
            snprintf(p->note, sizeof p->note, "Enter shows an accepted edit: select one with <- ->");
            return PANEL_DRAW;
        }
    }
    if (p->view == PANEL_EDITS && k == PK_ENTER && p->n_rows) {
        p->back = PANEL_EDITS;
        p->rev = p->rows[p->sel].rev;
        return panel_go(p, PANEL_DIFF);
    }
    if (p->view == PANEL_SETTINGS && k == PK_ENTER && p->n_rows) {
        const panel_row *r = &p->rows[p->sel];
        snprintf(p->ekey, sizeof p->ekey, "%s", r->key);
        snprintf(p->ebuf, sizeof p->ebuf, "%s", strcmp(r->value, "unset") ? r->value : "");
        p->editing = 1;
        return PANEL_DRAW;
    }
    return PANEL_NOTHING;
}

/* ---- keys ------------------------------------------------------------------------------- */

/* Decode the key at buf[0..n); *used says how many bytes it took. */
static panel_key panel_decode(const unsigned char *buf, size_t n, size_t *used, char *ch)
{
    *used = 1;
    *ch = 0;
    if (buf[0] == '\r' || buf[0] == '\n') return PK_ENTER;
    if (buf[0] == 0x7f || buf[0] == '\b') return PK_BACKSPACE;
    if (buf[0] == 3) return PK_CTRL_C;
    if (buf[0] != 0x1b) {
        if (buf[0] >= ' ' && buf[0] <= '~') return *ch = (char)buf[0], PK_CHAR;
        return PK_NONE;
    }
    if (n == 1 || (buf[1] != '[' && buf[1] != 'O')) return PK_ESC;
    /* CSI / SS3: parameters, then one final byte in @..~ */
    size_t i = 2;
    while (i < n && buf[i] >= 0x20 && buf[i] < 0x40) i++;
    if (i >= n) return *used = n, PK_NONE;
    *used = i + 1;
    switch (buf[i]) {
    case 'A': return PK_UP;
    case 'B': return PK_DOWN;
    case 'C': return PK_RIGHT;
    case 'D': return PK_LEFT;
    case '~':
        if (i == 3 && buf[2] == '5') return PK_PGUP;
        if (i == 3 && buf[2] == '6') return PK_PGDN;
        return PK_NONE;
    default: return PK_NONE;
    }
}

/* ---- the terminal --------------------------------------------------------------------- */

static struct termios panel_saved;
static volatile sig_atomic_t panel_resized;

static void panel_on_winch(int sig)
{
    (void)sig;
    panel_resized = 1;
}

/* SIGTERM or SIGHUP while the panel is up: give the terminal back, then die of the signal
 * as the host would have (only async-signal-safe calls here). */
static void panel_on_fatal(int sig)
{
    static const char leave[] = "\033[?25h\033[?1049l";
    ssize_t w = write(1, leave, sizeof leave - 1);
    (void)w;
    tcsetattr(0, TCSAFLUSH, &panel_saved);
    signal(sig, SIG_DFL);
    raise(sig);
}

/* Put the text width-safe on the line: at most `cols` characters, never a split one. */
static void panel_put(sbuf *b, const char *s, size_t cols)
{
    size_t len = strlen(s);
    sb_append(b, s, files_utf8_prefix(s, len, cols));
    sb_puts(b, "\033[K\r\n");
}

static void panel_draw(panel *p)
{
    struct winsize ws;
    size_t rows = 24, cols = 80;
    if (ioctl(1, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0) rows = ws.ws_row, cols = ws.ws_col;
    size_t h = rows > 8 ? rows - 6 : 3;
    long row = p->n_rows ? (long)p->rows[p->sel].line : -1;
    if (row >= 0 && p->follow) {
        if ((size_t)row < p->scroll) p->scroll = (size_t)row;
        if ((size_t)row >= p->scroll + h) p->scroll = (size_t)row - h + 1;
    }
    p->follow = 0;
    size_t max_scroll = p->n_lines > h ? p->n_lines - h : 0;
    if (p->scroll > max_scroll) p->scroll = max_scroll;
    size_t last = p->scroll + h < p->n_lines ? p->scroll + h : p->n_lines;
    sbuf b = {0};
    char *cmd = panel_request(p), *line = NULL;
    sb_puts(&b, "\033[H");
    line = lc_asprintf("%s -- lines %zu-%zu of %zu", cmd ? cmd : "", p->scroll + 1, last, p->n_lines);
    panel_put(&b, line ? line : "", cols);
    free(line);
    free(cmd);
    char rule[512];
    size_t rl = cols < sizeof rule - 1 ? cols : sizeof rule - 1;
    memset(rule, '-', rl);
    rule[rl] = '\0';
    panel_put(&b, rule, cols);
    for (size_t i = p->scroll; i < last; i++) {
        sb_puts(&b, (long)i == row ? "> " : "  ");
        panel_put(&b, p->lines[i], cols > 2 ? cols - 2 : 0);
    }
    for (size_t i = last - p->scroll; i < h; i++) sb_puts(&b, "\033[K\r\n");
    panel_put(&b, rule, cols);
    if (p->note[0]) panel_put(&b, p->note, cols);
    if (p->editing) {
        line = lc_asprintf("%s = %s_   (Enter applies, Esc cancels)", p->ekey, p->ebuf);
        panel_put(&b, line ? line : "", cols);
        free(line);
    } else {
        panel_put(&b, p->view == PANEL_OVERVIEW ? "z zoom  <- -> events  Enter diff of an edit  e edits  s settings  q close"
                      : p->view == PANEL_EDITS ? "up/down select  Enter side-by-side diff  o overview  s settings  q close"
                      : p->view == PANEL_DIFF ? "PgUp/PgDn scroll  Esc back  q close"
                      : p->lcm ? "up/down select  Enter change the value  q close"
                               : "up/down select  Enter change the value  o overview  e edits  q close", cols);
    }
    sb_puts(&b, "\033[J");
    if (b.p) fwrite(b.p, 1, b.len, stdout);
    fflush(stdout);
    sb_free(&b);
}

int panel_run(agent *a, const char *line, char **err)
{
    panel p;
    struct termios raw;
    struct sigaction sa, old_winch, old_term, old_hup;
    if (!panel_parse(line, &p)) return lc_errf(err, LC_INVALID, "%s is not a panel page", line);
    if (tcgetattr(0, &panel_saved) != 0)
        return lc_errf(err, LC_ERR, "the terminal cannot be read: %s", strerror(errno));
    raw = panel_saved;
    /* Keys arrive one by one and unechoed; Ctrl-C is a key (it closes the panel). Output
     * processing stays on, so "\n" still returns the carriage. */
    raw.c_lflag &= ~(tcflag_t)(ECHO | ICANON | ISIG | IEXTEN);
    raw.c_iflag &= ~(tcflag_t)(IXON | ICRNL | BRKINT | INPCK | ISTRIP);
    raw.c_cc[VMIN] = 1;
    raw.c_cc[VTIME] = 0;
    if (tcsetattr(0, TCSAFLUSH, &raw) != 0)
        return lc_errf(err, LC_ERR, "the terminal cannot be put in raw mode: %s", strerror(errno));
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = panel_on_winch;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGWINCH, &sa, &old_winch);
    sa.sa_handler = panel_on_fatal;
    sigaction(SIGTERM, &sa, &old_term);
    sigaction(SIGHUP, &sa, &old_hup);
    fputs("\033[?1049h\033[?25l\033[2J", stdout);
    int rc = panel_load(&p, a);
    int what = PANEL_DRAW;
    unsigned char buf[64];
    while (rc == LC_OK && what != PANEL_CLOSE) {
        if (what != PANEL_NOTHING) panel_draw(&p);
        what = PANEL_NOTHING;
        struct pollfd pf = {.fd = 0, .events = POLLIN};
        int pr = poll(&pf, 1, -1);
        if (panel_resized) {
            panel_resized = 0;
            what = PANEL_DRAW;
        }
        if (pr < 0) {
            if (errno == EINTR) continue;
            rc = lc_errf(err, LC_ERR, "reading the terminal: %s", strerror(errno));
            break;
        }
        if (pf.revents & (POLLHUP | POLLERR)) break;
        ssize_t n = read(0, buf, sizeof buf);
        if (n <= 0) break;
        for (size_t off = 0, used; off < (size_t)n && what != PANEL_CLOSE; off += used) {
            char ch;
            panel_key k = panel_decode(buf + off, (size_t)n - off, &used, &ch);
            int w = panel_key_do(&p, k, ch);
            if (w > what) what = w;
            /* A change runs before the next key reads the page it changes. */
            if (what == PANEL_APPLY || what == PANEL_LOAD) {
                if (what == PANEL_APPLY) panel_apply(&p, a);
                rc = panel_load(&p, a);
                what = rc == LC_OK ? PANEL_DRAW : PANEL_CLOSE;
            }
        }
    }
    fputs("\033[?25h\033[?1049l", stdout);
    fflush(stdout);
    tcsetattr(0, TCSAFLUSH, &panel_saved);
    sigaction(SIGWINCH, &old_winch, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    sigaction(SIGHUP, &old_hup, NULL);
    panel_clear_page(&p);
    if (rc == LC_NOMEM) return lc_errf(err, LC_NOMEM, "out of memory");
    return rc;
}
