/*
 * catalog.c -- the stores under an agent home (catalog.h): the one reading of the store
 * folder, the per-store facts a listing carries, opening by session id, retiring.
 */
#include "catalog.h"

#include <dirent.h>
#include <errno.h>
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
    free(e->path);
    free(e->name);
    free(e->session_id);
    free(e->cwd);
    free(e->session_file);
    free(e->damaged);
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

/* The facts of one store file: its size, whether it looks damaged and, when it does not,
 * its schema and meta from one read-only open (never migrated). LC_NOTFOUND when `path` is
 * not a regular file; LC_NOMEM. */
static int catalog_peek(const char *path, const char *name, int counts, catalog_entry *e)
{
    struct stat sb;
    memset(e, 0, sizeof *e);
    e->schema_version = -1;
    e->messages = -1;
    if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) return LC_NOTFOUND;
    e->bytes = (int64_t)sb.st_size;
    char *wal = lc_asprintf("%s-wal", path);
    if (wal && stat(wal, &sb) == 0) e->bytes += (int64_t)sb.st_size;
    free(wal);
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
    /* f->all_homes changes nothing here: the folder holds this home's stores alone, and
     * out->shared stays 0 so a fleet search can say the store is not shared. */
    if (!(d = opendir(dir))) goto done; /* no store folder yet: nothing to list */
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
    if (!(path = catalog_path(agent_home, session_id))) return lc_errf(err, LC_NOMEM, "catalog: out of memory");
    /* A read never creates the file SQLite would otherwise make for a missing name. */
    if (stat(path, &sb) != 0) rc = lc_errf(err, LC_NOTFOUND, "catalog: no store for session %s", session_id);
    else rc = store_open_readonly(path, out, schema_version, err);
    free(path);
    return rc;
}

int catalog_retire(const catalog_entry *e, char **err)
{
    static const char *const sfx[] = {"-wal", "-shm"};
    if (unlink(e->path) != 0) return lc_errf(err, LC_ERR, "cannot delete %s: %s", e->path, strerror(errno));
    for (size_t k = 0; k < sizeof sfx / sizeof sfx[0]; k++) {
        char *p = lc_asprintf("%s%s", e->path, sfx[k]);
        if (p) unlink(p);
        free(p);
    }
    return LC_OK;
}
