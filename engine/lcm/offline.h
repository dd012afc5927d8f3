/*
 * offline.h -- a session whose store cannot be reached keeps working: the state of being
 * offline (since when, why, how many requests went out meanwhile), the bounded reconnect
 * policy (not every request while the store keeps failing: after OFFLINE_RETRY_REQUESTS
 * calls or OFFLINE_RETRY_MS, whichever comes first), which open failures count as
 * offline, and the sentences the notices and `/lcm status` say. A shared server down, a
 * store folder that cannot be created, a write that fails: the caller closes what it held,
 * builds its requests from what it knows, and on reconnect stores what the store missed
 * from the session file. Knows nothing of the ABI or of a backend.
 */
#ifndef LC_OFFLINE_H
#define LC_OFFLINE_H

#define OFFLINE_RETRY_REQUESTS 8   /* calls between two reconnect attempts, at most */
#define OFFLINE_RETRY_MS 30000.0   /* or this long, whichever comes first */

typedef struct offline_state {
    int offline;        /* the store is not reachable; the fields below describe it */
    char *reason;       /* the last failure's sentence (malloc'd) */
    double since_ms;    /* lc_now_ms when it went offline */
    double tried_ms;    /* the last reconnect attempt (or since_ms) */
    long calls;         /* calls since the last attempt */
    long attempts;      /* reconnect attempts that failed */
    long requests;      /* requests that went out while offline */
} offline_state;

/* 1 when a store open or call that failed with `rc` is the store being unreachable
 * (retried later); 0 for a refusal a retry cannot change (LC_INVALID: a planted link, a
 * newer schema, a path that is no folder), a store held busy by another process (LC_BUSY:
 * a lock, retried on its own cadence) or LC_NOMEM. */
int offline_failure(int rc);
/* The store just failed: offline from now (since_ms kept when it already was), for
 * `reason` (copied; NULL keeps the last one). */
void offline_enter(offline_state *o, const char *reason, double now_ms);
/* One call (a request or a command) while offline: 1 when a reconnect attempt is due,
 * which it then counts as made. */
int offline_due(offline_state *o, double now_ms);
/* A reconnect attempt failed: still offline, for `reason`. */
void offline_still(offline_state *o, const char *reason, double now_ms);
/* Reachable again: the state cleared; the seconds it was offline. */
double offline_leave(offline_state *o, double now_ms);
/* "offline for 12 s (reason); 3 request(s) built from what is known; next reconnect
 * attempt within 5 call(s) or 18 s" (malloc'd; NULL on OOM). */
char *offline_describe(const offline_state *o, double now_ms);
/* The one notice of going offline: what the session does meanwhile and when a reconnect
 * is tried (malloc'd; NULL on OOM). */
char *offline_notice(const offline_state *o);
/* A recall tool's answer while offline (malloc'd; NULL on OOM). */
char *offline_recall_refusal(const offline_state *o);
void offline_free(offline_state *o);

#endif
