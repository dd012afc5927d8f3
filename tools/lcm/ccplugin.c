/*
 * ccplugin.c -- reading Claude Code's record of the lossless-context plugin: which install
 * of it there is (installed_plugins.json) and whether the settings enable it.
 */
#include "ccplugin.h"

#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "util.h"

/* The JSON object in `path`; absent is LC_OK with *root NULL. */
static int ccplugin_load(const char *path, cJSON **root, char **err)
{
    char *text = NULL;
    size_t len = 0;
    *root = NULL;
    int rc = lc_read_file(path, &text, &len, NULL);
    if (rc == LC_NOTFOUND) return LC_OK;
    if (rc != LC_OK) return lc_errf(err, rc, "cannot read %s", path);
    *root = cJSON_ParseWithLength(text, len);
    free(text);
    if (!cJSON_IsObject(*root)) {
        cJSON_Delete(*root);
        *root = NULL;
        return lc_errf(err, LC_INVALID, "%s is not a JSON object", path);
    }
    return LC_OK;
}

/* enabledPlugins[id] in one settings file: 1 true, 0 false, -1 not said (or no file). */
static int ccplugin_enabled_in(const char *path, const char *id)
{
    cJSON *root = NULL;
    char *err = NULL;
    int v = -1;
    if (ccplugin_load(path, &root, &err) == LC_OK && root) {
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "enabledPlugins"), id);
        if (cJSON_IsBool(e)) v = cJSON_IsTrue(e);
    }
    cJSON_Delete(root);
    free(err);
    return v;
}

/* Whether the settings enable `id`: local over project over user, as Claude Code layers them. */
static int ccplugin_enabled(const char *claude_dir, const char *project_dir, const char *id)
{
    char *user = lc_asprintf("%s/settings.json", claude_dir);
    char *proj = project_dir ? lc_asprintf("%s/.claude/settings.json", project_dir) : NULL;
    char *local = project_dir ? lc_asprintf("%s/.claude/settings.local.json", project_dir) : NULL;
    int v = -1, w;
    if (user && (w = ccplugin_enabled_in(user, id)) >= 0) v = w;
    if (proj && (w = ccplugin_enabled_in(proj, id)) >= 0) v = w;
    if (local && (w = ccplugin_enabled_in(local, id)) >= 0) v = w;
    free(user);
    free(proj);
    free(local);
    return v == 1;
}

static int ccplugin_set(ccplugin_state *st, const char *id, const cJSON *inst, int enabled, char **err)
{
    const cJSON *path = cJSON_GetObjectItemCaseSensitive(inst, "installPath");
    const cJSON *scope = cJSON_GetObjectItemCaseSensitive(inst, "scope");
    ccplugin_state_free(st);
    st->id = lc_strdup(id);
    st->install_path = lc_strdup(cJSON_IsString(path) ? path->valuestring : "");
    st->scope = lc_strdup(cJSON_IsString(scope) ? scope->valuestring : "user");
    st->enabled = enabled;
    return st->id && st->install_path && st->scope ? LC_OK : lc_errf(err, LC_NOMEM, "out of memory");
}

/* A project or local install counts only in its own project folder. */
static int ccplugin_here(const cJSON *inst, const char *project_dir)
{
    const cJSON *pp = cJSON_GetObjectItemCaseSensitive(inst, "projectPath");
    if (!cJSON_IsString(pp)) return 1;
    return project_dir && strcmp(pp->valuestring, project_dir) == 0;
}

int ccplugin_find(const char *claude_dir, const char *project_dir, ccplugin_state *st, char **err)
{
    cJSON *root = NULL;
    char *path = lc_asprintf("%s/plugins/installed_plugins.json", claude_dir);
    int rc;
    memset(st, 0, sizeof *st);
    if (!path) return lc_errf(err, LC_NOMEM, "out of memory");
    if ((rc = ccplugin_load(path, &root, err)) != LC_OK || !root) goto done;
    const cJSON *plugins = cJSON_GetObjectItemCaseSensitive(root, "plugins"), *p;
    size_t nl = strlen(CCPLUGIN_NAME);
    cJSON_ArrayForEach(p, plugins)
    {
        if (!p->string || strncmp(p->string, CCPLUGIN_NAME, nl) != 0 || p->string[nl] != '@') continue;
        const cJSON *inst = cJSON_IsArray(p) ? p->child : p;
        for (; inst; inst = cJSON_IsArray(p) ? inst->next : NULL) {
            if (!cJSON_IsObject(inst) || !ccplugin_here(inst, project_dir)) continue;
            int on = ccplugin_enabled(claude_dir, project_dir, p->string);
            if (st->id && (st->enabled || !on)) continue; /* keep the first enabled one */
            if ((rc = ccplugin_set(st, p->string, inst, on, err)) != LC_OK) goto done;
        }
    }
done:
    if (rc != LC_OK) ccplugin_state_free(st);
    cJSON_Delete(root);
    free(path);
    return rc;
}

void ccplugin_state_free(ccplugin_state *st)
{
    free(st->id);
    free(st->install_path);
    free(st->scope);
    memset(st, 0, sizeof *st);
}
