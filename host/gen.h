/*
 * gen.h -- a deterministic session generator for tests, the demo, the benchmarks and the
 * long-context evaluation: user prompts, assistant text + thinking + parallel tool calls,
 * tool results of realistic shapes (source files, JSON, logs, CSV, command output, grep
 * hits, errors), some of them above the 32,000-character file-handle line and read from a
 * named path, a custom entry of another extension now and then, branches abandoned
 * through /tree, and needles `N<seq>=<value>` whose keys never repeat. The same options
 * always give the same bytes.
 */
#ifndef HOST_GEN_H
#define HOST_GEN_H

#include <stdint.h>

typedef struct gen_options {
    uint64_t seed;
    long tokens;    /* stop once the estimated tokens written reach this (0 = no limit) */
    long messages;  /* stop once this many messages were written (0 = no limit) */
    /* When set, the planted needles are written here as JSONL, one per needle:
     * {"key","value","entry_id","where","part","seq"}; where is user | assistant | tool |
     * large-tool | removed-branch, and part says which of the first four a needle in a
     * removed branch sits in. */
    const char *needles_path;
    /* Parallel tool calls per assistant round (--fanout): 0 keeps the default mix (1..3
     * calls, large files read now and then); N >= 2 writes N/2..N calls a round and no
     * large file, so a session of many messages costs few requests (store-scale tests). */
    int fanout;
} gen_options;

/* Write the session to `out_path` (replaced atomically). Prints nothing. */
int gen_session(const gen_options *opt, const char *out_path, char **err);

#endif
