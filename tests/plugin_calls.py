#!/usr/bin/env python3
"""plugin_calls.py -- the plugin's files call downward only (run by make test through
tests/contract/test_plugin_no_circle.sh).

Reads the object files of plugin/ (BUILD/obj/plugin/*.o) with `nm`: a file calls another
when one of its undefined symbols is one the other defines. The files must form layers:
no file reaches itself through those calls (plugin.c -> lcm.c -> plugin.c is a circle). A
circle means no file can be read without the one above it, and every change to a helper
risks a callback into its caller's half-built state.

Usage: plugin_calls.py OBJ_DIR [SRC_DIR]   (e.g. build/obj/plugin plugin)
With SRC_DIR, an object whose source file is gone (a file renamed since the build) is
left out.
Exit 0 with the layers on one line when there is no circle, 1 with each circle found
(its files and the symbols that close it).
"""
import glob
import os
import subprocess
import sys


def symbols(obj):
    """(defined, undefined) global symbol names of one object file."""
    out = subprocess.run(["nm", obj], check=True, capture_output=True, text=True).stdout
    defined, undefined = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == "U":
            undefined.add(parts[1])
        elif len(parts) == 3 and parts[1] in "TDBRVWC":
            defined.add(parts[2])
    return defined, undefined


def graph(objs):
    """file -> {callee file: [symbols]} among the given objects."""
    names = {o: os.path.basename(o)[:-2] + ".c" for o in objs}
    syms = {names[o]: symbols(o) for o in objs}
    owner = {}
    for f, (defined, _) in syms.items():
        for s in defined:
            owner[s] = f
    edges = {f: {} for f in syms}
    for f, (_, undefined) in syms.items():
        for s in sorted(undefined):
            g = owner.get(s)
            if g and g != f:
                edges[f].setdefault(g, []).append(s)
    return edges


def circles(edges):
    """Every strongly connected set of more than one file (Tarjan), each sorted."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def layers(edges):
    """The files from the top (nothing calls it) down, one layer a group."""
    left = dict(edges)
    out = []
    while left:
        called = {g for f in left for g in left[f] if g in left}
        top = sorted(f for f in left if f not in called)
        if not top:
            break
        out.append(top)
        for f in top:
            del left[f]
    return out


def main():
    if len(sys.argv) not in (2, 3):
        print("usage: plugin_calls.py OBJ_DIR [SRC_DIR]")
        return 2
    objs = sorted(glob.glob(os.path.join(sys.argv[1], "*.o")))
    if len(sys.argv) == 3:
        objs = [o for o in objs if os.path.exists(os.path.join(sys.argv[2], os.path.basename(o)[:-2] + ".c"))]
    if not objs:
        print("plugin calls: no object files in %s (build first)" % sys.argv[1])
        return 1
    edges = graph(objs)
    bad = circles(edges)
    if bad:
        for comp in bad:
            inside = set(comp)
            print("plugin calls: a circle among %s:" % ", ".join(comp))
            for f in comp:
                for g, syms in sorted(edges[f].items()):
                    if g in inside:
                        shown = ", ".join(syms[:4]) + (", ..." if len(syms) > 4 else "")
                        print("  %s -> %s (%s)" % (f, g, shown))
        print("plugin calls: %d circle(s)" % len(bad))
        return 1
    print("plugin calls: no circle in %d files; layers from the top: %s"
          % (len(edges), " | ".join(", ".join(l) for l in layers(edges))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
