/*
 * test_clm_revision.c -- revision payloads, the raw-prefix digest, branch reconstruction
 * and anchor validation: an accepted edit survives a restart only on its own branch and
 * only while the raw prefix it replaced is unchanged.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "clm_apply.h"
#include "clm_revision.h"
#include "util.h"
#include "expect_text.h"
#include "test_main.h"

static const char NONCE[] = "00112233445566ff";

static const char *const RAW[] = {
    "{\"role\":\"user\",\"content\":\"task\",\"timestamp\":1}",
    "{\"role\":\"assistant\",\"content\":[{\"type\":\"toolCall\",\"id\":\"c1\",\"name\":\"read\","
    "\"arguments\":{}}],\"stopReason\":\"toolUse\",\"timestamp\":2}",
    "{\"role\":\"toolResult\",\"toolCallId\":\"c1\",\"toolName\":\"read\",\"content\":[{\"type\":"
    "\"text\",\"text\":\"long file\"}],\"timestamp\":3}",
    "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"read it\"}],"
    "\"stopReason\":\"stop\",\"timestamp\":4}",
    /* appended after the edit */
    "{\"role\":\"user\",\"content\":\"next\",\"timestamp\":5}",
    "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"ok\"}],\"timestamp\":6}",
};

static void raw_texts(clm_text *t, size_t n)
{
    for (size_t i = 0; i < n; i++) t[i] = (clm_text){RAW[i], strlen(RAW[i])};
}

/* Render the first 4 raw messages, drop the tool group, return the accept payload. */
static char *accepted_payload(long revision)
{
    clm_view v;
    char *text, *payload = NULL;
    clm_text raw[4];
    char digest[65];
    raw_texts(raw, 4);
    clm_prefix_digest(raw, 4, digest);
    assert_int_equal(clm_view_init(&v, CLM_MODE_CLM, revision - 1, NONCE, NULL), LC_OK);
    for (size_t i = 0; i < 4; i++)
        assert_int_equal(clm_view_add(&v, RAW[i], strlen(RAW[i]), (long)i, NULL, NULL), LC_OK);
    assert_int_equal(clm_view_render(&v, &text, NULL, NULL), LC_OK);
    /* cut blocks 2 and 3 (the tool group) */
    char *b2 = strstr(text, "[[CTX_TURN document=00112233445566ff index=2 ");
    char *b4 = strstr(text, "[[CTX_TURN document=00112233445566ff index=4 ");
    memmove(b2, b4, strlen(b4) + 1);
    clm_outcome o;
    assert_int_equal(clm_edit(&v, text, strlen(text), &o, NULL), LC_OK);
    assert_true(o.accepted);
    assert_int_equal(clm_payload_accept(&v, &o, revision, 4, digest, &payload, NULL), LC_OK);
    clm_outcome_free(&o);
    clm_view_free(&v);
    free(text);
    return payload;
}

static void test_prefix_digest_depends_on_message_boundaries(void **state)
{
    (void)state;
    clm_text a[2] = {{"ab", 2}, {"c", 1}}, b[2] = {{"a", 1}, {"bc", 2}};
    char ha[65], hb[65], ha2[65], h0[65];
    clm_prefix_digest(a, 2, ha);
    clm_prefix_digest(b, 2, hb);
    clm_prefix_digest(a, 2, ha2);
    clm_prefix_digest(a, 0, h0);
    assert_string_not_equal(ha, hb);
    assert_string_equal(ha, ha2);
    assert_string_not_equal(ha, h0);
    assert_int_equal(strlen(ha), 64);
}

static void test_accept_payload_round_trips_messages_and_anchor(void **state)
{
    (void)state;
    char *p = accepted_payload(1);
    clm_revision r;
    assert_int_equal(clm_revision_parse(p, strlen(p), &r, NULL), LC_OK);
    assert_int_equal(r.revision, 1);
    assert_int_equal(r.anchor_count, 4);
    assert_int_equal(r.n_messages, 2);
    cJSON *a = cJSON_Parse(r.messages[0]), *b = cJSON_Parse(RAW[0]);
    assert_true(cJSON_Compare(a, b, 1));
    cJSON_Delete(a);
    cJSON_Delete(b);
    a = cJSON_Parse(r.messages[1]);
    b = cJSON_Parse(RAW[3]);
    assert_true(cJSON_Compare(a, b, 1));
    cJSON_Delete(a);
    cJSON_Delete(b);
    cJSON *j = cJSON_Parse(p);
    assert_string_equal(cJSON_GetObjectItem(j, "kind")->valuestring, "accept");
    cJSON *trace = cJSON_GetObjectItem(j, "trace");
    assert_int_equal(cJSON_GetArraySize(trace), 4);
    int removed = 0;
    cJSON *e;
    cJSON_ArrayForEach(e, trace) removed += strcmp(cJSON_GetObjectItem(e, "kind")->valuestring,
                                                   "removed") == 0;
    assert_int_equal(removed, 2);
    cJSON_Delete(j);
    clm_revision_free(&r);
    free(p);
}

static void test_slim_payloads_carry_no_messages(void **state)
{
    (void)state;
    char *rej = clm_payload_reject(3, "stale nonce");
    char *tog = clm_payload_toggle(0);
    char *res = clm_payload_reset(4, "user reset");
    expect_has(rej, "\"kind\":\"reject\"", "\"reason\":\"stale nonce\"");
    assert_null(strstr(rej, "messages"));
    assert_non_null(strstr(tog, "\"enabled\":false"));
    assert_null(strstr(tog, "messages"));
    clm_revision r;
    assert_int_equal(clm_revision_parse(res, strlen(res), &r, NULL), LC_OK);
    assert_int_equal(r.anchor_count, 0);
    assert_int_equal(r.n_messages, 0);
    clm_revision_free(&r);
    free(rej);
    free(tog);
    free(res);
}

/* A branch: message entries, then state entries in order. */
static char *branch_of(const char *const *extra, size_t n)
{
    sbuf b = {0};
    sb_puts(&b, "[{\"type\":\"message\",\"id\":\"e1\",\"message\":{\"role\":\"user\","
                "\"content\":\"task\"}}");
    for (size_t i = 0; i < n; i++) sb_printf(&b, ",%s", extra[i]);
    sb_puts(&b, "]");
    return sb_detach(&b);
}

/* The state entry around the payload `data`, which it takes over and frees. */
static char *state_entry(char *data)
{
    char *e = lc_asprintf("{\"type\":\"custom\",\"id\":\"s\",\"customType\":\"live-context-state\","
                          "\"data\":%s}", data);
    free(data);
    return e;
}

/* The state of a branch holding the first n of the entries `extra`. */
static clm_branch_state reconstructed(char *const *extra, size_t n)
{
    char *br = branch_of((const char *const *)extra, n);
    clm_branch_state s;
    assert_int_equal(clm_branch_reconstruct(br, strlen(br), &s, NULL), LC_OK);
    free(br);
    return s;
}

static void test_branch_reconstruct_takes_newest_accepted_revision(void **state)
{
    (void)state;
    char *e[4] = {state_entry(accepted_payload(1)), state_entry(clm_payload_reject(2, "dup")),
                  state_entry(accepted_payload(3)),
                  lc_strdup("{\"type\":\"custom\",\"customType\":\"other\",\"data\":{}}")};
    clm_branch_state s = reconstructed(e, 4);
    assert_true(s.has_revision);
    assert_int_equal(s.rev.revision, 3);
    assert_int_equal(s.last_revision, 3);
    assert_true(s.enabled);
    clm_branch_state_free(&s);
    /* The earlier branch point (before revision 3) restores revision 1. */
    s = reconstructed(e, 2);
    assert_true(s.has_revision);
    assert_int_equal(s.rev.revision, 1);
    assert_int_equal(s.last_revision, 2);
    clm_branch_state_free(&s);
    /* A head before any revision returns to raw. */
    s = reconstructed(NULL, 0);
    assert_false(s.has_revision);
    assert_int_equal(s.last_revision, 0);
    clm_branch_state_free(&s);
    for (int i = 0; i < 4; i++) free(e[i]);
}

static void test_compaction_reset_and_toggle_after_revision(void **state)
{
    (void)state;
    char *e[3] = {state_entry(accepted_payload(1)), lc_strdup("{\"type\":\"compaction\",\"id\":\"c\","
                                             "\"summary\":\"s\",\"firstKeptEntryId\":\"e1\"}"),
                  state_entry(clm_payload_toggle(0))};
    clm_branch_state s = reconstructed(e, 3);
    assert_false(s.has_revision);
    assert_false(s.enabled);
    assert_non_null(strstr(s.why, "compaction after revision 1"));
    clm_branch_state_free(&s);
    free(e[1]);
    e[1] = state_entry(clm_payload_reset(2, "user"));
    s = reconstructed(e, 2);
    assert_false(s.has_revision);
    assert_int_equal(s.last_revision, 2);
    assert_non_null(strstr(s.why, "reset"));
    clm_branch_state_free(&s);
    for (int i = 0; i < 3; i++) free(e[i]);
}

static void test_malformed_state_entry_is_skipped_not_fatal(void **state)
{
    (void)state;
    char *e[2] = {state_entry(accepted_payload(1)),
                  state_entry(lc_strdup("{\"kind\":\"accept\",\"revision\":2}"))};
    clm_branch_state s = reconstructed(e, 2);
    assert_true(s.has_revision);
    assert_int_equal(s.rev.revision, 1);
    assert_int_equal(s.malformed, 1);
    clm_branch_state_free(&s);
    for (int i = 0; i < 2; i++) free(e[i]);
    char *bad = "not json";
    assert_int_equal(clm_branch_reconstruct(bad, strlen(bad), &s, NULL), LC_INVALID);
}

static void test_revision_anchor_validates_against_raw_prefix(void **state)
{
    (void)state;
    char *p = accepted_payload(1);
    clm_revision r;
    clm_text raw[6];
    char *why = NULL;
    raw_texts(raw, 6);
    assert_int_equal(clm_revision_parse(p, strlen(p), &r, NULL), LC_OK);
    /* New raw messages after the anchor: still valid; effective = revision ++ suffix. */
    assert_true(clm_revision_matches(&r, raw, 6, &why));
    assert_int_equal(r.n_messages + (6 - r.anchor_count), 4);
    /* A branch shorter than the anchor. */
    assert_false(clm_revision_matches(&r, raw, 3, &why));
    assert_non_null(strstr(why, "only 3"));
    free(why);
    why = NULL;
    /* A changed prefix message. */
    raw[2] = (clm_text){RAW[4], strlen(RAW[4])};
    assert_false(clm_revision_matches(&r, raw, 6, &why));
    assert_non_null(strstr(why, "no longer match revision 1"));
    free(why);
    clm_revision_free(&r);
    free(p);
}

TEST_MAIN(
    cmocka_unit_test(test_prefix_digest_depends_on_message_boundaries),
    cmocka_unit_test(test_accept_payload_round_trips_messages_and_anchor),
    cmocka_unit_test(test_slim_payloads_carry_no_messages),
    cmocka_unit_test(test_branch_reconstruct_takes_newest_accepted_revision),
    cmocka_unit_test(test_compaction_reset_and_toggle_after_revision),
    cmocka_unit_test(test_malformed_state_entry_is_skipped_not_fatal),
    cmocka_unit_test(test_revision_anchor_validates_against_raw_prefix),
)
