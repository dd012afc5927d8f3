# Sourced by the live-context contract tests after lib.sh.
# check PY-EXPR DESCRIPTION: evaluate PY-EXPR over the recorded requests in $R (`rows`), with
# the helpers of requests_view.py; on failure print each request's max_tokens and messages.
CLMPY="$ROOT/tests/contract/clm"
check() {
    PYTHONPATH="$CLMPY" "${PY:-python3}" - "$R" "$1" <<'PY' || fail "$2"
import json, re, sys
from requests_view import *
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
if not eval(sys.argv[2]):
    for i, r in enumerate(rows):
        print("request", i + 1, r.get("max_tokens"),
              json.dumps([(m["role"], text(m)[:160]) for m in body(r)]))
    sys.exit(1)
PY
    ok
}
