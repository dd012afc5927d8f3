/*
 * import_writer.h -- the store side of `lcm import`, on a thread of its own: the reading
 * thread parses and builds the next batch while this one derives, inserts and indexes the
 * last. Batches arrive through a bounded queue, in order; the writer groups them into bulk
 * transactions (store_bulk_begin) of IMPORT_WRITER_TX_MESSAGES messages. Between
 * import_writer_start and import_writer_finish the store's connection is the writer's
 * alone; the caller touches the store again only after the finish.
 */
#ifndef LC_LCM_IMPORT_WRITER_H
#define LC_LCM_IMPORT_WRITER_H

#include <stddef.h>

#include "ingest.h"
#include "store.h"

/* A commit per batch (a branch switch ends one) flushed the full-text index into a new
 * segment each time and ran the DAG progress trigger row by row; bounded so that a writer
 * waiting on the store (a hook, the plugin) waits about a second at most. */
#define IMPORT_WRITER_TX_MESSAGES 16384
/* The reader runs ahead by this many messages at most, so that it keeps reading through
 * the writer's commits; a branch's switch ends a batch, so a transcript with many branches
 * queues many small ones, up to IMPORT_WRITER_QUEUE. A full queue wakes the waiting reader
 * only once it is half empty, and the reader wakes the writer only when it waits, so the
 * two do not take turns batch by batch. */
#define IMPORT_WRITER_QUEUE 64
#define IMPORT_WRITER_QUEUE_MESSAGES 4096

typedef struct import_writer import_writer;

/* Start the thread on st (borrowed: still the caller's to close, after the finish). */
int import_writer_start(store *st, import_writer **out, char **err);
/* Hand *b over (moved: *b is an empty batch after, whatever the outcome); waits while the
 * queue is full. After the writer failed, returns its error (the message once, in *err)
 * and drops the batch. */
int import_writer_put(import_writer *w, ingest_batch *b, char **err);
/* Write what is queued, commit the open bulk, stop the thread and free w (NULL: no-op).
 * *inserted (may be NULL) gets the rows added. Returns the writer's first error, else the
 * commit's; what the earlier commits stored is kept either way. */
int import_writer_finish(import_writer *w, size_t *inserted, char **err);

#endif
