/*
 * tui_views.h -- what each screen of `lcm tui` shows, read from the engine: the home's
 * stores (engine/store/catalog.h), a session's messages and a summary's originals (the store's
 * scan, paged by position), search hits (engine/lcm/recall.h), the DAG by depth and a
 * summary's children (store DAG walks), one message or summary whole, and the stats
 * (store facts). Every store is opened read-only (CATALOG_READ) for one load and closed.
 * Owns the rows and texts of a view and how the next page of one is fetched; drawing and
 * keys are tui.c's.
 */
#ifndef LC_LCM_TUI_VIEWS_H
#define LC_LCM_TUI_VIEWS_H

#include <stddef.h>
#include <stdint.h>

/* What Enter on a row opens. */
typedef enum tui_row_kind {
    TUI_ROW_INFO = 0,      /* nothing: a note */
    TUI_ROW_SESSION,       /* the session's messages */
    TUI_ROW_MESSAGE,       /* the message whole */
    TUI_ROW_SUMMARY,       /* the summary's drill-down */
    TUI_ROW_SUMMARY_TEXT,  /* the summary's text whole (lcm_describe's) */
    TUI_ROW_ORIGINALS      /* every verbatim original under the summary */
} tui_row_kind;

typedef struct tui_row {
    tui_row_kind kind;
    char *line;            /* one line as the list shows it (UTF-8, clipped when drawn) */
    char *session;         /* the store the row belongs to */
    char *entry_id;        /* MESSAGE */
    int64_t summary_id;    /* SUMMARY, SUMMARY_TEXT, ORIGINALS */
} tui_row;

typedef enum tui_view_kind { TUI_VIEW_LIST = 0, TUI_VIEW_TEXT } tui_view_kind;

/* Where the next page of a list comes from when the cursor reaches its end. */
typedef enum tui_source {
    TUI_SRC_NONE = 0,
    TUI_SRC_SCAN,          /* session messages (summary_id 0) or a summary's originals */
    TUI_SRC_SEARCH         /* the next page of hits (offset) */
} tui_source;

typedef struct tui_view {
    tui_view_kind kind;
    char *title;
    char *head;            /* LIST: the column names above the rows, or NULL */
    tui_row *rows;
    size_t n, cap;
    char *text;            /* TEXT */
    size_t sel, top;       /* LIST: cursor and first row shown; TEXT: first line shown */
    /* TEXT: the text cut into screen lines for `wrap_cols` columns (tui.c) */
    size_t *wrap_off, *wrap_len, wrap_n;
    int wrap_cols;
    /* paging */
    tui_source source;
    int more;
    char *session;         /* SCAN, a message: the store; SEARCH: NULL = every session of the home */
    char *entry_id;        /* a message's view: which one (v reads it again as JSON or text) */
    int raw;               /* a message's view: the verbatim JSON is shown */
    int64_t summary_id;    /* SCAN: 0 = the whole session */
    int64_t after_ordinal, after_id;
    char *query;           /* SEARCH */
    int pattern;           /* SEARCH: the query is a PCRE2 pattern */
    size_t offset;         /* SEARCH: hits already shown */
} tui_view;

void tui_views_free(tui_view *v);

/* Each fills a zeroed *out (tui_views_free it whatever the return); on failure *err says why. */
int tui_views_sessions(const char *home, tui_view *out, char **err);
int tui_views_messages(const char *home, const char *session, tui_view *out, char **err);
/* session NULL: every session of the home (recall's cross-session walk). */
int tui_views_search(const char *home, const char *session, const char *query, int pattern,
                     tui_view *out, char **err);
/* raw: the message's verbatim JSON instead of its text. */
int tui_views_message(const char *home, const char *session, const char *entry_id, int raw,
                      tui_view *out, char **err);
int tui_views_summaries(const char *home, const char *session, tui_view *out, char **err);
int tui_views_summary(const char *home, const char *session, int64_t id, tui_view *out,
                      char **err);
int tui_views_summary_text(const char *home, const char *session, int64_t id, tui_view *out,
                           char **err);
int tui_views_originals(const char *home, const char *session, int64_t id, tui_view *out,
                        char **err);
/* session NULL: the home's totals only. */
int tui_views_stats(const char *home, const char *session, tui_view *out, char **err);

/* Append the next page of a list whose `more` is set (nothing when it is not). */
int tui_views_more(const char *home, tui_view *v, char **err);

#endif
