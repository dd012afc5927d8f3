/*
 * store_sqlite_dag.c -- the SQLite backend's DAG rows: the progress numbers (watermark,
 * pending tokens, the pointer block's size), summaries with their provenance and index,
 * the walks a pass reads through (tail, newest, uncovered, frontier, prefixed, source),
 * runs and events, and the projection's cuts and pin.
 */
#include "store.h"
#include "store_sqlite_int.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

/* ---- DAG progress ------------------------------------------------------------------- */

/* The one full scan: a store written before the numbers existed, or one whose coverage
 * was deleted (repair). Both numbers are written together, in one transaction. */
static int store_dag_recompute(store *s, char **err)
{
    int rc = LC_OK, in_tx = 0;
    /* Inside a transaction the caller spans (store_tx_begin: a compaction's batch), a
     * savepoint. */
    int nested = !sqlite3_get_autocommit(s->db);
    if ((rc = store_sqlite_exec(s, nested ? "SAVEPOINT store_dag_progress" : "BEGIN IMMEDIATE", err)) != LC_OK)
        goto done;
    in_tx = 1;
    rc = store_sqlite_exec(
        s,
        "INSERT OR REPLACE INTO meta(key, value) SELECT 'dag_watermark', coalesce("
        " (SELECT min(m.ordinal) FROM messages m WHERE " STORE_ELIGIBLE("m") " AND " STORE_UNCOVERED("m") "),"
        " (SELECT max(ordinal) + 1 FROM messages), 0);"
        "INSERT OR REPLACE INTO meta(key, value) SELECT 'dag_pending', coalesce("
        " (SELECT sum(m.tokens) FROM messages m WHERE " STORE_ELIGIBLE("m") " AND " STORE_UNCOVERED("m") "), 0)",
        err);
    if (rc == LC_OK && (rc = store_sqlite_exec(s, nested ? "RELEASE store_dag_progress" : "COMMIT", err)) == LC_OK)
        in_tx = 0;
done:
    if (in_tx)
        sqlite3_exec(s->db, nested ? "ROLLBACK TO store_dag_progress; RELEASE store_dag_progress" : "ROLLBACK",
                     NULL, NULL, NULL);
    return rc;
}

int store_sqlite_dag_progress(store *s, int64_t *watermark, int64_t *pending, char **err)
{
    return store_common_dag_progress(s, s->read_only, store_dag_recompute, watermark, pending, err);
}

int store_sqlite_dag_block_get(store *s, int64_t *tokens)
{
    return store_common_meta_int(s, "dag_block_tokens", tokens);
}

int store_sqlite_dag_block_put(store *s, int64_t tokens, char **err)
{
    sqlite3_stmt *st = NULL;
    int rc = LC_OK;
    if ((rc = store_sqlite_prepare(s, &st, "INSERT OR REPLACE INTO meta(key, value) VALUES('dag_block_tokens', ?)",
                                           "dag block", err)) != LC_OK)
        goto done;
    sqlite3_bind_int64(st, 1, tokens);
    if (sqlite3_step(st) != SQLITE_DONE) rc = store_sqlite_failed(s, err, "dag block");
done:
    sqlite3_finalize(st);
    return rc;
}

int store_sqlite_dag_set_watermark(store *s, int64_t expect, int64_t value, int *moved, char **err)
{
    sqlite3_stmt *st = NULL;
    int rc = LC_OK;
    if (moved) *moved = 0;
    if ((rc = store_sqlite_prepare(s, &st,
                                   "UPDATE meta SET value = ?1 WHERE key = 'dag_watermark'"
                                   " AND CAST(value AS INTEGER) = ?2 AND NOT EXISTS (SELECT 1 FROM main.messages m"
                                   " WHERE m.ordinal >= ?2 AND m.ordinal < ?1 AND " STORE_ELIGIBLE("m")
                                   " AND " STORE_UNCOVERED("m") ")",
                                   "dag watermark", err)) != LC_OK)
        goto done;
    sqlite3_bind_int64(st, 1, value);
    sqlite3_bind_int64(st, 2, expect);
    if (sqlite3_step(st) != SQLITE_DONE) {
        rc = store_sqlite_failed(s, err, "dag watermark");
        goto done;
    }
    if (moved) *moved = sqlite3_changes(s->db) > 0;
done:
    sqlite3_finalize(st);
    return rc;
}

/* ---- summaries -------------------------------------------------------------------- */

int store_sqlite_prepare(store *s, sqlite3_stmt **st, const char *sql, const char *what, char **err)
{
    return sqlite3_prepare_v2(s->db, sql, -1, st, NULL) == SQLITE_OK ? LC_OK : store_sqlite_failed(s, err, what);
}

int store_sqlite_step_done(store *s, sqlite3_stmt *st, const char *what, char **err)
{
    int step = sqlite3_step(st);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return step == SQLITE_DONE ? LC_OK : store_sqlite_failed(s, err, what);
}

int store_sqlite_step_row(store *s, sqlite3_stmt *st, const char *what, char **err)
{
    int step = sqlite3_step(st);
    if (step == SQLITE_ROW) return LC_OK;
    return step == SQLITE_DONE ? LC_NOTFOUND : store_sqlite_failed(s, err, what);
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
        return store_sqlite_failed(s, err, "summary check");
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
            rc = store_sqlite_failed(s, err, "summary check");
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    return rc;
}

int store_sqlite_summary_add(store *s, const store_summary *in, int64_t *out_id, char **err)
{
    sqlite3_stmt *ins = NULL, *child = NULL, *msg = NULL, *span = NULL, *fts = NULL;
    int rc = LC_OK, in_tx = 0;
    int leaf = in->kind && strcmp(in->kind, "leaf") == 0;
    if (!in->text || (!leaf && (!in->kind || strcmp(in->kind, "condensed") != 0)) ||
        (leaf && in->n_entries == 0) || (!leaf && in->n_children == 0))
        return lc_errf(err, LC_INVALID,
                       "store: a summary is a leaf over entries or a condensed node over children");
    /* Inside a transaction the caller spans (store_tx_begin: `lcm compact` commits its
     * nodes in batches), the node is a savepoint, all or nothing. */
    int nested = !sqlite3_get_autocommit(s->db);
    if ((rc = store_sqlite_exec(s, nested ? "SAVEPOINT store_summary" : "BEGIN IMMEDIATE", err)) != LC_OK)
        goto done;
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
        rc = store_sqlite_failed(s, err, "summary");
        goto done;
    }
    sqlite3_bind_text(ins, 1, leaf ? "leaf" : "condensed", -1, SQLITE_STATIC);
    sqlite3_bind_int(ins, 2, in->depth);
    sqlite3_bind_text(ins, 3, in->text, -1, SQLITE_STATIC);
    sqlite3_bind_text(ins, 4, in->tiers_json, -1, SQLITE_STATIC); /* a NULL text binds SQL NULL */
    sqlite3_bind_int64(ins, 5, in->tokens);
    sqlite3_bind_int64(ins, 6, (sqlite3_int64)time(NULL) * 1000);
    if ((rc = store_sqlite_step_done(s, ins, "summary", err)) != LC_OK) goto done;
    int64_t id = sqlite3_last_insert_rowid(s->db);
    for (size_t i = 0; leaf && i < in->n_entries; i++) {
        sqlite3_bind_int64(msg, 1, id);
        sqlite3_bind_text(msg, 2, in->entry_ids[i], -1, SQLITE_STATIC);
        sqlite3_bind_int64(msg, 3, (sqlite3_int64)i);
        if ((rc = store_sqlite_step_done(s, msg, "summary entries", err)) != LC_OK) goto done;
    }
    for (size_t i = 0; !leaf && i < in->n_children; i++) {
        sqlite3_bind_int64(child, 1, id);
        sqlite3_bind_int64(child, 2, in->children[i]);
        sqlite3_bind_int64(child, 3, (sqlite3_int64)i);
        if ((rc = store_sqlite_step_done(s, child, "summary children", err)) != LC_OK) goto done;
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
    if ((rc = store_sqlite_prepare(s, &span, span_sql, "summary span", err)) != LC_OK) goto done;
    sqlite3_bind_int64(span, 1, id);
    if ((rc = store_sqlite_step_done(s, span, "summary span (does it cover stored entries?)", err)) != LC_OK)
        goto done;
    sqlite3_bind_int64(fts, 1, id);
    sqlite3_bind_text(fts, 2, in->text, -1, SQLITE_STATIC);
    if ((rc = store_sqlite_step_done(s, fts, "summary index", err)) != LC_OK) goto done;
    if ((rc = store_sqlite_exec(s, nested ? "RELEASE store_summary" : "COMMIT", err)) != LC_OK) goto done;
    in_tx = 0;
    if (out_id) *out_id = id;
done:
    sqlite3_finalize(ins);
    sqlite3_finalize(child);
    sqlite3_finalize(msg);
    sqlite3_finalize(span);
    sqlite3_finalize(fts);
    if (in_tx)
        sqlite3_exec(s->db, nested ? "ROLLBACK TO store_summary; RELEASE store_summary" : "ROLLBACK", NULL, NULL,
                     NULL);
    return rc;
}

int store_sqlite_summary_set_text(store *s, int64_t id, const char *text, int64_t tokens, char **err)
{
    sqlite3_stmt *old = NULL, *up = NULL, *del = NULL, *ins = NULL;
    int rc = LC_OK, in_tx = 0;
    if (!text) return lc_errf(err, LC_INVALID, "store: a summary's text cannot be empty");
    if ((rc = store_sqlite_exec(s, "BEGIN IMMEDIATE", err)) != LC_OK) goto done;
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
        rc = store_sqlite_failed(s, err, "summary text");
        goto done;
    }
    sqlite3_bind_int64(old, 1, id);
    if ((rc = store_sqlite_step_row(s, old, "summary text", err)) != LC_OK) {
        if (rc == LC_NOTFOUND) lc_errf(err, rc, "store: no summary #%lld", (long long)id);
        goto done;
    }
    sqlite3_bind_int64(del, 1, id);
    sqlite3_bind_value(del, 2, sqlite3_column_value(old, 0));
    if ((rc = store_sqlite_step_done(s, del, "summary index", err)) != LC_OK) goto done;
    sqlite3_bind_text(up, 1, text, -1, SQLITE_STATIC);
    sqlite3_bind_int64(up, 2, tokens);
    sqlite3_bind_int64(up, 3, id);
    if ((rc = store_sqlite_step_done(s, up, "summary text", err)) != LC_OK) goto done;
    sqlite3_bind_int64(ins, 1, id);
    sqlite3_bind_text(ins, 2, text, -1, SQLITE_STATIC);
    if ((rc = store_sqlite_step_done(s, ins, "summary index", err)) != LC_OK) goto done;
    if ((rc = store_sqlite_exec(s, "COMMIT", err)) != LC_OK) goto done;
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

int store_sqlite_cut_get(store *s, store_cut_which which, int64_t id, store_cut *out, char **err)
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
    int rc = LC_OK;
    memset(out, 0, sizeof *out);
    if ((unsigned)which > STORE_CUT_ON_BRANCH) return lc_errf(err, LC_INVALID, "store: no such cut query");
    if ((rc = store_sqlite_prepare(s, &st, sql[which], "cut", err)) != LC_OK) goto done;
    if (which == STORE_CUT_BY_ID) sqlite3_bind_int64(st, 1, id);
    if ((rc = store_sqlite_step_row(s, st, "cut", err)) != LC_OK) goto done;
    out->id = sqlite3_column_int64(st, 0);
    out->anchor_entry = store_sqlite_col_dup(st, 1);
    out->anchor_ordinal = sqlite3_column_int64(st, 2);
    out->message = store_sqlite_col_dup(st, 3);
    out->nodes_json = store_sqlite_col_dup(st, 4);
    out->stubbed = sqlite3_column_int(st, 5);
    rc = store_common_cut_read(out, err);
done:
    sqlite3_finalize(st);
    return rc;
}

int store_sqlite_cut_add(store *s, const store_cut *in, int64_t tokens, int64_t *out_id, char **err)
{
    sqlite3_stmt *st = NULL;
    int rc = LC_OK;
    *out_id = 0;
    if ((rc = store_sqlite_prepare(s, &st, "INSERT INTO lcm_cuts(anchor_entry, anchor_ordinal, message, tokens, nodes,"
                                           " stubbed, created) VALUES(?,?,?,?,?,?,?)",
                                           "cut", err)) != LC_OK)
        goto done;
    sqlite3_bind_text(st, 1, in->anchor_entry, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, in->anchor_ordinal);
    sqlite3_bind_text(st, 3, in->message, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 4, tokens);
    sqlite3_bind_text(st, 5, in->nodes_json, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 6, in->stubbed);
    sqlite3_bind_int64(st, 7, (sqlite3_int64)time(NULL) * 1000);
    if ((rc = store_sqlite_step_done(s, st, "cut", err)) != LC_OK) goto done;
    *out_id = sqlite3_last_insert_rowid(s->db);
done:
    sqlite3_finalize(st);
    return rc;
}

int store_sqlite_pin_get(store *s, store_pin *out, char **err)
{
    sqlite3_stmt *st = NULL;
    memset(out, 0, sizeof *out);
    int rc = store_sqlite_prepare(s, &st, "SELECT cut_id, applied_tokens, window FROM lcm_pin WHERE id = 1", "pin", err);
    if (rc != LC_OK) goto done;
    rc = LC_NOTFOUND;
    int step = sqlite3_step(st);
    if (step == SQLITE_ROW) {
        out->cut_id = sqlite3_column_int64(st, 0);
        out->applied_tokens = (long)sqlite3_column_int64(st, 1);
        out->window = (long)sqlite3_column_int64(st, 2);
        rc = LC_OK;
    } else if (step != SQLITE_DONE) {
        rc = store_sqlite_failed(s, err, "pin");
    }
done:
    sqlite3_finalize(st);
    return rc;
}

int store_sqlite_pin_set(store *s, const store_pin *pin, char **err)
{
    sqlite3_stmt *st = NULL;
    int rc = LC_OK;
    if ((rc = store_sqlite_prepare(s, &st, "INSERT OR REPLACE INTO lcm_pin(id, cut_id, applied_tokens, window, updated)"
                                           " VALUES(1,?,?,?,?)",
                                           "pin", err)) != LC_OK)
        goto done;
    sqlite3_bind_int64(st, 1, pin->cut_id);
    sqlite3_bind_int64(st, 2, pin->applied_tokens);
    sqlite3_bind_int64(st, 3, pin->window);
    sqlite3_bind_int64(st, 4, (sqlite3_int64)time(NULL) * 1000);
    rc = store_sqlite_step_done(s, st, "pin", err);
done:
    sqlite3_finalize(st);
    return rc;
}

int store_sqlite_pin_clear(store *s, char **err)
{
    return store_sqlite_exec(s, "DELETE FROM lcm_pin", err);
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
        if (!store_common_visit_next(visit(ud, &m, err), &rc, stopped)) return rc;
    }
    if (step != SQLITE_DONE) rc = store_sqlite_failed(s, err, what);
    return rc;
}

int store_sqlite_dag_walk_tail(store *s, store_msg_visit visit, void *ud, int *stopped, char **err)
{
    sqlite3_stmt *st = NULL;
    int rc;
    if (sqlite3_prepare_v2(s->db,
                           "SELECT m.ordinal, m.entry_id, m.role, m.tokens, m.role NOT IN (" STORE_DAG_EXCLUDED_ROLES
                           ") AND " STORE_UNCOVERED("m") " FROM messages m WHERE m.removed = 0 ORDER BY m.ordinal DESC",
                           -1, &st, NULL) != SQLITE_OK)
        rc = store_sqlite_failed(s, err, "fresh tail");
    else
        rc = store_walk_msgs(s, st, "fresh tail", 0, visit, ud, stopped, err);
    sqlite3_finalize(st);
    return rc;
}

int store_sqlite_walk_newest(store *s, store_msg_visit visit, void *ud, int *stopped, char **err)
{
    sqlite3_stmt *st = NULL;
    int rc;
    if (sqlite3_prepare_v2(s->db,
                           "SELECT m.ordinal, m.entry_id, m.role, m.tokens, 0, m.text FROM messages m"
                           " WHERE m.removed = 0 ORDER BY m.ordinal DESC, m.id DESC",
                           -1, &st, NULL) != SQLITE_OK)
        rc = store_sqlite_failed(s, err, "newest messages");
    else
        rc = store_walk_msgs(s, st, "newest messages", 1, visit, ud, stopped, err);
    sqlite3_finalize(st);
    return rc;
}

long long store_sqlite_last_activity_ms(store *s)
{
    sqlite3_stmt *st = NULL;
    long long t = 0;
    if (sqlite3_prepare_v2(s->db, "SELECT created FROM messages ORDER BY ordinal DESC, id DESC LIMIT 1",
                           -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        t = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    if (t <= 0) {
        char *c = store_sqlite_meta_get(s, "created");
        t = c ? atoll(c) : 0;
        free(c);
    }
    return t;
}

int store_sqlite_dag_walk_uncovered(store *s, int64_t after, int64_t before, store_msg_visit visit, void *ud,
                             int *stopped, char **err)
{
    sqlite3_stmt *st = NULL;
    int rc;
    if (sqlite3_prepare_v2(s->db,
                           "SELECT m.ordinal, m.entry_id, m.role, m.tokens, 1, m.text FROM messages m"
                           " WHERE " STORE_ELIGIBLE("m") " AND m.ordinal > ?1 AND m.ordinal < ?2"
                           " AND " STORE_UNCOVERED("m") " ORDER BY m.ordinal",
                           -1, &st, NULL) != SQLITE_OK) {
        rc = store_sqlite_failed(s, err, "uncovered messages");
    } else {
        sqlite3_bind_int64(st, 1, after);
        sqlite3_bind_int64(st, 2, before);
        rc = store_walk_msgs(s, st, "uncovered messages", 1, visit, ud, stopped, err);
    }
    sqlite3_finalize(st);
    return rc;
}

int store_sqlite_dag_count_uncovered(store *s, int64_t from, int64_t before, int64_t *count, char **err)
{
    sqlite3_stmt *st = NULL;
    int rc = LC_OK;
    *count = 0;
    if ((rc = store_sqlite_prepare(s, &st,
                                   "SELECT count(*) FROM messages m WHERE " STORE_ELIGIBLE("m")
                                   " AND m.ordinal >= ?2 AND (?1 <= 0 OR m.ordinal < ?1) AND " STORE_UNCOVERED("m"),
                                   "coverage", err)) != LC_OK)
        goto done;
    sqlite3_bind_int64(st, 1, before);
    sqlite3_bind_int64(st, 2, from);
    if (sqlite3_step(st) != SQLITE_ROW) {
        rc = store_sqlite_failed(s, err, "coverage");
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
    int step, rc = LC_OK;
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
        if (!store_common_visit_next(visit(ud, &n, err), &rc, NULL)) return rc;
    }
    return step == SQLITE_DONE ? LC_OK : store_sqlite_failed(s, err, what);
}

int store_sqlite_dag_walk_frontier(store *s, store_node_visit visit, void *ud, char **err)
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
        rc = store_sqlite_failed(s, err, "frontier");
    else
        rc = store_walk_nodes(s, st, "frontier", 1, visit, ud, err);
    sqlite3_finalize(st);
    return rc;
}

int store_sqlite_dag_walk_prefixed(store *s, const char *prefix, store_node_visit visit, void *ud, char **err)
{
    sqlite3_stmt *st = NULL;
    int rc;
    if (sqlite3_prepare_v2(s->db, "SELECT id, depth, kind, text FROM summaries WHERE substr(text, 1, ?) = ? ORDER BY id",
                           -1, &st, NULL) != SQLITE_OK) {
        rc = store_sqlite_failed(s, err, "summaries");
    } else {
        sqlite3_bind_int(st, 1, (int)strlen(prefix));
        sqlite3_bind_text(st, 2, prefix, -1, SQLITE_STATIC);
        rc = store_walk_nodes(s, st, "summaries", 0, visit, ud, err);
    }
    sqlite3_finalize(st);
    return rc;
}

int store_sqlite_dag_walk_source(store *s, int64_t id, int leaf, store_msg_visit visit, void *ud, char **err)
{
    sqlite3_stmt *st = NULL;
    int rc;
    const char *sql = leaf ? "SELECT m.ordinal, m.entry_id, m.role, m.tokens, 0, m.text FROM summary_messages sm"
                             " JOIN messages m ON m.entry_id = sm.entry_id WHERE sm.summary_id = ? ORDER BY sm.position"
                           : "SELECT 0, '', '', s.tokens, 0, s.text FROM summary_children c JOIN summaries s"
                             " ON s.id = c.child_id WHERE c.parent_id = ? ORDER BY c.position";
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) {
        rc = store_sqlite_failed(s, err, "summary source");
    } else {
        sqlite3_bind_int64(st, 1, id);
        rc = store_walk_msgs(s, st, "summary source", 1, visit, ud, NULL, err);
    }
    sqlite3_finalize(st);
    return rc;
}

int store_sqlite_dag_walk_children(store *s, int64_t id, store_node_visit visit, void *ud, char **err)
{
    sqlite3_stmt *st = NULL;
    int rc;
    if (sqlite3_prepare_v2(s->db,
                           "SELECT s.id, s.depth, s.kind, s.text, s.tiers, s.tokens, sp.first_ordinal,"
                           " sp.last_ordinal, sp.first_entry, sp.last_entry, sp.entry_count"
                           " FROM summary_children c JOIN summaries s ON s.id = c.child_id"
                           " LEFT JOIN summary_spans sp ON sp.summary_id = s.id"
                           " WHERE c.parent_id = ? ORDER BY c.position",
                           -1, &st, NULL) != SQLITE_OK) {
        rc = store_sqlite_failed(s, err, "summary children");
    } else {
        sqlite3_bind_int64(st, 1, id);
        rc = store_walk_nodes(s, st, "summary children", 1, visit, ud, err);
    }
    sqlite3_finalize(st);
    return rc;
}

int64_t store_sqlite_run_begin(store *s, const char *kind)
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

void store_sqlite_run_end(store *s, int64_t id, const char *status)
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

int store_sqlite_event_add(store *s, const char *kind, const char *data_json, char **err)
{
    sqlite3_stmt *st = NULL;
    int rc;
    if (sqlite3_prepare_v2(s->db, "INSERT INTO lcm_events(kind, data, created) VALUES(?,?,?)", -1, &st, NULL) !=
        SQLITE_OK) {
        rc = store_sqlite_failed(s, err, "event");
    } else {
        sqlite3_bind_text(st, 1, kind, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, data_json, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 3, (sqlite3_int64)time(NULL) * 1000);
        rc = store_sqlite_step_done(s, st, "event", err);
    }
    sqlite3_finalize(st);
    return rc;
}

int64_t store_sqlite_event_count(store *s, const char *kind)
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
