/*
 * tomlscan.h -- a TOML text read as statements with byte spans, for editing a user's
 * config.toml line by line without ever mistaking a line inside a string for a key.
 * Owns the statement scan (table and array-table headers, key = value with dotted and
 * quoted keys, basic / literal / multi-line strings, arrays and inline tables over lines,
 * comments, CRLF) and the look-up of a key inside one inline table. It checks the shapes
 * it needs to be sure where a statement ends, not every rule of TOML (dates are read as
 * bare words), so a file it accepts is split right, and a file it cannot split is refused.
 */
#ifndef LCM_TOMLSCAN_H
#define LCM_TOMLSCAN_H

#include <stddef.h>

enum { TOML_BLANK = 1, TOML_TABLE, TOML_ARRAY_TABLE, TOML_KEYVAL };

typedef struct toml_stmt {
    int kind;
    size_t start, end;         /* the statement's bytes, its newline included */
    size_t line_end;           /* end without the newline ("\n" or "\r\n") */
    size_t val_start, val_end; /* TOML_KEYVAL: the value */
    size_t com_start;          /* its comment ("#..." up to line_end), or line_end when none */
    char **key;                /* decoded: the header's path or the key's dotted path */
    size_t nkey;
    long table;                /* TOML_KEYVAL: the index of its header statement, -1 at the root */
    size_t line;               /* 1-based, for messages */
} toml_stmt;

typedef struct toml_doc {
    toml_stmt *v;
    size_t n;
} toml_doc;

/* Split text[0..len) into statements. On a shape it cannot be sure of, *err names the line. */
int toml_scan(const char *text, size_t len, toml_doc *d, char **err);
void toml_doc_free(toml_doc *d);

/* Whether statement st's key (or header) path is exactly the given words. */
int toml_key_is(const toml_stmt *st, const char *const *path, size_t n);
/* In the inline table text[start, end) ("{ ... }"), the value span of its top-level key
 * `key` (a plain key, not dotted): 1 and *vs, *ve when found. */
int toml_inline_get(const char *text, size_t start, size_t end, const char *key, size_t *vs, size_t *ve);

#endif
