/*
 * branch_index.js -- the bridge's context cache: the active branch as far as synced, each
 * session entry's JSON text (serialized once, kept as libc strings the plugin reads in
 * place) and the key that finds an entry again from the cloned message Pi's context event
 * carries, so the context event costs O(new) as the session grows.
 */

/* Pi hands `context` a structuredClone of its messages, so the event's objects are new on
 * every request. Session entries are not: the same entry object lives as long as the
 * session, so the serialized text is cached on it (WeakMap) and found again through a key
 * that the cloned message still carries (role, timestamp, toolCallId). */
function messageKey(m) {
    return `${m && m.role}|${m && m.timestamp}|${(m && m.toolCallId) || ""}`;
}

function entryKey(e) {
    switch (e.type) {
        case "message": return messageKey(e.message);
        case "custom_message": return `custom|${new Date(e.timestamp).getTime()}|`;
        case "branch_summary": return `branchSummary|${new Date(e.timestamp).getTime()}|`;
        case "compaction": return `compactionSummary|${new Date(e.timestamp).getTime()}|`;
        default: return null;
    }
}

export class BranchIndex {
    constructor(libc) {
        this.libc = libc;
        this.entries = [];          /* the active branch root -> leaf, as far as synced */
        this.pos = new Map();       /* entry id -> index in entries */
        this.byKey = new Map();     /* message key -> entries carrying it */
        this.texts = new WeakMap(); /* entry object -> {json, cJson, cId, len} */
        this.leaf = undefined;
        this.serializations = 0;    /* how many messages were serialized: tests watch O(new) */
    }

    /* Walks back from the leaf only until a known entry: O(new) as the session grows, O(moved)
     * after a tree move. */
    sync(sm) {
        const leaf = sm.getLeafId();
        if (leaf === this.leaf) return;
        const fresh = [];
        let id = leaf;
        while (id && !this.pos.has(id)) {
            const e = sm.getEntry(id);
            if (!e) break;
            fresh.push(e);
            id = e.parentId;
        }
        this.truncate(id && this.pos.has(id) ? this.pos.get(id) + 1 : 0);
        for (let i = fresh.length - 1; i >= 0; i--) this.push(fresh[i]);
        this.leaf = leaf;
    }

    push(e) {
        this.pos.set(e.id, this.entries.length);
        this.entries.push(e);
        const k = entryKey(e);
        if (k === null) return;
        const list = this.byKey.get(k);
        if (list) list.push(e); else this.byKey.set(k, [e]);
    }

    truncate(n) {
        while (this.entries.length > n) {
            const e = this.entries.pop();
            this.pos.delete(e.id);
            const k = entryKey(e);
            const list = k !== null ? this.byKey.get(k) : null;
            if (list) {
                const i = list.lastIndexOf(e);
                if (i >= 0) list.splice(i, 1);
                if (list.length === 0) this.byKey.delete(k);
            }
            this.dropText(e);
        }
    }

    dropText(e) {
        const t = this.texts.get(e);
        if (!t) return;
        this.libc.free(t.cJson);
        this.libc.free(t.cId);
        this.texts.delete(e);
    }

    /* The entry a cloned context message came from, or null. `used` keeps two messages with
     * the same key (same millisecond) on distinct entries. */
    match(m, used) {
        const list = this.byKey.get(messageKey(m));
        if (!list) return null;
        for (const e of list) if (!used.has(e)) { used.add(e); return e; }
        return null;
    }

    textOf(e, m) {
        let t = this.texts.get(e);
        if (!t) {
            const json = JSON.stringify(m);
            this.serializations++;
            t = { json, len: Buffer.byteLength(json), cJson: this.libc.strdup(json), cId: this.libc.strdup(e.id) };
            this.texts.set(e, t);
        }
        return t;
    }

    dispose() { this.truncate(0); this.leaf = undefined; }
}
