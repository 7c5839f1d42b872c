#!/usr/bin/env python3
"""Compile-time benchmark runner: the library's conflict analysis vs the naive Hana-set baseline, one run.

For each compiler (g++, clang++) and each case, generates the TU with gen.py and compiles it
(`-std=c++20 -Wall -Wextra -Wpedantic -Werror -c -o /dev/null`, DEFAULT limits: no -fbracket-depth,
-fconstexpr-steps, -ftemplate-depth or -fconstexpr-ops-limit) under `/usr/bin/time -f '%e %M'`, several
repetitions, and reports the median wall time and the median peak resident memory.

Cases: `headers` (the includes only), `lib` at N = 10, 100, 300, 1000; `naive-headers`, `naive` at N = 10,
100 and 1000 — every naive run is capped (default 120 s); a capped run is reported as "did not finish within
<cap> s" and not repeated. Repetitions are interleaved (rep 1 of every case, then rep 2, ...) so that load
from other jobs on the shared machine spreads over all cases.

Writes <out>/compile_time.csv (every run) and <out>/compile_time.md (the median table), and prints the table.
Also records cpu time (user+sys), which the other jobs on a shared machine disturb less than wall time.
Usage: run.py [--reps 5] [--naive-reps 3] [--cap 120] [--out benchmarks/compile_time/results]
              [--compilers g++,clang++] [--lib-n 10,100,300,1000] [--naive-n 10,100,1000] [--compare LABEL=DIR]
"""
import argparse
import csv
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FLAGS = ["-std=c++20", "-Wall", "-Wextra", "-Wpedantic", "-Werror", "-c", "-o", "/dev/null"]


def compile_once(cxx, src, cap, include):
    """Returns (status, wall_s, peak_kib, cpu_s, message); status is ok, timeout or error."""
    cmd = ["/usr/bin/time", "-f", "%e %M %U %S", "timeout", "-s", "KILL", str(cap), cxx] + FLAGS + [
        "-I", include, "-I", HERE, src]
    p = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, LC_ALL="C"))
    lines = p.stderr.strip().splitlines()
    last = lines[-1].split() if lines else []
    if len(last) == 4:
        wall, peak, cpu = float(last[0]), int(last[1]), float(last[2]) + float(last[3])
    else:
        wall, peak, cpu = float("nan"), 0, float("nan")
    if p.returncode == 0:
        return "ok", wall, peak, cpu, ""
    if p.returncode in (124, 137) or "signal 9" in p.stderr or wall >= cap:
        return "timeout", wall, peak, cpu, f"did not finish within {cap} s"
    err = next((l for l in lines if "error" in l), lines[0] if lines else "?")
    return "error", wall, peak, cpu, err[:300]


def version(cxx):
    return subprocess.run([cxx, "--version"], capture_output=True, text=True).stdout.splitlines()[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--cap", type=int, default=120)
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    ap.add_argument("--compilers", default="g++,clang++")
    ap.add_argument("--lib-n", default="10,100,300,1000")
    ap.add_argument("--naive-n", default="10,100,1000")
    ap.add_argument("--seed", type=int, default=20240611)
    ap.add_argument("--naive-reps", type=int, default=3, help="repetitions of the naive cases (slow)")
    ap.add_argument("--compare", default="", metavar="LABEL=DIR",
                    help="also compile the lib cases against another include dir (e.g. an older version), "
                         "reported as variant lib-LABEL")
    args = ap.parse_args()
    includes = {"": os.path.join(ROOT, "include")}
    if args.compare:
        label, _, d = args.compare.partition("=")
        includes["-" + label] = os.path.abspath(d)
    compilers = args.compilers.split(",")
    lib_ns = [int(n) for n in args.lib_n.split(",") if n]
    cases = [("headers", 0)] + [("lib", n) for n in lib_ns]
    for suffix in includes:
        if suffix:
            cases += [("headers" + suffix, 0)] + [("lib" + suffix, n) for n in lib_ns]
    cases += [("naive-headers", 0)] + [("naive", int(n)) for n in args.naive_n.split(",") if n]

    work = tempfile.mkdtemp(prefix="te_compile_time_")
    srcs = {}
    def base(variant):
        return variant.split("-")[0] if variant.startswith(("lib-", "headers-")) else variant

    for variant, n in cases:
        src = os.path.join(work, f"{variant}_{n}.cpp")
        subprocess.run([sys.executable, os.path.join(HERE, "gen.py"), "--variant", base(variant), "-n", str(n),
                        "--seed", str(args.seed), "-o", src], check=True)
        srcs[(variant, n)] = src

    os.makedirs(args.out, exist_ok=True)
    runs = []  # (compiler, variant, n, rep, status, wall, peak_kib, message, cpu)
    stopped = set()  # (compiler, variant, n) that timed out or failed: not repeated
    load_before = os.getloadavg()
    started = time.time()
    for rep in range(1, args.reps + 1):
        for cxx in compilers:
            for variant, n in cases:
                key = (cxx, variant, n)
                if key in stopped or (variant.startswith("naive") and rep > args.naive_reps):
                    continue
                suffix = variant[len(base(variant)):]
                status, wall, peak, cpu, msg = compile_once(cxx, srcs[(variant, n)], args.cap, includes[suffix])
                runs.append((cxx, variant, n, rep, status, wall, peak, msg, cpu))
                print(f"rep {rep} {cxx:8} {variant:14} N={n:<5} {status:7} {wall:8.2f} s (cpu {cpu:6.2f}) "
                      f"{peak / 1024:6.0f} MiB {msg}", flush=True)
                if status != "ok":
                    stopped.add(key)
    elapsed = time.time() - started
    load_after = os.getloadavg()

    with open(os.path.join(args.out, "compile_time.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["compiler", "variant", "n", "rep", "status", "wall_s", "peak_kib", "message", "cpu_s"])
        w.writerows(runs)

    def summary(cxx, variant, n):
        rs = [r for r in runs if r[0] == cxx and r[1] == variant and r[2] == n]
        ok = [r for r in rs if r[4] == "ok"]
        if not rs:
            return None
        if len(ok) < len(rs):
            bad = next(r for r in rs if r[4] != "ok")  # peak of a killed run is not measured
            return {"text": bad[7], "wall": None, "peak": None, "runs": len(rs)}
        walls = [r[5] for r in ok]
        return {"wall": statistics.median(walls), "min": min(walls), "max": max(walls),
                "cpu": statistics.median(r[8] for r in ok),
                "peak": statistics.median(r[6] for r in ok) / 1024, "runs": len(ok)}

    lines = [
        f"Generated by benchmarks/compile_time/run.py on {time.strftime('%Y-%m-%d %H:%M')} "
        f"({platform.machine()}, {os.cpu_count()} CPUs, shared; load average {load_before[0]:.2f} before, "
        f"{load_after[0]:.2f} after; {elapsed:.0f} s in all).",
        "",
        "Compilers: " + "; ".join(f"`{version(c)}`" for c in compilers) + ".",
        f"Flags: `{' '.join(FLAGS)}` (default limits). {args.reps} interleaved repetitions "
        f"({args.naive_reps} for naive); median (min-max) wall time, median peak RSS. Naive runs capped at "
        f"{args.cap} s." + (f" lib{list(includes)[1]}: the lib cases compiled against {args.compare}." if args.compare else ""),
        "",
        "| compiler | variant | N | wall s, median (min-max) | cpu s, median | peak MiB | runs | naive / lib (wall) |",
        "|---|---|---:|---|---:|---:|---:|---:|",
    ]
    for cxx in compilers:
        for variant, n in cases:
            s = summary(cxx, variant, n)
            if s is None:
                continue
            if s["wall"] is None:
                cell, cpu = s["text"], ""
            else:
                cell, cpu = f"{s['wall']:.2f} ({s['min']:.2f}-{s['max']:.2f})", f"{s['cpu']:.2f}"
            ratio = ""
            if variant == "naive":
                lib = summary(cxx, "lib", n)
                if lib and lib["wall"]:
                    ratio = f"{s['wall'] / lib['wall']:.0f}x" if s["wall"] else f"> {args.cap / lib['wall']:.0f}x"
            peak = "n/a" if s["peak"] is None else f"{s['peak']:.0f}"
            lines.append(f"| {cxx} | {variant} | {n} | {cell} | {cpu} | {peak} | {s['runs']} | {ratio} |")
    table = "\n".join(lines) + "\n"
    with open(os.path.join(args.out, "compile_time.md"), "w") as f:
        f.write(table)
    print()
    print(table)


if __name__ == "__main__":
    main()
