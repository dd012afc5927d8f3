#!/usr/bin/env python3
"""Check a Pi session that loaded lossless-context only as an installed Pi package.

    check_install.py PKG OUT AGENT_DIR

PKG is the repository copy `pi install PKG` registered (it had no build/lossless-context.so
and no host/pi/node_modules before Pi started); OUT is pi_session.py's output folder;
AGENT_DIR is Pi's agent home. Asserts: Pi's settings list the package; the extension built
the .so and installed koffi in the copy; the bridge loaded that .so; the model was offered
the plugin's tools and the package's skill; /lcm status answered through Pi and the store
holds the session's messages.
"""
import glob
import json
import os
import re
import sys


def main():
    pkg, out, agent = sys.argv[1:4]
    failures = []

    def check(cond, what, detail=""):
        print(("ok   " if cond else "FAIL ") + what)
        if not cond:
            failures.append(what)
            if detail:
                print("     " + str(detail)[:800])

    settings = json.load(open(os.path.join(agent, "settings.json")))
    pkgs = [p if isinstance(p, str) else p.get("source") for p in settings.get("packages", [])]
    # A local path is kept relative to the settings file's folder.
    check(any(p and os.path.realpath(os.path.join(agent, p)) == os.path.realpath(pkg) for p in pkgs),
          "pi install registered the package in Pi's settings", settings)
    so = os.path.join(pkg, "build", "lossless-context.so")
    check(os.path.exists(so), "the extension built the plugin in the package (make)")
    check(os.path.isdir(os.path.join(pkg, "host", "pi", "node_modules", "koffi")),
          "the extension installed koffi in the package (npm ci)")
    log_path = os.path.join(agent, "lcm", "pi-bridge.log")
    log = open(log_path, errors="replace").read() if os.path.exists(log_path) else ""
    check(re.search(r"loaded lossless-context \S+ from %s" % re.escape(so), log),
          "the bridge loaded the package's own .so", log[-600:])
    requests = [json.loads(l) for l in open(os.path.join(out, "requests.jsonl")) if l.strip()]
    requests = [r for r in requests if "messages" in r]
    check(requests, "Pi sent the prompt to the model")
    first = requests[0] if requests else {}
    tools = {t.get("function", {}).get("name") for t in first.get("tools", [])}
    check({"lcm_grep", "lcm_describe", "lcm_expand_query"} <= tools,
          "the model is offered the plugin's tools", sorted(tools))
    system = " ".join(m.get("content") if isinstance(m.get("content"), str) else json.dumps(m.get("content"))
                      for m in first.get("messages", []) if m.get("role") in ("system", "developer"))
    check("lcm-recall" in system, "the package's skill lcm-recall is offered to the model", system[-800:])
    notes = json.load(open(os.path.join(out, "notes.json")))
    status = "\n".join(n for s in notes if s["step"] == "/lcm status" for n in s["notes"] if n)
    m = re.search(r"LCM: (\d+) messages", status)
    check(m and int(m.group(1)) >= 1, "/lcm status answered through Pi with the stored messages", status or notes)
    check("host: pi-bridge" in status, "/lcm status names the bridge and Pi", status)
    check(glob.glob(os.path.join(agent, "lcm", "*.sqlite")), "the store was made in Pi's agent home")
    if failures:
        print("%d check(s) failed" % len(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
