/*
 * tui.h -- `lcm tui`: a read-only terminal browser (ncursesw) over an agent home's
 * stores. Tabs Sessions (1), Search (2; `/` opens the prompt from any tab), Summaries (3:
 * the selected session's DAG by depth, Enter drills to children and verbatim originals)
 * and Stats (4); Enter opens, Esc goes back one level, q quits. Owns the screen and the
 * keys; what the screens hold is tui_views.c's, read through the engine.
 */
#ifndef LC_LCM_TUI_H
#define LC_LCM_TUI_H

/* Run the browser over <home>/lcm/ until q; the exit code (1 when stdin/stdout is not a
 * terminal or the screen cannot start, with the reason on stderr). */
int tui_run(const char *home);

#endif
