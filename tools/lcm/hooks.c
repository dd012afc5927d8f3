/*
 * hooks.c -- installing, removing and checking the Claude Code / Codex wiring of lcm.
 *
 * The user's files are edited as text, never re-printed: JSON files (settings.json,
 * hooks.json, ~/.claude.json, .mcp.json) through jsontext's byte spans, config.toml through
 * tomlscan's statements (hooks_toml.c), so every byte that is not ours stays (indentation,
 * CRLF, a BOM, comments, numbers past double precision, escapes). Install first takes ours out, then
 * adds ours after the user's own; uninstall takes out exactly the bytes install added, so
 * install then uninstall gives the user's file back byte for byte. A hook entry is ours only
 * when its whole command is `lcm hook <event> [--home DIR]` (a user's chained command that
 * runs lcm too is theirs). Every file of a run is read and made before any is written, so a
 * file that must be refused (not JSON, a TOML shape we cannot edit safely, read-only, a
 * FIFO or a device) leaves all of them as they were. A symlinked file (dotfiles) is written
 * at its target; the .bak beside it holds the user's own version, never one with ours in it.
 * The doctor also knows the other way in, the Claude Code plugin (ccplugin.c reads its
 * records), and says which is active.
 */
#include "hooks.h"
#include "hooks_toml.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "ccplugin.h"
#include "jsontext.h"
#include "tomlscan.h"
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

/* The next shell word of `*p` (plain, '...' or "..." runs), malloc'd; NULL at the end.
 * *meta is set when an unquoted shell operator or comment shows (;&|<>()`$#): the command
 * is then more than one program's run. */
static char *hooks_word(const char **p, int *meta)
{
    const char *s = *p;
    sbuf b = {0};
    while (*s == ' ' || *s == '\t') s++;
    if (!*s) return NULL;
    while (*s && *s != ' ' && *s != '\t') {
        if (*s == '\'' || *s == '"') {
            char q = *s++;
            while (*s && *s != q) {
                if (q == '"' && (*s == '$' || *s == '`')) *meta = 1;
                if (q == '"' && *s == '\\' && s[1]) s++;
                sb_putc(&b, *s++);
            }
            if (*s) s++;
        } else {
            if (strchr(";&|<>()`$#\n", *s)) *meta = 1;
            if (*s == '\\' && s[1]) s++;
            sb_putc(&b, *s++);
        }
    }
    *p = s;
    if (!b.p) sb_puts(&b, "");
    return sb_detach(&b);
}

static const char *hooks_base(const char *path)
{
    const char *sl = strrchr(path, '/');
    return sl ? sl + 1 : path;
}

/* Whether `cmd` is one of ours: exactly `<dir>/lcm <verb> <event> [--home DIR]`, whatever
 * the folder, event and home (an install from another build or for another home is ours
 * too); anything more (`&& ./my-script.sh`, a redirection, another option) is the user's. */
static int hooks_cmd_ours(const char *cmd, const char *verb)
{
    const char *p = cmd;
    char *w[6] = {0};
    int n = 0, meta = 0;
    while (n < 6 && (w[n] = hooks_word(&p, &meta)) != NULL) n++;
    int ours = !meta && (n == 3 || (n == 5 && strcmp(w[3], "--home") == 0)) && strcmp(hooks_base(w[0]), "lcm") == 0 &&
               strcmp(w[1], verb) == 0;
    for (int k = 0; k < n; k++) free(w[k]);
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

/* Claude Code's own folder (its plugins, the user's settings), whatever the scope. */
static char *hooks_claude_user_dir(const hooks_opts *o)
{
    const char *cd = getenv("CLAUDE_CONFIG_DIR");
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

/* A settings file larger than this is not one we edit (and /dev/zero is not read forever). */
#define HOOKS_FILE_MAX ((size_t)16 << 20)

/* One file an install or uninstall may rewrite: read whole first, its new bytes made, and
 * written only once every file of the run has been made (a broken second file leaves the
 * first untouched). */
typedef struct hooks_file {
    const char *path; /* as named */
    char *real;       /* where its bytes are: a symlink's target (dotfiles), else path */
    char *old;        /* its bytes ("" when absent) */
    size_t old_len;
    int existed, link, absent;
    mode_t mode;
    char *text;  /* the new bytes; NULL: left as it is */
    int bak;     /* keep a .bak of old first: it is the user's own, none of ours in it */
    int remove;  /* uninstall emptied a file install had created: it goes */
} hooks_file;

static void hooks_file_free(hooks_file *f)
{
    free(f->real);
    free(f->old);
    free(f->text);
    memset(f, 0, sizeof *f);
}

/* Read `path` through a symlink, but only a regular file of a sane size: a FIFO would
 * block the open (O_NONBLOCK) and /dev/zero never end. */
static int hooks_file_read(hooks_file *f, const char *path, char **err)
{
    struct stat sb;
    sbuf b = {0};
    int fd = -1, rc = LC_OK;
    f->path = path;
    if (lstat(path, &sb) == 0 && S_ISLNK(sb.st_mode)) {
        f->link = 1;
        if (!(f->real = realpath(path, NULL)))
            return lc_errf(err, LC_INVALID, "%s is a symlink to a missing file: left as it is (fix the link, then run again)",
                           path);
    } else if (!(f->real = lc_strdup(path))) {
        return lc_errf(err, LC_NOMEM, "out of memory");
    }
    fd = open(f->real, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT) {
            f->old = lc_strdup("");
            return f->old ? LC_OK : lc_errf(err, LC_NOMEM, "out of memory");
        }
        return lc_errf(err, LC_ERR, "cannot open %s: %s", path, strerror(errno));
    }
    if (fstat(fd, &sb) != 0) {
        rc = lc_errf(err, LC_ERR, "cannot stat %s: %s", path, strerror(errno));
        goto done;
    }
    if (!S_ISREG(sb.st_mode)) {
        rc = lc_errf(err, LC_INVALID, "%s is not a regular file (a FIFO, a device or a folder): left as it is", path);
        goto done;
    }
    if ((size_t)sb.st_size > HOOKS_FILE_MAX) {
        rc = lc_errf(err, LC_INVALID, "%s is larger than 16 MiB, not a settings file: left as it is", path);
        goto done;
    }
    for (;;) {
        if (b.len > HOOKS_FILE_MAX) {
            rc = lc_errf(err, LC_INVALID, "%s grew past 16 MiB while read: left as it is", path);
            goto done;
        }
        if (sb_reserve(&b, 65536) != LC_OK) {
            rc = lc_errf(err, LC_NOMEM, "out of memory");
            goto done;
        }
        b.p[b.len] = 0; /* an empty file too is a C string */
        ssize_t n = read(fd, b.p + b.len, b.cap - b.len - 1);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            rc = lc_errf(err, LC_ERR, "cannot read %s: %s", path, strerror(errno));
            goto done;
        }
        if (n == 0) break;
        b.len += (size_t)n;
        b.p[b.len] = 0;
    }
    f->old_len = b.len;
    f->old = sb_detach(&b);
    f->existed = 1;
    f->mode = sb.st_mode & 07777;
done:
    if (fd >= 0) close(fd);
    sb_free(&b);
    return rc;
}

static int hooks_blank(const char *s)
{
    for (; *s; s++)
        if (!strchr(" \t\r\n", *s)) return 0;
    return 1;
}

/* What the file's new bytes need before they may be written: a writable file, and for an
 * uninstall that leaves nothing in a file no .bak says the user had, its removal. */
static int hooks_file_settle(hooks_file *f, int add, int empty, int ours_before, char **err)
{
    size_t len = f->text ? strlen(f->text) : 0;
    if (!f->text || (f->existed && len == f->old_len && memcmp(f->text, f->old, len) == 0)) return LC_OK;
    if (f->existed && !(f->mode & S_IWUSR))
        return lc_errf(err, LC_INVALID, "%s is read-only (mode %04o): left as it is (make it writable, then run again)",
                       f->path, (unsigned)f->mode);
    f->bak = add && f->existed && !ours_before;
    if (!add && empty && !f->link) {
        char *bak = lc_asprintf("%s.bak", f->path);
        struct stat sb;
        if (!bak) return lc_errf(err, LC_NOMEM, "out of memory");
        f->remove = lstat(bak, &sb) != 0;
        free(bak);
    }
    return LC_OK;
}

/* Write one prepared file (or with dry_run say what would be): a .bak of the user's own
 * bytes first, then an atomic replace of the file, through a symlink to its target, keeping
 * the file's mode. */
static int hooks_file_commit(const hooks_opts *o, FILE *out, const hooks_file *f, char **err)
{
    size_t len = f->text ? strlen(f->text) : 0;
    char *bak = NULL, *dir = NULL;
    int rc = LC_OK;
    if (f->absent) {
        fprintf(out, "unchanged %s (absent)\n", f->path);
        return LC_OK;
    }
    if (!f->text || (f->existed && len == f->old_len && memcmp(f->text, f->old, len) == 0)) {
        fprintf(out, "unchanged %s\n", f->path);
        return LC_OK;
    }
    if (o->dry_run) {
        if (f->remove) fprintf(out, "would remove %s (install made it; nothing else is in it)\n", f->path);
        else
            fprintf(out, "would write %s (%zu bytes)%s:\n%s%s", f->path, len, f->bak ? ", keeping a .bak" : "", f->text,
                    len && f->text[len - 1] == '\n' ? "" : "\n");
        return LC_OK;
    }
    if (f->remove) {
        if (unlink(f->real) != 0) return lc_errf(err, LC_ERR, "cannot remove %s: %s", f->path, strerror(errno));
        fprintf(out, "removed %s (install made it; nothing else was in it)\n", f->path);
        return LC_OK;
    }
    if (!(dir = lc_strdup(f->real))) return lc_errf(err, LC_NOMEM, "out of memory");
    char *sl = strrchr(dir, '/');
    if (sl && sl != dir) {
        *sl = 0;
        if ((rc = lc_mkdir_p(dir, 0700, err)) != LC_OK) goto done;
    }
    if (f->bak) {
        if (!(bak = lc_asprintf("%s.bak", f->path))) {
            rc = lc_errf(err, LC_NOMEM, "out of memory");
            goto done;
        }
        if ((rc = lc_write_atomic(bak, f->old, f->old_len, f->mode, err)) != LC_OK) goto done;
    }
    if ((rc = lc_write_atomic(f->real, f->text, len, f->existed ? f->mode : 0600, err)) != LC_OK) goto done;
    fprintf(out, "wrote %s%s%s\n", f->path, f->link ? " (through its symlink)" : "",
            f->bak ? " (the previous version in .bak)" : "");
done:
    free(bak);
    free(dir);
    return rc;
}

/* ---- JSON files, edited as text ------------------------------------------------------------ */

/* v printed as JSON.stringify(v, null, unit) would, its lines after the first starting with
 * `indent` (nl "" prints it on one line). */
static void hooks_json_put(sbuf *b, const cJSON *v, const char *indent, const char *unit, const char *nl, int depth)
{
    if (cJSON_IsObject(v) || cJSON_IsArray(v)) {
        int obj = cJSON_IsObject(v);
        if (!v->child) {
            sb_puts(b, obj ? "{}" : "[]");
            return;
        }
        sb_putc(b, obj ? '{' : '[');
        for (const cJSON *c = v->child; c; c = c->next) {
            sb_puts(b, nl);
            if (*nl) {
                sb_puts(b, indent);
                for (int k = 0; k <= depth; k++) sb_puts(b, unit);
            }
            if (obj) {
                char *ks = jt_quote(c->string ? c->string : "");
                if (ks) sb_printf(b, "%s: ", ks);
                else b->oom = 1;
                free(ks);
            }
            hooks_json_put(b, c, indent, unit, nl, depth + 1);
            if (c->next) sb_puts(b, *nl ? "," : ", ");
        }
        sb_puts(b, nl);
        if (*nl) {
            sb_puts(b, indent);
            for (int k = 0; k < depth; k++) sb_puts(b, unit);
        }
        sb_putc(b, obj ? '}' : ']');
        return;
    }
    char *s = cJSON_IsString(v) ? jt_quote(v->valuestring) : cJSON_PrintUnformatted(v);
    if (s) sb_puts(b, s);
    else b->oom = 1;
    free(s);
}

static char *hooks_json_value(const void *ctx, const char *indent, const char *unit, const char *nl)
{
    sbuf b = {0};
    hooks_json_put(&b, ctx, indent, unit, nl, 0);
    if (b.oom) {
        sb_free(&b);
        return NULL;
    }
    return sb_detach(&b);
}

/* The text parsed as an object (an absent or blank file reads as "{}"). */
static int hooks_json_root(const char *path, const char *text, jt_node **root, char **err)
{
    char *why = NULL;
    int rc = jt_parse(text, strlen(text), root, &why);
    if (rc == LC_NOMEM) {
        free(why);
        return lc_errf(err, rc, "out of memory");
    }
    if (rc != LC_OK || (*root)->type != JT_OBJ) {
        jt_free(*root);
        *root = NULL;
        rc = lc_errf(err, LC_INVALID, "%s is not a JSON object (%s): left as it is (fix it, then run again)", path,
                     why ? why : "another kind of value");
    }
    free(why);
    return rc;
}

/* The node at keys[0..n) from the root, or NULL. */
static jt_node *hooks_json_at(const char *text, jt_node *root, const char *const *keys, size_t n)
{
    jt_node *c = root;
    for (size_t k = 0; c && k < n; k++) c = jt_get(text, c, keys[k]);
    return c;
}

/* Append member `key` (an element when NULL) holding v to the container at keys[0..n) of
 * *text, creating nothing else; *text is replaced. A container of another type is the
 * user's shape, which we do not guess at. */
static int hooks_json_append(const char *path, char **text, const char *const *keys, size_t n, const char *key,
                             const cJSON *v, char **err)
{
    jt_node *root = NULL;
    jt_edits e = {0};
    int rc = hooks_json_root(path, *text, &root, err);
    if (rc != LC_OK) return rc;
    jt_node *c = hooks_json_at(*text, root, keys, n);
    if (!c || (c->type != JT_OBJ && c->type != JT_ARR) || (key != NULL) != (c->type == JT_OBJ)) {
        rc = lc_errf(err, LC_INVALID, "%s: \"%s\" is not of the documented shape: left as it is", path,
                     n ? keys[n - 1] : "the top level");
        goto done;
    }
    jt_append(&e, *text, strlen(*text), c, key, hooks_json_value, v);
    char *next = jt_apply(*text, strlen(*text), &e);
    if (!next) {
        rc = lc_errf(err, LC_NOMEM, "out of memory");
        goto done;
    }
    free(*text);
    *text = next;
done:
    jt_free(root);
    return rc;
}

/* The index of child `c` in its container, for a drop array. */
static size_t hooks_json_index(const jt_node *c)
{
    size_t i = 0;
    for (const jt_node *k = c->parent->child; k != c; k = k->next) i++;
    return i;
}

/* Take one child out of its container. */
static void hooks_json_drop(jt_edits *e, const char *text, const jt_node *c)
{
    unsigned char *drop = calloc(c->parent->n, 1);
    if (!drop) {
        e->oom = 1;
        return;
    }
    drop[hooks_json_index(c)] = 1;
    jt_remove(e, text, c->parent, drop);
    free(drop);
}

/* The events one agent's hooks file takes. */
typedef struct hooks_event_set {
    const hooks_event *evs;
    size_t n;
} hooks_event_set;

/* Whether the user's own version (`keep`, the .bak: NULL when none) has the container at
 * keys[0..n): one that ours left empty then stays, empty, where the user had it. */
static int hooks_kept(const char *keep, jt_node *keep_root, const char *const *keys, size_t n)
{
    return keep && keep_root && hooks_json_at(keep, keep_root, keys, n) != NULL;
}

/* Whether install is about to fill hooks.<name> (fill: the events, NULL when uninstalling). */
static int hooks_fills(const hooks_opts *o, const hooks_event_set *fill, const char *name)
{
    for (size_t i = 0; fill && i < fill->n; i++)
        if (!strcmp(fill->evs[i].name, name) && (!fill->evs[i].prompt || o->prompt_hook)) return 1;
    return 0;
}

/* Our hook entries out of hooks.<event>[].hooks[]: a group, an event and the hooks object
 * left empty by that go too, each as the exact bytes install added, unless the user's own
 * version has it (`keep`) or install is about to fill it again (`fill`), so that a second
 * install finds the same places. */
static int hooks_entries_strip(const hooks_opts *o, const hooks_event_set *fill, const char *path, const char *text,
                               const char *keep, char **out, int *removed, char **err)
{
    jt_node *root = NULL, *keep_root = NULL;
    jt_edits e = {0};
    unsigned char *dev = NULL, *dg = NULL, *dh = NULL;
    int rc = hooks_json_root(path, text, &root, err);
    *removed = 0;
    *out = NULL;
    if (rc != LC_OK) return rc;
    if (keep && jt_parse(keep, strlen(keep), &keep_root, NULL) != LC_OK) keep_root = NULL;
    jt_node *hooks = jt_get(text, root, "hooks");
    if (hooks && hooks->type == JT_OBJ && hooks->n) {
        size_t ndev = 0, i = 0;
        if (!(dev = calloc(hooks->n, 1))) goto oom;
        for (jt_node *ev = hooks->child; ev; ev = ev->next, i++) {
            if (ev->type != JT_ARR || !ev->n) continue;
            size_t ndg = 0, j = 0;
            free(dg);
            if (!(dg = calloc(ev->n, 1))) goto oom;
            for (jt_node *g = ev->child; g; g = g->next, j++) {
                jt_node *hs = jt_get(text, g, "hooks");
                if (!hs || hs->type != JT_ARR || !hs->n) continue;
                size_t ndh = 0, k = 0;
                free(dh);
                if (!(dh = calloc(hs->n, 1))) goto oom;
                for (jt_node *h = hs->child; h; h = h->next, k++) {
                    char *cmd = jt_str(text, jt_get(text, h, "command"));
                    if (cmd && hooks_cmd_ours(cmd, "hook")) dh[k] = 1, ndh++;
                    free(cmd);
                }
                *removed += (int)ndh;
                if (ndh == hs->n) dg[j] = 1, ndg++;
                else if (ndh) jt_remove(&e, text, hs, dh);
            }
            char *name = ndg == ev->n ? jt_key(text, ev) : NULL;
            const char *const ev_path[] = {"hooks", name ? name : ""};
            if (ndg == ev->n && !hooks_kept(keep, keep_root, ev_path, 2) && !(name && hooks_fills(o, fill, name)))
                dev[i] = 1, ndev++;
            else if (ndg) jt_remove(&e, text, ev, dg);
            free(name);
        }
        static const char *const hooks_path[] = {"hooks"};
        if (ndev == hooks->n && !hooks_kept(keep, keep_root, hooks_path, 1) && !fill) hooks_json_drop(&e, text, hooks);
        else if (ndev) jt_remove(&e, text, hooks, dev);
    }
    if (!(*out = jt_apply(text, strlen(text), &e))) rc = lc_errf(err, LC_NOMEM, "out of memory");
    goto done;
oom:
    jt_edits_free(&e);
    rc = lc_errf(err, LC_NOMEM, "out of memory");
done:
    free(dev);
    free(dg);
    free(dh);
    jt_free(root);
    jt_free(keep_root);
    return rc;
}

/* One matcher group per event, appended after the user's own groups. */
static int hooks_entries_add(const hooks_opts *o, const char *path, const hooks_event_set *set, char **text,
                             char **err)
{
    static const char *const hooks_key[] = {"hooks"};
    jt_node *root = NULL;
    int rc = hooks_json_root(path, *text, &root, err);
    int have = rc == LC_OK && jt_get(*text, root, "hooks") != NULL;
    jt_free(root);
    if (rc != LC_OK) return rc;
    cJSON *empty_obj = cJSON_CreateObject(), *empty_arr = cJSON_CreateArray();
    if (!empty_obj || !empty_arr) rc = lc_errf(err, LC_NOMEM, "out of memory");
    if (rc == LC_OK && !have) rc = hooks_json_append(path, text, NULL, 0, "hooks", empty_obj, err);
    for (size_t i = 0; rc == LC_OK && i < set->n; i++) {
        const hooks_event *ev = &set->evs[i];
        if (ev->prompt && !o->prompt_hook) continue;
        const char *const ev_path[] = {"hooks", ev->name};
        if ((rc = hooks_json_root(path, *text, &root, err)) != LC_OK) break;
        have = hooks_json_at(*text, root, ev_path, 2) != NULL;
        jt_free(root);
        if (!have && (rc = hooks_json_append(path, text, hooks_key, 1, ev->name, empty_arr, err)) != LC_OK) break;
        char *cmd = hooks_command(o, ev->verb);
        cJSON *g = cJSON_CreateObject(), *hs = cJSON_AddArrayToObject(g, "hooks"), *h = cJSON_CreateObject();
        cJSON_AddStringToObject(h, "type", "command");
        cJSON_AddStringToObject(h, "command", cmd ? cmd : "");
        cJSON_AddItemToArray(hs, h);
        rc = cmd && hs ? hooks_json_append(path, text, ev_path, 2, NULL, g, err) : lc_errf(err, LC_NOMEM, "out of memory");
        cJSON_Delete(g);
        free(cmd);
    }
    cJSON_Delete(empty_obj);
    cJSON_Delete(empty_arr);
    return rc;
}

/* An MCP entry is ours when it runs a program named lcm with the verb mcp. */
static int hooks_mcp_ours(const cJSON *srv)
{
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(srv, "command");
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(srv, "args");
    const cJSON *a0 = cJSON_IsArray(a) ? cJSON_GetArrayItem(a, 0) : NULL;
    return cJSON_IsString(c) && strcmp(hooks_base(c->valuestring), "lcm") == 0 && cJSON_IsString(a0) &&
           strcmp(a0->valuestring, "mcp") == 0;
}

/* mcpServers.lcm out (and mcpServers when that leaves it empty, unless the user's own
 * version has it or install refills it: `fill`); *leave when the lcm there is someone
 * else's, which stays. */
static int hooks_mcp_strip(FILE *out, int fill, const char *path, const char *text, const char *keep, char **new_text,
                           int *removed, int *leave, char **err)
{
    static const char *const servers_path[] = {"mcpServers"};
    jt_node *root = NULL, *keep_root = NULL;
    jt_edits e = {0};
    int rc = hooks_json_root(path, text, &root, err);
    *new_text = NULL;
    *removed = *leave = 0;
    if (rc != LC_OK) return rc;
    jt_node *servers = jt_get(text, root, "mcpServers");
    jt_node *lcm = servers && servers->type == JT_OBJ ? jt_get(text, servers, "lcm") : NULL;
    if (lcm) {
        cJSON *srv = cJSON_ParseWithLength(text + lcm->start, lcm->end - lcm->start);
        int ours = srv && hooks_mcp_ours(srv);
        cJSON_Delete(srv);
        if (!ours) {
            fprintf(out, "note: %s has an MCP server named lcm that is not this lcm's: left as it is\n", path);
            *leave = 1;
            goto done;
        }
        *removed = 1;
        if (keep && jt_parse(keep, strlen(keep), &keep_root, NULL) != LC_OK) keep_root = NULL;
        hooks_json_drop(&e, text, servers->n == 1 && !fill && !hooks_kept(keep, keep_root, servers_path, 1) ? servers : lcm);
    }
    if (!(*new_text = jt_apply(text, strlen(text), &e))) rc = lc_errf(err, LC_NOMEM, "out of memory");
done:
    jt_edits_free(&e);
    jt_free(root);
    jt_free(keep_root);
    return rc;
}

static int hooks_mcp_add(const hooks_opts *o, const char *path, char **text, char **err)
{
    static const char *const servers_key[] = {"mcpServers"};
    jt_node *root = NULL;
    int rc = hooks_json_root(path, *text, &root, err);
    int have = rc == LC_OK && jt_get(*text, root, "mcpServers") != NULL;
    jt_free(root);
    if (rc != LC_OK) return rc;
    /* The shape `claude mcp add lcm -- <lcm> mcp --home DIR` records. */
    cJSON *empty = cJSON_CreateObject(), *srv = cJSON_CreateObject(), *args = cJSON_CreateArray();
    cJSON_AddStringToObject(srv, "type", "stdio");
    cJSON_AddStringToObject(srv, "command", o->lcm);
    cJSON_AddItemToArray(args, cJSON_CreateString("mcp"));
    cJSON_AddItemToArray(args, cJSON_CreateString("--home"));
    cJSON_AddItemToArray(args, cJSON_CreateString(o->home));
    cJSON_AddItemToObject(srv, "args", args);
    cJSON_AddObjectToObject(srv, "env");
    if (!empty || !srv || !args) rc = lc_errf(err, LC_NOMEM, "out of memory");
    if (rc == LC_OK && !have) rc = hooks_json_append(path, text, NULL, 0, "mcpServers", empty, err);
    if (rc == LC_OK) rc = hooks_json_append(path, text, servers_key, 1, "lcm", srv, err);
    cJSON_Delete(empty);
    cJSON_Delete(srv);
    return rc;
}

enum { HOOKS_ENTRIES, HOOKS_MCP };

/* Read one JSON file and make its new bytes: ours out, and with add the current ours in
 * (after the user's own), every other byte as it was. */
static int hooks_json_prepare(const hooks_opts *o, FILE *out, hooks_file *f, const char *path, int what,
                              const hooks_event_set *set, int add, char **err)
{
    char *base = NULL, *text = NULL;
    int removed = 0, leave = 0, rc;
    if ((rc = hooks_file_read(f, path, err)) != LC_OK) return rc;
    if (!add && !f->existed) {
        f->absent = 1;
        return LC_OK;
    }
    if (strlen(f->old) != f->old_len) return lc_errf(err, LC_INVALID, "%s holds a NUL byte: left as it is", path);
    /* An absent or blank file is an empty object, written in the usual two-space layout. */
    if (!(base = hooks_blank(f->old) ? lc_strdup("{}\n") : lc_strdup(f->old))) return lc_errf(err, LC_NOMEM, "out of memory");
    /* The .bak is the user's own version: a container it has is theirs, kept even empty. */
    hooks_file bak = {0};
    char *bak_path = lc_asprintf("%s.bak", path), *bak_err = NULL;
    const char *keep = bak_path && hooks_file_read(&bak, bak_path, &bak_err) == LC_OK && bak.existed &&
                               strlen(bak.old) == bak.old_len ? bak.old : NULL;
    rc = what == HOOKS_ENTRIES ? hooks_entries_strip(o, add ? set : NULL, path, base, keep, &text, &removed, err)
                               : hooks_mcp_strip(out, add, path, base, keep, &text, &removed, &leave, err);
    hooks_file_free(&bak);
    free(bak_path);
    free(bak_err);
    if (rc != LC_OK || leave || (!add && !removed)) goto done; /* nothing of ours: not touched */
    if (add)
        rc = what == HOOKS_ENTRIES ? hooks_entries_add(o, path, set, &text, err) : hooks_mcp_add(o, path, &text, err);
    if (rc != LC_OK) goto done;
    jt_node *root = NULL;
    int empty = 0;
    if (!add && jt_parse(text, strlen(text), &root, NULL) == LC_OK) empty = root->type == JT_OBJ && root->n == 0;
    jt_free(root);
    f->text = text;
    text = NULL;
    rc = hooks_file_settle(f, add, empty, removed > 0, err);
done:
    free(base);
    free(text);
    return rc;
}

/* ---- config.toml, the file (its statements are hooks_toml.c's) ------------------------------ */

/* Read Codex's config.toml and make its new bytes: ours out, and with add ours in. */
static int hooks_config_prepare(const hooks_opts *o, FILE *out, hooks_file *f, const char *path, int add, char **err)
{
    char *text = NULL;
    int removed = 0, rc;
    if ((rc = hooks_file_read(f, path, err)) != LC_OK) return rc;
    if (!add && !f->existed) {
        f->absent = 1;
        return LC_OK;
    }
    if (strlen(f->old) != f->old_len) return lc_errf(err, LC_INVALID, "%s holds a NUL byte: left as it is", path);
    if (!add && !strstr(f->old, HOOKS_TOML_MARK)) return LC_OK; /* nothing of ours: not even read */
    if ((rc = hooks_toml_strip(path, f->old, &text, &removed, err)) != LC_OK || (!add && !removed)) goto done;
    if (add && (rc = hooks_toml_add(o, out, path, &text, err)) != LC_OK) goto done;
    /* What we write must split into statements again (a guard: the edits are made so). */
    toml_doc check;
    if ((rc = hooks_toml_scan(path, text, &check, err)) != LC_OK) goto done;
    toml_doc_free(&check);
    f->text = text;
    text = NULL;
    rc = hooks_file_settle(f, add, hooks_blank(f->text), removed > 0, err);
done:
    free(text);
    return rc;
}

/* ---- install / uninstall ---------------------------------------------------------------- */

/* Every file of the agent made first, then written: a file we must refuse (not JSON, not a
 * TOML we can edit, read-only, a FIFO) leaves all of them as they were. */
static int hooks_apply(const hooks_opts *o, FILE *out, int add, char **err)
{
    char *dir = NULL, *a = NULL, *b = NULL;
    hooks_file fa = {0}, fb = {0};
    int rc;
    int claude = o->agent == HOOKS_CLAUDE;
    dir = claude ? hooks_claude_dir(o) : hooks_codex_dir(o);
    a = dir ? lc_asprintf("%s/%s", dir, claude ? "settings.json" : "hooks.json") : NULL;
    b = claude ? hooks_claude_mcp_file(o) : dir ? lc_asprintf("%s/config.toml", dir) : NULL;
    if (!a || !b) {
        rc = lc_errf(err, LC_NOMEM, "out of memory");
        goto done;
    }
    const hooks_event_set set = claude ? (hooks_event_set){claude_events, sizeof claude_events / sizeof *claude_events}
                                       : (hooks_event_set){codex_events, sizeof codex_events / sizeof *codex_events};
    if ((rc = hooks_json_prepare(o, out, &fa, a, HOOKS_ENTRIES, &set, add, err)) != LC_OK) goto done;
    rc = claude ? hooks_json_prepare(o, out, &fb, b, HOOKS_MCP, NULL, add, err) : hooks_config_prepare(o, out, &fb, b, add, err);
    if (rc != LC_OK) goto done;
    if ((rc = hooks_file_commit(o, out, &fa, err)) != LC_OK) goto done;
    if ((rc = hooks_file_commit(o, out, &fb, err)) != LC_OK) goto done;
    if (!claude && add)
        fprintf(out, "note: Codex runs hooks it has not seen before only once you trust them (its /hooks view)\n");
done:
    hooks_file_free(&fa);
    hooks_file_free(&fb);
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

/* A JSON file read for a look (the doctor's): absent or blank = {}. */
static int hooks_json_load(const char *path, cJSON **root, char **err)
{
    hooks_file f = {0};
    jt_node *jr = NULL;
    int rc = hooks_file_read(&f, path, err);
    *root = NULL;
    if (rc == LC_OK && hooks_blank(f.old)) *root = cJSON_CreateObject();
    else if (rc == LC_OK && (rc = hooks_json_root(path, f.old, &jr, err)) == LC_OK)
        *root = cJSON_ParseWithLength(f.old, f.old_len);
    if (rc == LC_OK && !*root) rc = lc_errf(err, LC_NOMEM, "out of memory");
    jt_free(jr);
    hooks_file_free(&f);
    return rc;
}

/* Whether an entry of ours is in the agent's hooks file (`lcm hooks install` ran). */
static int hooks_entries_present(const hooks_opts *o)
{
    char *dir = o->agent == HOOKS_CLAUDE ? hooks_claude_dir(o) : hooks_codex_dir(o);
    char *path = dir ? lc_asprintf("%s/%s", dir, o->agent == HOOKS_CLAUDE ? "settings.json" : "hooks.json") : NULL;
    char *text = NULL, *err = NULL;
    hooks_file f = {0};
    int n = 0;
    if (path && hooks_file_read(&f, path, &err) == LC_OK && !hooks_blank(f.old))
        hooks_entries_strip(o, NULL, path, f.old, NULL, &text, &n, &err);
    hooks_file_free(&f);
    free(dir);
    free(path);
    free(text);
    free(err);
    return n > 0;
}

/* The plugin installed through `claude plugin install` and enabled (Claude Code only); a
 * record that cannot be read is said in *err (when err is given) and counts as no plugin. */
static int hooks_plugin_on(const hooks_opts *o, ccplugin_state *st, char **err)
{
    char *dir = hooks_claude_user_dir(o);
    int on = dir && ccplugin_find(dir, o->project_dir, st, err) == LC_OK && st->id && st->enabled;
    free(dir);
    return on;
}

int hooks_present(const hooks_opts *o)
{
    ccplugin_state st = {0};
    int on = hooks_entries_present(o) || (o->agent == HOOKS_CLAUDE && hooks_plugin_on(o, &st, NULL));
    ccplugin_state_free(&st);
    return on;
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
    int bad = 0;
    if (hooks_json_load(path, &root, &err) != LC_OK) {
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

/* Whether `cmd` is the plugin's hook command for `verb`: its launcher (scripts/lcm-run, under
 * whatever root Claude Code substitutes) then `hook VERB`. */
static int hooks_plugin_cmd(const char *cmd, const char *verb)
{
    char *tail = lc_asprintf(" hook %s", verb);
    size_t n = tail ? strlen(tail) : 0, len = strlen(cmd);
    int ours = tail && strstr(cmd, "/scripts/lcm-run") && len > n && strcmp(cmd + len - n, tail) == 0;
    free(tail);
    return ours;
}

/* The doctor's look at the installed plugin: enabled, its copy holding our hook for every
 * event and the lcm MCP server, and an lcm for its launcher to start (the launcher's order:
 * PATH, then the build `make` recorded beside it). */
static int hooks_doctor_plugin(FILE *out, const ccplugin_state *st)
{
    int bad = 0;
    cJSON *root = NULL;
    char *err = NULL, *where = NULL, *rec = NULL, *recorded = NULL;
    sbuf miss = {0};
    char *what = lc_asprintf("Claude Code plugin %s enabled (scope %s)", st->id, st->scope);
    bad += hooks_check(out, st->enabled, what ? what : st->id,
                       st->enabled ? st->install_path : "it is disabled: claude plugin enable " CCPLUGIN_NAME);
    free(what);
    char *hp = lc_asprintf("%s/hooks/hooks.json", st->install_path);
    char *mp = lc_asprintf("%s/.mcp.json", st->install_path);
    if (!hp || !mp) goto done;
    if (hooks_json_load(hp, &root, &err) != LC_OK) {
        bad += hooks_check(out, 0, hp, err);
    } else {
        const cJSON *hooks = cJSON_GetObjectItemCaseSensitive(root, "hooks");
        for (size_t i = 0; i < sizeof claude_events / sizeof *claude_events; i++) {
            const cJSON *g, *h;
            int found = 0;
            if (claude_events[i].prompt) continue;
            cJSON_ArrayForEach(g, cJSON_GetObjectItemCaseSensitive(hooks, claude_events[i].name))
            {
                cJSON_ArrayForEach(h, cJSON_GetObjectItemCaseSensitive(g, "hooks"))
                {
                    const cJSON *c = cJSON_GetObjectItemCaseSensitive(h, "command");
                    if (cJSON_IsString(c) && hooks_plugin_cmd(c->valuestring, claude_events[i].verb)) found = 1;
                }
            }
            if (!found) sb_printf(&miss, "%s%s", miss.len ? ", " : "", claude_events[i].name);
        }
        what = lc_asprintf("the plugin's hooks in %s", hp);
        char *d = miss.len ? lc_asprintf("missing %s (reinstall the plugin)", miss.p) : NULL;
        bad += hooks_check(out, !miss.len, what ? what : hp, d);
        free(d);
        free(what);
    }
    cJSON_Delete(root);
    root = NULL;
    free(err);
    err = NULL;
    if (hooks_json_load(mp, &root, &err) != LC_OK) {
        bad += hooks_check(out, 0, mp, err);
    } else {
        const cJSON *srv = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "mcpServers"), "lcm");
        const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(srv, "command");
        const cJSON *arg = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(srv, "args"), 0);
        int ok = cJSON_IsString(cmd) && strstr(cmd->valuestring, "/scripts/lcm-run") && cJSON_IsString(arg) &&
                 strcmp(arg->valuestring, "mcp") == 0;
        what = lc_asprintf("the plugin's MCP server lcm in %s", mp);
        bad += hooks_check(out, ok, what ? what : mp, ok ? NULL : "missing or changed (reinstall the plugin)");
        free(what);
    }
    /* what the launcher will start */
    rec = lc_asprintf("%s/scripts/lcm-path", st->install_path);
    size_t rl = 0;
    if (rec && lc_read_file(rec, &recorded, &rl, NULL) == LC_OK) recorded[strcspn(recorded, "\r\n")] = 0;
    if (hooks_on_path("lcm", &where)) {
        bad += hooks_check(out, 1, "the plugin's launcher starts lcm from PATH", where);
    } else if (recorded && *recorded && access(recorded, X_OK) == 0) {
        bad += hooks_check(out, 1, "the plugin's launcher starts the build make recorded", recorded);
    } else {
        bad += hooks_check(out, 0, "the plugin's launcher finds an lcm",
                           "none on PATH and no build recorded: run make in the repository and put build/lcm on PATH");
    }
done:
    cJSON_Delete(root);
    sb_free(&miss);
    free(hp);
    free(mp);
    free(err);
    free(where);
    free(rec);
    free(recorded);
    return bad;
}

/* Codex's name for the hook at (group, handler) of `event` in the hooks.json at `path`, the
 * key its /hooks view records trust under: "<path>:<event in snake case>:<group>:<handler>"
 * (the path as Codex spells it: repeated slashes are one). */
static char *hooks_codex_key(const char *path, const char *event, int group, int handler)
{
    sbuf b = {0};
    for (const char *p = path; *p; p++)
        if (*p != '/' || p[1] != '/') sb_putc(&b, *p);
    sb_putc(&b, ':');
    for (const char *p = event; *p; p++) {
        if (*p >= 'A' && *p <= 'Z') {
            if (p != event) sb_putc(&b, '_');
            sb_putc(&b, (char)(*p - 'A' + 'a'));
        } else {
            sb_putc(&b, *p);
        }
    }
    sb_printf(&b, ":%d:%d", group, handler);
    return b.oom ? (sb_free(&b), NULL) : sb_detach(&b);
}

/* Codex runs a hook of hooks.json only once the user trusted it (/hooks), so each of ours
 * needs its trust recorded in config.toml; a FAIL names the way to give it. A trust recorded
 * for an older text of the hook (Codex asks again after a change) is not told apart here:
 * that needs Codex's own hash. */
static int hooks_doctor_trust(FILE *out, const char *hooks_path, const char *config_path, const char *text,
                              const toml_doc *d)
{
    cJSON *root = NULL;
    char *err = NULL;
    int bad = 0;
    if (hooks_json_load(hooks_path, &root, &err) != LC_OK) goto done; /* told by the hooks' own check */
    const cJSON *hooks = cJSON_GetObjectItemCaseSensitive(root, "hooks");
    for (size_t i = 0; i < sizeof codex_events / sizeof *codex_events; i++) {
        const cJSON *g, *h;
        int gi = 0;
        cJSON_ArrayForEach(g, cJSON_GetObjectItemCaseSensitive(hooks, codex_events[i].name))
        {
            int hi = 0;
            cJSON_ArrayForEach(h, cJSON_GetObjectItemCaseSensitive(g, "hooks"))
            {
                const cJSON *c = cJSON_GetObjectItemCaseSensitive(h, "command");
                if (cJSON_IsString(c) && hooks_cmd_ours(c->valuestring, "hook")) {
                    char *key = hooks_codex_key(hooks_path, codex_events[i].name, gi, hi);
                    int ok = key && hooks_toml_trusted(text, d, key);
                    char *what = lc_asprintf("Codex trusts the %s hook (%s in %s)", codex_events[i].name,
                                             key ? key : "?", config_path);
                    bad += hooks_check(out, ok, what ? what : codex_events[i].name,
                                       ok ? NULL
                                          : "no trust recorded, so Codex never runs it: open codex, type /hooks and "
                                            "trust lcm's hooks");
                    free(what);
                    free(key);
                }
                hi++;
            }
            gi++;
        }
    }
done:
    cJSON_Delete(root);
    free(err);
    return bad;
}

int hooks_doctor(const hooks_opts *o, FILE *out)
{
    int bad = 0;
    char *where = NULL, *dir = NULL, *a = NULL, *b = NULL, *err = NULL;
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
        /* Two ways in: `claude plugin install` and `lcm hooks install`; each is checked as
         * itself, and both at once would capture every event twice. */
        ccplugin_state st = {0};
        int plugin = hooks_plugin_on(o, &st, &err), entries = hooks_entries_present(o);
        if (err) {
            bad += hooks_check(out, 0, "Claude Code's plugin records", err);
            free(err);
            err = NULL;
        }
        if (plugin) {
            fprintf(out, "active: the Claude Code plugin %s (claude plugin install)\n", st.id);
            bad += hooks_doctor_plugin(out, &st);
        } else if (st.id) {
            fprintf(out, "note the Claude Code plugin %s is installed but not enabled\n", st.id);
        }
        if (plugin && entries) {
            char *d = lc_asprintf("every event would be captured twice: keep one (lcm hooks uninstall --agent "
                                  "claude-code, or claude plugin uninstall %s)", st.id);
            bad += hooks_check(out, 0, "the plugin and lcm hooks install are both active", d);
            free(d);
        }
        ccplugin_state_free(&st);
        if (plugin && !entries) goto done;
        if (entries) fprintf(out, "active: lcm hooks install (%s)\n", a);
        else
            fprintf(out, "note neither is set up: lcm hooks install --agent claude-code, or claude plugin install "
                         "%s@%s (see the README)\n", CCPLUGIN_NAME, CCPLUGIN_NAME);
        bad += hooks_doctor_hooks(o, out, a, claude_events, sizeof claude_events / sizeof *claude_events);
        if (hooks_json_load(b, &root, &err) != LC_OK) {
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
        hooks_file f = {0};
        toml_doc d = {0};
        int mcp = 0, right = 0, feat = 0;
        if (hooks_file_read(&f, b, &err) != LC_OK || hooks_toml_scan(b, f.old, &d, &err) != LC_OK) {
            hooks_file_free(&f);
            bad += hooks_check(out, 0, b, err);
            goto done;
        }
        hooks_toml_view v;
        sbuf w = {0};
        hooks_toml_str(&w, o->lcm);
        hooks_toml_look(f.old, &d, &v);
        if ((mcp = v.mcp_hdr >= 0))
            for (size_t j = (size_t)v.mcp_hdr + 1; j < d.n && d.v[j].kind != TOML_TABLE && d.v[j].kind != TOML_ARRAY_TABLE; j++) {
                static const char *const command[] = {"command"};
                if (d.v[j].kind != TOML_KEYVAL || !toml_key_is(&d.v[j], command, 1)) continue;
                char *val = hooks_toml_value(f.old, &d.v[j]);
                right = val && w.p && strcmp(val, w.p) == 0;
                free(val);
            }
        if (v.key >= 0) {
            char *val = hooks_toml_value(f.old, &d.v[v.key]);
            feat = val && strcmp(val, "true") == 0;
            free(val);
        } else if (v.feat_inline >= 0) {
            size_t vs = 0, ve = 0;
            const toml_stmt *s = &d.v[v.feat_inline];
            feat = toml_inline_get(f.old, s->val_start, s->val_end, "codex_hooks", &vs, &ve) && ve - vs == 4 &&
                   !memcmp(f.old + vs, "true", 4);
        }
        bad += hooks_doctor_trust(out, a, b, f.old, &d);
        sb_free(&w);
        toml_doc_free(&d);
        hooks_file_free(&f);
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
    free(err);
    return bad;
}
