/*
 * store_pg_dag.c -- the PostgreSQL backend's DAG rows: the progress numbers (watermark,
 * pending tokens, the pointer block's size; kept by the schema's triggers), summaries with
 * their provenance, the walks a pass reads through (in keyset batches, so a visitor that
 * stops early never pulls the whole history over the wire), runs and events, and the
 * projection's cuts and pin. A summary is checked against what other connections committed
 * under the session's lock, as the SQLite backend checks it under its write lock.
 */
#include "store.h"
#include "store_pg_int.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

#define STORE_PG_BATCH 256


/* ---- DAG progress ------------------------------------------------------------------- */

/* The one full scan: both numbers written together, under the session's lock. */
static int store_pg_dag_recompute(store *s, char **err)
{
    int rc;
    if ((rc = store_pg_begin(s, err)) != LC_OK) return rc;
    rc = store_pg_cmd(s,
                      "INSERT INTO meta(key, value) VALUES ('dag_watermark', coalesce("
                      " (SELECT min(m.ordinal) FROM messages m WHERE " STORE_PG_ELIGIBLE("m") " AND "
                      STORE_PG_UNCOVERED("m") "), (SELECT max(ordinal) + 1 FROM messages), 0)::text),"
                      " ('dag_pending', coalesce((SELECT sum(m.tokens) FROM messages m WHERE " STORE_PG_ELIGIBLE("m")
                      " AND " STORE_PG_UNCOVERED("m") "), 0)::text)"
                      " ON CONFLICT (sid, key) DO UPDATE SET value = EXCLUDED.value",
                      0, NULL, 0, "dag progress", NULL, err);
    if (rc == LC_OK) rc = store_pg_commit(s, err);
    if (rc != LC_OK) store_pg_rollback(s);
    return rc;
}

int store_pg_dag_progress(store *s, int64_t *watermark, int64_t *pending, char **err)
{
    return store_common_dag_progress(s, s->read_only, store_pg_dag_recompute, watermark, pending, err);
}

int store_pg_dag_block_get(store *s, int64_t *tokens) { return store_common_meta_int(s, "dag_block_tokens", tokens); }

int store_pg_dag_block_put(store *s, int64_t tokens, char **err)
{
    char b[24];
    const char *v[] = {store_pg_i64(b, tokens)};
    return store_pg_cmd(s,
                        "INSERT INTO meta(key, value) VALUES('dag_block_tokens', $1)"
                        " ON CONFLICT (sid, key) DO UPDATE SET value = EXCLUDED.value",
                        1, v, STORE_PG_IDEM, "dag block", NULL, err);
}

int store_pg_dag_set_watermark(store *s, int64_t expect, int64_t value, int *moved, char **err)
{
    char a[24], b[24];
    int64_t n = 0;
    const char *v[] = {store_pg_i64(a, value), store_pg_i64(b, expect)};
    if (moved) *moved = 0;
    /* One statement: the check and the move see the same committed rows, and the session's
     * lock is taken first so no writer of the session commits between them. */
    int rc = store_pg_begin(s, err);
    if (rc == LC_OK)
        rc = store_pg_cmd(s,
                          "UPDATE meta SET value = $1 WHERE key = 'dag_watermark' AND value::bigint = $2::bigint"
                          " AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.ordinal >= $2::bigint"
                          " AND m.ordinal < $1::bigint AND " STORE_PG_ELIGIBLE("m") " AND " STORE_PG_UNCOVERED("m") ")",
                          2, v, 0, "dag watermark", &n, err);
    if (rc == LC_OK) rc = store_pg_commit(s, err);
    if (rc != LC_OK) {
        store_pg_rollback(s);
        return rc;
    }
    if (moved) *moved = n > 0;
    return LC_OK;
}

/* ---- summaries -------------------------------------------------------------------- */

/* Under the session's lock: a leaf over an entry some leaf already covers or a tree move
 * removed, or a condensed node over a child that already has a parent, would make the DAG
 * cover history twice. LC_BUSY: the node no longer applies. */
static int store_pg_still_applies(store *s, const store_summary *in, char **err)
{
    int leaf = in->n_entries > 0;
    size_t n = leaf ? in->n_entries : in->n_children;
    for (size_t i = 0; i < n; i++) {
        char b[24];
        const char *v[] = {leaf ? in->entry_ids[i] : store_pg_i64(b, in->children[i])};
        PGresult *r = store_pg_run(s,
                                   leaf ? "SELECT EXISTS (SELECT 1 FROM summary_messages WHERE entry_id = $1)"
                                          " OR coalesce((SELECT removed = 1 FROM messages WHERE entry_id = $1), false)"
                                        : "SELECT EXISTS (SELECT 1 FROM summary_children WHERE child_id = $1::bigint)",
                                   1, v, 0, "summary check", err);
        if (!r) return LC_ERR;
        int taken = PQntuples(r) > 0 && strcmp(PQgetvalue(r, 0, 0), "t") == 0;
        PQclear(r);
        if (taken)
            return leaf ? lc_errf(err, LC_BUSY, "store: entry %s is already summarized or removed", in->entry_ids[i])
                        : lc_errf(err, LC_BUSY, "store: summary %lld is already condensed", (long long)in->children[i]);
    }
    return LC_OK;
}

int store_pg_summary_add(store *s, const store_summary *in, int64_t *out_id, char **err)
{
    int rc = LC_OK, in_tx = 0;
    PGresult *r = NULL;
    int leaf = in->kind && strcmp(in->kind, "leaf") == 0;
    if (!in->text || (!leaf && (!in->kind || strcmp(in->kind, "condensed") != 0)) || (leaf && in->n_entries == 0) ||
        (!leaf && in->n_children == 0))
        return lc_errf(err, LC_INVALID, "store: a summary is a leaf over entries or a condensed node over children");
    if ((rc = store_pg_begin(s, err)) != LC_OK) goto done;
    in_tx = 1;
    if ((rc = store_pg_still_applies(s, in, err)) != LC_OK) goto done;
    char db[24], tb[24], nb[24], ib[24], pb[24], cb[24];
    const char *v[] = {leaf ? "leaf" : "condensed", store_pg_i64(db, in->depth), in->text, in->tiers_json,
                       store_pg_i64(tb, in->tokens), store_pg_now(nb)};
    r = store_pg_run(s,
                     "INSERT INTO summaries(kind, depth, text, tiers, tokens, created)"
                     " VALUES($1, $2::integer, $3, $4, $5::bigint, $6::bigint) RETURNING id",
                     6, v, 0, "summary", err);
    if (!r || PQntuples(r) != 1) {
        rc = r ? lc_errf(err, LC_ERR, "store: summary: no id returned") : LC_ERR;
        goto done;
    }
    int64_t id = store_pg_col_int(r, 0, 0);
    store_pg_i64(ib, id);
    for (size_t i = 0; leaf && i < in->n_entries && rc == LC_OK; i++) {
        const char *e[] = {ib, in->entry_ids[i], store_pg_i64(pb, (int64_t)i)};
        rc = store_pg_cmd(s,
                          "INSERT INTO summary_messages(summary_id, entry_id, position)"
                          " VALUES($1::bigint, $2, $3::bigint) ON CONFLICT DO NOTHING",
                          3, e, 0, "summary entries", NULL, err);
    }
    for (size_t i = 0; !leaf && i < in->n_children && rc == LC_OK; i++) {
        const char *c[] = {ib, store_pg_i64(cb, in->children[i]), store_pg_i64(pb, (int64_t)i)};
        rc = store_pg_cmd(s, "INSERT INTO summary_children(parent_id, child_id, position) VALUES($1::bigint, $2::bigint,"
                             " $3::bigint)",
                          3, c, 0, "summary children", NULL, err);
    }
    if (rc != LC_OK) goto done;
    /* The span is derived from the covered rows, so it names ordinals the store holds. */
    const char *span_sql =
        leaf ? "INSERT INTO summary_spans(summary_id, first_ordinal, last_ordinal, first_entry, last_entry, entry_count)"
               " SELECT $1::bigint, min(m.ordinal), max(m.ordinal),"
               " (SELECT entry_id FROM summary_messages WHERE summary_id = $1::bigint ORDER BY position LIMIT 1),"
               " (SELECT entry_id FROM summary_messages WHERE summary_id = $1::bigint ORDER BY position DESC LIMIT 1),"
               " count(*) FROM summary_messages sm JOIN messages m ON m.entry_id = sm.entry_id"
               " WHERE sm.summary_id = $1::bigint"
             : "INSERT INTO summary_spans(summary_id, first_ordinal, last_ordinal, first_entry, last_entry, entry_count)"
               " SELECT $1::bigint, min(sp.first_ordinal), max(sp.last_ordinal),"
               " (SELECT sp2.first_entry FROM summary_children c2 JOIN summary_spans sp2"
               "   ON sp2.summary_id = c2.child_id WHERE c2.parent_id = $1::bigint ORDER BY c2.position LIMIT 1),"
               " (SELECT sp2.last_entry FROM summary_children c2 JOIN summary_spans sp2"
               "   ON sp2.summary_id = c2.child_id WHERE c2.parent_id = $1::bigint ORDER BY c2.position DESC LIMIT 1),"
               " sum(sp.entry_count) FROM summary_children c JOIN summary_spans sp"
               " ON sp.summary_id = c.child_id WHERE c.parent_id = $1::bigint";
    const char *sv[] = {ib};
    if ((rc = store_pg_cmd(s, span_sql, 1, sv, 0, "summary span (does it cover stored entries?)", NULL, err)) != LC_OK)
        goto done;
    if ((rc = store_pg_commit(s, err)) != LC_OK) goto done;
    in_tx = 0;
    if (out_id) *out_id = id;
done:
    PQclear(r);
    if (in_tx) store_pg_rollback(s);
    return rc;
}

int store_pg_summary_set_text(store *s, int64_t id, const char *text, int64_t tokens, char **err)
{
    char ib[24], tb[24];
    int64_t n = 0;
    if (!text) return lc_errf(err, LC_INVALID, "store: a summary's text cannot be empty");
    const char *v[] = {text, store_pg_i64(tb, tokens), store_pg_i64(ib, id)};
    int rc = store_pg_begin(s, err);
    if (rc == LC_OK)
        rc = store_pg_cmd(s, "UPDATE summaries SET text = $1, tokens = $2::bigint WHERE id = $3::bigint", 3, v, 0,
                          "summary text", &n, err);
    if (rc == LC_OK && n == 0) rc = lc_errf(err, LC_NOTFOUND, "store: no summary #%lld", (long long)id);
    if (rc == LC_OK) rc = store_pg_commit(s, err);
    if (rc != LC_OK) store_pg_rollback(s);
    return rc;
}

/* ---- the projection's rows ----------------------------------------------------------------- */

int store_pg_cut_get(store *s, store_cut_which which, int64_t id, store_cut *out, char **err)
{
    static const char *const sql[] = {
        [STORE_CUT_BY_ID] = "SELECT id, anchor_entry, anchor_ordinal, message, nodes, stubbed FROM lcm_cuts"
                            " WHERE id = $1::bigint",
        [STORE_CUT_NEWEST] = "SELECT id, anchor_entry, anchor_ordinal, message, nodes, stubbed FROM lcm_cuts"
                             " WHERE $1::bigint IS NOT NULL ORDER BY id DESC LIMIT 1",
        [STORE_CUT_ON_BRANCH] = "SELECT c.id, c.anchor_entry, c.anchor_ordinal, c.message, c.nodes, c.stubbed"
                                " FROM lcm_cuts c JOIN messages m ON m.entry_id = c.anchor_entry"
                                " WHERE m.removed = 0 AND $1::bigint IS NOT NULL ORDER BY c.id DESC LIMIT 1",
    };
    char b[24];
    int rc = LC_OK;
    memset(out, 0, sizeof *out);
    if ((unsigned)which > STORE_CUT_ON_BRANCH) return lc_errf(err, LC_INVALID, "store: no such cut query");
    const char *v[] = {store_pg_i64(b, id)};
    PGresult *r = store_pg_run(s, sql[which], 1, v, STORE_PG_IDEM, "cut", err);
    if (!r) return LC_ERR;
    if (PQntuples(r) == 0) {
        rc = LC_NOTFOUND;
        goto done;
    }
    out->id = store_pg_col_int(r, 0, 0);
    out->anchor_entry = store_pg_col_dup(r, 0, 1);
    out->anchor_ordinal = store_pg_col_int(r, 0, 2);
    out->message = store_pg_col_dup(r, 0, 3);
    out->nodes_json = store_pg_col_dup(r, 0, 4);
    out->stubbed = (int)store_pg_col_int(r, 0, 5);
    rc = store_common_cut_read(out, err);
done:
    PQclear(r);
    return rc;
}

int store_pg_cut_add(store *s, const store_cut *in, int64_t tokens, int64_t *out_id, char **err)
{
    char ob[24], tb[24], sb[24], nb[24];
    *out_id = 0;
    const char *v[] = {in->anchor_entry, store_pg_i64(ob, in->anchor_ordinal), in->message, store_pg_i64(tb, tokens),
                       in->nodes_json, store_pg_i64(sb, in->stubbed), store_pg_now(nb)};
    PGresult *r = store_pg_run(s,
                               "INSERT INTO lcm_cuts(anchor_entry, anchor_ordinal, message, tokens, nodes, stubbed,"
                               " created) VALUES($1, $2::bigint, $3, $4::bigint, $5, $6::integer, $7::bigint)"
                               " RETURNING id",
                               7, v, 0, "cut", err);
    if (!r) return LC_ERR;
    if (PQntuples(r) == 1) *out_id = store_pg_col_int(r, 0, 0);
    PQclear(r);
    return LC_OK;
}

int store_pg_pin_get(store *s, store_pin *out, char **err)
{
    memset(out, 0, sizeof *out);
    PGresult *r = store_pg_run(s, "SELECT cut_id, applied_tokens, \"window\" FROM lcm_pin WHERE id = 1", 0, NULL,
                               STORE_PG_IDEM, "pin", err);
    if (!r) return LC_ERR;
    int rc = LC_NOTFOUND;
    if (PQntuples(r) > 0) {
        out->cut_id = store_pg_col_int(r, 0, 0);
        out->applied_tokens = (long)store_pg_col_int(r, 0, 1);
        out->window = (long)store_pg_col_int(r, 0, 2);
        rc = LC_OK;
    }
    PQclear(r);
    return rc;
}

int store_pg_pin_set(store *s, const store_pin *pin, char **err)
{
    char a[24], b[24], c[24], d[24];
    const char *v[] = {store_pg_i64(a, pin->cut_id), store_pg_i64(b, pin->applied_tokens), store_pg_i64(c, pin->window),
                       store_pg_now(d)};
    return store_pg_cmd(s,
                        "INSERT INTO lcm_pin(id, cut_id, applied_tokens, \"window\", updated)"
                        " VALUES(1, $1::bigint, $2::bigint, $3::bigint, $4::bigint) ON CONFLICT (sid, id) DO UPDATE"
                        " SET cut_id = EXCLUDED.cut_id, applied_tokens = EXCLUDED.applied_tokens,"
                        " \"window\" = EXCLUDED.\"window\", updated = EXCLUDED.updated",
                        4, v, STORE_PG_IDEM, "pin", NULL, err);
}

int store_pg_pin_clear(store *s, char **err)
{
    return store_pg_cmd(s, "DELETE FROM lcm_pin", 0, NULL, STORE_PG_IDEM, "pin", NULL, err);
}

/* ---- the DAG's reads ------------------------------------------------------------------------ */

/* Visit the rows of `r` (columns: ordinal, entry_id, role, tokens, uncovered, text, id).
 * *last_ord / *last_id get the last row's keys; *stop = 1 when the visitor stopped. */
static int store_pg_visit_msgs(const PGresult *r, int with_text, store_msg_visit visit, void *ud, int64_t *last_ord,
                               int64_t *last_id, int *stop, char **err)
{
    int rc = LC_OK;
    for (int i = 0; i < PQntuples(r); i++) {
        store_dag_msg m = {0};
        m.ordinal = store_pg_col_int(r, i, 0);
        m.entry_id = PQgetvalue(r, i, 1);
        m.role = PQgetvalue(r, i, 2);
        m.tokens = store_pg_col_int(r, i, 3);
        m.uncovered = strcmp(PQgetvalue(r, i, 4), "t") == 0 || strcmp(PQgetvalue(r, i, 4), "1") == 0;
        if (with_text) m.text = PQgetvalue(r, i, 5);
        *last_ord = m.ordinal;
        *last_id = store_pg_col_int(r, i, 6);
        if (!store_common_visit_next(visit(ud, &m, err), &rc, stop)) return rc;
    }
    return LC_OK;
}

/* A walk in keyset batches: `sql` takes $1/$2 (the last row's ordinal and id), $3 (the
 * batch size) and `extra` from $4 on, and returns the columns store_pg_visit_msgs reads. */
static int store_pg_walk_batched(store *s, const char *sql, int desc, int nextra, const char *const *extra,
                                 int with_text, store_msg_visit visit, void *ud, int *stopped, const char *what,
                                 char **err)
{
    int64_t ord = desc ? INT64_MAX : INT64_MIN, id = desc ? INT64_MAX : INT64_MIN;
    int stop = 0, rc = LC_OK;
    if (stopped) *stopped = 0;
    for (;;) {
        char ob[24], ib[24], lb[24];
        const char *v[8] = {store_pg_i64(ob, ord), store_pg_i64(ib, id), store_pg_i64(lb, STORE_PG_BATCH)};
        for (int i = 0; i < nextra && i < 5; i++) v[3 + i] = extra[i];
        PGresult *r = store_pg_run(s, sql, 3 + nextra, v, STORE_PG_IDEM, what, err);
        if (!r) return LC_ERR;
        int got = PQntuples(r);
        rc = store_pg_visit_msgs(r, with_text, visit, ud, &ord, &id, &stop, err);
        PQclear(r);
        if (rc != LC_OK || stop || got < STORE_PG_BATCH) break;
    }
    if (stopped) *stopped = stop;
    return rc;
}

int store_pg_dag_walk_tail(store *s, store_msg_visit visit, void *ud, int *stopped, char **err)
{
    return store_pg_walk_batched(s,
                                 "SELECT m.ordinal, m.entry_id, m.role, m.tokens, m.role NOT IN (" STORE_DAG_EXCLUDED_ROLES
                                 ") AND " STORE_PG_UNCOVERED("m") ", NULL, m.id FROM messages m WHERE m.removed = 0"
                                 " AND (m.ordinal, m.id) < ($1::bigint, $2::bigint)"
                                 " ORDER BY m.ordinal DESC, m.id DESC LIMIT $3::bigint",
                                 1, 0, NULL, 0, visit, ud, stopped, "fresh tail", err);
}

int store_pg_walk_newest(store *s, store_msg_visit visit, void *ud, int *stopped, char **err)
{
    return store_pg_walk_batched(s,
                                 "SELECT m.ordinal, m.entry_id, m.role, m.tokens, 0, m.text, m.id FROM messages m"
                                 " WHERE m.removed = 0 AND (m.ordinal, m.id) < ($1::bigint, $2::bigint)"
                                 " ORDER BY m.ordinal DESC, m.id DESC LIMIT $3::bigint",
                                 1, 0, NULL, 1, visit, ud, stopped, "newest messages", err);
}

long long store_pg_last_activity_ms(store *s)
{
    long long t = store_pg_int(s, "SELECT created FROM messages ORDER BY ordinal DESC, id DESC LIMIT 1", 0, NULL, 0);
    if (t <= 0) {
        char *c = store_pg_meta_get(s, "created");
        t = c ? atoll(c) : 0;
        free(c);
    }
    return t;
}

int store_pg_dag_walk_uncovered(store *s, int64_t after, int64_t before, store_msg_visit visit, void *ud, int *stopped,
                                char **err)
{
    char ab[24], bb[24];
    const char *extra[] = {store_pg_i64(ab, after), store_pg_i64(bb, before)};
    return store_pg_walk_batched(s,
                                 "SELECT m.ordinal, m.entry_id, m.role, m.tokens, 1, m.text, m.id FROM messages m"
                                 " WHERE " STORE_PG_ELIGIBLE("m") " AND m.ordinal > $4::bigint AND m.ordinal < $5::bigint"
                                 " AND " STORE_PG_UNCOVERED("m") " AND (m.ordinal, m.id) > ($1::bigint, $2::bigint)"
                                 " ORDER BY m.ordinal, m.id LIMIT $3::bigint",
                                 0, 2, extra, 1, visit, ud, stopped, "uncovered messages", err);
}

int store_pg_dag_count_uncovered(store *s, int64_t from, int64_t before, int64_t *count, char **err)
{
    char fb[24], bb[24];
    const char *v[] = {store_pg_i64(bb, before), store_pg_i64(fb, from)};
    PGresult *r = store_pg_run(s,
                               "SELECT count(*) FROM messages m WHERE " STORE_PG_ELIGIBLE("m")
                               " AND m.ordinal >= $2::bigint AND ($1::bigint <= 0 OR m.ordinal < $1::bigint) AND "
                               STORE_PG_UNCOVERED("m"),
                               2, v, STORE_PG_IDEM, "coverage", err);
    *count = 0;
    if (!r) return LC_ERR;
    *count = store_pg_col_int(r, 0, 0);
    PQclear(r);
    return LC_OK;
}

/* Visit `r` (columns: id, depth, kind, text, then the span's when `spans`). */
static int store_pg_walk_nodes(PGresult *r, int spans, store_node_visit visit, void *ud, char **err)
{
    int rc = LC_OK;
    for (int i = 0; i < PQntuples(r); i++) {
        store_node n = {0};
        n.id = store_pg_col_int(r, i, 0);
        n.depth = (int)store_pg_col_int(r, i, 1);
        n.leaf = strcmp(PQgetvalue(r, i, 2), "leaf") == 0;
        n.text = PQgetvalue(r, i, 3);
        if (spans) {
            n.tiers_json = store_pg_col(r, i, 4);
            n.tokens = store_pg_col_int(r, i, 5);
            n.first_ordinal = store_pg_col_int(r, i, 6);
            n.last_ordinal = store_pg_col_int(r, i, 7);
            n.first_entry = store_pg_col(r, i, 8);
            n.last_entry = store_pg_col(r, i, 9);
            n.entry_count = store_pg_col_int(r, i, 10);
        }
        if (!store_common_visit_next(visit(ud, &n, err), &rc, NULL)) break;
    }
    PQclear(r);
    return rc;
}

int store_pg_dag_walk_frontier(store *s, store_node_visit visit, void *ud, char **err)
{
    PGresult *r = store_pg_run(s,
                               "SELECT s.id, s.depth, s.kind, s.text, s.tiers, s.tokens, sp.first_ordinal,"
                               " sp.last_ordinal, sp.first_entry, sp.last_entry, sp.entry_count"
                               " FROM summaries s JOIN summary_spans sp ON sp.summary_id = s.id"
                               " WHERE NOT EXISTS (SELECT 1 FROM summary_children c WHERE c.child_id = s.id)"
                               " ORDER BY sp.first_ordinal, s.id",
                               0, NULL, STORE_PG_IDEM, "frontier", err);
    return r ? store_pg_walk_nodes(r, 1, visit, ud, err) : LC_ERR;
}

int store_pg_dag_walk_prefixed(store *s, const char *prefix, store_node_visit visit, void *ud, char **err)
{
    const char *v[] = {prefix};
    PGresult *r = store_pg_run(s,
                               "SELECT id, depth, kind, text FROM summaries WHERE left(text, length($1)) = $1"
                               " ORDER BY id",
                               1, v, STORE_PG_IDEM, "summaries", err);
    return r ? store_pg_walk_nodes(r, 0, visit, ud, err) : LC_ERR;
}

int store_pg_dag_walk_source(store *s, int64_t id, int leaf, store_msg_visit visit, void *ud, char **err)
{
    char b[24];
    const char *v[] = {store_pg_i64(b, id)};
    PGresult *r = store_pg_run(s,
                               leaf ? "SELECT m.ordinal, m.entry_id, m.role, m.tokens, 0, m.text, m.id"
                                      " FROM summary_messages sm JOIN messages m ON m.entry_id = sm.entry_id"
                                      " WHERE sm.summary_id = $1::bigint ORDER BY sm.position"
                                    : "SELECT 0, '', '', s.tokens, 0, s.text, s.id FROM summary_children c"
                                      " JOIN summaries s ON s.id = c.child_id WHERE c.parent_id = $1::bigint"
                                      " ORDER BY c.position",
                               1, v, STORE_PG_IDEM, "summary source", err);
    if (!r) return LC_ERR;
    int64_t o, i;
    int stop = 0;
    int rc = store_pg_visit_msgs(r, 1, visit, ud, &o, &i, &stop, err);
    PQclear(r);
    return rc;
}

/* ---- runs and events ------------------------------------------------------------------------ */

int64_t store_pg_run_begin(store *s, const char *kind)
{
    char pb[24], nb[24], lb[24], hn[256] = "";
    if (gethostname(hn, sizeof hn - 1) != 0) hn[0] = '\0';
    const char *v[] = {kind, store_pg_i64(pb, (int64_t)getpid()), store_pg_now(nb), hn,
                       store_pg_i64(lb, STORE_RUN_LEASE_MS)};
    /* Not repeated after a lost connection: a second row would be an open run. */
    PGresult *r = store_pg_run(s, "INSERT INTO runs(kind, pid, started, host, lease_until)"
                                  " VALUES($1, $2::bigint, $3::bigint, $4, $3::bigint + $5::bigint) RETURNING id",
                               5, v, 0, "runs", NULL);
    int64_t id = r && PQntuples(r) == 1 ? store_pg_col_int(r, 0, 0) : 0;
    PQclear(r);
    return id;
}

/* Best effort like begin: a renewal lost with the connection only shortens the lease. */
void store_pg_run_renew(store *s, int64_t id)
{
    char nb[24], lb[24], ib[24];
    const char *v[] = {store_pg_now(nb), store_pg_i64(lb, STORE_RUN_LEASE_MS), store_pg_i64(ib, id)};
    store_pg_cmd(s, "UPDATE runs SET lease_until = $1::bigint + $2::bigint WHERE id = $3::bigint AND finished IS NULL",
                 3, v, STORE_PG_IDEM, "runs", NULL, NULL);
}

void store_pg_run_end(store *s, int64_t id, const char *status)
{
    char nb[24], ib[24];
    if (id <= 0) return;
    const char *v[] = {store_pg_now(nb), status, store_pg_i64(ib, id)};
    store_pg_cmd(s, "UPDATE runs SET finished = $1::bigint, status = $2 WHERE id = $3::bigint", 3, v, STORE_PG_IDEM,
                 "runs", NULL, NULL);
}

int store_pg_event_add(store *s, const char *kind, const char *data_json, char **err)
{
    char nb[24];
    const char *v[] = {kind, data_json, store_pg_now(nb)};
    return store_pg_cmd(s, "INSERT INTO lcm_events(kind, data, created) VALUES($1, $2, $3::bigint)", 3, v, 0, "event",
                        NULL, err);
}

int64_t store_pg_event_count(store *s, const char *kind)
{
    const char *v[] = {kind};
    return store_pg_int(s, "SELECT count(*) FROM lcm_events WHERE kind = $1", 1, v, 0);
}
