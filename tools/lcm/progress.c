/*
 * progress.c -- the terminal progress bar of `lcm` (see progress.h).
 */
#include "progress.h"

#include <stdio.h>
#include <unistd.h>

#include "util.h"

void progress_begin(progress *p, const char *label, progress_unit unit, const char *items, long long min_total)
{
    p->label = label ? label : "";
    p->unit = unit;
    p->items = items ? items : "items";
    p->min_total = min_total;
    p->on = isatty(STDERR_FILENO);
    p->shown = 0;
    p->start_ms = lc_now_ms();
    p->drawn_ms = 0;
}

/* "1.2 MB/s" / "340 KB/s" for bytes, "1234 messages/s" for items. */
static void progress_rate(const progress *p, double v, char *buf, size_t n)
{
    if (p->unit == PROGRESS_ITEMS) snprintf(buf, n, "%.0f %s/s", v, p->items);
    else if (v >= 1024.0 * 1024.0) snprintf(buf, n, "%.1f MB/s", v / (1024.0 * 1024.0));
    else snprintf(buf, n, "%.0f KB/s", v / 1024.0);
}

void progress_update(void *ud, long long done, long long total)
{
    progress *p = ud;
    if (!p || !p->on || total <= 0 || total < p->min_total) return;
    double now = lc_now_ms();
    if (done > total) done = total;
    /* Redraws are rated, except the last one: the line always ends at 100%. */
    if (done < total && p->shown && now - p->drawn_ms < PROGRESS_REDRAW_MS) return;
    double secs = (now - p->start_ms) / 1000.0, rate = secs > 0.001 ? (double)done / secs : 0;
    int pct = (int)(done * 100 / total), fill = (int)(done * PROGRESS_WIDTH / total);
    char bar[PROGRESS_WIDTH + 1], r[64], eta[32];
    for (int i = 0; i < PROGRESS_WIDTH; i++) bar[i] = i < fill ? '#' : '.';
    bar[PROGRESS_WIDTH] = '\0';
    progress_rate(p, rate, r, sizeof r);
    if (rate > 0 && done < total) {
        long s = (long)((double)(total - done) / rate + 0.5);
        snprintf(eta, sizeof eta, "ETA %ld:%02ld", s / 60, s % 60);
    } else {
        snprintf(eta, sizeof eta, "%s", done >= total ? "done" : "ETA --:--");
    }
    /* \033[K clears what a longer earlier line left */
    fprintf(stderr, "\r[%s] %3d%% %s %s %s\033[K", bar, pct, r, eta, p->label);
    fflush(stderr);
    p->shown = 1;
    p->drawn_ms = now;
}

void progress_end(progress *p)
{
    if (p && p->shown) fputc('\n', stderr);
    if (p) p->shown = 0;
}
