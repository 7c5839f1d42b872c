// mcp_jwt_verifier (mcp/auth/jwt.hpp): JWT access tokens signed RS256 and ES256 with keys OpenSSL generates here,
// the JWKS served by a real HTTP server on 127.0.0.1 (auth_test_support.hpp). Each refusal beside a control that the
// same verifier accepts; the server counts the JWKS fetches; no verdict or log ever holds a token.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <tool_effects/mcp/auth/jwt.hpp>
#include <tool_effects/mcp/auth/resource_server.hpp>

#include "auth_test_support.hpp"

namespace auth_jwt_test_ns {

namespace te = tool_effects;
using json = nlohmann::json;
using namespace std::chrono_literals;


std::string b64url(std::string_view s) { return te::detail::mcp_base64(s, true); }

std::string bn_bytes(const EVP_PKEY* k, const char* name, int pad = 0) {
  BIGNUM* bn = nullptr;
  EXPECT_EQ(EVP_PKEY_get_bn_param(k, name, &bn), 1);
  std::string out(static_cast<std::size_t>(pad > 0 ? pad : BN_num_bytes(bn)), '\0');
  if (pad > 0)
    BN_bn2binpad(bn, reinterpret_cast<unsigned char*>(out.data()), pad);
  else
    BN_bn2bin(bn, reinterpret_cast<unsigned char*>(out.data()));
  BN_free(bn);
  return out;
}

// A key pair made here, its JWK and its JOSE signatures.
struct test_key {
  std::shared_ptr<EVP_PKEY> pkey;
  std::string kid;
  bool rsa = true;

  static test_key make_rsa(std::string kid, std::size_t bits = 2048) {
    return {std::shared_ptr<EVP_PKEY>(EVP_PKEY_Q_keygen(nullptr, nullptr, "RSA", bits), EVP_PKEY_free), std::move(kid),
            true};
  }
  static test_key make_ec(std::string kid) {
    return {std::shared_ptr<EVP_PKEY>(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256"), EVP_PKEY_free),
            std::move(kid), false};
  }

  [[nodiscard]] json jwk() const {
    if (rsa)
      return {{"kty", "RSA"},
              {"kid", kid},
              {"use", "sig"},
              {"n", b64url(bn_bytes(pkey.get(), OSSL_PKEY_PARAM_RSA_N))},
              {"e", b64url(bn_bytes(pkey.get(), OSSL_PKEY_PARAM_RSA_E))}};
    return {{"kty", "EC"},
            {"kid", kid},
            {"crv", "P-256"},
            {"x", b64url(bn_bytes(pkey.get(), OSSL_PKEY_PARAM_EC_PUB_X, 32))},
            {"y", b64url(bn_bytes(pkey.get(), OSSL_PKEY_PARAM_EC_PUB_Y, 32))}};
  }
  [[nodiscard]] std::string alg() const { return rsa ? "RS256" : "ES256"; }

  // The JOSE signature of `input`: PKCS#1 v1.5 for RSA, r || s (32 bytes each) for P-256.
  [[nodiscard]] std::string sign(std::string_view input) const {
    EVP_MD_CTX* md = EVP_MD_CTX_new();
    EXPECT_EQ(EVP_DigestSignInit(md, nullptr, EVP_sha256(), nullptr, pkey.get()), 1);
    std::size_t n = 0;
    const auto* data = reinterpret_cast<const unsigned char*>(input.data());
    EXPECT_EQ(EVP_DigestSign(md, nullptr, &n, data, input.size()), 1);
    std::string sig(n, '\0');
    EXPECT_EQ(EVP_DigestSign(md, reinterpret_cast<unsigned char*>(sig.data()), &n, data, input.size()), 1);
    sig.resize(n);
    EVP_MD_CTX_free(md);
    if (rsa) return sig;
    const auto* p = reinterpret_cast<const unsigned char*>(sig.data());
    ECDSA_SIG* es = d2i_ECDSA_SIG(nullptr, &p, static_cast<long>(sig.size()));
    std::string rs(64, '\0');
    BN_bn2binpad(ECDSA_SIG_get0_r(es), reinterpret_cast<unsigned char*>(rs.data()), 32);
    BN_bn2binpad(ECDSA_SIG_get0_s(es), reinterpret_cast<unsigned char*>(rs.data() + 32), 32);
    ECDSA_SIG_free(es);
    return rs;
  }
  // The public key as PEM (what an alg-confusion attacker uses as an HMAC secret).
  [[nodiscard]] std::string public_pem() const {
    BIO* bio = BIO_new(BIO_s_mem());
    PEM_write_bio_PUBKEY(bio, pkey.get());
    char* data = nullptr;
    const long n = BIO_get_mem_data(bio, &data);
    std::string out(data, static_cast<std::size_t>(n));
    BIO_free(bio);
    return out;
  }
};

// Keys are slow to make: once for the whole suite.
struct keys {
  test_key rsa = test_key::make_rsa("rsa-1");
  test_key ec = test_key::make_ec("ec-1");
  test_key rotated = test_key::make_rsa("rsa-2");
  test_key small = test_key::make_rsa("rsa-small", 1024);
  test_key stranger = test_key::make_rsa("rsa-1");  // same kid as `rsa`, another key (never published)
};
const keys& the_keys() {
  static const keys k;
  return k;
}

constexpr const char* issuer = "https://auth.example.test";
constexpr const char* audience = "https://bank.example.test/mcp";
constexpr std::int64_t t0 = 1'900'000'000;  // the tests' "now" (2030), moved by the fixture's clock only

class AuthJwt : public ::testing::Test {
 protected:
  AuthJwt()
      : server_([this](const auth_test::request& r) -> std::optional<auth_test::response> {
          if (r.target() != "/jwks.json") return auth_test::reply(404, "{}");
          std::lock_guard<std::mutex> l(m_);
          if (hold_) return std::nullopt;
          return auth_test::reply(status_, body_);
        }) {
    publish({the_keys().rsa, the_keys().ec});
  }

  ~AuthJwt() override {
    // No verdict's reason and no log line of any verifier of the test holds any token the test made.
    for (const auto& t : tokens_) {
      if (t.size() < 16) continue;
      EXPECT_FALSE(log_.mentions(t)) << "a log line holds a token";
      const auto dot = t.rfind('.');
      if (dot != std::string::npos && t.size() - dot > 16) {
        EXPECT_FALSE(log_.mentions(t.substr(dot + 1))) << "a log line holds a token's signature";
      }
    }
  }

  void publish(const std::vector<test_key>& ks, json extra = json::array()) {
    json set = json::array();
    for (const auto& k : ks) set.push_back(k.jwk());
    for (auto& e : extra) set.push_back(e);
    serve(json{{"keys", set}}.dump());
  }
  void serve(std::string body, unsigned status = 200) {
    std::lock_guard<std::mutex> l(m_);
    body_ = std::move(body);
    status_ = status;
  }
  void hold(bool h) {
    std::lock_guard<std::mutex> l(m_);
    hold_ = h;
  }

  te::mcp_jwt_options options() {
    te::mcp_jwt_options o;
    o.issuer = issuer;
    o.audience = audience;
    o.jwks_url = server_.url("/jwks.json");
    o.clock = [now = now_] { return std::chrono::system_clock::time_point{} + std::chrono::seconds(now->load()); };
    o.log = log_.hook();
    return o;
  }
  void advance(std::chrono::seconds s) { *now_ += s.count(); }
  [[nodiscard]] std::int64_t now() const { return now_->load(); }

  [[nodiscard]] json claims() const {
    return {{"iss", issuer},
            {"aud", audience},
            {"sub", "alice"},
            {"client_id", "bank-app"},
            {"scope", "accounts:read accounts:write"},
            {"exp", now() + 3600},
            {"iat", now()},
            {"nbf", now()},
            {"jti", "id-1"}};
  }
  // A token of `header` and `payload` (texts, as they go on the wire) signed by `k`.
  std::string raw_token(const std::string& header, const std::string& payload, const test_key& k) {
    const std::string input = b64url(header) + "." + b64url(payload);
    return keep(input + "." + b64url(k.sign(input)));
  }
  std::string token(const test_key& k, const json& c, json header = json::object()) {
    header.emplace("alg", k.alg());
    header.emplace("typ", "at+jwt");
    header.emplace("kid", k.kid);
    return raw_token(header.dump(), c.dump(), k);
  }
  std::string token(const test_key& k) { return token(k, claims()); }
  std::string keep(std::string t) {
    tokens_.push_back(t);
    return t;
  }

  std::mutex m_;
  std::string body_;
  unsigned status_ = 200;
  bool hold_ = false;
  auth_test::local_http_server server_;
  std::shared_ptr<std::atomic<std::int64_t>> now_ = std::make_shared<std::atomic<std::int64_t>>(t0);
  auth_test::log_sink log_;
  std::vector<std::string> tokens_;
};


// The strict base64url decoder the verifier reads every part with (RFC 4648 section 10 vectors, unpadded).
TEST(AuthBase64url, DecodesTheCanonicalFormOnly) {
  using te::detail::mcp_base64url_decode;
  const std::pair<const char*, const char*> vectors[] = {
      {"", ""},           {"f", "Zg"},          {"fo", "Zm8"},         {"foo", "Zm9v"},
      {"foob", "Zm9vYg"}, {"fooba", "Zm9vYmE"}, {"foobar", "Zm9vYmFy"}};
  for (const auto& [plain, encoded] : vectors) {
    EXPECT_EQ(mcp_base64url_decode(encoded), std::string(plain)) << encoded;
    EXPECT_EQ(te::detail::mcp_base64(plain, true), encoded);
  }
  EXPECT_EQ(mcp_base64url_decode("-_8"), std::string("\xfb\xff"));  // the URL-safe letters
  EXPECT_FALSE(mcp_base64url_decode("Zg=="));                       // padding
  EXPECT_FALSE(mcp_base64url_decode("+/8"));                        // the other alphabet
  EXPECT_FALSE(mcp_base64url_decode("Zm9v Yg"));                    // whitespace
  EXPECT_FALSE(mcp_base64url_decode("Zm9vY"));                      // a lone character (5 % 4 == 1)
  EXPECT_FALSE(mcp_base64url_decode("Zh"));                         // "f" with non-zero unused bits
  EXPECT_FALSE(mcp_base64url_decode("Zm9"));                        // "fo" likewise
}

TEST_F(AuthJwt, ValidRs256AndEs256TokensAreAcceptedWithTheirClaims) {
  const te::mcp_jwt_verifier verify(options());
  for (const test_key* k : {&the_keys().rsa, &the_keys().ec}) {
    const auto v = verify.verify(token(*k));
    ASSERT_TRUE(v.accepted()) << k->alg() << ": " << v.reason;
    EXPECT_EQ(v.reason, "");
    const te::mcp_principal& p = *v.principal;
    EXPECT_EQ(p.subject, "alice");
    EXPECT_EQ(p.client_id, "bank-app");
    EXPECT_EQ(p.issuer, issuer);
    EXPECT_EQ(p.audience, std::vector<std::string>{audience});
    EXPECT_EQ(p.scopes, (std::vector<std::string>{"accounts:read", "accounts:write"}));
    ASSERT_TRUE(p.expires_at);
    EXPECT_EQ(p.expires_at->time_since_epoch(), std::chrono::seconds(now() + 3600));
    EXPECT_TRUE(p.issued_for(audience));
  }
  // azp for client_id, scp as an array, aud as an array naming this resource among others; a copy of the verifier
  // (std::function, as mcp_resource_server holds it) shares the keys.
  json c = claims();
  c.erase("client_id");
  c.erase("scope");
  c["azp"] = "other-app";
  c["scp"] = {"a", "b"};
  c["aud"] = {"https://elsewhere.test", audience};
  const te::mcp_token_verifier as_function = verify;
  const auto p = as_function(token(the_keys().ec, c));
  ASSERT_TRUE(p);
  EXPECT_EQ(p->client_id, "other-app");
  EXPECT_EQ(p->scopes, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(p->audience.size(), 2u);
  EXPECT_EQ(server_.requests(), 1) << "one JWKS fetch for all of them";
  EXPECT_EQ(verify.jwks_fetches(), 1u);
}

TEST_F(AuthJwt, ExpiredAndNotYetValidTokensAreRefusedWithinTheLeeway) {
  const te::mcp_jwt_verifier verify(options());  // leeway 60 s
  json c = claims();
  c["exp"] = now() - 30;  // control: expired, but within the leeway
  EXPECT_TRUE(verify(token(the_keys().rsa, c)));
  c["exp"] = now() - 61;
  EXPECT_EQ(verify.verify(token(the_keys().rsa, c)).reason, "expired");
  c = claims();
  c.erase("exp");
  EXPECT_EQ(verify.verify(token(the_keys().rsa, c)).reason, "missing_claim");
  c["exp"] = "tomorrow";
  EXPECT_EQ(verify.verify(token(the_keys().rsa, c)).reason, "malformed");
  c = claims();
  c["nbf"] = now() + 30;  // control: within the leeway
  EXPECT_TRUE(verify(token(the_keys().ec, c)));
  c["nbf"] = now() + 600;
  EXPECT_EQ(verify.verify(token(the_keys().ec, c)).reason, "not_yet_valid");
  c = claims();
  c["iat"] = now() + 600;
  EXPECT_EQ(verify.verify(token(the_keys().ec, c)).reason, "issued_in_future");
  // The same token, valid now, is expired once the clock has moved past exp + leeway.
  const std::string t = token(the_keys().rsa);
  EXPECT_TRUE(verify(t));
  advance(3600s + 61s);
  EXPECT_EQ(verify.verify(t).reason, "expired");
}

TEST_F(AuthJwt, WrongIssuerOrAudienceIsRefused) {
  const te::mcp_jwt_verifier verify(options());
  EXPECT_TRUE(verify(token(the_keys().rsa)));  // control
  json c = claims();
  c["iss"] = "https://auth.example.test/";  // exact match only
  EXPECT_EQ(verify.verify(token(the_keys().rsa, c)).reason, "wrong_issuer");
  c.erase("iss");
  EXPECT_EQ(verify.verify(token(the_keys().rsa, c)).reason, "wrong_issuer");
  c = claims();
  c["aud"] = "https://other.example.test/mcp";
  EXPECT_EQ(verify.verify(token(the_keys().rsa, c)).reason, "wrong_audience");
  c["aud"] = {"https://other.example.test/mcp", "https://third.test"};
  EXPECT_EQ(verify.verify(token(the_keys().rsa, c)).reason, "wrong_audience");
  c.erase("aud");
  EXPECT_EQ(verify.verify(token(the_keys().rsa, c)).reason, "wrong_audience");
  c["aud"] = 42;
  EXPECT_EQ(verify.verify(token(the_keys().rsa, c)).reason, "malformed");
}

TEST_F(AuthJwt, ATamperedPayloadOrSignatureIsRefused) {
  const te::mcp_jwt_verifier verify(options());
  for (const test_key* k : {&the_keys().rsa, &the_keys().ec}) {
    const std::string good = token(*k);
    ASSERT_TRUE(verify(good)) << k->alg();  // control
    const auto dot1 = good.find('.');
    const auto dot2 = good.rfind('.');
    // The payload of another subject, with the original signature.
    json c = claims();
    c["sub"] = "mallory";
    const std::string payload = keep(good.substr(0, dot1 + 1) + b64url(c.dump()) + good.substr(dot2));
    EXPECT_EQ(verify.verify(payload).reason, "bad_signature") << k->alg();
    // One bit of the signature flipped.
    std::string sig = *te::detail::mcp_base64url_decode(good.substr(dot2 + 1));
    sig[sig.size() / 2] = static_cast<char>(sig[sig.size() / 2] ^ 0x01);
    const std::string flipped = keep(good.substr(0, dot2 + 1) + b64url(sig));
    EXPECT_EQ(verify.verify(flipped).reason, "bad_signature") << k->alg();
    // A key of the same kid that the issuer never published.
    if (k->rsa) {
      EXPECT_EQ(verify.verify(token(the_keys().stranger)).reason, "bad_signature");
    }
  }
  // An ES256 signature in DER (as OpenSSL makes it) instead of JOSE's r || s.
  const std::string input = b64url(R"({"alg":"ES256","kid":"ec-1"})") + "." + b64url(claims().dump());
  EVP_MD_CTX* md = EVP_MD_CTX_new();
  std::size_t n = 0;
  ASSERT_EQ(EVP_DigestSignInit(md, nullptr, EVP_sha256(), nullptr, the_keys().ec.pkey.get()), 1);
  ASSERT_EQ(EVP_DigestSign(md, nullptr, &n, reinterpret_cast<const unsigned char*>(input.data()), input.size()), 1);
  std::string der(n, '\0');
  ASSERT_EQ(EVP_DigestSign(md, reinterpret_cast<unsigned char*>(der.data()), &n,
                           reinterpret_cast<const unsigned char*>(input.data()), input.size()),
            1);
  der.resize(n);
  EVP_MD_CTX_free(md);
  EXPECT_EQ(verify.verify(keep(input + "." + b64url(der))).reason, "bad_signature");
}

TEST_F(AuthJwt, AlgNoneHs256AndAlgorithmsNotAllowedAreRefused) {
  te::mcp_jwt_options o = options();
  const te::mcp_jwt_verifier verify(o);
  EXPECT_TRUE(verify(token(the_keys().rsa)));  // control
  const std::string payload = b64url(claims().dump());
  // alg none, with and without a signature.
  EXPECT_EQ(verify.verify(keep(b64url(R"({"alg":"none","kid":"rsa-1"})") + "." + payload + ".")).reason,
            "algorithm_not_allowed");
  EXPECT_EQ(verify.verify(keep(b64url(R"({"alg":"none"})") + "." + payload + "." + b64url("x"))).reason,
            "algorithm_not_allowed");
  // alg confusion: HS256 keyed with the RSA key's public PEM, and with its JWK's modulus.
  for (const std::string& secret : {the_keys().rsa.public_pem(), the_keys().rsa.jwk()["n"].get<std::string>()}) {
    const std::string input = b64url(R"({"alg":"HS256","typ":"at+jwt","kid":"rsa-1"})") + "." + payload;
    const auto mac = te::detail::mcp_hmac_sha256(secret, input);
    const std::string forged =
        keep(input + "." + b64url(std::string_view(reinterpret_cast<const char*>(mac.data()), mac.size())));
    EXPECT_EQ(verify.verify(forged).reason, "algorithm_not_allowed");
  }
  for (const char* alg : {"RS384", "PS256", "ES384", "EdDSA", "rs256"}) {
    EXPECT_EQ(verify.verify(token(the_keys().rsa, claims(), {{"alg", alg}})).reason, "algorithm_not_allowed") << alg;
  }
  // Only RS256 allowed: an ES256 token is refused before its key is looked at; the control still passes.
  o.allowed_algorithms = {"RS256"};
  const te::mcp_jwt_verifier rs_only(o);
  EXPECT_TRUE(rs_only(token(the_keys().rsa)));
  EXPECT_EQ(rs_only.verify(token(the_keys().ec)).reason, "algorithm_not_allowed");
  // An algorithm the verifier does not implement cannot be allowed.
  for (const char* alg : {"HS256", "none", "RS512"}) {
    o.allowed_algorithms = {"RS256", alg};
    EXPECT_THROW(te::mcp_jwt_verifier{o}, std::invalid_argument) << alg;
  }
}

TEST_F(AuthJwt, AKeyWhoseTypeUseOrAlgDoesNotFitIsNotUsed) {
  // The JWKS also holds: an RSA key restricted to RS512, one for encryption, a 1024-bit one, an EC point off P-256.
  json off_curve = test_key::make_ec("ec-off").jwk();
  std::string y = *te::detail::mcp_base64url_decode(off_curve["y"].get<std::string>());
  y[31] = static_cast<char>(y[31] ^ 1);
  off_curve["y"] = b64url(y);
  json rs512 = the_keys().rotated.jwk();
  rs512["kid"] = "rsa-512";
  rs512["alg"] = "RS512";
  json enc = the_keys().rotated.jwk();
  enc["kid"] = "rsa-enc";
  enc["use"] = "enc";
  publish({the_keys().rsa, the_keys().ec, the_keys().small}, {rs512, enc, off_curve});
  const te::mcp_jwt_verifier verify(options());
  EXPECT_TRUE(verify(token(the_keys().rsa)));  // control: the good keys of the same set
  EXPECT_TRUE(verify(token(the_keys().ec)));
  // An ES256 token naming the RSA key, an RS256 one naming the EC key (each signed with the named key's kind
  // impossible: the header lies about the algorithm).
  EXPECT_EQ(verify.verify(token(the_keys().ec, claims(), {{"kid", "rsa-1"}})).reason, "key_mismatch");
  EXPECT_EQ(verify.verify(token(the_keys().rsa, claims(), {{"kid", "ec-1"}})).reason, "key_mismatch");
  test_key k = the_keys().rotated;
  k.kid = "rsa-512";
  EXPECT_EQ(verify.verify(token(k)).reason, "key_mismatch");
  k.kid = "rsa-enc";
  EXPECT_EQ(verify.verify(token(k)).reason, "unknown_key");
  EXPECT_EQ(verify.verify(token(the_keys().small)).reason, "unknown_key");
  EXPECT_TRUE(log_.has_reason("jwks_key_skipped"));
}

TEST_F(AuthJwt, AnUnknownKidIsFetchedOnceAndTheRotatedKeyThenAccepted) {
  const te::mcp_jwt_verifier verify(options());  // refresh_interval 30 s
  ASSERT_TRUE(verify(token(the_keys().rsa)));
  ASSERT_EQ(server_.requests(), 1);
  // The issuer rotates rsa-2 in. Within the interval of the last fetch, its tokens are not yet known...
  publish({the_keys().rsa, the_keys().ec, the_keys().rotated});
  const std::string rotated = token(the_keys().rotated);
  EXPECT_EQ(verify.verify(rotated).reason, "unknown_key");
  EXPECT_EQ(server_.requests(), 1);
  // ... past it, the first one fetches the set again, once, and is accepted; so are the next ones, with no fetch.
  advance(31s);
  const auto v = verify.verify(rotated);
  EXPECT_TRUE(v.accepted()) << v.reason;
  EXPECT_EQ(server_.requests(), 2);
  EXPECT_TRUE(verify(token(the_keys().rotated)));
  EXPECT_TRUE(verify(token(the_keys().rsa)));
  EXPECT_EQ(server_.requests(), 2);
  EXPECT_EQ(verify.jwks_fetches(), 2u);
}

// A key the issuer removes goes once the set is older than max_jwks_age (10 min); a refetch that fails then keeps
// the keys held.
TEST_F(AuthJwt, AKeySetOlderThanMaxJwksAgeIsFetchedAgain) {
  const te::mcp_jwt_verifier verify(options());
  ASSERT_TRUE(verify(token(the_keys().ec)));
  publish({the_keys().rsa});  // ec-1 withdrawn
  advance(500s);
  EXPECT_TRUE(verify(token(the_keys().ec))) << "control: a set younger than max_jwks_age is used as it is";
  EXPECT_EQ(server_.requests(), 1);
  advance(101s);
  EXPECT_TRUE(verify(token(the_keys().rsa)));  // the set is old: fetched again
  EXPECT_EQ(server_.requests(), 2);
  EXPECT_EQ(verify.verify(token(the_keys().ec)).reason, "unknown_key");
  serve("unavailable", 503);
  advance(601s);
  EXPECT_TRUE(verify(token(the_keys().rsa))) << "the keys held are kept when the refetch fails";
  EXPECT_EQ(server_.requests(), 3);
  EXPECT_TRUE(log_.has_reason("jwks_unavailable"));
}

TEST_F(AuthJwt, AFloodOfRandomKidsFetchesTheJwksAtMostOncePerInterval) {
  const te::mcp_jwt_verifier verify(options());
  ASSERT_TRUE(verify(token(the_keys().rsa)));  // control, and the first fetch
  std::vector<std::string> flood;
  std::mt19937_64 rng(7);
  for (int i = 0; i < 100; ++i) flood.push_back(token(the_keys().rsa, claims(), {{"kid", std::to_string(rng())}}));
  std::atomic<int> refused{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = t; i < 100; i += 4)
        if (verify.verify(flood[static_cast<std::size_t>(i)]).reason == "unknown_key") ++refused;
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(refused.load(), 100);
  EXPECT_EQ(server_.requests(), 1) << "no fetch within the interval of the first";
  // Past the interval the flood gets one fetch more, not one per token; the valid token is still accepted.
  advance(31s);
  for (int i = 0; i < 100; ++i) EXPECT_FALSE(verify(flood[static_cast<std::size_t>(i)]));
  EXPECT_EQ(server_.requests(), 2);
  EXPECT_TRUE(verify(token(the_keys().ec)));
  EXPECT_EQ(server_.requests(), 2);
}

TEST_F(AuthJwt, AJwksThatIsNotJsonOrTooBigIsRefusedWithoutQuotingIt) {
  const std::string canary = "INTERNAL-CANARY-J db_pass=hunter2";
  serve("<html>" + canary + "</html>");
  te::mcp_jwt_options o = options();
  o.max_jwks_bytes = 4096;
  const te::mcp_jwt_verifier verify(o);
  EXPECT_EQ(verify.verify(token(the_keys().rsa)).reason, "keys_unavailable");
  EXPECT_TRUE(log_.has_reason("jwks_invalid"));
  // JSON, but not a JWK Set; then a set beyond max_jwks_bytes; then an HTTP error.
  advance(31s);
  serve(json{{"note", canary}}.dump());
  EXPECT_EQ(verify.verify(token(the_keys().rsa)).reason, "keys_unavailable");
  advance(31s);
  json big = {{"keys", {the_keys().rsa.jwk()}}, {"padding", std::string(8000, 'x') + canary}};
  serve(big.dump());
  EXPECT_EQ(verify.verify(token(the_keys().rsa)).reason, "keys_unavailable");
  EXPECT_TRUE(log_.has_reason("jwks_too_large"));
  advance(31s);
  serve(canary, 500);
  EXPECT_EQ(verify.verify(token(the_keys().rsa)).reason, "keys_unavailable");
  EXPECT_TRUE(log_.has_reason("jwks_unavailable"));
  EXPECT_FALSE(log_.mentions("CANARY"));
  EXPECT_FALSE(log_.mentions("hunter2"));
  EXPECT_EQ(server_.requests(), 4);
  // Control: the same verifier, once the set is a valid one within the bound, accepts.
  advance(31s);
  publish({the_keys().rsa});
  EXPECT_TRUE(verify(token(the_keys().rsa)));
}

TEST_F(AuthJwt, AnUnansweredJwksFetchEndsWithinTheTimeoutAndIsNotRetriedAtOnce) {
  hold(true);
  te::mcp_jwt_options o = options();
  o.fetch_timeout = 300ms;
  const te::mcp_jwt_verifier verify(o);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(verify.verify(token(the_keys().rsa)).reason, "keys_unavailable");
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
  EXPECT_EQ(verify.verify(token(the_keys().rsa)).reason, "keys_unavailable");
  EXPECT_EQ(server_.requests(), 1);
  EXPECT_TRUE(log_.has_reason("jwks_unavailable"));
  hold(false);  // control: answered, past the interval
  advance(31s);
  EXPECT_TRUE(verify(token(the_keys().rsa)));
  EXPECT_TRUE(verify.prefetch());
  EXPECT_EQ(server_.requests(), 3);
}

TEST_F(AuthJwt, MalformedTokensAreRefused) {
  const te::mcp_jwt_verifier verify(options());
  const std::string good = token(the_keys().rsa);
  ASSERT_TRUE(verify(good));  // control
  const auto dot1 = good.find('.');
  const auto dot2 = good.rfind('.');
  const std::string header = good.substr(0, dot1);
  const std::string payload = good.substr(dot1 + 1, dot2 - dot1 - 1);
  const std::string sig = good.substr(dot2 + 1);
  for (const std::string& bad : {
           header + "." + payload,                                              // two parts
           good + "." + sig,                                                    // four parts
           header + "=." + payload + "." + sig,                                 // padding
           header + "." + payload + "." + sig + "==",                           //
           header + "." + payload + ".",                                        // no signature
           "." + payload + "." + sig,                                           // no header
           header + ".." + sig,                                                 // no payload
           header + "." + payload + "." + sig.substr(0, sig.size() - 1) + "+",  // the other alphabet
           header + "." + payload + "." + sig + "AAA",                          // a lone character (n % 4 == 1)
           b64url("[1,2]") + "." + payload + "." + sig,                         // a header that is not an object
           b64url("{\"alg\":") + "." + payload + "." + sig,
           std::string("not a token"),
           std::string(),
       })
    EXPECT_EQ(verify.verify(keep(bad)).reason, "malformed") << bad.substr(0, 40);
  // Duplicate keys: in the header (a second alg), and in a correctly signed payload (a second sub).
  EXPECT_EQ(
      verify.verify(raw_token(R"({"alg":"RS256","kid":"rsa-1","alg":"none"})", claims().dump(), the_keys().rsa)).reason,
      "malformed");
  std::string dup = claims().dump();
  dup.insert(1, R"("sub":"mallory",)");
  EXPECT_EQ(verify.verify(raw_token(R"({"alg":"RS256","kid":"rsa-1"})", dup, the_keys().rsa)).reason, "malformed");
  EXPECT_TRUE(verify(raw_token(R"({"alg":"RS256","kid":"rsa-1"})", claims().dump(), the_keys().rsa)));
  // crit: no extension is understood.
  EXPECT_EQ(verify.verify(token(the_keys().rsa, claims(), {{"crit", {"exp"}}})).reason, "unsupported_header");
  // Claims of the wrong type.
  json c = claims();
  c["sub"] = 7;
  EXPECT_EQ(verify.verify(token(the_keys().rsa, c)).reason, "malformed");
  c = claims();
  c["scope"] = json::array({"a"});
  EXPECT_EQ(verify.verify(token(the_keys().rsa, c)).reason, "malformed");
}

TEST_F(AuthJwt, TokensOver16KiBAreRefused) {
  const te::mcp_jwt_verifier verify(options());
  json c = claims();
  c["pad"] = std::string(11000, 'p');
  const std::string near = token(the_keys().rsa, c);
  ASSERT_LT(near.size(), 16384u);
  EXPECT_TRUE(verify(near));  // control: just under the bound
  c["pad"] = std::string(13000, 'p');
  const std::string over = token(the_keys().rsa, c);
  ASSERT_GT(over.size(), 16384u);
  EXPECT_EQ(verify.verify(over).reason, "token_too_large");
}

TEST_F(AuthJwt, RequireAtJwtTypeChecksTheHeadersTyp) {
  te::mcp_jwt_options o = options();
  o.require_at_jwt_type = true;
  const te::mcp_jwt_verifier verify(o);
  EXPECT_TRUE(verify(token(the_keys().rsa)));  // control: typ at+jwt
  EXPECT_TRUE(verify(token(the_keys().rsa, claims(), {{"typ", "application/AT+JWT"}})));
  EXPECT_EQ(verify.verify(token(the_keys().rsa, claims(), {{"typ", "JWT"}})).reason, "wrong_type");
  EXPECT_EQ(verify.verify(raw_token(R"({"alg":"RS256","kid":"rsa-1"})", claims().dump(), the_keys().rsa)).reason,
            "wrong_type");
  o.require_at_jwt_type = false;  // the default accepts "JWT"
  EXPECT_TRUE(te::mcp_jwt_verifier(o)(token(the_keys().rsa, claims(), {{"typ", "JWT"}})));
}

TEST_F(AuthJwt, TheOptionsAreCheckedAtConstruction) {
  EXPECT_NO_THROW(te::mcp_jwt_verifier{options()});  // control
  te::mcp_jwt_options o = options();
  o.issuer.clear();
  EXPECT_THROW(te::mcp_jwt_verifier{o}, std::invalid_argument);
  o = options();
  o.audience.clear();
  EXPECT_THROW(te::mcp_jwt_verifier{o}, std::invalid_argument);
  o = options();
  o.jwks_url = "http://auth.example.test/jwks.json";  // plain http beyond loopback
  EXPECT_THROW(te::mcp_jwt_verifier{o}, std::invalid_argument);
  o.require_https = false;
  EXPECT_NO_THROW(te::mcp_jwt_verifier{o});
  o.jwks_url = "ftp://auth.example.test/jwks.json";
  EXPECT_THROW(te::mcp_jwt_verifier{o}, std::invalid_argument);
  o = options();
  o.allowed_algorithms.clear();
  EXPECT_THROW(te::mcp_jwt_verifier{o}, std::invalid_argument);
}

// The verifier as the listener will use it: behind mcp_resource_server's std::function, from several threads at
// once, while the clock moves and keys rotate.
TEST_F(AuthJwt, ConcurrentVerificationsShareOneKeySet) {
  te::mcp_resource_server rs{.resource = audience, .verify_token = te::mcp_jwt_verifier(options())};
  std::vector<std::string> valid;
  for (int i = 0; i < 8; ++i) valid.push_back(token(i % 2 ? the_keys().rsa : the_keys().ec));
  std::atomic<int> accepted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int round = 0; round < 25; ++round)
        for (const auto& v : valid)
          if (rs.verify_token(v)) ++accepted;
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(accepted.load(), 4 * 25 * 8);
  EXPECT_EQ(server_.requests(), 1);
}

// An https JWKS: fetched through the library's TLS with the CA of the options (the server's certificate is
// verified, its name checked). The control: the same server, with the system's CAs only, is not trusted.
TEST_F(AuthJwt, AnHttpsJwksIsFetchedWithTheConfiguredCa) {
  if (!TOOL_EFFECTS_MCP_HAS_TLS) GTEST_SKIP() << "built without TOOL_EFFECTS_MCP_TLS";
  const auth_test::test_certificates certs;
  if (!certs.ok()) GTEST_SKIP() << "could not make test certificates (the openssl program)";
  const std::string set = json{{"keys", {the_keys().rsa.jwk(), the_keys().ec.jwk()}}}.dump();
  auth_test::local_http_server https([&](const auth_test::request&) { return auth_test::reply(200, set); },
                                     certs.server());
  te::mcp_jwt_options o = options();
  o.jwks_url = https.url("/jwks.json");
  ASSERT_EQ(o.jwks_url.substr(0, 8), "https://");
  o.tls.ca_file = certs.ca();
  const te::mcp_jwt_verifier verify(o);
  EXPECT_TRUE(verify(token(the_keys().rsa)));
  EXPECT_TRUE(verify(token(the_keys().ec)));
  EXPECT_EQ(https.requests(), 1);
  o.tls.ca_file.clear();
  const te::mcp_jwt_verifier untrusting(o);
  EXPECT_EQ(untrusting.verify(token(the_keys().rsa)).reason, "keys_unavailable");
  EXPECT_TRUE(log_.has_reason("jwks_unavailable"));
  o.tls.ca_file = certs.dir.string() + "/missing.pem";  // a CA file that cannot be read fails at construction
  EXPECT_THROW(te::mcp_jwt_verifier{o}, te::net::net_error);
}

}  // namespace auth_jwt_test_ns
