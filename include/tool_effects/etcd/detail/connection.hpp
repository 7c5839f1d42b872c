// tool_effects/etcd/detail/connection.hpp — internal to <tool_effects/etcd/async_client.hpp> (included there
// after `client_options` and `error`): one HTTP/1.1 connection to one etcd endpoint over Boost.Beast (TLS
// with TOOL_EFFECTS_ETCD_TLS), as Asio coroutines on the executor it is made with, every exchange under a
// deadline, bounded in the bytes it reads. No thread and no event loop of its own (issue 27).
#ifndef TOOL_EFFECTS_ETCD_DETAIL_CONNECTION_HPP
#define TOOL_EFFECTS_ETCD_DETAIL_CONNECTION_HPP

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include <cerrno>
#include <sys/socket.h>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <tool_effects/detail/push_options.hpp>  // Beast in C++23 (see there)
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#if defined(TOOL_EFFECTS_ETCD_TLS) && TOOL_EFFECTS_ETCD_TLS
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#endif
#include <tool_effects/detail/pop_options.hpp>

#include <tool_effects/detail/str_cat.hpp>
#include <tool_effects/etcd/detail/gateway_json.hpp>

namespace tool_effects::etcd::detail {

namespace beast = boost::beast;
namespace http = boost::beast::http;
namespace asio = boost::asio;

// One HTTP/1.1 connection to one endpoint, its operations coroutines on `executor` (one at a time: a
// connection is used by one coroutine, or one strand, at a time). Held by shared_ptr: a stream's reader
// keeps it alive until its read ends (close() ends it).
class connection : public std::enable_shared_from_this<connection> {
 public:
  connection(asio::any_io_executor ex, url u, std::chrono::milliseconds timeout, std::size_t max_bytes,
             const client_options* tls = nullptr)
      : url_(std::move(u)), timeout_(timeout), max_bytes_(max_bytes), stream_(ex), ready_(ex) {
#if defined(TOOL_EFFECTS_ETCD_TLS) && TOOL_EFFECTS_ETCD_TLS
    if (url_.tls) {
      ssl_ = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_client);
      ssl_->set_verify_mode(asio::ssl::verify_peer);
      boost::system::error_code ec;
      if (tls && !tls->ca_file.empty()) ssl_->load_verify_file(tls->ca_file, ec);
      else ssl_->set_default_verify_paths(ec);
      if (!ec && tls && !tls->cert_file.empty()) ssl_->use_certificate_chain_file(tls->cert_file, ec);
      if (!ec && tls && !tls->key_file.empty()) ssl_->use_private_key_file(tls->key_file, asio::ssl::context::pem, ec);
      if (ec) throw error(errc::bad_option, detail::str_cat("TLS files: ", ec.message()));
    }
#else
    (void)tls;
#endif
  }
  // Runs `op` on the stream requests go through: the TLS stream for https, else the TCP stream.
  template <class Op>
  decltype(auto) on_stream(Op&& op) {
#if defined(TOOL_EFFECTS_ETCD_TLS) && TOOL_EFFECTS_ETCD_TLS
    if (tls_) return op(*tls_);
#endif
    return op(stream_);
  }

  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;
  ~connection() { close(); }

  [[nodiscard]] const url& where() const noexcept { return url_; }

  // POSTs `body` to `target`; returns the status and the whole body.
  asio::awaitable<std::pair<unsigned, std::string>> post(const std::string& target, const std::string& body,
                                                         const std::string& token) {
    co_await ensure_connected();
    co_await send(target, body, token, true);
    http::response_parser<http::string_body> parser;
    parser.body_limit(max_bytes_);
    parser.header_limit(64 * 1024);
    stream_.expires_after(timeout_);
    beast::error_code ec;
    co_await on_stream([&](auto& s) { return http::async_read(s, buffer_, parser, asio::redirect_error(asio::use_awaitable, ec)); });
    if (ec) fail(ec, "reading the response");
    auto& res = parser.get();
    // Bytes after the response (a second response the server sent unasked) are never read as the next
    // request's response: the connection is closed, its buffer emptied (issue 26).
    if (!res.keep_alive() || buffer_.size() != 0) close();
    co_return std::pair<unsigned, std::string>{res.result_int(), std::move(res.body())};
  }

  // POSTs `body` to a streaming `target` and returns after the response header; then next_line() reads
  // the newline-separated messages. The connection is then used only for this stream.
  asio::awaitable<unsigned> open_stream(const std::string& target, const std::string& body, const std::string& token) {
    co_await ensure_connected();
    co_await send(target, body, token, false);
    stream_parser_ = std::make_unique<http::response_parser<http::string_body>>();
    stream_parser_->body_limit(boost::none);
    stream_.expires_after(timeout_);
    beast::error_code ec;
    co_await on_stream([&](auto& s) {
      return http::async_read_header(s, buffer_, *stream_parser_, asio::redirect_error(asio::use_awaitable, ec));
    });
    if (ec) fail(ec, "reading the stream's header");
    co_return stream_parser_->get().result_int();
  }

  // The next complete line of the stream, waiting until `deadline` at most; nullopt when none came in time
  // or wake() was called (the stream stays usable). Throws when the stream ended, failed, or a line passed
  // the size limit. The stream is read by one reader coroutine, started at the first call, that goes on
  // between calls; it ends when the stream ends or the connection is closed.
  asio::awaitable<std::optional<std::string>> next_line(std::chrono::steady_clock::time_point deadline) {
    if (!reader_started_) {
      reader_started_ = true;
      stream_.expires_never();
      asio::co_spawn(stream_.get_executor(), read_stream(shared_from_this()), asio::detached);
    }
    for (;;) {
      auto& body = stream_parser_->get().body();
      if (auto nl = body.find('\n'); nl != std::string::npos) {
        std::string line = body.substr(0, nl);
        body.erase(0, nl + 1);
        if (line.find_first_not_of(" \r\t") == std::string::npos) continue;
        co_return line;
      }
      if (body.size() > max_bytes_) throw error(errc::bad_response, "a stream message longer than the limit");
      if (read_error_) {
        if (stream_parser_->is_done() || *read_error_ == http::error::end_of_stream)
          throw error(errc::unavailable, "the stream ended");
        fail(*read_error_, "reading the stream");
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
#if defined(TOOL_EFFECTS_ETCD_TLS) && TOOL_EFFECTS_ETCD_TLS
    tls_.reset();
#endif
    beast::error_code ignored;
    stream_.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
    stream_.socket().close(ignored);
    buffer_.consume(buffer_.size());
    connected_ = false;
  }

 private:
  // The stream's reader: parses what comes into the stream parser's body and wakes next_line().
  static asio::awaitable<void> read_stream(std::shared_ptr<connection> self) {
    for (;;) {
      beast::error_code ec;
      co_await self->on_stream([&](auto& s) {
        return http::async_read_some(s, self->buffer_, *self->stream_parser_,
                                     asio::redirect_error(asio::use_awaitable, ec));
      });
      if (ec == http::error::need_buffer) ec = {};
      if (!ec && self->stream_parser_->is_done()) ec = http::error::end_of_stream;
      if (!ec && self->stream_parser_->get().body().size() > self->max_bytes_) ec = http::error::body_limit;
      if (ec) self->read_error_ = ec;
      self->ready_.cancel();
      if (ec) co_return;
    }
  }

  // A kept-alive connection is reused only when the server sent nothing since its last response: bytes waiting
  // on the socket (or the end of the connection) close it, so that they are not read as the next response.
  asio::awaitable<void> ensure_connected() {
    if (connected_) {
      char byte = 0;
      const auto n = ::recv(stream_.socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
      bool quiet = n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
#if defined(TOOL_EFFECTS_ETCD_TLS) && TOOL_EFFECTS_ETCD_TLS
      if (tls_ && SSL_pending(tls_->native_handle()) > 0) quiet = false;  // decrypted bytes held by TLS
#endif
      if (quiet) co_return;
      close();
    }
    beast::error_code ec;
    asio::ip::tcp::resolver resolver(stream_.get_executor());
    const auto results =
        co_await resolver.async_resolve(url_.host, url_.port, asio::redirect_error(asio::use_awaitable, ec));
    if (ec) fail(ec, "resolving");
    stream_.expires_after(timeout_);
    co_await stream_.async_connect(results, asio::redirect_error(asio::use_awaitable, ec));
    if (ec) fail(ec, "connecting");
#if defined(TOOL_EFFECTS_ETCD_TLS) && TOOL_EFFECTS_ETCD_TLS
    if (ssl_) {
      tls_ = std::make_unique<beast::ssl_stream<beast::tcp_stream&>>(stream_, *ssl_);
      if (!SSL_set_tlsext_host_name(tls_->native_handle(), url_.host.c_str())) {
        close();
        throw error(errc::unavailable, "TLS: cannot set the server name");
      }
      tls_->set_verify_callback(asio::ssl::host_name_verification(url_.host));
      stream_.expires_after(timeout_);
      co_await tls_->async_handshake(asio::ssl::stream_base::client, asio::redirect_error(asio::use_awaitable, ec));
      if (ec) fail(ec, "TLS handshake");
    }
#endif
    connected_ = true;
  }

  asio::awaitable<void> send(const std::string& target, const std::string& body, const std::string& token,
                             bool keep_alive) {
    http::request<http::string_body> req{http::verb::post, target, 11};
    req.set(http::field::host, detail::str_cat(url_.host, ":", url_.port));
    req.set(http::field::content_type, "application/json");
    if (!token.empty()) req.set(http::field::authorization, token);
    req.keep_alive(keep_alive);
    req.body() = body;
    req.prepare_payload();
    stream_.expires_after(timeout_);
    beast::error_code ec;
    co_await on_stream([&](auto& s) { return http::async_write(s, req, asio::redirect_error(asio::use_awaitable, ec)); });
    if (ec) fail(ec, "sending the request");
  }

  [[noreturn]] void fail(beast::error_code ec, const char* what) {
    close();
    throw error(ec == beast::error::timeout ? errc::timeout : errc::unavailable,
                detail::str_cat(url_.host, ":", url_.port, ": ", what, ": ", ec.message()));
  }

  url url_;
  std::chrono::milliseconds timeout_;
  std::size_t max_bytes_;
  beast::tcp_stream stream_;
#if defined(TOOL_EFFECTS_ETCD_TLS) && TOOL_EFFECTS_ETCD_TLS
  std::unique_ptr<asio::ssl::context> ssl_;
  std::unique_ptr<beast::ssl_stream<beast::tcp_stream&>> tls_;
#endif
  beast::flat_buffer buffer_;
  bool connected_ = false;
  std::unique_ptr<http::response_parser<http::string_body>> stream_parser_;
  asio::steady_timer ready_;  // next_line() waits on it; the reader and wake() cancel it
  bool reader_started_ = false;
  bool woken_ = false;
  std::optional<beast::error_code> read_error_;
};

}  // namespace tool_effects::etcd::detail

#endif  // TOOL_EFFECTS_ETCD_DETAIL_CONNECTION_HPP
