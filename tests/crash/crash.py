#!/usr/bin/env python3
"""Crash-consistency harness: kill the real host (with the real plugin) with SIGKILL at a
random moment of one of four workloads, restart it on the same session and agent home, and
check the promises:

  * `/lcm doctor` is clean after the restart (faults: 0), and the restart itself succeeds;
  * the session file is intact (only its last line may be cut short by the kill) and every
    message entry it holds is in the store, byte for byte (SHA-256 of the stored raw JSON
    against the bytes in the session line);
  * the live-context revision in force is the last one the session file holds (a revision
    is active only once persisted, never half-written);
  * the mirror folder holds no partial file (no leftover temp file, LIVE_CONTEXT.md whole).

Workloads (round robin, kill delay uniform over the workload's calibrated run time):
  ingest      replay of a generated session at a 128k window (store ingest)
  compaction  the same replay at a 16k window with small leaves (DAG passes at turn_end)
  worker      the same replay with every summary from a model that takes 0.15 s a call, so
              the kill lands while the background worker is inside a pass
  revision    a scripted model (tests/contract/fake_openai.py) edits LIVE_CONTEXT.md every
              turn, so each turn_end persists a revision
  backup      repeated `/lcm backup` on a finished store

    crash.py --build BUILD --trials N [--seed S] [--keep DIR]

Prints one line per failed trial and a closing summary; exits 1 on any failure.
"""
import argparse
import glob
import hashlib
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FAKE = os.path.join(ROOT, "tests", "contract", "fake_openai.py")
sys.path.insert(0, os.path.join(ROOT, "tests", "contract"))
import store_raw  # noqa: E402  (a row's verbatim JSON, packed or not)
SCENARIOS = ["ingest", "compaction", "worker", "revision", "backup"]
EDITS = 6


class Ctx:
    pass


def host_cmd(c, home, session, window, extra):
    return [c.host, "--home", home, "--plugin-dir", c.plugins, "--session", session,
            "--window", str(window)] + extra


def env_for(tmp):
    e = dict(os.environ)
    e["TMPDIR"] = tmp
    e.pop("LCM_REQUEST_LOG", None)
    return e


def start_fake(t, script):
    sp = os.path.join(t, "script.json")
    with open(sp, "w") as f:
        json.dump(script, f)
    portf = os.path.join(t, "port")
    out = open(portf, "w")
    srv = subprocess.Popen([sys.executable, FAKE, "--port", "0", "--script", sp,
                            "--record", os.path.join(t, "requests.jsonl")],
                           stdout=out, stderr=subprocess.DEVNULL)
    for _ in range(200):
        try:
            port = open(portf).readline().strip()
        except OSError:
            port = ""
        if port:
            return srv, port
        time.sleep(0.02)
    srv.kill()
    raise RuntimeError("fake model server did not start")


def prepare(c, scen, t):
    """Lay out trial folder t; return (argv, env, window, server-or-None)."""
    home, tmp = os.path.join(t, "home"), os.path.join(t, "tmp")
    os.makedirs(tmp, exist_ok=True)
    session = os.path.join(t, "out.jsonl")
    if scen == "backup":
        shutil.copytree(c.tpl_home, home)
        shutil.copy(c.tpl_session, session)
        cmds = []
        for _ in range(8):
            cmds += ["--command", "/lcm backup"]
        return host_cmd(c, home, session, 16000, cmds), env_for(tmp), 16000, None
    os.makedirs(home)
    if scen == "ingest":
        return host_cmd(c, home, session, 128000, ["replay", c.gen]), env_for(tmp), 128000, None
    if scen == "compaction":
        with open(os.path.join(home, "lcm.json"), "w") as f:
            f.write('{"leafChunkTokens":2000,"summaryTokens":200}\n')
        return host_cmd(c, home, session, 16000, ["replay", c.gen]), env_for(tmp), 16000, None
    if scen == "worker":
        srv, port = start_fake(t, [{"content": "worker summary %d: the step went fine" % k,
                                    "delay": 0.15} for k in range(400)])
        with open(os.path.join(home, "lcm.json"), "w") as f:
            json.dump({"summarizer": ["fake/sum"], "baseUrls": {"fake": "http://127.0.0.1:%s/v1" % port},
                       "leafChunkTokens": 2000, "summaryTokens": 200, "eagerSummaries": True}, f)
        return host_cmd(c, home, session, 16000, ["replay", c.gen]), env_for(tmp), 16000, srv
    # revision: a known session id, a scripted model that edits the mirror every turn
    work = os.path.join(t, "work")
    os.makedirs(work)
    with open(session, "w") as f:
        f.write(json.dumps({"type": "session", "version": 3, "id": "crash-" + os.path.basename(t),
                            "timestamp": "2025-11-29T17:00:00.000Z", "cwd": work}) + "\n")
    edit = os.path.join(HERE, "note_edit.py")
    script = [{"tool_calls": [{"name": "bash", "arguments": {
        "command": "python3 %s %d" % (edit, k)}}]} for k in range(1, EDITS + 1)]
    script.append({"content": "CRASH_RUN_DONE"})
    srv, port = start_fake(t, script)
    argv = host_cmd(c, home, session, 128000, [
        "--cwd", work, "--base-url", "http://127.0.0.1:%s/v1" % port, "--model", "fake",
        "-p", "count to ten, one turn at a time"])
    return argv, env_for(tmp), 128000, srv


def read_session(path):
    """(entries, problems): a malformed line is a problem unless it is the last line and
    lacks its newline (the kill cut the append short)."""
    entries, problems = [], []
    try:
        data = open(path, "rb").read()
    except FileNotFoundError:
        return [], []
    lines = data.split(b"\n")
    for i, raw in enumerate(lines):
        if not raw.strip():
            continue
        try:
            e = json.loads(raw)
        except ValueError:
            if i == len(lines) - 1:
                continue
            problems.append("session line %d is malformed" % (i + 1))
            continue
        entries.append((e, raw))
    return entries, problems


def check(c, scen, t, restart_out, restart_rc):
    problems = []
    session = os.path.join(t, "out.jsonl")
    entries, sp = read_session(session)
    problems += sp
    if restart_rc != 0:
        problems.append("restart exited %d: %s" % (restart_rc, restart_out[-400:]))
    header = next((e for e, _ in entries if e.get("type") == "session"), None)
    msgs = [(e, raw) for e, raw in entries if e.get("type") == "message"]
    if header and msgs:
        if "faults: 0" not in restart_out:
            problems.append("doctor not clean: " + restart_out[:600])
        db_path = os.path.join(t, "home", "lcm", header["id"] + ".sqlite")
        if not os.path.exists(db_path):
            problems.append("no store at " + db_path)
        else:
            db = sqlite3.connect("file:%s?mode=ro" % db_path, uri=True)
            stored = dict(store_raw.rows(db, ["entry_id", "raw_json"]))
            db.close()
            missing = bad = 0
            # A message with no stored descendant has not reached a `context` call yet
            # (the branch's closing assistant turn, or the kill came first): the plugin
            # ingests on `context` only, so those are counted as pending, not lost.
            parent = {e.get("id"): e.get("parentId") for e, _ in entries}
            covered = set()
            for eid in stored:
                q = parent.get(eid)
                while q and q not in covered:
                    covered.add(q)
                    q = parent.get(q)
            for e, raw in msgs:
                r = stored.get(e.get("id"))
                if r is None:
                    if e.get("id") in covered:
                        missing += 1
                    else:
                        c.pending += 1
                    continue
                rb = r.encode("utf-8")
                # the digest of the stored bytes must be the digest of the bytes the
                # session line holds for that message
                if rb not in raw or json.loads(r) != e.get("message") or \
                        hashlib.sha256(rb).digest() != hashlib.sha256(
                            raw[raw.find(rb):raw.find(rb) + len(rb)]).digest():
                    bad += 1
            if missing or bad:
                problems.append("store: %d of %d session messages missing, %d differ"
                                % (missing, len(msgs), bad))
    # the revision in force is the last one persisted
    states = [e.get("data") or {} for e, _ in entries
              if e.get("type") == "custom" and e.get("customType") == "live-context-state"]
    accepted = [d for d in states if d.get("kind") in ("accept", "reset")]
    want = None
    if accepted:
        last = accepted[-1]
        want = None if last.get("kind") == "reset" else int(last.get("revision", 0))
    if want is not None and ("revision %d in force" % want) not in restart_out:
        problems.append("revision %d was persisted last but is not in force: %s" % (
            want, next((l for l in restart_out.splitlines() if l.startswith("edits:")), "?")))
    if scen == "revision" and want is None and "revision " in restart_out and " in force" in restart_out:
        if any(l.startswith("edits: revision") for l in restart_out.splitlines()):
            problems.append("a revision is in force that the session file never persisted")
    # no partial file in the mirror folder
    for d in glob.glob(os.path.join(t, "tmp", "lossless-context-*")):
        for name in os.listdir(d):
            full = os.path.join(d, name)
            if ".tmp" in name:
                problems.append("partial file left in the mirror folder: " + name)
            elif name == "LIVE_CONTEXT.md":
                text = open(full, "rb").read()
                if not text.startswith(b"[[CTX_") and not text.startswith(b"<!--") and \
                        b"document=" not in text.split(b"\n", 1)[0]:
                    problems.append("LIVE_CONTEXT.md does not start with its header")
    # no partial backup: every backup file that exists opens and holds the messages
    if scen == "backup":
        for bk in glob.glob(os.path.join(t, "home", "lcm", "lcm-backup-*")):
            if ".tmp" in bk or bk.endswith("-journal") or bk.endswith("-wal"):
                problems.append("partial backup file left: " + os.path.basename(bk))
                continue
            try:
                db = sqlite3.connect("file:%s?mode=ro" % bk, uri=True)
                n = db.execute("SELECT count(*) FROM messages").fetchone()[0]
                ok = db.execute("PRAGMA quick_check").fetchone()[0]
                db.close()
                if ok != "ok" or n == 0:
                    problems.append("backup %s: quick_check %s, %d messages" % (bk, ok, n))
            except sqlite3.Error as ex:
                problems.append("backup %s unreadable: %s" % (os.path.basename(bk), ex))
    return problems


def run_once(c, scen, t, delay):
    argv, env, window, srv = prepare(c, scen, t)
    start = time.monotonic()
    p = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    killed = False
    if delay is None:
        p.wait()
    else:
        try:
            p.wait(timeout=delay)
        except subprocess.TimeoutExpired:
            p.send_signal(signal.SIGKILL)
            p.wait()
            killed = True
    elapsed = time.monotonic() - start
    if srv:
        srv.kill()
        srv.wait()
    session = os.path.join(t, "out.jsonl")
    # after a killed backup, one more backup must sweep the dead copy's temp file
    more = ["--command", "/lcm backup"] if scen == "backup" else []
    r = subprocess.run(host_cmd(c, os.path.join(t, "home"), session, window,
                                ["--command", "/lcm doctor", "--command", "/clm status"] + more),
                       env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=120)
    out = r.stdout.decode("utf-8", "replace")
    return killed, elapsed, check(c, scen, t, out, r.returncode)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--trials", type=int, default=200)
    ap.add_argument("--seed", type=int, default=int(time.time()))
    ap.add_argument("--keep", help="keep failed trial folders here")
    a = ap.parse_args()
    c = Ctx()
    c.pending = 0
    b = os.path.abspath(a.build)
    c.host, c.plugins = os.path.join(b, "agent-host"), os.path.join(b, "plugins")
    work = tempfile.mkdtemp(prefix="lc-crash.")
    rng = random.Random(a.seed)
    try:
        c.gen = os.path.join(work, "gen.jsonl")
        subprocess.run([c.host, "gen", "--seed", "7", "--tokens", "60000", c.gen], check=True,
                       stdout=subprocess.DEVNULL)
        # a finished store for the backup workload, and one uncut run of each workload to
        # calibrate the kill window
        tpl = os.path.join(work, "tpl")
        os.makedirs(tpl)
        argv, env, _, _ = prepare(c, "compaction", tpl)
        subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        c.tpl_home, c.tpl_session = os.path.join(tpl, "home"), os.path.join(tpl, "out.jsonl")
        dur = {}
        for s in SCENARIOS:
            t = os.path.join(work, "cal-" + s)
            os.makedirs(t)
            _, el, probs = run_once(c, s, t, None)
            if probs:
                print("calibration run of %s failed: %s" % (s, "; ".join(probs)))
                return 1
            dur[s] = el
            shutil.rmtree(t)
        print("crash: seed %d; uncut run times %s" % (a.seed, ", ".join(
            "%s %.2fs" % (s, dur[s]) for s in SCENARIOS)))
        failed, killed_n, per = 0, 0, {s: [0, 0] for s in SCENARIOS}
        c.pending = 0
        for i in range(a.trials):
            s = SCENARIOS[i % len(SCENARIOS)]
            t = os.path.join(work, "t%04d-%s" % (i, s))
            os.makedirs(t)
            delay = rng.uniform(0.0, dur[s] * 1.05)
            killed, _, probs = run_once(c, s, t, delay)
            killed_n += killed
            per[s][0] += 1
            if probs:
                failed += 1
                per[s][1] += 1
                print("FAIL trial %d (%s, killed at %.3fs%s): %s" % (
                    i, s, delay, "" if killed else ", finished first", "; ".join(probs)))
                if a.keep:
                    os.makedirs(a.keep, exist_ok=True)
                    shutil.move(t, os.path.join(a.keep, os.path.basename(t)))
                    continue
            shutil.rmtree(t, ignore_errors=True)
        print("crash: %d trials (%s), %d killed mid-run: %d survived, %d failed; "
              "%d branch-tail messages not yet ingested (no context call since)" % (
                  a.trials, ", ".join("%s %d" % (s, per[s][0]) for s in SCENARIOS), killed_n,
                  a.trials - failed, failed, c.pending))
        return 1 if failed else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
