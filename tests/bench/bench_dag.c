/* bench_dag.c -- compaction throughput of the DAG with the extractive summarizer.
 *
 *   build/bench/bench_dag [source_tokens] [leaf_chunk_tokens] [summary_tokens] [block_budget]
 *
 * Ingests a seeded synthetic session into a temporary store, runs one compaction pass
 * (leaves + condensation, fresh tail 20,000 tokens) and prints source tokens per second
 * (wall clock of the pass, SQLite writes included), the leaf compression ratio (source /
 * leaf tokens) and the block ratio (source / pointer block tokens), and the peak RSS
 * after the ingest and after the pass (one process: the pass's own need is the increase).
 * Defaults: 1,000,000 / 20,000 / 1,200 / 8,000. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "dag.h"
#include "store.h"
#include "store_sqlite.h"
#include "summarize.h"
#include "util.h"

#include "prose.h"

int main(int argc, char **argv)
{
    bench_seed(0x9E3779B9UL);
    long source = argc > 1 ? atol(argv[1]) : 1000000;
    long chunk = argc > 2 ? atol(argv[2]) : 20000;
    long target = argc > 3 ? atol(argv[3]) : 1200;
    long budget = argc > 4 ? atol(argv[4]) : 8000;
    char home[64], *err = NULL;
    snprintf(home, sizeof home, "/tmp/lc-bench-dag-XXXXXX");
    if (!mkdtemp(home)) return 1;
    store *st = NULL;
    if (store_open(home, "bench", "/w", &st, &err) != LC_OK) {
        fprintf(stderr, "bench_dag: %s\n", err);
        return 1;
    }
    long written = 0;
    int i = 0;
    double t0 = lc_now_ms();
    while (written < source) {
        sbuf text = {0};
        int words = 200 + (int)(bench_next() % 400);
        for (int w = 0; w < words; w++) {
            sb_puts(&text, bench_words[bench_next() % BENCH_N_WORDS]);
            sb_puts(&text, (w % 12 == 11) ? ". " : " ");
        }
        if (i % 7 == 0) sb_printf(&text, "Decided: keep src/mod%d.c. Remember N%02d=%u. ", i, i % 100, 1000 + bench_next() % 9000);
        cJSON *m = cJSON_CreateObject();
        cJSON_AddStringToObject(m, "role", i % 2 ? "assistant" : "user");
        cJSON_AddStringToObject(m, "content", text.p);
        char *json = cJSON_PrintUnformatted(m), id[32];
        snprintf(id, sizeof id, "b%06d", i++);
        store_msg sm = {id, json, strlen(json), NULL};
        if (store_ingest(st, &sm, 1, NULL, &err) != LC_OK) return 1;
        written += (long)summ_estimate_tokens(text.p);
        free(json);
        cJSON_Delete(m);
        sb_free(&text);
    }
    double t_ingest = lc_now_ms() - t0;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    long rss_ingest = ru.ru_maxrss;
    static const char *const chain[] = {"extractive"};
    summ_config cfg = {.chain = chain, .n_chain = 1};
    summ_ctx *sc = NULL;
    if (summ_create(&cfg, &sc, &err) != LC_OK) return 1;
    dag_opts o = {.keep_recent_tokens = 20000, .leaf_chunk_tokens = chunk, .summary_tokens = target,
                  .block_budget = budget, .flush = 1};
    dag_stats s;
    t0 = lc_now_ms();
    if (dag_pass(st, sc, &o, &s, &err) != LC_OK) {
        fprintf(stderr, "bench_dag: %s\n", err);
        return 1;
    }
    double ms = lc_now_ms() - t0;
    long leaf_tokens = 0;
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(store_db(st), "SELECT sum(tokens) FROM summaries WHERE kind = 'leaf'", -1, &q, NULL) == SQLITE_OK &&
        sqlite3_step(q) == SQLITE_ROW)
        leaf_tokens = (long)sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    printf("bench_dag: %d messages, %ld tokens ingested in %.0f ms\n", i, written, t_ingest);
    printf("pass: %ld source tokens -> %d leaves + %d condensed in %.0f ms: %.0f source tokens/s\n",
           s.source_tokens, s.leaves, s.condensed, ms, ms > 0 ? (double)s.source_tokens * 1000.0 / ms : 0.0);
    printf("compression: leaves %.1fx (%ld -> %ld tokens), pointer block %.1fx (%ld tokens, budget %ld%s)\n",
           leaf_tokens ? (double)s.source_tokens / (double)leaf_tokens : 0.0, s.source_tokens, leaf_tokens,
           s.block_tokens ? (double)s.source_tokens / (double)s.block_tokens : 0.0, s.block_tokens, budget,
           s.stalled ? ", condensation-stalled" : "");
    getrusage(RUSAGE_SELF, &ru);
    printf("peak RSS after the ingest: %ld kB\n", rss_ingest);
    printf("peak RSS after the pass: %ld kB (+%ld kB)\n", ru.ru_maxrss, ru.ru_maxrss - rss_ingest);
    summ_free(sc);
    store_close(st);
    char cmd[96];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", home);
    return system(cmd) == 0 ? 0 : 1;
}
