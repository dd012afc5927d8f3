/*
 * request.h -- one `context` request of a session, end to end: LCM's projection of the raw
 * input (projstate.h), the live context composed on it (clm_request.h: the revision in
 * force, the observation cap, the overflow guard, the one-call notices), and the note of
 * what was sent (the request log, a `request` metrics row). The one place LCM and live
 * context meet; the caller converts its event into engine types once, calls
 * request_context once, and converts the answer once. Knows nothing of the ABI: the
 * caller's side is reached only through request_hooks.
 */
#ifndef LC_REQUEST_H
#define LC_REQUEST_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "clm_live.h"
#include "offline.h"
#include "projstate.h"
#include "store.h"

/* What the request needs of its owner (every hook may be NULL). */
typedef struct request_hooks {
    void *ud;
    /* A store call of this request failed in a way that means the store cannot be reached
     * (offline.h offline_failure): let go of the connections and go offline, saying `why`.
     * The request goes on without a store. */
    void (*offline)(void *ud, const char *why);
    /* One telemetry row (metrics.h kinds). */
    void (*metric)(void *ud, const char *kind, const cJSON *fields);
} request_hooks;

/* The session's state the request reads and moves (borrowed for the call). */
typedef struct request_session {
    projstate *proj;          /* LCM's projection; NULL: LCM off */
    projstate_env env;        /* its store, config and chains for this request */
    offline_state *off;       /* counts the requests built while offline; may be NULL */
    clm_live *clm;            /* live context (off inside when disabled) */
    request_hooks hooks;
} request_session;

/* One message of the request as sent: raw input `raw` (>= 0) unchanged, or new JSON
 * (`json`, owned, when raw < 0). */
typedef struct request_item {
    long raw;
    char *json;
} request_item;

typedef struct request_result {
    int changed;              /* 0: send the input as it came (items NULL) */
    request_item *items;      /* the request in order, one-call notices last */
    size_t n;
    size_t raw_tokens;        /* the raw input's estimate (ceil(bytes/4) a message) */
} request_result;

/* The request for raw input msgs[0..n) (root to leaf, borrowed) and `system_prompt` (may
 * be NULL): projected, composed, and noted as sent. LC_OK with *out filled (free it with
 * request_result_free), else a failure with *err set and nothing to send but the input. */
int request_context(request_session *s, const store_msg *msgs, size_t n, const char *system_prompt,
                    request_result *out, char **err);
void request_result_free(request_result *r);

#endif
