#!/usr/bin/env python3
"""The coordinator's overhead, side by side in one run (docs/benchmarks.md, "A coordinated turn's cost").

Run by scripts/bench-coordination, which builds the programs. For every build given (LABEL=DIR, DIR holding
bench_coordination_count and, for --sessions, bench_coordination):

* instructions (valgrind's callgrind, every thread, user space) of a turn with and without a coordinator:
  the driver runs T1 and T2 turns, and a turn's cost is the difference / (T2 - T1), so start-up cancels out;
  median of --reps runs; the builds alternate within each repetition;
* with --micro: acquire + release (BM_try_acquire_release, .._among_holders/8 and /64, BM_async_acquire_release,
  BM_blocking_acquire_release), CPU time, median of --rounds rounds alternating the builds;
* with --sessions: BM_sessions8 (8 sessions on one 2-thread pool, disjoint targets, calls that wait 200 us on a
  timer, or no-op calls), with and without the shared coordinator, --rounds rounds alternating the builds and
  the two modes; turns per second, CPU and context switches per turn (the benchmark's counters); medians.

Prints markdown tables (and --json FILE: every run).
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys

CASES = [  # (case, calls per turn, T1, T2)
    ("runtime16", 16, 100, 300),
    ("runtime256", 256, 10, 30),
    ("static16", 16, 100, 300),
]
LABELS = {"runtime16": "runtime form, 16 calls", "runtime256": "runtime form, 256 calls",
          "static16": "static pack of 16 reads"}


def instructions(exe, case, turns):
    r = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", exe, case, str(turns)],
                       capture_output=True, text=True, check=True)
    m = re.search(r"Collected : (\d+)", r.stderr)
    if not m:
        sys.exit(f"no instruction count from callgrind for {exe} {case} {turns}:\n{r.stderr}")
    return int(m.group(1))


def per_turn(exe, case, t1, t2):
    return (instructions(exe, case, t2) - instructions(exe, case, t1)) / (t2 - t1)


def sessions(exe, coordinated, wait_us, min_time):
    filt = f"BM_sessions8/overlap:0/coord:{1 if coordinated else 0}/wait_us:{wait_us}/"
    r = subprocess.run([exe, f"--benchmark_filter={filt}", f"--benchmark_min_time={min_time}",
                        "--benchmark_format=json"], capture_output=True, text=True, check=True)
    b = json.loads(r.stdout)["benchmarks"][0]
    return {"turns_per_s": b["items_per_second"], "cpu_us_per_turn": b.get("cpu_us_per_turn", float("nan")),
            "switches_per_turn": b.get("switches_per_turn", float("nan")),
            "sleeps_per_turn": b.get("sleeps_per_turn", float("nan"))}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("builds", nargs="+", help="LABEL=DIR")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--sessions", action="store_true", help="also BM_sessions8, wall time")
    ap.add_argument("--micro", action="store_true", help="also acquire + release, CPU time")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--min-time", type=float, default=1.0)
    ap.add_argument("--no-callgrind", action="store_true")
    ap.add_argument("--json")
    a = ap.parse_args()
    builds = [b.split("=", 1) for b in a.builds]
    runs = {"callgrind": [], "sessions": [], "micro": []}

    if not a.no_callgrind:
        counts = {}  # (label, case, coordinated) -> [per turn]
        for rep in range(a.reps):
            for case, _, t1, t2 in CASES:
                for label, d in builds:
                    exe = os.path.join(d, "bench_coordination_count")
                    for coord in (False, True):
                        name = case + ("_coordinated" if coord else "")
                        v = per_turn(exe, name, t1, t2)
                        counts.setdefault((label, case, coord), []).append(v)
                        runs["callgrind"].append({"build": label, "case": name, "rep": rep, "per_turn": v})
                        print(f"  [{rep + 1}/{a.reps}] {label} {name}: {v:,.0f} instructions per turn",
                              file=sys.stderr)
        print("| callgrind, instructions per turn (median of %d): plain / coordinated | %s |"
              % (a.reps, " | ".join(l for l, _ in builds)))
        print("|---|" + "---|" * len(builds))
        extra = []
        for case, n, _, _ in CASES:
            cells, ex = [], []
            for label, _ in builds:
                p = statistics.median(counts[(label, case, False)])
                c = statistics.median(counts[(label, case, True)])
                cells.append(f"{p:,.0f} / {c:,.0f} (**{c / p:.3f}×**)")
                ex.append(f"{(c - p) / n:,.0f}")
            print(f"| {LABELS[case]} | " + " | ".join(cells) + " |")
            extra.append(ex)
        print("| extra instructions per call (16 / 256 / static) | "
              + " | ".join(" / ".join(e[i] for e in extra) for i in range(len(builds))) + " |")
        print()

    if a.micro:
        micro = {}
        for rnd in range(a.rounds):
            for label, d in builds:
                r = subprocess.run([os.path.join(d, "bench_coordination"),
                                    "--benchmark_filter=BM_try_acquire|BM_async_acquire|BM_blocking_acquire",
                                    "--benchmark_format=json"], capture_output=True, text=True, check=True)
                for b in json.loads(r.stdout)["benchmarks"]:
                    micro.setdefault((b["name"], label), []).append(b["cpu_time"])
                    runs["micro"].append({"build": label, "round": rnd, "name": b["name"], "cpu_ns": b["cpu_time"]})
            print(f"  [{rnd + 1}/{a.rounds}] micro-benchmarks", file=sys.stderr)
        print("| acquire + release, CPU ns (median of %d rounds) | %s |" % (a.rounds, " | ".join(l for l, _ in builds)))
        print("|---|" + "---|" * len(builds))
        for name in dict.fromkeys(n for n, _ in micro):
            print(f"| `{name}` | " + " | ".join(f"{statistics.median(micro[(name, l)]):.0f}" for l, _ in builds) + " |")
        print()

    if a.sessions:
        res = {}
        for rnd in range(a.rounds):
            for wait in (200, 0):
                for label, d in builds:
                    exe = os.path.join(d, "bench_coordination")
                    for coord in (False, True):
                        s = sessions(exe, coord, wait, a.min_time)
                        res.setdefault((label, wait, coord), []).append(s)
                        runs["sessions"].append({"build": label, "wait_us": wait, "coordinated": coord,
                                                 "round": rnd, **s})
                        print(f"  [{rnd + 1}/{a.rounds}] {label} wait {wait} us coord {int(coord)}: "
                              f"{s['turns_per_s'] / 1000:.1f}k turns/s, {s['cpu_us_per_turn']:.1f} us CPU, "
                              f"{s['switches_per_turn']:.2f} switches per turn", file=sys.stderr)
        print("| BM_sessions8, disjoint (median of %d rounds) | build | no coordinator | coordinator | ratio "
              "(per round) | CPU µs per turn | context switches per turn | of which sleeps |" % a.rounds)
        print("|---|---|---|---|---|---|---|---|")
        for wait in (200, 0):
            for label, _ in builds:
                p, c = res[(label, wait, False)], res[(label, wait, True)]
                med = lambda xs, k: statistics.median(x[k] for x in xs)  # noqa: E731
                ratios = [cc["turns_per_s"] / pp["turns_per_s"] for pp, cc in zip(p, c)]
                print(f"| {'wait 200 µs' if wait else 'no-op'} | {label} | {med(p, 'turns_per_s') / 1000:.1f}k | "
                      f"{med(c, 'turns_per_s') / 1000:.1f}k | **{statistics.median(ratios):.2f}×** "
                      f"({', '.join(f'{r:.2f}' for r in ratios)}) | {med(p, 'cpu_us_per_turn'):.1f} / "
                      f"{med(c, 'cpu_us_per_turn'):.1f} | {med(p, 'switches_per_turn'):.2f} / "
                      f"{med(c, 'switches_per_turn'):.2f} | {med(p, 'sleeps_per_turn'):.2f} / "
                      f"{med(c, 'sleeps_per_turn'):.2f} |")
        print()
    if a.json:
        with open(a.json, "w") as f:
            json.dump(runs, f, indent=1)


if __name__ == "__main__":
    main()
