/*
 * util.c -- string buffer, array growth, error strings, durable atomic file writes and the
 * clocks (see util.h).
 */
#include "util.h"

#include <ctype.h>
#include <math.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

void sb_free(sbuf *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
    b->oom = 0;
}

void lc_free_each(void *const *p, size_t n)
{
    for (size_t i = 0; i < n; i++) free(p[i]);
}

int sb_reserve(sbuf *b, size_t extra)
{
    if (b->oom) return LC_NOMEM;
    if (b->len + extra + 1 <= b->cap) return LC_OK;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->len + extra + 1) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
        b->oom = 1;
        return LC_NOMEM;
    }
    b->p = p;
    b->cap = cap;
    return LC_OK;
}

int sb_append(sbuf *b, const char *s, size_t n)
{
    if (sb_reserve(b, n) != LC_OK) return LC_NOMEM;
    if (n) memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
    return LC_OK;
}

int sb_puts(sbuf *b, const char *s) { return sb_append(b, s, strlen(s)); }

int sb_putc(sbuf *b, char c) { return sb_append(b, &c, 1); }

int sb_printf(sbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char tmp[256];
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    int rc;
    if (n < 0) {
        rc = LC_ERR;
    } else if ((size_t)n < sizeof tmp) {
        rc = sb_append(b, tmp, (size_t)n);
    } else if ((rc = sb_reserve(b, (size_t)n)) == LC_OK) {
        vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap2);
        b->len += (size_t)n;
    }
    va_end(ap2);
    return rc;
}

char *sb_detach(sbuf *b)
{
    if (b->oom) {
        sb_free(b);
        return NULL;
    }
    char *p = b->p ? b->p : lc_strdup("");
    b->p = NULL;
    b->len = b->cap = 0;
    return p;
}

int lc_errf(char **err, int code, const char *fmt, ...)
{
    if (!err) return code;
    va_list ap;
    va_start(ap, fmt);
    char *msg = NULL;
    if (vasprintf(&msg, fmt, ap) < 0) msg = NULL;
    va_end(ap);
    free(*err);
    *err = msg;
    return code;
}

char *lc_strdup(const char *s) { return s ? strdup(s) : NULL; }

char *lc_strndup(const char *s, size_t n)
{
    char *p = malloc(n + 1);
    if (!p) return NULL;
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

char *lc_asprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *p = NULL;
    if (vasprintf(&p, fmt, ap) < 0) p = NULL;
    va_end(ap);
    return p;
}

int lc_mkdir_p(const char *path, mode_t mode, char **err)
{
    char *p = lc_strdup(path);
    if (!p) return LC_NOMEM;
    int rc = LC_OK;
    for (char *s = p + 1;; s++) {
        if (*s == '/' || *s == '\0') {
            char c = *s;
            *s = '\0';
            if (mkdir(p, mode) != 0 && errno != EEXIST) {
                rc = lc_errf(err, LC_ERR, "cannot create folder %s: %s", p, strerror(errno));
                goto done;
            }
            *s = c;
            if (c == '\0') break;
        }
    }
done:
    free(p);
    return rc;
}

int lc_read_file(const char *path, char **out, size_t *out_len, char **err)
{
    int rc = LC_OK;
    sbuf b = {0};
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return lc_errf(err, errno == ENOENT ? LC_NOTFOUND : LC_ERR, "cannot open %s: %s", path,
                       strerror(errno));
    }
    for (;;) {
        if (sb_reserve(&b, 65536) != LC_OK) {
            rc = lc_errf(err, LC_NOMEM, "out of memory reading %s", path);
            goto done;
        }
        ssize_t n = read(fd, b.p + b.len, b.cap - b.len - 1);
        if (n < 0) {
            if (errno == EINTR) continue;
            rc = lc_errf(err, LC_ERR, "cannot read %s: %s", path, strerror(errno));
            goto done;
        }
        if (n == 0) break;
        b.len += (size_t)n;
        b.p[b.len] = '\0';
    }
    if (out_len) *out_len = b.len;
    *out = sb_detach(&b);
done:
    close(fd);
    sb_free(&b);
    return rc;
}

static int util_write_atomic(const char *path, const void *data, size_t len, mode_t mode,
                             int durable, char **err)
{
    int rc = LC_OK;
    int fd = -1;
    char *dir = lc_strdup(path);
    const char *slash0 = strrchr(path, '/');
    char *tmp = slash0 ? lc_asprintf("%.*s/.%s.tmp.%ld", (int)(slash0 - path), path, slash0 + 1,
                                     (long)getpid())
                       : lc_asprintf(".%s.tmp.%ld", path, (long)getpid());
    if (!tmp || !dir) {
        rc = lc_errf(err, LC_NOMEM, "out of memory");
        goto done;
    }
    /* Whatever sits at the temp name (a leftover, or a planted symlink) goes; O_EXCL and
     * O_NOFOLLOW then guarantee the bytes land in a file this call created. The rename
     * replaces a symlink at `path`; it never writes through it. */
    unlink(tmp);
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd < 0) {
        rc = lc_errf(err, LC_ERR, "cannot create %s: %s", tmp, strerror(errno));
        goto done;
    }
    const char *p = data;
    size_t left = len;
    while (left > 0) {
        ssize_t n = write(fd, p, left);
        if (n < 0) {
            if (errno == EINTR) continue;
            rc = lc_errf(err, LC_ERR, "cannot write %s: %s", tmp, strerror(errno));
            goto done;
        }
        p += n;
        left -= (size_t)n;
    }
    if ((durable && fsync(fd) != 0) || close(fd) != 0) {
        fd = -1;
        rc = lc_errf(err, LC_ERR, "cannot flush %s: %s", tmp, strerror(errno));
        goto done;
    }
    fd = -1;
    if (rename(tmp, path) != 0) {
        rc = lc_errf(err, LC_ERR, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
        goto done;
    }
    char *slash = durable ? strrchr(dir, '/') : NULL;
    if (slash) {
        *slash = '\0';
        int dfd = open(slash == dir ? "/" : dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd >= 0) {
            (void)fsync(dfd);
            close(dfd);
        }
    }
done:
    if (fd >= 0) close(fd);
    if (rc != LC_OK && tmp) unlink(tmp);
    free(tmp);
    free(dir);
    return rc;
}

int lc_write_atomic(const char *path, const void *data, size_t len, mode_t mode, char **err)
{
    return util_write_atomic(path, data, len, mode, 1, err);
}

int lc_write_scratch(const char *path, const void *data, size_t len, mode_t mode, char **err)
{
    return util_write_atomic(path, data, len, mode, 0, err);
}

/* The digits of a "YYYY-MM-DDTHH:MM:SS" stamp into its six fields, or 0 when it is not one
 * exactly (sscanf and timegm take what is not, as before). */
static int lc_iso_fields(const char *p, int v[6])
{
    static const int width[6] = {4, 2, 2, 2, 2, 2};
    static const char after[6] = {'-', '-', 'T', ':', ':', 0};
    for (int f = 0; f < 6; f++) {
        v[f] = 0;
        for (int k = 0; k < width[f]; k++, p++) {
            if (*p < '0' || *p > '9') return 0;
            v[f] = v[f] * 10 + (*p - '0');
        }
        if (after[f] && *p++ != after[f]) return 0;
    }
    return v[1] >= 1 && v[1] <= 12;
}

/* Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar (any day of month,
 * as timegm counts on past a month's end). */
static long long lc_days_from_civil(int y, int m, int d)
{
    y -= m <= 2;
    long long era = (y >= 0 ? y : y - 399) / 400;
    long long yoe = y - era * 400;
    long long doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    long long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

long long lc_iso_ms(const char *iso)
{
    int y, mo, d, h, mi, s, ms = 0, used = 0, v[6];
    if (!iso) return -1;
    /* Every entry of an imported transcript has a stamp: the plain digits are read here,
     * sscanf's scan of them was a percent of an import. */
    int plain = lc_iso_fields(iso, v);
    if (plain) {
        used = 19;
        y = v[0], mo = v[1], d = v[2], h = v[3], mi = v[4], s = v[5];
    } else if (sscanf(iso, "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &s, &used) != 6) {
        return -1;
    }
    if (iso[used] == '.') {
        int digits = 0;
        for (const char *p = iso + used + 1; *p >= '0' && *p <= '9'; p++, digits++)
            if (digits < 3) ms = ms * 10 + (*p - '0');
        for (; digits > 0 && digits < 3; digits++) ms *= 10;
    }
    if (plain) /* timegm's sum, without its time-zone lock */
        return ((lc_days_from_civil(y, mo, d) * 24 + h) * 60 + mi) * 60000LL + s * 1000LL + ms;
    struct tm tm = {0};
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = s;
    return (long long)timegm(&tm) * 1000 + ms;
}

struct timespec lc_deadline_in(double ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    long long ns = (long long)ts.tv_nsec + (long long)(ms > 0 ? ms * 1e6 : 0);
    ts.tv_sec += (time_t)(ns / 1000000000LL);
    ts.tv_nsec = (long)(ns % 1000000000LL);
    return ts;
}

void *lc_grow(void *v, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap) return v;
    size_t nc = *cap ? *cap : 16;
    while (nc < need) {
        if (nc > SIZE_MAX / 2) return NULL;
        nc *= 2;
    }
    if (size && nc > SIZE_MAX / size) return NULL;
    void *nv = realloc(v, nc * size);
    if (nv) *cap = nc;
    return nv;
}

char *lc_fold_line(const char *s, size_t len, size_t max, int *clipped)
{
    sbuf b = {0};
    int space = 0;
    if (clipped) *clipped = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == ' ' || c == '\n' || c == '\t' || c == '\r') {
            space = b.len > 0;
            continue;
        }
        if (b.len >= max && (c & 0xC0) != 0x80) {
            if (clipped) *clipped = 1;
            break;
        }
        if (space) sb_putc(&b, ' ');
        space = 0;
        sb_putc(&b, (char)c);
    }
    return sb_detach(&b);
}

static int lc_word_byte(unsigned char c) { return isalnum(c) || c == '_' || c >= 0x80; }

const char *lc_next_word(const char **p, size_t *len)
{
    const char *s = *p;
    while (*s && !lc_word_byte((unsigned char)*s)) s++;
    const char *e = s;
    while (*e && lc_word_byte((unsigned char)*e)) e++;
    *p = e;
    *len = (size_t)(e - s);
    return e > s ? s : NULL;
}

size_t lc_utf8_back(const char *s, size_t i)
{
    while (i > 0 && ((unsigned char)s[i] & 0xC0) == 0x80) i--;
    return i;
}

long long lc_epoch_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

double lc_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

#define LC_FNV_OFFSET 1469598103934665603ULL /* see util.h: not the published basis */
#define LC_FNV_PRIME 1099511628211ULL

uint64_t lc_fnv1a(const void *data, size_t n)
{
    const unsigned char *p = data;
    uint64_t h = LC_FNV_OFFSET;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * LC_FNV_PRIME;
    return h;
}

uint64_t lc_fnv1a_str(const char *s)
{
    uint64_t h = LC_FNV_OFFSET;
    for (; s && *s; s++) h = (h ^ (unsigned char)*s) * LC_FNV_PRIME;
    return h;
}

char *lc_utc_format(long long ms, const char *fmt, const char *unknown)
{
    char buf[64];
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    if (ms <= 0 || !gmtime_r(&t, &tm) || !strftime(buf, sizeof buf, fmt, &tm)) return lc_strdup(unknown);
    return lc_strdup(buf);
}

/* The length of the valid UTF-8 sequence at s[0..n) and its code point, 0 when invalid
 * (overlong forms, surrogates and values past U+10FFFF are invalid). */
static size_t lc_utf8_decode(const unsigned char *s, size_t n, unsigned *cp)
{
    unsigned c = s[0];
    size_t need = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
    if (!need || need > n) return 0;
    unsigned v = need == 1 ? c : need == 2 ? c & 0x1F : need == 3 ? c & 0x0F : c & 0x07;
    for (size_t i = 1; i < need; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        v = (v << 6) | (s[i] & 0x3F);
    }
    static const unsigned min[] = {0, 0, 0x80, 0x800, 0x10000};
    if (v < min[need] || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return 0;
    *cp = v;
    return need;
}

char *lc_text_clean(const char *s, size_t len, int one_line)
{
    sbuf b = {0};
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < len;) {
        unsigned cp = 0;
        size_t k = lc_utf8_decode(u + i, len - i, &cp);
        if (!k) {
            sb_puts(&b, "\xEF\xBF\xBD");
            i++;
            continue;
        }
        int breaks = cp == '\v' || cp == '\f' || cp == '\r' || cp == 0x85 || cp == 0x2028 || cp == 0x2029 ||
                     (one_line && (cp == '\n' || cp == '\t'));
        if (breaks) sb_putc(&b, ' ');
        else if (cp == '\n' || cp == '\t' || (cp >= 0x20 && cp != 0x7F && (cp < 0x80 || cp > 0x9F)))
            sb_append(&b, s + i, k);
        i += k;
    }
    if (!b.p && !b.oom) return lc_strdup("");
    return sb_detach(&b);
}

int lc_json_int(const cJSON *v, int64_t lo, int64_t hi, int64_t *out)
{
    if (!v) return LC_NOTFOUND;
    if (cJSON_IsNumber(v)) {
        double d = v->valuedouble;
        /* compared as doubles before any cast: a cast of one out of range is undefined */
        double top = hi > LC_JSON_INT_MAX ? (double)LC_JSON_INT_MAX : (double)hi;
        double bottom = lo < -LC_JSON_INT_MAX ? (double)-LC_JSON_INT_MAX : (double)lo;
        if (!isfinite(d) || d != floor(d) || d < bottom || d > top) return LC_INVALID;
        *out = (int64_t)d;
        return LC_OK;
    }
    if (!cJSON_IsString(v) || !v->valuestring) return LC_INVALID;
    const char *s = v->valuestring + (v->valuestring[0] == '#');
    const char *digits = s + (*s == '-');
    if (!*digits || strspn(digits, "0123456789") != strlen(digits)) return LC_INVALID;
    errno = 0;
    long long x = strtoll(s, NULL, 10);
    if (errno || x < lo || x > hi) return LC_INVALID;
    *out = x;
    return LC_OK;
}
