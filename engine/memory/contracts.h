/*
 * contracts.h -- behavior contracts: typed rules the agent commits to follow in the next
 * sessions (`prefer`, `forbid`, `verify-before`), proposed by dream as Pending and decided
 * by a person. Owns the state machine
 *     Pending -> Active (approve) | Rejected (reject)
 *     Active  -> Retracted (retract, a reason required)
 *             | Superseded (supersede: a new Active contract with the new body, and the
 *               old one pointing at it, in ONE transaction)
 * every change with its append-only trail row (who, when, why), the text of the
 * `contracts` command that `lcm contracts`, `/lcm contracts` and the MCP tool
 * lcm_contracts share, and the contracts' lines of the start-of-session bundle. The rows
 * live in the home store (homestore.h).
 */
#ifndef LC_CONTRACTS_H
#define LC_CONTRACTS_H

#include <stddef.h>
#include <stdint.h>

typedef struct homestore homestore;

#define CONTRACTS_PENDING "Pending"
#define CONTRACTS_ACTIVE "Active"
#define CONTRACTS_REJECTED "Rejected"
#define CONTRACTS_RETRACTED "Retracted"
#define CONTRACTS_SUPERSEDED "Superseded"
#define CONTRACTS_BODY_MAX 2000   /* bytes of one rule */

/* 1 for "prefer", "forbid", "verify-before". */
int contracts_valid_kind(const char *kind);

/* A new Pending contract (dream's proposal, or a person's) and its trail row. */
int contracts_propose(homestore *h, const char *kind, const char *body, const char *project, int64_t pattern_id,
                      const char *actor, int64_t *id, char **err);
/* The transitions. LC_NOTFOUND: no such contract; LC_INVALID: not allowed from its state
 * (or a required reason / body missing), with *err saying which. */
int contracts_approve(homestore *h, int64_t id, const char *actor, const char *reason, char **err);
int contracts_reject(homestore *h, int64_t id, const char *actor, const char *reason, char **err);
int contracts_retract(homestore *h, int64_t id, const char *actor, const char *reason, char **err);
int contracts_supersede(homestore *h, int64_t id, const char *actor, const char *body, const char *reason,
                        int64_t *new_id, char **err);

/* A fault point for the crash tests: called inside supersede's transaction between its
 * two writes (point "supersede-between"); a non-LC_OK return fails the transaction there.
 * NULL (the default) = none. */
typedef int (*contracts_fault_fn)(const char *point, char **err);
void contracts_set_fault(contracts_fault_fn fn);

/* The command body: argv is `list [--state S] | show ID | approve ID [--reason R] |
 * reject ID [--reason R] | retract ID --reason R | supersede ID --body B [--reason R]`
 * (argv[0] the action). *out (malloc'd) is the text to print. LC_INVALID: a usage error,
 * *err the sentence (with the usage); other statuses as the transitions. `project` (may
 * be NULL) is the folder a list is for (its contracts and the global ones). */
int contracts_command(const char *home, int argc, const char *const *argv, const char *actor, const char *project,
                      char **out, char **err);
extern const char contracts_usage[];
/* The same from one command line (`/lcm contracts retract 3 --reason the tests moved`):
 * words, where the value of --reason and --body runs to the next --option. */
int contracts_command_line(const char *home, const char *line, const char *actor, const char *project, char **out,
                           char **err);
/* That split: argv[] pointers into *buf (malloc'd, the caller frees it and *argv). */
int contracts_split_line(const char *line, char **buf, const char ***argv, int *argc);

/* The counts by state, "2 pending, 1 active, ..." (malloc'd), or NULL when the home has no
 * home store (nothing to say). */
char *contracts_status_line(const char *home);
/* The same as {"Pending": n, "Active": n, ..., "patterns": n, "dreams": n} (caller deletes),
 * NULL when there is no home store. */
struct cJSON;
struct cJSON *contracts_status_json(const char *home);

/* The Active contracts of `project` (and the global ones) as bundle lines, within
 * `budget_tokens`, appended to *b-like text: *out malloc'd, NULL when there are none. */
int contracts_bundle_text(homestore *h, const char *project, long budget_tokens, char **out, long *used,
                          char **err);

#endif
