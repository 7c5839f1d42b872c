// tool_effects/mcp/auth/detail/oauth_fetch.hpp — internal to the OAuth flow (mcp/auth/detail/oauth_flow.hpp): one
// bounded exchange with an authorization server or a metadata document, on the network layer (net::fetch),
// and the discovery policy's classes of addresses that decide where such a fetch may go.
#ifndef TOOL_EFFECTS_MCP_AUTH_DETAIL_OAUTH_FETCH_HPP
#define TOOL_EFFECTS_MCP_AUTH_DETAIL_OAUTH_FETCH_HPP

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <tool_effects/mcp/auth/detail/oauth_encoding.hpp>
#include <tool_effects/mcp/auth/detail/oauth_urls.hpp>
#include <tool_effects/mcp/errors.hpp>
#include <tool_effects/mcp/transport/detail/http_url.hpp>
#include <tool_effects/detail/quote.hpp>
#include <tool_effects/detail/str_cat.hpp>
#include <tool_effects/net/http_client.hpp>

namespace tool_effects::detail {

namespace asio = boost::asio;

namespace oauth_http = boost::beast::http;

// One HTTP response of the authorization server (or of a metadata document).
struct mcp_oauth_response {
  unsigned status = 0;
  std::string location;
  std::string content_type;
  std::string www_authenticate;
  std::string body;
};

// What kind of address a fetch of the flow would reach: the classes of the discovery policy
// (mcp_oauth_options::discovery_policy). An IPv4 address embedded in IPv6 (v4-mapped, NAT64 64:ff9b::/96,
// 6to4 2002::/16) is of the kind of that IPv4 address.
enum class mcp_address_kind { public_address, loopback, private_network, link_local, never };

inline mcp_address_kind mcp_oauth_address_kind_v4(const std::array<unsigned char, 4>& b) {
  if (b[0] == 127) return mcp_address_kind::loopback;
  if (b[0] == 0 || b[0] >= 224) return mcp_address_kind::never;  // "this network", multicast, reserved, broadcast
  if (b[0] == 10 || (b[0] == 172 && (b[1] & 0xF0) == 16) || (b[0] == 192 && b[1] == 168) ||
      (b[0] == 100 && (b[1] & 0xC0) == 64))  // RFC 1918, RFC 6598 shared address space
    return mcp_address_kind::private_network;
  if (b[0] == 169 && b[1] == 254) return mcp_address_kind::link_local;
  return mcp_address_kind::public_address;
}

inline mcp_address_kind mcp_oauth_address_kind(const asio::ip::address& a) {
  if (a.is_v4()) return mcp_oauth_address_kind_v4(a.to_v4().to_bytes());
  const auto v6 = a.to_v6();
  const auto b = v6.to_bytes();
  auto embedded = [&](std::size_t at) { return mcp_oauth_address_kind_v4({b[at], b[at + 1], b[at + 2], b[at + 3]}); };
  if (v6.is_v4_mapped()) return embedded(12);
  static constexpr std::array<unsigned char, 12> nat64{0x00, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0};
  if (std::equal(nat64.begin(), nat64.end(), b.begin())) return embedded(12);
  if (b[0] == 0x20 && b[1] == 0x02) return embedded(2);
  if (v6.is_loopback()) return mcp_address_kind::loopback;
  if (v6.is_unspecified() || v6.is_multicast() || v6.is_v4_compatible()) return mcp_address_kind::never;
  if ((b[0] & 0xFE) == 0xFC || (b[0] == 0xFE && (b[1] & 0xC0) == 0xC0))  // ULA fc00::/7, site-local fec0::/10
    return mcp_address_kind::private_network;
  if (b[0] == 0xFE && (b[1] & 0xC0) == 0x80) return mcp_address_kind::link_local;
  return mcp_address_kind::public_address;
}

// The default discovery policy: a public address, or one of the MCP server's own kind; never an unspecified,
// multicast or broadcast one.
constexpr bool mcp_oauth_default_allows(mcp_address_kind target, mcp_address_kind mcp_server) {
  if (target == mcp_address_kind::never) return false;
  return target == mcp_address_kind::public_address || target == mcp_server;
}

// The https rule: plain http only to a loopback address (or anywhere, with require_https off).
constexpr bool mcp_oauth_scheme_allows(bool https, mcp_address_kind target, bool require_https) {
  return https || target == mcp_address_kind::loopback || !require_https;
}

// The one reason a fetch of the flow fails before an HTTP answer: the same whether the discovery policy
// refused every address, the name did not resolve, the connection was refused, or nothing answered in time
// (so that the flow cannot be used to map a network).
inline constexpr std::string_view mcp_oauth_could_not_fetch =
    "could not fetch (refused by the discovery policy, unreachable, or no answer in time)";

// The addresses of `host` (nullopt when it does not resolve by `deadline`: the resolution then finishes in the
// background, and its result is dropped). On the caller's executor.
inline asio::awaitable<std::optional<asio::ip::tcp::resolver::results_type>> mcp_oauth_resolve(
    std::string host, std::string port, std::chrono::steady_clock::time_point deadline) {
  boost::system::error_code ec;
  auto r = co_await net::detail::resolve(std::move(host), std::move(port), deadline, ec);
  if (ec) co_return std::nullopt;
  co_return r;
}

// One bounded HTTP exchange (no redirect followed) on the network layer (net::fetch): resolve, connect, send,
// read at most `max_bytes` of body, all within `timeout`. Only the addresses `allow` admits are connected to
// (all, when it is empty). Throws mcp_oauth_failure naming the URL (without its query) and the step that
// failed; every failure before an HTTP answer is mcp_oauth_could_not_fetch.
inline asio::awaitable<mcp_oauth_response> mcp_oauth_fetch(oauth_http::verb verb, std::string url,
                                                           std::vector<std::pair<std::string, std::string>> headers,
                                                           std::string body, std::chrono::milliseconds timeout,
                                                           std::size_t max_bytes, std::string ca_file,
                                                           std::function<bool(const asio::ip::address&)> allow = {}) {
  auto fail = [&](std::string_view why) {
    return mcp_oauth_failure(
        tool_effects::detail::str_cat(oauth_http::to_string(verb), " ", quote_text(url.substr(0, url.find('?')), 300),
                                      ": ", why));
  };
  if (!mcp_oauth_url_ok(url)) throw fail("not an http(s) URL");
  net::fetch_options o;
  try {
    const net::url u = mcp_parse_http_url(url, "oauth");
    if (u.is_https()) o.tls = net::tls_context(net::tls_options{ca_file, {}, {}});
  } catch (const net::net_error& e) {
    throw fail(tool_effects::detail::str_cat("TLS: cannot load the CA certificates: ", e.what()));
  } catch (const std::exception& e) {
    throw fail(e.what());
  }
  o.timeout = timeout;
  o.max_body_bytes = max_bytes;
  o.allow = std::move(allow);
  std::vector<std::pair<std::string, std::string>> all = {{"Accept", "application/json"},
                                                          {"User-Agent", "tool_effects-mcp"}};
  for (auto& h : headers) all.push_back(std::move(h));
  net::fetch_response res;
  try {
    res = co_await net::fetch(verb, url, std::move(all), std::move(body), std::move(o));
  } catch (const net::net_error& e) {
    if (e.reason() == "body_limit")
      throw fail(tool_effects::detail::str_cat("its response body exceeds the limit of ", std::to_string(max_bytes),
                                               " bytes (mcp_oauth_options::max_response_bytes)"));
    if (e.reason() == "unreachable") throw fail(mcp_oauth_could_not_fetch);
    throw fail(e.what());
  }
  mcp_oauth_response r;
  r.status = res.status;
  r.location = std::string(res.fields[oauth_http::field::location]);
  r.content_type = std::string(res.fields[oauth_http::field::content_type]);
  r.www_authenticate = std::string(res.fields[oauth_http::field::www_authenticate]);
  r.body = std::move(res.body);
  co_return r;
}

// Whether a URL the client does not fetch itself (the authorization endpoint) meets the https rule: https, or
// http to a loopback literal or localhost, or http anywhere with `require_https` off.
inline bool mcp_oauth_endpoint_scheme_ok(const std::string& url, bool require_https) {
  if (url.rfind("https://", 0) == 0 || !require_https) return true;
  net::url u;
  try {
    u = mcp_parse_http_url(url, "oauth");
  } catch (const std::exception&) {
    return false;
  }
  if (*u.host == "localhost") return true;
  boost::system::error_code ec;
  const auto a = asio::ip::make_address(*u.host, ec);
  return !ec && mcp_oauth_address_kind(a) == mcp_address_kind::loopback;
}

}  // namespace tool_effects::detail

#endif  // TOOL_EFFECTS_MCP_AUTH_DETAIL_OAUTH_FETCH_HPP
