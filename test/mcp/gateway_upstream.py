#!/usr/bin/env python3
"""An MCP server (stdio, standard library only) for the gateway tests (test/unit/gateway_*.cpp): tools whose
effects it records, one line each, in an effects log, so that a test counts what really happened upstream.

Usage: gateway_upstream.py --log FILE [--name NAME] [--started FILE]
  --started FILE   appends the server's pid to FILE when it starts (the tests count starts)

Tools (arguments in brackets; the annotations are what the server claims, honest or not):
  exec [cmd]          claims readOnlyHint: true (a lie, "to enable parallel dispatch"); records "exec <cmd>"
  append [text, ms]   a plain write (not idempotent, not destructive); sleeps ms, then records "append <text>"
  delete [item]       destructive and idempotent; records "delete <item>"
  read [item]         read-only (honest); records nothing, answers how many lines the log has
  die_once [marker]   exits the process without answering unless the marker file exists (it creates it first):
                      the first call kills the server, a call after the restart answers "survived"
Each call runs in its own thread; at the end of input the server finishes the calls under way, then exits.
"""
import json
import os
import sys
import threading
import time

args = sys.argv[1:]
log_path = args[args.index("--log") + 1] if "--log" in args else os.devnull
name = args[args.index("--name") + 1] if "--name" in args else "upstream"
if "--started" in args:
    with open(args[args.index("--started") + 1], "a") as f:
        f.write(str(os.getpid()) + "\n")
out_lock = threading.Lock()
log_lock = threading.Lock()

TOOLS = [
    {"name": "exec", "description": "Runs a command.",
     "inputSchema": {"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]},
     "annotations": {"title": "Execute", "readOnlyHint": True}},
    {"name": "append", "description": "Appends a line.",
     "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}, "ms": {"type": "integer"}}},
     "annotations": {"readOnlyHint": False, "destructiveHint": False, "idempotentHint": False, "openWorldHint": False}},
    {"name": "delete", "description": "Deletes an item.",
     "inputSchema": {"type": "object", "properties": {"item": {"type": "string"}}, "required": ["item"]},
     "annotations": {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": True, "openWorldHint": False}},
    {"name": "read", "description": "Reads an item.",
     "inputSchema": {"type": "object", "properties": {"item": {"type": "string"}}},
     "annotations": {"readOnlyHint": True, "openWorldHint": False}},
    {"name": "die_once", "description": "Dies the first time.", "inputSchema": {"type": "object"},
     "annotations": {"readOnlyHint": True, "openWorldHint": False}},
]


def send(msg):
    line = json.dumps(msg) + "\n"
    with out_lock:
        sys.stdout.write(line)
        sys.stdout.flush()


def record(text):
    with log_lock:
        with open(log_path, "a") as f:
            f.write(text + "\n")


def lines():
    try:
        with open(log_path) as f:
            return sum(1 for _ in f)
    except OSError:
        return 0


def text_result(text):
    return {"content": [{"type": "text", "text": text}]}


def call(msg_id, params):
    tool = params.get("name")
    a = params.get("arguments") or {}
    if tool == "exec":
        record("exec " + str(a.get("cmd")))
        result = text_result("ran " + str(a.get("cmd")))
    elif tool == "append":
        time.sleep(int(a.get("ms", 0)) / 1000.0)
        record("append " + str(a.get("text")))
        result = text_result("appended")
    elif tool == "delete":
        record("delete " + str(a.get("item")))
        result = text_result("deleted")
    elif tool == "read":
        result = {"content": [{"type": "text", "text": str(lines())}], "structuredContent": {"lines": lines()}}
    elif tool == "die_once":
        marker = str(a.get("marker"))
        if not os.path.exists(marker):
            open(marker, "w").close()
            os._exit(3)
        result = text_result("survived")
    else:
        send({"jsonrpc": "2.0", "id": msg_id, "error": {"code": -32602, "message": "Unknown tool: " + str(tool)}})
        return
    send({"jsonrpc": "2.0", "id": msg_id, "result": result})


def main():
    workers = []
    for line in sys.stdin:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        method, msg_id = msg.get("method"), msg.get("id")
        if msg_id is None:
            continue  # notifications
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": msg_id, "result": {
                "protocolVersion": msg.get("params", {}).get("protocolVersion", "2025-06-18"),
                "capabilities": {"tools": {}}, "serverInfo": {"name": name, "version": "1"}}})
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": msg_id, "result": {"tools": TOOLS}})
        elif method == "tools/call":
            t = threading.Thread(target=call, args=(msg_id, msg.get("params") or {}))
            t.start()
            workers.append(t)
        elif method == "ping":
            send({"jsonrpc": "2.0", "id": msg_id, "result": {}})
        else:
            send({"jsonrpc": "2.0", "id": msg_id, "error": {"code": -32601, "message": "Method not found"}})
    for t in workers:
        t.join()


main()
