// tool_effects/mcp/auth/resource_server.hpp — an MCP server over HTTP as an OAuth 2.1 resource server
// (specification 2026-07-28, basic/authorization): optional, off by default, set on the listener
// (mcp_http_server_options::authorization).
//
//   te::mcp_http_server_options http;
//   http.authorization = te::mcp_resource_server{
//       .resource = "https://bank.example.com/mcp",            // the canonical URI a token must be issued for
//       .authorization_servers = {"https://auth.example.com"}, // published in the RFC 9728 document
//       .scopes_supported = {"accounts:read", "accounts:write"},
//       .verify_token = te::mcp_jwt_verifier(...),             // or any function: bearer -> principal
//       .tool_scopes = te::mcp_scopes_from_effects{}};         // least privilege, derived from the effects
//   server.listen_http("127.0.0.1", 0, "/mcp", http);
//
// What the listener does with it: the RFC 9728 document at /.well-known/oauth-protected-resource + the endpoint's
// path; every request to the endpoint needs `Authorization: Bearer <token>` (else 401 with `WWW-Authenticate:
// Bearer resource_metadata="..."`, `error="invalid_token"` where a token was sent); a token whose audience is not
// `resource` is refused whatever the verifier says; a tools/call whose tool needs a scope the token lacks is 403
// `insufficient_scope` naming the scopes (step-up). Tokens never appear in errors, logs or what(). Everything a
// caller owns (sessions, idempotency keys, parked calls, request ids) is keyed by its principal. See
// docs/deploying.md.
#ifndef TOOL_EFFECTS_MCP_AUTH_RESOURCE_SERVER_HPP
#define TOOL_EFFECTS_MCP_AUTH_RESOURCE_SERVER_HPP

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include <tool_effects/call_description.hpp>
#include <tool_effects/mcp/auth/principal.hpp>
#include <tool_effects/mcp/auth/scopes.hpp>

namespace tool_effects {

/// Turns a bearer token into its principal: none (or a throw) when the token is not valid. Called off the
/// listener's I/O thread, for tokens not already verified and cached; may block (a JWKS fetch, introspection).
using mcp_token_verifier = std::function<std::optional<mcp_principal>(std::string_view bearer)>;

/// The scopes a tools/call of a tool needs, given its name and its declared effects.
using mcp_tool_scope_policy = std::function<std::vector<std::string>(std::string_view tool, const call_description&)>;

/// An MCP listener as an OAuth 2.1 resource server.
struct mcp_resource_server {
  /// The canonical URI of this MCP server (RFC 8707, e.g. "https://bank.example.com/mcp"): a token's audience
  /// must name it, and the RFC 9728 document says it.
  std::string resource;
  /// The issuers of the authorization servers clients get tokens from (RFC 9728 `authorization_servers`).
  std::vector<std::string> authorization_servers{};
  /// RFC 9728 `scopes_supported` (empty: not published).
  std::vector<std::string> scopes_supported{};
  /// Verifies a bearer token (required).
  mcp_token_verifier verify_token{};
  /// RFC 9728 `resource_name` and `resource_documentation` (empty: not published).
  std::string resource_name{};
  std::string resource_documentation{};
  /// The scopes a tools/call of each tool needs beyond a valid token (empty: none).
  mcp_tool_scope_policy tool_scopes{};
  /// The scopes every request needs (e.g. "mcp"): past a missing one, 403 insufficient_scope.
  std::vector<std::string> required_scopes{};
  /// Verified tokens remembered (by the token's SHA-256), so that a client's requests do not each verify it
  /// again: at most this many, each until its expiry or `max_cache_age`.
  std::size_t max_cached_tokens = 4096;
  std::chrono::seconds max_cache_age{300};
};

namespace detail {

// The RFC 9728 document of `rs` for an endpoint at `path` ("/mcp").
inline nlohmann::json mcp_protected_resource_metadata(const mcp_resource_server& rs) {
  nlohmann::json m = {{"resource", rs.resource},
                      {"authorization_servers", rs.authorization_servers},
                      {"bearer_methods_supported", nlohmann::json::array({"header"})}};
  if (!rs.scopes_supported.empty()) m["scopes_supported"] = rs.scopes_supported;
  if (!rs.resource_name.empty()) m["resource_name"] = rs.resource_name;
  if (!rs.resource_documentation.empty()) m["resource_documentation"] = rs.resource_documentation;
  return m;
}

// The path of the RFC 9728 document for an endpoint at `path`: the well-known prefix inserted before it
// (section 3.1); "/" has none after it.
inline std::string mcp_protected_resource_path(std::string_view path) {
  std::string out = "/.well-known/oauth-protected-resource";
  if (path != "/") out += path;
  return out;
}

// A quoted-string of RFC 9110 section 5.6.4 (`"` and `\` escaped; anything below a space dropped).
inline std::string mcp_quoted(std::string_view v) {
  std::string out = "\"";
  for (const char c : v) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) continue;
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  out += '"';
  return out;
}

// The WWW-Authenticate value of a refusal: `error` "" (no token sent), "invalid_token" or "insufficient_scope";
// `scopes` the scopes a step-up needs (insufficient_scope).
inline std::string mcp_bearer_challenge_value(std::string_view metadata_url, std::string_view error,
                                              const std::vector<std::string>& scopes = {}) {
  std::string v = "Bearer resource_metadata=" + mcp_quoted(metadata_url);
  if (!error.empty()) v += ", error=" + mcp_quoted(error);
  if (!scopes.empty()) {
    std::string joined;
    for (const auto& s : scopes) joined += (joined.empty() ? "" : " ") + s;
    v += ", scope=" + mcp_quoted(joined);
  }
  return v;
}

// The token of an Authorization header ("Bearer <token>", the scheme case-insensitive, RFC 6750 section 2.1),
// or nothing.
inline std::optional<std::string_view> mcp_bearer_token(std::string_view header) {
  while (!header.empty() && (header.front() == ' ' || header.front() == '\t')) header.remove_prefix(1);
  if (header.size() < 7) return std::nullopt;
  for (std::size_t i = 0; i < 6; ++i)
    if ((header[i] | 0x20) != "bearer"[i]) return std::nullopt;
  if (header[6] != ' ') return std::nullopt;
  std::string_view t = header.substr(7);
  while (!t.empty() && t.front() == ' ') t.remove_prefix(1);
  while (!t.empty() && (t.back() == ' ' || t.back() == '\t')) t.remove_suffix(1);
  if (t.empty() || t.size() > 16384) return std::nullopt;
  for (const char c : t)  // RFC 6750 b64token, and nothing that could split a header
    if (static_cast<unsigned char>(c) <= 0x20 || static_cast<unsigned char>(c) >= 0x7f) return std::nullopt;
  return t;
}

}  // namespace detail

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_MCP_AUTH_RESOURCE_SERVER_HPP
