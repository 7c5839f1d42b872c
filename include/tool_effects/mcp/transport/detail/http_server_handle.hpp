// tool_effects/mcp/transport/detail/http_server_handle.hpp — internal to <tool_effects/mcp/server_http.hpp> (included by
// detail/http_server_transport.hpp): what the server does with one HTTP request (POST, GET, DELETE), every
// refusal with its status and its JSON-RPC error. See docs/mcp.md ("The server over HTTP").
#ifndef TOOL_EFFECTS_MCP_TRANSPORT_DETAIL_HTTP_SERVER_HANDLE_HPP
#define TOOL_EFFECTS_MCP_TRANSPORT_DETAIL_HTTP_SERVER_HANDLE_HPP

#include <tool_effects/mcp/transport/detail/http_server.hpp>

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

inline hs_asio::awaitable<bool> mcp_http_server_core::handle(boost::beast::tcp_stream& stream,
                                                             hs_http::request<hs_http::string_body>& req) {
  auto self = shared_from_this();
  std::shared_ptr<http_response> res;
  const std::string_view target(req.target().data(), req.target().size());
  if (target.substr(0, target.find('?')) != path_) {
    res = make_response(error_reply_allow(404, -32600, "Not Found: no MCP endpoint at this path"));
    co_await write_reply(self, stream, res);
    co_return false;
  }
  if (protect_) {
    const auto& f = req.base();
    const std::string why = mcp_http_rebinding_refusal(
        std::string_view(f[hs_http::field::host].data(), f[hs_http::field::host].size()),
        std::string_view(f[hs_http::field::origin].data(), f[hs_http::field::origin].size()), o_);
    if (!why.empty()) {
      res = make_response(error_reply_allow(403, -32600, why));
      co_await write_reply(self, stream, res);
      co_return false;
    }
  }
  const std::string_view version =
      mcp_http_trim(std::string_view(req["MCP-Protocol-Version"].data(), req["MCP-Protocol-Version"].size()));
  if (!version.empty() && !mcp_http_version_known(version)) {
    nlohmann::json supported = nlohmann::json::array();
    for (const auto& v : mcp_protocol_versions()) supported.push_back(v);
    nlohmann::json body{{"jsonrpc", "2.0"},
                        {"id", req.method() == hs_http::verb::post ? mcp_http_body_id(req.body(), o_) : nlohmann::json()},
                        {"error",
                         {{"code", -32022},
                          {"message", "Bad Request: unsupported MCP-Protocol-Version"},
                          {"data", {{"supported", supported}, {"requested", std::string(version.substr(0, 64))}}}}}};
    reply r;
    r.status = 400;
    r.body = body.dump();
    res = make_response(std::move(r));
    co_await write_reply(self, stream, res);
    co_return false;
  }
  switch (req.method()) {
    case hs_http::verb::post: co_return co_await handle_post(stream, req);
    case hs_http::verb::get: co_return co_await handle_get(stream, req);
    case hs_http::verb::delete_: {
      const std::string_view sid(req["Mcp-Session-Id"].data(), req["Mcp-Session-Id"].size());
      if (sid.empty()) {
        if (mcp_version_is_modern(std::string(version))) {
          res = make_response(error_reply_allow(405, -32600, "Method Not Allowed: no sessions in 2026-07-28", "POST"));
          co_await write_reply(self, stream, res);
        } else {
          res = make_response(error_reply_allow(400, -32600, "Bad Request: Mcp-Session-Id header is required"));
          co_await write_reply(self, stream, res);
        }
        co_return false;
      }
      auto s = find_session(sid);
      if (!s) {
        res = make_response(error_reply_allow(404, -32001, "Session not found"));
        co_await write_reply(self, stream, res);
        co_return false;
      }
      end_session(s);
      res = make_response(reply{});
      co_await write_reply(self, stream, res);
      co_return false;
    }
    default: {
      res = make_response(error_reply_allow(405, -32600, "Method Not Allowed", "GET, POST, DELETE"));
      co_await write_reply(self, stream, res);
    }
      co_return false;
  }
}

inline hs_asio::awaitable<bool> mcp_http_server_core::handle_post(boost::beast::tcp_stream& stream,
                                                                  hs_http::request<hs_http::string_body>& req) {
  auto self = shared_from_this();
  std::shared_ptr<http_response> res;
  auto field = [&](std::string_view name) {
    const auto v = req[boost::beast::string_view(name.data(), name.size())];
    return std::string_view(v.data(), v.size());
  };
  const std::string_view accept = field("Accept");
  const bool any = accept.find("*/*") != std::string_view::npos;
  if (!any && (accept.find("application/json") == std::string_view::npos ||
               accept.find("text/event-stream") == std::string_view::npos)) {
    res = make_response(error_reply_in(
        406, -32600, "Not Acceptable: the client must accept both application/json and text/event-stream"));
    co_await write_reply(self, stream, res);
    co_return false;
  }
  if (mcp_http_trim(field("Content-Type")).substr(0, 16) != "application/json") {
    res = make_response(error_reply_in(415, -32600, "Unsupported Media Type: Content-Type must be application/json"));
    co_await write_reply(self, stream, res);
    co_return false;
  }
  nlohmann::json msg;
  std::string parse_failure;
  try {
    msg = parse_untrusted_json(req.body(), json_limits{o_.max_depth, o_.max_body_bytes, json_limits{}.max_values},
                               "in the request body");
  } catch (const json_error& e) {
    parse_failure = str_cat("Parse error: ", std::string_view(e.what()).substr(0, 300));
  }
  if (!parse_failure.empty()) {
    res = make_response(error_reply_in(400, -32700, parse_failure));
    co_await write_reply(self, stream, res);
    co_return false;
  }
  if (msg.is_array()) {
    res = make_response(error_reply_in(400, -32600, "Invalid Request: batches are not supported"));
    co_await write_reply(self, stream, res);
    co_return false;
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
    res = make_response(error_reply_in(400, -32600,
                                       "Invalid Request: not a JSON-RPC 2.0 request, notification or response",
                                       has_id && (id.is_string() || id.is_number_integer()) ? id : nlohmann::json()));
    co_await write_reply(self, stream, res);
    co_return false;
  }
  const std::string method = has_method ? method_it->get<std::string>() : std::string();
  const bool is_request = has_method && has_id;
  const std::string_view version = mcp_http_trim(field("MCP-Protocol-Version"));
  const bool modern = mcp_version_is_modern(std::string(version));
  const std::string_view sid = mcp_http_trim(field("Mcp-Session-Id"));

  if (modern && has_method) {  // the 2026-07-28 mirrored headers
    const std::string_view hm = field("Mcp-Method");
    if (hm.empty() || mcp_http_trim(hm) != method) {
      res = make_response(
          error_reply_in(400, -32020,
                         hm.empty() ? std::string_view("Header mismatch: Mcp-Method is missing")
                                    : std::string_view("Header mismatch: Mcp-Method does not match the body's method"),
                         id));
      co_await write_reply(self, stream, res);
      co_return false;
    }
    const char* key = method == "tools/call" || method == "prompts/get" ? "name"
                      : method == "resources/read"                      ? "uri"
                                                                        : nullptr;
    const auto params = msg.find("params");
    if (key && params != msg.end() && params->is_object() && params->contains(key) && (*params)[key].is_string()) {
      const std::string_view hn = field("Mcp-Name");
      const auto text = hn.empty() ? std::nullopt : mcp_http_header_text(hn);
      if (!text || *text != (*params)[key].get_ref<const std::string&>()) {
        res = make_response(error_reply_in(400, -32020,
                                           hn.empty()
                                               ? std::string_view("Header mismatch: Mcp-Name is missing")
                                               : std::string_view("Header mismatch: Mcp-Name does not match the body"),
                                           id));
        co_await write_reply(self, stream, res);
        co_return false;
      }
    }
  }

  std::shared_ptr<mcp_http_session> s;
  if (is_request && method == "initialize" && !modern) {  // 2026-07-28 has no initialize: the core says -32601
    if (!sid.empty()) {
      res = make_response(
          error_reply_in(400, -32600, "Invalid Request: initialize must not carry an Mcp-Session-Id", id));
      co_await write_reply(self, stream, res);
      co_return false;
    }
    if (sessions_.size() >= o_.max_sessions) {
      std::vector<std::shared_ptr<mcp_http_session>> idle;
      for (auto& [k, v] : sessions_)
        if (session_idle(*v)) idle.push_back(v);
      for (auto& v : idle) end_session(v);
    }
    if (sessions_.size() >= o_.max_sessions) {
      res = make_response(error_reply_in(503, -32000, "Service Unavailable: too many sessions", id));
      co_await write_reply(self, stream, res);
      co_return false;
    }
    s = std::make_shared<mcp_http_session>(weak_from_this(), mcp_http_new_session_id());
    s->version = std::string(version);
    sessions_[s->session_id()] = s;
    n_sessions_ = sessions_.size();
  } else if (!sid.empty()) {
    s = find_session(sid);
    if (!s) {
      res = make_response(error_reply_in(404, -32001, "Session not found", id));
      co_await write_reply(self, stream, res);
      co_return false;
    }
  } else if (modern) {
    s = std::make_shared<mcp_http_session>(weak_from_this(), std::string());
    s->version = std::string(version);
  } else {
    res = make_response(error_reply_in(400, -32000, "Bad Request: Mcp-Session-Id header is required", id));
    co_await write_reply(self, stream, res);
    co_return false;
  }
  s->last_active = clock::now();

  mcp_http_request_info info;
  info.protocol_version = std::string(version);
  for (const auto& f : req.base()) {
    const std::string_view name(f.name_string().data(), f.name_string().size());
    if (name.size() > 10 && (name.substr(0, 10) == "Mcp-Param-" || name.substr(0, 10) == "mcp-param-")) {
      std::string k(name.substr(10));
      for (char& c : k)
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
      info.params[k] = std::string(mcp_http_trim(std::string_view(f.value().data(), f.value().size())));
    }
  }

  if (!is_request) {  // a notification or a response: accepted
    if (handler_) handler_->on_message(s, std::move(msg), info);
    reply accepted;
    accepted.status = 202;
    res = make_response(std::move(accepted));
    co_await write_reply(self, stream, res);
    co_return false;
  }
  std::size_t& pending = pending_of(*s);
  if (pending >= o_.max_pending_requests) {
    res = make_response(error_reply_in(429, -32000, "Too Many Requests: too many pending requests", id));
    co_await write_reply(self, stream, res);
    co_return false;
  }
  if (s->open_requests.count(id.dump()) != 0) {
    res = make_response(error_reply_in(400, -32600, "Invalid Request: a request with this id is still pending", id));
    co_await write_reply(self, stream, res);
    co_return false;
  }
  auto st = std::make_shared<mcp_http_stream>();
  st->id = s->next_stream++;
  st->request_id = id;
  s->streams[st->id] = st;
  s->open_requests[id.dump()] = st->id;
  ++pending;
  if (method == "initialize") s->initialize_id = id;
  auto out = std::make_shared<mcp_http_out>(strand_);
  st->out = out;
  outs_.insert(out);
  if (o_.always_sse) start_sse(*s, *st);
  if (handler_) {
    try {
      handler_->on_message(s, std::move(msg), info);
    } catch (...) {  // the core's fault answers this request alone
      deliver(
          *s,
          nlohmann::json{{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", -32603}, {"message", "Internal error"}}}},
          nullptr);
    }
  }
  // Undecided: the response first makes a JSON answer, anything else an SSE stream.
  while (!st->json_response && !st->sse && !out->dead && !closed_) {
    out->wake.expires_at(hs_asio::steady_timer::time_point::max());
    (void)co_await out->wake.async_wait(hs_asio::as_tuple(hs_asio::use_awaitable));
  }
  if (st->json_response) {
    const nlohmann::json& r = *st->json_response;
    unsigned status = 200;
    if (const auto e = r.find("error");
        e != r.end() && e->is_object() && e->contains("code") && (*e)["code"].is_number_integer())
      status = mcp_http_error_status((*e)["code"].get<int>(), modern);
    reply rep;
    rep.status = status;
    rep.body = json_dump(r);
    rep.session_id = s->session_id();
    st->out.reset();
    outs_.erase(out);
    trim_finished(*s);
    res = make_response(std::move(rep));
    co_await write_reply(self, stream, res);
    co_return false;
  }
  if (st->sse) co_await pump(self, stream, out);
  outs_.erase(out);
  detach(*s, out);
  trim_finished(*s);
  co_return true;
}

inline hs_asio::awaitable<bool> mcp_http_server_core::handle_get(boost::beast::tcp_stream& stream,
                                                                 hs_http::request<hs_http::string_body>& req) {
  auto self = shared_from_this();
  std::shared_ptr<http_response> res;
  const std::string_view accept(req[hs_http::field::accept].data(), req[hs_http::field::accept].size());
  if (accept.find("text/event-stream") == std::string_view::npos && accept.find("*/*") == std::string_view::npos) {
    res = make_response(error_reply_in(406, -32600, "Not Acceptable: the client must accept text/event-stream"));
    co_await write_reply(self, stream, res);
    co_return false;
  }
  const std::string_view sid =
      mcp_http_trim(std::string_view(req["Mcp-Session-Id"].data(), req["Mcp-Session-Id"].size()));
  const std::string_view version =
      mcp_http_trim(std::string_view(req["MCP-Protocol-Version"].data(), req["MCP-Protocol-Version"].size()));
  if (sid.empty()) {
    if (mcp_version_is_modern(std::string(version))) {
      res = make_response(error_reply_allow(405, -32600, "Method Not Allowed: no GET stream in 2026-07-28", "POST"));
      co_await write_reply(self, stream, res);
    } else {
      res = make_response(error_reply_in(400, -32600, "Bad Request: Mcp-Session-Id header is required"));
      co_await write_reply(self, stream, res);
    }
    co_return false;
  }
  auto s = find_session(sid);
  if (!s) {
    res = make_response(error_reply_in(404, -32001, "Session not found"));
    co_await write_reply(self, stream, res);
    co_return false;
  }
  s->last_active = clock::now();
  const std::string_view last =
      mcp_http_trim(std::string_view(req["Last-Event-ID"].data(), req["Last-Event-ID"].size()));
  std::shared_ptr<mcp_http_stream> st;
  std::uint64_t after = 0;
  if (!last.empty()) {
    const auto dash = last.find('-');
    std::uint64_t sid_n = 0;
    bool ok = dash != std::string_view::npos && dash > 0 && dash + 1 < last.size() && last.size() <= 41;
    for (std::size_t i = 0; ok && i < last.size(); ++i) ok = i == dash || (last[i] >= '0' && last[i] <= '9');
    if (ok) {
      sid_n = std::stoull(std::string(last.substr(0, dash)));
      after = std::stoull(std::string(last.substr(dash + 1)));
      const auto it = s->streams.find(sid_n);
      if (it != s->streams.end()) st = it->second;
    }
    if (!st) {
      res = make_response(error_reply_in(400, -32600, "Bad Request: Last-Event-ID names no stream of this session"));
      co_await write_reply(self, stream, res);
      co_return false;
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
      res = make_response(error_reply_in(429, -32000, "Too Many Requests: too many GET streams"));
      co_await write_reply(self, stream, res);
      co_return false;
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

}  // namespace tool_effects::detail

#endif  // TOOL_EFFECTS_MCP_TRANSPORT_DETAIL_HTTP_SERVER_HANDLE_HPP
