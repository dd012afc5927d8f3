/*
 * maint.c -- store maintenance (maint.h): online backup, verbatim JSONL export and import,
 * doctor checks and --repair, retired-store gc and older-schema migrate (the diagnose
 * block is maint_diag.c). Owns the policy and the reports; the rows are reached through
 * the store's administration primitives (store.h), so no SQL runs here. No host, no plugin.
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
#include <time.h>
#include <unistd.h>

#include <zlib.h>

#include "catalog.h"
#include "store.h"
#include "util.h"

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
    int rc = LC_OK, fd;
    char *tmp = NULL, *dir = NULL;
    if (!from || !dest_path || !*dest_path) return lc_errf(err, LC_INVALID, "backup: no store or path");
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
    if ((rc = store_backup_to(from, tmp, err)) != LC_OK) goto done;
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

/* The export's writer: the header line, then one line per row. */
typedef struct maint_export_ctx {
    FILE *fp;
    const char *tag;
    int64_t count;
} maint_export_ctx;

static int maint_export_header(void *ud, int schema, const char *const *tables, size_t nt, char **err)
{
    maint_export_ctx *x = ud;
    (void)err;
    fputs("{\"lcmExport\":1,\"store\":", x->fp);
    maint_json_str(x->fp, (const unsigned char *)(x->tag ? x->tag : ""), x->tag ? strlen(x->tag) : 0);
    fprintf(x->fp, ",\"schema\":%lld,\"tables\":[", (long long)schema);
    for (size_t i = 0; i < nt; i++) {
        if (i) fputc(',', x->fp);
        maint_json_str(x->fp, (const unsigned char *)tables[i], strlen(tables[i]));
    }
    fputs("]}\n", x->fp);
    return LC_OK;
}

static int maint_export_row(void *ud, const char *table, size_t ncol, const char *const *cols,
                            const store_value *vals, char **err)
{
    maint_export_ctx *x = ud;
    FILE *fp = x->fp;
    (void)err;
    fputs("{\"table\":", fp);
    maint_json_str(fp, (const unsigned char *)table, strlen(table));
    fputs(",\"row\":{", fp);
    for (size_t c = 0; c < ncol; c++) {
        const store_value *v = &vals[c];
        if (c) fputc(',', fp);
        maint_json_str(fp, (const unsigned char *)cols[c], strlen(cols[c]));
        fputc(':', fp);
        switch (v->type) {
        case STORE_VALUE_INT: fprintf(fp, "%lld", (long long)v->i); break;
        case STORE_VALUE_REAL: fprintf(fp, "%.17g", v->d); break;
        case STORE_VALUE_NULL: fputs("null", fp); break;
        case STORE_VALUE_BLOB: {
            const unsigned char *b = v->p;
            fputs("{\"blob\":\"", fp);
            for (size_t k = 0; k < v->n; k++) fprintf(fp, "%02x", b[k]);
            fputs("\"}", fp);
            break;
        }
        case STORE_VALUE_TEXT: maint_json_str(fp, v->p, v->n); break;
        }
    }
    fputs("}}\n", fp);
    x->count++;
    return LC_OK;
}

static int maint_export_fp(store *s, const char *tag, FILE *fp, int64_t *rows, char **err)
{
    static const store_dump_visitor v = {maint_export_header, maint_export_row};
    maint_export_ctx x = {.fp = fp, .tag = tag};
    int rc = store_dump(s, &v, &x, err);
    if (rc == LC_OK && ferror(fp)) rc = lc_errf(err, LC_ERR, "export: write failed: %s", strerror(errno));
    if (rows) *rows += x.count;
    return rc;
}

/* A fresh temp file beside `path` for an export; maint_file_commit fsyncs and renames it
 * into place. mkstemp makes it O_EXCL with a random name, so a file or symlink planted at a
 * guessable name is never written through nor its mode kept; mkstemp's 0600 is set again
 * through the descriptor whatever the umask did. */
static FILE *maint_file_begin(const char *path, char **tmp, char **err)
{
    const char *slash = strrchr(path, '/');
    *tmp = slash ? lc_asprintf("%.*s/.%s.tmp.XXXXXX", (int)(slash - path), path, slash + 1)
                 : lc_asprintf(".%s.tmp.XXXXXX", path);
    if (!*tmp) {
        lc_errf(err, LC_NOMEM, "export: out of memory");
        return NULL;
    }
    int fd = mkstemp(*tmp);
    if (fd >= 0 && fchmod(fd, 0600) != 0) {
        close(fd);
        unlink(*tmp);
        fd = -1;
    }
    FILE *fp = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!fp) {
        lc_errf(err, LC_ERR, "export: cannot write %s: %s", path, strerror(errno));
        if (fd >= 0) {
            close(fd);
            unlink(*tmp);
        }
        free(*tmp);
        *tmp = NULL;
    }
    return fp;
}

/* A rename into `path`'s folder is durable only once the folder is. */
static void maint_fsync_dir(const char *path)
{
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
    maint_fsync_dir(path);
    return LC_OK;
}

int maint_export(store *s, const char *tag, const char *path, int64_t *rows, char **err)
{
    char *tmp = NULL;
    int rc;
    if (rows) *rows = 0;
    FILE *fp = maint_file_begin(path, &tmp, err);
    if (!fp) return LC_ERR;
    rc = maint_export_fp(s, tag, fp, rows, err);
    int crc = maint_file_commit(fp, tmp, path, rc == LC_OK, err);
    if (rc == LC_OK) rc = crc;
    free(tmp);
    return rc;
}

/* ---- import ------------------------------------------------------------------------------ */

/* Whether an open run's writer is gone: its lease says so where the backend keeps one,
 * else its pid on this machine (never `self`'s own run). */
static int maint_run_gone(long pid, int lease, pid_t self)
{
    if (lease == STORE_RUN_LAPSED) return 1;
    if (lease == STORE_RUN_HELD) return 0;
    return (pid_t)pid != self && !maint_pid_alive((pid_t)pid);
}

typedef struct maint_running_ctx {
    int running;
    int64_t run_id;
} maint_running_ctx;

static int maint_running_visit(void *ud, int64_t id, long pid, int lease, char **err)
{
    maint_running_ctx *c = ud;
    (void)err;
    if (maint_run_gone(pid, lease, 0)) return LC_OK;
    c->running = 1;
    c->run_id = id;
    return STORE_VISIT_STOP;
}

int maint_pass_running(store *s, int64_t *run_id)
{
    maint_running_ctx c = {0};
    if (store_runs_open(s, maint_running_visit, &c, NULL) != LC_OK) return 0;
    if (c.running && run_id) *run_id = c.run_id;
    return c.running;
}

static int maint_hexval(int c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                          : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* An export's JSON value as a store value: integers exactly, {"blob":"hex"} as bytes
 * (*blob, malloc'd, the caller frees). 0 when the value has no store form. */
static int maint_value_of(const cJSON *v, store_value *out, unsigned char **blob)
{
    memset(out, 0, sizeof *out);
    if (cJSON_IsNull(v)) return 1;
    if (cJSON_IsBool(v)) {
        out->type = STORE_VALUE_INT;
        out->i = cJSON_IsTrue(v);
        return 1;
    }
    if (cJSON_IsString(v)) {
        out->type = STORE_VALUE_TEXT;
        out->p = v->valuestring;
        out->n = strlen(v->valuestring);
        return 1;
    }
    if (cJSON_IsNumber(v)) {
        double d = v->valuedouble;
        if (d == (double)(int64_t)d && d > -9e18 && d < 9e18) {
            out->type = STORE_VALUE_INT;
            out->i = (int64_t)d;
        } else {
            out->type = STORE_VALUE_REAL;
            out->d = d;
        }
        return 1;
    }
    const cJSON *hex = cJSON_GetObjectItemCaseSensitive(v, "blob");
    if (!cJSON_IsString(hex)) return 0;
    size_t n = strlen(hex->valuestring) / 2;
    unsigned char *b = malloc(n ? n : 1);
    if (!b) return 0;
    for (size_t i = 0; i < n; i++) {
        int hi = maint_hexval(hex->valuestring[2 * i]), lo = maint_hexval(hex->valuestring[2 * i + 1]);
        if (hi < 0 || lo < 0) {
            free(b);
            return 0;
        }
        b[i] = (unsigned char)(hi << 4 | lo);
    }
    out->type = STORE_VALUE_BLOB;
    out->p = b;
    out->n = n;
    *blob = b;
    return 1;
}

/* Insert one export row's object into `table`. *inserted counts a new row. */
static int maint_import_row(store *s, const char *table, const cJSON *row, int64_t *inserted, char **err)
{
    size_t ncol = (size_t)cJSON_GetArraySize(row), k = 0;
    const char **cols = calloc(ncol + 1, sizeof *cols);
    store_value *vals = calloc(ncol + 1, sizeof *vals);
    unsigned char **blobs = calloc(ncol + 1, sizeof *blobs);
    int rc = LC_OK, added = 0;
    const cJSON *c;
    if (!cols || !vals || !blobs) {
        rc = lc_errf(err, LC_NOMEM, "out of memory");
        goto done;
    }
    cJSON_ArrayForEach(c, row)
    {
        cols[k] = c->string;
        if (!maint_value_of(c, &vals[k], &blobs[k])) {
            rc = lc_errf(err, LC_ERR, "datatype mismatch");
            goto done;
        }
        k++;
    }
    if ((rc = store_row_load(s, table, ncol, cols, vals, &added, err)) == LC_OK) *inserted += added;
done:
    for (size_t i = 0; blobs && i < ncol; i++) free(blobs[i]);
    LC_FREE(blobs, cols, vals);
    return rc;
}

int maint_import(store *s, const char *path, int64_t *rows, char **err)
{
    char *text = NULL;
    size_t len = 0, lineno = 0;
    int rc, in_tx = 0;
    int64_t run = 0, inserted = 0;
    if (rows) *rows = 0;
    if (maint_pass_running(s, &run))
        return lc_errf(err, LC_BUSY,
                       "import: a pass is running (run %lld); an export carries committed memory "
                       "only, so import after it finishes",
                       (long long)run);
    if ((rc = lc_read_file(path, &text, &len, err)) != LC_OK) goto done;
    if ((rc = store_tx_begin(s, err)) != LC_OK) goto done;
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
        if (!store_table_loadable(s, table->valuestring)) {
            cJSON_Delete(line);
            rc = lc_errf(err, LC_INVALID, "import: %s:%zu names table '%s' this store does not have",
                         path, lineno, table->valuestring);
            goto done;
        }
        char *why = NULL;
        if (maint_import_row(s, table->valuestring, row, &inserted, &why) != LC_OK)
            rc = lc_errf(err, LC_ERR, "import: %s:%zu: %s", path, lineno, why ? why : "?");
        free(why);
        cJSON_Delete(line);
        if (rc) goto done;
    }
    if (lineno == 0) {
        rc = lc_errf(err, LC_INVALID, "import: %s is empty", path);
        goto done;
    }
    if ((rc = store_rebuild_index(s, err)) != LC_OK) goto done;
    if ((rc = store_tx_commit(s, err)) != LC_OK) goto done;
    in_tx = 0;
done:
    if (in_tx) store_tx_rollback(s);
    if (rows) *rows = rc == LC_OK ? inserted : 0;
    free(text);
    return rc;
}

/* ---- doctor ------------------------------------------------------------------------------ */

/* A check's tally: every offending id counted, up to MAINT_SAMPLE kept as "prefix<id>". */
typedef struct maint_tally {
    maint_check *c;
    const char *prefix;
    sbuf b;
} maint_tally;

static int maint_tally_id(void *ud, const char *id, char **err)
{
    maint_tally *t = ud;
    (void)err;
    if (t->c->count < MAINT_SAMPLE) sb_printf(&t->b, "%s%s%s", t->b.len ? ", " : "", t->prefix, id);
    t->c->count++;
    return LC_OK;
}

/* An index whose own integrity command fails: counted, and named in full whatever the
 * sample holds already. */
static int maint_tally_index(void *ud, const char *fts, char **err)
{
    maint_check *c = ud;
    (void)err;
    c->count++;
    char *s = lc_asprintf("%s%s%s: index corrupt", c->sample ? c->sample : "", c->sample ? ", " : "", fts);
    free(c->sample);
    c->sample = s;
    return LC_OK;
}

/* Run one store check into `c`. */
static int maint_collect(store *s, store_check_kind kind, const char *prefix, maint_check *c, char **err)
{
    maint_tally t = {.c = c, .prefix = prefix};
    int rc = store_check(s, kind, maint_tally_id, &t, err);
    /* The ids found replace the sample so far, as they always have. */
    if (t.b.len) {
        free(c->sample);
        c->sample = sb_detach(&t.b);
    }
    sb_free(&t.b);
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

/* The dead-runs check: open runs whose writer is gone (never `self`). */
typedef struct maint_dead_ctx {
    maint_check *c;
    pid_t self;
    sbuf b;
} maint_dead_ctx;

static int maint_dead_visit(void *ud, int64_t id, long pid, int lease, char **err)
{
    maint_dead_ctx *d = ud;
    (void)err;
    if (!maint_run_gone(pid, lease, d->self)) return LC_OK;
    if (d->c->count < MAINT_SAMPLE)
        sb_printf(&d->b, "%srun %lld (%s %d)", d->b.len ? ", " : "", (long long)id,
                  lease == STORE_RUN_LAPSED ? "lease ran out, pid" : "pid", (int)pid);
    d->c->count++;
    return LC_OK;
}

_Static_assert(MAINT_MAX_DEPTH == STORE_MAX_DEPTH, "the report's depth histogram is the store's");

int maint_doctor(store *s, pid_t self, maint_report *out, char **err)
{
    store_facts f;
    int rc = LC_OK;
    memset(out, 0, sizeof *out);
    if (!(out->checks = calloc(9, sizeof *out->checks))) return lc_errf(err, LC_NOMEM, "out of memory");
    if ((rc = store_facts_get(s, &f, err)) != LC_OK) goto done;
    out->schema_version = f.schema_version;
    out->db_bytes = store_db_bytes(s);
    out->messages = f.messages;
    out->removed = f.removed;
    out->payload_bytes = f.payload_bytes;
    out->summaries = f.summaries;
    out->file_handles = f.file_handles;
    out->runs = f.runs;
    memcpy(out->depth_hist, f.depth_hist, sizeof out->depth_hist);

    maint_check *c = maint_add_check(out, "fts", 0);
    if ((rc = store_check(s, STORE_CHECK_MESSAGES_INDEX, maint_tally_index, c, err)) != LC_OK) goto done;
    if ((rc = maint_collect(s, STORE_CHECK_MESSAGES_INDEX_ROWS, "m", c, err)) != LC_OK) goto done;
    if ((rc = store_check(s, STORE_CHECK_SUMMARIES_INDEX, maint_tally_index, c, err)) != LC_OK) goto done;
    if ((rc = maint_collect(s, STORE_CHECK_SUMMARIES_INDEX_ROWS, "#", c, err)) != LC_OK) goto done;
    /* The checks that only tally the ids the store reports, each sampled as "prefix<id>". */
    static const struct {
        const char *name;
        store_check_kind kind;
        const char *prefix;
    } collected[] = {
        {"spans", STORE_CHECK_SPANS, "#"},
        {"shape", STORE_CHECK_SHAPE, "#"},
        {"children", STORE_CHECK_CHILDREN, "#"},
        {"duplicates", STORE_CHECK_DUPLICATES, "#"},
        {"foreign-keys", STORE_CHECK_FOREIGN_KEYS, ""},
    };
    for (size_t i = 0; i < sizeof collected / sizeof collected[0]; i++) {
        c = maint_add_check(out, collected[i].name, 0);
        if ((rc = maint_collect(s, collected[i].kind, collected[i].prefix, c, err)) != LC_OK) goto done;
    }
    c = maint_add_check(out, "schema", 0);
    if (out->schema_version != STORE_SCHEMA_VERSION) {
        c->count = 1;
        c->sample = lc_asprintf("store has %d, this build %d", out->schema_version, STORE_SCHEMA_VERSION);
    }
    c = maint_add_check(out, "dead-runs", 0);
    {
        maint_dead_ctx d = {.c = c, .self = self};
        rc = store_runs_open(s, maint_dead_visit, &d, err);
        if (d.b.len) c->sample = sb_detach(&d.b);
        sb_free(&d.b);
        if (rc != LC_OK) goto done;
    }
    c = maint_add_check(out, "unleafed", 1);
    c->count = f.unleafed;
done:
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

/* Close the open runs whose writer is dead. */
typedef struct maint_reap_ctx {
    store *s;
    pid_t self;
    int64_t reaped;
} maint_reap_ctx;

static int maint_reap_visit(void *ud, int64_t id, long pid, int lease, char **err)
{
    maint_reap_ctx *r = ud;
    /* Never our own run; a pid some live process holds may be that writer. */
    if (!maint_run_gone(pid, lease, r->self)) return LC_OK;
    int rc = store_run_reap(r->s, id, err);
    if (rc == LC_OK) r->reaped++;
    return rc;
}

int maint_repair(store *s, pid_t self, maint_repair_stats *out, char **err)
{
    int rc = LC_OK, in_tx = 0;
    maint_reap_ctx reap = {.s = s, .self = self};
    memset(out, 0, sizeof *out);
    if ((rc = store_tx_begin(s, err)) != LC_OK) goto done;
    in_tx = 1;
    if ((rc = store_prune_broken(s, &out->orphans, &out->dropped, err)) != LC_OK) goto done;
    if ((rc = store_dedupe_spans(s, &out->duplicates, err)) != LC_OK) goto done;
    rc = store_runs_open(s, maint_reap_visit, &reap, err);
    out->reaped = reap.reaped;
    if (rc != LC_OK) goto done;
    if ((rc = store_rebuild_index(s, err)) != LC_OK) goto done;
    out->fts_rebuilt = 1;
    if ((rc = store_tx_commit(s, err)) != LC_OK) goto done;
    in_tx = 0;
done:
    if (in_tx) store_tx_rollback(s);
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

char *maint_session_header(const char *path, const char *key)
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
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(h, key);
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
            char *id = maint_session_header(p, "id");
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
    char *id = maint_session_header(path, "id");
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
            rc = maint_export_fp(s, plan->v[i].session_id, fp, NULL, err);
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

/* ---- retention ------------------------------------------------------------------------- */

/* When a store was last written: its file's or its write-ahead log's time, the later. An
 * empty log is no write: any open (a reader's too) makes one. */
static long long maint_written_ms(const char *path)
{
    struct stat sb;
    long long t = 0;
    if (stat(path, &sb) == 0) t = (long long)sb.st_mtim.tv_sec * 1000 + sb.st_mtim.tv_nsec / 1000000;
    char *wal = lc_asprintf("%s-wal", path);
    if (wal && stat(wal, &sb) == 0 && sb.st_size > 0) {
        long long w = (long long)sb.st_mtim.tv_sec * 1000 + sb.st_mtim.tv_nsec / 1000000;
        if (w > t) t = w;
    }
    free(wal);
    return t;
}

typedef struct maint_aged {
    size_t i;
    long long at;
} maint_aged;

static int maint_newest_first(const void *a, const void *b)
{
    long long x = ((const maint_aged *)a)->at, y = ((const maint_aged *)b)->at;
    return x < y ? 1 : x > y ? -1 : 0;
}

int maint_retention_plan(const char *agent_home, long days, int64_t max_bytes, const char *current_session,
                         long long now_ms, catalog_list *out, int64_t *total_bytes, int64_t *kept_bytes,
                         char **err)
{
    catalog_list all = {0};
    maint_aged *aged = NULL;
    char *url = store_url(agent_home);
    int64_t total = 0, kept = 0;
    int rc = LC_OK;
    memset(out, 0, sizeof *out);
    if (url) {
        free(url);
        return lc_errf(err, LC_INVALID, "retention: this home's stores are in a shared PostgreSQL database; "
                                        "retention deletes an agent home's SQLite files only");
    }
    if ((rc = catalog_list_stores(agent_home, NULL, &all, err)) != LC_OK) goto done;
    if (!(aged = calloc(all.n ? all.n : 1, sizeof *aged)) ||
        !(out->v = calloc(all.n ? all.n : 1, sizeof *out->v))) {
        rc = lc_errf(err, LC_NOMEM, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < all.n; i++) {
        aged[i] = (maint_aged){i, maint_written_ms(all.v[i].path)};
        total += all.v[i].bytes;
    }
    qsort(aged, all.n, sizeof *aged, maint_newest_first);
    /* Live stores count against the cap first: they stay whatever it says. */
    char *live = calloc(all.n ? all.n : 1, 1);
    if (!live) {
        rc = lc_errf(err, LC_NOMEM, "out of memory");
        goto done;
    }
    for (size_t k = 0; k < all.n; k++) {
        const catalog_entry *e = &all.v[aged[k].i];
        live[k] = (current_session && (!strcmp(e->session_id, current_session) || !strcmp(e->name, current_session))) ||
                  now_ms - aged[k].at < MAINT_RETENTION_LIVE_MS;
        if (live[k]) kept += e->bytes;
    }
    /* Newest first: a store stays while it is young enough and fits; once one does not fit,
     * every older one goes too, so what is kept is the newest sessions. */
    int full = 0;
    for (size_t k = 0; k < all.n; k++) {
        catalog_entry *e = &all.v[aged[k].i];
        if (live[k]) continue;
        int old = days > 0 && now_ms - aged[k].at > (long long)days * 86400000LL;
        if (!old && !full && max_bytes > 0 && kept + e->bytes > max_bytes) full = 1;
        if (old || full) {
            out->v[out->n++] = *e;
            memset(e, 0, sizeof *e);
        } else {
            kept += e->bytes;
        }
    }
    free(live);
done:
    if (total_bytes) *total_bytes = total;
    if (kept_bytes) *kept_bytes = kept;
    catalog_list_free(&all);
    free(aged);
    if (rc != LC_OK) catalog_list_free(out);
    return rc;
}

/* The archive is written through stdio into zlib (fopencookie), so an export's writer is
 * the same for a plain file and a compressed one. */
static ssize_t maint_gz_write(void *c, const char *buf, size_t n)
{
    if (!n) return 0;
    int w = gzwrite((gzFile)c, buf, (unsigned)n);
    return w <= 0 ? -1 : (ssize_t)w;
}

static int maint_gz_close(void *c)
{
    return gzclose((gzFile)c) == Z_OK ? 0 : -1;
}

int maint_retention_apply(const catalog_list *plan, const char *archive_path, size_t *deleted, char **err)
{
    const char *slash = strrchr(archive_path, '/');
    char *tmp = slash ? lc_asprintf("%.*s/.%s.tmp.XXXXXX", (int)(slash - archive_path), archive_path, slash + 1)
                      : lc_asprintf(".%s.tmp.XXXXXX", archive_path);
    int rc = LC_OK, fd = -1, ok = 0;
    size_t n = 0;
    FILE *fp = NULL;
    if (deleted) *deleted = 0;
    if (plan->n == 0) goto done;
    if (!tmp) {
        rc = lc_errf(err, LC_NOMEM, "out of memory");
        goto done;
    }
    if ((fd = mkstemp(tmp)) < 0 || fchmod(fd, 0600) != 0) {
        rc = lc_errf(err, LC_ERR, "retention: cannot write %s: %s", archive_path, strerror(errno));
        goto done;
    }
    int gfd = dup(fd);
    gzFile gz = gfd >= 0 ? gzdopen(gfd, "wb6") : NULL;
    cookie_io_functions_t io = {.write = maint_gz_write, .close = maint_gz_close};
    if (!gz || !(fp = fopencookie(gz, "w", io))) {
        if (gz) gzclose(gz);
        else if (gfd >= 0) close(gfd);
        rc = lc_errf(err, LC_ERR, "retention: cannot compress into %s", archive_path);
        goto done;
    }
    for (size_t i = 0; i < plan->n && rc == LC_OK; i++) {
        store *s = NULL;
        char *e = NULL;
        if (store_open_readonly(plan->v[i].path, &s, NULL, &e) != LC_OK)
            rc = lc_errf(err, LC_ERR, "retention: cannot open %s: %s", plan->v[i].path, e ? e : "?");
        else
            rc = maint_export_fp(s, plan->v[i].name, fp, NULL, err);
        free(e);
        store_close(s);
    }
    int closed = fclose(fp) == 0;
    fp = NULL;
    if (rc == LC_OK && (!closed || fsync(fd) != 0))
        rc = lc_errf(err, LC_ERR, "retention: cannot write %s: %s", archive_path, strerror(errno));
    if (rc == LC_OK && rename(tmp, archive_path) != 0)
        rc = lc_errf(err, LC_ERR, "retention: cannot rename to %s: %s", archive_path, strerror(errno));
    if (rc != LC_OK) goto done;
    ok = 1;
    maint_fsync_dir(archive_path);
    /* Nothing is deleted unless every store's rows are durably in the archive. */
    for (size_t i = 0; i < plan->n; i++) {
        char *e = NULL;
        if (catalog_retire(&plan->v[i], &e) == LC_OK) n++;
        else rc = lc_errf(err, LC_ERR, "retention: %s", e ? e : "?");
        free(e);
    }
done:
    if (fd >= 0) close(fd);
    if (tmp && fd >= 0 && !ok) unlink(tmp);
    free(tmp);
    if (deleted) *deleted = n;
    return rc;
}

/* A whole file, gzip-compressed or plain (zlib reads a plain file through). */
static int maint_read_any(const char *path, sbuf *b, char **err)
{
    gzFile g = gzopen(path, "rb");
    char buf[65536];
    int n;
    if (!g) return lc_errf(err, errno == ENOENT ? LC_NOTFOUND : LC_ERR, "cannot read %s: %s", path, strerror(errno));
    while ((n = gzread(g, buf, sizeof buf)) > 0)
        if (sb_append(b, buf, (size_t)n) != LC_OK) break;
    int bad = n < 0 || b->oom;
    gzclose(g);
    return bad ? lc_errf(err, b->oom ? LC_NOMEM : LC_ERR, "cannot read %s (a damaged archive?)", path) : LC_OK;
}

int maint_is_export(const char *path)
{
    gzFile g = gzopen(path, "rb");
    char line[512];
    int yes = 0;
    if (!g) return 0;
    if (gzgets(g, line, sizeof line)) yes = strncmp(line, "{\"lcmExport\":", 13) == 0;
    gzclose(g);
    return yes;
}

/* The store being restored: committed, indexed and closed. */
static int maint_restore_end(store **s, int rc, size_t *stores, char **err)
{
    if (!*s) return rc;
    if (rc == LC_OK) rc = store_rebuild_index(*s, err);
    if (rc == LC_OK) rc = store_tx_commit(*s, err);
    else store_tx_rollback(*s);
    if (rc == LC_OK) (*stores)++;
    store_close(*s);
    *s = NULL;
    return rc;
}

int maint_restore(const char *agent_home, const char *path, size_t *stores, int64_t *rows, char **err)
{
    sbuf b = {0};
    store *s = NULL;
    size_t lineno = 0, n_stores = 0;
    int64_t inserted = 0;
    int rc, fresh = 0;
    if ((rc = maint_read_any(path, &b, err)) != LC_OK) goto done;
    for (char *p = b.p; p && p < b.p + b.len && rc == LC_OK;) {
        char *nl = memchr(p, '\n', (size_t)(b.p + b.len - p));
        char *end = nl ? nl : b.p + b.len;
        lineno++;
        cJSON *line = end > p ? cJSON_ParseWithLength(p, (size_t)(end - p)) : NULL;
        p = end + 1;
        if (!line) continue;
        const cJSON *tag = cJSON_GetObjectItemCaseSensitive(line, "store");
        const cJSON *table = cJSON_GetObjectItemCaseSensitive(line, "table");
        const cJSON *row = cJSON_GetObjectItemCaseSensitive(line, "row");
        if (cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(line, "lcmExport"))) {
            rc = maint_restore_end(&s, rc, &n_stores, err);
            if (rc == LC_OK && (!cJSON_IsString(tag) || !store_valid_id(tag->valuestring)))
                rc = lc_errf(err, LC_INVALID, "restore: %s:%zu: a header that names no store", path, lineno);
            if (rc == LC_OK) rc = store_open(agent_home, tag->valuestring, "", &s, err);
            /* A store the restore makes is the archived one: its meta too. */
            fresh = rc == LC_OK && store_message_count(s) == 0 && store_summary_count(s) == 0;
            if (rc == LC_OK && (rc = store_tx_begin(s, err)) != LC_OK) {
                store_close(s);
                s = NULL;
            }
        } else if (!s) {
            rc = lc_errf(err, LC_INVALID, "restore: %s is not an LCM export or archive (no header line)", path);
        } else if (!cJSON_IsString(table) || !cJSON_IsObject(row) || !store_table_loadable(s, table->valuestring)) {
            rc = lc_errf(err, LC_INVALID, "restore: %s:%zu is not a row this store can hold", path, lineno);
        } else if (fresh && !strcmp(table->valuestring, "meta") &&
                   cJSON_IsString(cJSON_GetObjectItemCaseSensitive(row, "key")) &&
                   cJSON_IsString(cJSON_GetObjectItemCaseSensitive(row, "value"))) {
            rc = store_meta_put(s, cJSON_GetObjectItemCaseSensitive(row, "key")->valuestring,
                                cJSON_GetObjectItemCaseSensitive(row, "value")->valuestring, err);
            if (rc == LC_OK) inserted++;
        } else {
            char *why = NULL;
            if (maint_import_row(s, table->valuestring, row, &inserted, &why) != LC_OK)
                rc = lc_errf(err, LC_ERR, "restore: %s:%zu: %s", path, lineno, why ? why : "?");
            free(why);
        }
        cJSON_Delete(line);
    }
    rc = maint_restore_end(&s, rc, &n_stores, err);
    if (rc == LC_OK && n_stores == 0) rc = lc_errf(err, LC_INVALID, "restore: %s holds no store", path);
done:
    sb_free(&b);
    if (stores) *stores = n_stores;
    if (rows) *rows = rc == LC_OK ? inserted : 0;
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
