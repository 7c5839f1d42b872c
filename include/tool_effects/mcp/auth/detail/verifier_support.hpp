// tool_effects/mcp/auth/detail/verifier_support.hpp — internal to the token verifiers (mcp/auth/jwt.hpp,
// mcp/auth/introspection.hpp): the endpoint a verifier fetches (its URL checked once, its TLS context loaded once),
// one bounded blocking fetch on the library's HTTP client, the bounded parse of what comes back, and the claims
// both read (RFC 7519 / RFC 9068 / RFC 7662 names) into an mcp_principal.
#ifndef TOOL_EFFECTS_MCP_AUTH_DETAIL_VERIFIER_SUPPORT_HPP
#define TOOL_EFFECTS_MCP_AUTH_DETAIL_VERIFIER_SUPPORT_HPP

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <tool_effects/detail/str_cat.hpp>
#include <tool_effects/json/error.hpp>
#include <tool_effects/mcp/auth/detail/oauth_encoding.hpp>  // mcp_split_scopes, mcp_form
#include <tool_effects/mcp/auth/principal.hpp>
#include <tool_effects/mcp/auth/verdict.hpp>
#include <tool_effects/net/http_client.hpp>

namespace tool_effects::detail {

// The largest token either verifier reads (the listener's own bound on a bearer, mcp_bearer_token).
inline constexpr std::size_t mcp_max_token_bytes = 16 * 1024;

// Tells `log` (when set) of `reason`; a throwing log is ignored (a verifier never throws).
inline void mcp_verifier_say(const mcp_verifier_log& log, std::string_view reason,
                             const std::string& message) noexcept {
  if (!log) return;
  try {
    log(reason, message);
  } catch (...) {  // NOLINT(bugprone-empty-catch): the log's failure is not the token's
  }
}

// A URL a verifier fetches, checked once: an absolute http(s) URL without user information or fragment; https, or
// http to a loopback host (localhost or a loopback literal) unless `require_https` is off; https needs a build with
// TLS (TOOL_EFFECTS_MCP_TLS=1), and its CA file loads once, here.
struct mcp_verifier_endpoint {
  std::string url;
  std::string printable;  // as messages name it: no query, no user information, printable
  net::tls_context tls{};

  // Throws std::invalid_argument naming `option` (e.g. "mcp_jwt_options::jwks_url"), or net::net_error
  // ("tls_unavailable", "tls_files") for https.
  mcp_verifier_endpoint(std::string_view option, std::string u, const net::tls_options& tls_options, bool require_https)
      : url(std::move(u)), printable(net::detail::url_printable(url)) {
    net::url parsed;
    try {
      parsed = net::parse_http_url(url);
    } catch (const net::url_error& e) {
      throw std::invalid_argument(str_cat(option, ": ", e.what()));
    }
    if (parsed.fragment) throw std::invalid_argument(str_cat(option, ": a URL with a fragment: \"", printable, "\""));
    if (parsed.is_https()) {
      tls = net::tls_context(tls_options);
      return;
    }
    boost::system::error_code ec;
    const auto a = boost::asio::ip::make_address(*parsed.host, ec);
    const bool loopback = *parsed.host == "localhost" || (!ec && a.is_loopback());
    if (require_https && !loopback)
      throw std::invalid_argument(
          str_cat(option, ": \"", printable, "\" is plain http to a host that is not loopback (https is required)"));
  }
};

// One exchange with `ep` on a connection of its own, all within `timeout` (resolution, connection, TLS, request,
// response), at most `max_bytes` of body; no redirect followed. Blocks the calling thread. Throws net::net_error
// (reason "unreachable", "timeout", "body_limit", ...), whose message names the URL only.
inline net::fetch_response mcp_verifier_fetch(const mcp_verifier_endpoint& ep, boost::beast::http::verb verb,
                                              std::vector<std::pair<std::string, std::string>> headers,
                                              std::string body, std::chrono::milliseconds timeout,
                                              std::size_t max_bytes) {
  net::fetch_options o;
  o.timeout = timeout;
  o.max_body_bytes = max_bytes;
  o.header_limit = 16 * 1024;
  o.tls = ep.tls;
  headers.emplace_back("User-Agent", "tool_effects-mcp");
  return net::run_blocking<net::fetch_response>(
      [&]() { return net::fetch(verb, ep.url, std::move(headers), std::move(body), std::move(o)); },
      timeout + std::chrono::milliseconds(500));
}

// What a fetch failure is called in a message: the reason, never the response's bytes.
inline std::string_view mcp_fetch_failure(const net::net_error& e) noexcept {
  if (e.reason() == "body_limit") return "too large";
  if (e.reason() == "timeout") return "no answer in time";
  return "could not fetch (unreachable, refused, or no answer in time)";
}

// The bounded parse of a fetched or decoded JSON document: nullopt (and `why` set: "too_large", "invalid_json",
// "duplicate_key", ...) when it is not JSON within the bounds, or not an object.
inline std::optional<nlohmann::json> mcp_verifier_parse(std::string_view text, std::size_t max_bytes,
                                                        std::string_view& why) {
  json_limits limits;
  limits.max_depth = 16;
  limits.max_bytes = max_bytes;
  limits.max_values = 1 << 16;
  try {
    nlohmann::json v = parse_untrusted_json(text, limits);
    if (!v.is_object()) {
      why = "not_an_object";
      return std::nullopt;
    }
    return v;
  } catch (const json_error& e) {
    why = to_string(e.reason());
  } catch (const std::exception&) {
    why = "invalid_json";
  }
  return std::nullopt;
}

// A NumericDate (RFC 7519 section 2): a finite JSON number (not a boolean, not a string); nullopt otherwise.
inline std::optional<double> mcp_numeric_date(const nlohmann::json& v) {
  if (!v.is_number()) return std::nullopt;
  const double d = v.get<double>();
  if (!std::isfinite(d)) return std::nullopt;
  return d;
}

// Seconds since the epoch as a time point, clamped to what system_clock holds (years 1970 to 2250).
inline std::chrono::system_clock::time_point mcp_time_of(double seconds) {
  const double s = std::clamp(seconds, 0.0, 8.8e9);
  return std::chrono::system_clock::time_point{} + std::chrono::seconds(static_cast<long long>(s));
}
inline double mcp_seconds_of(std::chrono::system_clock::time_point t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}

// The time claims of `c` against `now` (seconds since the epoch), `leeway` seconds either way: `exp` (required when
// `exp_required`: "missing_claim"), `nbf`, `iat`. "" when they hold, else the verdict's reason.
inline std::string_view mcp_check_times(const nlohmann::json& c, double now, double leeway, bool exp_required) {
  const auto exp = c.find("exp");
  if (exp == c.end()) {
    if (exp_required) return "missing_claim";
  } else {
    const auto e = mcp_numeric_date(*exp);
    if (!e) return "malformed";
    if (now >= *e + leeway) return "expired";
  }
  if (const auto nbf = c.find("nbf"); nbf != c.end()) {
    const auto n = mcp_numeric_date(*nbf);
    if (!n) return "malformed";
    if (now + leeway < *n) return "not_yet_valid";
  }
  if (const auto iat = c.find("iat"); iat != c.end()) {
    const auto i = mcp_numeric_date(*iat);
    if (!i) return "malformed";
    if (*i > now + leeway) return "issued_in_future";
  }
  return {};
}

// The strings of a claim that is a string or an array of strings (`aud`, `scp`): nullopt when it is neither, or an
// array of more than `max` (an array of strings is split no further; a string is one value, or split at spaces
// when `split`).
inline std::optional<std::vector<std::string>> mcp_string_or_array(const nlohmann::json& v, bool split,
                                                                   std::size_t max = 256) {
  std::vector<std::string> out;
  if (v.is_string()) {
    const auto& s = v.get_ref<const std::string&>();
    if (split) return mcp_split_scopes(s);
    out.push_back(s);
    return out;
  }
  if (!v.is_array() || v.size() > max) return std::nullopt;
  for (const auto& e : v) {
    if (!e.is_string()) return std::nullopt;
    out.push_back(e.get<std::string>());
  }
  return out;
}

// The principal the claims of `c` name (RFC 9068 section 2.2, RFC 7662 section 2.2): sub, client_id (else azp), iss,
// aud (a string or an array), scope (space-separated) or scp (an array, or a space-separated string), exp. ""
// when read, "malformed" when a claim present has the wrong type.
inline std::string_view mcp_principal_of(const nlohmann::json& c, mcp_principal& p) {
  auto string_claim = [&](const char* name, std::string& out) {
    const auto it = c.find(name);
    if (it == c.end()) return true;
    if (!it->is_string()) return false;
    out = it->get<std::string>();
    return true;
  };
  if (!string_claim("sub", p.subject) || !string_claim("iss", p.issuer) || !string_claim("client_id", p.client_id))
    return "malformed";
  if (p.client_id.empty() && !string_claim("azp", p.client_id)) return "malformed";
  if (const auto aud = c.find("aud"); aud != c.end()) {
    auto v = mcp_string_or_array(*aud, false);
    if (!v) return "malformed";
    p.audience = std::move(*v);
  }
  if (const auto scope = c.find("scope"); scope != c.end()) {
    if (!scope->is_string()) return "malformed";
    p.scopes = mcp_split_scopes(scope->get_ref<const std::string&>());
  } else if (const auto scp = c.find("scp"); scp != c.end()) {
    auto v = mcp_string_or_array(*scp, true);
    if (!v) return "malformed";
    p.scopes = std::move(*v);
  }
  if (const auto exp = c.find("exp"); exp != c.end()) {
    const auto e = mcp_numeric_date(*exp);
    if (!e) return "malformed";
    p.expires_at = mcp_time_of(*e);
  }
  return {};
}

}  // namespace tool_effects::detail

#endif  // TOOL_EFFECTS_MCP_AUTH_DETAIL_VERIFIER_SUPPORT_HPP
