/*
 * store_pg_schema.c -- the PostgreSQL backend's layout: the forward migrations (version n ->
 * n+1 of the tables, views, indexes and triggers in schema `lcm`), applied at a read-write
 * open under an advisory lock, and the version a database holds. The connection, the
 * statements and the method table live in store_pg.c; all share store_pg_int.h.
 */
#include "store.h"
#include "store_pg.h"
#include "store_pg_int.h"

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
    /* 5 -> 6: a message's write costs less of the server's CPU, with the same values
     * stored. A message's text and JSON (a few kB: TOASTed, compressed in the row) are
     * compressed with lz4 where the server has it: pglz took as much CPU as a B-tree
     * insert. Rows written before keep pglz, which the server still reads; a server built
     * without lz4 (or older than 14) keeps pglz. The arrival trigger tests a message's
     * coverage in its own statement, planned once per connection: the lcm.uncovered() call
     * it made per row was a SQL function, planned again at every call. */
    "DO $d$ BEGIN"
    " ALTER TABLE lcm.messages ALTER COLUMN text SET COMPRESSION lz4, ALTER COLUMN raw_json SET COMPRESSION lz4,"
    "  ALTER COLUMN payload SET COMPRESSION lz4;"
    " EXCEPTION WHEN feature_not_supported OR syntax_error THEN NULL;"
    " END $d$;"
    "CREATE OR REPLACE FUNCTION lcm.messages_arrive() RETURNS trigger LANGUAGE plpgsql AS $f$"
    " BEGIN"
    "  WITH a AS (SELECT n.sid, min(n.ordinal) AS ord, sum(n.tokens)::bigint AS tokens FROM arrived n"
    "    WHERE n.removed = 0 AND n.role NOT IN (" PG_EXCLUDED ") AND NOT EXISTS (SELECT 1 FROM lcm.summary_messages sm"
    "    WHERE sm.sid = n.sid AND sm.entry_id = n.entry_id)"
    "    GROUP BY n.sid)"
    "  UPDATE lcm.meta m SET value = CASE m.key WHEN 'dag_watermark' THEN least(m.value::bigint, a.ord)"
    "    ELSE m.value::bigint + a.tokens END::text"
    "   FROM a WHERE m.sid = a.sid AND m.key IN ('dag_watermark', 'dag_pending');"
    "  RETURN NULL;"
    " END $f$;",
    /* 6 -> 7: the ingest numbers a turn's messages itself, under the session's lock its
     * transaction holds (store_pg_msgs.c): the id trigger, a PL/pgSQL call per message that
     * locked the session's row again and read the newest id, runs only for a message written
     * without an id. Ids are the same numbers. */
    "DROP TRIGGER messages_id ON lcm.messages;"
    "CREATE TRIGGER messages_id BEFORE INSERT ON lcm.messages FOR EACH ROW WHEN (NEW.id IS NULL)"
    " EXECUTE FUNCTION lcm.next_id();",
};
#define STORE_PG_SCHEMA (int)(sizeof store_pg_migrations / sizeof store_pg_migrations[0])


/* ---- the schema ------------------------------------------------------------------------------ */

int store_pg_migrate(store *s, char **err)
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
