/*
 * convtree.h -- which entries of a transcript's tree are on the conversation the file ends
 * on, as the CLI that wrote it means it. Owns the rule `lcm import` (and the hooks that
 * import a transcript turn by turn) mark removed rows with:
 *   - each conversation (the main one, and each sub-agent's) ends on its last entry in file
 *     order; that entry up to its root is live;
 *   - an entry off that chain is live still when it belongs to the same model response as a
 *     live entry (Claude Code writes each call of a parallel batch as its own line, each a
 *     child of the previous one) or answers a call a live entry made (each result names its
 *     own call line as parent), and so are its ancestors and the other parts of its line;
 *   - everything else was abandoned (a rewind, an edited prompt, a /tree move): removed.
 * Pure: entries come in as indexes, nothing is read or stored here.
 */
#ifndef LC_CONVTREE_H
#define LC_CONVTREE_H

#include <stddef.h>

typedef struct convtree_node {
    long parent;   /* index of its parent (always below its own), -1 for a root */
    long seq;      /* position in the file; the parts of one line share it and are adjacent */
    long group;    /* -1: the main conversation; else the index of the root of the sub-agent
                      conversation it belongs to */
    long same_as;  /* an earlier entry of the same model response, -1 */
    long answers;  /* the entry holding the call it answers, -1 */
    int orphan;    /* names a parent the file does not hold: never taken as a conversation's end */
} convtree_node;

/* live[i] (n bytes, caller's) = 1 for the entries on the conversations the file ends on,
 * 0 for abandoned ones. LC_OK, or LC_NOMEM with *err. */
int convtree_live(const convtree_node *v, size_t n, unsigned char *live, char **err);

#endif
