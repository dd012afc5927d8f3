/*
 * loader.h -- finding, version-checking, loading and unloading plugins: every folder of
 * a plugin directory (plugin.json + the shared object) or one .so named directly.
 * Owns the host_plugin records (h->plugins). A plugin that fails any check is reported
 * through host_notify and skipped; the host goes on without it.
 */
#ifndef HOST_LOADER_H
#define HOST_LOADER_H

#include "hostapi.h"

/* Load every plugin folder under `dir` (sorted by name). Returns the number of plugins
 * that failed to load; each failure was reported with its reason. */
int loader_load_dir(host *h, const char *dir);

/* Load one shared object. `manifest_name` (may be NULL) names it in messages. Returns
 * LC_OK or a status with *err (e.g. the ABI sentence naming both versions). */
int loader_load_file(host *h, const char *so_path, const char *manifest_name,
                     const char *entry_symbol, char **err);

/* Unload in reverse order: plugin->unload, forget its registrations, dlclose. */
void loader_unload_all(host *h);

#endif
