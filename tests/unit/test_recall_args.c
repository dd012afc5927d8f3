/*
 * test_recall_args.c -- the recall tools' arguments as recall reads them: every field of
 * lcm_grep / lcm_describe / lcm_expand_query, counts floored and clamped at 0, a count no
 * count can be refused with the tool's sentence, hybrid's refusals, and schemas that are
 * JSON objects a host can register.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "embed.h"
#include "recall_args.h"
#include "util.h"
#include "test_main.h"

/* The "arguments" of a tool call whose arguments are `json`; the call is kept in *call. */
static const cJSON *args_of(const char *json, cJSON **call)
{
    char *text = lc_asprintf("{\"arguments\":%s}", json);
    *call = cJSON_Parse(text);
    free(text);
    assert_non_null(*call);
    return recall_args_of(*call);
}

/* One lcm_grep call read: the call (its strings are the options'), the options and the
 * outcome. */
typedef struct grep_read {
    cJSON *call;
    recall_grep_opts o;
    const char *scope;
    int hybrid;
    char *err;
    int rc;
} grep_read;

static grep_read grep_read_of(const char *json)
{
    grep_read g = {0};
    g.rc = recall_args_grep(args_of(json, &g.call), &g.o, &g.scope, &g.hybrid, &g.err);
    return g;
}

static void grep_read_free(grep_read *g)
{
    cJSON_Delete(g->call);
    free(g->err);
}

static void test_grep_reads_every_field_and_floors_the_offset(void **state)
{
    (void)state;
    grep_read g = grep_read_of("{\"query\":\"q\",\"pattern\":\"p\",\"case_sensitive\":true,\"include_removed\":true,"
                               "\"resume\":\"3:e9\",\"summary_id\":\"#12\",\"offset\":40.7,\"scope\":\"sessions\","
                               "\"mode\":\"hybrid\"}");
    assert_int_equal(g.rc, LC_OK);
    assert_string_equal(g.o.query, "q");
    assert_string_equal(g.o.pattern, "p");
    assert_true(g.o.case_sensitive && g.o.include_removed);
    assert_string_equal(g.o.resume, "3:e9");
    assert_int_equal(g.o.summary_id, 12);
    assert_int_equal(g.o.offset, 40);
    assert_string_equal(g.scope, "sessions");
    assert_true(g.hybrid);
    grep_read_free(&g);
}

static void test_grep_empty_strings_are_absent_and_a_negative_offset_is_zero(void **state)
{
    (void)state;
    grep_read g = grep_read_of("{\"query\":\"\",\"offset\":-5,\"summary_id\":7,\"mode\":\"fts\"}");
    assert_int_equal(g.rc, LC_OK);
    assert_null(g.o.query);
    assert_null(g.scope);
    assert_false(g.hybrid);
    assert_int_equal(g.o.offset, 0);
    assert_int_equal(g.o.summary_id, 7);
    grep_read_free(&g);
}

static void test_grep_refuses_an_offset_no_count_can_be(void **state)
{
    (void)state;
    grep_read g = grep_read_of("{\"query\":\"q\",\"offset\":1e300}");
    assert_int_equal(g.rc, LC_INVALID);
    assert_string_equal(g.err, "lcm_grep: offset is an integer from 0 to 1000000000");
    grep_read_free(&g);
}

static void test_hybrid_needs_embeddings_and_a_query_without_a_pattern(void **state)
{
    (void)state;
    lcm_embeddings on = {.enabled = 1}, off = {0};
    recall_grep_opts g = {.query = "why", .offset = 20, .include_removed = 1, .redact = 1};
    hybrid_opts h;
    char *err = NULL;
    assert_int_equal(recall_args_hybrid(&g, &off, &h, &err), LC_INVALID);
    assert_non_null(strstr(err, embed_not_configured));
    free(err);
    err = NULL;
    g.pattern = "w.y";
    assert_int_equal(recall_args_hybrid(&g, &on, &h, &err), LC_INVALID);
    assert_string_equal(err, "lcm_grep: mode hybrid takes a query (words or a question), not a pattern");
    free(err);
    g.pattern = NULL;
    assert_int_equal(recall_args_hybrid(&g, &on, &h, NULL), LC_OK);
    assert_string_equal(h.query, "why");
    assert_ptr_equal(h.cfg, &on);
    assert_int_equal(h.offset, 20);
    assert_true(h.include_removed && h.redact);
}

static void test_describe_takes_id_then_summary_id_then_path(void **state)
{
    (void)state;
    static const struct { const char *args, *want; } cases[] = {
        {"{\"id\":\"#3\",\"summary_id\":4,\"path\":\"a.c\"}", "#3"},
        {"{\"summary_id\":4,\"path\":\"a.c\"}", "4"},
        {"{\"summary_id\":0,\"path\":\"a.c\"}", "a.c"},
        {"{}", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cJSON *call;
        char buf[32];
        const char *id = recall_args_describe_id(args_of(cases[i].args, &call), buf, sizeof buf);
        if (cases[i].want ? !id || strcmp(id, cases[i].want) != 0 : id != NULL)
            fail_msg("%s: id %s, expected %s", cases[i].args, id ? id : "(none)",
                     cases[i].want ? cases[i].want : "(none)");
        cJSON_Delete(call);
    }
}

static void test_expand_reads_its_fields_and_refuses_a_count_no_count_can_be(void **state)
{
    (void)state;
    cJSON *call;
    recall_expand_opts o;
    const char *session;
    char *err = NULL;
    const cJSON *a = args_of("{\"query\":\"q\",\"entry_id\":\"e1\",\"session\":\"s2\",\"max_tokens\":99.9,"
                             "\"char_offset\":-1}", &call);
    assert_int_equal(recall_args_expand(a, &o, &session, &err), LC_OK);
    assert_string_equal(o.question, "q");
    assert_string_equal(o.entry_id, "e1");
    assert_string_equal(session, "s2");
    assert_int_equal(o.max_tokens, 99);
    assert_int_equal(o.char_offset, 0);
    cJSON_Delete(call);
    a = args_of("{\"question\":\"w\",\"char_offset\":2e9}", &call);
    assert_int_equal(recall_args_expand(a, &o, &session, &err), LC_INVALID);
    assert_string_equal(err, "lcm_expand_query: max_tokens and char_offset are integers from 0 to 1000000000");
    free(err);
    cJSON_Delete(call);
}

static void test_schemas_are_json_objects(void **state)
{
    (void)state;
    const char *schemas[] = {recall_args_grep_schema, recall_args_describe_schema, recall_args_expand_schema};
    for (size_t i = 0; i < 3; i++) {
        cJSON *s = cJSON_Parse(schemas[i]);
        if (!cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(s, "properties")))
            fail_msg("schema %zu has no properties object", i);
        cJSON_Delete(s);
    }
}

TEST_MAIN(
    cmocka_unit_test(test_grep_reads_every_field_and_floors_the_offset),
    cmocka_unit_test(test_grep_empty_strings_are_absent_and_a_negative_offset_is_zero),
    cmocka_unit_test(test_grep_refuses_an_offset_no_count_can_be),
    cmocka_unit_test(test_hybrid_needs_embeddings_and_a_query_without_a_pattern),
    cmocka_unit_test(test_describe_takes_id_then_summary_id_then_path),
    cmocka_unit_test(test_expand_reads_its_fields_and_refuses_a_count_no_count_can_be),
    cmocka_unit_test(test_schemas_are_json_objects),
)
