/*
 * store_sqlite_tok.c -- the full-text index's tokenizer "lcm" and its column function
 * lcm_cols() (store_sqlite_tok.h). The splitting itself is FTS5's unicode61, wrapped: its
 * words are the index's words everywhere but in CJK text, where no space separates words
 * and unicode61 returns a whole line as one word. Only a text holding a CJK character is
 * looked at word by word, so other text costs one scan of its bytes more than unicode61.
 */
#include "store_sqlite_tok.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"
#include "util.h"

/* One tokenizer instance: unicode61's, with the options it was made with. */
typedef struct tok {
    fts5_tokenizer base;
    Fts5Tokenizer *inner;
} tok;

/* The call a tokenize passes down to unicode61 and back up to FTS5 (or porter). */
typedef struct tok_call {
    void *ctx;
    int (*emit)(void *ctx, int tflags, const char *token, int n, int start, int end);
    const char *text;
} tok_call;

/* Han (with its radicals and compatibility forms), kana, bopomofo and Hangul: the scripts
 * written without spaces between words. Thai, Lao, Khmer and Myanmar are not among them
 * (their words would need a dictionary; bigrams of them are not what a reader searches). */
static int tok_is_cjk(uint32_t c)
{
    return (c >= 0x1100 && c <= 0x11FF) || (c >= 0x2E80 && c <= 0x2FDF) || (c >= 0x3005 && c <= 0x3007) ||
           (c >= 0x3021 && c <= 0x3029) || (c >= 0x3031 && c <= 0x3035) || (c >= 0x3040 && c <= 0x9FFF) ||
           (c >= 0xA960 && c <= 0xA97F) || (c >= 0xAC00 && c <= 0xD7FF) || (c >= 0xF900 && c <= 0xFAFF) ||
           (c >= 0xFF66 && c <= 0xFF9F) || (c >= 0x20000 && c <= 0x3FFFF);
}

/* The code point at s[0..n) and its length in *len (a stray byte counts as itself, one byte). */
static uint32_t tok_decode(const unsigned char *s, int n, int *len)
{
    int need = s[0] >= 0xF0 ? 4 : s[0] >= 0xE0 ? 3 : s[0] >= 0xC0 ? 2 : 1;
    if (need > n) need = 1;
    uint32_t c = need == 1 ? s[0] : s[0] & (0x3F >> (need - 1));
    for (int i = 1; i < need; i++) {
        if ((s[i] & 0xC0) != 0x80) {
            *len = 1;
            return s[0];
        }
        c = c << 6 | (s[i] & 0x3F);
    }
    *len = need;
    return c;
}

/* The byte after the character at text[at], not past `end`. Offsets matter only to
 * highlight() and snippet(), which a contentless table does not answer; they are kept
 * close (one source character per folded one) and always inside the word's span. */
static int tok_step(const char *text, int at, int end)
{
    if (at >= end) return end;
    at++;
    while (at < end && ((unsigned char)text[at] & 0xC0) == 0x80) at++;
    return at;
}

/* One unicode61 word: as it is, or cut at the CJK edges with its CJK runs as bigrams. */
static int tok_word(void *ud, int tflags, const char *w, int n, int start, int end)
{
    tok_call *call = ud;
    int i = 0;
    /* Every CJK code point is U+1100 or above: a lead byte of 0xE1 or more. */
    while (i < n && (unsigned char)w[i] < 0xE1) i++;
    if (i == n) return call->emit(call->ctx, tflags, w, n, start, end);
    const unsigned char *u = (const unsigned char *)w;
    int pos = 0, opos = start, rc = SQLITE_OK, len;
    while (pos < n && rc == SQLITE_OK) {
        int from = pos, ofrom = opos;
        if (!tok_is_cjk(tok_decode(u + pos, n - pos, &len))) {
            while (pos < n && !tok_is_cjk(tok_decode(u + pos, n - pos, &len))) {
                pos += len;
                opos = tok_step(call->text, opos, end);
            }
            rc = call->emit(call->ctx, tflags, w + from, pos - from, ofrom, opos);
            tflags = 0;
            continue;
        }
        /* A CJK run: each character with the one after it; a lone one by itself. */
        int prev = -1, oprev = -1, count = 0;
        while (pos < n && rc == SQLITE_OK && tok_is_cjk(tok_decode(u + pos, n - pos, &len))) {
            int onext = tok_step(call->text, opos, end);
            if (prev >= 0) {
                rc = call->emit(call->ctx, tflags, w + prev, pos + len - prev, oprev, onext);
                tflags = 0;
            }
            prev = pos;
            oprev = opos;
            pos += len;
            opos = onext;
            count++;
        }
        if (rc == SQLITE_OK && count == 1) {
            rc = call->emit(call->ctx, tflags, w + prev, pos - prev, oprev, opos);
            tflags = 0;
        }
    }
    return rc;
}

static int tok_create(void *ud, const char **argv, int argc, Fts5Tokenizer **out)
{
    static const char *dflt[] = {"remove_diacritics", "2"};
    fts5_api *api = ud;
    void *base_ud = NULL;
    tok *t = calloc(1, sizeof *t);
    int rc;
    *out = NULL;
    if (!t) return SQLITE_NOMEM;
    rc = api->xFindTokenizer(api, "unicode61", &base_ud, &t->base);
    /* Options given in the table's declaration go to unicode61 as they are. */
    if (rc == SQLITE_OK) rc = t->base.xCreate(base_ud, argc ? argv : dflt, argc ? argc : 2, &t->inner);
    if (rc != SQLITE_OK) {
        free(t);
        return rc;
    }
    *out = (Fts5Tokenizer *)t;
    return SQLITE_OK;
}

static void tok_delete(Fts5Tokenizer *p)
{
    tok *t = (tok *)p;
    if (!t) return;
    if (t->inner) t->base.xDelete(t->inner);
    free(t);
}

/* Whether text[0..n) may hold a CJK character (a byte of 0xE1 or more), eight bytes at a
 * time while they are ASCII: most texts are, and then unicode61's words go on as they
 * are, without a call per word through tok_word. */
static int tok_may_cjk(const char *text, int n)
{
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, text + i, 8);
        if (!(w & 0x8080808080808080ull)) continue;
        for (int k = 0; k < 8; k++)
            if ((unsigned char)text[i + k] >= 0xE1) return 1;
    }
    for (; i < n; i++)
        if ((unsigned char)text[i] >= 0xE1) return 1;
    return 0;
}

static int tok_tokenize(Fts5Tokenizer *p, void *ctx, int flags, const char *text, int n,
                        int (*emit)(void *, int, const char *, int, int, int))
{
    tok *t = (tok *)p;
    if (!tok_may_cjk(text, n)) return t->base.xTokenize(t->inner, ctx, flags, text, n, emit);
    tok_call call = {ctx, emit, text};
    return t->base.xTokenize(t->inner, &call, flags, text, n, tok_word);
}

/* ---- lcm_forms: each word's stem, and the word as written beside it ----------------------
 * A stemmed index alone cannot rank "importing" above the many "import"s: both are the one
 * token "import". lcm_forms runs the stemming chain it is declared over ('lcm_forms porter
 * lcm') and, where a word's stem is not the word itself, adds the word as written (case
 * folded) at the same position, marked with STORE_EXACT_MARK: "importing" is indexed as "import"
 * and "\001importing". A query phrase starting with the mark is looked up that way (the
 * words after it folded but not stemmed), so recall can weigh the form written above its
 * other forms. Only ASCII words get the second token (the stemmer changes no other); a row's
 * length is its stems alone (FTS5 counts no colocated token), so bm25 is unchanged. */

typedef struct tok_forms {
    fts5_tokenizer stem_api, base_api;
    Fts5Tokenizer *stem; /* the declared chain: stems */
    Fts5Tokenizer *base; /* the chain under the stemmer: words as written, folded */
} tok_forms;

typedef struct tok_forms_call {
    void *ctx;
    int (*emit)(void *ctx, int tflags, const char *token, int n, int start, int end);
    const char *text;
    int n;
} tok_forms_call;

static void tok_forms_delete(Fts5Tokenizer *p)
{
    tok_forms *f = (tok_forms *)p;
    if (!f) return;
    if (f->stem) f->stem_api.xDelete(f->stem);
    if (f->base) f->base_api.xDelete(f->base);
    free(f);
}

/* argv: the stemming tokenizer and its arguments ("porter", "lcm", ...); the base is the
 * stemmer's own first argument with the rest. */
static int tok_forms_create(void *ud, const char **argv, int argc, Fts5Tokenizer **out)
{
    static const char *dflt[] = {"porter", "lcm"};
    fts5_api *api = ud;
    void *sud = NULL, *bud = NULL;
    tok_forms *f = calloc(1, sizeof *f);
    int rc;
    *out = NULL;
    if (!f) return SQLITE_NOMEM;
    if (argc < 2) {
        argv = dflt;
        argc = 2;
    }
    rc = api->xFindTokenizer(api, argv[0], &sud, &f->stem_api);
    if (rc == SQLITE_OK) rc = f->stem_api.xCreate(sud, argv + 1, argc - 1, &f->stem);
    if (rc == SQLITE_OK) rc = api->xFindTokenizer(api, argv[1], &bud, &f->base_api);
    if (rc == SQLITE_OK) rc = f->base_api.xCreate(bud, argv + 2, argc - 2, &f->base);
    if (rc != SQLITE_OK) {
        tok_forms_delete((Fts5Tokenizer *)f);
        return rc;
    }
    *out = (Fts5Tokenizer *)f;
    return SQLITE_OK;
}

/* The word at src[0..len) folded and marked, at the stem's position; nothing when it is not
 * ASCII (apart from the hot path: it needs a buffer). */
static __attribute__((noinline)) int tok_forms_exact(tok_forms_call *call, const unsigned char *src, int len,
                                                     int start, int end)
{
    char word[STORE_EXACT_MAX + 2];
    word[0] = STORE_EXACT_MARK;
    for (int i = 0; i < len; i++) {
        if (src[i] >= 0x80) return SQLITE_OK;
        word[1 + i] = (char)(src[i] >= 'A' && src[i] <= 'Z' ? src[i] + 32 : src[i]);
    }
    return call->emit(call->ctx, FTS5_TOKEN_COLOCATED, word, len + 1, start, end);
}

/* A stem from the chain, then, when the ASCII word it came from folds to something else,
 * that word marked, at the same position. */
static int tok_forms_doc(void *ud, int tflags, const char *token, int n, int start, int end)
{
    tok_forms_call *call = ud;
    int rc = call->emit(call->ctx, tflags, token, n, start, end);
    int len = end - start;
    /* The stemmer leaves a word under three letters alone. */
    if (rc != SQLITE_OK || (tflags & FTS5_TOKEN_COLOCATED) || len < 3 || len > STORE_EXACT_MAX || start < 0 ||
        end > call->n)
        return rc;
    const unsigned char *src = (const unsigned char *)call->text + start;
    if (len == n) {
        /* Most words are their own stem: compared in place. The word's bytes are letters and
         * digits, so an ASCII one folds with the 0x20 bit (a digit has it already). */
        int i = 0;
        while (i < len && src[i] < 0x80 && (src[i] | 0x20) == (unsigned char)token[i]) i++;
        if (i == len) return rc;
    }
    return tok_forms_exact(call, src, len, start, end);
}

/* A query phrase's folded words, each marked (the phrase started with STORE_EXACT_MARK). */
static int tok_forms_query_exact(void *ud, int tflags, const char *token, int n, int start, int end)
{
    tok_forms_call *call = ud;
    char word[STORE_EXACT_MAX + 2];
    if (n > STORE_EXACT_MAX) return call->emit(call->ctx, tflags, token, n, start, end);
    word[0] = STORE_EXACT_MARK;
    memcpy(word + 1, token, (size_t)n);
    return call->emit(call->ctx, tflags, word, n + 1, start, end);
}

static int tok_forms_tokenize(Fts5Tokenizer *p, void *ctx, int flags, const char *text, int n,
                              int (*emit)(void *, int, const char *, int, int, int))
{
    tok_forms *f = (tok_forms *)p;
    tok_forms_call call = {ctx, emit, text, n};
    if ((flags & FTS5_TOKENIZE_QUERY) && n > 0 && text[0] == STORE_EXACT_MARK)
        return f->base_api.xTokenize(f->base, &call, flags, text + 1, n - 1, tok_forms_query_exact);
    if (!(flags & FTS5_TOKENIZE_DOCUMENT)) return f->stem_api.xTokenize(f->stem, ctx, flags, text, n, emit);
    return f->stem_api.xTokenize(f->stem, &call, flags, text, n, tok_forms_doc);
}

/* lcm_cols(table): the columns holding this row's matched phrases, as a bit mask. */
static void tok_cols(const Fts5ExtensionApi *api, Fts5Context *fts, sqlite3_context *ctx, int argc,
                     sqlite3_value **argv)
{
    int n = 0, mask = 0;
    (void)argc;
    (void)argv;
    if (api->xInstCount(fts, &n) != SQLITE_OK) {
        sqlite3_result_error(ctx, "lcm_cols: the index holds no positions", -1);
        return;
    }
    for (int i = 0; i < n; i++) {
        int phrase, col, off;
        if (api->xInst(fts, i, &phrase, &col, &off) == SQLITE_OK && col >= 0 && col < 31) mask |= 1 << col;
    }
    sqlite3_result_int(ctx, mask);
}

/* The connection's FTS5 API (NULL: the library has no FTS5). */
static fts5_api *tok_api(sqlite3 *db)
{
    fts5_api *api = NULL;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT fts5(?1)", -1, &st, NULL) != SQLITE_OK) return NULL;
    sqlite3_bind_pointer(st, 1, (void *)&api, "fts5_api_ptr", NULL);
    sqlite3_step(st);
    sqlite3_finalize(st);
    return api;
}

int store_sqlite_tok_register(sqlite3 *db, char **err)
{
    static fts5_tokenizer lcm = {tok_create, tok_delete, tok_tokenize};
    static fts5_tokenizer forms = {tok_forms_create, tok_forms_delete, tok_forms_tokenize};
    fts5_api *api = tok_api(db);
    /* the probe's statement could not be made for want of memory: no verdict on FTS5 */
    if (!api && (sqlite3_errcode(db) & 0xff) == SQLITE_NOMEM)
        return lc_errf(err, LC_NOMEM, "store: out of memory registering the full-text tokenizer");
    if (!api || api->iVersion < 2)
        return lc_errf(err, LC_ERR, "store: this SQLite library has no usable FTS5 (full-text search)");
    if (api->xCreateTokenizer(api, "lcm", api, &lcm, NULL) != SQLITE_OK ||
        api->xCreateTokenizer(api, "lcm_forms", api, &forms, NULL) != SQLITE_OK ||
        api->xCreateFunction(api, "lcm_cols", NULL, tok_cols, NULL) != SQLITE_OK)
        return lc_errf(err, LC_ERR, "store: cannot register the full-text tokenizer: %s", sqlite3_errmsg(db));
    return LC_OK;
}
