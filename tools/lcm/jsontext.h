/*
 * jsontext.h -- a JSON text read for minimal edits: every value keeps the byte span it has
 * in the file, so `lcm hooks install` can add or take out one member or one element and
 * leave every other byte of the user's file as it was (indentation, CRLF, a BOM, numbers
 * past double precision, "\u0000" in strings).
 * Owns the strict parse into spans, looking members up, decoding one string, and the edit
 * list (splices of the original text) with the removal and append rules whose inverses are
 * exact: what jt_append inserts, jt_remove of the same child takes out byte for byte.
 */
#ifndef LCM_JSONTEXT_H
#define LCM_JSONTEXT_H

#include <stddef.h>

enum { JT_OBJ = 1, JT_ARR, JT_STR, JT_NUM, JT_LIT };

typedef struct jt_node {
    int type;
    size_t start, end;         /* the value: [start, end) of the text */
    size_t key_start, key_end; /* a member's key token, quotes included (0, 0 in arrays) */
    size_t n;                  /* children */
    struct jt_node *child, *last, *next, *parent;
} jt_node;

/* Parse text[0..len) (a UTF-8 BOM first is allowed). On failure *err says where. */
int jt_parse(const char *text, size_t len, jt_node **root, char **err);
void jt_free(jt_node *root);

/* The member `key` of an object (the last, as JavaScript reads duplicates), or NULL. */
jt_node *jt_get(const char *text, const jt_node *obj, const char *key);
/* A member's key decoded (malloc'd), as jt_str. */
char *jt_key(const char *text, const jt_node *member);
/* A string value decoded (malloc'd); NULL when not a string, on OOM, or when it holds
 * \u0000 (no C string says it). */
char *jt_str(const char *text, const jt_node *n);

/* Splices of the original text: [start, end) becomes `with`. They must not overlap. */
typedef struct jt_edits {
    struct jt_splice {
        size_t start, end;
        char *with;
    } *v;
    size_t n, cap;
    int oom;
} jt_edits;

/* Take the children flagged in `drop` (one flag per child, in order) out of a container:
 * a child with a kept one before it goes with the separator before it; a leading run goes
 * up to the next kept child; when none is kept the inside becomes empty ("{}", "[]"). */
void jt_remove(jt_edits *e, const char *text, const jt_node *container, const unsigned char *drop);
/* Append to a container one element (key NULL) or member `key`, whose value is given as a
 * cJSON-free JSON text printer: `value` is called with the indentation of the new child and
 * the file's newline and indent unit, and returns the malloc'd value text. */
typedef char *(*jt_value_fn)(const void *ctx, const char *indent, const char *unit, const char *nl);
void jt_append(jt_edits *e, const char *text, size_t len, const jt_node *container, const char *key,
               jt_value_fn value, const void *ctx);
/* Replace text[start, end) by a copy of `with` (an insertion when start == end). */
void jt_replace(jt_edits *e, size_t start, size_t end, const char *with);
/* The new text (malloc'd, NUL-terminated), NULL on OOM. Frees the edits. */
char *jt_apply(const char *text, size_t len, jt_edits *e);
void jt_edits_free(jt_edits *e);

/* The file's newline ("\r\n" when its first line ends so) and its indent unit (the
 * leading blanks of its first indented line; two spaces when none is). */
void jt_style(const char *text, size_t len, const char **nl, char unit[17]);
/* Text of a JSON string literal for s (malloc'd). */
char *jt_quote(const char *s);

#endif
