/*
 * offline.c -- the offline state and its bounded reconnect policy (offline.h).
 */
#include "offline.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

int offline_failure(int rc)
{
    return rc != LC_OK && rc != LC_INVALID && rc != LC_BUSY && rc != LC_NOMEM;
}

void offline_enter(offline_state *o, const char *reason, double now_ms)
{
    if (!o->offline) {
        o->offline = 1;
        o->since_ms = now_ms;
        o->tried_ms = now_ms;
        o->calls = 0;
        o->attempts = 0;
        o->requests = 0;
    }
    if (reason) {
        char *r = lc_strdup(reason);
        if (r) {
            free(o->reason);
            o->reason = r;
        }
    }
}

int offline_due(offline_state *o, double now_ms)
{
    if (!o->offline) return 0;
    o->calls++;
    if (o->calls < OFFLINE_RETRY_REQUESTS && now_ms - o->tried_ms < OFFLINE_RETRY_MS) return 0;
    o->calls = 0;
    o->tried_ms = now_ms;
    return 1;
}

void offline_still(offline_state *o, const char *reason, double now_ms)
{
    offline_enter(o, reason, now_ms);
    o->attempts++;
    o->tried_ms = now_ms;
}

double offline_leave(offline_state *o, double now_ms)
{
    double s = o->offline ? (now_ms - o->since_ms) / 1000.0 : 0;
    free(o->reason);
    memset(o, 0, sizeof *o);
    return s;
}

char *offline_describe(const offline_state *o, double now_ms)
{
    if (!o->offline) return lc_strdup("online");
    long left_calls = OFFLINE_RETRY_REQUESTS - o->calls;
    double left_s = (OFFLINE_RETRY_MS - (now_ms - o->tried_ms)) / 1000.0;
    return lc_asprintf("offline for %.0f s (%s); %ld request(s) built from what is known; %ld reconnect "
                       "attempt(s) failed; the next within %ld call(s) or %.0f s",
                       (now_ms - o->since_ms) / 1000.0, o->reason ? o->reason : "?", o->requests,
                       o->attempts, left_calls > 0 ? left_calls : 0, left_s > 0 ? left_s : 0);
}

char *offline_notice(const offline_state *o)
{
    return lc_asprintf("lcm: the store is offline (%s); LCM is not active until it is reachable again. The session "
                       "goes on: requests are built within the window from what is known (the summaries already "
                       "applied, held in memory; otherwise the context as the host builds it), nothing is stored "
                       "meanwhile and recall tools answer that the store is offline. A reconnect is tried within %d "
                       "requests or %.0f s; on reconnect every message the store missed is stored from the session "
                       "file",
                       o->reason ? o->reason : "?", OFFLINE_RETRY_REQUESTS, OFFLINE_RETRY_MS / 1000.0);
}

char *offline_recall_refusal(const offline_state *o)
{
    return lc_asprintf("lcm: the store is offline (%s); this session's recall answers once it is reachable again "
                       "(reconnected within %d requests or %.0f s)",
                       o->reason ? o->reason : "?", OFFLINE_RETRY_REQUESTS, OFFLINE_RETRY_MS / 1000.0);
}

void offline_free(offline_state *o)
{
    if (!o) return;
    free(o->reason);
    memset(o, 0, sizeof *o);
}
