/*
 * import_codex.h -- the Codex rollout reader of `lcm import`: session_meta and
 * response_item lines (and the first format's bare header and items), one conversation in
 * file order; the CLI's events and per-turn settings are skipped, items it does not know
 * kept verbatim.
 */
#ifndef LCM_IMPORT_CODEX_H
#define LCM_IMPORT_CODEX_H

#include "import_tree.h"

/* One rollout object (root) into the import; lineno names its entry ("codex-line-N"). */
int codex_line(imp *m, const cJSON *root, size_t lineno, char **err);

#endif
