/* test_convtree.c -- the conversations a transcript ends on (engine/lcm/convtree.c): a parallel
 * tool batch written one call per line stays whole, a rewind's abandoned turn does not, each
 * sub-agent conversation ends on its own last entry, an orphan never ends one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "convtree.h"
#include "util.h"

#include "test_main.h"

#define N(parent, seq) {parent, seq, -1, -1, -1, 0}

static void live_of(const convtree_node *v, size_t n, unsigned char *live)
{
    char *err = NULL;
    assert_int_equal(convtree_live(v, n, live, &err), LC_OK);
    assert_null(err);
}

/* user, two calls of one response on two lines, each result under its own call, the next
 * response under the last result: every line is on the conversation. */
static void test_parallel_batch_calls_and_results_stay_live(void **state)
{
    (void)state;
    convtree_node v[] = {
        N(-1, 0),                 /* 0 user */
        {0, 1, -1, -1, -1, 0},    /* 1 call a (response m1) */
        {1, 2, -1, 1, -1, 0},     /* 2 call b (response m1), child of call a */
        {1, 3, -1, -1, 1, 0},     /* 3 result a, child of call a: a sibling of call b */
        {2, 4, -1, -1, 2, 0},     /* 4 result b */
        {4, 5, -1, -1, -1, 0},    /* 5 the answer, child of the last result */
    };
    unsigned char live[6];
    live_of(v, 6, live);
    for (int i = 0; i < 6; i++) assert_int_equal(live[i], 1);
}

/* a rewind: the turn after entry 1 was abandoned and asked again. */
static void test_rewound_turn_is_abandoned(void **state)
{
    (void)state;
    convtree_node v[] = {
        N(-1, 0), N(0, 1), N(1, 2), N(2, 3), /* 2, 3: the abandoned turn */
        N(1, 4), N(4, 5),                   /* the turn asked again */
    };
    unsigned char live[6];
    live_of(v, 6, live);
    const unsigned char want[6] = {1, 1, 0, 0, 1, 1};
    assert_memory_equal(live, want, 6);
}

/* the abandoned turn made a call whose result is off too, though it answers something */
static void test_result_of_an_abandoned_call_is_abandoned(void **state)
{
    (void)state;
    convtree_node v[] = {
        N(-1, 0), {0, 1, -1, -1, -1, 0}, {1, 2, -1, -1, 1, 0}, /* 1 call, 2 its result: abandoned */
        N(0, 3), N(3, 4),
    };
    unsigned char live[5];
    live_of(v, 5, live);
    const unsigned char want[5] = {1, 0, 0, 1, 1};
    assert_memory_equal(live, want, 5);
}

/* the parts of one line (a result and the person's text) go together */
static void test_parts_of_a_line_go_together(void **state)
{
    (void)state;
    convtree_node v[] = {
        N(-1, 0), {0, 1, -1, -1, -1, 0},
        {0, 2, -1, -1, 1, 0}, {2, 2, -1, -1, -1, 0}, /* one line: result part, text part */
        {1, 3, -1, -1, -1, 0},                       /* the conversation goes on from the call */
    };
    unsigned char live[5];
    live_of(v, 5, live);
    for (int i = 0; i < 5; i++) assert_int_equal(live[i], 1);
}

/* sub-agent conversations (groups) end on their own last entries; the main one on its own */
static void test_each_sub_agent_ends_on_its_own_last_entry(void **state)
{
    (void)state;
    convtree_node v[] = {
        N(-1, 0),                                     /* 0 main */
        {-1, 1, 1, -1, -1, 0}, {1, 2, 1, -1, -1, 0}, /* 1, 2 sub-agent A */
        {-1, 3, 3, -1, -1, 0}, {3, 4, 3, -1, -1, 0}, /* 3, 4 sub-agent B, then B rewinds: */
        {3, 5, 3, -1, -1, 0},                         /* 5 B's last entry (4 abandoned) */
        N(0, 6),                                      /* 6 main's last */
    };
    unsigned char live[7];
    live_of(v, 7, live);
    const unsigned char want[7] = {1, 1, 1, 1, 0, 1, 1};
    assert_memory_equal(live, want, 7);
}

/* a line whose parent is not written yet ends nothing: the conversation ends before it */
static void test_orphan_never_ends_the_conversation(void **state)
{
    (void)state;
    convtree_node v[] = {N(-1, 0), N(0, 1), {-1, 2, -1, -1, -1, 1}};
    unsigned char live[3];
    live_of(v, 3, live);
    const unsigned char want[3] = {1, 1, 0};
    assert_memory_equal(live, want, 3);
}

TEST_MAIN(cmocka_unit_test(test_parallel_batch_calls_and_results_stay_live),
          cmocka_unit_test(test_rewound_turn_is_abandoned),
          cmocka_unit_test(test_result_of_an_abandoned_call_is_abandoned),
          cmocka_unit_test(test_parts_of_a_line_go_together),
          cmocka_unit_test(test_each_sub_agent_ends_on_its_own_last_entry),
          cmocka_unit_test(test_orphan_never_ends_the_conversation))
