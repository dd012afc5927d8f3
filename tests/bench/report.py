"""Turn the text `make bench` prints into BUILD/bench/report.json: one record per benchmark
command with its output lines, and every "name: number unit" figure pulled out of them, so
runs can be compared by a script. Usage: python3 report.py LOG OUT.json"""
import json
import re
import sys

log, out = sys.argv[1], sys.argv[2]
report = {"machine": None, "sections": []}
section = None
for line in open(log, encoding="utf-8", errors="replace"):
    line = line.rstrip("\n")
    if line.startswith("# lossless-context benchmarks"):
        report["machine"] = line[2:]
    elif line.startswith("## "):
        section = {"title": line[3:], "command": None, "lines": [], "figures": []}
        report["sections"].append(section)
    elif section is not None and line.startswith("$ ") and section["command"] is None:
        section["command"] = line[2:]
    elif section is not None and line.strip():
        section["lines"].append(line)
        for m in re.finditer(r"([A-Za-z][\w ()/.,-]*?):\s*(-?\d+(?:\.\d+)?)\s*([A-Za-z%/µ]+(?:/s)?)?", line):
            section["figures"].append({"name": m.group(1).strip(), "value": float(m.group(2)),
                                       "unit": m.group(3) or ""})
json.dump(report, open(out, "w", encoding="utf-8"), indent=1)
print("wrote", out, "(%d sections)" % len(report["sections"]))
