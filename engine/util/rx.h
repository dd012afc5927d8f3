/*
 * rx.h -- bounded PCRE2 matching, shared by every caller of pcre2_match (lcm_grep's
 * pattern mode, redaction, file exploration). One pcre2_match on a 200,000-character
 * subject tries every start position, and PCRE2's limits apply per start position (and
 * under JIT count only some backtracking), so limits alone do not bound a call's time.
 * What bounds it here: patterns are compiled with PCRE2_AUTO_CALLOUT, and the callout
 * checks a wall-clock deadline (every RX_CLOCK_EVERY callouts), so one call stops at the
 * deadline wherever it is; beside it the match, depth and heap limits and an explicit
 * JIT stack keep one start position from taking the whole budget or unbounded memory.
 * A context is per call and per thread (a JIT stack must not be shared across threads).
 */
#ifndef LC_RX_H
#define LC_RX_H

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stddef.h>

#define RX_MATCH_LIMIT 5000000         /* backtracking steps per start position (~30 ms) */
#define RX_HEAP_KIB 65536              /* interpreter backtracking memory: 64 MiB */
#define RX_DEPTH_MIN 10000             /* depth limit: subject length + this */
#define RX_JIT_STACK_MIN (32 * 1024)   /* JIT stack, grown on demand up to ... */
#define RX_JIT_STACK_MAX (8 * 1024 * 1024) /* ... 8 MiB */
#define RX_CLOCK_EVERY 64              /* callouts between clock reads */

/* The compile option every bounded pattern needs (the callout is the time check). */
#define RX_COMPILE_OPTIONS PCRE2_AUTO_CALLOUT

/* What stopped a call, beyond match / no match. */
enum { RX_MATCH = 1, RX_NOMATCH = 0, RX_DEADLINE = -1, RX_LIMIT = -2, RX_FAIL = -3 };

typedef struct rx_ctx {
    pcre2_match_context *mctx;
    pcre2_jit_stack *jit;
    double deadline_ms;        /* lc_now_ms() value; <= 0: no deadline */
    unsigned long callouts;
    int expired;               /* the deadline passed (sticky) */
    int last_rc;               /* PCRE2's code for the last call */
} rx_ctx;

/* 0 on success; -1 when out of memory. */
int rx_ctx_init(rx_ctx *c, double deadline_ms);
void rx_ctx_free(rx_ctx *c);

/* pcre2_match of subject[0..len) from offset `start`, bounded. Returns RX_MATCH (ovector
 * in md), RX_NOMATCH, RX_DEADLINE (the deadline passed: nothing is known about the rest),
 * RX_LIMIT (a PCRE2 resource limit: whether it matches is unknown; rx_limit_name says
 * which), or RX_FAIL (any other error; last_rc holds it). A JIT stack exhausted is
 * retried once with the interpreter (heap frames, bounded by RX_HEAP_KIB) before it is
 * reported as a limit. */
int rx_match(rx_ctx *c, const pcre2_code *re, const char *subject, size_t len, size_t start,
             pcre2_match_data *md);

/* A sentence fragment naming the limit behind c->last_rc, e.g. "the PCRE2 match limit
 * (5000000 steps per start position)". */
const char *rx_limit_name(int pcre2_rc);

#endif
