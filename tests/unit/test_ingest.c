/* test_ingest.c -- the ingest policy (engine/lcm/ingest.c): a message entry stored byte for byte,
 * the messages the host builds for other entries, the id set, batches, a tree move walked
 * only as far as it moved (left side stored and marked, joined side cleared), the unstored
 * tail of a branch, messages on no branch, and the O(new) request ingest. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "ingest.h"
#include "store.h"
#include "util.h"

#include "temp_home.h"
#include "store_fx.h"

/* ---- a host tree in memory ---------------------------------------------------------------- */

typedef struct fake_entry {
    const char *id, *parent, *type;
    const char *text; /* the message's text; NULL: a non-message entry */
} fake_entry;

typedef struct fake_host {
    const fake_entry *v;
    size_t n;
    int reads;
} fake_host;

static char *fake_text(const fake_entry *e)
{
    if (e->text)
        return lc_asprintf("{\"type\":\"%s\",\"id\":\"%s\",\"parentId\":%s%s%s,\"message\":"
                           "{\"role\":\"user\",\"content\":\"%s\",\"n\":1.50}}",
                           e->type, e->id, e->parent ? "\"" : "", e->parent ? e->parent : "null",
                           e->parent ? "\"" : "", e->text);
    return lc_asprintf("{\"type\":\"%s\",\"id\":\"%s\",\"parentId\":%s%s%s}", e->type, e->id,
                       e->parent ? "\"" : "", e->parent ? e->parent : "null", e->parent ? "\"" : "");
}

static int fake_get(void *ud, const char *id, char **text, char **err)
{
    fake_host *h = ud;
    h->reads++;
    for (size_t i = 0; i < h->n; i++)
        if (strcmp(h->v[i].id, id) == 0) {
            *text = fake_text(&h->v[i]);
            return LC_OK;
        }
    return lc_errf(err, LC_NOTFOUND, "no entry %s", id);
}

/* The host's JSON array of the entries named (root to leaf). */
static cJSON *fake_array(const fake_host *h, const char *const *ids, size_t n)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < h->n; k++)
            if (strcmp(h->v[k].id, ids[i]) == 0) {
                char *t = fake_text(&h->v[k]);
                cJSON_AddItemToArray(a, cJSON_Parse(t));
                free(t);
            }
    return a;
}

/* r - a1 - a2 - a3 (old branch), r - b1 - b2 (new branch); c is a custom entry under r. */
static const fake_entry tree[] = {
    {"r", NULL, "message", "root"},     {"a1", "r", "message", "left one"},
    {"a2", "a1", "message", "left two"}, {"a3", "a2", "message", "left three"},
    {"b1", "r", "message", "right one"}, {"b2", "b1", "message", "right two"},
    {"c", "r", "custom", NULL},
};

static int stored(store *st, const char *id, int *removed)
{
    store_row row = {0};
    int found = store_get_message(st, id, &row, NULL) == LC_OK;
    if (removed) *removed = row.removed;
    store_row_free(&row);
    return found;
}

/* ---- entries and their messages ----------------------------------------------------------- */

static void test_entry_message_is_the_entry_bytes_exactly(void **state)
{
    (void)state;
    const char *t = "{\"type\":\"message\",\"id\":\"x\",\"message\":{\"role\":\"user\",\"n\":1.50,\"s\":\"\\u00e9\"}}";
    char *m = ingest_entry_message(t, strlen(t));
    assert_string_equal(m, "{\"role\":\"user\",\"n\":1.50,\"s\":\"\\u00e9\"}");
    free(m);
}

static void test_entry_message_is_null_for_other_entries_and_non_objects(void **state)
{
    (void)state;
    const char *custom = "{\"type\":\"custom\",\"id\":\"x\",\"message\":{\"role\":\"user\"}}";
    const char *str = "{\"type\":\"message\",\"id\":\"x\",\"message\":\"text\"}";
    assert_null(ingest_entry_message(custom, strlen(custom)));
    assert_null(ingest_entry_message(str, strlen(str)));
    assert_null(ingest_entry_message("not json", 8));
}

static void test_context_message_builds_what_the_host_builds(void **state)
{
    (void)state;
    const char *cm = "{\"type\":\"custom_message\",\"id\":\"x\",\"customType\":\"note\",\"content\":\"hi\"}";
    const char *bs = "{\"type\":\"branch_summary\",\"id\":\"y\",\"summary\":\"went left\",\"fromId\":\"a\"}";
    const char *nobs = "{\"type\":\"branch_summary\",\"id\":\"y\"}";
    const char *cp = "{\"type\":\"compaction\",\"id\":\"z\",\"summary\":\"so far\",\"tokensBefore\":900}";
    const char *msg = "{\"type\":\"message\",\"id\":\"m\",\"message\":{\"role\":\"user\",\"n\":2.0}}";
    const char *texts[] = {cm, bs, cp, msg};
    const char *want[] = {
        "{\"role\":\"custom\",\"customType\":\"note\",\"content\":\"hi\",\"display\":true,\"timestamp\":7}",
        "{\"role\":\"branchSummary\",\"summary\":\"went left\",\"fromId\":\"a\",\"timestamp\":7}",
        "{\"role\":\"compactionSummary\",\"summary\":\"so far\",\"tokensBefore\":900,\"timestamp\":7}",
        "{\"role\":\"user\",\"n\":2.0}",
    };
    for (size_t i = 0; i < 4; i++) {
        cJSON *root = cJSON_Parse(texts[i]);
        char *m = ingest_context_message(root, texts[i], strlen(texts[i]), 7);
        assert_string_equal(m, want[i]);
        free(m);
        cJSON_Delete(root);
    }
    cJSON *root = cJSON_Parse(nobs);
    assert_null(ingest_context_message(root, nobs, strlen(nobs), 7));
    cJSON_Delete(root);
}

/* ---- the id set and batches --------------------------------------------------------------- */

static void test_idset_finds_every_id_at_its_position_across_growth(void **state)
{
    (void)state;
    ingest_idset s = {0};
    char id[32];
    for (int i = 0; i < 1000; i++) {
        snprintf(id, sizeof id, "entry-%d", i);
        assert_int_equal(ingest_idset_add(&s, id), LC_OK);
    }
    for (int i = 0; i < 1000; i++) {
        snprintf(id, sizeof id, "entry-%d", i);
        assert_int_equal(ingest_idset_find(&s, id), i);
    }
    assert_int_equal(ingest_idset_find(&s, "entry-1000"), -1);
    assert_int_equal(ingest_idset_find(&s, NULL), -1);
    ingest_idset_free(&s);
    assert_int_equal(ingest_idset_find(&s, "entry-1"), -1);
}

static void test_batch_stores_in_one_flush_and_empties(void **state)
{
    store *st = *state;
    ingest_batch b = {0};
    size_t inserted = 0;
    assert_int_equal(ingest_batch_add(&b, "m1", lc_strdup("{\"role\":\"user\",\"content\":\"one\"}")), LC_OK);
    assert_int_equal(ingest_batch_add(&b, "m2", lc_strdup("{\"role\":\"user\",\"content\":\"two\"}")), LC_OK);
    assert_int_equal(ingest_batch_flush(st, &b, &inserted, NULL), LC_OK);
    assert_int_equal(inserted, 2);
    assert_int_equal(b.n, 0);
    /* A queued entry known to be stored stops the store's walk back and adds nothing. */
    assert_int_equal(ingest_batch_add(&b, "m2", NULL), LC_OK);
    assert_int_equal(ingest_batch_flush(st, &b, &inserted, NULL), LC_OK);
    assert_int_equal(inserted, 0);
    assert_true(stored(st, "m1", NULL) && stored(st, "m2", NULL));
    ingest_batch_free(&b);
}

/* ---- the host side ------------------------------------------------------------------------ */

static void test_move_stores_and_marks_the_left_side_and_clears_the_joined_one(void **state)
{
    store *st = *state;
    fake_host h = {tree, sizeof tree / sizeof *tree, 0};
    char *warn = NULL, *e = NULL;
    int removed = 0;
    /* The request carried r, a1 only: a2 and a3 were never stored. */
    assert_int_equal(ingest_entries(st, fake_get, &h, (char *[]){"a1", "r"}, 2, NULL, NULL), LC_OK);
    assert_int_equal(ingest_move(st, fake_get, &h, "a3", "b2", &warn, &e), LC_OK);
    assert_null(warn);
    assert_true(stored(st, "a2", &removed) && removed);
    assert_true(stored(st, "a3", &removed) && removed);
    assert_true(stored(st, "a1", &removed) && removed);
    assert_true(stored(st, "r", &removed) && !removed);
    /* Back again: the side that joins loses its mark. */
    assert_int_equal(ingest_move(st, fake_get, &h, "b2", "a3", &warn, &e), LC_OK);
    assert_true(stored(st, "a3", &removed) && !removed);
    assert_true(stored(st, "a1", &removed) && !removed);
}

static void test_move_reads_only_as_far_as_the_common_ancestor(void **state)
{
    store *st = *state;
    fake_host h = {tree, sizeof tree / sizeof *tree, 0};
    /* a3 -> a2 is one step on a side that shares a2: a3's parent read and a2's lookups. */
    assert_int_equal(ingest_move(st, fake_get, &h, "a3", "a2", NULL, NULL), LC_OK);
    int walk_reads = h.reads;
    assert_true(walk_reads <= 3);
}

static void test_move_refuses_a_cycle(void **state)
{
    static const fake_entry loop[] = {{"x", "y", "message", "x"}, {"y", "x", "message", "y"},
                                      {"z", NULL, "message", "z"}};
    store *st = *state;
    fake_host h = {loop, 3, 0};
    char *e = NULL;
    assert_int_equal(ingest_move(st, fake_get, &h, "x", "z", NULL, &e), LC_INVALID);
    assert_non_null(strstr(e, "its own ancestor"));
    free(e);
}

static void test_branch_tail_stores_back_to_the_first_stored_message(void **state)
{
    store *st = *state;
    fake_host h = {tree, sizeof tree / sizeof *tree, 0};
    assert_int_equal(ingest_entries(st, fake_get, &h, (char *[]){"r"}, 1, NULL, NULL), LC_OK);
    cJSON *branch = fake_array(&h, (const char *[]){"r", "a1", "a2", "a3"}, 4);
    h.reads = 0;
    assert_int_equal(ingest_branch_tail(st, branch, fake_get, &h, NULL), LC_OK);
    assert_int_equal(h.reads, 3); /* a3, a2, a1; r is stored */
    assert_true(stored(st, "a1", NULL) && stored(st, "a3", NULL));
    cJSON_Delete(branch);
}

static void test_offbranch_stores_only_messages_on_no_branch(void **state)
{
    store *st = *state;
    fake_host h = {tree, sizeof tree / sizeof *tree, 0};
    const char *every[] = {"r", "a1", "a2", "a3", "b1", "b2", "c"};
    cJSON *all = fake_array(&h, every, 7);
    cJSON *branch = fake_array(&h, (const char *[]){"r", "b1", "b2"}, 3);
    size_t inserted = 0, marked = 0;
    assert_int_equal(ingest_offbranch(st, all, branch, fake_get, &h, &inserted, NULL), LC_OK);
    assert_int_equal(inserted, 3);
    assert_true(stored(st, "a1", NULL) && stored(st, "a3", NULL));
    assert_false(stored(st, "b1", NULL));
    assert_false(stored(st, "c", NULL));
    /* Then the marks make them what they are: abandoned. */
    assert_int_equal(ingest_mark_branch(st, branch, &marked, NULL, NULL), LC_OK);
    assert_int_equal(marked, 3);
    cJSON_Delete(all);
    cJSON_Delete(branch);
}

/* ---- a request ------------------------------------------------------------------------------ */

static void test_known_counts_only_a_request_that_grew(void **state)
{
    store *st = *state;
    ingest_seen seen = {0};
    store_msg m[4] = {{"m1", "{\"role\":\"user\",\"content\":\"aaaa\"}", 0, NULL},
                      {"m2", "{\"role\":\"user\",\"content\":\"bbbb\"}", 0, NULL},
                      {"m3", "{\"role\":\"user\",\"content\":\"cccc\"}", 0, NULL},
                      {"m4", "{\"role\":\"user\",\"content\":\"dddd\"}", 0, NULL}};
    size_t tokens = 0;
    for (size_t i = 0; i < 4; i++) m[i].json_len = strlen(m[i].json); /* 32 bytes: 8 tokens each */
    assert_int_equal(ingest_known(&seen, m, 2, &tokens), 0);
    assert_int_equal(tokens, 16);
    assert_int_equal(ingest_request(st, &seen, m, 2, 0, tokens, NULL), LC_OK);
    /* It grew: the two it carried are known, only the new ones are summed. */
    assert_int_equal(ingest_known(&seen, m, 4, &tokens), 2);
    assert_int_equal(tokens, 32);
    assert_int_equal(ingest_request(st, &seen, m, 4, 2, tokens, NULL), LC_OK);
    assert_true(stored(st, "m4", NULL));
    /* Its first message moved (a compaction, a tree move): start over. */
    assert_int_equal(ingest_known(&seen, m + 1, 3, &tokens), 0);
    assert_int_equal(tokens, 24);
    /* Shorter than what was seen: start over. */
    assert_int_equal(ingest_known(&seen, m, 3, &tokens), 0);
    ingest_seen_reset(&seen);
    assert_int_equal(ingest_known(&seen, m, 4, &tokens), 0);
}

static void test_request_without_ids_is_never_matched(void **state)
{
    store *st = *state;
    ingest_seen seen = {0};
    store_msg m[2] = {{"m1", "{\"role\":\"user\",\"content\":\"a\"}", 0, NULL},
                      {NULL, "{\"role\":\"user\",\"content\":\"b\"}", 0, NULL}};
    size_t tokens = 0;
    for (size_t i = 0; i < 2; i++) m[i].json_len = strlen(m[i].json);
    assert_int_equal(ingest_request(st, &seen, m, 2, ingest_known(&seen, m, 2, &tokens), tokens, NULL), LC_OK);
    assert_int_equal(seen.n, 0);
    assert_int_equal(ingest_known(&seen, m, 2, &tokens), 0);
    ingest_seen_reset(&seen);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_entry_message_is_the_entry_bytes_exactly),
        cmocka_unit_test(test_entry_message_is_null_for_other_entries_and_non_objects),
        cmocka_unit_test(test_context_message_builds_what_the_host_builds),
        cmocka_unit_test(test_idset_finds_every_id_at_its_position_across_growth),
        STORE_TEST(test_batch_stores_in_one_flush_and_empties),
        STORE_TEST(test_move_stores_and_marks_the_left_side_and_clears_the_joined_one),
        STORE_TEST(test_move_reads_only_as_far_as_the_common_ancestor),
        STORE_TEST(test_move_refuses_a_cycle),
        STORE_TEST(test_branch_tail_stores_back_to_the_first_stored_message),
        STORE_TEST(test_offbranch_stores_only_messages_on_no_branch),
        STORE_TEST(test_known_counts_only_a_request_that_grew),
        STORE_TEST(test_request_without_ids_is_never_matched),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
