/*
 * ccplugin.h -- the lossless-context Claude Code plugin as Claude Code records it.
 *
 * `claude plugin install` (host/claude-code, listed by the repository's
 * .claude-plugin/marketplace.json) leaves two traces: the install in
 * CLAUDE_DIR/plugins/installed_plugins.json ({"plugins": {"NAME@MARKETPLACE": [{"scope",
 * "installPath", "projectPath"?...}]}}, an object instead of the array in the first
 * version of that file) and `enabledPlugins: {"NAME@MARKETPLACE": true}` in the settings of
 * its scope (user CLAUDE_DIR/settings.json, project .claude/settings.json, local
 * .claude/settings.local.json; the narrower scope wins). Owns reading those; the doctor's
 * checks of the installed copy are hooks.c's.
 */
#ifndef LCM_CCPLUGIN_H
#define LCM_CCPLUGIN_H

/* The plugin's name in plugin.json and marketplace.json; any marketplace may carry it. */
#define CCPLUGIN_NAME "lossless-context"

typedef struct ccplugin_state {
    char *id;           /* "lossless-context@MARKETPLACE", NULL when not installed */
    char *install_path; /* Claude Code's copy of the plugin */
    char *scope;        /* user, project or local */
    int enabled;        /* enabledPlugins[id] is true where it counts */
} ccplugin_state;

/* Fill *st from CLAUDE_DIR (~/.claude or CLAUDE_CONFIG_DIR) and the project folder (for
 * project and local installs); an install that is enabled is preferred over one that is
 * not. Not installed is LC_OK with st->id NULL; a state file that is not JSON is an error. */
int ccplugin_find(const char *claude_dir, const char *project_dir, ccplugin_state *st, char **err);
void ccplugin_state_free(ccplugin_state *st);

#endif
