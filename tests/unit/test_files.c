/*
 * test_files.c -- file-handle kinds and rule-built exploration summaries: code (language,
 * lines, top-level declarations capped at 12 with "(+N more)"), JSON shape, JSONL row keys,
 * CSV/TSV columns, Markdown headings, text size and first line, and the preview bound.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "files.h"
#include "util.h"

static char *explore(const char *path, const char *body, files_kind *kind)
{
    *kind = files_classify(path, body, strlen(body));
    return files_explore(path, body, strlen(body), *kind);
}

/* path with body is classified as `kind` and explored to exactly `want`. */
static void expect_explore(const char *path, const char *body, files_kind kind, const char *want)
{
    files_kind k;
    char *s = explore(path, body, &k);
    if (k != kind || !s || strcmp(s, want) != 0)
        print_error("%s: kind %d, explored to \"%s\"\n", path, (int)k, s ? s : "(null)");
    assert_int_equal(k, kind);
    assert_string_equal(s, want);
    free(s);
}

static void test_typescript_names_top_level_declarations_capped_at_twelve(void **state)
{
    (void)state;
    sbuf b = {0};
    sb_puts(&b, "import x from 'y';\nexport function compact(a: number) {\n  const inner = 1;\n}\n");
    sb_puts(&b, "export class Engine {\n  method() {}\n}\ninterface Opts { a: 1 }\ntype Id = string;\n");
    for (int i = 0; i < 12; i++) sb_printf(&b, "const v%d = %d;\n", i, i);
    files_kind k;
    char *s = explore("src/engine.ts", b.p, &k);
    assert_int_equal(k, FILES_KIND_CODE);
    assert_non_null(strstr(s, "TypeScript, 21 lines; 16 top-level declaration(s): function compact, class Engine, "
                              "interface Opts, type Id, const v0"));
    assert_non_null(strstr(s, "(+4 more)"));
    assert_null(strstr(s, "inner"));
    assert_null(strstr(s, "method"));
    free(s);
    sb_free(&b);
}

static void test_c_and_python_declarations_found_by_rule(void **state)
{
    (void)state;
    const char *c = "#include <stdio.h>\n#define MAX 4\ntypedef struct store store;\nstruct pair {\n  int a;\n};\n"
                    "static int helper(int x)\n{\n    return x;\n}\nint main(void);\nint\nrun(void) {\n  if (x) {}\n}\n";
    files_kind k;
    char *s = explore("a/b/x.c", c, &k);
    assert_int_equal(k, FILES_KIND_CODE);
    assert_non_null(strstr(s, "C, 15 lines; 4 top-level declaration(s): macro MAX, typedef store, struct pair, function helper"));
    free(s);
    const char *py = "import os\n\nclass Engine:\n    def method(self):\n        pass\n\nasync def main():\n    pass\n";
    s = explore("tool.py", py, &k);
    assert_non_null(strstr(s, "Python, 8 lines; 2 top-level declaration(s): class Engine, def main"));
    free(s);
}

/* What a file of each structured or text kind is explored to, whole. */
static const struct {
    const char *path, *body;
    files_kind kind;
    const char *want;
} shaped[] = {
    {"items.json", "[{\"id\":1,\"name\":\"a\"},{\"id\":2,\"name\":\"b\"}]", FILES_KIND_JSON,
     "array of 2 objects, keys: id, name"},
    /* no extension: the body decides */
    {"cfg", "{\"a\":[1,2,3],\"b\":{\"x\":1,\"y\":2},\"c\":true}", FILES_KIND_JSON,
     "object with 3 key(s): a (array of 3), b (object, 2 keys), c"},
    {"rows.jsonl", "{\"a\":1,\"b\":2}\n{\"a\":3,\"c\":4}\n", FILES_KIND_JSONL, "JSONL, 2 rows, row keys: a, b, c"},
    {"t.csv", "id,\"name\",score\n1,a,2\n2,b,3\n", FILES_KIND_CSV, "CSV table, 2 rows, 3 columns: id, name, score"},
    {"t.tsv", "x\ty\n1\t2\n", FILES_KIND_TSV, "TSV table, 1 rows, 2 columns: x, y"},
    {"README.md", "# Title\ntext\n```\n# not a heading\n```\n## Usage\n", FILES_KIND_MARKDOWN,
     "Markdown, 6 lines, 2 heading(s): Title, Usage"},
    {"notes.txt", "\n  first real line\nsecond\n", FILES_KIND_TEXT,
     "text, 26 chars, 3 lines; first line: first real line"},
};

/* JSON names one level of keys; JSONL its row keys; CSV and TSV their columns; Markdown
 * its headings; text its size and first real line. */
static void test_json_jsonl_csv_tsv_markdown_and_text_are_explored_by_shape(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof shaped / sizeof shaped[0]; i++)
        expect_explore(shaped[i].path, shaped[i].body, shaped[i].kind, shaped[i].want);
}

static void test_binary_reports_size_and_large_inline_is_labelled(void **state)
{
    (void)state;
    char bin[64] = "PK\x03\x04";
    memset(bin + 4, 1, 59);
    bin[63] = '\0';
    assert_int_equal(files_classify("a.zip", bin, 63), FILES_KIND_BINARY);
    char *s = files_explore("a.zip", bin, 63, FILES_KIND_BINARY);
    assert_string_equal(s, "zip, 63 bytes (no rule for this family)");
    free(s);
    s = files_explore(NULL, "hello\nworld\n", 12, FILES_KIND_LARGE_INLINE);
    assert_non_null(strstr(s, "large-inline, no path named; text, 12 chars"));
    assert_string_equal(files_kind_name(FILES_KIND_LARGE_INLINE), "large-inline");
    free(s);
}

static void test_summary_and_preview_are_bounded_without_splitting_utf8(void **state)
{
    (void)state;
    sbuf b = {0};
    for (int i = 0; i < 2000; i++) sb_puts(&b, "\xc3\xa9"); /* é x 2000, one line */
    char *p = files_preview(b.p, b.len);
    assert_int_equal(strlen(p), FILES_PREVIEW_CHARS * 2);
    free(p);
    sbuf md = {0};
    for (int i = 0; i < 40; i++) sb_printf(&md, "# A rather long heading number %d \xc3\xa9\xc3\xa9\n", i);
    files_kind k;
    char *s = explore("doc.md", md.p, &k);
    assert_true(strlen(s) <= FILES_SUMMARY_MAX);
    assert_int_equal(files_utf8_count(s, strlen(s)) > 0, 1);
    free(s);
    assert_int_equal(files_utf8_prefix("a\xc3\xa9z", 4, 2), 3);
    assert_int_equal(files_utf8_count("a\xc3\xa9z", 4), 3);
    sb_free(&b);
    sb_free(&md);
}

/* Code points are counted eight bytes at a time: every mix of widths, at every offset and
 * length, against a byte-by-byte count. */
static void test_utf8_count_matches_a_byte_count_at_every_offset(void **state)
{
    (void)state;
    const char *s = "ab\xc3\xa9\xe7\x8e\xb0\xf0\x9f\x98\x80x\ny\xc3\xa9\xe7\x8e\xb0z\xf0\x9f\x98\x80tail text";
    size_t n = strlen(s);
    for (size_t from = 0; from < n; from++)
        for (size_t len = 0; from + len <= n; len++) {
            size_t want = 0;
            for (size_t i = from; i < from + len; i++) want += ((unsigned char)s[i] & 0xC0) != 0x80;
            assert_int_equal(files_utf8_count(s + from, len), want);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_typescript_names_top_level_declarations_capped_at_twelve),
        cmocka_unit_test(test_c_and_python_declarations_found_by_rule),
        cmocka_unit_test(test_json_jsonl_csv_tsv_markdown_and_text_are_explored_by_shape),
        cmocka_unit_test(test_binary_reports_size_and_large_inline_is_labelled),
        cmocka_unit_test(test_summary_and_preview_are_bounded_without_splitting_utf8),
        cmocka_unit_test(test_utf8_count_matches_a_byte_count_at_every_offset),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
