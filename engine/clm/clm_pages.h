/*
 * clm_pages.h -- the /clm command as text (docs/DESIGN.md §5.8, §5.9): the pages that read
 * the live-context state (clm_live.h) and the branch, and the subcommands that change it
 * (on/off, reset, config). Every result is malloc'd text for the user; NULL only on OOM.
 */
#ifndef LC_CLM_PAGES_H
#define LC_CLM_PAGES_H

#include "clm_live.h"

char *clm_pages_status(clm_live *g);
char *clm_pages_input(clm_live *g);
char *clm_pages_edits(clm_live *g, const char *args);
char *clm_pages_overview(clm_live *g, const char *args);
char *clm_pages_settings(clm_live *g);
/* `/clm [subcommand] [args]`: a page, or on/off/reset/config. */
char *clm_pages_command(clm_live *g, const char *args);

#endif
