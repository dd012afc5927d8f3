/*
 * termsafe.c -- inert terminal output of stored text (termsafe.h).
 */
#include "termsafe.h"

#include <stdio.h>
#include <string.h>

#include "util.h"

int termsafe_control(uint32_t cp)
{
    if (cp == '\n' || cp == '\t') return 0;
    return cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f);
}

/* The code point at s (UTF-8, strict: no overlong forms or surrogates) and its length;
 * 0 when s does not start a valid sequence. */
static size_t termsafe_decode(const unsigned char *s, uint32_t *cp)
{
    if (s[0] < 0x80) {
        *cp = s[0];
        return 1;
    }
    size_t n = s[0] >= 0xF0 && s[0] <= 0xF4 ? 4 : s[0] >= 0xE0 ? 3 : s[0] >= 0xC2 && s[0] <= 0xDF ? 2 : 0;
    if (!n || (n == 3 && s[0] > 0xEF)) return 0;
    uint32_t v = s[0] & (n == 2 ? 0x1F : n == 3 ? 0x0F : 0x07);
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        v = (v << 6) | (s[i] & 0x3F);
    }
    if ((n == 3 && (v < 0x800 || (v >= 0xD800 && v <= 0xDFFF))) || (n == 4 && (v < 0x10000 || v > 0x10FFFF)))
        return 0;
    *cp = v;
    return n;
}

char *termsafe_text(const char *s)
{
    sbuf b = {0};
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    while (*p) {
        uint32_t cp = 0;
        size_t n = termsafe_decode(p, &cp);
        if (!n) {
            sb_putc(&b, '?');
            p++;
            continue;
        }
        /* A line end written CRLF (Windows tools' output) is text, kept verbatim; a lone CR
         * could draw over what came before it on the line, and is shown. */
        if (cp == '\r' && p[1] == '\n') {
            sb_puts(&b, "\r\n");
            p += 2;
            continue;
        }
        if (termsafe_control(cp)) {
            if (cp < 0x20) sb_printf(&b, "^%c", (char)(cp + 0x40));
            else if (cp == 0x7f) sb_puts(&b, "^?");
            else sb_printf(&b, "<U+%04X>", (unsigned)cp);
        } else {
            sb_append(&b, (const char *)p, n);
        }
        p += n;
    }
    if (b.oom) {
        sb_free(&b);
        return NULL;
    }
    return b.p ? sb_detach(&b) : lc_strdup("");
}
