#!/bin/sh
# The manual cannot drift from the code: every lcm.json key the config parser knows (read
# from its tables in the engine's source, wherever the file lives under engine/) has a row in
# docs/config.md with the parser's own default, every live-context setting (the /clm config
# table) has its row with its environment variable and default, and every verb the built
# `lcm` prints in its usage is documented in docs/cli.md. The README stays a user's door:
# at most 250 lines, no session-by-session history, and every relative link of it and of
# the pages under docs/ names a file that exists.
. "$(dirname "$0")/lib.sh"

LCM="$BUILD/lcm"
[ -x "$LCM" ] || fail "build/lcm is not built"
# The usage `lcm` prints with no verb (stderr, exit 2), and what `lcm help` prints (a build
# with a help verb lists its command table there; one without prints the same usage).
"$LCM" > "$T/usage.txt" 2>&1
[ -s "$T/usage.txt" ] || fail "lcm with no verb printed no usage"
"$LCM" help >> "$T/usage.txt" 2>&1

python3 - "$ROOT" "$T/usage.txt" <<'PY' || fail "the documentation is incomplete (see above)"
import os, re, sys

root, usage_path = sys.argv[1], sys.argv[2]
problems = []

def find_source(name):
    hits = []
    for d, _, files in os.walk(os.path.join(root, "engine")):
        if name in files:
            hits.append(os.path.join(d, name))
    if len(hits) != 1:
        sys.exit("expected one engine/**/%s, found %d" % (name, len(hits)))
    return open(hits[0], encoding="utf-8").read()

def read_doc(rel):
    p = os.path.join(root, rel)
    if not os.path.isfile(p):
        problems.append("%s does not exist" % rel)
        return ""
    return open(p, encoding="utf-8").read()

def grouped(n):
    return "{:,}".format(n)

def row_of(doc, key):
    """The table row that documents `key` (its first cell names it)."""
    for line in doc.splitlines():
        if re.match(r"\|\s*[^|]*`%s`" % re.escape(key), line):
            return line
    return None

# ---- lcm.json: the parser's tables (engine/core/config.c) -----------------------------------
config_c = find_source("config.c")
numeric = re.findall(r'\{"([A-Za-z][A-Za-z0-9]*)",\s*offsetof\([^)]*\),\s*(-?\d+|LONG_MAX / 2),\s*'
                     r'(-?\d+|LONG_MAX / 2),\s*(-?\d+)\}', config_c)
boolean = re.findall(r'\{"([A-Za-z][A-Za-z0-9]*)",\s*offsetof\([^)]*\),\s*([01])\}', config_c)
named = re.findall(r'strcmp\((?:name|k->string),\s*"([A-Za-z][A-Za-z0-9]*)"\)', config_c)
keys = [k for k, *_ in numeric] + [k for k, _ in boolean] + named
if len(set(keys)) < 30:
    sys.exit("read only %d lcm.json keys from config.c: the parser's tables changed shape, "
             "update this test" % len(set(keys)))

config_md = read_doc("docs/config.md")
for key in sorted(set(keys)):
    if not re.search(r"`%s`" % re.escape(key), config_md):
        problems.append("docs/config.md does not document the lcm.json key `%s`" % key)
for key, lo, hi, dflt in numeric:
    row = row_of(config_md, key)
    if row is None:
        problems.append("docs/config.md has no table row for `%s`" % key)
        continue
    d = int(dflt)
    # 0 means "derived" for some keys; the row must still say 0 or what it derives from.
    if not re.search(r"(?<![\d,])(%s|%d)(?![\d,])" % (re.escape(grouped(d)), d), row):
        problems.append("docs/config.md's row for `%s` does not give its default %s" % (key, grouped(d)))
for key, dflt in boolean:
    row = row_of(config_md, key)
    want = "true" if dflt == "1" else "false"
    if row is None:
        problems.append("docs/config.md has no table row for `%s`" % key)
    elif not re.search(r"\|\s*`?%s`?\s*\|" % want, row):
        problems.append("docs/config.md's row for `%s` does not give its default %s" % (key, want))

# ---- live-context settings: the /clm config table (engine/clm/clm_settings.c) --------------
clm_c = find_source("clm_settings.c")
clm = re.findall(r'\{"([A-Za-z]+)",\s*"[^"]*",\s*"(LC_CLM_[A-Z_]+)",\s*"([^"]*)"', clm_c)
if len(clm) < 5:
    sys.exit("read only %d live-context settings from clm_settings.c: update this test" % len(clm))
for key, env, dflt in clm:
    row = row_of(config_md, key)
    if row is None:
        problems.append("docs/config.md has no table row for the live-context setting `%s`" % key)
        continue
    if env not in row:
        problems.append("docs/config.md's row for `%s` does not name %s" % (key, env))
    if not re.search(r"(?<![\w.])`?%s`?(?![\w.])" % re.escape(dflt), row):
        problems.append("docs/config.md's row for `%s` does not give its default %s" % (key, dflt))

# ---- lcm verbs: the usage the binary prints --------------------------------------------
# A verb line: two spaces, the verb, then its arguments (an option, an upper-case operand,
# a bracket, alternatives with |) or the column of its description.
verbs = []
for line in open(usage_path, encoding="utf-8", errors="replace"):
    m = re.match(r"  ([a-z][a-z-]*)(?:$|\s{2,}|\s+(?=[-\[A-Z<])|\s+(?=\S*\|))", line.rstrip("\n"))
    if m and m.group(1) not in verbs:
        verbs.append(m.group(1))
if len(verbs) < 15:
    sys.exit("read only %d verbs from lcm's usage (%s): its shape changed, update this test"
             % (len(verbs), " ".join(verbs)))
cli_md = read_doc("docs/cli.md")
for v in verbs:
    if not re.search(r"\blcm %s\b" % re.escape(v), cli_md):
        problems.append("docs/cli.md does not document `lcm %s`" % v)

# ---- the README: short, no history, links that resolve ---------------------------------
readme = read_doc("README.md")
n = readme.count("\n")
if n > 250:
    problems.append("README.md has %d lines (at most 250)" % n)
pages = ["README.md"] + ["docs/" + f for f in sorted(os.listdir(os.path.join(root, "docs")))
                         if f.endswith(".md") and f != "DESIGN.md"]
# "this session's store" is a fact; "this session's code", "session 7's build" are history.
history = re.compile(r"\b([Ss]ession \d+('s)? (build|code|change|work)|[Ss]ession \d+'s\b|"
                     r"(before|after) this session\b|"
                     r"this session's (build|code|change|work|run)|in the previous session|[Ss]ession \d+:)")
for page in ["docs/install.md", "docs/config.md", "docs/cli.md", "docs/recall.md",
             "docs/reliability.md", "docs/benchmarks.md", "docs/limits.md"]:
    read_doc(page)  # the pages the README promises
for page in pages:
    text = read_doc(page)
    for i, line in enumerate(text.splitlines(), 1):
        m = history.search(line)
        if m:
            problems.append("%s:%d speaks of a work session (%r): say what is true today" % (page, i, m.group(0)))
for page in pages:
    text = read_doc(page)
    base = os.path.dirname(os.path.join(root, page))
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        path = target.split("#", 1)[0]
        if not os.path.exists(os.path.normpath(os.path.join(base, path))):
            problems.append("%s links to %s, which does not exist" % (page, target))

for p in problems:
    print("  " + p)
print("%d lcm.json keys, %d live-context settings, %d lcm verbs checked; %d problems"
      % (len(set(keys)), len(clm), len(verbs), len(problems)))
sys.exit(1 if problems else 0)
PY
ok
done_ok
