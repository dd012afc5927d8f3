/*
 * clm_skill.c -- the protocol and compact prompt texts (see clm_skill.h).
 */
#include "clm_skill.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "message.h"
#include "redact.h"
#include "sha256.h"
#include "util.h"

static const char clm_skill_protocol_builtin[] =
    "## Live context\n\n"
    "The context of your next request is mirrored in `{{mirror}}`. Edit it with your file "
    "tools; what it says when your turn ends becomes your next context. Keep the first "
    "line and the document nonce; each block starts with a [[CTX_TURN ...]] header; delete "
    "blocks to drop messages, edit their text, reorder them, or add blocks with ids that "
    "start with new-. A notice on the next request says whether the edit was accepted.\n";

static const char clm_skill_compact_builtin[] =
    "[CLM COMPACT] Compact your live context now by editing {{mirror}} (the next request is "
    "~{{current}} tokens against a budget of {{budget}}). Keep the task, the decisions made, "
    "the open items and every exact value you will need again (paths, numbers, names); drop "
    "tool output you have already used, or replace it with the lines that mattered. The "
    "harness removes nothing by itself: what the file says when your turn ends is your next "
    "context.{{instructions}}";

char *clm_skill_read(const char *name)
{
    Dl_info info;
    char *text = NULL;
    if (!dladdr((void *)clm_skill_read, &info) || !info.dli_fname) return NULL;
    char *dir = lc_strdup(info.dli_fname);
    char *slash = dir ? strrchr(dir, '/') : NULL;
    if (!slash) {
        free(dir);
        return NULL;
    }
    *slash = '\0';
    static const char *const ups[] = {"", "/..", "/../.."};
    for (size_t i = 0; i < 3 && !text; i++) {
        char *path = lc_asprintf("%s%s/skills/%s", dir, ups[i], name);
        size_t len;
        if (path && lc_read_file(path, &text, &len, NULL) != LC_OK) text = NULL;
        free(path);
    }
    free(dir);
    return text;
}

char *clm_skill_fill(const char *text, const char *key, const char *value)
{
    sbuf b = {0};
    size_t klen = strlen(key);
    const char *s = text, *hit;
    while ((hit = strstr(s, key))) {
        sb_append(&b, s, (size_t)(hit - s));
        sb_puts(&b, value);
        s = hit + klen;
    }
    sb_puts(&b, s);
    return sb_detach(&b);
}

char *clm_skill_protocol(const char *mirror_path, int *fallback)
{
    char *skill = clm_skill_read("live-context.md");
    *fallback = skill == NULL;
    char *out = clm_skill_fill(skill ? skill : clm_skill_protocol_builtin, "{{mirror}}",
                               mirror_path ? mirror_path : "LIVE_CONTEXT.md");
    free(skill);
    return out;
}

char *clm_skill_compact_prompt(const char *path, int redact, const char *mirror, size_t current,
                               size_t budget, const char *instructions)
{
    char *tmpl = NULL;
    if (path) {
        size_t len;
        if (lc_read_file(path, &tmpl, &len, NULL) != LC_OK) return NULL;
        char *masked = redact_text(tmpl, len, redact, NULL); /* sent to the model */
        free(tmpl);
        if (!(tmpl = masked)) return NULL;
    } else {
        tmpl = lc_strdup(clm_skill_compact_builtin);
    }
    char cur[32], bud[32];
    snprintf(cur, sizeof cur, "%zu", current);
    snprintf(bud, sizeof bud, "%zu", budget);
    char *also = instructions && *instructions ? lc_asprintf("\n\nAlso: %s", instructions)
                                               : lc_strdup("");
    int has_instr = tmpl && strstr(tmpl, "{{instructions}}") != NULL;
    char *a = tmpl ? clm_skill_fill(tmpl, "{{mirror}}", mirror ? mirror : "LIVE_CONTEXT.md") : NULL;
    char *b = a ? clm_skill_fill(a, "{{current}}", cur) : NULL;
    char *c = b ? clm_skill_fill(b, "{{budget}}", bud) : NULL;
    char *d = c ? clm_skill_fill(c, "{{instructions}}", also ? also : "") : NULL;
    char *out = d && !has_instr && also && *also ? lc_asprintf("%s%s", d, also) : lc_strdup(d);
    free(tmpl);
    free(a);
    free(b);
    free(c);
    free(d);
    free(also);
    return out;
}

int clm_skill_steering(const char *path, int redact, char **text, char hash[13], char **err)
{
    size_t len = 0;
    char *e = NULL, hex[65];
    *text = NULL;
    hash[0] = '\0';
    int rc = lc_read_file(path, text, &len, &e);
    if (rc != LC_OK) {
        rc = rc == LC_NOMEM ? LC_NOMEM : LC_INVALID;
        lc_errf(err, rc, "the steering document %s cannot be read: %s", path,
                e ? e : "out of memory");
        free(e);
        *text = NULL;
        return rc;
    }
    sha256_hex(*text, len, hex); /* the hash names the file as the user has it */
    memcpy(hash, hex, 12);
    hash[12] = '\0';
    /* Into the system prompt: outbound text, masked like every other. */
    char *masked = redact_text(*text, len, redact, NULL);
    free(*text);
    *text = masked;
    if (!masked) return lc_errf(err, LC_NOMEM, "out of memory");
    return LC_OK;
}

char *clm_skill_notice(const char *type, const char *text)
{
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "role", "custom");
    cJSON_AddStringToObject(m, "customType", type);
    cJSON_AddStringToObject(m, "content", text);
    cJSON_AddBoolToObject(m, "display", 0);
    cJSON_AddNumberToObject(m, "timestamp", (double)lc_epoch_ms());
    char *s = cJSON_PrintUnformatted(m);
    cJSON_Delete(m);
    return s;
}
