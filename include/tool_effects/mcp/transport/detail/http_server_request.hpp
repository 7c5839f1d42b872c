// tool_effects/mcp/transport/detail/http_server_request.hpp — internal to the Streamable HTTP listener
// (http_server.hpp, http_server_handle.hpp): what it decides about one request from the request alone, before
// any session sees it: whether a MCP-Protocol-Version is known, the HTTP status of a JSON-RPC error, a header
// value as the client meant it (trimmed, Base64 value encoding), what the body will hold while it is served,
// the DNS-rebinding check of Host and Origin, the body of an error the transport answers itself, and a new
// session id.
#ifndef TOOL_EFFECTS_MCP_TRANSPORT_DETAIL_HTTP_SERVER_REQUEST_HPP
#define TOOL_EFFECTS_MCP_TRANSPORT_DETAIL_HTTP_SERVER_REQUEST_HPP

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include <tool_effects/detail/push_options.hpp>  // Beast in C++23 (see there)
#include <boost/beast/core/detail/base64.hpp>
#include <tool_effects/detail/pop_options.hpp>

#include <tool_effects/detail/str_cat.hpp>
#include <tool_effects/json/detail/dump.hpp>
#include <tool_effects/mcp/server/http_options.hpp>
#include <tool_effects/mcp/versions.hpp>
#include <tool_effects/net/url.hpp>

namespace tool_effects::detail {

// Whether MCP-Protocol-Version `v` is one we speak (mcp_protocol_versions(), the one list).
inline bool mcp_http_version_known(std::string_view v) {
  const auto& all = mcp_protocol_versions();
  return std::find(all.begin(), all.end(), v) != all.end();
}

// The HTTP status of a JSON-RPC error answered as JSON: 2026-07-28 gives -32601 404 and the request's own faults
// (-32700, -32600, -32602, -32020 header mismatch, -32021 missing capability, -32022 unsupported version) 400;
// before it, and for every other code, a JSON-RPC error travels in a 200.
constexpr unsigned mcp_http_error_status(int code, bool modern) noexcept {
  if (!modern) return 200;
  switch (code) {
    case -32601: return 404;
    case -32700:
    case -32600:
    case -32602:
    case -32020:
    case -32021:
    case -32022: return 400;
    default: return 200;
  }
}

// RFC 9110 §5.5: a field value without its leading and trailing spaces and tabs.
inline std::string_view mcp_http_trim(std::string_view v) noexcept {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  return v;
}

// A mirrored header's value as the client meant it: "=?base64?...?=" decoded (the 2026-07-28 "Value
// Encoding"); none when the Base64 is broken.
inline std::optional<std::string> mcp_http_header_text(std::string_view v) {
  v = mcp_http_trim(v);
  if (!(v.size() >= 11 && v.substr(0, 9) == "=?base64?" && v.substr(v.size() - 2) == "?=")) return std::string(v);
  std::string_view b64 = v.substr(9, v.size() - 11);
  if (b64.size() % 4 != 0) return std::nullopt;  // padding is not optional
  for (int pad = 0; pad < 2 && !b64.empty() && b64.back() == '='; ++pad) b64.remove_suffix(1);
  // Room for a partial last group too (decoded_size counts whole groups only: decode would write past it).
  std::string out(boost::beast::detail::base64::decoded_size(b64.size() + 3), '\0');
  const auto [written, read] = boost::beast::detail::base64::decode(out.data(), b64.data(), b64.size());
  if (read != b64.size()) return std::nullopt;
  out.resize(written);
  return out;
}

// What the body of a request will hold while it is served: its bytes, and 48 bytes for each value it may hold
// parsed (one more than its count of ',' ':' '[' '{': nlohmann's value and its container's slot or map node),
// counted before it is parsed, so that a body of a million tiny values is refused, not built. Every request's
// body is scanned: eight bytes at a time (exact zero-byte tests on the word, 3x fewer instructions than a
// comparison per byte), the tail a byte at a time.
inline std::size_t mcp_http_request_cost(std::string_view body) noexcept {
  constexpr std::uint64_t ones = 0x0101010101010101ULL;
  constexpr std::uint64_t low7 = 0x7F7F7F7F7F7F7F7FULL;
  const auto zero_bytes = [](std::uint64_t x) { return ~(((x & low7) + low7) | x | low7); };  // 0x80 in each
  std::size_t values = 1;
  std::size_t i = 0;
  for (; i + 8 <= body.size(); i += 8) {
    std::uint64_t w = 0;
    std::memcpy(&w, body.data() + i, 8);
    // ',' and ':', and '[' or '{' (0x5B | 0x20 == 0x7B): each byte matches at most one.
    const std::uint64_t m =
        zero_bytes(w ^ (ones * ',')) | zero_bytes(w ^ (ones * ':')) | zero_bytes((w | (ones * 0x20)) ^ (ones * '{'));
    values += static_cast<std::size_t>((((m >> 7) * ones) >> 56) & 0xFF);
  }
  for (; i < body.size(); ++i) {
    const char c = body[i];
    values += (c == ',' || c == ':' || c == '[' || c == '{') ? 1 : 0;
  }
  return body.size() + 48 * values;
}

inline bool mcp_http_loopback_host(std::string_view host) noexcept {
  return host == "localhost" || host == "127.0.0.1" || host == "::1";
}

// "" when Host and Origin pass the DNS-rebinding check, else why not (the 403's message). Both are read with the
// library's one URL parser (net/url.hpp); one it refuses is not allowed.
inline std::string mcp_http_rebinding_refusal(std::string_view host, std::string_view origin,
                                              const mcp_http_server_options& o) {
  std::string h;
  try {
    h = *net::parse_authority(mcp_http_trim(host)).host;
  } catch (const net::url_error&) {
  }
  const bool v6 = h.find(':') != std::string::npos;
  const std::string shown = v6 ? str_cat("[", h, "]") : h;
  if (h.empty() || (!mcp_http_loopback_host(h) &&
                    std::find(o.allowed_hosts.begin(), o.allowed_hosts.end(), shown) == o.allowed_hosts.end()))
    return "Forbidden: Host is not an allowed host (DNS rebinding protection)";
  origin = mcp_http_trim(origin);
  if (origin.empty()) return {};
  if (std::find(o.allowed_origins.begin(), o.allowed_origins.end(), origin) != o.allowed_origins.end()) return {};
  try {
    const net::url u = net::parse_http_url(origin);
    if (u.path.empty() && !u.query && mcp_http_loopback_host(*u.host)) return {};
  } catch (const net::url_error&) {
  }
  return "Forbidden: Origin is not an allowed origin (DNS rebinding protection)";
}

// The body of an error answered by the transport itself: a JSON-RPC error with the request's id (null when it
// has none or was not read).
inline std::string mcp_http_error_body(int code, std::string_view message, const nlohmann::json& id = nullptr) {
  return json_dump(nlohmann::json{{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", message}}}});
}

// 128 random bits in hex: a session id no one guesses (std::random_device is the OS's generator on the three
// standard libraries we build with).
inline std::string mcp_http_new_session_id() {
  std::random_device rd;
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  for (int i = 0; i < 4; ++i) {
    auto v = rd();
    for (int k = 0; k < 8; ++k, v >>= 4) out += hex[v & 0xF];
  }
  return out;
}

}  // namespace tool_effects::detail

#endif  // TOOL_EFFECTS_MCP_TRANSPORT_DETAIL_HTTP_SERVER_REQUEST_HPP
