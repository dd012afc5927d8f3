/*
 * store_derive.c -- the backend-neutral derivation of a message's row (store_derive.h):
 * the NUL-safe parse, the payload, and the recent tool calls' paths.
 */
#include "store_derive.h"

#include <stdlib.h>
#include <string.h>

#include "jsonw.h"
#include "privacy.h"
#include "sha256.h"
#include "util.h"

static const char *store_path_arg(const cJSON *args)
{
    static const char *const keys[] = {"path", "file_path", "filePath", "file", "filename"};
    if (cJSON_IsString(args)) return NULL; /* arguments kept as a JSON string: not parsed here */
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(args, keys[i]);
        if (cJSON_IsString(v) && v->valuestring[0]) return v->valuestring;
    }
    return NULL;
}

/* Remember the paths the assistant's tool calls named, so the result that follows can
 * become a file handle without re-reading the assistant row. */
void store_derive_note_calls(store_call *calls, size_t *next, const cJSON *msg)
{
    const cJSON *content = cJSON_GetObjectItemCaseSensitive(msg, "content");
    const cJSON *b;
    cJSON_ArrayForEach(b, content)
    {
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(b, "type");
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(b, "id");
        if (!cJSON_IsString(type) || strcmp(type->valuestring, "toolCall") != 0 || !cJSON_IsString(id))
            continue;
        const cJSON *args = cJSON_GetObjectItemCaseSensitive(b, "arguments");
        cJSON *parsed = NULL;
        if (cJSON_IsString(args)) args = parsed = cJSON_Parse(args->valuestring);
        const char *path = store_path_arg(args);
        store_call *c = &calls[(*next)++ % STORE_CALL_RING];
        free(c->id);
        free(c->path);
        c->id = lc_strdup(id->valuestring);
        c->path = path ? lc_strdup(path) : NULL;
        cJSON_Delete(parsed);
    }
}

/* The blocks the derived text does not carry (thinking, images, signatures, unknown
 * types or fields), as a JSON array text. */
char *store_derive_payload(const cJSON *msg)
{
    const cJSON *content = cJSON_GetObjectItemCaseSensitive(msg, "content");
    cJSON *arr = cJSON_CreateArray();
    char *out = NULL;
    if (!arr) return NULL;
    const cJSON *b;
    if (cJSON_IsArray(content)) {
        cJSON_ArrayForEach(b, content)
        {
            const cJSON *type = cJSON_GetObjectItemCaseSensitive(b, "type");
            const char *t = cJSON_IsString(type) ? type->valuestring : "";
            int plain_text = strcmp(t, "text") == 0 && cJSON_GetArraySize(b) == 2;
            int call = strcmp(t, "toolCall") == 0;
            if (!plain_text && !call) cJSON_AddItemToArray(arr, cJSON_Duplicate(b, 1));
        }
    }
    out = jsonw_print(arr);
    cJSON_Delete(arr);
    return out;
}

/* Parse a message for its derived text. cJSON ends a string at an escaped NUL, which
 * would hide everything after it from search; the parse sees U+FFFD there instead (the
 * same six bytes), while raw_json keeps the original. */
cJSON *store_derive_parse(const char *json, size_t len)
{
    if (!memmem(json, len, "\\u0000", 6)) return cJSON_ParseWithLength(json, len);
    char *copy = lc_strndup(json, len);
    if (!copy) return NULL;
    for (char *p = copy; (p = memmem(p, len - (size_t)(p - copy), "\\u0000", 6)) != NULL; p += 6) {
        size_t slashes = 0;
        for (char *q = p; q > copy && q[-1] == '\\'; q--) slashes++;
        if (slashes % 2 == 0) memcpy(p, "\\ufffd", 6);
    }
    cJSON *m = cJSON_ParseWithLength(copy, len);
    free(copy);
    return m;
}

int store_derive_call_path(const store_call *calls, const char *call_id, char **path)
{
    *path = NULL;
    for (size_t i = 0; i < STORE_CALL_RING; i++)
        if (calls[i].id && strcmp(calls[i].id, call_id) == 0) {
            *path = calls[i].path ? lc_strdup(calls[i].path) : NULL;
            return 1;
        }
    return 0;
}

void store_derive_calls_free(store_call *calls)
{
    for (size_t i = 0; i < STORE_CALL_RING; i++) {
        free(calls[i].id);
        free(calls[i].path);
        calls[i].id = calls[i].path = NULL;
    }
}

/* The message with what is never stored masked (privacy.h), in row->json and row->msg.
 * Every write of a message passes here, whichever backend and whoever calls. */
static int store_derive_private(store_derived *row, const store_msg *m, int redact, char **err)
{
    size_t n_private = 0, n_secrets = 0;
    cJSON *t = m->msg ? cJSON_Duplicate(m->msg, 1) : store_derive_parse(m->json, m->json_len);
    if (!t)
        return m->msg ? lc_errf(err, LC_NOMEM, "store: out of memory")
                      : lc_errf(err, LC_INVALID, "store: entry %s: message is not valid JSON", m->entry_id);
    if (privacy_mask_tree(t, redact, &n_private, &n_secrets) != LC_OK) {
        cJSON_Delete(t);
        return lc_errf(err, LC_NOMEM, "store: out of memory masking entry %s", m->entry_id);
    }
    if (!n_private && !n_secrets && m->msg) {
        cJSON_Delete(t);
        return LC_OK;
    }
    row->msg = row->own = t;
    if (!n_private && !n_secrets) return LC_OK;
    /* Printed again only when something was masked: every other message keeps its bytes. */
    if (!(row->json_own = cJSON_PrintUnformatted(t))) return lc_errf(err, LC_NOMEM, "store: out of memory");
    row->json = row->json_own;
    row->json_len = strlen(row->json_own);
    return LC_OK;
}

int store_derive_row(store_derived *row, const store_msg *m, int redact, store_call *calls, size_t *next,
                     char **err)
{
    int complete = 1, rc;
    memset(row, 0, sizeof *row);
    row->json = m->json;
    row->json_len = m->json_len;
    if ((redact || privacy_may_hold(m->json, m->json_len)) &&
        (rc = store_derive_private(row, m, redact, err)) != LC_OK)
        return rc;
    if (!row->msg && !(row->msg = m->msg) && !(row->msg = row->own = store_derive_parse(m->json, m->json_len)))
        return lc_errf(err, LC_INVALID, "store: entry %s: message is not valid JSON", m->entry_id);
    row->role = msg_role_of(row->msg);
    size_t tokens = 0;
    if (!(row->text = msg_derive_all(row->msg, &complete, &tokens, &row->index_text, &row->thinking)))
        return lc_errf(err, LC_NOMEM, "store: out of memory");
    row->text_len = strlen(row->text);
    row->chars = files_utf8_count(row->text, row->text_len);
    row->tokens = (int64_t)tokens;
    row->index_len = row->index_text ? strlen(row->index_text) : 0;
    row->thinking_len = row->thinking ? strlen(row->thinking) : 0;
    if (!complete && !(row->payload = store_derive_payload(row->msg)))
        return lc_errf(err, LC_NOMEM, "store: out of memory");
    if (row->role == MSG_ROLE_ASSISTANT) store_derive_note_calls(calls, next, row->msg);
    if (row->role == MSG_ROLE_TOOL_RESULT) {
        row->tool_name = msg_tool_name(row->msg);
        row->call_id = msg_tool_call_id(row->msg);
    }
    /* The message's own timestamp, never the clock: a rebuilt store has identical rows. */
    const cJSON *ts = cJSON_GetObjectItemCaseSensitive(row->msg, "timestamp");
    row->created = cJSON_IsNumber(ts) ? (int64_t)ts->valuedouble : 0;
    return LC_OK;
}

void store_derive_row_free(store_derived *row)
{
    cJSON_Delete(row->own);
    free(row->json_own);
    free(row->text);
    free(row->index_text);
    free(row->thinking);
    free(row->payload);
    memset(row, 0, sizeof *row);
}

int store_derive_handle(store_derived_handle *h, const char *path, const char *text, size_t len, char **err)
{
    h->kind = path ? files_classify(path, text, len) : FILES_KIND_LARGE_INLINE;
    h->preview = files_preview(text, len);
    h->summary = files_explore(path, text, len, h->kind);
    if (!h->preview || !h->summary) return lc_errf(err, LC_NOMEM, "store: out of memory");
    sha256_hex(text, len, h->cid);
    return LC_OK;
}

void store_derive_handle_free(store_derived_handle *h)
{
    free(h->preview);
    free(h->summary);
    h->preview = h->summary = NULL;
}
