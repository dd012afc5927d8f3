/*
 * clm_pages.c -- the /clm command (docs/DESIGN.md §5.8, §5.9): the panel as text pages --
 * status (three lines), input (what the model sees), edits (per-revision rows and
 * side-by-side diffs), overview (a bar chart of provider-reported request sizes built
 * from session entries) and settings --, which read the live-context state (clm_live.h)
 * and the branch and never change either; and the subcommands that do (on/off, reset,
 * config), through clm_live's services. /clm-compact needs the host's turn: the plugin.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clm_diff.h"
#include "clm_pages.h"
#include "message.h"

#define CLM_CHART_H 10
#define CLM_CHART_W 60
#define CLM_LIST_MAX 200

static cJSON *pages_branch(clm_live *g)
{
    char *text = NULL, *err = NULL;
    cJSON *b = g->hooks.branch(g->hooks.ud, &text, &err) == LC_OK ? cJSON_Parse(text) : NULL;
    free(text);
    free(err);
    return b;
}

static const char *pages_str(const cJSON *o, const char *k)
{
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, k));
}

static double pages_num(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

/* The data of a live-context-state entry, or NULL. */
static const cJSON *pages_state(const cJSON *e)
{
    const char *type = pages_str(e, "type"), *ct = pages_str(e, "customType");
    if (!type || !ct || strcmp(type, "custom") != 0 || strcmp(ct, CLM_STATE_TYPE) != 0) return NULL;
    return cJSON_GetObjectItemCaseSensitive(e, "data");
}

static void pages_changed_settings(clm_live *g, sbuf *b)
{
    int any = 0;
    for (int i = 0; i < CLM_N_SETTINGS; i++) {
        if (!clm_settings_changed(&g->set, i)) continue;
        sb_printf(b, "%s%s=%s", any ? ", " : "settings changed: ", clm_setting_def_of(i)->key,
                  g->set.val[i]);
        any = 1;
    }
    if (!any) sb_puts(b, "settings: defaults");
    if (g->set_problems) {
        sb_puts(b, "; warning: ");
        for (const char *c = g->set_problems; *c; c++) {
            if (*c == '\n') sb_puts(b, "; ");
            else sb_putc(b, *c);
        }
    }
}

char *clm_pages_status(clm_live *g)
{
    sbuf b = {0};
    clm_live_facts f;
    clm_live_facts_get(g, &f);
    size_t budget = clm_live_budget(g);
    size_t est = g->est_next;
    const char *how = "estimated";
    if (!f.context_calls) {
        /* Resumed, nothing sent yet: estimate the rebuilt context. */
        if (g->has_rev) {
            est = 0;
            for (size_t i = 0; i < g->rev.n_messages; i++) est += g->rev_tokens[i];
            how = "estimated from the restored revision";
        } else {
            est = f.branch_tokens;
            how = "estimated from the branch";
        }
        est = clm_calib_apply(&g->cal, est);
    }
    sb_printf(&b, "live context: %s, %s mode -- next request ~%zu tokens %s of a %zu-token "
                  "budget (%zu%%, reserve %ld); observed previous request: ",
              g->enabled ? "on" : "off (raw context)", g->set.conservative ? "conservative" : "clm",
              est, how, budget, budget ? est * 100 / budget : 0, g->set.reserve);
    if (g->observed_prev)
        sb_printf(&b, "%zu tokens%s\n", g->observed_prev,
                  g->observed_stale ? " (stale: an edit or restore changed the context since)" : "");
    else
        sb_puts(&b, "not yet known\n");
    if (g->has_rev)
        sb_printf(&b, "edits: revision %ld in force (replaces %zu raw messages with %zu); %u "
                      "accepted, %u rejected on this branch\n",
                  g->rev.revision, g->rev.anchor_count, g->rev.n_messages, g->accepted, g->rejected);
    else
        sb_printf(&b, "edits: none in force (raw context); %u accepted, %u rejected on this "
                      "branch\n", g->accepted, g->rejected);
    pages_changed_settings(g, &b);
    return sb_detach(&b);
}

char *clm_pages_input(clm_live *g)
{
    sbuf b = {0};
    if (!g->have_view) {
        sb_printf(&b, "input: no request has been built yet in this process (%s).\n",
                  g->has_rev ? "a restored revision is in force" : "raw context");
        if (g->has_rev)
            sb_printf(&b, "revision %ld: %zu messages replacing %zu raw messages\n",
                      g->rev.revision, g->rev.n_messages, g->rev.anchor_count);
        return sb_detach(&b);
    }
    const clm_view *v = &g->view;
    size_t raw_seen = 0, tok = 0;
    for (size_t i = 0; i < v->n; i++) {
        raw_seen += v->msgs[i].origin >= 0 && i >= g->view_rev_n;
        tok += v->msgs[i].tokens;
    }
    size_t raw_tok = 0;
    for (size_t i = 0; i < g->raw.n && i < g->view_raw_n; i++) raw_tok += g->raw.tokens[i];
    sb_printf(&b, "input: %zu messages (~%zu tokens) in the next request: %zu from revision %ld, "
                  "%zu raw messages since it%s\n",
              v->n, tok, g->view_rev_n, g->has_rev ? g->rev.revision : 0L, v->n - g->view_rev_n,
              g->withheld || g->capped_n ? " (some tool results withheld or capped)" : "");
    sb_printf(&b, "raw transcript: %zu messages (~%zu tokens); the model sees %zu%% of its "
                  "estimate\n",
              g->view_raw_n, raw_tok, raw_tok ? tok * 100 / raw_tok : 100);
    (void)raw_seen;
    size_t shown = v->n < CLM_LIST_MAX ? v->n : CLM_LIST_MAX;
    for (size_t i = 0; i < shown; i++) {
        const clm_vmsg *m = &v->msgs[i];
        const char *body = v->bodies.p ? v->bodies.p + m->body_off : "";
        size_t n = 0;
        while (n < m->body_len && n < 60 && body[n] != '\n') n++;
        sb_printf(&b, "%4zu  %-12s %-16s ~%-6zu %s%.*s%s\n", i + 1, m->label, m->id, m->tokens,
                  i < g->view_rev_n ? "[rev] " : "", (int)n, body, n < m->body_len ? " ..." : "");
    }
    if (shown < v->n) sb_printf(&b, "... %zu more messages not listed (limit %d)\n",
                                v->n - shown, CLM_LIST_MAX);
    return sb_detach(&b);
}

/* The messages a revision was rendered from: the previous revision's messages, then the
 * raw message entries between its anchor and this one. Used to show what an edit changed. */
static char **pages_before(const cJSON *branch, const cJSON *upto, const cJSON *prev,
                           size_t *n_out)
{
    size_t n = 0, cap = 64;
    char **v = malloc(cap * sizeof *v);
    const cJSON *e;
    size_t prev_anchor = prev ? (size_t)pages_num(prev, "anchorCount") : 0;
    if (!v) return NULL;
    if (prev) {
        const cJSON *m;
        cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(prev, "messages")) {
            if (n == cap) v = realloc(v, (cap *= 2) * sizeof *v);
            v[n++] = cJSON_PrintUnformatted(m);
        }
    }
    size_t raw_i = 0;
    cJSON_ArrayForEach(e, branch) {
        if (e == upto) break;
        const char *type = pages_str(e, "type");
        if (!type || strcmp(type, "message") != 0) continue;
        /* Pi 1.x keeps its system prompt as a message entry of role "system"; the context the
         * revisions index (and anchor) never holds it. */
        const char *role = pages_str(cJSON_GetObjectItemCaseSensitive(e, "message"), "role");
        if (role && strcmp(role, "system") == 0) continue;
        if (raw_i++ < prev_anchor) continue;
        if (n == cap) v = realloc(v, (cap *= 2) * sizeof *v);
        v[n++] = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(e, "message"));
    }
    *n_out = n;
    return v;
}

static char *pages_body(const cJSON *msg)
{
    char *j = cJSON_PrintUnformatted(msg);
    char *t = j ? clm_body_text(j, strlen(j)) : NULL;
    free(j);
    return t;
}

char *clm_pages_edits(clm_live *g, const char *args)
{
    sbuf b = {0};
    cJSON *branch = pages_branch(g);
    long want = args && *args ? strtol(args, NULL, 10) : 0;
    const cJSON *e, *prev = NULL;
    int any = 0;
    if (!branch) return lc_strdup("edits: the branch cannot be read");
    cJSON_ArrayForEach(e, branch) {
        const char *type = pages_str(e, "type");
        if (type && strcmp(type, "compaction") == 0) {
            sb_puts(&b, "-- host compaction: the transcript is the new baseline --\n");
            prev = NULL;
            continue;
        }
        const cJSON *d = pages_state(e);
        const char *kind = pages_str(d, "kind");
        if (!kind) continue;
        long rev = (long)pages_num(d, "revision");
        any = 1;
        if (strcmp(kind, "reject") == 0) {
            sb_printf(&b, "rejected (revision %ld in force): %s\n", rev, pages_str(d, "reason") ?
                      pages_str(d, "reason") : "no reason recorded");
            continue;
        }
        if (strcmp(kind, "toggle") == 0) {
            sb_printf(&b, "switched %s\n", cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(d, "enabled")) ? "on" : "off");
            continue;
        }
        if (strcmp(kind, "reset") == 0) {
            sb_printf(&b, "revision %ld: reset to the raw transcript\n", rev);
            prev = NULL;
            continue;
        }
        if (strcmp(kind, "accept") != 0) continue;
        const cJSON *trace = cJSON_GetObjectItemCaseSensitive(d, "trace"), *t;
        size_t c[4] = {0};
        static const char *const kinds[4] = {"kept", "edited", "removed", "inserted"};
        cJSON_ArrayForEach(t, trace) {
            const char *k = pages_str(t, "kind");
            for (int i = 0; k && i < 4; i++) c[i] += strcmp(k, kinds[i]) == 0;
        }
        sb_printf(&b, "revision %ld accepted%s: kept %zu, edited %zu, removed %zu, inserted %zu; "
                      "~%.0f -> ~%.0f tokens; replaces %.0f raw messages\n",
                  rev, cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(d, "rewrite")) ? " (rewrite)" : "",
                  c[0], c[1], c[2], c[3], pages_num(d, "tokensBefore"), pages_num(d, "tokensAfter"),
                  pages_num(d, "anchorCount"));
        if (want == rev) {
            size_t nb = 0;
            char **before = pages_before(branch, e, prev, &nb);
            const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(d, "messages");
            cJSON_ArrayForEach(t, trace) {
                const char *k = pages_str(t, "kind");
                long from = (long)pages_num(t, "from"), to = (long)pages_num(t, "to");
                if (!k || strcmp(k, "kept") == 0) continue;
                sb_printf(&b, "  %-8s %-10s %s%s%s\n", k, pages_str(t, "role") ? pages_str(t, "role") : "",
                          pages_str(t, "id") ? pages_str(t, "id") : "",
                          pages_str(t, "why") ? " -- " : "", pages_str(t, "why") ? pages_str(t, "why") : "");
                char *old = from >= 0 && before && (size_t)from < nb && before[from]
                                ? clm_body_text(before[from], strlen(before[from])) : lc_strdup("");
                char *neu = to >= 0 ? pages_body(cJSON_GetArrayItem(msgs, (int)to)) : lc_strdup("");
                int small = strcmp(k, "edited") != 0;
                clm_diff_opts o = {.width = 120, .max_rows = small ? 60 : 400, .context = 3,
                                   .max_line = 2000};
                char *diff = clm_diff_side_by_side(old ? old : "", neu ? neu : "", &o);
                if (diff) {
                    for (char *line = diff, *nl; *line; line = nl + 1) {
                        nl = strchr(line, '\n');
                        if (!nl) nl = line + strlen(line) - 1;
                        sb_printf(&b, "    %.*s\n", (int)(nl - line), line);
                    }
                }
                free(diff);
                free(old);
                free(neu);
            }
            for (size_t i = 0; before && i < nb; i++) free(before[i]);
            free(before);
        }
        prev = d;
    }
    if (!any) sb_puts(&b, "edits: none on this branch\n");
    else if (!want) sb_puts(&b, "(/clm edits N shows revision N message by message, with diffs)\n");
    cJSON_Delete(branch);
    return sb_detach(&b);
}

/* One provider-reported request on the branch: its size, the user turn it belongs to, and
 * how many accepted edits followed it. */
typedef struct pages_req {
    size_t size, turn;
    int edits;
} pages_req;

/* An event under the chart: a compaction or an accepted edit, after request `at`. */
typedef struct pages_event {
    size_t at;
    char *text;
} pages_event;

typedef enum { PAGES_FIT, PAGES_REQUESTS, PAGES_TURNS } pages_zoom;

static const char *const pages_zoom_names[] = {"fit", "requests", "turns"};

/* The branch's requests and events, from session entries alone (docs/DESIGN.md §5.9: the timeline is
 * derived, not stored, so it works on resume). */
static int pages_timeline(clm_live *g, pages_req **reqs, size_t *n_reqs, pages_event **evs,
                          size_t *n_evs, size_t *n_turns)
{
    cJSON *branch = pages_branch(g);
    pages_req *r = NULL;
    pages_event *ev = NULL;
    size_t n = 0, cap = 0, ne = 0, ecap = 0, turns = 0;
    int rc = LC_NOMEM;
    const cJSON *e;
    if (!branch) return LC_ERR;
    cJSON_ArrayForEach(e, branch) {
        const char *type = pages_str(e, "type");
        char *text = NULL;
        if (!type) continue;
        if (strcmp(type, "message") == 0) {
            const cJSON *m = cJSON_GetObjectItemCaseSensitive(e, "message");
            const char *role = pages_str(m, "role");
            if (role && strcmp(role, "user") == 0) turns++;
            long u = msg_usage_total(m);
            if (u <= 0) continue;
            if (n == cap) {
                pages_req *r2 = realloc(r, (cap = cap ? cap * 2 : 64) * sizeof *r2);
                if (!r2) goto done;
                r = r2;
            }
            r[n++] = (pages_req){(size_t)u, turns ? turns - 1 : 0, 0};
        } else if (strcmp(type, "compaction") == 0) {
            text = lc_asprintf("compaction after request %zu: %.0f tokens before", n,
                               pages_num(e, "tokensBefore"));
        } else {
            const cJSON *d = pages_state(e);
            const char *kind = pages_str(d, "kind");
            if (kind && strcmp(kind, "accept") == 0 && n > 0) {
                r[n - 1].edits++;
                text = lc_asprintf("revision %.0f accepted after request %zu: %.0f -> %.0f "
                                   "messages' tokens", pages_num(d, "revision"), n,
                                   pages_num(d, "tokensBefore"), pages_num(d, "tokensAfter"));
            }
        }
        if (!text) continue;
        if (ne == ecap) {
            pages_event *e2 = realloc(ev, (ecap = ecap ? ecap * 2 : 16) * sizeof *e2);
            if (!e2) {
                free(text);
                goto done;
            }
            ev = e2;
        }
        ev[ne++] = (pages_event){n, text};
    }
    rc = LC_OK;
done:
    cJSON_Delete(branch);
    if (rc != LC_OK) {
        for (size_t i = 0; i < ne; i++) free(ev[i].text);
        free(ev);
        free(r);
        ev = NULL, r = NULL, n = ne = 0;
    }
    *reqs = r, *n_reqs = n, *evs = ev, *n_evs = ne, *n_turns = turns;
    return rc;
}

/* Draws columns [0, w): each column is the peak of the requests mapped to it, a digit above
 * it counts the accepted edits in it, '^' under it marks the selected column. */
static void pages_chart(sbuf *b, const size_t *col, const int *mark, size_t w, size_t sel,
                        size_t budget)
{
    size_t top = budget;
    for (size_t c = 0; c < w; c++)
        if (col[c] > top) top = col[c];
    size_t budget_row = (size_t)((double)budget * CLM_CHART_H / (double)top + 0.5);
    sb_puts(b, "        ");
    for (size_t c = 0; c < w; c++) sb_putc(b, mark[c] > 9 ? '+' : mark[c] ? (char)('0' + mark[c]) : ' ');
    sb_puts(b, "   (digits: accepted edits in that column)\n");
    for (size_t r = CLM_CHART_H; r >= 1; r--) {
        sb_printf(b, "%7zu ", (size_t)((double)top * (double)r / CLM_CHART_H));
        for (size_t c = 0; c < w; c++) {
            size_t h = (size_t)((double)col[c] * CLM_CHART_H / (double)top + 0.5);
            sb_putc(b, h >= r ? '#' : r == budget_row ? '-' : ' ');
        }
        if (r == budget_row) sb_puts(b, " budget");
        sb_putc(b, '\n');
    }
    sb_puts(b, "        ");
    for (size_t c = 0; c < w; c++) sb_putc(b, '=');
    sb_puts(b, "\n        ");
    for (size_t c = 0; c < w; c++) sb_putc(b, c == sel ? '^' : ' ');
    sb_putc(b, '\n');
}

/* `/clm overview [fit|requests|turns] [at K|now]`: the panel's zoom (`z`) and its
 * selection (`← →` over the events) as arguments, since a text page cannot be steered. */
char *clm_pages_overview(clm_live *g, const char *args)
{
    sbuf b = {0};
    pages_req *req = NULL;
    pages_event *ev = NULL;
    size_t n = 0, ne = 0, turns = 0;
    pages_zoom zoom = PAGES_FIT;
    long at = 0; /* 1-based event index; 0 = now */
    char word[32];
    const char *a = args ? args : "";
    while (*a) {
        size_t wl = strcspn(a, " \t");
        if (wl == 0) {
            a++;
            continue;
        }
        snprintf(word, sizeof word, "%.*s", (int)(wl < sizeof word ? wl : sizeof word - 1), a);
        a += wl;
        int known = 0;
        for (int z = 0; z < 3; z++)
            if (strcmp(word, pages_zoom_names[z]) == 0) zoom = (pages_zoom)z, known = 1;
        if (strcmp(word, "now") == 0) at = 0, known = 1;
        if (strcmp(word, "at") == 0) {
            char *endp;
            while (*a == ' ' || *a == '\t') a++;
            at = strtol(a, &endp, 10);
            known = endp != a && at >= 1;
            a = endp;
        }
        if (!known)
            return lc_asprintf("overview: unknown argument '%s' (usage: /clm overview "
                               "[fit|requests|turns] [at K|now], K numbers the events listed "
                               "under the chart)", word);
    }
    if (pages_timeline(g, &req, &n, &ev, &ne, &turns) != LC_OK)
        return lc_strdup("overview: the branch cannot be read");
    size_t budget = clm_live_budget(g);
    if (n == 0) {
        sb_printf(&b, "overview: no provider-reported request sizes on this branch yet "
                      "(budget %zu tokens)\n", budget);
        goto events;
    }
    if (at > (long)ne) {
        sb_printf(&b, "overview: there is no event %ld (this branch has %zu); showing now\n", at, ne);
        at = 0;
    }
    /* The selected request: the one an event followed, or the latest. */
    size_t sel = at ? (ev[at - 1].at ? ev[at - 1].at - 1 : 0) : n - 1;
    /* Groups: requests, or user turns; the chart shows groups [g0, g1) in w columns. */
    size_t ngroups = zoom == PAGES_TURNS ? req[n - 1].turn + 1 : n;
    size_t g0 = 0, g1 = ngroups;
    if (zoom == PAGES_REQUESTS && n > CLM_CHART_W) {
        size_t half = CLM_CHART_W / 2;
        g0 = sel > half ? sel - half : 0;
        if (g0 + CLM_CHART_W > n) g0 = n - CLM_CHART_W;
        g1 = g0 + CLM_CHART_W;
    }
    size_t span = g1 - g0, w = span < CLM_CHART_W ? span : CLM_CHART_W;
    size_t col[CLM_CHART_W] = {0};
    int mark[CLM_CHART_W] = {0};
    size_t peak = 0;
    for (size_t i = 0; i < n; i++) {
        size_t grp = zoom == PAGES_TURNS ? req[i].turn : i;
        if (grp < g0 || grp >= g1) continue;
        size_t c = (grp - g0) * w / span;
        if (req[i].size > col[c]) col[c] = req[i].size;
        if (req[i].size > peak) peak = req[i].size;
        mark[c] += req[i].edits;
    }
    size_t sel_grp = zoom == PAGES_TURNS ? req[sel].turn : sel;
    size_t sel_col = sel_grp >= g0 && sel_grp < g1 ? (sel_grp - g0) * w / span : (size_t)-1;
    sb_printf(&b, "overview (%s): %zu provider-reported requests on this branch in %zu user "
                  "turns, peak %zu tokens shown, budget %zu (---)\n",
              pages_zoom_names[zoom], n, turns, peak, budget);
    if (zoom == PAGES_REQUESTS && n <= CLM_CHART_W)
        sb_puts(&b, "one column per request already fits: same as fit\n");
    if (zoom == PAGES_TURNS)
        sb_printf(&b, "one column per %s, its peak request\n",
                  w == span ? "user turn" : "group of user turns");
    else if (w == span)
        sb_printf(&b, "one column per request: requests %zu-%zu of %zu\n", g0 + 1, g1, n);
    else
        sb_printf(&b, "one column per bucket of ~%zu requests, its peak\n", (span + w - 1) / w);
    pages_chart(&b, col, mark, w, sel_col, budget);
    sb_printf(&b, "        ^ %s: request %zu of %zu, user turn %zu\n", at ? "selected event" : "now",
              sel + 1, n, req[sel].turn + 1);
events:
    if (ne) {
        sb_printf(&b, "events (%zu; /clm overview at K selects one):\n", ne);
        for (size_t i = 0; i < ne; i++)
            sb_printf(&b, "  %c %zu. %s\n", (long)i + 1 == at ? '>' : ' ', i + 1, ev[i].text);
    }
    for (size_t i = 0; i < ne; i++) free(ev[i].text);
    free(ev);
    free(req);
    return sb_detach(&b);
}

char *clm_pages_settings(clm_live *g)
{
    sbuf b = {0};
    clm_live_facts f;
    clm_live_facts_get(g, &f);
    size_t budget = clm_live_budget(g), window = (size_t)(f.window > 0 ? f.window : 0);
    sb_printf(&b, "sizes: next request ~%zu tokens (calibrated x%.2f); last provider count %s%zu%s\n",
              g->est_next, g->cal.factor, "", g->observed_prev,
              g->observed_prev ? (g->observed_stale ? " (stale)" : "") : " (not yet known)");
    sb_printf(&b, "guard limit: %zu tokens (min(budget - reserve, window - 4096 - reserve)); "
                  "withheld in the last request: %zu; capped: %zu; max_tokens raised %lu time(s)\n",
              clm_guard_limit(budget, (size_t)g->set.reserve, window ? window : budget), g->withheld,
              g->capped_n, g->repairs);
    if (g->steering_text)
        sb_printf(&b, "steering: %s (sha256 %s)\n", g->set.steering, g->steering_hash);
    else
        sb_puts(&b, "steering: none\n");
    sb_printf(&b, "mirror: %s\n", g->folder.path ? g->folder.path : "(no session)");
    if (g->set_problems) sb_printf(&b, "warning: %s\n", g->set_problems);
    sb_puts(&b, "settings (* = changed from the default; /clm config KEY VALUE, /clm config reset):\n");
    for (int i = 0; i < CLM_N_SETTINGS; i++) {
        const clm_setting_def *d = clm_setting_def_of(i);
        sb_printf(&b, " %c %-15s %-12s (default %s, %s)\n     %s\n",
                  clm_settings_changed(&g->set, i) ? '*' : ' ', d->key, g->set.val[i],
                  g->set.dflt[i], d->env, d->description);
    }
    return sb_detach(&b);
}

/* ---- /clm config ---------------------------------------------------------------------------- */

static char *pages_config(clm_live *g, const char *args)
{
    clm_settings next;
    char *err = NULL, *out = NULL;
    while (*args == ' ') args++;
    if (!*args) return clm_pages_settings(g);
    if (clm_settings_clone(&g->set, &next, &err) != LC_OK) goto fail;
    if (strcmp(args, "reset") == 0) {
        if (clm_settings_reset(&next, &err) != LC_OK || clm_live_settings_commit(g, &next, &err) != LC_OK)
            goto fail;
        clm_settings_free(&next);
        return lc_strdup("live context settings: back to the defaults (saved)");
    }
    size_t klen = strcspn(args, " \t");
    char *key = lc_strndup(args, klen);
    const char *value = args + klen;
    while (*value == ' ' || *value == '\t') value++;
    if (!key) goto fail;
    if (!*value) {
        int id = clm_setting_find(key);
        out = id >= 0 ? lc_asprintf("%s = %s (default %s)\n%s", clm_setting_def_of(id)->key,
                                    g->set.val[id], g->set.dflt[id],
                                    clm_setting_def_of(id)->description)
                      : lc_asprintf("/clm config: unknown setting '%s'", key);
        free(key);
        clm_settings_free(&next);
        return out;
    }
    if (clm_settings_set(&next, key, value, &err) != LC_OK ||
        clm_live_settings_commit(g, &next, &err) != LC_OK) {
        free(key);
        goto fail;
    }
    int id = clm_setting_find(key);
    if (clm_setting_is_path(id)) { /* typed by the user in this run: may come back from the entry */
        free(g->typed_path[id]);
        g->typed_path[id] = lc_strdup(g->set.val[id]);
    }
    out = lc_asprintf("%s = %s (saved)", clm_setting_def_of(id)->key, g->set.val[id]);
    free(key);
    clm_settings_free(&next);
    return out;
fail:
    clm_settings_free(&next);
    out = lc_asprintf("/clm config: %s; the settings in force are unchanged", err ? err : "failed");
    free(err);
    return out;
}

/* ---- commands ------------------------------------------------------------------------ */

static char *pages_toggle(clm_live *g, int on)
{
    if (g->enabled == on) return lc_asprintf("live context is already %s", on ? "on" : "off");
    char *slim = clm_payload_toggle(on), *err = NULL, *out;
    if (!slim || clm_live_append(g, CLM_STATE_TYPE, slim, CLM_MARK_TOGGLE, -1, on, NULL, &err) != LC_OK) {
        out = lc_asprintf("/clm %s: not saved (%s); nothing changed", on ? "on" : "off",
                          err ? err : "out of memory");
    } else {
        g->enabled = on;
        clm_live_mark_stale(g, on ? "live context switched on" : "live context switched off");
        if (!on && clm_folder_held(&g->folder)) clm_folder_clear(g->folder.dir);
        g->folder.current = 0;
        out = lc_asprintf("live context: %s%s", on ? "on" : "off (raw context; revisions kept)",
                          on && g->has_rev ? " (the revision in force applies again)" : "");
    }
    free(slim);
    free(err);
    return out;
}

static char *pages_reset(clm_live *g)
{
    char *err = NULL, *out;
    if (clm_live_to_raw(g, "reset by the user", "the user reset the live context", &err) != LC_OK) {
        out = lc_asprintf("/clm reset: not saved (%s); nothing changed", err ? err : "out of memory");
    } else {
        clm_live_notice(g, "[CLM] The user reset the live context: it is the raw transcript again.");
        out = lc_asprintf("live context reset to the raw transcript (revision %ld recorded)",
                          g->last_revision);
    }
    free(err);
    return out;
}

char *clm_pages_command(clm_live *g, const char *args)
{
    char *out_text = NULL;
    while (*args == ' ') args++;
    size_t wl = strcspn(args, " \t");
    const char *rest = args + wl;
    while (*rest == ' ' || *rest == '\t') rest++;
#define IS(w) (wl == strlen(w) && strncmp(args, w, wl) == 0)
    if (wl == 0 || IS("status")) out_text = clm_pages_status(g);
    else if (IS("on")) out_text = pages_toggle(g, 1);
    else if (IS("off")) out_text = pages_toggle(g, 0);
    else if (IS("reset")) out_text = pages_reset(g);
    else if (IS("input")) out_text = clm_pages_input(g);
    else if (IS("edits")) out_text = clm_pages_edits(g, rest);
    else if (IS("overview")) out_text = clm_pages_overview(g, rest);
    else if (IS("settings")) out_text = clm_pages_settings(g);
    else if (IS("config")) out_text = pages_config(g, rest);
    else
        out_text = lc_asprintf("/clm: unknown subcommand '%.*s' (try: status, input, edits, "
                                "overview, settings, config KEY VALUE, config reset, on, off, "
                                "reset)", (int)wl, args);
#undef IS
    return out_text;
}

