/*
 * prose.h -- the seeded word stream bench_dag and bench_summarize build their synthetic
 * sessions from (header-only, each bench is one file): a 64-bit LCG whose seed each bench
 * sets with bench_seed, and the 28 words it picks from. Same seed, same text.
 */
#ifndef BENCH_PROSE_H
#define BENCH_PROSE_H

static unsigned long bench_rng;

static void bench_seed(unsigned long seed)
{
    bench_rng = seed;
}

static unsigned bench_next(void)
{
    bench_rng = bench_rng * 6364136223846793005UL + 1442695040888963407UL;
    return (unsigned)(bench_rng >> 33);
}

static const char *const bench_words[] = {
    "the", "build", "test", "passes", "after", "we", "changed", "parser", "cache", "store",
    "index", "summary", "node", "window", "request", "error", "output", "file", "function",
    "returns", "value", "because", "reads", "writes", "again", "model", "context", "tokens",
};

#define BENCH_N_WORDS (sizeof bench_words / sizeof bench_words[0])

#endif
