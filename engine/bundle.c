/*
 * bundle.c -- the start-of-session reference bundle: the previous session of a folder,
 * read from its store, packed into a token budget with the recovery line first.
 *
 * The store is read through its connection with three small queries (the newest message's
 * time, the message count, the newest BUNDLE_SCAN messages by ordinal); nothing is
 * written. Lines are chosen by value (the last request, the last conclusion, then older
 * requests and the newest steps) and printed in section order, so a small budget keeps the
 * most useful lines rather than the first ones.
 */
#include "bundle.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "catalog.h"
#include "config.h"
#include "dream.h"
#include "message.h"
#include "store.h"
#include "summarize.h"
#include "util.h"

#define BUNDLE_SCAN 400       /* newest messages looked at */
#define BUNDLE_REQUESTS 3
#define BUNDLE_STEPS 8

static const char bundle_recovery[] =
    "[lossless-context] Every message of past sessions is stored verbatim and searchable: lcm_grep "
    "finds text (scope \"sessions\" = this folder, \"all_sessions\" = everywhere), lcm_expand reads "
    "a message whole (session + entry_id) or a summary's originals (summary_id), lcm_describe "
    "explains a summary (#N) or a file id, lcm_sessions lists the sessions. Ids below are entry "
    "ids for lcm_expand.\n";

typedef struct bundle_pick {
    char *id;          /* store session id */
    char *path;        /* its file */
    long long last;    /* newest message time (ms), else the store's creation */
    long long count;
    char *date;
} bundle_pick;

/* Whether a store session id is the session starting now (the hook gives the agent's own
 * id; the import prefixes it, e.g. claude-<id>, codex-<id>). */
static int bundle_is_self(const char *id, const char *self)
{
    if (!self || !*self || !id) return 0;
    if (strcmp(id, self) == 0) return 1;
    const char *dash = strchr(id, '-');
    return dash && strcmp(dash + 1, self) == 0 && (!strncmp(id, "claude-", 7) || !strncmp(id, "codex-", 6));
}

/* The newest other session of `cwd` under <home>/lcm/, by its last stored message. */
static int bundle_find(const char *home, const char *cwd, const char *self, bundle_pick *out, char **err)
{
    catalog_list l = {0};
    catalog_filter f = {.cwd = cwd, .counts = 1};
    int rc;
    memset(out, 0, sizeof *out);
    if ((rc = catalog_list_stores(home, &f, &l, err)) != LC_OK) return rc;
    for (size_t i = 0; i < l.n; i++) {
        const catalog_entry *e = &l.v[i];
        store *s = NULL;
        if (e->damaged || !STORE_SCHEMA_ANSWERS(e->schema_version) || e->messages <= 0 ||
            bundle_is_self(e->session_id, self) ||
            store_open_readonly(e->path, &s, NULL, NULL) != LC_OK)
            continue;
        long long last = store_last_activity_ms(s);
        store_close(s);
        if (out->id && last <= out->last) continue;
        char *id = lc_strdup(e->session_id), *path = lc_strdup(e->path);
        if (!id || !path) {
            free(id);
            free(path);
            rc = lc_errf(err, LC_NOMEM, "out of memory");
            break;
        }
        free(out->id);
        free(out->path);
        *out = (bundle_pick){id, path, last, e->messages, NULL};
    }
    catalog_list_free(&l);
    if (rc == LC_OK && out->id) out->date = lc_utc_format(out->last, "%Y-%m-%d %H:%M UTC", "date unknown");
    return rc;
}

int bundle_latest_session(const char *home, const char *cwd, const char *exclude_session, char **session_id,
                          char **err)
{
    bundle_pick p;
    int rc = bundle_find(home, cwd, exclude_session, &p, err);
    *session_id = rc == LC_OK ? p.id : NULL;
    if (rc != LC_OK) free(p.id);
    free(p.path);
    free(p.date);
    return rc;
}

/* One line of text: whitespace runs folded to one space, clipped at a UTF-8 boundary. */
static char *bundle_clip(const char *s, size_t len, int *clipped)
{
    char *t = lc_fold_line(s, len, BUNDLE_LINE_CHARS, clipped);
    if (!t || !*clipped) return t;
    char *marked = lc_asprintf("%s [...]", t);
    free(t);
    return marked;
}

typedef struct bundle_line {
    int section;       /* 0 requests, 1 done, 2 conclusion */
    int64_t ordinal;
    char *text;        /* "- [id] ..." */
    int rank;          /* lower = kept first */
    int chosen;
} bundle_line;

static int bundle_by_rank(const void *a, const void *b)
{
    const bundle_line *x = a, *y = b;
    return x->rank - y->rank;
}

static int bundle_by_order(const void *a, const void *b)
{
    const bundle_line *x = a, *y = b;
    if (x->section != y->section) return x->section - y->section;
    return x->ordinal < y->ordinal ? -1 : x->ordinal > y->ordinal;
}

static int bundle_add(bundle_line *v, size_t *n, int section, int64_t ordinal, const char *id, const char *text,
                      size_t len, int rank, int *clipped_any)
{
    int clipped = 0;
    char *t = bundle_clip(text, len, &clipped);
    char *line = t ? lc_asprintf("- [%s] %s\n", id, t) : NULL;
    free(t);
    if (!line) return LC_NOMEM;
    *clipped_any |= clipped;
    v[*n] = (bundle_line){section, ordinal, line, rank, 0};
    (*n)++;
    return LC_OK;
}

/* What the newest-first walk has picked so far. */
typedef struct bundle_scan {
    bundle_line v[BUNDLE_REQUESTS + BUNDLE_STEPS + 1];
    size_t n, seen;
    int nreq, nstep, have_end, clipped;
} bundle_scan;

/* The tool calls of an assistant message are the steps: "Bash {...}", name then arguments. */
static int bundle_steps(bundle_scan *sc, const char *calls, int64_t ord, const char *id)
{
    for (const char *c = calls; c && sc->nstep < BUNDLE_STEPS; c = strstr(c + 1, "\n[toolCall ")) {
        const char *start = *c == '\n' ? c + 1 : c, *end = strchr(start, '\n');
        size_t len = end ? (size_t)(end - start) : strlen(start);
        start += 10; /* "[toolCall " */
        len -= 10;
        const char *close = memchr(start, ']', len);
        sbuf t = {0};
        if (close) {
            sb_append(&t, start, (size_t)(close - start));
            sb_append(&t, close + 1, len - (size_t)(close + 1 - start));
        } else {
            sb_append(&t, start, len);
        }
        char *tt = sb_detach(&t);
        int rc = tt ? bundle_add(sc->v, &sc->n, 1, ord, id, tt, strlen(tt), 10 + sc->nstep, &sc->clipped)
                    : LC_NOMEM;
        free(tt);
        if (rc != LC_OK) return rc;
        sc->nstep++;
    }
    return LC_OK;
}

/* Newest first: the first assistant prose is the conclusion, user texts are requests,
 * tool calls are the steps. */
static int bundle_visit(void *ud, const store_dag_msg *m, char **err)
{
    bundle_scan *sc = ud;
    int rc = LC_OK;
    if (sc->seen++ >= BUNDLE_SCAN ||
        (sc->nreq >= BUNDLE_REQUESTS && sc->nstep >= BUNDLE_STEPS && sc->have_end))
        return STORE_VISIT_STOP;
    if (!m->entry_id || !m->role || !m->text) return LC_OK;
    const char *text = m->text;
    if (strcmp(m->role, "user") == 0 && sc->nreq < BUNDLE_REQUESTS && msg_typed_by_person(text)) {
        rc = bundle_add(sc->v, &sc->n, 0, m->ordinal, m->entry_id, text, strlen(text),
                        sc->nreq == 0 ? 0 : 2 + sc->nreq, &sc->clipped);
        sc->nreq++;
    } else if (strcmp(m->role, "assistant") == 0) {
        const char *calls = strstr(text, "[toolCall ");
        size_t prose = calls ? (size_t)(calls - text) : strlen(text);
        while (prose > 0 && (text[prose - 1] == '\n' || text[prose - 1] == ' ')) prose--;
        if (!sc->have_end && prose > 0) {
            rc = bundle_add(sc->v, &sc->n, 2, m->ordinal, m->entry_id, text, prose, 1, &sc->clipped);
            sc->have_end = 1;
        }
        if (rc == LC_OK) rc = bundle_steps(sc, calls, m->ordinal, m->entry_id);
    }
    return rc == LC_OK ? LC_OK : lc_errf(err, rc, "out of memory");
}

/* The task state of one session, newest first, packed into `budget` tokens: its last
 * requests, its newest steps, its last conclusion, each line with its entry id, and a
 * plain "Partial:" line when not everything made it. */
static int bundle_state(store *s, const char *session_id, long long count, long budget, sbuf *b,
                        char **err)
{
    bundle_scan sc;
    size_t shown = 0;
    long used = 40; /* the partial statement */
    int rc;
    memset(&sc, 0, sizeof sc);
    if ((rc = store_walk_newest(s, bundle_visit, &sc, NULL, err)) != LC_OK) goto done;
    qsort(sc.v, sc.n, sizeof *sc.v, bundle_by_rank);
    for (size_t i = 0; i < sc.n; i++) {
        long t = (long)summ_estimate_tokens(sc.v[i].text);
        if (used + t > budget) continue;
        used += t;
        sc.v[i].chosen = 1;
        shown++;
    }
    qsort(sc.v, sc.n, sizeof *sc.v, bundle_by_order);
    static const char *const titles[] = {"Last requests:\n", "Done (newest steps):\n", "Last conclusion:\n"};
    for (int sec = 0; sec < 3; sec++) {
        int any = 0;
        for (size_t i = 0; i < sc.n; i++) {
            if (sc.v[i].section != sec || !sc.v[i].chosen) continue;
            if (!any) sb_puts(b, titles[sec]);
            any = 1;
            sb_puts(b, sc.v[i].text);
        }
    }
    /* Always partial unless every message made a line unclipped: say so plainly. */
    if (shown < (size_t)count || sc.clipped || shown < sc.n)
        sb_printf(b, "Partial: %zu lines from %lld messages%s; lcm_expand {\"session\": \"%s\", \"entry_id\": ...} "
                     "reads any of them whole, lcm_grep finds the rest.\n",
                  shown, count, sc.clipped ? ", long lines clipped" : "", session_id);
    if (b->oom) rc = lc_errf(err, LC_NOMEM, "out of memory");
done:
    for (size_t i = 0; i < sc.n; i++) free(sc.v[i].text);
    return rc;
}

/* The learned lines (dream.h: active contracts, the strongest patterns) within
 * dreamBundleTokens of lcm.json, at most half the bundle; NULL when the home has none. */
static char *bundle_learned(const char *home, const char *cwd, long budget)
{
    lcm_config cfg;
    char *path = lc_asprintf("%s/lcm.json", home), *text = NULL;
    lcm_config_defaults(&cfg);
    if (path) lcm_config_load(path, &cfg, NULL);
    long cap = cfg.dream_bundle_tokens < budget / 2 ? cfg.dream_bundle_tokens : budget / 2;
    lcm_config_free(&cfg);
    free(path);
    if (cap > 0 && dream_bundle_text(home, cwd, cap, &text, NULL) != LC_OK) text = NULL;
    return text;
}

static int bundle_build_session(const char *home, const char *cwd, const char *exclude_session, long budget_tokens,
                                char **out, char **err);

int bundle_build(const char *home, const char *cwd, const char *exclude_session, long budget_tokens,
                 char **out, char **err)
{
    long budget = budget_tokens > 0 ? budget_tokens : BUNDLE_DEFAULT_TOKENS;
    char *learned = cwd && *cwd ? bundle_learned(home, cwd, budget) : NULL;
    long spent = learned ? (long)summ_estimate_tokens(learned) : 0;
    int rc = bundle_build_session(home, cwd, exclude_session, budget - spent, out, err);
    if (rc == LC_OK && learned) {
        /* The rules first: they bind this session whatever the previous one was doing. */
        char *t = *out ? lc_asprintf("%.*s%s%s", (int)(sizeof bundle_recovery - 1), *out, learned,
                                     *out + sizeof bundle_recovery - 1)
                       : lc_asprintf("%s%s", bundle_recovery, learned);
        if (!t) rc = lc_errf(err, LC_NOMEM, "out of memory");
        free(*out);
        *out = t;
    }
    free(learned);
    return rc;
}

static int bundle_build_session(const char *home, const char *cwd, const char *exclude_session, long budget_tokens,
                                char **out, char **err)
{
    bundle_pick p;
    store *s = NULL;
    int rc = LC_OK;
    sbuf b = {0};
    char *head = NULL, *handoff = NULL;
    *out = NULL;
    memset(&p, 0, sizeof p);
    if (!cwd || !*cwd) return LC_OK;
    if ((rc = bundle_find(home, cwd, exclude_session, &p, err)) != LC_OK || !p.id) goto done;
    if ((rc = store_open_readonly(p.path, &s, NULL, err)) != LC_OK) goto done;
    /* The recovery line and the header always; a handoff written for the session next (up to
     * half the budget), then its task state in what is left. */
    long budget = budget_tokens > 0 ? budget_tokens : BUNDLE_DEFAULT_TOKENS;
    head = lc_asprintf("Previous session in this folder: %s (last active %s, %lld messages).\n", p.id,
                       p.date ? p.date : "?", p.count);
    if (!head) goto oom;
    sb_puts(&b, bundle_recovery);
    sb_puts(&b, head);
    long used = (long)summ_estimate_tokens(bundle_recovery) + (long)summ_estimate_tokens(head);
    if ((handoff = store_meta_get(s, BUNDLE_HANDOFF_KEY)) && *handoff) {
        int clipped = 0;
        size_t cap = (size_t)(budget / 2) * 4;
        if (strlen(handoff) > cap) {
            cap = lc_utf8_back(handoff, cap);
            handoff[cap] = '\0';
            clipped = 1;
        }
        sb_printf(&b, "Latest handoff%s:\n%s%s", clipped ? " (clipped; lcm_handoff reads it whole)" : "",
                  handoff, handoff[0] && handoff[strlen(handoff) - 1] == '\n' ? "" : "\n");
        used += (long)summ_estimate_tokens(handoff) + 12;
    }
    if ((rc = bundle_state(s, p.id, p.count, budget - used, &b, err)) != LC_OK) goto done;
    if (b.oom) goto oom;
    *out = sb_detach(&b);
    goto done;
oom:
    rc = lc_errf(err, LC_NOMEM, "out of memory");
done:
    store_close(s);
    sb_free(&b);
    free(head);
    free(handoff);
    free(p.path);
    free(p.id);
    free(p.date);
    return rc;
}

int bundle_handoff_make(store *s, const char *session_id, char **out, char **err)
{
    sbuf b = {0};
    long long count = store_message_count(s);
    char *date = lc_utc_format(store_last_activity_ms(s), "%Y-%m-%d %H:%M UTC", "date unknown");
    int rc;
    *out = NULL;
    sb_printf(&b, "Handoff of session %s (as of %s, %lld messages).\n", session_id, date ? date : "?", count);
    free(date);
    if ((rc = bundle_state(s, session_id, count, BUNDLE_HANDOFF_TOKENS, &b, err)) != LC_OK) {
        sb_free(&b);
        return rc;
    }
    if (b.oom) {
        sb_free(&b);
        return lc_errf(err, LC_NOMEM, "out of memory");
    }
    *out = sb_detach(&b);
    return LC_OK;
}

long bundle_budget(const char *home, long cli)
{
    long v = cli;
    if (v <= 0) {
        /* lcm.json's bundleTokens, read (and range-checked) like every other key. */
        lcm_config cfg;
        char *path = lc_asprintf("%s/lcm.json", home);
        lcm_config_defaults(&cfg);
        if (path) lcm_config_load(path, &cfg, NULL);
        v = cfg.bundle_tokens;
        lcm_config_free(&cfg);
        free(path);
    }
    if (v <= 0) v = BUNDLE_DEFAULT_TOKENS;
    if (v < BUNDLE_MIN_TOKENS) v = BUNDLE_MIN_TOKENS;
    if (v > BUNDLE_MAX_TOKENS) v = BUNDLE_MAX_TOKENS;
    return v;
}

int bundle_session_prompt(const char *home, store *st, const char *session_id, const lcm_config *cfg, char **out,
                          char **err)
{
    char *e = NULL, *cwd = NULL;
    int rc = LC_OK;
    *out = NULL;
    if (!cfg || (!cfg->session_bundle && !cfg->dream_system_prompt) || store_message_count(st) > 0) return LC_OK;
    cwd = store_meta_get(st, "cwd");
    /* The bundle carries what dream learned; dreamSystemPrompt alone carries just that. */
    if (cwd && *cwd && cfg->session_bundle &&
        (rc = bundle_build(home, cwd, session_id, cfg->bundle_tokens, out, &e)) != LC_OK)
        lc_errf(err, rc, "the previous session's bundle: %s", e ? e : "failed");
    else if (cwd && *cwd && !cfg->session_bundle &&
             (rc = dream_bundle_text(home, cwd, cfg->dream_bundle_tokens, out, &e)) != LC_OK)
        lc_errf(err, rc, "the learned contracts and patterns: %s", e ? e : "failed");
    free(e);
    free(cwd);
    return rc;
}
