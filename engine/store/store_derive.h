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
#include <stdint.h>

#include <cjson/cJSON.h>

#include "files.h"
#include "message.h"
#include "store.h"

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

/* A message's row as every backend writes it. The strings the row names inside `msg`
 * (tool_name, call_id) live as long as the row. */
typedef struct store_derived {
    const char *json;      /* the bytes to store: the message's own, or json_own when
                            * privacy.h masked some of it */
    size_t json_len;
    char *json_own;
    const cJSON *msg;
    cJSON *own;            /* msg when the derivation parsed it (else the caller's) */
    msg_role role;
    char *text; /* the derived text */
    size_t text_len;
    size_t chars; /* UTF-8 characters of text */
    int64_t tokens;
    char *index_text;      /* the index's words (msg_index_text); NULL: the text itself */
    size_t index_len;
    char *thinking;        /* the thinking blocks' text, indexed apart; NULL: none */
    size_t thinking_len;
    char *payload;         /* NULL when the text carries the whole message */
    const char *tool_name; /* a tool result's tool, or NULL */
    const char *call_id;   /* a tool result's call, or NULL: the backend finds its path */
    int64_t created;       /* the message's own timestamp (0: none) */
} store_derived;

/* Derive the row of one message (m->json, or the caller's parse of it in m->msg) and note
 * an assistant's tool calls in the ring. What is never stored goes first (privacy.h: the
 * private spans always, the secret shapes when `redact`): the row's json is then the
 * masked message, and the text derived from it. Returns LC_OK, LC_INVALID (not JSON) or
 * LC_NOMEM; free with store_derive_row_free either way. */
int store_derive_row(store_derived *row, const store_msg *m, int redact, store_call *calls, size_t *next,
                     char **err);
void store_derive_row_free(store_derived *row);

/* The file handle of a large tool result: its content id, kind, preview and summary. */
typedef struct store_derived_handle {
    char cid[65];
    files_kind kind;
    char *preview;
    char *summary;
} store_derived_handle;

/* Derive the handle of `text` (`len` bytes; `path` NULL: an inline result). Returns LC_OK
 * or LC_NOMEM; free with store_derive_handle_free either way. */
int store_derive_handle(store_derived_handle *h, const char *path, const char *text, size_t len, char **err);
void store_derive_handle_free(store_derived_handle *h);

#endif
