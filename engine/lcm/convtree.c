/*
 * convtree.c -- the conversations a transcript ends on (convtree.h): the chains from each
 * conversation's last entry, closed under "same model response" and "answers a live call".
 * O(n): each entry becomes live once and is looked at from a work list once.
 */
#include "convtree.h"

#include <stdlib.h>

#include "util.h"

typedef struct ct {
    const convtree_node *v;
    size_t n;
    unsigned char *live;
    long *work;     /* entries made live whose links are still to follow */
    size_t nwork;
} ct;

/* x and its ancestors live; each newly live one queued. */
static void ct_take(ct *c, long x)
{
    for (; x >= 0 && !c->live[x]; x = c->v[x].parent) {
        c->live[x] = 1;
        c->work[c->nwork++] = x;
    }
}

int convtree_live(const convtree_node *v, size_t n, unsigned char *live, char **err)
{
    ct c = {v, n, live, NULL, 0};
    long *leaf = NULL, *same_head = NULL, *same_next = NULL, *ans_head = NULL, *ans_next = NULL;
    long main_leaf = -1;
    int rc = LC_OK;
    for (size_t i = 0; i < n; i++) live[i] = 0;
    if (n == 0) return LC_OK;
    c.work = malloc(n * sizeof *c.work);
    leaf = malloc(n * sizeof *leaf);
    same_head = malloc(n * sizeof *same_head);
    same_next = malloc(n * sizeof *same_next);
    ans_head = malloc(n * sizeof *ans_head);
    ans_next = malloc(n * sizeof *ans_next);
    if (!c.work || !leaf || !same_head || !same_next || !ans_head || !ans_next) {
        rc = lc_errf(err, LC_NOMEM, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < n; i++) leaf[i] = same_head[i] = ans_head[i] = -1;
    /* Each conversation's end: its entry latest in the file (an orphan, whose parent has
     * not been written yet, ends nothing). */
    for (size_t i = 0; i < n; i++) {
        const convtree_node *e = &v[i];
        long g = e->group;
        if (e->same_as >= 0 && (size_t)e->same_as < n) {
            same_next[i] = same_head[e->same_as];
            same_head[e->same_as] = (long)i;
        }
        if (e->answers >= 0 && (size_t)e->answers < n) {
            ans_next[i] = ans_head[e->answers];
            ans_head[e->answers] = (long)i;
        }
        if (e->orphan) continue;
        if (g < 0) {
            if (main_leaf < 0 || e->seq >= v[main_leaf].seq) main_leaf = (long)i;
        } else if ((size_t)g < n && (leaf[g] < 0 || e->seq >= v[leaf[g]].seq)) {
            leaf[g] = (long)i;
        }
    }
    ct_take(&c, main_leaf);
    for (size_t g = 0; g < n; g++) ct_take(&c, leaf[g]);
    while (c.nwork > 0) {
        long x = c.work[--c.nwork];
        /* the other parts of its line */
        for (long y = x - 1; y >= 0 && v[y].seq == v[x].seq; y--) ct_take(&c, y);
        for (long y = x + 1; (size_t)y < n && v[y].seq == v[x].seq; y++) ct_take(&c, y);
        /* the rest of its model response, both ways */
        if (v[x].same_as >= 0 && (size_t)v[x].same_as < n) ct_take(&c, v[x].same_as);
        for (long y = same_head[x]; y >= 0; y = same_next[y]) ct_take(&c, y);
        /* the results of the calls it made */
        for (long y = ans_head[x]; y >= 0; y = ans_next[y]) ct_take(&c, y);
    }
done:
    free(c.work);
    free(leaf);
    free(same_head);
    free(same_next);
    free(ans_head);
    free(ans_next);
    return rc;
}
