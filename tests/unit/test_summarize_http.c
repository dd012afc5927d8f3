/* test_summarize_http.c -- the summarizer chain over real HTTP: libcurl (engine/lcm/llm_http.c)
 * against the scripted loopback server tests/contract/fake_openai.py, for success, error,
 * empty answer, length stop, demotion, budget caps and the window-correcting error. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "llm_http.h"
#include "summarize.h"
#include "util.h"
#include "zones.h"

#include "fake_server.h"

/* A fake model server in a temporary folder of its own (its script and record). */
typedef struct server {
    fake_server fs;
    char dir[64];
} server;

static void server_dir(server *s, const char *tmpl)
{
    memset(s, 0, sizeof *s);
    snprintf(s->dir, sizeof s->dir, "%s", tmpl);
    assert_non_null(mkdtemp(s->dir));
}

static void server_start(server *s, const char *script_json)
{
    server_dir(s, "/tmp/lc-summ-http-XXXXXX");
    fake_start(&s->fs, s->dir, script_json, NULL);
}

static void server_stop(server *s)
{
    fake_stop(&s->fs);
    char script[128];
    snprintf(script, sizeof script, "%s/script.json", s->dir);
    unlink(script);
    unlink(s->fs.record);
    rmdir(s->dir);
}

/* The "model" field of every recorded request, joined with ','. */
static char *recorded_models(const server *s)
{
    char *text = NULL;
    sbuf b = {0};
    if (lc_read_file(s->fs.record, &text, NULL, NULL) != LC_OK) return lc_strdup("");
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        cJSON *j = cJSON_Parse(line);
        cJSON *m = cJSON_GetObjectItem(j, "model");
        if (b.len) sb_putc(&b, ',');
        sb_puts(&b, cJSON_IsString(m) ? m->valuestring : "?");
        cJSON_Delete(j);
    }
    free(text);
    return sb_detach(&b);
}

typedef struct events {
    int fallback, capped, model;
    char last_fallback[256];
} events;

static void on_event(void *ud, const char *kind, const cJSON *data)
{
    events *e = ((void **)ud)[1];
    if (!strcmp(kind, "summarizer-fallback")) {
        e->fallback++;
        char *j = cJSON_PrintUnformatted(data);
        snprintf(e->last_fallback, sizeof e->last_fallback, "%s", j);
        free(j);
    }
    if (!strcmp(kind, "summarizer-capped")) e->capped++;
    if (!strcmp(kind, "summarizer-model")) e->model++;
}

static int via_http(void *ud, const char *provider, const char *model, const char *sys,
                    const char *prompt, long max_tokens, summ_completion *out, char **err)
{
    return llm_http_summarizer(((void **)ud)[0], provider, model, sys, prompt, max_tokens, out,
                               err);
}

static char *source(void)
{
    sbuf b = {0};
    for (int i = 0; i < 40; i++)
        sb_printf(&b, "Turn %d: the assistant ran the tests again and read the log. ", i);
    sb_puts(&b, "We decided N07=4821.\n");
    return sb_detach(&b);
}

typedef struct rig {
    server srv;
    char *src; /* source(), for the tests to summarize */
    lcm_base_url url;
    llm_http_routes routes;
    events ev;
    void *ud[2];
    summ_ctx *s;
    summ_result res; /* the last summarize()'s */
} rig;

/* A summarizer chain written in place: the entries and their count, as rig_start takes them. */
#define CHAIN(...)                                                                            \
    (const char *const[]){__VA_ARGS__},                                                       \
        sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *)

/* Each rig test's rig: made by the test's rig_start, stopped by its rig_stop. */
static int rig_alloc(void **state)
{
    *state = calloc(1, sizeof(rig));
    return *state ? 0 : -1;
}

static int rig_release(void **state)
{
    free(*state);
    return 0;
}

static void rig_start(rig *r, const char *script, const char *const *chain, size_t n,
                      long per_call, long per_pass)
{
    memset(r, 0, sizeof *r);
    server_start(&r->srv, script);
    r->url = (lcm_base_url){"local", r->srv.fs.url};
    r->routes = (llm_http_routes){&r->url, 1, 10};
    r->ud[0] = &r->routes;
    r->ud[1] = &r->ev;
    summ_config cfg = {.chain = chain, .n_chain = n, .tokens_per_call = per_call,
                       .tokens_per_pass = per_pass, .model_fn = via_http,
                       .event_fn = on_event, .ud = r->ud};
    assert_int_equal(summ_create(&cfg, &r->s, NULL), LC_OK);
    r->src = source();
}

/* One summary of the rig's source within `budget` tokens, in r->res (the one before freed). */
static const summ_result *summarize(rig *r, size_t budget)
{
    summ_result_free(&r->res);
    assert_int_equal(summ_summarize(r->s, r->src, budget, &r->res, NULL), LC_OK);
    return &r->res;
}

/* Stop the rig once the server was asked for exactly these models, in this order ("a,b";
 * "" for none). */
static void rig_stop(rig *r, const char *models_asked)
{
    char *models = recorded_models(&r->srv);
    summ_result_free(&r->res);
    summ_free(r->s);
    server_stop(&r->srv); /* first: a failed check leaves no server running */
    free(r->src);
    assert_string_equal(models, models_asked);
    free(models);
}

static void test_http_success_uses_the_first_entry(void **state)
{
    rig *r = *state;
    rig_start(r, "[{\"content\": \"model summary N07=4821\"}]", CHAIN("local/fake-a"), 0, 0);
    const summ_result *res = summarize(r, 100);
    assert_string_equal(res->text, "model summary N07=4821");
    assert_string_equal(res->entry, "local/fake-a");
    assert_int_equal(res->level, 1);
    assert_int_equal(r->ev.fallback, 0);
    summ_pass_stats st;
    summ_pass_stats_get(r->s, &st);
    assert_true(st.billed_tokens > 0); /* the server's usage was counted */
    rig_stop(r, "fake-a");
}

/* Error status, empty answer and a length stop: each fails over to the next entry. */
static void test_http_failures_fall_back_to_the_next_entry(void **state)
{
    static const char *const scripts[] = {
        "[{\"status\": 500, \"error\": \"boom\"}, {\"content\": \"second\"}]",
        "[{\"content\": \"\"}, {\"content\": \"second\"}]",
        "[{\"content\": \"half a sum\", \"finish_reason\": \"length\"}, {\"content\": "
        "\"second\"}]",
    };
    for (size_t i = 0; i < 3; i++) {
        rig *r = *state;
        rig_start(r, scripts[i], CHAIN("local/a", "local/b"), 0, 0);
        const summ_result *res = summarize(r, 100);
        assert_string_equal(res->text, "second");
        assert_string_equal(res->entry, "local/b");
        assert_int_equal(r->ev.fallback, 1);
        assert_non_null(strstr(r->ev.last_fallback, "\"from\":\"local/a\""));
        rig_stop(r, "a,b");
    }
}

static void test_http_failing_entry_is_demoted_for_the_pass(void **state)
{
    rig *r = *state;
    rig_start(r, "[{\"status\": 503, \"error\": \"overloaded\"}, {\"content\": \"s1\"}, "
                  "{\"content\": \"s2\"}, {\"content\": \"s3\"}]",
              CHAIN("local/a", "local/b"), 0, 0);
    const summ_result *res = summarize(r, 100);
    assert_string_equal(res->text, "s1");
    res = summarize(r, 100);
    assert_string_equal(res->text, "s2");
    assert_string_equal(res->entry, "local/b");
    summ_pass_begin(r->s);
    res = summarize(r, 100);
    assert_string_equal(res->entry, "local/a"); /* a new pass tries the primary again */
    rig_stop(r, "a,b,b,a");
}

static void test_http_budget_caps_refuse_without_a_request(void **state)
{
    rig *r = *state;
    rig_start(r, "[{\"content\": \"never sent\"}]", CHAIN("local/a"), 1000, 0);
    const summ_result *res = summarize(r, 400);
    assert_int_equal(res->level, 3);
    assert_true(res->truncated);
    assert_int_equal(r->ev.capped, 1);
    rig_stop(r, "");
}

static void test_http_per_pass_cap_counts_reported_usage(void **state)
{
    rig *r = *state;
    rig_start(r, "[{\"content\": \"one\", \"usage\": {\"prompt_tokens\": 5000, "
                  "\"completion_tokens\": 10}}, {\"content\": \"two\"}]",
              CHAIN("local/a"), 0, 6000);
    const summ_result *res = summarize(r, 100);
    assert_string_equal(res->text, "one");
    res = summarize(r, 100);
    assert_int_equal(res->level, 3);
    assert_int_equal(r->ev.capped, 1);
    rig_stop(r, "a");
}

static void test_http_context_error_carries_the_real_window(void **state)
{
    (void)state;
    server s;
    server_start(&s, "[{\"status\": 400, \"error\": \"This model's maximum context length is "
                     "8192 tokens. However, your messages resulted in 9100 tokens.\"}]");
    llm_http_endpoint ep;
    assert_int_equal(llm_http_resolve("local", s.fs.url, &ep, NULL), LC_OK);
    assert_int_equal(ep.kind, LLM_HTTP_OPENAI);
    summ_completion c;
    char *err = NULL;
    assert_int_equal(llm_http_complete(&ep, "m", "sys", "hello", 50, &c, &err), LC_ERR);
    assert_non_null(strstr(err, "HTTP 400"));
    zones_window_correction corr;
    assert_int_equal(zones_correction_from_error(128000, err, &corr), 1);
    assert_int_equal(corr.corrected, 8192);
    free(err);
    server_stop(&s);
}

static void test_http_routing_needs_a_key_or_a_base_url(void **state)
{
    (void)state;
    llm_http_endpoint ep;
    char *err = NULL;
    unsetenv("OPENAI_API_KEY");
    assert_int_equal(llm_http_resolve("openai", NULL, &ep, &err), LC_NOTFOUND);
    assert_non_null(strstr(err, "OPENAI_API_KEY"));
    assert_int_equal(llm_http_resolve("mystery", NULL, &ep, &err), LC_NOTFOUND);
    setenv("ANTHROPIC_API_KEY", "test-key", 1);
    assert_int_equal(llm_http_resolve("anthropic", NULL, &ep, &err), LC_OK);
    assert_int_equal(ep.kind, LLM_HTTP_ANTHROPIC);
    assert_string_equal(ep.base_url, "https://api.anthropic.com/v1");
    unsetenv("ANTHROPIC_API_KEY");
    assert_int_equal(llm_http_resolve("my-llm", "http://h:1/v1/", &ep, &err), LC_OK);
    assert_string_equal(ep.key_env, "MY_LLM_API_KEY");
    assert_string_equal(ep.base_url, "http://h:1/v1");
    free(err);
}


/* A minimal Anthropic Messages API stand-in (fake_openai.py speaks only the OpenAI shape):
 * answers POST /v1/messages from a script of {"text", "stop_reason", "status"?}. */
static const char anthropic_fake_py[] =
    "import json,sys\n"
    "from http.server import BaseHTTPRequestHandler,HTTPServer\n"
    "script=json.load(open(sys.argv[1]));rec=sys.argv[2]\n"
    "class H(BaseHTTPRequestHandler):\n"
    "  protocol_version='HTTP/1.1'\n"
    "  def log_message(self,*a):pass\n"
    "  def do_POST(self):\n"
    "    body=self.rfile.read(int(self.headers.get('Content-Length') or 0))\n"
    "    req=json.loads(body);req['_key']=self.headers.get('x-api-key');req['_path']=self.path\n"
    "    req['_version']=self.headers.get('anthropic-version')\n"
    "    open(rec,'a').write(json.dumps(req)+'\\n')\n"
    "    r=script.pop(0) if script else {'text':'done.','stop_reason':'end_turn'}\n"
    "    st=r.get('status',200)\n"
    "    out={'type':'error','error':{'type':'x','message':r.get('error','')}} if st>=400 else "
    "{'content':[{'type':'text','text':r['text']}],'stop_reason':r['stop_reason'],"
    "'usage':{'input_tokens':40,'output_tokens':7,'cache_read_input_tokens':100}}\n"
    "    d=json.dumps(out).encode();self.send_response(st)\n"
    "    self.send_header('Content-Type','application/json');self.send_header('Content-Length',str(len(d)))\n"
    "    self.end_headers();self.wfile.write(d)\n"
    "s=HTTPServer(('127.0.0.1',0),H);print(s.server_address[1],flush=True);s.serve_forever()\n";

static void anthropic_start(server *s, const char *script_json)
{
    server_dir(s, "/tmp/lc-summ-anth-XXXXXX");
    char script[128], py[128];
    snprintf(script, sizeof script, "%s/script.json", s->dir);
    snprintf(py, sizeof py, "%s/fake.py", s->dir);
    snprintf(s->fs.record, sizeof s->fs.record, "%s/record.jsonl", s->dir);
    assert_int_equal(lc_write_atomic(script, script_json, strlen(script_json), 0600, NULL), LC_OK);
    assert_int_equal(lc_write_atomic(py, anthropic_fake_py, strlen(anthropic_fake_py), 0600, NULL),
                     LC_OK);
    char *argv[] = {"python3", py, script, s->fs.record, NULL};
    fake_spawn(&s->fs, argv);
}

static void test_http_anthropic_messages_api_maps_text_usage_and_stops(void **state)
{
    (void)state;
    server s;
    anthropic_start(&s, "[{\"text\": \"claude summary\", \"stop_reason\": \"end_turn\"},"
                        " {\"text\": \"cut\", \"stop_reason\": \"max_tokens\"}]");
    setenv("ANTHROPIC_API_KEY", "sk-test-anth", 1);
    llm_http_endpoint ep;
    assert_int_equal(llm_http_resolve("anthropic", s.fs.url, &ep, NULL), LC_OK);
    assert_int_equal(ep.kind, LLM_HTTP_ANTHROPIC);
    summ_completion c;
    char *err = NULL;
    assert_int_equal(llm_http_complete(&ep, "claude-haiku", "be brief", "hello", 64, &c, &err),
                     LC_OK);
    assert_string_equal(c.text, "claude summary");
    assert_string_equal(c.stop_reason, "stop");
    /* Anthropic counts cache reads apart from input_tokens; the ledger's input holds them */
    assert_int_equal(c.input_tokens, 140);
    assert_int_equal(c.cached_tokens, 100);
    assert_int_equal(c.output_tokens, 7);
    summ_completion_free(&c);
    assert_int_equal(llm_http_complete(&ep, "claude-haiku", "be brief", "hello", 64, &c, &err),
                     LC_OK);
    assert_string_equal(c.stop_reason, "length"); /* a failure for the chain */
    summ_completion_free(&c);
    char *rec = NULL;
    assert_int_equal(lc_read_file(s.fs.record, &rec, NULL, NULL), LC_OK);
    char *nl = strchr(rec, '\n'); /* the first request's line */
    assert_non_null(nl);
    *nl = '\0';
    cJSON *first = cJSON_Parse(rec);
    assert_string_equal(cJSON_GetObjectItem(first, "_path")->valuestring, "/v1/messages");
    assert_string_equal(cJSON_GetObjectItem(first, "_key")->valuestring, "sk-test-anth");
    assert_string_equal(cJSON_GetObjectItem(first, "_version")->valuestring, "2023-06-01");
    assert_string_equal(cJSON_GetObjectItem(first, "system")->valuestring, "be brief");
    assert_int_equal(cJSON_GetObjectItem(first, "max_tokens")->valueint, 64);
    cJSON_Delete(first);
    free(rec);
    unsetenv("ANTHROPIC_API_KEY");
    free(err);
    server_stop(&s);
    char py[128];
    snprintf(py, sizeof py, "%s/fake.py", s.dir);
    unlink(py);
    rmdir(s.dir);
}

static void test_http_openai_usage_maps_cached_tokens_cost_and_model(void **state)
{
    (void)state;
    server s;
    server_start(&s, "[{\"content\": \"sum\", \"usage\": {\"prompt_tokens\": 900, \"completion_tokens\": 30,"
                     " \"prompt_tokens_details\": {\"cached_tokens\": 640}, \"cost\": 0.0021}}]");
    llm_http_endpoint ep;
    assert_int_equal(llm_http_resolve("local", s.fs.url, &ep, NULL), LC_OK);
    summ_completion c;
    int rc = llm_http_complete(&ep, "m-1", "be brief", "hello", 64, &c, NULL);
    server_stop(&s); /* first: a failed check leaves no server running */
    assert_int_equal(rc, LC_OK);
    assert_int_equal(c.input_tokens, 900);
    assert_int_equal(c.cached_tokens, 640);
    assert_int_equal(c.output_tokens, 30);
    assert_true(c.has_cost);
    assert_float_equal(c.cost, 0.0021, 1e-12);
    assert_string_equal(c.model, "m-1");
    summ_completion_free(&c);
}

int main(void)
{
#define RIG_TEST(fn) cmocka_unit_test_setup_teardown(fn, rig_alloc, rig_release)
    const struct CMUnitTest tests[] = {
        RIG_TEST(test_http_success_uses_the_first_entry),
        RIG_TEST(test_http_failures_fall_back_to_the_next_entry),
        RIG_TEST(test_http_failing_entry_is_demoted_for_the_pass),
        RIG_TEST(test_http_budget_caps_refuse_without_a_request),
        RIG_TEST(test_http_per_pass_cap_counts_reported_usage),
        cmocka_unit_test(test_http_context_error_carries_the_real_window),
        cmocka_unit_test(test_http_routing_needs_a_key_or_a_base_url),
        cmocka_unit_test(test_http_anthropic_messages_api_maps_text_usage_and_stops),
        cmocka_unit_test(test_http_openai_usage_maps_cached_tokens_cost_and_model),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
