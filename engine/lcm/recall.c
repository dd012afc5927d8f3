/*
 * recall.c -- grep, describe and the bounded reader over the lossless store of one
 * session (recall.h; past sessions: recall_sessions.c). PCRE2 (with JIT) is the regex engine: it is the only
 * widely installed C engine with Perl/JS syntax (what models write), lookaround, a JIT,
 * and a match limit, so a pathological pattern is bounded instead of hanging the call.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "recall.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <cjson/cJSON.h>
#include <pcre2.h>

#include "catalog.h"
#include "config.h"
#include "files.h"
#include "message.h"
#include "recall_query.h"
#include "redact.h"
#include "rx.h"
#include "util.h"

static void recall_result_clear_hits(recall_result *r);

void recall_result_free(recall_result *r)
{
    recall_result_clear_hits(r);
    LC_FREE(r->limit_entry, r->limit_session, r->stop_entry, r->index_note);
    memset(r, 0, sizeof *r);
}

/* The hits alone freed; the rest of the result stays. */
static void recall_result_clear_hits(recall_result *r)
{
    for (size_t i = 0; i < r->n; i++) {
        recall_hit *h = &r->hits[i];
        LC_FREE(h->entry_id, h->role, h->snippet, h->session_id, h->session_date, h->session_cwd, h->rank_in);
    }
    free(r->hits);
    r->hits = NULL; /* hits are pushed again after a clear (a first page given up) */
    r->n = 0;
}

recall_hit *recall_hit_push(recall_result *r)
{
    recall_hit *h = realloc(r->hits, (r->n + 1) * sizeof *h);
    if (!h) return NULL;
    r->hits = h;
    memset(&h[r->n], 0, sizeof *h);
    return &h[r->n++];
}

/* The line a hit shows: from a little before the match, whitespace collapsed, clipped at
 * RECALL_LINE_CHARS code points. */
/* How far a grep line reaches back for the start of the token it would otherwise cut. */
#define RECALL_TOKEN_REACH 256

static char *recall_snippet(const char *text, size_t len, size_t ms, int redact, int *clipped)
{
    sbuf b = {0};
    size_t start = ms > 80 ? ms - 80 : 0;
    /* Cut only between tokens: a secret cut in half no longer has the shape redaction
     * knows, and its visible half would leak. Reach back to the token's start, or, for a
     * token too long to show whole, skip to its end. */
    if (start > 0 && !isspace((unsigned char)text[start - 1])) {
        size_t back = start;
        while (back > 0 && start - back < RECALL_TOKEN_REACH && !isspace((unsigned char)text[back - 1])) back--;
        if (back == 0 || isspace((unsigned char)text[back - 1])) {
            start = back;
        } else {
            while (start < ms && !isspace((unsigned char)text[start])) start++;
        }
    }
    size_t chars = 0, i = start;
    int space = 0;
    *clipped = 0;
    if (start > 0) {
        sb_puts(&b, "...");
        chars += 3;
    }
    while (i < len) {
        unsigned char c = (unsigned char)text[i];
        if (isspace(c)) {
            space = 1;
            i++;
            continue;
        }
        if (chars >= RECALL_LINE_CHARS) {
            *clipped = 1;
            /* The same at the end: drop the token the clip would cut. */
            if (!space && i > start && !isspace((unsigned char)text[i - 1])) {
                size_t keep = b.len;
                while (keep > 0 && b.p[keep - 1] != ' ') keep--;
                if (keep > 3) {
                    b.len = keep - 1;
                    b.p[b.len] = '\0';
                }
            }
            break;
        }
        if (space && b.len > 0 && chars + 1 < RECALL_LINE_CHARS) {
            sb_putc(&b, ' ');
            chars++;
        }
        space = 0;
        size_t n = 1;
        while (i + n < len && ((unsigned char)text[i + n] & 0xC0) == 0x80) n++;
        sb_append(&b, text + i, n);
        chars++;
        i += n;
    }
    char *raw = sb_detach(&b);
    if (!raw || !redact) return raw;
    char *masked = redact_text(raw, strlen(raw), 1, NULL);
    free(raw);
    return masked;
}

/* Words of a query (operators and syntax dropped), to place the snippet. */
static size_t recall_query_terms(const char *q, char terms[][64], size_t max)
{
    size_t n = 0, l;
    const char *p = q, *st;
    while (n < max && (st = lc_next_word(&p, &l))) {
        if (l >= 64) continue;
        if ((l == 3 && !strncmp(st, "AND", 3)) || (l == 2 && !strncmp(st, "OR", 2)) ||
            (l == 3 && !strncmp(st, "NOT", 3)) || (l == 4 && !strncmp(st, "NEAR", 4)))
            continue;
        memcpy(terms[n], st, l);
        terms[n][l] = '\0';
        n++;
    }
    return n;
}

static size_t recall_find_terms(const char *text, size_t len, char terms[][64], size_t nterms)
{
    size_t best = len;
    for (size_t t = 0; t < nterms; t++) {
        size_t tl = strlen(terms[t]);
        for (size_t i = 0; i + tl <= len && i < best; i++) {
            if (strncasecmp(text + i, terms[t], tl) != 0) continue;
            /* Token start: FTS5's unicode61 tokenizer matches whole tokens or prefixes. */
            if (i > 0 && (isalnum((unsigned char)text[i - 1]) || (unsigned char)text[i - 1] >= 0x80))
                continue;
            best = i;
            break;
        }
    }
    return best == len ? 0 : best;
}

static int recall_add_hit(store *s, recall_result *r, const store_search_row *row, size_t ms, int redact)
{
    recall_hit *h = recall_hit_push(r);
    if (!h) return LC_NOMEM;
    h->entry_id = lc_strdup(row->entry_id ? row->entry_id : "");
    h->role = lc_strdup(row->role ? row->role : "");
    h->ordinal = row->ordinal;
    h->removed = row->removed;
    h->thinking = row->thinking;
    /* A call with no prose is its arguments: a file written, an edit's old and new text. */
    h->tool_words = !row->role || (strcmp(row->role, "user") != 0 && strcmp(row->role, "assistant") != 0) ||
                    (!strcmp(row->role, "assistant") && row->text_len >= 10 && !memcmp(row->text, "[toolCall ", 10));
    h->snippet = recall_snippet(row->text, row->text_len, ms, redact, &h->clipped);
    h->created = row->created;
    h->score = row->score;
    h->prompt_ordinal = row->prompt_ordinal;
    h->has_prompt = row->has_prompt;
    if (row->rank_in && row->rank_n) {
        /* Copied byte-wise: the blob a backend hands out need not be aligned for doubles. */
        if (!(h->rank_in = malloc(row->rank_n * sizeof *h->rank_in))) return LC_NOMEM;
        memcpy(h->rank_in, row->rank_in, row->rank_n * sizeof *h->rank_in);
        h->rank_n = row->rank_n;
    }
    if (!h->entry_id || !h->role || !h->snippet) return LC_NOMEM;
    store_search_cover(s, h->entry_id, &h->summary_id, &h->leaf_id);
    return LC_OK;
}

/* Query mode's page visitor: the snippet is placed at the first query word the index
 * reach holds. */
typedef struct recall_query_ctx {
    store *s;
    recall_result *r;
    char (*terms)[64];
    size_t nterms;
    int redact;
} recall_query_ctx;

static int recall_query_visit(void *ud, const store_search_row *row, char **err)
{
    recall_query_ctx *q = ud;
    size_t ilen = files_utf8_prefix(row->text, row->text_len, STORE_INDEX_CHARS);
    size_t ms = recall_find_terms(row->text, ilen, q->terms, q->nterms);
    if (recall_add_hit(q->s, q->r, row, ms, q->redact) != LC_OK) return lc_errf(err, LC_NOMEM, "recall: out of memory");
    return LC_OK;
}

/* The stored roles of lcm_grep's role words (recall_args_grep_filters), comma-separated in
 * buf: tool is a tool's result or a shell run's output; thinking is stored by an index
 * that keeps thinking apart (an assistant message's thinking is otherwise its text). */
static const char *recall_roles_stored(const char *words, char *buf, size_t n)
{
    sbuf b = {0};
    const char *p = words;
    if (!words || !*words) return NULL;
    while (*p) {
        size_t w = strcspn(p, ", ");
        const char *stored = w == 4 && !strncmp(p, "tool", 4) ? "toolResult,bashExecution" : NULL;
        if (w) {
            if (b.len) sb_putc(&b, ',');
            if (stored) sb_puts(&b, stored);
            else sb_append(&b, p, w);
        }
        p += w;
        while (*p == ',' || *p == ' ') p++;
    }
    snprintf(buf, n, "%s", b.p ? b.p : "");
    sb_free(&b);
    return buf;
}

store_search_scope recall_query_scope(const recall_grep_opts *o, char *rolebuf, size_t n)
{
    store_search_scope scope = {.include_removed = o->include_removed, .since_ms = o->since_ms,
                                .until_ms = o->until_ms, .roles = recall_roles_stored(o->role_words, rolebuf, n),
                                .order = o->sort == RECALL_SORT_NEWEST   ? STORE_ORDER_NEWEST
                                         : o->sort == RECALL_SORT_OLDEST ? STORE_ORDER_OLDEST
                                                                         : STORE_ORDER_RANK};
    return scope;
}

/* Query mode: the query's language (recall_query.h) translated, then counted and paged by
 * the rank (bm25 with a coverage term) or by time. Ranking scores every match before the
 * first row comes out, so a query matching more than RECALL_RANK_MAX messages is paged newest
 * stored first and the output says why; the order depends on the count alone, so the same
 * query and offset page the same order. Both steps stop at the store's time bound
 * (RECALL_QUERY_MS, or what the caller has left), said in the output. */
static int recall_grep_query(store *s, const recall_grep_opts *o, recall_result *r, char **err)
{
    char rolebuf[256];
    recall_query q = {0};
    store_search_scope scope = recall_query_scope(o, rolebuf, sizeof rolebuf);
    scope.summary_id = o->summary_id;
    int rc = LC_OK;
    size_t limit = o->limit ? o->limit : RECALL_PAGE;
    char terms[RECALL_QUERY_TERMS][64];
    size_t nterms = 0;
    char *why = NULL;
    double budget = o->time_budget_ms > 0 ? o->time_budget_ms : RECALL_QUERY_MS;
    scope.deadline_ms = lc_now_ms() + budget;
    if ((rc = recall_query_parse(o->query, &q, err)) != LC_OK) goto done;
    r->raw = q.raw;
    r->words_dropped = q.dropped;
    r->stopwords = q.stop_dropped;
    if (!q.match) {
        r->no_words = 1;
        goto done;
    }
    if (q.raw) {
        nterms = recall_query_terms(q.match, terms, RECALL_QUERY_TERMS);
    } else {
        for (size_t i = 0; i < q.nphrases && nterms < RECALL_QUERY_TERMS; i++)
            if (q.weights[i] > 0 && q.words[i][0]) snprintf(terms[nterms++], 64, "%s", q.words[i]);
        scope.weights = q.weights;
        scope.nweights = q.nphrases;
    }
    /* A store of at most RECALL_RANK_MAX messages cannot match more: it is ranked at once and
     * the page's own pass counts the matches (a backend that cannot leaves the total unknown,
     * and the count is asked for as for a larger store). */
    int64_t held = store_message_count(s);
    r->total = -1;
    if (held >= 0 && held <= RECALL_RANK_MAX && scope.order == STORE_ORDER_RANK) {
        recall_query_ctx qc = {.s = s, .r = r, .terms = terms, .nterms = nterms, .redact = o->redact};
        scope.total_out = &r->total;
        rc = store_search_page(s, q.match, &scope, 0, limit, o->offset, recall_query_visit, &qc, &why);
        scope.total_out = NULL;
        if (rc == LC_OK && r->total >= 0) goto paged;
        if (rc == LC_NOMEM) goto failed;
        /* no row (nothing matched, or the offset is past the matches), or a failure (a
         * refusal, a timeout) that the count below meets and words again: the hits so far
         * are not kept */
        recall_result_clear_hits(r);
        free(why);
        why = NULL;
        rc = LC_OK;
    }
    rc = store_search_count(s, q.match, &scope, &r->total, &why);
    if (rc == LC_INVALID) {
        rc = lc_errf(err, LC_INVALID,
                     "lcm_grep: the query after \"fts5:\" is not valid FTS5 syntax (%s); without the \"fts5:\""
                     " prefix any text is a query",
                     why ? why : "?");
        goto done;
    }
    if (rc == LC_CANCELLED) {
        r->timed_out = 1;
        r->total = -1;
        rc = LC_OK;
        goto done;
    }
    if (rc != LC_OK) {
failed:
        if (err) {
            *err = why;
            why = NULL;
        }
        goto done;
    }
    r->newest_first = r->total > RECALL_RANK_MAX && scope.order == STORE_ORDER_RANK;
    if (r->total > 0 && o->offset < (size_t)r->total) {
        recall_query_ctx qc = {.s = s, .r = r, .terms = terms, .nterms = nterms, .redact = o->redact};
        rc = store_search_page(s, q.match, &scope, r->newest_first, limit, o->offset, recall_query_visit, &qc, err);
        if (rc == LC_CANCELLED) {
            if (err) {
                free(*err);
                *err = NULL;
            }
            r->timed_out = 1;
            rc = LC_OK;
        }
        if (rc != LC_OK) goto done;
    }
paged:
    r->more = (int64_t)(o->offset + r->n) < r->total;
    /* Messages the index holds only in part: named so a miss there is not a surprise. */
    r->long_unindexed = (size_t)store_search_unindexed(s);
done:
    recall_query_free(&q);
    free(why);
    return rc;
}

int recall_hit_read(store *s, const recall_grep_opts *o, int64_t id, int thinking, recall_hit *h, char **err)
{
    recall_query q = {0};
    recall_result r = {0};
    char terms[RECALL_QUERY_TERMS][64];
    size_t nterms = 0;
    int rc = recall_query_parse(o->query, &q, err);
    if (rc != LC_OK) return rc;
    if (q.raw && q.match) {
        nterms = recall_query_terms(q.match, terms, RECALL_QUERY_TERMS);
    } else {
        for (size_t i = 0; i < q.nphrases && nterms < RECALL_QUERY_TERMS; i++)
            if (q.weights[i] > 0 && q.words[i][0]) snprintf(terms[nterms++], 64, "%s", q.words[i]);
    }
    recall_query_ctx qc = {.s = s, .r = &r, .terms = terms, .nterms = nterms, .redact = o->redact};
    rc = store_search_row_get(s, id, thinking, recall_query_visit, &qc, err);
    if (rc == LC_OK && r.n == 1) {
        LC_FREE(h->entry_id, h->role, h->snippet);
        h->entry_id = r.hits[0].entry_id;
        h->role = r.hits[0].role;
        h->snippet = r.hits[0].snippet;
        h->removed = r.hits[0].removed;
        h->clipped = r.hits[0].clipped;
        h->thinking = r.hits[0].thinking;
        h->summary_id = r.hits[0].summary_id;
        h->leaf_id = r.hits[0].leaf_id;
        h->created = r.hits[0].created;
        h->pending = 0;
        r.hits[0].entry_id = r.hits[0].role = r.hits[0].snippet = NULL;
    } else if (rc == LC_OK) {
        rc = LC_NOTFOUND;
    }
    recall_result_free(&r);
    recall_query_free(&q);
    return rc;
}

/* Pattern mode's scan state. */
typedef struct recall_pattern_ctx {
    store *s;
    const recall_grep_opts *o;
    recall_result *r;
    pcre2_code *re;
    pcre2_match_data *md;
    rx_ctx *rx;
    size_t limit, matched;
    double budget;
    int started;
} recall_pattern_ctx;

static int recall_pattern_visit(void *ud, const store_search_row *row, char **err)
{
    recall_pattern_ctx *p = ud;
    recall_result *r = p->r;
    size_t plen = files_utf8_prefix(row->text, row->text_len, RECALL_PATTERN_CHARS);
    /* The bound counts from the first message read, when it came late (a busy machine, a
     * server's round trip before the first row): a call stopped before any message would
     * name no point to resume from, and the caller would ask again and again. */
    if (!p->started) {
        double now = lc_now_ms();
        p->started = 1;
        if (p->rx->deadline_ms > 0 && now >= p->rx->deadline_ms) p->rx->deadline_ms = now + p->budget;
    }
    int m = rx_match(p->rx, p->re, row->text, plen, 0, p->md);
    if (m == RX_DEADLINE) {
        r->timed_out = 1;
        /* Inside a message (not before it): name the one left half-read. */
        if (p->rx->last_rc == PCRE2_ERROR_CALLOUT && !r->stop_entry) r->stop_entry = lc_strdup(row->entry_id);
        return STORE_VISIT_STOP;
    }
    r->scanned++;
    r->last_ordinal = row->ordinal;
    r->last_id = row->id;
    if (plen < row->text_len) r->pattern_clipped++;
    if (m == RX_LIMIT || m == RX_FAIL) {
        if (r->limit_hits++ == 0) {
            r->limit_rc = p->rx->last_rc;
            r->limit_entry = lc_strdup(row->entry_id);
        }
        return LC_OK;
    }
    if (m != RX_MATCH) return LC_OK;
    r->matched = ++p->matched;
    if (p->matched <= p->o->offset) return LC_OK;
    if (r->n >= p->limit) {
        r->more = 1;
        return STORE_VISIT_STOP;
    }
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(p->md);
    if (recall_add_hit(p->s, r, row, ov[0], p->o->redact) != LC_OK)
        return lc_errf(err, LC_NOMEM, "recall: out of memory");
    return LC_OK;
}

/* Pattern mode. The whole call is bounded by one deadline that rx_match enforces inside
 * matching (rx.h), so one long message cannot hold the call; a message whose match a PCRE2
 * limit leaves undecided is counted and named, never taken for "no match". */
static int recall_grep_pattern(store *s, const recall_grep_opts *o, recall_result *r, char **err)
{
    store_search_scope scope = {.summary_id = o->summary_id, .include_removed = o->include_removed};
    pcre2_code *re = NULL;
    pcre2_match_data *md = NULL;
    rx_ctx rx = {0};
    int rc = LC_OK, ec;
    PCRE2_SIZE eo;
    double budget = o->time_budget_ms > 0 ? o->time_budget_ms : RECALL_PATTERN_MS;
    r->total = -1;
    if (o->resume && *o->resume) {
        long long ord = -1, id = -1;
        char tail = 0;
        if (sscanf(o->resume, "%lld:%lld%c", &ord, &id, &tail) != 2 || ord < 0 || id < 1) {
            rc = lc_errf(err, LC_INVALID, "lcm_grep: resume is \"ORDINAL:ID\" as a bounded scan named it");
            goto done;
        }
        scope.after_ordinal = ord;
        scope.after_id = id;
        r->resumed = 1;
    }
    re = pcre2_compile((PCRE2_SPTR)o->pattern, PCRE2_ZERO_TERMINATED,
                       (o->case_sensitive ? 0 : PCRE2_CASELESS) | PCRE2_MULTILINE | RX_COMPILE_OPTIONS,
                       &ec, &eo, NULL);
    if (!re) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(ec, msg, sizeof msg);
        rc = lc_errf(err, LC_INVALID, "lcm_grep: pattern does not compile at offset %zu: %s",
                     (size_t)eo, (const char *)msg);
        goto done;
    }
    pcre2_jit_compile(re, PCRE2_JIT_COMPLETE); /* on failure the interpreter runs, bounded the same */
    md = pcre2_match_data_create_from_pattern(re, NULL);
    if (!md || rx_ctx_init(&rx, lc_now_ms() + budget) != 0) {
        rc = lc_errf(err, LC_NOMEM, "recall: out of memory");
        goto done;
    }
    recall_pattern_ctx p = {.s = s, .o = o, .r = r, .re = re, .md = md, .rx = &rx,
                            .limit = o->limit ? o->limit : RECALL_PAGE, .budget = budget};
    rc = store_search_scan(s, &scope, recall_pattern_visit, &p, NULL, err);
done:
    pcre2_match_data_free(md);
    rx_ctx_free(&rx);
    pcre2_code_free(re);
    return rc;
}

int recall_grep(store *s, const recall_grep_opts *o, recall_result *out, char **err)
{
    memset(out, 0, sizeof *out);
    int has_q = o->query && *o->query, has_p = o->pattern && *o->pattern;
    if (has_q == has_p) return lc_errf(err, LC_INVALID, "lcm_grep: give exactly one of query or pattern");
    if (o->summary_id > 0 && !store_summary_exists(s, o->summary_id))
        return lc_errf(err, LC_NOTFOUND, "lcm_grep: this store holds no summary #%lld",
                       (long long)o->summary_id);
    int rc = has_q ? recall_grep_query(s, o, out, err) : recall_grep_pattern(s, o, out, err);
    if (rc) recall_result_free(out);
    return rc;
}

#define RECALL_ECHO_BYTES 300 /* the query echoed in a result's first line */

char *recall_grep_format(const recall_grep_opts *o, recall_scope scope, const recall_result *r)
{
    sbuf b = {0};
    int query = o->query && *o->query;
    const char *what = query ? o->query : o->pattern;
    /* The query as given, clipped (a 4,000-word query is not echoed whole), on a character. */
    size_t wl = what ? strlen(what) : 0, shown = wl > RECALL_ECHO_BYTES ? lc_utf8_back(what, RECALL_ECHO_BYTES) : wl;
    sb_printf(&b, "lcm_grep %s \"%.*s%s\"", query ? "query" : "pattern", (int)shown, what ? what : "",
              shown < wl ? "..." : "");
    if (scope != RECALL_SCOPE_SESSION)
        sb_printf(&b, " across %s", scope == RECALL_SCOPE_SESSIONS       ? "this project's past sessions"
                                    : scope == RECALL_SCOPE_ALL_SESSIONS ? "all past sessions of this agent home"
                                                                         : "every session in the store (fleet)");
    if (o->summary_id > 0) sb_printf(&b, " inside summary #%lld", (long long)o->summary_id);
    if (query && o->role_words) sb_printf(&b, " role %s", o->role_words);
    if (query && (o->since_ms > 0 || o->until_ms > 0)) {
        char *a = o->since_ms > 0 ? lc_utc_format(o->since_ms, "%Y-%m-%d %H:%M", "?") : NULL;
        char *z = o->until_ms > 0 ? lc_utc_format(o->until_ms, "%Y-%m-%d %H:%M", "?") : NULL;
        sb_printf(&b, " from %s until %s UTC", a ? a : "the start", z ? z : "now");
        free(a);
        free(z);
    }
    if (query && o->sort != RECALL_SORT_RELEVANCE)
        sb_printf(&b, ", %s first", o->sort == RECALL_SORT_NEWEST ? "newest" : "oldest");
    sb_puts(&b, ": ");
    /* A message a limit or the time bound left undecided may match: never "no more". */
    int undecided = r->limit_hits || r->timed_out || r->stop_time;
    if (query && r->no_words)
        sb_puts(&b, "no hits: the query holds no word to search (write words, a \"phrase\" or a name)");
    else if (r->n == 0)
        sb_puts(&b, undecided ? "no hits found before a bound (below); matches may exist" : "no hits");
    else if (r->total >= 0)
        sb_printf(&b, "%lld hit(s); showing %zu-%zu", (long long)r->total, o->offset + 1, o->offset + r->n);
    else
        sb_printf(&b, "showing %zu-%zu; %s", o->offset + 1, o->offset + r->n,
                  r->more ? "more matches exist" : undecided ? "more matches may exist (a bound was hit, below)"
                                                             : "no more matches");
    sb_putc(&b, '\n');
    int any_clipped = 0;
    for (size_t i = 0; i < r->n; i++) {
        const recall_hit *h = &r->hits[i];
        char *when = h->created > 0 ? lc_utc_format(h->created, "%Y-%m-%d %H:%M", NULL) : NULL;
        sb_printf(&b, "- %s%s [%s]%s", h->removed ? "[removed] " : "", h->entry_id, h->role,
                  h->thinking ? " [thinking]" : "");
        if (h->session_id)
            sb_printf(&b, " (past session %s, %s, cwd %s)", h->session_id,
                      when ? when : h->session_date ? h->session_date : "?", h->session_cwd);
        else if (when)
            sb_printf(&b, " %s", when);
        free(when);
        if (h->summary_id) {
            sb_printf(&b, " covered by summary #%lld", (long long)h->summary_id);
            if (h->leaf_id != h->summary_id) sb_printf(&b, " (leaf #%lld)", (long long)h->leaf_id);
        }
        sb_printf(&b, ": %s\n", h->snippet);
        any_clipped |= h->clipped;
    }
    if (r->more && r->total >= 0)
        sb_printf(&b, "more: call again with offset %zu\n", o->offset + r->n);
    else if (r->more)
        sb_printf(&b, "more matches exist: call again with offset %zu\n", o->offset + r->n);
    if (any_clipped) sb_printf(&b, "bound: a grep line is clipped at %d characters; lcm_expand_query reads the entry\n", RECALL_LINE_CHARS);
    if (query && r->newest_first && scope == RECALL_SCOPE_SESSION)
        sb_printf(&b, "order: newest stored first, not by relevance: %lld matches are more than the %d"
                  " that are ranked; add words or a \"phrase\" for a ranked page\n",
                  (long long)r->total, RECALL_RANK_MAX);
    else if (query && r->newest_first && r->home_index)
        sb_printf(&b, "order: newest session first, not by relevance: the sessions hold more than the %d"
                  " matches that are ranked; add words or a \"phrase\" for a ranked page\n",
                  RECALL_RANK_MAX);
    else if (query && r->newest_first)
        sb_printf(&b, "order: newest stored first within a session, not by relevance: a store holds %lld"
                  " matches, more than the %d that are ranked; add words or a \"phrase\" for a ranked page\n",
                  (long long)r->rank_skipped_total, RECALL_RANK_MAX);
    if (query && !r->raw && r->n && o->sort == RECALL_SORT_RELEVANCE && o->offset == 0)
        sb_puts(&b, "ranked: by relevance (any word may match; more of the query's words, rarer ones, first)"
                    "; narrow with \"a phrase\", AND, -word, role, since/until, or sort newest\n");
    if (query && r->words_dropped)
        sb_printf(&b, "bound: a query searches its first %d words; %zu more were left out\n", RECALL_QUERY_TERMS,
                  r->words_dropped);
    if (query && r->timed_out && scope == RECALL_SCOPE_SESSION)
        sb_printf(&b, "bound: the query stopped at its %.0f-second time limit; matches may exist: use fewer or rarer"
                      " words, a \"phrase\", or since/until\n",
                  RECALL_QUERY_MS / 1000);
    if (query && r->long_unindexed)
        sb_printf(&b, "bound: the index holds the first %d characters of a message; %zu message(s) are longer (use pattern to read up to %d)\n",
                  STORE_INDEX_CHARS, r->long_unindexed, RECALL_PATTERN_CHARS);
    if (!query && r->pattern_clipped)
        sb_printf(&b, "bound: a pattern reads the first %d characters of a message; %zu message(s) were longer\n",
                  RECALL_PATTERN_CHARS, r->pattern_clipped);
    if (r->limit_hits) {
        sb_printf(&b, "bound: %s was hit on entry %s", rx_limit_name(r->limit_rc),
                  r->limit_entry ? r->limit_entry : "?");
        if (r->limit_session) sb_printf(&b, " of past session %s", r->limit_session);
        sb_printf(&b, " (%zu message(s) in all): whether %s is unknown; a simpler pattern"
                  " (fewer nested or alternated repeats) decides it\n",
                  r->limit_hits, r->limit_hits == 1 ? "it matches" : "they match");
    }
    if (r->timed_out && scope == RECALL_SCOPE_SESSION) {
        sb_printf(&b, "bound: stopped at the one-second pattern limit after %zu message(s)%s", r->scanned,
                  r->resumed ? " past the resume point" : "");
        if (r->stop_entry) sb_printf(&b, ", inside entry %s", r->stop_entry);
        sb_puts(&b, "; more may exist\n");
        if (r->scanned)
            sb_printf(&b, "continue: call again with the same pattern and resume \"%lld:%lld\" (hits already "
                          "shown are not repeated; offset counts from there)\n",
                      (long long)r->last_ordinal, (long long)r->last_id);
    }
    if (scope != RECALL_SCOPE_SESSION) {
        if (scope == RECALL_SCOPE_FLEET && !r->shared)
            sb_puts(&b, "store: the embedded SQLite store is not shared: fleet reads every session of this "
                        "agent home (a shared store, LCM_STORE_URL, adds other agents' sessions)\n");
        sb_printf(&b, "sessions: %zu searched", r->stores_searched);
        if (r->stores_older) sb_printf(&b, ", %zu older-generation (not searched; /lcm migrate)", r->stores_older);
        if (r->stores_skipped) sb_printf(&b, ", %zu skipped", r->stores_skipped);
        sb_putc(&b, '\n');
        if (r->stores_from) sb_printf(&b, "resumed: the %zu newest session(s) not searched\n", r->stores_from);
        if (r->home_index && r->index_stale)
            sb_printf(&b, "index: %zu session(s) not yet in the home index were searched one by one (it catches up"
                          " at the next search)\n",
                      r->index_stale);
        if (r->index_note)
            sb_printf(&b, "index: the home index was not used (%s); the sessions were searched one by one\n",
                      r->index_note);
        if (r->stop_hits) sb_printf(&b, "bound: stopped at %d hits\n", RECALL_SESSIONS_HITS);
        if (r->stop_time && query) {
            size_t reached = r->stores_from + r->stores_searched + r->stores_older + r->stores_skipped;
            sb_printf(&b, "bound: stopped at the %.0f-second limit; %zu of %zu session(s) reached",
                      RECALL_SESSIONS_MS / 1000, reached, r->stores_total);
            if (r->stop_stores) {
                char *d = lc_utc_format(r->unreached_before, "%Y-%m-%d %H:%M", "?");
                sb_printf(&b, "; %zu older one(s) (created %s or before) not searched: continue with resume "
                              "\"sessions:%zu\"",
                          r->stores_total - reached, d ? d : "?", reached);
                free(d);
            }
            sb_putc(&b, '\n');
        } else if (r->stop_time) {
            sb_printf(&b, "bound: stopped at the %.0f-second limit\n", RECALL_SESSIONS_MS / 1000);
        }
        if (r->n) sb_puts(&b, "read one with lcm_expand_query({session, entry_id}); past history, not this session\n");
    }
    return sb_detach(&b);
}

/* ---- describe ------------------------------------------------------------------------ */

static int recall_describe_node(void *ud, const store_node *n, char **err)
{
    sbuf *b = ud;
    (void)err;
    sb_printf(b, "[lcm:summary #%lld depth %d span %s..%s] %s, %lld token(s), %lld entries (ordinals %lld..%lld)\n",
              (long long)n->id, n->depth, n->first_entry ? n->first_entry : "?",
              n->last_entry ? n->last_entry : "?", n->leaf ? "leaf" : "condensed", (long long)n->tokens,
              (long long)n->entry_count, (long long)n->first_ordinal, (long long)n->last_ordinal);
    /* Tiers: the thorough text is what describe returns when it exists. */
    cJSON *tiers = n->tiers_json ? cJSON_Parse(n->tiers_json) : NULL;
    const cJSON *rich = cJSON_GetObjectItemCaseSensitive(tiers, "rich");
    sb_printf(b, "tiers: primary %zu chars", strlen(n->text));
    if (cJSON_IsString(rich)) sb_printf(b, ", rich %zu chars", strlen(rich->valuestring));
    sb_putc(b, '\n');
    if (cJSON_IsString(rich))
        sb_printf(b, "text (rich tier):\n%s\n", rich->valuestring);
    else
        sb_printf(b, "text:\n%s\n", n->text);
    cJSON_Delete(tiers);
    return LC_OK;
}

/* One line per file handle among a summary's originals. */
typedef struct recall_files_ctx {
    sbuf *b;
    int n;
} recall_files_ctx;

static int recall_describe_scope_file(void *ud, const store_file_handle *h, char **err)
{
    recall_files_ctx *f = ud;
    (void)err;
    if (f->n++ == 0) sb_puts(f->b, "files:\n");
    sb_printf(f->b, "- %s (%s, %lld chars, entry %s): %s\n", h->path ? h->path : "(no path)", h->kind,
              (long long)h->chars, h->entry_id, h->summary);
    return LC_OK;
}

static int recall_describe_summary(store *s, int64_t id, sbuf *b, char **err)
{
    store_scope_totals t;
    int rc = store_summary_get(s, id, recall_describe_node, b, err);
    if (rc == LC_NOTFOUND)
        return lc_errf(err, LC_NOTFOUND, "lcm_describe: this store holds no summary #%lld", (long long)id);
    if (rc != LC_OK) return rc;
    /* What reading the originals would cost, and the files they cover. */
    rc = store_scope_totals_get(s, id, &t, err);
    if (rc == LC_OK) {
        long long chars = t.chars, toks = t.tokens;
        long long windows = (chars + RECALL_WINDOW_CHARS - 1) / RECALL_WINDOW_CHARS;
        sb_printf(b, "originals: %lld message(s), %lld chars, ~%lld tokens; %lld reader window(s) of %d chars",
                  (long long)t.messages, chars, toks, windows, RECALL_WINDOW_CHARS);
        if (toks > RECALL_DEFAULT_MAX_TOKENS)
            sb_printf(b, "; more than one lcm_expand_query call at max_tokens %d", RECALL_DEFAULT_MAX_TOKENS);
        if (t.removed) sb_printf(b, "; %lld on removed branches", (long long)t.removed);
        sb_putc(b, '\n');
    } else if (rc != LC_NOTFOUND) {
        return rc;
    }
    recall_files_ctx f = {.b = b};
    if ((rc = store_scope_handles(s, id, recall_describe_scope_file, &f, err)) != LC_OK) return rc;
    if (!f.n) sb_puts(b, "files: none\n");
    return LC_OK;
}

static int recall_describe_handle(void *ud, const store_file_handle *h, char **err)
{
    sbuf *b = ud;
    (void)err;
    sb_printf(b, "file handle: %s\nentry: %s\ncontent id: sha256:%s\nkind: %s\nsize: %lld chars\nsummary: %s\npreview (first %d chars):\n%s\n",
              h->path ? h->path : "(no path: large-inline)", h->entry_id, h->content_id, h->kind,
              (long long)h->chars, h->summary, FILES_PREVIEW_CHARS, h->preview);
    sb_puts(b, "the verbatim body: lcm_expand_query({entry_id})\n");
    return LC_OK;
}

static int recall_describe_file(store *s, const char *id, sbuf *b, char **err)
{
    int rc = store_handle_find(s, id, recall_describe_handle, b, err);
    if (rc == LC_NOTFOUND)
        rc = lc_errf(err, LC_NOTFOUND, "lcm_describe: no summary or file handle \"%s\" in this store", id);
    return rc;
}

int recall_describe(store *s, const char *id, int redact, char **out, char **err)
{
    sbuf b = {0};
    int rc;
    *out = NULL;
    if (!id || !*id) return lc_errf(err, LC_INVALID, "lcm_describe: give a summary id or a file");
    const char *p = id[0] == '#' ? id + 1 : id;
    char *end = NULL;
    long long n = strtoll(p, &end, 10);
    if (end && end != p && *end == '\0' && n > 0)
        rc = recall_describe_summary(s, n, &b, err);
    else
        rc = recall_describe_file(s, id, &b, err);
    if (rc) {
        sb_free(&b);
        return rc;
    }
    /* Masked as a whole: a secret can sit in any field (a summary, its tiers, a file
     * handle's rule-built summary or preview, a path), never in one place only. */
    char *text = sb_detach(&b);
    *out = text ? redact_text(text, strlen(text), redact, NULL) : NULL;
    free(text);
    return *out ? LC_OK : lc_errf(err, LC_NOMEM, "recall: out of memory");
}

/* ---- expand: the bounded reader -------------------------------------------------------- */

typedef struct recall_window {
    char *text;
    size_t chars;
} recall_window;

typedef struct recall_reader {
    recall_window *w;
    size_t n, cap;
    sbuf cur;
    size_t cur_chars;
    size_t budget_chars;    /* max_tokens * 4 */
    size_t used_chars;
    size_t unread_chars;    /* cut by the budget or the turn cap */
    int stopped_budget;
    int stopped_turns;
    int redact;
    char *next_entry;       /* where a follow-up call resumes */
    size_t next_offset;
} recall_reader;

static int recall_reader_flush(recall_reader *r)
{
    if (!r->cur.len) return LC_OK;
    recall_window *nw = lc_grow(r->w, &r->cap, r->n + 1, sizeof *nw);
    if (!nw) return LC_NOMEM;
    r->w = nw;
    char *raw = sb_detach(&r->cur);
    if (!raw) return LC_NOMEM;
    char *t = redact_text(raw, strlen(raw), r->redact, NULL);
    free(raw);
    if (!t) return LC_NOMEM;
    r->w[r->n].text = t;
    r->w[r->n].chars = r->cur_chars;
    r->n++;
    r->cur_chars = 0;
    return LC_OK;
}

/* Cut one message into the windows, paging inside it; stops at the budget / turn cap. */
static int recall_reader_add(recall_reader *r, const char *entry_id, const char *role, int removed,
                             const char *text, size_t len, size_t start_char)
{
    size_t total = files_utf8_count(text, len);
    size_t pos = files_utf8_prefix(text, len, start_char), at = start_char;
    if (r->stopped_budget || r->stopped_turns) {
        r->unread_chars += total - (start_char < total ? start_char : total);
        return LC_OK;
    }
    while (at < total || (at == 0 && total == 0)) {
        if (r->used_chars >= r->budget_chars) r->stopped_budget = 1;
        if (r->n >= RECALL_MAX_TURNS) r->stopped_turns = 1;
        if (r->stopped_budget || r->stopped_turns) {
            r->unread_chars += total - at;
            if (!r->next_entry) {
                r->next_entry = lc_strdup(entry_id);
                r->next_offset = at;
            }
            return LC_OK;
        }
        size_t room = RECALL_WINDOW_CHARS - r->cur_chars;
        size_t left_budget = r->budget_chars - r->used_chars;
        if (room > left_budget) room = left_budget;
        size_t take = total - at < room ? total - at : room;
        size_t bytes = files_utf8_prefix(text + pos, len - pos, take);
        sb_printf(&r->cur, "[%sentry %s, %s, chars %zu..%zu of %zu]\n", removed ? "removed " : "", entry_id,
                  role, at, at + take, total);
        sb_append(&r->cur, text + pos, bytes);
        sb_puts(&r->cur, "\n\n");
        r->cur_chars += take;
        r->used_chars += take;
        pos += bytes;
        at += take;
        if (r->cur_chars >= RECALL_WINDOW_CHARS || r->used_chars >= r->budget_chars)
            if (recall_reader_flush(r) != LC_OK) return LC_NOMEM;
        if (total == 0) break;
    }
    return r->cur.oom ? LC_NOMEM : LC_OK;
}

static void recall_reader_free(recall_reader *r)
{
    for (size_t i = 0; i < r->n; i++) free(r->w[i].text);
    free(r->w);
    sb_free(&r->cur);
    free(r->next_entry);
}

/* The assistant's text from a completion answer (an AgentMessage, or plain text). */
static char *recall_answer_text(const char *answer, int *failed)
{
    cJSON *j = cJSON_Parse(answer);
    *failed = 0;
    if (!cJSON_IsObject(j)) {
        cJSON_Delete(j);
        return lc_strdup(answer);
    }
    const cJSON *stop = cJSON_GetObjectItemCaseSensitive(j, "stopReason");
    if (cJSON_IsString(stop) && (!strcmp(stop->valuestring, "error") || !strcmp(stop->valuestring, "length")))
        *failed = 1;
    char *t = msg_derive_text(j, NULL);
    cJSON_Delete(j);
    return t;
}

static const char recall_reader_system[] =
    "You are the bounded reader of a lossless conversation store. You read stored original "
    "messages one window at a time and answer the question from them. Keep identifiers, "
    "numbers, paths and quoted values verbatim and cite the entry ids you read. Each turn you "
    "receive your notes so far and the next window; reply with the updated findings only.";

static char *recall_reader_request(const char *question, const char *notes, const recall_window *w,
                                   size_t k, size_t n)
{
    sbuf u = {0};
    sb_printf(&u, "Question: %s\n\nNotes so far:\n%s\n\nWindow %zu of %zu:\n%s", question,
              notes && *notes ? notes : "(none)", k + 1, n, w->text);
    char *ut = sb_detach(&u);
    if (!ut) return NULL;
    cJSON *req = cJSON_CreateObject();
    cJSON *msgs = cJSON_AddArrayToObject(req, "messages");
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "role", "user");
    cJSON *content = cJSON_AddArrayToObject(m, "content");
    cJSON *blk = cJSON_CreateObject();
    cJSON_AddStringToObject(blk, "type", "text");
    cJSON_AddStringToObject(blk, "text", ut);
    cJSON_AddItemToArray(content, blk);
    cJSON_AddNumberToObject(m, "timestamp", 0);
    cJSON_AddItemToArray(msgs, m);
    cJSON_AddStringToObject(req, "systemPrompt", recall_reader_system);
    cJSON_AddNumberToObject(req, "maxTokens", 2048);
    char *out = cJSON_PrintUnformatted(req);
    cJSON_Delete(req);
    free(ut);
    return out;
}

/* The reader's visitor over the addressed originals. */
typedef struct recall_collect_ctx {
    recall_reader *r;
    size_t *n_msgs;
} recall_collect_ctx;

static int recall_collect_visit(void *ud, const store_search_row *row, char **err)
{
    recall_collect_ctx *c = ud;
    int rc = recall_reader_add(c->r, row->entry_id, row->role, row->removed, row->text, row->text_len, 0);
    if (rc != LC_OK) return lc_errf(err, rc, "recall: out of memory");
    (*c->n_msgs)++;
    return LC_OK;
}

/* Collect the addressed originals into the reader's windows. */
static int recall_expand_collect(store *s, const recall_expand_opts *o, recall_reader *r, size_t *n_msgs,
                                 char **err)
{
    recall_collect_ctx c = {.r = r, .n_msgs = n_msgs};
    int rc = LC_OK;
    *n_msgs = 0;
    if (o->entry_id) {
        store_row row;
        if ((rc = store_get_message(s, o->entry_id, &row, err)) != LC_OK) {
            if (rc == LC_NOTFOUND)
                lc_errf(err, LC_NOTFOUND, "lcm_expand_query: this store holds no entry %s", o->entry_id);
            return rc;
        }
        rc = recall_reader_add(r, row.entry_id, row.role, row.removed, row.text, strlen(row.text), o->char_offset);
        *n_msgs = 1;
        store_row_free(&row);
        return rc ? lc_errf(err, rc, "recall: out of memory") : LC_OK;
    }
    if (o->summary_id > 0) {
        if (!store_summary_exists(s, o->summary_id))
            return lc_errf(err, LC_NOTFOUND, "lcm_expand_query: this store holds no summary #%lld",
                           (long long)o->summary_id);
        store_search_scope scope = {.summary_id = o->summary_id, .include_removed = 1};
        return store_search_scan(s, &scope, recall_collect_visit, &c, NULL, err);
    }
    /* A question alone: the best-ranked messages for its words, read in order. */
    char terms[16][64];
    size_t nt = recall_query_terms(o->question ? o->question : "", terms, 16);
    sbuf q = {0};
    for (size_t i = 0; i < nt; i++) sb_printf(&q, "%s\"%s\"", i ? " OR " : "", terms[i]);
    char *qs = sb_detach(&q);
    if (!nt || !qs) {
        free(qs);
        return lc_errf(err, LC_INVALID, "lcm_expand_query: give summary_id, entry_id or a question with words");
    }
    /* As in lcm_grep: bm25 over more than RECALL_RANK_MAX matches costs a second or more on
     * common words, so past that the newest matching messages are read. A count that fails
     * reads as none. */
    store_search_scope all = {.summary_id = 0, .include_removed = 1};
    int64_t matches = 0;
    char *cerr = NULL;
    if (store_search_count(s, qs, &all, &matches, &cerr) != LC_OK) matches = 0;
    free(cerr);
    rc = store_search_top(s, qs, matches > RECALL_RANK_MAX, 20, recall_collect_visit, &c, err);
    free(qs);
    if (rc == LC_OK && *n_msgs == 0)
        rc = lc_errf(err, LC_NOTFOUND, "lcm_expand_query: no stored message matches the question's words");
    return rc;
}

static void recall_expand_bounds(const recall_reader *r, size_t max_tokens, sbuf *b)
{
    if (r->stopped_budget)
        sb_printf(b, "bound: stopped at max_tokens %zu (~%zu chars); %zu char(s) not read",
                  max_tokens, r->budget_chars, r->unread_chars);
    else if (r->stopped_turns)
        sb_printf(b, "bound: stopped at %d reader turns of %d chars; %zu char(s) not read",
                  RECALL_MAX_TURNS, RECALL_WINDOW_CHARS, r->unread_chars);
    if ((r->stopped_budget || r->stopped_turns) && r->next_entry)
        sb_printf(b, "; continue with lcm_expand_query({entry_id: \"%s\", char_offset: %zu})\n",
                  r->next_entry, r->next_offset);
    else if (r->stopped_budget || r->stopped_turns)
        sb_putc(b, '\n');
}

int recall_expand(store *s, const recall_expand_opts *o, recall_complete_fn complete, void *ud,
                  char **out, char **err)
{
    recall_reader r = {0};
    sbuf b = {0};
    char *notes = NULL, *cerr = NULL;
    size_t n_msgs = 0, turns = 0;
    int rc = LC_OK;
    size_t max_tokens = o->max_tokens ? o->max_tokens : RECALL_DEFAULT_MAX_TOKENS;
    *out = NULL;
    r.budget_chars = max_tokens * 4;
    r.redact = o->redact;
    /* Everything addressed is resolved (or refused) before any model call. */
    if ((rc = recall_expand_collect(s, o, &r, &n_msgs, err)) != LC_OK) goto done;
    if (recall_reader_flush(&r) != LC_OK) {
        rc = lc_errf(err, LC_NOMEM, "recall: out of memory");
        goto done;
    }
    if (o->past_label) sb_printf(&b, "[past session history: %s] (read-only; not this session)\n", o->past_label);
    const char *question = o->question && *o->question ? o->question : "Report what these messages contain.";
    int reader_ok = complete != NULL && r.n > 0;
    for (size_t k = 0; reader_ok && k < r.n; k++) {
        char *req = recall_reader_request(question, notes, &r.w[k], k, r.n);
        char *ans = NULL;
        int failed = 0;
        if (!req) {
            rc = lc_errf(err, LC_NOMEM, "recall: out of memory");
            goto done;
        }
        int crc = complete(ud, req, &ans, &cerr);
        free(req);
        char *t = crc == 0 && ans ? recall_answer_text(ans, &failed) : NULL;
        free(ans);
        if (crc != 0 || !t || failed || !*t) {
            free(t);
            if (turns == 0) {
                reader_ok = 0; /* no usable model: fall through to verbatim windows */
                break;
            }
            sb_printf(&b, "reader stopped after %zu turn(s): the model failed (%s)\n", turns,
                      cerr ? cerr : failed ? "error or length stop" : "empty answer");
            break;
        }
        free(notes);
        notes = t;
        turns++;
    }
    if (reader_ok && turns > 0) {
        size_t read = 0;
        for (size_t k = 0; k < turns; k++) read += r.w[k].chars;
        sb_printf(&b, "lcm_expand_query findings (reader: %zu turn(s), %zu message(s), %zu chars ~%zu tokens of max_tokens %zu):\n",
                  turns, n_msgs, read, (read + 3) / 4, max_tokens);
        char *mn = redact_text(notes, strlen(notes), o->redact, NULL);
        sb_printf(&b, "%s\n", mn ? mn : "");
        free(mn);
    } else {
        sb_printf(&b, "lcm_expand_query: no model available%s%s%s; the addressed originals follow verbatim, bounded by max_tokens %zu and %d windows of %d chars (%zu message(s)):\n",
                  cerr ? " (" : "", cerr ? cerr : "", cerr ? ")" : "", max_tokens, RECALL_MAX_TURNS,
                  RECALL_WINDOW_CHARS, n_msgs);
        for (size_t k = 0; k < r.n; k++) sb_printf(&b, "--- window %zu of %zu ---\n%s", k + 1, r.n, r.w[k].text);
    }
    recall_expand_bounds(&r, max_tokens, &b);
    /* Once more over the whole answer: a host's error text (a provider quoting a rejected
     * key) rides in it too. Masking is idempotent, so the masked windows stay as they are. */
    char *text = sb_detach(&b);
    if (!(*out = text ? redact_text(text, strlen(text), o->redact, NULL) : NULL))
        rc = lc_errf(err, LC_NOMEM, "recall: out of memory");
    free(text);
done:
    sb_free(&b);
    recall_reader_free(&r);
    free(notes);
    free(cerr);
    return rc;
}

int recall_expand_session(const char *agent_home, const char *session_id,
                          const recall_expand_opts *o, recall_complete_fn complete, void *ud,
                          char **out, char **err)
{
    store *ps = NULL;
    char *label = NULL, *cwd = NULL, *created = NULL, *date = NULL;
    int version = -1, rc = LC_OK;
    *out = NULL;
    rc = catalog_open(agent_home, session_id, CATALOG_READ, &ps, &version, err);
    if (rc == LC_INVALID) rc = lc_errf(err, rc, "lcm_expand_query: a session is a plain session id");
    else if (rc == LC_NOTFOUND) rc = lc_errf(err, rc, "lcm_expand_query: no store for session %s", session_id);
    if (rc != LC_OK) goto done;
    if (!STORE_SCHEMA_ANSWERS(version)) {
        rc = lc_errf(err, LC_INVALID,
                     "lcm_expand_query: session %s has an older-generation store (schema %d); /lcm migrate upgrades it",
                     session_id, version);
        goto done;
    }
    cwd = store_meta_get(ps, "cwd");
    created = store_meta_get(ps, "created");
    date = lc_utc_format(created ? atoll(created) : 0, "%Y-%m-%d", "?");
    label = lc_asprintf("session %s, %s, cwd %s", session_id, date ? date : "?", cwd ? cwd : "?");
    recall_expand_opts po = *o;
    po.past_label = label;
    rc = recall_expand(ps, &po, complete, ud, out, err);
done:
    store_close(ps);
    free(label);
    free(cwd);
    free(created);
    free(date);
    return rc;
}

/* For hybrid recall (hybrid.h): the same grep line, from byte `at` of the text. */
char *recall_line(const char *text, size_t len, size_t at, int redact, int *clipped)
{
    return recall_snippet(text, len, at, redact, clipped);
}
