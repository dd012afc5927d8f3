"""SVG pictures for the evaluation and the benchmarks, written by hand (no plotting
library): a line chart with labelled axes, horizontal reference lines and markers.

context_chart: context sent per request against the window, with the swap and re-cut
lines, the requests whose projection swapped / re-cut / dropped its cut, and the DAG
compaction passes placed between the requests they ran after.
cost_chart: per-request cost against history size (bench_replay.sh output).
"""
import bisect
from xml.sax.saxutils import escape

W, H = 960, 420
L, R, T, B = 78, 150, 40, 52  # margins: left axis labels, right legend, title, bottom axis


def _nice(v):
    """A round axis maximum at or above v."""
    if v <= 0:
        return 1
    m = 1
    while m * 10 <= v:
        m *= 10
    for k in (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10):
        if k * m >= v:
            return k * m
    return 10 * m


def _fmt(v):
    if v >= 1e6:
        return "%gM" % round(v / 1e6, 2)
    if v >= 1e3:
        return "%gk" % round(v / 1e3, 1)
    return "%g" % v


class _Plot:
    def __init__(self, title, xmax, ymax, xlabel, ylabel, xmin=0.0):
        self.xmin, self.xmax, self.ymax = xmin, max(xmax, xmin + 1), ymax
        self.parts = [
            '<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" '
            'font-family="sans-serif" font-size="12">' % (W, H, W, H),
            '<rect width="100%" height="100%" fill="white"/>',
            '<text x="%d" y="22" font-size="15" font-weight="bold">%s</text>' % (L, escape(title)),
        ]
        pw, ph = W - L - R, H - T - B
        self.pw, self.ph = pw, ph
        for i in range(6):
            y = T + ph - ph * i / 5
            v = ymax * i / 5
            self.parts.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#eee"/>' % (L, y, L + pw, y))
            self.parts.append('<text x="%d" y="%.1f" text-anchor="end">%s</text>' % (L - 6, y + 4, _fmt(v)))
        for i in range(6):
            xv = self.xmin + (self.xmax - self.xmin) * i / 5
            x = self.x(xv)
            self.parts.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#999"/>' % (x, T + ph, x, T + ph + 4))
            self.parts.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>' % (x, T + ph + 18, _fmt(xv)))
        self.parts.append('<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#999"/>' % (L, T, pw, ph))
        self.parts.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>' % (L + pw / 2, H - 10, escape(xlabel)))
        self.parts.append('<text transform="translate(16,%.1f) rotate(-90)" text-anchor="middle">%s</text>'
                          % (T + ph / 2, escape(ylabel)))
        self.legend_y = T + 6

    def x(self, v):
        return L + self.pw * (v - self.xmin) / (self.xmax - self.xmin)

    def y(self, v):
        return T + self.ph - self.ph * min(v, self.ymax) / self.ymax

    def hline(self, v, color, label, dash="6,4"):
        y = self.y(v)
        self.parts.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="%s" stroke-dasharray="%s"/>'
                          % (L, y, L + self.pw, y, color, dash))
        self.parts.append('<text x="%d" y="%.1f" fill="%s">%s %s</text>' % (L + self.pw + 6, y + 4, color, escape(label), _fmt(v)))

    def vline(self, xv, color, width=1.0, opacity=0.55):
        x = self.x(xv)
        self.parts.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s" stroke-width="%.1f" opacity="%.2f"/>'
                          % (x, T, x, T + self.ph, color, width, opacity))

    def line(self, pts, color, width=1.5):
        if not pts:
            return
        d = " ".join("%.1f,%.1f" % (self.x(a), self.y(b)) for a, b in pts)
        self.parts.append('<polyline points="%s" fill="none" stroke="%s" stroke-width="%.1f"/>' % (d, color, width))

    def dots(self, pts, color, r=3):
        for a, b in pts:
            self.parts.append('<circle cx="%.1f" cy="%.1f" r="%d" fill="%s"/>' % (self.x(a), self.y(b), r, color))

    def ticks(self, xs, color, y0, y1):
        for xv in xs:
            x = self.x(xv)
            self.parts.append('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>' % (x, y0, x, y1, color))

    def legend(self, color, label, dash=None):
        y = self.legend_y + 150
        style = ' stroke-dasharray="%s"' % dash if dash else ""
        self.parts.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"%s/>'
                          % (L + self.pw + 6, y, L + self.pw + 24, y, color, style))
        self.parts.append('<text x="%d" y="%d">%s</text>' % (L + self.pw + 28, y + 4, escape(label)))
        self.legend_y += 16

    def save(self, path):
        self.parts.append("</svg>\n")
        with open(path, "w", encoding="utf-8") as fh:
            fh.write("\n".join(self.parts))


def context_chart(path, reqs, passes, title):
    """reqs: LCM_REQUEST_LOG rows; passes: compaction-pass metric rows (with ts)."""
    if not reqs:
        reqs = [{"request": 0, "tokens": 0, "window": 1, "swap": 0, "recut": 0, "action": "keep", "ts": 0}]
    window = reqs[-1].get("window", 1)
    n = len(reqs)
    p = _Plot(title, _nice(n), _nice(window * 1.08), "request", "tokens sent")
    # Re-cuts, swaps and drops as thin vertical lines behind the curve.
    for i, q in enumerate(reqs):
        a = q.get("action")
        if a == "recut":
            p.vline(i + 1, "#e69f00", 1.0, 0.45)
        elif a == "swap":
            p.vline(i + 1, "#009e73", 1.0, 0.45)
        elif a == "drop":
            p.vline(i + 1, "#d55e00", 1.5, 0.8)
    p.hline(window, "#000000", "window", "")
    if reqs[-1].get("recut"):
        p.hline(reqs[-1]["recut"], "#e69f00", "re-cut")
    if reqs[-1].get("swap"):
        p.hline(reqs[-1]["swap"], "#009e73", "swap")
    p.line([(i + 1, q.get("tokens", 0)) for i, q in enumerate(reqs)], "#0072b2")
    # A compaction pass runs between turns: place it after the last request logged before it.
    ts = [q.get("ts", 0) for q in reqs]
    marks = []
    for m in passes:
        k = bisect.bisect_right(ts, m.get("ts", 0))
        marks.append(k + 0.5)
    p.ticks(marks, "#cc79a7", T + p.ph - 10, T + p.ph)
    p.legend("#0072b2", "tokens sent")
    p.legend("#009e73", "swap (request)")
    p.legend("#e69f00", "re-cut (request)")
    p.legend("#d55e00", "drop (request)")
    p.legend("#cc79a7", "DAG pass (tick)")
    p.parts.append('<text x="%d" y="%d" fill="#555">%d requests, %d DAG passes, peak %s</text>'
                   % (L + 8, T + 16, n, len(passes), _fmt(max(q.get("tokens", 0) for q in reqs))))
    p.save(path)


def cost_chart(path, rows, title):
    """rows: (messages, us_per_request) pairs from bench_replay.sh."""
    rows = sorted(rows)
    if not rows:
        rows = [(0, 0)]
    xmax = _nice(rows[-1][0])
    ymax = _nice(max(r[1] for r in rows) * 1.6 or 1)
    p = _Plot(title, xmax, ymax, "history size (messages)", "cost per request (us)")
    p.hline(rows[0][1] * 3, "#d55e00", "3x smallest")
    p.line(rows, "#0072b2", 2)
    p.dots(rows, "#0072b2")
    for a, b in rows:
        p.parts.append('<text x="%.1f" y="%.1f" text-anchor="middle" fill="#0072b2">%dus</text>' % (p.x(a), p.y(b) - 8, b))
    p.legend("#0072b2", "us per request")
    p.save(path)


if __name__ == "__main__":
    import sys
    # bench: python3 svg.py bench OUT.svg < bench_replay.sh output
    if len(sys.argv) == 3 and sys.argv[1] == "bench":
        pts = []
        for line in sys.stdin:
            f = line.split()
            if len(f) >= 4 and f[0].isdigit() and f[3].isdigit():
                pts.append((int(f[0]), int(f[3])))
        cost_chart(sys.argv[2], pts, "replay: cost per request against history size")
        print("wrote %s (%d points)" % (sys.argv[2], len(pts)))
    else:
        sys.exit("usage: svg.py bench OUT.svg < bench_replay.sh output")
