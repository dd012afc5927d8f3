/*
 * files.h -- file handles for large tool results: what kind of body a result turned out
 * to be, and the rule-built exploration summary (no model call, no parser beyond cJSON
 * for JSON shape). Pure functions; the store records the handle rows.
 */
#ifndef LC_FILES_H
#define LC_FILES_H

#include <stddef.h>

#define FILES_PREVIEW_CHARS 1200   /* bounded head of the body kept in the handle */
#define FILES_SUMMARY_MAX 300      /* an exploration summary stays under this many bytes */
#define FILES_NAMES_CAP 12         /* declarations / keys / headings named before (+N more) */

typedef enum files_kind {
    FILES_KIND_CODE = 0,
    FILES_KIND_JSON,
    FILES_KIND_JSONL,
    FILES_KIND_CSV,
    FILES_KIND_TSV,
    FILES_KIND_MARKDOWN,
    FILES_KIND_TEXT,
    FILES_KIND_BINARY,        /* a family with no rule: size only */
    FILES_KIND_LARGE_INLINE   /* large body, no path named: not a handle */
} files_kind;

const char *files_kind_name(files_kind k);

/* Classify a body read from `path` (path may be NULL: then the body alone decides, and a
 * caller with no path records FILES_KIND_LARGE_INLINE instead). */
files_kind files_classify(const char *path, const char *body, size_t len);

/* The language of a code path by extension ("C", "TypeScript", ...), NULL if unknown. */
const char *files_language(const char *path);

/* The exploration summary of a body (malloc'd, <= FILES_SUMMARY_MAX bytes), e.g.
 * "TypeScript, 240 lines; 18 top-level declaration(s): function compact, class Engine,
 * ... (+6 more)" or "array of 412 objects, keys: id, name". */
char *files_explore(const char *path, const char *body, size_t len, files_kind kind);

/* The bounded head of a body (malloc'd, at most FILES_PREVIEW_CHARS code points, never
 * cutting a UTF-8 sequence). */
char *files_preview(const char *body, size_t len);

/* Bytes of the first `max_chars` code points of s[0..len). */
size_t files_utf8_prefix(const char *s, size_t len, size_t max_chars);
/* Code points in s[0..len). */
size_t files_utf8_count(const char *s, size_t len);

#endif
