/*
 * admin_migrate.c -- the bodies of `migrate` (admin_migrate.h): older-schema stores upgraded
 * in place, and `migrate --to`, every store of this home copied into another backend or
 * another home's embedded store. Owns those texts, their --json fields and the target's
 * refusals (a URL no backend takes, this home itself, a folder that is not private); the
 * store work is maint.h's and the store's dump and row load.
 */
#include "admin_migrate.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "admin_int.h"
#include "store.h"
#include "util.h"

int admin_migrate(const admin_env *env, int apply, admin_result *out, char **err)
{
    catalog_list plan = {0};
    char *e = NULL;
    sbuf b = {0};
    size_t n = 0;
    int rc;
    cJSON *j = cJSON_CreateObject();
    cJSON_AddBoolToObject(j, "apply", apply);
    cJSON_AddNumberToObject(j, "schema", STORE_SCHEMA_VERSION);
    if (maint_migrate_plan(env->home, &plan, &e) != LC_OK) {
        rc = admin_line(out, j, 1, lc_asprintf("%s migrate failed: %s", env->cmd, e ? e : "?"), err);
        goto done;
    }
    admin_plan_json(j, &plan, "migrated");
    if (plan.n == 0) {
        rc = admin_line(out, j, 0, lc_asprintf("migrate: every store is at schema %d", STORE_SCHEMA_VERSION), err);
        goto done;
    }
    if (!apply) {
        sb_printf(&b, "migrate (dry run): %zu stores below schema %d (cross-session search skips them):\n", plan.n,
                  STORE_SCHEMA_VERSION);
        cJSON_Delete(admin_list_stores(&b, &plan));
        sb_printf(&b, "%s migrate --apply upgrades them in place", env->cmd);
        rc = admin_finish(&b, j, 1, out, err);
        goto done;
    }
    if (lcm_config_home_guard(env->home, &e) != LC_OK) {
        rc = admin_line(out, j, 1, lc_asprintf("%s migrate: %s", env->cmd, e ? e : "refused"), err);
        goto done;
    }
    admin_progress(env, 0, (long long)plan.n);
    int arc = maint_migrate_apply(env->home, &plan, &n, &e);
    admin_progress(env, (long long)n, (long long)plan.n);
    cJSON_SetNumberValue(cJSON_GetObjectItemCaseSensitive(j, "migrated"), (double)n);
    out->metric = (int64_t)n;
    rc = admin_line(out, j, arc != LC_OK,
                    lc_asprintf("migrate: %zu of %zu stores upgraded to schema %d%s%s", n, plan.n,
                                STORE_SCHEMA_VERSION, arc != LC_OK ? "; " : "", arc != LC_OK && e ? e : ""),
                    err);
done:
    catalog_list_free(&plan);
    free(e);
    return rc;
}

/* ---- migrate --to: one store into another ------------------------------------------------ */

/* A dump's rows counted per store (dry run) or loaded into the target (apply). */
typedef struct admin_migrate_copy {
    store *dst;             /* NULL: count only */
    int64_t rows, copied, messages;
    const char *bad_table;  /* a table the target cannot take */
    char checked[64];       /* the last table found loadable */
} admin_migrate_copy;

/* A table the target lacks only matters when a row of it comes: the vector tables of
 * hybrid recall, say, are empty in a store that never embedded, and a backend without
 * them takes the rest. */
static int admin_migrate_tables(void *ud, int schema_version, const char *const *names, size_t n, char **err)
{
    (void)ud;
    (void)schema_version;
    (void)names;
    (void)n;
    (void)err;
    return LC_OK;
}

static int admin_migrate_row(void *ud, const char *table, size_t ncol, const char *const *cols, const store_value *vals,
                          char **err)
{
    admin_migrate_copy *c = ud;
    int inserted = 0;
    c->rows++;
    if (!strcmp(table, "messages")) c->messages++;
    if (!c->dst) return LC_OK;
    if (strcmp(c->checked, table) != 0) {
        if (!store_table_loadable(c->dst, table)) {
            c->bad_table = table;
            return lc_errf(err, LC_INVALID, "the target has no table '%s'", table);
        }
        snprintf(c->checked, sizeof c->checked, "%s", table);
    }
    int rc = store_row_load(c->dst, table, ncol, cols, vals, &inserted, err);
    c->copied += inserted;
    return rc;
}

/* The target of a URL: file:///PATH is that agent home's embedded store; anything else the
 * configured backend, which must not be the embedded one (it would copy a store onto
 * itself). *target_home is where file:// points, else NULL. */
static int admin_migrate_backend(const char *url, const store_backend **b, const char **target_home, char **err)
{
    *target_home = NULL;
    if (!strncmp(url, "file://", 7)) {
        if (url[7] != '/') return lc_errf(err, LC_INVALID, "a file URL names an absolute path: file:///path/to/home");
        *target_home = url + 7;
        *b = store_backend_embedded();
        return LC_OK;
    }
    *b = store_backend_default();
    if (!strstr(url, "://") || !*b ||
        !strcmp(store_backend_label(*b), store_backend_label(store_backend_embedded()))) {
        char *shown = store_url_redact(url);
        int rc = lc_errf(err, LC_INVALID, "no store backend of this build takes %s (file:///path/to/home names "
                         "another agent home's embedded store)", shown ? shown : "that URL");
        free(shown);
        return rc;
    }
    return LC_OK;
}

/* The folder a file:// target's stores go to: absent (the copy creates it 0700) or a real
 * folder already private. Anything else is refused before a store is opened there, since
 * opening one makes its folder 0700, and a folder this copy did not create keeps the mode
 * its owner gave it. */
static int admin_migrate_folder(const char *target_home, char **err)
{
    char *dir = lc_asprintf("%s/lcm", target_home);
    struct stat sb;
    int rc = LC_OK;
    if (!dir) return lc_errf(err, LC_NOMEM, "out of memory");
    if (lstat(dir, &sb) != 0) {
        if (errno != ENOENT) rc = lc_errf(err, LC_ERR, "%s: %s", dir, strerror(errno));
    } else if (!S_ISDIR(sb.st_mode)) {
        rc = lc_errf(err, LC_INVALID, "%s is not a folder (a link or a file): nothing copied", dir);
    } else if ((sb.st_mode & 07777) != 0700) {
        rc = lc_errf(err, LC_INVALID,
                     "%s exists with mode %04o; the stores go only into a private folder (0700), and a "
                     "folder this copy did not create is left as it is: `chmod 700 %s` if it is yours, or "
                     "name another home; nothing copied",
                     dir, (unsigned)(sb.st_mode & 07777), dir);
    }
    free(dir);
    return rc;
}

/* One store: counted, or copied in one transaction of the target. */
static int admin_migrate_store(const store_backend *b, const char *target_home, const char *home,
                            const catalog_entry *e, int apply, admin_migrate_copy *c, char **err)
{
    store *src = NULL, *dst = NULL;
    int version = -1, rc, in_tx = 0;
    char *cwd = NULL, *created = NULL;
    memset(c, 0, sizeof *c);
    if ((rc = store_open_readonly_in(store_backend_embedded(), e->path, &src, &version, err)) != LC_OK) goto done;
    if (version != STORE_SCHEMA_VERSION) {
        rc = lc_errf(err, LC_INVALID, "schema %d, not %d: `migrate --apply` upgrades it first", version,
                     STORE_SCHEMA_VERSION);
        goto done;
    }
    cwd = store_meta_get(src, "cwd");
    created = store_meta_get(src, "created");
    if (apply) {
        if ((rc = store_open_in(b, target_home ? target_home : home, e->session_id, cwd, STORE_BUSY_MS, &dst,
                                err)) != LC_OK)
            goto done;
        c->dst = dst;
        int fresh = store_message_count(dst) == 0;
        if ((rc = store_tx_begin(dst, err)) != LC_OK) goto done;
        in_tx = 1;
        if ((rc = store_dump(src, &(store_dump_visitor){admin_migrate_tables, admin_migrate_row}, c, err)) != LC_OK)
            goto done;
        if (c->copied && (rc = store_rebuild_index(dst, err)) != LC_OK) goto done;
        /* A store made by this copy keeps the date its session began, not today's. */
        if (fresh && created && (rc = store_meta_put(dst, "created", created, err)) != LC_OK) goto done;
        if ((rc = store_tx_commit(dst, err)) != LC_OK) goto done;
        in_tx = 0;
    } else {
        rc = store_dump(src, &(store_dump_visitor){admin_migrate_tables, admin_migrate_row}, c, err);
    }
done:
    if (in_tx) store_tx_rollback(dst);
    store_close(dst);
    store_close(src);
    free(cwd);
    free(created);
    return rc;
}

int admin_migrate_to(const admin_env *env, const char *url, int apply, admin_result *out, char **err)
{
    catalog_list l = {0};
    catalog_filter f = {.local_files = 1};
    const store_backend *b = NULL;
    const char *target_home = NULL;
    char *e = NULL, *shown = store_url_redact(url);
    sbuf b_text = {0};
    size_t failed = 0, done_n = 0;
    int64_t rows = 0, copied = 0;
    int rc;
    cJSON *j = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(j, "stores");
    cJSON_AddStringToObject(j, "to", shown ? shown : "?");
    cJSON_AddBoolToObject(j, "apply", apply);
    if (admin_migrate_backend(url, &b, &target_home, &e) != LC_OK ||
        (target_home && apply && lcm_config_home_guard(target_home, &e) != LC_OK) ||
        (target_home && admin_migrate_folder(target_home, &e) != LC_OK)) {
        rc = admin_line(out, j, 1, lc_asprintf("%s migrate --to: %s", env->cmd, e ? e : "refused"), err);
        goto done;
    }
    char *rs = target_home ? realpath(target_home, NULL) : NULL, *rh = realpath(env->home, NULL);
    int same = rs && rh && !strcmp(rs, rh);
    free(rs);
    free(rh);
    if (same) {
        rc = admin_line(out, j, 1, lc_asprintf("%s migrate --to: %s is this agent home", env->cmd, shown), err);
        goto done;
    }
    cJSON_AddStringToObject(j, "backend", store_backend_label(b));
    if (catalog_list_stores(env->home, &f, &l, &e) != LC_OK) {
        rc = admin_line(out, j, 1, lc_asprintf("%s migrate --to failed: %s", env->cmd, e ? e : "?"), err);
        goto done;
    }
    sb_printf(&b_text, "migrate --to %s (%s)%s: %zu store(s) of %s/lcm\n", shown, store_backend_label(b),
              apply ? "" : " (dry run)", l.n, env->home);
    admin_progress(env, 0, (long long)l.n);
    for (size_t i = 0; i < l.n; i++) {
        const catalog_entry *ce = &l.v[i];
        admin_migrate_copy c;
        char *why = NULL;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "session", ce->session_id);
        int crc = ce->damaged ? lc_errf(&why, LC_INVALID, "damaged (%s)", ce->damaged)
                              : admin_migrate_store(b, target_home, env->home, ce, apply, &c, &why);
        if (crc != LC_OK) {
            failed++;
            sb_printf(&b_text, "  %s: not copied: %s\n", ce->session_id, why ? why : "?");
            cJSON_AddStringToObject(o, "error", why ? why : "?");
        } else {
            done_n++;
            rows += c.rows;
            copied += c.copied;
            if (apply)
                sb_printf(&b_text, "  %s: %lld row(s) copied of %lld (%lld message(s))%s\n", ce->session_id,
                          (long long)c.copied, (long long)c.rows, (long long)c.messages,
                          c.copied < c.rows ? "; the rest the target holds already" : "");
            else
                sb_printf(&b_text, "  %s: %lld row(s) would be copied (%lld message(s))\n", ce->session_id,
                          (long long)c.rows, (long long)c.messages);
            cJSON_AddNumberToObject(o, "rows", (double)c.rows);
            cJSON_AddNumberToObject(o, "messages", (double)c.messages);
            if (apply) cJSON_AddNumberToObject(o, "copied", (double)c.copied);
        }
        free(why);
        cJSON_AddItemToArray(arr, o);
        admin_progress(env, (long long)i + 1, (long long)l.n);
    }
    if (apply)
        sb_printf(&b_text, "migrate --to: %zu store(s) copied, %lld row(s) new in the target%s", done_n,
                  (long long)copied, failed ? "; some were not copied (above)" : "");
    else if (l.n)
        sb_printf(&b_text, "%s migrate --to %s --apply copies them (again: only what the target lacks)", env->cmd, shown);
    else
        sb_puts(&b_text, "nothing to copy");
    cJSON_AddNumberToObject(j, "rows", (double)rows);
    cJSON_AddNumberToObject(j, "copied", (double)copied);
    out->metric = copied;
    /* A dry run with something to copy is "something to do", as the other dry runs. */
    rc = admin_finish(&b_text, j, failed || (!apply && rows > 0), out, err);
done:
    catalog_list_free(&l);
    free(shown);
    free(e);
    return rc;
}
