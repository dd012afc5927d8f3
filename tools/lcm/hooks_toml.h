/*
 * hooks_toml.h -- Codex's config.toml for `lcm hooks`: the [features] codex_hooks line and
 * the [mcp_servers.lcm] table, found, added and removed as text edits of tomlscan's
 * statements, each of our lines marked HOOKS_TOML_MARK (with "sep=N", the newlines put
 * before it, and "(was: ...)", the user's own line it replaced), so uninstall takes out
 * exactly what install put in; and the trust Codex records for a hook.
 */
#ifndef LCM_HOOKS_TOML_H
#define LCM_HOOKS_TOML_H

#include <stdio.h>

#include "hooks.h"
#include "tomlscan.h"
#include "util.h"

/* Where the parts we touch are in one config.toml (statement indices, -1 when absent). */
typedef struct hooks_toml_view {
    long feat_hdr;    /* [features] */
    long key;         /* codex_hooks in [features], or the root's features.codex_hooks */
    int key_root;     /* the latter */
    long feat_dotted; /* the last root statement `features.<x> = ...` */
    long feat_inline; /* the root's features = { ... } */
    long feat_other;  /* features as something we cannot add a key to ([[features]], features = 1) */
    long mcp_hdr;     /* [mcp_servers.lcm] */
    long mcp_user;    /* an lcm server given another way (dotted keys, a key of [mcp_servers]) */
    long mcp_inline;  /* the root's mcp_servers = { ... } */
    long mcp_other;   /* [[mcp_servers]], mcp_servers = 1 */
} hooks_toml_view;

/* Find in d (the statements of text) the parts hooks_toml_view names. */
void hooks_toml_look(const char *text, const toml_doc *d, hooks_toml_view *v);
/* config.toml's statements, or a refusal that names the line it could not read. */
int hooks_toml_scan(const char *path, const char *text, toml_doc *d, char **err);
/* The text of statement st's value (malloc'd). */
char *hooks_toml_value(const char *text, const toml_stmt *st);
/* s as a TOML basic string, appended to b. */
void hooks_toml_str(sbuf *b, const char *s);
/* Take out exactly what install put in (*out, malloc'd); *removed counts what was ours. */
int hooks_toml_strip(const char *path, const char *text, char **out, int *removed, char **err);
/* Put ours (o->lcm, o->home) into *text, which holds none of ours; a shape that cannot be
 * added to without guessing is refused, saying what to do by hand; a note goes to out. */
int hooks_toml_add(const hooks_opts *o, FILE *out, const char *path, char **text, char **err);
/* Whether text (scanned as d) records a trusted hash for Codex's hook `key`. */
int hooks_toml_trusted(const char *text, const toml_doc *d, const char *key);

#endif
