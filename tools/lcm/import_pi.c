/*
 * import_pi.c -- Pi session files into the import's entry table (import_pi.h).
 */
#include "import_pi.h"

#include <stdio.h>
#include <string.h>

#include "util.h"

/* One Pi entry; `line` is its text, so a message entry is stored byte for byte. */
int pi_line(imp *m, cJSON *root, const char *line, size_t len, size_t lineno, char **err)
{
    const char *type = imp_jstr(root, "type");
    if (!type) {
        m->stats->bad_lines++;
        imp_count(m, IMPORT_SKIPPED, "entry without type");
        return LC_OK;
    }
    if (strcmp(type, "session") == 0) {
        const char *id = imp_jstr(root, "id"), *cwd = imp_jstr(root, "cwd");
        if (id && !m->session_id[0]) snprintf(m->session_id, sizeof m->session_id, "%s", id);
        if (cwd && !m->cwd) m->cwd = lc_strdup(cwd);
        if (!m->header_ts) m->header_ts = imp_iso_ms(imp_jstr(root, "timestamp"));
        return LC_OK;
    }
    /* Version-1 files had no ids: the entries form one line, in file order. */
    char synth[32];
    const char *id = imp_jstr(root, "id"), *parent = imp_jstr(root, "parentId");
    if (!id) {
        /* a second object on a line (older Pi) gets an id of its own */
        if (m->part) snprintf(synth, sizeof synth, "line-%zu.%d", lineno, m->part + 1);
        else snprintf(synth, sizeof synth, "line-%zu", lineno);
        id = synth;
        if (m->n) parent = m->v[m->n - 1].id;
    }
    long long ts = imp_iso_ms(imp_jstr(root, "timestamp"));
    imp_saw_ts(m, ts);
    char *json = ingest_context_message(root, line, len, ts);
    int kind = !json ? IMP_OTHER : strcmp(type, "compaction") == 0 ? IMP_COMPACTION : IMP_MESSAGE;
    /* A message entry's text is its "message" member as the line holds it, so the line's
     * parse of that member is the store's parse too (unless an escaped NUL, which the
     * store reads differently, is in it). */
    cJSON *tree = NULL;
    if (kind == IMP_MESSAGE && strcmp(type, "message") == 0 && !memmem(json, strlen(json), "\\u0000", 6))
        tree = cJSON_DetachItemFromObjectCaseSensitive(root, "message");
    if (kind == IMP_OTHER) {
        char what[64];
        snprintf(what, sizeof what, "%s entry", type);
        imp_count(m, IMPORT_SKIPPED, what);
    }
    m->cur.kind = strcmp(type, "message") != 0 ? type : tree && imp_jstr(tree, "role") ? imp_jstr(tree, "role") : NULL;
    return imp_add(m, id, parent, kind, json, tree, imp_jstr(root, "firstKeptEntryId"), err);
}
