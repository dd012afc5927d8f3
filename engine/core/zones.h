/*
 * zones.h -- the compaction lines of LCM: which occupancy triggers a swap (aged head
 * becomes a summary pointer) and which one triggers the single monotonic re-cut.
 *
 * Owns the threshold vocabulary (ratios, smartZone, token pair), the per-level OR-mode
 * resolution with explicit tokens winning, the safety clamp that keeps both lines
 * reachable, and the window correction learned from a provider's context-length error.
 * Pure computation: no I/O, no store, no ABI.
 */
#ifndef LC_ZONES_H
#define LC_ZONES_H

#include <stddef.h>

#define ZONES_DEFAULT_SWAP_RATIO 0.70
#define ZONES_DEFAULT_RECUT_RATIO 0.85
#define ZONES_SMART_RECUT_FACTOR 1.18
#define ZONES_CLAMP_SWAP 0.90
#define ZONES_CLAMP_RECUT 0.95
#define ZONES_DEFAULT_KEEP_RECENT 20000L

/* One layer of threshold settings (the global config or one per-model `zones` entry).
 * A field that is not set is negative (ratios) or 0 (token counts). */
typedef struct zones_cfg {
    double swap_ratio;
    double recut_ratio;
    long smart_zone;
    long swap_tokens;
    long recut_tokens;
} zones_cfg;

/* A zones_cfg with nothing set. */
zones_cfg zones_cfg_unset(void);
/* Field-wise merge: every field `over` sets replaces the one in `base`. */
zones_cfg zones_cfg_merge(zones_cfg base, zones_cfg over);

/* Where a resolved line came from. */
typedef enum zones_source { ZONES_SRC_RATIO = 0, ZONES_SRC_SMART, ZONES_SRC_TOKENS } zones_source;
const char *zones_source_name(zones_source s); /* "ratio" | "smartZone" | "tokens" */

typedef struct zones_resolved {
    long window;              /* the window the lines were resolved against */
    double swap_fraction;     /* after the clamp */
    double recut_fraction;    /* after the clamp */
    long swap_tokens;         /* swap_fraction x window, rounded down */
    long recut_tokens;        /* recut_fraction x window, rounded down */
    long keep_recent_tokens;  /* the fresh tail, never compacted (see zones_resolve) */
    zones_source swap_source;
    zones_source recut_source;
    int folded;               /* a token-pair re-cut at or below the swap was folded up */
    int clamped;              /* the clamp moved the swap or the re-cut line */
    int keep_recent_clamped;  /* keep-recent was lowered to fit under the swap line */
} zones_resolved;

/* Resolve the two lines for `window` tokens. Each level is resolved on its own (OR mode):
 * explicit tokens win, then smartZone (re-cut = smartZone x 1.18), then the ratio
 * (defaults 0.70 / 0.85). A token-pair re-cut at or below the swap is folded up to
 * swap x 1.18. Then the clamp: swap fraction <= 0.90, re-cut folded into (swap, 0.95].
 * keep_recent <= 0 means the default 20,000; it is lowered to half the swap line on a
 * window too small for it, so compaction can still make progress.
 * LC_INVALID when window <= 0. */
int zones_resolve(const zones_cfg *cfg, long keep_recent, long window, zones_resolved *out,
                  char **err);

typedef enum zones_zone {
    ZONES_BELOW_SWAP = 0,  /* the projection is the conversation */
    ZONES_SWAP,            /* at/over swap, under re-cut: swaps are pure appends */
    ZONES_RECUT            /* at/over re-cut: one monotonic re-cut */
} zones_zone;
zones_zone zones_classify(const zones_resolved *r, long occupancy_tokens);
const char *zones_zone_name(zones_zone z); /* "below-swap" | "swap" | "recut" */

/* "swap 70% / recut 85%", with " (clamped)" appended when the clamp moved a line.
 * malloc'd; NULL on OOM. */
char *zones_format_thresholds(const zones_resolved *r);

/* A window learned from a provider error: the host believed `believed`, the provider
 * said `corrected`. source is a short tag ("provider-error"). */
typedef struct zones_window_correction {
    long believed;
    long corrected;
    char source[32];
} zones_window_correction;

/* Find the real context window in a provider's error text. Recognized shapes include
 * "maximum context length is N tokens" (OpenAI-compatible), "prompt is too long: X tokens
 * > N maximum" (Anthropic), "context window of N tokens", "context length of N",
 * "maximum number of tokens allowed (N)"; digits may carry thousands separators.
 * Returns 1 and sets *window when found, 0 otherwise. */
int zones_window_from_error(const char *error_text, long *window);

/* Fill *out when the error names a window different from `believed`. Returns 1 when a
 * correction was recorded, 0 when the error names none or the same window. */
int zones_correction_from_error(long believed, const char *error_text,
                                zones_window_correction *out);

/* The window to resolve against: the correction's when it applies to this believed
 * window (a model switch that changes the host's figure invalidates it), else believed. */
long zones_effective_window(long believed, const zones_window_correction *corr);

/* Summaries are made just ahead of need, not from the first chunk on (every model call
 * costs the user money): a pass is due once the request is within lead_tokens of the next
 * line that calls for a cut -- the swap line while nothing is pinned, the re-cut line once
 * a cut is. */
int zones_summaries_due(const zones_resolved *z, long occupancy, int pinned, long lead_tokens);

/* The line a request must stay under: past it, a request waits (boundedly) for summaries
 * still being made and covers what is left with truncation. ZONES_CLAMP_RECUT of the
 * window, the highest a re-cut line can be set. */
long zones_fit_tokens(const zones_resolved *z);

#endif
