/*
 * hooks_toml.c -- Codex's config.toml as hooks install, uninstall and the doctor see it
 * (hooks_toml.h): where [features] codex_hooks and [mcp_servers.lcm] are, our marked lines
 * put in and taken out as text edits of tomlscan's statements (every byte not ours stays),
 * and whether a hook's trust is recorded.
 */
#include "hooks_toml.h"

#include <stdlib.h>
#include <string.h>

#include "jsontext.h"
#include "util.h"

/* A TOML basic string. */
void hooks_toml_str(sbuf *b, const char *s)
{
    sb_putc(b, '"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') sb_printf(b, "\\%c", *s);
        else if ((unsigned char)*s < 0x20) sb_printf(b, "\\u%04x", (unsigned char)*s);
        else sb_putc(b, *s);
    }
    sb_putc(b, '"');
}

void hooks_toml_look(const char *text, const toml_doc *d, hooks_toml_view *v)
{
    static const char *const features[] = {"features"}, *const mcp_servers[] = {"mcp_servers"},
                             *const mcp_lcm[] = {"mcp_servers", "lcm"}, *const codex_hooks[] = {"codex_hooks"};
    *v = (hooks_toml_view){-1, -1, 0, -1, -1, -1, -1, -1, -1, -1};
    for (size_t i = 0; i < d->n; i++) {
        const toml_stmt *st = &d->v[i];
        if (st->kind == TOML_TABLE) {
            if (toml_key_is(st, features, 1)) v->feat_hdr = (long)i;
            if (toml_key_is(st, mcp_lcm, 2)) v->mcp_hdr = (long)i;
        } else if (st->kind == TOML_ARRAY_TABLE) {
            if (!strcmp(st->key[0], "features")) v->feat_other = (long)i;
            if (toml_key_is(st, mcp_servers, 1)) v->mcp_other = (long)i;
            if (st->nkey >= 2 && !strcmp(st->key[0], "mcp_servers") && !strcmp(st->key[1], "lcm")) v->mcp_user = (long)i;
        } else if (st->kind == TOML_KEYVAL && st->table < 0) {
            int inl = text[st->val_start] == '{';
            if (!strcmp(st->key[0], "features")) {
                if (st->nkey == 1) *(inl ? &v->feat_inline : &v->feat_other) = (long)i;
                else v->feat_dotted = (long)i;
                if (st->nkey == 2 && !strcmp(st->key[1], "codex_hooks")) v->key = (long)i, v->key_root = 1;
            }
            if (!strcmp(st->key[0], "mcp_servers")) {
                if (st->nkey == 1) *(inl ? &v->mcp_inline : &v->mcp_other) = (long)i;
                else if (!strcmp(st->key[1], "lcm")) v->mcp_user = (long)i;
            }
        } else if (st->kind == TOML_KEYVAL && d->v[st->table].kind == TOML_TABLE) {
            const toml_stmt *t = &d->v[st->table];
            if (toml_key_is(t, features, 1) && toml_key_is(st, codex_hooks, 1)) v->key = (long)i, v->key_root = 0;
            if (toml_key_is(t, mcp_servers, 1) && !strcmp(st->key[0], "lcm")) v->mcp_user = (long)i;
        }
    }
}

/* The comment of statement i holds our mark. */
static const char *hooks_toml_mark(const char *text, const toml_stmt *st)
{
    size_t ml = strlen(HOOKS_TOML_MARK);
    for (size_t k = st->com_start; k + ml <= st->line_end; k++)
        if (memcmp(text + k, HOOKS_TOML_MARK, ml) == 0) return text + k + ml;
    return NULL;
}

/* The newlines install put before a statement of ours ("sep=N" after the mark). */
static int hooks_toml_sep(const char *text, const toml_stmt *st)
{
    const char *m = hooks_toml_mark(text, st);
    for (; m && m + 4 <= text + st->line_end; m++)
        if (memcmp(m, "sep=", 4) == 0) return atoi(m + 4);
    return 0;
}

/* `at` moved back over up to n newlines ("\n" or "\r\n") just before it. */
static size_t hooks_toml_back(const char *text, size_t at, int n)
{
    for (int k = 0; k < n && at > 0 && text[at - 1] == '\n'; k++) at -= at > 1 && text[at - 2] == '\r' ? 2 : 1;
    return at;
}

/* config.toml's statements, or a refusal that names the line it could not read. */
int hooks_toml_scan(const char *path, const char *text, toml_doc *d, char **err)
{
    char *why = NULL;
    int rc = toml_scan(text, strlen(text), d, &why);
    if (rc != LC_OK)
        rc = lc_errf(err, rc, rc == LC_NOMEM ? "out of memory" : "%s, %s: cannot be edited safely; nothing was changed",
                     path, why ? why : "unreadable");
    free(why);
    return rc;
}

/* Where statement st's own bytes start (the first one's after a BOM). */
static size_t hooks_toml_from(const char *text, const toml_stmt *st)
{
    return st->start == 0 && !strncmp(text, "\xEF\xBB\xBF", 3) ? 3 : st->start;
}

/* The text of statement st's value. */
char *hooks_toml_value(const char *text, const toml_stmt *st)
{
    return lc_strndup(text + st->val_start, st->val_end - st->val_start);
}

/* Take out exactly what install put in: our [mcp_servers.lcm] table, our codex_hooks line
 * (or give back whole the user's line it replaced), our [features] header when nothing else
 * is in its table; *removed counts what was ours. */
int hooks_toml_strip(const char *path, const char *text, char **out, int *removed, char **err)
{
    toml_doc d;
    hooks_toml_view v;
    jt_edits e = {0};
    int rc = hooks_toml_scan(path, text, &d, err);
    *out = NULL;
    *removed = 0;
    if (rc != LC_OK) return rc;
    hooks_toml_look(text, &d, &v);
    if (v.mcp_hdr >= 0 && hooks_toml_mark(text, &d.v[v.mcp_hdr])) {
        const toml_stmt *h = &d.v[v.mcp_hdr];
        size_t last = (size_t)v.mcp_hdr;
        for (size_t j = last + 1; j < d.n && d.v[j].kind != TOML_TABLE && d.v[j].kind != TOML_ARRAY_TABLE; j++)
            if (d.v[j].kind == TOML_KEYVAL) last = j;
        jt_replace(&e, hooks_toml_back(text, h->start, hooks_toml_sep(text, h)), d.v[last].end, "");
        (*removed)++;
    }
    if (v.key >= 0 && hooks_toml_mark(text, &d.v[v.key])) {
        const toml_stmt *k = &d.v[v.key];
        const char *m = hooks_toml_mark(text, k), *end = text + k->line_end, *was = NULL;
        for (const char *q = m; q + 6 <= end; q++)
            if (memcmp(q, "(was: ", 6) == 0) {
                was = q + 6;
                break;
            }
        const char *close = end;
        while (was && close > was && close[-1] != ')') close--;
        if (was && close > was) {
            /* the user's own line, kept whole in our comment (an older install kept only its value) */
            char *line = lc_strndup(was, (size_t)(close - 1 - was));
            char *put = line && memchr(line, '=', strlen(line)) ? lc_strdup(line) : lc_asprintf("codex_hooks = %s", line ? line : "");
            if (put) jt_replace(&e, hooks_toml_from(text, k), k->line_end, put);
            else e.oom = 1;
            free(line);
            free(put);
        } else {
            jt_replace(&e, hooks_toml_back(text, k->start, hooks_toml_sep(text, k)), k->end, "");
        }
        (*removed)++;
    }
    if (v.feat_hdr >= 0 && hooks_toml_mark(text, &d.v[v.feat_hdr])) {
        int other = 0;
        for (size_t j = (size_t)v.feat_hdr + 1; j < d.n && d.v[j].kind != TOML_TABLE && d.v[j].kind != TOML_ARRAY_TABLE; j++)
            if (d.v[j].kind == TOML_KEYVAL && (long)j != v.key) other = 1;
        if (!other) {
            const toml_stmt *h = &d.v[v.feat_hdr];
            jt_replace(&e, hooks_toml_back(text, h->start, hooks_toml_sep(text, h)), h->end, "");
            (*removed)++;
        }
    }
    toml_doc_free(&d);
    if (!(*out = jt_apply(text, strlen(text), &e))) rc = lc_errf(err, LC_NOMEM, "%s: could not be edited: nothing was changed", path);
    return rc;
}

/* `[mcp_servers.lcm]` (ours: marked, with the newlines put before it) appended to b. */
static void hooks_toml_sep_put(sbuf *b, const char *nl, int *n)
{
    *n = 0;
    if (b->len && b->p[b->len - 1] != '\n') sb_puts(b, nl), (*n)++;
    if (b->len) sb_puts(b, nl), (*n)++;
}

/* Put ours into a text that holds none of ours: codex_hooks = true where Codex reads it
 * ([features], or beside the root's features.* keys), the MCP table at the end. A shape we
 * cannot add to without guessing (an inline table, [[features]]) is refused, saying what to
 * do by hand. */
int hooks_toml_add(const hooks_opts *o, FILE *out, const char *path, char **text, char **err)
{
    toml_doc d;
    hooks_toml_view v;
    jt_edits e = {0};
    const char *nl;
    char unit[17], *val = NULL;
    sbuf b = {0};
    size_t vs = 0, ve = 0, len = strlen(*text);
    int rc = hooks_toml_scan(path, *text, &d, err), n = 0;
    if (rc != LC_OK) return rc;
    const char *t = *text;
    jt_style(t, len, &nl, unit);
    hooks_toml_look(t, &d, &v);
    if (v.key >= 0) {
        const toml_stmt *k = &d.v[v.key];
        val = hooks_toml_value(t, k);
        if (val && strcmp(val, "true") != 0) {
            size_t from = hooks_toml_from(t, k);
            if (memchr(t + from, '\n', k->line_end - from)) {
                rc = lc_errf(err, LC_INVALID, "%s, line %zu: codex_hooks's value runs over lines: set codex_hooks = true "
                             "yourself, then run again; nothing was changed", path, k->line);
                goto done;
            }
            /* the user's line stays whole in our comment, so uninstall gives it back as it was */
            size_t ind = from;
            while (ind < k->line_end && (t[ind] == ' ' || t[ind] == '\t')) ind++;
            char *line = lc_asprintf("%.*s%s = true %s (was: %.*s)", (int)(ind - from), t + from,
                                     v.key_root ? "features.codex_hooks" : "codex_hooks", HOOKS_TOML_MARK,
                                     (int)(k->line_end - from), t + from);
            if (line) jt_replace(&e, from, k->line_end, line);
            else e.oom = 1;
            free(line);
        }
    } else if (v.feat_inline >= 0) {
        const toml_stmt *s = &d.v[v.feat_inline];
        int set = toml_inline_get(t, s->val_start, s->val_end, "codex_hooks", &vs, &ve) && ve - vs == 4 &&
                  !memcmp(t + vs, "true", 4);
        if (!set) {
            rc = lc_errf(err, LC_INVALID, "%s, line %zu: features is an inline table (features = { ... }): add "
                         "codex_hooks = true inside it yourself, then run again; nothing was changed", path, s->line);
            goto done;
        }
    } else if (v.feat_other >= 0) {
        rc = lc_errf(err, LC_INVALID, "%s, line %zu: features is not a table lcm can add codex_hooks to: set "
                     "features.codex_hooks = true yourself, then run again; nothing was changed", path,
                     d.v[v.feat_other].line);
        goto done;
    } else if (v.feat_hdr >= 0 || v.feat_dotted >= 0) {
        /* right after the header (or the root's last features.* key); a last line without a
         * newline gets one, which uninstall takes back (sep=1) */
        const toml_stmt *s = &d.v[v.feat_hdr >= 0 ? v.feat_hdr : v.feat_dotted];
        int bare = s->end == s->line_end;
        char *line = lc_asprintf("%s%s = true %s%s%s", bare ? nl : "", v.feat_hdr >= 0 ? "codex_hooks" : "features.codex_hooks",
                                 HOOKS_TOML_MARK, bare ? " sep=1" : "", nl);
        if (line) jt_replace(&e, s->end, s->end, line);
        else e.oom = 1;
        free(line);
    }
    if (v.mcp_inline >= 0 && !toml_inline_get(t, d.v[v.mcp_inline].val_start, d.v[v.mcp_inline].val_end, "lcm", &vs, &ve)) {
        rc = lc_errf(err, LC_INVALID, "%s, line %zu: mcp_servers is an inline table (mcp_servers = { ... }): add the "
                     "lcm server inside it yourself, then run again; nothing was changed", path, d.v[v.mcp_inline].line);
        goto done;
    }
    if (v.mcp_other >= 0) {
        rc = lc_errf(err, LC_INVALID, "%s, line %zu: mcp_servers is not a table lcm can add to; nothing was changed", path,
                     d.v[v.mcp_other].line);
        goto done;
    }
    char *next = jt_apply(t, len, &e);
    if (!next) {
        rc = lc_errf(err, LC_NOMEM, "out of memory");
        goto done;
    }
    sb_puts(&b, next);
    free(next);
    if (v.key < 0 && v.feat_inline < 0 && v.feat_hdr < 0 && v.feat_dotted < 0) {
        hooks_toml_sep_put(&b, nl, &n);
        sb_printf(&b, "[features] %s sep=%d%scodex_hooks = true %s%s", HOOKS_TOML_MARK, n, nl, HOOKS_TOML_MARK, nl);
    }
    if (v.mcp_hdr >= 0 || v.mcp_user >= 0 || v.mcp_inline >= 0) {
        fprintf(out, "note: %s has its own lcm MCP server: left as it is\n", path);
    } else {
        hooks_toml_sep_put(&b, nl, &n);
        sb_printf(&b, "[mcp_servers.lcm] %s sep=%d%scommand = ", HOOKS_TOML_MARK, n, nl);
        hooks_toml_str(&b, o->lcm);
        sb_printf(&b, "%sargs = [\"mcp\", \"--home\", ", nl);
        hooks_toml_str(&b, o->home);
        sb_printf(&b, "]%s", nl);
    }
    if (!b.p) sb_puts(&b, "");
    if (b.oom) {
        rc = lc_errf(err, LC_NOMEM, "out of memory");
        goto done;
    }
    free(*text);
    *text = sb_detach(&b);
done:
    jt_edits_free(&e);
    sb_free(&b);
    free(val);
    toml_doc_free(&d);
    return rc;
}

/* Whether config.toml (text, scanned as d) records a trusted hash for Codex's hook `key`:
 * hooks.state."<key>".trusted_hash, in a table of its own (as /hooks writes it), as a dotted
 * key, or inside an inline table. */
int hooks_toml_trusted(const char *text, const toml_doc *d, const char *key)
{
    for (size_t i = 0; i < d->n; i++) {
        const toml_stmt *st = &d->v[i];
        const char *path[8];
        size_t n = 0, vs = 0, ve = 0;
        if (st->kind != TOML_KEYVAL) continue;
        if (st->table >= 0) {
            const toml_stmt *t = &d->v[st->table];
            if (t->kind != TOML_TABLE) continue;
            for (size_t k = 0; k < t->nkey && n < 8; k++) path[n++] = t->key[k];
        }
        for (size_t k = 0; k < st->nkey && n < 8; k++) path[n++] = st->key[k];
        if (n < 3 || strcmp(path[0], "hooks") != 0 || strcmp(path[1], "state") != 0 || strcmp(path[2], key) != 0) continue;
        if (n == 4 && !strcmp(path[3], "trusted_hash")) return 1;
        if (n == 3 && text[st->val_start] == '{' &&
            toml_inline_get(text, st->val_start, st->val_end, "trusted_hash", &vs, &ve))
            return 1;
    }
    return 0;
}
