#!/usr/bin/env python3
"""An OAuth 2.1 authorization server and a protected MCP server (Streamable HTTP, JSON replies, no sessions) on
one port, for the tests of the tool_effects OAuth client (<tool_effects/mcp/oauth.hpp>); standard library only.

Usage: oauth_server.py --port-file FILE --log FILE [options]

  --port-file FILE        listens on 127.0.0.1 on a free port, writes the port to FILE once listening
  --log FILE              one JSON line per request, written before the answer: {"method", "path", "query",
                          "form", "json", "authorization", "sent"} ("sent": the body answered, up to 64 KiB)
  --as-path P             the authorization server's issuer path (default /as: issuer http://127.0.0.1:PORT/as);
                          "" puts it at the origin
  --prm-path P            where the protected resource metadata is (default /.well-known/oauth-protected-resource/mcp)
  --no-prm-in-header      the 401's WWW-Authenticate has no resource_metadata
  --no-prm                no protected resource metadata at all (2025-03-26)
  --as-metadata KIND      oauth (default: RFC 8414 path-inserted), openid (path-appended OpenID), none
  --auth-methods M        token_endpoint_auth_methods_supported, comma-separated (default none); registration
                          answers the first, with a secret unless it is none
  --no-registration       no registration endpoint
  --cimd                  the metadata says client_id_metadata_document_supported
  --prereg ID:SECRET      a pre-registered client (client_secret_basic or _post)
  --iss MODE              the redirect carries iss: none (default), correct, wrong
  --iss-supported         the metadata says authorization_response_iss_parameter_supported
  --expires-in N          access tokens expire after N seconds (default 3600)
  --refresh               the token endpoint issues refresh tokens
  --www-scope S           the 401 names scope S
  --scopes-supported S    the resource metadata's scopes_supported (space-separated)
  --call-scope S          tools/call needs every scope of S, else 403 insufficient_scope naming S
  --always-403            every authorized request gets 403 insufficient_scope
  --as-url URL            the resource metadata names this authorization server (another process, an address
                          the client must not fetch, ...) instead of this one's
  --prm-as-file FILE      the resource metadata names the issuer path in FILE (re-read at each request; "/as" or
                          "/other-as"), else --as-path. A second authorization server, issuer /other-as, is always
                          served; clients, codes and refresh tokens of one are unknown to the other
  --grant-only S          the token endpoint grants only the requested scopes that are in S (space-separated)
  --hostile MODE          prm_oversize (1 MiB of metadata), prm_wrong_type (authorization_servers: 5),
                          as_wrong_type (token_endpoint: 42), token_no_type (no token_type),
                          token_crlf (an access token with CR LF and a header after it),
                          echo_secrets (the token endpoint refuses, quoting the code, the verifier and the secret),
                          echo_request (the token endpoint refuses, quoting the Authorization header and the form
                          from client_secret= on, as received), token_type_echo (a token response whose
                          token_type is its new access token), issuer_slash (the metadata's issuer has a trailing
                          slash), issuer_elsewhere (the metadata's issuer is at another origin), shell_endpoint (an authorization_endpoint with $(...) in it), http_authorize (an
                          authorization_endpoint at http://auth.example.invalid)
  --revoke-after M        once the MCP message of method M (initialize, notifications/initialized) is answered,
                          every access token issued so far is revoked (the next request gets a 401)
  --get-stream            GET /mcp opens an event stream (one notifications/tools/list_changed event, then the
                          end) for a valid token, 401 otherwise (default: 405)
  --introspection-client ID:SECRET
                          serves RFC 7662 token introspection at <issuer>/introspect (POST, form token=...; the
                          client authenticates with client_secret_basic or client_secret_post as ID:SECRET, else
                          401 invalid_client), named introspection_endpoint in the metadata. A token issued by that
                          authorization server and unexpired is {"active": true, "sub", "client_id", "scope", "aud",
                          "iss", "exp", "iat", "token_type": "Bearer"}; any other (unknown, expired, revoked,
                          another authorization server's) is {"active": false}. `aud` is the RFC 8707 resource of
                          the authorization and token requests (absent when they named none), `sub` --subject
  --subject S             the user every grant is for (default test-user)
  --always-403 makes each 403 name a new scope (mcp:admin-1, -2, ...), so that only the client's limit stops it

The authorization endpoint approves at once, without a user: it redirects to the redirect_uri with a code for what
was asked (the client, the scope, the resource, the PKCE challenge), so a client's user agent can be a plain HTTP
GET that reads the Location header.

Tokens, codes and secrets all start with SENTINEL-, so that a test can scan what the client says for them.
"""
import base64
import hashlib
import json
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

o = {"as_path": "/as", "prm_path": "/.well-known/oauth-protected-resource/mcp", "prm_in_header": True, "prm": True,
     "as_metadata": "oauth", "auth_methods": ["none"], "registration": True, "prereg": None, "iss": "none",
     "iss_supported": False, "cimd": False, "expires_in": 3600, "refresh": False, "www_scope": None, "scopes_supported": None,
     "call_scope": None, "always_403": False, "hostile": None, "log": None, "port_file": None, "as_url": None,
     "prm_as_file": None, "grant_only": None, "revoke_after": None, "get_stream": False,
     "introspection_client": None, "subject": "test-user"}
a = sys.argv[1:]
i = 0
while i < len(a):
    k = a[i]
    if k in ("--port-file", "--log", "--as-path", "--prm-path", "--as-metadata", "--iss", "--www-scope",
             "--scopes-supported", "--call-scope", "--hostile", "--prereg", "--as-url", "--prm-as-file",
             "--grant-only", "--revoke-after", "--introspection-client", "--subject"):
        o[k[2:].replace("-", "_")] = a[i + 1]
        i += 2
        continue
    if k == "--auth-methods":
        o["auth_methods"] = a[i + 1].split(",")
        i += 2
        continue
    if k == "--expires-in":
        o["expires_in"] = int(a[i + 1])
        i += 2
        continue
    flags = {"--no-prm-in-header": ("prm_in_header", False), "--no-prm": ("prm", False),
             "--no-registration": ("registration", False), "--iss-supported": ("iss_supported", True),
             "--refresh": ("refresh", True), "--always-403": ("always_403", True), "--cimd": ("cimd", True),
             "--get-stream": ("get_stream", True)}
    if k not in flags:
        sys.exit("unknown option " + k)
    o[flags[k][0]] = flags[k][1]
    i += 1

lock = threading.Lock()
state = {"n": 0, "codes": {}, "tokens": {}, "refresh": {}, "clients": {}}
if o["prereg"]:
    cid, sec = o["prereg"].split(":", 1)
    state["clients"][cid] = {"secret": sec, "method": None, "as": o["as_path"]}
OTHER = "/other-as"


def fresh(kind):
    with lock:
        state["n"] += 1
        return "SENTINEL-%s-%d" % (kind, state["n"])


def log(entry):
    if o["log"]:
        with lock, open(o["log"], "a") as f:
            f.write(json.dumps(entry) + "\n")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def origin(self):
        return "http://127.0.0.1:%d" % self.server.server_address[1]

    def issuer(self, ap=None):
        return self.origin() + (o["as_path"] if ap is None else ap)

    def prm_issuer(self):
        if o["as_url"]:
            return o["as_url"]
        if o["prm_as_file"]:
            try:
                with open(o["prm_as_file"]) as f:
                    return self.issuer(f.read().strip())
            except OSError:
                pass
        return self.issuer()

    def which_as(self, p):
        """(issuer path, rest) of a request to one of the two authorization servers, else (None, None)."""
        for ap in (OTHER, o["as_path"]):
            for wk in ("/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"):
                if p == wk + ap:
                    return ap, wk
            if p.startswith(ap + "/"):
                return ap, p[len(ap):]
        return None, None

    def reply(self, status, body=b"", ctype="application/json", headers=None, entry=None):
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
        elif isinstance(body, str):
            body = body.encode()
        e = getattr(self, "_entry", None)
        if e is not None:  # logged before the answer goes out, so that a test that got it finds it logged
            if len(body) < 65536:
                e["sent"] = body.decode(errors="replace")
            log(e)
            self._entry = None
        self.send_response(status)
        if body:
            self.send_header("Content-Type", ctype)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def read_body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def entry(self, body=b""):
        u = urllib.parse.urlsplit(self.path)
        e = {"method": self.command, "path": u.path, "query": dict(urllib.parse.parse_qsl(u.query)),
             "authorization": self.headers.get("Authorization")}
        ct = self.headers.get("Content-Type") or ""
        if body:
            e["raw"] = body.decode(errors="replace")
        if body and "x-www-form-urlencoded" in ct:
            e["form"] = dict(urllib.parse.parse_qsl(body.decode()))
        elif body and "json" in ct:
            try:
                e["json"] = json.loads(body)
            except ValueError:
                pass
        return e

    def do_GET(self):
        self._entry = self.entry()
        self.get(self._entry)

    def do_POST(self):
        self._entry = self.entry(self.read_body())
        self.post(self._entry)

    def do_DELETE(self):
        self._entry = None
        self.reply(405)

    # --- metadata
    def get(self, e):
        p = e["path"]
        if o["prm"] and p == o["prm_path"]:
            if o["hostile"] == "prm_oversize":
                return self.reply(200, json.dumps({"resource": self.origin() + "/mcp", "pad": "x" * (1 << 20)}))
            servers = 5 if o["hostile"] == "prm_wrong_type" else [self.prm_issuer()]
            prm = {"resource": self.origin() + "/mcp", "authorization_servers": servers}
            if o["scopes_supported"] is not None:
                prm["scopes_supported"] = o["scopes_supported"].split()
            return self.reply(200, prm)
        ap, rest = self.which_as(p)
        if ap is not None:
            if (o["as_metadata"] == "oauth" and p == "/.well-known/oauth-authorization-server" + ap) or \
                    (o["as_metadata"] == "openid" and p == ap + "/.well-known/openid-configuration"):
                return self.reply(200, self.metadata(ap))
            if rest == "/authorize":
                return self.authorize(e, ap)
        if p == "/mcp" and o["get_stream"]:
            h = e["authorization"] or ""
            tok = state["tokens"].get(h[7:]) if h.startswith("Bearer ") else None
            if tok is None or tok["expires"] < time.time():
                return self.reply(401, {"error": "invalid_token"}, headers={"WWW-Authenticate": self.challenge()})
            event = 'data: {"jsonrpc":"2.0","method":"notifications/tools/list_changed"}\n\n'
            return self.reply(200, event, ctype="text/event-stream")
        if p == "/mcp":
            return self.reply(405)
        self.reply(404, {"error": "not_found"})

    def metadata(self, ap):
        iss = self.issuer(ap)
        m = {"issuer": iss, "authorization_endpoint": iss + "/authorize", "token_endpoint": iss + "/token",
             "response_types_supported": ["code"], "grant_types_supported": ["authorization_code", "refresh_token"],
             "code_challenge_methods_supported": ["S256"], "token_endpoint_auth_methods_supported": o["auth_methods"]}
        if o["registration"]:
            m["registration_endpoint"] = iss + "/register"
        if o["introspection_client"]:
            m["introspection_endpoint"] = iss + "/introspect"
            m["introspection_endpoint_auth_methods_supported"] = ["client_secret_basic", "client_secret_post"]
        if o["iss_supported"]:
            m["authorization_response_iss_parameter_supported"] = True
        if o["cimd"]:
            m["client_id_metadata_document_supported"] = True
        if o["hostile"] == "as_wrong_type":
            m["token_endpoint"] = 42
        if o["hostile"] == "issuer_slash":
            m["issuer"] = iss + "/"
        if o["hostile"] == "issuer_elsewhere":
            m["issuer"] = "http://127.0.0.1:1" + ap
        if o["hostile"] == "shell_endpoint":
            m["authorization_endpoint"] = iss + "/authorize?next=$(touch%20/tmp/te-pwned)"
        if o["hostile"] == "http_authorize":
            m["authorization_endpoint"] = "http://auth.example.invalid/authorize"
        return m

    def authorize(self, e, ap):
        q = e["query"]
        code = fresh("CODE")
        with lock:
            state["codes"][code] = {"as": ap,
                                    "challenge": q.get("code_challenge"), "method": q.get("code_challenge_method"),
                                    "client_id": q.get("client_id"), "scope": q.get("scope", ""),
                                    "resource": q.get("resource"), "redirect_uri": q.get("redirect_uri")}
        params = {"code": code}
        if "state" in q:
            params["state"] = q["state"]
        if o["iss"] == "correct":
            params["iss"] = self.issuer(ap)
        elif o["iss"] == "wrong":
            params["iss"] = "http://127.0.0.1:1/evil"
        sep = "&" if "?" in q.get("redirect_uri", "") else "?"
        self.reply(302, headers={"Location": q.get("redirect_uri", "") + sep + urllib.parse.urlencode(params)})

    # --- registration, token, MCP
    def post(self, e):
        p = e["path"]
        ap, rest = self.which_as(p)
        if ap is not None and rest == "/register" and o["registration"]:
            cid = fresh("CLIENT")
            method = o["auth_methods"][0]
            # RFC 7591 section 3.2.1: the client's metadata as registered, with its identifier (clients such as
            # the TypeScript SDK validate the answer: redirect_uris must be there).
            c = dict(e["json"]) if isinstance(e.get("json"), dict) else {}
            c.update({"client_id": cid, "token_endpoint_auth_method": method})
            if method != "none":
                c["client_secret"] = fresh("SECRET")
            with lock:
                state["clients"][cid] = {"secret": c.get("client_secret"), "method": method, "as": ap}
            return self.reply(201, c, entry=e)
        if ap is not None and rest == "/token":
            return self.token(e, ap)
        if ap is not None and rest == "/introspect" and o["introspection_client"]:
            return self.introspect(e, ap)
        if p == "/mcp":
            return self.mcp(e)
        self.reply(404, {"error": "not_found"})

    def client_auth(self, e, ap):
        """(client_id, method) of the token request, or an error string."""
        form = e.get("form", {})
        h = e["authorization"] or ""
        if h.startswith("Basic "):
            cid, _, sec = base64.b64decode(h[6:]).decode().partition(":")
            cid, sec, method = urllib.parse.unquote_plus(cid), urllib.parse.unquote_plus(sec), "client_secret_basic"
        elif "client_secret" in form:
            cid, sec, method = form.get("client_id"), form["client_secret"], "client_secret_post"
        else:
            cid, sec, method = form.get("client_id"), None, "none"
        c = state["clients"].get(cid)
        if c is not None and c["as"] != ap:  # another authorization server's client
            c = None
        if c is None and o["cimd"] and (cid or "").startswith("https://") and method == "none":
            c = {"secret": None, "method": "none"}
        if c is None:
            return None, None, "unknown client"
        if c["secret"] is not None and c["secret"] != sec:
            return None, None, "bad client secret"
        if c["method"] is not None and c["method"] != method:
            return None, None, "client registered for " + c["method"] + ", used " + method
        e["client_method"] = method
        return cid, method, None

    def token(self, e, ap):
        form = e.get("form", {})
        if o["hostile"] == "echo_request":
            raw = e.get("raw", "")
            at = raw.find("client_secret=")
            return self.reply(400, {"error": "invalid_request", "error_description": "got %s %s" % (
                e["authorization"], raw[at:] if at >= 0 else "")}, entry=e)
        cid, method, err = self.client_auth(e, ap)
        if err:
            return self.reply(401, {"error": "invalid_client", "error_description": err}, entry=e)
        g = form.get("grant_type")
        if g == "authorization_code":
            with lock:
                c = state["codes"].pop(form.get("code"), None)
            if o["hostile"] == "echo_secrets":
                return self.reply(400, {"error": "invalid_grant", "error_description": "code %s verifier %s secret %s" % (
                    form.get("code"), form.get("code_verifier"), state["clients"].get(cid, {}).get("secret"))},
                                  entry=e)
            if c is None or c["as"] != ap:
                return self.reply(400, {"error": "invalid_grant", "error_description": "unknown code"}, entry=e)
            v = form.get("code_verifier") or ""
            s256 = base64.urlsafe_b64encode(hashlib.sha256(v.encode()).digest()).rstrip(b"=").decode()
            if c["method"] != "S256" or s256 != c["challenge"]:
                return self.reply(400, {"error": "invalid_grant", "error_description": "PKCE verification failed"},
                                  entry=e)
            if form.get("resource") != c["resource"] or form.get("redirect_uri") != c["redirect_uri"]:
                return self.reply(400, {"error": "invalid_grant", "error_description": "resource or redirect_uri "
                                        "differs from the authorization request"}, entry=e)
            scope, resource = c["scope"], c["resource"]
        elif g == "refresh_token":
            with lock:
                r = state["refresh"].pop(form.get("refresh_token"), None)
            if r is None or r["client"] != cid or r["as"] != ap:
                return self.reply(400, {"error": "invalid_grant", "error_description": "unknown refresh token, or "
                                        "another client's"}, entry=e)
            scope, resource = r["scope"], r["resource"]
        else:
            return self.reply(400, {"error": "unsupported_grant_type"}, entry=e)
        if o["grant_only"] is not None:
            scope = " ".join(x for x in scope.split() if x in o["grant_only"].split())
        tok = fresh("ACCESS")
        with lock:
            state["tokens"][tok] = {"scope": scope.split(), "expires": time.time() + o["expires_in"], "as": ap,
                                    "client": cid, "resource": resource, "issued": time.time()}
        body = {"access_token": tok, "token_type": "Bearer", "expires_in": o["expires_in"], "scope": scope}
        if o["hostile"] == "token_no_type":
            del body["token_type"]
        if o["hostile"] == "token_crlf":
            body["access_token"] = tok + "\r\nX-Injected: 1"
        if o["hostile"] == "token_type_echo":
            body["token_type"] = tok
        if o["refresh"]:
            rt = fresh("REFRESH")
            with lock:
                state["refresh"][rt] = {"scope": scope, "client": cid, "as": ap, "resource": resource}
            body["refresh_token"] = rt
        self.reply(200, body)

    def introspect(self, e, ap):
        """RFC 7662: what this authorization server knows of the token, for the introspection client alone."""
        form = e.get("form", {})
        h = e["authorization"] or ""
        if h.startswith("Basic "):
            cid, _, sec = base64.b64decode(h[6:]).decode().partition(":")
            cid, sec = urllib.parse.unquote_plus(cid), urllib.parse.unquote_plus(sec)
        else:
            cid, sec = form.get("client_id"), form.get("client_secret")
        if "%s:%s" % (cid, sec) != o["introspection_client"]:
            return self.reply(401, {"error": "invalid_client"}, headers={"WWW-Authenticate": 'Basic realm="introspect"'},
                              entry=e)
        with lock:
            tok = state["tokens"].get(form.get("token", ""))
            tok = dict(tok) if tok is not None else None
        if tok is None or tok["as"] != ap or tok["expires"] < time.time():
            return self.reply(200, {"active": False}, entry=e)
        body = {"active": True, "sub": o["subject"], "client_id": tok["client"], "scope": " ".join(tok["scope"]),
                "iss": self.issuer(ap), "exp": int(tok["expires"]), "iat": int(tok["issued"]), "token_type": "Bearer"}
        if tok["resource"] is not None:
            body["aud"] = tok["resource"]
        self.reply(200, body, entry=e)

    def challenge(self, extra=""):
        parts = ['Bearer error="invalid_token"']
        if o["prm_in_header"] and o["prm"]:
            parts.append('resource_metadata="%s%s"' % (self.origin(), o["prm_path"]))
        if o["www_scope"]:
            parts.append('scope="%s"' % o["www_scope"])
        return ", ".join(parts) + extra

    def mcp(self, e):
        h = e["authorization"] or ""
        tok = state["tokens"].get(h[7:]) if h.startswith("Bearer ") else None
        if tok is None or tok["expires"] < time.time():
            return self.reply(401, {"error": "invalid_token"}, headers={"WWW-Authenticate": self.challenge()})
        msg = e.get("json") or {}
        method = msg.get("method", "")
        need = o["call_scope"].split() if (o["call_scope"] and method == "tools/call") else []
        if o["always_403"] or any(s not in tok["scope"] for s in need):
            s = o["call_scope"] or o["www_scope"] or "mcp:admin"
            if o["always_403"]:
                with lock:
                    state["n"] += 1
                    s = "mcp:admin-%d" % state["n"]
            return self.reply(403, {"error": "insufficient_scope"}, headers={
                "WWW-Authenticate": 'Bearer error="insufficient_scope", scope="%s", resource_metadata="%s%s"' % (
                    s, self.origin(), o["prm_path"])})
        if "id" not in msg:
            self.revoke_after(method)
            return self.reply(202)
        if method == "initialize":
            result = {"protocolVersion": msg.get("params", {}).get("protocolVersion", "2025-11-25"),
                      "capabilities": {"tools": {}}, "serverInfo": {"name": "oauth-test", "version": "1"}}
        elif method == "tools/list":
            result = {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}
        elif method == "tools/call":
            result = {"content": [{"type": "text", "text": "called with " + " ".join(tok["scope"])}]}
        else:
            result = {}
        self.revoke_after(method)
        self.reply(200, {"jsonrpc": "2.0", "id": msg["id"], "result": result})

    def revoke_after(self, method):
        """--revoke-after: once `method` is answered, every token issued so far is revoked (once)."""
        with lock:
            if o["revoke_after"] == method and not state.get("revoked"):
                state["revoked"] = True
                for t in state["tokens"].values():
                    t["expires"] = 0


class Server(ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        pass  # a client that hangs up on an oversized answer (the hostile modes) is expected


srv = Server(("127.0.0.1", 0), Handler)
srv.daemon_threads = True
if o["port_file"]:
    with open(o["port_file"] + ".tmp", "w") as f:
        f.write(str(srv.server_address[1]))
    import os
    os.rename(o["port_file"] + ".tmp", o["port_file"])
srv.serve_forever()
