/*
 * dreamcli.h -- `lcm dream [--project DIR | --global] [--json]` and `lcm contracts
 * list|show|approve|reject|retract|supersede`: options, the home, lcm.json (budgets and the
 * summarizer chain's provider/id model through the summarizer's own HTTP clients), then the
 * engine bodies (dream_command, contracts_command) that `/lcm dream` and `/lcm contracts`
 * run too. Exit codes: 0 ok, 1 failed or refused (a usage error, a transition its state does not
 * allow, another dream running).
 */
#ifndef LC_LCM_DREAMCLI_H
#define LC_LCM_DREAMCLI_H

/* 1 for the verbs this module runs ("dream", "contracts"). */
int dreamcli_owns(const char *verb);

/* Run it (argv[1] is the verb); returns the exit code. */
int dreamcli_run(int argc, char **argv);

#endif
