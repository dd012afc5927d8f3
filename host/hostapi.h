/*
 * hostapi.h -- the reference host's state and its implementation of `ap_host_api`:
 * the one `host` value every part of agent-host shares (configuration, the session,
 * loaded plugins, the commands and tools plugins registered, log/trace streams), and
 * the function table handed to each plugin.
 */
#ifndef HOST_HOSTAPI_H
#define HOST_HOSTAPI_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#include "agent_plugin.h"
#include "session.h"

typedef struct host_plugin {
    char *name;      /* manifest name, else descriptor name, else file name */
    char *so_path;
    void *dl;
    ap_plugin desc;  /* filled by agent_plugin_init */
    int active;      /* init succeeded; callbacks may be called */
} host_plugin;

typedef struct host_command {
    char *name;      /* without the slash */
    char *description;
    ap_command_fn handler;
    void *userdata;
    host_plugin *owner;
} host_command;

typedef struct host_tool {
    char *name;
    char *description;
    char *parameters_json;
    ap_tool_fn handler;
    void *userdata;
    host_plugin *owner;
} host_tool;

typedef struct host {
    ap_host_api api;
    session *sess;

    /* User prompts plugins queued with send_user_message (API level 2), oldest first; the
     * run loop (main.c) delivers them when the agent is idle. */
    struct host_queued { host_plugin *owner; char *text; } *queued;
    size_t n_queued, cap_queued;
    pthread_t host_thread; /* the thread that calls plugins; host-thread-only slots check it */

    host_plugin **plugins;
    size_t n_plugins;
    host_plugin *current; /* the plugin being called (owner of what it registers) */

    host_command *cmds;
    size_t n_cmds, cap_cmds;
    host_tool *tools;
    size_t n_tools, cap_tools;

    char *home;
    char *cwd;
    char *tmpdir;
    long window;
    long max_tokens;
    long max_turns; /* model turns one prompt may take (--max-turns; 0 = unlimited) */
    const char *base_url;
    const char *model;
    const char *api_key;
    int replay;   /* no model: complete is AP_UNSUPPORTED */
    /* The last request as the plugins shaped it: its estimated size, and the raw context's
     * estimate at that moment. Replay has no provider usage, so its threshold compaction
     * measures this (what was sent, plus what arrived since), as usage would. */
    int sent_valid;
    size_t sent_tokens;
    size_t sent_raw_tokens;

    FILE *log_fp;
    int verbose;
    FILE *trace_fp;
    pthread_mutex_t log_mu;
    /* Warnings and errors plugins told the user (under log_mu): a replay's summary names
     * them, so a run whose store never opened does not print as a normal one. */
    long n_warnings;
    char *first_warning;
    /* Set (hostapi_begin_shutdown) before the plugins' session_shutdown: completions in
     * flight on any thread abort, new ones fail at once ("the host is shutting down"). */
    atomic_int shutting_down;
    /* AGENT_HOST_COMPLETE_ASYNC=1: complete_async on a thread per call (the level-3 path a
     * plugin takes on hosts like Pi, testable here); running calls and whether `done` may
     * still be delivered (not once unloading began). */
    pthread_mutex_t async_mu;
    pthread_cond_t async_cv;
    int async_running, async_dropping;
} host;

/* Fill h->api with the host slots; h->api.host_ctx = h. */
void hostapi_init(host *h);
void hostapi_destroy(host *h);

/* The session is shutting down: abort the plugins' completions in flight and refuse new
 * ones. Called before session_shutdown so a worker joined there is not left waiting. */
void hostapi_begin_shutdown(host *h);

/* Before unloading the plugins: no `done` is delivered from now on; waits for the
 * complete_async threads still running (shutdown has aborted their calls). */
void hostapi_drop_async(host *h);

/* Log / notify from the host itself (same sinks the plugin slots use). */
void host_log(host *h, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void host_notify(host *h, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

host_command *hostapi_find_command(host *h, const char *name);
host_tool *hostapi_find_tool(host *h, const char *name);
/* Drop what a plugin registered (it failed to load or is unloading). */
void hostapi_forget_plugin(host *h, host_plugin *p);

/* The model JSON {provider, id, contextWindow, maxTokens} (malloc'd). */
char *hostapi_model_json(host *h);

/* Take the oldest queued user prompt (malloc'd text, caller frees; NULL when none). */
char *hostapi_take_queued(host *h, host_plugin **owner);
/* Drop the queued prompts of one plugin (it unloads), or all when p is NULL. */
void hostapi_drop_queued(host *h, host_plugin *p);

#endif
