#!/usr/bin/env python3
"""Recall benchmark of our own (`make eval-recall`): generated sessions, questions asked in
other words than their answers, `lcm grep` beside a naive grep in the same run.

usage: recall_eval.py --lcm build/lcm [--sessions 40] [--messages 60] [--seed 7] [--k 10] [--keep]

Every session is a Pi session file (one a day from 2026-02-01), imported into a fresh home
with one `lcm import`; its messages are filler talk over a shared vocabulary, with facts
planted in some. Each fact gets one question of a kind:

  inflection   the question's words are other forms of the answer's (configured/configure,
               failing/fails, caches/cache) beside the fact's name
  punctuation  the question writes the name with punctuation (what's the vexlo-cache size?,
               zorblat.toml?) and asks as a question, with ? ' , .
  paraphrase   the question shares the name and one word with the answer, nothing else
  time         the same fact was set on three days to three values; the question names the
               day, and lcm is given it as --since/--until (what a model passes)

Distractors: messages naming the fact's thing without the fact, and messages repeating the
question's ordinary words without the thing.

lcm      `lcm grep --home H --scope all_sessions [--since D --until D] QUESTION`; a hit when one
         of the first k lines is the answer's entry.
grep     the naive baseline of ../shared/real-transcripts/recall.py: the question's content
         words (stopwords dropped) as lowercase substrings of every raw line, lines ranked by
         how many words they hold (ties: file order); a hit when one of the first k is the
         answer's line.

Prints recall@k and MRR per kind and overall for both, then one line
    eval-recall: lcm R@10 X.XX MRR Y.YY, naive grep R@10 X.XX MRR Y.YY, errors E
Deterministic for a seed; exit 0 when the measurement ran, 2 on usage errors.
"""
import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile

STOP = set("""a about after all am an and any are as at be been before but by can could did do does
for from had has have how i if in into is it its me my no not of on or our so some than that the
their them then there these they this to up us was we were what when where which while who why will
with would you your s t d ll m re ve""".split())
WORD_RE = re.compile(r"[0-9a-z_]+(?:[.\-/][0-9a-z_]+)*")
DAY = 86400000
T0 = 1769904000000  # 2026-02-01T00:00:00Z

COMMON = ("we then looked at the build and the tests again later today it seemed fine but the "
          "logs showed something odd so we kept going with the plan and checked the output of "
          "the script after lunch maybe tomorrow we can clean this up properly").split()
SYL = ["ka", "zor", "vex", "lo", "mi", "tran", "blat", "qui", "dro", "fen", "gal", "po", "rix", "sul", "ton"]


def pseudo(rng, n=3):
    return "".join(rng.choice(SYL) for _ in range(n))


def filler(rng, extra=()):
    words = [rng.choice(COMMON) for _ in range(rng.randint(8, 30))] + list(extra)
    rng.shuffle(words)
    return " ".join(words)


# (answer template, question template) per kind; {n} the name, {v} the value.
INFLECT = [
    ("we configured the {n} timeout to {v} seconds after the deploys kept failing",
     "how did we configure the {n} timeout when deploys failed?"),
    ("the {n} caches were rebuilt with {v} shards because lookups were timing out",
     "how many shards did we rebuild the {n} cache with when lookups timed out?"),
    ("we renamed the {n} handler to {v} once the refactoring landed",
     "what did the {n} handler get renamed to after we refactored?"),
]
PUNCT = [
    ("the {n}-cache size is now {v} megabytes", "what's the {n}-cache size?"),
    ("settings live in {n}.toml under the {v} section", "where's {n}.toml's section, the one with the settings?"),
    ("run {n}/bin/start --port {v} to bring it up", "which port does {n}/bin/start use, again?"),
]
PARA = [
    ("{n} crashed because the allocator ran out of arenas; we raised it to {v}",
     "why did {n} go down and what fixed it?"),
    ("for {n} we settled on {v} retries with jittered backoff",
     "what retry policy did we pick for {n}?"),
]
TIME = ("we set the {n} batch limit to {v} today", "what was the {n} batch limit set to on {d}?")


def build(args, root):
    rng = random.Random(args.seed)
    nsess = args.sessions
    sessions = [[] for _ in range(nsess)]  # per session: [(role, text)]
    for s in sessions:
        for i in range(args.messages):
            s.append(("user" if i % 2 == 0 else "assistant", filler(rng)))
    questions = []  # {kind, q, session, index, since?, until?}
    used = set()

    def name():
        while True:
            n = pseudo(rng)
            if n not in used:
                used.add(n)
                return n

    def plant(kind, ans, q, si=None, extra=None):
        si = rng.randrange(nsess) if si is None else si
        idx = rng.randrange(2, args.messages)
        role = "assistant" if idx % 2 else "user"
        sessions[si][idx] = (role, filler(rng, ans.split()[:0]) + " " + ans)
        d = {"kind": kind, "q": q, "session": si, "index": idx}
        d.update(extra or {})
        questions.append(d)
        return si, idx

    def distract(n, qwords):
        # The thing without the fact, and the question's words without the thing.
        for _ in range(3):
            si, idx = rng.randrange(nsess), rng.randrange(2, args.messages)
            if any(q["session"] == si and q["index"] == idx for q in questions):
                continue
            role = sessions[si][idx][0]
            if rng.random() < 0.5:
                sessions[si][idx] = (role, filler(rng, ["the", n, "build", "looked", "fine"]))
            else:
                sessions[si][idx] = (role, filler(rng, qwords))

    for group, kind in ((INFLECT, "inflection"), (PUNCT, "punctuation"), (PARA, "paraphrase")):
        for rep in range(args.per_kind):
            a, q = group[rep % len(group)]
            n, v = name(), str(rng.randint(10, 999))
            plant(kind, a.format(n=n, v=v), q.format(n=n))
            distract(n, [w for w in WORD_RE.findall(q.format(n="").lower()) if w not in STOP][:3])
    for rep in range(args.per_kind):
        n = name()
        days = sorted(rng.sample(range(nsess), 3))
        pick = rng.randrange(3)
        for j, si in enumerate(days):
            v = str(rng.randint(10, 999))
            ans = TIME[0].format(n=n, v=v)
            day = "2026-%02d-%02d" % divmod_date(si)
            if j == pick:
                plant("time", ans, TIME[1].format(n=n, d=day), si=si, extra={"since": day, "until": day})
            else:
                idx = rng.randrange(2, args.messages)
                sessions[si][idx] = (sessions[si][idx][0], ans)
    # Write the sessions (one a day) and remember each answer's entry id and raw line.
    files = []
    for si, msgs in enumerate(sessions):
        sid = "eval-recall-%03d" % si
        base = T0 + si * DAY + 9 * 3600000
        path = os.path.join(root, sid + ".jsonl")
        with open(path, "w") as f:
            f.write(json.dumps({"type": "session", "version": 3, "id": sid,
                                "timestamp": "2026-%02d-%02dT09:00:00.000Z" % divmod_date(si), "cwd": "/eval"}) + "\n")
            parent = None
            for i, (role, text) in enumerate(msgs):
                mid = "%s-m%03d" % (sid, i)
                m = {"role": role, "content": [{"type": "text", "text": text}], "timestamp": base + i * 60000}
                if role == "assistant":
                    m["stopReason"] = "stop"
                f.write(json.dumps({"type": "message", "id": mid, "parentId": parent, "timestamp": base + i * 60000,
                                    "message": m}) + "\n")
                parent = mid
        files.append(path)
    for q in questions:
        q["sid"] = "eval-recall-%03d" % q["session"]
        q["entry"] = "%s-m%03d" % (q["sid"], q["index"])
    return files, questions


def divmod_date(si):
    # Day si after 2026-02-01 as (month, day), February has 28 days in 2026.
    days = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
    m, d = 2, 1 + si
    while d > days[m - 1]:
        d -= days[m - 1]
        m += 1
    return m, d


def content_words(q):
    out = []
    for w in WORD_RE.findall(q.lower()):
        w = w.strip(".-/")
        if w and w not in STOP and len(w) > 1 and w not in out:
            out.append(w)
    return out


def naive(lines, q, k):
    words = content_words(q)
    scored = []
    for idx, (_, low) in enumerate(lines):
        s = sum(1 for w in words if w in low)
        if s:
            scored.append((-s, idx))
    scored.sort()
    return [lines[i][0] for _, i in scored[:k]]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lcm", required=True)
    ap.add_argument("--sessions", type=int, default=40)
    ap.add_argument("--messages", type=int, default=60)
    ap.add_argument("--per-kind", type=int, default=9)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--keep", action="store_true")
    try:
        args = ap.parse_args()
    except SystemExit:
        return 2
    if not os.access(args.lcm, os.X_OK) or args.sessions < 3 or args.sessions > 300 or args.messages < 4:
        print("usage: recall_eval.py --lcm LCM [--sessions 3..300] [--messages >=4]", file=sys.stderr)
        return 2
    root = tempfile.mkdtemp(prefix="eval-recall-")
    home = os.path.join(root, "home")
    try:
        files, questions = build(args, root)
        env = dict(os.environ)
        env.pop("LCM_STORE_URL", None)
        p = subprocess.run([args.lcm, "import", "--home", home] + files, capture_output=True, env=env)
        if p.returncode != 0:
            print("eval-recall: lcm import failed: %s" % p.stderr.decode()[:300], file=sys.stderr)
            return 1
        lines = []  # (entry id, lowercase raw line)
        for path in files:
            with open(path) as f:
                for raw in f:
                    d = json.loads(raw)
                    if d.get("type") == "message":
                        lines.append((d["id"], raw.lower()))
        res = {}
        errors = 0
        for q in questions:
            cmd = [args.lcm, "grep", "--home", home, "--scope", "all_sessions"]
            if "since" in q:
                cmd += ["--since", q["since"], "--until", q["until"]]
            p = subprocess.run(cmd + [q["q"]], capture_output=True, env=env)
            out = p.stdout.decode("utf-8", "replace")
            if p.returncode != 0:
                errors += 1
            hits = [m.group(1) for m in re.finditer(r"^- (?:\[removed\] )?(\S+) \[", out, re.M)][:args.k]
            lr = hits.index(q["entry"]) + 1 if q["entry"] in hits else None
            top = naive(lines, q["q"] + (" " + q["since"] if "since" in q else ""), args.k)
            gr = top.index(q["entry"]) + 1 if q["entry"] in top else None
            res.setdefault(q["kind"], []).append((lr, gr))
            res.setdefault("all", []).append((lr, gr))
        print("eval-recall: %d questions over %d generated sessions of %d messages, k=%d (seed %d)"
              % (len(questions), args.sessions, args.messages, args.k, args.seed))
        print("  %-12s %3s  %8s %8s  %9s %9s" % ("kind", "n", "lcm R@k", "lcm MRR", "grep R@k", "grep MRR"))

        def agg(rows, i):
            n = len(rows)
            return sum(1 for r in rows if r[i]) / n, sum(1.0 / r[i] for r in rows if r[i]) / n

        for kind in ("inflection", "punctuation", "paraphrase", "time", "all"):
            rows = res.get(kind, [])
            if not rows:
                continue
            lrec, lmrr = agg(rows, 0)
            grec, gmrr = agg(rows, 1)
            print("  %-12s %3d  %8.2f %8.2f  %9.2f %9.2f" % (kind, len(rows), lrec, lmrr, grec, gmrr))
        lrec, lmrr = agg(res["all"], 0)
        grec, gmrr = agg(res["all"], 1)
        print("eval-recall: lcm R@%d %.2f MRR %.2f, naive grep R@%d %.2f MRR %.2f, errors %d"
              % (args.k, lrec, lmrr, args.k, grec, gmrr, errors))
    finally:
        if args.keep:
            print("  kept: %s" % root)
        else:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
