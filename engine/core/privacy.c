/*
 * privacy.c -- what of a session is never stored (privacy.h): the private-span rule over a
 * message's strings, the secret pass at ingest, and the `exclude` folder match.
 */
#include "privacy.h"

#include <fnmatch.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "redact.h"
#include "util.h"

#define PV_OPEN "<private>"
#define PV_CLOSE "</private>"

int privacy_may_hold(const char *json, size_t len)
{
    /* Every message stored passes here whole: eight bytes at a time while none is a 'p'. */
    for (size_t i = 0; i + 7 <= len;) {
        uint64_t w;
        if (i + 8 <= len) {
            memcpy(&w, json + i, 8);
            if (!lc_word_has(w | LC_WORD_ONES * 0x20, 'p')) {
                i += 8;
                continue;
            }
        }
        for (size_t stop = i + 8; i < stop && i + 7 <= len; i++)
            if ((json[i] | 0x20) == 'p' && strncasecmp(json + i, "private", 7) == 0) return 1;
    }
    return 0;
}

/* The first tag at or after `from`: its offset (len when none), *tag_len and *closing. */
static size_t pv_find(const char *s, size_t len, size_t from, size_t *tag_len, int *closing)
{
    for (size_t i = from; i < len; i++) {
        if (s[i] != '<') continue;
        if (len - i >= sizeof PV_OPEN - 1 && strncasecmp(s + i, PV_OPEN, sizeof PV_OPEN - 1) == 0) {
            *tag_len = sizeof PV_OPEN - 1;
            *closing = 0;
            return i;
        }
        if (len - i >= sizeof PV_CLOSE - 1 && strncasecmp(s + i, PV_CLOSE, sizeof PV_CLOSE - 1) == 0) {
            *tag_len = sizeof PV_CLOSE - 1;
            *closing = 1;
            return i;
        }
    }
    return len;
}

char *privacy_mask_text(const char *s, size_t len, int *inside, size_t *n)
{
    sbuf out = {0};
    size_t i = 0, masked = 0;
    int pending = 0; /* a span opened whose mark is not written yet */
    while (i < len) {
        size_t tl = 0;
        int closing = 0;
        size_t at = pv_find(s, len, i, &tl, &closing);
        if (*inside) {
            /* Everything up to the closing tag (or the end) is the span's. */
            while (at < len && !closing) at = pv_find(s, len, at + tl, &tl, &closing);
            sb_puts(&out, PRIVACY_MARK);
            masked++;
            pending = 0;
            if (at >= len) {
                i = len;
                break;
            }
            *inside = 0;
            i = at + tl;
            continue;
        }
        /* A closing tag with no opening one before it in this text is left as it is. */
        while (at < len && closing) at = pv_find(s, len, at + tl, &tl, &closing);
        sb_append(&out, s + i, at - i);
        if (at >= len) break;
        *inside = 1;
        pending = 1;
        i = at + tl;
    }
    if (pending) {
        /* Opened at the very end: nothing after the tag to mask, but the span is open. */
        sb_puts(&out, PRIVACY_MARK);
        masked++;
    }
    if (n) *n = masked;
    if (!out.p && !out.oom) sb_append(&out, "", 0);
    if (out.oom) {
        sb_free(&out);
        return NULL;
    }
    return sb_detach(&out);
}

/* Strings that give a message its shape: never masked, so the stored JSON keeps its type,
 * role, ids and tool names (a message is never dropped, only its private text). */
static int pv_structural(const char *key)
{
    static const char *const keys[] = {"type", "role", "id", "toolCallId", "toolName", "name", "customType",
                                       "model", "provider", "api", "stopReason", "mimeType", "fromId",
                                       "responseId", "call_id", "phase"};
    if (!key) return 0;
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (strcmp(key, keys[i]) == 0) return 1;
    return 0;
}

/* Opaque blobs a secret pass would only slow down (an image's base64, a signature). */
static int pv_opaque(const char *key)
{
    return key && (strcmp(key, "data") == 0 || strcmp(key, "signature") == 0 ||
                   strcmp(key, "thinkingSignature") == 0 || strcmp(key, "encrypted_content") == 0);
}

/* Whether the first tag of the message, in document order, is a closing one. */
static int pv_first_is_close(const cJSON *node, const char *key, int *found)
{
    if (*found) return 0;
    if (cJSON_IsString(node) && node->valuestring && !pv_structural(key)) {
        size_t tl = 0, len = strlen(node->valuestring);
        int closing = 0;
        if (pv_find(node->valuestring, len, 0, &tl, &closing) < len) {
            *found = 1;
            return closing;
        }
        return 0;
    }
    const cJSON *c;
    cJSON_ArrayForEach(c, node) {
        int close = pv_first_is_close(c, cJSON_IsObject(node) ? c->string : NULL, found);
        if (*found) return close;
    }
    return 0;
}

typedef struct pv_walk {
    int inside;
    int redact;
    size_t n_private, n_secrets;
    int oom;
} pv_walk;

static void pv_replace(cJSON *node, char *text)
{
    cJSON_free(node->valuestring);
    node->valuestring = text;
}

/* A member named like a secret with a plain value ("password": "hunter2"), read as the
 * JSON text says it, by redact.h's assignment rule: the value is masked whole. */
static void pv_member(cJSON *node, const char *key, pv_walk *w)
{
    size_t n = 0;
    if (strlen(node->valuestring) > 400 || !strcmp(node->valuestring, REDACT_MASK)) return;
    char *pair = lc_asprintf("\"%s\": \"%s\"", key, node->valuestring);
    char *masked = pair ? redact_text(pair, strlen(pair), 1, &n) : NULL;
    if (!masked) w->oom = 1;
    if (masked && n > 0) {
        char *mask = lc_strdup(REDACT_MASK);
        if (mask) {
            pv_replace(node, mask);
            w->n_secrets++;
        } else {
            w->oom = 1;
        }
    }
    free(pair);
    free(masked);
}

static void pv_string(cJSON *node, const char *key, pv_walk *w)
{
    if (pv_structural(key) || !node->valuestring) return;
    size_t len = strlen(node->valuestring), n = 0;
    if (w->inside || privacy_may_hold(node->valuestring, len)) {
        char *m = privacy_mask_text(node->valuestring, len, &w->inside, &n);
        if (!m) {
            w->oom = 1;
            return;
        }
        if (n) {
            pv_replace(node, m);
            w->n_private += n;
            len = strlen(m);
        } else {
            free(m);
        }
    }
    if (!w->redact || pv_opaque(key)) return;
    char *r = redact_text(node->valuestring, len, 1, &n);
    if (!r) {
        w->oom = 1;
        return;
    }
    if (n) {
        pv_replace(node, r);
        w->n_secrets += n;
    } else {
        free(r);
        if (key) pv_member(node, key, w);
    }
}

static void pv_visit(cJSON *node, const char *key, pv_walk *w)
{
    if (w->oom) return;
    if (cJSON_IsString(node)) {
        pv_string(node, key, w);
        return;
    }
    cJSON *c;
    cJSON_ArrayForEach(c, node) pv_visit(c, cJSON_IsObject(node) ? c->string : NULL, w);
}

int privacy_mask_tree(cJSON *msg, int redact, size_t *n_private, size_t *n_secrets)
{
    pv_walk w = {.redact = redact};
    int found = 0;
    /* A span that opened in an earlier message closes in this one: what precedes its
     * closing tag is private too. */
    w.inside = pv_first_is_close(msg, NULL, &found);
    pv_visit(msg, NULL, &w);
    if (n_private) *n_private = w.n_private;
    if (n_secrets) *n_secrets = w.n_secrets;
    return w.oom ? LC_NOMEM : LC_OK;
}

/* One glob against one folder; "~" at the start is the home folder. -1 out of memory. */
static int pv_glob_match(const char *glob, const char *path)
{
    const char *home = getenv("HOME");
    char *g = NULL;
    int hit;
    if (glob[0] == '~' && (glob[1] == '/' || !glob[1])) {
        if (!home || !*home) return 0;
        g = lc_asprintf("%s%s", home, glob + 1);
    } else {
        g = lc_strdup(glob);
    }
    if (!g) return -1;
    size_t gl = strlen(g);
    while (gl > 1 && g[gl - 1] == '/') g[--gl] = '\0';
    hit = fnmatch(g, path, FNM_PATHNAME) == 0;
    free(g);
    return hit;
}

int privacy_excluded(char *const *globs, size_t n, const char *cwd, const char **which)
{
    if (which) *which = NULL;
    if (!n || !cwd || cwd[0] != '/') return 0;
    char *p = lc_strdup(cwd);
    int hit = 0;
    if (!p) return -1;
    size_t len = strlen(p);
    while (len > 1 && p[len - 1] == '/') p[--len] = '\0';
    /* The folder itself, then each folder above it: a session in a subfolder of an
     * excluded folder is excluded too. */
    for (;;) {
        for (size_t i = 0; i < n && !hit; i++)
            if ((hit = pv_glob_match(globs[i], p)) > 0 && which) *which = globs[i];
        char *slash = strrchr(p, '/');
        if (hit || !slash || slash == p) break;
        *slash = '\0';
    }
    free(p);
    return hit;
}
