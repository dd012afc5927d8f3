/*
 * admin_migrate.h -- `migrate` for /lcm and `lcm`: the home's stores below this build's
 * schema upgraded in place, or (--to) copied into another store backend or another agent
 * home, with the text a user reads and the --json object (admin_result, as admin.h's).
 */
#ifndef LC_ADMIN_MIGRATE_H
#define LC_ADMIN_MIGRATE_H

#include "admin.h"

/* Older-schema stores (dry run) or upgraded in place (apply). */
int admin_migrate(const admin_env *env, int apply, admin_result *out, char **err);
/* `migrate --to URL`: copy every store file of this home (the embedded SQLite stores under
 * home/lcm/) into the store `url` names: file:///PATH, the agent home at PATH (its embedded
 * store), or a URL the configured backend takes (the caller has pointed LCM_STORE_URL at it,
 * so store_backend_default() is that backend). A dry run counts the rows each store would
 * copy; apply loads them (store_dump -> store_row_load, one transaction a store; rows the
 * target holds already are kept, so a second run copies 0) and counts the rows copied.
 * Stores below this build's schema are named and left (`migrate --apply` first). */
int admin_migrate_to(const admin_env *env, const char *url, int apply, admin_result *out, char **err);

#endif
