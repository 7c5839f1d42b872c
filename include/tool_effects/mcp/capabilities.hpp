// tool_effects/mcp/capabilities.hpp — internal to <tool_effects/mcp.hpp>
// (included by mcp/client.hpp before `mcp_client_options`): what an
// application may supply to answer a server's own requests — elicitation
// (form mode, with the schema's defaults applied, SEP-1034; URL mode,
// 2025-11-25), sampling and roots — and the progress of a call. The client declares a capability in
// `initialize` only when its handler is set; without one the request is
// refused (JSON-RPC -32601) as before. A 2026-07-28 server asks inside a
// call's result instead (MRTR); the same handlers answer. The machinery is in
// mcp/client/detail/handlers.hpp; see docs/mcp-capabilities.md ("Client capabilities").
//
//   te::mcp_client_options o;
//   o.on_elicitation = [](const te::mcp_elicitation_request& r) {
//     return te::mcp_elicitation_response::accept({{"name", ask_user(r.message)}});
//   };
//   o.on_sampling = [&](const te::mcp_sampling_request& r) -> boost::asio::awaitable<nlohmann::json> {
//     co_return co_await my_model.async_create_message(r.params);   // holds no thread while it waits
//   };
//   o.roots = [] { return std::vector<te::mcp_root>{{"file:///workspace", "workspace"}}; };
#ifndef TOOL_EFFECTS_MCP_CAPABILITIES_HPP
#define TOOL_EFFECTS_MCP_CAPABILITIES_HPP

#include <tool_effects/detail/config.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <nlohmann/json.hpp>

namespace tool_effects {

/// What the user did with an elicitation (the specification's three actions).
enum class mcp_elicitation_action : std::uint8_t { accept, decline, cancel };

/// A server's `elicitation/create` request (form mode), checked before the
/// handler sees it: `requested_schema` is a flat object schema whose every
/// property is one of the specification's primitive schemas (string, number,
/// integer, boolean, the enum forms), each `default` valid for its property.
struct mcp_elicitation_request {
  std::string server{};            ///< the client's `name()`
  std::string message{};           ///< what to ask the user
  nlohmann::json requested_schema;  ///< `{"type": "object", "properties": {...}, "required": [...]}`
  nlohmann::json params;            ///< the request's params as sent (with any `_meta`)
};

/// What an elicitation handler answers. On `accept`, `content` holds what the
/// user gave; a property the user left out that has a `default` gets it
/// (SEP-1034), and the whole is then checked against the schema (types,
/// bounds, enum members, formats, required): a handler whose content does not
/// fit fails that request (the server gets JSON-RPC -32603 naming the JSON
/// pointer), never the connection.
struct mcp_elicitation_response {
  mcp_elicitation_action action = mcp_elicitation_action::decline;
  nlohmann::json content = nlohmann::json::object();

  static mcp_elicitation_response accept(nlohmann::json content = nlohmann::json::object()) {
    return {mcp_elicitation_action::accept, std::move(content)};
  }
  static mcp_elicitation_response decline() { return {mcp_elicitation_action::decline, nlohmann::json::object()}; }
  static mcp_elicitation_response cancel() { return {mcp_elicitation_action::cancel, nlohmann::json::object()}; }
};

/// A server's `elicitation/create` request in URL mode (2025-11-25): the user
/// is asked to open `url` out of band; what they enter there never passes
/// through the client. Checked before the handler sees it: `url` is an
/// absolute http or https URL of printable ASCII (no whitespace, no control
/// or non-ASCII characters: an internationalised host must come as punycode),
/// with a host and without user information (`https://bank.example@evil.example`
/// is refused), at most 8 KiB; `host` is its host, lower-cased, as the user
/// must be shown it before consenting; `elicitation_id` is a non-empty string
/// of at most 256 bytes.
struct mcp_url_elicitation_request {
  std::string server{};          ///< the client's `name()`
  std::string message{};         ///< why the user should open the URL
  std::string url{};             ///< where to send the user
  std::string host{};            ///< the URL's host (lower case, brackets kept for IPv6)
  std::string elicitation_id{};  ///< the server's id of this elicitation
  nlohmann::json params;         ///< the request's params as sent
};

/// A server's `sampling/createMessage` request, checked before the handler
/// sees it: `params.messages` is a non-empty array of objects with a role
/// ("user" or "assistant") and content (an object or array of objects with a
/// string `type`); `params.maxTokens` is a positive integer.
struct mcp_sampling_request {
  std::string server{};  ///< the client's `name()`
  nlohmann::json params;  ///< the request's params as sent
};

/// A root the client exposes (`roots/list`): a `file://` URI and an optional name.
struct mcp_root {
  std::string uri;
  std::string name{};
};

/// The progress of one call (`notifications/progress` for the token the
/// call sent), as `add_mcp_server` reports it. `params` is the notification's
/// params as sent; `progress` was checked to be a number.
struct mcp_progress {
  std::string server{};           ///< the server's name (as the host names it)
  std::string tool{};             ///< the tool's name as the model sees it
  std::string idempotency_key{};  ///< the call's key (attempt_context): which call of the turn
  double progress = 0;
  std::optional<double> total{};
  std::string message{};
  nlohmann::json params;
};

/// A handler the application supplies for a server's request `Request`
/// (`mcp_client_options`), in either of two forms, both built from any
/// callable taking `const Request&`:
/// - returning `Result`: it runs on a thread of the client's executor,
///   never on its strand, so it may block (a handler that asks a person then
///   holds that thread while it waits);
/// - returning `boost::asio::awaitable<Result>`: it runs as a coroutine on
///   the client's executor and holds no thread while it waits (for a person,
///   a model, a socket). Past `handler_timeout`, or when the server cancels
///   the request or the connection dies, it is cancelled: the operation it
///   awaits completes with `operation_aborted` (terminal cancellation).
/// Either may use the client. Each request is bounded by
/// `mcp_client_options::handler_timeout`: past it, or when the handler
/// throws, that one request is answered with a JSON-RPC error (from a
/// 2026-07-28 server, whose input requests come inside a call's result, that
/// call fails with `mcp_error` protocol_error) and the connection lives on.
template <class Result, class Request>
class mcp_handler {
 public:
  /// No handler: the capability is not declared.
  mcp_handler() = default;
  mcp_handler(std::nullptr_t) noexcept {}  // NOLINT: like std::function
  /// The synchronous form (`F` returns something convertible to `Result`) or
  /// the awaitable form (`F` returns `boost::asio::awaitable<Result>`).
  template <class F>
    requires(!std::is_same_v<std::remove_cvref_t<F>, mcp_handler> &&
             std::is_invocable_v<std::decay_t<F>&, const Request&> &&
             (std::is_same_v<std::invoke_result_t<std::decay_t<F>&, const Request&>, boost::asio::awaitable<Result>> ||
              std::is_convertible_v<std::invoke_result_t<std::decay_t<F>&, const Request&>, Result>))
  mcp_handler(F&& f) {  // NOLINT: implicit, so that a lambda can be assigned
    if constexpr (std::is_same_v<std::invoke_result_t<std::decay_t<F>&, const Request&>, boost::asio::awaitable<Result>>)
      async_ = std::forward<F>(f);
    else
      sync_ = std::forward<F>(f);
  }
  /// Whether a handler is set.
  explicit operator bool() const noexcept { return static_cast<bool>(sync_) || static_cast<bool>(async_); }
  /// Whether it is the awaitable form.
  [[nodiscard]] bool is_awaitable() const noexcept { return static_cast<bool>(async_); }
  /// Runs it: awaits the awaitable form, or calls the synchronous one on the
  /// awaiting thread. This handler and `r` must outlive the awaiting.
  boost::asio::awaitable<Result> operator()(const Request& r) const {
    if (async_) co_return co_await async_(r);
    co_return sync_(r);
  }

 private:
  std::function<Result(const Request&)> sync_;
  std::function<boost::asio::awaitable<Result>(const Request&)> async_;
};

/// Answers a form-mode elicitation (either form of `mcp_handler`).
using mcp_elicitation_handler = mcp_handler<mcp_elicitation_response, mcp_elicitation_request>;
/// Answers a URL-mode elicitation: `accept` means the user consented to open
/// the URL (the application opens it), not that the interaction is done;
/// the response carries no content.
using mcp_url_elicitation_handler = mcp_handler<mcp_elicitation_action, mcp_url_elicitation_request>;
/// `notifications/elicitation/complete` of an elicitation this client
/// accepted in URL mode: called at most once per id (on the client's strand;
/// must not block; exceptions are swallowed). Notifications of ids the client
/// never accepted, or already completed, are ignored, as the specification
/// requires.
using mcp_elicitation_complete_handler =
    std::function<void(const std::string& server, const std::string& elicitation_id)>;
/// Returns a `CreateMessageResult`: `role`, `content` (an object or array of
/// objects with a string `type`), `model` (a string); checked before it is sent.
/// Either form of `mcp_handler`.
using mcp_sampling_handler = mcp_handler<nlohmann::json, mcp_sampling_request>;
/// The roots at the time of the request; each `uri` must start with `file://`.
using mcp_roots_provider = std::function<std::vector<mcp_root>()>;
/// The progress of one call: the notification's params (called on the
/// client's strand; must not block; exceptions are swallowed).
using mcp_call_progress = std::function<void(const nlohmann::json& params)>;

/// Checks an elicitation's `requested_schema` (as `mcp_elicitation_request`
/// documents), then applies its defaults to `content` (a property absent from
/// `content` that has a `default` gets it, SEP-1034) and checks the result
/// against it. Returns the content to send; throws `json_error` whose pointer
/// names the offending value (`/requestedSchema/...` or `/content/...`).
/// Declared here, defined in mcp/client/impl/client.ipp.
TOOL_EFFECTS_DECL nlohmann::json mcp_elicitation_content(const nlohmann::json& requested_schema, nlohmann::json content);

/// The JSON-RPC error code of URLElicitationRequiredError (2025-11-25): the
/// request can be retried once the URL elicitations in the error's data are done.
inline constexpr int mcp_url_elicitation_required_code = -32042;

class mcp_rpc_error;

/// The URL elicitations a URLElicitationRequiredError (`e.code()` ==
/// -32042) asks for, each checked as a URL-mode request is (at most 16); an
/// error of another code has none. Throws `json_error` whose pointer names
/// the offending value (`/error/data/elicitations/0/url`). Declared here,
/// defined in mcp/client/impl/client.ipp.
TOOL_EFFECTS_DECL std::vector<mcp_url_elicitation_request> mcp_url_elicitations(const mcp_rpc_error& e);

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_MCP_CAPABILITIES_HPP
