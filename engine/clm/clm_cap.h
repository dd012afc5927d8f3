/*
 * clm_cap.h -- the observation cap of live context (docs/DESIGN.md §5.3): a tool result
 * over a character cap keeps a head and a tail of its text around a marker that says how
 * much was cut. Owns nothing; the capped forms are cached by the raw cache (clm_raw.h).
 */
#ifndef LC_CLM_CAP_H
#define LC_CLM_CAP_H

/* The capped AgentMessage JSON (malloc'd) of the message `json` under a cap of `cap`
 * characters with `head` (0..1) of them before the marker; NULL when the message needs no
 * cap (or is not a tool result). */
char *clm_cap_message(const char *json, long cap, double head);

#endif
