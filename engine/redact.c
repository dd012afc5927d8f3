/*
 * redact.c -- outbound secret masking (redact.h). Two rule families, compiled once:
 * provider key shapes (exact prefixes and lengths, so prose that merely mentions "sk-" is
 * left alone) and secret-named assignments.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "redact.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <pcre2.h>

#include "util.h"

/* Provider key shapes. A key is a whole token: not glued to more key characters. */
static const char redact_keys_pattern[] =
    "(?<![A-Za-z0-9_-])(?:"
    "sk-ant-(?:api|admin)\\d{2}-[A-Za-z0-9_-]{80,}"       /* Anthropic */
    "|sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"    /* OpenAI and OpenAI-compatible */
    "|sk-or-v1-[a-f0-9]{64}"                              /* OpenRouter */
    "|(?:AKIA|ASIA)[0-9A-Z]{16}"                          /* AWS access key id */
    "|gh[pousr]_[A-Za-z0-9]{36,255}"                      /* GitHub tokens */
    "|github_pat_[A-Za-z0-9_]{22,255}"                    /* GitHub fine-grained */
    "|glpat-[A-Za-z0-9_-]{20,}"                           /* GitLab */
    "|xox[abposr]-[A-Za-z0-9-]{10,}"                      /* Slack */
    "|AIza[0-9A-Za-z_-]{35}"                              /* Google API key */
    "|hf_[A-Za-z0-9]{34,}"                                /* Hugging Face */
    "|(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{24,}"        /* Stripe */
    "|gsk_[A-Za-z0-9]{40,}"                               /* Groq */
    "|xai-[A-Za-z0-9]{60,}"                               /* xAI */
    "|eyJ[A-Za-z0-9_-]{10,}\\.eyJ[A-Za-z0-9_-]{10,}\\.[A-Za-z0-9_-]{10,}" /* JWT */
    ")(?![A-Za-z0-9_-])";

/* NAME <sep> VALUE where NAME names a secret. Group env: '=' glued to the name (env-file
 * style, masked whatever the value); otherwise the value must carry a digit. */
static const char redact_assign_pattern[] =
    "(?i)(?<name>\\b[A-Za-z0-9_.-]*(?:api[_-]?key|secret|token|passw(?:or)?d|passwd|pwd|"
    "credential|private[_-]?key|access[_-]?key|auth)[A-Za-z0-9_]*)"
    "(?:(?<env>=)|[\"']?\\s*[:=]\\s*)"
    "(?<q>[\"']?)(?<value>[^\\s\"',;]{1,400})";

static pcre2_code *redact_keys_re;
static pcre2_code *redact_assign_re;
static pthread_once_t redact_once = PTHREAD_ONCE_INIT;

static pcre2_code *redact_compile(const char *pattern)
{
    int ec;
    PCRE2_SIZE eo;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, 0, &ec,
                                   &eo, NULL);
    if (re) pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);
    return re;
}

static void redact_init(void)
{
    redact_keys_re = redact_compile(redact_keys_pattern);
    redact_assign_re = redact_compile(redact_assign_pattern);
}

/* The patterns live as long as the library: freed when the plugin is unloaded (dlclose
 * runs destructors), so a host that loads and unloads plugins does not leak them. */
__attribute__((destructor)) static void redact_fini(void)
{
    pcre2_code_free(redact_keys_re);
    pcre2_code_free(redact_assign_re);
    redact_keys_re = redact_assign_re = NULL;
}

static int redact_has_digit(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] >= '0' && s[i] <= '9') return 1;
    return 0;
}

/* One pass of one rule over `in`, appending to `out`. Returns replacements or -1. */
static long redact_pass(pcre2_code *re, int assign, const char *in, size_t len, sbuf *out)
{
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
    long n = 0;
    size_t off = 0, copied = 0;
    if (!md) return -1;
    uint32_t opts = 0;
    while (off <= len) {
        int rc = pcre2_match(re, (PCRE2_SPTR)in, len, off, opts, md, NULL);
        if (rc < 0) break;
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        size_t ms = ov[0], me = ov[1];
        if (!assign) {
            sb_append(out, in + copied, ms - copied);
            sb_puts(out, REDACT_MASK);
            copied = me;
            n++;
        } else {
            PCRE2_SIZE vl = 0, el = 0;
            int vnum = pcre2_substring_nametable_scan(re, (PCRE2_SPTR) "value", NULL, NULL);
            int enumr = pcre2_substring_nametable_scan(re, (PCRE2_SPTR) "env", NULL, NULL);
            size_t vs = ov[2 * vnum], ve = ov[2 * vnum + 1];
            vl = ve - vs;
            el = ov[2 * enumr] == PCRE2_UNSET ? 0 : 1;
            int already = vl >= strlen(REDACT_MASK) - 1 && !strncmp(in + vs, REDACT_MASK, strlen(REDACT_MASK) - 1);
            if (!already && (el || redact_has_digit(in + vs, vl))) {
                sb_append(out, in + copied, vs - copied);
                sb_puts(out, REDACT_MASK);
                copied = ve;
                n++;
            }
        }
        off = me > ms ? me : ms + 1;
    }
    sb_append(out, in + copied, len - copied);
    pcre2_match_data_free(md);
    return out->oom ? -1 : n;
}

char *redact_text(const char *s, size_t len, int enabled, size_t *n_masked)
{
    sbuf a = {0}, b = {0};
    char *res = NULL;
    if (n_masked) *n_masked = 0;
    if (!enabled) return lc_strndup(s, len);
    pthread_once(&redact_once, redact_init);
    if (!redact_keys_re || !redact_assign_re) return NULL;
    long k = redact_pass(redact_keys_re, 0, s, len, &a);
    if (k < 0) goto done;
    long m = redact_pass(redact_assign_re, 1, a.p ? a.p : "", a.len, &b);
    if (m < 0) goto done;
    if (n_masked) *n_masked = (size_t)(k + m);
    res = sb_detach(&b);
done:
    sb_free(&a);
    sb_free(&b);
    return res;
}
