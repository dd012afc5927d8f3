/*
 * store_sqlite.c -- the SQLite backend's connection: open (through store_sqlite_file.c's
 * private folder and file and its damage check; busy waits), read-only open, close, the schema and its
 * forward migrations, the DAG-progress triggers, meta, the store's counts, and the one
 * way a failed statement becomes an engine error (busy and not-a-database noted on the
 * way), and the backend's two tables (store_backend.h: store_backend, store_methods). Ingest and
 * reads live in store_sqlite_msgs.c, the DAG's rows in store_sqlite_dag.c, recall's
 * primitives in store_sqlite_search.c, maint's in store_sqlite_admin.c, hybrid recall's
 * vectors in store_sqlite_vec.c; all share the
 * private store_sqlite_int.h.
 */
#include "store.h"
#include "store_sqlite.h"
#include "store_sqlite_int.h"
#include "store_sqlite_file.h"
#include "store_sqlite_tok.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

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
    /* 2 -> 3: hybrid recall's embeddings, one per message and per summary, each with the
     * model that made it (a switch of model is visible row by row, and re-embeds only when
     * asked). A vector leaves with its row; a summary's also when its text changes (heal
     * re-derives a node in place), since it no longer describes the text. */
    "CREATE TABLE IF NOT EXISTS message_vectors("
    "  message_id INTEGER PRIMARY KEY REFERENCES messages(id) ON DELETE CASCADE,"
    "  entry_id TEXT NOT NULL,"
    "  model TEXT NOT NULL,"
    "  dim INTEGER NOT NULL,"
    "  vec BLOB NOT NULL,"
    "  created INTEGER NOT NULL);"
    "CREATE TABLE IF NOT EXISTS summary_vectors("
    "  summary_id INTEGER PRIMARY KEY REFERENCES summaries(id) ON DELETE CASCADE,"
    "  model TEXT NOT NULL,"
    "  dim INTEGER NOT NULL,"
    "  vec BLOB NOT NULL,"
    "  created INTEGER NOT NULL);"
    "CREATE INDEX IF NOT EXISTS message_vectors_model ON message_vectors(model);"
    "CREATE INDEX IF NOT EXISTS summary_vectors_model ON summary_vectors(model);"
    "CREATE TRIGGER IF NOT EXISTS summary_vectors_stale AFTER UPDATE OF text ON summaries"
    " BEGIN DELETE FROM summary_vectors WHERE summary_id = new.id; END;",
    /* 3 -> 4: a message's raw_json may be a BLOB, its verbatim JSON packed against the
     * row's text and payload (store_sqlite_raw.c); a TEXT value is the JSON as it is, so
     * the rows already stored stay as they are and nothing is rewritten. The step itself
     * changes no table: the version is what keeps builds that would read a packed value
     * as text away from the store. */
    "/* raw_json: TEXT verbatim or BLOB packed */",
    /* 4 -> 5: the index holds what a person reads, in any script. messages_fts gains a
     * column: `text` (the message's words: its text, tool calls' arguments as decoded
     * "key: value" lines) and `thinking` (its thinking blocks), so a query reaches thinking
     * and `{text} : (...)` leaves it out; recall's MATCH expressions name these columns.
     * Both tables use the tokenizer 'porter lcm' (store_sqlite_tok.h: unicode61's words,
     * CJK bigrams, FTS5's porter stems). Every message is indexed again from its JSON
     * (store_migration_steps), in this same transaction: a crash leaves the old index
     * or the new one. */
    "DROP TABLE IF EXISTS messages_fts;"
    "CREATE VIRTUAL TABLE messages_fts USING fts5(text, thinking, content='', tokenize='porter lcm');"
    "DROP TABLE IF EXISTS summaries_fts;"
    "CREATE VIRTUAL TABLE summaries_fts USING fts5(text, content='', tokenize='porter lcm');"
    "INSERT INTO summaries_fts(rowid, text) SELECT id, text FROM summaries;",
    /* 5 -> 6: beside each stem, the word as written when its stem differs (tokenizer
     * 'lcm_forms porter lcm', store_sqlite_tok.h), so recall ranks the form a query wrote
     * above the word's other forms ("importing" above the many "import"s). Reindexed as 5 was. */
    "DROP TABLE IF EXISTS messages_fts;"
    "CREATE VIRTUAL TABLE messages_fts USING fts5(text, thinking, content='', tokenize='lcm_forms porter lcm');"
    "DROP TABLE IF EXISTS summaries_fts;"
    "CREATE VIRTUAL TABLE summaries_fts USING fts5(text, content='', tokenize='lcm_forms porter lcm');"
    "INSERT INTO summaries_fts(rowid, text) SELECT id, text FROM summaries;",
};

/* What a migration does beyond its SQL, run after it in the same transaction (NULL: nothing). */
static int (*const store_migration_steps[])(store *s, char **err) = {
    [4] = store_sqlite_reindex_messages,
    [5] = store_sqlite_reindex_messages,
};
_Static_assert(sizeof store_migrations / sizeof store_migrations[0] == STORE_SCHEMA_VERSION,
               "one migration per schema version");

/* The DAG progress numbers (store.h) follow every write on this connection. TEMP triggers:
 * they are not part of the recorded schema (other builds and read-only openers never see
 * them), yet they fire for every writer that shares the connection (ingest, tree moves,
 * the DAG, repair). Values live in meta as text, hence the casts. */
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

int store_sqlite_progress_triggers(store *s, char **err)
{
    int rc = store_sqlite_exec(s, store_progress_triggers, err);
    return rc == LC_OK ? store_sqlite_vec_triggers(s, err) : rc;
}

/* Remember why a statement failed, so store_open can tell "try again later" (busy) and
 * "this file is not a database" (doctor --repair) from other failures. */
static void store_note_error(store *s, int code)
{
    code &= 0xff;
    if (code == SQLITE_BUSY || code == SQLITE_LOCKED) s->busy = 1;
    if (code == SQLITE_NOTADB || code == SQLITE_CORRUPT) s->notadb = 1;
}

/* SQLite's out-of-memory is the engine's: a caller that tells it apart (a retry later, a
 * message saying so) sees LC_NOMEM, as from any other allocation. */
static int store_code_of(int sqlite_code)
{
    return (sqlite_code & 0xff) == SQLITE_NOMEM ? LC_NOMEM : LC_ERR;
}

int store_sqlite_err(sqlite3 *db, char **err, const char *who, const char *what)
{
    return lc_errf(err, db ? store_code_of(sqlite3_errcode(db)) : LC_NOMEM, "%s: %s: %s", who, what,
                   db ? sqlite3_errmsg(db) : "out of memory");
}

int store_sqlite_failed(store *s, char **err, const char *what)
{
    store_note_error(s, sqlite3_extended_errcode(s->db));
    return store_sqlite_err(s->db, err, "store", what);
}

int store_sqlite_exec(store *s, const char *sql, char **err)
{
    char *msg = NULL;
    int code = sqlite3_exec(s->db, sql, NULL, NULL, &msg);
    if (code != SQLITE_OK) {
        store_note_error(s, code);
        int rc = lc_errf(err, store_code_of(code), "store: %s", msg ? msg : sqlite3_errmsg(s->db));
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

int store_sqlite_schema_version(store *s) { return store_pragma_int(s, "PRAGMA user_version"); }

/* Bring the schema to STORE_SCHEMA_VERSION in one write transaction. The version read
 * before it is only a fast path: a second process creating the same new store (two hosts,
 * a host and `lcm import`) may have migrated it while this one waited for the lock, so
 * the version is read again under the lock and only what is still missing is applied. */
static int store_migrate(store *s, char **err)
{
    int target = (int)(sizeof store_migrations / sizeof store_migrations[0]);
    int cur = store_sqlite_schema_version(s);
    if (cur < 0) return store_sqlite_failed(s, err, "reading user_version");
    if (cur == target) return LC_OK;
    int rc = store_sqlite_exec(s, "BEGIN IMMEDIATE", err);
    if (rc) return rc;
    if ((cur = store_sqlite_schema_version(s)) < 0) rc = store_sqlite_failed(s, err, "reading user_version");
    else if (cur > target)
        rc = lc_errf(err, LC_INVALID, "store: %s has schema version %d, newer than this build's %d",
                     s->path, cur, target);
    for (int v = cur; rc == LC_OK && v < target; v++) {
        rc = store_sqlite_exec(s, store_migrations[v], err);
        if (rc == LC_OK && (size_t)v < sizeof store_migration_steps / sizeof store_migration_steps[0] &&
            store_migration_steps[v])
            rc = store_migration_steps[v](s, err);
    }
    if (rc == LC_OK && cur < target) {
        char sql[64];
        snprintf(sql, sizeof sql, "PRAGMA user_version=%d", target);
        rc = store_sqlite_exec(s, sql, err);
    }
    if (rc == LC_OK) rc = store_sqlite_exec(s, "COMMIT", err);
    if (rc) sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

static int store_prepare(store *s, sqlite3_stmt **st, const char *sql, char **err)
{
    if (sqlite3_prepare_v3(s->db, sql, -1, SQLITE_PREPARE_PERSISTENT, st, NULL) != SQLITE_OK)
        return store_sqlite_failed(s, err, "prepare");
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
        rc = store_sqlite_failed(s, err, "meta");
        goto done;
    }
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, value ? value : "", -1, SQLITE_STATIC);
    if (sqlite3_step(st) != SQLITE_DONE) rc = store_sqlite_failed(s, err, "meta");
done:
    sqlite3_finalize(st);
    return rc;
}

static int store_meta_set(store *s, const char *key, const char *value, char **err)
{
    return store_meta_write(s, key, value, 0, err);
}

int store_sqlite_meta_put(store *s, const char *key, const char *value, char **err)
{
    return store_meta_write(s, key, value, 1, err);
}

char *store_sqlite_meta_get(store *s, const char *key)
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

static store *store_alloc(const char *path)
{
    store *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->methods = &store_sqlite_methods;
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
        rc = store_sqlite_failed(s, err, "runs");
        goto done;
    }
    while (sqlite3_step(st) == SQLITE_ROW) {
        pid_t pid = (pid_t)sqlite3_column_int64(st, 1);
        if (pid == getpid() || (pid > 0 && (kill(pid, 0) == 0 || errno == EPERM))) continue;
        sqlite3_bind_int64(up, 1, (sqlite3_int64)time(NULL) * 1000);
        sqlite3_bind_int64(up, 2, sqlite3_column_int64(st, 0));
        if (sqlite3_step(up) != SQLITE_DONE) {
            rc = store_sqlite_failed(s, err, "reap run");
            goto done;
        }
        sqlite3_reset(up);
    }
done:
    sqlite3_finalize(st);
    sqlite3_finalize(up);
    return rc;
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
    /* The agent home may itself be a link (a home moved elsewhere): the user's choice. */
    if ((rc = lc_mkdir_p(agent_home, 0700, err)) != LC_OK) goto done;
    {
        char *name = lc_asprintf("%s.sqlite", session_id);
        rc = name ? store_sqlite_file_private(dir, name, "store", 1, &dir_was, &file_was, err)
                  : lc_errf(err, LC_NOMEM, "store: out of memory");
        free(name);
        if (rc != LC_OK) goto done;
    }
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
        rc = store_sqlite_failed(s, err, "open");
        goto done;
    }
    sqlite3_busy_timeout(s->db, busy_ms > 0 ? (int)busy_ms : 1);
    /* The index's words are the tokenizer's: registered before any statement reads it. */
    if ((rc = store_sqlite_tok_register(s->db, err)) != LC_OK) goto done;
    /* Incremental auto-vacuum: a bulk ingest's full-text merges leave free pages, which its
     * commit hands back (store_sqlite_bulk_commit). It can only be chosen before the first
     * table, so it applies to stores created from now on; on others it is a no-op. */
    if ((rc = store_sqlite_exec(s, "PRAGMA auto_vacuum=INCREMENTAL; PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
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
    if ((rc = store_sqlite_progress_triggers(s, err)) != LC_OK) goto done;
    if (!(s->raw = store_sqlite_raw_new())) {
        rc = lc_errf(err, LC_NOMEM, "store: out of memory");
        goto done;
    }
    /* The statements every append reuses, prepared once for the connection's life. */
    const struct {
        sqlite3_stmt **st;
        const char *sql;
    } kept[] = {
        {&s->st_exists, "SELECT ordinal FROM messages WHERE entry_id = ?"},
        {&s->st_insert, "INSERT OR IGNORE INTO messages(entry_id, ordinal, role, text, chars,"
                        " tokens, raw_json, payload, tool_name, tool_path, created)"
                        " VALUES(?,?,?,?,?,?,?,?,?,?,?)"},
        {&s->st_fts, "INSERT INTO messages_fts(rowid, text, thinking) VALUES(?, ?, ?)"},
        {&s->st_handle, "INSERT OR IGNORE INTO file_handles(entry_id, path, content_id, kind,"
                        " chars, preview, summary) VALUES(?,?,?,?,?,?,?)"},
    };
    for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++)
        if ((rc = store_prepare(s, kept[i].st, kept[i].sql, err)) != LC_OK) goto done;
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
    store_sqlite_close(s);
    free(dir);
    free(path);
    return rc;
}

int store_sqlite_open_wait(const char *agent_home, const char *session_id, const char *session_cwd,
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

int store_sqlite_open_readonly(const char *db_path, store **out, int *schema_version, char **err)
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
        rc = store_sqlite_failed(s, err, "open read-only");
        goto done;
    }
    sqlite3_busy_timeout(s->db, 1000);
    if ((rc = store_sqlite_tok_register(s->db, err)) != LC_OK) goto done;
    if ((rc = store_sqlite_exec(s, "PRAGMA query_only=1", err)) != LC_OK) goto done;
    int v = store_sqlite_schema_version(s);
    if (v < 0) {
        rc = store_sqlite_failed(s, err, "reading user_version");
        goto done;
    }
    if (schema_version) *schema_version = v;
    *out = s;
    s = NULL;
done:
    store_sqlite_close(s);
    return rc;
}

void store_sqlite_close(store *s)
{
    if (!s) return;
    store_sqlite_bulk_reset(s);
    store_sqlite_bulk_journal_end(s);
    sqlite3_finalize(s->st_exists);
    sqlite3_finalize(s->st_insert);
    sqlite3_finalize(s->st_fts);
    sqlite3_finalize(s->st_handle);
    sqlite3_finalize(s->st_cover_leaf);
    sqlite3_finalize(s->st_cover_up);
    sqlite3_close(s->db);
    store_derive_calls_free(s->calls);
    store_sqlite_raw_free(s->raw);
    LC_FREE(s->last_entry, s->mode_note, s->path, s);
}

void store_sqlite_set_options(store *s, const store_options *opt)
{
    /* redactAtIngest, once on (store_open reads the home's lcm.json), stays on. */
    int redact = s->opt.redact_at_ingest;
    s->opt = *opt;
    s->opt.redact_at_ingest |= redact;
    if (!s->opt.large_file_chars) s->opt.large_file_chars = STORE_LARGE_FILE_CHARS;
}

sqlite3 *store_db(store *s) { return s->db; }
const char *store_sqlite_mode_note(const store *s) { return s ? s->mode_note : NULL; }

const char *store_sqlite_path(const store *s) { return s->path; }

int64_t store_sqlite_message_count(store *s) { return store_sqlite_int(s, "SELECT count(*) FROM messages", -1); }

int64_t store_sqlite_int(store *s, const char *sql, int64_t dflt)
{
    sqlite3_stmt *st = NULL;
    int64_t v = dflt;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW &&
        sqlite3_column_type(st, 0) != SQLITE_NULL)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

int64_t store_sqlite_summary_count(store *s)
{
    /* An older-generation store may predate the table: no summaries, not an error. */
    if (!store_sqlite_int(s, "SELECT count(*) FROM sqlite_master WHERE type='table' AND name='summaries'", 0)) return 0;
    return store_sqlite_int(s, "SELECT count(*) FROM summaries", 0);
}

int64_t store_sqlite_db_bytes(store *s)
{
    return store_sqlite_int(s, "SELECT page_count * page_size FROM pragma_page_count, pragma_page_size", 0);
}


/* A column as a malloc'd string (NULL for SQL NULL); bytes, not C-string length, so an
 * embedded NUL cannot shorten it. */
char *store_sqlite_col_dup(sqlite3_stmt *st, int col)
{
    if (sqlite3_column_type(st, col) == SQLITE_NULL) return NULL;
    const char *p = (const char *)sqlite3_column_text(st, col);
    return lc_strndup(p ? p : "", (size_t)sqlite3_column_bytes(st, col));
}

/* SQLite's own default: a commit that leaves the log past this many pages checkpoints. */
#define STORE_SQLITE_CKPT_PAGES 1000
/* Deferred: the bound past which this connection checkpoints after all (32 MB of 4 kB
 * pages), should the other connection stop committing. */
#define STORE_SQLITE_CKPT_DEFERRED 8000

void store_sqlite_checkpoints_defer(store *s, int on)
{
    char sql[64];
    if (!s || !s->db || s->read_only) return;
    snprintf(sql, sizeof sql, "PRAGMA wal_autocheckpoint=%d", on ? STORE_SQLITE_CKPT_DEFERRED : STORE_SQLITE_CKPT_PAGES);
    sqlite3_exec(s->db, sql, NULL, NULL, NULL);
}

/* ---- the backend's tables ------------------------------------------------------------------ */

static const char *store_sqlite_version(void) { return sqlite3_libversion(); }

const store_backend store_sqlite_backend = {
    STORE_TABLE_HEAD(store_backend, "sqlite"),
    .x_open = store_sqlite_open_wait,
    .x_open_readonly = store_sqlite_open_readonly,
    .x_version = store_sqlite_version,
    .x_index_open = store_sqlite_index_open,
};

#define STORE_SQLITE_SLOT(ret, name, params) .x_##name = store_sqlite_##name,
const store_methods store_sqlite_methods = {
    STORE_TABLE_HEAD(store_methods, "sqlite"),
    STORE_SLOTS_CORE(STORE_SQLITE_SLOT)
    STORE_SLOTS_TX(STORE_SQLITE_SLOT)
    STORE_SLOTS_BACKUP(STORE_SQLITE_SLOT)
    STORE_SLOTS_ADMIN(STORE_SQLITE_SLOT)
    STORE_SLOTS_V2(STORE_SQLITE_SLOT)
    STORE_SLOTS_LEASE(STORE_SQLITE_SLOT) /* runs stay judged by pid: a file has one machine */
    STORE_SLOTS_V4(STORE_SQLITE_SLOT)
    STORE_SLOTS_VEC_GET(STORE_SQLITE_SLOT)
    STORE_SLOTS_CKPT(STORE_SQLITE_SLOT)
};
