// tool_effects/mcp/oauth.hpp — OAuth 2.1 authorization of the MCP client over Streamable HTTP
// (specification 2025-11-25, basic/authorization, with the 2025-06-18 and 2025-03-26 fallbacks). Set
// `mcp_http_endpoint::authorization` (<tool_effects/mcp/http.hpp>) and the client authorizes itself when the
// server answers 401 (or 403 insufficient_scope). See docs/mcp-authorization.md ("Authorization").
//
//   te::mcp_oauth_options auth;
//   auth.redirect_uri = "http://127.0.0.1:8976/callback";
//   auth.user_agent = [](const std::string& url) { return open_browser_and_wait_for_redirect(url); };
//   auto client = te::mcp_client::connect(pool, {.url = "https://mcp.example.com/mcp", .authorization = auth});
//
// What the library does: RFC 9728 protected-resource metadata (from WWW-Authenticate, else the well-known
// URIs), RFC 8414 / OpenID Connect discovery of the authorization server (2025-03-26: its metadata at the
// MCP server's origin, else /authorize /token /register there), client registration (pre-registered, a
// Client ID Metadata Document URL, or RFC 7591 dynamic registration), the authorization code grant with
// PKCE S256 and `state`, RFC 8707 `resource` in the authorization and token requests, RFC 9207 `iss`
// checked, the token endpoint authenticated with none, client_secret_basic or client_secret_post, scopes
// chosen as the specification says and widened on 403 insufficient_scope (a bounded number of times; never
// scopes the application fixed, never again scopes the server denied), and tokens refreshed when they expire.
// Credentials are bound to the issuer that issued them; every fetch goes through a discovery policy (no
// private or loopback addresses unless the MCP server is on one, https only); see docs/mcp-authorization.md ("Security").
// What the application supplies: the redirect URI and the user-agent step (`user_agent`), optionally a
// registration (a pre-registered client with its issuer) and a token store. Failures are `mcp_error`s of kind
// `authorization_failed`; no token, code, verifier or client secret is ever quoted in one.
#ifndef TOOL_EFFECTS_MCP_OAUTH_HPP
#define TOOL_EFFECTS_MCP_OAUTH_HPP

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace tool_effects {

/// Tokens the client holds for one protected resource.
struct mcp_oauth_tokens {
  std::string access_token;
  /// Empty when the authorization server gave none.
  std::string refresh_token{};
  /// The scopes granted (the token response's `scope`, else those requested), space-separated.
  std::string scope{};
  /// When the access token expires (none: the server gave no expires_in).
  std::optional<std::chrono::system_clock::time_point> expires_at{};
  /// The client the tokens were issued to (a dynamic registration included), so that a later process can
  /// refresh them: its id, secret (empty for a public client) and token endpoint authentication.
  std::string client_id{};
  std::string client_secret{};
  std::string token_endpoint_auth_method{};
  /// The authorization server (its RFC 8414 issuer, compared as an exact string) that issued the tokens and
  /// registered the client, and the resource they are for. A later client sends the refresh token and the
  /// client's credentials to that issuer only: tokens with another issuer, or none (saved before this field
  /// existed), are never refreshed and their client is never used; their access token still goes to the
  /// resource, and tokens whose resource is set and is not the MCP server's are ignored.
  std::string issuer{};
  std::string resource{};
};

/// Where tokens are kept between sessions; the key is the resource (the canonical MCP server URI). Both
/// functions are called on the client's executor; an exception from one counts as no tokens, or is ignored.
/// Default: tokens live in the client.
struct mcp_oauth_token_store {
  std::function<std::optional<mcp_oauth_tokens>(const std::string& resource)> load{};
  std::function<void(const std::string& resource, const mcp_oauth_tokens& tokens)> save{};
};

/// How the client authorizes itself (OAuth 2.1 authorization code grant with PKCE).
struct mcp_oauth_options {
  /// The redirect URI registered for the client (where the user agent lands with the code).
  std::string redirect_uri;
  /// The user-agent step: given the authorization URL, open it (a browser) and return the URL the
  /// authorization server redirected to (with code, state and iss). Called on a thread of its own; it may
  /// block, and fails the authorization by throwing. Nothing else of the client waits for it, but the
  /// request that needed the authorization times out as usual.
  std::function<std::string(const std::string& authorization_url)> user_agent;
  /// How long the user-agent step may take before the authorization fails.
  std::chrono::milliseconds user_agent_timeout = std::chrono::minutes(5);

  /// A pre-registered client: its id, and its secret (empty: a public client). Used before anything else.
  std::string client_id{};
  std::string client_secret{};
  /// The issuer (RFC 8414, exact string) of the authorization server the pre-registered client belongs to:
  /// its id and secret go to that authorization server and never to another. Required with `client_id`; an
  /// authorization server with another issuer is treated as one without a pre-registered client (a client
  /// metadata document or dynamic registration, if they apply).
  std::string client_issuer{};
  /// The token endpoint authentication of the pre-registered client: "none", "client_secret_basic" or
  /// "client_secret_post"; empty: basic when there is a secret (post when the server supports only post),
  /// else none.
  std::string token_endpoint_auth_method{};
  /// A Client ID Metadata Document URL (https, with a path): used as the client id when the authorization
  /// server says client_id_metadata_document_supported, before dynamic registration.
  std::string client_metadata_url{};
  /// RFC 7591 dynamic registration, when the server has a registration endpoint and nothing above applies.
  bool dynamic_registration = true;
  /// The client_name sent in dynamic registration.
  std::string client_name = "tool_effects MCP client";

  /// The scopes to request, overriding the specification's choice (WWW-Authenticate `scope`, else the
  /// resource metadata's scopes_supported, else none). Fixed scopes are never widened: a 403
  /// insufficient_scope asking for more fails the request (authorization_failed) without a user-agent step.
  std::optional<std::vector<std::string>> scopes{};
  /// Tokens kept elsewhere (e.g. on disk); default: in the client only.
  mcp_oauth_token_store token_store{};
  /// Authorizations (including refreshes) one request may cause before it fails: a server that answers
  /// 403 insufficient_scope again and again does not make the client loop.
  std::size_t max_authorizations_per_request = 2;
  /// Which addresses the client may fetch metadata, registration and tokens from (every URL of the flow,
  /// checked for each address its host resolves to, before connecting; only allowed addresses are tried).
  /// Given the URL and the address as text ("203.0.113.7", "::1"), returns whether it may be fetched.
  /// Empty: the default policy: public addresses are allowed; loopback, private (RFC 1918, RFC 6598, IPv6
  /// ULA) and link-local ones only when the MCP server's own address is of the same kind; unspecified,
  /// multicast and broadcast addresses never. A refused address fails like an unreachable or silent one
  /// ("could not fetch"), so that discovery cannot map a network. See docs/mcp-authorization.md ("Security").
  std::function<bool(const std::string& url, const std::string& address)> discovery_policy{};
  /// Every URL of the flow (metadata, registration, token, authorization endpoints) must be https, except
  /// plain http to a loopback address (which the discovery policy must still allow). false: http is
  /// accepted at any address the policy allows (a test network; never for a real deployment).
  bool require_https = true;
  /// The 2025-03-26 fallback when a server has no protected resource metadata: the authorization server at
  /// the MCP server's origin (its metadata there, else /authorize, /token and /register, whose PKCE support
  /// cannot be checked). Off: such a server fails the authorization ("no protected resource metadata").
  bool legacy_discovery = false;
  /// Bounds of every exchange with the authorization server and the metadata: time (name resolution,
  /// connection and exchange together), and body bytes.
  std::chrono::milliseconds http_timeout = std::chrono::seconds(10);
  std::size_t max_response_bytes = 64 * 1024;
};

/// A user agent without a user, for authorization servers that redirect at once (tests, or a server that
/// has already granted the client): GETs the authorization URL (http, or https in a TLS build) and returns
/// the `Location` of its 3xx answer, bounded by `timeout`. Throws std::runtime_error naming the status when
/// the answer is not a redirect. Defined in <tool_effects/mcp/http.hpp>.
inline std::string mcp_oauth_follow_redirect(const std::string& authorization_url,
                                             std::chrono::milliseconds timeout = std::chrono::seconds(10));

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_MCP_OAUTH_HPP
