/*
 * hooks.c -- installing, removing and checking the Claude Code / Codex wiring of lcm.
 *
 * JSON files (settings.json, hooks.json, ~/.claude.json, .mcp.json) are parsed whole,
 * changed in the tree, and printed again (2-space indent) only when the text differs, so a
 * second install writes nothing. A hook entry is ours when its command runs a program named
 * `lcm` with the verb `hook`; install first takes ours out, then appends one matcher group
 * per event, so the user's own groups keep their order and content. config.toml is edited
 * as text: our lines carry HOOKS_TOML_MARK, and uninstall removes exactly those (restoring
 * a codex_hooks value we replaced), everything else byte for byte.
 */
#include "hooks.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "util.h"

typedef struct hooks_event {
    const char *name;   /* the agent's event name */
    const char *verb;   /* lcm hook <verb> */
    int prompt;         /* only with --prompt-hook */
} hooks_event;

static const hooks_event claude_events[] = {
    {"SessionStart", "session-start", 0}, {"Stop", "stop", 0},           {"SubagentStop", "subagent-stop", 0},
    {"PreCompact", "precompact", 0},      {"SessionEnd", "session-end", 0}, {"UserPromptSubmit", "user-prompt-submit", 1},
};
static const hooks_event codex_events[] = {
    {"SessionStart", "session-start", 0}, {"Stop", "stop", 0}, {"UserPromptSubmit", "user-prompt-submit", 1},
};

/* ---- words and paths -------------------------------------------------------------------- */

char *hooks_shell_quote(const char *s)
{
    int plain = *s != 0;
    for (const char *p = s; *p; p++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+=:,@%", *p)) plain = 0;
    if (plain) return lc_strdup(s);
    sbuf b = {0};
    sb_putc(&b, '\'');
    for (const char *p = s; *p; p++) {
        if (*p == '\'') sb_puts(&b, "'\\''");
        else sb_putc(&b, *p);
    }
    sb_putc(&b, '\'');
    return sb_detach(&b);
}

/* The next shell word of `*p` (plain, '...' or "..." runs), malloc'd; NULL at the end. */
static char *hooks_word(const char **p)
{
    const char *s = *p;
    sbuf b = {0};
    while (*s == ' ' || *s == '\t') s++;
    if (!*s) return NULL;
    while (*s && *s != ' ' && *s != '\t') {
        if (*s == '\'' || *s == '"') {
            char q = *s++;
            while (*s && *s != q) {
                if (q == '"' && *s == '\\' && s[1]) s++;
                sb_putc(&b, *s++);
            }
            if (*s) s++;
        } else {
            if (*s == '\\' && s[1]) s++;
            sb_putc(&b, *s++);
        }
    }
    *p = s;
    return sb_detach(&b);
}

static const char *hooks_base(const char *path)
{
    const char *sl = strrchr(path, '/');
    return sl ? sl + 1 : path;
}

/* Whether `cmd` runs a program named lcm with verb `verb` (whatever its folder and
 * options: an install from another build or for another home is ours too). */
static int hooks_cmd_ours(const char *cmd, const char *verb)
{
    const char *p = cmd;
    char *w0 = hooks_word(&p), *w1 = w0 ? hooks_word(&p) : NULL;
    int ours = w0 && w1 && strcmp(hooks_base(w0), "lcm") == 0 && strcmp(w1, verb) == 0;
    free(w0);
    free(w1);
    return ours;
}

static char *hooks_command(const hooks_opts *o, const char *verb)
{
    char *ql = hooks_shell_quote(o->lcm), *qh = hooks_shell_quote(o->home);
    char *c = ql && qh ? lc_asprintf("%s hook %s --home %s", ql, verb, qh) : NULL;
    free(ql);
    free(qh);
    return c;
}

static char *hooks_claude_dir(const hooks_opts *o)
{
    const char *cd = getenv("CLAUDE_CONFIG_DIR");
    if (o->project) return lc_asprintf("%s/.claude", o->project_dir);
    return cd && *cd ? lc_strdup(cd) : lc_asprintf("%s/.claude", o->user_home);
}

static char *hooks_claude_mcp_file(const hooks_opts *o)
{
    const char *cd = getenv("CLAUDE_CONFIG_DIR");
    if (o->project) return lc_asprintf("%s/.mcp.json", o->project_dir);
    return cd && *cd ? lc_asprintf("%s/.claude.json", cd) : lc_asprintf("%s/.claude.json", o->user_home);
}

static char *hooks_codex_dir(const hooks_opts *o)
{
    const char *ch = getenv("CODEX_HOME");
    if (o->project) return lc_asprintf("%s/.codex", o->project_dir);
    return ch && *ch ? lc_strdup(ch) : lc_asprintf("%s/.codex", o->user_home);
}

/* ---- files ------------------------------------------------------------------------------ */

/* Read a file; absent = "" with *exists 0. */
static int hooks_read(const char *path, char **text, size_t *len, int *exists, char **err)
{
    int rc = lc_read_file(path, text, len, err);
    *exists = rc == LC_OK;
    if (rc == LC_NOTFOUND) {
        if (err) {
            free(*err);
            *err = NULL;
        }
        *text = lc_strdup("");
        *len = 0;
        return *text ? LC_OK : LC_NOMEM;
    }
    return rc;
}

/* Write `text` to `path` when it differs from `old`: a .bak of the old bytes first, then an
 * atomic replace keeping the file's mode. With dry_run, print it instead. A NULL `text` is
 * an edit that could not be printed for want of memory. */
static int hooks_commit(const hooks_opts *o, FILE *out, const char *path, const char *old, size_t old_len,
                        int existed, const char *text, char **err)
{
    if (!text) return lc_errf(err, LC_NOMEM, "out of memory");
    size_t len = strlen(text);
    struct stat sb;
    mode_t mode = 0600;
    int rc = LC_OK;
    char *bak = NULL, *dir = NULL;
    if (existed && len == old_len && memcmp(old, text, len) == 0) {
        fprintf(out, "unchanged %s\n", path);
        return LC_OK;
    }
    if (o->dry_run) {
        fprintf(out, "would write %s (%zu bytes)%s:\n%s%s", path, len, existed ? ", keeping a .bak" : "", text,
                len && text[len - 1] == '\n' ? "" : "\n");
        return LC_OK;
    }
    if (!(dir = lc_strdup(path))) return lc_errf(err, LC_NOMEM, "out of memory");
    char *sl = strrchr(dir, '/');
    if (sl && sl != dir) {
        *sl = 0;
        if ((rc = lc_mkdir_p(dir, 0700, err)) != LC_OK) goto done;
    }
    if (existed) {
        if (stat(path, &sb) == 0) mode = sb.st_mode & 07777;
        if (!(bak = lc_asprintf("%s.bak", path))) {
            rc = lc_errf(err, LC_NOMEM, "out of memory");
            goto done;
        }
        if ((rc = lc_write_atomic(bak, old, old_len, mode, err)) != LC_OK) goto done;
    }
    if ((rc = lc_write_atomic(path, text, len, mode, err)) != LC_OK) goto done;
    fprintf(out, "wrote %s%s\n", path, existed ? " (the previous version in .bak)" : "");
done:
    free(bak);
    free(dir);
    return rc;
}

/* The layout JSON.stringify(v, null, 2) gives, which is how Claude Code writes its own
 * files: a rewrite changes only what changed. Scalars print as cJSON prints them. */
static void hooks_json_put(sbuf *b, const cJSON *v, int depth)
{
    if (cJSON_IsObject(v) || cJSON_IsArray(v)) {
        int obj = cJSON_IsObject(v);
        if (!v->child) {
            sb_puts(b, obj ? "{}" : "[]");
            return;
        }
        sb_putc(b, obj ? '{' : '[');
        for (const cJSON *c = v->child; c; c = c->next) {
            sb_printf(b, "\n%*s", (depth + 1) * 2, "");
            if (obj) {
                cJSON *k = cJSON_CreateString(c->string ? c->string : "");
                char *ks = k ? cJSON_PrintUnformatted(k) : NULL;
                if (ks) sb_printf(b, "%s: ", ks);
                else b->oom = 1;
                free(ks);
                cJSON_Delete(k);
            }
            hooks_json_put(b, c, depth + 1);
            if (c->next) sb_putc(b, ',');
        }
        sb_printf(b, "\n%*s%c", depth * 2, "", obj ? '}' : ']');
        return;
    }
    char *s = cJSON_PrintUnformatted(v);
    if (s) sb_puts(b, s);
    else b->oom = 1;
    free(s);
}

static char *hooks_json_print(const cJSON *root)
{
    sbuf b = {0};
    hooks_json_put(&b, root, 0);
    sb_putc(&b, '\n');
    if (b.oom) {
        sb_free(&b);
        return NULL;
    }
    return sb_detach(&b);
}

/* A JSON file as an object: absent or empty = {}; anything else not an object is refused
 * (it is the user's file: never overwritten with our guess). */
static int hooks_json_load(const char *path, cJSON **root, char **text, size_t *len, int *existed, char **err)
{
    int rc = hooks_read(path, text, len, existed, err);
    *root = NULL;
    if (rc != LC_OK) return rc;
    const char *p = *text;
    while (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t') p++;
    *root = *p ? cJSON_ParseWithLength(*text, *len) : cJSON_CreateObject();
    if (!cJSON_IsObject(*root)) {
        cJSON_Delete(*root);
        *root = NULL;
        return lc_errf(err, LC_INVALID, "%s is not a JSON object: left as it is (fix it, then run again)", path);
    }
    return LC_OK;
}

/* ---- hook entries in JSON ------------------------------------------------------------- */

/* Take our hook entries out of hooks.<event>[].hooks[]; a group, an event and the hooks
 * object that only held ours go too. Returns how many entries were removed. */
static int hooks_strip(cJSON *root)
{
    cJSON *hooks = cJSON_GetObjectItemCaseSensitive(root, "hooks");
    int removed = 0;
    if (!cJSON_IsObject(hooks)) return 0;
    for (cJSON *ev = hooks->child, *next_ev; ev; ev = next_ev) {
        next_ev = ev->next;
        if (!cJSON_IsArray(ev)) continue;
        int ev_removed = 0;
        for (cJSON *g = ev->child, *next_g; g; g = next_g) {
            next_g = g->next;
            cJSON *hs = cJSON_GetObjectItemCaseSensitive(g, "hooks");
            if (!cJSON_IsArray(hs)) continue;
            int g_removed = 0;
            for (cJSON *h = hs->child, *next_h; h; h = next_h) {
                next_h = h->next;
                const cJSON *c = cJSON_GetObjectItemCaseSensitive(h, "command");
                if (cJSON_IsString(c) && hooks_cmd_ours(c->valuestring, "hook")) {
                    cJSON_Delete(cJSON_DetachItemViaPointer(hs, h));
                    g_removed++;
                }
            }
            if (g_removed && !hs->child) cJSON_Delete(cJSON_DetachItemViaPointer(ev, g));
            ev_removed += g_removed;
        }
        if (ev_removed && !ev->child) cJSON_Delete(cJSON_DetachItemViaPointer(hooks, ev));
        removed += ev_removed;
    }
    if (removed && !hooks->child) cJSON_Delete(cJSON_DetachItemViaPointer(root, hooks));
    return removed;
}

static int hooks_add(cJSON *root, const hooks_opts *o, const hooks_event *evs, size_t n)
{
    cJSON *hooks = cJSON_GetObjectItemCaseSensitive(root, "hooks");
    if (!hooks) hooks = cJSON_AddObjectToObject(root, "hooks");
    if (!cJSON_IsObject(hooks)) return LC_INVALID;
    for (size_t i = 0; i < n; i++) {
        if (evs[i].prompt && !o->prompt_hook) continue;
        cJSON *arr = cJSON_GetObjectItemCaseSensitive(hooks, evs[i].name);
        if (!arr) arr = cJSON_AddArrayToObject(hooks, evs[i].name);
        if (!cJSON_IsArray(arr)) return LC_INVALID;
        char *cmd = hooks_command(o, evs[i].verb);
        cJSON *g = cJSON_CreateObject(), *hs = cJSON_AddArrayToObject(g, "hooks"), *h = cJSON_CreateObject();
        cJSON_AddStringToObject(h, "type", "command");
        cJSON_AddStringToObject(h, "command", cmd ? cmd : "");
        cJSON_AddItemToArray(hs, h);
        cJSON_AddItemToArray(arr, g);
        free(cmd);
        if (!cmd) return LC_NOMEM;
    }
    return LC_OK;
}

/* What an edit of one JSON file does to its parsed root: LC_OK when root now holds what to
 * write, HOOKS_JSON_LEAVE when the file stays as it is, any other status an error. */
enum { HOOKS_JSON_LEAVE = -1 };
typedef int (*hooks_json_edit_fn)(cJSON *root, const hooks_opts *o, FILE *out, const char *path, const void *ctx,
                                  int add, char **err);

/* Load one JSON file, let `edit` install (add = 1) or uninstall our part of it, and write
 * the result back the way hooks_commit does. An absent file has nothing to uninstall. */
static int hooks_json_file(const hooks_opts *o, FILE *out, const char *path, hooks_json_edit_fn edit,
                           const void *ctx, int add, char **err)
{
    cJSON *root = NULL;
    char *old = NULL, *text = NULL;
    size_t len = 0;
    int existed = 0, rc;
    if ((rc = hooks_json_load(path, &root, &old, &len, &existed, err)) != LC_OK) goto done;
    if (!add && !existed) {
        fprintf(out, "unchanged %s (absent)\n", path);
        goto done;
    }
    if ((rc = edit(root, o, out, path, ctx, add, err)) == HOOKS_JSON_LEAVE) {
        rc = hooks_commit(o, out, path, old, len, existed, old, err);
        goto done;
    }
    if (rc != LC_OK) goto done;
    text = hooks_json_print(root);
    rc = hooks_commit(o, out, path, old, len, existed, text, err);
done:
    cJSON_Delete(root);
    free(old);
    free(text);
    return rc;
}

/* The events one agent's hooks file takes. */
typedef struct hooks_event_set {
    const hooks_event *evs;
    size_t n;
} hooks_event_set;

/* Our hook entries out, and with add the current ones in (a hooks_json_edit_fn). */
static int hooks_entries_edit(cJSON *root, const hooks_opts *o, FILE *out, const char *path, const void *ctx,
                              int add, char **err)
{
    const hooks_event_set *set = ctx;
    int rc;
    (void)out;
    hooks_strip(root);
    if (add && (rc = hooks_add(root, o, set->evs, set->n)) != LC_OK)
        return lc_errf(err, rc, "%s: \"hooks\" or one of its events is not of the documented shape: left as it is",
                       path);
    return LC_OK;
}

/* ---- the MCP entry in JSON (Claude Code) ------------------------------------------------ */

static int hooks_mcp_ours(const cJSON *srv)
{
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(srv, "command");
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(srv, "args");
    const cJSON *a0 = cJSON_IsArray(a) ? cJSON_GetArrayItem(a, 0) : NULL;
    return cJSON_IsString(c) && strcmp(hooks_base(c->valuestring), "lcm") == 0 && cJSON_IsString(a0) &&
           strcmp(a0->valuestring, "mcp") == 0;
}

/* mcpServers.lcm out, and with add ours in; someone else's server of that name stays (a
 * hooks_json_edit_fn). */
static int hooks_mcp_edit(cJSON *root, const hooks_opts *o, FILE *out, const char *path, const void *ctx, int add,
                          char **err)
{
    (void)ctx;
    cJSON *servers = cJSON_GetObjectItemCaseSensitive(root, "mcpServers");
    cJSON *lcm = cJSON_IsObject(servers) ? cJSON_GetObjectItemCaseSensitive(servers, "lcm") : NULL;
    if (lcm && !hooks_mcp_ours(lcm)) {
        fprintf(out, "note: %s has an MCP server named lcm that is not this lcm's: left as it is\n", path);
        return HOOKS_JSON_LEAVE;
    }
    if (!add) {
        if (lcm) cJSON_Delete(cJSON_DetachItemViaPointer(servers, lcm));
        if (lcm && !servers->child) cJSON_Delete(cJSON_DetachItemViaPointer(root, servers));
        return LC_OK;
    }
    if (servers && !cJSON_IsObject(servers))
        return lc_errf(err, LC_INVALID, "%s: mcpServers is not an object: left as it is", path);
    if (!servers) servers = cJSON_AddObjectToObject(root, "mcpServers");
    /* The shape `claude mcp add lcm -- <lcm> mcp --home DIR` records. */
    cJSON *srv = cJSON_CreateObject(), *args = cJSON_CreateArray();
    cJSON_AddStringToObject(srv, "type", "stdio");
    cJSON_AddStringToObject(srv, "command", o->lcm);
    cJSON_AddItemToArray(args, cJSON_CreateString("mcp"));
    cJSON_AddItemToArray(args, cJSON_CreateString("--home"));
    cJSON_AddItemToArray(args, cJSON_CreateString(o->home));
    cJSON_AddItemToObject(srv, "args", args);
    cJSON_AddObjectToObject(srv, "env");
    if (lcm) cJSON_ReplaceItemInObjectCaseSensitive(servers, "lcm", srv);
    else cJSON_AddItemToObject(servers, "lcm", srv);
    return LC_OK;
}

/* ---- config.toml, textually ------------------------------------------------------------- */

/* A TOML basic string. */
static void hooks_toml_str(sbuf *b, const char *s)
{
    sb_putc(b, '"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') sb_printf(b, "\\%c", *s);
        else if ((unsigned char)*s < 0x20) sb_printf(b, "\\u%04x", (unsigned char)*s);
        else sb_putc(b, *s);
    }
    sb_putc(b, '"');
}

typedef struct hooks_lines {
    const char **s; /* line starts (into the text) */
    size_t *len;    /* with the line's newline */
    size_t n;
} hooks_lines;

static int hooks_split(const char *text, hooks_lines *l)
{
    size_t cap = 16;
    memset(l, 0, sizeof *l);
    l->s = malloc(cap * sizeof *l->s);
    l->len = malloc(cap * sizeof *l->len);
    if (!l->s || !l->len) return LC_NOMEM;
    for (const char *p = text; *p;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) + 1 : strlen(p);
        if (l->n == cap) {
            cap *= 2;
            const char **ns = realloc(l->s, cap * sizeof *ns);
            if (ns) l->s = ns;
            size_t *nn = realloc(l->len, cap * sizeof *nn);
            if (nn) l->len = nn;
            if (!ns || !nn) return LC_NOMEM;
        }
        l->s[l->n] = p;
        l->len[l->n++] = n;
        p += n;
    }
    return LC_OK;
}

static void hooks_lines_free(hooks_lines *l)
{
    free(l->s);
    free(l->len);
}

/* The line without leading blanks. */
static const char *hooks_lstrip(const char *s)
{
    while (*s == ' ' || *s == '\t') s++;
    return s;
}

static int hooks_line_marked(const hooks_lines *l, size_t i)
{
    size_t ml = strlen(HOOKS_TOML_MARK);
    for (size_t k = 0; k + ml <= l->len[i]; k++)
        if (memcmp(l->s[i] + k, HOOKS_TOML_MARK, ml) == 0) return 1;
    return 0;
}

/* Whether line i is the header [name] (blanks and a trailing comment allowed). */
static int hooks_is_header(const hooks_lines *l, size_t i, const char *name)
{
    const char *p = hooks_lstrip(l->s[i]);
    size_t nl = strlen(name);
    if (*p != '[' || p[1] == '[') return 0;
    p = hooks_lstrip(p + 1);
    if (strncmp(p, name, nl) != 0) return 0;
    p = hooks_lstrip(p + nl);
    return *p == ']';
}

static int hooks_is_any_header(const hooks_lines *l, size_t i)
{
    return *hooks_lstrip(l->s[i]) == '[';
}

/* Whether line i sets `key` (key = ...). */
static int hooks_is_key(const hooks_lines *l, size_t i, const char *key)
{
    const char *p = hooks_lstrip(l->s[i]);
    size_t kl = strlen(key);
    if (strncmp(p, key, kl) != 0) return 0;
    p = hooks_lstrip(p + kl);
    return *p == '=';
}

/* The value text of a `key = value # comment` line (malloc'd, trimmed). */
static char *hooks_key_value(const char *line, size_t len)
{
    const char *eq = memchr(line, '=', len), *end = line + len;
    if (!eq) return lc_strdup("");
    const char *v = hooks_lstrip(eq + 1);
    const char *hash = memchr(v, '#', (size_t)(end - v));
    const char *e = hash ? hash : end;
    while (e > v && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' || e[-1] == '\r')) e--;
    return lc_strndup(v, (size_t)(e - v));
}

/* The newlines install put before one of our headers ("sep=N" in its mark), so that
 * uninstall takes exactly those back. */
static int hooks_sep_of(const hooks_lines *l, size_t i)
{
    for (size_t k = 0; k + 4 <= l->len[i]; k++)
        if (memcmp(l->s[i] + k, "sep=", 4) == 0) return atoi(l->s[i] + k + 4);
    return 0;
}

static void hooks_unsep(sbuf *b, int sep)
{
    for (int k = 0; k < sep && b->len && b->p[b->len - 1] == '\n'; k++) b->p[--b->len] = 0;
}

/* Install or uninstall our lines in config.toml's text; *out_text (malloc'd) is the new
 * text. Notes for the user go to `out`. */
static int hooks_toml_edit(const hooks_opts *o, FILE *out, const char *path, const char *text, int add,
                           char **out_text)
{
    hooks_lines l;
    sbuf b = {0};
    int rc = hooks_split(text, &l);
    size_t mcp = (size_t)-1, feat = (size_t)-1, key = (size_t)-1;
    *out_text = NULL;
    if (rc != LC_OK) goto done;
    for (size_t i = 0; i < l.n; i++) {
        if (hooks_is_header(&l, i, "mcp_servers.lcm")) mcp = i;
        if (hooks_is_header(&l, i, "features")) {
            feat = i;
            for (size_t j = i + 1; j < l.n && !hooks_is_any_header(&l, j); j++)
                if (hooks_is_key(&l, j, "codex_hooks")) key = j;
        }
    }
    int mcp_ours = mcp != (size_t)-1 && hooks_line_marked(&l, mcp);
    if (mcp != (size_t)-1 && !mcp_ours) {
        fprintf(out, "note: %s has its own [mcp_servers.lcm] table: left as it is\n", path);
    }
    /* Our table's extent: the header up to the next header, and the newlines we put
     * before it (the "sep=N" of the mark). */
    size_t mcp_end = mcp;
    int sep = 0;
    if (mcp_ours) {
        for (mcp_end = mcp + 1; mcp_end < l.n && !hooks_is_any_header(&l, mcp_end); mcp_end++) {}
        sep = hooks_sep_of(&l, mcp);
    }
    int key_ours = key != (size_t)-1 && hooks_line_marked(&l, key);
    int feat_ours = feat != (size_t)-1 && hooks_line_marked(&l, feat);
    for (size_t i = 0; i < l.n; i++) {
        if (mcp_ours && i >= mcp && i < mcp_end) {
            if (i == mcp && !add) hooks_unsep(&b, sep);
            if (i == mcp && add) {
                /* In place, so a second install leaves the file as the first did. */
                sb_printf(&b, "[mcp_servers.lcm] %s sep=%d\ncommand = ", HOOKS_TOML_MARK, sep);
                hooks_toml_str(&b, o->lcm);
                sb_puts(&b, "\nargs = [\"mcp\", \"--home\", ");
                hooks_toml_str(&b, o->home);
                sb_puts(&b, "]\n");
                /* keys the user added to our table stay */
                for (size_t j = mcp + 1; j < mcp_end; j++)
                    if (!hooks_is_key(&l, j, "command") && !hooks_is_key(&l, j, "args")) sb_append(&b, l.s[j], l.len[j]);
            }
            continue;
        }
        if (i == key && key_ours) {
            if (add) {
                sb_append(&b, l.s[i], l.len[i]);
            } else {
                /* Restore what we replaced, or drop the line we added. */
                const char *was = strstr(l.s[i], "(was: ");
                if (was && was < l.s[i] + l.len[i]) {
                    const char *close = strchr(was, ')');
                    sb_puts(&b, "codex_hooks = ");
                    if (close) sb_append(&b, was + 6, (size_t)(close - was - 6));
                    sb_putc(&b, '\n');
                }
            }
            continue;
        }
        if (i == key && !key_ours && add) {
            char *v = hooks_key_value(l.s[i], l.len[i]);
            if (v && strcmp(v, "true") != 0) sb_printf(&b, "codex_hooks = true %s (was: %s)\n", HOOKS_TOML_MARK, v);
            else sb_append(&b, l.s[i], l.len[i]);
            free(v);
            continue;
        }
        if (i == feat && feat_ours && !add) {
            /* Our [features] header goes when nothing but our key was in it. */
            int other = 0;
            for (size_t j = i + 1; j < l.n && !hooks_is_any_header(&l, j); j++)
                if (j != key && *hooks_lstrip(l.s[j]) != '\n' && *hooks_lstrip(l.s[j]) != 0) other = 1;
            if (!other) {
                hooks_unsep(&b, hooks_sep_of(&l, i));
                continue;
            }
        }
        sb_append(&b, l.s[i], l.len[i]);
        if (i == feat && add && key == (size_t)-1) sb_printf(&b, "codex_hooks = true %s\n", HOOKS_TOML_MARK);
    }
    if (add && feat == (size_t)-1) {
        int n = 0;
        if (b.len && b.p[b.len - 1] != '\n') sb_putc(&b, '\n'), n++;
        if (b.len) sb_putc(&b, '\n'), n++;
        sb_printf(&b, "[features] %s sep=%d\ncodex_hooks = true %s\n", HOOKS_TOML_MARK, n, HOOKS_TOML_MARK);
    }
    if (add && mcp == (size_t)-1) {
        int n = 0;
        if (b.len && b.p[b.len - 1] != '\n') sb_putc(&b, '\n'), n++;
        if (b.len) sb_putc(&b, '\n'), n++;
        sb_printf(&b, "[mcp_servers.lcm] %s sep=%d\ncommand = ", HOOKS_TOML_MARK, n);
        hooks_toml_str(&b, o->lcm);
        sb_puts(&b, "\nargs = [\"mcp\", \"--home\", ");
        hooks_toml_str(&b, o->home);
        sb_puts(&b, "]\n");
    }
    if (b.oom) {
        rc = LC_NOMEM;
        goto done;
    }
    if (!b.p) sb_puts(&b, "");
    *out_text = sb_detach(&b);
done:
    sb_free(&b);
    hooks_lines_free(&l);
    return rc;
}

static int hooks_toml_file(const hooks_opts *o, FILE *out, const char *path, int add, char **err)
{
    char *old = NULL, *text = NULL;
    size_t len = 0;
    int existed = 0, rc;
    if ((rc = hooks_read(path, &old, &len, &existed, err)) != LC_OK) goto done;
    if (!add && !existed) {
        fprintf(out, "unchanged %s (absent)\n", path);
        goto done;
    }
    if (strlen(old) != len) {
        rc = lc_errf(err, LC_INVALID, "%s holds a NUL byte: left as it is", path);
        goto done;
    }
    if ((rc = hooks_toml_edit(o, out, path, old, add, &text)) != LC_OK) {
        rc = lc_errf(err, rc, "out of memory");
        goto done;
    }
    rc = hooks_commit(o, out, path, old, len, existed, text, err);
done:
    free(old);
    free(text);
    return rc;
}

/* ---- install / uninstall ---------------------------------------------------------------- */

static int hooks_apply(const hooks_opts *o, FILE *out, int add, char **err)
{
    char *dir = NULL, *a = NULL, *b = NULL;
    int rc;
    if (o->agent == HOOKS_CLAUDE) {
        dir = hooks_claude_dir(o);
        a = dir ? lc_asprintf("%s/settings.json", dir) : NULL;
        b = hooks_claude_mcp_file(o);
        if (!a || !b) {
            rc = lc_errf(err, LC_NOMEM, "out of memory");
            goto done;
        }
        const hooks_event_set set = {claude_events, sizeof claude_events / sizeof *claude_events};
        if ((rc = hooks_json_file(o, out, a, hooks_entries_edit, &set, add, err)) != LC_OK) goto done;
        rc = hooks_json_file(o, out, b, hooks_mcp_edit, NULL, add, err);
    } else {
        dir = hooks_codex_dir(o);
        a = dir ? lc_asprintf("%s/hooks.json", dir) : NULL;
        b = dir ? lc_asprintf("%s/config.toml", dir) : NULL;
        if (!a || !b) {
            rc = lc_errf(err, LC_NOMEM, "out of memory");
            goto done;
        }
        const hooks_event_set set = {codex_events, sizeof codex_events / sizeof *codex_events};
        if ((rc = hooks_json_file(o, out, a, hooks_entries_edit, &set, add, err)) != LC_OK) goto done;
        rc = hooks_toml_file(o, out, b, add, err);
        if (rc == LC_OK && add)
            fprintf(out, "note: Codex runs hooks it has not seen before only once you trust them (its /hooks view)\n");
    }
done:
    free(dir);
    free(a);
    free(b);
    return rc;
}

int hooks_install(const hooks_opts *o, FILE *out, char **err)
{
    return hooks_apply(o, out, 1, err);
}

int hooks_uninstall(const hooks_opts *o, FILE *out, char **err)
{
    return hooks_apply(o, out, 0, err);
}

/* ---- doctor ----------------------------------------------------------------------------- */

int hooks_present(const hooks_opts *o)
{
    char *dir = o->agent == HOOKS_CLAUDE ? hooks_claude_dir(o) : hooks_codex_dir(o);
    char *path = dir ? lc_asprintf("%s/%s", dir, o->agent == HOOKS_CLAUDE ? "settings.json" : "hooks.json") : NULL;
    char *text = NULL, *err = NULL;
    size_t len = 0;
    int existed = 0, n = 0;
    cJSON *root = NULL;
    if (path && hooks_json_load(path, &root, &text, &len, &existed, &err) == LC_OK) n = hooks_strip(root);
    cJSON_Delete(root);
    free(dir);
    free(path);
    free(text);
    free(err);
    return n > 0;
}

static int hooks_check(FILE *out, int ok, const char *what, const char *detail)
{
    fprintf(out, "%s %s%s%s\n", ok ? "ok  " : "FAIL", what, detail && *detail ? ": " : "", detail ? detail : "");
    return ok ? 0 : 1;
}

/* Is `name` an executable in a PATH folder? *where (malloc'd) names it. */
static int hooks_on_path(const char *name, char **where)
{
    const char *path = getenv("PATH");
    *where = NULL;
    if (!path) return 0;
    char *copy = lc_strdup(path), *save = NULL;
    for (char *d = copy ? strtok_r(copy, ":", &save) : NULL; d; d = strtok_r(NULL, ":", &save)) {
        char *f = lc_asprintf("%s/%s", *d ? d : ".", name);
        if (f && access(f, X_OK) == 0) {
            *where = f;
            break;
        }
        free(f);
    }
    free(copy);
    return *where != NULL;
}

/* The doctor's look at one hooks JSON file: every event present, pointing at this lcm and
 * home. */
static int hooks_doctor_hooks(const hooks_opts *o, FILE *out, const char *path, const hooks_event *evs, size_t n)
{
    cJSON *root = NULL;
    char *text = NULL, *err = NULL;
    size_t len = 0;
    int existed = 0, bad = 0;
    if (hooks_json_load(path, &root, &text, &len, &existed, &err) != LC_OK) {
        bad += hooks_check(out, 0, path, err);
        goto done;
    }
    const cJSON *hooks = cJSON_GetObjectItemCaseSensitive(root, "hooks");
    for (size_t i = 0; i < n; i++) {
        const cJSON *arr = cJSON_GetObjectItemCaseSensitive(hooks, evs[i].name), *g, *h;
        int found = 0, right = 0;
        cJSON_ArrayForEach(g, arr)
        {
            cJSON_ArrayForEach(h, cJSON_GetObjectItemCaseSensitive(g, "hooks"))
            {
                const cJSON *c = cJSON_GetObjectItemCaseSensitive(h, "command");
                if (cJSON_IsString(c) && hooks_cmd_ours(c->valuestring, "hook")) {
                    found = 1;
                    char *want = hooks_command(o, evs[i].verb);
                    if (want && strcmp(want, c->valuestring) == 0) right = 1;
                    free(want);
                }
            }
        }
        if (evs[i].prompt && !found) continue; /* optional */
        char *what = lc_asprintf("%s hook %s in %s", evs[i].name, found ? "present" : "missing", path);
        bad += hooks_check(out, found && right, what ? what : evs[i].name,
                           found && !right ? "it runs another lcm or home (run lcm hooks install again)" : NULL);
        free(what);
    }
done:
    cJSON_Delete(root);
    free(text);
    free(err);
    return bad;
}

int hooks_doctor(const hooks_opts *o, FILE *out)
{
    int bad = 0;
    char *where = NULL, *dir = NULL, *a = NULL, *b = NULL, *text = NULL, *err = NULL;
    size_t len = 0;
    int existed = 0;
    cJSON *root = NULL;
    /* the binary */
    if (hooks_on_path("lcm", &where)) {
        char *d = lc_asprintf("%s%s", where, strcmp(where, o->lcm) ? " (the hooks run this one: see below)" : "");
        bad += hooks_check(out, 1, "lcm on PATH", d);
        free(d);
    } else {
        fprintf(out, "note lcm is not on PATH (the hooks use an absolute path, which is enough)\n");
    }
    bad += hooks_check(out, access(o->lcm, X_OK) == 0, "the lcm the hooks run is executable", o->lcm);
    /* the store folder */
    {
        char *lcm_dir = lc_asprintf("%s/lcm", o->home);
        struct stat sb;
        int ok = lcm_dir && ((stat(lcm_dir, &sb) == 0 && S_ISDIR(sb.st_mode) && access(lcm_dir, W_OK | X_OK) == 0) ||
                             (stat(lcm_dir, &sb) != 0 && errno == ENOENT && lc_mkdir_p(lcm_dir, 0700, NULL) == LC_OK));
        bad += hooks_check(out, ok, "the store folder is writable", lcm_dir);
        free(lcm_dir);
    }
    if (o->agent == HOOKS_CLAUDE) {
        dir = hooks_claude_dir(o);
        a = dir ? lc_asprintf("%s/settings.json", dir) : NULL;
        b = hooks_claude_mcp_file(o);
        if (!a || !b) goto done;
        bad += hooks_doctor_hooks(o, out, a, claude_events, sizeof claude_events / sizeof *claude_events);
        if (hooks_json_load(b, &root, &text, &len, &existed, &err) != LC_OK) {
            bad += hooks_check(out, 0, b, err);
            goto done;
        }
        const cJSON *srv = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "mcpServers"), "lcm");
        const cJSON *args = cJSON_GetObjectItemCaseSensitive(srv, "args");
        const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(srv, "command");
        int right = srv && hooks_mcp_ours(srv) && cJSON_IsString(cmd) && strcmp(cmd->valuestring, o->lcm) == 0 &&
                    cJSON_GetArraySize(args) == 3 && cJSON_IsString(cJSON_GetArrayItem(args, 2)) &&
                    strcmp(cJSON_GetArrayItem(args, 2)->valuestring, o->home) == 0;
        char *what = lc_asprintf("MCP server lcm %s in %s", srv ? "present" : "missing", b);
        bad += hooks_check(out, right, what, srv && !right ? "it runs another lcm or home" : NULL);
        free(what);
    } else {
        dir = hooks_codex_dir(o);
        a = dir ? lc_asprintf("%s/hooks.json", dir) : NULL;
        b = dir ? lc_asprintf("%s/config.toml", dir) : NULL;
        if (!a || !b) goto done;
        bad += hooks_doctor_hooks(o, out, a, codex_events, sizeof codex_events / sizeof *codex_events);
        if (hooks_read(b, &text, &len, &existed, &err) != LC_OK) {
            bad += hooks_check(out, 0, b, err);
            goto done;
        }
        hooks_lines l;
        int mcp = 0, right = 0, feat = 0;
        if (hooks_split(text, &l) == LC_OK) {
            char *want_cmd = NULL;
            sbuf w = {0};
            hooks_toml_str(&w, o->lcm);
            want_cmd = sb_detach(&w);
            for (size_t i = 0; i < l.n; i++) {
                if (hooks_is_header(&l, i, "mcp_servers.lcm")) {
                    mcp = 1;
                    for (size_t j = i + 1; j < l.n && !hooks_is_any_header(&l, j); j++)
                        if (hooks_is_key(&l, j, "command")) {
                            char *v = hooks_key_value(l.s[j], l.len[j]);
                            right = v && want_cmd && strcmp(v, want_cmd) == 0;
                            free(v);
                        }
                }
                if (hooks_is_header(&l, i, "features"))
                    for (size_t j = i + 1; j < l.n && !hooks_is_any_header(&l, j); j++)
                        if (hooks_is_key(&l, j, "codex_hooks")) {
                            char *v = hooks_key_value(l.s[j], l.len[j]);
                            feat = v && strcmp(v, "true") == 0;
                            free(v);
                        }
            }
            free(want_cmd);
        }
        hooks_lines_free(&l);
        char *what = lc_asprintf("[mcp_servers.lcm] %s in %s", mcp ? "present" : "missing", b);
        bad += hooks_check(out, mcp && right, what, mcp && !right ? "it runs another lcm" : NULL);
        free(what);
        what = lc_asprintf("[features] codex_hooks = true in %s", b);
        bad += hooks_check(out, feat, what, feat ? NULL : "hooks stay off until it is set");
        free(what);
    }
done:
    cJSON_Delete(root);
    free(where);
    free(dir);
    free(a);
    free(b);
    free(text);
    free(err);
    return bad;
}
