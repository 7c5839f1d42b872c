// tool_effects/mcp/transport/detail/http_server.hpp — internal to <tool_effects/mcp/server_http.hpp> (included
// there after the public types): the Streamable HTTP server on Boost.Beast. Everything runs on one strand: the
// acceptor, every connection's coroutine, the sessions and their streams; peers post their sends to it. See
// docs/mcp.md ("The server over HTTP").
#ifndef TOOL_EFFECTS_MCP_TRANSPORT_DETAIL_HTTP_SERVER_HPP
#define TOOL_EFFECTS_MCP_TRANSPORT_DETAIL_HTTP_SERVER_HPP

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <random>
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
// Pushed for Beast in C++23 and the coroutines of this header and http_server_handle.hpp; popped at the end.
#include <tool_effects/detail/push_options.hpp>
#include <boost/beast/core/detail/base64.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>

#include <tool_effects/detail/str_cat.hpp>
#include <tool_effects/json/detail/dump.hpp>
#include <tool_effects/json/error.hpp>
#include <tool_effects/mcp/logging.hpp>

namespace tool_effects::detail {

namespace hs_asio = boost::asio;
namespace hs_http = boost::beast::http;
using hs_tcp = boost::asio::ip::tcp;

// Whether MCP-Protocol-Version `v` is one we speak (mcp_protocol_versions(), the one list).
inline bool mcp_http_version_known(std::string_view v) {
  const auto& all = mcp_protocol_versions();
  return std::find(all.begin(), all.end(), v) != all.end();
}

// The HTTP status of a JSON-RPC error answered as JSON: 2026-07-28 gives -32601 404 and the request's own faults
// (-32700, -32600, -32602, -32020 header mismatch, -32021 missing capability, -32022 unsupported version) 400;
// before it, and for every other code, a JSON-RPC error travels in a 200.
constexpr unsigned mcp_http_error_status(int code, bool modern) noexcept {
  if (!modern) return 200;
  switch (code) {
    case -32601: return 404;
    case -32700:
    case -32600:
    case -32602:
    case -32020:
    case -32021:
    case -32022: return 400;
    default: return 200;
  }
}

// RFC 9110 §5.5: a field value without its leading and trailing spaces and tabs.
inline std::string_view mcp_http_trim(std::string_view v) noexcept {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  return v;
}

// A mirrored header's value as the client meant it: "=?base64?...?=" decoded (the 2026-07-28 "Value
// Encoding"); none when the Base64 is broken.
inline std::optional<std::string> mcp_http_header_text(std::string_view v) {
  v = mcp_http_trim(v);
  if (!(v.size() >= 11 && v.substr(0, 9) == "=?base64?" && v.substr(v.size() - 2) == "?=")) return std::string(v);
  std::string_view b64 = v.substr(9, v.size() - 11);
  if (b64.size() % 4 != 0) return std::nullopt;  // padding is not optional
  for (int pad = 0; pad < 2 && !b64.empty() && b64.back() == '='; ++pad) b64.remove_suffix(1);
  // Room for a partial last group too (decoded_size counts whole groups only: decode would write past it).
  std::string out(boost::beast::detail::base64::decoded_size(b64.size() + 3), '\0');
  const auto [written, read] = boost::beast::detail::base64::decode(out.data(), b64.data(), b64.size());
  if (read != b64.size()) return std::nullopt;
  out.resize(written);
  return out;
}

// The host of a Host value or of an origin's authority, lower-cased, without the port ("[::1]" keeps brackets).
inline std::string mcp_http_host_part(std::string_view authority) {
  std::string_view h = authority;
  if (!h.empty() && h.front() == '[') {
    h = h.substr(0, h.find(']') == std::string_view::npos ? h.size() : h.find(']') + 1);
  } else if (const auto colon = h.find(':'); colon != std::string_view::npos) {
    h = h.substr(0, colon);
  }
  std::string out(h);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

inline bool mcp_http_loopback_name(std::string_view host) noexcept {
  return host == "localhost" || host == "127.0.0.1" || host == "[::1]";
}

// "" when Host and Origin pass the DNS-rebinding check, else why not (the 403's message).
inline std::string mcp_http_rebinding_refusal(std::string_view host, std::string_view origin,
                                              const mcp_http_server_options& o) {
  const std::string h = mcp_http_host_part(mcp_http_trim(host));
  if (!mcp_http_loopback_name(h) &&
      std::find(o.allowed_hosts.begin(), o.allowed_hosts.end(), h) == o.allowed_hosts.end())
    return "Forbidden: Host is not an allowed host (DNS rebinding protection)";
  origin = mcp_http_trim(origin);
  if (origin.empty()) return {};
  if (std::find(o.allowed_origins.begin(), o.allowed_origins.end(), origin) != o.allowed_origins.end()) return {};
  const auto scheme = origin.find("://");
  const std::string_view s = scheme == std::string_view::npos ? std::string_view() : origin.substr(0, scheme);
  if ((s == "http" || s == "https") && mcp_http_loopback_name(mcp_http_host_part(origin.substr(scheme + 3)))) return {};
  return "Forbidden: Origin is not an allowed origin (DNS rebinding protection)";
}

// The body of an error answered by the transport itself: a JSON-RPC error with the request's id (null when it
// has none or was not read).
inline std::string mcp_http_error_body(int code, std::string_view message, const nlohmann::json& id = nullptr) {
  return json_dump(nlohmann::json{{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", message}}}});
}

// 128 random bits in hex: a session id no one guesses (std::random_device is the OS's generator on the three
// standard libraries we build with).
inline std::string mcp_http_new_session_id() {
  std::random_device rd;
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  for (int i = 0; i < 4; ++i) {
    auto v = rd();
    for (int k = 0; k < 8; ++k, v >>= 4) out += hex[v & 0xF];
  }
  return out;
}

class mcp_http_server_core;

// The writer of one connection that carries an SSE stream (or waits for a JSON response).
struct mcp_http_out {
  explicit mcp_http_out(const hs_asio::any_io_executor& ex) : wake(ex) {}
  std::deque<std::string> queue;
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
  bool sse = false;           // headers of an SSE stream sent (else a POST still undecided, or JSON)
  bool finished = false;      // the response was sent: no more events
  std::uint64_t seq = 0;      // the last event's number
  std::deque<std::pair<std::uint64_t, std::string>> kept;
  std::size_t kept_bytes = 0;
  std::optional<nlohmann::json> json_response;  // an undecided POST's response, answered as JSON
  std::shared_ptr<mcp_http_out> out;            // the connection writing it now, if any
};

// One session (or one stateless request): the peer handed to the core.
class mcp_http_session final : public mcp_http_peer, public std::enable_shared_from_this<mcp_http_session> {
 public:
  mcp_http_session(std::weak_ptr<mcp_http_server_core> core, std::string id)
      : core_(std::move(core)), id_(std::move(id)) {}
  [[nodiscard]] const std::string& session_id() const noexcept override { return id_; }
  void send(nlohmann::json message, nlohmann::json related = nullptr) override;
  void close_stream(nlohmann::json request_id) override;

  // State below: on the core's strand only.
  std::string version;  // negotiated (initialize result) or as sent
  bool closed = false;
  std::uint64_t next_stream = 1;
  std::map<std::uint64_t, std::shared_ptr<mcp_http_stream>> streams;
  std::map<std::string, std::uint64_t> open_requests;  // request id (dumped) → its stream
  std::deque<std::string> backlog;                     // messages for a GET stream not yet open
  std::chrono::steady_clock::time_point last_active = std::chrono::steady_clock::now();
  std::optional<nlohmann::json> initialize_id;

 private:
  std::weak_ptr<mcp_http_server_core> core_;
  std::string id_;
};

class mcp_http_server_core : public std::enable_shared_from_this<mcp_http_server_core> {
 public:
  using clock = std::chrono::steady_clock;
  mcp_http_server_core(hs_asio::any_io_executor ex, std::shared_ptr<mcp_http_handler> handler,
                       mcp_http_server_options o)
      : strand_(make_mcp_strand(ex)), acceptor_(strand_), handler_(std::move(handler)), o_(std::move(o)) {}

  unsigned short listen(const std::string& address, unsigned short port, const std::string& path) {
    if (path.empty() || path.front() != '/')
      throw std::invalid_argument(
          str_cat("mcp_http_server: the path must start with '/', got \"", path.substr(0, 100), "\""));
    boost::system::error_code ec;
    const auto addr = hs_asio::ip::make_address(address, ec);
    if (ec)
      throw std::invalid_argument(str_cat("mcp_http_server: not an IP address: \"", address.substr(0, 100), "\""));
    path_ = path;
    protect_ = o_.dns_rebinding_protection.value_or(addr.is_loopback());
    const hs_tcp::endpoint ep(addr, port);
    acceptor_.open(ep.protocol());
    acceptor_.set_option(hs_asio::socket_base::reuse_address(true));
    acceptor_.bind(ep, ec);
    if (ec) throw std::system_error(ec, str_cat("mcp_http_server: cannot bind ", address, ":", std::to_string(port)));
    acceptor_.listen();
    const unsigned short bound = acceptor_.local_endpoint().port();
    hs_asio::co_spawn(strand_, accept_loop(shared_from_this()), hs_asio::detached);
    return bound;
  }

  void close() {
    if (closed_.exchange(true)) return;
    auto self = shared_from_this();
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

  // From a peer, on any thread.
  void post_send(std::shared_ptr<mcp_http_session> s, nlohmann::json m, nlohmann::json related) {
    hs_asio::post(strand_, [self = shared_from_this(), s = std::move(s), m = std::move(m),
                            r = std::move(related)]() mutable { self->deliver(*s, std::move(m), r); });
  }
  void post_close_stream(std::shared_ptr<mcp_http_session> s, nlohmann::json id) {
    hs_asio::post(strand_, [self = shared_from_this(), s = std::move(s), id = std::move(id)] {
      const auto it = s->open_requests.find(id.dump());
      if (it == s->open_requests.end()) return;
      const auto st = s->streams.find(it->second);
      if (st == s->streams.end() || !st->second->out) return;
      auto& stream = *st->second;
      if (!stream.sse) self->start_sse(*s, stream);
      stream.out->done = true;
      stream.out->notify();
      stream.out.reset();
    });
  }

 private:
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
  void push_event(mcp_http_stream& st, const std::string& data) {
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
  void start_sse(mcp_http_session& s, mcp_http_stream& st) {
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

  void deliver(mcp_http_session& s, nlohmann::json m, const nlohmann::json& related) {
    if (s.closed || !m.is_object()) return;
    const bool response = m.contains("id") && (m.contains("result") || m.contains("error"));
    std::shared_ptr<mcp_http_stream> st;
    if (response) {
      const auto it = s.open_requests.find(m["id"].dump());
      if (it == s.open_requests.end()) return;  // unknown or answered: dropped
      st = s.streams[it->second];
      s.open_requests.erase(it);
      --pending_of(s);
      if (s.initialize_id && *s.initialize_id == m["id"]) {
        s.initialize_id.reset();
        if (const auto r = m.find("result");
            r != m.end() && r->is_object() && r->contains("protocolVersion") && (*r)["protocolVersion"].is_string())
          s.version = (*r)["protocolVersion"].get<std::string>();
      }
      if (!st) return;
      st->finished = true;
      if (!st->sse && st->out && !o_.always_sse) {
        st->json_response = std::move(m);
        st->out->notify();
        return;
      }
      if (!st->sse) start_sse(s, *st);
      push_event(*st, json_dump(m));
      if (st->out) {
        st->out->done = true;
        st->out->notify();
      }
      trim_finished(s);
      return;
    }
    if (!related.is_null()) {
      if (const auto it = s.open_requests.find(related.dump()); it != s.open_requests.end()) {
        st = s.streams[it->second];
        if (st && !st->finished) {
          if (!st->sse) start_sse(s, *st);
          push_event(*st, json_dump(m));
          return;
        }
      }
    }
    if (s.session_id().empty()) return;  // stateless: no stream for unrelated messages
    for (auto& [id, g] : s.streams)
      if (g->request_id.is_null() && g->out && !g->out->dead) {
        push_event(*g, json_dump(m));
        return;
      }
    s.backlog.push_back(json_dump(m));
    while (s.backlog.size() > o_.max_backlog) s.backlog.pop_front();
  }

  std::size_t& pending_of(mcp_http_session& s) {
    return s.session_id().empty() ? stateless_pending_ : session_pending_[&s];
  }

  // Drops the oldest finished streams past max_kept_streams.
  void trim_finished(mcp_http_session& s) {
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

  // By value: a caller may pass the map's own element (close_on_strand), which the erase below destroys.
  void end_session(std::shared_ptr<mcp_http_session> s) {
    if (s->closed) return;
    s->closed = true;
    for (auto& [id, st] : s->streams)
      if (st->out) {
        st->out->done = true;
        st->out->notify();
      }
    s->streams.clear();
    s->open_requests.clear();
    session_pending_.erase(s.get());
    sessions_.erase(s->session_id());
    n_sessions_ = sessions_.size();
    if (handler_) handler_->on_closed(s);
  }

  void close_on_strand() {
    boost::system::error_code ec;
    acceptor_.close(ec);
    while (!sessions_.empty()) end_session(sessions_.begin()->second);
    for (const auto& c : conns_) {
      c->socket().shutdown(hs_tcp::socket::shutdown_both, ec);
      c->close();
    }
    for (const auto& o : outs_) {
      o->dead = true;
      o->notify();
    }
  }

  static hs_asio::awaitable<void> accept_loop(std::shared_ptr<mcp_http_server_core> self) {
    for (;;) {
      auto [ec, sock] = co_await self->acceptor_.async_accept(hs_asio::as_tuple(hs_asio::use_awaitable));
      if (self->closed_ || ec == hs_asio::error::operation_aborted || !self->acceptor_.is_open()) co_return;
      if (ec) {  // e.g. EMFILE: wait a little rather than spin
        hs_asio::steady_timer t(self->strand_, std::chrono::milliseconds(50));
        co_await t.async_wait(hs_asio::as_tuple(hs_asio::use_awaitable));
        continue;
      }
      if (self->n_connections_ >= self->o_.max_connections) {
        boost::system::error_code ignored;
        sock.close(ignored);
        continue;
      }
      hs_asio::co_spawn(self->strand_, serve(self, std::move(sock)), hs_asio::detached);
    }
  }

  static hs_asio::awaitable<void> serve(std::shared_ptr<mcp_http_server_core> self, hs_tcp::socket sock) {
    auto stream = std::make_shared<boost::beast::tcp_stream>(std::move(sock));
    self->conns_.insert(stream);
    ++self->n_connections_;
    struct guard {
      mcp_http_server_core* core;
      std::shared_ptr<boost::beast::tcp_stream> s;
      ~guard() {
        --core->n_connections_;
        core->conns_.erase(s);
      }
    } g{self.get(), stream};
    boost::beast::flat_buffer buf;
    while (!self->closed_) {
      hs_http::request_parser<hs_http::string_body> parser;
      parser.header_limit(static_cast<std::uint32_t>(self->o_.max_header_bytes));
      parser.body_limit(self->o_.max_body_bytes);
      stream->expires_after(self->o_.read_timeout);
      auto [ec, n] = co_await hs_http::async_read(*stream, buf, parser, hs_asio::as_tuple(hs_asio::use_awaitable));
      (void)n;
      if (ec == hs_http::error::header_limit) {
        auto res = make_response(error_reply(431, -32600, "Request header fields too large", nullptr, true));
        co_await write_reply(self, *stream, res);
        co_return;
      }
      if (ec == hs_http::error::body_limit) {
        auto res = make_response(error_reply(413, -32600, "Request body too large", nullptr, true));
        co_await write_reply(self, *stream, res);
        co_return;
      }
      if (ec && ec.category() == boost::system::error_code(hs_http::error::end_of_stream).category() &&
          ec != hs_http::error::end_of_stream && ec != hs_http::error::partial_message) {
        auto res = make_response(error_reply(400, -32600, "Malformed HTTP request", nullptr, true));
        co_await write_reply(self, *stream, res);
        co_return;
      }
      if (ec) co_return;  // closed, reset or too slow
      auto req = parser.release();
      const bool keep = req.keep_alive() && req.version() == 11;
      if (co_await self->handle(*stream, req)) co_return;  // the connection carried a stream
      if (!keep) co_return;
    }
  }

  using http_response = hs_http::response<hs_http::string_body>;
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
  static reply error_reply(unsigned status, int code, std::string_view message, const nlohmann::json& id = nullptr,
                           bool close = false, std::string allow = {}) {
    reply r;
    r.status = status;
    r.body = mcp_http_error_body(code, message, id);
    r.close = close;
    r.allow = std::move(allow);
    return r;
  }

  static reply error_reply_allow(unsigned status, int code, std::string_view message, std::string allow = {}) {
    return error_reply(status, code, message, nullptr, false, std::move(allow));
  }
  static reply error_reply_in(unsigned status, int code, std::string_view message, const nlohmann::json& id = nullptr) {
    return error_reply(status, code, message, id);
  }

  static hs_asio::awaitable<void> write_reply(std::shared_ptr<mcp_http_server_core> self,
                                              boost::beast::tcp_stream& stream, std::shared_ptr<http_response> res) {
    stream.expires_after(self->o_.write_timeout);
    auto [ec, n] = co_await hs_http::async_write(stream, *res, hs_asio::as_tuple(hs_asio::use_awaitable));
    (void)ec;
    (void)n;
    stream.expires_never();
  }

  // Writes what `out` queues until it is done or dead; the connection then closes.
  static hs_asio::awaitable<void> pump(std::shared_ptr<mcp_http_server_core> self, boost::beast::tcp_stream& stream,
                                       std::shared_ptr<mcp_http_out> out) {
    // A read that ends when the client closes: a GET stream the client left is noticed before the next write.
    auto watch = [](std::shared_ptr<mcp_http_out> o, boost::beast::tcp_stream* s) -> hs_asio::awaitable<void> {
      char byte[1];
      for (;;) {
        auto [ec, n] =
            co_await s->socket().async_read_some(hs_asio::buffer(byte), hs_asio::as_tuple(hs_asio::use_awaitable));
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
        stream.expires_after(self->o_.write_timeout);
        auto [ec, n] =
            co_await hs_asio::async_write(stream, hs_asio::buffer(front), hs_asio::as_tuple(hs_asio::use_awaitable));
        (void)n;
        stream.expires_never();
        if (ec) out->dead = true;
      }
      if (out->dead || (out->done && out->queue.empty()) || self->closed_) break;
      out->wake.expires_at(hs_asio::steady_timer::time_point::max());
      (void)co_await out->wake.async_wait(hs_asio::as_tuple(hs_asio::use_awaitable));
    }
    out->dead = true;
    boost::system::error_code ec;
    stream.socket().shutdown(hs_tcp::socket::shutdown_both, ec);
    stream.socket().close(ec);  // ends the watch
  }

  // Detaches `out` from every stream that still names it.
  static void detach(mcp_http_session& s, const std::shared_ptr<mcp_http_out>& out) {
    for (auto& [id, st] : s.streams)
      if (st->out == out) st->out.reset();
  }

  std::shared_ptr<mcp_http_session> find_session(std::string_view id) {
    const auto it = sessions_.find(std::string(id));
    return it == sessions_.end() ? nullptr : it->second;
  }

  bool session_idle(mcp_http_session& s) {
    if (session_pending_[&s] != 0) return false;
    for (auto& [id, st] : s.streams)
      if (st->out) return false;
    return clock::now() - s.last_active > o_.session_idle_timeout;
  }

  // Serves one request; true when the connection was taken by a stream (and is now closed).
  hs_asio::awaitable<bool> handle(boost::beast::tcp_stream& stream, hs_http::request<hs_http::string_body>& req);
  hs_asio::awaitable<bool> handle_post(boost::beast::tcp_stream& stream, hs_http::request<hs_http::string_body>& req);
  hs_asio::awaitable<bool> handle_get(boost::beast::tcp_stream& stream, hs_http::request<hs_http::string_body>& req);

  mcp_strand strand_;  // see make_mcp_strand
  hs_tcp::acceptor acceptor_;
  std::shared_ptr<mcp_http_handler> handler_;
  mcp_http_server_options o_;
  std::string path_;
  bool protect_ = true;
  std::atomic<bool> closed_{false};
  std::atomic<std::size_t> n_sessions_{0};
  std::atomic<std::size_t> n_connections_{0};
  std::map<std::string, std::shared_ptr<mcp_http_session>> sessions_;
  std::map<const mcp_http_session*, std::size_t> session_pending_;
  std::size_t stateless_pending_ = 0;
  std::set<std::shared_ptr<boost::beast::tcp_stream>> conns_;
  std::set<std::shared_ptr<mcp_http_out>> outs_;  // every writer alive (close() wakes them)
};

inline void mcp_http_session::send(nlohmann::json message, nlohmann::json related) {
  if (auto c = core_.lock()) c->post_send(shared_from_this(), std::move(message), std::move(related));
}
inline void mcp_http_session::close_stream(nlohmann::json request_id) {
  if (auto c = core_.lock()) c->post_close_stream(shared_from_this(), std::move(request_id));
}

}  // namespace tool_effects::detail

#include <tool_effects/mcp/transport/detail/http_server_handle.hpp>

#include <tool_effects/detail/pop_options.hpp>

#endif  // TOOL_EFFECTS_MCP_TRANSPORT_DETAIL_HTTP_SERVER_HPP
