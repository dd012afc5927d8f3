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

/* Messages per write: one transaction and one round trip each. A long history is committed
 * in batches: the progress triggers rewrite one meta row per message, and PostgreSQL cannot
 * prune a row's versions while the transaction that wrote them is open (a 20,000-message
 * transaction is quadratic). The bound also keeps a pipeline's answers well inside the
 * socket's buffer, so sending never waits on an unread reply. */
#define STORE_PG_INGEST_BATCH 128

/* A batch's messages in one statement: each column a text[] or bigint[] parameter, unnested
 * in the messages' order. A message's id is the session's next, numbered here in that order
 * (the turn's transaction holds the session's lock, so the newest id cannot move under it):
 * only the messages the session does not hold yet, a message the batch repeats counted once,
 * as the per-row id trigger numbered them (a row it skipped took no id); the trigger then
 * never runs (schema 7: it fires only for a row without an id). Whether the session holds a
 * message is one probe of its (sid, entry_id) index per message, a subquery per row (as
 * store_pg_ingest_from's): the generic plan an anti join gets, fixed while the session is
 * empty, hashes the session's every message at every turn. A message's ordinal is the
 * caller's when it is known, else the session's next plus its place in the batch, read by
 * the statement under the session's lock (a history another process wrote since this one's
 * last write is continued, not overlapped). The DAG-progress trigger runs once for the
 * statement. A large tool result's file handle is written with its message, only when the
 * message is new. The session's row is not written: its last activity is read from its
 * newest message (store_pg_list), so the one row every writer locks keeps one version. */
static const char store_pg_sql_msgs[] =
    "WITH r AS (SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::bigint[],"
    " $6::bigint[], $7::text[], $8::text[], $9::text[], $10::text[], $11::bigint[]) WITH ORDINALITY"
    " AS r(entry_id, ordinal, role, text, chars, tokens, raw_json, payload, tool_name, tool_path, created, k)),"
    " n AS (SELECT DISTINCT ON (r.entry_id) r.* FROM r WHERE (SELECT 1 FROM messages x"
    " WHERE x.entry_id = r.entry_id ORDER BY x.entry_id LIMIT 1) IS NULL ORDER BY r.entry_id, r.k),"
    " m AS (INSERT INTO messages(id, entry_id, ordinal, role, text, chars, tokens, raw_json, payload, tool_name,"
    " tool_path, created) SELECT (SELECT coalesce(max(id), 0) FROM messages) + row_number() OVER (ORDER BY k),"
    " entry_id, coalesce(ordinal, (SELECT coalesce(max(ordinal) + 1, 0) FROM messages) + k - 1), role, text,"
    " chars, tokens, raw_json, payload, tool_name, tool_path, created FROM n ORDER BY k"
    " ON CONFLICT DO NOTHING RETURNING entry_id, ordinal),"
    " h AS (INSERT INTO file_handles(entry_id, path, content_id, kind, chars, preview, summary)"
    " SELECT f.entry_id, f.path, f.cid, f.kind, f.chars, f.preview, f.summary FROM unnest($12::text[],"
    " $13::text[], $14::text[], $15::text[], $16::bigint[], $17::text[], $18::text[]) WITH ORDINALITY"
    " AS f(entry_id, path, cid, kind, chars, preview, summary, k) JOIN m ON m.entry_id = f.entry_id"
    " ORDER BY f.k ON CONFLICT DO NOTHING)"
    " SELECT entry_id, ordinal FROM m";

/* One message of a write: its derived row and the parameters that carry it. */
typedef struct {
    store_derived row;
    store_derived_handle h;
    int has_handle;
    char *raw, *path;
    const char *entry_id;
} store_pg_pending;

/* A batch's column parameters: 11 message columns and 7 file-handle columns, each an array
 * literal ({"a",NULL,"b"} / {1,NULL}). */
#define STORE_PG_COLS 18
typedef struct {
    sbuf col[STORE_PG_COLS];
} store_pg_cols;

/* Append one element to column c: text quoted for array input, NULL as NULL; numbers bare. */
static void store_pg_col_add(store_pg_cols *t, int c, const char *v, int quote)
{
    sbuf *b = &t->col[c];
    sb_putc(b, b->len ? ',' : '{');
    if (!v) {
        sb_puts(b, "NULL");
        return;
    }
    if (!quote) {
        sb_puts(b, v);
        return;
    }
    sb_putc(b, '"');
    for (const char *p = v, *run = v;; p++) {
        if (*p == '"' || *p == '\\' || !*p) {
            sb_append(b, run, (size_t)(p - run));
            if (!*p) break;
            sb_putc(b, '\\');
            sb_putc(b, *p);
            run = p + 1;
        }
    }
    sb_putc(b, '"');
}

static void store_pg_col_int_add(store_pg_cols *t, int c, int64_t v)
{
    char nb[24];
    store_pg_col_add(t, c, store_pg_i64(nb, v), 0);
}

static void store_pg_cols_free(store_pg_cols *t)
{
    for (int c = 0; c < STORE_PG_COLS; c++) sb_free(&t->col[c]);
    memset(t, 0, sizeof *t);
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

/* The ids as one text[] literal ({"a","b"}), quoted for array input. */
static int store_pg_array_put(sbuf *b, const char *const *ids, size_t n)
{
    sb_putc(b, '{');
    for (size_t i = 0; i < n; i++) {
        if (i) sb_putc(b, ',');
        sb_putc(b, '"');
        for (const char *p = ids[i]; *p; p++) {
            if (*p == '"' || *p == '\\') sb_putc(b, '\\');
            sb_putc(b, *p);
        }
        sb_putc(b, '"');
    }
    sb_putc(b, '}');
    return b->oom ? LC_NOMEM : LC_OK;
}

/* Where the new part of msgs[0..n) starts (*first_new) and its first ordinal (-1: the
 * session's next): the newest message already stored, found walking back from the end as
 * store_common_ingest_from does, but a window of ids per query (a batch's worth, then 4
 * times more each time), so a turn's new messages cost one round trip and a stored
 * history's tail one. A call that starts at this process's newest write (the plugin's
 * every turn: ingest_request passes the previous turn's last message first) asks nothing:
 * what follows it is new unless another process wrote the session since, and the insert
 * skips a message the session holds all the same (its per-row probe) and numbers the rest
 * from the session's next ordinal, read under the lock (-1), so a turn costs one round trip. */
static int store_pg_ingest_from(store *s, const store_msg *msgs, size_t n, size_t *first_new, int64_t *ordinal,
                                store_ingest_stats *stats, char **err)
{
    int rc = LC_OK;
    size_t hi = n, want = STORE_PG_INGEST_BATCH, found = (size_t)-1;
    const char **ids = NULL;
    size_t *at = NULL;
    PGresult *r = NULL;
    *first_new = 0;
    *ordinal = -1;
    if (n && (!(ids = malloc(n * sizeof *ids)) || !(at = malloc(n * sizeof *at)))) {
        rc = lc_errf(err, LC_NOMEM, "store: out of memory");
        goto done;
    }
    while (hi > 0 && found == (size_t)-1) {
        size_t lo = hi > want ? hi - want : 0, k = 0, mine = (size_t)-1;
        /* This process's newest write ends the walk where it stands, with no query. */
        for (size_t i = hi; i-- > lo && mine == (size_t)-1;)
            if (msgs[i].entry_id && s->last_entry && strcmp(s->last_entry, msgs[i].entry_id) == 0) mine = i;
        for (size_t i = mine == (size_t)-1 ? lo : mine + 1; i < hi; i++)
            if (msgs[i].entry_id) {
                ids[k] = msgs[i].entry_id;
                at[k++] = i;
            }
        if (k && mine == (size_t)-1) {
            sbuf b = {0};
            if (store_pg_array_put(&b, ids, k) != LC_OK) {
                sb_free(&b);
                rc = lc_errf(err, LC_NOMEM, "store: out of memory");
                goto done;
            }
            const char *v[] = {b.p};
            r = store_pg_run(s,
                             /* One probe of the (sid, entry_id) index per id: a subquery
                              * per row (a join's generic plan may hash the session's every
                              * message), ordered by the entry id so that index wins even
                              * where stale statistics make a scan of the session's ordinal
                              * index look as cheap. The array is read through a subquery so
                              * a custom plan cannot count its elements: it costs what the
                              * generic plan costs, and after five calls the statement is
                              * planned once per connection, not at every turn. */
                             "SELECT i, ord FROM (SELECT u.i, (SELECT m.ordinal FROM messages m"
                             " WHERE m.entry_id = u.e ORDER BY m.entry_id LIMIT 1) AS ord"
                             " FROM unnest((SELECT $1::text[])) WITH ORDINALITY AS u(e, i)) x"
                             " WHERE ord IS NOT NULL ORDER BY i DESC LIMIT 1",
                             1, v, STORE_PG_IDEM | STORE_PG_PREP, "read message", err);
            sb_free(&b);
            if (!r) {
                rc = LC_ERR;
                goto done;
            }
            if (PQntuples(r) > 0) {
                int64_t u = store_pg_col_int(r, 0, 0);
                if (u >= 1 && (size_t)u <= k) {
                    found = at[u - 1];
                    *ordinal = store_pg_col_int(r, 0, 1) + 1;
                }
            }
            PQclear(r);
            r = NULL;
        }
        if (found == (size_t)-1 && mine != (size_t)-1) found = mine;
        hi = lo;
        want *= 4;
    }
    if (found != (size_t)-1) *first_new = found + 1;
    for (size_t i = found == (size_t)-1 ? 0 : found; i < n; i++) stats->examined += msgs[i].entry_id != NULL;
done:
    free(ids);
    free(at);
    return rc;
}

static void store_pg_pending_free(store_pg_pending *p, size_t n)
{
    for (size_t i = 0; p && i < n; i++) {
        store_derive_row_free(&p[i].row);
        if (p[i].has_handle) store_derive_handle_free(&p[i].h);
        free(p[i].raw);
        free(p[i].path);
    }
    free(p);
}

/* Derive msgs[0..n) (those with an entry id) into `p` and the batch's columns into `t`;
 * *k gets how many. Ordinals from `ordinal` on, or the session's next when it is -1. */
static int store_pg_prepare_rows(store *s, const store_msg *msgs, size_t n, int64_t ordinal, store_pg_pending *p,
                                 store_pg_cols *t, size_t *k, char **err)
{
    int rc = LC_OK;
    *k = 0;
    for (size_t i = 0; i < n; i++) {
        const store_msg *m = &msgs[i];
        if (!m->entry_id) continue;
        store_pg_pending *q = &p[*k];
        if ((rc = store_derive_row(&q->row, m, s->opt.redact_at_ingest, s->calls, &s->call_next, err)) != LC_OK) return rc;
        (*k)++;
        q->entry_id = m->entry_id;
        /* Parameters are C strings: the bytes to store (the message's own, or its masked form:
         * store_derive_row, privacy.h) are copied to end in a NUL. */
        if (!(q->raw = lc_strndup(q->row.json, q->row.json_len))) return lc_errf(err, LC_NOMEM, "store: out of memory");
        if (q->row.call_id) q->path = store_pg_find_call_path(s, q->row.call_id);
        store_pg_col_add(t, 0, m->entry_id, 1);
        if (ordinal >= 0) store_pg_col_int_add(t, 1, ordinal + (int64_t)(*k - 1));
        else store_pg_col_add(t, 1, NULL, 0);
        store_pg_col_add(t, 2, msg_role_name(q->row.role), 1);
        store_pg_col_add(t, 3, q->row.text, 1);
        store_pg_col_int_add(t, 4, (int64_t)q->row.chars);
        store_pg_col_int_add(t, 5, q->row.tokens);
        store_pg_col_add(t, 6, q->raw, 1);
        store_pg_col_add(t, 7, q->row.payload, 1);
        store_pg_col_add(t, 8, q->row.tool_name, 1);
        store_pg_col_add(t, 9, q->path, 1);
        store_pg_col_int_add(t, 10, q->row.created);
        if (q->row.role == MSG_ROLE_TOOL_RESULT && s->opt.externalize_files && q->row.chars >= s->opt.large_file_chars) {
            q->has_handle = 1;
            if ((rc = store_derive_handle(&q->h, q->path, q->row.text, q->row.text_len, err)) != LC_OK) return rc;
            store_pg_col_add(t, 11, m->entry_id, 1);
            store_pg_col_add(t, 12, q->path, 1);
            store_pg_col_add(t, 13, q->h.cid, 1);
            store_pg_col_add(t, 14, files_kind_name(q->h.kind), 1);
            store_pg_col_int_add(t, 15, (int64_t)q->row.chars);
            store_pg_col_add(t, 16, q->h.preview, 1);
            store_pg_col_add(t, 17, q->h.summary, 1);
        }
    }
    for (int c = 0; c < STORE_PG_COLS; c++) {
        if (!t->col[c].len) sb_putc(&t->col[c], '{');
        sb_putc(&t->col[c], '}');
        if (t->col[c].oom) return lc_errf(err, LC_NOMEM, "store: out of memory");
    }
    return rc;
}

int store_pg_ingest(store *s, const store_msg *msgs, size_t n, store_ingest_stats *stats, char **err)
{
    store_ingest_stats local = {0};
    int rc = LC_OK;
    size_t first_new, np = 0;
    int64_t ordinal;
    store_pg_pending *p = NULL;
    store_pg_cols t = {0};
    store_pg_stmt st[2] = {{0}};
    if (!stats) stats = &local;
    memset(stats, 0, sizeof *stats);
    if (s->read_only) return lc_errf(err, LC_INVALID, "store: opened read-only");
    if ((rc = store_pg_ingest_from(s, msgs, n, &first_new, &ordinal, stats, err)) != LC_OK) return rc;
    for (size_t at = first_new; at < n; at += STORE_PG_INGEST_BATCH) {
        size_t take = n - at < STORE_PG_INGEST_BATCH ? n - at : STORE_PG_INGEST_BATCH;
        store_pg_pending_free(p, np);
        store_pg_cols_free(&t);
        np = 0;
        if (!(p = calloc(take, sizeof *p))) {
            rc = lc_errf(err, LC_NOMEM, "store: out of memory");
            goto done;
        }
        if ((rc = store_pg_prepare_rows(s, msgs + at, take, ordinal, p, &t, &np, err)) != LC_OK)
            goto done;
        if (!np) continue;
        const char *cv[STORE_PG_COLS];
        for (int c = 0; c < STORE_PG_COLS; c++) cv[c] = t.col[c].p;
        size_t ns = 0;
        st[ns++] = (store_pg_stmt){store_pg_sql_msgs, STORE_PG_COLS, cv, NULL};
        /* The statement is idempotent (ON CONFLICT DO NOTHING): a batch whose connection
         * dropped may be sent again. */
        if ((rc = store_pg_batch(s, st, ns, STORE_PG_IDEM, "insert message", err)) != LC_OK) goto done;
        /* The rows come back unordered: each is found among the batch's by its entry id. */
        size_t newest = (size_t)-1;
        int64_t newest_ord = -1;
        for (int r = 0; r < PQntuples(st[0].res); r++) {
            const char *id = PQgetvalue(st[0].res, r, 0);
            for (size_t i = 0; i < np; i++) {
                if (strcmp(p[i].entry_id, id) != 0) continue;
                stats->inserted++;
                stats->text_bytes += p[i].row.text_len;
                if (p[i].has_handle) stats->file_handles++;
                if (newest == (size_t)-1 || i > newest) {
                    newest = i;
                    newest_ord = store_pg_col_int(st[0].res, r, 1);
                }
                break;
            }
        }
        /* The resume point is the newest message this call stored (one stored already by
         * another writer has an ordinal this call does not know). */
        if (newest != (size_t)-1)
            store_common_ingest_done(&s->last_entry, &s->last_ordinal, p[newest].entry_id, newest_ord);
        if (ordinal >= 0) ordinal += (int64_t)np;
        for (size_t i = 0; i < ns; i++) {
            PQclear(st[i].res);
            st[i].res = NULL;
        }
    }
done:
    for (size_t i = 0; i < 2; i++) PQclear(st[i].res);
    store_pg_pending_free(p, np);
    store_pg_cols_free(&t);
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
