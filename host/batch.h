/*
 * batch.h -- `agent-host --tool-batch`: many tool calls through one host process. The
 * plugins and the session load once; then each line on the input is one call,
 * {"name": NAME, "args": {...}, "id": ANY}, run through agent_call_tool exactly as
 * `--tool NAME ARGS` runs it (recorded as a toolCall + toolResult), and each call gets one
 * line back, {"id", "name", "is_error", "text", "error"}. Probing a long session this way
 * pays its load once instead of once per call (the evaluation, tests/eval/eval.py).
 */
#ifndef HOST_BATCH_H
#define HOST_BATCH_H

#include <stdio.h>

#include "agent.h"

/* Called after every call (the host delivers prompts plugins queued); may be NULL. */
typedef void (*batch_after_fn)(agent *a, void *ud);

/* Read calls from `in` until EOF, answering each on `out` (flushed per line). A malformed
 * line or a failed call is an answer with is_error true, and the batch goes on; blank lines
 * are skipped. Returns LC_OK at EOF, LC_ERR when `out` cannot be written (*err says why). */
int batch_run(agent *a, FILE *in, FILE *out, batch_after_fn after, void *ud, char **err);

#endif
