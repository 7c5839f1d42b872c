// tool_effects/mcp/protocol/detail/transport.hpp — internal: the interface every MCP
// transport implements (`mcp_transport`), for the role-neutral session
// (mcp/protocol/detail/session.hpp) to carry its messages over, and what goes
// with a message besides its text (`mcp_outgoing`, `mcp_incoming`).
#ifndef TOOL_EFFECTS_MCP_PROTOCOL_DETAIL_TRANSPORT_HPP
#define TOOL_EFFECTS_MCP_PROTOCOL_DETAIL_TRANSPORT_HPP

#include <algorithm>
#include <map>
#include <chrono>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>

#include <tool_effects/mcp/errors.hpp>

namespace tool_effects {
struct mcp_principal;  // <tool_effects/mcp/auth/principal.hpp>
}  // namespace tool_effects

namespace tool_effects::detail {

namespace asio = boost::asio;
// The strand a session and its transport run on, type-erased: made only by
// make_mcp_strand. Over an io_context's or a thread_pool's own executor the
// strand is small enough for any_io_executor's inline storage, and its inner
// executor is concrete: copying, dispatching through and querying it do not
// allocate (a strand<any_io_executor> allocates for each of these, about 40
// times per MCP call; docs/benchmarks.md).
using mcp_strand = asio::any_io_executor;

// A new strand over `ex` (see mcp_strand).
inline mcp_strand make_mcp_strand(const asio::any_io_executor& ex) {
  if (const auto* io = ex.target<asio::io_context::executor_type>()) return asio::make_strand(*io);
  if (const auto* pool = ex.target<asio::thread_pool::executor_type>()) return asio::make_strand(*pool);
  return asio::make_strand(ex);
}

// Calls f with the strand that `s` holds (one of the types make_mcp_strand
// makes); false if `s` holds none of them.
template <class F>
bool visit_mcp_strand(const mcp_strand& s, F&& f) {
  if (const auto* a = s.target<asio::strand<asio::io_context::executor_type>>()) return f(*a), true;
  if (const auto* b = s.target<asio::strand<asio::thread_pool::executor_type>>()) return f(*b), true;
  if (const auto* c = s.target<asio::strand<asio::any_io_executor>>()) return f(*c), true;
  return false;
}

// The executor under the strand `s`.
inline asio::any_io_executor mcp_inner_executor(const mcp_strand& s) {
  asio::any_io_executor inner;
  visit_mcp_strand(s, [&](const auto& strand) { inner = strand.get_inner_executor(); });
  return inner;
}

// The strand `s` seen as check_not_inside (detail/executor.hpp) expects it.
struct mcp_strand_probe {
  const mcp_strand& s;
  [[nodiscard]] bool running_in_this_thread() const {
    bool in = false;
    visit_mcp_strand(s, [&](const auto& strand) { in = strand.running_in_this_thread(); });
    return in;
  }
};

// The session (mcp/protocol/detail/session.hpp) is a class template only so that a translation unit that uses no
// session compiles none of its coroutines: g++ emits every inline non-template coroutine, and all it reaches, at
// -O0. Its one instantiation is `mcp_session`; so for the other class templates `basic_mcp_*` of the MCP wing.
template <class Unused = void>
class basic_mcp_session;
using mcp_session = basic_mcp_session<>;

// Writing to a pipe whose reader exited must be an error, not SIGPIPE. Only
// the default disposition is changed (a program's own handler is kept).
inline void ignore_sigpipe_once() {
  static const bool done = [] {
    struct sigaction old {};
    if (::sigaction(SIGPIPE, nullptr, &old) == 0 && old.sa_handler == SIG_DFL) std::signal(SIGPIPE, SIG_IGN);
    return true;
  }();
  (void)done;
}

// The wait before reopening something that ended (a stream, a subscription)
// for the `attempt`-th time in a row (0: the first): `base` doubled per
// attempt, capped by `cap`.
inline std::chrono::milliseconds mcp_backoff(std::chrono::milliseconds base, std::chrono::milliseconds cap,
                                             std::size_t attempt) {
  auto delay = std::min(base, cap);
  for (std::size_t i = 0; i < attempt && delay < cap; ++i) delay = std::min(delay * 2, cap);
  return delay;
}

// What a transport may mirror of an outgoing message (the Streamable HTTP
// binding of 2026-07-28 puts it in headers; stdio has no use for it).
struct mcp_outgoing {
  // Sent under a modern version: stateless (no session), the request's
  // metadata mirrored into headers.
  bool modern = false;
  // The protocol version the message is sent under (its `_meta` one when
  // modern); empty: the transport's negotiated one, if any.
  std::string version;
  // The method of a request or notification (empty for a response).
  std::string method;
  // `params.name` (tools/call, prompts/get) or `params.uri`
  // (resources/read), raw: the transport encodes it.
  std::optional<std::string> name;
  // tools/call: the arguments the tool's inputSchema marks with
  // `x-mcp-header`, as (header name after "Mcp-Param-", raw value).
  std::vector<std::pair<std::string, std::string>> params;
  // The id of the peer's request this message belongs to: the response to
  // it, a progress notification for it, or a request its handler sends
  // (a server transport routes such a message on that request's stream);
  // null when it belongs to none.
  nlohmann::json related_id = nullptr;
  // Of an error response: its JSON-RPC code (the Streamable HTTP binding of 2026-07-28 picks the status by it);
  // 0 for anything else.
  int error_code = 0;
};

// What a transport knows of one incoming message besides its text, handed to the session with it and on to the
// handler of a request (mcp_request_context::incoming). Stdio knows nothing of the kind (null).
struct mcp_incoming {
  // The protocol version the transport carried with the message (HTTP's MCP-Protocol-Version; "" when none).
  std::string transport_version;
  // The Mcp-Param-* headers of an HTTP request (lower-case name after the prefix -> value, "=?base64?...?="
  // decoded; none: broken Base64); absent on stdio.
  std::optional<std::map<std::string, std::optional<std::string>>> param_headers;
  // Who sent it, when the transport authenticates its peer (HTTP with authorization); null otherwise.
  std::shared_ptr<const mcp_principal> principal;
  // Whom what the message creates on the server belongs to (idempotency keys, parked calls): the principal's key,
  // else its session (session_caller), else its connection (connection_caller); "" when the transport says nothing.
  std::string caller;
};

// The forms of mcp_incoming::caller a transport makes without a principal: one definition, which the server
// reads back (is_connection_caller: a parked call of such a caller belongs to nobody in particular).
inline std::string session_caller(std::string_view session_id) { return "session:" + std::string(session_id); }
inline std::string connection_caller(std::uint64_t connection) {
  return "connection:" + std::to_string(connection);
}
inline bool is_connection_caller(std::string_view caller) noexcept { return caller.starts_with("connection:"); }

// One transport of one session. Every member runs on the session's strand. Both roles and every binding use
// it: the client's child process (transport/detail/stdio_child.hpp) and Streamable HTTP client
// (transport/detail/http_client.hpp), the server's stdio (transport/detail/stdio_server.hpp) and each session or
// stateless request of its HTTP listener (transport/detail/http_server.hpp).
// What it receives goes to `mcp_session::deliver` (one message or batch of
// text); a fault of the transport ends the session (`mcp_session::fail`) or
// one request (`mcp_session::fail_request`). The transport holds its session
// weakly: the session owns it and stops it when it ends.
class mcp_transport {
 public:
  virtual ~mcp_transport() = default;
  // Starts carrying the messages of `s` (throws mcp_error(launch_failed) when it cannot).
  virtual void start(const std::shared_ptr<mcp_session>& s) = 0;
  // Sends one JSON-RPC message; `request_id` is the id of a request of ours
  // (0: a notification or a response; negative: a notification whose
  // acceptance the session awaits, `mcp_session::settle`/`fail_request`).
  // `meta`: what the transport may mirror of it.
  virtual void send(std::string message, std::int64_t request_id, mcp_outgoing meta) = 0;
  // The request `request_id` timed out (its cancellation is being sent).
  virtual void abandon(std::int64_t request_id) = 0;
  // Ends the stream that carries the peer's request `request_id` without answering it (Streamable HTTP's SSE
  // polling: the client resumes the stream and gets the answer there); false when the transport has no such
  // stream (stdio, a stateless request).
  virtual bool close_stream(const nlohmann::json& /*request_id*/) { return false; }
  // Whether close_stream can ever succeed on this transport (asked before a request is served).
  [[nodiscard]] virtual bool closes_streams() const noexcept { return false; }
  // The peer's request `request_id` gets no answer: the peer cancelled it (notifications/cancelled). A transport
  // that holds something open for the answer (an HTTP request's stream) lets it go.
  virtual void unanswered(const nlohmann::json& /*request_id*/) {}
  // The handshake settled on `version`.
  virtual void initialized(const std::string& version) = 0;
  // Clean end (stdio: close stdin and wait for the exit; HTTP: DELETE the session), then stop().
  virtual asio::awaitable<void> shutdown() = 0;
  // Ends everything at once.
  virtual void stop() noexcept = 0;
  // A peer's text as an error quotes it: every secret this transport sent (tokens, the endpoint's header values)
  // replaced by "[redacted]". The child process's pipes carry none.
  [[nodiscard]] virtual std::string redact(std::string text) const { return text; }
  // What an error adds about the peer ("; last stderr lines: | ..."), or "".
  [[nodiscard]] virtual std::string diagnostics() const { return {}; }
  // Whether, under a modern version, the binding is stateless request/response
  // (Streamable HTTP of 2026-07-28): a timed-out request is cancelled by closing
  // its stream (no notifications/cancelled), no notification goes from client
  // to server and no request from server to client. False for stdio.
  [[nodiscard]] virtual bool modern_stateless() const noexcept { return false; }
  // Whether the transport reports a notification's acceptance (HTTP: its 202),
  // so that `mcp_session::notify_accepted` can await it; stdio cannot.
  [[nodiscard]] virtual bool acknowledges_notifications() const noexcept { return false; }
  // The HTTP status an rpc error came with (0: none, e.g. stdio or a 200).
  [[nodiscard]] virtual unsigned status_of(const mcp_rpc_error&) const noexcept { return 0; }
  // How long to wait before reopening a long-lived request of ours (the
  // client's subscriptions/listen) that ended for the `attempt`-th time in a
  // row (0: the first); none: give up. HTTP: the endpoint's reconnect bound
  // and backoff (max_reconnects, default_retry, max_retry); stdio: their defaults.
  [[nodiscard]] virtual std::optional<std::chrono::milliseconds> reopen_delay(std::size_t attempt) const {
    if (attempt >= 8) return std::nullopt;
    return mcp_backoff(std::chrono::seconds(1), std::chrono::seconds(30), attempt);
  }
};

}  // namespace tool_effects::detail

#endif  // TOOL_EFFECTS_MCP_PROTOCOL_DETAIL_TRANSPORT_HPP
