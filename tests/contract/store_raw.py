"""A message's verbatim JSON from a SQLite store's row, read the way the store's own
reader does (engine/store_sqlite_raw.c), written again here from the format so a test
that reads the file with Python checks the packed form independently of the C code.

raw_json is TEXT (the JSON as it is: rows of a schema-3 store, rows loaded from a dump)
or a BLOB: a form byte (1 plain, 2 raw deflate), a varint length, then ops, each a varint
(len << 2 | kind): 0 literal bytes, 1 the text's bytes at a varint offset escaped as
JSON, 2 the payload's bytes at a varint offset as they are.

    sys.path.insert(0, ROOT + "/tests/contract")
    import store_raw
    for entry_id, raw in store_raw.rows(db, ["entry_id", "raw_json"]): ...
"""
import zlib

_SHORT = {0x22: b'\\"', 0x5C: b"\\\\", 0x08: b"\\b", 0x0C: b"\\f", 0x0A: b"\\n", 0x0D: b"\\r", 0x09: b"\\t"}


def _escape(b):
    out = bytearray()
    for c in b:
        if c in _SHORT:
            out += _SHORT[c]
        elif c < 0x20:
            out += b"\\u%04x" % c
        else:
            out.append(c)
    return bytes(out)


def _varint(b, pos):
    v, shift = 0, 0
    while True:
        c = b[pos]
        pos += 1
        v |= (c & 0x7F) << shift
        if not c & 0x80:
            return v, pos
        shift += 7


def raw_bytes(raw, text, payload):
    """The original JSON bytes of one row (raw_json, text, payload as sqlite3 returns them)."""
    if isinstance(raw, str):
        return raw.encode()
    raw = bytes(raw)
    t = (text or "").encode()
    p = (payload or "").encode()
    form = raw[0]
    n, pos = _varint(raw, 1)
    ops = raw[pos:]
    if form == 2:
        ops = zlib.decompressobj(-15).decompress(ops)
    elif form != 1:
        raise ValueError("unknown raw_json form %d" % form)
    out, q = bytearray(), 0
    while q < len(ops):
        tag, q = _varint(ops, q)
        k, kind = tag >> 2, tag & 3
        if kind == 0:
            out += ops[q:q + k]
            q += k
            continue
        off, q = _varint(ops, q)
        out += _escape(t[off:off + k]) if kind == 1 else p[off:off + k]
    if len(out) != n:
        raise ValueError("raw_json unpacks to %d bytes, not %d" % (len(out), n))
    return bytes(out)


def raw_json(raw, text, payload):
    """The original JSON of one row, as text."""
    return raw_bytes(raw, text, payload).decode()


def rows(db, columns, where="", params=()):
    """Rows of `messages` with `columns` (a list of names; "raw_json" comes back unpacked, as
    text, "raw_bytes" as bytes) and an optional SQL tail (WHERE / ORDER BY) with its parameters."""
    sel = [c if c != "raw_bytes" else "raw_json" for c in columns]
    q = "SELECT %s, raw_json, text, payload FROM messages %s" % (", ".join(sel), where)
    out = []
    for r in db.execute(q, params):
        raw, text, payload = r[-3:]
        vals = []
        for c, v in zip(columns, r[:-3]):
            if c == "raw_json":
                v = raw_json(raw, text, payload)
            elif c == "raw_bytes":
                v = raw_bytes(raw, text, payload)
            vals.append(v)
        out.append(tuple(vals))
    return out
