#!/usr/bin/env python3
"""A small misbehaving MCP server (stdio) for the fault tests of the tool_effects MCP client.

Usage: fake_server.py [--version V] [--stderr-lines N] [--die-on-start] [--garbage-on-start]
                      [--era legacy|modern|dual] [--supported V1,V2,...] [--silent-probe] [--log FILE]

Eras (docs/mcp.md, "Protocol versions"):
  legacy (default)  the initialize handshake; answers initialize with --version (or the version offered). What it
                    sends follows the negotiated version: no tool annotations before 2025-03-26, no
                    structuredContent (nor outputSchema, title) before 2025-06-18. Unknown requests: -32601;
                    with --silent-probe, server/discover goes unanswered (a legacy server that ignores it).
  modern            2026-07-28 only (schema/2026-07-28): no initialize (refused, naming the versions), no ping;
                    server/discover; every request must carry _meta io.modelcontextprotocol/protocolVersion and
                    clientCapabilities (else -32602) with a supported version (else -32022 UnsupportedProtocolVersion
                    listing them); results carry resultType and _meta serverInfo; lists carry ttlMs and cacheScope.
  --listen          modern: server/discover declares tools.listChanged and subscriptions/listen is served (2026-07-28,
                    basic/patterns/subscriptions): notifications/subscriptions/acknowledged at once, no response (the
                    stream stays open); the tool change_tools sends notifications/tools/list_changed to every listen,
                    each with _meta io.modelcontextprotocol/subscriptionId
  dual              both: initialize selects legacy semantics, a request with the modern _meta is served modern.
  --supported       the versions the modern side supports (default 2026-07-28).
  --log FILE        appends every request line received to FILE (the tests read what was sent).

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
  meta                  readOnly: answers with the params._meta it received (structured content)
  needs_input           modern: answers resultType input_required (an elicitation the client cannot give)
  odd_result            modern: answers resultType "partial" (unknown to the specification)
Client capabilities (docs/mcp.md "Client capabilities"; with --caps they are also listed by tools/list):
  elicit [params, wait]     sends elicitation/create with params (default: the SEP-1034 conformance schema, every
                            field optional with a default), answers with the JSON-RPC response it got (structured)
  elicit_big [properties, enum]  the same with a schema of that many properties / one enum of that many values
  elicit_deep [depth]       the same with a schema nested that deep (past the client's depth limit)
  sample [params]           sends sampling/createMessage (default: one user message, maxTokens 100)
  roots                     sends roots/list
  flood [method, count, params, wait]  sends count requests at once, answers with every response (in order)
  cancel_elicit [ms]        sends elicitation/create, then notifications/cancelled for it after ms; answers with
                            whatever response came within 1.5 s (none expected)
  caps                      answers with the capabilities initialize declared and the roots/list_changed count
  mrtr [kind]               modern: answers InputRequiredResult (elicit, sample, roots, all: those input requests;
                            bad_schema: a nested property; forever: asks again on every retry) with requestState
                            "opaque-<n>"; the retry (inputResponses) is answered with what it carried
  (modern: resources/list answers an InputRequiredResult, which the specification does not allow there)
  url_required [data]       answers URLElicitationRequiredError (-32042) with that data
  complete [ids]            sends notifications/elicitation/complete for each id, then a log message, then answers
  progress [n]              sends n notifications/progress with the request's _meta.progressToken (if any), then
                            a late one 200 ms (late_ms) after answering; answers with the token it got
"""
import json
import select
import sys
import threading
import time

out_lock = threading.Lock()
store = {}
store_lock = threading.Lock()
waiting = {}  # id of our request -> [event, response]
next_id = [0]
client_caps = [None]  # the capabilities initialize declared
roots_changed = [0]  # notifications/roots/list_changed received
version = None
era = "legacy"
supported = ["2026-07-28"]
log_file = None
negotiated = [None]  # the legacy version initialize settled on
args = sys.argv[1:]
for i, a in enumerate(args):
    if a == "--version":
        version = args[i + 1]
    elif a == "--era":
        era = args[i + 1]
    elif a == "--supported":
        supported = args[i + 1].split(",")
    elif a == "--log":
        log_file = args[i + 1]
PV = "io.modelcontextprotocol/protocolVersion"
CAPS = "io.modelcontextprotocol/clientCapabilities"
SERVER_META = {"io.modelcontextprotocol/serverInfo": {"name": "fake-modern", "version": "1"}}


def send(msg):
    data = json.dumps(msg) + "\n"
    with out_lock:
        sys.stdout.write(data)
        sys.stdout.flush()


def send_raw(text):
    with out_lock:
        sys.stdout.write(text)
        sys.stdout.flush()


def legacy_at_least(v):
    """Whether the legacy version negotiated is v or newer (modern requests: always)."""
    return negotiated[0] is None or negotiated[0] >= v


modern_ids = set()  # ids of the requests being served modern
listen_ids = []  # ids of the subscriptions/listen requests open (--listen)


def reply(rid, r):
    if rid in modern_ids:
        r = dict(r)
        r["resultType"] = r.get("resultType", "complete")
        r["_meta"] = dict(SERVER_META)
    send({"jsonrpc": "2.0", "id": rid, "result": r})


def result(rid, text, structured=None, is_error=False):
    r = {"content": [{"type": "text", "text": text}]}
    if structured is not None and legacy_at_least("2025-06-18"):
        r["structuredContent"] = structured
    if is_error:
        r["isError"] = True
    reply(rid, r)


def error(rid, code, message, data=None):
    e = {"code": code, "message": message}
    if data is not None:
        e["data"] = data
    send({"jsonrpc": "2.0", "id": rid, "error": e})


def new_sid():
    with out_lock:
        next_id[0] += 1
        return "srv-%d" % next_id[0]


def ask(method, params, wait=5, raw_params=None):
    sid = new_sid()
    ev = threading.Event()
    waiting[sid] = [ev, None]
    if raw_params is None:
        send({"jsonrpc": "2.0", "id": sid, "method": method, "params": params})
    else:
        send_raw('{"jsonrpc": "2.0", "id": "%s", "method": "%s", "params": %s}\n' % (sid, method, raw_params))
    ev.wait(wait)
    return waiting.pop(sid)[1]


SEP1034_SCHEMA = {"type": "object", "properties": {
    "name": {"type": "string", "description": "User name", "default": "John Doe"},
    "age": {"type": "integer", "description": "User age", "default": 30},
    "score": {"type": "number", "description": "User score", "default": 95.5},
    "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
    "verified": {"type": "boolean", "default": True}}, "required": []}


def answered(rid, r):
    result(rid, json.dumps(r), {"response": r})


def flood(method, count, params, wait):
    sids = [new_sid() for _ in range(count)]
    events = []
    for sid in sids:
        ev = threading.Event()
        waiting[sid] = [ev, None]
        events.append(ev)
    for sid in sids:
        send({"jsonrpc": "2.0", "id": sid, "method": method, "params": params})
    deadline = time.time() + wait
    for ev in events:
        ev.wait(max(0, deadline - time.time()))
    return [waiting.pop(sid)[1] for sid in sids]


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
if era != "legacy":  # (the legacy tool list stays as the other tests count it)
    TOOLS += [
        {"name": "meta", "title": "What the client sent", "annotations": {"readOnlyHint": True},
         "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}},
        {"name": "needs_input", "inputSchema": {"type": "object"}},
        {"name": "odd_result", "inputSchema": {"type": "object"}},
    ]
if "--caps" in args:
    TOOLS += [{"name": n, "annotations": {"readOnlyHint": True, "openWorldHint": False}, "inputSchema": {"type": "object"}}
              for n in ("elicit", "sample", "roots", "caps", "progress")]


def tools_for_version(tools):
    """The tools as a server of the negotiated version describes them."""
    out = []
    for t in tools:
        t = dict(t)
        if not legacy_at_least("2025-03-26"):
            t.pop("annotations", None)
        if not legacy_at_least("2025-06-18"):
            t.pop("outputSchema", None)
            t.pop("title", None)
        out.append(t)
    return out


def mrtr(rid, a, meta, params):
    """modern: input through InputRequiredResult (MRTR); answers with what the retry carried."""
    kind = a.get("kind", "all")
    responses = params.get("inputResponses")
    state = params.get("requestState")
    if responses is not None and kind != "forever":
        result(rid, "mrtr", {"inputResponses": responses, "requestState": state,
                             "clientCapabilities": (meta or {}).get(CAPS)})
        return
    reqs = {}
    if kind in ("elicit", "all", "forever"):
        reqs["form"] = {"method": "elicitation/create",
                        "params": {"mode": "form", "message": "Sure?", "requestedSchema": SEP1034_SCHEMA}}
    if kind in ("sample", "all"):
        reqs["model"] = {"method": "sampling/createMessage", "params": {
            "messages": [{"role": "user", "content": {"type": "text", "text": "capital of France?"}}], "maxTokens": 10}}
    if kind in ("roots", "all"):
        reqs["dirs"] = {"method": "roots/list", "params": {}}
    if kind == "bad_schema":
        reqs["form"] = {"method": "elicitation/create", "params": {
            "message": "m", "requestedSchema": {"type": "object", "properties": {"x": {"type": "object"}}}}}
    reply(rid, {"resultType": "input_required", "inputRequests": reqs,
                "requestState": "opaque-%d" % len(responses or {})})


def call(rid, name, a, meta=None, params=None):
    if name == "mrtr":
        mrtr(rid, a, meta, params or {})
    elif name == "elicit":
        p = a.get("params", {"message": "Test client default value handling", "requestedSchema": SEP1034_SCHEMA})
        answered(rid, ask("elicitation/create", p, a.get("wait", 5)))
    elif name == "elicit_big":
        n, m = a.get("properties", 0), a.get("enum", 0)
        props = {"p%d" % i: {"type": "string", "default": "x"} for i in range(n)}
        if m:
            props["choice"] = {"type": "string", "enum": ["v%d" % i for i in range(m)], "default": "v0"}
        answered(rid, ask("elicitation/create", {"message": "big", "requestedSchema": {"type": "object",
                                                                                         "properties": props}}))
    elif name == "elicit_deep":
        d = a.get("depth", 100)
        raw = '{"message": "deep", "requestedSchema": {"type": "object", "properties": {"x": %s}}}' % (
            "[" * d + "]" * d)
        answered(rid, ask("elicitation/create", None, 5, raw))
    elif name == "sample":
        p = a.get("params", {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
                             "maxTokens": 100})
        answered(rid, ask("sampling/createMessage", p, a.get("wait", 5)))
    elif name == "roots":
        answered(rid, ask("roots/list", {}))
    elif name == "flood":
        rs = flood(a.get("method", "elicitation/create"), a.get("count", 10),
                   a.get("params", {"message": "m", "requestedSchema": SEP1034_SCHEMA}), a.get("wait", 5))
        result(rid, "flood", {"responses": rs})
    elif name == "cancel_elicit":
        sid = new_sid()
        ev = threading.Event()
        waiting[sid] = [ev, None]
        send({"jsonrpc": "2.0", "id": sid, "method": "elicitation/create",
              "params": {"message": "m", "requestedSchema": SEP1034_SCHEMA}})
        time.sleep(a.get("ms", 100) / 1000.0)
        send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": sid, "reason": "test"}})
        ev.wait(1.5)
        answered(rid, waiting.pop(sid)[1])
    elif name == "caps":
        result(rid, "caps", {"capabilities": client_caps[0], "roots_changed": roots_changed[0]})
    elif name == "progress":
        token = (meta or {}).get("progressToken")
        n = a.get("n", 3)
        if token is not None:
            for i in range(n):
                send({"jsonrpc": "2.0", "method": "notifications/progress",
                      "params": {"progressToken": token, "progress": i + 1, "total": n, "message": "step %d" % (i + 1)}})
        result(rid, "progress", {"token": token})
        if token is not None:  # late (against the specification): the client must drop it
            time.sleep(a.get("late_ms", 200) / 1000.0)
            send({"jsonrpc": "2.0", "method": "notifications/progress",
                  "params": {"progressToken": token, "progress": n + 1, "total": n}})
    elif name == "meta":
        result(rid, "meta", meta if meta is not None else {})
    elif name == "needs_input":
        reply(rid, {"resultType": "input_required",
                    "inputRequests": {"confirm": {"method": "elicitation/create",
                                                  "params": {"mode": "form", "message": "Sure?",
                                                             "requestedSchema": {"type": "object"}}}}})
    elif name == "odd_result":
        reply(rid, {"resultType": "partial", "content": []})
    elif name == "echo":
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
    elif name == "url_required":
        error(rid, -32042, "This request requires more information.", a.get("data"))
    elif name == "complete":
        for i in a.get("ids", []):
            send({"jsonrpc": "2.0", "method": "notifications/elicitation/complete", "params": {"elicitationId": i}})
        send({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "completed"}})
        result(rid, "completed")
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
        # Dies before it answers anything, having said why on stderr. It waits until the client has written its
        # first request (unread) so that the client learns of the death from the pipes closing, whatever the
        # scheduling: a client that writes only after the exit gets EPIPE, and its error then lacks the stderr
        # line (the client's write path quotes stderr without waiting for it: a known gap, see
        # docs/mcp-client.md, "Faults and what each becomes").
        sys.stderr.write("fake server: dying on start\n")
        sys.stderr.flush()
        select.select([sys.stdin], [], [], 10)
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
        if log_file:
            with open(log_file, "a") as f:
                f.write(line + "\n")
        method = msg["method"]
        rid = msg.get("id")
        params = msg.get("params") or {}
        meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else None
        modern = era in ("modern", "dual") and meta is not None and PV in meta
        if rid is not None and era == "modern" and not method.startswith("notifications/"):
            # every request is modern: the required _meta fields, a supported version
            if method == "initialize":
                error(rid, -32601, "initialize is not supported: this server speaks only " + ", ".join(supported))
                continue
            if meta is None or not isinstance(meta.get(PV), str) or not isinstance(meta.get(CAPS), dict):
                error(rid, -32602, "Invalid params: _meta needs %s and %s" % (PV, CAPS))
                continue
        if modern and rid is not None:
            if meta.get(PV) not in supported:
                error(rid, -32022, "Unsupported protocol version",
                      {"supported": supported, "requested": meta.get(PV)})
                continue
            modern_ids.add(rid)
        if method == "server/discover" and (modern or era == "modern"):
            reply(rid, {"supportedVersions": supported + (["2025-11-25"] if era == "dual" else []),
                        "capabilities": {"tools": {"listChanged": True} if "--listen" in args else {}},
                        "instructions": "a fake modern server",
                        "ttlMs": 0, "cacheScope": "public"})
        elif method == "server/discover" and "--silent-probe" in args:
            pass  # a legacy server that ignores what it does not know before initialize
        elif method == "initialize":
            v = version or params["protocolVersion"]
            client_caps[0] = params.get("capabilities")
            negotiated[0] = v
            send({"jsonrpc": "2.0", "id": rid, "result": {
                "protocolVersion": v, "capabilities": {"tools": {"listChanged": True}},
                "serverInfo": {"name": "fake", "version": "1"}}})
        elif method == "tools/list":
            cursor = params.get("cursor")
            page = {"tools": tools_for_version(TOOLS[:5] if cursor is None else TOOLS[5:])}
            if cursor is None:
                page["nextCursor"] = "page2"
            if modern:
                page.update({"ttlMs": 0, "cacheScope": "public"})
            reply(rid, page)
        elif method == "subscriptions/listen" and modern and "--listen" in args:
            listen_ids.append(rid)
            wanted = params.get("notifications") or {}
            send({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged", "params": {
                "_meta": {"io.modelcontextprotocol/subscriptionId": rid},
                "notifications": {"toolsListChanged": True} if wanted.get("toolsListChanged") is True else {}}})
        elif method == "tools/call" and params.get("name") == "change_tools" and listen_ids:
            for sid in listen_ids:
                send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
                      "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": sid}}})
            result(rid, "changed")
        elif method == "tools/call":
            threading.Thread(target=call, args=(rid, params["name"], params.get("arguments") or {}, meta, params),
                             daemon=True).start()
        elif method == "resources/list" and modern:  # against the specification: MRTR only on calls and reads
            reply(rid, {"resultType": "input_required", "inputRequests": {
                "dirs": {"method": "roots/list", "params": {}}}})
        elif method == "ping" and not modern:
            send({"jsonrpc": "2.0", "id": rid, "result": {}})
        elif rid is not None:
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "Method not found"}})
        elif method == "notifications/roots/list_changed":
            roots_changed[0] += 1
        # other notifications (initialized, cancelled) need nothing
    sys.stderr.write("fake server: stdin closed, exiting\n")


main()
