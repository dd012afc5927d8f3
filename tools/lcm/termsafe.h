/*
 * termsafe.h -- what of stored text may reach a terminal. Stored messages hold whatever a
 * tool printed, escape sequences included (a pane title, a screen clear, a hyperlink);
 * every place `lcm` shows stored text -- the TUI's drawing and the plain verbs' output --
 * asks this one file which characters are controls and shows them inert.
 */
#ifndef LCM_TERMSAFE_H
#define LCM_TERMSAFE_H

#include <stdint.h>

/* 1 for a code point a terminal acts on instead of drawing: C0 controls but newline and
 * tab, DEL, and the C1 controls (U+0080..U+009F: U+009B is a one-character CSI). */
int termsafe_control(uint32_t cp);
/* s with every control (termsafe_control) shown inert in caret form (ESC -> ^[, DEL -> ^?,
 * C1 -> <U+009B>) and each byte of invalid UTF-8 as '?'. malloc'd; NULL on OOM. */
char *termsafe_text(const char *s);

#endif
