/*
 * store_sqlite_raw.h -- the SQLite backend's packed form of a message's verbatim JSON
 * (store_sqlite_raw.c): long strings the row's derived text or payload already holds
 * become references into them, the rest is deflated when that pays; unpacking gives the
 * original bytes. Private to store_sqlite*.c.
 */
#ifndef LC_STORE_SQLITE_RAW_H
#define LC_STORE_SQLITE_RAW_H

#include <stddef.h>

#include <sqlite3.h>

/* A packer's reusable buffers and deflate state (one per store connection). */
typedef struct store_sqlite_raw store_sqlite_raw;

store_sqlite_raw *store_sqlite_raw_new(void);
void store_sqlite_raw_free(store_sqlite_raw *p);

/* Pack `json` against the row's `text` and `payload` (NULL: none). *out points into the
 * packer's buffer, valid until its next pack. */
int store_sqlite_raw_pack(store_sqlite_raw *p, const char *json, size_t len, const char *text, size_t tlen,
                          const char *payload, size_t plen, const unsigned char **out, size_t *out_len, char **err);
/* The JSON a packed value stands for, malloc'd and NUL-terminated, given the same row's
 * text and payload. A damaged value is an error, never other bytes. */
int store_sqlite_raw_unpack(const unsigned char *blob, size_t n, const char *text, size_t tlen,
                            const char *payload, size_t plen, char **out, size_t *out_len, char **err);
/* A row's verbatim JSON from a statement's columns: a TEXT value as it is (rows written
 * before schema 4, rows loaded from a dump), a BLOB unpacked against the text and payload
 * columns (payload_col -1: none selected). *out is malloc'd. */
int store_sqlite_raw_column(sqlite3_stmt *st, int raw_col, int text_col, int payload_col, char **out,
                            size_t *out_len, char **err);

#endif
