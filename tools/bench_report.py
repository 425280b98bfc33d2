#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tools/bench_report.py: the combined table and the plot of a `make bench` run.

Reads the CSV the bench/ programs append to (bench/bench_util.h: CUBERT_BENCH_CSV), prints
one table (program, figure, cubert median [min..max], peer median [min..max], x better, goal,
met?) and the goals met / missed, and writes an SVG plot (standard library only, SVG by hand):
  - "x better" of every comparison with a peer measured in the same run (log scale, the goal
    marked; green: goal met, red: missed, grey: no goal);
  - one panel per scaling curve (the rows with a series): ns per operation against x, cubert
    and each peer of the curve (log scales).

  python3 tools/bench_report.py build/bench/results.csv [--svg build/bench/bench.svg] [--title T]
Other CSV files with the same columns (GPU rows, a run on another machine) can be given after
the first; their rows are appended in order. FILE=TAG marks a file's rows as another machine's
(program "bench_x@TAG", curves "series (TAG)"), so its curves are drawn apart:
  python3 tools/bench_report.py build/bench/results.csv dev16.csv=16-core --svg docs/bench.svg
"""
import csv
import html
import math
import sys

COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"]


def fnum(v):
    if v == "" or v is None:
        return None
    try:
        return float(v)
    except ValueError:
        return None


def fmt_value(v):
    if v is None:
        return "-"
    if abs(v) >= 100:
        return "%.0f" % v
    if abs(v) >= 10:
        return "%.1f" % v
    return "%.2f" % v


def fmt_stat(med, lo, hi, unit):
    if med is None:
        return "-"
    if lo is None or hi is None or lo == hi:
        return "%s %s" % (fmt_value(med), unit)
    return "%s [%s..%s] %s" % (fmt_value(med), fmt_value(lo), fmt_value(hi), unit)


def load(paths):
    """The rows of every file; r["label"]: "figure vs peer", where a figure "same, vs ..."
    takes the text of the figure above it."""
    rows = []
    for spec in paths:
        path, _, tag = spec.partition("=")
        main = {}
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                if tag:  # rows of another machine: their own curves and labels
                    r["program"] = "%s@%s" % (r["program"], tag)
                    if r["series"]:
                        r["series"] = "%s (%s)" % (r["series"], tag)
                for k in ("cubert_median", "cubert_min", "cubert_max", "peer_median", "peer_min",
                          "peer_max", "ratio", "goal", "x"):
                    r[k] = fnum(r.get(k))
                fig = r["figure"].strip()
                if fig.startswith("same"):
                    fig = main.get(r["program"], fig)
                else:
                    main[r["program"]] = fig
                r["label"] = "%s vs %s" % (fig, r["peer"]) if r["peer"] else fig
                rows.append(r)
    return rows


def print_table(rows):
    head = ["program", "figure", "cubert median [min..max]", "peer median [min..max]",
            "x better", "goal", "met?"]
    lines = []
    for r in rows:
        unit = r["unit"]
        ours = fmt_stat(r["cubert_median"], r["cubert_min"], r["cubert_max"], unit)
        if not r["peer"]:
            peer = "-"
        elif r["skipped"]:
            peer = "%s: skipped: %s" % (r["peer"], r["skipped"])
        else:
            peer = "%s %s" % (r["peer"], fmt_stat(r["peer_median"], r["peer_min"], r["peer_max"], unit))
        ratio = "%.2fx" % r["ratio"] if r["ratio"] else "-"
        goal = ">= %.2gx" % r["goal"] if r["goal"] else "-"
        lines.append([r["program"], r["figure"].strip(), ours, peer, ratio, goal, r["met"] or "-"])
    widths = [max(len(head[i]), *(len(l[i]) for l in lines)) if lines else len(head[i])
              for i in range(len(head))]
    widths[3] = min(widths[3], 60)

    def out(cells):
        print("| " + " | ".join(c.ljust(widths[i]) if i != 4 else c.rjust(widths[i])
                                for i, c in enumerate(cells)) + " |")

    out(head)
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for l in lines:
        out(l)
    met = [r for r in rows if r["met"] == "met"]
    missed = [r for r in rows if r["met"] == "MISSED"]
    skipped = [r for r in rows if r["met"] == "skipped"]
    print("\ngoals: %d met, %d MISSED, %d skipped (peer not measured)" %
          (len(met), len(missed), len(skipped)))
    for r in missed:
        print("  MISSED: %s: %s: %.2fx, goal >= %.2gx" %
              (r["program"], r["label"], r["ratio"] or 0, r["goal"]))
    for r in skipped:
        print("  skipped: %s: %s: %s" % (r["program"], r["label"], r["skipped"]))


# ---- SVG ---------------------------------------------------------------------------------

def esc(s):
    return html.escape(s, quote=True)


class Svg:
    def __init__(self):
        self.parts = []

    def add(self, s):
        self.parts.append(s)

    def text(self, x, y, s, size=11, anchor="start", color="#222", weight="normal"):
        self.add('<text x="%.1f" y="%.1f" font-size="%d" text-anchor="%s" fill="%s" '
                 'font-weight="%s">%s</text>' % (x, y, size, anchor, color, weight, esc(s)))

    def line(self, x1, y1, x2, y2, color="#999", width=1, dash=None):
        d = ' stroke-dasharray="%s"' % dash if dash else ""
        self.add('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="%s"%s/>'
                 % (x1, y1, x2, y2, color, width, d))

    def rect(self, x, y, w, h, color):
        self.add('<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>' %
                 (x, y, max(w, 0.5), h, color))


def comparison_rows(rows):
    """(label, row) of the rows against a peer measured in the same run: no constants (goals,
    reference figures), no curve baselines, curve points only where they carry a goal."""
    out = []
    for r in rows:
        if not r["peer"] or r["skipped"] or not r["ratio"]:
            continue
        if r["series"] and not r["goal"]:
            continue
        if r["peer_min"] is not None and r["peer_min"] == r["peer_max"]:
            continue  # a goal or a reference figure, not a measurement
        if r["peer"].startswith("baseline"):
            continue
        out.append(("%s: %s" % (r["program"].replace("bench_", ""), r["label"]), r))
    order = {"bench_peers": 0, "bench_memory": 1}  # the peers first, then the pool, the rest
    return sorted(out, key=lambda lr: order.get(lr[1]["program"].split("@")[0], 2))


def bars(svg, rows, top, width):
    label_w, right = 430, 70
    x0, x1 = label_w, width - right
    lo, hi = 0.01, 1000.0
    row_h = 18

    def X(v):
        v = min(max(v, lo), hi)
        return x0 + (math.log10(v) - math.log10(lo)) / (math.log10(hi) - math.log10(lo)) * (x1 - x0)

    svg.text(20, top + 16, "cubert vs the peers measured in the same run: x better "
             "(peer / cubert for times, cubert / peer for rates; log scale; | = goal)",
             size=13, weight="bold")
    y = top + 34
    for d in (0.01, 0.1, 1, 10, 100, 1000):
        svg.line(X(d), y - 4, X(d), y + row_h * len(rows), "#000" if d == 1 else "#ddd",
                 1.2 if d == 1 else 1)
        svg.text(X(d), y - 6, "%gx" % d, size=10, anchor="middle", color="#555")
    for i, (label, r) in enumerate(rows):
        yy = y + i * row_h
        color = "#2ca02c" if r["met"] == "met" else "#d62728" if r["met"] == "MISSED" else "#9a9a9a"
        svg.text(x0 - 8, yy + 12, label[:76], size=10, anchor="end")
        xa, xb = X(1), X(r["ratio"])
        svg.rect(min(xa, xb), yy + 3, abs(xb - xa), row_h - 6, color)
        if r["goal"]:
            svg.line(X(r["goal"]), yy + 1, X(r["goal"]), yy + row_h - 1, "#000", 2)
        svg.text(max(xa, xb) + 4, yy + 12, "%.2fx" % r["ratio"], size=10)
    return y + row_h * len(rows) + 16


def curve_panel(svg, series, rows, left, top, w, h):
    svg.add('<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#ccc"/>' %
            (left, top, w, h))
    svg.text(left + 8, top + 16, series.replace("scaling: ", ""), size=12, weight="bold")
    lines = {}  # name -> {x: y}
    unit = rows[0]["unit"]
    for r in rows:
        x = r["x"]
        if x is None:
            continue
        lines.setdefault("cubert", {})[x] = r["cubert_median"]
        p = r["peer"]
        if p and not r["skipped"] and r["peer_median"] and not p.startswith("baseline"):
            lines.setdefault(p, {})[x] = r["peer_median"]
    xs = sorted({x for pts in lines.values() for x in pts})
    ys = [y for pts in lines.values() for y in pts.values() if y and y > 0]
    if not xs or not ys:
        return
    px0, px1, py0, py1 = left + 58, left + w - 14, top + h - 34, top + 52
    xlo, xhi = math.log10(xs[0]), math.log10(xs[-1]) if xs[-1] > xs[0] else math.log10(xs[0]) + 1
    ylo = math.floor(math.log10(min(ys)))
    yhi = math.ceil(math.log10(max(ys)))
    if yhi == ylo:
        yhi += 1

    def X(v):
        return px0 + (math.log10(v) - xlo) / (xhi - xlo) * (px1 - px0) if xhi > xlo else px0

    def Y(v):
        return py0 - (math.log10(v) - ylo) / (yhi - ylo) * (py0 - py1)

    for e in range(ylo, yhi + 1):
        svg.line(px0, Y(10 ** e), px1, Y(10 ** e), "#eee")
        svg.text(px0 - 4, Y(10 ** e) + 4, "%g %s" % (10 ** e, unit), size=9, anchor="end",
                 color="#555")
    for x in xs:
        svg.line(X(x), py0, X(x), py0 + 4, "#555")
        svg.text(X(x), py0 + 15, "%g" % x if x < 1e4 else "%gk" % (x / 1e3) if x < 1e6
                 else "%gM" % (x / 1e6), size=9, anchor="middle", color="#555")
    svg.line(px0, py0, px1, py0, "#555")
    svg.line(px0, py0, px0, py1, "#555")
    for i, (name, pts) in enumerate(sorted(lines.items(), key=lambda kv: kv[0] != "cubert")):
        color = COLORS[i % len(COLORS)]
        ordered = [(x, pts[x]) for x in sorted(pts) if pts[x] and pts[x] > 0]
        if len(ordered) > 1:
            svg.add('<polyline fill="none" stroke="%s" stroke-width="%s" points="%s"/>' % (
                color, 2.5 if name == "cubert" else 1.5,
                " ".join("%.1f,%.1f" % (X(x), Y(y)) for x, y in ordered)))
        for x, y in ordered:
            svg.add('<circle cx="%.1f" cy="%.1f" r="2.5" fill="%s"/>' % (X(x), Y(y), color))
        lx = left + 10 + (i % 5) * ((w - 20) // 5)
        ly = top + 24 + (i // 5) * 12
        svg.rect(lx, ly, 10, 8, color)
        svg.text(lx + 14, ly + 8, name[:20], size=9)


def write_svg(rows, path, title=None):
    width = 980
    svg = Svg()
    top = 10
    if title:
        svg.text(20, 22, title, size=12, color="#444")
        top = 26
    comps = comparison_rows(rows)
    y = bars(svg, comps, top, width) if comps else top
    series = []
    for r in rows:
        if r["series"] and r["series"] not in series:
            series.append(r["series"])
    pw, ph, gap = (width - 30) // 2, 250, 10
    for i, s in enumerate(series):
        left = 10 + (i % 2) * (pw + gap)
        top = y + (i // 2) * (ph + gap)
        curve_panel(svg, s, [r for r in rows if r["series"] == s], left, top, pw, ph)
    height = y + ((len(series) + 1) // 2) * (ph + gap) + 10
    with open(path, "w") as f:
        f.write('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
                'viewBox="0 0 %d %d" font-family="DejaVu Sans, Helvetica, Arial, sans-serif">\n'
                % (width, height, width, height))
        f.write('<rect width="100%" height="100%" fill="white"/>\n')
        f.write("\n".join(svg.parts))
        f.write("\n</svg>\n")


def main(argv):
    paths, svg_path, title = [], None, None
    i = 1
    while i < len(argv):
        if argv[i] == "--svg" and i + 1 < len(argv):
            svg_path = argv[i + 1]
            i += 2
        elif argv[i] == "--title" and i + 1 < len(argv):
            title = argv[i + 1]
            i += 2
        else:
            paths.append(argv[i])
            i += 1
    if not paths:
        print(__doc__)
        return 2
    rows = load(paths)
    if not rows:
        print("bench_report: no rows in %s" % ", ".join(paths))
        return 1
    print("\n== combined table (%s)" % ", ".join(paths))
    print_table(rows)
    if svg_path:
        write_svg(rows, svg_path, title)
        print("plot: %s" % svg_path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
