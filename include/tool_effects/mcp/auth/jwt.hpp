// tool_effects/mcp/auth/jwt.hpp — a token verifier for JWT access tokens (RFC 9068 / RFC 7519), signed RS256 or
// ES256, with the authorization server's keys from its JWK Set (RFC 7517), for mcp_resource_server::verify_token
// (mcp/auth/resource_server.hpp).
//
//   te::mcp_jwt_verifier verify({.issuer = "https://auth.example.com",
//                                .audience = "https://bank.example.com/mcp",
//                                .jwks_url = "https://auth.example.com/.well-known/jwks.json"});
//   http.authorization = te::mcp_resource_server{.resource = "https://bank.example.com/mcp", ...,
//                                                .verify_token = verify};
//
// Needs OpenSSL 3 linked (libcrypto; CMake: link tool_effects::mcp_auth, which also defines TOOL_EFFECTS_MCP_TLS=1
// so that an https JWKS URL can be fetched; without that define only http to a loopback host is possible). See
// docs/mcp-authorization.md ("Token verifiers").
#ifndef TOOL_EFFECTS_MCP_AUTH_JWT_HPP
#define TOOL_EFFECTS_MCP_AUTH_JWT_HPP

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <tool_effects/detail/quote.hpp>
#include <tool_effects/detail/str_cat.hpp>
#include <tool_effects/mcp/auth/detail/jose.hpp>
#include <tool_effects/mcp/auth/detail/verifier_support.hpp>
#include <tool_effects/mcp/auth/principal.hpp>
#include <tool_effects/mcp/auth/verdict.hpp>
#include <tool_effects/net/connection.hpp>

namespace tool_effects {

/// What a JWT verifier accepts and where it gets its keys.
struct mcp_jwt_options {
  /// The `iss` every token must carry, compared exactly (no normalization). Required.
  std::string issuer{};
  /// A value the token's `aud` (a string or an array) must contain: this resource's canonical URI. Required.
  std::string audience{};
  /// The issuer's JWK Set document (its `jwks_uri`). https; plain http only to a loopback host (see require_https).
  std::string jwks_url{};
  /// The signature algorithms accepted: a subset of {"RS256", "ES256"} (anything else is refused at construction).
  std::vector<std::string> allowed_algorithms{"RS256", "ES256"};
  /// Clock skew allowed either way on `exp`, `nbf` and `iat`.
  std::chrono::seconds leeway{60};
  /// The JWKS is fetched again for a `kid` it lacks at most once per this interval, whatever the traffic; a failed
  /// fetch waits as long before the next.
  std::chrono::seconds refresh_interval{30};
  /// A key set older than this is fetched again (within refresh_interval), so that a key removed by the issuer goes;
  /// when that fetch fails, the keys held are kept.
  std::chrono::seconds max_jwks_age{600};
  /// One JWKS fetch, all steps (resolution, connection, TLS, response).
  std::chrono::milliseconds fetch_timeout{5000};
  /// The largest JWKS body read; a larger one is refused.
  std::size_t max_jwks_bytes = 1024 * 1024;
  /// TLS for an https JWKS URL (CA file; the server is always verified). Needs a build with TOOL_EFFECTS_MCP_TLS=1.
  net::tls_options tls{};
  /// false: plain http to any host (tests, a private network you trust).
  bool require_https = true;
  /// true: the header's `typ` must be "at+jwt" (or "application/at+jwt"), as RFC 9068 section 4 asks; off by
  /// default, since many authorization servers type their access tokens "JWT".
  bool require_at_jwt_type = false;
  /// The time tokens are judged at and refreshes are spaced by (tests); empty: std::chrono::system_clock::now.
  std::function<std::chrono::system_clock::time_point()> clock{};
  /// Told of every refusal and every failed JWKS fetch (see mcp_verifier_log); never given the token.
  mcp_verifier_log log{};
};

namespace detail {

// The keys of one fetch of the JWKS.
struct mcp_jwks {
  std::vector<mcp_jwk> keys;
  double fetched_at = 0;  // seconds since the epoch, on the options' clock
};

// What the copies of one mcp_jwt_verifier share: the options, the endpoint, the key set and its fetches.
class mcp_jwt_state {
 public:
  mcp_jwt_state(mcp_jwt_options o, std::array<bool, 2> allowed)
      : o_(std::move(o)),
        jwks_("mcp_jwt_options::jwks_url", o_.jwks_url, o_.tls, o_.require_https),
        allowed_(allowed) {}

  std::size_t fetches() const noexcept { return fetches_.load(); }

  double now() const { return mcp_seconds_of(o_.clock ? o_.clock() : std::chrono::system_clock::now()); }

  std::shared_ptr<const mcp_jwks> snapshot() {
    std::lock_guard<std::mutex> l(keys_m_);
    return keys_;
  }

  // The key set after a fetch, made unless one was attempted less than refresh_interval ago (`force`: regardless).
  // One fetch at a time: a caller that waited for another's fetch uses its result; one that need not wait (it holds
  // usable, merely old keys) goes on with them while another fetches.
  std::shared_ptr<const mcp_jwks> refresh(bool force, bool wait = true) {
    std::unique_lock<std::mutex> l(fetch_m_, std::defer_lock);
    if (wait)
      l.lock();
    else if (!l.try_lock())
      return snapshot();
    const double t = now();
    const double interval = static_cast<double>(o_.refresh_interval.count());
    if (!force && last_attempt_ && t >= *last_attempt_ && t - *last_attempt_ < interval) return snapshot();
    last_attempt_ = t;
    fetch();
    return snapshot();
  }

  mcp_token_verdict verify(std::string_view token);

 private:
  void say(std::string_view reason, const std::string& message) const { mcp_verifier_say(o_.log, reason, message); }
  bool fetch();
  mcp_token_verdict refuse(std::string_view reason, const std::optional<std::string>& kid = std::nullopt) const {
    say(reason,
        str_cat("JWT refused: ", reason, kid ? str_cat(" (kid \"", quote_text(*kid, 64), "\")") : std::string()));
    return {std::nullopt, reason};
  }

  mcp_jwt_options o_;
  mcp_verifier_endpoint jwks_;
  std::array<bool, 2> allowed_{};  // by mcp_jose_alg
  std::mutex keys_m_;
  std::shared_ptr<const mcp_jwks> keys_;  // guarded by keys_m_
  std::mutex fetch_m_;
  std::optional<double> last_attempt_;  // guarded by fetch_m_
  std::atomic<std::size_t> fetches_{0};
};

inline bool mcp_jwt_state::fetch() {
  ++fetches_;
  const std::string name = str_cat("JWKS ", jwks_.printable, ": ");
  net::fetch_response r;
  try {
    r = mcp_verifier_fetch(jwks_, boost::beast::http::verb::get,
                           {{"Accept", "application/jwk-set+json, application/json"}}, {}, o_.fetch_timeout,
                           o_.max_jwks_bytes);
  } catch (const net::net_error& e) {
    const bool big = e.reason() == "body_limit";
    say(big ? "jwks_too_large" : "jwks_unavailable",
        big ? str_cat(name, "larger than ", std::to_string(o_.max_jwks_bytes), " bytes (max_jwks_bytes)")
            : str_cat(name, mcp_fetch_failure(e)));
    return false;
  } catch (const std::exception&) {
    say("jwks_unavailable", str_cat(name, "could not fetch"));
    return false;
  }
  if (r.status != 200) {
    say("jwks_unavailable", str_cat(name, "HTTP status ", std::to_string(r.status)));
    return false;
  }
  std::string_view why;
  const auto doc = mcp_verifier_parse(r.body, o_.max_jwks_bytes, why);
  const auto keys = doc ? doc->find("keys") : nlohmann::json::const_iterator();
  if (!doc || keys == doc->end() || !keys->is_array()) {
    say("jwks_invalid", str_cat(name, "not a JWK Set (", doc ? "no `keys` array" : why, ")"));
    return false;
  }
  auto set = std::make_shared<mcp_jwks>();
  std::size_t index = 0;
  std::size_t complaints = 0;
  for (const auto& k : *keys) {
    if (index++ >= 256) {
      say("jwks_key_skipped", str_cat(name, "more than 256 keys; the rest are ignored"));
      break;
    }
    std::string bad;
    if (auto key = mcp_jwk_of(k, bad)) {
      set->keys.push_back(std::move(*key));
    } else if (!bad.empty() && complaints++ < 8) {
      say("jwks_key_skipped", str_cat(name, "key ", std::to_string(index - 1), " skipped: ", bad));
    }
  }
  set->fetched_at = now();
  std::lock_guard<std::mutex> l(keys_m_);
  keys_ = std::move(set);
  return true;
}

inline mcp_token_verdict mcp_jwt_state::verify(std::string_view token) {
  if (token.size() > mcp_max_token_bytes) return refuse("token_too_large");
  // header.payload.signature, each strict base64url (RFC 7515 section 7.1).
  const auto dot1 = token.find('.');
  const auto dot2 = dot1 == std::string_view::npos ? dot1 : token.find('.', dot1 + 1);
  if (dot2 == std::string_view::npos || token.find('.', dot2 + 1) != std::string_view::npos) return refuse("malformed");
  const auto header_bytes = mcp_base64url_decode(token.substr(0, dot1));
  std::string_view why;
  const auto header = header_bytes ? mcp_verifier_parse(*header_bytes, mcp_max_token_bytes, why) : std::nullopt;
  if (!header) return refuse("malformed");
  const auto alg_it = header->find("alg");
  if (alg_it == header->end() || !alg_it->is_string()) return refuse("malformed");
  const auto alg = mcp_jose_alg_of(alg_it->get_ref<const std::string&>());
  if (!alg || !allowed_[static_cast<std::size_t>(*alg)]) return refuse("algorithm_not_allowed");
  const auto payload_bytes = mcp_base64url_decode(token.substr(dot1 + 1, dot2 - dot1 - 1));
  const auto signature = mcp_base64url_decode(token.substr(dot2 + 1));
  if (!payload_bytes || !signature || payload_bytes->empty() || signature->empty()) return refuse("malformed");
  if (header->contains("crit")) return refuse("unsupported_header");
  if (const auto typ = header->find("typ"); typ != header->end()) {
    if (!typ->is_string()) return refuse("malformed");
    std::string t = typ->get<std::string>();
    for (auto& c : t) c = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    if (o_.require_at_jwt_type && t != "at+jwt" && t != "application/at+jwt") return refuse("wrong_type");
  } else if (o_.require_at_jwt_type) {
    return refuse("wrong_type");
  }
  std::optional<std::string> kid;
  if (const auto k = header->find("kid"); k != header->end()) {
    if (!k->is_string()) return refuse("malformed");
    kid = k->get<std::string>();
  }
  // The keys: fetched on first use, again when stale, and for a kid the set lacks (each within refresh_interval).
  auto keys = snapshot();
  if (!keys || now() - keys->fetched_at > static_cast<double>(o_.max_jwks_age.count())) {
    auto fresh = refresh(false, !keys);
    if (fresh) keys = std::move(fresh);
  }
  if (!keys) return refuse("keys_unavailable", kid);
  const std::string_view alg_name = alg_it->get_ref<const std::string&>();
  auto candidates = [&](const mcp_jwks& set, bool& named) {
    std::vector<const mcp_jwk*> out;
    named = false;
    for (const auto& k : set.keys) {
      if (kid && k.kid != kid) continue;
      named = true;
      if (k.family == *alg && (k.alg.empty() || k.alg == alg_name) && out.size() < 16) out.push_back(&k);
    }
    return out;
  };
  bool named = false;
  auto tried = candidates(*keys, named);
  if (!named || (!kid && tried.empty())) {  // a kid the set lacks (or no key for a token without one): rotated in?
    if (auto fresh = refresh(false); fresh && fresh != keys) {
      keys = std::move(fresh);
      tried = candidates(*keys, named);
    }
  }
  if (!named) return refuse("unknown_key", kid);
  if (tried.empty()) return refuse(kid ? "key_mismatch" : "unknown_key", kid);
  const std::string_view signing_input = token.substr(0, dot2);
  bool verified = false;
  for (const mcp_jwk* k : tried)
    if ((verified = mcp_jose_verify(*alg, k->key.get(), signing_input, *signature))) break;
  if (!verified) return refuse("bad_signature", kid);
  // The claims, only once the signature holds.
  const auto claims = mcp_verifier_parse(*payload_bytes, mcp_max_token_bytes, why);
  if (!claims) return refuse("malformed", kid);
  const auto iss = claims->find("iss");
  if (iss == claims->end() || !iss->is_string() || *iss != o_.issuer) return refuse("wrong_issuer", kid);
  const auto aud = claims->find("aud");
  if (aud == claims->end()) return refuse("wrong_audience", kid);
  const auto audiences = mcp_string_or_array(*aud, false);
  if (!audiences) return refuse("malformed", kid);
  if (std::find(audiences->begin(), audiences->end(), o_.audience) == audiences->end())
    return refuse("wrong_audience", kid);
  if (const auto t = mcp_check_times(*claims, now(), static_cast<double>(o_.leeway.count()), true); !t.empty())
    return refuse(t, kid);
  mcp_token_verdict v;
  v.principal.emplace();
  if (const auto r = mcp_principal_of(*claims, *v.principal); !r.empty()) return refuse(r, kid);
  return v;
}

}  // namespace detail

/// A token verifier for JWT access tokens (RFC 9068), to be used as an mcp_token_verifier. It accepts a token only
/// when all of these hold: at most 16 KiB; three strict base64url parts; a header and a payload that are JSON
/// objects without duplicate keys; `alg` one of the allowed algorithms (RS256, ES256; never none or HS*); no `crit`;
/// a key of the JWKS for its `kid` (or, without a kid, any of the set) whose type is the algorithm's and whose
/// `use`/`alg`/`key_ops` allow it; a signature that verifies; `iss` exactly the issuer; `aud` containing the
/// audience; `exp` present and not past, `nbf` and `iat` (when present) not in the future, within the leeway. The
/// JWKS is fetched on first use (never from a URL a token names: `jku`, `x5u`, `jwk` are ignored), kept, and fetched
/// again for an unknown kid or when older than max_jwks_age, at most once per refresh_interval whatever the traffic.
/// Copies share the key set; every member is safe to call from several threads at once, and may block (a fetch).
/// Never throws once constructed, and nothing it returns or logs contains the token.
class mcp_jwt_verifier {
 public:
  /// Throws std::invalid_argument when the issuer, the audience or the JWKS URL is missing, the URL is not
  /// acceptable (see mcp_jwt_options::jwks_url), or an algorithm other than RS256 and ES256 is allowed; and
  /// net::net_error ("tls_unavailable", "tls_files") for an https URL in a build without TLS or with a bad CA file.
  explicit mcp_jwt_verifier(mcp_jwt_options options) {
    using detail::str_cat;
    if (options.issuer.empty()) throw std::invalid_argument("mcp_jwt_options::issuer is required");
    if (options.audience.empty()) throw std::invalid_argument("mcp_jwt_options::audience is required");
    if (options.jwks_url.empty()) throw std::invalid_argument("mcp_jwt_options::jwks_url is required");
    if (options.allowed_algorithms.empty()) throw std::invalid_argument("mcp_jwt_options::allowed_algorithms is empty");
    if (options.leeway.count() < 0 || options.refresh_interval.count() < 0 || options.max_jwks_age.count() < 0 ||
        options.fetch_timeout.count() <= 0 || options.max_jwks_bytes == 0)
      throw std::invalid_argument("mcp_jwt_options: a negative duration, or a zero fetch_timeout or max_jwks_bytes");
    std::array<bool, 2> allowed{};
    for (const auto& a : options.allowed_algorithms) {
      const auto alg = detail::mcp_jose_alg_of(a);
      if (!alg)
        throw std::invalid_argument(str_cat("mcp_jwt_options::allowed_algorithms: \"", detail::quote_text(a, 32),
                                            "\" is not supported (RS256 and ES256 only)"));
      allowed[static_cast<std::size_t>(*alg)] = true;
    }
    state_ = std::make_shared<detail::mcp_jwt_state>(std::move(options), allowed);
  }

  /// The principal of a valid token; none otherwise (see verify() for why).
  [[nodiscard]] std::optional<mcp_principal> operator()(std::string_view bearer) const noexcept {
    return verify(bearer).principal;
  }

  /// The principal of a valid token, or the stable reason it was refused (mcp_token_verdict).
  [[nodiscard]] mcp_token_verdict verify(std::string_view bearer) const noexcept {
    try {
      return state_->verify(bearer);
    } catch (...) {
      return {std::nullopt, "internal"};
    }
  }

  /// Fetches the JWKS now, whatever the interval (e.g. at start-up, to fail early): whether a key set was read.
  bool prefetch() const noexcept {
    try {
      const auto before = state_->snapshot();
      const auto after = state_->refresh(true);
      return after && after != before;
    } catch (...) {
      return false;
    }
  }

  /// How many times the JWKS was fetched (or a fetch was tried) so far, by all copies.
  [[nodiscard]] std::size_t jwks_fetches() const noexcept { return state_->fetches(); }

 private:
  std::shared_ptr<detail::mcp_jwt_state> state_;
};

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_MCP_AUTH_JWT_HPP
