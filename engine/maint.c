/*
 * maint.c -- store maintenance (maint.h): online backup, verbatim JSONL export and import,
 * doctor checks and --repair, retired-store gc, older-schema migrate, and the diagnose
 * block. Works on a bare sqlite3 connection and on the store folder; no host, no plugin.
 */
#include "maint.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "catalog.h"
#include "metrics.h"
#include "redact.h"
#include "store_sqlite.h"
#include "util.h"

/* ---- small SQL helpers ------------------------------------------------------------------- */

static int maint_exec(sqlite3 *db, const char *sql, char **err)
{
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        int rc = lc_errf(err, LC_ERR, "maint: %s", msg ? msg : sqlite3_errmsg(db));
        sqlite3_free(msg);
        return rc;
    }
    return LC_OK;
}

static int maint_table_exists(sqlite3 *db, const char *name)
{
    sqlite3_stmt *st = NULL;
    int found = 0;
    if (sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", -1,
                           &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
        found = sqlite3_step(st) == SQLITE_ROW;
    }
    sqlite3_finalize(st);
    return found;
}

/* One integer from a query; `dflt` when it fails or returns nothing. */
static int64_t maint_int(sqlite3 *db, const char *sql, int64_t dflt)
{
    sqlite3_stmt *st = NULL;
    int64_t v = dflt;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW &&
        sqlite3_column_type(st, 0) != SQLITE_NULL)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

int maint_pid_alive(pid_t pid)
{
    if (pid <= 0) return 0;
    return kill(pid, 0) == 0 || errno == EPERM;
}

/* ---- backup ------------------------------------------------------------------------------ */

int maint_backup_sweep_dir(const char *dir)
{
    DIR *d = opendir(dir && *dir ? dir : "/");
    struct dirent *e;
    int removed = 0;
    if (!d) return 0;
    while ((e = readdir(d))) {
        const char *t = strstr(e->d_name, ".tmp.");
        char *end = NULL;
        if (strncmp(e->d_name, "lcm-backup-", 11) != 0 || !t) continue;
        long pid = strtol(t + 5, &end, 10);
        if (!end || end == t + 5 || (*end && strcmp(end, "-journal") && strcmp(end, "-wal") && strcmp(end, "-shm"))) continue;
        if (pid == (long)getpid() || maint_pid_alive((pid_t)pid)) continue;
        char *full = lc_asprintf("%s/%s", dir, e->d_name);
        if (full && unlink(full) == 0) removed++;
        free(full);
    }
    closedir(d);
    return removed;
}

/* The partial copies in dest's folder: a kill must not leave one behind for good. */
static void maint_backup_sweep(const char *dest_path)
{
    char *dir = lc_strdup(dest_path);
    char *slash = dir ? strrchr(dir, '/') : NULL;
    if (slash) {
        *slash = '\0';
        maint_backup_sweep_dir(*dir ? dir : "/");
    }
    free(dir);
}

int maint_backup(store *from, const char *dest_path, char **err)
{
    sqlite3 *src = from ? store_db(from) : NULL, *dst = NULL;
    sqlite3_backup *bk = NULL;
    int rc = LC_OK, fd;
    char *tmp = NULL, *dir = NULL;
    if (!src || !dest_path || !*dest_path) return lc_errf(err, LC_INVALID, "backup: no store or path");
    maint_backup_sweep(dest_path);
    /* The copy is built under a temp name and linked into place only once complete and
     * flushed: a kill mid-copy leaves no file under the backup's name. */
    if (!(tmp = lc_asprintf("%s.tmp.%ld", dest_path, (long)getpid()))) {
        rc = lc_errf(err, LC_NOMEM, "backup: out of memory");
        goto done;
    }
    unlink(tmp);
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        rc = lc_errf(err, LC_ERR, "backup: cannot create %s: %s", tmp, strerror(errno));
        goto done;
    }
    close(fd);
    if (sqlite3_open_v2(tmp, &dst, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
        rc = store_sqlite_err(dst, err, "maint", "backup open");
        goto done;
    }
    if (!(bk = sqlite3_backup_init(dst, "main", src, "main"))) {
        rc = store_sqlite_err(dst, err, "maint", "backup init");
        goto done;
    }
    /* All pages in one step = one read transaction on the source: a snapshot, whatever a
     * concurrent writer does (WAL readers never block writers). */
    int step = sqlite3_backup_step(bk, -1);
    sqlite3_backup_finish(bk);
    bk = NULL;
    if (step != SQLITE_DONE) {
        rc = lc_errf(err, LC_ERR, "backup: copy failed: %s", sqlite3_errstr(step));
        goto done;
    }
    /* The copy is a standalone file: no -wal to carry along. */
    if ((rc = maint_exec(dst, "PRAGMA journal_mode=DELETE", err)) != LC_OK) goto done;
    sqlite3_close(dst);
    dst = NULL;
    if ((fd = open(tmp, O_RDONLY | O_CLOEXEC)) < 0 || fsync(fd) != 0) {
        rc = lc_errf(err, LC_ERR, "backup: cannot flush %s: %s", tmp, strerror(errno));
        if (fd >= 0) close(fd);
        goto done;
    }
    close(fd);
    /* link, not rename: a backup never replaces another copy of the same name. */
    if (link(tmp, dest_path) != 0) {
        rc = lc_errf(err, LC_ERR, "backup: cannot create %s: %s", dest_path, strerror(errno));
        goto done;
    }
    unlink(tmp);
    dir = lc_strdup(dest_path);
    char *slash = dir ? strrchr(dir, '/') : NULL;
    if (slash) {
        *slash = '\0';
        if ((fd = open(*dir ? dir : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0) {
            fsync(fd);
            close(fd);
        }
    }
done:
    if (bk) sqlite3_backup_finish(bk);
    sqlite3_close(dst);
    if (rc != LC_OK && tmp) unlink(tmp);
    free(tmp);
    free(dir);
    return rc;
}

/* ---- export ------------------------------------------------------------------------------ */

static void maint_json_str(FILE *fp, const unsigned char *s, size_t n)
{
    /* Only JSON's mandatory escapes: every other byte goes out as stored. */
    fputc('"', fp);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = s[i];
        if (c == '"' || c == '\\') {
            fputc('\\', fp);
            fputc(c, fp);
        } else if (c == '\n') fputs("\\n", fp);
        else if (c == '\r') fputs("\\r", fp);
        else if (c == '\t') fputs("\\t", fp);
        else if (c < 0x20) fprintf(fp, "\\u%04x", c);
        else fputc(c, fp);
    }
    fputc('"', fp);
}

/* Ordinary tables: not sqlite_*, not virtual, not a virtual table's shadow tables. */
static const char maint_tables_sql[] =
    "SELECT t.name FROM sqlite_master t WHERE t.type='table' AND t.name NOT LIKE 'sqlite\\_%' ESCAPE '\\'"
    " AND t.sql NOT LIKE 'CREATE VIRTUAL TABLE%'"
    " AND NOT EXISTS (SELECT 1 FROM sqlite_master v WHERE v.type='table'"
    "   AND v.sql LIKE 'CREATE VIRTUAL TABLE%' AND substr(t.name, 1, length(v.name) + 1) = v.name || '_')"
    " ORDER BY t.name";

static int maint_export_fp(sqlite3 *db, const char *tag, FILE *fp, int64_t *rows, char **err)
{
    sqlite3_stmt *tl = NULL, *st = NULL;
    char **tables = NULL;
    size_t nt = 0;
    int rc = LC_OK, own_tx = 0;
    int64_t count = 0;
    if (sqlite3_get_autocommit(db)) {
        if ((rc = maint_exec(db, "BEGIN", err)) != LC_OK) goto done;
        own_tx = 1;
    }
    if (sqlite3_prepare_v2(db, maint_tables_sql, -1, &tl, NULL) != SQLITE_OK) {
        rc = store_sqlite_err(db, err, "maint", "export tables");
        goto done;
    }
    while (sqlite3_step(tl) == SQLITE_ROW) {
        char **nt2 = realloc(tables, (nt + 1) * sizeof *nt2);
        if (!nt2) {
            rc = lc_errf(err, LC_NOMEM, "export: out of memory");
            goto done;
        }
        tables = nt2;
        if (!(tables[nt] = lc_strdup((const char *)sqlite3_column_text(tl, 0)))) {
            rc = lc_errf(err, LC_NOMEM, "export: out of memory");
            goto done;
        }
        nt++;
    }
    fputs("{\"lcmExport\":1,\"store\":", fp);
    maint_json_str(fp, (const unsigned char *)(tag ? tag : ""), tag ? strlen(tag) : 0);
    fprintf(fp, ",\"schema\":%lld,\"tables\":[", (long long)maint_int(db, "PRAGMA user_version", 0));
    for (size_t i = 0; i < nt; i++) {
        if (i) fputc(',', fp);
        maint_json_str(fp, (const unsigned char *)tables[i], strlen(tables[i]));
    }
    fputs("]}\n", fp);
    for (size_t i = 0; i < nt; i++) {
        char *sql = sqlite3_mprintf("SELECT * FROM \"%w\"", tables[i]);
        if (!sql || sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
            sqlite3_free(sql);
            rc = store_sqlite_err(db, err, "maint", "export read");
            goto done;
        }
        sqlite3_free(sql);
        int ncol = sqlite3_column_count(st), step;
        while ((step = sqlite3_step(st)) == SQLITE_ROW) {
            fputs("{\"table\":", fp);
            maint_json_str(fp, (const unsigned char *)tables[i], strlen(tables[i]));
            fputs(",\"row\":{", fp);
            for (int c = 0; c < ncol; c++) {
                const char *name = sqlite3_column_name(st, c);
                if (c) fputc(',', fp);
                maint_json_str(fp, (const unsigned char *)name, strlen(name));
                fputc(':', fp);
                switch (sqlite3_column_type(st, c)) {
                case SQLITE_INTEGER: fprintf(fp, "%lld", (long long)sqlite3_column_int64(st, c)); break;
                case SQLITE_FLOAT: fprintf(fp, "%.17g", sqlite3_column_double(st, c)); break;
                case SQLITE_NULL: fputs("null", fp); break;
                case SQLITE_BLOB: {
                    const unsigned char *b = sqlite3_column_blob(st, c);
                    int n = sqlite3_column_bytes(st, c);
                    fputs("{\"blob\":\"", fp);
                    for (int k = 0; k < n; k++) fprintf(fp, "%02x", b[k]);
                    fputs("\"}", fp);
                    break;
                }
                default: {
                    const unsigned char *t = sqlite3_column_text(st, c);
                    maint_json_str(fp, t ? t : (const unsigned char *)"",
                                   (size_t)sqlite3_column_bytes(st, c));
                }
                }
            }
            fputs("}}\n", fp);
            count++;
        }
        if (step != SQLITE_DONE) {
            rc = store_sqlite_err(db, err, "maint", "export read");
            goto done;
        }
        sqlite3_finalize(st);
        st = NULL;
    }
    if (ferror(fp)) rc = lc_errf(err, LC_ERR, "export: write failed: %s", strerror(errno));
done:
    sqlite3_finalize(tl);
    sqlite3_finalize(st);
    if (own_tx) sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    for (size_t i = 0; i < nt; i++) free(tables[i]);
    free(tables);
    if (rows) *rows += count;
    return rc;
}

/* Open `path`.tmp for an export; maint_file_commit fsyncs and renames it into place. */
static FILE *maint_file_begin(const char *path, char **tmp, char **err)
{
    *tmp = lc_asprintf("%s.tmp", path);
    if (!*tmp) {
        lc_errf(err, LC_NOMEM, "export: out of memory");
        return NULL;
    }
    int fd = open(*tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    FILE *fp = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!fp) {
        lc_errf(err, LC_ERR, "export: cannot write %s: %s", path, strerror(errno));
        if (fd >= 0) close(fd);
        free(*tmp);
        *tmp = NULL;
    }
    return fp;
}

static int maint_file_commit(FILE *fp, const char *tmp, const char *path, int ok, char **err)
{
    int rc = LC_OK;
    if (fflush(fp) != 0 || fsync(fileno(fp)) != 0) {
        if (ok) rc = lc_errf(err, LC_ERR, "export: cannot write %s: %s", path, strerror(errno));
        ok = 0;
    }
    if (fclose(fp) != 0 && ok) {
        rc = lc_errf(err, LC_ERR, "export: cannot write %s: %s", path, strerror(errno));
        ok = 0;
    }
    if (ok && rename(tmp, path) != 0) {
        rc = lc_errf(err, LC_ERR, "export: cannot rename to %s: %s", path, strerror(errno));
        ok = 0;
    }
    if (!ok) {
        unlink(tmp);
        return rc ? rc : LC_ERR;
    }
    /* The rename is durable only once the folder is. */
    char *dir = lc_strdup(path);
    char *slash = dir ? strrchr(dir, '/') : NULL;
    if (slash) {
        *slash = '\0';
        int dfd = open(*dir ? dir : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd >= 0) {
            fsync(dfd);
            close(dfd);
        }
    }
    free(dir);
    return LC_OK;
}

int maint_export(store *s, const char *tag, const char *path, int64_t *rows, char **err)
{
    char *tmp = NULL;
    int rc;
    if (rows) *rows = 0;
    FILE *fp = maint_file_begin(path, &tmp, err);
    if (!fp) return LC_ERR;
    rc = maint_export_fp(store_db(s), tag, fp, rows, err);
    int crc = maint_file_commit(fp, tmp, path, rc == LC_OK, err);
    if (rc == LC_OK) rc = crc;
    free(tmp);
    return rc;
}

/* ---- import ------------------------------------------------------------------------------ */

static int maint_pass_running_db(sqlite3 *db, int64_t *run_id)
{
    sqlite3_stmt *st = NULL;
    int running = 0;
    if (!maint_table_exists(db, "runs")) return 0;
    if (sqlite3_prepare_v2(db, "SELECT id, pid FROM runs WHERE finished IS NULL ORDER BY id", -1, &st,
                           NULL) != SQLITE_OK)
        return 0;
    while (!running && sqlite3_step(st) == SQLITE_ROW) {
        if (maint_pid_alive((pid_t)sqlite3_column_int64(st, 1))) {
            running = 1;
            if (run_id) *run_id = sqlite3_column_int64(st, 0);
        }
    }
    sqlite3_finalize(st);
    return running;
}

int maint_pass_running(store *s, int64_t *run_id)
{
    return maint_pass_running_db(store_db(s), run_id);
}

static int maint_rebuild_fts(sqlite3 *db, char **err)
{
    int rc = LC_OK;
    /* Contentless tables cannot 'rebuild': empty them and index every row again, with the
     * same reach as ingest (the first STORE_INDEX_CHARS characters of a message). */
    if (maint_table_exists(db, "messages_fts") && maint_table_exists(db, "messages")) {
        char sql[400];
        snprintf(sql, sizeof sql,
                 "INSERT INTO messages_fts(messages_fts) VALUES('delete-all');"
                 "INSERT INTO messages_fts(rowid, text) SELECT id, substr(text, 1, %d) FROM messages;",
                 STORE_INDEX_CHARS);
        if ((rc = maint_exec(db, sql, err)) != LC_OK) return rc;
    }
    if (maint_table_exists(db, "summaries_fts") && maint_table_exists(db, "summaries"))
        rc = maint_exec(db,
                        "INSERT INTO summaries_fts(summaries_fts) VALUES('delete-all');"
                        "INSERT INTO summaries_fts(rowid, text) SELECT id, text FROM summaries;",
                        err);
    return rc;
}

static int maint_hexval(int c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                          : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

static int maint_bind_json(sqlite3_stmt *st, int idx, const cJSON *v)
{
    if (cJSON_IsNull(v)) return sqlite3_bind_null(st, idx);
    if (cJSON_IsBool(v)) return sqlite3_bind_int(st, idx, cJSON_IsTrue(v));
    if (cJSON_IsString(v)) return sqlite3_bind_text(st, idx, v->valuestring, -1, SQLITE_TRANSIENT);
    if (cJSON_IsNumber(v)) {
        double d = v->valuedouble;
        if (d == (double)(int64_t)d && d > -9e18 && d < 9e18)
            return sqlite3_bind_int64(st, idx, (sqlite3_int64)d);
        return sqlite3_bind_double(st, idx, d);
    }
    const cJSON *hex = cJSON_GetObjectItemCaseSensitive(v, "blob");
    if (cJSON_IsString(hex)) {
        size_t n = strlen(hex->valuestring) / 2;
        unsigned char *b = malloc(n ? n : 1);
        if (!b) return SQLITE_NOMEM;
        for (size_t i = 0; i < n; i++) {
            int hi = maint_hexval(hex->valuestring[2 * i]), lo = maint_hexval(hex->valuestring[2 * i + 1]);
            if (hi < 0 || lo < 0) {
                free(b);
                return SQLITE_MISMATCH;
            }
            b[i] = (unsigned char)(hi << 4 | lo);
        }
        return sqlite3_bind_blob(st, idx, b, (int)n, free);
    }
    return SQLITE_MISMATCH;
}

/* 1 when `table` is one an export may write into (an ordinary table of the target). */
static int maint_importable(sqlite3 *db, const char *table)
{
    sqlite3_stmt *st = NULL;
    int ok = 0;
    if (sqlite3_prepare_v2(db, maint_tables_sql, -1, &st, NULL) != SQLITE_OK) return 0;
    while (!ok && sqlite3_step(st) == SQLITE_ROW)
        ok = strcmp((const char *)sqlite3_column_text(st, 0), table) == 0;
    sqlite3_finalize(st);
    return ok;
}

int maint_import(store *s, const char *path, int64_t *rows, char **err)
{
    sqlite3 *db = store_db(s);
    char *text = NULL;
    size_t len = 0, lineno = 0;
    int rc, in_tx = 0;
    int64_t run = 0, inserted = 0;
    if (rows) *rows = 0;
    if (maint_pass_running_db(db, &run))
        return lc_errf(err, LC_BUSY,
                       "import: a pass is running (run %lld); an export carries committed memory "
                       "only, so import after it finishes",
                       (long long)run);
    if ((rc = lc_read_file(path, &text, &len, err)) != LC_OK) goto done;
    if ((rc = maint_exec(db, "BEGIN IMMEDIATE", err)) != LC_OK) goto done;
    in_tx = 1;
    for (char *p = text; p < text + len;) {
        char *nl = memchr(p, '\n', (size_t)(text + len - p));
        char *end = nl ? nl : text + len;
        lineno++;
        if (end == p) {
            p = end + 1;
            continue;
        }
        cJSON *line = cJSON_ParseWithLength(p, (size_t)(end - p));
        p = end + 1;
        const cJSON *table = cJSON_GetObjectItemCaseSensitive(line, "table");
        const cJSON *row = cJSON_GetObjectItemCaseSensitive(line, "row");
        if (lineno == 1) {
            int header = cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(line, "lcmExport"));
            cJSON_Delete(line);
            if (!header) {
                rc = lc_errf(err, LC_INVALID, "import: %s is not an LCM export (no header line)", path);
                goto done;
            }
            continue;
        }
        if (cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(line, "lcmExport"))) {
            cJSON_Delete(line); /* the next store's header in a gc export */
            continue;
        }
        if (!cJSON_IsString(table) || !cJSON_IsObject(row)) {
            cJSON_Delete(line);
            rc = lc_errf(err, LC_INVALID, "import: %s:%zu is not an export row", path, lineno);
            goto done;
        }
        if (!maint_importable(db, table->valuestring)) {
            cJSON_Delete(line);
            rc = lc_errf(err, LC_INVALID, "import: %s:%zu names table '%s' this store does not have",
                         path, lineno, table->valuestring);
            goto done;
        }
        sbuf sql = {0};
        const cJSON *c;
        int ncol = 0;
        char *q = sqlite3_mprintf("INSERT OR IGNORE INTO \"%w\"(", table->valuestring);
        sb_puts(&sql, q ? q : "");
        sqlite3_free(q);
        cJSON_ArrayForEach(c, row)
        {
            q = sqlite3_mprintf("%s\"%w\"", ncol ? "," : "", c->string);
            sb_puts(&sql, q ? q : "");
            sqlite3_free(q);
            ncol++;
        }
        sb_puts(&sql, ") VALUES(");
        for (int i = 0; i < ncol; i++) sb_puts(&sql, i ? ",?" : "?");
        sb_puts(&sql, ")");
        sqlite3_stmt *st = NULL;
        int ok = !sql.oom && sqlite3_prepare_v2(db, sql.p, -1, &st, NULL) == SQLITE_OK;
        sb_free(&sql);
        int idx = 1;
        cJSON_ArrayForEach(c, row)
        {
            if (ok && maint_bind_json(st, idx++, c) != SQLITE_OK) ok = 0;
        }
        if (ok && sqlite3_step(st) != SQLITE_DONE) ok = 0;
        if (ok) inserted += sqlite3_changes(db);
        else rc = lc_errf(err, LC_ERR, "import: %s:%zu: %s", path, lineno, sqlite3_errmsg(db));
        sqlite3_finalize(st);
        cJSON_Delete(line);
        if (rc) goto done;
    }
    if (lineno == 0) {
        rc = lc_errf(err, LC_INVALID, "import: %s is empty", path);
        goto done;
    }
    if ((rc = maint_rebuild_fts(db, err)) != LC_OK) goto done;
    if ((rc = maint_exec(db, "COMMIT", err)) != LC_OK) goto done;
    in_tx = 0;
done:
    if (in_tx) sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    if (rows) *rows = rc == LC_OK ? inserted : 0;
    free(text);
    return rc;
}

/* ---- doctor ------------------------------------------------------------------------------ */

/* Run `sql` (one id column), count every row and keep up to MAINT_SAMPLE as "prefix<id>". */
static int maint_collect(sqlite3 *db, const char *sql, const char *prefix, maint_check *c, char **err)
{
    sqlite3_stmt *st = NULL;
    sbuf b = {0};
    int step, rc = LC_OK;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        rc = store_sqlite_err(db, err, "maint", c->name);
        goto done;
    }
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        if (c->count < MAINT_SAMPLE)
            sb_printf(&b, "%s%s%s", b.len ? ", " : "", prefix, (const char *)sqlite3_column_text(st, 0));
        c->count++;
    }
    if (step != SQLITE_DONE) rc = store_sqlite_err(db, err, "maint", c->name);
done:
    sqlite3_finalize(st);
    if (b.len) {
        free(c->sample);
        c->sample = sb_detach(&b);
    }
    sb_free(&b);
    return rc;
}

static int maint_fts_check(sqlite3 *db, const char *fts, const char *table, const char *prefix,
                           maint_check *c, char **err)
{
    int rc = LC_OK;
    if (!maint_table_exists(db, fts) || !maint_table_exists(db, table)) return LC_OK;
    char *sql = sqlite3_mprintf("INSERT INTO \"%w\"(\"%w\", rank) VALUES('integrity-check', 0)", fts, fts);
    /* A read-only connection cannot run the integrity command; the row comparison below
     * still finds missing and stray documents. */
    if (sql && sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK &&
        sqlite3_extended_errcode(db) != SQLITE_READONLY && sqlite3_errcode(db) != SQLITE_READONLY) {
        c->count++;
        char *s = lc_asprintf("%s%s%s: index corrupt", c->sample ? c->sample : "",
                              c->sample ? ", " : "", fts);
        free(c->sample);
        c->sample = s;
    }
    sqlite3_free(sql);
    char *docsize = lc_asprintf("%s_docsize", fts);
    if (docsize && maint_table_exists(db, docsize)) {
        sql = sqlite3_mprintf("SELECT id FROM \"%w\" WHERE id NOT IN (SELECT id FROM \"%w_docsize\")"
                              " UNION ALL SELECT id FROM \"%w_docsize\" WHERE id NOT IN (SELECT id FROM \"%w\")",
                              table, fts, fts, table);
        rc = sql ? maint_collect(db, sql, prefix, c, err) : lc_errf(err, LC_NOMEM, "out of memory");
        sqlite3_free(sql);
    }
    free(docsize);
    return rc;
}

static maint_check *maint_add_check(maint_report *r, const char *name, int info)
{
    maint_check *c = &r->checks[r->n_checks++];
    memset(c, 0, sizeof *c);
    c->name = name;
    c->info = info;
    return c;
}

/* Summaries whose span names an entry the store lacks, or whose child is gone. */
static const char maint_bad_spans_sql[] =
    "SELECT DISTINCT sm.summary_id FROM summary_messages sm"
    " WHERE NOT EXISTS (SELECT 1 FROM messages m WHERE m.entry_id = sm.entry_id)"
    " UNION SELECT sp.summary_id FROM summary_spans sp"
    " WHERE NOT EXISTS (SELECT 1 FROM messages m WHERE m.entry_id = sp.first_entry)"
    "    OR NOT EXISTS (SELECT 1 FROM messages m WHERE m.entry_id = sp.last_entry)";
static const char maint_bad_children_sql[] =
    "SELECT DISTINCT c.parent_id FROM summary_children c"
    " WHERE NOT EXISTS (SELECT 1 FROM summaries s WHERE s.id = c.child_id)";
static const char maint_shape_sql[] =
    "SELECT s.id FROM summaries s WHERE s.depth < 0 OR s.depth > 8"
    " OR NOT EXISTS (SELECT 1 FROM summary_spans sp WHERE sp.summary_id = s.id)"
    " OR (s.kind = 'leaf' AND (s.depth <> 0"
    "     OR EXISTS (SELECT 1 FROM summary_children c WHERE c.parent_id = s.id)"
    "     OR NOT EXISTS (SELECT 1 FROM summary_messages m WHERE m.summary_id = s.id)))"
    " OR (s.kind = 'condensed' AND (NOT EXISTS (SELECT 1 FROM summary_children c WHERE c.parent_id = s.id)"
    "     OR s.depth <= (SELECT max(k.depth) FROM summary_children c JOIN summaries k ON k.id = c.child_id"
    "                    WHERE c.parent_id = s.id)))";
/* The later rows of every group of summaries that share a depth and a span. */
static const char maint_dups_sql[] =
    "SELECT sp.summary_id FROM summary_spans sp JOIN summaries s ON s.id = sp.summary_id"
    " WHERE EXISTS (SELECT 1 FROM summary_spans sp2 JOIN summaries s2 ON s2.id = sp2.summary_id"
    "   WHERE sp2.first_entry = sp.first_entry AND sp2.last_entry = sp.last_entry"
    "   AND s2.depth = s.depth AND sp2.summary_id < sp.summary_id)";

int maint_doctor(store *s, pid_t self, maint_report *out, char **err)
{
    sqlite3 *db = store_db(s);
    int rc = LC_OK;
    sqlite3_stmt *st = NULL;
    memset(out, 0, sizeof *out);
    if (!(out->checks = calloc(9, sizeof *out->checks))) return lc_errf(err, LC_NOMEM, "out of memory");
    int has_msgs = maint_table_exists(db, "messages"), has_sum = maint_table_exists(db, "summaries");
    int has_prov = has_sum && maint_table_exists(db, "summary_spans") &&
                   maint_table_exists(db, "summary_messages") && maint_table_exists(db, "summary_children");
    out->schema_version = (int)maint_int(db, "PRAGMA user_version", -1);
    out->db_bytes = store_db_bytes(s);
    if (has_msgs) {
        out->messages = maint_int(db, "SELECT count(*) FROM messages", 0);
        out->removed = maint_int(db, "SELECT count(*) FROM messages WHERE removed = 1", 0);
        out->payload_bytes = maint_int(db, "SELECT coalesce(sum(length(payload)), 0) FROM messages", 0);
    }
    if (has_sum) {
        out->summaries = maint_int(db, "SELECT count(*) FROM summaries", 0);
        if (sqlite3_prepare_v2(db, "SELECT depth, count(*) FROM summaries GROUP BY depth", -1, &st, NULL) ==
            SQLITE_OK)
            while (sqlite3_step(st) == SQLITE_ROW) {
                int d = sqlite3_column_int(st, 0);
                if (d >= 0 && d <= MAINT_MAX_DEPTH) out->depth_hist[d] = sqlite3_column_int64(st, 1);
            }
        sqlite3_finalize(st);
        st = NULL;
    }
    if (maint_table_exists(db, "file_handles"))
        out->file_handles = maint_int(db, "SELECT count(*) FROM file_handles", 0);

    maint_check *c = maint_add_check(out, "fts", 0);
    if ((rc = maint_fts_check(db, "messages_fts", "messages", "m", c, err)) != LC_OK) goto done;
    if ((rc = maint_fts_check(db, "summaries_fts", "summaries", "#", c, err)) != LC_OK) goto done;
    c = maint_add_check(out, "spans", 0);
    if (has_prov && has_msgs && (rc = maint_collect(db, maint_bad_spans_sql, "#", c, err)) != LC_OK) goto done;
    c = maint_add_check(out, "shape", 0);
    if (has_prov && (rc = maint_collect(db, maint_shape_sql, "#", c, err)) != LC_OK) goto done;
    c = maint_add_check(out, "children", 0);
    if (has_prov && (rc = maint_collect(db, maint_bad_children_sql, "#", c, err)) != LC_OK) goto done;
    c = maint_add_check(out, "duplicates", 0);
    if (has_prov && (rc = maint_collect(db, maint_dups_sql, "#", c, err)) != LC_OK) goto done;
    c = maint_add_check(out, "foreign-keys", 0);
    if ((rc = maint_collect(db, "SELECT \"table\" || ':' || coalesce(rowid, '?') FROM pragma_foreign_key_check",
                            "", c, err)) != LC_OK)
        goto done;
    c = maint_add_check(out, "schema", 0);
    if (out->schema_version != STORE_SCHEMA_VERSION) {
        c->count = 1;
        c->sample = lc_asprintf("store has %d, this build %d", out->schema_version, STORE_SCHEMA_VERSION);
    }
    c = maint_add_check(out, "dead-runs", 0);
    if (maint_table_exists(db, "runs")) {
        out->runs = maint_int(db, "SELECT count(*) FROM runs", 0);
        if (sqlite3_prepare_v2(db, "SELECT id, pid FROM runs WHERE finished IS NULL ORDER BY id", -1, &st,
                               NULL) != SQLITE_OK) {
            rc = store_sqlite_err(db, err, "maint", "runs");
            goto done;
        }
        sbuf b = {0};
        while (sqlite3_step(st) == SQLITE_ROW) {
            pid_t pid = (pid_t)sqlite3_column_int64(st, 1);
            if (pid == self || maint_pid_alive(pid)) continue;
            if (c->count < MAINT_SAMPLE)
                sb_printf(&b, "%srun %lld (pid %d)", b.len ? ", " : "", (long long)sqlite3_column_int64(st, 0),
                          (int)pid);
            c->count++;
        }
        if (b.len) c->sample = sb_detach(&b);
        sb_free(&b);
    }
    c = maint_add_check(out, "unleafed", 1);
    if (has_msgs && has_prov)
        c->count = maint_int(db,
                             "SELECT count(*) FROM messages m WHERE m.removed = 0 AND NOT EXISTS"
                             " (SELECT 1 FROM summary_messages sm WHERE sm.entry_id = m.entry_id)",
                             0);
done:
    sqlite3_finalize(st);
    if (rc != LC_OK) maint_report_free(out);
    return rc;
}

void maint_report_free(maint_report *r)
{
    if (!r) return;
    for (size_t i = 0; i < r->n_checks; i++) free(r->checks[i].sample);
    free(r->checks);
    memset(r, 0, sizeof *r);
}

int64_t maint_report_faults(const maint_report *r)
{
    int64_t n = 0;
    for (size_t i = 0; i < r->n_checks; i++)
        if (!r->checks[i].info) n += r->checks[i].count;
    return n;
}

char *maint_report_format(const maint_report *r)
{
    sbuf b = {0};
    for (size_t i = 0; i < r->n_checks; i++) {
        const maint_check *c = &r->checks[i];
        if (c->info)
            sb_printf(&b, "%s: %lld\n", c->name, (long long)c->count);
        else if (c->count == 0)
            sb_printf(&b, "%s: ok\n", c->name);
        else
            sb_printf(&b, "%s: %lld (%s%s)\n", c->name, (long long)c->count, c->sample ? c->sample : "",
                      c->count > MAINT_SAMPLE ? ", ..." : "");
    }
    if (b.len) b.p[--b.len] = '\0';
    if (b.oom) {
        sb_free(&b);
        return NULL;
    }
    return b.p ? sb_detach(&b) : lc_strdup("");
}

/* ---- repair ------------------------------------------------------------------------------ */

static int64_t maint_changes_exec(sqlite3 *db, const char *sql, int *rc, char **err)
{
    if (*rc != LC_OK) return 0;
    if ((*rc = maint_exec(db, sql, err)) != LC_OK) return 0;
    return sqlite3_changes(db);
}

int maint_repair(store *s, pid_t self, maint_repair_stats *out, char **err)
{
    sqlite3 *db = store_db(s);
    int rc = LC_OK, in_tx = 0;
    sqlite3_stmt *st = NULL, *up = NULL;
    memset(out, 0, sizeof *out);
    int has_prov = maint_table_exists(db, "summaries") && maint_table_exists(db, "summary_spans") &&
                   maint_table_exists(db, "summary_messages") &&
                   maint_table_exists(db, "summary_children") && maint_table_exists(db, "messages");
    if ((rc = maint_exec(db, "BEGIN IMMEDIATE", err)) != LC_OK) goto done;
    in_tx = 1;
    if (has_prov) {
        /* Provenance rows that name no summary first, so the closure below sees only real
         * edges; then every bad node and, transitively, every parent that loses a child. */
        out->orphans += maint_changes_exec(
            db, "DELETE FROM summary_children WHERE parent_id NOT IN (SELECT id FROM summaries)", &rc, err);
        out->orphans += maint_changes_exec(
            db, "DELETE FROM summary_spans WHERE summary_id NOT IN (SELECT id FROM summaries)", &rc, err);
        out->orphans += maint_changes_exec(
            db, "DELETE FROM summary_messages WHERE summary_id NOT IN (SELECT id FROM summaries)", &rc, err);
        if (rc) goto done;
        char *sql = lc_asprintf("DROP TABLE IF EXISTS temp.maint_drop;"
                                "CREATE TEMP TABLE maint_drop AS WITH RECURSIVE d(id) AS ("
                                "%s UNION %s"
                                " UNION SELECT c.parent_id FROM summary_children c JOIN d ON c.child_id = d.id)"
                                " SELECT DISTINCT id FROM d;",
                                maint_bad_spans_sql, maint_bad_children_sql);
        if (!sql) {
            rc = lc_errf(err, LC_NOMEM, "out of memory");
            goto done;
        }
        rc = maint_exec(db, sql, err);
        free(sql);
        if (rc) goto done;
        out->dropped = maint_int(db, "SELECT count(*) FROM temp.maint_drop", 0);
        maint_changes_exec(db,
                           "DELETE FROM summary_children WHERE child_id IN (SELECT id FROM temp.maint_drop)"
                           " OR parent_id IN (SELECT id FROM temp.maint_drop);"
                           "DELETE FROM summary_spans WHERE summary_id IN (SELECT id FROM temp.maint_drop);"
                           "DELETE FROM summary_messages WHERE summary_id IN (SELECT id FROM temp.maint_drop);"
                           "DELETE FROM summaries WHERE id IN (SELECT id FROM temp.maint_drop);"
                           "DROP TABLE temp.maint_drop;",
                           &rc, err);
        /* Duplicate spans: keep the expandable node of each group (its provenance is all
         * there), the oldest among equals; parents are re-pointed to the keeper. */
        maint_changes_exec(
            db,
            "DROP TABLE IF EXISTS temp.maint_rank; DROP TABLE IF EXISTS temp.maint_dups;"
            "CREATE TEMP TABLE maint_rank AS SELECT s.id, s.depth, sp.first_entry AS fe, sp.last_entry AS le,"
            " CASE WHEN s.kind = 'leaf' THEN EXISTS (SELECT 1 FROM summary_messages m WHERE m.summary_id = s.id)"
            "  ELSE EXISTS (SELECT 1 FROM summary_children c WHERE c.parent_id = s.id) END AS ok"
            " FROM summaries s JOIN summary_spans sp ON sp.summary_id = s.id;"
            "CREATE TEMP TABLE maint_dups AS SELECT r.id AS id, (SELECT r2.id FROM temp.maint_rank r2"
            " WHERE r2.depth = r.depth AND r2.fe = r.fe AND r2.le = r.le ORDER BY r2.ok DESC, r2.id LIMIT 1)"
            " AS keeper FROM temp.maint_rank r;"
            "DELETE FROM temp.maint_dups WHERE id = keeper;",
            &rc, err);
        if (rc) goto done;
        out->duplicates = maint_int(db, "SELECT count(*) FROM temp.maint_dups", 0);
        maint_changes_exec(
            db,
            "UPDATE OR IGNORE summary_children SET child_id ="
            " (SELECT keeper FROM temp.maint_dups d WHERE d.id = summary_children.child_id)"
            " WHERE child_id IN (SELECT id FROM temp.maint_dups);"
            "DELETE FROM summary_children WHERE child_id IN (SELECT id FROM temp.maint_dups)"
            " OR parent_id IN (SELECT id FROM temp.maint_dups);"
            "DELETE FROM summary_spans WHERE summary_id IN (SELECT id FROM temp.maint_dups);"
            "DELETE FROM summary_messages WHERE summary_id IN (SELECT id FROM temp.maint_dups);"
            "DELETE FROM summaries WHERE id IN (SELECT id FROM temp.maint_dups);"
            "DROP TABLE temp.maint_rank; DROP TABLE temp.maint_dups;",
            &rc, err);
        if (rc) goto done;
    }
    if (maint_table_exists(db, "runs")) {
        if (sqlite3_prepare_v2(db, "SELECT id, pid FROM runs WHERE finished IS NULL", -1, &st, NULL) != SQLITE_OK ||
            sqlite3_prepare_v2(db, "UPDATE runs SET finished = ?, status = 'reaped' WHERE id = ?", -1, &up,
                               NULL) != SQLITE_OK) {
            rc = store_sqlite_err(db, err, "maint", "runs");
            goto done;
        }
        while (sqlite3_step(st) == SQLITE_ROW) {
            pid_t pid = (pid_t)sqlite3_column_int64(st, 1);
            /* Never our own run; a pid some live process holds may be that writer. */
            if (pid == self || maint_pid_alive(pid)) continue;
            sqlite3_bind_int64(up, 1, (sqlite3_int64)time(NULL) * 1000);
            sqlite3_bind_int64(up, 2, sqlite3_column_int64(st, 0));
            if (sqlite3_step(up) != SQLITE_DONE) {
                rc = store_sqlite_err(db, err, "maint", "reap run");
                goto done;
            }
            sqlite3_reset(up);
            out->reaped++;
        }
    }
    if ((rc = maint_rebuild_fts(db, err)) != LC_OK) goto done;
    out->fts_rebuilt = 1;
    if ((rc = maint_exec(db, "COMMIT", err)) != LC_OK) goto done;
    in_tx = 0;
done:
    sqlite3_finalize(st);
    sqlite3_finalize(up);
    if (in_tx) sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

/* ---- the store folder ---------------------------------------------------------------------- */

int maint_store_set_aside(const char *path, const char *stamp, char **moved_to, char **err)
{
    static const char *const sfx[] = {"", "-wal", "-shm"};
    char *to = lc_asprintf("%s.corrupt-%s", path, stamp);
    int rc = LC_OK;
    if (moved_to) *moved_to = NULL;
    if (!to) return lc_errf(err, LC_NOMEM, "out of memory");
    /* The log first: were the main file renamed alone, a new store at `path` would replay
     * the old one's log. */
    for (int k = 2; k >= 0 && rc == LC_OK; k--) {
        char *a = lc_asprintf("%s%s", path, sfx[k]), *b = lc_asprintf("%s%s", to, sfx[k]);
        if (!a || !b) rc = lc_errf(err, LC_NOMEM, "out of memory");
        else if (rename(a, b) != 0 && (errno != ENOENT || k == 0))
            rc = lc_errf(err, LC_ERR, "cannot move %s aside to %s: %s", a, b, strerror(errno));
        free(a);
        free(b);
    }
    if (rc == LC_OK && moved_to) *moved_to = to;
    else free(to);
    return rc;
}

/* The session id in a session file's header line, or NULL. */
static char *maint_session_header_id(const char *path)
{
    FILE *fp = fopen(path, "r");
    char *line = NULL, *id = NULL;
    size_t cap = 0;
    if (!fp) return NULL;
    ssize_t n = getline(&line, &cap, fp);
    fclose(fp);
    if (n > 0) {
        cJSON *h = cJSON_ParseWithLength(line, (size_t)n);
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(h, "type");
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(h, "id");
        if (cJSON_IsString(t) && !strcmp(t->valuestring, "session") && cJSON_IsString(v))
            id = lc_strdup(v->valuestring);
        cJSON_Delete(h);
    }
    free(line);
    return id;
}

typedef struct maint_ids {
    char **v;
    size_t n;
} maint_ids;

static void maint_collect_sessions(const char *dir, int depth, maint_ids *ids)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    if (!d) return;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        char *p = lc_asprintf("%s/%s", dir, de->d_name);
        struct stat sb;
        if (!p || stat(p, &sb) != 0) {
            free(p);
            continue;
        }
        size_t l = strlen(de->d_name);
        if (S_ISDIR(sb.st_mode) && depth > 0) {
            maint_collect_sessions(p, depth - 1, ids);
        } else if (S_ISREG(sb.st_mode) && l > 6 && !strcmp(de->d_name + l - 6, ".jsonl")) {
            char *id = maint_session_header_id(p);
            char **nv = id ? realloc(ids->v, (ids->n + 1) * sizeof *nv) : NULL;
            if (nv) {
                ids->v = nv;
                ids->v[ids->n++] = id;
            } else {
                free(id);
            }
        }
        free(p);
    }
    closedir(d);
}

/* Whether the session file a store recorded may still be its session: 0 only when it is
 * known to be gone -- absent (ENOENT / ENOTDIR) or a Pi session file whose header now
 * names another session. A file that exists in another format (an imported Claude Code or
 * Codex transcript) or cannot be checked (a permission, an unmounted disk) keeps it. */
static int maint_session_file_live(const char *path, const char *session_id)
{
    struct stat sb;
    if (stat(path, &sb) != 0) return !(errno == ENOENT || errno == ENOTDIR);
    char *id = maint_session_header_id(path);
    int live = !id || !strcmp(id, session_id);
    free(id);
    return live;
}

int maint_gc_plan(const char *agent_home, const char *const *session_dirs, size_t n_dirs,
                  const char *current_session, catalog_list *out, char **err)
{
    maint_ids ids = {0};
    int rc;
    if ((rc = catalog_list_stores(agent_home, NULL, out, err)) != LC_OK) return rc;
    for (size_t i = 0; i < n_dirs; i++)
        if (session_dirs[i]) maint_collect_sessions(session_dirs[i], 1, &ids);
    /* Keep the retired entries in place, in listing order. */
    size_t kept = 0;
    for (size_t i = 0; i < out->n; i++) {
        catalog_entry *e = &out->v[i];
        int live = current_session && !strcmp(e->session_id, current_session);
        int known = e->session_file && *e->session_file;
        if (!live && known) live = maint_session_file_live(e->session_file, e->session_id);
        for (size_t k = 0; !live && !known && k < ids.n; k++) live = !strcmp(ids.v[k], e->session_id);
        if (live) catalog_entry_free(e);
        else out->v[kept++] = *e;
    }
    out->n = kept;
    for (size_t k = 0; k < ids.n; k++) free(ids.v[k]);
    free(ids.v);
    return rc;
}

int maint_gc_apply(const catalog_list *plan, const char *export_path, size_t *deleted, char **err)
{
    char *tmp = NULL;
    int rc = LC_OK;
    size_t n = 0;
    if (deleted) *deleted = 0;
    if (plan->n == 0) return LC_OK;
    FILE *fp = maint_file_begin(export_path, &tmp, err);
    if (!fp) return LC_ERR;
    for (size_t i = 0; i < plan->n && rc == LC_OK; i++) {
        store *s = NULL;
        char *e = NULL;
        if (store_open_readonly(plan->v[i].path, &s, NULL, &e) != LC_OK)
            rc = lc_errf(err, LC_ERR, "gc: cannot open %s: %s", plan->v[i].path, e ? e : "?");
        else
            rc = maint_export_fp(store_db(s), plan->v[i].session_id, fp, NULL, err);
        free(e);
        store_close(s);
    }
    /* Nothing is deleted unless every store's bytes are durably in the export. */
    int crc = maint_file_commit(fp, tmp, export_path, rc == LC_OK, err);
    free(tmp);
    if (rc == LC_OK) rc = crc;
    if (rc != LC_OK) return rc;
    for (size_t i = 0; i < plan->n; i++) {
        char *e = NULL;
        if (catalog_retire(&plan->v[i], &e) == LC_OK) n++;
        else rc = lc_errf(err, LC_ERR, "gc: %s", e ? e : "?");
        free(e);
    }
    if (deleted) *deleted = n;
    return rc;
}

int maint_migrate_plan(const char *agent_home, catalog_list *out, char **err)
{
    catalog_filter f = {.older_schema = 1};
    return catalog_list_stores(agent_home, &f, out, err);
}

int maint_migrate_apply(const char *agent_home, const catalog_list *plan, size_t *migrated,
                        char **err)
{
    int rc = LC_OK;
    size_t n = 0;
    for (size_t i = 0; i < plan->n; i++) {
        /* The file name is the store's address, so its name is what a read-write open takes. */
        store *s = NULL;
        char *e = NULL;
        if (catalog_open(agent_home, plan->v[i].name, CATALOG_WRITE, &s, NULL, &e) != LC_OK)
            rc = lc_errf(err, LC_ERR, "migrate: %s.sqlite: %s", plan->v[i].name, e ? e : "open failed");
        else
            n++;
        free(e);
        store_close(s);
    }
    if (migrated) *migrated = n;
    return rc;
}

/* ---- diagnose ------------------------------------------------------------------------------- */

char *maint_tilde(const char *home, const char *path)
{
    if (!path) return lc_strdup("-");
    if (!home) home = getenv("HOME");
    size_t hl = home ? strlen(home) : 0;
    while (hl > 1 && home[hl - 1] == '/') hl--;
    if (hl > 1 && !strncmp(path, home, hl) && (path[hl] == '/' || path[hl] == '\0'))
        return lc_asprintf("~%s", path + hl);
    if (path[0] == '/') return lc_strdup("[path]");
    return lc_strdup(path);
}

/* Replace every occurrence of the home prefix in `s` by `~`, then mask secrets: every
 * rule (redact), or only the credential shapes for text in this package's own vocabulary
 * (config keys and metric fields such as "summaryTokens":1200 are not secrets, but a key
 * pasted into a config value or carried by a provider error still must not leave). The
 * block is meant to be pasted in public, so redactSecrets: false does not apply here. */
static char *maint_scrub_as(const char *home, const char *s, int redact)
{
    sbuf b = {0};
    size_t hl = home ? strlen(home) : 0;
    while (hl > 1 && home[hl - 1] == '/') hl--;
    for (const char *p = s; *p;) {
        if (hl > 1 && !strncmp(p, home, hl)) {
            sb_putc(&b, '~');
            p += hl;
        } else {
            sb_putc(&b, *p++);
        }
    }
    char *t = b.oom ? NULL : sb_detach(&b);
    sb_free(&b);
    if (!t) return t;
    char *r = redact ? redact_text(t, strlen(t), 1, NULL) : redact_keys(t, strlen(t), NULL);
    free(t);
    return r;
}

static char *maint_scrub(const char *home, const char *s) { return maint_scrub_as(home, s, 1); }

static void maint_diag_line(sbuf *b, const char *home, const char *label, const char *value)
{
    char *v = maint_scrub(home, value ? value : "-");
    sb_printf(b, "%s: %s\n", label, v ? v : "?");
    free(v);
}

char *maint_diagnose(const maint_diag_input *in)
{
    sbuf b = {0};
    const char *home = in->home ? in->home : getenv("HOME");
    struct utsname u;
    char *tmp = NULL;
    maint_report rep = {0};
    int have_rep = 0;
    if (uname(&u) != 0) {
        strcpy(u.sysname, "?");
        strcpy(u.machine, "?");
    }
    sb_puts(&b, "```lcm-diagnose\n");
    sb_printf(&b, "version: lossless-context %s (ABI %u, API level %u); host %s; sqlite %s\n",
              in->plugin_version ? in->plugin_version : "?", in->abi_version, in->api_level,
              in->host_name ? in->host_name : "?", sqlite3_libversion());
    sb_printf(&b, "platform: %s %s; mode %s\n", u.sysname, u.machine, in->mode ? in->mode : "?");
    const char *base = in->session_file ? strrchr(in->session_file, '/') : NULL;
    base = base ? base + 1 : in->session_file;
    tmp = lc_asprintf("%s; file %s; format %d", in->session_id ? in->session_id : "-", base ? base : "-",
                      in->session_format);
    maint_diag_line(&b, home, "session", tmp);
    free(tmp);
    tmp = maint_tilde(home, in->store_path);
    sb_printf(&b, "store: %s\n", tmp ? tmp : "?");
    free(tmp);
    if (in->st && maint_doctor(in->st, getpid(), &rep, NULL) == LC_OK) {
        have_rep = 1;
        sb_printf(&b, "facts: %lld messages (%lld removed), %lld summaries, %lld file handles, %lld KB, "
                      "payload %lld bytes, schema %d\n",
                  (long long)rep.messages, (long long)rep.removed, (long long)rep.summaries,
                  (long long)rep.file_handles, (long long)(rep.db_bytes / 1024), (long long)rep.payload_bytes,
                  rep.schema_version);
        sb_puts(&b, "depth:");
        for (int d = 0; d <= MAINT_MAX_DEPTH; d++)
            if (rep.depth_hist[d]) sb_printf(&b, " d%d=%lld", d, (long long)rep.depth_hist[d]);
        sb_puts(&b, rep.summaries ? "\n" : " none\n");
        sb_puts(&b, "integrity:");
        for (size_t i = 0; i < rep.n_checks; i++)
            sb_printf(&b, "%s %s=%lld", i ? "," : "", rep.checks[i].name, (long long)rep.checks[i].count);
        sb_puts(&b, "\n");
    } else {
        sb_puts(&b, "facts: store not open\n");
    }
    maint_diag_line(&b, home, "projection", in->pin ? in->pin : "none");
    maint_diag_line(&b, home, "thresholds", in->thresholds);
    tmp = lc_asprintf("%s; window %ld", in->model ? in->model : "none", in->window);
    maint_diag_line(&b, home, "model", tmp);
    free(tmp);
    maint_diag_line(&b, home, "summarizer", in->chain);
    tmp = maint_tilde(home, in->config_path);
    sb_printf(&b, "config path: %s\n", tmp ? tmp : "?");
    free(tmp);
    char *cfg = in->config ? cJSON_PrintUnformatted(in->config) : NULL;
    /* The config is this package's own vocabulary: key names like summaryTokens must not
     * read as secrets; only the home prefix is rewritten. */
    char *cs = maint_scrub_as(home, cfg ? cfg : "{}", 0);
    sb_printf(&b, "config: %s\n", cs ? cs : "?");
    free(cs);
    cJSON_free(cfg);

    /* Metrics: tally, last context decision, then recent rows newest-first until the cap. */
    int nrows = in->metrics_rows ? cJSON_GetArraySize(in->metrics_rows) : 0;
    char *report = in->metrics_rows ? metrics_report(in->metrics_rows, in->session_id) : NULL;
    char *tally = report ? strstr(report, "by kind:") : NULL;
    sb_printf(&b, "metrics: %d rows; %s\n", nrows, tally ? tally : "by kind: none");
    free(report);
    const cJSON *last_ctx = NULL, *row;
    if (in->metrics_rows)
        cJSON_ArrayForEach(row, in->metrics_rows)
        {
            const cJSON *k = cJSON_GetObjectItemCaseSensitive(row, "kind");
            if (cJSON_IsString(k) && !strcmp(k->valuestring, METRIC_CONTEXT)) last_ctx = row;
        }
    if (last_ctx) {
        cJSON *s = metrics_row_sanitized(last_ctx);
        char *t = s ? cJSON_PrintUnformatted(s) : NULL;
        char *sc = t ? maint_scrub_as(home, t, 0) : NULL;
        sb_printf(&b, "last context decision: %s\n", sc ? sc : "?");
        free(sc);
        cJSON_free(t);
        cJSON_Delete(s);
    } else {
        sb_puts(&b, "last context decision: none\n");
    }
    const char *tail_fmt = "recent rows: %d shown, %d left out\n";
    char **lines = nrows ? calloc((size_t)nrows, sizeof *lines) : NULL;
    size_t used = b.len + 64 /* the recent-rows line and the closing fence */;
    int first = nrows; /* rows [first, nrows) are shown */
    for (int i = nrows - 1; lines && i >= 0 && nrows - i <= MAINT_DIAG_ROWS; i--) {
        cJSON *s = metrics_row_sanitized(cJSON_GetArrayItem(in->metrics_rows, i));
        char *t = s ? cJSON_PrintUnformatted(s) : NULL;
        cJSON_Delete(s);
        char *sc = t ? maint_scrub_as(home, t, 0) : NULL; /* sanitized: no free text left */
        cJSON_free(t);
        if (!sc || used + strlen(sc) + 1 > MAINT_DIAG_BYTES) {
            free(sc);
            break;
        }
        used += strlen(sc) + 1;
        lines[i] = sc;
        first = i;
    }
    sb_printf(&b, tail_fmt, nrows - first, first);
    for (int i = first; i < nrows; i++) sb_printf(&b, "%s\n", lines[i]);
    for (int i = 0; lines && i < nrows; i++) free(lines[i]);
    free(lines);
    sb_puts(&b, "```");
    if (have_rep) maint_report_free(&rep);
    if (b.oom) {
        sb_free(&b);
        return NULL;
    }
    /* The fixed part alone can only outgrow the cap through an enormous config: cut it at a
     * character boundary and say so, the cap is the promise. */
    if (b.len > MAINT_DIAG_BYTES) {
        static const char mark[] = "\n[diagnose: cut at 8192 bytes]";
        size_t keep = MAINT_DIAG_BYTES - (sizeof mark - 1);
        while (keep > 0 && ((unsigned char)b.p[keep] & 0xC0) == 0x80) keep--;
        memcpy(b.p + keep, mark, sizeof mark);
        b.len = keep + sizeof mark - 1;
    }
    return sb_detach(&b);
}

int maint_save(const char *path, const char *text, char **err)
{
    if (!path || !*path) return lc_errf(err, LC_INVALID, "diagnose: --save needs a path");
    char *data = lc_asprintf("%s\n", text ? text : "");
    if (!data) return lc_errf(err, LC_NOMEM, "out of memory");
    int rc = lc_write_atomic(path, data, strlen(data), 0600, err);
    free(data);
    return rc;
}
