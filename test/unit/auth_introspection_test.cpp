// mcp_introspection_verifier (mcp/auth/introspection.hpp), RFC 7662: against an introspection endpoint the test
// serves on 127.0.0.1 (auth_test_support.hpp), which checks the resource server's credentials and answers from a
// table of tokens. Each refusal beside a control that the same verifier accepts; the endpoint counts the requests
// (the cache's hits make none); no verdict or log ever holds a token or a credential.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <tool_effects/mcp/auth/introspection.hpp>
#include <tool_effects/mcp/auth/resource_server.hpp>

#include "auth_test_support.hpp"

namespace auth_introspection_test_ns {

namespace te = tool_effects;
using json = nlohmann::json;
using namespace std::chrono_literals;


constexpr const char* client_id = "bank-rs";
constexpr const char* client_secret = "s3cret:with/odd+chars";
constexpr const char* rs_bearer = "rs-own-access-token-0123456789";
constexpr const char* resource = "https://bank.example.test/mcp";
constexpr std::int64_t t0 = 1'900'000'000;

class AuthIntrospection : public ::testing::Test {
 protected:
  AuthIntrospection()
      : server_([this](const auth_test::request& r) -> std::optional<auth_test::response> {
          if (r.target() != "/introspect") return auth_test::reply(404, "{}");
          if (r.method() != auth_test::http::verb::post) return auth_test::reply(405, "{}");
          const auto form = te::detail::mcp_query_params("?" + r.body());
          auto param = [&](const char* n) {
            const std::string* v = te::detail::mcp_auth_param(form, n);
            return v ? *v : std::string();
          };
          const std::string authorization(r[auth_test::http::field::authorization]);
          const bool basic_ok =
              authorization == "Basic " + te::detail::mcp_base64(te::detail::mcp_form_encode(client_id) + ":" +
                                                                     te::detail::mcp_form_encode(client_secret),
                                                                 false);
          const bool bearer_ok = authorization == std::string("Bearer ") + rs_bearer;
          const bool post_ok =
              authorization.empty() && param("client_id") == client_id && param("client_secret") == client_secret;
          if (!basic_ok && !bearer_ok && !post_ok) return auth_test::reply(401, R"({"error":"invalid_client"})");
          std::lock_guard<std::mutex> l(m_);
          if (hold_) return std::nullopt;
          if (raw_) return auth_test::reply(raw_status_, *raw_);
          const auto it = table_.find(param("token"));
          if (it == table_.end() || param("token_type_hint") != "access_token")
            return auth_test::reply(200, R"({"active":false})");
          return auth_test::reply(200, it->second.dump());
        }) {
    set("tok-alice", active());
  }

  ~AuthIntrospection() override {
    // No log line holds a token the test verified, a client secret or the Basic credentials.
    for (const auto& t : tokens_) {
      if (t.size() >= 8) {
        EXPECT_FALSE(log_.mentions(t)) << "a log line holds a token";
      }
    }
    EXPECT_FALSE(log_.mentions(client_secret));
    EXPECT_FALSE(log_.mentions(rs_bearer));
    EXPECT_FALSE(log_.mentions("Basic "));
  }

  [[nodiscard]] json active() const {
    return {
        {"active", true},        {"scope", "accounts:read accounts:write"}, {"client_id", "bank-app"}, {"sub", "alice"},
        {"aud", resource},       {"iss", "https://auth.example.test"},      {"exp", now() + 3600},     {"iat", now()},
        {"token_type", "Bearer"}};
  }
  void set(const std::string& token, json answer) {
    std::lock_guard<std::mutex> l(m_);
    table_[token] = std::move(answer);
  }
  void raw(std::optional<std::string> body, unsigned status = 200) {
    std::lock_guard<std::mutex> l(m_);
    raw_ = std::move(body);
    raw_status_ = status;
  }
  void hold(bool h) {
    std::lock_guard<std::mutex> l(m_);
    hold_ = h;
  }

  te::mcp_introspection_options options() {
    te::mcp_introspection_options o;
    o.endpoint = server_.url("/introspect");
    o.client_id = client_id;
    o.client_secret = client_secret;
    o.clock = [now = now_] { return std::chrono::system_clock::time_point{} + std::chrono::seconds(now->load()); };
    o.log = log_.hook();
    return o;
  }
  void advance(std::chrono::seconds s) { *now_ += s.count(); }
  [[nodiscard]] std::int64_t now() const { return now_->load(); }
  const std::string& keep(const std::string& t) { return tokens_.emplace_back(t); }

  std::mutex m_;
  std::map<std::string, json> table_;
  std::optional<std::string> raw_;
  unsigned raw_status_ = 200;
  bool hold_ = false;
  std::shared_ptr<std::atomic<std::int64_t>> now_ = std::make_shared<std::atomic<std::int64_t>>(t0);
  auth_test::local_http_server server_;
  auth_test::log_sink log_;
  std::vector<std::string> tokens_;
};


TEST_F(AuthIntrospection, AnActiveTokenIsAcceptedWithItsClaims) {
  const te::mcp_introspection_verifier verify(options());
  const auto v = verify.verify(keep("tok-alice"));
  ASSERT_TRUE(v.accepted()) << v.reason;
  const te::mcp_principal& p = *v.principal;
  EXPECT_EQ(p.subject, "alice");
  EXPECT_EQ(p.client_id, "bank-app");
  EXPECT_EQ(p.issuer, "https://auth.example.test");
  EXPECT_TRUE(p.issued_for(resource));
  EXPECT_EQ(p.scopes, (std::vector<std::string>{"accounts:read", "accounts:write"}));
  ASSERT_TRUE(p.expires_at);
  EXPECT_EQ(p.expires_at->time_since_epoch(), std::chrono::seconds(now() + 3600));
  // What went on the wire: one form-encoded POST with the hint and client_secret_basic.
  const auto got = server_.received();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].method(), auth_test::http::verb::post);
  EXPECT_EQ(got[0][auth_test::http::field::content_type], "application/x-www-form-urlencoded");
  EXPECT_EQ(got[0].body(), "token=tok-alice&token_type_hint=access_token");
  EXPECT_EQ(got[0][auth_test::http::field::authorization].substr(0, 6), "Basic ");
}

TEST_F(AuthIntrospection, AnInactiveOrUnknownTokenIsRefused) {
  const te::mcp_introspection_verifier verify(options());
  EXPECT_TRUE(verify(keep("tok-alice")));  // control
  set("tok-revoked", {{"active", false}});
  EXPECT_EQ(verify.verify(keep("tok-revoked")).reason, "inactive");
  EXPECT_EQ(verify.verify(keep("tok-never-issued")).reason, "inactive");
  // Active, but its own times say no; or a claim of the wrong type.
  json a = active();
  a["exp"] = now() - 120;
  set("tok-expired", a);
  EXPECT_EQ(verify.verify(keep("tok-expired")).reason, "expired");
  a = active();
  a["nbf"] = now() + 600;
  set("tok-later", a);
  EXPECT_EQ(verify.verify(keep("tok-later")).reason, "not_yet_valid");
  a = active();
  a["scope"] = json::array({"x"});
  set("tok-bad-scope", a);
  EXPECT_EQ(verify.verify(keep("tok-bad-scope")).reason, "malformed");
  EXPECT_EQ(verify.verify(std::string(16 * 1024 + 1, 'a')).reason, "token_too_large");
  EXPECT_EQ(verify.verify("").reason, "malformed");
}

TEST_F(AuthIntrospection, WrongClientCredentialsAreRefusedAndNotCached) {
  te::mcp_introspection_options o = options();
  o.client_secret = "not-the-secret";
  const te::mcp_introspection_verifier wrong(o);
  EXPECT_EQ(wrong.verify(keep("tok-alice")).reason, "unavailable");
  EXPECT_TRUE(log_.has_reason("introspection_refused"));
  EXPECT_FALSE(log_.mentions("not-the-secret"));
  EXPECT_EQ(wrong.verify("tok-alice").reason, "unavailable");
  EXPECT_EQ(server_.requests(), 2) << "a failure to ask is not remembered";
  const te::mcp_introspection_verifier right(options());  // control
  EXPECT_TRUE(right("tok-alice"));
}

TEST_F(AuthIntrospection, ClientSecretPostAndBearerAuthentication) {
  te::mcp_introspection_options o = options();
  o.auth = te::mcp_introspection_auth::client_secret_post;
  EXPECT_TRUE(te::mcp_introspection_verifier(o)(keep("tok-alice")));
  auto got = server_.received();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0][auth_test::http::field::authorization], "");
  EXPECT_NE(got[0].body().find("&client_id=bank-rs&client_secret="), std::string::npos);
  o.auth = te::mcp_introspection_auth::bearer;
  o.bearer_token = rs_bearer;
  EXPECT_TRUE(te::mcp_introspection_verifier(o)("tok-alice"));
  got = server_.received();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[1][auth_test::http::field::authorization], std::string("Bearer ") + rs_bearer);
  o.bearer_token = "some-other-token";
  EXPECT_EQ(te::mcp_introspection_verifier(o).verify("tok-alice").reason, "unavailable");
}

TEST_F(AuthIntrospection, CacheHitsDoNotCallTheEndpointAgain) {
  te::mcp_introspection_options o = options();
  o.leeway = 0s;  // cache_ttl 60 s
  const te::mcp_introspection_verifier verify(o);
  const te::mcp_token_verifier copy = verify;  // copies share the cache
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(i % 2 ? verify("tok-alice") : copy("tok-alice"));
  EXPECT_EQ(server_.requests(), 1);
  set("tok-revoked", {{"active", false}});
  for (int i = 0; i < 3; ++i) EXPECT_EQ(verify.verify(keep("tok-revoked")).reason, "inactive");
  EXPECT_EQ(server_.requests(), 2) << "an inactive answer is remembered too";
  // A token that differs by one byte is another token.
  EXPECT_EQ(verify.verify(keep("tok-alicf")).reason, "inactive");
  EXPECT_EQ(server_.requests(), 3);
  // Past the TTL, asked again.
  advance(59s);
  EXPECT_TRUE(verify("tok-alice"));
  EXPECT_EQ(server_.requests(), 3);
  advance(2s);
  EXPECT_TRUE(verify("tok-alice"));
  EXPECT_EQ(server_.requests(), 4);
  // A token expiring before the TTL is remembered until its exp only: then asked again (and now expired).
  json a = active();
  a["exp"] = now() + 10;
  set("tok-short", a);
  EXPECT_TRUE(verify(keep("tok-short")));
  advance(9s);
  EXPECT_TRUE(verify("tok-short"));
  EXPECT_EQ(server_.requests(), 5);
  advance(2s);
  EXPECT_EQ(verify.verify("tok-short").reason, "expired");
  EXPECT_EQ(server_.requests(), 6);
}

TEST_F(AuthIntrospection, TheCacheIsBoundedLeastRecentlyUsedFirst) {
  te::mcp_introspection_options o = options();
  o.max_cached_tokens = 2;
  for (const char* t : {"tok-1", "tok-2", "tok-3"}) set(t, active());
  const te::mcp_introspection_verifier verify(o);
  EXPECT_TRUE(verify("tok-1"));
  EXPECT_TRUE(verify("tok-2"));
  EXPECT_TRUE(verify("tok-1"));  // hit: tok-2 is now the least recently used
  EXPECT_TRUE(verify("tok-3"));  // evicts tok-2
  EXPECT_EQ(server_.requests(), 3);
  EXPECT_TRUE(verify("tok-1"));
  EXPECT_TRUE(verify("tok-3"));
  EXPECT_EQ(server_.requests(), 3);
  EXPECT_TRUE(verify("tok-2"));
  EXPECT_EQ(server_.requests(), 4);
  o.cache_ttl = 0s;  // no cache at all
  const te::mcp_introspection_verifier uncached(o);
  EXPECT_TRUE(uncached("tok-1"));
  EXPECT_TRUE(uncached("tok-1"));
  EXPECT_EQ(server_.requests(), 6);
}

TEST_F(AuthIntrospection, IssuerAndAudienceAreCheckedWhenConfigured) {
  te::mcp_introspection_options o = options();
  o.issuer = "https://auth.example.test";
  o.audience = resource;
  const te::mcp_introspection_verifier verify(o);
  EXPECT_TRUE(verify("tok-alice"));  // control
  json a = active();
  a["iss"] = "https://evil.example.test";
  set("tok-evil", a);
  EXPECT_EQ(verify.verify(keep("tok-evil")).reason, "wrong_issuer");
  a = active();
  a["aud"] = {"https://other.example.test/mcp"};
  set("tok-other", a);
  EXPECT_EQ(verify.verify(keep("tok-other")).reason, "wrong_audience");
  a.erase("aud");
  set("tok-no-aud", a);
  EXPECT_EQ(verify.verify(keep("tok-no-aud")).reason, "wrong_audience");
}

TEST_F(AuthIntrospection, TokensAreFormEncoded) {
  const std::string odd = "a+b/c=d&token=evil e%20f\xc3\xa9";
  set(odd, active());
  set("evil", active());
  const te::mcp_introspection_verifier verify(options());
  EXPECT_TRUE(verify(keep(odd)));
  const auto got = server_.received();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].body().find("&token=evil"), std::string::npos);
  EXPECT_EQ(*te::detail::mcp_auth_param(te::detail::mcp_query_params("?" + got[0].body()), "token"), odd);
}

TEST_F(AuthIntrospection, AnswersThatAreNotIntrospectionResponsesAreRefusedWithoutQuotingThem) {
  const std::string canary = "INTERNAL-CANARY-I db_pass=hunter2";
  te::mcp_introspection_options o = options();
  o.max_response_bytes = 4096;
  const te::mcp_introspection_verifier verify(o);
  raw("<html>" + canary + "</html>");
  EXPECT_EQ(verify.verify(keep("tok-alice")).reason, "unavailable");
  raw(json{{"active", "true"}, {"note", canary}}.dump());  // a string is not true
  EXPECT_EQ(verify.verify("tok-alice").reason, "unavailable");
  raw(json::array({canary}).dump());
  EXPECT_EQ(verify.verify("tok-alice").reason, "unavailable");
  EXPECT_TRUE(log_.has_reason("introspection_invalid"));
  raw(json{{"active", true}, {"pad", std::string(8000, 'x') + canary}}.dump());
  EXPECT_EQ(verify.verify("tok-alice").reason, "unavailable");
  EXPECT_TRUE(log_.has_reason("introspection_too_large"));
  raw(canary, 503);
  EXPECT_EQ(verify.verify("tok-alice").reason, "unavailable");
  EXPECT_TRUE(log_.has_reason("introspection_unavailable"));
  EXPECT_FALSE(log_.mentions("CANARY"));
  EXPECT_FALSE(log_.mentions("hunter2"));
  raw(std::nullopt);  // control: none of these was remembered
  EXPECT_TRUE(verify("tok-alice"));
  EXPECT_EQ(server_.requests(), 6);
}

TEST_F(AuthIntrospection, AnUnansweredRequestEndsWithinTheTimeout) {
  te::mcp_introspection_options o = options();
  o.fetch_timeout = 300ms;
  const te::mcp_introspection_verifier verify(o);
  hold(true);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(verify.verify(keep("tok-alice")).reason, "unavailable");
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
  hold(false);  // control
  EXPECT_TRUE(verify("tok-alice"));
}

TEST_F(AuthIntrospection, TheOptionsAreCheckedAtConstruction) {
  EXPECT_NO_THROW(te::mcp_introspection_verifier{options()});  // control
  te::mcp_introspection_options o = options();
  o.endpoint = "http://auth.example.test/introspect";  // plain http beyond loopback
  EXPECT_THROW(te::mcp_introspection_verifier{o}, std::invalid_argument);
  o = options();
  o.endpoint.clear();
  EXPECT_THROW(te::mcp_introspection_verifier{o}, std::invalid_argument);
  o = options();
  o.client_id.clear();
  EXPECT_THROW(te::mcp_introspection_verifier{o}, std::invalid_argument);
  o = options();
  o.auth = te::mcp_introspection_auth::bearer;
  EXPECT_THROW(te::mcp_introspection_verifier{o}, std::invalid_argument);
}

// As the listener will use it: behind mcp_resource_server's std::function, from several threads at once.
TEST_F(AuthIntrospection, ConcurrentVerificationsShareOneCache) {
  te::mcp_resource_server rs{.resource = resource, .verify_token = te::mcp_introspection_verifier(options())};
  for (int i = 0; i < 8; ++i) set("tok-" + std::to_string(i), active());
  std::atomic<int> accepted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int round = 0; round < 25; ++round)
        for (int i = 0; i < 8; ++i)
          if (rs.verify_token("tok-" + std::to_string(i))) ++accepted;
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(accepted.load(), 4 * 25 * 8);
  EXPECT_LE(server_.requests(), 4 * 8) << "at most one request per token and thread racing on its first miss";
  EXPECT_GE(server_.requests(), 8);
}

// An https endpoint: reached through the library's TLS with the CA of the options; the control, with the system's
// CAs only, is not trusted (and its failure is not remembered).
TEST_F(AuthIntrospection, AnHttpsEndpointIsAskedWithTheConfiguredCa) {
  if (!TOOL_EFFECTS_MCP_HAS_TLS) GTEST_SKIP() << "built without TOOL_EFFECTS_MCP_TLS";
  const auth_test::test_certificates certs;
  if (!certs.ok()) GTEST_SKIP() << "could not make test certificates (the openssl program)";
  std::atomic<int> asked{0};
  auth_test::local_http_server https(
      [&](const auth_test::request& r) {
        ++asked;
        const bool ok = r.body() == "token=tok-alice&token_type_hint=access_token";
        return auth_test::reply(200, ok ? active().dump() : R"({"active":false})");
      },
      certs.server());
  te::mcp_introspection_options o = options();
  o.endpoint = https.url("/introspect");
  o.tls.ca_file = certs.ca();
  EXPECT_TRUE(te::mcp_introspection_verifier(o)(keep("tok-alice")));
  o.tls.ca_file.clear();
  const te::mcp_introspection_verifier untrusting(o);
  EXPECT_EQ(untrusting.verify("tok-alice").reason, "unavailable");
  EXPECT_TRUE(log_.has_reason("introspection_unavailable"));
  EXPECT_EQ(asked.load(), 1);
}

}  // namespace auth_introspection_test_ns
