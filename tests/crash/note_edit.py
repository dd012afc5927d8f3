"""One live-context edit for the crash harness's scripted model: python3 note_edit.py K
inserts a note block CRASH_NOTE_K after the first block of LIVE_CONTEXT.md, so every
turn of the scripted run persists a new revision."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "contract", "clm"))
import mirror  # noqa: E402

meta, blocks = mirror.load()
k = sys.argv[1]
blocks.insert(1, mirror.block(meta, "new-c" + k, "user", "CRASH_NOTE_" + k + ": keep counting."))
mirror.save(meta, blocks)
print("edited " + k)
