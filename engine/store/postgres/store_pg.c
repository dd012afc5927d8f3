/*
 * store_pg.c -- the PostgreSQL backend's connection (a shared store: one database, many
 * sessions, many machines): the URI and its redaction (a password is never shown), open
 * by agent home and session id, read-only open by path or by session id, the listing of a
 * home's (or every) session, the schema and its forward migrations, the DAG-progress and
 * id triggers, the one way a statement runs (reset and retry after a lost connection),
 * transactions under the session's write lock, meta, counts, and the backend's tables.
 * Messages live in store_pg_msgs.c, the DAG's rows in store_pg_dag.c, recall's primitives
 * in store_pg_search.c, maint's in store_pg_admin.c; all share store_pg_int.h.
 */
#include "store.h"
#include "store_pg.h"
#include "store_pg_int.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

/* ---- the schema ------------------------------------------------------------------------------
 * Version n -> n+1 of the PostgreSQL layout, applied in order in one transaction under an
 * advisory lock (two hosts creating the database's first session at once apply it once).
 * Version 1 holds the store's schema STORE_SCHEMA_VERSION (2): the same tables and columns
 * as the SQLite store, each with the session key `sid`; the full-text indexes are
 * generated tsvector columns with GIN indexes: the text's runs of letters and digits (every
 * other character a separator, as FTS5's unicode61 tokenizer splits) through the 'simple'
 * configuration (lower-cased, no stemming, no stop words); 'english' (stems) from version 3.
 * Ids are per session (max + 1 under the session's lock, like a SQLite rowid), so a
 * session's summary ids read the same in both backends. */
#define PG_SID "sid bigint NOT NULL DEFAULT current_setting('lcm.sid')::bigint" \
               " REFERENCES lcm.sessions(sid) ON DELETE CASCADE"
#define PG_EXCLUDED STORE_DAG_EXCLUDED_ROLES
_Static_assert(STORE_INDEX_CHARS == 100000, "the tsvector's literal reach");

static const char *const store_pg_migrations[] = {
    /* 0 -> 1 */
    "CREATE TABLE lcm.sessions("
    "  sid bigserial PRIMARY KEY,"
    "  agent text NOT NULL,"
    "  host text NOT NULL,"
    "  agent_home text NOT NULL,"
    "  session_id text NOT NULL,"
    "  cwd text,"
    "  session_file text,"
    "  created bigint NOT NULL,"
    "  last_activity bigint NOT NULL DEFAULT 0,"
    "  UNIQUE(agent, session_id));"
    "CREATE TABLE lcm.meta(" PG_SID ", key text NOT NULL, value text NOT NULL, PRIMARY KEY(sid, key));"
    "CREATE TABLE lcm.messages(" PG_SID ","
    "  id bigint NOT NULL,"
    "  entry_id text NOT NULL,"
    "  ordinal bigint NOT NULL,"
    "  role text NOT NULL,"
    "  text text NOT NULL,"
    "  chars bigint NOT NULL,"
    "  tokens bigint NOT NULL,"
    "  raw_json text NOT NULL,"
    "  payload text,"
    "  removed integer NOT NULL DEFAULT 0,"
    "  tool_name text,"
    "  tool_path text,"
    "  created bigint NOT NULL,"
    "  tsv tsvector GENERATED ALWAYS AS (to_tsvector('simple'::regconfig, "
    "regexp_replace(left(text, 100000), '[^[:alnum:]]+', ' ', 'g'))) STORED,"
    "  PRIMARY KEY(sid, id), UNIQUE(sid, entry_id));"
    "CREATE INDEX messages_ordinal ON lcm.messages(sid, ordinal, id);"
    "CREATE INDEX messages_tsv ON lcm.messages USING gin(tsv);"
    "CREATE INDEX messages_long ON lcm.messages(sid) WHERE chars > 100000;"
    "CREATE INDEX messages_removed ON lcm.messages(sid) WHERE removed = 1;"
    "CREATE TABLE lcm.summaries(" PG_SID ","
    "  id bigint NOT NULL,"
    "  kind text NOT NULL CHECK(kind IN ('leaf','condensed')),"
    "  depth integer NOT NULL,"
    "  text text NOT NULL,"
    "  tiers text,"
    "  tokens bigint NOT NULL,"
    "  created bigint NOT NULL,"
    "  tsv tsvector GENERATED ALWAYS AS (to_tsvector('simple'::regconfig, "
    "regexp_replace(text, '[^[:alnum:]]+', ' ', 'g'))) STORED,"
    "  PRIMARY KEY(sid, id));"
    "CREATE INDEX summaries_tsv ON lcm.summaries USING gin(tsv);"
    "CREATE TABLE lcm.summary_children(" PG_SID ","
    "  parent_id bigint NOT NULL,"
    "  child_id bigint NOT NULL,"
    "  position bigint NOT NULL,"
    "  PRIMARY KEY(sid, parent_id, child_id),"
    "  FOREIGN KEY(sid, parent_id) REFERENCES lcm.summaries(sid, id) ON DELETE CASCADE,"
    "  FOREIGN KEY(sid, child_id) REFERENCES lcm.summaries(sid, id));"
    "CREATE INDEX summary_children_child ON lcm.summary_children(sid, child_id);"
    "CREATE TABLE lcm.summary_spans(" PG_SID ","
    "  summary_id bigint NOT NULL,"
    "  first_ordinal bigint NOT NULL,"
    "  last_ordinal bigint NOT NULL,"
    "  first_entry text NOT NULL,"
    "  last_entry text NOT NULL,"
    "  entry_count bigint NOT NULL,"
    "  PRIMARY KEY(sid, summary_id),"
    "  FOREIGN KEY(sid, summary_id) REFERENCES lcm.summaries(sid, id) ON DELETE CASCADE);"
    "CREATE TABLE lcm.summary_messages(" PG_SID ","
    "  summary_id bigint NOT NULL,"
    "  entry_id text NOT NULL,"
    "  position bigint NOT NULL,"
    "  PRIMARY KEY(sid, summary_id, entry_id),"
    "  FOREIGN KEY(sid, summary_id) REFERENCES lcm.summaries(sid, id) ON DELETE CASCADE);"
    "CREATE INDEX summary_messages_entry ON lcm.summary_messages(sid, entry_id);"
    "CREATE TABLE lcm.file_handles(" PG_SID ","
    "  id bigint NOT NULL,"
    "  entry_id text NOT NULL,"
    "  path text,"
    "  content_id text NOT NULL,"
    "  kind text NOT NULL,"
    "  chars bigint NOT NULL,"
    "  preview text NOT NULL,"
    "  summary text NOT NULL,"
    "  PRIMARY KEY(sid, id), UNIQUE(sid, entry_id));"
    "CREATE INDEX file_handles_path ON lcm.file_handles(sid, path);"
    /* A run's pid means something on the machine that wrote it only. */
    "CREATE TABLE lcm.runs(" PG_SID ","
    "  id bigint NOT NULL,"
    "  kind text NOT NULL,"
    "  pid bigint NOT NULL,"
    "  started bigint NOT NULL,"
    "  finished bigint,"
    "  status text,"
    "  host text NOT NULL DEFAULT '',"
    "  PRIMARY KEY(sid, id));"
    "CREATE TABLE lcm.lcm_cuts(" PG_SID ","
    "  id bigint NOT NULL,"
    "  anchor_entry text NOT NULL,"
    "  anchor_ordinal bigint NOT NULL,"
    "  message text NOT NULL,"
    "  tokens bigint NOT NULL,"
    "  nodes text NOT NULL,"
    "  stubbed integer NOT NULL,"
    "  created bigint NOT NULL,"
    "  PRIMARY KEY(sid, id));"
    "CREATE TABLE lcm.lcm_pin(" PG_SID ","
    "  id bigint NOT NULL CHECK(id = 1),"
    "  cut_id bigint NOT NULL,"
    "  applied_tokens bigint NOT NULL,"
    "  \"window\" bigint NOT NULL,"
    "  updated bigint NOT NULL,"
    "  PRIMARY KEY(sid, id));"
    "CREATE TABLE lcm.lcm_events(" PG_SID ","
    "  id bigint NOT NULL,"
    "  kind text NOT NULL,"
    "  data text,"
    "  created bigint NOT NULL,"
    "  PRIMARY KEY(sid, id));"
    /* Ids: the next of the session, under its lock (held to the end of the transaction,
     * so two writers of one session never draw the same id). */
    "CREATE FUNCTION lcm.next_id() RETURNS trigger LANGUAGE plpgsql AS $f$"
    " BEGIN"
    "  PERFORM 1 FROM lcm.sessions WHERE sid = NEW.sid FOR UPDATE;"
    "  IF NEW.id IS NULL THEN"
    "   EXECUTE format('SELECT coalesce(max(id), 0) + 1 FROM %I.%I WHERE sid = $1', TG_TABLE_SCHEMA, TG_TABLE_NAME)"
    "    INTO NEW.id USING NEW.sid;"
    "  END IF;"
    "  RETURN NEW;"
    " END $f$;"
    "CREATE TRIGGER messages_id BEFORE INSERT ON lcm.messages FOR EACH ROW EXECUTE FUNCTION lcm.next_id();"
    "CREATE TRIGGER summaries_id BEFORE INSERT ON lcm.summaries FOR EACH ROW EXECUTE FUNCTION lcm.next_id();"
    "CREATE TRIGGER file_handles_id BEFORE INSERT ON lcm.file_handles FOR EACH ROW EXECUTE FUNCTION lcm.next_id();"
    "CREATE TRIGGER runs_id BEFORE INSERT ON lcm.runs FOR EACH ROW EXECUTE FUNCTION lcm.next_id();"
    "CREATE TRIGGER lcm_cuts_id BEFORE INSERT ON lcm.lcm_cuts FOR EACH ROW EXECUTE FUNCTION lcm.next_id();"
    "CREATE TRIGGER lcm_events_id BEFORE INSERT ON lcm.lcm_events FOR EACH ROW EXECUTE FUNCTION lcm.next_id();"
    /* The DAG progress numbers (store.h) follow every write, whichever connection makes it:
     * the same rules as the SQLite backend's triggers. */
    "CREATE FUNCTION lcm.dag_arrive(p_sid bigint, p_ord bigint, p_tokens bigint) RETURNS void LANGUAGE sql AS $f$"
    " UPDATE lcm.meta SET value = least(value::bigint, p_ord)::text WHERE sid = p_sid AND key = 'dag_watermark';"
    " UPDATE lcm.meta SET value = (value::bigint + p_tokens)::text WHERE sid = p_sid AND key = 'dag_pending';"
    " $f$;"
    "CREATE FUNCTION lcm.uncovered(p_sid bigint, p_entry text) RETURNS boolean LANGUAGE sql STABLE AS $f$"
    " SELECT NOT EXISTS (SELECT 1 FROM lcm.summary_messages WHERE sid = p_sid AND entry_id = p_entry) $f$;"
    "CREATE FUNCTION lcm.messages_progress() RETURNS trigger LANGUAGE plpgsql AS $f$"
    " DECLARE wm bigint;"
    " BEGIN"
    "  IF TG_OP = 'INSERT' THEN"
    "   IF NEW.removed = 0 AND NEW.role NOT IN (" PG_EXCLUDED ") AND lcm.uncovered(NEW.sid, NEW.entry_id) THEN"
    "    PERFORM lcm.dag_arrive(NEW.sid, NEW.ordinal, NEW.tokens);"
    "   END IF;"
    "  ELSIF TG_OP = 'UPDATE' THEN"
    "   IF OLD.removed = 1 AND NEW.removed = 0 AND NEW.role NOT IN (" PG_EXCLUDED ")"
    "      AND lcm.uncovered(NEW.sid, NEW.entry_id) THEN"
    "    PERFORM lcm.dag_arrive(NEW.sid, NEW.ordinal, NEW.tokens);"
    "   ELSIF OLD.removed = 0 AND NEW.removed = 1 AND NEW.role NOT IN (" PG_EXCLUDED ")"
    "      AND lcm.uncovered(NEW.sid, NEW.entry_id) THEN"
    "    SELECT value::bigint INTO wm FROM lcm.meta WHERE sid = NEW.sid AND key = 'dag_watermark';"
    "    IF NEW.ordinal >= wm THEN"
    "     UPDATE lcm.meta SET value = (value::bigint - NEW.tokens)::text WHERE sid = NEW.sid AND key = 'dag_pending';"
    "    END IF;"
    "   END IF;"
    "  ELSE"
    "   DELETE FROM lcm.meta WHERE sid = OLD.sid AND key IN ('dag_watermark', 'dag_pending');"
    "  END IF;"
    "  RETURN NULL;"
    " END $f$;"
    "CREATE TRIGGER messages_progress AFTER INSERT OR UPDATE OF removed OR DELETE ON lcm.messages"
    " FOR EACH ROW EXECUTE FUNCTION lcm.messages_progress();"
    "CREATE FUNCTION lcm.coverage_progress() RETURNS trigger LANGUAGE plpgsql AS $f$"
    " BEGIN"
    "  IF TG_OP = 'INSERT' THEN"
    "   IF (SELECT count(*) FROM lcm.summary_messages WHERE sid = NEW.sid AND entry_id = NEW.entry_id) = 1 THEN"
    "    UPDATE lcm.meta SET value = (value::bigint - (SELECT m.tokens FROM lcm.messages m"
    "      WHERE m.sid = NEW.sid AND m.entry_id = NEW.entry_id))::text"
    "     WHERE sid = NEW.sid AND key = 'dag_pending' AND EXISTS (SELECT 1 FROM lcm.messages m"
    "      WHERE m.sid = NEW.sid AND m.entry_id = NEW.entry_id AND m.removed = 0"
    "      AND m.role NOT IN (" PG_EXCLUDED ") AND m.ordinal >= (SELECT value::bigint FROM lcm.meta"
    "      WHERE sid = NEW.sid AND key = 'dag_watermark'));"
    "   END IF;"
    "  ELSIF lcm.uncovered(OLD.sid, OLD.entry_id) THEN"
    "   DELETE FROM lcm.meta WHERE sid = OLD.sid AND key IN ('dag_watermark', 'dag_pending');"
    "  END IF;"
    "  RETURN NULL;"
    " END $f$;"
    "CREATE TRIGGER summary_messages_progress AFTER INSERT OR DELETE ON lcm.summary_messages"
    " FOR EACH ROW EXECUTE FUNCTION lcm.coverage_progress();"
    /* The pointer block's size is valid until a node or an edge changes. */
    "CREATE FUNCTION lcm.block_forget() RETURNS trigger LANGUAGE plpgsql AS $f$"
    " BEGIN"
    "  DELETE FROM lcm.meta WHERE sid = CASE WHEN TG_OP = 'DELETE' THEN OLD.sid ELSE NEW.sid END"
    "   AND key = 'dag_block_tokens';"
    "  RETURN NULL;"
    " END $f$;"
    "CREATE TRIGGER summaries_block AFTER INSERT OR UPDATE OR DELETE ON lcm.summaries"
    " FOR EACH ROW EXECUTE FUNCTION lcm.block_forget();"
    "CREATE TRIGGER summary_children_block AFTER INSERT OR UPDATE OR DELETE ON lcm.summary_children"
    " FOR EACH ROW EXECUTE FUNCTION lcm.block_forget();"
    /* One session's rows, under the names the SQLite store uses: every statement of the
     * backend (and a test's plain SQL) reads and writes through these. */
    "CREATE SCHEMA IF NOT EXISTS lcm_session;"
    /* sid shown where an upsert names the key it conflicts on. */
    "CREATE VIEW lcm_session.meta AS SELECT sid, key, value FROM lcm.meta"
    " WHERE sid = current_setting('lcm.sid')::bigint;"
    "CREATE VIEW lcm_session.messages AS SELECT id, entry_id, ordinal, role, text, chars, tokens, raw_json,"
    " payload, removed, tool_name, tool_path, created, tsv FROM lcm.messages"
    " WHERE sid = current_setting('lcm.sid')::bigint;"
    "CREATE VIEW lcm_session.summaries AS SELECT id, kind, depth, text, tiers, tokens, created, tsv"
    " FROM lcm.summaries WHERE sid = current_setting('lcm.sid')::bigint;"
    "CREATE VIEW lcm_session.summary_children AS SELECT parent_id, child_id, position FROM lcm.summary_children"
    " WHERE sid = current_setting('lcm.sid')::bigint;"
    "CREATE VIEW lcm_session.summary_spans AS SELECT summary_id, first_ordinal, last_ordinal, first_entry,"
    " last_entry, entry_count FROM lcm.summary_spans WHERE sid = current_setting('lcm.sid')::bigint;"
    "CREATE VIEW lcm_session.summary_messages AS SELECT summary_id, entry_id, position FROM lcm.summary_messages"
    " WHERE sid = current_setting('lcm.sid')::bigint;"
    "CREATE VIEW lcm_session.file_handles AS SELECT id, entry_id, path, content_id, kind, chars, preview, summary"
    " FROM lcm.file_handles WHERE sid = current_setting('lcm.sid')::bigint;"
    "CREATE VIEW lcm_session.runs AS SELECT id, kind, pid, started, finished, status, host FROM lcm.runs"
    " WHERE sid = current_setting('lcm.sid')::bigint;"
    "CREATE VIEW lcm_session.lcm_cuts AS SELECT id, anchor_entry, anchor_ordinal, message, tokens, nodes, stubbed,"
    " created FROM lcm.lcm_cuts WHERE sid = current_setting('lcm.sid')::bigint;"
    "CREATE VIEW lcm_session.lcm_pin AS SELECT sid, id, cut_id, applied_tokens, \"window\", updated FROM lcm.lcm_pin"
    " WHERE sid = current_setting('lcm.sid')::bigint;"
    "CREATE VIEW lcm_session.lcm_events AS SELECT id, kind, data, created FROM lcm.lcm_events"
    " WHERE sid = current_setting('lcm.sid')::bigint;",
    /* 1 -> 2: runs as leases (a pid means nothing on another machine) and named leases for
     * the work two processes must not do at once; the store's own schema is unchanged. */
    "ALTER TABLE lcm.runs ADD COLUMN lease_until bigint;"
    "CREATE OR REPLACE VIEW lcm_session.runs AS SELECT id, kind, pid, started, finished, status, host, lease_until"
    " FROM lcm.runs WHERE sid = current_setting('lcm.sid')::bigint;"
    "CREATE TABLE lcm.leases(" PG_SID ","
    "  name text NOT NULL,"
    "  holder text NOT NULL,"
    "  until bigint NOT NULL,"
    "  PRIMARY KEY(sid, name));"
    "CREATE VIEW lcm_session.leases AS SELECT sid, name, holder, until FROM lcm.leases"
    " WHERE sid = current_setting('lcm.sid')::bigint;",
    /* 2 -> 3: words are matched by stem, as the SQLite index's porter does (store 5): the
     * tsvectors through the 'english' configuration (snowball stems, its stop words left
     * out), and every query through it too (STORE_PG_TS: the database's own). The generated columns are made
     * again (PostgreSQL before 17 cannot change their expression), which rewrites both
     * tables once, inside the migration's transaction. Thinking, tool arguments decoded and
     * CJK bigrams are the SQLite index's only (docs/DESIGN.md §6.9). */
    "DROP VIEW lcm_session.messages; DROP VIEW lcm_session.summaries;"
    "ALTER TABLE lcm.messages DROP COLUMN tsv;"
    "ALTER TABLE lcm.messages ADD COLUMN tsv tsvector GENERATED ALWAYS AS (to_tsvector(" STORE_PG_TS_CONFIG "::regconfig, "
    "regexp_replace(left(text, 100000), '[^[:alnum:]]+', ' ', 'g'))) STORED;"
    "CREATE INDEX messages_tsv ON lcm.messages USING gin(tsv);"
    "ALTER TABLE lcm.summaries DROP COLUMN tsv;"
    "ALTER TABLE lcm.summaries ADD COLUMN tsv tsvector GENERATED ALWAYS AS (to_tsvector(" STORE_PG_TS_CONFIG "::regconfig, "
    "regexp_replace(text, '[^[:alnum:]]+', ' ', 'g'))) STORED;"
    "CREATE INDEX summaries_tsv ON lcm.summaries USING gin(tsv);"
    "CREATE VIEW lcm_session.messages AS SELECT id, entry_id, ordinal, role, text, chars, tokens, raw_json,"
    " payload, removed, tool_name, tool_path, created, tsv FROM lcm.messages"
    " WHERE sid = current_setting('lcm.sid')::bigint;"
    "CREATE VIEW lcm_session.summaries AS SELECT id, kind, depth, text, tiers, tokens, created, tsv"
    " FROM lcm.summaries WHERE sid = current_setting('lcm.sid')::bigint;",
    /* 3 -> 4: hybrid recall's vectors, as the SQLite store's schema 3 keeps them (one per
     * message and per summary with its model; float32 in the writer's byte order, a bytea),
     * scanned on the client (vecindex.h). meta `vec_version` moves with every change the
     * scan would see (store.h "vectors"): store_pg_vec_put bumps it, these triggers bump it
     * for a vector deleted (with its row, a summary's new text) and a removal mark. A
     * session being deleted takes its meta with it: the bump then writes nothing. */
    "CREATE TABLE lcm.message_vectors(" PG_SID ","
    "  message_id bigint NOT NULL,"
    "  entry_id text NOT NULL,"
    "  model text NOT NULL,"
    "  dim integer NOT NULL,"
    "  vec bytea NOT NULL,"
    "  created bigint NOT NULL,"
    "  PRIMARY KEY(sid, message_id),"
    "  FOREIGN KEY(sid, message_id) REFERENCES lcm.messages(sid, id) ON DELETE CASCADE);"
    "CREATE TABLE lcm.summary_vectors(" PG_SID ","
    "  summary_id bigint NOT NULL,"
    "  model text NOT NULL,"
    "  dim integer NOT NULL,"
    "  vec bytea NOT NULL,"
    "  created bigint NOT NULL,"
    "  PRIMARY KEY(sid, summary_id),"
    "  FOREIGN KEY(sid, summary_id) REFERENCES lcm.summaries(sid, id) ON DELETE CASCADE);"
    "CREATE INDEX message_vectors_model ON lcm.message_vectors(sid, model);"
    "CREATE INDEX summary_vectors_model ON lcm.summary_vectors(sid, model);"
    "CREATE VIEW lcm_session.message_vectors AS SELECT message_id, entry_id, model, dim, vec, created"
    " FROM lcm.message_vectors WHERE sid = current_setting('lcm.sid')::bigint;"
    "CREATE VIEW lcm_session.summary_vectors AS SELECT summary_id, model, dim, vec, created"
    " FROM lcm.summary_vectors WHERE sid = current_setting('lcm.sid')::bigint;"
    "CREATE FUNCTION lcm.vec_bump(p_sid bigint) RETURNS void LANGUAGE sql AS $f$"
    " INSERT INTO lcm.meta(sid, key, value) SELECT p_sid, 'vec_version', '1'"
    " WHERE EXISTS (SELECT 1 FROM lcm.sessions WHERE sid = p_sid)"
    " ON CONFLICT (sid, key) DO UPDATE SET value = (lcm.meta.value::bigint + 1)::text $f$;"
    "CREATE FUNCTION lcm.vectors_changed() RETURNS trigger LANGUAGE plpgsql AS $f$"
    " BEGIN"
    "  IF TG_TABLE_NAME = 'messages' THEN"
    "   IF OLD.removed IS DISTINCT FROM NEW.removed AND EXISTS (SELECT 1 FROM lcm.message_vectors v"
    "      WHERE v.sid = NEW.sid AND v.message_id = NEW.id) THEN"
    "    PERFORM lcm.vec_bump(NEW.sid);"
    "   END IF;"
    "  ELSIF TG_TABLE_NAME = 'summaries' THEN"
    "   IF OLD.text IS DISTINCT FROM NEW.text THEN"
    "    DELETE FROM lcm.summary_vectors WHERE sid = NEW.sid AND summary_id = NEW.id;"
    "   END IF;"
    "  ELSE"
    "   PERFORM lcm.vec_bump(OLD.sid);"
    "  END IF;"
    "  RETURN NULL;"
    " END $f$;"
    "CREATE TRIGGER message_vectors_gone AFTER DELETE ON lcm.message_vectors"
    " FOR EACH ROW EXECUTE FUNCTION lcm.vectors_changed();"
    "CREATE TRIGGER summary_vectors_gone AFTER DELETE ON lcm.summary_vectors"
    " FOR EACH ROW EXECUTE FUNCTION lcm.vectors_changed();"
    "CREATE TRIGGER messages_vec_removed AFTER UPDATE OF removed ON lcm.messages"
    " FOR EACH ROW EXECUTE FUNCTION lcm.vectors_changed();"
    "CREATE TRIGGER summary_vectors_stale AFTER UPDATE OF text ON lcm.summaries"
    " FOR EACH ROW EXECUTE FUNCTION lcm.vectors_changed();",
    /* 4 -> 5: a message's write costs its own work, not its triggers': a message's id is
     * read by a plan the function keeps (the dynamic EXECUTE planned it again per row),
     * and the DAG progress a statement's new messages make is applied once per statement
     * over its transition table (the least ordinal, the sum of tokens: what the per-row
     * trigger's sequence of least() and + came to), so a turn's batch of messages moves
     * each progress number once. Updates and deletes keep the per-row rules. */
    "CREATE OR REPLACE FUNCTION lcm.next_id() RETURNS trigger LANGUAGE plpgsql AS $f$"
    " BEGIN"
    "  PERFORM 1 FROM lcm.sessions WHERE sid = NEW.sid FOR UPDATE;"
    "  IF NEW.id IS NULL THEN"
    "   IF TG_TABLE_NAME = 'messages' THEN"
    "    SELECT coalesce(max(id), 0) + 1 INTO NEW.id FROM lcm.messages WHERE sid = NEW.sid;"
    "   ELSE"
    "    EXECUTE format('SELECT coalesce(max(id), 0) + 1 FROM %I.%I WHERE sid = $1', TG_TABLE_SCHEMA, TG_TABLE_NAME)"
    "     INTO NEW.id USING NEW.sid;"
    "   END IF;"
    "  END IF;"
    "  RETURN NEW;"
    " END $f$;"
    "CREATE FUNCTION lcm.messages_arrive() RETURNS trigger LANGUAGE plpgsql AS $f$"
    " BEGIN"
    "  WITH a AS (SELECT n.sid, min(n.ordinal) AS ord, sum(n.tokens)::bigint AS tokens FROM arrived n"
    "    WHERE n.removed = 0 AND n.role NOT IN (" PG_EXCLUDED ") AND lcm.uncovered(n.sid, n.entry_id)"
    "    GROUP BY n.sid)"
    "  UPDATE lcm.meta m SET value = CASE m.key WHEN 'dag_watermark' THEN least(m.value::bigint, a.ord)"
    "    ELSE m.value::bigint + a.tokens END::text"
    "   FROM a WHERE m.sid = a.sid AND m.key IN ('dag_watermark', 'dag_pending');"
    "  RETURN NULL;"
    " END $f$;"
    "DROP TRIGGER messages_progress ON lcm.messages;"
    "CREATE TRIGGER messages_progress AFTER UPDATE OF removed OR DELETE ON lcm.messages"
    " FOR EACH ROW EXECUTE FUNCTION lcm.messages_progress();"
    "CREATE TRIGGER messages_arrive AFTER INSERT ON lcm.messages REFERENCING NEW TABLE AS arrived"
    " FOR EACH STATEMENT EXECUTE FUNCTION lcm.messages_arrive();",
};
#define STORE_PG_SCHEMA (int)(sizeof store_pg_migrations / sizeof store_pg_migrations[0])

/* ---- the URI ------------------------------------------------------------------------------- */

static int store_pg_url_ok(const char *url)
{
    return url && (strncmp(url, "postgresql://", 13) == 0 || strncmp(url, "postgres://", 11) == 0);
}

/* A libpq message without the URI's secrets (store_url_scrub) and without its trailing
 * newline (malloc'd). */
static char *store_pg_scrub(const char *url, const char *msg)
{
    char *out = store_url_scrub(url, msg);
    if (out) {
        size_t l = strlen(out);
        while (l && (out[l - 1] == '\n' || out[l - 1] == ' ')) out[--l] = '\0';
    }
    return out;
}

/* The full URIs this process connected with, by their redacted form: a read-only open by
 * path (which carries only the redacted form) reconnects with the same credentials. */
static pthread_mutex_t store_pg_known_mu = PTHREAD_MUTEX_INITIALIZER;
static char *store_pg_known[4];

static void store_pg_remember(const char *url)
{
    pthread_mutex_lock(&store_pg_known_mu);
    size_t i = 0;
    while (i < 4 && store_pg_known[i] && strcmp(store_pg_known[i], url) != 0) i++;
    if (i == 4) {
        free(store_pg_known[3]);
        memmove(store_pg_known + 1, store_pg_known, 3 * sizeof *store_pg_known);
        i = 0;
        store_pg_known[0] = NULL;
    }
    if (!store_pg_known[i]) store_pg_known[i] = lc_strdup(url);
    pthread_mutex_unlock(&store_pg_known_mu);
}

/* The table outlives every store but not the image holding it: a plugin .so is dlclosed at
 * host exit, and its copies of the credentials go with it rather than linger unowned. */
__attribute__((destructor)) static void store_pg_forget_all(void)
{
    pthread_mutex_lock(&store_pg_known_mu);
    for (size_t i = 0; i < 4; i++) {
        free(store_pg_known[i]);
        store_pg_known[i] = NULL;
    }
    pthread_mutex_unlock(&store_pg_known_mu);
}

/* The full URI whose redacted form is `safe` (malloc'd): one this process used, else the
 * environment's, else `safe` itself (a password then comes from PGPASSFILE or libpq's
 * environment). */
static char *store_pg_unredact(const char *safe)
{
    char *found = NULL;
    pthread_mutex_lock(&store_pg_known_mu);
    for (size_t i = 0; i < 4 && store_pg_known[i] && !found; i++) {
        char *r = store_url_redact(store_pg_known[i]);
        if (r && strcmp(r, safe) == 0) found = lc_strdup(store_pg_known[i]);
        free(r);
    }
    pthread_mutex_unlock(&store_pg_known_mu);
    const char *env = getenv("LCM_STORE_URL");
    if (!found && store_pg_url_ok(env)) {
        char *r = store_url_redact(env);
        if (r && strcmp(r, safe) == 0) found = lc_strdup(env);
        free(r);
    }
    return found ? found : lc_strdup(safe);
}

/* ---- running statements ---------------------------------------------------------------------- */

const char *store_pg_i64(char *buf, int64_t v)
{
    snprintf(buf, 24, "%lld", (long long)v);
    return buf;
}

const char *store_pg_col(const PGresult *r, int row, int col)
{
    return PQgetisnull(r, row, col) ? NULL : PQgetvalue(r, row, col);
}

int64_t store_pg_col_int(const PGresult *r, int row, int col)
{
    const char *v = store_pg_col(r, row, col);
    return v ? strtoll(v, NULL, 10) : 0;
}

char *store_pg_col_dup(const PGresult *r, int row, int col)
{
    if (PQgetisnull(r, row, col)) return NULL;
    return lc_strndup(PQgetvalue(r, row, col), (size_t)PQgetlength(r, row, col));
}

/* What every connection of a session sets: its key, the search path that makes the
 * session's views the tables' names, and read-only when asked. */
static int store_pg_setup(store *s, char **err)
{
    const char *v[] = {s->sidtxt};
    PGresult *r = PQexecParams(s->conn,
                               "SELECT set_config('lcm.sid', $1, false),"
                               " set_config('search_path', 'lcm_session', false),"
                               " set_config('default_transaction_read_only', $2, false)",
                               2, NULL, (const char *const[]){v[0], s->read_only ? "on" : "off"}, NULL, NULL, 0);
    int ok = PQresultStatus(r) == PGRES_TUPLES_OK;
    if (!ok) {
        char *why = store_pg_scrub(s->url, PQerrorMessage(s->conn));
        lc_errf(err, LC_ERR, "store: session setup on %s: %s", s->url_safe, why ? why : "?");
        free(why);
    }
    PQclear(r);
    return ok ? LC_OK : LC_ERR;
}

static int store_pg_offline(store *s, const char *what, char **err)
{
    char *why = store_pg_scrub(s->url, PQerrorMessage(s->conn));
    s->offline = 1;
    int rc = lc_errf(err, LC_ERR, "store: %s: the store %s is offline (%s)", what, s->url_safe,
                     why && *why ? why : "no connection");
    free(why);
    return rc;
}

/* A lost connection outside a transaction: reconnect once and set the session up again. */
static int store_pg_reset(store *s)
{
    memset(s->prepared, 0, sizeof s->prepared); /* they died with the old connection */
    PQreset(s->conn);
    if (PQstatus(s->conn) != CONNECTION_OK) return LC_ERR;
    return store_pg_setup(s, NULL);
}

/* The slot of the statement prepared for `sql` on this connection, preparing it first
 * (one round trip, once per connection); -1 with *err when the server refused it. A full
 * table is emptied (DEALLOCATE ALL) before a batch starts, never inside one. */
static int store_pg_prepare(store *s, const char *sql, const char *what, char **err)
{
    int i = 0;
    while (i < STORE_PG_PREPARED && s->prepared[i] && s->prepared[i] != sql) i++;
    if (i == STORE_PG_PREPARED) {
        lc_errf(err, LC_INVALID, "store: %s: more than %d distinct statements in one batch", what, STORE_PG_PREPARED);
        return -1;
    }
    if (s->prepared[i]) return i;
    char name[24];
    snprintf(name, sizeof name, "lcm_b%d", i);
    PGresult *r = PQprepare(s->conn, name, sql, 0, NULL);
    int ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    PQclear(r);
    if (!ok) {
        char *why = store_pg_scrub(s->url, PQerrorMessage(s->conn));
        lc_errf(err, LC_ERR, "store: %s: %s", what, why ? why : "?");
        free(why);
        return -1;
    }
    s->prepared[i] = sql;
    return i;
}

/* Room in the prepared table for every statement of the batch. */
static void store_pg_prepare_room(store *s, const store_pg_stmt *st, size_t n)
{
    int need = 0, used = 0;
    for (int i = 0; i < STORE_PG_PREPARED; i++) used += s->prepared[i] != NULL;
    for (size_t i = 0; i < n; i++) {
        int known = 0;
        for (int k = 0; k < STORE_PG_PREPARED && !known; k++) known = s->prepared[k] == st[i].sql;
        for (size_t j = 0; j < i && !known; j++) known = st[j].sql == st[i].sql;
        need += !known;
    }
    if (used + need <= STORE_PG_PREPARED) return;
    PQclear(PQexec(s->conn, "DEALLOCATE ALL"));
    memset(s->prepared, 0, sizeof s->prepared);
}

PGresult *store_pg_run(store *s, const char *sql, int n, const char *const *vals, int flags, const char *what,
                       char **err)
{
    for (int attempt = 0;; attempt++) {
        /* A connection found lost by the last call is reset before this one, when no
         * transaction is open on it (the open one died with the connection). */
        if (PQstatus(s->conn) == CONNECTION_BAD && !s->tx_open && !s->inner && attempt == 0 &&
            store_pg_reset(s) != LC_OK) {
            store_pg_offline(s, what, err);
            return NULL;
        }
        /* Without parameters a script of several statements may run (the migrations). */
        PGresult *r = NULL;
        if (n && (flags & STORE_PG_PREP)) {
            char name[24];
            int slot;
            store_pg_prepare_room(s, &(store_pg_stmt){sql, n, vals, NULL}, 1);
            if ((slot = store_pg_prepare(s, sql, what, NULL)) >= 0) {
                snprintf(name, sizeof name, "lcm_b%d", slot);
                r = PQexecPrepared(s->conn, name, n, vals, NULL, NULL, 0);
            }
        } else {
            r = n ? PQexecParams(s->conn, sql, n, NULL, vals, NULL, NULL, 0) : PQexec(s->conn, sql);
        }
        ExecStatusType st = PQresultStatus(r);
        if (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK) {
            s->offline = 0;
            return r;
        }
        PQclear(r);
        if (PQstatus(s->conn) == CONNECTION_BAD) {
            int in_tx = s->tx_open || s->inner;
            if (!in_tx && attempt == 0 && store_pg_reset(s) == LC_OK) {
                if (flags & STORE_PG_IDEM) continue;
                lc_errf(err, LC_ERR, "store: %s: the connection to %s was lost; it is back, but the"
                        " statement was not repeated (it is not idempotent)", what, s->url_safe);
                return NULL;
            }
            store_pg_offline(s, what, err);
            return NULL;
        }
        char *why = store_pg_scrub(s->url, PQerrorMessage(s->conn));
        lc_errf(err, LC_ERR, "store: %s: %s", what, why ? why : "?");
        free(why);
        return NULL;
    }
}

int store_pg_cmd(store *s, const char *sql, int n, const char *const *vals, int flags, const char *what,
                 int64_t *changed, char **err)
{
    PGresult *r = store_pg_run(s, sql, n, vals, flags, what, err);
    if (!r) return LC_ERR;
    if (changed) *changed = strtoll(PQcmdTuples(r), NULL, 10);
    PQclear(r);
    return LC_OK;
}

int64_t store_pg_int(store *s, const char *sql, int n, const char *const *vals, int64_t dflt)
{
    PGresult *r = store_pg_run(s, sql, n, vals, STORE_PG_IDEM, "read", NULL);
    int64_t v = dflt;
    if (r && PQntuples(r) > 0 && !PQgetisnull(r, 0, 0)) v = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    return v;
}

/* Send the batch and read every result back: -1 when the connection was lost on the way. */
static int store_pg_batch_once(store *s, store_pg_stmt *st, size_t n, const char *what, char **err)
{
    int rc = LC_OK, lost = 0, sent = 0, failed = 0;
    char *first_err = NULL;
    store_pg_prepare_room(s, st, n);
    for (size_t i = 0; i < n; i++) {
        st[i].res = NULL;
        if (store_pg_prepare(s, st[i].sql, what, err) < 0) return PQstatus(s->conn) == CONNECTION_BAD ? -1 : LC_ERR;
    }
    if (!PQenterPipelineMode(s->conn)) return lc_errf(err, LC_ERR, "store: %s: pipeline mode refused", what);
    const char *lock[] = {s->sidtxt};
    int ok = 1;
    if (s->tx_open) {
        ok = PQsendQueryParams(s->conn, "SAVEPOINT lcm_inner", 0, NULL, NULL, NULL, NULL, 0);
        sent += ok;
    } else {
        ok = PQsendQueryParams(s->conn, "BEGIN", 0, NULL, NULL, NULL, NULL, 0);
        sent += ok;
        if (ok) sent += ok = PQsendQueryParams(s->conn, "SELECT 1 FROM lcm.sessions WHERE sid = $1 FOR UPDATE", 1,
                                               NULL, lock, NULL, NULL, 0);
    }
    int head = sent;
    for (size_t i = 0; ok && i < n; i++) {
        char name[24];
        snprintf(name, sizeof name, "lcm_b%d", store_pg_prepare(s, st[i].sql, what, NULL));
        sent += ok = PQsendQueryPrepared(s->conn, name, st[i].n, st[i].vals, NULL, NULL, 0);
    }
    if (ok) sent += ok = PQsendQueryParams(s->conn, s->tx_open ? "RELEASE SAVEPOINT lcm_inner" : "COMMIT", 0, NULL,
                                           NULL, NULL, NULL, 0);
    if (!ok) {
        /* A statement could not be queued: what was is still ended by the sync (reading
         * without one could wait forever), unless the connection itself is gone. */
        failed = 1;
        if (PQstatus(s->conn) == CONNECTION_BAD) lost = 1;
        else ok = PQpipelineSync(s->conn);
        if (!ok) lost = 1;
    } else if (!PQpipelineSync(s->conn)) {
        failed = lost = 1;
    }
    /* Each query's result, then NULL; then the sync point. */
    for (int q = 0; q < sent && !lost; q++) {
        PGresult *r = PQgetResult(s->conn);
        if (!r) {
            lost = PQstatus(s->conn) == CONNECTION_BAD;
            failed = 1;
            break;
        }
        ExecStatusType stt = PQresultStatus(r);
        if (stt != PGRES_COMMAND_OK && stt != PGRES_TUPLES_OK) {
            if (!failed && stt != PGRES_PIPELINE_ABORTED && !first_err)
                first_err = store_pg_scrub(s->url, PQresultErrorMessage(r));
            failed = 1;
        }
        if (q >= head && q < head + (int)n) st[q - head].res = r;
        else PQclear(r);
        PGresult *end;
        while ((end = PQgetResult(s->conn))) {
            if (PQresultStatus(end) == PGRES_PIPELINE_SYNC) {
                PQclear(end);
                goto synced;
            }
            PQclear(end);
        }
        if (PQstatus(s->conn) == CONNECTION_BAD) lost = 1;
    }
    if (!lost) {
        PGresult *r = PQgetResult(s->conn);
        if (!r || PQresultStatus(r) != PGRES_PIPELINE_SYNC) failed = 1;
        PQclear(r);
    }
synced:
    if (PQstatus(s->conn) == CONNECTION_BAD) lost = 1;
    PQexitPipelineMode(s->conn);
    if (lost) {
        rc = -1;
    } else if (failed) {
        /* The batch's transaction is aborted (or its savepoint is): undo it. */
        PQclear(PQexec(s->conn, s->tx_open ? "ROLLBACK TO SAVEPOINT lcm_inner; RELEASE SAVEPOINT lcm_inner"
                                           : "ROLLBACK"));
        if (!first_err) first_err = store_pg_scrub(s->url, PQerrorMessage(s->conn));
        rc = lc_errf(err, LC_ERR, "store: %s: %s", what, first_err && *first_err ? first_err : "the batch failed");
    }
    free(first_err);
    if (rc != LC_OK)
        for (size_t i = 0; i < n; i++) {
            PQclear(st[i].res);
            st[i].res = NULL;
        }
    return rc;
}

int store_pg_batch(store *s, store_pg_stmt *st, size_t n, int flags, const char *what, char **err)
{
    if (s->read_only) return lc_errf(err, LC_INVALID, "store: opened read-only");
    for (int attempt = 0;; attempt++) {
        int outside = !s->tx_open && !s->inner;
        if (PQstatus(s->conn) == CONNECTION_BAD && (!outside || attempt > 0 || store_pg_reset(s) != LC_OK))
            return store_pg_offline(s, what, err);
        int rc = store_pg_batch_once(s, st, n, what, err);
        if (rc != -1) {
            if (rc == LC_OK) s->offline = 0;
            return rc;
        }
        /* The connection died with the batch's transaction: nothing of it was kept, unless
         * its COMMIT had arrived, which an idempotent batch makes harmless to repeat. */
        if (outside && attempt == 0 && (flags & STORE_PG_IDEM) && store_pg_reset(s) == LC_OK) continue;
        return store_pg_offline(s, what, err);
    }
}

int store_pg_begin(store *s, char **err)
{
    if (s->read_only) return lc_errf(err, LC_INVALID, "store: opened read-only");
    if (s->tx_open) {
        if (store_pg_cmd(s, "SAVEPOINT lcm_inner", 0, NULL, 0, "savepoint", NULL, err) != LC_OK) return LC_ERR;
        s->inner++;
        return LC_OK;
    }
    /* BEGIN is where a connection lost while idle shows: reset and begin again. */
    if (store_pg_cmd(s, "BEGIN", 0, NULL, STORE_PG_IDEM, "begin", NULL, err) != LC_OK) return LC_ERR;
    s->inner = 1;
    const char *v[] = {s->sidtxt};
    if (store_pg_cmd(s, "SELECT 1 FROM lcm.sessions WHERE sid = $1 FOR UPDATE", 1, v, 0, "session lock", NULL,
                     err) != LC_OK) {
        store_pg_rollback(s);
        return LC_ERR;
    }
    return LC_OK;
}

int store_pg_commit(store *s, char **err)
{
    int rc;
    if (s->tx_open) {
        rc = store_pg_cmd(s, "RELEASE SAVEPOINT lcm_inner", 0, NULL, 0, "release", NULL, err);
        if (s->inner > 0) s->inner--;
        return rc;
    }
    rc = store_pg_cmd(s, "COMMIT", 0, NULL, 0, "commit", NULL, err);
    s->inner = 0;
    return rc;
}

void store_pg_rollback(store *s)
{
    if (s->tx_open) {
        if (s->inner > 0) {
            PQclear(PQexec(s->conn, "ROLLBACK TO SAVEPOINT lcm_inner; RELEASE SAVEPOINT lcm_inner"));
            s->inner--;
        }
        return;
    }
    if (s->inner) PQclear(PQexec(s->conn, "ROLLBACK"));
    s->inner = 0;
}

/* ---- the schema ------------------------------------------------------------------------------ */

static int store_pg_migrate(store *s, char **err)
{
    int rc = LC_OK, cur;
    int64_t have = store_pg_int(s, "SELECT CASE WHEN to_regclass('lcm.schema_version') IS NULL THEN 0"
                                   " ELSE 1 END", 0, NULL, -1);
    if (have < 0) return lc_errf(err, LC_ERR, "store: cannot read the schema of %s", s->url_safe);
    if (have && store_pg_int(s, "SELECT max(version) FROM lcm.schema_version", 0, NULL, 0) == STORE_PG_SCHEMA)
        return LC_OK;
    if ((rc = store_pg_cmd(s, "BEGIN", 0, NULL, STORE_PG_IDEM, "migrate", NULL, err)) != LC_OK) return rc;
    s->inner = 1;
    if ((rc = store_pg_cmd(s, "SELECT pg_advisory_xact_lock(hashtext('lossless-context schema'));"
                              "CREATE SCHEMA IF NOT EXISTS lcm;"
                              "CREATE TABLE IF NOT EXISTS lcm.schema_version(version integer NOT NULL)",
                           0, NULL, 0, "migrate", NULL, err)) != LC_OK)
        goto done;
    cur = (int)store_pg_int(s, "SELECT coalesce(max(version), 0) FROM lcm.schema_version", 0, NULL, -1);
    if (cur < 0) {
        rc = lc_errf(err, LC_ERR, "store: cannot read the schema version of %s", s->url_safe);
        goto done;
    }
    if (cur > STORE_PG_SCHEMA) {
        rc = lc_errf(err, LC_INVALID, "store: %s has PostgreSQL schema version %d, newer than this build's %d",
                     s->url_safe, cur, STORE_PG_SCHEMA);
        goto done;
    }
    for (int v = cur; rc == LC_OK && v < STORE_PG_SCHEMA; v++) {
        char buf[24];
        const char *p[] = {store_pg_i64(buf, v + 1)};
        if ((rc = store_pg_cmd(s, store_pg_migrations[v], 0, NULL, 0, "migrate", NULL, err)) == LC_OK)
            rc = store_pg_cmd(s, "INSERT INTO lcm.schema_version(version) VALUES($1::integer)", 1, p, 0, "migrate",
                              NULL, err);
    }
    if (rc == LC_OK) rc = store_pg_cmd(s, "COMMIT", 0, NULL, 0, "migrate", NULL, err);
done:
    if (rc != LC_OK) PQclear(PQexec(s->conn, "ROLLBACK"));
    s->inner = 0;
    return rc;
}

int store_pg_schema_version(store *s)
{
    int64_t v = store_pg_int(s, "SELECT CASE WHEN to_regclass('lcm.schema_version') IS NULL THEN 0"
                                " ELSE (SELECT max(version) FROM lcm.schema_version) END", 0, NULL, -1);
    if (v < 0) return -1;
    /* PostgreSQL version 1 is the store's schema 2 (store_pg_migrations). */
    return v >= STORE_PG_SCHEMA ? STORE_SCHEMA_VERSION : (int)v;
}

/* ---- open and close -------------------------------------------------------------------------- */

/* The agent's identity in the shared store: "<hostname>:<realpath of the agent home>". */
/* Who writes: *agent, the key of this home's sessions ("host:path#installation-id"; the
 * id tells apart two machines of one host name and home path), *host, *home (its realpath)
 * and *legacy, the key earlier builds wrote ("host:path"), whose rows this home still
 * reads where their session file is on this machine and adopts as it opens them. */
static int store_pg_agent(const char *agent_home, char **agent, char **host, char **home, char **legacy, char **err)
{
    char hn[256] = "", rp[PATH_MAX], id[33];
    *agent = *host = *home = *legacy = NULL;
    if (gethostname(hn, sizeof hn - 1) != 0) snprintf(hn, sizeof hn, "localhost");
    if (!realpath(agent_home, rp)) snprintf(rp, sizeof rp, "%s", agent_home);
    int rc = store_identity(agent_home, id, err);
    if (rc != LC_OK) return rc;
    *host = lc_strdup(hn);
    *home = lc_strdup(rp);
    *legacy = lc_asprintf("%s:%s", hn, rp);
    *agent = lc_asprintf("%s:%s#%s", hn, rp, id);
    if (!*host || !*home || !*agent || !*legacy) {
        LC_FREE(*host, *home, *agent, *legacy);
        *agent = *host = *home = *legacy = NULL;
        return lc_errf(err, LC_NOMEM, "store: out of memory");
    }
    return LC_OK;
}

/* Whether a row of the legacy key is this machine's: its session file is here. */
static int store_pg_legacy_mine(const char *session_file)
{
    return session_file && *session_file == '/' && access(session_file, F_OK) == 0;
}

/* Notices (a word too long to index) are the server's business, not the agent's output. */
static void store_pg_quiet(void *arg, const char *msg)
{
    (void)arg;
    (void)msg;
}

/* A store struct connected to `url` (no session yet). */
static int store_pg_connect(const char *url, int read_only, store **out, char **err)
{
    store *s = calloc(1, sizeof *s);
    *out = NULL;
    if (!s) return lc_errf(err, LC_NOMEM, "store: out of memory");
    s->methods = &store_pg_methods;
    s->read_only = read_only;
    s->opt.large_file_chars = STORE_LARGE_FILE_CHARS;
    s->opt.externalize_files = 1;
    s->url = lc_strdup(url);
    s->url_safe = store_url_redact(url);
    if (!s->url || !s->url_safe) {
        store_pg_close(s);
        return lc_errf(err, LC_NOMEM, "store: out of memory");
    }
    if (!store_pg_url_ok(url)) {
        int rc = lc_errf(err, LC_INVALID, "store: %s is not a postgresql:// or postgres:// URI", s->url_safe);
        store_pg_close(s);
        return rc;
    }
    const char *const keys[] = {"dbname", "connect_timeout", "application_name", NULL};
    const char *const vals[] = {url, "5", "lossless-context", NULL};
    s->conn = PQconnectdbParams(keys, vals, 1);
    if (!s->conn || PQstatus(s->conn) != CONNECTION_OK) {
        char *why = s->conn ? store_pg_scrub(url, PQerrorMessage(s->conn)) : NULL;
        int rc = lc_errf(err, LC_ERR, "store: cannot connect to %s: the store is offline (%s)", s->url_safe,
                         why && *why ? why : "out of memory");
        free(why);
        store_pg_close(s);
        return rc;
    }
    PQsetNoticeProcessor(s->conn, store_pg_quiet, NULL);
    store_pg_remember(url);
    *out = s;
    return LC_OK;
}

/* Point `s` at session `sid`: its path, its settings. */
static int store_pg_attach(store *s, int64_t sid, char **err)
{
    s->sid = sid;
    store_pg_i64(s->sidtxt, sid);
    free(s->path);
    if (!(s->path = lc_asprintf("%s#%lld", s->url_safe, (long long)sid)))
        return lc_errf(err, LC_NOMEM, "store: out of memory");
    return store_pg_setup(s, err);
}

/* A DAG run whose writer died left its row open: closed at the next read-write open (as
 * the SQLite backend does) when its process is gone from this machine or, wherever it
 * ran, when its lease ran out (a run of another machine within its lease is left alone). */
static int store_pg_reap_dead_runs(store *s, const char *host, char **err)
{
    char nb[24];
    const char *v[] = {host, store_pg_now(nb)};
    PGresult *r = store_pg_run(s, "SELECT id, pid, " STORE_PG_LEASE_UNTIL " < $2::bigint FROM runs"
                                  " WHERE finished IS NULL AND (host = $1 OR " STORE_PG_LEASE_UNTIL " < $2::bigint)",
                               2, v, STORE_PG_IDEM, "runs", err);
    if (!r) return LC_ERR;
    int rc = LC_OK;
    for (int i = 0; i < PQntuples(r) && rc == LC_OK; i++) {
        pid_t pid = (pid_t)store_pg_col_int(r, i, 1);
        const char *lapsed = store_pg_col(r, i, 2);
        if (!(lapsed && lapsed[0] == 't') && (pid == getpid() || (pid > 0 && (kill(pid, 0) == 0 || errno == EPERM))))
            continue;
        rc = store_pg_run_reap(s, store_pg_col_int(r, i, 0), err);
    }
    PQclear(r);
    return rc;
}

static int store_pg_open(const char *agent_home, const char *session_id, const char *session_cwd, long wait_ms,
                         store **out, char **err)
{
    char *url = NULL, *agent = NULL, *host = NULL, *home = NULL, *legacy = NULL;
    store *s = NULL;
    int rc = LC_OK;
    (void)wait_ms; /* the session's lock is waited for by each write, not at open */
    *out = NULL;
    if (!agent_home || !*agent_home || !store_valid_id(session_id))
        return lc_errf(err, LC_INVALID, "store: need an agent home and a plain session id");
    if (!(url = store_url(agent_home))) return lc_errf(err, LC_INVALID, "store: no store URL is configured");
    if ((rc = lc_mkdir_p(agent_home, 0700, err)) != LC_OK) goto done;
    if ((rc = store_pg_agent(agent_home, &agent, &host, &home, &legacy, err)) != LC_OK) goto done;
    if ((rc = store_pg_connect(url, 0, &s, err)) != LC_OK) goto done;
    if ((rc = store_pg_migrate(s, err)) != LC_OK) goto done;
    {
        /* The session this home opens, written under the key of earlier builds: its own. */
        const char *a[] = {agent, legacy, session_id};
        if ((rc = store_pg_cmd(s, "UPDATE lcm.sessions SET agent = $1 WHERE agent = $2 AND session_id = $3"
                                  " AND NOT EXISTS (SELECT 1 FROM lcm.sessions WHERE agent = $1 AND session_id = $3)",
                               3, a, STORE_PG_IDEM, "adopt a session", NULL, err)) != LC_OK)
            goto done;
    }
    {
        char now[24];
        store_pg_i64(now, (int64_t)time(NULL) * 1000);
        const char *v[] = {agent, host, home, session_id, session_cwd ? session_cwd : "", now};
        PGresult *r = store_pg_run(s,
                                   "WITH ins AS (INSERT INTO lcm.sessions(agent, host, agent_home, session_id, cwd,"
                                   " created, last_activity) VALUES($1, $2, $3, $4, $5, $6::bigint, $6::bigint)"
                                   " ON CONFLICT (agent, session_id) DO NOTHING RETURNING sid)"
                                   " SELECT sid FROM ins UNION ALL SELECT sid FROM lcm.sessions"
                                   " WHERE agent = $1 AND session_id = $4",
                                   6, v, STORE_PG_IDEM, "session", err);
        if (!r) {
            rc = LC_ERR;
            goto done;
        }
        int64_t sid = PQntuples(r) > 0 ? store_pg_col_int(r, 0, 0) : 0;
        PQclear(r);
        if (sid <= 0) {
            rc = lc_errf(err, LC_ERR, "store: the session row for %s was not written", session_id);
            goto done;
        }
        if ((rc = store_pg_attach(s, sid, err)) != LC_OK) goto done;
        /* meta as the SQLite store keeps it: the first value written stays. */
        const char *m[] = {session_id, session_cwd ? session_cwd : "", now};
        if ((rc = store_pg_cmd(s,
                               "INSERT INTO meta(key, value) VALUES('session_id', $1), ('cwd', $2), ('created', $3)"
                               " ON CONFLICT DO NOTHING",
                               3, m, STORE_PG_IDEM, "meta", NULL, err)) != LC_OK)
            goto done;
    }
    if ((rc = store_pg_reap_dead_runs(s, host, err)) != LC_OK) goto done;
    *out = s;
    s = NULL;
done:
    store_pg_close(s);
    LC_FREE(url, agent, host, home, legacy);
    return rc;
}

/* The session `sid` read-only: LC_NOTFOUND when the database holds no such session. */
static int store_pg_open_sid(const char *url, int64_t sid, store **out, int *schema_version, char **err)
{
    store *s = NULL;
    int rc;
    *out = NULL;
    if ((rc = store_pg_connect(url, 1, &s, err)) != LC_OK) return rc;
    char buf[24];
    const char *v[] = {store_pg_i64(buf, sid)};
    if (store_pg_int(s, "SELECT CASE WHEN to_regclass('lcm.sessions') IS NULL THEN 0"
                        " ELSE (SELECT count(*) FROM lcm.sessions WHERE sid = $1::bigint) END",
                     1, v, 0) <= 0) {
        rc = lc_errf(err, LC_NOTFOUND, "store: %s holds no session #%lld", s->url_safe, (long long)sid);
        store_pg_close(s);
        return rc;
    }
    if ((rc = store_pg_attach(s, sid, err)) != LC_OK) {
        store_pg_close(s);
        return rc;
    }
    if (schema_version) *schema_version = store_pg_schema_version(s);
    *out = s;
    return LC_OK;
}

static int store_pg_open_readonly(const char *path, store **out, int *schema_version, char **err)
{
    const char *hash = path ? strrchr(path, '#') : NULL;
    *out = NULL;
    if (schema_version) *schema_version = -1;
    if (!hash || !hash[1] || strspn(hash + 1, "0123456789") != strlen(hash + 1))
        return lc_errf(err, LC_INVALID, "store: %s names no session of a shared store (URI#number)",
                       path ? path : "(null)");
    char *safe = lc_strndup(path, (size_t)(hash - path));
    char *url = safe ? store_pg_unredact(safe) : NULL;
    int rc = url ? store_pg_open_sid(url, strtoll(hash + 1, NULL, 10), out, schema_version, err)
                 : lc_errf(err, LC_NOMEM, "store: out of memory");
    free(safe);
    free(url);
    return rc;
}

/* Delete the session `path` (URI#sid) names: its sessions row, and with it (ON DELETE
 * CASCADE) every row of every table that carries its sid. */
static int store_pg_retire(const char *path, char **err)
{
    const char *hash = path ? strrchr(path, '#') : NULL;
    if (!hash || !hash[1] || strspn(hash + 1, "0123456789") != strlen(hash + 1))
        return lc_errf(err, LC_INVALID, "store: %s names no session of a shared store (URI#number)",
                       path ? path : "(null)");
    char *safe = lc_strndup(path, (size_t)(hash - path));
    char *url = safe ? store_pg_unredact(safe) : NULL;
    store *s = NULL;
    int rc = url ? store_pg_connect(url, 0, &s, err) : lc_errf(err, LC_NOMEM, "store: out of memory");
    if (rc == LC_OK) {
        const char *v[] = {hash + 1};
        rc = store_pg_cmd(s, "DELETE FROM lcm.sessions WHERE sid = $1::bigint", 1, v, STORE_PG_IDEM, "deleting a session",
                          NULL, err);
    }
    store_pg_close(s);
    free(safe);
    free(url);
    return rc;
}

/* The sid of `session_id` written by `agent_home` (under its key, else under the key of
 * earlier builds when its session file is on this machine): 0 when there is none, -1 when
 * the database could not be read. */
static int64_t store_pg_find(store *s, const char *agent_home, const char *session_id, char **err)
{
    char *agent = NULL, *host = NULL, *home = NULL, *legacy = NULL;
    int64_t sid = 0;
    if (store_pg_agent(agent_home, &agent, &host, &home, &legacy, err) != LC_OK) return -1;
    if (store_pg_int(s, "SELECT CASE WHEN to_regclass('lcm.sessions') IS NULL THEN 0 ELSE 1 END", 0, NULL, 0) != 1)
        goto done;
    const char *v[] = {agent, legacy, session_id};
    PGresult *r = store_pg_run(s,
                               "SELECT sid, agent = $1, coalesce((SELECT value FROM lcm.meta x WHERE x.sid = s.sid"
                               " AND x.key = 'session_file'), s.session_file) FROM lcm.sessions s"
                               " WHERE agent IN ($1, $2) AND session_id = $3 ORDER BY agent = $1 DESC",
                               3, v, STORE_PG_IDEM, "find a session", NULL);
    if (!r) {
        sid = -1;
        goto done;
    }
    for (int i = 0; i < PQntuples(r) && !sid; i++)
        if (!strcmp(PQgetvalue(r, i, 1), "t") || store_pg_legacy_mine(store_pg_col(r, i, 2)))
            sid = store_pg_col_int(r, i, 0);
    PQclear(r);
done:
    LC_FREE(agent, host, home, legacy);
    if (sid < 0) lc_errf(err, LC_ERR, "store: cannot read the sessions of %s", s->url_safe);
    return sid;
}

static int store_pg_open_session_readonly(const char *agent_home, const char *session_id, store **out,
                                          int *schema_version, char **err)
{
    char *url = store_url(agent_home);
    store *probe = NULL;
    int rc;
    *out = NULL;
    if (schema_version) *schema_version = -1;
    if (!url) return lc_errf(err, LC_INVALID, "store: no store URL is configured");
    if ((rc = store_pg_connect(url, 1, &probe, err)) != LC_OK) goto done;
    int64_t sid = store_pg_find(probe, agent_home, session_id, err);
    store_pg_close(probe);
    if (sid < 0) rc = LC_ERR;
    else if (sid == 0) rc = lc_errf(err, LC_NOTFOUND, "catalog: no store for session %s", session_id);
    else rc = store_pg_open_sid(url, sid, out, schema_version, err);
done:
    free(url);
    return rc;
}

static int store_pg_list(const char *agent_home, int all_homes, int counts, store_session_visit visit, void *ud,
                         char **err)
{
    char *url = store_url(agent_home), *agent = NULL, *host = NULL, *home = NULL, *legacy = NULL;
    store *s = NULL;
    PGresult *r = NULL;
    int rc;
    if (!url) return lc_errf(err, LC_INVALID, "store: no store URL is configured");
    if ((rc = store_pg_agent(agent_home, &agent, &host, &home, &legacy, err)) != LC_OK) goto done;
    if ((rc = store_pg_connect(url, 1, &s, err)) != LC_OK) goto done;
    if (store_pg_int(s, "SELECT CASE WHEN to_regclass('lcm.sessions') IS NULL THEN 0 ELSE 1 END", 0, NULL, 0) != 1)
        goto done; /* nothing was ever written */
    const char *v[] = {agent, all_homes ? "1" : "0", counts ? "1" : "0", legacy};
    r = store_pg_run(s,
                     /* cwd, session file and created as the session's meta says (as a SQLite
                      * store's listing reads them), the sessions row's when meta has none. */
                     "SELECT s.sid, s.session_id, s.agent_home, s.host,"
                     " coalesce((SELECT value FROM lcm.meta x WHERE x.sid = s.sid AND x.key = 'cwd'), s.cwd),"
                     " coalesce((SELECT value FROM lcm.meta x WHERE x.sid = s.sid AND x.key = 'session_file'),"
                     "  s.session_file),"
                     " coalesce((SELECT value FROM lcm.meta x WHERE x.sid = s.sid AND x.key = 'created'),"
                     "  s.created::text)::bigint,"
                     " s.last_activity,"
                     " CASE WHEN $3 = '1' THEN (SELECT count(*) FROM lcm.messages m WHERE m.sid = s.sid) ELSE -1 END,"
                     " CASE WHEN $3 = '1' THEN (SELECT count(*) FROM lcm.summaries m WHERE m.sid = s.sid) ELSE 0 END,"
                     " CASE WHEN $3 = '1' THEN (SELECT coalesce(sum(octet_length(m.text) + octet_length(m.raw_json)), 0)"
                     "  FROM lcm.messages m WHERE m.sid = s.sid) ELSE 0 END,"
                     " s.agent = $4"
                     " FROM lcm.sessions s WHERE $2 = '1' OR s.agent IN ($1, $4) ORDER BY s.sid",
                     4, v, STORE_PG_IDEM, "list sessions", err);
    if (!r) {
        rc = LC_ERR;
        goto done;
    }
    for (int i = 0; i < PQntuples(r) && rc == LC_OK; i++) {
        /* A row of the earlier key is another machine's unless its session file is here. */
        if (!all_homes && !strcmp(PQgetvalue(r, i, 11), "t") && !store_pg_legacy_mine(store_pg_col(r, i, 5)))
            continue;
        char *path = lc_asprintf("%s#%lld", s->url_safe, (long long)store_pg_col_int(r, i, 0));
        store_session_info si = {
            .path = path,
            .session_id = store_pg_col(r, i, 1),
            .agent_home = store_pg_col(r, i, 2),
            .host = store_pg_col(r, i, 3),
            .cwd = store_pg_col(r, i, 4),
            .session_file = store_pg_col(r, i, 5),
            .created = store_pg_col_int(r, i, 6),
            .last_activity = store_pg_col_int(r, i, 7),
            .messages = store_pg_col_int(r, i, 8),
            .summaries = store_pg_col_int(r, i, 9),
            .db_bytes = store_pg_col_int(r, i, 10),
        };
        rc = path ? visit(ud, &si, err) : lc_errf(err, LC_NOMEM, "store: out of memory");
        free(path);
        if (rc == STORE_VISIT_STOP) rc = LC_OK;
    }
done:
    PQclear(r);
    store_pg_close(s);
    LC_FREE(url, agent, host, home, legacy);
    return rc;
}

void store_pg_close(store *s)
{
    if (!s) return;
    if (s->conn) PQfinish(s->conn);
    store_derive_calls_free(s->calls);
    LC_FREE(s->last_entry, s->url, s->url_safe, s->path, s);
}

void store_pg_set_options(store *s, const store_options *opt)
{
    /* redactAtIngest, once on (store_open reads the home's lcm.json), stays on. */
    int redact = s->opt.redact_at_ingest;
    s->opt = *opt;
    s->opt.redact_at_ingest |= redact;
    if (!s->opt.large_file_chars) s->opt.large_file_chars = STORE_LARGE_FILE_CHARS;
}

const char *store_pg_path(const store *s) { return s->path; }
const char *store_pg_mode_note(const store *s)
{
    (void)s;
    return NULL;
}

const char *store_pg_now(char *buf) { return store_pg_i64(buf, (int64_t)lc_epoch_ms()); }

/* ---- meta and counts ------------------------------------------------------------------------- */

char *store_pg_meta_get(store *s, const char *key)
{
    const char *v[] = {key};
    PGresult *r = store_pg_run(s, "SELECT value FROM meta WHERE key = $1", 1, v, STORE_PG_IDEM, "meta", NULL);
    char *out = r && PQntuples(r) > 0 ? store_pg_col_dup(r, 0, 0) : NULL;
    PQclear(r);
    return out;
}

int store_pg_meta_put(store *s, const char *key, const char *value, char **err)
{
    const char *v[] = {key, value ? value : "", s->sidtxt};
    if (s->read_only) return lc_errf(err, LC_INVALID, "store: opened read-only");
    int rc = store_pg_cmd(s, "INSERT INTO meta(key, value) VALUES($1, $2) ON CONFLICT DO NOTHING", 2, v, STORE_PG_IDEM,
                          "meta", NULL, err);
    if (rc == LC_OK)
        rc = store_pg_cmd(s, "UPDATE meta SET value = $2 WHERE key = $1", 2, v, STORE_PG_IDEM, "meta", NULL, err);
    /* The listing reads the session's file and folder from its sessions row. */
    if (rc == LC_OK && (strcmp(key, "session_file") == 0 || strcmp(key, "cwd") == 0))
        rc = store_pg_cmd(s,
                          strcmp(key, "cwd") == 0 ? "UPDATE lcm.sessions SET cwd = $2 WHERE sid = $3::bigint AND $1 = $1"
                                                  : "UPDATE lcm.sessions SET session_file = $2 WHERE sid = $3::bigint"
                                                    " AND $1 = $1",
                          3, v, STORE_PG_IDEM, "session", NULL, err);
    return rc;
}

int64_t store_pg_message_count(store *s) { return store_pg_int(s, "SELECT count(*) FROM messages", 0, NULL, -1); }
int64_t store_pg_summary_count(store *s) { return store_pg_int(s, "SELECT count(*) FROM summaries", 0, NULL, 0); }

/* What the session's rows take (the shared database has no per-session file). */
int64_t store_pg_db_bytes(store *s)
{
    return store_pg_int(s,
                        "SELECT coalesce((SELECT sum(octet_length(text) + octet_length(raw_json)"
                        " + coalesce(octet_length(payload), 0)) FROM messages), 0)"
                        " + coalesce((SELECT sum(octet_length(text)) FROM summaries), 0)",
                        0, NULL, 0);
}

/* ---- the test face (store_pg.h) -------------------------------------------------------------- */

int store_pg_is(const store *s) { return s && *(const store_methods *const *)(const void *)s == &store_pg_methods; }

int64_t store_pg_query_int(store *s, const char *sql, int64_t dflt) { return store_pg_int(s, sql, 0, NULL, dflt); }

int store_pg_exec(store *s, const char *sql, char **err)
{
    PGresult *r = PQexec(s->conn, sql);
    ExecStatusType st = PQresultStatus(r);
    int rc = LC_OK;
    if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) {
        char *why = store_pg_scrub(s->url, PQerrorMessage(s->conn));
        rc = lc_errf(err, LC_ERR, "store: %s", why ? why : "?");
        free(why);
    }
    PQclear(r);
    return rc;
}

void store_pg_trace(store *s, FILE *f)
{
    if (!f) {
        PQuntrace(s->conn);
        return;
    }
    PQtrace(s->conn, f);
    PQsetTraceFlags(s->conn, PQTRACE_SUPPRESS_TIMESTAMPS);
}

int store_pg_online(const store *s) { return s && !s->offline && PQstatus(s->conn) == CONNECTION_OK; }

/* ---- the backend's tables -------------------------------------------------------------------- */

static const char *store_pg_version(void)
{
    static char v[16];
    int n = PQlibVersion();
    snprintf(v, sizeof v, "%d.%d", n / 10000, n % 10000);
    return v;
}

const store_backend store_pg_backend = {
    STORE_TABLE_HEAD(store_backend, "postgresql"),
    .x_open = store_pg_open,
    .x_open_readonly = store_pg_open_readonly,
    .x_version = store_pg_version,
    .x_open_session_readonly = store_pg_open_session_readonly,
    .x_list = store_pg_list,
    .x_retire = store_pg_retire,
};

#define STORE_PG_SLOT(ret, name, params) .x_##name = store_pg_##name,
const store_methods store_pg_methods = {
    STORE_TABLE_HEAD(store_methods, "postgresql"),
    STORE_SLOTS_CORE(STORE_PG_SLOT)
    STORE_SLOTS_TX(STORE_PG_SLOT)
    STORE_SLOTS_ADMIN(STORE_PG_SLOT)
    STORE_SLOTS_RUN_LEASE(STORE_PG_SLOT)
    STORE_SLOTS_LEASE(STORE_PG_SLOT)
    /* No x_backup_to: a shared database is backed up by its server (pg_dump). Of the
     * version-2 slots, the vectors (store_pg_vec.c). */
    .x_vec_put = store_pg_vec_put,
    .x_vec_walk = store_pg_vec_walk,
    .x_vec_walk_missing = store_pg_vec_walk_missing,
    .x_vec_coverage_get = store_pg_vec_coverage_get,
};
