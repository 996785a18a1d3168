#!/usr/bin/env python3
"""report_cdf.py — draws the publish -> received latency distribution of the fan-out bench.

Reads the JSON lines tests/bench/xds_fanout.sh writes (one object per run, each with the
101 percentiles of Sextant's publish -> all received and of the floor's push -> all
received) and writes, next to the JSON file, one SVG per run:
xds_fanout_<streams>x<endpoints>_cdf.svg. The x axis is seconds since the publish (or
the floor's push), the y axis the share of streams holding the new version; Sextant is
the solid line, the floor the dashed one, with p50 and p99 of each in the legend.

    python3 tests/bench/report_cdf.py tests/out/bench/xds_fanout.json
"""
import json
import os
import sys

W, H = 640, 440
LEFT, RIGHT, TOP, BOTTOM = 64, 24, 76, 56


def nice_ceiling(x):
    """The smallest of 1, 2, 2.5, 5 × 10^k at or above x (x > 0)."""
    if x <= 0:
        return 1.0
    k = 1.0
    while k * 10 < x:
        k *= 10
    while k > x:
        k /= 10
    for m in (1, 2, 2.5, 5, 10):
        if k * m >= x:
            return k * m
    return k * 10


def curve(points, xmax):
    """An SVG path of a step CDF through the 101 percentiles."""
    pw, ph = W - LEFT - RIGHT, H - TOP - BOTTOM
    out = []
    for q, t in enumerate(points):
        x = LEFT + pw * min(t, xmax) / xmax
        y = TOP + ph * (1 - q / 100.0)
        out.append(("M" if q == 0 else "L") + f"{x:.1f},{y:.1f}")
    return " ".join(out)


def draw(run):
    s = run.get("sextant", {}).get("publish_to_all_percentiles_s")
    f = run.get("floor", {}).get("push_to_all_percentiles_s")
    if not s:
        return None
    series = [("Sextant: publish \u2192 received", s, "#1f5fa8", "")]
    if f:
        series.append(("floor (bare gRPC server): push \u2192 received", f, "#c0392b", "6,4"))
    xmax = nice_ceiling(max(max(p) for _, p, _, _ in series))
    pw, ph = W - LEFT - RIGHT, H - TOP - BOTTOM
    title = f"{run['streams']:,} streams, {run['endpoints']:,} endpoints: share of streams holding the new version"
    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
           f'viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">',
           f'<rect width="{W}" height="{H}" fill="#fff"/>',
           f'<text x="{W / 2}" y="20" text-anchor="middle" font-size="13">{title}</text>']
    for i in range(6):
        v = xmax * i / 5
        x = LEFT + pw * i / 5
        svg.append(f'<line x1="{x:.1f}" y1="{TOP}" x2="{x:.1f}" y2="{TOP + ph}" stroke="#ddd"/>')
        svg.append(f'<text x="{x:.1f}" y="{TOP + ph + 16}" text-anchor="middle">{v:g} s</text>')
        y = TOP + ph * (1 - i / 5)
        svg.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{LEFT + pw}" y2="{y:.1f}" stroke="#ddd"/>')
        svg.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{i * 20} %</text>')
    svg.append(f'<text x="{LEFT + pw / 2}" y="{H - 14}" text-anchor="middle">seconds after the publish</text>')
    for n, (label, pts, colour, dash) in enumerate(series):
        d = f' stroke-dasharray="{dash}"' if dash else ""
        svg.append(f'<path d="{curve(pts, xmax)}" fill="none" stroke="{colour}" stroke-width="2"{d}/>')
        ly = 38 + n * 18
        svg.append(f'<line x1="{LEFT}" y1="{ly}" x2="{LEFT + 24}" y2="{ly}" '
                   f'stroke="{colour}" stroke-width="2"{d}/>')
        svg.append(f'<text x="{LEFT + 30}" y="{ly + 4}">{label} '
                   f'(p50 {pts[50]:.2f} s, p99 {pts[99]:.2f} s)</text>')
    svg.append("</svg>")
    return "\n".join(svg) + "\n"


def main():
    if len(sys.argv) != 2:
        print("usage: report_cdf.py FILE.json", file=sys.stderr)
        return 2
    path = sys.argv[1]
    wrote = 0
    with open(path) as fh:
        for line in fh:
            if not line.strip():
                continue
            run = json.loads(line)
            svg = draw(run)
            if svg is None:
                continue
            out = os.path.join(os.path.dirname(path) or ".",
                               f"xds_fanout_{run['streams']}x{run['endpoints']}_cdf.svg")
            with open(out, "w") as fh2:
                fh2.write(svg)
            print(f"latency distribution: {out}")
            wrote += 1
    return 0 if wrote else 1


if __name__ == "__main__":
    sys.exit(main())
