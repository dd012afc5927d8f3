/*
 * rx.c -- bounded PCRE2 matching (rx.h).
 */
#include "rx.h"

#include "util.h"

#define RX_STR_(x) #x
#define RX_STR(x) RX_STR_(x)

static int rx_callout(pcre2_callout_block *b, void *ud)
{
    (void)b;
    rx_ctx *c = ud;
    /* A clock read costs ~20 ns; a callout runs per pattern item, so read it only every
     * RX_CLOCK_EVERY callouts: the overshoot is that many items, microseconds. */
    if (c->deadline_ms > 0 && (++c->callouts % RX_CLOCK_EVERY) == 0 && lc_now_ms() >= c->deadline_ms) {
        c->expired = 1;
        return PCRE2_ERROR_CALLOUT; /* < 0: abandon the whole match */
    }
    return 0;
}

int rx_ctx_init(rx_ctx *c, double deadline_ms)
{
    c->mctx = pcre2_match_context_create(NULL);
    c->jit = pcre2_jit_stack_create(RX_JIT_STACK_MIN, RX_JIT_STACK_MAX, NULL);
    c->deadline_ms = deadline_ms;
    c->callouts = 0;
    c->expired = 0;
    c->last_rc = 0;
    if (!c->mctx) {
        rx_ctx_free(c);
        return -1;
    }
    /* Without an assigned stack JIT runs on 32 KiB of the caller's machine stack and a
     * long subject ends in JIT_STACKLIMIT; with no stack (allocation failed) it still
     * works, only with that smaller bound. */
    if (c->jit) pcre2_jit_stack_assign(c->mctx, NULL, c->jit);
    pcre2_set_match_limit(c->mctx, RX_MATCH_LIMIT);
    pcre2_set_heap_limit(c->mctx, RX_HEAP_KIB);
    pcre2_set_callout(c->mctx, rx_callout, c);
    return 0;
}

void rx_ctx_free(rx_ctx *c)
{
    if (c->mctx) pcre2_match_context_free(c->mctx);
    if (c->jit) pcre2_jit_stack_free(c->jit);
    c->mctx = NULL;
    c->jit = NULL;
}

static int rx_is_limit(int rc)
{
    return rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT || rc == PCRE2_ERROR_HEAPLIMIT ||
           rc == PCRE2_ERROR_JIT_STACKLIMIT || rc == PCRE2_ERROR_NOMEMORY;
}

int rx_match(rx_ctx *c, const pcre2_code *re, const char *subject, size_t len, size_t start,
             pcre2_match_data *md)
{
    if (c->expired || (c->deadline_ms > 0 && lc_now_ms() >= c->deadline_ms)) {
        c->expired = 1;
        c->last_rc = 0; /* refused before matching: no message was left half-read */
        return RX_DEADLINE;
    }
    if (!subject) subject = ""; /* PCRE2 10.42 refuses a NULL subject even of length 0 */
    /* Depth (the interpreter's nesting of backtracking points) sized per subject: a greedy
     * repeat can need one level per character, more than that is runaway nesting. */
    pcre2_set_depth_limit(c->mctx, (uint32_t)(len > 0xFFFF0000u ? 0xFFFF0000u : len) + RX_DEPTH_MIN);
    int rc = pcre2_match(re, (PCRE2_SPTR)subject, len, start, 0, md, c->mctx);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT && !c->expired)
        rc = pcre2_match(re, (PCRE2_SPTR)subject, len, start, PCRE2_NO_JIT, md, c->mctx);
    c->last_rc = rc;
    if (rc >= 0) return RX_MATCH;
    if (rc == PCRE2_ERROR_NOMATCH) return RX_NOMATCH;
    if (c->expired) return RX_DEADLINE;
    if (rx_is_limit(rc)) return RX_LIMIT;
    return RX_FAIL;
}

const char *rx_limit_name(int rc)
{
    switch (rc) {
    case PCRE2_ERROR_MATCHLIMIT: return "the PCRE2 match limit (" RX_STR(RX_MATCH_LIMIT) " steps per start position)";
    case PCRE2_ERROR_DEPTHLIMIT: return "the PCRE2 depth limit (the subject's length + " RX_STR(RX_DEPTH_MIN) ")";
    case PCRE2_ERROR_HEAPLIMIT: return "the PCRE2 heap limit (64 MiB)";
    case PCRE2_ERROR_JIT_STACKLIMIT: return "the PCRE2 JIT stack limit (8 MiB)";
    case PCRE2_ERROR_NOMEMORY: return "PCRE2 running out of memory";
    case PCRE2_ERROR_CALLOUT: return "the time bound";
    default: return "a PCRE2 error";
    }
}
