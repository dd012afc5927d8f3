/*
 * session.c -- the append-only JSONL session tree of the reference host: reading with
 * per-line error reports, appending durably, the id map, the active branch, and the
 * incrementally maintained model context (see session.h). The file is only ever
 * appended to; a line that cannot be read is reported and left in place.
 */
#include "session.h"

#include "jsonl.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "jsonl.h"
#include "message.h"
#include "util.h"

struct session {
    char *path;
    FILE *fp;
    int torn; /* the file ends in a torn line: the next append starts a new line first */
    char *id;
    char *cwd;

    sess_entry **entries;
    size_t n_entries, cap_entries;

    sess_entry **map; /* open addressing, power-of-two capacity */
    size_t map_cap;

    sess_entry **branch;
    /* marks[i]: the context length and usage index once branch[i] was added, so a
     * move back to an ancestor truncates in O(1) instead of rebuilding. */
    struct bmark { size_t n_ctx; long usage_idx; } *marks;
    size_t n_branch, cap_branch;

    ap_message_in *ctx;
    sess_entry **ctx_ent;
    size_t *ctx_cum; /* ctx_cum[i] = tokens of ctx[0..i) */
    size_t n_ctx, cap_ctx;
    long usage_idx;    /* ctx index of the latest assistant with usage, -1 if none */
    sess_entry *compaction;
    char *summary_msg; /* the synthesized compactionSummary message */

    uint64_t rng;
    char *clock;
};

/* ------------------------------------------------------------------ time */

void session_iso_time(long long ms, char *buf, size_t len)
{
    time_t secs = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&secs, &tm);
    snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
             (int)(ms % 1000));
}

long long session_parse_iso(const char *iso)
{
    return lc_iso_ms(iso);
}

/* ------------------------------------------------------------------ ids */

static uint64_t rng_next(uint64_t *st)
{
    uint64_t x = *st;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *st = x;
    return x * 0x2545F4914F6CDD1DULL;
}

static uint64_t random_seed(void)
{
    uint64_t seed = 0;
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        if (read(fd, &seed, sizeof seed) != (ssize_t)sizeof seed)
            seed = 0;
        close(fd);
    }
    if (seed == 0)
        seed = (uint64_t)lc_epoch_ms() ^ ((uint64_t)getpid() << 32) ^ 0x9E3779B97F4A7C15ULL;
    return seed;
}

void session_seed_ids(session *s, uint64_t seed)
{
    s->rng = seed ? seed : 0x9E3779B97F4A7C15ULL;
}

void session_set_clock(session *s, const char *fixed_iso)
{
    free(s->clock);
    s->clock = fixed_iso ? lc_strdup(fixed_iso) : NULL;
}

/* ------------------------------------------------------------------ map */

static int map_put(session *s, sess_entry *e);

static int map_grow(session *s)
{
    size_t old_cap = s->map_cap;
    sess_entry **old = s->map;
    size_t cap = old_cap ? old_cap * 2 : 1024;
    s->map = calloc(cap, sizeof *s->map);
    if (!s->map) {
        s->map = old;
        return LC_NOMEM;
    }
    s->map_cap = cap;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i])
            map_put(s, old[i]);
    free(old);
    return LC_OK;
}

static int map_put(session *s, sess_entry *e)
{
    if ((s->n_entries + 1) * 10 >= s->map_cap * 7 && s->map_cap < (s->n_entries + 1) * 2) {
        int rc = map_grow(s);
        if (rc)
            return rc;
    }
    size_t mask = s->map_cap - 1;
    size_t i = (size_t)lc_fnv1a_str(e->id) & mask;
    while (s->map[i])
        i = (i + 1) & mask;
    s->map[i] = e;
    return LC_OK;
}

sess_entry *session_find(const session *s, const char *id)
{
    if (!id || !s->map_cap)
        return NULL;
    size_t mask = s->map_cap - 1;
    size_t i = (size_t)lc_fnv1a_str(id) & mask;
    while (s->map[i]) {
        if (strcmp(s->map[i]->id, id) == 0)
            return s->map[i];
        i = (i + 1) & mask;
    }
    return NULL;
}

/* ------------------------------------------------------------------ entries */

static void entry_free(sess_entry *e)
{
    if (!e)
        return;
    LC_FREE(e->id, e->parent_id, e->type, e->line, e->msg, e);
}

static const char *jstr(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* The message an entry contributes to the model context, as the reference host
 * derives it; NULL (not an error) when the entry never reaches the model. */
static cJSON *entry_message(const cJSON *root, const char *type, long long ts_ms)
{
    if (strcmp(type, "message") == 0) {
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(root, "message");
        return cJSON_IsObject(m) ? cJSON_Duplicate(m, 1) : NULL;
    }
    cJSON *m = NULL;
    if (strcmp(type, "custom_message") == 0) {
        m = cJSON_CreateObject();
        cJSON_AddStringToObject(m, "role", "custom");
        const char *ct = jstr(root, "customType");
        cJSON_AddStringToObject(m, "customType", ct ? ct : "");
        const cJSON *content = cJSON_GetObjectItemCaseSensitive(root, "content");
        cJSON_AddItemToObject(m, "content",
                              content ? cJSON_Duplicate(content, 1) : cJSON_CreateString(""));
        const cJSON *display = cJSON_GetObjectItemCaseSensitive(root, "display");
        cJSON_AddBoolToObject(m, "display", display ? cJSON_IsTrue(display) : 1);
        const cJSON *details = cJSON_GetObjectItemCaseSensitive(root, "details");
        if (details)
            cJSON_AddItemToObject(m, "details", cJSON_Duplicate(details, 1));
        cJSON_AddNumberToObject(m, "timestamp", (double)ts_ms);
    } else if (strcmp(type, "branch_summary") == 0) {
        const char *summary = jstr(root, "summary");
        if (!summary)
            return NULL;
        m = cJSON_CreateObject();
        cJSON_AddStringToObject(m, "role", "branchSummary");
        cJSON_AddStringToObject(m, "summary", summary);
        const char *from = jstr(root, "fromId");
        cJSON_AddStringToObject(m, "fromId", from ? from : "");
        cJSON_AddNumberToObject(m, "timestamp", (double)ts_ms);
    }
    return m;
}

/* Build an entry from its parsed JSON; `line` is kept as the entry's text. */
static int entry_from_json(const cJSON *root, const char *line, size_t len, long lineno,
                           sess_entry **out, char **err)
{
    int rc = LC_OK;
    cJSON *msg = NULL;
    sess_entry *e = NULL;
    const char *type = jstr(root, "type"), *id = jstr(root, "id");
    const cJSON *parent = cJSON_GetObjectItemCaseSensitive(root, "parentId");
    if (!cJSON_IsObject(root) || !type || !id || !*id) {
        rc = lc_errf(err, LC_INVALID, "entry has no type or id");
        goto done;
    }
    if (parent && !cJSON_IsNull(parent) && !cJSON_IsString(parent)) {
        rc = lc_errf(err, LC_INVALID, "entry %s has a parentId that is not a string", id);
        goto done;
    }
    e = calloc(1, sizeof *e);
    if (!e) {
        rc = LC_NOMEM;
        goto done;
    }
    e->id = lc_strdup(id);
    e->type = lc_strdup(type);
    e->parent_id = cJSON_IsString(parent) ? lc_strdup(parent->valuestring) : NULL;
    e->line = lc_strndup(line, len);
    e->line_len = len;
    e->lineno = lineno;
    e->ts_ms = session_parse_iso(jstr(root, "timestamp"));
    if (e->ts_ms < 0)
        e->ts_ms = 0;
    if (!e->id || !e->type || !e->line || (cJSON_IsString(parent) && !e->parent_id)) {
        rc = LC_NOMEM;
        goto done;
    }
    msg = entry_message(root, type, e->ts_ms);
    if (msg) {
        /* A message entry crosses as the file holds it, byte for byte: no re-serialization
         * (which would lose \u0000 and reformat numbers). Built messages are printed. */
        size_t moff = 0, mlen = 0;
        if (strcmp(type, "message") == 0 &&
            json_member_span(line, len, "message", &moff, &mlen) == LC_OK)
            e->msg = lc_strndup(line + moff, mlen);
        else
            e->msg = cJSON_PrintUnformatted(msg);
        if (!e->msg) {
            rc = LC_NOMEM;
            goto done;
        }
        e->msg_len = strlen(e->msg);
        e->tokens = msg_estimate_tokens(msg);
        e->role = (int)msg_role_of(msg);
        if (e->role == MSG_ROLE_ASSISTANT) {
            const char *stop = jstr(msg, "stopReason");
            if (!stop || (strcmp(stop, "error") != 0 && strcmp(stop, "aborted") != 0))
                e->usage_total = msg_usage_total(msg);
        }
    }
    *out = e;
    e = NULL;
done:
    cJSON_Delete(msg);
    entry_free(e);
    return rc;
}

static int add_entry(session *s, sess_entry *e)
{
    sess_entry **p = lc_grow(s->entries, &s->cap_entries, s->n_entries + 1, sizeof *p);
    if (!p)
        return LC_NOMEM;
    s->entries = p;
    int rc = map_put(s, e);
    if (rc)
        return rc;
    s->entries[s->n_entries++] = e;
    return LC_OK;
}

/* ------------------------------------------------------------------ context */

static int ctx_push(session *s, sess_entry *e, const char *id, const char *msg, size_t len,
                    size_t tokens)
{
    if (s->n_ctx + 1 >= s->cap_ctx) {
        size_t cap = s->cap_ctx ? s->cap_ctx * 2 : 256;
        ap_message_in *c = realloc(s->ctx, cap * sizeof *c);
        if (!c)
            return LC_NOMEM;
        s->ctx = c;
        sess_entry **ce = realloc(s->ctx_ent, cap * sizeof *ce);
        if (!ce)
            return LC_NOMEM;
        s->ctx_ent = ce;
        size_t *cum = realloc(s->ctx_cum, (cap + 1) * sizeof *cum);
        if (!cum)
            return LC_NOMEM;
        s->ctx_cum = cum;
        s->cap_ctx = cap;
    }
    if (s->n_ctx == 0)
        s->ctx_cum[0] = 0;
    s->ctx[s->n_ctx].entry_id = id;
    s->ctx[s->n_ctx].json = msg;
    s->ctx[s->n_ctx].json_len = len;
    s->ctx_ent[s->n_ctx] = e;
    s->ctx_cum[s->n_ctx + 1] = s->ctx_cum[s->n_ctx] + tokens;
    if (e && e->usage_total > 0)
        s->usage_idx = (long)s->n_ctx;
    s->n_ctx++;
    return LC_OK;
}

static int ctx_push_entry(session *s, sess_entry *e)
{
    if (!e->msg)
        return LC_OK;
    return ctx_push(s, e, e->id, e->msg, e->msg_len, e->tokens);
}

static void set_mark(session *s, size_t pos)
{
    s->marks[pos].n_ctx = s->n_ctx;
    s->marks[pos].usage_idx = s->usage_idx;
}

/* Rebuild the context from the branch: once per compaction, or a move before one. */
static int ctx_rebuild(session *s)
{
    int rc = LC_OK;
    cJSON *m = NULL, *root = NULL;
    s->n_ctx = 0;
    s->usage_idx = -1;
    s->compaction = NULL;
    free(s->summary_msg);
    s->summary_msg = NULL;
    if (s->ctx_cum)
        s->ctx_cum[0] = 0;
    size_t comp_idx = 0;
    for (size_t i = s->n_branch; i-- > 0;) {
        if (strcmp(s->branch[i]->type, "compaction") == 0) {
            s->compaction = s->branch[i];
            comp_idx = i;
            break;
        }
    }
    if (!s->compaction) {
        for (size_t i = 0; i < s->n_branch; i++) {
            if ((rc = ctx_push_entry(s, s->branch[i])))
                goto done;
            set_mark(s, i);
        }
        goto done;
    }
    /* Positions before the compaction are never truncation points with it in force. */
    for (size_t i = 0; i < comp_idx; i++)
        s->marks[i] = (struct bmark){0, -1};
    root = cJSON_ParseWithLength(s->compaction->line, s->compaction->line_len);
    m = cJSON_CreateObject();
    if (!root || !m) {
        rc = LC_NOMEM;
        goto done;
    }
    const char *summary = jstr(root, "summary");
    const char *first_kept = jstr(root, "firstKeptEntryId");
    const cJSON *before = cJSON_GetObjectItemCaseSensitive(root, "tokensBefore");
    cJSON_AddStringToObject(m, "role", "compactionSummary");
    cJSON_AddStringToObject(m, "summary", summary ? summary : "");
    cJSON_AddNumberToObject(m, "tokensBefore", cJSON_IsNumber(before) ? before->valuedouble : 0);
    cJSON_AddNumberToObject(m, "timestamp", (double)s->compaction->ts_ms);
    s->summary_msg = cJSON_PrintUnformatted(m);
    if (!s->summary_msg) {
        rc = LC_NOMEM;
        goto done;
    }
    size_t sum_len = strlen(s->summary_msg);
    if ((rc = ctx_push(s, NULL, s->compaction->id, s->summary_msg, sum_len,
                       msg_estimate_tokens(m))))
        goto done;
    int found = 0;
    for (size_t i = 0; i < comp_idx; i++) {
        if (first_kept && strcmp(s->branch[i]->id, first_kept) == 0)
            found = 1;
        if (found && (rc = ctx_push_entry(s, s->branch[i])))
            goto done;
    }
    /* Usage recorded before the compaction measured the uncompacted context. */
    s->usage_idx = -1;
    set_mark(s, comp_idx);
    for (size_t i = comp_idx + 1; i < s->n_branch; i++) {
        if ((rc = ctx_push_entry(s, s->branch[i])))
            goto done;
        set_mark(s, i);
    }
done:
    cJSON_Delete(root);
    cJSON_Delete(m);
    return rc;
}

const ap_message_in *session_context(const session *s, size_t *n)
{
    *n = s->n_ctx;
    return s->ctx;
}

sess_entry *session_context_entry(const session *s, size_t i)
{
    return i < s->n_ctx ? s->ctx_ent[i] : NULL;
}

size_t session_context_tokens_from(const session *s, size_t from)
{
    if (from >= s->n_ctx)
        return 0;
    return s->ctx_cum[s->n_ctx] - s->ctx_cum[from];
}

size_t session_context_message_tokens(const session *s, size_t i)
{
    return i < s->n_ctx ? s->ctx_cum[i + 1] - s->ctx_cum[i] : 0;
}

size_t session_context_tokens(const session *s, int use_usage)
{
    if (s->n_ctx == 0)
        return 0;
    if (use_usage && s->usage_idx >= 0) {
        sess_entry *e = s->ctx_ent[s->usage_idx];
        return (size_t)e->usage_total + session_context_tokens_from(s, (size_t)s->usage_idx + 1);
    }
    return s->ctx_cum[s->n_ctx];
}

sess_entry *session_latest_compaction(const session *s)
{
    return s->compaction;
}

/* ------------------------------------------------------------------ branch */

static int branch_push(session *s, sess_entry *e)
{
    if (s->n_branch == s->cap_branch) {
        size_t cap = s->cap_branch ? s->cap_branch * 2 : 256;
        sess_entry **p = realloc(s->branch, cap * sizeof *p);
        if (!p)
            return LC_NOMEM;
        s->branch = p;
        struct bmark *m = realloc(s->marks, cap * sizeof *m);
        if (!m)
            return LC_NOMEM;
        s->marks = m;
        s->cap_branch = cap;
    }
    e->bpos = s->n_branch;
    s->marks[s->n_branch] = (struct bmark){s->n_ctx, s->usage_idx};
    s->branch[s->n_branch++] = e;
    return LC_OK;
}

static int on_branch(const session *s, const sess_entry *e)
{
    return e->bpos < s->n_branch && s->branch[e->bpos] == e;
}

/* Make `target` the leaf: walk up from it to the first entry on the current branch,
 * truncate there (O(1) through the marks) and push the walked entries. The cost is the
 * distance moved, not the branch length; only a move across the latest compaction
 * rebuilds the context. */
static int branch_move(session *s, sess_entry *target)
{
    int rc = LC_OK, rebuild = 0;
    sess_entry **stack = NULL;
    size_t n = 0, cap = 0;
    sess_entry *x = target;
    while (x && !on_branch(s, x) && n <= s->n_entries) {
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            sess_entry **p = realloc(stack, cap * sizeof *p);
            if (!p) {
                rc = LC_NOMEM;
                goto done;
            }
            stack = p;
        }
        stack[n++] = x;
        x = session_find(s, x->parent_id);
    }
    s->n_branch = x && on_branch(s, x) ? x->bpos + 1 : 0;
    if (s->compaction && !on_branch(s, s->compaction))
        rebuild = 1;
    if (!rebuild) {
        s->n_ctx = s->n_branch ? s->marks[s->n_branch - 1].n_ctx : 0;
        s->usage_idx = s->n_branch ? s->marks[s->n_branch - 1].usage_idx : -1;
    }
    while (n > 0) {
        sess_entry *e = stack[--n];
        if ((rc = branch_push(s, e)))
            goto done;
        if (rebuild)
            continue;
        if (strcmp(e->type, "compaction") == 0) {
            rebuild = 1;
            continue;
        }
        if ((rc = ctx_push_entry(s, e)))
            goto done;
        set_mark(s, e->bpos);
    }
    if (rebuild)
        rc = ctx_rebuild(s);
done:
    free(stack);
    return rc;
}

sess_entry *session_leaf(const session *s)
{
    return s->n_branch ? s->branch[s->n_branch - 1] : NULL;
}

sess_entry *const *session_branch(const session *s, size_t *n)
{
    *n = s->n_branch;
    return s->branch;
}

size_t session_entry_count(const session *s)
{
    return s->n_entries;
}

/* The raw lines of n entries as one JSON array; NULL without the memory. */
static char *lines_json(sess_entry *const *v, size_t n)
{
    sbuf b = {0};
    sb_putc(&b, '[');
    for (size_t i = 0; i < n; i++) {
        if (i)
            sb_putc(&b, ',');
        sb_append(&b, v[i]->line, v[i]->line_len);
    }
    sb_putc(&b, ']');
    if (b.oom) {
        sb_free(&b);
        return NULL;
    }
    return sb_detach(&b);
}

char *session_entries_json(const session *s)
{
    return lines_json(s->entries, s->n_entries);
}

char *session_branch_json(const session *s)
{
    return lines_json(s->branch, s->n_branch);
}

int session_move_leaf(session *s, const char *id, char **err)
{
    sess_entry *e = NULL;
    if (id) {
        e = session_find(s, id);
        if (!e)
            return lc_errf(err, LC_NOTFOUND, "no entry with id %s in the session", id);
    }
    int rc = branch_move(s, e);
    if (rc)
        return lc_errf(err, rc, "out of memory rebuilding the branch");
    return LC_OK;
}

/* Attach a new entry: the leaf moves to it; the context grows by its message. */
static int attach(session *s, sess_entry *e)
{
    sess_entry *leaf = session_leaf(s);
    int extends = (!leaf && !e->parent_id) ||
                  (leaf && e->parent_id && strcmp(leaf->id, e->parent_id) == 0);
    if (!extends)
        return branch_move(s, e);
    int rc = branch_push(s, e);
    if (rc)
        return rc;
    if (strcmp(e->type, "compaction") == 0)
        return ctx_rebuild(s);
    if ((rc = ctx_push_entry(s, e)))
        return rc;
    set_mark(s, e->bpos);
    return LC_OK;
}

/* ------------------------------------------------------------------ file */

/* Another process may append to the same file (two hosts on one session, two replays into
 * one file): stdio writes a long line in several write()s, and O_APPEND keeps only each of
 * them whole, so two writers weld their lines together. An exclusive flock around each
 * line keeps it whole against every writer that takes it (advisory: all of ours do). A
 * filesystem without flock (ENOLCK) writes unlocked, as before. */
static int lock_file(int fd)
{
    int r;
    while ((r = flock(fd, LOCK_EX)) != 0 && errno == EINTR) {
    }
    return r == 0;
}

static int write_line(session *s, const char *line, size_t len, int durable, char **err)
{
    struct stat st;
    int fd = fileno(s->fp), rc = LC_OK;
    int locked = lock_file(fd);
    int have_size = fflush(s->fp) == 0 && fstat(fd, &st) == 0;
    /* Under the lock the end of the file is where this line goes: if it is not a newline,
     * the last line is torn (a writer killed mid-line, here or elsewhere) and this one
     * starts on its own line. */
    char last = '\n';
    if (have_size && st.st_size > 0 && pread(fd, &last, 1, st.st_size - 1) != 1) last = '\n';
    int torn = s->torn || last != '\n';
    if ((torn && fputc('\n', s->fp) == EOF) || fwrite(line, 1, len, s->fp) != len ||
        fputc('\n', s->fp) == EOF ||
        fflush(s->fp) != 0) {
        int e = errno;
        /* A short append (disk full, EFBIG) must not leave half a line that the next
         * append would weld onto: drop the unwritten rest and cut back to the last whole
         * line, so the file stays valid JSONL. */
        __fpurge(s->fp);
        clearerr(s->fp);
        if (have_size && ftruncate(fd, st.st_size) != 0) e = errno;
        rc = lc_errf(err, LC_ERR, "cannot write %s: %s", s->path, strerror(e));
        goto done;
    }
    s->torn = 0;
    if (durable && fsync(fd) != 0)
        rc = lc_errf(err, LC_ERR, "cannot fsync %s: %s", s->path, strerror(errno));
done:
    if (locked) flock(fd, LOCK_UN);
    return rc;
}

int session_sync(session *s, char **err)
{
    if (fflush(s->fp) != 0 || fsync(fileno(s->fp)) != 0)
        return lc_errf(err, LC_ERR, "cannot sync %s: %s", s->path, strerror(errno));
    return LC_OK;
}

static char *new_id(session *s)
{
    char buf[16];
    for (;;) {
        snprintf(buf, sizeof buf, "%08x", (unsigned)(rng_next(&s->rng) >> 32));
        if (!session_find(s, buf))
            return lc_strdup(buf);
    }
}

int session_append(session *s, cJSON *entry, int durable, sess_entry **out, char **err)
{
    int rc = LC_OK;
    char *id = new_id(s), *line = NULL;
    cJSON *ordered = NULL;
    sess_entry *e = NULL, *leaf = session_leaf(s);
    char ts[40];
    if (!id) {
        rc = LC_NOMEM;
        goto done;
    }
    if (s->clock)
        snprintf(ts, sizeof ts, "%s", s->clock);
    else
        session_iso_time(lc_epoch_ms(), ts, sizeof ts);
    /* Field order as the reference writes it: type, id, parentId, timestamp, rest. The
     * remaining fields move from `entry` into the new object. */
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(entry, "type");
    if (!cJSON_IsString(type)) {
        rc = lc_errf(err, LC_INVALID, "entry has no type");
        goto done;
    }
    ordered = cJSON_CreateObject();
    if (!ordered || !cJSON_AddStringToObject(ordered, "type", type->valuestring) ||
        !cJSON_AddStringToObject(ordered, "id", id) ||
        !cJSON_AddItemToObject(ordered, "parentId",
                               leaf ? cJSON_CreateString(leaf->id) : cJSON_CreateNull()) ||
        !cJSON_AddStringToObject(ordered, "timestamp", ts)) {
        rc = LC_NOMEM;
        goto done;
    }
    for (cJSON *f = entry->child, *next; f; f = next) {
        next = f->next;
        if (!strcmp(f->string, "type") || !strcmp(f->string, "id") ||
            !strcmp(f->string, "parentId") || !strcmp(f->string, "timestamp"))
            continue;
        cJSON_AddItemToObject(ordered, f->string, cJSON_DetachItemViaPointer(entry, f));
    }
    line = cJSON_PrintUnformatted(ordered);
    if (!line) {
        rc = LC_NOMEM;
        goto done;
    }
    rc = session_append_line(s, line, durable, &e, err);
    if (rc)
        goto done;
    if (out)
        *out = e;
done:
    cJSON_Delete(ordered);
    free(id);
    free(line);
    return rc;
}

int session_append_line(session *s, const char *line, int durable, sess_entry **out,
                        char **err)
{
    int rc = LC_OK;
    sess_entry *e = NULL;
    size_t len = strlen(line);
    cJSON *root = cJSON_ParseWithLength(line, len);
    if (!root) {
        rc = lc_errf(err, LC_INVALID, "entry is not valid JSON");
        goto done;
    }
    if ((rc = entry_from_json(root, line, len, 0, &e, err)))
        goto done;
    if (session_find(s, e->id)) {
        rc = lc_errf(err, LC_INVALID, "an entry with id %s already exists", e->id);
        goto done;
    }
    if ((rc = write_line(s, line, len, durable, err)))
        goto done;
    if ((rc = add_entry(s, e)))
        goto done;
    sess_entry *added = e;
    e = NULL;
    if ((rc = attach(s, added))) {
        rc = lc_errf(err, rc, "out of memory extending the branch");
        goto done;
    }
    if (out)
        *out = added;
done:
    cJSON_Delete(root);
    entry_free(e);
    return rc;
}

static char *make_header(session *s, const char *cwd)
{
    unsigned char b[16];
    for (int i = 0; i < 16; i += 8) {
        uint64_t r = rng_next(&s->rng);
        memcpy(b + i, &r, 8);
    }
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
    char uuid[40], ts[40];
    snprintf(uuid, sizeof uuid,
             "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
             b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
             b[14], b[15]);
    session_iso_time(lc_epoch_ms(), ts, sizeof ts);
    cJSON *h = cJSON_CreateObject();
    if (!h)
        return NULL;
    cJSON_AddStringToObject(h, "type", "session");
    cJSON_AddNumberToObject(h, "version", 3);
    cJSON_AddStringToObject(h, "id", uuid);
    cJSON_AddStringToObject(h, "timestamp", ts);
    cJSON_AddStringToObject(h, "cwd", cwd ? cwd : "");
    char *out = cJSON_PrintUnformatted(h);
    cJSON_Delete(h);
    return out;
}

static int read_header(session *s, const char *line, char **err)
{
    int rc = LC_OK;
    cJSON *h = cJSON_Parse(line);
    const char *type = h ? jstr(h, "type") : NULL;
    if (!type || strcmp(type, "session") != 0 || !jstr(h, "id")) {
        rc = lc_errf(err, LC_INVALID,
                     "%s:1: not a session header (expected {\"type\":\"session\",...})",
                     s->path);
        goto done;
    }
    s->id = lc_strdup(jstr(h, "id"));
    free(s->cwd);
    s->cwd = lc_strdup(jstr(h, "cwd") ? jstr(h, "cwd") : "");
done:
    cJSON_Delete(h);
    return rc;
}

int session_open(const char *path, const char *cwd, const char *header_line,
                 session_warn_fn warn, void *warn_ud, session **out, int *existed,
                 char **err)
{
    int rc = LC_OK;
    FILE *in = NULL;
    char *line = NULL, *hdr = NULL;
    size_t cap = 0;
    int have_header = 0, ends_newline = 1;
    session *s = calloc(1, sizeof *s);
    if (!s)
        return LC_NOMEM;
    s->usage_idx = -1;
    s->rng = random_seed();
    s->path = lc_strdup(path);
    s->cwd = lc_strdup(cwd ? cwd : "");
    if (!s->path || !s->cwd) {
        rc = LC_NOMEM;
        goto done;
    }
    in = fopen(path, "r");
    if (!in && errno != ENOENT) {
        rc = lc_errf(err, LC_ERR, "cannot open %s: %s", path, strerror(errno));
        goto done;
    }
    long lineno = 0;
    ssize_t n;
    while (in && (n = getline(&line, &cap, in)) >= 0) {
        lineno++;
        ends_newline = n > 0 && line[n - 1] == '\n';
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
            line[--n] = '\0';
        if (n == 0)
            continue;
        if (!have_header) {
            if ((rc = read_header(s, line, err)))
                goto done;
            have_header = 1;
            continue;
        }
        char *why = NULL;
        sess_entry *e = NULL;
        cJSON *root = cJSON_ParseWithLength(line, (size_t)n);
        int erc = root ? entry_from_json(root, line, (size_t)n, lineno, &e, &why)
                       : lc_errf(&why, LC_INVALID, "malformed JSON");
        cJSON_Delete(root);
        if (erc == LC_NOMEM) {
            rc = LC_NOMEM;
            free(why);
            goto done;
        }
        if (!erc && session_find(s, e->id)) {
            erc = lc_errf(&why, LC_INVALID, "duplicate entry id %s", e->id);
            entry_free(e);
            e = NULL;
        }
        if (erc) {
            char *msg = lc_asprintf("%s:%ld: %s; line skipped (the file is left as it is)",
                                    path, lineno, why ? why : "unreadable entry");
            if (warn && msg)
                warn(warn_ud, msg);
            free(msg);
            free(why);
            continue;
        }
        if ((rc = add_entry(s, e))) {
            entry_free(e);
            goto done;
        }
    }
    if (in && ferror(in)) {
        rc = lc_errf(err, LC_ERR, "cannot read %s: %s", path, strerror(errno));
        goto done;
    }
    if (existed)
        *existed = have_header;
    /* Appends; read only to see whether the last line is whole. Created 0600 whatever the
     * umask: it holds the same words as the store, which is 0600. */
    int afd = open(path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    s->fp = afd >= 0 ? fdopen(afd, "a+") : NULL;
    if (!s->fp && afd >= 0) close(afd);
    if (!s->fp) {
        rc = lc_errf(err, LC_ERR, "cannot open %s for appending: %s", path, strerror(errno));
        goto done;
    }
    if (!have_header) {
        hdr = header_line ? lc_strdup(header_line) : make_header(s, cwd);
        if (!hdr) {
            rc = LC_NOMEM;
            goto done;
        }
        if ((rc = read_header(s, hdr, err)) || (rc = write_line(s, hdr, strlen(hdr), 1, err)))
            goto done;
    } else if (!ends_newline) {
        /* A torn last line stays as it is (opening never writes); the next entry, if any,
         * starts on its own line. */
        s->torn = 1;
    }
    for (size_t i = 0; i < s->n_entries; i++) {
        sess_entry *e = s->entries[i];
        if (e->parent_id && !session_find(s, e->parent_id) && warn) {
            char *msg = lc_asprintf("%s:%ld: entry %s names a parent %s that is not in the "
                                    "file; it starts its own branch",
                                    path, e->lineno, e->id, e->parent_id);
            if (msg)
                warn(warn_ud, msg);
            free(msg);
        }
    }
    if ((rc = branch_move(s, s->n_entries ? s->entries[s->n_entries - 1] : NULL)))
        goto done;
    *out = s;
    s = NULL;
done:
    if (in)
        fclose(in);
    free(line);
    free(hdr);
    if (s)
        session_close(s);
    return rc;
}

void session_close(session *s)
{
    if (!s)
        return;
    if (s->fp) {
        fflush(s->fp);
        fsync(fileno(s->fp));
        fclose(s->fp);
    }
    for (size_t i = 0; i < s->n_entries; i++)
        entry_free(s->entries[i]);
    LC_FREE(s->entries, s->map, s->branch, s->marks, s->ctx, s->ctx_ent, s->ctx_cum,
            s->summary_msg, s->clock, s->path, s->id, s->cwd, s);
}

const char *session_id(const session *s)
{
    return s->id;
}

const char *session_path_name(const session *s)
{
    return s->path;
}

const char *session_cwd(const session *s)
{
    return s->cwd;
}
