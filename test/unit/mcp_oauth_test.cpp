// OAuth 2.1 authorization of the MCP client over Streamable HTTP (issue 20, point 3; <tool_effects/mcp/oauth.hpp>),
// against test/mcp/oauth_server.py: an authorization server and a protected MCP server started here, stopped by
// pid. The server checks what a real one checks (PKCE S256, the resource and redirect_uri of the code, the client's
// authentication, token expiry, scopes) and logs every request, so the tests read what the client sent. The user
// agent is mcp_oauth_follow_redirect (the server redirects at once), or a wrapper that tampers with the URL or
// the redirect. Every token, code and secret the server makes starts with SENTINEL-: errors are scanned for them.
#include <gtest/gtest.h>

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

// SHA-256 (FIPS 180-4 examples and the million a's) of the portable implementation, the one PKCE uses (OpenSSL's
// in a TLS build) agreeing with it on random inputs of every length up to 300 bytes, and RFC 7636's example.
TEST(McpOauth, Sha256AndPkceFollowTheStandards) {
  using te::detail::mcp_sha256_portable;
  EXPECT_EQ(hex(mcp_sha256_portable("abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(hex(mcp_sha256_portable("")), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(hex(mcp_sha256_portable("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(hex(mcp_sha256_portable(std::string(1000000, 'a'))),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  std::mt19937 rng(7);
  for (std::size_t n = 0; n <= 300; ++n) {
    std::string s(n, '\0');
    for (auto& c : s) c = static_cast<char>(rng());
    ASSERT_EQ(te::detail::mcp_sha256(s), mcp_sha256_portable(s)) << n;
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
// server without resource_metadata in its 401 cannot be found (the well-known URIs miss it; the 2025-03-26
// fallback finds nothing at the origin either: its /register is a 404).
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
    EXPECT_NE(what.find("HTTP 404"), std::string::npos) << what;  // /register at the origin
    EXPECT_EQ(s.requests("/.well-known/oauth-protected-resource/mcp").size(), 1u);
    EXPECT_EQ(s.requests("/.well-known/oauth-protected-resource").size(), 1u);
    EXPECT_EQ(s.requests("/.well-known/oauth-authorization-server").size(), 1u);
  }
}

// The fallbacks: resource metadata at the path-based well-known URI, then at the root one; the OpenID
// configuration appended to the issuer's path; the 2025-03-26 metadata at the MCP server's origin, and its
// default endpoints when there is none.
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
  {
    oauth_server s({"--no-prm", "--as-path", ""});
    ASSERT_EQ(list_error(s, options(std::make_shared<agent_log>())), "no error");
    EXPECT_EQ(s.requests("/.well-known/oauth-authorization-server").size(), 1u);
    EXPECT_EQ(s.requests("/token", "POST").size(), 1u);
  }
  {
    oauth_server s({"--no-prm", "--as-path", "", "--as-metadata", "none"});
    auto seen = std::make_shared<agent_log>();
    ASSERT_EQ(list_error(s, options(seen)), "no error");
    EXPECT_EQ(seen->urls.at(0).rfind(s.origin() + "/authorize?", 0), 0u);
    EXPECT_EQ(s.requests("/register", "POST").size(), 1u);
    EXPECT_EQ(s.requests("/token", "POST").size(), 1u);
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
// wider token. Retry limit: a server that always answers 403 gets max_authorizations_per_request of them.
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

}  // namespace mcp_oauth_test_ns
