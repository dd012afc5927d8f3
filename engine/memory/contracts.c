/*
 * contracts.c -- the behavior contracts' state machine, trail and command text (see
 * contracts.h). Every transition is one home-store transaction: read the contract, check
 * its state, write the new state only if it is still the one read, append the trail row.
 */
#include "contracts.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "carry.h"
#include "homestore.h"
#include "summarize.h"
#include "util.h"

static contracts_fault_fn contracts_fault;

void contracts_set_fault(contracts_fault_fn fn) { contracts_fault = fn; }

static const char *const contracts_kinds[] = {"prefer", "forbid", "verify-before"};

int contracts_valid_kind(const char *kind)
{
    for (size_t i = 0; kind && i < sizeof contracts_kinds / sizeof *contracts_kinds; i++)
        if (!strcmp(kind, contracts_kinds[i])) return 1;
    return 0;
}

/* A body is one line of text: it is printed as one line of the next sessions' bundle, so
 * a line break (or a character some reader takes for one) would let it write lines of its
 * own there. lc_text_clean in one-line mode leaves such a body unchanged. */
static int contracts_body_ok(const char *body, char **err)
{
    if (!body || !*body) return lc_errf(err, LC_INVALID, "a contract needs a body (the rule, in words)");
    size_t n = strlen(body);
    if (n > CONTRACTS_BODY_MAX)
        return lc_errf(err, LC_INVALID, "a contract body is at most %d bytes", CONTRACTS_BODY_MAX);
    char *clean = lc_text_clean(body, n, 1);
    if (!clean) return lc_errf(err, LC_NOMEM, "out of memory");
    int same = !strcmp(clean, body);
    free(clean);
    if (!same)
        return lc_errf(err, LC_INVALID, "a contract body is one line of text: no line breaks, tabs, control "
                                        "characters or invalid UTF-8");
    return LC_OK;
}

int contracts_propose(homestore *h, const char *kind, const char *body, const char *project, int64_t pattern_id,
                      const char *actor, int64_t *id, char **err)
{
    int rc;
    long long now = lc_epoch_ms();
    if (!contracts_valid_kind(kind))
        return lc_errf(err, LC_INVALID, "contract kind '%s': prefer, forbid or verify-before", kind ? kind : "");
    if ((rc = contracts_body_ok(body, err)) != LC_OK) return rc;
    if ((rc = homestore_begin(h, err)) != LC_OK) return rc;
    if ((rc = homestore_contract_add(h, kind, body, CONTRACTS_PENDING, project, pattern_id, 0, now, id, err)) == LC_OK &&
        (rc = homestore_trail_add(h, *id, now, actor, "propose", NULL, CONTRACTS_PENDING, NULL, body, err)) == LC_OK)
        rc = homestore_commit(h, err);
    if (rc != LC_OK) homestore_rollback(h);
    return rc;
}

/* One transition from `from` to `to`, inside the caller's transaction. */
static int contracts_move(homestore *h, int64_t id, const char *from, const char *to, const char *action,
                          const char *actor, const char *reason, int64_t superseded_by, long long now, char **err)
{
    homestore_contract c;
    int changed = 0, rc;
    if ((rc = homestore_contract_get(h, id, &c, err)) != LC_OK) return rc;
    if (strcmp(c.state, from) != 0) {
        rc = lc_errf(err, LC_INVALID, "contract #%lld is %s: %s needs it %s", (long long)id, c.state, action, from);
        homestore_contract_free(&c);
        return rc;
    }
    homestore_contract_free(&c);
    if ((rc = homestore_contract_set_state(h, id, from, to, reason, superseded_by, now, &changed, err)) != LC_OK)
        return rc;
    if (!changed) return lc_errf(err, LC_BUSY, "contract #%lld changed meanwhile; try again", (long long)id);
    return homestore_trail_add(h, id, now, actor, action, from, to, reason, NULL, err);
}

static int contracts_transition(homestore *h, int64_t id, const char *from, const char *to, const char *action,
                                const char *actor, const char *reason, char **err)
{
    int rc = homestore_begin(h, err);
    if (rc != LC_OK) return rc;
    if ((rc = contracts_move(h, id, from, to, action, actor, reason, 0, lc_epoch_ms(), err)) == LC_OK)
        rc = homestore_commit(h, err);
    if (rc != LC_OK) homestore_rollback(h);
    return rc;
}

int contracts_approve(homestore *h, int64_t id, const char *actor, const char *reason, char **err)
{
    return contracts_transition(h, id, CONTRACTS_PENDING, CONTRACTS_ACTIVE, "approve", actor, reason, err);
}

int contracts_reject(homestore *h, int64_t id, const char *actor, const char *reason, char **err)
{
    return contracts_transition(h, id, CONTRACTS_PENDING, CONTRACTS_REJECTED, "reject", actor, reason, err);
}

int contracts_retract(homestore *h, int64_t id, const char *actor, const char *reason, char **err)
{
    if (!reason || !*reason) return lc_errf(err, LC_INVALID, "retract needs a reason (--reason R): it stays in the trail");
    return contracts_transition(h, id, CONTRACTS_ACTIVE, CONTRACTS_RETRACTED, "retract", actor, reason, err);
}

int contracts_supersede(homestore *h, int64_t id, const char *actor, const char *body, const char *reason,
                        int64_t *new_id, char **err)
{
    homestore_contract c = {0};
    long long now = lc_epoch_ms();
    int rc;
    *new_id = 0;
    if ((rc = contracts_body_ok(body, err)) != LC_OK) return rc;
    if ((rc = homestore_begin(h, err)) != LC_OK) return rc;
    if ((rc = homestore_contract_get(h, id, &c, err)) != LC_OK) goto fail;
    if (strcmp(c.state, CONTRACTS_ACTIVE) != 0) {
        rc = lc_errf(err, LC_INVALID, "contract #%lld is %s: supersede needs it Active", (long long)id, c.state);
        goto fail;
    }
    /* The new rule first, then the old one pointing at it: a crash between the two
     * leaves nothing, because both are inside the one transaction. */
    if ((rc = homestore_contract_add(h, c.kind, body, CONTRACTS_ACTIVE, c.project, c.pattern_id, id, now, new_id, err)) !=
        LC_OK)
        goto fail;
    if ((rc = homestore_trail_add(h, *new_id, now, actor, "supersede-new", NULL, CONTRACTS_ACTIVE, reason, body, err)) !=
        LC_OK)
        goto fail;
    if (contracts_fault && (rc = contracts_fault("supersede-between", err)) != LC_OK) goto fail;
    if ((rc = contracts_move(h, id, CONTRACTS_ACTIVE, CONTRACTS_SUPERSEDED, "supersede", actor, reason, *new_id, now,
                             err)) != LC_OK)
        goto fail;
    if ((rc = homestore_commit(h, err)) != LC_OK) goto fail;
    homestore_contract_free(&c);
    return LC_OK;
fail:
    homestore_rollback(h);
    homestore_contract_free(&c);
    *new_id = 0;
    return rc;
}

/* ---- the command ------------------------------------------------------------------------- */

const char contracts_usage[] =
    "contracts list [--state S]          every contract (or those in state S), by id\n"
    "contracts show ID                   one contract and its trail\n"
    "contracts approve ID [--reason R]   Pending -> Active (it rides in the next bundles)\n"
    "contracts reject ID [--reason R]    Pending -> Rejected\n"
    "contracts retract ID --reason R     Active -> Retracted (the reason stays in the trail)\n"
    "contracts supersede ID --body B [--reason R]  Active -> Superseded by a new Active rule\n";

static void contracts_line(sbuf *b, const homestore_contract *c)
{
    sb_printf(b, "#%lld [%s] %s: %s (%s%s)", (long long)c->id, c->state, c->kind, c->body,
              c->project ? "project " : "global", c->project ? c->project : "");
    if (c->superseded_by) sb_printf(b, " -> superseded by #%lld", (long long)c->superseded_by);
    if (c->supersedes) sb_printf(b, " (supersedes #%lld)", (long long)c->supersedes);
    sb_putc(b, '\n');
}

static int contracts_show(homestore *h, int64_t id, sbuf *b, char **err)
{
    homestore_contract c;
    homestore_trail *t = NULL;
    size_t n = 0;
    int rc = homestore_contract_get(h, id, &c, err);
    if (rc != LC_OK) return rc;
    contracts_line(b, &c);
    if (c.pattern_id) sb_printf(b, "from dream pattern #%lld (lcm dream --json lists its lineage)\n", (long long)c.pattern_id);
    if (c.reason) sb_printf(b, "reason: %s\n", c.reason);
    if ((rc = homestore_trail_list(h, id, &t, &n, err)) == LC_OK) {
        sb_puts(b, "trail:\n");
        for (size_t i = 0; i < n; i++) {
            char *when = lc_utc_format(t[i].at, "%Y-%m-%dT%H:%M:%SZ", "?");
            sb_printf(b, "  %s %s by %s: %s -> %s%s%s%s%s\n", when ? when : "?", t[i].action, t[i].actor,
                      t[i].from_state ? t[i].from_state : "-", t[i].to_state ? t[i].to_state : "-",
                      t[i].reason ? "; reason: " : "", t[i].reason ? t[i].reason : "", t[i].body ? "; body: " : "",
                      t[i].body ? t[i].body : "");
            free(when);
        }
    }
    homestore_trail_free(t, n);
    homestore_contract_free(&c);
    return rc;
}

static int contracts_parse_id(const char *s, int64_t *id)
{
    char *end = NULL;
    if (!s) return 0;
    if (*s == '#') s++;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (!*s || *end || v <= 0 || errno == ERANGE) return 0; /* 2^63 and past: no contract, not LLONG_MAX */
    *id = v;
    return 1;
}

int contracts_command(const char *home, int argc, const char *const *argv, const char *actor, const char *project,
                      char **out, char **err)
{
    const char *action = argc > 0 ? argv[0] : "list", *reason = NULL, *body = NULL, *state = NULL, *idarg = NULL;
    homestore *h = NULL;
    homestore_contract *v = NULL;
    size_t n = 0;
    int64_t id = 0, new_id = 0;
    sbuf b = {0};
    int rc = LC_OK;
    *out = NULL;
    for (int i = 1; i < argc; i++) {
        int more = i + 1 < argc;
        if (!strcmp(argv[i], "--reason") && more) reason = argv[++i];
        else if (!strcmp(argv[i], "--body") && more) body = argv[++i];
        else if (!strcmp(argv[i], "--state") && more) state = argv[++i];
        else if (!idarg && argv[i][0] != '-') idarg = argv[i];
        else return lc_errf(err, LC_INVALID, "contracts %s: unexpected '%s'\n%s", action, argv[i], contracts_usage);
    }
    int listing = !strcmp(action, "list");
    if (!listing && strcmp(action, "show") && strcmp(action, "approve") && strcmp(action, "reject") &&
        strcmp(action, "retract") && strcmp(action, "supersede"))
        return lc_errf(err, LC_INVALID, "contracts: unknown action '%s'\n%s", action, contracts_usage);
    if (!listing && !contracts_parse_id(idarg, &id))
        return lc_errf(err, LC_INVALID, "contracts %s: give a contract id (see contracts list)\n%s", action,
                       contracts_usage);
    if (!strcmp(action, "retract") && (!reason || !*reason))
        return lc_errf(err, LC_INVALID, "contracts retract %lld: --reason R is required (it stays in the trail)",
                       (long long)id);
    if (!strcmp(action, "supersede") && (!body || !*body))
        return lc_errf(err, LC_INVALID, "contracts supersede %lld: --body B is required (the new rule)", (long long)id);
    /* Only a change creates the home store; a read of a home without one says so. */
    if ((rc = homestore_open(home, !listing && strcmp(action, "show"), &h, err)) == LC_NOTFOUND) {
        if (listing) {
            *out = lc_strdup("no contracts yet (lcm dream proposes them from the history)\n");
            return *out ? LC_OK : lc_errf(err, LC_NOMEM, "out of memory");
        }
        return lc_errf(err, LC_NOTFOUND, "no contract %lld", (long long)id);
    }
    if (rc != LC_OK) return rc;
    if (listing) {
        if ((rc = homestore_contracts_list(h, state, project, &v, &n, err)) == LC_OK) {
            if (!n) sb_printf(&b, "no contracts%s%s\n", state ? " in state " : "", state ? state : "");
            for (size_t i = 0; i < n; i++) contracts_line(&b, &v[i]);
        }
    } else if (!strcmp(action, "show")) {
        rc = contracts_show(h, id, &b, err);
    } else {
        if (!strcmp(action, "approve")) rc = contracts_approve(h, id, actor, reason, err);
        else if (!strcmp(action, "reject")) rc = contracts_reject(h, id, actor, reason, err);
        else if (!strcmp(action, "retract")) rc = contracts_retract(h, id, actor, reason, err);
        else rc = contracts_supersede(h, id, actor, body, reason, &new_id, err);
        if (rc == LC_OK) {
            if (new_id) sb_printf(&b, "contract #%lld superseded by #%lld\n", (long long)id, (long long)new_id);
            rc = contracts_show(h, new_id ? new_id : id, &b, err);
        }
    }
    homestore_contracts_free(v, n);
    homestore_close(h);
    if (rc == LC_OK && b.oom) rc = lc_errf(err, LC_NOMEM, "out of memory");
    if (rc != LC_OK) {
        sb_free(&b);
        return rc;
    }
    *out = sb_detach(&b);
    return LC_OK;
}

int contracts_split_line(const char *line, char **buf, const char ***argv, int *argc)
{
    const char *p = line ? line : "";
    size_t n = strlen(p), o = 0;
    int value = 0; /* 1 while the words are the value of --reason / --body */
    *buf = malloc(n + 1);
    *argv = calloc(n / 2 + 2, sizeof **argv);
    *argc = 0;
    if (!*buf || !*argv) {
        free(*buf);
        free(*argv);
        *buf = NULL;
        *argv = NULL;
        return LC_NOMEM;
    }
    /* Words are copied into *buf one after another (the copy is never longer than the
     * line): a value's words joined by one space, everything else one word each. */
    while (*p) {
        while (*p == ' ' || *p == '\t') p++;
        if (!*p) break;
        const char *w = p;
        while (*p && *p != ' ' && *p != '\t') p++;
        size_t len = (size_t)(p - w);
        int opt = len > 2 && w[0] == '-' && w[1] == '-';
        if (value == 2 && !opt) {
            (*buf)[o - 1] = ' ';
        } else {
            (*argv)[(*argc)++] = *buf + o;
        }
        memcpy(*buf + o, w, len);
        o += len;
        (*buf)[o++] = '\0';
        if (opt) value = (len == 8 && !strncmp(w, "--reason", 8)) || (len == 6 && !strncmp(w, "--body", 6));
        else if (value) value = 2;
    }
    return LC_OK;
}

int contracts_command_line(const char *home, const char *line, const char *actor, const char *project, char **out,
                           char **err)
{
    char *buf = NULL;
    const char **argv = NULL;
    int argc = 0;
    if (contracts_split_line(line, &buf, &argv, &argc) != LC_OK) return lc_errf(err, LC_NOMEM, "out of memory");
    int rc = contracts_command(home, argc, argv, actor, project, out, err);
    free(buf);
    free(argv);
    return rc;
}

static const char *const contracts_states[] = {CONTRACTS_PENDING, CONTRACTS_ACTIVE, CONTRACTS_REJECTED,
                                               CONTRACTS_RETRACTED, CONTRACTS_SUPERSEDED};

cJSON *contracts_status_json(const char *home)
{
    homestore *h = NULL;
    if (homestore_open(home, 0, &h, NULL) != LC_OK) return NULL;
    cJSON *o = cJSON_CreateObject();
    for (size_t i = 0; o && i < sizeof contracts_states / sizeof *contracts_states; i++)
        cJSON_AddNumberToObject(o, contracts_states[i], (double)homestore_contract_count(h, contracts_states[i]));
    if (o) {
        cJSON_AddNumberToObject(o, "patterns", (double)homestore_pattern_count(h));
        cJSON_AddNumberToObject(o, "dreams", (double)homestore_run_count(h));
    }
    homestore_close(h);
    return o;
}

char *contracts_status_line(const char *home)
{
    homestore *h = NULL;
    const char *const *states = contracts_states;
    if (homestore_open(home, 0, &h, NULL) != LC_OK) return NULL;
    sbuf b = {0};
    for (size_t i = 0; i < sizeof contracts_states / sizeof *contracts_states; i++)
        sb_printf(&b, "%s%lld %s", i ? ", " : "", (long long)homestore_contract_count(h, states[i]), states[i]);
    sb_printf(&b, "; dream: %lld patterns, %lld runs", (long long)homestore_pattern_count(h),
              (long long)homestore_run_count(h));
    homestore_close(h);
    return sb_detach(&b);
}

int contracts_bundle_text(homestore *h, const char *project, long budget_tokens, char **out, long *used, char **err)
{
    homestore_contract *v = NULL;
    size_t n = 0, shown = 0;
    sbuf b = {0};
    *out = NULL;
    *used = 0;
    int rc = homestore_contracts_list(h, CONTRACTS_ACTIVE, project, &v, &n, err);
    if (rc != LC_OK || !n) goto done;
    static const char head[] = "Behavior contracts (approved by a person; follow them):\n";
    long spent = (long)summ_estimate_tokens(head);
    sb_puts(&b, head);
    for (size_t i = 0; i < n; i++) {
        /* One quoted line whatever the stored body holds (rows written before bodies were
         * checked included). */
        char *body = carry_line(v[i].body, strlen(v[i].body), CONTRACTS_BODY_MAX, NULL);
        char *line = body ? lc_asprintf("- [contract #%lld, %s] %s\n", (long long)v[i].id, v[i].kind, body) : NULL;
        free(body);
        if (!line) {
            rc = lc_errf(err, LC_NOMEM, "out of memory");
            goto done;
        }
        long t = (long)summ_estimate_tokens(line);
        if (spent + t <= budget_tokens) {
            sb_puts(&b, line);
            spent += t;
            shown++;
        }
        free(line);
    }
    if (shown < n) sb_printf(&b, "(%zu more active contracts: lcm contracts list)\n", n - shown);
    if (shown == 0) {
        sb_free(&b);
        goto done;
    }
    if (b.oom) {
        rc = lc_errf(err, LC_NOMEM, "out of memory");
        goto done;
    }
    *used = spent;
    *out = sb_detach(&b);
done:
    sb_free(&b);
    homestore_contracts_free(v, n);
    return rc;
}
