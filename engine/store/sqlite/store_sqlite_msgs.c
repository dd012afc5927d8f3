/*
 * store_sqlite_msgs.c -- the SQLite backend's messages: passive ingest (derived text, the
 * FTS row, file handles for large tool results, the recent tool calls that name their
 * paths), the removed-branch marks of a tree move, and the read of one message.
 */
#include "store.h"
#include "store_derive.h"
#include "store_sqlite_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "files.h"
#include "message.h"
#include "util.h"

/* ---- ingest ----------------------------------------------------------------------- */

/* Held-back full-text rows of a bulk ingest past this many bytes go into the index before
 * the next batch (memory). */
#define STORE_BULK_FTS_BYTES (64u << 20)

/* The ordinal of a stored entry, or -1 (a failed read counts as not stored: the insert
 * ignores an entry that is). */
static int64_t store_lookup_ordinal(store *s, const char *entry_id, char **err)
{
    (void)err;
    int64_t ord = -1;
    sqlite3_bind_text(s->st_exists, 1, entry_id, -1, SQLITE_STATIC);
    if (sqlite3_step(s->st_exists) == SQLITE_ROW) ord = sqlite3_column_int64(s->st_exists, 0);
    sqlite3_reset(s->st_exists);
    sqlite3_clear_bindings(s->st_exists);
    return ord;
}

static char *store_find_call_path(store *s, const char *call_id)
{
    char *path = NULL;
    if (store_derive_call_path(s->calls, call_id, &path)) return path;
    /* The call was ingested by an earlier process: read the newest assistant rows. */
    sqlite3_stmt *st = NULL;
    int found = 0;
    if (sqlite3_prepare_v2(s->db,
                           "SELECT raw_json, text, payload FROM messages WHERE role = 'assistant'"
                           " ORDER BY id DESC LIMIT 16",
                           -1, &st, NULL) != SQLITE_OK)
        goto done;
    while (!found && sqlite3_step(st) == SQLITE_ROW) {
        char *json = NULL;
        size_t len = 0;
        if (store_sqlite_raw_column(st, 0, 1, 2, &json, &len, NULL) != LC_OK) continue;
        cJSON *m = cJSON_ParseWithLength(json, len);
        free(json);
        if (!m) continue;
        store_derive_note_calls(s->calls, &s->call_next, m);
        cJSON_Delete(m);
        found = store_derive_call_path(s->calls, call_id, &path);
    }
done:
    sqlite3_finalize(st);
    return path;
}

static int store_record_handle(store *s, const char *entry_id, const char *path,
                               const char *text, size_t len, size_t chars, char **err)
{
    store_derived_handle h;
    int rc = store_derive_handle(&h, path, text, len, err);
    if (rc != LC_OK) goto done;
    sqlite3_stmt *st = s->st_handle;
    sqlite3_bind_text(st, 1, entry_id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, path, -1, SQLITE_STATIC); /* a NULL text binds SQL NULL */
    sqlite3_bind_text(st, 3, h.cid, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, files_kind_name(h.kind), -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 5, (sqlite3_int64)chars);
    sqlite3_bind_text(st, 6, h.preview, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 7, h.summary, -1, SQLITE_STATIC);
    rc = store_sqlite_step_done(s, st, "file handle", err);
done:
    store_derive_handle_free(&h);
    return rc;
}

static int store_fts_insert(store *s, int64_t rowid, const char *text, size_t len, const char *thinking,
                            size_t thinking_len, char **err)
{
    sqlite3_bind_int64(s->st_fts, 1, rowid);
    sqlite3_bind_text(s->st_fts, 2, text, (int)len, SQLITE_STATIC);
    sqlite3_bind_text(s->st_fts, 3, thinking, (int)thinking_len, SQLITE_STATIC); /* NULL: none */
    return store_sqlite_step_done(s, s->st_fts, "index message", err);
}

/* `*text` (text_len bytes) as the held row's `len` bytes: taken over when whole (*text is
 * then NULL), else copied. */
static char *store_fts_take(char **text, size_t text_len, size_t len)
{
    char *held = len == text_len ? *text : lc_strndup(*text, len);
    if (held == *text) *text = NULL;
    return held;
}

/* A full-text row, held back: FTS5 writes its pending terms out as a new segment at every
 * savepoint, so rows indexed message by message (or a bulk's batch by batch) rewrote the
 * index over and over; held back, they go in at the batch's end (a bulk's: its commit) in
 * one stream. */
static int store_fts_hold(store *s, int64_t rowid, char **text, size_t text_len, size_t len, char **thinking,
                          size_t thinking_full, size_t thinking_len, char **err)
{
    if (s->fts_n == s->fts_cap) {
        size_t cap = s->fts_cap ? s->fts_cap * 2 : 1024;
        store_fts_row *v = realloc(s->fts_rows, cap * sizeof *v);
        if (!v) return lc_errf(err, LC_NOMEM, "store: out of memory");
        s->fts_rows = v;
        s->fts_cap = cap;
    }
    store_fts_row r = {rowid, store_fts_take(text, text_len, len), len, NULL, thinking_len};
    if (r.text && *thinking) r.thinking = store_fts_take(thinking, thinking_full, thinking_len);
    if (!r.text || (*thinking && !r.thinking)) {
        free(r.text);
        return lc_errf(err, LC_NOMEM, "store: out of memory");
    }
    s->fts_rows[s->fts_n++] = r;
    s->fts_bytes += len + thinking_len;
    return LC_OK;
}

/* Drop the held-back rows from `from` on (a batch undone, or all of them). */
static void store_fts_drop(store *s, size_t from)
{
    for (size_t i = from; i < s->fts_n; i++) {
        s->fts_bytes -= s->fts_rows[i].len + s->fts_rows[i].thinking_len;
        free(s->fts_rows[i].text);
        free(s->fts_rows[i].thinking);
    }
    if (from < s->fts_n) s->fts_n = from;
}

/* The held-back rows into the index, in the order they arrived. */
static int store_fts_release(store *s, char **err)
{
    int rc = LC_OK;
    for (size_t i = 0; i < s->fts_n && rc == LC_OK; i++) {
        const store_fts_row *r = &s->fts_rows[i];
        rc = store_fts_insert(s, r->rowid, r->text, r->len, r->thinking, r->thinking_len, err);
    }
    if (rc == LC_OK) store_fts_drop(s, 0);
    return rc;
}

/* Insert one message (already known to be new). *inserted = 1 when a row was written. */
static int store_insert_one(store *s, const store_msg *m, int64_t ordinal,
                            store_ingest_stats *stats, char **err)
{
    store_derived row;
    char *path = NULL;
    int rc = store_derive_row(&row, m, s->opt.redact_at_ingest, s->calls, &s->call_next, err);
    if (rc != LC_OK) goto done;
    if (row.call_id) path = store_find_call_path(s, row.call_id);
    sqlite3_stmt *st = s->st_insert;
    sqlite3_bind_text(st, 1, m->entry_id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, ordinal);
    sqlite3_bind_text(st, 3, msg_role_name(row.role), -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, row.text, (int)row.text_len, SQLITE_STATIC);
    sqlite3_bind_int64(st, 5, (sqlite3_int64)row.chars);
    sqlite3_bind_int64(st, 6, row.tokens);
    const unsigned char *packed = NULL;
    size_t packed_len = 0;
    if ((rc = store_sqlite_raw_pack(s->raw, row.json, row.json_len, row.text, row.text_len, row.payload,
                                    row.payload ? strlen(row.payload) : 0, &packed, &packed_len, err)) != LC_OK)
        goto done;
    sqlite3_bind_blob(st, 7, packed, (int)packed_len, SQLITE_STATIC);
    sqlite3_bind_text(st, 8, row.payload, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 9, row.tool_name, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 10, path, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 11, row.created);
    if ((rc = store_sqlite_step_done(s, st, "insert message", err)) != LC_OK) goto done;
    if (sqlite3_changes(s->db) == 0) goto done; /* already stored */
    sqlite3_int64 rowid = sqlite3_last_insert_rowid(s->db);
    if (stats) {
        stats->inserted++;
        stats->text_bytes += row.text_len;
    }
    if (row.role == MSG_ROLE_TOOL_RESULT && s->opt.externalize_files &&
        row.chars >= s->opt.large_file_chars) {
        if ((rc = store_record_handle(s, m->entry_id, path, row.text, row.text_len, row.chars, err)) != LC_OK)
            goto done;
        if (stats) stats->file_handles++;
    }
    /* The index holds the words a person reads (store_derive: the text, or its tool calls'
     * values), each column's first STORE_INDEX_CHARS characters: the row's count says
     * whether the text needs cutting at all. */
    char **words = row.index_text ? &row.index_text : &row.text;
    size_t wfull = row.index_text ? row.index_len : row.text_len;
    /* (No more bytes than the reach: no more characters either.) */
    size_t wlen = (!row.index_text && row.chars <= STORE_INDEX_CHARS) || wfull <= STORE_INDEX_CHARS
                      ? wfull
                      : files_utf8_prefix(*words, wfull, STORE_INDEX_CHARS);
    size_t tlen = row.thinking_len <= STORE_INDEX_CHARS
                      ? row.thinking_len
                      : files_utf8_prefix(row.thinking, row.thinking_len, STORE_INDEX_CHARS);
    /* Held back to the batch's end, bulk or not: the message insert's trigger opens a
     * statement savepoint, at which FTS5 writes its pending terms out as a segment, so
     * rows indexed as they came made a segment (and the merges after) per message. */
    rc = store_fts_hold(s, rowid, words, wfull, wlen, &row.thinking, row.thinking_len, tlen, err);
done:
    store_derive_row_free(&row);
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

int store_sqlite_ingest(store *s, const store_msg *msgs, size_t n, store_ingest_stats *stats,
                 char **err)
{
    store_ingest_stats local = {0};
    int rc = LC_OK, in_tx = 0, nested = 0;
    size_t first_new;
    int64_t ordinal;
    if (!stats) stats = &local;
    memset(stats, 0, sizeof *stats);
    if (s->read_only) return lc_errf(err, LC_INVALID, "store: opened read-only");

    /* Only what follows the newest stored entry is new (a tree move is
     * store_sqlite_mark_branch's business). */
    if (store_common_ingest_from(s, msgs, n, s->last_entry, s->last_ordinal, store_lookup_ordinal, &first_new, &ordinal,
                                 stats, err) != LC_OK)
        return LC_ERR;
    if (first_new >= n) goto done;
    if (ordinal < 0) ordinal = store_next_ordinal(s);

    /* Held-back index rows are bounded (memory): past the bound they go in now. */
    if (s->bulk && s->fts_bytes >= STORE_BULK_FTS_BYTES && (rc = store_fts_release(s, err)) != LC_OK) goto done;
    /* Inside a bulk ingest the batch runs in the bulk's transaction as it is: a savepoint
     * per batch copied every index page it touched into the statement journal and made
     * FTS5 write a segment; a failed batch fails the whole bulk instead (bulk_commit
     * rolls back to the previous commit). Inside another transaction the caller spans
     * (store_tx_begin), the batch is a savepoint, all or nothing. */
    if (!s->bulk) {
        nested = !sqlite3_get_autocommit(s->db);
        if ((rc = store_sqlite_exec(s, nested ? "SAVEPOINT store_ingest" : "BEGIN IMMEDIATE", err)) != LC_OK)
            goto done;
        in_tx = 1;
    }
    const char *newest = NULL;
    for (size_t i = first_new; i < n; i++) {
        if (!msgs[i].entry_id) continue;
        if ((rc = store_insert_one(s, &msgs[i], ordinal, stats, err)) != LC_OK) goto done;
        ordinal++;
        newest = msgs[i].entry_id;
    }
    if (!s->bulk && (rc = store_fts_release(s, err)) != LC_OK) goto done;
    if (in_tx && (rc = store_sqlite_exec(s, nested ? "RELEASE store_ingest" : "COMMIT", err)) != LC_OK) goto done;
    in_tx = 0;
    store_common_ingest_done(&s->last_entry, &s->last_ordinal, newest, ordinal - 1);
done:
    if (in_tx)
        sqlite3_exec(s->db, nested ? "ROLLBACK TO store_ingest; RELEASE store_ingest" : "ROLLBACK", NULL, NULL,
                     NULL);
    /* The rows of a batch undone are not indexed later with another's. */
    if (rc != LC_OK && !s->bulk) store_fts_drop(s, 0);
    if (rc != LC_OK && s->bulk) s->bulk_failed = 1;
    return rc;
}

/* ---- bulk ingest ------------------------------------------------------------------ */

/* The rows a bulk ingest added that the insert trigger would have counted: eligible and
 * uncovered when they arrived (nothing is covered or removed inside the bulk). */
#define STORE_BULK_ROWS(what) \
    "(SELECT " what " FROM main.messages m WHERE m.id > ?1 AND " STORE_ELIGIBLE("m") " AND " STORE_UNCOVERED("m") ")"

#define STORE_BULK_CACHE "-65536" /* KiB */
#define STORE_BULK_FTS_HASH 67108864 /* bytes of pending index terms */

static void store_bulk_pragmas_restore(store *s)
{
    char sql[96];
    snprintf(sql, sizeof sql, "PRAGMA cache_size=%lld; PRAGMA wal_autocheckpoint=%lld", (long long)s->bulk_cache,
             (long long)s->bulk_ckpt);
    sqlite3_exec(s->db, sql, NULL, NULL, NULL);
}

/* A store with no message has no reader to serve mid-import, and a rollback journal writes
 * each page the bulk appends once (pages past the file's old end need no journal), where WAL
 * writes it to the log and again at the checkpoint: a 20M-token import wrote 128 MB of log
 * for a 107 MB store. WAL comes back at the close (store_sqlite_close); an opener meanwhile
 * asks for WAL itself, which only ends the saving. synchronous=FULL: a rollback journal
 * under NORMAL can be damaged by a power cut at the wrong moment. Nothing changes when the
 * switch is refused (another connection has the store open). */
static void store_bulk_journal(store *s)
{
    sqlite3_stmt *st = NULL;
    if (s->bulk_journal || store_sqlite_int(s, "SELECT NOT EXISTS (SELECT 1 FROM messages)", 0) != 1) return;
    if (sqlite3_prepare_v2(s->db, "PRAGMA journal_mode=DELETE", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW && !strcmp((const char *)sqlite3_column_text(st, 0), "delete")) {
        s->bulk_journal = 1;
        sqlite3_exec(s->db, "PRAGMA synchronous=FULL", NULL, NULL, NULL);
    }
    sqlite3_finalize(st);
}

void store_sqlite_bulk_journal_end(store *s)
{
    if (!s->bulk_journal) return;
    s->bulk_journal = 0;
    sqlite3_exec(s->db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL", NULL, NULL, NULL);
}

/* The insert trigger runs a program per row (its WHEN and two meta updates), which cost an
 * import as much as the rows themselves; a bulk drops it (a TEMP trigger: this connection
 * only, and restored by a rollback) and store_sqlite_bulk_commit applies its sum. */
int store_sqlite_bulk_begin(store *s, char **err)
{
    int rc;
    if (s->read_only) return lc_errf(err, LC_INVALID, "store: opened read-only");
    store_bulk_journal(s);
    if ((rc = store_sqlite_exec(s, "BEGIN IMMEDIATE", err)) != LC_OK) return rc;
    s->bulk_from = store_sqlite_int(s, "SELECT coalesce(max(id), 0) FROM messages", 0);
    if ((rc = store_sqlite_exec(s, "DROP TRIGGER IF EXISTS temp.store_dag_ingest", err)) != LC_OK) {
        sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
        return rc;
    }
    /* The index pages a bulk touches stay cached (the default 2 MB re-read them). */
    s->bulk_cache = store_sqlite_int(s, "PRAGMA cache_size", -2000);
    if ((rc = store_sqlite_exec(s, "PRAGMA cache_size=" STORE_BULK_CACHE, err)) != LC_OK) {
        sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
        return rc;
    }
    /* FTS5 writes its pending terms out as a segment whenever they pass its hash size
     * (1 MB by default) and merges those segments as it goes: an import's index was built
     * and rewritten a dozen times. The setting is the index's own (it persists) and costs
     * a small writer nothing, whose pending terms go out at its commit anyway. */
    char hash_sql[96];
    snprintf(hash_sql, sizeof hash_sql, "INSERT INTO messages_fts(messages_fts, rank) VALUES('hashsize', %d)",
             STORE_BULK_FTS_HASH);
    if (store_sqlite_int(s, "SELECT coalesce((SELECT v FROM messages_fts_config WHERE k = 'hashsize'), 0)", 0) !=
            STORE_BULK_FTS_HASH &&
        (rc = store_sqlite_exec(s, hash_sql, err)) != LC_OK) {
        sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
        return rc;
    }
    /* Checkpoints wait for the close (or the next writer's commit): a checkpoint after
     * every bulk commit copied pages that the next commit rewrote again. */
    s->bulk_ckpt = store_sqlite_int(s, "PRAGMA wal_autocheckpoint", 1000);
    sqlite3_exec(s->db, "PRAGMA wal_autocheckpoint=0", NULL, NULL, NULL);
    s->bulk = 1;
    s->bulk_failed = 0;
    return LC_OK;
}

/* What the trigger would have left: the watermark at the smallest such ordinal (min over
 * rows = min of mins) and the pending tokens grown by their sum, then the trigger back
 * and the commit. Keys that are absent stay absent (the trigger updates only). */
int store_sqlite_bulk_commit(store *s, char **err)
{
    static const char *const sql[] = {
        "UPDATE meta SET value = min(CAST(value AS INTEGER), " STORE_BULK_ROWS("min(m.ordinal)") ")"
        " WHERE key = 'dag_watermark' AND EXISTS " STORE_BULK_ROWS("1"),
        "UPDATE meta SET value = CAST(value AS INTEGER) + " STORE_BULK_ROWS("sum(m.tokens)")
        " WHERE key = 'dag_pending' AND EXISTS " STORE_BULK_ROWS("1"),
    };
    int rc = s->bulk_failed ? lc_errf(err, LC_ERR, "store: a batch of the bulk ingest failed; what it wrote since the "
                                                   "previous commit is not kept")
                            : store_fts_release(s, err);
    if (s->bulk_failed) sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    for (size_t i = 0; i < sizeof sql / sizeof sql[0] && rc == LC_OK; i++) {
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(s->db, sql[i], -1, &st, NULL) != SQLITE_OK) {
            rc = store_sqlite_failed(s, err, "bulk ingest");
            break;
        }
        sqlite3_bind_int64(st, 1, s->bulk_from);
        if (sqlite3_step(st) != SQLITE_DONE) rc = store_sqlite_failed(s, err, "bulk ingest");
        sqlite3_finalize(st);
    }
    if (rc == LC_OK) rc = store_sqlite_progress_triggers(s, err);
    if (rc == LC_OK) rc = store_sqlite_exec(s, "COMMIT", err);
    /* The index writes its held-back terms at the commit and merges segments of earlier
     * commits, which frees their pages (5% of an imported store): they go back to the file
     * system, where the store was created with incremental auto-vacuum (a no-op elsewhere).
     * Its own transaction, after the commit; the rows are stored whether or not it runs. */
    if (rc == LC_OK) sqlite3_exec(s->db, "PRAGMA incremental_vacuum", NULL, NULL, NULL);
    /* A failed commit leaves the transaction to the caller's store_tx_rollback. */
    store_bulk_pragmas_restore(s);
    s->bulk = s->bulk_failed = 0;
    store_fts_drop(s, 0);
    return rc;
}

void store_sqlite_bulk_reset(store *s)
{
    if (!s->bulk && !s->fts_rows) return;
    if (s->bulk) store_bulk_pragmas_restore(s);
    s->bulk = s->bulk_failed = 0;
    store_fts_drop(s, 0);
    free(s->fts_rows);
    s->fts_rows = NULL;
    s->fts_cap = 0;
    /* What the last batches stored may have been rolled back: look it up again. */
    free(s->last_entry);
    s->last_entry = NULL;
}

/* ---- the index, whole ---------------------------------------------------------------- */

/* One stored message's words into messages_fts (`ins`), derived again from its verbatim
 * JSON as ingest derives them. A row whose JSON cannot be read (a damaged packed value,
 * which doctor reports) keeps its text's words: the index is rebuilt whatever one row holds. */
static int store_reindex_row(store *s, sqlite3_stmt *rd, sqlite3_stmt *ins, char **err)
{
    char *json = NULL, *body = NULL, *thinking = NULL, *why = NULL;
    size_t len = 0;
    cJSON *m = NULL;
    int rc = LC_OK;
    if (store_sqlite_raw_column(rd, 1, 2, 3, &json, &len, &why) != LC_OK) {
        free(why);
        json = NULL;
    }
    if (json && (m = store_derive_parse(json, len)) && (rc = msg_index_text(m, &body, &thinking)) != LC_OK) {
        rc = lc_errf(err, LC_NOMEM, "store: out of memory");
        goto done;
    }
    const char *text = body ? body : (const char *)sqlite3_column_text(rd, 2);
    size_t tlen = body ? strlen(body) : (size_t)sqlite3_column_bytes(rd, 2);
    sqlite3_bind_int64(ins, 1, sqlite3_column_int64(rd, 0));
    sqlite3_bind_text(ins, 2, text ? text : "", (int)files_utf8_prefix(text ? text : "", tlen, STORE_INDEX_CHARS),
                      SQLITE_STATIC);
    if (thinking)
        sqlite3_bind_text(ins, 3, thinking, (int)files_utf8_prefix(thinking, strlen(thinking), STORE_INDEX_CHARS),
                          SQLITE_STATIC);
    else
        sqlite3_bind_null(ins, 3);
    rc = store_sqlite_step_done(s, ins, "index message", err);
done:
    cJSON_Delete(m);
    free(json);
    free(body);
    free(thinking);
    return rc;
}

int store_sqlite_reindex_messages(store *s, char **err)
{
    sqlite3_stmt *rd = NULL, *ins = NULL;
    int rc, step = SQLITE_DONE, saved = 0;
    /* All or nothing, and one transaction also when the caller has none (a row a commit). */
    if ((rc = store_sqlite_exec(s, "SAVEPOINT store_reindex", err)) != LC_OK) return rc;
    saved = 1;
    if ((rc = store_sqlite_exec(s, "INSERT INTO messages_fts(messages_fts) VALUES('delete-all')", err)) != LC_OK ||
        (rc = store_sqlite_prepare(s, &rd, "SELECT id, raw_json, text, payload FROM messages ORDER BY id", "reindex",
                                   err)) != LC_OK ||
        (rc = store_sqlite_prepare(s, &ins, "INSERT INTO messages_fts(rowid, text, thinking) VALUES(?, ?, ?)",
                                   "reindex", err)) != LC_OK)
        goto done;
    while (rc == LC_OK && (step = sqlite3_step(rd)) == SQLITE_ROW) rc = store_reindex_row(s, rd, ins, err);
    if (rc == LC_OK && step != SQLITE_DONE) rc = store_sqlite_failed(s, err, "reindex");
done:
    sqlite3_finalize(rd);
    sqlite3_finalize(ins);
    if (saved && rc == LC_OK) rc = store_sqlite_exec(s, "RELEASE store_reindex", err);
    else if (saved)
        sqlite3_exec(s->db, "ROLLBACK TO store_reindex; RELEASE store_reindex", NULL, NULL, NULL);
    return rc;
}

/* ---- removed branches ------------------------------------------------------------- */

int store_sqlite_mark_branch(store *s, const char *const *active_ids, size_t n, size_t *marked,
                      size_t *cleared, char **err)
{
    sqlite3_stmt *st = NULL;
    int rc = LC_OK, in_tx = 0;
    if (marked) *marked = 0;
    if (cleared) *cleared = 0;
    if ((rc = store_sqlite_exec(s, "BEGIN IMMEDIATE;"
                            "CREATE TEMP TABLE IF NOT EXISTS store_active(id TEXT PRIMARY KEY);"
                            "DELETE FROM store_active;",
                         err)) != LC_OK)
        goto done;
    in_tx = 1;
    if (sqlite3_prepare_v2(s->db, "INSERT OR IGNORE INTO store_active(id) VALUES(?)", -1, &st,
                           NULL) != SQLITE_OK) {
        rc = store_sqlite_failed(s, err, "mark branch");
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        if (!active_ids[i]) continue;
        sqlite3_bind_text(st, 1, active_ids[i], -1, SQLITE_STATIC);
        if ((rc = store_sqlite_step_done(s, st, "mark branch", err)) != LC_OK) goto done;
    }
    /* The rows off the branch are found on the entry_id index (rowids only): testing
     * `removed` on every row read past each row's text and raw JSON. */
    if ((rc = store_sqlite_exec(s, "UPDATE messages SET removed = 1 WHERE removed = 0 AND id IN"
                            " (SELECT id FROM messages WHERE entry_id NOT IN (SELECT id FROM store_active))",
                         err)) != LC_OK)
        goto done;
    if (marked) *marked = (size_t)sqlite3_changes(s->db);
    if ((rc = store_sqlite_exec(s, "UPDATE messages SET removed = 0 WHERE removed = 1 AND entry_id IN"
                            " (SELECT id FROM store_active)",
                         err)) != LC_OK)
        goto done;
    if (cleared) *cleared = (size_t)sqlite3_changes(s->db);
    if ((rc = store_sqlite_exec(s, "DELETE FROM store_active; COMMIT", err)) != LC_OK) goto done;
    in_tx = 0;
done:
    sqlite3_finalize(st);
    if (in_tx) sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

int store_sqlite_set_removed(store *s, const char *const *entry_ids, size_t n, int removed, size_t *changed,
                             char **err)
{
    sqlite3_stmt *st = NULL;
    int rc = LC_OK, in_tx = 0;
    size_t n_changed = 0; /* reported once committed */
    if ((rc = store_sqlite_exec(s, "BEGIN IMMEDIATE", err)) != LC_OK) goto done;
    in_tx = 1;
    if (sqlite3_prepare_v2(s->db, "UPDATE messages SET removed = ?1 WHERE entry_id = ?2 AND removed != ?1",
                           -1, &st, NULL) != SQLITE_OK) {
        rc = store_sqlite_failed(s, err, "set removed");
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        sqlite3_bind_int(st, 1, removed ? 1 : 0);
        sqlite3_bind_text(st, 2, entry_ids[i], -1, SQLITE_STATIC);
        if ((rc = store_sqlite_step_done(s, st, "set removed", err)) != LC_OK) goto done;
        n_changed += (size_t)sqlite3_changes(s->db);
    }
    if ((rc = store_sqlite_exec(s, "COMMIT", err)) != LC_OK) goto done;
    in_tx = 0;
    if (changed) *changed = n_changed;
done:
    sqlite3_finalize(st);
    if (in_tx) sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

/* ---- reads ------------------------------------------------------------------------ */

int store_sqlite_get_message(store *s, const char *entry_id, store_row *out, char **err)
{
    sqlite3_stmt *st = NULL;
    int rc = LC_OK;
    memset(out, 0, sizeof *out);
    if (sqlite3_prepare_v2(s->db,
                           "SELECT id, entry_id, ordinal, role, text, raw_json, payload, tokens,"
                           " chars, removed, tool_name, tool_path, created FROM messages"
                           " WHERE entry_id = ?",
                           -1, &st, NULL) != SQLITE_OK) {
        rc = store_sqlite_failed(s, err, "read message");
        goto done;
    }
    sqlite3_bind_text(st, 1, entry_id, -1, SQLITE_STATIC);
    if ((rc = store_sqlite_step_row(s, st, "read message", err)) != LC_OK) {
        if (rc == LC_NOTFOUND) lc_errf(err, rc, "store: no entry %s", entry_id);
        goto done;
    }
    out->id = sqlite3_column_int64(st, 0);
    out->entry_id = store_sqlite_col_dup(st, 1);
    out->ordinal = sqlite3_column_int64(st, 2);
    out->role = store_sqlite_col_dup(st, 3);
    out->text = store_sqlite_col_dup(st, 4);
    if ((rc = store_sqlite_raw_column(st, 5, 4, 6, &out->raw_json, &out->raw_len, err)) != LC_OK) {
        store_row_free(out);
        goto done;
    }
    out->payload = store_sqlite_col_dup(st, 6);
    out->tokens = sqlite3_column_int64(st, 7);
    out->chars = sqlite3_column_int64(st, 8);
    out->removed = sqlite3_column_int(st, 9);
    out->tool_name = store_sqlite_col_dup(st, 10);
    out->tool_path = store_sqlite_col_dup(st, 11);
    out->created = sqlite3_column_int64(st, 12);
    if (!out->entry_id || !out->text || !out->raw_json) {
        store_row_free(out);
        rc = lc_errf(err, LC_NOMEM, "store: out of memory");
    }
done:
    sqlite3_finalize(st);
    return rc;
}

