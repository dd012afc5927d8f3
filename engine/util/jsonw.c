/*
 * jsonw.c -- compact JSON out of a cJSON tree (jsonw.h), the same bytes as
 * cJSON_PrintUnformatted: the same escapes (the two-character ones, \u00XX in lowercase hex
 * for other control bytes, everything else as it is), numbers printed by cJSON itself.
 */
#include "jsonw.h"

#include <math.h>
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
    sb_putc(b, '"');
    for (;;) {
        const unsigned char *run = p;
        while (!jsonw_special[*p]) p++;
        if (p > run) sb_append(b, (const char *)run, (size_t)(p - run));
        if (!*p) break;
        char esc[6] = {'\\', 0};
        size_t n = 2;
        switch (*p) {
        case '"': esc[1] = '"'; break;
        case '\\': esc[1] = '\\'; break;
        case '\b': esc[1] = 'b'; break;
        case '\f': esc[1] = 'f'; break;
        case '\n': esc[1] = 'n'; break;
        case '\r': esc[1] = 'r'; break;
        case '\t': esc[1] = 't'; break;
        default:
            memcpy(esc + 1, "u00", 3);
            esc[4] = hex[*p >> 4];
            esc[5] = hex[*p & 15];
            n = 6;
        }
        sb_append(b, esc, n);
        p++;
    }
    sb_putc(b, '"');
    return b->oom ? LC_NOMEM : LC_OK;
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
