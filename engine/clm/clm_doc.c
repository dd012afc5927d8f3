/*
 * clm_doc.c -- render the effective context as LIVE_CONTEXT.md and parse it back
 * (see clm_doc.h). The parser is exposed to model-written and fuzzed bytes: it never
 * trusts lengths or terminators and records problems instead of failing.
 */
#include "clm_doc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sha256.h"

static const char META_MARK[] = "[[LIVE_CONTEXT ";
static const char HEAD_MARK[] = "[[CTX_TURN ";

/* ------------------------------------------------------------------ nonces */

void clm_nonce_stable(const char *session_id, const char *anchor_digest, long revision,
                      char out[CLM_NONCE_LEN + 1])
{
    sha256_ctx c;
    uint8_t d[32];
    char hex[65], rev[32];
    sha256_init(&c);
    sha256_update(&c, "clm-nonce\n", 10);
    if (session_id) sha256_update(&c, session_id, strlen(session_id));
    sha256_update(&c, "\n", 1);
    if (anchor_digest) sha256_update(&c, anchor_digest, strlen(anchor_digest));
    snprintf(rev, sizeof rev, "\n%ld", revision);
    sha256_update(&c, rev, strlen(rev));
    sha256_final(&c, d);
    sha256_to_hex(d, hex);
    memcpy(out, hex, CLM_NONCE_LEN);
    out[CLM_NONCE_LEN] = '\0';
}

void clm_nonce_fresh(const char *session_id, unsigned long salt, char out[CLM_NONCE_LEN + 1])
{
    char buf[96];
    /* The clock makes nonces of different process lifetimes differ; the salt makes two
     * renders within one millisecond differ. */
    snprintf(buf, sizeof buf, "fresh\n%.3f\n%lu", lc_now_ms(), salt);
    clm_nonce_stable(session_id, buf, (long)salt, out);
}

/* ------------------------------------------------------------------ escaping */

/* Length of a marker ("[[CTX_TURN " / "[[LIVE_CONTEXT ") at p after k backslashes, or
 * 0 when the line at p is not marker-like. */
static size_t marker_after_backslashes(const char *p, size_t n, size_t *k_out)
{
    size_t k = 0;
    while (k < n && p[k] == '\\') k++;
    *k_out = k;
    size_t rest = n - k;
    if (rest >= sizeof HEAD_MARK - 1 && memcmp(p + k, HEAD_MARK, sizeof HEAD_MARK - 1) == 0)
        return sizeof HEAD_MARK - 1;
    if (rest >= sizeof META_MARK - 1 && memcmp(p + k, META_MARK, sizeof META_MARK - 1) == 0)
        return sizeof META_MARK - 1;
    return 0;
}

int clm_escape_append(sbuf *b, const char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        const char *nl = memchr(s + i, '\n', n - i);
        size_t end = nl ? (size_t)(nl - s) + 1 : n;
        size_t k;
        if (marker_after_backslashes(s + i, end - i, &k)) sb_putc(b, '\\');
        sb_append(b, s + i, end - i);
        i = end;
    }
    return b->oom ? LC_NOMEM : LC_OK;
}

char *clm_unescape(const char *s, size_t n, size_t *out_len)
{
    sbuf b = {0};
    size_t i = 0;
    sb_reserve(&b, n);
    while (i < n) {
        const char *nl = memchr(s + i, '\n', n - i);
        size_t end = nl ? (size_t)(nl - s) + 1 : n;
        size_t k;
        size_t skip = (marker_after_backslashes(s + i, end - i, &k) && k > 0) ? 1 : 0;
        sb_append(&b, s + i + skip, end - i - skip);
        i = end;
    }
    if (out_len) *out_len = b.len;
    return sb_detach(&b);
}

/* ------------------------------------------------------------------ view */

static int token_char(char c, int allow_colon)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '-' || c == '.' || (allow_colon && c == ':');
}

static int valid_token(const char *s, size_t max, int allow_colon)
{
    size_t n = 0;
    if (!s || !*s) return 0;
    for (; s[n]; n++)
        if (!token_char(s[n], allow_colon)) return 0;
    return n < max;
}

/* Body text with trailing line breaks cut: the form compared to detect an edit. */
static size_t trim_trailing_newlines(const char *s, size_t n)
{
    while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r')) n--;
    return n;
}

char *clm_body_text(const char *json, size_t json_len)
{
    cJSON *m = cJSON_ParseWithLength(json, json_len);
    char *t = m ? msg_derive_text(m, NULL) : lc_strdup("");
    cJSON_Delete(m);
    return t;
}

static void label_of(const cJSON *m, msg_role role, char out[CLM_LABEL_MAX])
{
    const char *name = msg_role_name(role);
    if (role == MSG_ROLE_CUSTOM) {
        const cJSON *d = cJSON_GetObjectItemCaseSensitive(m, "details");
        const cJSON *r = cJSON_GetObjectItemCaseSensitive(d, "contextRole");
        if (cJSON_IsString(r) && valid_token(r->valuestring, CLM_LABEL_MAX, 0))
            name = r->valuestring;
    } else if (role == MSG_ROLE_UNKNOWN) {
        const cJSON *r = cJSON_GetObjectItemCaseSensitive(m, "role");
        if (cJSON_IsString(r) && valid_token(r->valuestring, CLM_LABEL_MAX, 0))
            name = r->valuestring;
    }
    snprintf(out, CLM_LABEL_MAX, "%s", name);
}

static char *sanitized_dup(const char *s)
{
    if (!s) return NULL;
    size_t n = strlen(s);
    if (n > 64) n = 64;
    char *o = lc_strndup(s, n);
    if (!o) return NULL;
    for (size_t i = 0; i < n; i++)
        if (!token_char(o[i], 0)) o[i] = '_';
    return o;
}

static int nonce_check(const char *nonce, char **err)
{
    if (!nonce || strlen(nonce) != CLM_NONCE_LEN || !valid_token(nonce, CLM_NONCE_LEN + 1, 0))
        return lc_errf(err, LC_INVALID, "clm view: the nonce must be %d hex characters",
                       CLM_NONCE_LEN);
    return LC_OK;
}

int clm_view_init(clm_view *v, clm_mode mode, long revision, const char *nonce, char **err)
{
    memset(v, 0, sizeof *v);
    int rc = nonce_check(nonce, err);
    if (rc != LC_OK) return rc;
    v->mode = mode;
    v->revision = revision;
    memcpy(v->nonce, nonce, CLM_NONCE_LEN + 1);
    v->user_first = v->user_last = -1;
    v->prot[0] = v->prot[1] = -1;
    return LC_OK;
}

static void vmsg_free(clm_vmsg *m)
{
    LC_FREE(m->json, m->call_id, m->tool, m->key);
    for (size_t i = 0; i < m->n_calls; i++) free(m->calls[i]);
    free(m->calls);
}

void clm_view_free(clm_view *v)
{
    if (!v) return;
    for (size_t i = 0; i < v->n; i++) vmsg_free(&v->msgs[i]);
    LC_FREE(v->msgs, v->meta_line, v->seg_ckpt);
    sb_free(&v->bodies);
    memset(v, 0, sizeof *v);
}

static int collect_calls(clm_vmsg *vm, const cJSON *m)
{
    const cJSON *content = cJSON_GetObjectItemCaseSensitive(m, "content");
    const cJSON *b;
    size_t n = 0;
    cJSON_ArrayForEach(b, content) {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(b, "type");
        if (cJSON_IsString(t) && strcmp(t->valuestring, "toolCall") == 0) n++;
    }
    if (n == 0) return LC_OK;
    vm->calls = calloc(n, sizeof *vm->calls);
    if (!vm->calls) return LC_NOMEM;
    cJSON_ArrayForEach(b, content) {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(b, "type");
        if (!cJSON_IsString(t) || strcmp(t->valuestring, "toolCall") != 0) continue;
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(b, "id");
        vm->calls[vm->n_calls] = lc_strdup(cJSON_IsString(id) ? id->valuestring : "");
        if (!vm->calls[vm->n_calls]) return LC_NOMEM;
        vm->n_calls++;
    }
    return LC_OK;
}

/* The assistant (searching backwards) whose toolCall carries `call_id`. */
static long find_owner(const clm_view *v, const char *call_id)
{
    if (!call_id) return -1;
    for (size_t j = v->n; j-- > 0;) {
        const clm_vmsg *a = &v->msgs[j];
        if (a->role != MSG_ROLE_ASSISTANT) continue;
        for (size_t c = 0; c < a->n_calls; c++)
            if (strcmp(a->calls[c], call_id) == 0) return (long)j;
    }
    return -1;
}

int clm_view_add(clm_view *v, const char *json, size_t json_len, long origin,
                 const char *key, char **err)
{
    int rc = LC_OK;
    cJSON *m = NULL;
    char *body = NULL;
    clm_vmsg vm;
    memset(&vm, 0, sizeof vm);
    vm.owner = -1;

    m = cJSON_ParseWithLength(json, json_len);
    if (!cJSON_IsObject(m)) {
        rc = lc_errf(err, LC_INVALID, "clm view: message %zu is not a JSON object", v->n + 1);
        goto done;
    }
    clm_vmsg *p = lc_grow(v->msgs, &v->cap, v->n + 1, sizeof *p);
    if (!p) { rc = LC_NOMEM; goto done; }
    v->msgs = p;
    vm.json = lc_strndup(json, json_len);
    body = msg_derive_text(m, NULL);
    if (!vm.json || !body) { rc = LC_NOMEM; goto done; }
    if (key && !(vm.key = lc_strdup(key))) { rc = LC_NOMEM; goto done; }
    vm.json_len = json_len;
    vm.origin = origin;
    vm.role = msg_role_of(m);
    label_of(m, vm.role, vm.label);
    vm.tokens = msg_estimate_tokens(m);
    size_t blen = strlen(body);
    sha256(body, trim_trailing_newlines(body, blen), vm.body_digest);

    if (vm.role == MSG_ROLE_TOOL_RESULT) {
        const char *cid = msg_tool_call_id(m);
        if (cid && !(vm.call_id = lc_strdup(cid))) { rc = LC_NOMEM; goto done; }
        vm.tool = sanitized_dup(msg_tool_name(m));
        vm.owner = find_owner(v, vm.call_id);
    } else if (vm.role == MSG_ROLE_ASSISTANT) {
        if ((rc = collect_calls(&vm, m)) != LC_OK) goto done;
    }

    /* Ids: the ordinal keeps equal texts apart; the hash makes a stale id fail loudly
     * instead of silently naming a different message at the same position. */
    {
        sha256_ctx c;
        uint8_t d[32];
        char hex[65];
        sha256_init(&c);
        if (key && *key) {
            sha256_update(&c, "key\n", 4);
            sha256_update(&c, key, strlen(key));
        } else {
            sha256_update(&c, vm.label, strlen(vm.label));
            sha256_update(&c, "\n", 1);
            sha256_update(&c, body, blen);
        }
        sha256_final(&c, d);
        sha256_to_hex(d, hex);
        snprintf(vm.id, sizeof vm.id, "%zu-%.12s", v->n + 1, hex);
    }

    vm.body_off = v->bodies.len;
    if ((rc = clm_escape_append(&v->bodies, body, blen)) != LC_OK) goto done;
    vm.body_len = v->bodies.len - vm.body_off;

    if (vm.owner >= 0) v->msgs[vm.owner].n_results++;
    if (vm.role == MSG_ROLE_USER) {
        if (v->user_first < 0) v->user_first = (long)v->n;
        v->user_last = (long)v->n;
    }
    v->msgs[v->n++] = vm;
    memset(&vm, 0, sizeof vm);
    v->finished = 0;
done:
    vmsg_free(&vm);
    free(body);
    cJSON_Delete(m);
    return rc;
}

int clm_view_same(const clm_view *v, size_t i, const char *json, size_t json_len, long origin,
                  const char *key)
{
    if (i >= v->n) return 0;
    const clm_vmsg *m = &v->msgs[i];
    if (m->origin != origin || m->json_len != json_len) return 0;
    /* The id derives from the key when one is given, else from the text: an empty key
     * counts as none there, but equality here stays strict (NULL vs "" differ) so that
     * "same" never needs reasoning about what the id derivation ignores. */
    if ((m->key == NULL) != (key == NULL)) return 0;
    if (key && strcmp(m->key, key) != 0) return 0;
    return memcmp(m->json, json, json_len) == 0;
}

void clm_view_truncate(clm_view *v, size_t n)
{
    if (n >= v->n) return;
    for (size_t i = n; i < v->n; i++) {
        long o = v->msgs[i].owner;
        /* An owner always precedes its result, so only kept owners need their count fixed. */
        if (o >= 0 && (size_t)o < n) v->msgs[o].n_results--;
    }
    v->bodies.len = v->msgs[n].body_off;
    if (v->bodies.p) v->bodies.p[v->bodies.len] = '\0';
    for (size_t i = n; i < v->n; i++) vmsg_free(&v->msgs[i]);
    v->n = n;
    if (v->user_first >= (long)n) v->user_first = v->user_last = -1;
    if (v->user_last >= (long)n) {
        v->user_last = -1; /* the latest user message before the cut: a walk back to it */
        for (size_t i = n; i-- > (size_t)v->user_first && v->user_last < 0;)
            if (v->msgs[i].role == MSG_ROLE_USER) v->user_last = (long)i;
    }
    for (int j = 0; j < 2; j++)
        if (v->prot[j] >= (long)n) v->prot[j] = -1; /* gone, and its flag with it */
    if (v->base_n > n) v->base_n = 0; /* the digest cannot be rewound: hash the ids again */
    if (v->seg_valid > n) v->seg_valid = n;
    v->finished = 0;
}

int clm_view_rebase(clm_view *v, long revision, const char *nonce, char **err)
{
    int rc = nonce_check(nonce, err);
    if (rc != LC_OK) return rc;
    v->revision = revision;
    memcpy(v->nonce, nonce, CLM_NONCE_LEN + 1);
    v->finished = 0;
    return LC_OK;
}

long clm_view_find(const clm_view *v, const char *id)
{
    /* Ids start with their ordinal: try that slot first, then scan. */
    char *end = NULL;
    long ord = strtol(id, &end, 10);
    if (end && *end == '-' && ord >= 1 && (size_t)ord <= v->n &&
        strcmp(v->msgs[ord - 1].id, id) == 0)
        return ord - 1;
    for (size_t i = 0; i < v->n; i++)
        if (strcmp(v->msgs[i].id, id) == 0) return (long)i;
    return -1;
}

static int view_finish(clm_view *v)
{
    if (v->finished) return LC_OK;
    /* Conservative mode protects the first and the latest user message; only those two
     * (now and at the previous finish) are visited, not the whole view. */
    long want[2] = {-1, -1};
    if (v->mode == CLM_MODE_CONSERVATIVE) {
        want[0] = v->user_first;
        want[1] = v->user_last != v->user_first ? v->user_last : -1;
    }
    /* A block whose protected= flag changed renders differently: the resumable digest of
     * the blocks is valid only before it. */
    for (int j = 0; j < 2; j++) {
        long o = v->prot[j];
        if (o < 0 || o == want[0] || o == want[1]) continue;
        v->msgs[o].is_protected = 0;
        if ((size_t)o < v->seg_valid) v->seg_valid = (size_t)o;
    }
    for (int j = 0; j < 2; j++) {
        long u = want[j];
        if (u < 0 || u == v->prot[0] || u == v->prot[1]) continue;
        v->msgs[u].is_protected = 1;
        if ((size_t)u < v->seg_valid) v->seg_valid = (size_t)u;
    }
    v->prot[0] = want[0];
    v->prot[1] = want[1];
    uint8_t d[32];
    char hex[65];
    if (v->base_n == 0) sha256_init(&v->base_ctx);
    for (size_t i = v->base_n; i < v->n; i++) {
        sha256_update(&v->base_ctx, v->msgs[i].id, strlen(v->msgs[i].id));
        sha256_update(&v->base_ctx, "\n", 1);
    }
    v->base_n = v->n;
    sha256_ctx c = v->base_ctx;
    sha256_final(&c, d);
    sha256_to_hex(d, hex);
    memcpy(v->baseline, hex, 12);
    v->baseline[12] = '\0';
    free(v->meta_line);
    v->meta_line = lc_asprintf("[[LIVE_CONTEXT version=1 revision=%ld document=%s baseline=%s]]",
                               v->revision, v->nonce, v->baseline);
    if (!v->meta_line) return LC_NOMEM;
    v->finished = 1;
    return LC_OK;
}

void clm_mirror_digest(const char *text, size_t len, uint8_t out[32])
{
    const char *nl = memchr(text, '\n', len);
    size_t first = nl ? (size_t)(nl - text) + 1 : len;
    uint8_t a[32], b[32];
    sha256(text, first, a);
    sha256(text + first, len - first, b);
    sha256_ctx c;
    sha256_init(&c);
    sha256_update(&c, "clm-mirror\n", 11);
    sha256_update(&c, a, 32);
    sha256_update(&c, b, 32);
    sha256_final(&c, out);
}

/* Headers are appended piecewise, not with sb_printf: formatting is most of the cost of
 * a render once the bodies are kept, and there is one header per message. */
static void render_block(const clm_view *v, size_t i, sbuf *b)
{
    const clm_vmsg *m = &v->msgs[i];
    char num[24];
    size_t w = 0;
    for (size_t x = i + 1; x; x /= 10) num[sizeof num - 1 - w++] = (char)('0' + x % 10);
    sb_append(b, HEAD_MARK, sizeof HEAD_MARK - 1);
    sb_append(b, "document=", 9);
    sb_append(b, v->nonce, CLM_NONCE_LEN);
    sb_append(b, " index=", 7);
    sb_append(b, num + sizeof num - w, w);
    sb_append(b, " role=", 6);
    sb_puts(b, m->label);
    sb_append(b, " id=", 4);
    sb_puts(b, m->id);
    if (m->is_protected) sb_append(b, " protected=true", 15);
    else sb_append(b, " protected=false", 16);
    if (m->tool) {
        sb_append(b, " tool=", 6);
        sb_puts(b, m->tool);
    }
    sb_append(b, "]]\n", 3);
    if (m->body_len) sb_append(b, v->bodies.p + m->body_off, m->body_len);
    sb_append(b, "\n\n", 2);
}

static size_t render_room(const clm_view *v, size_t from)
{
    size_t per = strlen(HEAD_MARK) + strlen("document= index= role= id= protected=false tool=]]\n\n\n") +
                 CLM_NONCE_LEN + 24 + CLM_LABEL_MAX + CLM_ID_MAX + 64;
    size_t body = from < v->n ? v->bodies.len - v->msgs[from].body_off : 0;
    return body + (v->n - from) * per;
}

static int seg_room(clm_view *v)
{
    sha256_ctx *p = lc_grow(v->seg_ckpt, &v->cap_seg_ckpt, v->n / CLM_SEG_CKPT + 1, sizeof *p);
    if (!p) return LC_NOMEM;
    v->seg_ckpt = p;
    return LC_OK;
}

/* Render blocks [from, v->n) into b, folding their bytes into `rest` (the digest of the
 * blocks before `from`) and taking a checkpoint before every CLM_SEG_CKPT-th block. */
static void render_blocks(clm_view *v, size_t from, sbuf *b, sha256_ctx *rest)
{
    size_t rest_start = b->len;
    for (size_t i = from; i < v->n; i++) {
        if (i > 0 && i % CLM_SEG_CKPT == 0 && v->n_seg_ckpt == i / CLM_SEG_CKPT && !b->oom) {
            sha256_update(rest, b->p + rest_start, b->len - rest_start);
            rest_start = b->len;
            v->seg_ckpt[v->n_seg_ckpt++] = *rest;
        }
        render_block(v, i, b);
    }
    if (!b->oom && b->len > rest_start) sha256_update(rest, b->p + rest_start, b->len - rest_start);
}

/* The digest of a text whose first line is `meta` + "\n" and whose rest hashed to `rest`
 * (clm_mirror_digest, computed without the text). */
static void render_digest(const char *meta, const sha256_ctx *rest, uint8_t digest[32])
{
    uint8_t a[32], r[32];
    sha256_ctx c;
    sha256_init(&c);
    sha256_update(&c, meta, strlen(meta));
    sha256_update(&c, "\n", 1);
    sha256_final(&c, a);
    c = *rest;
    sha256_final(&c, r);
    sha256_init(&c);
    sha256_update(&c, "clm-mirror\n", 11);
    sha256_update(&c, a, 32);
    sha256_update(&c, r, 32);
    sha256_final(&c, digest);
}

static int render_text(clm_view *v, char **out, size_t *out_len, uint8_t *digest, char **err)
{
    int rc;
    sbuf b = {0};
    sha256_ctx rest;
    size_t from = 0;
    memset(&rest, 0, sizeof rest);
    *out = NULL;
    if ((rc = view_finish(v)) != LC_OK) goto done;
    if (digest) {
        if (strcmp(v->seg_nonce, v->nonce) != 0) v->seg_valid = 0;
        size_t j = v->seg_valid / CLM_SEG_CKPT;
        if (j >= v->n_seg_ckpt) j = v->n_seg_ckpt ? v->n_seg_ckpt - 1 : 0;
        if (seg_room(v) != LC_OK) { rc = LC_NOMEM; goto done; }
        if (v->n_seg_ckpt == 0) {
            sha256_init(&v->seg_ckpt[0]);
            sha256_update(&v->seg_ckpt[0], "\n", 1); /* the blank line after the metadata */
        }
        rest = v->seg_ckpt[j];
        v->n_seg_ckpt = j + 1;
        from = j * CLM_SEG_CKPT;
    }
    sb_reserve(&b, strlen(v->meta_line) + 2 + render_room(v, 0));
    sb_puts(&b, v->meta_line);
    sb_puts(&b, "\n\n");
    /* Blocks before `from` are only copied: their digest is the checkpoint's. */
    sha256_ctx skip;
    sha256_init(&skip);
    for (size_t i = 0; i < from && i < v->n; i++) render_block(v, i, &b);
    render_blocks(v, from < v->n ? from : v->n, &b, digest ? &rest : &skip);
    if (b.oom) { rc = LC_NOMEM; goto done; }
    if (digest) {
        v->seg_valid = v->n;
        memcpy(v->seg_nonce, v->nonce, sizeof v->seg_nonce);
        render_digest(v->meta_line, &rest, digest);
        v->seg_end = rest;
        v->out_ok = 1;
        v->out_len = b.len;
        v->out_n = v->n;
        v->out_meta_len = strlen(v->meta_line);
    }
    if (out_len) *out_len = b.len;
    *out = sb_detach(&b);
done:
    sb_free(&b);
    if (rc == LC_NOMEM) lc_errf(err, rc, "clm render: out of memory");
    return rc;
}

int clm_view_render(clm_view *v, char **out, size_t *out_len, char **err)
{
    return render_text(v, out, out_len, NULL, err);
}

int clm_view_render_digest(clm_view *v, char **out, size_t *out_len, uint8_t digest[32],
                           char **err)
{
    return render_text(v, out, out_len, digest, err);
}

int clm_view_render_delta(clm_view *v, int allow_delta, char **head, size_t *head_len,
                          char **tail, size_t *tail_len, size_t *tail_at, uint8_t digest[32],
                          char **err)
{
    int rc;
    sbuf b = {0};
    *head = *tail = NULL;
    *head_len = *tail_len = *tail_at = 0;
    if ((rc = view_finish(v)) != LC_OK) goto done;
    /* Every block of the previous render still renders as it did (same nonce, none
     * dropped or re-flagged since), and the first line keeps its length. */
    if (!allow_delta || !v->out_ok || strcmp(v->seg_nonce, v->nonce) != 0 ||
        v->seg_valid < v->out_n || v->out_n > v->n || strlen(v->meta_line) != v->out_meta_len)
        return render_text(v, tail, tail_len, digest, err);
    if (seg_room(v) != LC_OK) { rc = LC_NOMEM; goto done; }
    sha256_ctx rest = v->seg_end;
    sb_reserve(&b, render_room(v, v->out_n));
    render_blocks(v, v->out_n, &b, &rest);
    if (b.oom) { rc = LC_NOMEM; goto done; }
    if (!(*head = lc_asprintf("%s\n", v->meta_line))) { rc = LC_NOMEM; goto done; }
    *head_len = v->out_meta_len + 1;
    *tail_at = v->out_len;
    *tail_len = b.len;
    *tail = b.len ? sb_detach(&b) : lc_strdup("");
    if (!*tail) { rc = LC_NOMEM; goto done; }
    render_digest(v->meta_line, &rest, digest);
    v->seg_end = rest;
    v->seg_valid = v->n;
    v->out_len += *tail_len;
    v->out_n = v->n;
done:
    sb_free(&b);
    if (rc != LC_OK) {
        free(*head);
        free(*tail);
        *head = *tail = NULL;
        v->out_ok = 0;
        lc_errf(err, rc, "clm render: out of memory");
    }
    return rc;
}

/* ------------------------------------------------------------------ parse */

/* Length of a valid UTF-8 sequence at p (1..4), 0 when invalid or NUL. */
static size_t utf8_len(const unsigned char *p, size_t n)
{
    unsigned char c = p[0];
    if (c == 0) return 0;
    if (c < 0x80) return 1;
    size_t need;
    unsigned min;
    unsigned cp;
    if ((c & 0xE0) == 0xC0) { need = 2; cp = c & 0x1F; min = 0x80; }
    else if ((c & 0xF0) == 0xE0) { need = 3; cp = c & 0x0F; min = 0x800; }
    else if ((c & 0xF8) == 0xF0) { need = 4; cp = c & 0x07; min = 0x10000; }
    else return 0;
    if (n < need) return 0;
    for (size_t i = 1; i < need; i++) {
        if ((p[i] & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (p[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return need;
}

/* LC_NOMEM when the sentence could not be made: the problem would be lost and the edit
 * read as sound, so the parse fails instead. */
static int doc_problem(clm_doc *doc, size_t line, const char *fmt, const char *arg)
{
    if (doc->problem) return LC_OK; /* the first problem is the one worth reporting */
    doc->problem = lc_asprintf(fmt, arg ? arg : "");
    doc->problem_line = line;
    return doc->problem ? LC_OK : LC_NOMEM;
}

/* parse_structural's answer when a value could not be copied: not a fault of the line. */
static const char why_nomem[] = "out of memory";

/* Split "key=value key=value" (inner text of a structural line) and look up keys. */
typedef struct attrs {
    const char *keys[8];
    char *vals[8];
    size_t n;
} attrs;

static void attrs_free(attrs *a)
{
    for (size_t i = 0; i < a->n; i++) free(a->vals[i]);
    a->n = 0;
}

static const char *attr(const attrs *a, const char *key)
{
    for (size_t i = 0; i < a->n; i++)
        if (strcmp(a->keys[i], key) == 0) return a->vals[i];
    return NULL;
}

/* Parse the line [p, p+n) (no newline) that starts with `mark`. Returns 0 on success,
 * else a static reason. Only the keys listed in `known` are kept; others are ignored. */
static const char *parse_structural(const char *p, size_t n, size_t mark_len,
                                    const char *const *known, attrs *a)
{
    while (n > 0 && (p[n - 1] == '\r' || p[n - 1] == ' ' || p[n - 1] == '\t')) n--;
    if (n < mark_len + 2 || p[n - 2] != ']' || p[n - 1] != ']') return "it does not end with ]]";
    size_t i = mark_len, end = n - 2;
    while (i < end) {
        while (i < end && p[i] == ' ') i++;
        if (i >= end) break;
        size_t s = i;
        while (i < end && p[i] != ' ') i++;
        const char *eq = memchr(p + s, '=', i - s);
        if (!eq || eq == p + s) return "an attribute is not key=value";
        size_t klen = (size_t)(eq - (p + s));
        size_t vlen = i - s - klen - 1;
        if (vlen == 0) return "an attribute has an empty value";
        for (size_t k = 0; known[k]; k++) {
            if (strlen(known[k]) != klen || memcmp(known[k], p + s, klen) != 0) continue;
            if (attr(a, known[k])) return "an attribute is repeated";
            if (a->n == 8) break;
            char *val = lc_strndup(eq + 1, vlen);
            if (!val) return why_nomem;
            a->keys[a->n] = known[k];
            a->vals[a->n++] = val;
        }
    }
    return NULL;
}

static int add_block(clm_doc *doc, size_t line, const attrs *a)
{
    clm_block *p = lc_grow(doc->blocks, &doc->cap_blocks, doc->n_blocks + 1, sizeof *p);
    if (!p) return LC_NOMEM;
    doc->blocks = p;
    clm_block *b = &doc->blocks[doc->n_blocks];
    memset(b, 0, sizeof *b);
    b->line = line;
    b->nonce = lc_strdup(attr(a, "document"));
    b->id = lc_strdup(attr(a, "id"));
    b->label = lc_strdup(attr(a, "role"));
    doc->n_blocks++;
    if (!b->nonce || !b->id || !b->label) return LC_NOMEM;
    return LC_OK;
}

static int set_body(clm_doc *doc, const char *text, size_t start, size_t end)
{
    if (doc->n_blocks == 0) return LC_OK;
    clm_block *b = &doc->blocks[doc->n_blocks - 1];
    size_t n = trim_trailing_newlines(text + start, end - start);
    b->body = clm_unescape(text + start, n, &b->body_len);
    return b->body ? LC_OK : LC_NOMEM;
}

static int only_blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\n' && s[i] != '\r') return 0;
    return 1;
}

int clm_doc_parse(const char *text, size_t len, clm_doc *doc, char **err)
{
    static const char *const meta_keys[] = {"version", "revision", "document", "baseline", NULL};
    static const char *const head_keys[] = {"document", "index", "role", "id", "protected",
                                            "tool", NULL};
    int rc = LC_OK;
    sbuf plain = {0};
    memset(doc, 0, sizeof *doc);
    doc->meta_version = -1;
    doc->meta_revision = -1;

    size_t pos = 0, line = 0;
    size_t body_start = 0;       /* start of the current block's body */
    size_t outside_start = 0;    /* start of text before the first block */
    int seen_content = 0;        /* a non-blank line was seen (metadata must be first) */
    size_t bad_utf8_line = 0;
    size_t first_outside_line = 0;

    while (pos < len) {
        line++;
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t end = nl ? (size_t)(nl - text) : len;     /* line without '\n' */
        size_t next = nl ? end + 1 : len;
        const char *p = text + pos;
        size_t n = end - pos;

        for (size_t i = 0; i < n && !bad_utf8_line;) {
            size_t k = utf8_len((const unsigned char *)p + i, n - i);
            if (k == 0) bad_utf8_line = line;
            i += k ? k : 1;
        }

        int is_meta = n >= sizeof META_MARK - 1 && memcmp(p, META_MARK, sizeof META_MARK - 1) == 0;
        int is_head = n >= sizeof HEAD_MARK - 1 && memcmp(p, HEAD_MARK, sizeof HEAD_MARK - 1) == 0;

        if (is_meta && !seen_content && !doc->has_meta) {
            attrs a = {0};
            const char *why = parse_structural(p, n, sizeof META_MARK - 1, meta_keys, &a);
            doc->has_meta = 1;
            doc->meta_line = line;
            if (why == why_nomem) {
                rc = LC_NOMEM;
            } else if (why) {
                rc = doc_problem(doc, line, "the metadata line is malformed: %s", why);
            } else {
                const char *ver = attr(&a, "version"), *rev = attr(&a, "revision");
                char *e = NULL;
                if (ver) { long x = strtol(ver, &e, 10); if (e && !*e) doc->meta_version = x; }
                if (rev) { long x = strtol(rev, &e, 10); if (e && !*e) doc->meta_revision = x; }
                const char *nonce = attr(&a, "document");
                if (nonce && !(doc->meta_nonce = lc_strdup(nonce))) rc = LC_NOMEM;
            }
            attrs_free(&a);
            seen_content = 1;
            outside_start = next;
            pos = next;
            if (rc != LC_OK) goto done;
            continue;
        }
        sb_append(&plain, p, next - pos);
        if (!only_blank(p, n)) {
            seen_content = 1;
            if (doc->n_blocks == 0 && !is_head && !first_outside_line) first_outside_line = line;
        }

        if (is_meta) {
            rc = doc_problem(doc, line,
                             "a [[LIVE_CONTEXT metadata line appears inside the document (only "
                             "the first line may be one); escape it with a leading backslash or "
                             "remove it%s", NULL);
            if (rc != LC_OK) goto done;
        } else if (is_head) {
            attrs a = {0};
            const char *why = parse_structural(p, n, sizeof HEAD_MARK - 1, head_keys, &a);
            if (why == why_nomem) {
                attrs_free(&a);
                rc = LC_NOMEM;
                goto done;
            }
            if (!why) {
                if (!attr(&a, "document")) why = "it has no document= attribute";
                else if (!valid_token(attr(&a, "id") ? attr(&a, "id") : "", CLM_ID_MAX, 1))
                    why = "its id= is missing or not a short token of letters, digits, '-', '_', '.', ':'";
                else if (!valid_token(attr(&a, "role") ? attr(&a, "role") : "", CLM_LABEL_MAX, 0))
                    why = "its role= is missing or not a short token of letters, digits, '-', '_', '.'";
            }
            if (why) {
                rc = doc_problem(doc, line, "a block header is malformed: %s", why);
                attrs_free(&a);
                if (rc != LC_OK) goto done;
                pos = next;
                continue;
            }
            if (doc->n_blocks == 0) {
                if (!only_blank(text + outside_start, pos - outside_start)) {
                    doc->outside = clm_unescape(text + outside_start,
                                                trim_trailing_newlines(text + outside_start,
                                                                       pos - outside_start),
                                                NULL);
                    if (!doc->outside) rc = LC_NOMEM;
                    doc->outside_line = first_outside_line;
                }
            } else if (rc == LC_OK) {
                rc = set_body(doc, text, body_start, pos);
            }
            if (rc == LC_OK) rc = add_block(doc, line, &a);
            attrs_free(&a);
            if (rc != LC_OK) goto done;
            body_start = next;
        }
        pos = next;
    }
    if (doc->n_blocks > 0) {
        if ((rc = set_body(doc, text, body_start, len)) != LC_OK) goto done;
    }
    if (bad_utf8_line) {
        free(doc->problem);
        doc->problem = lc_strdup("the document is not valid UTF-8 text (or contains a NUL byte)");
        doc->problem_line = bad_utf8_line;
        if (!doc->problem) { rc = LC_NOMEM; goto done; }
    }
    if (!(doc->plain = sb_detach(&plain))) rc = LC_NOMEM;
done:
    sb_free(&plain);
    if (rc != LC_OK) {
        clm_doc_free(doc);
        lc_errf(err, rc, "clm parse: out of memory");
    }
    return rc;
}

void clm_doc_free(clm_doc *doc)
{
    if (!doc) return;
    for (size_t i = 0; i < doc->n_blocks; i++) {
        clm_block *b = &doc->blocks[i];
        LC_FREE(b->nonce, b->id, b->label, b->body);
    }
    LC_FREE(doc->blocks, doc->meta_nonce, doc->outside, doc->problem, doc->plain);
    memset(doc, 0, sizeof *doc);
}
