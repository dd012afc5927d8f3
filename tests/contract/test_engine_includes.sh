#!/bin/sh
# The engine's folders include only downward (engine/README.md): the tree holds, and the
# check (tests/engine_includes.py) refuses each way of breaking the layout -- an include
# that climbs or goes sideways, a file outside a folder, a header name twice, folders that
# allow each other, an include of no engine header, a private header included from
# outside its folder -- each planted in a copy of engine/ (and plugin/).
. "$(dirname "$0")/lib.sh"
CHECK="$ROOT/tests/engine_includes.py"

python3 "$CHECK" "$ROOT" >"$T/tree.txt" 2>&1 || { cat "$T/tree.txt"; fail "the tree's includes climb"; }
assert_grep "$T/tree.txt" "all downward" "the tree holds"

# plant NAME: a fresh copy of engine/ in $T/NAME (the checkout's own files untouched).
plant() { rm -rf "$T/$1"; mkdir -p "$T/$1"; cp -RL "$ROOT/engine" "$ROOT/plugin" "$T/$1/"; }
# refused NAME NEEDLE DESCRIPTION: the check fails on the copy and says NEEDLE.
refused() {
    if python3 "$CHECK" "$T/$1" >"$T/$1.txt" 2>&1; then cat "$T/$1.txt"; fail "$3: accepted"; fi; ok
    assert_grep "$T/$1.txt" "$2" "$3"
}

# util (the bottom) including a store header climbs.
plant climb; printf '#include "store.h"\n' >>"$T/climb/engine/util/util.c"
refused climb 'engine/util/util.c:.*#include "store.h" climbs' "util including the store"
# lcm including live context goes sideways (neither is below the other).
plant side; printf '#include "clm_live.h"\n' >>"$T/side/engine/lcm/dag.c"
refused side 'engine/lcm/dag.c:.*climbs: engine/lcm/ may not include engine/clm/' "lcm including clm"
# the seam including its own backend's private header.
plant seam; printf '#include "store_sqlite_int.h"\n' >>"$T/seam/engine/store/store.c"
refused seam 'engine/store/store.c:.*may not include engine/store/sqlite/' "the seam including a backend"
# a file left at engine/ itself.
plant root; printf 'int x;\n' >"$T/root/engine/ledger.c"
refused root 'engine/ledger.c: in no subsystem folder' "a file outside every folder"
# two headers of one name.
plant twice; cp "$T/twice/engine/util/rx.h" "$T/twice/engine/lcm/rx.h"
refused twice 'a second rx.h' "a header name twice"
# util allowing lcm while lcm allows util: a circle, not an order.
plant circle; sed 's/^May include: nothing$/May include: `lcm\/`/' "$ROOT/engine/util/README.md" >"$T/circle/engine/util/README.md"
refused circle 'in a circle' "folders that allow each other"
# a folder without its rule.
plant norule; grep -v '^May include:' "$ROOT/engine/memory/README.md" >"$T/norule/engine/memory/README.md"
refused norule 'engine/memory/README.md: no "May include:" line' "a folder without its rule"
# an include of a header no folder has.
plant nohdr; printf '#include "agent_plugin.h"\n' >>"$T/nohdr/engine/lcm/dag.c"
refused nohdr '#include "agent_plugin.h" names no engine header' "an include of the ABI"
# the backends' method table from outside the store: from lcm, and from the plugin.
plant table; printf '#include "store_backend.h"\n' >>"$T/table/engine/lcm/admin.c"
refused table 'engine/lcm/admin.c:.*#include "store_backend.h" is private to engine/store/' "lcm reading the backend table"
plant ptable; printf '#include "store_backend.h"\n' >>"$T/ptable/plugin/lcm.c"
refused ptable 'plugin/lcm.c:.*#include "store_backend.h" is private to engine/store/' "the plugin reading the backend table"
# a backend's own header from the plugin.
plant pint; printf '#include "store_sqlite_int.h"\n' >>"$T/pint/plugin/lcm.c"
refused pint 'plugin/lcm.c:.*is private to engine/store/sqlite/' "the plugin reaching into SQLite"

done_ok
