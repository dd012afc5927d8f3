/*
 * bundle.h -- the start-of-session reference bundle (`lcm hook session-start`, and the
 * plugin's system prompt at a new session with sessionBundle on): a short,
 * token-budgeted text (at most BUNDLE_MAX_CHARS) that tells a new session of a project
 * folder how to recall (the lcm_* MCP tools, first) and what the previous session of that
 * folder was doing, quoted as a record and not as instructions: its goal, the CLI's
 * compaction summary, its last requests (the person's words), its newest steps as
 * outcomes, its last conclusion, each line with the entry id that lcm_expand reads. Owns
 * choosing the previous session among the stores under <home>/lcm/ (read-only opens) and
 * packing the lines within the budget. What the home learned (dream.h: the Active
 * contracts a person approved; dream's patterns only with dreamUnapprovedPatterns) rides
 * after the recovery line, within dreamBundleTokens.
 */
#ifndef LC_BUNDLE_H
#define LC_BUNDLE_H

#include <stddef.h>

#define BUNDLE_DEFAULT_TOKENS 1000
#define BUNDLE_MIN_TOKENS 200      /* the recovery line, the header and the partial statement */
#define BUNDLE_MAX_TOKENS 100000
#define BUNDLE_LINE_CHARS 300      /* one request / conclusion, clipped */
#define BUNDLE_MAX_CHARS 10000     /* the whole bundle, whatever the token budget */

/* The bundle for folder `cwd`: *out (malloc'd) is NULL when no other session of that
 * folder is stored (the hook then prints nothing). `exclude_session` (may be NULL) is the
 * session starting now: its own store is not "the previous session". */
int bundle_build(const char *home, const char *cwd, const char *exclude_session, long budget_tokens,
                 char **out, char **err);

/* A handoff document for one session (extractive: its last requests, newest steps and last
 * conclusion with their entry ids, within BUNDLE_HANDOFF_TOKENS), for the next session to
 * start from. `lcm handoff --generate` stores it in the session's meta under
 * BUNDLE_HANDOFF_KEY; the next session's bundle carries it. *out malloc'd. */
#define BUNDLE_HANDOFF_KEY "handoff"
#define BUNDLE_HANDOFF_TOKENS 2000
typedef struct store store;
int bundle_handoff_make(store *s, const char *session_id, char **out, char **err);

/* The session of folder `cwd` with the newest stored message (not exclude_session, which
 * may be NULL): *session_id malloc'd, NULL when the folder has none. */
int bundle_latest_session(const char *home, const char *cwd, const char *exclude_session, char **session_id,
                          char **err);

/* The budget: `cli` when > 0, else `bundleTokens` of <home>/lcm.json, else the default;
 * clamped to [BUNDLE_MIN_TOKENS, BUNDLE_MAX_TOKENS]. */
long bundle_budget(const char *home, long cli);

struct lcm_config;
struct store;
/* What the system prompt of a new session carries for the whole run (a stable prompt keeps
 * the prompt cache), decided once its store `st` is open: nothing unless the store holds
 * nothing yet (a new session of its folder) and cfg sets sessionBundle (the bundle) or
 * dreamSystemPrompt (only the learned lines). *out NULL when there is nothing to carry. */
int bundle_session_prompt(const char *home, struct store *st, const char *session_id,
                          const struct lcm_config *cfg, char **out, char **err);

#endif
