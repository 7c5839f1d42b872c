// tool_effects/mcp/server_http.hpp — the Streamable HTTP transport of the MCP server (specification 2025-03-26
// through 2026-07-28, basic/transports), on Boost.Beast. Its own header, so that stdio servers do not compile
// Beast. See docs/mcp.md ("The server over HTTP"), which states every bound below.
//
//   boost::asio::thread_pool pool(2);
//   auto http = std::make_shared<te::mcp_http_server>(pool.get_executor(), handler);  // handler: the core
//   unsigned short port = http->listen("127.0.0.1", 0, "/mcp");                     // 0 picks a free port
//
// One endpoint path. POST carries one JSON-RPC message: a notification or a response is answered 202; a request
// is answered as JSON when its response is the first thing the server sends for it, else as an SSE stream that
// starts with a priming event (an id, a `retry` field, empty data). GET opens an SSE stream for the server's own
// messages (several at once), or resumes a stream with `Last-Event-ID`; DELETE ends a session. 2025-era clients
// get a session (`Mcp-Session-Id`, given with the initialize response); a request that says
// `MCP-Protocol-Version: 2026-07-28` without a session is served statelessly (`Mcp-Method` and `Mcp-Name` are
// checked against the body: -32020 with 400). `Host` and `Origin` are checked against loopback names by default
// when the server listens on a loopback address (DNS rebinding). Every read is bounded in size and time, and
// sessions, streams, pending requests and kept events are bounded in number; a bad request fails alone.
#ifndef TOOL_EFFECTS_MCP_SERVER_HTTP_HPP
#define TOOL_EFFECTS_MCP_SERVER_HTTP_HPP

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <tool_effects/cancellation.hpp>
#include <tool_effects/detail/str_cat.hpp>
#include <tool_effects/mcp/server.hpp>

namespace tool_effects {

/// The bounds and policies of `mcp_http_server`; the defaults are the ones docs/mcp.md states.
struct mcp_http_server_options {
  /// Largest request head (request line and header fields) in bytes: past it 431 and the connection closes.
  std::size_t max_header_bytes = 16 * 1024;
  /// Largest request body in bytes: past it 413 and the connection closes.
  std::size_t max_body_bytes = std::size_t{4} << 20;
  /// Largest JSON nesting of a message: deeper is -32700 with 400.
  std::size_t max_depth = 64;
  /// Time for one whole request (head and body) to arrive, and for an idle keep-alive connection to send its
  /// next one (slowloris): past it the connection closes.
  std::chrono::milliseconds read_timeout = std::chrono::seconds(10);
  /// Time for one write to the client: past it the connection closes (an SSE stream can be resumed).
  std::chrono::milliseconds write_timeout = std::chrono::seconds(10);
  /// Open TCP connections: past it a new connection is closed at once.
  std::size_t max_connections = 256;
  /// Live sessions: past it initialize gets 503 (after sessions idle for `session_idle_timeout` are ended).
  std::size_t max_sessions = 64;
  /// A session with no open stream and no pending request for this long is ended when room is needed.
  std::chrono::milliseconds session_idle_timeout = std::chrono::minutes(10);
  /// Requests of one session (or stateless requests in all) not yet answered: past it 429.
  std::size_t max_pending_requests = 64;
  /// GET streams open at once per session: past it 429.
  std::size_t max_get_streams = 4;
  /// Events kept per stream for resumption with Last-Event-ID (the oldest are dropped first).
  std::size_t max_kept_events = 256;
  /// Bytes of events kept per stream (the oldest are dropped first).
  std::size_t max_kept_bytes = std::size_t{4} << 20;
  /// Finished streams of a session kept for resumption (the oldest are dropped first).
  std::size_t max_kept_streams = 16;
  /// Messages for a session without a GET stream kept until one opens (the oldest are dropped first).
  std::size_t max_backlog = 64;
  /// Events waiting to be written to one connection: past it the connection is closed (a client that does not
  /// read; it may resume the stream).
  std::size_t max_queued_bytes = std::size_t{8} << 20;
  /// The SSE `retry` field (ms) of every priming event.
  std::chrono::milliseconds sse_retry = std::chrono::milliseconds(500);
  /// DNS-rebinding protection: when set, Host must name a loopback host ("localhost", "127.0.0.1", "[::1]", any
  /// port) or one of `allowed_hosts`, and Origin, when present, a loopback origin or one of `allowed_origins`;
  /// else 403. Unset: on when the server listens on a loopback address, off otherwise.
  std::optional<bool> dns_rebinding_protection{};
  std::vector<std::string> allowed_hosts{};    // e.g. "mcp.example.com" (no port)
  std::vector<std::string> allowed_origins{};  // e.g. "https://app.example.com"
  /// Answer every request as an SSE stream, even when its response is the first message (default: JSON then).
  bool always_sse = false;
};

/// What the transport saw of one request besides its body (for the core's own checks, e.g. Mcp-Param-*).
struct mcp_http_request_info {
  std::string protocol_version;               ///< MCP-Protocol-Version as sent ("" when absent)
  std::map<std::string, std::string> params;  ///< Mcp-Param-* fields: lower-case name after the prefix → value
};

/// One session of a client (or, with an empty id, one stateless request): where the core's messages go.
/// Every member is thread-safe; a peer outlives its session harmlessly (sends are then dropped).
class mcp_http_peer {
 public:
  virtual ~mcp_http_peer() = default;
  /// The Mcp-Session-Id; "" for a stateless request.
  [[nodiscard]] virtual const std::string& session_id() const noexcept = 0;
  /// Sends `message`. A response goes to the stream of its request. A request or notification with `related`
  /// (the id of a request of this peer still unanswered) goes to that request's stream, else to one GET stream of
  /// the session (kept, bounded, until one opens); a stateless peer drops it.
  virtual void send(nlohmann::json message, nlohmann::json related = nullptr) = 0;
  /// Ends the SSE stream of request `request_id` without answering it (SEP-1699 polling): the client resumes it
  /// with GET and Last-Event-ID, and the response comes there.
  virtual void close_stream(nlohmann::json request_id) = 0;
};

/// The server core's side of the transport. Called on the transport's strand: must not block.
class mcp_http_handler {
 public:
  virtual ~mcp_http_handler() = default;
  /// A JSON-RPC message (an object, valid JSON-RPC 2.0 envelope) from the client of `peer`.
  virtual void on_message(const std::shared_ptr<mcp_http_peer>& peer, nlohmann::json message,
                          const mcp_http_request_info& info) = 0;
  /// The session of `peer` ended (DELETE, eviction or close()); later sends are dropped.
  virtual void on_closed(const std::shared_ptr<mcp_http_peer>& /*peer*/) {}
};

}  // namespace tool_effects

#include <tool_effects/mcp/transport/detail/http_server.hpp>

namespace tool_effects {

/// A Streamable HTTP endpoint serving `handler`. Create with std::make_shared; close() (or the destructor)
/// stops listening, ends every session and closes every connection.
class mcp_http_server {
 public:
  template <class Executor>
  mcp_http_server(const Executor& executor, std::shared_ptr<mcp_http_handler> handler,
                  mcp_http_server_options options = {})
      : core_(std::make_shared<detail::mcp_http_server_core>(boost::asio::any_io_executor(executor), std::move(handler),
                                                             std::move(options))) {}
  mcp_http_server(const mcp_http_server&) = delete;
  mcp_http_server& operator=(const mcp_http_server&) = delete;
  ~mcp_http_server() { close(); }

  /// Listens on `address`:`port` (0: a free port) and serves `path`; returns the port. Throws
  /// std::system_error naming the address when it cannot bind, std::invalid_argument for a path not starting
  /// with '/'.
  unsigned short listen(const std::string& address, unsigned short port, const std::string& path = "/mcp") {
    return core_->listen(address, port, path);
  }
  /// Stops listening, ends every session (on_closed) and closes every connection. Idempotent.
  void close() { core_->close(); }
  /// Live sessions and open connections (for tests and monitoring).
  [[nodiscard]] std::size_t sessions() const { return core_->count_sessions(); }
  [[nodiscard]] std::size_t connections() const { return core_->count_connections(); }

 private:
  std::shared_ptr<detail::mcp_http_server_core> core_;
};

namespace detail {

// mcp_server behind the HTTP transport: every request runs as its own coroutine through handle_request (its
// answer, or its mcp_server_error, goes back on its stream); notifications/cancelled cancels the named request of
// the same session; a session that ends cancels its requests under way. Each session has its log level
// (logging/setLevel; every level until set); a stateless request has none, and its log messages go nowhere.
template <class Server>
class mcp_server_http_bridge final : public mcp_http_handler,
                                     public std::enable_shared_from_this<mcp_server_http_bridge<Server>> {
 public:
  mcp_server_http_bridge(Server* server, boost::asio::any_io_executor ex) : server_(server), ex_(std::move(ex)) {}

  void on_message(const std::shared_ptr<mcp_http_peer>& peer, nlohmann::json msg,
                  const mcp_http_request_info& info) override {
    const auto method = msg.find("method");
    if (method == msg.end() || !method->is_string()) {  // a response: to a tool's ask, or dropped
      answered(peer->session_id(), msg);
      return;
    }
    if (!msg.contains("id")) {
      if (*method == "notifications/cancelled") cancel(peer->session_id(), msg);
      return;
    }
    nlohmann::json id = msg["id"];
    turn_cancellation cancel;
    std::shared_ptr<std::atomic<mcp_log_level>> level;
    nlohmann::json caps;  // what the session's initialize declared
    std::shared_ptr<mcp_resource_subscriptions> subs;
    {
      std::lock_guard lock(m_);
      if (!peer->session_id().empty()) {
        auto& c = caps_[peer->session_id()];
        if (*method == "initialize" && msg.contains("params") && msg["params"].is_object() &&
            msg["params"].contains("capabilities") && msg["params"]["capabilities"].is_object())
          c = msg["params"]["capabilities"];
        caps = c;
      }
      running_[key(peer->session_id(), id)] = cancel;
      if (!peer->session_id().empty()) {  // made here, on the transport's strand: never after on_closed
        auto& l = levels_[peer->session_id()];
        if (!l) l = std::make_shared<std::atomic<mcp_log_level>>(mcp_log_level::debug);
        level = l;
        auto& sub = subs_[peer->session_id()];
        if (!sub) {  // resources/updated goes on the session's GET stream (related to no request)
          sub = std::make_shared<mcp_resource_subscriptions>();
          sub->send_updated = [weak = std::weak_ptr<mcp_http_peer>(peer)](nlohmann::json p) {
            if (auto pe = weak.lock())
              pe->send(nlohmann::json{{"jsonrpc", "2.0"}, {"method", "notifications/resources/updated"},
                                      {"params", std::move(p)}});
          };
        }
        subs = sub;
      }
    }
    nlohmann::json params = msg.contains("params") ? std::move(msg["params"]) : nlohmann::json::object();
    boost::asio::co_spawn(ex_,
                          run(this->shared_from_this(), peer, method->get<std::string>(), std::move(params),
                              std::move(id), std::move(cancel), std::move(level), std::move(caps), std::move(subs),
                              info),
                          boost::asio::detached);
  }
  void on_closed(const std::shared_ptr<mcp_http_peer>& peer) override {
    std::lock_guard lock(m_);
    levels_.erase(peer->session_id());
    caps_.erase(peer->session_id());
    subs_.erase(peer->session_id());
    const std::string prefix = str_cat(peer->session_id(), "\n");
    for (auto it = asks_.lower_bound(prefix); it != asks_.end() && it->first.rfind(prefix, 0) == 0;) {
      pending_ask::finish(it->second, nullptr, "the session ended");
      it = asks_.erase(it);
    }
    for (auto it = running_.lower_bound(prefix); it != running_.end() && it->first.rfind(prefix, 0) == 0;) {
      it->second.cancel();
      it = running_.erase(it);
    }
  }

 private:
  static std::string key(const std::string& session, const nlohmann::json& id) {
    return str_cat(session, "\n", id.dump());
  }

  void cancel(const std::string& session, const nlohmann::json& msg) {
    const auto p = msg.find("params");
    if (p == msg.end() || !p->is_object() || !p->contains("requestId")) return;
    std::lock_guard lock(m_);
    if (const auto it = running_.find(key(session, (*p)["requestId"])); it != running_.end()) it->second.cancel();
  }

  static boost::asio::awaitable<void> run(std::shared_ptr<mcp_server_http_bridge> b,
                                          std::shared_ptr<mcp_http_peer> peer, std::string method,
                                          nlohmann::json params, nlohmann::json id, turn_cancellation cancel,
                                          std::shared_ptr<std::atomic<mcp_log_level>> level, nlohmann::json caps,
                                          std::shared_ptr<mcp_resource_subscriptions> subs,
                                          mcp_http_request_info info) {
    nlohmann::json reply{{"jsonrpc", "2.0"}, {"id", id}};
    try {
      mcp_server_request request;
      request.session = peer->session_id();
      request.id = id;
      request.cancel = cancel;
      request.log_level = std::move(level);
      request.subscriptions = std::move(subs);
      request.log = [peer, id](nlohmann::json p) {  // on the request's own stream, as progress
        peer->send(nlohmann::json{{"jsonrpc", "2.0"}, {"method", "notifications/message"}, {"params", std::move(p)}},
                   id);
      };
      request.transport_version = std::move(info.protocol_version);
      request.client_capabilities = std::move(caps);
      if (!peer->session_id().empty()) {  // a session's request asks on its own POST stream
        request.ask_client = [b, peer, id](std::string m, nlohmann::json p, std::chrono::milliseconds t) {
          return ask(b, peer, id, std::move(m), std::move(p), t);
        };
        request.close_stream = [peer, id] { peer->close_stream(id); };  // resumed on a GET with Last-Event-ID
      }
      request.param_headers.emplace();
      for (auto& [k, v] : info.params) (*request.param_headers)[k] = mcp_http_header_text(v);
      if (params.is_object() && params.contains("_meta") && params["_meta"].is_object() &&
          params["_meta"].contains("progressToken")) {  // progress goes on the request's own stream
        request.progress = [peer, id, token = params["_meta"]["progressToken"]](double progress, double total,
                                                                                const std::string& message) {
          nlohmann::json p{{"progressToken", token}, {"progress", progress}};
          if (total > 0) p["total"] = total;
          if (!message.empty()) p["message"] = message;
          peer->send(nlohmann::json{{"jsonrpc", "2.0"}, {"method", "notifications/progress"}, {"params", std::move(p)}},
                     id);
        };
      }
      reply["result"] = co_await b->server_->handle_request(std::move(method), std::move(params), std::move(request));
    } catch (const mcp_server_error& e) {
      reply["error"] = {{"code", e.code()}, {"message", e.what()}};
      if (!e.data().is_null()) reply["error"]["data"] = e.data();
    } catch (const std::exception&) {
      reply["error"] = {{"code", -32603}, {"message", "Internal error"}};
    }
    {
      std::lock_guard lock(b->m_);
      b->running_.erase(key(peer->session_id(), id));
    }
    peer->send(std::move(reply));
  }

  // One ask of a tool's in flight: its answer (or failure), and the timer its asker waits on (on its strand).
  struct pending_ask {
    explicit pending_ask(const boost::asio::any_io_executor& ex) : strand(boost::asio::make_strand(ex)), timer(strand) {}
    boost::asio::strand<boost::asio::any_io_executor> strand;
    boost::asio::steady_timer timer;
    std::mutex m;
    bool done = false;
    nlohmann::json reply;  // the client's response message
    std::string failure;   // when no response will come
    static void finish(const std::shared_ptr<pending_ask>& p, nlohmann::json r, std::string why) {
      {
        std::lock_guard lock(p->m);
        if (p->done) return;
        p->done = true;
        p->reply = std::move(r);
        p->failure = std::move(why);
      }
      boost::asio::post(p->strand, [p] { p->timer.cancel(); });  // after `done`: the waiter sees one or the other
    }
  };

  // A tool's request to the client of `peer`'s session, sent on the POST stream of request `related`; its
  // result, or mcp_ask_error (timeout, an error response, the session's end).
  static boost::asio::awaitable<nlohmann::json> ask(std::shared_ptr<mcp_server_http_bridge> b,
                                                    std::shared_ptr<mcp_http_peer> peer, nlohmann::json related,
                                                    std::string method, nlohmann::json params,
                                                    std::chrono::milliseconds timeout) {
    auto p = std::make_shared<pending_ask>(b->ex_);
    const nlohmann::json id = str_cat("tool_effects/ask/", std::to_string(b->next_ask_.fetch_add(1) + 1));
    const std::string k = key(peer->session_id(), id);
    {
      std::lock_guard lock(b->m_);
      b->asks_[k] = p;
    }
    peer->send(nlohmann::json{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}},
               related);
    co_await boost::asio::co_spawn(
        p->strand,
        [](std::shared_ptr<pending_ask> p, std::chrono::milliseconds t) -> boost::asio::awaitable<void> {
          {
            std::lock_guard lock(p->m);
            if (p->done) co_return;
          }
          p->timer.expires_after(t);  // in the same turn as the check: finish's cancel comes after it
          (void)co_await p->timer.async_wait(boost::asio::as_tuple(boost::asio::use_awaitable));
        }(p, timeout),
        boost::asio::use_awaitable);
    {
      std::lock_guard lock(b->m_);
      b->asks_.erase(k);
    }
    std::lock_guard lock(p->m);
    if (!p->done) {
      p->done = true;
      throw mcp_ask_error(mcp_ask_timeout, str_cat(method, " got no response within ", std::to_string(timeout.count()),
                                                   " ms"));
    }
    if (!p->failure.empty()) throw mcp_ask_error(mcp_ask_failed, str_cat(method, ": ", p->failure));
    nlohmann::json& reply = p->reply;
    if (const auto e = reply.find("error"); e != reply.end()) {
      const auto m = e->is_object() ? e->find("message") : e->end();
      throw mcp_ask_error(mcp_ask_refused,
                          str_cat(method, ": the client answered error ",
                                  e->is_object() && e->contains("code") ? e->at("code").dump() : std::string("?"), ": ",
                                  m != e->end() && m->is_string() ? mcp_cut(m->get<std::string>(), 1000) : std::string()));
    }
    co_return std::move(reply["result"]);
  }

  // The client's response to one of our asks (others are dropped).
  void answered(const std::string& session, nlohmann::json& msg) {
    const auto id = msg.find("id");
    if (id == msg.end() || !(msg.contains("result") || msg.contains("error"))) return;
    std::shared_ptr<pending_ask> p;
    {
      std::lock_guard lock(m_);
      const auto it = asks_.find(key(session, *id));
      if (it == asks_.end()) return;
      p = it->second;
      asks_.erase(it);
    }
    pending_ask::finish(p, std::move(msg), std::string());
  }

  Server* server_;
  boost::asio::any_io_executor ex_;
  std::atomic<std::uint64_t> next_ask_{0};
  std::map<std::string, nlohmann::json> caps_;                        // session → its client's capabilities
  std::map<std::string, std::shared_ptr<pending_ask>> asks_;          // session "\n" id → a tool's ask in flight
  std::mutex m_;
  std::map<std::string, turn_cancellation> running_;  // session "\n" id → the request's cancellation
  std::map<std::string, std::shared_ptr<std::atomic<mcp_log_level>>> levels_;  // session → its log level
  std::map<std::string, std::shared_ptr<mcp_resource_subscriptions>> subs_;   // session → its subscriptions
};

}  // namespace detail

template <class Host, class Options>
unsigned short mcp_server<Host, Options>::listen_http(std::string_view address, unsigned short port,
                                                      std::string_view path) {
  auto bridge = std::make_shared<detail::mcp_server_http_bridge<mcp_server>>(this, executor_);
  auto http = std::make_shared<mcp_http_server>(executor_, bridge);
  const unsigned short bound = http->listen(std::string(address), port, std::string(path));
  transports_.push_back(std::move(http));
  return bound;
}

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_MCP_SERVER_HTTP_HPP
