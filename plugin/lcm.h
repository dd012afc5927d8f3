/*
 * lcm.h -- state shared by the LCM glue modules of the plugin: lcm.c (events, store,
 * recall tools) and lcm_cmd.c (the /lcm command suite). Nothing here is part of the ABI.
 */
#ifndef LC_PLUGIN_LCM_H
#define LC_PLUGIN_LCM_H

#include "plugin.h"
#include "store.h"

struct lcm_glue {
    store *st;
    int redact; /* redactSecrets; on unless configured off */
    char *open_error;
};

/* `/lcm [subcommand] [args]`: status (the default) and the rest of the suite.
 * *out_text malloc'd. */
int lcm_cmd_run(lc_plugin *p, const char *args, char **out_text, char **err);

#endif
