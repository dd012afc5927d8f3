/*
 * cliview.h -- what the `lcm` command says to a person, beside the MCP tools' words: ids
 * a person can type (a session or an entry by a unique prefix, a session's short id), a
 * session's title (its first request in the person's own words, carry.h decides which),
 * sizes in KB/MB, the terminal's width, and the tools' texts reworded for the command line
 * (lcm expand SESSION ENTRY, not lcm_expand({...}); lines cut to the screen). The MCP
 * server never calls these: its tools keep naming themselves.
 */
#ifndef LCM_CLIVIEW_H
#define LCM_CLIVIEW_H

#include <stddef.h>
#include <stdint.h>

#include "catalog.h"

/* The whole session id `arg` names under home: itself when a store has it, else the one
 * session whose id (or id without its agent's "claude-"/"codex-") starts with it; a
 * sub-agent's store only when `arg` reaches into its "--" part. LC_NOTFOUND or LC_INVALID
 * (ambiguous) with a sentence naming the candidates in *err. *full malloc'd. */
int cliview_session(const char *home, const char *arg, char **full, char **err);

/* The whole entry id `arg` names in the session: itself when stored, else the one entry
 * whose id starts with it (LC_INVALID with the candidates when several do); `arg` itself
 * when none does (the reader says it holds no such entry). *full malloc'd. */
int cliview_entry(const char *home, const char *session, const char *arg, char **full, char **err);

/* The shortest form of l->v[i]'s session id that cliview_session takes back as that
 * session alone, at least 8 characters of the id without its agent's prefix (malloc'd). */
char *cliview_short_id(const catalog_list *l, size_t i);

/* The session's title: its first stored request in the person's words, one line (at most
 * `max` bytes); NULL when it has none or its store does not open. */
char *cliview_title(const catalog_entry *e, size_t max);

/* The agent home: `opt` (--home) made absolute (hooks and MCP entries run from any folder),
 * else the one default, ~/.agent, that import, the hooks, mcp and every verb share. */
char *cliview_home(const char *opt);

/* `bytes` as "812 B", "4.0 KB", "6.2 MB", "1.3 GB" into buf. */
void cliview_size(int64_t bytes, char buf[24]);

/* The width to cut lines at: the terminal's columns when stdout is one, else $COLUMNS when
 * set; 0 (no cut) otherwise. */
int cliview_columns(void);

/* The terminal's rows when stdout is one; 0 otherwise (a pipe has no screen to fill). */
int cliview_rows(void);

/* How many bytes of s[0..len) fit in `cols` terminal columns (a wide character takes two);
 * *used (may be NULL) the columns they take. Never splits a character. */
size_t cliview_fit(const char *s, size_t len, size_t cols, size_t *used);

/* A tool's text reworded for the command line: the MCP calls named as `lcm` verbs. With
 * width > 0 (a screen): a grep hit's line "- ENTRY [role] (past session ID, ...): text"
 * becomes two, its session by the short id (of `l`, may be NULL), its text indented below;
 * each line cut to `width` characters ("…" at the cut). Frees `text`; returns the new text
 * (NULL on OOM). */
char *cliview_words(char *text, int width, const catalog_list *l);

#endif
