/*
 * bench_clm.c -- live-context throughput on a large session: render, parse + apply of
 * an untouched mirror, and of an edited one, for 1,000 messages of ~400k estimated
 * tokens in total; peak RSS after building the messages, after the render and at the
 * end (one process: each reading is a high-water mark, the increase is the step's).
 * Prints one line per figure. Not a test: it asserts nothing about speed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "clm_apply.h"
#include "clm_doc.h"
#include "clm_revision.h"
#include "util.h"

#define N_MSG 1000
#define NONCE "0a1b2c3d4e5f6a7b"

static char *text_of(size_t n, unsigned seed)
{
    static const char words[][8] = {"alpha ", "beta ", "gamma ", "delta ", "file.c ", "42 ",
                                    "return ", "{ } "};
    char *t = malloc(n + 1);
    size_t i = 0;
    while (i < n) {
        seed = seed * 1103515245u + 12345u;
        const char *w = words[(seed >> 16) % 8];
        for (size_t k = 0; w[k] && i < n; k++) t[i++] = w[k];
        if ((seed >> 8) % 13 == 0 && i < n) t[i++] = '\n';
    }
    t[n] = '\0';
    return t;
}

static long rss_now(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

static char *json_string(const char *s)
{
    cJSON *j = cJSON_CreateString(s);
    char *o = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    return o;
}

int main(void)
{
    char *msgs[N_MSG];
    size_t chars = 0;
    /* user, assistant(call), toolResult (large), assistant text: 250 turns of 4. */
    for (size_t i = 0; i < N_MSG; i++) {
        size_t size = (i % 4 == 2) ? 5200 : 400;
        char *t = text_of(size, (unsigned)i);
        char *js = json_string(t);
        switch (i % 4) {
        case 0: msgs[i] = lc_asprintf("{\"role\":\"user\",\"content\":%s,\"timestamp\":%zu}", js, i); break;
        case 1:
            msgs[i] = lc_asprintf("{\"role\":\"assistant\",\"content\":[{\"type\":\"thinking\","
                                  "\"thinking\":%s},{\"type\":\"toolCall\",\"id\":\"c%zu\","
                                  "\"name\":\"read\",\"arguments\":{\"path\":\"f%zu\"}}],"
                                  "\"stopReason\":\"toolUse\",\"timestamp\":%zu}", js, i, i, i);
            break;
        case 2:
            msgs[i] = lc_asprintf("{\"role\":\"toolResult\",\"toolCallId\":\"c%zu\",\"toolName\":"
                                  "\"read\",\"content\":[{\"type\":\"text\",\"text\":%s}],"
                                  "\"timestamp\":%zu}", i - 1, js, i);
            break;
        default:
            msgs[i] = lc_asprintf("{\"role\":\"assistant\",\"content\":[{\"type\":\"text\","
                                  "\"text\":%s}],\"stopReason\":\"stop\",\"timestamp\":%zu}", js, i);
        }
        chars += strlen(msgs[i]);
        free(js);
        free(t);
    }
    size_t tokens = 0;
    for (size_t i = 0; i < N_MSG; i++) tokens += msg_estimate_tokens_json(msgs[i]);

    long rss_msgs = rss_now();
    double t0 = lc_now_ms();
    clm_view v;
    char *text;
    size_t len;
    clm_view_init(&v, CLM_MODE_CLM, 1, NONCE, NULL);
    for (size_t i = 0; i < N_MSG; i++)
        clm_view_add(&v, msgs[i], strlen(msgs[i]), (long)i, NULL, NULL);
    clm_view_render(&v, &text, &len, NULL);
    double t1 = lc_now_ms();
    long rss_render = rss_now();
    clm_outcome o;
    double t1b = lc_now_ms();
    clm_edit(&v, text, len, &o, NULL);
    double t2 = lc_now_ms();
    int identical = o.accepted && o.n_items == N_MSG;
    clm_outcome_free(&o);

    /* An edit: drop every other tool group (assistant call + result). */
    sbuf e = {0};
    const char *p = text;
    size_t block = 0;
    int skip = 0;
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) + 1 : strlen(p);
        if (strncmp(p, "[[CTX_TURN ", 11) == 0) {
            block++;
            size_t k = (block - 1) % 8;
            skip = (k == 1 || k == 2);
        }
        if (!skip) sb_append(&e, p, n);
        p += n;
    }
    double t3 = lc_now_ms();
    clm_edit(&v, e.p, e.len, &o, NULL);
    double t4 = lc_now_ms();
    char *payload = NULL;
    char digest[65];
    clm_prefix_digest(NULL, 0, digest);
    clm_payload_accept(&v, &o, 2, N_MSG, digest, &payload, NULL);
    double t5 = lc_now_ms();

    /* An edit far over any window (issue 14.6): 100,000 inserted new- blocks after the
     * metadata line, ~11 MB, under the 16 MB mirror cap. Validation must stay linear. */
    sbuf big = {0};
    const char *body = strchr(text, '\n');
    sb_append(&big, text, body ? (size_t)(body - text) + 1 : strlen(text));
    for (size_t i = 0; i < 100000; i++)
        sb_printf(&big, "\n[[CTX_TURN document=%s index=0 role=notes id=new-b%zu protected=false]]\n"
                  "note %zu about the task\n", NONCE, i, i);
    if (body) sb_puts(&big, body);
    clm_outcome ob;
    double t6 = lc_now_ms();
    clm_edit(&v, big.p, big.len, &ob, NULL);
    double t7 = lc_now_ms();

    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("bench_clm context: %d messages, ~%zu estimated tokens, %zu JSON bytes, mirror %zu bytes\n",
           N_MSG, tokens, chars, len);
    printf("bench_clm render_ms: %.1f\n", t1 - t0);
    printf("bench_clm parse_apply_untouched_ms: %.1f (identity %s)\n", t2 - t1b,
           identical ? "ok" : "FAILED");
    printf("bench_clm parse_apply_edit_ms: %.1f (accepted %s, %zu messages after)\n", t4 - t3,
           o.accepted ? "yes" : "no", o.n_items);
    printf("bench_clm revision_payload_ms: %.1f (%zu bytes)\n", t5 - t4, payload ? strlen(payload) : 0);
    printf("bench_clm parse_apply_100k_new_blocks_ms: %.1f (%zu bytes, accepted %s, %zu messages after)\n",
           t7 - t6, big.len, ob.accepted ? "yes" : "no", ob.n_items);
    clm_outcome_free(&ob);
    sb_free(&big);
    printf("bench_clm peak RSS with the messages built: %ld kB\n", rss_msgs);
    printf("bench_clm peak RSS after render: %ld kB (+%ld kB)\n", rss_render, rss_render - rss_msgs);
    printf("bench_clm peak RSS after parse, apply and payload: %ld kB (+%ld kB)\n", ru.ru_maxrss,
           ru.ru_maxrss - rss_render);
    printf("bench_clm peak_rss_kb: %ld\n", ru.ru_maxrss);
    free(payload);
    clm_outcome_free(&o);
    sb_free(&e);
    free(text);
    clm_view_free(&v);
    for (size_t i = 0; i < N_MSG; i++) free(msgs[i]);
    return identical ? 0 : 1;
}
