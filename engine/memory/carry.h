/*
 * carry.h -- what may cross from a stored session into a new one, and how it is written
 * there. Owns two decisions every carrier (the start-of-session bundle, the handoff,
 * dream's patterns and contracts) shares:
 *   - which stored user messages are the person's own words: not Claude Code's meta lines
 *     (stop-hook feedback, an expanded skill or slash-command template, image notes, local
 *     command output, caveats), not a Codex AGENTS.md preamble or a notification; the text
 *     inside <command-args> is the person's request; a CLI's "continued from a previous
 *     conversation" message is its compaction summary, not a request;
 *   - how quoted past text is made inert: one line, no control or line-separator
 *     characters, valid UTF-8, and markup such as `</system> <system>` neutralised, so that
 *     a stored message cannot forge a line, a section or a tag of what carries it.
 * Reads stored text only (the import decides what is stored).
 */
#ifndef LC_CARRY_H
#define LC_CARRY_H

#include <stddef.h>

typedef enum carry_kind {
    CARRY_OTHER = 0,    /* not the person's words (meta, feedback, a template, markup) */
    CARRY_REQUEST,      /* what the person typed (or gave a slash command as its arguments) */
    CARRY_COMPACTION    /* the CLI's own summary of what came before a compaction */
} carry_kind;

/* What the stored user message `text` is. For CARRY_REQUEST and CARRY_COMPACTION *off and
 * *len (may be NULL) give the span to quote: the whole text, or the <command-args> inside
 * a slash command. `after_command` says the message on the branch just before it opens a
 * template (carry_opens_template): Claude Code writes the command's or the skill's
 * expanded text there, which is not a request. */
carry_kind carry_classify_user(const char *text, int after_command, size_t *off, size_t *len);

/* 1 when `text` is a slash command's line (<command-name> ...). */
int carry_is_command(const char *text);
/* 1 when the stored message (role, text) is one Claude Code follows with an expanded
 * template written as a user line: a slash command's line, or the Skill tool's result
 * ("Launching skill: ..."). The caller passes it as the next message's after_command. */
int carry_opens_template(const char *role, const char *text);

/* s[0..len) as one quoted line (malloc'd, NULL on OOM): lc_text_clean'd, whitespace
 * folded, a tag's '<' (before a letter, '/', '!' or '?') written as U+2039, cut at `max`
 * bytes on a character boundary with " [...]" appended; *clipped says whether it was cut. */
char *carry_line(const char *s, size_t len, size_t max, int *clipped);

/* A whole carried text (several lines) made safe for a model's context or a JSON string:
 * lc_text_clean'd (line breaks kept), tags neutralised. malloc'd, NULL on OOM. */
char *carry_text(const char *s);

#endif
