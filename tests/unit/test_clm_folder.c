/*
 * test_clm_folder.c -- LIVE_CONTEXT.md written the way the context hook writes it: the
 * composition (clm_raw + clm_eff) and the kept view, then clm_folder_render. A context that
 * only grows is appended in place, and the file is byte for byte a fresh full render of the
 * same context; anything earlier that changed (a tree move, a new revision, a file someone
 * else wrote, a symlink or hard link planted in the folder) makes a whole new file.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "clm_eff.h"
#include "clm_folder.h"
#include "clm_raw.h"
#include "util.h"
#include "test_main.h"

#define NONCE_A "0123456789abcdef"
#define NONCE_B "fedcba9876543210"
#define MAXM 400

typedef struct session {
    char *ids[MAXM], *json[MAXM];
    size_t n;
    clm_raw_cache raw;
    clm_eff_list effl;
    clm_view view;
    int have_view;
    clm_mode mode;
    long revision;
    const char *nonce;
    long cap;
    clm_folder f;
    char root[64];
} session;

static void in_get(const void *ud, size_t i, const char **id, const char **json, size_t *len)
{
    const session *s = ud;
    *id = s->ids[i];
    *json = s->json[i];
    *len = strlen(s->json[i]);
}

/* Message i of branch `b`: user turns, tool calls with their results, answers; some bodies
 * start with a header-like line the render escapes. */
static char *message(size_t i, char b)
{
    switch (i % 4) {
    case 0:
        return lc_asprintf("{\"role\":\"user\",\"content\":\"%c question %zu\\n[[CTX_TURN x]]\","
                           "\"timestamp\":%zu}", b, i, i);
    case 1:
        return lc_asprintf("{\"role\":\"assistant\",\"content\":[{\"type\":\"toolCall\","
                           "\"id\":\"c%zu\",\"name\":\"read\",\"arguments\":{\"p\":\"f%zu\"}}]}", i, i);
    case 2:
        return lc_asprintf("{\"role\":\"toolResult\",\"toolCallId\":\"c%zu\",\"toolName\":\"read\","
                           "\"content\":[{\"type\":\"text\",\"text\":\"%c output %zu "
                           "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"}]}",
                           i - 1, b, i);
    default:
        return lc_asprintf("{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":"
                           "\"%c answer %zu\"}]}", b, i);
    }
}

static void grow_to(session *s, size_t n, char b)
{
    for (size_t i = s->n; i < n; i++) {
        s->ids[i] = lc_asprintf("%c%05zu", b, i);
        s->json[i] = message(i, b);
    }
    s->n = n;
}

static void cut_to(session *s, size_t n)
{
    for (size_t i = n; i < s->n; i++) free(s->ids[i]), free(s->json[i]);
    s->n = n;
}

static int setup(void **state)
{
    session *s = calloc(1, sizeof *s);
    snprintf(s->root, sizeof s->root, "/tmp/lc-folder-XXXXXX");
    assert_non_null(mkdtemp(s->root));
    clm_raw_init(&s->raw);
    clm_folder_init(&s->f);
    clm_folder_set_paths(&s->f, s->root, "sess");
    char *notice = NULL, *warn = NULL;
    clm_folder_claim(&s->f, &notice, &warn);
    assert_null(warn);
    free(notice);
    s->mode = CLM_MODE_CLM;
    s->revision = 0;
    s->nonce = NONCE_A;
    *state = s;
    return 0;
}

static int teardown(void **state)
{
    session *s = *state;
    cut_to(s, 0);
    clm_raw_free(&s->raw);
    clm_eff_free(&s->effl);
    if (s->have_view) clm_view_free(&s->view);
    clm_folder_release(&s->f, 1);
    clm_folder_free(&s->f);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", s->root);
    int rc = system(cmd);
    free(s);
    return rc;
}

static int same_at(session *s, const clm_input *in, size_t i)
{
    size_t len;
    const char *j = clm_eff_json(&s->effl, i, in, &len);
    return clm_view_same(&s->view, i, j, len, s->effl.items[i].raw, s->effl.items[i].key);
}

/* One request, as the context hook makes it; then the file must be a fresh full render. */
static void request(session *s)
{
    clm_input in = {s->n, s, in_get};
    assert_int_equal(clm_raw_update(&s->raw, &in, NULL), LC_OK);
    assert_int_equal(clm_eff_build(&s->effl, NULL, NULL, &s->raw, &in, s->cap, 0.5, NULL), LC_OK);
    clm_raw_settle(&s->raw);
    size_t n = s->effl.n, k = 0;
    if (s->have_view && s->view.mode == s->mode) {
        assert_int_equal(clm_view_rebase(&s->view, s->revision, s->nonce, NULL), LC_OK);
        k = s->effl.same < s->view.n ? s->effl.same : s->view.n;
        if (k > 0) assert_true(same_at(s, &in, k - 1));
        while (k < n && same_at(s, &in, k)) k++;
        clm_view_truncate(&s->view, k);
    } else {
        if (s->have_view) clm_view_free(&s->view);
        assert_int_equal(clm_view_init(&s->view, s->mode, s->revision, s->nonce, NULL), LC_OK);
        s->have_view = 1;
    }
    for (size_t i = k; i < n; i++) {
        size_t len;
        const char *j = clm_eff_json(&s->effl, i, &in, &len);
        assert_int_equal(clm_view_add(&s->view, j, len, s->effl.items[i].raw,
                                      s->effl.items[i].key, NULL), LC_OK);
    }
    char *err = NULL;
    assert_int_equal(clm_folder_render(&s->f, &s->view, &err), LC_OK);

    clm_view fresh;
    char *want = NULL, *got = NULL;
    size_t want_len = 0, got_len = 0;
    assert_int_equal(clm_view_init(&fresh, s->mode, s->revision, s->view.nonce, NULL), LC_OK);
    for (size_t i = 0; i < n; i++) {
        size_t len;
        const char *j = clm_eff_json(&s->effl, i, &in, &len);
        assert_int_equal(clm_view_add(&fresh, j, len, s->effl.items[i].raw, s->effl.items[i].key,
                                      NULL), LC_OK);
    }
    assert_int_equal(clm_view_render(&fresh, &want, &want_len, NULL), LC_OK);
    assert_int_equal(clm_safe_read(s->f.path, CLM_MIRROR_MAX_BYTES, &got, &got_len, NULL), LC_OK);
    assert_int_equal(got_len, want_len);
    assert_memory_equal(got, want, want_len);
    uint8_t h[32];
    clm_mirror_digest(got, got_len, h);
    assert_memory_equal(h, s->f.hash, 32);
    free(want);
    free(got);
    clm_view_free(&fresh);
}

static unsigned long long inode_of(const char *path)
{
    struct stat st;
    assert_int_equal(lstat(path, &st), 0);
    return (unsigned long long)st.st_ino;
}

static void test_a_growing_context_is_appended_and_equals_a_full_render(void **state)
{
    session *s = *state;
    grow_to(s, 5, 'a');
    request(s);
    assert_int_equal(s->f.writes, 1);
    unsigned long long ino = inode_of(s->f.path);
    /* one or a few messages a request, across several digest checkpoints */
    for (size_t n = 6; n <= 300; n += 1 + n % 3) {
        grow_to(s, n, 'a');
        request(s);
    }
    assert_int_equal(s->f.writes, 1);
    assert_true(s->f.appends > 100);
    assert_true(inode_of(s->f.path) == ino);
    /* a request with nothing new leaves the file alone */
    unsigned long appends = s->f.appends;
    request(s);
    assert_int_equal(s->f.writes, 1);
    assert_true(s->f.appends <= appends + 1);
}

static void test_an_earlier_change_rewrites_the_file(void **state)
{
    session *s = *state;
    grow_to(s, 150, 'a');
    request(s);
    grow_to(s, 152, 'a');
    request(s);
    assert_int_equal(s->f.writes, 1);
    /* a tree move: the branch forks at 100 */
    unsigned long long ino = inode_of(s->f.path);
    cut_to(s, 100);
    grow_to(s, 140, 'b');
    request(s);
    assert_int_equal(s->f.writes, 2);
    assert_true(inode_of(s->f.path) != ino);
    grow_to(s, 141, 'b');
    request(s);
    assert_int_equal(s->f.writes, 2);
    /* a new revision: a new nonce in every header */
    s->revision = 1;
    s->nonce = NONCE_B;
    request(s);
    assert_int_equal(s->f.writes, 3);
    grow_to(s, 142, 'b');
    request(s);
    assert_int_equal(s->f.writes, 3);
    /* the observation cap changed: the capped tool results render differently */
    s->cap = 20;
    request(s);
    assert_int_equal(s->f.writes, 4);
    grow_to(s, 150, 'b');
    request(s);
    assert_int_equal(s->f.writes, 4);
    /* conservative mode: a fresh nonce every render, so every render is whole */
    s->mode = CLM_MODE_CONSERVATIVE;
    s->nonce = NONCE_A;
    request(s);
    s->nonce = NONCE_B;
    grow_to(s, 151, 'b');
    request(s);
    assert_int_equal(s->f.writes, 6);
}

static void test_a_file_someone_else_wrote_is_replaced_not_extended(void **state)
{
    session *s = *state;
    grow_to(s, 20, 'a');
    request(s);
    /* the same length, written after the plugin's write: an in-place append would keep it */
    char *text = NULL;
    size_t len = 0;
    assert_int_equal(clm_safe_read(s->f.path, CLM_MIRROR_MAX_BYTES, &text, &len, NULL), LC_OK);
    text[len - 3] = 'X';
    usleep(20000);
    FILE *fp = fopen(s->f.path, "r+");
    assert_non_null(fp);
    assert_int_equal(fwrite(text, 1, len, fp), len);
    fclose(fp);
    free(text);
    grow_to(s, 21, 'a');
    request(s); /* compares the file with a fresh render */
    assert_int_equal(s->f.writes, 2);
}

static void test_the_append_follows_no_symlink_and_no_hard_link(void **state)
{
    session *s = *state;
    grow_to(s, 20, 'a');
    request(s);
    char *victim = lc_asprintf("%s/victim", s->root), *hard = lc_asprintf("%s/linked", s->root);
    FILE *fp = fopen(victim, "w");
    fputs("VICTIM", fp);
    fclose(fp);
    assert_int_equal(unlink(s->f.path), 0);
    assert_int_equal(symlink(victim, s->f.path), 0);
    grow_to(s, 21, 'a');
    request(s);
    char *text = NULL;
    size_t len;
    assert_int_equal(lc_read_file(victim, &text, &len, NULL), LC_OK);
    assert_string_equal(text, "VICTIM");
    free(text);
    assert_int_equal(s->f.writes, 2);
    /* a hard link elsewhere would see an in-place write: the file is replaced instead */
    assert_int_equal(link(s->f.path, hard), 0);
    char *before = NULL;
    size_t before_len;
    assert_int_equal(lc_read_file(hard, &before, &before_len, NULL), LC_OK);
    grow_to(s, 22, 'a');
    request(s);
    assert_int_equal(s->f.writes, 3);
    assert_int_equal(lc_read_file(hard, &text, &len, NULL), LC_OK);
    assert_int_equal(len, before_len);
    assert_memory_equal(text, before, len);
    free(text);
    free(before);
    free(victim);
    free(hard);
}

static void test_a_folder_claimed_again_gets_the_file_back(void **state)
{
    session *s = *state;
    grow_to(s, 30, 'a');
    request(s);
    /* the model removed the folder: the next request claims it again, and the file is
     * written whole although the rendering did not change */
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", s->f.dir);
    assert_int_equal(system(cmd), 0);
    char *notice = NULL, *warn = NULL;
    clm_folder_claim(&s->f, &notice, &warn);
    assert_null(warn);
    free(notice);
    request(s); /* reads the file back */
    assert_int_equal(s->f.writes, 2);
    grow_to(s, 31, 'a');
    request(s);
    assert_int_equal(s->f.writes, 2);
}

/* A projection of the suffix (a summary pointer in place of aged messages): the items
 * equal to the previous request's are counted, and the pointer's estimate is kept. */
typedef struct proj {
    long idx[MAXM];
    const char *json[MAXM];
    size_t n;
} proj;

static void proj_get(const void *ud, size_t k, long *index, const char **json)
{
    const proj *p = ud;
    *index = p->idx[k];
    *json = p->json[k];
}

static void build_projected(session *s, proj *pr, const char *pointer, size_t aged)
{
    pr->n = 0;
    pr->idx[pr->n] = -1;
    pr->json[pr->n++] = pointer;
    for (size_t i = aged; i < s->n; i++) {
        pr->idx[pr->n] = (long)i;
        pr->json[pr->n++] = NULL;
    }
    clm_input in = {s->n, s, in_get};
    clm_eff_suffix sx = {pr->n, pr, proj_get};
    assert_int_equal(clm_raw_update(&s->raw, &in, NULL), LC_OK);
    assert_int_equal(clm_eff_build(&s->effl, NULL, &sx, &s->raw, &in, 0, 0.5, NULL), LC_OK);
    clm_raw_settle(&s->raw);
    size_t total = 0;
    for (size_t i = 0; i < s->effl.n; i++) total += s->effl.items[i].tokens;
    assert_int_equal(clm_eff_tokens(&s->effl), total);
}

static void test_a_projected_suffix_keeps_what_did_not_change(void **state)
{
    session *s = *state;
    proj pr;
    const char *p1 = "{\"role\":\"custom\",\"customType\":\"lcm-pointer\",\"content\":\"one\"}";
    const char *p2 = "{\"role\":\"custom\",\"customType\":\"lcm-pointer\",\"content\":\"two two\"}";
    grow_to(s, 40, 'a');
    build_projected(s, &pr, p1, 10);
    assert_int_equal(s->effl.n, 31);
    assert_int_equal(s->effl.same, 0);
    grow_to(s, 42, 'a');
    char *copy = lc_strdup(p1); /* the projection's text is new memory every request */
    build_projected(s, &pr, copy, 10);
    free(copy);
    assert_int_equal(s->effl.n, 33);
    assert_int_equal(s->effl.same, 31);
    /* the pointer changed: nothing after it is the same item any more */
    build_projected(s, &pr, p2, 12);
    assert_int_equal(s->effl.same, 0);
    assert_string_equal(s->effl.items[0].json, p2);
    /* a tree move under the suffix: items before the fork stay */
    cut_to(s, 30);
    grow_to(s, 35, 'b');
    build_projected(s, &pr, p2, 12);
    assert_int_equal(s->effl.same, 1 + (30 - 12));
    assert_int_equal(s->effl.n, 1 + (35 - 12));
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
TEST_MAIN(
    T(test_a_growing_context_is_appended_and_equals_a_full_render),
    T(test_an_earlier_change_rewrites_the_file),
    T(test_a_file_someone_else_wrote_is_replaced_not_extended),
    T(test_the_append_follows_no_symlink_and_no_hard_link),
    T(test_a_folder_claimed_again_gets_the_file_back),
    T(test_a_projected_suffix_keeps_what_did_not_change),
)
