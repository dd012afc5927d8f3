/*
 * redact.h -- best-effort masking of secrets in stored text on its way out (to a model,
 * a tool result, a report). Never applied to what is stored. Two rule families:
 *  - credential shapes, matched exactly: provider keys (OpenAI, Anthropic, GitHub, AWS,
 *    Google, Slack, Stripe, ...), JWTs, PEM private keys, the token of an `Authorization:
 *    Bearer/Basic` header, the password of a `scheme://user:password@host` URL;
 *  - secret-named assignments (api_key, token, password, secret, AUTH_..., ..._KEY, ...):
 *    the value is masked when it carries a digit, or when the assignment is written
 *    env-file style: '=' glued to the name and the name in upper case, at the start of a
 *    line (or after `export `), or the value quoted.
 * The test table of positive and negative cases is tests/contract/redact_cases.json.
 */
#ifndef LC_REDACT_H
#define LC_REDACT_H

#include <stddef.h>

#define REDACT_MASK "[REDACTED]"
/* Redaction of one text is bounded (rx.h); what the bound left unscanned is masked whole
 * with this (printf: the characters masked, the bound's name): fail closed. */
#define REDACT_MS 250.0
#define REDACT_BOUND_MASK "[REDACTED: %zu characters not scanned for secrets: %s was hit]"

/* A masked copy of s[0..len) (malloc'd, NUL-terminated; NULL only on OOM). *n_masked
 * (may be NULL) counts replacements. enabled == 0 returns a plain copy (redactSecrets:
 * false). Thread-safe. */
char *redact_text(const char *s, size_t len, int enabled, size_t *n_masked);

/* The credential shapes only, no assignment rule: for text in this package's own
 * vocabulary (a config rendered as JSON, metric rows), where `"summaryTokens":1200` is a
 * setting, not a secret. Same contract as redact_text with enabled = 1. */
char *redact_keys(const char *s, size_t len, size_t *n_masked);

#endif
