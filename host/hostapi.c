/*
 * hostapi.c -- the reference host's `ap_host_api` slots: logging and notices, session
 * facts, branch and entry reads, durable custom entries, the model description, the
 * completion service (callable from any thread at once: each call has its own curl handle
 * and reads only what is fixed before plugins load), and the registries of plugin
 * commands and tools.
 */
#include "hostapi.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "llm.h"
#include "tools.h"
#include "util.h"

static const char *level_name(int level)
{
    switch (level) {
    case AP_LEVEL_DEBUG: return "debug";
    case AP_LEVEL_INFO: return "info";
    case AP_LEVEL_WARNING: return "warning";
    default: return "error";
    }
}

static void log_line(host *h, int level, const char *msg)
{
    FILE *out = h->log_fp ? h->log_fp : (h->verbose ? stderr : NULL);
    if (!out)
        return;
    char ts[40];
    session_iso_time(lc_epoch_ms(), ts, sizeof ts);
    pthread_mutex_lock(&h->log_mu);
    fprintf(out, "%s [%s] %s\n", ts, level_name(level), msg ? msg : "");
    fflush(out);
    pthread_mutex_unlock(&h->log_mu);
}

static void api_free(void *p)
{
    free(p);
}

static void api_log(void *ctx, int level, const char *msg)
{
    log_line(ctx, level, msg);
}

static void api_notify(void *ctx, int level, const char *msg)
{
    host *h = ctx;
    pthread_mutex_lock(&h->log_mu);
    fprintf(stderr, "[%s] %s\n", level == AP_LEVEL_DEBUG ? "info" : level_name(level),
            msg ? msg : "");
    if (level >= AP_LEVEL_WARNING) {
        h->n_warnings++;
        if (!h->first_warning && msg) h->first_warning = lc_strdup(msg);
    }
    pthread_mutex_unlock(&h->log_mu);
    log_line(h, level, msg);
}

/* fmt and ap formatted (fmt itself when that fails) to the log only, or also to stderr and
 * the warning count as a plugin's notify does. */
static void host_vemit(host *h, int level, int notify, const char *fmt, va_list ap)
{
    char *msg = NULL;
    if (vasprintf(&msg, fmt, ap) < 0)
        msg = NULL;
    if (notify)
        api_notify(h, level, msg ? msg : fmt);
    else
        log_line(h, level, msg ? msg : fmt);
    free(msg);
}

void host_log(host *h, int level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    host_vemit(h, level, 0, fmt, ap);
    va_end(ap);
}

void host_notify(host *h, int level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    host_vemit(h, level, 1, fmt, ap);
    va_end(ap);
}

static int json_out(cJSON *o, char **out, char **err)
{
    char *s = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    if (!s)
        return lc_errf(err, AP_NOMEM, "out of memory");
    *out = s;
    return AP_OK;
}

/* The checks of a call that answers from the open session into *out (cleared first). */
static int session_out(host *h, const char *call, char **out, char **err)
{
    if (!out)
        return lc_errf(err, AP_INVALID, "%s: out_json is NULL", call);
    *out = NULL;
    if (!h->sess)
        return lc_errf(err, AP_UNSUPPORTED, "no session is open");
    return AP_OK;
}

static int api_session_info(void *ctx, char **out, char **err)
{
    host *h = ctx;
    int rc = session_out(h, "session_info", out, err);
    if (rc)
        return rc;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", session_id(h->sess));
    cJSON_AddStringToObject(o, "sessionFile", session_path_name(h->sess));
    cJSON_AddStringToObject(o, "cwd", h->cwd);
    cJSON_AddStringToObject(o, "agentHome", h->home);
    cJSON_AddStringToObject(o, "tmpDir", h->tmpdir);
    return json_out(o, out, err);
}

/* A call that answers with `json` of the open session (its branch, its entries). */
static int session_json(host *h, const char *call, char *(*json)(const session *), char **out, char **err)
{
    int rc = session_out(h, call, out, err);
    if (rc)
        return rc;
    *out = json(h->sess);
    return *out ? AP_OK : lc_errf(err, AP_NOMEM, "out of memory");
}

static int api_get_branch(void *ctx, char **out, char **err)
{
    return session_json(ctx, "get_branch", session_branch_json, out, err);
}

static int api_get_entry(void *ctx, const char *id, char **out, char **err)
{
    host *h = ctx;
    if (!out || !id)
        return lc_errf(err, AP_INVALID, "get_entry: entry_id and out_json are required");
    *out = NULL;
    if (!h->sess)
        return lc_errf(err, AP_UNSUPPORTED, "no session is open");
    sess_entry *e = session_find(h->sess, id);
    if (!e)
        return lc_errf(err, AP_NOTFOUND, "no entry with id %s", id);
    *out = lc_strndup(e->line, e->line_len);
    return *out ? AP_OK : lc_errf(err, AP_NOMEM, "out of memory");
}

/* Fault seam for contract tests: AGENT_HOST_FAIL_APPEND=<customType>[:<count>] makes the
 * next <count> (default 1) appends of that custom type fail with AP_ERROR "injected
 * failure", so a test can show what a plugin does when a persist is refused (disk full,
 * I/O error) without filling a disk. The count is process-wide; unset, nothing changes. */
static int fail_append_injected(const char *custom_type)
{
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    static int parsed;
    static long left;
    static char type[128];
    int fail = 0;
    pthread_mutex_lock(&mu);
    if (!parsed) {
        parsed = 1;
        const char *spec = getenv("AGENT_HOST_FAIL_APPEND");
        if (spec && *spec) {
            size_t tl = strcspn(spec, ":");
            if (tl < sizeof type) {
                memcpy(type, spec, tl);
                type[tl] = '\0';
                left = spec[tl] == ':' ? strtol(spec + tl + 1, NULL, 10) : 1;
            }
        }
    }
    if (left > 0 && strcmp(type, custom_type) == 0) {
        left--;
        fail = 1;
    }
    pthread_mutex_unlock(&mu);
    return fail;
}

static int api_append_custom(void *ctx, const char *custom_type, const char *data_json,
                             char **out_id, char **err)
{
    host *h = ctx;
    int rc = AP_OK;
    cJSON *entry = NULL, *data = NULL;
    if (out_id)
        *out_id = NULL;
    if (!custom_type || !*custom_type)
        return lc_errf(err, AP_INVALID, "append_custom: customType is empty");
    if (!h->sess)
        return lc_errf(err, AP_UNSUPPORTED, "no session is open");
    if (fail_append_injected(custom_type))
        return lc_errf(err, AP_ERROR, "injected failure");
    data = cJSON_Parse(data_json ? data_json : "null");
    if (!data) {
        rc = lc_errf(err, AP_INVALID, "append_custom: data is not valid JSON");
        goto done;
    }
    entry = cJSON_CreateObject();
    if (!entry) {
        rc = lc_errf(err, AP_NOMEM, "out of memory");
        goto done;
    }
    cJSON_AddStringToObject(entry, "type", "custom");
    cJSON_AddStringToObject(entry, "customType", custom_type);
    cJSON_AddItemToObject(entry, "data", data);
    data = NULL;
    sess_entry *e = NULL;
    if ((rc = session_append(h->sess, entry, 1, &e, err)))
        goto done;
    if (out_id) {
        *out_id = lc_strdup(e->id);
        if (!*out_id)
            rc = lc_errf(err, AP_NOMEM, "out of memory");
    }
done:
    cJSON_Delete(entry);
    cJSON_Delete(data);
    return rc;
}

char *hostapi_model_json(host *h)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddStringToObject(o, "provider", h->model ? "openai-compatible" : "none");
    cJSON_AddStringToObject(o, "id", h->model ? h->model : (h->replay ? "replay" : "none"));
    cJSON_AddNumberToObject(o, "contextWindow", (double)h->window);
    /* Test seam: AGENT_HOST_MODEL_MAX_TOKENS=N reports a model output limit above the
     * per-request --max-tokens, the situation of a host that clamps a request below the
     * model's limit (pi-ai does, from its raw-state estimate), so a contract test can
     * reach a plugin's max_tokens repair. */
    const char *mm = getenv("AGENT_HOST_MODEL_MAX_TOKENS");
    long model_max = mm && *mm ? strtol(mm, NULL, 10) : 0;
    cJSON_AddNumberToObject(o, "maxTokens", (double)(model_max > 0 ? model_max : h->max_tokens));
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

static int api_get_model(void *ctx, char **out, char **err)
{
    if (!out)
        return lc_errf(err, AP_INVALID, "get_model: out_json is NULL");
    *out = hostapi_model_json(ctx);
    return *out ? AP_OK : lc_errf(err, AP_NOMEM, "out of memory");
}

/* "timeoutMs" of a completion request: 0 when absent; -1 when it is not a positive
 * number (refused, rather than silently waiting the default ten minutes). */
static long request_timeout_ms(const cJSON *req)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(req, "timeoutMs");
    if (!t || cJSON_IsNull(t))
        return 0;
    if (!cJSON_IsNumber(t) || !(t->valuedouble >= 1) || t->valuedouble > 86400000.0)
        return -1;
    return (long)t->valuedouble;
}

/* [any thread] No lock: every host field read here (replay, base_url, model, api_key,
 * max_tokens) is set in main before any plugin loads and never written again, llm_complete
 * makes its own curl handle per call, and shutting_down is atomic. So a worker's
 * summary and the host thread's own agent request run side by side. */
static int api_complete(void *ctx, const char *request_json, char **out, char **err)
{
    host *h = ctx;
    int rc = AP_OK;
    cJSON *req = NULL, *payload = NULL;
    char *payload_text = NULL;
    const char **msgs = NULL;
    char **owned = NULL;
    size_t n = 0;
    if (!out)
        return lc_errf(err, AP_INVALID, "complete: out_json is NULL");
    *out = NULL;
    if (h->replay || !h->base_url || !h->model)
        return lc_errf(err, AP_UNSUPPORTED, "this host has no model (replay or no --base-url/--model)");
    if (atomic_load(&h->shutting_down))
        return lc_errf(err, AP_ERROR, "completion failed: the host is shutting down");
    req = cJSON_Parse(request_json ? request_json : "");
    const cJSON *messages = req ? cJSON_GetObjectItemCaseSensitive(req, "messages") : NULL;
    if (!cJSON_IsArray(messages)) {
        rc = lc_errf(err, AP_INVALID, "complete: request needs a \"messages\" array");
        goto done;
    }
    long timeout_ms = request_timeout_ms(req);
    if (timeout_ms < 0) {
        rc = lc_errf(err, AP_INVALID, "complete: \"timeoutMs\" must be a positive number of milliseconds");
        goto done;
    }
    n = (size_t)cJSON_GetArraySize(messages);
    msgs = calloc(n ? n : 1, sizeof *msgs);
    owned = calloc(n ? n : 1, sizeof *owned);
    if (!msgs || !owned) {
        rc = lc_errf(err, AP_NOMEM, "out of memory");
        goto done;
    }
    size_t i = 0;
    const cJSON *m;
    cJSON_ArrayForEach(m, messages) {
        owned[i] = cJSON_PrintUnformatted(m);
        if (!owned[i]) {
            rc = lc_errf(err, AP_NOMEM, "out of memory");
            goto done;
        }
        msgs[i] = owned[i];
        i++;
    }
    const cJSON *sp = cJSON_GetObjectItemCaseSensitive(req, "systemPrompt");
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(req, "maxTokens");
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(req, "model");
    llm_config cfg = {.base_url = h->base_url,
                      .model = cJSON_IsString(model) ? model->valuestring : h->model,
                      .api_key = h->api_key,
                      .timeout_seconds = 0,
                      .timeout_ms = timeout_ms,
                      .abort_flag = &h->shutting_down};
    payload = llm_build_payload(&cfg, cJSON_IsString(sp) ? sp->valuestring : NULL, msgs, n,
                                NULL, cJSON_IsNumber(mt) ? (long)mt->valuedouble : h->max_tokens);
    payload_text = payload ? cJSON_PrintUnformatted(payload) : NULL;
    if (!payload_text) {
        rc = lc_errf(err, AP_NOMEM, "cannot build the request payload");
        goto done;
    }
    char *lerr = NULL;
    int lrc = llm_complete(&cfg, payload_text, out, &lerr);
    if (lrc) {
        rc = lc_errf(err, AP_ERROR, "completion failed: %s", lerr ? lerr : "unknown error");
        free(lerr);
        free(*out);
        *out = NULL;
    }
done:
    if (owned)
        for (size_t k = 0; k < n; k++)
            free(owned[k]);
    free(owned);
    free(msgs);
    free(payload_text);
    cJSON_Delete(payload);
    cJSON_Delete(req);
    return rc;
}

void hostapi_begin_shutdown(host *h)
{
    atomic_store(&h->shutting_down, 1);
}

/* ---- API level 3: complete_async (AGENT_HOST_COMPLETE_ASYNC=1) ---- */

typedef struct async_call {
    host *h;
    char *request;
    void (*done)(void *, int, const char *, const char *);
    void *done_ud;
} async_call;

static void *async_main(void *arg)
{
    async_call *c = arg;
    host *h = c->h;
    char *out = NULL, *err = NULL;
    int rc = api_complete(h, c->request, &out, &err);
    /* Delivered under the lock, so hostapi_drop_async cannot pass while one is in `done`. */
    pthread_mutex_lock(&h->async_mu);
    if (!h->async_dropping) c->done(c->done_ud, rc, rc == AP_OK ? out : NULL, rc == AP_OK ? NULL : err);
    h->async_running--;
    pthread_cond_broadcast(&h->async_cv);
    pthread_mutex_unlock(&h->async_mu);
    free(out);
    free(err);
    free(c->request);
    free(c);
    return NULL;
}

static int api_complete_async(void *ctx, const char *request_json,
                              void (*done)(void *, int, const char *, const char *), void *done_ud,
                              char **err)
{
    host *h = ctx;
    if (!done || !request_json) return lc_errf(err, AP_INVALID, "complete_async: no request or no done");
    if (atomic_load(&h->shutting_down))
        return lc_errf(err, AP_ERROR, "complete_async: the host is shutting down");
    async_call *c = calloc(1, sizeof *c);
    if (!c || !(c->request = strdup(request_json))) {
        free(c);
        return lc_errf(err, AP_NOMEM, "out of memory");
    }
    c->h = h;
    c->done = done;
    c->done_ud = done_ud;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_t t;
    pthread_mutex_lock(&h->async_mu);
    int started = pthread_create(&t, &attr, async_main, c) == 0;
    if (started) h->async_running++;
    pthread_mutex_unlock(&h->async_mu);
    pthread_attr_destroy(&attr);
    if (started) host_log(h, AP_LEVEL_DEBUG, "complete_async: a call started");
    if (!started) {
        free(c->request);
        free(c);
        return lc_errf(err, AP_ERROR, "complete_async: cannot start a thread");
    }
    return AP_OK;
}

void hostapi_drop_async(host *h)
{
    pthread_mutex_lock(&h->async_mu);
    h->async_dropping = 1;
    while (h->async_running > 0) pthread_cond_wait(&h->async_cv, &h->async_mu);
    pthread_mutex_unlock(&h->async_mu);
}

/* ---- API level 2 ---- */

static int api_send_user_message(void *ctx, const char *text, char **err)
{
    host *h = ctx;
    if (!pthread_equal(pthread_self(), h->host_thread))
        return lc_errf(err, AP_INVALID, "send_user_message: call it from the host thread");
    if (!text || !*text)
        return lc_errf(err, AP_INVALID, "send_user_message: the text is empty");
    if (h->replay || !h->base_url || !h->model)
        return lc_errf(err, AP_UNSUPPORTED, "this host cannot run a prompt: it has no model "
                       "(replay, or no --base-url/--model)");
    for (size_t i = 0; i < h->n_queued; i++)
        if (h->queued[i].owner == h->current)
            return lc_errf(err, AP_BUSY, "send_user_message: a message from this plugin is "
                           "already waiting to be delivered");
    struct host_queued *q = lc_grow(h->queued, &h->cap_queued, h->n_queued + 1, sizeof *q);
    if (!q)
        return lc_errf(err, AP_NOMEM, "out of memory");
    h->queued = q;
    char *copy = lc_strdup(text);
    if (!copy)
        return lc_errf(err, AP_NOMEM, "out of memory");
    h->queued[h->n_queued].owner = h->current;
    h->queued[h->n_queued].text = copy;
    h->n_queued++;
    host_log(h, AP_LEVEL_INFO, "plugin '%s' queued a user message (%zu bytes)",
             h->current ? h->current->name : "?", strlen(text));
    return AP_OK;
}

static int api_get_entries(void *ctx, char **out, char **err)
{
    return session_json(ctx, "get_entries", session_entries_json, out, err);
}

char *hostapi_take_queued(host *h, host_plugin **owner)
{
    if (owner)
        *owner = NULL;
    if (h->n_queued == 0)
        return NULL;
    char *text = h->queued[0].text;
    if (owner)
        *owner = h->queued[0].owner;
    memmove(h->queued, h->queued + 1, (h->n_queued - 1) * sizeof *h->queued);
    h->n_queued--;
    return text;
}

void hostapi_drop_queued(host *h, host_plugin *p)
{
    size_t k = 0;
    for (size_t i = 0; i < h->n_queued; i++) {
        if (!p || h->queued[i].owner == p)
            free(h->queued[i].text);
        else
            h->queued[k++] = h->queued[i];
    }
    h->n_queued = k;
}

static int valid_name(const char *name)
{
    if (!name || !*name)
        return 0;
    for (const char *p = name; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '-' || *p == '_' || *p == ':' || *p == '.'))
            return 0;
    return 1;
}

host_command *hostapi_find_command(host *h, const char *name)
{
    for (size_t i = 0; i < h->n_cmds; i++)
        if (strcmp(h->cmds[i].name, name) == 0)
            return &h->cmds[i];
    return NULL;
}

host_tool *hostapi_find_tool(host *h, const char *name)
{
    for (size_t i = 0; i < h->n_tools; i++)
        if (strcmp(h->tools[i].name, name) == 0)
            return &h->tools[i];
    return NULL;
}

/* A registered command's or tool's own strings; its handler, userdata and owner are borrowed. */
static void hostapi_command_free(host_command *c) { LC_FREE(c->name, c->description); }
static void hostapi_tool_free(host_tool *t) { LC_FREE(t->name, t->description, t->parameters_json); }

static int is_builtin_command(const char *name)
{
    static const char *const names[] = {"compact", "tree", "quit", "help", NULL};
    for (size_t i = 0; names[i]; i++)
        if (strcmp(names[i], name) == 0)
            return 1;
    return 0;
}

static int api_register_command(void *ctx, const char *name, const char *description,
                                ap_command_fn handler, void *userdata, char **err)
{
    host *h = ctx;
    if (name && name[0] == '/')
        name++;
    if (!valid_name(name) || !handler)
        return lc_errf(err, AP_INVALID, "register_command: a name [A-Za-z0-9_-:.] and a handler are required");
    if (is_builtin_command(name) || hostapi_find_command(h, name))
        return lc_errf(err, AP_INVALID, "register_command: /%s is already taken", name);
    host_command *cmds = lc_grow(h->cmds, &h->cap_cmds, h->n_cmds + 1, sizeof *cmds);
    if (!cmds)
        return lc_errf(err, AP_NOMEM, "out of memory");
    h->cmds = cmds;
    host_command *c = &h->cmds[h->n_cmds];
    c->name = lc_strdup(name);
    c->description = lc_strdup(description ? description : "");
    if (!c->name || !c->description) {
        hostapi_command_free(c);
        return lc_errf(err, AP_NOMEM, "out of memory");
    }
    c->handler = handler;
    c->userdata = userdata;
    c->owner = h->current;
    h->n_cmds++;
    return AP_OK;
}

static int api_register_tool(void *ctx, const char *name, const char *description,
                             const char *parameters_json, ap_tool_fn handler, void *userdata,
                             char **err)
{
    host *h = ctx;
    if (!valid_name(name) || !handler)
        return lc_errf(err, AP_INVALID, "register_tool: a name and a handler are required");
    cJSON *params = cJSON_Parse(parameters_json ? parameters_json : "");
    int is_obj = cJSON_IsObject(params);
    cJSON_Delete(params);
    if (!is_obj)
        return lc_errf(err, AP_INVALID, "register_tool: %s: parameters are not a JSON object", name);
    if (tools_is_builtin(name) || hostapi_find_tool(h, name))
        return lc_errf(err, AP_INVALID, "register_tool: %s is already taken", name);
    host_tool *tools = lc_grow(h->tools, &h->cap_tools, h->n_tools + 1, sizeof *tools);
    if (!tools)
        return lc_errf(err, AP_NOMEM, "out of memory");
    h->tools = tools;
    host_tool *t = &h->tools[h->n_tools];
    t->name = lc_strdup(name);
    t->description = lc_strdup(description ? description : "");
    t->parameters_json = lc_strdup(parameters_json);
    if (!t->name || !t->description || !t->parameters_json) {
        hostapi_tool_free(t);
        return lc_errf(err, AP_NOMEM, "out of memory");
    }
    t->handler = handler;
    t->userdata = userdata;
    t->owner = h->current;
    h->n_tools++;
    return AP_OK;
}

void hostapi_forget_plugin(host *h, host_plugin *p)
{
    size_t k = 0;
    for (size_t i = 0; i < h->n_cmds; i++) {
        if (h->cmds[i].owner == p)
            hostapi_command_free(&h->cmds[i]);
        else
            h->cmds[k++] = h->cmds[i];
    }
    h->n_cmds = k;
    k = 0;
    for (size_t i = 0; i < h->n_tools; i++) {
        if (h->tools[i].owner == p)
            hostapi_tool_free(&h->tools[i]);
        else
            h->tools[k++] = h->tools[i];
    }
    h->n_tools = k;
    hostapi_drop_queued(h, p);
}

void hostapi_init(host *h)
{
    pthread_mutex_init(&h->log_mu, NULL);
    pthread_mutex_init(&h->async_mu, NULL);
    pthread_cond_init(&h->async_cv, NULL);
    atomic_init(&h->shutting_down, 0);
    ap_host_api *a = &h->api;
    memset(a, 0, sizeof *a);
    a->struct_size = (uint32_t)sizeof *a;
    a->abi_version = AP_ABI_VERSION;
    a->api_level = AP_API_LEVEL;
    a->host_ctx = h;
    a->host_name = "agent-host 0.1.0";
    a->free = api_free;
    a->log = api_log;
    a->notify = api_notify;
    a->session_info = api_session_info;
    a->get_branch = api_get_branch;
    a->get_entry = api_get_entry;
    a->append_custom = api_append_custom;
    a->get_model = api_get_model;
    a->complete = api_complete;
    a->register_command = api_register_command;
    a->register_tool = api_register_tool;
    /* Level 3: complete_async stays NULL unless AGENT_HOST_COMPLETE_ASYNC=1 -- this host's
     * synchronous complete already runs on any thread, so a plugin's worker calls that
     * (AP_HOST_HAS says which it has); the asynchronous one exists to test that path. */
    h->host_thread = pthread_self();
    /* AGENT_HOST_API_LEVEL=1 makes this host a level-1 one (a shorter table, no agent_end),
     * so the plugin's fallbacks for older hosts can be tested against the real binary. */
    const char *lvl = getenv("AGENT_HOST_API_LEVEL");
    if (lvl && strcmp(lvl, "1") == 0) {
        a->struct_size = (uint32_t)offsetof(ap_host_api, send_user_message);
        a->api_level = 1;
        return;
    }
    a->send_user_message = api_send_user_message;
    a->get_entries = api_get_entries;
    const char *as = getenv("AGENT_HOST_COMPLETE_ASYNC");
    if (as && strcmp(as, "1") == 0) a->complete_async = api_complete_async;
}

void hostapi_destroy(host *h)
{
    free(h->first_warning);
    h->first_warning = NULL;
    for (size_t i = 0; i < h->n_cmds; i++)
        hostapi_command_free(&h->cmds[i]);
    free(h->cmds);
    for (size_t i = 0; i < h->n_tools; i++)
        hostapi_tool_free(&h->tools[i]);
    free(h->tools);
    hostapi_drop_queued(h, NULL);
    free(h->queued);
    pthread_mutex_destroy(&h->log_mu);
}
