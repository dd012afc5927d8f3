/*
 * carry.c -- which stored user messages are the person's words, and quoted past text made
 * inert (see carry.h). The shapes are those the real CLIs write: Claude Code's meta lines
 * begin with fixed phrases or markup, Codex opens a session with its AGENTS.md preamble.
 */
#include "carry.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util.h"

/* Openings of user messages a CLI wrote, not the person. */
static const char *const carry_not_person[] = {
    "Caveat:",                        /* Claude Code: local command output follows */
    "Stop hook feedback:",            /* a stop hook's answer, fed back as a user line */
    "Base directory for this skill:", /* an expanded skill */
    "[Image source:",                 /* Claude Code's note beside a pasted image */
    "[Image: source:",
    "[Request interrupted by user",
    "# AGENTS.md instructions for",   /* Codex's preamble */
    "<",                              /* markup: command output, notifications, context */
};

static const char carry_compacted[] = "This session is being continued from a previous conversation";

static const char *carry_skip_space(const char *s)
{
    while (*s == ' ' || *s == '\n' || *s == '\t' || *s == '\r') s++;
    return s;
}

int carry_is_command(const char *text)
{
    const char *s = carry_skip_space(text);
    return !strncmp(s, "<command-name>", 14) || !strncmp(s, "<command-message>", 17);
}

int carry_opens_template(const char *role, const char *text)
{
    if (!role || !text) return 0;
    if (!strcmp(role, "user")) return carry_is_command(text);
    return !strcmp(role, "toolResult") && !strncmp(carry_skip_space(text), "Launching skill:", 16);
}

carry_kind carry_classify_user(const char *text, int after_command, size_t *off, size_t *len)
{
    size_t o = 0, n = 0;
    carry_kind k = CARRY_OTHER;
    if (!text) goto done;
    const char *s = carry_skip_space(text);
    if (!*s) goto done;
    if (!strncmp(s, carry_compacted, sizeof carry_compacted - 1)) {
        k = CARRY_COMPACTION;
        o = (size_t)(s - text);
        n = strlen(s);
        goto done;
    }
    if (carry_is_command(s)) {
        /* The person's words are the command's arguments; a bare command asks nothing. */
        const char *a = strstr(s, "<command-args>"), *e = a ? strstr(a, "</command-args>") : NULL;
        if (!a || !e) goto done;
        a = carry_skip_space(a + 14);
        while (e > a && isspace((unsigned char)e[-1])) e--;
        if (e <= a) goto done;
        k = CARRY_REQUEST;
        o = (size_t)(a - text);
        n = (size_t)(e - a);
        goto done;
    }
    if (after_command) goto done; /* the command's expanded template */
    for (size_t i = 0; i < sizeof carry_not_person / sizeof *carry_not_person; i++)
        if (!strncmp(s, carry_not_person[i], strlen(carry_not_person[i]))) goto done;
    k = CARRY_REQUEST;
    o = (size_t)(s - text);
    n = strlen(s);
done:
    if (off) *off = o;
    if (len) *len = n;
    return k;
}

/* The tags a prompt is built of: a quoted '<' that opens one of these (or a special token
 * `<|...`) could close the frame the past text sits in or open a new turn, so it is written
 * as U+2039 (a reader sees the same words; no parser sees a tag). Any other '<' -- code
 * (`Vec<String>`, `<div>`), a comparison, a CLI's own markup (`<analysis>`) -- stays as
 * written, so a bundle line still quotes its message. */
static const char *const carry_prompt_tags[] = {
    "system", "system-reminder", "system_reminder", "user", "assistant", "human", "ai", "developer",
    "instructions", "instruction", "prompt", "tool", "tools", "tool_use", "tool_result", "tool_call",
    "function", "functions", "function_calls", "function_results", "invoke", "parameter", "context",
    "im_start", "im_end", "inst", "sys", "memory", "rules", "past-session", "bundle", NULL};

/* Whether the '<' at p opens a prompt tag (carry_prompt_tags, any name under a namespace
 * prefix such as `x:` too, or a special token `<|`). */
static int carry_is_prompt_tag(const char *p)
{
    const char *q = p + 1;
    if (*q == '|') return 1;
    if (*q == '/') q++;
    const char *name = q;
    while (isalnum((unsigned char)*q) || *q == '-' || *q == '_') q++;
    if (q == name) return 0;
    if (*q == ':') return 1;
    if (*q && *q != '>' && *q != '/' && !isspace((unsigned char)*q)) return 0;
    for (size_t i = 0; carry_prompt_tags[i]; i++)
        if (strlen(carry_prompt_tags[i]) == (size_t)(q - name) && !strncasecmp(name, carry_prompt_tags[i], (size_t)(q - name)))
            return 1;
    return 0;
}

/* `t` with the '<' of every prompt tag written as U+2039. Takes t. */
static char *carry_untag(char *t)
{
    size_t tags = 0;
    if (!t) return NULL;
    for (const char *p = t; *p; p++)
        if (*p == '<' && carry_is_prompt_tag(p)) tags++;
    if (!tags) return t;
    size_t n = strlen(t);
    char *o = malloc(n + tags * 2 + 1), *w = o;
    if (!o) {
        free(t);
        return NULL;
    }
    for (const char *p = t; *p; p++) {
        if (*p == '<' && carry_is_prompt_tag(p)) {
            memcpy(w, "\xE2\x80\xB9", 3);
            w += 3;
        } else {
            *w++ = *p;
        }
    }
    *w = '\0';
    free(t);
    return o;
}

char *carry_line(const char *s, size_t len, size_t max, int *clipped)
{
    int cut = 0;
    char *clean = lc_text_clean(s ? s : "", s ? len : 0, 1);
    char *t = clean ? lc_fold_line(clean, strlen(clean), max, &cut) : NULL;
    free(clean);
    t = carry_untag(t);
    if (clipped) *clipped = cut;
    if (!t || !cut) return t;
    char *marked = lc_asprintf("%s [...]", t);
    free(t);
    return marked;
}

char *carry_text(const char *s)
{
    return carry_untag(lc_text_clean(s ? s : "", s ? strlen(s) : 0, 0));
}
