/*
 * store_sqlite_home.c -- the home store (homestore.h) on SQLite: <home>/lcm-home/home.sqlite,
 * WAL, one connection per opener. The schema is versioned by user_version; the contract
 * trail is append-only by triggers (an UPDATE or DELETE of a trail row aborts), so not
 * even a bug in a caller can rewrite history.
 */
#include "homestore.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "util.h"
#include "store_sqlite_file.h"

#define HS_BUSY_MS 5000

struct homestore {
    sqlite3 *db;
    char *path;
};

static const char hs_schema[] =
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT);"
    "CREATE TABLE IF NOT EXISTS dream_log(id INTEGER PRIMARY KEY, scope TEXT NOT NULL, project TEXT,"
    " started INTEGER NOT NULL, finished INTEGER NOT NULL, status TEXT NOT NULL, sessions INTEGER,"
    " messages INTEGER, summaries INTEGER, patterns INTEGER, consolidations INTEGER, contracts INTEGER,"
    " model TEXT, report_path TEXT, note TEXT);"
    "CREATE TABLE IF NOT EXISTS dream_marks(scope_key TEXT NOT NULL, session TEXT NOT NULL,"
    " ordinal INTEGER NOT NULL, row INTEGER NOT NULL, summary INTEGER NOT NULL,"
    " PRIMARY KEY(scope_key, session));"
    "CREATE TABLE IF NOT EXISTS patterns(id INTEGER PRIMARY KEY, kind TEXT NOT NULL, text TEXT NOT NULL,"
    " key TEXT NOT NULL, project TEXT NOT NULL DEFAULT '', count INTEGER NOT NULL DEFAULT 0,"
    " score INTEGER NOT NULL DEFAULT 0, first_seen INTEGER, last_seen INTEGER, UNIQUE(key, project));"
    "CREATE TABLE IF NOT EXISTS pattern_sources(pattern_id INTEGER NOT NULL REFERENCES patterns(id),"
    " session TEXT NOT NULL, entry_id TEXT NOT NULL DEFAULT '', summary_id INTEGER NOT NULL DEFAULT 0,"
    " ordinal INTEGER, excerpt TEXT, seen INTEGER, UNIQUE(pattern_id, session, entry_id, summary_id));"
    "CREATE TABLE IF NOT EXISTS consolidations(id INTEGER PRIMARY KEY, text TEXT NOT NULL,"
    " tokens INTEGER, overlap REAL, created INTEGER);"
    "CREATE TABLE IF NOT EXISTS consolidation_members(consolidation_id INTEGER NOT NULL"
    " REFERENCES consolidations(id), session TEXT NOT NULL, summary_id INTEGER NOT NULL,"
    " UNIQUE(session, summary_id));"
    "CREATE TABLE IF NOT EXISTS contracts(id INTEGER PRIMARY KEY,"
    " kind TEXT NOT NULL CHECK(kind IN ('prefer','forbid','verify-before')), body TEXT NOT NULL,"
    " state TEXT NOT NULL CHECK(state IN ('Pending','Active','Rejected','Retracted','Superseded')),"
    " project TEXT, pattern_id INTEGER NOT NULL DEFAULT 0, supersedes INTEGER NOT NULL DEFAULT 0,"
    " superseded_by INTEGER NOT NULL DEFAULT 0, reason TEXT, created INTEGER, updated INTEGER);"
    "CREATE TABLE IF NOT EXISTS contract_trail(id INTEGER PRIMARY KEY, contract_id INTEGER NOT NULL,"
    " at INTEGER NOT NULL, actor TEXT NOT NULL, action TEXT NOT NULL, from_state TEXT, to_state TEXT,"
    " reason TEXT, body TEXT);"
    "CREATE TRIGGER IF NOT EXISTS contract_trail_no_update BEFORE UPDATE ON contract_trail"
    " BEGIN SELECT RAISE(ABORT, 'the contract trail is append-only'); END;"
    "CREATE TRIGGER IF NOT EXISTS contract_trail_no_delete BEFORE DELETE ON contract_trail"
    " BEGIN SELECT RAISE(ABORT, 'the contract trail is append-only'); END;"
    "CREATE TABLE IF NOT EXISTS ledger(id INTEGER PRIMARY KEY, at INTEGER NOT NULL, session TEXT NOT NULL,"
    " kind TEXT NOT NULL, provider TEXT NOT NULL, model TEXT NOT NULL, input INTEGER NOT NULL DEFAULT 0,"
    " output INTEGER NOT NULL DEFAULT 0, cached INTEGER NOT NULL DEFAULT 0, cost REAL NOT NULL DEFAULT 0,"
    " cost_source TEXT NOT NULL, status TEXT NOT NULL, note TEXT);"
    "CREATE INDEX IF NOT EXISTS ledger_kind_at ON ledger(kind, at);"
    "PRAGMA user_version=2;";

static int hs_fail(homestore *h, char **err, const char *what)
{
    return lc_errf(err, sqlite3_errcode(h->db) == SQLITE_BUSY ? LC_BUSY : LC_ERR, "home store %s: %s: %s",
                   h->path, what, sqlite3_errmsg(h->db));
}

static int hs_exec(homestore *h, const char *sql, char **err)
{
    char *msg = NULL;
    if (sqlite3_exec(h->db, sql, NULL, NULL, &msg) == SQLITE_OK) return LC_OK;
    int rc = lc_errf(err, sqlite3_errcode(h->db) == SQLITE_BUSY ? LC_BUSY : LC_ERR, "home store %s: %s", h->path,
                     msg ? msg : sqlite3_errmsg(h->db));
    sqlite3_free(msg);
    return rc;
}

static int hs_prep(homestore *h, sqlite3_stmt **st, const char *sql, char **err)
{
    if (sqlite3_prepare_v2(h->db, sql, -1, st, NULL) != SQLITE_OK) return hs_fail(h, err, "prepare");
    return LC_OK;
}

static void hs_text(sqlite3_stmt *st, int i, const char *v)
{
    if (v) sqlite3_bind_text(st, i, v, -1, SQLITE_TRANSIENT);
    else sqlite3_bind_null(st, i);
}

static char *hs_col(sqlite3_stmt *st, int i)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    return t ? lc_strdup((const char *)t) : NULL;
}

/* Run a statement with no rows to read; finalizes it. */
static int hs_step_done(homestore *h, sqlite3_stmt *st, char **err, const char *what)
{
    int rc = sqlite3_step(st) == SQLITE_DONE ? LC_OK : hs_fail(h, err, what);
    sqlite3_finalize(st);
    return rc;
}

/* Bind `fmt`'s parameters to ?1, ?2, ... in order: 't' a text (NULL binds NULL), 'i' an
 * int64_t, 'l' a long long, 'r' a double. */
static void hs_bindv(sqlite3_stmt *st, const char *fmt, va_list ap)
{
    for (int i = 1; *fmt; fmt++, i++) {
        switch (*fmt) {
        case 't': hs_text(st, i, va_arg(ap, const char *)); break;
        case 'i': sqlite3_bind_int64(st, i, va_arg(ap, int64_t)); break;
        case 'l': sqlite3_bind_int64(st, i, va_arg(ap, long long)); break;
        case 'r': sqlite3_bind_double(st, i, va_arg(ap, double)); break;
        }
    }
}

/* Prepare `sql` into *st with `fmt`'s parameters bound (hs_bindv). */
static int hs_query(homestore *h, sqlite3_stmt **st, char **err, const char *sql, const char *fmt, ...)
{
    if (hs_prep(h, st, sql, err) != LC_OK) return LC_ERR;
    va_list ap;
    va_start(ap, fmt);
    hs_bindv(*st, fmt, ap);
    va_end(ap);
    return LC_OK;
}

/* Run a statement that reads no rows, with `fmt`'s parameters bound (hs_bindv). */
static int hs_run(homestore *h, char **err, const char *what, const char *sql, const char *fmt, ...)
{
    sqlite3_stmt *st = NULL;
    if (hs_prep(h, &st, sql, err) != LC_OK) return LC_ERR;
    va_list ap;
    va_start(ap, fmt);
    hs_bindv(st, fmt, ap);
    va_end(ap);
    return hs_step_done(h, st, err, what);
}

/* Whether `sql` with `fmt`'s parameters finds a row; 0 when it cannot run. */
static int hs_exists(homestore *h, const char *sql, const char *fmt, ...)
{
    sqlite3_stmt *st = NULL;
    if (hs_prep(h, &st, sql, NULL) != LC_OK) return 0;
    va_list ap;
    va_start(ap, fmt);
    hs_bindv(st, fmt, ap);
    va_end(ap);
    int found = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    return found;
}

static int64_t hs_int(homestore *h, const char *sql, const char *arg)
{
    sqlite3_stmt *st = NULL;
    int64_t v = 0;
    if (sqlite3_prepare_v2(h->db, sql, -1, &st, NULL) != SQLITE_OK) return 0;
    if (arg) sqlite3_bind_text(st, 1, arg, -1, SQLITE_TRANSIENT);
    if (sqlite3_step(st) == SQLITE_ROW) v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

char *homestore_path(const char *home)
{
    return lc_asprintf("%s/" HOMESTORE_DIR "/" HOMESTORE_FILE, home);
}

/* Step `st` to its end into a growing array of `size`-byte rows, each zeroed and then
 * filled by `fill`; finalizes st. On failure what was read is freed with `drop`. */
static int hs_rows(homestore *h, sqlite3_stmt *st, size_t size, void (*fill)(sqlite3_stmt *st, void *row),
                   void (*drop)(void *rows, size_t n), const char *what, void **out, size_t *n, char **err)
{
    char *v = NULL;
    size_t cnt = 0, cap = 0;
    int s, rc = LC_OK;
    while ((s = sqlite3_step(st)) == SQLITE_ROW) {
        if (cnt == cap) {
            char *nv = realloc(v, (cap = cap ? cap * 2 : 8) * size);
            if (!nv) {
                rc = lc_errf(err, LC_NOMEM, "out of memory");
                break;
            }
            v = nv;
        }
        memset(v + cnt * size, 0, size);
        fill(st, v + cnt++ * size);
    }
    if (rc == LC_OK && s != SQLITE_DONE) rc = hs_fail(h, err, what);
    sqlite3_finalize(st);
    if (rc != LC_OK) {
        drop(v, cnt);
        return rc;
    }
    *out = v;
    *n = cnt;
    return LC_OK;
}

/* A text column that stores "none" as '' (a key column cannot be NULL): NULL for it. */
static char *hs_col_opt(sqlite3_stmt *st, int i)
{
    char *v = hs_col(st, i);
    if (v && !*v) {
        free(v);
        v = NULL;
    }
    return v;
}

/* Read the row's columns 0, 1, ... into `fmt`'s targets in order: 't' a char ** (a copy),
 * 'o' a char ** (hs_col_opt), 'i' an int64_t *, 'l' a long long *. */
static void hs_cols(sqlite3_stmt *st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    for (int i = 0; fmt[i]; i++) {
        switch (fmt[i]) {
        case 't': *va_arg(ap, char **) = hs_col(st, i); break;
        case 'o': *va_arg(ap, char **) = hs_col_opt(st, i); break;
        case 'i': *va_arg(ap, int64_t *) = sqlite3_column_int64(st, i); break;
        case 'l': *va_arg(ap, long long *) = sqlite3_column_int64(st, i); break;
        }
    }
    va_end(ap);
}

/* The folder 0700 and the file 0600, made or fixed without following a link and without
 * a descriptor of the file SQLite could be holding (store_sqlite_file.h). */
static int hs_private(const char *dir, int create, char **err)
{
    if (create && lc_mkdir_p(dir, 0700, err) != LC_OK) return LC_ERR;
    return store_sqlite_file_private(dir, HOMESTORE_FILE, "home store", create, NULL, NULL, err);
}

int homestore_open(const char *home, int create, homestore **out, char **err)
{
    homestore *h = NULL;
    char *dir = NULL;
    int rc;
    *out = NULL;
    if (!home || !*home) return lc_errf(err, LC_INVALID, "home store: no agent home");
    if (!(h = calloc(1, sizeof *h)) || !(h->path = homestore_path(home)) ||
        !(dir = lc_asprintf("%s/" HOMESTORE_DIR, home))) {
        rc = lc_errf(err, LC_NOMEM, "out of memory");
        goto done;
    }
    if ((rc = hs_private(dir, create, err)) != LC_OK) goto done;
    if (sqlite3_open_v2(h->path, &h->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOFOLLOW, NULL) != SQLITE_OK) {
        rc = hs_fail(h, err, "open");
        goto done;
    }
    sqlite3_busy_timeout(h->db, HS_BUSY_MS);
    if ((rc = hs_exec(h, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;", err)) != LC_OK)
        goto done;
    if (hs_int(h, "PRAGMA user_version", NULL) < HOMESTORE_SCHEMA_VERSION) {
        if ((rc = hs_exec(h, "BEGIN IMMEDIATE", err)) != LC_OK) goto done;
        if ((rc = hs_exec(h, hs_schema, err)) != LC_OK) {
            hs_exec(h, "ROLLBACK", NULL);
            goto done;
        }
        if ((rc = hs_exec(h, "COMMIT", err)) != LC_OK) goto done;
    }
    *out = h;
    h = NULL;
done:
    homestore_close(h);
    free(dir);
    return rc;
}

void homestore_close(homestore *h)
{
    if (!h) return;
    if (h->db) sqlite3_close_v2(h->db);
    free(h->path);
    free(h);
}

int homestore_begin(homestore *h, char **err) { return hs_exec(h, "BEGIN IMMEDIATE", err); }
int homestore_commit(homestore *h, char **err) { return hs_exec(h, "COMMIT", err); }
void homestore_rollback(homestore *h)
{
    if (h && h->db && !sqlite3_get_autocommit(h->db)) hs_exec(h, "ROLLBACK", NULL);
}

char *homestore_meta_get(homestore *h, const char *key)
{
    sqlite3_stmt *st = NULL;
    char *v = NULL;
    if (sqlite3_prepare_v2(h->db, "SELECT value FROM meta WHERE key = ?", -1, &st, NULL) != SQLITE_OK) return NULL;
    hs_text(st, 1, key);
    if (sqlite3_step(st) == SQLITE_ROW) v = hs_col(st, 0);
    sqlite3_finalize(st);
    return v;
}

int homestore_meta_put(homestore *h, const char *key, const char *value, char **err)
{
    return hs_run(h, err, "meta", "INSERT OR REPLACE INTO meta(key, value) VALUES(?, ?)", "tt", key, value);
}

/* ---- the dream log ---------------------------------------------------------------------- */

int homestore_run_add(homestore *h, const homestore_run *r, int64_t *id, char **err)
{
    int rc = hs_run(h, err, "dream log",
                    "INSERT INTO dream_log(scope, project, started, finished, status, sessions, messages, summaries,"
                    " patterns, consolidations, contracts, model, report_path, note) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    "ttlltiiiiiittt", r->scope, r->project, r->started, r->finished, r->status, r->sessions,
                    r->messages, r->summaries, r->patterns, r->consolidations, r->contracts, r->model,
                    r->report_path, r->note);
    if (rc == LC_OK && id) *id = sqlite3_last_insert_rowid(h->db);
    return rc;
}

long long homestore_run_last(homestore *h) { return hs_int(h, "SELECT COALESCE(MAX(finished), 0) FROM dream_log", NULL); }
int64_t homestore_run_count(homestore *h) { return hs_int(h, "SELECT COUNT(*) FROM dream_log", NULL); }

/* ---- watermarks ---------------------------------------------------------------------------- */

int homestore_mark_get(homestore *h, const char *scope_key, const char *session, homestore_mark *out, char **err)
{
    sqlite3_stmt *st = NULL;
    memset(out, 0, sizeof *out);
    if (hs_query(h, &st, err, "SELECT ordinal, row, summary FROM dream_marks WHERE scope_key = ? AND session = ?", "tt",
                 scope_key, session) != LC_OK)
        return LC_ERR;
    int s = sqlite3_step(st);
    if (s == SQLITE_ROW) *out = (homestore_mark){sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1), sqlite3_column_int64(st, 2)};
    sqlite3_finalize(st);
    return s == SQLITE_ROW || s == SQLITE_DONE ? LC_OK : hs_fail(h, err, "watermark");
}

int homestore_mark_put(homestore *h, const char *scope_key, const char *session, const homestore_mark *m, char **err)
{
    return hs_run(h, err, "watermark",
                  "INSERT OR REPLACE INTO dream_marks(scope_key, session, ordinal, row, summary) VALUES(?,?,?,?,?)",
                  "ttiii", scope_key, session, m->ordinal, m->row, m->summary);
}

int64_t homestore_marked_sessions(homestore *h) { return hs_int(h, "SELECT COUNT(DISTINCT session) FROM dream_marks", NULL); }

/* ---- patterns -------------------------------------------------------------------------------- */

void homestore_patterns_free(homestore_pattern *v, size_t n)
{
    for (size_t i = 0; v && i < n; i++) LC_FREE(v[i].kind, v[i].text, v[i].project);
    free(v);
}

int homestore_pattern_note(homestore *h, const char *kind, const char *text, const char *key, const char *project,
                           int64_t score, long long now, int64_t *id, int *is_new, char **err)
{
    sqlite3_stmt *st = NULL;
    int rc;
    *id = 0;
    *is_new = 0;
    if ((rc = hs_run(h, err, "pattern",
                     "INSERT INTO patterns(kind, text, key, project, score, first_seen, last_seen) VALUES(?,?,?,?,?,?,?)"
                     " ON CONFLICT(key, project) DO NOTHING",
                     "ttttill", kind, text, key, project ? project : "", score, now, now)) != LC_OK)
        return rc;
    *is_new = sqlite3_changes(h->db) > 0;
    if (hs_query(h, &st, err,
                 "UPDATE patterns SET score = MAX(score, ?), last_seen = ? WHERE key = ? AND project = ? RETURNING id",
                 "iltt", score, now, key, project ? project : "") != LC_OK)
        return LC_ERR;
    int s = sqlite3_step(st);
    if (s == SQLITE_ROW) *id = sqlite3_column_int64(st, 0);
    rc = s == SQLITE_ROW ? LC_OK : hs_fail(h, err, "pattern");
    sqlite3_finalize(st);
    return rc;
}

int homestore_source_add(homestore *h, int64_t pattern_id, const char *session, const char *entry_id,
                         int64_t summary_id, int64_t ordinal, const char *excerpt, long long now, int *added,
                         char **err)
{
    *added = 0;
    int rc = hs_run(h, err, "pattern source",
                    "INSERT OR IGNORE INTO pattern_sources(pattern_id, session, entry_id, summary_id, ordinal, excerpt, seen)"
                    " VALUES(?,?,?,?,?,?,?)",
                    "ittiitl", pattern_id, session, entry_id ? entry_id : "", summary_id, ordinal, excerpt, now);
    if (rc != LC_OK) return rc;
    if (!(*added = sqlite3_changes(h->db) > 0)) return LC_OK;
    return hs_run(h, err, "pattern count",
                  "UPDATE patterns SET count = (SELECT COUNT(*) FROM pattern_sources WHERE pattern_id = ?1) WHERE id = ?1",
                  "i", pattern_id);
}

static void hs_pattern_row(sqlite3_stmt *st, void *row)
{
    homestore_pattern *p = row;
    hs_cols(st, "ittoiill", &p->id, &p->kind, &p->text, &p->project, &p->count, &p->score, &p->first_seen,
            &p->last_seen);
}

static void hs_patterns_drop(void *rows, size_t n) { homestore_patterns_free(rows, n); }

static int hs_patterns_read(homestore *h, sqlite3_stmt *st, homestore_pattern **out, size_t *n, char **err)
{
    void *rows = NULL;
    int rc = hs_rows(h, st, sizeof **out, hs_pattern_row, hs_patterns_drop, "patterns", &rows, n, err);
    *out = rows;
    return rc;
}

int homestore_patterns_top(homestore *h, const char *project, int include_global, size_t limit,
                           homestore_pattern **out, size_t *n, char **err)
{
    sqlite3_stmt *st = NULL;
    *out = NULL;
    *n = 0;
    if (hs_query(h, &st, err,
                 "SELECT id, kind, text, project, count, score, first_seen, last_seen FROM patterns"
                 " WHERE count > 0 AND (project = ?1 OR (?2 AND project = ''))"
                 " ORDER BY score * count DESC, last_seen DESC, id LIMIT ?3",
                 "tii", project ? project : "", (int64_t)(include_global || !project), (int64_t)limit) != LC_OK)
        return LC_ERR;
    return hs_patterns_read(h, st, out, n, err);
}

int64_t homestore_pattern_count(homestore *h) { return hs_int(h, "SELECT COUNT(*) FROM patterns WHERE count > 0", NULL); }

void homestore_sources_free(homestore_source *v, size_t n)
{
    for (size_t i = 0; v && i < n; i++) LC_FREE(v[i].session, v[i].entry_id, v[i].excerpt);
    free(v);
}

static void hs_source_row(sqlite3_stmt *st, void *row)
{
    homestore_source *r = row;
    hs_cols(st, "toiit", &r->session, &r->entry_id, &r->summary_id, &r->ordinal, &r->excerpt);
}

static void hs_sources_drop(void *rows, size_t n) { homestore_sources_free(rows, n); }

int homestore_sources(homestore *h, int64_t pattern_id, size_t limit, homestore_source **out, size_t *n, char **err)
{
    sqlite3_stmt *st = NULL;
    void *rows = NULL;
    *out = NULL;
    *n = 0;
    if (hs_query(h, &st, err,
                 "SELECT session, entry_id, summary_id, ordinal, excerpt FROM pattern_sources WHERE pattern_id = ?"
                 " ORDER BY seen, entry_id = '', session, ordinal LIMIT ?",
                 "ii", pattern_id, (int64_t)limit) != LC_OK)
        return LC_ERR;
    int rc = hs_rows(h, st, sizeof **out, hs_source_row, hs_sources_drop, "pattern sources", &rows, n, err);
    *out = rows;
    return rc;
}

/* ---- consolidations ------------------------------------------------------------------------ */

int homestore_consolidated(homestore *h, const char *session, int64_t summary_id)
{
    return hs_exists(h, "SELECT 1 FROM consolidation_members WHERE session = ? AND summary_id = ?", "ti", session,
                     summary_id);
}

int homestore_consolidation_add(homestore *h, const char *text, int64_t tokens, double overlap,
                                const char *const *sessions, const int64_t *ids, size_t n, long long now, int64_t *id,
                                char **err)
{
    int rc = hs_run(h, err, "consolidation", "INSERT INTO consolidations(text, tokens, overlap, created) VALUES(?,?,?,?)",
                    "tirl", text, tokens, overlap, now);
    if (rc != LC_OK) return rc;
    *id = sqlite3_last_insert_rowid(h->db);
    for (size_t i = 0; i < n; i++)
        if ((rc = hs_run(h, err, "consolidation member",
                         "INSERT INTO consolidation_members(consolidation_id, session, summary_id) VALUES(?,?,?)", "iti",
                         *id, sessions[i], ids[i])) != LC_OK)
            return rc;
    return LC_OK;
}

int64_t homestore_consolidation_count(homestore *h) { return hs_int(h, "SELECT COUNT(*) FROM consolidations", NULL); }

/* ---- contracts ------------------------------------------------------------------------------- */

void homestore_contract_free(homestore_contract *c)
{
    if (!c) return;
    LC_FREE(c->kind, c->body, c->state, c->project, c->reason);
    memset(c, 0, sizeof *c);
}

void homestore_contracts_free(homestore_contract *v, size_t n)
{
    for (size_t i = 0; v && i < n; i++) homestore_contract_free(&v[i]);
    free(v);
}

#define HS_CONTRACT_COLS \
    "id, kind, body, state, project, reason, pattern_id, supersedes, superseded_by, created, updated"

static void hs_contract_row(sqlite3_stmt *st, void *row)
{
    homestore_contract *c = row;
    hs_cols(st, "itttttiiill", &c->id, &c->kind, &c->body, &c->state, &c->project, &c->reason, &c->pattern_id,
            &c->supersedes, &c->superseded_by, &c->created, &c->updated);
}

int homestore_contract_add(homestore *h, const char *kind, const char *body, const char *state, const char *project,
                           int64_t pattern_id, int64_t supersedes, long long now, int64_t *id, char **err)
{
    int rc = hs_run(h, err, "contract",
                    "INSERT INTO contracts(kind, body, state, project, pattern_id, supersedes, created, updated)"
                    " VALUES(?,?,?,?,?,?,?,?)",
                    "ttttiill", kind, body, state, project, pattern_id, supersedes, now, now);
    if (rc == LC_OK) *id = sqlite3_last_insert_rowid(h->db);
    return rc;
}

int homestore_contract_get(homestore *h, int64_t id, homestore_contract *out, char **err)
{
    sqlite3_stmt *st = NULL;
    memset(out, 0, sizeof *out);
    if (hs_query(h, &st, err, "SELECT " HS_CONTRACT_COLS " FROM contracts WHERE id = ?", "i", id) != LC_OK) return LC_ERR;
    int s = sqlite3_step(st), rc = LC_OK;
    if (s == SQLITE_ROW) hs_contract_row(st, out);
    else if (s == SQLITE_DONE) rc = lc_errf(err, LC_NOTFOUND, "no contract %lld", (long long)id);
    else rc = hs_fail(h, err, "contract");
    sqlite3_finalize(st);
    return rc;
}

int homestore_contract_set_state(homestore *h, int64_t id, const char *from, const char *to, const char *reason,
                                 int64_t superseded_by, long long now, int *changed, char **err)
{
    *changed = 0;
    int rc = hs_run(h, err, "contract state",
                    "UPDATE contracts SET state = ?, reason = COALESCE(?, reason), superseded_by = ?, updated = ?"
                    " WHERE id = ? AND state = ?",
                    "ttilit", to, reason, superseded_by, now, id, from);
    if (rc == LC_OK) *changed = sqlite3_changes(h->db) > 0;
    return rc;
}

static void hs_contracts_drop(void *rows, size_t n) { homestore_contracts_free(rows, n); }

int homestore_contracts_list(homestore *h, const char *state, const char *project, homestore_contract **out, size_t *n,
                             char **err)
{
    sqlite3_stmt *st = NULL;
    void *rows = NULL;
    *out = NULL;
    *n = 0;
    if (hs_query(h, &st, err,
                 "SELECT " HS_CONTRACT_COLS " FROM contracts WHERE (?1 IS NULL OR state = ?1)"
                 " AND (?2 IS NULL OR project IS NULL OR project = ?2) ORDER BY id",
                 "tt", state, project) != LC_OK)
        return LC_ERR;
    int rc = hs_rows(h, st, sizeof **out, hs_contract_row, hs_contracts_drop, "contracts", &rows, n, err);
    *out = rows;
    return rc;
}

int homestore_contract_known(homestore *h, int64_t pattern_id, const char *body)
{
    return hs_exists(h, "SELECT 1 FROM contracts WHERE (?1 > 0 AND pattern_id = ?1) OR body = ?2 LIMIT 1", "it",
                     pattern_id, body);
}

int64_t homestore_contract_count(homestore *h, const char *state)
{
    return state ? hs_int(h, "SELECT COUNT(*) FROM contracts WHERE state = ?", state)
                 : hs_int(h, "SELECT COUNT(*) FROM contracts", NULL);
}

int homestore_contract_active_for(homestore *h, int64_t pattern_id)
{
    return pattern_id > 0 &&
           hs_exists(h, "SELECT 1 FROM contracts WHERE pattern_id = ? AND state = 'Active' LIMIT 1", "i", pattern_id);
}

void homestore_trail_free(homestore_trail *v, size_t n)
{
    for (size_t i = 0; v && i < n; i++) {
        homestore_trail *t = &v[i];
        LC_FREE(t->actor, t->action, t->from_state, t->to_state, t->reason, t->body);
    }
    free(v);
}

int homestore_trail_add(homestore *h, int64_t contract_id, long long at, const char *actor, const char *action,
                        const char *from_state, const char *to_state, const char *reason, const char *body, char **err)
{
    return hs_run(h, err, "contract trail",
                  "INSERT INTO contract_trail(contract_id, at, actor, action, from_state, to_state, reason, body)"
                  " VALUES(?,?,?,?,?,?,?,?)",
                  "iltttttt", contract_id, at, actor, action, from_state, to_state, reason, body);
}

static void hs_trail_row(sqlite3_stmt *st, void *row)
{
    homestore_trail *t = row;
    hs_cols(st, "iiltttttt", &t->id, &t->contract_id, &t->at, &t->actor, &t->action, &t->from_state, &t->to_state,
            &t->reason, &t->body);
}

static void hs_trail_drop(void *rows, size_t n) { homestore_trail_free(rows, n); }

int homestore_trail_list(homestore *h, int64_t contract_id, homestore_trail **out, size_t *n, char **err)
{
    sqlite3_stmt *st = NULL;
    void *rows = NULL;
    *out = NULL;
    *n = 0;
    if (hs_query(h, &st, err,
                 "SELECT id, contract_id, at, actor, action, from_state, to_state, reason, body FROM contract_trail"
                 " WHERE ?1 = 0 OR contract_id = ?1 ORDER BY id",
                 "i", contract_id) != LC_OK)
        return LC_ERR;
    int rc = hs_rows(h, st, sizeof **out, hs_trail_row, hs_trail_drop, "contract trail", &rows, n, err);
    *out = rows;
    return rc;
}

/* ---- the cost ledger ---------------------------------------------------------------------- */

int homestore_spend_add(homestore *h, const homestore_spend *r, int64_t *id, char **err)
{
    int rc = hs_run(h, err, "ledger",
                    "INSERT INTO ledger(at, session, kind, provider, model, input, output, cached, cost, cost_source,"
                    " status, note) VALUES(?,?,?,?,?,?,?,?,?,?,?,?)",
                    "lttttiiirttt", r->at, r->session ? r->session : "-", r->kind, r->provider ? r->provider : "",
                    r->model ? r->model : "", r->input, r->output, r->cached, r->cost,
                    r->cost_source ? r->cost_source : "none", r->status ? r->status : "ok", r->note);
    if (rc == LC_OK && id) *id = sqlite3_last_insert_rowid(h->db);
    return rc;
}

int homestore_spend_sum(homestore *h, const char *kind, long long since, homestore_spend_total *out, char **err)
{
    sqlite3_stmt *st = NULL;
    memset(out, 0, sizeof *out);
    if (hs_query(h, &st, err,
                 "SELECT COUNT(*), COALESCE(SUM(input), 0), COALESCE(SUM(output), 0), COALESCE(SUM(cached), 0),"
                 " COALESCE(SUM(cost), 0) FROM ledger WHERE at >= ?1 AND status != 'limited'"
                 " AND (?2 IS NULL OR kind = ?2)",
                 "lt", since, kind) != LC_OK)
        return LC_ERR;
    int s = sqlite3_step(st);
    if (s == SQLITE_ROW) {
        out->calls = sqlite3_column_int64(st, 0);
        out->input = sqlite3_column_int64(st, 1);
        out->output = sqlite3_column_int64(st, 2);
        out->cached = sqlite3_column_int64(st, 3);
        out->cost = sqlite3_column_double(st, 4);
    }
    sqlite3_finalize(st);
    return s == SQLITE_ROW ? LC_OK : hs_fail(h, err, "ledger sum");
}

long long homestore_spend_limited_since(homestore *h, const char *kind, long long since)
{
    sqlite3_stmt *st = NULL;
    long long at = 0;
    if (hs_query(h, &st, NULL, "SELECT COALESCE(MAX(at), 0) FROM ledger WHERE status = 'limited' AND kind = ?1"
                 " AND at >= ?2", "tl", kind, since) != LC_OK)
        return 0;
    if (sqlite3_step(st) == SQLITE_ROW) at = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return at;
}

void homestore_spend_groups_free(homestore_spend_group *v, size_t n)
{
    for (size_t i = 0; v && i < n; i++) free(v[i].key);
    free(v);
}

static void hs_group_row(sqlite3_stmt *st, void *row)
{
    homestore_spend_group *g = row;
    hs_cols(st, "tiiiii", &g->key, &g->total.calls, &g->total.input, &g->total.output, &g->total.cached,
            &g->limited);
    g->total.cost = sqlite3_column_double(st, 6);
}

static void hs_groups_drop(void *rows, size_t n) { homestore_spend_groups_free(rows, n); }

int homestore_spend_groups(homestore *h, const char *by, const char *session, long long since,
                           homestore_spend_group **out, size_t *n, char **err)
{
    static const struct { const char *by, *sql; } keys[] = {
        {"day", "strftime('%Y-%m-%d', at / 1000, 'unixepoch')"},
        {"session", "session"},
        {"kind", "kind"},
        {"model", "kind || ' ' || CASE WHEN model = '' THEN provider ELSE model END"},
    };
    const char *key = NULL;
    sqlite3_stmt *st = NULL;
    *out = NULL;
    *n = 0;
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (!strcmp(by, keys[i].by)) key = keys[i].sql;
    if (!key) return lc_errf(err, LC_INVALID, "ledger: no grouping %s", by);
    char *sql = lc_asprintf("SELECT %s AS g, SUM(status != 'limited'), SUM(input), SUM(output), SUM(cached),"
                            " SUM(status = 'limited'), SUM(cost) FROM ledger WHERE at >= ?1"
                            " AND (?2 IS NULL OR session = ?2) GROUP BY g ORDER BY g",
                            key);
    if (!sql) return lc_errf(err, LC_NOMEM, "out of memory");
    int rc = hs_query(h, &st, err, sql, "lt", since, session);
    free(sql);
    if (rc != LC_OK) return rc;
    return hs_rows(h, st, sizeof **out, hs_group_row, hs_groups_drop, "ledger groups", (void **)out, n, err);
}

void homestore_spend_rows_free(homestore_spend_row *v, size_t n)
{
    for (size_t i = 0; v && i < n; i++) LC_FREE(v[i].session, v[i].kind, v[i].model, v[i].status, v[i].note);
    free(v);
}

static void hs_spend_row(sqlite3_stmt *st, void *row)
{
    homestore_spend_row *r = row;
    hs_cols(st, "lttttiiio", &r->at, &r->session, &r->kind, &r->model, &r->status, &r->input, &r->output,
            &r->cached, &r->note);
    r->cost = sqlite3_column_double(st, 9);
}

static void hs_spend_rows_drop(void *rows, size_t n) { homestore_spend_rows_free(rows, n); }

int homestore_spend_limited(homestore *h, const char *session, long long since, size_t limit,
                            homestore_spend_row **out, size_t *n, char **err)
{
    sqlite3_stmt *st = NULL;
    *out = NULL;
    *n = 0;
    if (hs_query(h, &st, err,
                 "SELECT at, session, kind, CASE WHEN model = '' THEN provider ELSE model END, status, input, output,"
                 " cached, COALESCE(note, ''), cost FROM ledger WHERE status = 'limited' AND at >= ?1"
                 " AND (?2 IS NULL OR session = ?2) ORDER BY at DESC LIMIT ?3",
                 "lti", since, session, (int64_t)limit) != LC_OK)
        return LC_ERR;
    return hs_rows(h, st, sizeof **out, hs_spend_row, hs_spend_rows_drop, "ledger rows", (void **)out, n, err);
}
