#!/usr/bin/env python3
"""The MCP client against the official TypeScript SDK client, side by side (issue 20, point 6).

Run by scripts/bench-mcp-vs-ts, which installs the pinned SDK (npm ci into build/mcp-vs-ts) and builds
bench_mcp_vs_ts_client (release preset). Every scenario runs each client in turn, `--rounds` times, the order
rotated every round (so no client always runs first or last on a noisy machine); the table shows medians.
Stdio: every client run spawns its own server (node server.mjs). HTTP: one server (node server.mjs --http)
for the whole run, each client run its own session. Client CPU only: each client measures its own process
(getrusage / process.cpuUsage), the server is another process.

  run.py --dir build/mcp-vs-ts --cpp build/release/benchmarks/mcp_vs_ts/bench_mcp_vs_ts_client [--rounds 5]
         [--only stdio|http] [--threads 1] [--pool 1,2,4] [--json out.json]
"""
import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time

MiB = 1 << 20

# name, transport, tool, bytes, concurrency, calls
SCENARIOS = [
    ("small, sequential", "stdio", "echo", 0, 1, 2000),
    ("small, 16 concurrent", "stdio", "echo", 0, 16, 8000),
    ("1 MiB results", "stdio", "blob", MiB, 1, 60),
    ("small, sequential", "http", "echo", 0, 1, 1000),
    ("small, 16 concurrent", "http", "echo", 0, 16, 2000),
    ("1 MiB results", "http", "blob", MiB, 1, 40),
]
CLIENTS = ["ts-sdk", "cpp-raw", "cpp-host"]
FAST = "cpp-host+boost.json"  # with --cpp-fast: the host built with TOOL_EFFECTS_JSON_BOOST_PARSER=1


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_client(args, client, transport, tool, nbytes, conc, calls, url, threads):
    common = ["--tool", tool, "--bytes", str(nbytes), "--concurrency", str(conc), "--calls", str(calls)]
    if transport == "stdio":
        common += ["--transport", "stdio", "--server", "node server.mjs"]
    else:
        common += ["--transport", "http", "--url", url]
    if client == "ts-sdk":
        # --no-warnings: SDK 1.32.2's HTTP client adds an abort listener per request (MaxListenersExceededWarning
        # after 1500); printing thousands of warnings is not client work.
        cmd = ["node", "--no-warnings", "client.mjs"] + common
    elif client == FAST:
        cmd = [args.cpp_fast, "--path", "host", "--threads", str(threads)] + common
    else:
        cmd = [args.cpp, "--path", client.split("-")[1], "--threads", str(threads)] + common
    out = subprocess.run(cmd, cwd=args.dir, capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({out.returncode}):\n{out.stderr[-4000:]}")
    r = json.loads(out.stdout.strip().splitlines()[-1])
    r["calls_per_s"] = r["calls"] / r["wall_s"]
    r["mb_per_s"] = r["bytes"] / MiB / r["wall_s"]
    r["cpu_us_per_call"] = r["cpu_s"] / r["calls"] * 1e6
    r["cpu_ms_per_mib"] = r["cpu_s"] * 1e3 / (r["bytes"] / MiB) if r["bytes"] >= MiB else None
    return r


def med(rs, key):
    v = [r[key] for r in rs if r[key] is not None]
    return statistics.median(v) if v else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--cpp", required=True)
    ap.add_argument("--cpp-fast", help="bench_mcp_vs_ts_client_boost_json: adds the client " + FAST)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--only", choices=["stdio", "http"])
    ap.add_argument("--threads", type=int, default=1, help="thread_pool size of the C++ client")
    ap.add_argument("--pool", default="", help="also: cpp-host CPU per call with these pool sizes, e.g. 1,2,4")
    ap.add_argument("--json", help="write every run's numbers here")
    args = ap.parse_args()
    args.dir = os.path.abspath(args.dir)
    args.cpp = os.path.abspath(args.cpp)
    clients = CLIENTS + ([FAST] if args.cpp_fast else [])
    if args.cpp_fast:
        args.cpp_fast = os.path.abspath(args.cpp_fast)

    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    server = None
    scenarios = [s for s in SCENARIOS if not args.only or s[1] == args.only]
    if any(s[1] == "http" for s in scenarios):
        server = subprocess.Popen(["node", "server.mjs", "--http", str(port)], cwd=args.dir,
                                  stderr=subprocess.DEVNULL)
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
                break
            except OSError:
                time.sleep(0.05)
    runs = {}
    try:
        for rnd in range(args.rounds):
            for si, (name, transport, tool, nbytes, conc, calls) in enumerate(scenarios):
                k = rnd % len(clients)
                order = clients[k:] + clients[:k]
                for client in order:
                    r = run_client(args, client, transport, tool, nbytes, conc, calls, url, args.threads)
                    runs.setdefault((si, client), []).append(r)
                    print(f"round {rnd + 1} {transport} {name} {client}: {r['calls_per_s']:.0f} calls/s "
                          f"{r['cpu_us_per_call']:.1f} us/call", file=sys.stderr)
        pool_runs = {}
        for threads in [int(t) for t in args.pool.split(",") if t]:
            for si, (name, transport, tool, nbytes, conc, calls) in enumerate(scenarios):
                if transport != "stdio" or (conc == 1 and tool == "echo"):
                    continue
                for rnd in range(args.rounds):
                    r = run_client(args, "cpp-host", transport, tool, nbytes, conc, calls, url, threads)
                    pool_runs.setdefault((si, threads), []).append(r)
    finally:
        if server:
            server.terminate()
            server.wait()

    print(f"{args.rounds} rounds, medians; client CPU = user + system of the client process only; "
          f"C++ thread_pool({args.threads})\n")
    print("| transport | scenario | client | calls/s | MB/s | client CPU µs/call | client CPU ms/MiB | peak RSS MiB "
          "| × TS calls/s | × TS CPU/call |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for si, (name, transport, tool, nbytes, conc, calls) in enumerate(scenarios):
        ts = runs[(si, "ts-sdk")]
        for client in clients:
            rs = runs[(si, client)]
            cps, mbs, cpu, mib = (med(rs, k) for k in ("calls_per_s", "mb_per_s", "cpu_us_per_call", "cpu_ms_per_mib"))
            rss = med(rs, "maxrss_kb") / 1024
            ratio = cps / med(ts, "calls_per_s")
            cpu_ratio = cpu / med(ts, "cpu_us_per_call")
            print(f"| {transport} | {name} | {client} | {cps:.0f} | {mbs:.1f} | {cpu:.1f} | "
                  f"{'' if mib is None else f'{mib:.2f}'} | {rss:.1f} | {ratio:.2f} | {cpu_ratio:.2f} |")
    if pool_runs:
        print("\ncpp-host, client CPU per call by thread_pool size (stdio; medians)\n")
        sizes = sorted({t for _, t in pool_runs})
        print("| scenario | " + " | ".join(f"pool({t}) µs/call" for t in sizes) + " | "
              + " | ".join(f"pool({t}) calls/s" for t in sizes) + " |")
        print("|---|" + "---:|" * (2 * len(sizes)))
        for si, (name, transport, tool, nbytes, conc, calls) in enumerate(scenarios):
            if (si, sizes[0]) not in pool_runs:
                continue
            cpu = [med(pool_runs[(si, t)], "cpu_us_per_call") for t in sizes]
            cps = [med(pool_runs[(si, t)], "calls_per_s") for t in sizes]
            print(f"| {name} | " + " | ".join(f"{c:.1f}" for c in cpu) + " | "
                  + " | ".join(f"{c:.0f}" for c in cps) + " |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({f"{k[0]}:{k[1]}": v for k, v in runs.items()}, f, indent=1)


if __name__ == "__main__":
    main()
