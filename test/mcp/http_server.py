#!/usr/bin/env python3
"""A small MCP server over Streamable HTTP (specification 2025-11-25, basic/transports) for the tests of the
tool_effects HTTP transport; standard library only.

Usage: http_server.py --port-file FILE [--log FILE] [--sse] [--no-get] [--session-header NAME]
                      [--require-version] [--stateless]

  --port-file FILE     listens on 127.0.0.1 on a free port and writes the port to FILE once listening
  --log FILE           appends one JSON line per HTTP request: {"http", "rpc", "id", "session", "version",
                       "last_event_id", "accept"} (the tests read what the client sent)
  --sse                answers every request with an SSE stream (event ids, a priming event) instead of JSON
  --no-get             no GET stream: GET is 405
  --session-header N   sends the session id under the header N instead of Mcp-Session-Id (a control: a client
                       then never learns it, and every later request is refused with 400)
  --require-version    a request after initialize without MCP-Protocol-Version (or with another version than
                       the negotiated one) is refused with 400
  --stateless          no session ids at all
  --tls CERT KEY       https: serves TLS with the PEM certificate CERT and key KEY
  --http10             HTTP/1.0: one request per connection (default HTTP/1.1: JSON replies keep the
                       connection alive; SSE replies close it)
  --idle-close-ms N    closes a kept-alive connection after N ms without a request

Sessions: initialize creates one (Mcp-Session-Id); any other request without a known one gets 400 (missing) or
404 (unknown: expired). DELETE ends it. A GET stream (text/event-stream) carries the server's own messages.

Tools (arguments in brackets):
  echo [text]         the text
  slow [ms]           sleeps ms, then answers (the log shows the notifications/cancelled of a timeout)
  huge [bytes]        a text of that many bytes
  deep [depth]        structuredContent nested depth levels deep
  not_json            200 application/json whose body is not JSON
  garbage_http        answers bytes that are not HTTP, then closes
  reset               closes the connection with a TCP reset, no answer
  status500           HTTP 500 text/plain
  rpc_error_http      HTTP 400 with a JSON-RPC error object (id null)
  drop_stream         an SSE stream with a priming event (id, retry: 150) that closes before the response; the
                      response comes on the GET that resumes it with Last-Event-ID
  drop_stream_no_id   the same without an event id (a control: nothing to resume from)
  notify              sends a notifications/message on the GET stream, then answers
  ping_me             (with --sse) sends a ping request on the response stream, answers once the client replied
  expire              ends the session: the next request gets 404
"""
import json
import os
import queue
import socket
import struct
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

opts = {"sse": False, "no_get": False, "session_header": "Mcp-Session-Id", "require_version": False,
        "stateless": False, "log": None, "port_file": None, "tls": None, "http10": False, "idle_close_ms": None}
args = sys.argv[1:]
i = 0
while i < len(args):
    a = args[i]
    if a == "--port-file":
        opts["port_file"] = args[i + 1]; i += 1
    elif a == "--log":
        opts["log"] = args[i + 1]; i += 1
    elif a == "--session-header":
        opts["session_header"] = args[i + 1]; i += 1
    elif a == "--sse":
        opts["sse"] = True
    elif a == "--no-get":
        opts["no_get"] = True
    elif a == "--require-version":
        opts["require_version"] = True
    elif a == "--stateless":
        opts["stateless"] = True
    elif a == "--http10":
        opts["http10"] = True
    elif a == "--idle-close-ms":
        opts["idle_close_ms"] = int(args[i + 1]); i += 1
    elif a == "--tls":
        opts["tls"] = (args[i + 1], args[i + 2]); i += 2
    i += 1

lock = threading.Lock()
sessions = {}  # id -> {"version", "queue": Queue of messages for the GET stream}
resumable = {}  # event id of a dropped stream -> the response owed
replies = {}  # id of a request of ours -> [Event, response]
event_counter = [0]
log_lock = threading.Lock()

TOOLS = [{"name": n, "description": d, "inputSchema": {"type": "object", "properties": p},
          "annotations": {"readOnlyHint": n == "echo"}}
         for n, d, p in [("echo", "echoes text", {"text": {"type": "string"}}),
                         ("slow", "sleeps", {"ms": {"type": "integer"}}),
                         ("huge", "a big text", {"bytes": {"type": "integer"}}),
                         ("deep", "deep structured content", {"depth": {"type": "integer"}}),
                         ("not_json", "a body that is not JSON", {}), ("garbage_http", "not HTTP", {}),
                         ("reset", "a TCP reset", {}), ("status500", "HTTP 500", {}),
                         ("rpc_error_http", "HTTP 400 with a JSON-RPC error", {}),
                         ("drop_stream", "a stream to resume", {}),
                         ("drop_stream_no_id", "a stream that cannot be resumed", {}), ("notify", "a notification on GET", {}),
                         ("ping_me", "a ping request on the stream", {}), ("expire", "ends the session", {})]]


def next_event_id():
    with lock:
        event_counter[0] += 1
        return "e-%d" % event_counter[0]


def log(entry):
    if not opts["log"]:
        return
    with log_lock:
        with open(opts["log"], "a") as f:
            f.write(json.dumps(entry) + "\n")


def text_result(rid, text):
    return {"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": text}]}}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0" if opts["http10"] else "HTTP/1.1"
    timeout = opts["idle_close_ms"] / 1000.0 if opts["idle_close_ms"] else None

    def log_message(self, *a):
        pass

    def header(self, name):
        return self.headers.get(name)

    def record(self, rpc=None, rid=None):
        log({"http": self.command, "rpc": rpc, "id": rid, "session": self.header("Mcp-Session-Id"),
             "version": self.header("MCP-Protocol-Version"), "last_event_id": self.header("Last-Event-ID"),
             "accept": self.header("Accept"), "port": self.client_address[1]})

    def plain(self, status, body=b"", ctype="text/plain", extra=None):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def json_reply(self, msg, extra=None):
        self.plain(200, (msg if isinstance(msg, str) else json.dumps(msg)).encode(), "application/json", extra)

    def sse_start(self, extra=None):
        self.close_connection = True  # the stream ends with the connection
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.send_header("Cache-Control", "no-cache")
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.flush()

    def sse_event(self, msg=None, retry=None):
        eid = next_event_id()
        out = "id: %s\n" % eid
        if retry is not None:
            out += "retry: %d\n" % retry
        out += "data: %s\n\n" % ((msg if isinstance(msg, str) else json.dumps(msg)) if msg is not None else "")
        self.wfile.write(out.encode())
        self.wfile.flush()
        return eid

    # The session of this request: None after refusing it.
    def check_session(self):
        if opts["stateless"]:
            return {"version": None, "queue": queue.Queue()}
        sid = self.header("Mcp-Session-Id")
        if not sid:
            self.plain(400, json.dumps({"jsonrpc": "2.0", "id": None, "error": {
                "code": -32000, "message": "Bad Request: missing Mcp-Session-Id"}}).encode(), "application/json")
            return None
        with lock:
            s = sessions.get(sid)
        if s is None:
            self.plain(404, b"session not found")
            return None
        if opts["require_version"] and self.header("MCP-Protocol-Version") != s["version"]:
            self.plain(400, b"missing or wrong MCP-Protocol-Version")
            return None
        return s

    def do_DELETE(self):
        self.record()
        sid = self.header("Mcp-Session-Id")
        with lock:
            found = sessions.pop(sid, None) if sid else None
        self.plain(200 if found else 404)

    def do_GET(self):
        self.record()
        if opts["no_get"]:
            return self.plain(405, b"no GET stream")
        if "text/event-stream" not in (self.header("Accept") or ""):
            return self.plain(406, b"Accept must include text/event-stream")
        s = self.check_session()
        if s is None:
            return
        last = self.header("Last-Event-ID")
        self.sse_start()
        if last:
            with lock:
                owed = resumable.pop(last, None)
            if owed is not None:
                self.sse_event(owed)
            return  # the resumed stream ends once it delivered what it owed
        self.sse_event(None, retry=150)  # priming
        try:
            while True:
                try:
                    msg = s["queue"].get(timeout=0.2)
                except queue.Empty:
                    with lock:
                        if s not in sessions.values() and not opts["stateless"]:
                            return
                    continue
                self.sse_event(msg)
        except (BrokenPipeError, ConnectionResetError):
            return

    def do_POST(self):
        length = int(self.header("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            msg = json.loads(raw)
        except ValueError:
            self.record()
            return self.plain(400, b"not JSON")
        method = msg.get("method") if isinstance(msg, dict) else None
        rid = msg.get("id") if isinstance(msg, dict) else None
        self.record(method, rid)
        if "application/json" not in (self.header("Accept") or "") or \
                "text/event-stream" not in (self.header("Accept") or ""):
            return self.plain(406, b"Accept must list application/json and text/event-stream")
        if method == "initialize":
            version = msg["params"]["protocolVersion"]
            extra = {}
            if not opts["stateless"]:
                sid = uuid.uuid4().hex
                with lock:
                    sessions[sid] = {"version": version, "queue": queue.Queue()}
                extra[opts["session_header"]] = sid
            result = {"jsonrpc": "2.0", "id": rid, "result": {
                "protocolVersion": version, "capabilities": {"tools": {"listChanged": True}},
                "serverInfo": {"name": "http-test-server", "version": "1.0.0"}}}
            if opts["sse"]:
                self.sse_start(extra)
                self.sse_event(None)
                self.sse_event(result)
                return
            return self.json_reply(result, extra)
        s = self.check_session()
        if s is None:
            return
        if method is None:  # a response (to ping_me) or a notification
            if rid is not None:
                with lock:
                    w = replies.get(rid)
                if w:
                    w[1] = msg
                    w[0].set()
            self.send_response(202)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if rid is None:  # a notification
            self.send_response(202)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if method == "tools/list":
            return self.answer({"jsonrpc": "2.0", "id": rid, "result": {"tools": TOOLS}})
        if method == "ping":
            return self.answer({"jsonrpc": "2.0", "id": rid, "result": {}})
        if method != "tools/call":
            return self.answer({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "no " + method}})
        name = msg["params"]["name"]
        a = msg["params"].get("arguments") or {}
        if name == "echo":
            return self.answer(text_result(rid, a.get("text", "")))
        if name == "slow":
            time.sleep(a.get("ms", 1000) / 1000.0)
            return self.answer(text_result(rid, "slept"))
        if name == "huge":
            return self.answer(text_result(rid, "x" * int(a.get("bytes", 1000))))
        if name == "deep":  # written by hand: json.dumps would recurse
            d = int(a.get("depth", 10))
            r = json.dumps(text_result(rid, "deep"))[:-2] + ', "structuredContent": {"v": ' + "[" * d + "1" + \
                "]" * d + "}}}"
            return self.answer(r)
        if name == "not_json":
            return self.plain(200, b"this is not json {", "application/json")
        if name == "garbage_http":
            self.close_connection = True
            self.wfile.write(b"NOT HTTP AT ALL\r\n\r\n")
            self.wfile.flush()
            self.close_connection = True
            return
        if name == "reset":
            self.close_connection = True
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
            return
        if name == "status500":
            return self.plain(500, b"internal trouble")
        if name == "rpc_error_http":
            return self.plain(400, json.dumps({"jsonrpc": "2.0", "id": None, "error": {
                "code": -32602, "message": "refused at the HTTP layer"}}).encode(), "application/json")
        if name == "drop_stream":
            self.sse_start()
            eid = self.sse_event(None, retry=150)
            with lock:
                resumable[eid] = text_result(rid, "resumed")
            return  # the stream closes without the response
        if name == "drop_stream_no_id":
            self.sse_start()
            self.wfile.write(b"retry: 150\ndata: \n\n")
            self.wfile.flush()
            return
        if name == "notify":
            s["queue"].put({"jsonrpc": "2.0", "method": "notifications/message",
                            "params": {"level": "info", "data": "from the GET stream"}})
            return self.answer(text_result(rid, "queued"))
        if name == "ping_me":
            self.sse_start()
            pid = "srv-" + uuid.uuid4().hex[:8]
            w = [threading.Event(), None]
            with lock:
                replies[pid] = w
            self.sse_event({"jsonrpc": "2.0", "id": pid, "method": "ping"})
            got = w[0].wait(10)
            self.sse_event(text_result(rid, "pong" if got and "result" in (w[1] or {}) else "no pong"))
            return
        if name == "expire":
            with lock:
                for k in [k for k, v in sessions.items() if v is s]:
                    del sessions[k]
            return self.answer(text_result(rid, "expired"))
        return self.answer({"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": "no tool " + name}})

    def answer(self, msg):
        if opts["sse"]:
            self.sse_start()
            self.sse_event(None, retry=150)
            self.sse_event(msg)
        else:
            self.json_reply(msg)


class Server(ThreadingHTTPServer):
    daemon_threads = True


server = Server(("127.0.0.1", 0), Handler)
if opts["tls"]:
    import ssl
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(*opts["tls"])
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
if opts["port_file"]:
    tmp = opts["port_file"] + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(tmp, opts["port_file"])
server.serve_forever()
