#!/usr/bin/env python3
"""Turns the JSON output of bench_makespan into a grouped bar chart (SVG), using only the standard library.

    ./bench_makespan --benchmark_out=makespan.json --benchmark_out_format=json
    python3 benchmarks/plot_makespan.py makespan.json docs/makespan.svg

One group per turn, one bar per strategy (mean wall time in ms); the critical path (the lower bound) is
drawn as a bar and as a dashed line across its group. Also prints a Markdown table of the numbers and ratios.
"""
import json
import sys
from xml.sax.saxutils import escape

STRATEGIES = ["run_plan", "batched", "safe_first", "sequential", "critical_path"]
COLORS = {"run_plan": "#1b9e77", "batched": "#7570b3", "safe_first": "#e6ab02",
          "sequential": "#d95f02", "critical_path": "#666666"}
LABELS = {"run_plan": "run_plan (dataflow)", "batched": "consecutive safe calls batched (agent CLIs)",
          "safe_first": "parallel-safe first, then sequential (reference packages)",
          "sequential": "all sequential", "critical_path": "critical path (lower bound)"}


def load(path):
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    turns, values = [], {}
    for b in data["benchmarks"]:
        parts = b["name"].split("/")
        if len(parts) < 3 or parts[0] != "makespan":
            continue
        turn, strategy = parts[1], parts[2]
        if turn not in turns:
            turns.append(turn)
        ms = b["critical_ms"] if strategy == "critical_path" else b["mean_ms"]
        values[(turn, strategy)] = float(ms)
    return turns, values


def svg(turns, values):
    width, height = 980, 460
    left, right, top, bottom = 60, 20, 40, 150
    plot_w, plot_h = width - left - right, height - top - bottom
    vmax = max(values.values()) * 1.1
    group_w = plot_w / max(1, len(turns))
    bar_w = group_w * 0.8 / len(STRATEGIES)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="11">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{width / 2}" y="20" text-anchor="middle" font-size="14">'
           'Makespan of simulated agent turns (ms, lower is better)</text>']
    y = lambda v: top + plot_h - v / vmax * plot_h
    step = 10 if vmax > 40 else 5
    tick = 0
    while tick <= vmax:
        out.append(f'<line x1="{left}" x2="{width - right}" y1="{y(tick):.1f}" y2="{y(tick):.1f}" stroke="#eee"/>')
        out.append(f'<text x="{left - 6}" y="{y(tick) + 4:.1f}" text-anchor="end">{tick}</text>')
        tick += step
    out.append(f'<line x1="{left}" x2="{left}" y1="{top}" y2="{top + plot_h}" stroke="black"/>')
    out.append(f'<line x1="{left}" x2="{width - right}" y1="{top + plot_h}" y2="{top + plot_h}" stroke="black"/>')
    for g, turn in enumerate(turns):
        x0 = left + g * group_w + group_w * 0.1
        for k, s in enumerate(STRATEGIES):
            v = values.get((turn, s))
            if v is None:
                continue
            x = x0 + k * bar_w
            out.append(f'<rect x="{x:.1f}" y="{y(v):.1f}" width="{bar_w - 1:.1f}" height="{top + plot_h - y(v):.1f}" '
                       f'fill="{COLORS[s]}"><title>{escape(turn)} / {escape(s)}: {v:.2f} ms</title></rect>')
        cp = values.get((turn, "critical_path"))
        if cp is not None:
            out.append(f'<line x1="{x0:.1f}" x2="{x0 + bar_w * len(STRATEGIES):.1f}" y1="{y(cp):.1f}" y2="{y(cp):.1f}" '
                       'stroke="black" stroke-dasharray="3,2"/>')
        out.append(f'<text x="{left + g * group_w + group_w / 2:.1f}" y="{top + plot_h + 16}" '
                   f'text-anchor="middle">{escape(turn)}</text>')
    for k, s in enumerate(STRATEGIES):
        ly = top + plot_h + 36 + k * 16
        out.append(f'<rect x="{left}" y="{ly - 9}" width="12" height="12" fill="{COLORS[s]}"/>')
        out.append(f'<text x="{left + 18}" y="{ly + 1}">{escape(LABELS[s])}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def table(turns, values):
    rows = ["| turn | critical path | run_plan | batched | safe_first | sequential |",
            "|---|---:|---:|---:|---:|---:|"]
    for t in turns:
        cp = values[(t, "critical_path")]
        cells = [f"{cp:.1f} ms"]
        for s in ["run_plan", "batched", "safe_first", "sequential"]:
            v = values[(t, s)]
            cells.append(f"{v:.1f} ms ({v / cp:.3f}x)")
        rows.append(f"| {t} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: plot_makespan.py <bench_makespan.json> <out.svg>")
    turns, values = load(sys.argv[1])
    if not turns:
        sys.exit("no makespan/... benchmarks in " + sys.argv[1])
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        f.write(svg(turns, values))
    print(table(turns, values))


if __name__ == "__main__":
    main()
