// tool_effects/etcd/detail/connection.hpp — internal to <tool_effects/etcd/async_client.hpp>: etcd's exchanges
// with one endpoint on the library's one HTTP client layer (net/http_client.hpp): a request and its
// whole answer under one deadline, or a stream (watch, keepalive) read line by line, as Asio coroutines on the
// executor the connection is made with. No thread and no event loop of its own. Bounds: the answer's header
// (64 KiB) and body (client_options::max_response_bytes), a stream line (the same), bytes after an answer
// close the connection (the layer's pool refuses it).
#ifndef TOOL_EFFECTS_ETCD_DETAIL_CONNECTION_HPP
#define TOOL_EFFECTS_ETCD_DETAIL_CONNECTION_HPP

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <tool_effects/detail/str_cat.hpp>
#include <tool_effects/etcd/detail/gateway_json.hpp>
#include <tool_effects/net/http_client.hpp>

namespace tool_effects::etcd::detail {

namespace asio = boost::asio;
namespace http = boost::beast::http;

// The TLS settings of a client's endpoints, loaded once (bad_option when a file does not load).
inline net::tls_context load_tls(const client_options& o, const std::vector<net::url>& endpoints) {
  bool any = false;
  for (const auto& u : endpoints) any = any || u.is_https();
  if (!any) return {};
  try {
    return net::tls_context(net::tls_options{o.ca_file, o.cert_file, o.key_file});
  } catch (const net::net_error& e) {
    throw error(errc::bad_option, detail::str_cat("TLS files: ", e.what()));
  }
}

// One endpoint's exchanges, its operations coroutines on `executor` (one at a time: a connection is used by
// one coroutine, or one strand, at a time). Held by shared_ptr: a stream's reader keeps it alive until its
// read ends (close() ends it).
class connection : public std::enable_shared_from_this<connection> {
 public:
  connection(asio::any_io_executor ex, net::url u, std::chrono::milliseconds timeout, std::size_t max_bytes,
             net::tls_context tls = {})
      : url_(std::move(u)), timeout_(timeout), max_bytes_(max_bytes), http_(url_, options(std::move(tls), max_bytes)),
        ready_(std::move(ex)) {}
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;
  ~connection() { close(); }

  [[nodiscard]] const net::url& where() const noexcept { return url_; }

  // POSTs `body` to `target`; returns the status and the whole body, all within the request timeout.
  asio::awaitable<std::pair<unsigned, std::string>> post(const std::string& target, const std::string& body,
                                                         const std::string& token) {
    auto req = request(target, body, token, true);
    net::exchange x;
    const auto deadline = std::chrono::steady_clock::now() + timeout_;
    co_await http_.start(x, req, deadline);
    if (!x.ec) co_await http_.read_body(x, deadline);
    if (x.ec) fail(x, "reading the response");
    auto& res = x.parser.get();
    std::pair<unsigned, std::string> out{res.result_int(), std::move(res.body())};
    // back to the pool when whole, kept alive and nothing after it; else closed
    http_.release(x);
    co_return out;
  }

  // POSTs `body` to a streaming `target` on a new connection and returns after the response header; then
  // next_line() reads the newline-separated messages. This connection is then used only for this stream.
  asio::awaitable<unsigned> open_stream(const std::string& target, const std::string& body, const std::string& token) {
    auto req = request(target, body, token, false);
    stream_ = std::make_unique<net::exchange>();
    co_await http_.start(*stream_, req, std::chrono::steady_clock::now() + timeout_, false);
    if (stream_->ec) fail(*stream_, "reading the stream's header");
    stream_->parser.body_limit(boost::none);  // bounded per line by next_line()
    co_return stream_->parser.get().result_int();
  }

  // The next complete line of the stream, waiting until `deadline` at most; nullopt when none came in time
  // or wake() was called (the stream stays usable). Throws when the stream ended, failed, or a line passed
  // the size limit. The stream is read by one reader coroutine, started at the first call, that goes on
  // between calls; it ends when the stream ends or the connection is closed.
  asio::awaitable<std::optional<std::string>> next_line(std::chrono::steady_clock::time_point deadline) {
    if (!stream_ || !stream_->conn) throw error(errc::unavailable, "the stream is closed");
    if (!reader_started_) {
      reader_started_ = true;
      stream_->conn->tcp().expires_never();
      asio::co_spawn(ready_.get_executor(), read_stream(shared_from_this()), asio::detached);
    }
    for (;;) {
      auto& body = stream_->parser.get().body();
      if (auto nl = body.find('\n'); nl != std::string::npos) {
        std::string line = body.substr(0, nl);
        body.erase(0, nl + 1);
        if (line.find_first_not_of(" \r\t") == std::string::npos) continue;
        co_return line;
      }
      if (body.size() > max_bytes_) throw error(errc::bad_response, "a stream message longer than the limit");
      if (read_error_) {
        if (stream_->parser.is_done() || *read_error_ == http::error::end_of_stream)
          throw error(errc::unavailable, "the stream ended");
        stream_->ec = *read_error_;
        fail(*stream_, "reading the stream");
      }
      if (woken_) {
        woken_ = false;
        co_return std::nullopt;
      }
      if (std::chrono::steady_clock::now() >= deadline) co_return std::nullopt;
      ready_.expires_at(deadline);
      boost::system::error_code ignored;
      co_await ready_.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
    }
  }

  // Ends a next_line() that waits (it returns nullopt), e.g. for a cancellation. On the connection's executor.
  void wake() {
    woken_ = true;
    ready_.cancel();
  }

  void close() noexcept {
    if (stream_ && stream_->conn) stream_->conn->close();
    http_.close_all();
  }

 private:
  static net::client_options options(net::tls_context tls, std::size_t max_bytes) {
    net::client_options o;
    o.tls = std::move(tls);
    o.max_idle = 1;
    o.max_idle_age = std::chrono::seconds(30);  // the gateway keeps a connection open; quiet() is checked anyway
    o.header_limit = 64 * 1024;
    o.body_limit = max_bytes;
    return o;
  }

  http::request<http::string_body> request(const std::string& target, const std::string& body,
                                           const std::string& token, bool keep_alive) const {
    http::request<http::string_body> req{http::verb::post, target, 11};
    req.set(http::field::host, url_.authority());
    req.set(http::field::content_type, "application/json");
    if (!token.empty()) req.set(http::field::authorization, token);
    req.keep_alive(keep_alive);
    req.body() = body;
    req.prepare_payload();
    return req;
  }

  // The stream's reader: parses what comes into the stream parser's body and wakes next_line().
  static asio::awaitable<void> read_stream(std::shared_ptr<connection> self) {
    for (;;) {
      auto ec = co_await net::client::read_some(*self->stream_);
      if (!ec && self->stream_->parser.is_done()) ec = http::error::end_of_stream;
      if (!ec && self->stream_->parser.get().body().size() > self->max_bytes_) ec = http::error::body_limit;
      if (ec) self->read_error_ = ec;
      self->ready_.cancel();
      if (ec) co_return;
    }
  }

  [[noreturn]] void fail(const net::exchange& x, const char* what) {
    const auto ec = x.ec;
    const char* step = x.step && *x.step ? x.step : what;
    close();
    throw error(ec == boost::beast::error::timeout ? errc::timeout : errc::unavailable,
                detail::str_cat(url_.authority(), ": ", step, ": ", ec.message()));
  }

  net::url url_;
  std::chrono::milliseconds timeout_;
  std::size_t max_bytes_;
  net::client http_;                        // the endpoint's keep-alive pool (one idle connection)
  std::unique_ptr<net::exchange> stream_;   // the stream's exchange, after open_stream()
  asio::steady_timer ready_;                // next_line() waits on it; the reader and wake() cancel it
  bool reader_started_ = false;
  bool woken_ = false;
  std::optional<boost::beast::error_code> read_error_;
};

}  // namespace tool_effects::etcd::detail

#endif  // TOOL_EFFECTS_ETCD_DETAIL_CONNECTION_HPP
