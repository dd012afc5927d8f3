#!/usr/bin/env python3
"""A loopback OpenAI-compatible embeddings server for tests (stdlib only).

    fake_embed.py --port 0 --record FILE [--dim N] [--status CODE [--message TEXT]] [--bad MODE]

Listens on 127.0.0.1 and prints the chosen port as the first stdout line. Serves
POST /v1/embeddings and /embeddings: {"model", "input": str | [str]} is answered
{"object": "list", "model", "data": [{"object": "embedding", "index", "embedding"}],
"usage"}. Each request body is appended to --record as one JSON line when it arrives.
--status answers every request with that HTTP status and an OpenAI-shaped error instead
(its message TEXT, "scripted failure" by default). --bad answers with a broken vector list:
"huge" (a number no float holds: 1e400 in the first vector), "nan" (NaN, as Python writes
it), "dup" (the first index given twice, the last input none), "negindex" (index -1 for
the first input).

The vectors are deterministic and carry meaning a test can plan for: a small fixed
vocabulary of concepts, each owning one dimension, with synonyms sharing it (so "ship to
prod every friday" lands near "deployment schedule" although they share no word), and
every other word hashed (crc32) into the remaining dimensions with a small weight. The
model name picks a sign pattern over the dimensions, so two models' vectors of the same
text differ (a switch of model is visible in the numbers too).
"""
import argparse
import json
import re
import sys
import threading
import zlib
from http.server import ThreadingHTTPServer

sys.dont_write_bytecode = True  # importing the sibling fake leaves no __pycache__ in the tree
from fake_openai import JsonHandler  # noqa: E402

CONCEPTS = [
    ("deploy", "deploy deploys deployed deployment deployments ship ships shipped shipping release releases "
               "released rollout prod production push pushed"),
    ("schedule", "schedule schedules scheduled cadence weekly every friday fridays monday timetable calendar"),
    ("database", "database databases db postgres postgresql sqlite storage datastore table tables"),
    ("failure", "error errors failure failures fail failed crash crashed bug bugs broken exception"),
    ("test", "test tests testing tested check checks verify verified suite"),
    ("cache", "cache caches caching cached memoize memoized"),
    ("auth", "auth login logins password passwords credential credentials token tokens"),
    ("money", "cost costs price prices budget invoice billing money"),
]
WORD = re.compile(r"[a-z0-9]+")
LOCK = threading.Lock()
OPTS = argparse.Namespace(record=None, dim=64, status=0, message="scripted failure", bad="")


def concept_of():
    table = {}
    for i, (_, words) in enumerate(CONCEPTS):
        for w in words.split():
            table[w] = i
    return table


TABLE = concept_of()


def embed(text, model, dim):
    v = [0.0] * dim
    for w in WORD.findall(text.lower()):
        if w in TABLE:
            v[TABLE[w]] += 1.0
        else:
            free = dim - len(CONCEPTS)
            v[len(CONCEPTS) + zlib.crc32(w.encode()) % free] += 0.15
    flip = zlib.crc32(model.encode())
    return [(-x if (flip >> (i % 32)) & 1 else x) for i, x in enumerate(v)]


class Handler(JsonHandler):
    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n).decode("utf-8", "replace")
        try:
            req = json.loads(raw)
        except ValueError:
            req = {"_unparsed": raw}
        req["_path"] = self.path
        req["_auth"] = self.headers.get("Authorization")
        with LOCK:
            with open(OPTS.record, "a", encoding="utf-8") as f:
                f.write(json.dumps(req) + "\n")
        if not self.path.rstrip("/").endswith("/embeddings"):
            return self.send_json(404, {"error": {"message": "no such route " + self.path}})
        if OPTS.status:
            return self.send_json(OPTS.status, {"error": {"message": OPTS.message, "type": "server_error"}})
        inputs = req.get("input")
        if isinstance(inputs, str):
            inputs = [inputs]
        if not isinstance(inputs, list) or not inputs:
            return self.send_json(400, {"error": {"message": "input must be a string or a list of strings"}})
        model = str(req.get("model") or "")
        dim = int(req.get("dimensions") or OPTS.dim)
        data = [{"object": "embedding", "index": i, "embedding": embed(str(t), model, dim)}
                for i, t in enumerate(inputs)]
        if OPTS.bad == "huge":
            body = {"object": "list", "model": model, "data": data}
            text = json.dumps(body)
            first = json.dumps(data[0]["embedding"][0])
            text = text.replace('"embedding": [' + first, '"embedding": [1e400', 1)
            return self.send_body(200, text.encode("utf-8"))
        if OPTS.bad == "nan":
            data[0]["embedding"][1] = float("nan")
        if OPTS.bad == "dup" and len(data) > 1:
            data[-1]["index"] = data[0]["index"]
        if OPTS.bad == "negindex":
            data[0]["index"] = -1
        self.send_json(200, {"object": "list", "model": model, "data": data,
                             "usage": {"prompt_tokens": sum(len(str(t)) // 4 for t in inputs), "total_tokens": 0}})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--record", required=True)
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--status", type=int, default=0)
    ap.add_argument("--message", default="scripted failure")
    ap.add_argument("--bad", default="", choices=["", "huge", "nan", "dup", "negindex"])
    ap.parse_args(namespace=OPTS)
    srv = ThreadingHTTPServer(("127.0.0.1", OPTS.port), Handler)
    print(srv.server_address[1], flush=True)
    sys.stdout.close()
    srv.serve_forever()


if __name__ == "__main__":
    main()
