// tool_effects/mcp/transport/detail/http_server.hpp — internal: the Streamable HTTP listener of the server
// (specification 2025-03-26 through 2026-07-28, basic/transports), on Boost.Beast. Every MCP session of a client,
// and every stateless request of the 2026-07-28 era, is one `mcp_http_session`: an `mcp_transport` of its own
// protocol session (mcp/protocol/detail/session.hpp), made by the server's session factory, exactly as stdio's
// one session is. This file declares the listener and routes what the sessions send to the streams of their
// requests; http_server_handle.hpp reads the HTTP requests (http_server_request.hpp: what a request alone
// decides, e.g. its cost and the DNS-rebinding check). Everything runs on one strand: the acceptor, every
// connection's coroutine, every session (the protocol sessions run on it too) and their streams. See
// docs/mcp-server.md ("The server over HTTP").
#ifndef TOOL_EFFECTS_MCP_TRANSPORT_DETAIL_HTTP_SERVER_HPP
#define TOOL_EFFECTS_MCP_TRANSPORT_DETAIL_HTTP_SERVER_HPP

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

#include <nlohmann/json.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/container/devector.hpp>
// Pushed for Beast in C++23 and the coroutines of this header; popped at the end.
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <tool_effects/detail/push_options.hpp>

#include <tool_effects/detail/str_cat.hpp>
#include <tool_effects/json/error.hpp>
#include <tool_effects/mcp/auth/principal.hpp>
#include <tool_effects/mcp/auth/resource_server.hpp>
#include <tool_effects/mcp/protocol/detail/crypto.hpp>
#include <tool_effects/mcp/protocol/detail/session.hpp>
#include <tool_effects/mcp/protocol/detail/transport.hpp>
#include <tool_effects/mcp/server/http_options.hpp>
#include <tool_effects/mcp/transport/detail/http_server_request.hpp>
#include <tool_effects/mcp/versions.hpp>
#include <tool_effects/net/connection.hpp>

namespace tool_effects::detail {

namespace hs_asio = boost::asio;
namespace hs_http = boost::beast::http;
using hs_tcp = boost::asio::ip::tcp;

// What a listener asks of the server it serves.
struct mcp_listener_hooks {
  // Makes the protocol session of a new HTTP session (or stateless request): its settings and the server's
  // method handlers, on the listener's strand. The listener starts it over the HTTP session's transport.
  std::function<std::shared_ptr<mcp_session>(const mcp_strand& strand)> make_session;
  // With authorization: the scopes a request needs beyond a valid token (a tools/call: its tool's); empty:
  // none. Called on the listener's strand.
  std::function<std::vector<std::string>(const std::string& method, const nlohmann::json& params)> scopes{};
  // Where token verification runs (a verifier may block: a JWKS fetch, introspection); empty: the executor
  // under the listener's strand.
  asio::any_io_executor verify_executor{};
};

// The listener and its sessions are class templates only so that a translation unit that serves no HTTP compiles
// none of their coroutines (see basic_mcp_session); `mcp_http_server_core` and `mcp_http_session` below.
template <class Unused = void>
class basic_mcp_http_server_core;
template <class Unused = void>
class basic_mcp_http_session;
using mcp_http_server_core = basic_mcp_http_server_core<>;
using mcp_http_session = basic_mcp_http_session<>;

// The writer of one connection that carries an SSE stream (or waits for a JSON response).
struct mcp_http_out {
  explicit mcp_http_out(const hs_asio::any_io_executor& ex) : wake(ex) {}
  boost::container::devector<std::string> queue;
  std::size_t queued_bytes = 0;
  hs_asio::steady_timer wake;
  bool done = false;  // close once the queue is written
  bool dead = false;  // the client went away or did not read
  void notify() { wake.cancel(); }
};

// One SSE stream of a session (a POST's or a GET's), kept for resumption while its session lasts.
struct mcp_http_stream {
  std::uint64_t id = 0;
  nlohmann::json request_id;  // the POST's request id; null for a GET stream
  std::size_t cost = 0;       // what the request holds of max_bytes_in_flight until it is answered
  bool sse = false;           // headers of an SSE stream sent (else a POST still undecided, or JSON)
  bool finished = false;      // the response was sent (or will never be): no more events
  std::uint64_t seq = 0;      // the last event's number
  boost::container::devector<std::pair<std::uint64_t, std::string>> kept;
  std::size_t kept_bytes = 0;
  std::optional<std::string> json_response;  // an undecided POST's response, answered as JSON
  int json_error_code = 0;                   // its JSON-RPC error code (0: a result)
  std::shared_ptr<mcp_http_out> out;         // the connection writing it now, if any
};

// One MCP session of a client (or, with an empty id, one stateless request): the transport of its protocol
// session. Its state is the listener's strand's, which is also its protocol session's strand.
template <class Unused>
class basic_mcp_http_session final : public mcp_transport,
                                   public std::enable_shared_from_this<basic_mcp_http_session<Unused>> {
 public:
  basic_mcp_http_session(std::weak_ptr<basic_mcp_http_server_core<Unused>> core, std::string id, std::string owner)
      : core_(std::move(core)), id_(std::move(id)), owner_(std::move(owner)) {}
  [[nodiscard]] const std::string& session_id() const noexcept { return id_; }
  [[nodiscard]] bool stateless() const noexcept { return id_.empty(); }
  // The principal's key when the listener authorizes ("" otherwise): only its requests reach this session.
  [[nodiscard]] const std::string& owner() const noexcept { return owner_; }

  // mcp_transport, on the strand.
  void start(const std::shared_ptr<mcp_session>&) override {}
  void send(std::string message, std::int64_t request_id, mcp_outgoing meta) override;
  void abandon(std::int64_t) override {}
  bool close_stream(const nlohmann::json& request_id) override;
  [[nodiscard]] bool closes_streams() const noexcept override { return !stateless(); }
  void unanswered(const nlohmann::json& request_id) override;
  void initialized(const std::string&) override {}
  asio::awaitable<void> shutdown() override {
    stop();
    co_return;
  }
  void stop() noexcept override;
  [[nodiscard]] bool modern_stateless() const noexcept override { return stateless(); }

  std::shared_ptr<mcp_session> engine;  // the protocol session; let go when this session ends (they hold each other)
  bool closed = false;
  std::uint64_t next_stream = 1;
  std::map<std::uint64_t, std::shared_ptr<mcp_http_stream>> streams;
  std::map<std::string, std::uint64_t> open_requests;  // request id (dumped) → its stream
  boost::container::devector<std::string> backlog;     // messages for a GET stream not yet open
  std::chrono::steady_clock::time_point last_active = std::chrono::steady_clock::now();
  std::size_t pending = 0;  // requests not yet answered

 private:
  std::weak_ptr<basic_mcp_http_server_core<Unused>> core_;
  std::string id_;
  std::string owner_;
};

// The listener: accepts connections, reads their requests (http_server_handle.hpp), owns the sessions.
template <class Unused>
class basic_mcp_http_server_core : public std::enable_shared_from_this<basic_mcp_http_server_core<Unused>> {
 public:
  using session_type = basic_mcp_http_session<Unused>;  // one session's (or stateless request's) transport
  using clock = std::chrono::steady_clock;
  basic_mcp_http_server_core(hs_asio::any_io_executor ex, mcp_listener_hooks hooks, mcp_http_server_options o)
      : strand_(make_mcp_strand(ex)), acceptor_(strand_), hooks_(std::move(hooks)), o_(std::move(o)) {
    if (o_.authorization && !o_.authorization->verify_token)
      throw std::invalid_argument("mcp_http_server: authorization needs a verify_token");
    if (!hooks_.verify_executor) hooks_.verify_executor = mcp_inner_executor(strand_);
    if (o_.tls)
      tls_ = net::tls_context::server(net::tls_options{o_.tls->client_ca_file, o_.tls->cert_file, o_.tls->key_file});
  }

  // The strand every session of this listener runs on.
  [[nodiscard]] const mcp_strand& strand() const noexcept { return strand_; }

  unsigned short listen(const std::string& address, unsigned short port, const std::string& path) {
    if (path.empty() || path.front() != '/')
      throw std::invalid_argument(
          str_cat("mcp_http_server: the path must start with '/', got \"", path.substr(0, 100), "\""));
    boost::system::error_code ec;
    const auto addr = hs_asio::ip::make_address(address, ec);
    if (ec)
      throw std::invalid_argument(str_cat("mcp_http_server: not an IP address: \"", address.substr(0, 100), "\""));
    for (std::size_t i = 0; i < o_.routes.size(); ++i) {
      const mcp_http_route& r = o_.routes[i];
      const auto refuse = [&](std::string_view why) {
        throw std::invalid_argument(str_cat("mcp_http_server: route \"", r.path.substr(0, 100), "\" ", why));
      };
      if (r.path.empty() || r.path.front() != '/') refuse("does not start with '/'");
      if (r.path == path || (o_.authorization && r.path == mcp_protected_resource_path(path)))
        refuse("is the MCP endpoint's own path");
      if (!r.handler) refuse("has no handler");
      for (std::size_t k = 0; k < i; ++k)
        if (o_.routes[k].path == r.path) refuse("is given twice");
    }
    path_ = path;
    protect_ = o_.dns_rebinding_protection.value_or(addr.is_loopback());
    const hs_tcp::endpoint ep(addr, port);
    acceptor_.open(ep.protocol());
    acceptor_.set_option(hs_asio::socket_base::reuse_address(true));
    acceptor_.bind(ep, ec);
    if (ec) throw std::system_error(ec, str_cat("mcp_http_server: cannot bind ", address, ":", std::to_string(port)));
    acceptor_.listen();
    const unsigned short bound = acceptor_.local_endpoint().port();
    hs_asio::co_spawn(strand_, accept_loop(this->shared_from_this()), hs_asio::detached);
    return bound;
  }

  // Stops listening, ends every session and closes every connection. Idempotent; waits (at most 2 s) for the
  // strand to have done it.
  void close() {
    if (closed_.exchange(true)) return;
    auto self = this->shared_from_this();
    auto job = [self] { self->close_on_strand(); };
    if (mcp_strand_probe{strand_}.running_in_this_thread()) {
      job();
      return;
    }
    auto done = std::make_shared<std::promise<void>>();
    auto finished = done->get_future();
    hs_asio::dispatch(strand_, [job, done] {
      job();
      done->set_value();
    });
    // Bounded: an executor that no longer runs (its pool stopped) runs the job when it runs again, if ever.
    finished.wait_for(std::chrono::seconds(2));
  }
  [[nodiscard]] std::size_t count_sessions() const { return n_sessions_.load(); }
  [[nodiscard]] std::size_t count_connections() const { return n_connections_.load(); }

  // What session `s` sends (its transport's send, on the strand): a response goes to the stream of its request;
  // a request or notification related to a request of `s` still open goes to that request's stream, else to one
  // GET stream of the session (kept, bounded, until one opens); a stateless session drops it.
  void route(session_type& s, std::string text, std::int64_t request_id, const mcp_outgoing& meta) {
    if (s.closed) return;
    const bool response = request_id == 0 && meta.method.empty();
    if (response) {
      const auto st = close_request(s, meta.related_id);  // unknown or answered: dropped
      if (!st) return;
      if (!st->sse && st->out && !o_.always_sse) {
        st->json_response = std::move(text);
        st->json_error_code = meta.error_code;
        st->out->notify();
        return;
      }
      if (!st->sse) start_sse(s, *st);
      push_event(*st, text);
      if (st->out) {
        st->out->done = true;
        st->out->notify();
      }
      trim_finished(s);
      return;
    }
    if (!meta.related_id.is_null()) {
      if (const auto it = s.open_requests.find(mcp_dump(meta.related_id)); it != s.open_requests.end()) {
        auto st = s.streams[it->second];
        if (st && !st->finished) {
          if (!st->sse) start_sse(s, *st);
          push_event(*st, text);
          return;
        }
      }
    }
    if (s.stateless()) return;  // no stream for unrelated messages
    for (auto& [id, g] : s.streams)
      if (g->request_id.is_null() && g->out && !g->out->dead) {
        push_event(*g, text);
        return;
      }
    s.backlog.push_back(std::move(text));
    while (s.backlog.size() > o_.max_backlog) s.backlog.pop_front();
  }

  // Request `id` of `s` gets no answer (its client cancelled it): its stream ends, and the connection with it.
  void drop_request(session_type& s, const nlohmann::json& id) {
    const auto st = close_request(s, id);
    if (st && st->out) {
      st->out->done = true;
      st->out->notify();
    }
  }

  // Request `id` of `s` is answered or dropped: no longer open, counted, its stream finished and released.
  // Returns that stream; none when `id` is not open (unknown, or answered before) or its stream is gone.
  std::shared_ptr<mcp_http_stream> close_request(session_type& s, const nlohmann::json& id) {
    const auto it = s.open_requests.find(mcp_dump(id));
    if (it == s.open_requests.end()) return nullptr;
    auto st = s.streams[it->second];
    s.open_requests.erase(it);
    count_answered(s);
    if (!st) return nullptr;
    st->finished = true;
    release(*st);
    return st;
  }

  // Ends the stream of request `id` of `s` unanswered (SSE polling): the client resumes it with Last-Event-ID.
  bool close_request_stream(session_type& s, const nlohmann::json& id) {
    const auto it = s.open_requests.find(mcp_dump(id));
    if (it == s.open_requests.end()) return false;
    const auto st = s.streams.find(it->second);
    if (st == s.streams.end() || !st->second->out) return false;
    auto& stream = *st->second;
    if (!stream.sse) start_sse(s, stream);
    stream.out->done = true;
    stream.out->notify();
    stream.out.reset();
    return true;
  }

  // Ends session `s`: its streams close, its protocol session ends (its requests under way are cancelled), and
  // the two let go of each other. By value: a caller may pass the map's own element.
  void end_session(std::shared_ptr<session_type> s) {
    if (s->closed) return;
    s->closed = true;
    for (auto& [id, st] : s->streams) {
      release(*st);
      if (st->out) {
        st->out->done = true;
        st->out->notify();
      }
    }
    s->streams.clear();
    s->open_requests.clear();
    if (!s->stateless()) {
      sessions_.erase(s->session_id());
      n_sessions_ = sessions_.size();
      if (auto n = sessions_of_.find(s->owner()); n != sessions_of_.end() && --n->second == 0) sessions_of_.erase(n);
    } else {
      auto& p = stateless_pending_[s->owner()];
      p -= std::min(p, s->pending);
      if (p == 0) stateless_pending_.erase(s->owner());
    }
    s->pending = 0;
    if (auto engine = std::move(s->engine)) engine->fail(nullptr);  // closed: "the session ended"
  }

 private:
  using http_response = hs_http::response<hs_http::string_body>;

  // One request of `s` answered (or given up).
  void count_answered(session_type& s) {
    if (s.pending == 0) return;
    --s.pending;
    if (!s.stateless()) return;
    auto it = stateless_pending_.find(s.owner());
    if (it != stateless_pending_.end() && it->second > 0 && --it->second == 0) stateless_pending_.erase(it);
  }
  // What a request answered (or given up) held of max_bytes_in_flight goes back.
  void release(mcp_http_stream& st) noexcept {
    bytes_in_flight_ -= std::min(bytes_in_flight_, st.cost);
    st.cost = 0;
  }

  struct reply {
    unsigned status = 200;
    std::string body;
    std::string content_type = "application/json";
    std::string session_id;
    bool close = false;
    std::string allow;
  };

  static std::string sse_event(std::string_view id, std::string_view data) {
    return str_cat("id: ", id, "\ndata: ", data, "\n\n");
  }
  static std::string event_id(std::uint64_t stream, std::uint64_t seq) {
    return str_cat(std::to_string(stream), "-", std::to_string(seq));
  }

  // Appends an event to `st` (kept for resumption, written when a connection carries it).
  void push_event(mcp_http_stream& st, std::string_view data) {
    ++st.seq;
    std::string ev = sse_event(event_id(st.id, st.seq), data);
    st.kept_bytes += ev.size();
    st.kept.emplace_back(st.seq, ev);
    while (!st.kept.empty() && (st.kept.size() > o_.max_kept_events || st.kept_bytes > o_.max_kept_bytes)) {
      st.kept_bytes -= st.kept.front().second.size();
      st.kept.pop_front();
    }
    if (st.out) enqueue(*st.out, std::move(ev));
  }
  void enqueue(mcp_http_out& out, std::string bytes) {
    out.queued_bytes += bytes.size();
    out.queue.push_back(std::move(bytes));
    if (out.queued_bytes > o_.max_queued_bytes) out.dead = true;  // a client that does not read
    out.notify();
  }
  // Turns an undecided POST into an SSE stream: the headers and the priming event go first.
  void start_sse(session_type& s, mcp_http_stream& st) {
    st.sse = true;
    if (!st.out) return;
    std::string head =
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n";
    if (!s.session_id().empty()) head += str_cat("Mcp-Session-Id: ", s.session_id(), "\r\n");
    head += "\r\n";
    enqueue(*st.out, std::move(head));
    enqueue(*st.out,
            str_cat("id: ", event_id(st.id, 0), "\nretry: ", std::to_string(o_.sse_retry.count()), "\ndata: \n\n"));
  }

  // Drops the oldest finished streams past max_kept_streams.
  void trim_finished(session_type& s) {
    std::size_t finished = 0;
    for (auto& [id, st] : s.streams) finished += st->finished ? 1 : 0;
    for (auto it = s.streams.begin(); it != s.streams.end() && finished > o_.max_kept_streams;) {
      if (it->second->finished && !it->second->out) {
        it = s.streams.erase(it);
        --finished;
      } else {
        ++it;
      }
    }
  }

  // A new session (or stateless request) with its protocol session started over it.
  std::shared_ptr<session_type> open_session(std::string id, std::string owner) {
    auto s = std::make_shared<session_type>(this->weak_from_this(), std::move(id), std::move(owner));
    s->engine = hooks_.make_session(strand_);
    s->engine->start(s);
    if (!s->stateless()) {
      sessions_[s->session_id()] = s;
      n_sessions_ = sessions_.size();
      ++sessions_of_[s->owner()];
    }
    return s;
  }

  // Room for a new session of `owner`: past its own bound its least recently used idle session goes, past the
  // listener's the least recently used idle one of anybody's (idle for session_idle_timeout or not). False when
  // no idle session can go.
  bool make_room(const std::string& owner) {
    auto lru_idle = [&](bool of_owner) {
      std::shared_ptr<session_type> out;
      for (auto& [k, v] : sessions_)
        if ((!of_owner || v->owner() == owner) && idle(*v) && (!out || v->last_active < out->last_active)) out = v;
      return out;
    };
    std::vector<std::shared_ptr<session_type>> stale;  // idle past session_idle_timeout: they go anyway
    for (auto& [k, v] : sessions_)
      if (idle(*v) && clock::now() - v->last_active > o_.session_idle_timeout) stale.push_back(v);
    for (auto& v : stale) end_session(v);
    if (o_.authorization) {
      const auto n = sessions_of_.find(owner);
      if (n != sessions_of_.end() && n->second >= std::max<std::size_t>(o_.max_sessions_per_principal, 1)) {
        auto v = lru_idle(true);
        if (!v) return false;
        end_session(v);
      }
    }
    if (sessions_.size() < std::max<std::size_t>(o_.max_sessions, 1)) return true;
    auto v = lru_idle(false);
    if (!v) return false;
    end_session(v);
    return true;
  }

  void close_on_strand() {
    boost::system::error_code ec;
    acceptor_.close(ec);
    while (!sessions_.empty()) end_session(sessions_.begin()->second);
    for (const auto& [c, head] : conns_) c->close();
    for (const auto& o : outs_) {
      o->dead = true;
      o->notify();
    }
  }

  static hs_asio::awaitable<void> accept_loop(std::shared_ptr<basic_mcp_http_server_core> self) {
    for (;;) {
      auto [ec, sock] = co_await self->acceptor_.async_accept(hs_asio::as_tuple(hs_asio::use_awaitable));
      if (self->closed_ || ec == hs_asio::error::operation_aborted || !self->acceptor_.is_open()) co_return;
      if (ec) {  // e.g. EMFILE: wait a little rather than spin
        hs_asio::steady_timer t(self->strand_, std::chrono::milliseconds(50));
        co_await t.async_wait(hs_asio::as_tuple(hs_asio::use_awaitable));
        continue;
      }
      if (self->n_connections_ >= std::max<std::size_t>(self->o_.max_connections, 1) && !self->evict_slowest_head()) {
        boost::system::error_code ignored;
        sock.close(ignored);
        continue;
      }
      hs_asio::co_spawn(self->strand_, serve(self, std::move(sock)), hs_asio::detached);
    }
  }

  static hs_asio::awaitable<void> serve(std::shared_ptr<basic_mcp_http_server_core> self, hs_tcp::socket sock);

  // At the connection bound: closes the connection that has spent longest reading a request head (a slowloris, or
  // an idle keep-alive connection), so that a new client is served; false when every connection is busy.
  bool evict_slowest_head() {
    const std::shared_ptr<net::connection>* slowest = nullptr;
    clock::time_point since = clock::time_point::max();
    for (const auto& [c, head] : conns_)
      if (head && *head < since) {
        since = *head;
        slowest = &c;
      }
    if (!slowest) return false;
    (*slowest)->close();  // its read fails; its coroutine ends and leaves conns_
    conns_[*slowest].reset();        // not chosen twice
    return true;
  }

  // The principal of a request (authorization on), or the answer that refuses it: 401 without a bearer token or
  // with one that is not valid for this resource (expired, issued for another audience, refused by the
  // verifier), 403 insufficient_scope without a scope every request needs. Tokens are never quoted.
  struct authenticated {
    std::shared_ptr<const mcp_principal> principal;
    std::shared_ptr<http_response> refusal;
  };
  // What one connection's requests have had checked, kept while it lives (compared byte for byte, so the same
  // again needs no second check):
  // - its last verified token, its principal and until when it holds: a client's requests on one keep-alive
  //   connection skip hashing their token to find it among the verified ones (tokens_); kept only while tokens
  //   are cached (max_cached_tokens > 0);
  // - the Host and Origin its last request passed the DNS-rebinding check with (the options do not change).
  struct connection_memo {
    std::string token;
    std::shared_ptr<const mcp_principal> principal;
    clock::time_point until{};
    std::string host;
    std::string origin;
    bool host_passed = false;
  };
  hs_asio::awaitable<authenticated> authenticate(const hs_http::request<hs_http::string_body>& req,
                                                 connection_memo& memo);
  // The WWW-Authenticate refusal of a request: `status` 401 or 403.
  std::shared_ptr<http_response> auth_refusal(unsigned status, std::string_view error, std::string_view message,
                                              const std::vector<std::string>& scopes = {},
                                              const nlohmann::json& id = nullptr) const;
  // The absolute URL of the RFC 9728 document (on the origin of `resource`).
  std::string metadata_url() const;

  // The response of `r` (a plain function: g++ 12 destroys a braced temporary passed by value to a coroutine
  // twice, GCC bug 99576, so coroutines take the built response).
  static std::shared_ptr<http_response> make_response(reply r) {
    auto res = std::make_shared<http_response>(static_cast<hs_http::status>(r.status), 11);
    if (!r.body.empty()) res->set(hs_http::field::content_type, r.content_type);
    if (!r.session_id.empty()) res->set("Mcp-Session-Id", r.session_id);
    if (!r.allow.empty()) res->set(hs_http::field::allow, r.allow);
    res->keep_alive(!r.close);
    res->body() = std::move(r.body);
    res->prepare_payload();
    return res;
  }
  // A route's answer: its handler's for GET, else 405; 500 when the handler throws.
  static reply serve_route(const mcp_http_route& route, hs_http::verb method, const mcp_principal* caller) {
    if (method != hs_http::verb::get) return error_reply(405, -32600, "Method Not Allowed", nullptr, false, "GET");
    reply r;
    try {
      mcp_http_route_response a = route.handler(caller);
      r.status = a.status;
      r.content_type = std::move(a.content_type);
      r.body = std::move(a.body);
    } catch (...) {
      r = reply{};
      r.status = 500;
      r.content_type = "text/plain; charset=utf-8";
      r.body = "Internal Server Error: the route failed\n";
    }
    return r;
  }
  static reply accepted() {
    reply r;
    r.status = 202;
    return r;
  }
  static reply error_reply(unsigned status, int code, std::string_view message, const nlohmann::json& id = nullptr,
                           bool close = false, std::string allow = {}) {
    reply r;
    r.status = status;
    r.body = mcp_http_error_body(code, message, id);
    r.close = close;
    r.allow = std::move(allow);
    return r;
  }

  static hs_asio::awaitable<void> write_reply(std::shared_ptr<basic_mcp_http_server_core> self, net::connection& stream,
                                              std::shared_ptr<http_response> res) {
    stream.tcp().expires_after(self->o_.write_timeout);
    auto [ec, n] = co_await stream.visit(
        [&](auto& s) { return hs_http::async_write(s, *res, hs_asio::as_tuple(hs_asio::use_awaitable)); });
    (void)ec;
    (void)n;
    stream.tcp().expires_never();
  }

  // Writes what `out` queues until it is done or dead; the connection then closes.
  static hs_asio::awaitable<void> pump(std::shared_ptr<basic_mcp_http_server_core> self, net::connection& stream,
                                       std::shared_ptr<mcp_http_out> out) {
    // A read that ends when the client closes: a GET stream the client left is noticed before the next write.
    auto watch = [](std::shared_ptr<mcp_http_out> o, net::connection* s) -> hs_asio::awaitable<void> {
      char byte[1];
      for (;;) {
        auto [ec, n] = co_await s->visit([&](auto& st) {
          return st.async_read_some(hs_asio::buffer(byte), hs_asio::as_tuple(hs_asio::use_awaitable));
        });
        if (ec || o->done || o->dead) break;
        (void)n;  // a client sends nothing on a stream it reads: ignored
      }
      o->dead = true;
      o->notify();
    };
    hs_asio::co_spawn(self->strand_, watch(out, &stream), hs_asio::detached);
    for (;;) {
      while (!out->queue.empty() && !out->dead) {
        std::string front = std::move(out->queue.front());
        out->queue.pop_front();
        out->queued_bytes -= front.size();
        stream.tcp().expires_after(self->o_.write_timeout);
        auto [ec, n] = co_await stream.visit([&](auto& st) {
          return hs_asio::async_write(st, hs_asio::buffer(front), hs_asio::as_tuple(hs_asio::use_awaitable));
        });
        (void)n;
        stream.tcp().expires_never();
        if (ec) out->dead = true;
      }
      if (out->dead || (out->done && out->queue.empty()) || self->closed_) break;
      out->wake.expires_at(hs_asio::steady_timer::time_point::max());
      (void)co_await out->wake.async_wait(hs_asio::as_tuple(hs_asio::use_awaitable));
    }
    out->dead = true;
    stream.close();  // ends the watch
  }

  // Detaches `out` from every stream that still names it.
  static void detach(session_type& s, const std::shared_ptr<mcp_http_out>& out) {
    for (auto& [id, st] : s.streams)
      if (st->out == out) st->out.reset();
  }

  std::shared_ptr<session_type> find_session(std::string_view id) {
    const auto it = sessions_.find(std::string(id));
    return it == sessions_.end() ? nullptr : it->second;
  }

  // The session a GET or DELETE names by `sid`, if `owner` owns it; else `refusal` is what to send: no `sid`,
  // 405 in the 2026-07-28 era (`modern_refusal`: the era has none) and 400 before it; a session unknown or
  // another principal's, 404 (so one principal cannot tell another's sessions from none).
  std::shared_ptr<session_type> owned_session(std::string_view sid, std::string_view version, std::string_view owner,
                                              std::string_view modern_refusal, reply& refusal) {
    if (sid.empty()) {
      refusal = mcp_version_is_modern(version)
                    ? error_reply(405, -32600, modern_refusal, nullptr, false, "POST")
                    : error_reply(400, -32600, "Bad Request: Mcp-Session-Id header is required");
      return nullptr;
    }
    auto s = find_session(sid);
    if (!s || s->owner() != owner) {
      refusal = error_reply(404, -32001, "Session not found");
      return nullptr;
    }
    return s;
  }

  // A session with no pending request and no open stream.
  static bool idle(const session_type& s) {
    if (s.pending != 0) return false;
    for (auto& [id, st] : s.streams)
      if (st->out) return false;
    return true;
  }

  // Serves one request; true when the connection was taken by a stream (and is now closed). Defined in
  // http_server_handle.hpp.
  hs_asio::awaitable<bool> handle(net::connection& stream, hs_http::request<hs_http::string_body>& req,
                                  std::uint64_t connection, connection_memo& memo);
  hs_asio::awaitable<bool> handle_post(net::connection& stream, hs_http::request<hs_http::string_body>& req,
                                       std::shared_ptr<const mcp_principal> principal, std::uint64_t connection);
  hs_asio::awaitable<bool> handle_get(net::connection& stream, hs_http::request<hs_http::string_body>& req,
                                      std::string owner);
  hs_asio::awaitable<bool> answer(net::connection& stream, std::shared_ptr<http_response> res);

  mcp_strand strand_;  // see make_mcp_strand
  hs_tcp::acceptor acceptor_;
  mcp_listener_hooks hooks_;
  mcp_http_server_options o_;
  std::string path_;
  bool protect_ = true;
  std::atomic<bool> closed_{false};
  std::atomic<std::size_t> n_sessions_{0};
  std::atomic<std::size_t> n_connections_{0};
  std::map<std::string, std::shared_ptr<session_type>> sessions_;
  std::map<std::string, std::size_t> sessions_of_;        // owner → its live sessions
  std::map<std::string, std::size_t> stateless_pending_;  // owner → its stateless requests not yet answered
  std::size_t bytes_in_flight_ = 0;                       // max_bytes_in_flight's count
  std::uint64_t next_connection_ = 0;
  // Every connection, and since when it reads a request head (none: it is serving one, or a stream).
  std::map<std::shared_ptr<net::connection>, std::optional<clock::time_point>> conns_;
  net::tls_context tls_;  // https: the listener's certificate and key (mcp_http_server_options::tls)
  // Verified tokens, by their SHA-256 (never the token itself): the principal and until when it holds.
  struct verified {
    std::shared_ptr<const mcp_principal> principal;
    clock::time_point until;
  };
  std::map<std::string, verified> tokens_;
  std::deque<std::string> token_order_;           // oldest first (the cache's bound)
  std::set<std::shared_ptr<mcp_http_out>> outs_;  // every writer alive (close() wakes them)
};

template <class Unused>
void basic_mcp_http_session<Unused>::send(std::string message, std::int64_t request_id, mcp_outgoing meta) {
  if (auto c = core_.lock()) c->route(*this, std::move(message), request_id, meta);
}
template <class Unused>
bool basic_mcp_http_session<Unused>::close_stream(const nlohmann::json& request_id) {
  auto c = core_.lock();
  return c && c->close_request_stream(*this, request_id);
}
template <class Unused>
void basic_mcp_http_session<Unused>::unanswered(const nlohmann::json& request_id) {
  if (auto c = core_.lock()) c->drop_request(*this, request_id);
}
template <class Unused>
void basic_mcp_http_session<Unused>::stop() noexcept {
  if (closed) return;
  try {
    if (auto c = core_.lock()) c->end_session(this->shared_from_this());
  } catch (...) {  // (allocation) the session is marked closed either way
    closed = true;
  }
}

}  // namespace tool_effects::detail

#include <tool_effects/detail/pop_options.hpp>

#endif  // TOOL_EFFECTS_MCP_TRANSPORT_DETAIL_HTTP_SERVER_HPP
