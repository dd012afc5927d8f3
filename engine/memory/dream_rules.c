/*
 * dream_rules.c -- the phrase rules of a dream without a model (see dream_rules.h): the
 * table of phrases that mark a correction, preference, anti-pattern, convention or
 * decision, the openers a sentence may carry before its phrase, and the five kinds' names
 * and weights. Pure functions over lowercased text; dream.c owns reading and recording.
 */
#include "dream_rules.h"

#include <string.h>
#include <strings.h>

/* ---- the phrase rules ----------------------------------------------------------------------
 * First match wins, in table order: a correction that says "don't" is a correction. A rule
 * whose phrase is at_start must open the sentence (after a bullet, "please", "also", "and");
 * `also`, when set, must occur in the sentence too ("use X instead of Y"). The score is how
 * strongly the words bind (an explicit "never" more than "we use"): contracts are proposed
 * from the strongest. */
#define DR_PERSON (DREAM_USER | DREAM_SUMMARY)
#define DR_ANY (DREAM_USER | DREAM_ASSISTANT | DREAM_SUMMARY)

static const dream_rule dream_rules[] = {
    {"correction", DR_PERSON, 1, "actually,", NULL, 3},
    {"correction", DR_PERSON, 1, "actually ", NULL, 3},
    {"correction", DR_PERSON, 1, "no, ", NULL, 3},
    {"correction", DR_PERSON, 1, "correction:", NULL, 3},
    {"correction", DR_PERSON, 1, "wrong", NULL, 3},
    {"correction", DR_PERSON, 0, "that's wrong", NULL, 3},
    {"correction", DR_PERSON, 0, "that is wrong", NULL, 3},
    {"correction", DR_PERSON, 0, "that's not right", NULL, 3},
    {"correction", DR_PERSON, 0, "not what i asked", NULL, 3},
    {"correction", DR_PERSON, 0, "you should have", NULL, 3},
    {"correction", DR_PERSON, 0, "you forgot", NULL, 2},
    {"decision", DR_ANY, 0, "we decided", NULL, 2},
    {"decision", DR_ANY, 0, "we've decided", NULL, 2},
    {"decision", DR_ANY, 0, "we have decided", NULL, 2},
    {"decision", DR_ANY, 0, "let's go with", NULL, 2},
    {"decision", DR_ANY, 0, "lets go with", NULL, 2},
    {"decision", DR_ANY, 0, "we'll go with", NULL, 2},
    {"decision", DR_ANY, 0, "we will go with", NULL, 2},
    {"decision", DR_ANY, 0, "we agreed", NULL, 2},
    {"decision", DR_ANY, 0, "we chose", NULL, 2},
    {"decision", DR_ANY, 1, "decision:", NULL, 2},
    {"decision", DR_ANY, 0, "decided to ", NULL, 2},
    {"anti-pattern", DR_PERSON, 1, "don't ", NULL, 3},
    {"anti-pattern", DR_PERSON, 1, "dont ", NULL, 3},
    {"anti-pattern", DR_PERSON, 1, "do not ", NULL, 3},
    {"anti-pattern", DR_PERSON, 1, "never ", NULL, 3},
    {"anti-pattern", DR_PERSON, 1, "avoid ", NULL, 2},
    {"anti-pattern", DR_PERSON, 1, "stop ", NULL, 2},
    {"anti-pattern", DR_PERSON, 0, "must not ", NULL, 3},
    {"anti-pattern", DR_PERSON, 0, "must never ", NULL, 3},
    {"anti-pattern", DR_PERSON, 0, "should never ", NULL, 2},
    {"preference", DR_PERSON, 1, "use ", " instead of ", 3},
    {"preference", DR_PERSON, 1, "always ", NULL, 3},
    {"preference", DR_PERSON, 1, "prefer ", NULL, 2},
    {"preference", DR_PERSON, 0, "i prefer ", NULL, 2},
    {"preference", DR_PERSON, 0, "we prefer ", NULL, 2},
    {"preference", DR_PERSON, 0, "i'd rather ", NULL, 2},
    {"preference", DR_PERSON, 0, "i would rather ", NULL, 2},
    {"preference", DR_PERSON, 0, " rather than ", NULL, 1},
    {"convention", DR_ANY, 0, "the convention is", NULL, 2},
    {"convention", DR_ANY, 0, "by convention", NULL, 2},
    {"convention", DR_ANY, 0, "our convention", NULL, 2},
    {"convention", DR_ANY, 0, "naming convention", NULL, 2},
    {"convention", DR_ANY, 0, "in this repo we ", NULL, 2},
    {"convention", DR_ANY, 0, "in this project we ", NULL, 2},
    {"convention", DR_ANY, 0, "we always ", NULL, 2},
    {"convention", DR_ANY, 0, "the rule is", NULL, 2},
    {"convention", DR_PERSON, 1, "we use ", NULL, 1},
};

/* What opens a sentence before its rule phrase without changing it. */
static const char *const dream_openers[] = {"- ", "* ", "> ", "please, ", "please ", "also, ", "also ", "and ", "ok, ", "okay, "};

static const char *const dream_kind_names[] = {"correction", "preference", "anti-pattern", "convention", "decision"};

int dream_rules_kind_score(const char *kind)
{
    return !strcmp(kind, "correction") || !strcmp(kind, "anti-pattern") ? 3 : 2;
}


/* ---- the phrase rules over one text ---------------------------------------------------------- */

int dream_rules_starts(const char *lower, const char *phrase) { return !strncmp(lower, phrase, strlen(phrase)); }

const char *dream_rules_skip_any(const char *lower, const char *const *phrases, size_t n)
{
    for (int again = 1; again;) {
        again = 0;
        for (size_t i = 0; i < n; i++)
            if (dream_rules_starts(lower, phrases[i])) {
                lower += strlen(phrases[i]);
                again = 1;
            }
    }
    return lower;
}

const char *dream_rules_skip_openers(const char *lower)
{
    return dream_rules_skip_any(lower, dream_openers, sizeof dream_openers / sizeof *dream_openers);
}

const dream_rule *dream_rules_match(const char *lower, unsigned role)
{
    const char *open = dream_rules_skip_openers(lower);
    for (size_t i = 0; i < sizeof dream_rules / sizeof *dream_rules; i++) {
        const dream_rule *r = &dream_rules[i];
        if (!(r->roles & role)) continue;
        if (r->at_start ? !dream_rules_starts(open, r->phrase) : !strstr(lower, r->phrase)) continue;
        if (r->also && !strstr(lower, r->also)) continue;
        return r;
    }
    return NULL;
}

const char *dream_rules_kind(const char *k)
{
    if (!k) return NULL;
    for (size_t i = 0; i < sizeof dream_kind_names / sizeof *dream_kind_names; i++)
        if (!strcasecmp(k, dream_kind_names[i])) return dream_kind_names[i];
    if (!strcasecmp(k, "anti_pattern") || !strcasecmp(k, "antipattern")) return "anti-pattern";
    if (!strcasecmp(k, "corrections")) return "correction";
    if (!strcasecmp(k, "preferences")) return "preference";
    if (!strcasecmp(k, "conventions")) return "convention";
    if (!strcasecmp(k, "decisions")) return "decision";
    return NULL;
}
