"""A message's verbatim JSON from a SQLite store's row, read the way the store's own
reader does (engine/store/sqlite/store_sqlite_raw.c), written again here from the format so a test
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


def raw_bytes(raw, text, payload, packed=None):
    """The original JSON bytes of one row, from raw_json, text and payload as sqlite3 returns
    them (str or bytes). `packed` says whether raw_json was a BLOB (None: a bytes raw is)."""
    if packed is None:
        packed = isinstance(raw, (bytes, memoryview))
    if not packed:
        return raw.encode() if isinstance(raw, str) else bytes(raw)
    raw = bytes(raw)
    t = text.encode() if isinstance(text, str) else bytes(text or b"")
    p = payload.encode() if isinstance(payload, str) else bytes(payload or b"")
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
    text, "raw_bytes" as bytes) and an optional SQL tail (WHERE / ORDER BY) with its
    parameters. The row's columns are read as bytes, so no text needs to be valid UTF-8."""
    sel = [c if c not in ("raw_json", "raw_bytes") else "NULL" for c in columns]
    q = ("SELECT %s, CAST(raw_json AS BLOB), typeof(raw_json) = 'blob', CAST(text AS BLOB),"
         " CAST(payload AS BLOB) FROM messages %s" % (", ".join(sel), where))
    out = []
    for r in db.execute(q, params):
        raw = raw_bytes(r[-4], r[-2], r[-1], packed=bool(r[-3]))
        vals = []
        for c, v in zip(columns, r[:-4]):
            if c == "raw_json":
                v = raw.decode()
            elif c == "raw_bytes":
                v = raw
            vals.append(v)
        out.append(tuple(vals))
    return out
