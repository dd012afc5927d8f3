/*
 * store.c -- the store seam (store.h): every call that takes a store goes through the
 * method table of the backend that opened it (in the manner of SQLite's VFS), so a second
 * backend is an addition, not an edit. Owns the choice of backend for an open, the
 * size/version check of a slot before it is called, the answer for a slot a backend does
 * not fill, and the few functions no backend needs to see (id checks, frees). The choice
 * of backend is made here alone: a shared store's URI (LCM_STORE_URL, or the agent home's
 * lcm.json `store` key) selects PostgreSQL, its absence the SQLite files.
 */
#include "store.h"
#include "store_backend.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <unistd.h>

#include "config.h"
#include "privacy.h"
#include "util.h"

/* A backend's struct store begins with its method table (store.h). */
static const store_methods *store_methods_of(const store *s)
{
    return *(const store_methods *const *)(const void *)s;
}

/* A slot is callable when the backend's table was built with it and filled it. */
#define STORE_HAS(m, slot) \
    ((m) && offsetof(store_methods, slot) + sizeof((m)->slot) <= (m)->size && (m)->slot)

static int store_unsupported(const store_methods *m, const char *what, char **err)
{
    return lc_errf(err, LC_INVALID, "store: the %s backend does not support %s", m ? m->name : "?", what);
}

/* A dispatcher's body: the call `args` through the slot of s's table, or `otherwise` (the
 * table is `m` there) when the backend does not fill it. */
#define STORE_DISPATCH(s, slot, otherwise, args)   \
    const store_methods *m = store_methods_of(s);  \
    if (!STORE_HAS(m, x_##slot)) return otherwise; \
    return m->x_##slot args
/* The same for a slot whose absence is an error naming it. */
#define STORE_DISPATCH_OR_UNSUPPORTED(s, slot, args) STORE_DISPATCH(s, slot, store_unsupported(m, #slot, err), args)

/* A shared store's URI in the environment (an empty value is unset). */
static const char *store_env_url(void)
{
    const char *u = getenv("LCM_STORE_URL");
    return u && *u ? u : NULL;
}

const store_backend *store_backend_default(void)
{
    return store_env_url() ? &store_pg_backend : &store_sqlite_backend;
}

char *store_url(const char *agent_home)
{
    const char *env = store_env_url();
    if (env) return lc_strdup(env);
    if (!agent_home || !*agent_home) return NULL;
    char *path = lc_asprintf("%s/lcm.json", agent_home), *url = NULL;
    lcm_config cfg;
    if (path && lcm_config_load(path, &cfg, NULL) == LC_OK) {
        url = cfg.store_url;
        cfg.store_url = NULL;
        lcm_config_free(&cfg);
    }
    free(path);
    return url;
}

/* The backend an agent home's stores live in: the one place the choice is made. */
static const store_backend *store_backend_for(const char *agent_home)
{
    char *url = store_url(agent_home);
    const store_backend *b = url ? &store_pg_backend : &store_sqlite_backend;
    free(url);
    return b;
}

int store_path_is_url(const char *path)
{
    return path && (strncmp(path, "postgresql://", 13) == 0 || strncmp(path, "postgres://", 11) == 0);
}

/* ---- a connection string's secrets -------------------------------------------------------- */

/* The conninfo keywords whose values are secrets: the password and the client key's
 * passphrase. Compared without case (libpq compares exactly; masking more is harmless). */
static int store_url_secret_key(const char *k, size_t n)
{
    return (n == 8 && !strncasecmp(k, "password", 8)) || (n == 11 && !strncasecmp(k, "sslpassword", 11));
}

static int store_url_hex(int c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* k[0..n) percent-decoded into out (at most cap bytes); the decoded length, or cap + 1 when
 * it does not fit. libpq decodes a URI parameter's name as it decodes its value. */
static size_t store_url_decode(const char *k, size_t n, char *out, size_t cap)
{
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        int c = (unsigned char)k[i];
        if (c == '%' && i + 2 < n + 1 && store_url_hex(k[i + 1]) >= 0 && store_url_hex(k[i + 2]) >= 0) {
            c = store_url_hex(k[i + 1]) << 4 | store_url_hex(k[i + 2]);
            i += 2;
        }
        if (m == cap) return cap + 1;
        if (out) out[m] = (char)c;
        m++;
    }
    return m;
}

static int store_url_key_is_secret(const char *k, size_t n, int decode)
{
    char buf[16];
    if (!decode) return store_url_secret_key(k, n);
    size_t m = store_url_decode(k, n, buf, sizeof buf);
    return m <= sizeof buf && store_url_secret_key(buf, m);
}

/* The spans [start, end) of `url` that hold secrets, as libpq reads a connection string:
 * a URI's user-part password (from the first ':' to the '@' ending the user part, which
 * libpq looks for before the first '/', not before a '?'), a query parameter named by a
 * secret keyword once its name is percent-decoded, or a keyword/value string's secret
 * value (quoted or bare). A store's path ends in "#<sid>" (store_pg): that suffix is no
 * part of a value. At most `max`; the number found. */
static size_t store_url_secret_spans(const char *url, size_t (*span)[2], size_t max)
{
    size_t n = 0, len = strlen(url);
    const char *sep = strstr(url, "://");
    if (sep) {
        const char *auth = sep + 3, *slash = auth + strcspn(auth, "/"), *at = NULL, *rest = auth;
        for (const char *q = auth; q < slash; q++)
            if (*q == '@') at = q;
        if (!at) { /* an unescaped '/' in the password: the last '@' before the query */
            const char *qm = auth + strcspn(auth, "?");
            for (const char *q = auth; q < qm; q++)
                if (*q == '@') at = q;
        }
        const char *colon = at ? memchr(auth, ':', (size_t)(at - auth)) : NULL;
        if (colon && n < max) {
            span[n][0] = (size_t)(colon + 1 - url);
            span[n][1] = (size_t)(at - url);
            n++;
        }
        if (at) rest = at + 1;
        const char *q = strchr(rest, '?');
        while (q && *q) {
            const char *key = q + 1, *end = key + strcspn(key, "&"), *eq = memchr(key, '=', (size_t)(end - key));
            if (eq && store_url_key_is_secret(key, (size_t)(eq - key), 1) && n < max) {
                const char *vend = end, *hash = memchr(eq, '#', (size_t)(end - eq));
                if (hash && !*end && hash[1] && strspn(hash + 1, "0123456789") == strlen(hash + 1)) vend = hash;
                span[n][0] = (size_t)(eq + 1 - url);
                span[n][1] = (size_t)(vend - url);
                n++;
            }
            q = *end ? end : NULL;
        }
        return n;
    }
    /* keyword = value pairs, separated by white space; a value may be 'quoted \' '. */
    size_t i = 0;
    while (i < len) {
        while (i < len && strchr(" \t\n\r\f\v", url[i])) i++;
        size_t k = i;
        while (i < len && url[i] != '=' && !strchr(" \t\n\r\f\v", url[i])) i++;
        size_t klen = i - k;
        while (i < len && strchr(" \t\n\r\f\v", url[i])) i++;
        if (i >= len || url[i] != '=') continue;
        i++;
        while (i < len && strchr(" \t\n\r\f\v", url[i])) i++;
        size_t v = i;
        if (i < len && url[i] == '\'') {
            for (i++; i < len && url[i] != '\''; i++)
                if (url[i] == '\\' && i + 1 < len) i++;
            if (i < len) i++;
        } else {
            while (i < len && !strchr(" \t\n\r\f\v", url[i])) i++;
        }
        if (klen && store_url_key_is_secret(url + k, klen, 0) && n < max) {
            span[n][0] = v;
            span[n][1] = i;
            n++;
        }
    }
    return n;
}

#define STORE_URL_SPANS 16

char *store_url_redact(const char *url)
{
    sbuf b = {0};
    size_t span[STORE_URL_SPANS][2], at = 0;
    const char *u = url ? url : "";
    size_t n = store_url_secret_spans(u, span, STORE_URL_SPANS);
    for (size_t i = 0; i < n; i++) {
        sb_append(&b, u + at, span[i][0] - at);
        sb_puts(&b, "***");
        at = span[i][1];
    }
    sb_puts(&b, u + at);
    return sb_detach(&b);
}

/* msg with every occurrence of needle[0..n) replaced by "***" (n > 0). */
static char *store_url_cut(const char *msg, const char *needle, size_t n)
{
    sbuf b = {0};
    const char *p = msg;
    for (const char *hit; (hit = memmem(p, strlen(p), needle, n));) {
        sb_append(&b, p, (size_t)(hit - p));
        sb_puts(&b, "***");
        p = hit + n;
    }
    sb_puts(&b, p);
    return sb_detach(&b);
}

char *store_url_scrub(const char *url, const char *msg)
{
    size_t span[STORE_URL_SPANS][2];
    size_t n = url ? store_url_secret_spans(url, span, STORE_URL_SPANS) : 0;
    char *out = lc_strdup(msg ? msg : "");
    for (size_t i = 0; i < n && out; i++) {
        size_t raw = span[i][1] - span[i][0];
        char *dec = malloc(raw + 1), *next;
        if (!dec) {
            free(out);
            return NULL;
        }
        size_t m = store_url_decode(url + span[i][0], raw, dec, raw);
        /* the raw spelling, then the decoded one (what libpq may echo) */
        next = raw ? store_url_cut(out, url + span[i][0], raw) : lc_strdup(out);
        free(out);
        out = next;
        if (out && m && m <= raw) {
            next = store_url_cut(out, dec, m);
            free(out);
            out = next;
        }
        free(dec);
    }
    return out;
}

#define STORE_BACKEND_HAS(b, slot) \
    (offsetof(store_backend, slot) + sizeof((b)->slot) <= (b)->size && (b)->slot)

/* ---- this installation's identity ----------------------------------------------------------- */

#define STORE_IDENTITY_FILE "installation-id"

/* A 32-hex-digit id read from `path`: LC_OK with out filled, else LC_NOTFOUND. */
static int store_identity_read(const char *path, char out[33])
{
    char *text = NULL;
    size_t len = 0;
    if (lc_read_file(path, &text, &len, NULL) != LC_OK) return LC_NOTFOUND;
    int ok = len >= 32 && strspn(text, "0123456789abcdef") >= 32;
    if (ok) {
        memcpy(out, text, 32);
        out[32] = '\0';
    }
    free(text);
    return ok ? LC_OK : LC_NOTFOUND;
}

int store_identity(const char *agent_home, char out[33], char **err)
{
    char *dir = lc_asprintf("%s/lcm", agent_home ? agent_home : ".");
    char *path = dir ? lc_asprintf("%s/" STORE_IDENTITY_FILE, dir) : NULL;
    char *tmp = path ? lc_asprintf("%s.%ld.tmp", path, (long)getpid()) : NULL;
    unsigned char raw[16];
    int rc = LC_OK, fd = -1;
    if (!tmp) {
        rc = lc_errf(err, LC_NOMEM, "store: out of memory");
        goto done;
    }
    if (store_identity_read(path, out) == LC_OK) goto done;
    /* Made once: random, never derived from the host name or the path, which two
     * machines may share. A racing first use links its own file or reads the winner's. */
    if ((rc = lc_mkdir_p(dir, 0700, err)) != LC_OK) goto done;
    if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw) {
        rc = lc_errf(err, LC_ERR, "store: no random bytes for this installation's identity: %s", strerror(errno));
        goto done;
    }
    for (size_t i = 0; i < sizeof raw; i++) snprintf(out + 2 * i, 3, "%02x", raw[i]);
    char line[34];
    snprintf(line, sizeof line, "%s\n", out);
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0 || write(fd, line, 33) != 33 || fsync(fd) != 0) {
        rc = lc_errf(err, LC_ERR, "store: cannot write %s: %s", path, strerror(errno));
        goto done;
    }
    if (link(tmp, path) != 0 && !(errno == EEXIST && store_identity_read(path, out) == LC_OK))
        rc = lc_errf(err, LC_ERR, "store: cannot keep %s: %s", path, strerror(errno));
done:
    if (fd >= 0) close(fd);
    if (tmp) unlink(tmp);
    LC_FREE(dir, path, tmp);
    return rc;
}

int store_retire_url(const char *path, char **err)
{
    const store_backend *b = &store_pg_backend;
    if (!store_path_is_url(path) || !STORE_BACKEND_HAS(b, x_retire))
        return lc_errf(err, LC_INVALID, "store: %s is no session of a shared store", path ? path : "(null)");
    return b->x_retire(path, err);
}

int store_open_session_readonly(const char *agent_home, const char *session_id, store **out,
                                int *schema_version, char **err)
{
    const store_backend *b = store_backend_for(agent_home);
    *out = NULL;
    if (!STORE_BACKEND_HAS(b, x_open_session_readonly))
        return lc_errf(err, LC_INVALID, "store: the %s backend opens a store by its path", b->name);
    return b->x_open_session_readonly(agent_home, session_id, out, schema_version, err);
}

int store_list_sessions(const char *agent_home, int all_homes, int counts, store_session_visit visit,
                        void *ud, int *listed, char **err)
{
    const store_backend *b = store_backend_for(agent_home);
    *listed = 0;
    if (!STORE_BACKEND_HAS(b, x_list)) return LC_OK;
    *listed = 1;
    return b->x_list(agent_home, all_homes, counts, visit, ud, err);
}

const char *store_backend_name(void) { return store_backend_default()->name; }
const char *store_backend_version(void) { return store_backend_default()->x_version(); }

int store_session_excluded(const char *agent_home, const char *session_cwd, char **why)
{
    char *path = agent_home && *agent_home ? lc_asprintf("%s/lcm.json", agent_home) : NULL;
    lcm_config cfg;
    const char *glob = NULL;
    int hit = 0;
    if (why) *why = NULL;
    if (path && session_cwd && *session_cwd && lcm_config_load(path, &cfg, NULL) == LC_OK) {
        hit = privacy_excluded(cfg.exclude, cfg.n_exclude, session_cwd, &glob);
        if (hit < 0) hit = 0; /* out of memory: store_open, which must know, fails then */
        if (hit && why) *why = lc_asprintf("%s matches lcm.json exclude \"%s\": this session is not stored", session_cwd, glob);
        lcm_config_free(&cfg);
    }
    free(path);
    return hit;
}

/* The open of every session store, whichever caller (the plugin, `lcm import`, the hooks):
 * the home's lcm.json decides here what is never stored, so no caller can forget it. An
 * excluded folder's session is refused before any file or row exists; redactAtIngest is
 * set on the connection (store_set_options keeps it on). */
int store_open_wait(const char *agent_home, const char *session_id, const char *session_cwd,
                    long wait_ms, store **out, char **err)
{
    char *path = agent_home && *agent_home ? lc_asprintf("%s/lcm.json", agent_home) : NULL;
    lcm_config cfg;
    const char *glob = NULL;
    int loaded = 0, rc = LC_OK;
    *out = NULL;
    /* The home's exclude and redactAtIngest must be known before anything is stored: out of
     * memory reading them fails the open rather than store what they keep out or masked.
     * (A malformed lcm.json is read as none, as everywhere else.) */
    if (agent_home && *agent_home && !path) rc = LC_NOMEM;
    else if (path && (rc = lcm_config_load(path, &cfg, NULL)) == LC_OK) loaded = 1;
    if (rc == LC_NOMEM) {
        rc = lc_errf(err, LC_NOMEM, "store: out of memory reading lcm.json");
        goto done;
    }
    int excluded = loaded ? privacy_excluded(cfg.exclude, cfg.n_exclude, session_cwd, &glob) : 0;
    if (excluded < 0) {
        rc = lc_errf(err, LC_NOMEM, "store: out of memory matching lcm.json exclude");
        goto done;
    }
    rc = LC_OK;
    if (excluded) {
        rc = lc_errf(err, LC_EXCLUDED, "%s matches lcm.json exclude \"%s\": this session is not stored", session_cwd,
                     glob);
        goto done;
    }
    rc = store_backend_for(agent_home)->x_open(agent_home, session_id, session_cwd, wait_ms, out, err);
    assert(rc != LC_OK || *out); /* every caller uses the store an LC_OK open hands it */
    if (rc == LC_OK && loaded && cfg.redact_at_ingest) {
        store_options o = {STORE_LARGE_FILE_CHARS, 1, 1};
        store_set_options(*out, &o);
    }
done:
    if (loaded) lcm_config_free(&cfg);
    free(path);
    return rc;
}

int store_open(const char *agent_home, const char *session_id, const char *session_cwd,
               store **out, char **err)
{
    return store_open_wait(agent_home, session_id, session_cwd, STORE_BUSY_MS, out, err);
}

int store_open_readonly(const char *db_path, store **out, int *schema_version, char **err)
{
    const store_backend *b = store_path_is_url(db_path) ? &store_pg_backend : &store_sqlite_backend;
    return b->x_open_readonly(db_path, out, schema_version, err);
}

const store_backend *store_backend_embedded(void) { return &store_sqlite_backend; }
const char *store_backend_label(const store_backend *b) { return b->name; }

int store_open_in(const store_backend *b, const char *agent_home, const char *session_id,
                  const char *session_cwd, long wait_ms, store **out, char **err)
{
    return b->x_open(agent_home, session_id, session_cwd, wait_ms, out, err);
}

int store_open_readonly_in(const store_backend *b, const char *path, store **out, int *schema_version,
                           char **err)
{
    return b->x_open_readonly(path, out, schema_version, err);
}

int store_valid_id(const char *id)
{
    if (!id || !*id || strlen(id) > 200) return 0;
    for (const char *p = id; *p; p++)
        if (*p == '/' || *p == '\\' || (unsigned char)*p < 0x20) return 0;
    return strcmp(id, ".") != 0 && strcmp(id, "..") != 0;
}

void store_row_free(store_row *r)
{
    LC_FREE(r->entry_id, r->role, r->text, r->raw_json, r->payload, r->tool_name, r->tool_path);
    memset(r, 0, sizeof *r);
}

void store_cut_free(store_cut *c)
{
    if (!c) return;
    LC_FREE(c->anchor_entry, c->message, c->nodes_json);
    memset(c, 0, sizeof *c);
}

/* ---- dispatch ------------------------------------------------------------------------------ */

void store_close(store *s)
{
    if (!s) return;
    const store_methods *m = store_methods_of(s);
    if (!STORE_HAS(m, x_close)) return;
    m->x_close(s);
}

void store_set_options(store *s, const store_options *opt)
{
    const store_methods *m = store_methods_of(s);
    if (!STORE_HAS(m, x_set_options)) return;
    m->x_set_options(s, opt);
}

const char *store_path(const store *s)
{
    STORE_DISPATCH(s, path, NULL, (s));
}

const char *store_mode_note(const store *s)
{
    if (!s) return NULL;
    const store_methods *m = store_methods_of(s);
    if (!STORE_HAS(m, x_mode_note)) return NULL;
    return m->x_mode_note(s);
}

char *store_meta_get(store *s, const char *key)
{
    STORE_DISPATCH(s, meta_get, NULL, (s, key));
}

int store_meta_put(store *s, const char *key, const char *value, char **err)
{
    STORE_DISPATCH_OR_UNSUPPORTED(s, meta_put, (s, key, value, err));
}

int store_meta_ensure(store *s, const char *key, const char *value, char **err)
{
    char *had = store_meta_get(s, key);
    int same = had && !strcmp(had, value);
    free(had);
    return same ? LC_OK : store_meta_put(s, key, value, err);
}

int store_schema_version(store *s)
{
    STORE_DISPATCH(s, schema_version, -1, (s));
}

int store_ingest(store *s, const store_msg *msgs, size_t n, store_ingest_stats *stats, char **err)
{
    STORE_DISPATCH_OR_UNSUPPORTED(s, ingest, (s, msgs, n, stats, err));
}

int store_mark_branch(store *s, const char *const *active_ids, size_t n, size_t *marked, size_t *cleared, char **err)
{
    STORE_DISPATCH_OR_UNSUPPORTED(s, mark_branch, (s, active_ids, n, marked, cleared, err));
}

int store_set_removed(store *s, const char *const *entry_ids, size_t n, int removed, size_t *changed, char **err)
{
    if (changed) *changed = 0;
    STORE_DISPATCH_OR_UNSUPPORTED(s, set_removed, (s, entry_ids, n, removed, changed, err));
}

int store_dag_progress(store *s, int64_t *watermark, int64_t *pending, char **err)
{
    STORE_DISPATCH_OR_UNSUPPORTED(s, dag_progress, (s, watermark, pending, err));
}

int store_dag_set_watermark(store *s, int64_t expect, int64_t value, int *moved, char **err)
{
    STORE_DISPATCH_OR_UNSUPPORTED(s, dag_set_watermark, (s, expect, value, moved, err));
}

int store_dag_block_get(store *s, int64_t *tokens)
{
    STORE_DISPATCH(s, dag_block_get, 0, (s, tokens));
}

int store_dag_block_put(store *s, int64_t tokens, char **err)
{
    STORE_DISPATCH_OR_UNSUPPORTED(s, dag_block_put, (s, tokens, err));
}

int store_get_message(store *s, const char *entry_id, store_row *out, char **err)
{
    STORE_DISPATCH_OR_UNSUPPORTED(s, get_message, (s, entry_id, out, err));
}

int64_t store_message_count(store *s)
{
    STORE_DISPATCH(s, message_count, -1, (s));
}

int64_t store_summary_count(store *s)
{
    STORE_DISPATCH(s, summary_count, 0, (s));
}

int64_t store_db_bytes(store *s)
{
    STORE_DISPATCH(s, db_bytes, 0, (s));
}

int store_summary_add(store *s, const store_summary *in, int64_t *out_id, char **err)
{
    STORE_DISPATCH_OR_UNSUPPORTED(s, summary_add, (s, in, out_id, err));
}

int store_summary_set_text(store *s, int64_t id, const char *text, int64_t tokens, char **err)
{
    STORE_DISPATCH_OR_UNSUPPORTED(s, summary_set_text, (s, id, text, tokens, err));
}

int store_dag_walk_tail(store *s, store_msg_visit visit, void *ud, int *stopped, char **err)
{
    STORE_DISPATCH_OR_UNSUPPORTED(s, dag_walk_tail, (s, visit, ud, stopped, err));
}

int store_walk_newest(store *s, store_msg_visit visit, void *ud, int *stopped, char **err)
{
    STORE_DISPATCH_OR_UNSUPPORTED(s, walk_newest, (s, visit, ud, stopped, err));
}

long long store_last_activity_ms(store *s)
{
    STORE_DISPATCH(s, last_activity_ms, 0, (s));
}

int store_dag_walk_uncovered(store *s, int64_t after, int64_t before, store_msg_visit visit, void *ud, int *stopped, char **err)
{
    STORE_DISPATCH_OR_UNSUPPORTED(s, dag_walk_uncovered, (s, after, before, visit, ud, stopped, err));
}

int store_dag_count_uncovered(store *s, int64_t from, int64_t before, int64_t *count, char **err)
{
    STORE_DISPATCH_OR_UNSUPPORTED(s, dag_count_uncovered, (s, from, before, count, err));
}

int store_dag_walk_frontier(store *s, store_node_visit visit, void *ud, char **err)
{
    STORE_DISPATCH_OR_UNSUPPORTED(s, dag_walk_frontier, (s, visit, ud, err));
}

int store_dag_walk_prefixed(store *s, const char *prefix, store_node_visit visit, void *ud, char **err)
{
    STORE_DISPATCH_OR_UNSUPPORTED(s, dag_walk_prefixed, (s, prefix, visit, ud, err));
}

int store_dag_walk_source(store *s, int64_t id, int leaf, store_msg_visit visit, void *ud, char **err)
{
    STORE_DISPATCH_OR_UNSUPPORTED(s, dag_walk_source, (s, id, leaf, visit, ud, err));
}

int store_dag_walk_children(store *s, int64_t id, store_node_visit visit, void *ud, char **err)
{
    STORE_DISPATCH_OR_UNSUPPORTED(s, dag_walk_children, (s, id, visit, ud, err));
}

int64_t store_run_begin(store *s, const char *kind)
{
    STORE_DISPATCH(s, run_begin, 0, (s, kind));
}

void store_run_renew(store *s, int64_t id)
{
    const store_methods *m = store_methods_of(s);
    if (id <= 0 || !STORE_HAS(m, x_run_renew)) return;
    m->x_run_renew(s, id);
}

char *store_lease_holder(void)
{
    char hn[256] = "";
    if (gethostname(hn, sizeof hn - 1) != 0) hn[0] = '\0';
    return lc_asprintf("%s:%ld", hn[0] ? hn : "localhost", (long)getpid());
}

int store_lease_take(store *s, const char *name, long ttl_ms, char **holder, char **err)
{
    const store_methods *m = store_methods_of(s);
    if (holder) *holder = NULL;
    if (!STORE_HAS(m, x_lease_take)) return store_unsupported(m, "lease_take", err);
    if (!name || !*name || ttl_ms <= 0) return lc_errf(err, LC_INVALID, "store: a lease needs a name and a length");
    char *me = store_lease_holder();
    if (!me) return lc_errf(err, LC_NOMEM, "store: out of memory");
    int rc = m->x_lease_take(s, name, me, ttl_ms, holder, err);
    free(me);
    return rc;
}

void store_checkpoints_defer(store *s, int on)
{
    const store_methods *m = store_methods_of(s);
    if (STORE_HAS(m, x_checkpoints_defer)) m->x_checkpoints_defer(s, on);
}

void store_lease_drop(store *s, const char *name)
{
    const store_methods *m = store_methods_of(s);
    if (!STORE_HAS(m, x_lease_drop)) return;
    char *me = store_lease_holder();
    if (me) m->x_lease_drop(s, name, me);
    free(me);
}

void store_run_end(store *s, int64_t id, const char *status)
{
    const store_methods *m = store_methods_of(s);
    if (!STORE_HAS(m, x_run_end)) return;
    m->x_run_end(s, id, status);
}

int store_event_add(store *s, const char *kind, const char *data_json, char **err)
{
    STORE_DISPATCH_OR_UNSUPPORTED(s, event_add, (s, kind, data_json, err));
}

int64_t store_event_count(store *s, const char *kind)
{
    STORE_DISPATCH(s, event_count, 0, (s, kind));
}

int store_cut_get(store *s, store_cut_which which, int64_t id, store_cut *out, char **err)
{
    STORE_DISPATCH_OR_UNSUPPORTED(s, cut_get, (s, which, id, out, err));
}

int store_cut_add(store *s, const store_cut *in, int64_t tokens, int64_t *out_id, char **err)
{
    STORE_DISPATCH_OR_UNSUPPORTED(s, cut_add, (s, in, tokens, out_id, err));
}

int store_pin_get(store *s, store_pin *out, char **err)
{
    STORE_DISPATCH_OR_UNSUPPORTED(s, pin_get, (s, out, err));
}

int store_pin_set(store *s, const store_pin *pin, char **err)
{
    STORE_DISPATCH_OR_UNSUPPORTED(s, pin_set, (s, pin, err));
}

int store_pin_clear(store *s, char **err)
{
    STORE_DISPATCH_OR_UNSUPPORTED(s, pin_clear, (s, err));
}

int store_search_count(store *s, const char *query, const store_search_scope *scope, int64_t *count, char **err)
{
    STORE_DISPATCH_OR_UNSUPPORTED(s, search_count, (s, query, scope, count, err));
}

int store_search_page(store *s, const char *query, const store_search_scope *scope, int newest_first, size_t limit, size_t offset, store_search_visit visit, void *ud, char **err)
{
    STORE_DISPATCH_OR_UNSUPPORTED(s, search_page, (s, query, scope, newest_first, limit, offset, visit, ud, err));
}

int store_search_top(store *s, const char *query, int newest_first, size_t limit, store_search_visit visit, void *ud, char **err)
{
    STORE_DISPATCH_OR_UNSUPPORTED(s, search_top, (s, query, newest_first, limit, visit, ud, err));
}

int64_t store_search_unindexed(store *s)
{
    STORE_DISPATCH(s, search_unindexed, 0, (s));
}

int store_search_scan(store *s, const store_search_scope *scope, store_search_visit visit, void *ud, int *stopped, char **err)
{
    STORE_DISPATCH_OR_UNSUPPORTED(s, search_scan, (s, scope, visit, ud, stopped, err));
}

void store_search_cover(store *s, const char *entry_id, int64_t *top, int64_t *leaf)
{
    const store_methods *m = store_methods_of(s);
    if (!STORE_HAS(m, x_search_cover)) return;
    m->x_search_cover(s, entry_id, top, leaf);
}

int store_search_row_get(store *s, int64_t id, int thinking, store_search_visit visit, void *ud, char **err)
{
    STORE_DISPATCH(s, search_row, store_unsupported(m, "reading a row by id", err), (s, id, thinking, visit, ud, err));
}

/* The home index: the home's backend opens it; its own table, the first field of its
 * struct store_index, carries the rest. */
static const store_index_methods *store_index_methods_of(const store_index *ix)
{
    return *(const store_index_methods *const *)(const void *)ix;
}

int store_index_open(const char *agent_home, store_index **out, char **err)
{
    const store_backend *b = store_backend_for(agent_home);
    *out = NULL;
    if (b->size < offsetof(store_backend, x_index_open) + sizeof b->x_index_open || !b->x_index_open)
        return lc_errf(err, LC_INVALID, "store: the %s backend keeps no home index", b->name);
    return b->x_index_open(agent_home, out, err);
}

void store_index_close(store_index *ix)
{
    if (ix) store_index_methods_of(ix)->x_close(ix);
}

int store_index_catch_up(store_index *ix, store_index_source *v, size_t n, double deadline_ms,
                         store_index_stats *st, char **err)
{
    return store_index_methods_of(ix)->x_catch_up(ix, v, n, deadline_ms, st, err);
}

int store_index_search(store_index *ix, const store_index_query *q, store_index_visit visit, void *ud,
                       int64_t *total, int *newest_first, char **err)
{
    return store_index_methods_of(ix)->x_search(ix, q, visit, ud, total, newest_first, err);
}

int store_summary_exists(store *s, int64_t id)
{
    STORE_DISPATCH(s, summary_exists, 0, (s, id));
}

int store_summary_get(store *s, int64_t id, store_node_visit visit, void *ud, char **err)
{
    STORE_DISPATCH_OR_UNSUPPORTED(s, summary_get, (s, id, visit, ud, err));
}

int store_scope_totals_get(store *s, int64_t summary_id, store_scope_totals *out, char **err)
{
    STORE_DISPATCH_OR_UNSUPPORTED(s, scope_totals_get, (s, summary_id, out, err));
}

int store_scope_handles(store *s, int64_t summary_id, store_handle_visit visit, void *ud, char **err)
{
    STORE_DISPATCH_OR_UNSUPPORTED(s, scope_handles, (s, summary_id, visit, ud, err));
}

int store_handle_find(store *s, const char *key, store_handle_visit visit, void *ud, char **err)
{
    STORE_DISPATCH_OR_UNSUPPORTED(s, handle_find, (s, key, visit, ud, err));
}

int store_tx_begin(store *s, char **err)
{
    STORE_DISPATCH_OR_UNSUPPORTED(s, tx_begin, (s, err));
}

int store_tx_commit(store *s, char **err)
{
    STORE_DISPATCH_OR_UNSUPPORTED(s, tx_commit, (s, err));
}

void store_tx_rollback(store *s)
{
    const store_methods *m = store_methods_of(s);
    if (!STORE_HAS(m, x_tx_rollback)) return;
    m->x_tx_rollback(s);
}

int store_bulk_begin(store *s, char **err)
{
    STORE_DISPATCH(s, bulk_begin, store_tx_begin(s, err), (s, err));
}

int store_bulk_commit(store *s, char **err)
{
    STORE_DISPATCH(s, bulk_commit, store_tx_commit(s, err), (s, err));
}

int store_backup_to(store *from, const char *dest_path, char **err)
{
    STORE_DISPATCH_OR_UNSUPPORTED(from, backup_to, (from, dest_path, err));
}

int store_dump(store *s, const store_dump_visitor *v, void *ud, char **err)
{
    STORE_DISPATCH_OR_UNSUPPORTED(s, dump, (s, v, ud, err));
}

int store_table_loadable(store *s, const char *table)
{
    STORE_DISPATCH(s, table_loadable, 0, (s, table));
}

int store_row_load(store *s, const char *table, size_t ncol, const char *const *cols, const store_value *vals, int *inserted, char **err)
{
    STORE_DISPATCH_OR_UNSUPPORTED(s, row_load, (s, table, ncol, cols, vals, inserted, err));
}

int store_rebuild_index(store *s, char **err)
{
    STORE_DISPATCH_OR_UNSUPPORTED(s, rebuild_index, (s, err));
}

int store_facts_get(store *s, store_facts *out, char **err)
{
    STORE_DISPATCH_OR_UNSUPPORTED(s, facts_get, (s, out, err));
}

int store_check(store *s, store_check_kind kind, store_id_visit visit, void *ud, char **err)
{
    STORE_DISPATCH_OR_UNSUPPORTED(s, check, (s, kind, visit, ud, err));
}

int store_runs_open(store *s, store_run_visit visit, void *ud, char **err)
{
    STORE_DISPATCH_OR_UNSUPPORTED(s, runs_open, (s, visit, ud, err));
}

int store_run_reap(store *s, int64_t id, char **err)
{
    STORE_DISPATCH_OR_UNSUPPORTED(s, run_reap, (s, id, err));
}

int store_prune_broken(store *s, int64_t *orphans, int64_t *dropped, char **err)
{
    STORE_DISPATCH_OR_UNSUPPORTED(s, prune_broken, (s, orphans, dropped, err));
}

int store_dedupe_spans(store *s, int64_t *removed, char **err)
{
    STORE_DISPATCH_OR_UNSUPPORTED(s, dedupe_spans, (s, removed, err));
}

/* ---- vectors (optional slots, STORE_METHODS_VERSION 2) ------------------------------------- */

int store_vec_put(store *s, const store_vec *v, size_t n, char **err)
{
    STORE_DISPATCH(s, vec_put, store_unsupported(m, "vectors (hybrid recall)", err), (s, v, n, err));
}

int store_vec_walk(store *s, const char *model, int include_removed, store_vec_visit visit, void *ud,
                   char **err)
{
    STORE_DISPATCH(s, vec_walk, store_unsupported(m, "vectors (hybrid recall)", err), (s, model, include_removed, visit, ud, err));
}

int store_vec_get(store *s, const char *model, store_vec_kind kind, const int64_t *ids, size_t n,
                  store_vec_visit visit, void *ud, char **err)
{
    STORE_DISPATCH(s, vec_get, store_unsupported(m, "vectors read by row (version 4)", err),
                   (s, model, kind, ids, n, visit, ud, err));
}

int store_vec_get_supported(store *s)
{
    const store_methods *m = store_methods_of(s);
    return STORE_HAS(m, x_vec_get);
}

int store_vec_walk_missing(store *s, const char *model, int other_models, store_vec_pending_visit visit,
                           void *ud, int *stopped, char **err)
{
    const store_methods *m = store_methods_of(s);
    if (stopped) *stopped = 0;
    if (!STORE_HAS(m, x_vec_walk_missing)) return store_unsupported(m, "vectors (hybrid recall)", err);
    return m->x_vec_walk_missing(s, model, other_models, visit, ud, stopped, err);
}

int store_vec_coverage_get(store *s, const char *model, store_vec_coverage *out, char **err)
{
    const store_methods *m = store_methods_of(s);
    memset(out, 0, sizeof *out);
    if (!STORE_HAS(m, x_vec_coverage_get)) return store_unsupported(m, "vectors (hybrid recall)", err);
    return m->x_vec_coverage_get(s, model, out, err);
}

void store_vec_coverage_free(store_vec_coverage *c)
{
    if (!c) return;
    free(c->other_model);
    memset(c, 0, sizeof *c);
}
