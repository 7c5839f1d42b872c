// tool_effects/mcp/auth/introspection.hpp — a token verifier that asks the authorization server about each token
// (OAuth 2.0 Token Introspection, RFC 7662), for mcp_resource_server::verify_token (mcp/auth/resource_server.hpp):
// for opaque tokens, or to learn of a revocation sooner than a JWT's expiry.
//
//   te::mcp_introspection_verifier verify({.endpoint = "https://auth.example.com/introspect",
//                                          .client_id = "bank-mcp", .client_secret = secret});
//   http.authorization = te::mcp_resource_server{.resource = "https://bank.example.com/mcp", ...,
//                                                .verify_token = verify};
//
// No OpenSSL of its own: an https endpoint needs a build with TOOL_EFFECTS_MCP_TLS=1 and OpenSSL linked (CMake:
// link tool_effects::mcp_auth); tool_effects::mcp alone reaches http on a loopback host. See
// docs/mcp-authorization.md ("Token verifiers").
#ifndef TOOL_EFFECTS_MCP_AUTH_INTROSPECTION_HPP
#define TOOL_EFFECTS_MCP_AUTH_INTROSPECTION_HPP

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <tool_effects/detail/str_cat.hpp>
#include <tool_effects/mcp/auth/detail/oauth_encoding.hpp>  // mcp_form, mcp_form_encode
#include <tool_effects/mcp/auth/detail/verifier_support.hpp>
#include <tool_effects/mcp/auth/principal.hpp>
#include <tool_effects/mcp/auth/verdict.hpp>
#include <tool_effects/mcp/protocol/detail/crypto.hpp>  // mcp_sha256, mcp_base64
#include <tool_effects/net/connection.hpp>

namespace tool_effects {

/// How the resource server authenticates its introspection requests (RFC 7662 section 2.1).
enum class mcp_introspection_auth {
  client_secret_basic,  ///< `Authorization: Basic` of the form-encoded client_id and client_secret (RFC 6749 2.3.1)
  client_secret_post,   ///< client_id and client_secret in the form body
  bearer,               ///< `Authorization: Bearer <bearer_token>`: a token of the resource server's own
};

/// Where a token is introspected, and what is accepted of the answer.
struct mcp_introspection_options {
  /// The authorization server's introspection endpoint. https; plain http only to a loopback host (see
  /// require_https).
  std::string endpoint{};
  mcp_introspection_auth auth = mcp_introspection_auth::client_secret_basic;
  std::string client_id{};  ///< the resource server's client credentials (client_secret_*)
  std::string client_secret{};
  std::string bearer_token{};  ///< mcp_introspection_auth::bearer
  /// Non-empty: the response's `iss` must be exactly this.
  std::string issuer{};
  /// Non-empty: the response's `aud` (a string or an array) must contain this. (The listener checks its own
  /// resource against `aud` in any case: an authorization server that returns no `aud` gets no request through.)
  std::string audience{};
  /// How long an answer is remembered (by the token's SHA-256): an active token's until min(exp, now + cache_ttl),
  /// an inactive one's for cache_ttl. 0: never remembered.
  std::chrono::seconds cache_ttl{60};
  /// The most answers remembered (the least recently used go first).
  std::size_t max_cached_tokens = 4096;
  /// Clock skew allowed on `exp`, `nbf`, `iat`.
  std::chrono::seconds leeway{60};
  /// One introspection request, all steps.
  std::chrono::milliseconds fetch_timeout{5000};
  /// The largest response body read.
  std::size_t max_response_bytes = 64 * 1024;
  /// TLS for an https endpoint (CA file; the server is always verified). Needs a build with TOOL_EFFECTS_MCP_TLS=1.
  net::tls_options tls{};
  /// false: plain http to any host.
  bool require_https = true;
  /// The time answers are judged and remembered by (tests); empty: std::chrono::system_clock::now.
  std::function<std::chrono::system_clock::time_point()> clock{};
  /// Told of every refusal and every failed introspection (see mcp_verifier_log); never given the token or a
  /// credential.
  mcp_verifier_log log{};
};

namespace detail {

// What the copies of one mcp_introspection_verifier share: the options, the endpoint, the remembered answers.
class mcp_introspection_state {
 public:
  explicit mcp_introspection_state(mcp_introspection_options o)
      : o_(std::move(o)), ep_("mcp_introspection_options::endpoint", o_.endpoint, o_.tls, o_.require_https) {
    if (o_.auth == mcp_introspection_auth::client_secret_basic)
      basic_ =
          "Basic " + mcp_base64(str_cat(mcp_form_encode(o_.client_id), ":", mcp_form_encode(o_.client_secret)), false);
  }

  std::size_t requests() const noexcept { return requests_.load(); }

  mcp_token_verdict verify(std::string_view token) {
    if (token.size() > mcp_max_token_bytes) return refuse("token_too_large");
    if (token.empty()) return refuse("malformed");
    const auto digest = mcp_sha256(token);
    std::string key(reinterpret_cast<const char*>(digest.data()), digest.size());
    const double t = now();
    if (auto hit = cached(key, t)) return *hit;
    double until = t + static_cast<double>(o_.cache_ttl.count());
    mcp_token_verdict v = introspect(token, t, until);
    if (v.accepted() || v.reason == "inactive") remember(std::move(key), v, until, t);
    if (!v.accepted()) say(v.reason, str_cat("token refused by introspection: ", v.reason));
    return v;
  }

 private:
  struct entry {
    mcp_token_verdict verdict;
    double until;
    std::list<std::string>::iterator lru;
  };

  double now() const { return mcp_seconds_of(o_.clock ? o_.clock() : std::chrono::system_clock::now()); }
  void say(std::string_view reason, const std::string& message) const { mcp_verifier_say(o_.log, reason, message); }
  mcp_token_verdict refuse(std::string_view reason) const {
    say(reason, str_cat("token refused: ", reason));
    return {std::nullopt, reason};
  }

  std::optional<mcp_token_verdict> cached(const std::string& key, double t) {
    std::lock_guard<std::mutex> l(m_);
    const auto it = cache_.find(key);
    if (it == cache_.end()) return std::nullopt;
    if (t >= it->second.until || t < it->second.until - static_cast<double>(o_.cache_ttl.count()) - 1) {
      lru_.erase(it->second.lru);  // expired, or the clock went back past when it was stored
      cache_.erase(it);
      return std::nullopt;
    }
    lru_.splice(lru_.begin(), lru_, it->second.lru);
    return it->second.verdict;
  }

  void remember(std::string key, const mcp_token_verdict& v, double until, double t) {
    if (o_.cache_ttl.count() <= 0 || o_.max_cached_tokens == 0 || until <= t) return;
    std::lock_guard<std::mutex> l(m_);
    if (const auto it = cache_.find(key); it != cache_.end()) {
      lru_.erase(it->second.lru);
      cache_.erase(it);
    }
    while (cache_.size() >= o_.max_cached_tokens && !lru_.empty()) {
      cache_.erase(lru_.back());
      lru_.pop_back();
    }
    lru_.push_front(key);
    cache_.emplace(std::move(key), entry{v, until, lru_.begin()});
  }

  // One request to the endpoint; `until` lowered to the token's `exp` when it has one.
  mcp_token_verdict introspect(std::string_view token, double t, double& until) {
    ++requests_;
    const std::string name = str_cat("introspection ", ep_.printable, ": ");
    std::vector<std::pair<std::string, std::string>> form{{"token", std::string(token)},
                                                          {"token_type_hint", "access_token"}};
    std::vector<std::pair<std::string, std::string>> headers{{"Content-Type", "application/x-www-form-urlencoded"},
                                                             {"Accept", "application/json"}};
    if (o_.auth == mcp_introspection_auth::client_secret_basic) {
      headers.emplace_back("Authorization", basic_);
    } else if (o_.auth == mcp_introspection_auth::bearer) {
      headers.emplace_back("Authorization", "Bearer " + o_.bearer_token);
    } else {
      form.emplace_back("client_id", o_.client_id);
      form.emplace_back("client_secret", o_.client_secret);
    }
    const mcp_token_verdict unavailable{std::nullopt, "unavailable"};
    net::fetch_response r;
    try {
      r = mcp_verifier_fetch(ep_, boost::beast::http::verb::post, std::move(headers), mcp_form(form), o_.fetch_timeout,
                             o_.max_response_bytes);
    } catch (const net::net_error& e) {
      const bool big = e.reason() == "body_limit";
      say(big ? "introspection_too_large" : "introspection_unavailable",
          big ? str_cat(name, "its response exceeds ", std::to_string(o_.max_response_bytes),
                        " bytes (max_response_bytes)")
              : str_cat(name, mcp_fetch_failure(e)));
      return unavailable;
    } catch (const std::exception&) {
      say("introspection_unavailable", str_cat(name, "could not fetch"));
      return unavailable;
    }
    if (r.status != 200) {
      const bool refused = r.status == 400 || r.status == 401 || r.status == 403;
      say(refused ? "introspection_refused" : "introspection_unavailable",
          str_cat(name, "HTTP status ", std::to_string(r.status),
                  refused ? " (are the resource server's credentials right?)" : ""));
      return unavailable;
    }
    std::string_view why;
    const auto doc = mcp_verifier_parse(r.body, o_.max_response_bytes, why);
    const auto active = doc ? doc->find("active") : nlohmann::json::const_iterator();
    if (!doc || active == doc->end() || !active->is_boolean()) {
      say("introspection_invalid",
          str_cat(name, "not an introspection response (", doc ? "no boolean `active`" : why, ")"));
      return unavailable;
    }
    if (!active->get<bool>()) return {std::nullopt, "inactive"};
    if (const auto reason = mcp_check_times(*doc, t, static_cast<double>(o_.leeway.count()), false); !reason.empty())
      return {std::nullopt, reason};
    mcp_token_verdict v;
    v.principal.emplace();
    if (const auto reason = mcp_principal_of(*doc, *v.principal); !reason.empty()) return {std::nullopt, reason};
    if (!o_.issuer.empty() && v.principal->issuer != o_.issuer) return {std::nullopt, "wrong_issuer"};
    if (!o_.audience.empty() && !v.principal->issued_for(o_.audience)) return {std::nullopt, "wrong_audience"};
    if (v.principal->expires_at) until = std::min(until, mcp_seconds_of(*v.principal->expires_at));
    return v;
  }

  mcp_introspection_options o_;
  mcp_verifier_endpoint ep_;
  std::string basic_;  // the Authorization value of client_secret_basic
  std::mutex m_;
  std::unordered_map<std::string, entry> cache_;  // by the token's SHA-256; guarded by m_
  std::list<std::string> lru_;                    // the keys, most recently used first; guarded by m_
  std::atomic<std::size_t> requests_{0};
};

}  // namespace detail

/// A token verifier by RFC 7662 introspection, to be used as an mcp_token_verifier. Each token it has no answer for
/// is POSTed (`token=...&token_type_hint=access_token`, form-encoded) to the endpoint with the resource server's
/// credentials, one bounded request (fetch_timeout, max_response_bytes; no redirect followed). It accepts a token
/// when the answer is HTTP 200 with a JSON object whose `active` is true, whose `exp`/`nbf`/`iat` hold (within the
/// leeway), whose claims have their types, and whose `iss`/`aud` match the options where set; the principal is read
/// from `sub`, `client_id`, `iss`, `aud`, `scope`, `exp`. An answer (active or inactive) is remembered by the token's
/// SHA-256 for min(exp, cache_ttl); a failure to ask is not. Copies share the cache; every member is safe to call
/// from several threads at once, and may block. Never throws once constructed, and nothing it returns or logs
/// contains the token or a credential.
class mcp_introspection_verifier {
 public:
  /// Throws std::invalid_argument when the endpoint is missing or not acceptable, or the credentials the chosen
  /// authentication needs are missing; net::net_error ("tls_unavailable", "tls_files") for https in a build without
  /// TLS or with a bad CA file.
  explicit mcp_introspection_verifier(mcp_introspection_options options) {
    if (options.endpoint.empty()) throw std::invalid_argument("mcp_introspection_options::endpoint is required");
    if (options.auth == mcp_introspection_auth::bearer ? options.bearer_token.empty() : options.client_id.empty())
      throw std::invalid_argument(options.auth == mcp_introspection_auth::bearer
                                      ? "mcp_introspection_options::bearer_token is required (auth = bearer)"
                                      : "mcp_introspection_options::client_id is required");
    if (options.leeway.count() < 0 || options.cache_ttl.count() < 0 || options.fetch_timeout.count() <= 0 ||
        options.max_response_bytes == 0)
      throw std::invalid_argument(
          "mcp_introspection_options: a negative duration, or a zero fetch_timeout or max_response_bytes");
    state_ = std::make_shared<detail::mcp_introspection_state>(std::move(options));
  }

  /// The principal of an active token; none otherwise (see verify() for why).
  [[nodiscard]] std::optional<mcp_principal> operator()(std::string_view bearer) const noexcept {
    return verify(bearer).principal;
  }

  /// The principal of an active token, or the stable reason it was refused (mcp_token_verdict).
  [[nodiscard]] mcp_token_verdict verify(std::string_view bearer) const noexcept {
    try {
      return state_->verify(bearer);
    } catch (...) {
      return {std::nullopt, "internal"};
    }
  }

  /// How many introspection requests were made (or tried) so far, by all copies.
  [[nodiscard]] std::size_t requests() const noexcept { return state_->requests(); }

 private:
  std::shared_ptr<detail::mcp_introspection_state> state_;
};

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_MCP_AUTH_INTROSPECTION_HPP
