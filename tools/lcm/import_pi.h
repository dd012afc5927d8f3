/*
 * import_pi.h -- the Pi session file reader of `lcm import`: a header line, then one entry
 * a line (id, parentId, type), a message entry stored byte for byte as the line holds it.
 */
#ifndef LCM_IMPORT_PI_H
#define LCM_IMPORT_PI_H

#include "import_tree.h"

/* One Pi object (root, parsed from `line`/`len`) into the import; lineno names the entries
 * of version-1 files (no ids). */
int pi_line(imp *m, cJSON *root, const char *line, size_t len, size_t lineno, char **err);

#endif
