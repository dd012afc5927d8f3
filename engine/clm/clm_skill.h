/*
 * clm_skill.h -- the texts live context gives the model (docs/DESIGN.md §5.7, §5.9): the
 * editing protocol for the system prompt (skills/live-context.md beside the plugin, or a
 * short built-in one) and the /clm-compact prompt (a user's template or the built-in one),
 * with their {{placeholders}} filled. Owns the built-in texts.
 */
#ifndef LC_CLM_SKILL_H
#define LC_CLM_SKILL_H

#include <stddef.h>

/* skills/NAME from the plugin's folder (malloc'd), NULL when not found. The skills folder
 * ships beside the .so in its plugin folder; a .so loaded straight from the build folder
 * finds the repository's skills/ one or two levels up. */
char *clm_skill_read(const char *name);
/* `text` with every `key` replaced by `value` (malloc'd). */
char *clm_skill_fill(const char *text, const char *key, const char *value);
/* The editing protocol with {{mirror}} filled (malloc'd); *fallback = 1 when the skill file
 * was not found and the built-in text was used. */
char *clm_skill_protocol(const char *mirror_path, int *fallback);
/* The /clm-compact prompt (malloc'd): the template file `path` (NULL: the built-in one;
 * masked by the redaction when `redact`, as it goes to the model) with {{mirror}},
 * {{current}}, {{budget}} and {{instructions}} filled; typed instructions are appended
 * when the template has no {{instructions}}. NULL when the file cannot be read. */
char *clm_skill_compact_prompt(const char *path, int redact, const char *mirror, size_t current,
                               size_t budget, const char *instructions);
/* The steering document at `path`: *text (malloc'd) masked by the redaction when `redact`
 * (it goes into the system prompt), and hash the first 12 hex characters of the SHA-256 of
 * the file as the user has it. LC_INVALID (or LC_NOMEM) with *err naming the file when it
 * cannot be read. */
int clm_skill_steering(const char *path, int redact, char **text, char hash[13], char **err);
/* A one-call notice as an AgentMessage (malloc'd JSON): a custom message of `type` the
 * host does not display. */
char *clm_skill_notice(const char *type, const char *text);

#endif
