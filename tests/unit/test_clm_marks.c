/*
 * test_clm_marks.c -- incremental branch state for tree moves: the marks say exactly what
 * a full reading of the branch says, the walk to the common ancestor finds the entries
 * that left and came back, and it costs fetches in proportion to the distance moved, not
 * to the depth of the tree.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "clm_marks.h"
#include "clm_revision.h"
#include "util.h"
#include "test_main.h"

#define DIGEST "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

/* ---- a fake session tree: entries by id, with a fetch counter ---- */

typedef struct tree {
    cJSON *entries[20000];
    size_t n;
    unsigned long fetches;
    const char *missing;   /* fetching this id fails */
} tree;

static const char *tree_add(tree *t, const char *id, const char *parent, const char *json_rest)
{
    char *s = lc_asprintf("{\"id\":\"%s\",\"parentId\":%s%s%s,%s}", id, parent ? "\"" : "",
                          parent ? parent : "null", parent ? "\"" : "", json_rest);
    cJSON *e = cJSON_Parse(s);
    assert_non_null(e);
    free(s);
    t->entries[t->n++] = e;
    return cJSON_GetStringValue(cJSON_GetObjectItem(e, "id"));
}

static int tree_fetch(void *ud, const char *id, cJSON **out, char **err)
{
    tree *t = ud;
    t->fetches++;
    if (t->missing && strcmp(id, t->missing) == 0)
        return lc_errf(err, LC_NOTFOUND, "no entry %s", id);
    for (size_t i = t->n; i-- > 0;) {
        if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(t->entries[i], "id")), id) == 0) {
            *out = cJSON_Duplicate(t->entries[i], 1);
            return LC_OK;
        }
    }
    return lc_errf(err, LC_NOTFOUND, "no entry %s", id);
}

static void tree_free(tree *t)
{
    for (size_t i = 0; i < t->n; i++) cJSON_Delete(t->entries[i]);
}

static const char MSG[] = "\"type\":\"message\",\"message\":{\"role\":\"user\",\"content\":\"x\"}";

/* The accept entry of revision `rev` (a number literal). */
#define ACCEPT(rev)                                                                            \
    "\"type\":\"custom\",\"customType\":\"live-context-state\",\"data\":{"                     \
    "\"kind\":\"accept\",\"version\":1,\"revision\":" #rev ",\"anchorCount\":1,"               \
    "\"anchorDigest\":\"" DIGEST "\",\"messages\":[{\"role\":\"user\","                        \
    "\"content\":\"rev " #rev "\"}]}"

static const char REJECT[] = "\"type\":\"custom\",\"customType\":\"live-context-state\",\"data\":"
                             "{\"kind\":\"reject\",\"version\":1,\"revision\":7,\"reason\":\"x\"}";
static const char TOGGLE_OFF[] = "\"type\":\"custom\",\"customType\":\"live-context-state\","
                                 "\"data\":{\"kind\":\"toggle\",\"version\":1,\"enabled\":false}";
static const char RESET3[] = "\"type\":\"custom\",\"customType\":\"live-context-state\",\"data\":"
                             "{\"kind\":\"reset\",\"version\":1,\"revision\":3,\"anchorCount\":0,"
                             "\"anchorDigest\":\"" DIGEST "\",\"messages\":[]}";
static const char SETTINGS[] = "\"type\":\"custom\",\"customType\":\"live-context-settings\","
                               "\"data\":{\"budget\":\"50000\"}";
static const char COMPACTION[] = "\"type\":\"compaction\",\"summary\":\"s\"";
static const char MALFORMED[] = "\"type\":\"custom\",\"customType\":\"live-context-state\","
                                "\"data\":{\"revision\":9}";

/* Marks and the full reading agree on every prefix of a branch mixing every kind. */
static void test_marks_summary_agrees_with_full_reconstruction_on_every_prefix(void **state)
{
    (void)state;
    const char *rests[] = {MSG, ACCEPT(1), REJECT, MSG, ACCEPT(2), TOGGLE_OFF, SETTINGS,
                           COMPACTION, MSG, ACCEPT(4), MALFORMED, RESET3, MSG};
    size_t nr = sizeof rests / sizeof *rests;
    for (size_t upto = 0; upto <= nr; upto++) {
        tree t = {0};
        clm_marks m = {0};
        sbuf b = {0};
        sb_puts(&b, "[");
        char prev[16] = "";
        for (size_t i = 0; i < upto; i++) {
            char id[16];
            snprintf(id, sizeof id, "e%zu", i);
            tree_add(&t, id, i ? prev : NULL, rests[i]);
            char *s = cJSON_PrintUnformatted(t.entries[i]);
            sb_printf(&b, "%s%s", i ? "," : "", s);
            free(s);
            assert_int_equal(clm_marks_push_entry(&m, t.entries[i]), LC_OK);
            memcpy(prev, id, sizeof id);
        }
        sb_puts(&b, "]");
        clm_branch_state st;
        char *err = NULL;
        assert_int_equal(clm_branch_reconstruct(b.p, b.len, &st, &err), LC_OK);
        clm_marks_view v;
        clm_marks_summarize(&m, &v);
        assert_int_equal(v.in_force != NULL, st.has_revision);
        if (v.in_force) assert_int_equal(v.in_force->revision, st.rev.revision);
        else assert_string_equal(v.why, st.why);
        assert_int_equal(v.last_revision, st.last_revision);
        assert_int_equal(v.enabled, st.enabled);
        assert_int_equal(v.malformed, st.malformed);
        clm_branch_state_free(&st);
        clm_marks_free(&m);
        sb_free(&b);
        tree_free(&t);
    }
}

static void test_marks_count_accepts_rejects_and_find_newest_settings(void **state)
{
    (void)state;
    clm_marks m = {0};
    clm_marks_view v;
    assert_int_equal(clm_marks_push(&m, "a", CLM_MARK_ACCEPT, 1, 1), LC_OK);
    assert_int_equal(clm_marks_push(&m, "s1", CLM_MARK_SETTINGS, -1, 1), LC_OK);
    assert_int_equal(clm_marks_push(&m, "r", CLM_MARK_REJECT, 1, 1), LC_OK);
    assert_int_equal(clm_marks_push(&m, "s2", CLM_MARK_SETTINGS, -1, 1), LC_OK);
    assert_int_equal(clm_marks_push(&m, "r2", CLM_MARK_REJECT, 1, 1), LC_OK);
    clm_marks_summarize(&m, &v);
    assert_int_equal(v.accepted, 1);
    assert_int_equal(v.rejected, 2);
    assert_string_equal(v.settings->id, "s2");
    assert_string_equal(v.in_force->id, "a");
    assert_int_equal(clm_marks_push(&m, NULL, CLM_MARK_ACCEPT, 2, 1), LC_INVALID);
    clm_marks_free(&m);
}

/*   r - a - b - c (old leaf)
 *           \
 *            d - e (new leaf) */
static void build_fork(tree *t)
{
    tree_add(t, "r", NULL, MSG);
    tree_add(t, "a", "r", MSG);
    tree_add(t, "b", "a", MSG);
    tree_add(t, "c", "b", MSG);
    tree_add(t, "d", "b", MSG);
    tree_add(t, "e", "d", MSG);
}

/* The move from `from` to `to` in t: it forks at `ancestor` (NULL: none), brings `came`
 * entries and leaves `left`. */
static clm_tree_move moved(tree *t, const char *from, const char *to, const char *ancestor,
                           size_t came, size_t left)
{
    clm_tree_move mv;
    char *err = NULL;
    assert_int_equal(clm_tree_diff(from, to, tree_fetch, t, &mv, &err), LC_OK);
    if (ancestor) assert_string_equal(mv.ancestor, ancestor);
    else assert_null(mv.ancestor);
    assert_int_equal(mv.n_came, came);
    assert_int_equal(mv.n_left, left);
    return mv;
}

static void test_tree_diff_finds_the_fork_point_and_both_paths(void **state)
{
    (void)state;
    tree t = {0};
    build_fork(&t);
    clm_tree_move mv = moved(&t, "c", "e", "b", 2, 1);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(mv.came[0], "id")), "d");
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(mv.came[1], "id")), "e");
    assert_true(clm_tree_left(&mv, "c"));
    assert_false(clm_tree_left(&mv, "b"));
    assert_false(clm_tree_left(&mv, "d"));
    clm_tree_move_free(&mv);
    tree_free(&t);
}

static void test_tree_diff_up_to_an_ancestor_and_back_down(void **state)
{
    (void)state;
    tree t = {0};
    build_fork(&t);
    /* Up: e -> a leaves d and e, brings nothing. */
    clm_tree_move mv = moved(&t, "e", "a", "a", 0, 3);
    assert_true(clm_tree_left(&mv, "e") && clm_tree_left(&mv, "d") && clm_tree_left(&mv, "b"));
    clm_tree_move_free(&mv);
    /* Down: a -> c brings b and c, leaves nothing. */
    mv = moved(&t, "a", "c", "a", 2, 0);
    clm_tree_move_free(&mv);
    /* Standing still changes nothing. */
    mv = moved(&t, "c", "c", "c", 0, 0);
    clm_tree_move_free(&mv);
    /* Before the first entry: everything left, no common ancestor. */
    mv = moved(&t, "c", NULL, NULL, 0, 4);
    clm_tree_move_free(&mv);
    tree_free(&t);
}

static void test_tree_diff_fetches_in_proportion_to_distance_not_depth(void **state)
{
    (void)state;
    tree *t = calloc(1, sizeof *t);
    char id[16], prev[16] = "";
    for (int i = 0; i < 10000; i++) {
        snprintf(id, sizeof id, "m%d", i);
        tree_add(t, id, i ? prev : NULL, MSG);
        memcpy(prev, id, sizeof id);
    }
    /* A side branch of 3 entries off m9990; the old leaf is m9999 (9 past the fork). */
    tree_add(t, "x1", "m9990", MSG);
    tree_add(t, "x2", "x1", MSG);
    tree_add(t, "x3", "x2", MSG);
    t->fetches = 0;
    clm_tree_move mv = moved(t, "m9999", "x3", "m9990", 3, 9);
    assert_true(t->fetches <= 2 * (9 + 3) + 2);
    clm_tree_move_free(&mv);
    tree_free(t);
    free(t);
}

static void test_tree_diff_reports_an_entry_it_cannot_fetch(void **state)
{
    (void)state;
    tree t = {0};
    clm_tree_move mv;
    char *err = NULL;
    build_fork(&t);
    t.missing = "d";
    assert_int_equal(clm_tree_diff("c", "e", tree_fetch, &t, &mv, &err), LC_NOTFOUND);
    assert_non_null(strstr(err, "no entry d"));
    assert_null(mv.came);
    free(err);
    tree_free(&t);
}

/* Moving from a branch with revision 2 to a sibling with revision 1: revision 2's marks
 * pop, the sibling's push, and the summary names the sibling's revision. */
static void test_marks_move_swaps_the_revision_of_a_sibling_branch(void **state)
{
    (void)state;
    tree t = {0};
    clm_marks m = {0};
    clm_tree_move mv;
    clm_marks_view v;
    char *err = NULL;
    tree_add(&t, "r", NULL, MSG);
    tree_add(&t, "s", "r", SETTINGS);
    tree_add(&t, "p", "s", MSG);
    tree_add(&t, "rev2", "p", ACCEPT(2));
    tree_add(&t, "q", "rev2", MSG);
    tree_add(&t, "rev1", "p", ACCEPT(1));
    tree_add(&t, "off", "rev1", TOGGLE_OFF);
    for (size_t i = 0; i < 5; i++) assert_int_equal(clm_marks_push_entry(&m, t.entries[i]), LC_OK);
    clm_marks_summarize(&m, &v);
    assert_int_equal(v.in_force->revision, 2);
    assert_int_equal(clm_tree_diff("q", "off", tree_fetch, &t, &mv, &err), LC_OK);
    size_t changed = 0;
    assert_int_equal(clm_marks_move(&m, &mv, &changed), LC_OK);
    assert_int_equal(changed, 3); /* rev2 popped; rev1 and the toggle pushed */
    clm_marks_summarize(&m, &v);
    assert_string_equal(v.in_force->id, "rev1");
    assert_int_equal(v.enabled, 0);
    assert_string_equal(v.settings->id, "s");
    assert_int_equal(v.last_revision, 1);
    clm_tree_move_free(&mv);
    /* And back: the toggle and rev1 leave, rev2 returns. */
    assert_int_equal(clm_tree_diff("off", "q", tree_fetch, &t, &mv, &err), LC_OK);
    assert_int_equal(clm_marks_move(&m, &mv, NULL), LC_OK);
    clm_marks_summarize(&m, &v);
    assert_string_equal(v.in_force->id, "rev2");
    assert_int_equal(v.enabled, 1);
    assert_int_equal(m.n, 2);
    clm_tree_move_free(&mv);
    clm_marks_free(&m);
    tree_free(&t);
}

TEST_MAIN(
    cmocka_unit_test(test_marks_summary_agrees_with_full_reconstruction_on_every_prefix),
    cmocka_unit_test(test_marks_count_accepts_rejects_and_find_newest_settings),
    cmocka_unit_test(test_tree_diff_finds_the_fork_point_and_both_paths),
    cmocka_unit_test(test_tree_diff_up_to_an_ancestor_and_back_down),
    cmocka_unit_test(test_tree_diff_fetches_in_proportion_to_distance_not_depth),
    cmocka_unit_test(test_tree_diff_reports_an_entry_it_cannot_fetch),
    cmocka_unit_test(test_marks_move_swaps_the_revision_of_a_sibling_branch),
)
