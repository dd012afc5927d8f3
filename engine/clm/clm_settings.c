/*
 * clm_settings.c -- the live-context settings table, parsing and stored overrides (see
 * clm_settings.h).
 */
#include "clm_settings.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>

#include "util.h"

static const clm_setting_def clm_defs[CLM_N_SETTINGS] = {
    {"budget", "Budget", "LC_CLM_BUDGET", "window",
     "Token budget of a request: reminders and the overflow guard measure against it. "
     "\"window\" uses the model's context window."},
    {"reserve", "Reserve", "LC_CLM_RESERVE", "2048",
     "Tokens kept free for the answer; the last reminder fires at budget - reserve."},
    {"reminders", "Budget reminders", "LC_CLM_REMINDERS", "on",
     "Tell the model when the next request crosses 50%, 75%, 90% of the budget and "
     "budget - reserve (once per tier)."},
    {"overflowGuard", "Overflow guard", "LC_CLM_OVERFLOW_GUARD", "on",
     "Withhold the oldest tool results after the last accepted edit, behind notes naming a "
     "file with the full text, while the request is over the limit."},
    {"piCompaction", "Host compaction", "LC_CLM_PI_COMPACTION", "auto",
     "auto: cancel the host's threshold compactions while the guard enforces the budget "
     "over an accepted revision; on: never cancel; off: cancel every automatic one. A "
     "manual /compact is never cancelled."},
    {"observationCap", "Observation cap", "LC_CLM_OBSERVATION_CAP", "off",
     "Characters a tool result may take in the context (off, N, or N:HEAD where HEAD is the "
     "fraction kept from the start, default 0.8); the rest is cut with a marker."},
    {"steering", "Steering document", "LC_CLM_STEERING", "none",
     "A markdown brief appended to the system prompt after the protocol (none, or a path)."},
    {"oneToolPerTurn", "One tool per turn", "LC_CLM_ONE_TOOL_PER_TURN", "off",
     "Block every tool call after the first in an assistant turn."},
    {"sizeTrailer", "Size trailer", "LC_CLM_SIZE_TRAILER", "off",
     "Append [context: ~N of B tokens after this result] to every tool result."},
    {"compactPrompt", "Compact prompt", "LC_CLM_COMPACT_PROMPT", "default",
     "The /clm-compact prompt: default (built in), or a markdown template path using "
     "{{mirror}}, {{current}}, {{budget}} and {{instructions}}."},
    {"editingMode", "Editing mode", "LC_CLM_EDITING_MODE", "clm",
     "clm: any valid edit is accepted; conservative: an edit must shrink the context, keep "
     "source order and leave the first and latest user turns alone."},
};

const clm_setting_def *clm_setting_def_of(int id)
{
    return id >= 0 && id < CLM_N_SETTINGS ? &clm_defs[id] : NULL;
}

int clm_setting_find(const char *key)
{
    if (!key) return -1;
    for (int i = 0; i < CLM_N_SETTINGS; i++)
        if (strcasecmp(clm_defs[i].key, key) == 0) return i;
    return -1;
}

static char *trimmed(const char *t)
{
    while (*t && isspace((unsigned char)*t)) t++;
    size_t n = strlen(t);
    while (n && isspace((unsigned char)t[n - 1])) n--;
    return lc_strndup(t, n);
}

/* A positive token count, with an optional k suffix (32k = 32000). */
static int parse_tokens(const char *t, long *out)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(t, &end);
    if (end == t || errno) return 0;
    if (*end == 'k' || *end == 'K') { v *= 1000; end++; }
    if (*end || v < 0 || v > 1e9 || v != (double)(long)v) return 0;
    *out = (long)v;
    return 1;
}

static int parse_bool(const char *t, int *out)
{
    static const char *const yes[] = {"on", "true", "1", "yes"}, *const no[] = {"off", "false", "0", "no"};
    for (size_t i = 0; i < 4; i++) {
        if (strcasecmp(t, yes[i]) == 0) return *out = 1, 1;
        if (strcasecmp(t, no[i]) == 0) return *out = 0, 1;
    }
    return 0;
}

/* "off" | N | N:F with 0 < F < 1. */
static int parse_cap(const char *t, long *cap, double *head)
{
    *cap = 0;
    *head = 0.8;
    if (strcasecmp(t, "off") == 0 || strcmp(t, "0") == 0) return 1;
    char *end = NULL;
    errno = 0;
    long n = strtol(t, &end, 10);
    if (end == t || errno || n < 100) return 0;
    if (*end == ':') {
        char *e2 = NULL;
        double f = strtod(end + 1, &e2);
        if (e2 == end + 1 || *e2 || !(f > 0 && f < 1)) return 0;
        *head = f;
    } else if (*end) {
        return 0;
    }
    *cap = n;
    return 1;
}

int clm_setting_normalize(int id, const char *text, char **canon, char **err)
{
    int rc = LC_OK;
    char *t = trimmed(text ? text : "");
    long n;
    int b;
    double f;
    *canon = NULL;
    if (!t) return lc_errf(err, LC_NOMEM, "out of memory");
    switch (id) {
    case CLM_SET_BUDGET:
        if (strcasecmp(t, "window") == 0 || strcasecmp(t, "default") == 0)
            *canon = lc_strdup("window");
        else if (parse_tokens(t, &n) && n >= 1000)
            *canon = lc_asprintf("%ld", n);
        else
            rc = lc_errf(err, LC_INVALID, "budget must be a token count of at least 1000 "
                                          "(e.g. 32000 or 32k) or \"window\"; got '%s'", t);
        break;
    case CLM_SET_RESERVE:
        if (parse_tokens(t, &n) && n <= 1000000)
            *canon = lc_asprintf("%ld", n);
        else
            rc = lc_errf(err, LC_INVALID, "reserve must be a token count (e.g. 2048); got '%s'", t);
        break;
    case CLM_SET_REMINDERS:
    case CLM_SET_GUARD:
    case CLM_SET_ONE_TOOL:
    case CLM_SET_SIZE_TRAILER:
        if (parse_bool(t, &b))
            *canon = lc_strdup(b ? "on" : "off");
        else
            rc = lc_errf(err, LC_INVALID, "%s must be on or off; got '%s'", clm_defs[id].key, t);
        break;
    case CLM_SET_HOST_COMPACTION:
        if (strcasecmp(t, "auto") == 0 || strcasecmp(t, "on") == 0 || strcasecmp(t, "off") == 0) {
            *canon = lc_strdup(t);
            for (char *c = *canon; c && *c; c++) *c = (char)tolower((unsigned char)*c);
        } else {
            rc = lc_errf(err, LC_INVALID, "piCompaction must be auto, on or off; got '%s'", t);
        }
        break;
    case CLM_SET_OBS_CAP:
        if (!parse_cap(t, &n, &f))
            rc = lc_errf(err, LC_INVALID, "observationCap must be off, a character count of at "
                                          "least 100, or COUNT:HEAD with 0 < HEAD < 1 (e.g. "
                                          "10000:0.5); got '%s'", t);
        else if (n == 0)
            *canon = lc_strdup("off");
        else if (f == 0.8)
            *canon = lc_asprintf("%ld", n);
        else
            *canon = lc_asprintf("%ld:%g", n, f);
        break;
    case CLM_SET_STEERING:
    case CLM_SET_COMPACT_PROMPT: {
        const char *none = id == CLM_SET_STEERING ? "none" : "default";
        if (!*t || strcasecmp(t, none) == 0 || strcasecmp(t, "off") == 0)
            *canon = lc_strdup(none);
        else if (strchr(t, '\n'))
            rc = lc_errf(err, LC_INVALID, "%s must be a file path or %s", clm_defs[id].key, none);
        else
            *canon = lc_strdup(t);
        break;
    }
    case CLM_SET_EDITING_MODE:
        if (strcasecmp(t, "clm") == 0 || strcasecmp(t, "conservative") == 0) {
            *canon = lc_strdup(strcasecmp(t, "conservative") == 0 ? "conservative" : "clm");
        } else {
            rc = lc_errf(err, LC_INVALID, "editingMode must be clm or conservative; got '%s'", t);
        }
        break;
    default:
        rc = lc_errf(err, LC_INVALID, "no setting number %d", id);
    }
    if (rc == LC_OK && !*canon) rc = lc_errf(err, LC_NOMEM, "out of memory");
    free(t);
    return rc;
}

/* Derive the typed fields from the canonical strings (which are valid by construction). */
static void settings_derive(clm_settings *s)
{
    long n = 0;
    int b = 0;
    s->budget = strcmp(s->val[CLM_SET_BUDGET], "window") == 0 ? 0
                : (parse_tokens(s->val[CLM_SET_BUDGET], &n) ? n : 0);
    s->reserve = parse_tokens(s->val[CLM_SET_RESERVE], &n) ? n : 2048;
    s->reminders = parse_bool(s->val[CLM_SET_REMINDERS], &b) ? b : 1;
    s->guard = parse_bool(s->val[CLM_SET_GUARD], &b) ? b : 1;
    const char *hc = s->val[CLM_SET_HOST_COMPACTION];
    s->host_compaction = strcmp(hc, "on") == 0 ? CLM_HC_ON : strcmp(hc, "off") == 0 ? CLM_HC_OFF : CLM_HC_AUTO;
    if (!parse_cap(s->val[CLM_SET_OBS_CAP], &s->obs_cap, &s->obs_head)) s->obs_cap = 0;
    s->steering = strcmp(s->val[CLM_SET_STEERING], "none") == 0 ? NULL : s->val[CLM_SET_STEERING];
    s->one_tool = parse_bool(s->val[CLM_SET_ONE_TOOL], &b) ? b : 0;
    s->size_trailer = parse_bool(s->val[CLM_SET_SIZE_TRAILER], &b) ? b : 0;
    s->compact_prompt = strcmp(s->val[CLM_SET_COMPACT_PROMPT], "default") == 0
                            ? NULL : s->val[CLM_SET_COMPACT_PROMPT];
    s->conservative = strcmp(s->val[CLM_SET_EDITING_MODE], "conservative") == 0;
}

void clm_settings_free(clm_settings *s)
{
    if (!s) return;
    for (int i = 0; i < CLM_N_SETTINGS; i++) {
        free(s->dflt[i]);
        free(s->val[i]);
    }
    memset(s, 0, sizeof *s);
}

int clm_settings_init(clm_settings *s, const char *(*getenv_fn)(const char *),
                      char **problems, char **err)
{
    int rc = LC_OK;
    sbuf pb = {0};
    memset(s, 0, sizeof *s);
    if (problems) *problems = NULL;
    for (int i = 0; i < CLM_N_SETTINGS; i++) {
        const char *env = getenv_fn ? getenv_fn(clm_defs[i].env) : NULL;
        char *canon = NULL, *e = NULL;
        if (env && *env && clm_setting_normalize(i, env, &canon, &e) != LC_OK) {
            if (pb.len) sb_putc(&pb, '\n');
            sb_printf(&pb, "%s ignored: %s", clm_defs[i].env, e ? e : "invalid");
            canon = NULL;
        }
        free(e);
        if (!canon && clm_setting_normalize(i, clm_defs[i].builtin, &canon, err) != LC_OK) {
            rc = LC_NOMEM;
            goto done;
        }
        s->dflt[i] = canon;
        if (!(s->val[i] = lc_strdup(canon))) {
            rc = lc_errf(err, LC_NOMEM, "out of memory");
            goto done;
        }
    }
    settings_derive(s);
    if (problems && pb.len) *problems = sb_detach(&pb);
done:
    sb_free(&pb);
    if (rc != LC_OK) clm_settings_free(s);
    return rc;
}

int clm_settings_clone(const clm_settings *src, clm_settings *dst, char **err)
{
    memset(dst, 0, sizeof *dst);
    for (int i = 0; i < CLM_N_SETTINGS; i++) {
        dst->dflt[i] = lc_strdup(src->dflt[i]);
        dst->val[i] = lc_strdup(src->val[i]);
        if (!dst->dflt[i] || !dst->val[i]) {
            clm_settings_free(dst);
            return lc_errf(err, LC_NOMEM, "out of memory");
        }
    }
    settings_derive(dst);
    return LC_OK;
}

int clm_settings_set(clm_settings *s, const char *key, const char *text, char **err)
{
    int id = clm_setting_find(key);
    char *canon = NULL;
    if (id < 0) {
        sbuf b = {0};
        for (int i = 0; i < CLM_N_SETTINGS; i++) sb_printf(&b, "%s%s", i ? ", " : "", clm_defs[i].key);
        int rc = lc_errf(err, LC_INVALID, "unknown setting '%s' (settings: %s)", key ? key : "",
                         b.p ? b.p : "");
        sb_free(&b);
        return rc;
    }
    int rc = clm_setting_normalize(id, text, &canon, err);
    if (rc != LC_OK) return rc;
    free(s->val[id]);
    s->val[id] = canon;
    settings_derive(s);
    return LC_OK;
}

int clm_settings_reset(clm_settings *s, char **err)
{
    for (int i = 0; i < CLM_N_SETTINGS; i++) {
        char *d = lc_strdup(s->dflt[i]);
        if (!d) return lc_errf(err, LC_NOMEM, "out of memory");
        free(s->val[i]);
        s->val[i] = d;
    }
    settings_derive(s);
    return LC_OK;
}

int clm_settings_changed(const clm_settings *s, int id)
{
    return id >= 0 && id < CLM_N_SETTINGS && strcmp(s->val[id], s->dflt[id]) != 0;
}

char *clm_settings_overrides_json(const clm_settings *s)
{
    cJSON *root = cJSON_CreateObject();
    cJSON *ov = cJSON_AddObjectToObject(root, "overrides");
    char *out = NULL;
    if (!root || !ov) goto done;
    cJSON_AddNumberToObject(root, "version", 1);
    for (int i = 0; i < CLM_N_SETTINGS; i++)
        if (clm_settings_changed(s, i) && !cJSON_AddStringToObject(ov, clm_defs[i].key, s->val[i]))
            goto done;
    out = cJSON_PrintUnformatted(root);
done:
    cJSON_Delete(root);
    return out;
}

int clm_setting_is_path(int id)
{
    return id == CLM_SET_STEERING || id == CLM_SET_COMPACT_PROMPT;
}

int clm_settings_apply_overrides(clm_settings *s, const char *json, size_t len,
                                 const char *const *typed, char **problems, char **err)
{
    int rc = LC_OK;
    sbuf pb = {0};
    cJSON *root = cJSON_ParseWithLength(json, len);
    if (problems) *problems = NULL;
    if ((rc = clm_settings_reset(s, err)) != LC_OK) goto done;
    const cJSON *ov = cJSON_GetObjectItemCaseSensitive(root, "overrides");
    if (!cJSON_IsObject(ov)) {
        sb_puts(&pb, "stored settings ignored: the entry has no overrides object");
        goto done;
    }
    const cJSON *it;
    cJSON_ArrayForEach(it, ov) {
        int id = clm_setting_find(it->string);
        char *canon = NULL, *e = NULL;
        if (id < 0 || !cJSON_IsString(it) ||
            clm_setting_normalize(id, it->valuestring, &canon, &e) != LC_OK) {
            if (pb.len) sb_putc(&pb, '\n');
            sb_printf(&pb, "stored setting '%s' ignored: %s", it->string ? it->string : "?",
                      e ? e : id < 0 ? "unknown setting" : "not a text value");
            free(e);
            continue;
        }
        /* A path read from a session file is the file's author's choice, not the user's. */
        if (clm_setting_is_path(id) && strcmp(canon, s->dflt[id]) != 0 &&
            !(typed && typed[id] && strcmp(typed[id], canon) == 0)) {
            if (pb.len) sb_putc(&pb, '\n');
            sb_printf(&pb, "stored setting '%s' ignored: a setting restored from the session file"
                      " never names a file to read (set it in this run with /clm config %s PATH,"
                      " or with %s)", clm_defs[id].key, clm_defs[id].key, clm_defs[id].env);
            free(canon);
            continue;
        }
        free(s->val[id]);
        s->val[id] = canon;
    }
    settings_derive(s);
done:
    if (problems && pb.len) *problems = sb_detach(&pb);
    sb_free(&pb);
    cJSON_Delete(root);
    return rc;
}
