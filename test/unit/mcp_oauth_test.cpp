// OAuth 2.1 authorization of the MCP client over Streamable HTTP (issue 20, point 3; <tool_effects/mcp/oauth.hpp>),
// against test/mcp/oauth_server.py: an authorization server and a protected MCP server started here, stopped by
// pid. The server checks what a real one checks (PKCE S256, the resource and redirect_uri of the code, the client's
// authentication, token expiry, scopes) and logs every request, so the tests read what the client sent. The user
// agent is mcp_oauth_follow_redirect (the server redirects at once), or a wrapper that tampers with the URL or
// the redirect. Every token, code and secret the server makes starts with SENTINEL-: errors are scanned for them.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/thread_pool.hpp>

#include <tool_effects/mcp.hpp>
#include <tool_effects/mcp/http.hpp>
#include <tool_effects/mcp/oauth.hpp>

#include "mcp_test_support.hpp"

// Unity-built with the other mcp tests (test/CMakeLists.txt): all below is this file's own.
namespace mcp_oauth_test_ns {

namespace te = tool_effects;
namespace fs = std::filesystem;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

// test/mcp/oauth_server.py with `flags`, in its own process group, stopped by pid.
class oauth_server {
 public:
  explicit oauth_server(std::vector<std::string> flags = {}) : dir_(mcp_test::scratch_dir("te_mcp_oauth")) {
    std::vector<std::string> argv{"python3",     std::string(TOOL_EFFECTS_MCP_TEST_DIR) + "/oauth_server.py",
                                  "--port-file", (dir_ / "port").string(),
                                  "--log",       (dir_ / "log").string()};
    argv.insert(argv.end(), flags.begin(), flags.end());
    proc_ = std::make_unique<mcp_test::server_process>(argv);
    port_ = mcp_test::port_from(dir_ / "port", 1000);
  }
  oauth_server(const oauth_server&) = delete;
  oauth_server& operator=(const oauth_server&) = delete;
  ~oauth_server() {
    proc_.reset();
    fs::remove_all(dir_);
  }
  [[nodiscard]] int port() const { return port_; }
  [[nodiscard]] std::string origin() const { return "http://127.0.0.1:" + std::to_string(port_); }
  [[nodiscard]] std::string url() const { return origin() + "/mcp"; }
  [[nodiscard]] std::vector<json> log() const { return mcp_test::json_lines(dir_ / "log"); }
  // The logged requests to `path` (and `method`, when given).
  [[nodiscard]] std::vector<json> requests(const std::string& path, const std::string& method = "") const {
    std::vector<json> out;
    for (auto& e : log())
      if (e["path"] == path && (method.empty() || e["method"] == method)) out.push_back(e);
    return out;
  }

 private:
  fs::path dir_;
  std::unique_ptr<mcp_test::server_process> proc_;
  int port_ = 0;
};

// What a test's user agent saw.
struct agent_log {
  std::mutex m;
  std::vector<std::string> urls;
  std::size_t calls() {
    std::lock_guard g(m);
    return urls.size();
  }
};

// Options whose user agent follows the server's redirect, after `tamper` (if any) changed the URL, and
// `tamper_redirect` the redirect.
te::mcp_oauth_options options(const std::shared_ptr<agent_log>& seen,
                              std::function<std::string(std::string)> tamper = {},
                              std::function<std::string(std::string)> tamper_redirect = {}) {
  te::mcp_oauth_options o;
  o.redirect_uri = "http://127.0.0.1:1/callback";
  o.user_agent = [seen, tamper, tamper_redirect](const std::string& url) {
    {
      std::lock_guard g(seen->m);
      seen->urls.push_back(url);
    }
    std::string r = te::mcp_oauth_follow_redirect(tamper ? tamper(url) : url);
    return tamper_redirect ? tamper_redirect(r) : r;
  };
  return o;
}

te::mcp_client connect(boost::asio::thread_pool& pool, const oauth_server& s, te::mcp_oauth_options o) {
  te::mcp_http_endpoint ep{.url = s.url()};
  ep.open_get_stream = false;
  ep.authorization = std::move(o);
  return te::mcp_client::connect(pool, ep, mcp_test::fast_options());
}

// Whether `text` quotes any token, code or secret the server made (client ids are not secrets).
bool quotes_a_secret(const std::string& text) {
  for (const char* k : {"SENTINEL-ACCESS", "SENTINEL-REFRESH", "SENTINEL-CODE", "SENTINEL-SECRET"})
    if (text.find(k) != std::string::npos) return true;
  return false;
}

// The error of listing the tools through a fresh client ("no error" when it worked); `what` its message,
// checked to quote no secret (nor does the client's stderr ring).
std::string list_error(const oauth_server& s, te::mcp_oauth_options o, std::string* what = nullptr) {
  boost::asio::thread_pool pool(2);
  std::string w;
  std::string kind = mcp_test::error_kind(
      [&] {
        auto c = connect(pool, s, std::move(o));
        (void)c.list_tools();
        for (const auto& line : c.stderr_tail()) EXPECT_FALSE(quotes_a_secret(line)) << line;
        c.close();
      },
      &w);
  EXPECT_FALSE(quotes_a_secret(w)) << w;
  if (what) *what = w;
  return kind;
}

std::string query_param(const std::string& url, const std::string& name) {
  const auto ps = te::detail::mcp_query_params(url);
  const auto* v = te::detail::mcp_auth_param(ps, name);
  return v ? *v : std::string("(absent)");
}

std::string replace_param(std::string url, const std::string& name, const std::string& value) {
  const auto at = url.find(name + "=");
  if (at == std::string::npos) return url;
  const auto end = url.find('&', at);
  return url.replace(at, (end == std::string::npos ? url.size() : end) - at, name + "=" + value);
}

std::string hex(const std::array<std::uint8_t, 32>& d) {
  std::string out;
  constexpr char digits[] = "0123456789abcdef";
  for (auto b : d) {
    out += digits[b >> 4];
    out += digits[b & 15];
  }
  return out;
}

}  // namespace

// SHA-256 (FIPS 180-4 examples and the million a's) of both forms: the portable one and mcp_sha256 (OpenSSL's
// in a TLS build), which agree on random inputs of every length up to 300 bytes; and RFC 7636's example.
TEST(McpOauth, Sha256AndPkceFollowTheStandards) {
  for (const auto sha256 : {+[](std::string_view s) { return te::detail::mcp_sha256_portable(s); },
                            +[](std::string_view s) { return te::detail::mcp_sha256(s); }}) {
    EXPECT_EQ(hex(sha256("abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    EXPECT_EQ(hex(sha256("")), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    EXPECT_EQ(hex(sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
              "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    EXPECT_EQ(hex(sha256(std::string(1000000, 'a'))),
              "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  }
  std::mt19937 rng(7);
  for (std::size_t n = 0; n <= 300; ++n) {
    std::string s(n, '\0');
    for (auto& c : s) c = static_cast<char>(rng());
    ASSERT_EQ(te::detail::mcp_sha256(s), te::detail::mcp_sha256_portable(s)) << n;
  }
  EXPECT_EQ(te::detail::mcp_pkce_challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
  EXPECT_EQ(te::detail::mcp_base64("Man", false), "TWFu");
  EXPECT_EQ(te::detail::mcp_base64("Ma", false), "TWE=");
  EXPECT_EQ(te::detail::mcp_base64("M", true), "TQ");
  // Verifiers are 43 characters of the unreserved set, and differ.
  const auto v1 = te::detail::mcp_base64(te::detail::mcp_random_bytes(32), true);
  const auto v2 = te::detail::mcp_base64(te::detail::mcp_random_bytes(32), true);
  EXPECT_EQ(v1.size(), 43u);
  EXPECT_NE(v1, v2);
}

// The Bearer challenge of WWW-Authenticate: quoted and bare values, escapes, another scheme before or after,
// and which answers ask for authorization (401; 403 only with insufficient_scope).
TEST(McpOauth, WwwAuthenticateIsParsed) {
  const auto ps = te::detail::mcp_bearer_challenge(
      R"(Basic realm="x", Bearer error="insufficient_scope", scope="a b", resource_metadata="http://h/p?q=\"1\"", x=bare, Other k="v")");
  ASSERT_NE(te::detail::mcp_auth_param(ps, "scope"), nullptr);
  EXPECT_EQ(*te::detail::mcp_auth_param(ps, "scope"), "a b");
  EXPECT_EQ(*te::detail::mcp_auth_param(ps, "resource_metadata"), "http://h/p?q=\"1\"");
  EXPECT_EQ(*te::detail::mcp_auth_param(ps, "x"), "bare");
  EXPECT_EQ(te::detail::mcp_auth_param(ps, "realm"), nullptr);  // Basic's
  EXPECT_EQ(te::detail::mcp_auth_param(ps, "k"), nullptr);      // Other's
  EXPECT_TRUE(te::detail::mcp_oauth_wants(401, ""));
  EXPECT_TRUE(te::detail::mcp_oauth_wants(403, R"(Bearer error="insufficient_scope")"));
  EXPECT_FALSE(te::detail::mcp_oauth_wants(403, R"(Bearer error="invalid_token")"));
  EXPECT_FALSE(te::detail::mcp_oauth_wants(403, ""));
  EXPECT_FALSE(te::detail::mcp_oauth_wants(500, ""));
}

// Discovery from the 401's resource_metadata (at a path no well-known URI finds), then RFC 8414 metadata at the
// path-inserted URI of an issuer with a path; the code, PKCE and resource the server checks. Control: the same
// server without resource_metadata in its 401 cannot be found (the well-known URIs miss it, and the 2025-03-26
// fallback is off by default: nothing is fetched at the origin).
TEST(McpOauth, DiscoveryFromWwwAuthenticate) {
  {
    oauth_server s({"--prm-path", "/custom/prm.json"});
    auto seen = std::make_shared<agent_log>();
    ASSERT_EQ(list_error(s, options(seen)), "no error");
    EXPECT_EQ(s.requests("/custom/prm.json").size(), 1u);
    EXPECT_TRUE(s.requests("/.well-known/oauth-protected-resource/mcp").empty());
    EXPECT_EQ(s.requests("/.well-known/oauth-authorization-server/as").size(), 1u);
    EXPECT_EQ(seen->calls(), 1u);
    const std::string url = seen->urls.at(0);
    EXPECT_EQ(url.rfind(s.origin() + "/as/authorize?", 0), 0u) << url;
    EXPECT_EQ(query_param(url, "code_challenge_method"), "S256");
    EXPECT_EQ(query_param(url, "resource"), s.url());
    EXPECT_EQ(query_param(url, "response_type"), "code");
    EXPECT_EQ(query_param(url, "scope"), "(absent)");  // nothing to choose from
    const auto tokens = s.requests("/as/token", "POST");
    ASSERT_EQ(tokens.size(), 1u);
    EXPECT_EQ(tokens[0]["form"]["resource"], s.url());
    EXPECT_EQ(tokens[0]["form"]["grant_type"], "authorization_code");
    // Every MCP request after the 401 carried the token.
    const auto mcp = s.requests("/mcp", "POST");
    ASSERT_GE(mcp.size(), 3u);
    EXPECT_TRUE(mcp[0]["authorization"].is_null());
    for (std::size_t i = 1; i < mcp.size(); ++i)
      EXPECT_EQ(mcp[i]["authorization"].get<std::string>().rfind("Bearer SENTINEL-ACCESS-", 0), 0u);
  }
  {
    oauth_server s({"--prm-path", "/custom/prm.json", "--no-prm-in-header"});
    auto seen = std::make_shared<agent_log>();
    std::string what;
    EXPECT_EQ(list_error(s, options(seen), &what), "authorization_failed");
    EXPECT_NE(what.find("no protected resource metadata"), std::string::npos) << what;
    EXPECT_NE(what.find("mcp_oauth_options::legacy_discovery"), std::string::npos) << what;
    EXPECT_EQ(s.requests("/.well-known/oauth-protected-resource/mcp").size(), 1u);
    EXPECT_EQ(s.requests("/.well-known/oauth-protected-resource").size(), 1u);
    EXPECT_TRUE(s.requests("/.well-known/oauth-authorization-server").empty());
  }
}

// The fallbacks: resource metadata at the path-based well-known URI, then at the root one; the OpenID
// configuration appended to the issuer's path; with the opt-in mcp_oauth_options::legacy_discovery, the
// 2025-03-26 metadata at the MCP server's origin, and its default endpoints when there is none (control: without
// the opt-in, neither is used).
TEST(McpOauth, DiscoveryFallbacks) {
  {
    oauth_server s({"--no-prm-in-header"});
    ASSERT_EQ(list_error(s, options(std::make_shared<agent_log>())), "no error");
    EXPECT_EQ(s.requests("/.well-known/oauth-protected-resource/mcp").size(), 1u);
    EXPECT_TRUE(s.requests("/.well-known/oauth-protected-resource").empty());
  }
  {
    oauth_server s(
        {"--no-prm-in-header", "--prm-path", "/.well-known/oauth-protected-resource", "--as-metadata", "openid"});
    ASSERT_EQ(list_error(s, options(std::make_shared<agent_log>())), "no error");
    EXPECT_EQ(s.requests("/.well-known/oauth-protected-resource/mcp").size(), 1u);  // tried first, 404
    EXPECT_EQ(s.requests("/.well-known/oauth-protected-resource").size(), 1u);
    EXPECT_EQ(s.requests("/.well-known/oauth-authorization-server/as").size(), 1u);  // 404
    EXPECT_EQ(s.requests("/.well-known/openid-configuration/as").size(), 1u);        // 404
    EXPECT_EQ(s.requests("/as/.well-known/openid-configuration").size(), 1u);
    EXPECT_TRUE(s.requests("/.well-known/oauth-authorization-server").empty());  // never the root for a path
  }
  for (const bool legacy : {true, false}) {
    oauth_server s({"--no-prm", "--as-path", ""});
    auto o = options(std::make_shared<agent_log>());
    o.legacy_discovery = legacy;
    std::string what;
    ASSERT_EQ(list_error(s, o, &what), legacy ? "no error" : "authorization_failed") << what;
    EXPECT_EQ(s.requests("/.well-known/oauth-authorization-server").size(), legacy ? 1u : 0u);
    EXPECT_EQ(s.requests("/token", "POST").size(), legacy ? 1u : 0u);
  }
  for (const bool legacy : {true, false}) {
    oauth_server s({"--no-prm", "--as-path", "", "--as-metadata", "none"});
    auto seen = std::make_shared<agent_log>();
    auto o = options(seen);
    o.legacy_discovery = legacy;
    std::string what;
    ASSERT_EQ(list_error(s, o, &what), legacy ? "no error" : "authorization_failed") << what;
    EXPECT_EQ(seen->calls(), legacy ? 1u : 0u);
    if (legacy) {
      EXPECT_EQ(seen->urls.at(0).rfind(s.origin() + "/authorize?", 0), 0u);
    }
    EXPECT_EQ(s.requests("/register", "POST").size(), legacy ? 1u : 0u);
    EXPECT_EQ(s.requests("/token", "POST").size(), legacy ? 1u : 0u);
  }
}

// PKCE: the server checks the verifier against the challenge. Control: a user agent that swaps the challenge
// for another one makes the server refuse the code (so the success above is the server's check passing).
TEST(McpOauth, PkceVerifierIsCheckedByTheServer) {
  oauth_server s;
  const std::string other = te::detail::mcp_pkce_challenge("another-verifier-another-verifier-another-1");
  std::string what;
  EXPECT_EQ(list_error(s,
                       options(std::make_shared<agent_log>(),
                               [&](std::string u) { return replace_param(u, "code_challenge", other); }),
                       &what),
            "authorization_failed");
  EXPECT_NE(what.find("invalid_grant"), std::string::npos) << what;
  EXPECT_NE(what.find("PKCE verification failed"), std::string::npos) << what;
  EXPECT_EQ(list_error(s, options(std::make_shared<agent_log>())), "no error");
}

// Each token endpoint authentication: dynamic registration gets the server's method, and the token request
// uses it (the server refuses any other); a pre-registered client with a secret uses basic.
TEST(McpOauth, TokenEndpointAuthMethods) {
  for (const std::string m : {"none", "client_secret_basic", "client_secret_post"}) {
    oauth_server s({"--auth-methods", m});
    ASSERT_EQ(list_error(s, options(std::make_shared<agent_log>())), "no error") << m;
    const auto reg = s.requests("/as/register", "POST");
    ASSERT_EQ(reg.size(), 1u);
    EXPECT_EQ(reg[0]["json"]["token_endpoint_auth_method"], m);
    EXPECT_EQ(reg[0]["json"]["redirect_uris"], json::array({"http://127.0.0.1:1/callback"}));
    EXPECT_EQ(reg[0]["json"]["application_type"], "native");  // SEP-837: a loopback redirect URI
    const auto tok = s.requests("/as/token", "POST");
    ASSERT_EQ(tok.size(), 1u);
    EXPECT_EQ(tok[0]["client_method"], m);
  }
  {
    oauth_server s(
        {"--auth-methods", "client_secret_basic", "--no-registration", "--prereg", "app:SENTINEL-SECRET-app"});
    auto o = options(std::make_shared<agent_log>());
    o.client_id = "app";
    o.client_secret = "SENTINEL-SECRET-app";
    o.client_issuer = s.origin() + "/as";
    ASSERT_EQ(list_error(s, o), "no error");
    EXPECT_TRUE(s.requests("/as/register").empty());
    EXPECT_EQ(s.requests("/as/token", "POST").at(0)["client_method"], "client_secret_basic");
    // Control: a wrong secret is refused by the server, and not quoted.
    o.client_secret = "SENTINEL-SECRET-wrong";
    std::string what;
    EXPECT_EQ(list_error(s, o, &what), "authorization_failed");
    EXPECT_NE(what.find("invalid_client"), std::string::npos) << what;
  }
  {
    oauth_server s({"--no-registration"});
    std::string what;
    EXPECT_EQ(list_error(s, options(std::make_shared<agent_log>()), &what), "authorization_failed");
    EXPECT_NE(what.find("no client registration"), std::string::npos) << what;
  }
}

// RFC 9207: a redirect whose iss is another server's is refused; one without iss, when the server promised one,
// too. Controls: the same flows with the right iss succeed.
TEST(McpOauth, IssOfTheAuthorizationResponseIsChecked) {
  std::string what;
  {
    oauth_server s({"--iss", "wrong"});
    EXPECT_EQ(list_error(s, options(std::make_shared<agent_log>()), &what), "authorization_failed");
    EXPECT_NE(what.find("mix-up"), std::string::npos) << what;
    EXPECT_TRUE(s.requests("/as/token").empty());  // the code never left the client
  }
  {
    oauth_server s({"--iss", "correct", "--iss-supported"});
    EXPECT_EQ(list_error(s, options(std::make_shared<agent_log>())), "no error");
  }
  {
    oauth_server s({"--iss", "none", "--iss-supported"});
    EXPECT_EQ(list_error(s, options(std::make_shared<agent_log>()), &what), "authorization_failed");
    EXPECT_NE(what.find("no iss"), std::string::npos) << what;
  }
}

// A redirect whose state is not the one sent is refused (its code is not exchanged). Control: the redirect
// passed on unchanged by the same wrapper succeeds.
TEST(McpOauth, StateMismatchIsRejected) {
  oauth_server s;
  std::string what;
  EXPECT_EQ(list_error(s,
                       options(std::make_shared<agent_log>(), {},
                               [](std::string r) { return replace_param(r, "state", "forged"); }),
                       &what),
            "authorization_failed");
  EXPECT_NE(what.find("state"), std::string::npos) << what;
  EXPECT_TRUE(s.requests("/as/token").empty());
  EXPECT_EQ(list_error(s, options(std::make_shared<agent_log>(), {}, [](std::string r) { return r; })), "no error");
}

// An expired token is refreshed before the next request (grant refresh_token, with the resource), without the
// user agent. Control: without refresh tokens the expiry costs a 401 and a second authorization.
TEST(McpOauth, ExpiredTokensAreRefreshed) {
  for (const bool refresh : {true, false}) {
    std::vector<std::string> flags{"--expires-in", "1"};
    if (refresh) flags.emplace_back("--refresh");
    oauth_server s(flags);
    auto seen = std::make_shared<agent_log>();
    boost::asio::thread_pool pool(2);
    auto c = connect(pool, s, options(seen));
    (void)c.list_tools();
    std::this_thread::sleep_for(1500ms);
    EXPECT_EQ(c.list_tools()["tools"].size(), 1u);
    c.close();
    const auto tok = s.requests("/as/token", "POST");
    ASSERT_EQ(tok.size(), 2u);
    if (refresh) {
      EXPECT_EQ(seen->calls(), 1u);
      EXPECT_EQ(tok[1]["form"]["grant_type"], "refresh_token");
      EXPECT_EQ(tok[1]["form"]["resource"], s.url());
    } else {
      EXPECT_EQ(seen->calls(), 2u);
      EXPECT_EQ(tok[1]["form"]["grant_type"], "authorization_code");
    }
  }
}

// Scope selection: the 401's scope; else the resource metadata's scopes_supported; an application's override
// beats both. Step-up: a 403 insufficient_scope re-authorizes with the union, and the call succeeds with the
// wider token. Retry limit: a server that always answers 403 (each time for a new scope) gets
// max_authorizations_per_request of them.
TEST(McpOauth, ScopeSelectionStepUpAndItsLimit) {
  {
    oauth_server s({"--www-scope", "mcp:read", "--scopes-supported", "mcp:read mcp:write"});
    auto seen = std::make_shared<agent_log>();
    ASSERT_EQ(list_error(s, options(seen)), "no error");
    EXPECT_EQ(query_param(seen->urls.at(0), "scope"), "mcp:read");
  }
  {
    oauth_server s({"--scopes-supported", "mcp:read mcp:write"});
    auto seen = std::make_shared<agent_log>();
    ASSERT_EQ(list_error(s, options(seen)), "no error");
    EXPECT_EQ(query_param(seen->urls.at(0), "scope"), "mcp:read mcp:write");
    auto o = options(seen);
    o.scopes = std::vector<std::string>{"mine"};
    ASSERT_EQ(list_error(s, o), "no error");
    EXPECT_EQ(query_param(seen->urls.at(1), "scope"), "mine");
  }
  {
    oauth_server s({"--www-scope", "mcp:read", "--call-scope", "mcp:write"});
    auto seen = std::make_shared<agent_log>();
    boost::asio::thread_pool pool(2);
    auto c = connect(pool, s, options(seen));
    (void)c.list_tools();
    EXPECT_EQ(seen->calls(), 1u);
    EXPECT_EQ(te::mcp_text(c.call("echo", json::object())), "called with mcp:read mcp:write");
    ASSERT_EQ(seen->calls(), 2u);
    EXPECT_EQ(query_param(seen->urls.at(1), "scope"), "mcp:read mcp:write");
    c.close();
  }
  for (const std::size_t limit : {1u, 2u, 3u}) {
    oauth_server s({"--www-scope", "mcp:admin", "--always-403"});
    auto seen = std::make_shared<agent_log>();
    auto o = options(seen);
    o.max_authorizations_per_request = limit;
    std::string what;
    EXPECT_EQ(list_error(s, o, &what), "authorization_failed");
    EXPECT_NE(what.find("HTTP 403 after " + std::to_string(limit)), std::string::npos) << what;
    EXPECT_EQ(seen->calls(), limit);
  }
}

// Hostile metadata and token responses fail the authorization naming the field (its JSON pointer) or the
// limit, never the client.
TEST(McpOauth, HostileResponsesFailWithAPointer) {
  const std::vector<std::pair<std::string, std::string>> cases{
      {"prm_oversize", "exceeds the limit of 65536 bytes"},
      {"prm_wrong_type", "/authorization_servers: expected an array, got number"},
      {"as_wrong_type", "/token_endpoint: expected a string, got number"},
      {"token_no_type", "/token_type: missing"},
      {"token_crlf", "/access_token: missing, or not visible ASCII"}};
  for (const auto& [mode, expected] : cases) {
    oauth_server s({"--hostile", mode});
    std::string what;
    EXPECT_EQ(list_error(s, options(std::make_shared<agent_log>()), &what), "authorization_failed") << mode;
    EXPECT_NE(what.find(expected), std::string::npos) << mode << ": " << what;
  }
}

// No token, code, verifier or client secret in any error: the token endpoint refuses, quoting the code, the
// verifier and the client secret in its error_description; the client's error quotes the description with each
// of them redacted. Control: the server's answer did contain them.
TEST(McpOauth, NoSecretInErrors) {
  oauth_server s({"--hostile", "echo_secrets", "--auth-methods", "client_secret_post"});
  std::string what;
  EXPECT_EQ(list_error(s, options(std::make_shared<agent_log>()), &what), "authorization_failed");
  EXPECT_NE(what.find("invalid_grant (code [redacted] verifier [redacted] secret [redacted])"), std::string::npos)
      << what;
  const auto tok = s.requests("/as/token", "POST");
  ASSERT_EQ(tok.size(), 1u);
  const std::string sent = tok[0]["sent"];
  EXPECT_TRUE(quotes_a_secret(sent)) << sent;
  const std::string verifier = tok[0]["form"]["code_verifier"];
  EXPECT_EQ(verifier.size(), 43u);
  EXPECT_NE(sent.find(verifier), std::string::npos);
  EXPECT_EQ(what.find(verifier), std::string::npos) << what;
}

// A token store: the first client saves its tokens; a second client loads them and needs no user agent.
TEST(McpOauth, TokenStoreKeepsTokensBetweenClients) {
  oauth_server s;
  auto kept = std::make_shared<std::optional<te::mcp_oauth_tokens>>();
  auto seen = std::make_shared<agent_log>();
  auto o = options(seen);
  o.token_store.load = [kept](const std::string&) { return *kept; };
  o.token_store.save = [kept](const std::string& resource, const te::mcp_oauth_tokens& t) {
    EXPECT_NE(resource.find("/mcp"), std::string::npos);
    *kept = t;
  };
  ASSERT_EQ(list_error(s, o), "no error");
  ASSERT_TRUE(kept->has_value());
  EXPECT_EQ((*kept)->access_token.rfind("SENTINEL-ACCESS-", 0), 0u);
  ASSERT_EQ(list_error(s, o), "no error");
  EXPECT_EQ(seen->calls(), 1u);
  EXPECT_EQ(s.requests("/as/token").size(), 1u);
}

// A Client ID Metadata Document URL is the client id when the server supports them (no registration); when it
// does not (the control), the client registers dynamically. A URL that is not https is refused.
TEST(McpOauth, ClientIdMetadataDocuments) {
  const std::string doc = "https://client.example/oauth/metadata.json";
  for (const bool cimd : {true, false}) {
    std::vector<std::string> flags;
    if (cimd) flags.emplace_back("--cimd");
    oauth_server s(flags);
    auto seen = std::make_shared<agent_log>();
    auto o = options(seen);
    o.client_metadata_url = doc;
    ASSERT_EQ(list_error(s, o), "no error") << cimd;
    EXPECT_EQ(query_param(seen->urls.at(0), "client_id") == doc, cimd);
    EXPECT_EQ(s.requests("/as/register").size(), cimd ? 0u : 1u);
  }
  oauth_server s({"--cimd"});
  auto o = options(std::make_shared<agent_log>());
  o.client_metadata_url = "http://client.example/metadata.json";
  std::string what;
  EXPECT_EQ(list_error(s, o, &what), "authorization_failed");
  EXPECT_NE(what.find("not an https URL with a path"), std::string::npos) << what;
}

// The user agent may fail: the request fails with authorization_failed quoting it, and the client stays usable
// (the next request authorizes again, with a user agent that works this time).
TEST(McpOauth, AFailingUserAgentFailsTheRequestAlone) {
  oauth_server s;
  auto fail = std::make_shared<std::atomic<bool>>(true);
  auto o = options(std::make_shared<agent_log>());
  auto follow = o.user_agent;
  o.user_agent = [fail, follow](const std::string& url) -> std::string {
    if (*fail) throw std::runtime_error("the user closed the browser");
    return follow(url);
  };
  boost::asio::thread_pool pool(2);
  std::string what;
  te::mcp_http_endpoint ep{.url = s.url()};
  ep.open_get_stream = false;
  ep.authorization = o;
  std::optional<te::mcp_client> c;
  EXPECT_EQ(mcp_test::error_kind(
                [&] {
                  c.emplace(te::mcp_client::connect(pool, ep, mcp_test::fast_options()));
                  (void)c->list_tools();
                },
                &what),
            "authorization_failed");
  EXPECT_NE(what.find("the user agent failed: the user closed the browser"), std::string::npos) << what;
  *fail = false;
  if (!c) c.emplace(te::mcp_client::connect(pool, ep, mcp_test::fast_options()));
  EXPECT_EQ(c->list_tools()["tools"].size(), 1u);
  c->close();
}

// Requests that meet the 401 together share one authorization: after the token expired (no refresh tokens),
// 6 concurrent calls cost one more user-agent step, not 6.
TEST(McpOauth, ConcurrentRequestsShareOneAuthorization) {
  oauth_server s({"--expires-in", "1"});
  auto seen = std::make_shared<agent_log>();
  boost::asio::thread_pool pool(2);
  auto c = connect(pool, s, options(seen));
  (void)c.list_tools();
  ASSERT_EQ(seen->calls(), 1u);
  std::this_thread::sleep_for(1500ms);
  std::vector<std::thread> callers;
  std::atomic<int> ok{0};
  for (int i = 0; i < 6; ++i)
    callers.emplace_back([&] {
      if (te::mcp_text(c.call("echo", json::object())).rfind("called with", 0) == 0) ++ok;
    });
  for (auto& t : callers) t.join();
  EXPECT_EQ(ok.load(), 6);
  EXPECT_EQ(seen->calls(), 2u);
  EXPECT_EQ(s.requests("/as/token", "POST").size(), 2u);
  c.close();
}

// Tokens in the store carry the client they were issued to (here a dynamic registration with a secret), so a
// later client refreshes them after they expired, without registering or the user agent. Control: a store that
// loses the registration makes the later client register anew; the server refuses it the other client's
// refresh token, and the whole flow runs.
TEST(McpOauth, StoredTokensAreRefreshedByALaterClient) {
  for (const bool keep_client : {true, false}) {
    oauth_server s({"--expires-in", "1", "--refresh", "--auth-methods", "client_secret_post"});
    auto kept = std::make_shared<std::optional<te::mcp_oauth_tokens>>();
    auto seen = std::make_shared<agent_log>();
    auto o = options(seen);
    o.token_store.load = [kept](const std::string&) { return *kept; };
    o.token_store.save = [kept](const std::string&, const te::mcp_oauth_tokens& t) { *kept = t; };
    ASSERT_EQ(list_error(s, o), "no error");
    ASSERT_TRUE(kept->has_value());
    EXPECT_EQ((*kept)->token_endpoint_auth_method, "client_secret_post");
    EXPECT_EQ((*kept)->client_secret.rfind("SENTINEL-SECRET-", 0), 0u);
    if (!keep_client) (*kept)->client_id.clear();
    std::this_thread::sleep_for(1500ms);
    ASSERT_EQ(list_error(s, o), "no error") << keep_client;
    const auto tok = s.requests("/as/token", "POST");
    if (keep_client) {
      EXPECT_EQ(seen->calls(), 1u);
      EXPECT_EQ(s.requests("/as/register").size(), 1u);
      ASSERT_EQ(tok.size(), 2u);
      EXPECT_EQ(tok[1]["form"]["grant_type"], "refresh_token");
      EXPECT_EQ(tok[1]["client_method"], "client_secret_post");
    } else {
      EXPECT_EQ(seen->calls(), 2u);
      EXPECT_EQ(s.requests("/as/register").size(), 2u);
      ASSERT_EQ(tok.size(), 3u);
      EXPECT_EQ(tok[1]["form"]["grant_type"], "refresh_token");
      EXPECT_NE(tok[1]["sent"].get<std::string>().find("another client"), std::string::npos);
      EXPECT_EQ(tok[2]["form"]["grant_type"], "authorization_code");
    }
  }
}

// ---- Issue 26: hostile authorization servers and metadata.

namespace {

// A listener that accepts nothing and answers nothing (a silent port: a connection to it never gets a reply).
class silent_listener {
 public:
  silent_listener() : dir_(mcp_test::scratch_dir("te_mcp_silent")) {
    const std::string script =
        "import socket,os,sys,time\n"
        "s=socket.socket(); s.bind(('127.0.0.1',0)); s.listen(64)\n"
        "open(sys.argv[1]+'.tmp','w').write(str(s.getsockname()[1])); os.rename(sys.argv[1]+'.tmp',sys.argv[1])\n"
        "time.sleep(3600)\n";
    proc_ = std::make_unique<mcp_test::server_process>(
        std::vector<std::string>{"python3", "-c", script, (dir_ / "port").string()});
    port_ = mcp_test::port_from(dir_ / "port", 1000);
  }
  silent_listener(const silent_listener&) = delete;
  silent_listener& operator=(const silent_listener&) = delete;
  ~silent_listener() {
    proc_.reset();
    fs::remove_all(dir_);
  }
  [[nodiscard]] int port() const { return port_; }

 private:
  fs::path dir_;
  std::unique_ptr<mcp_test::server_process> proc_;
  int port_ = 0;
};

// `text` with every ":<port>" replaced by ":PORT".
std::string without_port(std::string text, int port) {
  const std::string p = ":" + std::to_string(port);
  for (auto at = text.find(p); at != std::string::npos; at = text.find(p, at)) text.replace(at, p.size(), ":PORT");
  return text;
}

// Whether any logged request carried `value` (a whole JSON string: a form or query value, or the Authorization
// header).
bool carries(const std::vector<json>& requests, const std::string& value) {
  for (const auto& e : requests)
    if (e.dump().find(json(value).dump()) != std::string::npos) return true;
  return false;
}

}  // namespace

// The address classes of the discovery policy and its defaults (IPv4, IPv6, v4 embedded in v6), and the https
// rule. Controls: each refused class is allowed when the MCP server is of that class (loopback, private,
// link-local), never the unspecified address; a public address is always allowed.
TEST(McpOauth, DiscoveryPolicyClassesAddresses) {
  using K = te::detail::mcp_address_kind;
  const auto kind = [](const char* a) { return te::detail::mcp_oauth_address_kind(boost::asio::ip::make_address(a)); };
  EXPECT_EQ(kind("127.0.0.1"), K::loopback);
  EXPECT_EQ(kind("127.3.2.1"), K::loopback);
  EXPECT_EQ(kind("::1"), K::loopback);
  EXPECT_EQ(kind("::ffff:127.0.0.1"), K::loopback);
  EXPECT_EQ(kind("10.1.2.3"), K::private_network);
  EXPECT_EQ(kind("172.16.0.1"), K::private_network);
  EXPECT_EQ(kind("172.31.255.255"), K::private_network);
  EXPECT_EQ(kind("172.32.0.1"), K::public_address);
  EXPECT_EQ(kind("192.168.1.1"), K::private_network);
  EXPECT_EQ(kind("100.64.0.1"), K::private_network);
  EXPECT_EQ(kind("fd00::1"), K::private_network);
  EXPECT_EQ(kind("::ffff:10.0.0.1"), K::private_network);
  EXPECT_EQ(kind("64:ff9b::a00:1"), K::private_network);  // NAT64 of 10.0.0.1
  EXPECT_EQ(kind("2002:a9fe:a9fe::"), K::link_local);     // 6to4 of 169.254.169.254
  EXPECT_EQ(kind("169.254.169.254"), K::link_local);
  EXPECT_EQ(kind("fe80::1"), K::link_local);
  EXPECT_EQ(kind("0.0.0.0"), K::never);
  EXPECT_EQ(kind("::"), K::never);
  EXPECT_EQ(kind("224.0.0.1"), K::never);
  EXPECT_EQ(kind("255.255.255.255"), K::never);
  EXPECT_EQ(kind("93.184.216.34"), K::public_address);
  EXPECT_EQ(kind("2606:4700::1111"), K::public_address);
  for (const K target : {K::loopback, K::private_network, K::link_local}) {
    EXPECT_FALSE(te::detail::mcp_oauth_default_allows(target, K::public_address));
    EXPECT_TRUE(te::detail::mcp_oauth_default_allows(target, target));
  }
  EXPECT_FALSE(te::detail::mcp_oauth_default_allows(K::private_network, K::loopback));
  EXPECT_FALSE(te::detail::mcp_oauth_default_allows(K::never, K::never));
  EXPECT_TRUE(te::detail::mcp_oauth_default_allows(K::public_address, K::loopback));
  EXPECT_FALSE(te::detail::mcp_oauth_scheme_allows(false, K::public_address, true));
  EXPECT_FALSE(te::detail::mcp_oauth_scheme_allows(false, K::private_network, true));
  EXPECT_TRUE(te::detail::mcp_oauth_scheme_allows(false, K::loopback, true));
  EXPECT_TRUE(te::detail::mcp_oauth_scheme_allows(true, K::public_address, true));
  EXPECT_TRUE(te::detail::mcp_oauth_scheme_allows(false, K::public_address, false));
  EXPECT_FALSE(te::detail::mcp_oauth_endpoint_scheme_ok("http://auth.example.com/authorize", true));
  EXPECT_TRUE(te::detail::mcp_oauth_endpoint_scheme_ok("http://auth.example.com/authorize", false));
  EXPECT_TRUE(te::detail::mcp_oauth_endpoint_scheme_ok("https://auth.example.com/authorize", true));
  EXPECT_TRUE(te::detail::mcp_oauth_endpoint_scheme_ok("http://127.0.0.1:9/authorize", true));
  EXPECT_TRUE(te::detail::mcp_oauth_endpoint_scheme_ok("http://localhost:9/authorize", true));
  EXPECT_TRUE(te::detail::mcp_oauth_endpoint_scheme_ok("http://[::1]:9/authorize", true));
}

// SSRF: metadata naming an authorization server at the unspecified address (0.0.0.0, which reaches this host)
// makes no request there by default, and the error quotes nothing of it. Control: a discovery policy that
// allows every address (and require_https off), with the same metadata, reaches the "internal service" (it logs
// the request).
TEST(McpOauth, DiscoveryDoesNotFetchAnInternalService) {
  oauth_server internal;
  for (const bool allow_all : {false, true}) {
    oauth_server s({"--as-url", "http://0.0.0.0:" + std::to_string(internal.port()) + "/as"});
    auto o = options(std::make_shared<agent_log>());
    if (allow_all) {  // and http anywhere: 0.0.0.0 is not loopback
      o.discovery_policy = [](const std::string&, const std::string&) { return true; };
      o.require_https = false;
    }
    std::string what;
    (void)list_error(s, o, &what);
    if (allow_all) {
      EXPECT_FALSE(internal.log().empty()) << what;
    } else {
      EXPECT_TRUE(internal.log().empty());
      EXPECT_NE(what.find("could not fetch"), std::string::npos) << what;
    }
  }
}

// The application's discovery policy sees every URL fetched with each address, and a refused address fails
// exactly like a closed port and like a port that never answers (the same text but for the port). Control: the
// refused service is never reached, and the policy was asked about it.
TEST(McpOauth, DiscoveryPolicyRefusalsLookLikeTimeouts) {
  oauth_server internal;
  silent_listener silent;
  int closed = 0;
  {
    oauth_server gone;
    closed = gone.port();
  }
  std::vector<std::string> texts;
  for (const int port : {internal.port(), closed, silent.port()}) {
    oauth_server s({"--as-url", "http://127.0.0.1:" + std::to_string(port) + "/as"});
    auto asked = std::make_shared<std::vector<std::string>>();
    auto o = options(std::make_shared<agent_log>());
    o.http_timeout = 500ms;
    const std::string refused = ":" + std::to_string(internal.port()) + "/";
    o.discovery_policy = [asked, refused](const std::string& url, const std::string& address) {
      asked->push_back(url + " " + address);
      return url.find(refused) == std::string::npos;
    };
    std::string what;
    EXPECT_EQ(list_error(s, o, &what), "authorization_failed");
    texts.push_back(without_port(without_port(what, port), s.port()));
    ASSERT_FALSE(asked->empty());  // the policy was asked (and without it, front() is not read)
    EXPECT_NE(asked->front().find(" 127.0.0.1"), std::string::npos) << asked->front();
  }
  EXPECT_TRUE(internal.log().empty());
  EXPECT_NE(texts[0].find("could not fetch"), std::string::npos) << texts[0];
  EXPECT_EQ(texts[0], texts[1]);
  EXPECT_EQ(texts[0], texts[2]);
}

// Tokens saved by a client of one authorization server (/as, with a refresh token and a client secret) and
// loaded by a later client after the MCP server's metadata moved to another (/other-as): the other server
// receives neither the refresh token nor the first client's id or secret; the later client registers there and
// runs the flow. Control: without the move, the later client refreshes at /as with the stored client.
TEST(McpOauth, StoredCredentialsGoOnlyToTheirIssuer) {
  for (const bool moved : {true, false}) {
    const fs::path dir = mcp_test::scratch_dir("te_mcp_oauth_as");
    oauth_server s({"--expires-in", "1", "--refresh", "--auth-methods", "client_secret_post", "--prm-as-file",
                    (dir / "as").string()});
    auto kept = std::make_shared<std::optional<te::mcp_oauth_tokens>>();
    auto seen = std::make_shared<agent_log>();
    auto o = options(seen);
    o.token_store.load = [kept](const std::string&) { return *kept; };
    o.token_store.save = [kept](const std::string&, const te::mcp_oauth_tokens& t) { *kept = t; };
    ASSERT_EQ(list_error(s, o), "no error");
    ASSERT_TRUE(kept->has_value());
    EXPECT_EQ((*kept)->issuer, s.origin() + "/as");
    const te::mcp_oauth_tokens first = **kept;
    if (moved) std::ofstream(dir / "as") << "/other-as";
    std::this_thread::sleep_for(1500ms);
    ASSERT_EQ(list_error(s, o), "no error") << moved;
    const auto other = s.requests("/other-as/token");
    EXPECT_FALSE(carries(other, first.refresh_token));
    EXPECT_FALSE(carries(other, first.client_id));
    EXPECT_FALSE(carries(other, first.client_secret));
    EXPECT_FALSE(carries(s.requests("/other-as/authorize"), first.client_id));
    if (moved) {
      EXPECT_EQ(s.requests("/other-as/register").size(), 1u);
      EXPECT_EQ(seen->calls(), 2u);
      EXPECT_EQ((*kept)->issuer, s.origin() + "/other-as");
    } else {
      EXPECT_TRUE(s.requests("/other-as/register").empty());
      EXPECT_EQ(seen->calls(), 1u);
      EXPECT_EQ(s.requests("/as/token").back()["form"]["grant_type"], "refresh_token");
    }
    fs::remove_all(dir);
  }
}

// One client whose server moves to another authorization server while it runs (SEP-2352): at the next 401 it
// discovers anew and registers with the new server; the first server's client id never reaches it. Control:
// without the move, the same 401 re-authorizes at the first server with the same registration.
TEST(McpOauth, AClientReRegistersWhenTheAuthorizationServerChanges) {
  for (const bool moved : {true, false}) {
    const fs::path dir = mcp_test::scratch_dir("te_mcp_oauth_as");
    oauth_server s({"--expires-in", "1", "--prm-as-file", (dir / "as").string()});
    auto seen = std::make_shared<agent_log>();
    boost::asio::thread_pool pool(2);
    auto c = connect(pool, s, options(seen));
    (void)c.list_tools();
    const auto reg = s.requests("/as/register");
    ASSERT_EQ(reg.size(), 1u);
    const std::string first_client = json::parse(reg[0]["sent"].get<std::string>())["client_id"];
    if (moved) std::ofstream(dir / "as") << "/other-as";
    std::this_thread::sleep_for(1500ms);
    EXPECT_EQ(c.list_tools()["tools"].size(), 1u);
    c.close();
    EXPECT_EQ(seen->calls(), 2u);
    EXPECT_FALSE(carries(s.requests("/other-as/authorize"), first_client));
    EXPECT_FALSE(carries(s.requests("/other-as/token"), first_client));
    EXPECT_EQ(s.requests("/other-as/register").size(), moved ? 1u : 0u);
    EXPECT_EQ(s.requests("/as/register").size(), 1u);
    fs::remove_all(dir);
  }
}

// A pre-registered client is sent to its own issuer only: when the metadata names another, that one gets a
// dynamic registration and never the client's id or secret; a pre-registered client without an issuer fails the
// authorization, naming the option, before anything is sent. Control: with its issuer named, it is used.
TEST(McpOauth, PreRegisteredClientsAreBoundToTheirIssuer) {
  const fs::path dir = mcp_test::scratch_dir("te_mcp_oauth_as");
  std::ofstream(dir / "as") << "/other-as";
  oauth_server s({"--auth-methods", "client_secret_basic", "--prereg", "app:SENTINEL-SECRET-app", "--prm-as-file",
                  (dir / "as").string()});
  auto o = options(std::make_shared<agent_log>());
  o.client_id = "app";
  o.client_secret = "SENTINEL-SECRET-app";
  o.client_issuer = s.origin() + "/as";
  ASSERT_EQ(list_error(s, o), "no error");
  EXPECT_EQ(s.requests("/other-as/register").size(), 1u);
  EXPECT_FALSE(carries(s.requests("/other-as/token"), "SENTINEL-SECRET-app"));
  EXPECT_FALSE(
      carries(s.requests("/other-as/token"), "Basic " + te::detail::mcp_base64("app:SENTINEL-SECRET-app", false)));
  EXPECT_FALSE(carries(s.requests("/other-as/authorize"), "app"));
  std::ofstream(dir / "as") << "/as";
  ASSERT_EQ(list_error(s, o), "no error");
  EXPECT_EQ(s.requests("/as/token").back()["client_method"], "client_secret_basic");
  EXPECT_TRUE(s.requests("/as/register").empty());
  o.client_issuer.clear();
  std::string what;
  EXPECT_EQ(list_error(s, o, &what), "authorization_failed");
  EXPECT_NE(what.find("mcp_oauth_options::client_issuer"), std::string::npos) << what;
  EXPECT_EQ(s.requests("/as/token").size(), 1u);
  fs::remove_all(dir);
}

// RFC 8414: the metadata's issuer must be identical to the issuer named, a trailing slash included. The
// 2025-03-26 metadata at the MCP server's origin, which predates that rule, may name its issuer, but at that
// origin. Controls: the benign servers' metadata is accepted (every other test, and DiscoveryFallbacks).
TEST(McpOauth, IssuerComparisonIsExact) {
  for (const bool legacy : {false, true}) {
    std::vector<std::string> flags{"--hostile", legacy ? "issuer_elsewhere" : "issuer_slash"};
    if (legacy) flags.insert(flags.end(), {"--no-prm", "--as-path", ""});
    oauth_server s(flags);
    auto seen = std::make_shared<agent_log>();
    auto o = options(seen);
    o.legacy_discovery = legacy;
    std::string what;
    EXPECT_EQ(list_error(s, o, &what), "authorization_failed");
    EXPECT_NE(what.find("/issuer: "), std::string::npos) << what;
    EXPECT_EQ(seen->calls(), 0u);
  }
}

// An authorization redirect's error and error_description are not quoted before its state is checked: a
// redirect with an error and no state fails naming the state only. Control: the same error with the right
// state is quoted.
TEST(McpOauth, RedirectErrorsAreQuotedOnlyAfterTheStateIsChecked) {
  for (const bool with_state : {false, true}) {
    oauth_server s;
    std::string what;
    auto o = options(std::make_shared<agent_log>(), {}, [with_state](std::string r) {
      std::string forged = "http://127.0.0.1:1/callback?error=access_denied&error_description=ATTACKER-SAYS-HI";
      if (with_state) forged += "&state=" + query_param(r, "state");
      return forged;
    });
    EXPECT_EQ(list_error(s, o, &what), "authorization_failed");
    EXPECT_EQ(what.find("ATTACKER-SAYS-HI") != std::string::npos, with_state) << what;
    if (!with_state) {
      EXPECT_NE(what.find("the redirect has no state"), std::string::npos) << what;
    }
    EXPECT_TRUE(s.requests("/as/token").empty());
  }
}

// Redaction of every form of a secret: a token endpoint that echoes the Basic header (base64 of id:secret) and
// the form-encoded client_secret of a secret with '/', '+' and a space; a token response whose token_type is its
// new access token. Controls: the server's answers did contain each of them.
TEST(McpOauth, SecretsAreRedactedInEveryForm) {
  {
    oauth_server s({"--hostile", "echo_request", "--auth-methods", "client_secret_basic"});
    std::string what;
    EXPECT_EQ(list_error(s, options(std::make_shared<agent_log>()), &what), "authorization_failed");
    const auto tok = s.requests("/as/token", "POST");
    ASSERT_EQ(tok.size(), 1u);
    const std::string basic = tok[0]["authorization"].get<std::string>().substr(6);
    EXPECT_NE(tok[0]["sent"].get<std::string>().find(basic), std::string::npos);
    EXPECT_EQ(what.find(basic.substr(0, 20)), std::string::npos) << what;
    EXPECT_NE(what.find("got Basic [redacted]"), std::string::npos) << what;
  }
  {
    const std::string secret = "SENTINEL-SECRET/a+b c";
    oauth_server s({"--hostile", "echo_request", "--no-registration", "--auth-methods", "client_secret_post",
                    "--prereg", "app:" + secret});
    auto o = options(std::make_shared<agent_log>());
    o.client_id = "app";
    o.client_secret = secret;
    o.client_issuer = s.origin() + "/as";
    std::string what;
    EXPECT_EQ(list_error(s, o, &what), "authorization_failed");  // quotes_a_secret checked inside
    const auto tok = s.requests("/as/token", "POST");
    ASSERT_EQ(tok.size(), 1u);
    EXPECT_NE(tok[0]["sent"].get<std::string>().find("SENTINEL-SECRET%2Fa%2Bb%20c"), std::string::npos);
    EXPECT_NE(what.find("client_secret=[redacted]"), std::string::npos) << what;
  }
  {
    oauth_server s({"--hostile", "token_type_echo"});
    std::string what;
    EXPECT_EQ(list_error(s, options(std::make_shared<agent_log>()), &what), "authorization_failed");
    EXPECT_NE(what.find("/token_type: \"[redacted]\" is not Bearer"), std::string::npos) << what;
    EXPECT_NE(s.requests("/as/token").at(0)["sent"].get<std::string>().find("\"token_type\": \"SENTINEL-ACCESS"),
              std::string::npos);
  }
  EXPECT_EQ(te::detail::mcp_redact("x " + te::detail::mcp_base64("id:0123456789abcdef", false) + " y",
                                   {"0123456789abcdef"})
                .find("MDEy"),
            std::string::npos);
}

// The one redaction ends and hides every byte of every occurrence: a secret that occurs inside "[redacted]"
// (the search once resumed at the replacement and looped, growing the text), overlapping occurrences, and a
// secret inside another. Control: text without a secret comes back unchanged.
TEST(McpOauth, RedactionEndsAndHidesOverlappingOccurrences) {
  using te::detail::mcp_redact;
  EXPECT_EQ(mcp_redact("a dact b redacted c", {"dact", "redacted"}), "a [redacted] b [redacted] c");
  EXPECT_EQ(mcp_redact("xabcabcabcx", {"abcabc"}), "x[redacted]x");
  EXPECT_EQ(mcp_redact("<id:SENTINEL-S3CRET>", {"SENTINEL-S3CRET", "id:SENTINEL-S3CRET"}), "<[redacted]>");
  EXPECT_EQ(mcp_redact("nothing secret here", {"SENTINEL-S3CRET"}), "nothing secret here");
  EXPECT_EQ(mcp_redact("short abc", {"abc"}), "short abc");  // under 4 bytes: not a secret the flow sends
}

// Scopes the application fixed are never widened: a 403 insufficient_scope asking for more fails the call at
// once, without a second user-agent step. Scopes the server denied are not asked for again: one user-agent step
// per request for them, none for the next request. Controls: the unfixed step-up widens (above); the server that
// grants all succeeds.
TEST(McpOauth, FixedAndDeniedScopesAreNotAskedForAgain) {
  {
    oauth_server s({"--www-scope", "read", "--call-scope", "admin"});
    auto seen = std::make_shared<agent_log>();
    auto o = options(seen);
    o.scopes = std::vector<std::string>{"read"};
    boost::asio::thread_pool pool(2);
    auto c = connect(pool, s, o);
    (void)c.list_tools();
    std::string what;
    EXPECT_EQ(mcp_test::error_kind([&] { (void)c.call("echo", json::object()); }, &what), "authorization_failed");
    EXPECT_NE(what.find("beyond the scopes the application fixed"), std::string::npos) << what;
    EXPECT_EQ(seen->calls(), 1u);
    EXPECT_EQ(query_param(seen->urls.at(0), "scope"), "read");
    c.close();
  }
  for (const bool grant_all : {false, true}) {
    std::vector<std::string> flags{"--www-scope", "read", "--call-scope", "admin"};
    if (!grant_all) flags.insert(flags.end(), {"--grant-only", "read"});
    oauth_server s(flags);
    auto seen = std::make_shared<agent_log>();
    boost::asio::thread_pool pool(2);
    auto c = connect(pool, s, options(seen));
    (void)c.list_tools();
    for (int i = 0; i < 2; ++i) {
      std::string what;
      EXPECT_EQ(mcp_test::error_kind([&] { (void)c.call("echo", json::object()); }, &what),
                grant_all ? "no error" : "authorization_failed")
          << what;
    }
    EXPECT_EQ(seen->calls(), 2u);
    EXPECT_EQ(query_param(seen->urls.at(1), "scope"), "read admin");
    c.close();
  }
}

// An authorization endpoint with characters a shell would expand is never given to the user agent; one at
// plain http on a non-loopback host neither. Controls: the benign server's URL is (every test above); with
// require_https off, the http endpoint reaches the user agent.
TEST(McpOauth, AuthorizationUrlsAreShellSafeAndHttps) {
  {
    oauth_server s({"--hostile", "shell_endpoint"});
    auto seen = std::make_shared<agent_log>();
    std::string what;
    EXPECT_EQ(list_error(s, options(seen), &what), "authorization_failed");
    EXPECT_NE(what.find("the authorization URL has characters outside"), std::string::npos) << what;
    EXPECT_EQ(seen->calls(), 0u);
  }
  EXPECT_TRUE(te::detail::mcp_oauth_url_shell_safe("https://a.example/authorize?x=1&y=%2F+z,[::1]@~"));
  for (const char* bad : {"https://a/$(id)", "https://a/`id`", "https://a/x;y", "https://a/x|y", "https://a/ x",
                          "https://a/x'y", "https://a/x\"y", "https://a/%zz", "https://a/x\\y", "https://a/!x"})
    EXPECT_FALSE(te::detail::mcp_oauth_url_shell_safe(bad)) << bad;
  for (const bool require : {true, false}) {
    oauth_server s({"--hostile", "http_authorize"});
    auto seen = std::make_shared<agent_log>();
    auto o = options(seen);
    o.require_https = require;
    o.user_agent = [seen](const std::string& url) -> std::string {
      std::lock_guard g(seen->m);
      seen->urls.push_back(url);
      throw std::runtime_error("no browser here");
    };
    std::string what;
    EXPECT_EQ(list_error(s, o, &what), "authorization_failed");
    EXPECT_EQ(seen->calls(), require ? 0u : 1u) << what;
    if (require) {
      EXPECT_NE(what.find("/authorization_endpoint: not https"), std::string::npos) << what;
    }
  }
}


// Issue 27 point 5: a 401 on an awaited notification (notifications/initialized, its token revoked once the
// initialize answer went out) authorizes again and sends the notification again: the client connects, with two
// authorizations and two notifications/initialized POSTs (401, then 202). Control checked by hand: without
// reauthorize() for notifications (the loop of post() limited to id > 0, as before), connect fails
// (protocol_error: the 401 of notifications/initialized).
TEST(McpOauth, A401OnANotificationAuthorizesAgain) {
  oauth_server s({"--revoke-after", "initialize"});
  auto seen = std::make_shared<agent_log>();
  ASSERT_EQ(list_error(s, options(seen)), "no error");
  std::vector<std::string> answers;
  for (const auto& e : s.requests("/mcp", "POST"))
    if (e.contains("json") && e["json"].value("method", "") == "notifications/initialized")
      answers.push_back(e.value("sent", ""));
  ASSERT_EQ(answers.size(), 2u);
  EXPECT_NE(answers[0].find("invalid_token"), std::string::npos) << answers[0];
  EXPECT_EQ(answers[1], "");  // the 202
  EXPECT_EQ(seen->calls(), 2u);
}

// Issue 27 point 5: a 401 on the GET stream (every token revoked once notifications/initialized was accepted)
// authorizes again and opens the stream again: a GET answered with the event follows the GET refused. Control
// checked by hand: without reauthorize() in get_stream, the stream is given up after the 401 (one GET only:
// gets.size() is 1).
TEST(McpOauth, A401OnTheGetStreamAuthorizesAgain) {
  oauth_server s({"--get-stream", "--revoke-after", "notifications/initialized"});
  auto seen = std::make_shared<agent_log>();
  boost::asio::thread_pool pool(2);
  te::mcp_http_endpoint ep{.url = s.url()};
  ep.open_get_stream = true;
  ep.authorization = options(seen);
  auto c = te::mcp_client::connect(pool, ep, mcp_test::fast_options());
  std::vector<std::string> gets;
  for (int i = 0; i < 100; ++i) {
    gets.clear();
    for (const auto& e : s.requests("/mcp", "GET")) gets.push_back(e.value("sent", ""));
    if (gets.size() >= 2 && gets.back().find("list_changed") != std::string::npos) break;
    std::this_thread::sleep_for(50ms);
  }
  ASSERT_GE(gets.size(), 2u);
  EXPECT_NE(gets[0].find("invalid_token"), std::string::npos) << gets[0];
  EXPECT_NE(gets[1].find("list_changed"), std::string::npos) << gets[1];
  EXPECT_EQ(seen->calls(), 2u);
  EXPECT_EQ(c.list_tools()["tools"].size(), 1u);
  c.close();
}

}  // namespace mcp_oauth_test_ns
