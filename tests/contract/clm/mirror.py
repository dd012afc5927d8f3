"""Helpers for the scripted model of the live-context contract tests: find, parse and
rewrite LIVE_CONTEXT.md the way a model would with a python3 one-off through `bash`."""
import glob
import os
import re

HDR = re.compile(r'^\[\[CTX_TURN (.*)\]\]$')


def path():
    # MIRROR_GLOB: which mirror, when more than one process has one (test_clm_two_hosts.sh)
    found = glob.glob(os.environ.get("MIRROR_GLOB") or
                      os.path.join(os.environ["TMPDIR"], "lossless-context-*", "LIVE_CONTEXT.md"))
    assert len(found) == 1, found
    return found[0]


def load():
    lines = open(path(), encoding="utf-8").read().split("\n")
    meta, blocks, cur = lines[0], [], None
    for line in lines[1:]:
        m = HDR.match(line)
        if m:
            attrs = dict(kv.split("=", 1) for kv in m.group(1).split(" "))
            cur = {"attrs": attrs, "header": line, "body": []}
            blocks.append(cur)
        elif cur is not None:
            cur["body"].append(line)
    for b in blocks:
        b["text"] = "\n".join(b["body"]).strip("\n")
    return meta, blocks


def nonce(meta):
    return re.search(r"document=(\w+)", meta).group(1)


def block(meta, bid, role, text):
    return {"header": "[[CTX_TURN document=%s index=0 role=%s id=%s protected=false]]"
            % (nonce(meta), role, bid), "text": text, "attrs": {"id": bid, "role": role}}


def save(meta, blocks):
    out = [meta, ""]
    for b in blocks:
        out += [b["header"], b["text"], ""]
    with open(path(), "w", encoding="utf-8") as f:
        f.write("\n".join(out))


def find(blocks, needle):
    return [i for i, b in enumerate(blocks) if needle in b["text"]]
