/*
 * progress.h -- the `lcm` command's progress bar on stderr: a bar, percent, rate and ETA,
 * redrawn in place at most every PROGRESS_REDRAW_MS, shown only when stderr is a
 * terminal (a pipe or a file gets nothing). Owns the line's format; the work reports
 * done / total through progress_update, which fits import's and admin.h's callbacks.
 */
#ifndef LC_LCM_PROGRESS_H
#define LC_LCM_PROGRESS_H

#define PROGRESS_WIDTH 30
#define PROGRESS_REDRAW_MS 100

typedef enum progress_unit { PROGRESS_BYTES = 0, PROGRESS_ITEMS } progress_unit;

typedef struct progress {
    const char *label;     /* printed after the figures (a file, a session) */
    const char *items;     /* PROGRESS_ITEMS: what is counted ("messages", "stores") */
    progress_unit unit;
    long long min_total;   /* totals below this draw nothing (too quick to need a bar) */
    int on;                /* stderr is a terminal */
    int shown;             /* a line was drawn: progress_end ends it */
    double start_ms, drawn_ms;
} progress;

/* Start a bar (nothing is drawn yet). */
void progress_begin(progress *p, const char *label, progress_unit unit, const char *items, long long min_total);
/* done of total so far; ud is a progress*. */
void progress_update(void *ud, long long done, long long total);
/* End the line if one was drawn. */
void progress_end(progress *p);

#endif
