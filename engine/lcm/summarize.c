/*
 * summarize.c -- extractive summarizer, truncation, the summarizer chain and the
 * three-level escalation (see summarize.h).
 */
#include "summarize.h"

#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "redact.h"
#include "ledger.h"
#include "util.h"

size_t summ_estimate_tokens(const char *text) { return text ? (strlen(text) + 3) / 4 : 0; }

/* ------------------------------------------------------------------------------------
 * Extractive summarizer
 * ---------------------------------------------------------------------------------- */

/* A sentence longer than this is shown as its head plus the facts it carries. */
#define SUMM_SENTENCE_MAX 320
#define SUMM_SENTENCE_HEAD 200
#define SUMM_MAX_FACTS_PER_SENTENCE 12

typedef struct summ_sent {
    const char *p;    /* into the source */
    size_t len;
    double score;     /* information per token */
    char *render;     /* the text emitted for it (malloc'd) */
    size_t render_len;
    int chosen;
    int dup;
} summ_sent;

typedef struct summ_fact {
    const char *p;
    size_t len;
    size_t sent;      /* sentence index */
    int kind;         /* 0 = key=value, 1 = path */
} summ_fact;

static int summ_word_char(char c)
{
    return !isspace((unsigned char)c);
}

/* Trim surrounding punctuation that is not part of an identifier. */
static void summ_trim_word(const char **p, size_t *len)
{
    while (*len > 0 && strchr("([{<\"'`", (*p)[0])) {
        (*p)++;
        (*len)--;
    }
    while (*len > 0 && strchr(",.;:!?)]}>\"'`", (*p)[*len - 1])) (*len)--;
}

static int summ_is_kv(const char *w, size_t n)
{
    if (n < 3 || !(isalpha((unsigned char)w[0]) || w[0] == '_')) return 0;
    for (size_t i = 1; i + 1 < n; i++) {
        if (w[i] == '=') return w[i + 1] != '=' && w[i - 1] != '!' && w[i - 1] != '<' &&
                               w[i - 1] != '>';
        if (!(isalnum((unsigned char)w[i]) || w[i] == '_' || w[i] == '.' || w[i] == '-'))
            return 0;
    }
    return 0;
}

static int summ_is_path(const char *w, size_t n)
{
    if (n < 3) return 0;
    const char *slash = memchr(w, '/', n);
    if (!slash) return 0;
    if (n >= 4 && (memcmp(w, "http", 4) == 0)) return 1;
    int alpha = 0;
    for (size_t i = 0; i < n; i++) alpha |= isalpha((unsigned char)w[i]) != 0;
    if (!alpha) return 0; /* 1/2, 10/20 */
    /* a path has a name on at least one side of a slash */
    size_t at = (size_t)(slash - w);
    return (at > 0 && isalnum((unsigned char)w[at - 1])) ||
           (at + 1 < n && (isalnum((unsigned char)w[at + 1]) || w[at + 1] == '.'));
}

static int summ_is_identifier(const char *w, size_t n)
{
    int digit = 0, alpha = 0, under = 0, camel = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)w[i];
        digit |= isdigit(c) != 0;
        alpha |= isalpha(c) != 0;
        under |= c == '_' || (c == ':' && i + 1 < n && w[i + 1] == ':');
        if (i > 0 && islower((unsigned char)w[i - 1]) && isupper(c)) camel = 1;
    }
    if (n >= 2 && w[n - 2] == '(' && w[n - 1] == ')') return 1;
    return (alpha && (digit || under || camel)) || (under && n > 1);
}

static int summ_is_number(const char *w, size_t n)
{
    int digits = 0;
    for (size_t i = 0; i < n; i++) {
        if (isdigit((unsigned char)w[i])) digits++;
        else if (!strchr(".,%-+x", w[i])) return 0;
    }
    return digits > 0;
}

static int summ_is_decision_word(const char *w, size_t n)
{
    static const char *const words[] = {
        "decided", "decision", "decide", "chose", "chosen", "agreed", "must", "will",
        "should", "plan", "fixed", "fix", "error", "failed", "fails", "failure", "bug",
        "because", "result", "conclusion", "todo", "next", "important", "note", "root",
        "cause", "instead", "never", "always", "warning", "answer", "remember",
    };
    char low[16];
    if (n == 0 || n >= sizeof low) return 0;
    for (size_t i = 0; i < n; i++) low[i] = (char)tolower((unsigned char)w[i]);
    low[n] = '\0';
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (strcmp(low, words[i]) == 0) return 1;
    return 0;
}

typedef struct summ_hset {
    uint64_t *slots; /* 0 = empty */
    size_t cap;
} summ_hset;

static int summ_hset_init(summ_hset *h, size_t n)
{
    h->cap = 16;
    while (h->cap < n * 2 + 2) h->cap *= 2;
    h->slots = calloc(h->cap, sizeof *h->slots);
    return h->slots ? LC_OK : LC_NOMEM;
}

/* Returns 1 when the key was already present. */
static int summ_hset_add(summ_hset *h, uint64_t key)
{
    if (key == 0) key = 1;
    size_t i = (size_t)key & (h->cap - 1);
    while (h->slots[i]) {
        if (h->slots[i] == key) return 1;
        i = (i + 1) & (h->cap - 1);
    }
    h->slots[i] = key;
    return 0;
}

/* Split into sentences: lines, and sentence ends ('.', '!', '?' followed by space). */
static int summ_split(const char *src, summ_sent **out, size_t *n_out)
{
    size_t cap = 64, n = 0;
    summ_sent *v = malloc(cap * sizeof *v);
    if (!v) return LC_NOMEM;
    const char *p = src;
    while (*p) {
        while (*p && isspace((unsigned char)*p)) p++;
        if (!*p) break;
        const char *start = p;
        while (*p && *p != '\n') {
            if ((*p == '.' || *p == '!' || *p == '?') && (p[1] == ' ' || p[1] == '\t') &&
                p - start > 1) {
                p++;
                break;
            }
            p++;
        }
        size_t len = (size_t)(p - start);
        while (len > 0 && isspace((unsigned char)start[len - 1])) len--;
        int has_alnum = 0;
        for (size_t i = 0; i < len && !has_alnum; i++) has_alnum = isalnum((unsigned char)start[i]);
        if (!has_alnum) continue;
        if (n == cap) {
            summ_sent *nv = realloc(v, cap * 2 * sizeof *v);
            if (!nv) {
                free(v);
                return LC_NOMEM;
            }
            v = nv;
            cap *= 2;
        }
        memset(&v[n], 0, sizeof v[n]);
        v[n].p = start;
        v[n].len = len;
        n++;
    }
    *out = v;
    *n_out = n;
    return LC_OK;
}

static int summ_push_fact(summ_fact **facts, size_t *n, size_t *cap, summ_fact f)
{
    summ_fact *nf = lc_grow(*facts, cap, *n + 1, sizeof *nf);
    if (!nf) return LC_NOMEM;
    *facts = nf;
    (*facts)[(*n)++] = f;
    return LC_OK;
}

/* Score one sentence, collect its facts and build what it renders as. */
static int summ_analyze(summ_sent *s, size_t idx, size_t n_sent, summ_fact **facts,
                        size_t *n_facts, size_t *cap_facts)
{
    double raw = 0.5;
    int words = 0, decisions = 0;
    size_t first_fact = *n_facts;
    const char *p = s->p, *end = s->p + s->len;
    while (p < end) {
        while (p < end && !summ_word_char(*p)) p++;
        const char *w = p;
        while (p < end && summ_word_char(*p)) p++;
        size_t n = (size_t)(p - w);
        if (n == 0) continue;
        words++;
        summ_trim_word(&w, &n);
        if (n == 0) continue;
        if (summ_is_kv(w, n)) {
            raw += 6.0;
            if (summ_push_fact(facts, n_facts, cap_facts, (summ_fact){w, n, idx, 0}) != LC_OK)
                return LC_NOMEM;
        } else if (summ_is_path(w, n)) {
            raw += 3.0;
            if (summ_push_fact(facts, n_facts, cap_facts, (summ_fact){w, n, idx, 1}) != LC_OK)
                return LC_NOMEM;
        } else if (summ_is_identifier(w, n)) {
            raw += 2.0;
        } else if (summ_is_number(w, n)) {
            raw += 1.5;
        } else if (decisions < 3 && summ_is_decision_word(w, n)) {
            raw += 1.5;
            decisions++;
        }
    }
    if (idx == 0 || idx + 1 == n_sent) raw += 1.0;
    if (s->len >= 10 && memcmp(s->p, "[toolCall ", 10) == 0) raw += 1.0;
    double tokens = (double)(s->len + 3) / 4.0;
    s->score = raw / sqrt(tokens + 4.0);
    (void)words;

    sbuf b = {0};
    if (s->len <= SUMM_SENTENCE_MAX) {
        sb_append(&b, s->p, s->len);
    } else {
        /* Keep the head, then every fact the rest of the sentence holds, verbatim. */
        size_t cut = SUMM_SENTENCE_HEAD;
        while (cut > 0 && !isspace((unsigned char)s->p[cut])) cut--;
        if (cut == 0) cut = SUMM_SENTENCE_HEAD;
        cut = lc_utf8_back(s->p, cut);
        sb_append(&b, s->p, cut);
        sb_puts(&b, " ...");
        int shown = 0;
        for (size_t i = first_fact; i < *n_facts && shown < SUMM_MAX_FACTS_PER_SENTENCE; i++) {
            const summ_fact *f = &(*facts)[i];
            if (f->p + f->len <= s->p + cut) continue;
            sb_puts(&b, shown ? ", " : " ");
            sb_append(&b, f->p, f->len);
            shown++;
        }
    }
    if (b.oom) {
        sb_free(&b);
        return LC_NOMEM;
    }
    s->render_len = b.len;
    s->render = sb_detach(&b);
    return s->render ? LC_OK : LC_NOMEM;
}

static int summ_cmp_score(const void *a, const void *b, void *ctx)
{
    const summ_sent *v = ctx;
    size_t i = *(const size_t *)a, j = *(const size_t *)b;
    if (v[i].score > v[j].score) return -1;
    if (v[i].score < v[j].score) return 1;
    return i < j ? -1 : (i > j);
}

char *summ_extractive(const char *source, size_t target_tokens, summ_style style)
{
    summ_sent *sent = NULL;
    size_t n_sent = 0, n_facts = 0, cap_facts = 0;
    summ_fact *facts = NULL;
    size_t *order = NULL;
    summ_hset seen = {0}, fseen = {0};
    sbuf out = {0};
    char *result = NULL;
    if (!source) return NULL;
    size_t budget = target_tokens * 4; /* bytes: ceil(len/4) <= target iff len <= 4*target */
    const char *bullet = style == SUMM_BULLETS ? "- " : "";
    size_t bullet_len = strlen(bullet);

    if (summ_split(source, &sent, &n_sent) != LC_OK) goto done;
    if (summ_hset_init(&seen, n_sent) != LC_OK) goto done;
    for (size_t i = 0; i < n_sent; i++) {
        if (summ_analyze(&sent[i], i, n_sent, &facts, &n_facts, &cap_facts) != LC_OK) goto done;
        sent[i].dup = summ_hset_add(&seen, lc_fnv1a(sent[i].p, sent[i].len));
    }
    if (!(order = malloc((n_sent ? n_sent : 1) * sizeof *order))) goto done;
    for (size_t i = 0; i < n_sent; i++) order[i] = i;
    qsort_r(order, n_sent, sizeof *order, summ_cmp_score, sent);

    /* Room for the key=value facts is set aside first (up to half the budget): they are
     * what a later question most often needs verbatim. */
    if (summ_hset_init(&fseen, n_facts) != LC_OK) goto done;
    size_t reserve = 0;
    for (size_t i = 0; i < n_facts; i++)
        if (facts[i].kind == 0 && !summ_hset_add(&fseen, lc_fnv1a(facts[i].p, facts[i].len)))
            reserve += facts[i].len + 2;
    if (reserve) reserve += bullet_len + 12;
    if (reserve > budget / 2) reserve = budget / 2;
    memset(fseen.slots, 0, fseen.cap * sizeof *fseen.slots);

    size_t used = 0;
    for (size_t k = 0; k < n_sent; k++) {
        summ_sent *s = &sent[order[k]];
        if (s->dup) continue;
        size_t cost = bullet_len + s->render_len + 1;
        if (used + cost + reserve > budget) continue;
        s->chosen = 1;
        used += cost;
    }
    /* A fact a chosen sentence already shows needs no repeat. */
    for (size_t i = 0; i < n_facts; i++)
        if (sent[facts[i].sent].chosen) summ_hset_add(&fseen, lc_fnv1a(facts[i].p, facts[i].len));
    for (size_t i = 0; i < n_sent; i++) {
        if (!sent[i].chosen) continue;
        sb_puts(&out, bullet);
        sb_append(&out, sent[i].render, sent[i].render_len);
        sb_putc(&out, '\n');
    }

    /* Facts whose sentence did not make it: key=value pairs first, then paths. */
    const char *label = "Key facts:";
    int any = 0;
    for (int kind = 0; kind <= 1; kind++) {
        for (size_t i = 0; i < n_facts; i++) {
            const summ_fact *f = &facts[i];
            if (f->kind != kind || sent[f->sent].chosen) continue;
            if (summ_hset_add(&fseen, lc_fnv1a(f->p, f->len))) continue;
            size_t cost = (any ? 1 : bullet_len + strlen(label)) + 1 + f->len + 1;
            if (out.len + cost > budget) continue;
            if (!any) {
                sb_puts(&out, bullet);
                sb_puts(&out, label);
                any = 1;
            } else {
                /* the previous fact line ended with '\n'; continue the same line */
                out.len--;
                sb_putc(&out, ',');
            }
            sb_putc(&out, ' ');
            sb_append(&out, f->p, f->len);
            sb_putc(&out, '\n');
        }
    }
    if (out.len > 0 && out.p[out.len - 1] == '\n') out.p[--out.len] = '\0';
    result = sb_detach(&out);
done:
    for (size_t i = 0; i < n_sent; i++) free(sent[i].render);
    free(sent);
    free(facts);
    free(order);
    free(seen.slots);
    free(fseen.slots);
    sb_free(&out);
    return result;
}

char *summ_truncate(const char *source, size_t target_tokens)
{
    static const char tag[] = SUMM_TRUNCATED_TAG " ";
    static const char sep[] = " [...] ";
    size_t budget = target_tokens * 4;
    size_t tag_len = sizeof tag - 1, sep_len = sizeof sep - 1;
    size_t n = strlen(source);
    if (budget <= tag_len + sep_len + 8) return lc_strdup(SUMM_TRUNCATED_TAG);
    size_t avail = budget - tag_len;
    if (n <= avail) return lc_asprintf("%s%s", tag, source);
    avail -= sep_len;
    size_t head = avail * 2 / 3, tail_start = n - (avail - head);
    head = lc_utf8_back(source, head);
    while (tail_start < n && ((unsigned char)source[tail_start] & 0xC0) == 0x80) tail_start++;
    sbuf b = {0};
    sb_append(&b, tag, tag_len);
    sb_append(&b, source, head);
    sb_append(&b, sep, sep_len);
    sb_append(&b, source + tail_start, n - tail_start);
    return sb_detach(&b);
}

/* ------------------------------------------------------------------------------------
 * The chain
 * ---------------------------------------------------------------------------------- */

enum { SUMM_KIND_AUTO = 1, SUMM_KIND_MODEL, SUMM_KIND_EXTRACTIVE };

typedef struct summ_entry {
    char *name;      /* as configured */
    char *provider;  /* "auto" for the session model, the prefix for provider/id */
    const char *model;  /* into name, after the first '/' */
    int kind;
    int gone;        /* missing or unknown: reported once, skipped for the session */
} summ_entry;

typedef struct summ_provider {
    char *name;
    int consecutive_failures;
    int open_passes_left; /* > 0: the breaker is open */
} summ_provider;

struct summ_ctx {
    summ_config cfg;
    summ_entry *entries;
    size_t n_entries;
    size_t *order;        /* this pass's order (indices into entries) */
    summ_provider *providers;
    size_t n_providers;
    summ_pass_stats pass;
};

void summ_completion_free(summ_completion *c)
{
    if (!c) return;
    free(c->text);
    free(c->stop_reason);
    free(c->model);
    memset(c, 0, sizeof *c);
}

void summ_result_free(summ_result *r)
{
    if (!r) return;
    free(r->text);
    free(r->rich_text);
    memset(r, 0, sizeof *r);
}

static void summ_emit(summ_ctx *s, const char *kind, cJSON *data)
{
    if (s->cfg.event_fn && data) s->cfg.event_fn(s->cfg.ud, kind, data);
    cJSON_Delete(data);
}

static void summ_report_model(summ_ctx *s, const char *entry, const char *reason,
                              const char *detail)
{
    cJSON *d = cJSON_CreateObject();
    cJSON_AddStringToObject(d, "entry", entry);
    cJSON_AddStringToObject(d, "reason", reason);
    if (detail) cJSON_AddStringToObject(d, "detail", detail);
    summ_emit(s, "summarizer-model", d);
}

static summ_provider *summ_provider_of(summ_ctx *s, const char *name)
{
    for (size_t i = 0; i < s->n_providers; i++)
        if (strcmp(s->providers[i].name, name) == 0) return &s->providers[i];
    return NULL;
}

static int summ_add_entry(summ_ctx *s, const char *name)
{
    for (size_t i = 0; i < s->n_entries; i++)
        if (strcmp(s->entries[i].name, name) == 0) return LC_OK;
    summ_entry e = {0};
    const char *slash = strchr(name, '/');
    if (strcmp(name, SUMM_AUTO) == 0) {
        e.kind = SUMM_KIND_AUTO;
    } else if (strcmp(name, SUMM_EXTRACTIVE) == 0) {
        e.kind = SUMM_KIND_EXTRACTIVE;
    } else if (slash && slash != name && slash[1] != '\0') {
        e.kind = SUMM_KIND_MODEL;
    } else {
        summ_report_model(s, name, "unknown", "not auto, extractive or provider/id");
        return LC_OK;
    }
    if (!(e.name = lc_strdup(name))) return LC_NOMEM;
    e.provider = e.kind == SUMM_KIND_MODEL ? lc_strndup(name, (size_t)(slash - name))
                                           : lc_strdup(name);
    if (!e.provider) {
        free(e.name);
        return LC_NOMEM;
    }
    if (e.kind == SUMM_KIND_MODEL) e.model = e.name + (slash - name) + 1;
    summ_entry *ne = realloc(s->entries, (s->n_entries + 1) * sizeof *ne);
    if (!ne) {
        free(e.name);
        free(e.provider);
        return LC_NOMEM;
    }
    s->entries = ne;
    s->entries[s->n_entries++] = e;
    if (e.kind != SUMM_KIND_EXTRACTIVE && !summ_provider_of(s, e.provider)) {
        summ_provider *np = realloc(s->providers, (s->n_providers + 1) * sizeof *np);
        if (!np) return LC_NOMEM;
        s->providers = np;
        memset(&np[s->n_providers], 0, sizeof np[0]);
        if (!(np[s->n_providers].name = lc_strdup(e.provider))) return LC_NOMEM;
        s->n_providers++;
    }
    return LC_OK;
}

void summ_free(summ_ctx *s)
{
    if (!s) return;
    for (size_t i = 0; i < s->n_entries; i++) {
        free(s->entries[i].name);
        free(s->entries[i].provider);
    }
    free(s->entries);
    for (size_t i = 0; i < s->n_providers; i++) free(s->providers[i].name);
    LC_FREE(s->providers, s->order, s);
}

int summ_create(const summ_config *cfg, summ_ctx **out, char **err)
{
    int rc = LC_OK;
    summ_ctx *s = calloc(1, sizeof *s);
    if (!s) return lc_errf(err, LC_NOMEM, "out of memory");
    s->cfg = *cfg;
    s->cfg.chain = NULL;
    s->cfg.n_chain = 0;
    if (s->cfg.breaker_threshold <= 0) s->cfg.breaker_threshold = 3;
    if (s->cfg.breaker_cooldown_passes <= 0) s->cfg.breaker_cooldown_passes = 5;
    for (size_t i = 0; i < cfg->n_chain && rc == LC_OK; i++)
        if (cfg->chain[i] && cfg->chain[i][0]) rc = summ_add_entry(s, cfg->chain[i]);
    /* The session model is the last model resort; the extractive summarizer, which
     * cannot fail, is the floor. */
    if (rc == LC_OK) rc = summ_add_entry(s, SUMM_AUTO);
    if (rc == LC_OK) rc = summ_add_entry(s, SUMM_EXTRACTIVE);
    if (rc == LC_OK && !(s->order = malloc(s->n_entries * sizeof *s->order))) rc = LC_NOMEM;
    if (rc != LC_OK) {
        summ_free(s);
        return lc_errf(err, rc, "out of memory building the summarizer chain");
    }
    summ_pass_begin(s);
    *out = s;
    return LC_OK;
}

char *summ_chain_describe(const summ_ctx *s)
{
    sbuf b = {0};
    for (size_t i = 0; i < s->n_entries; i++) {
        if (i) sb_puts(&b, " -> ");
        sb_puts(&b, s->entries[i].name);
        if (s->entries[i].gone) sb_puts(&b, " (missing)");
        const summ_provider *p = NULL;
        for (size_t k = 0; k < s->n_providers; k++)
            if (strcmp(s->providers[k].name, s->entries[i].provider) == 0) p = &s->providers[k];
        if (p && p->open_passes_left > 0) sb_puts(&b, " (breaker open)");
    }
    return sb_detach(&b);
}

void summ_pass_begin(summ_ctx *s)
{
    for (size_t i = 0; i < s->n_entries; i++) s->order[i] = i;
    memset(&s->pass, 0, sizeof s->pass);
    for (size_t i = 0; i < s->n_providers; i++) {
        summ_provider *p = &s->providers[i];
        if (p->open_passes_left > 0 && --p->open_passes_left == 0)
            /* half-open: one more failure reopens it */
            p->consecutive_failures = s->cfg.breaker_threshold - 1;
    }
}

void summ_pass_stats_get(const summ_ctx *s, summ_pass_stats *out) { *out = s->pass; }

static void summ_demote(summ_ctx *s, size_t entry)
{
    size_t at = 0;
    while (at < s->n_entries && s->order[at] != entry) at++;
    if (at >= s->n_entries) return;
    memmove(&s->order[at], &s->order[at + 1], (s->n_entries - at - 1) * sizeof *s->order);
    s->order[s->n_entries - 1] = entry;
}

static void summ_cap(summ_ctx *s, const char *cap, long requested, long limit, const char *stage)
{
    if (s->pass.capped) return;
    s->pass.capped = 1;
    cJSON *d = cJSON_CreateObject();
    cJSON_AddStringToObject(d, "source", "budget");
    cJSON_AddStringToObject(d, "cap", cap);
    cJSON_AddNumberToObject(d, "requested", (double)requested);
    cJSON_AddNumberToObject(d, "limit", (double)limit);
    cJSON_AddStringToObject(d, "stage", stage);
    summ_emit(s, "summarizer-capped", d);
}

static int summ_blank(const char *t)
{
    if (!t) return 1;
    for (; *t; t++)
        if (!isspace((unsigned char)*t)) return 0;
    return 1;
}

static const char *summ_system_prompt(summ_style style)
{
    if (style == SUMM_BULLETS)
        return "You compress part of a coding-agent conversation for a lossless context "
               "store. Answer only with terse bullet points ('- '), one fact per bullet. Keep "
               "every identifier, number, file path, key=value pair, command, error and "
               "decision verbatim. No preamble.";
    return "You summarize part of a coding-agent conversation for a lossless context store. "
           "Preserve verbatim every identifier, number, file path, key=value pair, command, "
           "error message and decision. Say what was done, what was decided and what is "
           "still open. No preamble.";
}

/* Replace *text by its masked copy (unless send_unmasked). A provider's error text can
 * quote the request or the key it rejected, and it travels on into events, metrics and
 * notices. On OOM the text is overwritten in place rather than passed on unmasked; it
 * stays non-NULL, because a NULL reason would read as success. */
static void summ_mask(const summ_ctx *s, char **text)
{
    if (!*text || s->cfg.send_unmasked) return;
    char *m = redact_text(*text, strlen(*text), 1, NULL);
    if (m) {
        free(*text);
        *text = m;
        return;
    }
    static const char withheld[] = "(withheld)";
    size_t n = strlen(*text);
    if (n > sizeof withheld - 1) n = sizeof withheld - 1;
    memcpy(*text, withheld, n);
    (*text)[n] = '\0';
}

static const char *summ_ledger_kind(const summ_ctx *s)
{
    return s->cfg.ledger_kind ? s->cfg.ledger_kind : LEDGER_SUMMARY;
}

/* Whether a ledger limit keeps this pass off the models. Asked once a pass until it says
 * yes (then the pass stays extractive); the first refusal of a window is an event the
 * user is told of, the ledger holding its row. */
static int summ_limited(summ_ctx *s, const char *stage)
{
    if (!s->cfg.ledger) return 0;
    if (s->pass.limited) return 1;
    char *why = NULL;
    int first = 0;
    if (ledger_allow(s->cfg.ledger, summ_ledger_kind(s), &why, &first) == LC_OK) {
        free(why);
        return 0;
    }
    s->pass.limited = 1;
    cJSON *d = cJSON_CreateObject();
    cJSON_AddStringToObject(d, "spendKind", summ_ledger_kind(s));
    cJSON_AddStringToObject(d, "reason", why ? why : "a limit is reached");
    cJSON_AddStringToObject(d, "stage", stage);
    cJSON_AddBoolToObject(d, "first", first);
    summ_emit(s, "summarizer-limited", d);
    free(why);
    return 1;
}

/* One model attempt. Returns LC_OK with *text on success; LC_NOTFOUND for a missing
 * entry; LC_ERR with *why (malloc'd, masked) on a failure. */
static int summ_call(summ_ctx *s, summ_entry *e, const char *system, const char *prompt,
                     long max_tokens, const char *stage, char **text, char **why)
{
    summ_completion c = {0};
    char *err = NULL;
    int rc;
    if (e->kind == SUMM_KIND_AUTO)
        rc = s->cfg.auto_fn ? s->cfg.auto_fn(s->cfg.ud, system, prompt, max_tokens, &c, &err)
                            : LC_NOTFOUND;
    else
        rc = s->cfg.model_fn ? s->cfg.model_fn(s->cfg.ud, e->provider, e->model, system, prompt,
                                               max_tokens, &c, &err)
                             : LC_NOTFOUND;
    if (rc == LC_CANCELLED) {
        /* Given up by the caller, not failed by the model: no failure, no fallback. */
        *why = err;
        summ_completion_free(&c);
        return LC_CANCELLED;
    }
    if (rc == LC_NOTFOUND) {
        *why = err ? err : lc_strdup(e->kind == SUMM_KIND_AUTO ? "no session model"
                                                               : "no provider for this entry");
        summ_mask(s, why);
        summ_completion_free(&c);
        return LC_NOTFOUND;
    }
    s->pass.calls++;
    long billed = c.input_tokens + c.output_tokens;
    if (billed <= 0 && rc == LC_OK)
        billed = (long)(summ_estimate_tokens(system) + summ_estimate_tokens(prompt) +
                        summ_estimate_tokens(c.text));
    s->pass.billed_tokens += billed;
    const char *stop = c.stop_reason ? c.stop_reason : "stop";
    if (rc != LC_OK) {
        *why = lc_asprintf("error: %s", err ? err : "call failed");
    } else if (strcmp(stop, "error") == 0) {
        *why = lc_strdup("the provider marked the response as an error");
    } else if (strcmp(stop, "length") == 0) {
        *why = lc_strdup("stopped at the token cap (length)");
    } else if (summ_blank(c.text)) {
        *why = lc_strdup("empty answer");
    }
    summ_mask(s, why);
    cJSON *d = cJSON_CreateObject();
    cJSON_AddStringToObject(d, "model", e->name);
    cJSON_AddStringToObject(d, "stage", stage);
    cJSON_AddNumberToObject(d, "inputTokens", (double)c.input_tokens);
    cJSON_AddNumberToObject(d, "outputTokens", (double)c.output_tokens);
    cJSON_AddBoolToObject(d, "ok", *why == NULL);
    cJSON_AddStringToObject(d, "stopReason", rc == LC_OK ? stop : "throw");
    if (c.cached_tokens) cJSON_AddNumberToObject(d, "cachedTokens", (double)c.cached_tokens);
    summ_emit(s, "summarizer-call", d);
    if (s->cfg.ledger) {
        ledger_usage u = {c.input_tokens, c.output_tokens, c.cached_tokens, c.has_cost, c.cost};
        /* `auto` is named by the model that answered, which the price table knows. */
        const char *model = e->kind == SUMM_KIND_AUTO && c.model ? c.model : e->name;
        char *lerr = NULL;
        ledger_record(s->cfg.ledger, summ_ledger_kind(s), e->provider, model, &u, *why == NULL, *why, &lerr);
        free(lerr);
    }
    free(err);
    if (*why) {
        summ_completion_free(&c);
        return LC_ERR;
    }
    *text = c.text;
    c.text = NULL;
    summ_completion_free(&c);
    return LC_OK;
}

static void summ_note_failure(summ_ctx *s, summ_entry *e)
{
    s->pass.failures++;
    summ_provider *p = summ_provider_of(s, e->provider);
    if (!p || ++p->consecutive_failures < s->cfg.breaker_threshold) return;
    /* +1: the pass it opened in counts down at the next summ_pass_begin. */
    p->open_passes_left = s->cfg.breaker_cooldown_passes + 1;
    p->consecutive_failures = 0;
    cJSON *d = cJSON_CreateObject();
    cJSON_AddStringToObject(d, "provider", p->name);
    cJSON_AddNumberToObject(d, "failures", s->cfg.breaker_threshold);
    cJSON_AddNumberToObject(d, "cooldownPasses", s->cfg.breaker_cooldown_passes);
    summ_emit(s, "summarizer-breaker", d);
}

int summ_run_chain(summ_ctx *s, const char *source, size_t target_tokens, summ_style style,
                   const char *stage, char **out_text, const char **out_entry, char **err)
{
    int rc = LC_ERR;
    char *prompt = NULL, *first_why = NULL, *masked = NULL;
    const char *first_entry = NULL;
    size_t *snapshot = NULL;
    *out_text = NULL;
    if (s->pass.capped) return lc_errf(err, LC_BUSY, "summarizer budget reached for this pass");
    const char *system = summ_system_prompt(style);
    long max_tokens = (long)target_tokens * 3 < 256 ? 256 : (long)target_tokens * 3;
    long estimate = 0;
    snapshot = malloc(s->n_entries * sizeof *snapshot);
    if (!snapshot) {
        rc = lc_errf(err, LC_NOMEM, "out of memory");
        goto done;
    }
    /* Demotion reorders s->order while we walk it; walk this call's starting order. */
    memcpy(snapshot, s->order, s->n_entries * sizeof *snapshot);
    for (size_t k = 0; k < s->n_entries; k++) {
        size_t idx = snapshot[k];
        summ_entry *e = &s->entries[idx];
        if (e->gone) continue;
        char *text = NULL, *why = NULL;
        if (e->kind == SUMM_KIND_EXTRACTIVE) {
            text = summ_extractive(source, target_tokens, style);
            if (!text) {
                rc = lc_errf(err, LC_NOMEM, "out of memory");
                goto done;
            }
            if (summ_blank(text)) {
                free(text);
                text = NULL;
                why = lc_strdup("empty answer");
            }
        } else {
            summ_provider *p = summ_provider_of(s, e->provider);
            if (p && p->open_passes_left > 0) continue;
            if (summ_limited(s, stage)) continue;
            /* The request is the seam where stored text leaves for a model: every level,
             * every stage (leaf, condensation over stored summaries, heal) builds it here,
             * once, at the first model entry (an extractive entry reads the source as it
             * is: masking it for nobody was most of an extractive compaction's work). */
            if (!prompt) {
                masked = redact_text(source, strlen(source), !s->cfg.send_unmasked, NULL);
                if (masked)
                    prompt = lc_asprintf("%s the conversation excerpt below in at most about %zu tokens.\n\n"
                                         "<excerpt>\n%s\n</excerpt>",
                                         style == SUMM_BULLETS ? "Rewrite as bullet points" : "Summarize",
                                         target_tokens, masked);
                if (!prompt) {
                    rc = lc_errf(err, LC_NOMEM, "out of memory");
                    goto done;
                }
                estimate = (long)(summ_estimate_tokens(system) + summ_estimate_tokens(prompt)) + max_tokens;
            }
            if (s->cfg.tokens_per_call > 0 && estimate > s->cfg.tokens_per_call) {
                summ_cap(s, "perCall", estimate, s->cfg.tokens_per_call, stage);
                rc = lc_errf(err, LC_BUSY, "summarizer request of ~%ld tokens refused: "
                             "summarizerTokensPerCall is %ld", estimate, s->cfg.tokens_per_call);
                goto done;
            }
            if (s->cfg.tokens_per_pass > 0 &&
                s->pass.billed_tokens + estimate > s->cfg.tokens_per_pass) {
                summ_cap(s, "perPass", s->pass.billed_tokens + estimate,
                         s->cfg.tokens_per_pass, stage);
                rc = lc_errf(err, LC_BUSY, "summarizer request refused: the pass has spent %ld "
                             "of summarizerTokensPerPass %ld", s->pass.billed_tokens,
                             s->cfg.tokens_per_pass);
                goto done;
            }
            int crc = summ_call(s, e, system, prompt, max_tokens, stage, &text, &why);
            if (crc == LC_CANCELLED) {
                rc = lc_errf(err, LC_CANCELLED, "%s", why ? why : "the summarizer call was given up");
                free(why);
                goto done;
            }
            if (crc == LC_NOTFOUND) {
                e->gone = 1;
                summ_report_model(s, e->name, "missing", why);
            } else if (crc != LC_OK) {
                summ_note_failure(s, e);
                summ_demote(s, idx);
            } else if (p) {
                p->consecutive_failures = 0;
            }
        }
        if (!first_entry) {
            first_entry = e->name;
            if (why) first_why = lc_strdup(why);
        }
        if (text) {
            if (first_entry != e->name) {
                s->pass.fallbacks++;
                cJSON *d = cJSON_CreateObject();
                cJSON_AddStringToObject(d, "from", first_entry);
                cJSON_AddStringToObject(d, "to", e->name);
                cJSON_AddStringToObject(d, "stage", stage);
                cJSON_AddStringToObject(d, "reason", first_why ? first_why : "failed");
                summ_emit(s, "summarizer-fallback", d);
            }
            free(why);
            *out_text = text;
            if (out_entry) *out_entry = e->name;
            rc = LC_OK;
            goto done;
        }
        free(why);
    }
    rc = lc_errf(err, LC_ERR, "no summarizer in the chain produced text%s%s",
                 first_why ? ": " : "", first_why ? first_why : "");
done:
    free(prompt);
    free(masked);
    free(first_why);
    free(snapshot);
    return rc;
}

static int summ_level3(const char *source, size_t target_tokens, size_t source_tokens,
                       summ_result *out, char **err)
{
    /* Strict reduction even when the target is not below the source. */
    size_t t = target_tokens < source_tokens ? target_tokens
                                             : (source_tokens > 1 ? source_tokens - 1 : 1);
    out->text = summ_truncate(source, t);
    if (!out->text) return lc_errf(err, LC_NOMEM, "out of memory");
    out->level = 3;
    out->truncated = 1;
    out->tokens = summ_estimate_tokens(out->text);
    out->entry = "truncate";
    return LC_OK;
}

/* A chain's answer becomes the result at `level` only when it ran and came out shorter
 * than `limit` tokens: a summary no smaller than its source saves nothing. */
static int summ_accept(summ_result *out, int rc, char *text, const char *entry, int level, size_t limit)
{
    size_t tokens;
    if (rc != LC_OK || (tokens = summ_estimate_tokens(text)) >= limit) return 0;
    out->text = text;
    out->level = level;
    out->entry = entry;
    out->tokens = tokens;
    return 1;
}

int summ_summarize(summ_ctx *s, const char *source, size_t target_tokens, summ_result *out,
                   char **err)
{
    memset(out, 0, sizeof *out);
    size_t src_tokens = summ_estimate_tokens(source);
    if (src_tokens == 0) return lc_errf(err, LC_INVALID, "nothing to summarize");
    if (target_tokens == 0) target_tokens = 1;
    char *text = NULL;
    const char *entry = NULL;
    int rc;

    if (s->cfg.truncate_only) return summ_level3(source, target_tokens, src_tokens, out, err);
    rc = summ_run_chain(s, source, target_tokens, SUMM_DETAILS, "preserve-details", &text,
                        &entry, err);
    if (rc == LC_NOMEM || rc == LC_CANCELLED) return rc;
    if (summ_accept(out, rc, text, entry, 1, src_tokens)) {
        if (out->tokens > 2 * target_tokens) {
            char *smaller = NULL, *rich = out->text;
            const char *e2 = NULL;
            int rc2 = summ_run_chain(s, text, target_tokens, SUMM_BULLETS, "make-smaller",
                                     &smaller, &e2, err);
            if (rc2 == LC_NOMEM || rc2 == LC_CANCELLED) return rc2;
            if (summ_accept(out, rc2, smaller, e2, 2, out->tokens)) out->rich_text = rich;
            else free(smaller);
        }
        if (err) {
            free(*err);
            *err = NULL;
        }
        return LC_OK;
    }
    free(text);
    text = NULL;
    if (rc != LC_BUSY) {
        rc = summ_run_chain(s, source, target_tokens, SUMM_BULLETS, "bullets", &text, &entry,
                            err);
        if (rc == LC_NOMEM || rc == LC_CANCELLED) return rc;
        if (summ_accept(out, rc, text, entry, 2, src_tokens)) return LC_OK;
        free(text);
    }
    if (err) {
        free(*err);
        *err = NULL;
    }
    return summ_level3(source, target_tokens, src_tokens, out, err);
}
