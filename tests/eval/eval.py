#!/usr/bin/env python3
"""The procedural long-context evaluation (`make eval`).

For each length of the ladder: generate a seeded session with known needles
(`agent-host gen --needles`), replay it through the reference host and the real plugin
at the window, then ask every needle two questions through the product's own tools:

 1. recall: is it returned verbatim by address (`lcm_expand_query {entry_id}`, paging
    with char_offset when the message is longer than one call), readable in ONE bounded
    reader window (one call of max_tokens 5000 = one 20,000-char window), found by
    `lcm_grep` in pattern mode (removed-branch needles with include_removed, and hidden
    without it), and covered by the DAG (or else in the fresh tail or a removed branch,
    which is said);
 2. surface: does `key=value` appear in the last request the model was sent
    (LCM_REQUEST_DUMP), i.e. answerable without recall; needles that need the recall
    path are counted separately.

The tools are called through one `agent-host --tool-batch` per length, kept open on a copy
of the replayed session (loaded once; at 8M tokens a fresh host per call spent ~10 s
loading), the same tool path as `--tool`; `--probe tool` runs a fresh host per call instead,
to compare. Python only orchestrates and checks; everything measured is the C host and .so. The
store is read with sqlite3 for facts (coverage, depth, where a needle sits in a long
message), never to answer a question.

Writes <out>/report.json, <out>/table.md, <out>/context-<size>.svg, and appends one row
per length to <out>/metrics.jsonl. Exit status 1 when any needle fails.
"""
import argparse
import concurrent.futures
import json
import os
import re
import resource
import shutil
import sqlite3
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import svg  # noqa: E402

WINDOW_CHARS = 20000  # one reader window (engine/lcm/recall.h RECALL_WINDOW_CHARS)
ONE_WINDOW_TOKENS = 5000  # max_tokens for exactly one window (4 chars a token)
PAGE_LIMIT = 12  # address reads per needle before giving up


def parse_size(s):
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([kKmM]?)", s.strip())
    if not m:
        raise SystemExit("eval: bad size %r (e.g. 32k, 2M, 64000)" % s)
    mult = {"": 1, "k": 1000, "m": 1000000}[m.group(2).lower()]
    return int(float(m.group(1)) * mult)


def fmt_size(n):
    if n >= 1000000 and n % 1000000 == 0:
        return "%dM" % (n // 1000000)
    if n >= 1000 and n % 1000 == 0:
        return "%dk" % (n // 1000)
    return str(n)


def host_base(build, home, session, cwd):
    return [os.path.join(build, "agent-host"), "--home", home, "--plugin-dir",
            os.path.join(build, "plugins"), "--session", session, "--cwd", cwd]


class Host:
    """One prober (--probe tool): the host run once per tool call on its own copy of the
    replayed session (a tool call appends to the file it runs on; the copy shares the
    session id, so the store is the replay's). The copy is refreshed now and then so it
    stays the size of the replayed session. Each call pays the load of the whole session."""

    def __init__(self, build, home, session, cwd, source):
        self.base = host_base(build, home, session, cwd)
        self.session, self.source = session, source
        self.calls = 0

    def tool(self, name, args):
        if self.calls % 25 == 0:
            shutil.copyfile(self.source, self.session)
        self.calls += 1
        p = subprocess.run(self.base + ["--tool", name, json.dumps(args)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        return p.returncode, p.stdout + p.stderr

    def close(self):
        pass


class BatchHost:
    """One prober (--probe batch, the default): one `agent-host --tool-batch` kept open on
    its own copy of the replayed session, which it loads once; each call is a line to it
    and an answer line back, through the same tool path as --tool. tool() answers what
    Host.tool does: the exit status (1 when is_error) and what --tool would have printed,
    the result text, then the reason of an error."""

    def __init__(self, build, home, session, cwd, source):
        shutil.copyfile(source, session)
        self.err_path = session + ".stderr"
        self.err = open(self.err_path, "w", encoding="utf-8")
        self.proc = subprocess.Popen(host_base(build, home, session, cwd) + ["--tool-batch"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.err,
                                     text=True, encoding="utf-8", bufsize=1)
        self.calls = 0

    def tool(self, name, args):
        self.calls += 1
        self.proc.stdin.write(json.dumps({"name": name, "args": args, "id": self.calls}) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit("eval: the --tool-batch host ended (status %s); its stderr: %s"
                             % (self.proc.wait(), open(self.err_path, encoding="utf-8").read()[-800:]))
        a = json.loads(line)
        if a.get("id") != self.calls:
            raise SystemExit("eval: the --tool-batch host answered call %s for call %d" % (a.get("id"), self.calls))
        out = (a["text"] + "\n") if a.get("text") is not None else ""
        if a["is_error"]:
            out += "agent-host: %s\n" % a.get("error", "")
        return (1 if a["is_error"] else 0), out

    def peak_rss_kb(self):
        """The batch host's peak resident size so far (Linux /proc), 0 when unknown."""
        try:
            with open("/proc/%d/status" % self.proc.pid, encoding="utf-8") as fh:
                m = re.search(r"^VmHWM:\s+(\d+) kB", fh.read(), re.M)
            return int(m.group(1)) if m else 0
        except OSError:
            return 0

    def close(self):
        self.rss_kb = self.peak_rss_kb()
        self.proc.stdin.close()
        rc = self.proc.wait()
        self.err.close()
        if rc != 0:
            raise SystemExit("eval: the --tool-batch host exited %d; its stderr: %s"
                             % (rc, open(self.err_path, encoding="utf-8").read()[-800:]))


def time_v(cmd, env):
    """Run under /usr/bin/time -v when present: (returncode, stdout, wall s, peak RSS KB)."""
    t0 = time.monotonic()
    use_time = os.path.exists("/usr/bin/time")
    full = ["/usr/bin/time", "-v"] + cmd if use_time else cmd
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    p = subprocess.run(full, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    wall = time.monotonic() - t0
    rss = 0
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr)
    if m:
        rss = int(m.group(1))
    else:
        rss = max(before, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
    err = re.sub(r"\n?\tCommand being timed:.*", "", p.stderr, flags=re.S) if use_time else p.stderr
    return p.returncode, p.stdout, err, wall, rss


def store_facts(db_path, needles):
    c = sqlite3.connect("file:%s?mode=ro" % db_path, uri=True)
    facts = {}
    n_summaries, max_depth = c.execute("SELECT count(*), coalesce(max(depth), -1) FROM summaries").fetchone()
    leaves = c.execute("SELECT count(*) FROM summaries WHERE kind = 'leaf'").fetchone()[0]
    n_msgs, msg_tokens = c.execute("SELECT count(*), coalesce(sum(tokens), 0) FROM messages").fetchone()
    sum_tokens = c.execute("SELECT coalesce(sum(tokens), 0) FROM summaries").fetchone()[0]
    n_files = c.execute("SELECT count(*) FROM file_handles").fetchone()[0]
    elig = "m.removed = 0 AND m.role NOT IN ('compactionSummary','branchSummary')"
    last_cov = c.execute(
        "SELECT max(m.ordinal) FROM messages m WHERE %s AND EXISTS "
        "(SELECT 1 FROM summary_messages sm WHERE sm.entry_id = m.entry_id)" % elig).fetchone()[0]
    for n in needles:
        row = c.execute("SELECT ordinal, removed, text, role FROM messages WHERE entry_id = ?",
                        (n["entry_id"],)).fetchone()
        f = {"stored": row is not None}
        if row:
            ordinal, removed, text, role = row
            kv = "%s=%s" % (n["key"], n["value"])
            f["char_at"] = text.find(kv)
            f["chars"] = len(text)
            f["role"] = role
            f["removed"] = bool(removed)
            covered = c.execute("SELECT min(summary_id) FROM summary_messages WHERE entry_id = ?",
                                (n["entry_id"],)).fetchone()[0]
            f["leaf"] = covered
            f["handle"] = c.execute("SELECT count(*) FROM file_handles WHERE entry_id = ?",
                                    (n["entry_id"],)).fetchone()[0] > 0
            if covered:
                f["dag"] = "covered"
            elif removed:
                f["dag"] = "removed-branch"
            elif last_cov is None or ordinal > last_cov:
                f["dag"] = "fresh-tail"
            else:
                f["dag"] = "gap"
        facts[n["key"]] = f
    c.close()
    return {"summaries": n_summaries, "leaves": leaves, "depth": max_depth, "stored_messages": n_msgs,
            "stored_tokens": msg_tokens, "summary_tokens": sum_tokens, "file_handles": n_files,
            "needles": facts}


def probe_address(host, n, f):
    """Verbatim by address (paging), and in one bounded reader window."""
    kv = "%s=%s" % (n["key"], n["value"])
    res = {"address": False, "pages": 0, "one_window": False}
    args = {"entry_id": n["entry_id"]}
    for _ in range(PAGE_LIMIT):
        rc, out = host.tool("lcm_expand_query", args)
        res["pages"] += 1
        if rc == 0 and kv in out:
            res["address"] = True
            break
        m = re.search(r'char_offset: (\d+)\}', out)
        if rc != 0 or not m:
            res["error"] = out[-300:]
            break
        args = {"entry_id": n["entry_id"], "char_offset": int(m.group(1))}
    # One window: where the needle sits, one call of one window's budget.
    at = f.get("char_at", -1)
    start = max(0, at - WINDOW_CHARS // 2) if at >= 0 else 0
    if f.get("chars", 0) <= WINDOW_CHARS:
        start = 0
    if start == 0 and res["pages"] == 1 and res["address"] and f.get("chars", 0) <= WINDOW_CHARS:
        res["one_window"] = True  # the whole message is one window and it was read in one call
    else:
        a = {"entry_id": n["entry_id"], "max_tokens": ONE_WINDOW_TOKENS}
        if start:
            a["char_offset"] = start
        rc, out = host.tool("lcm_expand_query", a)
        res["one_window"] = rc == 0 and kv in out and "--- window 1 of 1 ---" in out
    return res


def probe_grep(host, batch):
    """One lcm_grep pattern call for a batch of needles (an alternation of their exact
    key=value): each needle must come back as its own hit line naming its entry. Needles
    of removed branches are asked with include_removed, labelled [removed], and asked
    again without it, where they must not appear."""
    removed = batch[0]["where"] == "removed-branch"
    pat = r"\b(?:%s)\b" % "|".join("%s=%s" % (n["key"], n["value"]) for n in batch)
    args = {"pattern": pat}
    if removed:
        args["include_removed"] = True
    rc, out = host.tool("lcm_grep", args)
    # A scan stopped by its one-second bound names where to continue; a model would call
    # again from there, and so does the probe (a bound is not a miss).
    for _ in range(50):
        m = re.search(r'^continue: call again with the same pattern and resume "([0-9]+:[0-9]+)"', out, re.M)
        if rc != 0 or not m:
            break
        rc, more = host.tool("lcm_grep", dict(args, resume=m.group(1)))
        out += "\n" + more
    hits = [l for l in out.split("\n") if l.startswith("- ")]
    res = {}
    hidden_out = None
    if removed:
        rc2, hidden_out = host.tool("lcm_grep", {"pattern": pat})
        if rc2 != 0:
            hidden_out = None
    for n in batch:
        kv = "%s=%s" % (n["key"], n["value"])
        line = next((l for l in hits if n["entry_id"] in l and kv in l), None)
        r = {"grep": rc == 0 and line is not None}
        if removed:
            r["grep"] = r["grep"] and "[removed]" in line
            # A hit names its entry at the start of its line; the id can also appear inside
            # the text of an earlier probe's recorded tool call, which is no hit for it.
            r["hidden"] = hidden_out is not None and not re.search(
                r"^- (\[removed\] )?%s " % re.escape(n["entry_id"]), hidden_out, re.M)
        m = re.search(r"covered by summary #(\d+)", line or "")
        r["grep_cover"] = int(m.group(1)) if m else None
        res[n["key"]] = r
    return res


def surface(dump_path, needles):
    """Which needles the last request carries, and whether verbatim or inside a summary."""
    lines = open(dump_path, encoding="utf-8").read().split("\n") if os.path.exists(dump_path) else []
    out = {}
    for n in needles:
        kv = "%s=%s" % (n["key"], n["value"])
        where = None
        for line in lines:
            if kv in line:
                where = "summary" if "[lcm:summary" in line or "lcm:summary" in line else "verbatim"
                if where == "verbatim":
                    break
        out[n["key"]] = where
    return out, len(lines)


def read_jsonl(path):
    rows = []
    if os.path.exists(path):
        for line in open(path, encoding="utf-8"):
            line = line.strip()
            if line:
                try:
                    rows.append(json.loads(line))
                except ValueError:
                    pass
    return rows


def run_length(args, tokens, out_dir):
    t_start = time.monotonic()
    name = fmt_size(tokens)
    d = os.path.join(out_dir, name)
    shutil.rmtree(d, ignore_errors=True)
    home, work = os.path.join(d, "home"), os.path.join(d, "work")
    os.makedirs(home)
    os.makedirs(work)
    if args.lcm_config:
        with open(os.path.join(home, "lcm.json"), "w", encoding="utf-8") as fh:
            fh.write(args.lcm_config + "\n")
    inp, nfile = os.path.join(d, "recorded.jsonl"), os.path.join(d, "needles.jsonl")
    sess, reqlog, dump = os.path.join(d, "session.jsonl"), os.path.join(d, "requests.jsonl"), os.path.join(d, "last-request.jsonl")
    host_bin = os.path.join(args.build, "agent-host")
    subprocess.run([host_bin, "gen", "--seed", str(args.seed), "--tokens", str(tokens), "--needles", nfile, inp],
                   check=True, stdout=subprocess.DEVNULL)
    needles = read_jsonl(nfile)
    recorded = read_jsonl(inp)
    gen_tokens = os.path.getsize(inp) // 4  # the generator's own estimate: bytes / 4
    n_messages = sum(1 for r in recorded if r.get("type") == "message")
    last_message = next((r["id"] for r in reversed(recorded) if r.get("type") == "message"), None)
    del recorded
    env = dict(os.environ, LCM_REQUEST_LOG=reqlog, LCM_REQUEST_DUMP=dump, TMPDIR=work)
    cmd = [host_bin, "--home", home, "--plugin-dir", os.path.join(args.build, "plugins"),
           "--session", sess, "--cwd", work, "replay", inp, "--window", str(args.window)]
    rc, rout, rerr, replay_wall, rss = time_v(cmd, env)
    if rc != 0:
        raise SystemExit("eval: replay of %s failed (%d): %s" % (name, rc, rerr[-800:]))
    m = re.search(r"(\d+) requests, (\d+) tree moves, (\d+) compactions", rout)
    host_compactions = int(m.group(3)) if m else 0
    tree_moves = int(m.group(2)) if m else 0
    reqs = read_jsonl(reqlog)
    sid = json.loads(open(sess, encoding="utf-8").readline())["id"]
    db = os.path.join(home, "lcm", sid + ".sqlite")
    facts = store_facts(db, needles)
    surf, surface_items = surface(dump, needles)

    # Probe on a copy of the replayed session: the tool calls append to the file they
    # run on, and the replayed one stays as the host left it (same id, same store). Each
    # worker thread has its own prober: a batch host it keeps open, or a host per call.
    local = threading.local()
    hosts = []
    lock = threading.Lock()
    prober_class = BatchHost if args.probe == "batch" else Host
    jobs = args.batch_jobs if args.probe == "batch" else args.jobs

    def prober():
        if not hasattr(local, "host"):
            with lock:
                path = os.path.join(d, "probe-%d.jsonl" % len(hosts))
                hosts.append(None)
                i = len(hosts) - 1
            local.host = prober_class(args.build, home, path, work, sess)
            hosts[i] = local.host
        return local.host

    t_probe = time.monotonic()
    stored = [n for n in needles if facts["needles"].get(n["key"], {}).get("stored")]
    batches = []
    for group in ([n for n in stored if n["where"] != "removed-branch"],
                  [n for n in stored if n["where"] == "removed-branch"]):
        batches += [group[i:i + args.grep_batch] for i in range(0, len(group), args.grep_batch)]
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        addr = {n["key"]: pool.submit(lambda n=n: probe_address(prober(), n, facts["needles"][n["key"]]))
                for n in stored}
        greps = [pool.submit(lambda b=b: probe_grep(prober(), b)) for b in batches]
        grep_res = {}
        for g in greps:
            grep_res.update(g.result())
        addr_res = {k: v.result() for k, v in addr.items()}
    for h in hosts:
        h.close()
    results = []
    failures = []
    for n in needles:
        f = facts["needles"].get(n["key"], {})
        r = {"key": n["key"], "value": n["value"], "entry_id": n["entry_id"], "where": n["where"]}
        r.update({k: f.get(k) for k in ("dag", "chars", "char_at", "handle", "leaf")})
        if not f.get("stored"):
            r.update(address=False, one_window=False, grep=False, dag="not-stored")
        else:
            r.update(addr_res[n["key"]])
            r.update(grep_res.get(n["key"], {"grep": False}))
        r["surface"] = surf.get(n["key"]) if n["where"] != "removed-branch" else None
        why = []
        if not f.get("stored"):
            why.append("never ingested: the store holds no entry %s (%s message%s)" % (
                n["entry_id"], n["part"], ", the last of its abandoned branch" if n["where"] == "removed-branch"
                else ", the session's last: no request came after it" if n["entry_id"] == last_message else ""))
        elif not r.get("address"):
            why.append("not returned by address")
        if f.get("stored") and not r.get("grep"):
            why.append("not found by lcm_grep")
        if f.get("stored") and not r.get("one_window"):
            why.append("not readable in one reader window")
        if r.get("dag") == "gap":
            why.append("not covered by the DAG outside the fresh tail")
        if f.get("stored") and n["where"] == "removed-branch" and r.get("dag") != "removed-branch":
            why.append("planted in a removed branch but the store does not mark it removed")
        if r.get("hidden") is False:
            why.append("removed-branch needle visible without include_removed")
        if why:
            failures.append((n["key"], "; ".join(why)))
        r["fail"] = why
        results.append(r)
    probe_wall = time.monotonic() - t_probe

    live = [r for r in results if r["where"] != "removed-branch"]
    window = reqs[-1]["window"] if reqs else args.window
    # The swap band is append-only: a request that keeps the previous one's pin over a raw
    # input that only grew must start with that request's bytes (the provider's cached
    # prefix), unless live context's overflow guard (window - 4096 - 2048) re-shaped it.
    guard = window - 4096 - 2048
    keeps = [(p, q) for p, q in zip(reqs, reqs[1:]) if q.get("action") == "keep" and
             q.get("rawAppended") and q.get("cut") == p.get("cut") and (p.get("cut") or 0) > 0 and
             max(p["tokens"], q["tokens"]) < guard]
    not_extended = [q["request"] for p, q in keeps if q.get("prefixSha") != p.get("sha")]
    for req in not_extended:
        failures.append(("request %d" % req, "kept the pin but does not extend the previous request byte for byte"))
    # Requests over the window are reported in the peak column ("N over"), not as failures:
    # at a small window one tool result can be larger than the window itself.
    peak = max((q["tokens"] for q in reqs), default=0)
    last = reqs[-1] if reqs else {}
    passes = [m for m in read_jsonl(os.path.join(home, "lcm", "metrics.jsonl"))
              if m.get("kind") == "compaction-pass" and (m.get("leaves", 0) or m.get("condensed", 0))]
    row = {
        "size": name, "target_tokens": tokens, "tokens": gen_tokens, "messages": n_messages,
        "window": window, "requests": len(reqs), "peak_sent": peak,
        "peak_pct": round(100.0 * peak / window, 1) if window else None,
        "last_sent": last.get("tokens"), "last_raw": last.get("raw"),
        # history stored / what the last request carried
        "compression": round(facts["stored_tokens"] / last["tokens"], 1) if last.get("tokens") else None,
        "over_window": sum(1 for q in reqs if q["tokens"] > q["window"]),
        "summaries": facts["summaries"], "leaves": facts["leaves"], "dag_depth": facts["depth"],
        "dag_passes": len(passes), "host_compactions": host_compactions, "tree_moves": tree_moves,
        "file_handles": facts["file_handles"],
        "needles": len(results),
        "by_where": {w: sum(1 for r in results if r["where"] == w) for w in sorted({r["where"] for r in results})},
        "by_address": sum(1 for r in results if r.get("address")),
        "one_window": sum(1 for r in results if r.get("one_window")),
        "by_grep": sum(1 for r in results if r.get("grep")),
        "dag_covered": sum(1 for r in results if r.get("dag") == "covered"),
        "fresh_tail": sum(1 for r in results if r.get("dag") == "fresh-tail"),
        "removed": sum(1 for r in results if r.get("dag") == "removed-branch"),
        "surface_live": len(live),
        "surface": sum(1 for r in live if r["surface"]),
        "surface_verbatim": sum(1 for r in live if r["surface"] == "verbatim"),
        "surface_summary": sum(1 for r in live if r["surface"] == "summary"),
        "recall_only": sum(1 for r in live if not r["surface"] and r.get("address") and r.get("grep")),
        "append_checked": len(keeps), "append_broken": len(not_extended),
        "failures": len(failures),
        "replay_s": round(replay_wall, 2), "probe_s": round(probe_wall, 2), "tool_calls": sum(h.calls for h in hosts),
        "probe": args.probe, "probe_hosts": len(hosts),
        "probe_rss_mb": round(max((getattr(h, "rss_kb", 0) for h in hosts), default=0) / 1024.0, 1),
        "wall_s": round(time.monotonic() - t_start, 2), "peak_rss_mb": round(rss / 1024.0, 1),
    }
    svg_path = os.path.join(out_dir, "context-%s.svg" % name)
    svg.context_chart(svg_path, reqs, passes, "context sent per request, %s tokens replayed at a %s window (seed %d)"
                      % (name, fmt_size(window) if window % 1000 == 0 else window, args.seed))
    row["svg"] = svg_path
    with open(os.path.join(d, "needles-result.jsonl"), "w", encoding="utf-8") as fh:
        for r in results:
            fh.write(json.dumps(r) + "\n")
    return row, failures


COLUMNS = [
    ("size", "length"), ("tokens", "tokens"), ("messages", "messages"), ("requests", "requests"),
    ("peak", "peak sent / window"), ("summaries", "summaries"), ("dag_depth", "DAG depth"),
    ("compression", "compression"), ("needles", "needles"), ("by_address", "by address"),
    ("one_window", "one window"), ("by_grep", "by grep"), ("surface", "surface (verbatim+summary) / live"),
    ("recall_only", "recall only"), ("append", "byte-extensions"), ("failures", "failures"),
    ("wall_s", "wall s (replay)"),
    ("peak_rss_mb", "peak RSS MB"),
]


def cell(row, key):
    if key == "peak":
        over = ", %d over" % row["over_window"] if row["over_window"] else ""
        return "%d / %d (%.0f%%%s)" % (row["peak_sent"], row["window"], row["peak_pct"] or 0, over)
    if key == "append":
        return "%d / %d" % (row["append_checked"] - row["append_broken"], row["append_checked"])
    if key == "surface":
        return "%d (%d+%d) / %d" % (row["surface"], row["surface_verbatim"], row["surface_summary"], row["surface_live"])
    if key == "wall_s":
        return "%.1f (%.1f)" % (row["wall_s"], row["replay_s"])
    if key == "compression":
        return "%sx" % row["compression"]
    return str(row[key])


def table(rows):
    out = ["| " + " | ".join(h for _, h in COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for r in rows:
        out.append("| " + " | ".join(cell(r, k) for k, _ in COLUMNS) + " |")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--out", default=None, help="report folder (default BUILD/eval)")
    ap.add_argument("--sizes", default="32k 128k 512k 2M")
    ap.add_argument("--window", type=int, default=128000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--probe", choices=("batch", "tool"), default="batch",
                    help="batch: probe through agent-host --tool-batch kept open (the session loads "
                         "once); tool: a fresh agent-host --tool per call (the earlier way, to compare)")
    ap.add_argument("--jobs", type=int, default=2, help="probing host processes at a time with --probe tool")
    ap.add_argument("--batch-jobs", type=int, default=1,
                    help="--tool-batch hosts kept open per length with --probe batch")
    ap.add_argument("--grep-batch", type=int, default=10, help="needles per lcm_grep pattern call")
    ap.add_argument("--lcm-config", default=None,
                    help="lcm.json of the replay's home, e.g. '{\"summaryWorker\": false}' for a "
                         "lockstep replay whose rows repeat exactly (the default worker's timing varies)")
    a = ap.parse_args()
    a.build = os.path.abspath(a.build)
    if a.lcm_config is not None:
        try:
            if not isinstance(json.loads(a.lcm_config), dict):
                raise ValueError("not an object")
        except ValueError as e:
            raise SystemExit("eval: --lcm-config is not a JSON object (%s)" % e)
    out = os.path.abspath(a.out or os.path.join(a.build, "eval"))
    os.makedirs(out, exist_ok=True)
    sizes = [parse_size(s) for s in a.sizes.replace(",", " ").split()]
    rows, all_fail = [], []
    print("# procedural long-context evaluation: seed %d, window %d, sizes %s" % (a.seed, a.window, a.sizes))
    for t in sizes:
        row, failures = run_length(a, t, out)
        rows.append(row)
        all_fail += [(row["size"], k, w) for k, w in failures]
        print("%s: %d tokens, %d requests, peak %d/%d, %d summaries depth %d, needles %d: address %d, "
              "one window %d, grep %d, surface %d/%d, recall only %d, byte-extensions %d/%d, failures %d, %.1fs, %.1f MB"
              % (row["size"], row["tokens"], row["requests"], row["peak_sent"], row["window"],
                 row["summaries"], row["dag_depth"], row["needles"], row["by_address"], row["one_window"],
                 row["by_grep"], row["surface"], row["surface_live"], row["recall_only"],
                 row["append_checked"] - row["append_broken"], row["append_checked"], row["failures"],
                 row["wall_s"], row["peak_rss_mb"]), flush=True)
        metric = dict(row, ts=int(time.time() * 1000), kind="eval", seed=a.seed)
        with open(os.path.join(out, "metrics.jsonl"), "a", encoding="utf-8") as fh:
            fh.write(json.dumps(metric) + "\n")
    report = {"seed": a.seed, "window": a.window, "rows": rows, "probe": a.probe, "lcm_config": a.lcm_config,
              "failures": [{"size": s, "key": k, "why": w} for s, k, w in all_fail],
              "command": "make eval EVAL_SIZES=\"%s\" EVAL_WINDOW=%d EVAL_SEED=%d" % (a.sizes, a.window, a.seed)}
    with open(os.path.join(out, "report.json"), "w", encoding="utf-8") as fh:
        json.dump(report, fh, indent=1)
    t = table(rows)
    with open(os.path.join(out, "table.md"), "w", encoding="utf-8") as fh:
        fh.write(t)
    print()
    print(t)
    for s, k, w in all_fail[:20]:
        print("FAIL %s %s: %s" % (s, k, w))
    print("report: %s/report.json, table: %s/table.md, images: %s/context-*.svg" % (out, out, out))
    print("eval: %d failure(s)" % len(all_fail))
    return 1 if all_fail else 0


if __name__ == "__main__":
    sys.exit(main())
