/*
 * replay.c -- replays a recorded session through the plugins (see replay.h). Per input
 * entry: a user message fires before_agent_start; an assistant message is preceded by
 * one request (context + before_provider_request) and followed by tool_call per call;
 * a toolResult fires tool_result (patches are recorded); turn_end fires once an
 * assistant's calls all have results (or at once when it made none), then the
 * threshold compaction check. Compaction entries fire session_compact.
 */
#include "replay.h"

#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

#include "message.h"
#include "util.h"

typedef struct replay {
    agent *a;
    char *logical;        /* id of the last input entry replayed */
    cJSON *assistant;     /* the assistant whose tool calls are being answered */
    cJSON *results;       /* their toolResult messages so far */
    int pending;          /* calls without a result yet */
    int in_prompt;        /* a recorded prompt's loop is running (agent_end pending) */
    long appended, skipped, bad;
} replay;

int replay_read_header(const char *in_path, char **header, char **err)
{
    int rc = LC_OK;
    char *line = NULL;
    size_t cap = 0;
    ssize_t n = -1;
    *header = NULL;
    FILE *in = fopen(in_path, "r");
    if (!in)
        return lc_errf(err, LC_NOTFOUND, "cannot open %s", in_path);
    while ((n = getline(&line, &cap, in)) >= 0) {
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
            line[--n] = '\0';
        if (n > 0)
            break;
    }
    cJSON *h = n > 0 ? cJSON_Parse(line) : NULL;
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(h, "type");
    if (!cJSON_IsString(type) || strcmp(type->valuestring, "session") != 0) {
        rc = lc_errf(err, LC_INVALID, "%s: the first line is not a session header", in_path);
        goto done;
    }
    *header = line;
    line = NULL;
done:
    cJSON_Delete(h);
    free(line);
    fclose(in);
    return rc;
}

void replay_prepare(session *s, const char *header_line)
{
    cJSON *h = cJSON_Parse(header_line ? header_line : "");
    session_seed_ids(s, lc_fnv1a_str(session_id(s)));
    session_set_clock(s, cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(h, "timestamp")));
    cJSON_Delete(h);
}

static void after_turn(replay *r)
{
    char *err = NULL;
    int did = 0;
    if (agent_compact(r->a, "threshold", NULL, &did, &err))
        host_notify(r->a->h, AP_LEVEL_WARNING, "replay: compaction failed: %s", err ? err : "?");
    free(err);
}

/* turn_end for the assistant in progress, with whatever results arrived. */
static void flush_turn(replay *r)
{
    if (!r->assistant)
        return;
    agent_turn_end(r->a, r->assistant, r->results);
    cJSON_Delete(r->assistant);
    cJSON_Delete(r->results);
    r->assistant = NULL;
    r->results = NULL;
    r->pending = 0;
    after_turn(r);
}

/* The recorded prompt's loop is over (the next prompt, a tree move, the end of the input):
 * agent_end, as a live host fires it once the agent is idle. */
static void end_prompt(replay *r)
{
    if (!r->in_prompt)
        return;
    r->in_prompt = 0;
    agent_agent_end(r->a, "done");
}

static const cJSON *find_call(const cJSON *assistant, const char *id)
{
    const cJSON *content = cJSON_GetObjectItemCaseSensitive(assistant, "content"), *b;
    cJSON_ArrayForEach(b, content) {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(b, "type");
        const cJSON *bid = cJSON_GetObjectItemCaseSensitive(b, "id");
        if (cJSON_IsString(t) && strcmp(t->valuestring, "toolCall") == 0 && cJSON_IsString(bid) &&
            id && strcmp(bid->valuestring, id) == 0)
            return b;
    }
    return NULL;
}

/* The role of a message entry; for any other entry MSG_ROLE_UNKNOWN, which no replay
 * event follows. */
static msg_role entry_role(const char *type, const cJSON *msg)
{
    return strcmp(type, "message") == 0 && cJSON_IsObject(msg) ? msg_role_of(msg) : MSG_ROLE_UNKNOWN;
}

/* Events before an entry is written; may change `root` (*changed set). */
static void events_before(replay *r, cJSON *root, const char *type, int *changed)
{
    agent *a = r->a;
    cJSON *msg = cJSON_GetObjectItemCaseSensitive(root, "message");
    if (strcmp(type, "compaction") == 0) {
        flush_turn(r);
        return;
    }
    msg_role role = entry_role(type, msg);
    if (role == MSG_ROLE_USER) {
        flush_turn(r);
        end_prompt(r);
        r->in_prompt = 1;
        char *text = msg_derive_text(msg, NULL);
        agent_before_agent_start(a, text);
        free(text);
    } else if (role == MSG_ROLE_ASSISTANT) {
        flush_turn(r);
        char *err = NULL;
        if (agent_request_hooks(a, &err))
            host_notify(a->h, AP_LEVEL_WARNING, "replay: request hooks failed: %s", err ? err : "?");
        free(err);
    } else if (role == MSG_ROLE_TOOL_RESULT && r->assistant) {
        const cJSON *call = find_call(r->assistant, msg_tool_call_id(msg));
        if (!call)
            return;
        cJSON *result = cJSON_CreateObject();
        const char *keys[] = {"content", "details", "isError"};
        for (size_t i = 0; i < 3; i++) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(msg, keys[i]);
            if (v)
                cJSON_AddItemToObject(result, keys[i], cJSON_Duplicate(v, 1));
        }
        cJSON *before = cJSON_Duplicate(result, 1);
        agent_tool_result_event(a, call, result);
        if (!cJSON_Compare(before, result, 1)) {
            for (size_t i = 0; i < 3; i++) {
                const cJSON *v = cJSON_GetObjectItemCaseSensitive(result, keys[i]);
                if (!v)
                    continue;
                cJSON *dup = cJSON_Duplicate(v, 1);
                if (cJSON_GetObjectItemCaseSensitive(msg, keys[i]))
                    cJSON_ReplaceItemInObjectCaseSensitive(msg, keys[i], dup);
                else
                    cJSON_AddItemToObject(msg, keys[i], dup);
            }
            *changed = 1;
        }
        cJSON_Delete(before);
        cJSON_Delete(result);
    }
}

/* Events after an entry is written. */
static void events_after(replay *r, const cJSON *root, const char *type, sess_entry *e)
{
    agent *a = r->a;
    const cJSON *msg = cJSON_GetObjectItemCaseSensitive(root, "message");
    if (strcmp(type, "compaction") == 0) {
        cJSON *ev = cJSON_CreateObject();
        cJSON_AddItemToObject(ev, "compactionEntry", cJSON_CreateRaw(e->line));
        cJSON_AddBoolToObject(ev, "fromExtension",
                              cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "fromHook")));
        agent_fire(a, "session_compact", ev, NULL);
        cJSON_Delete(ev);
        return;
    }
    msg_role role = entry_role(type, msg);
    if (role == MSG_ROLE_ASSISTANT) {
        r->assistant = cJSON_Duplicate(msg, 1);
        r->results = cJSON_CreateArray();
        r->pending = 0;
        const cJSON *content = cJSON_GetObjectItemCaseSensitive(msg, "content"), *b;
        cJSON_ArrayForEach(b, content) {
            const cJSON *t = cJSON_GetObjectItemCaseSensitive(b, "type");
            if (!cJSON_IsString(t) || strcmp(t->valuestring, "toolCall") != 0)
                continue;
            r->pending++;
            char *blocked = NULL;
            agent_tool_call_event(a, b, &blocked);
            if (blocked)
                host_log(a->h, AP_LEVEL_INFO, "replay: a plugin blocked recorded call %s (%s); "
                         "the recorded result is kept", cJSON_GetStringValue(
                             cJSON_GetObjectItemCaseSensitive(b, "id")), blocked);
            free(blocked);
        }
        if (r->pending == 0)
            flush_turn(r);
    } else if (role == MSG_ROLE_TOOL_RESULT && r->assistant &&
               find_call(r->assistant, msg_tool_call_id(msg))) {
        cJSON_AddItemToArray(r->results, cJSON_Duplicate(msg, 1));
        if (--r->pending <= 0)
            flush_turn(r);
    }
}

static int replay_entry(replay *r, const char *line, size_t len, long lineno, const char *path)
{
    agent *a = r->a;
    session *s = a->h->sess;
    int rc = LC_OK, changed = 0;
    char *err = NULL, *text = NULL;
    cJSON *root = cJSON_ParseWithLength(line, len);
    const cJSON *jid = cJSON_GetObjectItemCaseSensitive(root, "id");
    const cJSON *jtype = cJSON_GetObjectItemCaseSensitive(root, "type");
    const cJSON *jparent = cJSON_GetObjectItemCaseSensitive(root, "parentId");
    if (!cJSON_IsObject(root) || !cJSON_IsString(jid) || !cJSON_IsString(jtype) ||
        (jparent && !cJSON_IsNull(jparent) && !cJSON_IsString(jparent))) {
        host_notify(a->h, AP_LEVEL_WARNING, "%s:%ld: %s; line skipped", path, lineno,
                    root ? "entry has no id/type/parentId" : "malformed JSON");
        r->bad++;
        goto done;
    }
    const char *id = jid->valuestring, *type = jtype->valuestring;
    const char *parent = cJSON_IsString(jparent) ? jparent->valuestring : NULL;
    if (strcmp(type, "session") == 0)
        goto done;
    if (session_find(s, id)) {
        /* Already in the output (an earlier, interrupted replay): continue from it. */
        r->skipped++;
        if (session_move_leaf(s, id, &err) == LC_OK) {
            free(r->logical);
            r->logical = lc_strdup(id);
        }
        goto done;
    }
    session_set_clock(s, cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(root, "timestamp")));
    sess_entry *leaf = session_leaf(s);
    int continues = (!parent && !r->logical) ||
                    (parent && r->logical && strcmp(parent, r->logical) == 0);
    if (continues) {
        if (leaf && (!parent || strcmp(leaf->id, parent) != 0)) {
            /* Plugin or host entries were appended after the logical leaf. */
            cJSON_ReplaceItemInObjectCaseSensitive(root, "parentId", cJSON_CreateString(leaf->id));
            changed = 1;
        }
    } else if (parent && !session_find(s, parent)) {
        host_notify(a->h, AP_LEVEL_WARNING, "%s:%ld: parent %s of entry %s is unknown; the entry "
                    "continues the current branch", path, lineno, parent, id);
        if (leaf)
            cJSON_ReplaceItemInObjectCaseSensitive(root, "parentId", cJSON_CreateString(leaf->id));
        else
            cJSON_ReplaceItemInObjectCaseSensitive(root, "parentId", cJSON_CreateNull());
        changed = 1;
    } else {
        flush_turn(r);
        end_prompt(r);
        if ((rc = agent_move_leaf(a, parent, &err)))
            goto done;
        leaf = session_leaf(s);
    }
    events_before(r, root, type, &changed);
    if (changed && !(text = cJSON_PrintUnformatted(root))) {
        rc = LC_NOMEM;
        goto done;
    }
    char *owned_line = text ? NULL : lc_strndup(line, len);
    sess_entry *e = NULL;
    rc = session_append_line(s, text ? text : owned_line, 0, &e, &err);
    free(owned_line);
    if (rc) {
        /* The output cannot take this entry (disk full, write error): stop here. Going on
         * would write its descendants without their parent; a later run resumes from it. */
        char *why = lc_asprintf("%s:%ld: the session file cannot be written (%s); replay "
                                "stopped here, run it again to resume", path, lineno,
                                err ? err : "cannot append");
        free(err);
        err = why;
        goto done;
    }
    r->appended++;
    free(r->logical);
    r->logical = lc_strdup(id);
    events_after(r, root, type, e);
done:
    if (rc && err)
        host_notify(a->h, AP_LEVEL_ERROR, "%s:%ld: %s", path, lineno, err);
    free(err);
    free(text);
    cJSON_Delete(root);
    return rc;
}

static double replay_cpu_ms(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

int replay_run(agent *a, const char *in_path, char **err)
{
    int rc = LC_OK;
    replay r = {.a = a};
    char *line = NULL;
    size_t cap = 0;
    session *s = a->h->sess;
    FILE *in = fopen(in_path, "r");
    if (!in)
        return lc_errf(err, LC_NOTFOUND, "cannot open %s", in_path);
    size_t before = session_entry_count(s);
    long lineno = 0, compactions0 = a->compactions, moves0 = a->tree_moves, req0 = a->requests;
    int header_seen = 0;
    /* The replay's own thread: what a plugin costs the agent, apart from the work its
     * threads do beside it. */
    double cpu0 = replay_cpu_ms(CLOCK_THREAD_CPUTIME_ID), proc0 = replay_cpu_ms(CLOCK_PROCESS_CPUTIME_ID);
    ssize_t n;
    while ((n = getline(&line, &cap, in)) >= 0) {
        lineno++;
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
            line[--n] = '\0';
        if (n == 0)
            continue;
        if (!header_seen) {
            header_seen = 1;
            continue;
        }
        if ((rc = replay_entry(&r, line, (size_t)n, lineno, in_path)))
            break;
    }
    flush_turn(&r);
    end_prompt(&r);
    session_set_clock(s, NULL);
    if (!rc)
        rc = session_sync(s, err);
    if (!rc) {
        long added = (long)(session_entry_count(s) - before) - r.appended -
                     (a->compactions - compactions0);
        printf("replayed %ld entries from %s (%ld skipped as malformed, %ld already present): "
               "%ld requests, %ld tree moves, %ld compactions, %ld plugin entries added -> %s\n",
               r.appended, in_path, r.bad, r.skipped, a->requests - req0, a->tree_moves - moves0,
               a->compactions - compactions0, added, session_path_name(s));
        /* What the plugins warned about belongs to the result: a replay whose store never
         * opened replayed the file, but stored and summarized nothing. */
        pthread_mutex_lock(&a->h->log_mu);
        if (a->h->n_warnings)
            printf("warnings: %ld during the run (see above); the first: %s\n", a->h->n_warnings,
                   a->h->first_warning ? a->h->first_warning : "?");
        pthread_mutex_unlock(&a->h->log_mu);
        long reqs = a->requests - req0;
        double cpu = replay_cpu_ms(CLOCK_THREAD_CPUTIME_ID) - cpu0;
        double proc = replay_cpu_ms(CLOCK_PROCESS_CPUTIME_ID) - proc0;
        printf("host thread: %.0f ms CPU, %.3f ms a request; other threads: %.0f ms CPU\n", cpu,
               reqs > 0 ? cpu / (double)reqs : 0.0, proc > cpu ? proc - cpu : 0.0);
    } else if (err && !*err) {
        lc_errf(err, rc, "replay of %s stopped at line %ld", in_path, lineno);
    }
    cJSON_Delete(r.assistant);
    cJSON_Delete(r.results);
    free(r.logical);
    free(line);
    fclose(in);
    return rc;
}
