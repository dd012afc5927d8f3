/*
 * bench_writers.c -- the throughput of concurrent writers on one store backend: WRITERS
 * processes, each its own agent session, ingest MSGS messages apiece in 2-message turns at
 * once (as that many hosts would; each turn's call starts at the previous turn's last
 * message, as the plugin's ingest_request does). On the embedded backend each session is its own SQLite
 * file under one agent home; with LCM_STORE_URL set every writer writes one PostgreSQL
 * database. Prints the aggregate and the slowest writer's rate, and how many turns failed
 * (a "database is locked" or a lost connection counts; the figure the issue asks for is
 * zero failures at the highest rate).
 * With BENCH_WRITERS_WARM=1 the same writers run twice, each round into sessions of its own:
 * a cold round (a fresh server's first touch of its shared memory and its first WAL
 * segments are paid inside it) and then a warm one, the store as it runs once in use; both
 * are printed, the warm one last.
 * Usage: bench_writers [WRITERS (default 8)] [MSGS (default 5000)]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/wait.h>
#include <unistd.h>

#include "corpus.h"
#include "store.h"
#include "util.h"

/* One writer: its own connection, its own session; the result travels through a pipe. */
static void writer_run(const char *home, int round, int k, const corpus *c, int out_fd)
{
    char sid[32], line[96], *err = NULL;
    snprintf(sid, sizeof sid, "writer-%d-%d-%d", round, k, (int)getpid());
    store *s = NULL;
    size_t failed = 0;
    double t0 = lc_now_ms();
    if (store_open_wait(home, sid, "/bench", 30000, &s, &err) != LC_OK) {
        fprintf(stderr, "writer %d: open: %s\n", k, err ? err : "?");
        failed = c->n;
    } else {
        for (size_t i = 0; i < c->n; i += 2) {
            size_t n = i + 2 < c->n ? 2 : c->n - i;
            /* As the plugin calls it every turn (ingest_request): from the previous turn's
             * last message, which the store wrote, so its walk back stops there. */
            size_t from = i ? i - 1 : 0;
            if (store_ingest(s, c->m + from, n + (i - from), NULL, &err) != LC_OK) {
                if (!failed) fprintf(stderr, "writer %d: ingest: %s\n", k, err ? err : "?");
                failed++;
                free(err);
                err = NULL;
            }
        }
        store_close(s);
    }
    free(err);
    int len = snprintf(line, sizeof line, "%.3f %zu\n", lc_now_ms() - t0, failed);
    if (write(out_fd, line, (size_t)len) != len) _exit(2);
}

/* One round: `writers` writers at once; prints its line (labelled `label`, may be "") and
 * returns nonzero when a writer failed or did not report. */
static int writers_round(const char *home, int round, int writers, size_t msgs, const corpus *c, size_t bytes,
                         const char *label)
{
    int fds[64];
    pid_t pids[64];
    double t0 = lc_now_ms();
    for (int k = 0; k < writers; k++) {
        int p[2];
        if (pipe(p) != 0) return 1;
        pids[k] = fork();
        if (pids[k] < 0) return 1;
        if (pids[k] == 0) {
            close(p[0]);
            writer_run(home, round, k, c, p[1]);
            _exit(0);
        }
        close(p[1]);
        fds[k] = p[0];
    }
    double slowest = 0;
    size_t failed = 0;
    int status = 0;
    for (int k = 0; k < writers; k++) {
        char line[96] = {0};
        ssize_t got = read(fds[k], line, sizeof line - 1);
        close(fds[k]);
        int ws = 0;
        waitpid(pids[k], &ws, 0);
        double ms = 0;
        size_t f = 0;
        if (got <= 0 || sscanf(line, "%lf %zu", &ms, &f) != 2 || !WIFEXITED(ws) || WEXITSTATUS(ws)) {
            fprintf(stderr, "writer %d did not report\n", k);
            status = 1;
            continue;
        }
        if (ms > slowest) slowest = ms;
        failed += f;
    }
    double wall = lc_now_ms() - t0;
    const char *backend = getenv("LCM_STORE_URL") && *getenv("LCM_STORE_URL") ? "PostgreSQL" : "SQLite";
    printf("%s%d concurrent writers on %s (%zu msgs each, 2 per call): %.0f msgs/s in all, %.1f MB/s of "
           "message JSON; slowest writer %.0f msgs/s; %zu failed turns\n",
           label, writers, backend, msgs, (double)msgs * writers / (wall / 1e3),
           (double)bytes * writers / 1e6 / (wall / 1e3), (double)msgs / (slowest / 1e3), failed);
    fflush(stdout);
    return status || failed ? 1 : 0;
}

int main(int argc, char **argv)
{
    int writers = argc > 1 ? atoi(argv[1]) : 8;
    size_t msgs = argc > 2 ? strtoul(argv[2], NULL, 10) : 5000;
    if (writers < 1 || writers > 64 || msgs < 2) {
        fprintf(stderr, "usage: bench_writers [WRITERS 1..64] [MSGS >= 2]\n");
        return 2;
    }
    char home[] = "/tmp/lc-bench-writers-XXXXXX";
    if (!mkdtemp(home)) return 1;
    corpus c = {0};
    corpus_make(&c, msgs);
    size_t bytes = 0;
    for (size_t i = 0; i < c.n; i++) bytes += c.m[i].json_len;

    int status = 0;
    const char *warm = getenv("BENCH_WRITERS_WARM");
    if (warm && strcmp(warm, "1") == 0) {
        status = writers_round(home, 0, writers, msgs, &c, bytes, "cold: ");
        if (!status) status = writers_round(home, 1, writers, msgs, &c, bytes, "warm: ");
    } else {
        status = writers_round(home, 0, writers, msgs, &c, bytes, "");
    }
    corpus_free(&c);
    char *rm = lc_asprintf("rm -rf '%s'", home);
    if (rm && system(rm) != 0) status = 1;
    free(rm);
    return status;
}
