/*
 * hooks.h -- `lcm hooks install|uninstall|doctor`: wiring `lcm hook <event>` and `lcm mcp`
 * into Claude Code and Codex.
 *   Claude Code: hook entries in settings.json (user: ~/.claude/settings.json, project:
 *                .claude/settings.json) and the MCP server where `claude mcp add` records it
 *                (user: ~/.claude.json, project: .mcp.json); CLAUDE_CONFIG_DIR moves both.
 *   Codex:       hook entries in hooks.json and, in config.toml, a [mcp_servers.lcm] table
 *                and [features] codex_hooks = true (user: ~/.codex or CODEX_HOME, project:
 *                .codex/), the TOML edited textually: only our own lines change.
 * Owns recognizing our entries (a command whose program is named lcm and whose verb is
 * hook / mcp), merging them with the user's own (never dropping theirs), idempotence, the
 * .bak of every file rewritten, atomic writes, exact removal, and the doctor's checks.
 */
#ifndef LCM_HOOKS_H
#define LCM_HOOKS_H

#include <stdio.h>

enum { HOOKS_CLAUDE = 1, HOOKS_CODEX = 2 };

/* The comment that marks our TOML lines (uninstall removes exactly those). */
#define HOOKS_TOML_MARK "# added by lcm hooks install"

typedef struct hooks_opts {
    int agent;               /* HOOKS_CLAUDE or HOOKS_CODEX */
    int project;             /* scope project (else user) */
    const char *home;        /* the store home the hooks pass as --home (absolute) */
    const char *lcm;         /* the absolute path of this lcm */
    const char *user_home;   /* $HOME */
    const char *project_dir; /* the project folder (scope project) */
    int dry_run;             /* print what would be written; write nothing */
    int prompt_hook;         /* also UserPromptSubmit */
} hooks_opts;

/* Write (or with dry_run print) the entries; what changed is said on `out`. */
int hooks_install(const hooks_opts *o, FILE *out, char **err);
/* Remove exactly our entries (any home, any lcm path). */
int hooks_uninstall(const hooks_opts *o, FILE *out, char **err);
/* Whether any hook entry of ours is in o->agent's hooks file, or (Claude Code) the
 * lossless-context plugin is installed and enabled. */
int hooks_present(const hooks_opts *o);
/* One line per check on `out`; returns the number of failed checks. */
int hooks_doctor(const hooks_opts *o, FILE *out);

/* Shell-quote one word for a hook command line (malloc'd). */
char *hooks_shell_quote(const char *s);

#endif
