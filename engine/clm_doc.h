/*
 * clm_doc.h -- the live-context mirror document (CLM architecture §3): rendering the
 * effective context into LIVE_CONTEXT.md text, and parsing an edited mirror back into
 * metadata, block headers and bodies. Owns the "view" -- everything remembered about one
 * rendering that is needed to apply an edit of it later -- and the parsed document.
 * Knows nothing about the plugin ABI: messages are AgentMessage JSON texts.
 */
#ifndef LC_CLM_DOC_H
#define LC_CLM_DOC_H

#include <stddef.h>
#include <stdint.h>

#include "message.h"
#include "util.h"

#define CLM_ID_MAX 40      /* "<ordinal>-<12 hex>" or a model-chosen "new-..." id */
#define CLM_LABEL_MAX 48   /* role labels: user, assistant, toolResult, notes, ... */
#define CLM_NONCE_LEN 16   /* hex characters of a document nonce */

typedef enum clm_mode { CLM_MODE_CLM = 0, CLM_MODE_CONSERVATIVE = 1 } clm_mode;

/* One rendered message. The view owns a copy of its JSON so that it outlives the host's
 * borrowed context buffers until the edit is applied at turn_end. */
typedef struct clm_vmsg {
    char *json;                 /* AgentMessage JSON text, exact bytes as given */
    size_t json_len;
    long origin;                /* caller's tag (e.g. host input index, -1 = revision) */
    msg_role role;
    char id[CLM_ID_MAX];
    char label[CLM_LABEL_MAX];  /* role label shown in the header */
    uint8_t body_digest[32];    /* SHA-256 of the unescaped body, trailing newlines cut */
    size_t tokens;              /* msg_estimate_tokens of the message */
    int is_protected;           /* conservative mode: first / latest user turn */
    char *call_id;              /* toolResult: its toolCallId (owned), else NULL */
    char *tool;                 /* toolResult: its toolName, sanitized (owned), or NULL */
    char **calls;               /* assistant: ids of its toolCall blocks (owned) */
    size_t n_calls;
    long owner;                 /* toolResult: view index of the assistant that made the
                                 * call, -1 if none */
    size_t n_results;           /* assistant: how many rendered tool results it owns */
    size_t body_off, body_len;  /* escaped body inside view->bodies */
} clm_vmsg;

/* Everything about one rendering: the messages, ids, nonce and the exact metadata line. */
typedef struct clm_view {
    clm_mode mode;
    long revision;
    char nonce[CLM_NONCE_LEN + 1];
    char baseline[13];
    char *meta_line;            /* the exact first line the mirror was rendered with */
    clm_vmsg *msgs;
    size_t n, cap;
    sbuf bodies;                /* escaped bodies, concatenated */
    int finished;
} clm_view;

/* CLM-mode nonce: stable between accepted edits (session, revision anchor, revision). */
void clm_nonce_stable(const char *session_id, const char *anchor_digest, long revision,
                      char out[CLM_NONCE_LEN + 1]);
/* Conservative-mode nonce: new for every render (salt = caller's render counter). */
void clm_nonce_fresh(const char *session_id, unsigned long salt, char out[CLM_NONCE_LEN + 1]);

/* Start a view. `nonce` must be CLM_NONCE_LEN hex characters. */
int clm_view_init(clm_view *v, clm_mode mode, long revision, const char *nonce, char **err);
/* Append one message of the effective context. `key` (may be NULL) is a stable identity
 * such as the session entry id; without it the id derives from role label and text.
 * LC_INVALID when the JSON is not an object. */
int clm_view_add(clm_view *v, const char *json, size_t json_len, long origin,
                 const char *key, char **err);
/* Finish the view (tool-call ownership, protection, baseline) and return the mirror
 * text, malloc'd. The view may be rendered again; the text is identical. */
int clm_view_render(clm_view *v, char **out, size_t *out_len, char **err);
void clm_view_free(clm_view *v);
/* Index of the message with this id, -1 when absent. */
long clm_view_find(const clm_view *v, const char *id);

/* ---- the parsed mirror ---- */
typedef struct clm_block {
    size_t line;                 /* 1-based line of the header */
    char *nonce;                 /* document= value */
    char *id;
    char *label;                 /* role= value */
    char *body;                  /* unescaped, trailing newlines removed */
    size_t body_len;
} clm_block;

typedef struct clm_doc {
    int has_meta;
    size_t meta_line;            /* line number of the metadata line */
    long meta_version, meta_revision;
    char *meta_nonce;
    char *outside;               /* non-blank text between metadata and first block */
    size_t outside_line;
    clm_block *blocks;
    size_t n_blocks, cap_blocks;
    /* The first structural problem found while parsing (malformed header, a metadata
     * line inside the document, invalid UTF-8), with its line; NULL when none. */
    char *problem;
    size_t problem_line;
    /* Text of the whole document minus the metadata line, for whole-context rewrites. */
    char *plain;
} clm_doc;

/* Parse mirror text. Never fails on content (content problems land in doc->problem);
 * LC_NOMEM only. */
int clm_doc_parse(const char *text, size_t len, clm_doc *doc, char **err);
void clm_doc_free(clm_doc *doc);

/* The body of a message as rendered (readable text; unescaped), malloc'd. */
char *clm_body_text(const char *json, size_t json_len);
/* Append `s` to b with every line that begins (after any backslashes) with
 * "[[CTX_TURN " or "[[LIVE_CONTEXT " given one more leading backslash. */
int clm_escape_append(sbuf *b, const char *s, size_t n);
/* The inverse: drop one leading backslash from such lines. malloc'd, NUL-terminated. */
char *clm_unescape(const char *s, size_t n, size_t *out_len);

#endif
