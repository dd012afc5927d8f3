/*
 * loader.c -- plugin discovery and loading with dlopen/dlsym: reads each plugin.json,
 * refuses another ABI version (from the manifest, from the plugin's own refusal, or from
 * the descriptor it filled) with a sentence naming both numbers, and keeps whatever
 * loaded. See loader.h.
 */
#include "loader.h"

#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "util.h"

static int abi_refusal(char **err, const char *name, long theirs)
{
    return lc_errf(err, AP_ABI_MISMATCH,
                   "plugin '%s' was built for ABI version %ld; this host speaks ABI version %d "
                   "(API level %d)",
                   name, theirs, AP_ABI_VERSION, AP_API_LEVEL);
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static void plugin_free(host_plugin *p)
{
    if (!p)
        return;
    LC_FREE(p->name, p->so_path, p);
}

int loader_load_file(host *h, const char *so_path, const char *manifest_name,
                     const char *entry_symbol, char **err)
{
    int rc = LC_OK;
    char errbuf[512] = "";
    host_plugin *p = calloc(1, sizeof *p);
    if (!p)
        return lc_errf(err, LC_NOMEM, "out of memory");
    p->so_path = lc_strdup(so_path);
    p->name = lc_strdup(manifest_name ? manifest_name : base_name(so_path));
    if (!p->so_path || !p->name) {
        rc = lc_errf(err, LC_NOMEM, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < h->n_plugins; i++)
        if (strcmp(h->plugins[i]->name, p->name) == 0) {
            rc = lc_errf(err, LC_INVALID, "plugin '%s' is already loaded (from %s)", p->name,
                         h->plugins[i]->so_path);
            goto done;
        }
    p->dl = dlopen(so_path, RTLD_NOW | RTLD_LOCAL);
    if (!p->dl) {
        rc = lc_errf(err, LC_ERR, "plugin '%s': cannot load %s: %s", p->name, so_path, dlerror());
        goto done;
    }
    const char *sym = entry_symbol ? entry_symbol : AP_ENTRY_SYMBOL;
    ap_init_fn init;
    *(void **)&init = dlsym(p->dl, sym);
    if (!init) {
        rc = lc_errf(err, LC_ERR, "plugin '%s': %s does not export %s", p->name, so_path, sym);
        goto done;
    }
    memset(&p->desc, 0, sizeof p->desc);
    /* A level-1 host hands out the level-1 descriptor; the memory stays full-size and
     * zeroed, so level-2 slots read as NULL whatever the plugin does. */
    p->desc.struct_size = h->api.api_level >= 2 ? (uint32_t)sizeof p->desc
                                                : (uint32_t)offsetof(ap_plugin, agent_end);
    h->current = p;
    int irc = init(&h->api, &p->desc, errbuf, sizeof errbuf);
    h->current = NULL;
    errbuf[sizeof errbuf - 1] = '\0';
    if (irc == AP_ABI_MISMATCH) {
        rc = lc_errf(err, AP_ABI_MISMATCH,
                     "plugin '%s' refused this host (ABI version %d, API level %d): %s",
                     p->name, AP_ABI_VERSION, AP_API_LEVEL, errbuf[0] ? errbuf : "ABI mismatch");
        goto done;
    }
    if (irc != AP_OK) {
        rc = lc_errf(err, LC_ERR, "plugin '%s' failed to initialize (status %d): %s", p->name,
                     irc, errbuf[0] ? errbuf : "no reason given");
        goto done;
    }
    if (p->desc.abi_version != AP_ABI_VERSION) {
        /* The descriptor's layout is not ours: call nothing in it. */
        rc = abi_refusal(err, p->name, (long)p->desc.abi_version);
        goto done;
    }
    if (!p->desc.release) {
        rc = lc_errf(err, LC_INVALID, "plugin '%s' has no release callback", p->name);
        if (p->desc.unload)
            p->desc.unload(p->desc.state);
        goto done;
    }
    if (!manifest_name && p->desc.name && *p->desc.name) {
        char *n = lc_strdup(p->desc.name);
        if (n) {
            free(p->name);
            p->name = n;
        }
    }
    host_plugin **list = realloc(h->plugins, (h->n_plugins + 1) * sizeof *list);
    if (!list) {
        rc = lc_errf(err, LC_NOMEM, "out of memory");
        if (p->desc.unload)
            p->desc.unload(p->desc.state);
        goto done;
    }
    h->plugins = list;
    p->active = 1;
    h->plugins[h->n_plugins++] = p;
    host_log(h, AP_LEVEL_INFO, "loaded plugin '%s' %s from %s", p->name,
             p->desc.version ? p->desc.version : "", so_path);
    p = NULL;
done:
    if (p) {
        hostapi_forget_plugin(h, p);
        if (p->dl)
            dlclose(p->dl);
        plugin_free(p);
    }
    return rc;
}

/* One folder: plugin.json names the library, the ABI version and the entry symbol. */
static int load_folder(host *h, const char *dir, const char *folder, char **err)
{
    int rc = LC_OK;
    char *mpath = lc_asprintf("%s/%s/plugin.json", dir, folder), *text = NULL, *so = NULL;
    cJSON *m = NULL;
    if (!mpath)
        return lc_errf(err, LC_NOMEM, "out of memory");
    char *rerr = NULL;
    if (lc_read_file(mpath, &text, NULL, &rerr)) {
        rc = lc_errf(err, LC_NOTFOUND, "plugin folder '%s': cannot read %s: %s", folder, mpath,
                     rerr ? rerr : "unreadable");
        free(rerr);
        goto done;
    }
    m = cJSON_Parse(text);
    const cJSON *name = m ? cJSON_GetObjectItemCaseSensitive(m, "name") : NULL;
    const cJSON *abi = m ? cJSON_GetObjectItemCaseSensitive(m, "abiVersion") : NULL;
    const cJSON *lib = m ? cJSON_GetObjectItemCaseSensitive(m, "library") : NULL;
    const cJSON *entry = m ? cJSON_GetObjectItemCaseSensitive(m, "entry") : NULL;
    if (!cJSON_IsObject(m) || !cJSON_IsString(name) || !cJSON_IsNumber(abi) ||
        !cJSON_IsString(lib)) {
        rc = lc_errf(err, LC_INVALID,
                     "plugin folder '%s': %s is not a valid manifest (needs name, abiVersion, "
                     "library)",
                     folder, mpath);
        goto done;
    }
    if ((long)abi->valuedouble != AP_ABI_VERSION) {
        rc = abi_refusal(err, name->valuestring, (long)abi->valuedouble);
        goto done;
    }
    if (strchr(lib->valuestring, '/')) {
        rc = lc_errf(err, LC_INVALID, "plugin '%s': library must be a file name in its folder",
                     name->valuestring);
        goto done;
    }
    so = lc_asprintf("%s/%s/%s", dir, folder, lib->valuestring);
    if (!so) {
        rc = lc_errf(err, LC_NOMEM, "out of memory");
        goto done;
    }
    struct stat st;
    if (stat(so, &st) != 0) {
        rc = lc_errf(err, LC_NOTFOUND, "plugin '%s': library %s is missing", name->valuestring, so);
        goto done;
    }
    rc = loader_load_file(h, so, name->valuestring,
                          cJSON_IsString(entry) ? entry->valuestring : NULL, err);
done:
    cJSON_Delete(m);
    free(text);
    free(mpath);
    free(so);
    return rc;
}

static int skip_name(const struct dirent *d)
{
    return d->d_name[0] != '.';
}

int loader_load_dir(host *h, const char *dir)
{
    struct dirent **names = NULL;
    int n = scandir(dir, &names, skip_name, alphasort);
    if (n < 0) {
        host_notify(h, AP_LEVEL_ERROR, "cannot read plugin directory %s", dir);
        return 1;
    }
    int failed = 0;
    for (int i = 0; i < n; i++) {
        char *path = lc_asprintf("%s/%s", dir, names[i]->d_name);
        struct stat st;
        if (path && stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
            char *err = NULL;
            if (load_folder(h, dir, names[i]->d_name, &err)) {
                host_notify(h, AP_LEVEL_ERROR, "%s; skipped", err ? err : "plugin failed to load");
                failed++;
            }
            free(err);
        }
        free(path);
        free(names[i]);
    }
    free(names);
    return failed;
}

void loader_unload_all(host *h)
{
    hostapi_drop_async(h);
    for (size_t i = h->n_plugins; i-- > 0;) {
        host_plugin *p = h->plugins[i];
        if (p->active && p->desc.unload) {
            h->current = p;
            p->desc.unload(p->desc.state);
            h->current = NULL;
        }
        hostapi_forget_plugin(h, p);
        /* Sanitizer builds keep the code mapped so leak reports can name it. */
        if (!getenv("AGENT_HOST_KEEP_PLUGINS_MAPPED"))
            dlclose(p->dl);
        plugin_free(p);
    }
    free(h->plugins);
    h->plugins = NULL;
    h->n_plugins = 0;
}
