/*
 * panel.h -- the interactive mode's panels: the /clm overview, edits (with the side-by-side
 * diff) and settings pages and the /lcm settings cockpit, steered with keys on a terminal.
 * The plugin keeps rendering: a key becomes the page arguments the plugin takes and the
 * panel redraws the text it answers (host/pi/panel.js's PanelModel is the same model).
 */
#ifndef HOST_PANEL_H
#define HOST_PANEL_H

#include "agent.h"

/* 1 when the command line `line` ("/clm overview ...") is a page a panel shows. */
int panel_wants(const char *line);

/* Show the panel for `line` on the terminal (fd 0 in, stdout out) until the user closes it,
 * in raw mode on the alternate screen; the terminal is restored on every way out. Returns
 * LC_OK, or a failure with *err saying why (the terminal cannot be put in raw mode). */
int panel_run(agent *a, const char *line, char **err);

#endif /* HOST_PANEL_H */
