/*
 * catalog.c -- the stores under an agent home (catalog.h): the one reading of the store
 * folder, the per-store facts a listing carries, opening by session id, retiring. With a
 * shared store (store_url) the listing and the read are the database's sessions instead.
 */
#include "catalog.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store.h"
#include "util.h"

#define CATALOG_SUFFIX ".sqlite"
#define CATALOG_SUFFIX_LEN (sizeof CATALOG_SUFFIX - 1)

void catalog_entry_free(catalog_entry *e)
{
    if (!e) return;
    LC_FREE(e->path, e->name, e->session_id, e->cwd, e->session_file, e->parent_session, e->subagent, e->subagents,
            e->damaged);
    memset(e, 0, sizeof *e);
}

void catalog_list_free(catalog_list *l)
{
    if (!l) return;
    for (size_t i = 0; i < l->n; i++) catalog_entry_free(&l->v[i]);
    free(l->v);
    memset(l, 0, sizeof *l);
}

char *catalog_path(const char *agent_home, const char *session_id)
{
    return lc_asprintf("%s/lcm/%s" CATALOG_SUFFIX, agent_home, session_id);
}

/* ---- what was seen of each store file ----------------------------------------------------
 * A listing opens every store for its meta, and a long-lived process (the MCP server, a host
 * with the plugin) lists the same stores at every cross-session search: with a thousand
 * sessions the opens were most of a search's time. A file whose main file and -wal are as
 * they were (device, inode, size, modification time) has the facts read last time: meta is
 * written through the WAL, a checkpoint rewrites the main file, a replaced file is another
 * inode. One table per process, under a mutex (the plugin's worker lists too); cleared
 * rather than grown past CATALOG_SEEN_MAX files. */
#define CATALOG_SEEN_MAX 65536

typedef struct catalog_seen {
    char *path;                 /* NULL: a free slot */
    struct stat main, wal;
    int has_wal;
    catalog_entry e;
} catalog_seen;

static pthread_mutex_t catalog_seen_mu = PTHREAD_MUTEX_INITIALIZER;
static catalog_seen *catalog_seen_v;
static size_t catalog_seen_cap, catalog_seen_n;

static int catalog_same_stat(const struct stat *a, const struct stat *b)
{
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
           a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

static int catalog_entry_copy(catalog_entry *to, const catalog_entry *from)
{
    *to = *from;
    to->path = to->name = to->session_id = to->cwd = to->session_file = NULL;
    to->parent_session = to->subagent = to->subagents = to->damaged = NULL;
    const char *const src[] = {from->path, from->name, from->session_id, from->cwd, from->session_file,
                               from->parent_session, from->subagent, from->subagents, from->damaged};
    char **const dst[] = {&to->path, &to->name, &to->session_id, &to->cwd, &to->session_file,
                          &to->parent_session, &to->subagent, &to->subagents, &to->damaged};
    for (size_t i = 0; i < sizeof src / sizeof *src; i++)
        if (src[i] && !(*dst[i] = lc_strdup(src[i]))) {
            catalog_entry_free(to);
            return LC_NOMEM;
        }
    return LC_OK;
}

/* The slot of `path` (its own, or the free one where it would go); the table must have
 * room. Caller holds the mutex. */
static catalog_seen *catalog_seen_slot(const char *path)
{
    size_t mask = catalog_seen_cap - 1, i = (size_t)lc_fnv1a_str(path) & mask;
    while (catalog_seen_v[i].path && strcmp(catalog_seen_v[i].path, path) != 0) i = (i + 1) & mask;
    return &catalog_seen_v[i];
}

static void catalog_seen_clear(void)
{
    for (size_t i = 0; i < catalog_seen_cap; i++)
        if (catalog_seen_v[i].path) {
            free(catalog_seen_v[i].path);
            catalog_entry_free(&catalog_seen_v[i].e);
        }
    free(catalog_seen_v);
    catalog_seen_v = NULL;
    catalog_seen_cap = catalog_seen_n = 0;
}

/* The table goes with the code that made it: the plugin's library is unloaded (dlclose)
 * while its host runs on. */
__attribute__((destructor)) static void catalog_seen_fini(void)
{
    pthread_mutex_lock(&catalog_seen_mu);
    catalog_seen_clear();
    pthread_mutex_unlock(&catalog_seen_mu);
}

/* A copy of what was seen of `path` when its files are as `main`/`wal` say; LC_NOTFOUND
 * when not seen so (or out of memory: then it is read again). */
static int catalog_seen_get(const char *path, const struct stat *main, const struct stat *wal, int has_wal,
                            catalog_entry *e)
{
    int rc = LC_NOTFOUND;
    pthread_mutex_lock(&catalog_seen_mu);
    if (catalog_seen_cap) {
        catalog_seen *x = catalog_seen_slot(path);
        if (x->path && x->has_wal == has_wal && catalog_same_stat(&x->main, main) &&
            (!has_wal || catalog_same_stat(&x->wal, wal)))
            rc = catalog_entry_copy(e, &x->e) == LC_OK ? LC_OK : LC_NOTFOUND;
    }
    pthread_mutex_unlock(&catalog_seen_mu);
    return rc;
}

/* Remember `e` as what `path` holds while its files are as `main`/`wal` say (best effort). */
static void catalog_seen_put(const char *path, const struct stat *main, const struct stat *wal, int has_wal,
                             const catalog_entry *e)
{
    pthread_mutex_lock(&catalog_seen_mu);
    if (catalog_seen_n + 1 > catalog_seen_cap / 2) {
        size_t ncap = catalog_seen_cap ? catalog_seen_cap * 2 : 256;
        catalog_seen *old = catalog_seen_v, *nv = NULL;
        size_t oldcap = catalog_seen_cap;
        if (ncap > 2 * CATALOG_SEEN_MAX || !(nv = calloc(ncap, sizeof *nv))) {
            catalog_seen_clear();
            ncap = 256;
            old = NULL;
            oldcap = 0;
            nv = calloc(ncap, sizeof *nv);
        }
        catalog_seen_v = nv;
        catalog_seen_cap = nv ? ncap : 0;
        catalog_seen_n = 0;
        for (size_t i = 0; nv && i < oldcap; i++)
            if (old[i].path) {
                *catalog_seen_slot(old[i].path) = old[i];
                catalog_seen_n++;
            }
        free(old);
    }
    if (catalog_seen_cap) {
        catalog_seen *x = catalog_seen_slot(path);
        catalog_entry copy;
        if (catalog_entry_copy(&copy, e) == LC_OK) {
            if (x->path) {
                catalog_entry_free(&x->e);
            } else if ((x->path = lc_strdup(path))) {
                catalog_seen_n++;
            }
            if (x->path) {
                x->main = *main;
                x->has_wal = has_wal;
                if (has_wal) x->wal = *wal;
                x->e = copy;
            } else {
                catalog_entry_free(&copy);
            }
        }
    }
    pthread_mutex_unlock(&catalog_seen_mu);
}

/* The facts of one store file: its size, whether it looks damaged and, when it does not,
 * its schema and meta from one read-only open (never migrated), or from what was seen of
 * the same files before. LC_NOTFOUND when `path` is not a regular file; LC_NOMEM. */
static int catalog_peek(const char *path, const char *name, int counts, catalog_entry *e)
{
    struct stat sb, wb = {0};
    memset(e, 0, sizeof *e);
    e->schema_version = -1;
    e->messages = -1;
    if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) return LC_NOTFOUND;
    char *wal = lc_asprintf("%s-wal", path);
    int has_wal = wal && stat(wal, &wb) == 0;
    free(wal);
    if (!counts && catalog_seen_get(path, &sb, &wb, has_wal, e) == LC_OK) return LC_OK;
    e->bytes = (int64_t)sb.st_size + (has_wal ? (int64_t)wb.st_size : 0);
    if (!(e->path = lc_strdup(path)) || !(e->name = lc_strdup(name))) goto oom;
    if (store_file_damaged(path, &e->damaged)) {
        if (!e->damaged && !(e->damaged = lc_strdup("damaged"))) goto oom;
    } else {
        store *s = NULL;
        if (store_open_readonly(path, &s, &e->schema_version, NULL) == LC_OK) {
            if (e->schema_version >= 1) { /* meta came with the first schema */
                char *created = store_meta_get(s, "created");
                e->created = created ? atoll(created) : 0;
                free(created);
                e->session_id = store_meta_get(s, "session_id");
                e->cwd = store_meta_get(s, "cwd");
                e->session_file = store_meta_get(s, "session_file");
                e->parent_session = store_meta_get(s, "parent_session");
                e->subagent = store_meta_get(s, "subagent");
                e->subagents = store_meta_get(s, "subagents");
            }
            if (counts) {
                e->messages = store_message_count(s);
                e->summaries = store_summary_count(s);
                e->db_bytes = store_db_bytes(s);
            }
        }
        store_close(s);
    }
    if (!e->session_id && !(e->session_id = lc_strdup(name))) goto oom;
    if (!counts) catalog_seen_put(path, &sb, &wb, has_wal, e);
    return LC_OK;
oom:
    catalog_entry_free(e);
    return LC_NOMEM;
}

static int catalog_passes(const catalog_filter *f, const catalog_entry *e)
{
    if (f->cwd && (!e->cwd || strcmp(e->cwd, f->cwd) != 0)) return 0;
    if (f->older_schema && (e->schema_version < 0 || e->schema_version >= STORE_SCHEMA_VERSION)) return 0;
    return 1;
}

static int catalog_by_name(const void *a, const void *b)
{
    return strcmp(((const catalog_entry *)a)->path, ((const catalog_entry *)b)->path);
}

static int catalog_by_created(const void *a, const void *b)
{
    const catalog_entry *x = a, *y = b;
    if (x->created != y->created) return x->created < y->created ? 1 : -1;
    return catalog_by_name(a, b);
}

/* ---- a shared store's sessions (store_url set) ------------------------------------------ */

typedef struct catalog_pg {
    const catalog_filter *f;
    catalog_list *out;
    size_t cap;
} catalog_pg;

static int catalog_by_session(const void *a, const void *b)
{
    const catalog_entry *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : strcmp(x->path, y->path);
}

static int catalog_by_created_session(const void *a, const void *b)
{
    const catalog_entry *x = a, *y = b;
    if (x->created != y->created) return x->created < y->created ? 1 : -1;
    return catalog_by_session(a, b);
}

static int catalog_pg_visit(void *ud, const store_session_info *si, char **err)
{
    catalog_pg *c = ud;
    catalog_entry e;
    memset(&e, 0, sizeof e);
    if (c->f->except_session && strcmp(si->session_id, c->f->except_session) == 0) return LC_OK;
    e.schema_version = STORE_SCHEMA_VERSION;
    e.created = si->created;
    e.messages = si->messages;
    e.summaries = si->summaries;
    e.db_bytes = si->db_bytes;
    if (!(e.path = lc_strdup(si->path)) || !(e.name = lc_strdup(si->session_id)) ||
        !(e.session_id = lc_strdup(si->session_id)) || (si->cwd && !(e.cwd = lc_strdup(si->cwd))) ||
        (si->session_file && !(e.session_file = lc_strdup(si->session_file))))
        goto oom;
    if (!catalog_passes(c->f, &e)) {
        catalog_entry_free(&e);
        return LC_OK;
    }
    catalog_entry *nv = lc_grow(c->out->v, &c->cap, c->out->n + 1, sizeof *nv);
    if (!nv) goto oom;
    c->out->v = nv;
    c->out->v[c->out->n++] = e;
    return LC_OK;
oom:
    catalog_entry_free(&e);
    return lc_errf(err, LC_NOMEM, "catalog: out of memory");
}

int catalog_list_sessions(const char *agent_home, const catalog_filter *f, int all_homes, catalog_list *out,
                          int *listed, char **err)
{
    static const catalog_filter every = {0};
    catalog_pg c = {.f = f ? f : &every, .out = out};
    memset(out, 0, sizeof *out);
    int rc = store_list_sessions(agent_home, all_homes, c.f->counts, catalog_pg_visit, &c, listed, err);
    if (rc != LC_OK) {
        catalog_list_free(out);
        return rc;
    }
    if (out->n > 1)
        qsort(out->v, out->n, sizeof *out->v,
              c.f->order == CATALOG_NEWEST_FIRST ? catalog_by_created_session : catalog_by_session);
    return LC_OK;
}

int catalog_list_stores(const char *agent_home, const catalog_filter *f, catalog_list *out,
                        char **err)
{
    static const catalog_filter every = {0};
    char *dir = lc_asprintf("%s/lcm", agent_home);
    DIR *d = NULL;
    size_t cap = 0;
    int rc = LC_OK;
    struct dirent *de;
    memset(out, 0, sizeof *out);
    if (!f) f = &every;
    if (!dir) return lc_errf(err, LC_NOMEM, "catalog: out of memory");
    if (!f->local_files) {
        /* A shared store: the sessions this home wrote (with all_homes, every home's), not
         * the folder. */
        int listed = 0;
        rc = catalog_list_sessions(agent_home, f, f->all_homes, out, &listed, err);
        if (listed || rc != LC_OK) {
            if (rc == LC_OK) out->shared = 1;
            free(dir);
            return rc;
        }
    }
    /* On the embedded store f->all_homes changes nothing: the folder holds this home's
     * stores alone, and out->shared stays 0 so a fleet search can say the store is not
     * shared. */
    if (!(d = opendir(dir))) {
        /* No store folder yet: nothing to list. Out of memory is not an empty home. */
        if (errno == ENOMEM) rc = lc_errf(err, LC_NOMEM, "catalog: out of memory");
        goto done;
    }
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (l <= CATALOG_SUFFIX_LEN || strcmp(de->d_name + l - CATALOG_SUFFIX_LEN, CATALOG_SUFFIX) != 0) continue;
        char *name = lc_strndup(de->d_name, l - CATALOG_SUFFIX_LEN);
        char *path = lc_asprintf("%s/%s", dir, de->d_name);
        catalog_entry e;
        int prc = name && path ? LC_OK : LC_NOMEM;
        if (prc == LC_OK && f->except_session && strcmp(name, f->except_session) == 0) prc = LC_NOTFOUND;
        if (prc == LC_OK) prc = catalog_peek(path, name, f->counts, &e);
        free(name);
        free(path);
        if (prc == LC_NOTFOUND) continue;
        if (prc == LC_OK && !catalog_passes(f, &e)) {
            catalog_entry_free(&e);
            continue;
        }
        if (prc == LC_OK && out->n == cap) {
            size_t nc = cap ? cap * 2 : 16;
            catalog_entry *nv = realloc(out->v, nc * sizeof *nv);
            if (nv) {
                out->v = nv;
                cap = nc;
            } else {
                catalog_entry_free(&e);
                prc = LC_NOMEM;
            }
        }
        if (prc != LC_OK) {
            rc = lc_errf(err, LC_NOMEM, "catalog: out of memory");
            goto done;
        }
        out->v[out->n++] = e;
    }
    if (out->n > 1)
        qsort(out->v, out->n, sizeof *out->v, f->order == CATALOG_NEWEST_FIRST ? catalog_by_created : catalog_by_name);
done:
    if (d) closedir(d);
    free(dir);
    if (rc != LC_OK) catalog_list_free(out);
    return rc;
}

int catalog_open(const char *agent_home, const char *session_id, catalog_mode mode,
                 store **out, int *schema_version, char **err)
{
    char *path = NULL;
    struct stat sb;
    int rc;
    *out = NULL;
    if (schema_version) *schema_version = -1;
    if (mode == CATALOG_WRITE) {
        if ((rc = store_open(agent_home, session_id, NULL, out, err)) == LC_OK && schema_version)
            *schema_version = store_schema_version(*out);
        return rc;
    }
    if (!store_valid_id(session_id)) return lc_errf(err, LC_INVALID, "catalog: not a plain session id");
    {
        /* A shared store: the session's rows, by id, read-only (nothing is created). */
        char *url = store_url(agent_home);
        int shared = url != NULL;
        free(url);
        if (shared) return store_open_session_readonly(agent_home, session_id, out, schema_version, err);
    }
    if (!(path = catalog_path(agent_home, session_id))) return lc_errf(err, LC_NOMEM, "catalog: out of memory");
    /* A read never creates the file SQLite would otherwise make for a missing name. */
    if (stat(path, &sb) != 0) rc = lc_errf(err, LC_NOTFOUND, "catalog: no store for session %s", session_id);
    else rc = store_open_readonly(path, out, schema_version, err);
    free(path);
    return rc;
}

int catalog_open_entry(const catalog_entry *e, store **out, int *schema_version, char **err)
{
    struct stat sb;
    *out = NULL;
    if (schema_version) *schema_version = -1;
    if (e->damaged) return lc_errf(err, LC_INVALID, "catalog: %s", e->damaged);
    /* A file gone since the listing is not created again by the open. */
    if (!store_path_is_url(e->path) && stat(e->path, &sb) != 0)
        return lc_errf(err, LC_NOTFOUND, "catalog: no store for session %s", e->session_id);
    return store_open_readonly(e->path, out, schema_version, err);
}

int catalog_retire(const catalog_entry *e, char **err)
{
    static const char *const sfx[] = {"-wal", "-shm"};
    /* A shared store's session is rows, not files: its backend deletes them. */
    if (store_path_is_url(e->path)) return store_retire_url(e->path, err);
    if (unlink(e->path) != 0) return lc_errf(err, LC_ERR, "cannot delete %s: %s", e->path, strerror(errno));
    for (size_t k = 0; k < sizeof sfx / sizeof sfx[0]; k++) {
        char *p = lc_asprintf("%s%s", e->path, sfx[k]);
        if (p) unlink(p);
        free(p);
    }
    return LC_OK;
}

/* ---- the walk ----------------------------------------------------------------------------- */

int catalog_walk(const catalog_list *l, size_t from, catalog_walk_mode mode, catalog_each_fn fn, void *cb,
                 catalog_counts *counts, char **err)
{
    catalog_counts mine;
    catalog_counts *c = counts ? counts : &mine;
    size_t i = from < l->n ? from : l->n;
    int rc = LC_OK;
    memset(c, 0, sizeof *c);
    c->listed = l->n - i;
    for (; i < l->n; i++) {
        store *s = NULL;
        int version = -1, orc;
        char *why = NULL;
        if ((orc = catalog_open_entry(&l->v[i], &s, &version, &why)) != LC_OK) {
            free(why);
            if (orc == LC_NOMEM) {
                rc = lc_errf(err, LC_NOMEM, "catalog: out of memory");
                break;
            }
            c->damaged++;
            continue;
        }
        int counted = version < 0 ? (c->damaged++, 1)
                      : mode == CATALOG_ANY_SCHEMA ? 0
                      : version > STORE_SCHEMA_VERSION ? (c->newer++, 1)
                      : !STORE_SCHEMA_ANSWERS(version) ? (c->older++, 1)
                                                       : 0;
        if (counted) {
            store_close(s);
            continue;
        }
        c->opened++;
        rc = fn(cb, &l->v[i], i, &s, err);
        store_close(s); /* NULL when the callback took it */
        if (rc == CATALOG_STOP || rc == CATALOG_STOP_BEFORE) {
            if (rc == CATALOG_STOP) i++;
            else c->opened--;
            rc = LC_OK;
            break;
        }
        if (rc != LC_OK) {
            i++;
            break;
        }
    }
    c->next = i;
    c->unreached = l->n - i;
    return rc;
}

int catalog_each(const char *agent_home, const catalog_filter *f, catalog_walk_mode mode, catalog_each_fn fn,
                 void *cb, catalog_counts *counts, char **err)
{
    catalog_list l = {0};
    int rc = catalog_list_stores(agent_home, f, &l, err);
    if (rc == LC_OK) rc = catalog_walk(&l, 0, mode, fn, cb, counts, err);
    else if (counts) memset(counts, 0, sizeof *counts);
    catalog_list_free(&l);
    return rc;
}
