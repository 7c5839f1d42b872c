#!/usr/bin/env python3
"""A small MCP server over Streamable HTTP (specification 2025-11-25, basic/transports; and 2026-07-28,
basic/transports/streamable-http, with --era) for the tests of the tool_effects HTTP transport; standard
library only.

Usage: http_server.py --port-file FILE [--log FILE] [--sse] [--no-get] [--session-header NAME]
                      [--require-version] [--stateless] [--era legacy|modern|dual] [--supported V1,V2]
                      [--no-discover] [--probe-reply MODE] [--initialized-delay-ms N]

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
  --initialized-delay-ms N  answers the POST of notifications/initialized (its 202) only after N ms
  --era E              legacy (default): the 2025-11-25 server below. modern: 2026-07-28 only (schema/2026-07-28):
                       stateless, POST only (GET and DELETE 405), no session ids minted (an Mcp-Session-Id is
                       ignored); every request must carry MCP-Protocol-Version, Mcp-Method and (tools/call,
                       prompts/get, resources/read) Mcp-Name headers matching its body (Base64 sentinel decoded),
                       else 400 HeaderMismatch (-32020); _meta io.modelcontextprotocol/protocolVersion and
                       clientCapabilities, else 400 -32602; a version not --supported: 400
                       UnsupportedProtocolVersionError (-32022, data.supported); an unknown method: 404 -32601;
                       results carry resultType (list ones ttlMs and cacheScope) and _meta serverInfo; SSE events
                       have no ids (not resumable). dual: initialize selects the legacy server and its session, a
                       request with the modern _meta is served as modern.
  --supported V1,V2    the modern versions served (default 2026-07-28)
  --no-discover        modern: server/discover is unknown too (404 -32601), against the specification
  --storm-get          the GET stream (and a resumption of storm_stream) answers "retry: 0" and a blank line, no
                       message, and closes at once: a reconnect storm unless the client has a floor and backoff
  --unlist-regional    modern: from the second tools/list on, the tool regional is no longer listed (still served,
                       its headers no longer checked)
  --stray-session      modern: every result comes with an Mcp-Session-Id header all the same (a client must ignore it)
  --refuse-first       modern: the first request gets UnsupportedProtocolVersionError even if it names a supported
                       version (as the conformance suite's request-metadata scenario does)
  --listen MODE        modern: server/discover declares tools.listChanged, and subscriptions/listen (2026-07-28,
                       basic/patterns/subscriptions) is served: ok (an SSE stream: notifications/subscriptions/
                       acknowledged, then notifications/tools/list_changed whenever the tool add_tool (listed with
                       --listen only) was called, each
                       with _meta io.modelcontextprotocol/subscriptionId; open until the client leaves), fail (HTTP 500
                       every time), end (acknowledged, then the stream closes at once without a response)
  --probe-reply MODE   legacy: how server/discover (the probe of a dual-era client) is answered: session (default:
                       400 with a JSON-RPC error -32000 "missing Mcp-Session-Id", as the TypeScript SDK's server
                       does), 400-empty (400, no body), 404 (404 text), 405 (405 text), 200-error (200 with a
                       JSON-RPC error -32601, as a stateless legacy server does), 200-empty (an empty result, as the
                       conformance suite's servers answer any method they do not know)

Sessions: initialize creates one (Mcp-Session-Id); any other request without a known one gets 400 (missing) or
404 (unknown: expired). DELETE ends it. A GET stream (text/event-stream) carries the server's own messages.

Tools (arguments in brackets):
  echo [text]         the text (modern: after a notifications/message at level info when _meta asks for info or lower)
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
  storm_stream        an SSE stream of "id: storm-N", "retry: 0" and a blank line, no message, that closes; its
                      resumptions (GET with that Last-Event-ID) answer the same: the call never gets a response
  echo_headers        HTTP 400 text/plain whose body is every header of the request, "Name: value" per line (a
                      server quoting a credential back)
  echo_headers_rpc    the same as a JSON-RPC error in a 200: its message the headers as lines, its data an object of
                      them
Modern tools: the same (expire, ping_me and notify excepted) and
  écho [text]         echo under a name that is not ASCII (its Mcp-Name header is Base64-encoded)
  progress [text]     an SSE stream: a notifications/progress, then the text
  ask                 InputRequiredResult: an elicitation (input request "who"); answers "hello <name>" with the
                      retry's inputResponses
  drop_stream         an SSE stream that ends before the response (no event ids: nothing to resume)
  regional [region count dry where.zone query]  x-mcp-header on the first four: each Mcp-Param-* header must
                      match its argument (400 HeaderMismatch when one is missing or differs, or is sent for a
                      null or absent argument); answers them joined
  strict              always 400 HeaderMismatch (-32020), whatever the headers
  bad_number, bad_items, bad_duplicate, bad_token  listed with x-mcp-header annotations the specification forbids
                      (on a number; under items; Region twice, case-insensitively; not a token): a client over
                      HTTP must leave them out of its tools/list
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
        "stateless": False, "log": None, "port_file": None, "tls": None, "http10": False, "idle_close_ms": None,
        "era": "legacy", "supported": ["2026-07-28"], "no_discover": False, "probe_reply": "session",
        "initialized_delay_ms": 0, "refuse_first": False, "stray_session": False, "unlist_regional": False,
        "storm_get": False, "listen": None}
lists_served = [0]
tools_changed = threading.Condition()  # notified when add_tool changed the tool list
tools_version = [0]
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
    elif a == "--era":
        opts["era"] = args[i + 1]; i += 1
    elif a == "--supported":
        opts["supported"] = args[i + 1].split(","); i += 1
    elif a == "--storm-get":
        opts["storm_get"] = True
    elif a == "--unlist-regional":
        opts["unlist_regional"] = True
    elif a == "--stray-session":
        opts["stray_session"] = True
    elif a == "--refuse-first":
        opts["refuse_first"] = True
    elif a == "--listen":
        opts["listen"] = args[i + 1]; i += 1
    elif a == "--no-discover":
        opts["no_discover"] = True
    elif a == "--probe-reply":
        opts["probe_reply"] = args[i + 1]; i += 1
    elif a == "--initialized-delay-ms":
        opts["initialized_delay_ms"] = int(args[i + 1]); i += 1
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


PV = "io.modelcontextprotocol/protocolVersion"
CAPS = "io.modelcontextprotocol/clientCapabilities"
SERVER_META = {"io.modelcontextprotocol/serverInfo": {"name": "http-modern-server", "version": "1.0.0"}}
MODERN_TOOLS = [dict(t) for t in TOOLS if t["name"] not in ("expire", "ping_me", "notify")] + [
    {"name": n, "description": d, "inputSchema": {"type": "object", "properties": p}}
    for n, d, p in [("\u00e9cho", "echo under a name that is not ASCII", {"text": {"type": "string"}}),
                    ("progress", "a progress notification, then the text", {"text": {"type": "string"}}),
                    ("ask", "asks the user for a name (MRTR)", {}),
                    ("strict", "always refused with HeaderMismatch", {})]] + [
    # x-mcp-header (streamable-http "Custom Headers from Tool Parameters"): one valid tool, four invalid ones
    {"name": "regional", "description": "echoes its region", "inputSchema": {"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "count": {"type": "integer", "x-mcp-header": "Count"},
        "dry": {"type": "boolean", "x-mcp-header": "Dry-Run"},
        "where": {"type": "object", "properties": {"zone": {"type": "string", "x-mcp-header": "Zone"}}},
        "query": {"type": "string"}}}},
    {"name": "bad_number", "description": "x-mcp-header on a number", "inputSchema": {"type": "object",
        "properties": {"ratio": {"type": "number", "x-mcp-header": "Ratio"}}}},
    {"name": "bad_items", "description": "x-mcp-header under items", "inputSchema": {"type": "object",
        "properties": {"list": {"type": "array", "items": {"type": "string", "x-mcp-header": "Item"}}}}},
    {"name": "bad_duplicate", "description": "x-mcp-header twice, case-insensitively", "inputSchema": {
        "type": "object", "properties": {"a": {"type": "string", "x-mcp-header": "Region"},
                                         "b": {"type": "string", "x-mcp-header": "region"}}}},
    {"name": "bad_token", "description": "x-mcp-header that is not a token", "inputSchema": {"type": "object",
        "properties": {"a": {"type": "string", "x-mcp-header": "Re gion"}}}}]


ADD_TOOL = {"name": "add_tool", "description": "adds the tool added (a list change; with --listen)",
            "inputSchema": {"type": "object", "properties": {}}}
ADDED_TOOL = {"name": "added", "description": "listed once add_tool was called",
              "inputSchema": {"type": "object", "properties": {}}}


def listed_tools():
    if opts["listen"]:
        return MODERN_TOOLS + [ADD_TOOL] + ([ADDED_TOOL] if tools_version[0] > 0 else [])
    if opts["unlist_regional"] and lists_served[0] >= 2:
        return [t for t in MODERN_TOOLS if t["name"] != "regional"]
    return MODERN_TOOLS


def annotations(schema, path=()):
    """The (property path, x-mcp-header) pairs of an inputSchema, through properties alone."""
    out = []
    for k, sub in (schema.get("properties") or {}).items():
        if isinstance(sub, dict):
            if "x-mcp-header" in sub:
                out.append((path + (k,), sub["x-mcp-header"]))
            out += annotations(sub, path + (k,))
    return out


def header_value(v):
    """A header value of the 2026-07-28 binding, the Base64 sentinel decoded (None stays None)."""
    import base64
    if v is not None and v.startswith("=?base64?") and v.endswith("?=") and len(v) >= 10:
        return base64.b64decode(v[9:-2]).decode("utf-8")
    return v


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
             "accept": self.header("Accept"), "port": self.client_address[1],
             "mcp_method": self.header("Mcp-Method"), "mcp_name": self.header("Mcp-Name"),
             "mcp_params": sorted(k for k in self.headers.keys() if k.lower().startswith("mcp-param-"))})

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

    def sse_event(self, msg=None, retry=None, with_id=True):
        eid = next_event_id()
        out = "id: %s\n" % eid if with_id else ""
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
        if opts["era"] == "modern":
            return self.plain(405, b"2026-07-28: no sessions")
        sid = self.header("Mcp-Session-Id")
        with lock:
            found = sessions.pop(sid, None) if sid else None
        self.plain(200 if found else 404)

    def do_GET(self):
        self.record()
        if opts["no_get"] or opts["era"] == "modern":
            return self.plain(405, b"no GET stream")
        if "text/event-stream" not in (self.header("Accept") or ""):
            return self.plain(406, b"Accept must include text/event-stream")
        s = self.check_session()
        if s is None:
            return
        last = self.header("Last-Event-ID")
        self.sse_start()
        if opts["storm_get"] or (last or "").startswith("storm-"):
            self.wfile.write(("id: storm-%s\nretry: 0\n\n" % next_event_id()).encode())
            self.wfile.flush()
            return
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
        params = msg.get("params") if isinstance(msg, dict) and isinstance(msg.get("params"), dict) else {}
        meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else None
        if opts["era"] == "modern" or (opts["era"] == "dual" and meta is not None and PV in meta):
            return self.modern(msg, method, rid, params, meta)
        if method == "server/discover" and rid is not None and opts["probe_reply"] != "session":
            mode = opts["probe_reply"]
            if mode == "400-empty":
                return self.plain(400, b"")
            if mode in ("404", "405"):
                return self.plain(int(mode), b"not here")
            if mode == "200-empty":
                return self.json_reply({"jsonrpc": "2.0", "id": rid, "result": {}})
            if mode == "200-error":
                return self.json_reply({"jsonrpc": "2.0", "id": rid, "error": {
                    "code": -32601, "message": "Method not found"}})
        if method == "notifications/initialized" and opts["initialized_delay_ms"]:
            time.sleep(opts["initialized_delay_ms"] / 1000.0)
            log({"http": "202", "rpc": method})  # when the 202 goes out
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
        if name == "storm_stream":
            self.sse_start()
            self.wfile.write(("id: storm-%s\nretry: 0\n\n" % next_event_id()).encode())
            self.wfile.flush()
            return
        if name == "echo_headers":
            return self.plain(400, "".join("%s: %s\n" % (k, v) for k, v in self.headers.items()).encode())
        if name == "echo_headers_rpc":
            return self.answer({"jsonrpc": "2.0", "id": rid, "error": {
                "code": -32000, "message": "".join("%s: %s\n" % (k, v) for k, v in self.headers.items()),
                "data": {k: v for k, v in self.headers.items()}}})
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

    # 2026-07-28 (basic/transports/streamable-http): a stateless request, validated as the specification says.
    def modern_error(self, status, rid, code, message, data=None):
        err = {"code": code, "message": message}
        if data is not None:
            err["data"] = data
        self.plain(status, json.dumps({"jsonrpc": "2.0", "id": rid, "error": err}).encode(), "application/json")

    def modern_result(self, rid, result, sse=False, before=()):
        result = dict(result)
        result.setdefault("resultType", "complete")
        result["_meta"] = SERVER_META
        msg = {"jsonrpc": "2.0", "id": rid, "result": result}
        stray = {"Mcp-Session-Id": "stray-" + uuid.uuid4().hex} if opts["stray_session"] else {}
        if sse or opts["sse"] or before:
            self.sse_start(dict(stray, **{"X-Accel-Buffering": "no"}))
            for b in before:
                self.sse_event(b, with_id=False)
            self.sse_event(msg, with_id=False)
        else:
            self.json_reply(msg, stray)

    def modern(self, msg, method, rid, params, meta):
        if rid is None or method is None:  # 2026-07-28 defines no client notifications over HTTP: accepted, logged
            self.send_response(202)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        supported = opts["supported"]
        pv = self.header("MCP-Protocol-Version")
        if pv is None or self.header("Mcp-Method") is None:
            return self.modern_error(400, rid, -32020, "Header mismatch: MCP-Protocol-Version and Mcp-Method are "
                                     "required (this server speaks %s)" % ", ".join(supported))
        if self.header("Mcp-Method") != method:
            return self.modern_error(400, rid, -32020, "Header mismatch: Mcp-Method %r, body %r" % (
                self.header("Mcp-Method"), method))
        if method in ("tools/call", "prompts/get", "resources/read"):
            want = params.get("uri" if method == "resources/read" else "name")
            got = header_value(self.header("Mcp-Name"))
            if got != want:
                return self.modern_error(400, rid, -32020, "Header mismatch: Mcp-Name %r, body %r" % (got, want))
        if meta is None or not isinstance(meta.get(PV), str) or not isinstance(meta.get(CAPS), dict):
            return self.modern_error(400, rid, -32602, "Invalid params: _meta needs %s and %s" % (PV, CAPS))
        if pv != meta[PV]:
            return self.modern_error(400, rid, -32020, "Header mismatch: MCP-Protocol-Version %r, _meta %r" % (
                pv, meta[PV]))
        refuse = False
        if opts["refuse_first"]:
            with lock:
                refuse, opts["refuse_first"] = True, False
        if meta[PV] not in supported or refuse:
            return self.modern_error(400, rid, -32022, "Unsupported protocol version",
                                     {"supported": supported, "requested": meta[PV]})
        if method == "server/discover" and not opts["no_discover"]:
            return self.modern_result(rid, {
                "supportedVersions": supported + (["2025-11-25"] if opts["era"] == "dual" else []),
                "capabilities": {"tools": {"listChanged": True} if opts["listen"] else {}},
                "instructions": "a modern HTTP test server",
                "ttlMs": 0, "cacheScope": "public"})
        if method == "tools/list":
            with lock:
                lists_served[0] += 1
            return self.modern_result(rid, {"tools": listed_tools(), "ttlMs": 0, "cacheScope": "public"})
        if method == "subscriptions/listen" and opts["listen"]:
            return self.listen(rid, params)
        if method != "tools/call":
            return self.modern_error(404, rid, -32601, "Method not found: " + str(method))
        name = params.get("name")
        a = params.get("arguments") or {}
        text = lambda t: {"content": [{"type": "text", "text": t}]}
        tool = next((t for t in listed_tools() if t["name"] == name), None)
        for path, header in annotations((tool or {}).get("inputSchema") or {}):
            value = a
            for k in path:
                value = value.get(k) if isinstance(value, dict) else None
            got = header_value(self.header("Mcp-Param-" + header))
            if value is None:  # null or not in the arguments: the header MUST be omitted
                if got is not None:
                    return self.modern_error(400, rid, -32020, "Header mismatch: Mcp-Param-%s %r for a null or "
                                             "absent argument" % (header, got))
                continue
            want = ("true" if value else "false") if isinstance(value, bool) else str(value)
            if got != want:
                return self.modern_error(400, rid, -32020, "Header mismatch: Mcp-Param-%s %r, body %r" % (
                    header, got, want))
        if name == "strict":  # what no listing can mend
            return self.modern_error(400, rid, -32020, "Header mismatch: Mcp-Param-Secret is required")
        if name == "regional":
            return self.modern_result(rid, text("%s/%s/%s/%s" % (
                a.get("region"), a.get("count"), a.get("dry"), (a.get("where") or {}).get("zone"))))
        if name in ("echo", "\u00e9cho"):
            # 2026-07-28 logging: a notifications/message at level info before the result, only when the
            # request's _meta asks for info or a lower level (io.modelcontextprotocol/logLevel)
            levels = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
            level = meta.get("io.modelcontextprotocol/logLevel")
            before = [{"jsonrpc": "2.0", "method": "notifications/message", "params": {
                "level": "info", "logger": "http_server", "data": "echo asked at " + level}}] \
                if level in levels and levels.index(level) <= levels.index("info") else []
            return self.modern_result(rid, text(a.get("text", "")), before=before)
        if name == "add_tool" and opts["listen"]:
            with tools_changed:
                tools_version[0] += 1
                tools_changed.notify_all()
            return self.modern_result(rid, text("added"))
        if name == "slow":
            time.sleep(a.get("ms", 1000) / 1000.0)
            return self.modern_result(rid, text("slept"))
        if name == "progress":
            return self.modern_result(rid, text(a.get("text", "")), before=[{
                "jsonrpc": "2.0", "method": "notifications/progress",
                "params": {"progressToken": "none", "progress": 1, "total": 2}}])
        if name == "ask":
            responses = params.get("inputResponses")
            if isinstance(responses, dict) and "who" in responses and params.get("requestState") == "asked-1":
                content = (responses["who"] or {}).get("content") or {}
                return self.modern_result(rid, text("hello " + str(content.get("name"))))
            return self.modern_result(rid, {"resultType": "input_required", "requestState": "asked-1",
                                            "inputRequests": {"who": {"method": "elicitation/create", "params": {
                                                "mode": "form", "message": "Who are you?",
                                                "requestedSchema": {"type": "object", "properties": {
                                                    "name": {"type": "string"}}, "required": ["name"]}}}}})
        if name == "drop_stream":
            self.sse_start()
            self.sse_event(None, with_id=False)
            return  # the stream closes without the response
        if name == "status500":
            return self.plain(500, b"internal trouble")
        if name == "huge":
            return self.modern_result(rid, text("x" * int(a.get("bytes", 1000))))
        return self.modern_error(400, rid, -32602, "no tool " + str(name))

    # subscriptions/listen (--listen): acknowledged with the part of the filter served (toolsListChanged), then
    # a notifications/tools/list_changed per change of the tool list, until the client closes the stream.
    def listen(self, rid, params):
        if opts["listen"] == "fail":
            return self.plain(500, b"no subscriptions today")
        sub = {"io.modelcontextprotocol/subscriptionId": rid}
        wanted = (params.get("notifications") or {}) if isinstance(params, dict) else {}
        served = {"toolsListChanged": True} if wanted.get("toolsListChanged") is True else {}
        self.sse_start({"X-Accel-Buffering": "no"})
        self.sse_event({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                        "params": {"_meta": sub, "notifications": served}}, with_id=False)
        if opts["listen"] == "end":
            return
        seen = tools_version[0]
        try:
            while True:
                with tools_changed:
                    tools_changed.wait(0.2)
                    now = tools_version[0]
                if now != seen and served:
                    seen = now
                    self.sse_event({"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
                                    "params": {"_meta": sub}}, with_id=False)
                else:
                    self.wfile.write(b":\n\n")  # a keep-alive comment: fails once the client left
                    self.wfile.flush()
        except OSError:
            return

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
