/*
 * recall_query.c -- lcm_grep's query language and its translation to an FTS5 expression
 * (recall_query.h). The output holds only quoted phrases and operators this file writes,
 * which is why no text given can make it a syntax error.
 */
#include "recall_query.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "store.h"
#include "util.h"

/* Words that say how a question is asked, not what it is about: they match nearly every
 * message, so they are left out of the match and weigh nothing. */
static const char *const recall_stopwords[] = {
    "a", "about", "above", "after", "again", "against", "all", "am", "an", "and", "any", "are", "as", "at",
    "be", "because", "been", "before", "being", "below", "between", "both", "but", "by", "can", "could",
    "couldn", "did", "didn", "do", "does", "doesn", "doing", "don", "down", "during", "each", "few", "for",
    "from", "further", "get", "got", "had", "has", "have", "having", "he", "her", "here", "hers", "him",
    "his", "how", "i", "if", "in", "into", "is", "isn", "it", "its", "itself", "just", "let", "lets", "me",
    "might", "more", "most", "much", "must", "my", "myself", "no", "nor", "not", "now", "of", "off", "on",
    "once", "only", "or", "other", "our", "ours", "out", "over", "own", "same", "she", "should", "so",
    "some", "still", "such", "than", "that", "the", "their", "them", "then", "there", "these", "they",
    "this", "those", "through", "to", "too", "under", "until", "up", "us", "very", "was", "wasn", "we",
    "were", "what", "when", "where", "which", "while", "who", "whom", "why", "will", "with", "won",
    "would", "yet", "you", "your", "yours", "whats", "s", "t", "d", "ll", "m", "re", "ve"};

int recall_query_stopword(const char *w, size_t n)
{
    char low[16];
    if (n == 0) return 1;
    if (n >= sizeof low) return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)w[i];
        if (c >= 0x80) return 0;
        low[i] = (char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
    }
    low[n] = '\0';
    if (n == 1 && !(low[0] >= '0' && low[0] <= '9')) return 1; /* a lone letter */
    for (size_t i = 0; i < sizeof recall_stopwords / sizeof recall_stopwords[0]; i++)
        if (!strcmp(low, recall_stopwords[i])) return 1;
    return 0;
}

/* A byte of a word: ASCII letters and digits, '_' and every byte of a non-ASCII character
 * (the index's tokenizer decides what inside a phrase is a separator). */
static int recall_query_wordc(unsigned char c)
{
    return c >= 0x80 || c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* A byte that joins two words into one name: opk-gui, config.toml, src/a.c, a:b. */
static int recall_query_joiner(char c)
{
    return c == '-' || c == '.' || c == '/' || c == ':' || c == '@' || c == '+' || c == '#';
}

typedef struct recall_qitem {
    char *text;      /* the phrase's text (malloc'd), as written */
    int prefix, neg, stop, and_prev, quoted, joined;
    int kept;        /* written into the expression */
} recall_qitem;

typedef struct recall_qparse {
    recall_qitem *v;
    size_t n, cap;
    size_t dropped;
    int pending_and;
    int ops;         /* an AND or OR was written: the query's own structure, no pairs added */
} recall_qparse;

static int recall_qpush(recall_qparse *p, const char *s, size_t n, int prefix, int neg, int quoted, int joined)
{
    if (n > RECALL_QUERY_TERM_BYTES) {
        n = RECALL_QUERY_TERM_BYTES;
        while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80) n--; /* whole characters */
    }
    if (p->n >= RECALL_QUERY_TERMS) {
        p->dropped++;
        p->pending_and = 0;
        return LC_OK;
    }
    recall_qitem *v = lc_grow(p->v, &p->cap, p->n + 1, sizeof *v);
    if (!v) return LC_NOMEM;
    p->v = v;
    recall_qitem *it = &p->v[p->n];
    memset(it, 0, sizeof *it);
    if (!(it->text = malloc(n + 1))) return LC_NOMEM;
    memcpy(it->text, s, n);
    it->text[n] = '\0';
    it->prefix = prefix;
    it->neg = neg;
    it->quoted = quoted;
    it->joined = joined;
    it->stop = !quoted && !joined && !prefix && recall_query_stopword(s, n);
    it->and_prev = p->pending_and && !neg && p->n > 0 && !p->v[p->n - 1].neg;
    p->pending_and = 0;
    p->n++;
    return LC_OK;
}

/* The items of `q`: words, names, quoted phrases, each maybe excluded or a prefix. */
static int recall_qscan(const char *q, recall_qparse *p)
{
    const unsigned char *s = (const unsigned char *)q;
    size_t i = 0;
    while (s[i]) {
        int neg = 0;
        size_t at = i;
        /* '-' excludes only at an item's start: "a -b", not "opk-gui". */
        if (s[i] == '-' && (i == 0 || s[i - 1] == ' ' || s[i - 1] == '\t' || s[i - 1] == '\n' || s[i - 1] == '(') &&
            (recall_query_wordc(s[i + 1]) || s[i + 1] == '"')) {
            neg = 1;
            i++;
        }
        if (s[i] == '"') {
            size_t st = ++i;
            while (s[i] && s[i] != '"') i++;
            size_t len = i - st;
            if (s[i] == '"') i++;
            int prefix = s[i] == '*';
            if (prefix) i++;
            /* A phrase with no word matches nothing: it is no item. */
            int any = 0;
            for (size_t k = st; k < st + len && !any; k++) any = recall_query_wordc(s[k]);
            if (any && recall_qpush(p, (const char *)s + st, len, prefix, neg, 1, 0) != LC_OK) return LC_NOMEM;
            continue;
        }
        if (!recall_query_wordc(s[i])) {
            i = at + 1;
            continue;
        }
        size_t st = i;
        int joined = 0;
        for (;;) {
            while (recall_query_wordc(s[i])) i++;
            if (recall_query_joiner((char)s[i]) && recall_query_wordc(s[i + 1])) {
                joined = 1;
                i++;
                continue;
            }
            break;
        }
        size_t len = i - st;
        /* An apostrophe ends the word: what's -> what, couldn't -> couldn. */
        if (s[i] == '\'' && recall_query_wordc(s[i + 1])) {
            i++;
            while (recall_query_wordc(s[i])) i++;
        }
        int prefix = s[i] == '*';
        if (prefix) i++;
        if (!neg && !prefix && !joined && ((len == 2 && !memcmp(s + st, "OR", 2)) ||
                                           (len == 3 && !memcmp(s + st, "AND", 3)))) {
            p->pending_and = len == 3;
            p->ops = 1;
            continue;
        }
        if (recall_qpush(p, (const char *)s + st, len, prefix, neg, 0, joined) != LC_OK) return LC_NOMEM;
    }
    return LC_OK;
}

/* A plain word's stem, as the length of its prefix (0: none): one English inflection or
 * derivation suffix off (configured -> configur, failing -> fail, grays -> gray), the stem
 * at least 4 letters. ASCII words only; names, phrases and prefixes are taken as written. */
static size_t recall_qstem(const recall_qitem *it)
{
    static const char *const suffixes[] = {"ingly", "edly", "ings", "ing", "ied", "ies", "ed", "es",
                                           "er", "ly", "s", "e"};
    size_t n = strlen(it->text);
    if (it->stop || it->quoted || it->joined || it->prefix || it->neg || n < 5) return 0;
    for (size_t i = 0; i < n; i++)
        if (!((it->text[i] >= 'a' && it->text[i] <= 'z') || (it->text[i] >= 'A' && it->text[i] <= 'Z'))) return 0;
    for (size_t k = 0; k < sizeof suffixes / sizeof *suffixes; k++) {
        size_t sl = strlen(suffixes[k]);
        if (n >= sl + 4 && !strcasecmp(it->text + n - sl, suffixes[k])) return n - sl;
    }
    return 0;
}

/* Whether a plain word also gets its form-as-written phrase (STORE_EXACT_MARK): an ASCII
 * word of three characters or more ending in a letter, the stemmer's reach (it changes
 * only a suffix of letters). */
static int recall_qexact(const recall_qitem *it)
{
    size_t n = strlen(it->text);
    if (it->stop || it->quoted || it->joined || it->prefix || it->neg || n < 3 || n > STORE_EXACT_MAX) return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)it->text[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))) return 0;
    }
    unsigned char last = (unsigned char)it->text[n - 1];
    return (last >= 'a' && last <= 'z') || (last >= 'A' && last <= 'Z');
}

static void recall_qphrase(sbuf *b, const recall_qitem *it)
{
    sb_putc(b, '"');
    for (const char *c = it->text; *c; c++) {
        if (*c == '"') sb_putc(b, '"');
        sb_putc(b, *c);
    }
    sb_putc(b, '"');
    if (it->prefix) sb_putc(b, '*');
}

static int recall_qsame(const recall_qitem *a, const recall_qitem *b)
{
    return a->prefix == b->prefix && a->neg == b->neg && !strcasecmp(a->text, b->text);
}

/* The first word of a phrase, for placing a snippet (malloc'd). */
static char *recall_qfirst_word(const char *t)
{
    while (*t && !recall_query_wordc((unsigned char)*t)) t++;
    size_t n = 0;
    while (t[n] && recall_query_wordc((unsigned char)t[n]) && n < 63) n++;
    return lc_strndup(t, n);
}

static int recall_qadd_phrase(recall_query *out, sbuf *b, const recall_qitem *it, double weight)
{
    double *w = realloc(out->weights, (out->nphrases + 1) * sizeof *w);
    if (!w) return LC_NOMEM;
    out->weights = w;
    char **ws = realloc(out->words, (out->nphrases + 1) * sizeof *ws);
    if (!ws) return LC_NOMEM;
    out->words = ws;
    if (!(ws[out->nphrases] = recall_qfirst_word(it->text))) return LC_NOMEM;
    w[out->nphrases++] = weight;
    recall_qphrase(b, it);
    return LC_OK;
}

int recall_query_parse(const char *q, recall_query *out, char **err)
{
    recall_qparse p = {0};
    sbuf b = {0};
    int rc = LC_OK;
    memset(out, 0, sizeof *out);
    if (!q) q = "";
    while (*q == ' ' || *q == '\t' || *q == '\n') q++;
    if (!strncmp(q, RECALL_QUERY_RAW_PREFIX, strlen(RECALL_QUERY_RAW_PREFIX))) {
        out->raw = 1;
        out->match = lc_strdup(q + strlen(RECALL_QUERY_RAW_PREFIX));
        if (!out->match) rc = LC_NOMEM;
        goto done;
    }
    if ((rc = recall_qscan(q, &p)) != LC_OK) goto done;
    size_t content = 0, pos = 0;
    for (size_t i = 0; i < p.n; i++) {
        if (p.v[i].neg) continue;
        pos++;
        if (!p.v[i].stop) content++;
    }
    if (!pos) goto done;
    /* Groups: items joined by a written AND; every group may match on its own. When the
     * content words all fall away (duplicates of stopwords), the stopwords are searched. */
    int first_group = 1, wrote_neg = 0;
again:
    sb_putc(&b, '(');
    for (size_t i = 0; i < p.n;) {
        if (p.v[i].neg) {
            i++;
            continue;
        }
        size_t j = i + 1;
        while (j < p.n && p.v[j].and_prev) j++;
        int single = j == i + 1;
        int skip = 0;
        if (single && p.v[i].stop && content) {
            skip = 1;
            out->stop_dropped++;
        }
        for (size_t k = 0; single && !skip && k < i; k++)
            if (p.v[k].kept && !p.v[k].and_prev && (k + 1 >= p.n || !p.v[k + 1].and_prev) &&
                recall_qsame(&p.v[k], &p.v[i]))
                skip = 1;
        if (!skip) {
            if (!first_group) sb_puts(&b, " OR ");
            first_group = 0;
            size_t stem = single ? recall_qstem(&p.v[i]) : 0;
            if (!single) sb_putc(&b, '(');
            for (size_t k = i; k < j; k++) {
                if (k > i) sb_puts(&b, " AND ");
                if ((rc = recall_qadd_phrase(out, &b, &p.v[k], p.v[k].stop ? 0 : 1)) != LC_OK) goto done;
                p.v[k].kept = 1;
            }
            if (!single) sb_putc(&b, ')');
            if (single && recall_qexact(&p.v[i])) {
                /* The form written, beside the stems that match every form, weighs as the
                 * word is rare, so "importing" ranks the messages that say "importing" above
                 * the many that say "import" -- shared among the query's content words: a
                 * word searched alone is the form the user meant, in a question its form
                 * is the sentence's grammar (recall_query.h has the measurements). */
                recall_qitem ex = p.v[i];
                char *t = lc_asprintf("%c%s", STORE_EXACT_MARK, p.v[i].text);
                if (!t) {
                    rc = LC_NOMEM;
                    goto done;
                }
                ex.text = t;
                sb_puts(&b, " OR ");
                rc = recall_qadd_phrase(out, &b, &ex, RECALL_QUERY_EXACT_WEIGHT / (double)(content ? content : 1));
                free(t);
                if (rc != LC_OK) goto done;
            }
            if (stem) {
                /* Other forms of the word: its stem as a prefix, weighing less than the
                 * form written, so the exact form ranks first. */
                recall_qitem st = p.v[i];
                char save = st.text[stem];
                st.text[stem] = '\0';
                st.prefix = 1;
                sb_puts(&b, " OR ");
                rc = recall_qadd_phrase(out, &b, &st, RECALL_QUERY_STEM_WEIGHT);
                p.v[i].text[stem] = save;
                if (rc != LC_OK) goto done;
            }
        }
        i = j;
    }
    /* Neighbouring words of the query as a phrase too: a message holding them side by side
     * ("lock screen", "git bash") ranks above one holding them apart. Measured on the shared
     * real questions: recall@10 0.60 -> 0.63 at weight 0.5 (1: 0.63 with a lower MRR, 2: MRR
     * 0.33 -> 0.26). */
    for (size_t i = 0; !first_group && !p.ops && i + 1 < p.n; i++) {
        const recall_qitem *a = &p.v[i], *c = &p.v[i + 1];
        if (a->neg || c->neg || a->stop || c->stop || a->quoted || c->quoted || a->prefix || c->prefix ||
            c->and_prev || !strcasecmp(a->text, c->text))
            continue;
        recall_qitem bi = *a;
        char *t = lc_asprintf("%s %s", a->text, c->text);
        if (!t) {
            rc = LC_NOMEM;
            goto done;
        }
        bi.text = t;
        bi.prefix = 0;
        sb_puts(&b, " OR ");
        rc = recall_qadd_phrase(out, &b, &bi, RECALL_QUERY_PAIR_WEIGHT);
        free(t);
        if (rc != LC_OK) goto done;
    }
    if (first_group) {
        if (!content) goto done; /* nothing searchable: match stays NULL */
        content = 0;
        b.len = 0;
        recall_query_free(out);
        for (size_t i = 0; i < p.n; i++) p.v[i].kept = 0;
        goto again;
    }
    sb_putc(&b, ')');
    for (size_t i = 0; i < p.n; i++) {
        if (!p.v[i].neg) continue;
        sb_puts(&b, wrote_neg ? " OR " : " NOT (");
        wrote_neg = 1;
        if ((rc = recall_qadd_phrase(out, &b, &p.v[i], 0)) != LC_OK) goto done;
    }
    if (wrote_neg) sb_putc(&b, ')');
    if (b.oom || !(out->match = sb_detach(&b))) rc = LC_NOMEM;
done:
    out->dropped = p.dropped;
    for (size_t i = 0; i < p.n; i++) free(p.v[i].text);
    free(p.v);
    sb_free(&b);
    if (rc != LC_OK) {
        recall_query_free(out);
        return lc_errf(err, LC_NOMEM, "recall: out of memory");
    }
    return LC_OK;
}

void recall_query_free(recall_query *q)
{
    for (size_t i = 0; q->words && i < q->nphrases; i++) free(q->words[i]);
    free(q->words);
    free(q->weights);
    free(q->match);
    memset(q, 0, sizeof *q);
}
