/*
 * test_host_llm.c -- the reference host's model client and built-in tools. The host
 * sources are compiled into this test directly (the generic unit rule links libengine.a
 * only). HTTP tests talk to tests/contract/fake_openai.py on a loopback port.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "../../host/llm.c"
#include "../../host/tools.c"

#include <pthread.h>
#include <sys/socket.h>
#include <netinet/in.h>

#include "temp_home.h"
#include "expect_text.h"
#include "test_main.h"

/* ------------------------------------------------------------------------------------
 * helpers
 * ---------------------------------------------------------------------------------- */

static char *path_in_tmp(const char *name)
{
    return lc_asprintf("%s/%s", home, name);
}

static void put_file(const char *name, const char *text)
{
    char *p = path_in_tmp(name);
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    free(p);
}

static char *get_file(const char *name)
{
    char *p = path_in_tmp(name), *data = NULL;
    size_t len;
    int rc = lc_read_file(p, &data, &len, NULL);
    free(p);
    return rc == LC_OK ? data : NULL;
}

static const char *result_text(const cJSON *r)
{
    const cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItem(r, "content"), 0);
    const cJSON *t = cJSON_GetObjectItem(c, "text");
    return cJSON_IsString(t) ? t->valuestring : "";
}

static int result_is_error(const cJSON *r) { return cJSON_IsTrue(cJSON_GetObjectItem(r, "isError")); }

static double detail_num(const cJSON *r, const char *key)
{
    const cJSON *v = cJSON_GetObjectItem(cJSON_GetObjectItem(r, "details"), key);
    return cJSON_IsNumber(v) ? v->valuedouble : -12345;
}

static cJSON *run_tool(const char *name, const char *args_json)
{
    cJSON *args = cJSON_Parse(args_json);
    assert_non_null(args);
    cJSON *r = tools_run(name, args, home);
    cJSON_Delete(args);
    assert_non_null(r);
    return r;
}

/* Tool `name` on args_json answers with a result that is no error; the caller deletes it. */
static cJSON *run_tool_ok(const char *name, const char *args_json)
{
    cJSON *r = run_tool(name, args_json);
    assert_false(result_is_error(r));
    return r;
}

/* The file `name` in the home holds exactly `want`. */
static void expect_file(const char *name, const char *want)
{
    char *data = get_file(name);
    assert_string_equal(data, want);
    free(data);
}

/* Tool `name` on args_json answers with an error result whose text holds `want` (NULL:
 * any text). */
static void expect_tool_error(const char *name, const char *args_json, const char *want)
{
    cJSON *r = run_tool(name, args_json);
    assert_true(result_is_error(r));
    if (want)
        assert_non_null(strstr(result_text(r), want));
    cJSON_Delete(r);
}

static cJSON *build(const char *system, const char **msgs, size_t n, const cJSON *tools, long max)
{
    llm_config cfg = {.base_url = "http://x/v1", .model = "m1"};
    cJSON *p = llm_build_payload(&cfg, system, msgs, n, tools, max);
    assert_non_null(p);
    return p;
}

static const cJSON *pmsg(const cJSON *payload, int i)
{
    return cJSON_GetArrayItem(cJSON_GetObjectItem(payload, "messages"), i);
}

static const char *sget(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItem(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

#include "fake_server.h"

static int complete_with(int port, long timeout, const char *payload, char **out, char **err)
{
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/v1", port);
    llm_config cfg = {.base_url = url, .model = "fake", .timeout_seconds = timeout};
    return llm_complete(&cfg, payload, out, err);
}

/* ------------------------------------------------------------------------------------
 * payload
 * ---------------------------------------------------------------------------------- */

static void test_payload_puts_system_first_and_wraps_tools(void **state)
{
    (void)state;
    const char *msgs[] = {"{\"role\":\"user\",\"content\":\"hi\",\"timestamp\":1}"};
    cJSON *tools = tools_builtin_definitions();
    cJSON *p = build("be brief", msgs, 1, tools, 777);
    assert_string_equal(sget(p, "model"), "m1");
    assert_string_equal(sget(pmsg(p, 0), "role"), "system");
    assert_string_equal(sget(pmsg(p, 0), "content"), "be brief");
    assert_string_equal(sget(pmsg(p, 1), "role"), "user");
    assert_string_equal(sget(pmsg(p, 1), "content"), "hi");
    assert_int_equal(cJSON_GetObjectItem(p, "max_tokens")->valuedouble, 777);
    assert_true(cJSON_IsFalse(cJSON_GetObjectItem(p, "stream")));
    const cJSON *t0 = cJSON_GetArrayItem(cJSON_GetObjectItem(p, "tools"), 0);
    assert_string_equal(sget(t0, "type"), "function");
    const cJSON *fn = cJSON_GetObjectItem(t0, "function");
    assert_string_equal(sget(fn, "name"), "read");
    assert_string_equal(sget(cJSON_GetObjectItem(fn, "parameters"), "type"), "object");
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(p, "tools")), 4);
    cJSON_Delete(tools);
    cJSON_Delete(p);
}

static void test_payload_omits_tools_and_max_tokens_when_absent(void **state)
{
    (void)state;
    const char *msgs[] = {"{\"role\":\"user\",\"content\":\"hi\"}"};
    cJSON *p = build(NULL, msgs, 1, NULL, 0);
    assert_null(cJSON_GetObjectItem(p, "tools"));
    assert_null(cJSON_GetObjectItem(p, "max_tokens"));
    assert_string_equal(sget(pmsg(p, 0), "role"), "user");
    cJSON_Delete(p);
}

static void test_payload_maps_tool_calls_and_results_dropping_thinking(void **state)
{
    (void)state;
    const char *msgs[] = {
        "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"list\"}]}",
        "{\"role\":\"assistant\",\"content\":[{\"type\":\"thinking\",\"thinking\":\"SECRET\"},"
        "{\"type\":\"text\",\"text\":\"ok\"},{\"type\":\"toolCall\",\"id\":\"c1\",\"name\":\"bash\","
        "\"arguments\":{\"command\":\"ls\"}}],\"stopReason\":\"toolUse\"}",
        "{\"role\":\"toolResult\",\"toolCallId\":\"c1\",\"toolName\":\"bash\",\"content\":"
        "[{\"type\":\"text\",\"text\":\"a.txt\"}],\"isError\":false}",
    };
    cJSON *p = build(NULL, msgs, 3, NULL, 0);
    char *s = cJSON_PrintUnformatted(p);
    assert_null(strstr(s, "SECRET"));
    free(s);
    const cJSON *a = pmsg(p, 1);
    assert_string_equal(sget(a, "role"), "assistant");
    assert_string_equal(sget(a, "content"), "ok");
    const cJSON *call = cJSON_GetArrayItem(cJSON_GetObjectItem(a, "tool_calls"), 0);
    assert_string_equal(sget(call, "id"), "c1");
    assert_string_equal(sget(call, "type"), "function");
    const cJSON *fn = cJSON_GetObjectItem(call, "function");
    assert_string_equal(sget(fn, "name"), "bash");
    assert_string_equal(sget(fn, "arguments"), "{\"command\":\"ls\"}");
    const cJSON *t = pmsg(p, 2);
    assert_string_equal(sget(t, "role"), "tool");
    assert_string_equal(sget(t, "tool_call_id"), "c1");
    assert_string_equal(sget(t, "content"), "a.txt");
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(p, "messages")), 3);
    cJSON_Delete(p);
}

static void test_payload_assistant_with_only_calls_has_null_content(void **state)
{
    (void)state;
    const char *msgs[] = {
        "{\"role\":\"assistant\",\"content\":[{\"type\":\"toolCall\",\"id\":\"c1\",\"name\":\"read\","
        "\"arguments\":{\"path\":\"x\"}}]}",
        "{\"role\":\"toolResult\",\"toolCallId\":\"c1\",\"toolName\":\"read\",\"content\":"
        "[{\"type\":\"text\",\"text\":\"X\"}]}",
    };
    cJSON *p = build(NULL, msgs, 2, NULL, 0);
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(pmsg(p, 0), "content")));
    cJSON_Delete(p);
}

static void test_payload_turns_summaries_custom_and_bash_into_user_text(void **state)
{
    (void)state;
    const char *msgs[] = {
        "{\"role\":\"compactionSummary\",\"summary\":\"S1\",\"tokensBefore\":5}",
        "{\"role\":\"branchSummary\",\"summary\":\"B1\",\"fromId\":\"x\"}",
        "{\"role\":\"custom\",\"customType\":\"note\",\"content\":\"C1\",\"display\":true}",
        "{\"role\":\"bashExecution\",\"command\":\"ls\",\"output\":\"f\",\"exitCode\":0}",
        "{\"role\":\"bashExecution\",\"command\":\"secret\",\"output\":\"f\",\"exitCode\":0,"
        "\"excludeFromContext\":true}",
    };
    cJSON *p = build(NULL, msgs, 5, NULL, 0);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(p, "messages")), 4);
    for (int i = 0; i < 4; i++) assert_string_equal(sget(pmsg(p, i), "role"), "user");
    assert_non_null(strstr(sget(pmsg(p, 0), "content"),
                           "The conversation history before this point was compacted into the "
                           "following summary:"));
    assert_non_null(strstr(sget(pmsg(p, 0), "content"), "<summary>\nS1\n</summary>"));
    assert_non_null(strstr(sget(pmsg(p, 1), "content"),
                           "The following is a summary of a branch that this conversation came "
                           "back from:"));
    assert_non_null(strstr(sget(pmsg(p, 1), "content"), "B1"));
    assert_string_equal(sget(pmsg(p, 2), "content"), "C1");
    assert_string_equal(sget(pmsg(p, 3), "content"), "Ran `ls`\n```\nf\n```");
    cJSON_Delete(p);
}

static void test_payload_skips_unknown_roles_and_thinking_only_turns(void **state)
{
    (void)state;
    const char *msgs[] = {
        "{\"role\":\"mystery\",\"content\":\"nope\"}",
        "not json at all",
        "{\"role\":\"assistant\",\"content\":[{\"type\":\"thinking\",\"thinking\":\"t\"}]}",
        "{\"role\":\"user\",\"content\":\"q\"}",
        "{\"role\":\"user\",\"content\":\"q2\"}",
    };
    cJSON *p = build(NULL, msgs, 5, NULL, 0);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(p, "messages")), 2);
    assert_string_equal(sget(pmsg(p, 0), "content"), "q");
    assert_string_equal(sget(pmsg(p, 1), "content"), "q2");
    cJSON_Delete(p);
}

static void test_payload_sends_images_as_data_uris(void **state)
{
    (void)state;
    const char *msgs[] = {
        "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"see\"},"
        "{\"type\":\"image\",\"data\":\"QUJD\",\"mimeType\":\"image/png\"}]}",
    };
    cJSON *p = build(NULL, msgs, 1, NULL, 0);
    const cJSON *content = cJSON_GetObjectItem(pmsg(p, 0), "content");
    assert_true(cJSON_IsArray(content));
    const cJSON *img = cJSON_GetArrayItem(content, 1);
    assert_string_equal(sget(img, "type"), "image_url");
    assert_string_equal(sget(cJSON_GetObjectItem(img, "image_url"), "url"),
                        "data:image/png;base64,QUJD");
    cJSON_Delete(p);
}

static void test_payload_answers_unanswered_calls_and_moves_orphan_results(void **state)
{
    (void)state;
    const char *msgs[] = {
        "{\"role\":\"assistant\",\"content\":[{\"type\":\"toolCall\",\"id\":\"c1\",\"name\":\"bash\","
        "\"arguments\":{}}]}",
        "{\"role\":\"user\",\"content\":\"interrupt\"}",
        "{\"role\":\"toolResult\",\"toolCallId\":\"zz\",\"toolName\":\"bash\",\"content\":"
        "[{\"type\":\"text\",\"text\":\"late\"}]}",
    };
    cJSON *p = build(NULL, msgs, 3, NULL, 0);
    assert_string_equal(sget(pmsg(p, 1), "role"), "tool");
    assert_string_equal(sget(pmsg(p, 1), "tool_call_id"), "c1");
    assert_string_equal(sget(pmsg(p, 2), "content"), "interrupt");
    assert_string_equal(sget(pmsg(p, 3), "role"), "user");
    assert_non_null(strstr(sget(pmsg(p, 3), "content"), "late"));
    cJSON_Delete(p);
}

/* ------------------------------------------------------------------------------------
 * response conversion
 * ---------------------------------------------------------------------------------- */

static cJSON *convert(const char *body)
{
    char *out = NULL, *err = NULL;
    assert_int_equal(llm_convert_response("fake", body, &out, &err), 0);
    cJSON *m = cJSON_Parse(out);
    free(out);
    assert_non_null(m);
    return m;
}

static void test_response_usage_excludes_cached_tokens_from_input(void **state)
{
    (void)state;
    cJSON *m = convert("{\"choices\":[{\"message\":{\"role\":\"assistant\",\"content\":\"hi\"},"
                       "\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":100,"
                       "\"completion_tokens\":7,\"total_tokens\":107,"
                       "\"prompt_tokens_details\":{\"cached_tokens\":60}}}");
    const cJSON *u = cJSON_GetObjectItem(m, "usage");
    assert_int_equal(cJSON_GetObjectItem(u, "input")->valuedouble, 40);
    assert_int_equal(cJSON_GetObjectItem(u, "output")->valuedouble, 7);
    assert_int_equal(cJSON_GetObjectItem(u, "cacheRead")->valuedouble, 60);
    assert_int_equal(cJSON_GetObjectItem(u, "cacheWrite")->valuedouble, 0);
    assert_int_equal(cJSON_GetObjectItem(u, "totalTokens")->valuedouble, 107);
    assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(u, "cost"), "total")->valuedouble, 0);
    assert_string_equal(sget(m, "stopReason"), "stop");
    assert_string_equal(sget(m, "role"), "assistant");
    assert_string_equal(sget(m, "api"), "openai-completions");
    assert_string_equal(sget(m, "model"), "fake");
    assert_true(cJSON_IsNumber(cJSON_GetObjectItem(m, "timestamp")));
    const cJSON *b = cJSON_GetArrayItem(cJSON_GetObjectItem(m, "content"), 0);
    assert_string_equal(sget(b, "type"), "text");
    assert_string_equal(sget(b, "text"), "hi");
    cJSON_Delete(m);
}

static void test_response_tool_calls_become_toolcall_blocks(void **state)
{
    (void)state;
    cJSON *m = convert("{\"choices\":[{\"message\":{\"role\":\"assistant\",\"content\":null,"
                       "\"tool_calls\":[{\"id\":\"k1\",\"type\":\"function\",\"function\":"
                       "{\"name\":\"read\",\"arguments\":\"{\\\"path\\\":\\\"a\\\"}\"}},"
                       "{\"id\":\"k2\",\"type\":\"function\",\"function\":{\"name\":\"bash\","
                       "\"arguments\":\"{broken\"}}]},\"finish_reason\":\"tool_calls\"}]}");
    assert_string_equal(sget(m, "stopReason"), "toolUse");
    const cJSON *content = cJSON_GetObjectItem(m, "content");
    assert_int_equal(cJSON_GetArraySize(content), 2);
    const cJSON *c0 = cJSON_GetArrayItem(content, 0);
    assert_string_equal(sget(c0, "type"), "toolCall");
    assert_string_equal(sget(c0, "id"), "k1");
    assert_string_equal(sget(c0, "name"), "read");
    assert_string_equal(sget(cJSON_GetObjectItem(c0, "arguments"), "path"), "a");
    const cJSON *c1 = cJSON_GetArrayItem(content, 1);
    assert_string_equal(sget(cJSON_GetObjectItem(c1, "arguments"), "_raw"), "{broken");
    cJSON_Delete(m);
}

static void test_response_maps_length_and_missing_ids(void **state)
{
    (void)state;
    cJSON *m = convert("{\"choices\":[{\"message\":{\"content\":\"cut\",\"tool_calls\":[{"
                       "\"function\":{\"name\":\"bash\",\"arguments\":\"\"}}]},"
                       "\"finish_reason\":\"length\"}]}");
    assert_string_equal(sget(m, "stopReason"), "length");
    const cJSON *c1 = cJSON_GetArrayItem(cJSON_GetObjectItem(m, "content"), 1);
    assert_true(strlen(sget(c1, "id")) > 0);
    assert_true(cJSON_IsObject(cJSON_GetObjectItem(c1, "arguments")));
    cJSON_Delete(m);
}

static void test_response_without_choices_is_an_error(void **state)
{
    (void)state;
    char *out = NULL, *err = NULL;
    assert_int_not_equal(llm_convert_response("f", "{\"object\":\"x\"}", &out, &err), 0);
    assert_null(out);
    assert_non_null(err);
    free(err);
    err = NULL;
    assert_int_not_equal(llm_convert_response("f", "<html>", &out, &err), 0);
    assert_non_null(strstr(err, "not JSON"));
    free(err);
}

/* ------------------------------------------------------------------------------------
 * HTTP against the fake server
 * ---------------------------------------------------------------------------------- */

static void test_complete_round_trip_records_request_and_returns_calls(void **state)
{
    (void)state;
    fake_server fs;
    fake_start(&fs, home, "[{\"tool_calls\":[{\"name\":\"write\",\"arguments\":{\"path\":\"a\","
                    "\"content\":\"b\"}}],\"usage\":{\"prompt_tokens\":50,"
                    "\"completion_tokens\":5,\"prompt_tokens_details\":{\"cached_tokens\":20}}}]", NULL);
    const char *msgs[] = {"{\"role\":\"user\",\"content\":\"go\"}"};
    cJSON *tools = tools_builtin_definitions();
    cJSON *p = build("sys", msgs, 1, tools, 0);
    char *payload = cJSON_PrintUnformatted(p);
    char *out = NULL, *err = NULL;
    assert_int_equal(complete_with(fs.port, 10, payload, &out, &err), 0);
    cJSON *m = cJSON_Parse(out);
    assert_string_equal(sget(m, "stopReason"), "toolUse");
    const cJSON *c0 = cJSON_GetArrayItem(cJSON_GetObjectItem(m, "content"), 0);
    assert_string_equal(sget(c0, "name"), "write");
    assert_string_equal(sget(cJSON_GetObjectItem(c0, "arguments"), "content"), "b");
    assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(m, "usage"), "input")->valuedouble, 30);
    free(out);
    out = NULL;
    /* the script is exhausted: the server answers "done." */
    assert_int_equal(complete_with(fs.port, 10, payload, &out, &err), 0);
    assert_non_null(strstr(out, "done."));
    fake_stop(&fs);
    char *rec = NULL;
    size_t len;
    assert_int_equal(lc_read_file(fs.record, &rec, &len, NULL), 0);
    expect_has(rec, "\"content\":\"sys\"", "\"name\":\"bash\"");
    free(rec);
    free(out);
    free(payload);
    cJSON_Delete(m);
    cJSON_Delete(p);
    cJSON_Delete(tools);
}

static void test_complete_http_error_names_status_and_provider_message(void **state)
{
    (void)state;
    fake_server fs;
    fake_start(&fs, home, "[{\"status\":500,\"error\":\"the fake model is down\"}]", NULL);
    char *out = NULL, *err = NULL;
    assert_int_not_equal(complete_with(fs.port, 10, "{\"model\":\"fake\",\"messages\":[]}", &out, &err), 0);
    fake_stop(&fs);
    assert_null(out);
    assert_non_null(err);
    expect_has(err, "HTTP 500", "the fake model is down");
    free(err);
}

static void test_complete_connection_failure_reports_curl_error(void **state)
{
    (void)state;
    /* A port that was just free and is closed again: nothing listens there. */
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof a;
    assert_int_equal(bind(s, (struct sockaddr *)&a, sizeof a), 0);
    getsockname(s, (struct sockaddr *)&a, &alen);
    close(s);
    char *out = NULL, *err = NULL;
    assert_int_not_equal(complete_with(ntohs(a.sin_port), 5, "{}", &out, &err), 0);
    assert_non_null(err);
    assert_non_null(strcasestr(err, "connect"));
    free(err);
}

static void test_complete_honours_timeout(void **state)
{
    (void)state;
    fake_server fs;
    fake_start(&fs, home, "[{\"content\":\"slow\",\"delay\":4}]", NULL);
    char *out = NULL, *err = NULL;
    int rc = complete_with(fs.port, 1, "{\"model\":\"fake\",\"messages\":[]}", &out, &err);
    fake_stop(&fs);
    assert_int_not_equal(rc, 0);
    assert_non_null(err);
    assert_non_null(strcasestr(err, "timeout") ? strcasestr(err, "timeout") : strcasestr(err, "timed out"));
    free(err);
}

typedef struct thread_arg {
    int port;
    int rc;
    char *out;
} thread_arg;

static void *complete_thread(void *p)
{
    thread_arg *a = p;
    char *err = NULL;
    a->rc = complete_with(a->port, 20, "{\"model\":\"fake\",\"messages\":[]}", &a->out, &err);
    free(err);
    return NULL;
}

static void test_complete_runs_from_several_threads(void **state)
{
    (void)state;
    fake_server fs;
    fake_start(&fs, home, "[]", NULL);
    pthread_t th[4];
    thread_arg args[4];
    for (int i = 0; i < 4; i++) {
        args[i] = (thread_arg){.port = fs.port};
        pthread_create(&th[i], NULL, complete_thread, &args[i]);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(args[i].rc, 0);
        assert_non_null(strstr(args[i].out, "done."));
        free(args[i].out);
    }
    fake_stop(&fs);
}

/* A minimal agent loop over the client and the tools, as the host drives them: the
 * scripted model calls write, edit and bash; each result goes back as a toolResult. */
static void test_loop_carries_tool_results_back_to_the_model(void **state)
{
    (void)state;
    fake_server fs;
    fake_start(&fs, home, "[{\"tool_calls\":[{\"name\":\"write\",\"arguments\":{\"path\":\"w/a.txt\","
                    "\"content\":\"one two\"}}]},"
                    "{\"tool_calls\":[{\"name\":\"edit\",\"arguments\":{\"path\":\"w/a.txt\","
                    "\"oldText\":\"two\",\"newText\":\"2\"}},{\"name\":\"bash\",\"arguments\":"
                    "{\"command\":\"cat w/a.txt\"}}]},"
                    "{\"content\":\"finished\"}]", NULL);
    cJSON *tools = tools_builtin_definitions();
    char *history[32];
    size_t n = 0;
    history[n++] = lc_strdup("{\"role\":\"user\",\"content\":\"go\"}");
    int turns = 0, stopped = 0;
    while (!stopped && turns < 5) {
        cJSON *p = build("sys", (const char **)history, n, tools, 0);
        char *payload = cJSON_PrintUnformatted(p);
        char *out = NULL, *err = NULL;
        assert_int_equal(complete_with(fs.port, 10, payload, &out, &err), 0);
        history[n++] = out;
        cJSON *a = cJSON_Parse(out);
        const cJSON *blk;
        cJSON_ArrayForEach(blk, cJSON_GetObjectItem(a, "content")) {
            if (strcmp(sget(blk, "type"), "toolCall") != 0) continue;
            cJSON *r = tools_run(sget(blk, "name"), cJSON_GetObjectItem(blk, "arguments"), home);
            cJSON_AddStringToObject(r, "role", "toolResult");
            cJSON_AddStringToObject(r, "toolCallId", sget(blk, "id"));
            cJSON_AddStringToObject(r, "toolName", sget(blk, "name"));
            history[n++] = cJSON_PrintUnformatted(r);
            cJSON_Delete(r);
        }
        stopped = strcmp(sget(a, "stopReason"), "stop") == 0;
        cJSON_Delete(a);
        cJSON_Delete(p);
        free(payload);
        turns++;
    }
    fake_stop(&fs);
    assert_int_equal(turns, 3);
    expect_file("w/a.txt", "one 2");
    /* The third request carries both results of the parallel calls, in order. */
    char *rec = NULL;
    size_t len;
    assert_int_equal(lc_read_file(fs.record, &rec, &len, NULL), 0);
    const char *line3 = rec;
    for (int i = 0; i < 2; i++) line3 = strchr(line3, '\n') + 1;
    cJSON *req3 = cJSON_Parse(line3);
    assert_non_null(req3);
    const cJSON *msgs = cJSON_GetObjectItem(req3, "messages");
    int k = cJSON_GetArraySize(msgs);
    assert_string_equal(sget(cJSON_GetArrayItem(msgs, k - 2), "role"), "tool");
    assert_non_null(strstr(sget(cJSON_GetArrayItem(msgs, k - 1), "content"), "one 2"));
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetArrayItem(msgs, k - 3), "tool_calls")), 2);
    cJSON_Delete(req3);
    free(rec);
    for (size_t i = 0; i < n; i++) free(history[i]);
    cJSON_Delete(tools);
}

/* ------------------------------------------------------------------------------------
 * tools
 * ---------------------------------------------------------------------------------- */

static void test_builtin_names_are_the_four_tools(void **state)
{
    (void)state;
    assert_true(tools_is_builtin("read"));
    assert_true(tools_is_builtin("write"));
    assert_true(tools_is_builtin("edit"));
    assert_true(tools_is_builtin("bash"));
    assert_false(tools_is_builtin("lcm_grep"));
    assert_false(tools_is_builtin(NULL));
}

static void test_read_pages_long_files_with_a_continuation_note(void **state)
{
    (void)state;
    sbuf b = {0};
    for (int i = 1; i <= 2500; i++) sb_printf(&b, "line %d\n", i);
    put_file("long.txt", b.p);
    sb_free(&b);
    cJSON *r = run_tool_ok("read", "{\"path\":\"long.txt\"}");
    assert_non_null(strstr(result_text(r), "line 2000\n"));
    assert_null(strstr(result_text(r), "line 2001\n"));
    assert_non_null(strstr(result_text(r), "[500 more lines; use offset=2001 to continue]"));
    cJSON_Delete(r);
    r = run_tool("read", "{\"path\":\"long.txt\",\"offset\":2499,\"limit\":5}");
    assert_string_equal(result_text(r), "line 2499\nline 2500\n");
    cJSON_Delete(r);
    r = run_tool("read", "{\"path\":\"long.txt\",\"offset\":10,\"limit\":2}");
    assert_string_equal(result_text(r),
                        "line 10\nline 11\n\n[2489 more lines; use offset=12 to continue]");
    cJSON_Delete(r);
}

static void test_read_caps_output_at_50kb(void **state)
{
    (void)state;
    sbuf b = {0};
    for (int i = 0; i < 1000; i++) sb_printf(&b, "%0199d\n", i); /* 200 KB in 1000 lines */
    put_file("wide.txt", b.p);
    sb_free(&b);
    cJSON *r = run_tool("read", "{\"path\":\"wide.txt\"}");
    assert_true(strlen(result_text(r)) < 51 * 1024);
    assert_non_null(strstr(result_text(r), "use offset=257 to continue"));
    cJSON_Delete(r);
}

static void test_read_missing_file_is_an_error_result(void **state)
{
    (void)state;
    expect_tool_error("read", "{\"path\":\"nope.txt\"}", "nope.txt");
    expect_tool_error("read", "{}", NULL);
}

static void test_read_replaces_invalid_utf8(void **state)
{
    (void)state;
    put_file("bin.txt", "ok \xff\xfe end\n");
    cJSON *r = run_tool("read", "{\"path\":\"bin.txt\"}");
    assert_string_equal(result_text(r), "ok \xEF\xBF\xBD\xEF\xBF\xBD end\n");
    cJSON_Delete(r);
}

static void test_read_returns_images_as_image_blocks(void **state)
{
    (void)state;
    put_file("pic.png", "\x89PNG\r\n\x1a\nAB");
    cJSON *r = run_tool_ok("read", "{\"path\":\"pic.png\"}");
    const cJSON *img = cJSON_GetArrayItem(cJSON_GetObjectItem(r, "content"), 1);
    assert_string_equal(sget(img, "type"), "image");
    assert_string_equal(sget(img, "mimeType"), "image/png");
    assert_string_equal(sget(img, "data"), "iVBORw0KGgpBQg==");
    cJSON_Delete(r);
}

static void test_write_creates_parent_folders_and_reports_bytes(void **state)
{
    (void)state;
    cJSON *r = run_tool_ok("write", "{\"path\":\"deep/er/f.txt\",\"content\":\"hello\"}");
    assert_non_null(strstr(result_text(r), "5 bytes"));
    assert_int_equal(detail_num(r, "bytes"), 5);
    expect_file("deep/er/f.txt", "hello");
    cJSON_Delete(r);
}

static void test_edit_replaces_a_unique_occurrence(void **state)
{
    (void)state;
    put_file("e.txt", "alpha\nbeta\ngamma\n");
    cJSON *r = run_tool_ok("edit", "{\"path\":\"e.txt\",\"oldText\":\"beta\",\"newText\":\"BETA\"}");
    assert_int_equal(detail_num(r, "firstChangedLine"), 2);
    expect_file("e.txt", "alpha\nBETA\ngamma\n");
    cJSON_Delete(r);
}

static void test_edit_matches_lf_text_in_a_crlf_file(void **state)
{
    (void)state;
    put_file("crlf.txt", "one\r\ntwo\r\nthree\r\n");
    cJSON *r = run_tool_ok("edit", "{\"path\":\"crlf.txt\",\"oldText\":\"one\\ntwo\",\"newText\":\"1\\n2\"}");
    expect_file("crlf.txt", "1\r\n2\r\nthree\r\n");
    cJSON_Delete(r);
}

static void test_edit_refuses_missing_or_repeated_text(void **state)
{
    (void)state;
    put_file("e2.txt", "x = 1\nx = 1\n");
    expect_tool_error("edit", "{\"path\":\"e2.txt\",\"oldText\":\"zzz\",\"newText\":\"\"}", "not found");
    expect_tool_error("edit", "{\"path\":\"e2.txt\",\"oldText\":\"x = 1\",\"newText\":\"y\"}",
                      "found 2 times; make oldText unique");
    expect_file("e2.txt", "x = 1\nx = 1\n");
}

static void test_bash_captures_output_and_exit_code_in_cwd(void **state)
{
    (void)state;
    cJSON *r = run_tool_ok("bash", "{\"command\":\"echo out; echo err 1>&2; pwd\"}");
    expect_has(result_text(r), "out\nerr\n", home, "[exit code 0]");
    assert_int_equal(detail_num(r, "exitCode"), 0);
    cJSON_Delete(r);
    r = run_tool("bash", "{\"command\":\"echo bad; exit 3\"}");
    assert_true(result_is_error(r));
    assert_int_equal(detail_num(r, "exitCode"), 3);
    assert_non_null(strstr(result_text(r), "[exit code 3]"));
    cJSON_Delete(r);
}

static void test_bash_keeps_the_tail_of_large_output(void **state)
{
    (void)state;
    cJSON *r = run_tool("bash", "{\"command\":\"head -c 200000 /dev/zero | tr '\\\\0' a; echo END\"}");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "details"), "truncated")));
    assert_int_equal(detail_num(r, "totalBytes"), 200004);
    expect_has(result_text(r), "output truncated", "END");
    assert_true(strlen(result_text(r)) < 51 * 1024);
    cJSON_Delete(r);
}

static int pid_gone_or_zombie(pid_t pid)
{
    char path[64], buf[256] = "";
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return 1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *rp = strrchr(buf, ')');
    return rp && rp[1] == ' ' && (rp[2] == 'Z' || rp[2] == 'X');
}

static void test_bash_timeout_kills_the_process_group(void **state)
{
    (void)state;
    cJSON *r = run_tool("bash", "{\"command\":\"sleep 30 & echo $! > bg.pid; wait\",\"timeout\":1}");
    assert_true(result_is_error(r));
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "details"), "timedOut")));
    assert_non_null(strstr(result_text(r), "timed out after 1 seconds"));
    cJSON_Delete(r);
    char *pidtext = get_file("bg.pid");
    assert_non_null(pidtext);
    pid_t bg = (pid_t)atoi(pidtext);
    free(pidtext);
    assert_true(bg > 0);
    /* SIGKILL is delivered asynchronously; the orphan is reaped by init. */
    int gone = 0;
    for (int i = 0; i < 100 && !gone; i++) {
        gone = pid_gone_or_zombie(bg);
        if (!gone) usleep(20000);
    }
    assert_true(gone);
}

static void test_tools_reject_raw_arguments_and_unknown_names(void **state)
{
    (void)state;
    expect_tool_error("bash", "{\"_raw\":\"{broken\"}", "not valid JSON");
    expect_tool_error("frobnicate", "{}", NULL);
}

TEST_MAIN_GROUP(fake_ignore_sigpipe, NULL,
    cmocka_unit_test(test_payload_puts_system_first_and_wraps_tools),
    cmocka_unit_test(test_payload_omits_tools_and_max_tokens_when_absent),
    cmocka_unit_test(test_payload_maps_tool_calls_and_results_dropping_thinking),
    cmocka_unit_test(test_payload_assistant_with_only_calls_has_null_content),
    cmocka_unit_test(test_payload_turns_summaries_custom_and_bash_into_user_text),
    cmocka_unit_test(test_payload_skips_unknown_roles_and_thinking_only_turns),
    cmocka_unit_test(test_payload_sends_images_as_data_uris),
    cmocka_unit_test(test_payload_answers_unanswered_calls_and_moves_orphan_results),
    cmocka_unit_test(test_response_usage_excludes_cached_tokens_from_input),
    cmocka_unit_test(test_response_tool_calls_become_toolcall_blocks),
    cmocka_unit_test(test_response_maps_length_and_missing_ids),
    cmocka_unit_test(test_response_without_choices_is_an_error),
    HOME_TEST(test_complete_round_trip_records_request_and_returns_calls),
    HOME_TEST(test_complete_http_error_names_status_and_provider_message),
    cmocka_unit_test(test_complete_connection_failure_reports_curl_error),
    HOME_TEST(test_complete_honours_timeout),
    HOME_TEST(test_complete_runs_from_several_threads),
    HOME_TEST(test_loop_carries_tool_results_back_to_the_model),
    cmocka_unit_test(test_builtin_names_are_the_four_tools),
    HOME_TEST(test_read_pages_long_files_with_a_continuation_note),
    HOME_TEST(test_read_caps_output_at_50kb),
    HOME_TEST(test_read_missing_file_is_an_error_result),
    HOME_TEST(test_read_replaces_invalid_utf8),
    HOME_TEST(test_read_returns_images_as_image_blocks),
    HOME_TEST(test_write_creates_parent_folders_and_reports_bytes),
    HOME_TEST(test_edit_replaces_a_unique_occurrence),
    HOME_TEST(test_edit_matches_lf_text_in_a_crlf_file),
    HOME_TEST(test_edit_refuses_missing_or_repeated_text),
    HOME_TEST(test_bash_captures_output_and_exit_code_in_cwd),
    HOME_TEST(test_bash_keeps_the_tail_of_large_output),
    HOME_TEST(test_bash_timeout_kills_the_process_group),
    HOME_TEST(test_tools_reject_raw_arguments_and_unknown_names),
)
