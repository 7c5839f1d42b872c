#!/usr/bin/env python3
"""A small misbehaving MCP server (stdio) for the fault tests of the tool_effects MCP client.

Usage: fake_server.py [--version V] [--stderr-lines N] [--die-on-start] [--garbage-on-start]

tools/list returns two pages (nextCursor). Each tool call runs in its own thread, so many are in flight.
Tools (arguments in brackets):
  echo [text]           readOnly: returns the text (text and structured content)
  slow [ms, text]       readOnly: sleeps ms, then echoes
  write [key, value]    idempotent write: stores value under key, returns the store size
  append [ms]           a plain (non-idempotent) write: sleeps ms, then answers
  fail                  answers isError: true with an explanation
  hang                  never answers
  crash [ms]            writes to stderr, then exits with status 3 after ms (default 0)
  garbage               writes a line that is not JSON
  huge [bytes]          writes a JSON line of that many bytes (a valid response, padded)
  wrong_id              answers with an id nobody asked for, then the right one
  ping_me               sends a ping request to the client, answers whether the pong came back
  ask_unknown           sends an unsupported request (sampling/createMessage), answers with the error code got
  notify                sends tools/list_changed, a log message and a progress notification, then answers
"""
import json
import sys
import threading
import time

out_lock = threading.Lock()
store = {}
store_lock = threading.Lock()
waiting = {}  # id of our request -> [event, response]
next_id = [0]
version = None
args = sys.argv[1:]
for i, a in enumerate(args):
    if a == "--version":
        version = args[i + 1]


def send(msg):
    data = json.dumps(msg) + "\n"
    with out_lock:
        sys.stdout.write(data)
        sys.stdout.flush()


def send_raw(text):
    with out_lock:
        sys.stdout.write(text)
        sys.stdout.flush()


def result(rid, text, structured=None, is_error=False):
    r = {"content": [{"type": "text", "text": text}]}
    if structured is not None:
        r["structuredContent"] = structured
    if is_error:
        r["isError"] = True
    send({"jsonrpc": "2.0", "id": rid, "result": r})


def ask(method, params):
    with out_lock:
        next_id[0] += 1
        sid = "srv-%d" % next_id[0]
    ev = threading.Event()
    waiting[sid] = [ev, None]
    send({"jsonrpc": "2.0", "id": sid, "method": method, "params": params})
    ev.wait(5)
    return waiting.pop(sid)[1]


TOOLS = [
    {"name": "echo", "annotations": {"readOnlyHint": True, "openWorldHint": False}, "inputSchema": {"type": "object"}},
    {"name": "slow", "annotations": {"readOnlyHint": True, "openWorldHint": False}, "inputSchema": {"type": "object"}},
    {"name": "write", "annotations": {"readOnlyHint": False, "destructiveHint": False, "idempotentHint": True,
                                      "openWorldHint": False}, "inputSchema": {"type": "object"}},
    {"name": "fail", "annotations": {"readOnlyHint": True}, "inputSchema": {"type": "object"}},
    {"name": "append", "annotations": {"readOnlyHint": False, "destructiveHint": False, "idempotentHint": False,
                                       "openWorldHint": False}, "inputSchema": {"type": "object"}},
    {"name": "hang", "annotations": {"readOnlyHint": True}, "inputSchema": {"type": "object"}},
    {"name": "crash", "inputSchema": {"type": "object"}},
    {"name": "garbage", "inputSchema": {"type": "object"}},
    {"name": "huge", "inputSchema": {"type": "object"}},
    {"name": "wrong_id", "annotations": {"readOnlyHint": True}, "inputSchema": {"type": "object"}},
    {"name": "ping_me", "annotations": {"readOnlyHint": True}, "inputSchema": {"type": "object"}},
    {"name": "ask_unknown", "annotations": {"readOnlyHint": True}, "inputSchema": {"type": "object"}},
    {"name": "notify", "annotations": {"readOnlyHint": True}, "inputSchema": {"type": "object"}},
]


def call(rid, name, a):
    if name == "echo":
        result(rid, a.get("text", ""), {"text": a.get("text", "")})
    elif name == "slow":
        time.sleep(a.get("ms", 100) / 1000.0)
        result(rid, a.get("text", ""), {"text": a.get("text", "")})
    elif name == "write":
        with store_lock:
            store[a.get("key")] = a.get("value")
            n = len(store)
        result(rid, "stored", {"size": n})
    elif name == "append":
        time.sleep(a.get("ms", 0) / 1000.0)
        result(rid, "appended")
    elif name == "fail":
        result(rid, "the fake tool failed on purpose", None, True)
    elif name == "hang":
        return
    elif name == "crash":
        time.sleep(a.get("ms", 0) / 1000.0)
        sys.stderr.write("fake server: crashing on purpose\n")
        sys.stderr.flush()
        import os
        os._exit(3)
    elif name == "garbage":
        send_raw("this is not JSON {\n")
    elif name == "huge":
        pad = "x" * int(a.get("bytes", 1 << 20))
        result(rid, pad)
    elif name == "wrong_id":
        send({"jsonrpc": "2.0", "id": 987654, "result": {"content": []}})
        send({"jsonrpc": "2.0", "id": "not-ours", "result": {"content": []}})
        result(rid, "right id")
    elif name == "ping_me":
        r = ask("ping", {})
        result(rid, "pong" if r is not None and r.get("result") == {} else "no pong: %r" % (r,))
    elif name == "ask_unknown":
        r = ask("sampling/createMessage", {"messages": []})
        code = r.get("error", {}).get("code") if r else None
        result(rid, str(code))
    elif name == "notify":
        send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        send({"jsonrpc": "2.0", "method": "notifications/message",
              "params": {"level": "info", "data": "hello from the fake"}})
        send({"jsonrpc": "2.0", "method": "notifications/progress",
              "params": {"progressToken": 1, "progress": 1, "total": 2}})
        result(rid, "notified")
    else:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": "Unknown tool: " + name}})


def main():
    sys.stderr.write("fake server: started\n")
    sys.stderr.flush()
    if "--die-on-start" in args:
        sys.stderr.write("fake server: dying on start\n")
        sys.exit(7)
    if "--garbage-on-start" in args:
        send_raw("Server listening on stdio (not JSON-RPC)\n")
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        msg = json.loads(line)
        if "method" not in msg:  # a response to one of our requests
            w = waiting.get(msg.get("id"))
            if w:
                w[1] = msg
                w[0].set()
            continue
        method = msg["method"]
        rid = msg.get("id")
        if method == "initialize":
            v = version or msg["params"]["protocolVersion"]
            send({"jsonrpc": "2.0", "id": rid, "result": {
                "protocolVersion": v, "capabilities": {"tools": {"listChanged": True}},
                "serverInfo": {"name": "fake", "version": "1"}}})
        elif method == "tools/list":
            cursor = (msg.get("params") or {}).get("cursor")
            if cursor is None:
                send({"jsonrpc": "2.0", "id": rid, "result": {"tools": TOOLS[:5], "nextCursor": "page2"}})
            else:
                send({"jsonrpc": "2.0", "id": rid, "result": {"tools": TOOLS[5:]}})
        elif method == "tools/call":
            p = msg["params"]
            threading.Thread(target=call, args=(rid, p["name"], p.get("arguments") or {}), daemon=True).start()
        elif method == "ping":
            send({"jsonrpc": "2.0", "id": rid, "result": {}})
        elif rid is not None:
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "Method not found"}})
        # notifications (initialized, cancelled) need nothing
    sys.stderr.write("fake server: stdin closed, exiting\n")


main()
