// tool_effects/mcp/auth/principal.hpp — who is calling an MCP server that authorizes its requests: what a
// token verifier (mcp/auth/resource_server.hpp) makes of a bearer token, what a tool reads of its caller
// (mcp_caller_of, mcp/server/asker.hpp), and the key everything a caller owns on a server is kept under.
#ifndef TOOL_EFFECTS_MCP_AUTH_PRINCIPAL_HPP
#define TOOL_EFFECTS_MCP_AUTH_PRINCIPAL_HPP

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tool_effects {

/// The caller a verified access token names (RFC 9068 / RFC 7662 claims).
struct mcp_principal {
  std::string subject{};                ///< `sub`: the user (or service) the token acts for
  std::string client_id{};              ///< `client_id` (or `azp`): the client application
  std::string issuer{};                 ///< `iss`: the authorization server that issued the token
  std::vector<std::string> audience{};  ///< `aud`: the resources the token was issued for
  std::vector<std::string> scopes{};    ///< `scope`, split at spaces
  std::optional<std::chrono::system_clock::time_point> expires_at{};  ///< `exp`; none: the verifier's word

  /// Whether the token grants `scope`.
  [[nodiscard]] bool has_scope(std::string_view scope) const noexcept {
    return std::find(scopes.begin(), scopes.end(), scope) != scopes.end();
  }
  /// Whether the token was issued for `resource` (RFC 8707): its audience names it.
  [[nodiscard]] bool issued_for(std::string_view resource) const noexcept {
    return std::find(audience.begin(), audience.end(), resource) != audience.end();
  }
  /// The identity everything this caller owns on a server is kept under (its sessions, idempotency keys,
  /// parked calls): issuer and subject, so that two issuers' equal subjects are two callers.
  [[nodiscard]] std::string key() const { return "principal:" + issuer + "\n" + subject; }
};

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_MCP_AUTH_PRINCIPAL_HPP
