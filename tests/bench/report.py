"""Turn the text `make bench` prints into BUILD/bench/report.json: one record per benchmark
section with its command, its output lines, its tables and every figure pulled out of them,
so runs can be compared by a script. Usage: python3 report.py LOG OUT.json

Figures come from three shapes of line:
  "name: median 1.2 ms, p99 3.4 ms (...)"  -> "name median" and "name p99"
  "name: 12.5 unit ..."                     -> "name" (and any further "x: n unit" pairs)
  a table (a header of words, then rows starting with a number, as many cells as the
  header)                                   -> "<col0> <row key> <column>" per numeric cell
"""
import json
import re
import sys

NUM = r"-?\d+(?:\.\d+)?"
MEDIAN = re.compile(r"^\s*(?P<name>[^:]+?):\s*median\s+(?P<m>%s)\s*(?P<mu>[A-Za-zµ%%/]*),\s*"
                    r"p99\s+(?P<p>%s)\s*(?P<pu>[A-Za-zµ%%/]*)" % (NUM, NUM))
PAIR = re.compile(r"([A-Za-z][\w ()/.,-]*?):\s*(%s)\s*([A-Za-z%%/µ]+(?:/s)?)?" % NUM)
CELL = re.compile(r"^(%s)([A-Za-zµ%%/]*)$" % NUM)


def figure(name, value, unit):
    return {"name": name.strip(), "value": float(value), "unit": unit or ""}


def is_number_cell(tok):
    return CELL.match(tok) is not None


def parse(lines):
    report = {"machine": None, "sections": []}
    section = None
    header = None  # the open table's column names
    for line in lines:
        line = line.rstrip("\n")
        if line.startswith("# lossless-context benchmarks"):
            report["machine"] = line[2:]
            continue
        if line.startswith("## "):
            section = {"title": line[3:], "command": None, "lines": [], "tables": [], "figures": []}
            report["sections"].append(section)
            header = None
            continue
        if section is None:
            continue
        if line.startswith("$ ") and section["command"] is None:
            section["command"] = line[2:]
            continue
        if not line.strip():
            header = None
            continue
        section["lines"].append(line)
        toks = line.split()
        if header and len(toks) == len(header) and is_number_cell(toks[0]):
            table = section["tables"][-1]
            table["rows"].append(toks)
            # The row's key: its first cell and any word cells (e.g. a configuration name).
            key = " ".join([toks[0]] + [t for t in toks[1:] if not CELL.match(t)])
            for col, tok in zip(header[1:], toks[1:]):
                m = CELL.match(tok)
                if m:
                    section["figures"].append(
                        figure("%s %s %s" % (header[0], key, col), m.group(1), m.group(2)))
            continue
        if (len(toks) >= 3 and ":" not in line and
                not any(any(c.isdigit() for c in t) and is_number_cell(t) for t in toks) and
                all(re.match(r"^[A-Za-z][\w/%.-]*$", t) for t in toks)):
            header = toks
            section["tables"].append({"columns": toks, "rows": []})
            continue
        header = None
        m = MEDIAN.match(line)
        if m:
            section["figures"].append(figure(m.group("name") + " median", m.group("m"), m.group("mu")))
            section["figures"].append(figure(m.group("name") + " p99", m.group("p"), m.group("pu")))
            continue
        for m in PAIR.finditer(line):
            section["figures"].append(figure(m.group(1), m.group(2), m.group(3)))
    for s in report["sections"]:
        s["tables"] = [t for t in s["tables"] if t["rows"]]
    return report


def main():
    log, out = sys.argv[1], sys.argv[2]
    with open(log, encoding="utf-8", errors="replace") as f:
        report = parse(f)
    with open(out, "w", encoding="utf-8") as f:
        json.dump(report, f, indent=1)
    print("wrote", out, "(%d sections, %d figures)" %
          (len(report["sections"]), sum(len(s["figures"]) for s in report["sections"])))


if __name__ == "__main__":
    main()
