/*
 * clm_cap.c -- the observation cap (see clm_cap.h).
 */
#include "clm_cap.h"

#include <stdlib.h>
#include <string.h>

#include "message.h"
#include "util.h"

char *clm_cap_message(const char *json, long cap, double head)
{
    char *out = NULL;
    sbuf all = {0}, t = {0};
    cJSON *m = cJSON_Parse(json);
    if (msg_role_of(m) != MSG_ROLE_TOOL_RESULT) goto done;
    cJSON *content = cJSON_GetObjectItemCaseSensitive(m, "content");
    if (!cJSON_IsArray(content)) goto done;
    cJSON *b;
    cJSON_ArrayForEach(b, content) {
        const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(b, "type"));
        const char *text = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(b, "text"));
        if (type && text && strcmp(type, "text") == 0) {
            if (all.len) sb_putc(&all, '\n');
            sb_puts(&all, text);
        }
    }
    if (all.oom || all.len <= (size_t)cap) goto done;
    size_t h = lc_utf8_back(all.p, (size_t)((double)cap * head));
    size_t tail_from = lc_utf8_back(all.p, all.len - ((size_t)cap - h));
    if (tail_from < h) tail_from = h;
    sb_append(&t, all.p, h);
    sb_printf(&t, "\n[... %zu characters omitted by the observation cap of %ld characters per "
                  "tool result ...]\n", tail_from - h, cap);
    sb_append(&t, all.p + tail_from, all.len - tail_from);
    if (t.oom) goto done;
    cJSON *nc = cJSON_CreateArray();
    msg_add_text(nc, t.p);
    cJSON_ArrayForEach(b, content) {
        const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(b, "type"));
        if (!type || strcmp(type, "text") != 0) cJSON_AddItemToArray(nc, cJSON_Duplicate(b, 1));
    }
    cJSON_ReplaceItemInObjectCaseSensitive(m, "content", nc);
    out = cJSON_PrintUnformatted(m);
done:
    sb_free(&all);
    sb_free(&t);
    cJSON_Delete(m);
    return out;
}
