#!/usr/bin/env python3
"""engine_includes.py -- the engine's folders include only downward (run by make test
through tests/contract/test_engine_includes.sh).

Each folder under engine/ says in its README.md, on one line, which folders its files may
include:
    May include: `core/`, `util/`
(`nothing` for none; a folder's own headers are always allowed), and may name headers no
file outside it (and its subfolders) includes, tests aside:
    Private: `store_backend.h`
(`every header` for all of them). This script reads those lines, checks that they order
the folders (no folder reachable from itself), maps every header to its folder, and fails
on:
  - an engine source or header outside a subsystem folder (engine/x.c);
  - a folder without a README.md that has the line;
  - two headers of the same name (a file names a header by its bare name, found through
    one -I per folder, so a second one would be a matter of -I order);
  - an `#include "x.h"` that names no engine header;
  - an `#include "x.h"` of a header in a folder the including folder may not include
    (one that climbs, or goes sideways);
  - an `#include` of a private header from outside its folder, in engine/ or in the
    engine's users (plugin/, host/, tools/).
Usage: engine_includes.py [ROOT]   (ROOT: the checkout, default the one this file is in)
Exit 0 with one summary line when the tree holds, 1 with one line per violation.
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
MAY = re.compile(r'^May include:\s*(.*)$')
PRIVATE = re.compile(r'^Private:\s*(.*)$')
USERS = ('plugin', 'host', 'tools')


def folders_of(engine):
    """Every folder under engine/ that holds a .c or .h, as a path relative to engine/."""
    out = set()
    for d, _, files in os.walk(engine):
        rel = os.path.relpath(d, engine)
        if rel != '.' and any(f.endswith(('.c', '.h')) for f in files):
            out.add(rel.replace(os.sep, '/'))
    return out


def may_include(engine, folder):
    """The folders a folder's README allows, or None when it has no such line."""
    path = os.path.join(engine, folder, 'README.md')
    if not os.path.isfile(path):
        return None
    with open(path, encoding='utf-8') as f:
        for line in f:
            m = MAY.match(line.strip())
            if not m:
                continue
            text = m.group(1).strip().rstrip('.')
            if text.lower() in ('nothing', 'none', ''):
                return set()
            return {n.strip().strip('`').strip().rstrip('/') for n in text.split(',') if n.strip()}
    return None


def private_of(engine, folder, headers):
    """The headers of a folder its README keeps private (a set, maybe empty)."""
    path = os.path.join(engine, folder, 'README.md')
    if not os.path.isfile(path):
        return set()
    with open(path, encoding='utf-8') as f:
        for line in f:
            m = PRIVATE.match(line.strip())
            if not m:
                continue
            text = m.group(1).strip().rstrip('.')
            if text.lower().startswith('every header'):
                return set(headers)
            return {n.strip().strip('`').strip() for n in text.split(',') if n.strip()}
    return set()


def inside(folder, owner):
    """A file of `folder` is inside `owner` (the folder itself or one under it)."""
    return folder == owner or folder.startswith(owner + '/')


def cycle(allowed):
    """A folder reachable from itself through the allowed edges, or None."""
    state = {}

    def visit(n, path):
        if state.get(n) == 1:
            return path[path.index(n):] + [n]
        if state.get(n) == 2:
            return None
        state[n] = 1
        for m in sorted(allowed.get(n, ())):
            c = visit(m, path + [n])
            if c:
                return c
        state[n] = 2
        return None

    for n in sorted(allowed):
        c = visit(n, [])
        if c:
            return c
    return None


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(__file__), '..'))
    engine = os.path.join(root, 'engine')
    bad = []

    folders = folders_of(engine)
    allowed = {}
    for folder in sorted(folders):
        a = may_include(engine, folder)
        if a is None:
            bad.append(f'engine/{folder}/README.md: no "May include:" line (which folders its files may include)')
            a = set()
        for n in sorted(a - folders):
            bad.append(f'engine/{folder}/README.md: may include `{n}/`, which is no engine folder')
        allowed[folder] = a & folders
    c = cycle(allowed)
    if c:
        bad.append('the folders include in a circle (not downward): ' + ' -> '.join(c))

    home = {}      # header name -> its folder
    files = []     # (folder, path relative to root)
    for d, _, names in os.walk(engine):
        rel = os.path.relpath(d, engine).replace(os.sep, '/')
        for name in sorted(names):
            if not name.endswith(('.c', '.h')):
                continue
            path = f'engine/{name}' if rel == '.' else f'engine/{rel}/{name}'
            if rel == '.':
                bad.append(f'{path}: in no subsystem folder (git mv it into the folder that owns it, engine/README.md)')
                continue
            files.append((rel, path))
            if name.endswith('.h'):
                if name in home:
                    bad.append(f'{path}: a second {name} (the other in engine/{home[name]}/)')
                else:
                    home[name] = rel

    private = {}   # header name -> the folder it is private to
    for folder in sorted(folders):
        own = [h for h, f in home.items() if f == folder]
        for h in sorted(private_of(engine, folder, own)):
            if home.get(h) != folder:
                bad.append(f'engine/{folder}/README.md: private `{h}` is no header of the folder')
            else:
                private[h] = folder

    n_includes = 0
    for folder, path in sorted(files):
        with open(os.path.join(root, path), encoding='utf-8', errors='replace') as f:
            for lineno, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                n_includes += 1
                name = os.path.basename(m.group(1))
                to = home.get(name)
                if to is None:
                    bad.append(f'{path}:{lineno}: #include "{m.group(1)}" names no engine header')
                elif to != folder and to not in allowed.get(folder, set()):
                    bad.append(f'{path}:{lineno}: #include "{name}" climbs: engine/{folder}/ may not include '
                               f'engine/{to}/ (engine/{folder}/README.md: May include: '
                               f'{", ".join(sorted(allowed.get(folder, set()))) or "nothing"})')
                elif name in private and not inside(folder, private[name]):
                    bad.append(f'{path}:{lineno}: #include "{name}" is private to engine/{private[name]}/ '
                               f'(engine/{private[name]}/README.md)')

    # The engine's users name its public headers only (their own headers come first).
    for user in USERS:
        for d, _, names in os.walk(os.path.join(root, user)):
            for name in sorted(names):
                if not name.endswith(('.c', '.h')):
                    continue
                full = os.path.join(d, name)
                path = os.path.relpath(full, root).replace(os.sep, '/')
                with open(full, encoding='utf-8', errors='replace') as f:
                    for lineno, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        inc = os.path.basename(m.group(1))
                        if os.path.exists(os.path.join(d, m.group(1))):
                            continue
                        if inc in private:
                            bad.append(f'{path}:{lineno}: #include "{inc}" is private to engine/{private[inc]}/ '
                                       f'(engine/{private[inc]}/README.md)')

    if bad:
        for b in bad:
            print(b)
        print(f'engine includes: {len(bad)} problem(s)')
        return 1
    print(f'engine includes: {n_includes} includes in {len(files)} files of {len(folders)} folders, all downward')
    return 0


if __name__ == '__main__':
    sys.exit(main())
