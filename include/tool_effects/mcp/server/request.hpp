// tool_effects/mcp/server/request.hpp — what an mcp_server knows of one request besides its method and params
// (its channel back to the client, its session's log level and subscriptions, what its transport carried), and
// the client capability a tool type needs. See docs/mcp-server.md.
#ifndef TOOL_EFFECTS_MCP_SERVER_REQUEST_HPP
#define TOOL_EFFECTS_MCP_SERVER_REQUEST_HPP

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include <tool_effects/cancellation.hpp>
#include <tool_effects/mcp/logging.hpp>
#include <tool_effects/mcp/server/asker.hpp>

namespace tool_effects {

namespace detail {
struct mcp_resource_subscriptions;  // mcp/server/detail/catalog.hpp
}  // namespace detail
struct mcp_principal;  // <tool_effects/mcp/auth/principal.hpp>

/// What the server knows of one incoming request besides its method and params, whatever its transport: made
/// by the server from its session and what the transport told the session (mcp_server::handle_request takes
/// one, so that a test or an embedding program can serve a request directly).
struct mcp_server_request {
  nlohmann::json id = nullptr;         ///< the JSON-RPC id
  bool modern = false;                 ///< of the 2026-07-28 era (set by handle_request)
  turn_cancellation cancel{};          ///< cancelled by `notifications/cancelled` for this request
  /// Sends notifications/progress for this request (when the client asked for
  /// it); empty: progress goes nowhere. Thread-safe, never blocks.
  std::function<void(double progress, double total, const std::string& message)> progress{};
  /// The log level of the request's session (`logging/setLevel` sets it; shared by the session's requests);
  /// null: the request has no session to set it on, and its log messages go nowhere.
  std::shared_ptr<std::atomic<mcp_log_level>> log_level{};
  /// Sends notifications/message with `params` for this request (related to it: over HTTP on its stream,
  /// before its response); empty: log messages go nowhere. Thread-safe, never blocks.
  std::function<void(nlohmann::json params)> log{};
  /// The protocol version the transport carried with the request (HTTP's
  /// MCP-Protocol-Version; "" on stdio): a modern one makes the request
  /// modern, and a modern request's `_meta` must name the same.
  std::string transport_version{};
  /// Of a modern request (2026-07-28, per-request `_meta`), filled by
  /// `handle_request`: its clientCapabilities; of a legacy one, those its session's `initialize` declared
  /// (filled by the transport; null: none known)
  /// (its log level, `_meta` logLevel, becomes `log_level`: none, no log messages).
  nlohmann::json client_capabilities{};
  /// The Mcp-Param-* headers of an HTTP request (lower-case name after the
  /// prefix -> value, "=?base64?...?=" decoded; none: broken Base64); absent
  /// on stdio. A modern `tools/call` that has them is checked against the
  /// tool's `x-mcp-header` parameters (-32020 on a mismatch).
  std::optional<std::map<std::string, std::optional<std::string>>> param_headers{};
  /// Sends a request to the client of this request (stdio: over the session; HTTP: on the request's POST
  /// stream) and returns its result, within the given time; empty: the request cannot ask (a 2026-07-28
  /// request, whose era asks by InputRequiredResult). What a tool's `mcp_client_asker` sends through.
  mcp_client_asker::send_function ask_client{};
  /// The resource subscriptions of the request's session (shared by its requests); null: the request has no
  /// session, and resources/subscribe is refused (-32600).
  std::shared_ptr<detail::mcp_resource_subscriptions> subscriptions{};
  /// Ends the stream that carries this request without answering it (Streamable HTTP, SEP-1699 polling: the
  /// client resumes with GET and Last-Event-ID); empty: the request has no such stream (stdio, stateless).
  /// What a tool's `mcp_close_request_stream` calls. Thread-safe, never blocks.
  std::function<void()> close_stream{};
  /// Who sent the request, when its transport authenticated it (HTTP with authorization); null otherwise.
  std::shared_ptr<const mcp_principal> principal{};
  /// Whom what the request creates belongs to (its idempotency key, a parked call): the principal's key with
  /// authorization, else its session ("session:<id>"; "stdio" for the stdio session), else, for a stateless
  /// request without authorization, its connection ("connection:<n>"). Another caller never reads, resumes or
  /// replays it.
  std::string caller = "stdio";
};

/// The client capability (e.g. "sampling") a tool type needs of a client to
/// be called: its `static constexpr std::string_view
/// mcp_required_client_capability`, "" when it states none. A 2026-07-28
/// request whose `_meta` clientCapabilities lack it is refused with -32021
/// (MissingRequiredClientCapabilityError) before the tool runs.
template <class Tool>
constexpr std::string_view mcp_required_client_capability_of() {
  if constexpr (requires { std::string_view(Tool::mcp_required_client_capability); })
    return std::string_view(Tool::mcp_required_client_capability);
  else
    return {};
}

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_MCP_SERVER_REQUEST_HPP
