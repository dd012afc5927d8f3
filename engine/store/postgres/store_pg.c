/*
 * store_pg.c -- the PostgreSQL backend's connection (a shared store: one database, many
 * sessions, many machines): the URI and its redaction (a password is never shown), open
 * by agent home and session id, read-only open by path or by session id, the listing of a
 * home's (or every) session, the one way a statement runs (reset and retry after a lost
 * connection), transactions under the session's write lock, meta, counts, and the
 * backend's tables. The schema, its forward migrations and its triggers live in
 * store_pg_schema.c, messages in store_pg_msgs.c, the DAG's rows in store_pg_dag.c,
 * recall's primitives in store_pg_search.c, maint's in store_pg_admin.c; all share
 * store_pg_int.h.
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

/* One read-only connection a closed store left idle, taken by the next read-only open of the
 * same URI in this process: a walk over many sessions (a fleet or all_sessions grep opens
 * each session's store in turn) then talks to one server backend, whose caches and planned
 * statements stay warm, instead of starting a backend per session. Only an idle connection
 * is kept (no transaction open), with the statements prepared on it; the next store sets its
 * session again (store_pg_attach). A forked child never takes its parent's. */
static pthread_mutex_t store_pg_idle_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
    PGconn *conn;
    char *url;
    pid_t pid;
    const char *prepared[STORE_PG_PREPARED];
} store_pg_idle;

/* The parked connection to `url` (its prepared table copied to `prepared`), or NULL. */
static PGconn *store_pg_idle_take(const char *url, const char **prepared)
{
    PGconn *c = NULL;
    pthread_mutex_lock(&store_pg_idle_mu);
    if (store_pg_idle.conn && store_pg_idle.pid == getpid() && strcmp(store_pg_idle.url, url) == 0) {
        c = store_pg_idle.conn;
        memcpy(prepared, store_pg_idle.prepared, sizeof store_pg_idle.prepared);
        store_pg_idle.conn = NULL;
        LC_FREE(store_pg_idle.url);
    }
    pthread_mutex_unlock(&store_pg_idle_mu);
    /* As a new connection is: the last store's settings (its session, search path) reset;
     * what it prepared stays (a statement's names are resolved as when it was prepared). */
    PGresult *r = c ? PQexec(c, "RESET ALL") : NULL;
    int ok = r && PQresultStatus(r) == PGRES_COMMAND_OK;
    PQclear(r);
    if (c && !ok) {
        PQfinish(c);
        memset(prepared, 0, STORE_PG_PREPARED * sizeof *prepared);
        c = NULL;
    }
    return c;
}

/* Park `s`'s connection when it is read-only and idle and the slot is free; 1 if it was. */
static int store_pg_idle_park(store *s)
{
    int parked = 0;
    if (!s->read_only || !s->conn || !s->url || PQstatus(s->conn) != CONNECTION_OK ||
        PQtransactionStatus(s->conn) != PQTRANS_IDLE || PQpipelineStatus(s->conn) != PQ_PIPELINE_OFF)
        return 0;
    char *url = lc_strdup(s->url);
    if (!url) return 0;
    pthread_mutex_lock(&store_pg_idle_mu);
    if (!store_pg_idle.conn) {
        store_pg_idle.conn = s->conn;
        store_pg_idle.url = url;
        store_pg_idle.pid = getpid();
        memcpy(store_pg_idle.prepared, s->prepared, sizeof store_pg_idle.prepared);
        url = NULL;
        parked = 1;
    }
    pthread_mutex_unlock(&store_pg_idle_mu);
    free(url);
    return parked;
}

__attribute__((destructor)) static void store_pg_idle_drop(void)
{
    pthread_mutex_lock(&store_pg_idle_mu);
    if (store_pg_idle.conn && store_pg_idle.pid == getpid()) PQfinish(store_pg_idle.conn);
    store_pg_idle.conn = NULL;
    LC_FREE(store_pg_idle.url);
    pthread_mutex_unlock(&store_pg_idle_mu);
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

/* The session's write lock (store_pg_begin, store_pg_batch): prepared, as every write
 * takes it (an unnamed statement is parsed and planned again at each call). */
static const char store_pg_sql_lock[] = "SELECT 1 FROM lcm.sessions WHERE sid = $1 FOR UPDATE";

/* Room in the prepared table for every statement of the batch and `also` (may be NULL). */
static void store_pg_prepare_room(store *s, const store_pg_stmt *st, size_t n, const char *also)
{
    int need = 0, used = 0;
    for (int i = 0; i < STORE_PG_PREPARED; i++) used += s->prepared[i] != NULL;
    for (size_t i = 0; i <= n; i++) {
        const char *sql = i < n ? st[i].sql : also;
        int known = !sql;
        for (int k = 0; k < STORE_PG_PREPARED && !known; k++) known = s->prepared[k] == sql;
        for (size_t j = 0; j < i && !known; j++) known = st[j].sql == sql;
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
            store_pg_prepare_room(s, &(store_pg_stmt){sql, n, vals, NULL}, 1, NULL);
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
    int lock_slot = -1;
    store_pg_prepare_room(s, st, n, s->tx_open ? NULL : store_pg_sql_lock);
    for (size_t i = 0; i < n; i++) {
        st[i].res = NULL;
        if (store_pg_prepare(s, st[i].sql, what, err) < 0) return PQstatus(s->conn) == CONNECTION_BAD ? -1 : LC_ERR;
    }
    if (!s->tx_open && (lock_slot = store_pg_prepare(s, store_pg_sql_lock, what, err)) < 0)
        return PQstatus(s->conn) == CONNECTION_BAD ? -1 : LC_ERR;
    if (!PQenterPipelineMode(s->conn)) return lc_errf(err, LC_ERR, "store: %s: pipeline mode refused", what);
    const char *lock[] = {s->sidtxt};
    int ok = 1;
    if (s->tx_open) {
        ok = PQsendQueryParams(s->conn, "SAVEPOINT lcm_inner", 0, NULL, NULL, NULL, NULL, 0);
        sent += ok;
    } else {
        ok = PQsendQueryParams(s->conn, "BEGIN", 0, NULL, NULL, NULL, NULL, 0);
        sent += ok;
        char name[24];
        snprintf(name, sizeof name, "lcm_b%d", lock_slot);
        if (ok) sent += ok = PQsendQueryPrepared(s->conn, name, 1, lock, NULL, NULL, 0);
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
    if (store_pg_cmd(s, store_pg_sql_lock, 1, v, STORE_PG_PREP, "session lock", NULL, err) != LC_OK) {
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
    if (read_only) s->conn = store_pg_idle_take(url, s->prepared);
    if (!s->conn) s->conn = PQconnectdbParams(keys, vals, 1);
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
                     /* The newest message's time (a turn does not write the sessions row). */
                     " greatest(s.last_activity, coalesce((SELECT m.created FROM lcm.messages m WHERE m.sid = s.sid"
                     "  ORDER BY m.ordinal DESC, m.id DESC LIMIT 1), 0)),"
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
    if (s->conn) PQuntrace(s->conn);
    if (s->conn && !store_pg_idle_park(s)) PQfinish(s->conn);
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
    .x_vec_get = store_pg_vec_get,
};
