/* bench_summarize.c -- extractive summarizer throughput and compression.
 *
 *   build/bench/bench_summarize [source_tokens] [chunk_tokens] [target_tokens]
 *
 * Generates a seeded synthetic session (prose, tool output, paths, and a needle
 * `Nxx=dddd` every ~5,000 tokens), summarizes it in leaf chunks with summ_extractive,
 * and prints source tokens per second, the compression ratio (source / summary tokens)
 * how many needles survived verbatim, and the process's peak RSS (one chunk in memory at
 * a time, so it is the summarizer's working set plus the chunk). Defaults: 1,000,000 / 20,000 / 1,200. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "summarize.h"
#include "util.h"

#include "prose.h"

int main(int argc, char **argv)
{
    bench_seed(0x2545F491UL);
    long total = argc > 1 ? atol(argv[1]) : 1000000;
    long chunk = argc > 2 ? atol(argv[2]) : 20000;
    long target = argc > 3 ? atol(argv[3]) : 1200;
    if (total <= 0 || chunk <= 0 || target <= 0) {
        fprintf(stderr, "usage: %s [source_tokens] [chunk_tokens] [target_tokens]\n", argv[0]);
        return 2;
    }
    long src_tokens = 0, out_tokens = 0, needles = 0, kept = 0, chunks = 0;
    double ms = 0;
    while (src_tokens < total) {
        sbuf b = {0};
        char planted[64][16];
        int n_planted = 0;
        while ((long)(b.len / 4) < chunk) {
            int kind = (int)(bench_next() % 10);
            if (kind == 0) {
                sb_printf(&b, "[toolCall read] {\"path\": \"src/mod%u/file%u.c\"}\n",
                          bench_next() % 40, bench_next() % 100);
            } else if (kind == 1) {
                sb_printf(&b, "error: test_%u failed at line %u\n", bench_next() % 500,
                          bench_next() % 2000);
            } else {
                int words = 8 + (int)(bench_next() % 20);
                for (int w = 0; w < words; w++)
                    sb_printf(&b, "%s%s", w ? " " : "", bench_words[bench_next() % BENCH_N_WORDS]);
                sb_puts(&b, ". ");
            }
            if (bench_next() % 400 == 0 && n_planted < 64) {
                snprintf(planted[n_planted], sizeof planted[0], "N%02ld=%04u",
                         (needles + n_planted) % 100, bench_next() % 10000);
                sb_printf(&b, "Remember %s for later. ", planted[n_planted]);
                n_planted++;
            }
        }
        if (b.oom) return 1;
        double t0 = lc_now_ms();
        char *sum = summ_extractive(b.p, (size_t)target, SUMM_DETAILS);
        ms += lc_now_ms() - t0;
        if (!sum) return 1;
        src_tokens += (long)summ_estimate_tokens(b.p);
        out_tokens += (long)summ_estimate_tokens(sum);
        for (int i = 0; i < n_planted; i++) kept += strstr(sum, planted[i]) != NULL;
        needles += n_planted;
        chunks++;
        free(sum);
        sb_free(&b);
    }
    double secs = ms / 1000.0;
    printf("bench_summarize: %ld source tokens in %ld chunks of %ld, target %ld\n", src_tokens,
           chunks, chunk, target);
    printf("  throughput: %.0f source tokens/s (%.3f s)\n",
           secs > 0 ? (double)src_tokens / secs : 0.0, secs);
    printf("  compression: %.1fx (%ld -> %ld tokens)\n",
           out_tokens ? (double)src_tokens / (double)out_tokens : 0.0, src_tokens, out_tokens);
    printf("  needles kept verbatim: %ld / %ld\n", kept, needles);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("  peak RSS: %ld kB\n", ru.ru_maxrss);
    return 0;
}
