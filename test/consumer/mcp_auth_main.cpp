// Consumer of the optional token verifiers (tool_effects::mcp_auth): a JWT verifier and an introspection verifier
// compile against the installed headers and link OpenSSL; with no server behind their URLs, a well-formed token is
// refused for want of keys (and a malformed one before any fetch), never accepted and never thrown.
#include <chrono>
#include <cstdio>
#include <string_view>

#include <tool_effects/mcp/auth/introspection.hpp>
#include <tool_effects/mcp/auth/jwt.hpp>

int main() {
  tool_effects::mcp_jwt_options o;
  o.issuer = "https://auth.example.test";
  o.audience = "https://mcp.example.test/mcp";
  o.jwks_url = "http://127.0.0.1:1/jwks.json";  // nothing listens on port 1
  o.fetch_timeout = std::chrono::milliseconds(2000);
  const tool_effects::mcp_jwt_verifier jwt(o);
  // {"alg":"RS256","kid":"k"} . {"sub":"a"} . "sig"
  const auto v = jwt.verify("eyJhbGciOiJSUzI1NiIsImtpZCI6ImsifQ.eyJzdWIiOiJhIn0.c2ln");
  const auto m = jwt.verify("not a token");
  tool_effects::mcp_introspection_options io;
  io.endpoint = "http://127.0.0.1:1/introspect";
  io.client_id = "rs";
  io.client_secret = "secret";
  io.fetch_timeout = std::chrono::milliseconds(2000);
  const tool_effects::mcp_introspection_verifier introspect(io);
  const auto i = introspect.verify("opaque-token");
  if (v.accepted() || v.reason != "keys_unavailable" || m.reason != "malformed" || i.accepted() ||
      i.reason != "unavailable") {
    std::printf("consumer: unexpected verdicts: %.*s %.*s %.*s\n", static_cast<int>(v.reason.size()), v.reason.data(),
                static_cast<int>(m.reason.size()), m.reason.data(), static_cast<int>(i.reason.size()), i.reason.data());
    return 1;
  }
  std::puts("consumer: tool_effects::mcp_auth found, compiled, linked OpenSSL and ran");
  return 0;
}
