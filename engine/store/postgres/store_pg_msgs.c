/*
 * store_pg_msgs.c -- the PostgreSQL backend's messages: passive ingest (the derived text
 * whose tsvector the table generates, file handles for large tool results, the recent tool
 * calls that name their paths), the removed-branch marks of a tree move, and the read of
 * one message. Every write is idempotent (ON CONFLICT DO NOTHING on the session's entry
 * id) and one short transaction under the session's lock.
 */
#include "store.h"
#include "store_pg_int.h"

#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "files.h"
#include "message.h"
#include "util.h"

/* ---- ingest ----------------------------------------------------------------------- */

#define STORE_PG_INGEST_BATCH 500

/* The ordinal of a stored entry, or -1 (-2 when the store could not be read). */
static int64_t store_pg_lookup_ordinal(store *s, const char *entry_id, char **err)
{
    const char *v[] = {entry_id};
    PGresult *r = store_pg_run(s, "SELECT ordinal FROM messages WHERE entry_id = $1", 1, v, STORE_PG_IDEM,
                               "read message", err);
    if (!r) return -2;
    int64_t ord = PQntuples(r) > 0 ? store_pg_col_int(r, 0, 0) : -1;
    PQclear(r);
    return ord;
}

static char *store_pg_find_call_path(store *s, const char *call_id)
{
    char *path = NULL;
    if (store_derive_call_path(s->calls, call_id, &path)) return path;
    /* The call was ingested by an earlier process: read the newest assistant rows. */
    PGresult *r = store_pg_run(s, "SELECT raw_json FROM messages WHERE role = 'assistant' ORDER BY id DESC LIMIT 16",
                               0, NULL, STORE_PG_IDEM, "read calls", NULL);
    for (int i = 0; r && i < PQntuples(r); i++) {
        cJSON *m = cJSON_Parse(PQgetvalue(r, i, 0));
        if (!m) continue;
        store_derive_note_calls(s->calls, &s->call_next, m);
        cJSON_Delete(m);
        if (store_derive_call_path(s->calls, call_id, &path)) break;
    }
    PQclear(r);
    return path;
}

static int store_pg_record_handle(store *s, const char *entry_id, const char *path, const char *text, size_t len,
                                  size_t chars, char **err)
{
    char nb[24];
    store_derived_handle h;
    int rc = store_derive_handle(&h, path, text, len, err);
    if (rc == LC_OK) {
        const char *v[] = {entry_id, path, h.cid, files_kind_name(h.kind), store_pg_i64(nb, (int64_t)chars),
                           h.preview, h.summary};
        rc = store_pg_cmd(s,
                          "INSERT INTO file_handles(entry_id, path, content_id, kind, chars, preview, summary)"
                          " VALUES($1, $2, $3, $4, $5::bigint, $6, $7) ON CONFLICT DO NOTHING",
                          7, v, 0, "file handle", NULL, err);
    }
    store_derive_handle_free(&h);
    return rc;
}

/* Insert one message (already known to be new). */
static int store_pg_insert_one(store *s, const store_msg *m, int64_t ordinal, store_ingest_stats *stats,
                               int64_t *newest_created, char **err)
{
    store_derived row;
    char *path = NULL, *raw = NULL;
    PGresult *r = NULL;
    int rc = store_derive_row(&row, m, s->opt.redact_at_ingest, s->calls, &s->call_next, err);
    if (rc != LC_OK) goto done;
    /* Parameters are C strings: the verbatim bytes are copied to end in a NUL. */
    if (!(raw = lc_strndup(row.json, row.json_len))) {
        rc = lc_errf(err, LC_NOMEM, "store: out of memory");
        goto done;
    }
    if (row.call_id) path = store_pg_find_call_path(s, row.call_id);
    char ob[24], cb[24], tb[24], kb[24];
    const char *v[] = {m->entry_id,
                       store_pg_i64(ob, ordinal),
                       msg_role_name(row.role),
                       row.text,
                       store_pg_i64(cb, (int64_t)row.chars),
                       store_pg_i64(kb, row.tokens),
                       raw,
                       row.payload,
                       row.tool_name,
                       path,
                       store_pg_i64(tb, row.created)};
    r = store_pg_run(s,
                     "INSERT INTO messages(entry_id, ordinal, role, text, chars, tokens, raw_json, payload,"
                     " tool_name, tool_path, created) VALUES($1, $2::bigint, $3, $4, $5::bigint, $6::bigint, $7,"
                     " $8, $9, $10, $11::bigint) ON CONFLICT DO NOTHING RETURNING id",
                     11, v, 0, "insert message", err);
    if (!r) {
        rc = LC_ERR;
        goto done;
    }
    if (PQntuples(r) == 0) goto done; /* already stored */
    if (row.created > *newest_created) *newest_created = row.created;
    if (stats) {
        stats->inserted++;
        stats->text_bytes += row.text_len;
    }
    if (row.role == MSG_ROLE_TOOL_RESULT && s->opt.externalize_files && row.chars >= s->opt.large_file_chars) {
        rc = store_pg_record_handle(s, m->entry_id, path, row.text, row.text_len, row.chars, err);
        if (rc == LC_OK && stats) stats->file_handles++;
    }
done:
    PQclear(r);
    store_derive_row_free(&row);
    free(raw);
    free(path);
    return rc;
}

int store_pg_ingest(store *s, const store_msg *msgs, size_t n, store_ingest_stats *stats, char **err)
{
    store_ingest_stats local = {0};
    int rc = LC_OK, in_tx = 0;
    size_t first_new;
    int64_t ordinal, newest_created = 0;
    if (!stats) stats = &local;
    memset(stats, 0, sizeof *stats);
    if (s->read_only) return lc_errf(err, LC_INVALID, "store: opened read-only");

    if (store_common_ingest_from(s, msgs, n, s->last_entry, s->last_ordinal, store_pg_lookup_ordinal, &first_new,
                                 &ordinal, stats, err) != LC_OK)
        return LC_ERR;
    if (first_new >= n) goto done;
    if ((rc = store_pg_begin(s, err)) != LC_OK) goto done;
    in_tx = 1;
    /* The next ordinal is read under the session's lock. */
    if (ordinal < 0) ordinal = store_pg_int(s, "SELECT coalesce(max(ordinal) + 1, 0) FROM messages", 0, NULL, 0);
    const char *newest = NULL;
    size_t in_batch = 0;
    for (size_t i = first_new; i < n; i++) {
        if (!msgs[i].entry_id) continue;
        if ((rc = store_pg_insert_one(s, &msgs[i], ordinal, stats, &newest_created, err)) != LC_OK) goto done;
        ordinal++;
        newest = msgs[i].entry_id;
        /* A long history is committed in batches: the progress triggers rewrite one meta
         * row per message, and PostgreSQL cannot prune a row's versions while the
         * transaction that wrote them is open (a 20,000-message transaction is quadratic).
         * Each batch is a prefix of the branch, so the walk back above still finds where
         * a later call resumes. */
        if (++in_batch == STORE_PG_INGEST_BATCH && i + 1 < n && !s->tx_open) {
            if ((rc = store_pg_commit(s, err)) != LC_OK) goto done;
            in_tx = 0;
            if ((rc = store_pg_begin(s, err)) != LC_OK) goto done;
            in_tx = 1;
            in_batch = 0;
        }
    }
    if (newest_created > 0) {
        char nb[24];
        const char *v[] = {s->sidtxt, store_pg_i64(nb, newest_created)};
        if ((rc = store_pg_cmd(s,
                               "UPDATE lcm.sessions SET last_activity = greatest(last_activity, $2::bigint)"
                               " WHERE sid = $1::bigint",
                               2, v, 0, "session", NULL, err)) != LC_OK)
            goto done;
    }
    if ((rc = store_pg_commit(s, err)) != LC_OK) goto done;
    in_tx = 0;
    store_common_ingest_done(&s->last_entry, &s->last_ordinal, newest, ordinal - 1);
done:
    if (in_tx) store_pg_rollback(s);
    return rc;
}

/* ---- removed branches ------------------------------------------------------------- */

/* The ids as one text[] literal parameter ({"a","b"}), quoted for array input. */
static char *store_pg_array(const char *const *ids, size_t n)
{
    sbuf b = {0};
    sb_putc(&b, '{');
    int first = 1;
    for (size_t i = 0; i < n; i++) {
        if (!ids[i]) continue;
        if (!first) sb_putc(&b, ',');
        first = 0;
        sb_putc(&b, '"');
        for (const char *p = ids[i]; *p; p++) {
            if (*p == '"' || *p == '\\') sb_putc(&b, '\\');
            sb_putc(&b, *p);
        }
        sb_putc(&b, '"');
    }
    sb_putc(&b, '}');
    if (b.oom) {
        sb_free(&b);
        return NULL;
    }
    return sb_detach(&b);
}

int store_pg_mark_branch(store *s, const char *const *active_ids, size_t n, size_t *marked, size_t *cleared,
                         char **err)
{
    int rc, in_tx = 0;
    int64_t a = 0, b = 0;
    char *arr = store_pg_array(active_ids, n);
    if (marked) *marked = 0;
    if (cleared) *cleared = 0;
    if (!arr) return lc_errf(err, LC_NOMEM, "store: out of memory");
    const char *v[] = {arr};
    if ((rc = store_pg_begin(s, err)) != LC_OK) goto done;
    in_tx = 1;
    if ((rc = store_pg_cmd(s, "UPDATE messages SET removed = 1 WHERE removed = 0 AND NOT (entry_id = ANY($1::text[]))",
                           1, v, 0, "mark branch", &a, err)) != LC_OK)
        goto done;
    if ((rc = store_pg_cmd(s, "UPDATE messages SET removed = 0 WHERE removed = 1 AND entry_id = ANY($1::text[])", 1, v,
                           0, "mark branch", &b, err)) != LC_OK)
        goto done;
    if ((rc = store_pg_commit(s, err)) != LC_OK) goto done;
    in_tx = 0;
    if (marked) *marked = (size_t)a;
    if (cleared) *cleared = (size_t)b;
done:
    if (in_tx) store_pg_rollback(s);
    free(arr);
    return rc;
}

int store_pg_set_removed(store *s, const char *const *entry_ids, size_t n, int removed, size_t *changed, char **err)
{
    int64_t k = 0;
    char *arr = store_pg_array(entry_ids, n);
    if (!arr) return lc_errf(err, LC_NOMEM, "store: out of memory");
    const char *v[] = {removed ? "1" : "0", arr};
    int rc = store_pg_begin(s, err);
    if (rc == LC_OK) {
        rc = store_pg_cmd(s,
                          "UPDATE messages SET removed = $1::integer WHERE entry_id = ANY($2::text[])"
                          " AND removed <> $1::integer",
                          2, v, 0, "set removed", &k, err);
        if (rc == LC_OK) rc = store_pg_commit(s, err);
        if (rc == LC_OK && changed) *changed = (size_t)k;
        if (rc != LC_OK) store_pg_rollback(s);
    }
    free(arr);
    return rc;
}

/* ---- reads ------------------------------------------------------------------------ */

int store_pg_get_message(store *s, const char *entry_id, store_row *out, char **err)
{
    const char *v[] = {entry_id};
    memset(out, 0, sizeof *out);
    PGresult *r = store_pg_run(s,
                               "SELECT id, entry_id, ordinal, role, text, raw_json, payload, tokens, chars, removed,"
                               " tool_name, tool_path, created FROM messages WHERE entry_id = $1",
                               1, v, STORE_PG_IDEM, "read message", err);
    int rc = LC_OK;
    if (!r) return LC_ERR;
    if (PQntuples(r) == 0) {
        rc = lc_errf(err, LC_NOTFOUND, "store: no entry %s", entry_id);
        goto done;
    }
    out->id = store_pg_col_int(r, 0, 0);
    out->entry_id = store_pg_col_dup(r, 0, 1);
    out->ordinal = store_pg_col_int(r, 0, 2);
    out->role = store_pg_col_dup(r, 0, 3);
    out->text = store_pg_col_dup(r, 0, 4);
    out->raw_json = store_pg_col_dup(r, 0, 5);
    out->raw_len = (size_t)PQgetlength(r, 0, 5);
    out->payload = store_pg_col_dup(r, 0, 6);
    out->tokens = store_pg_col_int(r, 0, 7);
    out->chars = store_pg_col_int(r, 0, 8);
    out->removed = (int)store_pg_col_int(r, 0, 9);
    out->tool_name = store_pg_col_dup(r, 0, 10);
    out->tool_path = store_pg_col_dup(r, 0, 11);
    out->created = store_pg_col_int(r, 0, 12);
    rc = store_common_row_read(out, err);
done:
    PQclear(r);
    return rc;
}
