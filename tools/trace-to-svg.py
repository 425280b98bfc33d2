#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Render a cubert timeline trace (Chrome / Perfetto trace-event JSON, written by
cubert_trace_stop or CUBERT_TRACE: include/cubert/trace.h) as an SVG timeline.

    python3 tools/trace-to-svg.py trace.json trace.svg [--width 1400] [--from-us T] [--to-us T]

One row per track (host threads, streams, kernel workers) of each process, spans
as boxes coloured by category (launch, kernel, copy, sync, wait, memory), instants
(events, cross-stream waits enqueued, allocations, GC) as ticks, flow arrows from
each launch or copy to its execution. Python 3 standard library only.
"""
import argparse
import html
import json
import sys

COLORS = {
    "launch": "#4e79a7",
    "kernel": "#f28e2b",
    "copy": "#59a14f",
    "sync": "#bab0ac",
    "event": "#b07aa1",
    "wait": "#e15759",
    "memory": "#76b7b2",
    "gc": "#9c755f",
    "collective": "#edc948",
}
ROW = 26
LABEL = 150
TOP = 44
LEGEND = 30


def load(path):
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    other = doc.get("otherData", {}) if isinstance(doc, dict) else {}
    return events, other


def build(events):
    """Tracks (ordered), spans, instants, flows from the raw events."""
    names, procs, sort = {}, {}, {}
    spans, instants, flows = [], [], {}
    stacks = {}
    for e in events:
        ph, key = e.get("ph"), (e.get("pid", 0), e.get("tid", 0))
        if ph == "M":
            if e.get("name") == "thread_name":
                names[key] = e["args"]["name"]
            elif e.get("name") == "process_name":
                procs[key[0]] = e["args"]["name"]
            elif e.get("name") == "thread_sort_index":
                sort[key] = e["args"]["sort_index"]
            continue
        ts = float(e.get("ts", 0.0))
        if ph == "B":
            stacks.setdefault(key, []).append((ts, e))
        elif ph == "E":
            if stacks.get(key):
                t0, b = stacks[key].pop()
                spans.append((key, t0, ts, b.get("cat", ""), b.get("name", ""), len(stacks[key])))
        elif ph == "X":
            spans.append((key, ts, ts + float(e.get("dur", 0)), e.get("cat", ""), e.get("name", ""), 0))
        elif ph in ("i", "I"):
            instants.append((key, ts, e.get("cat", ""), e.get("name", "")))
        elif ph in ("s", "f"):
            flows.setdefault(e.get("id"), {})[ph] = (key, ts)
    keys = set(k for k, *_ in spans) | set(k for k, *_ in instants)
    keys |= set(v[0] for f in flows.values() for v in f.values())
    tracks = sorted(keys, key=lambda k: (k[0], sort.get(k, k[1]), k[1]))
    labels = {}
    for k in tracks:
        labels[k] = names.get(k, "tid %s" % k[1])
    return tracks, labels, procs, spans, instants, flows


def render(events, other, width, t_from, t_to):
    tracks, labels, procs, spans, instants, flows = build(events)
    times = [t for _, t0, t1, *_ in spans for t in (t0, t1)] + [t for _, t, *_ in instants]
    if not times:
        times = [0.0, 1.0]
    lo = t_from if t_from is not None else min(times)
    hi = t_to if t_to is not None else max(times)
    if hi <= lo:
        hi = lo + 1.0
    plot = width - LABEL - 20
    row_of = {k: i for i, k in enumerate(tracks)}
    height = TOP + ROW * len(tracks) + LEGEND + 20

    def x(t):
        return LABEL + (min(max(t, lo), hi) - lo) / (hi - lo) * plot

    def y(k):
        return TOP + row_of[k] * ROW

    out = [
        '<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
        'font-family="sans-serif" font-size="11">' % (width, height),
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="6" '
        'markerHeight="6" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" '
        'fill="#333"/></marker></defs>',
        '<rect width="100%" height="100%" fill="white"/>',
    ]
    title = "cubert timeline trace: %d tracks, %d spans, %.3f ms" % (
        len(tracks), len(spans), (hi - lo) / 1000.0)
    if other.get("dropped_events"):
        title += ", %d events dropped" % other["dropped_events"]
    out.append('<text x="10" y="16" font-size="13" font-weight="bold">%s</text>' % html.escape(title))
    # time axis
    step = 10 ** max(0, len(str(int((hi - lo) / 5))) - 1)
    while (hi - lo) / step > 10:
        step *= 2
    t = 0.0
    while t <= hi - lo + 1e-9:
        xx = x(lo + t)
        out.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#eee"/>'
                   % (xx, TOP - 4, xx, TOP + ROW * len(tracks)))
        label = "%g ms" % (t / 1000.0) if step >= 100 else "%g us" % t
        out.append('<text x="%.1f" y="%d" fill="#666" text-anchor="middle">%s</text>' % (xx, TOP - 8, label))
        t += step
    # rows
    last_pid = None
    for k in tracks:
        yy = y(k)
        if k[0] != last_pid:
            out.append('<line x1="0" y1="%d" x2="%d" y2="%d" stroke="#999"/>' % (yy, width, yy))
            out.append('<text x="4" y="%d" fill="#999" font-size="9">%s</text>'
                       % (yy + 9, html.escape(procs.get(k[0], "pid %s" % k[0]))))
            last_pid = k[0]
        out.append('<rect x="%d" y="%d" width="%d" height="%d" fill="%s"/>'
                   % (LABEL, yy, plot, ROW, "#fafafa" if row_of[k] % 2 else "#f3f3f3"))
        out.append('<text x="%d" y="%d" text-anchor="end">%s</text>' % (LABEL - 6, yy + 17, html.escape(labels[k])))
    # spans
    for k, t0, t1, cat, name, depth in spans:
        if t1 < lo or t0 > hi:
            continue
        x0, x1 = x(t0), x(t1)
        w = max(x1 - x0, 1.0)
        yy = y(k) + 3 + depth * 3
        h = ROW - 6 - depth * 3
        out.append('<rect x="%.2f" y="%d" width="%.2f" height="%d" fill="%s" stroke="#333" '
                   'stroke-width="0.3"><title>%s %s: %.3f us</title></rect>'
                   % (x0, yy, w, h, COLORS.get(cat, "#aaa"), html.escape(cat), html.escape(name), t1 - t0))
        if w > 7 * len(name) * 0.6 + 6:
            out.append('<text x="%.2f" y="%d" fill="white">%s</text>' % (x0 + 3, yy + h - 6, html.escape(name)))
    # instants
    for k, t, cat, name in instants:
        if t < lo or t > hi:
            continue
        xx, yy = x(t), y(k)
        out.append('<path d="M %.2f %d l 4 6 l -4 6 l -4 -6 z" fill="%s" stroke="#333" stroke-width="0.3">'
                   '<title>%s %s</title></path>' % (xx, yy + 7, COLORS.get(cat, "#aaa"), html.escape(cat), html.escape(name)))
    # flows
    for f in flows.values():
        if "s" not in f or "f" not in f:
            continue
        (ks, ts), (kf, tf) = f["s"], f["f"]
        if max(ts, tf) < lo or min(ts, tf) > hi:
            continue
        out.append('<line x1="%.2f" y1="%d" x2="%.2f" y2="%d" stroke="#333" stroke-width="0.7" '
                   'stroke-opacity="0.6" marker-end="url(#arrow)"/>'
                   % (x(ts), y(ks) + ROW // 2, x(tf), y(kf) + ROW // 2))
    # legend
    lx, ly = LABEL, TOP + ROW * len(tracks) + 18
    for cat, color in COLORS.items():
        out.append('<rect x="%d" y="%d" width="12" height="12" fill="%s"/>' % (lx, ly, color))
        out.append('<text x="%d" y="%d">%s</text>' % (lx + 16, ly + 10, cat))
        lx += 28 + 7 * len(cat)
    out.append('<text x="%d" y="%d">&#8594; flow: enqueue to execution</text>' % (lx, ly + 10))
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("trace")
    ap.add_argument("svg")
    ap.add_argument("--width", type=int, default=1400)
    ap.add_argument("--from-us", type=float, default=None, help="start of the window (trace us)")
    ap.add_argument("--to-us", type=float, default=None, help="end of the window (trace us)")
    a = ap.parse_args()
    try:
        events, other = load(a.trace)
    except (OSError, ValueError, KeyError) as e:
        print("trace-to-svg: %s: %s" % (a.trace, e), file=sys.stderr)
        return 1
    svg = render(events, other, a.width, a.from_us, a.to_us)
    with open(a.svg, "w", encoding="utf-8") as f:
        f.write(svg)
    return 0


if __name__ == "__main__":
    sys.exit(main())
