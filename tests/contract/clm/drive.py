"""Drive an interactive agent-host through stdin with sync points, for steps that must
happen while the host is idle between prompts (test_clm_modes.sh):

    drive.py STEPS OUT -- HOST ARGS...

STEPS holds one step a line: `> LINE` sends LINE to the host; `>! CMD` sends the output
of the shell command CMD; `=` sends `/clm status` and waits until its answer is printed,
so everything before it (the turn, its turn_end) is over; `! CMD` runs a shell command
and fails the drive when it fails. The host's stdout is copied to OUT; stdin is closed
(after `/quit`) at the end, and the host's exit status is the drive's."""
import subprocess
import sys
import threading
import time

MARK = "; observed previous request: "

steps_path, out_path = sys.argv[1], sys.argv[2]
cmd = sys.argv[sys.argv.index("--") + 1:]
host = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
seen = {"marks": 0}
cond = threading.Condition()


def pump():
    with open(out_path, "w", encoding="utf-8") as out:
        for line in host.stdout:
            out.write(line)
            out.flush()
            with cond:
                seen["marks"] += line.count(MARK)
                cond.notify_all()
    with cond:
        seen["eof"] = True
        cond.notify_all()


def send(line):
    host.stdin.write(line + "\n")
    host.stdin.flush()


reader = threading.Thread(target=pump, daemon=True)
reader.start()
for raw in open(steps_path, encoding="utf-8"):
    step = raw.rstrip("\n")
    if not step:
        continue
    if step == "=":
        with cond:
            want = seen["marks"] + 1
        send("/clm status")
        deadline = time.monotonic() + 30
        with cond:
            while seen["marks"] < want and not seen.get("eof"):
                if not cond.wait(timeout=max(0.0, deadline - time.monotonic())):
                    break
            if seen["marks"] < want:
                sys.exit("drive: no /clm status answer (sync lost)")
    elif step.startswith(">! "):
        send(subprocess.run(step[3:], shell=True, check=True, capture_output=True,
                            text=True).stdout.strip())
    elif step.startswith("> "):
        send(step[2:])
    elif step.startswith("! "):
        subprocess.run(step[2:], shell=True, check=True)
    else:
        sys.exit("drive: bad step " + step)
send("/quit")
host.stdin.close()
rc = host.wait(timeout=60)
reader.join(timeout=10)
sys.exit(rc)
