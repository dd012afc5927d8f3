/*
 * vecindex.c -- hybrid recall's in-memory nearest-vector search and its process cache
 * (see vecindex.h).
 */
#include "vecindex.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "embed.h"
#include "util.h"

/* ---- a quantized set ------------------------------------------------------------------- */

size_t vecindex_bytes_per_vector(int dim, int lean)
{
    size_t codes = (size_t)dim * sizeof(int8_t) + sizeof(float) + sizeof(int64_t) + 2;
    return lean ? codes : codes + (size_t)dim * sizeof(float) + sizeof(size_t);
}

/* Room for `want` rows, doubling; with `exact`, exactly `want` (a loaded set's final size). */
static int vecindex_resize(vecindex_set *s, size_t want, int exact)
{
    if (!exact && want <= s->cap) return LC_OK;
    size_t cap = exact ? want : s->cap ? s->cap : 1024;
    while (cap < want) cap *= 2;
    if (!cap) return LC_OK;
    size_t d = (size_t)s->dim;
    int8_t *code = realloc(s->code, cap * d);
    if (code) s->code = code;
    float *vec = s->lean ? NULL : realloc(s->vec, cap * d * sizeof *vec);
    if (vec) s->vec = vec;
    float *scale = realloc(s->scale, cap * sizeof *scale);
    if (scale) s->scale = scale;
    int64_t *id = realloc(s->id, cap * sizeof *id);
    if (id) s->id = id;
    uint8_t *kind = realloc(s->kind, cap);
    if (kind) s->kind = kind;
    uint8_t *removed = realloc(s->removed, cap);
    if (removed) s->removed = removed;
    size_t *eid = s->lean ? NULL : realloc(s->eid, cap * sizeof *eid);
    if (eid) s->eid = eid;
    if (!code || !scale || !id || !kind || !removed || (!s->lean && (!vec || !eid))) return LC_NOMEM;
    s->cap = cap;
    return LC_OK;
}

/* Codes round(v / scale) with scale = max |v| / 127: the largest component maps to +-127,
 * so no code clips and the error per component is at most scale / 2. */
static float vecindex_quantize(const float *v, int dim, int8_t *code)
{
    float m = 0;
    for (int i = 0; i < dim; i++) m = fmaxf(m, fabsf(v[i]));
    if (m == 0) {
        memset(code, 0, (size_t)dim);
        return 0;
    }
    float scale = m / 127.0f, inv = 127.0f / m;
    for (int i = 0; i < dim; i++) code[i] = (int8_t)lrintf(v[i] * inv);
    return scale;
}

int vecindex_set_add(vecindex_set *s, const store_vec_row *r, char **err)
{
    if (r->dim != s->dim) return lc_errf(err, LC_INVALID, "vecindex: a vector of dimension %d in a set of %d", r->dim, s->dim);
    if (vecindex_resize(s, s->n + 1, 0) != LC_OK) return lc_errf(err, LC_NOMEM, "vecindex: out of memory");
    size_t i = s->n, d = (size_t)s->dim;
    s->scale[i] = vecindex_quantize(r->v, s->dim, s->code + i * d);
    s->id[i] = r->id;
    s->kind[i] = (uint8_t)r->kind;
    s->removed[i] = r->removed ? 1 : 0;
    if (s->lean) {
        s->n++;
        return LC_OK;
    }
    memcpy(s->vec + i * d, r->v, d * sizeof(float));
    s->eid[i] = (size_t)-1;
    if (r->entry_id) {
        size_t len = strlen(r->entry_id) + 1;
        char *nn = lc_grow(s->names, &s->names_cap, s->names_len + len, 1);
        if (!nn) return lc_errf(err, LC_NOMEM, "vecindex: out of memory");
        s->names = nn;
        memcpy(s->names + s->names_len, r->entry_id, len);
        s->eid[i] = s->names_len;
        s->names_len += len;
    }
    s->n++;
    return LC_OK;
}

void vecindex_set_free(vecindex_set *s)
{
    if (!s) return;
    free(s->code);
    free(s->vec);
    free(s->scale);
    free(s->id);
    free(s->kind);
    free(s->removed);
    free(s->eid);
    free(s->names);
    int lean = s->lean;
    memset(s, 0, sizeof *s);
    s->lean = lean;
}

/* ---- the kernels ------------------------------------------------------------------------
 * One pass scores a block of rows: the int8 dot product with the query times the row's
 * scale. x86-64 with AVX2 multiplies 32 codes an instruction (|q| unsigned by sign(q)-signed
 * v: pairs of products stay within int16, since no code is -128), with AVX-VNNI also sums
 * them into int32 in that instruction; elsewhere plain C. The choice is made once, by the
 * CPU. */
#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#define VECINDEX_AVX2 1
#endif

static void vecindex_scores_base(const int8_t *q, const int8_t *code, const float *scale, size_t n, int dim,
                                 float *out)
{
    for (size_t r = 0; r < n; r++) {
        const int8_t *v = code + r * (size_t)dim;
        int32_t acc = 0;
        for (int i = 0; i < dim; i++) acc += (int32_t)q[i] * (int32_t)v[i];
        out[r] = (float)acc * scale[r];
    }
}

#ifdef VECINDEX_AVX2
/* The four lanes' sums of each of a, b, c, d: one int32 per row. */
__attribute__((target("avx2"))) static inline __m128i vecindex_hsum4(__m256i a, __m256i b, __m256i c, __m256i d)
{
    __m256i ab = _mm256_hadd_epi32(a, b), cd = _mm256_hadd_epi32(c, d);
    __m256i abcd = _mm256_hadd_epi32(ab, cd);
    return _mm_add_epi32(_mm256_castsi256_si128(abcd), _mm256_extracti128_si256(abcd, 1));
}

/* Four rows a pass: each 32 query codes are loaded (and their magnitudes taken) once for
 * four rows, and the four sums are reduced together. STEP(acc, |q|, v signed by q) adds 32
 * products into acc's eight int32 lanes: AVX2 in three instructions (pairs within int16, as
 * no code is -128), AVX-VNNI in one. */
#define VECINDEX_FOUR_ROWS(STEP)                                                                              \
    const __m256i ones = _mm256_set1_epi16(1);                                                                \
    (void)ones;                                                                                               \
    int whole = dim & ~31;                                                                                    \
    size_t d = (size_t)dim, r = 0;                                                                            \
    for (; r + 4 <= n; r += 4) {                                                                              \
        const int8_t *v0 = code + r * d, *v1 = v0 + d, *v2 = v1 + d, *v3 = v2 + d;                            \
        __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;                                       \
        for (int i = 0; i < whole; i += 32) {                                                                 \
            __m256i x = _mm256_loadu_si256((const __m256i *)(const void *)(q + i)), ax = _mm256_abs_epi8(x);  \
            a0 = STEP(a0, ax, _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)(const void *)(v0 + i)), x)); \
            a1 = STEP(a1, ax, _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)(const void *)(v1 + i)), x)); \
            a2 = STEP(a2, ax, _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)(const void *)(v2 + i)), x)); \
            a3 = STEP(a3, ax, _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)(const void *)(v3 + i)), x)); \
        }                                                                                                     \
        int32_t sum[4];                                                                                       \
        _mm_storeu_si128((__m128i *)(void *)sum, vecindex_hsum4(a0, a1, a2, a3));                             \
        for (int i = whole; i < dim; i++) {                                                                   \
            sum[0] += (int32_t)q[i] * v0[i];                                                                  \
            sum[1] += (int32_t)q[i] * v1[i];                                                                  \
            sum[2] += (int32_t)q[i] * v2[i];                                                                  \
            sum[3] += (int32_t)q[i] * v3[i];                                                                  \
        }                                                                                                     \
        for (int j = 0; j < 4; j++) out[r + (size_t)j] = (float)sum[j] * scale[r + (size_t)j];                \
    }                                                                                                         \
    if (r < n) vecindex_scores_base(q, code + r * d, scale + r, n - r, dim, out + r);

#define VECINDEX_STEP_AVX2(acc, ax, sy) _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(ax, sy), ones))
#define VECINDEX_STEP_VNNI(acc, ax, sy) _mm256_dpbusd_avx_epi32(acc, ax, sy)

__attribute__((target("avx2"))) static void vecindex_scores_avx2(const int8_t *q, const int8_t *code,
                                                                  const float *scale, size_t n, int dim, float *out)
{
    VECINDEX_FOUR_ROWS(VECINDEX_STEP_AVX2)
}

__attribute__((target("avx2,avxvnni"))) static void vecindex_scores_vnni(const int8_t *q, const int8_t *code,
                                                                         const float *scale, size_t n, int dim,
                                                                         float *out)
{
    VECINDEX_FOUR_ROWS(VECINDEX_STEP_VNNI)
}
#endif

typedef void (*vecindex_scores_fn)(const int8_t *, const int8_t *, const float *, size_t, int, float *);

static vecindex_scores_fn vecindex_scores = vecindex_scores_base;
static pthread_once_t vecindex_scores_once = PTHREAD_ONCE_INIT;

#ifdef VECINDEX_AVX2
/* AVX-VNNI is CPUID.(EAX=7,ECX=1):EAX bit 4, asked of the CPU itself: not every compiler's
 * __builtin_cpu_supports knows its name (clang 14 refuses "avxvnni"). It uses the YMM state
 * AVX2 already needs, so the AVX2 check covers the operating system's part. */
static int vecindex_has_vnni(void)
{
    unsigned a = 0, b = 0, c = 0, d = 0;
    return __builtin_cpu_supports("avx2") && __get_cpuid_count(7, 1, &a, &b, &c, &d) && ((a >> 4) & 1);
}
#endif

/* LCM_VECINDEX_SCALAR (set) keeps the plain C kernel, LCM_VECINDEX_NO_VNNI the AVX2 one. */
static void vecindex_scores_pick(void)
{
#ifdef VECINDEX_AVX2
    __builtin_cpu_init();
    if (getenv("LCM_VECINDEX_SCALAR")) return;
    if (__builtin_cpu_supports("avx2")) vecindex_scores = vecindex_scores_avx2;
    if (vecindex_has_vnni() && !getenv("LCM_VECINDEX_NO_VNNI"))
        vecindex_scores = vecindex_scores_vnni;
#endif
}

/* A bounded min-heap of (score, row): the pool's worst at the top. */
typedef struct vecindex_pool {
    float *score;
    size_t *row;
    size_t n, cap;
} vecindex_pool;

static void vecindex_pool_push(vecindex_pool *p, float score, size_t row)
{
    size_t i;
    if (p->n < p->cap) {
        i = p->n++;
        while (i > 0 && p->score[(i - 1) / 2] > score) {
            p->score[i] = p->score[(i - 1) / 2];
            p->row[i] = p->row[(i - 1) / 2];
            i = (i - 1) / 2;
        }
    } else {
        if (score <= p->score[0]) return;
        i = 0;
        for (;;) {
            size_t l = 2 * i + 1, r = l + 1, m = i;
            float ms = score;
            if (l < p->n && p->score[l] < ms) m = l, ms = p->score[l];
            if (r < p->n && p->score[r] < ms) m = r, ms = p->score[r];
            if (m == i) break;
            p->score[i] = p->score[m];
            p->row[i] = p->row[m];
            i = m;
        }
    }
    p->score[i] = score;
    p->row[i] = row;
}

static int vecindex_by_cosine(const void *a, const void *b)
{
    const vecindex_hit *x = a, *y = b;
    if (x->cosine != y->cosine) return x->cosine < y->cosine ? 1 : -1;
    return x->row < y->row ? -1 : x->row > y->row;
}

/* The pool's rows scored exactly and ordered, the best k kept. */
static int vecindex_rerank(const vecindex_set *s, const float *q, const size_t *rows, size_t n, size_t k,
                           vecindex_hit **out, size_t *nout, char **err)
{
    *out = NULL;
    *nout = 0;
    if (!n) return LC_OK;
    vecindex_hit *h = malloc(n * sizeof *h);
    if (!h) return lc_errf(err, LC_NOMEM, "vecindex: out of memory");
    for (size_t i = 0; i < n; i++) {
        size_t r = rows[i];
        h[i] = (vecindex_hit){.row = r, .kind = (store_vec_kind)s->kind[r], .id = s->id[r],
                              .entry_id = s->eid[r] == (size_t)-1 ? NULL : s->names + s->eid[r],
                              .cosine = embed_dot(q, s->vec + r * (size_t)s->dim, s->dim)};
    }
    qsort(h, n, sizeof *h, vecindex_by_cosine);
    *out = h;
    *nout = n < k ? n : k;
    return LC_OK;
}

#define VECINDEX_BLOCK 256 /* rows scored per kernel call */

/* The int8 scan: the best p->cap rows by the approximate score into the pool (its arrays
 * the caller's, p->n set here). */
static int vecindex_pool_pick(const vecindex_set *s, const float *q, int include_removed, vecindex_pool *p,
                              char **err)
{
    size_t d = (size_t)s->dim;
    float block[VECINDEX_BLOCK];
    int8_t *qc = malloc(d);
    if (!qc) return lc_errf(err, LC_NOMEM, "vecindex: out of memory");
    pthread_once(&vecindex_scores_once, vecindex_scores_pick);
    p->n = 0;
    /* The query's own scale multiplies every score alike: the order needs only the rows'. */
    vecindex_quantize(q, s->dim, qc);
    for (size_t at = 0; at < s->n; at += VECINDEX_BLOCK) {
        size_t m = s->n - at < VECINDEX_BLOCK ? s->n - at : VECINDEX_BLOCK;
        vecindex_scores(qc, s->code + at * d, s->scale + at, m, s->dim, block);
        for (size_t j = 0; j < m; j++)
            if ((p->n < p->cap || block[j] > p->score[0]) && (include_removed || !s->removed[at + j]))
                vecindex_pool_push(p, block[j], at + j);
    }
    free(qc);
    return LC_OK;
}

const char *vecindex_kernel(void)
{
    pthread_once(&vecindex_scores_once, vecindex_scores_pick);
#ifdef VECINDEX_AVX2
    if (vecindex_scores == vecindex_scores_vnni) return "vnni";
    if (vecindex_scores == vecindex_scores_avx2) return "avx2";
#endif
    return "plain";
}

int vecindex_set_scores(const vecindex_set *s, const float *q, const char *kernel, float *out, char **err)
{
    vecindex_scores_fn fn;
    pthread_once(&vecindex_scores_once, vecindex_scores_pick);
    if (!kernel) fn = vecindex_scores;
    else if (strcmp(kernel, "plain") == 0) fn = vecindex_scores_base;
#ifdef VECINDEX_AVX2
    else if (strcmp(kernel, "avx2") == 0 && __builtin_cpu_supports("avx2")) fn = vecindex_scores_avx2;
    else if (strcmp(kernel, "vnni") == 0 && vecindex_has_vnni()) fn = vecindex_scores_vnni;
#endif
    else return lc_errf(err, LC_INVALID, "vecindex: no %s kernel on this CPU", kernel);
    int8_t *qc = malloc((size_t)s->dim);
    if (!qc) return lc_errf(err, LC_NOMEM, "vecindex: out of memory");
    vecindex_quantize(q, s->dim, qc);
    fn(qc, s->code, s->scale, s->n, s->dim, out);
    free(qc);
    return LC_OK;
}

static int vecindex_pool_alloc(vecindex_pool *p, size_t cap, char **err)
{
    p->cap = cap;
    p->n = 0;
    p->score = malloc(cap * sizeof *p->score);
    p->row = malloc(cap * sizeof *p->row);
    return p->score && p->row ? LC_OK : lc_errf(err, LC_NOMEM, "vecindex: out of memory");
}

int vecindex_set_search(const vecindex_set *s, const float *q, int include_removed, size_t k, vecindex_hit **out,
                        size_t *n, char **err)
{
    int rc;
    vecindex_pool p = {0};
    *out = NULL;
    *n = 0;
    if (!s->n || !k) return LC_OK;
    if (s->lean) return lc_errf(err, LC_INVALID, "vecindex: a set without its floats re-ranks from its store");
    if ((rc = vecindex_pool_alloc(&p, k * VECINDEX_POOL_FACTOR, err)) == LC_OK &&
        (rc = vecindex_pool_pick(s, q, include_removed, &p, err)) == LC_OK)
        rc = vecindex_rerank(s, q, p.row, p.n, k, out, n, err);
    free(p.score);
    free(p.row);
    return rc;
}

int vecindex_set_search_exact(const vecindex_set *s, const float *q, int include_removed, size_t k,
                              vecindex_hit **out, size_t *n, char **err)
{
    vecindex_pool p = {.cap = k};
    int rc = LC_OK;
    *out = NULL;
    *n = 0;
    if (!s->n || !k) return LC_OK;
    if (s->lean) return lc_errf(err, LC_INVALID, "vecindex: a set without its floats has no exact scan");
    p.score = malloc(k * sizeof *p.score);
    p.row = malloc(k * sizeof *p.row);
    if (!p.score || !p.row) {
        rc = lc_errf(err, LC_NOMEM, "vecindex: out of memory");
        goto done;
    }
    for (size_t i = 0; i < s->n; i++)
        if (include_removed || !s->removed[i])
            vecindex_pool_push(&p, (float)embed_dot(q, s->vec + i * (size_t)s->dim, s->dim), i);
    rc = vecindex_rerank(s, q, p.row, p.n, k, out, n, err);
done:
    free(p.score);
    free(p.row);
    return rc;
}

/* ---- the process cache ------------------------------------------------------------------ */

typedef struct vecindex_entry {
    struct vecindex_entry *next;
    char *path, *model, *stamp;
    size_t other_dim, removed;   /* rows of another dimension; rows marked removed */
    int64_t messages;            /* the model's message vectors, any dimension */
    unsigned long long used;     /* the cache's clock at its last query */
    vecindex_set set;
} vecindex_entry;

static pthread_mutex_t vecindex_mu = PTHREAD_MUTEX_INITIALIZER;
static vecindex_entry *vecindex_head;
static unsigned long long vecindex_clock;

static size_t vecindex_entry_bytes(const vecindex_entry *e)
{
    return e->set.cap * vecindex_bytes_per_vector(e->set.dim, e->set.lean) + e->set.names_cap;
}

static void vecindex_entry_free(vecindex_entry *e)
{
    if (!e) return;
    free(e->path);
    free(e->model);
    free(e->stamp);
    vecindex_set_free(&e->set);
    free(e);
}

void vecindex_cache_clear(void)
{
    pthread_mutex_lock(&vecindex_mu);
    while (vecindex_head) {
        vecindex_entry *e = vecindex_head;
        vecindex_head = e->next;
        vecindex_entry_free(e);
    }
    pthread_mutex_unlock(&vecindex_mu);
}

void vecindex_cache_usage(size_t *entries, size_t *bytes)
{
    size_t n = 0, b = 0;
    pthread_mutex_lock(&vecindex_mu);
    for (vecindex_entry *e = vecindex_head; e; e = e->next) n++, b += vecindex_entry_bytes(e);
    pthread_mutex_unlock(&vecindex_mu);
    if (entries) *entries = n;
    if (bytes) *bytes = b;
}

/* What tells this store's vectors apart from any earlier state: its creation stamp (a
 * store made again at the same path) and its vector version. NULL on OOM. */
static char *vecindex_stamp(store *s)
{
    char *created = store_meta_get(s, "created"), *ver = store_meta_get(s, "vec_version");
    char *st = lc_asprintf("%s/%s", created ? created : "", ver ? ver : "0");
    free(created);
    free(ver);
    return st;
}

static int vecindex_load_visit(void *ud, const store_vec_row *r, char **err)
{
    vecindex_entry *e = ud;
    e->messages += r->kind == STORE_VEC_MESSAGE;
    if (r->dim != e->set.dim) {
        e->other_dim++;
        return LC_OK;
    }
    e->removed += r->removed ? 1 : 0;
    return vecindex_set_add(&e->set, r, err);
}

/* Keep the cache under its budget: the least recently used entries go, never `keep`. */
static void vecindex_evict(const vecindex_entry *keep)
{
    for (;;) {
        size_t total = 0;
        vecindex_entry **oldest = NULL;
        for (vecindex_entry **p = &vecindex_head; *p; p = &(*p)->next) {
            total += vecindex_entry_bytes(*p);
            if (*p != keep && (!oldest || (*p)->used < (*oldest)->used)) oldest = p;
        }
        if (total <= VECINDEX_BUDGET_BYTES || !oldest) return;
        vecindex_entry *e = *oldest;
        *oldest = e->next;
        vecindex_entry_free(e);
    }
}

/* The re-rank from the store: the candidates' floats read back by row id, scored exactly. */
typedef struct vecindex_cand {
    store_vec_kind kind;
    int64_t id;
    size_t row;
} vecindex_cand;

typedef struct vecindex_fetch {
    const vecindex_cand *c;      /* this kind's candidates, by id */
    size_t n;
    const float *q;
    int dim, include_removed;
    vecindex_hit *hits;
    size_t nhits;
} vecindex_fetch;

static int vecindex_cand_by_id(const void *a, const void *b)
{
    const vecindex_cand *x = a, *y = b;
    if (x->kind != y->kind) return x->kind < y->kind ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

static int vecindex_fetch_visit(void *ud, const store_vec_row *r, char **err)
{
    vecindex_fetch *f = ud;
    vecindex_cand key = {.kind = r->kind, .id = r->id};
    const vecindex_cand *c = bsearch(&key, f->c, f->n, sizeof *f->c, vecindex_cand_by_id);
    /* A row changed since the load (the next query reloads): what the store says now counts. */
    if (!c || r->dim != f->dim || (r->removed && !f->include_removed)) return LC_OK;
    char *eid = NULL;
    if (r->entry_id && !(eid = lc_strdup(r->entry_id))) return lc_errf(err, LC_NOMEM, "vecindex: out of memory");
    f->hits[f->nhits++] = (vecindex_hit){.row = c->row, .kind = r->kind, .id = r->id, .entry_id = eid,
                                         .cosine = embed_dot(f->q, r->v, r->dim)};
    return LC_OK;
}

/* The candidates `c` (n of them) scored exactly from their stored floats, best first, the
 * best k kept: *out malloc'd, each entry id malloc'd. */
static int vecindex_rerank_store(store *s, const char *model, const float *q, int dim, int include_removed,
                                 vecindex_cand *c, size_t n, size_t k, vecindex_hit **out, size_t *nout, char **err)
{
    int rc = LC_OK;
    vecindex_fetch f = {.q = q, .dim = dim, .include_removed = include_removed};
    int64_t *ids = NULL;
    *out = NULL;
    *nout = 0;
    if (!n) return LC_OK;
    qsort(c, n, sizeof *c, vecindex_cand_by_id);
    f.hits = malloc(n * sizeof *f.hits);
    ids = malloc(n * sizeof *ids);
    if (!f.hits || !ids) {
        rc = lc_errf(err, LC_NOMEM, "vecindex: out of memory");
        goto done;
    }
    for (size_t at = 0; at < n && rc == LC_OK;) {
        size_t m = 0;
        while (at + m < n && c[at + m].kind == c[at].kind) {
            ids[m] = c[at + m].id;
            m++;
        }
        f.c = c + at;
        f.n = m;
        rc = store_vec_get(s, model, c[at].kind, ids, m, vecindex_fetch_visit, &f, err);
        at += m;
    }
    if (rc != LC_OK) goto done;
    qsort(f.hits, f.nhits, sizeof *f.hits, vecindex_by_cosine);
    for (size_t i = k; i < f.nhits; i++) free((char *)f.hits[i].entry_id);
    *nout = f.nhits < k ? f.nhits : k;
    *out = f.hits;
    f.hits = NULL;
    f.nhits = 0;
done:
    for (size_t i = 0; i < f.nhits; i++) free((char *)f.hits[i].entry_id);
    free(f.hits);
    free(ids);
    return rc;
}

int vecindex_search(store *s, const char *model, int include_removed, const float *q, int qdim, size_t k,
                    vecindex_visit visit, void *ud, vecindex_stats *st, char **err)
{
    int rc = LC_OK, locked = 0, from_store = 0;
    vecindex_hit *hits = NULL;
    vecindex_cand *cand = NULL;
    vecindex_pool p = {0};
    size_t nh = 0;
    const char *path = store_path(s);
    char *stamp = vecindex_stamp(s);
    memset(st, 0, sizeof *st);
    if (!stamp || !path) {
        free(stamp);
        return lc_errf(err, stamp ? LC_INVALID : LC_NOMEM, "vecindex: %s", stamp ? "a store without a path" : "out of memory");
    }
    pthread_mutex_lock(&vecindex_mu);
    locked = 1;
    vecindex_entry **at = &vecindex_head, *e;
    for (; (e = *at); at = &e->next)
        if (e->set.dim == qdim && strcmp(e->path, path) == 0 && strcmp(e->model, model) == 0) break;
    if (e && strcmp(e->stamp, stamp) != 0) {
        /* The store's vectors changed (here or in another process): read them again. */
        *at = e->next;
        vecindex_entry_free(e);
        e = NULL;
    }
    if (!e) {
        if (!(e = calloc(1, sizeof *e)) || !(e->path = lc_strdup(path)) || !(e->model = lc_strdup(model))) {
            vecindex_entry_free(e);
            rc = lc_errf(err, LC_NOMEM, "vecindex: out of memory");
            goto done;
        }
        e->set.dim = qdim;
        /* Codes only when the store can hand back the candidates' floats: a quarter of the
         * memory, and the exact re-rank reads a few hundred rows. */
        e->set.lean = store_vec_get_supported(s);
        /* Every row, removed ones too: a removal mark bumps the stamp, and the flag filters. */
        if ((rc = store_vec_walk(s, model, 1, vecindex_load_visit, e, err)) != LC_OK) {
            vecindex_entry_free(e);
            goto done;
        }
        /* The doubling's spare rows are half the memory at worst: give them back. */
        vecindex_resize(&e->set, e->set.n, 1);
        e->stamp = stamp;
        stamp = NULL;
        e->next = vecindex_head;
        vecindex_head = e;
        st->loaded = 1;
    }
    e->used = ++vecindex_clock;
    vecindex_evict(e);
    st->scanned = e->set.n - (include_removed ? 0 : e->removed);
    st->other_dim = e->other_dim;
    st->messages_embedded = e->messages;
    if (!e->set.lean) {
        if ((rc = vecindex_set_search(&e->set, q, include_removed, k, &hits, &nh, err)) != LC_OK) goto done;
    } else if (e->set.n && k) {
        if ((rc = vecindex_pool_alloc(&p, k * VECINDEX_POOL_FACTOR, err)) != LC_OK ||
            (rc = vecindex_pool_pick(&e->set, q, include_removed, &p, err)) != LC_OK)
            goto done;
        if (p.n && !(cand = malloc(p.n * sizeof *cand))) {
            rc = lc_errf(err, LC_NOMEM, "vecindex: out of memory");
            goto done;
        }
        for (size_t i = 0; i < p.n; i++)
            cand[i] = (vecindex_cand){.kind = (store_vec_kind)e->set.kind[p.row[i]], .id = e->set.id[p.row[i]],
                                      .row = p.row[i]};
        /* The store's reads need not hold the cache: the candidates are copied out. */
        pthread_mutex_unlock(&vecindex_mu);
        locked = 0;
        from_store = 1;
        if ((rc = vecindex_rerank_store(s, model, q, qdim, include_removed, cand, p.n, k, &hits, &nh, err)) != LC_OK)
            goto done;
    }
    for (size_t i = 0; i < nh && rc == LC_OK; i++) {
        if ((rc = visit(ud, &hits[i], err)) == STORE_VISIT_STOP) {
            rc = LC_OK;
            break;
        }
    }
done:
    if (locked) pthread_mutex_unlock(&vecindex_mu);
    if (from_store)
        for (size_t i = 0; i < nh; i++) free((char *)hits[i].entry_id);
    free(hits);
    free(cand);
    free(p.score);
    free(p.row);
    free(stamp);
    return rc;
}
