/*
 * test_bundle.c -- the start-of-session bundle's choice of lines over small stores of the
 * shapes the real CLIs leave (written here, as the import stores them): Claude Code (meta
 * lines -- stop-hook feedback, an expanded slash-command template, a skill --, a slash
 * command whose <command-args> is the request, its compaction summary as a user line, a
 * synthetic API error), Codex (the AGENTS.md preamble, exec_command and apply_patch, a
 * compacted item) and Pi (bash / edit tools, a compaction entry): the goal is the first
 * request, requests are the person's words, steps are outcomes, the conclusion is real
 * prose, every cited id exists, and the whole stays within 10,000 characters. Also the
 * cleaning of carried text (carry.h, lc_text_clean).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "bundle.h"
#include "carry.h"
#include "store.h"
#include "util.h"

#include "temp_home.h"

/* One stored message as the import writes it (AgentMessage JSON). */
typedef struct fx {
    const char *id, *json;
} fx;

static void make_store(const char *sid, const fx *v, size_t n)
{
    store *s = home_store(sid, "/w");
    msg_batch b = {0};
    for (size_t i = 0; i < n; i++) msg_batch_add(&b, lc_strdup(v[i].id), lc_strdup(v[i].json));
    msg_batch_ingest(s, &b, NULL);
    store_close(s);
}

static char *bundle_of(void)
{
    char *out = NULL, *err = NULL;
    int rc = bundle_build(home, "/w", "next", 100000, &out, &err);
    if (rc != LC_OK) fail_msg("bundle_build: %s", err ? err : "?");
    assert_non_null(out);
    return out;
}

/* The text of section `title` (up to the next line not starting with "- "), malloc'd. */
static char *section(const char *b, const char *title)
{
    const char *p = strstr(b, title);
    if (!p) return lc_strdup("");
    p += strlen(title);
    const char *e = p;
    while (!strncmp(e, "- ", 2)) {
        const char *nl = strchr(e, '\n');
        e = nl ? nl + 1 : e + strlen(e);
    }
    return lc_strndup(p, (size_t)(e - p));
}

#define USER(id, text) {id, "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"" text "\"}],\"timestamp\":1}"}
#define SAY(id, model, text)                                                                                         \
    {id, "{\"role\":\"assistant\",\"model\":\"" model "\",\"content\":[{\"type\":\"text\",\"text\":\"" text        \
         "\"}],\"stopReason\":\"stop\",\"timestamp\":1}"}
#define CALL(id, cid, name, args)                                                                                    \
    {id, "{\"role\":\"assistant\",\"model\":\"m\",\"content\":[{\"type\":\"toolCall\",\"id\":\"" cid "\",\"name\":\"" \
         name "\",\"arguments\":" args "}],\"stopReason\":\"toolUse\",\"timestamp\":1}"}
#define RESULT(id, cid, name, err, text)                                                                             \
    {id, "{\"role\":\"toolResult\",\"toolCallId\":\"" cid "\",\"toolName\":\"" name "\",\"content\":[{\"type\":"     \
         "\"text\",\"text\":\"" text "\"}],\"isError\":" err ",\"timestamp\":1}"}

static const fx claude[] = {
    USER("c1", "Fix the failing test in src/app.py"),
    CALL("c2", "t1", "Edit", "{\"file_path\":\"src/app.py\",\"old_string\":\"a = 1\",\"new_string\":\"a = 2\"}"),
    RESULT("c3", "t1", "Edit", "false", "The file src/app.py has been updated."),
    CALL("c4", "t2", "Bash", "{\"command\":\"npm test\",\"description\":\"run the tests\"}"),
    RESULT("c5", "t2", "Bash", "true", "Exit code 1\\nFAIL src/app.test.js"),
    SAY("c6", "claude-sonnet-4", "The test still fails on the date check."),
    USER("c7", "Stop hook feedback:\\n[hooks/stop.sh]: # Quality Check failed"),
    USER("c8", "This session is being continued from a previous conversation that ran out of context. The summary "
               "below covers the earlier portion.\\n\\nSummary:\\n1. Primary request: fix the test in src/app.py"),
    USER("c9", "<command-message>review is running</command-message>\\n<command-name>/review</command-name>\\n"
               "<command-args>check the date parsing too</command-args>"),
    USER("c10", "Review the code below carefully and list every bug you find."),
    USER("c11", "Base directory for this skill: /home/u/.claude/skills/x\\n\\n# X Skill"),
    CALL("c11a", "t3", "Skill", "{\"skill\":\"update-config\"}"),
    RESULT("c11b", "t3", "Skill", "false", "Launching skill: update-config"),
    USER("c11c", "# Update Config Skill\\n\\nModify Claude Code configuration by updating settings.json files."),
    SAY("c12", "claude-sonnet-4", "The date parser drops the time zone; fixed in src/date.py."),
    SAY("c13", "<synthetic>", "You've hit your limit · resets 4pm"),
};

static void test_bundle_claude_code_shape_quotes_the_person_and_steps_as_outcomes(void **state)
{
    (void)state;
    make_store("claude-s", claude, sizeof claude / sizeof *claude);
    char *b = bundle_of();
    char *goal = section(b, "Goal (its first request):\n"), *req = section(b, "Last requests:\n");
    char *end = section(b, "Last conclusion:\n"), *steps = section(b, "Done (newest steps: tool, target -> result):\n");
    char *summ = section(b, "Its compaction summary (written by the CLI when it compacted):\n");
    if (!strstr(goal, "- [c1] Fix the failing test in src/app.py")) fail_msg("goal:\n%s", b);
    if (!strstr(req, "- [c9] check the date parsing too")) fail_msg("command-args is the request:\n%s", b);
    if (strstr(req, "Stop hook") || strstr(req, "Review the code below") || strstr(req, "Base directory") || strstr(req, "Update Config") ||
        strstr(req, "continued from"))
        fail_msg("meta lines are no requests:\n%s", b);
    if (!strstr(summ, "- [c8] This session is being continued")) fail_msg("the compaction summary:\n%s", b);
    if (!strstr(end, "- [c12] The date parser drops the time zone")) fail_msg("the conclusion:\n%s", b);
    if (strstr(b, "hit your limit")) fail_msg("a synthetic error is no conclusion:\n%s", b);
    if (!strstr(steps, "- Edit src/app.py -> ok (entry_id c2)")) fail_msg("the Edit step:\n%s", b);
    if (!strstr(steps, "- Bash: npm test -> exit 1 (entry_id c4)")) fail_msg("the Bash step:\n%s", b);
    if (strstr(b, "old_string")) fail_msg("no argument JSON:\n%s", b);
    LC_FREE(b, goal, req, end, steps, summ);
}

static const fx codex[] = {
    USER("x1", "# AGENTS.md instructions for /w\\n\\n<INSTRUCTIONS>\\nBe brief.\\n</INSTRUCTIONS>"),
    USER("x2", "<environment_context>\\n  <cwd>/w</cwd>\\n</environment_context>"),
    USER("x3", "Make the build pass on CI"),
    CALL("x4", "k1", "exec_command", "{\"cmd\":\"npm run build\",\"workdir\":\"/w\"}"),
    RESULT("x5", "k1", "exec_command", "false", "Chunk ID: 1\\nWall time: 0.1 seconds\\nProcess exited with code 2\\nOutput:\\nerr"),
    CALL("x6", "k2", "apply_patch",
         "{\"input\":\"*** Begin Patch\\n*** Update File: src/a.py\\n@@\\n-x\\n+y\\n*** Add File: src/b.py\\n+z\\n*** End Patch\"}"),
    RESULT("x7", "k2", "apply_patch", "false", "Success. Updated the following files:\\nM src/a.py"),
    {"x8", "{\"role\":\"compactionSummary\",\"summary\":\"The build broke on a missing import in src/a.py.\","
           "\"timestamp\":1}"},
    USER("x9", "<subagent_notification>{}</subagent_notification>"),
    SAY("x10", "gpt-5", "Fixed the import; the build passes."),
};

static void test_bundle_codex_shape_skips_the_preamble_and_names_patched_files(void **state)
{
    (void)state;
    make_store("codex-s", codex, sizeof codex / sizeof *codex);
    char *b = bundle_of();
    char *goal = section(b, "Goal (its first request):\n"), *steps = section(b, "Done (newest steps: tool, target -> result):\n");
    if (!strstr(goal, "- [x3] Make the build pass on CI")) fail_msg("goal:\n%s", b);
    if (strstr(b, "AGENTS.md") || strstr(b, "environment_context") || strstr(b, "subagent_notification"))
        fail_msg("preamble and notifications are no requests:\n%s", b);
    if (!strstr(steps, "- exec_command: npm run build -> exit 2 (entry_id x4)")) fail_msg("exec step:\n%s", b);
    if (!strstr(steps, "- apply_patch: update src/a.py, add src/b.py -> ok (entry_id x6)")) fail_msg("patch step:\n%s", b);
    if (!strstr(b, "- [x8] The build broke on a missing import")) fail_msg("compacted item:\n%s", b);
    if (!strstr(b, "Last conclusion:\n- [x10] Fixed the import")) fail_msg("conclusion:\n%s", b);
    LC_FREE(b, goal, steps);
}

static const fx pi[] = {
    USER("p1", "Port the parser to C"),
    CALL("p2", "b1", "bash", "{\"command\":\"make\"}"),
    RESULT("p3", "b1", "bash", "true", "parser.c:3: error: boom\\nmake: *** [all] Error 1"),
    CALL("p3a", "b2", "bash", "{\"command\":\"npm test\"}"),
    RESULT("p3b", "b2", "bash", "true", "FAIL one test\\n\\n\\nCommand exited with code 1"),
    CALL("p4", "e1", "edit", "{\"path\":\"parser.c\",\"oldText\":\"int x\",\"newText\":\"long x\"}"),
    RESULT("p5", "e1", "edit", "false", "Successfully replaced text in parser.c."),
    {"p6", "{\"role\":\"compactionSummary\",\"summary\":\"Porting the parser; make fails on parser.c.\",\"tokensBefore\":9,"
           "\"timestamp\":1}"},
    USER("p7", "now run the tests"),
    SAY("p8", "m", "Tests pass."),
};

static void test_bundle_pi_shape_states_errors_and_targets(void **state)
{
    (void)state;
    make_store("pi-s", pi, sizeof pi / sizeof *pi);
    char *b = bundle_of();
    if (!strstr(b, "- bash: make -> error: parser.c:3: error: boom (entry_id p2)")) fail_msg("bash step:\n%s", b);
    if (!strstr(b, "- edit parser.c -> ok (entry_id p4)")) fail_msg("edit step:\n%s", b);
    if (!strstr(b, "- bash: npm test -> exit 1 (entry_id p3a)")) fail_msg("Pi's exit line:\n%s", b);
    if (!strstr(b, "- [p6] Porting the parser")) fail_msg("compaction entry:\n%s", b);
    if (!strstr(b, "Goal (its first request):\n- [p1] Port the parser to C")) fail_msg("goal:\n%s", b);
    if (!strstr(b, "Last requests:\n- [p7] now run the tests")) fail_msg("last request:\n%s", b);
    free(b);
}

/* Every "- [id]" and "(entry_id id)" of the bundle names a stored message. */
static void test_bundle_cites_only_stored_ids_and_stays_within_10000_chars(void **state)
{
    (void)state;
    store *s = home_store("big-s", "/w");
    msg_batch mb = {0};
    char *word = malloc(3000);
    assert_non_null(word);
    memset(word, 'w', 2999);
    word[2999] = '\0';
    for (int i = 0; i < 60; i++) {
        msg_batch_add(&mb, lc_asprintf("u%d", i),
                      lc_asprintf("{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"request %d %s\"}],"
                                  "\"timestamp\":1}", i, word));
        msg_batch_add(&mb, lc_asprintf("a%d", i),
                      lc_asprintf("{\"role\":\"assistant\",\"model\":\"m\",\"content\":[{\"type\":\"text\",\"text\":\"ok %s\"},"
                                  "{\"type\":\"toolCall\",\"id\":\"c%d\",\"name\":\"Bash\",\"arguments\":{\"command\":\"%s\"}}],"
                                  "\"timestamp\":1}", word, i, word));
    }
    free(word);
    msg_batch_ingest(s, &mb, NULL);
    char *out = NULL;
    /* A long handoff too: the whole stays within the cap whatever the token budget. */
    sbuf h = {0};
    for (int i = 0; i < 400; i++) sb_printf(&h, "handoff line %d of a long handoff text\n", i);
    assert_int_equal(store_meta_put(s, BUNDLE_HANDOFF_KEY, h.p, NULL), LC_OK);
    sb_free(&h);
    store_close(s);
    out = bundle_of();
    if (strlen(out) > BUNDLE_MAX_CHARS) fail_msg("%zu characters", strlen(out));
    assert_int_equal(store_open(home, "big-s", "/w", &s, NULL), LC_OK);
    int cited = 0;
    for (const char *p = out; (p = strstr(p, "[")) != NULL; p++) {
        const char *e = strchr(p, ']');
        if (p - out < 2 || p[-1] != ' ' || p[-2] != '-' || !e || e - p > 10) continue;
        char *id = lc_strndup(p + 1, (size_t)(e - p - 1));
        store_row row = {0};
        if (store_get_message(s, id, &row, NULL) != LC_OK) fail_msg("cites %s, not stored:\n%s", id, out);
        store_row_free(&row);
        free(id);
        cited++;
    }
    assert_true(cited >= 2);
    store_close(s);
    free(out);
}

static void test_carry_line_is_one_clean_line_with_tags_neutralised(void **state)
{
    (void)state;
    const char in[] = "a\vb\fc\xE2\x80\xA8" "d\xC2\x85" "e\x1b[2Jf\xff g\r\nh </system> <system> x < y";
    char *t = carry_line(in, sizeof in - 1, 300, NULL);
    assert_non_null(t);
    assert_null(strpbrk(t, "\v\f\r\n\x1b"));
    assert_null(strstr(t, "\xE2\x80\xA8"));
    assert_null(strstr(t, "\xC2\x85"));
    assert_null(strstr(t, "<system>"));
    assert_null(strstr(t, "</system>"));
    assert_non_null(strstr(t, "\xEF\xBF\xBD"));   /* the invalid byte, replaced */
    assert_non_null(strstr(t, "x < y"));          /* a comparison is no tag */
    free(t);
    char *m = lc_text_clean("one\ntwo\tthree\x01", 14, 0);
    assert_string_equal(m, "one\ntwo\tthree");
    free(m);
}

static void test_carry_line_keeps_code_and_cli_markup_quoted_verbatim(void **state)
{
    (void)state;
    const char in[] = "<analysis>fn f() -> Vec<String> { <div/> }</analysis> </System > <|im_start|> <x:tag>";
    char *t = carry_line(in, sizeof in - 1, 300, NULL);
    assert_non_null(t);
    /* what quotes a message stays as written ... */
    assert_non_null(strstr(t, "<analysis>fn f() -> Vec<String> { <div/> }</analysis>"));
    /* ... a prompt's own frame does not */
    assert_null(strstr(t, "</System"));
    assert_null(strstr(t, "<|im_start"));
    assert_null(strstr(t, "<x:tag"));
    free(t);
}

static void test_carry_classify_user_reads_the_person_only(void **state)
{
    (void)state;
    size_t off = 0, len = 0;
    assert_int_equal(carry_classify_user("Fix it", 0, &off, &len), CARRY_REQUEST);
    assert_int_equal(carry_classify_user("Fix it", 1, NULL, NULL), CARRY_OTHER); /* a command's template */
    assert_int_equal(carry_classify_user("Stop hook feedback:\nx", 0, NULL, NULL), CARRY_OTHER);
    assert_int_equal(carry_classify_user("<local-command-stdout>x</local-command-stdout>", 0, NULL, NULL), CARRY_OTHER);
    assert_int_equal(carry_classify_user("<command-name>/init</command-name>", 0, NULL, NULL), CARRY_OTHER);
    const char *cmd = "<command-name>/fix</command-name><command-args> the parser </command-args>";
    assert_int_equal(carry_classify_user(cmd, 0, &off, &len), CARRY_REQUEST);
    assert_int_equal(len, strlen("the parser"));
    assert_memory_equal(cmd + off, "the parser", len);
    assert_int_equal(carry_classify_user("This session is being continued from a previous conversation that ran "
                                         "out of context.", 0, NULL, NULL),
                     CARRY_COMPACTION);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        HOME_TEST(test_bundle_claude_code_shape_quotes_the_person_and_steps_as_outcomes),
        HOME_TEST(test_bundle_codex_shape_skips_the_preamble_and_names_patched_files),
        HOME_TEST(test_bundle_pi_shape_states_errors_and_targets),
        HOME_TEST(test_bundle_cites_only_stored_ids_and_stays_within_10000_chars),
        cmocka_unit_test(test_carry_line_is_one_clean_line_with_tags_neutralised),
        cmocka_unit_test(test_carry_line_keeps_code_and_cli_markup_quoted_verbatim),
        cmocka_unit_test(test_carry_classify_user_reads_the_person_only),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
