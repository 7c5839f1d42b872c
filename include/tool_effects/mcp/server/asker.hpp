// tool_effects/mcp/server/asker.hpp — what a tool running in an mcp_server asks its client (elicitation/create,
// sampling/createMessage, roots/list), over the request's own channel (stdio: the session's request, as the client
// role sends its own; Streamable HTTP: the POST stream of the call that asks; a 2026-07-28 request: an
// InputRequiredResult, mcp/server/detail/mrtr.hpp). The request is checked before it goes, the answer strictly
// after it came back (the client side's checks: elicitation_schema.hpp, sampling_checks.hpp), and every failure is
// an `mcp_ask_error` with a stable reason. See docs/mcp-capabilities.md ("Tools ask the client").
#ifndef TOOL_EFFECTS_MCP_SERVER_ASKER_HPP
#define TOOL_EFFECTS_MCP_SERVER_ASKER_HPP

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <vector>
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
#include <tool_effects/mcp/protocol/detail/elicitation_schema.hpp>
#include <tool_effects/mcp/protocol/detail/mrtr_wire.hpp>
#include <tool_effects/mcp/protocol/detail/sampling_checks.hpp>
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
/// A 2026-07-28 ask would park its call, and the server already holds `max_parked_calls` parked calls.
inline constexpr std::string_view mcp_ask_too_many_parked = "client_ask_too_many_parked";

/// One request of a tool to its client: `key` names it in an InputRequiredResult's `inputRequests` (the
/// 2026-07-28 era; empty: "<method>#<n>"), `method` is elicitation/create, sampling/createMessage or roots/list.
struct mcp_input_request {
  std::string key{};
  std::string method{};
  nlohmann::json params = nlohmann::json::object();
};

/// What a tool running in an `mcp_server` may ask the client of its request
/// (`mcp_client_asker_of(ctx)` gives it). Every ask is bounded by a timeout
/// (the server's `client_request_timeout` unless one is given), is refused at
/// once when the client did not declare the capability, and its answer is
/// checked strictly. Thread-safe; lives as long as the call. Its asking members are member templates (called
/// as plain functions) only so that a translation unit that asks nothing compiles none of their coroutines.
class mcp_client_asker {
 public:
  /// Sends `method` with `params` to the client and returns its result, or throws (a transport's channel).
  using send_function =
      std::function<boost::asio::awaitable<nlohmann::json>(std::string, nlohmann::json, std::chrono::milliseconds)>;
  /// Asks the client all of `asks` at once and returns their answers in order, or throws `mcp_ask_error`
  /// (the 2026-07-28 era's channel: an InputRequiredResult, answered by the request sent again).
  using input_function = std::function<boost::asio::awaitable<std::vector<nlohmann::json>>(
      std::vector<mcp_input_request>, std::chrono::milliseconds)>;

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

  /// As above, asking by InputRequiredResult over `input` (a call of the 2026-07-28 era).
  mcp_client_asker(input_function input, nlohmann::json capabilities, std::chrono::milliseconds timeout,
                   boost::asio::any_io_executor executor)
      : mcp_client_asker(send_function{}, std::move(capabilities), timeout, std::move(executor)) {
    input_ = std::move(input);
  }

  /// The same asker, whose asks carry `key` (their key in an InputRequiredResult's `inputRequests`).
  [[nodiscard]] mcp_client_asker keyed(std::string key) const {
    mcp_client_asker out = *this;
    out.key_ = std::move(key);
    return out;
  }

  /// Whether the client declared `capability` (e.g. "elicitation", "sampling").
  [[nodiscard]] bool client_declared(std::string_view capability) const {
    return capabilities_.contains(std::string(capability));
  }

  /// elicitation/create (form mode): `message` and `requested_schema` (checked first). Returns
  /// {"action": "accept"|"decline"|"cancel"} with, on accept, "content" checked against the schema
  /// (the schema's defaults applied).
  template <class = void>
  [[nodiscard]] boost::asio::awaitable<nlohmann::json> async_elicit(
      std::string message, nlohmann::json requested_schema,
      std::optional<std::chrono::milliseconds> timeout = std::nullopt) const {
    nlohmann::json params = {{"message", std::move(message)}, {"requestedSchema", std::move(requested_schema)}};
    co_return co_await async_ask_one("elicitation/create", std::move(params), timeout);
  }

  /// sampling/createMessage with `params` (checked first: messages, maxTokens, ...). Returns the
  /// CreateMessageResult, checked (role, content, model).
  template <class = void>
  [[nodiscard]] boost::asio::awaitable<nlohmann::json> async_create_message(
      nlohmann::json params, std::optional<std::chrono::milliseconds> timeout = std::nullopt) const {
    co_return co_await async_ask_one("sampling/createMessage", std::move(params), timeout);
  }

  /// roots/list. Returns the ListRootsResult, checked ({"roots": [{"uri": "file://...", "name"?}, ...]}).
  template <class = void>
  [[nodiscard]] boost::asio::awaitable<nlohmann::json> async_list_roots(
      std::optional<std::chrono::milliseconds> timeout = std::nullopt) const {
    co_return co_await async_ask_one("roots/list", nlohmann::json::object(), timeout);
  }

  /// Several asks at once (at most 16, keys distinct): every one checked and its capability required before
  /// any goes; in the 2026-07-28 era one InputRequiredResult carries them all, over a session they go one
  /// after another. Returns {key: checked answer} (a key left empty: "<method>#<position from 1>").
  template <class = void>
  [[nodiscard]] boost::asio::awaitable<nlohmann::json> async_ask_all(
      std::vector<mcp_input_request> asks, std::optional<std::chrono::milliseconds> timeout = std::nullopt) const {
    for (std::size_t i = 0; i < asks.size(); ++i)
      if (asks[i].key.empty()) asks[i].key = detail::str_cat(asks[i].method, "#", std::to_string(i + 1));
    std::vector<nlohmann::json> answers = co_await ask_each(asks, timeout);
    nlohmann::json out = nlohmann::json::object();
    for (std::size_t i = 0; i < asks.size(); ++i) out[asks[i].key] = std::move(answers[i]);
    co_return out;
  }

  /// As `async_elicit`, blocking the calling thread: for a synchronous tool (the server runs those on
  /// threads of its own); a coroutine tool co_awaits `async_elicit`.
  template <class = void>
  [[nodiscard]] nlohmann::json elicit(std::string message, nlohmann::json requested_schema,
                                      std::optional<std::chrono::milliseconds> timeout = std::nullopt) const {
    return boost::asio::co_spawn(executor_, async_elicit(std::move(message), std::move(requested_schema), timeout),
                                 boost::asio::use_future)
        .get();
  }
  /// As `async_create_message`, blocking the calling thread (see `elicit`).
  template <class = void>
  [[nodiscard]] nlohmann::json create_message(nlohmann::json params,
                                              std::optional<std::chrono::milliseconds> timeout = std::nullopt) const {
    return boost::asio::co_spawn(executor_, async_create_message(std::move(params), timeout), boost::asio::use_future)
        .get();
  }

  /// As `async_list_roots`, blocking the calling thread (see `elicit`).
  template <class = void>
  [[nodiscard]] nlohmann::json list_roots(std::optional<std::chrono::milliseconds> timeout = std::nullopt) const {
    return boost::asio::co_spawn(executor_, async_list_roots(timeout), boost::asio::use_future).get();
  }
  /// As `async_ask_all`, blocking the calling thread (see `elicit`).
  template <class = void>
  [[nodiscard]] nlohmann::json ask_all(std::vector<mcp_input_request> asks,
                                       std::optional<std::chrono::milliseconds> timeout = std::nullopt) const {
    return boost::asio::co_spawn(executor_, async_ask_all(std::move(asks), timeout), boost::asio::use_future).get();
  }

 private:
  // "at <pointer>: <what is wrong>" of a check's refusal.
  static std::string where(const json_error& e, std::string_view under = {}) {
    const std::string at = detail::str_cat(under, e.pointer());
    return detail::str_cat("at ", at.empty() ? std::string("(root)") : at, ": ", e.message());
  }
  // One ask made ready: the capability it needs, and the check of its answer.
  struct prepared {
    std::string capability;
    std::function<nlohmann::json(nlohmann::json)> answer;
  };
  prepared prepare(const mcp_input_request& a) const {
    if (a.method == "elicitation/create") {
      static const nlohmann::json none;
      const nlohmann::json& schema =
          a.params.is_object() && a.params.contains("requestedSchema") ? a.params["requestedSchema"] : none;
      try {
        auto form = std::make_shared<const detail::elicit::form>(detail::elicit::form_of(schema));
        return {"elicitation", [form](nlohmann::json r) { return elicitation_answer(*form, std::move(r)); }};
      } catch (const json_error& e) {
        throw mcp_ask_error(mcp_ask_invalid_request, where(e, "/requestedSchema"));
      }
    }
    if (a.method == "sampling/createMessage") {
      try {
        const nlohmann::json* s = capabilities_.contains("sampling") ? &capabilities_["sampling"] : nullptr;
        detail::mcp_check_sampling_request(a.params, s && s->is_object() && s->contains("tools"));
      } catch (const json_error& e) {
        throw mcp_ask_error(mcp_ask_invalid_request, where(e));
      }
      return {"sampling", [params = a.params](nlohmann::json r) {
                try {
                  detail::mcp_check_sampling_result(r, params);
                } catch (const json_error& e) {
                  throw mcp_ask_error(mcp_ask_invalid_answer, where(e));
                }
                return r;
              }};
    }
    if (a.method == "roots/list") return {"roots", roots_answer};
    throw mcp_ask_error(mcp_ask_invalid_request,
                        detail::str_cat("method ", detail::elicit::cut(a.method, 60),
                                        ": not a request a server asks its client (elicitation/create, "
                                        "sampling/createMessage, roots/list)"));
  }

  template <class = void>
  boost::asio::awaitable<nlohmann::json> async_ask_one(std::string method, nlohmann::json params,
                                                       std::optional<std::chrono::milliseconds> timeout) const {
    std::vector<mcp_input_request> asks;
    asks.push_back(mcp_input_request{key_.empty() ? detail::str_cat(method, "#1") : key_, std::move(method),
                                     std::move(params)});
    std::vector<nlohmann::json> answers = co_await ask_each(asks, timeout);
    co_return std::move(answers.front());
  }

  // Every ask checked and its capability required first, then sent (all at once by InputRequiredResult, or
  // one after another over the session), and every answer checked.
  template <class = void>
  boost::asio::awaitable<std::vector<nlohmann::json>> ask_each(const std::vector<mcp_input_request>& asks,
                                                              std::optional<std::chrono::milliseconds> timeout) const {
    if (!send_ && !input_)
      throw mcp_ask_error(mcp_ask_unavailable,
                          detail::str_cat(asks.empty() ? std::string("ask") : asks.front().method, ": ",
                                          unavailable_.empty() ? "no channel to the client" : unavailable_));
    if (asks.size() > detail::mcp_max_input_requests)
      throw mcp_ask_error(mcp_ask_invalid_request,
                          detail::str_cat(std::to_string(asks.size()), " asks at once, more than ",
                                          std::to_string(detail::mcp_max_input_requests)));
    std::vector<prepared> ready;
    for (std::size_t i = 0; i < asks.size(); ++i) {
      for (std::size_t j = 0; j < i; ++j)
        if (asks[j].key == asks[i].key)
          throw mcp_ask_error(mcp_ask_invalid_request,
                              detail::str_cat("key \"", detail::elicit::cut(asks[i].key, 60), "\" given twice"));
      ready.push_back(prepare(asks[i]));
      if (!client_declared(ready.back().capability))
        throw mcp_ask_error(mcp_ask_capability_missing,
                            detail::str_cat(asks[i].method, ": the client did not declare the \"",
                                            ready.back().capability, "\" capability"));
    }
    const std::chrono::milliseconds t = timeout.value_or(timeout_);
    std::vector<nlohmann::json> answers;
    if (input_) {
      answers = co_await input_(asks, t);
    } else {
      for (const mcp_input_request& a : asks) {
        try {
          answers.push_back(co_await send_(a.method, a.params, t));
        } catch (const mcp_ask_error&) {
          throw;
        } catch (const mcp_rpc_error& e) {
          throw mcp_ask_error(mcp_ask_refused, e.what());
        } catch (const mcp_error& e) {
          throw mcp_ask_error(e.kind() == mcp_error_kind::timeout ? mcp_ask_timeout : mcp_ask_failed, e.what());
        }
      }
    }
    std::vector<nlohmann::json> out;
    for (std::size_t i = 0; i < asks.size(); ++i) out.push_back(ready[i].answer(std::move(answers.at(i))));
    co_return out;
  }

  static nlohmann::json roots_answer(nlohmann::json r) {
    auto bad = [](const std::string& at, const std::string& why) {
      return mcp_ask_error(mcp_ask_invalid_answer, detail::str_cat("at ", at, ": ", why));
    };
    if (!r.is_object()) throw bad("(root)", detail::expected("an object", r));
    const auto roots = r.find("roots");
    if (roots == r.end()) throw bad("(root)", "missing required key \"roots\"");
    if (!roots->is_array()) throw bad("/roots", detail::expected("an array", *roots));
    for (std::size_t i = 0; i < roots->size(); ++i) {
      const nlohmann::json& one = (*roots)[i];
      const std::string at = detail::str_cat("/roots/", std::to_string(i));
      if (!one.is_object()) throw bad(at, detail::expected("an object", one));
      const auto uri = one.find("uri");
      if (uri == one.end() || !uri->is_string() || !uri->get_ref<const std::string&>().starts_with("file://"))
        throw bad(at + "/uri", "expected a file:// URI");
      if (const auto n = one.find("name"); n != one.end() && !n->is_string())
        throw bad(at + "/name", detail::expected("a string", *n));
    }
    return r;
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
  input_function input_{};
  std::string key_{};
  nlohmann::json capabilities_ = nlohmann::json::object();
  std::chrono::milliseconds timeout_{60000};
  boost::asio::any_io_executor executor_{};
  std::string unavailable_{};
};

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_MCP_SERVER_ASKER_HPP
