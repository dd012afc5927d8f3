/*
 * probe_plugin.c -- a test plugin for the Pi bridge's unit test (tests/e2e/bridge.test.mjs).
 *
 * It exercises the host side the way a real plugin does: its /probe command calls every
 * host function and frees each result with host->free; its context callback answers with
 * a result that drops input 0 and prepends a new message (or, when the system prompt asks
 * for it, an out-of-range index the bridge must reject). Owns nothing beyond a counter.
 */
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

static void probe_release(void *st, void *p) { (void)st; free(p); }

static void probe_release_context(void *st, ap_context_result *r)
{
    (void)st;
    for (size_t i = 0; r && i < r->n_items; i++) free(r->items[i].json);
    if (r) free(r->items);
    free(r);
}

static void probe_unload(void *st) { (void)st; probe_host = NULL; }

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
        host->register_tool(host->host_ctx, "probe_tool", "Echo the call", "{\"type\":\"object\"}", probe_tool, NULL, NULL))
        return snprintf(errbuf, errlen, "probe could not register"), AP_ERROR;
    if (host->register_command(host->host_ctx, "probe", "again", probe_command, NULL, NULL) != AP_INVALID)
        return snprintf(errbuf, errlen, "a taken command name was accepted"), AP_ERROR;
    return AP_OK;
}
