/*
 * redact.c -- outbound secret masking (redact.h). Four rules, compiled once and applied in
 * order over the output of the previous one: provider key shapes and PEM private keys
 * (exact prefixes and lengths, so prose that merely mentions "sk-" is left alone), header
 * and URL credentials, then secret-named assignments. A later rule sees the mask an
 * earlier one wrote and leaves it, so a key inside an assignment counts once.
 */
#include "redact.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "rx.h"
#include "util.h"

/* Redaction is bounded by rx.h (a deadline checked between matches, PCRE2's limits, fail
 * closed), and the rules are written so that no text makes one match backtrack for long:
 * a PEM body's END line is looked for at most 20,000 characters ahead, and a secret-named
 * name runs at most 200 characters past its secret word ("token_token_..." found a word at
 * every step back and scanned to the token's end from each: 5.5 s over 200 KB, now 18 ms).
 * Callouts (rx.h's time check inside a match) are not used here: in these rules they turn
 * off an optimization PCRE2 makes for a leading \b + repeat, and a long "a-a-a-..." text
 * goes from linear (4 ms) to quadratic (600 ms). */

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
    "|xapp-\\d-[A-Za-z0-9-]{10,}"                         /* Slack app-level */
    "|AIza[0-9A-Za-z_-]{35}"                              /* Google API key */
    "|hf_[A-Za-z0-9]{34,}"                                /* Hugging Face */
    "|(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{24,}"        /* Stripe */
    "|gsk_[A-Za-z0-9]{40,}"                               /* Groq */
    "|xai-[A-Za-z0-9]{60,}"                               /* xAI */
    "|npm_[A-Za-z0-9]{36}"                                /* npm */
    "|pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}"             /* PyPI */
    "|SG\\.[A-Za-z0-9_-]{22}\\.[A-Za-z0-9_-]{43}"         /* SendGrid */
    "|eyJ[A-Za-z0-9_-]{10,}\\.eyJ[A-Za-z0-9_-]{10,}\\.[A-Za-z0-9_-]{10,}" /* JWT */
    ")(?![A-Za-z0-9_-])"
    /* A PEM private key, whole; a block cut before its END line (a clipped window) is
     * masked through the end of its base64 body. */
    "|-----BEGIN[A-Z ]{0,40}PRIVATE KEY-----(?:[\\s\\S]{0,20000}?-----END[A-Z ]{0,40}PRIVATE KEY-----"
    "|[A-Za-z0-9+/=\\s]*)";

/* Credentials identified by their place, not their shape; group 1 is what gets masked:
 * the token after `Bearer`, the blob of `Authorization: Basic`, a URL's password. */
static const char redact_places_pattern[] =
    "(?|(?i:\\bbearer\\s+)([A-Za-z0-9._~+/-]{20,}=*)"
    "|(?i:\\bauthorization[\"']?\\s*[:=]\\s*[\"']?basic\\s+)([A-Za-z0-9+/]{8,}={0,2})"
    "|\\b[A-Za-z][A-Za-z0-9+.-]*://[^\\s/:@\"'<>]+:([^\\s/@\"'<>]+)@)";

/* NAME <sep> VALUE where NAME names a secret. `tokens`/`tokenizer` name counts and code,
 * `author`/`authority` are not `auth`, and a bare `_KEY` counts only in upper case (env
 * names), so `max_tokens=4096` and `sort_key=1` stay. Group env: '=' glued to the name. */
static const char redact_assign_pattern[] =
    "(?i)(?<name>\\b[A-Za-z0-9_.-]*(?:api[_-]?key|secret|token(?!s|iz)|passw(?:or)?d|pwd|"
    "credential|private[_-]?key|access[_-]?key|auth(?!or(?!iz))|(?-i:_KEY))[A-Za-z0-9_]{0,200}+)"
    "(?:(?<env>=)|[\"']?\\s*[:=]\\s*)"
    "(?:(?<q>[\"'])(?<qv>[^\"'\\n]{1,400})\\k<q>|(?<value>[^\\s\"',;]{1,400}))";

enum redact_mode { REDACT_WHOLE, REDACT_GROUP1, REDACT_ASSIGN };

static pcre2_code *redact_keys_re;
static pcre2_code *redact_places_re;
static pcre2_code *redact_assign_re;
static pthread_once_t redact_once = PTHREAD_ONCE_INIT;

static pcre2_code *redact_compile(const char *pattern)
{
    int ec;
    PCRE2_SIZE eo;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, 0,
                                   &ec, &eo, NULL);
    if (re) pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);
    return re;
}

static void redact_init(void)
{
    redact_keys_re = redact_compile(redact_keys_pattern);
    redact_places_re = redact_compile(redact_places_pattern);
    redact_assign_re = redact_compile(redact_assign_pattern);
}

/* The patterns live as long as the library: freed when the plugin is unloaded (dlclose
 * runs destructors), so a host that loads and unloads plugins does not leak them. */
__attribute__((destructor)) static void redact_fini(void)
{
    pcre2_code_free(redact_keys_re);
    pcre2_code_free(redact_places_re);
    pcre2_code_free(redact_assign_re);
    redact_keys_re = redact_places_re = redact_assign_re = NULL;
}

static int redact_has_digit(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] >= '0' && s[i] <= '9') return 1;
    return 0;
}

static int redact_has_lower(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] >= 'a' && s[i] <= 'z') return 1;
    return 0;
}

/* The name opens its line (optionally after `export `): how an env file is written. */
static int redact_at_line_start(const char *in, size_t name_start)
{
    size_t p = name_start;
    if (p >= 7 && !strncmp(in + p - 7, "export ", 7)) p -= 7;
    return p == 0 || in[p - 1] == '\n';
}

/* Whether an assignment match masks its value: [vs, ve) is the value, [ns, ne) the name. */
static int redact_assign_masks(const char *in, size_t ns, size_t ne, size_t vs, size_t ve,
                               int glued, int quoted)
{
    size_t nl = ne - ns, vl = ve - vs;
    /* $PWD and $OLDPWD are working directories, not passwords. */
    if ((nl == 3 && !strncasecmp(in + ns, "pwd", 3)) || (nl == 6 && !strncasecmp(in + ns, "oldpwd", 6)))
        return 0;
    if (redact_has_digit(in + vs, vl)) return 1;
    return glued && (!redact_has_lower(in + ns, nl) || quoted || redact_at_line_start(in, ns));
}

/* One pass of one rule over `in`, appending to `out`. Returns replacements or -1. When the
 * bound stops a match (rx.h: the call's deadline or a PCRE2 limit), what was not scanned
 * may hold a secret: it is masked whole, fail closed, with a mask that says so. */
static long redact_pass(pcre2_code *re, enum redact_mode mode, const char *in, size_t len,
                        sbuf *out, rx_ctx *rx)
{
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
    long n = 0;
    size_t off = 0, copied = 0;
    int g_name = 0, g_env = 0, g_qv = 0, g_value = 0;
    if (!md) return -1;
    if (mode == REDACT_ASSIGN) {
        g_name = pcre2_substring_number_from_name(re, (PCRE2_SPTR) "name");
        g_env = pcre2_substring_number_from_name(re, (PCRE2_SPTR) "env");
        g_qv = pcre2_substring_number_from_name(re, (PCRE2_SPTR) "qv");
        g_value = pcre2_substring_number_from_name(re, (PCRE2_SPTR) "value");
    }
    while (off <= len) {
        int rc = rx_match(rx, re, in, len, off, md);
        if (rc == RX_NOMATCH) break;
        if (rc != RX_MATCH) {
            /* Everything from `off` on is unscanned by this rule; before it, scanned. */
            sb_append(out, in + copied, off - copied);
            sb_printf(out, REDACT_BOUND_MASK, len - off,
                      rc == RX_DEADLINE ? "the redaction time limit" : rx_limit_name(rx->last_rc));
            copied = len;
            n++;
            break;
        }
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        size_t ms = ov[0], me = ov[1], vs = ms, ve = me;
        int mask = 1;
        if (mode == REDACT_GROUP1) {
            vs = ov[2];
            ve = ov[3];
            mask = vs != PCRE2_UNSET;
        } else if (mode == REDACT_ASSIGN) {
            int quoted = ov[2 * g_qv] != PCRE2_UNSET;
            int g = quoted ? g_qv : g_value;
            vs = ov[2 * g];
            ve = ov[2 * g + 1];
            mask = vs != PCRE2_UNSET &&
                   redact_assign_masks(in, ov[2 * g_name], ov[2 * g_name + 1], vs, ve,
                                       ov[2 * g_env] != PCRE2_UNSET, quoted);
        }
        /* A mask an earlier rule (or an earlier pass over this text) wrote stays as is. */
        if (mask && ve - vs >= sizeof REDACT_MASK - 2 && !strncmp(in + vs, REDACT_MASK, sizeof REDACT_MASK - 2))
            mask = 0;
        if (mask && ve > vs) {
            sb_append(out, in + copied, vs - copied);
            sb_puts(out, REDACT_MASK);
            copied = ve;
            n++;
        }
        /* A value left alone may itself open an assignment ("label-secret: api_key: 9"). */
        off = !mask && mode == REDACT_ASSIGN && vs != PCRE2_UNSET && vs > ms ? vs
              : me > ms                                                  ? me
                                                                         : ms + 1;
    }
    sb_append(out, in + copied, len - copied);
    pcre2_match_data_free(md);
    return out->oom ? -1 : n;
}

/* Run `n_rules` rules in order; each reads what the previous one wrote. */
static char *redact_run(pcre2_code *const *rules, const enum redact_mode *modes, size_t n_rules,
                        const char *s, size_t len, size_t *n_masked)
{
    sbuf cur = {0}, next = {0};
    size_t total = 0;
    char *res = NULL;
    rx_ctx rx = {0};
    /* One deadline for all the rules of one text. */
    if (rx_ctx_init(&rx, lc_now_ms() + REDACT_MS) != 0) goto done;
    if (sb_append(&cur, s, len) != LC_OK) goto done;
    for (size_t i = 0; i < n_rules; i++) {
        next.len = 0;
        long k = redact_pass(rules[i], modes[i], cur.p ? cur.p : "", cur.len, &next, &rx);
        if (k < 0) goto done;
        total += (size_t)k;
        sbuf t = cur;
        cur = next;
        next = t;
    }
    if (n_masked) *n_masked = total;
    res = sb_detach(&cur);
done:
    rx_ctx_free(&rx);
    sb_free(&cur);
    sb_free(&next);
    return res;
}

char *redact_text(const char *s, size_t len, int enabled, size_t *n_masked)
{
    if (n_masked) *n_masked = 0;
    if (!enabled) return lc_strndup(s, len);
    pthread_once(&redact_once, redact_init);
    if (!redact_keys_re || !redact_places_re || !redact_assign_re) return NULL;
    pcre2_code *const rules[] = {redact_keys_re, redact_places_re, redact_assign_re};
    const enum redact_mode modes[] = {REDACT_WHOLE, REDACT_GROUP1, REDACT_ASSIGN};
    return redact_run(rules, modes, 3, s, len, n_masked);
}

char *redact_keys(const char *s, size_t len, size_t *n_masked)
{
    if (n_masked) *n_masked = 0;
    pthread_once(&redact_once, redact_init);
    if (!redact_keys_re || !redact_places_re) return NULL;
    pcre2_code *const rules[] = {redact_keys_re, redact_places_re};
    const enum redact_mode modes[] = {REDACT_WHOLE, REDACT_GROUP1};
    return redact_run(rules, modes, 2, s, len, n_masked);
}
