/*
 * gen.h -- a deterministic session generator for tests, the demo and benchmarks:
 * user prompts, assistant text + thinking + parallel tool calls, tool results of a few
 * shapes (file reads, command output, errors), needles like `N07=4821`, a custom entry
 * of another extension now and then, and branches abandoned through /tree.
 */
#ifndef HOST_GEN_H
#define HOST_GEN_H

#include <stdint.h>

typedef struct gen_options {
    uint64_t seed;
    long tokens;    /* stop once the estimated tokens written reach this (0 = no limit) */
    long messages;  /* stop once this many messages were written (0 = no limit) */
} gen_options;

/* Write the session to `out_path` (replaced atomically). Prints nothing. */
int gen_session(const gen_options *opt, const char *out_path, char **err);

#endif
