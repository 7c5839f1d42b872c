// tool_effects/mcp/protocol/detail/session.hpp — internal: the role-neutral JSON-RPC
// session of MCP (`mcp_session`), what the TypeScript SDK's shared/protocol.ts
// is: ids and pending requests, timeouts, cancellation and progress in both
// directions, routing of the peer's requests and notifications to handlers
// registered by method, the bounded parse and the bad-message handling. It
// carries its messages over one `mcp_transport` (mcp/protocol/detail/transport.hpp).
// The client (mcp/client/detail/connection.hpp) is one role on it; the server
// (mcp/server.hpp) is the other, over stdio and over each HTTP session or
// stateless request alike. See docs/mcp-server.md ("How a request travels").
//
// The API a role uses (everything on the session's strand unless said):
//
//   auto s = std::make_shared<mcp_session>(strand, settings);  // mcp_session_settings: name, bounds, counters
//   s->on_request("tools/call", [](mcp_request_context ctx) -> asio::awaitable<nlohmann::json> {
//     co_await ctx.progress(0.5, 1.0, "half");                 // notifications/progress, if the peer asked
//     nlohmann::json r = co_await ctx.request("elicitation/create", params, 30s);  // a request to the peer
//     if (bad) throw mcp_handler_error(-32602, "Invalid params: ...");  // an error response
//     co_return nlohmann::json{{"content", ...}};                // the result response
//   });                       // runs on a strand of its own, bounded in number and time; cancelled by the
//                             // peer's notifications/cancelled (its awaitable operations end with
//                             // operation_aborted) and when the session ends
//   s->on_notification("notifications/initialized", [](const nlohmann::json& params) { ... });
//   s->on_other_notification([](const std::string& method, const nlohmann::json& params) { ... });
//   s->start(transport);                                       // mcp_transport: starts carrying messages
//   nlohmann::json r = co_await mcp_session::request(s, "ping", {}, 5s);  // result, or throws mcp_rpc_error,
//                                                              // mcp_transient_error (timeout: cancellation sent)
//   s->notify("notifications/tools/list_changed", nullptr);
//   s->set_protocol_version("2025-11-25");                     // what the handshake settled on
//   co_await mcp_session::shutdown(s, why);                    // transport's clean end; pending requests fail
//
// A ping request of the peer's is answered with {} unless a handler is
// registered for "ping"; any other method without a handler gets -32601.
#ifndef TOOL_EFFECTS_MCP_PROTOCOL_DETAIL_SESSION_HPP
#define TOOL_EFFECTS_MCP_PROTOCOL_DETAIL_SESSION_HPP

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <tool_effects/detail/str_cat.hpp>
#include <tool_effects/json/error.hpp>
#include <tool_effects/mcp/protocol/detail/handler_runner.hpp>
#include <tool_effects/mcp/protocol/detail/session_settings.hpp>
#include <tool_effects/mcp/protocol/detail/transport.hpp>
#include <tool_effects/mcp/protocol/detail/wire.hpp>
#include <tool_effects/mcp/errors.hpp>
#include <tool_effects/mcp/versions.hpp>

namespace tool_effects::detail {

// The JSON-RPC error code of UnsupportedProtocolVersionError (2026-07-28):
// `data.supported` lists the peer's versions.
inline constexpr int mcp_unsupported_version_code = -32022;

// The first of `ours` (in our order of preference) that `supported` (a
// peer's list: DiscoverResult.supportedVersions, or the data.supported of
// an UnsupportedProtocolVersionError) names; with `modern_only`, only modern
// ones. Anything but an array of strings names nothing.
inline std::optional<std::string> mcp_pick_version(const nlohmann::json& supported, const std::vector<std::string>& ours,
                                                   bool modern_only) {
  if (!supported.is_array()) return std::nullopt;
  for (const auto& v : ours) {
    if (modern_only && !mcp_version_is_modern(v)) continue;
    for (const auto& s : supported)
      if (s.is_string() && s.get_ref<const std::string&>() == v) return v;
  }
  return std::nullopt;
}

// At most `max` bytes of `s` (cut at a UTF-8 character's start, "..." added).
inline std::string mcp_cut(std::string_view s, std::size_t max) {
  return s.size() > max ? str_cat(utf8_prefix(s, max), "...") : std::string(s);
}

template <class Unused = void>
struct basic_mcp_request_context;
using mcp_request_context = basic_mcp_request_context<>;
// A handler of the peer's request `method`: its result, or throws
// (mcp_handler_error: that error response; anything else: -32603). The
// function is called on the session's strand; the awaitable it returns runs
// on a strand of its own (so a synchronous handler blocks no session).
using mcp_request_handler = std::function<asio::awaitable<nlohmann::json>(mcp_request_context)>;
using mcp_notification_handler = std::function<void(const nlohmann::json& params)>;

// One JSON-RPC session over one transport. Everything but the constructor
// and what mcp_request_context does runs on the session's strand.
template <class Unused>
class basic_mcp_session : public std::enable_shared_from_this<basic_mcp_session<Unused>> {
 public:
  basic_mcp_session(mcp_strand strand, mcp_session_settings settings)
      : strand_(std::move(strand)), settings_(std::move(settings)), name_(settings_.name) {}
  basic_mcp_session(const basic_mcp_session&) = delete;
  basic_mcp_session& operator=(const basic_mcp_session&) = delete;
  // The transport does not outlive the session.
  ~basic_mcp_session() {
    if (transport_) transport_->stop();
  }

  // Starts carrying messages over `t` (throws what t->start throws).
  void start(std::shared_ptr<mcp_transport> t) {
    transport_ = std::move(t);
    transport_->start(this->shared_from_this());
  }

  // Handlers, registered before start (a later one replaces an earlier one).
  void on_request(std::string method, mcp_request_handler h) {
    requests_[std::move(method)] = std::make_shared<const mcp_request_handler>(std::move(h));
  }
  // A role's one method table: `h` serves every request whose method `serves` accepts and on_request did not
  // register (the role's table decides; nothing is registered per method for each session).
  void on_requests(std::function<bool(std::string_view method)> serves, mcp_request_handler h) {
    table_serves_ = std::move(serves);
    table_handler_ = std::make_shared<const mcp_request_handler>(std::move(h));
  }
  void on_notification(std::string method, mcp_notification_handler h) {
    notifications_[std::move(method)] = std::move(h);
  }
  // Every notification no handler of on_notification takes.
  void on_other_notification(std::function<void(const std::string&, const nlohmann::json&)> h) {
    other_notification_ = std::move(h);
  }
  // With `ignore`, the peer's requests are dropped unanswered (counted as ignored messages).
  void ignore_requests(bool ignore) noexcept { ignore_requests_ = ignore; }

  [[nodiscard]] const mcp_strand& strand() const noexcept { return strand_; }
  [[nodiscard]] const std::shared_ptr<mcp_transport>& transport() const noexcept { return transport_; }
  [[nodiscard]] bool alive() const noexcept { return !dead_; }
  [[nodiscard]] std::exception_ptr error() const { return dead_ ? dead_error() : nullptr; }
  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  void set_name(std::string n) { name_ = std::move(n); }
  [[nodiscard]] const mcp_session_counters& counters() const noexcept { return *settings_.counters; }
  // The version the handshake settled on ("" before).
  [[nodiscard]] const std::string& protocol_version() const noexcept { return version_; }
  void set_protocol_version(std::string v) { version_ = std::move(v); }
  // The handshake settled on `version`: recorded and told to the transport.
  void initialized(const std::string& version) {
    version_ = version;
    if (transport_) transport_->initialized(version);
  }

  // Sends a request and waits for its response (its result), an error
  // response (mcp_rpc_error), the timeout (cancellation sent unless `meta` is
  // modern over a stateless transport or the method is initialize;
  // mcp_transient_error timeout) or the end of the session (its error).
  static asio::awaitable<nlohmann::json> request(std::shared_ptr<basic_mcp_session> self, std::string method,
                                                 nlohmann::json params, std::chrono::milliseconds timeout,
                                                 mcp_outgoing meta = {}) {
    co_return co_await request_of(std::move(self), method, &params, timeout, std::move(meta));
  }

  // `request` with the params read where they are (null: none): they must outlive the co_await, as the
  // caller's own message does. The request's text is written around the params' text (mcp_request_text):
  // a client's arguments are neither copied nor wrapped in a new message object.
  static asio::awaitable<nlohmann::json> request_of(std::shared_ptr<basic_mcp_session> self, const std::string& method,
                                                    const nlohmann::json* params, std::chrono::milliseconds timeout,
                                                    mcp_outgoing meta = {}) {
    if (self->dead_) std::rethrow_exception(self->dead_error());
    const std::int64_t id = self->next_id_++;
    auto p = std::make_shared<pending_request>(self->strand_);
    self->pending_.emplace(id, p);
    if (meta.method.empty()) meta.method = method;
    const bool modern = meta.modern;
    self->send(mcp_request_text(id, method, params), id, std::move(meta));
    if (!p->done) {
      p->timer.expires_after(timeout);
      (void)co_await p->timer.async_wait(asio::as_tuple(asio::use_awaitable));
    }
    if (!p->done) {
      self->pending_.erase(id);
      ++self->settings_.counters->timeouts;
      const bool stateless = self->transport_ && modern && self->transport_->modern_stateless();
      if (self->transport_) self->transport_->abandon(id);
      // initialize must not be cancelled (specification); over stateless HTTP a
      // modern request is cancelled by closing its stream (abandon), no notification.
      const bool notice = method != "initialize" && !stateless;
      if (!self->dead_ && notice) self->notify("notifications/cancelled", {{"requestId", id}, {"reason", "timeout"}});
      throw mcp_transient_error(
          mcp_error_kind::timeout, self->name_,
          str_cat(method, " (request ", std::to_string(id), ") got no response within ", std::to_string(timeout.count()),
                  notice      ? " ms; cancellation sent"
                  : stateless ? " ms; its stream closed (cancellation)"
                              : " ms (initialize is not cancelled)",
                  self->diagnostics()));
    }
    if (p->error) std::rethrow_exception(p->error);
    co_return std::move(*p->result);
  }

  // Sends a notification (no response).
  void notify(const std::string& method, nlohmann::json params, mcp_outgoing meta = {}) {
    if (dead_) return;
    nlohmann::json msg = {{"jsonrpc", "2.0"}, {"method", method}};
    if (!params.is_null()) msg["params"] = std::move(params);
    if (meta.method.empty()) meta.method = method;
    send(mcp_dump(msg), 0, std::move(meta));
  }

  // Sends a notification and, over a transport that acknowledges them (HTTP:
  // its 202), waits until the peer accepted it: a refusal is the transport's
  // error, no answer within `timeout` a timeout. Otherwise it is written and
  // not awaited (nothing acknowledges it).
  static asio::awaitable<void> notify_accepted(std::shared_ptr<basic_mcp_session> self, std::string method,
                                               nlohmann::json params, mcp_outgoing meta,
                                               std::chrono::milliseconds timeout) {
    if (self->dead_) std::rethrow_exception(self->dead_error());
    if (!self->transport_ || !self->transport_->acknowledges_notifications()) {
      self->notify(method, std::move(params), std::move(meta));
      co_return;
    }
    nlohmann::json msg = {{"jsonrpc", "2.0"}, {"method", method}};
    if (!params.is_null()) msg["params"] = std::move(params);
    const std::int64_t id = -(self->next_id_++);  // negative: no id on the wire, the transport reports the acceptance
    auto p = std::make_shared<pending_request>(self->strand_);
    self->pending_.emplace(id, p);
    meta.method = method;
    self->send(mcp_dump(msg), id, std::move(meta));
    if (!p->done) {
      p->timer.expires_after(timeout);
      (void)co_await p->timer.async_wait(asio::as_tuple(asio::use_awaitable));
    }
    if (!p->done) {
      self->pending_.erase(id);
      if (self->transport_) self->transport_->abandon(id);
      throw mcp_transient_error(mcp_error_kind::timeout, self->name_,
                                str_cat(method, " was not accepted within ", std::to_string(timeout.count()), " ms"));
    }
    if (p->error) std::rethrow_exception(p->error);
  }

  // For a transport: one message (or batch) received. It is parsed by the
  // library's bounded parse (detail::parse_json: at most max_json_depth
  // levels, no duplicate keys), so that no value deeper than that ever exists
  // here. A text that is JSON but not admitted is a bad message: it fails the
  // request its id answers with protocol_error (a request of the peer's gets
  // an error reply; no id: ignored); the session lives on. A text that is
  // not JSON at all ends the session (protocol_error for every request).
  // Calls `f` on the strand once no request of the peer's is being answered:
  // at once when none is, else after the last one's answer was handed to the
  // transport (or it ended without one: cancelled, or the session ended).
  // Replaces an earlier `f` not yet called. (A transport whose input ended
  // waits with it for the answers still to come.)
  void when_requests_answered(std::function<void()> f) {
    if (jobs_.empty()) return f();
    when_idle_ = std::move(f);
  }

  // For a transport that parsed the message itself (within its own bounds): one message, with what the transport
  // knows of it (null: nothing).
  void deliver(nlohmann::json message, std::shared_ptr<const mcp_incoming> incoming) {
    if (dead_) return;
    handle_message(message, std::string_view(), incoming);
  }

  void deliver(std::string_view line) {
    if (dead_) return;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.remove_suffix(1);
    if (line.empty()) return;
    nlohmann::json j;
    try {
      j = parse_json(line, "");
    } catch (const json_error& e) {
      return on_bad_message(line, e.what());
    }
    if (j.is_array()) {  // a batch (2025-03-26)
      for (auto& m : j)
        if (!handle_message(m, line, nullptr) || dead_) return;
      return;
    }
    handle_message(j, line, nullptr);
  }
  // For a transport: is request `id` still waiting for its response?
  [[nodiscard]] bool pending(std::int64_t id) const { return pending_.count(id) != 0; }
  // For a transport: request `id` ends with `e` (the session lives on).
  void fail_request(std::int64_t id, std::exception_ptr e) {
    const auto it = pending_.find(id);
    if (it == pending_.end()) return;
    auto p = it->second;
    pending_.erase(it);
    p->finish(std::move(e));
  }
  // For a transport: the notification `id` (negative, notify_accepted) was accepted.
  void settle(std::int64_t id) {
    const auto it = pending_.find(id);
    if (it == pending_.end()) return;
    auto p = it->second;
    pending_.erase(it);
    p->result = nullptr;
    p->finish(nullptr);
  }

  // Fails every pending request with `e` and stops the transport at once.
  void fail(std::exception_ptr e) {
    if (!mark_dead(std::move(e))) return;
    if (transport_) transport_->stop();
  }

  // Clean end: every pending request fails with `why` (null: closed, "the session ended"), then the transport's shutdown.
  static asio::awaitable<void> shutdown(std::shared_ptr<basic_mcp_session> self, std::exception_ptr why) {
    if (!self->mark_dead(std::move(why))) co_return;
    if (auto t = self->transport_) co_await t->shutdown();
  }

  // What an error adds about the peer (its last stderr lines), or "".
  [[nodiscard]] std::string diagnostics() const { return transport_ ? transport_->diagnostics() : std::string(); }

  // Sends an error response to the peer's request `id`.
  void reply_error(const nlohmann::json& id, int code, const std::string& message, nlohmann::json data = nullptr) {
    if (dead_) return;
    nlohmann::json reply = {{"jsonrpc", "2.0"}, {"id", id}};
    reply["error"] = {{"code", code}, {"message", message}};
    if (!data.is_null()) reply["error"]["data"] = std::move(data);
    mcp_outgoing meta;
    meta.related_id = id;
    meta.error_code = code;
    send(mcp_dump(reply), 0, std::move(meta));
  }

 private:
  template <class>
  friend struct basic_mcp_request_context;

  // One request of ours waiting for its response.
  struct pending_request {
    explicit pending_request(const mcp_strand& s) : timer(s) {}
    asio::steady_timer timer;
    std::optional<nlohmann::json> result;
    std::exception_ptr error;
    bool done = false;
    void finish(std::exception_ptr e) {
      error = std::move(e);
      done = true;
      timer.cancel();
    }
  };

  // One request of the peer's being served.
  struct job {
    explicit job(const mcp_strand& s) : timer(s) {}
    asio::steady_timer timer;
    std::optional<nlohmann::json> result;
    std::optional<std::tuple<int, std::string, nlohmann::json>> error;
    std::shared_ptr<mcp_running_handler> running;
    bool done = false;
    bool cancelled = false;
  };

  void send(std::string text, std::int64_t request_id, mcp_outgoing meta) {
    if (dead_ || !transport_) return;
    transport_->send(std::move(text), request_id, std::move(meta));
  }

  // Marks the session dead and fails every pending request; false if it already was.
  bool mark_dead(std::exception_ptr e) {
    if (dead_) return false;
    dead_ = true;
    dead_error_ = std::move(e);
    for (auto& [k, j] : jobs_) {  // nothing is answered any more
      j->cancelled = true;
      j->timer.cancel();
    }
    auto pending = std::move(pending_);
    pending_.clear();
    for (auto& [id, p] : pending) p->finish(dead_error());
    return true;
  }
  // Why the session is dead: the error it died of, else (a clean end) closed, "the session ended", made when
  // first asked for (most sessions that end, e.g. each stateless HTTP request's, have nobody to tell).
  const std::exception_ptr& dead_error() const {
    if (!dead_error_)
      dead_error_ = std::make_exception_ptr(mcp_error(mcp_error_kind::closed, name_, "the session ended"));
    return dead_error_;
  }

  void protocol_error(const std::string& what, std::string_view line) {
    fail(std::make_exception_ptr(mcp_transient_error(mcp_error_kind::protocol_error, name_,
                                                     str_cat(what, ": \"", quote_text(line), "\"", diagnostics()))));
  }

  // A text that is JSON but was refused by the bounded parse (`why`).
  void on_bad_message(std::string_view line, const std::string& why) {
    const mcp_envelope env = mcp_scan_envelope(line);
    if (!env.json) return protocol_error("its output is not JSON", line);
    if (!env.id) {
      ++settings_.counters->ignored_messages;
      return;
    }
    if (env.method) {  // a request of the peer's: refused, the session lives on
      reply_error(*env.id, -32600, "Invalid Request: " + why);
      return;
    }
    const auto it = env.id->is_number_integer() && env.id->get<std::int64_t>() > 0
                        ? pending_.find(env.id->get<std::int64_t>())
                        : pending_.end();
    if (it == pending_.end()) {
      ++settings_.counters->unknown_responses;
      return;
    }
    auto p = it->second;
    pending_.erase(it);
    p->finish(std::make_exception_ptr(mcp_transient_error(
        mcp_error_kind::protocol_error, name_,
        str_cat("its response to request ", std::to_string(env.id->get<std::int64_t>()), " was refused: ", why, " (",
                std::to_string(line.size()), " bytes)"))));
  }

  // False when the message was a protocol error (the session is then dead).
  bool handle_message(nlohmann::json& j, std::string_view line, const std::shared_ptr<const mcp_incoming>& incoming) {
    const auto version = j.is_object() ? j.find("jsonrpc") : j.end();
    if (!j.is_object() || version == j.end() || !version->is_string() || version->get_ref<const std::string&>() != "2.0") {
      protocol_error("its output is not a JSON-RPC 2.0 message", line);
      return false;
    }
    const auto method = j.find("method");
    const auto id = j.find("id");
    if (method != j.end()) {
      if (!method->is_string()) {
        protocol_error("a message's method is not a string", line);
        return false;
      }
      const auto p = j.find("params");
      if (id != j.end()) {  // the message is the caller's own, read no more: its params move to the handler
        on_peer_request(*id, method->get<std::string>(), p != j.end() ? std::move(*p) : nlohmann::json(), incoming);
      } else {
        static const nlohmann::json no_params;
        on_peer_notification(method->get<std::string>(), p != j.end() ? *p : no_params);
      }
      return true;
    }
    if (id != j.end() && (j.contains("result") || j.contains("error"))) {
      on_response(*id, j);
      return true;
    }
    protocol_error("a message is neither a request, a notification nor a response", line);
    return false;
  }

  void on_response(const nlohmann::json& id, nlohmann::json& j) {
    if (!id.is_number_integer() || id.get<std::int64_t>() <= 0) {  // ours are positive (negative: notify_accepted)
      ++settings_.counters->unknown_responses;
      return;
    }
    const auto it = pending_.find(id.get<std::int64_t>());
    if (it == pending_.end()) {  // late (timed out) or invented: ignored
      ++settings_.counters->unknown_responses;
      return;
    }
    auto p = it->second;
    pending_.erase(it);
    if (const auto e = j.find("error"); e != j.end()) {
      int code = 0;
      std::string message = "(no message)";
      nlohmann::json data = nullptr;
      if (e->is_object()) {
        if (const auto c = e->find("code"); c != e->end() && c->is_number_integer()) code = c->get<int>();
        if (const auto m = e->find("message"); m != e->end() && m->is_string()) message = m->get<std::string>();
        if (const auto d = e->find("data"); d != e->end()) data = *d;
      }
      if (transport_) {  // a peer that echoes what it was sent (a token, an API key) into an error, in a 200
        message = transport_->redact(std::move(message));
        if (!data.is_null()) {  // data that quotes a secret is kept as its redacted text
          const std::string dumped = data.dump();
          if (std::string r = transport_->redact(dumped); r != dumped) data = std::move(r);
        }
      }
      p->finish(std::make_exception_ptr(mcp_rpc_error(name_, code, message, std::move(data))));
      return;
    }
    p->result = std::move(j["result"]);
    p->finish(nullptr);
  }

  void on_peer_notification(const std::string& method, const nlohmann::json& params) {
    try {
      if (method == "notifications/progress" && settings_.progress && settings_.progress->route(params)) return;
      if (method == "notifications/cancelled" && cancel_job(params)) return;
      if (const auto h = notifications_.find(method); h != notifications_.end()) {
        h->second(params);
        return;
      }
      if (other_notification_) other_notification_(method, params);
    } catch (...) {  // a handler's failure is not the session's
    }
  }

  // notifications/cancelled of a request of the peer's in flight: its handler
  // is cancelled, and it gets no answer.
  bool cancel_job(const nlohmann::json& params) {
    const auto r = params.is_object() ? params.find("requestId") : params.end();
    if (r == params.end()) return false;
    const auto it = jobs_.find(mcp_dump(*r));
    if (it == jobs_.end()) return false;
    it->second->cancelled = true;
    it->second->timer.cancel();
    return true;
  }

  void on_peer_request(const nlohmann::json& id, const std::string& method, nlohmann::json params,
                       const std::shared_ptr<const mcp_incoming>& incoming) {
    if (ignore_requests_) {
      ++settings_.counters->ignored_messages;
      return;
    }
    std::shared_ptr<const mcp_request_handler> h;
    if (const auto r = requests_.find(method); r != requests_.end()) h = r->second;
    else if (table_handler_ && table_serves_(method)) h = table_handler_;
    if (!h) {
      if (method == "ping") {
        nlohmann::json reply = {{"jsonrpc", "2.0"}, {"id", id}, {"result", nlohmann::json::object()}};
        mcp_outgoing meta;
        meta.related_id = id;
        send(mcp_dump(reply), 0, std::move(meta));
        return;
      }
      // a flood of 1 MB names must not become 1 MB replies
      reply_error(id, -32601, str_cat("Method not found: ", quote_text(method, 200)));
      return;
    }
    const auto& busy = settings_.busy;
    if (busy->load() >= std::max<std::size_t>(settings_.max_handler_requests, 1)) {
      reply_error(id, -32000,
                  str_cat(method, ": too many requests in flight (", std::to_string(busy->load()),
                          " handlers are running; options.max_handler_requests)"));
      return;
    }
    std::string key = mcp_dump(id);
    if (jobs_.count(key)) {  // a second request under the id of one in flight
      reply_error(id, -32600, "Invalid Request: the id of a request in flight");
      return;
    }
    // Counted and registered now, not when the coroutine first runs: a burst
    // of requests read in one go must see each other.
    auto j = std::make_shared<job>(strand_);
    jobs_.emplace(key, j);
    busy->fetch_add(1);
    asio::co_spawn(
        strand_,
        serve(this->shared_from_this(), id, std::move(key), method, std::move(params), std::move(h), j, incoming),
        asio::detached);
  }

  static asio::awaitable<void> serve(std::shared_ptr<basic_mcp_session> self, nlohmann::json id, std::string key,
                                     std::string method, nlohmann::json params,
                                     std::shared_ptr<const mcp_request_handler> handler,
                                     std::shared_ptr<job> j, std::shared_ptr<const mcp_incoming> incoming);
  void answer(const nlohmann::json& id, const std::string& method, job& j, std::chrono::milliseconds timeout);

  mcp_strand strand_;
  mcp_session_settings settings_;
  std::string name_;
  std::shared_ptr<mcp_transport> transport_;
  std::unordered_map<std::string, std::shared_ptr<const mcp_request_handler>> requests_;
  std::function<bool(std::string_view)> table_serves_;
  std::shared_ptr<const mcp_request_handler> table_handler_;
  std::unordered_map<std::string, mcp_notification_handler> notifications_;
  std::function<void(const std::string&, const nlohmann::json&)> other_notification_;
  bool ignore_requests_ = false;
  bool dead_ = false;
  mutable std::exception_ptr dead_error_;  // dead_error()
  std::string version_;
  std::int64_t next_id_ = 1;
  std::unordered_map<std::int64_t, std::shared_ptr<pending_request>> pending_;
  std::unordered_map<std::string, std::shared_ptr<job>> jobs_;  // by the id's compact JSON
  std::function<void()> when_idle_;
};

// What a request handler is given: the request, and what it may do while it
// runs (from its own strand; each hops to the session's strand).
template <class Unused>
struct basic_mcp_request_context {
  nlohmann::json id;
  std::string method;
  nlohmann::json params;  // null when the request had none
  std::weak_ptr<basic_mcp_session<Unused>> session;
  std::shared_ptr<const mcp_incoming> incoming{};  // what the transport knew of the request (null: nothing)

  // The request's progress token (params._meta.progressToken), or null.
  [[nodiscard]] nlohmann::json progress_token() const {
    const auto m = params.is_object() ? params.find("_meta") : params.end();
    if (m == params.end() || !m->is_object()) return nullptr;
    const auto t = m->find("progressToken");
    return t != m->end() && (t->is_string() || t->is_number_integer()) ? *t : nlohmann::json();
  }

  // Sends notifications/progress for this request, when the peer asked for
  // progress (a token) and the session lives; else nothing.
  asio::awaitable<void> progress(double progress, std::optional<double> total = std::nullopt,
                                 std::optional<std::string> message = std::nullopt) const {
    const nlohmann::json token = progress_token();
    auto s = session.lock();
    if (token.is_null() || !s) co_return;
    nlohmann::json p = {{"progressToken", token}, {"progress", progress}};
    if (total) p["total"] = *total;
    if (message) p["message"] = *message;
    mcp_outgoing meta;
    meta.related_id = id;
    asio::post(s->strand(), [s, p = std::move(p), meta = std::move(meta)]() mutable {
      s->notify("notifications/progress", std::move(p), std::move(meta));
    });
  }

  // Sends a request to the peer (e.g. elicitation/create of a server's tool)
  // and waits for its response, as mcp_session::request; fails with
  // mcp_error(closed) when the session is gone.
  asio::awaitable<nlohmann::json> request(std::string m, nlohmann::json p, std::chrono::milliseconds timeout) const {
    auto s = session.lock();
    if (!s) throw mcp_error(mcp_error_kind::closed, "", "the session ended");
    mcp_outgoing meta;
    meta.related_id = id;
    co_return co_await asio::co_spawn(
        s->strand(), basic_mcp_session<Unused>::request(s, std::move(m), std::move(p), timeout, std::move(meta)),
        asio::use_awaitable);
  }
};

template <class Unused>
asio::awaitable<void> basic_mcp_session<Unused>::serve(std::shared_ptr<basic_mcp_session> self, nlohmann::json id,
                                                       std::string key, std::string method, nlohmann::json params,
                                                       std::shared_ptr<const mcp_request_handler> h,
                                                       std::shared_ptr<job> j,
                                                       std::shared_ptr<const mcp_incoming> incoming) {
  // The handler is called here, on the strand (a function that is not a
  // coroutine may read the role's strand-bound state and make the coroutine);
  // the coroutine it returns runs on a strand of its own.
  // The handler object lives until its coroutine ends (a coroutine lambda reads its captures through it),
  // not only as long as this coroutine: a cancelled or late handler runs on after the request was answered.
  auto made = std::make_shared<std::optional<asio::awaitable<nlohmann::json>>>();
  try {
    made->emplace((*h)(mcp_request_context{id, method, std::move(params), self, std::move(incoming)}));
  } catch (...) {
    made->emplace([](std::exception_ptr e) -> asio::awaitable<nlohmann::json> {
      std::rethrow_exception(e);
      co_return nlohmann::json();
    }(std::current_exception()));
  }
  mcp_handler_work_fn work = [made]() { return std::move(**made); };
  j->running = mcp_start_handler(
      self->strand_, self->settings_.handler_executor, work,
      [j, busy = self->settings_.busy, h](std::exception_ptr e, nlohmann::json r) {
        busy->fetch_sub(1);
        if (j->done) return;
        if (e) {
          try {
            std::rethrow_exception(e);
          } catch (const mcp_handler_error& x) {
            j->error.emplace(x.code(), x.what(), x.data());
          } catch (const json_error& x) {
            j->error.emplace(
                -32603, str_cat("Internal error: the handler's answer is invalid: ", mcp_cut(x.what(), 1000)), nullptr);
          } catch (const std::exception& x) {
            j->error.emplace(-32603, str_cat("Internal error: the handler failed: ", mcp_cut(x.what(), 1000)), nullptr);
          } catch (...) {
            j->error.emplace(-32603, "Internal error: the handler failed", nullptr);
          }
        } else {
          j->result = std::move(r);
        }
        j->done = true;
        j->timer.cancel();
      });
  const auto timeout = self->settings_.handler_timeout;
  if (!j->cancelled && !self->dead_) {  // (either may have come before this coroutine first ran)
    j->timer.expires_after(timeout);
    (void)co_await j->timer.async_wait(asio::as_tuple(asio::use_awaitable));
  }
  self->jobs_.erase(key);
  if (!j->done) mcp_cancel_handler(j->running);  // late, cancelled, or the session ended
  self->answer(id, method, *j, timeout);
  if (self->jobs_.empty())
    if (auto f = std::exchange(self->when_idle_, {})) f();
}

// The answer to the peer's request `id` once its job `j` ended (none when it
// was cancelled or the session ended).
template <class Unused>
void basic_mcp_session<Unused>::answer(const nlohmann::json& id, const std::string& method, job& j,
                                       std::chrono::milliseconds timeout) {
  if (dead_) return;
  if (j.cancelled) {
    if (transport_) transport_->unanswered(id);
    return;
  }
  if (!j.done) {
    j.done = true;  // a late answer is dropped
    reply_error(id, -32603,
                str_cat("Internal error: ", method, ": the handler gave no answer within ", std::to_string(timeout.count()),
                        " ms (options.handler_timeout)"));
    return;
  }
  if (j.error) {
    auto& [code, message, data] = *j.error;
    reply_error(id, code, message, std::move(data));
    return;
  }
  std::string line = mcp_result_text(id, *j.result);
  if (line.size() > settings_.max_message_bytes) {
    reply_error(id, -32603,
                str_cat("Internal error: ", method, ": the handler's answer has ", std::to_string(line.size()),
                        " bytes, more than options.max_line_bytes"));
    return;
  }
  mcp_outgoing meta;
  meta.related_id = id;
  send(std::move(line), 0, std::move(meta));
}

}  // namespace tool_effects::detail

#endif  // TOOL_EFFECTS_MCP_PROTOCOL_DETAIL_SESSION_HPP
