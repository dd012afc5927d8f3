/*
 * probe_plugin.c -- a test plugin for the Pi bridge's unit test (tests/e2e/bridge.test.mjs).
 *
 * It exercises the host side the way a real plugin does: its /probe command calls every
 * host function and frees each result with host->free; its context callback answers with
 * a result that drops input 0 and prepends a new message (or, when the system prompt asks
 * for it, an out-of-range index the bridge must reject). /probe-async starts a thread of
 * its own that calls complete_async, as a plugin's worker does, and /probe-async-result
 * reports what the start returned and every `done` the host made; /probe-complete calls the
 * blocking complete. Owns a counter and that one thread.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_plugin.h"

static const ap_host_api *probe_host;
static unsigned long probe_contexts;

static char *probe_dup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

/* Calls one host slot and appends "name=rc:<json>" to buf; the host's buffers go back
 * through host->free. */
static void probe_slot(char *buf, size_t cap, const char *name, int rc, char *out, char *err)
{
    size_t used = strlen(buf);
    snprintf(buf + used, cap - used, "%s=%d:%s\n", name, rc, out ? out : (err ? err : "-"));
    probe_host->free(out);
    probe_host->free(err);
}

static int probe_command(void *ud, const char *args, char **out_text, char **err)
{
    (void)ud, (void)err;
    char buf[16384] = "";
    char *out = NULL, *e = NULL, *id = NULL;
    void *ctx = probe_host->host_ctx;
    int rc = probe_host->session_info(ctx, &out, &e);
    probe_slot(buf, sizeof buf, "session_info", rc, out, e);
    out = e = NULL;
    rc = probe_host->get_model(ctx, &out, &e);
    probe_slot(buf, sizeof buf, "get_model", rc, out, e);
    out = e = NULL;
    rc = probe_host->append_custom(ctx, "probe-state", args[0] ? args : "{\"n\":1}", &id, &e);
    probe_slot(buf, sizeof buf, "append_custom", rc, id ? probe_dup(id) : NULL, e);
    e = NULL;
    rc = probe_host->get_entry(ctx, id ? id : "none", &out, &e);
    probe_host->free(id);
    probe_slot(buf, sizeof buf, "get_entry", rc, out, e);
    out = e = NULL;
    rc = probe_host->get_entry(ctx, "ffffffff", &out, &e);
    probe_slot(buf, sizeof buf, "get_missing", rc, out, e);
    out = e = NULL;
    rc = probe_host->get_branch(ctx, &out, &e);
    probe_slot(buf, sizeof buf, "get_branch", rc, out, e);
    out = e = NULL;
    if (AP_HOST_HAS(probe_host, get_entries)) {
        rc = probe_host->get_entries(ctx, &out, &e);
        probe_slot(buf, sizeof buf, "get_entries", rc, out, e);
    }
    probe_host->log(ctx, AP_LEVEL_INFO, "probe: logged");
    *out_text = probe_dup(buf);
    return AP_OK;
}

static int probe_tool(void *ud, const char *call_json, char **out_json, char **err)
{
    (void)ud;
    if (strstr(call_json, "\"fail\":true")) {
        *err = probe_dup("probe tool failed on purpose");
        return AP_ERROR;
    }
    size_t n = strlen(call_json) * 2 + 128;
    char *r = malloc(n);
    if (!r) return AP_NOMEM;
    /* call_json is JSON already; nest it as details so the test can read it back. */
    snprintf(r, n, "{\"content\":[{\"type\":\"text\",\"text\":\"probed\"}],\"details\":%s}", call_json);
    *out_json = r;
    return AP_OK;
}

static int probe_context(void *st, const ap_context_event *ev, ap_context_result **out, char **err)
{
    (void)st, (void)err;
    probe_contexts++;
    *out = NULL;
    if (ev->n_messages < 2) return AP_OK;
    int bad = ev->system_prompt && strstr(ev->system_prompt, "PROBE-BAD-INDEX");
    ap_context_result *r = calloc(1, sizeof *r);
    if (!r) return AP_NOMEM;
    r->n_items = ev->n_messages;
    r->items = calloc(r->n_items, sizeof *r->items);
    if (!r->items) { free(r); return AP_NOMEM; }
    char note[256];
    snprintf(note, sizeof note,
             "{\"role\":\"user\",\"content\":\"[probe replaced %s; %zu in]\",\"timestamp\":1}",
             ev->messages[0].entry_id ? ev->messages[0].entry_id : "no-entry", ev->n_messages);
    r->items[0].input_index = -1;
    r->items[0].json = probe_dup(note);
    for (size_t i = 1; i < ev->n_messages; i++) r->items[i].input_index = (int64_t)i;
    if (bad) r->items[1].input_index = (int64_t)ev->n_messages + 5;
    *out = r;
    return AP_OK;
}

static int probe_event(void *st, const char *json, char **out_json, char **err)
{
    (void)st, (void)err;
    *out_json = NULL;
    if (strstr(json, "PROBE-REWRITE")) *out_json = probe_dup("{\"systemPrompt\":\"rewritten by probe\"}");
    if (strstr(json, "PROBE-FAIL")) {
        *err = probe_dup("probe event failed on purpose");
        return AP_ERROR;
    }
    return AP_OK;
}

static int probe_count(void *ud, const char *args, char **out_text, char **err)
{
    (void)ud, (void)args, (void)err;
    char buf[64];
    snprintf(buf, sizeof buf, "probe: %lu context calls", probe_contexts);
    *out_text = probe_dup(buf);
    return AP_OK;
}

/* agent_end's payload, kept for the probe-last-end command (the bridge's status mapping). */
static char probe_last_end[128];

static int probe_agent_end(void *st, const char *json, char **out_json, char **err)
{
    (void)st, (void)err;
    *out_json = NULL;
    snprintf(probe_last_end, sizeof probe_last_end, "%s", json);
    return AP_OK;
}

static int probe_last_end_cmd(void *ud, const char *args, char **out_text, char **err)
{
    (void)ud, (void)args, (void)err;
    *out_text = probe_dup(probe_last_end[0] ? probe_last_end : "(none)");
    return AP_OK;
}

/* The complete_async probe. Its record outlives unload on purpose: the bridge test reads
 * probe_async_calls() after unload to prove that no `done` came then. */
static const char PROBE_ASYNC_DEFAULT[] =
    "{\"messages\":[{\"role\":\"user\",\"content\":\"PROBE-ASYNC-PING\",\"timestamp\":1}]}";
static const char PROBE_COMPLETE_DEFAULT[] =
    "{\"messages\":[{\"role\":\"user\",\"content\":\"PROBE-SYNC-PING\",\"timestamp\":1}]}";
static pthread_mutex_t probe_mu = PTHREAD_MUTEX_INITIALIZER;
static struct probe_async {
    pthread_t thread;
    int joinable;
    char *request;
    int started;            /* complete_async has returned on the probe's thread */
    int start_rc;
    char start_err[512];
    int calls;              /* how many times done was called: the ABI says exactly once */
    int status;
    int ud_ok;              /* done got back the done_ud complete_async was given */
    char *out, *err;
} pa;

static void probe_done(void *ud, int status, const char *out_json, const char *err)
{
    pthread_mutex_lock(&probe_mu);
    pa.calls++;
    pa.status = status;
    pa.ud_ok = ud == &pa;
    free(pa.out), free(pa.err);
    pa.out = out_json ? probe_dup(out_json) : NULL;
    pa.err = err ? probe_dup(err) : NULL;
    pthread_mutex_unlock(&probe_mu);
}

static void *probe_async_thread(void *arg)
{
    (void)arg;
    char *err = NULL;
    int rc = probe_host->complete_async(probe_host->host_ctx, pa.request, probe_done, &pa, &err);
    pthread_mutex_lock(&probe_mu);
    pa.start_rc = rc;
    snprintf(pa.start_err, sizeof pa.start_err, "%s", err ? err : "-");
    pa.started = 1;
    pthread_mutex_unlock(&probe_mu);
    probe_host->free(err);
    return NULL;
}

/* Joins the last probe thread. Only once its complete_async has returned: until then it
 * waits for the host thread, which this runs on. */
static int probe_async_join(void)
{
    pthread_mutex_lock(&probe_mu);
    int busy = pa.joinable && !pa.started;
    pthread_mutex_unlock(&probe_mu);
    if (busy) return AP_BUSY;
    if (pa.joinable) pthread_join(pa.thread, NULL);
    pa.joinable = 0;
    return AP_OK;
}

static int probe_async(void *ud, const char *args, char **out_text, char **err)
{
    (void)ud;
    if (!AP_HOST_HAS(probe_host, complete_async)) {
        *err = probe_dup("the host has no complete_async");
        return AP_UNSUPPORTED;
    }
    if (probe_async_join() != AP_OK) {
        *err = probe_dup("the last complete_async has not returned yet");
        return AP_BUSY;
    }
    pthread_mutex_lock(&probe_mu);
    free(pa.request), free(pa.out), free(pa.err);
    memset(&pa, 0, sizeof pa);
    pa.request = probe_dup(args[0] ? args : PROBE_ASYNC_DEFAULT);
    pthread_mutex_unlock(&probe_mu);
    if (!pa.request || pthread_create(&pa.thread, NULL, probe_async_thread, NULL) != 0) {
        *err = probe_dup("could not start the probe thread");
        return AP_ERROR;
    }
    pa.joinable = 1;
    *out_text = probe_dup("probe-async: started");
    return AP_OK;
}

static int probe_async_result(void *ud, const char *args, char **out_text, char **err)
{
    (void)ud, (void)args, (void)err;
    pthread_mutex_lock(&probe_mu);
    size_t n = 1024 + strlen(pa.start_err) + (pa.out ? strlen(pa.out) : 0) + (pa.err ? strlen(pa.err) : 0);
    char *r = malloc(n);
    if (r)
        snprintf(r, n, "started=%d\nstart=%d:%s\ncalls=%d\nstatus=%d\nud=%s\nout=%s\nerr=%s\n",
                 pa.started, pa.start_rc, pa.start_err, pa.calls, pa.status,
                 pa.ud_ok ? "ok" : "-", pa.out ? pa.out : "-", pa.err ? pa.err : "-");
    pthread_mutex_unlock(&probe_mu);
    *out_text = r;
    return r ? AP_OK : AP_NOMEM;
}

AP_EXPORT int probe_async_calls(void)
{
    pthread_mutex_lock(&probe_mu);
    int n = pa.calls;
    pthread_mutex_unlock(&probe_mu);
    return n;
}

/* The blocking complete, on the host thread (a level-2 plugin's call). */
static int probe_complete(void *ud, const char *args, char **out_text, char **err)
{
    (void)ud, (void)err;
    char buf[16384] = "";
    char *out = NULL, *e = NULL;
    int rc = probe_host->complete(probe_host->host_ctx, args[0] ? args : PROBE_COMPLETE_DEFAULT, &out, &e);
    probe_slot(buf, sizeof buf, "complete", rc, out, e);
    *out_text = probe_dup(buf);
    return AP_OK;
}

static void probe_release(void *st, void *p) { (void)st; free(p); }

static void probe_release_context(void *st, ap_context_result *r)
{
    (void)st;
    for (size_t i = 0; r && i < r->n_items; i++) free(r->items[i].json);
    if (r) free(r->items);
    free(r);
}

static void probe_unload(void *st)
{
    (void)st;
    if (probe_async_join() != AP_OK)
        fprintf(stderr, "probe: unloaded while complete_async had not returned; the thread is left\n");
    probe_host = NULL;
}

AP_EXPORT int agent_plugin_init(const ap_host_api *host, ap_plugin *p, char *errbuf, size_t errlen)
{
    if (host->abi_version != AP_ABI_VERSION)
        return snprintf(errbuf, errlen, "probe plugin speaks ABI %d, host %u", AP_ABI_VERSION,
                        (unsigned)host->abi_version), AP_ABI_MISMATCH;
    if (host->struct_size != sizeof(ap_host_api) || p->struct_size != sizeof(ap_plugin))
        return snprintf(errbuf, errlen, "struct sizes differ: host %u/%zu plugin %u/%zu",
                        host->struct_size, sizeof(ap_host_api), p->struct_size,
                        sizeof(ap_plugin)), AP_ABI_MISMATCH;
    probe_host = host;
    probe_contexts = 0;
    p->abi_version = AP_ABI_VERSION, p->api_level = AP_API_LEVEL;
    p->name = "probe", p->version = "1.0.0";
    p->release = probe_release, p->release_context = probe_release_context;
    p->unload = probe_unload, p->context = probe_context;
    p->before_agent_start = probe_event, p->turn_end = probe_event;
    p->agent_end = probe_agent_end;
    probe_last_end[0] = '\0';
    if (host->register_command(host->host_ctx, "probe", "Call every host function", probe_command, NULL, NULL) ||
        host->register_command(host->host_ctx, "probe-count", "Count context calls", probe_count, NULL, NULL) ||
        host->register_command(host->host_ctx, "probe-last-end", "The last agent_end payload", probe_last_end_cmd, NULL, NULL) ||
        host->register_command(host->host_ctx, "probe-async", "complete_async from a thread", probe_async, NULL, NULL) ||
        host->register_command(host->host_ctx, "probe-async-result", "What complete_async's done got", probe_async_result, NULL, NULL) ||
        host->register_command(host->host_ctx, "probe-complete", "The blocking complete", probe_complete, NULL, NULL) ||
        host->register_tool(host->host_ctx, "probe_tool", "Echo the call", "{\"type\":\"object\"}", probe_tool, NULL, NULL))
        return snprintf(errbuf, errlen, "probe could not register"), AP_ERROR;
    if (host->register_command(host->host_ctx, "probe", "again", probe_command, NULL, NULL) != AP_INVALID)
        return snprintf(errbuf, errlen, "a taken command name was accepted"), AP_ERROR;
    return AP_OK;
}
