// tool_effects/mcp/detail/server_ask.hpp — internal to <tool_effects/mcp/server.hpp>: what a tool running in
// an mcp_server asks its client (elicitation/create, sampling/createMessage), over the request's own channel
// (stdio: the session's request, as the client role sends its own; Streamable HTTP: the POST stream of the
// call that asks). The request is checked before it goes, the answer strictly after it came back (the client
// side's checks: elicitation_schema.hpp, sampling_checks.hpp), and every failure is an `mcp_ask_error` with a
// stable reason. See docs/mcp.md ("The server": "Tools ask the client").
#ifndef TOOL_EFFECTS_MCP_DETAIL_SERVER_ASK_HPP
#define TOOL_EFFECTS_MCP_DETAIL_SERVER_ASK_HPP

#include <chrono>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_future.hpp>

#include <nlohmann/json.hpp>

#include <tool_effects/detail/str_cat.hpp>
#include <tool_effects/json/error.hpp>
#include <tool_effects/mcp/detail/elicitation_schema.hpp>
#include <tool_effects/mcp/detail/sampling_checks.hpp>
#include <tool_effects/mcp/errors.hpp>

namespace tool_effects {

/// Why a tool's ask of its client failed. `reason()` is one of the stable
/// strings `mcp_ask_*` below; `what()` reads "<reason>: <detail>".
class mcp_ask_error : public std::runtime_error {
 public:
  mcp_ask_error(std::string_view reason, const std::string& detail)
      : std::runtime_error(detail::str_cat(reason, ": ", detail)), reason_(reason) {}
  /// The stable reason.
  [[nodiscard]] const std::string& reason() const noexcept { return reason_; }

 private:
  std::string reason_;
};

/// The client did not declare the capability the ask needs ("elicitation", "sampling").
inline constexpr std::string_view mcp_ask_capability_missing = "client_capability_missing";
/// The request has no channel to its client (a 2026-07-28 request: its era asks by InputRequiredResult).
inline constexpr std::string_view mcp_ask_unavailable = "client_ask_unavailable";
/// What the tool would send is invalid (a requestedSchema, sampling params: named by JSON pointer).
inline constexpr std::string_view mcp_ask_invalid_request = "client_ask_invalid_request";
/// The client answered nothing within the timeout (over stdio, a cancellation was sent).
inline constexpr std::string_view mcp_ask_timeout = "client_ask_timeout";
/// The client answered with a JSON-RPC error.
inline constexpr std::string_view mcp_ask_refused = "client_ask_refused";
/// The client's answer is invalid (named by JSON pointer into the result).
inline constexpr std::string_view mcp_ask_invalid_answer = "client_answer_invalid";
/// The session ended (or the channel failed) before the answer came.
inline constexpr std::string_view mcp_ask_failed = "client_ask_failed";

/// What a tool running in an `mcp_server` may ask the client of its request
/// (`mcp_client_asker_of(ctx)` gives it). Every ask is bounded by a timeout
/// (the server's `client_request_timeout` unless one is given), is refused at
/// once when the client did not declare the capability, and its answer is
/// checked strictly. Thread-safe; lives as long as the call.
class mcp_client_asker {
 public:
  /// Sends `method` with `params` to the client and returns its result, or throws (a transport's channel).
  using send_function =
      std::function<boost::asio::awaitable<nlohmann::json>(std::string, nlohmann::json, std::chrono::milliseconds)>;

  mcp_client_asker() = default;
  /// Asks over `send` (empty: no channel, every ask fails with `unavailable`) a client that declared
  /// `capabilities`, within `timeout`; the blocking forms run the ask on `executor`.
  mcp_client_asker(send_function send, nlohmann::json capabilities, std::chrono::milliseconds timeout,
                   boost::asio::any_io_executor executor, std::string unavailable = {})
      : send_(std::move(send)),
        capabilities_(capabilities.is_object() ? std::move(capabilities) : nlohmann::json::object()),
        timeout_(timeout),
        executor_(std::move(executor)),
        unavailable_(std::move(unavailable)) {}

  /// Whether the client declared `capability` (e.g. "elicitation", "sampling").
  [[nodiscard]] bool client_declared(std::string_view capability) const {
    return capabilities_.contains(std::string(capability));
  }

  /// elicitation/create (form mode): `message` and `requested_schema` (checked first). Returns
  /// {"action": "accept"|"decline"|"cancel"} with, on accept, "content" checked against the schema
  /// (the schema's defaults applied).
  [[nodiscard]] boost::asio::awaitable<nlohmann::json> async_elicit(
      std::string message, nlohmann::json requested_schema,
      std::optional<std::chrono::milliseconds> timeout = std::nullopt) const {
    std::optional<detail::elicit::form> form;
    try {
      form.emplace(detail::elicit::form_of(requested_schema));
    } catch (const json_error& e) {
      throw mcp_ask_error(mcp_ask_invalid_request, where(e));
    }
    nlohmann::json params = {{"message", std::move(message)}, {"requestedSchema", std::move(requested_schema)}};
    nlohmann::json r = co_await ask("elicitation", "elicitation/create", std::move(params), timeout);
    co_return elicitation_answer(*form, std::move(r));
  }

  /// sampling/createMessage with `params` (checked first: messages, maxTokens, ...). Returns the
  /// CreateMessageResult, checked (role, content, model).
  [[nodiscard]] boost::asio::awaitable<nlohmann::json> async_create_message(
      nlohmann::json params, std::optional<std::chrono::milliseconds> timeout = std::nullopt) const {
    try {
      const nlohmann::json* s = capabilities_.contains("sampling") ? &capabilities_["sampling"] : nullptr;
      detail::mcp_check_sampling_request(params, s && s->is_object() && s->contains("tools"));
    } catch (const json_error& e) {
      throw mcp_ask_error(mcp_ask_invalid_request, where(e));
    }
    nlohmann::json r = co_await ask("sampling", "sampling/createMessage", params, timeout);
    try {
      detail::mcp_check_sampling_result(r, params);
    } catch (const json_error& e) {
      throw mcp_ask_error(mcp_ask_invalid_answer, where(e));
    }
    co_return r;
  }

  /// As `async_elicit`, blocking the calling thread: for a synchronous tool (the server runs those on
  /// threads of its own); a coroutine tool co_awaits `async_elicit`.
  [[nodiscard]] nlohmann::json elicit(std::string message, nlohmann::json requested_schema,
                                      std::optional<std::chrono::milliseconds> timeout = std::nullopt) const {
    return boost::asio::co_spawn(executor_, async_elicit(std::move(message), std::move(requested_schema), timeout),
                                 boost::asio::use_future)
        .get();
  }
  /// As `async_create_message`, blocking the calling thread (see `elicit`).
  [[nodiscard]] nlohmann::json create_message(nlohmann::json params,
                                              std::optional<std::chrono::milliseconds> timeout = std::nullopt) const {
    return boost::asio::co_spawn(executor_, async_create_message(std::move(params), timeout), boost::asio::use_future)
        .get();
  }

 private:
  // "at <pointer>: <what is wrong>" of a check's refusal.
  static std::string where(const json_error& e) {
    return detail::str_cat("at ", e.pointer().empty() ? std::string("(root)") : e.pointer(), ": ", e.message());
  }
  boost::asio::awaitable<nlohmann::json> ask(std::string capability, std::string method, nlohmann::json params,
                                             std::optional<std::chrono::milliseconds> timeout) const {
    if (!send_)
      throw mcp_ask_error(mcp_ask_unavailable,
                          detail::str_cat(method, ": ", unavailable_.empty() ? "no channel to the client" : unavailable_));
    if (!client_declared(capability))
      throw mcp_ask_error(mcp_ask_capability_missing,
                          detail::str_cat(method, ": the client did not declare the \"", capability, "\" capability"));
    const std::chrono::milliseconds t = timeout.value_or(timeout_);
    try {
      co_return co_await send_(method, std::move(params), t);
    } catch (const mcp_ask_error&) {
      throw;
    } catch (const mcp_rpc_error& e) {
      throw mcp_ask_error(mcp_ask_refused, e.what());
    } catch (const mcp_error& e) {
      throw mcp_ask_error(e.kind() == mcp_error_kind::timeout ? mcp_ask_timeout : mcp_ask_failed, e.what());
    }
  }

  static nlohmann::json elicitation_answer(const detail::elicit::form& form, nlohmann::json r) {
    auto bad = [](const std::string& at, const std::string& why) {
      return mcp_ask_error(mcp_ask_invalid_answer, detail::str_cat("at ", at, ": ", why));
    };
    if (!r.is_object()) throw bad("", detail::expected("an object", r));
    const auto a = r.find("action");
    if (a == r.end()) throw bad("", "missing required key \"action\"");
    if (!a->is_string() || (*a != "accept" && *a != "decline" && *a != "cancel"))
      throw bad("/action", detail::str_cat("expected one of accept, decline, cancel: ", detail::preview(*a)));
    nlohmann::json out = {{"action", *a}};
    if (*a != "accept") return out;
    const auto c = r.find("content");
    try {
      out["content"] = detail::elicit::content_of(form, c == r.end() ? nlohmann::json::object() : *c);
    } catch (const json_error& e) {
      throw mcp_ask_error(mcp_ask_invalid_answer, where(e));
    }
    return out;
  }

  send_function send_{};
  nlohmann::json capabilities_ = nlohmann::json::object();
  std::chrono::milliseconds timeout_{60000};
  boost::asio::any_io_executor executor_{};
  std::string unavailable_{};
};

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_MCP_DETAIL_SERVER_ASK_HPP
