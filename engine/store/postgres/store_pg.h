/*
 * store_pg.h -- the PostgreSQL face of the store for the backend's own files
 * (store_pg*.c) and for tests that inspect a session's rows the way test suites read a
 * SQLite store's: plain SQL over the session's views (`messages`, `summaries`, ...). No
 * engine module outside the backend includes it, and it names no libpq type.
 */
#ifndef LC_STORE_PG_H
#define LC_STORE_PG_H

#include <stdint.h>
#include <stdio.h>

#include "store.h"

/* 1 when `s` is a PostgreSQL store. */
int store_pg_is(const store *s);
/* One integer from `sql` run on the store's connection, over this session's rows; `dflt`
 * when it fails or returns nothing. */
int64_t store_pg_query_int(store *s, const char *sql, int64_t dflt);
/* Run `sql` (one or more statements) on the store's connection. */
int store_pg_exec(store *s, const char *sql, char **err);
/* 1 while the server answered the store's last statement; 0 after it found the server
 * unreachable (the next call tries to reconnect). */
int store_pg_online(const store *s);
/* Trace the protocol messages of the store's connection to `f` (NULL stops): what a test
 * counts the round trips of a call by (one ReadyForQuery per trip to the server). */
void store_pg_trace(store *s, FILE *f);

#endif
