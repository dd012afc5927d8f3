/*
 * clihelp.h -- the `lcm` command's answer to a mistyped word: the nearest verb or option by
 * edit distance ("did you mean"), and the check of a verb's options against the list of
 * those it takes (an unknown one with a suggestion, one without its value named as such).
 * An option list is a string " --home= --json " -- each option between spaces, '=' when it
 * takes a value.
 */
#ifndef LCM_CLIHELP_H
#define LCM_CLIHELP_H

#include <stddef.h>

/* The edit distance of a and b (insertions, deletions, substitutions and swaps of two
 * neighbouring characters, each 1). */
size_t clihelp_distance(const char *a, const char *b);

/* The candidate nearest to `word` when it is near enough to be a slip (distance at most 2
 * and under half its length), or the one candidate it starts; NULL otherwise. */
const char *clihelp_nearest(const char *word, const char *const *cands, size_t n);

/* 1 when `opt` ("--home") is in the option list; *value (may be NULL) says it takes one. */
int clihelp_takes(const char *opts, const char *opt, int *value);

/* Check argv[from..argc) against the option list of `verb`: every "--x" before a "--" is
 * one it takes, and one that takes a value has one. Prints the refusal on stderr ("lcm
 * VERB: unknown option --limt (did you mean --limit?)", "lcm VERB: --home needs a value")
 * and returns 2; 0 when all is well. */
int clihelp_check(const char *verb, const char *opts, int argc, char **argv, int from);

/* The option of the list nearest to `opt`, copied into buf (NULL when none is near). */
const char *clihelp_nearest_opt(const char *opts, const char *opt, char *buf, size_t cap);

#endif
