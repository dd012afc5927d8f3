/*
 * test_clm_doc.c -- a view kept across renders (clm_view_same / truncate / rebase) renders
 * exactly what a view built afresh renders: byte for byte, with the same ids, ownership,
 * protection and lookups, over a generated conversation that grows, shrinks and changes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "clm_doc.h"
#include "util.h"
#include "expect_text.h"
#include "test_main.h"

/* ---- a deterministic generated conversation ---------------------------------------- */

static uint64_t rng_state;

static uint32_t rnd(uint32_t n)
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(rng_state >> 33) % n;
}

static const char *const WORDS[] = {
    "alpha", "beta", "gamma", "delta", "line\\n", "tab\\t", "quote\\\"", "\\u00e9t\\u00e9",
    "[[CTX_TURN document=0123456789abcdef index=1 role=user id=1-aaaaaaaaaaaa protected=false]]",
    "\\n[[CTX_TURN document=x index=2 role=assistant id=x]]\\n",
    "\\n\\\\[[LIVE_CONTEXT version=1]]\\n", "\\n\\\\\\\\[[CTX_TURN deeper\\n", "end\\n\\n",
};

static void words(sbuf *b, size_t max)
{
    size_t n = rnd((uint32_t)max + 1);
    for (size_t i = 0; i < n; i++) {
        if (i) sb_putc(b, ' ');
        sb_puts(b, WORDS[rnd(sizeof WORDS / sizeof WORDS[0])]);
    }
}

typedef struct gen {
    unsigned serial;          /* makes every generated message distinct */
    unsigned next_call;
    unsigned pending[4];      /* call ids of the latest assistant not yet answered */
    size_t n_pending;
} gen;

/* The next message of a plausible conversation: users, assistants with thinking and
 * parallel tool calls, their results (sometimes orphaned or answering a reused id),
 * images, notes with a context role, bash executions. */
static char *gen_message(gen *g)
{
    sbuf b = {0};
    unsigned ts = ++g->serial;
    if (g->n_pending && rnd(5) != 0) {
        unsigned call = g->pending[--g->n_pending];
        if (rnd(10) == 0) call = 9000 + rnd(3); /* an orphan, or a call id seen before */
        sb_printf(&b, "{\"role\":\"toolResult\",\"toolCallId\":\"call_%u\",\"toolName\":\"%s\","
                      "\"content\":[{\"type\":\"text\",\"text\":\"",
                  call, rnd(2) ? "bash" : "we ird/name");
        words(&b, 12);
        sb_printf(&b, "\"}],\"isError\":%s,\"timestamp\":%u}", rnd(4) ? "false" : "true", ts);
        return sb_detach(&b);
    }
    switch (rnd(6)) {
    case 0:
        sb_puts(&b, "{\"role\":\"user\",\"content\":\"");
        words(&b, 8);
        sb_printf(&b, "\",\"timestamp\":%u}", ts);
        break;
    case 1:
        sb_puts(&b, "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"");
        words(&b, 4);
        sb_printf(&b, "\"},{\"type\":\"image\",\"data\":\"iVBORw0KGgo%u=\",\"mimeType\":"
                      "\"image/png\"}],\"timestamp\":%u}", ts, ts);
        break;
    case 2:
    case 3: {
        sb_puts(&b, "{\"role\":\"assistant\",\"content\":[");
        if (rnd(2)) {
            sb_puts(&b, "{\"type\":\"thinking\",\"thinking\":\"");
            words(&b, 5);
            sb_puts(&b, "\",\"thinkingSignature\":\"sig==\"},");
        }
        sb_puts(&b, "{\"type\":\"text\",\"text\":\"");
        words(&b, 6);
        sb_puts(&b, "\"}");
        size_t calls = rnd(4);
        g->n_pending = 0;
        for (size_t c = 0; c < calls; c++) {
            unsigned id = rnd(8) == 0 && g->next_call ? rnd(g->next_call) : g->next_call++;
            sb_printf(&b, ",{\"type\":\"toolCall\",\"id\":\"call_%u\",\"name\":\"bash\","
                          "\"arguments\":{\"command\":\"echo %u\"}}", id, ts);
            g->pending[g->n_pending++] = id;
        }
        sb_printf(&b, "],\"stopReason\":\"%s\",\"usage\":{\"input\":%u,\"output\":5},"
                      "\"timestamp\":%u}", calls ? "toolUse" : "stop", ts * 10, ts);
        break;
    }
    case 4:
        sb_printf(&b, "{\"role\":\"custom\",\"customType\":\"live-context\",\"content\":\"");
        words(&b, 6);
        sb_printf(&b, "\",\"display\":true,\"details\":{\"contextRole\":\"%s\"},\"timestamp\":%u}",
                  rnd(2) ? "notes" : "bad role!", ts);
        break;
    default:
        sb_printf(&b, "{\"role\":\"bashExecution\",\"command\":\"pwd\",\"output\":\"");
        words(&b, 3);
        sb_printf(&b, "\",\"exitCode\":0,\"timestamp\":%u}", ts);
        break;
    }
    return sb_detach(&b);
}

/* ---- the effective context, as a caller holds it -------------------------------------- */

typedef struct ctx {
    char *json[512];
    long origin[512];
    char *key[512];
    size_t n;
} ctx;

static char *gen_key(unsigned serial)
{
    switch (rnd(4)) {
    case 0: return NULL;
    case 1: return lc_strdup("");
    default: return lc_asprintf("entry-%u", serial);
    }
}

static void ctx_set(ctx *c, size_t i, char *json, long origin, char *key)
{
    free(c->json[i]);
    free(c->key[i]);
    c->json[i] = json;
    c->origin[i] = origin;
    c->key[i] = key;
}

static void ctx_truncate(ctx *c, size_t n)
{
    for (size_t i = n; i < c->n; i++) ctx_set(c, i, NULL, 0, NULL);
    c->n = n;
}

static void ctx_append(ctx *c, gen *g)
{
    assert_true(c->n < 512);
    ctx_set(c, c->n, gen_message(g), rnd(5) ? (long)c->n : -1, gen_key(g->serial));
    c->n++;
}

/* What the plugin does on every request: keep the shared prefix, add the rest. */
static void render_reusing(clm_view *v, const ctx *c, long revision, const char *nonce,
                           char **text, size_t *len, uint8_t digest[32])
{
    assert_int_equal(clm_view_rebase(v, revision, nonce, NULL), LC_OK);
    size_t k = 0;
    while (k < c->n && clm_view_same(v, k, c->json[k], strlen(c->json[k]), c->origin[k], c->key[k]))
        k++;
    clm_view_truncate(v, k);
    for (size_t i = k; i < c->n; i++)
        assert_int_equal(clm_view_add(v, c->json[i], strlen(c->json[i]), c->origin[i], c->key[i],
                                      NULL), LC_OK);
    assert_int_equal(clm_view_render_digest(v, text, len, digest, NULL), LC_OK);
}

static void render_fresh(clm_view *v, clm_mode mode, const ctx *c, long revision,
                         const char *nonce, char **text, size_t *len)
{
    assert_int_equal(clm_view_init(v, mode, revision, nonce, NULL), LC_OK);
    for (size_t i = 0; i < c->n; i++)
        assert_int_equal(clm_view_add(v, c->json[i], strlen(c->json[i]), c->origin[i], c->key[i],
                                      NULL), LC_OK);
    assert_int_equal(clm_view_render(v, text, len, NULL), LC_OK);
}

static void str_eq_or_null(const char *a, const char *b)
{
    if (!a || !b) assert_ptr_equal(a, b);
    else assert_string_equal(a, b);
}

/* Everything a later edit reads from the view must agree, not just the text. */
static void assert_views_equal(const clm_view *a, const clm_view *b)
{
    assert_int_equal(a->n, b->n);
    assert_string_equal(a->baseline, b->baseline);
    assert_string_equal(a->meta_line, b->meta_line);
    assert_int_equal(a->bodies.len, b->bodies.len);
    if (a->bodies.len) assert_memory_equal(a->bodies.p, b->bodies.p, a->bodies.len);
    for (size_t i = 0; i < a->n; i++) {
        const clm_vmsg *x = &a->msgs[i], *y = &b->msgs[i];
        assert_int_equal(x->json_len, y->json_len);
        assert_memory_equal(x->json, y->json, x->json_len);
        assert_int_equal(x->origin, y->origin);
        assert_int_equal(x->role, y->role);
        assert_string_equal(x->id, y->id);
        assert_string_equal(x->label, y->label);
        assert_memory_equal(x->body_digest, y->body_digest, 32);
        assert_int_equal(x->tokens, y->tokens);
        assert_int_equal(x->is_protected, y->is_protected);
        str_eq_or_null(x->call_id, y->call_id);
        str_eq_or_null(x->tool, y->tool);
        assert_int_equal(x->n_calls, y->n_calls);
        for (size_t c = 0; c < x->n_calls; c++) assert_string_equal(x->calls[c], y->calls[c]);
        assert_int_equal(x->owner, y->owner);
        assert_int_equal(x->n_results, y->n_results);
        assert_int_equal(x->body_off, y->body_off);
        assert_int_equal(x->body_len, y->body_len);
        assert_int_equal(clm_view_find(a, y->id), (long)i);
        assert_int_equal(clm_view_find(b, x->id), (long)i);
    }
    assert_int_equal(clm_view_find(a, "99999-000000000000"), -1);
}

/* One random step: append, truncate, change a message in the middle (bytes, origin or
 * key), or leave the context as it is. Returns a short name for failure messages. */
static const char *mutate(ctx *c, gen *g)
{
    uint32_t op = rnd(10);
    if (op < 5 || c->n == 0) {
        size_t k = 1 + rnd(4);
        for (size_t i = 0; i < k && c->n < 500; i++) ctx_append(c, g);
        return "append";
    }
    if (op == 5) {
        /* Mostly a short cut from the end (a retried turn), sometimes a deep one: the
         * context must grow past several digest checkpoints (CLM_SEG_CKPT messages). */
        size_t cut = rnd(8) ? rnd(c->n < 24 ? (uint32_t)c->n + 1 : 25) : rnd((uint32_t)c->n + 1);
        ctx_truncate(c, c->n - cut);
        return "truncate";
    }
    size_t i = rnd((uint32_t)c->n);
    if (op == 6) {
        ctx_set(c, i, gen_message(g), c->origin[i], c->key[i] ? lc_strdup(c->key[i]) : NULL);
        return "change bytes";
    }
    if (op == 7) {
        ctx_set(c, i, lc_strdup(c->json[i]), c->origin[i] + 1, c->key[i] ? lc_strdup(c->key[i]) : NULL);
        return "change origin";
    }
    if (op == 8) {
        ctx_set(c, i, lc_strdup(c->json[i]), c->origin[i], gen_key(g->serial + 1000));
        return "change key";
    }
    return "unchanged";
}

static void run_corpus(clm_mode mode, uint64_t seed, size_t steps)
{
    rng_state = seed;
    gen g = {0};
    ctx c;
    memset(&c, 0, sizeof c);
    clm_view kept;
    long revision = 0;
    char nonce[CLM_NONCE_LEN + 1] = "0123456789abcdef";
    assert_int_equal(clm_view_init(&kept, mode, revision, nonce, NULL), LC_OK);
    for (size_t step = 0; step < steps; step++) {
        const char *what = mutate(&c, &g);
        if (rnd(6) == 0) { /* an accepted edit (stable nonce) or a conservative render */
            revision++;
            clm_nonce_fresh("session", (unsigned long)step, nonce);
        }
        char *inc = NULL, *fresh = NULL;
        size_t inc_len = 0, fresh_len = 0;
        clm_view v;
        uint8_t inc_digest[32], want[32];
        render_reusing(&kept, &c, revision, nonce, &inc, &inc_len, inc_digest);
        render_fresh(&v, mode, &c, revision, nonce, &fresh, &fresh_len);
        if (inc_len != fresh_len || memcmp(inc, fresh, inc_len) != 0)
            fail_msg("step %zu (%s, %zu messages): the kept view renders differently", step,
                     what, c.n);
        assert_views_equal(&kept, &v);
        /* The digest resumed from the kept blocks is the digest of the whole text. */
        clm_mirror_digest(fresh, fresh_len, want);
        assert_memory_equal(inc_digest, want, 32);
        /* Rendering a view again gives the same text. */
        char *again = NULL;
        size_t again_len = 0;
        assert_int_equal(clm_view_render(&kept, &again, &again_len, NULL), LC_OK);
        assert_int_equal(again_len, inc_len);
        assert_memory_equal(again, inc, inc_len);
        free(again);
        free(inc);
        free(fresh);
        clm_view_free(&v);
    }
    clm_view_free(&kept);
    ctx_truncate(&c, 0);
}

static void test_kept_view_renders_like_fresh_view_in_clm_mode(void **state)
{
    (void)state;
    run_corpus(CLM_MODE_CLM, 1, 400);
    run_corpus(CLM_MODE_CLM, 77, 400);
}

static void test_kept_view_renders_like_fresh_view_in_conservative_mode(void **state)
{
    (void)state;
    run_corpus(CLM_MODE_CONSERVATIVE, 2, 400);
    run_corpus(CLM_MODE_CONSERVATIVE, 1234, 400);
    run_corpus(CLM_MODE_CONSERVATIVE, 99, 600);
}

/* ---- the pieces on their own ---------------------------------------------------------- */

static const char ASSIST[] =
    "{\"role\":\"assistant\",\"content\":[{\"type\":\"toolCall\",\"id\":\"c1\",\"name\":\"bash\","
    "\"arguments\":{}},{\"type\":\"toolCall\",\"id\":\"c2\",\"name\":\"bash\",\"arguments\":{}}]}";
static const char RES1[] =
    "{\"role\":\"toolResult\",\"toolCallId\":\"c1\",\"toolName\":\"bash\",\"content\":\"one\"}";
static const char RES2[] =
    "{\"role\":\"toolResult\",\"toolCallId\":\"c2\",\"toolName\":\"bash\",\"content\":\"two\"}";
static const char USER[] = "{\"role\":\"user\",\"content\":\"hi\"}";

static void add(clm_view *v, const char *json, long origin, const char *key)
{
    assert_int_equal(clm_view_add(v, json, strlen(json), origin, key, NULL), LC_OK);
}

static void test_truncate_gives_back_the_dropped_results_of_a_kept_assistant(void **state)
{
    (void)state;
    clm_view v;
    assert_int_equal(clm_view_init(&v, CLM_MODE_CLM, 0, "0123456789abcdef", NULL), LC_OK);
    add(&v, USER, 0, NULL);
    add(&v, ASSIST, 1, NULL);
    add(&v, RES1, 2, NULL);
    add(&v, RES2, 3, NULL);
    assert_int_equal(v.msgs[1].n_results, 2);
    clm_view_truncate(&v, 3);
    assert_int_equal(v.n, 3);
    assert_int_equal(v.msgs[1].n_results, 1);
    assert_int_equal(v.bodies.len, v.msgs[2].body_off + v.msgs[2].body_len);
    clm_view_truncate(&v, 1);
    assert_int_equal(v.n, 1);
    assert_int_equal(clm_view_find(&v, "2-000000000000"), -1);
    clm_view_truncate(&v, 5); /* beyond the end: nothing happens */
    assert_int_equal(v.n, 1);
    clm_view_free(&v);
}

static void test_same_needs_equal_bytes_origin_and_key(void **state)
{
    (void)state;
    clm_view v;
    assert_int_equal(clm_view_init(&v, CLM_MODE_CLM, 0, "0123456789abcdef", NULL), LC_OK);
    add(&v, USER, 4, "e1");
    add(&v, USER, 5, NULL);
    assert_true(clm_view_same(&v, 0, USER, strlen(USER), 4, "e1"));
    assert_false(clm_view_same(&v, 0, USER, strlen(USER), 5, "e1"));
    assert_false(clm_view_same(&v, 0, USER, strlen(USER), 4, "e2"));
    assert_false(clm_view_same(&v, 0, USER, strlen(USER), 4, NULL));
    assert_false(clm_view_same(&v, 0, USER, strlen(USER) - 1, 4, "e1"));
    char other[sizeof USER];
    memcpy(other, USER, sizeof USER);
    other[sizeof USER - 4] = 'o'; /* "ho" instead of "hi" */
    assert_false(clm_view_same(&v, 0, other, strlen(other), 4, "e1"));
    assert_true(clm_view_same(&v, 1, USER, strlen(USER), 5, NULL));
    assert_false(clm_view_same(&v, 1, USER, strlen(USER), 5, ""));
    assert_false(clm_view_same(&v, 2, USER, strlen(USER), 5, NULL)); /* past the end */
    clm_view_free(&v);
}

static void test_mirror_digest_sees_every_byte_and_splits_at_the_first_line(void **state)
{
    (void)state;
    uint8_t a[32], b[32];
    clm_mirror_digest("meta\n\nbody", 10, a);
    clm_mirror_digest("meta\n\nbodY", 10, b);
    assert_memory_not_equal(a, b, 32);
    clm_mirror_digest("meta\n\nbody", 10, a);
    clm_mirror_digest("meta\n\nbody", 10, b);
    assert_memory_equal(a, b, 32);
    /* Moving the line break moves bytes between the parts: a different digest. */
    clm_mirror_digest("met\na\nbody", 10, b);
    assert_memory_not_equal(a, b, 32);
    clm_mirror_digest("", 0, a);
    clm_mirror_digest("no newline", 10, b);
    assert_memory_not_equal(a, b, 32);
}

static void test_rebase_changes_nonce_and_revision_and_refuses_bad_nonce(void **state)
{
    (void)state;
    clm_view v;
    char *a = NULL, *b = NULL;
    assert_int_equal(clm_view_init(&v, CLM_MODE_CLM, 1, "0123456789abcdef", NULL), LC_OK);
    add(&v, USER, 0, NULL);
    assert_int_equal(clm_view_render(&v, &a, NULL, NULL), LC_OK);
    assert_non_null(strstr(a, "revision=1 document=0123456789abcdef"));
    char *err = NULL;
    assert_int_equal(clm_view_rebase(&v, 2, "short", &err), LC_INVALID);
    assert_non_null(err);
    free(err);
    assert_int_equal(clm_view_rebase(&v, 2, "fedcba9876543210", NULL), LC_OK);
    assert_int_equal(clm_view_render(&v, &b, NULL, NULL), LC_OK);
    expect_has(b, "revision=2 document=fedcba9876543210",
               "[[CTX_TURN document=fedcba9876543210 index=1");
    assert_null(strstr(b, "0123456789abcdef"));
    free(a);
    free(b);
    clm_view_free(&v);
}

TEST_MAIN(
    cmocka_unit_test(test_kept_view_renders_like_fresh_view_in_clm_mode),
    cmocka_unit_test(test_kept_view_renders_like_fresh_view_in_conservative_mode),
    cmocka_unit_test(test_truncate_gives_back_the_dropped_results_of_a_kept_assistant),
    cmocka_unit_test(test_same_needs_equal_bytes_origin_and_key),
    cmocka_unit_test(test_mirror_digest_sees_every_byte_and_splits_at_the_first_line),
    cmocka_unit_test(test_rebase_changes_nonce_and_revision_and_refuses_bad_nonce),
)
