/*
 * summ_host.h -- the summarizer's model calls when a host answers them (the session
 * model, summarizer `auto`): the request and the answer as JSON text, the queue of calls
 * a worker thread makes for the host thread to start (the host answers on a thread of its
 * own; the worker waits, bounded by summaryTimeoutMs and by being stopped), and what the
 * host thread reports of the worker (the pass row of the metrics, the lines of /lcm
 * status). Nothing here knows the host's types: a plugin starts the calls and finishes
 * them with the host's answer.
 */
#ifndef LC_SUMM_HOST_H
#define LC_SUMM_HOST_H

#include <cjson/cJSON.h>

#include "config.h"
#include "store.h"
#include "summarize.h"
#include "util.h"
#include "worker.h"

/* The completion request for one summarizer call (malloc'd JSON; NULL on OOM). */
char *summ_host_request(const char *system_prompt, const char *prompt, long max_tokens,
                        long timeout_ms);
/* The host's answer `resp` as a completion (plain text when it is not JSON). */
int summ_host_answer(const char *resp, summ_completion *out, char **err);

/* How the host answered a call. */
typedef enum { SUMM_HOST_OK = 0, SUMM_HOST_NO_MODEL, SUMM_HOST_FAILED } summ_host_status;

typedef struct summ_host_calls summ_host_calls;
typedef struct summ_host_call summ_host_call;

int summ_host_calls_new(summ_host_calls **out);
/* Only when the host can finish no call any more (unload): what it dropped is freed. */
void summ_host_calls_free(summ_host_calls *q);
/* On the worker thread: queue `req` and wait for its answer, at most timeout_ms from
 * its start (<= 0: 60 s), and only while `w` is not being stopped (LC_CANCELLED then). */
int summ_host_calls_wait(summ_host_calls *q, const char *req, long timeout_ms, worker *w,
                         char **resp, char **err);
/* On the host thread: the oldest call not started yet, marked started (NULL: none); its
 * request in *req (borrowed until it is finished). */
summ_host_call *summ_host_calls_next(summ_host_calls *q, const char **req);
/* The host's answer (any thread, once per started call); frees a call the worker gave up. */
void summ_host_calls_finish(summ_host_call *c, summ_host_status status, const char *out_json,
                            const char *err);
/* Calls queued and not started yet. */
int summ_host_calls_unstarted(summ_host_calls *q);

/* The metrics row of a background pass (NULL when it did nothing worth a row). */
cJSON *summ_host_pass_row(const worker_result *r);
/* One line of /lcm status: "WHAT (HH:MM:SS UTC): TEXT", at_ms wall-clock. */
void summ_host_when_line(sbuf *b, const char *what, long long at_ms, const char *text);
/* The worker's lines of /lcm status (w NULL: passes run between turns); with `emb` (hybrid
 * recall configured) its embedding passes and `st`'s coverage too. */
void summ_host_status_lines(sbuf *b, worker *w, long pass_deadline_ms, int unstarted,
                            const char *fallback, long long fallback_at_ms, const lcm_embeddings *emb, store *st);

#endif
