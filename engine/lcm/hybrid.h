/*
 * hybrid.h -- hybrid semantic recall: lcm_grep's `mode: "hybrid"`. Full-text ranking
 * (FTS5 bm25 over the query's words, any of them) and meaning (cosine similarity of the
 * query's embedding with every stored vector: vecindex.h's cached int8 scan, its best
 * candidates re-ranked exactly) fused by reciprocal rank fusion, score = w_fts / (k + fts rank) + w_vector / (k + vector rank), k = 60 and the
 * weights from lcm.json's `embeddings`. Also the bounded embedding pass the background
 * worker and `lcm reindex --embeddings` run (rows without a vector of the configured
 * model, resumable: what is written is not visited again).
 * Owns the candidate lists, the fusion, the [hybrid] hit lines; the vectors live in the
 * store (store.h, "vectors"), the client in embed.h, the cache between calls in vecindex.h.
 */
#ifndef LC_HYBRID_H
#define LC_HYBRID_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "recall.h"
#include "store.h"

#define HYBRID_FTS_CANDIDATES 100   /* full-text matches ranked per store */
#define HYBRID_VEC_CANDIDATES 100   /* nearest vectors kept over every store */
#define HYBRID_QUERY_TERMS 32       /* words of the query the full-text side ORs */

/* One candidate of the fusion. */
typedef struct hybrid_cand {
    size_t store;            /* index into the caller's stores */
    store_vec_kind kind;
    int64_t id;              /* message row id or summary id */
    char *entry_id;          /* messages (malloc'd); NULL for a summary */
    int fts_rank;            /* 1-based within its store; 0 = not a full-text match */
    int has_vec;             /* among the nearest vectors (cosine is set) */
    int vec_rank;            /* 1-based over every store, set by hybrid_rrf; 0 = none */
    double cosine;
    double score;            /* set by hybrid_rrf */
} hybrid_cand;

/* Rank the candidates with a vector by cosine (vec_rank), score each, then order them best
 * first (ties: the higher cosine, the better full-text rank, then store and id: a stable
 * order for paging). An absent rank adds nothing to a score. k <= 0 means 60. */
void hybrid_rrf(hybrid_cand *c, size_t n, double w_fts, double w_vector, long k);

typedef struct hybrid_opts {
    const char *query;
    const lcm_embeddings *cfg;   /* must be enabled (else embed_not_configured) */
    size_t offset;               /* hits to skip */
    size_t limit;                /* 0 = RECALL_PAGE */
    int include_removed;
    int redact;
    const float *qvec;           /* the query's unit vector when the caller has one (bench); */
    int qdim;                    /* NULL = embedded with cfg's client */
} hybrid_opts;

typedef struct hybrid_result {
    hybrid_cand *v;              /* fused, best first */
    size_t n;
    size_t scanned;              /* vectors compared */
    size_t other_dim;            /* vectors of another dimension than the query's (skipped) */
    size_t fts_hits;             /* full-text candidates */
    int64_t messages, embedded;  /* coverage by cfg->model over the stores searched */
    size_t no_vectors;           /* stores whose backend cannot store vectors */
    int fts_narrowed;            /* a store's any-word matches passed RECALL_RANK_MAX: every word */
    int fts_newest;              /* ... and those too: its newest, unranked */
} hybrid_result;
void hybrid_result_free(hybrid_result *r);

/* The fused candidates over `stores` (all open; none is written). */
int hybrid_search(store *const *stores, size_t n_stores, const hybrid_opts *o, hybrid_result *out,
                  char **err);

/* lcm_grep mode "hybrid" in one store: the tool's text (malloc'd) in *text. */
int hybrid_grep(store *s, const hybrid_opts *o, char **text, char **err);
/* The same over past sessions' stores (read-only, the current one left out; the project's
 * with RECALL_SCOPE_SESSIONS), at most RECALL_SESSIONS_MAX of them. */
int hybrid_grep_sessions(const char *agent_home, const char *current_session_id, const char *cwd,
                         recall_scope scope, const hybrid_opts *o, char **text, char **err);

/* One bounded embedding pass: up to `max_rows` rows lacking a vector of cfg->model
 * (with `force`, also rows carrying another model's), embedded and written. */
typedef struct hybrid_embed_stats {
    size_t embedded;
    int more;                    /* rows remain for another pass */
    long tokens, requests;       /* what the embeddings server reported it used (ledger.h) */
} hybrid_embed_stats;
int hybrid_embed_pass(store *s, const lcm_embeddings *cfg, size_t max_rows, int force, hybrid_embed_stats *st,
                      char **err);

/* "n of m messages embedded (model M)" and what differs (malloc'd), for status. */
char *hybrid_coverage_line(store *s, const lcm_embeddings *cfg);

#endif
