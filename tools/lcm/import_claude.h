/*
 * import_claude.h -- the Claude Code transcript reader of `lcm import`: uuid / parentUuid
 * lines in whatever order the CLI wrote them (a line whose parent comes later waits for
 * it), each turned into AgentMessages (a user line's tool results each a toolResult
 * message), and the sub-agents (isSidechain lines, Task / Agent calls) each read into an
 * import of its own, "<session>--agent-<id>".
 */
#ifndef LCM_IMPORT_CLAUDE_H
#define LCM_IMPORT_CLAUDE_H

#include "import_tree.h"

/* A line's parent: parentUuid, else (a compaction's boundary) logicalParentUuid. */
const char *claude_parent(const cJSON *root);
/* One object (*rootp, taken): read now, or kept until the line it names as parent is. */
int claude_obj(imp *m, cJSON **rootp, char **err);
/* At the end of a read: the lines whose parent never came, stored as roots; *left 1 when
 * there were any. */
int claude_orphans(imp *m, int *left, char **err);

#endif
