/*
 * hook.c -- the `lcm hook <event>` runtime: hook input, the per-transcript resume state,
 * the log, the alarm, the background DAG build of precompact, and session-end's automatic
 * dream (autoDream, off by default).
 *
 * The resume state is one small JSON file per transcript under <home>/lcm/hooks/ (named by
 * a hash of the transcript's path): the byte offset the last import reached, the entry it
 * ended on, and two hashes of the transcript's bytes (its head and the 4 KiB before the
 * offset). A transcript that shrank or whose bytes before the offset changed is read again
 * from the start; the store skips what it has. Losing the state costs one full read, so it
 * is written without fsync.
 */
#include "hook.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "admin.h"
#include "bundle.h"
#include "config.h"
#include "dag.h"
#include "dream.h"
#include "ledger.h"
#include "llm_http.h"
#include "import.h"
#include "jsonl.h"
#include "sha256.h"
#include "store.h"
#include "summarize.h"
#include "util.h"

#define HOOK_HEAD_BYTES 1024
#define HOOK_TAIL_BYTES 4096
#define HOOK_DAG_ROUNDS 64   /* passes of one background build (each commits what it makes) */
#define HOOK_LOG_MAX (1 << 20) /* hooks.log past this moves to hooks.log.1 (one kept) */

/* ---- the log and the alarm ------------------------------------------------------------ */

/* Filled before the alarm is armed, so the handler only calls open/write/close/_exit. */
static char hook_alarm_path[4096];
static char hook_alarm_line[512];

static void hook_on_alarm(int sig)
{
    (void)sig;
    int fd = open(hook_alarm_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (fd >= 0) {
        ssize_t w = write(fd, hook_alarm_line, strlen(hook_alarm_line));
        (void)w;
        close(fd);
    }
    _exit(0);
}

/* Append one line to <home>/lcm/hooks.log (the folder made 0700, the file 0600). */
static void hook_log(const char *home, const char *event, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void hook_log(const char *home, const char *event, const char *fmt, ...)
{
    char *dir = lc_asprintf("%s/lcm", home), *path = lc_asprintf("%s/lcm/hooks.log", home);
    char *now = lc_utc_format(lc_epoch_ms(), "%Y-%m-%dT%H:%M:%SZ", "?");
    sbuf b = {0};
    va_list ap;
    if (!dir || !path || !now) goto done;
    if (lc_mkdir_p(dir, 0700, NULL) != LC_OK) goto done;
    sb_printf(&b, "%s lcm hook %s: ", now, event);
    va_start(ap, fmt);
    char *msg = NULL;
    if (vasprintf(&msg, fmt, ap) < 0) msg = NULL;
    va_end(ap);
    sb_puts(&b, msg ? msg : "?");
    free(msg);
    sb_putc(&b, '\n');
    /* A problem that repeats every turn must not fill the disk: one old log is kept. */
    struct stat sb;
    if (stat(path, &sb) == 0 && sb.st_size > HOOK_LOG_MAX) {
        char *old = lc_asprintf("%s.1", path);
        if (old) rename(path, old);
        free(old);
    }
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (fd >= 0) {
        ssize_t w = write(fd, b.p, b.len);
        (void)w;
        close(fd);
    }
done:
    sb_free(&b);
    free(dir);
    free(path);
    free(now);
}

static long hook_env_ms(const char *name, long dflt)
{
    const char *v = getenv(name);
    long x = v && *v ? atol(v) : 0;
    return x > 0 ? x : dflt;
}

static void hook_arm(const char *home, const char *event, long ms)
{
    char *now = lc_utc_format(lc_epoch_ms(), "%Y-%m-%dT%H:%M:%SZ", "?");
    snprintf(hook_alarm_path, sizeof hook_alarm_path, "%s/lcm/hooks.log", home);
    snprintf(hook_alarm_line, sizeof hook_alarm_line,
             "%s lcm hook %s: timed out after %ld ms (the store may be locked or slow); gave up, the next hook "
             "imports what is left\n",
             now ? now : "?", event, ms);
    free(now);
    signal(SIGALRM, hook_on_alarm);
    struct itimerval it = {{0, 0}, {ms / 1000, (ms % 1000) * 1000}};
    setitimer(ITIMER_REAL, &it, NULL);
}

/* ---- input ------------------------------------------------------------------------------ */

static char *hook_read_all(FILE *in, size_t *len, int *too_long)
{
    sbuf b = {0};
    char buf[8192];
    size_t n;
    *too_long = 0;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0) {
        if (b.len + n > HOOK_STDIN_MAX) {
            *too_long = 1;
            break;
        }
        sb_append(&b, buf, n);
    }
    *len = b.len;
    return sb_detach(&b);
}

static const char *hook_str(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) && v->valuestring[0] ? v->valuestring : NULL;
}

/* ---- the resume state ------------------------------------------------------------------- */

static char *hook_state_path(const char *home, const char *transcript, const char *suffix)
{
    char hex[65];
    sha256_hex(transcript, strlen(transcript), hex);
    hex[32] = 0;
    return lc_asprintf("%s/lcm/hooks/%s%s", home, hex, suffix);
}

/* sha256 of [from, from + len) of the open file, as hex; 0 when the bytes could not be read. */
static int hook_hash_range(int fd, long long from, long long len, char hex[65])
{
    char buf[HOOK_TAIL_BYTES];
    if (len < 0 || len > (long long)sizeof buf) return 0;
    ssize_t got = pread(fd, buf, (size_t)len, (off_t)from);
    if (got != (ssize_t)len) return 0;
    sha256_hex(buf, (size_t)len, hex);
    return 1;
}

/* The head and tail checks of `path` at `offset`. */
static int hook_checks(const char *path, long long offset, char head[65], char tail[65])
{
    int fd = open(path, O_RDONLY | O_CLOEXEC), ok = 0;
    if (fd < 0) return 0;
    long long h = offset < HOOK_HEAD_BYTES ? offset : HOOK_HEAD_BYTES;
    long long t = offset < HOOK_TAIL_BYTES ? offset : HOOK_TAIL_BYTES;
    ok = hook_hash_range(fd, 0, h, head) && hook_hash_range(fd, offset - t, t, tail);
    close(fd);
    return ok;
}

static int hook_format_of(const char *name)
{
    if (!name) return IMPORT_UNKNOWN;
    if (!strcmp(name, "pi")) return IMPORT_PI;
    if (!strcmp(name, "claude-code")) return IMPORT_CLAUDE;
    if (!strcmp(name, "codex")) return IMPORT_CODEX;
    return IMPORT_UNKNOWN;
}

/* Load the state of `transcript` into *rs; a missing, unreadable or stale state leaves it
 * zeroed (from the start). */
static void hook_state_load(const char *state_path, const char *transcript, import_resume *rs)
{
    char *text = NULL, head[65], tail[65];
    size_t len = 0;
    struct stat sb;
    cJSON *root = NULL;
    memset(rs, 0, sizeof *rs);
    if (lc_read_file(state_path, &text, &len, NULL) != LC_OK) goto done;
    root = cJSON_ParseWithLength(text, len);
    const cJSON *off = cJSON_GetObjectItemCaseSensitive(root, "offset");
    const cJSON *lines = cJSON_GetObjectItemCaseSensitive(root, "lines");
    const char *p = hook_str(root, "path"), *h = hook_str(root, "head"), *t = hook_str(root, "tail");
    if (!cJSON_IsNumber(off) || !cJSON_IsNumber(lines) || !p || !h || !t || strcmp(p, transcript) != 0) goto done;
    long long offset = (long long)off->valuedouble;
    if (offset <= 0 || stat(transcript, &sb) != 0 || (long long)sb.st_size < offset) goto done; /* shrank */
    if (!hook_checks(transcript, offset, head, tail) || strcmp(head, h) != 0 || strcmp(tail, t) != 0)
        goto done; /* changed before the offset */
    const char *sid = hook_str(root, "session_id");
    if (!sid) goto done;
    rs->offset = offset;
    rs->lines = (long long)lines->valuedouble;
    rs->format = hook_format_of(hook_str(root, "format"));
    snprintf(rs->session_id, sizeof rs->session_id, "%s", sid);
    if (hook_str(root, "cwd")) rs->cwd = lc_strdup(hook_str(root, "cwd"));
    if (hook_str(root, "last_id")) rs->last_id = lc_strdup(hook_str(root, "last_id"));
    if (hook_str(root, "last_ctx")) rs->last_ctx = lc_strdup(hook_str(root, "last_ctx"));
    const cJSON *tools = cJSON_GetObjectItemCaseSensitive(root, "tools");
    if (cJSON_IsObject(tools)) rs->tool_names = cJSON_Duplicate(tools, 1);
    if (rs->format == IMPORT_UNKNOWN || !rs->last_id) {
        import_resume_free(rs);
        memset(rs, 0, sizeof *rs);
    }
done:
    cJSON_Delete(root);
    free(text);
}

static int hook_state_save(const char *home, const char *state_path, const char *transcript,
                           const import_resume *rs, char **err)
{
    char head[65], tail[65], *dir = lc_asprintf("%s/lcm/hooks", home), *text = NULL;
    cJSON *o = cJSON_CreateObject();
    int rc = LC_OK;
    if (!dir || !o) {
        rc = lc_errf(err, LC_NOMEM, "out of memory");
        goto done;
    }
    if (rs->offset <= 0 || !rs->last_id) {
        /* nothing to resume from (or the next call must read the whole file again: a line
         * waits for a parent not written yet): an older state must not be taken up */
        unlink(state_path);
        goto done;
    }
    if (!hook_checks(transcript, rs->offset, head, tail)) goto done;
    if ((rc = lc_mkdir_p(dir, 0700, err)) != LC_OK) goto done;
    cJSON_AddStringToObject(o, "path", transcript);
    cJSON_AddNumberToObject(o, "offset", (double)rs->offset);
    cJSON_AddNumberToObject(o, "lines", (double)rs->lines);
    cJSON_AddStringToObject(o, "format", import_format_name(rs->format));
    cJSON_AddStringToObject(o, "session_id", rs->session_id);
    if (rs->cwd) cJSON_AddStringToObject(o, "cwd", rs->cwd);
    cJSON_AddStringToObject(o, "last_id", rs->last_id);
    if (rs->last_ctx) cJSON_AddStringToObject(o, "last_ctx", rs->last_ctx);
    cJSON_AddStringToObject(o, "head", head);
    cJSON_AddStringToObject(o, "tail", tail);
    if (rs->tool_names) cJSON_AddItemToObject(o, "tools", cJSON_Duplicate(rs->tool_names, 1));
    if (!(text = cJSON_PrintUnformatted(o))) {
        rc = lc_errf(err, LC_NOMEM, "out of memory");
        goto done;
    }
    rc = lc_write_scratch(state_path, text, strlen(text), 0600, err);
done:
    cJSON_Delete(o);
    free(text);
    free(dir);
    return rc;
}

/* Import what is new in the hook's transcript (member `member` of the input: the session's
 * transcript_path, a sub-agent's agent_transcript_path). *session_out (may be NULL)
 * receives the store's session id (malloc'd). Problems are logged; the status says whether
 * it worked. */
static int hook_import_member(const char *home, const char *event, const cJSON *in, const char *member,
                              char **session_out)
{
    const char *transcript = hook_str(in, member), *cwd = hook_str(in, "cwd");
    char *state = NULL, *err = NULL;
    import_resume rs;
    import_stats st;
    int rc = LC_OK;
    memset(&rs, 0, sizeof rs);
    if (session_out) *session_out = NULL;
    if (!transcript) {
        hook_log(home, event, "no %s in the hook input: nothing imported", member);
        return LC_INVALID;
    }
    if (access(transcript, R_OK) != 0) {
        /* A session that starts now, or ends having written nothing (`claude mcp list`),
         * has no transcript: only that is not a problem. */
        int e = errno;
        if (e != ENOENT || (strcmp(event, "session-start") != 0 && strcmp(event, "session-end") != 0))
            hook_log(home, event, "cannot read the transcript %s: %s", transcript, strerror(e));
        return e == ENOENT ? LC_NOTFOUND : LC_ERR;
    }
    if (!(state = hook_state_path(home, transcript, ".json"))) return LC_NOMEM;
    hook_state_load(state, transcript, &rs);
    if (!rs.cwd && cwd) rs.cwd = lc_strdup(cwd);
    rc = import_file_resume(home, transcript, &rs, &st, &err);
    if (rc == LC_EXCLUDED) {
        /* The user's choice, not a fault: said once in the log, nothing stored. */
        hook_log(home, event, "%s", err ? err : "the session's folder is excluded: not stored");
        goto done;
    }
    if (rc != LC_OK) {
        hook_log(home, event, "import of %s failed: %s", transcript, err ? err : "?");
        goto done;
    }
    if (session_out) *session_out = lc_strdup(st.session_id);
    if (st.long_lines)
        hook_log(home, event, "%s: %zu line(s) longer than %u MiB skipped (read through, not kept)", transcript,
                 st.long_lines, JSONL_LINE_MAX >> 20);
    /* LCM_HOOK_VERBOSE=1: a line per import, to see what a hook read (and for the tests). */
    if (getenv("LCM_HOOK_VERBOSE") && !strcmp(getenv("LCM_HOOK_VERBOSE"), "1"))
        hook_log(home, event, "%s %s: %zu lines read, %zu messages, %zu new; session %s, next from byte %lld%s",
                 rs.full ? "read whole" : "resumed", transcript, st.lines, st.messages, st.inserted, st.session_id,
                 rs.offset, st.torn_tail ? " (an incomplete last line left for later)" : "");
    free(err);
    err = NULL;
    if (hook_state_save(home, state, transcript, &rs, &err) != LC_OK)
        hook_log(home, event, "could not keep the resume state %s: %s", state, err ? err : "?");
done:
    import_resume_free(&rs);
    free(state);
    free(err);
    return rc;
}

static int hook_import(const char *home, const char *event, const cJSON *in, char **session_out)
{
    return hook_import_member(home, event, in, "transcript_path", session_out);
}

/* A sub-agent ended: the session's transcript (1.0.x wrote sub-agents inside it) and the
 * sub-agent's own (agent_transcript_path, subagents/agent-*.jsonl), which goes to a store of
 * its own linked to the session's. */
static void hook_subagent_stop(const char *home, const cJSON *in)
{
    hook_import(home, "subagent-stop", in, NULL);
    if (hook_str(in, "agent_transcript_path")) hook_import_member(home, "subagent-stop", in, "agent_transcript_path", NULL);
}

/* ---- precompact: the DAG in the background ---------------------------------------------- */

static double hook_dag_end;

static int hook_dag_keep_going(void *ud)
{
    (void)ud;
    return lc_now_ms() < hook_dag_end;
}

/* In the detached child: one build at a time per session (a lock file), bounded by the
 * deadline; every node commits alone, so a build cut short keeps what it made. */
static void hook_dag_build(const char *home, const char *session, const char *transcript)
{
    char *lock = hook_state_path(home, transcript, ".dag.lock"), *dir = lc_asprintf("%s/lcm/hooks", home);
    char *cfg_path = lc_asprintf("%s/lcm.json", home), *err = NULL;
    int fd = -1;
    store *s = NULL;
    summ_ctx *sc = NULL;
    lcm_config cfg;
    int have_cfg = 0;
    long deadline = hook_env_ms("LCM_HOOK_DAG_DEADLINE_MS", HOOK_DAG_DEADLINE_MS);
    if (!lock || !dir || !cfg_path || lc_mkdir_p(dir, 0700, NULL) != LC_OK) goto done;
    fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) != 0) goto done; /* another build runs */
    hook_dag_end = lc_now_ms() + (double)deadline;
    if (lcm_config_load(cfg_path, &cfg, &err) != LC_OK) {
        free(err);
        err = NULL;
        if (lcm_config_defaults(&cfg) != LC_OK) goto done;
    }
    have_cfg = 1;
    static const char *const chain[] = {SUMM_EXTRACTIVE};
    summ_config scfg = {.chain = chain, .n_chain = 1};
    if (summ_create(&scfg, &sc, &err) != LC_OK) goto fail;
    if (store_open_wait(home, session, "", 10000, &s, &err) != LC_OK) goto fail;
    dag_opts o = {.keep_recent_tokens = 0, .leaf_chunk_tokens = cfg.leaf_chunk_tokens,
                  .summary_tokens = cfg.summary_tokens, .block_budget = cfg.summary_tokens * 8, .flush = 1,
                  .keep_going = hook_dag_keep_going};
    int leaves = 0, condensed = 0;
    for (int round = 0; round < HOOK_DAG_ROUNDS && hook_dag_keep_going(NULL); round++) {
        dag_stats ds;
        summ_pass_begin(sc);
        if (dag_pass(s, sc, &o, &ds, &err) != LC_OK) goto fail;
        leaves += ds.leaves;
        condensed += ds.condensed;
        if (ds.leaves + ds.condensed == 0 && !ds.conflicts) break;
    }
    if (!hook_dag_keep_going(NULL))
        hook_log(home, "precompact", "session %s: the DAG build reached its deadline (%ld ms) with %d leaves and %d "
                 "condensed nodes made; the next precompact goes on", session, deadline, leaves, condensed);
    goto done;
fail:
    hook_log(home, "precompact", "session %s: the DAG build failed: %s", session, err ? err : "?");
done:
    store_close(s);
    summ_free(sc);
    if (have_cfg) lcm_config_free(&cfg);
    if (fd >= 0) close(fd); /* releases the lock */
    free(lock);
    free(dir);
    free(cfg_path);
    free(err);
}

/* Fork a detached child (its own session, stdio on /dev/null so the agent's pipes close):
 * 1 in the child, 0 in the caller (which returns at once) or when the fork failed. */
static int hook_detach(const char *home, const char *event)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        hook_log(home, event, "fork failed: %s", strerror(errno));
        return 0;
    }
    if (pid > 0) return 0;
    setsid();
    int dn = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (dn >= 0) {
        dup2(dn, STDIN_FILENO);
        dup2(dn, STDOUT_FILENO);
        dup2(dn, STDERR_FILENO);
        if (dn > STDERR_FILENO) close(dn);
    }
    return 1;
}

/* A detached child that imports and builds; the caller returns at once. */
static void hook_precompact(const char *home, const cJSON *in)
{
    const char *transcript = hook_str(in, "transcript_path");
    if (!transcript) {
        hook_log(home, "precompact", "no transcript_path in the hook input: nothing done");
        return;
    }
    if (!hook_detach(home, "precompact")) return;
    /* The child's own alarm: the import's and the build's bound together. */
    long deadline = hook_env_ms("LCM_HOOK_DAG_DEADLINE_MS", HOOK_DAG_DEADLINE_MS);
    hook_arm(home, "precompact (background)", deadline + hook_env_ms("LCM_HOOK_TIMEOUT_MS", HOOK_TIMEOUT_MS));
    char *session = NULL;
    if (hook_import(home, "precompact", in, &session) == LC_OK && session) hook_dag_build(home, session, transcript);
    free(session);
    _exit(0);
}

/* ---- session-end: the automatic dream ---------------------------------------------------
 * autoDream (lcm.json, off by default): when dream_due says so, a detached child dreams over
 * the session's folder within dreamTimeMs, so the agent never waits and no request runs
 * it; the log says what it found. dream's own lock keeps two endings from dreaming twice. */
static void hook_dream_maybe(const char *home, const cJSON *in)
{
    char *cfg_path = lc_asprintf("%s/lcm.json", home), *err = NULL;
    lcm_config cfg;
    if (!cfg_path || lcm_config_load(cfg_path, &cfg, NULL) != LC_OK) {
        free(cfg_path);
        return;
    }
    free(cfg_path);
    const char *cwd = hook_str(in, "cwd");
    if (!dream_due(home, &cfg) || !hook_detach(home, "session-end")) {
        lcm_config_free(&cfg);
        return;
    }
    hook_arm(home, "session-end (dream)", cfg.dream_time_ms + hook_env_ms("LCM_HOOK_TIMEOUT_MS", HOOK_TIMEOUT_MS));
    llm_http_routes routes = {cfg.base_urls, cfg.n_base_urls, (cfg.summary_timeout_ms + 999) / 1000};
    dream_opts o = {.home = home, .project = cwd, .global = !cwd, .actor = "autoDream (lcm hook session-end)"};
    ledger *led = NULL;
    ledger_new(home, NULL, &cfg, &led, NULL);
    ledger_model lm = {led, LEDGER_DREAM, llm_http_summarizer, &routes};
    dream_opts_from_config(&cfg, ledger_model_fn, &lm, &o);
    dream_result r;
    if (dream_run(&o, &r, &err) == LC_OK) {
        hook_log(home, "session-end", "autoDream: %lld new patterns, %lld contracts proposed%s%s", (long long)r.patterns_new,
                 (long long)r.contracts, r.report_path ? "; report " : "", r.report_path ? r.report_path : "");
        dream_result_free(&r);
    } else {
        hook_log(home, "session-end", "autoDream: %s", err ? err : "failed");
    }
    free(err);
    ledger_free(led);
    lcm_config_free(&cfg);
    _exit(0);
}

/* ---- the events ------------------------------------------------------------------------- */

/* ---- session-end: retention ---------------------------------------------------------------
 * lcm.json retention with "auto": true: a detached child applies it (archive, then delete)
 * as `lcm gc --retention --apply` would; the ending session is written within the hour, so
 * it is live and never taken. Off by default: without "auto" only the user applies it. */
static void hook_retention_maybe(const char *home, const cJSON *in)
{
    char *cfg_path = lc_asprintf("%s/lcm.json", home), *err = NULL;
    lcm_config cfg;
    if (!cfg_path || lcm_config_load(cfg_path, &cfg, NULL) != LC_OK) {
        free(cfg_path);
        return;
    }
    free(cfg_path);
    if (!cfg.retention.enabled || !cfg.retention.auto_apply || !hook_detach(home, "session-end")) {
        lcm_config_free(&cfg);
        return;
    }
    hook_arm(home, "session-end (retention)", 10 * hook_env_ms("LCM_HOOK_TIMEOUT_MS", HOOK_TIMEOUT_MS));
    admin_env env = {.cmd = "lcm", .home = home, .session_id = hook_str(in, "session_id"), .cfg = &cfg};
    admin_result r = {0};
    if (admin_retention(&env, 1, &r, &err) == LC_OK) {
        char *nl = r.text ? strchr(r.text, '\n') : NULL;
        if (nl) *nl = '\0';
        hook_log(home, "session-end", "%s", r.text ? r.text : "retention: done");
    } else {
        hook_log(home, "session-end", "retention: %s", err ? err : "failed");
    }
    admin_result_free(&r);
    free(err);
    lcm_config_free(&cfg);
    _exit(0);
}

static const char *const hook_events[] = {"session-start", "stop", "subagent-stop", "session-end",
                                          "user-prompt-submit", "precompact"};

int hook_known(const char *event)
{
    for (size_t i = 0; i < sizeof hook_events / sizeof *hook_events; i++)
        if (strcmp(event, hook_events[i]) == 0) return 1;
    return 0;
}

static void hook_session_start(const hook_opts *o, const cJSON *in, FILE *out)
{
    const char *cwd = hook_str(in, "cwd"), *sid = hook_str(in, "session_id");
    char *session = NULL, *text = NULL, *err = NULL;
    /* A resumed session: its own history first, so it is never "the previous one" stale. */
    if (hook_str(in, "transcript_path")) hook_import(o->home, "session-start", in, &session);
    if (!cwd) {
        hook_log(o->home, "session-start", "no cwd in the hook input: no bundle");
        goto done;
    }
    if (bundle_build(o->home, cwd, session ? session : sid, bundle_budget(o->home, o->budget), &text, &err) != LC_OK) {
        hook_log(o->home, "session-start", "bundle for %s failed: %s", cwd, err ? err : "?");
        goto done;
    }
    if (!text) goto done; /* no history here: quiet */
    cJSON *res = cJSON_CreateObject(), *hso = cJSON_AddObjectToObject(res, "hookSpecificOutput");
    cJSON_AddStringToObject(hso, "hookEventName", "SessionStart");
    cJSON_AddStringToObject(hso, "additionalContext", text);
    char *json = cJSON_PrintUnformatted(res);
    cJSON_Delete(res);
    if (json) {
        fputs(json, out);
        fputc('\n', out);
        fflush(out);
    }
    free(json);
done:
    free(session);
    free(text);
    free(err);
}

int hook_run(const char *event, const hook_opts *o, FILE *in, FILE *out)
{
    size_t len = 0;
    int too_long = 0;
    hook_arm(o->home, event, hook_env_ms("LCM_HOOK_TIMEOUT_MS", HOOK_TIMEOUT_MS));
    char *text = hook_read_all(in, &len, &too_long);
    cJSON *root = NULL;
    if (too_long) {
        hook_log(o->home, event, "the hook input is over %u bytes: refused", HOOK_STDIN_MAX);
        goto done;
    }
    root = text ? cJSON_ParseWithLength(text, len) : NULL;
    if (!cJSON_IsObject(root)) {
        hook_log(o->home, event, "the hook input is not a JSON object (%zu bytes): nothing done", len);
        goto done;
    }
    if (!strcmp(event, "session-start")) hook_session_start(o, root, out);
    else if (!strcmp(event, "precompact")) hook_precompact(o->home, root);
    else if (!strcmp(event, "subagent-stop")) hook_subagent_stop(o->home, root);
    else hook_import(o->home, event, root, NULL);
    if (!strcmp(event, "session-end")) {
        hook_dream_maybe(o->home, root);
        hook_retention_maybe(o->home, root);
    }
done:
    cJSON_Delete(root);
    free(text);
    return 0;
}
