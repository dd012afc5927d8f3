/*
 * zones.c -- swap / re-cut line resolution, the clamp, and window corrections
 * (see zones.h).
 */
#include "zones.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

zones_cfg zones_cfg_unset(void)
{
    zones_cfg c = {.swap_ratio = -1.0, .recut_ratio = -1.0};
    return c;
}

zones_cfg zones_cfg_merge(zones_cfg base, zones_cfg over)
{
    if (over.swap_ratio > 0) base.swap_ratio = over.swap_ratio;
    if (over.recut_ratio > 0) base.recut_ratio = over.recut_ratio;
    if (over.smart_zone > 0) base.smart_zone = over.smart_zone;
    if (over.swap_tokens > 0) base.swap_tokens = over.swap_tokens;
    if (over.recut_tokens > 0) base.recut_tokens = over.recut_tokens;
    return base;
}

const char *zones_source_name(zones_source s)
{
    static const char *const names[] = {[ZONES_SRC_RATIO] = "ratio", [ZONES_SRC_SMART] = "smartZone",
                                        [ZONES_SRC_TOKENS] = "tokens"};
    return (unsigned)s < sizeof names / sizeof names[0] ? names[s] : names[ZONES_SRC_RATIO];
}

int zones_resolve(const zones_cfg *cfg, long keep_recent, long window, zones_resolved *out,
                  char **err)
{
    if (window <= 0) return lc_errf(err, LC_INVALID, "context window %ld is not positive", window);
    zones_cfg c = cfg ? *cfg : zones_cfg_unset();
    zones_resolved r = {.window = window};
    double w = (double)window;

    /* OR mode per level: each line picks the most explicit vocabulary that sets it. */
    double swap, recut;
    if (c.swap_tokens > 0) {
        swap = (double)c.swap_tokens;
        r.swap_source = ZONES_SRC_TOKENS;
    } else if (c.smart_zone > 0) {
        swap = (double)c.smart_zone;
        r.swap_source = ZONES_SRC_SMART;
    } else {
        swap = (c.swap_ratio > 0 ? c.swap_ratio : ZONES_DEFAULT_SWAP_RATIO) * w;
        r.swap_source = ZONES_SRC_RATIO;
    }
    if (c.recut_tokens > 0) {
        recut = (double)c.recut_tokens;
        r.recut_source = ZONES_SRC_TOKENS;
        if (recut <= swap) {
            recut = swap * ZONES_SMART_RECUT_FACTOR;
            r.folded = 1;
        }
    } else if (c.smart_zone > 0) {
        recut = (double)c.smart_zone * ZONES_SMART_RECUT_FACTOR;
        r.recut_source = ZONES_SRC_SMART;
    } else {
        recut = (c.recut_ratio > 0 ? c.recut_ratio : ZONES_DEFAULT_RECUT_RATIO) * w;
        r.recut_source = ZONES_SRC_RATIO;
    }

    /* The clamp: a line above the window is unreachable, and a re-cut at or below the
     * swap would never be crossed on its own, so both are folded under the ceilings. */
    double sf = swap / w, rf = recut / w;
    if (sf > ZONES_CLAMP_SWAP) {
        sf = ZONES_CLAMP_SWAP;
        r.clamped = 1;
    }
    if (rf > ZONES_CLAMP_RECUT) {
        rf = ZONES_CLAMP_RECUT;
        r.clamped = 1;
    }
    if (rf <= sf) {
        rf = sf * ZONES_SMART_RECUT_FACTOR;
        if (rf > ZONES_CLAMP_RECUT) rf = ZONES_CLAMP_RECUT;
        r.clamped = 1;
    }
    r.swap_fraction = sf;
    r.recut_fraction = rf;
    r.swap_tokens = (long)(sf * w);
    r.recut_tokens = (long)(rf * w);

    /* A fresh tail as large as the swap line would leave nothing to compact. */
    long kr = keep_recent > 0 ? keep_recent : ZONES_DEFAULT_KEEP_RECENT;
    if (kr > r.swap_tokens / 2) {
        kr = r.swap_tokens / 2;
        r.keep_recent_clamped = 1;
    }
    r.keep_recent_tokens = kr;
    *out = r;
    return LC_OK;
}

zones_zone zones_classify(const zones_resolved *r, long occupancy_tokens)
{
    if (occupancy_tokens >= r->recut_tokens) return ZONES_RECUT;
    if (occupancy_tokens >= r->swap_tokens) return ZONES_SWAP;
    return ZONES_BELOW_SWAP;
}

const char *zones_zone_name(zones_zone z)
{
    static const char *const names[] = {[ZONES_BELOW_SWAP] = "below-swap", [ZONES_SWAP] = "swap",
                                        [ZONES_RECUT] = "recut"};
    return (unsigned)z < sizeof names / sizeof names[0] ? names[z] : names[ZONES_BELOW_SWAP];
}

static void zones_pct(char *buf, size_t n, double f)
{
    double pct = f * 100.0;
    double rounded = (double)(long)(pct + 0.5);
    if (pct - rounded < 0.05 && rounded - pct < 0.05)
        snprintf(buf, n, "%ld%%", (long)rounded);
    else
        snprintf(buf, n, "%.1f%%", pct);
}

char *zones_format_thresholds(const zones_resolved *r)
{
    char s[32], c[32];
    zones_pct(s, sizeof s, r->swap_fraction);
    zones_pct(c, sizeof c, r->recut_fraction);
    return lc_asprintf("swap %s / recut %s%s", s, c, r->clamped ? " (clamped)" : "");
}

/* Parse a decimal number at p, allowing "128,000" / "128_000" group separators (a
 * separator counts only when exactly three digits follow it). Returns the number of
 * characters consumed, 0 when p does not start with a digit. */
static size_t zones_parse_count(const char *p, long *out)
{
    const char *s = p;
    long v = 0;
    if (!isdigit((unsigned char)*s)) return 0;
    for (;;) {
        if (isdigit((unsigned char)*s)) {
            if (v > (__LONG_MAX__ - 9) / 10) return 0;
            v = v * 10 + (*s - '0');
            s++;
        } else if ((*s == ',' || *s == '_') && isdigit((unsigned char)s[1]) &&
                   isdigit((unsigned char)s[2]) && isdigit((unsigned char)s[3]) &&
                   !isdigit((unsigned char)s[4])) {
            s++;
        } else {
            break;
        }
    }
    *out = v;
    return (size_t)(s - p);
}

/* Case-insensitive search. */
static const char *zones_find(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (; *hay; hay++)
        if (strncasecmp(hay, needle, n) == 0) return hay;
    return NULL;
}

/* After `phrase`, skip at most a few filler characters (spaces, ':', '(', '=', "is",
 * "of") and read the number that follows. */
static int zones_number_after(const char *text, const char *phrase, long *out)
{
    for (const char *hit = zones_find(text, phrase); hit; hit = zones_find(hit + 1, phrase)) {
        const char *p = hit + strlen(phrase);
        for (int guard = 0; guard < 12 && *p && !isdigit((unsigned char)*p); guard++) {
            if (strncasecmp(p, "is ", 3) == 0 || strncasecmp(p, "of ", 3) == 0) {
                p += 3;
                continue;
            }
            if (*p == ' ' || *p == ':' || *p == '(' || *p == '=' || *p == '"') {
                p++;
                continue;
            }
            break;
        }
        long v;
        if (zones_parse_count(p, &v) > 0 && v > 0) {
            *out = v;
            return 1;
        }
    }
    return 0;
}

int zones_window_from_error(const char *text, long *window)
{
    if (!text) return 0;
    static const char *const phrases[] = {
        "maximum context length", "max context length", "context window",
        "context length",         "context_length",     "maximum number of tokens allowed",
        "context limit",          "maximum context size", "context size",
    };
    for (size_t i = 0; i < sizeof phrases / sizeof phrases[0]; i++)
        if (zones_number_after(text, phrases[i], window)) return 1;
    /* Anthropic: "prompt is too long: 210000 tokens > 200000 maximum". */
    for (const char *gt = strchr(text, '>'); gt; gt = strchr(gt + 1, '>')) {
        const char *p = gt + 1;
        while (*p == ' ') p++;
        long v;
        size_t n = zones_parse_count(p, &v);
        if (n == 0) continue;
        p += n;
        while (*p == ' ') p++;
        if (strncasecmp(p, "tokens ", 7) == 0) p += 7;
        if (strncasecmp(p, "maximum", 7) == 0 && v > 0) {
            *window = v;
            return 1;
        }
    }
    return 0;
}

int zones_correction_from_error(long believed, const char *error_text,
                                zones_window_correction *out)
{
    long w;
    if (!zones_window_from_error(error_text, &w) || w == believed) return 0;
    memset(out, 0, sizeof *out);
    out->believed = believed;
    out->corrected = w;
    snprintf(out->source, sizeof out->source, "%s", "provider-error");
    return 1;
}

long zones_effective_window(long believed, const zones_window_correction *corr)
{
    if (corr && corr->corrected > 0 && corr->believed == believed) return corr->corrected;
    return believed;
}

int zones_summaries_due(const zones_resolved *z, long occupancy, int pinned, long lead_tokens)
{
    long line = pinned ? z->recut_tokens : z->swap_tokens;
    return occupancy >= line - (lead_tokens > 0 ? lead_tokens : 0);
}

long zones_fit_tokens(const zones_resolved *z)
{
    return (long)((double)z->window * ZONES_CLAMP_RECUT);
}
