/*
 * test_host_complete.c -- the reference host's completion service (host/hostapi.c
 * api_complete over host/llm.c) as a plugin's worker thread uses it: calls from several
 * threads run at the same time (no host-wide lock), "timeoutMs" ends a call with AP_ERROR
 * "timed out after N ms", a session shutdown aborts a call in flight and refuses new ones,
 * and the table is level 3 without complete_async (level 1 when AGENT_HOST_API_LEVEL=1).
 * The host sources are compiled in directly, as test_host_llm.c does; the model is
 * tests/contract/fake_openai.py on a loopback port, and overlap is read from the times it
 * records (arrivedAt / answeredAt), not from this process's clock. In `make tsan`.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "../../host/llm.c"
#include "../../host/tools.c"
#include "../../host/session.c"
#include "../../host/hostapi.c"

#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>

#include "temp_home.h"
#include "test_main.h"

#include "fake_server.h"

/* The record's rows: requests carry _fake {seq, kind, arrivedAt}; answers _answer {seq,
 * answeredAt, status}. Returns a cJSON array the caller deletes. */
static cJSON *read_record(const fake_server *fs)
{
    char *text = NULL;
    size_t len = 0;
    cJSON *rows = cJSON_CreateArray();
    if (lc_read_file(fs->record, &text, &len, NULL) != LC_OK) return rows;
    for (char *line = text, *nl; line && *line; line = nl ? nl + 1 : NULL) {
        nl = strchr(line, '\n');
        if (nl) *nl = '\0';
        cJSON *row = cJSON_Parse(line);
        if (row) cJSON_AddItemToArray(rows, row);
    }
    free(text);
    return rows;
}

static int count_arrivals(const fake_server *fs)
{
    cJSON *rows = read_record(fs);
    int n = 0;
    const cJSON *r;
    cJSON_ArrayForEach(r, rows) n += cJSON_GetObjectItem(r, "_fake") != NULL;
    cJSON_Delete(rows);
    return n;
}

static double field_num(const cJSON *row, const char *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItem(cJSON_GetObjectItem(row, obj), key);
    return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

/* A host with a model and no session: enough for complete. */
static void host_with_model(host *h, const char *url)
{
    memset(h, 0, sizeof *h);
    hostapi_init(h);
    h->base_url = url;
    h->model = "fake";
    h->max_tokens = 256;
}

/* The test's fake model, in the test's home like its record; a host's model points at its URL. */
static fake_server fs;

/* Start the fake answering `script` (its answers recorded too) and make h a host whose model
 * it is. */
static void host_on_fake(host *h, const char *script)
{
    fake_start(&fs, home, script, "--record-answers");
    host_with_model(h, fs.url);
}

static const char *REQ = "{\"systemPrompt\":\"be brief\",\"messages\":[{\"role\":\"user\","
                         "\"content\":\"hello\"}]}";

typedef struct call_arg {
    host *h;
    const char *request;
    int rc;
    char *out;
    char *err;
} call_arg;

static void *call_thread(void *p)
{
    call_arg *a = p;
    a->rc = a->h->api.complete(a->h, a->request, &a->out, &a->err);
    return NULL;
}

static void test_two_threads_complete_at_the_same_time(void **state)
{
    (void)state;
    host h;
    host_on_fake(&h, "[{\"content\":\"first answer\",\"delay\":1},"
                     "{\"content\":\"second answer\",\"delay\":1}]");
    pthread_t th[2];
    call_arg args[2] = {{.h = &h, .request = REQ}, {.h = &h, .request = REQ}};
    for (int i = 0; i < 2; i++) pthread_create(&th[i], NULL, call_thread, &args[i]);
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(args[i].rc, AP_OK);
        assert_non_null(strstr(args[i].out, "answer"));
        free(args[i].out);
        free(args[i].err);
    }
    fake_stop(&fs);
    /* Both requests reached the model before it answered either: with a lock the second
     * would arrive only after the first answer (1 s later). */
    cJSON *rows = read_record(&fs);
    double arrived[2] = {-1, -1}, first_answer = -1;
    int na = 0;
    const cJSON *r;
    cJSON_ArrayForEach(r, rows) {
        if (cJSON_GetObjectItem(r, "_fake") && na < 2) arrived[na++] = field_num(r, "_fake", "arrivedAt");
        double t = field_num(r, "_answer", "answeredAt");
        if (t >= 0 && (first_answer < 0 || t < first_answer)) first_answer = t;
    }
    cJSON_Delete(rows);
    assert_int_equal(na, 2);
    assert_true(first_answer > 0);
    assert_true(arrived[0] < first_answer);
    assert_true(arrived[1] < first_answer);
    hostapi_destroy(&h);
}

static void test_timeout_ms_gives_the_timed_out_error(void **state)
{
    (void)state;
    host h;
    host_on_fake(&h, "[{\"content\":\"too late\",\"delay\":5}]");
    char *out = NULL, *err = NULL;
    int rc = h.api.complete(&h, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
                                "\"timeoutMs\":300}", &out, &err);
    assert_int_equal(rc, AP_ERROR);
    assert_null(out);
    assert_non_null(err);
    assert_non_null(strstr(err, "timed out after 300 ms"));
    free(err);
    /* The request did reach the model and was never answered in time. */
    assert_int_equal(count_arrivals(&fs), 1);
    /* A bad timeoutMs is refused before any request is sent. */
    err = NULL;
    rc = h.api.complete(&h, "{\"messages\":[],\"timeoutMs\":-5}", &out, &err);
    assert_int_equal(rc, AP_INVALID);
    assert_non_null(strstr(err, "timeoutMs"));
    free(err);
    err = NULL;
    rc = h.api.complete(&h, "{\"messages\":[],\"timeoutMs\":\"soon\"}", &out, &err);
    assert_int_equal(rc, AP_INVALID);
    free(err);
    fake_stop(&fs);
    assert_int_equal(count_arrivals(&fs), 1);
    hostapi_destroy(&h);
}

static void test_shutdown_aborts_a_call_in_flight_and_refuses_new_ones(void **state)
{
    (void)state;
    host h;
    /* An answer that would take 60 s: only the abort can end the call in time. */
    host_on_fake(&h, "[{\"content\":\"never\",\"delay\":60}]");
    pthread_t th;
    call_arg a = {.h = &h, .request = REQ};
    pthread_create(&th, NULL, call_thread, &a);
    for (int i = 0; i < 400 && count_arrivals(&fs) < 1; i++) usleep(10000);
    assert_int_equal(count_arrivals(&fs), 1);
    hostapi_begin_shutdown(&h);
    pthread_join(th, NULL);
    assert_int_equal(a.rc, AP_ERROR);
    assert_null(a.out);
    assert_non_null(a.err);
    assert_non_null(strstr(a.err, "the host is shutting down"));
    free(a.err);
    char *out = NULL, *err = NULL;
    assert_int_equal(h.api.complete(&h, REQ, &out, &err), AP_ERROR);
    assert_non_null(strstr(err, "the host is shutting down"));
    free(err);
    fake_stop(&fs);
    assert_int_equal(count_arrivals(&fs), 1); /* the refused call sent nothing */
    hostapi_destroy(&h);
}

static void test_table_is_level_3_without_complete_async(void **state)
{
    (void)state;
    host h;
    unsetenv("AGENT_HOST_API_LEVEL");
    host_with_model(&h, "http://127.0.0.1:9/v1");
    assert_int_equal(h.api.api_level, AP_API_LEVEL);
    assert_int_equal(h.api.api_level, 3);
    assert_int_equal(h.api.struct_size, sizeof(ap_host_api));
    assert_true(AP_HOST_HAS(&h.api, complete));
    assert_true(AP_HOST_HAS(&h.api, get_entries));
    assert_false(AP_HOST_HAS(&h.api, complete_async));
    hostapi_destroy(&h);

    setenv("AGENT_HOST_API_LEVEL", "1", 1);
    host_with_model(&h, "http://127.0.0.1:9/v1");
    unsetenv("AGENT_HOST_API_LEVEL");
    assert_int_equal(h.api.api_level, 1);
    assert_int_equal(h.api.struct_size, offsetof(ap_host_api, send_user_message));
    assert_true(AP_HOST_HAS(&h.api, complete));
    assert_false(AP_HOST_HAS(&h.api, send_user_message));
    assert_false(AP_HOST_HAS(&h.api, complete_async));
    hostapi_destroy(&h);
}

TEST_MAIN_GROUP(fake_ignore_sigpipe, NULL,
    HOME_TEST(test_two_threads_complete_at_the_same_time),
    HOME_TEST(test_timeout_ms_gives_the_timed_out_error),
    HOME_TEST(test_shutdown_aborts_a_call_in_flight_and_refuses_new_ones),
    cmocka_unit_test(test_table_is_level_3_without_complete_async),
)
