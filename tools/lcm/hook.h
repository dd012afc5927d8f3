/*
 * hook.h -- `lcm hook <event>`: the runtime behind the Claude Code and Codex hook entries
 * that `lcm hooks install` writes. Each call reads the hook's JSON on stdin (session_id,
 * transcript_path, cwd, hook_event_name) and
 *   stop | subagent-stop | session-end | user-prompt-submit
 *                    imports what is new in the transcript (a remembered byte offset per
 *                    transcript under <home>/lcm/hooks/);
 *   session-start    imports what is new (a resumed session), then prints the reference
 *                    bundle of the folder's previous session as SessionStart context;
 *   precompact       imports what is new and builds the session's DAG with the extractive
 *                    summarizer, detached in the background (one at a time per session).
 * A hook never fails the agent: the exit status is always 0, problems are appended to
 * <home>/lcm/hooks.log, and an alarm bounds the call so a stuck store cannot hang it.
 */
#ifndef LCM_HOOK_H
#define LCM_HOOK_H

#include <stdio.h>

#define HOOK_STDIN_MAX (1u << 20)   /* a hook's JSON input; more is refused unread */
#define HOOK_TIMEOUT_MS 30000       /* a foreground call (LCM_HOOK_TIMEOUT_MS overrides) */
#define HOOK_DAG_DEADLINE_MS 120000 /* the background DAG build (LCM_HOOK_DAG_DEADLINE_MS) */

typedef struct hook_opts {
    const char *home;    /* the agent home: stores in <home>/lcm/ */
    long budget;         /* session-start: bundle tokens (<= 0: lcm.json, else the default) */
} hook_opts;

/* Whether `event` is one hook_run knows. */
int hook_known(const char *event);

/* Run one hook event: read `in`, do the work, print what the agent should see on `out`
 * (session-start only). Always returns 0 (the process exit status). */
int hook_run(const char *event, const hook_opts *o, FILE *in, FILE *out);

#endif
