// tool_effects/mcp/auth/verdict.hpp — what the shipped token verifiers (mcp/auth/jwt.hpp, mcp/auth/introspection.hpp)
// say beyond "valid or not": a verdict with a stable reason, and the log hook they report through. Neither ever
// holds the token, nor any part of it.
#ifndef TOOL_EFFECTS_MCP_AUTH_VERDICT_HPP
#define TOOL_EFFECTS_MCP_AUTH_VERDICT_HPP

#include <functional>
#include <optional>
#include <string_view>

#include <tool_effects/mcp/auth/principal.hpp>

namespace tool_effects {

/// A verifier's answer about one token: its principal when valid, else why not. `reason` is a stable slug (static
/// storage; never changes between versions), "" when accepted:
///   token_too_large    more than 16 KiB
///   malformed          not a JWT (three strict base64url parts, JSON objects without duplicate keys), or a
///                      claim of the wrong type (in a JWT, or in an active introspection response)
///   algorithm_not_allowed  `alg` none, HS*, or any algorithm not in the allowed list
///   unsupported_header a `crit` header (no extension is understood)
///   wrong_type         `typ` is not at+jwt, where mcp_jwt_options::require_at_jwt_type asks for it
///   unknown_key        no key of the JWKS has the token's `kid` (after the refresh the interval allows)
///   key_mismatch       the key named by `kid` is not of the algorithm's type, or its `use`/`alg`/`key_ops` forbid
///   bad_signature      the signature does not verify
///   missing_claim      `exp` (JWT) absent
///   wrong_issuer, wrong_audience, expired, not_yet_valid (`nbf`), issued_in_future (`iat`)
///   inactive           introspection: `active` is not true
///   keys_unavailable   JWT: no key set could be fetched yet
///   unavailable        introspection: the endpoint could not be asked, refused the credentials, or answered
///                      something that is not an introspection response
///   internal           anything else (an allocation failure)
struct mcp_token_verdict {
  std::optional<mcp_principal> principal{};
  std::string_view reason{};

  [[nodiscard]] bool accepted() const noexcept { return principal.has_value(); }
};

/// Told of what a verifier refused and of the failures of what it fetches: a stable `reason` (a verdict's, or
/// one of jwks_unavailable, jwks_too_large, jwks_invalid, jwks_key_skipped, introspection_unavailable,
/// introspection_refused, introspection_too_large, introspection_invalid) and a message for a person. Neither
/// holds the token, a credential or a fetched body's bytes; a message names the configured URL (without its query)
/// and, for a JWT, at most its `kid`. Called on the verifying thread; must not throw.
using mcp_verifier_log = std::function<void(std::string_view reason, std::string_view message)>;

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_MCP_AUTH_VERDICT_HPP
