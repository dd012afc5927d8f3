/*
 * jsonl.h -- a streaming reader of JSON Lines files (session files): splits a file into
 * lines of any length (keeping at most JSONL_LINE_MAX bytes of one), tolerates "\r\n"
 * and a last line without a newline, and skips blank lines. It never parses JSON: a
 * malformed line is the caller's concern.
 * Owns the open file and one line buffer per reader.
 */
#ifndef LC_JSONL_H
#define LC_JSONL_H

#include <stddef.h>

typedef struct jsonl_reader jsonl_reader;

/* Open `path` for reading from the start. LC_NOTFOUND when the file does not exist,
 * LC_ERR otherwise on failure; *err (caller-owned, free()) explains. */
int jsonl_open(const char *path, jsonl_reader **out, char **err);
/* Open and start at byte `offset` (a value jsonl_offset returned earlier), to read only
 * what was appended since. Line numbers then count from the first line after offset. */
int jsonl_open_at(const char *path, long long offset, jsonl_reader **out, char **err);

/* The most bytes of one line a reader keeps in memory (64 MiB; a Claude Code line with
 * images runs to a few MB): a longer line is read to its end, its first JSONL_LINE_MAX
 * bytes returned and jsonl_clipped says so (no JSON parser accepts the cut). */
#define JSONL_LINE_MAX (64u << 20)

/* The next non-blank line, without its "\n" / "\r\n". LC_OK: *line (NUL-terminated,
 * borrowed until the next call or jsonl_close), *len (bytes, may contain NULs) and
 * *lineno (1-based physical line number; may be NULL) are set. LC_NOTFOUND at end of
 * file. LC_ERR / LC_NOMEM on a read failure; jsonl_error(r) says why. */
int jsonl_next(jsonl_reader *r, const char **line, size_t *len, size_t *lineno);

/* Byte offset just past the last line returned (its newline included). A final line
 * without a newline counts too, so a writer that later completes that line is seen as
 * new data only from its newline on: resume from jsonl_offset only after complete lines
 * (jsonl_last_complete says whether the last line ended in a newline). */
long long jsonl_offset(const jsonl_reader *r);
/* Whether the last line returned was longer than JSONL_LINE_MAX (and so cut there). */
int jsonl_clipped(const jsonl_reader *r);
int jsonl_last_complete(const jsonl_reader *r);

/* Why the last jsonl_next failed (borrowed), or NULL. */
const char *jsonl_error(const jsonl_reader *r);

/* Close the file and free the reader. NULL is a no-op. */
void jsonl_close(jsonl_reader *r);

/* The exact bytes of the value of top-level member `key` in the JSON object text `s`
 * (*off, *len), so a message crosses byte for byte as the session file holds it: no
 * re-serialization, no lost \u0000, no reformatted numbers. LC_NOTFOUND when absent,
 * LC_INVALID when `s` is not an object this scanner can walk. */
int json_member_span(const char *s, size_t n, const char *key, size_t *off, size_t *len);

#endif
