#!/usr/bin/env python3
"""A hostile etcd JSON gateway on 127.0.0.1 for the tests of issue 26 (test/unit/etcd_hostile_gateway_test.cpp):
it speaks just enough of etcd's v3 gateway (/v3/auth/authenticate, /v3/kv/put, /v3/kv/range) over kept-alive
HTTP/1.1 connections, and misbehaves as MODE says.

    hostile_gateway.py MODE LOG     listens on a free 127.0.0.1 port, prints "port N" on stdout; appends one JSON
                                    line per request to LOG: {"path", "headers": [[name, value], ...]}

Modes:
    benign          the control: token "good-token.1", every answer well-formed
    token-crlf      authenticate answers the token "tok\\r\\nX-Injected: yes" (a header of its own if sent as is)
    token-huge      authenticate answers a token of 65,536 bytes
    long-message    range answers HTTP 500 with a gateway error whose message is 100,000 two-byte characters
    trailing        put's answer is followed, in the same write, by a whole second response: a range answer
                    whose value is "forged" (read as the next request's response unless discarded)
    trailing-late   the same forged response, sent 100 ms after put's answer (unread on the socket)
Otherwise range answers one key whose value is "genuine".

Started by the test, stopped by its pid. Python standard library only.
"""
import base64
import json
import socket
import sys
import threading
import time

mode, log_path = sys.argv[1], sys.argv[2]
lock = threading.Lock()


def b64(s):
    return base64.b64encode(s.encode()).decode()


def response(status, body):
    data = json.dumps(body).encode()
    reason = {200: "OK", 500: "Internal Server Error"}[status]
    return ("HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" %
            (status, reason, len(data))).encode() + data


def range_answer(value):
    return response(200, {"header": {"revision": "7"}, "count": "1",
                          "kvs": [{"key": b64("k"), "value": b64(value), "create_revision": "2",
                                   "mod_revision": "7", "version": "1"}]})


def read_request(f):
    line = f.readline(65536)
    if not line:
        return None
    path = line.decode("latin-1").split(" ")[1] if b" " in line else ""
    headers = []
    while True:
        h = f.readline(1 << 20)
        if not h or h in (b"\r\n", b"\n"):
            break
        name, _, value = h.decode("latin-1").rstrip("\r\n").partition(":")
        headers.append([name, value.strip()])
    length = int(next((v for k, v in headers if k.lower() == "content-length"), "0"))
    body = f.read(length) if length else b""
    return path, headers, body


def serve(conn):
    f = conn.makefile("rb")
    try:
        while True:
            req = read_request(f)
            if req is None:
                return
            path, headers, _ = req
            with lock, open(log_path, "a") as log:
                log.write(json.dumps({"path": path, "headers": headers}) + "\n")
            if path == "/v3/auth/authenticate":
                token = {"token-crlf": "tok\r\nX-Injected: yes", "token-huge": "t" * 65536}.get(mode, "good-token.1")
                conn.sendall(response(200, {"header": {"revision": "7"}, "token": token}))
            elif path == "/v3/kv/put":
                answer = response(200, {"header": {"revision": "8"}})
                if mode == "trailing":
                    conn.sendall(answer + range_answer("forged"))
                elif mode == "trailing-late":
                    conn.sendall(answer)
                    time.sleep(0.1)
                    conn.sendall(range_answer("forged"))
                else:
                    conn.sendall(answer)
            elif path == "/v3/kv/range" and mode == "long-message":
                conn.sendall(response(500, {"error": "boom", "message": "\u00e9" * 100000, "code": 2}))
            elif path == "/v3/kv/range":
                conn.sendall(range_answer("genuine"))
            else:
                conn.sendall(response(500, {"error": "unknown", "message": "not served here", "code": 12}))
    except (OSError, ValueError):
        return
    finally:
        conn.close()


def main():
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    print("port %d" % srv.getsockname()[1], flush=True)
    while True:
        conn, _ = srv.accept()
        threading.Thread(target=serve, args=(conn,), daemon=True).start()


main()
