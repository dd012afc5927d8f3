/*
 * cli.h -- the maintenance verbs of the `lcm` command over engine/lcm/admin.h (the same code
 * as /lcm inside the agent): compact, doctor, export, backup, gc, migrate, heal, report,
 * and the --json forms of status and sessions. Owns their options, which stores a verb
 * runs over (--session ID, or every store by name with keyset paging --after KEY
 * --limit N), the --json documents and the exit codes (0 ok, 1 a check failed or there
 * is something to do, 2 usage).
 */
#ifndef LC_LCM_CLI_H
#define LC_LCM_CLI_H

#define CLI_EXIT_OK 0
#define CLI_EXIT_FOUND 1
#define CLI_EXIT_USAGE 2

/* 1 when `lcm VERB ARGS` is this module's: the maintenance verbs, and status / sessions
 * with --json. */
int cli_owns(const char *verb, int argc, char **argv);

/* Run it (argv[1] is the verb); returns the exit code. */
int cli_run(int argc, char **argv);

#endif
