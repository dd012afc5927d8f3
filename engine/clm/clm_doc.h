/*
 * clm_doc.h -- the live-context mirror document (docs/DESIGN.md §2): rendering the
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
#include "sha256.h"
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
    char *key;                  /* the caller's identity key (owned), NULL when none: kept so
                                 * that a later render can tell the message is the same */
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
    /* The baseline digest over the ids of msgs[0..base_n): a view kept across renders only
     * hashes the ids it gained. */
    sha256_ctx base_ctx;
    size_t base_n;
    /* The mirror digest of everything after the metadata line, resumable: seg_ckpt[j] is
     * the state after the blocks of msgs[0..j*CLM_SEG_CKPT); the blocks of msgs[0..seg_valid)
     * are as rendered when the checkpoints were taken, under seg_nonce. */
    sha256_ctx *seg_ckpt;
    size_t n_seg_ckpt, cap_seg_ckpt;
    size_t seg_valid;
    char seg_nonce[CLM_NONCE_LEN + 1];
    /* The last render with a digest, which a delta render extends: its length, its blocks,
     * the length of its metadata line, and the digest state after its blocks. */
    int out_ok;
    size_t out_len, out_n, out_meta_len;
    sha256_ctx seg_end;
    /* Kept as messages come and go, so that finishing a render does not visit them all:
     * the first and the latest user message (-1 none), and the protected ones (-1 none). */
    long user_first, user_last;
    long prot[2];
} clm_view;

#define CLM_SEG_CKPT 64

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
/* Keeping a view across renders (the effective context usually only grows at its end):
 * a message rendered again at the same position is "the same" when its JSON bytes, origin
 * and key are equal -- then everything clm_view_add derived from it (ids, body, ownership)
 * is equal too, because it depends only on those and on the messages before it. The
 * caller walks the shared prefix with clm_view_same, drops the rest with
 * clm_view_truncate, sets the new nonce/revision with clm_view_rebase and adds what
 * follows; the rendering is byte-identical to a view built afresh. The mode cannot change:
 * build a new view for that. */
int clm_view_same(const clm_view *v, size_t i, const char *json, size_t json_len, long origin,
                  const char *key);
/* Drop messages n.. (no-op when n >= v->n); ownership counts of kept assistants follow. */
void clm_view_truncate(clm_view *v, size_t n);
/* New revision and nonce for the same messages. LC_INVALID (view unchanged) on a bad nonce. */
int clm_view_rebase(clm_view *v, long revision, const char *nonce, char **err);
/* Finish the view (tool-call ownership, protection, baseline) and return the mirror
 * text, malloc'd. The view may be rendered again; the text is identical. */
int clm_view_render(clm_view *v, char **out, size_t *out_len, char **err);
/* The same, plus the text's clm_mirror_digest, hashing only the blocks that changed since
 * the previous render of this view (in CLM mode, where the nonce is stable: the new ones). */
int clm_view_render_digest(clm_view *v, char **out, size_t *out_len, uint8_t digest[32],
                           char **err);
/* The same as a change of the file holding this view's previous digest render: when every
 * block of that render is kept as it was and the metadata line kept its length (CLM mode,
 * between edits: only the baseline= digest in it changes), *tail holds only the blocks
 * that follow them, to be written at offset *tail_at (the previous text's length), and
 * *head (*head_len bytes) is the new metadata line with its newline, to be written over
 * the first bytes. Otherwise *tail is the whole text, *tail_at 0 and *head NULL. The text
 * so written equals clm_view_render's byte for byte; `digest` is its clm_mirror_digest.
 * A caller whose file does not hold that previous render passes allow_delta = 0. */
int clm_view_render_delta(clm_view *v, int allow_delta, char **head, size_t *head_len,
                          char **tail, size_t *tail_len, size_t *tail_at, uint8_t digest[32],
                          char **err);
void clm_view_free(clm_view *v);
/* The fingerprint the plugin keeps of a mirror file it wrote or read. Not the SHA-256 of the
 * text: the metadata line changes on every render, so it is hashed apart from the rest,
 * which lets a render resume the rest's hash where its previous render's blocks end. */
void clm_mirror_digest(const char *text, size_t len, uint8_t out[32]);
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
