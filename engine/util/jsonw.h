/*
 * jsonw.h -- JSON text out of a cJSON tree, byte for byte what cJSON_PrintUnformatted
 * prints, at the speed of a copy: strings are written as runs of bytes that need no escape,
 * where cJSON measures and escapes them a byte at a time (the print of each message an
 * import builds was an eighth of a Claude Code import). Owns no state.
 */
#ifndef LC_JSONW_H
#define LC_JSONW_H

#include <cjson/cJSON.h>

#include "util.h"

/* The tree as compact JSON (malloc'd), NULL when out of memory or when the tree holds an
 * item cJSON cannot print either (an invalid type). */
char *jsonw_print(const cJSON *item);
/* A JSON string literal of s (NULL prints ""), quotes included, onto b. LC_OK or LC_NOMEM. */
int jsonw_string(sbuf *b, const char *s);

#endif
