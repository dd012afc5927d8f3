/*
 * store_derive.h -- what every store backend derives from a session message before it
 * writes the row, so that a SQLite and a PostgreSQL store hold identical rows: the parse
 * that keeps an escaped NUL from hiding the rest of a message from search, the payload
 * (the blocks the derived text does not carry), and the ring of recent tool calls that
 * lets a tool result name the path its call read. Backends own the SQL around it.
 */
#ifndef LC_STORE_DERIVE_H
#define LC_STORE_DERIVE_H

#include <stddef.h>

#include <cjson/cJSON.h>

#define STORE_CALL_RING 64

/* One recent tool call: its id and the path its arguments named (NULL: none). */
typedef struct store_call {
    char *id;
    char *path;
} store_call;

/* Remember the paths an assistant message's tool calls name, in the ring
 * `calls[STORE_CALL_RING]` (`*next` is its write position). */
void store_derive_note_calls(store_call *calls, size_t *next, const cJSON *msg);
/* 1 when the ring holds `call_id`, with *path its path (malloc'd, NULL when the call named
 * none); 0 when the call is not in the ring. */
int store_derive_call_path(const store_call *calls, const char *call_id, char **path);
void store_derive_calls_free(store_call *calls);

/* Parse a message for its derived text (cJSON ends a string at an escaped NUL: the parse
 * sees U+FFFD there instead; the verbatim JSON is stored unchanged). */
cJSON *store_derive_parse(const char *json, size_t len);
/* The blocks the derived text does not carry (thinking, images, signatures, unknown types
 * or fields), as a JSON array text (malloc'd; NULL on OOM). */
char *store_derive_payload(const cJSON *msg);

#endif
