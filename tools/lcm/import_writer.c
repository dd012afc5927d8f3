/*
 * import_writer.c -- the writer thread of `lcm import` (import_writer.h): a bounded queue of
 * batches, the bulk transactions they go into, and the first error, handed back to the
 * reading thread at its next put or at the finish.
 */
#include "import_writer.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

struct import_writer {
    store *st;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t more, room; /* a batch queued / a slot freed */
    ingest_batch q[IMPORT_WRITER_QUEUE];
    size_t head, count;
    size_t queued;     /* messages in q */
    /* Stored batches for the reader to free: their texts and parses are its allocator's,
     * whose lock a free from this thread contends for. At most the queue's batches plus
     * the one being stored; beyond that (never) the writer frees. */
    ingest_batch spent[IMPORT_WRITER_QUEUE + 1];
    size_t nspent;
    int reader_waits;  /* the reader waits for room */
    int writer_waits;  /* the writer waits for a batch */
    int closing;  /* the finish: no more batches come */
    /* The thread's own until it ends (read by the finish after the join): */
    int in_tx;
    size_t tx_messages, inserted;
    /* Under mu: */
    int rc;       /* the first failure, LC_OK while none */
    char *err;    /* its message, until handed to the caller */
};

/* The open bulk ends: what went in is kept, also when a later batch failed (that batch
 * alone was undone). */
static int writer_commit(import_writer *w, char **err)
{
    if (!w->in_tx) return LC_OK;
    w->in_tx = 0;
    w->tx_messages = 0;
    int rc = store_bulk_commit(w->st, err);
    if (rc != LC_OK) store_tx_rollback(w->st);
    return rc;
}

/* A stored (or dropped) batch back to the reader. */
static void writer_spend(import_writer *w, ingest_batch *b)
{
    pthread_mutex_lock(&w->mu);
    if (w->nspent < sizeof w->spent / sizeof w->spent[0]) {
        w->spent[w->nspent++] = *b;
        memset(b, 0, sizeof *b);
    }
    pthread_mutex_unlock(&w->mu);
    ingest_batch_free(b);
}

static int writer_write(import_writer *w, ingest_batch *b, char **err)
{
    store_ingest_stats stats = {0};
    int rc = LC_OK;
    if (!w->in_tx && (rc = store_bulk_begin(w->st, err)) != LC_OK) {
        writer_spend(w, b);
        return rc;
    }
    w->in_tx = 1;
    w->tx_messages += b->n;
    rc = store_ingest(w->st, b->m, b->n, &stats, err);
    writer_spend(w, b);
    if (rc == LC_OK) w->inserted += stats.inserted;
    if (rc == LC_OK && w->tx_messages >= IMPORT_WRITER_TX_MESSAGES) rc = writer_commit(w, err);
    return rc;
}

static void writer_fail(import_writer *w, int rc, char *err)
{
    pthread_mutex_lock(&w->mu);
    if (w->rc == LC_OK) {
        w->rc = rc;
        w->err = err;
        err = NULL;
    }
    pthread_cond_signal(&w->room);
    pthread_mutex_unlock(&w->mu);
    free(err);
}

static void *writer_main(void *arg)
{
    import_writer *w = arg;
    int failed = 0;
    for (;;) {
        pthread_mutex_lock(&w->mu);
        while (!w->count && !w->closing) {
            w->writer_waits = 1;
            pthread_cond_wait(&w->more, &w->mu);
        }
        w->writer_waits = 0;
        if (!w->count) {
            pthread_mutex_unlock(&w->mu);
            break;
        }
        ingest_batch b = w->q[w->head];
        memset(&w->q[w->head], 0, sizeof w->q[w->head]);
        w->head = (w->head + 1) % IMPORT_WRITER_QUEUE;
        w->count--;
        w->queued -= b.n;
        if (w->reader_waits && w->count <= IMPORT_WRITER_QUEUE / 2 && w->queued <= IMPORT_WRITER_QUEUE_MESSAGES / 2)
            pthread_cond_signal(&w->room);
        pthread_mutex_unlock(&w->mu);
        if (failed) {
            writer_spend(w, &b);
            continue;
        }
        char *err = NULL;
        int rc = writer_write(w, &b, &err);
        if (rc != LC_OK) {
            writer_fail(w, rc, err);
            failed = 1;
        }
    }
    char *err = NULL;
    int rc = writer_commit(w, &err);
    if (rc != LC_OK) writer_fail(w, rc, err);
    else free(err);
    return NULL;
}

int import_writer_start(store *st, import_writer **out, char **err)
{
    import_writer *w = calloc(1, sizeof *w);
    *out = NULL;
    if (!w) return lc_errf(err, LC_NOMEM, "out of memory");
    w->st = st;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->more, NULL);
    pthread_cond_init(&w->room, NULL);
    if (pthread_create(&w->thread, NULL, writer_main, w) != 0) {
        pthread_cond_destroy(&w->room);
        pthread_cond_destroy(&w->more);
        pthread_mutex_destroy(&w->mu);
        free(w);
        return lc_errf(err, LC_ERR, "import: cannot start the store's writer thread");
    }
    *out = w;
    return LC_OK;
}

/* The writer's error for the caller: its message handed over once. Under mu, or after the join. */
static int writer_report(import_writer *w, char **err)
{
    if (w->err) {
        if (err) *err = w->err;
        else free(w->err);
        w->err = NULL;
    }
    return w->rc;
}

int import_writer_put(import_writer *w, ingest_batch *b, char **err)
{
    int rc;
    ingest_batch spent[IMPORT_WRITER_QUEUE + 1];
    size_t nspent;
    pthread_mutex_lock(&w->mu);
    nspent = w->nspent;
    memcpy(spent, w->spent, nspent * sizeof spent[0]);
    w->nspent = 0;
    pthread_mutex_unlock(&w->mu);
    for (size_t i = 0; i < nspent; i++) ingest_batch_free(&spent[i]);
    pthread_mutex_lock(&w->mu);
    while ((w->count == IMPORT_WRITER_QUEUE || w->queued >= IMPORT_WRITER_QUEUE_MESSAGES) && w->rc == LC_OK) {
        w->reader_waits = 1;
        pthread_cond_wait(&w->room, &w->mu);
    }
    w->reader_waits = 0;
    if ((rc = writer_report(w, err)) == LC_OK) {
        w->q[(w->head + w->count) % IMPORT_WRITER_QUEUE] = *b;
        w->count++;
        w->queued += b->n;
        memset(b, 0, sizeof *b);
        if (w->writer_waits) pthread_cond_signal(&w->more);
    }
    pthread_mutex_unlock(&w->mu);
    ingest_batch_free(b);
    return rc;
}

int import_writer_finish(import_writer *w, size_t *inserted, char **err)
{
    if (inserted) *inserted = 0;
    if (!w) return LC_OK;
    pthread_mutex_lock(&w->mu);
    w->closing = 1;
    pthread_cond_signal(&w->more);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
    int rc = writer_report(w, err);
    if (inserted) *inserted = w->inserted;
    for (size_t i = 0; i < IMPORT_WRITER_QUEUE; i++) ingest_batch_free(&w->q[i]);
    for (size_t i = 0; i < w->nspent; i++) ingest_batch_free(&w->spent[i]);
    pthread_cond_destroy(&w->room);
    pthread_cond_destroy(&w->more);
    pthread_mutex_destroy(&w->mu);
    free(w);
    return rc;
}
