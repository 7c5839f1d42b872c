// tool_effects/mcp/gateway/authorization.hpp — the HTTP listener's authorization a gateway configuration names
// (`gateway.http.authorization`), made: an OAuth 2.1 resource server whose bearer tokens are verified as JWTs
// (the issuer's key set) or by RFC 7662 introspection. Needs OpenSSL (link tool_effects::mcp_auth).
//
//   te::mcp_gateway gateway(config, te::make_gateway_backends(config));
//   te::mcp_http_server_options o;
//   o.authorization = te::make_gateway_authorization(gateway);  // none when the configuration names none
//   gateway.listen_http("127.0.0.1", 8931, std::move(o));
#ifndef TOOL_EFFECTS_MCP_GATEWAY_AUTHORIZATION_HPP
#define TOOL_EFFECTS_MCP_GATEWAY_AUTHORIZATION_HPP

#include <exception>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include <tool_effects/detail/str_cat.hpp>
#include <tool_effects/mcp/auth/introspection.hpp>
#include <tool_effects/mcp/auth/jwt.hpp>
#include <tool_effects/mcp/auth/resource_server.hpp>
#include <tool_effects/mcp/auth/scopes.hpp>
#include <tool_effects/mcp/gateway.hpp>
#include <tool_effects/mcp/gateway/config.hpp>
#include <tool_effects/net/url.hpp>

namespace tool_effects {

/// The resource server `gateway.config().authorization` names, or none. With `"scopes": "effects"`, a tools/call
/// needs the scopes of its tool's accesses (`mcp_scopes_from_effects`), and `scopes_supported` publishes those of
/// every tool served, with the required ones. Throws `gateway_config_error` naming the field when the resource is
/// not an absolute http(s) URI without a fragment, or a verifier cannot be made so (a plain-http key set or
/// endpoint that is not loopback, an unknown algorithm, an unreadable CA file). `log` is told of every refused
/// token (never given the token).
inline std::optional<mcp_resource_server> make_gateway_authorization(const mcp_gateway& gateway,
                                                                     mcp_verifier_log log = {}) {
  const gateway_config& c = gateway.config();
  if (!c.authorization) return std::nullopt;
  const gateway_authorization_config& a = *c.authorization;
  const std::string at = "/gateway/http/authorization";
  try {
    if (net::parse_http_url(a.resource).fragment) throw std::invalid_argument("a resource URI has no fragment");
  } catch (const std::exception& e) {
    throw gateway_config_error(c.file, "", "", at + "/resource",
                               detail::str_cat("not the gateway's canonical URI: ", e.what()), a.resource);
  }
  mcp_resource_server rs;
  rs.resource = a.resource;
  rs.authorization_servers = a.authorization_servers;
  rs.required_scopes = a.required_scopes;
  rs.resource_name = c.name;
  try {
    if (a.verifier == "jwt") {
      mcp_jwt_options o;
      o.issuer = a.issuer;
      o.audience = a.resource;
      o.jwks_url = a.jwks_url;
      if (!a.algorithms.empty()) o.allowed_algorithms = a.algorithms;
      o.tls.ca_file = a.ca_file;
      o.require_https = a.require_https;
      o.log = log;
      rs.verify_token = mcp_jwt_verifier(std::move(o));
    } else {
      mcp_introspection_options o;
      o.endpoint = a.endpoint;
      o.client_id = a.client_id;
      o.client_secret = a.client_secret;
      o.issuer = a.issuer;
      o.tls.ca_file = a.ca_file;
      o.require_https = a.require_https;
      o.log = log;
      rs.verify_token = mcp_introspection_verifier(std::move(o));
    }
  } catch (const std::exception& e) {
    throw gateway_config_error(c.file, "", "", detail::str_cat(at, "/", a.verifier),
                               detail::str_cat("cannot verify tokens so: ", e.what()), "");
  }
  if (a.scopes_from_effects) {
    rs.tool_scopes = mcp_scopes_from_effects{};
    std::set<std::string> all(a.required_scopes.begin(), a.required_scopes.end());
    for (const gateway_tool& t : gateway.tools())
      for (auto& s : mcp_scopes_from_effects{}(t.name, t.declaration.description)) all.insert(std::move(s));
    rs.scopes_supported.assign(all.begin(), all.end());
  } else {
    rs.scopes_supported = a.required_scopes;
  }
  return rs;
}

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_MCP_GATEWAY_AUTHORIZATION_HPP
