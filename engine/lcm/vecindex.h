/*
 * vecindex.h -- hybrid recall's nearest-vector search held in memory: the vectors a store
 * holds for one model and one dimension, loaded once per process and kept between calls
 * (keyed by the store's path, the model and the dimension), each quantized to int8 with its
 * own scale. A query scans the int8 codes (AVX-VNNI or AVX2 where the CPU has it, else plain C), keeps
 * the best VECINDEX_POOL_FACTOR x k by the approximate score, and re-ranks those exactly from
 * their float32 vectors: read back from the store (store_vec_get) for the cache's sets, so
 * memory holds the codes only (vecindex_bytes_per_vector); kept beside the codes for a
 * set built alone, or a backend that cannot read vectors by row.
 * A cached entry is used while the store's vector stamp (meta `vec_version`, bumped by every
 * vector write, deletion and removal mark, in any process: store.h "vectors") and its
 * `created` stamp are what they were at load; otherwise it is loaded again.
 * Owns the cache (process-wide, one mutex) and the quantized kernels; the vectors' rows
 * live in the store (store.h), the fusion in hybrid.h.
 */
#ifndef LC_VECINDEX_H
#define LC_VECINDEX_H

#include <stddef.h>
#include <stdint.h>

#include "store.h"

#define VECINDEX_POOL_FACTOR 4            /* candidates re-ranked exactly per hit wanted */
#define VECINDEX_BUDGET_BYTES (3ULL << 30) /* the cache's size beyond which older entries go */

/* A set of vectors of one dimension, quantized (the cache's entry; also usable alone). */
typedef struct vecindex_set {
    int dim;
    int lean;              /* codes only (no floats, no entry ids): the re-rank reads the store */
    size_t n, cap;
    int8_t *code;          /* n x dim int8 codes: round(v / scale) */
    float *scale;          /* per vector: max |v| / 127 */
    float *vec;            /* n x dim float32 originals (the exact re-rank); NULL when lean */
    int64_t *id;
    uint8_t *kind;         /* store_vec_kind */
    uint8_t *removed;
    size_t *eid;           /* offset of the entry id in `names`; (size_t)-1 = none */
    char *names;
    size_t names_len, names_cap;
} vecindex_set;

/* One nearest vector (entry_id borrowed from the set, valid while it is). */
typedef struct vecindex_hit {
    size_t row;
    store_vec_kind kind;
    int64_t id;
    const char *entry_id;
    double cosine;         /* exact: the float32 dot product */
} vecindex_hit;

int vecindex_set_add(vecindex_set *set, const store_vec_row *r, char **err);
void vecindex_set_free(vecindex_set *set);
/* Bytes a set holds per vector: codes, scale, id, flags; unless lean, also the floats and
 * the entry id's offset (the entry ids' own bytes come on top). */
size_t vecindex_bytes_per_vector(int dim, int lean);

/* The best `k` rows of `set` (not lean) for the unit query `q` (set->dim floats), best
 * first: the int8 scan picks VECINDEX_POOL_FACTOR * k, the float vectors order them.
 * Removed rows only with include_removed. *out malloc'd (NULL when none), *n its length. */
int vecindex_set_search(const vecindex_set *set, const float *q, int include_removed, size_t k,
                        vecindex_hit **out, size_t *n, char **err);
/* The int8 score of every row of `set` for the unit query `q` (set->n floats into out), by
 * the kernel the search uses (kernel NULL) or the one named: "plain" (C), "avx2", "vnni"
 * (AVX-VNNI); LC_INVALID when this CPU has not that one. All agree exactly. */
int vecindex_set_scores(const vecindex_set *set, const float *q, const char *kernel, float *out, char **err);
/* The kernel the search uses: "vnni", "avx2" or "plain". */
const char *vecindex_kernel(void);
/* The exact scan (every float vector): the reference the quantized one is measured against. */
int vecindex_set_search_exact(const vecindex_set *set, const float *q, int include_removed, size_t k,
                              vecindex_hit **out, size_t *n, char **err);

typedef struct vecindex_stats {
    size_t scanned;        /* vectors of the query's dimension compared */
    size_t other_dim;      /* vectors of another dimension (skipped) */
    int loaded;            /* the store's vectors were read for this query (not cached) */
    int64_t messages_embedded; /* messages with a vector of the model (any dimension, removed too) */
} vecindex_stats;

/* Visit the `k` nearest vectors of `model` in `s` to the unit query `q` (qdim floats),
 * best first, through the process's cache (loaded or reloaded when the store's vectors
 * changed). The hits are copied for the visit only. LC_INVALID when the backend cannot
 * store vectors. */
typedef int (*vecindex_visit)(void *ud, const vecindex_hit *h, char **err);
int vecindex_search(store *s, const char *model, int include_removed, const float *q, int qdim, size_t k,
                    vecindex_visit visit, void *ud, vecindex_stats *st, char **err);

/* Drop every cached entry (tests; a process about to exit need not). */
void vecindex_cache_clear(void);
/* The cache's entries and bytes now. */
void vecindex_cache_usage(size_t *entries, size_t *bytes);

#endif
