// tool_effects/mcp/transport/detail/http_server_handle.hpp — internal: what the Streamable HTTP listener
// (http_server.hpp) does with one connection and each HTTP request on it (POST, GET, DELETE): the framing of
// RFC 9112, every refusal with its status and its JSON-RPC error, and the hand-over of each message to the
// protocol session of its MCP session. See docs/mcp-server.md ("The server over HTTP").
#ifndef TOOL_EFFECTS_MCP_TRANSPORT_DETAIL_HTTP_SERVER_HANDLE_HPP
#define TOOL_EFFECTS_MCP_TRANSPORT_DETAIL_HTTP_SERVER_HANDLE_HPP

#include <charconv>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <tool_effects/mcp/transport/detail/http_server.hpp>

#include <tool_effects/detail/push_options.hpp>  // the coroutines below (g++ 12 false positives)

namespace tool_effects::detail {

// The id of a request in `body` (a JSON-RPC object with a string or integer id), else null: for the errors the
// transport answers before it reads the message, so that they still carry the request's id. Parsed within the
// transport's bounds; anything unreadable is null.
inline nlohmann::json mcp_http_body_id(const std::string& body, const mcp_http_server_options& o) {
  try {
    const nlohmann::json msg =
        parse_untrusted_json(body, json_limits{o.max_depth, o.max_body_bytes, json_limits{}.max_values}, "");
    if (const auto id = msg.is_object() ? msg.find("id") : msg.end();
        id != msg.end() && (id->is_string() || id->is_number_integer()))
      return *id;
  } catch (const json_error&) {
  }
  return nullptr;
}

// RFC 9112 section 6: why a request's framing is refused (its status, 400 or 501, and the message), or nothing.
// Transfer-Encoding together with Content-Length, or whose last coding is not chunked, leaves the body's length
// in doubt (400, and the connection closes: a proxy in front may frame it otherwise); a coding before chunked
// is one this server does not implement (501).
struct mcp_http_framing_refusal {
  unsigned status;
  std::string_view message;
};
inline std::optional<mcp_http_framing_refusal> mcp_http_framing(std::string_view transfer_encoding,
                                                                bool has_content_length, bool has_transfer_encoding) {
  if (!has_transfer_encoding) return std::nullopt;
  if (has_content_length) return mcp_http_framing_refusal{400, "Bad Request: Transfer-Encoding with Content-Length"};
  std::string_view last;
  bool other = false;
  std::string_view rest = transfer_encoding;
  for (;;) {
    const auto comma = rest.find(',');
    const std::string_view coding = mcp_http_trim(rest.substr(0, comma));
    if (!coding.empty()) {
      if (!last.empty()) other = true;
      last = coding;
    }
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  const auto chunked = [](std::string_view c) {
    if (c.size() != 7) return false;
    for (std::size_t i = 0; i < 7; ++i)
      if ((c[i] | 0x20) != "chunked"[i]) return false;
    return true;
  };
  if (!chunked(last)) return mcp_http_framing_refusal{400, "Bad Request: the last transfer coding is not chunked"};
  if (other) return mcp_http_framing_refusal{501, "Not Implemented: a transfer coding other than chunked"};
  return std::nullopt;
}

// A Last-Event-ID of this server ("<stream>-<event>", two decimal numbers), or nothing.
inline std::optional<std::pair<std::uint64_t, std::uint64_t>> mcp_http_event_id(std::string_view v) {
  const auto dash = v.find('-');
  if (dash == std::string_view::npos || dash == 0 || dash + 1 >= v.size()) return std::nullopt;
  std::uint64_t stream = 0;
  std::uint64_t seq = 0;
  const auto a = std::from_chars(v.data(), v.data() + dash, stream);
  const auto b = std::from_chars(v.data() + dash + 1, v.data() + v.size(), seq);
  if (a.ec != std::errc() || a.ptr != v.data() + dash || b.ec != std::errc() || b.ptr != v.data() + v.size())
    return std::nullopt;
  return std::pair{stream, seq};
}

template <class Unused>
hs_asio::awaitable<void> basic_mcp_http_server_core<Unused>::serve(std::shared_ptr<basic_mcp_http_server_core> self,
                                                                   hs_tcp::socket sock) {
  auto stream = std::make_shared<net::connection>(std::move(sock));
  self->conns_[stream] = clock::now();
  ++self->n_connections_;
  const std::uint64_t connection = ++self->next_connection_;
  struct guard {
    basic_mcp_http_server_core* core;
    std::shared_ptr<net::connection> s;
    ~guard() {
      --core->n_connections_;
      core->conns_.erase(s);
    }
  } g{self.get(), stream};
  if (self->o_.tls) {  // https: the handshake first, within the read timeout
    stream->tcp().expires_after(self->o_.read_timeout);
    const auto ec = co_await net::detail::tls_accept(*stream, self->tls_);
    stream->tcp().expires_never();
    if (ec) co_return;
  }
  auto& buf = stream->buffer();
  connection_memo memo;  // what this connection's requests have had checked
  while (!self->closed_) {
    hs_http::request_parser<hs_http::string_body> parser;
    parser.header_limit(static_cast<std::uint32_t>(self->o_.max_header_bytes));
    parser.body_limit(self->o_.max_body_bytes);
    stream->tcp().expires_after(self->o_.read_timeout);
    if (const auto it = self->conns_.find(stream); it != self->conns_.end() && !it->second) it->second = clock::now();
    auto [ec, n] = co_await stream->visit([&](auto& s) {
      return hs_http::async_read_header(s, buf, parser, hs_asio::as_tuple(hs_asio::use_awaitable));
    });
    if (const auto it = self->conns_.find(stream); it != self->conns_.end()) it->second.reset();  // busy now
    if (!ec) {  // the framing is checked before a byte of the body is read
      const auto& h = parser.get();
      const auto te = h.find(hs_http::field::transfer_encoding);
      const auto refused = mcp_http_framing(
          te == h.end() ? std::string_view() : std::string_view(te->value().data(), te->value().size()),
          h.find(hs_http::field::content_length) != h.end(), te != h.end());
      if (refused) {
        auto res = make_response(error_reply(refused->status, -32600, refused->message, nullptr, true));
        co_await write_reply(self, *stream, res);
        co_return;
      }
      // The body bytes that came with the header (all of a small request's) are parsed where they are; a read
      // operation only for what is still to come.
      parser.eager(true);
      while (!parser.is_done() && buf.size() != 0) {
        const std::size_t used = parser.put(buf.data(), ec);
        buf.consume(used);
        if (ec == hs_http::error::need_more) ec = {};
        if (ec || used == 0) break;
      }
      if (!ec && !parser.is_done())
        std::tie(ec, n) = co_await stream->visit(
            [&](auto& s) { return hs_http::async_read(s, buf, parser, hs_asio::as_tuple(hs_asio::use_awaitable)); });
    }
    (void)n;
    if (ec == hs_http::error::header_limit) {
      auto res = make_response(error_reply(431, -32600, "Request header fields too large", nullptr, true));
      co_await write_reply(self, *stream, res);
      co_return;
    }
    if (ec == hs_http::error::body_limit) {
      auto res = make_response(error_reply(413, -32600, "Request body too large", nullptr, true));
      co_await write_reply(self, *stream, res);
      co_return;
    }
    if (ec && ec.category() == boost::system::error_code(hs_http::error::end_of_stream).category() &&
        ec != hs_http::error::end_of_stream && ec != hs_http::error::partial_message) {
      auto res = make_response(error_reply(400, -32600, "Malformed HTTP request", nullptr, true));
      co_await write_reply(self, *stream, res);
      co_return;
    }
    if (ec) co_return;  // closed, reset or too slow
    auto req = parser.release();
    const bool keep = req.keep_alive() && req.version() == 11;
    if (co_await self->handle(*stream, req, connection, memo)) co_return;  // the connection carried a stream
    if (!keep) co_return;
  }
}

// Writes `res` as the whole answer to the request; the connection stays (false) unless `r` closes it.
template <class Unused>
hs_asio::awaitable<bool> basic_mcp_http_server_core<Unused>::answer(net::connection& stream,
                                                                    std::shared_ptr<http_response> res) {
  auto self = this->shared_from_this();
  co_await write_reply(self, stream, res);
  co_return !res->keep_alive();
}

template <class Unused>
hs_asio::awaitable<bool> basic_mcp_http_server_core<Unused>::handle(net::connection& stream,
                                                                    hs_http::request<hs_http::string_body>& req,
                                                                    std::uint64_t connection, connection_memo& memo) {
  const std::string_view target(req.target().data(), req.target().size());
  const std::string_view path = target.substr(0, target.find('?'));
  if (o_.authorization && path == mcp_protected_resource_path(path_)) {  // RFC 9728: public, GET only
    if (req.method() != hs_http::verb::get) {
      auto res = make_response(error_reply(405, -32600, "Method Not Allowed", nullptr, false, "GET"));
      co_return co_await answer(stream, res);
    }
    reply r;
    r.body = json_dump(mcp_protected_resource_metadata(*o_.authorization));
    auto res = make_response(std::move(r));
    co_return co_await answer(stream, res);
  }
  const mcp_http_route* route = nullptr;
  if (path != path_) {
    for (const auto& r : o_.routes)
      if (r.path == path) route = &r;
    if (!route) {
      auto res = make_response(error_reply(404, -32600, "Not Found: no MCP endpoint at this path"));
      co_return co_await answer(stream, res);
    }
  }
  if (protect_) {
    const auto& f = req.base();
    const std::string_view host(f[hs_http::field::host].data(), f[hs_http::field::host].size());
    const std::string_view origin(f[hs_http::field::origin].data(), f[hs_http::field::origin].size());
    if (!memo.host_passed || memo.host != host || memo.origin != origin) {
      memo.host_passed = false;
      const std::string why = mcp_http_rebinding_refusal(host, origin, o_);
      if (!why.empty()) {
        auto res = make_response(error_reply(403, -32600, why));
        co_return co_await answer(stream, res);
      }
      memo.host.assign(host);
      memo.origin.assign(origin);
      memo.host_passed = true;
    }
  }
  const std::string_view version =
      mcp_http_trim(std::string_view(req["MCP-Protocol-Version"].data(), req["MCP-Protocol-Version"].size()));
  if (!route && !version.empty() && !mcp_http_version_known(version)) {
    nlohmann::json supported = nlohmann::json::array();
    for (const auto& v : mcp_protocol_versions()) supported.push_back(v);
    nlohmann::json body{
        {"jsonrpc", "2.0"},
        {"id", req.method() == hs_http::verb::post ? mcp_http_body_id(req.body(), o_) : nlohmann::json()},
        {"error",
         {{"code", -32022},
          {"message", "Bad Request: unsupported MCP-Protocol-Version"},
          {"data", {{"supported", supported}, {"requested", std::string(utf8_prefix(version, 64))}}}}}};
    reply r;
    r.status = 400;
    r.body = json_dump(body);
    {
      auto res = make_response(std::move(r));
      co_return co_await answer(stream, res);
    }
  }
  std::shared_ptr<const mcp_principal> principal;
  if (o_.authorization) {
    authenticated a = co_await authenticate(req, memo);
    if (a.refusal) co_return co_await answer(stream, a.refusal);
    principal = std::move(a.principal);
  }
  if (route) co_return co_await answer(stream, make_response(serve_route(*route, req.method(), principal.get())));
  const std::string owner = principal ? principal->key() : std::string();
  switch (req.method()) {
    case hs_http::verb::post: co_return co_await handle_post(stream, req, principal, connection);
    case hs_http::verb::get: co_return co_await handle_get(stream, req, owner);
    case hs_http::verb::delete_: {
      const std::string_view sid(req["Mcp-Session-Id"].data(), req["Mcp-Session-Id"].size());
      reply refusal;
      auto s = owned_session(sid, version, owner, "Method Not Allowed: no sessions in 2026-07-28", refusal);
      if (!s) {
        auto res = make_response(std::move(refusal));
        co_return co_await answer(stream, res);
      }
      end_session(s);
      {
        auto res = make_response(reply{});
        co_return co_await answer(stream, res);
      }
    }
    default: {
      auto res = make_response(error_reply(405, -32600, "Method Not Allowed", nullptr, false, "GET, POST, DELETE"));
      co_return co_await answer(stream, res);
    }
  }
}

template <class Unused>
hs_asio::awaitable<bool> basic_mcp_http_server_core<Unused>::handle_post(net::connection& stream,
                                                                         hs_http::request<hs_http::string_body>& req,
                                                                         std::shared_ptr<const mcp_principal> principal,
                                                                         std::uint64_t connection) {
  auto self = this->shared_from_this();
  auto field = [&](std::string_view name) {
    const auto v = req[boost::beast::string_view(name.data(), name.size())];
    return std::string_view(v.data(), v.size());
  };
  const std::string_view accept = field("Accept");
  const bool any = accept.find("*/*") != std::string_view::npos;
  if (!any && (accept.find("application/json") == std::string_view::npos ||
               accept.find("text/event-stream") == std::string_view::npos)) {
    auto res = make_response(
        error_reply(406, -32600, "Not Acceptable: the client must accept both application/json and text/event-stream"));
    co_return co_await answer(stream, res);
  }
  if (mcp_http_trim(field("Content-Type")).substr(0, 16) != "application/json") {
    auto res = make_response(error_reply(415, -32600, "Unsupported Media Type: Content-Type must be application/json"));
    co_return co_await answer(stream, res);
  }
  // The memory the request will hold is reserved before its body is parsed (max_bytes_in_flight).
  const std::size_t cost = mcp_http_request_cost(req.body());
  if (cost > o_.max_bytes_in_flight) {
    auto res = make_response(
        error_reply(413, -32600, "Request body too large: too many values to hold at once", nullptr, true));
    co_return co_await answer(stream, res);
  }
  if (bytes_in_flight_ + cost > o_.max_bytes_in_flight) {
    auto res = make_response(error_reply(503, -32000, "Service Unavailable: too much in flight; retry shortly"));
    res->set(hs_http::field::retry_after, "1");
    co_return co_await answer(stream, res);
  }
  struct reservation {  // given back when the request ends here; a request's stream takes it over (route, release)
    std::size_t& total;
    std::size_t cost;
    ~reservation() { total -= std::min(total, cost); }
  } held{bytes_in_flight_, cost};
  bytes_in_flight_ += cost;
  nlohmann::json msg;
  std::string parse_failure;
  try {
    msg = parse_untrusted_json(req.body(), json_limits{o_.max_depth, o_.max_body_bytes, json_limits{}.max_values},
                               "in the request body");
  } catch (const json_error& e) {
    parse_failure = str_cat("Parse error: ", std::string_view(e.what()).substr(0, 300));
  }
  if (!parse_failure.empty()) {
    auto res = make_response(error_reply(400, -32700, parse_failure));
    co_return co_await answer(stream, res);
  }
  if (msg.is_array()) {
    auto res = make_response(error_reply(400, -32600, "Invalid Request: batches are not supported"));
    co_return co_await answer(stream, res);
  }
  const auto id_it = msg.is_object() ? msg.find("id") : msg.end();
  const bool has_id = msg.is_object() && id_it != msg.end();
  const nlohmann::json id = has_id ? *id_it : nlohmann::json();
  const auto method_it = msg.is_object() ? msg.find("method") : msg.end();
  const bool has_method = msg.is_object() && method_it != msg.end() && method_it->is_string();
  const bool is_response =
      msg.is_object() && has_id && !has_method && (msg.contains("result") || msg.contains("error"));
  if (!msg.is_object() || msg.value("jsonrpc", nlohmann::json()) != "2.0" || (!has_method && !is_response) ||
      (has_id && !id.is_string() && !id.is_number_integer())) {
    auto res =
        make_response(error_reply(400, -32600, "Invalid Request: not a JSON-RPC 2.0 request, notification or response",
                                  has_id && (id.is_string() || id.is_number_integer()) ? id : nlohmann::json()));
    co_return co_await answer(stream, res);
  }
  const std::string method = has_method ? method_it->get<std::string>() : std::string();
  const bool is_request = has_method && has_id;
  const std::string_view version = mcp_http_trim(field("MCP-Protocol-Version"));
  const bool modern = mcp_version_is_modern(version);
  const std::string_view sid = mcp_http_trim(field("Mcp-Session-Id"));

  if (modern && has_method) {  // the 2026-07-28 mirrored headers
    const std::string_view hm = field("Mcp-Method");
    if (hm.empty() || mcp_http_trim(hm) != method) {
      auto res = make_response(
          error_reply(400, -32020,
                      hm.empty() ? std::string_view("Header mismatch: Mcp-Method is missing")
                                 : std::string_view("Header mismatch: Mcp-Method does not match the body's method"),
                      id));
      co_return co_await answer(stream, res);
    }
    const char* key = method == "tools/call" || method == "prompts/get" ? "name"
                      : method == "resources/read"                      ? "uri"
                                                                        : nullptr;
    const auto params = msg.find("params");
    if (key && params != msg.end() && params->is_object() && params->contains(key) && (*params)[key].is_string()) {
      const std::string_view hn = field("Mcp-Name");
      const auto text = hn.empty() ? std::nullopt : mcp_http_header_text(hn);
      if (!text || *text != (*params)[key].get_ref<const std::string&>()) {
        auto res = make_response(
            error_reply(400, -32020,
                        hn.empty() ? std::string_view("Header mismatch: Mcp-Name is missing")
                                   : std::string_view("Header mismatch: Mcp-Name does not match the body"),
                        id));
        co_return co_await answer(stream, res);
      }
    }
  }

  // Whom the request's session belongs to (its principal with authorization), and whom what it creates belongs
  // to on the server (mcp_incoming::caller): the principal, else the session, else (stateless, no
  // authorization) this connection.
  const std::string owner = principal ? principal->key() : std::string();
  std::shared_ptr<session_type> s;
  if (is_request && method == "initialize" && !modern) {  // 2026-07-28 has no initialize: the server says -32601
    if (!sid.empty()) {
      auto res =
          make_response(error_reply(400, -32600, "Invalid Request: initialize must not carry an Mcp-Session-Id", id));
      co_return co_await answer(stream, res);
    }
    if (!make_room(owner)) {
      auto res = make_response(error_reply(503, -32000, "Service Unavailable: too many sessions, none idle", id));
      res->set(hs_http::field::retry_after, "1");
      co_return co_await answer(stream, res);
    }
    s = open_session(mcp_http_new_session_id(), owner);
  } else if (!sid.empty()) {
    s = find_session(sid);
    if (!s || s->owner() != owner) {  // another principal's session is not found
      auto res = make_response(error_reply(404, -32001, "Session not found", id));
      co_return co_await answer(stream, res);
    }
  } else if (modern) {
    if (!is_request)  // a stateless notification or response belongs to no request of ours: accepted, dropped
    {
      auto res = make_response(accepted());
      co_return co_await answer(stream, res);
    }
    s = open_session(std::string(), owner);
  } else {
    {
      auto res = make_response(error_reply(400, -32000, "Bad Request: Mcp-Session-Id header is required", id));
      co_return co_await answer(stream, res);
    }
  }
  s->last_active = clock::now();

  auto incoming = std::make_shared<mcp_incoming>();
  incoming->transport_version = std::string(version);
  incoming->principal = principal;
  incoming->caller = principal                  ? principal->key()
                     : !s->session_id().empty() ? session_caller(s->session_id())
                                                : connection_caller(connection);
  incoming->param_headers.emplace();
  for (const auto& f : req.base()) {
    const std::string_view name(f.name_string().data(), f.name_string().size());
    if (name.size() > 10 && (name.substr(0, 10) == "Mcp-Param-" || name.substr(0, 10) == "mcp-param-")) {
      std::string k(name.substr(10));
      for (char& c : k)
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
      (*incoming->param_headers)[k] = mcp_http_header_text(std::string_view(f.value().data(), f.value().size()));
    }
  }

  if (!is_request) {  // a notification or a response: accepted
    if (s->engine) s->engine->deliver(std::move(msg), std::move(incoming));
    {
      auto res = make_response(accepted());
      co_return co_await answer(stream, res);
    }
  }
  // With authorization, a request that needs scopes the token lacks (a tools/call of a tool that writes): 403,
  // naming every scope it needs (step-up).
  if (principal && hooks_.scopes) {
    const auto p = msg.find("params");
    const std::vector<std::string> needed = hooks_.scopes(method, p != msg.end() ? *p : nlohmann::json());
    for (const auto& n : needed)
      if (!principal->has_scope(n)) {
        if (s->stateless()) end_session(s);
        auto res =
            auth_refusal(403, "insufficient_scope",
                         str_cat("Forbidden: ", method, " needs the scope \"", quote_text(n, 200), "\""), needed, id);
        co_return co_await answer(stream, res);
      }
  }
  const std::size_t pending = s->stateless() ? stateless_pending_[owner] : s->pending;
  if (pending >= o_.max_pending_requests) {
    if (s->stateless()) end_session(s);
    {
      auto res = make_response(error_reply(429, -32000, "Too Many Requests: too many pending requests", id));
      co_return co_await answer(stream, res);
    }
  }
  std::string id_key = mcp_dump(id);
  if (s->open_requests.count(id_key) != 0) {
    auto res = make_response(error_reply(400, -32600, "Invalid Request: a request with this id is still pending", id));
    co_return co_await answer(stream, res);
  }
  auto st = std::make_shared<mcp_http_stream>();
  st->id = s->next_stream++;
  st->request_id = id;
  s->streams[st->id] = st;
  s->open_requests.emplace(std::move(id_key), st->id);
  ++s->pending;
  if (s->stateless()) ++stateless_pending_[owner];
  st->cost = std::exchange(held.cost, 0);  // held by the stream until the request is answered
  auto out = std::make_shared<mcp_http_out>(strand_);
  st->out = out;
  outs_.insert(out);
  if (o_.always_sse) start_sse(*s, *st);
  // The protocol session serves it: its answer (or an error it answers at once) comes back through route().
  if (s->engine) s->engine->deliver(std::move(msg), std::move(incoming));
  // Undecided: the response first makes a JSON answer, anything else an SSE stream.
  while (!st->json_response && !st->sse && !st->finished && !out->dead && !closed_) {
    out->wake.expires_at(hs_asio::steady_timer::time_point::max());
    (void)co_await out->wake.async_wait(hs_asio::as_tuple(hs_asio::use_awaitable));
  }
  bool taken = true;
  if (st->json_response) {
    reply rep;
    rep.status = st->json_error_code != 0 ? mcp_http_error_status(st->json_error_code, modern) : 200;
    rep.body = std::move(*st->json_response);
    rep.session_id = s->session_id();
    st->out.reset();
    outs_.erase(out);
    trim_finished(*s);
    if (s->stateless()) end_session(s);
    {
      auto res = make_response(std::move(rep));
      co_return co_await answer(stream, res);
    }
  }
  if (st->sse) co_await pump(self, stream, out);
  outs_.erase(out);
  detach(*s, out);
  trim_finished(*s);
  // A stateless request's session ends with its stream: its call, if still running, is cancelled.
  if (s->stateless()) end_session(s);
  co_return taken;
}

template <class Unused>
hs_asio::awaitable<bool> basic_mcp_http_server_core<Unused>::handle_get(net::connection& stream,
                                                                        hs_http::request<hs_http::string_body>& req,
                                                                        std::string owner) {
  auto self = this->shared_from_this();
  const std::string_view accept(req[hs_http::field::accept].data(), req[hs_http::field::accept].size());
  if (accept.find("text/event-stream") == std::string_view::npos && accept.find("*/*") == std::string_view::npos) {
    auto res = make_response(error_reply(406, -32600, "Not Acceptable: the client must accept text/event-stream"));
    co_return co_await answer(stream, res);
  }
  const std::string_view sid =
      mcp_http_trim(std::string_view(req["Mcp-Session-Id"].data(), req["Mcp-Session-Id"].size()));
  const std::string_view version =
      mcp_http_trim(std::string_view(req["MCP-Protocol-Version"].data(), req["MCP-Protocol-Version"].size()));
  reply refusal;
  auto s = owned_session(sid, version, owner, "Method Not Allowed: no GET stream in 2026-07-28", refusal);
  if (!s) {
    auto res = make_response(std::move(refusal));
    co_return co_await answer(stream, res);
  }
  s->last_active = clock::now();
  const std::string_view last =
      mcp_http_trim(std::string_view(req["Last-Event-ID"].data(), req["Last-Event-ID"].size()));
  std::shared_ptr<mcp_http_stream> st;
  std::uint64_t after = 0;
  if (!last.empty()) {
    const auto named = mcp_http_event_id(last);
    if (!named) {
      auto res =
          make_response(error_reply(400, -32600, "Bad Request: Last-Event-ID is not an event id of this server"));
      co_return co_await answer(stream, res);
    }
    after = named->second;
    if (const auto it = s->streams.find(named->first); it != s->streams.end()) st = it->second;
    if (!st) {
      auto res = make_response(error_reply(400, -32600, "Bad Request: Last-Event-ID names no stream of this session"));
      co_return co_await answer(stream, res);
    }
    if (st->out) {  // the stream moves to this connection
      st->out->done = true;
      st->out->notify();
      st->out.reset();
    }
  } else {
    std::size_t open = 0;
    for (auto& [k, g] : s->streams) open += g->request_id.is_null() && g->out ? 1 : 0;
    if (open >= o_.max_get_streams) {
      auto res = make_response(error_reply(429, -32000, "Too Many Requests: too many GET streams"));
      co_return co_await answer(stream, res);
    }
    st = std::make_shared<mcp_http_stream>();
    st->id = s->next_stream++;
    st->sse = true;
    s->streams[st->id] = st;
  }
  auto out = std::make_shared<mcp_http_out>(strand_);
  outs_.insert(out);
  enqueue(
      *out,
      str_cat("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n"
              "Mcp-Session-Id: ",
              s->session_id(), "\r\n\r\n"));
  if (last.empty()) {
    enqueue(*out,
            str_cat("id: ", event_id(st->id, 0), "\nretry: ", std::to_string(o_.sse_retry.count()), "\ndata: \n\n"));
    st->out = out;
    while (!s->backlog.empty()) {
      push_event(*st, s->backlog.front());
      s->backlog.pop_front();
    }
  } else {
    for (const auto& [seq, ev] : st->kept)
      if (seq > after) enqueue(*out, ev);
    if (st->finished)
      out->done = true;
    else
      st->out = out;
  }
  co_await pump(self, stream, out);
  outs_.erase(out);
  detach(*s, out);
  if (st->request_id.is_null()) st->finished = true;  // a GET stream ends with its connection (it can be replayed)
  trim_finished(*s);
  co_return true;
}

template <class Unused>
std::string basic_mcp_http_server_core<Unused>::metadata_url() const {
  std::string origin;  // the resource's scheme, host and port as written (no default port added)
  try {
    net::url u = net::parse_http_url(o_.authorization->resource);
    u.path.clear();
    u.query.reset();
    u.fragment.reset();
    origin = u.text();
  } catch (const net::url_error&) {
  }
  return origin + mcp_protected_resource_path(path_);
}

template <class Unused>
auto basic_mcp_http_server_core<Unused>::auth_refusal(unsigned status, std::string_view error, std::string_view message,
                                                      const std::vector<std::string>& scopes,
                                                      const nlohmann::json& id) const
    -> std::shared_ptr<http_response> {
  auto res = make_response(error_reply(status, status == 401 ? -32001 : -32003, message, id));
  res->set(hs_http::field::www_authenticate, mcp_bearer_challenge_value(metadata_url(), error, scopes));
  return res;
}

template <class Unused>
auto basic_mcp_http_server_core<Unused>::authenticate(const hs_http::request<hs_http::string_body>& req,
                                                      connection_memo& memo) -> hs_asio::awaitable<authenticated> {
  // (Every value below is a named local: g++ 12 destroys the temporaries of a co_await or co_return expression
  // twice, GCC bug 99576.)
  authenticated out;
  const mcp_resource_server& rs = *o_.authorization;
  const auto h = req.find(hs_http::field::authorization);
  const auto token =
      h == req.end() ? std::nullopt : mcp_bearer_token(std::string_view(h->value().data(), h->value().size()));
  if (!token) {
    // No token (or a header that is no bearer token): the challenge alone, no error code (RFC 6750 section 3.1).
    out.refusal = auth_refusal(401, h == req.end() ? "" : "invalid_request", "Unauthorized: a bearer token is required");
    co_return out;
  }
  const auto now = clock::now();
  std::string key;  // the token's SHA-256, unless this connection's last token is the same one
  const auto cached = [&]() -> bool {  // this connection's last token, or a verified one, while it holds
    if (memo.principal && memo.until > now && memo.token == *token) {
      out.principal = memo.principal;
      return true;
    }
    const auto digest = mcp_sha256(*token);
    key.assign(reinterpret_cast<const char*>(digest.data()), digest.size());
    const auto it = tokens_.find(key);
    if (it == tokens_.end() || it->second.until <= now) return false;
    out.principal = it->second.principal;
    memo.token.assign(*token);
    memo.principal = out.principal;
    memo.until = it->second.until;
    return true;
  };
  if (!cached()) {
    // The verifier may block (a JWKS fetch, introspection): it runs off the listener's strand.
    auto verify = [verify = rs.verify_token, t = std::string(*token)]() -> hs_asio::awaitable<std::optional<mcp_principal>> {
      try {
        co_return verify(t);
      } catch (...) {  // a verifier's failure is an invalid token; its words (which may quote it) are dropped
        co_return std::nullopt;
      }
    };
    std::optional<mcp_principal> p = co_await hs_asio::co_spawn(hooks_.verify_executor, std::move(verify), hs_asio::use_awaitable);
    const auto wall = std::chrono::system_clock::now();
    std::string_view why;
    if (!p)
      why = "Unauthorized: the token is not valid";
    else if (p->expires_at && *p->expires_at <= wall)
      why = "Unauthorized: the token has expired";
    else if (!p->issued_for(rs.resource))  // RFC 8707: whatever the verifier says
      why = "Unauthorized: the token was not issued for this server";
    if (!why.empty()) {
      out.refusal = auth_refusal(401, "invalid_token", why);
      co_return out;
    }
    out.principal = std::make_shared<const mcp_principal>(std::move(*p));
    auto until = now + rs.max_cache_age;
    if (out.principal->expires_at)
      until = std::min(until, now + std::chrono::duration_cast<clock::duration>(*out.principal->expires_at - wall));
    if (rs.max_cached_tokens > 0) {
      if (tokens_.emplace(key, verified{out.principal, until}).second) token_order_.push_back(key);
      while (token_order_.size() > rs.max_cached_tokens) {
        tokens_.erase(token_order_.front());
        token_order_.pop_front();
      }
      memo.token.assign(*token);
      memo.principal = out.principal;
      memo.until = until;
    }
  }
  for (const auto& scope : rs.required_scopes)
    if (!out.principal->has_scope(scope)) {
      out.refusal = auth_refusal(
          403, "insufficient_scope",
          str_cat("Forbidden: every request needs the scope \"", quote_text(scope, 200), "\""), rs.required_scopes);
      out.principal.reset();
      co_return out;
    }
  co_return out;
}

}  // namespace tool_effects::detail

#include <tool_effects/detail/pop_options.hpp>

#endif  // TOOL_EFFECTS_MCP_TRANSPORT_DETAIL_HTTP_SERVER_HANDLE_HPP
