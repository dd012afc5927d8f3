/* example_plugin.c -- the smallest useful plugin: built against abi/agent_plugin.h alone,
 * it registers /example and the tool example_echo and otherwise changes nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "agent_plugin.h"
#ifndef EXAMPLE_ABI_VERSION
#define EXAMPLE_ABI_VERSION AP_ABI_VERSION
#endif
static unsigned long example_calls; /* one plugin instance per process: a static suffices */
static int example_context(void *st, const ap_context_event *ev, ap_context_result **out, char **err)
{
    (void)st, (void)ev, (void)err, example_calls++;
    return *out = NULL, AP_OK; /* NULL: send the messages unchanged */
}
static int example_command(void *ud, const char *args, char **out_text, char **err)
{
    (void)ud, (void)args, (void)err;
    char buf[64];
    snprintf(buf, sizeof buf, "example plugin: %lu context calls", example_calls);
    return (*out_text = strdup(buf)) ? AP_OK : AP_NOMEM;
}
/* The arguments' JSON is call_json after "arguments": minus the outer '}'; echo it escaped. */
static int example_echo(void *ud, const char *call_json, char **out, char **err)
{
    (void)ud, (void)err;
    const char *a = strstr(call_json, "\"arguments\"");
    a = a ? strchr(a, ':') + 1 : "{}}";
    size_t n = strlen(a), k;
    while (n > 0 && a[n - 1] != '}') n--;
    char *s = malloc(n * 6 + 48);  /* worst case: every byte a \u00XX escape */
    if (!s) return AP_NOMEM;
    k = (size_t)sprintf(s, "{\"content\":[{\"type\":\"text\",\"text\":\"");
    for (size_t i = 0; i + 1 < n; i++) {
        unsigned char c = (unsigned char)a[i];
        if (c < 0x20) k += (size_t)sprintf(s + k, "\\u%04x", c);
        else if (c == '"' || c == '\\') s[k++] = '\\', s[k++] = (char)c;
        else s[k++] = (char)c;
    }
    return strcpy(s + k, "\"}]}"), *out = s, AP_OK;
}
static void example_release(void *st, void *p) { (void)st, free(p); }
static void example_release_context(void *st, ap_context_result *r) { (void)st, (void)r; }
static void example_unload(void *st) { (void)st; }
AP_EXPORT int agent_plugin_init(const ap_host_api *host, ap_plugin *p, char *errbuf, size_t errlen)
{
    if (host->abi_version != EXAMPLE_ABI_VERSION)
        return snprintf(errbuf, errlen, "example plugin was built for ABI version %d; this host speaks ABI version %u",
                        EXAMPLE_ABI_VERSION, (unsigned)host->abi_version), AP_ABI_MISMATCH;
    /* Field by field: never write past the host's p->struct_size (all of these are level 1). */
    p->abi_version = EXAMPLE_ABI_VERSION, p->api_level = AP_API_LEVEL, p->name = "example";
    p->version = "1.0.0", p->context = example_context, p->release = example_release;
    p->release_context = example_release_context, p->unload = example_unload;
    if (host->register_command(host->host_ctx, "example", "Count context calls", example_command, NULL, NULL) ||
        host->register_tool(host->host_ctx, "example_echo", "Echo the arguments as text",
                            "{\"type\":\"object\"}", example_echo, NULL, NULL))
        return snprintf(errbuf, errlen, "example plugin could not register its command or tool"), AP_ERROR;
    return AP_OK;
}
