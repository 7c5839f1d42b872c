#!/usr/bin/env python3
"""A hostile MCP server (stdio) for the bounds of the tool_effects MCP client (test/unit/mcp_hostile_test.cpp):
one behaviour per tool, each one a probe of issue 19.

Usage: hostile_server.py [--never-init] [--pages N --page-bytes B]

  --never-init            never answers initialize
  --pages N --page-bytes B  tools/list answers N pages (nextCursor on each but the last), each with one tool
                            whose description is B bytes
Tools (arguments in brackets):
  echo [text]             answers the text
  deep_notification [depth]  sends a notification whose params nest `depth` arrays, then answers "survived"
  deep_result [depth]     answers with structuredContent nested `depth` arrays deep
  deep_request [depth]    sends a request of its own whose params nest `depth` arrays; answers with the error
                          code the client replied with
  duplicate_keys          answers with a result object that has the key "content" twice
  flood [count, bytes, field]  stops reading its stdin, then sends `count` requests whose `field` ("method" or
                          "id") is `bytes` long; never answers
  fork_and_exit [pidfile] forks a grandchild that holds stdout and sleeps 60 s (its pid written to pidfile),
                          then exits with status 5
  fork_and_stay [pidfile] the same grandchild; the server itself goes on (and never answers this call)
  notifications [count]   sends `count` progress notifications, then answers "sent"
  huge_line [bytes]       answers with a line of `bytes` bytes
  stderr_flood [bytes]    writes `bytes` to stderr (in lines of 1000), then answers "done"
  ids                     answers twice more with this call's id, with the id as a string, with an id of
                          nobody's, then with the right one
"""
import json
import os
import sys
import threading
import time

out_lock = threading.Lock()
args = sys.argv[1:]
never_init = "--never-init" in args
pages = 0
page_bytes = 0
for i, a in enumerate(args):
    if a == "--pages":
        pages = int(args[i + 1])
    if a == "--page-bytes":
        page_bytes = int(args[i + 1])
replies = {}  # id of our request -> reply
replied = threading.Condition()


def send_raw(text):
    with out_lock:
        sys.stdout.write(text)
        sys.stdout.flush()


def send(msg):
    send_raw(json.dumps(msg) + "\n")


def answer(rid, text):
    send({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": text}]}})


def nested(depth):
    return "[" * depth + "]" * depth


def wait_for_pidfile(path):
    for _ in range(500):
        if os.path.exists(path) and os.path.getsize(path) > 0:
            return
        time.sleep(0.01)


def fork_grandchild(pidfile):
    if os.fork() == 0:  # the grandchild: keeps stdout (and stderr) open
        with open(pidfile + ".tmp", "w") as f:
            f.write(str(os.getpid()))
        os.rename(pidfile + ".tmp", pidfile)
        time.sleep(60)
        os._exit(0)
    wait_for_pidfile(pidfile)


def call(rid, name, a):
    if name == "echo":
        answer(rid, a.get("text", ""))
    elif name == "deep_notification":
        send_raw('{"jsonrpc":"2.0","method":"notifications/message","params":' + nested(a.get("depth", 100000)) + "}\n")
        answer(rid, "survived")
    elif name == "deep_result":
        send_raw('{"jsonrpc":"2.0","id":' + json.dumps(rid) + ',"result":{"content":[],"structuredContent":{"x":'
                 + nested(a.get("depth", 100000)) + "}}}\n")
    elif name == "deep_request":
        sid = "srv-deep"
        send_raw('{"jsonrpc":"2.0","id":"' + sid + '","method":"sampling/createMessage","params":{"x":'
                 + nested(a.get("depth", 100000)) + "}}\n")
        with replied:
            replied.wait_for(lambda: sid in replies, 5)
        r = replies.get(sid)
        answer(rid, str(r.get("error", {}).get("code")) if r else "no reply")
    elif name == "duplicate_keys":
        send_raw('{"jsonrpc":"2.0","id":' + json.dumps(rid) + ',"result":{"content":[],"content":[]}}\n')
    elif name == "notifications":
        line = '{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}\n'
        n = a.get("count", 1000000)
        block = line * 10000
        for _ in range(n // 10000):
            send_raw(block)
        send_raw(line * (n % 10000))
        answer(rid, "sent")
    elif name == "huge_line":
        n = a.get("bytes", 100 << 20)
        head = '{"jsonrpc":"2.0","id":' + json.dumps(rid) + ',"result":{"content":[{"type":"text","text":"'
        tail = '"}]}}\n'
        pad = n - len(head) - len(tail)
        with out_lock:
            sys.stdout.write(head)
            chunk = "x" * (1 << 20)
            while pad > 0:
                k = min(pad, len(chunk))
                sys.stdout.write(chunk[:k])
                pad -= k
            sys.stdout.write(tail)
            sys.stdout.flush()
    elif name == "stderr_flood":
        n = a.get("bytes", 64 << 20)
        line = "e" * 999 + "\n"
        block = line * 1000
        for _ in range(n // len(block)):
            sys.stderr.write(block)
        sys.stderr.flush()
        answer(rid, "done")
    elif name == "ids":
        answer(rid, "first")  # the right one first; then a duplicate, a string form, an invented one
        answer(rid, "duplicate")
        answer(str(rid), "as a string")
        answer(987654321, "nobody's")
    elif name == "fork_and_exit":
        fork_grandchild(a["pidfile"])
        sys.stderr.write("hostile server: exiting, a grandchild holds stdout\n")
        sys.stderr.flush()
        os._exit(5)
    elif name == "fork_and_stay":
        fork_grandchild(a["pidfile"])
    else:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": "Unknown tool: " + name}})


def flood(a):
    """Never reads stdin again: floods requests, then sleeps."""
    big = "m" * a.get("bytes", 1 << 20)
    for k in range(a.get("count", 300)):
        if a.get("field", "method") == "id":
            send({"jsonrpc": "2.0", "id": big + str(k), "method": "ping"})
        else:
            send({"jsonrpc": "2.0", "id": k, "method": big})
    time.sleep(3600)


def main():
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        msg = json.loads(line)
        if "method" not in msg:  # a reply to one of our requests
            with replied:
                replies[msg.get("id")] = msg
                replied.notify_all()
            continue
        method = msg["method"]
        rid = msg.get("id")
        if method == "initialize":
            if never_init:
                continue
            send({"jsonrpc": "2.0", "id": rid, "result": {
                "protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                "serverInfo": {"name": "hostile", "version": "1"}}})
        elif method == "tools/list":
            if pages:
                k = int((msg.get("params") or {}).get("cursor") or 0)
                r = {"tools": [{"name": "t%d" % k, "description": "d" * page_bytes, "inputSchema": {"type": "object"}}]}
                if k + 1 < pages:
                    r["nextCursor"] = str(k + 1)
                send({"jsonrpc": "2.0", "id": rid, "result": r})
            else:
                send({"jsonrpc": "2.0", "id": rid, "result": {"tools": [
                    {"name": "echo", "inputSchema": {"type": "object"}}]}})
        elif method == "tools/call":
            p = msg["params"]
            if p["name"] == "flood":
                flood(p.get("arguments") or {})
            threading.Thread(target=call, args=(rid, p["name"], p.get("arguments") or {}), daemon=True).start()
        elif method == "ping":
            send({"jsonrpc": "2.0", "id": rid, "result": {}})
        elif rid is not None:
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "Method not found"}})


main()
