// tool_effects/etcd/client.hpp — a client of etcd's v3 JSON gateway (etcd 3.4: /v3/kv/*, /v3/lease/*,
// /v3/watch, /v3/auth/authenticate) over Boost.Beast HTTP/1.1, for the etcd coordinator of issue 18.
// Part of the JSON component (nlohmann::json). Include <tool_effects/etcd.hpp>.
//
// Keys and values are bytes (base64 on the wire); int64 fields are JSON strings on the wire, and the gateway
// omits fields that have their default value (0, false, empty), so a missing field reads as its default.
// Every response is parsed with detail::parse_json (depth- and duplicate-key-checked) and bounded in size.
// Requests time out (client_options::request_timeout); a transport failure moves on to the next endpoint.
//
// The public declarations are below; the gateway's JSON (etcd/detail/gateway_json.hpp) and the HTTP
// connection (etcd/detail/connection.hpp) are included after the value types they use.
#ifndef TOOL_EFFECTS_ETCD_CLIENT_HPP
#define TOOL_EFFECTS_ETCD_CLIENT_HPP

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <tool_effects/detail/str_cat.hpp>
#include <tool_effects/json/error.hpp>

namespace tool_effects::etcd {

/// A failed etcd request. `reason()` is a stable string: "unavailable" (no endpoint answered), "timeout",
/// "bad_response" (not what the gateway sends), "lease_not_found", "compacted", "auth_failed", "bad_option",
/// or "server_error" (any other gRPC error; `code()` is its gRPC status code, 0 when there is none).
class error : public std::runtime_error {
 public:
  error(std::string reason, const std::string& message, int code = 0)
      : std::runtime_error(detail::str_cat("etcd: ", reason, ": ", message)), reason_(std::move(reason)),
        code_(code) {}
  [[nodiscard]] const std::string& reason() const noexcept { return reason_; }
  [[nodiscard]] int code() const noexcept { return code_; }

 private:
  std::string reason_;
  int code_;
};

/// How the client reaches etcd. Endpoints are "http://host:port" (a bare "host:port" is read as http).
struct client_options {
  std::vector<std::string> endpoints;                     ///< tried in turn; a failing one moves to the next
  std::chrono::milliseconds request_timeout{3000};        ///< per request (connect, write, read) and endpoint
  std::string user;                                       ///< etcd user (auth enabled); empty: no auth
  std::string password;                                   ///< its password
  std::size_t max_response_bytes = std::size_t{8} << 20; ///< a longer response (or stream line) is bad_response
  /// TLS, for "https://" endpoints: needs a build with TOOL_EFFECTS_ETCD_TLS=1 and OpenSSL (else https
  /// endpoints are bad_option). The server is verified against `ca_file` (PEM; empty: the system's CAs);
  /// `cert_file` / `key_file` (PEM) are the client certificate for etcd's --client-cert-auth.
  std::string ca_file;
  std::string cert_file;
  std::string key_file;
};

/// One key-value pair as etcd stores it.
struct key_value {
  std::string key;
  std::string value;
  std::int64_t create_revision = 0;
  std::int64_t mod_revision = 0;
  std::int64_t version = 0;
  std::int64_t lease = 0;
};

/// A range read: the keys found, how many matched (before `limit`), the store's revision.
struct range_result {
  std::int64_t revision = 0;
  std::vector<key_value> kvs;
  std::int64_t count = 0;
  bool more = false;
};

/// A range request: `key` alone, or [key, range_end) ("\0" as range_end: every key >= key).
struct range_request {
  range_request() = default;
  range_request(std::string k, std::string end = {}, std::int64_t lim = 0)  // NOLINT: a key converts
      : key(std::move(k)), range_end(std::move(end)), limit(lim) {}
  std::string key;
  std::string range_end;
  std::int64_t limit = 0;          ///< 0: no limit
  std::int64_t revision = 0;       ///< 0: the newest
  std::int64_t max_create_revision = 0;  ///< 0: no bound; else only keys created at or before it
  enum class sort { none, create_ascending, create_descending } order = sort::none;
  bool keys_only = false;
  bool count_only = false;
};

/// One operation of a transaction.
struct txn_op {
  enum class kind { put, range, delete_range } op = kind::range;
  std::string key;
  std::string value;      ///< put
  std::int64_t lease = 0; ///< put
  range_request range;    ///< range (its key is used); delete_range uses range.range_end
  static txn_op put(std::string k, std::string v, std::int64_t lease_id = 0) {
    return {kind::put, std::move(k), std::move(v), lease_id, {}};
  }
  static txn_op get(range_request r) {
    auto k = r.key;
    return {kind::range, std::move(k), {}, 0, std::move(r)};
  }
  static txn_op del(std::string k, std::string range_end = {}) {
    range_request r;
    r.range_end = std::move(range_end);
    return {kind::delete_range, std::move(k), {}, 0, std::move(r)};
  }
};

/// One comparison of a transaction's guard.
struct txn_compare {
  enum class target { create_revision, mod_revision, version, value } what = target::create_revision;
  enum class relation { equal, greater, less, not_equal } rel = relation::equal;
  std::string key;
  std::int64_t number = 0;  ///< revisions and versions
  std::string value;        ///< target::value
};

/// One operation's answer: a range's keys, or how many keys a delete removed.
struct txn_op_result {
  txn_op::kind op = txn_op::kind::range;
  range_result range;
  std::int64_t deleted = 0;
};

/// A transaction's answer: which branch ran, the store's revision after it, each operation's answer.
struct txn_result {
  bool succeeded = false;
  std::int64_t revision = 0;
  std::vector<txn_op_result> responses;
};

/// A lease: its id and TTL in seconds (as granted, or remaining after a keepalive).
struct lease {
  std::int64_t id = 0;
  std::int64_t ttl = 0;
};

/// One watch message: events since the last one, or the end of the watch (canceled, with the compacted
/// revision when the start revision had been compacted).
struct watch_event {
  bool is_delete = false;
  key_value kv;
};
struct watch_response {
  std::int64_t revision = 0;
  bool created = false;
  bool canceled = false;
  std::int64_t compact_revision = 0;
  std::vector<watch_event> events;
};

}  // namespace tool_effects::etcd

// The gateway's JSON and the HTTP connection (they need the value types above).
#include <tool_effects/etcd/detail/connection.hpp>
#include <tool_effects/etcd/detail/gateway_json.hpp>

namespace tool_effects::etcd {

/// A member's status: its id and its leader's id (equal on the leader), as etcd's decimal uint64 strings.
struct member_status {
  std::string member_id;
  std::string leader;
};

class client;

/// A watch on a key or range, on its own connection to one endpoint. `next` returns each message; a
/// canceled message (compacted start revision, or the server ended the watch) ends it: open a new watch from
/// `compact_revision` (or from the last revision seen + 1). Not thread-safe.
class watch_stream {
 public:
  /// The next message, waiting at most `wait`; nullopt when none came in time (the watch goes on).
  /// Throws etcd::error when the connection fails or the stream ends: open a new watch from the last
  /// revision seen + 1.
  std::optional<watch_response> next(std::chrono::milliseconds wait) {
    auto line = conn_->next_line(wait);
    if (!line) return std::nullopt;
    return detail::parse_watch(tool_effects::detail::parse_json(*line, "etcd watch"));
  }

  /// For a poller: the socket the watch reads (-1 when closed), and whether a message (or the end) may be had
  /// without the socket becoming readable (a complete line already read; with TLS, always: the TLS layer may
  /// hold decrypted bytes).
  [[nodiscard]] int native_handle() const noexcept { return conn_->native_handle(); }
  [[nodiscard]] bool buffered() const noexcept { return conn_->may_have_buffered(); }

 private:
  friend class client;
  explicit watch_stream(std::unique_ptr<detail::connection> c) : conn_(std::move(c)) {}
  std::unique_ptr<detail::connection> conn_;
};

/// A client of etcd's v3 JSON gateway. Requests are serialized by a mutex (one connection at a time);
/// watches and keepalives use connections of their own. A transport failure or an unavailable member moves
/// the client to the next endpoint and retries there, once per endpoint: a request whose answer was lost
/// may have been applied, so the requests the coordinator sends are idempotent by construction.
class client {
  template <class F>
  std::invoke_result_t<F&, detail::connection&> with_failover(F&& f) {
    std::lock_guard lock(mutex_);
    std::optional<error> last;
    bool reauthenticated = false;
    for (std::size_t attempt = 0; attempt < urls_.size(); ++attempt) {
      try {
        if (!conn_) conn_ = std::make_unique<detail::connection>(urls_[current_], options_.request_timeout,
                                                                 options_.max_response_bytes, &options_);
        if (!options_.user.empty() && token_.empty()) authenticate();
        return f(*conn_);
      } catch (const error& e) {
        if (e.reason() == "auth_failed" && !token_.empty() && !reauthenticated) {
          // a token that expired (etcd's simple tokens live 5 minutes): authenticate again, once
          token_.clear();
          reauthenticated = true;
          --attempt;
          continue;
        }
        if (e.reason() != "unavailable" && e.reason() != "timeout") throw;
        last = e;
        conn_.reset();
        token_.clear();
        current_ = (current_ + 1) % urls_.size();
      }
    }
    throw error("unavailable", detail::str_cat("no endpoint answered; last: ", last ? last->what() : "?"));
  }

 public:
  /// Checks the options (bad_option) but does not connect; authenticates on the first request.
  explicit client(client_options options) : options_(std::move(options)) {
    if (options_.endpoints.empty()) throw error("bad_option", "no endpoints");
    for (const auto& e : options_.endpoints) urls_.push_back(detail::parse_endpoint(e));
    if (options_.user.empty() != options_.password.empty() && !options_.user.empty())
      throw error("bad_option", "a user needs a password");
  }

  /// Which endpoint requests go to now (an index into options().endpoints).
  [[nodiscard]] std::size_t current_endpoint() const noexcept { return current_; }
  [[nodiscard]] const client_options& options() const noexcept { return options_; }

  range_result range(const range_request& r) { return detail::parse_range(call("/v3/kv/range", detail::range_json(r))); }

  /// Puts one key; returns the store's revision after it.
  std::int64_t put(std::string_view key, std::string_view value, std::int64_t lease_id = 0) {
    nlohmann::json j{{"key", detail::base64_encode(key)}, {"value", detail::base64_encode(value)}};
    if (lease_id) j["lease"] = std::to_string(lease_id);
    return detail::header_revision(call("/v3/kv/put", j));
  }

  /// Deletes `key` (or [key, range_end)); returns how many keys went.
  std::int64_t delete_range(std::string_view key, std::string_view range_end = {}) {
    nlohmann::json j{{"key", detail::base64_encode(key)}};
    if (!range_end.empty()) j["range_end"] = detail::base64_encode(range_end);
    return detail::int64_field(call("/v3/kv/deleterange", j), "deleted");
  }

  /// If every comparison holds, runs `success`, else `failure`; atomically, one revision.
  txn_result txn(const std::vector<txn_compare>& compare, const std::vector<txn_op>& success,
                 const std::vector<txn_op>& failure = {}) {
    nlohmann::json j = nlohmann::json::object();
    auto& c = j["compare"] = nlohmann::json::array();
    for (const auto& x : compare) c.push_back(detail::compare_json(x));
    auto& s = j["success"] = nlohmann::json::array();
    for (const auto& x : success) s.push_back(detail::op_json(x));
    auto& f = j["failure"] = nlohmann::json::array();
    for (const auto& x : failure) f.push_back(detail::op_json(x));
    const auto res = call("/v3/kv/txn", j);
    txn_result out;
    out.succeeded = detail::bool_field(res, "succeeded");
    out.revision = detail::header_revision(res);
    const auto& ops = out.succeeded ? success : failure;
    const auto& responses = detail::array_field(res, "responses");
    if (responses.size() != ops.size()) throw error("bad_response", "txn: one response per operation expected");
    for (std::size_t i = 0; i < ops.size(); ++i) {
      txn_op_result r;
      r.op = ops[i].op;
      const auto& one = responses[i];
      if (r.op == txn_op::kind::range) {
        const auto* rr = detail::field(one, "response_range");
        if (rr) r.range = detail::parse_range(*rr);
        r.range.revision = out.revision;
      } else if (r.op == txn_op::kind::delete_range) {
        const auto* d = detail::field(one, "response_delete_range");
        r.deleted = d ? detail::int64_field(*d, "deleted") : 0;
      }
      out.responses.push_back(std::move(r));
    }
    return out;
  }

  /// The answering member's status (/v3/maintenance/status): its id and the id of the leader it knows.
  member_status status() {
    const auto res = call("/v3/maintenance/status", nlohmann::json::object());
    const auto id = [](const nlohmann::json* j, const char* name) -> std::string {
      const auto* f = j ? detail::field(*j, name) : nullptr;
      if (f && f->is_string()) return f->get<std::string>();
      if (f && f->is_number_unsigned()) return std::to_string(f->get<std::uint64_t>());
      throw error("bad_response", detail::str_cat("status: no ", name));
    };
    return {id(detail::field(res, "header"), "member_id"), id(&res, "leader")};
  }

  /// Compacts the key-value history up to `revision` (watches from older revisions are then canceled).
  void compact(std::int64_t revision, bool physical = false) {
    nlohmann::json j{{"revision", std::to_string(revision)}};
    if (physical) j["physical"] = true;
    call("/v3/kv/compaction", j);
  }

  /// Asks the member this client talks to, which must be the leader, to hand leadership to the member
  /// `target_member_id` (decimal, as member_status gives it) and waits for the hand-off (maintenance, tests).
  void transfer_leadership(const std::string& target_member_id) {
    call("/v3/maintenance/transfer-leadership", {{"targetID", target_member_id}});
  }

  /// Grants a lease of `ttl_seconds`.
  lease lease_grant(std::int64_t ttl_seconds) {
    const auto res = call("/v3/lease/grant", {{"TTL", std::to_string(ttl_seconds)}});
    if (const auto* e = detail::field(res, "error"); e && e->is_string() && !e->get<std::string>().empty())
      throw error("server_error", detail::quoted_message(e->get<std::string>()));
    return {detail::int64_field(res, "ID"), detail::int64_field(res, "TTL")};
  }

  /// Renews the lease once; returns its TTL. A lease that expired (TTL 0 in the answer) is lease_not_found.
  lease lease_keepalive(std::int64_t id) {
    const nlohmann::json body{{"ID", std::to_string(id)}};
    return with_failover([&](detail::connection& c) {
      // the keepalive endpoint is a stream: a connection of its own, one message, then closed
      detail::connection stream(c.where(), options_.request_timeout, options_.max_response_bytes, &options_);
      const auto status = stream.open_stream("/v3/lease/keepalive", body.dump(), token_);
      auto line = stream.next_line(options_.request_timeout);
      stream.close();
      if (status != 200) detail::throw_gateway_error(status, line.value_or(""));
      if (!line) throw error("timeout", "no keepalive answer");
      const auto j = tool_effects::detail::parse_json(*line, "etcd keepalive");
      const auto* result = detail::field(j, "result");
      if (!result) detail::throw_gateway_error(status, *line);
      lease l{detail::int64_field(*result, "ID"), detail::int64_field(*result, "TTL")};
      if (l.ttl <= 0) throw error("lease_not_found", detail::str_cat("lease ", std::to_string(id), " expired"));
      return l;
    });
  }

  /// Revokes the lease: its keys are deleted.
  void lease_revoke(std::int64_t id) { call("/v3/lease/revoke", {{"ID", std::to_string(id)}}); }

  /// Opens a watch on `key` (or [key, range_end)) from `start_revision` (0: from now) on the current
  /// endpoint, failing over like a request, and waits for its `created` message.
  watch_stream watch(std::string_view key, std::string_view range_end = {}, std::int64_t start_revision = 0) {
    nlohmann::json create{{"key", detail::base64_encode(key)}};
    if (!range_end.empty()) create["range_end"] = detail::base64_encode(range_end);
    if (start_revision) create["start_revision"] = std::to_string(start_revision);
    const nlohmann::json body{{"create_request", create}};
    return with_failover([&](detail::connection& c) {
      auto conn = std::make_unique<detail::connection>(c.where(), options_.request_timeout,
                                                       options_.max_response_bytes, &options_);
      const auto status = conn->open_stream("/v3/watch", body.dump(), token_);
      if (status != 200) detail::throw_gateway_error(status, conn->next_line(options_.request_timeout).value_or(""));
      return watch_stream(std::move(conn));
    });
  }

 private:
  nlohmann::json call(const std::string& target, const nlohmann::json& body) {
    const auto text = body.dump();
    return with_failover([&](detail::connection& c) { return post_json(c, target, text); });
  }

  nlohmann::json post_json(detail::connection& c, const std::string& target, const std::string& text) {
    auto [status, res] = c.post(target, text, token_);
    if (status != 200) detail::throw_gateway_error(status, res);
    return tool_effects::detail::parse_json(res, "etcd response");
  }

  void authenticate() {
    const nlohmann::json body{{"name", options_.user}, {"password", options_.password}};
    const auto res = post_json(*conn_, "/v3/auth/authenticate", body.dump());
    const auto* t = detail::field(res, "token");
    if (!t || !t->is_string() || t->get_ref<const std::string&>().empty())
      throw error("auth_failed", "no token in the authenticate answer");
    token_ = detail::checked_token(t->get<std::string>());
  }

  client_options options_;
  std::vector<detail::url> urls_;
  std::mutex mutex_;
  std::unique_ptr<detail::connection> conn_;
  std::size_t current_ = 0;
  std::string token_;
};

}  // namespace tool_effects::etcd

#endif  // TOOL_EFFECTS_ETCD_CLIENT_HPP
