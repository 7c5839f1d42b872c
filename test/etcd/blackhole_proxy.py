#!/usr/bin/env python3
"""A loopback TCP proxy to one etcd member that a test controls through stdin: a silent partition.

    blackhole_proxy.py UPSTREAM_PORT     listens on a free 127.0.0.1 port and prints "port N" on stdout

Commands, one per line on stdin (each answered by one line on stdout):
    hold        every connection, existing and new, stops delivering in both directions: no RST, no FIN,
                nothing read from either side (the kernel's buffers fill and the peers see silence, as under a
                packet-drop partition). Answer: "ok".
    hold_new    only connections accepted from now on are held (accepted, connected upstream, nothing
                forwarded); existing ones go on. Answer: "ok".
    pass        everything held is released and forwarded again (what was sent meanwhile arrives late, as
                TCP's retransmission would deliver it after the partition heals). Answer: "ok".
    stat        answer "held H conns C compacted K": connections held now, connections accepted so far, and how
                many answers from etcd named a compact_revision (a watch canceled by compaction).
    quit        (or end of stdin) exit; every connection is closed.

Started by test/unit/etcd_faults_test.cpp, stopped by its pid. Python standard library only.
"""
import socket
import sys
import threading

lock = threading.Lock()
released = threading.Condition(lock)
state = {"hold_all": False, "hold_new": False, "conns": 0, "compacted": 0}
pairs = []  # [client, upstream, {"held": bool}]


def blocked(flags):
    return state["hold_all"] or flags["held"]


def pump(src, dst, flags, from_upstream):
    tail = b""
    try:
        while True:
            with lock:
                while blocked(flags):
                    released.wait()
            src.settimeout(0.05)
            try:
                data = src.recv(65536)
            except socket.timeout:
                continue
            if not data:
                break
            with lock:
                while blocked(flags):  # held while the data was read: deliver it only on release
                    released.wait()
                if from_upstream:
                    window = tail + data
                    state["compacted"] += window.count(b"compact_revision") - tail.count(b"compact_revision")
                    tail = window[-32:]
            dst.sendall(data)
    except OSError:
        pass
    for s in (src, dst):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def serve(listener, upstream_port):
    while True:
        try:
            c, _ = listener.accept()
        except OSError:
            return
        try:
            u = socket.create_connection(("127.0.0.1", upstream_port))
        except OSError:
            c.close()
            continue
        with lock:
            flags = {"held": state["hold_new"]}
            state["conns"] += 1
            pairs.append((c, u, flags))
        threading.Thread(target=pump, args=(c, u, flags, False), daemon=True).start()
        threading.Thread(target=pump, args=(u, c, flags, True), daemon=True).start()


def main():
    upstream_port = int(sys.argv[1])
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    threading.Thread(target=serve, args=(listener, upstream_port), daemon=True).start()
    print("port", listener.getsockname()[1], flush=True)
    for line in sys.stdin:
        cmd = line.strip()
        with lock:
            if cmd == "hold":
                state["hold_all"] = True
            elif cmd == "hold_new":
                state["hold_new"] = True
            elif cmd == "pass":
                state["hold_all"] = False
                state["hold_new"] = False
                for _, _, flags in pairs:
                    flags["held"] = False
                released.notify_all()
            elif cmd == "stat":
                held = sum(1 for _, _, f in pairs if f["held"] or state["hold_all"])
                print("held", held, "conns", state["conns"], "compacted", state["compacted"], flush=True)
                continue
            elif cmd == "quit":
                break
            else:
                print("unknown", cmd, flush=True)
                continue
        print("ok", flush=True)
    listener.close()
    with lock:
        for c, u, _ in pairs:
            for s in (c, u):
                try:
                    s.close()
                except OSError:
                    pass


if __name__ == "__main__":
    main()
