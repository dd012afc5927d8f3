/*
 * util.h -- small shared mechanisms of the engine: a growable string buffer and array
 * growth, the caller-owned error string, durable file writes (temp + fsync + rename), the
 * clocks and the FNV hash.
 * Everything here is host-independent and used by every other engine module.
 */
#ifndef LC_UTIL_H
#define LC_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <sys/types.h>

/* Status codes of engine functions (0 = success, like ap_status). */
enum { LC_OK = 0, LC_ERR = 1, LC_NOMEM = 2, LC_INVALID = 3, LC_NOTFOUND = 4, LC_BUSY = 7,
       /* the caller gave the work up (a stop, results that no longer apply); engine-internal:
        * it never crosses the ABI */
       LC_CANCELLED = 8,
       /* the home's lcm.json `exclude` names the session's folder: nothing of it is stored
        * (store_open), which is no failure */
       LC_EXCLUDED = 9 };

/* The context window (tokens) assumed while the host reports none: every zone, budget and
 * percentage is measured against it until a model with a known window is selected. */
#define LC_WINDOW_DEFAULT 128000L

/* A growable NUL-terminated byte buffer. A zeroed sbuf is empty and valid. */
typedef struct sbuf {
    char *p;
    size_t len;
    size_t cap;
    int oom; /* sticky: an append failed; the content is truncated */
} sbuf;

void sb_free(sbuf *b);
int sb_reserve(sbuf *b, size_t extra);
int sb_append(sbuf *b, const char *s, size_t n);
int sb_puts(sbuf *b, const char *s);
int sb_putc(sbuf *b, char c);
int sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Hand the buffer to the caller (NUL-terminated, never NULL unless OOM) and reset b. */
char *sb_detach(sbuf *b);

/* Set *err (if err != NULL) to a malloc'd formatted message, freeing any previous one.
 * Returns `code` so callers can write `return lc_errf(err, LC_INVALID, "...")`. */
int lc_errf(char **err, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Free each of the n pointers (NULL ones are skipped, as free() skips them). */
void lc_free_each(void *const *p, size_t n);
/* A destructor's (or a cleanup label's) owned pointers freed in one statement:
 * LC_FREE(x->a, x->b, x->c). C cannot walk a struct's members, so each destructor still
 * names its fields, but once, as a list, rather than one free() a line. Every argument is
 * read before any is freed, so a list may end with the struct that holds the others:
 * LC_FREE(x->a, x->b, x). */
#define LC_FREE(...)                                                                         \
    lc_free_each((void *const[]){__VA_ARGS__},                                               \
                 sizeof((void *const[]){__VA_ARGS__}) / sizeof(void *))

/* An integer read from JSON (a tool's argument, a server's answer): a number, or a string of
 * decimal digits after an optional '#' (ids are written "#12") and '-'. LC_OK and *out when
 * it is a whole number in [lo, hi]; LC_NOTFOUND when v is NULL; LC_INVALID for anything
 * else (1e300, 2^63, NaN, 1.5, "12x", a negative index): refused, never wrapped by a cast.
 * hi past LC_JSON_INT_MAX is not exact (a double's integers end there). */
struct cJSON;
#define LC_JSON_INT_MAX 9007199254740991LL /* 2^53 - 1 */
int lc_json_int(const struct cJSON *v, int64_t lo, int64_t hi, int64_t *out);

char *lc_strdup(const char *s);
char *lc_strndup(const char *s, size_t n);
char *lc_asprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Create a directory and its parents with `mode` (existing ones are left alone). */
int lc_mkdir_p(const char *path, mode_t mode, char **err);
/* Read a whole file; *out is malloc'd and NUL-terminated. LC_NOTFOUND if absent. */
int lc_read_file(const char *path, char **out, size_t *out_len, char **err);
/* Write a file durably and atomically: a hidden temp file in the same folder (created
 * O_EXCL | O_NOFOLLOW), fsync, rename, then fsync the folder. A reader sees the old or the
 * new file, never a partial one, and a symlink at either name is never written through. */
int lc_write_atomic(const char *path, const void *data, size_t len, mode_t mode, char **err);
/* The same atomic replace without the two fsyncs, for scratch files the plugin rewrites on
 * demand (the mirror before every request, withheld tool results): a crash may lose them,
 * never tear them, and two fsyncs per request cost more than the rest of the hook. */
int lc_write_scratch(const char *path, const void *data, size_t len, mode_t mode, char **err);

/* An ISO-8601 UTC timestamp ("2025-01-02T03:04:05.678Z", fraction optional) as epoch
 * milliseconds; -1 when it does not parse. */
long long lc_iso_ms(const char *iso);

/* s[0..len) as one line (malloc'd, NULL on OOM): whitespace runs folded to one space, none
 * leading, cut before the first character that would start past `max` bytes; *clipped (when
 * not NULL) says whether anything was cut. */
char *lc_fold_line(const char *s, size_t len, size_t max, int *clipped);

/* The next word at or after *p: a run of ASCII letters, digits, '_' and non-ASCII bytes (the
 * barewords of an FTS5 query); *len is its length and *p moves past it. NULL when no word is
 * left. */
const char *lc_next_word(const char **p, size_t *len);

/* Byte offset i of s moved back to the start of the UTF-8 sequence it falls inside (i
 * itself when it starts one), so a cut at it never splits a character. */
size_t lc_utf8_back(const char *s, size_t i);

/* Eight bytes at a time (SWAR): a text scan that looks at every byte of every message an
 * import stores tests a word for what it is after and goes byte by byte only where it hits.
 * w holds eight bytes as memcpy loads them. lc_word_has: a byte equal to c; lc_word_below: a
 * byte under n (n <= 128); lc_word_count80: how many bytes of a mask of 0x80 bits are set
 * (a multiply: a popcount builtin without -mpopcnt is a libgcc call). */
#define LC_WORD_ONES 0x0101010101010101ull
#define LC_WORD_TOPS 0x8080808080808080ull
static inline int lc_word_below(uint64_t w, unsigned n)
{
    return ((w - LC_WORD_ONES * n) & ~w & LC_WORD_TOPS) != 0;
}
static inline int lc_word_has(uint64_t w, unsigned char c)
{
    return lc_word_below(w ^ (LC_WORD_ONES * c), 1);
}
static inline unsigned lc_word_count80(uint64_t m)
{
    return (unsigned)(((m >> 7) * LC_WORD_ONES) >> 56);
}

/* 64-bit FNV-1a: the hash of the engine's dedup sets and id tables (fast on short keys,
 * stable across runs and builds, so a seed derived from it repeats). Its offset basis is
 * the one every copy of it here has used, 1469598103934665603 -- one digit short of the
 * published 14695981039346656037 -- so the hashes and seeds stay what they were. Not for
 * security. */
uint64_t lc_fnv1a(const void *data, size_t n);
uint64_t lc_fnv1a_str(const char *s); /* over strlen(s) bytes; NULL hashes as "" */

/* Monotonic milliseconds, for metrics. */
double lc_now_ms(void);
/* Wall-clock whole milliseconds since the epoch: the clock of every timestamp written down
 * (message timestamps, metrics rows, ids, locks, a lease's expiry other machines read). */
long long lc_epoch_ms(void);
/* `ms` (epoch milliseconds) as UTC in strftime `fmt`, malloc'd; `unknown` (copied) when ms
 * <= 0 or it cannot be formatted. NULL only on OOM. */
char *lc_utc_format(long long ms, const char *fmt, const char *unknown);

/* The array v (of `size`-byte elements, *cap of them allocated) with room for at least
 * `need`: the capacity doubles (from 16) until it fits. Returns the array, moved or not, or
 * NULL on OOM or overflow with v and *cap untouched. */
void *lc_grow(void *v, size_t *cap, size_t need, size_t size);

/* The CLOCK_REALTIME instant `ms` milliseconds from now, for pthread_cond_timedwait. */
struct timespec lc_deadline_in(double ms);

/* s[0..len) as text safe to hand to a model or a JSON writer (malloc'd, NULL on OOM):
 * invalid UTF-8 becomes U+FFFD; C0 and C1 control characters and DEL are dropped, except
 * '\n' and '\t' when `one_line` is 0; \v, \f, \r, U+0085, U+2028 and U+2029 (which
 * some readers take as line breaks) become a space, and with `one_line` so do '\n' and
 * '\t'. Stored text is kept verbatim; this is for what leaves the store. */
char *lc_text_clean(const char *s, size_t len, int one_line);

#endif
