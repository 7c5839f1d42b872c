// tool_effects/etcd/detail/connection.hpp — internal to <tool_effects/etcd/client.hpp> (included there
// after `client_options` and `error`): one HTTP/1.1 connection to one etcd endpoint over Boost.Beast (TLS
// with TOOL_EFFECTS_ETCD_TLS), every operation under a deadline, bounded in the bytes it reads.
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

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
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

// One HTTP/1.1 connection to one endpoint with per-operation deadlines, driven synchronously on a private
// io_context (so a hung server costs at most the timeout).
class connection {
 public:
  connection(url u, std::chrono::milliseconds timeout, std::size_t max_bytes, const client_options* tls = nullptr)
      : url_(std::move(u)), timeout_(timeout), max_bytes_(max_bytes), stream_(ioc_) {
#if defined(TOOL_EFFECTS_ETCD_TLS) && TOOL_EFFECTS_ETCD_TLS
    if (url_.tls) {
      ssl_ = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_client);
      ssl_->set_verify_mode(asio::ssl::verify_peer);
      boost::system::error_code ec;
      if (tls && !tls->ca_file.empty()) ssl_->load_verify_file(tls->ca_file, ec);
      else ssl_->set_default_verify_paths(ec);
      if (!ec && tls && !tls->cert_file.empty()) ssl_->use_certificate_chain_file(tls->cert_file, ec);
      if (!ec && tls && !tls->key_file.empty()) ssl_->use_private_key_file(tls->key_file, asio::ssl::context::pem, ec);
      if (ec) throw error("bad_option", detail::str_cat("TLS files: ", ec.message()));
    }
#else
    (void)tls;
#endif
  }

  [[nodiscard]] const url& where() const noexcept { return url_; }

  // Runs `op` on the stream requests go through: the TLS stream for https, else the TCP stream.
  template <class Op>
  decltype(auto) on_stream(Op&& op) {
#if defined(TOOL_EFFECTS_ETCD_TLS) && TOOL_EFFECTS_ETCD_TLS
    if (tls_) return op(*tls_);
#endif
    return op(stream_);
  }

  // POSTs `body` to `target`; returns the status and the whole body.
  std::pair<unsigned, std::string> post(const std::string& target, const std::string& body,
                                        const std::string& token) {
    ensure_connected();
    send(target, body, token, true);
    http::response_parser<http::string_body> parser;
    parser.body_limit(max_bytes_);
    parser.header_limit(64 * 1024);
    stream_.expires_after(timeout_);
    beast::error_code ec = run_op([&](auto done) {
      on_stream([&](auto& s) { http::async_read(s, buffer_, parser, done); });
    });
    if (ec) fail(ec, "reading the response");
    auto& res = parser.get();
    // Bytes after the response (a second response the server sent unasked) are never read as the next
    // request's response: the connection is closed, its buffer emptied (issue 26).
    if (!res.keep_alive() || buffer_.size() != 0) close();
    return {res.result_int(), std::move(res.body())};
  }

  // POSTs `body` to a streaming `target` and returns after the response header; then next_line() reads
  // the newline-separated messages. The connection is then used only for this stream.
  unsigned open_stream(const std::string& target, const std::string& body, const std::string& token) {
    ensure_connected();
    send(target, body, token, false);
    stream_parser_ = std::make_unique<http::response_parser<http::string_body>>();
    stream_parser_->body_limit(boost::none);
    stream_.expires_after(timeout_);
    beast::error_code ec =
        run_op([&](auto done) {
          on_stream([&](auto& s) { http::async_read_header(s, buffer_, *stream_parser_, done); });
        });
    if (ec) fail(ec, "reading the stream's header");
    return stream_parser_->get().result_int();
  }

  // The next complete line of the stream, waiting at most `wait`; nullopt when none came in time (the read
  // stays pending and the stream usable: the next call goes on waiting). Throws when the stream ended or
  // failed.
  std::optional<std::string> next_line(std::chrono::milliseconds wait) {
    auto& body = stream_parser_->get().body();
    const auto deadline = std::chrono::steady_clock::now() + wait;
    for (;;) {
      if (auto nl = body.find('\n'); nl != std::string::npos) {
        std::string line = body.substr(0, nl);
        body.erase(0, nl + 1);
        if (line.find_first_not_of(" \r\t") == std::string::npos) continue;
        return line;
      }
      if (body.size() > max_bytes_) throw error("bad_response", "a stream message longer than the limit");
      if (stream_parser_->is_done()) throw error("unavailable", "the stream ended");
      const auto now = std::chrono::steady_clock::now();
      if (now >= deadline) return std::nullopt;
      if (!read_pending_) {
        read_pending_ = true;
        stream_.expires_never();
        on_stream([&](auto& s) {
          http::async_read_some(s, buffer_, *stream_parser_, [this](beast::error_code ec, std::size_t) {
            read_result_ = ec;
            read_pending_ = false;
          });
        });
      }
      ioc_.restart();
      ioc_.run_for(deadline - now);
      if (read_pending_) return std::nullopt;
      if (read_result_ && read_result_ != http::error::need_buffer) fail(read_result_, "reading the stream");
    }
  }

  // For a poller of streams: the socket (-1 when closed), and whether next_line() may return without the
  // socket becoming readable (a complete line or the end already parsed, or bytes read and not parsed).
  [[nodiscard]] int native_handle() const noexcept {
    return connected_ ? const_cast<beast::tcp_stream&>(stream_).socket().native_handle() : -1;
  }
  [[nodiscard]] bool may_have_buffered() const noexcept {
#if defined(TOOL_EFFECTS_ETCD_TLS) && TOOL_EFFECTS_ETCD_TLS
    // decrypted bytes the TLS layer holds do not make the socket readable
    if (tls_ && SSL_pending(const_cast<beast::ssl_stream<beast::tcp_stream&>&>(*tls_).native_handle()) > 0) return true;
#endif
    if (!stream_parser_) return false;
    // bytes read but not parsed yet (a chunk's header parsed, its data not): no read is pending for them
    return stream_parser_->is_done() || stream_parser_->get().body().find('\n') != std::string::npos ||
           (!read_pending_ && buffer_.size() > 0);
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
  template <class Start>
  beast::error_code run_op(Start&& start) {
    beast::error_code result = asio::error::would_block;
    start([&result](beast::error_code ec, std::size_t = 0) { result = ec; });
    ioc_.restart();
    ioc_.run();
    return result;
  }

  // A kept-alive connection is reused only when the server sent nothing since its last response: bytes waiting
  // on the socket (or the end of the connection) close it, so that they are not read as the next response.
  void ensure_connected() {
    if (connected_) {
      char byte = 0;
      const auto n = ::recv(stream_.socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
      bool quiet = n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
#if defined(TOOL_EFFECTS_ETCD_TLS) && TOOL_EFFECTS_ETCD_TLS
      if (tls_ && SSL_pending(tls_->native_handle()) > 0) quiet = false;  // decrypted bytes held by TLS
#endif
      if (quiet) return;
      close();
    }
    asio::ip::tcp::resolver resolver(ioc_);
    beast::error_code ec;
    const auto results = resolver.resolve(url_.host, url_.port, ec);
    if (ec) fail(ec, "resolving");
    stream_.expires_after(timeout_);
    ec = run_op([&](auto done) {
      stream_.async_connect(results, [done](beast::error_code e, const asio::ip::tcp::endpoint&) mutable { done(e); });
    });
    if (ec) fail(ec, "connecting");
#if defined(TOOL_EFFECTS_ETCD_TLS) && TOOL_EFFECTS_ETCD_TLS
    if (ssl_) {
      tls_ = std::make_unique<beast::ssl_stream<beast::tcp_stream&>>(stream_, *ssl_);
      if (!SSL_set_tlsext_host_name(tls_->native_handle(), url_.host.c_str())) {
        close();
        throw error("unavailable", "TLS: cannot set the server name");
      }
      tls_->set_verify_callback(asio::ssl::host_name_verification(url_.host));
      stream_.expires_after(timeout_);
      ec = run_op([&](auto done) { tls_->async_handshake(asio::ssl::stream_base::client, done); });
      if (ec) fail(ec, "TLS handshake");
    }
#endif
    connected_ = true;
  }

  void send(const std::string& target, const std::string& body, const std::string& token, bool keep_alive) {
    http::request<http::string_body> req{http::verb::post, target, 11};
    req.set(http::field::host, url_.host + ":" + url_.port);
    req.set(http::field::content_type, "application/json");
    if (!token.empty()) req.set(http::field::authorization, token);
    req.keep_alive(keep_alive);
    req.body() = body;
    req.prepare_payload();
    stream_.expires_after(timeout_);
    beast::error_code ec = run_op([&](auto done) { on_stream([&](auto& s) { http::async_write(s, req, done); }); });
    if (ec) fail(ec, "sending the request");
  }

  [[noreturn]] void fail(beast::error_code ec, const char* what) {
    close();
    throw error(ec == beast::error::timeout ? "timeout" : "unavailable",
                detail::str_cat(url_.host, ":", url_.port, ": ", what, ": ", ec.message()));
  }

  url url_;
  std::chrono::milliseconds timeout_;
  std::size_t max_bytes_;
  asio::io_context ioc_;
  beast::tcp_stream stream_;
#if defined(TOOL_EFFECTS_ETCD_TLS) && TOOL_EFFECTS_ETCD_TLS
  std::unique_ptr<asio::ssl::context> ssl_;
  std::unique_ptr<beast::ssl_stream<beast::tcp_stream&>> tls_;
#endif
  beast::flat_buffer buffer_;
  bool connected_ = false;
  bool read_pending_ = false;
  beast::error_code read_result_;
  std::unique_ptr<http::response_parser<http::string_body>> stream_parser_;
};

}  // namespace tool_effects::etcd::detail

#endif  // TOOL_EFFECTS_ETCD_DETAIL_CONNECTION_HPP
