/*
 * jsonw.c -- compact JSON out of a cJSON tree (jsonw.h), the same bytes as
 * cJSON_PrintUnformatted: the same escapes (the two-character ones, \u00XX in lowercase hex
 * for other control bytes, everything else as it is), numbers printed by cJSON itself.
 */
#include "jsonw.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* 1 for a byte a JSON string cannot hold as it is. */
static const unsigned char jsonw_special[256] = {
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    ['"'] = 1, ['\\'] = 1,
};

int jsonw_string(sbuf *b, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    const unsigned char *end = p + strlen((const char *)p);
    if (b->oom || sb_putc(b, '"') != LC_OK) return LC_NOMEM;
    /* Every string of every message an import builds is printed here, code with an escape
     * every line among them: the runs go eight bytes at a time while none needs an escape,
     * and runs and escapes are written in place, room made only when it runs short. */
    for (;;) {
        const unsigned char *run = p;
        while (p < end) {
            uint64_t w;
            if (end - p >= 8) {
                memcpy(&w, p, 8);
                if (!lc_word_below(w, 0x20) && !lc_word_has(w, '"') && !lc_word_has(w, '\\')) {
                    p += 8;
                    continue;
                }
                while (!jsonw_special[*p]) p++; /* one of these eight is */
                break;
            }
            if (jsonw_special[*p]) break;
            p++;
        }
        size_t n = (size_t)(p - run);
        /* the run, one escape (at most 6 bytes), the closing quote */
        if (b->len + n + 8 > b->cap && sb_reserve(b, n + 7) != LC_OK) return LC_NOMEM;
        memcpy(b->p + b->len, run, n);
        b->len += n;
        if (p >= end) break;
        char *o = b->p + b->len;
        *o++ = '\\';
        switch (*p) {
        case '"': *o++ = '"'; break;
        case '\\': *o++ = '\\'; break;
        case '\b': *o++ = 'b'; break;
        case '\f': *o++ = 'f'; break;
        case '\n': *o++ = 'n'; break;
        case '\r': *o++ = 'r'; break;
        case '\t': *o++ = 't'; break;
        default:
            memcpy(o, "u00", 3);
            o[3] = hex[*p >> 4];
            o[4] = hex[*p & 15];
            o += 5;
        }
        b->len = (size_t)(o - b->p);
        p++;
    }
    b->p[b->len++] = '"';
    b->p[b->len] = '\0';
    return LC_OK;
}

static int jsonw_value(sbuf *b, const cJSON *item)
{
    switch (item->type & 0xFF) {
    case cJSON_NULL: return sb_puts(b, "null");
    case cJSON_False: return sb_puts(b, "false");
    case cJSON_True: return sb_puts(b, "true");
    case cJSON_Number: {
        /* A whole number from 0 to 10^15 prints as its digits whichever way cJSON chooses (%d,
         * or %1.15g that needs no exponent); anything else gets cJSON's own choice (15 or
         * 17 significant digits, null, "-0"), whose sprintf and sscanf cost a microsecond. */
        char num[64];
        double d = item->valuedouble;
        if (d == floor(d) && fabs(d) < 1e15 && !signbit(d)) {
            snprintf(num, sizeof num, "%lld", (long long)d);
        } else if (!cJSON_PrintPreallocated((cJSON *)item, num, (int)sizeof num, 0)) {
            return LC_ERR;
        }
        return sb_puts(b, num);
    }
    case cJSON_Raw: return item->valuestring ? sb_puts(b, item->valuestring) : LC_ERR;
    case cJSON_String: return jsonw_string(b, item->valuestring);
    case cJSON_Array:
    case cJSON_Object: {
        int object = (item->type & 0xFF) == cJSON_Object;
        sb_putc(b, object ? '{' : '[');
        for (const cJSON *c = item->child; c; c = c->next) {
            if (c != item->child) sb_putc(b, ',');
            if (object) {
                jsonw_string(b, c->string);
                sb_putc(b, ':');
            }
            if (jsonw_value(b, c) == LC_ERR) return LC_ERR;
        }
        return sb_putc(b, object ? '}' : ']');
    }
    default: return LC_ERR;
    }
}

char *jsonw_print(const cJSON *item)
{
    sbuf b = {0};
    if (!item || jsonw_value(&b, item) == LC_ERR || b.oom) {
        sb_free(&b);
        return NULL;
    }
    return sb_detach(&b);
}
