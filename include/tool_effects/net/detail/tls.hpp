// tool_effects/net/detail/tls.hpp — internal to <tool_effects/net/connection.hpp> (included at its end): the
// TLS part of the network layer, the one place that branches on TOOL_EFFECTS_NET_TLS (detail/config.hpp).
// Without TLS the types of http_client.hpp keep their layout (the TLS stream is a null pointer) and an https
// URL is refused before any connection (client's constructor, fetch).
#ifndef TOOL_EFFECTS_NET_DETAIL_TLS_HPP
#define TOOL_EFFECTS_NET_DETAIL_TLS_HPP

#include <tool_effects/detail/config.hpp>
#include <tool_effects/net/connection.hpp>

// clang-format off
#if TOOL_EFFECTS_NET_TLS
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <tool_effects/detail/push_options.hpp>
#include <openssl/rand.h>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <tool_effects/detail/pop_options.hpp>
#endif
// clang-format on

namespace tool_effects::net {

#if TOOL_EFFECTS_NET_TLS

namespace detail {
struct tls_context_impl {
  explicit tls_context_impl(asio::ssl::context::method m = asio::ssl::context::tls_client) : ssl(m) {}
  asio::ssl::context ssl;
};
struct tls_session {
  explicit tls_session(beast::tcp_stream& s, asio::ssl::context& c) : stream(s, c) {}
  beast::ssl_stream<beast::tcp_stream&> stream;
};
inline void delete_tls_session(tls_session* s) noexcept { delete s; }
inline bool tls_random(char* out, std::size_t n) noexcept {
  return RAND_bytes(reinterpret_cast<unsigned char*>(out), static_cast<int>(n)) == 1;
}
}  // namespace detail

inline tls_context::tls_context(const tls_options& o) : impl_(std::make_shared<detail::tls_context_impl>()) {
  auto& ssl = impl_->ssl;
  ssl.set_verify_mode(asio::ssl::verify_peer);
  boost::system::error_code ec;
  const char* what = "the CA certificates";
  const std::string* file = &o.ca_file;
  if (!o.ca_file.empty())
    ssl.load_verify_file(o.ca_file, ec);
  else
    ssl.set_default_verify_paths(ec);
  if (!ec && !o.cert_file.empty()) {
    what = "the client certificate";
    file = &o.cert_file;
    ssl.use_certificate_chain_file(o.cert_file, ec);
  }
  if (!ec && !o.key_file.empty()) {
    what = "the client key";
    file = &o.key_file;
    ssl.use_private_key_file(o.key_file, asio::ssl::context::pem, ec);
  }
  if (ec)
    throw net_error("tls_files", tool_effects::detail::str_cat("TLS: cannot load ", what, " \"",
                                                               detail::url_printable(*file), "\": ", ec.message()));
}

inline tls_context tls_context::server(const tls_options& o) {
  tls_context out;
  out.impl_ = std::make_shared<detail::tls_context_impl>(asio::ssl::context::tls_server);
  auto& ssl = out.impl_->ssl;
  ssl.set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                  asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 | asio::ssl::context::no_tlsv1_1);
  boost::system::error_code ec;
  const char* what = "the server certificate";
  const std::string* file = &o.cert_file;
  if (o.cert_file.empty() || o.key_file.empty())
    throw net_error("tls_files", "TLS: a server needs its certificate chain and its key (tls_options cert_file, key_file)");
  ssl.use_certificate_chain_file(o.cert_file, ec);
  if (!ec) {
    what = "the server key";
    file = &o.key_file;
    ssl.use_private_key_file(o.key_file, asio::ssl::context::pem, ec);
  }
  if (!ec && !o.ca_file.empty()) {  // clients must present a certificate of this CA
    what = "the client CA certificates";
    file = &o.ca_file;
    ssl.load_verify_file(o.ca_file, ec);
    ssl.set_verify_mode(asio::ssl::verify_peer | asio::ssl::verify_fail_if_no_peer_cert);
  }
  if (ec)
    throw net_error("tls_files", tool_effects::detail::str_cat("TLS: cannot load ", what, " \"",
                                                               detail::url_printable(*file), "\": ", ec.message()));
  return out;
}

template <class Op>
decltype(auto) connection::visit(Op&& op) {
  if (tls_) return op(tls_->stream);
  return op(tcp_);
}

template <class Unused>
asio::awaitable<beast::error_code> detail::tls_accept(connection& c, const tls_context& ctx) {
  if (!ctx.get()) co_return beast::error_code(asio::error::no_protocol_option);
  c.tls_ = {new tls_session(c.tcp_, ctx.get()->ssl), &delete_tls_session};
  auto [ec] = co_await c.tls_->stream.async_handshake(asio::ssl::stream_base::server,
                                                     asio::as_tuple(asio::use_awaitable));
  co_return ec;
}

inline bool connection::tls_pending() noexcept {
  return tls_ && SSL_pending(tls_->stream.native_handle()) > 0;
}

template <class Unused>
asio::awaitable<beast::error_code> detail::tls_handshake(connection& c, const tls_context& ctx,
                                                                const std::string& host) {
  if (!ctx.get()) co_return beast::error_code(asio::error::no_protocol_option);
  c.tls_ = {new tls_session(c.tcp_, ctx.get()->ssl), &delete_tls_session};
  auto& s = c.tls_->stream;
  (void)SSL_set_tlsext_host_name(s.native_handle(), host.c_str());
  s.set_verify_callback(asio::ssl::host_name_verification(host));
  auto [ec] = co_await s.async_handshake(asio::ssl::stream_base::client, asio::as_tuple(asio::use_awaitable));
  co_return ec;
}

#else  // no TLS: an https URL never gets here (client and fetch refuse it first)

namespace detail {
inline bool tls_random(char*, std::size_t) noexcept { return false; }
}  // namespace detail

inline tls_context::tls_context(const tls_options&) {
  throw net_error("tls_unavailable", "TLS: this build has no TLS (TOOL_EFFECTS_MCP_TLS / TOOL_EFFECTS_ETCD_TLS)");
}

template <class Op>
decltype(auto) connection::visit(Op&& op) {
  return op(tcp_);
}

inline bool connection::tls_pending() noexcept { return false; }

template <class Unused>
asio::awaitable<beast::error_code> detail::tls_handshake(connection&, const tls_context&, const std::string&) {
  co_return beast::error_code(asio::error::no_protocol_option);
}

template <class Unused>
asio::awaitable<beast::error_code> detail::tls_accept(connection&, const tls_context&) {
  co_return beast::error_code(asio::error::no_protocol_option);
}

inline tls_context tls_context::server(const tls_options&) {
  throw net_error("tls_unavailable", "TLS: this build has no TLS (TOOL_EFFECTS_MCP_TLS / TOOL_EFFECTS_ETCD_TLS)");
}

#endif

}  // namespace tool_effects::net

#endif  // TOOL_EFFECTS_NET_DETAIL_TLS_HPP
