/*
 * plugin.h -- the plugin's shared state and its thin wrappers over the host table.
 *
 * The plugin's files call downward only (tests/plugin_calls.py checks it in make test):
 *   plugin.c      the ABI entry point and the callbacks; `context` goes to the engine in
 *                 one call (engine/request/request.h)
 *   lcm_cmd.c     the /lcm command suite          clm.c   live context's events, /clm
 *   lcm.c         the store, the projection's session side, the recall tools
 *   lcm_summ.c    the summarizer chains and the background worker
 *   lcm_conf.c    the effective lcm.json and the telemetry handle
 *   hostcall.c    every call into the host's table, the status conversion (the bottom)
 * Glue modules turn ABI events into engine calls; nothing here knows SQL or the mirror
 * format. Buffers the plugin returns to the host are malloc'd; plugin->release is free().
 */
#ifndef LC_PLUGIN_H
#define LC_PLUGIN_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "agent_plugin.h"
#include "message.h"
#include "request.h"
#include "zones.h"

struct clm_live;
struct lcm_glue;

typedef struct lc_plugin {
    const ap_host_api *host;
    /* session facts, refreshed at session_start (owned) */
    char *session_id;
    char *session_file;
    char *cwd;
    char *agent_home;
    char *tmp_dir;
    /* the model, refreshed at session_start and before each request */
    char *model;        /* "provider/id" */
    long window;        /* context window in tokens: the host's, or its correction */
    long window_believed;   /* what the host reports */
    zones_window_correction window_corr; /* corrected > 0: a provider error showed the real
                                          * window when the host believed `believed` */
    long max_tokens;
    /* what the last `context` call carried (for status before any store exists) */
    size_t last_n_messages;
    size_t last_est_tokens;
    unsigned long context_calls;
    /* the active branch's messages as counted at session_start (status on resume) */
    msg_branch_count branch;
    /* An agent loop is running: from before_agent_start until agent_end (API level 2).
     * A user message sent while it runs would start a second loop, so /clm-compact waits. */
    int agent_busy;
    int idle_known;     /* the host fires agent_end (level 2 with room for the callback) */
    struct clm_live *clm;
    struct lcm_glue *lcm;
    /* a request's messages as engine structs, kept across requests (plugin.c) */
    store_msg *in;
    size_t in_cap;
} lc_plugin;

/* ---- hostcall.c ---- */

/* The one conversion between the engine's statuses (LC_*) and the ABI's (AP_*). The
 * values agree one for one (asserted in hostcall.c), so these only name the two that do
 * not: LC_CANCELLED is engine-internal and crosses the ABI as AP_ERROR; a host's
 * AP_UNSUPPORTED (it lacks the slot) reaches the engine as `unsupported`. */
int plugin_ap_status(int lc);
int plugin_lc_status(int ap, int unsupported);

/* The window every budget is measured against: the host's (or its correction), else
 * LC_WINDOW_DEFAULT. */
long plugin_window(const lc_plugin *p);

/* Host wrappers: each checks that the host offers the slot (AP_HOST_HAS). */
void plugin_log(lc_plugin *p, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void plugin_notify(lc_plugin *p, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Append a custom entry; `data` is serialized. *out_id (optional) malloc'd. */
int plugin_append_custom(lc_plugin *p, const char *custom_type, const cJSON *data,
                         char **out_id, char **err);
/* The active branch as a parsed cJSON array (caller deletes). */
int plugin_get_branch(lc_plugin *p, cJSON **out, char **err);
/* One entry by id, parsed (caller deletes); AP_NOTFOUND when the host has no such entry,
 * AP_UNSUPPORTED when it lacks the slot. */
int plugin_get_entry(lc_plugin *p, const char *entry_id, cJSON **out, char **err);
/* One entry by id as the host's text (malloc'd), unparsed, so a message can cross byte
 * for byte; AP_NOTFOUND / AP_UNSUPPORTED as plugin_get_entry. */
int plugin_get_entry_text(lc_plugin *p, const char *entry_id, char **out, char **err);
/* Every session entry, all branches, file order, parsed (caller deletes); AP_UNSUPPORTED
 * on a host below API level 2. */
int plugin_get_entries(lc_plugin *p, cJSON **out, char **err);
/* Queue `text` as a user prompt the host runs once idle (API level 2). AP_UNSUPPORTED when
 * the host lacks the slot or cannot run a prompt; AP_BUSY when one is already queued. */
int plugin_send_user_message(lc_plugin *p, const char *text, char **err);
/* The host can start a turn for the plugin (it offers send_user_message). */
int plugin_can_send(const lc_plugin *p);
/* Refresh model facts from the host. */
void plugin_refresh_model(lc_plugin *p);
/* Refresh the session's facts (id, file, cwd, agent home, tmp dir) from the host. */
void plugin_refresh_session(lc_plugin *p);
/* p->window from the host's figure and a recorded correction. */
void plugin_apply_window(lc_plugin *p);
int plugin_register_command(lc_plugin *p, const char *name, const char *description,
                            ap_command_fn fn, char **err);
int plugin_register_tool(lc_plugin *p, const char *name, const char *description,
                         const char *parameters_json, ap_tool_fn fn, char **err);
/* Completion through the host (AP_UNSUPPORTED when the host has no model). Safe from a
 * worker thread. *out_json malloc'd. */
int plugin_complete(lc_plugin *p, const char *request_json, char **out_json, char **err);

/* A tool result {"content":[{"type":"text","text":text}],"isError":is_error} (malloc'd). */
char *plugin_text_result(const char *text, int is_error);

/* ---- the glue modules (clm.c, lcm.c, lcm_cmd.c, lcm_summ.c) ---- */

/* Glue interface: every function returns AP_OK or a failure with *err set. A NULL
 * *out means "no change". Events arrive parsed; results are cJSON the caller frees. */
int clm_glue_init(lc_plugin *p, char **err);
void clm_glue_free(lc_plugin *p);
int clm_glue_session_start(lc_plugin *p, const cJSON *ev, char **err);
int clm_glue_session_shutdown(lc_plugin *p, char **err);
int clm_glue_before_agent_start(lc_plugin *p, const cJSON *ev, cJSON **out, char **err);
int clm_glue_before_provider_request(lc_plugin *p, const cJSON *ev, cJSON **out, char **err);
int clm_glue_turn_end(lc_plugin *p, const cJSON *ev, char **err);
int clm_glue_tool_call(lc_plugin *p, const cJSON *ev, cJSON **out, char **err);
int clm_glue_tool_result(lc_plugin *p, const cJSON *ev, cJSON **out, char **err);
int clm_glue_before_compact(lc_plugin *p, const cJSON *ev, cJSON **out, char **err);
int clm_glue_compact(lc_plugin *p, const cJSON *ev, char **err);
int clm_glue_tree(lc_plugin *p, const cJSON *ev, char **err);
/* agent_end: the host is idle; a /clm-compact waiting for it is sent now (or dropped
 * with a notice when the live context changed meanwhile). */
int clm_glue_agent_end(lc_plugin *p, const cJSON *ev, char **err);

/* Register /lcm with the host (lcm_cmd.c; the command's body is lcm_cmd_run). */
int lcm_cmd_init(lc_plugin *p, char **err);
int lcm_glue_init(lc_plugin *p, char **err);
void lcm_glue_free(lc_plugin *p);
int lcm_glue_session_start(lc_plugin *p, const cJSON *ev, const cJSON *branch, char **err);
/* sessionBundle: append the bundle of the folder's previous session to the system prompt
 * in *out (created when NULL; else the event's prompt is the base). */
void lcm_glue_system_prompt(lc_plugin *p, const cJSON *ev, cJSON **out);
/* The store was busy at session start: a bounded retry (lcm.c), from context and /lcm. */
void lcm_reopen(lc_plugin *p);
/* Open the store now and do what session_start does for LCM (after a repair moved a
 * damaged store aside). LC_OK when open (or already open). */
int lcm_glue_attach(lc_plugin *p);
int lcm_glue_session_shutdown(lc_plugin *p, char **err);
/* LCM's side of one `context` request of n_messages messages, lent to the engine's
 * request call (engine/request/request.h): the store retried when it was busy or offline
 * and due, then s->proj, s->env, s->off and s->hooks filled (s->proj NULL: LCM off). */
void lcm_glue_request(lc_plugin *p, size_t n_messages, request_session *s);
int lcm_glue_turn_end(lc_plugin *p, const cJSON *ev, char **err);
/* Start, on the host thread, the model calls LCM's background summarizer queued for the
 * host's complete_async (lcm_summ.c). The callbacks of an agent turn call it first; cheap
 * when nothing waits. */
void lcm_summ_pump(lc_plugin *p);
int lcm_glue_before_compact(lc_plugin *p, const cJSON *ev, cJSON **out, char **err);
int lcm_glue_compact(lc_plugin *p, const cJSON *ev, char **err);
int lcm_glue_tree(lc_plugin *p, const cJSON *ev, char **err);

#endif
