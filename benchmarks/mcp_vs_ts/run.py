#!/usr/bin/env python3
"""The MCP client against the official TypeScript SDK client, side by side (issue 20, point 6).

Run by scripts/bench-mcp-vs-ts, which installs the pinned SDK (npm ci into build/mcp-vs-ts) and builds
bench_mcp_vs_ts_client (release preset). Every scenario runs each client in turn, `--rounds` times, the order
rotated every round (so no client always runs first or last on a noisy machine); the table shows medians.
Stdio: every client run spawns its own server (node server.mjs). HTTP: one server (node server.mjs --http)
for the whole run, each client run its own session. Client CPU only: each client measures its own process
(getrusage / process.cpuUsage), the server is another process. The server's CPU is measured apart
(/proc/PID/stat over the client's whole run, warm-up included): where the server sets the pace, its CPU per
MiB approaches the client's wall time per MiB.

  run.py --dir build/mcp-vs-ts --cpp build/release/benchmarks/mcp_vs_ts/bench_mcp_vs_ts_client [--rounds 5]
         [--only stdio|http] [--threads 1] [--pool 1,2,4] [--json out.json]

With --servers (issue 28, point 8) the servers are compared instead: this project's mcp_server
(bench_mcp_vs_ts_server, --cpp-server) against the SDK's high-level McpServer (node server.mjs --mcp-server),
each driven by both clients (the TS SDK client and cpp-raw), the same scenarios. Per run: the server's CPU per
call (/proc/PID/stat), its peak RSS (VmHWM: sampled every 20 ms for a stdio server, read at the end of the
scenario for an HTTP server, which serves every round of one scenario) and the calls/s the client saw.
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
REF = "cpp-host+nlohmann"  # with --cpp-ref: the host built with TOOL_EFFECTS_JSON_FAST_PARSER=0
WARMUP = 50  # calls before the timed batches (both clients' default), same tool and size
CLK_TCK = os.sysconf("SC_CLK_TCK")


def proc_cpu(pid):
    """User + system CPU seconds of a live process (/proc/PID/stat), or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            s = f.read()
        fields = s[s.rindex(")") + 2:].split()
        return (int(fields[11]) + int(fields[12])) / CLK_TCK
    except (OSError, ValueError, IndexError):
        return None


def proc_hwm_kb(pid):
    """Peak RSS (VmHWM, kB) of a live process, or None."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return None


def stdio_servers(client_pid, marker=b"server.mjs"):
    """The processes whose command line holds `marker` descended from the client (its stdio server)."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/cmdline", "rb") as f:
                if marker not in f.read():
                    continue
            pid = int(d)
            for _ in range(4):  # the client, or a shell it started
                with open(f"/proc/{pid}/stat") as f:
                    s = f.read()
                pid = int(s[s.rindex(")") + 2:].split()[1])
                if pid == client_pid:
                    out.append(int(d))
                    break
        except (OSError, ValueError):
            continue
    return out


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_client(args, client, transport, tool, nbytes, conc, calls, url, threads, server_cmd="node server.mjs",
               server_pid=None, marker=b"server.mjs"):
    server_pid = server_pid or args.server_pid
    common = ["--tool", tool, "--bytes", str(nbytes), "--concurrency", str(conc), "--calls", str(calls)]
    if transport == "stdio":
        common += ["--transport", "stdio", "--server", server_cmd]
    else:
        common += ["--transport", "http", "--url", url]
    if client == "ts-sdk":
        # --no-warnings: SDK 1.32.2's HTTP client adds an abort listener per request (MaxListenersExceededWarning
        # after 1500); printing thousands of warnings is not client work.
        cmd = ["node", "--no-warnings", "client.mjs"] + common
    elif client == FAST:
        cmd = [args.cpp_fast, "--path", "host", "--threads", str(threads)] + common
    elif client == REF:
        cmd = [args.cpp_ref, "--path", "host", "--threads", str(threads)] + common
    else:
        cmd = [args.cpp, "--path", client.split("-")[1], "--threads", str(threads)] + common
    # The server's CPU over the client's whole run (warm-up included): the HTTP server's before and after;
    # the stdio server (the client's child) sampled every 20 ms until it ends (its last <= 20 ms are missed).
    p = subprocess.Popen(cmd, cwd=args.dir, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    server_cpu = {}
    server_hwm = None
    http_cpu0 = proc_cpu(server_pid) if transport == "http" else None
    if transport == "stdio":
        while p.poll() is None:
            for pid in stdio_servers(p.pid, marker):
                c = proc_cpu(pid)
                if c is not None:
                    server_cpu[pid] = c
                h = proc_hwm_kb(pid)
                if h is not None:
                    server_hwm = max(server_hwm or 0, h)
            time.sleep(0.02)
    stdout, stderr = p.communicate(timeout=600)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({p.returncode}):\n{stderr[-4000:]}")
    r = json.loads(stdout.strip().splitlines()[-1])
    served = WARMUP + r["calls"]
    r["server_maxrss_kb"] = server_hwm
    if transport == "http":
        r["server_cpu_s"] = proc_cpu(server_pid) - http_cpu0
    else:
        r["server_cpu_s"] = sum(server_cpu.values()) if server_cpu else None
    r["server_cpu_us_per_call"] = r["server_cpu_s"] / served * 1e6 if r["server_cpu_s"] is not None else None
    r["server_cpu_ms_per_mib"] = (r["server_cpu_us_per_call"] / 1e3 / (nbytes / MiB)
                                  if nbytes >= MiB and r["server_cpu_s"] is not None else None)
    r["calls_per_s"] = r["calls"] / r["wall_s"]
    r["mb_per_s"] = r["bytes"] / MiB / r["wall_s"]
    r["cpu_us_per_call"] = r["cpu_s"] / r["calls"] * 1e6
    r["cpu_ms_per_mib"] = r["cpu_s"] * 1e3 / (r["bytes"] / MiB) if r["bytes"] >= MiB else None
    r["wall_ms_per_mib"] = r["wall_s"] * 1e3 / (r["bytes"] / MiB) if r["bytes"] >= MiB else None
    return r


def med(rs, key):
    v = [r[key] for r in rs if r[key] is not None]
    return statistics.median(v) if v else None


SERVERS = ["ts-mcpserver", "cpp-server"]
BLOCKING = "cpp-blocking"  # --ab-blocking: the same server with --blocking-calls (an approver: each call holds a caller thread)
SERVER_CLIENTS = ["ts-sdk", "cpp-raw"]


def server_argv(args, server):
    """How `server` starts (over stdio; add --http PORT for Streamable HTTP)."""
    if server == "ts-mcpserver":
        return ["node", "server.mjs", "--mcp-server"]
    blocking = ["--blocking-calls"] if server == BLOCKING else []
    return [args.cpp_server, "--threads", str(args.server_threads)] + blocking


def start_http_server(args, server, port):
    p = subprocess.Popen(server_argv(args, server) + ["--http", str(port)], cwd=args.dir, stderr=subprocess.DEVNULL)
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            break
        except OSError:
            time.sleep(0.05)
    return p


def servers_main(args):
    """The servers side by side: mcp_server against the SDK's McpServer, each driven by both clients."""
    servers_run = SERVERS + ([BLOCKING] if args.ab_blocking else [])
    stdio_cmd = {s: " ".join(server_argv(args, s)) for s in servers_run}
    marker = {s: b"server.mjs" if s == "ts-mcpserver" else b"bench_mcp_vs_ts_server" for s in servers_run}
    pairs = [(s, c) for s in servers_run for c in SERVER_CLIENTS]
    scenarios = [s for s in SCENARIOS if not args.only or s[1] == args.only]
    runs, http_hwm = {}, {}
    for si, (name, transport, tool, nbytes, conc, calls) in enumerate(scenarios):
        servers = {}
        urls = {}
        if transport == "http":
            for server in servers_run:
                port = free_port()
                servers[server] = start_http_server(args, server, port)
                urls[server] = f"http://127.0.0.1:{port}/mcp"
        try:
            for rnd in range(args.rounds):
                k = rnd % len(pairs)
                for server, client in pairs[k:] + pairs[:k]:
                    r = run_client(args, client, transport, tool, nbytes, conc, calls, urls.get(server), args.threads,
                                   server_cmd=stdio_cmd[server],
                                   server_pid=servers[server].pid if server in servers else None,
                                   marker=marker[server])
                    runs.setdefault((si, server, client), []).append(r)
                    print(f"round {rnd + 1} {transport} {name} {server} <- {client}: {r['calls_per_s']:.0f} calls/s, "
                          f"server {r['server_cpu_us_per_call']:.1f} us/call", file=sys.stderr)
        finally:
            for server, p in servers.items():
                http_hwm[(si, server)] = proc_hwm_kb(p.pid)
                p.terminate()
                p.wait()
    print(f"{args.rounds} rounds, medians; server CPU = user + system of the server process over the client's "
          f"whole run, warm-up included; mcp_server on thread_pool({args.server_threads}); peak RSS = VmHWM\n")
    print("| transport | scenario | client | server | calls/s | server CPU µs/call | server CPU ms/MiB "
          "| server peak RSS MiB | × McpServer calls/s | × McpServer CPU/call | × McpServer RSS |")
    print("|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for si, (name, transport, tool, nbytes, conc, calls) in enumerate(scenarios):
        for client in SERVER_CLIENTS:
            base = server_row(runs, http_hwm, si, transport, "ts-mcpserver", client)
            for server in servers_run:
                row = server_row(runs, http_hwm, si, transport, server, client)
                smib = row["cpu_ms_per_mib"]
                print(f"| {transport} | {name} | {client} | {server} | {row['calls_per_s']:.0f} | "
                      f"{row['cpu_us_per_call']:.1f} | {'' if smib is None else f'{smib:.2f}'} | "
                      f"{row['rss_mib']:.1f} | {row['calls_per_s'] / base['calls_per_s']:.2f} | "
                      f"{row['cpu_us_per_call'] / base['cpu_us_per_call']:.2f} | "
                      f"{row['rss_mib'] / base['rss_mib']:.2f} |")
    if args.ab_blocking:
        print_ab_table(scenarios, runs, http_hwm)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({f"{k[0]}:{k[1]}:{k[2]}": v for k, v in runs.items()}, f, indent=1)


def server_row(runs, http_hwm, si, transport, server, client):
    """One server's medians in scenario `si` driven by `client`: calls/s, CPU per call and per MiB, and its peak
    RSS (over HTTP the long-lived server's VmHWM at the end of the scenario, over stdio the median of each run's)."""
    rs = runs[(si, server, client)]
    rss_kb = http_hwm.get((si, server)) if transport == "http" else med(rs, "server_maxrss_kb")
    return {"calls_per_s": med(rs, "calls_per_s"), "cpu_us_per_call": med(rs, "server_cpu_us_per_call"),
            "cpu_ms_per_mib": med(rs, "server_cpu_ms_per_mib"), "rss_mib": rss_kb / 1024}


def print_ab_table(scenarios, runs, http_hwm):
    """docs/benchmarks.md's table: per row McpServer, ours and ours with --blocking-calls side by side."""
    print("\n| transport | scenario | client | calls/s McpServer / ours / ours blocking "
          "| server CPU µs/call McpServer / ours / ours blocking | peak RSS MiB McpServer / ours "
          "| × calls/s | × CPU/call (blocking) | × RSS |")
    print("|---|---|---|---|---|---|---:|---:|---:|")
    for si, (name, transport, *_rest) in enumerate(scenarios):
        for client in SERVER_CLIENTS:
            ts, nb, bl = ((r["calls_per_s"], r["cpu_us_per_call"], r["rss_mib"])
                          for r in (server_row(runs, http_hwm, si, transport, s, client)
                                    for s in ("ts-mcpserver", "cpp-server", BLOCKING)))
            print(f"| {transport} | {name} | {client} | {ts[0]:.0f} / {nb[0]:.0f} / {bl[0]:.0f} "
                  f"| {ts[1]:.1f} / {nb[1]:.1f} / {bl[1]:.1f} | {ts[2]:.1f} / {nb[2]:.1f} "
                  f"| {nb[0] / ts[0]:.2f} | {nb[1] / ts[1]:.2f} ({bl[1] / ts[1]:.2f}) | {nb[2] / ts[2]:.2f} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--cpp", required=True)
    ap.add_argument("--cpp-fast", help="bench_mcp_vs_ts_client_boost_json: adds the client " + FAST)
    ap.add_argument("--cpp-ref", help="bench_mcp_vs_ts_client_nlohmann: adds the client " + REF)
    ap.add_argument("--clients", help="only these clients, comma-separated (ts-sdk is always run: the ratios)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--only", choices=["stdio", "http"])
    ap.add_argument("--threads", type=int, default=1, help="thread_pool size of the C++ client")
    ap.add_argument("--pool", default="", help="also: cpp-host CPU per call with these pool sizes, e.g. 1,2,4")
    ap.add_argument("--json", help="write every run's numbers here")
    ap.add_argument("--servers", action="store_true", help="compare the servers (needs --cpp-server)")
    ap.add_argument("--cpp-server", help="bench_mcp_vs_ts_server")
    ap.add_argument("--ab-blocking", action="store_true",
                    help="with --servers: also the C++ server with --blocking-calls (an approver: caller threads)")
    ap.add_argument("--server-threads", type=int, default=1, help="thread_pool size of the C++ server")
    args = ap.parse_args()
    args.dir = os.path.abspath(args.dir)
    args.cpp = os.path.abspath(args.cpp)
    args.server_pid = None
    if args.servers:
        if not args.cpp_server:
            sys.exit("--servers needs --cpp-server")
        args.cpp_server = os.path.abspath(args.cpp_server)
        servers_main(args)
        return
    clients = CLIENTS + ([FAST] if args.cpp_fast else []) + ([REF] if args.cpp_ref else [])
    if args.clients:
        clients = ["ts-sdk"] + [c for c in clients if c != "ts-sdk" and c in args.clients.split(",")]
    if args.cpp_fast:
        args.cpp_fast = os.path.abspath(args.cpp_fast)
    if args.cpp_ref:
        args.cpp_ref = os.path.abspath(args.cpp_ref)
    args.server_pid = None

    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    server = None
    scenarios = [s for s in SCENARIOS if not args.only or s[1] == args.only]
    if any(s[1] == "http" for s in scenarios):
        server = subprocess.Popen(["node", "server.mjs", "--http", str(port)], cwd=args.dir,
                                  stderr=subprocess.DEVNULL)
        args.server_pid = server.pid
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
          "| × TS calls/s | × TS CPU/call | wall ms/MiB | server CPU µs/call | server CPU ms/MiB |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for si, (name, transport, tool, nbytes, conc, calls) in enumerate(scenarios):
        ts = runs[(si, "ts-sdk")]
        for client in clients:
            rs = runs[(si, client)]
            cps, mbs, cpu, mib = (med(rs, k) for k in ("calls_per_s", "mb_per_s", "cpu_us_per_call", "cpu_ms_per_mib"))
            rss = med(rs, "maxrss_kb") / 1024
            ratio = cps / med(ts, "calls_per_s")
            cpu_ratio = cpu / med(ts, "cpu_us_per_call")
            wall, scpu, smib = (med(rs, k) for k in ("wall_ms_per_mib", "server_cpu_us_per_call",
                                                     "server_cpu_ms_per_mib"))
            print(f"| {transport} | {name} | {client} | {cps:.0f} | {mbs:.1f} | {cpu:.1f} | "
                  f"{'' if mib is None else f'{mib:.2f}'} | {rss:.1f} | {ratio:.2f} | {cpu_ratio:.2f} | "
                  f"{'' if wall is None else f'{wall:.2f}'} | {'' if scpu is None else f'{scpu:.0f}'} | "
                  f"{'' if smib is None else f'{smib:.2f}'} |")
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
