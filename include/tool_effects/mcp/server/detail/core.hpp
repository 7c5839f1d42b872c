// tool_effects/mcp/server/detail/core.hpp — internal to <tool_effects/mcp/server.hpp>:
// what the server answers, by method, independent of the transport. Every
// transport (stdio, Streamable HTTP) hands each incoming request to
// `mcp_server::handle_request` through the role-neutral session.
#ifndef TOOL_EFFECTS_MCP_SERVER_DETAIL_CORE_HPP
#define TOOL_EFFECTS_MCP_SERVER_DETAIL_CORE_HPP

#include <cstdint>
#include <deque>
#include <stdexcept>
#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include <nlohmann/json.hpp>

#include <tool_effects/detail/quote.hpp>
#include <tool_effects/detail/str_cat.hpp>
#include <tool_effects/attempt.hpp>
#include <tool_effects/json.hpp>
#include <tool_effects/json/arguments.hpp>
#include <tool_effects/mcp/auth/principal.hpp>
#include <tool_effects/mcp/logging.hpp>
#include <tool_effects/mcp/server/asker.hpp>
#include <tool_effects/mcp/protocol/detail/session.hpp>
#include <tool_effects/mcp/errors.hpp>

namespace tool_effects {


/// The `_meta` key of a client-supplied idempotency key on `tools/call`: a
/// non-empty string of at most 256 bytes naming the logical call. A call
/// repeated with the same key (a retry after a lost response) is the same
/// call: with a journal in the server's dispatch options, it is answered from
/// the journal instead of running again. Documented in docs/mcp.md.
inline constexpr std::string_view mcp_idempotency_meta_key = "io.github.tool-effects/idempotency-key";
/// The longest idempotency key accepted (longer: invalid params).
inline constexpr std::size_t mcp_max_idempotency_key_bytes = 256;

namespace detail {

// JSON-RPC codes the server uses.
inline constexpr int rpc_invalid_params = -32602;
inline constexpr int rpc_method_not_found = -32601;
inline constexpr int rpc_internal_error = -32603;

// The `tools/call` request read strictly: name (non-empty string), arguments (object, absent = {}),
// the idempotency key in _meta when present. Errors name the member (JSON pointer into params).
struct tool_call_request {
  std::string name;
  nlohmann::json arguments;
  std::string idempotency_key;  // "" when the client gave none
};

// The call `params` (a tools/call request's) asks for. Its arguments are moved out of `params` (left null there);
// the caller may still read its other members (requestState, inputResponses).
inline tool_call_request read_tool_call(nlohmann::json& params) {
  auto bad = [](const std::string& at, std::string message, const nlohmann::json& v) -> mcp_server_error {
    const std::string shown = v.is_null() ? std::string() : preview(v);
    return mcp_server_error(rpc_invalid_params,
                            str_cat("Invalid params: at ", at, ": ", message, shown.empty() ? "" : ": ", shown));
  };
  if (!params.is_object()) throw bad("", expected("an object", params), params);
  tool_call_request r;
  const auto name = params.find("name");
  if (name == params.end()) throw mcp_server_error(rpc_invalid_params, "Invalid params: missing required key \"name\"");
  if (!name->is_string() || name->get_ref<const std::string&>().empty())
    throw bad("/name", name->is_string() ? std::string("expected a non-empty string") : expected("a string", *name),
              *name);
  r.name = name->get<std::string>();
  if (const auto a = params.find("arguments"); a != params.end() && !a->is_null()) {
    if (!a->is_object()) throw bad("/arguments", expected("an object", *a), *a);
    r.arguments = std::move(*a);
  } else {
    r.arguments = nlohmann::json::object();
  }
  if (const auto m = params.find("_meta"); m != params.end() && m->is_object()) {
    if (const auto k = m->find(mcp_idempotency_meta_key); k != m->end()) {
      const std::string at = str_cat("/_meta/", pointer_token(mcp_idempotency_meta_key));
      if (!k->is_string() || k->get_ref<const std::string&>().empty() ||
          k->get_ref<const std::string&>().size() > mcp_max_idempotency_key_bytes)
        throw bad(at, "expected a non-empty string of at most 256 bytes", *k);
      r.idempotency_key = k->get<std::string>();
    }
  }
  return r;
}

// The CallToolResult of one outcome: a tool that returned a CallToolResult is sent as it is; any other
// result is one text block (the answer's text: a string as is, else compact JSON) with the object itself
// as structuredContent; a failure is `isError: true` with its stable reason and explanation as the text.
inline nlohmann::json call_tool_result(const outcome<nlohmann::json>& o, std::string_view tool) {
  if (o.has_value() && is_mcp_tool_result(o.value())) return o.value();
  tool_answer a = answer_of(o, tool);
  const bool is_error = a.is_error;
  nlohmann::json r = mcp_text_result(std::move(a.content));
  if (!is_error && o.has_value() && o.value().is_object()) r["structuredContent"] = o.value();
  if (is_error) r["isError"] = true;
  return r;
}

// The same, from an outcome the caller gives up: a string result (a large text, typically) is moved into its
// text block instead of copied through the answer.
inline nlohmann::json call_tool_result(outcome<nlohmann::json>&& o, std::string_view tool) {
  if (!o.has_value() || !o.value().is_string()) return call_tool_result(std::as_const(o), tool);
  return mcp_text_result(std::move(o.value().get_ref<std::string&>()));
}

// The level of a `logging/setLevel` request read strictly: `level`, one of the eight names (RFC 5424's
// severities) the specification lists, exactly; else invalid params naming the member and the value.
// What a log level must be, in an error naming a bad one (logging/setLevel, a 2026-07-28 request's _meta).
inline constexpr std::string_view log_level_expected =
    "expected one of debug, info, notice, warning, error, critical, alert, emergency: ";

inline mcp_log_level read_set_level(const nlohmann::json& params) {
  if (!params.is_object())
    throw mcp_server_error(rpc_invalid_params,
                           str_cat("Invalid params: at : ", expected("an object", params), ": ", preview(params)));
  const auto level = params.find("level");
  if (level == params.end())
    throw mcp_server_error(rpc_invalid_params, "Invalid params: missing required key \"level\"");
  const mcp_log_level l =
      level->is_string() ? mcp_log_level_named(level->get_ref<const std::string&>()) : mcp_log_level::none;
  if (l == mcp_log_level::none)
    throw mcp_server_error(rpc_invalid_params,
                           str_cat("Invalid params: at /level: ", log_level_expected, preview(*level)));
  return l;
}

// The level a tool's log message is sent at: the level it names ("debug" ... "emergency"), any other text "info".
inline mcp_log_level tool_log_level(std::string_view level) noexcept {
  const mcp_log_level l = mcp_log_level_named(level);
  return l == mcp_log_level::none ? mcp_log_level::info : l;
}

// The `notifications/message` params of a tool's log message: its level, the tool as `logger`, the message as
// `data`, cut at a UTF-8 character boundary to `max_bytes` ("..." appended) and made valid UTF-8.
inline nlohmann::json log_message_params(mcp_log_level level, std::string_view logger, std::string_view message,
                                         std::size_t max_bytes) {
  nlohmann::json p = {{"level", std::string(mcp_log_level_name(level))}};
  if (!logger.empty()) p["logger"] = valid_utf8(logger);
  p["data"] = utf8_excerpt(message, max_bytes);
  return p;
}

// Where a request's log messages go, and the level of its session.
struct mcp_request_log {
  std::shared_ptr<std::atomic<mcp_log_level>> level;
  std::function<void(nlohmann::json)> send;
};
// One tools/call on a caller thread (blocks it while the call waits for its grant and runs).
// Forwards a tool's progress and its log messages (at or above its session's level, cut to max_log_bytes) to
// the request's client. Texts are made valid UTF-8 here, so no transport meets a byte it cannot encode.
struct mcp_request_reporter final : attempt_reporter {
  const std::function<void(double, double, const std::string&)>* send;
  const mcp_request_log* to;
  std::string_view tool;
  std::size_t max_bytes;
  const mcp_client_asker* asker = nullptr;  // what the call may ask its client
  const mcp_principal* principal = nullptr;  // who sent the call (authorization on); null otherwise
  const std::function<void()>* close_stream = nullptr;  // ends the request's stream unanswered (may be empty)
  mcp_request_reporter(const std::function<void(double, double, const std::string&)>* f, const mcp_request_log* l,
                       std::string_view t, std::size_t max, const mcp_client_asker* a = nullptr,
                       const std::function<void()>* close = nullptr)
      : send(f), to(l), tool(t), max_bytes(max), asker(a), close_stream(close) {}
  void progress(double p, double total, const std::string& message) const override {
    if (*send) (*send)(p, total, valid_utf8(message));
  }
  std::size_t max_messages = static_cast<std::size_t>(-1);  // forwarded per call; past it dropped and counted
  mutable std::atomic<std::size_t> forwarded{0};
  mutable std::atomic<std::size_t> dropped{0};
  void log(const std::string& level, const std::string& message) const override {
    if (!to->send || !to->level) return;
    const mcp_log_level l = tool_log_level(level);
    if (!mcp_log_level_passes(l, to->level->load())) return;
    if (forwarded.fetch_add(1) >= max_messages) {
      dropped.fetch_add(1);
      return;
    }
    to->send(log_message_params(l, tool, message, max_bytes));
  }
  // After the call, before its response: one warning saying how many messages the bound dropped, if any.
  void report_dropped() const {
    const std::size_t n = dropped.load();
    if (n == 0 || !to->send || !to->level || !mcp_log_level_passes(mcp_log_level::warning, to->level->load())) return;
    to->send(log_message_params(mcp_log_level::warning, tool,
                                str_cat(std::to_string(n), " log message(s) of this call dropped past the bound of ",
                                        std::to_string(max_messages), " per call (max_log_messages)"),
                                max_bytes));
  }
};

// Whether a server dispatching with `Options` runs a tools/call without a caller thread even when
// mcp_server_options::nonblocking_calls is off: the call's turn is prepared and started in the thread that awaits
// it (the session's), so nothing that starts it may block there. Options without an approver (it may ask a person)
// and without a journal (its start records are written, and synced, as the turn starts) start a turn without
// blocking; the tools run on the server's executor either way.
template <class Options>
inline constexpr bool mcp_turn_starts_without_blocking =
    !options_have_approver<Options> && !options_have_journal<Options>;

// At most `max` tools/calls at once, the rest admitted first come, first served as calls end: the bound of
// mcp_server_options::max_concurrent_calls for calls that hold no caller thread (mcp_server::without_caller_thread).
// `admit(start)` calls `start()` at once when a place is free, else when one frees (in the thread of the
// `release()` that frees it; `start` must not block). Each admitted call releases its place once.
class mcp_call_admission {
 public:
  explicit mcp_call_admission(std::size_t max) : max_(max == 0 ? 1 : max) {}
  void admit(std::function<void()> start) {
    {
      const std::lock_guard lock(m_);
      if (running_ >= max_) {
        waiting_.push_back(std::move(start));
        return;
      }
      ++running_;
    }
    start();
  }
  void release() {
    std::function<void()> next;
    {
      const std::lock_guard lock(m_);
      if (waiting_.empty()) {
        if (--running_ == 0) idle_.notify_all();
        return;
      }
      next = std::move(waiting_.front());  // the place passes to the oldest waiting call
      waiting_.pop_front();
    }
    next();
  }
  // Returns once no admitted call runs, none waits and no thread is inside a post to the server's own threads
  // (the server's destructor: the calls under way end first).
  void wait_idle() {
    std::unique_lock lock(m_);
    idle_.wait(lock, [this] { return running_ == 0 && waiting_.empty() && posting_ == 0; });
  }
  // A thread posting to the server's caller threads (mcp_posting, below): the call it posts for may end on
  // another thread, and the server be destroyed, before its post() has returned from signalling their pool.
  void enter_post() {
    const std::lock_guard lock(m_);
    ++posting_;
  }
  void leave_post() {
    const std::lock_guard lock(m_);
    if (--posting_ == 0 && running_ == 0) idle_.notify_all();
  }

 private:
  std::mutex m_;
  std::condition_variable idle_;
  std::size_t max_;
  std::size_t running_ = 0;
  std::size_t posting_ = 0;
  std::deque<std::function<void()>> waiting_;
};

// Held around a post to the server's caller threads: the server's destructor waits until the post returned.
class mcp_posting {
 public:
  explicit mcp_posting(mcp_call_admission& a) : a_(&a) { a_->enter_post(); }
  mcp_posting(const mcp_posting&) = delete;
  mcp_posting& operator=(const mcp_posting&) = delete;
  ~mcp_posting() { a_->leave_post(); }

 private:
  mcp_call_admission* a_;
};

// An admitted call's place, released when it ends.
class mcp_admitted_call {
 public:
  explicit mcp_admitted_call(mcp_call_admission& a) noexcept : a_(&a) {}
  mcp_admitted_call(const mcp_admitted_call&) = delete;
  mcp_admitted_call& operator=(const mcp_admitted_call&) = delete;
  ~mcp_admitted_call() { a_->release(); }

 private:
  mcp_call_admission* a_;
};

// The capabilities a session's client declared in `initialize` (set once on the session, read by its calls).
class mcp_peer_capabilities {
 public:
  void set(nlohmann::json c) {
    const std::lock_guard lock(m_);
    caps_ = c.is_object() ? std::move(c) : nlohmann::json::object();
  }
  [[nodiscard]] nlohmann::json get() const {
    const std::lock_guard lock(m_);
    return caps_;
  }

 private:
  mutable std::mutex m_;
  nlohmann::json caps_ = nlohmann::json::object();
};

// Why `args` do not fit the described `arguments` struct of static tool `Tool`, if it has one.
template <class Tool>
std::optional<std::string> mcp_argument_error_of(const nlohmann::json& args) {
  if constexpr (std::is_void_v<typename tool_arguments<Tool>::type>) {
    (void)args;
    return std::nullopt;
  } else {
    try {
      (void)parse_arguments<typename tool_arguments<Tool>::type>(args);
    } catch (const json_error& e) {
      return std::string(e.what());
    }
    return std::nullopt;
  }
}

// The one form of an approval asked of a user by elicitation, for the server and the gateway alike: the message
// (the library's one text of a confirmation request, confirmation.hpp: tool, server, reason, effects, class, key
// and canonical arguments, printable; cut to 8 KiB), a schema of one boolean, and the answer that approves: the
// user accepted with `approve` true.
inline std::string approval_message(const confirmation_request& c) {
  return str_cat("Approve this call? ", utf8_excerpt(to_string(c), 8192));
}
inline const nlohmann::json& approval_schema() {
  static const nlohmann::json schema = {
      {"type", "object"},
      {"properties",
       {{"approve", {{"type", "boolean"}, {"title", "Run this call"}, {"description", "Run it once, as shown"}}}}},
      {"required", nlohmann::json::array({"approve"})}};
  return schema;
}
inline bool approval_granted(const nlohmann::json& answer) {
  const auto content = answer.find("content");
  return answer.value("action", std::string()) == "accept" && content != answer.end() && content->is_object() &&
         content->value("approve", false);
}

// The approval of a destructive or unknown call asked of the user at the client of its request (the server's
// approver when its options have none). Approved only when approval_granted; a client without the elicitation
// capability, a decline, a cancel, a timeout or any failure of the ask is a denial. The approval is asked for this
// call of this request, by its own asker, and is good for nothing else.
template <class = void>  // compiled only where used (see mcp_client_asker)
confirmation mcp_ask_user_to_confirm(const mcp_client_asker& asker, const confirmation_request& c) {
  if (!asker.client_declared("elicitation")) return confirmation::deny;
  try {
    return approval_granted(asker.elicit(approval_message(c), approval_schema())) ? confirmation::approve
                                                                                   : confirmation::deny;
  } catch (const std::exception&) {  // the ask failed: no approval
    return confirmation::deny;
  }
}

}  // namespace detail

/// What the tool running with `ctx` may ask the client of its MCP request
/// (elicitation, sampling); null when the call was not started by an
/// `mcp_server`. Valid while the call runs.
inline const mcp_client_asker* mcp_client_asker_of(const attempt_context& ctx) noexcept {
  const auto* r = dynamic_cast<const detail::mcp_request_reporter*>(ctx.reporter);
  return r ? r->asker : nullptr;
}

/// Who sent the MCP request of the tool running with `ctx`, when the server authorizes its requests
/// (mcp_http_server_options::authorization): the principal its access token names. Null without authorization,
/// over stdio, and for a call not started by an `mcp_server`. Valid while the call runs.
inline const mcp_principal* mcp_caller_of(const attempt_context& ctx) noexcept {
  const auto* r = dynamic_cast<const detail::mcp_request_reporter*>(ctx.reporter);
  return r ? r->principal : nullptr;
}

/// Ends the stream that carries the MCP request of the tool running with `ctx`, without answering it (SEP-1699
/// polling, Streamable HTTP): the client reconnects with GET and `Last-Event-ID` (after the priming event's
/// `retry`) and the tool's result comes there, replayed if it was sent before. Returns whether the request has
/// such a stream: false over stdio, for a request without a session (2026-07-28, stateless) and for a call
/// not started by an `mcp_server`, where it does nothing. The call goes on either way.
inline bool mcp_close_request_stream(const attempt_context& ctx) {
  const auto* r = dynamic_cast<const detail::mcp_request_reporter*>(ctx.reporter);
  if (!r || !r->close_stream || !*r->close_stream) return false;
  (*r->close_stream)();
  return true;
}

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_MCP_SERVER_DETAIL_CORE_HPP
