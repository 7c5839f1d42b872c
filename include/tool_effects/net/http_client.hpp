// tool_effects/net/http_client.hpp — internal: the library's one HTTP/1.1 client layer over Boost.Beast,
// shared by MCP over HTTP (mcp/transport/detail/http_client.hpp), OAuth (mcp/auth/detail/oauth_*.hpp) and etcd.
// Asio coroutines first; run_blocking() for a blocking caller. See docs/mcp-client.md ("The HTTP transport").
//
// API (stable; added to, never renamed) — namespace tool_effects::net:
//   tls_options{ca_file, cert_file, key_file}   verification always on: the CA file, else the system's CAs
//   tls_context(tls_options)                    loaded once, shared; throws net_error("tls_files") on a bad file;
//                                               tls_context::available: whether this build has TLS
//   address_filter                              std::function<bool(const asio::ip::address&)>: the SSRF hook
//, applied to every resolved address before connecting
//   connection                                  one TCP connection, TLS over it for https; visit(op) runs op on
//                                               the stream to read and write; buffer(); close(); quiet()
//   exchange                                    one request and its response: conn, parser, ec, step, connected,
//                                               refused (every address filtered out)
//   client_options{tls, allow, cache_resolution, max_idle, max_idle_age, header_limit, body_limit,
//                  on_connection}
//   client(url origin, client_options)          one origin; its coroutines run on the caller's executor
//     co_await c.start(x, request, deadline, reuse, header_by_deadline)  idle connection (reuse) or
//                                               resolve+connect+TLS, write the request, read the header; all by
//                                               `deadline` (x.ec/x.step on failure)
//     co_await c.read_body(x, deadline)         the rest of the body (within parser.body_limit)
//     client::parse_buffered(x, ec)             what the connection's buffer holds, parsed with no I/O; true:
//                                               the response is whole (or ec says why parsing stopped)
//     co_await client::read_some(x)             streamed bodies (SSE, etcd watch): what came, appended to
//                                               x.parser.get().body(); deadline: x.conn->tcp().expires_after()
//     c.release(x)                              back to the pool when whole, kept alive and nothing unread
//     c.close_all(); c.forget_resolution(); c.idle_count()
//   co_await fetch(verb, url, headers, body, fetch_options)  one bounded exchange, no redirect, no pool
//   run_blocking(awaitable, timeout)            drives a coroutine on a private io_context (blocking callers)
//   net::detail::resolve(host, port, deadline, ec)  name resolution bounded by a deadline (getaddrinfo runs on)
//   reasons of net_error: "tls_files", "tls_unavailable", "bad_url", "unreachable", "timeout", "body_limit"
//   Bounds: a response's header (client_options::header_limit, 64 KiB), its body (body_limit), every step
//   by the exchange's deadline; bytes after a kept-alive response close the connection (release() refuses it).
#ifndef TOOL_EFFECTS_NET_HTTP_CLIENT_HPP
#define TOOL_EFFECTS_NET_HTTP_CLIENT_HPP

#include <chrono>
#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <cerrno>
#include <sys/socket.h>

#include <array>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <tool_effects/detail/push_options.hpp>  // Beast in C++23 (see there)
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <tool_effects/detail/pop_options.hpp>

#include <tool_effects/detail/config.hpp>
#include <tool_effects/detail/str_cat.hpp>
#include <tool_effects/net/connection.hpp>
#include <tool_effects/net/url.hpp>

namespace tool_effects::net {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;

// One request's response and where its exchange stands.
struct exchange {
  connection_ptr conn;
  http::response_parser<http::string_body> parser;
  beast::error_code ec;       // the failure (beast::error::timeout past the deadline)
  const char* step = "";      // "resolving", "connecting", "TLS handshake", "sending", "reading the response header",
                              // "reading the response"
  bool connected = false;     // a connection (TLS included) was made or reused: the server was reached
  bool refused = false;       // every resolved address was refused by the address filter
  bool pooled = false;        // the connection went back to the pool
};

// What a client keeps and how much it reads.
struct client_options {
  tls_context tls{};                  // for https
  address_filter allow{};             // empty: every address
  bool cache_resolution = true;       // resolve the origin's name once (else before every connection)
  std::size_t max_idle = 8;           // idle connections kept
  std::chrono::milliseconds max_idle_age{2000};  // well under servers' keep-alive timeouts (Node's is 5 s)
  std::size_t header_limit = 64 * 1024;          // of a response's header
  std::size_t body_limit = 1024 * 1024;          // of a response's body (read_body; streamed: the caller's)
  // Told of every connection made, before it connects: an owner that must close connections in use (a
  // transport's stop) keeps them this way.
  std::function<void(const connection_ptr&)> on_connection{};
};

namespace detail {
// The head of `req` (request line, its fields in order, the empty line) byte for byte as Beast's serializer
// writes it (test NetHttpClient.TheRequestHeadIsWhatBeastsSerializerWrites): client::start writes it and the
// body in one gathered write, at a fraction of the serializer's instructions (the serializer's
// buffer views were about 20k instructions of a small MCP request).
inline std::string request_head(const http::request<http::string_body>& req) {
  std::string h;
  h.reserve(256);
  const auto method = req.method_string();
  const auto target = req.target();
  h.append(method.data(), method.size()).append(1, ' ').append(target.data(), target.size()).append(" HTTP/");
  h.append(1, static_cast<char>('0' + req.version() / 10)).append(1, '.');
  h.append(1, static_cast<char>('0' + req.version() % 10)).append("\r\n");
  for (const auto& f : req) {
    const auto name = f.name_string();
    const auto value = f.value();
    h.append(name.data(), name.size()).append(": ").append(value.data(), value.size()).append("\r\n");
  }
  h.append("\r\n");
  return h;
}
}  // namespace detail

// Everything that makes a connection: resolution under the deadline, the filter, connecting, TLS.
struct connector {
  static asio::awaitable<void> connect(exchange& x, const url& origin, const client_options& o,
                                       std::chrono::steady_clock::time_point deadline,
                                       std::vector<asio::ip::tcp::endpoint>* cache);
};

// An HTTP client of one origin: its idle connections, its resolved addresses, its bounds.
class client {
 public:
  client(url origin, client_options o) : origin_(std::move(origin)), o_(std::move(o)) {
    if (origin_.is_https() && !tls_context::available)
      throw net_error("tls_unavailable",
                      tool_effects::detail::str_cat(origin_.origin(), ": https needs a build with TLS (OpenSSL)"));
  }
  [[nodiscard]] const url& origin() const noexcept { return origin_; }
  [[nodiscard]] const client_options& options() const noexcept { return o_; }

  // Sends `req` and reads the response's header, all by `deadline` (name resolution included): on an idle
  // connection when `reuse` and one is young and quiet, else a new one. x.ec and x.step say what failed.
  // `header_by_deadline` false: the header is awaited past the deadline (a caller bounding the wait itself:
  // an MCP request's response comes when the tool is done). `x` and `req` must outlive the call.
  asio::awaitable<void> start(exchange& x, http::request<http::string_body>& req,
                              std::chrono::steady_clock::time_point deadline, bool reuse = true,
                              bool header_by_deadline = true) {
    x.parser.header_limit(static_cast<std::uint32_t>(o_.header_limit));
    x.parser.body_limit(o_.body_limit);
    if (!(reuse && take_idle(x))) {
      co_await connector::connect(x, origin_, o_, deadline, o_.cache_resolution ? &endpoints_ : nullptr);
      if (x.ec) co_return;
    }
    x.conn->tcp().expires_at(deadline);
    // A chunked body is Beast's to frame; otherwise the head and the body go out in one gathered write.
    const std::string head = req.chunked() ? std::string() : detail::request_head(req);
    auto [wec, n] = co_await x.conn->visit([&](auto& s) {
      return req.chunked() ? http::async_write(s, req, asio::as_tuple(asio::use_awaitable))
                           : asio::async_write(s, std::array<asio::const_buffer, 2>{asio::buffer(head), asio::buffer(req.body())},
                                               asio::as_tuple(asio::use_awaitable));
    });
    (void)n;
    if (wec) {
      x.ec = wec;
      x.step = "sending";
      co_return;
    }
    if (!header_by_deadline) x.conn->tcp().expires_never();
    auto [rec, r] = co_await x.conn->visit([&](auto& s) {
      return http::async_read_header(s, x.conn->buffer(), x.parser, asio::as_tuple(asio::use_awaitable));
    });
    (void)r;
    if (rec) {
      x.ec = rec;
      x.step = "reading the response header";
    }
  }

  // Parses what the connection's buffer already holds (no I/O): true when the response is then whole, or
  // when parsing failed (`ec`; http::error::body_limit past the parser's body_limit), as http::async_read
  // would have ended. A small response usually arrives with its header, and an asynchronous read of it costs
  // a composed operation and a trip through the executor.
  static bool parse_buffered(exchange& x, beast::error_code& ec) {
    auto& b = x.conn->buffer();
    while (!x.parser.is_done() && b.size() > 0) {
      const std::size_t n = x.parser.put(b.data(), ec);
      b.consume(n);
      if (ec == http::error::need_more) {
        ec = {};
        break;
      }
      if (ec) return true;
      if (n == 0) break;
    }
    return x.parser.is_done();
  }

  // Room to read a body into: Beast reads at most the buffer's free capacity (at least 512 bytes), so without it
  // a 1 MiB body or SSE event took 2,000 reads (an asynchronous operation each: a third of the MCP client's
  // instructions for a 1 MiB JSON response); with 64 KiB, about 16. The buffer is the connection's, kept while
  // it is pooled.
  static void reserve_for_body(exchange& x) { x.conn->buffer().reserve(64 * 1024); }

  // Reads the rest of the body by `deadline` (max(): no deadline); http::error::body_limit past the parser's
  // body_limit. What is buffered already is parsed in place (parse_buffered).
  asio::awaitable<void> read_body(exchange& x, std::chrono::steady_clock::time_point deadline) {
    beast::error_code ec;
    if (!parse_buffered(x, ec)) {
      reserve_for_body(x);
      if (deadline == std::chrono::steady_clock::time_point::max())
        x.conn->tcp().expires_never();
      else
        x.conn->tcp().expires_at(deadline);
      auto [e, n] = co_await x.conn->visit([&](auto& s) {
        return http::async_read(s, x.conn->buffer(), x.parser, asio::as_tuple(asio::use_awaitable));
      });
      (void)n;
      ec = e;
    }
    if (ec) {
      x.ec = ec;
      x.step = "reading the response";
    }
  }

  // Reads what comes of a streamed body (appended to parser.get().body(); the caller consumes it and bounds
  // it). No deadline unless the caller set one on x.conn->tcp(). Returns the error (need_buffer is none).
  static asio::awaitable<beast::error_code> read_some(exchange& x) {
    auto [ec, n] = co_await x.conn->visit([&](auto& s) {
      return http::async_read_some(s, x.conn->buffer(), x.parser, asio::as_tuple(asio::use_awaitable));
    });
    (void)n;
    if (ec == http::error::need_buffer) ec = {};
    co_return ec;
  }

  // After a whole response: the connection goes back to the pool when both sides keep it alive and nothing
  // unread is left (bytes after a response close it: they are never read as the next one). Returns whether.
  bool release(exchange& x) {
    if (x.ec || x.pooled || !x.conn || !x.parser.is_done() || !x.parser.get().keep_alive() || x.conn->buffer().size() != 0 ||
        idle_.size() >= o_.max_idle) {
      return false;
    }
    x.conn->tcp().expires_never();
    x.conn->idle_since = std::chrono::steady_clock::now();
    idle_.push_back(x.conn);
    x.pooled = true;
    return true;
  }

  // Closes the idle connections (the ones in use are their exchanges').
  void close_all() noexcept {
    for (auto& c : idle_) c->close();
    idle_.clear();
  }
  // Forgets the resolved addresses (the next connection resolves again).
  void forget_resolution() noexcept { endpoints_.clear(); }
  [[nodiscard]] std::size_t idle_count() const noexcept { return idle_.size(); }

 private:
  bool take_idle(exchange& x) {
    const auto now = std::chrono::steady_clock::now();
    while (!idle_.empty()) {
      connection_ptr c = std::move(idle_.back());
      idle_.pop_back();
      if (now - c->idle_since > o_.max_idle_age || !c->quiet()) {
        c->close();
        continue;
      }
      x.conn = std::move(c);
      x.connected = true;
      return true;
    }
    return false;
  }

  url origin_;
  client_options o_;
  std::vector<asio::ip::tcp::endpoint> endpoints_;
  std::vector<connection_ptr> idle_;
};

// One bounded exchange of fetch().
struct fetch_options {
  std::chrono::milliseconds timeout{10000};  // the whole exchange: resolution, connection, request, response
  std::size_t max_body_bytes = 1024 * 1024;
  std::size_t header_limit = 16 * 1024;
  tls_context tls{};
  address_filter allow{};
};

// A response of fetch().
struct fetch_response {
  unsigned status = 0;
  http::fields fields;  // the header fields
  std::string body;
};

// One exchange on a new connection (closed after it; no redirect followed), all within o.timeout. Throws
// net_error: "bad_url" (the URL), "unreachable" (refused by the filter, not resolved, connection refused,
// handshake failed, or no answer in time — one reason, so that a fetch cannot map a network), "body_limit".
inline asio::awaitable<fetch_response> fetch(http::verb verb, std::string target_url,
                                             std::vector<std::pair<std::string, std::string>> headers,
                                             std::string body, fetch_options o) {
  url u;
  try {
    u = parse_http_url(target_url);
  } catch (const url_error& e) {
    throw net_error("bad_url", e.what());
  }
  const std::string name = tool_effects::detail::str_cat(http::to_string(verb), " ", detail::url_printable(target_url));
  client_options co;
  co.tls = std::move(o.tls);
  co.allow = std::move(o.allow);
  co.cache_resolution = false;
  co.max_idle = 0;
  co.header_limit = o.header_limit;
  co.body_limit = o.max_body_bytes;
  if (u.is_https() && !tls_context::available) throw net_error("tls_unavailable", name + ": https needs a build with TLS");
  client c(u, std::move(co));
  http::request<http::string_body> req{verb, u.target(), 11};
  req.set(http::field::host, u.authority());
  for (const auto& [k, v] : headers) req.set(k, v);
  if (!body.empty()) req.body() = std::move(body);
  req.keep_alive(false);
  req.prepare_payload();
  exchange x;
  const auto deadline = std::chrono::steady_clock::now() + o.timeout;
  co_await c.start(x, req, deadline, false);
  if (!x.ec) co_await c.read_body(x, deadline);
  if (x.conn) x.conn->close();
  if (x.ec == http::error::body_limit)
    throw net_error("body_limit", tool_effects::detail::str_cat(name, ": its response body exceeds the limit of ",
                                                                std::to_string(o.max_body_bytes), " bytes"));
  if (x.ec && !(x.ec == http::error::end_of_stream && x.parser.is_header_done()))
    throw net_error("unreachable", tool_effects::detail::str_cat(name, ": could not fetch (", x.step, ")"));
  fetch_response r;
  auto& res = x.parser.get();
  r.status = res.result_int();
  r.fields = res.base();
  r.body = std::move(res.body());
  co_return r;
}

// Runs `task` to its end on a private io_context, at most `timeout` (then the io_context is stopped and
// net_error("timeout") thrown); its exception is rethrown. For blocking callers of the coroutine API.
template <class T>
T run_blocking(std::function<asio::awaitable<T>()> task, std::chrono::milliseconds timeout) {
  asio::io_context io;
  std::optional<T> result;
  std::exception_ptr error;
  asio::co_spawn(io, task(), [&](std::exception_ptr e, T v) {
    if (e) error = e;
    else result = std::move(v);
  });
  io.run_for(timeout);
  if (error) std::rethrow_exception(error);
  if (!result) throw net_error("timeout", "the operation did not finish in time");
  return std::move(*result);
}

// ---------------------------------------------------------------------------------------------- definitions

namespace detail {

// The addresses of `host`, by `deadline` (nullopt when none came in time: the resolution then ends in the
// background and its result is dropped — getaddrinfo cannot be interrupted).
inline asio::awaitable<std::optional<asio::ip::tcp::resolver::results_type>> resolve(
    std::string host, std::string port, std::chrono::steady_clock::time_point deadline, beast::error_code& ec) {
  auto ex = co_await asio::this_coro::executor;
  struct state {
    explicit state(const asio::any_io_executor& e) : resolver(e), timer(e) {}
    asio::ip::tcp::resolver resolver;
    asio::steady_timer timer;
    std::optional<asio::ip::tcp::resolver::results_type> results;
    beast::error_code ec;
    bool done = false;
  };
  auto st = std::make_shared<state>(ex);
  st->timer.expires_at(deadline);
  st->resolver.async_resolve(host, port,
                             [st](const beast::error_code& e, asio::ip::tcp::resolver::results_type r) {
                               st->done = true;
                               st->ec = e;
                               if (!e) st->results = std::move(r);
                               st->timer.cancel();
                             });
  (void)co_await st->timer.async_wait(asio::as_tuple(asio::use_awaitable));
  if (!st->done) {
    st->resolver.cancel();
    ec = beast::error::timeout;
    co_return std::nullopt;
  }
  ec = st->ec;
  co_return std::move(st->results);
}

}  // namespace detail

inline asio::awaitable<void> connector::connect(exchange& x, const url& origin, const client_options& o,
                                                std::chrono::steady_clock::time_point deadline,
                                                std::vector<asio::ip::tcp::endpoint>* cache) {
  auto ex = co_await asio::this_coro::executor;
  x.conn = std::make_shared<connection>(ex);
  if (o.on_connection) o.on_connection(x.conn);
  std::vector<asio::ip::tcp::endpoint> fresh;
  std::vector<asio::ip::tcp::endpoint>& endpoints = cache ? *cache : fresh;
  if (endpoints.empty()) {
    auto r = co_await detail::resolve(*origin.host, origin.port_or_default(), deadline, x.ec);
    if (!r || x.ec) {
      if (!x.ec) x.ec = beast::error::timeout;
      x.step = "resolving";
      co_return;
    }
    for (const auto& e : *r)
      if (!o.allow || o.allow(e.endpoint().address())) endpoints.push_back(e.endpoint());
    if (endpoints.empty()) {
      x.refused = true;
      x.ec = asio::error::access_denied;
      x.step = "resolving (every address refused)";
      co_return;
    }
  }
  x.conn->tcp().expires_at(deadline);
  auto [cec, ep] = co_await x.conn->tcp().async_connect(endpoints, asio::as_tuple(asio::use_awaitable));
  (void)ep;
  if (cec) {
    x.ec = cec;
    x.step = "connecting";
    co_return;
  }
  if (origin.is_https()) {
    if (const auto hec = co_await detail::tls_handshake(*x.conn, o.tls, *origin.host)) {
      x.ec = hec;
      x.step = "TLS handshake";
      co_return;  // the server is not the one wanted: as unreachable
    }
  }
  x.connected = true;
}

}  // namespace tool_effects::net

#endif  // TOOL_EFFECTS_NET_HTTP_CLIENT_HPP
