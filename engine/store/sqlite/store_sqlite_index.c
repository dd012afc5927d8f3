/*
 * store_sqlite_index.c -- the home index on SQLite (store.h, store_index_*): one file,
 * <agent home>/lcm-home/recall-index.sqlite, holding a contentless FTS5 table of every
 * session store's searchable words (the stores' own tokenizer and columns: text, thinking)
 * and, per message, what the rank and a page need (ordinal, time, role, whether it is a
 * call's arguments, removed, the prompt its turn answers). A row's id is its store's key
 * shifted by 32 bits plus the message's row id in that store, so (store, row) is the key a
 * second indexer meets instead of a duplicate, and rowid order is store order then
 * message order (stores get keys as they are first indexed, oldest created first).
 * Derived: the stores are only ever read (read-only connections), and the file may be
 * deleted at any time (it is built again).
 */
#include "store.h"
#include "store_sqlite_file.h"
#include "store_sqlite_int.h"
#include "store_sqlite_tok.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "files.h"
#include "message.h"
#include "util.h"

#define IX_SCHEMA 1
#define IX_BUSY_MS 10000
#define IX_SHIFT 32
#define IX_ROW_MAX 0xffffffffLL
/* How far back a row's prompt is looked for (the store's STORE_PROMPT_REACH). */
#define IX_PROMPT_REACH 256
/* Rows read between two looks at the clock while a store is caught up. */
#define IX_CLOCK_ROWS 256

typedef struct ix {
    const store_index_methods *methods; /* first: store.c reads it */
    sqlite3 *db;
    char *path;
} ix;

static int ix_failed(ix *x, char **err, const char *what)
{
    int code = sqlite3_errcode(x->db);
    return lc_errf(err, code == SQLITE_NOMEM ? LC_NOMEM : LC_ERR, "home index %s: %s: %s", x->path, what,
                   sqlite3_errmsg(x->db));
}

static int ix_exec(ix *x, const char *sql, const char *what, char **err)
{
    return sqlite3_exec(x->db, sql, NULL, NULL, NULL) == SQLITE_OK ? LC_OK : ix_failed(x, err, what);
}

static int ix_prepare(ix *x, sqlite3_stmt **st, const char *sql, const char *what, char **err)
{
    return sqlite3_prepare_v2(x->db, sql, -1, st, NULL) == SQLITE_OK ? LC_OK : ix_failed(x, err, what);
}

static const char ix_schema_sql[] =
    "CREATE TABLE IF NOT EXISTS ix_stores("
    "  key INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, path TEXT, created INTEGER,"
    "  dev INTEGER, ino INTEGER, size INTEGER, mtime INTEGER, wal_size INTEGER, wal_mtime INTEGER,"
    "  last_id INTEGER NOT NULL DEFAULT 0, last_user INTEGER, last_user_id INTEGER, avgdl REAL);"
    "CREATE TABLE IF NOT EXISTS ix_rows("
    "  id INTEGER PRIMARY KEY, ordinal INTEGER, created INTEGER, role TEXT, call INTEGER,"
    "  removed INTEGER NOT NULL DEFAULT 0, prompt INTEGER, prompt_id INTEGER);"
    "CREATE INDEX IF NOT EXISTS ix_rows_removed ON ix_rows(id) WHERE removed = 1;"
    "CREATE VIRTUAL TABLE IF NOT EXISTS ix_fts USING fts5(text, thinking, content='',"
    "  tokenize='lcm_forms porter lcm');";

static void ix_close(store_index *pub)
{
    ix *x = (ix *)pub;
    if (!x) return;
    sqlite3_close(x->db);
    free(x->path);
    free(x);
}

static int ix_catch_up(store_index *pub, store_index_source *v, size_t n, double deadline_ms,
                       store_index_stats *st, char **err);
static int ix_search(store_index *pub, const store_index_query *q, store_index_visit visit, void *ud,
                     int64_t *total, int *newest_first, char **err);

static const store_index_methods ix_methods = {ix_close, ix_catch_up, ix_search};

/* The index's connection on x->path, its schema made or checked and its tables read once.
 * *damaged: the file is not a database, or its pages do not read (SQLite's own verdict). */
static int ix_connect(ix *x, int *damaged, char **err)
{
    int rc = LC_OK, version = 0;
    sqlite3_stmt *uv = NULL;
    *damaged = 0;
    if (sqlite3_open_v2(x->path, &x->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL) !=
        SQLITE_OK) {
        rc = x->db ? ix_failed(x, err, "open") : lc_errf(err, LC_NOMEM, "home index: out of memory");
        goto done;
    }
    sqlite3_busy_timeout(x->db, IX_BUSY_MS);
    if ((rc = store_sqlite_tok_register(x->db, err)) != LC_OK || (rc = store_sqlite_rank_register_db(x->db, err)) != LC_OK)
        goto done;
    /* WAL: readers go on while another process catches up. A crash may lose the last
     * transactions (synchronous NORMAL); the stores' stat facts are written in the same
     * transaction as their rows, so a lost one is only indexed again. */
    if ((rc = ix_exec(x, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL", "open", err)) != LC_OK) goto done;
    if ((rc = ix_prepare(x, &uv, "PRAGMA user_version", "open", err)) != LC_OK) goto done;
    if (sqlite3_step(uv) == SQLITE_ROW) version = sqlite3_column_int(uv, 0);
    if (version > IX_SCHEMA) {
        rc = lc_errf(err, LC_ERR, "home index %s: made by a newer build (form %d)", x->path, version);
        goto done;
    }
    if (version < IX_SCHEMA) {
        if ((rc = ix_exec(x, "BEGIN IMMEDIATE", "create", err)) != LC_OK) goto done;
        if ((rc = ix_exec(x, ix_schema_sql, "create", err)) != LC_OK ||
            (rc = ix_exec(x, "PRAGMA user_version = 1; COMMIT", "create", err)) != LC_OK) {
            sqlite3_exec(x->db, "ROLLBACK", NULL, NULL, NULL);
            goto done;
        }
    }
    /* The first read of the tables: a damaged file says so here rather than mid-query. */
    rc = ix_exec(x, "SELECT count(*) FROM ix_stores", "read", err);
done:
    if (rc != LC_OK && x->db) {
        int code = sqlite3_extended_errcode(x->db) & 0xff;
        *damaged = code == SQLITE_NOTADB || code == SQLITE_CORRUPT;
    }
    sqlite3_finalize(uv);
    return rc;
}

/* A damaged index is derived data: it is set aside (as <file>.damaged, for whoever wants
 * to look, replacing an older one) and made anew, so search keeps its index rather than
 * walking every store from then on. Only the file this process found damaged is moved: if
 * another process already replaced it, the new one stays. */
static int ix_set_aside(ix *x, char **err)
{
    struct stat before, now;
    int ok = stat(x->path, &before) == 0;
    char *aside = lc_asprintf("%s.damaged", x->path), *wal = lc_asprintf("%s-wal", x->path),
         *shm = lc_asprintf("%s-shm", x->path);
    int rc = aside && wal && shm ? LC_OK : lc_errf(err, LC_NOMEM, "home index: out of memory");
    sqlite3_close(x->db);
    x->db = NULL;
    if (rc == LC_OK && ok && stat(x->path, &now) == 0 && now.st_ino == before.st_ino && now.st_dev == before.st_dev) {
        if (rename(x->path, aside) != 0 && errno != ENOENT)
            rc = lc_errf(err, LC_ERR, "home index %s: damaged, and it cannot be set aside: %s", x->path,
                         strerror(errno));
        else {
            unlink(wal);
            unlink(shm);
        }
    }
    free(aside);
    free(wal);
    free(shm);
    return rc;
}

int store_sqlite_index_open(const char *agent_home, store_index **out, char **err)
{
    ix *x = calloc(1, sizeof *x);
    char *dir = NULL, *why = NULL;
    int rc = LC_OK, damaged = 0;
    *out = NULL;
    if (!x || !(dir = lc_asprintf("%s/lcm-home", agent_home)) || !(x->path = lc_asprintf("%s/recall-index.sqlite", dir))) {
        rc = lc_errf(err, LC_NOMEM, "home index: out of memory");
        goto done;
    }
    x->methods = &ix_methods;
    /* Private as the stores are (it holds their words): the folder 0700, the file 0600. */
    if ((rc = store_sqlite_file_private(dir, "recall-index.sqlite", "home index", 1, NULL, NULL, err)) != LC_OK) {
        if (rc != LC_NOMEM) rc = LC_ERR; /* LC_INVALID would read as "no index in this backend" */
        goto done;
    }
    if ((rc = ix_connect(x, &damaged, &why)) != LC_OK && damaged) {
        if ((rc = ix_set_aside(x, err)) != LC_OK) goto done;
        free(why);
        why = NULL;
        if ((rc = store_sqlite_file_private(dir, "recall-index.sqlite", "home index", 1, NULL, NULL, err)) != LC_OK) {
            if (rc != LC_NOMEM) rc = LC_ERR;
            goto done;
        }
        rc = ix_connect(x, &damaged, &why);
    }
    if (rc != LC_OK) {
        if (err && !*err) *err = why;
        else free(why);
        why = NULL;
        goto done;
    }
    *out = (store_index *)x;
    x = NULL;
done:
    free(why);
    ix_close((store_index *)x);
    free(dir);
    return rc;
}

/* ---- catch-up ------------------------------------------------------------------------------ */

/* The stat facts a store is recognised by: unchanged files, unchanged rows. */
typedef struct ix_facts {
    int64_t dev, ino, size, mtime, wal_size, wal_mtime;
} ix_facts;

static int ix_facts_read(const char *path, ix_facts *f)
{
    struct stat sb, wb;
    memset(f, 0, sizeof *f);
    if (stat(path, &sb) != 0) return LC_NOTFOUND;
    f->dev = (int64_t)sb.st_dev;
    f->ino = (int64_t)sb.st_ino;
    f->size = (int64_t)sb.st_size;
    f->mtime = (int64_t)sb.st_mtim.tv_sec * 1000000000LL + sb.st_mtim.tv_nsec;
    char *wal = lc_asprintf("%s-wal", path);
    if (!wal) return LC_NOMEM;
    if (stat(wal, &wb) == 0) {
        f->wal_size = (int64_t)wb.st_size;
        f->wal_mtime = (int64_t)wb.st_mtim.tv_sec * 1000000000LL + wb.st_mtim.tv_nsec;
    }
    free(wal);
    return LC_OK;
}

/* What the index knows of a store (found = 0: nothing). */
typedef struct ix_known {
    int found;
    int64_t key, last_id, last_user, last_user_id;
    int has_user;
    ix_facts f;
} ix_known;

static int ix_known_read(ix *x, sqlite3_stmt *st, const char *name, ix_known *k, char **err)
{
    int step;
    memset(k, 0, sizeof *k);
    sqlite3_reset(st);
    sqlite3_bind_text(st, 1, name, -1, SQLITE_TRANSIENT);
    if ((step = sqlite3_step(st)) == SQLITE_ROW) {
        k->found = 1;
        k->key = sqlite3_column_int64(st, 0);
        k->f.dev = sqlite3_column_int64(st, 1);
        k->f.ino = sqlite3_column_int64(st, 2);
        k->f.size = sqlite3_column_int64(st, 3);
        k->f.mtime = sqlite3_column_int64(st, 4);
        k->f.wal_size = sqlite3_column_int64(st, 5);
        k->f.wal_mtime = sqlite3_column_int64(st, 6);
        k->last_id = sqlite3_column_int64(st, 7);
        k->has_user = sqlite3_column_type(st, 8) != SQLITE_NULL;
        k->last_user = sqlite3_column_int64(st, 8);
        k->last_user_id = sqlite3_column_int64(st, 9);
    } else if (step != SQLITE_DONE) {
        int rc = ix_failed(x, err, "read");
        sqlite3_reset(st);
        return rc;
    }
    sqlite3_reset(st);
    return LC_OK;
}

#define IX_KNOWN_SQL \
    "SELECT key, dev, ino, size, mtime, wal_size, wal_mtime, last_id, last_user, last_user_id FROM ix_stores" \
    " WHERE name = ?"

static int ix_same(const ix_facts *a, const ix_facts *b)
{
    return !memcmp(a, b, sizeof *a);
}

/* Everything forgotten: a store was replaced, and a contentless index cannot take its
 * rows back out one by one (their words are not kept). */
static int ix_reset(ix *x, char **err)
{
    return ix_exec(x, "INSERT INTO ix_fts(ix_fts) VALUES('delete-all'); DELETE FROM ix_rows; DELETE FROM ix_stores",
                   "reset", err);
}

/* ix_update's outcomes beside LC_*: the deadline came first (what was added is kept);
 * the index was emptied; the store could not be read (left to the walk, which says so). */
enum { IX_PARTIAL = 2000, IX_REPLACED = 2001, IX_UNREADABLE = 2002 };

/* One store's rows past `k->last_id` into the index, inside the caller's transaction. */
static int ix_add_rows(ix *x, sqlite3 *sdb, const ix_known *k, int64_t *last_id, int64_t *last_user,
                       int64_t *last_user_id, int *has_user, double deadline_ms, int64_t *added, char **err)
{
    sqlite3_stmt *rd = NULL, *row = NULL, *fts = NULL;
    int rc = LC_OK, step;
    size_t seen = 0;
    if (sqlite3_prepare_v2(sdb,
                           "SELECT id, raw_json, text, payload, ordinal, created, role, removed FROM messages"
                           " WHERE id > ? ORDER BY id",
                           -1, &rd, NULL) != SQLITE_OK) {
        rc = IX_UNREADABLE;
        goto done;
    }
    if ((rc = ix_prepare(x, &row,
                         "INSERT OR IGNORE INTO ix_rows(id, ordinal, created, role, call, removed, prompt, prompt_id)"
                         " VALUES(?, ?, ?, ?, ?, ?, ?, ?)",
                         "add", err)) != LC_OK ||
        (rc = ix_prepare(x, &fts, "INSERT INTO ix_fts(rowid, text, thinking) VALUES(?, ?, ?)", "add", err)) != LC_OK)
        goto done;
    sqlite3_bind_int64(rd, 1, k->last_id);
    while ((step = sqlite3_step(rd)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(rd, 0), ordinal = sqlite3_column_int64(rd, 4);
        const char *role = (const char *)sqlite3_column_text(rd, 6);
        const char *text = (const char *)sqlite3_column_text(rd, 2);
        size_t tlen = (size_t)sqlite3_column_bytes(rd, 2);
        if (++seen % IX_CLOCK_ROWS == 0 && deadline_ms > 0 && lc_now_ms() > deadline_ms) {
            rc = IX_PARTIAL;
            break;
        }
        if (id > IX_ROW_MAX) {
            rc = lc_errf(err, LC_ERR, "home index: a row id past 2^32");
            break;
        }
        int64_t rowid = (k->key << IX_SHIFT) | id;
        sqlite3_bind_int64(row, 1, rowid);
        sqlite3_bind_int64(row, 2, ordinal);
        sqlite3_bind_int64(row, 3, sqlite3_column_int64(rd, 5));
        sqlite3_bind_text(row, 4, role ? role : "", -1, SQLITE_TRANSIENT);
        /* An assistant message that is only a call: its words are the call's arguments. */
        sqlite3_bind_int(row, 5, role && !strcmp(role, "assistant") && text && tlen >= 10 && !memcmp(text, "[toolCall ", 10));
        sqlite3_bind_int(row, 6, sqlite3_column_int(rd, 7));
        if (*has_user && *last_user < ordinal && *last_user >= ordinal - IX_PROMPT_REACH) {
            sqlite3_bind_int64(row, 7, *last_user);
            sqlite3_bind_int64(row, 8, *last_user_id);
        } else {
            sqlite3_bind_null(row, 7);
            sqlite3_bind_null(row, 8);
        }
        if (sqlite3_step(row) != SQLITE_DONE) {
            rc = ix_failed(x, err, "add");
            break;
        }
        sqlite3_reset(row);
        if (role && !strcmp(role, "user")) {
            *last_user = ordinal;
            *last_user_id = id;
            *has_user = 1;
        }
        *last_id = id;
        if (!sqlite3_changes(x->db)) continue; /* already there: another process's */
        /* The words as the store's own index derives them (store_reindex_row). */
        char *json = NULL, *body = NULL, *thinking = NULL, *why = NULL;
        size_t len = 0;
        cJSON *m = NULL;
        if (store_sqlite_raw_column(rd, 1, 2, 3, &json, &len, &why) != LC_OK) json = NULL;
        free(why);
        if (json && (m = store_derive_parse(json, len)) && msg_index_text(m, &body, &thinking) != LC_OK) {
            cJSON_Delete(m);
            free(json);
            rc = lc_errf(err, LC_NOMEM, "home index: out of memory");
            break;
        }
        const char *t = body ? body : text ? text : "";
        size_t tl = body ? strlen(body) : text ? tlen : 0;
        sqlite3_bind_int64(fts, 1, rowid);
        sqlite3_bind_text(fts, 2, t, (int)files_utf8_prefix(t, tl, STORE_INDEX_CHARS), SQLITE_STATIC);
        if (thinking)
            sqlite3_bind_text(fts, 3, thinking, (int)files_utf8_prefix(thinking, strlen(thinking), STORE_INDEX_CHARS),
                              SQLITE_STATIC);
        else
            sqlite3_bind_null(fts, 3);
        step = sqlite3_step(fts);
        sqlite3_reset(fts);
        cJSON_Delete(m);
        free(json);
        free(body);
        free(thinking);
        if (step != SQLITE_DONE) {
            rc = ix_failed(x, err, "add");
            break;
        }
        (*added)++;
    }
    if (rc == LC_OK && step != SQLITE_DONE) rc = IX_UNREADABLE;
done:
    sqlite3_finalize(rd);
    sqlite3_finalize(row);
    sqlite3_finalize(fts);
    return rc;
}

/* The removed flags of a store's indexed rows read again (a branch abandoned or taken up). */
static int ix_removed_refresh(ix *x, sqlite3 *sdb, int64_t key, char **err)
{
    sqlite3_stmt *rd = NULL, *clr = NULL, *set = NULL;
    int rc;
    if (sqlite3_prepare_v2(sdb, "SELECT id FROM messages WHERE removed = 1", -1, &rd, NULL) != SQLITE_OK) {
        rc = IX_UNREADABLE;
        goto done;
    }
    if ((rc = ix_prepare(x, &clr, "UPDATE ix_rows SET removed = 0 WHERE removed = 1 AND id BETWEEN ? AND ?", "removed",
                         err)) != LC_OK ||
        (rc = ix_prepare(x, &set, "UPDATE ix_rows SET removed = 1 WHERE id = ?", "removed", err)) != LC_OK)
        goto done;
    sqlite3_bind_int64(clr, 1, key << IX_SHIFT);
    sqlite3_bind_int64(clr, 2, (key << IX_SHIFT) | IX_ROW_MAX);
    if (sqlite3_step(clr) != SQLITE_DONE) {
        rc = ix_failed(x, err, "removed");
        goto done;
    }
    while (sqlite3_step(rd) == SQLITE_ROW) {
        sqlite3_bind_int64(set, 1, (key << IX_SHIFT) | sqlite3_column_int64(rd, 0));
        if (sqlite3_step(set) != SQLITE_DONE) {
            rc = ix_failed(x, err, "removed");
            goto done;
        }
        sqlite3_reset(set);
    }
done:
    sqlite3_finalize(rd);
    sqlite3_finalize(clr);
    sqlite3_finalize(set);
    return rc;
}

/* A SQLite varint (FTS5's record format) at p[0..n): its value, and *used its bytes (0 when
 * cut short). */
static uint64_t ix_varint(const unsigned char *p, size_t n, size_t *used)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n && i < 9; i++) {
        if (i == 8) {
            *used = 9;
            return (v << 8) | p[i];
        }
        v = (v << 7) | (p[i] & 0x7f);
        if (!(p[i] & 0x80)) {
            *used = i + 1;
            return v;
        }
    }
    *used = 0;
    return 0;
}

/* The store's own index's average message length in tokens (its FTS5 averages record: the
 * row count, then each column's token total), so a row is weighed against its own store's
 * messages as the store's rank weighs it. 0 when unknown. */
static double ix_store_avgdl(sqlite3 *sdb)
{
    sqlite3_stmt *st = NULL;
    double avg = 0;
    if (sqlite3_prepare_v2(sdb, "SELECT block FROM messages_fts_data WHERE id = 1", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
        const unsigned char *p = sqlite3_column_blob(st, 0);
        size_t n = (size_t)sqlite3_column_bytes(st, 0), used = 0, at = 0;
        uint64_t rows = p ? ix_varint(p, n, &used) : 0, tokens = 0;
        at = used;
        while (used && at < n) {
            tokens += ix_varint(p + at, n - at, &used);
            at += used;
        }
        if (rows > 0) avg = (double)tokens / (double)rows;
    }
    sqlite3_finalize(st);
    return avg;
}

/* One changed (or new) store caught up in one write transaction. LC_OK: fresh;
 * IX_PARTIAL: the deadline came first (what was added is kept); IX_REPLACED: the index was
 * emptied; another status: the store could not be read (not fresh). */
static int ix_update(ix *x, sqlite3_stmt *known, store_index_source *src, const ix_facts *f, double deadline_ms,
                     store_index_stats *st, char **err)
{
    sqlite3 *sdb = NULL;
    sqlite3_stmt *up = NULL;
    ix_known k;
    int rc, in_tx = 0;
    if ((rc = ix_exec(x, "BEGIN IMMEDIATE", "catch up", err)) != LC_OK) return rc;
    in_tx = 1;
    /* Read again under the write lock: another process may have just done it. */
    if ((rc = ix_known_read(x, known, src->name, &k, err)) != LC_OK) goto done;
    if (k.found && ix_same(&k.f, f)) {
        src->key = k.key;
        goto commit;
    }
    if (sqlite3_open_v2(src->path, &sdb, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
        rc = sdb ? IX_UNREADABLE : lc_errf(err, LC_NOMEM, "home index: out of memory");
        goto done;
    }
    sqlite3_busy_timeout(sdb, IX_BUSY_MS);
    /* One read transaction over the store: its rows and removed flags as of one moment. */
    if (sqlite3_exec(sdb, "BEGIN", NULL, NULL, NULL) != SQLITE_OK) {
        rc = IX_UNREADABLE;
        goto done;
    }
    if (k.found) {
        sqlite3_stmt *mx = NULL;
        int64_t max_id = -1;
        if (sqlite3_prepare_v2(sdb, "SELECT coalesce(max(id), 0) FROM messages", -1, &mx, NULL) == SQLITE_OK &&
            sqlite3_step(mx) == SQLITE_ROW)
            max_id = sqlite3_column_int64(mx, 0);
        sqlite3_finalize(mx);
        if (max_id < 0) {
            rc = IX_UNREADABLE;
            goto done;
        }
        /* Another file, or fewer rows than were indexed: rebuilt or replaced. */
        if (k.f.dev != f->dev || k.f.ino != f->ino || max_id < k.last_id) {
            if ((rc = ix_reset(x, err)) != LC_OK) goto done;
            st->reset = 1;
            rc = IX_REPLACED;
            goto commit;
        }
    } else {
        sqlite3_stmt *ins = NULL;
        if ((rc = ix_prepare(x, &ins, "INSERT INTO ix_stores(name, path, created) VALUES(?, ?, ?)", "catch up", err)) !=
            LC_OK)
            goto done;
        sqlite3_bind_text(ins, 1, src->name, -1, SQLITE_STATIC);
        sqlite3_bind_text(ins, 2, src->path, -1, SQLITE_STATIC);
        sqlite3_bind_int64(ins, 3, src->created);
        int step = sqlite3_step(ins);
        sqlite3_finalize(ins);
        if (step != SQLITE_DONE) {
            rc = ix_failed(x, err, "catch up");
            goto done;
        }
        k.key = sqlite3_last_insert_rowid(x->db);
    }
    src->key = k.key;
    st->updated++;
    int64_t last_id = k.last_id, last_user = k.last_user, last_user_id = k.last_user_id;
    int has_user = k.has_user;
    int arc = ix_add_rows(x, sdb, &k, &last_id, &last_user, &last_user_id, &has_user, deadline_ms, &st->rows_added,
                          err);
    if (arc != LC_OK && arc != IX_PARTIAL) {
        rc = arc;
        goto done;
    }
    if (k.found && (rc = ix_removed_refresh(x, sdb, k.key, err)) != LC_OK) goto done;
    /* Sizes and times only for a store read to its end (a partial one is read on from
     * last_id next time); the file's identity always, so it is not taken for replaced. */
    ix_facts none = {.dev = f->dev, .ino = f->ino};
    const ix_facts *w = arc == LC_OK ? f : &none;
    if ((rc = ix_prepare(x, &up,
                         "UPDATE ix_stores SET dev = ?, ino = ?, size = ?, mtime = ?, wal_size = ?, wal_mtime = ?,"
                         " last_id = ?, last_user = ?, last_user_id = ?, avgdl = ? WHERE key = ?",
                         "catch up", err)) != LC_OK)
        goto done;
    int64_t vals[] = {w->dev, w->ino, w->size, w->mtime, w->wal_size, w->wal_mtime, last_id};
    for (int i = 0; i < 7; i++) sqlite3_bind_int64(up, i + 1, vals[i]);
    if (has_user) {
        sqlite3_bind_int64(up, 8, last_user);
        sqlite3_bind_int64(up, 9, last_user_id);
    } else {
        sqlite3_bind_null(up, 8);
        sqlite3_bind_null(up, 9);
    }
    double avgdl = ix_store_avgdl(sdb);
    if (avgdl > 0) sqlite3_bind_double(up, 10, avgdl);
    else sqlite3_bind_null(up, 10);
    sqlite3_bind_int64(up, 11, k.key);
    if (sqlite3_step(up) != SQLITE_DONE) {
        rc = ix_failed(x, err, "catch up");
        goto done;
    }
    rc = arc;
commit:
    if (ix_exec(x, "COMMIT", "catch up", rc == LC_OK || rc == IX_PARTIAL || rc == IX_REPLACED ? err : NULL) !=
        LC_OK) {
        if (rc == LC_OK || rc == IX_PARTIAL || rc == IX_REPLACED) rc = LC_ERR;
        goto done;
    }
    in_tx = 0;
done:
    if (in_tx) sqlite3_exec(x->db, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_finalize(up);
    if (sdb) sqlite3_close(sdb);
    return rc;
}

static int ix_name_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* 1 when the index holds a store that is not listed and whose file is gone (a session
 * forgotten, retired by gc): its words must not outlive it, so the index is emptied. */
static int ix_holds_gone(ix *x, const store_index_source *v, size_t n, int *gone, char **err)
{
    sqlite3_stmt *st = NULL;
    const char **names = n ? malloc(n * sizeof *names) : NULL;
    int rc = LC_OK;
    *gone = 0;
    if (n && !names) return lc_errf(err, LC_NOMEM, "home index: out of memory");
    for (size_t i = 0; i < n; i++) names[i] = v[i].name;
    if (n > 1) qsort(names, n, sizeof *names, ix_name_cmp);
    if ((rc = ix_prepare(x, &st, "SELECT name, path FROM ix_stores", "catch up", err)) != LC_OK) goto done;
    while (sqlite3_step(st) == SQLITE_ROW && !*gone) {
        const char *name = (const char *)sqlite3_column_text(st, 0), *path = (const char *)sqlite3_column_text(st, 1);
        struct stat sb;
        if (name && n && bsearch(&name, names, n, sizeof *names, ix_name_cmp)) continue;
        if (path && stat(path, &sb) != 0 && errno == ENOENT) *gone = 1;
    }
done:
    sqlite3_finalize(st);
    free(names);
    return rc;
}

static int ix_catch_up(store_index *pub, store_index_source *v, size_t n, double deadline_ms,
                       store_index_stats *st, char **err)
{
    ix *x = (ix *)pub;
    sqlite3_stmt *known = NULL;
    int rc, resets = 0;
    memset(st, 0, sizeof *st);
    if ((rc = ix_prepare(x, &known, IX_KNOWN_SQL, "catch up", err)) != LC_OK) return rc;
again:
    st->stale = 0;
    for (size_t i = 0; i < n; i++) {
        store_index_source *src = &v[i];
        ix_facts f;
        ix_known k;
        src->fresh = 0;
        src->key = 0;
        st->checked++;
        if ((rc = ix_facts_read(src->path, &f)) == LC_NOMEM) {
            rc = lc_errf(err, LC_NOMEM, "home index: out of memory");
            goto done;
        }
        if (rc != LC_OK) {
            st->stale++;
            continue;
        }
        if ((rc = ix_known_read(x, known, src->name, &k, err)) != LC_OK) goto done;
        if (k.found && ix_same(&k.f, &f)) {
            src->key = k.key;
            src->fresh = 1;
            continue;
        }
        if (deadline_ms > 0 && lc_now_ms() > deadline_ms) {
            st->stale++;
            continue;
        }
        rc = ix_update(x, known, src, &f, deadline_ms, st, err);
        if (rc == IX_REPLACED && resets++ == 0) goto again;
        /* The index's own file failing is the caller's (it falls back). */
        if (rc != LC_OK && rc != IX_PARTIAL && rc != IX_UNREADABLE && rc != IX_REPLACED) goto done;
        if (rc == LC_OK) src->fresh = 1;
        else st->stale++;
    }
    int gone = 0;
    if ((rc = ix_holds_gone(x, v, n, &gone, err)) != LC_OK) goto done;
    if (gone && resets++ == 0) {
        if ((rc = ix_exec(x, "BEGIN IMMEDIATE", "reset", err)) != LC_OK) goto done;
        if ((rc = ix_reset(x, err)) != LC_OK || (rc = ix_exec(x, "COMMIT", "reset", err)) != LC_OK) {
            sqlite3_exec(x->db, "ROLLBACK", NULL, NULL, NULL);
            goto done;
        }
        st->reset = 1;
        goto again;
    }
    rc = LC_OK;
done:
    sqlite3_finalize(known);
    return rc;
}

/* ---- the query -------------------------------------------------------------------------------- */

static int ix_progress(void *ud)
{
    return lc_now_ms() > *(const double *)ud;
}

/* The filter on a row of ix_rows `h` (?3 include removed, ?4 since, ?5 until, ?6 roles),
 * and the keyed stores (temp.ix_want). */
#define IX_FILTER                                                                                          \
    " AND (?3 OR h.removed = 0) AND (?4 = 0 OR h.created >= ?4) AND (?5 = 0 OR h.created < ?5)"           \
    " AND (?6 IS NULL OR instr(',' || ?6 || ',', ',' || h.role || ',') > 0)"                              \
    " AND (?7 OR (h.id >> 32) IN (SELECT key FROM temp.ix_want))"

static void ix_bind_filter(sqlite3_stmt *st, const store_index_query *q, int all_keys)
{
    const store_search_scope *sc = q->scope;
    sqlite3_bind_int(st, 3, sc->include_removed ? 1 : 0);
    sqlite3_bind_int64(st, 4, sc->since_ms);
    sqlite3_bind_int64(st, 5, sc->until_ms);
    if (sc->roles && *sc->roles) sqlite3_bind_text(st, 6, sc->roles, -1, SQLITE_STATIC);
    else sqlite3_bind_null(st, 6);
    sqlite3_bind_int(st, 7, all_keys);
}

/* The keyed stores into temp.ix_want; *all: they are every store the index holds, so no
 * row needs its store looked at. */
static int ix_want(ix *x, const store_index_query *q, int *all, char **err)
{
    sqlite3_stmt *st = NULL;
    int rc;
    int64_t stores = -1;
    if ((rc = ix_exec(x, "CREATE TEMP TABLE IF NOT EXISTS ix_want(key INTEGER PRIMARY KEY); DELETE FROM temp.ix_want",
                      "query", err)) != LC_OK)
        return rc;
    if ((rc = ix_prepare(x, &st, "SELECT count(*) FROM ix_stores", "query", err)) != LC_OK) return rc;
    if (sqlite3_step(st) == SQLITE_ROW) stores = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    *all = stores >= 0 && (size_t)stores == q->nkeys;
    if (*all) return LC_OK;
    if ((rc = ix_prepare(x, &st, "INSERT OR IGNORE INTO temp.ix_want(key) VALUES(?)", "query", err)) != LC_OK) return rc;
    for (size_t i = 0; i < q->nkeys; i++) {
        sqlite3_bind_int64(st, 1, q->keys[i]);
        if (sqlite3_step(st) != SQLITE_DONE) {
            rc = ix_failed(x, err, "query");
            break;
        }
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    return rc;
}

/* 1 when no row of the keyed stores can be filtered out: every store, removed rows
 * included or none marked, no time or role bound. Then the count reads the index alone. */
static int ix_unfiltered(ix *x, const store_index_query *q, int all_keys)
{
    const store_search_scope *sc = q->scope;
    if (!all_keys || sc->since_ms > 0 || sc->until_ms > 0 || (sc->roles && *sc->roles)) return 0;
    if (sc->include_removed) return 1;
    sqlite3_stmt *st = NULL;
    int none = 0;
    if (sqlite3_prepare_v2(x->db, "SELECT NOT EXISTS (SELECT 1 FROM ix_rows WHERE removed = 1)", -1, &st, NULL) ==
            SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        none = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    return none;
}

static int ix_stepped(ix *x, int step, char **err)
{
    sqlite3_progress_handler(x->db, 0, NULL, NULL);
    if (step == SQLITE_INTERRUPT) return lc_errf(err, LC_CANCELLED, "home index: stopped at its time bound");
    if (step == SQLITE_ERROR && !strncmp(sqlite3_errmsg(x->db), "fts5:", 5))
        return lc_errf(err, LC_INVALID, "%s", sqlite3_errmsg(x->db));
    return ix_failed(x, err, "query");
}

static int ix_search(store_index *pub, const store_index_query *q, store_index_visit visit, void *ud,
                     int64_t *total, int *newest_first, char **err)
{
    ix *x = (ix *)pub;
    const store_search_scope *sc = q->scope;
    sqlite3_stmt *st = NULL;
    char *sql = NULL, *weights = NULL;
    sbuf wb = {0};
    int rc, step, all = 0;
    double deadline = sc->deadline_ms;
    *total = 0;
    *newest_first = 0;
    if ((rc = ix_want(x, q, &all, err)) != LC_OK) goto done;
    /* The count, read no further than one past rank_max. */
    if ((rc = ix_prepare(x, &st,
                         ix_unfiltered(x, q, all)
                             ? "SELECT count(*) FROM (SELECT 1 FROM ix_fts WHERE ix_fts MATCH ?1 LIMIT ?2)"
                             : "SELECT count(*) FROM (SELECT 1 FROM ix_fts f CROSS JOIN ix_rows h ON h.id = f.rowid"
                               " WHERE ix_fts MATCH ?1" IX_FILTER " LIMIT ?2)",
                         "query", err)) != LC_OK)
        goto done;
    sqlite3_bind_text(st, 1, q->match, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, q->rank_max + 1);
    if (sqlite3_bind_parameter_count(st) >= 7) ix_bind_filter(st, q, all);
    if (deadline > 0) sqlite3_progress_handler(x->db, 2000, ix_progress, &deadline);
    if ((step = sqlite3_step(st)) != SQLITE_ROW) {
        rc = ix_stepped(x, step, err);
        goto done;
    }
    sqlite3_progress_handler(x->db, 0, NULL, NULL);
    *total = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    st = NULL;
    if (*total == 0 || q->limit == 0) goto done;
    int ranked = sc->order == STORE_ORDER_RANK && *total <= q->rank_max;
    *newest_first = sc->order == STORE_ORDER_RANK && !ranked;
    /* Past rank_max a time order is the index's row order too: store order (oldest created
     * first), then message order; sorting every match by its time would read them all. */
    const char *order = *newest_first                       ? "f.rowid DESC"
                        : *total > q->rank_max                ? (sc->order == STORE_ORDER_NEWEST ? "f.rowid DESC" : "f.rowid")
                        : sc->order == STORE_ORDER_NEWEST     ? "h.created DESC, f.rowid DESC"
                                                              : "h.created, f.rowid";
    for (size_t i = 0; i < sc->nweights; i++) sb_printf(&wb, "%s%g", i ? "," : "", sc->weights[i]);
    weights = sb_detach(&wb);
    /* Ranked: every match scored once into temp.ix_m, then a reply lifted by turn_weight of
     * its prompt's score when that prompt matched too (looked up there by row id). Ties go
     * as the walk's merge has them: the newer session first (keys are given oldest created
     * first), then the row order. */
    if (ranked) {
        if ((rc = ix_exec(x, "CREATE TEMP TABLE IF NOT EXISTS ix_m(rid INTEGER PRIMARY KEY, own REAL, cols INTEGER,"
                             " ordinal INTEGER, created INTEGER, role TEXT, call INTEGER, prompt INTEGER, prid INTEGER);"
                             " DELETE FROM temp.ix_m",
                          "query", err)) != LC_OK ||
            (rc = ix_prepare(x, &st,
                             "INSERT INTO temp.ix_m SELECT f.rowid, lc_rank(ix_fts, ?8,"
                             " (SELECT s.avgdl FROM ix_stores s WHERE s.key = f.rowid >> 32))"
                             " * (CASE WHEN h.role = 'user' OR (h.role = 'assistant' AND h.call = 0) THEN 1.0 ELSE ?11 END)"
                             " * (CASE WHEN lcm_cols(ix_fts) = 2 THEN ?12 ELSE 1.0 END), lcm_cols(ix_fts),"
                             " h.ordinal, h.created, h.role, h.call, h.prompt,"
                             " CASE WHEN h.role <> 'user' AND h.prompt_id IS NOT NULL"
                             " THEN ((f.rowid >> 32) << 32) | h.prompt_id END"
                             " FROM ix_fts f CROSS JOIN ix_rows h ON h.id = f.rowid WHERE ix_fts MATCH ?1" IX_FILTER,
                             "query", err)) != LC_OK)
            goto done;
        sqlite3_bind_text(st, 1, q->match, -1, SQLITE_STATIC);
        ix_bind_filter(st, q, all);
        sqlite3_bind_text(st, 8, weights ? weights : "", -1, SQLITE_STATIC);
        sqlite3_bind_double(st, 11, q->tool_weight);
        sqlite3_bind_double(st, 12, q->thinking_weight);
        if (deadline > 0) sqlite3_progress_handler(x->db, 2000, ix_progress, &deadline);
        if ((step = sqlite3_step(st)) != SQLITE_DONE) {
            rc = ix_stepped(x, step, err);
            goto done;
        }
        sqlite3_progress_handler(x->db, 0, NULL, NULL);
        sqlite3_finalize(st);
        st = NULL;
        sql = lc_asprintf("SELECT a.rid, a.own + ?13 * coalesce((SELECT p.own FROM temp.ix_m p WHERE p.rid = a.prid"
                          " AND p.role = 'user'), 0) AS sc, a.cols, a.ordinal, a.created, a.role, a.call, a.prompt"
                          " FROM temp.ix_m a ORDER BY sc DESC, a.rid >> 32 DESC, a.rid LIMIT ?9 OFFSET ?10");
    }
    else
        sql = lc_asprintf("SELECT f.rowid, 0.0, lcm_cols(ix_fts), h.ordinal, h.created, h.role, h.call, h.prompt"
                          " FROM ix_fts f CROSS JOIN ix_rows h ON h.id = f.rowid WHERE ix_fts MATCH ?1" IX_FILTER
                          " ORDER BY %s LIMIT ?9 OFFSET ?10",
                          order);
    if (!sql) {
        rc = lc_errf(err, LC_NOMEM, "home index: out of memory");
        goto done;
    }
    if ((rc = ix_prepare(x, &st, sql, "query", err)) != LC_OK) goto done;
    if (ranked) {
        sqlite3_bind_double(st, 13, q->turn_weight);
    } else {
        sqlite3_bind_text(st, 1, q->match, -1, SQLITE_STATIC);
        ix_bind_filter(st, q, all);
    }
    sqlite3_bind_int64(st, 9, (sqlite3_int64)q->limit);
    sqlite3_bind_int64(st, 10, (sqlite3_int64)q->offset);
    if (deadline > 0) sqlite3_progress_handler(x->db, 2000, ix_progress, &deadline);
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t rowid = sqlite3_column_int64(st, 0);
        const char *role = (const char *)sqlite3_column_text(st, 5);
        store_index_hit h = {.key = rowid >> IX_SHIFT, .id = rowid & IX_ROW_MAX, .score = sqlite3_column_double(st, 1),
                             .thinking = sqlite3_column_int(st, 2) == 2, .ordinal = sqlite3_column_int64(st, 3),
                             .created = sqlite3_column_int64(st, 4), .role = role ? role : "",
                             .prompt_ordinal = sqlite3_column_int64(st, 7),
                             .has_prompt = sqlite3_column_type(st, 7) != SQLITE_NULL};
        h.tool_words = !(role && (!strcmp(role, "user") || (!strcmp(role, "assistant") && !sqlite3_column_int(st, 6))));
        if ((rc = visit(ud, &h, err)) != LC_OK) {
            if (rc == STORE_VISIT_STOP) rc = LC_OK;
            goto done;
        }
    }
    if (step != SQLITE_DONE) rc = ix_stepped(x, step, err);
done:
    sqlite3_progress_handler(x->db, 0, NULL, NULL);
    sqlite3_finalize(st);
    free(sql);
    free(weights);
    return rc;
}
