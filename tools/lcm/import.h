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

typedef struct import_stats {
    import_format format;
    char session_id[256];   /* the store's session id */
    size_t lines;           /* JSON lines read */
    size_t bad_lines;       /* malformed or shapeless lines skipped */
    size_t messages;        /* messages found */
    size_t inserted;        /* new store rows */
    size_t removed;         /* rows marked removed (off the final branch) */
    int torn_tail;          /* the last line was incomplete (still being written) and left out */
} import_stats;

/* Which format a file is, by its first lines. LC_INVALID (with *err) when none fits. */
int import_detect(const char *path, import_format *out, char **err);

/* Import one file into <home>/lcm/<session>.sqlite (created when absent). */
int import_file(const char *home, const char *path, import_progress_fn progress, void *ud,
                import_stats *st, char **err);

#endif
