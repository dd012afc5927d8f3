/*
 * import_tree.h -- the state one `lcm import` builds while it reads a transcript, shared by
 * the format readers (import_pi, import_claude, import_codex) and the driver (import.c).
 *
 * Owns the entry table (id, parent, kind in file order, the ids index), the replay of new
 * message entries into ingest batches (each ingested right after the message that ends its
 * parent's context), the writer thread those batches go to (import_writer.h), the tool-call
 * index (a result names its tool), the summary's counts, and an import's setup and teardown.
 * Internal to tools/lcm/import*.c.
 */
#ifndef LCM_IMPORT_TREE_H
#define LCM_IMPORT_TREE_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "import.h"
#include "import_writer.h"
#include "ingest.h"
#include "store.h"

#define IMP_BATCH 1024

enum { IMP_OTHER = 0, IMP_MESSAGE, IMP_COMPACTION };

typedef struct imp_entry {
    const char *id;  /* borrowed from imp.ids */
    long parent;     /* index, -1 for a root */
    int kind;
    long ctxlast;    /* the entry whose message ends the context at this entry, -1 none */
    char *msg;       /* compaction: its summary message (ingested when nothing is kept) */
    long seq;        /* its object's place in the file (the parts of one line share it) */
    long group;      /* -1: the main conversation; else its sub-agent conversation's root */
    long same_as;    /* an earlier entry of the same model response, -1 */
    long answers;    /* the entry whose call it answers, -1 */
    int agent;       /* its sub-agent (imp.agents), -1 */
    unsigned char orphan; /* its parent was never read: stored as a root */
    unsigned char seed;   /* known from the previous call (resume), stored and marked then */
} imp_entry;

/* What the next imp_add records of its entry: set by the format's reader. */
typedef struct imp_cur {
    long seq, same_as, answers;
    int side;        /* a sub-agent's line (Claude Code isSidechain) */
    int agent;
    int orphan;
    const char *kind; /* what a message is, for the summary's counts (its role, else its type) */
    int split;       /* a line read late (its parent came after it): starts a batch of its own */
} imp_cur;

/* A sub-agent: from its own lines (agentId), the call that started it (Task / Agent tool_use),
 * or the result that call got (toolUseResult.agentId). Strings owned. */
struct imp;
typedef struct imp_agent {
    char *id, *type, *call, *prompt;
    size_t messages;  /* its messages this import read */
    struct imp *sub;  /* the import into its own store, made with its first line */
} imp_agent;

/* A Claude Code line whose parent comes later in the file (2.1.97 writes a tool result
 * before the call it answers): kept parsed until that parent is read. */
typedef struct imp_wait {
    cJSON *root;     /* NULL once taken */
    long seq;
    long next;       /* the next line waiting for the same parent, -1 */
} imp_wait;

typedef struct imp {
    const char *home;
    imp_entry *v;
    size_t n, cap;
    ingest_idset ids; /* id -> index: ids.ids[i] is v[i].id */
    store *st;
    char session_id[256];
    char *cwd;
    ingest_batch batch;
    long *batch_idx;    /* the entry of each queued message */
    import_stats *stats;
    long prev_linear;   /* Codex: the previous entry (its transcript is a line) */
    /* The session's own time (ms): its header's timestamp, else its earliest entry's;
     * 0 unknown. The store is dated by it, not by the import (meta "created"). */
    long long header_ts, first_ts;
    /* Claude Code / Codex: tool names by call id, so a result names its tool */
    cJSON *tool_names;
    ingest_idset tool_ids;   /* its call ids, indexed (an object lookup is a linear scan) */
    const char **tool_namev; /* tool_ids.ids[i]'s name, borrowed from tool_names */
    size_t tool_cap;
    import_writer *w;   /* stores the batches; the store is its own while it runs */
    int whole;          /* the whole file is read: the final branch's marks follow (imp_mark) */
    int fresh;          /* whole, and the store held no message when opened: every row is this import's */
    imp_cur cur;
    long seq;           /* objects read */
    int part;           /* the object's place on its physical line (older Pi writes two on one) */
    long *tool_entryv;  /* tool_ids.ids[i]'s call: the entry making it */
    ingest_idset api_ids; /* Claude Code message.id of assistant lines */
    long *api_last;     /* api_ids.ids[i]'s latest entry */
    size_t api_cap;
    imp_wait *waitv;    /* lines waiting for their parent */
    size_t nwait, wait_cap;
    ingest_idset waits; /* the parent ids waited for */
    long *wait_head, *wait_tail;
    size_t waits_cap;
    imp_agent *agents;
    size_t nagents, agents_cap;
    size_t main_entries, side_entries; /* entries of the main conversation, of sub-agents */
    struct imp *reader; /* a sub-agent's import: the one reading the file (its agents, waits) */
    struct imp *open_sub; /* the reader: the sub-agent whose store is open (claude_park) */
    ingest_idset side_ids; /* the reader: sub-agents' entry ids, */
    int *side_agent;       /* and whose each is */
    size_t side_cap;
    const char *path;   /* the transcript */
    char *parent_session; /* a Codex sub-agent's rollout: its parent thread's session */
    char *self_agent;     /* and what it is: {"id","type","name"} */
} imp;

/* A string member of o, NULL when absent or not a string (borrowed). */
const char *imp_jstr(const cJSON *o, const char *k);
/* ISO-8601 UTC to epoch milliseconds, 0 when unparsable (as the reference host reads it). */
long long imp_iso_ms(const char *iso);
/* An entry's time, toward the session's date when the header gives none. */
void imp_saw_ts(imp *m, long long ts);
/* One more of `kind` in the summary's counts (import_kind); which: IMPORT_STORED, ... */
void imp_count(imp *m, int which, const char *kind);

/* Remember call id's tool name and the entry making it (entry -1: known by name only). */
int imp_tool_put_at(imp *m, const char *id, const char *name, long entry);
/* The same, made by the entry the line being read becomes. */
int imp_tool_put(imp *m, const char *id, const char *name);
/* The entry that made call `id`, -1 when unknown. */
long imp_tool_entry(const imp *m, const char *id);
/* Call id's tool name (borrowed), NULL when unknown. */
const char *imp_tool_name(const imp *m, const char *id);
/* Index the tool names a resumed import starts with (m->tool_names). */
int imp_tools_index(imp *m);

/* The entry of id, -1 when not read. */
long imp_find(const imp *m, const char *id);
/* Room for one more entry. */
int imp_grow(imp *m);

/* The session's store, opened on first need (its id must be known). */
int imp_open_store(imp *m, char **err);
/* Date the store by the session's own time (meta "created" only moves earlier). */
int imp_date(imp *m, char **err);
/* The queued batch to the writer (started with the first one). */
int imp_flush(imp *m, char **err);
/* Everything queued stored and committed; the store is this thread's again. */
int imp_finish(imp *m, char **err);
/* Queue one message of entry idx (json and tree owned from here). */
int imp_queue(imp *m, long idx, char *json, cJSON *tree, char **err);
/* Add an entry in file order: json (owned) its message (IMP_MESSAGE) or the summary
 * (IMP_COMPACTION), tree (owned, may be NULL) a message's parse; first_kept for a
 * compaction. What m->cur says of it is recorded with it. */
int imp_add(imp *m, const char *id, const char *parent_id, int kind, char *json, cJSON *tree,
            const char *first_kept, char **err);
/* A message the import built (o, owned): stored as its printed text and its tree. */
int imp_add_built(imp *m, const char *id, const char *parent_id, cJSON *o, char **err);

/* What an import starts with (m zeroed). */
int imp_init(imp *m, const char *home, import_stats *st, int whole);
/* Everything an import holds, its sub-agents' imports and the store included. */
void imp_free(imp *m);

#endif
