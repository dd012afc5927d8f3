/*
 * batch.c -- the --tool-batch loop (see batch.h): one JSON call per input line, one JSON
 * answer per output line, every call through agent_call_tool so a batch answers what the
 * same calls as separate `--tool` runs would.
 */
#include "batch.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

/* Parse one input line into the tool name and its arguments as JSON text (malloc'd).
 * `id` (borrowed from *req, may be NULL) is echoed in the answer. */
static int batch_parse(const char *line, cJSON **req, const char **name, char **args_json,
                       char **err)
{
    *req = cJSON_Parse(line);
    if (!cJSON_IsObject(*req))
        return lc_errf(err, LC_INVALID, "a call is a JSON object {\"name\": ..., \"args\": {...}}");
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(*req, "name");
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(*req, "args");
    if (!cJSON_IsString(n) || !*n->valuestring)
        return lc_errf(err, LC_INVALID, "the call names no tool (\"name\" is not a string)");
    if (args && !cJSON_IsObject(args))
        return lc_errf(err, LC_INVALID, "\"args\" of %s is not a JSON object", n->valuestring);
    *name = n->valuestring;
    *args_json = args ? cJSON_PrintUnformatted(args) : lc_strdup("{}");
    if (!*args_json)
        return lc_errf(err, LC_NOMEM, "out of memory");
    return LC_OK;
}

/* One answer line; cJSON escapes every newline, so an answer is exactly one line. */
static int batch_answer(FILE *out, const cJSON *id, const char *name, int is_error,
                        const char *text, const char *error)
{
    int rc = -1;
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return -1;
    if (id)
        cJSON_AddItemToObject(o, "id", cJSON_Duplicate(id, 1));
    if (name)
        cJSON_AddStringToObject(o, "name", name);
    cJSON_AddBoolToObject(o, "is_error", is_error);
    if (text)
        cJSON_AddStringToObject(o, "text", text);
    if (error)
        cJSON_AddStringToObject(o, "error", error);
    char *s = cJSON_PrintUnformatted(o);
    if (s && fputs(s, out) >= 0 && fputc('\n', out) != EOF && fflush(out) == 0)
        rc = 0;
    free(s);
    cJSON_Delete(o);
    return rc;
}

int batch_run(agent *a, FILE *in, FILE *out, batch_after_fn after, void *ud, char **err)
{
    int rc = 0;
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while (!rc && (n = getline(&line, &cap, in)) >= 0) {
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
            line[--n] = '\0';
        if (strspn(line, " \t") == (size_t)n)
            continue;
        cJSON *req = NULL;
        const char *name = NULL;
        char *args_json = NULL, *text = NULL, *cerr = NULL;
        int wrc;
        if (batch_parse(line, &req, &name, &args_json, &cerr)) {
            /* An object's id still names the answer, so the caller knows which call failed. */
            const cJSON *id = cJSON_IsObject(req) ? cJSON_GetObjectItemCaseSensitive(req, "id") : NULL;
            wrc = batch_answer(out, id, NULL, 1, NULL, cerr);
        } else {
            /* A tool's own error comes with its result text, as `--tool` prints both. */
            int trc = agent_call_tool(a, name, args_json, &text, &cerr);
            wrc = batch_answer(out, cJSON_GetObjectItemCaseSensitive(req, "id"), name, trc != 0,
                               text, trc ? (cerr ? cerr : "the tool call failed") : NULL);
            if (after)
                after(a, ud);
        }
        if (wrc)
            rc = lc_errf(err, LC_ERR, "cannot write an answer to the output");
        free(text);
        free(cerr);
        free(args_json);
        cJSON_Delete(req);
    }
    free(line);
    return rc;
}
