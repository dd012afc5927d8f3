/*
 * clm_pages.c -- the /clm panel as text pages (CLM architecture §8): status (three
 * lines), input (what the model sees), edits (per-revision rows and side-by-side diffs),
 * overview (a bar chart of provider-reported request sizes built from session entries)
 * and settings. Pages read the glue state and the branch; they never change either.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clm_diff.h"
#include "clm_glue.h"
#include "message.h"

#define CLM_CHART_H 10
#define CLM_CHART_W 60
#define CLM_LIST_MAX 200

static cJSON *pages_branch(clm_glue *g)
{
    cJSON *b = NULL;
    char *err = NULL;
    if (plugin_get_branch(g->p, &b, &err) != AP_OK) b = NULL;
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

static void pages_changed_settings(clm_glue *g, sbuf *b)
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
        for (const char *c = g->set_problems; *c; c++) sb_putc(b, *c == '\n' ? ';' : *c);
    }
}

char *clm_page_status(clm_glue *g)
{
    sbuf b = {0};
    size_t budget = clm_budget_of(g);
    size_t est = g->est_next;
    const char *how = "estimated";
    if (!g->p->context_calls) {
        /* Resumed, nothing sent yet: estimate the rebuilt context. */
        if (g->has_rev) {
            est = 0;
            for (size_t i = 0; i < g->rev.n_messages; i++) est += g->rev_tokens[i];
            how = "estimated from the restored revision";
        } else {
            est = g->p->branch_tokens;
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

char *clm_page_input(clm_glue *g)
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

char *clm_page_edits(clm_glue *g, const char *args)
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

char *clm_page_overview(clm_glue *g)
{
    sbuf b = {0};
    cJSON *branch = pages_branch(g);
    size_t n = 0, cap = 64;
    size_t *sizes = malloc(cap * sizeof *sizes);
    int *edited = calloc(cap, sizeof *edited);
    size_t compactions = 0;
    const cJSON *e;
    if (!branch || !sizes || !edited) {
        free(sizes);
        free(edited);
        cJSON_Delete(branch);
        return lc_strdup("overview: the branch cannot be read");
    }
    sbuf points = {0};
    cJSON_ArrayForEach(e, branch) {
        const char *type = pages_str(e, "type");
        if (!type) continue;
        if (strcmp(type, "message") == 0) {
            long u = msg_usage_total(cJSON_GetObjectItemCaseSensitive(e, "message"));
            if (u <= 0) continue;
            if (n == cap) {
                cap *= 2;
                size_t *s2 = realloc(sizes, cap * sizeof *s2);
                int *e2 = realloc(edited, cap * sizeof *e2);
                if (s2) sizes = s2;
                if (e2) edited = e2;
                if (!s2 || !e2) break;
            }
            sizes[n] = (size_t)u;
            edited[n++] = 0;
        } else if (strcmp(type, "compaction") == 0) {
            compactions++;
            sb_printf(&points, "  compaction after request %zu: %.0f tokens before\n", n,
                      pages_num(e, "tokensBefore"));
        } else {
            const cJSON *d = pages_state(e);
            const char *kind = pages_str(d, "kind");
            if (kind && strcmp(kind, "accept") == 0 && n > 0) {
                edited[n - 1]++;
                sb_printf(&points, "  revision %.0f accepted after request %zu: %.0f -> %.0f "
                                   "messages' tokens\n", pages_num(d, "revision"), n,
                          pages_num(d, "tokensBefore"), pages_num(d, "tokensAfter"));
            }
        }
    }
    size_t budget = clm_budget_of(g);
    if (n == 0) {
        sb_printf(&b, "overview: no provider-reported request sizes on this branch yet "
                      "(budget %zu tokens)\n", budget);
    } else {
        size_t w = n < CLM_CHART_W ? n : CLM_CHART_W;
        size_t col[CLM_CHART_W];
        int mark[CLM_CHART_W];
        size_t top = budget;
        for (size_t c = 0; c < w; c++) {
            size_t from = c * n / w, to = (c + 1) * n / w;
            col[c] = 0;
            mark[c] = 0;
            for (size_t i = from; i < to; i++) {
                if (sizes[i] > col[c]) col[c] = sizes[i];
                mark[c] += edited[i];
            }
            if (col[c] > top) top = col[c];
        }
        size_t budget_row = (size_t)((double)budget * CLM_CHART_H / (double)top + 0.5);
        sb_printf(&b, "overview: %zu provider-reported requests on this branch (one column per "
                      "%s), peak %zu tokens, budget %zu (---)\n",
                  n, w == n ? "request" : "bucket of requests, its peak", top, budget);
        sb_puts(&b, "        ");
        for (size_t c = 0; c < w; c++) sb_putc(&b, mark[c] > 9 ? '+' : mark[c] ? (char)('0' + mark[c]) : ' ');
        sb_puts(&b, "   (digits: accepted edits after that column)\n");
        for (size_t r = CLM_CHART_H; r >= 1; r--) {
            size_t level = (size_t)((double)top * (double)r / CLM_CHART_H);
            sb_printf(&b, "%7zu ", level);
            for (size_t c = 0; c < w; c++) {
                size_t h = (size_t)((double)col[c] * CLM_CHART_H / (double)top + 0.5);
                char ch = h >= r ? '#' : r == budget_row ? '-' : ' ';
                sb_putc(&b, ch);
            }
            if (r == budget_row) sb_puts(&b, " budget");
            sb_putc(&b, '\n');
        }
        sb_puts(&b, "        ");
        for (size_t c = 0; c < w; c++) sb_putc(&b, '=');
        sb_printf(&b, "\n        first request%*snow\n", (int)(w > 16 ? w - 16 : 1), "");
    }
    if (points.len) {
        sb_printf(&b, "events (%zu compactions):\n", compactions);
        sb_append(&b, points.p, points.len);
    }
    sb_free(&points);
    free(sizes);
    free(edited);
    cJSON_Delete(branch);
    return sb_detach(&b);
}

char *clm_page_settings(clm_glue *g)
{
    sbuf b = {0};
    size_t budget = clm_budget_of(g), window = (size_t)(g->p->window > 0 ? g->p->window : 0);
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
    sb_printf(&b, "mirror: %s\n", g->path ? g->path : "(no session)");
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
