/*
 * clihelp.c -- did-you-mean and the option check of the `lcm` verbs (see clihelp.h).
 */
#include "clihelp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Optimal string alignment distance over bytes; words here are short ASCII names. */
size_t clihelp_distance(const char *a, const char *b)
{
    size_t n = strlen(a), m = strlen(b);
    if (n > 64 || m > 64) return n > m ? n : m;
    size_t d[65][65];
    for (size_t i = 0; i <= n; i++) d[i][0] = i;
    for (size_t j = 0; j <= m; j++) d[0][j] = j;
    for (size_t i = 1; i <= n; i++)
        for (size_t j = 1; j <= m; j++) {
            size_t cost = a[i - 1] != b[j - 1];
            size_t best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best) best = d[i][j - 1] + 1;
            if (d[i - 1][j - 1] + cost < best) best = d[i - 1][j - 1] + cost;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    return d[n][m];
}

const char *clihelp_nearest(const char *word, const char *const *cands, size_t n)
{
    const char *best = NULL, *started = NULL;
    size_t best_d = (size_t)-1, len = strlen(word), starts = 0;
    for (size_t i = 0; i < n; i++) {
        size_t d = clihelp_distance(word, cands[i]);
        if (d < best_d) best_d = d, best = cands[i];
        if (len >= 2 && !strncmp(cands[i], word, len)) starts++, started = cands[i];
    }
    if (best && best_d <= 2 && best_d * 2 < len) return best;
    return starts == 1 ? started : NULL;
}

/* The options of a list, one at a time: *p moves past each; the name (without '=') into buf. */
static int clihelp_next(const char **p, char *buf, size_t cap, int *value)
{
    while (**p == ' ') (*p)++;
    if (!**p) return 0;
    size_t n = strcspn(*p, " ");
    *value = n && (*p)[n - 1] == '=';
    size_t name = n - (size_t)*value;
    snprintf(buf, cap, "%.*s", (int)name, *p);
    *p += n;
    return 1;
}

int clihelp_takes(const char *opts, const char *opt, int *value)
{
    char name[64];
    int v = 0;
    for (const char *p = opts; clihelp_next(&p, name, sizeof name, &v);)
        if (!strcmp(name, opt)) {
            if (value) *value = v;
            return 1;
        }
    return 0;
}

const char *clihelp_nearest_opt(const char *opts, const char *opt, char *buf, size_t cap)
{
    char name[64];
    const char *cands[64];
    char store[64][64];
    size_t n = 0;
    int v;
    for (const char *p = opts; n < 64 && clihelp_next(&p, name, sizeof name, &v); n++) {
        snprintf(store[n], sizeof store[n], "%s", name + 2);
        cands[n] = store[n];
    }
    const char *w = !strncmp(opt, "--", 2) ? opt + 2 : opt;
    const char *near = clihelp_nearest(w, cands, n);
    if (!near) return NULL;
    snprintf(buf, cap, "--%s", near);
    return buf;
}

int clihelp_check(const char *verb, const char *opts, int argc, char **argv, int from)
{
    for (int i = from; i < argc; i++) {
        const char *a = argv[i];
        int value = 0;
        char near[72];
        if (!strcmp(a, "--")) return 0;
        if (strncmp(a, "--", 2) != 0) continue;
        if (!clihelp_takes(opts, a, &value)) {
            const char *eq = strchr(a, '=');
            char name[64];
            snprintf(name, sizeof name, "%.*s", eq ? (int)(eq - a) : 0, a);
            if (eq && clihelp_takes(opts, name, &value) && value) {
                fprintf(stderr, "lcm %s: %s takes its value after a space: %s %s\n", verb, name, name, eq + 1);
                return 2;
            }
            const char *s = clihelp_nearest_opt(opts, a, near, sizeof near);
            fprintf(stderr, "lcm %s: unknown option %s%s%s%s (lcm %s --help lists them)\n", verb, a,
                    s ? " (did you mean " : "", s ? s : "", s ? "?)" : "", verb);
            return 2;
        }
        if (!value) continue;
        /* the next word is the value, unless there is none or it is another option */
        if (i + 1 >= argc || (!strncmp(argv[i + 1], "--", 2) && clihelp_takes(opts, argv[i + 1], NULL))) {
            fprintf(stderr, "lcm %s: %s needs a value (lcm %s --help)\n", verb, a, verb);
            return 2;
        }
        i++;
    }
    return 0;
}
