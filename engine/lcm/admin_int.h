/*
 * admin_int.h -- private to admin's own files (admin.c, admin_migrate.c): the pieces every
 * command body builds its answer with. No other file includes it (engine/lcm/README.md).
 */
#ifndef LC_ADMIN_INT_H
#define LC_ADMIN_INT_H

#include "admin.h"
#include "util.h"

/* done of total through env->progress, when the caller gave one. */
void admin_progress(const admin_env *env, long long done, long long total);
/* A result from a finished sbuf (NULL text on OOM: the caller reports it). */
int admin_finish(sbuf *b, cJSON *json, int status, admin_result *out, char **err);
/* A one-line result: failures of the work are texts to show, not errors. */
int admin_line(admin_result *out, cJSON *json, int status, char *text, char **err);
/* The stores of a plan, one line each on b, and as a JSON array (the caller owns it). */
cJSON *admin_list_stores(sbuf *b, const catalog_list *l);
/* A plan's answer before it is applied: its stores, and `count_key` (what --apply does) at 0. */
void admin_plan_json(cJSON *j, const catalog_list *plan, const char *count_key);

#endif
