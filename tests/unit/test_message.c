/* test_message.c -- the AgentMessage model: role names, derived text of every role, the
 * completeness flag, the token estimate, tool-call accessors and usage totals. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "message.h"
#include "test_main.h"

/* Derived text of a JSON literal; *complete receives the flag. */
static char *derive(const char *json, int *complete)
{
    cJSON *m = cJSON_Parse(json);
    assert_non_null(m);
    char *text = msg_derive_text(m, complete);
    assert_non_null(text);
    cJSON_Delete(m);
    return text;
}

/* One message and the text derived from it: a failure names the case's behaviour. */
typedef struct derive_case {
    const char *name;
    const char *json;
    const char *text;
    int complete;
} derive_case;

static void expect_derived(const derive_case *c)
{
    int complete = -1;
    char *text = derive(c->json, &complete);
    if (strcmp(text, c->text) != 0 || complete != c->complete)
        fail_msg("%s: derived \"%s\" (complete %d), want \"%s\" (complete %d)", c->name, text,
                 complete, c->text, c->complete);
    free(text);
}

static void test_role_names_round_trip(void **state)
{
    (void)state;
    for (int r = MSG_ROLE_USER; r <= MSG_ROLE_BASH_EXECUTION; r++) {
        assert_int_equal(msg_role_parse(msg_role_name((msg_role)r)), r);
    }
    assert_string_equal(msg_role_name(MSG_ROLE_TOOL_RESULT), "toolResult");
    assert_string_equal(msg_role_name(MSG_ROLE_UNKNOWN), "unknown");
    assert_int_equal(msg_role_parse("system"), MSG_ROLE_UNKNOWN);
    assert_int_equal(msg_role_parse(NULL), MSG_ROLE_UNKNOWN);
}

static void test_role_of_wrong_typed_role_is_unknown(void **state)
{
    (void)state;
    cJSON *m = cJSON_Parse("{\"role\":7,\"content\":\"x\"}");
    assert_int_equal(msg_role_of(m), MSG_ROLE_UNKNOWN);
    cJSON_Delete(m);
    cJSON *arr = cJSON_Parse("[\"user\"]");
    assert_int_equal(msg_role_of(arr), MSG_ROLE_UNKNOWN);
    cJSON_Delete(arr);
    assert_int_equal(msg_role_of(NULL), MSG_ROLE_UNKNOWN);
}

/* The derived text and completeness flag of every role and block shape. */
static void test_derived_text_and_completeness_of_every_message_shape(void **state)
{
    (void)state;
    static const derive_case cases[] = {
        {"user string content is complete text",
         "{\"role\":\"user\",\"content\":\"fix the bug\",\"timestamp\":1}",
         "fix the bug", 1},
        {"user single text block is complete text",
         "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"hello\"}]}",
         "hello", 1},
        {"user text blocks join with newline and are not complete",
         "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"a\"},"
         "{\"type\":\"text\",\"text\":\"b\"}]}",
         "a\nb", 0},
        {"user image becomes marker and is not complete",
         "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"look\"},"
         "{\"type\":\"image\",\"data\":\"AAAA\",\"mimeType\":\"image/png\"}]}",
         "look\n[image image/png]", 0},
        {"assistant text then tool call lines",
         "{\"role\":\"assistant\",\"content\":["
         "{\"type\":\"toolCall\",\"id\":\"c1\",\"name\":\"read\",\"arguments\":{\"path\":\"a.c\"}},"
         "{\"type\":\"text\",\"text\":\"Reading two files.\"},"
         "{\"type\":\"toolCall\",\"id\":\"c2\",\"name\":\"bash\",\"arguments\":{\"command\":\"ls\"}}],"
         "\"stopReason\":\"toolUse\"}",
         "Reading two files.\n[toolCall read] {\"path\":\"a.c\"}\n[toolCall bash] {\"command\":\"ls\"}", 0},
        {"assistant plain text is complete",
         "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"done\"}],"
         "\"usage\":{\"input\":1,\"output\":2}}",
         "done", 1},
        {"assistant thinking is left out and not complete",
         "{\"role\":\"assistant\",\"content\":[{\"type\":\"thinking\",\"thinking\":"
         "\"secret plan\",\"thinkingSignature\":\"sig\"},{\"type\":\"text\",\"text\":"
         "\"answer\"}]}",
         "answer", 0},
        {"text signature makes message not complete",
         "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"hi\","
         "\"textSignature\":\"abc\"}]}",
         "hi", 0},
        {"unknown block type is named, its encoded data left out, not complete",
         "{\"role\":\"user\",\"content\":[{\"type\":\"audio\",\"data\":\"x\"},"
         "{\"type\":\"text\",\"text\":\"t\"}]}",
         "[audio]\nt", 0},
        {"unknown block type's words are searchable",
         "{\"role\":\"toolResult\",\"toolCallId\":\"c1\",\"toolName\":\"ToolSearch\",\"content\":"
         "[{\"type\":\"tool_reference\",\"tool_name\":\"WebFetch\"}]}",
         "[tool_reference] WebFetch", 0},
        {"tool result with isError is not complete",
         "{\"role\":\"toolResult\",\"toolCallId\":\"c1\",\"toolName\":\"bash\","
         "\"content\":[{\"type\":\"text\",\"text\":\"boom\"}],\"isError\":true}",
         "boom", 0},
        {"tool result with details is not complete",
         "{\"role\":\"toolResult\",\"toolCallId\":\"c1\",\"toolName\":\"edit\","
         "\"content\":[{\"type\":\"text\",\"text\":\"ok\"}],\"details\":{\"diff\":\"+\"}}",
         "ok", 0},
        {"custom message string keeps original",
         "{\"role\":\"custom\",\"customType\":\"note\",\"content\":\"remember X\","
         "\"display\":true}",
         "remember X", 0},
        {"custom message text block keeps original",
         "{\"role\":\"custom\",\"customType\":\"note\",\"content\":[{\"type\":\"text\","
         "\"text\":\"block\"}],\"display\":false}",
         "block", 0},
        {"compaction summary derives its summary",
         "{\"role\":\"compactionSummary\",\"summary\":\"We fixed it.\","
         "\"tokensBefore\":50000}",
         "We fixed it.", 1},
        {"branch summary derives its summary",
         "{\"role\":\"branchSummary\",\"summary\":\"Tried B.\",\"fromId\":\"e9\"}",
         "Tried B.", 1},
        {"bash execution derives prompt and output",
         "{\"role\":\"bashExecution\",\"command\":\"make\",\"output\":\"ok\\n\","
         "\"exitCode\":0,\"cancelled\":false,\"truncated\":false}",
         "$ make\nok\n", 0},
        {"wrong types are absent: a number as content",
         "{\"role\":\"user\",\"content\":42}",
         "", 1},
        {"wrong types are absent: blocks that are no text blocks",
         "{\"role\":\"user\",\"content\":[7,null,{\"type\":\"text\",\"text\":5}]}",
         "", 0},
        {"wrong types are absent: an array as summary",
         "{\"role\":\"compactionSummary\",\"summary\":[1]}",
         "", 1},
        {"wrong types are absent: an object as command",
         "{\"role\":\"bashExecution\",\"command\":{},\"output\":null}",
         "$ \n", 0},
        {"wrong types are absent: a number as tool name",
         "{\"role\":\"assistant\",\"content\":[{\"type\":\"toolCall\",\"name\":3}]}",
         "[toolCall ?] {}", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) expect_derived(&cases[i]);
}

static void test_tool_result_text_and_accessors(void **state)
{
    (void)state;
    const char *json = "{\"role\":\"toolResult\",\"toolCallId\":\"c1\",\"toolName\":\"read\","
                       "\"content\":[{\"type\":\"text\",\"text\":\"int main;\"}],\"isError\":false}";
    expect_derived(&(derive_case){"tool result text", json, "int main;", 1});
    cJSON *m = cJSON_Parse(json);
    assert_string_equal(msg_tool_call_id(m), "c1");
    assert_string_equal(msg_tool_name(m), "read");
    cJSON_Delete(m);
}

static void test_wrong_types_are_treated_as_absent(void **state)
{
    (void)state;
    cJSON *m = cJSON_Parse("{\"role\":\"toolResult\",\"toolCallId\":1,\"toolName\":[]}");
    assert_null(msg_tool_call_id(m));
    assert_null(msg_tool_name(m));
    cJSON_Delete(m);
}

static void test_derive_text_of_non_object_is_empty_and_not_complete(void **state)
{
    (void)state;
    int complete = -1;
    char *text = msg_derive_text(NULL, &complete);
    assert_string_equal(text, "");
    assert_int_equal(complete, 0);
    free(text);
}

static void test_estimate_rounds_characters_up_to_tokens(void **state)
{
    (void)state;
    assert_int_equal(msg_estimate_tokens_json("{\"role\":\"user\",\"content\":\"\"}"), 0);
    assert_int_equal(msg_estimate_tokens_json("{\"role\":\"user\",\"content\":\"abcd\"}"), 1);
    assert_int_equal(msg_estimate_tokens_json("{\"role\":\"user\",\"content\":\"abcde\"}"), 2);
}

static void test_estimate_counts_images_as_1200_tokens(void **state)
{
    (void)state;
    assert_int_equal(msg_estimate_tokens_json(
                         "{\"role\":\"toolResult\",\"toolCallId\":\"c\",\"toolName\":\"read\","
                         "\"content\":[{\"type\":\"text\",\"text\":\"12345678\"},"
                         "{\"type\":\"image\",\"data\":\"AAAAAAAAAAAAAAAAAAAA\",\"mimeType\":"
                         "\"image/png\"},{\"type\":\"image\",\"data\":\"\",\"mimeType\":\"x\"}]}"),
                     2 + 2 * 1200);
}

static void test_estimate_counts_thinking_and_tool_call_arguments(void **state)
{
    (void)state;
    /* thinking 8 + text 4 + name "read" 4 + {"p":"abcdef"} 14 = 30 chars -> 8 tokens */
    assert_int_equal(msg_estimate_tokens_json(
                         "{\"role\":\"assistant\",\"content\":["
                         "{\"type\":\"thinking\",\"thinking\":\"12345678\"},"
                         "{\"type\":\"text\",\"text\":\"abcd\"},"
                         "{\"type\":\"toolCall\",\"id\":\"x\",\"name\":\"read\","
                         "\"arguments\":{\"p\":\"abcdef\"}}]}"),
                     8);
}

static void test_estimate_counts_utf16_units_like_the_reference(void **state)
{
    (void)state;
    /* "é" is one unit (2 bytes), "😀" two units (4 bytes): 4 x é = 4 units -> 1 token. */
    assert_int_equal(msg_estimate_tokens_json(
                         "{\"role\":\"user\",\"content\":\"\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\"}"),
                     1);
    assert_int_equal(msg_estimate_tokens_json(
                         "{\"role\":\"user\",\"content\":\"\xf0\x9f\x98\x80\xf0\x9f\x98\x80" "a\"}"),
                     2);
}

static void test_estimate_of_other_roles(void **state)
{
    (void)state;
    assert_int_equal(msg_estimate_tokens_json("{\"role\":\"bashExecution\",\"command\":\"ls\","
                                              "\"output\":\"abcdefg\"}"),
                     3);
    assert_int_equal(
        msg_estimate_tokens_json("{\"role\":\"branchSummary\",\"summary\":\"123456789\"}"), 3);
    assert_int_equal(msg_estimate_tokens_json("{\"role\":\"custom\",\"customType\":\"n\","
                                              "\"content\":\"12345\"}"),
                     2);
    assert_int_equal(msg_estimate_tokens_json("{\"role\":\"system\",\"content\":\"1234\"}"), 0);
    assert_int_equal(msg_estimate_tokens_json("{not json"), 0);
    assert_int_equal(msg_estimate_tokens_json(NULL), 0);
}

static void test_tool_call_count_counts_only_assistant_tool_calls(void **state)
{
    (void)state;
    cJSON *a = cJSON_Parse("{\"role\":\"assistant\",\"content\":[{\"type\":\"toolCall\"},"
                           "{\"type\":\"text\",\"text\":\"x\"},{\"type\":\"toolCall\"}]}");
    cJSON *u = cJSON_Parse("{\"role\":\"user\",\"content\":[{\"type\":\"toolCall\"}]}");
    assert_int_equal(msg_tool_call_count(a), 2);
    assert_int_equal(msg_tool_call_count(u), 0);
    assert_null(msg_tool_call_id(a));
    cJSON_Delete(a);
    cJSON_Delete(u);
}

/* The usage total of a message given as JSON. */
static long usage_total_of(const char *json)
{
    cJSON *m = cJSON_Parse(json);
    long total = msg_usage_total(m);
    cJSON_Delete(m);
    return total;
}

static void test_usage_total_prefers_total_tokens_then_sums_parts(void **state)
{
    (void)state;
    assert_int_equal(usage_total_of("{\"role\":\"assistant\",\"content\":[],\"usage\":{\"input\":10,"
                                    "\"output\":5,\"cacheRead\":100,\"cacheWrite\":1,"
                                    "\"totalTokens\":116,\"cost\":{\"total\":0.1}}}"),
                     116);
    assert_int_equal(usage_total_of("{\"role\":\"assistant\",\"content\":[],\"usage\":{\"input\":10,"
                                    "\"output\":5,\"cacheRead\":\"many\",\"cacheWrite\":2}}"),
                     17);
    assert_int_equal(usage_total_of("{\"role\":\"assistant\",\"content\":[]}"), 0);
    assert_int_equal(usage_total_of("{\"role\":\"user\",\"usage\":{\"totalTokens\":9}}"), 0);
}

/* Providers and hosts read these shapes; their key order is part of what the plugin sends. */
static void test_built_message_and_tool_result_keep_their_shape(void **state)
{
    (void)state;
    cJSON *m = msg_text_message("user", "hi", 5);
    char *j = cJSON_PrintUnformatted(m);
    assert_string_equal(j, "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"hi\"}],"
                           "\"timestamp\":5}");
    free(j);
    cJSON_Delete(m);
    cJSON *r = msg_tool_result("done", cJSON_CreateObject(), 1);
    j = cJSON_PrintUnformatted(r);
    assert_string_equal(j, "{\"content\":[{\"type\":\"text\",\"text\":\"done\"}],\"details\":{},"
                           "\"isError\":true}");
    free(j);
    cJSON_Delete(r);
}

static void test_typed_by_person_refuses_harness_tags_and_compaction_summaries(void **state)
{
    (void)state;
    static const char *const typed[] = {"fix the parser, please", "\n  why does <b> render bold?"};
    static const char *const not_typed[] = {
        "<command-name>/clear</command-name>",
        "  <system-reminder>x</system-reminder>",
        "Caveat: the messages below were generated by the user",
        "This session is being continued from a previous conversation that ran out",
        " \n ",
    };
    for (size_t i = 0; i < sizeof typed / sizeof typed[0]; i++)
        if (!msg_typed_by_person(typed[i])) fail_msg("\"%s\" should count as typed by a person", typed[i]);
    for (size_t i = 0; i < sizeof not_typed / sizeof not_typed[0]; i++)
        if (msg_typed_by_person(not_typed[i]))
            fail_msg("\"%s\" should not count as typed by a person", not_typed[i]);
}

static void test_index_text_decodes_tool_arguments_and_keeps_thinking_apart(void **state)
{
    (void)state;
    cJSON *m = cJSON_Parse("{\"role\":\"assistant\",\"content\":[{\"type\":\"thinking\",\"thinking\":\"weigh it\"},"
                           "{\"type\":\"text\",\"text\":\"Writing.\"},{\"type\":\"thinking\",\"thinking\":\"then this\"},"
                           "{\"type\":\"toolCall\",\"id\":\"c1\",\"name\":\"write\",\"arguments\":{\"path\":\"a.md\","
                           "\"content\":\"one\\nUpdate \\\"two\\\"\",\"n\":3,\"opts\":[\"x\",true]}},{\"type\":\"toolCall\","
                           "\"id\":\"c2\",\"name\":\"bash\",\"arguments\":\"{\\\"command\\\":\\\"ls\\\\nWombat\\\"}\"}]}");
    assert_non_null(m);
    char *body = NULL, *thinking = NULL;
    assert_int_equal(msg_index_text(m, &body, &thinking), 0);
    assert_string_equal(body, "Writing.\n[toolCall write]\npath: a.md\ncontent: one\nUpdate \"two\"\nn: 3\nopts: x\n"
                              "opts: true\n[toolCall bash]\ncommand: ls\nWombat");
    assert_string_equal(thinking, "weigh it\nthen this");
    free(body);
    free(thinking);
    /* The stored text keeps the JSON, and one walk gives the text, the estimate and both. */
    int complete = 1;
    size_t tokens = 0;
    char *text = msg_derive_all(m, &complete, &tokens, &body, &thinking);
    char *alone = msg_derive_text(m, NULL);
    assert_string_equal(text, alone);
    assert_non_null(strstr(text, "[toolCall write] {\"path\":\"a.md\""));
    assert_int_equal(tokens, msg_estimate_tokens(m));
    assert_int_equal(complete, 0);
    assert_non_null(body);
    assert_non_null(thinking);
    free(text);
    free(alone);
    free(body);
    free(thinking);
    cJSON_Delete(m);
    /* No tool call, no thinking: the text is the body. */
    m = cJSON_Parse("{\"role\":\"user\",\"content\":\"plain\"}");
    assert_int_equal(msg_index_text(m, &body, &thinking), 0);
    assert_null(body);
    assert_null(thinking);
    cJSON_Delete(m);
}

/* The estimate counts UTF-16 units whatever the mix and wherever a character falls against
 * the eight-byte steps it is counted in: each text against a byte-by-byte count. */
static void test_estimate_counts_every_mix_of_widths_at_every_offset(void **state)
{
    (void)state;
    static const char *const pieces[] = {"a", "é", "现", "😀", "\n", "Zz"};
    for (unsigned seed = 1; seed < 400; seed++) {
        char text[256] = "";
        size_t units = 0, len = 0;
        for (unsigned k = seed, i = 0; i < 1 + seed % 37; i++, k = k * 1103515245u + 12345u) {
            const char *p = pieces[(k >> 16) % 6];
            if (len + strlen(p) >= sizeof text) break;
            memcpy(text + len, p, strlen(p) + 1);
            len += strlen(p);
            units += !strcmp(p, "😀") ? 2 : !strcmp(p, "Zz") ? 2 : 1;
        }
        cJSON *m = cJSON_CreateObject();
        cJSON_AddStringToObject(m, "role", "user");
        cJSON_AddStringToObject(m, "content", text);
        assert_int_equal(msg_estimate_tokens(m), (units + 3) / 4);
        size_t tokens = 0;
        char *body = NULL, *thinking = NULL, *t = msg_derive_all(m, NULL, &tokens, &body, &thinking);
        assert_int_equal(tokens, (units + 3) / 4);
        free(t);
        cJSON_Delete(m);
    }
}

TEST_MAIN(
    cmocka_unit_test(test_index_text_decodes_tool_arguments_and_keeps_thinking_apart),
    cmocka_unit_test(test_estimate_counts_every_mix_of_widths_at_every_offset),
    cmocka_unit_test(test_role_names_round_trip),
    cmocka_unit_test(test_role_of_wrong_typed_role_is_unknown),
    cmocka_unit_test(test_derived_text_and_completeness_of_every_message_shape),
    cmocka_unit_test(test_tool_result_text_and_accessors),
    cmocka_unit_test(test_wrong_types_are_treated_as_absent),
    cmocka_unit_test(test_derive_text_of_non_object_is_empty_and_not_complete),
    cmocka_unit_test(test_estimate_rounds_characters_up_to_tokens),
    cmocka_unit_test(test_estimate_counts_images_as_1200_tokens),
    cmocka_unit_test(test_estimate_counts_thinking_and_tool_call_arguments),
    cmocka_unit_test(test_estimate_counts_utf16_units_like_the_reference),
    cmocka_unit_test(test_estimate_of_other_roles),
    cmocka_unit_test(test_tool_call_count_counts_only_assistant_tool_calls),
    cmocka_unit_test(test_usage_total_prefers_total_tokens_then_sums_parts),
    cmocka_unit_test(test_built_message_and_tool_result_keep_their_shape),
    cmocka_unit_test(test_typed_by_person_refuses_harness_tags_and_compaction_summaries),
)
