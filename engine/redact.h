/*
 * redact.h -- best-effort masking of secrets in stored text on its way out (to a model,
 * a tool result, a report). Never applied to what is stored. Provider key shapes are
 * matched exactly; a secret-named assignment is masked when its value carries a digit or
 * is written env-file style (NAME=value, no space before '=').
 */
#ifndef LC_REDACT_H
#define LC_REDACT_H

#include <stddef.h>

#define REDACT_MASK "[REDACTED]"

/* A masked copy of s[0..len) (malloc'd, NUL-terminated; NULL only on OOM). *n_masked
 * (may be NULL) counts replacements. enabled == 0 returns a plain copy (redactSecrets:
 * false). Thread-safe. */
char *redact_text(const char *s, size_t len, int enabled, size_t *n_masked);

#endif
