/*
 * dream_rules.h -- the phrase rules a dream reads a text with when no model is configured
 * (or a model call failed): which words mark each of the five kinds of lesson, for which
 * speakers, and how strongly. dream.c splits texts into sentences and records what a rule
 * finds; this module only decides whether and how a lowercased sentence matches.
 */
#ifndef LC_DREAM_RULES_H
#define LC_DREAM_RULES_H

#include <stddef.h>

/* Who said a text: a rule applies to some speakers only (an assistant's "always" is not a
 * person's convention). */
enum { DREAM_USER = 1, DREAM_ASSISTANT = 2, DREAM_SUMMARY = 4 };

/* One rule (static storage). at_start: the phrase must open the sentence (after the
 * openers); also: a second phrase the sentence must hold too; score: how strongly the
 * words bind, contracts are proposed from the strongest. */
typedef struct dream_rule {
    const char *kind;
    unsigned roles;
    int at_start;
    const char *phrase;
    const char *also;
    int score;
} dream_rule;

/* The first rule, in table order, that `lower` (a lowercased sentence) said by `role`
 * matches; NULL when none does. */
const dream_rule *dream_rules_match(const char *lower, unsigned role);
/* `lower` past the openers ("- ", "please ", "also, ", ...) that do not change a rule. */
const char *dream_rules_skip_openers(const char *lower);
/* `lower` past every run of the n phrases it begins with, in any order and repeated. */
const char *dream_rules_skip_any(const char *lower, const char *const *phrases, size_t n);
/* 1 when `lower` begins with `phrase`. */
int dream_rules_starts(const char *lower, const char *phrase);
/* A kind's weight for a pattern a model found (it carries no rule's score). */
int dream_rules_kind_score(const char *kind);
/* The kind's canonical name for a model's word ("anti_pattern", "decisions", any case);
 * NULL when it names no kind. */
const char *dream_rules_kind(const char *k);

#endif
