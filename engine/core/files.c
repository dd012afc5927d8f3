/*
 * files.c -- file-handle classification and rule-built exploration summaries (files.h).
 * Declarations are found by per-language line patterns (PCRE2, multiline) at column 0,
 * which is what "top-level" means without a parser.
 */
#include "files.h"

#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>

#include "rx.h"
#include "util.h"

/* One file's declaration scan (rx.h bounds it). */
#define FILES_EXPLORE_MS 100.0

typedef struct files_lang {
    const char *ext;
    const char *name;
    /* Named groups: kw (the declaration keyword; a default when absent) and name. */
    const char *pattern;
    const char *default_kw;
} files_lang;

#define FILES_PAT_C                                                                     \
    "^(?:(?<kw>struct|union|enum)\\s+(?<name>[A-Za-z_]\\w*)\\s*\\{"                        \
    "|(?<kw>#define)\\s+(?<name>[A-Za-z_]\\w*)"                                            \
    "|(?<kw>typedef)\\s[^;{\\n]*?\\b(?<name>[A-Za-z_]\\w*)\\s*(?:\\[[^\\]\\n]*\\]\\s*)?;"    \
    "|(?<kw>\\})\\s*(?<name>[A-Za-z_]\\w*)\\s*;"                                           \
    "|(?!(?:return|if|else|while|for|switch|do|typedef|struct|union|enum)\\b)"             \
    "[A-Za-z_][\\w \\t\\*]*?\\b(?<name>[A-Za-z_]\\w*)\\s*\\([^;\\n]*$)"
#define FILES_PAT_JS                                                                    \
    "^(?:export\\s+)?(?:default\\s+)?(?:declare\\s+)?(?:abstract\\s+)?(?:async\\s+)?"     \
    "(?<kw>function\\*?|class|interface|type|enum|const|let|var|namespace)\\s+"         \
    "(?<name>[A-Za-z_$][\\w$]*)"

static const files_lang files_langs[] = {
    {".c", "C", FILES_PAT_C, "function"},
    {".h", "C", FILES_PAT_C, "function"},
    {".cc", "C++", FILES_PAT_C, "function"},
    {".cpp", "C++", FILES_PAT_C, "function"},
    {".hpp", "C++", FILES_PAT_C, "function"},
    {".ts", "TypeScript", FILES_PAT_JS, NULL},
    {".tsx", "TypeScript", FILES_PAT_JS, NULL},
    {".mts", "TypeScript", FILES_PAT_JS, NULL},
    {".js", "JavaScript", FILES_PAT_JS, NULL},
    {".jsx", "JavaScript", FILES_PAT_JS, NULL},
    {".mjs", "JavaScript", FILES_PAT_JS, NULL},
    {".cjs", "JavaScript", FILES_PAT_JS, NULL},
    {".py", "Python", "^(?:async\\s+)?(?<kw>def|class)\\s+(?<name>[A-Za-z_]\\w*)", NULL},
    {".go", "Go", "^(?<kw>func|type|var|const)\\s+(?:\\([^)]*\\)\\s*)?(?<name>[A-Za-z_]\\w*)", NULL},
    {".rs", "Rust",
     "^(?:pub(?:\\([^)]*\\))?\\s+)?(?:async\\s+)?(?:unsafe\\s+)?"
     "(?<kw>fn|struct|enum|trait|type|mod|const|static|impl)\\s+(?:<[^>]*>\\s*)?(?<name>[A-Za-z_]\\w*)",
     NULL},
    {".java", "Java",
     "^(?:(?:public|private|protected|abstract|final|static)\\s+)*(?<kw>class|interface|enum|record)"
     "\\s+(?<name>[A-Za-z_]\\w*)",
     NULL},
    {".rb", "Ruby", "^(?<kw>def|class|module)\\s+(?<name>[A-Za-z_][\\w.?!]*)", NULL},
    {".sh", "Shell", "^(?:(?<kw>function)\\s+)?(?<name>[A-Za-z_][\\w-]*)\\s*\\(\\)", "function"},
    {".bash", "Shell", "^(?:(?<kw>function)\\s+)?(?<name>[A-Za-z_][\\w-]*)\\s*\\(\\)", "function"},
    {".lua", "Lua", "^(?:local\\s+)?(?<kw>function)\\s+(?<name>[A-Za-z_][\\w.:]*)", NULL},
    {".php", "PHP", "^(?:(?:abstract|final)\\s+)?(?<kw>function|class|interface|trait)\\s+(?<name>\\w+)", NULL},
    {".kt", "Kotlin", "^(?:(?:public|private|internal|data|sealed|open|abstract)\\s+)*(?<kw>fun|class|object|interface)\\s+(?<name>\\w+)", NULL},
    {".swift", "Swift", "^(?:(?:public|private|internal|final|open)\\s+)*(?<kw>func|class|struct|enum|protocol|extension)\\s+(?<name>\\w+)", NULL},
};
#define FILES_NLANGS (sizeof files_langs / sizeof files_langs[0])

static pcre2_code *files_re[FILES_NLANGS];
static pthread_once_t files_once = PTHREAD_ONCE_INIT;

static void files_compile(void)
{
    for (size_t i = 0; i < FILES_NLANGS; i++) {
        int ec;
        PCRE2_SIZE eo;
        files_re[i] = pcre2_compile((PCRE2_SPTR)files_langs[i].pattern, PCRE2_ZERO_TERMINATED,
                                    PCRE2_MULTILINE | PCRE2_DUPNAMES, &ec, &eo, NULL);
        if (files_re[i]) pcre2_jit_compile(files_re[i], PCRE2_JIT_COMPLETE);
    }
}

/* Compiled once, freed when the library is unloaded (dlclose runs destructors). */
__attribute__((destructor)) static void files_fini(void)
{
    for (size_t i = 0; i < FILES_NLANGS; i++) {
        pcre2_code_free(files_re[i]);
        files_re[i] = NULL;
    }
}

const char *files_kind_name(files_kind k)
{
    switch (k) {
    case FILES_KIND_CODE: return "code";
    case FILES_KIND_JSON: return "json";
    case FILES_KIND_JSONL: return "jsonl";
    case FILES_KIND_CSV: return "csv";
    case FILES_KIND_TSV: return "tsv";
    case FILES_KIND_MARKDOWN: return "markdown";
    case FILES_KIND_TEXT: return "text";
    case FILES_KIND_BINARY: return "binary";
    case FILES_KIND_LARGE_INLINE: return "large-inline";
    }
    return "text";
}

static const char *files_ext(const char *path)
{
    if (!path) return NULL;
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    const char *dot = strrchr(base, '.');
    return dot && dot != base ? dot : NULL;
}

static const files_lang *files_lang_of(const char *path)
{
    const char *ext = files_ext(path);
    if (!ext) return NULL;
    for (size_t i = 0; i < FILES_NLANGS; i++)
        if (strcasecmp(ext, files_langs[i].ext) == 0) return &files_langs[i];
    return NULL;
}

const char *files_language(const char *path)
{
    const files_lang *l = files_lang_of(path);
    return l ? l->name : NULL;
}

size_t files_utf8_prefix(const char *s, size_t len, size_t max_chars)
{
    size_t i = 0, n = 0;
    while (i < len && n < max_chars) {
        i++;
        while (i < len && ((unsigned char)s[i] & 0xC0) == 0x80) i++;
        n++;
    }
    return i;
}

size_t files_utf8_count(const char *s, size_t len)
{
    size_t n = 0, i = 0;
    /* Eight bytes at a time (every stored message is counted): all but the continuation
     * bytes (top bits 10). */
    const uint64_t top = 0x8080808080808080ull;
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        n += 8 - lc_word_count80(w & ~(w << 1) & top);
    }
    for (; i < len; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80) n++;
    return n;
}

char *files_preview(const char *body, size_t len)
{
    return lc_strndup(body, files_utf8_prefix(body, len, FILES_PREVIEW_CHARS));
}

static int files_binaryish(const char *body, size_t len)
{
    size_t n = len < 4096 ? len : 4096, ctrl = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)body[i];
        if (c == 0) return 1;
        if (c < 0x20 && c != '\n' && c != '\r' && c != '\t' && c != '\f') ctrl++;
    }
    return n && ctrl * 20 > n;
}

static const char *files_skip_ws(const char *p, const char *end)
{
    while (p < end && isspace((unsigned char)*p)) p++;
    return p;
}

/* JSONL: at least two lines, and the first two non-empty lines each parse as objects. */
static int files_looks_jsonl(const char *body, size_t len)
{
    const char *p = body, *end = body + len;
    int ok = 0;
    for (int i = 0; i < 2 && p < end; i++) {
        p = files_skip_ws(p, end);
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        if (le == p || *p != '{') return 0;
        cJSON *j = cJSON_ParseWithLength(p, (size_t)(le - p));
        int obj = cJSON_IsObject(j);
        cJSON_Delete(j);
        if (!obj) return 0;
        ok++;
        if (!nl) break;
        p = nl + 1;
    }
    return ok == 2;
}

files_kind files_classify(const char *path, const char *body, size_t len)
{
    const char *ext = files_ext(path);
    if (files_binaryish(body, len)) return FILES_KIND_BINARY;
    if (files_lang_of(path)) return FILES_KIND_CODE;
    if (ext) {
        if (!strcasecmp(ext, ".json")) return FILES_KIND_JSON;
        if (!strcasecmp(ext, ".jsonl") || !strcasecmp(ext, ".ndjson")) return FILES_KIND_JSONL;
        if (!strcasecmp(ext, ".csv")) return FILES_KIND_CSV;
        if (!strcasecmp(ext, ".tsv")) return FILES_KIND_TSV;
        if (!strcasecmp(ext, ".md") || !strcasecmp(ext, ".markdown")) return FILES_KIND_MARKDOWN;
    }
    /* No telling extension: the body decides. */
    const char *p = files_skip_ws(body, body + len);
    if (p < body + len && (*p == '{' || *p == '[')) {
        if (files_looks_jsonl(body, len)) return FILES_KIND_JSONL;
        cJSON *j = cJSON_ParseWithLength(body, len);
        int ok = j != NULL;
        cJSON_Delete(j);
        if (ok) return FILES_KIND_JSON;
    }
    if (p < body + len && *p == '#' && p + 1 < body + len && (p[1] == ' ' || p[1] == '#'))
        return FILES_KIND_MARKDOWN;
    return FILES_KIND_TEXT;
}

/* A list of names capped at FILES_NAMES_CAP, then "(+N more)". */
typedef struct files_names {
    sbuf b;
    size_t count;
} files_names;

static void files_names_add(files_names *n, const char *s, size_t len)
{
    if (n->count < FILES_NAMES_CAP) {
        if (n->count) sb_puts(&n->b, ", ");
        sb_append(&n->b, s, len > 60 ? 60 : len);
    }
    n->count++;
}

static void files_names_finish(files_names *n, sbuf *out)
{
    if (n->b.p) sb_append(out, n->b.p, n->b.len);
    if (n->count > FILES_NAMES_CAP) sb_printf(out, " (+%zu more)", n->count - FILES_NAMES_CAP);
    sb_free(&n->b);
}

static size_t files_lines(const char *body, size_t len)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        if (body[i] == '\n') n++;
    return n + (len && body[len - 1] != '\n');
}

static void files_explore_code(const files_lang *lang, const char *body, size_t len, sbuf *out)
{
    pthread_once(&files_once, files_compile);
    pcre2_code *re = files_re[lang - files_langs];
    files_names names = {0};
    sb_printf(out, "%s, %zu lines", lang->name, files_lines(body, len));
    if (!re) return;
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
    PCRE2_SIZE off = 0;
    rx_ctx rx = {0};
    int bounded = 0;
    /* A description, not a search: a bound ends the list, and says so. */
    if (rx_ctx_init(&rx, lc_now_ms() + FILES_EXPLORE_MS) != 0) {
        pcre2_match_data_free(md);
        md = NULL;
    }
    while (md && off < len) {
        int rc = rx_match(&rx, re, body, len, off, md);
        if (rc != RX_MATCH) {
            bounded = rc != RX_NOMATCH;
            break;
        }
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        PCRE2_UCHAR *kw = NULL, *name = NULL;
        PCRE2_SIZE kwl = 0, nl = 0;
        if (pcre2_substring_get_byname(md, (PCRE2_SPTR) "name", &name, &nl) != 0) name = NULL;
        if (pcre2_substring_get_byname(md, (PCRE2_SPTR) "kw", &kw, &kwl) != 0) kw = NULL;
        if (name && nl) {
            char item[128];
            const char *k = kw && kwl ? (const char *)kw : (lang->default_kw ? lang->default_kw : "decl");
            if (kw && kwl && !strcmp((const char *)kw, "#define")) k = "macro";
            if (kw && kwl && !strcmp((const char *)kw, "}")) k = "typedef";
            int w = snprintf(item, sizeof item, "%s %.*s", k, (int)(nl > 60 ? 60 : nl), (const char *)name);
            files_names_add(&names, item, w > 0 ? (size_t)w : 0);
        }
        if (kw) pcre2_substring_free(kw);
        if (name) pcre2_substring_free(name);
        /* Next line: a declaration is one per line. */
        const char *nlp = memchr(body + ov[1], '\n', len - ov[1]);
        off = nlp ? (PCRE2_SIZE)(nlp - body) + 1 : len;
    }
    pcre2_match_data_free(md);
    rx_ctx_free(&rx);
    sb_printf(out, "; %zu top-level declaration(s)%s", names.count,
              bounded ? " (scan bounded)" : "");
    if (names.count) sb_puts(out, ": ");
    files_names_finish(&names, out);
}

static void files_keys_of(const cJSON *obj, files_names *names)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, obj) if (c->string) files_names_add(names, c->string, strlen(c->string));
}

static const char *files_json_type(const cJSON *j)
{
    if (cJSON_IsObject(j)) return "object";
    if (cJSON_IsArray(j)) return "array";
    if (cJSON_IsString(j)) return "string";
    if (cJSON_IsNumber(j)) return "number";
    if (cJSON_IsBool(j)) return "boolean";
    return "null";
}

static void files_explore_json(const char *body, size_t len, sbuf *out)
{
    cJSON *j = cJSON_ParseWithLength(body, len);
    files_names names = {0};
    if (!j) {
        sb_printf(out, "JSON (does not parse), %zu chars", files_utf8_count(body, len));
        return;
    }
    if (cJSON_IsArray(j)) {
        int n = cJSON_GetArraySize(j);
        const cJSON *first = cJSON_GetArrayItem(j, 0);
        int same = 1;
        const cJSON *c;
        cJSON_ArrayForEach(c, j) if (strcmp(files_json_type(c), files_json_type(first)) != 0) same = 0;
        if (n == 0) {
            sb_puts(out, "empty array");
        } else if (same && cJSON_IsObject(first)) {
            sb_printf(out, "array of %d objects, keys: ", n);
            files_keys_of(first, &names);
            files_names_finish(&names, out);
        } else {
            sb_printf(out, "array of %d %s%s", n, same ? files_json_type(first) : "mixed value",
                      n == 1 ? "" : "s");
        }
    } else if (cJSON_IsObject(j)) {
        const cJSON *c;
        int n = cJSON_GetArraySize(j);
        sb_printf(out, "object with %d key(s): ", n);
        cJSON_ArrayForEach(c, j)
        {
            char item[160];
            int w;
            if (cJSON_IsArray(c))
                w = snprintf(item, sizeof item, "%.60s (array of %d)", c->string, cJSON_GetArraySize(c));
            else if (cJSON_IsObject(c))
                w = snprintf(item, sizeof item, "%.60s (object, %d keys)", c->string, cJSON_GetArraySize(c));
            else
                w = snprintf(item, sizeof item, "%.60s", c->string);
            files_names_add(&names, item, w > 0 ? (size_t)w : 0);
        }
        files_names_finish(&names, out);
    } else {
        sb_printf(out, "JSON %s", files_json_type(j));
    }
    cJSON_Delete(j);
}

static void files_explore_jsonl(const char *body, size_t len, sbuf *out)
{
    const char *p = body, *end = body + len;
    size_t rows = 0;
    files_names names = {0};
    cJSON *seen = cJSON_CreateObject();
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        if (files_skip_ws(p, le) < le) {
            rows++;
            /* Row keys: the union over the first rows, in order of appearance. */
            if (rows <= 200 && seen) {
                cJSON *j = cJSON_ParseWithLength(p, (size_t)(le - p));
                const cJSON *c;
                cJSON_ArrayForEach(c, j)
                {
                    if (!c->string || cJSON_GetObjectItemCaseSensitive(seen, c->string)) continue;
                    cJSON_AddTrueToObject(seen, c->string);
                    files_names_add(&names, c->string, strlen(c->string));
                }
                cJSON_Delete(j);
            }
        }
        p = nl ? nl + 1 : end;
    }
    cJSON_Delete(seen);
    sb_printf(out, "JSONL, %zu rows, row keys: ", rows);
    files_names_finish(&names, out);
}

static void files_explore_table(const char *body, size_t len, char sep, sbuf *out)
{
    const char *nl = memchr(body, '\n', len);
    const char *le = nl ? nl : body + len;
    files_names names = {0};
    const char *p = body;
    while (p <= le) {
        const char *q = memchr(p, sep, (size_t)(le - p));
        const char *fe = q ? q : le;
        const char *a = p, *b = fe;
        while (a < b && (*a == '"' || *a == ' ')) a++;
        while (b > a && (b[-1] == '"' || b[-1] == ' ' || b[-1] == '\r')) b--;
        files_names_add(&names, a, (size_t)(b - a));
        if (!q) break;
        p = q + 1;
    }
    size_t lines = files_lines(body, len);
    sb_printf(out, "%s table, %zu rows, %zu columns: ", sep == ',' ? "CSV" : "TSV",
              lines ? lines - 1 : 0, names.count);
    files_names_finish(&names, out);
}

static void files_explore_markdown(const char *body, size_t len, sbuf *out)
{
    files_names names = {0};
    const char *p = body, *end = body + len;
    int fence = 0;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        if (le - p >= 3 && !strncmp(p, "```", 3)) fence = !fence;
        if (!fence && *p == '#') {
            const char *h = p;
            while (h < le && *h == '#') h++;
            if (h < le && *h == ' ' && h - p <= 6) {
                h = files_skip_ws(h, le);
                const char *e = le;
                while (e > h && isspace((unsigned char)e[-1])) e--;
                files_names_add(&names, h, (size_t)(e - h));
            }
        }
        p = nl ? nl + 1 : end;
    }
    sb_printf(out, "Markdown, %zu lines, %zu heading(s)", files_lines(body, len), names.count);
    if (names.count) sb_puts(out, ": ");
    files_names_finish(&names, out);
}

static void files_explore_text(const char *body, size_t len, sbuf *out)
{
    const char *p = files_skip_ws(body, body + len);
    const char *nl = memchr(p, '\n', (size_t)(body + len - p));
    size_t fl = (size_t)((nl ? nl : body + len) - p);
    if (fl > 0 && p[fl - 1] == '\r') fl--;
    size_t cut = files_utf8_prefix(p, fl, 120);
    sb_printf(out, "text, %zu chars, %zu lines; first line: %.*s%s", files_utf8_count(body, len),
              files_lines(body, len), (int)cut, p, cut < fl ? "..." : "");
}

char *files_explore(const char *path, const char *body, size_t len, files_kind kind)
{
    sbuf out = {0};
    const files_lang *lang = files_lang_of(path);
    switch (kind) {
    case FILES_KIND_CODE:
        if (lang)
            files_explore_code(lang, body, len, &out);
        else
            files_explore_text(body, len, &out);
        break;
    case FILES_KIND_JSON: files_explore_json(body, len, &out); break;
    case FILES_KIND_JSONL: files_explore_jsonl(body, len, &out); break;
    case FILES_KIND_CSV: files_explore_table(body, len, ',', &out); break;
    case FILES_KIND_TSV: files_explore_table(body, len, '\t', &out); break;
    case FILES_KIND_MARKDOWN: files_explore_markdown(body, len, &out); break;
    case FILES_KIND_BINARY:
        sb_printf(&out, "%s, %zu bytes (no rule for this family)", files_ext(path) ? files_ext(path) + 1 : "binary", len);
        break;
    case FILES_KIND_LARGE_INLINE:
        sb_printf(&out, "large-inline, no path named; ");
        files_explore_text(body, len, &out);
        break;
    case FILES_KIND_TEXT: files_explore_text(body, len, &out); break;
    }
    char *s = sb_detach(&out);
    if (s && strlen(s) > FILES_SUMMARY_MAX) {
        /* Keep the summary under a preview line, never cutting a UTF-8 sequence. */
        size_t cut = FILES_SUMMARY_MAX - 3;
        cut = lc_utf8_back(s, cut);
        memcpy(s + cut, "...", 4);
    }
    return s;
}
