"""What the demo's scripted model runs through the `bash` tool to edit its live context:
insert a `new-*` notes block after LIVE_CONTEXT.md's metadata line, as a model would with
a python one-off. Usage: python3 pin_note.py MIRROR_PATH NOTE_TEXT"""
import re
import sys

path, note = sys.argv[1], sys.argv[2]
text = open(path, encoding="utf-8").read()
meta, rest = text.split("\n", 1)
nonce = re.search(r"document=(\w+)", meta).group(1)
block = "[[CTX_TURN document=%s index=0 role=notes id=new-pinned protected=false]]\n%s\n" % (nonce, note)
open(path, "w", encoding="utf-8").write(meta + "\n" + block + rest)
print("pinned a notes block in", path)
