// tool_effects/mcp/client/detail/connection.hpp — internal to
// <tool_effects/mcp/client.hpp>: the client role on the role-neutral session
// (mcp/protocol/detail/session.hpp): one connection to a server (`mcp_connection`:
// its session, the handlers that answer the server's requests, the
// per-request `_meta` of a modern version, re-listing tools on a header
// mismatch, the `subscriptions/listen` of a modern one, screening tools for x-mcp-header through `mcp_tool_param_screen`), and the settings a client's
// connections share (`mcp_shared`). The transport comes from
// `mcp_shared::make_transport`: the child process's stdio
// (transport/detail/stdio_child.hpp) or Streamable HTTP (transport/detail/http_client.hpp). See
// docs/mcp-client.md ("The client").
#ifndef TOOL_EFFECTS_MCP_CLIENT_DETAIL_CONNECTION_HPP
#define TOOL_EFFECTS_MCP_CLIENT_DETAIL_CONNECTION_HPP

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <tool_effects/mcp/client/options.hpp>
#include <tool_effects/detail/str_cat.hpp>
#include <tool_effects/mcp/client/detail/handlers.hpp>
#include <tool_effects/mcp/protocol/detail/session.hpp>
#include <tool_effects/mcp/protocol/detail/transport.hpp>
#include <tool_effects/mcp/protocol/detail/wire.hpp>
#include <tool_effects/mcp/errors.hpp>

namespace tool_effects {

namespace detail {

// The last lines of the server's stderr; shared by the connections of a client.
class mcp_stderr_ring {
 public:
  explicit mcp_stderr_ring(std::size_t cap) : cap_(cap) {}
  void push(std::string line) {
    const std::lock_guard lock(m_);
    if (cap_ == 0) return;
    if (lines_.size() == cap_) lines_.pop_front();
    lines_.push_back(std::move(line));
  }
  [[nodiscard]] std::vector<std::string> lines() const {
    const std::lock_guard lock(m_);
    return {lines_.begin(), lines_.end()};
  }
  // "; last stderr lines: | a | b", or "" when there are none.
  [[nodiscard]] std::string quote(std::size_t n = 5) const {
    const auto all = lines();
    if (all.empty()) return {};
    std::string out = "; last stderr lines:";
    for (std::size_t i = all.size() > n ? all.size() - n : 0; i < all.size(); ++i) {
      out += " | ";
      out += quote_text(all[i], 200);
    }
    return out;
  }

 private:
  mutable std::mutex m_;
  std::size_t cap_;
  std::deque<std::string> lines_;
};

// What initialize answered and how often the server was restarted: written
// on the client's strand when (re)initialising, read from any thread
// (server_info(), protocol_version(), restarts()) without a round trip.
class mcp_info_snapshot {
 public:
  void set(nlohmann::json server_info, std::string protocol_version) {
    const std::lock_guard lock(m_);
    server_info_ = std::move(server_info);
    protocol_version_ = std::move(protocol_version);
  }
  void set_restarts(std::size_t n) {
    const std::lock_guard lock(m_);
    restarts_ = n;
  }
  [[nodiscard]] nlohmann::json server_info() const {
    const std::lock_guard lock(m_);
    return server_info_;
  }
  [[nodiscard]] std::string protocol_version() const {
    const std::lock_guard lock(m_);
    return protocol_version_;
  }
  [[nodiscard]] std::size_t restarts() const {
    const std::lock_guard lock(m_);
    return restarts_;
  }

 private:
  mutable std::mutex m_;
  nlohmann::json server_info_;
  std::string protocol_version_;
  std::size_t restarts_ = 0;
};

struct mcp_shared;

// The client's x-mcp-header bookkeeping (2026-07-28 over HTTP), implemented
// in param_headers.hpp.
class mcp_tool_param_screen {
 public:
  virtual ~mcp_tool_param_screen() = default;
  // A modern tools/list result (`first`: its first page, which forgets the
  // annotations of earlier listings): a tool whose x-mcp-header annotations
  // break the specification's constraints is left out (a warning to
  // o.on_log); the valid ones are kept for the calls.
  virtual void screen(nlohmann::json& result, bool first, const mcp_client_options& o) = 0;
  // The Mcp-Param values of a call of `tool` with `arguments`: (name after "Mcp-Param-", raw value).
  [[nodiscard]] virtual std::vector<std::pair<std::string, std::string>> values(const std::string& tool,
                                                                              const nlohmann::json& arguments) const = 0;
};

// Makes the transport of a new connection (the child process, or HTTP).
using mcp_transport_factory =
    std::function<std::shared_ptr<mcp_transport>(const mcp_strand&, const std::shared_ptr<mcp_shared>&)>;

// Settings a connection needs, shared with the client.
struct mcp_shared {
  std::vector<std::string> argv;
  mcp_client_options options;
  std::string name;
  mcp_stderr_ring stderr_ring;
  // The sessions' counters (unknown responses, timeouts, ignored messages), across restarts.
  std::shared_ptr<mcp_session_counters> counters = std::make_shared<mcp_session_counters>();
  std::atomic<int> pid{-1};
  mcp_info_snapshot info;
  mcp_client_side caps;  // progress tokens of calls, handlers running (client_handlers.hpp)
  // Over HTTP, modern: the x-mcp-header annotations of the tools the last
  // listing gave (param_headers.hpp, set by mcp_client::connect; on the
  // strand only); null on stdio, whose builds do not parse that code.
  std::shared_ptr<mcp_tool_param_screen> tool_params;
  // The transport's maker (stdio: the child process of argv; HTTP: the endpoint's).
  mcp_transport_factory make_transport{};

  mcp_shared(std::vector<std::string> a, mcp_client_options o, std::string n)
      : argv(std::move(a)), options(std::move(o)), name(std::move(n)), stderr_ring(options.stderr_lines) {}
};

// One connection of the client to its server: a session over a transport,
// with the client's concerns on top. Everything but the constructor runs on
// the client's strand.
class mcp_connection {
 public:
  mcp_connection(mcp_strand strand, std::shared_ptr<mcp_shared> shared)
      : strand_(std::move(strand)), shared_(std::move(shared)), listen_timer_(strand_) {
    mcp_session_settings s;
    s.name = shared_->name;
    s.max_handler_requests = shared_->options.max_handler_requests;
    s.busy = shared_->caps.busy;
    s.handler_timeout = shared_->options.handler_timeout;
    s.max_message_bytes = shared_->options.max_line_bytes;
    s.counters = shared_->counters;
    s.progress = std::shared_ptr<mcp_progress_routes>(shared_, &shared_->caps.progress);
    session_ = std::make_shared<mcp_session>(strand_, std::move(s));
  }
  mcp_connection(const mcp_connection&) = delete;
  mcp_connection& operator=(const mcp_connection&) = delete;

  // Registers the client's handlers and starts the transport. Throws mcp_error(launch_failed).
  void launch() {
    ignore_sigpipe_once();
    const auto& o = shared_->options;
    for (const char* m : {"elicitation/create", "sampling/createMessage", "roots/list"})
      if (mcp_serves(o, m))
        session_->on_request(m, [shared = shared_](mcp_request_context ctx) { return mcp_answer_server_request(*shared, ctx); });
    session_->on_notification("notifications/elicitation/complete", [shared = shared_](const nlohmann::json& params) {
      // ours, or ignored (unknown or repeated id)
      const auto id = params.is_object() ? params.find("elicitationId") : params.end();
      if (id != params.end() && id->is_string() && shared->caps.elicitations.complete(id->get<std::string>()) &&
          shared->options.on_elicitation_complete)
        shared->options.on_elicitation_complete(shared->name, id->get<std::string>());
    });
    // 2026-07-28: the first message of our subscriptions/listen stream (one per connection)
    session_->on_notification("notifications/subscriptions/acknowledged",
                              [acked = listen_acknowledged_](const nlohmann::json&) { *acked = true; });
    if (o.on_tools_list_changed)
      session_->on_notification("notifications/tools/list_changed",
                                [f = o.on_tools_list_changed](const nlohmann::json&) { f(); });
    if (o.on_log) session_->on_notification("notifications/message", o.on_log);
    if (o.on_progress) session_->on_notification("notifications/progress", o.on_progress);
    if (o.on_notification) session_->on_other_notification(o.on_notification);
    if (!shared_->make_transport) throw mcp_error(mcp_error_kind::launch_failed, shared_->name, "no transport");
    session_->start(shared_->make_transport(strand_, shared_));
  }

  [[nodiscard]] bool alive() const noexcept { return session_->alive(); }
  [[nodiscard]] std::exception_ptr error() const { return session_->error(); }
  [[nodiscard]] const std::shared_ptr<mcp_session>& session() const noexcept { return session_; }
  [[nodiscard]] const std::shared_ptr<mcp_shared>& shared() const noexcept { return shared_; }
  // The HTTP status an rpc error came with (0: none, e.g. stdio or a 200).
  [[nodiscard]] unsigned http_status_of(const mcp_rpc_error& e) const noexcept {
    return session_->transport() ? session_->transport()->status_of(e) : 0;
  }

  // Sends a request and waits for its response (result), an error response
  // (mcp_rpc_error), the timeout (cancellation sent, mcp_transient_error) or
  // the end of the connection (its error).
  //
  // On a modern connection (`set_modern`) the params carry the per-request
  // `_meta` fields (`io.modelcontextprotocol/protocolVersion`, `clientInfo`,
  // `clientCapabilities`, over any `_meta` of the caller's), a result's
  // `resultType` is checked, and an UnsupportedProtocolVersionError naming
  // another modern version this client speaks switches the connection to it
  // and sends the request once more.
  static asio::awaitable<nlohmann::json> request(std::shared_ptr<mcp_connection> self, std::string method,
                                                 nlohmann::json params, std::chrono::milliseconds timeout) {
    if (!self->session_->alive()) std::rethrow_exception(self->session_->error());
    nlohmann::json msg = {{"jsonrpc", "2.0"}, {"method", method}};
    if (!params.is_null() || !self->modern_meta_.is_null()) msg["params"] = std::move(params);
    bool relisted = false;
    for (int attempt = 0;; ++attempt) {
      const bool modern = !self->modern_meta_.is_null();
      if (modern) self->stamp_meta(msg["params"]);
      std::optional<nlohmann::json> r;
      std::exception_ptr mismatch;
      try {
        r = co_await self->exchange(self, method, msg, modern, timeout);
      } catch (const mcp_rpc_error& x) {
        if (modern && self->stateless() && !relisted && method == "tools/call" && x.code() == -32020)
          mismatch = std::current_exception();  // HeaderMismatch: the tool's x-mcp-header may have changed
        else if (!modern || attempt > 0 || x.code() != mcp_unsupported_version_code)
          throw;
        else if (const auto pick = mcp_pick_version(x.data().is_object() && x.data().contains("supported")
                                                        ? x.data()["supported"] : nlohmann::json(),
                                                    self->shared_->options.protocol_versions, true))
          // Once more, with the version the server named (the one just sent
          // too, if it names that one: the specification says to retry with a
          // version of its list, and a server may have refused it for a moment).
          self->set_modern(*pick);
        else
          throw;
      }
      if (mismatch) {
        // The specification's SHOULD: tools/list to see whether the tool's
        // inputSchema changed, then the call once more with its headers —
        // only if they differ now (else the server refused what a listing
        // cannot mend, and the same request would be refused again).
        relisted = true;
        const auto before = self->outgoing(msg, true).params;
        bool listed = true;
        try {
          co_await relist_tools(self, timeout);
        } catch (...) {
          listed = false;
        }
        if (!listed || self->outgoing(msg, true).params == before) std::rethrow_exception(mismatch);
        continue;
      }
      if (r) {
        if (modern && self->stateless() && method == "tools/list") {
          const auto& p = msg["params"];
          self->screen_tools(*r, !(p.is_object() && p.contains("cursor")));
        }
        co_return std::move(*r);
      }
    }
  }

  // Every page of tools/list (at most options.max_list_tools_pages), for what
  // screen_tools keeps of them.
  static asio::awaitable<void> relist_tools(std::shared_ptr<mcp_connection> self, std::chrono::milliseconds timeout) {
    std::optional<std::string> cursor;
    for (std::size_t page = 0; page < self->shared_->options.max_list_tools_pages; ++page) {
      nlohmann::json params = nlohmann::json::object();
      if (cursor) params["cursor"] = *cursor;
      const nlohmann::json r = co_await request(self, "tools/list", std::move(params), timeout);
      const auto next = r.is_object() ? r.find("nextCursor") : r.end();
      if (next == r.end() || !next->is_string()) co_return;
      cursor = next->get<std::string>();
    }
  }

  // Marks the connection modern, speaking `version` (non-empty), or legacy (empty).
  void set_modern(const std::string& version) {
    modern_version_ = version;
    session_->set_protocol_version(version);
    // 2026-07-28 over stateless HTTP: servers send no requests
    session_->ignore_requests(!version.empty() && stateless());
    if (version.empty()) {
      modern_meta_ = nullptr;
      return;
    }
    modern_meta_ = {{"io.modelcontextprotocol/protocolVersion", version},
                    {"io.modelcontextprotocol/clientInfo", shared_->options.client_info},
                    {"io.modelcontextprotocol/clientCapabilities", mcp_client_capabilities(shared_->options)}};
    if (const auto level = mcp_log_level_name(shared_->options.log_level); !level.empty())
      modern_meta_["io.modelcontextprotocol/logLevel"] = level;
  }
  // The modern version requests are sent with; empty on a legacy connection.
  [[nodiscard]] const std::string& modern_version() const noexcept { return modern_version_; }

  // The handshake settled on `version` (recorded by the session, told to the transport).
  void set_protocol_version(const std::string& version) { session_->initialized(version); }

  // Sends a notification (no response). A modern connection over a
  // stateless transport sends none: the 2026-07-28 Streamable HTTP binding
  // defines no client-to-server notification.
  void notify(const std::string& method, nlohmann::json params) {
    if (!modern_version_.empty() && stateless()) return;
    session_->notify(method, std::move(params));
  }

  // Sends a notification of the handshake under the legacy `version` and,
  // over a transport that acknowledges it, waits until the server accepted it
  // (HTTP: its 202); on stdio it is written and not awaited.
  static asio::awaitable<void> notify_accepted(std::shared_ptr<mcp_connection> self, std::string method,
                                               nlohmann::json params, std::string version,
                                               std::chrono::milliseconds timeout) {
    mcp_outgoing meta;
    meta.version = std::move(version);
    co_await mcp_session::notify_accepted(self->session_, std::move(method), std::move(params), std::move(meta), timeout);
  }

  // Fails every pending request with `e` and stops the transport at once.
  void fail(std::exception_ptr e) {
    stop_listening();
    session_->fail(std::move(e));
  }

  // Clean shutdown: the transport's (stdio: close stdin, wait, SIGTERM, wait, SIGKILL).
  static asio::awaitable<void> shutdown(std::shared_ptr<mcp_connection> self, std::exception_ptr why) {
    self->stop_listening();
    co_await mcp_session::shutdown(self->session_, std::move(why));
  }

  // The `notifications` filter of a modern connection's subscriptions/listen
  // (2026-07-28, basic/patterns/subscriptions): each list change that the
  // server's discover result `info` declares (`capabilities.X.listChanged`
  // true) and that has a handler here (tools: on_tools_list_changed; prompts
  // and resources: on_notification). Null: nothing to listen for.
  [[nodiscard]] static nlohmann::json listen_filter(const nlohmann::json& info, const mcp_client_options& o) {
    const auto caps = info.is_object() ? info.find("capabilities") : info.end();
    nlohmann::json filter;
    if (caps == info.end() || !caps->is_object()) return filter;
    const auto declares = [&](const char* what) {
      const auto c = caps->find(what);
      if (c == caps->end() || !c->is_object()) return false;
      const auto l = c->find("listChanged");
      return l != c->end() && l->is_boolean() && l->get<bool>();
    };
    if (o.on_tools_list_changed && declares("tools")) filter["toolsListChanged"] = true;
    if (o.on_notification && declares("prompts")) filter["promptsListChanged"] = true;
    if (o.on_notification && declares("resources")) filter["resourcesListChanged"] = true;
    return filter;
  }

  // A modern connection whose server's discover result `info` offers change
  // notifications this client handles: one subscriptions/listen kept open
  // in the background (listen()). Its notifications go to the same handlers
  // as a legacy server's.
  static void start_listening(std::shared_ptr<mcp_connection> self, const nlohmann::json& info) {
    if (self->modern_version_.empty() || self->listening_) return;
    nlohmann::json filter = listen_filter(info, self->shared_->options);
    if (filter.is_null()) return;
    self->listening_ = true;
    auto strand = self->strand_;
    asio::co_spawn(strand, listen(std::move(self), std::move(filter)), asio::detached);
  }

  // How long one subscriptions/listen may stay open before it is reopened.
  static constexpr std::chrono::milliseconds listen_lifetime = std::chrono::hours(24);

 private:
  [[nodiscard]] bool stateless() const noexcept {
    return session_->transport() && session_->transport()->modern_stateless();
  }

  // The subscriptions/listen of this connection until it ends: reopened
  // when it ends or fails, after the transport's reopen_delay; given up
  // (a warning to on_log) after as many ends in a row without the server's
  // acknowledgement as the transport allows. Nothing waits for it: it ends
  // with the connection (fail, shutdown: its request fails, its backoff is
  // cancelled).
  static asio::awaitable<void> listen(std::shared_ptr<mcp_connection> self, nlohmann::json filter) {
    std::size_t unacknowledged = 0;
    for (;;) {
      *self->listen_acknowledged_ = false;
      std::string why;
      try {
        nlohmann::json params = nlohmann::json::object();
        params["notifications"] = filter;
        (void)co_await request(self, "subscriptions/listen", std::move(params), listen_lifetime);
        why = "the server ended it (its result)";
      } catch (const std::exception& e) {
        why = e.what();
      }
      if (self->listen_stopped_ || !self->session_->alive() || !self->session_->transport()) co_return;
      if (*self->listen_acknowledged_) unacknowledged = 0;
      const auto delay = self->session_->transport()->reopen_delay(unacknowledged++);
      if (!delay) {
        self->listen_given_up(unacknowledged, why);
        co_return;
      }
      self->listen_timer_.expires_after(*delay);
      (void)co_await self->listen_timer_.async_wait(asio::as_tuple(asio::use_awaitable));
      if (self->listen_stopped_ || !self->session_->alive()) co_return;
    }
  }

  // The warning of a listen given up after `ends` ends in a row, the last for `why`.
  void listen_given_up(std::size_t ends, const std::string& why) const {
    warn(str_cat("subscriptions/listen given up: it ended ", std::to_string(ends),
                 " times in a row without the server's acknowledgement (list changes are no longer received from "
                 "this connection); the last time: ",
                 quote_text(why, 400)));
  }

  void stop_listening() {
    listen_stopped_ = true;
    listen_timer_.cancel();
  }

  // A warning of the client's own to on_log (as a server's notifications/message).
  void warn(const std::string& text) const {
    if (!shared_->options.on_log) return;
    try {
      shared_->options.on_log({{"level", "warning"}, {"logger", "tool_effects/mcp"}, {"data", text}});
    } catch (...) {  // a handler's failure is not the connection's
    }
  }

  // Writes the per-request _meta into `params` (an object, or null made one).
  void stamp_meta(nlohmann::json& params) const {
    if (!params.is_object()) params = nlohmann::json::object();
    auto& meta = params["_meta"];
    if (!meta.is_object()) meta = nlohmann::json::object();
    for (const auto& [k, v] : modern_meta_.items()) meta[k] = v;
  }

  // A modern tools/list result over HTTP: screened for x-mcp-header
  // (mcp_shared::tool_params; `first`: the listing's first page).
  void screen_tools(nlohmann::json& r, bool first) {
    if (shared_->tool_params) shared_->tool_params->screen(r, first, shared_->options);
  }

  // What a transport may mirror of the request `msg` (modern: sent under modern_version_).
  [[nodiscard]] mcp_outgoing outgoing(const nlohmann::json& msg, bool modern) const {
    mcp_outgoing o;
    o.modern = modern;
    if (modern) o.version = modern_version_;
    if (const auto m = msg.find("method"); m != msg.end() && m->is_string()) o.method = m->get<std::string>();
    const char* key = o.method == "tools/call" || o.method == "prompts/get" ? "name"
                      : o.method == "resources/read"                      ? "uri"
                                                                          : nullptr;
    const auto p = msg.find("params");
    if (!key || p == msg.end() || !p->is_object()) return o;
    if (const auto n = p->find(key); n != p->end() && n->is_string()) o.name = n->get<std::string>();
    if (modern && o.name && o.method == "tools/call" && shared_->tool_params)
      if (const auto args = p->find("arguments"); args != p->end()) o.params = shared_->tool_params->values(*o.name, *args);
    return o;
  }

  // One round trip of `msg` (its method and params) on the session.
  static asio::awaitable<nlohmann::json> exchange(std::shared_ptr<mcp_connection> self, const std::string& method,
                                                  nlohmann::json& msg, bool modern, std::chrono::milliseconds timeout) {
    // (no temporaries in the co_await expression: g++ 12 destroys a conditional's temporary there twice)
    // The params are read where they are in `msg` (not copied): a HeaderMismatch retry sends `msg` again.
    const auto p = msg.find("params");
    const nlohmann::json* params = p != msg.end() ? &*p : nullptr;
    mcp_outgoing meta = self->outgoing(msg, modern);
    nlohmann::json r = co_await mcp_session::request_of(self->session_, method, params, timeout, std::move(meta));
    if (modern) self->check_result_type(r);
    co_return r;
  }

  // A modern result's `resultType` (2026-07-28): absent (an earlier
  // server's) or "complete" is a result; "input_required" asks for input
  // this client cannot give (it declares no client capabilities); anything
  // else is invalid (the specification): mcp_error(protocol_error).
  void check_result_type(const nlohmann::json& result) const {
    const auto t = result.is_object() ? result.find("resultType") : result.end();
    if (!result.is_object() || t == result.end() || (t->is_string() && t->get_ref<const std::string&>() == "complete"))
      return;
    std::string m;
    if (t->is_string() && t->get_ref<const std::string&>() == "input_required") {
      if (mcp_serves_input(shared_->options)) return;  // the client answers it (mcp_request_with_input)
      m = "the server needs input this client cannot give (resultType \"input_required\"";
      if (const auto r = result.find("inputRequests"); r != result.end() && r->is_object())
        for (const auto& [k, v] : r->items())
          m = str_cat(m, ", ", quote_text(k, 60), ": ",
                      v.is_object() && v.contains("method") ? quote_text(mcp_dump(v["method"]), 60) : std::string("?"));
      m += "); it declares no client capabilities (elicitation, sampling, roots)";
    } else {
      m = str_cat("at /result/resultType: unknown result type ", quote_text(mcp_dump(*t), 100),
                  " (known: \"complete\", \"input_required\")");
    }
    throw mcp_error(mcp_error_kind::protocol_error, shared_->name, m);
  }

  mcp_strand strand_;
  std::shared_ptr<mcp_shared> shared_;
  std::shared_ptr<mcp_session> session_;
  std::string modern_version_;  // empty: legacy (initialize) or not yet known
  nlohmann::json modern_meta_;  // the per-request _meta fields of modern_version_; null when legacy
  asio::steady_timer listen_timer_;   // the backoff before reopening subscriptions/listen
  bool listening_ = false;            // listen() was started
  bool listen_stopped_ = false;       // fail or shutdown: listen() ends
  // notifications/subscriptions/acknowledged since the last (re)open (shared with the session's handler)
  std::shared_ptr<bool> listen_acknowledged_ = std::make_shared<bool>(false);
};

}  // namespace detail
}  // namespace tool_effects

#endif  // TOOL_EFFECTS_MCP_CLIENT_DETAIL_CONNECTION_HPP
