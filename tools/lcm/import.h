/*
 * import.h -- `lcm import`: read another agent's transcript into a lossless store so the
 * same recall tools search it. Formats, detected by the shape of the first lines: a Pi
 * session file (the reference format: header + entry tree), a Claude Code JSONL transcript
 * (uuid / parentUuid lines) and a Codex rollout JSONL (session_meta + response_item lines).
 * Owns the conversion of each format to AgentMessages with stable entry ids, and the
 * replay of the entry tree into store_ingest / store_mark_branch so that a Pi file yields
 * the rows the plugin would have stored living through it. Idempotent: entry ids are
 * stable, so a second import inserts nothing.
 */
#ifndef LCM_IMPORT_H
#define LCM_IMPORT_H

#include <stddef.h>

typedef enum import_format {
    IMPORT_UNKNOWN = 0,
    IMPORT_PI,
    IMPORT_CLAUDE,
    IMPORT_CODEX
} import_format;

const char *import_format_name(import_format f);

/* Called now and then while a file is read: bytes read so far of `total`. */
typedef void (*import_progress_fn)(void *ud, long long done, long long total);

/* How long an import waits, in all, for a last line that is still being written. */
#define IMP_TAIL_WAIT_MS 2000

/* What an import met, by kind: messages stored (by role), lines and items skipped on
 * purpose (by type: events the CLI writes beside the messages, a torn last line, ...), and
 * blocks or items it did not know and stored verbatim. The first IMPORT_KINDS kinds are
 * named; the rest are summed under "other". */
#define IMPORT_KINDS 32
enum { IMPORT_STORED = 0, IMPORT_SKIPPED, IMPORT_UNDERSTOOD_NOT };
typedef struct import_kind {
    char name[48];
    size_t n[3];  /* by IMPORT_STORED / IMPORT_SKIPPED / IMPORT_UNDERSTOOD_NOT */
} import_kind;

typedef struct import_stats {
    import_format format;
    char session_id[256];   /* the store's session id */
    size_t lines;           /* JSON lines read */
    size_t bad_lines;       /* malformed or shapeless lines skipped */
    size_t long_lines;      /* of those, lines past JSONL_LINE_MAX (read through, not kept) */
    size_t messages;        /* messages found */
    size_t inserted;        /* new store rows */
    size_t removed;         /* rows marked removed (off the final branch) */
    int torn_tail;          /* the last line was incomplete (still being written) and left out */
    size_t subagent_messages; /* of messages: sub-agents' (each sub-agent in a store of its own) */
    char subagents[1024];   /* "SESSION (TYPE, N messages), ...": the sub-agents' stores */
    import_kind kinds[IMPORT_KINDS + 1]; /* the last one is "other" */
    size_t nkinds;
} import_stats;

/* "user 3, assistant 5" for one column of st->kinds (malloc'd; "" when none). */
char *import_kinds_text(const import_stats *st, int which);

/* Which format a file is, by its first lines. LC_INVALID (with *err) when none fits. */
int import_detect(const char *path, import_format *out, char **err);

/* Import one file into <home>/lcm/<session>.sqlite (created when absent). */
int import_file(const char *home, const char *path, import_progress_fn progress, void *ud,
                import_stats *st, char **err);


/* ---- incremental import (the Stop hook) ------------------------------------------------
 * What one import of a transcript leaves for the next, so that a hook that runs after
 * every turn reads only the bytes appended since. Owned by the caller (import_resume_free);
 * a zeroed struct means "from the start". */
typedef struct import_resume {
    long long offset;        /* bytes consumed: complete lines only */
    long long lines;         /* physical lines before offset (Pi v1 and Codex ids count them) */
    import_format format;
    char session_id[256];    /* the store's session id */
    char *cwd;               /* the session's folder (the transcript's, else the hook's) */
    char *last_id;           /* the last entry read, in file order (the leaf) */
    char *last_ctx;          /* the message that ends the model context at last_id, or NULL */
    struct cJSON *tool_names; /* call id -> tool name of recent calls (a result may come later) */
    int full;                /* out: this call read the file from the start */
} import_resume;

void import_resume_free(import_resume *rs);

/* Import what is new in `path` since `rs` (updated on success). A transcript that goes on
 * the branch the last call ended on is read from rs->offset; anything else (a first call,
 * a fork back into older entries, a new root such as a compaction boundary, a store that
 * lost the last message) is read again from the start, which stores the same rows and
 * marks a whole import_file would. A last line without its newline is left for the next
 * call (no waiting: a hook must be quick). rs->cwd, when set before a first call, is the
 * folder recorded for a transcript that names none. */
int import_file_resume(const char *home, const char *path, import_resume *rs, import_stats *st,
                       char **err);

#endif
