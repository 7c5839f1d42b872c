// tool_effects/net/connection.hpp — internal to the network layer (<tool_effects/net/http_client.hpp> holds
// the API comment): its failures, TLS settings, address filter and one connection (TCP, TLS over it).
#ifndef TOOL_EFFECTS_NET_CONNECTION_HPP
#define TOOL_EFFECTS_NET_CONNECTION_HPP

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

#include <cerrno>
#include <sys/socket.h>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <tool_effects/detail/push_options.hpp>  // Beast in C++23 (see there)
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <tool_effects/detail/pop_options.hpp>

#include <tool_effects/detail/config.hpp>
#include <tool_effects/detail/str_cat.hpp>
#include <tool_effects/net/url.hpp>

namespace tool_effects::net {

namespace asio = boost::asio;
namespace beast = boost::beast;

// A failure of the layer outside an exchange (a TLS file, a URL, a whole fetch): reason() is a stable string
// (see the top of this header), what() names the input.
class net_error : public std::runtime_error {
 public:
  net_error(std::string_view reason, const std::string& message) : std::runtime_error(message), reason_(reason) {}
  [[nodiscard]] std::string_view reason() const noexcept { return reason_; }

 private:
  std::string_view reason_;
};

// TLS settings: the server is always verified (chain and host name); a client certificate is optional.
struct tls_options {
  std::string ca_file{};    // PEM; empty: the system's CAs
  std::string cert_file{};  // PEM chain of a client certificate (etcd's mutual TLS); empty: none
  std::string key_file{};   // its private key
};

// Accepts or refuses a resolved address before a connection is made (the OAuth discovery policy, SSRF).
using address_filter = std::function<bool(const asio::ip::address&)>;

class tls_context;
class connection;
namespace detail {
struct tls_context_impl;  // defined by net/detail/tls.hpp in a TLS build only (the layouts here never change)
struct tls_session;
// (The two handshakes are function templates only so that a translation unit that calls neither compiles no
// coroutine of them: g++ emits every inline non-template coroutine at -O0.)
template <class Unused = void>
asio::awaitable<beast::error_code> tls_handshake(connection& c, const tls_context& ctx, const std::string& host);
// The server's side of the handshake, on an accepted connection.
template <class Unused = void>
asio::awaitable<beast::error_code> tls_accept(connection& c, const tls_context& ctx);
// `n` random bytes from OpenSSL, in a TLS build; false without TLS (or on failure).
bool tls_random(char* out, std::size_t n) noexcept;
}  // namespace detail

// The TLS settings loaded once (a shared handle: copies share the context).
class tls_context {
 public:
  static constexpr bool available = TOOL_EFFECTS_NET_TLS != 0;
  tls_context() = default;
  explicit tls_context(const tls_options& o);  // throws net_error("tls_files" | "tls_unavailable")
  // A server's: its certificate chain (cert_file) and key (key_file), required; clients' certificates are asked
  // for and verified against ca_file only when it is set. Throws as the constructor.
  static tls_context server(const tls_options& o);
  [[nodiscard]] detail::tls_context_impl* get() const noexcept { return impl_.get(); }

 private:
  std::shared_ptr<detail::tls_context_impl> impl_;
};

// One connection: TCP, and TLS over it for https (the TLS stream behind a pointer, so that the layout is the
// same with and without TLS).
class connection {
 public:
  explicit connection(const asio::any_io_executor& ex) : tcp_(ex) {}
  // An accepted connection (a server's).
  explicit connection(asio::ip::tcp::socket s) : tcp_(std::move(s)) {}
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;
  ~connection() { close(); }

  [[nodiscard]] beast::tcp_stream& tcp() noexcept { return tcp_; }
  [[nodiscard]] beast::flat_buffer& buffer() noexcept { return buffer_; }
  [[nodiscard]] bool is_tls() const noexcept { return tls_ != nullptr; }
  // Runs `op(stream)` on the stream requests are read and written through: the TLS stream, else the TCP one.
  template <class Op>
  decltype(auto) visit(Op&& op);
  // Whether the peer sent nothing since the last response and did not close: a kept-alive connection is
  // reused only then (bytes waiting would be read as the next response).
  [[nodiscard]] bool quiet() noexcept;
  // Closes the socket: an operation under way completes with an error. The TLS stream stays until the
  // connection is destroyed (a read may still be inside it: destroying it here was a use-after-free).
  void close() noexcept {
    beast::error_code ignored;
    tcp_.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
    tcp_.socket().close(ignored);
    buffer_.consume(buffer_.size());
  }
  // Since when it is idle (the pool's age limit).
  std::chrono::steady_clock::time_point idle_since{};

 private:
  template <class Unused>
  friend asio::awaitable<beast::error_code> detail::tls_handshake(connection&, const tls_context&, const std::string&);
  template <class Unused>
  friend asio::awaitable<beast::error_code> detail::tls_accept(connection&, const tls_context&);
  [[nodiscard]] bool tls_pending() noexcept;  // decrypted bytes the TLS layer holds (they make no socket readable)
  beast::tcp_stream tcp_;
  std::unique_ptr<detail::tls_session, void (*)(detail::tls_session*) noexcept> tls_{nullptr, nullptr};
  beast::flat_buffer buffer_;
};
using connection_ptr = std::shared_ptr<connection>;

inline bool connection::quiet() noexcept {
  char byte = 0;
  const auto n = ::recv(tcp_.socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && !tls_pending();
}

}  // namespace tool_effects::net

#include <tool_effects/net/detail/tls.hpp>  // connection::visit, tls_context, the handshake

#endif  // TOOL_EFFECTS_NET_CONNECTION_HPP
