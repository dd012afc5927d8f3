/*
 * recall_query.h -- lcm_grep's query language, translated to what the full-text index
 * answers. Owns the one parse of a query (no state between calls):
 *
 *   plain words       any word may match; more of them ranks higher (recall ranks); a
 *                     word's other forms (its stem as a prefix) match too, weighing less,
 *                     the form written weighs more (its STORE_EXACT_MARK phrase), and two
 *                     neighbouring words side by side weigh more
 *   punctuation       separates words: a question is a query
 *   opk-gui config.toml src/a.c   a hyphenated, dotted or slashed name is a phrase
 *   "quoted phrase"   the words in that order
 *   prefix*           words starting so
 *   -word -"a phrase" excluded: no hit contains it
 *   a AND b           both (only in capitals); OR in capitals is the default anyway
 *   fts5: ...         the rest is FTS5's own syntax, passed as it is (the only form that
 *                     can be refused as a syntax error)
 *
 * The translation is an FTS5 expression made only of quoted phrases, AND, OR, NOT and
 * parentheses, so no input text can make it a syntax error; the PostgreSQL backend maps the
 * same expression to a tsquery (store_pg_tsquery). Stopwords ("what", "the", "did") are
 * left out when the query has other words, and weigh nothing in the ranking.
 */
#ifndef LC_RECALL_QUERY_H
#define LC_RECALL_QUERY_H

#include <stddef.h>

#define RECALL_QUERY_TERMS 32        /* phrases searched; the rest are named as dropped */
#define RECALL_QUERY_TERM_BYTES 200  /* a longer word is cut (the index's tokens are short) */
#define RECALL_QUERY_RAW_PREFIX "fts5:"
#define RECALL_QUERY_STEM_WEIGHT 0.5 /* another form of a word, beside the form written */
#define RECALL_QUERY_PAIR_WEIGHT 0.5 /* two neighbouring words of the query side by side */
/* A word as written (not its stem), beside the word: this divided by the query's content
 * words. Measured on the shared real questions: recall@10 0.84 / MRR 0.44 as without it, and
 * "importing" alone ranks the one message saying it first among 141 "import" hits (a flat
 * 0.1 ranks it second; a flat 0.25 or more loses a question, 0.81 / 0.42: a question rarely
 * uses the answer's own form of a word). */
#define RECALL_QUERY_EXACT_WEIGHT 0.5

typedef struct recall_query {
    char *match;          /* the FTS5 expression; NULL when the query has no word to search */
    int raw;              /* fts5: given: match is the caller's text */
    size_t nphrases;      /* phrases in match, in order (the index numbers them so) */
    double *weights;      /* per phrase: 1 a content word, 0 a stopword or an excluded one */
    char **words;         /* per phrase: its first word, for placing a snippet */
    size_t dropped;       /* words past RECALL_QUERY_TERMS, not searched */
    size_t stop_dropped;  /* stopwords left out */
} recall_query;

/* Parse `q` (any bytes, NUL-terminated). LC_OK always but for LC_NOMEM: a query with no
 * word leaves match NULL. */
int recall_query_parse(const char *q, recall_query *out, char **err);
void recall_query_free(recall_query *q);
/* 1 when the lowercase ASCII word w (n bytes) is a stopword. */
int recall_query_stopword(const char *w, size_t n);

#endif
