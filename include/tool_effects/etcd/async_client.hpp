// tool_effects/etcd/async_client.hpp — the etcd client as Asio coroutines: every round trip and
// watch of etcd's v3 JSON gateway (etcd 3.4: /v3/kv/*, /v3/lease/*, /v3/watch, /v3/auth/authenticate) is an
// `asio::awaitable` on the executor the client is made with; no thread, poll loop or event loop of its own.
// The blocking `etcd::client` (etcd/client.hpp) runs these same coroutines on an io_context of its own.
// Part of the JSON component (nlohmann::json). Include <tool_effects/etcd.hpp>.
//
// Every response is parsed with detail::parse_json (depth- and duplicate-key-checked) and bounded in size.
// Requests time out (client_options::request_timeout); a transport failure moves on to the next endpoint.
#ifndef TOOL_EFFECTS_ETCD_ASYNC_CLIENT_HPP
#define TOOL_EFFECTS_ETCD_ASYNC_CLIENT_HPP

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <nlohmann/json.hpp>

#include <tool_effects/detail/str_cat.hpp>
#include <tool_effects/etcd/error.hpp>
#include <tool_effects/etcd/types.hpp>
#include <tool_effects/json/bounded_parse.hpp>

#include <tool_effects/etcd/detail/connection.hpp>
#include <tool_effects/etcd/detail/gateway_json.hpp>

namespace tool_effects::etcd {

/// A watch on a key or range on a connection of its own (async_client::watch). `next` returns each message;
/// a canceled message (compacted start revision, or the server ended the watch) ends it: open a new watch
/// from `compact_revision` (or from the last revision seen + 1). Used from its executor only (one coroutine
/// or strand at a time). Closed by its destructor.
class async_watch {
 public:
  async_watch() = default;
  async_watch(async_watch&&) noexcept = default;
  async_watch& operator=(async_watch&& o) noexcept {
    if (this != &o) {
      close();
      conn_ = std::move(o.conn_);
    }
    return *this;
  }
  ~async_watch() { close(); }

  /// The next message, waiting until `deadline` at most; nullopt when none came in time or wake() was called
  /// (the watch goes on). Throws etcd::error when the connection fails or the stream ends: open a new watch
  /// from the last revision seen + 1.
  boost::asio::awaitable<std::optional<watch_response>> next(std::chrono::steady_clock::time_point deadline) {
    auto line = co_await conn_->next_line(deadline);
    if (!line) co_return std::nullopt;
    co_return detail::parse_watch(tool_effects::detail::parse_json(*line, "etcd watch"));
  }

  /// Ends a next() that waits: it returns nullopt (from the watch's executor).
  void wake() {
    if (conn_) conn_->wake();
  }
  /// Closes the connection (a waiting next() then throws unavailable). Idempotent.
  void close() noexcept {
    if (conn_) conn_->close();
    conn_.reset();
  }
  [[nodiscard]] bool is_open() const noexcept { return conn_ != nullptr; }

 private:
  friend class async_client;
  explicit async_watch(std::shared_ptr<detail::connection> c) : conn_(std::move(c)) {}
  std::shared_ptr<detail::connection> conn_;
};

/// A client of etcd's v3 JSON gateway whose operations are coroutines on `executor`. Not thread-safe: one
/// coroutine (or one strand) at a time; watches and keepalives use connections of their own. A transport
/// failure or an unavailable member moves the client to the next endpoint and retries there, once per
/// endpoint: a request whose answer was lost may have been applied, so the requests the coordinator sends are
/// idempotent by construction. Authenticates (user and password) before its first request.
class async_client {
 public:
  using executor_type = boost::asio::any_io_executor;

  /// Checks the options (bad_option) but does not connect.
  async_client(client_options options, executor_type ex) : options_(std::move(options)), ex_(std::move(ex)) {
    if (options_.endpoints.empty()) throw error(errc::bad_option, "no endpoints");
    for (const auto& e : options_.endpoints) urls_.push_back(detail::parse_endpoint(e));
    if (options_.user.empty() != options_.password.empty() && !options_.user.empty())
      throw error(errc::bad_option, "a user needs a password");
    tls_ = detail::load_tls(options_, urls_);
  }

  [[nodiscard]] executor_type get_executor() const noexcept { return ex_; }
  /// Which endpoint requests go to now (an index into options().endpoints).
  [[nodiscard]] std::size_t current_endpoint() const noexcept { return current_; }
  [[nodiscard]] const client_options& options() const noexcept { return options_; }

  boost::asio::awaitable<range_result> range(const range_request& r) {
    co_return detail::parse_range(co_await call("/v3/kv/range", detail::range_json(r)));
  }

  /// Puts one key; returns the store's revision after it.
  boost::asio::awaitable<std::int64_t> put(std::string_view key, std::string_view value, std::int64_t lease_id = 0) {
    nlohmann::json j{{"key", detail::base64_encode(key)}, {"value", detail::base64_encode(value)}};
    if (lease_id) j["lease"] = std::to_string(lease_id);
    co_return detail::header_revision(co_await call("/v3/kv/put", j));
  }

  /// Deletes `key` (or [key, range_end)); returns how many keys went.
  boost::asio::awaitable<std::int64_t> delete_range(std::string_view key, std::string_view range_end = {}) {
    nlohmann::json j{{"key", detail::base64_encode(key)}};
    if (!range_end.empty()) j["range_end"] = detail::base64_encode(range_end);
    co_return detail::int64_field(co_await call("/v3/kv/deleterange", j), "deleted");
  }

  /// If every comparison holds, runs `success`, else `failure`; atomically, one revision.
  boost::asio::awaitable<txn_result> txn(const std::vector<txn_compare>& compare, const std::vector<txn_op>& success,
                                         const std::vector<txn_op>& failure = {}) {
    nlohmann::json j = nlohmann::json::object();
    auto& c = j["compare"] = nlohmann::json::array();
    for (const auto& x : compare) c.push_back(detail::compare_json(x));
    auto& s = j["success"] = nlohmann::json::array();
    for (const auto& x : success) s.push_back(detail::op_json(x));
    auto& f = j["failure"] = nlohmann::json::array();
    for (const auto& x : failure) f.push_back(detail::op_json(x));
    const auto res = co_await call("/v3/kv/txn", j);
    co_return detail::parse_txn(res, success, failure);
  }

  /// The answering member's status (/v3/maintenance/status): its id and the id of the leader it knows.
  boost::asio::awaitable<member_status> status() {
    const auto res = co_await call("/v3/maintenance/status", nlohmann::json::object());
    co_return detail::parse_status(res);
  }

  /// Compacts the key-value history up to `revision` (watches from older revisions are then canceled).
  boost::asio::awaitable<void> compact(std::int64_t revision, bool physical = false) {
    nlohmann::json j{{"revision", std::to_string(revision)}};
    if (physical) j["physical"] = true;
    co_await call("/v3/kv/compaction", j);
  }

  /// Asks the member this client talks to, which must be the leader, to hand leadership to the member
  /// `target_member_id` (decimal, as member_status gives it) and waits for the hand-off (maintenance, tests).
  boost::asio::awaitable<void> transfer_leadership(const std::string& target_member_id) {
    const nlohmann::json body{{"targetID", target_member_id}};
    co_await call("/v3/maintenance/transfer-leadership", body);
  }

  /// Grants a lease of `ttl_seconds`.
  boost::asio::awaitable<lease> lease_grant(std::int64_t ttl_seconds) {
    const nlohmann::json body{{"TTL", std::to_string(ttl_seconds)}};
    const auto res = co_await call("/v3/lease/grant", body);
    if (const auto* e = detail::field(res, "error"); e && e->is_string() && !e->get<std::string>().empty())
      throw error(errc::server_error, detail::quoted_message(e->get<std::string>()));
    co_return lease{detail::int64_field(res, "ID"), detail::int64_field(res, "TTL")};
  }

  /// Renews the lease once; returns its TTL. A lease that expired (TTL 0 in the answer) is lease_not_found.
  boost::asio::awaitable<lease> lease_keepalive(std::int64_t id) {
    const nlohmann::json request{{"ID", std::to_string(id)}};
    const auto body = request.dump();
    // the keepalive endpoint is a stream: a connection of its own, one message, then closed
    co_return co_await with_failover<lease>(
        [this, id, &body](std::shared_ptr<detail::connection> c) -> boost::asio::awaitable<lease> {
          const auto status = co_await c->open_stream("/v3/lease/keepalive", body, token_);
          auto line = co_await c->next_line(std::chrono::steady_clock::now() + options_.request_timeout);
          c->close();
          if (status != 200) detail::throw_gateway_error(status, line.value_or(""));
          if (!line) throw error(errc::timeout, "no keepalive answer");
          const auto j = tool_effects::detail::parse_json(*line, "etcd keepalive");
          const auto* result = detail::field(j, "result");
          if (!result) detail::throw_gateway_error(status, *line);
          lease l{detail::int64_field(*result, "ID"), detail::int64_field(*result, "TTL")};
          if (l.ttl <= 0) throw error(errc::lease_not_found, detail::str_cat("lease ", std::to_string(id), " expired"));
          co_return l;
        },
        ex_);
  }

  /// Revokes the lease: its keys are deleted.
  boost::asio::awaitable<void> lease_revoke(std::int64_t id) {
    const nlohmann::json body{{"ID", std::to_string(id)}};
    co_await call("/v3/lease/revoke", body);
  }

  /// Opens a watch on `key` (or [key, range_end)) from `start_revision` (0: from now) on the current
  /// endpoint, failing over like a request, and waits for the answer's header. Its connection lives on
  /// `stream_ex` (the client's executor by default).
  boost::asio::awaitable<async_watch> watch(std::string_view key, std::string_view range_end = {},
                                            std::int64_t start_revision = 0,
                                            std::optional<executor_type> stream_ex = std::nullopt) {
    nlohmann::json create{{"key", detail::base64_encode(key)}};
    if (!range_end.empty()) create["range_end"] = detail::base64_encode(range_end);
    if (start_revision) create["start_revision"] = std::to_string(start_revision);
    const nlohmann::json request{{"create_request", create}};
    const auto body = request.dump();
    co_return async_watch(co_await open_stream("/v3/watch", body, stream_ex ? *stream_ex : ex_));
  }

 private:
  // Runs `f(connection&)` on the client's connection (`fresh_on` empty) or on a new connection on that
  // executor, failing over to the next endpoint on unavailable / timeout, re-authenticating once on a token
  // etcd refused.
  template <class T, class F>
  boost::asio::awaitable<T> with_failover(F f, std::optional<executor_type> fresh_on = std::nullopt) {
    std::string last;
    bool reauthenticated = false;
    for (std::size_t attempt = 0; attempt < urls_.size(); ++attempt) {
      std::optional<error> failure;
      try {
        std::shared_ptr<detail::connection> c = conn_;
        if (fresh_on) {
          c = std::make_shared<detail::connection>(*fresh_on, urls_[current_], options_.request_timeout,
                                                   options_.max_response_bytes, tls_);
        } else if (!c) {
          c = conn_ = std::make_shared<detail::connection>(ex_, urls_[current_], options_.request_timeout,
                                                           options_.max_response_bytes, tls_);
        }
        if (!options_.user.empty() && token_.empty()) co_await authenticate(*c);
        co_return co_await f(c);
      } catch (const error& e) {
        failure = e;
      }
      if (failure->value() == errc::auth_failed && !token_.empty() && !reauthenticated) {
        // a token that expired (etcd's simple tokens live 5 minutes): authenticate again, once
        token_.clear();
        reauthenticated = true;
        --attempt;
        continue;
      }
      if (failure->value() != errc::unavailable && failure->value() != errc::timeout) throw *failure;
      last = failure->what();
      conn_.reset();
      token_.clear();
      current_ = (current_ + 1) % urls_.size();
    }
    throw error(errc::unavailable, detail::str_cat("no endpoint answered; last: ", last));
  }

  boost::asio::awaitable<nlohmann::json> call(const char* target, const nlohmann::json& body) {
    const auto text = body.dump();
    co_return co_await with_failover<nlohmann::json>(
        [&](const std::shared_ptr<detail::connection>& c) { return post_json(*c, target, text); });
  }

  // POSTs to a streaming target on a new connection on `ex` and returns it after a 200 header.
  boost::asio::awaitable<std::shared_ptr<detail::connection>> open_stream(const char* target, const std::string& body,
                                                                          executor_type ex) {
    co_return co_await with_failover<std::shared_ptr<detail::connection>>(
        [this, target, &body](std::shared_ptr<detail::connection> c)
            -> boost::asio::awaitable<std::shared_ptr<detail::connection>> {
          const auto status = co_await c->open_stream(target, body, token_);
          if (status != 200) {
            const auto line = co_await c->next_line(std::chrono::steady_clock::now() + options_.request_timeout);
            detail::throw_gateway_error(status, line.value_or(""));
          }
          co_return c;
        },
        ex);
  }

  boost::asio::awaitable<nlohmann::json> post_json(detail::connection& c, const char* target, const std::string& text) {
    auto [status, res] = co_await c.post(target, text, token_);
    if (status != 200) detail::throw_gateway_error(status, res);
    co_return tool_effects::detail::parse_json(res, "etcd response");
  }

  boost::asio::awaitable<void> authenticate(detail::connection& c) {
    const nlohmann::json request{{"name", options_.user}, {"password", options_.password}};
    const auto body = request.dump();
    const auto res = co_await post_json(c, "/v3/auth/authenticate", body);
    const auto* t = detail::field(res, "token");
    if (!t || !t->is_string() || t->get_ref<const std::string&>().empty())
      throw error(errc::auth_failed, "no token in the authenticate answer");
    token_ = detail::checked_token(t->get<std::string>());
  }

  client_options options_;
  executor_type ex_;
  std::vector<net::url> urls_;
  net::tls_context tls_;  // loaded once, for every https endpoint
  std::shared_ptr<detail::connection> conn_;
  std::size_t current_ = 0;
  std::string token_;
};

}  // namespace tool_effects::etcd

#endif  // TOOL_EFFECTS_ETCD_ASYNC_CLIENT_HPP
