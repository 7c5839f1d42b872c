#!/usr/bin/env python3
"""A three-member etcd cluster on 127.0.0.1 for the tests (the ctest fixture etcd_cluster).

    cluster.py start STATE_DIR [--members N] [--tls CERT_DIR]
                                                start the members on free ports, wait until every one is healthy,
                                                write STATE_DIR/cluster.json (pids, endpoints, command lines)
    cluster.py stop STATE_DIR                   SIGTERM (then SIGKILL) every member by its pid; delete its data
    cluster.py kill STATE_DIR INDEX             SIGKILL member INDEX (0-based)
    cluster.py restart STATE_DIR INDEX          start member INDEX again on its data dir and wait until healthy

Members are stopped by the pids this script recorded, never by name. Data lives in STATE_DIR/data (a fresh
directory per start). Exits 77 (ctest: skipped) when no etcd binary is found (Debian: etcd-server).
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request


def free_ports(n):
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


TLS_CONTEXT = None


def healthy(url, timeout=1.0):
    try:
        with urllib.request.urlopen(url + "/health", timeout=timeout, context=TLS_CONTEXT) as r:
            return json.loads(r.read().decode()).get("health") == "true"
    except Exception:
        return False


def wait_healthy(urls, seconds, procs=None):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if procs:
            for i, p in procs.items():
                if p.poll() is not None:
                    raise SystemExit(f"etcd member {i} exited with {p.returncode} while starting")
        if all(healthy(u) for u in urls):
            return True
        time.sleep(0.2)
    return False


def spawn(member):
    log = open(member["log"], "ab")
    return subprocess.Popen(member["argv"], stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                            start_new_session=True, close_fds=True)


def load(state_dir):
    with open(os.path.join(state_dir, "cluster.json")) as f:
        return json.load(f)


def save(state_dir, state):
    tmp = os.path.join(state_dir, "cluster.json.tmp")
    with open(tmp, "w") as f:
        json.dump(state, f, indent=1)
    os.replace(tmp, os.path.join(state_dir, "cluster.json"))


def alive(pid):
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    try:  # a zombie of ours is not alive
        wpid, _ = os.waitpid(pid, os.WNOHANG)
        return wpid == 0
    except ChildProcessError:
        return True


def stop_pid(pid):
    if not alive(pid):
        return
    try:
        os.kill(pid, signal.SIGTERM)
    except OSError:
        return
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and alive(pid):
        time.sleep(0.05)
    if alive(pid):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def start(state_dir, n, tls_dir=None):
    global TLS_CONTEXT
    etcd = shutil.which("etcd") or ("/usr/bin/etcd" if os.path.exists("/usr/bin/etcd") else None)
    if not etcd:
        print("SKIPPED: no etcd binary (Debian: apt-get install etcd-server)")
        return 77
    os.makedirs(state_dir, exist_ok=True)
    if os.path.exists(os.path.join(state_dir, "cluster.json")):
        stop(state_dir)  # a cluster left over by an interrupted run
    data = os.path.join(state_dir, "data")
    shutil.rmtree(data, ignore_errors=True)
    os.makedirs(data)
    ports = free_ports(2 * n)
    names = [f"m{i}" for i in range(n)]
    peers = [f"http://127.0.0.1:{ports[2 * i + 1]}" for i in range(n)]
    scheme = "https" if tls_dir else "http"
    clients = [f"{scheme}://127.0.0.1:{ports[2 * i]}" for i in range(n)]
    tls_flags = []
    if tls_dir:
        import ssl
        TLS_CONTEXT = ssl.create_default_context(cafile=os.path.join(tls_dir, "ca.pem"))
        TLS_CONTEXT.load_cert_chain(os.path.join(tls_dir, "client.pem"), os.path.join(tls_dir, "client-key.pem"))
        tls_flags = ["--cert-file", os.path.join(tls_dir, "server.pem"),
                     "--key-file", os.path.join(tls_dir, "server-key.pem"),
                     "--client-cert-auth", "--trusted-ca-file", os.path.join(tls_dir, "ca.pem")]
    initial = ",".join(f"{names[i]}={peers[i]}" for i in range(n))
    token = f"tool-effects-{os.getpid()}-{int(time.time())}"
    members = []
    for i in range(n):
        argv = [etcd, "--name", names[i], "--data-dir", os.path.join(data, names[i]),
                "--listen-client-urls", clients[i], "--advertise-client-urls", clients[i],
                "--listen-peer-urls", peers[i], "--initial-advertise-peer-urls", peers[i],
                "--initial-cluster", initial, "--initial-cluster-state", "new",
                "--initial-cluster-token", token, "--heartbeat-interval", "100", "--election-timeout", "1000",
                "--log-level", "warn", "--logger", "zap"] + tls_flags
        members.append({"name": names[i], "argv": argv, "client_url": clients[i], "peer_url": peers[i],
                        "log": os.path.join(data, names[i] + ".log"), "pid": 0})
    procs = {}
    for i, m in enumerate(members):
        p = spawn(m)
        procs[i] = p
        m["pid"] = p.pid
    state = {"members": members, "endpoints": clients}
    save(state_dir, state)
    if not wait_healthy(clients, 60, procs):
        for m in members:
            stop_pid(m["pid"])
        raise SystemExit("etcd cluster did not become healthy within 60 s (logs in " + data + ")")
    print("etcd cluster up: " + ",".join(clients))
    return 0


def stop(state_dir):
    try:
        state = load(state_dir)
    except FileNotFoundError:
        return 0
    for m in state["members"]:
        if m.get("pid"):
            stop_pid(m["pid"])
    os.remove(os.path.join(state_dir, "cluster.json"))
    shutil.rmtree(os.path.join(state_dir, "data"), ignore_errors=True)
    print("etcd cluster stopped")
    return 0


def kill(state_dir, index):
    state = load(state_dir)
    m = state["members"][index]
    if m.get("pid") and alive(m["pid"]):
        os.kill(m["pid"], signal.SIGKILL)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and alive(m["pid"]):
            time.sleep(0.02)
    return 0


def restart(state_dir, index):
    state = load(state_dir)
    m = state["members"][index]
    if m.get("pid") and alive(m["pid"]):
        return 0
    p = spawn(m)
    m["pid"] = p.pid
    save(state_dir, state)
    if not wait_healthy([m["client_url"]], 60, {index: p}):
        raise SystemExit(f"etcd member {index} did not become healthy again")
    return 0


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    cmd, state_dir = argv[1], argv[2]
    if cmd == "start":
        opts = dict(zip(argv[3::2], argv[4::2]))
        return start(state_dir, int(opts.get("--members", 3)), opts.get("--tls"))
    if cmd == "stop":
        return stop(state_dir)
    if cmd in ("kill", "restart") and len(argv) > 3:
        return (kill if cmd == "kill" else restart)(state_dir, int(argv[3]))
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
