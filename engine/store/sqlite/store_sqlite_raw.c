/*
 * store_sqlite_raw.c -- how the SQLite backend keeps a message's verbatim JSON small: the
 * long string values of the JSON that the row already holds (in its derived text, or in
 * its payload) become references into those columns, and what is left (keys, ids, short
 * strings, numbers) is deflated when that pays. The bytes come back exactly: a string is
 * referenced only when writing the referenced bytes again, escaped the one way JSON
 * writers of session files escape (JSON.stringify, cJSON), gives the very same bytes.
 *
 * A packed value is a BLOB (a verbatim one stays TEXT, as rows of older stores are):
 *   byte 0   STORE_RAW_PLAIN (ops follow as they are) or STORE_RAW_DEFLATE (raw deflate)
 *   varint   the length of the JSON
 *   ops      each a varint (len << 2 | kind), then for kind
 *              0 (literal): len bytes
 *              1 (text):    varint offset; the text's bytes [offset, offset + len), escaped
 *              2 (payload): varint offset; the payload's bytes [offset, offset + len) as they are
 */
#include "store_sqlite_raw.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>
#include <zlib.h>

#include "util.h"

#define STORE_RAW_PLAIN 1
#define STORE_RAW_DEFLATE 2
/* Shorter strings stay literal: a reference costs about as much. */
#define STORE_RAW_MIN_REF 24
/* Ops shorter than this are kept plain. What is left of a message once its strings are
 * references is mostly a few hundred bytes of keys, ids and numbers; zlib's fixed cost
 * per call (its block's Huffman trees) made deflating those 13% of an import's CPU for 4%
 * of the store's size, so only a large residue (strings the row does not hold) pays. */
#define STORE_RAW_DEFLATE_FROM 2048

enum { STORE_RAW_LIT = 0, STORE_RAW_TEXT = 1, STORE_RAW_PAYLOAD = 2 };

struct store_sqlite_raw {
    z_stream z;
    int z_ready;
    unsigned char *ops; /* the op stream being built */
    size_t ops_len, ops_cap;
    char *dec; /* a string value, unescaped */
    size_t dec_cap;
    unsigned char *out;
    size_t out_cap;
    int oom;
};

store_sqlite_raw *store_sqlite_raw_new(void) { return calloc(1, sizeof(store_sqlite_raw)); }

void store_sqlite_raw_free(store_sqlite_raw *p)
{
    if (!p) return;
    if (p->z_ready) deflateEnd(&p->z);
    LC_FREE(p->ops, p->dec, p->out, p);
}

static int store_raw_grow(unsigned char **buf, size_t *cap, size_t need)
{
    if (need <= *cap) return 1;
    size_t c = *cap ? *cap : 1024;
    while (c < need) c *= 2;
    unsigned char *n = realloc(*buf, c);
    if (!n) return 0;
    *buf = n;
    *cap = c;
    return 1;
}

static void store_raw_put(store_sqlite_raw *p, const void *b, size_t n)
{
    if (p->oom || !store_raw_grow(&p->ops, &p->ops_cap, p->ops_len + n)) {
        p->oom = 1;
        return;
    }
    memcpy(p->ops + p->ops_len, b, n);
    p->ops_len += n;
}

static void store_raw_varint(store_sqlite_raw *p, uint64_t v)
{
    unsigned char b[10];
    size_t n = 0;
    do {
        b[n] = (unsigned char)(v & 0x7f);
        v >>= 7;
        if (v) b[n] |= 0x80;
        n++;
    } while (v);
    store_raw_put(p, b, n);
}

static void store_raw_literal(store_sqlite_raw *p, const char *b, size_t n)
{
    if (!n) return;
    store_raw_varint(p, (uint64_t)n << 2 | STORE_RAW_LIT);
    store_raw_put(p, b, n);
}

static void store_raw_ref(store_sqlite_raw *p, int kind, size_t off, size_t n)
{
    store_raw_varint(p, (uint64_t)n << 2 | (uint64_t)kind);
    store_raw_varint(p, off);
}

/* The one escape for a byte inside a JSON string: the short forms for the five that
 * have one, \u00xx (lower-case) for the other control bytes, every other byte as is. */
static size_t store_raw_escape_byte(unsigned char c, char out[6])
{
    static const char hex[] = "0123456789abcdef";
    switch (c) {
    case '"': memcpy(out, "\\\"", 2); return 2;
    case '\\': memcpy(out, "\\\\", 2); return 2;
    case '\b': memcpy(out, "\\b", 2); return 2;
    case '\f': memcpy(out, "\\f", 2); return 2;
    case '\n': memcpy(out, "\\n", 2); return 2;
    case '\r': memcpy(out, "\\r", 2); return 2;
    case '\t': memcpy(out, "\\t", 2); return 2;
    default:
        if (c < 0x20) {
            memcpy(out, "\\u00", 4);
            out[4] = hex[c >> 4];
            out[5] = hex[c & 15];
            return 6;
        }
        out[0] = (char)c;
        return 1;
    }
}

static int store_raw_hex(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1; /* upper case is not the form store_raw_escape_byte writes */
}

/* Unescape a string's body into p->dec, only when escaping it again gives the body back
 * byte for byte; 0 when it would not (\/, \u beyond control bytes, upper-case hex, a
 * long form where a short one exists, a raw control byte). */
static int store_raw_unescape(store_sqlite_raw *p, const char *b, size_t n, size_t *out_len)
{
    if (!store_raw_grow((unsigned char **)&p->dec, &p->dec_cap, n + 1)) {
        p->oom = 1;
        return 0;
    }
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        /* Runs without an escape or a control byte (most of a string) go eight bytes at a
         * time: every long string of every message stored passes here. */
        for (uint64_t w; i + 8 <= n; i += 8, o += 8) {
            memcpy(&w, b + i, 8);
            if (lc_word_has(w, '\\') || lc_word_below(w, 0x20)) break;
            memcpy(p->dec + o, &w, 8);
        }
        if (i >= n) break;
        unsigned char c = (unsigned char)b[i];
        if (c < 0x20) return 0;
        if (c != '\\') {
            p->dec[o++] = (char)c;
            continue;
        }
        if (++i >= n) return 0;
        switch (b[i]) {
        case '"': c = '"'; break;
        case '\\': c = '\\'; break;
        case 'b': c = '\b'; break;
        case 'f': c = '\f'; break;
        case 'n': c = '\n'; break;
        case 'r': c = '\r'; break;
        case 't': c = '\t'; break;
        case 'u': {
            if (i + 4 >= n || b[i + 1] != '0' || b[i + 2] != '0') return 0;
            int hi = store_raw_hex(b[i + 3]), lo = store_raw_hex(b[i + 4]);
            if (hi < 0 || lo < 0 || hi > 1) return 0;
            c = (unsigned char)(hi << 4 | lo);
            if (c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t') return 0;
            i += 4;
            break;
        }
        default: return 0;
        }
        p->dec[o++] = (char)c;
    }
    *out_len = o;
    return 1;
}

/* Where `d` (n bytes) sits in `hay`, looked for at the cursor first (the strings of a
 * message come in the order its text was built from them), then after it, then before. */
static int store_raw_find(const char *hay, size_t hlen, size_t *cursor, const char *d, size_t n, size_t *at)
{
    size_t c = *cursor <= hlen ? *cursor : hlen;
    const char *f = NULL;
    if (n > hlen) return 0;
    if (c + n <= hlen && memcmp(hay + c, d, n) == 0) f = hay + c;
    if (!f) f = memmem(hay + c, hlen - c, d, n);
    if (!f && c > 0) f = memmem(hay, c + n - 1 < hlen ? c + n - 1 : hlen, d, n);
    if (!f) return 0;
    *at = (size_t)(f - hay);
    *cursor = *at + n;
    return 1;
}

static int store_raw_deflate(store_sqlite_raw *p, size_t hdr)
{
    if (!p->z_ready) {
        /* Level 1 and a small hash: level 6 saved 2% more for twice the time, and a reset
         * clears the whole hash table (64 KB at the default memLevel) for every row. */
        if (deflateInit2(&p->z, 1, Z_DEFLATED, -15, 3, Z_DEFAULT_STRATEGY) != Z_OK) return 0;
        p->z_ready = 1;
    } else if (deflateReset(&p->z) != Z_OK) {
        return 0;
    }
    size_t bound = deflateBound(&p->z, (uLong)p->ops_len);
    if (!store_raw_grow(&p->out, &p->out_cap, hdr + bound)) return 0;
    p->z.next_in = p->ops;
    p->z.avail_in = (uInt)p->ops_len;
    p->z.next_out = p->out + hdr;
    p->z.avail_out = (uInt)bound;
    if (deflate(&p->z, Z_FINISH) != Z_STREAM_END) return 0;
    return (int)(hdr + (bound - p->z.avail_out) <= p->out_cap);
}

int store_sqlite_raw_pack(store_sqlite_raw *p, const char *json, size_t len, const char *text, size_t tlen,
                          const char *payload, size_t plen, const unsigned char **out, size_t *out_len, char **err)
{
    size_t lit = 0, tcur = 0, pcur = 0;
    p->ops_len = 0;
    p->oom = 0;
    for (size_t i = 0; i < len;) {
        const char *q = memchr(json + i, '"', len - i);
        if (!q) break;
        size_t body = (size_t)(q - json) + 1, j = body;
        /* The closing quote: the next one not escaped (an odd run of backslashes before it). */
        for (;;) {
            const char *e = j < len ? memchr(json + j, '"', len - j) : NULL;
            if (!e) {
                j = len;
                break;
            }
            j = (size_t)(e - json);
            size_t bs = 0;
            while (j - bs > body && json[j - bs - 1] == '\\') bs++;
            if (bs % 2 == 0) break;
            j++;
        }
        if (j >= len) break; /* unterminated: the rest stays literal */
        size_t n = j - body, at = 0, dn = 0;
        if (n >= STORE_RAW_MIN_REF) {
            int kind = -1;
            const char *d = json + body;
            if (memchr(d, '\\', n) == NULL) {
                dn = n;
                size_t k = 0;
                for (uint64_t w; k + 8 <= n; k += 8) {
                    memcpy(&w, d + k, 8);
                    if (lc_word_below(w, 0x20)) break;
                }
                for (; k < n && dn; k++)
                    if ((unsigned char)d[k] < 0x20) dn = 0;
            } else if (store_raw_unescape(p, d, n, &dn)) {
                d = p->dec;
            } else {
                dn = 0;
            }
            if (dn && store_raw_find(text, tlen, &tcur, d, dn, &at)) kind = STORE_RAW_TEXT;
            else if (payload && store_raw_find(payload, plen, &pcur, json + body, n, &at)) kind = STORE_RAW_PAYLOAD;
            if (kind >= 0) {
                store_raw_literal(p, json + lit, body - lit);
                store_raw_ref(p, kind, at, kind == STORE_RAW_TEXT ? dn : n);
                lit = j;
            }
        }
        i = j + 1;
    }
    store_raw_literal(p, json + lit, len - lit);
    if (p->oom) return lc_errf(err, LC_NOMEM, "store: out of memory");

    unsigned char hdr[11] = {STORE_RAW_PLAIN};
    size_t h = 1;
    for (uint64_t v = len;; v >>= 7) {
        hdr[h++] = (unsigned char)((v & 0x7f) | (v >> 7 ? 0x80 : 0));
        if (!(v >> 7)) break;
    }
    size_t total = 0;
    if (p->ops_len >= STORE_RAW_DEFLATE_FROM && store_raw_deflate(p, h)) {
        total = h + (size_t)p->z.total_out;
        if (total < h + p->ops_len) hdr[0] = STORE_RAW_DEFLATE;
    }
    if (hdr[0] != STORE_RAW_DEFLATE) {
        if (!store_raw_grow(&p->out, &p->out_cap, h + p->ops_len)) return lc_errf(err, LC_NOMEM, "store: out of memory");
        hdr[0] = STORE_RAW_PLAIN;
        memcpy(p->out + h, p->ops, p->ops_len);
        total = h + p->ops_len;
    }
    memcpy(p->out, hdr, h);
    *out = p->out;
    *out_len = total;
    return LC_OK;
}

static int store_raw_get_varint(const unsigned char *b, size_t n, size_t *pos, uint64_t *v)
{
    *v = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        if (*pos >= n) return 0;
        unsigned char c = b[(*pos)++];
        *v |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) return 1;
    }
    return 0;
}

int store_sqlite_raw_unpack(const unsigned char *blob, size_t n, const char *text, size_t tlen,
                            const char *payload, size_t plen, char **out, size_t *out_len, char **err)
{
    unsigned char *ops = NULL;
    char *json = NULL;
    size_t pos = 1, olen = 0, w = 0;
    uint64_t len = 0;
    int rc = LC_OK;
    *out = NULL;
    if (n < 2 || (blob[0] != STORE_RAW_PLAIN && blob[0] != STORE_RAW_DEFLATE) ||
        !store_raw_get_varint(blob, n, &pos, &len) || len > (uint64_t)SIZE_MAX / 8) {
        rc = lc_errf(err, LC_ERR, "store: a message's stored JSON is not in a known form");
        goto done;
    }
    const unsigned char *o = blob + pos;
    olen = n - pos;
    if (blob[0] == STORE_RAW_DEFLATE) {
        /* The ops are at most the JSON's length plus their varints: a bound to inflate into. */
        size_t cap = (size_t)len + (size_t)len / 2 + 64;
        z_stream z;
        memset(&z, 0, sizeof z);
        if (!(ops = malloc(cap))) {
            rc = lc_errf(err, LC_NOMEM, "store: out of memory");
            goto done;
        }
        if (inflateInit2(&z, -15) != Z_OK) {
            rc = lc_errf(err, LC_NOMEM, "store: out of memory");
            goto done;
        }
        z.next_in = (unsigned char *)o;
        z.avail_in = (uInt)olen;
        z.next_out = ops;
        z.avail_out = (uInt)cap;
        int zr = inflate(&z, Z_FINISH);
        olen = cap - z.avail_out;
        inflateEnd(&z);
        if (zr != Z_STREAM_END) {
            rc = lc_errf(err, LC_ERR, "store: a message's stored JSON does not inflate");
            goto done;
        }
        o = ops;
    }
    if (!(json = malloc((size_t)len + 1))) {
        rc = lc_errf(err, LC_NOMEM, "store: out of memory");
        goto done;
    }
    for (size_t q = 0; q < olen && rc == LC_OK;) {
        uint64_t tag = 0, off = 0;
        if (!store_raw_get_varint(o, olen, &q, &tag)) break;
        size_t k = (size_t)(tag >> 2);
        int kind = (int)(tag & 3);
        if (kind != STORE_RAW_LIT && !store_raw_get_varint(o, olen, &q, &off)) break;
        const char *src = kind == STORE_RAW_LIT ? (const char *)o + q : kind == STORE_RAW_TEXT ? text : payload;
        size_t have = kind == STORE_RAW_LIT ? olen - q : kind == STORE_RAW_TEXT ? tlen : plen;
        if (kind == STORE_RAW_LIT) off = 0;
        if (!src || kind > STORE_RAW_PAYLOAD || off > have || k > have - off) {
            rc = lc_errf(err, LC_ERR, "store: a message's stored JSON refers past its row");
            break;
        }
        if (kind == STORE_RAW_TEXT) {
            for (size_t i = 0; i < k && rc == LC_OK; i++) {
                char e[6];
                size_t en = store_raw_escape_byte((unsigned char)src[off + i], e);
                if (w + en > len) rc = lc_errf(err, LC_ERR, "store: a message's stored JSON is longer than it says");
                else memcpy(json + w, e, en), w += en;
            }
        } else if (w + k > len) {
            rc = lc_errf(err, LC_ERR, "store: a message's stored JSON is longer than it says");
        } else {
            memcpy(json + w, src + off, k);
            w += k;
        }
        if (kind == STORE_RAW_LIT) q += k;
    }
    if (rc == LC_OK && w != len) rc = lc_errf(err, LC_ERR, "store: a message's stored JSON is cut short");
    if (rc == LC_OK) {
        json[w] = '\0';
        *out = json;
        *out_len = w;
        json = NULL;
    }
done:
    free(ops);
    free(json);
    return rc;
}

int store_sqlite_raw_column(sqlite3_stmt *st, int raw_col, int text_col, int payload_col, char **out,
                            size_t *out_len, char **err)
{
    *out = NULL;
    *out_len = 0;
    if (sqlite3_column_type(st, raw_col) != SQLITE_BLOB) {
        const char *v = (const char *)sqlite3_column_text(st, raw_col);
        size_t n = (size_t)sqlite3_column_bytes(st, raw_col);
        if (!(*out = lc_strndup(v ? v : "", n))) return lc_errf(err, LC_NOMEM, "store: out of memory");
        *out_len = n;
        return LC_OK;
    }
    const unsigned char *b = sqlite3_column_blob(st, raw_col);
    size_t n = (size_t)sqlite3_column_bytes(st, raw_col);
    const char *text = (const char *)sqlite3_column_text(st, text_col);
    size_t tlen = (size_t)sqlite3_column_bytes(st, text_col);
    const char *payload = NULL;
    size_t plen = 0;
    if (payload_col >= 0 && sqlite3_column_type(st, payload_col) != SQLITE_NULL) {
        payload = (const char *)sqlite3_column_text(st, payload_col);
        plen = (size_t)sqlite3_column_bytes(st, payload_col);
    }
    return store_sqlite_raw_unpack(b, n, text ? text : "", tlen, payload, plen, out, out_len, err);
}
