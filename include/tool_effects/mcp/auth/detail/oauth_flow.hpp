// tool_effects/mcp/auth/detail/oauth_flow.hpp — internal to <tool_effects/mcp/http.hpp> (included by
// detail/http_transport.hpp after mcp_parse_http_url, before the transport): the OAuth 2.1 machinery
// of the HTTP transport (mcp/oauth.hpp): the authorizer — discovery, registration, the authorization code
// grant, refresh (its encodings in oauth_encoding.hpp, its URLs in oauth_urls.hpp, its bounded exchanges
// with the authorization server in oauth_fetch.hpp, on the network layer net/). Every response is adversarial: bounded in time and size, each field read is validated and
// named by its JSON pointer. Every failure message goes through `redact`, so that no token, code, verifier or
// secret is ever quoted. See docs/mcp-authorization.md ("Authorization").
#ifndef TOOL_EFFECTS_MCP_AUTH_DETAIL_OAUTH_FLOW_HPP
#define TOOL_EFFECTS_MCP_AUTH_DETAIL_OAUTH_FLOW_HPP

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <tool_effects/detail/str_cat.hpp>
#include <tool_effects/mcp/auth/detail/oauth_encoding.hpp>
#include <tool_effects/mcp/auth/detail/oauth_fetch.hpp>
#include <tool_effects/mcp/auth/detail/oauth_urls.hpp>
#include <tool_effects/mcp/auth/detail/oauth_user_agent.hpp>
#include <tool_effects/detail/quote.hpp>
#include <tool_effects/json/error.hpp>
#include <tool_effects/mcp/errors.hpp>
#include <tool_effects/mcp/oauth.hpp>

namespace tool_effects::detail {

namespace oauth_http = boost::beast::http;

// Authorization server metadata, as read (RFC 8414 section 2; the fields the flow uses).
struct mcp_oauth_server {
  std::string issuer;  // the MCP server's origin for the 2025-03-26 default endpoints (no metadata)
  std::string authorization_endpoint;
  std::string token_endpoint;
  std::string registration_endpoint;
  std::vector<std::string> auth_methods;  // token_endpoint_auth_methods_supported (empty: absent)
  bool auth_methods_given = false;
  bool cimd_supported = false;
  bool iss_supported = false;  // authorization_response_iss_parameter_supported
  std::vector<std::string> scopes_supported;
};

// A registered client.
struct mcp_oauth_client {
  std::string id;
  std::string secret;
  std::string method;  // none | client_secret_basic | client_secret_post
  std::string issuer;  // the authorization server it belongs to (its credentials go nowhere else)
};

// The authorization state of one HTTP transport; every member function runs on the transport's strand.
class mcp_oauth_authorizer : public std::enable_shared_from_this<mcp_oauth_authorizer> {
 public:
  mcp_oauth_authorizer(asio::any_io_executor ex, mcp_oauth_options options, std::string server_url, std::string ca_file)
      : ex_(std::move(ex)),
        o_(std::move(options)),
        server_url_(std::move(server_url)),
        key_(mcp_oauth_canonical(server_url_)),
        ca_file_(std::move(ca_file)) {
    secret(o_.client_secret);
  }

  // Changes whenever the tokens do: a request sent with an older generation just retries.
  [[nodiscard]] std::uint64_t generation() const noexcept { return generation_; }

  // The Authorization header for the next request ("" without a token). An expired token is refreshed first
  // when it can be; when that fails it is dropped (the 401 that follows authorizes anew).
  asio::awaitable<std::string> header() {
    if (!loaded_) {
      loaded_ = true;
      std::optional<mcp_oauth_tokens> t;
      try {
        if (o_.token_store.load) t = o_.token_store.load(key_);
      } catch (const std::exception&) {  // a store that fails is a store without tokens
      }
      if (t && token_ok(t->access_token) && (t->resource.empty() || t->resource == key_)) {
        tokens_ = std::move(*t);
        secret(tokens_->access_token);
        secret(tokens_->refresh_token);
        secret(tokens_->client_secret);
        const auto& m = tokens_->token_endpoint_auth_method;
        // The registration the tokens came with, bound to their issuer (tokens without one bring none).
        if (!tokens_->client_id.empty() && !tokens_->issuer.empty() &&
            (m == "none" || m == "client_secret_basic" || m == "client_secret_post"))
          registered_ = mcp_oauth_client{tokens_->client_id, tokens_->client_secret, m, tokens_->issuer};
        ++generation_;
      }
    }
    if (tokens_ && tokens_->expires_at && std::chrono::system_clock::now() >= *tokens_->expires_at && !busy_ &&
        !tokens_->refresh_token.empty() && server_) {
      busy_ = true;
      try {
        co_await refresh();
      } catch (const std::exception&) {
        tokens_.reset();
        ++generation_;
      }
      done();
    }
    co_return tokens_ ? "Bearer " + tokens_->access_token : std::string();
  }

  // After a 401, or a 403 insufficient_scope, to a request sent with tokens of `sent`: gets new tokens
  // (a refresh, else the whole flow; or waits for the one under way). Throws mcp_oauth_failure.
  asio::awaitable<void> challenge(unsigned status, std::string www_authenticate, std::uint64_t sent,
                                  std::function<bool()> alive) {
    while (busy_) co_await wait();
    if (!alive()) throw mcp_oauth_failure("the client is shutting down");
    alive_ = std::move(alive);
    if (generation_ != sent) co_return;  // another request got new tokens meanwhile
    busy_ = true;
    try {
      co_await run(status, www_authenticate);
    } catch (const std::exception& e) {
      done();
      throw mcp_oauth_failure(redact(e.what()));
    }
    done();
  }

  // A transport stopped: a wait for the user agent looks again whether the transport it authorizes still lives.
  // Any thread.
  void interrupt() {
    asio::post(ex_, [self = shared_from_this()] {
      for (const auto& t : self->user_agent_waits_) t->cancel();
    });
  }

  // `s` with every secret the flow knows (tokens, codes, verifiers, client secrets, Basic credentials) replaced
  // by "[redacted]", in each of its forms (mcp_redact). Called on the transport's strand.
  [[nodiscard]] std::string redact(std::string s) const { return mcp_redact(std::move(s), secrets_); }

 private:
  void secret(const std::string& s) {
    if (s.empty() || std::find(secrets_.begin(), secrets_.end(), s) != secrets_.end()) return;
    if (secrets_.size() >= 64) secrets_.erase(secrets_.begin() + 1);  // the client secret stays first
    secrets_.push_back(s);
  }

  asio::awaitable<void> wait() {
    auto t = std::make_shared<asio::steady_timer>(ex_, std::chrono::steady_clock::time_point::max());
    waiters_.push_back(t);
    (void)co_await t->async_wait(asio::as_tuple(asio::use_awaitable));
  }
  void done() {
    busy_ = false;
    for (auto& t : waiters_) t->cancel();
    waiters_.clear();
  }

  static bool token_ok(std::string_view t) {
    return !t.empty() && t.size() <= 16384 &&
           std::all_of(t.begin(), t.end(), [](char c) { return c > 0x20 && c < 0x7F; });
  }

  // One exchange of the flow, to the addresses the discovery policy and the https rule admit.
  asio::awaitable<mcp_oauth_response> fetch(oauth_http::verb verb, const std::string& url,
                                            std::vector<std::pair<std::string, std::string>> headers = {},
                                            std::string body = {}) {
    if (!server_kind_) co_await classify_server();
    std::function<bool(const asio::ip::address&)> allow =
        [url, https = url.rfind("https://", 0) == 0, server = *server_kind_, require = o_.require_https,
         policy = o_.discovery_policy](const asio::ip::address& a) {
          const auto k = mcp_oauth_address_kind(a);
          if (!mcp_oauth_scheme_allows(https, k, require)) return false;
          if (!policy) return mcp_oauth_default_allows(k, server);
          try {
            return policy(url, a.to_string());
          } catch (...) {  // a policy that fails refuses
            return false;
          }
        };
    co_return co_await mcp_oauth_fetch(verb, url, std::move(headers), std::move(body), o_.http_timeout,
                                       o_.max_response_bytes, ca_file_, std::move(allow));
  }

  // The kind of the MCP server's own address, for the default discovery policy: public unless every address
  // its host resolves to (within http_timeout) is of one other kind.
  asio::awaitable<void> classify_server() {
    mcp_address_kind kind = mcp_address_kind::public_address;
    try {
      const auto u = mcp_parse_http_url(server_url_, "oauth");
      const auto deadline = std::chrono::steady_clock::now() + o_.http_timeout;
      auto r = co_await mcp_oauth_resolve(*u.host, u.port_or_default(), deadline);
      if (r && !r->empty()) {
        kind = mcp_oauth_address_kind(r->begin()->endpoint().address());
        for (const auto& e : *r)
          if (mcp_oauth_address_kind(e.endpoint().address()) != kind) kind = mcp_address_kind::public_address;
        if (kind == mcp_address_kind::never) kind = mcp_address_kind::public_address;
      }
    } catch (const std::exception&) {
    }
    server_kind_ = kind;
  }

  // A JSON object from a response body (`what` names the document, its URL, in errors). An error says where and
  // what was wrong, never the body's bytes: a document fetched from an address the application chose may be
  // another service's reply, with its secrets in it.
  static nlohmann::json json_object(const mcp_oauth_response& r, const std::string& what, bool = true) {
    nlohmann::json j;
    try {
      j = parse_json(r.body, what);
    } catch (const json_error& e) {
      throw mcp_oauth_failure(str_cat(what, " at ", e.pointer().empty() ? std::string("(root)") : e.pointer(), ": ",
                                      e.message(), " (", std::to_string(r.body.size()), " bytes, not quoted)"));
    }
    if (!j.is_object()) throw mcp_oauth_failure(what + ": not a JSON object");
    return j;
  }
  static const char* type_name(const nlohmann::json& v) { return v.type_name(); }
  // The string member `key` of `j` (nullopt when absent; throws when of another type or too long).
  static std::optional<std::string> str(const nlohmann::json& j, const char* key, const std::string& what,
                                        std::size_t max = 2048) {
    const auto it = j.find(key);
    if (it == j.end() || it->is_null()) return std::nullopt;
    if (!it->is_string()) throw mcp_oauth_failure(what + ": /" + key + ": expected a string, got " + type_name(*it));
    auto s = it->get<std::string>();
    if (s.size() > max) throw mcp_oauth_failure(what + ": /" + key + ": longer than " + std::to_string(max) + " bytes");
    return s;
  }
  static std::string url_member(const nlohmann::json& j, const char* key, const std::string& what, bool required) {
    auto s = str(j, key, what);
    if (!s) {
      if (required) throw mcp_oauth_failure(what + ": /" + key + ": missing");
      return {};
    }
    if (!mcp_oauth_url_ok(*s)) throw mcp_oauth_failure(what + ": /" + key + ": not an http(s) URL");
    return *s;
  }
  static std::vector<std::string> strings(const nlohmann::json& j, const char* key, const std::string& what,
                                          bool* given = nullptr) {
    std::vector<std::string> out;
    const auto it = j.find(key);
    if (given) *given = it != j.end() && !it->is_null();
    if (it == j.end() || it->is_null()) return out;
    if (!it->is_array()) throw mcp_oauth_failure(what + ": /" + key + ": expected an array, got " + type_name(*it));
    if (it->size() > 256) throw mcp_oauth_failure(what + ": /" + key + ": more than 256 entries");
    for (std::size_t i = 0; i < it->size(); ++i) {
      const auto& v = (*it)[i];
      if (!v.is_string() || v.get_ref<const std::string&>().size() > 2048)
        throw mcp_oauth_failure(what + ": /" + key + "/" + std::to_string(i) +
                                ": expected a string (up to 2048 bytes)");
      out.push_back(v.get<std::string>());
    }
    return out;
  }
  static bool flag(const nlohmann::json& j, const char* key, const std::string& what) {
    const auto it = j.find(key);
    if (it == j.end() || it->is_null()) return false;
    if (!it->is_boolean()) throw mcp_oauth_failure(what + ": /" + key + ": expected a boolean, got " + type_name(*it));
    return it->get<bool>();
  }

  // The whole flow after a challenge.
  asio::awaitable<void> run(unsigned status, const std::string& www) {
    const auto ps = mcp_bearer_challenge(www);
    const std::string* challenge_scope = mcp_auth_param(ps, "scope");
    // Discovery at every challenge: the server may have moved to another authorization server (SEP-2352);
    // credentials of the previous one are then not used (refresh() and client() check the issuer).
    co_await discover(ps);
    // A 401 to a token that can be refreshed: refresh first (not when the token refused is a refreshed one:
    // then the grant itself is likely gone, and the whole flow runs; nor when another issuer made it).
    if (status == 401 && tokens_ && !tokens_->refresh_token.empty() && generation_ != refreshed_ &&
        tokens_->issuer == server_->issuer) {
      try {
        co_await refresh();
        co_return;
      } catch (const std::exception&) {
      }
    }
    // Scopes (specification 2025-11-25, "Scope Selection Strategy"); a step-up widens what was asked, never
    // the scopes the application fixed, and never asks again for a scope the server denied.
    std::vector<std::string> scopes;
    if (o_.scopes)
      scopes = *o_.scopes;
    else if (challenge_scope)
      scopes = mcp_split_scopes(*challenge_scope);
    else if (!prm_scopes_.empty())
      scopes = prm_scopes_;
    if (status == 403) {
      const auto wanted = challenge_scope ? mcp_split_scopes(*challenge_scope) : std::vector<std::string>{};
      std::vector<std::string> wider = mcp_split_scopes(last_scope_);
      auto has = [](const std::vector<std::string>& v, const std::string& x) {
        return std::find(v.begin(), v.end(), x) != v.end();
      };
      for (const auto& w : wanted) {
        if (o_.scopes && !has(*o_.scopes, w))
          throw mcp_oauth_failure("HTTP 403 insufficient_scope: the server asks for scope \"" + quote_text(w, 64) +
                                  "\", beyond the scopes the application fixed (mcp_oauth_options::scopes)");
        if (has(denied_, w))
          throw mcp_oauth_failure("HTTP 403 insufficient_scope: scope \"" + quote_text(w, 64) +
                                  "\" was requested before and not granted");
      }
      bool more = false;
      for (const auto& w : wanted)
        if (!has(wider, w)) {
          wider.push_back(w);
          more = true;
        }
      // Everything asked for was asked for and granted already: the server denies it in fact.
      if (!more && !wanted.empty() && tokens_) {
        for (const auto& w : wanted)
          if (!has(denied_, w) && denied_.size() < 256) denied_.push_back(w);
        throw mcp_oauth_failure("HTTP 403 insufficient_scope for scope \"" + quote_text(*challenge_scope, 200) +
                                "\", which the token was issued for");
      }
      if (!o_.scopes && !wider.empty()) scopes = std::move(wider);
    }
    std::string scope = mcp_join_scopes(scopes);
    co_await authorize(std::move(scope));
  }

  // Protected resource metadata (RFC 9728), then the authorization server's metadata.
  asio::awaitable<void> discover(const std::vector<std::pair<std::string, std::string>>& challenge) {
    const auto server = mcp_oauth_split(server_url_);
    std::vector<std::string> prm_urls;
    if (const auto* rm = mcp_auth_param(challenge, "resource_metadata"); rm && mcp_oauth_url_ok(*rm))
      prm_urls.push_back(*rm);
    if (!server.path.empty()) prm_urls.push_back(server.origin + "/.well-known/oauth-protected-resource" + server.path);
    prm_urls.push_back(server.origin + "/.well-known/oauth-protected-resource");
    std::optional<nlohmann::json> prm;
    std::string prm_url;
    for (const auto& u : prm_urls) {
      auto r = co_await fetch(oauth_http::verb::get, u);
      if (r.status == 200) {
        prm_url = u;
        prm = json_object(r, "protected resource metadata " + quote_text(u, 300));
        break;
      }
    }
    mcp_oauth_server as;
    if (prm) {
      const std::string what = "protected resource metadata " + quote_text(prm_url, 300);
      const auto resource = str(*prm, "resource", what);
      if (!resource) throw mcp_oauth_failure(what + ": /resource: missing");
      // The resource must be this server, or a prefix of it (same origin, path boundary).
      const auto rp = mcp_oauth_split(*resource);
      const bool same =
          rp.origin == server.origin && (rp.path.empty() || server.path == rp.path ||
                                         (server.path.rfind(rp.path, 0) == 0 && server.path[rp.path.size()] == '/'));
      if (!same || !mcp_oauth_url_ok(*resource))
        throw mcp_oauth_failure(what + ": /resource: \"" + quote_text(*resource, 300) + "\" is not this MCP server (" +
                                quote_text(server_url_, 300) + ")");
      resource_ = *resource;
      const auto servers = strings(*prm, "authorization_servers", what);
      if (servers.empty()) throw mcp_oauth_failure(what + ": /authorization_servers: missing or empty");
      if (!mcp_oauth_url_ok(servers[0]))
        throw mcp_oauth_failure(what + ": /authorization_servers/0: not an http(s) URL");
      prm_scopes_ = strings(*prm, "scopes_supported", what);
      as = co_await server_metadata(servers[0]);
    } else {
      if (!o_.legacy_discovery) {
        std::string m = "no protected resource metadata (tried";
        for (const auto& u : prm_urls) m = str_cat(m, " ", quote_text(u, 300));
        m += "), and the 2025-03-26 fallback is off (mcp_oauth_options::legacy_discovery)";
        throw mcp_oauth_failure(m);
      }
      // 2025-03-26: no resource metadata; the authorization server is at the MCP server's origin, its metadata
      // at the origin's well-known URI (whose issuer, at that origin, is the issuer of the iss check and of the
      // binding of credentials), else the default endpoints (the origin is the issuer).
      resource_ = mcp_oauth_canonical(server_url_);
      const std::string u = server.origin + "/.well-known/oauth-authorization-server";
      auto r = co_await fetch(oauth_http::verb::get, u);
      if (r.status == 200) {
        as = read_server(json_object(r, "authorization server metadata " + quote_text(u, 300)),
                         "authorization server metadata " + quote_text(u, 300), server.origin, true);
      } else {
        as.issuer = server.origin;
        as.authorization_endpoint = server.origin + "/authorize";
        as.token_endpoint = server.origin + "/token";
        as.registration_endpoint = server.origin + "/register";
      }
    }
    server_ = std::move(as);
  }

  // RFC 8414 and OpenID Connect discovery of `issuer` (specification 2025-11-25, "Authorization Server
  // Metadata Discovery"): with a path, the path-inserted URIs and then the path-appended OpenID one.
  asio::awaitable<mcp_oauth_server> server_metadata(const std::string& issuer) {
    const auto p = mcp_oauth_split(issuer);
    std::vector<std::string> urls;
    if (p.path.empty()) {
      urls = {p.origin + "/.well-known/oauth-authorization-server", p.origin + "/.well-known/openid-configuration"};
    } else {
      urls = {p.origin + "/.well-known/oauth-authorization-server" + p.path,
              p.origin + "/.well-known/openid-configuration" + p.path,
              p.origin + p.path + "/.well-known/openid-configuration"};
    }
    for (const auto& u : urls) {
      auto r = co_await fetch(oauth_http::verb::get, u);
      if (r.status != 200) continue;
      const std::string what = "authorization server metadata " + quote_text(u, 300);
      co_return read_server(json_object(r, what), what, issuer);
    }
    std::string m = str_cat("no authorization server metadata for ", quote_text(issuer, 300), " (tried");
    for (const auto& u : urls) m = str_cat(m, " ", quote_text(u, 300));
    m += ")";
    throw mcp_oauth_failure(m);
  }

  // The metadata of `issuer`, whose /issuer must be that very string (RFC 8414 section 3.3: identical, no
  // normalization, a trailing slash included). `legacy`: the 2025-03-26 metadata at the MCP server's origin
  // (`issuer`), which predates that rule: its /issuer is taken as it says, but must be at that origin.
  [[nodiscard]] mcp_oauth_server read_server(const nlohmann::json& j, const std::string& what,
                                             const std::string& issuer, bool legacy = false) const {
    mcp_oauth_server s;
    const auto iss = str(j, "issuer", what);
    if (!iss) throw mcp_oauth_failure(what + ": /issuer: missing");
    if (legacy ? !mcp_oauth_url_ok(*iss) || mcp_oauth_split(*iss).origin != issuer : *iss != issuer)
      throw mcp_oauth_failure(what + ": /issuer: \"" + quote_text(*iss, 300) +
                              "\" is not the authorization server \"" + quote_text(issuer, 300) +
                              "\" (RFC 8414 section 3.3)");
    s.issuer = *iss;
    s.authorization_endpoint = url_member(j, "authorization_endpoint", what, true);
    if (!mcp_oauth_endpoint_scheme_ok(s.authorization_endpoint, o_.require_https))
      throw mcp_oauth_failure(what + ": /authorization_endpoint: not https (mcp_oauth_options::require_https)");
    s.token_endpoint = url_member(j, "token_endpoint", what, true);
    s.registration_endpoint = url_member(j, "registration_endpoint", what, false);
    s.auth_methods = strings(j, "token_endpoint_auth_methods_supported", what, &s.auth_methods_given);
    s.scopes_supported = strings(j, "scopes_supported", what);
    s.cimd_supported = flag(j, "client_id_metadata_document_supported", what);
    s.iss_supported = flag(j, "authorization_response_iss_parameter_supported", what);
    bool pkce_given = false;
    const auto pkce = strings(j, "code_challenge_methods_supported", what, &pkce_given);
    if (!pkce_given)
      throw mcp_oauth_failure(what + ": /code_challenge_methods_supported: missing: the server does not support PKCE");
    if (std::find(pkce.begin(), pkce.end(), "S256") == pkce.end())
      throw mcp_oauth_failure(what + ": /code_challenge_methods_supported: no S256");
    return s;
  }

  [[nodiscard]] bool supports(const std::string& m) const {
    if (!server_->auth_methods_given) return m == "client_secret_basic" || m == "none";
    return std::find(server_->auth_methods.begin(), server_->auth_methods.end(), m) != server_->auth_methods.end();
  }

  // The client: pre-registered, a metadata document URL, an earlier registration, or a new one.
  asio::awaitable<mcp_oauth_client> client() {
    if (!o_.client_id.empty() && o_.client_issuer.empty())
      throw mcp_oauth_failure(
          "mcp_oauth_options::client_issuer is not set: a pre-registered client is used with its own authorization "
          "server only");
    if (!o_.client_id.empty() && o_.client_issuer == server_->issuer) {
      mcp_oauth_client c{o_.client_id, o_.client_secret, o_.token_endpoint_auth_method, server_->issuer};
      if (c.method.empty())
        c.method = c.secret.empty()                                                       ? "none"
                   : (!supports("client_secret_basic") && supports("client_secret_post")) ? "client_secret_post"
                                                                                          : "client_secret_basic";
      co_return c;
    }
    if (!o_.client_metadata_url.empty() && server_->cimd_supported) {
      const auto p = mcp_oauth_split(o_.client_metadata_url);
      if (o_.client_metadata_url.rfind("https://", 0) != 0 || p.path.empty() ||
          !mcp_oauth_url_ok(o_.client_metadata_url))
        throw mcp_oauth_failure("mcp_oauth_options::client_metadata_url \"" + quote_text(o_.client_metadata_url, 300) +
                                "\" is not an https URL with a path (a Client ID Metadata Document URL)");
      co_return mcp_oauth_client{o_.client_metadata_url, "", "none", server_->issuer};
    }
    if (registered_ && registered_->issuer != server_->issuer) registered_.reset();  // another server's: dropped
    if (registered_) co_return *registered_;
    if (!o_.dynamic_registration || server_->registration_endpoint.empty())
      throw mcp_oauth_failure(
          "no client registration: no pre-registered client_id for this authorization server, no client metadata "
          "document the server accepts, and " +
          std::string(o_.dynamic_registration ? "the server has no registration_endpoint"
                                              : "dynamic registration is off"));
    std::string method = supports("none")                  ? "none"
                         : supports("client_secret_basic") ? "client_secret_basic"
                         : supports("client_secret_post")  ? "client_secret_post"
                                                           : "";
    if (method.empty())
      throw mcp_oauth_failure(
          "the authorization server supports none of the token endpoint authentication methods "
          "none, client_secret_basic, client_secret_post");
    const std::string request = registration_request(method);
    const std::string url = server_->registration_endpoint;
    std::vector<std::pair<std::string, std::string>> headers;
    headers.emplace_back("Content-Type", "application/json");
    auto r = co_await fetch(oauth_http::verb::post, url, std::move(headers), request);
    const std::string what = "client registration " + quote_text(url, 300);
    if (r.status != 200 && r.status != 201) throw mcp_oauth_failure(what + ": " + refusal(r));
    const auto j = json_object(r, what, false);
    mcp_oauth_client c;
    c.issuer = server_->issuer;
    const auto id = str(j, "client_id", what, 1024);
    if (!id || id->empty()) throw mcp_oauth_failure(what + ": /client_id: missing");
    c.id = *id;
    c.secret = str(j, "client_secret", what, 4096).value_or("");
    secret(c.secret);
    const auto m = str(j, "token_endpoint_auth_method", what, 64);
    if (m && (*m == "none" || *m == "client_secret_basic" || *m == "client_secret_post"))
      c.method = *m;
    else if (m)
      throw mcp_oauth_failure(what + ": /token_endpoint_auth_method: \"" + quote_text(*m, 64) + "\" is not supported");
    else
      c.method = c.secret.empty() ? "none" : method == "none" ? "client_secret_basic" : method;
    if (c.method != "none" && c.secret.empty())
      throw mcp_oauth_failure(what + ": /client_secret: missing for " + c.method);
    registered_ = c;
    co_return c;
  }

  // The RFC 7591 registration request (outside the coroutine: GCC 12 miscompiles initializer lists in one).
  [[nodiscard]] std::string registration_request(const std::string& method) const {
    nlohmann::json j = nlohmann::json::object();
    j["client_name"] = o_.client_name;
    j["redirect_uris"] = nlohmann::json::array({o_.redirect_uri});
    j["grant_types"] = nlohmann::json::array({"authorization_code", "refresh_token"});
    j["response_types"] = nlohmann::json::array({"code"});
    j["token_endpoint_auth_method"] = method;
    j["application_type"] = application_type(o_.redirect_uri);
    return j.dump();
  }

  // SEP-837 (OpenID Connect Dynamic Client Registration's application_type): "native" for a redirect URI on the
  // user's machine (http(s) to a loopback literal or localhost, or a private scheme), else "web".
  static std::string application_type(const std::string& redirect_uri) {
    const bool http = redirect_uri.rfind("http://", 0) == 0 || redirect_uri.rfind("https://", 0) == 0;
    if (!http) return "native";
    try {
      const auto u = mcp_parse_http_url(redirect_uri, "oauth");
      boost::system::error_code ec;
      const auto a = asio::ip::make_address(*u.host, ec);
      if (*u.host == "localhost" || (!ec && mcp_oauth_address_kind(a) == mcp_address_kind::loopback)) return "native";
    } catch (const std::exception&) {
    }
    return "web";
  }

  // "HTTP 400: error=invalid_grant (description)" of a refusal, the description bounded.
  [[nodiscard]] std::string refusal(const mcp_oauth_response& r) const {
    std::string m = str_cat("HTTP ", std::to_string(r.status));
    try {
      const auto j = parse_json(r.body, "");
      if (j.is_object() && j.contains("error") && j["error"].is_string()) {
        const auto& e = j["error"].get_ref<const std::string&>();
        // (Redacted before it is cut: no part of a secret left.)
        m = str_cat(m, ": error=", quote_text(redact(e), 64),
                    j.contains("error_description") && j["error_description"].is_string()
                        ? str_cat(" (", quote_text(redact(j["error_description"].get_ref<const std::string&>()), 200), ")")
                        : std::string());
      }
    } catch (const std::exception&) {
    }
    return redact(m);
  }

  // Adds the client's authentication to a token request.
  static void authenticate(const mcp_oauth_client& c, std::vector<std::pair<std::string, std::string>>& form,
                           std::vector<std::pair<std::string, std::string>>& headers) {
    if (c.method == "client_secret_basic") {
      headers.emplace_back("Authorization",
                           "Basic " + mcp_base64(mcp_form_encode(c.id) + ":" + mcp_form_encode(c.secret), false));
    } else {
      form.emplace_back("client_id", c.id);
      if (c.method == "client_secret_post") form.emplace_back("client_secret", c.secret);
    }
  }

  // The authorization code grant with PKCE, state, resource and the iss check.
  asio::awaitable<void> authorize(std::string scope) {
    if (!o_.user_agent) throw mcp_oauth_failure("mcp_oauth_options::user_agent is not set");
    if (o_.redirect_uri.empty()) throw mcp_oauth_failure("mcp_oauth_options::redirect_uri is not set");
    const mcp_oauth_client c = co_await client();
    const std::string verifier = mcp_base64(mcp_random_bytes(32), true);
    const std::string state = mcp_base64(mcp_random_bytes(24), true);
    secret(verifier);
    std::vector<std::pair<std::string, std::string>> q{
        {"response_type", "code"},         {"client_id", c.id},
        {"redirect_uri", o_.redirect_uri}, {"code_challenge", mcp_pkce_challenge(verifier)},
        {"code_challenge_method", "S256"}, {"state", state}};
    if (!scope.empty()) q.emplace_back("scope", scope);
    q.emplace_back("resource", resource_);
    std::string url = server_->authorization_endpoint;
    url += url.find('?') == std::string::npos ? '?' : '&';
    url += mcp_form(q);
    if (!mcp_oauth_url_shell_safe(url))
      throw mcp_oauth_failure("the authorization URL has characters outside A-Z a-z 0-9 - . _ ~ : / ? @ % = & + , [ ] "
                              "(the authorization_endpoint of the metadata; it is not given to the user agent)");
    const std::string redirect = co_await user_agent(url);
    const auto ps = mcp_query_params(redirect);
    // Nothing of the redirect is acted on or quoted before its state and iss are checked (an error included).
    const auto* got_state = mcp_auth_param(ps, "state");
    if (!got_state || *got_state != state)
      throw mcp_oauth_failure(got_state ? "the redirect's state is not the one sent (a forged or stale redirect)"
                                        : "the redirect has no state");
    // RFC 9207: an iss in the response must be the server's (exact string); a server that promises it must
    // send it.
    const auto* iss = mcp_auth_param(ps, "iss");
    if (iss && *iss != server_->issuer)
      throw mcp_oauth_failure("the redirect's iss \"" + quote_text(*iss, 300) +
                              "\" is not the authorization server \"" + quote_text(server_->issuer, 300) +
                              "\" (RFC 9207: a mix-up)");
    if (!iss && server_->iss_supported)
      throw mcp_oauth_failure("the redirect has no iss, though the authorization server promises one (RFC 9207)");
    if (const auto* e = mcp_auth_param(ps, "error")) {
      std::string m = str_cat("the authorization server refused: error=", quote_text(redact(*e), 64));
      if (const auto* d = mcp_auth_param(ps, "error_description")) m = str_cat(m, " (", quote_text(redact(*d), 200), ")");
      throw mcp_oauth_failure(m);
    }
    const auto* code = mcp_auth_param(ps, "code");
    if (!code || code->empty() || code->size() > 4096) throw mcp_oauth_failure("the redirect has no code");
    secret(*code);
    std::vector<std::pair<std::string, std::string>> form{{"grant_type", "authorization_code"},
                                                          {"code", *code},
                                                          {"redirect_uri", o_.redirect_uri},
                                                          {"code_verifier", verifier},
                                                          {"resource", resource_}};
    last_scope_ = scope;
    std::string no_refresh;  // named: no temporary in a co_await expression (GCC 12)
    co_await token_request(c, std::move(form), scope, no_refresh);
  }

  // A refresh at the issuer that issued the refresh token, never at another (its client's credentials neither).
  asio::awaitable<void> refresh() {
    if (!server_ || tokens_->issuer.empty() || tokens_->issuer != server_->issuer)
      throw mcp_oauth_failure("the refresh token was issued by another authorization server (or an unknown one)");
    const mcp_oauth_client c = co_await client();
    std::vector<std::pair<std::string, std::string>> form{
        {"grant_type", "refresh_token"}, {"refresh_token", tokens_->refresh_token}, {"resource", resource_}};
    std::string scope = tokens_->scope, old_refresh = tokens_->refresh_token;
    co_await token_request(c, std::move(form), std::move(scope), std::move(old_refresh));
    refreshed_ = generation_;
  }

  asio::awaitable<void> token_request(mcp_oauth_client c, std::vector<std::pair<std::string, std::string>> form,
                                      std::string scope, std::string old_refresh) {
    std::vector<std::pair<std::string, std::string>> headers{{"Content-Type", "application/x-www-form-urlencoded"}};
    if (c.issuer != server_->issuer)  // never: client() binds; checked where the secret would leave
      throw mcp_oauth_failure("the client belongs to another authorization server");
    authenticate(c, form, headers);
    for (const auto& [k, v] : headers)
      if (k == "Authorization" && v.size() > 6) secret(v.substr(6));  // the Basic credentials as sent
    const std::string url = server_->token_endpoint;
    const std::string what = "token endpoint " + quote_text(url, 300);
    std::string body = mcp_form(form);
    auto r = co_await fetch(oauth_http::verb::post, url, std::move(headers), std::move(body));
    // The new secrets of the answer are known to the redaction before anything of it is quoted.
    try {
      const auto pre = parse_json(r.body, "");
      if (pre.is_object())
        for (const char* k : {"access_token", "refresh_token", "id_token"})
          if (const auto it = pre.find(k); it != pre.end() && it->is_string()) secret(it->get<std::string>());
    } catch (const std::exception&) {
    }
    if (r.status != 200) throw mcp_oauth_failure(what + ": " + refusal(r));
    const auto j = json_object(r, what, false);
    mcp_oauth_tokens t;
    const auto access = str(j, "access_token", what, 16384);
    if (!access || !token_ok(*access)) throw mcp_oauth_failure(what + ": /access_token: missing, or not visible ASCII");
    const auto type = str(j, "token_type", what, 64);
    if (!type || !boost::beast::iequals(*type, "bearer"))
      throw mcp_oauth_failure(what + ": /token_type: " +
                              (type ? "\"" + quote_text(*type, 64) + "\" is not Bearer" : std::string("missing")));
    t.access_token = *access;
    secret(t.access_token);
    if (const auto rt = str(j, "refresh_token", what, 16384)) {
      if (!token_ok(*rt)) throw mcp_oauth_failure(what + ": /refresh_token: not visible ASCII");
      t.refresh_token = *rt;
      secret(t.refresh_token);
    } else {
      t.refresh_token = old_refresh;
    }
    t.scope = str(j, "scope", what, 4096).value_or(scope);
    if (const auto it = j.find("expires_in"); it != j.end() && !it->is_null()) {
      if (!it->is_number() || it->get<double>() < 0 || it->get<double>() > 1e9)
        throw mcp_oauth_failure(what + ": /expires_in: expected a number of seconds, got " + type_name(*it));
      t.expires_at =
          std::chrono::system_clock::now() + std::chrono::seconds(static_cast<std::int64_t>(it->get<double>()));
    }
    t.client_id = c.id;
    t.client_secret = c.secret;
    t.token_endpoint_auth_method = c.method;
    t.issuer = server_->issuer;
    t.resource = key_;
    // Scopes asked for and not granted are not asked for again by a step-up.
    if (str(j, "scope", what, 4096)) {
      const auto granted = mcp_split_scopes(t.scope);
      for (const auto& w : mcp_split_scopes(scope))
        if (std::find(granted.begin(), granted.end(), w) == granted.end() &&
            std::find(denied_.begin(), denied_.end(), w) == denied_.end() && denied_.size() < 256)
          denied_.push_back(w);
    }
    tokens_ = std::move(t);
    ++generation_;
    try {
      if (o_.token_store.save) o_.token_store.save(key_, *tokens_);
    } catch (const std::exception&) {  // the tokens still serve this client
    }
  }

  // The application's user-agent step (mcp/auth/detail/oauth_user_agent.hpp): on a thread of its own, waited
  // for without polling; interrupt() wakes the wait when a transport stops.
  asio::awaitable<std::string> user_agent(const std::string& url) {
    auto timer = std::make_shared<asio::steady_timer>(ex_);
    user_agent_waits_.push_back(timer);
    std::string r;
    std::exception_ptr failed;
    try {
      r = co_await mcp_oauth_run_user_agent(ex_, o_.user_agent, url, o_.user_agent_timeout, alive_, timer);
    } catch (...) {
      failed = std::current_exception();
    }
    std::erase(user_agent_waits_, timer);
    if (failed) std::rethrow_exception(failed);
    co_return r;
  }

  asio::any_io_executor ex_;
  mcp_oauth_options o_;
  std::string server_url_;
  std::string key_;
  std::string ca_file_;
  std::optional<mcp_oauth_server> server_;
  std::optional<mcp_oauth_client> registered_;
  std::optional<mcp_oauth_tokens> tokens_;
  std::string resource_;
  std::vector<std::string> prm_scopes_;
  std::string last_scope_;
  std::vector<std::string> denied_;  // scopes requested and not granted
  std::optional<mcp_address_kind> server_kind_;  // of the MCP server's address (the default discovery policy)
  std::vector<std::string> secrets_;
  std::vector<std::shared_ptr<asio::steady_timer>> waiters_;
  std::uint64_t generation_ = 0;
  std::uint64_t refreshed_ = 0;  // the generation a refresh made
  bool loaded_ = false;
  bool busy_ = false;
  std::function<bool()> alive_;  // of the transport whose request is being authorized
  std::vector<std::shared_ptr<asio::steady_timer>> user_agent_waits_;  // on ex_
};

}  // namespace tool_effects::detail

namespace tool_effects {

inline std::string mcp_oauth_follow_redirect(const std::string& authorization_url, std::chrono::milliseconds timeout) {
  boost::asio::io_context io;
  std::optional<detail::mcp_oauth_response> r;
  std::exception_ptr error;
  boost::asio::co_spawn(io,
                        detail::mcp_oauth_fetch(detail::oauth_http::verb::get, authorization_url, {},
                                                {}, timeout, 64 * 1024, std::string()),
                        [&](std::exception_ptr e, detail::mcp_oauth_response v) {
                          if (e)
                            error = e;
                          else
                            r = std::move(v);
                        });
  io.run();
  if (error) std::rethrow_exception(error);
  if (!r || r->status / 100 != 3 || r->location.empty())
    throw std::runtime_error("the authorization endpoint answered HTTP " + std::to_string(r ? r->status : 0) +
                             ", not a redirect");
  if (r->location.front() == '/') return detail::mcp_oauth_split(authorization_url).origin + r->location;
  return r->location;
}

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_MCP_AUTH_DETAIL_OAUTH_FLOW_HPP
