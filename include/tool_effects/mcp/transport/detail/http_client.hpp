// tool_effects/mcp/transport/detail/http_client.hpp — internal to <tool_effects/mcp/http.hpp> (included there
// after `mcp_http_endpoint`): the Streamable HTTP transport of one MCP connection over Boost.Beast — one
// TCP connection per exchange, everything on the client's strand, every read bounded. See docs/mcp.md
// ("The HTTP transport").
#ifndef TOOL_EFFECTS_MCP_TRANSPORT_DETAIL_HTTP_CLIENT_HPP
#define TOOL_EFFECTS_MCP_TRANSPORT_DETAIL_HTTP_CLIENT_HPP

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <cerrno>
#include <sys/socket.h>

#include <nlohmann/json.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <tool_effects/mcp/client/http_endpoint.hpp>
#include <tool_effects/detail/push_options.hpp>  // Beast in C++23 (see there)
#include <boost/beast/core/detail/base64.hpp>
#include <boost/beast/core/string.hpp>
#include <tool_effects/detail/pop_options.hpp>

#include <tool_effects/detail/str_cat.hpp>
#include <tool_effects/json/error.hpp>
#include <tool_effects/mcp/client.hpp>
#include <tool_effects/mcp/transport/detail/http_url.hpp>
#include <tool_effects/mcp/transport/detail/http_wire.hpp>
#include <tool_effects/mcp/client/detail/param_headers.hpp>
#include <tool_effects/mcp/errors.hpp>
#include <tool_effects/net/http_client.hpp>

namespace tool_effects::detail {

namespace beast = boost::beast;
namespace mcp_http = boost::beast::http;

}  // namespace tool_effects::detail

#include <tool_effects/mcp/auth/detail/oauth_flow.hpp>  // uses mcp_parse_http_url

namespace tool_effects::detail {

// A JSON-RPC error that came as the body of an HTTP error status: the
// status tells a 2026-07-28 server's "unknown method" (404) from a 200
// (docs/mcp-client.md, "Era detection over HTTP").
class mcp_http_rpc_error : public mcp_rpc_error {
 public:
  mcp_http_rpc_error(std::string server, int code, const std::string& message, nlohmann::json data, unsigned status)
      : mcp_rpc_error(std::move(server), code, message, std::move(data)), status_(status) {}
  [[nodiscard]] unsigned http_status() const noexcept { return status_; }

 private:
  unsigned status_;
};

// The transport (mcp_transport) of one connection over Streamable HTTP.
class mcp_http_transport final : public mcp_transport, public std::enable_shared_from_this<mcp_http_transport> {
  using client_options_t = net::client_options;
  using stream_ptr = net::connection_ptr;
  // One HTTP exchange on the network layer (net::exchange: its connection, the response being read, ec, the
  // step that failed, whether the server was reached, whether the connection went back to the pool).
  struct exchange : net::exchange {
    bool had_session = false;  // the request carried a session id
    bool modern = false;       // sent under a 2026-07-28 version (stateless)
    std::string method;        // of the message POSTed, for errors
    std::uint64_t auth_generation = 0;  // the tokens the request carried (mcp_oauth_authorizer)
  };
 public:
  mcp_http_transport(mcp_strand strand, std::shared_ptr<mcp_shared> shared, mcp_http_endpoint endpoint,
                     net::url url, std::shared_ptr<mcp_oauth_authorizer> auth = nullptr)
      : strand_(std::move(strand)),
        shared_(std::move(shared)),
        ep_(std::move(endpoint)),
        url_(std::move(url)),
        auth_(std::move(auth)),
        client_(url_, client_options(*shared_, ep_, url_)) {}

  void start(const std::shared_ptr<mcp_session>& c) override { conn_ = c; }

  void send(std::string message, std::int64_t request_id, mcp_outgoing meta) override {
    if (stopped_) return;
    asio::co_spawn(strand_, post(shared_from_this(), std::move(message), request_id, std::move(meta)),
                   outcome(request_id));
  }

  void abandon(std::int64_t request_id) override {
    const auto it = by_request_.find(request_id);
    if (it == by_request_.end()) return;
    close(it->second);
    by_request_.erase(it);
  }

  void initialized(const std::string& version) override {
    version_ = version;
    if (ep_.open_get_stream && !get_started_ && !stopped_) {
      get_started_ = true;
      asio::co_spawn(strand_, get_stream(shared_from_this()), outcome(0));
    }
  }

  // DELETE of the session (a server that answers 405 or does not answer
  // within shutdown_grace is left to expire it), then stop().
  asio::awaitable<void> shutdown() override {
    auto self = shared_from_this();
    if (!stopped_ && !session_.empty()) {
      auto x = std::make_shared<exchange>();
      try {
        co_await begin(self, *x, mcp_http::verb::delete_, nullptr, {}, shared_->options.shutdown_grace);
      } catch (const std::exception&) {  // a header over its bound: the server is left to expire the session
      }
    }
    stop();
  }

  // Idempotent: after the first (on the strand), a later call (the
  // connection's destructor, on any thread) touches nothing.
  void stop() noexcept override {
    if (stopped_) return;
    stopped_ = true;
    for (const auto& s : open_) close(s);
    open_.clear();
    client_.close_all();
    by_request_.clear();
    if (auth_) {
      try {
        auth_->interrupt();  // a flow waiting for the user agent on our behalf ends now
      } catch (...) {
      }
    }
  }

 private:
  // The completion of a coroutine the transport spawns (never asio::detached, which drops an exception): one
  // that escapes (a header over its bound, std::bad_alloc, a bug) is request `id`'s outcome, an mcp_error as it
  // is, anything else as protocol_error quoting it; for the GET stream or a response POSTed (id 0) it fails the
  // connection (server_exited: the next request starts a new one). So a call always gets its one outcome.
  std::function<void(std::exception_ptr)> outcome(std::int64_t id) {
    return [w = weak_from_this(), id](std::exception_ptr e) {
      if (!e) return;
      auto self = w.lock();
      auto c = self ? self->live() : nullptr;
      if (!c) return;
      std::string why = "the HTTP transport failed";
      try {
        std::rethrow_exception(e);
      } catch (const mcp_error& x) {
        why = x.what();
      } catch (const std::exception& x) {
        why = str_cat(why, ": ", quote_text(x.what()));
        e = std::make_exception_ptr(mcp_error(mcp_error_kind::protocol_error, self->shared_->name, why));
      } catch (...) {
        e = std::make_exception_ptr(mcp_error(mcp_error_kind::protocol_error, self->shared_->name, why));
      }
      if (id != 0)
        c->fail_request(id, e);
      else
        c->fail(std::make_exception_ptr(mcp_transient_error(
            mcp_error_kind::server_exited, self->shared_->name, "the GET stream or a response POSTed: " + why)));
    };
  }

  // The network layer's settings for this endpoint: its TLS (the CA file; loaded once), the idle pool
  // (`max_idle_connections`, each reused for at most 2 s: well under servers' keep-alive timeouts — Node's is 5 s — so that a
  // server rarely closes one just as a request is sent on it; a POST is never sent twice by the transport), the
  // bounds of a response, and the open connections kept for stop().
  client_options_t client_options(const mcp_shared& shared, const mcp_http_endpoint& ep, const net::url& url) {
    client_options_t o;
    if (url.is_https()) {
      try {
        o.tls = net::tls_context(net::tls_options{ep.tls_ca_file, {}, {}});
      } catch (const net::net_error& e) {
        throw mcp_error(mcp_error_kind::launch_failed, shared.name, e.what());
      }
    }
    o.max_idle = ep.max_idle_connections;
    o.max_idle_age = std::chrono::milliseconds(2000);
    o.header_limit = 64 * 1024;
    o.body_limit = shared.options.max_line_bytes;
    o.on_connection = [this](const stream_ptr& c) { open_.insert(c); };
    return o;
  }

  // After a whole response: the connection goes back to the pool when both sides keep it alive and nothing
  // unread is left (net::client::release).
  void put_idle(exchange& x, std::int64_t id) {
    if (stopped_) return;
    if (client_.release(x) && id != 0) by_request_.erase(id);
  }

  static void close(const stream_ptr& s) noexcept { s->close(); }
  void forget(const stream_ptr& s) {
    open_.erase(s);
    close(s);
  }

  [[nodiscard]] std::shared_ptr<mcp_session> live() const {
    auto c = conn_.lock();
    if (stopped_ || !c || !c->alive()) return nullptr;
    return c;
  }

  // A server's text as errors quote it: every secret the client sent replaced by "[redacted]" — the
  // OAuth tokens and client secret (mcp_oauth_authorizer::redact, the library's one redaction) and the values
  // of endpoint.headers of 8 bytes or more (an API key) — before it is cut to a preview.
  [[nodiscard]] std::string redact(std::string text) const override { return redacted(std::move(text)); }
  // 2026-07-28 over HTTP is stateless request/response; a notification's POST is answered (202).
  [[nodiscard]] bool modern_stateless() const noexcept override { return true; }
  [[nodiscard]] bool acknowledges_notifications() const noexcept override { return true; }
  [[nodiscard]] unsigned status_of(const mcp_rpc_error& e) const noexcept override {
    const auto* h = dynamic_cast<const mcp_http_rpc_error*>(&e);
    return h ? h->http_status() : 0;
  }
  [[nodiscard]] std::string redacted(std::string text) const {
    if (auth_) text = auth_->redact(std::move(text));
    std::vector<std::string> keys;
    for (const auto& [k, v] : ep_.headers)
      if (v.size() >= 8) keys.push_back(v);
    return keys.empty() ? text : mcp_redact(std::move(text), keys);
  }

  std::string describe(const char* method, const exchange& x) const {
    return str_cat(method, " ", mcp_printable_url(url_.origin() + url_.target()), ": ", x.step, ": ",
                   x.ec == beast::error::timeout ? std::string("timed out") : x.ec.message());
  }

  // Connects (or takes an idle connection, for a POST), sends one request and reads the response header (x.ec
  // and x.step say where it failed). `timeout` bounds resolving, connecting and sending, and the header too
  // unless `header_timeout` is false (a request's response waits as long as the request may).
  static asio::awaitable<void> begin(std::shared_ptr<mcp_http_transport> self, exchange& x, mcp_http::verb verb,
                                     const std::string* body, const std::string& last_event_id,
                                     std::chrono::milliseconds timeout, bool header_timeout = true,
                                     const mcp_outgoing* meta = nullptr) {
    std::string authorization;
    if (self->auth_) {
      auto auth = self->auth_;  // the header may refresh the token first
      authorization = co_await auth->header();
      x.auth_generation = auth->generation();
      if (self->stopped_) co_return;
    }
    // The request is built, and every header checked, before a connection is taken: one over its bound fails
    // the request at once (mcp_request_headers throws), and nothing is sent.
    mcp_http::request<mcp_http::string_body> req{verb, self->url_.target(), 11};
    mcp_request_headers h(req, self->shared_->name);
    h.set("Host", self->url_.authority());
    for (const auto& [k, v] : self->ep_.headers) h.set(k, v);
    if (!authorization.empty()) h.set("Authorization", authorization);
    if (verb == mcp_http::verb::post) {
      h.set("Content-Type", "application/json");
      h.set("Accept", "application/json, text/event-stream");
      req.body() = *body;
    } else if (verb == mcp_http::verb::get) {
      h.set("Accept", "text/event-stream");
    }
    x.modern = meta && meta->modern;
    if (meta) x.method = meta->method;
    if (!self->session_.empty() && !x.modern) {  // 2026-07-28 has no sessions
      h.set("Mcp-Session-Id", self->session_);
      x.had_session = true;
    }
    const std::string& version = meta && !meta->version.empty() ? meta->version : self->version_;
    if (!version.empty()) h.set("MCP-Protocol-Version", version);
    if (x.modern) {  // the standard request headers of 2026-07-28 ("Request Metadata")
      h.set("Mcp-Method", mcp_http_header_value(meta->method));
      if (meta->name) h.set("Mcp-Name", mcp_http_header_value(*meta->name));
      for (const auto& [name, value] : meta->params) h.set("Mcp-Param-" + name, mcp_http_header_value(value));
    }
    if (!last_event_id.empty()) h.set("Last-Event-ID", last_event_id);
    req.keep_alive(verb == mcp_http::verb::post);  // a POST's connection may serve the next one
    req.prepare_payload();
    co_await self->client_.start(x, req, std::chrono::steady_clock::now() + timeout, verb == mcp_http::verb::post,
                                 header_timeout);
    if (self->stopped_) co_return;
    if (x.ec) {
      if (x.step == std::string_view("TLS handshake")) x.connected = false;  // not the server wanted: unreachable
      co_return;
    }
    // The session id the server assigns with the initialize response (a
    // modern exchange ignores one: 2026-07-28 servers mint none).
    if (self->session_.empty() && !x.modern) {
      const auto& h = x.parser.get();
      if (const auto s = h.find("Mcp-Session-Id"); s != h.end() && mcp_session_id_ok(s->value()))
        self->session_ = std::string(s->value());
    }
  }

  [[nodiscard]] static bool is_sse(const exchange& x) {
    const auto ct = x.parser.get()[mcp_http::field::content_type];
    return ct.size() >= 17 && beast::iequals(ct.substr(0, 17), "text/event-stream");
  }
  [[nodiscard]] static bool is_json(const exchange& x) {
    const auto ct = x.parser.get()[mcp_http::field::content_type];
    return ct.size() >= 16 && beast::iequals(ct.substr(0, 16), "application/json");
  }

  // A fault of the transport: the request fails alone (`kind`), or, when the
  // server could not be reached at all, the whole connection (server_exited:
  // the next request starts a new session, as a restart does on stdio).
  void fault(std::int64_t id, mcp_error_kind kind, const std::string& message, bool whole) {
    auto c = live();
    if (!c) return;
    auto e = std::make_exception_ptr(mcp_transient_error(kind, shared_->name, message));
    if (whole)
      c->fail(e);
    else if (id != 0)
      c->fail_request(id, e);
  }

  // Whether `ec` says the answer was not HTTP (protocol_error), rather than
  // that the connection ended before it was whole (server_exited).
  [[nodiscard]] static bool not_http(const beast::error_code& ec) {
    return ec.category() == mcp_http::make_error_code(mcp_http::error::bad_version).category() &&
           ec != mcp_http::error::end_of_stream && ec != mcp_http::error::partial_message;
  }

  [[nodiscard]] std::string too_long() const {
    return str_cat("its response body exceeds the limit of ", std::to_string(shared_->options.max_line_bytes),
                   " bytes (options.max_line_bytes)");
  }

  // After a response header: whether the server asks for (re)authorization (401, or 403 insufficient_scope) and
  // it was done, so that the message is sent again (true). When the server does not ask: false, `x` untouched.
  // When it asks but the authorization fails, or `tries` reached max_authorizations_per_request, or the
  // message is no longer wanted: true with x.step "authorization" (message `id` failed, if it is awaited).
  static asio::awaitable<bool> reauthorize(std::shared_ptr<mcp_http_transport> self, exchange& x, std::size_t tries,
                                           std::int64_t id) {
    const auto& h = x.parser.get();
    const std::string www(h[mcp_http::field::www_authenticate]);
    const unsigned status = h.result_int();
    if (!self->auth_ || !mcp_oauth_wants(status, www)) co_return false;
    self->forget(x.conn);
    x.step = "authorization";
    auto wanted = [&] {
      auto c = self->live();
      return c && (id == 0 || c->pending(id));
    };
    auto fail = [&](const std::string& m) {
      if (auto c = self->live(); c && id != 0)
        c->fail_request(id, std::make_exception_ptr(mcp_error(mcp_error_kind::authorization_failed, self->shared_->name, m)));
    };
    if (!wanted()) co_return true;
    if (tries >= self->ep_.authorization->max_authorizations_per_request) {
      fail("HTTP " + std::to_string(status) + " after " + std::to_string(tries) +
           " authorization(s) for this request (mcp_oauth_options::max_authorizations_per_request)");
      co_return true;
    }
    try {
      auto auth = self->auth_;
      // A named std::function: GCC 12 destroys a temporary in a co_await expression twice.
      std::function<bool()> alive = [w = std::weak_ptr<mcp_http_transport>(self)] {
        auto s = w.lock();
        return s && s->live() != nullptr;
      };
      co_await auth->challenge(status, www, x.auth_generation, std::move(alive));
    } catch (const std::exception& e) {
      fail(e.what());
      co_return true;
    }
    if (!wanted()) co_return true;
    x.step = "";
    co_return true;
  }

  // One message POSTed; its response (JSON or SSE) delivered. `id` < 0: a
  // notification whose acceptance is reported (settle or fail_request).
  static asio::awaitable<void> post(std::shared_ptr<mcp_http_transport> self, std::string body, std::int64_t id,
                                    mcp_outgoing meta) {
    auto x = std::make_shared<exchange>();
    const auto timeout = id > 0 ? self->ep_.connect_timeout : self->shared_->options.request_timeout;
    co_await begin(self, *x, mcp_http::verb::post, &body, {}, timeout, id <= 0, &meta);
    // OAuth (mcp/oauth.hpp): a 401, or 403 insufficient_scope, authorizes and sends the message again, at most
    // max_authorizations_per_request times — a request, a notification (awaited or not) or a response alike.
    for (std::size_t tries = 0; self->auth_ && !x->ec; ++tries) {
      if (!co_await reauthorize(self, *x, tries, id)) break;
      if (x->step == std::string_view("authorization")) co_return;  // given up (request `id` failed)
      x = std::make_shared<exchange>();
      co_await begin(self, *x, mcp_http::verb::post, &body, {}, timeout, id <= 0, &meta);
    }
    if (id != 0 && x->conn && !self->stopped_) self->by_request_[id] = x->conn;
    co_await self->finish_post(self, x, id);
    if (id != 0) {
      const auto it = self->by_request_.find(id);
      if (it != self->by_request_.end() && it->second == x->conn) self->by_request_.erase(it);
    }
    if (!x->pooled) self->forget(x->conn);
  }

  asio::awaitable<void> finish_post(std::shared_ptr<mcp_http_transport> self, std::shared_ptr<exchange> x,
                                    std::int64_t id) {
    if (!live()) co_return;
    if (x->ec == mcp_http::error::body_limit) {  // Content-Length past the limit
      fault(id, mcp_error_kind::protocol_error, too_long(), false);
      co_return;
    }
    if (x->ec) {
      // A reset or garbage after the connection was made fails this request alone.
      fault(id, not_http(x->ec) ? mcp_error_kind::protocol_error : mcp_error_kind::server_exited,
            describe("POST", *x), !x->connected);
      co_return;
    }
    const unsigned status = x->parser.get().result_int();
    if (status == 404 && x->had_session) {  // the session is gone: a new one on the next request
      fault(id, mcp_error_kind::server_exited,
            "POST " + url_.origin() + ": HTTP 404: the server ended the session (the next request starts a new one)",
            true);
      co_return;
    }
    if (id < 0 && status / 100 != 2) {  // a notification the connection waits for, refused
      x->parser.body_limit(std::min<std::size_t>(shared_->options.max_line_bytes, 64 * 1024));
      co_await client_.read_body(*x, std::chrono::steady_clock::now() + shared_->options.request_timeout);
      if (auto c = live()) c->fail_request(id, http_error(x, status, "POST", x->method.c_str()));
      co_return;
    }
    if (id <= 0) {  // a notification or a response: 202 expected, any body ignored
      if (x->parser.is_done()) put_idle(*x, 0);
      if (auto c = live(); c && id < 0) c->settle(id);
      co_return;
    }
    if (status == 202) {
      if (x->modern)  // no GET stream to bring the response
        fault(id, mcp_error_kind::protocol_error,
              "POST " + url_.origin() + ": HTTP 202 to a request (2026-07-28 has no stream for a later response)", false);
      co_return;  // the response comes on the GET stream
    }
    if (status / 100 == 2 && is_sse(*x)) {
      mcp_sse_parser sse;
      co_await read_sse(self, x, id, sse);
      if (!x->modern) {
        co_await resume(self, id, sse);
        co_return;
      }
      if (auto c = live(); c && c->pending(id))  // 2026-07-28: streams are not resumable
        fault(id, mcp_error_kind::server_exited,
              "the SSE stream of its response ended before the response (2026-07-28 streams are not resumed: "
              "the request is lost; a retry sends it anew)",
              false);
      co_return;
    }
    // A whole body: the response (2xx JSON), or an error (a JSON-RPC error object, or text).
    if (status / 100 != 2) x->parser.body_limit(std::min<std::size_t>(shared_->options.max_line_bytes, 64 * 1024));
    co_await client_.read_body(*x, std::chrono::steady_clock::time_point::max());
    const beast::error_code ec = x->ec;  // with x->step "reading the response"
    auto c = live();
    if (!c) co_return;
    if (ec && ec != mcp_http::error::body_limit && status / 100 == 2) {
      fault(id, not_http(ec) ? mcp_error_kind::protocol_error : mcp_error_kind::server_exited, describe("POST", *x),
            false);
      co_return;
    }
    std::string& text = x->parser.get().body();
    if (status / 100 == 2) {
      if (ec == mcp_http::error::body_limit) {
        fault(id, mcp_error_kind::protocol_error, too_long(), false);
        co_return;
      }
      if (!is_json(*x)) {
        const std::string m = str_cat("POST: HTTP ", std::to_string(status), " with content type \"",
                                      quote_text(std::string(x->parser.get()[mcp_http::field::content_type]), 100),
                                      "\" (neither application/json nor text/event-stream): \"",
                                      quote_text(redacted(text)), "\"");
        fault(id, mcp_error_kind::protocol_error, m, false);
        co_return;
      }
      put_idle(*x, id);  // before delivering: the response ends the request
      c->deliver(text);
      co_return;
    }
    c->fail_request(id, http_error(x, status, "POST", nullptr));
  }

  // The error of an HTTP error status: a JSON-RPC error object in the body
  // is the request's error response (its id is often null; mcp_http_rpc_error,
  // the status kept for era detection); anything else a protocol error.
  [[nodiscard]] std::exception_ptr http_error(const std::shared_ptr<exchange>& x, unsigned status, const char* verb,
                                              const char* what) const {
    const std::string& text = x->parser.get().body();
    try {
      const nlohmann::json j = parse_json(text, "");
      if (j.is_object() && j.contains("error") && j["error"].is_object()) {
        const auto& e = j["error"];
        const int code = e.contains("code") && e["code"].is_number_integer() ? e["code"].get<int>() : 0;
        std::string message = e.contains("message") && e["message"].is_string() ? e["message"].get<std::string>()
                                                                                : std::string("(no message)");
        message = "HTTP " + std::to_string(status) + ": " + quote_text(redacted(std::move(message)), 2000);
        if (what) message = std::string(what) + ": " + message;
        nlohmann::json data = e.contains("data") ? e["data"] : nlohmann::json();
        if (!data.is_null()) {  // data that quotes a secret is kept as its redacted text
          const std::string dumped = data.dump();
          if (std::string r = redacted(dumped); r != dumped) data = std::move(r);
        }
        return std::make_exception_ptr(mcp_http_rpc_error(shared_->name, code, message, std::move(data), status));
      }
    } catch (const std::exception&) {
    }
    const std::string m = str_cat(
        verb, " ", url_.origin(), what ? str_cat(" (", what, ")") : std::string(), ": HTTP ", std::to_string(status),
        " ", std::string(x->parser.get().reason()),
        (status == 401 || status == 403) && !auth_ ? " (no mcp_http_endpoint::authorization is set)" : "",
        text.empty() ? std::string() : str_cat(": \"", quote_text(redacted(text)), "\""));
    return std::make_exception_ptr(mcp_transient_error(mcp_error_kind::protocol_error, shared_->name, m));
  }

  // Reads an SSE body: every message event delivered. Ends when the stream
  // ends or fails, or when request `id` (non-zero) was answered. An event
  // longer than the limit of one message fails the request (protocol_error,
  // as an oversized line does on stdio); on the GET stream, the connection.
  static asio::awaitable<void> read_sse(std::shared_ptr<mcp_http_transport> self, std::shared_ptr<exchange> x,
                                        std::int64_t id, mcp_sse_parser& sse) {
    const std::size_t limit = self->shared_->options.max_line_bytes;
    sse.begin_stream(limit);
    net::client::reserve_for_body(*x);
    x->parser.body_limit(boost::none);
    x->conn->tcp().expires_never();
    for (;;) {
      auto c = self->live();
      if (!c) co_return;
      std::string& body = x->parser.get().body();
      sse.feed(body, [&](std::string_view data) {
        if (auto cc = self->live()) cc->deliver(data);
      });
      if (!self->live()) co_return;
      if (id != 0 && !c->pending(id)) {  // answered: the end of the stream frees the connection for reuse
        co_await drain(self, x, id, sse);
        co_return;
      }
      if (sse.oversized() || body.size() + sse.pending_bytes() > limit) {
        const std::string m =
            str_cat("an event of its SSE stream exceeds the limit of ", std::to_string(limit), " bytes (options.max_line_bytes)");
        self->fault(id, mcp_error_kind::protocol_error, m, id == 0);
        co_return;
      }
      if (x->parser.is_done()) co_return;
      // What the connection's buffer already holds is parsed in place (no asynchronous read: see
      // net::client::parse_buffered); only when it brought nothing new is the socket read.
      beast::error_code ec;
      const std::size_t buffered = x->conn->buffer().size();
      if (buffered == 0 || (!net::client::parse_buffered(*x, ec) && x->conn->buffer().size() == buffered))
        ec = co_await net::client::read_some(*x);  // the one HTTP client's streamed read
      if (ec && ec != mcp_http::error::need_buffer) {
        if (!x->parser.get().body().empty() && self->live()) {  // what came before the end
          sse.feed(x->parser.get().body(), [&](std::string_view data) {
            if (auto cc = self->live()) cc->deliver(data);
          });
        }
        co_return;
      }
    }
  }

  // After the response of request `id` came on its SSE stream: the server
  // usually ends the stream at once; when it does within a short wait (and
  // keeps the connection alive), the connection goes back to the pool.
  static asio::awaitable<void> drain(std::shared_ptr<mcp_http_transport> self, std::shared_ptr<exchange> x,
                                     std::int64_t id, mcp_sse_parser& sse) {
    for (int i = 0; i < 4 && !x->parser.is_done(); ++i) {
      x->conn->tcp().expires_after(std::chrono::milliseconds(200));
      const auto ec = co_await net::client::read_some(*x);
      if (ec || !self->live()) co_return;
      std::string& body = x->parser.get().body();
      sse.feed(body, [&](std::string_view data) {
        if (auto cc = self->live()) cc->deliver(data);
      });
      if (sse.oversized() || body.size() + sse.pending_bytes() > self->shared_->options.max_line_bytes) co_return;
    }
    if (x->parser.is_done() && self->live()) self->put_idle(*x, id);
  }

  // The SSE stream of request `id` ended without its response: resumed by a
  // GET with Last-Event-ID after the server's retry (specification
  // 2025-11-25, "Resumability and Redelivery"), until the response came, the
  // stream cannot be resumed (no event id) or max_reconnects resumptions in a
  // row brought no event.
  static asio::awaitable<void> resume(std::shared_ptr<mcp_http_transport> self, std::int64_t id, mcp_sse_parser& sse) {
    std::size_t idle = 0;
    (void)sse.take_events();
    for (;;) {
      auto c = self->live();
      if (!c || !c->pending(id)) co_return;
      if (sse.last_event_id().empty()) {
        self->fault(id, mcp_error_kind::server_exited,
                    "the SSE stream of its response ended before the response, without an event id to resume from",
                    false);
        co_return;
      }
      if (idle >= self->ep_.max_reconnects) {
        const std::string m = str_cat("the SSE stream of its response ended before the response ", std::to_string(idle),
                                      " times in a row without an event (endpoint.max_reconnects)");
        self->fault(id, mcp_error_kind::server_exited, m, false);
        co_return;
      }
      co_await self->wait_retry(sse, idle);
      if (!self->live() || !c->pending(id)) co_return;
      auto x = std::make_shared<exchange>();
      co_await begin(self, *x, mcp_http::verb::get, nullptr, sse.last_event_id(), self->ep_.connect_timeout);
      if (!self->stopped_) self->by_request_[id] = x->conn;
      if (!x->ec && x->parser.get().result_int() == 200 && is_sse(*x)) co_await read_sse(self, x, id, sse);
      else if (!x->ec) {
        const std::string m = str_cat("resuming the SSE stream of its response (GET with Last-Event-ID): HTTP ",
                                      std::to_string(x->parser.get().result_int()));
        self->fault(id, mcp_error_kind::server_exited, m, false);
        self->forget(x->conn);
        co_return;
      }
      self->forget(x->conn);
      idle = sse.take_events() == 0 ? idle + 1 : 0;
    }
  }

  // The wait before reconnecting a stream after `idle` reconnections in a row that delivered no message: the
  // server's `retry` (else endpoint.default_retry) within [min_retry, endpoint.max_retry], doubled for each
  // such reconnection and capped by max_retry again. A `retry: 0` is 100 ms, never 0: a stream that only ends
  // is reconnected at 0.1, 0.2, 0.4, 0.8 ... s (3,138 GETs in 2 s before).
  static constexpr std::chrono::milliseconds min_retry{100};
  [[nodiscard]] std::chrono::milliseconds retry_delay(const mcp_sse_parser& sse, std::size_t idle) const {
    const auto cap = std::max(ep_.max_retry, min_retry);
    return mcp_backoff(std::clamp(sse.retry().value_or(ep_.default_retry), min_retry, cap), cap, idle);
  }
  // A subscriptions/listen that ended: reopened as the GET stream is reconnected (without a server's `retry`).
  [[nodiscard]] std::optional<std::chrono::milliseconds> reopen_delay(std::size_t attempt) const override {
    if (attempt >= ep_.max_reconnects) return std::nullopt;
    const auto cap = std::max(ep_.max_retry, min_retry);
    return mcp_backoff(std::clamp(ep_.default_retry, min_retry, cap), cap, attempt);
  }
  asio::awaitable<void> wait_retry(const mcp_sse_parser& sse, std::size_t idle) {
    asio::steady_timer t(strand_, retry_delay(sse, idle));
    (void)co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
  }

  // The GET stream of the server's own messages, reconnected (with
  // Last-Event-ID) after it ends; given up when the server has none (any
  // answer but 200 text/event-stream) or after max_reconnects attempts in a
  // row without an event.
  static asio::awaitable<void> get_stream(std::shared_ptr<mcp_http_transport> self) {
    mcp_sse_parser sse;
    std::size_t idle = 0;
    while (self->live() && idle <= self->ep_.max_reconnects) {
      auto x = std::make_shared<exchange>();
      co_await begin(self, *x, mcp_http::verb::get, nullptr, sse.last_event_id(), self->ep_.connect_timeout);
      if (!self->live()) break;
      // A 401 (or 403 insufficient_scope): authorized again and the GET sent again, as a POST would be.
      for (std::size_t tries = 0; self->auth_ && !x->ec; ++tries) {
        if (!co_await reauthorize(self, *x, tries, 0)) break;
        if (x->step == std::string_view("authorization") || !self->live()) co_return;
        x = std::make_shared<exchange>();
        co_await begin(self, *x, mcp_http::verb::get, nullptr, sse.last_event_id(), self->ep_.connect_timeout);
      }
      if (!self->live()) break;
      if (!x->ec && !(x->parser.get().result_int() == 200 && is_sse(*x))) {
        self->forget(x->conn);
        break;  // 405: the server offers no GET stream
      }
      if (!x->ec) co_await read_sse(self, x, 0, sse);
      self->forget(x->conn);
      idle = sse.take_events() == 0 ? idle + 1 : 0;
      if (idle > self->ep_.max_reconnects) break;
      co_await self->wait_retry(sse, idle - (idle > 0 ? 1 : 0));
    }
  }

  mcp_strand strand_;
  std::shared_ptr<mcp_shared> shared_;
  mcp_http_endpoint ep_;
  net::url url_;
  std::shared_ptr<mcp_oauth_authorizer> auth_;  // when ep_.authorization is set; the client's, across restarts
  std::weak_ptr<mcp_session> conn_;
  std::string session_;  // Mcp-Session-Id, once the server gave one
  std::string version_;  // MCP-Protocol-Version, once negotiated
  bool stopped_ = false;
  bool get_started_ = false;
  std::unordered_set<stream_ptr> open_;
  std::unordered_map<std::int64_t, stream_ptr> by_request_;
  net::client client_;  // the network layer: connections, TLS, the idle pool (after url_, ep_ and shared_)
};

}  // namespace tool_effects::detail

#endif  // TOOL_EFFECTS_MCP_TRANSPORT_DETAIL_HTTP_CLIENT_HPP
