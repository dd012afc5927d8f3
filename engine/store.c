/*
 * store.c -- the per-session SQLite store: open, schema and forward migrations, passive
 * ingest, removed-branch marks, message reads and summary provenance writes (store.h).
 * Owns the connection and its cached statements; nothing here talks to a host.
 */
#include "store.h"
#include "store_sqlite.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "files.h"
#include "message.h"
#include "sha256.h"
#include "util.h"

#define STORE_CALL_RING 64

typedef struct store_call {
    char *id;
    char *path;
} store_call;

struct store {
    sqlite3 *db;
    char *path;
    int read_only;
    store_options opt;
    sqlite3_stmt *st_exists;
    sqlite3_stmt *st_insert;
    sqlite3_stmt *st_fts;
    sqlite3_stmt *st_handle;
    char *mode_note;  /* a wrong mode fixed at open, for the caller to report */
    int busy;         /* a statement failed because another connection held the lock */
    int notadb;       /* the file is not a readable SQLite database (corrupt, truncated) */
    char *last_entry; /* newest entry known stored: the O(1) "nothing new" check */
    int64_t last_ordinal;
    store_call calls[STORE_CALL_RING]; /* recent tool calls: id -> named path */
    size_t call_next;
};

/* Version n -> n+1, applied in order inside one write transaction that first re-reads the
 * version (store_migrate); IF NOT EXISTS besides, so a second creator never trips over
 * the first one's tables. A row's derived text
 * sits beside its verbatim JSON because the index and the summarizer read the text while
 * a read must return the original bytes. */
static const char *const store_migrations[] = {
    /* 0 -> 1 */
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS messages("
    "  id INTEGER PRIMARY KEY,"
    "  entry_id TEXT NOT NULL UNIQUE,"
    "  ordinal INTEGER NOT NULL,"
    "  role TEXT NOT NULL,"
    "  text TEXT NOT NULL,"
    "  chars INTEGER NOT NULL,"
    "  tokens INTEGER NOT NULL,"
    "  raw_json TEXT NOT NULL,"
    "  payload TEXT,"
    "  removed INTEGER NOT NULL DEFAULT 0,"
    "  tool_name TEXT,"
    "  tool_path TEXT,"
    "  created INTEGER NOT NULL);"
    "CREATE INDEX IF NOT EXISTS messages_ordinal ON messages(ordinal);"
    "CREATE INDEX IF NOT EXISTS messages_removed ON messages(removed) WHERE removed = 1;"
    "CREATE INDEX IF NOT EXISTS messages_long ON messages(chars) WHERE chars > 100000;"
    "CREATE VIRTUAL TABLE IF NOT EXISTS messages_fts USING fts5(text, content='');"
    "CREATE TABLE IF NOT EXISTS summaries("
    "  id INTEGER PRIMARY KEY,"
    "  kind TEXT NOT NULL CHECK(kind IN ('leaf','condensed')),"
    "  depth INTEGER NOT NULL,"
    "  text TEXT NOT NULL,"
    "  tiers TEXT,"
    "  tokens INTEGER NOT NULL,"
    "  created INTEGER NOT NULL);"
    "CREATE TABLE IF NOT EXISTS summary_children("
    "  parent_id INTEGER NOT NULL REFERENCES summaries(id) ON DELETE CASCADE,"
    "  child_id INTEGER NOT NULL REFERENCES summaries(id),"
    "  position INTEGER NOT NULL,"
    "  PRIMARY KEY(parent_id, child_id));"
    "CREATE INDEX IF NOT EXISTS summary_children_child ON summary_children(child_id);"
    "CREATE TABLE IF NOT EXISTS summary_spans("
    "  summary_id INTEGER PRIMARY KEY REFERENCES summaries(id) ON DELETE CASCADE,"
    "  first_ordinal INTEGER NOT NULL,"
    "  last_ordinal INTEGER NOT NULL,"
    "  first_entry TEXT NOT NULL,"
    "  last_entry TEXT NOT NULL,"
    "  entry_count INTEGER NOT NULL);"
    "CREATE TABLE IF NOT EXISTS summary_messages("
    "  summary_id INTEGER NOT NULL REFERENCES summaries(id) ON DELETE CASCADE,"
    "  entry_id TEXT NOT NULL,"
    "  position INTEGER NOT NULL,"
    "  PRIMARY KEY(summary_id, entry_id));"
    "CREATE INDEX IF NOT EXISTS summary_messages_entry ON summary_messages(entry_id);"
    "CREATE VIRTUAL TABLE IF NOT EXISTS summaries_fts USING fts5(text, content='');"
    "CREATE TABLE IF NOT EXISTS file_handles("
    "  id INTEGER PRIMARY KEY,"
    "  entry_id TEXT NOT NULL UNIQUE,"
    "  path TEXT,"
    "  content_id TEXT NOT NULL,"
    "  kind TEXT NOT NULL,"
    "  chars INTEGER NOT NULL,"
    "  preview TEXT NOT NULL,"
    "  summary TEXT NOT NULL);"
    "CREATE INDEX IF NOT EXISTS file_handles_path ON file_handles(path);"
    "CREATE TABLE IF NOT EXISTS runs("
    "  id INTEGER PRIMARY KEY,"
    "  kind TEXT NOT NULL,"
    "  pid INTEGER NOT NULL,"
    "  started INTEGER NOT NULL,"
    "  finished INTEGER,"
    "  status TEXT);",
    /* 1 -> 2: the projection's prepared cuts (the pointer message exactly as it is sent,
     * so a pinned cut is byte-stable across requests and restarts), the pin itself, and
     * the DAG's events (condensation-stalled, heal results) that status and doctor read. */
    "CREATE TABLE IF NOT EXISTS lcm_cuts("
    "  id INTEGER PRIMARY KEY,"
    "  anchor_entry TEXT NOT NULL,"
    "  anchor_ordinal INTEGER NOT NULL,"
    "  message TEXT NOT NULL,"
    "  tokens INTEGER NOT NULL,"
    "  nodes TEXT NOT NULL,"
    "  stubbed INTEGER NOT NULL,"
    "  created INTEGER NOT NULL);"
    "CREATE TABLE IF NOT EXISTS lcm_pin("
    "  id INTEGER PRIMARY KEY CHECK(id = 1),"
    "  cut_id INTEGER NOT NULL,"
    "  applied_tokens INTEGER NOT NULL,"
    "  window INTEGER NOT NULL,"
    "  updated INTEGER NOT NULL);"
    "CREATE TABLE IF NOT EXISTS lcm_events("
    "  id INTEGER PRIMARY KEY,"
    "  kind TEXT NOT NULL,"
    "  data TEXT,"
    "  created INTEGER NOT NULL);",
};
_Static_assert(sizeof store_migrations / sizeof store_migrations[0] == STORE_SCHEMA_VERSION,
               "one migration per schema version");

/* The DAG progress numbers (store.h) follow every write on this connection. TEMP triggers:
 * they are not part of the recorded schema (other builds and read-only openers never see
 * them), yet they fire for every writer that shares the connection (ingest, tree moves,
 * the DAG, repair). Values live in meta as text, hence the casts. */
#define STORE_WM "(SELECT CAST(value AS INTEGER) FROM main.meta WHERE key = 'dag_watermark')"
#define STORE_ELIGIBLE(row) row ".removed = 0 AND " row ".role NOT IN (" STORE_DAG_EXCLUDED_ROLES ")"
#define STORE_UNCOVERED(row) \
    "NOT EXISTS (SELECT 1 FROM main.summary_messages sm WHERE sm.entry_id = " row ".entry_id)"
#define STORE_ARRIVE(row)                                                                       \
    "UPDATE meta SET value = min(CAST(value AS INTEGER), " row ".ordinal)"                \
    " WHERE key = 'dag_watermark';"                                                            \
    "UPDATE meta SET value = CAST(value AS INTEGER) + " row ".tokens"                     \
    " WHERE key = 'dag_pending';"
static const char store_progress_triggers[] =
    "CREATE TEMP TRIGGER IF NOT EXISTS store_dag_ingest AFTER INSERT ON main.messages"
    " WHEN " STORE_ELIGIBLE("new") " AND " STORE_UNCOVERED("new")
    " BEGIN " STORE_ARRIVE("new") " END;"
    "CREATE TEMP TRIGGER IF NOT EXISTS store_dag_restore AFTER UPDATE OF removed ON main.messages"
    " WHEN old.removed = 1 AND " STORE_ELIGIBLE("new") " AND " STORE_UNCOVERED("new")
    " BEGIN " STORE_ARRIVE("new") " END;"
    "CREATE TEMP TRIGGER IF NOT EXISTS store_dag_remove AFTER UPDATE OF removed ON main.messages"
    " WHEN old.removed = 0 AND new.removed = 1 AND new.role NOT IN (" STORE_DAG_EXCLUDED_ROLES ")"
    " AND " STORE_UNCOVERED("new") " AND new.ordinal >= " STORE_WM
    " BEGIN UPDATE meta SET value = CAST(value AS INTEGER) - new.tokens"
    " WHERE key = 'dag_pending'; END;"
    "CREATE TEMP TRIGGER IF NOT EXISTS store_dag_cover AFTER INSERT ON main.summary_messages"
    " WHEN (SELECT count(*) FROM main.summary_messages sm WHERE sm.entry_id = new.entry_id) = 1"
    " BEGIN UPDATE meta SET value = CAST(value AS INTEGER) -"
    " (SELECT m.tokens FROM main.messages m WHERE m.entry_id = new.entry_id)"
    " WHERE key = 'dag_pending' AND EXISTS (SELECT 1 FROM main.messages m"
    " WHERE m.entry_id = new.entry_id AND " STORE_ELIGIBLE("m") " AND m.ordinal >= " STORE_WM "); END;"
    "CREATE TEMP TRIGGER IF NOT EXISTS store_dag_uncover AFTER DELETE ON main.summary_messages"
    " WHEN " STORE_UNCOVERED("old")
    " BEGIN DELETE FROM meta WHERE key IN ('dag_watermark', 'dag_pending'); END;"
    "CREATE TEMP TRIGGER IF NOT EXISTS store_dag_forget AFTER DELETE ON main.messages"
    " BEGIN DELETE FROM meta WHERE key IN ('dag_watermark', 'dag_pending'); END;"
    /* The pointer block's size is valid until a node or an edge changes. */
    "CREATE TEMP TRIGGER IF NOT EXISTS store_block_add AFTER INSERT ON main.summaries"
    " BEGIN DELETE FROM meta WHERE key = 'dag_block_tokens'; END;"
    "CREATE TEMP TRIGGER IF NOT EXISTS store_block_edit AFTER UPDATE ON main.summaries"
    " BEGIN DELETE FROM meta WHERE key = 'dag_block_tokens'; END;"
    "CREATE TEMP TRIGGER IF NOT EXISTS store_block_drop AFTER DELETE ON main.summaries"
    " BEGIN DELETE FROM meta WHERE key = 'dag_block_tokens'; END;"
    "CREATE TEMP TRIGGER IF NOT EXISTS store_block_edge AFTER UPDATE ON main.summary_children"
    " BEGIN DELETE FROM meta WHERE key = 'dag_block_tokens'; END;"
    "CREATE TEMP TRIGGER IF NOT EXISTS store_block_unlink AFTER DELETE ON main.summary_children"
    " BEGIN DELETE FROM meta WHERE key = 'dag_block_tokens'; END;"
    "CREATE TEMP TRIGGER IF NOT EXISTS store_block_link AFTER INSERT ON main.summary_children"
    " BEGIN DELETE FROM meta WHERE key = 'dag_block_tokens'; END;";

/* Remember why a statement failed, so store_open can tell "try again later" (busy) and
 * "this file is not a database" (doctor --repair) from other failures. */
static void store_note_error(store *s, int code)
{
    code &= 0xff;
    if (code == SQLITE_BUSY || code == SQLITE_LOCKED) s->busy = 1;
    if (code == SQLITE_NOTADB || code == SQLITE_CORRUPT) s->notadb = 1;
}

int store_sqlite_err(sqlite3 *db, char **err, const char *who, const char *what)
{
    return lc_errf(err, LC_ERR, "%s: %s: %s", who, what, db ? sqlite3_errmsg(db) : "out of memory");
}

/* A failed statement on the store's own connection: noted (busy, not a database), then
 * reported like every other module's. */
static int store_failed(store *s, char **err, const char *what)
{
    store_note_error(s, sqlite3_extended_errcode(s->db));
    return store_sqlite_err(s->db, err, "store", what);
}

static int store_exec(store *s, const char *sql, char **err)
{
    char *msg = NULL;
    int code = sqlite3_exec(s->db, sql, NULL, NULL, &msg);
    if (code != SQLITE_OK) {
        store_note_error(s, code);
        int rc = lc_errf(err, LC_ERR, "store: %s", msg ? msg : sqlite3_errmsg(s->db));
        sqlite3_free(msg);
        return rc;
    }
    return LC_OK;
}

static int store_pragma_int(store *s, const char *sql)
{
    sqlite3_stmt *st = NULL;
    int v = -1;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    return v;
}

int store_schema_version(store *s) { return store_pragma_int(s, "PRAGMA user_version"); }

/* Bring the schema to STORE_SCHEMA_VERSION in one write transaction. The version read
 * before it is only a fast path: a second process creating the same new store (two hosts,
 * a host and `lcm import`) may have migrated it while this one waited for the lock, so
 * the version is read again under the lock and only what is still missing is applied. */
static int store_migrate(store *s, char **err)
{
    int target = (int)(sizeof store_migrations / sizeof store_migrations[0]);
    int cur = store_schema_version(s);
    if (cur < 0) return store_failed(s, err, "reading user_version");
    if (cur == target) return LC_OK;
    int rc = store_exec(s, "BEGIN IMMEDIATE", err);
    if (rc) return rc;
    if ((cur = store_schema_version(s)) < 0) rc = store_failed(s, err, "reading user_version");
    else if (cur > target)
        rc = lc_errf(err, LC_INVALID, "store: %s has schema version %d, newer than this build's %d",
                     s->path, cur, target);
    for (int v = cur; rc == LC_OK && v < target; v++) rc = store_exec(s, store_migrations[v], err);
    if (rc == LC_OK && cur < target) {
        char sql[64];
        snprintf(sql, sizeof sql, "PRAGMA user_version=%d", target);
        rc = store_exec(s, sql, err);
    }
    if (rc == LC_OK) rc = store_exec(s, "COMMIT", err);
    if (rc) sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

static int store_prepare(store *s, sqlite3_stmt **st, const char *sql, char **err)
{
    if (sqlite3_prepare_v3(s->db, sql, -1, SQLITE_PREPARE_PERSISTENT, st, NULL) != SQLITE_OK)
        return store_failed(s, err, "prepare");
    return LC_OK;
}

/* Write a meta value: `replace` overwrites, otherwise the first value written stays (the
 * session id and created date are facts of the store's birth). */
static int store_meta_write(store *s, const char *key, const char *value, int replace, char **err)
{
    sqlite3_stmt *st = NULL;
    int rc = LC_OK;
    if (sqlite3_prepare_v2(s->db, replace ? "INSERT OR REPLACE INTO meta(key, value) VALUES(?, ?)"
                                          : "INSERT OR IGNORE INTO meta(key, value) VALUES(?, ?)",
                           -1, &st, NULL) != SQLITE_OK) {
        rc = store_failed(s, err, "meta");
        goto done;
    }
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, value ? value : "", -1, SQLITE_STATIC);
    if (sqlite3_step(st) != SQLITE_DONE) rc = store_failed(s, err, "meta");
done:
    sqlite3_finalize(st);
    return rc;
}

static int store_meta_set(store *s, const char *key, const char *value, char **err)
{
    return store_meta_write(s, key, value, 0, err);
}

int store_meta_put(store *s, const char *key, const char *value, char **err)
{
    return store_meta_write(s, key, value, 1, err);
}

char *store_meta_get(store *s, const char *key)
{
    sqlite3_stmt *st = NULL;
    char *v = NULL;
    if (sqlite3_prepare_v2(s->db, "SELECT value FROM meta WHERE key = ?", -1, &st, NULL) ==
        SQLITE_OK) {
        sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
        if (sqlite3_step(st) == SQLITE_ROW) v = lc_strdup((const char *)sqlite3_column_text(st, 0));
    }
    sqlite3_finalize(st);
    return v;
}

int store_valid_id(const char *id)
{
    if (!id || !*id || strlen(id) > 200) return 0;
    for (const char *p = id; *p; p++)
        if (*p == '/' || *p == '\\' || (unsigned char)*p < 0x20) return 0;
    return strcmp(id, ".") != 0 && strcmp(id, "..") != 0;
}

static store *store_alloc(const char *path)
{
    store *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->path = lc_strdup(path);
    s->opt.large_file_chars = STORE_LARGE_FILE_CHARS;
    s->opt.externalize_files = 1;
    if (!s->path) {
        free(s);
        return NULL;
    }
    return s;
}

/* A DAG run whose process died (SIGKILL, power loss) left its `runs` row open; its
 * transaction rolled back with it, so the row is all that remains. Close it at the next
 * read-write open, so a crash never shows up as a doctor fault after the restart. Our own
 * pid and any live pid (which may be that writer) are left alone. */
static int store_reap_dead_runs(store *s, char **err)
{
    sqlite3_stmt *st = NULL, *up = NULL;
    int rc = LC_OK;
    if (sqlite3_prepare_v2(s->db, "SELECT id, pid FROM runs WHERE finished IS NULL", -1, &st, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(s->db, "UPDATE runs SET finished = ?, status = 'reaped' WHERE id = ? AND finished IS NULL",
                           -1, &up, NULL) != SQLITE_OK) {
        rc = store_failed(s, err, "runs");
        goto done;
    }
    while (sqlite3_step(st) == SQLITE_ROW) {
        pid_t pid = (pid_t)sqlite3_column_int64(st, 1);
        if (pid == getpid() || (pid > 0 && (kill(pid, 0) == 0 || errno == EPERM))) continue;
        sqlite3_bind_int64(up, 1, (sqlite3_int64)time(NULL) * 1000);
        sqlite3_bind_int64(up, 2, sqlite3_column_int64(st, 0));
        if (sqlite3_step(up) != SQLITE_DONE) {
            rc = store_failed(s, err, "reap run");
            goto done;
        }
        sqlite3_reset(up);
    }
done:
    sqlite3_finalize(st);
    sqlite3_finalize(up);
    return rc;
}

/* Why a store path is refused: the store holds every word of a session, so it is only ever
 * a real folder and a real file of ours, never a link (whose target we would chmod, or
 * create outside the private folder). */
static int store_refuse_link(const char *what, const char *path, char **err)
{
    struct stat ls;
    if (lstat(path, &ls) == 0 && S_ISLNK(ls.st_mode)) {
        char target[512];
        ssize_t n = readlink(path, target, sizeof target - 1);
        target[n > 0 ? n : 0] = '\0';
        return lc_errf(err, LC_INVALID,
                       "store: the %s %s is a symlink (to %s), which is never followed; LCM is not"
                       " active: remove the link (or use another --home)",
                       what, path, n > 0 ? target : "?");
    }
    return lc_errf(err, LC_INVALID, "store: the %s %s is not a %s; LCM is not active", what, path,
                   strcmp(what, "store folder") == 0 ? "folder" : "regular file");
}

/* Create (or check) HOME/lcm/ and HOME/lcm/ID.sqlite without following a link at either,
 * and give them modes 0700 / 0600 through the descriptors held, never by path (a path
 * could be swapped for a link between the check and the chmod). *dir_was / *file_was get
 * the modes found, for the note that reports a fix. */
static int store_open_private(const char *agent_home, const char *session_id, mode_t *dir_was,
                              mode_t *file_was, char **err)
{
    char *dir = lc_asprintf("%s/lcm", agent_home);
    char *name = lc_asprintf("%s.sqlite", session_id);
    char *path = lc_asprintf("%s/lcm/%s", agent_home, name ? name : "");
    int dfd = -1, fd = -1, rc = LC_OK;
    struct stat st;
    if (!dir || !name || !path) {
        rc = lc_errf(err, LC_NOMEM, "store: out of memory");
        goto done;
    }
    /* The agent home may itself be a link (a home moved elsewhere): the user's choice. */
    if ((rc = lc_mkdir_p(agent_home, 0700, err)) != LC_OK) goto done;
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        rc = lc_errf(err, LC_ERR, "store: cannot create folder %s: %s", dir, strerror(errno));
        goto done;
    }
    dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0) {
        rc = errno == ELOOP || errno == ENOTDIR ? store_refuse_link("store folder", dir, err)
                                                : lc_errf(err, LC_ERR, "store: cannot open folder %s: %s",
                                                          dir, strerror(errno));
        goto done;
    }
    if (fstat(dfd, &st) != 0) {
        rc = lc_errf(err, LC_ERR, "store: cannot stat %s: %s", dir, strerror(errno));
        goto done;
    }
    *dir_was = st.st_mode & 07777;
    /* Stores hold every word of a session: a folder others can read is fixed and reported. */
    if (*dir_was != 0700 && fchmod(dfd, 0700) != 0) {
        rc = lc_errf(err, LC_ERR, "store: cannot make %s private (0700): %s", dir, strerror(errno));
        goto done;
    }
    /* Born 0600 (SQLite gives -wal/-shm the same mode). O_NOFOLLOW refuses a link, also a
     * dangling one (nothing is created at its target); O_NONBLOCK keeps a FIFO planted at
     * the name from blocking the open until it is refused below. */
    fd = openat(dfd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
    if (fd < 0) {
        rc = errno == ELOOP ? store_refuse_link("store file", path, err)
                            : lc_errf(err, LC_ERR, "store: cannot create %s: %s", path, strerror(errno));
        goto done;
    }
    if (fstat(fd, &st) != 0) {
        rc = lc_errf(err, LC_ERR, "store: cannot stat %s: %s", path, strerror(errno));
        goto done;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = store_refuse_link("store file", path, err);
        goto done;
    }
    /* A second name for the file is another way to reach a file outside the folder. */
    if (st.st_nlink > 1) {
        rc = lc_errf(err, LC_INVALID, "store: the store file %s has %lu hard links (another name"
                     " elsewhere); it is not opened and LCM is not active", path,
                     (unsigned long)st.st_nlink);
        goto done;
    }
    *file_was = st.st_mode & 07777;
    if (*file_was != 0600 && fchmod(fd, 0600) != 0) {
        rc = lc_errf(err, LC_ERR, "store: cannot make %s private (0600): %s", path, strerror(errno));
        goto done;
    }
done:
    if (fd >= 0) close(fd);
    if (dfd >= 0) close(dfd);
    free(dir);
    free(name);
    free(path);
    return rc;
}

int store_file_damaged(const char *path, char **why)
{
    unsigned char h[100];
    struct stat sb, wb;
    if (why) *why = NULL;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t n = fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) ? pread(fd, h, sizeof h, 0) : -1;
    close(fd);
    if (n <= 0) return 0; /* empty: a store about to be created */
    char *wal = lc_asprintf("%s-wal", path);
    int wal_frames = wal && stat(wal, &wb) == 0 && wb.st_size > 32;
    free(wal);
    if (n < (ssize_t)sizeof h || memcmp(h, "SQLite format 3", 16) != 0) {
        if (why) *why = lc_asprintf("%lld bytes that do not start with a SQLite header", (long long)sb.st_size);
        return 1;
    }
    /* The in-header page count is valid when the change counter (24) equals the
     * version-valid-for number (92). A checkpoint cut short may leave the file shorter
     * than it, but then the log still holds the pages: only judged without one. */
    uint32_t page = (uint32_t)h[16] << 8 | h[17];
    uint32_t pages = (uint32_t)h[28] << 24 | (uint32_t)h[29] << 16 | (uint32_t)h[30] << 8 | h[31];
    int valid = memcmp(h + 24, h + 92, 4) == 0 && pages > 0;
    if (page == 1) page = 65536;
    if (valid && !wal_frames && (uint64_t)sb.st_size < (uint64_t)pages * page) {
        if (why)
            *why = lc_asprintf("truncated: %lld bytes where its header counts %u pages of %u bytes (%llu)",
                               (long long)sb.st_size, pages, page, (unsigned long long)pages * page);
        return 1;
    }
    return 0;
}

static int store_open_once(const char *agent_home, const char *session_id, const char *session_cwd,
                           long busy_ms, store **out, char **err)
{
    char *dir = NULL, *path = NULL;
    store *s = NULL;
    int rc = LC_OK;
    *out = NULL;
    if (!agent_home || !*agent_home || !store_valid_id(session_id)) {
        rc = lc_errf(err, LC_INVALID, "store: need an agent home and a plain session id");
        goto done;
    }
    dir = lc_asprintf("%s/lcm", agent_home);
    path = lc_asprintf("%s/lcm/%s.sqlite", agent_home, session_id);
    if (!dir || !path) {
        rc = lc_errf(err, LC_NOMEM, "store: out of memory");
        goto done;
    }
    mode_t dir_was = 0700, file_was = 0600;
    if ((rc = store_open_private(agent_home, session_id, &dir_was, &file_was, err)) != LC_OK) goto done;
    if (!(s = store_alloc(path))) {
        rc = lc_errf(err, LC_NOMEM, "store: out of memory");
        goto done;
    }
    {
        char *why = NULL;
        if (store_file_damaged(path, &why)) {
            s->notadb = 1;
            rc = lc_errf(err, LC_ERR, "%s", why ? why : "damaged");
            free(why);
            goto done;
        }
    }
    if (dir_was != 0700 || file_was != 0600)
        s->mode_note = lc_asprintf("store modes fixed: folder %s was %04o (now 0700), file %s was "
                                   "%04o (now 0600)", dir, (unsigned)dir_was, path,
                                   (unsigned)file_was);
    /* NOFOLLOW: the file checked above cannot have become a link since. */
    if (sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOFOLLOW, NULL) != SQLITE_OK) {
        rc = store_failed(s, err, "open");
        goto done;
    }
    sqlite3_busy_timeout(s->db, busy_ms > 0 ? (int)busy_ms : 1);
    if ((rc = store_exec(s, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
                            "PRAGMA foreign_keys=ON;", err)) != LC_OK)
        goto done;
    if ((rc = store_migrate(s, err)) != LC_OK) goto done;
    if ((rc = store_reap_dead_runs(s, err)) != LC_OK) goto done;
    {
        char created[32];
        snprintf(created, sizeof created, "%lld", (long long)time(NULL) * 1000LL);
        if ((rc = store_meta_set(s, "session_id", session_id, err)) != LC_OK) goto done;
        if ((rc = store_meta_set(s, "cwd", session_cwd ? session_cwd : "", err)) != LC_OK) goto done;
        if ((rc = store_meta_set(s, "created", created, err)) != LC_OK) goto done;
    }
    if ((rc = store_exec(s, store_progress_triggers, err)) != LC_OK) goto done;
    if ((rc = store_prepare(s, &s->st_exists, "SELECT ordinal FROM messages WHERE entry_id = ?",
                            err)) != LC_OK)
        goto done;
    if ((rc = store_prepare(s, &s->st_insert,
                            "INSERT OR IGNORE INTO messages(entry_id, ordinal, role, text, chars,"
                            " tokens, raw_json, payload, tool_name, tool_path, created)"
                            " VALUES(?,?,?,?,?,?,?,?,?,?,?)",
                            err)) != LC_OK)
        goto done;
    if ((rc = store_prepare(s, &s->st_fts, "INSERT INTO messages_fts(rowid, text) VALUES(?, ?)",
                            err)) != LC_OK)
        goto done;
    if ((rc = store_prepare(s, &s->st_handle,
                            "INSERT OR IGNORE INTO file_handles(entry_id, path, content_id, kind,"
                            " chars, preview, summary) VALUES(?,?,?,?,?,?,?)",
                            err)) != LC_OK)
        goto done;
    /* Later statements wait as long as they always did, whatever the open waited. */
    sqlite3_busy_timeout(s->db, STORE_BUSY_MS);
    *out = s;
    s = NULL;
done:
    if (rc != LC_OK && s && s->notadb) {
        /* Not a lock or a full disk: the bytes are not a database. Say what fixes it. */
        char *why = err && *err ? *err : NULL;
        if (err) *err = NULL;
        rc = lc_errf(err, LC_ERR, "store: %s is not a readable SQLite database (%s); `/lcm doctor"
                     " --repair` moves it aside and rebuilds it from the session file", path,
                     why ? why : "corrupt");
        free(why);
    } else if (rc != LC_OK && s && s->busy) {
        rc = LC_BUSY; /* the message stays: "database is locked" */
    }
    store_close(s);
    free(dir);
    free(path);
    return rc;
}

int store_open_wait(const char *agent_home, const char *session_id, const char *session_cwd,
                    long wait_ms, store **out, char **err)
{
    /* A lock another connection holds is waited for by the busy handler; the few busy
     * answers SQLite gives without waiting (a WAL switch or recovery racing another
     * opener) are retried here, until the same deadline. */
    double until = lc_now_ms() + (double)(wait_ms > 0 ? wait_ms : 0);
    for (;;) {
        long left = (long)(until - lc_now_ms());
        int rc = store_open_once(agent_home, session_id, session_cwd, left > 0 ? left : 1, out, err);
        if (rc != LC_BUSY || lc_now_ms() >= until) return rc;
        if (err) {
            free(*err);
            *err = NULL;
        }
        struct timespec ts = {0, 20 * 1000000L};
        nanosleep(&ts, NULL);
    }
}

int store_open(const char *agent_home, const char *session_id, const char *session_cwd,
               store **out, char **err)
{
    return store_open_wait(agent_home, session_id, session_cwd, STORE_BUSY_MS, out, err);
}

int store_open_readonly(const char *db_path, store **out, int *schema_version, char **err)
{
    store *s = NULL;
    int rc = LC_OK;
    *out = NULL;
    if (schema_version) *schema_version = -1;
    if (!(s = store_alloc(db_path))) {
        rc = lc_errf(err, LC_NOMEM, "store: out of memory");
        goto done;
    }
    s->read_only = 1;
    if (sqlite3_open_v2(db_path, &s->db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        rc = store_failed(s, err, "open read-only");
        goto done;
    }
    sqlite3_busy_timeout(s->db, 1000);
    if ((rc = store_exec(s, "PRAGMA query_only=1", err)) != LC_OK) goto done;
    int v = store_schema_version(s);
    if (v < 0) {
        rc = store_failed(s, err, "reading user_version");
        goto done;
    }
    if (schema_version) *schema_version = v;
    *out = s;
    s = NULL;
done:
    store_close(s);
    return rc;
}

void store_close(store *s)
{
    if (!s) return;
    sqlite3_finalize(s->st_exists);
    sqlite3_finalize(s->st_insert);
    sqlite3_finalize(s->st_fts);
    sqlite3_finalize(s->st_handle);
    sqlite3_close(s->db);
    for (size_t i = 0; i < STORE_CALL_RING; i++) {
        free(s->calls[i].id);
        free(s->calls[i].path);
    }
    free(s->last_entry);
    free(s->mode_note);
    free(s->path);
    free(s);
}

void store_set_options(store *s, const store_options *opt)
{
    s->opt = *opt;
    if (!s->opt.large_file_chars) s->opt.large_file_chars = STORE_LARGE_FILE_CHARS;
}

sqlite3 *store_db(store *s) { return s->db; }
const char *store_mode_note(const store *s) { return s ? s->mode_note : NULL; }

const char *store_path(const store *s) { return s->path; }

int64_t store_message_count(store *s)
{
    sqlite3_stmt *st = NULL;
    int64_t n = -1;
    if (sqlite3_prepare_v2(s->db, "SELECT count(*) FROM messages", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return n;
}

/* One integer from a query; `dflt` when it fails or returns nothing. */
static int64_t store_int(store *s, const char *sql, int64_t dflt)
{
    sqlite3_stmt *st = NULL;
    int64_t v = dflt;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW &&
        sqlite3_column_type(st, 0) != SQLITE_NULL)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

int64_t store_summary_count(store *s)
{
    /* An older-generation store may predate the table: no summaries, not an error. */
    if (!store_int(s, "SELECT count(*) FROM sqlite_master WHERE type='table' AND name='summaries'", 0)) return 0;
    return store_int(s, "SELECT count(*) FROM summaries", 0);
}

int64_t store_db_bytes(store *s)
{
    return store_int(s, "SELECT page_count * page_size FROM pragma_page_count, pragma_page_size", 0);
}

/* ---- ingest ----------------------------------------------------------------------- */

/* The ordinal of a stored entry, or -1. */
static int64_t store_lookup_ordinal(store *s, const char *entry_id)
{
    int64_t ord = -1;
    sqlite3_bind_text(s->st_exists, 1, entry_id, -1, SQLITE_STATIC);
    if (sqlite3_step(s->st_exists) == SQLITE_ROW) ord = sqlite3_column_int64(s->st_exists, 0);
    sqlite3_reset(s->st_exists);
    sqlite3_clear_bindings(s->st_exists);
    return ord;
}

static const char *store_path_arg(const cJSON *args)
{
    static const char *const keys[] = {"path", "file_path", "filePath", "file", "filename"};
    if (cJSON_IsString(args)) return NULL; /* arguments kept as a JSON string: not parsed here */
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(args, keys[i]);
        if (cJSON_IsString(v) && v->valuestring[0]) return v->valuestring;
    }
    return NULL;
}

/* Remember the paths the assistant's tool calls named, so the result that follows can
 * become a file handle without re-reading the assistant row. */
static void store_note_calls(store *s, const cJSON *msg)
{
    const cJSON *content = cJSON_GetObjectItemCaseSensitive(msg, "content");
    const cJSON *b;
    cJSON_ArrayForEach(b, content)
    {
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(b, "type");
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(b, "id");
        if (!cJSON_IsString(type) || strcmp(type->valuestring, "toolCall") != 0 || !cJSON_IsString(id))
            continue;
        const cJSON *args = cJSON_GetObjectItemCaseSensitive(b, "arguments");
        cJSON *parsed = NULL;
        if (cJSON_IsString(args)) args = parsed = cJSON_Parse(args->valuestring);
        const char *path = store_path_arg(args);
        store_call *c = &s->calls[s->call_next++ % STORE_CALL_RING];
        free(c->id);
        free(c->path);
        c->id = lc_strdup(id->valuestring);
        c->path = path ? lc_strdup(path) : NULL;
        cJSON_Delete(parsed);
    }
}

static char *store_find_call_path(store *s, const char *call_id)
{
    for (size_t i = 0; i < STORE_CALL_RING; i++)
        if (s->calls[i].id && strcmp(s->calls[i].id, call_id) == 0)
            return s->calls[i].path ? lc_strdup(s->calls[i].path) : NULL;
    /* The call was ingested by an earlier process: read the newest assistant rows. */
    sqlite3_stmt *st = NULL;
    char *path = NULL;
    int found = 0;
    if (sqlite3_prepare_v2(s->db,
                           "SELECT raw_json FROM messages WHERE role = 'assistant'"
                           " ORDER BY id DESC LIMIT 16",
                           -1, &st, NULL) != SQLITE_OK)
        goto done;
    while (!found && sqlite3_step(st) == SQLITE_ROW) {
        cJSON *m = cJSON_Parse((const char *)sqlite3_column_text(st, 0));
        if (!m) continue;
        store_note_calls(s, m);
        cJSON_Delete(m);
        for (size_t i = 0; i < STORE_CALL_RING; i++)
            if (s->calls[i].id && strcmp(s->calls[i].id, call_id) == 0) {
                path = s->calls[i].path ? lc_strdup(s->calls[i].path) : NULL;
                found = 1;
                break;
            }
    }
done:
    sqlite3_finalize(st);
    return path;
}

/* The blocks the derived text does not carry (thinking, images, signatures, unknown
 * types or fields), as a JSON array text. */
static char *store_payload_of(const cJSON *msg)
{
    const cJSON *content = cJSON_GetObjectItemCaseSensitive(msg, "content");
    cJSON *arr = cJSON_CreateArray();
    char *out = NULL;
    if (!arr) return NULL;
    const cJSON *b;
    if (cJSON_IsArray(content)) {
        cJSON_ArrayForEach(b, content)
        {
            const cJSON *type = cJSON_GetObjectItemCaseSensitive(b, "type");
            const char *t = cJSON_IsString(type) ? type->valuestring : "";
            int plain_text = strcmp(t, "text") == 0 && cJSON_GetArraySize(b) == 2;
            int call = strcmp(t, "toolCall") == 0;
            if (!plain_text && !call) cJSON_AddItemToArray(arr, cJSON_Duplicate(b, 1));
        }
    }
    out = cJSON_PrintUnformatted(arr);
    cJSON_Delete(arr);
    return out;
}

static int store_record_handle(store *s, const char *entry_id, const char *path,
                               const char *text, size_t len, size_t chars, char **err)
{
    char cid[65];
    files_kind kind = path ? files_classify(path, text, len) : FILES_KIND_LARGE_INLINE;
    char *preview = files_preview(text, len);
    char *summary = files_explore(path, text, len, kind);
    int rc = LC_OK;
    if (!preview || !summary) {
        rc = lc_errf(err, LC_NOMEM, "store: out of memory");
        goto done;
    }
    sha256_hex(text, len, cid);
    sqlite3_stmt *st = s->st_handle;
    sqlite3_bind_text(st, 1, entry_id, -1, SQLITE_STATIC);
    if (path)
        sqlite3_bind_text(st, 2, path, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, 2);
    sqlite3_bind_text(st, 3, cid, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, files_kind_name(kind), -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 5, (sqlite3_int64)chars);
    sqlite3_bind_text(st, 6, preview, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 7, summary, -1, SQLITE_STATIC);
    if (sqlite3_step(st) != SQLITE_DONE) rc = store_failed(s, err, "file handle");
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
done:
    free(preview);
    free(summary);
    return rc;
}

/* Parse a message for its derived text. cJSON ends a string at an escaped NUL, which
 * would hide everything after it from search; the parse sees U+FFFD there instead (the
 * same six bytes), while raw_json keeps the original. */
static cJSON *store_parse_for_text(const char *json, size_t len)
{
    if (!memmem(json, len, "\\u0000", 6)) return cJSON_ParseWithLength(json, len);
    char *copy = lc_strndup(json, len);
    if (!copy) return NULL;
    for (char *p = copy; (p = memmem(p, len - (size_t)(p - copy), "\\u0000", 6)) != NULL; p += 6) {
        size_t slashes = 0;
        for (char *q = p; q > copy && q[-1] == '\\'; q--) slashes++;
        if (slashes % 2 == 0) memcpy(p, "\\ufffd", 6);
    }
    cJSON *m = cJSON_ParseWithLength(copy, len);
    free(copy);
    return m;
}

/* Insert one message (already known to be new). *inserted = 1 when a row was written. */
static int store_insert_one(store *s, const store_msg *m, int64_t ordinal,
                            store_ingest_stats *stats, char **err)
{
    cJSON *msg = store_parse_for_text(m->json, m->json_len);
    char *text = NULL, *payload = NULL, *path = NULL;
    int rc = LC_OK, complete = 1;
    if (!msg) {
        rc = lc_errf(err, LC_INVALID, "store: entry %s: message is not valid JSON", m->entry_id);
        goto done;
    }
    msg_role role = msg_role_of(msg);
    text = msg_derive_text(msg, &complete);
    if (!text) {
        rc = lc_errf(err, LC_NOMEM, "store: out of memory");
        goto done;
    }
    size_t tlen = strlen(text);
    size_t chars = files_utf8_count(text, tlen);
    if (!complete && !(payload = store_payload_of(msg))) {
        rc = lc_errf(err, LC_NOMEM, "store: out of memory");
        goto done;
    }
    const char *tool_name = NULL;
    if (role == MSG_ROLE_ASSISTANT) store_note_calls(s, msg);
    if (role == MSG_ROLE_TOOL_RESULT) {
        tool_name = msg_tool_name(msg);
        const char *call_id = msg_tool_call_id(msg);
        if (call_id) path = store_find_call_path(s, call_id);
    }
    const cJSON *ts = cJSON_GetObjectItemCaseSensitive(msg, "timestamp");
    /* The message's own timestamp, never the clock: a rebuilt store has identical rows. */
    int64_t created = cJSON_IsNumber(ts) ? (int64_t)ts->valuedouble : 0;

    sqlite3_stmt *st = s->st_insert;
    sqlite3_bind_text(st, 1, m->entry_id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, ordinal);
    sqlite3_bind_text(st, 3, msg_role_name(role), -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, text, (int)tlen, SQLITE_STATIC);
    sqlite3_bind_int64(st, 5, (sqlite3_int64)chars);
    sqlite3_bind_int64(st, 6, (sqlite3_int64)msg_estimate_tokens(msg));
    sqlite3_bind_text(st, 7, m->json, (int)m->json_len, SQLITE_STATIC);
    if (payload)
        sqlite3_bind_text(st, 8, payload, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, 8);
    if (tool_name)
        sqlite3_bind_text(st, 9, tool_name, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, 9);
    if (path)
        sqlite3_bind_text(st, 10, path, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, 10);
    sqlite3_bind_int64(st, 11, created);
    int step = sqlite3_step(st);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    if (step != SQLITE_DONE) {
        rc = store_failed(s, err, "insert message");
        goto done;
    }
    if (sqlite3_changes(s->db) == 0) goto done; /* already stored */
    sqlite3_int64 rowid = sqlite3_last_insert_rowid(s->db);
    size_t ilen = files_utf8_prefix(text, tlen, STORE_INDEX_CHARS);
    sqlite3_bind_int64(s->st_fts, 1, rowid);
    sqlite3_bind_text(s->st_fts, 2, text, (int)ilen, SQLITE_STATIC);
    step = sqlite3_step(s->st_fts);
    sqlite3_reset(s->st_fts);
    sqlite3_clear_bindings(s->st_fts);
    if (step != SQLITE_DONE) {
        rc = store_failed(s, err, "index message");
        goto done;
    }
    if (stats) {
        stats->inserted++;
        stats->text_bytes += tlen;
    }
    if (role == MSG_ROLE_TOOL_RESULT && s->opt.externalize_files &&
        chars >= s->opt.large_file_chars) {
        rc = store_record_handle(s, m->entry_id, path, text, tlen, chars, err);
        if (rc == LC_OK && stats) stats->file_handles++;
    }
done:
    cJSON_Delete(msg);
    free(text);
    free(payload);
    free(path);
    return rc;
}

static int64_t store_next_ordinal(store *s)
{
    sqlite3_stmt *st = NULL;
    int64_t n = 0;
    if (sqlite3_prepare_v2(s->db, "SELECT max(ordinal) + 1 FROM messages", -1, &st, NULL) ==
            SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
        n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return n;
}

int store_ingest(store *s, const store_msg *msgs, size_t n, store_ingest_stats *stats,
                 char **err)
{
    store_ingest_stats local = {0};
    int rc = LC_OK, in_tx = 0;
    size_t first_new = 0;
    int64_t ordinal = -1;
    if (!stats) stats = &local;
    memset(stats, 0, sizeof *stats);
    if (s->read_only) return lc_errf(err, LC_INVALID, "store: opened read-only");

    /* Walk back to the newest entry already stored: everything before it is stored too
     * (a branch only grows at its leaf; a tree move is store_mark_branch's business). */
    for (size_t i = n; i-- > 0;) {
        const char *id = msgs[i].entry_id;
        if (!id) continue;
        stats->examined++;
        int64_t ord = (s->last_entry && strcmp(s->last_entry, id) == 0)
                          ? s->last_ordinal
                          : store_lookup_ordinal(s, id);
        if (ord >= 0) {
            first_new = i + 1;
            ordinal = ord + 1;
            break;
        }
    }
    if (first_new >= n) goto done;
    if (ordinal < 0) ordinal = store_next_ordinal(s);

    if ((rc = store_exec(s, "BEGIN IMMEDIATE", err)) != LC_OK) goto done;
    in_tx = 1;
    const char *newest = NULL;
    for (size_t i = first_new; i < n; i++) {
        if (!msgs[i].entry_id) continue;
        if ((rc = store_insert_one(s, &msgs[i], ordinal, stats, err)) != LC_OK) goto done;
        ordinal++;
        newest = msgs[i].entry_id;
    }
    if ((rc = store_exec(s, "COMMIT", err)) != LC_OK) goto done;
    in_tx = 0;
    if (newest) {
        free(s->last_entry);
        s->last_entry = lc_strdup(newest);
        s->last_ordinal = ordinal - 1;
    }
done:
    if (in_tx) sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

/* ---- removed branches ------------------------------------------------------------- */

int store_mark_branch(store *s, const char *const *active_ids, size_t n, size_t *marked,
                      size_t *cleared, char **err)
{
    sqlite3_stmt *st = NULL;
    int rc = LC_OK, in_tx = 0;
    if (marked) *marked = 0;
    if (cleared) *cleared = 0;
    if ((rc = store_exec(s, "BEGIN IMMEDIATE;"
                            "CREATE TEMP TABLE IF NOT EXISTS store_active(id TEXT PRIMARY KEY);"
                            "DELETE FROM store_active;",
                         err)) != LC_OK)
        goto done;
    in_tx = 1;
    if (sqlite3_prepare_v2(s->db, "INSERT OR IGNORE INTO store_active(id) VALUES(?)", -1, &st,
                           NULL) != SQLITE_OK) {
        rc = store_failed(s, err, "mark branch");
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        if (!active_ids[i]) continue;
        sqlite3_bind_text(st, 1, active_ids[i], -1, SQLITE_STATIC);
        int step = sqlite3_step(st);
        sqlite3_reset(st);
        if (step != SQLITE_DONE) {
            rc = store_failed(s, err, "mark branch");
            goto done;
        }
    }
    if ((rc = store_exec(s, "UPDATE messages SET removed = 1 WHERE removed = 0 AND entry_id NOT IN"
                            " (SELECT id FROM store_active)",
                         err)) != LC_OK)
        goto done;
    if (marked) *marked = (size_t)sqlite3_changes(s->db);
    if ((rc = store_exec(s, "UPDATE messages SET removed = 0 WHERE removed = 1 AND entry_id IN"
                            " (SELECT id FROM store_active)",
                         err)) != LC_OK)
        goto done;
    if (cleared) *cleared = (size_t)sqlite3_changes(s->db);
    if ((rc = store_exec(s, "DELETE FROM store_active; COMMIT", err)) != LC_OK) goto done;
    in_tx = 0;
done:
    sqlite3_finalize(st);
    if (in_tx) sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

int store_set_removed(store *s, const char *const *entry_ids, size_t n, int removed,
                      char **err)
{
    sqlite3_stmt *st = NULL;
    int rc = LC_OK, in_tx = 0;
    if ((rc = store_exec(s, "BEGIN IMMEDIATE", err)) != LC_OK) goto done;
    in_tx = 1;
    if (sqlite3_prepare_v2(s->db, "UPDATE messages SET removed = ?1 WHERE entry_id = ?2 AND removed != ?1",
                           -1, &st, NULL) != SQLITE_OK) {
        rc = store_failed(s, err, "set removed");
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        sqlite3_bind_int(st, 1, removed ? 1 : 0);
        sqlite3_bind_text(st, 2, entry_ids[i], -1, SQLITE_STATIC);
        int step = sqlite3_step(st);
        sqlite3_reset(st);
        if (step != SQLITE_DONE) {
            rc = store_failed(s, err, "set removed");
            goto done;
        }
    }
    if ((rc = store_exec(s, "COMMIT", err)) != LC_OK) goto done;
    in_tx = 0;
done:
    sqlite3_finalize(st);
    if (in_tx) sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

/* ---- DAG progress ------------------------------------------------------------------- */

static int store_meta_int(store *s, const char *key, int64_t *out)
{
    sqlite3_stmt *st = NULL;
    int found = 0;
    if (sqlite3_prepare_v2(s->db, "SELECT CAST(value AS INTEGER) FROM meta WHERE key = ?", -1, &st,
                           NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
        if (sqlite3_step(st) == SQLITE_ROW) {
            *out = sqlite3_column_int64(st, 0);
            found = 1;
        }
    }
    sqlite3_finalize(st);
    return found;
}

/* The one full scan: a store written before the numbers existed, or one whose coverage
 * was deleted (repair). Both numbers are written together, in one transaction. */
static int store_dag_recompute(store *s, char **err)
{
    int rc = LC_OK, in_tx = 0;
    if ((rc = store_exec(s, "BEGIN IMMEDIATE", err)) != LC_OK) goto done;
    in_tx = 1;
    rc = store_exec(
        s,
        "INSERT OR REPLACE INTO meta(key, value) SELECT 'dag_watermark', coalesce("
        " (SELECT min(m.ordinal) FROM messages m WHERE " STORE_ELIGIBLE("m") " AND " STORE_UNCOVERED("m") "),"
        " (SELECT max(ordinal) + 1 FROM messages), 0);"
        "INSERT OR REPLACE INTO meta(key, value) SELECT 'dag_pending', coalesce("
        " (SELECT sum(m.tokens) FROM messages m WHERE " STORE_ELIGIBLE("m") " AND " STORE_UNCOVERED("m") "), 0);"
        "COMMIT",
        err);
    if (rc == LC_OK) in_tx = 0;
done:
    if (in_tx) sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

int store_dag_progress(store *s, int64_t *watermark, int64_t *pending, char **err)
{
    int rc = LC_OK;
    int64_t w = 0, p = 0;
    if (!store_meta_int(s, "dag_watermark", &w) || !store_meta_int(s, "dag_pending", &p)) {
        if (s->read_only) {
            /* Nothing may be written: report "everything may be uncovered". */
            w = 0;
            p = INT64_MAX;
            goto done;
        }
        if ((rc = store_dag_recompute(s, err)) != LC_OK) goto done;
        if (!store_meta_int(s, "dag_watermark", &w) || !store_meta_int(s, "dag_pending", &p)) {
            rc = store_failed(s, err, "dag progress");
            goto done;
        }
    }
done:
    if (rc == LC_OK) {
        if (watermark) *watermark = w;
        if (pending) *pending = p;
    }
    return rc;
}

int store_dag_block_get(store *s, int64_t *tokens)
{
    return store_meta_int(s, "dag_block_tokens", tokens);
}

int store_dag_block_put(store *s, int64_t tokens, char **err)
{
    sqlite3_stmt *st = NULL;
    int rc = LC_OK;
    if (sqlite3_prepare_v2(s->db, "INSERT OR REPLACE INTO meta(key, value) VALUES('dag_block_tokens', ?)",
                           -1, &st, NULL) != SQLITE_OK) {
        rc = store_failed(s, err, "dag block");
        goto done;
    }
    sqlite3_bind_int64(st, 1, tokens);
    if (sqlite3_step(st) != SQLITE_DONE) rc = store_failed(s, err, "dag block");
done:
    sqlite3_finalize(st);
    return rc;
}

int store_dag_set_watermark(store *s, int64_t expect, int64_t value, int *moved, char **err)
{
    sqlite3_stmt *st = NULL;
    int rc = LC_OK;
    if (moved) *moved = 0;
    if (sqlite3_prepare_v2(s->db,
                           "UPDATE meta SET value = ?1 WHERE key = 'dag_watermark'"
                           " AND CAST(value AS INTEGER) = ?2 AND NOT EXISTS (SELECT 1 FROM main.messages m"
                           " WHERE m.ordinal >= ?2 AND m.ordinal < ?1 AND " STORE_ELIGIBLE("m")
                           " AND " STORE_UNCOVERED("m") ")",
                           -1, &st, NULL) != SQLITE_OK) {
        rc = store_failed(s, err, "dag watermark");
        goto done;
    }
    sqlite3_bind_int64(st, 1, value);
    sqlite3_bind_int64(st, 2, expect);
    if (sqlite3_step(st) != SQLITE_DONE) {
        rc = store_failed(s, err, "dag watermark");
        goto done;
    }
    if (moved) *moved = sqlite3_changes(s->db) > 0;
done:
    sqlite3_finalize(st);
    return rc;
}

/* ---- reads ------------------------------------------------------------------------ */

static char *store_col_dup(sqlite3_stmt *st, int col)
{
    if (sqlite3_column_type(st, col) == SQLITE_NULL) return NULL;
    const char *p = (const char *)sqlite3_column_text(st, col);
    return lc_strndup(p ? p : "", (size_t)sqlite3_column_bytes(st, col));
}

int store_get_message(store *s, const char *entry_id, store_row *out, char **err)
{
    sqlite3_stmt *st = NULL;
    int rc = LC_OK;
    memset(out, 0, sizeof *out);
    if (sqlite3_prepare_v2(s->db,
                           "SELECT id, entry_id, ordinal, role, text, raw_json, payload, tokens,"
                           " chars, removed, tool_name, tool_path, created FROM messages"
                           " WHERE entry_id = ?",
                           -1, &st, NULL) != SQLITE_OK) {
        rc = store_failed(s, err, "read message");
        goto done;
    }
    sqlite3_bind_text(st, 1, entry_id, -1, SQLITE_STATIC);
    int step = sqlite3_step(st);
    if (step == SQLITE_DONE) {
        rc = lc_errf(err, LC_NOTFOUND, "store: no entry %s", entry_id);
        goto done;
    }
    if (step != SQLITE_ROW) {
        rc = store_failed(s, err, "read message");
        goto done;
    }
    out->id = sqlite3_column_int64(st, 0);
    out->entry_id = store_col_dup(st, 1);
    out->ordinal = sqlite3_column_int64(st, 2);
    out->role = store_col_dup(st, 3);
    out->text = store_col_dup(st, 4);
    out->raw_json = store_col_dup(st, 5);
    out->raw_len = (size_t)sqlite3_column_bytes(st, 5);
    out->payload = store_col_dup(st, 6);
    out->tokens = sqlite3_column_int64(st, 7);
    out->chars = sqlite3_column_int64(st, 8);
    out->removed = sqlite3_column_int(st, 9);
    out->tool_name = store_col_dup(st, 10);
    out->tool_path = store_col_dup(st, 11);
    out->created = sqlite3_column_int64(st, 12);
    if (!out->entry_id || !out->text || !out->raw_json) {
        store_row_free(out);
        rc = lc_errf(err, LC_NOMEM, "store: out of memory");
    }
done:
    sqlite3_finalize(st);
    return rc;
}

void store_row_free(store_row *r)
{
    free(r->entry_id);
    free(r->role);
    free(r->text);
    free(r->raw_json);
    free(r->payload);
    free(r->tool_name);
    free(r->tool_path);
    memset(r, 0, sizeof *r);
}

/* ---- summaries -------------------------------------------------------------------- */

static int store_step_done(store *s, sqlite3_stmt *st, const char *what, char **err)
{
    int step = sqlite3_step(st);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return step == SQLITE_DONE ? LC_OK : store_failed(s, err, what);
}

/* Passes on two connections (the worker's and the host thread's) may summarize the same
 * messages at once; a node is made outside any transaction, so it is checked here, under
 * the write lock, against what committed meanwhile: a leaf over an entry some leaf already
 * covers or a tree move removed, or a condensed node over a child that already has a
 * parent, would make the DAG cover history twice. LC_BUSY: the node no longer applies. */
static int store_summary_still_applies(store *s, const store_summary *in, char **err)
{
    int leaf = in->n_entries > 0, rc = LC_OK;
    sqlite3_stmt *st = NULL;
    const char *sql = leaf ? "SELECT (SELECT 1 FROM summary_messages WHERE entry_id = ?1)"
                             " OR (SELECT removed FROM messages WHERE entry_id = ?1)"
                           : "SELECT 1 FROM summary_children WHERE child_id = ?1";
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
        return store_failed(s, err, "summary check");
    size_t n = leaf ? in->n_entries : in->n_children;
    for (size_t i = 0; i < n && rc == LC_OK; i++) {
        if (leaf) sqlite3_bind_text(st, 1, in->entry_ids[i], -1, SQLITE_STATIC);
        else sqlite3_bind_int64(st, 1, in->children[i]);
        int step = sqlite3_step(st);
        if (step == SQLITE_ROW && sqlite3_column_int(st, 0))
            rc = leaf ? lc_errf(err, LC_BUSY, "store: entry %s is already summarized or removed",
                                in->entry_ids[i])
                      : lc_errf(err, LC_BUSY, "store: summary %lld is already condensed",
                                (long long)in->children[i]);
        else if (step != SQLITE_ROW && step != SQLITE_DONE)
            rc = store_failed(s, err, "summary check");
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    return rc;
}

int store_summary_add(store *s, const store_summary *in, int64_t *out_id, char **err)
{
    sqlite3_stmt *ins = NULL, *child = NULL, *msg = NULL, *span = NULL, *fts = NULL;
    int rc = LC_OK, in_tx = 0;
    int leaf = in->kind && strcmp(in->kind, "leaf") == 0;
    if (!in->text || (!leaf && (!in->kind || strcmp(in->kind, "condensed") != 0)) ||
        (leaf && in->n_entries == 0) || (!leaf && in->n_children == 0))
        return lc_errf(err, LC_INVALID,
                       "store: a summary is a leaf over entries or a condensed node over children");
    if ((rc = store_exec(s, "BEGIN IMMEDIATE", err)) != LC_OK) goto done;
    in_tx = 1;
    if ((rc = store_summary_still_applies(s, in, err)) != LC_OK) goto done;
    if (sqlite3_prepare_v2(s->db,
                           "INSERT INTO summaries(kind, depth, text, tiers, tokens, created)"
                           " VALUES(?,?,?,?,?,?)",
                           -1, &ins, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(s->db,
                           "INSERT INTO summary_children(parent_id, child_id, position)"
                           " VALUES(?,?,?)",
                           -1, &child, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(s->db,
                           "INSERT OR IGNORE INTO summary_messages(summary_id, entry_id, position)"
                           " VALUES(?,?,?)",
                           -1, &msg, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(s->db, "INSERT INTO summaries_fts(rowid, text) VALUES(?,?)", -1, &fts,
                           NULL) != SQLITE_OK) {
        rc = store_failed(s, err, "summary");
        goto done;
    }
    sqlite3_bind_text(ins, 1, leaf ? "leaf" : "condensed", -1, SQLITE_STATIC);
    sqlite3_bind_int(ins, 2, in->depth);
    sqlite3_bind_text(ins, 3, in->text, -1, SQLITE_STATIC);
    if (in->tiers_json)
        sqlite3_bind_text(ins, 4, in->tiers_json, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(ins, 4);
    sqlite3_bind_int64(ins, 5, in->tokens);
    sqlite3_bind_int64(ins, 6, (sqlite3_int64)time(NULL) * 1000);
    if ((rc = store_step_done(s, ins, "summary", err)) != LC_OK) goto done;
    int64_t id = sqlite3_last_insert_rowid(s->db);
    for (size_t i = 0; leaf && i < in->n_entries; i++) {
        sqlite3_bind_int64(msg, 1, id);
        sqlite3_bind_text(msg, 2, in->entry_ids[i], -1, SQLITE_STATIC);
        sqlite3_bind_int64(msg, 3, (sqlite3_int64)i);
        if ((rc = store_step_done(s, msg, "summary entries", err)) != LC_OK) goto done;
    }
    for (size_t i = 0; !leaf && i < in->n_children; i++) {
        sqlite3_bind_int64(child, 1, id);
        sqlite3_bind_int64(child, 2, in->children[i]);
        sqlite3_bind_int64(child, 3, (sqlite3_int64)i);
        if ((rc = store_step_done(s, child, "summary children", err)) != LC_OK) goto done;
    }
    /* The span is derived from the covered rows, so it names ordinals the store holds. */
    const char *span_sql =
        leaf ? "INSERT INTO summary_spans(summary_id, first_ordinal, last_ordinal, first_entry,"
               " last_entry, entry_count)"
               " SELECT ?1, min(m.ordinal), max(m.ordinal),"
               " (SELECT entry_id FROM summary_messages WHERE summary_id = ?1 ORDER BY position LIMIT 1),"
               " (SELECT entry_id FROM summary_messages WHERE summary_id = ?1 ORDER BY position DESC LIMIT 1),"
               " count(*) FROM summary_messages sm JOIN messages m ON m.entry_id = sm.entry_id"
               " WHERE sm.summary_id = ?1"
             : "INSERT INTO summary_spans(summary_id, first_ordinal, last_ordinal, first_entry,"
               " last_entry, entry_count)"
               " SELECT ?1, min(sp.first_ordinal), max(sp.last_ordinal),"
               " (SELECT sp2.first_entry FROM summary_children c2 JOIN summary_spans sp2"
               "   ON sp2.summary_id = c2.child_id WHERE c2.parent_id = ?1 ORDER BY c2.position LIMIT 1),"
               " (SELECT sp2.last_entry FROM summary_children c2 JOIN summary_spans sp2"
               "   ON sp2.summary_id = c2.child_id WHERE c2.parent_id = ?1 ORDER BY c2.position DESC LIMIT 1),"
               " sum(sp.entry_count) FROM summary_children c JOIN summary_spans sp"
               " ON sp.summary_id = c.child_id WHERE c.parent_id = ?1";
    if (sqlite3_prepare_v2(s->db, span_sql, -1, &span, NULL) != SQLITE_OK) {
        rc = store_failed(s, err, "summary span");
        goto done;
    }
    sqlite3_bind_int64(span, 1, id);
    if ((rc = store_step_done(s, span, "summary span (does it cover stored entries?)", err)) != LC_OK)
        goto done;
    sqlite3_bind_int64(fts, 1, id);
    sqlite3_bind_text(fts, 2, in->text, -1, SQLITE_STATIC);
    if ((rc = store_step_done(s, fts, "summary index", err)) != LC_OK) goto done;
    if ((rc = store_exec(s, "COMMIT", err)) != LC_OK) goto done;
    in_tx = 0;
    if (out_id) *out_id = id;
done:
    sqlite3_finalize(ins);
    sqlite3_finalize(child);
    sqlite3_finalize(msg);
    sqlite3_finalize(span);
    sqlite3_finalize(fts);
    if (in_tx) sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

int store_summary_set_text(store *s, int64_t id, const char *text, int64_t tokens, char **err)
{
    sqlite3_stmt *old = NULL, *up = NULL, *del = NULL, *ins = NULL;
    int rc = LC_OK, in_tx = 0;
    if (!text) return lc_errf(err, LC_INVALID, "store: a summary's text cannot be empty");
    if ((rc = store_exec(s, "BEGIN IMMEDIATE", err)) != LC_OK) goto done;
    in_tx = 1;
    /* The index is contentless: the old text must be handed back to remove its terms, and
     * it is read under the write lock so no other writer can have changed it since. */
    if (sqlite3_prepare_v2(s->db, "SELECT text FROM summaries WHERE id = ?", -1, &old, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(s->db, "UPDATE summaries SET text = ?, tokens = ? WHERE id = ?", -1, &up, NULL) !=
            SQLITE_OK ||
        sqlite3_prepare_v2(s->db, "INSERT INTO summaries_fts(summaries_fts, rowid, text) VALUES('delete', ?, ?)",
                           -1, &del, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(s->db, "INSERT INTO summaries_fts(rowid, text) VALUES(?, ?)", -1, &ins, NULL) !=
            SQLITE_OK) {
        rc = store_failed(s, err, "summary text");
        goto done;
    }
    sqlite3_bind_int64(old, 1, id);
    int step = sqlite3_step(old);
    if (step != SQLITE_ROW) {
        rc = step == SQLITE_DONE ? lc_errf(err, LC_NOTFOUND, "store: no summary #%lld", (long long)id)
                                 : store_failed(s, err, "summary text");
        goto done;
    }
    sqlite3_bind_int64(del, 1, id);
    sqlite3_bind_value(del, 2, sqlite3_column_value(old, 0));
    if ((rc = store_step_done(s, del, "summary index", err)) != LC_OK) goto done;
    sqlite3_bind_text(up, 1, text, -1, SQLITE_STATIC);
    sqlite3_bind_int64(up, 2, tokens);
    sqlite3_bind_int64(up, 3, id);
    if ((rc = store_step_done(s, up, "summary text", err)) != LC_OK) goto done;
    sqlite3_bind_int64(ins, 1, id);
    sqlite3_bind_text(ins, 2, text, -1, SQLITE_STATIC);
    if ((rc = store_step_done(s, ins, "summary index", err)) != LC_OK) goto done;
    if ((rc = store_exec(s, "COMMIT", err)) != LC_OK) goto done;
    in_tx = 0;
done:
    sqlite3_finalize(old);
    sqlite3_finalize(up);
    sqlite3_finalize(del);
    sqlite3_finalize(ins);
    if (in_tx) sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

/* ---- the projection's rows ----------------------------------------------------------------- */

void store_cut_free(store_cut *c)
{
    if (!c) return;
    free(c->anchor_entry);
    free(c->message);
    free(c->nodes_json);
    memset(c, 0, sizeof *c);
}

int store_cut_get(store *s, store_cut_which which, int64_t id, store_cut *out, char **err)
{
    static const char *const sql[] = {
        [STORE_CUT_BY_ID] = "SELECT id, anchor_entry, anchor_ordinal, message, nodes, stubbed"
                            " FROM lcm_cuts WHERE id = ?",
        [STORE_CUT_NEWEST] = "SELECT id, anchor_entry, anchor_ordinal, message, nodes, stubbed"
                             " FROM lcm_cuts ORDER BY id DESC LIMIT 1",
        /* Removed marks follow the active branch, so a cut whose anchor is not removed
         * stands on it. */
        [STORE_CUT_ON_BRANCH] = "SELECT c.id, c.anchor_entry, c.anchor_ordinal, c.message, c.nodes,"
                                " c.stubbed FROM lcm_cuts c JOIN messages m ON m.entry_id = c.anchor_entry"
                                " WHERE m.removed = 0 ORDER BY c.id DESC LIMIT 1",
    };
    sqlite3_stmt *st = NULL;
    int rc = LC_OK, step;
    memset(out, 0, sizeof *out);
    if ((unsigned)which > STORE_CUT_ON_BRANCH) return lc_errf(err, LC_INVALID, "store: no such cut query");
    if (sqlite3_prepare_v2(s->db, sql[which], -1, &st, NULL) != SQLITE_OK) {
        rc = store_failed(s, err, "cut");
        goto done;
    }
    if (which == STORE_CUT_BY_ID) sqlite3_bind_int64(st, 1, id);
    step = sqlite3_step(st);
    if (step == SQLITE_DONE) {
        rc = LC_NOTFOUND;
        goto done;
    }
    if (step != SQLITE_ROW) {
        rc = store_failed(s, err, "cut");
        goto done;
    }
    out->id = sqlite3_column_int64(st, 0);
    out->anchor_entry = store_col_dup(st, 1);
    out->anchor_ordinal = sqlite3_column_int64(st, 2);
    out->message = store_col_dup(st, 3);
    out->nodes_json = store_col_dup(st, 4);
    out->stubbed = sqlite3_column_int(st, 5);
    if (!out->anchor_entry || !out->message || !out->nodes_json) {
        store_cut_free(out);
        rc = lc_errf(err, LC_NOMEM, "store: out of memory");
    }
done:
    sqlite3_finalize(st);
    return rc;
}

int store_cut_add(store *s, const store_cut *in, int64_t tokens, int64_t *out_id, char **err)
{
    sqlite3_stmt *st = NULL;
    int rc = LC_OK;
    *out_id = 0;
    if (sqlite3_prepare_v2(s->db,
                           "INSERT INTO lcm_cuts(anchor_entry, anchor_ordinal, message, tokens, nodes,"
                           " stubbed, created) VALUES(?,?,?,?,?,?,?)",
                           -1, &st, NULL) != SQLITE_OK) {
        rc = store_failed(s, err, "cut");
        goto done;
    }
    sqlite3_bind_text(st, 1, in->anchor_entry, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, in->anchor_ordinal);
    sqlite3_bind_text(st, 3, in->message, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 4, tokens);
    sqlite3_bind_text(st, 5, in->nodes_json, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 6, in->stubbed);
    sqlite3_bind_int64(st, 7, (sqlite3_int64)time(NULL) * 1000);
    if ((rc = store_step_done(s, st, "cut", err)) != LC_OK) goto done;
    *out_id = sqlite3_last_insert_rowid(s->db);
done:
    sqlite3_finalize(st);
    return rc;
}

int store_pin_get(store *s, store_pin *out, char **err)
{
    sqlite3_stmt *st = NULL;
    int rc = LC_NOTFOUND;
    memset(out, 0, sizeof *out);
    if (sqlite3_prepare_v2(s->db, "SELECT cut_id, applied_tokens, window FROM lcm_pin WHERE id = 1", -1, &st,
                           NULL) != SQLITE_OK) {
        rc = store_failed(s, err, "pin");
        goto done;
    }
    int step = sqlite3_step(st);
    if (step == SQLITE_ROW) {
        out->cut_id = sqlite3_column_int64(st, 0);
        out->applied_tokens = (long)sqlite3_column_int64(st, 1);
        out->window = (long)sqlite3_column_int64(st, 2);
        rc = LC_OK;
    } else if (step != SQLITE_DONE) {
        rc = store_failed(s, err, "pin");
    }
done:
    sqlite3_finalize(st);
    return rc;
}

int store_pin_set(store *s, const store_pin *pin, char **err)
{
    sqlite3_stmt *st = NULL;
    int rc = LC_OK;
    if (sqlite3_prepare_v2(s->db,
                           "INSERT OR REPLACE INTO lcm_pin(id, cut_id, applied_tokens, window, updated)"
                           " VALUES(1,?,?,?,?)",
                           -1, &st, NULL) != SQLITE_OK) {
        rc = store_failed(s, err, "pin");
        goto done;
    }
    sqlite3_bind_int64(st, 1, pin->cut_id);
    sqlite3_bind_int64(st, 2, pin->applied_tokens);
    sqlite3_bind_int64(st, 3, pin->window);
    sqlite3_bind_int64(st, 4, (sqlite3_int64)time(NULL) * 1000);
    rc = store_step_done(s, st, "pin", err);
done:
    sqlite3_finalize(st);
    return rc;
}

int store_pin_clear(store *s, char **err)
{
    return store_exec(s, "DELETE FROM lcm_pin", err);
}

/* ---- the DAG's reads and its bookkeeping ---------------------------------------------------- */

/* Step `st` (columns: ordinal, entry_id, role, tokens, uncovered, then text when
 * `with_text`) and hand each row to `visit`. */
static int store_walk_msgs(store *s, sqlite3_stmt *st, const char *what, int with_text, store_msg_visit visit,
                           void *ud, int *stopped, char **err)
{
    int rc = LC_OK, step;
    if (stopped) *stopped = 0;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        store_dag_msg m = {0};
        m.ordinal = sqlite3_column_int64(st, 0);
        m.entry_id = (const char *)sqlite3_column_text(st, 1);
        m.role = (const char *)sqlite3_column_text(st, 2);
        m.tokens = sqlite3_column_int64(st, 3);
        m.uncovered = sqlite3_column_int(st, 4);
        if (with_text) m.text = (const char *)sqlite3_column_text(st, 5);
        int v = visit(ud, &m, err);
        if (v == STORE_VISIT_STOP) {
            if (stopped) *stopped = 1;
            return LC_OK;
        }
        if (v != LC_OK) return v;
    }
    if (step != SQLITE_DONE) rc = store_failed(s, err, what);
    return rc;
}

int store_dag_walk_tail(store *s, store_msg_visit visit, void *ud, int *stopped, char **err)
{
    sqlite3_stmt *st = NULL;
    int rc;
    if (sqlite3_prepare_v2(s->db,
                           "SELECT m.ordinal, m.entry_id, m.role, m.tokens, m.role NOT IN (" STORE_DAG_EXCLUDED_ROLES
                           ") AND " STORE_UNCOVERED("m") " FROM messages m WHERE m.removed = 0 ORDER BY m.ordinal DESC",
                           -1, &st, NULL) != SQLITE_OK)
        rc = store_failed(s, err, "fresh tail");
    else
        rc = store_walk_msgs(s, st, "fresh tail", 0, visit, ud, stopped, err);
    sqlite3_finalize(st);
    return rc;
}

int store_walk_newest(store *s, store_msg_visit visit, void *ud, int *stopped, char **err)
{
    sqlite3_stmt *st = NULL;
    int rc;
    if (sqlite3_prepare_v2(s->db,
                           "SELECT m.ordinal, m.entry_id, m.role, m.tokens, 0, m.text FROM messages m"
                           " WHERE m.removed = 0 ORDER BY m.ordinal DESC, m.id DESC",
                           -1, &st, NULL) != SQLITE_OK)
        rc = store_failed(s, err, "newest messages");
    else
        rc = store_walk_msgs(s, st, "newest messages", 1, visit, ud, stopped, err);
    sqlite3_finalize(st);
    return rc;
}

long long store_last_activity_ms(store *s)
{
    sqlite3_stmt *st = NULL;
    long long t = 0;
    if (sqlite3_prepare_v2(s->db, "SELECT created FROM messages ORDER BY ordinal DESC, id DESC LIMIT 1",
                           -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        t = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    if (t <= 0) {
        char *c = store_meta_get(s, "created");
        t = c ? atoll(c) : 0;
        free(c);
    }
    return t;
}

int store_dag_walk_uncovered(store *s, int64_t after, int64_t before, store_msg_visit visit, void *ud,
                             int *stopped, char **err)
{
    sqlite3_stmt *st = NULL;
    int rc;
    if (sqlite3_prepare_v2(s->db,
                           "SELECT m.ordinal, m.entry_id, m.role, m.tokens, 1, m.text FROM messages m"
                           " WHERE " STORE_ELIGIBLE("m") " AND m.ordinal > ?1 AND m.ordinal < ?2"
                           " AND " STORE_UNCOVERED("m") " ORDER BY m.ordinal",
                           -1, &st, NULL) != SQLITE_OK) {
        rc = store_failed(s, err, "uncovered messages");
    } else {
        sqlite3_bind_int64(st, 1, after);
        sqlite3_bind_int64(st, 2, before);
        rc = store_walk_msgs(s, st, "uncovered messages", 1, visit, ud, stopped, err);
    }
    sqlite3_finalize(st);
    return rc;
}

int store_dag_count_uncovered(store *s, int64_t from, int64_t before, int64_t *count, char **err)
{
    sqlite3_stmt *st = NULL;
    int rc = LC_OK;
    *count = 0;
    if (sqlite3_prepare_v2(s->db,
                           "SELECT count(*) FROM messages m WHERE " STORE_ELIGIBLE("m")
                           " AND m.ordinal >= ?2 AND (?1 <= 0 OR m.ordinal < ?1) AND " STORE_UNCOVERED("m"),
                           -1, &st, NULL) != SQLITE_OK) {
        rc = store_failed(s, err, "coverage");
        goto done;
    }
    sqlite3_bind_int64(st, 1, before);
    sqlite3_bind_int64(st, 2, from);
    if (sqlite3_step(st) != SQLITE_ROW) {
        rc = store_failed(s, err, "coverage");
        goto done;
    }
    *count = sqlite3_column_int64(st, 0);
done:
    sqlite3_finalize(st);
    return rc;
}

/* Step `st` (columns: id, depth, kind, text, then the span's when `spans`) through `visit`. */
static int store_walk_nodes(store *s, sqlite3_stmt *st, const char *what, int spans, store_node_visit visit,
                            void *ud, char **err)
{
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        store_node n = {0};
        const char *kind = (const char *)sqlite3_column_text(st, 2);
        n.id = sqlite3_column_int64(st, 0);
        n.depth = sqlite3_column_int(st, 1);
        n.leaf = kind && strcmp(kind, "leaf") == 0;
        n.text = (const char *)sqlite3_column_text(st, 3);
        if (spans) {
            n.tiers_json = (const char *)sqlite3_column_text(st, 4);
            n.tokens = sqlite3_column_int64(st, 5);
            n.first_ordinal = sqlite3_column_int64(st, 6);
            n.last_ordinal = sqlite3_column_int64(st, 7);
            n.first_entry = (const char *)sqlite3_column_text(st, 8);
            n.last_entry = (const char *)sqlite3_column_text(st, 9);
            n.entry_count = sqlite3_column_int64(st, 10);
        }
        int v = visit(ud, &n, err);
        if (v == STORE_VISIT_STOP) return LC_OK;
        if (v != LC_OK) return v;
    }
    return step == SQLITE_DONE ? LC_OK : store_failed(s, err, what);
}

int store_dag_walk_frontier(store *s, store_node_visit visit, void *ud, char **err)
{
    sqlite3_stmt *st = NULL;
    int rc;
    if (sqlite3_prepare_v2(s->db,
                           "SELECT s.id, s.depth, s.kind, s.text, s.tiers, s.tokens, sp.first_ordinal,"
                           " sp.last_ordinal, sp.first_entry, sp.last_entry, sp.entry_count"
                           " FROM summaries s JOIN summary_spans sp ON sp.summary_id = s.id"
                           " WHERE NOT EXISTS (SELECT 1 FROM summary_children c WHERE c.child_id = s.id)"
                           " ORDER BY sp.first_ordinal, s.id",
                           -1, &st, NULL) != SQLITE_OK)
        rc = store_failed(s, err, "frontier");
    else
        rc = store_walk_nodes(s, st, "frontier", 1, visit, ud, err);
    sqlite3_finalize(st);
    return rc;
}

int store_dag_walk_prefixed(store *s, const char *prefix, store_node_visit visit, void *ud, char **err)
{
    sqlite3_stmt *st = NULL;
    int rc;
    if (sqlite3_prepare_v2(s->db, "SELECT id, depth, kind, text FROM summaries WHERE substr(text, 1, ?) = ? ORDER BY id",
                           -1, &st, NULL) != SQLITE_OK) {
        rc = store_failed(s, err, "summaries");
    } else {
        sqlite3_bind_int(st, 1, (int)strlen(prefix));
        sqlite3_bind_text(st, 2, prefix, -1, SQLITE_STATIC);
        rc = store_walk_nodes(s, st, "summaries", 0, visit, ud, err);
    }
    sqlite3_finalize(st);
    return rc;
}

int store_dag_walk_source(store *s, int64_t id, int leaf, store_msg_visit visit, void *ud, char **err)
{
    sqlite3_stmt *st = NULL;
    int rc;
    const char *sql = leaf ? "SELECT m.ordinal, m.entry_id, m.role, m.tokens, 0, m.text FROM summary_messages sm"
                             " JOIN messages m ON m.entry_id = sm.entry_id WHERE sm.summary_id = ? ORDER BY sm.position"
                           : "SELECT 0, '', '', s.tokens, 0, s.text FROM summary_children c JOIN summaries s"
                             " ON s.id = c.child_id WHERE c.parent_id = ? ORDER BY c.position";
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) {
        rc = store_failed(s, err, "summary source");
    } else {
        sqlite3_bind_int64(st, 1, id);
        rc = store_walk_msgs(s, st, "summary source", 1, visit, ud, NULL, err);
    }
    sqlite3_finalize(st);
    return rc;
}

int64_t store_run_begin(store *s, const char *kind)
{
    sqlite3_stmt *st = NULL;
    int64_t id = 0;
    if (sqlite3_prepare_v2(s->db, "INSERT INTO runs(kind, pid, started) VALUES(?,?,?)", -1, &st, NULL) ==
        SQLITE_OK) {
        sqlite3_bind_text(st, 1, kind, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, (sqlite3_int64)getpid());
        sqlite3_bind_int64(st, 3, (sqlite3_int64)time(NULL) * 1000);
        if (sqlite3_step(st) == SQLITE_DONE) id = sqlite3_last_insert_rowid(s->db);
    }
    sqlite3_finalize(st);
    return id;
}

void store_run_end(store *s, int64_t id, const char *status)
{
    sqlite3_stmt *st = NULL;
    if (id <= 0) return;
    if (sqlite3_prepare_v2(s->db, "UPDATE runs SET finished = ?, status = ? WHERE id = ?", -1, &st, NULL) ==
        SQLITE_OK) {
        sqlite3_bind_int64(st, 1, (sqlite3_int64)time(NULL) * 1000);
        sqlite3_bind_text(st, 2, status, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 3, id);
        sqlite3_step(st);
    }
    sqlite3_finalize(st);
}

int store_event_add(store *s, const char *kind, const char *data_json, char **err)
{
    sqlite3_stmt *st = NULL;
    int rc;
    if (sqlite3_prepare_v2(s->db, "INSERT INTO lcm_events(kind, data, created) VALUES(?,?,?)", -1, &st, NULL) !=
        SQLITE_OK) {
        rc = store_failed(s, err, "event");
    } else {
        sqlite3_bind_text(st, 1, kind, -1, SQLITE_STATIC);
        if (data_json) sqlite3_bind_text(st, 2, data_json, -1, SQLITE_STATIC);
        else sqlite3_bind_null(st, 2);
        sqlite3_bind_int64(st, 3, (sqlite3_int64)time(NULL) * 1000);
        rc = store_step_done(s, st, "event", err);
    }
    sqlite3_finalize(st);
    return rc;
}

int64_t store_event_count(store *s, const char *kind)
{
    sqlite3_stmt *st = NULL;
    int64_t n = 0;
    if (sqlite3_prepare_v2(s->db, "SELECT count(*) FROM lcm_events WHERE kind = ?", -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, kind, -1, SQLITE_STATIC);
        if (sqlite3_step(st) == SQLITE_ROW) n = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    return n;
}
